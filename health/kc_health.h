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
struct kc_histogram_vec;

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

/* ------------------------------------------------------------------------ */
/* kubelet metrics (upstream pkg/kubelet/metrics, subsystem "kubelet")        */

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

/* ------------------------------------------------------------------------ */
/* runtimeState (upstream pkg/kubelet/runtime.go)                             */

/**
 * @brief Formats messages like apimachinery's utilerrors.NewAggregate(...)
 * .Error(): NULL entries are skipped (nil errors), repeated messages are
 * shown once, a single remaining message is returned as is and several are
 * joined as "[a, b, c]".
 * @return 0 and *ret set to NULL (no message) or a malloc'd string; -ENOMEM
 * with *ret unchanged.
 */
int kc_aggregate_errors(const char *const *msgs, size_t n, char **ret);

/**
 * Health of the container runtime as the sync loop sees it. Every call is
 * thread-safe (an rwlock guards the fields); kc_runtime_state_free() needs
 * exclusive access.
 */
struct kc_runtime_state;

/** upstream ErrNetworkUnknown: the network error a new runtime state starts with. */
#define KC_RUNTIME_NETWORK_UNKNOWN "network state unknown"

/**
 * A health check: returns true when healthy. When unhealthy it may set
 * *ret_err to a malloc'd message (ownership passes to the caller) or leave
 * it NULL, which is reported as "<nil>" as Go's %v prints a nil error.
 * Called without any runtime-state lock held, on the thread calling
 * kc_runtime_state_runtime_errors(); it may call back into the state.
 */
typedef bool (*kc_health_check_fn)(void *userdata, char **ret_err);

/**
 * @param clock used for "now"; must outlive the state.
 * @param base_runtime_sync_threshold_ns how old the last successful runtime
 * status poll may get before the runtime counts as down (kubelet: 30 s,
 * maxWaitForContainerRuntime). Must be > 0 (-EINVAL).
 * @return 0 and *ret, -EINVAL or -ENOMEM (*ret unchanged).
 */
int kc_runtime_state_new(struct kc_clock *clock, int64_t base_runtime_sync_threshold_ns,
                         struct kc_runtime_state **ret);
/** NULL-safe; returns NULL. No concurrent users. */
struct kc_runtime_state *kc_runtime_state_free(struct kc_runtime_state *s);
KC_DEFINE_CLEANUP_FUNC(struct kc_runtime_state, kc_runtime_state_free)

/**
 * Any thread. Appends a check; checks run in registration order (kubelet:
 * "PLEG", then "EventedPLEG"). @p name is copied; @p userdata is borrowed
 * and must outlive the state. Checks cannot be removed.
 * @return 0 or -ENOMEM (nothing registered).
 */
int kc_runtime_state_add_health_check(struct kc_runtime_state *s, const char *name,
                                      kc_health_check_fn fn, void *userdata);

/** Any thread. Records a successful runtime status poll at @p t_ns (clock time). */
void kc_runtime_state_set_runtime_sync(struct kc_runtime_state *s, int64_t t_ns);

/**
 * Any thread. Replace the network / runtime / storage error with a copy of
 * @p err; NULL clears it.
 * @return 0 or -ENOMEM (the previous error is kept).
 */
int kc_runtime_state_set_network_state(struct kc_runtime_state *s, const char *err);
int kc_runtime_state_set_runtime_state(struct kc_runtime_state *s, const char *err);
int kc_runtime_state_set_storage_state(struct kc_runtime_state *s, const char *err);

/**
 * Any thread. Aggregates, in this order: "container runtime status check
 * may not have completed yet" before the first runtime sync, or "container
 * runtime is down" once now >= last sync + threshold; "<name> is not
 * healthy: <err>" for each failing check; the runtime error if set.
 * Network and storage errors are never included.
 * @return 0 and *ret NULL (healthy) or a malloc'd message; -ENOMEM (*ret
 * unchanged).
 */
