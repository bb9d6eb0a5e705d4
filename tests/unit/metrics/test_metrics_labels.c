/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Issue 17's registry features: gauge and counter vectors with several
 * labels (kubelet_working_pods{lifecycle,config,static},
 * kubelet_started_containers_errors_total{container_type,code}), collectors
 * run at each render, and the process_* metrics read from a fake /proc.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/cleanup.h"
#include "metrics/process.h"
#include "metrics/registry.h"

static void test_multi_label_gauge(void **state)
{
        _cleanup_(kc_metrics_registry_freep) struct kc_metrics_registry *r = NULL;
        static const char *const names[] = { "lifecycle", "config", "static" };
        const char *const a[] = { "sync", "desired", "true" };
        const char *const b[] = { "sync", "desired", "" };
        const char *const bad[] = { "sync", "\xff", "" };
        const char *const null_value[] = { "sync", NULL, "" };
        struct kc_gauge_vec *g;
        _cleanup_free_ char *text = NULL;
        double v = 0;

        (void)state;
        assert_int_equal(kc_metrics_registry_new(&r), 0);
        assert_int_equal(kc_metrics_gauge_vec_new_labels(r, "w", "h", names, 3, &g), 0);
        assert_int_equal(kc_gauge_vec_set_labels_mp(g, a, 2), 0);
        assert_int_equal(kc_gauge_vec_set_labels_mp(g, b, 0), 0);
        assert_int_equal(kc_gauge_vec_set_labels_mp(g, a, 3), 0);
        assert_int_equal(kc_gauge_vec_labels_value(g, a, &v), 0);
        assert_true(v == 3);
        assert_int_equal(kc_gauge_vec_set_labels_mp(g, bad, 1), -EINVAL);
        assert_int_equal(kc_gauge_vec_set_labels_mp(g, null_value, 1), -EINVAL);
        /* The single-label calls refuse a vector with several labels. */
        assert_int_equal(kc_gauge_vec_set_mp(g, "sync", 1), -EINVAL);
        assert_int_equal(kc_metrics_render(r, &text), 0);
        assert_string_equal(text, "# HELP w h\n# TYPE w gauge\n"
                                  "w{lifecycle=\"sync\",config=\"desired\",static=\"\"} 0\n"
                                  "w{lifecycle=\"sync\",config=\"desired\",static=\"true\"} 3\n");
}

static void test_counter_vec(void **state)
{
        _cleanup_(kc_metrics_registry_freep) struct kc_metrics_registry *r = NULL;
        static const char *const names[] = { "container_type", "code" };
        static const char *const dup[] = { "code", "code" };
        static const char *const le[] = { "__x" };
        const char *const e[] = { "container", "Create\"Error\n" };
        struct kc_counter_vec *c;
        _cleanup_free_ char *text = NULL;
        double v = 0;

        (void)state;
        assert_int_equal(kc_metrics_registry_new(&r), 0);
        assert_int_equal(kc_metrics_counter_vec_new(r, "x", "h", dup, 2, &c), -EINVAL);
        assert_int_equal(kc_metrics_counter_vec_new(r, "x", "h", le, 1, &c), -EINVAL);
        assert_int_equal(kc_metrics_counter_vec_new(r, "x", "h", names, 0, &c), -EINVAL);
        assert_int_equal(kc_metrics_counter_vec_new(r, "x_total", "h", names, 2, &c), 0);
        assert_int_equal(kc_counter_vec_inc_mp(c, e), 0);
        assert_int_equal(kc_counter_vec_add_mp(c, e, 2), 0);
        assert_int_equal(kc_counter_vec_add_mp(c, e, -1), -EINVAL);
        assert_int_equal(kc_counter_vec_value(c, e, &v), 0);
        assert_true(v == 3);
        assert_int_equal(kc_metrics_render(r, &text), 0);
        assert_string_equal(text,
                            "# HELP x_total h\n# TYPE x_total counter\n"
                            "x_total{container_type=\"container\",code=\"Create\\\"Error\\n\"} "
                            "3\n");
}

static int collected;

static void collect(void *ud)
{
        kc_gauge_set_mp(ud, ++collected);
}

static void test_collector(void **state)
{
        _cleanup_(kc_metrics_registry_freep) struct kc_metrics_registry *r = NULL;
        struct kc_gauge *g;

        (void)state;
        assert_int_equal(kc_metrics_registry_new(&r), 0);
        assert_int_equal(kc_metrics_gauge_new(r, "g", "h", &g), 0);
        assert_int_equal(kc_metrics_registry_add_collector(r, collect, NULL, g), 0);
        for (int i = 1; i <= 2; i++) {
                _cleanup_free_ char *text = NULL;
                char want[64];

                assert_int_equal(kc_metrics_render(r, &text), 0);
                snprintf(want, sizeof(want), "# HELP g h\n# TYPE g gauge\ng %d\n", i);
                assert_string_equal(text, want);
        }
}

