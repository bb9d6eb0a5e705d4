/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The read-only HTTP server: /healthz in k8s.io/apiserver's format, /metrics,
 * /pods and /node callbacks, 404/405, path tricks, oversized requests, a
 * slow client that must not block others, a slowloris that must not lock
 * /healthz out (the oldest connections are closed), a request that fills the
 * connection's memory (stalls only itself), prompt stop with a connection
 * open, and concurrent clients (run under TSan). Talks to the server over a
 * real loopback socket with a tiny blocking client.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/cleanup.h"
#include "kc_test.h"
#include "kubelet/server/server.h"
#include "metrics/registry.h"

/* ---- a tiny blocking HTTP/1.1 client ---------------------------------- */

struct resp {
        int status;
        char *raw;        /* whole response, NUL-terminated */
        const char *body; /* into raw */
};

static void resp_done(struct resp *r)
{
        free(r->raw);
        *r = (struct resp){ 0 };
}

static int client_connect(uint16_t port)
{
        struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
        long ms = (long)(5000 * kc_test_timeout_multiplier());
        struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
        int fd;

        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
        assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)), 0);
        assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
        return fd;
}

static void client_send(int fd, const char *data, size_t len)
{
        while (len > 0) {
                ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
                if (n <= 0)
                        return; /* the server may refuse early (oversized requests) */
                data += n;
                len -= (size_t)n;
        }
}

/* Reads until EOF; 0 on success, -1 on timeout/error with nothing read. */
static int client_read(int fd, struct resp *r)
{
        size_t len = 0, cap = 4096;
        char *buf = malloc(cap);

        assert_non_null(buf);
        for (;;) {
                if (cap - len < 1024) {
                        cap *= 2;
                        buf = realloc(buf, cap);
                        assert_non_null(buf);
                }
                ssize_t n = recv(fd, buf + len, cap - len - 1, 0);
                if (n <= 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
        *r = (struct resp){ .raw = buf, .status = -1, .body = "" };
        if (len == 0)
                return -1;
        if (sscanf(buf, "HTTP/1.%*d %d", &r->status) != 1)
                r->status = -1;
        char *sep = strstr(buf, "\r\n\r\n");
        if (sep)
                r->body = sep + 4;
        return 0;
}

static void http_raw(uint16_t port, const char *req, size_t req_len, struct resp *r)
{
        int fd = client_connect(port);

        client_send(fd, req, req_len);
        (void)client_read(fd, r);
        close(fd);
}

static void http_req(uint16_t port, const char *method, const char *target, struct resp *r)
{
        char req[1024];
        int n = snprintf(req, sizeof(req),
                         "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s\r\n", method,
                         target, strcmp(method, "POST") == 0 ? "Content-Length: 0\r\n" : "");

        http_raw(port, req, (size_t)n, r);
}

static bool has_header(const struct resp *r, const char *line)
{
        const char *end = strstr(r->raw, "\r\n\r\n");
        const char *p = strcasestr(r->raw, line);

        return p && (!end || p < end);
}

/* ---- fixture ---------------------------------------------------------- */

struct check_state {
        atomic_bool healthy;
        atomic_int calls;
};

static bool check_fn(void *userdata, char **ret_err)
{
        struct check_state *c = userdata;

        atomic_fetch_add(&c->calls, 1);
        if (atomic_load(&c->healthy))
                return true;
        *ret_err = strdup("pleg was last seen active 3m1s ago; threshold is 3m0s");
        return false;
}

static atomic_int render_fail;

static int render_pods(void *userdata, char **ret_json)
{
        (void)userdata;
        if (atomic_load(&render_fail))
                return -EIO;
        *ret_json = strdup("{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[]}");
        return *ret_json ? 0 : -ENOMEM;
}

static int render_node(void *userdata, char **ret_json)
{
        (void)userdata;
        if (atomic_load(&render_fail))
                return -ENOMEM;
        *ret_json = strdup("{\"kind\":\"Node\",\"apiVersion\":\"v1\"}");
        return *ret_json ? 0 : -ENOMEM;
}

struct fixture {
        struct check_state log, syncloop;
        struct kc_metrics_registry *reg;
        struct kc_counter *counter;
        struct kc_http_server *srv;
        uint16_t port;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        if (!f)
                return -1;
        atomic_store(&f->log.healthy, true);
        atomic_store(&f->syncloop.healthy, true);
        atomic_store(&render_fail, 0);
        if (kc_metrics_registry_new(&f->reg) < 0 ||
            kc_metrics_counter_new(f->reg, "kubelet_test_requests_total", "Test counter.",
                                   &f->counter) < 0)
                return -1;
        kc_counter_add_mp(f->counter, 3);

        const struct kc_http_check checks[] = {
                { "log", check_fn, &f->log },
                { "syncloop", check_fn, &f->syncloop },
        };
        const struct kc_http_config cfg = {
                .address = "127.0.0.1",
                .port = 0,
                .checks = checks,
                .n_checks = KC_ELEMENTSOF(checks),
                .metrics = f->reg,
                .render_pods = render_pods,
                .render_node = render_node,
        };
        if (kc_http_server_start(&cfg, &f->srv) < 0)
                return -1;
        f->port = kc_http_server_port(f->srv);
        if (f->port == 0)
                return -1;
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        f->srv = kc_http_server_stop(f->srv);
        f->reg = kc_metrics_registry_free(f->reg);
        free(f);
        return 0;
}

/* ---- tests ------------------------------------------------------------ */

static void test_healthz_ok(void **state)
{
        struct fixture *f = *state;
        struct resp r;

        http_req(f->port, "GET", "/healthz", &r);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body, "ok");
        assert_true(has_header(&r, "Content-Type: text/plain; charset=utf-8"));
        assert_true(has_header(&r, "X-Content-Type-Options: nosniff"));
        assert_true(atomic_load(&f->log.calls) >= 1);
        resp_done(&r);
}

static void test_healthz_verbose(void **state)
{
        struct fixture *f = *state;
        struct resp r;

        http_req(f->port, "GET", "/healthz?verbose", &r);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body,
                            "[+]ping ok\n[+]log ok\n[+]syncloop ok\nhealthz check passed\n");
        resp_done(&r);

        http_req(f->port, "GET", "/healthz?verbose=true&x=1", &r);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body,
                            "[+]ping ok\n[+]log ok\n[+]syncloop ok\nhealthz check passed\n");
        resp_done(&r);
}

