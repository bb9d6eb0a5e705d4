/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The lifecycle handler runner (upstream kubelet/lifecycle handlers.go,
 * HandlerRunner): exec through the runtime's ExecSync, httpGet through a
 * small HTTP/1.1 client, sleep on the injected clock.
 */
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/cancel.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/format.h"
#include "core/log.h"
#include "internal.h"
#include "lifecycle.h"
#include "runtime/api_pod.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"

/* The User-Agent of hook requests when the handler sets none (upstream: kube-lifecycle/<version>). */
#define HOOK_USER_AGENT "kube-lifecycle/cubelet"
/* The most of a response read (and thrown away) before the connection is closed. */
#define HOOK_MAX_RESPONSE (64 * 1024)

char *kc__go_quote(const char *s)
{
        static const char from[] = "\"\\\a\b\f\n\r\t\v", to[] = "\"\\abfnrtv";
        char *q = malloc(strlen(s) * 4 + 3), *o;
        const char *p;

        if (!q)
                return NULL;
        o = q;
        *o++ = '"';
        for (; *s; s++) {
                unsigned char ch = (unsigned char)*s;

                if (ch && (p = strchr(from, ch))) {
                        *o++ = '\\';
                        *o++ = to[p - from];
                } else if (ch < 0x20 || ch == 0x7f) {
                        o += sprintf(o, "\\x%02x", ch);
                } else {
                        *o++ = (char)ch;
                }
        }
        *o++ = '"';
        *o = '\0';
        return q;
}

static const char *s_or_empty(const char *s)
{
        return s ? s : "";
}

/* format.Pod: "<name>_<namespace>(<uid>)", Go-quoted. NULL on ENOMEM. */
static char *quoted_pod(const struct kc_api_pod *pod)
{
        _cleanup_free_ char *s = kc_strdup_printf("%s_%s(%s)", s_or_empty(pod->name),
                                                  s_or_empty(pod->namespace), s_or_empty(pod->uid));

        return s ? kc__go_quote(s) : NULL;
}

/* Go's %v of a []string: "[a b c]". NULL on ENOMEM. */
static char *go_strv(const char *const *v, size_t n)
{
        size_t len = 3, i;
        char *out, *o;

        for (i = 0; i < n; i++)
                len += strlen(s_or_empty(v[i])) + 1;
        out = o = malloc(len);
        if (!out)
                return NULL;
        *o++ = '[';
        for (i = 0; i < n; i++)
                o = stpcpy(stpcpy(o, i ? " " : ""), s_or_empty(v[i]));
        strcpy(o, "]");
        return out;
}

/* runExecHandler: ExecSync; a command that ran and exited non-zero is a failure. */
static int run_exec(const struct kc__hook_env *env, const struct kc_api_pod *pod,
                    const struct kc_api_container *c, const char *id,
                    const struct kc_api_handler *h, int64_t timeout_s, char **ret_msg)
{
        struct kc_runtime_service *svc = env->svc;
        struct kc_exec_sync_result out = { 0 };
        struct kc_runtime_error e = { 0 };
        _cleanup_free_ char *err = NULL, *cmd = NULL, *output = NULL, *qo = NULL, *qc = NULL,
                            *qp = NULL, *joined = NULL;
        int r;

        if (!svc->ops->exec_sync)
                r = kc_runtime_error_set(&e, -EOPNOTSUPP, KC_RUNTIME_UNIMPLEMENTED,
                                         "the runtime service has no ExecSync");
        else
                r = svc->ops->exec_sync(svc->self, id, h->command, h->n_command, timeout_s, &out,
                                        &e);
        if (r == 0 && out.exit_code == 0) {
                kc_exec_sync_result_done(&out);
                return 0;
        }
        cmd = go_strv(h->command, h->n_command);
        if (r == 0) {
                /* The CRI client's words for a non-zero exit (remote ExecSync). */
                joined = go_strv(h->command, h->n_command);
                if (joined) {
                        joined[strlen(joined) - 1] = '\0';
                        err = kc_strdup_printf("command '%s' exited with %" PRId32 ": %s",
                                               joined + 1, out.exit_code, s_or_empty(out.err));
                }
                output = kc_strdup_printf("%s%s", s_or_empty(out.out), s_or_empty(out.err));
                r = -EIO;
        } else {
                err = strdup(e.message[0] ? e.message : strerror(-r));
                output = strdup("");
        }
        kc_exec_sync_result_done(&out);
        qo = output ? kc__go_quote(output) : NULL;
        qc = kc__go_quote(s_or_empty(c->name));
        qp = quoted_pod(pod);
        if (cmd && err && qo && qc && qp)
                *ret_msg = kc_strdup_printf("Exec lifecycle hook (%s) for Container %s in Pod %s "
                                            "failed - error: %s, message: %s",
                                            cmd, qc, qp, err, qo);
        return r;
}