/* Issue 15: a custom family writes its own samples (series that come and go). */
static void write_custom(void *ud, struct kc_metrics_writer *w)
{
        const struct kc_metrics_label l[] = { { "container", "a\"b" }, { "pod", NULL } };
        static const double bounds[] = { 0.1, 1 };
        static const uint64_t buckets[] = { 1, 2 };

        (*(int *)ud)++;
        kc_metrics_write_sample(w, NULL, l, 2, 3);
        kc_metrics_write_histogram(w, l, 1, bounds, buckets, 2, 4, 2.5);
}

static void test_custom_family(void **state)
{
        _cleanup_(kc_metrics_registry_freep) struct kc_metrics_registry *r = NULL;
        _cleanup_free_ char *text = NULL;
        int *calls = calloc(1, sizeof(int));

        (void)state;
        assert_non_null(calls);
        assert_int_equal(kc_metrics_registry_new(&r), 0);
        assert_int_equal(kc_metrics_custom_new(r, "c", "help", true, write_custom, free, calls), 0);
        assert_int_equal(kc_metrics_custom_new(r, "c", "again", false, write_custom, NULL, NULL),
                         -EEXIST);
        assert_int_equal(kc_metrics_custom_new(r, "d", "h", false, NULL, NULL, NULL), -EINVAL);
        assert_int_equal(kc_metrics_render(r, &text), 0);
        assert_int_equal(*calls, 1);
        assert_string_equal(text, "# HELP c help\n"
                                  "# TYPE c histogram\n"
                                  "c{container=\"a\\\"b\",pod=\"\"} 3\n"
                                  "c_bucket{container=\"a\\\"b\",le=\"0.1\"} 1\n"
                                  "c_bucket{container=\"a\\\"b\",le=\"1\"} 3\n"
                                  "c_bucket{container=\"a\\\"b\",le=\"+Inf\"} 4\n"
                                  "c_sum{container=\"a\\\"b\"} 2.5\n"
                                  "c_count{container=\"a\\\"b\"} 4\n");
}

static void write_file(const char *dir, const char *rel, const char *text)
{
        char path[512];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, rel);
        f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void test_process_metrics(void **state)
{
        _cleanup_(kc_metrics_registry_freep) struct kc_metrics_registry *r = NULL;
        _cleanup_free_ char *text = NULL;
        char dir[] = "/tmp/kc-proc-XXXXXX", path[600], line[128];

        (void)state;
        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/self", dir);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/self/fd", dir);
        assert_int_equal(mkdir(path, 0755), 0);
        write_file(dir, "self/fd/0", "");
        write_file(dir, "self/fd/1", "");
        write_file(dir, "self/fd/7", "");
        /* utime 250, stime 50 ticks; starttime 1000 ticks; vsize; rss 10 pages. */
        write_file(dir, "self/stat",
                   "42 (cube let) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 1000 "
                   "123456789 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n");
        write_file(dir, "self/limits",
                   "Limit                     Soft Limit           Hard Limit "
                   "          Units     \n"
                   "Max open files            1024                 524288     "
                   "          files     \n");
        write_file(dir, "stat", "cpu  1 2 3\nbtime 1700000000\nprocesses 5\n");

        assert_int_equal(kc_metrics_registry_new(&r), 0);
        assert_int_equal(kc_process_metrics_register(r, dir), 0);
        assert_int_equal(kc_metrics_render(r, &text), 0);
        assert_non_null(strstr(text, "# HELP process_cpu_seconds_total Total user and system CPU "
                                     "time spent in seconds.\n"
                                     "# TYPE process_cpu_seconds_total counter\n"
                                     "process_cpu_seconds_total 3\n"));
        assert_non_null(strstr(text, "# TYPE process_open_fds gauge\nprocess_open_fds 3\n"));
        assert_non_null(strstr(text, "# TYPE process_max_fds gauge\nprocess_max_fds 1024\n"));
        assert_non_null(strstr(text, "process_virtual_memory_bytes 123456789\n"));
        snprintf(line, sizeof(line), "process_resident_memory_bytes %ld\n",
                 10 * sysconf(_SC_PAGESIZE));
        assert_non_null(strstr(text, line));
        assert_non_null(strstr(text, "# HELP process_start_time_seconds Start time of the process "
                                     "since unix epoch in seconds.\n"
                                     "# TYPE process_start_time_seconds gauge\n"
                                     "process_start_time_seconds 1700000010\n"));
        /* The real /proc/self: a second registry reads this process. */
        {
                _cleanup_(kc_metrics_registry_freep) struct kc_metrics_registry *r2 = NULL;
                _cleanup_free_ char *t2 = NULL;

                assert_int_equal(kc_metrics_registry_new(&r2), 0);
                assert_int_equal(kc_process_metrics_register(r2, NULL), 0);
                assert_int_equal(kc_process_metrics_register(r2, NULL), -EEXIST);
                assert_int_equal(kc_metrics_render(r2, &t2), 0);
                assert_null(strstr(t2, "process_resident_memory_bytes 0\n"));
                assert_null(strstr(t2, "process_start_time_seconds 0\n"));
        }
        snprintf(path, sizeof(path), "rm -rf %s", dir);
        assert_int_equal(system(path), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_multi_label_gauge), cmocka_unit_test(test_counter_vec),
                cmocka_unit_test(test_collector),         cmocka_unit_test(test_custom_family),
                cmocka_unit_test(test_process_metrics),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
