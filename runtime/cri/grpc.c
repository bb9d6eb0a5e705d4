/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gRPC over HTTP/2 with prior knowledge (h2c) on a unix socket, on nghttp2's
 * client session: the CRI client's transport. The contract is in grpc.h;
 * the design (threads, locks, a call's lifetime, connections) and the map
 * of the other grpc_*.c files are in grpc_internal.h.
 *
 * This file is the callers' side: the client object, handing calls to the
 * I/O thread through the submit and cancel queues, and the waits of
 * kc_grpc_unary(), kc_grpc_stream_open() and kc_grpc_stream_close().
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "core/cancel.h"
#include "core/cleanup.h"
#include "core/duration.h"
#include "grpc_internal.h"
#include "runtime/error.h"

/* One wait on @p cond; a timeout or a spurious wake-up is the caller's to re-check. */
static void cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *lock, int64_t until_ns)
{
        struct timespec ts = {
                .tv_sec = until_ns / KC_NSEC_PER_SEC,
                .tv_nsec = until_ns % KC_NSEC_PER_SEC,
        };

        (void)pthread_cond_timedwait(cond, lock, &ts);
}

/* ------------------------------------------------------------------------ */
/* Queues (any thread)                                                        */

static void client_wake(struct kc_grpc_client *c)
{
        uint64_t one = 1;

        /* EAGAIN means the counter is already non-zero: the thread will wake. */
        (void)!write(c->efd, &one, sizeof(one));
}

/* Hands @p call to the I/O thread (which gets its own reference). */
static int client_submit(struct kc_grpc_client *c, struct grpc_call *call)
{
        bool wake = false;

        pthread_mutex_lock(&c->lock);
        if (c->closing) {
                pthread_mutex_unlock(&c->lock);
                return -ECANCELED;
        }
        kc__grpc_call_ref(call);
        call->sub_next = NULL;
        *c->sub_tail = call;
        c->sub_tail = &call->sub_next;
        if (!c->wake_pending)
                wake = c->wake_pending = true;
        pthread_mutex_unlock(&c->lock);
        if (wake)
                client_wake(c);
        return 0;
}

/*
 * Asks the I/O thread to reset @p call's stream (and, for a stream, to run
 * on_close). Called with call->lock held and the call not finished, which
 * keeps the client alive; at most once per call.
 */
static void call_queue_cancel_locked(struct grpc_call *call)
{
        struct kc_grpc_client *c = call->client;
        bool wake = false;

        if (call->cancel_queued)
                return;
        call->cancel_queued = true;
        pthread_mutex_lock(&c->lock);
        if (!c->closing) { /* else the I/O thread is ending every call anyway */
                kc__grpc_call_ref(call);
                call->can_next = NULL;
                *c->can_tail = call;
                c->can_tail = &call->can_next;
                if (!c->wake_pending)
                        wake = c->wake_pending = true;
        }
        pthread_mutex_unlock(&c->lock);
        if (wake)
                client_wake(c);
}

/* ------------------------------------------------------------------------ */
/* The client                                                                 */

void kc__grpc_client_destroy(struct kc_grpc_client *c)
{
        struct kc_list *l;

        while ((l = kc_list_first(&c->conns)))
                kc__grpc_conn_destroy(c, kc_list_entry(l, struct conn, link), false,
                                      KC_RUNTIME_CANCELLED, "the gRPC client was closed");
        if (c->cbs)
                nghttp2_session_callbacks_del(c->cbs);
        if (c->opt)
                nghttp2_option_del(c->opt);
        close_fd(c->efd);
        pthread_mutex_destroy(&c->lock);
        free(c->pfds);
        free(c->pconns);
        free(c->rbuf);
        free(c->path);
        free(c->user_agent);
        free(c);
}

/* A client for @p addr (copied), named @p path in messages; no thread yet. */
static int client_alloc(const struct sockaddr *addr, socklen_t addr_len, const char *path,
                        bool unix_socket, struct kc_grpc_client **ret)
{
        struct kc_grpc_client *c;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->efd = -1;
        r = -pthread_mutex_init(&c->lock, NULL);
        if (r < 0) {
                free(c);
                return r;
        }
        c->sub_tail = &c->sub_head;
        c->can_tail = &c->can_head;
        kc_list_init(&c->conns);
        kc_list_init(&c->retry);
        c->next_deadline = INT64_MAX;
        memcpy(&c->addr, addr, addr_len);
        c->addr_len = addr_len;
        c->path = strdup(path);
        c->authority = unix_socket ? "localhost" : c->path;
        c->rbuf = malloc(READ_BUF_SIZE);
        if (!c->path || !c->rbuf) {
                kc__grpc_client_destroy(c);
                return -ENOMEM;
        }
        c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (c->efd < 0) {
                r = -errno;
                kc__grpc_client_destroy(c);
                return r;
        }
        /*
         * Default options: nghttp2 answers the server's PINGs and SETTINGS,
         * returns receive windows as DATA is consumed, and caps concurrent
         * streams at 100 until the server's SETTINGS say otherwise.
         */
        r = kc__grpc_callbacks_new(&c->cbs);
        if (r == 0 && nghttp2_option_new(&c->opt) != 0)
                r = -ENOMEM;
        if (r < 0) {
                kc__grpc_client_destroy(c);
                return r;
        }
        *ret = c;
        return 0;
}

