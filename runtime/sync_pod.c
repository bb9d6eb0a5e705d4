/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SyncPod and KillPod (upstream kuberuntime_manager.go and
 * kuberuntime_container.go): the acting half of the runtime manager, over
 * any runtime service.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "core/array.h"
#include "core/backoff.h"
#include "core/cancel.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/format.h"
#include "core/log.h"
#include "container_linux.h"
#include "internal.h"
#include "lifecycle.h"
#include "metrics/kubelet_metrics.h"
#include "metrics/registry.h"
#include "runtime/api_pod.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/expansion.h"
#include "runtime/images.h"
#include "runtime/manager.h"
#include "runtime/pod_actions.h"
#include "runtime/runtime_helper.h"
#include "runtime/runtime_service.h"
#include "runtime/sync_pod.h"
#include "termination.h"

/* v1 default of spec.terminationGracePeriodSeconds. */
#define DEFAULT_TERMINATION_GRACE_S 30

/*
 * A PodSyncResult: the first failure's code (returned) and the text of
 * every failure, joined as upstream's aggregate error when finished.
 */
struct sp_result {
        int r;
        char **msgs;
        size_t n_msgs, cap;
};

/* Records a failure: @p r if it is the first, and its text (lost only on ENOMEM). */
static void result_fail(struct sp_result *res, int r, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void result_fail(struct sp_result *res, int r, const char *fmt, ...)
{
        va_list ap;
        char *msg;

        if (res->r == 0)
                res->r = r;
        va_start(ap, fmt);
        msg = kc_strdup_vprintf(fmt, ap);
        va_end(ap);
        if (!msg || KC_ARRAY_GROW(res->msgs, res->cap, res->n_msgs + 1, 4) < 0) {
                free(msg);
                return;
        }
        res->msgs[res->n_msgs++] = msg;
}

/*
 * A failed SyncResult, as PodSyncResult.Error() words it:
 * failed to "<action>" for "<target>" with <reason>: "<message>".
 */
static void result_fail_action(struct sp_result *res, int r, const char *action, const char *target,
                               const char *reason, const char *msg)
{
        _cleanup_free_ char *qt = kc_go_quote(target ? target : ""),
                            *qm = kc_go_quote(msg ? msg : "");

        if (!qt || !qm)
                result_fail(res, r, "out of memory");
        else
                result_fail(res, r, "failed to \"%s\" for %s with %s: %s", action, qt, reason, qm);
}

/*
 * utilerrors.NewAggregate(...).Error(): duplicates dropped; one message as
 * it is, several as "[a, b, ...]". NULL when there is none or on ENOMEM.
 */
static char *aggregate_text(char *const *msgs, size_t n)
{
        size_t i, j, len = 2, n_distinct = 0;
        char *out, *o;

        for (i = 0; i < n; i++) {
                for (j = 0; j < i && strcmp(msgs[j], msgs[i]) != 0; j++)
                        ;
                if (j < i)
                        continue;
                len += strlen(msgs[i]) + 2;
                n_distinct++;
        }
        if (n_distinct == 0)
                return NULL;
        if (n_distinct == 1)
                return strdup(msgs[0]);
        out = o = malloc(len + 1);
        if (!out)
                return NULL;
        *o++ = '[';
        for (i = 0; i < n; i++) {
                for (j = 0; j < i && strcmp(msgs[j], msgs[i]) != 0; j++)
                        ;
                if (j < i)
                        continue;
                o = stpcpy(o, o == out + 1 ? "" : ", ");
                o = stpcpy(o, msgs[i]);
        }
        strcpy(o, "]");
        return out;
}

static int result_finish(struct sp_result *res, char **ret_err)
{
        size_t i;

        if (ret_err)
                *ret_err = res->r < 0 ? aggregate_text(res->msgs, res->n_msgs) : NULL;
        for (i = 0; i < res->n_msgs; i++)
                free(res->msgs[i]);
        free(res->msgs);
        res->msgs = NULL;
        res->n_msgs = res->cap = 0;
        return res->r;
}

/* Returns true (and records -ECANCELED) when @ctx is set. */
static bool cancelled(struct kc_cancel *ctx, struct sp_result *res)
{
        if (!ctx || !kc_cancel_is_set(ctx))
                return false;
        result_fail(res, -ECANCELED, "context canceled");
        return true;
}

static const char *str_or_empty(const char *s)
{
        return s ? s : "";
}

/* A runtime call's error text: its message, else the errno's. */
static const char *error_text(const struct kc_runtime_error *e, int r)
{
        return e->message[0] ? e->message : strerror(-r);
}

/* killContainer's grace: deletion grace, else spec grace, else the v1 default. */
static int64_t pod_grace(const struct kc_api_pod *pod)
{
        if (pod->deletion_grace_s >= 0 && pod->deletion_ts != 0)
                return pod->deletion_grace_s;
        if (pod->termination_grace_s >= 0)
                return pod->termination_grace_s;
        return DEFAULT_TERMINATION_GRACE_S;
}

/*
 * A container to stop: its runtime ID and name (the SyncResult's target),
 * and its spec in the pod when known (for the preStop hook and the
 * termination ordering of sidecars).
 */
struct kill_target {
        const char *id;
        const char *name;
        const struct kc_api_container *spec; /* NULL: not in the pod (or no pod) */
        int sidecar;                         /* index among init containers, or -1 */
};

/* What every kill of one call shares: the runtime, the pod and its hooks' surroundings. */
struct kill_ctx {
        struct kc_runtime_service *svc;
        struct kc_clock *clock;       /* NULL: the real one */
        const struct kc_api_pod *pod; /* NULL: no hooks, no ordering */
        const char *pod_ip;           /* for httpGet hooks; may be NULL */
        const char *sandbox_id;       /* asked for the IP when pod_ip is NULL; may be NULL */
        struct kc_cancel *ctx;
};

/* killContainersWithSyncResult's containers, shared by the stopping threads. */
struct kill_set {
        const struct kill_ctx *kc;
        const struct kill_target *targets;
        size_t n;
        int64_t grace_s;
        atomic_size_t next; /* the next target a thread claims */
        struct kill_outcome {
                int r;
                bool skipped; /* not stopped: the context was cancelled first */
                struct kc_runtime_error e;
        } * out;
};

/*
 * GetContainerSpec: @p name among the app containers, then the init ones;
 * *@p ret_sidecar the init index of a restartable one, else -1.
 */
static const struct kc_api_container *container_spec(const struct kc_api_pod *pod, const char *name,
                                                     int *ret_sidecar)
{
        size_t i;

        *ret_sidecar = -1;
        for (i = 0; pod && i < pod->n_containers; i++)
                if (kc__streq(pod->containers[i].name, name))
                        return &pod->containers[i];
        for (i = 0; pod && i < pod->n_init_containers; i++)
                if (kc__streq(pod->init_containers[i].name, name)) {
                        if (kc_is_restartable_init_container(&pod->init_containers[i]))
                                *ret_sidecar = (int)i;
                        return &pod->init_containers[i];
                }
        return NULL;
}

static struct kill_target make_target(const struct kc_api_pod *pod, const char *id,
                                      const char *name)
{
        struct kill_target t = { .id = id, .name = name };

        t.spec = container_spec(pod, name, &t.sidecar);
        return t;
}

/* Whole seconds of @p clock since @p start_ns, truncated as upstream's int64(d.Seconds()). */
static int64_t seconds_since(struct kc_clock *clock, int64_t start_ns)
{
        int64_t d = kc_clock_now(clock ? clock : kc_clock_real()) - start_ns;

        return d > 0 ? d / KC_NSEC_PER_SEC : 0;
}

/*
 * executePreStopHook: runs the hook with the grace period as its bound
 * and returns the whole seconds it took. A failure is logged only.
 */
static int64_t run_pre_stop(const struct kill_ctx *kc, const struct kill_target *t, int64_t grace_s)
{
        struct kc_clock *clock = kc->clock ? kc->clock : kc_clock_real();
        const struct kc__hook_env env = { kc->svc, kc->clock, kc->ctx, kc->pod_ip, kc->sandbox_id };
        _cleanup_free_ char *msg = NULL;
        int64_t start = kc_clock_now(clock);
        int r;

        kc_log_v_s(3, "Running preStop hook", KC_KV_POD(kc->pod->namespace, kc->pod->name),
                   KC_KV_STR("containerName", t->name), KC_KV_STR("containerID", t->id));
        r = kc__run_handler(&env, kc->pod, t->spec, t->id, &kc_api_lifecycle_of(t->spec)->pre_stop,
                            grace_s, &msg);
        if (r < 0)
                kc_log_error_s(msg ? msg : strerror(-r), "PreStop hook failed",
                               KC_KV_POD(kc->pod->namespace, kc->pod->name),
                               KC_KV_STR("containerName", t->name),
                               KC_KV_STR("containerID", t->id));
        return seconds_since(clock, start);
}

/*
 * killContainer: the preStop hook when there is one and grace left (its
 * time comes off the grace), then StopContainer with at least the minimum
 * grace; a container the runtime no longer knows is stopped.
 */
static int kill_container(const struct kill_ctx *kc, const struct kill_target *t, int64_t grace_s,
                          struct kc_runtime_error *e)
{
        int r;

        if (kc->pod && t->spec && kc_api_lifecycle_of(t->spec)->pre_stop.kind != KC_HANDLER_NONE &&
            grace_s > 0)
                grace_s -= run_pre_stop(kc, t, grace_s);
        if (grace_s < KC_MINIMUM_GRACE_PERIOD_S)
                grace_s = KC_MINIMUM_GRACE_PERIOD_S;
        r = kc->svc->ops->stop_container(kc->svc->self, t->id, grace_s, e);
        return r < 0 && e->code == KC_RUNTIME_NOT_FOUND ? 0 : r;
}

/*
 * One stopping thread: claims targets until none is left. Each
 * StopContainer carries the grace as its timeout; the runtime service
 * gives the call its own deadline (grace + request timeout).
 */
static void *kill_worker(void *arg)
{
        struct kill_set *ks = arg;
        size_t i;

        while ((i = atomic_fetch_add(&ks->next, 1)) < ks->n) {
                struct kill_outcome *o = &ks->out[i];

                if (ks->kc->ctx && kc_cancel_is_set(ks->kc->ctx)) {
                        o->skipped = true;
                        continue;
                }
                o->r = kill_container(ks->kc, &ks->targets[i], ks->grace_s, &o->e);
        }
        return NULL;
}

/*
 * Stops targets [@p from, @p from + @p n) of @p all at once (upstream: one
 * goroutine each), with at most KC_KILL_POD_PARALLELISM calls in flight
 * (D19), the calling thread being one of the stoppers; then records each
 * failure in target order. A thread that cannot be created leaves its
 * share to the others. Returns false when cancelled.
 */
static bool stop_containers(const struct kill_ctx *kc, const struct kill_target *all,
                            struct kill_outcome *out, size_t from, size_t n, int64_t grace_s,
                            struct sp_result *res)
{
        struct kill_set ks = {
                .kc = kc, .targets = all + from, .n = n, .grace_s = grace_s, .out = out + from
        };
        pthread_t th[KC_KILL_POD_PARALLELISM - 1];
        size_t n_th = 0, i;

        atomic_init(&ks.next, 0);
        while (n_th + 1 < ks.n && n_th < KC_ELEMENTSOF(th) &&
               pthread_create(&th[n_th], NULL, kill_worker, &ks) == 0)
                n_th++;
        kill_worker(&ks);
        for (i = 0; i < n_th; i++)
                pthread_join(th[i], NULL);
        for (i = 0; i < ks.n; i++)
                if (!ks.out[i].skipped && ks.out[i].r < 0)
                        result_fail_action(res, ks.out[i].r, "KillContainer", ks.targets[i].name,
                                           "KillContainerError",
                                           error_text(&ks.out[i].e, ks.out[i].r));
        return !cancelled(kc->ctx, res);
}

/*
 * The termination ordering of a pod with sidecars (upstream
 * terminationOrdering): @p t reordered so that the other containers come
 * first, then the sidecars from the last init container to the first.
 * Returns how many come before the sidecars.
 */
static size_t order_targets(struct kill_target *t, size_t n)
{
        size_t i, j, n_app = 0;

        for (i = 1; i < n; i++) {
                struct kill_target x = t[i];

                /* Stable insertion: non-sidecars (-1) keep their order, sidecars descend. */
                for (j = i; j > 0 && (t[j - 1].sidecar >= 0 &&
                                      (x.sidecar < 0 || t[j - 1].sidecar < x.sidecar));
                     j--)
                        t[j] = t[j - 1];
                t[j] = x;
        }
        while (n_app < n && t[n_app].sidecar < 0)
                n_app++;
        return n_app;
}

/*
 * killContainersWithSyncResult: the app containers in parallel, then each
 * sidecar in turn with what is left of the grace (whole seconds), as
 * upstream's termination ordering has them wait for the app containers
 * and for the sidecars after them. Returns false when cancelled.
 */
static bool kill_containers(const struct kill_ctx *kc, struct kill_target *t, size_t n,
                            int64_t grace_s, struct sp_result *res)
{
        struct kc_clock *clock = kc->clock ? kc->clock : kc_clock_real();
        _cleanup_free_ struct kill_outcome *out = calloc(n + 1, sizeof(*out));
        int64_t start = kc_clock_now(clock), left;
        size_t n_app, i;

        if (!out) {
                result_fail(res, -ENOMEM, "out of memory");
                return true;
        }
        n_app = order_targets(t, n);
        if (n_app > 0 && !stop_containers(kc, t, out, 0, n_app, grace_s, res))
                return false;
        for (i = n_app; i < n; i++) {
                left = grace_s - seconds_since(clock, start);
                if (!stop_containers(kc, t, out, i, 1, left, res))
                        return false;
        }
        return true;
}

/*
 * killPodWithSyncResult: stops the containers, then the sandboxes one by
 * one; a sandbox already gone (NOT_FOUND) counts as stopped. The
 * sandboxes share one KillPodSandbox result for @p pod_uid (the last
 * failure's text). Returns false when cancelled.
 */
static bool kill_ids(const struct kill_ctx *kc, const char *pod_uid, struct kill_target *cs,
                     size_t n_c, const char *const *sbids, size_t n_sb, int64_t grace_s,
                     struct sp_result *res)
{
        struct kc_runtime_service *svc = kc->svc;
        struct kc_runtime_error e, sb_e = { 0 };
        int r, sb_r = 0;
        size_t i;

        if (cancelled(kc->ctx, res))
                return false;
        if (n_c > 0 && !kill_containers(kc, cs, n_c, grace_s, res))
                return false;
        for (i = 0; i < n_sb; i++) {
                if (cancelled(kc->ctx, res))
                        return false;
                e = (struct kc_runtime_error){ 0 };
                r = svc->ops->stop_pod_sandbox(svc->self, sbids[i], &e);
                if (r < 0 && e.code != KC_RUNTIME_NOT_FOUND) {
                        sb_r = r;
                        sb_e = e;
                }
        }
        if (sb_r < 0)
                result_fail_action(res, sb_r, "KillPodSandbox", pod_uid, "KillPodSandboxError",
                                   error_text(&sb_e, sb_r));
        return true;
}

int kc_runtime_manager_kill_pod(struct kc_runtime_manager *m, const struct kc_api_pod *pod,
                                const struct kc_pod *running_pod, int64_t grace_s,
                                struct kc_cancel *ctx, char **ret_err)
{
        struct kc_runtime_service svc = kc_runtime_manager_service(m);
        struct kill_ctx kc = { .svc = &svc, .pod = pod, .ctx = ctx };
        struct sp_result res = { 0 };
        struct kc_container_list cl = { 0 };
        struct kc_pod_sandbox_list sbl = { 0 };
        struct kc_runtime_error e = { 0 };
        _cleanup_free_ struct kill_target *cs = NULL;
        _cleanup_free_ const char **sbids = NULL;
        size_t n_c = 0, n_sb = 0, i;
        const char *uid;
        int r;

        if (ret_err)
                *ret_err = NULL;
        if (!m || !svc.ops || (!pod && !running_pod))
                return -EINVAL;
        kc.clock = kc__runtime_manager_clock(m);
        if (cancelled(ctx, &res))
                return result_finish(&res, ret_err);

        if (running_pod) {
                cs = calloc(running_pod->n_containers + 1, sizeof(*cs));
                sbids = calloc(running_pod->n_sandboxes + 1, sizeof(*sbids));
                if (!cs || !sbids)
                        return -ENOMEM;
                for (i = 0; i < running_pod->n_containers; i++)
                        cs[n_c++] = make_target(pod, running_pod->containers[i].id,
                                                running_pod->containers[i].name);
                for (i = 0; i < running_pod->n_sandboxes; i++)
                        sbids[n_sb++] = running_pod->sandboxes[i].id;
                kc.sandbox_id = n_sb > 0 ? sbids[0] : NULL;
                kill_ids(&kc, running_pod->id, cs, n_c, sbids, n_sb, grace_s, &res);
                return result_finish(&res, ret_err);
        }

        /* No running pod given: list the pod's running containers and all its sandboxes. */
        uid = pod->uid;
        if (!uid)
                return -EINVAL;
        struct kc_label sel = { KC_LABEL_POD_UID, uid };
        r = svc.ops->list_containers(svc.self,
                                     &(struct kc_container_filter){
                                             .state = KC_CONTAINER_STATE_RUNNING,
                                             .label_selector = &sel,
                                             .n_label_selector = 1,
                                     },
                                     &cl, &e);
        if (r < 0) {
                result_fail(&res, r, "failed to list containers of pod %s: %s", uid, e.message);
                return result_finish(&res, ret_err);
        }
        if (cancelled(ctx, &res))
                goto out;
        r = svc.ops->list_pod_sandbox(svc.self,
                                      &(struct kc_pod_sandbox_filter){
                                              .state = -1,
                                              .label_selector = &sel,
                                              .n_label_selector = 1,
                                      },
                                      &sbl, &e);
        if (r < 0) {
                result_fail(&res, r, "failed to list sandboxes of pod %s: %s", uid, e.message);
                goto out;
        }
        cs = calloc(cl.n + 1, sizeof(*cs));
        sbids = calloc(sbl.n + 1, sizeof(*sbids));
        if (!cs || !sbids) {
                result_fail(&res, -ENOMEM, "out of memory");
                goto out;
        }
        for (i = 0; i < cl.n; i++)
                cs[n_c++] = make_target(pod, cl.items[i].id, cl.items[i].metadata.name);
        for (i = 0; i < sbl.n; i++)
                sbids[n_sb++] = sbl.items[i].id;
        kc.sandbox_id = n_sb > 0 ? sbids[0] : NULL;
        kill_ids(&kc, uid, cs, n_c, sbids, n_sb, grace_s, &res);
out:
        kc_runtime_result_done(&cl);
        kc_runtime_result_done(&sbl);
        return result_finish(&res, ret_err);
}

/* What every start of one SyncPod shares. */
struct start_ctx {
        struct kc_runtime_service *svc;
        const struct kc_api_pod *pod;
        const struct kc_pod_status *status;
        const struct kc_sync_pod_options *opts;
        const char *sandbox_id;
        const struct kc_pod_sandbox_config *sb_config;
        const struct kc__sync_env *env;
        const char *const *pod_ips; /* the sandbox's: status.podIP first */
        size_t n_pod_ips;
        bool make_log_dirs;        /* a pod logs root is set: create the directories */
        bool counted;              /* this start counts in kubelet_started_containers_total */
        bool failed;               /* the last start failed (start_fail ran) */
        const struct kill_ctx *kc; /* the hooks' runtime, clock and pod IP */
        struct sp_result *res;
};

/* The container_type label of the started-containers metrics (upstream's metric labels). */
static const char *container_type(bool init)
{
        return init ? "init_container" : "container";
}

/* mkdir -p for a log directory (0755, as the kubelet). */
static int make_dirs(const char *path)
{
        _cleanup_free_ char *p = strdup(path);

        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; *s; s++)
                if (*s == '/') {
                        *s = '\0';
                        if (mkdir(p, 0755) < 0 && errno != EEXIST)
                                return -errno;
                        *s = '/';
                }
        if (mkdir(p, 0755) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

/* Hands one start result to the caller's callback, if any. */
static void report(struct start_ctx *sc, const struct kc_api_container *c, bool init, int r,
                   const char *reason, const char *msg, int64_t retry_after_ns)
{
        struct kc_start_result res = {
                .container_name = str_or_empty(c->name),
                .init_container = init,
                .r = r,
                .reason = reason,
                .message = msg,
                .retry_after_ns = retry_after_ns,
        };

        if (sc->opts->on_start_result)
                sc->opts->on_start_result(sc->opts->userdata, &res);
}

/* A failed start: recorded as a failed StartContainer SyncResult, and reported. */
static void start_fail(struct start_ctx *sc, const struct kc_api_container *c, bool init, int r,
                       const char *reason, const char *msg, int64_t retry_after_ns)
{
        sc->failed = true;
        result_fail_action(sc->res, r, "StartContainer", c->name, reason, msg);
        if (sc->counted && sc->opts->metrics) {
                /* The code is startContainer's error, as upstream: a reason of low cardinality. */
                const char *labels[] = { container_type(init), str_or_empty(reason) };

                (void)kc_counter_vec_inc_mp(sc->opts->metrics->started_containers_errors_total,
                                            labels);
        }
        report(sc, c, init, r, reason, msg, retry_after_ns);
}

/*
 * True (and -ECANCELED recorded) when the context is set. A start already
 * under way is reported as failed at the step it did not run (@p reason),
 * as a cancelled CRI call would fail upstream.
 */
static bool start_cancelled(struct start_ctx *sc, const struct kc_api_container *c, bool init,
                            const char *reason)
{
        if (!cancelled(sc->opts->ctx, sc->res))
                return false;
        report(sc, c, init, -ECANCELED, reason, "context canceled", -1);
        return true;
}

/*
 * How long the CrashLoopBackOff of @p c lasts from now: doBackOff's window
 * runs from the newest exit (finished_at) for the key's backoff. -1 if
 * unknown.
 */
static int64_t crash_loop_remaining(struct kc_backoff *b, const struct kc_api_pod *pod,
                                    const struct kc_api_container *c,
                                    const struct kc_pod_status *status)
{
        _cleanup_free_ char *key = NULL;
        int64_t d, now, end;
        size_t i;

        for (i = 0; i < status->n_containers; i++)
                if (kc__streq(status->containers[i].name, c->name) &&
                    status->containers[i].state == KC_CONTAINER_STATE_EXITED)
                        break;
        if (i == status->n_containers)
                return -1;
        key = kc__backoff_key(pod, c);
        if (!key || kc_backoff_get(b, key, &d) < 0)
                return -1;
        now = kc_clock_now(kc_backoff_clock(b));
        if (__builtin_add_overflow(status->containers[i].finished_at, d, &end))
                return -1;
        return end > now ? end - now : 0;
}

/* generateContainerConfig's result and the memory it points to; fixed in place once filled. */
struct container_spec {
        char *log_path;
        char hash[17], restart[16];
        struct kc_label labels[4];
        struct kc_label annotations[4];
        struct kc_arena *arena; /* the helper's options, the expanded command and args, security */
        char *msg;              /* why there is no config: CreateContainerConfigError's message */
        struct kc_container_config config;
};

static void container_spec_done(struct container_spec *spec)
{
        free(spec->log_path);
        free(spec->msg);
        kc_arena_free(spec->arena);
}

/* ExpandContainerCommandAndArgs: each word of @p in with $(VAR) from @p envs, in the arena. */
static int expand_words(struct kc_arena *a, const char *const *in, size_t n,
                        const struct kc_label *envs, size_t n_envs, const char *const **ret)
{
        const char **out;

        if (n == 0)
                return 0;
        out = kc_arena_alloc(a, n * sizeof(*out));
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *w = kc_expand(in[i], envs, n_envs);

                out[i] = w ? kc_arena_strdup(a, w) : NULL;
                if (!out[i])
                        return -ENOMEM;
        }
        *ret = out;
        return 0;
}

/*
 * getImageUser: ImageStatus(@p image); a uid, else a user name, else root
 * (uid 0) as upstream. The name lives in @p a. *@p ret_msg says why on failure.
 */
static int get_image_user(struct kc_runtime_service *svc, const char *image, struct kc_arena *a,
                          struct kc__image_user *ret, char **ret_msg)
{
        struct kc_image_status_result st = { 0 };
        struct kc_runtime_error e = { 0 };
        int r;

        r = svc->ops->image_status(svc->self, image, &st, &e);
        if (r < 0) {
                *ret_msg = strdup(error_text(&e, r));
                return r;
        }
        *ret = (struct kc__image_user){ .has_uid = true, .uid = 0 };
        if (st.found && st.image.has_uid)
                ret->uid = st.image.uid;
        else if (st.found && st.image.username && st.image.username[0])
                *ret = (struct kc__image_user){ .username = kc_arena_strdup(a, st.image.username) };
        kc_runtime_result_done(&st);
        return ret->has_uid || ret->username ? 0 : -ENOMEM;
}

/*
 * makeMounts: the helper's mounts, then the termination-log file's (in the
 * pod container directory the helper made).
 */
static int termination_message_mount(struct container_spec *spec, const struct kc_api_container *c,
                                     const struct kc_run_container_options *o)
{
        struct kc_cri_mount *v, tm;
        int r;

        r = kc__termination_message_mount(o->pod_container_dir, c->termination_message_path,
                                          spec->arena, &tm);
        if (r <= 0) {
                spec->config.mounts = o->mounts;
                spec->config.n_mounts = o->n_mounts;
                return r;
        }
        v = kc_arena_alloc(spec->arena, (o->n_mounts + 1) * sizeof(*v));
        if (!v)
                return -ENOMEM;
        if (o->n_mounts > 0)
                memcpy(v, o->mounts, o->n_mounts * sizeof(*v));
        v[o->n_mounts] = tm;
        spec->config.mounts = v;
        spec->config.n_mounts = o->n_mounts + 1;
        return 0;
}

/* What the helper and the image add: env, mounts, the image's user, the non-root check. */
static int container_options(const struct start_ctx *sc, const struct kc_api_container *c,
                             struct container_spec *spec, struct kc__image_user *user)
{
        const struct kc_runtime_helper *h = &sc->env->helper;
        struct kc_run_container_options o = { 0 };
        int r;

        if (h->ops && h->ops->generate_run_container_options) {
                r = h->ops->generate_run_container_options(h->self, sc->pod, c, sc->pod_ips,
                                                           sc->n_pod_ips, spec->arena, &o,
                                                           &spec->msg);
                if (r < 0)
                        return r;
                spec->config.envs = o.envs;
                spec->config.n_envs = o.n_envs;
                r = termination_message_mount(spec, c, &o);
                if (r < 0)
                        return r;
        }
        r = get_image_user(sc->svc, c->image, spec->arena, user, &spec->msg);
        if (r < 0)
                return r;
        return kc__verify_run_as_non_root(sc->pod, c, user, &spec->msg);
}

/*
 * generateContainerConfig for attempt @attempt of @c with image @image_ref:
 * 0, -ENOMEM, or another -errno with spec->msg saying why (upstream's
 * words; CreateContainerConfigError).
 */
static int generate_container_config(const struct start_ctx *sc, const struct kc_api_container *c,
                                     uint32_t attempt, const char *image_ref,
                                     struct container_spec *spec)
{
        const struct kc_api_pod *pod = sc->pod;
        struct kc__image_user user = { 0 };
        int r;

        spec->log_path = kc_strdup_printf("%s/%" PRIu32 ".log", str_or_empty(c->name), attempt);
        if (!spec->log_path || kc_arena_new(&spec->arena) < 0)
                return -ENOMEM;
        snprintf(spec->hash, sizeof(spec->hash), "%" PRIx64, kc_container_spec_hash(c));
        snprintf(spec->restart, sizeof(spec->restart), "%" PRIu32, attempt);
        spec->labels[0] = (struct kc_label){ KC_LABEL_POD_NAME, str_or_empty(pod->name) };
        spec->labels[1] = (struct kc_label){ KC_LABEL_POD_NAMESPACE, str_or_empty(pod->namespace) };
        spec->labels[2] = (struct kc_label){ KC_LABEL_POD_UID, str_or_empty(pod->uid) };
        spec->labels[3] = (struct kc_label){ KC_LABEL_CONTAINER_NAME, str_or_empty(c->name) };
        spec->annotations[0] = (struct kc_label){ KC_ANNOTATION_CONTAINER_HASH, spec->hash };
        spec->annotations[1] =
                (struct kc_label){ KC_ANNOTATION_CONTAINER_RESTART_COUNT, spec->restart };
        spec->annotations[2] = (struct kc_label){ KC_ANNOTATION_TERMINATION_MESSAGE_PATH,
                                                  str_or_empty(c->termination_message_path) };
        spec->annotations[3] = (struct kc_label){
                KC_ANNOTATION_TERMINATION_MESSAGE_POLICY,
                str_or_empty(kc_termination_message_policy_to_string(c->termination_message_policy))
        };
        spec->config = (struct kc_container_config){
                .metadata = { .name = c->name, .attempt = attempt },
                .image = image_ref,
                .user_specified_image = c->image,
                .n_command = c->n_command,
                .n_args = c->n_args,
                .working_dir = c->working_dir,
                .log_path = spec->log_path,
                .stdin = c->stdin,
                .stdin_once = c->stdin_once,
                .tty = c->tty,
                .labels = spec->labels,
                .n_labels = KC_ELEMENTSOF(spec->labels),
                .annotations = spec->annotations,
                .n_annotations = KC_ELEMENTSOF(spec->annotations),
                .has_resources = true,
                .has_security = true,
        };
        r = container_options(sc, c, spec, &user);
        if (r < 0)
                return r;
        r = expand_words(spec->arena, c->command, c->n_command, spec->config.envs,
                         spec->config.n_envs, &spec->config.command);
        if (r >= 0)
                r = expand_words(spec->arena, c->args, c->n_args, spec->config.envs,
                                 spec->config.n_envs, &spec->config.args);
        if (r < 0)
                return r;
        kc__container_resources(pod, c, sc->env->memory_capacity, &spec->config.resources);
        r = kc__hugepage_limits(c, sc->env->hugepage_sizes, sc->env->n_hugepage_sizes, spec->arena,
                                &spec->config.resources.hugepage_limits,
                                &spec->config.resources.n_hugepage_limits);
        if (r < 0)
                return r;
        r = kc__container_security(pod, c, &user, sc->env->seccomp_root, spec->arena,
                                   &spec->config.security);
        if (r == -EINVAL)
                spec->msg = strdup("localhostProfile must be set if seccompProfile type is "
                                   "Localhost.");
        return r;
}

/* BuildContainerLogsDirectory: the runtime writes <dir>/<name>/<attempt>.log. */
static int make_container_log_dir(const struct start_ctx *sc, const struct kc_api_container *c)
{
        _cleanup_free_ char *dir =
                kc_strdup_printf("%s/%s", sc->sb_config->log_directory, str_or_empty(c->name));

        return dir ? make_dirs(dir) : -ENOMEM;
}

/*
 * calcRestartCountByLogDir: one more than the highest <n> among the files
 * <n>.log (and rotated <n>.log.<suffix>) in @p dir, the container's log
 * directory; 0 when the directory does not exist or holds none. When a
 * runtime lost every instance of a container (a reboot, a removal behind
 * the kubelet's back), the attempt carries on from its logs instead of
 * starting over at 0 and appending to 0.log. A directory that cannot be
 * read counts as empty, logged.
 */
static uint32_t calc_restart_count_by_log_dir(const char *dir)
{
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        uint32_t restart_count = 0;
        struct dirent *de;
        DIR *d;

        if (fd < 0) {
                if (errno != ENOENT)
                        kc_log_info_s("Cannot calculate restartCount from the log directory",
                                      KC_KV_STR("logDir", dir), KC_KV_ERRNO(errno));
                return 0;
        }
        d = fdopendir(fd);
        if (!d)
                return 0;
        fd = -1; /* owned by d now */
        while ((de = readdir(d))) {
                const char *p = de->d_name;
                uint64_t n = 0;

                if (de->d_type == DT_DIR || !isdigit((unsigned char)*p))
                        continue;
                while (isdigit((unsigned char)*p) && n <= UINT32_MAX)
                        n = n * 10 + (uint64_t)(*p++ - '0');
                if (n >= UINT32_MAX || strncmp(p, ".log", 4) != 0 || (p[4] && p[4] != '.'))
                        continue; /* not a name the kubelet gave (or out of range): skipped */
                if (n + 1 > restart_count)
                        restart_count = (uint32_t)(n + 1);
        }
        closedir(d);
        return restart_count;
}

/* The attempt of the next instance of @p c: the newest one's + 1, else from the logs. */
static uint32_t next_attempt(const struct start_ctx *sc, const struct kc_api_container *c)
{
        const struct kc_container_status *cs = kc__find_container_status(sc->status, c->name);
        _cleanup_free_ char *dir = NULL;

        if (cs)
                return (uint32_t)cs->restart_count + 1;
        if (!sc->make_log_dirs)
                return 0; /* no pod logs root: no log directory to read */
        dir = kc_strdup_printf("%s/%s", sc->sb_config->log_directory, str_or_empty(c->name));
        return dir ? calc_restart_count_by_log_dir(dir) : 0;
}

/*
 * startContainer step 4: the postStart hook. When it fails the container is
 * killed (its preStop hook included, as killContainer does) and the start
 * fails with PostStartHookError and the hook's message. Returns true when
 * the hook succeeded.
 */
static bool post_start(struct start_ctx *sc, const struct kc_api_container *c, bool init,
                       const char *id)
{
        const struct kc_api_pod *pod = sc->pod;
        const struct kill_ctx *kc = sc->kc;
        const struct kc__hook_env env = { kc->svc, kc->clock, kc->ctx, kc->pod_ip, sc->sandbox_id };
        struct kill_ctx kill_kc = *kc;
        struct sp_result kill_res = { 0 };
        _cleanup_free_ char *msg = NULL, *kill_err = NULL;
        struct kill_target t;
        int r;

        r = kc__run_handler(&env, pod, c, id, &kc_api_lifecycle_of(c)->post_start, 0, &msg);
        if (r >= 0)
                return true;
        kc_log_error_s(msg ? msg : strerror(-r), "Failed to execute PostStartHook",
                       KC_KV_POD(pod->namespace, pod->name), KC_KV_STR("podUID", pod->uid),
                       KC_KV_STR("containerName", c->name), KC_KV_STR("containerID", id));
        /* killContainer(..., "FailedPostStartHook", ...): its failure is only logged. */
        kill_kc.sandbox_id = sc->sandbox_id;
        t = make_target(pod, id, c->name);
        t.sidecar = -1;
        kill_ids(&kill_kc, pod->uid, &t, 1, NULL, 0, pod_grace(pod), &kill_res);
        if (result_finish(&kill_res, &kill_err) < 0)
                kc_log_error_s(kill_err ? kill_err : "unknown", "Failed to kill container",
                               KC_KV_POD(pod->namespace, pod->name),
                               KC_KV_STR("containerName", c->name), KC_KV_STR("containerID", id));
        start_fail(sc, c, init, r, KC_POST_START_HOOK_ERROR_REASON, msg ? msg : strerror(-r), -1);
        return false;
}

/*
 * startContainer after the image is there: CreateContainer, then
 * StartContainer. Returns false when cancelled; every outcome, success
 * included, is reported.
 */
static bool start_container(struct start_ctx *sc, const struct kc_api_container *c, bool init,
                            const char *image_ref)
{
        const struct kc_api_pod *pod = sc->pod;
        struct kc_runtime_service *svc = sc->svc;
        _cleanup_(container_spec_done) struct container_spec spec = { 0 };
        uint32_t attempt = next_attempt(sc, c);
        struct kc_runtime_error e = { 0 };
        _cleanup_free_ char *id = NULL;
        int r;

        r = generate_container_config(sc, c, attempt, image_ref, &spec);
        if (r < 0) {
                start_fail(sc, c, init, r, KC_CREATE_CONTAINER_CONFIG_ERROR_REASON,
                           spec.msg ? spec.msg : strerror(-r), -1);
                return true;
        }
        r = sc->make_log_dirs ? make_container_log_dir(sc, c) : 0;
        if (r < 0) {
                start_fail(sc, c, init, r, KC_CREATE_CONTAINER_CONFIG_ERROR_REASON,
                           "create container log directory failed", -1);
                return true;
        }
        if (start_cancelled(sc, c, init, KC_CREATE_CONTAINER_ERROR_REASON))
                return false;
        r = svc->ops->create_container(svc->self, sc->sandbox_id, &spec.config, sc->sb_config, &id,
                                       &e);
        if (r < 0) {
                start_fail(sc, c, init, r, KC_CREATE_CONTAINER_ERROR_REASON, e.message, -1);
                return true;
        }
        if (start_cancelled(sc, c, init, KC_RUN_CONTAINER_ERROR_REASON))
                return false;
        e = (struct kc_runtime_error){ 0 };
        r = svc->ops->start_container(svc->self, id, &e);
        if (r < 0) {
                start_fail(sc, c, init, r, KC_RUN_CONTAINER_ERROR_REASON, e.message, -1);
                return true;
        }
        kc_log_v_s(2, init ? "Started init container" : "Started container",
                   KC_KV_POD(pod->namespace, pod->name), KC_KV_STR("containerName", c->name),
                   KC_KV_STR("containerID", id), KC_KV_UINT("restartCount", attempt));
        if (kc_api_lifecycle_of(c)->post_start.kind != KC_HANDLER_NONE &&
            !post_start(sc, c, init, id))
                return true;
        report(sc, c, init, 0, NULL, NULL, -1);
        return true;
}

/*
 * The start closure of SyncPod: doBackOff, then startContainer
 * (EnsureImageExists, CreateContainer, StartContainer). Returns false when
 * cancelled; every outcome, success included, is reported.
 */
static bool start_one(struct start_ctx *sc, const struct kc_api_container *c, bool init)
{
        const struct kc_api_pod *pod = sc->pod;
        _cleanup_free_ char *bo_msg = NULL, *image_ref = NULL, *image_msg = NULL;
        const char *image_reason = NULL;
        int64_t retry_after = -1;
        bool go_on = true;
        int r;

        if (cancelled(sc->opts->ctx, sc->res))
                return false; /* not attempted: nothing to report */

        if (sc->opts->backoff) {
                r = kc_do_back_off(sc->opts->backoff, pod, c, sc->status, 0, &bo_msg);
                if (r == -EAGAIN) {
                        start_fail(sc, c, init, r, KC_CRASH_LOOP_BACK_OFF_REASON, bo_msg,
                                   crash_loop_remaining(sc->opts->backoff, pod, c, sc->status));
                        return true;
                }
                if (r < 0) {
                        start_fail(sc, c, init, r, KC_CREATE_CONTAINER_CONFIG_ERROR_REASON,
                                   strerror(-r), -1);
                        return true;
                }
        }

        /* Past its back-off, the start counts (metrics.StartedContainersTotal). */
        if (sc->opts->metrics) {
                const char *labels[] = { container_type(init) };

                (void)kc_counter_vec_inc_mp(sc->opts->metrics->started_containers_total, labels);
        }
        sc->counted = true;
        r = kc_ensure_image_exists(*sc->svc, sc->opts->image_backoff, pod, c, sc->sb_config,
                                   &image_ref, &image_reason, &image_msg, &retry_after);
        if (r < 0)
                start_fail(sc, c, init, r,
                           image_reason ? image_reason : KC_ERR_IMAGE_INSPECT_REASON,
                           image_msg ? image_msg : strerror(-r), retry_after);
        else
                go_on = start_container(sc, c, init, image_ref);
        sc->counted = false;
        return go_on;
}

/* Step 2, killPodWithSyncResult: the pod's running containers, then every sandbox. */
static int kill_pod_step(const struct kill_ctx *kc, const struct kc_pod_status *status,
                         struct sp_result *res)
{
        const struct kc_api_pod *pod = kc->pod;
        _cleanup_free_ struct kill_target *cs = NULL;
        _cleanup_free_ const char **sbids = NULL;
        size_t i, n;

        /* ConvertPodStatusToRunningPod: running containers, every sandbox. */
        cs = calloc(status->n_containers + 1, sizeof(*cs));
        sbids = calloc(status->n_sandboxes + 1, sizeof(*sbids));
        if (!cs || !sbids) {
                result_fail(res, -ENOMEM, "failed to SyncPod: out of memory");
                return res->r;
        }
        for (i = 0, n = 0; i < status->n_containers; i++)
                if (status->containers[i].state == KC_CONTAINER_STATE_RUNNING)
                        cs[n++] = make_target(pod, status->containers[i].id,
                                              status->containers[i].name);
        for (i = 0; i < status->n_sandboxes; i++)
                sbids[i] = status->sandboxes[i].id;
        kill_ids(kc, pod->uid, cs, n, sbids, status->n_sandboxes, pod_grace(pod), res);
        return res->r; /* upstream: killPod failed → return */
}

/*
 * setTerminationGracePeriod: a probe kill of a pod not being deleted uses
 * the probe's terminationGracePeriodSeconds when set; otherwise pod_grace.
 */
static int64_t kill_grace(const struct kc_api_pod *pod, const struct kc_container_to_kill *k)
{
        const struct kc_api_container *c;
        const struct kc_api_probe *probe = NULL;

        if (pod->deletion_grace_s >= 0 && pod->deletion_ts != 0)
                return pod_grace(pod);
        c = k->init_container ? &pod->init_containers[k->container_index]
                              : &pod->containers[k->container_index];
        if (k->reason == KC_KILL_REASON_LIVENESS_PROBE)
                probe = kc_api_probe_or_none(c->liveness_probe);
        else if (k->reason == KC_KILL_REASON_STARTUP_PROBE)
                probe = kc_api_probe_or_none(c->startup_probe);
        if (probe && probe->present && probe->termination_grace_period_seconds.set)
                return probe->termination_grace_period_seconds.v;
        return pod_grace(pod);
}

/* Step 3: the containers not to keep, one by one; the first failure ends the sync. */
static int kill_containers_step(const struct kill_ctx *kc, const struct kc_pod_actions *a,
                                struct sp_result *res)
{
        size_t i;

        for (i = 0; i < a->n_containers_to_kill && res->r == 0; i++) {
                const struct kc_container_to_kill *k = &a->containers_to_kill[i];
                struct kill_target t = make_target(kc->pod, k->id, k->name);
                int64_t grace = kill_grace(kc->pod, k);

                t.sidecar = -1; /* alone: no ordering */
                /* Upstream's "Killing" event carries the message (no events here: a log line). */
                if (k->reason != KC_KILL_REASON_NONE)
                        kc_log_info_s(k->message, KC_KV_POD(kc->pod->namespace, kc->pod->name),
                                      KC_KV_STR("containerName", k->name));
                kc_log_v_s(2, "Killing container with a grace period",
                           KC_KV_POD(kc->pod->namespace, kc->pod->name),
                           KC_KV_STR("podUID", kc->pod->uid), KC_KV_STR("containerName", k->name),
                           KC_KV_STR("containerID", k->id), KC_KV_INT("gracePeriod", grace));
                kill_ids(kc, kc->pod->uid, &t, 1, NULL, 0, grace, res);
        }
        return res->r;
}

/* generatePodSandboxConfig's result and the memory it points to. */
struct sandbox_spec {
        char *log_dir;
        struct kc_label *labels;
        struct kc_arena *arena; /* hostname, DNS, port mappings, security, sysctls */
        char *msg;              /* why there is no config (the helper's words) */
        struct kc_cri_dns_config dns;
        struct kc_pod_sandbox_config config;
};

static void sandbox_spec_done(struct sandbox_spec *spec)
{
        free(spec->log_dir);
        free(spec->labels);
        free(spec->msg);
        kc_arena_free(spec->arena);
}

/* newPodLabels: the pod's labels, then kubelet's (which win on lookups by key). */
static struct kc_label *new_pod_labels(const struct kc_api_pod *pod, size_t *ret_n)
{
        struct kc_label *l = calloc(pod->n_labels + 3, sizeof(*l));
        size_t i, n = 0;

        if (!l)
                return NULL;
        l[n++] = (struct kc_label){ KC_LABEL_POD_NAME, str_or_empty(pod->name) };
        l[n++] = (struct kc_label){ KC_LABEL_POD_NAMESPACE, str_or_empty(pod->namespace) };
        l[n++] = (struct kc_label){ KC_LABEL_POD_UID, str_or_empty(pod->uid) };
        for (i = 0; i < pod->n_labels; i++)
                if (!kc__streq(pod->labels[i].key, KC_LABEL_POD_NAME) &&
                    !kc__streq(pod->labels[i].key, KC_LABEL_POD_NAMESPACE) &&
                    !kc__streq(pod->labels[i].key, KC_LABEL_POD_UID))
                        l[n++] = pod->labels[i];
        *ret_n = n;
        return l;
}

/*
 * The runtime helper's part of the sandbox config: hostname and domain
 * (not for host-network pods, which keep the node's) and DNS. Without a
 * helper the hostname is the pod name.
 */
static int sandbox_helper_parts(const struct kc_runtime_helper *h, const struct kc_api_pod *pod,
                                struct sandbox_spec *spec)
{
        const char *domain = NULL;
        bool dns_set = false;
        int r;

        if (!h->ops) {
                spec->config.hostname = pod->host_network ? NULL : pod->name;
                return 0;
        }
        if (!pod->host_network && h->ops->generate_pod_hostname_and_domain) {
                r = h->ops->generate_pod_hostname_and_domain(
                        h->self, pod, spec->arena, &spec->config.hostname, &domain, &spec->msg);
                if (r < 0)
                        return r;
        }
        if (h->ops->get_pod_dns) {
                r = h->ops->get_pod_dns(h->self, pod, spec->arena, &spec->dns, &dns_set,
                                        &spec->msg);
                if (r < 0)
                        return r;
                spec->config.dns_config = dns_set ? &spec->dns : NULL;
        }
        return 0;
}

/*
 * generatePodSandboxConfig for sandbox attempt @attempt: 0, -ENOMEM, or
 * the helper's -errno with spec->msg. No cgroup parent: cubelet makes no
 * pod cgroups (docs/deviations.md D40).
 */
static int generate_pod_sandbox_config(const char *logs_root, const struct kc__sync_env *env,
                                       const struct kc_api_pod *pod, uint32_t attempt,
                                       struct sandbox_spec *spec)
{
        size_t n_labels = 0;
        int r;

        spec->log_dir = kc_strdup_printf("%s/%s_%s_%s", logs_root ? logs_root : KC_POD_LOGS_ROOT,
                                         str_or_empty(pod->namespace), str_or_empty(pod->name),
                                         str_or_empty(pod->uid));
        spec->labels = new_pod_labels(pod, &n_labels);
        if (!spec->log_dir || !spec->labels || kc_arena_new(&spec->arena) < 0)
                return -ENOMEM;
        spec->config = (struct kc_pod_sandbox_config){
                .metadata = { .name = pod->name,
                              .uid = pod->uid,
                              .namespace = pod->namespace,
                              .attempt = attempt },
                .log_directory = spec->log_dir,
                .host_network = pod->host_network,
                /* namespacesForPod: a container's own PID namespace by default. */
                .security.namespace_options = { .network = pod->host_network ? KC_CRI_NAMESPACE_NODE
                                                                             : KC_CRI_NAMESPACE_POD,
                                                .pid = KC_CRI_NAMESPACE_CONTAINER,
                                                .ipc = KC_CRI_NAMESPACE_POD },
                .labels = spec->labels,
                .n_labels = n_labels,
                .annotations = pod->annotations,
                .n_annotations = pod->n_annotations,
        };
        r = sandbox_helper_parts(&env->helper, pod, spec);
        if (r >= 0)
                r = kc__make_port_mappings(pod, spec->arena, &spec->config.port_mappings,
                                           &spec->config.n_port_mappings);
        if (r >= 0)
                r = kc__sandbox_security(pod, spec->arena, &spec->config.security,
                                         &spec->config.sysctls, &spec->config.n_sysctls);
        return r;
}

/* Step 4, createPodSandbox: the pod log directory, then RunPodSandbox; *ret_id its ID. */
static int create_sandbox_step(struct kc_runtime_service *svc, const char *logs_root,
                               const struct kc_api_pod *pod, const struct sandbox_spec *spec,
                               struct kc_cancel *ctx, struct sp_result *res, char **ret_id)
{
        struct kc_runtime_error e = { 0 };
        _cleanup_free_ char *target = NULL, *msg = NULL;
        int r;

        if (cancelled(ctx, res))
                return res->r;
        /* The SyncResult's target: format.Pod, "<name>_<namespace>(<uid>)". */
        target = kc_strdup_printf("%s_%s(%s)", str_or_empty(pod->name),
                                  str_or_empty(pod->namespace), str_or_empty(pod->uid));
        r = logs_root ? make_dirs(spec->log_dir) : 0;
        if (r < 0)
                msg = kc_strdup_printf("Failed to create log directory for pod \"%s\": %s",
                                       str_or_empty(target), strerror(-r));
        else
                r = svc->ops->run_pod_sandbox(svc->self, &spec->config, ret_id, &e);
        if (r < 0 && !msg)
                msg = kc_strdup_printf("Failed to create pod sandbox: %s", error_text(&e, r));
        if (r < 0)
                result_fail_action(res, r, "CreatePodSandbox", target, "CreatePodSandboxError",
                                   msg ? msg : strerror(ENOMEM));
        return res->r;
}

/*
 * A sandbox config that could not be made: before a new sandbox,
 * createPodSandbox's failure (CreatePodSandbox); for an existing one,
 * ConfigPodSandbox's.
 */
static void sandbox_config_fail(const struct kc_api_pod *pod, bool create, int r, const char *why,
                                struct sp_result *res)
{
        _cleanup_free_ char *target = NULL, *msg = NULL;

        if (r == -ENOMEM && !why) {
                result_fail(res, -ENOMEM, "failed to SyncPod: out of memory");
                return;
        }
        target = kc_strdup_printf("%s_%s(%s)", str_or_empty(pod->name),
                                  str_or_empty(pod->namespace), str_or_empty(pod->uid));
        msg = kc_strdup_printf(create ? "Failed to generate sandbox config for pod \"%s\": %s"
                                      : "GeneratePodSandboxConfig for pod \"%s\" failed: %s",
                               str_or_empty(target), why ? why : strerror(-r));
        if (create)
                result_fail_action(res, r, "CreatePodSandbox", target, "CreatePodSandboxError",
                                   msg ? msg : strerror(ENOMEM));
        else
                result_fail_action(res, r, "ConfigPodSandbox", pod->uid, "ConfigPodSandboxError",
                                   msg ? msg : strerror(ENOMEM));
}

static void sandbox_status_done(struct kc_pod_sandbox_status_result *st)
{
        kc_runtime_result_done(st);
}

/* SyncPod after RunPodSandbox: PodSandboxStatus, for the IPs the containers' env sees. */
static int sandbox_ips(struct kc_runtime_service *svc, const char *id,
                       struct kc_pod_sandbox_status_result *ret, struct sp_result *res)
{
        struct kc_runtime_error e = { 0 };
        int r = svc->ops->pod_sandbox_status(svc->self, id, ret, &e);

        if (r < 0)
                result_fail(res, r, "%s", error_text(&e, r));
        return r;
}

/* The status' IP then its additional IPs, in its arena; NULL on ENOMEM. */
static const char *const *sbst_ips(struct kc_pod_sandbox_status_result *st, size_t *ret_n)
{
        size_t n = 1 + st->status.n_additional_ips;
        const char **ips = kc_arena_alloc(st->arena, n * sizeof(*ips));

        if (!ips)
                return NULL;
        ips[0] = st->status.ip;
        for (size_t i = 1; i < n; i++)
                ips[i] = st->status.additional_ips[i - 1];
        *ret_n = n;
        return ips;
}

/* SyncPod's steps; the first failure is recorded in @res and its code returned. */
static int sync_pod(struct kc_runtime_service *svc, struct kc_clock *clock, const char *logs_root,
                    const struct kc__sync_env *env, const struct kc_api_pod *pod,
                    const struct kc_pod_status *status, const struct kc_sync_pod_options *opts,
                    struct sp_result *res)
{
        struct kill_ctx kc = { .svc = svc,
                               .clock = clock,
                               .pod = pod,
                               .pod_ip = status->n_ips > 0 ? status->ips[0] : NULL,
                               .ctx = opts->ctx };
        _cleanup_(kc_pod_actions_done) struct kc_pod_actions a = { 0 };
        _cleanup_(sandbox_spec_done) struct sandbox_spec sb = { 0 };
        _cleanup_(sandbox_status_done) struct kc_pod_sandbox_status_result sbst = { 0 };
        _cleanup_free_ char *new_sb_id = NULL;
        const char *sandbox_id;
        struct start_ctx sc;
        size_t i;
        int r;

        /* Step 1: compute the actions. */
        r = kc_compute_pod_actions_probed(pod, status, opts->probes, &a);
        if (r < 0) {
                result_fail(res, r, "failed to SyncPod: failed to compute pod actions: %s",
                            strerror(-r));
                return r;
        }

        /* Steps 2 and 3: kill the pod, or the unwanted containers. */
        kc.sandbox_id = a.sandbox_id;
        r = a.kill_pod ? kill_pod_step(&kc, status, res) : kill_containers_step(&kc, &a, res);
        if (r < 0)
                return r;

        /* Step 4: create the sandbox. */
        r = generate_pod_sandbox_config(logs_root, env, pod, a.attempt, &sb);
        if (r < 0) {
                sandbox_config_fail(pod, a.create_sandbox, r, sb.msg, res);
                return res->r;
        }
        sandbox_id = a.sandbox_id;
        if (a.create_sandbox) {
                if (opts->metrics)
                        kc_counter_inc_mp(opts->metrics->started_pods_total);
                r = create_sandbox_step(svc, logs_root, pod, &sb, opts->ctx, res, &new_sb_id);
                if (r < 0 && opts->metrics)
                        kc_counter_inc_mp(opts->metrics->started_pods_errors_total);
                if (r < 0)
                        return r;
                sandbox_id = new_sb_id;
                if (!pod->host_network && sandbox_ips(svc, sandbox_id, &sbst, res) < 0)
                        return res->r;
        }
        if (!sandbox_id)
                return res->r; /* nothing to start in (no sandbox and none to create) */

        /* Step 6: the next init container, and nothing else this sync. */
        sc = (struct start_ctx){
                .svc = svc,
                .pod = pod,
                .status = status,
                .opts = opts,
                .sandbox_id = sandbox_id,
                .sb_config = &sb.config,
                .env = env,
                .pod_ips = status->ips,
                .n_pod_ips = status->n_ips,
                .make_log_dirs = logs_root != NULL,
                .kc = &kc,
                .res = res,
        };
        if (sbst.status.ip && sbst.status.ip[0]) {
                /* determinePodSandboxIPs: the new sandbox's IP, then its additional ones. */
                sc.pod_ips = sbst_ips(&sbst, &sc.n_pod_ips);
                if (!sc.pod_ips) {
                        result_fail(res, -ENOMEM, "failed to SyncPod: out of memory");
                        return res->r;
                }
        }
        /* The hooks' pod IP: the one the containers are given. */
        kc.sandbox_id = sandbox_id;
        kc.pod_ip = sc.n_pod_ips > 0 ? sc.pod_ips[0] : NULL;
        if (a.next_init_container_to_start >= 0) {
                start_one(&sc, &pod->init_containers[a.next_init_container_to_start], true);
                return res->r;
        }

        /*
         * Step 6, the sidecar path: every init container to start; a sidecar
         * that fails to start does not hold the others back, an init
         * container that fails ends the sync.
         */
        for (i = 0; i < a.n_init_containers_to_start; i++) {
                const struct kc_api_container *ic =
                        &pod->init_containers[a.init_containers_to_start[i]];

                sc.failed = false;
                if (!start_one(&sc, ic, true))
                        return res->r;
                if (sc.failed && !kc_is_restartable_init_container(ic))
                        return res->r;
        }

        /* Step 8: the app containers; a failure (back-off included) does not stop the others. */
        for (i = 0; i < a.n_containers_to_start; i++)
                if (!start_one(&sc, &pod->containers[a.containers_to_start[i]], false))
                        return res->r;
        return res->r;
}

int kc_runtime_manager_sync_pod(struct kc_runtime_manager *m, const struct kc_api_pod *pod,
                                const struct kc_pod_status *status,
                                const struct kc_sync_pod_options *opts, char **ret_err)
{
        static const struct kc_sync_pod_options no_opts = { 0 };
        struct kc_runtime_service svc;
        _cleanup_(kc_pod_status_unrefp) struct kc_pod_status *empty = NULL;
        struct sp_result res = { 0 };
        int r;

        if (ret_err)
                *ret_err = NULL;
        if (!m || !pod || !pod->uid)
                return -EINVAL;
        svc = kc_runtime_manager_service(m);
        if (!svc.ops)
                return -EINVAL;
        if (!opts)
                opts = &no_opts;
        if (cancelled(opts->ctx, &res))
                return result_finish(&res, ret_err);
        if (!status) {
                r = kc_pod_status_new_default(pod->uid, &empty);
                if (r < 0)
                        return r;
                status = empty;
        }
        sync_pod(&svc, kc__runtime_manager_clock(m), kc_runtime_manager_pod_logs_root(m),
                 kc__runtime_manager_sync_env(m), pod, status, opts, &res);
        return result_finish(&res, ret_err);
}
