/* SPDX-License-Identifier: Apache-2.0 */
/*
 * updateRuntimeUp (UPSTREAM.md §6.4): F-LOOP-15 (Status every 5 s updating
 * runtime state, network state and sync time), F-RT-01, F-RT-03, F-RT-04.
 */
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/arena.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "health/runtime_state.h"
#include "kc_test.h"
#include "kubelet/runtime_up.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"
#include "runtime/sim.h"

#define T0 (INT64_C(1700000000) * KC_NSEC_PER_SEC)
#define SEC KC_NSEC_PER_SEC

/* A runtime service that only answers Status, with conditions set by the test. */
struct fake_rt {
        struct kc_runtime_condition conds[2];
        size_t n;
        atomic_int calls; /* read by the test while the poller writes */
};

static int fake_status(void *self, struct kc_runtime_status_result *ret,
                       struct kc_runtime_error *err)
{
        struct fake_rt *f = self;
        struct kc_runtime_condition *c;

        (void)err;
        atomic_fetch_add(&f->calls, 1);
        assert_int_equal(kc_arena_new(&ret->arena), 0);
        c = kc_arena_alloc(ret->arena, sizeof(*c) * 2);
        memcpy(c, f->conds, sizeof(*c) * f->n);
        ret->conditions = c;
        ret->n_conditions = f->n;
        return 0;
}

static const struct kc_runtime_service_ops fake_ops = { .status = fake_status };

static char *errors(struct kc_runtime_state *s, bool network)
{
        static char buf[512];
        char *e = NULL;

        assert_int_equal(network ? kc_runtime_state_network_errors(s, &e)
                                 : kc_runtime_state_runtime_errors(s, &e),
                         0);
        snprintf(buf, sizeof(buf), "%s", e ? e : "none");
        free(e);
        return buf;
}

static void test_conditions(void **state)
{
        struct fake_rt f = { .conds = { { "RuntimeReady", true, NULL, NULL },
                                        { "NetworkReady", false, "NetworkPluginNotReady",
                                          "cni plugin not initialized" } },
                             .n = 2 };
        struct kc_runtime_service svc = { &fake_ops, &f };
        struct kc_clock *clock = NULL;
        struct kc_runtime_state *s = NULL;

        (void)state;
        assert_int_equal(kc_fake_clock_new(&clock, T0), 0);
        assert_int_equal(kc_runtime_state_new(clock, 30 * SEC, &s), 0);
        assert_string_equal(errors(s, false),
                            "container runtime status check may not have completed yet");
        assert_string_equal(errors(s, true), "network state unknown");

        /* Runtime ready, network not: only the network error, which does not stop syncs. */
        assert_int_equal(kc_update_runtime_up(s, svc, clock), 0);
        assert_string_equal(errors(s, false), "none");
        assert_string_equal(errors(s, true),
                            "container runtime network not ready: NetworkReady=false "
                            "reason:NetworkPluginNotReady message:cni plugin not initialized");

        /* Network ready; the runtime condition missing: runtime error, no sync refresh. */
        f.conds[0] = (struct kc_runtime_condition){ "NetworkReady", true, NULL, NULL };
        f.n = 1;
        kc_fake_clock_advance(clock, 10 * SEC);
        assert_int_equal(kc_update_runtime_up(s, svc, clock), 0);
        assert_string_equal(errors(s, true), "none");
        assert_string_equal(errors(s, false), "container runtime not ready: <nil>");
        kc_fake_clock_advance(clock, 20 * SEC); /* 30 s since the last good status */
        assert_string_equal(errors(s, false),
                            "[container runtime is down, container runtime not ready: <nil>]");

        /* Both ready again: clean, and the sync time is now. */
        f.conds[1] = (struct kc_runtime_condition){ "RuntimeReady", true, NULL, NULL };
        f.n = 2;
        assert_int_equal(kc_update_runtime_up(s, svc, clock), 0);
        assert_string_equal(errors(s, false), "none");
        kc_runtime_state_free(s);
        kc_clock_free(clock);
}

/* A failing Status call changes nothing; the simulated runtime reports ready. */
static void test_status_failure_and_sim(void **state)
{
        struct kc_clock *clock = NULL;
        struct kc_runtime_state *s = NULL;
        struct kc_sim *sim = NULL;

        (void)state;
        assert_int_equal(kc_fake_clock_new(&clock, T0), 0);
        assert_int_equal(kc_runtime_state_new(clock, 30 * SEC, &s), 0);
        assert_int_equal(kc_sim_new(clock, &sim), 0);
        assert_int_equal(kc_sim_inject_fault(sim, "Status", NULL, "connection refused", 1), 0);
        assert_true(kc_update_runtime_up(s, kc_sim_service(sim), clock) < 0);
        assert_string_equal(errors(s, false),
                            "container runtime status check may not have completed yet");
        assert_string_equal(errors(s, true), "network state unknown");
        assert_int_equal(kc_update_runtime_up(s, kc_sim_service(sim), clock), 0);
        assert_string_equal(errors(s, false), "none");
        assert_string_equal(errors(s, true), "none");
        kc_sim_free(sim);
        kc_runtime_state_free(s);
        kc_clock_free(clock);
}

/* The poller calls at once, then every period of the clock, and stops cleanly. */
static void test_poller(void **state)
{
        struct fake_rt f = { .conds = { { "RuntimeReady", true, NULL, NULL },
                                        { "NetworkReady", true, NULL, NULL } },
                             .n = 2 };
        struct kc_runtime_service svc = { &fake_ops, &f };
        struct kc_runtime_up_poller *p = NULL;
        struct kc_clock *clock = NULL;
        struct kc_runtime_state *s = NULL;

        (void)state;
        assert_int_equal(kc_fake_clock_new(&clock, T0), 0);
        assert_int_equal(kc_runtime_state_new(clock, 30 * SEC, &s), 0);
        assert_int_equal(kc_runtime_up_poller_start(s, svc, clock, KC_RUNTIME_UP_PERIOD, &p), 0);
        KC_TEST_WAIT_UNTIL(kc_fake_clock_sleepers(clock) == 1, 5000);
        assert_int_equal(atomic_load(&f.calls), 1);
        assert_string_equal(errors(s, false), "none");
        kc_fake_clock_advance(clock, KC_RUNTIME_UP_PERIOD);
        KC_TEST_WAIT_UNTIL(atomic_load(&f.calls) >= 2, 5000);
        assert_int_equal(atomic_load(&f.calls), 2);
        kc_runtime_up_poller_stop(p);
        kc_runtime_state_free(s);
        kc_clock_free(clock);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_conditions),
                cmocka_unit_test(test_status_failure_and_sim),
                cmocka_unit_test(test_poller),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
