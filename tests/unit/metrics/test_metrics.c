/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The metrics registry (metrics/registry.h): values of every metric type,
 * name validation, and the Prometheus text format 0.0.4 byte for byte
 * (number formatting, escaping, histogram layout).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/cleanup.h"
#include "metrics/registry.h"

static int setup_registry(void **state)
{
        struct kc_metrics_registry *r = NULL;

        if (kc_metrics_registry_new(&r) < 0)
                return -1;
        *state = r;
        return 0;
}

static int teardown_registry(void **state)
{
        *state = kc_metrics_registry_free(*state);
        return 0;
}

/* Renders @p r and checks the whole text. */
static void assert_render(const struct kc_metrics_registry *r, const char *expected)
{
        _cleanup_free_ char *text = NULL;

        assert_int_equal(kc_metrics_render(r, &text), 0);
        assert_non_null(text);
        assert_string_equal(text, expected);
}

static void test_registry_free_null(void **state)
{
        (void)state;
        assert_null(kc_metrics_registry_free(NULL));
}

static void test_empty_registry_renders_empty(void **state)
{
        assert_render(*state, "");
}

static void test_counter(void **state)
{
        struct kc_counter *c = NULL;

        assert_int_equal(kc_metrics_counter_new(*state, "c_total", "h", &c), 0);
        assert_non_null(c);
        assert_true(kc_counter_value(c) == 0.0);
        kc_counter_inc_mp(c);
        kc_counter_inc_mp(c);
        kc_counter_add_mp(c, 0.5);
        assert_true(kc_counter_value(c) == 2.5);
        /* Counters never go down: a negative add is dropped. */
        kc_counter_add_mp(c, -1.0);
        assert_true(kc_counter_value(c) == 2.5);
        kc_counter_add_mp(c, 0.0);
        assert_true(kc_counter_value(c) == 2.5);
}

static void test_gauge(void **state)
{
        struct kc_gauge *g = NULL;

        assert_int_equal(kc_metrics_gauge_new(*state, "g", "h", &g), 0);
        assert_true(kc_gauge_value(g) == 0.0);
        kc_gauge_set_mp(g, 42.0);
        assert_true(kc_gauge_value(g) == 42.0);
        kc_gauge_add_mp(g, -50.5);
        assert_true(kc_gauge_value(g) == -8.5);
        kc_gauge_set_mp(g, 1700000001.25);
        assert_true(kc_gauge_value(g) == 1700000001.25);
}

struct seen {
        size_t n;
        char labels[8][32];
        double values[8];
};

static void collect(const char *label_value, double v, void *userdata)
{
        struct seen *s = userdata;

        assert_true(s->n < KC_ELEMENTSOF(s->labels));
        snprintf(s->labels[s->n], sizeof(s->labels[0]), "%s", label_value);
        s->values[s->n++] = v;
}

static void test_gauge_vec(void **state)
{
        struct kc_gauge_vec *g = NULL;
        struct seen seen = {};
        double v = -1;

        assert_int_equal(kc_metrics_gauge_vec_new(*state, "gv", "h", "container_state", &g), 0);
        assert_int_equal(kc_gauge_vec_value(g, "running", &v), -ENOENT);
        assert_true(v == -1); /* untouched on failure */
        kc_gauge_vec_foreach(g, collect, &seen);
        assert_int_equal(seen.n, 0);

        assert_int_equal(kc_gauge_vec_set_mp(g, "running", 3), 0);
        assert_int_equal(kc_gauge_vec_set_mp(g, "exited", 1), 0);
        assert_int_equal(kc_gauge_vec_add_mp(g, "unknown", 2), 0);
        assert_int_equal(kc_gauge_vec_add_mp(g, "running", -1), 0);
        assert_int_equal(kc_gauge_vec_set_mp(g, "created", 0), 0);
        assert_int_equal(kc_gauge_vec_add_mp(g, "exited", 0.5), 0);

        assert_int_equal(kc_gauge_vec_value(g, "running", &v), 0);
        assert_true(v == 2);
        assert_int_equal(kc_gauge_vec_value(g, "exited", &v), 0);
        assert_true(v == 1.5);
        assert_int_equal(kc_gauge_vec_value(g, "unknown", &v), 0);
        assert_true(v == 2);
        assert_int_equal(kc_gauge_vec_value(g, "run", &v), -ENOENT);
        assert_int_equal(kc_gauge_vec_value(g, NULL, &v), -EINVAL);
        assert_int_equal(kc_gauge_vec_set_mp(g, NULL, 1), -EINVAL);

        /* Label-value order, whatever the creation order. */
        kc_gauge_vec_foreach(g, collect, &seen);
        assert_int_equal(seen.n, 4);
        assert_string_equal(seen.labels[0], "created");
        assert_string_equal(seen.labels[1], "exited");
        assert_string_equal(seen.labels[2], "running");
        assert_string_equal(seen.labels[3], "unknown");
        assert_true(seen.values[0] == 0);
        assert_true(seen.values[1] == 1.5);
        assert_true(seen.values[2] == 2);
        assert_true(seen.values[3] == 2);
}

