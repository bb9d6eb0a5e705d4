/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The embedded simulated runtime: the object, its lifecycle and the names
 * it hands out.
 *
 * State: pods with their sandboxes and containers (state.c). One mutex
 * guards everything. Time comes only from the injected clock; commands with
 * a deadline (`sleep N`) are advanced lazily, whenever a call looks at the
 * state, so a fake clock drives the sim deterministically (commands.c).
 *
 * Images live in their own store (images.c), untouched by kc_sim_set_pods:
 * a pulled image stays pulled.
 *
 * Two faces over the same state:
 * - the CRI-shaped kc_runtime_service (results packed in a per-call arena;
 *   cri_face.c, cri_list.c, images.c);
 * - the kubecontainer face (GetPods / GetPodStatus), like upstream's
 *   containertest.FakeRuntime (kubecontainer.c). Its kc_pod / kc_pod_status
 *   objects are immutable, so each sim pod caches the ones it built last and
 *   hands out references until the pod changes: a relist over an unchanged
 *   world costs one reference per pod.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/clock.h"
#include "core/list.h"
#include "core/map.h"
#include "runtime/sim.h"
#include "sim_internal.h"

void kc__sim_map_free_values(struct kc_map *m)
{
        size_t iter = 0;
        void *value;

        if (!m)
                return;
        while (kc_map_next(m, &iter, NULL, &value))
                free(value);
        kc_map_free(m);
}

int kc_sim_new(struct kc_clock *clock, struct kc_sim **ret)
{
        struct kc_sim *s;
        int r;

        if (!clock || !ret)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        r = -pthread_mutex_init(&s->lock, NULL);
        if (r < 0) {
                free(s);
                return r;
        }
        s->clock = clock;
        s->next_ip = 2;
        s->network_ready = true;
        kc_list_init(&s->faults);
        kc_list_init(&s->delays);
        /* From here on kc_sim_free() takes a half-built sim apart. */
        r = kc__sim_state_init(&s->st);
        if (r >= 0 && (kc_map_new(&s->status_counts) < 0 || kc_map_new(&s->images) < 0 ||
                       kc_map_new(&s->image_ids) < 0))
                r = -ENOMEM;
        if (r < 0) {
                kc_sim_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

struct kc_sim *kc_sim_free(struct kc_sim *s)
{
        if (!s)
                return NULL;
        kc__sim_list_memo_done(s);
        kc__sim_state_done(&s->st);
        kc__sim_faults_done(s);
        kc__sim_map_free_values(s->images);
        kc_map_free(s->image_ids);
        kc__sim_fs_done(&s->host_fs);
        free(s->kscratch);
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
}

/*
 * A creation timestamp: the clock, but strictly after the previous one, as
 * a real runtime's nanosecond timestamps are. On a fake clock many objects
 * are created at the same instant, and "newest first" would then depend on
 * the tie order: the kubelet would read an older instance of a container as
 * the newest and reuse its successor's attempt number.
 */
int64_t kc__sim_creation_time_locked(struct kc_sim *s)
{
        int64_t now = kc_clock_now(s->clock);

        if (now <= s->last_created_at)
                now = s->last_created_at + 1;
        s->last_created_at = now;
        return now;
}

void kc__sim_new_id_locked(struct kc_sim *s, char buf[static 24])
{
        do
                snprintf(buf, 24, "sim-%016" PRIx64, ++s->next_id);
        while (kc_map_get(s->st.sandboxes, buf) || kc_map_get(s->st.containers, buf));
}

void kc__sim_new_ip_locked(struct kc_sim *s, char buf[static 16])
{
        uint32_t n;

        do {
                n = s->next_ip++;
                if (s->next_ip > 0xfffe)
                        s->next_ip = 2;
        } while ((n & 0xff) == 0 || (n & 0xff) == 0xff);
        snprintf(buf, 16, "10.88.%u.%u", (n >> 8) & 0xff, n & 0xff);
}
