/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/backoff.h"
#include "core/cleanup.h"
#include "core/clock.h"

#define T0 (INT64_C(1700000000) * KC_NSEC_PER_SEC)
#define SEC KC_NSEC_PER_SEC
#define INITIAL (10 * SEC) /* containerBackOffPeriod */
#define MAX (300 * SEC)    /* MaxContainerBackOff */

struct fixture {
        struct kc_clock *clk;
        struct kc_backoff *b;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        if (!f || kc_fake_clock_new(&f->clk, T0) < 0 ||
            kc_backoff_new(f->clk, INITIAL, MAX, &f->b) < 0)
                return -1;
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        kc_backoff_free(f->b);
        kc_clock_free(f->clk);
        free(f);
        return 0;
}

static int64_t get(struct kc_backoff *b, const char *key)
{
        int64_t v = -1;

        assert_int_equal(kc_backoff_get(b, key, &v), 0);
        return v;
}

static void test_backoff_invalid(void **state)
{
        struct fixture *f = *state;
        struct kc_backoff *untouched = (struct kc_backoff *)0x1;
        int64_t v = 1234;

        assert_int_equal(kc_backoff_new(NULL, INITIAL, MAX, &untouched), -EINVAL);
        assert_int_equal(kc_backoff_new(f->clk, -1, MAX, &untouched), -EINVAL);
        assert_int_equal(kc_backoff_new(f->clk, INITIAL, -1, &untouched), -EINVAL);
        assert_int_equal(kc_backoff_new_with_expiry(f->clk, INITIAL, MAX, -1, &untouched), -EINVAL);
        assert_ptr_equal(untouched, (struct kc_backoff *)0x1);
        assert_null(kc_backoff_free(NULL));

        /* Unknown key: Get fails (upstream returns 0), not in backoff. */
        assert_int_equal(kc_backoff_get(f->b, "nope", &v), -ENOENT);
        assert_int_equal(v, 1234);
        assert_false(kc_backoff_is_in_backoff_since(f->b, "nope", T0));
        assert_int_equal(kc_backoff_next(f->b, NULL, T0), -EINVAL);
        kc_backoff_reset(f->b, "nope"); /* no-op */
}

/*
 * The kubelet's doBackOff against a container that crashes 1 s after each
 * start: the first crash restarts at once (no entry yet), then the waits are
 * 10, 20, 40, 80, 160, 300, 300 s.
 */
static void test_backoff_crash_loop_delays(void **state)
{
        static const int64_t expected[] = { 0, 10, 20, 40, 80, 160, 300, 300, 300 };
        struct fixture *f = *state;
        const char *key = "web_default_uid1_app_1a2b";

        for (size_t i = 0; i < KC_ELEMENTSOF(expected); i++) {
                int64_t finished, delay = 0;

                /* Runs 1 s, then crashes. */
                assert_int_equal(kc_fake_clock_advance(f->clk, 1 * SEC), 0);
                finished = kc_clock_now(f->clk);

                /* The sync loop retries until the window has passed. */
                while (kc_backoff_is_in_backoff_since(f->b, key, finished)) {
                        assert_int_equal(kc_fake_clock_advance(f->clk, SEC), 0);
                        delay += SEC;
                }
                assert_int_equal(delay, expected[i] * SEC);
                if (i > 0) {
                        /* The wait is the window Get reports. */
                        assert_int_equal(get(f->b, key), delay);
                }
                /* Allowed: record the restart. */
                assert_int_equal(kc_backoff_next(f->b, key, finished), 0);
                assert_int_equal(get(f->b, key),
                                 expected[i + 1 < KC_ELEMENTSOF(expected) ? i + 1 : i] * SEC);
        }
}

static void test_backoff_window_boundary(void **state)
{
        struct fixture *f = *state;
        int64_t t = kc_clock_now(f->clk);

        assert_int_equal(kc_backoff_next(f->b, "k", t), 0);
        assert_true(kc_backoff_is_in_backoff_since(f->b, "k", t));
        assert_int_equal(kc_fake_clock_advance(f->clk, INITIAL - 1), 0);
        assert_true(kc_backoff_is_in_backoff_since(f->b, "k", t));
        assert_int_equal(kc_fake_clock_advance(f->clk, 1), 0);
        /* now - eventTime == backoff is no longer "<". */
        assert_false(kc_backoff_is_in_backoff_since(f->b, "k", t));
}

