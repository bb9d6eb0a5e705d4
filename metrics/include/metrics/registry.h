/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file metrics/registry.h
 * @brief The metrics registry: counters, gauges, histograms, the Prometheus text format.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"

struct kc_metrics_registry;
struct kc_counter;
struct kc_gauge;
struct kc_gauge_vec;
struct kc_counter_vec;
struct kc_histogram;
struct kc_histogram_vec;

/** The most labels a gauge or counter vector may have. */
#define KC_METRICS_LABELS_MAX 4

/** Prometheus' DefBuckets: .005 .01 .025 .05 .1 .25 .5 1 2.5 5 10. */
extern const double kc_metrics_default_buckets[11];

/**
 * Prometheus' ExponentialBuckets: fills @p out[0..count) with @p start,
 * start * factor, start * factor^2, ... (each the previous bound times
 * @p factor, rounded). The implicit +Inf bucket is not included.
 * @return 0, or -EINVAL with @p out untouched when @p count is 0, @p start
 * is not > 0, @p factor is not > 1, either is not finite, or a bound would
 * overflow to infinity or fail to grow (Go panics on the first three and
 * builds a histogram its constructor rejects on the others).
 */
int kc_metrics_exponential_buckets(double start, double factor, size_t count, double *out);

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
/**
 * A gauge with 1..KC_METRICS_LABELS_MAX label dimensions, e.g. lifecycle,
 * config, static. @p label_names must be valid and distinct (-EINVAL).
 * Series render their labels in @p label_names order.
 */
int kc_metrics_gauge_vec_new_labels(struct kc_metrics_registry *r, const char *name,
                                    const char *help, const char *const *label_names,
                                    size_t n_labels, struct kc_gauge_vec **ret);
/** A counter with 1..KC_METRICS_LABELS_MAX label dimensions (as above). */
int kc_metrics_counter_vec_new(struct kc_metrics_registry *r, const char *name, const char *help,
                               const char *const *label_names, size_t n_labels,
                               struct kc_counter_vec **ret);

/**
 * Registers @p fn, called (with the registry locked: it must not register
 * metrics or render) at the start of every kc_metrics_render(), to refresh
 * metrics whose values are read at scrape time (the Go client's Collect),
 * e.g. the process_* metrics. The registry owns @p userdata from then on
 * and frees it with @p free_fn (may be NULL) when it is freed.
 * @return 0, or -ENOMEM with @p userdata still the caller's.
 */
int kc_metrics_registry_add_collector(struct kc_metrics_registry *r, void (*fn)(void *userdata),
                                      void (*free_fn)(void *userdata), void *userdata);
/**
 * @p buckets NULL means kc_metrics_default_buckets. Finite upper bounds,
 * strictly ascending; a trailing +Inf is dropped as implicit (-EINVAL
 * otherwise). Copied.
 */
int kc_metrics_histogram_new(struct kc_metrics_registry *r, const char *name, const char *help,
                             const double *buckets, size_t n_buckets, struct kc_histogram **ret);
/**
 * A histogram with one label dimension, e.g. operation_type: one series
 * per label value, every series with the same @p buckets (as for
 * kc_metrics_histogram_new()). @p label_name must be a valid label name
 * other than "le", which the buckets use (-EINVAL).
 */
int kc_metrics_histogram_vec_new(struct kc_metrics_registry *r, const char *name, const char *help,
                                 const char *label_name, const double *buckets, size_t n_buckets,
                                 struct kc_histogram_vec **ret);

/** A label of a custom family's sample. */
struct kc_metrics_label {
        const char *name;
        const char *value; /* unescaped; NULL counts as "" */
};
/** The most labels (besides le) kc_metrics_write_histogram() takes. */
#define KC_METRICS_CUSTOM_LABELS_MAX 8
/** Where a custom family's samples go (valid during its write callback only). */
struct kc_metrics_writer;
/**
 * Writes the family's samples with kc_metrics_write_sample() and
 * kc_metrics_write_histogram(); called by kc_metrics_render() with the
 * registry locked (it must not register metrics or render).
 */
typedef void (*kc_metrics_write_fn)(void *userdata, struct kc_metrics_writer *w);

/**
 * @brief A family whose samples its owner writes at render time (the Go
 * client's custom Collector), for series that come and go with the objects
 * they describe (the vectors above never delete a series): # HELP and
 * # TYPE (counter, or histogram with @p histogram) come from the registry,
 * the samples from @p write. The registry owns @p userdata from the
 * success on and frees it with @p free_fn (may be NULL) when it is freed.
 * @return 0, -EINVAL (bad name, NULL @p write), -EEXIST or -ENOMEM
 * (@p userdata still the caller's).
 */