static void test_histogram(void **state)
{
        static const double buckets[] = { 0.5, 1, 2.5 };
        struct kc_histogram *h = NULL;

        assert_int_equal(kc_metrics_histogram_new(*state, "h_seconds", "h", buckets,
                                                  KC_ELEMENTSOF(buckets), &h),
                         0);
        assert_int_equal(kc_histogram_count(h), 0);
        assert_true(kc_histogram_sum(h) == 0.0);
        kc_histogram_observe_mp(h, 0.25);
        kc_histogram_observe_mp(h, 0.5); /* le is inclusive */
        kc_histogram_observe_mp(h, 0.75);
        kc_histogram_observe_mp(h, 3); /* +Inf only */
        kc_histogram_observe_mp(h, 2.5);
        assert_int_equal(kc_histogram_count(h), 5);
        assert_true(kc_histogram_sum(h) == 7.0);
        assert_render(*state, "# HELP h_seconds h\n"
                              "# TYPE h_seconds histogram\n"
                              "h_seconds_bucket{le=\"0.5\"} 2\n"
                              "h_seconds_bucket{le=\"1\"} 3\n"
                              "h_seconds_bucket{le=\"2.5\"} 4\n"
                              "h_seconds_bucket{le=\"+Inf\"} 5\n"
                              "h_seconds_sum 7\n"
                              "h_seconds_count 5\n");
}

static void test_histogram_default_buckets(void **state)
{
        struct kc_histogram *h = NULL;

        assert_int_equal(kc_metrics_histogram_new(*state, "d", "", NULL, 0, &h), 0);
        kc_histogram_observe_mp(h, 0.005);
        kc_histogram_observe_mp(h, 0.3);
        kc_histogram_observe_mp(h, 11);
        assert_render(*state, "# HELP d \n"
                              "# TYPE d histogram\n"
                              "d_bucket{le=\"0.005\"} 1\n"
                              "d_bucket{le=\"0.01\"} 1\n"
                              "d_bucket{le=\"0.025\"} 1\n"
                              "d_bucket{le=\"0.05\"} 1\n"
                              "d_bucket{le=\"0.1\"} 1\n"
                              "d_bucket{le=\"0.25\"} 1\n"
                              "d_bucket{le=\"0.5\"} 2\n"
                              "d_bucket{le=\"1\"} 2\n"
                              "d_bucket{le=\"2.5\"} 2\n"
                              "d_bucket{le=\"5\"} 2\n"
                              "d_bucket{le=\"10\"} 2\n"
                              "d_bucket{le=\"+Inf\"} 3\n"
                              "d_sum 11.305\n"
                              "d_count 3\n");
}