/* IsInBackOffSinceUpdate: the window runs from the last Next(), whatever the event time was. */
static void test_backoff_since_update(void **state)
{
        struct fixture *f = *state;
        int64_t t;

        int64_t last = 42;

        assert_ptr_equal(kc_backoff_clock(f->b), f->clk);
        assert_null(kc_backoff_clock(NULL));
        assert_int_equal(kc_backoff_last_update(f->b, "img", &last), -ENOENT);
        assert_int_equal(kc_backoff_last_update(NULL, "img", &last), -EINVAL);
        assert_int_equal(last, 42);
        assert_false(kc_backoff_is_in_backoff_since_update(f->b, "img", kc_clock_now(f->clk)));
        assert_false(kc_backoff_is_in_backoff_since_update(NULL, "img", 0));
        assert_false(kc_backoff_is_in_backoff_since_update(f->b, NULL, 0));

        /* An old event time does not matter: last_update is now. */
        assert_int_equal(kc_backoff_next(f->b, "img", T0 - 100 * SEC), 0);
        t = kc_clock_now(f->clk);
        assert_int_equal(kc_backoff_last_update(f->b, "img", &last), 0);
        assert_int_equal(last, t);
        assert_true(kc_backoff_is_in_backoff_since_update(f->b, "img", t));
        assert_int_equal(kc_fake_clock_advance(f->clk, INITIAL - 1), 0);
        assert_true(kc_backoff_is_in_backoff_since_update(f->b, "img", kc_clock_now(f->clk)));
        assert_int_equal(kc_fake_clock_advance(f->clk, 1), 0);
        assert_false(kc_backoff_is_in_backoff_since_update(f->b, "img", kc_clock_now(f->clk)));

        /* Second failure: 20 s from its own update. */
        assert_int_equal(kc_backoff_next(f->b, "img", kc_clock_now(f->clk)), 0);
        assert_int_equal(kc_backoff_last_update(f->b, "img", &last), 0);
        assert_int_equal(last, t + INITIAL);
        assert_int_equal(kc_fake_clock_advance(f->clk, 19 * SEC), 0);
        assert_true(kc_backoff_is_in_backoff_since_update(f->b, "img", kc_clock_now(f->clk)));
        assert_int_equal(kc_fake_clock_advance(f->clk, SEC), 0);
        assert_false(kc_backoff_is_in_backoff_since_update(f->b, "img", kc_clock_now(f->clk)));

        /* Expired (event more than 600 s after the update): not in backoff. */
        t = kc_clock_now(f->clk);
        assert_int_equal(kc_backoff_next(f->b, "img", t), 0);
        assert_false(kc_backoff_is_in_backoff_since_update(f->b, "img", t + 600 * SEC + 1));
}

static void test_backoff_reset_after_600s_idle(void **state)
{
        struct fixture *f = *state;
        int64_t last;

        for (int i = 0; i < 6; i++)
                assert_int_equal(kc_backoff_next(f->b, "k", kc_clock_now(f->clk)), 0);
        assert_int_equal(get(f->b, "k"), MAX);
        last = kc_clock_now(f->clk);

        /* A crash exactly 600 s after the last restart is not "stable" yet. */
        assert_int_equal(kc_fake_clock_set(f->clk, last + 600 * SEC), 0);
        assert_true(kc_backoff_is_in_backoff_since(f->b, "k", last + 600 * SEC));

        /* 600 s + 1 ns: expired, so not in backoff and Next starts over. */
        assert_int_equal(kc_fake_clock_set(f->clk, last + 600 * SEC + 1), 0);
        assert_false(kc_backoff_is_in_backoff_since(f->b, "k", last + 600 * SEC + 1));
        assert_int_equal(kc_backoff_next(f->b, "k", last + 600 * SEC + 1), 0);
        assert_int_equal(get(f->b, "k"), INITIAL);
        assert_int_equal(kc_backoff_next(f->b, "k", kc_clock_now(f->clk)), 0);
        assert_int_equal(get(f->b, "k"), 2 * INITIAL);
}

