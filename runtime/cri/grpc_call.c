/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A gRPC call's life (grpc_internal.h): its references, how its outcome
 * reaches the caller (or its stream's on_close), its reset, and its place
 * on the I/O thread's lists (a connection's calls, or the retry list).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_internal.h"

static int cond_init_monotonic(pthread_cond_t *cond)
{
        pthread_condattr_t attr;
        int r;

        r = pthread_condattr_init(&attr);
        if (r)
                return -r;
        r = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        if (r == 0)
                r = pthread_cond_init(cond, &attr);
        pthread_condattr_destroy(&attr);
        return -r;
}

struct grpc_call *kc__grpc_call_ref(struct grpc_call *call)
{
        /* Relaxed: a new reference is always taken from an existing one. */
        atomic_fetch_add_explicit(&call->n_ref, 1, memory_order_relaxed);
        return call;
}

struct grpc_call *kc__grpc_call_unref(struct grpc_call *call)
{
        if (!call)
                return NULL;
        /*
         * Acq_rel: the release orders this owner's writes (the I/O thread's
         * fields, the caller's result reads) before the decrement; the last
         * owner's acquire makes all of them visible before the free.
         */
        if (atomic_fetch_sub_explicit(&call->n_ref, 1, memory_order_acq_rel) != 1)
                return NULL;
        pthread_cond_destroy(&call->cond);
        pthread_mutex_destroy(&call->lock);
        free(call->path);
        free(call->req);
        free(call->resp);
        free(call->msg);
        free(call->unary_msg);
        free(call);
        return NULL;
}

int kc__grpc_call_new(struct kc_grpc_client *c, const char *path, const uint8_t *req,
                      size_t req_len, struct grpc_call **ret)
{
        struct grpc_call *call;
        int r;

        call = calloc(1, sizeof(*call));
        if (!call)
                return -ENOMEM;
        call->path = strdup(path);
        call->req = malloc(GRPC_PREFIX + req_len);
        if (!call->path || !call->req) {
                free(call->path);
                free(call->req);
                free(call);
                return -ENOMEM;
        }
        kc__grpc_frame_prefix(call->req, req_len);
        if (req_len)
                memcpy(call->req + GRPC_PREFIX, req, req_len);
        call->req_len = GRPC_PREFIX + req_len;
        r = -pthread_mutex_init(&call->lock, NULL);
        if (r == 0) {
                r = cond_init_monotonic(&call->cond);
                if (r < 0)
                        pthread_mutex_destroy(&call->lock);
        }
        if (r < 0) {
                free(call->path);
                free(call->req);
                free(call);
                return r;
        }
        atomic_init(&call->n_ref, 1);
        kc_list_init(&call->link);
        call->client = c;
        call->deadline = INT64_MAX;
        call->grpc_status = -1;
        *ret = call;
        return 0;
}

int kc__grpc_call_take_result(struct grpc_call *call, uint8_t **ret_resp, size_t *ret_resp_len,
                              struct kc_runtime_error *err)
{
        if (call->r == 0) {
                *ret_resp = TAKE_PTR(call->resp);
                *ret_resp_len = call->resp_len;
        } else if (err) {
                *err = call->err;
        }
        return call->r;
}

void kc__grpc_call_complete(struct grpc_call *call, int r, const struct kc_runtime_error *err)
{
        if (call->aborted)
                return;
        call->aborted = true;
        if (call->streaming && call->io_started) {
                call->on_close(call->userdata, r, r < 0 ? err : NULL);
                pthread_mutex_lock(&call->lock);
                call->finished = true;
                pthread_cond_broadcast(&call->cond);
                pthread_mutex_unlock(&call->lock);
                return;
        }
        pthread_mutex_lock(&call->lock);
        if (!call->done) {
                call->done = true;
                call->r = r;
                if (r < 0) {
                        call->err = *err;
                } else {
                        call->resp = TAKE_PTR(call->unary_msg);
                        call->resp_len = call->unary_msg_len;
                }
        }
        pthread_cond_broadcast(&call->cond);
        pthread_mutex_unlock(&call->lock);
}

void kc__grpc_call_fail(struct grpc_call *call, enum kc_runtime_code code, const char *fmt, ...)
{
        struct kc_runtime_error e;
        va_list ap;

        if (call->aborted)
                return;
        e.code = code;
        va_start(ap, fmt);
        vsnprintf(e.message, sizeof(e.message), fmt, ap);
        va_end(ap);
        kc__grpc_call_complete(call, kc_grpc_code_to_errno(code), &e);
}

void kc__grpc_call_mark_started(struct grpc_call *call)
{
        if (!call->streaming || call->io_started)
                return;
        call->io_started = true;
        pthread_mutex_lock(&call->lock);
        call->started = true;
        pthread_cond_broadcast(&call->cond);
        pthread_mutex_unlock(&call->lock);
}

void kc__grpc_call_reset(struct grpc_call *call, uint32_t error_code)
{
        if (call->where != CALL_ON_CONN || !call->opened || call->rst_sent)
                return;
        call->rst_sent = true;
        (void)nghttp2_submit_rst_stream(call->conn->session, NGHTTP2_FLAG_NONE, call->stream_id,
                                        error_code);
}

void kc__grpc_call_detach(struct grpc_call *call)
{
        struct conn *conn = call->conn;

        if (call->where != CALL_ON_CONN)
                return;
        kc_list_del(&call->link);
        conn->n_calls--;
        call->where = CALL_NOWHERE;
        call->conn = NULL;
        /* Later callbacks for this stream (if it still exists) find no call. */
        (void)nghttp2_session_set_stream_user_data(conn->session, call->stream_id, NULL);
}

void kc__grpc_call_retry(struct kc_grpc_client *c, struct grpc_call *call)
{
        call->retried = true;
        call->where = CALL_RETRY;
        kc_list_add_head(&c->retry, &call->link);
}

bool kc__grpc_call_refused(const struct conn *conn, const struct grpc_call *call,
                           uint32_t error_code)
{
        if (call->retried || call->got_headers || call->aborted)
                return false;
        if (!call->opened)
                return true;
        return error_code == NGHTTP2_REFUSED_STREAM ||
               (conn->goaway && call->stream_id > conn->goaway_last_id);
}
