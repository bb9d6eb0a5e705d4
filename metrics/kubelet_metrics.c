/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubelet metrics under upstream's Prometheus names
 * (pkg/kubelet/metrics/metrics.go, subsystem "kubelet"; UPSTREAM.md §11).
 *
 * One table row per metric: adding a metric is a field in struct
 * kc_kubelet_metrics plus a row here, both appended at the end. Rows are
 * registered in table order, so the table, the struct fields and a scrape
 * all list the metrics in the same order; appending keeps an existing
 * scrape's layout stable. Upstream's metrics are all ALPHA and
 * component-base prefixes their help text with "[ALPHA] "; we keep that
 * prefix so a scrape reads like a kubelet's.
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "core/cleanup.h"
#include "metrics/kubelet_metrics.h"
#include "metrics/registry.h"

enum kubelet_metric_kind {
        KIND_COUNTER,
        KIND_GAUGE,
        KIND_GAUGE_VEC,
        KIND_HISTOGRAM,
        KIND_HISTOGRAM_VEC,
        KIND_COUNTER_VEC,
};

/* The most buckets a row's ExponentialBuckets may ask for. */
#define EXP_BUCKETS_MAX 32

struct kubelet_metric_def {
        enum kubelet_metric_kind kind;
        const char *name;
        const char *help;
        /* KIND_*_VEC only: the label names, NULL-terminated unless all are set
         * (KIND_HISTOGRAM_VEC: one). */
        const char *labels[KC_METRICS_LABELS_MAX];
        const double *buckets; /* KIND_HISTOGRAM*: NULL means the default buckets ... */
        size_t n_buckets;
        struct {
                double start, factor;
                size_t count; /* ... unless > 0: ExponentialBuckets(start, factor, count) */
        } exp_buckets;
        size_t offset; /* of the pointer in struct kc_kubelet_metrics */
};

#define KC_ALPHA "[ALPHA] "
#define FIELD(f) offsetof(struct kc_kubelet_metrics, f)

/* Upstream's podStartupDurationBuckets (metrics.go), in seconds. */
static const double pod_startup_duration_buckets[] = {
        0.5, 1,   2,   3,   4,   5,   6,   8,   10,   20,   30,   45,   60,
        120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600,
};