/* resolvePort: a number, a numeric string, or the name of one of the container's ports. */
static int resolve_port(const struct kc_api_container *c, const struct kc_api_port_ref *ref,
                        char **ret_err)
{
        char *end;
        long v;
        size_t i;

        if (!ref->name)
                return ref->number;
        if (!*ref->name)
                return 80;
        v = strtol(ref->name, &end, 10);
        if (*end == '\0' && v >= 0 && v <= 65535)
                return (int)v;
        for (i = 0; i < c->n_ports; i++)
                if (kc__streq(c->ports[i].name, ref->name))
                        return c->ports[i].container_port;
        *ret_err = kc_strdup_printf("couldn't find port: %s in container %s", ref->name,
                                    s_or_empty(c->name));
        return -ENOENT;
}

/* Milliseconds left until @p deadline (CLOCK_MONOTONIC ns; 0: none), capped at 1 s. */
static int poll_slice(int64_t deadline)
{
        struct timespec ts;
        int64_t now, left;

        if (deadline == 0)
                return 1000;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        now = (int64_t)ts.tv_sec * KC_NSEC_PER_SEC + ts.tv_nsec;
        left = deadline - now;
        if (left <= 0)
                return 0;
        return left > KC_NSEC_PER_SEC ? 1000 : (int)((left + 999999) / 1000000);
}

/*
 * Waits for @p events on @p fd until the deadline, in slices of at most 1 s
 * so that a cancelled context ends the wait. 0, -ETIMEDOUT or -ECANCELED.
 */
static int wait_fd(int fd, short events, int64_t deadline, struct kc_cancel *ctx)
{
        struct pollfd p = { .fd = fd, .events = events };
        int ms, n;

        for (;;) {
                if (ctx && kc_cancel_is_set(ctx))
                        return -ECANCELED;
                ms = poll_slice(deadline);
                if (ms == 0)
                        return -ETIMEDOUT;
                n = poll(&p, 1, ms);
                if (n > 0)
                        return 0;
                if (n < 0 && errno != EINTR)
                        return -errno;
        }
}

/* A connected non-blocking TCP socket to @p host:@p port. */
static int dial(const char *host, int port, int64_t deadline, struct kc_cancel *ctx)
{
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV }, *ai;
        char ps[16];
        int fd, r, err = 0;
        socklen_t len = sizeof(err);

        snprintf(ps, sizeof(ps), "%d", port);
        if (getaddrinfo(host, ps, &hints, &ai) != 0)
                return -EHOSTUNREACH;
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
                r = -errno;
                freeaddrinfo(ai);
                return r;
        }
        r = connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 ? -errno : 0;
        freeaddrinfo(ai);
        if (r == -EINPROGRESS) {
                r = wait_fd(fd, POLLOUT, deadline, ctx);
                if (r == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
                        r = -errno;
                else if (r == 0)
                        r = -err;
        }
        if (r < 0) {
                close(fd);
                return r;
        }
        return fd;
}