int kc__grpc_client_alloc(const char *socket_path, struct kc_grpc_client **ret)
{
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        size_t len;

        if (!socket_path || !*socket_path || !ret)
                return -EINVAL;
        len = strlen(socket_path);
        if (len >= sizeof(addr.sun_path))
                return -ENAMETOOLONG;
        memcpy(addr.sun_path, socket_path, len + 1);
        return client_alloc((const struct sockaddr *)&addr,
                            (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1),
                            socket_path, true, ret);
}

int kc__grpc_client_alloc_tcp(const char *host, int port, struct kc_grpc_client **ret)
{
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV }, *ai;
        char ps[16], hostport[300];
        int r;

        if (!host || !*host || port <= 0 || port > 65535 || strlen(host) > 255 || !ret)
                return -EINVAL;
        snprintf(ps, sizeof(ps), "%d", port);
        snprintf(hostport, sizeof(hostport), strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
        if (getaddrinfo(host, ps, &hints, &ai) != 0)
                return -EHOSTUNREACH;
        r = client_alloc(ai->ai_addr, ai->ai_addrlen, hostport, false, ret);
        freeaddrinfo(ai);
        return r;
}

/* Starts the I/O thread of a client just allocated; frees it on failure. */
static int client_start(struct kc_grpc_client *c, struct kc_grpc_client **ret)
{
        int r = -pthread_create(&c->thread, NULL, kc__grpc_io_main, c);

        if (r < 0) {
                kc__grpc_client_destroy(c);
                return r;
        }
        (void)pthread_setname_np(c->thread, "kc-grpc-io");
        *ret = c;
        return 0;
}

int kc_grpc_client_new(const char *socket_path, struct kc_grpc_client **ret)
{
        struct kc_grpc_client *c = NULL;
        int r;

        if (!ret)
                return -EINVAL;
        r = kc__grpc_client_alloc(socket_path, &c);
        return r < 0 ? r : client_start(c, ret);
}

int kc_grpc_client_new_tcp(const char *host, int port, const char *user_agent,
                           struct kc_grpc_client **ret)
{
        struct kc_grpc_client *c = NULL;
        int r;

        if (!ret)
                return -EINVAL;
        r = kc__grpc_client_alloc_tcp(host, port, &c);
        if (r < 0)
                return r;
        if (user_agent && !(c->user_agent = strdup(user_agent))) {
                kc__grpc_client_destroy(c);
                return -ENOMEM;
        }
        return client_start(c, ret);
}

void kc_grpc_client_shutdown(struct kc_grpc_client *c)
{
        bool joined;

        pthread_mutex_lock(&c->lock);
        c->closing = true;
        joined = c->joined;
        c->joined = true;
        pthread_mutex_unlock(&c->lock);
        if (joined)
                return;
        client_wake(c);
        pthread_join(c->thread, NULL);
}

struct kc_grpc_client *kc_grpc_client_free(struct kc_grpc_client *c)
{
        if (!c)
                return NULL;
        kc_grpc_client_shutdown(c);
        kc__grpc_client_destroy(c);
        return NULL;
}