static void test_histogram_buckets(void **state)
{
        static const double descending[] = { 1, 0.5 };
        static const double repeated[] = { 1, 1 };
        const double with_nan[] = { 1, NAN };
        const double with_ninf[] = { -INFINITY, 1 };
        const double trailing_inf[] = { 1, INFINITY };
        struct kc_histogram *sentinel = (struct kc_histogram *)0x1, *h = sentinel;

        assert_int_equal(kc_metrics_histogram_new(*state, "a", "", descending, 2, &h), -EINVAL);
        assert_int_equal(kc_metrics_histogram_new(*state, "a", "", repeated, 2, &h), -EINVAL);
        assert_int_equal(kc_metrics_histogram_new(*state, "a", "", with_nan, 2, &h), -EINVAL);
        assert_int_equal(kc_metrics_histogram_new(*state, "a", "", with_ninf, 2, &h), -EINVAL);
        assert_ptr_equal(h, sentinel);

        /* A trailing +Inf is the implicit bucket and is not rendered twice. */
        assert_int_equal(kc_metrics_histogram_new(*state, "a", "", trailing_inf, 2, &h), 0);
        /* No finite bucket at all: only +Inf. */
        assert_int_equal(kc_metrics_histogram_new(*state, "b", "", trailing_inf + 1, 1, &h), 0);
        kc_histogram_observe_mp(h, -2);
        assert_render(*state, "# HELP a \n"
                              "# TYPE a histogram\n"
                              "a_bucket{le=\"1\"} 0\n"
                              "a_bucket{le=\"+Inf\"} 0\n"
                              "a_sum 0\n"
                              "a_count 0\n"
                              "# HELP b \n"
                              "# TYPE b histogram\n"
                              "b_bucket{le=\"+Inf\"} 1\n"
                              "b_sum -2\n"
                              "b_count 1\n");
}

static void test_histogram_vec(void **state)
{
        static const double buckets[] = { 0.5, 1 };
        struct kc_histogram_vec *hv = NULL;
        uint64_t count = 42;
        double sum = -1;

        assert_int_equal(kc_metrics_histogram_vec_new(*state, "hv_seconds", "Op \"time\".\nBy op.",
                                                      "op", buckets, KC_ELEMENTSOF(buckets), &hv),
                         0);
        assert_non_null(hv);
        /* No series yet: the family still announces itself. */
        assert_render(*state, "# HELP hv_seconds Op \"time\".\\nBy op.\n"
                              "# TYPE hv_seconds histogram\n");
        assert_int_equal(kc_histogram_vec_count(hv, "sync", &count), -ENOENT);
        assert_int_equal(kc_histogram_vec_sum(hv, "sync", &sum), -ENOENT);
        assert_int_equal(count, 42); /* untouched on failure */
        assert_true(sum == -1);

        /* Created in this order; rendered in strcmp order, "" first. */
        assert_int_equal(kc_histogram_vec_observe_mp(hv, "sync", 0.25), 0);
        assert_int_equal(kc_histogram_vec_observe_mp(hv, "create", 1), 0); /* le is inclusive */
        assert_int_equal(kc_histogram_vec_observe_mp(hv, "sync", 2), 0);   /* +Inf only */
        assert_int_equal(kc_histogram_vec_observe_mp(hv, "a\"b\\c\nd", 0.5), 0);
        assert_int_equal(kc_histogram_vec_observe_mp(hv, "", 0.75), 0);

        assert_int_equal(kc_histogram_vec_count(hv, "sync", &count), 0);
        assert_int_equal(count, 2);
        assert_int_equal(kc_histogram_vec_sum(hv, "sync", &sum), 0);
        assert_true(sum == 2.25);
        assert_int_equal(kc_histogram_vec_count(hv, "a\"b\\c\nd", &count), 0);
        assert_int_equal(count, 1);
        assert_int_equal(kc_histogram_vec_count(hv, "syn", &count), -ENOENT);
        assert_int_equal(kc_histogram_vec_count(hv, NULL, &count), -EINVAL);
        assert_int_equal(kc_histogram_vec_sum(hv, NULL, &sum), -EINVAL);
        assert_int_equal(kc_histogram_vec_observe_mp(hv, NULL, 1), -EINVAL);
        assert_int_equal(count, 1);
        assert_true(sum == 2.25);

        assert_render(*state, "# HELP hv_seconds Op \"time\".\\nBy op.\n"
                              "# TYPE hv_seconds histogram\n"
                              "hv_seconds_bucket{op=\"\",le=\"0.5\"} 0\n"
                              "hv_seconds_bucket{op=\"\",le=\"1\"} 1\n"
                              "hv_seconds_bucket{op=\"\",le=\"+Inf\"} 1\n"
                              "hv_seconds_sum{op=\"\"} 0.75\n"
                              "hv_seconds_count{op=\"\"} 1\n"
                              "hv_seconds_bucket{op=\"a\\\"b\\\\c\\nd\",le=\"0.5\"} 1\n"
                              "hv_seconds_bucket{op=\"a\\\"b\\\\c\\nd\",le=\"1\"} 1\n"
                              "hv_seconds_bucket{op=\"a\\\"b\\\\c\\nd\",le=\"+Inf\"} 1\n"
                              "hv_seconds_sum{op=\"a\\\"b\\\\c\\nd\"} 0.5\n"
                              "hv_seconds_count{op=\"a\\\"b\\\\c\\nd\"} 1\n"
                              "hv_seconds_bucket{op=\"create\",le=\"0.5\"} 0\n"
                              "hv_seconds_bucket{op=\"create\",le=\"1\"} 1\n"
                              "hv_seconds_bucket{op=\"create\",le=\"+Inf\"} 1\n"
                              "hv_seconds_sum{op=\"create\"} 1\n"
                              "hv_seconds_count{op=\"create\"} 1\n"
                              "hv_seconds_bucket{op=\"sync\",le=\"0.5\"} 1\n"
                              "hv_seconds_bucket{op=\"sync\",le=\"1\"} 1\n"
                              "hv_seconds_bucket{op=\"sync\",le=\"+Inf\"} 2\n"
                              "hv_seconds_sum{op=\"sync\"} 2.25\n"
                              "hv_seconds_count{op=\"sync\"} 2\n");
}

