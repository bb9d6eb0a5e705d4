/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gRPC status of a call (grpc_internal.h): gRPC codes and their errnos,
 * the HTTP/2 and HTTP codes the protocol maps onto them, the grpc-timeout
 * request header, the response's headers and trailers (:status,
 * content-type, grpc-status and the percent-encoded grpc-message), and the
 * verdict on a response once its stream ends.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "grpc_internal.h"

int kc_grpc_code_to_errno(enum kc_runtime_code code)
{
        switch (code) {
        case KC_RUNTIME_OK:
                return 0;
        case KC_RUNTIME_CANCELLED:
                return -ECANCELED;
        case KC_RUNTIME_UNKNOWN:
                return -EIO;
        case KC_RUNTIME_INVALID_ARGUMENT:
                return -EINVAL;
        case KC_RUNTIME_DEADLINE_EXCEEDED:
                return -ETIMEDOUT;
        case KC_RUNTIME_NOT_FOUND:
                return -ENOENT;
        case KC_RUNTIME_ALREADY_EXISTS:
                return -EEXIST;
        case KC_RUNTIME_PERMISSION_DENIED:
                return -EACCES;
        case KC_RUNTIME_RESOURCE_EXHAUSTED:
                return -E2BIG;
        case KC_RUNTIME_FAILED_PRECONDITION:
                return -EBUSY;
        case KC_RUNTIME_ABORTED:
                return -ECONNABORTED;
        case KC_RUNTIME_OUT_OF_RANGE:
                return -ERANGE;
        case KC_RUNTIME_UNIMPLEMENTED:
                return -EOPNOTSUPP;
        case KC_RUNTIME_INTERNAL:
                return -EPROTO;
        case KC_RUNTIME_UNAVAILABLE:
                return -ECONNREFUSED;
        case KC_RUNTIME_DATA_LOSS:
                return -EBADMSG;
        case KC_RUNTIME_UNAUTHENTICATED:
                return -EPERM;
        }
        return -EIO;
}

void kc__grpc_format_timeout(int64_t ns, char buf[static 16])
{
        static const struct {
                int64_t div;
                char unit;
        } units[] = {
                { 1, 'n' },
                { KC_NSEC_PER_USEC, 'u' },
                { KC_NSEC_PER_MSEC, 'm' },
                { KC_NSEC_PER_SEC, 'S' },
                { KC_NSEC_PER_MIN, 'M' },
                { 60 * KC_NSEC_PER_MIN, 'H' },
        };
        int64_t v = 99999999; /* 99999999H: beyond any timeout we take */
        char unit = 'H';

        if (ns < 1)
                ns = 1;
        for (size_t i = 0; i < KC_ELEMENTSOF(units); i++) {
                int64_t q = ns / units[i].div + (ns % units[i].div != 0);

                if (q <= 99999999) {
                        v = q;
                        unit = units[i].unit;
                        break;
                }
        }
        snprintf(buf, 16, "%u%c", (unsigned)v, unit);
}

static int hexval(uint8_t ch)
{
        if (ch >= '0' && ch <= '9')
                return ch - '0';
        if (ch >= 'a' && ch <= 'f')
                return ch - 'a' + 10;
        if (ch >= 'A' && ch <= 'F')
                return ch - 'A' + 10;
        return -1;
}

/* grpc-message is percent-encoded; a '%' not followed by two hex digits stays as is. */
static void percent_decode(const uint8_t *v, size_t n, char *out, size_t cap)
{
        size_t i = 0, j = 0;

        while (i < n && j + 1 < cap) {
                int hi, lo;

                if (v[i] == '%' && i + 2 < n && (hi = hexval(v[i + 1])) >= 0 &&
                    (lo = hexval(v[i + 2])) >= 0) {
                        out[j++] = (char)(hi << 4 | lo);
                        i += 3;
                } else {
                        out[j++] = (char)v[i++];
                }
        }
        out[j] = '\0';
}

/* HTTP status → gRPC code, for responses that are not 200 (the protocol's table). */
static enum kc_runtime_code http_status_to_code(int status)
{
        switch (status) {
        case 400:
                return KC_RUNTIME_INTERNAL;
        case 401:
                return KC_RUNTIME_UNAUTHENTICATED;
        case 403:
                return KC_RUNTIME_PERMISSION_DENIED;
        case 404:
                return KC_RUNTIME_UNIMPLEMENTED;
        case 429:
        case 502:
        case 503:
        case 504:
                return KC_RUNTIME_UNAVAILABLE;
        default:
                return KC_RUNTIME_UNKNOWN;
        }
}

/* RST_STREAM error code → gRPC code (the protocol's table). */
static enum kc_runtime_code h2_error_to_code(uint32_t error_code)
{
        switch (error_code) {
        case NGHTTP2_REFUSED_STREAM:
                return KC_RUNTIME_UNAVAILABLE;
        case NGHTTP2_CANCEL:
                return KC_RUNTIME_CANCELLED;
        case NGHTTP2_ENHANCE_YOUR_CALM:
                return KC_RUNTIME_RESOURCE_EXHAUSTED;
        case NGHTTP2_INADEQUATE_SECURITY:
                return KC_RUNTIME_PERMISSION_DENIED;
        default:
                return KC_RUNTIME_INTERNAL;
        }
}

