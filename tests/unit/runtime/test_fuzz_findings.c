/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What tests/fuzz found in runtime/, one regression test each, and the
 * test-only gRPC entry point kc_test_grpc_run_canned() (tests/harness/
 * grpc_canned.c) that fuzz_grpc_frames drives: it must judge canned server
 * bytes exactly as a real connection's responses (test_grpc.c covers those
 * over a socket).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../fuzz/h2_frames.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "cri/grpc.h"
#include "grpc_canned.h"
#include "fixture.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/sim.h"

/* ------------------------------------------------------------------------ */
/* kc_test_grpc_run_canned()                                                      */

struct canned {
        struct h2_buf b;
        nghttp2_hd_deflater *d;
};

static void canned_init(struct canned *k, bool preface)
{
        memset(k, 0, sizeof(*k));
        assert_int_equal(nghttp2_hd_deflate_new(&k->d, 4096), 0);
        if (preface)
                assert_int_equal(h2_preface(&k->b), 0);
}

static void canned_done(struct canned *k)
{
        nghttp2_hd_deflate_del(k->d);
        free(k->b.p);
}

static void ok_headers(struct canned *k)
{
        nghttp2_nv nv[] = { H2_NV(":status", "200"), H2_NV("content-type", "application/grpc") };

        assert_int_equal(h2_headers(&k->b, k->d, NGHTTP2_FLAG_END_HEADERS, 1, nv, 2), 0);
}

static void trailers(struct canned *k, const char *status, const char *message)
{
        nghttp2_nv nv[] = { H2_NV("grpc-status", status),
                            H2_NV("grpc-message", message ? message : "") };

        assert_int_equal(h2_headers(&k->b, k->d, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM,
                                    1, nv, message ? 2 : 1),
                         0);
}

static int unary(struct canned *k, size_t chunk, uint8_t **resp, size_t *len,
                 struct kc_runtime_error *err)
{
        *resp = NULL;
        *len = 0;
        memset(err, 0, sizeof(*err));
        return kc_test_grpc_run_canned(k->b.p, k->b.len, chunk, NULL, NULL, resp, len, err);
}

static void test_canned_unary_ok(void **state)
{
        static const size_t chunks[] = { 0, 1, 3, 7, 4096 };
        struct kc_runtime_error err;
        struct canned k;
        uint8_t *resp;
        size_t len;

        (void)state;
        canned_init(&k, true);
        ok_headers(&k);
        assert_int_equal(h2_grpc_data(&k.b, 0, 1, "\x0a\x05hello", 7), 0);
        trailers(&k, "0", NULL);
        /* However the bytes are cut, the same message comes out. */
        for (size_t i = 0; i < KC_ELEMENTSOF(chunks); i++) {
                assert_int_equal(unary(&k, chunks[i], &resp, &len, &err), 0);
                assert_int_equal(len, 7);
                assert_memory_equal(resp, "\x0a\x05hello", 7);
                free(resp);
        }
        canned_done(&k);
}

static void test_canned_split_prefix(void **state)
{
        struct kc_runtime_error err;
        struct canned k;
        uint8_t *resp;
        size_t len;

        (void)state;
        canned_init(&k, true);
        ok_headers(&k);
        /* The 5-byte prefix across two DATA frames, the message across a third. */
        assert_int_equal(h2_frame(&k.b, NGHTTP2_DATA, 0, 1, "\x00\x00\x00", 3), 0);
        assert_int_equal(h2_frame(&k.b, NGHTTP2_DATA, 0, 1,
                                  "\x00\x04"
                                  "ab",
                                  4),
                         0);
        assert_int_equal(h2_frame(&k.b, NGHTTP2_DATA, 0, 1, "cd", 2), 0);
        trailers(&k, "0", NULL);
        assert_int_equal(unary(&k, 0, &resp, &len, &err), 0);
        assert_int_equal(len, 4);
        assert_memory_equal(resp, "abcd", 4);
        free(resp);
        canned_done(&k);
}

static void test_canned_trailers_only(void **state)
{
        nghttp2_nv nv[] = {
                H2_NV(":status", "200"),
                H2_NV("content-type", "application/grpc"),
                H2_NV("grpc-status", "5"),
                H2_NV("grpc-message", "container%20%22abc%22%20not%20found%zz%4"),
        };
        struct kc_runtime_error err;
        struct canned k;
        uint8_t *resp;
        size_t len;

        (void)state;
        canned_init(&k, true);
        assert_int_equal(h2_headers(&k.b, k.d, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM,
                                    1, nv, KC_ELEMENTSOF(nv)),
                         0);
        assert_int_equal(unary(&k, 0, &resp, &len, &err), -ENOENT);
        assert_int_equal(err.code, KC_RUNTIME_NOT_FOUND);
        /* Percent-decoded; a '%' without two hex digits stays. */
        assert_string_equal(err.message, "container \"abc\" not found%zz%4");
        canned_done(&k);
}

