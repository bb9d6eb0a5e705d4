/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kc_prober_probe() and its handlers (issue 15, F-LOOP-09's probes): exec
 * through the sim's ExecSync (files its containers create, $(VAR)
 * expansion, the timeout on the fake clock), the retries of a handler that
 * errors, tcpSocket against real local listeners, httpGet against a real
 * local HTTP server (status ranges, headers, redirects, the body cap, the
 * timeout, ports by name), grpc against a real local gRPC health server.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
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
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "../runtime/fake_grpc_server.h"
#include "../runtime/fixture.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "kc_test.h"
#include "probe_ring.h"
#include "kubelet/prober/prober.h"
#include "runtime/api_pod.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"
#include "runtime/sim.h"

static const struct kc_api_pod pod = { .uid = "uid-1", .name = "web", .namespace = "default" };

struct outcome {
        int r;
        enum kc_probe_result result;
        char output[16384];
        bool has_output;
};

static struct outcome run(struct kc_prober *p, enum kc_probe_type t,
                          const struct kc_api_container *c, const char *id)
{
        struct outcome o = { .result = _KC_PROBE_RESULT_INVALID };
        char *out = NULL;

        o.r = kc_prober_probe(p, t, &pod, "127.0.0.1", c, id, &o.result, &out);
        o.has_output = out != NULL;
        snprintf(o.output, sizeof(o.output), "%s", out ? out : "");
        free(out);
        return o;
}

/* ---- exec on the sim ---- */

struct sim_fixture {
        struct kc_clock *clock;
        struct kc_sim *sim;
        struct kc_runtime_service svc;
        struct kc_prober *prober;
        char *sb, *id;
};

static const struct kc_pod_sandbox_config sandbox_cfg = {
        .metadata = { .name = "web", .uid = "uid-1", .namespace = "default", .attempt = 0 },
};

static struct sim_fixture *sim_fixture_new(const char *script)
{
        static const char *const cmd[] = { "sh", "-c" };
        struct sim_fixture *f = calloc(1, sizeof(*f));
        struct kc_runtime_error err = { 0 };
        struct kc_container_config cfg = { .metadata = { .name = "app" },
                                           .image = "busybox",
                                           .command = cmd,
                                           .n_command = 2,
                                           .args = &script,
                                           .n_args = 1 };

        assert_non_null(f);
        sim_env_new(&f->clock, &f->sim, "busybox");
        f->svc = kc_sim_service(f->sim);
        assert_int_equal(f->svc.ops->run_pod_sandbox(f->svc.self, &sandbox_cfg, &f->sb, &err), 0);
        assert_int_equal(
                f->svc.ops->create_container(f->svc.self, f->sb, &cfg, &sandbox_cfg, &f->id, &err),
                0);
        assert_int_equal(f->svc.ops->start_container(f->svc.self, f->id, &err), 0);
        assert_int_equal(kc_prober_new(f->svc, f->clock, &f->prober), 0);
        return f;
}

static void sim_fixture_free(struct sim_fixture *f)
{
        kc_prober_free(f->prober);
        free(f->sb);
        free(f->id);
        sim_env_free(f->clock, f->sim);
        free(f);
}

