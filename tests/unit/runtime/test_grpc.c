/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gRPC transport (runtime/cri/grpc.c) against an in-process h2c server
 * (fake_grpc_server.h) on a unix socket in a temporary directory: unary
 * calls, Trailers-Only errors, deadlines, cancellation, server streaming,
 * reconnects, GOAWAY, size limits, malformed responses and many concurrent
 * callers. Every test ends by checking that the client sent no PING.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/cancel.h"
#include "core/cleanup.h"
#include "cri/grpc.h"
#include "fake_grpc_server.h"
#include "kc_test.h"
#include "runtime/error.h"

#define MS KC_NSEC_PER_MSEC
#define SEC KC_NSEC_PER_SEC
#define MIB (1024 * 1024)

struct fixture {
        int n_fds; /* open before the fixture: the same number must be open after it */
        char dir[64];
        char sock[128];
        uint32_t max_streams;
        struct fs_server *srv;
        struct kc_grpc_client *c;
};

static int count_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        int n = 0;

        assert_non_null(d);
        while ((de = readdir(d)))
                n += de->d_name[0] != '.';
        closedir(d);
        return n;
}

static int setup_with(void **state, uint32_t max_streams)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        f->n_fds = count_fds();
        snprintf(f->dir, sizeof(f->dir), "/tmp/kc-grpc-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        snprintf(f->sock, sizeof(f->sock), "%s/cri.sock", f->dir);
        f->max_streams = max_streams;
        f->srv = fs_start(f->sock, max_streams);
        assert_int_equal(kc_grpc_client_new(f->sock, &f->c), 0);
        *state = f;
        return 0;
}

static int setup(void **state)
{
        return setup_with(state, 0);
}

static int setup_one_stream(void **state)
{
        return setup_with(state, 1);
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        int pings = f->srv ? atomic_load(&f->srv->frames[NGHTTP2_PING]) : 0;
        int n_fds = f->n_fds;

        f->c = kc_grpc_client_free(f->c);
        fs_stop(f->srv);
        rmdir(f->dir);
        free(f);
        /* The client never pings (grpc-go answers frequent pings with GOAWAY). */
        assert_int_equal(pings, 0);
        /* Every socket and eventfd was closed. */
        assert_int_equal(count_fds(), n_fds);
        return 0;
}

static char *method_path(const char *method)
{
        static _Thread_local char buf[128];

        snprintf(buf, sizeof(buf), "/test.Echo/%s", method);
        return buf;
}

static int call(struct fixture *f, const char *method, const void *req, size_t len,
                int64_t timeout_ns, struct kc_cancel *ctx, uint8_t **resp, size_t *resp_len,
                struct kc_runtime_error *err)
{
        return kc_grpc_unary(f->c, method_path(method), req, len, timeout_ns, ctx, resp, resp_len,
                             err);
}

/* A unary call on its own thread. */
struct async_call {
        struct fixture *f;
        const char *method;
        int64_t timeout_ns;
        struct kc_cancel *ctx;
        pthread_t thread;
        atomic_bool done;
        int r;
        struct kc_runtime_error err;
        uint8_t *resp;
        size_t resp_len;
        int64_t elapsed_ns;
};

static void *async_main(void *arg)
{
        struct async_call *a = arg;
        int64_t t0 = kc_test_mono_ns();

        a->r = call(a->f, a->method, "x", 1, a->timeout_ns, a->ctx, &a->resp, &a->resp_len,
                    &a->err);
        a->elapsed_ns = kc_test_mono_ns() - t0;
        atomic_store(&a->done, true);
        return NULL;
}

static void async_start(struct async_call *a, struct fixture *f, const char *method,
                        int64_t timeout_ns, struct kc_cancel *ctx)
{
        *a = (struct async_call){ .f = f, .method = method, .timeout_ns = timeout_ns, .ctx = ctx };
        assert_int_equal(pthread_create(&a->thread, NULL, async_main, a), 0);
}

static void async_join(struct async_call *a)
{
        assert_int_equal(pthread_join(a->thread, NULL), 0);
        free(a->resp);
        a->resp = NULL;
}

static int64_t scaled_ms(int64_t ms)
{
        return (int64_t)(ms * kc_test_timeout_multiplier());
}

/* ------------------------------------------------------------------------ */

