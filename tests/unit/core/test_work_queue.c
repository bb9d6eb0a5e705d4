/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/cleanup.h"
#include "core/clock.h"
#include "core/jitter.h"
#include "core/map.h"
#include "core/work_queue.h"

#define T0 (INT64_C(1700000000) * KC_NSEC_PER_SEC)

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* GetWork, sorted, joined with ',' ("" when empty). */
static void get_work_joined(struct kc_work_queue *q, char *buf, size_t size)
{
        _cleanup_free_ char **uids = (char **)0x1;
        size_t n = 42;

        assert_int_equal(kc_work_queue_get_work(q, &uids, &n), 0);
        buf[0] = '\0';
        if (n == 0) {
                assert_null(uids);
                return;
        }
        qsort(uids, n, sizeof(*uids), cmp_str);
        for (size_t i = 0; i < n; i++) {
                if (i)
                        strncat(buf, ",", size - strlen(buf) - 1);
                strncat(buf, uids[i], size - strlen(buf) - 1);
        }
}

static void test_wq_invalid(void **state)
{
        _cleanup_(kc_clock_freep) struct kc_clock *clk = NULL;
        _cleanup_(kc_work_queue_freep) struct kc_work_queue *q = NULL;
        struct kc_work_queue *untouched = (struct kc_work_queue *)0x1;
        char **uids = (char **)0x2;
        size_t n = 7;

        (void)state;
        assert_int_equal(kc_fake_clock_new(&clk, T0), 0);
        assert_int_equal(kc_work_queue_new(NULL, &untouched), -EINVAL);
        assert_ptr_equal(untouched, (struct kc_work_queue *)0x1);
        assert_int_equal(kc_work_queue_new(clk, &q), 0);
        assert_int_equal(kc_work_queue_enqueue(q, NULL, 0), -EINVAL);
        assert_int_equal(kc_work_queue_enqueue(q, "", 0), -EINVAL);
        assert_int_equal(kc_work_queue_get_work(q, NULL, &n), -EINVAL);
        assert_ptr_equal(uids, (char **)0x2);
        assert_null(kc_work_queue_free(NULL));
}

/* Upstream work_queue_test.go TestGetWork, transcribed. */
static void test_wq_get_work(void **state)
{
        _cleanup_(kc_clock_freep) struct kc_clock *clk = NULL;
        _cleanup_(kc_work_queue_freep) struct kc_work_queue *q = NULL;
        char buf[256];

        (void)state;
        assert_int_equal(kc_fake_clock_new(&clk, T0), 0);
        assert_int_equal(kc_work_queue_new(clk, &q), 0);

        assert_int_equal(kc_work_queue_enqueue(q, "foo1", -1 * KC_NSEC_PER_MIN), 0);
        assert_int_equal(kc_work_queue_enqueue(q, "foo2", -1 * KC_NSEC_PER_MIN), 0);
        assert_int_equal(kc_work_queue_enqueue(q, "foo3", 1 * KC_NSEC_PER_MIN), 0);
        assert_int_equal(kc_work_queue_enqueue(q, "foo4", 1 * KC_NSEC_PER_MIN), 0);
        get_work_joined(q, buf, sizeof(buf));
        assert_string_equal(buf, "foo1,foo2");
        /* Returned items are removed. */
        get_work_joined(q, buf, sizeof(buf));
        assert_string_equal(buf, "");
        assert_int_equal(kc_work_queue_len(q), 2);

        /* Dial the time to 1 hour ahead. */
        assert_int_equal(kc_fake_clock_advance(clk, 60 * KC_NSEC_PER_MIN), 0);
        get_work_joined(q, buf, sizeof(buf));
        assert_string_equal(buf, "foo3,foo4");
        get_work_joined(q, buf, sizeof(buf));
        assert_string_equal(buf, "");
        assert_int_equal(kc_work_queue_len(q), 0);
}

