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
};

/**
 * Registers every kubelet metric in @p r, in field order, and fills @p ret.
 * @return 0; -EEXIST (a name already registered), -ENOMEM or -EINVAL with
 * *ret untouched, the metrics registered before the failure left in @p r.
 */
int kc_kubelet_metrics_register(struct kc_metrics_registry *r, struct kc_kubelet_metrics *ret);