static void test_healthz_failing(void **state)
{
        struct fixture *f = *state;
        struct resp r;
        const char *want = "[+]ping ok\n[+]log ok\n[-]syncloop failed: reason withheld\n"
                           "healthz check failed\n";

        atomic_store(&f->syncloop.healthy, false);
        http_req(f->port, "GET", "/healthz", &r);
        assert_int_equal(r.status, 500);
        assert_string_equal(r.body, want);
        /* the reason is withheld from clients */
        assert_null(strstr(r.raw, "pleg was last seen"));
        resp_done(&r);

        http_req(f->port, "GET", "/healthz?verbose", &r);
        assert_int_equal(r.status, 500);
        assert_string_equal(r.body, want);
        resp_done(&r);

        atomic_store(&f->syncloop.healthy, true);
        http_req(f->port, "GET", "/healthz", &r);
        assert_int_equal(r.status, 200);
        resp_done(&r);
}

static void test_metrics(void **state)
{
        struct fixture *f = *state;
        struct resp r;

        http_req(f->port, "GET", "/metrics", &r);
        assert_int_equal(r.status, 200);
        assert_true(has_header(&r, "Content-Type: text/plain; version=0.0.4; charset=utf-8"));
        assert_non_null(strstr(r.body, "# HELP kubelet_test_requests_total Test counter.\n"));
        assert_non_null(strstr(r.body, "# TYPE kubelet_test_requests_total counter\n"));
        assert_non_null(strstr(r.body, "kubelet_test_requests_total 3\n"));
        resp_done(&r);

        kc_counter_inc_mp(f->counter);
        http_req(f->port, "GET", "/metrics", &r);
        assert_non_null(strstr(r.body, "kubelet_test_requests_total 4\n"));
        resp_done(&r);
}