static void test_wq_strictly_before_now(void **state)
{
        _cleanup_(kc_clock_freep) struct kc_clock *clk = NULL;
        _cleanup_(kc_work_queue_freep) struct kc_work_queue *q = NULL;
        char buf[64];

        (void)state;
        assert_int_equal(kc_fake_clock_new(&clk, T0), 0);
        assert_int_equal(kc_work_queue_new(clk, &q), 0);

        /* Delay 0: ready at now, which is not before now. */
        assert_int_equal(kc_work_queue_enqueue(q, "a", 0), 0);
        get_work_joined(q, buf, sizeof(buf));
        assert_string_equal(buf, "");
        assert_int_equal(kc_fake_clock_advance(clk, 1), 0);
        get_work_joined(q, buf, sizeof(buf));
        assert_string_equal(buf, "a");

        assert_int_equal(kc_work_queue_enqueue(q, "b", 10 * KC_NSEC_PER_SEC), 0);
        assert_int_equal(kc_fake_clock_advance(clk, 10 * KC_NSEC_PER_SEC), 0);
        get_work_joined(q, buf, sizeof(buf));
        assert_string_equal(buf, "");
        assert_int_equal(kc_fake_clock_advance(clk, 1), 0);
        get_work_joined(q, buf, sizeof(buf));
        assert_string_equal(buf, "b");
}

static void test_wq_enqueue_overwrites(void **state)
{
        _cleanup_(kc_clock_freep) struct kc_clock *clk = NULL;
        _cleanup_(kc_work_queue_freep) struct kc_work_queue *q = NULL;
        char buf[64];

        (void)state;
        assert_int_equal(kc_fake_clock_new(&clk, T0), 0);
        assert_int_equal(kc_work_queue_new(clk, &q), 0);

        /* A later enqueue pushes the time back... */
        assert_int_equal(kc_work_queue_enqueue(q, "a", 1 * KC_NSEC_PER_SEC), 0);
        assert_int_equal(kc_work_queue_enqueue(q, "a", 10 * KC_NSEC_PER_SEC), 0);
        assert_int_equal(kc_work_queue_len(q), 1);
        assert_int_equal(kc_fake_clock_advance(clk, 5 * KC_NSEC_PER_SEC), 0);
        get_work_joined(q, buf, sizeof(buf));
        assert_string_equal(buf, "");

        /* ...and brings it forward: the last call wins, relative to its now. */
        assert_int_equal(kc_work_queue_enqueue(q, "a", -1), 0);
        get_work_joined(q, buf, sizeof(buf));
        assert_string_equal(buf, "a");
}

static void test_wq_free_with_pending(void **state)
{
        _cleanup_(kc_clock_freep) struct kc_clock *clk = NULL;
        struct kc_work_queue *q = NULL;
        char uid[32];

        (void)state;
        assert_int_equal(kc_fake_clock_new(&clk, T0), 0);
        assert_int_equal(kc_work_queue_new(clk, &q), 0);
        for (int i = 0; i < 1000; i++) {
                snprintf(uid, sizeof(uid), "pod-%d", i);
                assert_int_equal(kc_work_queue_enqueue(q, uid, i % 2 ? -1 : KC_NSEC_PER_MIN), 0);
        }
        assert_int_equal(kc_work_queue_len(q), 1000);
        /* ASan checks that the pending entries are released. */
        assert_null(kc_work_queue_free(q));
}

struct wq_thread_arg {
        struct kc_work_queue *q;
        int id;
};

#define WQ_THREADS 4
#define WQ_PER_THREAD 500

static void *wq_producer(void *p)
{
        struct wq_thread_arg *a = p;
        char uid[32];

        for (int i = 0; i < WQ_PER_THREAD; i++) {
                snprintf(uid, sizeof(uid), "t%d-%d", a->id, i);
                assert_int_equal(kc_work_queue_enqueue(a->q, uid, -1), 0);
        }
        return NULL;
}

/* Concurrent producers and one consumer: every UID comes out exactly once. */
static void test_wq_concurrent(void **state)
{
        _cleanup_(kc_clock_freep) struct kc_clock *clk = NULL;
        _cleanup_(kc_work_queue_freep) struct kc_work_queue *q = NULL;
        _cleanup_(kc_map_freep) struct kc_map *seen = NULL;
        struct wq_thread_arg args[WQ_THREADS];
        pthread_t th[WQ_THREADS];
        size_t total = 0, iter = 0;
        void *v;
        bool done = false;

        (void)state;
        assert_int_equal(kc_fake_clock_new(&clk, T0), 0);
        assert_int_equal(kc_work_queue_new(clk, &q), 0);
        assert_int_equal(kc_map_new(&seen), 0);
        for (int i = 0; i < WQ_THREADS; i++) {
                args[i] = (struct wq_thread_arg){ .q = q, .id = i };
                assert_int_equal(pthread_create(&th[i], NULL, wq_producer, &args[i]), 0);
        }
        while (!done) {
                char **uids = NULL;
                size_t n = 0;

                done = total == WQ_THREADS * WQ_PER_THREAD;
                assert_int_equal(kc_work_queue_get_work(q, &uids, &n), 0);
                for (size_t i = 0; i < n; i++) {
                        char *k = strdup(uids[i]);

                        assert_non_null(k);
                        assert_null(kc_map_get(seen, k));
                        assert_int_equal(kc_map_put(seen, k, k), 0);
                        total++;
                }
                free(uids);
                if (total == WQ_THREADS * WQ_PER_THREAD)
                        done = true;
        }
        for (int i = 0; i < WQ_THREADS; i++)
                pthread_join(th[i], NULL);
        assert_int_equal(kc_map_size(seen), WQ_THREADS * WQ_PER_THREAD);
        assert_int_equal(kc_work_queue_len(q), 0);
        while (kc_map_next(seen, &iter, NULL, &v))
                free(v);
}

