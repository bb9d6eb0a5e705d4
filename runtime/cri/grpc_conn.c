/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A connection (grpc_internal.h): one socket and its nghttp2 client
 * session, the session's callbacks (user_data is the connection; a stream's
 * user data is its call), connecting, reading, flushing and tearing down.
 * I/O thread only.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_internal.h"

static struct grpc_call *conn_find_call(struct conn *conn, int32_t stream_id)
{
        struct grpc_call *call;

        kc_list_for_each_entry (call, &conn->calls, struct grpc_call, link)
                if (call->stream_id == stream_id)
                        return call;
        return NULL;
}

void kc__grpc_conn_break(struct conn *conn, enum kc_runtime_code code, const char *fmt, ...)
{
        va_list ap;

        if (conn->broken)
                return;
        conn->broken = true;
        conn->fail_code = code;
        va_start(ap, fmt);
        vsnprintf(conn->fail_msg, sizeof(conn->fail_msg), fmt, ap);
        va_end(ap);
}

static ssize_t cb_send(nghttp2_session *session, const uint8_t *data, size_t len, int flags,
                       void *user_data)
{
        struct conn *conn = user_data;
        ssize_t n;

        (void)session;
        (void)flags;
        do
                n = send(conn->fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n >= 0)
                return n;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
                conn->wblocked = true;
                return NGHTTP2_ERR_WOULDBLOCK;
        }
        conn->send_errno = errno;
        return NGHTTP2_ERR_CALLBACK_FAILURE;
}

/*
 * A request HEADERS is about to leave: from now on nghttp2 knows the stream
 * and RST_STREAM may be submitted for it. (Cancelling the frame here is not
 * an option: nghttp2 has already HPACK-encoded it, and dropping it would
 * desynchronise the server's header table.)
 */
static int cb_before_frame_send(nghttp2_session *session, const nghttp2_frame *frame,
                                void *user_data)
{
        struct grpc_call *call;

        (void)user_data;
        if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
                return 0;
        call = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
        if (call)
                call->opened = true;
        return 0;
}

/* A call given up while its HEADERS waited (e.g. for a stream slot) is reset at once. */
static int cb_frame_send(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
        struct grpc_call *call;

        (void)user_data;
        if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
                return 0;
        call = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
        if (call && call->aborted)
                kc__grpc_call_reset(call, NGHTTP2_CANCEL);
        return 0;
}

static int cb_frame_not_send(nghttp2_session *session, const nghttp2_frame *frame,
                             int lib_error_code, void *user_data)
{
        struct conn *conn = user_data;
        struct kc_grpc_client *c = conn->client;
        struct grpc_call *call;

        (void)session;
        if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
                return 0;
        call = conn_find_call(conn, frame->hd.stream_id);
        if (!call)
                return 0;
        kc__grpc_call_detach(call);
        if (!call->aborted && !call->retried &&
            (lib_error_code == NGHTTP2_ERR_START_STREAM_NOT_ALLOWED ||
             lib_error_code == NGHTTP2_ERR_SESSION_CLOSING)) {
                kc__grpc_call_retry(c, call);
                return 0;
        }
        kc__grpc_call_fail(call, KC_RUNTIME_UNAVAILABLE, "request not sent: %s",
                           nghttp2_strerror(lib_error_code));
        kc__grpc_call_unref(call);
        return 0;
}

static int cb_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user_data)
{
        struct grpc_call *call;

        (void)flags;
        (void)user_data;
        if (frame->hd.type != NGHTTP2_HEADERS)
                return 0;
        call = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
        if (!call || call->aborted)
                return 0;
        kc__grpc_call_header(call, name, namelen, value, valuelen);
        return 0;
}

static int cb_data_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id,
                         const uint8_t *data, size_t len, void *user_data)
{
        struct grpc_call *call;

        (void)flags;
        (void)user_data;
        call = nghttp2_session_get_stream_user_data(session, stream_id);
        if (call && !call->aborted)
                kc__grpc_call_feed(call, data, len);
        return 0;
}

static int cb_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
        struct conn *conn = user_data;
        struct grpc_call *call;

        switch (frame->hd.type) {
        case NGHTTP2_GOAWAY: {
                const nghttp2_goaway *g = &frame->goaway;
                char dbg[128];
                size_t n = 0;

                for (size_t i = 0; i < g->opaque_data_len && n + 1 < sizeof(dbg); i++)
                        dbg[n++] = g->opaque_data[i] >= 0x20 && g->opaque_data[i] < 0x7f
                                           ? (char)g->opaque_data[i]
                                           : '?';
                dbg[n] = '\0';
                conn->goaway = true;
                conn->goaway_last_id = g->last_stream_id;
                snprintf(conn->goaway_info, sizeof(conn->goaway_info), " after GOAWAY %s%s%s%s",
                         nghttp2_http2_strerror(g->error_code), n ? " \"" : "", dbg, n ? "\"" : "");
                break;
        }
        case NGHTTP2_HEADERS:
        case NGHTTP2_DATA:
                call = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
                if (!call || call->aborted)
                        break;
                if (frame->hd.type == NGHTTP2_HEADERS)
                        call->got_headers = true;
                if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
                        kc__grpc_call_end_of_response(call);
                break;
        default:
                break;
        }
        return 0;
}