/* The request: GET <path>, Host, User-Agent and Accept unless the handler's headers set them. */
static char *http_request(const struct kc_api_handler *h, const char *hostport)
{
        bool host = false, ua = false, accept = false;
        _cleanup_free_ char *buf = NULL;
        const char *path = s_or_empty(h->path);
        size_t len = 0, i;
        FILE *f = open_memstream(&buf, &len);

        if (!f)
                return NULL;
        fprintf(f, "GET %s%s HTTP/1.1\r\n", *path == '/' ? "" : "/", path);
        for (i = 0; i < h->n_headers; i++) {
                const char *n = s_or_empty(h->headers[i].name);

                host |= strcasecmp(n, "Host") == 0;
                ua |= strcasecmp(n, "User-Agent") == 0;
                accept |= strcasecmp(n, "Accept") == 0;
                fprintf(f, "%s: %s\r\n", n, s_or_empty(h->headers[i].value));
        }
        if (!host)
                fprintf(f, "Host: %s\r\n", hostport);
        if (!ua)
                fprintf(f, "User-Agent: %s\r\n", HOOK_USER_AGENT);
        if (!accept)
                fprintf(f, "Accept: */*\r\n");
        fprintf(f, "Connection: close\r\n\r\n");
        if (fclose(f) != 0)
                return NULL;
        return TAKE_PTR(buf);
}

/* Sends @p req and reads the response (thrown away, as upstream) until EOF or the cap. */
static int http_exchange(int fd, const char *req, int64_t deadline, struct kc_cancel *ctx)
{
        size_t off = 0, len = strlen(req), got = 0;
        char buf[4096], head[8] = { 0 };
        ssize_t n;
        int r;

        while (off < len) {
                n = send(fd, req + off, len - off, MSG_NOSIGNAL);
                if (n < 0 && errno != EAGAIN && errno != EINTR)
                        return -errno;
                if (n > 0)
                        off += (size_t)n;
                else if ((r = wait_fd(fd, POLLOUT, deadline, ctx)) < 0)
                        return r;
        }
        while (got < HOOK_MAX_RESPONSE) {
                n = recv(fd, buf, sizeof(buf), 0);
                if (n == 0)
                        break;
                if (n < 0 && errno != EAGAIN && errno != EINTR)
                        return -errno;
                if (n < 0) {
                        if ((r = wait_fd(fd, POLLIN, deadline, ctx)) < 0)
                                return r;
                        continue;
                }
                if (got < sizeof(head) - 1)
                        memcpy(head + got, buf,
                               (size_t)n < sizeof(head) - 1 - got ? (size_t)n
                                                                  : sizeof(head) - 1 - got);
                got += (size_t)n;
        }
        return strncmp(head, "HTTP/1.", 7) == 0 ? 0 : -EPROTO;
}

static int64_t monotonic_deadline(int64_t timeout_s)
{
        struct timespec ts;

        if (timeout_s <= 0)
                return 0;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * KC_NSEC_PER_SEC + ts.tv_nsec + timeout_s * KC_NSEC_PER_SEC;
}

/* The pod IP: the env's, else the sandbox's status. NULL with *ret_err when none. */
static char *pod_ip(const struct kc__hook_env *env, char **ret_err)
{
        struct kc_pod_sandbox_status_result st = { 0 };
        struct kc_runtime_error e = { 0 };
        char *ip = NULL;

        if (env->pod_ip && *env->pod_ip)
                return strdup(env->pod_ip);
        if (env->sandbox_id &&
            env->svc->ops->pod_sandbox_status(env->svc->self, env->sandbox_id, &st, &e) == 0) {
                if (st.status.ip && *st.status.ip)
                        ip = strdup(st.status.ip);
                kc_runtime_result_done(&st);
        }
        if (!ip)
                *ret_err = strdup("failed to find networking container: the pod has no IP");
        return ip;
}

