/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file metrics/kubelet_metrics.h
 * @brief The kubelet metrics under upstream's names (pkg/kubelet/metrics).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kc_counter;
struct kc_counter_vec;
struct kc_gauge;
struct kc_gauge_vec;
struct kc_histogram;
struct kc_histogram_vec;
struct kc_metrics_registry;

/**
 * The fields are in registration order, which is also the order
 * kc_metrics_render() prints them in. New metrics are appended, so a scrape
 * keeps its layout as the set grows.
 */
struct kc_kubelet_metrics {
        struct kc_histogram *pleg_relist_duration; /* kubelet_pleg_relist_duration_seconds */
        struct kc_histogram *pleg_relist_interval; /* kubelet_pleg_relist_interval_seconds */
        struct kc_counter *pleg_discard_events;    /* kubelet_pleg_discard_events */
        struct kc_gauge *pleg_last_seen;           /* kubelet_pleg_last_seen_seconds */
        struct kc_gauge *running_pods;             /* kubelet_running_pods */
        struct kc_gauge_vec *running_containers;   /* kubelet_running_containers{container_state} */
        /* kubelet_pod_worker_duration_seconds{operation_type}, DefBuckets: one pod
         * sync, labelled with its sync type (upstream: create, update, sync, ...). */
        struct kc_histogram_vec *pod_worker_duration;
        /* kubelet_pod_worker_start_duration_seconds, DefBuckets: from the kubelet
         * seeing a pod to its worker starting. */
        struct kc_histogram *pod_worker_start_duration;
        /* kubelet_containers_per_pod_count, buckets 1 2 4 8 16
         * (ExponentialBuckets(1, 2, 5)): upstream observes len(spec.containers)
         * once per pod, when the pod is created. */
        struct kc_histogram *containers_per_pod;
        /* kubelet_evented_pleg_connection_error_count: failed GetContainerEvents streams. */
        struct kc_counter *evented_pleg_connection_error_count;
        /* kubelet_evented_pleg_connection_success_count: GetContainerEvents streams connected. */
        struct kc_counter *evented_pleg_connection_success_count;
        /* kubelet_evented_pleg_connection_latency_seconds, DefBuckets: per CRI
         * event, now minus the event's created_at. */
        struct kc_histogram *evented_pleg_connection_latency;
        /* kubelet_node_name{node}: set to 1 for the node's name at start. */
        struct kc_gauge_vec *node_name;
        /* Housekeeping (HandlePodCleanups) sets the next five and counts the two after. */
        struct kc_gauge_vec *working_pods; /* kubelet_working_pods{lifecycle,config,static} */
        struct kc_gauge_vec *desired_pods; /* kubelet_desired_pods{static} */
        struct kc_gauge_vec *active_pods;  /* kubelet_active_pods{static} */
        struct kc_gauge *mirror_pods;      /* kubelet_mirror_pods */
        struct kc_counter_vec *restarted_pods_total;    /* kubelet_restarted_pods_total{static} */
        struct kc_counter *orphaned_runtime_pods_total; /* kubelet_orphaned_runtime_pods_total */
        /* The runtime manager's SyncPod: sandboxes and containers it starts. */
        struct kc_counter *started_pods_total;        /* kubelet_started_pods_total */
        struct kc_counter *started_pods_errors_total; /* kubelet_started_pods_errors_total */
        /* kubelet_started_containers_total{container_type} */
        struct kc_counter_vec *started_containers_total;
        /* kubelet_started_containers_errors_total{container_type,code} */
        struct kc_counter_vec *started_containers_errors_total;
        /* The instrumented runtime service (runtime/instrumented.h), per CRI call. */
        struct kc_counter_vec *runtime_operations; /* kubelet_runtime_operations_total */
        /* kubelet_runtime_operations_duration_seconds, ExponentialBuckets(.005, 2.5, 14) */
        struct kc_histogram_vec *runtime_operations_duration;
        struct kc_counter_vec *runtime_operations_errors; /* ..._errors_total */
        /* kubelet_pod_start_duration_seconds: first sighting to first seen running. */
        struct kc_histogram *pod_start_duration;
};

/** The values of the static label (upstream: "true", or empty for API pods). */
#define KC_METRICS_STATIC_TRUE "true"
#define KC_METRICS_STATIC_FALSE ""

/**
 * Registers every kubelet metric in @p r, in field order, and fills @p ret.
 * @return 0; -EEXIST (a name already registered), -ENOMEM or -EINVAL with
 * *ret untouched, the metrics registered before the failure left in @p r.
 */
int kc_kubelet_metrics_register(struct kc_metrics_registry *r, struct kc_kubelet_metrics *ret);