/* Default buckets, no finite bucket at all, and the neighbours' layout. */
static void test_histogram_vec_buckets(void **state)
{
        static const double only_inf[] = { INFINITY };
        struct kc_histogram_vec *d = NULL, *i = NULL;
        struct kc_counter *c = NULL;
        _cleanup_free_ char *text = NULL;

        assert_int_equal(kc_metrics_histogram_vec_new(*state, "d", "", "l", NULL, 0, &d), 0);
        assert_int_equal(kc_metrics_histogram_vec_new(*state, "i", "", "l", only_inf, 1, &i), 0);
        assert_int_equal(kc_metrics_counter_new(*state, "c", "", &c), 0);
        assert_int_equal(kc_histogram_vec_observe_mp(d, "x", 0.3), 0);
        assert_int_equal(kc_histogram_vec_observe_mp(i, "y", -1), 0);
        assert_int_equal(kc_metrics_render(*state, &text), 0);
        assert_non_null(strstr(text, "# HELP d \n# TYPE d histogram\n"
                                     "d_bucket{l=\"x\",le=\"0.005\"} 0\n"));
        assert_non_null(strstr(text, "d_bucket{l=\"x\",le=\"0.25\"} 0\n"
                                     "d_bucket{l=\"x\",le=\"0.5\"} 1\n"));
        assert_non_null(strstr(text, "d_bucket{l=\"x\",le=\"10\"} 1\n"
                                     "d_bucket{l=\"x\",le=\"+Inf\"} 1\n"
                                     "d_sum{l=\"x\"} 0.3\n"
                                     "d_count{l=\"x\"} 1\n"
                                     "# HELP i \n# TYPE i histogram\n"
                                     "i_bucket{l=\"y\",le=\"+Inf\"} 1\n"
                                     "i_sum{l=\"y\"} -1\n"
                                     "i_count{l=\"y\"} 1\n"
                                     "# HELP c \n# TYPE c counter\nc 0\n"));
}

static void test_histogram_vec_invalid(void **state)
{
        static const double descending[] = { 1, 0.5 };
        static const char *const bad_labels[] = { "", "1a", "a:b", "__reserved", "le", "a b" };
        struct kc_metrics_registry *r = *state;
        struct kc_histogram_vec *sentinel = (struct kc_histogram_vec *)0x1, *hv = sentinel;
        struct kc_counter *c = NULL;
        _cleanup_free_ char *text = NULL;

        for (size_t i = 0; i < KC_ELEMENTSOF(bad_labels); i++)
                assert_int_equal(
                        kc_metrics_histogram_vec_new(r, "hv", "", bad_labels[i], NULL, 0, &hv),
                        -EINVAL);
        assert_int_equal(kc_metrics_histogram_vec_new(r, "hv", "", NULL, NULL, 0, &hv), -EINVAL);
        assert_int_equal(kc_metrics_histogram_vec_new(r, "1hv", "", "l", NULL, 0, &hv), -EINVAL);
        assert_int_equal(kc_metrics_histogram_vec_new(r, "hv", "", "l", descending, 2, &hv),
                         -EINVAL);
        assert_ptr_equal(hv, sentinel);
        assert_int_equal(kc_metrics_render(r, &text), 0);
        assert_string_equal(text, "");

        /* The metric namespace is shared by every type. */
        assert_int_equal(kc_metrics_counter_new(r, "dup", "", &c), 0);
        assert_int_equal(kc_metrics_histogram_vec_new(r, "dup", "", "l", NULL, 0, &hv), -EEXIST);
        assert_ptr_equal(hv, sentinel);
        assert_int_equal(kc_metrics_histogram_vec_new(r, "hv", "", "le_", NULL, 0, &hv), 0);
        assert_ptr_not_equal(hv, sentinel);
}

