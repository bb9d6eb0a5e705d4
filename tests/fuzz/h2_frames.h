/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Builds the server's side of an HTTP/2 connection in memory, for
 * kc_test_grpc_run_canned(): raw frames, and HEADERS whose header block
 * nghttp2's HPACK encoder writes (one encoder per connection, as a real server has).
 * Shared by the fuzz target fuzz_grpc_frames and tests/unit/runtime.
 */
#pragma once

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

struct h2_buf {
        uint8_t *p;
        size_t len, cap;
};

static inline int h2_put(struct h2_buf *b, const void *d, size_t n)
{
        if (b->len + n > b->cap) {
                size_t cap = b->cap ? b->cap : 256;
                uint8_t *p;

                while (cap < b->len + n)
                        cap *= 2;
                p = realloc(b->p, cap);
                if (!p)
                        return -1;
                b->p = p;
                b->cap = cap;
        }
        if (n)
                memcpy(b->p + b->len, d, n);
        b->len += n;
        return 0;
}

/* One frame: the 9-byte header (length, type, flags, stream id) and @p payload. */
static inline int h2_frame(struct h2_buf *b, uint8_t type, uint8_t flags, uint32_t stream,
                           const void *payload, size_t n)
{
        uint8_t h[9] = {
                (uint8_t)(n >> 16),
                (uint8_t)(n >> 8),
                (uint8_t)n,
                type,
                flags,
                (uint8_t)(stream >> 24 & 0x7f),
                (uint8_t)(stream >> 16),
                (uint8_t)(stream >> 8),
                (uint8_t)stream,
        };

        if (n > 0xffffff)
                return -1;
        return h2_put(b, h, sizeof(h)) < 0 ? -1 : h2_put(b, payload, n);
}

/* The server's connection preface: an empty SETTINGS frame. */
static inline int h2_preface(struct h2_buf *b)
{
        return h2_frame(b, NGHTTP2_SETTINGS, 0, 0, NULL, 0);
}

/* A HEADERS frame with @p nva HPACK-encoded by @p d (flags as given: END_HEADERS is 0x4). */
static inline int h2_headers(struct h2_buf *b, nghttp2_hd_deflater *d, uint8_t flags,
                             uint32_t stream, const nghttp2_nv *nva, size_t n)
{
        size_t bound = nghttp2_hd_deflate_bound(d, nva, n);
        uint8_t *blk = malloc(bound ? bound : 1);
        ssize_t k;
        int r;

        if (!blk)
                return -1;
        k = nghttp2_hd_deflate_hd(d, blk, bound, nva, n);
        r = k < 0 ? -1 : h2_frame(b, NGHTTP2_HEADERS, flags, stream, blk, (size_t)k);
        free(blk);
        return r;
}

/* A gRPC length-prefixed message in a DATA frame of its own. */
static inline int h2_grpc_data(struct h2_buf *b, uint8_t flags, uint32_t stream, const void *msg,
                               size_t n)
{
        uint8_t *p = malloc(5 + n);
        int r;

        if (!p)
                return -1;
        p[0] = 0;
        p[1] = (uint8_t)(n >> 24);
        p[2] = (uint8_t)(n >> 16);
        p[3] = (uint8_t)(n >> 8);
        p[4] = (uint8_t)n;
        if (n)
                memcpy(p + 5, msg, n);
        r = h2_frame(b, NGHTTP2_DATA, flags, stream, p, 5 + n);
        free(p);
        return r;
}

#define H2_NV(n_, v_)                                                                              \
        ((nghttp2_nv){ .name = (uint8_t *)(n_),                                                    \
                       .value = (uint8_t *)(v_),                                                   \
                       .namelen = strlen(n_),                                                      \
                       .valuelen = strlen(v_),                                                     \
                       .flags = NGHTTP2_NV_FLAG_NONE })
