/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An in-process gRPC server for test_grpc.c: h2c with prior knowledge on a
 * unix socket, on nghttp2's server session, served by one thread that sleeps
 * in poll(). The method (the last part of :path) picks the behaviour; see
 * fs_dispatch(). The server counts every frame it receives by type, so the
 * tests can check what the client sent (for one, never a PING), and keeps
 * the headers of the last request.
 *
 * fs_stop() closes every connection abruptly (no GOAWAY), like a runtime
 * that crashed, and removes the socket.
 */
#pragma once

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#define FS_FRAME_TYPES 16
/* "Slow" answers after this long. */
#define FS_SLOW_NS (INT64_C(2) * 1000000000)

struct fs_conn;

struct fs_stream {
        struct fs_conn *conn;
        struct fs_stream *prev, *next;
        int32_t id;
        char path[256];
        char grpc_timeout[32];
        char content_type[64];
        char te[32];
        char authority[64];
        char scheme[16];
        char user_agent[64];
        uint8_t *body;
        size_t body_len, body_cap;
        /* The response. */
        uint8_t *out;
        size_t out_len, out_off;
        size_t chunk;            /* largest DATA frame payload; 0: no limit of ours */
        bool trailers_only;      /* status in the only HEADERS frame */
        bool hang_after;         /* after `out`, keep the stream open forever */
        bool no_status;          /* trailers without grpc-status */
        bool goaway_after;       /* GOAWAY (last stream = this one) after the trailers */
        const char *http_status; /* "200" unless set */
        const char *status;      /* grpc-status value */
        const char *message;     /* grpc-message value, or NULL */
        int64_t due;             /* CLOCK_MONOTONIC: answer (as Echo) then; 0: not delayed */
};

struct fs_server;

struct fs_conn {
        struct fs_server *srv;
        struct fs_conn *next;
        int fd;
        nghttp2_session *session;
        bool wblocked, dead;
        bool close_after_send; /* close once the queued frames are out */
        struct fs_stream *streams;
};

struct fs_server {
        char path[108];
        int lfd, efd;
        pthread_t thread;
        uint32_t max_streams; /* SETTINGS_MAX_CONCURRENT_STREAMS; 0: not sent */
        atomic_bool stop;
        atomic_int n_conns, n_requests, n_refused;
        atomic_int frames[FS_FRAME_TYPES]; /* received, by frame type */
        pthread_mutex_t lock;
        /* Under lock: the headers of the last complete request. */
        char last_path[256], last_timeout[32], last_content_type[64], last_te[32];
        char last_authority[64], last_scheme[16], last_user_agent[64];
        /* Server thread only. */
        nghttp2_session_callbacks *cbs;
        struct fs_conn *conns;
};

static int64_t fs_mono_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void fs_copy(char *dst, size_t cap, const uint8_t *v, size_t n)
{
        snprintf(dst, cap, "%.*s", (int)n, (const char *)v);
}

/* Appends one length-prefixed message to the response. */
static void fs_add_msg(struct fs_stream *st, uint8_t flag, uint32_t len, const void *data,
                       size_t data_len)
{
        st->out = realloc(st->out, st->out_len + 5 + data_len);
        if (!st->out)
                abort();
        st->out[st->out_len] = flag;
        st->out[st->out_len + 1] = (uint8_t)(len >> 24);
        st->out[st->out_len + 2] = (uint8_t)(len >> 16);
        st->out[st->out_len + 3] = (uint8_t)(len >> 8);
        st->out[st->out_len + 4] = (uint8_t)len;
        if (data_len)
                memcpy(st->out + st->out_len + 5, data, data_len);
        st->out_len += 5 + data_len;
}

/* The request message (after the 5-byte prefix) as a big-endian number of @p n bytes. */
static uint64_t fs_req_number(const struct fs_stream *st, size_t n)
{
        uint64_t v = 0;

        for (size_t i = 0; i < n && 5 + i < st->body_len; i++)
                v = v << 8 | st->body[5 + i];
        return v;
}

static ssize_t fs_send_cb(nghttp2_session *session, const uint8_t *data, size_t len, int flags,
                          void *user_data)
{
        struct fs_conn *conn = user_data;
        ssize_t n;

        (void)session;
        (void)flags;
        n = send(conn->fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n >= 0)
                return n;
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                conn->wblocked = true;
                return NGHTTP2_ERR_WOULDBLOCK;
        }
        return NGHTTP2_ERR_CALLBACK_FAILURE;
}