static void test_code_to_errno(void **state)
{
        static const struct {
                enum kc_runtime_code code;
                int r;
        } table[] = {
                { KC_RUNTIME_OK, 0 },
                { KC_RUNTIME_CANCELLED, -ECANCELED },
                { KC_RUNTIME_UNKNOWN, -EIO },
                { KC_RUNTIME_INVALID_ARGUMENT, -EINVAL },
                { KC_RUNTIME_DEADLINE_EXCEEDED, -ETIMEDOUT },
                { KC_RUNTIME_NOT_FOUND, -ENOENT },
                { KC_RUNTIME_ALREADY_EXISTS, -EEXIST },
                { KC_RUNTIME_PERMISSION_DENIED, -EACCES },
                { KC_RUNTIME_RESOURCE_EXHAUSTED, -E2BIG },
                { KC_RUNTIME_FAILED_PRECONDITION, -EBUSY },
                { KC_RUNTIME_ABORTED, -ECONNABORTED },
                { KC_RUNTIME_OUT_OF_RANGE, -ERANGE },
                { KC_RUNTIME_UNIMPLEMENTED, -EOPNOTSUPP },
                { KC_RUNTIME_INTERNAL, -EPROTO },
                { KC_RUNTIME_UNAVAILABLE, -ECONNREFUSED },
                { KC_RUNTIME_DATA_LOSS, -EBADMSG },
                { KC_RUNTIME_UNAUTHENTICATED, -EPERM },
                { (enum kc_runtime_code)99, -EIO },
        };

        (void)state;
        for (size_t i = 0; i < KC_ELEMENTSOF(table); i++)
                assert_int_equal(kc_grpc_code_to_errno(table[i].code), table[i].r);
}

static void test_invalid_arguments(void **state)
{
        struct fixture *f = *state;
        struct kc_grpc_client *c = NULL;
        struct kc_runtime_error err = { 0 };
        struct kc_grpc_stream *s = NULL;
        char longpath[200];
        uint8_t *resp = NULL;
        size_t len = 0;

        memset(longpath, 'a', sizeof(longpath) - 1);
        longpath[0] = '/';
        longpath[sizeof(longpath) - 1] = '\0';
        assert_int_equal(kc_grpc_client_new(longpath, &c), -ENAMETOOLONG);
        assert_int_equal(kc_grpc_client_new("", &c), -EINVAL);
        assert_int_equal(kc_grpc_client_new(NULL, &c), -EINVAL);
        assert_null(c);
        assert_null(kc_grpc_client_free(NULL));
        assert_null(kc_grpc_stream_close(NULL));

        assert_int_equal(kc_grpc_unary(f->c, "no-slash", NULL, 0, SEC, NULL, &resp, &len, &err),
                         -EINVAL);
        assert_int_equal(err.code, KC_RUNTIME_INVALID_ARGUMENT);
        assert_int_equal(
                kc_grpc_unary(f->c, method_path("Echo"), NULL, 0, 0, NULL, &resp, &len, &err),
                -EINVAL);
        assert_int_equal(
                kc_grpc_unary(f->c, method_path("Echo"), NULL, 3, SEC, NULL, &resp, &len, &err),
                -EINVAL);
        assert_int_equal(kc_grpc_stream_open(f->c, method_path("Stream"), NULL, 0, NULL, NULL, NULL,
                                             &s, &err),
                         -EINVAL);
        assert_null(s);
        assert_null(resp);
        assert_int_equal(atomic_load(&f->srv->n_conns), 0);
}

static void test_echo(void **state)
{
        struct fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        uint8_t *resp = NULL;
        size_t len = 0;
        char v[256], *end;
        long long t;

        assert_int_equal(call(f, "Echo", "hello", 5, 5 * SEC, NULL, &resp, &len, &err), 0);
        assert_int_equal(len, 5);
        assert_memory_equal(resp, "hello", 5);
        free(resp);
        resp = NULL;

        /* The request headers containerd insists on. */
        fs_last(f->srv, ":path", v, sizeof(v));
        assert_string_equal(v, "/test.Echo/Echo");
        fs_last(f->srv, "content-type", v, sizeof(v));
        assert_string_equal(v, "application/grpc");
        fs_last(f->srv, "te", v, sizeof(v));
        assert_string_equal(v, "trailers");
        fs_last(f->srv, ":scheme", v, sizeof(v));
        assert_string_equal(v, "http");
        fs_last(f->srv, ":authority", v, sizeof(v));
        assert_string_equal(v, "localhost");
        /* grpc-timeout: at most 8 digits and a unit; 5 s fits in microseconds. */
        fs_last(f->srv, "grpc-timeout", v, sizeof(v));
        t = strtoll(v, &end, 10);
        assert_string_equal(end, "u");
        assert_true(end - v <= 8);
        assert_true(t > 4000000 && t <= 5000000);

        /* An empty request gets an empty response: NULL and 0. */
        len = 99;
        assert_int_equal(call(f, "Echo", NULL, 0, 5 * SEC, NULL, &resp, &len, &err), 0);
        assert_null(resp);
        assert_int_equal(len, 0);

        /* One connection for every call. */
        assert_int_equal(atomic_load(&f->srv->n_conns), 1);
}

