/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Metrics under concurrency: writer threads behind a barrier hammer a
 * counter, a histogram and a gauge vector while another thread renders.
 * Totals must be exact afterwards (every value is a multiple of 0.25, so
 * the double sums carry no rounding), and every scrape taken meanwhile must
 * be a valid snapshot: cumulative buckets non-decreasing and <= _count.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "kc_health.h"

#define N_WRITERS 4
#define N_ITER 20000

struct shared {
        pthread_barrier_t start;
        atomic_bool done;
        struct kc_metrics_registry *r;
        struct kc_counter *c;
        struct kc_histogram *h;
        struct kc_gauge_vec *gv;
        unsigned scrapes;
        bool scrape_ok;
};

static void *writer(void *arg)
{
        struct shared *s = arg;
        static const char *const labels[] = { "a", "b", "c", "d", "e", "f", "g", "h" };

        pthread_barrier_wait(&s->start);
        for (unsigned i = 0; i < N_ITER; i++) {
                kc_counter_inc_mp(s->c);
                kc_histogram_observe_mp(s->h, (double)(i % 4) * 0.25); /* 0, .25, .5, .75 */
                /* Concurrent creation of the same series, then concurrent adds. */
                if (kc_gauge_vec_add_mp(s->gv, labels[i % KC_ELEMENTSOF(labels)], 1) < 0)
                        return (void *)1;
        }
        return NULL;
}

/* Checks one histogram's lines in a scrape; false on an inconsistency. */
static bool scrape_is_consistent(const char *text)
{
        unsigned long long prev = 0, v, count;
        const char *p = text;
        char le[32];

        while ((p = strstr(p, "h_bucket{le=\""))) {
                if (sscanf(p, "h_bucket{le=\"%31[^\"]\"} %llu", le, &v) != 2 || v < prev)
                        return false;
                prev = v;
                p++;
        }
        p = strstr(text, "\nh_count ");
        if (!p || sscanf(p, "\nh_count %llu", &count) != 1)
                return false;
        return prev <= count;
}

static void *renderer(void *arg)
{
        struct shared *s = arg;

        pthread_barrier_wait(&s->start);
        s->scrape_ok = true;
        /* Acquire pairs with the release store of done in the test body. */
        while (!atomic_load_explicit(&s->done, memory_order_acquire)) {
                char *text = NULL;

                if (kc_metrics_render(s->r, &text) < 0 || !scrape_is_consistent(text))
                        s->scrape_ok = false;
                free(text);
                s->scrapes++;
        }
        return NULL;
}

static void test_concurrent_updates(void **state)
{
        static const double buckets[] = { 0.1, 0.3, 0.6 };
        pthread_t writers[N_WRITERS], scraper;
        struct shared s = {};
        double v;

        (void)state;
        assert_int_equal(kc_metrics_registry_new(&s.r), 0);
        assert_int_equal(kc_metrics_counter_new(s.r, "c", "", &s.c), 0);
        assert_int_equal(kc_metrics_histogram_new(s.r, "h", "", buckets, 3, &s.h), 0);
        assert_int_equal(kc_metrics_gauge_vec_new(s.r, "gv", "", "l", &s.gv), 0);
        atomic_init(&s.done, false);
        assert_int_equal(pthread_barrier_init(&s.start, NULL, N_WRITERS + 1), 0);

        for (int i = 0; i < N_WRITERS; i++)
                assert_int_equal(pthread_create(&writers[i], NULL, writer, &s), 0);
        assert_int_equal(pthread_create(&scraper, NULL, renderer, &s), 0);
        for (int i = 0; i < N_WRITERS; i++) {
                void *rv = (void *)1;

                assert_int_equal(pthread_join(writers[i], &rv), 0);
                assert_null(rv);
        }
        atomic_store_explicit(&s.done, true, memory_order_release);
        assert_int_equal(pthread_join(scraper, NULL), 0);
        pthread_barrier_destroy(&s.start);

        assert_true(s.scrape_ok);
        assert_true(s.scrapes > 0);
        assert_true(kc_counter_value(s.c) == (double)N_WRITERS * N_ITER);
        assert_int_equal(kc_histogram_count(s.h), N_WRITERS * N_ITER);
        /* Per writer: N_ITER / 4 rounds of 0 + .25 + .5 + .75 = 1.5. */
        assert_true(kc_histogram_sum(s.h) == (double)N_WRITERS * (N_ITER / 4) * 1.5);
        for (char l = 'a'; l <= 'h'; l++) {
                char label[2] = { l, '\0' };

                assert_int_equal(kc_gauge_vec_value(s.gv, label, &v), 0);
                assert_true(v == (double)N_WRITERS * N_ITER / 8);
        }

        /* The final scrape is exact. */
        {
                _cleanup_free_ char *text = NULL;
                char expected[512];

                assert_int_equal(kc_metrics_render(s.r, &text), 0);
                snprintf(expected, sizeof(expected),
                         "h_bucket{le=\"0.1\"} %d\n"
                         "h_bucket{le=\"0.3\"} %d\n"
                         "h_bucket{le=\"0.6\"} %d\n"
                         "h_bucket{le=\"+Inf\"} %d\n"
                         "h_sum %d\n"
                         "h_count %d\n",
                         N_WRITERS * N_ITER / 4, N_WRITERS * N_ITER / 2, N_WRITERS * N_ITER * 3 / 4,
                         N_WRITERS * N_ITER, N_WRITERS * N_ITER / 4 * 3 / 2, N_WRITERS * N_ITER);
                assert_non_null(strstr(text, expected));
        }
        s.r = kc_metrics_registry_free(s.r);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_concurrent_updates),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
