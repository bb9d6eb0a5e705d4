/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests and fuzzing of the CRI client's gRPC transport: one call answered by
 * canned server bytes (grpc_canned.c). Link kc_runtime, kc_runtime_internal
 * and nghttp2.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "cri/grpc.h"

/**
 * @brief One call answered by canned server bytes, with no socket and no
 * I/O thread. The client's nghttp2 session, callbacks and response checks
 * are the ones of kc_grpc_unary() and kc_grpc_stream_open(); what the client
 * sends is discarded. @p server (the server's side of the connection: its
 * SETTINGS, then frames on stream 1) is fed to the session @p chunk bytes at
 * a time (0: at once), then the connection closes.
 *
 * A unary call when @p on_message is NULL: returns as kc_grpc_unary() (with
 * *ret_resp malloc'd on success). A server stream otherwise: every message
 * goes to @p on_message and the result is the stream's close result (a
 * connection closed before grpc-status is UNAVAILABLE). A call that would be
 * retried on a new connection fails UNAVAILABLE. -EDEADLK (INTERNAL) means
 * that the call never ended: a real caller would have waited forever.
 */
int kc_test_grpc_run_canned(const uint8_t *server, size_t len, size_t chunk,
                            kc_grpc_message_fn on_message, void *userdata, uint8_t **ret_resp,
                            size_t *ret_resp_len, struct kc_runtime_error *err);
