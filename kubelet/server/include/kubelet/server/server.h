/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kubelet/server/server.h
 * @brief The read-only HTTP server (pkg/kubelet/server) on libmicrohttpd.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"
#include "health/runtime_state.h"

struct kc_metrics_registry;

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
 * A JSON document produced piece by piece and sent as it comes (chunked
 * transfer encoding), so that a large one never exists whole in memory.
 * The server calls open() once per request, then next() from the thread
 * serving the connection until it gives a piece of length 0 (or fails),
 * then close() once, also when the client goes away early.
 */
struct kc_http_stream_ops {
        /** 0 and a new *ret_stream, or a negative errno (the server answers 500). */
        int (*open)(void *userdata, void **ret_stream);
        /**
         * 0 and the next *ret_len bytes at *ret_data (the stream's, valid until
         * the next call), *ret_len 0 at the end; or a negative errno: the
         * server then cuts the connection, the body incomplete.
         */
        int (*next)(void *stream, const char **ret_data, size_t *ret_len);
        void (*close)(void *stream);
};

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
        /** /pods streamed instead; at most one of render_pods and stream_pods. */
        const struct kc_http_stream_ops *stream_pods;
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
 *  - GET /pods, GET /node: the render callbacks' JSON, 500 if they fail
 *    (a /pods stream: 500 if it fails before its first piece, the
 *    connection cut if it fails later);
 *  - any other path: 404 (the raw request path must match exactly:
 *    percent-escapes, "..", "//" and trailing slashes are not
 *    normalised); any method but GET or HEAD: 405.
 * Connections are bounded (count, idle timeout, per-connection memory), so
 * oversized requests are refused and slow clients cannot starve others.
 * @return 0 and *ret; -EINVAL (bad address or config, both render_pods and
 * stream_pods, or a stream without all three callbacks), -EADDRINUSE and
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
