/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The I/O thread (grpc_internal.h): it takes the submit and cancel queues,
 * opens each new call's stream on the active connection (with its request
 * headers), retries refused calls, enforces deadlines, flushes and reaps
 * connections, and sleeps in ppoll() on the eventfd and the sockets.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/duration.h"
#include "grpc_internal.h"

void kc__grpc_io_submit(struct kc_grpc_client *c, struct conn *conn, struct grpc_call *call)
{
        char timeout[16];
        nghttp2_nv nva[9];
        size_t n = 0;
        nghttp2_data_provider prd = { .source.ptr = call, .read_callback = kc__grpc_req_read };
        int32_t id;

#define NV(n_, v_)                                                                                 \
        ((nghttp2_nv){ .name = (uint8_t *)(n_),                                                    \
                       .value = (uint8_t *)(v_),                                                   \
                       .namelen = strlen(n_),                                                      \
                       .valuelen = strlen(v_),                                                     \
                       .flags = NGHTTP2_NV_FLAG_NONE })
        nva[n++] = NV(":method", "POST");
        nva[n++] = NV(":scheme", "http");
        nva[n++] = NV(":path", call->path);
        nva[n++] = NV(":authority", call->client->authority);
        nva[n++] = NV("content-type", "application/grpc");
        nva[n++] = NV("te", "trailers");
        if (call->client->user_agent)
                nva[n++] = NV("user-agent", call->client->user_agent);
        if (call->deadline != INT64_MAX) {
                int64_t left = call->deadline - mono_ns();

                if (left <= 0) {
                        kc__grpc_call_fail(call, KC_RUNTIME_DEADLINE_EXCEEDED,
                                           "deadline exceeded before the request was sent");
                        kc__grpc_call_unref(call);
                        return;
                }
                kc__grpc_format_timeout(left, timeout);
                nva[n++] = NV("grpc-timeout", timeout);
        }
#undef NV
        /* A retried call starts over (it never got an answer, but be thorough). */
        call->req_off = 0;
        call->opened = call->rst_sent = call->got_headers = false;
        call->http_status = 0;
        call->grpc_status = -1;
        call->content_type_seen = call->content_type_ok = false;
        call->grpc_message[0] = '\0';
        call->invalid = NULL;
        call->hdr_got = call->msg_len = call->msg_got = call->n_msgs = 0;
        free(call->msg);
        call->msg = NULL;
        id = nghttp2_submit_request(conn->session, NULL, nva, n, &prd, call);
        if (id < 0) {
                /* Out of stream ids: this connection takes no more streams. */
                conn->goaway = true;
                if (id == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE && !call->retried) {
                        kc__grpc_call_retry(c, call);
                        return;
                }
                kc__grpc_call_fail(call, KC_RUNTIME_UNAVAILABLE, "request not submitted: %s",
                                   nghttp2_strerror(id));
                kc__grpc_call_unref(call);
                return;
        }
        call->stream_id = id;
        call->where = CALL_ON_CONN;
        call->conn = conn;
        kc_list_add_head(&conn->calls, &call->link);
        conn->n_calls++;
        if (!call->streaming)
                c->next_deadline = min64(c->next_deadline, call->deadline);
        if (!conn->connecting)
                kc__grpc_call_mark_started(call);
}

/* Puts a list of calls (linked by sub_next; the list's references) on the active connection. */
static void io_submit_all(struct kc_grpc_client *c, struct grpc_call *list)
{
        char why[256];
        struct conn *conn = NULL;
        bool no_conn = false;

        while (list) {
                struct grpc_call *call = list;
                bool given_up;

                list = call->sub_next;
                call->sub_next = NULL;
                pthread_mutex_lock(&call->lock);
                given_up = call->done; /* the caller gave up already */
                pthread_mutex_unlock(&call->lock);
                if (given_up) {
                        call->aborted = true;
                        kc__grpc_call_unref(call);
                        continue;
                }
                if (!conn && !no_conn && kc__grpc_conn_get(c, &conn, why, sizeof(why)) < 0)
                        no_conn = true;
                if (no_conn) {
                        kc__grpc_call_fail(call, KC_RUNTIME_UNAVAILABLE, "%s", why);
                        kc__grpc_call_unref(call);
                        continue;
                }
                kc__grpc_io_submit(c, conn, call);
        }
}