static ssize_t fs_read_cb(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                          uint32_t *data_flags, nghttp2_data_source *source, void *user_data)
{
        struct fs_stream *st = source->ptr;
        size_t n = st->out_len - st->out_off;

        (void)user_data;
        if (n > length)
                n = length;
        if (st->chunk && n > st->chunk)
                n = st->chunk;
        if (n)
                memcpy(buf, st->out + st->out_off, n);
        st->out_off += n;
        if (st->out_off < st->out_len)
                return (ssize_t)n;
        if (st->hang_after)
                return n ? (ssize_t)n : NGHTTP2_ERR_DEFERRED;
        *data_flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        if (st->no_status) {
                nghttp2_nv nv[] = {
                        { (uint8_t *)"x-note", (uint8_t *)"no status", 6, 9, 0 },
                };
                nghttp2_submit_trailer(session, stream_id, nv, 1);
        } else {
                nghttp2_nv nv[] = {
                        { (uint8_t *)"grpc-status", (uint8_t *)st->status, 11, strlen(st->status),
                          0 },
                        { (uint8_t *)"grpc-message", (uint8_t *)st->message, 12,
                          st->message ? strlen(st->message) : 0, 0 },
                };
                nghttp2_submit_trailer(session, stream_id, nv, st->message ? 2 : 1);
        }
        if (st->goaway_after)
                nghttp2_submit_goaway(session, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_NO_ERROR, NULL,
                                      0);
        return (ssize_t)n;
}

static void fs_respond(struct fs_conn *conn, struct fs_stream *st)
{
        const char *http = st->http_status ? st->http_status : "200";
        nghttp2_nv nv[4];
        size_t n = 0;

#define FS_NV(n_, v_) ((nghttp2_nv){ (uint8_t *)(n_), (uint8_t *)(v_), strlen(n_), strlen(v_), 0 })
        nv[n++] = FS_NV(":status", http);
        nv[n++] = FS_NV("content-type", "application/grpc");
        if (st->trailers_only) {
                if (st->status)
                        nv[n++] = FS_NV("grpc-status", st->status);
                if (st->message)
                        nv[n++] = FS_NV("grpc-message", st->message);
                nghttp2_submit_response(conn->session, st->id, nv, n, NULL);
        } else {
                nghttp2_data_provider prd = { .source.ptr = st, .read_callback = fs_read_cb };

                nghttp2_submit_response(conn->session, st->id, nv, n, &prd);
        }
#undef FS_NV
}

static void fs_echo(struct fs_stream *st)
{
        st->out = malloc(st->body_len ? st->body_len : 1);
        if (!st->out)
                abort();
        if (st->body_len)
                memcpy(st->out, st->body, st->body_len);
        st->out_len = st->body_len;
        st->status = "0";
}

/*
 * Methods: Echo (the request back), Split (Echo in 7-byte DATA frames),
 * NotFound (Trailers-Only, status 5, a percent-encoded message), Slow (Echo
 * after FS_SLOW_NS), Hang (never answers), Stream (N messages, N the u32
 * request, in 3-byte DATA frames, then OK), StreamHang (3 messages, then
 * nothing), Big (a message of the u64 request's size), Compressed,
 * Truncated, TwoMessages, NoStatus, Empty, BadStatus, Http503, Reset
 * (RST_STREAM INTERNAL_ERROR), GoAway (Echo, then GOAWAY), Refuse
 * (REFUSED_STREAM for the first request of the server, Echo afterwards),
 * GoAwayRefuse (for the first request of the server, a GOAWAY whose last
 * stream is below it and a hang-up; Echo afterwards), Check (the standard
 * health check, grpc.health.v1.Health: by the request's service name, ""
 * and "ok" SERVING, "down" NOT_SERVING, "hang" no answer, "unimpl"
 * UNIMPLEMENTED, anything else NOT_FOUND); anything else is UNIMPLEMENTED.
 */
