/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_http: the read-only HTTP server (health/http.c) as the daemon runs
 * it: kc_http_server_start() with /healthz checks (one passing, one
 * failing), /metrics over a registry with kubelet's metrics, /pods and a
 * /node whose rendering fails, on libmicrohttpd's own threads. Each input
 * is the raw bytes a client sends on one connection: one end of a
 * socketpair goes to the server (kc__http_server_add_connection(), as if
 * accepted from 127.0.0.1), the input is written to the other end, whose
 * write side is then shut down once the server has read it all, and the
 * reply is read until the server closes. Whatever the server sends must be
 * HTTP/1.x responses, it must keep accepting connections (it frees their
 * slots), and it must never stall: when it stops reading or answering one
 * connection, a second connection must still get /healthz answered within
 * 5 s (see server_serves() and tests/fuzz/README.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "kubelet/server/server.h"
#include "metrics/kubelet_metrics.h"
#include "metrics/registry.h"

/* health/http.c, for tests only. */
int kc__http_server_add_connection(struct kc_http_server *s, int fd);

/*
 * A connection that makes no progress this long (the server reads none of
 * the bytes left, or does not close after the client's EOF) is given up on,
 * and the server must then prove it still serves (server_serves()).
 */
#define STALL_MS 1000
/*
 * How long a fresh connection may wait for its /healthz reply: longer
 * means the server is stuck. STALL_MS + STUCK_MS stays below libFuzzer's
 * -timeout=10 of scripts/fuzz.sh.
 */
#define STUCK_MS 5000

/*
 * The harness's own code gets no coverage instrumentation: its wait loops
 * run more or fewer times as the server is slower or faster, and counted
 * as features they made libFuzzer keep and mutate the slowest inputs (the
 * run crawled at ~1 exec/s). Only the server's code guides the fuzzing.
 */
#define NO_COVERAGE __attribute__((no_sanitize("coverage")))

static struct kc_http_server *server;
/* stderr as it was before libFuzzer's -close_fd_mask: the harness's own diagnostics. */
static FILE *diag;
static struct kc_metrics_registry *registry;
static struct kc_kubelet_metrics metrics;

static bool check_ok(void *userdata, char **ret_err)
{
        (void)userdata;
        (void)ret_err;
        return true;
}

static bool check_failing(void *userdata, char **ret_err)
{
        (void)userdata;
        *ret_err = strdup("PLEG is not healthy: pleg was last seen active 3m0s ago");
        return false;
}

static int render_pods(void *userdata, char **ret_json)
{
        (void)userdata;
        *ret_json = strdup("{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[]}");
        return *ret_json ? 0 : -ENOMEM;
}

static int render_node_fails(void *userdata, char **ret_json)
{
        (void)userdata;
        (void)ret_json;
        return -EIO;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
        static const struct kc_http_check checks[] = {
                { .name = "log", .fn = check_ok },
                { .name = "pleg", .fn = check_failing },
        };
        struct kc_http_config cfg = {
                .address = "127.0.0.1",
                .port = 0,
                .checks = checks,
                .n_checks = 2,
                .render_pods = render_pods,
                .render_node = render_node_fails,
        };
        int r;

        (void)argc;
        (void)argv;
        diag = fdopen(fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3), "w");
        if (!diag)
                diag = stderr;
        r = kc_metrics_registry_new(&registry);
        if (r >= 0)
                r = kc_kubelet_metrics_register(registry, &metrics);
        cfg.metrics = registry;
        if (r >= 0)
                r = kc_http_server_start(&cfg, &server);
        if (r < 0) {
                fprintf(stderr, "fuzz_http: set-up: %s\n", strerror(-r));
                abort();
        }
        return 0;
}

NO_COVERAGE static int64_t now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds until @p deadline, for poll(): never negative (that waits forever). */
NO_COVERAGE static int ms_left(int64_t deadline)
{
        int64_t ms = deadline - now_ms();

        return ms > 0 ? (int)ms : 0;
}

/* The reply must be HTTP/1.x responses: check the first status line. */
NO_COVERAGE static void check_reply(const char *buf, size_t n)
{
        if (n == 0)
                return;
        if (n < 12 || (memcmp(buf, "HTTP/1.1 ", 9) != 0 && memcmp(buf, "HTTP/1.0 ", 9) != 0)) {
                fprintf(stderr, "not an HTTP response: %.*s\n", (int)(n < 64 ? n : 64), buf);
                abort();
        }
}

static char reply[64 * 1024];
static size_t got;

/* Reads what the server sent; returns false at EOF (the server closed). */
NO_COVERAGE static bool read_reply(int fd)
{
        char tmp[4096];
        ssize_t k = read(fd, tmp, sizeof(tmp));

        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
                return false;
        if (k > 0 && got < sizeof(reply)) {
                size_t m = (size_t)k < sizeof(reply) - got ? (size_t)k : sizeof(reply) - got;

                memcpy(reply + got, tmp, m);
                got += m;
        }
        return true;
}

/* Bytes we sent that the server has not read yet. */
NO_COVERAGE static int unread(int fd)
{
        int n = 0;

        return ioctl(fd, SIOCOUTQ, &n) < 0 ? 0 : n;
}