static void test_pods_node(void **state)
{
        struct fixture *f = *state;
        struct resp r;

        http_req(f->port, "GET", "/pods", &r);
        assert_int_equal(r.status, 200);
        assert_true(has_header(&r, "Content-Type: application/json"));
        assert_string_equal(r.body, "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[]}");
        resp_done(&r);

        http_req(f->port, "GET", "/node", &r);
        assert_int_equal(r.status, 200);
        assert_true(has_header(&r, "Content-Type: application/json"));
        assert_string_equal(r.body, "{\"kind\":\"Node\",\"apiVersion\":\"v1\"}");
        resp_done(&r);

        /* HEAD: same status and headers, no body */
        http_req(f->port, "HEAD", "/pods", &r);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body, "");
        resp_done(&r);

        atomic_store(&render_fail, 1);
        http_req(f->port, "GET", "/pods", &r);
        assert_int_equal(r.status, 500);
        assert_non_null(strstr(r.body, "rendering pods failed"));
        resp_done(&r);
        http_req(f->port, "GET", "/node", &r);
        assert_int_equal(r.status, 500);
        assert_non_null(strstr(r.body, "rendering node failed"));
        resp_done(&r);
}

static void test_not_found_and_method(void **state)
{
        struct fixture *f = *state;
        struct resp r;

        http_req(f->port, "GET", "/", &r);
        assert_int_equal(r.status, 404);
        resp_done(&r);
        http_req(f->port, "GET", "/stats/summary", &r);
        assert_int_equal(r.status, 404);
        resp_done(&r);

        const char *methods[] = { "POST", "PUT", "DELETE", "PATCH", "OPTIONS" };
        for (size_t i = 0; i < KC_ELEMENTSOF(methods); i++) {
                http_req(f->port, methods[i], "/healthz", &r);
                assert_int_equal(r.status, 405);
                assert_true(has_header(&r, "Allow: GET, HEAD"));
                resp_done(&r);
        }
        /* 405 also for unknown paths: the method is checked first */
        http_req(f->port, "POST", "/nope", &r);
        assert_int_equal(r.status, 405);
        resp_done(&r);
}

static void test_path_tricks(void **state)
{
        struct fixture *f = *state;
        const char *targets[] = {
                "/healthz/",         "//healthz",
                "/./healthz",        "/x/../healthz",
                "/%68ealthz",        "/healthz%00",
                "/healthz%2f",       "/%2e%2e/healthz",
                "/pods/../node",     "/metrics/../pods",
                "/HEALTHZ",          "/healthz;x",
                "/../../etc/passwd", "/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
                "/pods%00/x",
        };
        struct resp r;

        for (size_t i = 0; i < KC_ELEMENTSOF(targets); i++) {
                http_req(f->port, "GET", targets[i], &r);
                if (r.status != 404)
                        fail_msg("%s: status %d", targets[i], r.status);
                resp_done(&r);
        }

        /* A raw NUL byte in the request line never reaches a route. */
        static const char nul_req[] = "GET /healthz\0/x HTTP/1.1\r\nHost: a\r\n"
                                      "Connection: close\r\n\r\n";
        http_raw(f->port, nul_req, sizeof(nul_req) - 1, &r);
        assert_int_equal(r.status, 404);
        resp_done(&r);
}

