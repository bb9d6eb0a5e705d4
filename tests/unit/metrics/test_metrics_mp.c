/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Metrics under concurrency: writer threads behind a barrier hammer a
 * counter, a histogram and a gauge vector, then a histogram vector (racing
 * to create its series), while another thread renders.
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

#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/cleanup.h"
#include "metrics/registry.h"

#define N_WRITERS 4
#define N_ITER 20000

/* One race: N_WRITERS writer threads and a renderer start behind a barrier. */
struct shared {
        pthread_barrier_t start;
        atomic_bool done;
        struct kc_metrics_registry *r;
        bool (*scrape_is_consistent)(const char *text); /* judges every scrape taken */
        bool scrape_ok;
        /* The metrics the writers update: c, h and gv, or hv. */
        struct kc_counter *c;
        struct kc_histogram *h;
        struct kc_gauge_vec *gv;
        struct kc_histogram_vec *hv;
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
        /*
         * At least one scrape, even when a loaded machine lets every writer
         * finish before this thread runs (the test once failed that way).
         * Acquire pairs with the release store of done in run_race().
         */
        do {
                char *text = NULL;

                if (kc_metrics_render(s->r, &text) < 0 || !s->scrape_is_consistent(text))
                        s->scrape_ok = false;
                free(text);
        } while (!atomic_load_explicit(&s->done, memory_order_acquire));
        return NULL;
}

/*
 * Runs @p writer on N_WRITERS threads against the renderer, all released by
 * one barrier; the renderer scrapes until every writer is done. Asserts that
 * no writer failed and that every scrape was consistent.
 */
static void run_race(struct shared *s, void *(*writer_main)(void *))
{
        pthread_t writers[N_WRITERS], scraper;

        atomic_init(&s->done, false);
        assert_int_equal(pthread_barrier_init(&s->start, NULL, N_WRITERS + 1), 0);

        for (int i = 0; i < N_WRITERS; i++)
                assert_int_equal(pthread_create(&writers[i], NULL, writer_main, s), 0);
        assert_int_equal(pthread_create(&scraper, NULL, renderer, s), 0);
        for (int i = 0; i < N_WRITERS; i++) {
                void *rv = (void *)1;

                assert_int_equal(pthread_join(writers[i], &rv), 0);
                assert_null(rv);
        }
        atomic_store_explicit(&s->done, true, memory_order_release);
        assert_int_equal(pthread_join(scraper, NULL), 0);
        pthread_barrier_destroy(&s->start);

        assert_true(s->scrape_ok);
}

