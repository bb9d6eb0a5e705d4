/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gRPC message framing (grpc_internal.h): each message is a 5-byte prefix
 * (a compressed flag, then the length big-endian) and the protobuf bytes.
 * The request goes out as nghttp2's data source; the response's messages
 * are reassembled from DATA chunks of any size and handed over whole: to
 * on_message for a stream, or kept as the unary call's one response.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_internal.h"

void kc__grpc_frame_prefix(uint8_t out[static GRPC_PREFIX], size_t len)
{
        out[0] = 0;
        out[1] = (uint8_t)(len >> 24);
        out[2] = (uint8_t)(len >> 16);
        out[3] = (uint8_t)(len >> 8);
        out[4] = (uint8_t)len;
}

ssize_t kc__grpc_req_read(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                          uint32_t *data_flags, nghttp2_data_source *source, void *user_data)
{
        struct grpc_call *call = source->ptr;
        size_t n = call->req_len - call->req_off;

        (void)session;
        (void)stream_id;
        (void)user_data;
        if (n > length)
                n = length;
        memcpy(buf, call->req + call->req_off, n);
        call->req_off += n;
        if (call->req_off == call->req_len)
                *data_flags |= NGHTTP2_DATA_FLAG_EOF;
        return (ssize_t)n;
}

static void message_done(struct grpc_call *call)
{
        call->n_msgs++;
        call->hdr_got = 0;
        if (call->streaming) {
                call->on_message(call->userdata, call->msg ? call->msg : (const uint8_t *)"",
                                 call->msg_len);
                free(call->msg);
                call->msg = NULL;
        } else {
                call->unary_msg = TAKE_PTR(call->msg);
                call->unary_msg_len = call->msg_len;
        }
        call->msg_len = call->msg_got = 0;
}

/*
 * A message prefix is complete: checks it and makes room for the message.
 * False when it failed the call (and reset the stream).
 */
static bool prefix_done(struct grpc_call *call)
{
        uint32_t len = (uint32_t)call->hdr[1] << 24 | (uint32_t)call->hdr[2] << 16 |
                       (uint32_t)call->hdr[3] << 8 | call->hdr[4];

        if (call->hdr[0] & 1) {
                kc__grpc_call_fail(call, KC_RUNTIME_INTERNAL,
                                   "malformed response: compressed flag set, but no "
                                   "grpc-encoding was negotiated");
        } else if (call->hdr[0] != 0) {
                kc__grpc_call_fail(call, KC_RUNTIME_INTERNAL,
                                   "malformed response: invalid message flags 0x%02x",
                                   call->hdr[0]);
        } else if (len > KC_GRPC_MAX_MESSAGE) {
                kc__grpc_call_fail(call, KC_RUNTIME_RESOURCE_EXHAUSTED,
                                   "received message larger than max (%" PRIu32 " vs. %d)", len,
                                   KC_GRPC_MAX_MESSAGE);
        } else {
                call->msg_len = len;
                call->msg_got = 0;
                if (len == 0 || (call->msg = malloc(len)))
                        return true;
                kc__grpc_call_fail(call, KC_RUNTIME_RESOURCE_EXHAUSTED,
                                   "out of memory for a %" PRIu32 "-byte message", len);
        }
        kc__grpc_call_reset(call, NGHTTP2_CANCEL);
        return false;
}

void kc__grpc_call_feed(struct grpc_call *call, const uint8_t *p, size_t n)
{
        while (n > 0 && !call->aborted) {
                if (call->hdr_got < GRPC_PREFIX) {
                        size_t k = min_size(GRPC_PREFIX - call->hdr_got, n);

                        if (!call->streaming && call->n_msgs > 0) {
                                kc__grpc_call_fail(call, KC_RUNTIME_INTERNAL,
                                                   "malformed response: more than one message "
                                                   "on a unary call");
                                kc__grpc_call_reset(call, NGHTTP2_CANCEL);
                                return;
                        }
                        memcpy(call->hdr + call->hdr_got, p, k);
                        call->hdr_got += k;
                        p += k;
                        n -= k;
                        if (call->hdr_got < GRPC_PREFIX || !prefix_done(call))
                                return;
                }
                if (call->msg_got < call->msg_len) {
                        size_t k = min_size(call->msg_len - call->msg_got, n);

                        memcpy(call->msg + call->msg_got, p, k);
                        call->msg_got += k;
                        p += k;
                        n -= k;
                }
                if (call->msg_got == call->msg_len)
                        message_done(call);
        }
}