static void test_oversized(void **state)
{
        struct fixture *f = *state;
        size_t n = 64 * 1024;
        char *req = malloc(n + 128);
        struct resp r;
        int len;

        assert_non_null(req);
        /* a huge request target */
        len = sprintf(req, "GET /healthz?");
        memset(req + len, 'a', n);
        len += (int)n;
        len += sprintf(req + len, " HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
        http_raw(f->port, req, (size_t)len, &r);
        assert_true(r.status == -1 || (r.status >= 400 && r.status < 500));
        resp_done(&r);

        /* a huge header */
        len = sprintf(req, "GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: ");
        memset(req + len, 'b', n);
        len += (int)n;
        len += sprintf(req + len, "\r\nConnection: close\r\n\r\n");
        http_raw(f->port, req, (size_t)len, &r);
        assert_true(r.status == -1 || (r.status >= 400 && r.status < 500));
        resp_done(&r);
        free(req);

        /* the server still answers */
        http_req(f->port, "GET", "/healthz", &r);
        assert_int_equal(r.status, 200);
        resp_done(&r);
}

static void test_slow_client_does_not_block(void **state)
{
        struct fixture *f = *state;
        int slow[4];
        struct resp r;

        for (size_t i = 0; i < KC_ELEMENTSOF(slow); i++) {
                slow[i] = client_connect(f->port);
                client_send(slow[i], "GET /hea", 8);
        }
        kc_test_sleep_ms(50);

        int64_t t0 = kc_test_mono_ms();
        http_req(f->port, "GET", "/healthz", &r);
        assert_int_equal(r.status, 200);
        assert_true(kc_test_mono_ms() - t0 < (int64_t)(2000 * kc_test_timeout_multiplier()));
        resp_done(&r);

        for (size_t i = 0; i < KC_ELEMENTSOF(slow); i++)
                close(slow[i]);
}

static void test_stop_prompt_with_open_connection(void **state)
{
        struct fixture *f = *state;
        int idle = client_connect(f->port);
        int half = client_connect(f->port);
        char buf[64];

        client_send(half, "GET /healthz HTTP/1.1\r\nHo", 25);
        kc_test_sleep_ms(50);

        int64_t t0 = kc_test_mono_ms();
        f->srv = kc_http_server_stop(f->srv);
        assert_true(kc_test_mono_ms() - t0 < (int64_t)(1000 * kc_test_timeout_multiplier()));
        assert_null(f->srv);

        /* the open connections were closed by the server */
        assert_true(recv(idle, buf, sizeof(buf), 0) <= 0);
        assert_true(recv(half, buf, sizeof(buf), 0) <= 0);
        close(idle);
        close(half);

        /* and nothing listens any more */
        struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(f->port) };
        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_true(connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0);
        close(fd);
}

static void test_start_errors(void **state)
{
        struct fixture *f = *state;
        struct kc_http_server *s = NULL;
        struct kc_http_config cfg = { .address = "not-an-address" };

        assert_int_equal(kc_http_server_start(&cfg, &s), -EINVAL);
        assert_null(s);
        cfg.address = "127.0.0.1";
        cfg.port = f->port; /* already bound by the fixture */
        assert_int_equal(kc_http_server_start(&cfg, &s), -EADDRINUSE);
        assert_null(s);
        const struct kc_http_check bad = { .name = "x", .fn = NULL };
        cfg.port = 0;
        cfg.checks = &bad;
        cfg.n_checks = 1;
        assert_int_equal(kc_http_server_start(&cfg, &s), -EINVAL);
        assert_null(kc_http_server_stop(NULL));
        assert_int_equal(kc_http_server_port(NULL), 0);

        /* no metrics/pods/node configured: those paths are 404 */
        cfg.checks = NULL;
        cfg.n_checks = 0;
        assert_int_equal(kc_http_server_start(&cfg, &s), 0);
        struct resp r;
        http_req(kc_http_server_port(s), "GET", "/metrics", &r);
        assert_int_equal(r.status, 404);
        resp_done(&r);
        http_req(kc_http_server_port(s), "GET", "/healthz?verbose", &r);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body, "[+]ping ok\nhealthz check passed\n");
        resp_done(&r);
        s = kc_http_server_stop(s);
}

#define N_CLIENTS 8
#define N_REQS 25

struct client_arg {
        uint16_t port;
        atomic_int *ok;
};

static void *client_thread(void *p)
{
        struct client_arg *a = p;
        const char *paths[] = { "/healthz", "/metrics", "/pods", "/node" };

        for (int i = 0; i < N_REQS; i++) {
                struct resp r;
                http_req(a->port, "GET", paths[i % 4], &r);
                if (r.status == 200)
                        atomic_fetch_add(a->ok, 1);
                resp_done(&r);
        }
        return NULL;
}