int kc_runtime_state_runtime_errors(struct kc_runtime_state *s, char **ret);
/** Any thread. Only the network error (initially KC_RUNTIME_NETWORK_UNKNOWN). Same returns. */
int kc_runtime_state_network_errors(struct kc_runtime_state *s, char **ret);
/** Any thread. Only the storage error. Same returns. */
int kc_runtime_state_storage_errors(struct kc_runtime_state *s, char **ret);

/* ------------------------------------------------------------------------ */
/* HTTP endpoints (read-only server on libmicrohttpd)                         */

/**
 * A named /healthz check. @p fn follows kc_health_check_fn: true when
 * healthy; when unhealthy it may set *ret_err to a malloc'd reason (freed by
 * the server, logged at -v=2, never sent to clients).
 */
struct kc_http_check {
        const char *name;
        kc_health_check_fn fn;
        void *userdata;
};

/**
 * Produces a JSON document (/pods: a v1 PodList, /node: a v1 Node).
 * @return 0 and a malloc'd NUL-terminated *ret_json (ownership passes to
 * the server), or a negative errno (the server answers 500).
 */
typedef int (*kc_http_render_fn)(void *userdata, char **ret_json);

/**
 * What the server serves. Every callback (checks, render functions) runs on
 * the server's threads, possibly several at once and concurrently with the
 * rest of the daemon: callbacks and their userdata must be thread-safe and
 * must outlive the server. Strings and the checks array are copied.
 */
struct kc_http_config {
        /** Numeric IPv4 or IPv6 address to bind; NULL means "127.0.0.1". */
        const char *address;
        /** TCP port; 0 picks an ephemeral one (see kc_http_server_port()). */
        uint16_t port;
        /** /healthz checks, run in order after the built-in "ping". */
        const struct kc_http_check *checks;
        size_t n_checks;
        /** /metrics; NULL makes /metrics 404. Rendered concurrently with updates. */
        const struct kc_metrics_registry *metrics;
        /** /pods and /node; NULL makes the path 404. */
        kc_http_render_fn render_pods;
        void *pods_userdata;
        kc_http_render_fn render_node;
        void *node_userdata;
};

struct kc_http_server;

/**
 * Binds cfg->address:cfg->port and starts serving on internal threads:
 *  - GET /healthz: "ok" (200) when every check passes; with ?verbose, or
 *    when a check fails, "[+]ping ok" / "[+]<name> ok" / "[-]<name> failed:
 *    reason withheld" lines then "healthz check passed" (200) or "healthz
 *    check failed" (500), as k8s.io/apiserver's healthz handler does;
 *  - GET /metrics: kc_metrics_render() as text/plain; version=0.0.4;
 *  - GET /pods, GET /node: the render callbacks' JSON, 500 if they fail;
 *  - any other path: 404 (the raw request path must match exactly:
 *    percent-escapes, "..", "//" and trailing slashes are not
 *    normalised); any method but GET or HEAD: 405.
 * Connections are bounded (count, idle timeout, per-connection memory), so
 * oversized requests are refused and slow clients cannot starve others.
 * @return 0 and *ret; -EINVAL (bad address or config), -EADDRINUSE and
 * other bind errors, -ENOMEM, or -EIO if libmicrohttpd fails to start.
 * *ret is unchanged on failure.
 */
int kc_http_server_start(const struct kc_http_config *cfg, struct kc_http_server **ret);

/** The bound TCP port (the ephemeral one when cfg->port was 0). */
uint16_t kc_http_server_port(const struct kc_http_server *s);

/**
 * Closes the listener and every open connection, joins the server's
 * threads and frees @p s. NULL-safe; returns NULL. Once it returns, no
 * callback is running or will run.
 */
struct kc_http_server *kc_http_server_stop(struct kc_http_server *s);
KC_DEFINE_CLEANUP_FUNC(struct kc_http_server, kc_http_server_stop)