int kc_grpc_unary(struct kc_grpc_client *c, const char *path, const uint8_t *req, size_t req_len,
                  int64_t timeout_ns, struct kc_cancel *ctx, uint8_t **ret_resp,
                  size_t *ret_resp_len, struct kc_runtime_error *err)
{
        _cleanup_(kc__grpc_call_unrefp) struct grpc_call *call = NULL;
        int r;

        if (!c || !path || path[0] != '/' || (!req && req_len) || timeout_ns <= 0 || !ret_resp ||
            !ret_resp_len)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "invalid gRPC call arguments");
        if (req_len > KC_GRPC_MAX_MESSAGE)
                return kc_runtime_error_set(err, -E2BIG, KC_RUNTIME_RESOURCE_EXHAUSTED,
                                            "trying to send message larger than max (%zu vs. %d)",
                                            req_len, KC_GRPC_MAX_MESSAGE);
        if (ctx && kc_cancel_is_set(ctx))
                return kc_runtime_error_set(err, -ECANCELED, KC_RUNTIME_CANCELLED,
                                            "%s: cancelled before it was sent", path);
        r = kc__grpc_call_new(c, path, req, req_len, &call);
        if (r < 0)
                return kc_runtime_error_set(err, r, KC_RUNTIME_RESOURCE_EXHAUSTED, "%s: %s", path,
                                            strerror(-r));
        call->timeout_ns = timeout_ns;
        call->deadline = add_sat(mono_ns(), timeout_ns);
        r = client_submit(c, call);
        if (r < 0)
                return kc_runtime_error_set(err, r, KC_RUNTIME_CANCELLED,
                                            "the gRPC client was closed");

        pthread_mutex_lock(&call->lock);
        while (!call->done) {
                int64_t now = mono_ns(), net = add_sat(call->deadline, DEADLINE_NET_NS);
                char d[KC_DURATION_MAX];

                if (ctx && kc_cancel_is_set(ctx)) {
                        call->done = true;
                        call->r = kc_runtime_error_set(&call->err, -ECANCELED, KC_RUNTIME_CANCELLED,
                                                       "%s: cancelled", path);
                        call_queue_cancel_locked(call);
                        break;
                }
                if (now >= net) {
                        /* The I/O thread should have failed it at the deadline: the net. */
                        call->done = true;
                        call->r = kc_runtime_error_set(
                                &call->err, -ETIMEDOUT, KC_RUNTIME_DEADLINE_EXCEEDED,
                                "deadline exceeded after %s", kc_format_duration(timeout_ns, d));
                        call_queue_cancel_locked(call);
                        break;
                }
                cond_wait_until(&call->cond, &call->lock,
                                ctx ? min64(net, now + CTX_POLL_NS) : net);
        }
        r = kc__grpc_call_take_result(call, ret_resp, ret_resp_len, err);
        pthread_mutex_unlock(&call->lock);
        return r;
}

int kc_grpc_stream_open(struct kc_grpc_client *c, const char *path, const uint8_t *req,
                        size_t req_len, kc_grpc_message_fn on_message, kc_grpc_close_fn on_close,
                        void *userdata, struct kc_grpc_stream **ret, struct kc_runtime_error *err)
{
        _cleanup_(kc__grpc_call_unrefp) struct grpc_call *call = NULL;
        int r;

        if (!c || !path || path[0] != '/' || (!req && req_len) || !on_message || !on_close || !ret)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "invalid gRPC stream arguments");
        if (req_len > KC_GRPC_MAX_MESSAGE)
                return kc_runtime_error_set(err, -E2BIG, KC_RUNTIME_RESOURCE_EXHAUSTED,
                                            "trying to send message larger than max (%zu vs. %d)",
                                            req_len, KC_GRPC_MAX_MESSAGE);
        r = kc__grpc_call_new(c, path, req, req_len, &call);
        if (r < 0)
                return kc_runtime_error_set(err, r, KC_RUNTIME_RESOURCE_EXHAUSTED, "%s: %s", path,
                                            strerror(-r));
        call->streaming = true;
        call->on_message = on_message;
        call->on_close = on_close;
        call->userdata = userdata;
        r = client_submit(c, call);
        if (r < 0)
                return kc_runtime_error_set(err, r, KC_RUNTIME_CANCELLED,
                                            "the gRPC client was closed");

        pthread_mutex_lock(&call->lock);
        while (!call->started && !call->done)
                cond_wait_until(&call->cond, &call->lock, add_sat(mono_ns(), WAIT_NET_NS));
        if (!call->started) {
                r = call->r;
                if (err)
                        *err = call->err;
                pthread_mutex_unlock(&call->lock);
                return r;
        }
        pthread_mutex_unlock(&call->lock);
        *ret = (struct kc_grpc_stream *)TAKE_PTR(call);
        return 0;
}

struct kc_grpc_stream *kc_grpc_stream_close(struct kc_grpc_stream *s)
{
        struct grpc_call *call;

        if (!s)
                return NULL;
        call = &s->call;
        pthread_mutex_lock(&call->lock);
        if (!call->finished) {
                call_queue_cancel_locked(call);
                while (!call->finished)
                        cond_wait_until(&call->cond, &call->lock, add_sat(mono_ns(), WAIT_NET_NS));
        }
        pthread_mutex_unlock(&call->lock);
        kc__grpc_call_unref(call);
        return NULL;
}