static void test_concurrent_clients(void **state)
{
        struct fixture *f = *state;
        pthread_t th[N_CLIENTS];
        atomic_int ok = 0;
        struct client_arg a = { .port = f->port, .ok = &ok };

        for (int i = 0; i < N_CLIENTS; i++)
                assert_int_equal(pthread_create(&th[i], NULL, client_thread, &a), 0);
        for (int i = 0; i < 200; i++) {
                kc_counter_inc_mp(f->counter);
                atomic_store(&f->log.healthy, true);
        }
        for (int i = 0; i < N_CLIENTS; i++)
                pthread_join(th[i], NULL);
        assert_int_equal(atomic_load(&ok), N_CLIENTS * N_REQS);
}

#define S(lit) (lit), strlen(lit)

/* http.c's HTTP_CONNECTION_LIMIT: open connections before the oldest is closed. */
#define CONNECTION_LIMIT 64

/* True when the server closed @p fd (EOF or reset) within @p ms. */
static bool closed_by_server(int fd, int ms)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };
        char c;

        if (poll(&p, 1, ms) != 1)
                return false;
        return recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

/* Marks newly closed connections; returns how many of @p n are closed. */
static size_t count_closed(const int *fds, bool *closed, size_t n)
{
        size_t count = 0;

        for (size_t i = 0; i < n; i++) {
                if (!closed[i])
                        closed[i] = closed_by_server(fds[i], 0);
                count += closed[i];
        }
        return count;
}

/*
 * A slowloris from the health checker's own address: 100 connections,
 * each with half a request (before the fix MHD's per-IP limit of 32 held
 * every slot, and a trickled byte per connection kept them past the idle
 * timeout: /healthz from 127.0.0.1 was refused for as long as it went on).
 * Now each connection beyond the limit closes the oldest: /healthz answers,
 * exactly the surplus is closed, and it is among the oldest (two MHD
 * threads accept, so the order is only roughly the order of connect()).
 */
static void test_slowloris_closes_oldest(void **state)
{
        struct fixture *f = *state;
        enum { N = 100 };
        int fds[N];
        bool closed[N] = { false };
        struct resp r;
        int64_t t0, ms;

        for (size_t i = 0; i < N; i++) {
                fds[i] = client_connect(f->port);
                client_send(fds[i], S("GET /healthz HTTP/1.1\r\nX-Slow: "));
        }
        assert_true(KC_TEST_WAIT_UNTIL(count_closed(fds, closed, N) >= N - CONNECTION_LIMIT, 2000));
        kc_test_sleep_ms(100); /* nothing more goes */
        assert_int_equal(count_closed(fds, closed, N), N - CONNECTION_LIMIT);
        for (size_t i = N / 2; i < N; i++)
                if (closed[i])
                        fail_msg("connection %zu of %d was closed, not an older one", i, N);

        t0 = kc_test_mono_ms();
        http_req(f->port, "GET", "/healthz", &r);
        ms = kc_test_mono_ms() - t0;
        print_message("/healthz under a %d-connection slowloris: %d in %" PRId64 " ms\n", N,
                      r.status, ms);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body, "ok");
        assert_true(ms < (int64_t)(1000 * kc_test_timeout_multiplier()));
        resp_done(&r);

        /* /healthz took one more slot, from the old ones; the newest is still served. */
        assert_true(
                KC_TEST_WAIT_UNTIL(count_closed(fds, closed, N) == N - CONNECTION_LIMIT + 1, 2000));
        assert_false(closed[N - 1]);
        client_send(fds[N - 1], S("a\r\nHost: a\r\nConnection: close\r\n\r\n"));
        assert_int_equal(client_read(fds[N - 1], &r), 0);
        assert_int_equal(r.status, 200);
        resp_done(&r);
        for (size_t i = 0; i < N; i++)
                close(fds[i]);
}

/*
 * fuzz_http's finding: a ~14.5 KiB request line whose query arguments use up
 * the 16 KiB connection memory leaves libmicrohttpd 0.9.75 unable to read
 * the rest of the request, and it answers neither 414 nor 431: it waits for
 * more until its idle timeout (10 s), holding the rest unread. That must
 * stay confined to the one connection: /healthz still answers at once, and
 * the client's EOF closes it.
 */