int kc_metrics_custom_new(struct kc_metrics_registry *r, const char *name, const char *help,
                          bool histogram, kc_metrics_write_fn write,
                          void (*free_fn)(void *userdata), void *userdata);
/** One sample "<family><suffix>{labels} v" (labels in the given order, escaped here). */
void kc_metrics_write_sample(struct kc_metrics_writer *w, const char *suffix,
                             const struct kc_metrics_label *labels, size_t n_labels, double v);
/**
 * One histogram series: @p buckets[i] observations in (bounds[i-1],
 * bounds[i]] (not cumulative; the writer sums them), @p count and @p sum in
 * all; rendered as _bucket{labels,le} (cumulative, +Inf = count), _sum, _count.
 */
void kc_metrics_write_histogram(struct kc_metrics_writer *w, const struct kc_metrics_label *labels,
                                size_t n_labels, const double *bounds, const uint64_t *buckets,
                                size_t n_bounds, uint64_t count, double sum);

/** Any thread. @p v must be >= 0 for counters. */
void kc_counter_add_mp(struct kc_counter *c, double v);
void kc_counter_inc_mp(struct kc_counter *c);
double kc_counter_value(const struct kc_counter *c);

void kc_gauge_set_mp(struct kc_gauge *g, double v);
void kc_gauge_add_mp(struct kc_gauge *g, double v);
double kc_gauge_value(const struct kc_gauge *g);

/**
 * Single-label vectors. Creates the series for @p label_value on first use
 * (-ENOMEM on failure); -EINVAL on a vector with several labels.
 */
int kc_gauge_vec_set_mp(struct kc_gauge_vec *g, const char *label_value, double v);
int kc_gauge_vec_add_mp(struct kc_gauge_vec *g, const char *label_value, double v);
/** -ENOENT when the series does not exist. */
int kc_gauge_vec_value(const struct kc_gauge_vec *g, const char *label_value, double *ret);

/**
 * Any thread. @p label_values holds one value per label of the vector, in
 * its label order. -EINVAL for a NULL value, a value holding the byte 0xff
 * (never valid UTF-8), or values longer than 510 bytes in all; -ENOMEM;
 * -ENOENT (lookups) when the series does not exist.
 */
int kc_gauge_vec_set_labels_mp(struct kc_gauge_vec *g, const char *const *label_values, double v);
int kc_gauge_vec_labels_value(const struct kc_gauge_vec *g, const char *const *label_values,
                              double *ret);
/** @p v must be >= 0 (-EINVAL). */
int kc_counter_vec_add_mp(struct kc_counter_vec *c, const char *const *label_values, double v);
int kc_counter_vec_inc_mp(struct kc_counter_vec *c, const char *const *label_values);
int kc_counter_vec_value(const struct kc_counter_vec *c, const char *const *label_values,
                         double *ret);

/** Calls @p cb for every series of a single-label vector, in label-value order. */
void kc_gauge_vec_foreach(const struct kc_gauge_vec *g,
                          void (*cb)(const char *label_value, double v, void *userdata),
                          void *userdata);

void kc_histogram_observe_mp(struct kc_histogram *h, double v);
uint64_t kc_histogram_count(const struct kc_histogram *h);
double kc_histogram_sum(const struct kc_histogram *h);

/**
 * Any thread. Observes @p v in the series for @p label_value, creating it
 * on first use (@p label_value is copied).
 * @return 0, -EINVAL (NULL @p label_value) or -ENOMEM (series not created,
 * nothing observed).
 */
int kc_histogram_vec_observe_mp(struct kc_histogram_vec *hv, const char *label_value, double v);
/**
 * Any thread. Observation count / sum of one series.
 * @return 0 and *ret; -ENOENT when the series does not exist, -EINVAL for
 * a NULL @p label_value (*ret unchanged on failure).
 */
int kc_histogram_vec_count(const struct kc_histogram_vec *hv, const char *label_value,
                           uint64_t *ret);
int kc_histogram_vec_sum(const struct kc_histogram_vec *hv, const char *label_value, double *ret);

/**
 * Renders every metric in registration order in the Prometheus text format
 * (# HELP, # TYPE, samples; histograms with cumulative _bucket{le=...},
 * le="+Inf", _sum and _count). Vectors render their series in label-value
 * (strcmp) order, a histogram vector's as _bucket{<label>="v",le="..."},
 * _sum{<label>="v"} and _count{<label>="v"}; label values are escaped
 * (backslash, double quote, newline).
 * @return 0 and a malloc'd NUL-terminated *ret, or -ENOMEM.
 */
int kc_metrics_render(const struct kc_metrics_registry *r, char **ret);
