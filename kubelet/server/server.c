/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The read-only HTTP server: /healthz, /metrics, /pods and /node on
 * libmicrohttpd (kubelet's read-only port, pkg/kubelet/server).
 *
 * MHD runs a small pool of internal polling threads (epoll), so a slow or
 * idle client holds a connection slot but never a thread. Slots are not
 * held hostage: when a new connection would make more than
 * HTTP_CONNECTION_LIMIT, the oldest one is shut down (a slowloris client,
 * trickling a header byte before each idle timeout, would otherwise keep
 * its slots forever and lock /healthz out). Each connection serves one
 * request: the reply is queued before any body is read, which makes MHD
 * close the connection after it. Routing compares
 * the raw request path: the unescape callback is a no-op, so "%2e%2e",
 * "%00", "..", "//" never match a route and end as 404.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdarg.h>
#include <stddef.h>

#include "core/array.h"
#include "core/cleanup.h"
#include "core/list.h"
#include "core/lock.h"
#include "core/log.h"
#include "health/runtime_state.h"
#include "kubelet/server/server.h"
#include "metrics/registry.h"

#define HTTP_THREADS 2
/* Open connections; a new one beyond this closes the oldest. */
#define HTTP_CONNECTION_LIMIT 64
/* MHD's own cap, a backstop: closed connections leave within one poll. */
#define HTTP_MHD_CONNECTION_LIMIT (2 * HTTP_CONNECTION_LIMIT)
#define HTTP_CONNECTION_TIMEOUT_S 10
#define HTTP_EVICT_WARN_INTERVAL_S 60
/* Request line plus headers must fit; larger requests get 414/431. */
#define HTTP_CONNECTION_MEMORY_LIMIT (16 * 1024)
#define HTTP_LISTEN_BACKLOG 64

/* The block MHD fills from a stream at a time. */
#define HTTP_STREAM_BLOCK (16 * 1024)

#define CT_TEXT "text/plain; charset=utf-8"
#define CT_METRICS "text/plain; version=0.0.4; charset=utf-8"
#define CT_JSON "application/json"

struct http_check {
        char *name;
        kc_health_check_fn fn;
        void *userdata;
};

/* One open connection, in the server's list, oldest first. */
struct http_conn {
        struct kc_list link; /* on kc_http_server.conns */
        int fd;              /* MHD's; only shut down here, never closed */
        bool evicted;        /* shut down, waiting for MHD to close it */
};

struct kc_http_server {
        struct MHD_Daemon *daemon;
        uint16_t port;
        /* Connections, from MHD's threads (http_notify). */
        pthread_mutex_t conns_lock;
        struct kc_list conns; /* struct http_conn, oldest first */
        size_t n_live;        /* in the list and not evicted */
        uint64_t evictions;   /* since start */
        time_t last_warn;     /* CLOCK_MONOTONIC seconds of the last eviction warning */
        struct http_check *checks;
        size_t n_checks;
        const struct kc_metrics_registry *metrics;
        kc_http_render_fn render_pods;
        const struct kc_http_stream_ops *stream_pods;
        void *pods_userdata;
        kc_http_render_fn render_node;
        void *node_userdata;
};

/* A streamed response body: the stream and the piece being sent. */
struct http_stream {
        const struct kc_http_stream_ops *ops;
        void *stream;
        const char *what; /* the endpoint, for the log */
        const char *data; /* the current piece, data[off..len) still to send */
        size_t len, off;
        bool end;    /* the stream gave its last piece */
        bool failed; /* the stream failed: the response is cut */
};

static void http_free_checks(struct kc_http_server *s)
{
        for (size_t i = 0; i < s->n_checks; i++)
                free(s->checks[i].name);
        free(s->checks);
        s->checks = NULL;
        s->n_checks = 0;
}

struct kc_http_server *kc_http_server_stop(struct kc_http_server *s)
{
        struct http_conn *hc, *next;

        if (!s)
                return NULL;
        /* Closes the listener and all connections and joins MHD's threads. */
        if (s->daemon)
                MHD_stop_daemon(s->daemon);
        /* MHD notified every close; anything left was never tracked by MHD. */
        kc_list_for_each_entry_safe (hc, next, &s->conns, struct http_conn, link)
                free(hc);
        pthread_mutex_destroy(&s->conns_lock);
        http_free_checks(s);
        free(s);
        return NULL;
}

uint16_t kc_http_server_port(const struct kc_http_server *s)
{
        return s ? s->port : 0;
}

/* Adds the headers and queues @p resp (taken in every case) with @p status. */
static enum MHD_Result http_queue(struct MHD_Connection *c, unsigned status, const char *ctype,
                                  struct MHD_Response *resp)
{
        enum MHD_Result r;

        if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype) != MHD_YES ||
            MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff") != MHD_YES) {
                MHD_destroy_response(resp);
                return MHD_NO;
        }
        if (status == MHD_HTTP_METHOD_NOT_ALLOWED &&
            MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD") != MHD_YES) {
                MHD_destroy_response(resp);
                return MHD_NO;
        }
        r = MHD_queue_response(c, status, resp);
        MHD_destroy_response(resp);
        return r;
}