static int cb_invalid_frame_recv(nghttp2_session *session, const nghttp2_frame *frame,
                                 int lib_error_code, void *user_data)
{
        struct grpc_call *call;

        (void)user_data;
        if (frame->hd.stream_id == 0)
                return 0;
        call = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
        if (call)
                call->invalid = nghttp2_strerror(lib_error_code);
        return 0;
}

static int cb_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                           void *user_data)
{
        struct conn *conn = user_data;
        struct grpc_call *call;

        call = nghttp2_session_get_stream_user_data(session, stream_id);
        if (!call || call->where != CALL_ON_CONN || call->conn != conn)
                return 0;
        kc__grpc_call_detach(call);
        if (kc__grpc_call_refused(conn, call, error_code)) {
                kc__grpc_call_retry(conn->client, call);
                return 0;
        }
        kc__grpc_call_closed_early(call, error_code);
        kc__grpc_call_unref(call);
        return 0;
}

static int cb_error(nghttp2_session *session, int lib_error_code, const char *msg, size_t len,
                    void *user_data)
{
        struct conn *conn = user_data;

        (void)session;
        (void)lib_error_code;
        snprintf(conn->h2_error, sizeof(conn->h2_error), "%.*s", (int)len, msg);
        return 0;
}

int kc__grpc_callbacks_new(nghttp2_session_callbacks **ret)
{
        nghttp2_session_callbacks *cbs;

        if (nghttp2_session_callbacks_new(&cbs) != 0)
                return -ENOMEM;
        nghttp2_session_callbacks_set_send_callback(cbs, cb_send);
        nghttp2_session_callbacks_set_before_frame_send_callback(cbs, cb_before_frame_send);
        nghttp2_session_callbacks_set_on_frame_send_callback(cbs, cb_frame_send);
        nghttp2_session_callbacks_set_on_frame_not_send_callback(cbs, cb_frame_not_send);
        nghttp2_session_callbacks_set_on_header_callback(cbs, cb_header);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, cb_data_chunk);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, cb_frame_recv);
        nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(cbs, cb_invalid_frame_recv);
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, cb_stream_close);
        nghttp2_session_callbacks_set_error_callback2(cbs, cb_error);
        *ret = cbs;
        return 0;
}

int kc__grpc_conn_attach(struct kc_grpc_client *c, int fd, bool connecting, struct conn **ret,
                         char *why, size_t why_len)
{
        static const nghttp2_settings_entry settings[] = {
                { NGHTTP2_SETTINGS_ENABLE_PUSH, 0 },
                { NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW },
        };
        struct conn *conn;
        int r;

        conn = calloc(1, sizeof(*conn));
        if (!conn) {
                snprintf(why, why_len, "out of memory");
                return -ENOMEM;
        }
        conn->client = c;
        kc_list_init(&conn->calls);
        conn->connecting = connecting;
        conn->connect_deadline = connecting ? add_sat(mono_ns(), CONNECT_TIMEOUT_NS) : INT64_MAX;
        if (nghttp2_session_client_new2(&conn->session, c->cbs, conn, c->opt) != 0) {
                free(conn);
                snprintf(why, why_len, "out of memory");
                return -ENOMEM;
        }
        r = nghttp2_submit_settings(conn->session, NGHTTP2_FLAG_NONE, settings,
                                    KC_ELEMENTSOF(settings));
        if (r == 0)
                r = nghttp2_session_set_local_window_size(conn->session, NGHTTP2_FLAG_NONE, 0,
                                                          CONN_WINDOW);
        if (r != 0) {
                nghttp2_session_del(conn->session);
                free(conn);
                snprintf(why, why_len, "HTTP/2 session setup: %s", nghttp2_strerror(r));
                return -ENOMEM;
        }
        conn->fd = fd;
        c->next_deadline = min64(c->next_deadline, conn->connect_deadline);
        kc_list_add_head(&c->conns, &conn->link);
        *ret = conn;
        return 0;
}

static int conn_new(struct kc_grpc_client *c, struct conn **ret, char *why, size_t why_len)
{
        _cleanup_close_ int fd = -1;
        bool connecting = false;
        int r;

        fd = socket(c->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
                r = -errno;
                snprintf(why, why_len, "socket: %s", strerror(-r));
                return r;
        }
        if (connect(fd, (const struct sockaddr *)&c->addr, c->addr_len) < 0) {
                if (errno != EINPROGRESS) {
                        r = -errno;
                        snprintf(why, why_len, "connect %s: %s", c->path, strerror(-r));
                        return r;
                }
                connecting = true;
        }
        r = kc__grpc_conn_attach(c, fd, connecting, ret, why, why_len);
        if (r < 0)
                return r;
        fd = -1; /* the connection's now */
        return 0;
}

