/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubelet metrics (UPSTREAM.md §11): every upstream name is registered
 * with its upstream type and buckets (DefBuckets, or ExponentialBuckets(1,
 * 2, 5) for containers per pod), in the documented (field) order, and the
 * struct fields point at the registered objects.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <errno.h>
#include <stdio.h>
#include <cmocka.h>

#include "core/cleanup.h"
#include "metrics/kubelet_metrics.h"
#include "metrics/registry.h"

static const struct {
        const char *name;
        const char *type;
} upstream[] = {
        { "kubelet_pleg_relist_duration_seconds", "histogram" },
        { "kubelet_pleg_relist_interval_seconds", "histogram" },
        { "kubelet_pleg_discard_events", "counter" },
        { "kubelet_pleg_last_seen_seconds", "gauge" },
        { "kubelet_running_pods", "gauge" },
        { "kubelet_running_containers", "gauge" },
        { "kubelet_pod_worker_duration_seconds", "histogram" },
        { "kubelet_pod_worker_start_duration_seconds", "histogram" },
        { "kubelet_containers_per_pod_count", "histogram" },
        { "kubelet_evented_pleg_connection_error_count", "counter" },
        { "kubelet_evented_pleg_connection_success_count", "counter" },
        { "kubelet_evented_pleg_connection_latency_seconds", "histogram" },
        /* Issue 17: what the kubernetes-mixin rules and dashboards read. */
        { "kubelet_node_name", "gauge" },
        { "kubelet_working_pods", "gauge" },
        { "kubelet_desired_pods", "gauge" },
        { "kubelet_active_pods", "gauge" },
        { "kubelet_mirror_pods", "gauge" },
        { "kubelet_restarted_pods_total", "counter" },
        { "kubelet_orphaned_runtime_pods_total", "counter" },
        { "kubelet_started_pods_total", "counter" },
        { "kubelet_started_pods_errors_total", "counter" },
        { "kubelet_started_containers_total", "counter" },
        { "kubelet_started_containers_errors_total", "counter" },
        { "kubelet_runtime_operations_total", "counter" },
        { "kubelet_runtime_operations_duration_seconds", "histogram" },
        { "kubelet_runtime_operations_errors_total", "counter" },
        { "kubelet_pod_start_duration_seconds", "histogram" },
};