static void test_concurrent_updates(void **state)
{
        static const double buckets[] = { 0.1, 0.3, 0.6 };
        struct shared s = { .scrape_is_consistent = scrape_is_consistent };
        double v;

        (void)state;
        assert_int_equal(kc_metrics_registry_new(&s.r), 0);
        assert_int_equal(kc_metrics_counter_new(s.r, "c", "", &s.c), 0);
        assert_int_equal(kc_metrics_histogram_new(s.r, "h", "", buckets, 3, &s.h), 0);
        assert_int_equal(kc_metrics_gauge_vec_new(s.r, "gv", "", "l", &s.gv), 0);
        run_race(&s, writer);

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

/* ------------------------------------------------------------------------ */
/* Histogram vector: concurrent observes on existing and new series          */

#define HV_LABELS 8
#define HV_OLD 4 /* labels[0..HV_OLD) exist before the writers start */

static const char *const hv_labels[HV_LABELS] = { "a", "b", "c", "d", "e", "f", "g", "h" };

/* Iteration i of every writer observes (i % 4) * 0.25 in series i % HV_LABELS. */
static void *hv_writer(void *arg)
{
        struct shared *s = arg;

        pthread_barrier_wait(&s->start);
        /* All writers reach each new label at about the same iteration, so
         * they race to create it, then keep updating it concurrently. */
        for (unsigned i = 0; i < N_ITER; i++)
                if (kc_histogram_vec_observe_mp(s->hv, hv_labels[i % HV_LABELS],
                                                (double)(i % 4) * 0.25) < 0)
                        return (void *)1;
        return NULL;
}

/*
 * Every series in a scrape is a valid histogram snapshot: its cumulative
 * buckets never decrease, the last one is +Inf and equals its _count.
 */
static bool hv_scrape_is_consistent(const char *text)
{
        char label[32] = "", prev_label[32] = "", le[32] = "";
        unsigned long long v, prev = 0, count;

        for (const char *p = text, *nl; *p; p = nl + 1) {
                nl = strchr(p, '\n');
                if (!nl) /* every line ends in a newline */
                        return false;
                if (sscanf(p, "hv_bucket{l=\"%31[^\"]\",le=\"%31[^\"]\"} %llu", label, le, &v) ==
                    3) {
                        if (strcmp(label, prev_label) != 0) { /* a new series starts */
                                snprintf(prev_label, sizeof(prev_label), "%s", label);
                                prev = 0;
                        }
                        if (v < prev)
                                return false;
                        prev = v;
                } else if (sscanf(p, "hv_count{l=\"%31[^\"]\"} %llu", label, &count) == 2) {
                        if (strcmp(label, prev_label) != 0 || strcmp(le, "+Inf") != 0 ||
                            prev != count)
                                return false;
                }
        }
        return true;
}

static void test_concurrent_histogram_vec(void **state)
{
        static const double buckets[] = { 0.1, 0.3, 0.6 };
        struct shared s = { .scrape_is_consistent = hv_scrape_is_consistent };

        (void)state;
        assert_int_equal(kc_metrics_registry_new(&s.r), 0);
        assert_int_equal(kc_metrics_histogram_vec_new(s.r, "hv", "", "l", buckets, 3, &s.hv), 0);
        /* The old series get one observation of 0 each: count + 1, same sum. */
        for (int i = 0; i < HV_OLD; i++)
                assert_int_equal(kc_histogram_vec_observe_mp(s.hv, hv_labels[i], 0), 0);
        run_race(&s, hv_writer);

        /* Every observation landed exactly once, in its own series. */
        for (int i = 0; i < HV_LABELS; i++) {
                uint64_t per_series = (uint64_t)N_WRITERS * N_ITER / HV_LABELS;
                uint64_t count;
                double sum;

                assert_int_equal(kc_histogram_vec_count(s.hv, hv_labels[i], &count), 0);
                assert_int_equal(count, per_series + (i < HV_OLD ? 1 : 0));
                assert_int_equal(kc_histogram_vec_sum(s.hv, hv_labels[i], &sum), 0);
                assert_true(sum == (double)per_series * (i % 4) * 0.25);
        }

        /* The final scrape is exact: series "g" observed only 0.5. */
        {
                _cleanup_free_ char *text = NULL;
                char expected[512];
                int n = N_WRITERS * N_ITER / HV_LABELS;

                assert_int_equal(kc_metrics_render(s.r, &text), 0);
                assert_true(hv_scrape_is_consistent(text));
                snprintf(expected, sizeof(expected),
                         "hv_bucket{l=\"g\",le=\"0.1\"} 0\n"
                         "hv_bucket{l=\"g\",le=\"0.3\"} 0\n"
                         "hv_bucket{l=\"g\",le=\"0.6\"} %d\n"
                         "hv_bucket{l=\"g\",le=\"+Inf\"} %d\n"
                         "hv_sum{l=\"g\"} %g\n"
                         "hv_count{l=\"g\"} %d\n",
                         n, n, n * 0.5, n);
                assert_non_null(strstr(text, expected));
        }
        s.r = kc_metrics_registry_free(s.r);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_concurrent_updates),
                cmocka_unit_test(test_concurrent_histogram_vec),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