int kc__grpc_conn_get(struct kc_grpc_client *c, struct conn **ret, char *why, size_t why_len)
{
        struct conn *a = c->active;

        if (a && !a->goaway && !a->broken) {
                *ret = a;
                return 0;
        }
        c->active = NULL;
        if (conn_new(c, &a, why, why_len) < 0)
                return -ECONNREFUSED;
        c->active = a;
        *ret = a;
        return 0;
}

void kc__grpc_conn_destroy(struct kc_grpc_client *c, struct conn *conn, bool allow_retry,
                           enum kc_runtime_code code, const char *msg)
{
        struct kc_list *l;

        while ((l = kc_list_first(&conn->calls))) {
                struct grpc_call *call = kc_list_entry(l, struct grpc_call, link);

                kc__grpc_call_detach(call);
                if (allow_retry && kc__grpc_call_refused(conn, call, NGHTTP2_NO_ERROR)) {
                        kc__grpc_call_retry(c, call);
                        continue;
                }
                kc__grpc_call_fail(call, code, "%s", msg);
                kc__grpc_call_unref(call);
        }
        kc_list_del(&conn->link);
        if (c->active == conn)
                c->active = NULL;
        nghttp2_session_del(conn->session);
        close_fd(conn->fd);
        free(conn);
}

void kc__grpc_conn_connected(struct conn *conn)
{
        struct grpc_call *call;
        int soerr = 0;
        socklen_t len = sizeof(soerr);

        if (getsockopt(conn->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
                soerr = errno;
        if (soerr) {
                kc__grpc_conn_break(conn, KC_RUNTIME_UNAVAILABLE, "connect %s: %s",
                                    conn->client->path, strerror(soerr));
                return;
        }
        conn->connecting = false;
        conn->connect_deadline = INT64_MAX;
        kc_list_for_each_entry (call, &conn->calls, struct grpc_call, link)
                kc__grpc_call_mark_started(call);
}

void kc__grpc_conn_closed(struct conn *conn)
{
        kc__grpc_conn_break(conn, KC_RUNTIME_UNAVAILABLE, "connection to %s closed by the server%s",
                            conn->client->path, conn->goaway_info);
}

int kc__grpc_conn_recv(struct conn *conn, const uint8_t *data, size_t len)
{
        ssize_t m = nghttp2_session_mem_recv(conn->session, data, len);

        if (m >= 0)
                return 0;
        kc__grpc_conn_break(conn, KC_RUNTIME_INTERNAL, "HTTP/2 protocol error: %s",
                            conn->h2_error[0] ? conn->h2_error : nghttp2_strerror((int)m));
        return -EPROTO;
}

/*
 * The loop reads READ_BUDGET buffers at a time so that a large response
 * does not hold up the other connections, the queues and the
 * WINDOW_UPDATEs the next flush sends (poll is level-triggered).
 */
void kc__grpc_conn_read(struct conn *conn, int budget)
{
        struct kc_grpc_client *c = conn->client;

        for (; budget > 0; budget--) {
                ssize_t n = read(conn->fd, c->rbuf, READ_BUF_SIZE);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return;
                if (n < 0) {
                        kc__grpc_conn_break(conn, KC_RUNTIME_UNAVAILABLE,
                                            "connection to %s lost: %s%s", c->path, strerror(errno),
                                            conn->goaway_info);
                        return;
                }
                if (n == 0) {
                        kc__grpc_conn_closed(conn);
                        return;
                }
                if (kc__grpc_conn_recv(conn, c->rbuf, (size_t)n) < 0)
                        return;
                if (n < READ_BUF_SIZE)
                        return;
        }
}

void kc__grpc_conn_flush(struct conn *conn)
{
        int r;

        if (conn->broken || conn->connecting || conn->wblocked)
                return;
        r = nghttp2_session_send(conn->session);
        if (r == 0)
                return;
        /*
         * The server may have closed the socket right after a GOAWAY we have
         * not read yet: read what is left first, so that the streams it
         * never saw are known (above its last stream id) and retried.
         */
        kc__grpc_conn_read(conn, INT_MAX);
        if (conn->send_errno)
                kc__grpc_conn_break(conn, KC_RUNTIME_UNAVAILABLE,
                                    "connection to %s lost: send: %s%s", conn->client->path,
                                    strerror(conn->send_errno), conn->goaway_info);
        else
                kc__grpc_conn_break(conn, KC_RUNTIME_INTERNAL, "HTTP/2 error: %s",
                                    nghttp2_strerror(r));
}
