/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kc_health.h
 * @brief Metrics registry rendering the Prometheus text exposition format
 * (version 0.0.4), and the kubelet metrics under upstream's names.
 *
 * Metric objects are owned by their registry and live until it is freed.
 * Updates are lock-free atomics callable from any thread (`_mp`); rendering
 * may run concurrently with updates.
 */
#pragma once

#include "kc_core.h"

struct kc_metrics_registry;
struct kc_counter;
struct kc_gauge;
struct kc_gauge_vec;
struct kc_histogram;

/** Prometheus' DefBuckets: .005 .01 .025 .05 .1 .25 .5 1 2.5 5 10. */
extern const double kc_metrics_default_buckets[11];

int kc_metrics_registry_new(struct kc_metrics_registry **ret);
struct kc_metrics_registry *kc_metrics_registry_free(struct kc_metrics_registry *r);
KC_DEFINE_CLEANUP_FUNC(struct kc_metrics_registry, kc_metrics_registry_free)

/**
 * Constructors register a metric under @p name (which must be a valid
 * Prometheus metric name and not yet registered: -EEXIST / -EINVAL).
 * @p name and @p help are copied. *ret is owned by the registry.
 */
int kc_metrics_counter_new(struct kc_metrics_registry *r, const char *name, const char *help,
                           struct kc_counter **ret);
int kc_metrics_gauge_new(struct kc_metrics_registry *r, const char *name, const char *help,
                         struct kc_gauge **ret);
/** A gauge with one label dimension, e.g. container_state. */
int kc_metrics_gauge_vec_new(struct kc_metrics_registry *r, const char *name, const char *help,
                             const char *label_name, struct kc_gauge_vec **ret);
/** @p buckets NULL means kc_metrics_default_buckets. Upper bounds, ascending. */
int kc_metrics_histogram_new(struct kc_metrics_registry *r, const char *name, const char *help,
                             const double *buckets, size_t n_buckets, struct kc_histogram **ret);

/** Any thread. @p v must be >= 0 for counters. */
void kc_counter_add_mp(struct kc_counter *c, double v);
void kc_counter_inc_mp(struct kc_counter *c);
double kc_counter_value(const struct kc_counter *c);

void kc_gauge_set_mp(struct kc_gauge *g, double v);
void kc_gauge_add_mp(struct kc_gauge *g, double v);
double kc_gauge_value(const struct kc_gauge *g);

/** Creates the series for @p label_value on first use (-ENOMEM on failure). */
int kc_gauge_vec_set_mp(struct kc_gauge_vec *g, const char *label_value, double v);
int kc_gauge_vec_add_mp(struct kc_gauge_vec *g, const char *label_value, double v);
/** -ENOENT when the series does not exist. */
int kc_gauge_vec_value(const struct kc_gauge_vec *g, const char *label_value, double *ret);
/** Calls @p cb for every series, in label-value order. */
void kc_gauge_vec_foreach(const struct kc_gauge_vec *g,
                          void (*cb)(const char *label_value, double v, void *userdata),
                          void *userdata);

void kc_histogram_observe_mp(struct kc_histogram *h, double v);
uint64_t kc_histogram_count(const struct kc_histogram *h);
double kc_histogram_sum(const struct kc_histogram *h);

/**
 * Renders every metric in registration order in the Prometheus text format
 * (# HELP, # TYPE, samples; histograms with cumulative _bucket{le=...},
 * le="+Inf", _sum and _count).
 * @return 0 and a malloc'd NUL-terminated *ret, or -ENOMEM.
 */
int kc_metrics_render(const struct kc_metrics_registry *r, char **ret);

/* ------------------------------------------------------------------------ */
/* kubelet metrics (upstream pkg/kubelet/metrics, subsystem "kubelet")        */

struct kc_kubelet_metrics {
        struct kc_histogram *pleg_relist_duration; /* kubelet_pleg_relist_duration_seconds */
        struct kc_histogram *pleg_relist_interval; /* kubelet_pleg_relist_interval_seconds */
        struct kc_counter *pleg_discard_events;    /* kubelet_pleg_discard_events */
        struct kc_gauge *pleg_last_seen;           /* kubelet_pleg_last_seen_seconds */
        struct kc_gauge *running_pods;             /* kubelet_running_pods */
        struct kc_gauge_vec *running_containers;   /* kubelet_running_containers{container_state} */
};

/** Registers every kubelet metric in @p r and fills @p ret. */
int kc_kubelet_metrics_register(struct kc_metrics_registry *r, struct kc_kubelet_metrics *ret);