static void test_exponential_buckets(void **state)
{
        static const struct {
                double start, factor;
                size_t count;
                double expected[5];
        } ok[] = {
                { 1, 2, 5, { 1, 2, 4, 8, 16 } }, /* kubelet_containers_per_pod_count */
                { 0.25, 4, 4, { 0.25, 1, 4, 16 } }, { 1, 1.5, 4, { 1, 1.5, 2.25, 3.375 } },
                { 3, 10, 3, { 3, 30, 300 } },       { 7, 2, 1, { 7 } },
        };
        static const struct {
                double start, factor;
                size_t count;
        } bad[] = {
                { 1, 2, 0 }, /* no bucket */
                { 0, 2, 3 }, /* start must be > 0 */
                { -1, 2, 3 },
                { 1, 1, 3 }, /* factor must be > 1 */
                { 1, 0.5, 3 },
                { NAN, 2, 3 }, /* not finite */
                { 1, NAN, 3 },
                { INFINITY, 2, 1 },
                { 1, INFINITY, 2 },
                { 1e300, 10, 10 },                 /* overflows to +Inf */
                { 5e-324, 1.0000000000000002, 2 }, /* rounding cannot grow it */
        };
        double out[16];

        (void)state;
        for (size_t i = 0; i < KC_ELEMENTSOF(ok); i++) {
                for (size_t j = 0; j < KC_ELEMENTSOF(out); j++)
                        out[j] = -1;
                assert_int_equal(
                        kc_metrics_exponential_buckets(ok[i].start, ok[i].factor, ok[i].count, out),
                        0);
                for (size_t j = 0; j < ok[i].count; j++)
                        assert_true(out[j] == ok[i].expected[j]);
                assert_true(out[ok[i].count] == -1); /* nothing written past count */
        }
        for (size_t i = 0; i < KC_ELEMENTSOF(bad); i++) {
                for (size_t j = 0; j < KC_ELEMENTSOF(out); j++)
                        out[j] = -1;
                assert_int_equal(kc_metrics_exponential_buckets(bad[i].start, bad[i].factor,
                                                                bad[i].count, out),
                                 -EINVAL);
                for (size_t j = 0; j < KC_ELEMENTSOF(out); j++)
                        assert_true(out[j] == -1); /* untouched on failure */
        }
        /* 1e300 * 10^k stays finite up to k = 8. */
        assert_int_equal(kc_metrics_exponential_buckets(1e300, 10, 9, out), 0);
        assert_true(isfinite(out[8]));
}

/* The helper's output is a valid bucket layout. */
static void test_exponential_buckets_histogram(void **state)
{
        struct kc_histogram *h = NULL;
        double b[5];

        assert_int_equal(kc_metrics_exponential_buckets(1, 2, 5, b), 0);
        assert_int_equal(kc_metrics_histogram_new(*state, "n", "", b, KC_ELEMENTSOF(b), &h), 0);
        kc_histogram_observe_mp(h, 3);
        kc_histogram_observe_mp(h, 17);
        assert_render(*state, "# HELP n \n"
                              "# TYPE n histogram\n"
                              "n_bucket{le=\"1\"} 0\n"
                              "n_bucket{le=\"2\"} 0\n"
                              "n_bucket{le=\"4\"} 1\n"
                              "n_bucket{le=\"8\"} 1\n"
                              "n_bucket{le=\"16\"} 1\n"
                              "n_bucket{le=\"+Inf\"} 2\n"
                              "n_sum 20\n"
                              "n_count 2\n");
}