static void test_request_at_memory_limit(void **state)
{
        struct fixture *f = *state;
        static const char args[] = "?e&l&&&&&&&&&&&&x=/&e&;x&&&&/&e&e/&&&/&&e&mu&=L";
        size_t n = 14469, len = 0;
        char *req = malloc(n + 256);
        struct pollfd p;
        struct resp r;
        int64_t t0, ms;
        int fd;

        assert_non_null(req);
        len += (size_t)sprintf(req, "GET /healthz?");
        memset(req + len, 'a', n);
        len += n;
        len += (size_t)sprintf(req + len, "%s HTTP/1.1\n", args);
        memset(req + len, 'a', 62); /* a header line, never ended */
        len += 62;
        fd = client_connect(f->port);
        client_send(fd, req, len);
        free(req);
        kc_test_sleep_ms(100);
        p = (struct pollfd){ .fd = fd, .events = POLLIN };
        print_message("request at the memory limit: %s after 100 ms\n",
                      poll(&p, 1, 0) == 1 ? "answered or closed" : "pending");

        t0 = kc_test_mono_ms();
        http_req(f->port, "GET", "/healthz", &r);
        ms = kc_test_mono_ms() - t0;
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body, "ok");
        assert_true(ms < (int64_t)(1000 * kc_test_timeout_multiplier()));
        resp_done(&r);

        /*
         * The server may already have given up on it (a reset: shutdown()
         * fails with ENOTCONN); if not, the client's EOF must close it.
         */
        if (shutdown(fd, SHUT_WR) < 0) {
                print_message("request at the memory limit: %s before the client's EOF\n",
                              strerror(errno));
                assert_int_equal(errno, ENOTCONN);
        } else {
                assert_true(closed_by_server(fd, (int)(2000 * kc_test_timeout_multiplier())));
        }
        close(fd);
}

/* ---- /pods streamed ----------------------------------------------------- */

#define STREAM_BIG (40 * 1024) /* more than MHD's block: sent in several reads */

/* A stream of a big first piece, then ",2", then "]": fails where told. */
struct stream_state {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool gate_open; /* the piece after the first may come */
        bool gated;     /* wait for the gate before the second piece */
        int fail_open;  /* open() fails with this */
        int fail_at;    /* next() call (1-based) that fails; 0: none */
        atomic_int opens, closes, nexts;
        char *big;
};

struct stream_cursor {
        struct stream_state *st;
        int calls;
};

static int stream_open(void *userdata, void **ret)
{
        struct stream_state *st = userdata;
        struct stream_cursor *cur;

        if (st->fail_open)
                return st->fail_open;
        cur = calloc(1, sizeof(*cur));
        if (!cur)
                return -ENOMEM;
        cur->st = st;
        atomic_fetch_add(&st->opens, 1);
        *ret = cur;
        return 0;
}

static int stream_next(void *stream, const char **ret_data, size_t *ret_len)
{
        struct stream_cursor *cur = stream;
        struct stream_state *st = cur->st;
        int call = ++cur->calls;

        atomic_fetch_add(&st->nexts, 1);
        if (call == st->fail_at)
                return -EIO;
        if (call == 2 && st->gated) {
                struct timespec until;

                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_sec += 10;
                pthread_mutex_lock(&st->lock);
                while (!st->gate_open)
                        if (pthread_cond_timedwait(&st->cond, &st->lock, &until) != 0)
                                break;
                pthread_mutex_unlock(&st->lock);
        }
        switch (call) {
        case 1:
                *ret_data = st->big;
                *ret_len = STREAM_BIG;
                break;
        case 2:
                *ret_data = ",2";
                *ret_len = 2;
                break;
        case 3:
                *ret_data = "]";
                *ret_len = 1;
                break;
        default:
                *ret_data = "";
                *ret_len = 0;
        }
        return 0;
}

static void stream_close(void *stream)
{
        struct stream_cursor *cur = stream;

        atomic_fetch_add(&cur->st->closes, 1);
        free(cur);
}

static const struct kc_http_stream_ops stream_ops = {
        .open = stream_open,
        .next = stream_next,
        .close = stream_close,
};

static void stream_state_init(struct stream_state *st)
{
        *st = (struct stream_state){ .big = malloc(STREAM_BIG) };
        assert_non_null(st->big);
        memset(st->big, 'a', STREAM_BIG);
        st->big[0] = '[';
        pthread_mutex_init(&st->lock, NULL);
        pthread_cond_init(&st->cond, NULL);
}