static void test_backoff_expiry_parameter(void **state)
{
        struct fixture *f = *state;
        _cleanup_(kc_backoff_freep) struct kc_backoff *b = NULL;
        int64_t t = kc_clock_now(f->clk);

        assert_int_equal(kc_backoff_new_with_expiry(f->clk, SEC, 100 * SEC, 60 * SEC, &b), 0);
        assert_int_equal(kc_backoff_next(b, "k", t), 0);
        assert_int_equal(kc_backoff_next(b, "k", t), 0);
        assert_int_equal(get(b, "k"), 2 * SEC);
        assert_int_equal(kc_backoff_next(b, "k", t + 60 * SEC), 0);
        assert_int_equal(get(b, "k"), 4 * SEC);
        assert_int_equal(kc_backoff_next(b, "k", t + 120 * SEC + 1), 0);
        assert_int_equal(get(b, "k"), SEC);
}

static void test_backoff_gc(void **state)
{
        struct fixture *f = *state;
        int64_t v;

        assert_int_equal(kc_backoff_next(f->b, "a", T0), 0);
        assert_int_equal(kc_fake_clock_advance(f->clk, 200 * SEC), 0);
        assert_int_equal(kc_backoff_next(f->b, "b", kc_clock_now(f->clk)), 0);

        /* Idle exactly 2 × max: kept. */
        assert_int_equal(kc_fake_clock_set(f->clk, T0 + 2 * MAX), 0);
        assert_int_equal(kc_backoff_gc(f->b), 0);
        assert_int_equal(get(f->b, "a"), INITIAL);

        assert_int_equal(kc_fake_clock_set(f->clk, T0 + 2 * MAX + 1), 0);
        assert_int_equal(kc_backoff_gc(f->b), 1);
        assert_int_equal(kc_backoff_get(f->b, "a", &v), -ENOENT);
        assert_int_equal(get(f->b, "b"), INITIAL);

        assert_int_equal(kc_fake_clock_set(f->clk, T0 + 200 * SEC + 2 * MAX + 1), 0);
        assert_int_equal(kc_backoff_gc(f->b), 1);
        assert_int_equal(kc_backoff_get(f->b, "b", &v), -ENOENT);
        assert_int_equal(kc_backoff_gc(f->b), 0);
}

static void test_backoff_gc_many(void **state)
{
        struct fixture *f = *state;
        char key[32];
        int64_t v;

        for (int i = 0; i < 1000; i++) {
                snprintf(key, sizeof(key), "k%d", i);
                assert_int_equal(kc_backoff_next(f->b, key, kc_clock_now(f->clk)), 0);
                if (i == 499)
                        assert_int_equal(kc_fake_clock_advance(f->clk, 100 * SEC), 0);
        }
        assert_int_equal(kc_fake_clock_set(f->clk, T0 + 2 * MAX + 1), 0);
        assert_int_equal(kc_backoff_gc(f->b), 500);
        assert_int_equal(kc_backoff_get(f->b, "k0", &v), -ENOENT);
        assert_int_equal(kc_backoff_get(f->b, "k499", &v), -ENOENT);
        assert_int_equal(get(f->b, "k500"), INITIAL);
        assert_int_equal(get(f->b, "k999"), INITIAL);
}