static void test_split_frames(void **state)
{
        struct fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        uint8_t req[3000], *resp = NULL;
        size_t len = 0;

        for (size_t i = 0; i < sizeof(req); i++)
                req[i] = (uint8_t)(i * 13);
        /* The response arrives in 7-byte DATA frames: prefix and body split anywhere. */
        assert_int_equal(call(f, "Split", req, sizeof(req), 5 * SEC, NULL, &resp, &len, &err), 0);
        assert_int_equal(len, sizeof(req));
        assert_memory_equal(resp, req, sizeof(req));
        free(resp);
}

static void test_trailers_only_not_found(void **state)
{
        struct fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        uint8_t *resp = NULL;
        size_t len = 0;

        assert_int_equal(call(f, "NotFound", "x", 1, 5 * SEC, NULL, &resp, &len, &err), -ENOENT);
        assert_int_equal(err.code, KC_RUNTIME_NOT_FOUND);
        /* Percent-decoded; a '%' without two hex digits stays. */
        assert_string_equal(err.message, "pod \"x\" not found: 100% %zz");
        assert_null(resp);
}

static void test_unimplemented(void **state)
{
        struct fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        uint8_t *resp = NULL;
        size_t len = 0;

        assert_int_equal(call(f, "NoSuchMethod", NULL, 0, 5 * SEC, NULL, &resp, &len, &err),
                         -EOPNOTSUPP);
        assert_int_equal(err.code, KC_RUNTIME_UNIMPLEMENTED);
        assert_string_equal(err.message, "unknown method");
}

static void test_slow_call_does_not_block_fast_call(void **state)
{
        struct fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        struct async_call slow;
        uint8_t *resp = NULL;
        size_t len = 0;

        async_start(&slow, f, "Slow", 30 * SEC, NULL);
        assert_true(KC_TEST_WAIT_UNTIL(atomic_load(&f->srv->n_requests) >= 1, 5000));
        assert_int_equal(call(f, "Echo", "fast", 4, 5 * SEC, NULL, &resp, &len, &err), 0);
        /* The server holds the slow answer for 2 s: it is still pending. */
        assert_false(atomic_load(&slow.done));
        assert_int_equal(len, 4);
        free(resp);
        async_join(&slow);
        assert_int_equal(slow.r, 0);
        assert_int_equal(slow.resp_len, 1);
        assert_true(slow.elapsed_ns >= FS_SLOW_NS - 100 * MS);
}

static void test_deadline_exceeded(void **state)
{
        struct fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        uint8_t *resp = NULL;
        size_t len = 0;
        int64_t t0 = kc_test_mono_ns(), dt;

        assert_int_equal(call(f, "Hang", "x", 1, 200 * MS, NULL, &resp, &len, &err), -ETIMEDOUT);
        dt = kc_test_mono_ns() - t0;
        assert_int_equal(err.code, KC_RUNTIME_DEADLINE_EXCEEDED);
        assert_string_equal(err.message, "deadline exceeded after 200ms");
        assert_null(resp);
        assert_true(dt >= 200 * MS);
        /* The I/O thread's timer, not the caller's 1 s net. */
        assert_true(dt < scaled_ms(900) * MS);
        /* The stream was reset. */
        assert_true(
                KC_TEST_WAIT_UNTIL(atomic_load(&f->srv->frames[NGHTTP2_RST_STREAM]) >= 1, 5000));
        /* The connection is fine afterwards. */
        assert_int_equal(call(f, "Echo", "y", 1, 5 * SEC, NULL, &resp, &len, &err), 0);
        free(resp);
        assert_int_equal(atomic_load(&f->srv->n_conns), 1);
}

static void *trigger_later(void *arg)
{
        kc_test_sleep_ms(150);
        kc_cancel_trigger_mp(arg);
        return NULL;
}

static void test_cancel(void **state)
{
        struct fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        struct kc_cancel *ctx = NULL;
        uint8_t *resp = NULL;
        size_t len = 0;
        pthread_t th;
        int64_t t0, dt;

        assert_int_equal(kc_cancel_new(&ctx), 0);
        /* Already cancelled: nothing is sent (no connection even). */
        kc_cancel_trigger_mp(ctx);
        assert_int_equal(call(f, "Echo", "x", 1, 5 * SEC, ctx, &resp, &len, &err), -ECANCELED);
        assert_int_equal(err.code, KC_RUNTIME_CANCELLED);
        assert_int_equal(atomic_load(&f->srv->n_conns), 0);
        kc_cancel_free(ctx);

        /* Cancelled while in flight: the stream is reset. */
        assert_int_equal(kc_cancel_new(&ctx), 0);
        assert_int_equal(pthread_create(&th, NULL, trigger_later, ctx), 0);
        t0 = kc_test_mono_ns();
        assert_int_equal(call(f, "Hang", "x", 1, 30 * SEC, ctx, &resp, &len, &err), -ECANCELED);
        dt = kc_test_mono_ns() - t0;
        assert_int_equal(pthread_join(th, NULL), 0);
        assert_int_equal(err.code, KC_RUNTIME_CANCELLED);
        assert_null(resp);
        assert_true(dt >= 150 * MS && dt < scaled_ms(2000) * MS);
        assert_true(
                KC_TEST_WAIT_UNTIL(atomic_load(&f->srv->frames[NGHTTP2_RST_STREAM]) >= 1, 5000));
        kc_cancel_free(ctx);

        assert_int_equal(call(f, "Echo", "y", 1, 5 * SEC, NULL, &resp, &len, &err), 0);
        free(resp);
}