static void fs_dispatch(struct fs_conn *conn, struct fs_stream *st)
{
        const char *m = strrchr(st->path, '/');

        m = m ? m + 1 : st->path;
        st->status = "0";
        if (strcmp(m, "Echo") == 0) {
                fs_echo(st);
        } else if (strcmp(m, "Split") == 0) {
                fs_echo(st);
                st->chunk = 7;
        } else if (strcmp(m, "NotFound") == 0) {
                st->trailers_only = true;
                st->status = "5";
                st->message = "pod%20%22x%22%20not%20found%3A%20100%25%20%zz";
        } else if (strcmp(m, "Check") == 0) {
                char svc[64] = "";

                if (st->body_len > 7 && st->body[5] == 0x0a)
                        fs_copy(svc, sizeof(svc), st->body + 7, st->body_len - 7);
                if (strcmp(svc, "hang") == 0)
                        return;
                if (!*svc || strcmp(svc, "ok") == 0 || strcmp(svc, "down") == 0) {
                        uint8_t msg[2] = { 0x08, strcmp(svc, "down") == 0 ? 2 : 1 };

                        fs_add_msg(st, 0, 2, msg, 2);
                } else {
                        st->trailers_only = true;
                        st->status = strcmp(svc, "unimpl") == 0 ? "12" : "5";
                        st->message = "unknown service";
                }
        } else if (strcmp(m, "Slow") == 0) {
                st->due = fs_mono_ns() + FS_SLOW_NS;
                return;
        } else if (strcmp(m, "Hang") == 0) {
                return;
        } else if (strcmp(m, "Stream") == 0 || strcmp(m, "StreamHang") == 0) {
                bool hang = strcmp(m, "StreamHang") == 0;
                uint32_t n = hang ? 3 : (uint32_t)fs_req_number(st, 4);

                for (uint32_t i = 0; i < n; i++) {
                        char msg[32];
                        int k = snprintf(msg, sizeof(msg), "message %u", i);

                        fs_add_msg(st, 0, (uint32_t)k, msg, (size_t)k);
                }
                st->chunk = 3;
                st->hang_after = hang;
        } else if (strcmp(m, "Big") == 0) {
                uint64_t size = fs_req_number(st, 8);

                fs_add_msg(st, 0, (uint32_t)size, NULL, 0);
                st->out = realloc(st->out, st->out_len + size);
                if (!st->out)
                        abort();
                for (uint64_t i = 0; i < size; i++)
                        st->out[st->out_len + i] = (uint8_t)(i * 7 + 3);
                st->out_len += size;
        } else if (strcmp(m, "Compressed") == 0) {
                fs_add_msg(st, 1, 3, "abc", 3);
        } else if (strcmp(m, "Truncated") == 0) {
                fs_add_msg(st, 0, 100, "0123456789", 10);
        } else if (strcmp(m, "TwoMessages") == 0) {
                fs_add_msg(st, 0, 3, "one", 3);
                fs_add_msg(st, 0, 3, "two", 3);
        } else if (strcmp(m, "NoStatus") == 0) {
                fs_add_msg(st, 0, 3, "one", 3);
                st->no_status = true;
        } else if (strcmp(m, "Empty") == 0) {
                st->trailers_only = true;
        } else if (strcmp(m, "BadStatus") == 0) {
                fs_add_msg(st, 0, 3, "one", 3);
                st->status = "abc";
        } else if (strcmp(m, "Http503") == 0) {
                st->trailers_only = true;
                st->http_status = "503";
                st->status = NULL;
        } else if (strcmp(m, "Reset") == 0) {
                nghttp2_submit_rst_stream(conn->session, NGHTTP2_FLAG_NONE, st->id,
                                          NGHTTP2_INTERNAL_ERROR);
                return;
        } else if (strcmp(m, "GoAway") == 0) {
                fs_echo(st);
                st->goaway_after = true;
        } else if (strcmp(m, "GoAwayRefuse") == 0) {
                if (atomic_fetch_add(&conn->srv->n_refused, 1) == 0) {
                        /* A GOAWAY that leaves this stream out, then hang up. */
                        nghttp2_submit_goaway(conn->session, NGHTTP2_FLAG_NONE,
                                              st->id > 2 ? st->id - 2 : 0, NGHTTP2_NO_ERROR,
                                              (const uint8_t *)"bye", 3);
                        conn->close_after_send = true;
                        return;
                }
                fs_echo(st);
        } else if (strcmp(m, "Refuse") == 0) {
                if (atomic_fetch_add(&conn->srv->n_refused, 1) == 0) {
                        nghttp2_submit_rst_stream(conn->session, NGHTTP2_FLAG_NONE, st->id,
                                                  NGHTTP2_REFUSED_STREAM);
                        return;
                }
                fs_echo(st);
        } else {
                st->trailers_only = true;
                st->status = "12";
                st->message = "unknown method";
        }
        fs_respond(conn, st);
}