static void test_backoff_keys_independent(void **state)
{
        struct fixture *f = *state;
        int64_t now = kc_clock_now(f->clk), v;

        for (int i = 0; i < 3; i++)
                assert_int_equal(kc_backoff_next(f->b, "a", now), 0);
        assert_int_equal(kc_backoff_next(f->b, "b", now), 0);
        assert_int_equal(get(f->b, "a"), 4 * INITIAL);
        assert_int_equal(get(f->b, "b"), INITIAL);

        assert_int_equal(kc_fake_clock_advance(f->clk, 15 * SEC), 0);
        assert_true(kc_backoff_is_in_backoff_since(f->b, "a", now));
        assert_false(kc_backoff_is_in_backoff_since(f->b, "b", now));

        kc_backoff_reset(f->b, "a");
        assert_int_equal(kc_backoff_get(f->b, "a", &v), -ENOENT);
        assert_false(kc_backoff_is_in_backoff_since(f->b, "a", now));
        assert_int_equal(get(f->b, "b"), INITIAL);
        assert_int_equal(kc_backoff_next(f->b, "a", kc_clock_now(f->clk)), 0);
        assert_int_equal(get(f->b, "a"), INITIAL);
}

static void test_backoff_saturates(void **state)
{
        struct fixture *f = *state;
        _cleanup_(kc_backoff_freep) struct kc_backoff *b = NULL;
        int64_t now = kc_clock_now(f->clk);

        assert_int_equal(kc_backoff_new(f->clk, INT64_MAX / 2 + 1, INT64_MAX, &b), 0);
        assert_int_equal(kc_backoff_next(b, "k", now), 0);
        assert_int_equal(kc_backoff_next(b, "k", now), 0);
        assert_int_equal(get(b, "k"), INT64_MAX);
        assert_int_equal(kc_backoff_next(b, "k", now), 0);
        assert_int_equal(get(b, "k"), INT64_MAX);
        /* Far-apart times saturate instead of overflowing the comparisons. */
        assert_true(kc_backoff_is_in_backoff_since(b, "k", now));
        assert_false(kc_backoff_is_in_backoff_since(b, "k", INT64_MIN));
        assert_false(kc_backoff_is_in_backoff_since(b, "k", INT64_MAX));
        assert_int_equal(kc_backoff_gc(b), 0);
}

#define BO_THREADS 4
#define BO_ITERS 2000

static void *backoff_thread(void *p)
{
        struct fixture *f = p;
        char key[16];

        for (int i = 0; i < BO_ITERS; i++) {
                int64_t v;

                snprintf(key, sizeof(key), "k%d", i % 8);
                if (kc_backoff_next(f->b, key, kc_clock_now(f->clk)) < 0)
                        return (void *)1;
                (void)kc_backoff_is_in_backoff_since(f->b, key, kc_clock_now(f->clk));
                if (kc_backoff_get(f->b, key, &v) == 0 && (v < INITIAL || v > MAX))
                        return (void *)1;
                if (i % 100 == 0) {
                        kc_backoff_reset(f->b, key);
                        (void)kc_backoff_gc(f->b);
                }
        }
        return NULL;
}

static void test_backoff_threads(void **state)
{
        struct fixture *f = *state;
        pthread_t th[BO_THREADS];
        void *res;

        for (int i = 0; i < BO_THREADS; i++)
                assert_int_equal(pthread_create(&th[i], NULL, backoff_thread, f), 0);
        for (int i = 0; i < 100; i++)
                assert_int_equal(kc_fake_clock_advance(f->clk, 10 * SEC), 0);
        for (int i = 0; i < BO_THREADS; i++) {
                assert_int_equal(pthread_join(th[i], &res), 0);
                assert_null(res);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_backoff_invalid, setup, teardown),
                cmocka_unit_test_setup_teardown(test_backoff_crash_loop_delays, setup, teardown),
                cmocka_unit_test_setup_teardown(test_backoff_window_boundary, setup, teardown),
                cmocka_unit_test_setup_teardown(test_backoff_since_update, setup, teardown),
                cmocka_unit_test_setup_teardown(test_backoff_reset_after_600s_idle, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_backoff_expiry_parameter, setup, teardown),
                cmocka_unit_test_setup_teardown(test_backoff_gc, setup, teardown),
                cmocka_unit_test_setup_teardown(test_backoff_gc_many, setup, teardown),
                cmocka_unit_test_setup_teardown(test_backoff_keys_independent, setup, teardown),
                cmocka_unit_test_setup_teardown(test_backoff_saturates, setup, teardown),
                cmocka_unit_test_setup_teardown(test_backoff_threads, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