/* Issue 15: an exec probe reads the files the container creates, as they appear. */
static void test_exec_sees_container_files(void **state)
{
        static const char *const cat[] = { "cat", "$(READY_FILE)" };
        static const char *const test_f[] = { "test", "-f", "/tmp/healthy" };
        static const struct kc_api_env_var env[] = { { .name = "READY_FILE",
                                                       .value = "/tmp/healthy" } };
        struct sim_fixture *f = sim_fixture_new("sleep 5; echo ok > /tmp/healthy; sleep 3600");
        struct kc_api_container c = { .name = "app", .env = env, .n_env = 1 };
        struct outcome o;

        (void)state;
        c.readiness_probe = probe_of(
                (struct kc_api_handler){ .kind = KC_HANDLER_EXEC, .command = cat, .n_command = 2 });
        c.liveness_probe = probe_of((struct kc_api_handler){
                .kind = KC_HANDLER_EXEC, .command = test_f, .n_command = 3 });
        o = run(f->prober, KC_PROBE_READINESS, &c, f->id);
        assert_int_equal(o.r, 0);
        assert_int_equal(o.result, KC_PROBE_FAILURE);
        assert_string_equal(o.output,
                            "cat: can't open '/tmp/healthy': No such file or directory\n");
        o = run(f->prober, KC_PROBE_LIVENESS, &c, f->id);
        assert_int_equal(o.result, KC_PROBE_FAILURE);

        assert_int_equal(kc_fake_clock_advance(f->clock, 5 * KC_NSEC_PER_SEC), 0);
        o = run(f->prober, KC_PROBE_READINESS, &c, f->id);
        assert_int_equal(o.r, 0);
        assert_int_equal(o.result, KC_PROBE_SUCCESS);
        assert_string_equal(o.output, "ok\n");
        o = run(f->prober, KC_PROBE_LIVENESS, &c, f->id);
        assert_int_equal(o.result, KC_PROBE_SUCCESS);

        /* No startup probe: a success without output. */
        o = run(f->prober, KC_PROBE_STARTUP, &c, f->id);
        assert_int_equal(o.r, 0);
        assert_int_equal(o.result, KC_PROBE_SUCCESS);
        assert_false(o.has_output);
        sim_fixture_free(f);
}

struct probe_call {
        struct kc_prober *p;
        const struct kc_api_container *c;
        const char *id;
        struct outcome o;
};

static void *probe_main(void *arg)
{
        struct probe_call *pc = arg;

        pc->o = run(pc->p, KC_PROBE_LIVENESS, pc->c, pc->id);
        return NULL;
}