static void io_process_retries(struct kc_grpc_client *c)
{
        struct grpc_call *list = NULL, **tail = &list;
        struct kc_list *l;

        while ((l = kc_list_first(&c->retry))) {
                struct grpc_call *call = kc_list_entry(l, struct grpc_call, link);

                kc_list_del(&call->link);
                call->where = CALL_NOWHERE;
                *tail = call;
                tail = &call->sub_next;
                call->sub_next = NULL;
        }
        io_submit_all(c, list);
}

static void io_process_cancels(struct grpc_call *list)
{
        while (list) {
                struct grpc_call *call = list;

                list = call->can_next;
                call->can_next = NULL;
                if (call->streaming)
                        kc__grpc_call_fail(call, KC_RUNTIME_CANCELLED,
                                           "stream closed by the client");
                call->aborted = true; /* a unary caller has its result already */
                if (call->where == CALL_ON_CONN) {
                        kc__grpc_call_reset(call, NGHTTP2_CANCEL);
                } else if (call->where == CALL_RETRY) {
                        kc_list_del(&call->link);
                        call->where = CALL_NOWHERE;
                        kc__grpc_call_unref(call);
                }
                kc__grpc_call_unref(call); /* the queue's reference */
        }
}

static void io_check_deadlines(struct kc_grpc_client *c, int64_t now)
{
        char d[KC_DURATION_MAX];
        int64_t next = INT64_MAX;
        struct grpc_call *call;
        struct conn *conn;

        if (now < c->next_deadline)
                return;
        kc_list_for_each_entry (conn, &c->conns, struct conn, link) {
                if (conn->connecting) {
                        if (now >= conn->connect_deadline)
                                kc__grpc_conn_break(conn, KC_RUNTIME_UNAVAILABLE,
                                                    "connect %s: timed out", c->path);
                        else
                                next = min64(next, conn->connect_deadline);
                }
                kc_list_for_each_entry (call, &conn->calls, struct grpc_call, link) {
                        if (call->aborted || call->streaming)
                                continue;
                        if (now < call->deadline) {
                                next = min64(next, call->deadline);
                                continue;
                        }
                        kc__grpc_call_fail(call, KC_RUNTIME_DEADLINE_EXCEEDED,
                                           "deadline exceeded after %s",
                                           kc_format_duration(call->timeout_ns, d));
                        kc__grpc_call_reset(call, NGHTTP2_CANCEL);
                }
        }
        c->next_deadline = next;
}

void kc__grpc_io_flush_and_reap(struct kc_grpc_client *c)
{
        struct conn *conn, *next;

        kc_list_for_each_entry_safe (conn, next, &c->conns, struct conn, link) {
                kc__grpc_conn_flush(conn);
                if (conn->broken) {
                        kc__grpc_conn_destroy(c, conn, true, conn->fail_code, conn->fail_msg);
                } else if (!conn->connecting && !nghttp2_session_want_read(conn->session) &&
                           !nghttp2_session_want_write(conn->session)) {
                        if (conn->h2_error[0])
                                kc__grpc_conn_destroy(c, conn, true, KC_RUNTIME_INTERNAL,
                                                      conn->h2_error);
                        else
                                kc__grpc_conn_destroy(c, conn, true, KC_RUNTIME_UNAVAILABLE,
                                                      "HTTP/2 session ended");
                } else if (conn->goaway && conn->n_calls == 0) {
                        kc__grpc_conn_destroy(c, conn, true, KC_RUNTIME_UNAVAILABLE,
                                              "connection retired");
                }
        }
}

