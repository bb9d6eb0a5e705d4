/* SPDX-License-Identifier: Apache-2.0 */
/*
 * updateRuntimeUp (upstream pkg/kubelet/kubelet.go), UPSTREAM.md §6.4: the
 * runtime's Status every 5 s, turned into runtimeState's network error,
 * runtime error and runtime-sync time.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cancel.h"
#include "core/clock.h"
#include "core/log.h"
#include "health/runtime_state.h"
#include "kubelet/runtime_up.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"

/* The condition of @type, or NULL. */
static const struct kc_runtime_condition *condition(const struct kc_runtime_status_result *s,
                                                    const char *type)
{
        size_t i;

        for (i = 0; i < s->n_conditions; i++)
                if (s->conditions[i].type && strcmp(s->conditions[i].type, type) == 0)
                        return &s->conditions[i];
        return NULL;
}

/* "<prefix>: Type=bool reason:R message:M" (kubecontainer.RuntimeCondition's String), or "<nil>". */
static char *condition_error(const char *prefix, const struct kc_runtime_condition *c)
{
        char *s;
        int r;

        if (!c)
                r = asprintf(&s, "%s: <nil>", prefix);
        else
                r = asprintf(&s, "%s: %s=%s reason:%s message:%s", prefix, c->type,
                             c->status ? "true" : "false", c->reason ?: "", c->message ?: "");
        return r < 0 ? NULL : s;
}

int kc_update_runtime_up(struct kc_runtime_state *state, struct kc_runtime_service svc,
                         struct kc_clock *clock)
{
        struct kc_runtime_status_result s = { 0 };
        struct kc_runtime_error err = { 0 };
        const struct kc_runtime_condition *net, *rt;
        char *msg;
        int r;

        r = svc.ops->status(svc.self, &s, &err);
        if (r < 0) {
                kc_log_error_s(err.message[0] ? err.message : strerror(-r),
                               "Container runtime sanity check failed");
                return r;
        }
        net = condition(&s, "NetworkReady");
        if (!net || !net->status) {
                msg = condition_error("container runtime network not ready", net);
                kc_log_error_s(NULL, "Container runtime network not ready",
                               KC_KV_STR("networkReady", msg));
                (void)kc_runtime_state_set_network_state(state, msg ? msg : "network not ready");
                free(msg);
        } else {
                (void)kc_runtime_state_set_network_state(state, NULL);
        }
        rt = condition(&s, "RuntimeReady");
        if (!rt || !rt->status) {
                msg = condition_error("container runtime not ready", rt);
                kc_log_error_s(NULL, "Container runtime not ready", KC_KV_STR("runtimeReady", msg));
                (void)kc_runtime_state_set_runtime_state(state, msg ? msg : "runtime not ready");
                free(msg);
                kc_runtime_result_done(&s);
                /* The sync time is not refreshed: after 30 s the runtime counts as down. */
                return 0;
        }
        (void)kc_runtime_state_set_runtime_state(state, NULL);
        kc_runtime_state_set_runtime_sync(state, kc_clock_now(clock));
        kc_runtime_result_done(&s);
        return 0;
}

struct kc_runtime_up_poller {
        struct kc_runtime_state *state;
        struct kc_runtime_service svc;
        struct kc_clock *clock;
        int64_t period;
        struct kc_cancel *stop;
        pthread_t thread;
};

/* wait.Until: at once, then a period after each call returns. */
static void *poller_main(void *arg)
{
        struct kc_runtime_up_poller *p = arg;

        do {
                (void)kc_update_runtime_up(p->state, p->svc, p->clock);
        } while (kc_clock_sleep(p->clock, p->period, p->stop) == 0);
        return NULL;
}

int kc_runtime_up_poller_start(struct kc_runtime_state *state, struct kc_runtime_service svc,
                               struct kc_clock *clock, int64_t period_ns,
                               struct kc_runtime_up_poller **ret)
{
        struct kc_runtime_up_poller *p;
        int r;

        if (!state || !svc.ops || !clock || period_ns <= 0 || !ret)
                return -EINVAL;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        *p = (struct kc_runtime_up_poller){
                .state = state, .svc = svc, .clock = clock, .period = period_ns
        };
        r = kc_cancel_new(&p->stop);
        if (r == 0)
                r = -pthread_create(&p->thread, NULL, poller_main, p);
        if (r < 0) {
                kc_cancel_free(p->stop);
                free(p);
                return r;
        }
        *ret = p;
        return 0;
}

struct kc_runtime_up_poller *kc_runtime_up_poller_stop(struct kc_runtime_up_poller *p)
{
        if (!p)
                return NULL;
        kc_cancel_trigger_mp(p->stop);
        pthread_join(p->thread, NULL);
        kc_cancel_free(p->stop);
        free(p);
        return NULL;
}
