/* SPDX-License-Identifier: Apache-2.0 */
/* The relist benchmarks' node (relist_world.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/chan.h"
#include "pleg/event.h"
#include "runtime/container.h"

#include "relist_world.h"

int world_init(struct world *w, size_t n_pods)
{
        size_t i, j, stride = 48;
        char *s;

        w->n_pods = n_pods;
        w->pods = calloc(n_pods, sizeof(*w->pods));
        w->ctrs = calloc(n_pods * CONTAINERS_PER_POD, sizeof(*w->ctrs));
        w->sandboxes = calloc(n_pods, sizeof(*w->sandboxes));
        w->names = calloc(n_pods * (CONTAINERS_PER_POD + 3), stride);
        if (!w->pods || !w->ctrs || !w->sandboxes || !w->names)
                return -ENOMEM;
        s = w->names;
        for (i = 0; i < n_pods; i++) {
                struct kc_sim_pod_spec *p = &w->pods[i];

                snprintf(s, stride, "pod-uid-%08zu", i);
                p->id = s;
                s += stride;
                snprintf(s, stride, "bench-%zu", i);
                p->name = s;
                s += stride;
                p->namespace = "default";
                snprintf(s, stride, "sandbox-%08zu", i);
                w->sandboxes[i] =
                        (struct kc_sim_container_spec){ s, "POD", KC_CONTAINER_STATE_RUNNING, 0 };
                s += stride;
                p->sandboxes = &w->sandboxes[i];
                p->n_sandboxes = 1;
                p->containers = &w->ctrs[i * CONTAINERS_PER_POD];
                p->n_containers = CONTAINERS_PER_POD;
                for (j = 0; j < CONTAINERS_PER_POD; j++) {
                        snprintf(s, stride, "ctr-%08zu-%zu", i, j);
                        w->ctrs[i * CONTAINERS_PER_POD + j] =
                                (struct kc_sim_container_spec){ s,
                                                                j == 0   ? "app"
                                                                : j == 1 ? "sidecar"
                                                                         : "logger",
                                                                KC_CONTAINER_STATE_RUNNING, 0 };
                        s += stride;
                }
        }
        return 0;
}

void world_done(struct world *w)
{
        free(w->pods);
        free(w->ctrs);
        free(w->sandboxes);
        free(w->names);
}

void world_churn(struct world *w, unsigned round)
{
        size_t i, n = w->n_pods * CONTAINERS_PER_POD;

        for (i = round % 10; i < n; i += 10)
                w->ctrs[i].state = w->ctrs[i].state == KC_CONTAINER_STATE_RUNNING
                                           ? KC_CONTAINER_STATE_EXITED
                                           : KC_CONTAINER_STATE_RUNNING;
}

size_t drain(struct kc_chan *ch)
{
        size_t n = 0;
        void *item;

        while (kc_chan_pop_sc(ch, &item, 0) == 0) {
                kc_pleg_event_free(item);
                n++;
        }
        return n;
}