static int io_poll(struct kc_grpc_client *c)
{
        size_t n = 1, want = 1;
        struct timespec ts, *tsp = NULL;
        struct conn *conn;
        int64_t now;
        int k;

        kc_list_for_each_entry (conn, &c->conns, struct conn, link)
                want++;
        if (KC_ARRAY_GROW(c->pfds, c->pfds_cap, want, 4) < 0 ||
            KC_ARRAY_GROW(c->pconns, c->pconns_cap, want, 4) < 0)
                return -ENOMEM;
        c->pfds[0] = (struct pollfd){ .fd = c->efd, .events = POLLIN };
        kc_list_for_each_entry (conn, &c->conns, struct conn, link) {
                short ev = 0;

                if (conn->connecting) {
                        ev = POLLOUT;
                } else {
                        if (nghttp2_session_want_read(conn->session))
                                ev |= POLLIN;
                        if (conn->wblocked)
                                ev |= POLLOUT;
                }
                c->pfds[n] = (struct pollfd){ .fd = conn->fd, .events = ev };
                c->pconns[n++] = conn;
        }
        now = mono_ns();
        if (!kc_list_empty(&c->retry)) {
                ts = (struct timespec){ 0 };
                tsp = &ts;
        } else if (c->next_deadline != INT64_MAX) {
                int64_t d = c->next_deadline > now ? c->next_deadline - now : 0;

                ts = (struct timespec){ .tv_sec = d / KC_NSEC_PER_SEC,
                                        .tv_nsec = d % KC_NSEC_PER_SEC };
                tsp = &ts;
        }
        k = ppoll(c->pfds, n, tsp, NULL);
        if (k < 0)
                return errno == EINTR ? 0 : -errno;
        if (c->pfds[0].revents & POLLIN) {
                uint64_t v;

                (void)!read(c->efd, &v, sizeof(v));
        }
        for (size_t i = 1; i < n; i++) {
                short rev = c->pfds[i].revents;

                conn = c->pconns[i];

                if (!rev)
                        continue;
                if (conn->connecting) {
                        kc__grpc_conn_connected(conn);
                        continue;
                }
                if (rev & POLLOUT)
                        conn->wblocked = false;
                if (rev & (POLLIN | POLLHUP | POLLERR))
                        kc__grpc_conn_read(conn, READ_BUDGET);
                if ((rev & (POLLHUP | POLLERR)) && !(rev & POLLIN))
                        kc__grpc_conn_closed(conn);
        }
        return 0;
}

void kc__grpc_io_fail_retries(struct kc_grpc_client *c, enum kc_runtime_code code, const char *msg)
{
        struct kc_list *l;

        while ((l = kc_list_first(&c->retry))) {
                struct grpc_call *call = kc_list_entry(l, struct grpc_call, link);

                kc_list_del(&call->link);
                call->where = CALL_NOWHERE;
                kc__grpc_call_fail(call, code, "%s", msg);
                kc__grpc_call_unref(call);
        }
}

/* Tears every connection down, failing their calls with @p code (no retries). */
static void destroy_conns(struct kc_grpc_client *c, enum kc_runtime_code code, const char *msg)
{
        struct kc_list *l;

        while ((l = kc_list_first(&c->conns)))
                kc__grpc_conn_destroy(c, kc_list_entry(l, struct conn, link), false, code, msg);
}

/* client_free(): every call ends CANCELLED; no retries. */
static void io_shutdown(struct kc_grpc_client *c, struct grpc_call *subs, struct grpc_call *cans)
{
        static const char msg[] = "the gRPC client was closed";

        while (subs) {
                struct grpc_call *call = subs;

                subs = call->sub_next;
                kc__grpc_call_fail(call, KC_RUNTIME_CANCELLED, msg);
                kc__grpc_call_unref(call);
        }
        while (cans) {
                struct grpc_call *call = cans;

                cans = call->can_next;
                kc__grpc_call_unref(call);
        }
        destroy_conns(c, KC_RUNTIME_CANCELLED, msg);
        kc__grpc_io_fail_retries(c, KC_RUNTIME_CANCELLED, msg);
}

void *kc__grpc_io_main(void *arg)
{
        struct kc_grpc_client *c = arg;
        sigset_t all;

        /* Signals belong to the daemon's signalfd, never to this thread. */
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, NULL);
        for (;;) {
                struct grpc_call *subs, *cans;
                bool closing;

                pthread_mutex_lock(&c->lock);
                subs = c->sub_head;
                cans = c->can_head;
                c->sub_head = c->can_head = NULL;
                c->sub_tail = &c->sub_head;
                c->can_tail = &c->can_head;
                c->wake_pending = false;
                closing = c->closing;
                pthread_mutex_unlock(&c->lock);
                if (closing) {
                        io_shutdown(c, subs, cans);
                        return NULL;
                }
                io_submit_all(c, subs);
                io_process_retries(c);
                io_process_cancels(cans);
                io_check_deadlines(c, mono_ns());
                kc__grpc_io_flush_and_reap(c);
                if (io_poll(c) < 0) {
                        /* Out of memory for the poll set: fail what we have, start over. */
                        destroy_conns(c, KC_RUNTIME_UNAVAILABLE, "gRPC I/O: out of memory");
                }
        }
}