/* A server stream's observer: callbacks run on the client's I/O thread. */
struct stream_obs {
        pthread_mutex_t lock;
        char msgs[64][32];
        size_t n_msgs;
        int n_close;
        int close_r;
        struct kc_runtime_error close_err;
};

static void obs_message(void *userdata, const uint8_t *msg, size_t len)
{
        struct stream_obs *o = userdata;

        pthread_mutex_lock(&o->lock);
        if (o->n_msgs < KC_ELEMENTSOF(o->msgs))
                snprintf(o->msgs[o->n_msgs], sizeof(o->msgs[0]), "%.*s", (int)len,
                         (const char *)msg);
        o->n_msgs++;
        pthread_mutex_unlock(&o->lock);
}

static void obs_close(void *userdata, int r, const struct kc_runtime_error *err)
{
        struct stream_obs *o = userdata;

        pthread_mutex_lock(&o->lock);
        o->n_close++;
        o->close_r = r;
        if (err)
                o->close_err = *err;
        pthread_mutex_unlock(&o->lock);
}

static size_t obs_msgs(struct stream_obs *o)
{
        size_t n;

        pthread_mutex_lock(&o->lock);
        n = o->n_msgs;
        pthread_mutex_unlock(&o->lock);
        return n;
}

static int obs_closes(struct stream_obs *o)
{
        int n;

        pthread_mutex_lock(&o->lock);
        n = o->n_close;
        pthread_mutex_unlock(&o->lock);
        return n;
}

static void obs_init(struct stream_obs *o)
{
        memset(o, 0, sizeof(*o));
        pthread_mutex_init(&o->lock, NULL);
}

static void test_stream_messages_then_ok(void **state)
{
        struct fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        struct kc_grpc_stream *s = NULL;
        struct stream_obs o;
        const uint8_t n_be[4] = { 0, 0, 0, 50 };

        obs_init(&o);
        assert_int_equal(kc_grpc_stream_open(f->c, method_path("Stream"), n_be, sizeof(n_be),
                                             obs_message, obs_close, &o, &s, &err),
                         0);
        assert_non_null(s);
        assert_true(KC_TEST_WAIT_UNTIL(obs_closes(&o) == 1, 5000));
        pthread_mutex_lock(&o.lock);
        assert_int_equal(o.n_msgs, 50);
        for (size_t i = 0; i < 50; i++) {
                char want[32];

                snprintf(want, sizeof(want), "message %zu", i);
                assert_string_equal(o.msgs[i], want);
        }
        assert_int_equal(o.close_r, 0);
        pthread_mutex_unlock(&o.lock);
        s = kc_grpc_stream_close(s);
        assert_null(s);
        assert_int_equal(obs_closes(&o), 1);

        /* An unknown method closes the stream with its status. */
        obs_init(&o);
        assert_int_equal(kc_grpc_stream_open(f->c, method_path("GetContainerEvents"), NULL, 0,
                                             obs_message, obs_close, &o, &s, &err),
                         0);
        assert_true(KC_TEST_WAIT_UNTIL(obs_closes(&o) == 1, 5000));
        kc_grpc_stream_close(s);
        assert_int_equal(o.close_r, -EOPNOTSUPP);
        assert_int_equal(o.close_err.code, KC_RUNTIME_UNIMPLEMENTED);
        assert_int_equal(o.n_msgs, 0);
        assert_int_equal(o.n_close, 1);
}

static void test_stream_close_mid_stream(void **state)
{
        struct fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        struct kc_grpc_stream *s = NULL;
        struct stream_obs o;

        obs_init(&o);
        assert_int_equal(kc_grpc_stream_open(f->c, method_path("StreamHang"), NULL, 0, obs_message,
                                             obs_close, &o, &s, &err),
                         0);
        assert_true(KC_TEST_WAIT_UNTIL(obs_msgs(&o) == 3, 5000));
        assert_int_equal(obs_closes(&o), 0);
        s = kc_grpc_stream_close(s);
        /* on_close ran exactly once, before kc_grpc_stream_close() returned. */
        assert_int_equal(obs_closes(&o), 1);
        assert_int_equal(o.close_r, -ECANCELED);
        assert_int_equal(o.close_err.code, KC_RUNTIME_CANCELLED);
        assert_int_equal(obs_msgs(&o), 3);
        assert_true(
                KC_TEST_WAIT_UNTIL(atomic_load(&f->srv->frames[NGHTTP2_RST_STREAM]) >= 1, 5000));
}