static const struct kubelet_metric_def kubelet_metric_defs[] = {
        {
                .kind = KIND_HISTOGRAM,
                .name = "kubelet_pleg_relist_duration_seconds",
                .help = KC_ALPHA "Duration in seconds for relisting pods in PLEG.",
                .offset = FIELD(pleg_relist_duration),
        },
        {
                .kind = KIND_HISTOGRAM,
                .name = "kubelet_pleg_relist_interval_seconds",
                .help = KC_ALPHA "Interval in seconds between relisting in PLEG.",
                .offset = FIELD(pleg_relist_interval),
        },
        {
                .kind = KIND_COUNTER,
                .name = "kubelet_pleg_discard_events",
                .help = KC_ALPHA "The number of discard events in PLEG.",
                .offset = FIELD(pleg_discard_events),
        },
        {
                .kind = KIND_GAUGE,
                .name = "kubelet_pleg_last_seen_seconds",
                .help = KC_ALPHA "Timestamp in seconds when PLEG was last seen active.",
                .offset = FIELD(pleg_last_seen),
        },
        {
                .kind = KIND_GAUGE,
                .name = "kubelet_running_pods",
                .help = KC_ALPHA "Number of pods that have a running pod sandbox",
                .offset = FIELD(running_pods),
        },
        {
                .kind = KIND_GAUGE_VEC,
                .name = "kubelet_running_containers",
                .help = KC_ALPHA "Number of containers currently running",
                .labels = { "container_state" },
                .offset = FIELD(running_containers),
        },
        {
                .kind = KIND_HISTOGRAM_VEC,
                .name = "kubelet_pod_worker_duration_seconds",
                .help = KC_ALPHA "Duration in seconds to sync a single pod. Broken down by "
                                 "operation type: create, update, or sync",
                .labels = { "operation_type" },
                .offset = FIELD(pod_worker_duration),
        },
        {
                .kind = KIND_HISTOGRAM,
                .name = "kubelet_pod_worker_start_duration_seconds",
                .help = KC_ALPHA
                "Duration in seconds from kubelet seeing a pod to starting a worker.",
                .offset = FIELD(pod_worker_start_duration),
        },
        {
                .kind = KIND_HISTOGRAM,
                .name = "kubelet_containers_per_pod_count",
                .help = KC_ALPHA "The number of containers per pod.",
                .exp_buckets = { .start = 1, .factor = 2, .count = 5 },
                .offset = FIELD(containers_per_pod),
        },
        {
                .kind = KIND_COUNTER,
                .name = "kubelet_evented_pleg_connection_error_count",
                .help = KC_ALPHA "The number of errors encountered during the establishment "
                                 "of streaming connection with the CRI runtime.",
                .offset = FIELD(evented_pleg_connection_error_count),
        },
        {
                .kind = KIND_COUNTER,
                .name = "kubelet_evented_pleg_connection_success_count",
                .help = KC_ALPHA "The number of times a streaming client was obtained to "
                                 "receive CRI Events.",
                .offset = FIELD(evented_pleg_connection_success_count),
        },
        {
                .kind = KIND_HISTOGRAM,
                .name = "kubelet_evented_pleg_connection_latency_seconds",
                .help = KC_ALPHA "The latency of streaming connection with the CRI runtime, "
                                 "measured in seconds.",
                .offset = FIELD(evented_pleg_connection_latency),
        },
        {
                .kind = KIND_GAUGE_VEC,
                .name = "kubelet_node_name",
                .help = KC_ALPHA "The node's name. The count is always 1.",
                .labels = { "node" },
                .offset = FIELD(node_name),
        },
        {
                .kind = KIND_GAUGE_VEC,
                .name = "kubelet_working_pods",
                .help = KC_ALPHA
                "Number of pods the kubelet is actually running, broken down by lifecycle phase, "
                "whether the pod is desired, orphaned, or runtime only (also orphaned), and "
                "whether the pod is static. An orphaned pod has been removed from local "
                "configuration or force deleted in the API and consumes resources that are not "
                "otherwise visible.",
                .labels = { "lifecycle", "config", "static" },
                .offset = FIELD(working_pods),
        },
        {
                .kind = KIND_GAUGE_VEC,
                .name = "kubelet_desired_pods",
                .help = KC_ALPHA "The number of pods the kubelet is being instructed to run. "
                                 "static is true if the pod is not from the apiserver.",
                .labels = { "static" },
                .offset = FIELD(desired_pods),
        },
        {
                .kind = KIND_GAUGE_VEC,
                .name = "kubelet_active_pods",
                .help = KC_ALPHA "The number of pods the kubelet considers active and which are "
                                 "being considered when admitting new pods. static is true if "
                                 "the pod is not from the apiserver.",
                .labels = { "static" },
                .offset = FIELD(active_pods),
        },
        {
                .kind = KIND_GAUGE,
                .name = "kubelet_mirror_pods",
                .help = KC_ALPHA "The number of mirror pods the kubelet will try to create (one "
                                 "per admitted static pod)",
                .offset = FIELD(mirror_pods),
        },
        {
                .kind = KIND_COUNTER_VEC,
                .name = "kubelet_restarted_pods_total",
                .help = KC_ALPHA
                "Number of pods that have been restarted because they were deleted and "
                "recreated with the same UID while the kubelet was watching them (common for "
                "static pods, extremely uncommon for API pods)",
                .labels = { "static" },
                .offset = FIELD(restarted_pods_total),
        },
        {
                .kind = KIND_COUNTER,
                .name = "kubelet_orphaned_runtime_pods_total",
                .help = KC_ALPHA
                "Number of pods that have been detected in the container runtime without being "
                "already known to the pod worker. This typically indicates the kubelet was "
                "restarted while a pod was force deleted in the API or in the local "
                "configuration, which is unusual.",
                .offset = FIELD(orphaned_runtime_pods_total),
        },
        {
                .kind = KIND_COUNTER,
                .name = "kubelet_started_pods_total",
                .help = KC_ALPHA "Cumulative number of pods started",
                .offset = FIELD(started_pods_total),
        },
        {
                .kind = KIND_COUNTER,
                .name = "kubelet_started_pods_errors_total",
                .help = KC_ALPHA "Cumulative number of errors when starting pods",
                .offset = FIELD(started_pods_errors_total),
        },
        {
                .kind = KIND_COUNTER_VEC,
                .name = "kubelet_started_containers_total",
                .help = KC_ALPHA "Cumulative number of containers started",
                .labels = { "container_type" },
                .offset = FIELD(started_containers_total),
        },
        {
                .kind = KIND_COUNTER_VEC,
                .name = "kubelet_started_containers_errors_total",
                .help = KC_ALPHA "Cumulative number of errors when starting containers",
                .labels = { "container_type", "code" },
                .offset = FIELD(started_containers_errors_total),
        },
        {
                .kind = KIND_COUNTER_VEC,
                .name = "kubelet_runtime_operations_total",
                .help = KC_ALPHA "Cumulative number of runtime operations by operation type.",
                .labels = { "operation_type" },
                .offset = FIELD(runtime_operations),
        },
        {
                .kind = KIND_HISTOGRAM_VEC,
                .name = "kubelet_runtime_operations_duration_seconds",
                .help = KC_ALPHA "Duration in seconds of runtime operations. Broken down by "
                                 "operation type.",
                .labels = { "operation_type" },
                .exp_buckets = { .start = .005, .factor = 2.5, .count = 14 },
                .offset = FIELD(runtime_operations_duration),
        },
        {
                .kind = KIND_COUNTER_VEC,
                .name = "kubelet_runtime_operations_errors_total",
                .help = KC_ALPHA "Cumulative number of runtime operation errors by operation type.",
                .labels = { "operation_type" },
                .offset = FIELD(runtime_operations_errors),
        },
        {
                .kind = KIND_HISTOGRAM,
                .name = "kubelet_pod_start_duration_seconds",
                .help = KC_ALPHA "Duration in seconds from kubelet seeing a pod for the first "
                                 "time to the pod starting to run",
                .buckets = pod_startup_duration_buckets,
                .n_buckets = KC_ELEMENTSOF(pod_startup_duration_buckets),
                .offset = FIELD(pod_start_duration),
        },
};