/* Queues @p body (malloc'd, taken in every case) with @p status. */
static enum MHD_Result http_reply(struct MHD_Connection *c, unsigned status, const char *ctype,
                                  char *body)
{
        struct MHD_Response *resp;

        if (!body)
                return MHD_NO; /* out of memory: MHD closes the connection */
        resp = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
                free(body);
                return MHD_NO;
        }
        return http_queue(c, status, ctype, resp);
}

static enum MHD_Result http_reply_const(struct MHD_Connection *c, unsigned status, const char *body)
{
        return http_reply(c, status, CT_TEXT, strdup(body));
}

/* A growable string for the healthz body. On allocation failure ->oom sticks. */
struct strbuf {
        char *s;
        size_t len, cap;
        bool oom;
};

static void __attribute__((format(printf, 2, 3))) sb_printf(struct strbuf *b, const char *fmt, ...)
{
        va_list ap;
        int n;

        if (b->oom)
                return;
        for (;;) {
                size_t avail = b->cap - b->len;

                va_start(ap, fmt);
                n = vsnprintf(b->s ? b->s + b->len : NULL, avail, fmt, ap);
                va_end(ap);
                if (n < 0) {
                        b->oom = true;
                        return;
                }
                if ((size_t)n < avail) {
                        b->len += (size_t)n;
                        return;
                }
                if (KC_ARRAY_GROW(b->s, b->cap, b->len + (size_t)n + 1, 256) < 0) {
                        b->oom = true;
                        return;
                }
        }
}

static enum MHD_Result http_has_key(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
        bool *found = cls;

        (void)kind;
        (void)value;
        if (key && strcmp(key, "verbose") == 0) {
                *found = true;
                return MHD_NO; /* stop iterating */
        }
        return MHD_YES;
}

/* upstream k8s.io/apiserver/pkg/server/healthz handleRootHealth(). */
static enum MHD_Result http_healthz(struct kc_http_server *s, struct MHD_Connection *c)
{
        struct strbuf out = { 0 }, failed_names = { 0 };
        bool verbose = false, failed = false;

        (void)MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, http_has_key, &verbose);

        sb_printf(&out, "[+]ping ok\n");
        for (size_t i = 0; i < s->n_checks; i++) {
                const struct http_check *chk = &s->checks[i];
                char *err = NULL;

                if (chk->fn(chk->userdata, &err)) {
                        free(err);
                        sb_printf(&out, "[+]%s ok\n", chk->name);
                        continue;
                }
                failed = true;
                sb_printf(&out, "[-]%s failed: reason withheld\n", chk->name);
                sb_printf(&failed_names, "%s%s", failed_names.len ? "," : "", chk->name);
                kc_log_v_s(2, "healthz check failed", KC_KV_STR("check", chk->name),
                           KC_KV_STR("err", err ? err : "<nil>"));
                free(err);
        }
        if (out.oom || failed_names.oom) {
                free(out.s);
                free(failed_names.s);
                return MHD_NO;
        }
        if (failed) {
                kc_log_v_s(2, "healthz check failed", KC_KV_STR("failedChecks", failed_names.s));
                free(failed_names.s);
                /* http.Error() appends the newline. */
                sb_printf(&out, "healthz check failed\n");
                if (out.oom) {
                        free(out.s);
                        return MHD_NO;
                }
                return http_reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, CT_TEXT, out.s);
        }
        if (!verbose) {
                free(out.s);
                return http_reply_const(c, MHD_HTTP_OK, "ok");
        }
        sb_printf(&out, "healthz check passed\n");
        if (out.oom) {
                free(out.s);
                return MHD_NO;
        }
        return http_reply(c, MHD_HTTP_OK, CT_TEXT, out.s);
}