static void test_server_restart(void **state)
{
        struct fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        struct kc_grpc_stream *s = NULL;
        struct stream_obs o;
        struct async_call hang;
        uint8_t *resp = NULL;
        size_t len = 0;
        int64_t t0;

        assert_int_equal(call(f, "Echo", "a", 1, 5 * SEC, NULL, &resp, &len, &err), 0);
        free(resp);
        resp = NULL;
        async_start(&hang, f, "Hang", 60 * SEC, NULL);
        obs_init(&o);
        assert_int_equal(kc_grpc_stream_open(f->c, method_path("StreamHang"), NULL, 0, obs_message,
                                             obs_close, &o, &s, &err),
                         0);
        assert_true(KC_TEST_WAIT_UNTIL(atomic_load(&f->srv->n_requests) >= 3, 5000));

        /* The runtime goes away: the calls in flight fail UNAVAILABLE promptly. */
        fs_stop(f->srv);
        f->srv = NULL;
        assert_true(KC_TEST_WAIT_UNTIL(atomic_load(&hang.done), 2000));
        async_join(&hang);
        assert_int_equal(hang.r, -ECONNREFUSED);
        assert_int_equal(hang.err.code, KC_RUNTIME_UNAVAILABLE);
        assert_true(KC_TEST_WAIT_UNTIL(obs_closes(&o) == 1, 2000));
        assert_int_equal(o.close_r, -ECONNREFUSED);
        assert_int_equal(o.close_err.code, KC_RUNTIME_UNAVAILABLE);
        s = kc_grpc_stream_close(s);
        assert_int_equal(obs_closes(&o), 1);

        /* While it is down, calls fail at once, naming the socket. */
        t0 = kc_test_mono_ns();
        assert_int_equal(call(f, "Echo", "b", 1, 5 * SEC, NULL, &resp, &len, &err), -ECONNREFUSED);
        assert_true(kc_test_mono_ns() - t0 < scaled_ms(1000) * MS);
        assert_int_equal(err.code, KC_RUNTIME_UNAVAILABLE);
        assert_non_null(strstr(err.message, f->sock));
        obs_init(&o);
        assert_int_equal(kc_grpc_stream_open(f->c, method_path("StreamHang"), NULL, 0, obs_message,
                                             obs_close, &o, &s, &err),
                         -ECONNREFUSED);
        assert_null(s);
        assert_int_equal(obs_closes(&o), 0);

        /* Back on the same path: the next call reconnects. */
        f->srv = fs_start(f->sock, f->max_streams);
        assert_int_equal(call(f, "Echo", "c", 1, 5 * SEC, NULL, &resp, &len, &err), 0);
        assert_int_equal(len, 1);
        assert_memory_equal(resp, "c", 1);
        free(resp);
        assert_int_equal(atomic_load(&f->srv->n_conns), 1);
}

static void test_no_server(void **state)
{
        struct fixture *f = *state;
        struct kc_grpc_client *c = NULL;
        struct kc_runtime_error err = { 0 };
        char path[160];
        uint8_t *resp = NULL;
        size_t len = 0;

        snprintf(path, sizeof(path), "%s/none.sock", f->dir);
        assert_int_equal(kc_grpc_client_new(path, &c), 0);
        assert_int_equal(
                kc_grpc_unary(c, "/test.Echo/Echo", NULL, 0, 5 * SEC, NULL, &resp, &len, &err),
                -ECONNREFUSED);
        assert_int_equal(err.code, KC_RUNTIME_UNAVAILABLE);
        assert_non_null(strstr(err.message, "No such file or directory"));
        kc_grpc_client_free(c);
}