static bool header_is(const uint8_t *name, size_t len, const char *lit)
{
        return len == strlen(lit) && memcmp(name, lit, len) == 0;
}

void kc__grpc_call_header(struct grpc_call *call, const uint8_t *name, size_t namelen,
                          const uint8_t *value, size_t valuelen)
{
        if (header_is(name, namelen, ":status")) {
                int st = 0;

                for (size_t i = 0; i < valuelen && i < 3 && st >= 0; i++)
                        st = value[i] >= '0' && value[i] <= '9' ? st * 10 + value[i] - '0' : -1;
                /* Anything but three digits is nonsense, reported as UNKNOWN. */
                call->http_status = valuelen == 3 && st >= 100 ? st : 999;
        } else if (header_is(name, namelen, "content-type")) {
                static const char grpc_ct[] = "application/grpc";
                size_t k = sizeof(grpc_ct) - 1;

                call->content_type_seen = true;
                call->content_type_ok = valuelen >= k && memcmp(value, grpc_ct, k) == 0 &&
                                        (valuelen == k || value[k] == '+' || value[k] == ';');
        } else if (header_is(name, namelen, "grpc-status")) {
                int st = 0;

                if (valuelen == 0 || valuelen > 3)
                        st = -2;
                for (size_t i = 0; i < valuelen && st >= 0; i++)
                        st = value[i] >= '0' && value[i] <= '9' ? st * 10 + value[i] - '0' : -2;
                call->grpc_status = st;
        } else if (header_is(name, namelen, "grpc-message")) {
                percent_decode(value, valuelen, call->grpc_message, sizeof(call->grpc_message));
        }
}

void kc__grpc_call_end_of_response(struct grpc_call *call)
{
        nghttp2_session *session = call->conn->session;

        if (call->aborted)
                return;
        if (call->http_status != 200) {
                if (call->http_status == 0)
                        kc__grpc_call_fail(call, KC_RUNTIME_INTERNAL,
                                           "malformed response: no :status");
                else
                        kc__grpc_call_fail(call, http_status_to_code(call->http_status),
                                           "unexpected HTTP status %d%s%s", call->http_status,
                                           call->grpc_message[0] ? ": " : "", call->grpc_message);
        } else if (!call->content_type_ok) {
                kc__grpc_call_fail(call, KC_RUNTIME_INTERNAL, "malformed response: %s",
                                   call->content_type_seen ? "content-type is not application/grpc"
                                                           : "no content-type");
        } else if (call->grpc_status == -1) {
                kc__grpc_call_fail(call, KC_RUNTIME_INTERNAL,
                                   "malformed response: the stream ended without grpc-status");
        } else if (call->grpc_status == -2) {
                kc__grpc_call_fail(call, KC_RUNTIME_INTERNAL,
                                   "malformed response: invalid grpc-status");
        } else if (call->grpc_status != 0) {
                enum kc_runtime_code code = call->grpc_status <= KC_RUNTIME_UNAUTHENTICATED
                                                    ? (enum kc_runtime_code)call->grpc_status
                                                    : KC_RUNTIME_UNKNOWN;

                if (call->grpc_message[0])
                        kc__grpc_call_fail(call, code, "%s", call->grpc_message);
                else
                        kc__grpc_call_fail(call, code, "grpc-status %d", call->grpc_status);
        } else if (call->hdr_got > 0 && call->hdr_got < GRPC_PREFIX) {
                kc__grpc_call_fail(
                        call, KC_RUNTIME_INTERNAL,
                        "malformed response: the stream ended inside a message prefix (%zu of "
                        "5 bytes)",
                        call->hdr_got);
        } else if (call->hdr_got > 0) {
                kc__grpc_call_fail(
                        call, KC_RUNTIME_INTERNAL,
                        "malformed response: the stream ended inside a message (length prefix "
                        "%zu, %zu bytes received)",
                        call->msg_len, call->msg_got);
        } else if (!call->streaming && call->n_msgs == 0) {
                kc__grpc_call_fail(
                        call, KC_RUNTIME_INTERNAL,
                        "malformed response: grpc-status OK without a message on a unary call");
        } else {
                kc__grpc_call_complete(call, 0, NULL);
        }
        /* Our request may still be on its way: the server no longer wants it. */
        if (call->opened && !nghttp2_session_get_stream_local_close(session, call->stream_id))
                kc__grpc_call_reset(call, NGHTTP2_CANCEL);
}

void kc__grpc_call_closed_early(struct grpc_call *call, uint32_t error_code)
{
        if (call->aborted)
                return;
        if (error_code == NGHTTP2_NO_ERROR)
                kc__grpc_call_fail(call, KC_RUNTIME_INTERNAL,
                                   "malformed response: the stream closed without a complete "
                                   "response");
        else
                kc__grpc_call_fail(call, h2_error_to_code(error_code),
                                   "HTTP/2 stream reset with %s%s%s",
                                   nghttp2_http2_strerror(error_code), call->invalid ? ": " : "",
                                   call->invalid ? call->invalid : "");
}