/* Issue 15: an exec that outlives timeoutSeconds fails with upstream's "command ... timed out". */
static void test_exec_timeout(void **state)
{
        static const char *const cmd[] = { "sh", "-c", "sleep 10" };
        struct sim_fixture *f = sim_fixture_new("sleep 3600");
        struct kc_api_container c = { .name = "app" };
        struct probe_call pc = { .p = f->prober, .c = &c, .id = f->id };
        pthread_t t;

        (void)state;
        c.liveness_probe = probe_of(
                (struct kc_api_handler){ .kind = KC_HANDLER_EXEC, .command = cmd, .n_command = 3 });
        MUT(c.liveness_probe)->timeout_seconds = 2;
        assert_int_equal(pthread_create(&t, NULL, probe_main, &pc), 0);
        assert_true(KC_TEST_WAIT_UNTIL(kc_fake_clock_sleepers(f->clock) == 1, 5000));
        assert_int_equal(kc_fake_clock_advance(f->clock, 2 * KC_NSEC_PER_SEC), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(pc.o.r, 0);
        assert_int_equal(pc.o.result, KC_PROBE_FAILURE);
        assert_string_equal(pc.o.output, "command \"sh -c sleep 10\" timed out");
        sim_fixture_free(f);
}

/* An ExecSync that always errors (not a timeout). */
static atomic_int n_exec_calls;

static int failing_exec_sync(void *self, const char *id, const char *const *argv, size_t argc,
                             int64_t timeout_s, struct kc_exec_sync_result *ret,
                             struct kc_runtime_error *err)
{
        (void)self, (void)id, (void)argv, (void)argc, (void)timeout_s, (void)ret;
        atomic_fetch_add(&n_exec_calls, 1);
        return kc_runtime_error_set(err, -ENOENT, KC_RUNTIME_NOT_FOUND,
                                    "container \"abc\" not found");
}

static int long_output_exec_sync(void *self, const char *id, const char *const *argv, size_t argc,
                                 int64_t timeout_s, struct kc_exec_sync_result *ret,
                                 struct kc_runtime_error *err)
{
        (void)self, (void)id, (void)argv, (void)argc, (void)timeout_s, (void)err;
        atomic_fetch_add(&n_exec_calls, 1);
        ret->out = malloc(20000);
        memset(ret->out, 'o', 19999);
        ret->out[19999] = '\0';
        ret->n_out = 19999;
        ret->err = strdup("");
        ret->exit_code = 3;
        return 0;
}

/* Issue 15: an erroring handler runs maxProbeRetries (3) times and gives Unknown with the error. */
static void test_retries_on_error(void **state)
{
        static const struct kc_runtime_service_ops ops = { .exec_sync = failing_exec_sync };
        static const struct kc_runtime_service_ops long_ops = { .exec_sync =
                                                                        long_output_exec_sync };
        static const char *const cmd[] = { "true" };
        struct kc_api_container c = { .name = "app" };
        struct kc_prober *p = NULL;
        struct outcome o;

        (void)state;
        c.startup_probe = probe_of(
                (struct kc_api_handler){ .kind = KC_HANDLER_EXEC, .command = cmd, .n_command = 1 });
        assert_int_equal(
                kc_prober_new((struct kc_runtime_service){ &ops, NULL }, kc_clock_real(), &p), 0);
        atomic_store(&n_exec_calls, 0);
        o = run(p, KC_PROBE_STARTUP, &c, "abc");
        assert_int_equal(o.r, 0);
        assert_int_equal(o.result, KC_PROBE_UNKNOWN);
        assert_string_equal(o.output, "container \"abc\" not found");
        assert_int_equal(atomic_load(&n_exec_calls), 3);
        p = kc_prober_free(p);

        /* A result, even a failure, is not retried; the output is capped at 10 KiB. */
        assert_int_equal(
                kc_prober_new((struct kc_runtime_service){ &long_ops, NULL }, kc_clock_real(), &p),
                0);
        atomic_store(&n_exec_calls, 0);
        o = run(p, KC_PROBE_STARTUP, &c, "abc");
        assert_int_equal(o.result, KC_PROBE_FAILURE);
        assert_int_equal(strlen(o.output), 10 * 1024);
        assert_int_equal(atomic_load(&n_exec_calls), 1);
        kc_prober_free(p);

        /* Bad arguments leave the out-parameters alone. */
        enum kc_probe_result res = KC_PROBE_WARNING;
        char *out = (char *)"x";

        assert_int_equal(kc_prober_probe(NULL, KC_PROBE_STARTUP, &pod, NULL, &c, "abc", &res, &out),
                         -EINVAL);
        assert_int_equal(res, KC_PROBE_WARNING);
        assert_ptr_equal(out, (char *)"x");
}

/* ---- tcpSocket ---- */

/* The network handlers need no runtime. */
static const struct kc_runtime_service_ops no_ops = { 0 };
static const struct kc_runtime_service no_runtime = { &no_ops, NULL };

/* A listening socket on 127.0.0.1; *@p port set. */
static int listen_local(int *port)
{
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001) };
        socklen_t len = sizeof(a);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
        assert_int_equal(listen(fd, 16), 0);
        assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
        *port = ntohs(a.sin_port);
        return fd;
}

/*
 * getsockopt(SO_ERROR) calls made by this thread: the test executable's
 * getsockopt stands in for libc's (the handlers are linked in) and forwards
 * to the kernel.
 */
static _Thread_local int n_so_error;

int getsockopt(int fd, int level, int name, void *restrict val, socklen_t *restrict len)
{
        if (level == SOL_SOCKET && name == SO_ERROR)
                n_so_error++;
        return (int)syscall(SYS_getsockopt, fd, level, name, val, len);
}

/*
 * Issue 15: tcpSocket connects within the timeout; port by number or name; Go's dial errors.
 * A probe that connects costs socket, connect, poll, setsockopt(SO_LINGER) and close:
 * SO_ERROR is asked only when poll reports an error or a hang-up (bench_probes).
 */
