/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The probe results managers (results_manager.go, issue 15, F-LOOP-09): the
 * cache, one update per change, and upstream's blocking send, here a wait
 * on the clock for room in a full channel that a stop cancels.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/cancel.h"
#include "core/chan.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "kc_test.h"
#include "kubelet/prober/results_manager.h"

#define T0 (INT64_C(1795255200) * KC_NSEC_PER_SEC)

static struct kc_probe_update *pop(struct kc_chan *ch)
{
        void *item = NULL;

        if (kc_chan_pop_sc(ch, &item, 0) < 0)
                return NULL;
        return item;
}

/* Get/Set/Remove and an update only when the cached result changes. */
static void test_cache_and_updates(void **state)
{
        _cleanup_(kc_clock_freep) struct kc_clock *clock = NULL;
        _cleanup_(kc_chan_freep) struct kc_chan *ch = NULL;
        _cleanup_(kc_results_manager_freep) struct kc_results_manager *m = NULL;
        enum kc_probe_result res = KC_PROBE_UNKNOWN;
        struct kc_probe_update *u;

        (void)state;
        assert_int_equal(kc_fake_clock_new(&clock, T0), 0);
        assert_int_equal(kc_chan_new(&ch, 16, kc_probe_update_free), 0);
        assert_int_equal(kc_results_manager_new(KC_PROBE_READINESS, ch, clock, &m), 0);

        assert_false(kc_results_manager_get(m, "c1", &res));
        assert_int_equal(kc_results_manager_set(m, "c1", KC_PROBE_FAILURE, "uid1", NULL), 0);
        assert_true(kc_results_manager_get(m, "c1", &res));
        assert_int_equal(res, KC_PROBE_FAILURE);
        u = pop(ch);
        assert_non_null(u);
        assert_int_equal(u->type, KC_PROBE_READINESS);
        assert_int_equal(u->result, KC_PROBE_FAILURE);
        assert_string_equal(u->pod_uid, "uid1");
        assert_string_equal(u->container_id, "c1");
        kc_probe_update_free(u);

        /* The same result again: no update. */
        assert_int_equal(kc_results_manager_set(m, "c1", KC_PROBE_FAILURE, "uid1", NULL), 0);
        assert_null(pop(ch));
        /* A change: one update. */
        assert_int_equal(kc_results_manager_set(m, "c1", KC_PROBE_SUCCESS, "uid1", NULL), 0);
        u = pop(ch);
        assert_non_null(u);
        assert_int_equal(u->result, KC_PROBE_SUCCESS);
        kc_probe_update_free(u);

        kc_results_manager_remove(m, "c1");
        assert_false(kc_results_manager_get(m, "c1", &res));
        assert_int_equal(kc_results_manager_size(m), 0);
        /* After a Remove the next Set is a change again. */
        assert_int_equal(kc_results_manager_set(m, "c1", KC_PROBE_SUCCESS, "uid1", NULL), 0);
        u = pop(ch);
        assert_non_null(u);
        kc_probe_update_free(u);

        assert_int_equal(kc_results_manager_set(m, NULL, KC_PROBE_SUCCESS, "uid1", NULL), -EINVAL);
        assert_int_equal(kc_results_manager_set(m, "c1", _KC_PROBE_RESULT_MAX, "uid1", NULL),
                         -EINVAL);
}

struct setter {
        struct kc_results_manager *m;
        struct kc_cancel *cancel;
        int r;
};

static void *set_thread(void *p)
{
        struct setter *s = p;

        s->r = kc_results_manager_set(s->m, "c2", KC_PROBE_FAILURE, "uid2", s->cancel);
        return NULL;
}

static void wait_sleepers(struct kc_clock *clock, size_t n)
{
        int64_t deadline = kc_test_mono_ms() + (int64_t)(10000 * kc_test_timeout_multiplier());

        while (kc_fake_clock_sleepers(clock) < n) {
                assert_true(kc_test_mono_ms() < deadline);
                kc_test_sleep_ms(1);
        }
}

/* A full channel: Set waits (upstream's blocking send) until there is room... */
static void test_full_channel_waits(void **state)
{
        _cleanup_(kc_clock_freep) struct kc_clock *clock = NULL;
        _cleanup_(kc_chan_freep) struct kc_chan *ch = NULL;
        _cleanup_(kc_results_manager_freep) struct kc_results_manager *m = NULL;
        struct setter s = { 0 };
        struct kc_probe_update *u;
        pthread_t t;

        (void)state;
        assert_int_equal(kc_fake_clock_new(&clock, T0), 0);
        assert_int_equal(kc_chan_new(&ch, 1, kc_probe_update_free), 0);
        assert_int_equal(kc_results_manager_new(KC_PROBE_LIVENESS, ch, clock, &m), 0);
        assert_int_equal(kc_results_manager_set(m, "c1", KC_PROBE_FAILURE, "uid1", NULL), 0);

        s.m = m;
        assert_int_equal(pthread_create(&t, NULL, set_thread, &s), 0);
        wait_sleepers(clock, 1);
        /* The cache already has the result while the send waits. */
        enum kc_probe_result res;
        assert_true(kc_results_manager_get(m, "c2", &res));
        assert_int_equal(res, KC_PROBE_FAILURE);
        kc_probe_update_free(pop(ch));
        assert_int_equal(kc_fake_clock_advance(clock, 10 * KC_NSEC_PER_MSEC), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(s.r, 0);
        u = pop(ch);
        assert_non_null(u);
        assert_string_equal(u->container_id, "c2");
        assert_int_equal(u->type, KC_PROBE_LIVENESS);
        kc_probe_update_free(u);
}

/* ...or until the worker stops, which drops the update. */
static void test_full_channel_cancel(void **state)
{
        _cleanup_(kc_clock_freep) struct kc_clock *clock = NULL;
        _cleanup_(kc_chan_freep) struct kc_chan *ch = NULL;
        _cleanup_(kc_results_manager_freep) struct kc_results_manager *m = NULL;
        _cleanup_(kc_cancel_freep) struct kc_cancel *cancel = NULL;
        struct setter s = { 0 };
        pthread_t t;

        (void)state;
        assert_int_equal(kc_fake_clock_new(&clock, T0), 0);
        assert_int_equal(kc_cancel_new(&cancel), 0);
        assert_int_equal(kc_chan_new(&ch, 1, kc_probe_update_free), 0);
        assert_int_equal(kc_results_manager_new(KC_PROBE_STARTUP, ch, clock, &m), 0);
        assert_int_equal(kc_results_manager_set(m, "c1", KC_PROBE_FAILURE, "uid1", NULL), 0);

        s.m = m;
        s.cancel = cancel;
        assert_int_equal(pthread_create(&t, NULL, set_thread, &s), 0);
        wait_sleepers(clock, 1);
        kc_cancel_trigger_mp(cancel);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(s.r, -ECANCELED);
        assert_int_equal(kc_chan_len(ch), 1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cache_and_updates),
                cmocka_unit_test(test_full_channel_waits),
                cmocka_unit_test(test_full_channel_cancel),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
