/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_grpc_frames: the server's side of a gRPC connection, fed to the CRI
 * client's real nghttp2 session (runtime/cri/grpc*.c, through
 * kc_test_grpc_run_canned() of tests/harness/grpc_canned.c):
 * length-prefixed message reassembly across DATA frames and chunk
 * boundaries, :status, content-type, grpc-status, the percent-decoded
 * grpc-message, Trailers-Only responses, RST_STREAM, GOAWAY and plain
 * HTTP/2 garbage, for a unary call and for a server stream.
 *
 * Input: byte 0 is the mode (bit 0: a server stream, else unary; bit 1: no
 * automatic server SETTINGS first; bits 2-7: feed the session this many
 * bytes at a time, 0 = all at once). Then records, each
 *   [op] [flags] [length: 2 bytes big-endian] [payload]
 * op bits 0-3: the frame type; bits 4-5: the stream (1, 0, 3, 2^31-1);
 * bit 6: a HEADERS payload is sent as is (raw HPACK), else it is lines
 * "name=value" separated by '\n' that nghttp2's encoder packs; bit 7: a
 * DATA payload gets a gRPC message prefix. flags are the frame's flags.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cri/grpc.h"
#include "grpc_canned.h"
#include "h2_frames.h"
#include "runtime/error.h"

static const uint32_t streams[4] = { 1, 0, 3, 0x7fffffff };

/* "a=b\nc=d" -> nghttp2_nv pointing into @p p (no copies). */
static size_t parse_headers(const uint8_t *p, size_t n, nghttp2_nv *nva, size_t max)
{
        size_t k = 0, i = 0;

        while (i < n && k < max) {
                const uint8_t *line = p + i, *eq, *end;
                size_t len;

                end = memchr(line, '\n', n - i);
                len = end ? (size_t)(end - line) : n - i;
                i += len + 1;
                eq = len > 1 ? memchr(line + 1, '=', len - 1) : NULL;
                nva[k++] = (nghttp2_nv){
                        .name = (uint8_t *)line,
                        .namelen = eq ? (size_t)(eq - line) : len,
                        .value = eq ? (uint8_t *)eq + 1 : (uint8_t *)"",
                        .valuelen = eq ? len - (size_t)(eq - line) - 1 : 0,
                        .flags = NGHTTP2_NV_FLAG_NONE,
                };
        }
        return k;
}

static int build(const uint8_t *data, size_t size, struct h2_buf *out)
{
        nghttp2_hd_deflater *d = NULL;
        size_t i = 1;
        int r = 0;

        if (nghttp2_hd_deflate_new(&d, 4096) != 0)
                return -1;
        if (!(data[0] & 2))
                r = h2_preface(out);
        while (r == 0 && i + 4 <= size) {
                uint8_t op = data[i], flags = data[i + 1], type = op & 0x0f;
                uint32_t stream = streams[op >> 4 & 3];
                size_t n = (size_t)data[i + 2] << 8 | data[i + 3];
                const uint8_t *payload = data + i + 4;

                i += 4;
                if (n > size - i)
                        n = size - i;
                i += n;
                if (type == NGHTTP2_HEADERS && !(op & 0x40)) {
                        nghttp2_nv nva[64];
                        size_t k = parse_headers(payload, n, nva, 64);

                        r = h2_headers(out, d, flags, stream, nva, k);
                        /* The encoder rejects some names (e.g. empty ones): send none then. */
                        if (r < 0)
                                r = 0;
                } else if (type == NGHTTP2_DATA && (op & 0x80)) {
                        r = h2_grpc_data(out, flags, stream, payload, n);
                } else {
                        r = h2_frame(out, type, flags, stream, payload, n);
                }
        }
        nghttp2_hd_deflate_del(d);
        return r;
}

static void on_message(void *userdata, const uint8_t *msg, size_t len)
{
        size_t *sum = userdata;

        if (len > KC_GRPC_MAX_MESSAGE)
                abort();
        /* Touch every byte: ASan checks that the message is all there. */
        for (size_t i = 0; i < len; i++)
                *sum += msg[i];
}

static void check_error(int r, const struct kc_runtime_error *err)
{
        if (r == -EDEADLK) {
                fprintf(stderr, "the call never ended: %s\n", err->message);
                abort();
        }
        if (err->code == KC_RUNTIME_OK || r != kc_grpc_code_to_errno(err->code) ||
            !memchr(err->message, '\0', sizeof(err->message)) || !err->message[0]) {
                fprintf(stderr, "inconsistent error: r=%d code=%d\n", r, (int)err->code);
                abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct h2_buf b = { 0 };
        struct kc_runtime_error err = { 0 };
        uint8_t *resp = NULL;
        size_t resp_len = 0, sum = 0, chunk;
        bool streaming;
        int r;

        if (size < 1)
                return 0;
        streaming = data[0] & 1;
        chunk = data[0] >> 2;
        if (build(data, size, &b) < 0) {
                free(b.p);
                return 0;
        }
        r = kc_test_grpc_run_canned(b.p, b.len, chunk, streaming ? on_message : NULL, &sum, &resp,
                                    &resp_len, &err);
        if (r < 0) {
                check_error(r, &err);
        } else if (r > 0 || (!streaming && resp_len > KC_GRPC_MAX_MESSAGE) ||
                   (!streaming && resp_len > 0 && !resp)) {
                abort();
        } else if (!streaming) {
                on_message(&sum, resp, resp_len);
        }
        free(resp);
        free(b.p);
        return 0;
}