static void test_register_and_render(void **state)
{
        _cleanup_(kc_metrics_registry_freep) struct kc_metrics_registry *r = NULL;
        struct kc_kubelet_metrics m = {};
        _cleanup_free_ char *text = NULL;
        char line[256];

        (void)state;
        assert_int_equal(kc_metrics_registry_new(&r), 0);
        assert_int_equal(kc_kubelet_metrics_register(r, &m), 0);
        assert_non_null(m.pleg_relist_duration);
        assert_non_null(m.pleg_relist_interval);
        assert_non_null(m.pleg_discard_events);
        assert_non_null(m.pleg_last_seen);
        assert_non_null(m.running_pods);
        assert_non_null(m.running_containers);
        assert_non_null(m.pod_worker_duration);
        assert_non_null(m.pod_worker_start_duration);
        assert_non_null(m.containers_per_pod);
        assert_non_null(m.evented_pleg_connection_error_count);
        assert_non_null(m.evented_pleg_connection_success_count);
        assert_non_null(m.evented_pleg_connection_latency);

        assert_int_equal(kc_metrics_render(r, &text), 0);
        for (size_t i = 0; i < KC_ELEMENTSOF(upstream); i++) {
                const char *help, *type;

                snprintf(line, sizeof(line), "# HELP %s [ALPHA] ", upstream[i].name);
                help = strstr(text, line);
                assert_non_null(help);
                snprintf(line, sizeof(line), "\n# TYPE %s %s\n", upstream[i].name,
                         upstream[i].type);
                type = strstr(text, line);
                assert_non_null(type);
                /* Registration order is the table's: appended metrics come last. */
                assert_true(help < type);
                if (i > 0) {
                        snprintf(line, sizeof(line), "# HELP %s ", upstream[i - 1].name);
                        assert_true(strstr(text, line) < help);
                }
        }
        /* Nothing else is registered. */
        {
                size_t n = 0;

                for (const char *p = text; (p = strstr(p, "# TYPE ")); p++)
                        n++;
                assert_int_equal(n, KC_ELEMENTSOF(upstream));
        }
        /* DefBuckets, starting at zero. */
        assert_non_null(strstr(text, "kubelet_pleg_relist_duration_seconds_bucket{le=\"0.005\"} 0\n"
                                     "kubelet_pleg_relist_duration_seconds_bucket{le=\"0.01\"} 0\n"
                                     "kubelet_pleg_relist_duration_seconds_bucket{le=\"0.025\"} 0\n"
                                     "kubelet_pleg_relist_duration_seconds_bucket{le=\"0.05\"} 0\n"
                                     "kubelet_pleg_relist_duration_seconds_bucket{le=\"0.1\"} 0\n"
                                     "kubelet_pleg_relist_duration_seconds_bucket{le=\"0.25\"} 0\n"
                                     "kubelet_pleg_relist_duration_seconds_bucket{le=\"0.5\"} 0\n"
                                     "kubelet_pleg_relist_duration_seconds_bucket{le=\"1\"} 0\n"
                                     "kubelet_pleg_relist_duration_seconds_bucket{le=\"2.5\"} 0\n"
                                     "kubelet_pleg_relist_duration_seconds_bucket{le=\"5\"} 0\n"
                                     "kubelet_pleg_relist_duration_seconds_bucket{le=\"10\"} 0\n"
                                     "kubelet_pleg_relist_duration_seconds_bucket{le=\"+Inf\"} 0\n"
                                     "kubelet_pleg_relist_duration_seconds_sum 0\n"
                                     "kubelet_pleg_relist_duration_seconds_count 0\n"));
        assert_non_null(strstr(text,
                               "kubelet_pleg_relist_interval_seconds_bucket{le=\"10\"} 0\n"
                               "kubelet_pleg_relist_interval_seconds_bucket{le=\"+Inf\"} 0\n"));
        assert_non_null(
                strstr(text, "# TYPE kubelet_pod_worker_start_duration_seconds histogram\n"
                             "kubelet_pod_worker_start_duration_seconds_bucket{le=\"0.005\"} 0\n"));
        assert_non_null(
                strstr(text, "kubelet_pod_worker_start_duration_seconds_bucket{le=\"10\"} 0\n"
                             "kubelet_pod_worker_start_duration_seconds_bucket{le=\"+Inf\"} 0\n"));
        /* A vector without series: its # HELP and # TYPE lines only. */
        assert_non_null(strstr(text, "\n# TYPE kubelet_pod_worker_duration_seconds histogram\n"
                                     "# HELP kubelet_pod_worker_start_duration_seconds "));
        /* ExponentialBuckets(1, 2, 5). */
        assert_non_null(strstr(text, "# TYPE kubelet_containers_per_pod_count histogram\n"
                                     "kubelet_containers_per_pod_count_bucket{le=\"1\"} 0\n"
                                     "kubelet_containers_per_pod_count_bucket{le=\"2\"} 0\n"
                                     "kubelet_containers_per_pod_count_bucket{le=\"4\"} 0\n"
                                     "kubelet_containers_per_pod_count_bucket{le=\"8\"} 0\n"
                                     "kubelet_containers_per_pod_count_bucket{le=\"16\"} 0\n"
                                     "kubelet_containers_per_pod_count_bucket{le=\"+Inf\"} 0\n"
                                     "kubelet_containers_per_pod_count_sum 0\n"
                                     "kubelet_containers_per_pod_count_count 0\n"));
        /* The EventedPLEG counters start at zero. */
        assert_non_null(strstr(text, "# TYPE kubelet_evented_pleg_connection_error_count counter\n"
                                     "kubelet_evented_pleg_connection_error_count 0\n"));
        assert_non_null(strstr(text,
                               "# TYPE kubelet_evented_pleg_connection_success_count counter\n"
                               "kubelet_evented_pleg_connection_success_count 0\n"));
        /* DefBuckets; the last metric registered. */
        assert_non_null(strstr(
                text, "# TYPE kubelet_evented_pleg_connection_latency_seconds histogram\n"
                      "kubelet_evented_pleg_connection_latency_seconds_bucket{le=\"0.005\"} 0\n"
                      "kubelet_evented_pleg_connection_latency_seconds_bucket{le=\"0.01\"} 0\n"
                      "kubelet_evented_pleg_connection_latency_seconds_bucket{le=\"0.025\"} 0\n"
                      "kubelet_evented_pleg_connection_latency_seconds_bucket{le=\"0.05\"} 0\n"
                      "kubelet_evented_pleg_connection_latency_seconds_bucket{le=\"0.1\"} 0\n"
                      "kubelet_evented_pleg_connection_latency_seconds_bucket{le=\"0.25\"} 0\n"
                      "kubelet_evented_pleg_connection_latency_seconds_bucket{le=\"0.5\"} 0\n"
                      "kubelet_evented_pleg_connection_latency_seconds_bucket{le=\"1\"} 0\n"
                      "kubelet_evented_pleg_connection_latency_seconds_bucket{le=\"2.5\"} 0\n"
                      "kubelet_evented_pleg_connection_latency_seconds_bucket{le=\"5\"} 0\n"
                      "kubelet_evented_pleg_connection_latency_seconds_bucket{le=\"10\"} 0\n"
                      "kubelet_evented_pleg_connection_latency_seconds_bucket{le=\"+Inf\"} 0\n"
                      "kubelet_evented_pleg_connection_latency_seconds_sum 0\n"
                      "kubelet_evented_pleg_connection_latency_seconds_count 0\n"));
        /* Issue 17: upstream's help texts, labels and buckets. */
        assert_non_null(strstr(text, "# HELP kubelet_node_name [ALPHA] The node's name. The count "
                                     "is always 1.\n# TYPE kubelet_node_name gauge\n"));
        assert_non_null(strstr(text, "# HELP kubelet_runtime_operations_total [ALPHA] Cumulative "
                                     "number of runtime operations by operation type.\n"));
        assert_non_null(strstr(text, "# HELP kubelet_pleg_relist_duration_seconds [ALPHA] "
                                     "Duration in seconds for relisting pods in PLEG.\n"));
        assert_non_null(strstr(text, "# HELP kubelet_pod_worker_duration_seconds [ALPHA] Duration "
                                     "in seconds to sync a single pod. Broken down by operation "
                                     "type: create, update, or sync\n"));
        /* The last metric registered: podStartupDurationBuckets, 0.5 to 3600. */
        assert_non_null(strstr(text, "# TYPE kubelet_pod_start_duration_seconds histogram\n"
                                     "kubelet_pod_start_duration_seconds_bucket{le=\"0.5\"} 0\n"
                                     "kubelet_pod_start_duration_seconds_bucket{le=\"1\"} 0\n"));
        assert_non_null(strstr(text, "kubelet_pod_start_duration_seconds_bucket{le=\"2700\"} 0\n"
                                     "kubelet_pod_start_duration_seconds_bucket{le=\"3600\"} 0\n"
                                     "kubelet_pod_start_duration_seconds_bucket{le=\"+Inf\"} 0\n"
                                     "kubelet_pod_start_duration_seconds_sum 0\n"
                                     "kubelet_pod_start_duration_seconds_count 0\n"));
        assert_string_equal(text + strlen(text) -
                                    strlen("kubelet_pod_start_duration_seconds_count 0\n"),
                            "kubelet_pod_start_duration_seconds_count 0\n");
}