/* A small registry of every type, in registration (not name) order. */
static void test_render_registry(void **state)
{
        struct kc_metrics_registry *r = *state;
        static const double buckets[] = { 0.1, 1 };
        struct kc_histogram_vec *hv = NULL;
        struct kc_gauge_vec *gv = NULL;
        struct kc_histogram *h = NULL;
        struct kc_counter *c = NULL;
        struct kc_gauge *g = NULL;

        assert_int_equal(kc_metrics_gauge_new(r, "z_gauge", "A gauge.", &g), 0);
        assert_int_equal(kc_metrics_counter_new(r, "a_events_total", "Events seen.", &c), 0);
        assert_int_equal(kc_metrics_gauge_vec_new(r, "m_containers", "By state.", "state", &gv), 0);
        assert_int_equal(kc_metrics_histogram_new(r, "ns:op_seconds", "Op time.", buckets, 2, &h),
                         0);
        assert_int_equal(
                kc_metrics_histogram_vec_new(r, "b_op_seconds", "By op.", "op", buckets, 2, &hv),
                0);

        kc_gauge_set_mp(g, 1700000000);
        kc_counter_add_mp(c, 3);
        assert_int_equal(kc_gauge_vec_set_mp(gv, "running", 2), 0);
        assert_int_equal(kc_gauge_vec_set_mp(gv, "exited", 1), 0);
        kc_histogram_observe_mp(h, 0.05);
        kc_histogram_observe_mp(h, 0.5);
        kc_histogram_observe_mp(h, 0.25);
        assert_int_equal(kc_histogram_vec_observe_mp(hv, "sync", 0.5), 0);
        assert_int_equal(kc_histogram_vec_observe_mp(hv, "create", 2), 0);

        assert_render(r, "# HELP z_gauge A gauge.\n"
                         "# TYPE z_gauge gauge\n"
                         "z_gauge 1700000000\n"
                         "# HELP a_events_total Events seen.\n"
                         "# TYPE a_events_total counter\n"
                         "a_events_total 3\n"
                         "# HELP m_containers By state.\n"
                         "# TYPE m_containers gauge\n"
                         "m_containers{state=\"exited\"} 1\n"
                         "m_containers{state=\"running\"} 2\n"
                         "# HELP ns:op_seconds Op time.\n"
                         "# TYPE ns:op_seconds histogram\n"
                         "ns:op_seconds_bucket{le=\"0.1\"} 1\n"
                         "ns:op_seconds_bucket{le=\"1\"} 3\n"
                         "ns:op_seconds_bucket{le=\"+Inf\"} 3\n"
                         "ns:op_seconds_sum 0.8\n"
                         "ns:op_seconds_count 3\n"
                         "# HELP b_op_seconds By op.\n"
                         "# TYPE b_op_seconds histogram\n"
                         "b_op_seconds_bucket{op=\"create\",le=\"0.1\"} 0\n"
                         "b_op_seconds_bucket{op=\"create\",le=\"1\"} 0\n"
                         "b_op_seconds_bucket{op=\"create\",le=\"+Inf\"} 1\n"
                         "b_op_seconds_sum{op=\"create\"} 2\n"
                         "b_op_seconds_count{op=\"create\"} 1\n"
                         "b_op_seconds_bucket{op=\"sync\",le=\"0.1\"} 0\n"
                         "b_op_seconds_bucket{op=\"sync\",le=\"1\"} 1\n"
                         "b_op_seconds_bucket{op=\"sync\",le=\"+Inf\"} 1\n"
                         "b_op_seconds_sum{op=\"sync\"} 0.5\n"
                         "b_op_seconds_count{op=\"sync\"} 1\n");
}

/* An empty vector still announces itself. */
static void test_render_empty_gauge_vec(void **state)
{
        struct kc_gauge_vec *gv = NULL;

        assert_int_equal(kc_metrics_gauge_vec_new(*state, "v", "Empty.", "l", &gv), 0);
        assert_render(*state, "# HELP v Empty.\n"
                              "# TYPE v gauge\n");
}

