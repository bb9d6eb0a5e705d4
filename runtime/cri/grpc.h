/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file grpc.h
 * @brief The gRPC transport of the CRI client (internal to runtime/): gRPC
 * over HTTP/2 with prior knowledge (h2c) on a unix socket, on nghttp2.
 *
 * One client holds one connection, multiplexing every call as its own
 * HTTP/2 stream, driven by one I/O thread: callers from any thread (the
 * PLEG, pod workers, the deletor, the runtime-up poller) submit a call and
 * sleep until its response, deadline or cancellation, so a slow call never
 * blocks the others. The connection is (re)established on demand: a call
 * made while the runtime is down fails UNAVAILABLE at once, and the next
 * call after the runtime comes back reconnects. No HTTP/2 PINGs are sent
 * (containerd's grpc-go answers pings more frequent than every 5 minutes
 * with GOAWAY ENHANCE_YOUR_CALM).
 *
 * Wire rules: requests carry :method POST, :scheme http, :path
 * "/runtime.v1.RuntimeService/<Method>", :authority localhost,
 * content-type application/grpc, te trailers and grpc-timeout; each message
 * is [0][u32 big-endian length][protobuf], reassembled across DATA frames;
 * grpc-status and the percent-decoded grpc-message are read from the
 * trailers or from a Trailers-Only response. Messages over
 * KC_GRPC_MAX_MESSAGE either way fail RESOURCE_EXHAUSTED.
 *
 * Errors: every call returns 0 or a negative errno and, when @p err is not
 * NULL, fills err->code with the gRPC status and err->message with the
 * grpc-message (or a description of the local failure). The errno follows
 * the code (kc_grpc_code_to_errno()).
 */
#pragma once

#include "runtime/error.h"

struct kc_cancel;

/** The gRPC message size limit, each way (containerd's and kubelet's default). */
#define KC_GRPC_MAX_MESSAGE (16 * 1024 * 1024)

/**
 * The errno for a gRPC status: OK 0, CANCELLED -ECANCELED, UNKNOWN -EIO,
 * INVALID_ARGUMENT -EINVAL, DEADLINE_EXCEEDED -ETIMEDOUT, NOT_FOUND -ENOENT,
 * ALREADY_EXISTS -EEXIST, PERMISSION_DENIED -EACCES, RESOURCE_EXHAUSTED
 * -E2BIG, FAILED_PRECONDITION -EBUSY, ABORTED -ECONNABORTED, OUT_OF_RANGE
 * -ERANGE, UNIMPLEMENTED -EOPNOTSUPP, INTERNAL -EPROTO, UNAVAILABLE
 * -ECONNREFUSED, DATA_LOSS -EBADMSG, UNAUTHENTICATED -EPERM; anything else
 * -EIO.
 */
int kc_grpc_code_to_errno(enum kc_runtime_code code);

struct kc_grpc_client;

/**
 * @brief A client for the unix socket at @p socket_path (copied). Starts the
 * I/O thread; does not connect yet (the first call does).
 * @return 0, -EINVAL, -ENAMETOOLONG (path longer than sun_path), -ENOMEM or
 * a thread/eventfd error; *ret unchanged on failure.
 */
int kc_grpc_client_new(const char *socket_path, struct kc_grpc_client **ret);

/**
 * @brief kc_grpc_client_new() for TCP to @p host:@p port (h2c, prior
 * knowledge; :authority "host:port"), sending @p user_agent (may be NULL)
 * as user-agent. @p host is resolved now.
 * @return 0, -EINVAL, -EHOSTUNREACH (does not resolve), -ENOMEM or a
 * thread/eventfd error; *ret unchanged on failure.
 */
int kc_grpc_client_new_tcp(const char *host, int port, const char *user_agent,
                           struct kc_grpc_client **ret);

/**
 * @brief Fails every call in flight with CANCELLED (their callers return
 * -ECANCELED), closes every stream (on_close with -ECANCELED), joins the
 * I/O thread and frees the client. NULL-safe; returns NULL. No call may
 * start concurrently or afterwards.
 */