/* The struct fields are the registered objects: updates show in the scrape. */
static void test_fields_are_live(void **state)
{
        _cleanup_(kc_metrics_registry_freep) struct kc_metrics_registry *r = NULL;
        struct kc_kubelet_metrics m = {};
        _cleanup_free_ char *text = NULL;

        (void)state;
        assert_int_equal(kc_metrics_registry_new(&r), 0);
        assert_int_equal(kc_kubelet_metrics_register(r, &m), 0);
        kc_histogram_observe_mp(m.pleg_relist_duration, 0.25);
        kc_histogram_observe_mp(m.pleg_relist_interval, 1.25);
        kc_counter_inc_mp(m.pleg_discard_events);
        kc_gauge_set_mp(m.pleg_last_seen, 1700000001.25);
        kc_gauge_set_mp(m.running_pods, 2);
        assert_int_equal(kc_gauge_vec_set_mp(m.running_containers, "running", 3), 0);
        assert_int_equal(kc_gauge_vec_set_mp(m.running_containers, "exited", 1), 0);
        assert_int_equal(kc_histogram_vec_observe_mp(m.pod_worker_duration, "sync", 0.3), 0);
        assert_int_equal(kc_histogram_vec_observe_mp(m.pod_worker_duration, "create", 2), 0);
        kc_histogram_observe_mp(m.pod_worker_start_duration, 0.01);
        kc_histogram_observe_mp(m.containers_per_pod, 3);
        kc_counter_inc_mp(m.evented_pleg_connection_error_count);
        kc_counter_add_mp(m.evented_pleg_connection_success_count, 2);
        kc_histogram_observe_mp(m.evented_pleg_connection_latency, 0.02);

        assert_int_equal(kc_metrics_render(r, &text), 0);
        assert_non_null(
                strstr(text, "\nkubelet_pleg_relist_duration_seconds_bucket{le=\"0.25\"} 1\n"));
        assert_non_null(strstr(text, "\nkubelet_pleg_relist_duration_seconds_sum 0.25\n"));
        assert_non_null(strstr(text,
                               "\nkubelet_pleg_relist_interval_seconds_bucket{le=\"1\"} 0\n"
                               "kubelet_pleg_relist_interval_seconds_bucket{le=\"2.5\"} 1\n"));
        assert_non_null(strstr(text, "\nkubelet_pleg_discard_events 1\n"));
        assert_non_null(strstr(text, "\nkubelet_pleg_last_seen_seconds 1700000001.25\n"));
        assert_non_null(strstr(text, "\nkubelet_running_pods 2\n"));
        assert_non_null(strstr(text,
                               "\nkubelet_running_containers{container_state=\"exited\"} 1\n"
                               "kubelet_running_containers{container_state=\"running\"} 3\n"));
        assert_non_null(strstr(
                text, "\nkubelet_pod_worker_duration_seconds_bucket{operation_type=\"create\","
                      "le=\"10\"} 1\n"
                      "kubelet_pod_worker_duration_seconds_bucket{operation_type=\"create\","
                      "le=\"+Inf\"} 1\n"
                      "kubelet_pod_worker_duration_seconds_sum{operation_type=\"create\"} 2\n"
                      "kubelet_pod_worker_duration_seconds_count{operation_type=\"create\"} 1\n"
                      "kubelet_pod_worker_duration_seconds_bucket{operation_type=\"sync\","
                      "le=\"0.005\"} 0\n"));
        assert_non_null(
                strstr(text, "\nkubelet_pod_worker_duration_seconds_bucket{operation_type=\"sync\","
                             "le=\"0.25\"} 0\n"
                             "kubelet_pod_worker_duration_seconds_bucket{operation_type=\"sync\","
                             "le=\"0.5\"} 1\n"));
        assert_non_null(strstr(
                text, "\nkubelet_pod_worker_start_duration_seconds_bucket{le=\"0.01\"} 1\n"));
        assert_non_null(strstr(text, "\nkubelet_containers_per_pod_count_bucket{le=\"2\"} 0\n"
                                     "kubelet_containers_per_pod_count_bucket{le=\"4\"} 1\n"));
        assert_non_null(strstr(text, "\nkubelet_containers_per_pod_count_sum 3\n"));
        assert_non_null(strstr(text, "\nkubelet_evented_pleg_connection_error_count 1\n"));
        assert_non_null(strstr(text, "\nkubelet_evented_pleg_connection_success_count 2\n"));
        assert_non_null(strstr(
                text, "\nkubelet_evented_pleg_connection_latency_seconds_bucket{le=\"0.01\"} 0\n"
                      "kubelet_evented_pleg_connection_latency_seconds_bucket{le=\"0.025\"} 1\n"));
        assert_non_null(
                strstr(text, "\nkubelet_evented_pleg_connection_latency_seconds_sum 0.02\n"));
}

/* A second registration in the same registry fails and leaves *ret alone. */
static void test_register_twice(void **state)
{
        _cleanup_(kc_metrics_registry_freep) struct kc_metrics_registry *r = NULL;
        struct kc_kubelet_metrics m = {}, m2 = {};

        (void)state;
        assert_int_equal(kc_metrics_registry_new(&r), 0);
        assert_int_equal(kc_kubelet_metrics_register(r, &m), 0);
        assert_int_equal(kc_kubelet_metrics_register(r, &m2), -EEXIST);
        assert_null(m2.pleg_relist_duration);
        assert_null(m2.running_containers);
        assert_null(m2.pod_worker_duration);
        assert_null(m2.containers_per_pod);
        assert_null(m2.evented_pleg_connection_latency);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_register_and_render),
                cmocka_unit_test(test_fields_are_live),
                cmocka_unit_test(test_register_twice),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