static void stream_state_done(struct stream_state *st)
{
        pthread_mutex_destroy(&st->lock);
        pthread_cond_destroy(&st->cond);
        free(st->big);
}

static struct kc_http_server *stream_server(struct stream_state *st)
{
        const struct kc_http_config cfg = { .stream_pods = &stream_ops, .pods_userdata = st };
        struct kc_http_server *srv = NULL;

        assert_int_equal(kc_http_server_start(&cfg, &srv), 0);
        return srv;
}

/*
 * Decodes a chunked body in place; true when it ends with the last (empty)
 * chunk, i.e. the whole body came.
 */
static bool dechunk(char *body, size_t *ret_len)
{
        char *in = body, *out = body;

        for (;;) {
                char *end;
                unsigned long n = strtoul(in, &end, 16);

                if (end == in || strncmp(end, "\r\n", 2) != 0)
                        break;
                in = end + 2;
                if (n == 0) {
                        *ret_len = (size_t)(out - body);
                        return strcmp(in, "\r\n") == 0;
                }
                if (strlen(in) < n + 2)
                        break;
                memmove(out, in, n);
                out += n;
                in += n + 2;
        }
        *ret_len = (size_t)(out - body);
        return false;
}

/* Reads @p fd into @p buf until @p want bytes came (or EOF); returns the count. */
static size_t read_at_least(int fd, char *buf, size_t cap, size_t want)
{
        size_t len = 0;

        while (len < want && len < cap) {
                ssize_t n = recv(fd, buf + len, cap - len, 0);
                if (n <= 0)
                        break;
                len += (size_t)n;
        }
        return len;
}

/*
 * The body goes out while the stream is still producing it: the client
 * holds more than MHD's block of the first piece before the stream may
 * give its second. Chunked (length unknown), the bytes exactly the pieces'.
 */
static void test_pods_streamed(void **state)
{
        struct stream_state st;
        _cleanup_(kc_http_server_stopp) struct kc_http_server *srv = NULL;
        static const char req[] = "GET /pods HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
        char *early = malloc(2 * STREAM_BIG);
        struct resp r;
        size_t got, len;
        int fd;

        (void)state;
        assert_non_null(early);
        stream_state_init(&st);
        st.gated = true;
        srv = stream_server(&st);

        fd = client_connect(kc_http_server_port(srv));
        client_send(fd, req, sizeof(req) - 1);
        got = read_at_least(fd, early, 2 * STREAM_BIG, STREAM_BIG / 2 + 1024);
        assert_true(got >= STREAM_BIG / 2 + 1024);
        pthread_mutex_lock(&st.lock);
        st.gate_open = true;
        pthread_cond_broadcast(&st.cond);
        pthread_mutex_unlock(&st.lock);
        assert_int_equal(client_read(fd, &r), 0);
        close(fd);

        /* The whole response: what came before the gate opened, then the rest. */
        {
                size_t rest = strlen(r.raw);
                char *all = malloc(got + rest + 1);

                assert_non_null(all);
                memcpy(all, early, got);
                memcpy(all + got, r.raw, rest + 1);
                resp_done(&r);
                r.raw = all;
                assert_int_equal(sscanf(all, "HTTP/1.1 %d", &r.status), 1);
                r.body = strstr(all, "\r\n\r\n") + 4;
        }
        assert_int_equal(r.status, 200);
        assert_true(has_header(&r, "Transfer-Encoding: chunked"));
        assert_true(has_header(&r, "Content-Type: application/json"));
        assert_false(has_header(&r, "Content-Length:"));
        assert_true(dechunk((char *)r.body, &len));
        assert_int_equal(len, STREAM_BIG + 3);
        assert_memory_equal(r.body, st.big, STREAM_BIG);
        assert_memory_equal(r.body + STREAM_BIG, ",2]", 3);
        resp_done(&r);
        free(early);

        srv = kc_http_server_stop(srv);
        assert_int_equal(atomic_load(&st.opens), 1);
        assert_int_equal(atomic_load(&st.closes), 1);
        assert_int_equal(atomic_load(&st.nexts), 4);
        stream_state_done(&st);
}