static void test_number_format(void **state)
{
        static const struct {
                double v;
                const char *text;
        } table[] = {
                { 0, "0" },
                { -0.0, "0" },
                { 3, "3" },
                { -3, "-3" },
                { 1700000000, "1700000000" },
                { 9007199254740992.0, "9007199254740992" }, /* 2^53, still exact */
                /* Past 2^53: shortest %g, which needs no exponent here ... */
                { 9007199254740994.0, "9007199254740994" },
                /* ... but does for larger magnitudes. */
                { 1e17, "1e+17" },
                { -1.2345678901234568e20, "-1.2345678901234568e+20" },
                { 0.005, "0.005" },
                { 2.5, "2.5" },
                { -8.5, "-8.5" },
                { 1e-05, "1e-05" },
                { 1e300, "1e+300" },
                { 1700000001.25, "1700000001.25" },
                { 0.1 + 0.2, "0.30000000000000004" },
                { 1.0 / 3, "0.3333333333333333" },
                { 5e-324, "5e-324" },
                { INFINITY, "+Inf" },
                { -INFINITY, "-Inf" },
                { NAN, "NaN" },
        };
        struct kc_gauge *g = NULL;

        assert_int_equal(kc_metrics_gauge_new(*state, "n", "h", &g), 0);
        for (size_t i = 0; i < KC_ELEMENTSOF(table); i++) {
                char expected[128];

                kc_gauge_set_mp(g, table[i].v);
                snprintf(expected, sizeof(expected), "# HELP n h\n# TYPE n gauge\nn %s\n",
                         table[i].text);
                assert_render(*state, expected);
        }
}

static void test_escaping(void **state)
{
        struct kc_metrics_registry *r = *state;
        struct kc_gauge_vec *gv = NULL;

        /* HELP: backslash and newline; a double quote stays as is. */
        assert_int_equal(kc_metrics_gauge_vec_new(r, "e", "back\\slash \"q\"\nline2", "l", &gv), 0);
        /* Label values: backslash, double quote and newline. */
        assert_int_equal(kc_gauge_vec_set_mp(gv, "a\"b\\c\nd", 1), 0);
        assert_int_equal(kc_gauge_vec_set_mp(gv, "plain", 2), 0);
        assert_int_equal(kc_gauge_vec_set_mp(gv, "", 3), 0);
        assert_render(r, "# HELP e back\\\\slash \"q\"\\nline2\n"
                         "# TYPE e gauge\n"
                         "e{l=\"\"} 3\n"
                         "e{l=\"a\\\"b\\\\c\\nd\"} 1\n"
                         "e{l=\"plain\"} 2\n");
}

static void test_help_null_is_empty(void **state)
{
        struct kc_counter *c = NULL;

        assert_int_equal(kc_metrics_counter_new(*state, "c", NULL, &c), 0);
        assert_render(*state, "# HELP c \n# TYPE c counter\nc 0\n");
}

static void test_invalid_names(void **state)
{
        static const char *const bad[] = { "", "1abc", "a-b", "a b", "a.b", "é", "abc\n", "a{b}" };
        static const char *const good[] = { "a", "_", ":", "A_b:c9",
                                            "kubelet_pleg_last_seen_seconds" };
        static const char *const bad_labels[] = { "", "1a", "a:b", "__reserved", "a-b", "a b" };
        struct kc_metrics_registry *r = *state;
        struct kc_counter *c_sentinel = (struct kc_counter *)0x1, *c = c_sentinel;
        struct kc_gauge *g_sentinel = (struct kc_gauge *)0x1, *g = g_sentinel;
        struct kc_gauge_vec *v_sentinel = (struct kc_gauge_vec *)0x1, *v = v_sentinel;
        struct kc_histogram *h_sentinel = (struct kc_histogram *)0x1, *h = h_sentinel;
        _cleanup_free_ char *text = NULL;

        for (size_t i = 0; i < KC_ELEMENTSOF(bad); i++) {
                assert_int_equal(kc_metrics_counter_new(r, bad[i], "", &c), -EINVAL);
                assert_int_equal(kc_metrics_gauge_new(r, bad[i], "", &g), -EINVAL);
                assert_int_equal(kc_metrics_gauge_vec_new(r, bad[i], "", "l", &v), -EINVAL);
                assert_int_equal(kc_metrics_histogram_new(r, bad[i], "", NULL, 0, &h), -EINVAL);
        }
        assert_int_equal(kc_metrics_counter_new(r, NULL, "", &c), -EINVAL);
        for (size_t i = 0; i < KC_ELEMENTSOF(bad_labels); i++)
                assert_int_equal(kc_metrics_gauge_vec_new(r, "ok", "", bad_labels[i], &v), -EINVAL);
        assert_int_equal(kc_metrics_gauge_vec_new(r, "ok", "", NULL, &v), -EINVAL);
        assert_ptr_equal(c, c_sentinel);
        assert_ptr_equal(g, g_sentinel);
        assert_ptr_equal(v, v_sentinel);
        assert_ptr_equal(h, h_sentinel);
        /* Nothing was registered by the failures. */
        assert_int_equal(kc_metrics_render(r, &text), 0);
        assert_string_equal(text, "");

        for (size_t i = 0; i < KC_ELEMENTSOF(good); i++)
                assert_int_equal(kc_metrics_counter_new(r, good[i], "", &c), 0);
        assert_int_equal(kc_metrics_gauge_vec_new(r, "lbl", "", "_a1", &v), 0);
}