/* Every field of struct kc_kubelet_metrics is one metric pointer with a row. */
static_assert(sizeof(struct kc_kubelet_metrics) ==
                      KC_ELEMENTSOF(kubelet_metric_defs) * sizeof(void *),
              "struct kc_kubelet_metrics and kubelet_metric_defs disagree");

static size_t n_labels(const struct kubelet_metric_def *d)
{
        size_t n = 0;

        while (n < KC_ELEMENTSOF(d->labels) && d->labels[n])
                n++;
        return n;
}

static int register_one(struct kc_metrics_registry *r, const struct kubelet_metric_def *d,
                        void **ret)
{
        double exp_bounds[EXP_BUCKETS_MAX];
        const double *buckets = d->buckets;
        size_t n_buckets = d->n_buckets;
        int k = -EINVAL;

        if (d->exp_buckets.count > 0) {
                if (d->exp_buckets.count > KC_ELEMENTSOF(exp_bounds))
                        return -EINVAL;
                k = kc_metrics_exponential_buckets(d->exp_buckets.start, d->exp_buckets.factor,
                                                   d->exp_buckets.count, exp_bounds);
                if (k < 0)
                        return k;
                buckets = exp_bounds;
                n_buckets = d->exp_buckets.count;
        }

        switch (d->kind) {
        case KIND_COUNTER: {
                struct kc_counter *c;

                k = kc_metrics_counter_new(r, d->name, d->help, &c);
                if (k == 0)
                        *ret = c;
                break;
        }
        case KIND_GAUGE: {
                struct kc_gauge *g;

                k = kc_metrics_gauge_new(r, d->name, d->help, &g);
                if (k == 0)
                        *ret = g;
                break;
        }
        case KIND_GAUGE_VEC: {
                struct kc_gauge_vec *g;

                k = kc_metrics_gauge_vec_new_labels(r, d->name, d->help, d->labels, n_labels(d),
                                                    &g);
                if (k == 0)
                        *ret = g;
                break;
        }
        case KIND_COUNTER_VEC: {
                struct kc_counter_vec *c;

                k = kc_metrics_counter_vec_new(r, d->name, d->help, d->labels, n_labels(d), &c);
                if (k == 0)
                        *ret = c;
                break;
        }
        case KIND_HISTOGRAM: {
                struct kc_histogram *h;

                k = kc_metrics_histogram_new(r, d->name, d->help, buckets, n_buckets, &h);
                if (k == 0)
                        *ret = h;
                break;
        }
        case KIND_HISTOGRAM_VEC: {
                struct kc_histogram_vec *hv;

                k = kc_metrics_histogram_vec_new(r, d->name, d->help, d->labels[0], buckets,
                                                 n_buckets, &hv);
                if (k == 0)
                        *ret = hv;
                break;
        }
        }
        return k;
}

/*
 * On failure *ret is untouched, but the metrics registered before the
 * failing one stay in @p r (the registry has no unregister): callers free
 * the registry.
 */
int kc_kubelet_metrics_register(struct kc_metrics_registry *r, struct kc_kubelet_metrics *ret)
{
        struct kc_kubelet_metrics m = {};

        assert(r && ret);
        for (size_t i = 0; i < KC_ELEMENTSOF(kubelet_metric_defs); i++) {
                const struct kubelet_metric_def *d = &kubelet_metric_defs[i];
                void *p = NULL;
                int k;

                k = register_one(r, d, &p);
                if (k < 0)
                        return k;
                /* Every field is an object pointer, so storing a void * there is fine. */
                memcpy((char *)&m + d->offset, &p, sizeof(p));
        }
        *ret = m;
        return 0;
}