static enum MHD_Result http_metrics(struct kc_http_server *s, struct MHD_Connection *c)
{
        char *body = NULL;
        int r;

        r = kc_metrics_render(s->metrics, &body);
        if (r < 0) {
                kc_log_v_s(2, "Rendering failed", KC_KV_STR("endpoint", "metrics"), KC_KV_ERRNO(r));
                return http_reply_const(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
                                        "internal server error: rendering metrics failed\n");
        }
        return http_reply(c, MHD_HTTP_OK, CT_METRICS, body);
}

/* The 500 of a /pods or /node rendering that failed with @p err. */
static enum MHD_Result http_render_failed(struct MHD_Connection *c, const char *what, int err)
{
        char msg[128];

        kc_log_v_s(2, "Rendering failed", KC_KV_STR("endpoint", what), KC_KV_ERRNO(err));
        snprintf(msg, sizeof(msg), "internal server error: rendering %s failed\n", what);
        return http_reply_const(c, MHD_HTTP_INTERNAL_SERVER_ERROR, msg);
}

static enum MHD_Result http_render(struct MHD_Connection *c, const char *what, kc_http_render_fn fn,
                                   void *userdata)
{
        char *body = NULL;
        int r;

        r = fn(userdata, &body);
        if (r < 0 || !body) {
                free(body);
                return http_render_failed(c, what, r < 0 ? r : -EIO);
        }
        return http_reply(c, MHD_HTTP_OK, CT_JSON, body);
}

static void http_stream_free(void *cls)
{
        struct http_stream *hs = cls;

        hs->ops->close(hs->stream);
        free(hs);
}

/* Takes the stream's next piece; 0 at the end too (hs->end), or -errno. */
static int http_stream_advance(struct http_stream *hs)
{
        int r;

        hs->off = hs->len = 0;
        r = hs->ops->next(hs->stream, &hs->data, &hs->len);
        if (r < 0) {
                hs->len = 0;
                return r;
        }
        if (hs->len == 0)
                hs->end = true;
        return 0;
}

/* MHD's content reader: fills @p buf with as many pieces as fit. */
static ssize_t http_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
        struct http_stream *hs = cls;
        size_t n = 0;
        int r;

        (void)pos;
        if (hs->failed)
                return MHD_CONTENT_READER_END_WITH_ERROR;
        while (n < max && !(hs->end && hs->off == hs->len)) {
                size_t k;

                if (hs->off == hs->len) {
                        r = http_stream_advance(hs);
                        if (r < 0) {
                                kc_log_v_s(2, "Rendering failed", KC_KV_STR("endpoint", hs->what),
                                           KC_KV_ERRNO(r));
                                /* What is in @p buf goes first; the next call cuts. */
                                hs->failed = true;
                                return n ? (ssize_t)n : MHD_CONTENT_READER_END_WITH_ERROR;
                        }
                        continue;
                }
                k = hs->len - hs->off < max - n ? hs->len - hs->off : max - n;
                memcpy(buf + n, hs->data + hs->off, k);
                hs->off += k;
                n += k;
        }
        return n ? (ssize_t)n : MHD_CONTENT_READER_END_OF_STREAM;
}

/* MHD's content reader for a HEAD response: never called, as there is no body. */
static ssize_t http_no_body(void *cls, uint64_t pos, char *buf, size_t max)
{
        (void)cls;
        (void)pos;
        (void)buf;
        (void)max;
        return MHD_CONTENT_READER_END_WITH_ERROR;
}

/*
 * HEAD of a streamed document: the headers GET would have with the length
 * GET's body would have, as for a rendered document. libmicrohttpd 0.9.75
 * sends the last chunk ("0\r\n\r\n") after the headers of a HEAD answer of
 * unknown length, a body HEAD must not have; so the stream is read through
 * (one piece at a time) to count its bytes, and the answer is of known length.
 * Takes @p hs, which has its first piece.
 */
static enum MHD_Result http_stream_head(struct MHD_Connection *c, struct http_stream *hs)
{
        const char *what = hs->what;
        struct MHD_Response *resp;
        uint64_t total = 0;
        int r = 0;

