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
};

/* The most buckets a row's ExponentialBuckets may ask for. */
#define EXP_BUCKETS_MAX 32

struct kubelet_metric_def {
        enum kubelet_metric_kind kind;
        const char *name;
        const char *help;
        const char *label;     /* KIND_GAUGE_VEC and KIND_HISTOGRAM_VEC only */
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

static const struct kubelet_metric_def kubelet_metric_defs[] = {
        {
                .kind = KIND_HISTOGRAM,
                .name = "kubelet_pleg_relist_duration_seconds",
                .help = KC_ALPHA "Time in seconds that one PLEG relist of the pods took.",
                .offset = FIELD(pleg_relist_duration),
        },
        {
                .kind = KIND_HISTOGRAM,
                .name = "kubelet_pleg_relist_interval_seconds",
                .help = KC_ALPHA "Time in seconds between the starts of consecutive PLEG relists.",
                .offset = FIELD(pleg_relist_interval),
        },
        {
                .kind = KIND_COUNTER,
                .name = "kubelet_pleg_discard_events",
                .help = KC_ALPHA
                "Number of PLEG events dropped because the event channel was full.",
                .offset = FIELD(pleg_discard_events),
        },
        {
                .kind = KIND_GAUGE,
                .name = "kubelet_pleg_last_seen_seconds",
                .help = KC_ALPHA "Unix time in seconds at which PLEG was last seen active.",
                .offset = FIELD(pleg_last_seen),
        },
        {
                .kind = KIND_GAUGE,
                .name = "kubelet_running_pods",
                .help = KC_ALPHA "Number of pods whose pod sandbox is running.",
                .offset = FIELD(running_pods),
        },
        {
                .kind = KIND_GAUGE_VEC,
                .name = "kubelet_running_containers",
                .help = KC_ALPHA "Number of containers, by container state.",
                .label = "container_state",
                .offset = FIELD(running_containers),
        },
        {
                .kind = KIND_HISTOGRAM_VEC,
                .name = "kubelet_pod_worker_duration_seconds",
                .help = KC_ALPHA
                "Time in seconds that one pod sync took, by operation type (create, update, sync).",
                .label = "operation_type",
                .offset = FIELD(pod_worker_duration),
        },
        {
                .kind = KIND_HISTOGRAM,
                .name = "kubelet_pod_worker_start_duration_seconds",
                .help = KC_ALPHA
                "Time in seconds from the kubelet first seeing a pod to its pod worker starting.",
                .offset = FIELD(pod_worker_start_duration),
        },
        {
                .kind = KIND_HISTOGRAM,
                .name = "kubelet_containers_per_pod_count",
                .help = KC_ALPHA
                "Number of containers in each pod, counted when the pod is created.",
                .exp_buckets = { .start = 1, .factor = 2, .count = 5 },
                .offset = FIELD(containers_per_pod),
        },
        {
                .kind = KIND_COUNTER,
                .name = "kubelet_evented_pleg_connection_error_count",
                .help = KC_ALPHA "Number of times the container events stream of Evented PLEG "
                                 "failed to open or broke.",
                .offset = FIELD(evented_pleg_connection_error_count),
        },
        {
                .kind = KIND_COUNTER,
                .name = "kubelet_evented_pleg_connection_success_count",
                .help = KC_ALPHA
                "Number of times Evented PLEG connected to the container events stream.",
                .offset = FIELD(evented_pleg_connection_success_count),
        },
        {
                .kind = KIND_HISTOGRAM,
                .name = "kubelet_evented_pleg_connection_latency_seconds",
                .help = KC_ALPHA "Time in seconds from a container event's creation in the "
                                 "runtime to Evented PLEG processing it.",
                .offset = FIELD(evented_pleg_connection_latency),
        },
};

/* Every field of struct kc_kubelet_metrics is one metric pointer with a row. */
static_assert(sizeof(struct kc_kubelet_metrics) ==
                      KC_ELEMENTSOF(kubelet_metric_defs) * sizeof(void *),
              "struct kc_kubelet_metrics and kubelet_metric_defs disagree");

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

                k = kc_metrics_gauge_vec_new(r, d->name, d->help, d->label, &g);
                if (k == 0)
                        *ret = g;
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

                k = kc_metrics_histogram_vec_new(r, d->name, d->help, d->label, buckets, n_buckets,
                                                 &hv);
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
