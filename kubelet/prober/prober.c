/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The prober (upstream pkg/kubelet/prober/prober.go): probe() runs one
 * probe of a container with runProbeWithRetries, runProbe picks the
 * handler: exec (pkg/probe/exec, through the runtime's ExecSync), tcpSocket
 * (pkg/probe/tcp), httpGet (pkg/probe/http, prober_http.c) and grpc
 * (pkg/probe/grpc, over the runtime's gRPC transport).
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/cleanup.h"
#include "core/clock.h"
#include "core/format.h"
#include "core/log.h"
#include "kubelet/prober/prober.h"
#include "prober_internal.h"
#include "runtime/api_pod.h"
#include "runtime/error.h"
#include "runtime/expansion.h"
#include "runtime/grpc_health.h"
#include "runtime/http_client.h"

struct kc_prober {
        struct kc_runtime_service svc;
        struct kc_clock *clock;
};

int kc_prober_new(struct kc_runtime_service svc, struct kc_clock *clock, struct kc_prober **ret)
{
        struct kc_prober *p;

        if (!svc.ops || !ret)
                return -EINVAL;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->svc = svc;
        p->clock = clock;
        *ret = p;
        return 0;
}

struct kc_prober *kc_prober_free(struct kc_prober *p)
{
        free(p);
        return NULL;
}

static const char *s_or_empty(const char *s)
{
        return s ? s : "";
}

static const char *const type_names[] = {
        [KC_PROBE_LIVENESS] = "Liveness",
        [KC_PROBE_READINESS] = "Readiness",
        [KC_PROBE_STARTUP] = "Startup",
};
static_assert(KC_ELEMENTSOF(type_names) == _KC_PROBE_TYPE_MAX, "a name per probe type");

static const char *const result_names[] = {
        [KC_PROBE_SUCCESS] = "success",
        [KC_PROBE_WARNING] = "warning",
        [KC_PROBE_FAILURE] = "failure",
        [KC_PROBE_UNKNOWN] = "unknown",
};
static_assert(KC_ELEMENTSOF(result_names) == _KC_PROBE_RESULT_MAX, "a name per probe result");

static void attempt_done(struct kc__probe_attempt *a)
{
        free(a->output);
        free(a->err);
        *a = (struct kc__probe_attempt){ 0 };
}

int kc__probe_resolve_port(const struct kc_api_container *c, const struct kc_api_port_ref *ref,
                           char **ret_err)
{
        long v = -1;
        char *end;

        if (!ref->name) {
                v = ref->number;
        } else {
                bool found = false;

                for (size_t i = 0; i < c->n_ports && !found; i++)
                        if (c->ports[i].name && strcmp(c->ports[i].name, ref->name) == 0) {
                                v = c->ports[i].container_port;
                                found = true;
                        }
                if (!found) {
                        /* Last ditch: a number written as a string. */
                        errno = 0;
                        v = strtol(ref->name, &end, 10);
                        if (!*ref->name || *end || errno) {
                                *ret_err = kc_strdup_printf(
                                        "strconv.Atoi: parsing \"%s\": invalid syntax", ref->name);
                                return -EINVAL;
                        }
                }
        }
        if (v > 0 && v < 65536)
                return (int)v;
        *ret_err = kc_strdup_printf("invalid port number: %ld", v);
        return -EINVAL;
}

/* strings.Join(@p v, " "). NULL on ENOMEM. */
static char *join(char *const *v, size_t n)
{
        size_t len = 1;
        char *out, *o;

        for (size_t i = 0; i < n; i++)
                len += strlen(v[i]) + 1;
        out = o = malloc(len);
        if (!out)
                return NULL;
        *o = '\0';
        for (size_t i = 0; i < n; i++)
                o = stpcpy(stpcpy(o, i ? " " : ""), v[i]);
        return out;
}

/* The exec probe (pkg/probe/exec): exit 0 succeeds, any other exit fails, a timeout fails. */
static int run_exec(struct kc_prober *p, const struct kc_api_probe *pr,
                    const struct kc_api_container *c, const char *container_id,
                    struct kc__probe_attempt *a)
{
        struct kc_runtime_service *svc = &p->svc;
        size_t n = pr->handler.n_command, i;
        _cleanup_free_ struct kc_label *vars = calloc(c->n_env + 1, sizeof(*vars));
        _cleanup_free_ char **argv = calloc(n + 1, sizeof(*argv));
        struct kc_exec_sync_result out = { 0 };
        struct kc_runtime_error e = { 0 };
        int r = 0;

        if (!vars || !argv)
                return -ENOMEM;
        for (i = 0; i < c->n_env; i++)
                vars[i] = (struct kc_label){ s_or_empty(c->env[i].name),
                                             s_or_empty(c->env[i].value) };
        for (i = 0; i < n && r == 0; i++)
                if (!(argv[i] = kc_expand(s_or_empty(pr->handler.command[i]), vars, c->n_env)))
                        r = -ENOMEM;
        if (r == 0 && !svc->ops->exec_sync)
                r = kc_runtime_error_set(&e, -EOPNOTSUPP, KC_RUNTIME_UNIMPLEMENTED,
                                         "the runtime service has no ExecSync");
        else if (r == 0)
                r = svc->ops->exec_sync(svc->self, container_id, (const char *const *)argv, n,
                                        pr->timeout_seconds, &out, &e);
        if (r == 0) {
                /* RunInContainer's stdout then stderr, through a 10 KiB LimitWriter. */
                a->result = out.exit_code == 0 ? KC_PROBE_SUCCESS : KC_PROBE_FAILURE;
                a->output = kc_strdup_printf("%s%s", s_or_empty(out.out), s_or_empty(out.err));
                if (a->output && strlen(a->output) > KC_PROBE_MAX_OUTPUT)
                        a->output[KC_PROBE_MAX_OUTPUT] = '\0';
                r = a->output ? 0 : -ENOMEM;
        } else if (r == -ETIMEDOUT || e.code == KC_RUNTIME_DEADLINE_EXCEEDED) {
                /* remote_runtime.go's words for DeadlineExceeded; ExecProbeTimeout is on. */
                _cleanup_free_ char *joined = join(argv, n);
                _cleanup_free_ char *q = joined ? kc_go_quote(joined) : NULL;

                a->result = KC_PROBE_FAILURE;
                a->output = q ? kc_strdup_printf("command %s timed out", q) : NULL;
                r = a->output ? 0 : -ENOMEM;
        } else if (r != -ENOMEM) {
                a->result = KC_PROBE_UNKNOWN;
                a->err = strdup(e.message[0] ? e.message : strerror(-r));
                r = a->err ? 0 : -ENOMEM;
        }
        kc_exec_sync_result_done(&out);
        for (i = 0; i < n; i++)
                free(argv[i]);
        return r;
}

/* The host a handler dials: its own, else the pod IP. NULL with a->err when neither. */
static const char *probe_host(const struct kc_api_handler *h, const char *pod_ip)
{
        if (h->host && *h->host)
                return h->host;
        return pod_ip && *pod_ip ? pod_ip : NULL;
}

/* The tcpSocket probe (pkg/probe/tcp): a connection within the timeout succeeds. */
static int run_tcp(const struct kc_api_probe *pr, const struct kc_api_container *c,
                   const char *pod_ip, struct kc__probe_attempt *a)
{
        const char *host = probe_host(&pr->handler, pod_ip);
        _cleanup_free_ char *hostport = NULL;
        int port = kc__probe_resolve_port(c, &pr->handler.port, &a->err), fd;
        struct linger lg = { .l_onoff = 1, .l_linger = 0 };

        if (port < 0) {
                a->result = KC_PROBE_UNKNOWN;
                return a->err ? 0 : -ENOMEM;
        }
        fd = host ? kc_net_dial(host, port, kc_net_deadline(pr->timeout_seconds * KC_NSEC_PER_SEC),
                                NULL)
                  : -EHOSTUNREACH;
        if (fd < 0) {
                /* "host:port" is only needed for the failure's words. */
                hostport = kc_strdup_printf(host && strchr(host, ':') ? "[%s]:%d" : "%s:%d",
                                            s_or_empty(host), port);
                if (!hostport)
                        return -ENOMEM;
                a->result = KC_PROBE_FAILURE;
                a->output = kc_net_dial_error(hostport, fd);
                return a->output ? 0 : -ENOMEM;
        }
        /* probe.ProbeDialer: close with a reset, leaving no TIME_WAIT behind. */
        (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        close(fd);
        a->result = KC_PROBE_SUCCESS;
        return 0;
}

/* The grpc probe (pkg/probe/grpc): grpc.health.v1.Health/Check answers SERVING. */
static int run_grpc(const struct kc_api_probe *pr, const char *pod_ip, struct kc__probe_attempt *a)
{
        int64_t timeout_ns = pr->timeout_seconds * KC_NSEC_PER_SEC;
        _cleanup_free_ char *msg = NULL;
        int r, healthy = 0;

        r = kc_grpc_health_check(s_or_empty(pod_ip), pr->handler.port.number,
                                 s_or_empty(pr->handler.grpc_service), KC_PROBE_USER_AGENT,
                                 timeout_ns, &healthy, &msg);
        if (r == -ENOMEM)
                return r;
        a->result = r == 0 && healthy ? KC_PROBE_SUCCESS : KC_PROBE_FAILURE;
        a->output = r == 0 && healthy ? strdup("service is serving") : TAKE_PTR(msg);
        return a->output ? 0 : -ENOMEM;
}

/* runProbe: one attempt with the probe's handler. */
static int run_probe(struct kc_prober *p, const struct kc_api_probe *pr,
                     const struct kc_api_pod *pod, const char *pod_ip,
                     const struct kc_api_container *c, const char *container_id,
                     struct kc__probe_attempt *a)
{
        switch (pr->handler.kind) {
        case KC_HANDLER_EXEC:
                return run_exec(p, pr, c, container_id, a);
        case KC_HANDLER_HTTP_GET:
                return kc__probe_http(pr, c, pod_ip, a);
        case KC_HANDLER_TCP_SOCKET:
                return run_tcp(pr, c, pod_ip, a);
        case KC_HANDLER_GRPC:
                return run_grpc(pr, pod_ip, a);
        default:
                a->result = KC_PROBE_UNKNOWN;
                a->err = kc_strdup_printf("missing probe handler for %s_%s(%s):%s",
                                          s_or_empty(pod->name), s_or_empty(pod->namespace),
                                          s_or_empty(pod->uid), s_or_empty(c->name));
                return a->err ? 0 : -ENOMEM;
        }
}

const struct kc_api_probe *kc_prober_probe_spec(const struct kc_api_container *c,
                                                enum kc_probe_type t)
{
        switch (t) {
        case KC_PROBE_LIVENESS:
                return kc_api_probe_or_none(c->liveness_probe);
        case KC_PROBE_READINESS:
                return kc_api_probe_or_none(c->readiness_probe);
        default:
                return kc_api_probe_or_none(c->startup_probe);
        }
}

int kc_prober_probe(struct kc_prober *p, enum kc_probe_type t, const struct kc_api_pod *pod,
                    const char *pod_ip, const struct kc_api_container *c, const char *container_id,
                    enum kc_probe_result *ret, char **ret_output)
{
        const struct kc_api_probe *pr;
        struct kc__probe_attempt a = { 0 };
        int r = 0;

        if (!p || !pod || !c || !ret || !ret_output || t < 0 || t >= _KC_PROBE_TYPE_MAX)
                return -EINVAL;
        pr = kc_prober_probe_spec(c, t);
        if (!pr->present) {
                *ret = KC_PROBE_SUCCESS;
                *ret_output = NULL;
                return 0;
        }
        /* runProbeWithRetries: only an error is retried, a result is final. */
        for (int i = 0; i < KC_PROBE_MAX_RETRIES; i++) {
                attempt_done(&a);
                r = run_probe(p, pr, pod, pod_ip, c, container_id, &a);
                if (r < 0 || !a.err)
                        break;
        }
        if (r < 0) {
                attempt_done(&a);
                return r;
        }
        if (a.err)
                kc_log_v_s(1, "Probe errored", KC_KV_STR("probeType", type_names[t]),
                           KC_KV_STR("pod", s_or_empty(pod->name)),
                           KC_KV_STR("podUID", s_or_empty(pod->uid)),
                           KC_KV_STR("containerName", s_or_empty(c->name)),
                           KC_KV_STR("err", a.err));
        else if (a.result == KC_PROBE_FAILURE)
                kc_log_v_s(1, "Probe failed", KC_KV_STR("probeType", type_names[t]),
                           KC_KV_STR("pod", s_or_empty(pod->name)),
                           KC_KV_STR("podUID", s_or_empty(pod->uid)),
                           KC_KV_STR("containerName", s_or_empty(c->name)),
                           KC_KV_STR("probeResult", result_names[a.result]),
                           KC_KV_STR("output", s_or_empty(a.output)));
        *ret = a.err ? KC_PROBE_UNKNOWN : a.result;
        *ret_output = a.err ? TAKE_PTR(a.err) : TAKE_PTR(a.output);
        attempt_done(&a);
        return 0;
}