        while (!hs->end && r >= 0) {
                total += hs->len;
                r = http_stream_advance(hs);
        }
        http_stream_free(hs);
        if (r < 0)
                return http_render_failed(c, what, r);
        resp = MHD_create_response_from_callback(total, HTTP_STREAM_BLOCK, http_no_body, NULL,
                                                 NULL);
        if (!resp)
                return MHD_NO;
        return http_queue(c, MHD_HTTP_OK, CT_JSON, resp);
}

/*
 * A streamed document: the first piece is taken before answering, so a
 * stream that fails at once still gets its 500; the rest is read as MHD
 * sends (chunked, its length unknown).
 */
static enum MHD_Result http_render_stream(struct MHD_Connection *c, bool head, const char *what,
                                          const struct kc_http_stream_ops *ops, void *userdata)
{
        struct http_stream *hs;
        struct MHD_Response *resp;
        int r;

        hs = calloc(1, sizeof(*hs));
        if (!hs)
                return MHD_NO;
        hs->ops = ops;
        hs->what = what;
        r = ops->open(userdata, &hs->stream);
        if (r >= 0) {
                r = http_stream_advance(hs);
                if (r < 0)
                        ops->close(hs->stream);
        }
        if (r < 0) {
                free(hs);
                return http_render_failed(c, what, r);
        }
        if (head)
                return http_stream_head(c, hs);
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, HTTP_STREAM_BLOCK,
                                                 http_stream_read, hs, http_stream_free);
        if (!resp) {
                http_stream_free(hs);
                return MHD_NO;
        }
        return http_queue(c, MHD_HTTP_OK, CT_JSON, resp);
}

static enum MHD_Result http_access(void *cls, struct MHD_Connection *c, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **con_cls)
{
        struct kc_http_server *s = cls;

        (void)upload_data;
        (void)upload_data_size;

        /* A raw NUL byte inside the request target (see http_uri_seen()). */
        if (*con_cls != (void *)version)
                return http_reply_const(c, MHD_HTTP_NOT_FOUND, "404 page not found\n");

        /* Answer on the first call: nothing here reads a request body. */
        if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
                return http_reply_const(c, MHD_HTTP_METHOD_NOT_ALLOWED, "405 method not allowed\n");

        if (strcmp(url, "/healthz") == 0)
                return http_healthz(s, c);
        if (strcmp(url, "/metrics") == 0 && s->metrics)
                return http_metrics(s, c);
        if (strcmp(url, "/pods") == 0 && s->stream_pods)
                return http_render_stream(c, strcmp(method, MHD_HTTP_METHOD_HEAD) == 0, "pods",
                                          s->stream_pods, s->pods_userdata);
        if (strcmp(url, "/pods") == 0 && s->render_pods)
                return http_render(c, "pods", s->render_pods, s->pods_userdata);
        if (strcmp(url, "/node") == 0 && s->render_node)
                return http_render(c, "node", s->render_node, s->node_userdata);
        return http_reply_const(c, MHD_HTTP_NOT_FOUND, "404 page not found\n");
}

/*
 * Leaves the path and query arguments as sent: routes match raw bytes only.
 * A NUL byte can then never appear in them (MHD would otherwise decode
 * "%00" and truncate "/healthz%00x" to "/healthz").
 */
static size_t http_unescape_none(void *cls, struct MHD_Connection *c, char *s)
{
        (void)cls;
        (void)c;
        return strlen(s);
}

/*
 * Called with the raw request target before MHD splits off the query.
 * MHD 0.9.x parses the request line in place: "<target>\0<version>", so the
 * version string starts right after the target's terminating NUL. If the
 * target holds a raw NUL byte, the C string stops early and that no longer
 * holds: the access handler then answers 404 instead of routing the
 * truncated prefix ("GET /healthz\0junk"). The value becomes the request's
 * *con_cls and is only compared, never dereferenced. Should a future MHD
 * lay the line out differently, every request 404s and the tests fail: it
 * fails closed.
 */
static void *http_uri_seen(void *cls, const char *uri, struct MHD_Connection *c)
{
        (void)cls;
        (void)c;
        return (void *)(uri + strlen(uri) + 1);
}

/* A connection MHD is about to close: forgets it. */
static void http_conn_closed(struct kc_http_server *s, struct http_conn *hc)
{
        {
                KC_LOCK_GUARD(&s->conns_lock);
                kc_list_del(&hc->link);
                if (!hc->evicted)
                        s->n_live--;
        }
        free(hc);
}