static void test_duplicate_names(void **state)
{
        struct kc_metrics_registry *r = *state;
        struct kc_counter *c = NULL, *c2 = NULL;
        struct kc_gauge *g = NULL;
        struct kc_gauge_vec *v = NULL;
        struct kc_histogram *h = NULL;

        assert_int_equal(kc_metrics_counter_new(r, "dup", "first", &c), 0);
        /* Same name, any type: -EEXIST, out-param untouched. */
        assert_int_equal(kc_metrics_counter_new(r, "dup", "", &c2), -EEXIST);
        assert_int_equal(kc_metrics_gauge_new(r, "dup", "", &g), -EEXIST);
        assert_int_equal(kc_metrics_gauge_vec_new(r, "dup", "", "l", &v), -EEXIST);
        assert_int_equal(kc_metrics_histogram_new(r, "dup", "", NULL, 0, &h), -EEXIST);
        assert_null(c2);
        assert_null(g);
        assert_null(v);
        assert_null(h);
        /* Names are case-sensitive. */
        assert_int_equal(kc_metrics_gauge_new(r, "DUP", "", &g), 0);
        kc_counter_inc_mp(c);
        assert_render(r, "# HELP dup first\n# TYPE dup counter\ndup 1\n"
                         "# HELP DUP \n# TYPE DUP gauge\nDUP 0\n");
}

/* Enough metrics to grow the registry's array several times. */
static void test_many_metrics(void **state)
{
        struct kc_metrics_registry *r = *state;
        _cleanup_free_ char *text = NULL;
        struct kc_counter *c = NULL;
        char name[32], line[64];

        for (int i = 0; i < 100; i++) {
                snprintf(name, sizeof(name), "m%03d", i);
                assert_int_equal(kc_metrics_counter_new(r, name, "", &c), 0);
                kc_counter_add_mp(c, i);
        }
        assert_int_equal(kc_metrics_render(r, &text), 0);
        assert_non_null(strstr(text, "# TYPE m000 counter\nm000 0\n"));
        assert_non_null(strstr(text, "m099 99\n"));
        /* Registration order. */
        for (int i = 1; i < 100; i++) {
                snprintf(line, sizeof(line), "\nm%03d %d\n", i - 1, i - 1);
                snprintf(name, sizeof(name), "\nm%03d %d\n", i, i);
                assert_true(strstr(text, line) < strstr(text, name));
        }
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup_registry, teardown_registry)

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_registry_free_null),
                T(test_empty_registry_renders_empty),
                T(test_counter),
                T(test_gauge),
                T(test_gauge_vec),
                T(test_histogram),
                T(test_histogram_default_buckets),
                T(test_histogram_buckets),
                T(test_histogram_vec),
                T(test_histogram_vec_buckets),
                T(test_histogram_vec_invalid),
                cmocka_unit_test(test_exponential_buckets),
                T(test_exponential_buckets_histogram),
                T(test_render_registry),
                T(test_render_empty_gauge_vec),
                T(test_number_format),
                T(test_escaping),
                T(test_help_null_is_empty),
                T(test_invalid_names),
                T(test_duplicate_names),
                T(test_many_metrics),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