/*
 * A stream that fails before its first piece is a 500; one that fails later
 * cuts the connection (no last chunk: the client sees the body is short).
 * Every opened stream is closed once: HEAD, a client that leaves early.
 */
static void test_pods_stream_errors(void **state)
{
        struct stream_state st;
        _cleanup_(kc_http_server_stopp) struct kc_http_server *srv = NULL;
        struct resp r;
        size_t len;
        int fd;

        (void)state;
        stream_state_init(&st);
        srv = stream_server(&st);
        uint16_t port = kc_http_server_port(srv);

        st.fail_open = -ENOMEM;
        http_req(port, "GET", "/pods", &r);
        assert_int_equal(r.status, 500);
        assert_non_null(strstr(r.body, "rendering pods failed"));
        resp_done(&r);
        st.fail_open = 0;

        st.fail_at = 1;
        http_req(port, "GET", "/pods", &r);
        assert_int_equal(r.status, 500);
        assert_non_null(strstr(r.body, "rendering pods failed"));
        resp_done(&r);

        st.fail_at = 3;
        http_req(port, "GET", "/pods", &r);
        assert_int_equal(r.status, 200);
        assert_false(dechunk((char *)r.body, &len));
        assert_true(len >= STREAM_BIG);
        resp_done(&r);
        st.fail_at = 0;

        /* HEAD: GET's headers with the length of GET's body, and no body. */
        http_req(port, "HEAD", "/pods", &r);
        assert_int_equal(r.status, 200);
        assert_true(has_header(&r, "Content-Length: 40963\r\n"));
        assert_false(has_header(&r, "Transfer-Encoding:"));
        assert_string_equal(r.body, "");
        resp_done(&r);

        /* A client that reads a little and leaves. */
        fd = client_connect(port);
        client_send(fd, S("GET /pods HTTP/1.1\r\nHost: a\r\n\r\n"));
        {
                char buf[256];

                assert_true(recv(fd, buf, sizeof(buf), 0) > 0);
        }
        close(fd);

        assert_true(KC_TEST_WAIT_UNTIL(atomic_load(&st.closes) == 4, 2000));
        srv = kc_http_server_stop(srv);
        assert_int_equal(atomic_load(&st.opens), 4);
        assert_int_equal(atomic_load(&st.closes), 4);
        stream_state_done(&st);
}

static void test_pods_stream_config(void **state)
{
        const struct kc_http_stream_ops no_next = { .open = stream_open, .close = stream_close };
        struct kc_http_config cfg = { .render_pods = render_pods, .stream_pods = &stream_ops };
        struct kc_http_server *srv = (struct kc_http_server *)&cfg;

        (void)state;
        assert_int_equal(kc_http_server_start(&cfg, &srv), -EINVAL);
        cfg.render_pods = NULL;
        cfg.stream_pods = &no_next;
        assert_int_equal(kc_http_server_start(&cfg, &srv), -EINVAL);
        assert_ptr_equal(srv, (struct kc_http_server *)&cfg);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_healthz_ok, setup, teardown),
                cmocka_unit_test_setup_teardown(test_healthz_verbose, setup, teardown),
                cmocka_unit_test_setup_teardown(test_healthz_failing, setup, teardown),
                cmocka_unit_test_setup_teardown(test_metrics, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pods_node, setup, teardown),
                cmocka_unit_test_setup_teardown(test_not_found_and_method, setup, teardown),
                cmocka_unit_test_setup_teardown(test_path_tricks, setup, teardown),
                cmocka_unit_test_setup_teardown(test_oversized, setup, teardown),
                cmocka_unit_test_setup_teardown(test_slow_client_does_not_block, setup, teardown),
                cmocka_unit_test_setup_teardown(test_slowloris_closes_oldest, setup, teardown),
                cmocka_unit_test_setup_teardown(test_request_at_memory_limit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stop_prompt_with_open_connection, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_start_errors, setup, teardown),
                cmocka_unit_test_setup_teardown(test_concurrent_clients, setup, teardown),
                cmocka_unit_test(test_pods_streamed),
                cmocka_unit_test(test_pods_stream_errors),
                cmocka_unit_test(test_pods_stream_config),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