static void test_response_limits(void **state)
{
        struct fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        uint8_t be[8], *resp = NULL;
        size_t len = 0;
        uint64_t sizes[] = { 10 * MIB, KC_GRPC_MAX_MESSAGE };

        /* 10 MiB and exactly 16 MiB work: flow-control windows are returned. */
        for (size_t k = 0; k < KC_ELEMENTSOF(sizes); k++) {
                for (int i = 0; i < 8; i++)
                        be[i] = (uint8_t)(sizes[k] >> (56 - 8 * i));
                assert_int_equal(call(f, "Big", be, 8, 60 * SEC, NULL, &resp, &len, &err), 0);
                assert_int_equal(len, sizes[k]);
                for (size_t i = 0; i < len; i++)
                        if (resp[i] != (uint8_t)(i * 7 + 3))
                                fail_msg("byte %zu of %zu is wrong", i, len);
                free(resp);
                resp = NULL;
        }
        assert_true(atomic_load(&f->srv->frames[NGHTTP2_WINDOW_UPDATE]) > 0);

        /* One byte more: RESOURCE_EXHAUSTED from the prefix alone. */
        for (int i = 0; i < 8; i++)
                be[i] = (uint8_t)((uint64_t)(KC_GRPC_MAX_MESSAGE + 1) >> (56 - 8 * i));
        assert_int_equal(call(f, "Big", be, 8, 60 * SEC, NULL, &resp, &len, &err), -E2BIG);
        assert_int_equal(err.code, KC_RUNTIME_RESOURCE_EXHAUSTED);
        assert_string_equal(err.message,
                            "received message larger than max (16777217 vs. 16777216)");
        assert_null(resp);

        /* The connection survives. */
        assert_int_equal(call(f, "Echo", "z", 1, 5 * SEC, NULL, &resp, &len, &err), 0);
        free(resp);
        assert_int_equal(atomic_load(&f->srv->n_conns), 1);
}

static void test_request_limits(void **state)
{
        struct fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        uint8_t *req, *resp = NULL;
        size_t len = 0;

        req = malloc(KC_GRPC_MAX_MESSAGE + 1);
        assert_non_null(req);
        for (size_t i = 0; i < KC_GRPC_MAX_MESSAGE + 1; i++)
                req[i] = (uint8_t)(i * 5);
        assert_int_equal(
                call(f, "Echo", req, KC_GRPC_MAX_MESSAGE + 1, 5 * SEC, NULL, &resp, &len, &err),
                -E2BIG);
        assert_int_equal(err.code, KC_RUNTIME_RESOURCE_EXHAUSTED);
        assert_string_equal(err.message,
                            "trying to send message larger than max (16777217 vs. 16777216)");
        assert_int_equal(atomic_load(&f->srv->n_conns), 0);

        /* 16 MiB exactly goes out (the server's 64 KiB window is refilled) and comes back. */
        assert_int_equal(
                call(f, "Echo", req, KC_GRPC_MAX_MESSAGE, 60 * SEC, NULL, &resp, &len, &err), 0);
        assert_int_equal(len, KC_GRPC_MAX_MESSAGE);
        assert_memory_equal(resp, req, KC_GRPC_MAX_MESSAGE);
        free(resp);
        free(req);
}

static void test_malformed_responses(void **state)
{
        static const struct {
                const char *method;
                enum kc_runtime_code code;
                const char *message;
        } cases[] = {
                { "Compressed", KC_RUNTIME_INTERNAL,
                  "malformed response: compressed flag set, but no grpc-encoding was negotiated" },
                { "Truncated", KC_RUNTIME_INTERNAL,
                  "malformed response: the stream ended inside a message (length prefix 100, 10 "
                  "bytes received)" },
                { "TwoMessages", KC_RUNTIME_INTERNAL,
                  "malformed response: more than one message on a unary call" },
                { "NoStatus", KC_RUNTIME_INTERNAL,
                  "malformed response: the stream ended without grpc-status" },
                { "Empty", KC_RUNTIME_INTERNAL,
                  "malformed response: grpc-status OK without a message on a unary call" },
                { "BadStatus", KC_RUNTIME_INTERNAL, "malformed response: invalid grpc-status" },
                { "Http503", KC_RUNTIME_UNAVAILABLE, "unexpected HTTP status 503" },
                { "Reset", KC_RUNTIME_INTERNAL, "HTTP/2 stream reset with INTERNAL_ERROR" },
        };
        struct fixture *f = *state;

        for (size_t i = 0; i < KC_ELEMENTSOF(cases); i++) {
                struct kc_runtime_error err = { 0 };
                uint8_t *resp = NULL;
                size_t len = 0;
                int r;

                r = call(f, cases[i].method, "x", 1, 5 * SEC, NULL, &resp, &len, &err);
                if (r != kc_grpc_code_to_errno(cases[i].code) || err.code != cases[i].code ||
                    strcmp(err.message, cases[i].message) != 0)
                        fail_msg("%s: r=%d code=%d message \"%s\"", cases[i].method, r, err.code,
                                 err.message);
                assert_null(resp);
        }
        /* None of it broke the connection. */
        assert_int_equal(atomic_load(&f->srv->n_conns), 1);
}