static void test_tcp(void **state)
{
        struct kc_api_container_port ports[] = { { .name = "probe-port", .container_port = 0 } };
        struct kc_api_container c = { .name = "app", .ports = ports, .n_ports = 1 };
        struct kc_prober *p = NULL;
        struct outcome o;
        char want[128];
        int port, lfd = listen_local(&port);

        (void)state;
        assert_int_equal(kc_prober_new(no_runtime, kc_clock_real(), &p), 0);
        c.liveness_probe = probe_of((struct kc_api_handler){ .kind = KC_HANDLER_TCP_SOCKET,
                                                             .port = { .number = port } });
        n_so_error = 0;
        o = run(p, KC_PROBE_LIVENESS, &c, "id");
        assert_int_equal(o.result, KC_PROBE_SUCCESS);
        assert_int_equal(n_so_error, 0);

        ports[0].container_port = port;
        MUT(c.liveness_probe)->handler.port = (struct kc_api_port_ref){ .name = "probe-port" };
        o = run(p, KC_PROBE_LIVENESS, &c, "id");
        assert_int_equal(o.result, KC_PROBE_SUCCESS);

        MUT(c.liveness_probe)->handler.port = (struct kc_api_port_ref){ .name = "nope" };
        o = run(p, KC_PROBE_LIVENESS, &c, "id");
        assert_int_equal(o.result, KC_PROBE_UNKNOWN);
        assert_string_equal(o.output, "strconv.Atoi: parsing \"nope\": invalid syntax");

        MUT(c.liveness_probe)->handler.port = (struct kc_api_port_ref){ .number = 0 };
        o = run(p, KC_PROBE_LIVENESS, &c, "id");
        assert_int_equal(o.result, KC_PROBE_UNKNOWN);
        assert_string_equal(o.output, "invalid port number: 0");

        close(lfd);
        MUT(c.liveness_probe)->handler.port = (struct kc_api_port_ref){ .number = port };
        o = run(p, KC_PROBE_LIVENESS, &c, "id");
        assert_int_equal(o.result, KC_PROBE_FAILURE);
        snprintf(want, sizeof(want), "dial tcp 127.0.0.1:%d: connect: connection refused", port);
        assert_string_equal(o.output, want);
        kc_prober_free(p);
}

/* ---- httpGet ---- */

struct http_server {
        int lfd, efd, port;
        SSL_CTX *tls; /* HTTPS when set */
        pthread_t thread;
        pthread_mutex_t lock;
        char last_request[4096]; /* under lock */
        atomic_int n_requests;
};

/* Writes to the plain or TLS connection. */
static void put(int fd, SSL *ssl, const void *data, size_t n)
{
        if (ssl)
                (void)SSL_write(ssl, data, (int)n);
        else
                (void)!send(fd, data, n, MSG_NOSIGNAL);
}