static int fs_begin_headers_cb(nghttp2_session *session, const nghttp2_frame *frame,
                               void *user_data)
{
        struct fs_conn *conn = user_data;
        struct fs_stream *st;

        if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
                return 0;
        st = calloc(1, sizeof(*st));
        if (!st)
                abort();
        st->conn = conn;
        st->id = frame->hd.stream_id;
        st->next = conn->streams;
        if (conn->streams)
                conn->streams->prev = st;
        conn->streams = st;
        nghttp2_session_set_stream_user_data(session, st->id, st);
        return 0;
}

static int fs_header_cb(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                        size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                        void *user_data)
{
        struct fs_stream *st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);

        (void)flags;
        (void)user_data;
        if (!st)
                return 0;
#define FS_IS(lit) (namelen == strlen(lit) && memcmp(name, lit, namelen) == 0)
        if (FS_IS(":path"))
                fs_copy(st->path, sizeof(st->path), value, valuelen);
        else if (FS_IS("grpc-timeout"))
                fs_copy(st->grpc_timeout, sizeof(st->grpc_timeout), value, valuelen);
        else if (FS_IS("content-type"))
                fs_copy(st->content_type, sizeof(st->content_type), value, valuelen);
        else if (FS_IS("te"))
                fs_copy(st->te, sizeof(st->te), value, valuelen);
        else if (FS_IS(":authority"))
                fs_copy(st->authority, sizeof(st->authority), value, valuelen);
        else if (FS_IS(":scheme"))
                fs_copy(st->scheme, sizeof(st->scheme), value, valuelen);
        else if (FS_IS("user-agent"))
                fs_copy(st->user_agent, sizeof(st->user_agent), value, valuelen);
#undef FS_IS
        return 0;
}

static int fs_data_cb(nghttp2_session *session, uint8_t flags, int32_t stream_id,
                      const uint8_t *data, size_t len, void *user_data)
{
        struct fs_stream *st = nghttp2_session_get_stream_user_data(session, stream_id);

        (void)flags;
        (void)user_data;
        if (!st)
                return 0;
        if (st->body_len + len > st->body_cap) {
                st->body_cap = (st->body_len + len) * 2;
                st->body = realloc(st->body, st->body_cap);
                if (!st->body)
                        abort();
        }
        memcpy(st->body + st->body_len, data, len);
        st->body_len += len;
        return 0;
}