/*
 * With conns_lock held: while more than HTTP_CONNECTION_LIMIT connections are
 * live, shuts the oldest live one down (never @p newest). Returns the
 * server's eviction count when it evicted any, else 0.
 */
static uint64_t http_evict_oldest_locked(struct kc_http_server *s, const struct http_conn *newest)
{
        struct http_conn *old;
        uint64_t evictions = 0;

        kc_list_for_each_entry (old, &s->conns, struct http_conn, link) {
                if (s->n_live <= HTTP_CONNECTION_LIMIT || old == newest)
                        break;
                if (old->evicted)
                        continue;
                (void)shutdown(old->fd, SHUT_RDWR);
                old->evicted = true;
                s->n_live--;
                evictions = ++s->evictions;
        }
        return evictions;
}

/* With conns_lock held: whether to warn about evictions now (once a minute at most). */
static bool http_evict_warn_due_locked(struct kc_http_server *s)
{
        struct timespec now;

        clock_gettime(CLOCK_MONOTONIC, &now);
        if (s->last_warn != 0 && now.tv_sec - s->last_warn < HTTP_EVICT_WARN_INTERVAL_S)
                return false;
        s->last_warn = now.tv_sec ? now.tv_sec : 1;
        return true;
}

/*
 * MHD_OPTION_NOTIFY_CONNECTION, on MHD's threads. MHD calls CLOSED before it
 * closes the socket, and unlinking takes the lock, so a shutdown() under
 * the lock always hits the connection's own, still open socket.
 */
static void http_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                        enum MHD_ConnectionNotificationCode code)
{
        struct kc_http_server *s = cls;
        struct http_conn *hc = *socket_context;
        uint64_t evictions;
        bool warn;

        if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
                if (!hc)
                        return;
                http_conn_closed(s, hc);
                *socket_context = NULL;
                return;
        }
        if (code != MHD_CONNECTION_NOTIFY_STARTED)
                return;

        const union MHD_ConnectionInfo *ci =
                MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!ci)
                return; /* untracked: served, never evicted */
        hc = calloc(1, sizeof(*hc));
        if (!hc)
                return;
        hc->fd = ci->connect_fd;
        *socket_context = hc;

        {
                KC_LOCK_GUARD(&s->conns_lock);
                kc_list_add_tail(&s->conns, &hc->link);
                s->n_live++;
                /* Over the limit: the oldest live connection goes (never the new one). */
                evictions = http_evict_oldest_locked(s, hc);
                warn = evictions && http_evict_warn_due_locked(s);
        }
        if (warn)
                kc_log_warn_s(
                        "HTTP server is at its connection limit, closing the oldest connections",
                        KC_KV_UINT("port", s->port), KC_KV_INT("limit", HTTP_CONNECTION_LIMIT),
                        KC_KV_UINT("evictions", evictions));
        else if (evictions)
                kc_log_v_s(4, "HTTP connection limit reached, closed the oldest connection");
}

static void http_mhd_log(void *cls, const char *fmt, va_list ap)
{
        char buf[256];

        (void)cls;
        vsnprintf(buf, sizeof(buf), fmt, ap);
        buf[strcspn(buf, "\n")] = '\0';
        kc_log_v_s(4, "libmicrohttpd", KC_KV_STR("msg", buf));
}

/* Returns a listening, close-on-exec socket bound to address:port, or -errno. */
static int http_listen(const char *address, uint16_t port, uint16_t *ret_port)
{
        struct sockaddr_storage ss = { 0 };
        socklen_t sl;
        int fd, one = 1, r;

        if (inet_pton(AF_INET, address, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
                struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
                sin->sin_family = AF_INET;
                sin->sin_port = htons(port);
                sl = sizeof(*sin);
        } else if (inet_pton(AF_INET6, address, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
                struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
                sin6->sin6_family = AF_INET6;
                sin6->sin6_port = htons(port);
                sl = sizeof(*sin6);
        } else {
                return -EINVAL;
        }

        fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
            (ss.ss_family == AF_INET6 &&
             setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) ||
            bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, HTTP_LISTEN_BACKLOG) < 0)
                goto fail;
        sl = sizeof(ss);
        if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
                goto fail;
        *ret_port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                                  : ((struct sockaddr_in6 *)&ss)->sin6_port);
        return fd;
fail:
        r = -errno;
        close(fd);
        return r;
}