static void test_jitter_range(void **state)
{
        const int64_t d = 10 * KC_NSEC_PER_SEC;
        int64_t lo = INT64_MAX, hi = 0;

        (void)state;
        kc_jitter_seed(1);
        for (int i = 0; i < 100000; i++) {
                int64_t v = kc_jitter(d, 0.5);

                assert_true(v >= d);
                assert_true(v < d + d / 2);
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
        }
        /* Uniform over [10 s, 15 s): both ends are reached closely. */
        assert_true(lo < d + KC_NSEC_PER_SEC / 100);
        assert_true(hi > d + d / 2 - KC_NSEC_PER_SEC / 100);

        /* max_factor <= 0 means 1.0: [d, 2d). */
        for (int i = 0; i < 10000; i++) {
                int64_t v = kc_jitter(d, 0.0), w = kc_jitter(d, -3.0);

                assert_true(v >= d && v < 2 * d);
                assert_true(w >= d && w < 2 * d);
        }
        assert_int_equal(kc_jitter(0, 0.5), 0);
        assert_int_equal(kc_jitter(-5, 0.5), -5);
        assert_int_equal(kc_jitter(1, 0.5), 1); /* [1, 1.5) holds one integer */
        assert_true(kc_jitter(INT64_MAX - 1, 1.0) >= INT64_MAX - 1);
}

static void test_jitter_seed_reproducible(void **state)
{
        int64_t a[16], b[16];
        bool differs = false;

        (void)state;
        kc_jitter_seed(0xdeadbeef);
        for (size_t i = 0; i < KC_ELEMENTSOF(a); i++)
                a[i] = kc_jitter(KC_NSEC_PER_SEC, 0.5);
        kc_jitter_seed(0xdeadbeef);
        for (size_t i = 0; i < KC_ELEMENTSOF(b); i++)
                b[i] = kc_jitter(KC_NSEC_PER_SEC, 0.5);
        assert_memory_equal(a, b, sizeof(a));
        for (size_t i = 1; i < KC_ELEMENTSOF(a); i++)
                differs |= a[i] != a[0];
        assert_true(differs);
}

#define JITTER_THREADS 4

static void *jitter_thread(void *p)
{
        (void)p;
        for (int i = 0; i < 20000; i++) {
                int64_t v = kc_jitter(KC_NSEC_PER_SEC, 0.5);

                if (v < KC_NSEC_PER_SEC || v >= KC_NSEC_PER_SEC + KC_NSEC_PER_SEC / 2)
                        return (void *)1;
        }
        return NULL;
}

static void test_jitter_threads(void **state)
{
        pthread_t th[JITTER_THREADS];
        void *res;

        (void)state;
        for (int i = 0; i < JITTER_THREADS; i++)
                assert_int_equal(pthread_create(&th[i], NULL, jitter_thread, NULL), 0);
        for (int i = 0; i < JITTER_THREADS; i++) {
                assert_int_equal(pthread_join(th[i], &res), 0);
                assert_null(res);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_wq_invalid),
                cmocka_unit_test(test_wq_get_work),
                cmocka_unit_test(test_wq_strictly_before_now),
                cmocka_unit_test(test_wq_enqueue_overwrites),
                cmocka_unit_test(test_wq_free_with_pending),
                cmocka_unit_test(test_wq_concurrent),
                cmocka_unit_test(test_jitter_range),
                cmocka_unit_test(test_jitter_seed_reproducible),
                cmocka_unit_test(test_jitter_threads),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