static int fs_frame_recv_cb(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
        struct fs_conn *conn = user_data;
        struct fs_server *srv = conn->srv;
        struct fs_stream *st;

        if (frame->hd.type < FS_FRAME_TYPES)
                atomic_fetch_add(&srv->frames[frame->hd.type], 1);
        if ((frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) ||
            !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
                return 0;
        st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
        if (!st)
                return 0;
        pthread_mutex_lock(&srv->lock);
        memcpy(srv->last_path, st->path, sizeof(st->path));
        memcpy(srv->last_timeout, st->grpc_timeout, sizeof(st->grpc_timeout));
        memcpy(srv->last_content_type, st->content_type, sizeof(st->content_type));
        memcpy(srv->last_te, st->te, sizeof(st->te));
        memcpy(srv->last_authority, st->authority, sizeof(st->authority));
        memcpy(srv->last_scheme, st->scheme, sizeof(st->scheme));
        memcpy(srv->last_user_agent, st->user_agent, sizeof(st->user_agent));
        pthread_mutex_unlock(&srv->lock);
        atomic_fetch_add(&srv->n_requests, 1);
        fs_dispatch(conn, st);
        return 0;
}

static void fs_stream_free(struct fs_stream *st)
{
        struct fs_conn *conn = st->conn;

        if (st->prev)
                st->prev->next = st->next;
        else
                conn->streams = st->next;
        if (st->next)
                st->next->prev = st->prev;
        free(st->body);
        free(st->out);
        free(st);
}

static int fs_stream_close_cb(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                              void *user_data)
{
        struct fs_stream *st = nghttp2_session_get_stream_user_data(session, stream_id);

        (void)error_code;
        (void)user_data;
        if (st)
                fs_stream_free(st);
        return 0;
}

static void fs_conn_free(struct fs_conn *conn)
{
        nghttp2_session_del(conn->session);
        while (conn->streams)
                fs_stream_free(conn->streams);
        close(conn->fd);
        free(conn);
}

static void fs_conn_new(struct fs_server *srv, int fd)
{
        nghttp2_settings_entry iv[] = { { NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS,
                                          srv->max_streams } };
        struct fs_conn *conn = calloc(1, sizeof(*conn));

        if (!conn)
                abort();
        conn->srv = srv;
        conn->fd = fd;
        if (nghttp2_session_server_new(&conn->session, srv->cbs, conn) != 0)
                abort();
        nghttp2_submit_settings(conn->session, NGHTTP2_FLAG_NONE, iv, srv->max_streams ? 1 : 0);
        conn->next = srv->conns;
        srv->conns = conn;
        atomic_fetch_add(&srv->n_conns, 1);
}

static void fs_conn_read(struct fs_conn *conn)
{
        uint8_t buf[16384];

        for (;;) {
                ssize_t n = read(conn->fd, buf, sizeof(buf));

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return;
                if (n <= 0 || nghttp2_session_mem_recv(conn->session, buf, (size_t)n) < 0) {
                        conn->dead = true;
                        return;
                }
        }
}

static void *fs_main(void *arg)
{
        struct fs_server *srv = arg;

        while (!atomic_load(&srv->stop)) {
                struct pollfd pfd[64];
                struct fs_conn *pc[64];
                size_t n = 2;
                int64_t now = fs_mono_ns(), due = INT64_MAX;
                int timeout = -1;

                pfd[0] = (struct pollfd){ .fd = srv->efd, .events = POLLIN };
                pfd[1] = (struct pollfd){ .fd = srv->lfd, .events = POLLIN };
                for (struct fs_conn *conn = srv->conns; conn && n < 64; conn = conn->next) {
                        short ev = nghttp2_session_want_read(conn->session) ? POLLIN : 0;

                        if (conn->wblocked)
                                ev |= POLLOUT;
                        pfd[n] = (struct pollfd){ .fd = conn->fd, .events = ev };
                        pc[n++] = conn;
                        for (struct fs_stream *st = conn->streams; st; st = st->next)
                                if (st->due && st->due < due)
                                        due = st->due;
                }
                if (due != INT64_MAX)
                        timeout = due > now ? (int)((due - now) / 1000000 + 1) : 0;
                if (poll(pfd, n, timeout) < 0 && errno != EINTR)
                        abort();
                if (pfd[0].revents & POLLIN) {
                        uint64_t v;

                        (void)!read(srv->efd, &v, sizeof(v));
                }
                if (pfd[1].revents & POLLIN) {
                        int fd;

                        while ((fd = accept4(srv->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >=
                               0)
                                fs_conn_new(srv, fd);
                }
                for (size_t i = 2; i < n; i++) {
                        if (pfd[i].revents & POLLOUT)
                                pc[i]->wblocked = false;
                        if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
                                fs_conn_read(pc[i]);
                }
                now = fs_mono_ns();
                for (struct fs_conn *conn = srv->conns; conn; conn = conn->next)
                        for (struct fs_stream *st = conn->streams; st; st = st->next)
                                if (st->due && st->due <= now) {
                                        st->due = 0;
                                        fs_echo(st);
                                        fs_respond(conn, st);
                                }
                for (struct fs_conn **p = &srv->conns; *p;) {
                        struct fs_conn *conn = *p;

                        if (!conn->dead && !conn->wblocked &&
                            nghttp2_session_send(conn->session) != 0)
                                conn->dead = true;
                        if (conn->close_after_send && !conn->wblocked)
                                conn->dead = true;
                        if (conn->dead || (!nghttp2_session_want_read(conn->session) &&
                                           !nghttp2_session_want_write(conn->session))) {
                                *p = conn->next;
                                fs_conn_free(conn);
                                continue;
                        }
                        p = &conn->next;
                }
        }
        while (srv->conns) {
                struct fs_conn *conn = srv->conns;

                srv->conns = conn->next;
                fs_conn_free(conn);
        }
        return NULL;
}

/* Listens on @p path (replacing a stale socket) and starts serving. */
static struct fs_server *fs_serve(struct fs_server *srv);

static inline struct fs_server *fs_start(const char *path, uint32_t max_streams)
{
        struct fs_server *srv = calloc(1, sizeof(*srv));
        struct sockaddr_un addr = { .sun_family = AF_UNIX };

        if (!srv || strlen(path) >= sizeof(addr.sun_path))
                abort();
        snprintf(srv->path, sizeof(srv->path), "%s", path);
        snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
        srv->max_streams = max_streams;
        unlink(path);
        srv->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (srv->lfd < 0 || bind(srv->lfd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
            listen(srv->lfd, 128) < 0)
                abort();
        return fs_serve(srv);
}

/* fs_start() on TCP, 127.0.0.1 and a port of the kernel's choosing (*@p ret_port). */
static inline struct fs_server *fs_start_tcp(int *ret_port)
{
        struct fs_server *srv = calloc(1, sizeof(*srv));
        struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001) };
        socklen_t len = sizeof(addr);

        if (!srv)
                abort();
        srv->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (srv->lfd < 0 || bind(srv->lfd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
            listen(srv->lfd, 128) < 0 || getsockname(srv->lfd, (struct sockaddr *)&addr, &len) < 0)
                abort();
        *ret_port = ntohs(addr.sin_port);
        return fs_serve(srv);
}

/* Serves the listening socket srv->lfd on a new thread. */
static struct fs_server *fs_serve(struct fs_server *srv)
{
        nghttp2_session_callbacks *cbs;

        pthread_mutex_init(&srv->lock, NULL);
        srv->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (srv->efd < 0)
                abort();
        if (nghttp2_session_callbacks_new(&cbs) != 0)
                abort();
        nghttp2_session_callbacks_set_send_callback(cbs, fs_send_cb);
        nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, fs_begin_headers_cb);
        nghttp2_session_callbacks_set_on_header_callback(cbs, fs_header_cb);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, fs_data_cb);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, fs_frame_recv_cb);
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, fs_stream_close_cb);
        srv->cbs = cbs;
        if (pthread_create(&srv->thread, NULL, fs_main, srv) != 0)
                abort();
        return srv;
}

