/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Canned server bytes for the CRI client's gRPC transport (grpc_canned.h).
 * It drives the transport's own pieces (runtime/cri/grpc_internal.h) the
 * way the I/O thread does, with the socket's bytes coming from a buffer and
 * what the client writes thrown away: a client without its I/O thread, one
 * connection without a socket, one call.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "cri/grpc_internal.h"
#include "grpc_canned.h"

struct canned {
        kc_grpc_message_fn on_message;
        void *userdata;
        bool closed;
        int r;
        struct kc_runtime_error err;
};

/* What the client sends goes nowhere: the server's answer is canned. */
static ssize_t canned_send(nghttp2_session *session, const uint8_t *data, size_t len, int flags,
                           void *user_data)
{
        (void)session;
        (void)data;
        (void)flags;
        (void)user_data;
        return (ssize_t)len;
}

static void canned_on_message(void *userdata, const uint8_t *msg, size_t len)
{
        struct canned *k = userdata;

        k->on_message(k->userdata, msg, len);
}

static void canned_on_close(void *userdata, int r, const struct kc_runtime_error *err)
{
        struct canned *k = userdata;

        k->closed = true;
        k->r = r;
        if (r < 0)
                k->err = *err;
}

/* A client without its I/O thread, one connection on no socket and one call on it. */
static int canned_setup(struct kc_grpc_client **ret_c, struct grpc_call **ret_call)
{
        struct kc_grpc_client *c = NULL;
        struct conn *conn;
        char why[256];
        int r;

        r = kc__grpc_client_alloc("canned", &c);
        if (r < 0)
                return r;
        nghttp2_session_callbacks_set_send_callback(c->cbs, canned_send);
        r = kc__grpc_conn_attach(c, -1, false, &conn, why, sizeof(why));
        if (r == 0)
                r = kc__grpc_call_new(c, "/runtime.v1.RuntimeService/Canned", NULL, 0, ret_call);
        if (r < 0) {
                kc__grpc_client_destroy(c);
                return r;
        }
        *ret_c = c;
        return 0;
}

/* What the I/O thread does for one call, with the socket's bytes coming from @p server. */
static void canned_exchange(struct kc_grpc_client *c, struct grpc_call *call, const uint8_t *server,
                            size_t len, size_t chunk)
{
        struct kc_list *l;

        kc__grpc_io_submit(c, kc_list_entry(kc_list_first(&c->conns), struct conn, link),
                           kc__grpc_call_ref(call));
        kc__grpc_io_flush_and_reap(c);
        for (size_t off = 0; off < len && (l = kc_list_first(&c->conns));) {
                size_t n = chunk ? min_size(chunk, len - off) : len - off;

                (void)kc__grpc_conn_recv(kc_list_entry(l, struct conn, link), server + off, n);
                off += n;
                kc__grpc_io_flush_and_reap(c);
        }
        /* The server closed the connection. */
        if ((l = kc_list_first(&c->conns))) {
                kc__grpc_conn_closed(kc_list_entry(l, struct conn, link));
                kc__grpc_io_flush_and_reap(c);
        }
        /* A refused call would be sent again on a new connection: there is none. */
        kc__grpc_io_fail_retries(c, KC_RUNTIME_UNAVAILABLE, "canned: refused, would be retried");
}

int kc_test_grpc_run_canned(const uint8_t *server, size_t len, size_t chunk,
                            kc_grpc_message_fn on_message, void *userdata, uint8_t **ret_resp,
                            size_t *ret_resp_len, struct kc_runtime_error *err)
{
        _cleanup_(kc__grpc_call_unrefp) struct grpc_call *call = NULL;
        struct canned k = { .on_message = on_message, .userdata = userdata };
        struct kc_grpc_client *c = NULL;
        int r;

        if ((!server && len) || (!on_message && (!ret_resp || !ret_resp_len)))
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "invalid canned call arguments");
        r = canned_setup(&c, &call);
        if (r < 0)
                return kc_runtime_error_set(err, r, KC_RUNTIME_RESOURCE_EXHAUSTED, "%s",
                                            strerror(-r));
        if (on_message) {
                call->streaming = true;
                call->on_message = canned_on_message;
                call->on_close = canned_on_close;
                call->userdata = &k;
        }
        canned_exchange(c, call, server, len, chunk);
        kc__grpc_client_destroy(c);

        if (on_message && k.closed) {
                if (k.r < 0 && err)
                        *err = k.err;
                return k.r;
        }
        /* A unary call, or a stream that failed before it started (as kc_grpc_stream_open()). */
        if (!call->done)
                return kc_runtime_error_set(err, -EDEADLK, KC_RUNTIME_INTERNAL,
                                            "canned: the call never ended (a caller would hang)");
        return kc__grpc_call_take_result(call, ret_resp, ret_resp_len, err);
}
