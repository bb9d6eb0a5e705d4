/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The lifecycle handler runner (upstream kubelet/lifecycle handlers.go,
 * HandlerRunner): exec through the runtime's ExecSync, httpGet through the
 * shared HTTP client (runtime/http_client.h), sleep on the injected clock.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cancel.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/format.h"
#include "core/log.h"
#include "internal.h"
#include "lifecycle.h"
#include "runtime/api_pod.h"
#include "runtime/error.h"
#include "runtime/http_client.h"
#include "runtime/runtime_service.h"

/* The User-Agent of hook requests when the handler sets none (upstream: kube-lifecycle/<version>). */
#define HOOK_USER_AGENT "kube-lifecycle/cubelet"
/* The most of a response's body read (and thrown away) before the connection is closed. */
#define HOOK_MAX_RESPONSE (64 * 1024)

static const char *s_or_empty(const char *s)
{
        return s ? s : "";
}

/* format.Pod: "<name>_<namespace>(<uid>)", Go-quoted. NULL on ENOMEM. */
static char *quoted_pod(const struct kc_api_pod *pod)
{
        _cleanup_free_ char *s = kc_strdup_printf("%s_%s(%s)", s_or_empty(pod->name),
                                                  s_or_empty(pod->namespace), s_or_empty(pod->uid));

        return s ? kc_go_quote(s) : NULL;
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
        qo = output ? kc_go_quote(output) : NULL;
        qc = kc_go_quote(s_or_empty(c->name));
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

/*
 * runHTTPHandler: one GET through the shared client (runtime/http_client.h;
 * HTTPS without certificate verification, as upstream); any HTTP answer
 * will do. *ret_err says why it failed, in Go's net/http words.
 */
static int http_get(const struct kc__hook_env *env, const struct kc_api_container *c,
                    const struct kc_api_handler *h, int64_t timeout_s, char **ret_err)
{
        _cleanup_free_ char *host = NULL, *url = NULL, *err = NULL;
        struct kc_http_response resp = { 0 };
        const char *path = s_or_empty(h->path);
        int port, r;

        host = h->host && *h->host ? strdup(h->host) : pod_ip(env, ret_err);
        if (!host)
                return *ret_err ? -EHOSTUNREACH : -ENOMEM;
        port = resolve_port(c, &h->port, ret_err);
        if (port < 0)
                return port;
        url = kc_strdup_printf(strchr(host, ':') ? "%s://[%s]:%d%s%s" : "%s://%s:%d%s%s",
                               h->https ? "https" : "http", host, port, *path == '/' ? "" : "/",
                               path);
        if (!url)
                return -ENOMEM;
        r = kc_http_get(&(struct kc_http_request){ .host = host,
                                                   .port = port,
                                                   .tls = h->https,
                                                   .path = path,
                                                   .headers = h->headers,
                                                   .n_headers = h->n_headers,
                                                   .user_agent = HOOK_USER_AGENT },
                        timeout_s > 0 ? kc_net_deadline(timeout_s * KC_NSEC_PER_SEC) : 0, env->ctx,
                        HOOK_MAX_RESPONSE, &resp, &err);
        if (r < 0) {
                *ret_err = err ? kc_strdup_printf("Get \"%s\": %s", url, err) : NULL;
                return r;
        }
        kc_http_response_done(&resp);
        return 0;
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
        qc = kc_go_quote(s_or_empty(c->name));
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