/*
 * Whether the server still answers a fresh connection's /healthz within
 * STUCK_MS: what tells a server that is stuck from one that, as
 * libmicrohttpd does, leaves a single connection alone until its idle
 * timeout (10 s).
 */
NO_COVERAGE static bool server_serves(void)
{
        static const char req[] = "GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
        char buf[16];
        size_t n = 0;
        int64_t deadline = now_ms() + STUCK_MS;
        int sv[2];

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0) {
                perror("fuzz_http: socketpair");
                abort();
        }
        if (kc__http_server_add_connection(server, sv[1]) < 0 ||
            send(sv[0], req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof(req) - 1)) {
                close(sv[0]);
                return false;
        }
        while (n < sizeof(buf) && now_ms() < deadline) {
                struct pollfd p = { .fd = sv[0], .events = POLLIN };
                ssize_t k;

                if (poll(&p, 1, ms_left(deadline)) <= 0)
                        continue;
                k = read(sv[0], buf + n, sizeof(buf) - n);
                if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
                        break;
                if (k > 0)
                        n += (size_t)k;
        }
        close(sv[0]);
        return n >= 9 && memcmp(buf, "HTTP/1.1 ", 9) == 0;
}

/*
 * The connection made no progress for STALL_MS: a failure only if the
 * server no longer serves others either; otherwise logged.
 */
NO_COVERAGE static int stalled(const char *what, size_t off, size_t size)
{
        if (!server_serves()) {
                fprintf(diag,
                        "fuzz_http: %s for %d ms (%zu of %zu bytes written, %zu read), and a "
                        "new connection got no reply to /healthz within %d ms\n",
                        what, STALL_MS, off, size, got, STUCK_MS);
                fflush(diag);
                abort();
        }
        fprintf(diag,
                "fuzz_http: %s for %d ms (%zu of %zu bytes written, %zu read); it still "
                "serves new connections; closing\n",
                what, STALL_MS, off, size, got);
        fflush(diag);
        /*
         * Kept out of the corpus: it would be picked and mutated again and
         * again, each run costing STALL_MS, and the fuzzer would crawl.
         */
        return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
NO_COVERAGE int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        size_t off = 0;
        bool open = true;
        int sv[2], r;
        int64_t deadline;
        int left, before, ret = 0;

        got = 0;
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0) {
                perror("fuzz_http: socketpair");
                abort();
        }
        r = kc__http_server_add_connection(server, sv[1]);
        if (r < 0) {
                fprintf(stderr, "fuzz_http: add_connection: %s\n", strerror(-r));
                abort();
        }

        /* 1. The request bytes, reading whatever comes back meanwhile. */
        deadline = now_ms() + STALL_MS;
        while (open && off < size) {
                struct pollfd p = { .fd = sv[0], .events = POLLIN | POLLOUT };

                if (poll(&p, 1, ms_left(deadline)) <= 0) {
                        ret = stalled("the server read nothing", off, size);
                        goto done;
                }
                if (p.revents & POLLOUT) {
                        ssize_t k = send(sv[0], data + off, size - off, MSG_NOSIGNAL);

                        if (k > 0) {
                                off += (size_t)k;
                                deadline = now_ms() + STALL_MS;
                        } else if (k < 0 && errno != EAGAIN && errno != EINTR) {
                                break; /* the server closed */
                        }
                }
                if (p.revents & (POLLIN | POLLHUP | POLLERR))
                        open = read_reply(sv[0]);
        }

        /*
         * 2. Until the server has read all of it. Its epoll is edge-triggered:
         * an EOF that arrived with the last bytes would go unnoticed until its
         * idle timeout (10 s), so the EOF must come after they were read.
         * libmicrohttpd stops reading a request whose request line used up
         * its memory pool without answering 414/431 (README): the connection
         * then makes no progress, and the server must still serve others.
         */
        deadline = now_ms() + STALL_MS;
        before = unread(sv[0]);
        while (open && (left = unread(sv[0])) > 0) {
                struct pollfd p = { .fd = sv[0], .events = POLLIN };

                if (left < before) {
                        before = left;
                        deadline = now_ms() + STALL_MS;
                }
                if (now_ms() > deadline) {
                        ret = stalled("the server left bytes unread", off, size);
                        goto done;
                }
                if (poll(&p, 1, 1) > 0)
                        open = read_reply(sv[0]);
        }

        /*
         * 3. EOF: the server answers what it has, then closes. Rarely (about
         * once in 10^6 inputs, whatever their size) it misses the EOF; the
         * client then gives up and closes, and the server's idle timeout
         * frees the slot. A server that never frees slots fails
         * kc__http_server_add_connection() above.
         */
        shutdown(sv[0], SHUT_WR);
        deadline = now_ms() + STALL_MS;
        while (open) {
                struct pollfd p = { .fd = sv[0], .events = POLLIN };

                if (poll(&p, 1, ms_left(deadline)) <= 0) {
                        ret = stalled("no close after the client's EOF", off, size);
                        break;
                }
                open = read_reply(sv[0]);
        }
done:
        close(sv[0]);
        check_reply(reply, got);
        return ret;
}