static void test_canned_malformed(void **state)
{
        struct kc_runtime_error err;
        struct canned k;
        uint8_t *resp;
        size_t len;

        (void)state;
        /* Two messages on a unary call. */
        canned_init(&k, true);
        ok_headers(&k);
        assert_int_equal(h2_grpc_data(&k.b, 0, 1, "a", 1), 0);
        assert_int_equal(h2_grpc_data(&k.b, 0, 1, "b", 1), 0);
        trailers(&k, "0", NULL);
        assert_int_equal(unary(&k, 0, &resp, &len, &err), -EPROTO);
        assert_non_null(strstr(err.message, "more than one message"));
        canned_done(&k);

        /* The connection closes before grpc-status. */
        canned_init(&k, true);
        ok_headers(&k);
        assert_int_equal(h2_grpc_data(&k.b, 0, 1, "a", 1), 0);
        assert_int_equal(unary(&k, 0, &resp, &len, &err), -ECONNREFUSED);
        assert_int_equal(err.code, KC_RUNTIME_UNAVAILABLE);
        canned_done(&k);

        /* No server preface: a protocol error. */
        canned_init(&k, false);
        ok_headers(&k);
        assert_int_equal(unary(&k, 0, &resp, &len, &err), -EPROTO);
        assert_non_null(strstr(err.message, "HTTP/2"));
        canned_done(&k);
}

struct msgs {
        size_t n;
        size_t total;
};

static void on_message(void *userdata, const uint8_t *msg, size_t len)
{
        struct msgs *m = userdata;

        (void)msg;
        m->n++;
        m->total += len;
}

static void test_canned_stream(void **state)
{
        struct kc_runtime_error err = { 0 };
        struct msgs m = { 0 };
        struct canned k;

        (void)state;
        canned_init(&k, true);
        ok_headers(&k);
        /* Two messages in one frame, then one alone. */
        assert_int_equal(h2_frame(&k.b, NGHTTP2_DATA, 0, 1,
                                  "\x00\x00\x00\x00\x02xy\x00\x00\x00\x00\x00", 12),
                         0);
        assert_int_equal(h2_grpc_data(&k.b, 0, 1, "abc", 3), 0);
        trailers(&k, "14", "shutting%20down");
        assert_int_equal(
                kc_test_grpc_run_canned(k.b.p, k.b.len, 2, on_message, &m, NULL, NULL, &err),
                -ECONNREFUSED);
        assert_int_equal(err.code, KC_RUNTIME_UNAVAILABLE);
        assert_string_equal(err.message, "shutting down");
        assert_int_equal(m.n, 3);
        assert_int_equal(m.total, 5);
        canned_done(&k);
}

/* ------------------------------------------------------------------------ */
/* Findings                                                                   */

/*
 * fuzz_replay: a sim whose first listed pod has no containers and no
 * sandboxes did arithmetic on a NULL scratch array (NULL + 0, undefined
 * behaviour; clang's UBSan reports it, gcc's does not). The pod must still
 * be listed, empty.
 */
static void test_sim_pod_without_containers(void **state)
{
        static const struct kc_sim_pod_spec empty = { .id = "p0",
                                                      .name = "empty",
                                                      .namespace = "ns" };
        struct kc_runtime_error err = { 0 };
        struct kc_pod_list l = { 0 };
        struct kc_pod_runtime pr;
        struct kc_clock *clock;
        struct kc_sim *sim;

        (void)state;
        sim_env_new(&clock, &sim, NULL);
        pr = kc_sim_pod_runtime(sim);
        assert_int_equal(kc_sim_set_pods(sim, &empty, 1), 0);
        assert_int_equal(pr.ops->get_pods(pr.self, true, &l, &err), 0);
        assert_int_equal(l.n, 1);
        assert_string_equal(l.pods[0]->id, "p0");
        assert_int_equal(l.pods[0]->n_containers, 0);
        assert_int_equal(l.pods[0]->n_sandboxes, 0);
        kc_pod_list_done(&l);
        sim_env_free(clock, sim);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_canned_unary_ok),
                cmocka_unit_test(test_canned_split_prefix),
                cmocka_unit_test(test_canned_trailers_only),
                cmocka_unit_test(test_canned_malformed),
                cmocka_unit_test(test_canned_stream),
                cmocka_unit_test(test_sim_pod_without_containers),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