/* runHTTPHandler: *ret_err says why it failed (Go's net/http words where it can). */
static int http_get(const struct kc__hook_env *env, const struct kc_api_container *c,
                    const struct kc_api_handler *h, int64_t timeout_s, char **ret_err)
{
        _cleanup_free_ char *host = NULL, *hostport = NULL, *req = NULL;
        _cleanup_close_ int fd = -1;
        int64_t deadline = monotonic_deadline(timeout_s);
        int port, r;

        if (h->https) {
                *ret_err = strdup("scheme HTTPS is not supported: cubelet has no TLS client");
                return -EPROTONOSUPPORT;
        }
        host = h->host && *h->host ? strdup(h->host) : pod_ip(env, ret_err);
        if (!host)
                return *ret_err ? -EHOSTUNREACH : -ENOMEM;
        port = resolve_port(c, &h->port, ret_err);
        if (port < 0)
                return port;
        hostport = kc_strdup_printf(strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
        req = hostport ? http_request(h, hostport) : NULL;
        if (!req)
                return -ENOMEM;
        fd = dial(host, port, deadline, env->ctx);
        if (fd < 0) {
                *ret_err = kc_strdup_printf("Get \"http://%s%s%s\": dial tcp %s: connect: %s",
                                            hostport, *s_or_empty(h->path) == '/' ? "" : "/",
                                            s_or_empty(h->path), hostport, strerror(-fd));
                return fd;
        }
        r = http_exchange(fd, req, deadline, env->ctx);
        if (r < 0)
                *ret_err = kc_strdup_printf(
                        "Get \"http://%s%s%s\": %s", hostport,
                        *s_or_empty(h->path) == '/' ? "" : "/", s_or_empty(h->path),
                        r == -EPROTO ? "malformed HTTP response" : strerror(-r));
        return r;
}

/* runSleepHandler: sleeps @p h->sleep_seconds (at most @p timeout_s) unless cancelled. */
static int run_sleep(const struct kc__hook_env *env, const struct kc_api_handler *h,
                     int64_t timeout_s, char **ret_err)
{
        int64_t s = h->sleep_seconds;
        int r;

        if (timeout_s > 0 && s > timeout_s)
                s = timeout_s;
        r = kc_clock_sleep(env->clock ? env->clock : kc_clock_real(), s * KC_NSEC_PER_SEC,
                           env->ctx);
        if (r < 0)
                *ret_err = strdup("container terminated before sleep hook finished");
        return r;
}

int kc__run_handler(const struct kc__hook_env *env, const struct kc_api_pod *pod,
                    const struct kc_api_container *c, const char *container_id,
                    const struct kc_api_handler *h, int64_t timeout_s, char **ret_msg)
{
        _cleanup_free_ char *err = NULL, *qc = NULL, *qp = NULL;
        int r;

        *ret_msg = NULL;
        switch (h->kind) {
        case KC_HANDLER_EXEC:
                return run_exec(env, pod, c, container_id, h, timeout_s, ret_msg);
        case KC_HANDLER_HTTP_GET:
                r = http_get(env, c, h, timeout_s, &err);
                break;
        case KC_HANDLER_SLEEP:
                r = run_sleep(env, h, timeout_s, &err);
                break;
        default:
                *ret_msg = strdup("Cannot run handler: invalid handler");
                return -EINVAL;
        }
        if (r == 0)
                return 0;
        qc = kc__go_quote(s_or_empty(c->name));
        qp = quoted_pod(pod);
        if (!qc || !qp)
                return r;
        if (h->kind == KC_HANDLER_HTTP_GET)
                *ret_msg = kc_strdup_printf("HTTP lifecycle hook (%s) for Container %s in Pod %s "
                                            "failed - error: %s",
                                            s_or_empty(h->path), qc, qp, err ? err : strerror(-r));
        else
                *ret_msg = kc_strdup_printf("Sleep lifecycle hook (%" PRId64 ") for Container %s "
                                            "in Pod %s failed - error: %s",
                                            h->sleep_seconds, qc, qp, err ? err : strerror(-r));
        return r;
}