static void respond(int fd, SSL *ssl, const char *path, int port)
{
        char buf[1024];
        int n = 0;

        if (strcmp(path, "/ok") == 0 || strncmp(path, "/ok?", 4) == 0) {
                n = snprintf(buf, sizeof(buf), "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nfine");
        } else if (strcmp(path, "/chunked") == 0) {
                n = snprintf(buf, sizeof(buf),
                             "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"
                             "Transfer-Encoding: chunked\r\n\r\n"
                             "3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n");
        } else if (strcmp(path, "/missing") == 0) {
                n = snprintf(buf, sizeof(buf),
                             "HTTP/1.1 404 Not Found\r\nContent-Length: 6\r\n\r\n"
                             "secret");
        } else if (strcmp(path, "/here") == 0) {
                n = snprintf(buf, sizeof(buf),
                             "HTTP/1.1 302 Found\r\nLocation: ok\r\n"
                             "Content-Length: 0\r\n\r\n");
        } else if (strcmp(path, "/abs") == 0) {
                n = snprintf(buf, sizeof(buf),
                             "HTTP/1.1 301 Moved\r\nLocation: "
                             "http://127.0.0.1:%d/ok\r\nContent-Length: 0\r\n\r\n",
                             port);
        } else if (strcmp(path, "/away") == 0) {
                n = snprintf(buf, sizeof(buf),
                             "HTTP/1.1 302 Found\r\nLocation: "
                             "http://localhost:%d/ok\r\nContent-Length: 5\r\n\r\n"
                             "moved",
                             port);
        } else if (strcmp(path, "/loop") == 0) {
                n = snprintf(buf, sizeof(buf),
                             "HTTP/1.1 307 Again\r\nLocation: /loop\r\n"
                             "Content-Length: 0\r\n\r\n");
        } else if (strcmp(path, "/big") == 0) {
                put(fd, ssl, "HTTP/1.1 200 OK\r\n\r\n", 19);
                for (int i = 0; i < 30; i++)
                        put(fd, ssl, memset(buf, 'b', 1000), 1000);
                return;
        } else if (strcmp(path, "/slow") == 0) {
                usleep(1500 * 1000);
                n = snprintf(buf, sizeof(buf), "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
        } else {
                n = snprintf(buf, sizeof(buf), "HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n");
        }
        put(fd, ssl, buf, (size_t)n);
}

static void *http_main(void *arg)
{
        struct http_server *s = arg;

        for (;;) {
                struct pollfd pfd[2] = { { .fd = s->efd, .events = POLLIN },
                                         { .fd = s->lfd, .events = POLLIN } };
                char req[4096], path[1024];
                size_t got = 0;
                ssize_t n;
                SSL *ssl = NULL;
                int fd;

                if (poll(pfd, 2, -1) < 0 || pfd[0].revents)
                        return NULL;
                fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
                if (fd < 0)
                        continue;
                if (s->tls) {
                        ssl = SSL_new(s->tls);
                        SSL_set_fd(ssl, fd);
                        if (SSL_accept(ssl) != 1) {
                                SSL_free(ssl);
                                close(fd);
                                continue;
                        }
                }
                while (got < sizeof(req) - 1 &&
                       (n = ssl ? SSL_read(ssl, req + got, (int)(sizeof(req) - 1 - got))
                                : recv(fd, req + got, sizeof(req) - 1 - got, 0)) > 0) {
                        got += (size_t)n;
                        req[got] = '\0';
                        if (strstr(req, "\r\n\r\n"))
                                break;
                }
                req[got] = '\0';
                pthread_mutex_lock(&s->lock);
                memcpy(s->last_request, req, got + 1);
                pthread_mutex_unlock(&s->lock);
                atomic_fetch_add(&s->n_requests, 1);
                if (sscanf(req, "GET %1023s", path) == 1)
                        respond(fd, ssl, path, s->port);
                if (ssl) {
                        SSL_shutdown(ssl);
                        SSL_free(ssl);
                }
                close(fd);
        }
}

/* A TLS server context with a fresh self-signed P-256 certificate. */
static SSL_CTX *tls_server_ctx(void)
{
        SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
        EVP_PKEY *key = EVP_EC_gen("P-256");
        X509 *cert = X509_new();

        assert_non_null(ctx);
        assert_non_null(key);
        assert_non_null(cert);
        ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
        X509_gmtime_adj(X509_getm_notBefore(cert), 0);
        X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
        X509_set_pubkey(cert, key);
        X509_NAME_add_entry_by_txt(X509_get_subject_name(cert), "CN", MBSTRING_ASC,
                                   (const unsigned char *)"probe.test", -1, -1, 0);
        X509_set_issuer_name(cert, X509_get_subject_name(cert));
        assert_true(X509_sign(cert, key, EVP_sha256()) > 0);
        assert_int_equal(SSL_CTX_use_certificate(ctx, cert), 1);
        assert_int_equal(SSL_CTX_use_PrivateKey(ctx, key), 1);
        X509_free(cert);
        EVP_PKEY_free(key);
        return ctx;
}

static struct http_server *http_start_tls(bool tls)
{
        struct http_server *s = calloc(1, sizeof(*s));

        assert_non_null(s);
        s->tls = tls ? tls_server_ctx() : NULL;
        s->lfd = listen_local(&s->port);
        s->efd = eventfd(0, EFD_CLOEXEC);
        pthread_mutex_init(&s->lock, NULL);
        assert_int_equal(pthread_create(&s->thread, NULL, http_main, s), 0);
        return s;
}

/* A copy of the last request the server read. */
static void last_request(struct http_server *s, char *out, size_t cap)
{
        pthread_mutex_lock(&s->lock);
        snprintf(out, cap, "%s", s->last_request);
        pthread_mutex_unlock(&s->lock);
}

static void http_stop(struct http_server *s)
{
        uint64_t one = 1;

        (void)!write(s->efd, &one, sizeof(one));
        pthread_join(s->thread, NULL);
        close(s->lfd);
        close(s->efd);
        pthread_mutex_destroy(&s->lock);
        SSL_CTX_free(s->tls);
        free(s);
}

struct http_fixture {
        struct http_server *srv;
        struct kc_prober *p;
        struct kc_api_container c;
};

static int http_setup(void **state)
{
        struct http_fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        f->srv = http_start_tls(false);
        assert_int_equal(kc_prober_new(no_runtime, kc_clock_real(), &f->p), 0);
        f->c.name = "app";
        f->c.readiness_probe = probe_of((struct kc_api_handler){
                .kind = KC_HANDLER_HTTP_GET, .port = { .number = f->srv->port } });
        *state = f;
        return 0;
}

static int http_teardown(void **state)
{
        struct http_fixture *f = *state;

        http_stop(f->srv);
        kc_prober_free(f->p);
        free(f);
        return 0;
}

static struct outcome get(struct http_fixture *f, const char *path)
{
        MUT(f->c.readiness_probe)->handler.path = path;
        return run(f->p, KC_PROBE_READINESS, &f->c, "id");
}

/* Issue 15: 2xx succeeds with the body, other codes fail without it; chunked and 1xx handled. */
static void test_http_status(void **state)
{
        struct http_fixture *f = *state;
        struct outcome o;

        o = get(f, "/ok");
        assert_int_equal(o.result, KC_PROBE_SUCCESS);
        assert_string_equal(o.output, "fine");
        o = get(f, "ok?x=1");
        assert_int_equal(o.result, KC_PROBE_SUCCESS);
        o = get(f, "/chunked");
        assert_int_equal(o.result, KC_PROBE_SUCCESS);
        assert_string_equal(o.output, "abcdefg");
        o = get(f, "/missing");
        assert_int_equal(o.result, KC_PROBE_FAILURE);
        assert_string_equal(o.output, "HTTP probe failed with statuscode: 404");
        o = get(f, "/other");
        assert_int_equal(o.result, KC_PROBE_FAILURE);
        assert_string_equal(o.output, "HTTP probe failed with statuscode: 500");
        /* The body is read up to 10 KiB, then the connection is dropped. */
        o = get(f, "/big");
        assert_int_equal(o.result, KC_PROBE_SUCCESS);
        assert_int_equal(strlen(o.output), 10 * 1024);
}

/* Issue 15: newProbeRequest's headers: Host, User-Agent kube-probe/<major.minor>, Accept. */
static void test_http_headers(void **state)
{
        static const struct kc_api_http_header custom[] = { { "X-Custom", "yes" },
                                                            { "Host", "example.test" },
                                                            { "Accept", "" } };
        static const struct kc_api_http_header ua[] = { { "user-agent", "mine/1" },
                                                        { "accept", "text/plain" } };
        struct http_fixture *f = *state;
        char want[128], req[4096];

        assert_int_equal(get(f, "/ok").result, KC_PROBE_SUCCESS);
        last_request(f->srv, req, sizeof(req));
        snprintf(want, sizeof(want),
                 "GET /ok HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUser-Agent: kube-probe/0.1\r\n"
                 "Accept: */*\r\nConnection: close\r\n\r\n",
                 f->srv->port);
        assert_string_equal(req, want);

        MUT(f->c.readiness_probe)->handler.headers = custom;
        MUT(f->c.readiness_probe)->handler.n_headers = 3;
        assert_int_equal(get(f, "/ok").result, KC_PROBE_SUCCESS);
        last_request(f->srv, req, sizeof(req));
        assert_string_equal(req, "GET /ok HTTP/1.1\r\nHost: example.test\r\nUser-Agent: "
                                 "kube-probe/0.1\r\nX-Custom: yes\r\nConnection: close\r\n\r\n");

        MUT(f->c.readiness_probe)->handler.headers = ua;
        MUT(f->c.readiness_probe)->handler.n_headers = 2;
        assert_int_equal(get(f, "/ok").result, KC_PROBE_SUCCESS);
        last_request(f->srv, req, sizeof(req));
        snprintf(want, sizeof(want),
                 "GET /ok HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nuser-agent: mine/1\r\n"
                 "accept: text/plain\r\nConnection: close\r\n\r\n",
                 f->srv->port);
        assert_string_equal(req, want);
}

/* Issue 15: redirects followed to the same host only (else a warning), at most 10 requests. */
static void test_http_redirects(void **state)
{
        struct http_fixture *f = *state;
        struct outcome o;
        char want[128];

        o = get(f, "/here");
        assert_int_equal(o.result, KC_PROBE_SUCCESS);
        assert_string_equal(o.output, "fine");
        o = get(f, "/abs");
        assert_int_equal(o.result, KC_PROBE_SUCCESS);
        o = get(f, "/away");
        assert_int_equal(o.result, KC_PROBE_WARNING);
        assert_string_equal(o.output, "Probe terminated redirects, Response body: moved");

        atomic_store(&f->srv->n_requests, 0);
        o = get(f, "/loop");
        assert_int_equal(o.result, KC_PROBE_FAILURE);
        snprintf(want, sizeof(want), "Get \"http://127.0.0.1:%d/loop\": stopped after 10 redirects",
                 f->srv->port);
        assert_string_equal(o.output, want);
        assert_int_equal(atomic_load(&f->srv->n_requests), 10);
}

/* Issue 15: a server slower than timeoutSeconds fails; a refused connection fails. */
static void test_http_failures(void **state)
{
        struct http_fixture *f = *state;
        struct outcome o;
        char want[256];
        int port, lfd;

        o = get(f, "/slow");
        assert_int_equal(o.result, KC_PROBE_FAILURE);
        snprintf(want, sizeof(want),
                 "Get \"http://127.0.0.1:%d/slow\": context deadline exceeded "
                 "(Client.Timeout exceeded while awaiting headers)",
                 f->srv->port);
        assert_string_equal(o.output, want);

        lfd = listen_local(&port);
        close(lfd);
        MUT(f->c.readiness_probe)->handler.port.number = port;
        o = get(f, "/ok");
        assert_int_equal(o.result, KC_PROBE_FAILURE);
        snprintf(want, sizeof(want),
                 "Get \"http://127.0.0.1:%d/ok\": dial tcp 127.0.0.1:%d: connect: connection "
                 "refused",
                 port, port);
        assert_string_equal(o.output, want);

        /* HTTPS against a plain server: the handshake fails. */
        MUT(f->c.readiness_probe)->handler.port.number = f->srv->port;
        MUT(f->c.readiness_probe)->handler.https = true;
        o = get(f, "/ok");
        assert_int_equal(o.result, KC_PROBE_FAILURE);
}

/* Issue 15: scheme HTTPS, the certificate not verified (a self-signed one is fine), as upstream. */
static void test_https(void **state)
{
        struct http_server *srv = http_start_tls(true);
        struct kc_api_container c = { .name = "kube-apiserver" };
        struct kc_prober *p = NULL;
        struct outcome o;

        (void)state;
        assert_int_equal(kc_prober_new(no_runtime, kc_clock_real(), &p), 0);
        c.liveness_probe = probe_of((struct kc_api_handler){ .kind = KC_HANDLER_HTTP_GET,
                                                             .host = "127.0.0.1",
                                                             .path = "/ok",
                                                             .https = true,
                                                             .port = { .number = srv->port } });
        o = run(p, KC_PROBE_LIVENESS, &c, "id");
        assert_int_equal(o.result, KC_PROBE_SUCCESS);
        assert_string_equal(o.output, "fine");
        MUT(c.liveness_probe)->handler.path = "/chunked";
        o = run(p, KC_PROBE_LIVENESS, &c, "id");
        assert_string_equal(o.output, "abcdefg");
        MUT(c.liveness_probe)->handler.path = "/big";
        o = run(p, KC_PROBE_LIVENESS, &c, "id");
        assert_int_equal(o.result, KC_PROBE_SUCCESS);
        assert_int_equal(strlen(o.output), 10 * 1024);
        MUT(c.liveness_probe)->handler.path = "/missing";
        o = run(p, KC_PROBE_LIVENESS, &c, "id");
        assert_int_equal(o.result, KC_PROBE_FAILURE);
        assert_string_equal(o.output, "HTTP probe failed with statuscode: 404");
        kc_prober_free(p);
        http_stop(srv);
}

/* ---- grpc ---- */

/* Issue 15: grpc.health.v1.Health/Check over TCP; SERVING succeeds, upstream's messages else. */
static void test_grpc(void **state)
{
        struct kc_api_container c = { .name = "app" };
        struct kc_prober *p = NULL;
        struct fs_server *srv;
        struct outcome o;
        char got[256], want[160];
        int port, lfd;

        (void)state;
        srv = fs_start_tcp(&port);
        assert_int_equal(kc_prober_new(no_runtime, kc_clock_real(), &p), 0);
        c.liveness_probe = probe_of(
                (struct kc_api_handler){ .kind = KC_HANDLER_GRPC, .port = { .number = port } });
        o = run(p, KC_PROBE_LIVENESS, &c, "id");
        assert_int_equal(o.result, KC_PROBE_SUCCESS);
        assert_string_equal(o.output, "service is serving");
        fs_last(srv, ":path", got, sizeof(got));
        assert_string_equal(got, "/grpc.health.v1.Health/Check");
        fs_last(srv, "user-agent", got, sizeof(got));
        assert_string_equal(got, "kube-probe/0.1");
        fs_last(srv, ":authority", got, sizeof(got));
        snprintf(want, sizeof(want), "127.0.0.1:%d", port);
        assert_string_equal(got, want);

        MUT(c.liveness_probe)->handler.grpc_service = "ok";
        assert_int_equal(run(p, KC_PROBE_LIVENESS, &c, "id").result, KC_PROBE_SUCCESS);
        MUT(c.liveness_probe)->handler.grpc_service = "down";
        o = run(p, KC_PROBE_LIVENESS, &c, "id");
        assert_int_equal(o.result, KC_PROBE_FAILURE);
        assert_string_equal(o.output, "service unhealthy (responded with \"NOT_SERVING\")");
        MUT(c.liveness_probe)->handler.grpc_service = "unimpl";
        o = run(p, KC_PROBE_LIVENESS, &c, "id");
        assert_int_equal(o.result, KC_PROBE_FAILURE);
        assert_string_equal(o.output, "error: this server does not implement the grpc health "
                                      "protocol (grpc.health.v1.Health): unknown service");
        MUT(c.liveness_probe)->handler.grpc_service = "other";
        o = run(p, KC_PROBE_LIVENESS, &c, "id");
        assert_int_equal(o.result, KC_PROBE_FAILURE);
        assert_string_equal(o.output, "error: health rpc probe failed: rpc error: code = NotFound "
                                      "desc = unknown service");
        MUT(c.liveness_probe)->handler.grpc_service = "hang";
        o = run(p, KC_PROBE_LIVENESS, &c, "id");
        assert_int_equal(o.result, KC_PROBE_FAILURE);
        assert_string_equal(o.output, "timeout: health rpc did not complete within 1s");
        fs_stop(srv);

        lfd = listen_local(&port);
        close(lfd);
        MUT(c.liveness_probe)->handler.port.number = port;
        MUT(c.liveness_probe)->handler.grpc_service = NULL;
        o = run(p, KC_PROBE_LIVENESS, &c, "id");
        assert_int_equal(o.result, KC_PROBE_FAILURE);
        snprintf(want, sizeof(want),
                 "error: failed to connect service at \"127.0.0.1:%d\": ", port);
        assert_memory_equal(o.output, want, strlen(want));
        kc_prober_free(p);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_exec_sees_container_files),
                cmocka_unit_test(test_exec_timeout),
                cmocka_unit_test(test_retries_on_error),
                cmocka_unit_test(test_tcp),
                cmocka_unit_test_setup_teardown(test_http_status, http_setup, http_teardown),
                cmocka_unit_test_setup_teardown(test_http_headers, http_setup, http_teardown),
                cmocka_unit_test_setup_teardown(test_http_redirects, http_setup, http_teardown),
                cmocka_unit_test_setup_teardown(test_http_failures, http_setup, http_teardown),
                cmocka_unit_test(test_https),
                cmocka_unit_test(test_grpc),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