/* Stops serving: every connection is closed without a GOAWAY; the socket is removed. */
static void fs_stop(struct fs_server *srv)
{
        uint64_t one = 1;

        if (!srv)
                return;
        atomic_store(&srv->stop, true);
        (void)!write(srv->efd, &one, sizeof(one));
        pthread_join(srv->thread, NULL);
        close(srv->lfd);
        close(srv->efd);
        if (*srv->path)
                unlink(srv->path);
        nghttp2_session_callbacks_del(srv->cbs);
        pthread_mutex_destroy(&srv->lock);
        free(srv);
}

/* A copy of one of the last request's headers (server-side strings, under the lock). */
static void fs_last(struct fs_server *srv, const char *field, char *out, size_t cap)
{
        pthread_mutex_lock(&srv->lock);
        if (strcmp(field, "grpc-timeout") == 0)
                snprintf(out, cap, "%s", srv->last_timeout);
        else if (strcmp(field, "content-type") == 0)
                snprintf(out, cap, "%s", srv->last_content_type);
        else if (strcmp(field, "te") == 0)
                snprintf(out, cap, "%s", srv->last_te);
        else if (strcmp(field, ":authority") == 0)
                snprintf(out, cap, "%s", srv->last_authority);
        else if (strcmp(field, ":scheme") == 0)
                snprintf(out, cap, "%s", srv->last_scheme);
        else if (strcmp(field, "user-agent") == 0)
                snprintf(out, cap, "%s", srv->last_user_agent);
        else
                snprintf(out, cap, "%s", srv->last_path);
        pthread_mutex_unlock(&srv->lock);
}