static void test_goaway_reconnects(void **state)
{
        struct fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        uint8_t *resp = NULL;
        size_t len = 0;

        /*
         * The server answers, retires the connection with GOAWAY and closes
         * it. The next call, sent at once, races with that: it either opens
         * a new connection or lands on the old one above the GOAWAY's last
         * stream and is retried on a new one. It never fails.
         */
        for (int i = 0; i < 20; i++) {
                assert_int_equal(call(f, "GoAway", "g", 1, 5 * SEC, NULL, &resp, &len, &err), 0);
                free(resp);
                resp = NULL;
                if (call(f, "Echo", "h", 1, 5 * SEC, NULL, &resp, &len, &err) != 0)
                        fail_msg("call %d after GOAWAY: %s", i, err.message);
                assert_memory_equal(resp, "h", 1);
                free(resp);
                resp = NULL;
        }
        assert_int_equal(atomic_load(&f->srv->n_conns), 21);
}

static void test_refused_stream_is_retried(void **state)
{
        struct fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        uint8_t *resp = NULL;
        size_t len = 0;

        /* REFUSED_STREAM: the server did not process it, so it is sent once more. */
        assert_int_equal(call(f, "Refuse", "r", 1, 5 * SEC, NULL, &resp, &len, &err), 0);
        assert_memory_equal(resp, "r", 1);
        free(resp);
        assert_int_equal(atomic_load(&f->srv->n_requests), 2);
}

static void test_goaway_below_call_is_retried(void **state)
{
        struct fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        uint8_t *resp = NULL;
        size_t len = 0;

        /*
         * The server answers the call with a GOAWAY whose last stream id is
         * below it, and hangs up: it never processed the call, which goes
         * out again on a new connection.
         */
        if (call(f, "GoAwayRefuse", "s", 1, 5 * SEC, NULL, &resp, &len, &err) != 0)
                fail_msg("GoAwayRefuse: %s", err.message);
        assert_memory_equal(resp, "s", 1);
        free(resp);
        assert_int_equal(atomic_load(&f->srv->n_requests), 2);
        assert_int_equal(atomic_load(&f->srv->n_conns), 2);
}

static void test_queued_stream_deadline(void **state)
{
        struct fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        struct kc_cancel *ctx = NULL;
        struct async_call hang;
        uint8_t *resp = NULL;
        size_t len = 0;

        /* The server allows one stream at a time; Hang takes it. */
        assert_int_equal(kc_cancel_new(&ctx), 0);
        async_start(&hang, f, "Hang", 60 * SEC, ctx);
        assert_true(KC_TEST_WAIT_UNTIL(atomic_load(&f->srv->n_requests) >= 1, 5000));
        /* The client has applied the server's SETTINGS once it acknowledged them. */
        assert_true(KC_TEST_WAIT_UNTIL(atomic_load(&f->srv->frames[NGHTTP2_SETTINGS]) >= 2, 5000));

        /*
         * A call waiting for a stream slot still meets its deadline. Its
         * HEADERS leave when the slot frees, followed at once by RST_STREAM
         * (ahead of its DATA): the server never sees a complete request.
         */
        assert_int_equal(call(f, "Echo", "q", 1, 300 * MS, NULL, &resp, &len, &err), -ETIMEDOUT);
        assert_int_equal(err.code, KC_RUNTIME_DEADLINE_EXCEEDED);

        kc_cancel_trigger_mp(ctx);
        async_join(&hang);
        assert_int_equal(hang.r, -ECANCELED);
        kc_cancel_free(ctx);

        if (call(f, "Echo", "w", 1, 5 * SEC, NULL, &resp, &len, &err) != 0)
                fail_msg("Echo after the queue drained: %s", err.message);
        assert_memory_equal(resp, "w", 1);
        free(resp);
        assert_int_equal(atomic_load(&f->srv->n_requests), 2);
        assert_int_equal(atomic_load(&f->srv->n_conns), 1);
}

static void test_free_cancels_in_flight(void **state)
{
        struct fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        struct kc_grpc_stream *s = NULL;
        struct async_call hang;
        struct stream_obs o;

        obs_init(&o);
        assert_int_equal(kc_grpc_stream_open(f->c, method_path("StreamHang"), NULL, 0, obs_message,
                                             obs_close, &o, &s, &err),
                         0);
        async_start(&hang, f, "Hang", 60 * SEC, NULL);
        assert_true(KC_TEST_WAIT_UNTIL(atomic_load(&f->srv->n_requests) >= 2, 5000));

        f->c = kc_grpc_client_free(f->c);
        async_join(&hang);
        assert_int_equal(hang.r, -ECANCELED);
        assert_int_equal(hang.err.code, KC_RUNTIME_CANCELLED);
        assert_int_equal(obs_closes(&o), 1);
        assert_int_equal(o.close_r, -ECANCELED);
        /* The handle outlives the client. */
        s = kc_grpc_stream_close(s);
        assert_int_equal(obs_closes(&o), 1);
}