int kc_http_server_start(const struct kc_http_config *cfg, struct kc_http_server **ret)
{
        _cleanup_(kc_http_server_stopp) struct kc_http_server *s = NULL;
        _cleanup_close_ int fd = -1;
        unsigned flags;

        if (!cfg || !ret || (cfg->n_checks && !cfg->checks))
                return -EINVAL;
        if (cfg->stream_pods && (cfg->render_pods || !cfg->stream_pods->open ||
                                 !cfg->stream_pods->next || !cfg->stream_pods->close))
                return -EINVAL;
        for (size_t i = 0; i < cfg->n_checks; i++)
                if (!cfg->checks[i].name || !cfg->checks[i].fn)
                        return -EINVAL;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        pthread_mutex_init(&s->conns_lock, NULL);
        kc_list_init(&s->conns);
        if (cfg->n_checks) {
                s->checks = calloc(cfg->n_checks, sizeof(*s->checks));
                if (!s->checks)
                        return -ENOMEM;
                for (size_t i = 0; i < cfg->n_checks; i++) {
                        s->checks[i].name = strdup(cfg->checks[i].name);
                        if (!s->checks[i].name)
                                return -ENOMEM;
                        s->checks[i].fn = cfg->checks[i].fn;
                        s->checks[i].userdata = cfg->checks[i].userdata;
                        s->n_checks = i + 1;
                }
        }
        s->metrics = cfg->metrics;
        s->render_pods = cfg->render_pods;
        s->stream_pods = cfg->stream_pods;
        s->pods_userdata = cfg->pods_userdata;
        s->render_node = cfg->render_node;
        s->node_userdata = cfg->node_userdata;

        fd = http_listen(cfg->address ? cfg->address : "127.0.0.1", cfg->port, &s->port);
        if (fd < 0)
                return fd;

        flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC | MHD_USE_ERROR_LOG;
        s->daemon = MHD_start_daemon(
                flags, 0, NULL, NULL, http_access, s, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
                MHD_OPTION_THREAD_POOL_SIZE, (unsigned)HTTP_THREADS, MHD_OPTION_CONNECTION_LIMIT,
                (unsigned)HTTP_MHD_CONNECTION_LIMIT, MHD_OPTION_NOTIFY_CONNECTION, http_notify, s,
                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_CONNECTION_TIMEOUT_S,
                MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONNECTION_MEMORY_LIMIT,
                MHD_OPTION_UNESCAPE_CALLBACK, http_unescape_none, NULL,
                MHD_OPTION_STRICT_FOR_CLIENT, (int)1, MHD_OPTION_URI_LOG_CALLBACK, http_uri_seen,
                NULL, MHD_OPTION_EXTERNAL_LOGGER, http_mhd_log, NULL, MHD_OPTION_END);
        if (!s->daemon)
                return -EIO; /* fd is closed by its cleanup */
        fd = -1;             /* owned by the daemon, closed by MHD_stop_daemon() */

        kc_log_v_s(1, "Serving read-only HTTP",
                   KC_KV_STR("address", cfg->address ? cfg->address : "127.0.0.1"),
                   KC_KV_UINT("port", s->port));
        *ret = TAKE_PTR(s);
        return 0;
}

/* ------------------------------------------------------------------------ */
/* Tests and fuzzing (tests/fuzz/fuzz_http.c)                                 */

/*
 * Hands @p fd, a connected stream socket (e.g. one end of a socketpair),
 * to @p s as if its listener had accepted it from 127.0.0.1: the server's
 * own daemon, options and threads then serve it. Takes @p fd in every case
 * (libmicrohttpd closes it on failure). Not in kc_health.h: for tests only.
 * Returns 0, -EINVAL, or -errno (e.g. -EAGAIN at the connection limit).
 */
int kc__http_server_add_connection(struct kc_http_server *s, int fd);
int kc__http_server_add_connection(struct kc_http_server *s, int fd)
{
        struct sockaddr_in peer = {
                .sin_family = AF_INET,
                .sin_port = htons(40000),
                .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
        };

        if (!s || !s->daemon || fd < 0) {
                if (fd >= 0)
                        close(fd);
                return -EINVAL;
        }
        if (MHD_add_connection(s->daemon, fd, (const struct sockaddr *)&peer, sizeof(peer)) !=
            MHD_YES)
                return errno > 0 ? -errno : -EIO;
        return 0;
}