struct kc_grpc_client *kc_grpc_client_free(struct kc_grpc_client *c);

/**
 * @brief The first half of kc_grpc_client_free(): fails every call in flight
 * with CANCELLED, closes every stream and joins the I/O thread; every later
 * call fails CANCELLED at once. For a daemon's shutdown, so that threads
 * blocked in runtime calls return before they are joined. Idempotent; any
 * thread except the I/O thread; not concurrently with kc_grpc_client_free().
 */
void kc_grpc_client_shutdown(struct kc_grpc_client *c);

/**
 * @brief One unary call: sends @p req (the protobuf bytes, without the
 * 5-byte gRPC prefix; may be empty) on @p path and waits for the response.
 * Any thread, concurrently.
 *
 * @param path e.g. "/runtime.v1.RuntimeService/Version"
 * @param timeout_ns the deadline, relative, on the monotonic clock (> 0);
 *        sent as grpc-timeout too. When it passes the stream is reset and
 *        the call fails DEADLINE_EXCEEDED (-ETIMEDOUT).
 * @param ctx may be NULL; when set, the stream is reset and the call fails
 *        CANCELLED (-ECANCELED). (The I/O thread does not watch @p ctx: the
 *        caller's wait re-checks it at least every 100 ms.)
 * @param ret_resp on success the response's protobuf bytes, malloc'd (may be
 *        NULL with *ret_resp_len 0 for an empty message); untouched on failure.
 * @return 0, or a negative errno with err filled: the server's grpc-status,
 *         UNAVAILABLE when the socket cannot be reached or the connection
 *         drops (-ECONNREFUSED), INTERNAL for a malformed response (bad
 *         frame prefix, a missing grpc-status, a response that is not
 *         exactly one message: -EPROTO), RESOURCE_EXHAUSTED over the size
 *         limit, DEADLINE_EXCEEDED, CANCELLED; -ENOMEM.
 */
int kc_grpc_unary(struct kc_grpc_client *c, const char *path, const uint8_t *req, size_t req_len,
                  int64_t timeout_ns, struct kc_cancel *ctx, uint8_t **ret_resp,
                  size_t *ret_resp_len, struct kc_runtime_error *err);

/** A server-streaming call (GetContainerEvents). */
struct kc_grpc_stream;

/*
 * Stream callbacks run on the client's I/O thread: they must not block and
 * must not call back into the client (kc_grpc_unary or kc_grpc_stream_close
 * from a callback deadlocks). Hand the work to another thread instead.
 */

/** Called on the I/O thread for each message (bytes valid during the call only). */
typedef void (*kc_grpc_message_fn)(void *userdata, const uint8_t *msg, size_t len);
/**
 * Called on the I/O thread exactly once when the stream ends: 0 after a
 * grpc-status OK, else a negative errno with @p err describing it (the
 * server's status, UNAVAILABLE when the connection dropped, CANCELLED after
 * kc_grpc_stream_close()).
 */
typedef void (*kc_grpc_close_fn)(void *userdata, int r, const struct kc_runtime_error *err);

/**
 * @brief Opens a server-streaming call: sends @p req on @p path, then
 * delivers each response message to @p on_message until the stream ends
 * (@p on_close). No deadline. Any thread.
 * @return 0 and *ret (the handle to close), or a negative errno with @p err
 * filled when the stream cannot be opened (then no callback runs).
 */
int kc_grpc_stream_open(struct kc_grpc_client *c, const char *path, const uint8_t *req,
                        size_t req_len, kc_grpc_message_fn on_message, kc_grpc_close_fn on_close,
                        void *userdata, struct kc_grpc_stream **ret, struct kc_runtime_error *err);

/**
 * @brief Cancels the stream if it is still open (on_close then runs with
 * -ECANCELED unless it already ran), waits until no callback of it runs any
 * more, and frees the handle. Any thread except the I/O thread (not from a
 * callback). NULL-safe; returns NULL.
 */
struct kc_grpc_stream *kc_grpc_stream_close(struct kc_grpc_stream *s);