/* Shutdown ends what is in flight at once and refuses what comes later; free follows. */
static void test_shutdown_then_free(void **state)
{
        struct fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        struct kc_grpc_stream *s = NULL;
        struct async_call hang;
        struct stream_obs o;
        uint8_t *resp = NULL;
        size_t len = 0;

        obs_init(&o);
        assert_int_equal(kc_grpc_stream_open(f->c, method_path("StreamHang"), NULL, 0, obs_message,
                                             obs_close, &o, &s, &err),
                         0);
        async_start(&hang, f, "Hang", 60 * SEC, NULL);
        assert_true(KC_TEST_WAIT_UNTIL(atomic_load(&f->srv->n_requests) >= 2, 5000));

        kc_grpc_client_shutdown(f->c);
        async_join(&hang);
        assert_int_equal(hang.r, -ECANCELED);
        assert_int_equal(obs_closes(&o), 1);
        assert_int_equal(o.close_r, -ECANCELED);
        /* Later calls fail at once; a second shutdown is a no-op. */
        assert_int_equal(kc_grpc_unary(f->c, method_path("Echo"), NULL, 0, 60 * SEC, NULL, &resp,
                                       &len, &err),
                         -ECANCELED);
        assert_int_equal(err.code, KC_RUNTIME_CANCELLED);
        kc_grpc_client_shutdown(f->c);
        s = kc_grpc_stream_close(s);
        assert_int_equal(obs_closes(&o), 1);
        f->c = kc_grpc_client_free(f->c);
}

#define N_THREADS 8
#define N_CALLS 200

struct worker {
        struct fixture *f;
        pthread_barrier_t *barrier;
        int id;
        int failures;
};

static void *worker_main(void *arg)
{
        struct worker *w = arg;

        pthread_barrier_wait(w->barrier);
        for (int i = 0; i < N_CALLS; i++) {
                struct kc_runtime_error err = { 0 };
                char req[64];
                uint8_t *resp = NULL;
                size_t len = 0;
                int n = snprintf(req, sizeof(req), "worker %d call %d %.*s", w->id, i, i % 30,
                                 "..............................");
                const char *method = i % 10 == 3 ? "NotFound" : "Echo";
                int r = call(w->f, method, req, (size_t)n, 30 * SEC, NULL, &resp, &len, &err);

                if (method[0] == 'N') {
                        if (r != -ENOENT || err.code != KC_RUNTIME_NOT_FOUND)
                                w->failures++;
                } else if (r != 0 || len != (size_t)n || memcmp(resp, req, len) != 0) {
                        w->failures++;
                }
                free(resp);
        }
        return NULL;
}

static void test_many_threads(void **state)
{
        struct fixture *f = *state;
        pthread_barrier_t barrier;
        struct worker w[N_THREADS];
        pthread_t th[N_THREADS];

        pthread_barrier_init(&barrier, NULL, N_THREADS);
        for (int i = 0; i < N_THREADS; i++) {
                w[i] = (struct worker){ .f = f, .barrier = &barrier, .id = i };
                assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
        }
        for (int i = 0; i < N_THREADS; i++) {
                assert_int_equal(pthread_join(th[i], NULL), 0);
                assert_int_equal(w[i].failures, 0);
        }
        pthread_barrier_destroy(&barrier);
        assert_int_equal(atomic_load(&f->srv->n_requests), N_THREADS * N_CALLS);
        assert_int_equal(atomic_load(&f->srv->n_conns), 1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_code_to_errno),
                cmocka_unit_test_setup_teardown(test_invalid_arguments, setup, teardown),
                cmocka_unit_test_setup_teardown(test_echo, setup, teardown),
                cmocka_unit_test_setup_teardown(test_split_frames, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trailers_only_not_found, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unimplemented, setup, teardown),
                cmocka_unit_test_setup_teardown(test_slow_call_does_not_block_fast_call, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_deadline_exceeded, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stream_messages_then_ok, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stream_close_mid_stream, setup, teardown),
                cmocka_unit_test_setup_teardown(test_server_restart, setup, teardown),
                cmocka_unit_test_setup_teardown(test_no_server, setup, teardown),
                cmocka_unit_test_setup_teardown(test_response_limits, setup, teardown),
                cmocka_unit_test_setup_teardown(test_request_limits, setup, teardown),
                cmocka_unit_test_setup_teardown(test_malformed_responses, setup, teardown),
                cmocka_unit_test_setup_teardown(test_goaway_reconnects, setup, teardown),
                cmocka_unit_test_setup_teardown(test_refused_stream_is_retried, setup, teardown),
                cmocka_unit_test_setup_teardown(test_goaway_below_call_is_retried, setup, teardown),
                cmocka_unit_test_setup_teardown(test_queued_stream_deadline, setup_one_stream,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_free_cancels_in_flight, setup, teardown),
                cmocka_unit_test_setup_teardown(test_shutdown_then_free, setup, teardown),
                cmocka_unit_test_setup_teardown(test_many_threads, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
