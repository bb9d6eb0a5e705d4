/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SyncPod and KillPod (upstream kuberuntime_manager.go and
 * kuberuntime_container.go): the acting half of the runtime manager, over
 * any runtime service.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/backoff.h"
#include "core/cancel.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/format.h"
#include "core/log.h"
#include "internal.h"
#include "runtime/api_pod.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/images.h"
#include "runtime/manager.h"
#include "runtime/pod_actions.h"
#include "runtime/runtime_service.h"
#include "runtime/sync_pod.h"

/* v1 default of spec.terminationGracePeriodSeconds. */
#define DEFAULT_TERMINATION_GRACE_S 30

/* Records the first error: its code is returned, its message kept. */
struct sp_result {
        int r;
        char *msg;
};

static void result_fail(struct sp_result *res, int r, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void result_fail(struct sp_result *res, int r, const char *fmt, ...)
{
        va_list ap;

        if (res->r < 0)
                return;
        res->r = r;
        va_start(ap, fmt);
        res->msg = kc_strdup_vprintf(fmt, ap);
        va_end(ap);
}

static int result_finish(struct sp_result *res, char **ret_err)
{
        if (ret_err)
                *ret_err = res->r < 0 ? TAKE_PTR(res->msg) : NULL;
        free(res->msg);
        res->msg = NULL;
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
 * killPodWithSyncResult: stop the containers, then the sandboxes. Returns
 * false when cancelled.
 */
static bool kill_ids(struct kc_runtime_service *svc, const char *const *cids, size_t n_c,
                     const char *const *sbids, size_t n_sb, int64_t grace_s, struct kc_cancel *ctx,
                     struct sp_result *res)
{
        struct kc_runtime_error e;
        size_t i;
        int r;

        if (grace_s < KC_MINIMUM_GRACE_PERIOD_S)
                grace_s = KC_MINIMUM_GRACE_PERIOD_S;
        for (i = 0; i < n_c; i++) {
                if (cancelled(ctx, res))
                        return false;
                e = (struct kc_runtime_error){ 0 };
                r = svc->ops->stop_container(svc->self, cids[i], grace_s, &e);
                if (r < 0)
                        result_fail(res, r, "failed to \"KillContainer\" for \"%s\": %s", cids[i],
                                    e.message);
        }
        for (i = 0; i < n_sb; i++) {
                if (cancelled(ctx, res))
                        return false;
                e = (struct kc_runtime_error){ 0 };
                r = svc->ops->stop_pod_sandbox(svc->self, sbids[i], &e);
                if (r < 0)
                        result_fail(res, r, "failed to \"KillPodSandbox\" for \"%s\": %s", sbids[i],
                                    e.message);
        }
        return true;
}

int kc_runtime_manager_kill_pod(struct kc_runtime_manager *m, const struct kc_api_pod *pod,
                                const struct kc_pod *running_pod, int64_t grace_s,
                                struct kc_cancel *ctx, char **ret_err)
{
        struct kc_runtime_service svc = kc_runtime_manager_service(m);
        struct sp_result res = { 0 };
        struct kc_container_list cl = { 0 };
        struct kc_pod_sandbox_list sbl = { 0 };
        struct kc_runtime_error e = { 0 };
        _cleanup_free_ const char **cids = NULL, **sbids = NULL;
        size_t n_c = 0, n_sb = 0, i;
        const char *uid;
        int r;

        if (ret_err)
                *ret_err = NULL;
        if (!m || !svc.ops || (!pod && !running_pod))
                return -EINVAL;
        if (cancelled(ctx, &res))
                return result_finish(&res, ret_err);

        if (running_pod) {
                cids = calloc(running_pod->n_containers + 1, sizeof(*cids));
                sbids = calloc(running_pod->n_sandboxes + 1, sizeof(*sbids));
                if (!cids || !sbids)
                        return -ENOMEM;
                for (i = 0; i < running_pod->n_containers; i++)
                        cids[n_c++] = running_pod->containers[i].id;
                for (i = 0; i < running_pod->n_sandboxes; i++)
                        sbids[n_sb++] = running_pod->sandboxes[i].id;
                kill_ids(&svc, cids, n_c, sbids, n_sb, grace_s, ctx, &res);
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
        cids = calloc(cl.n + 1, sizeof(*cids));
        sbids = calloc(sbl.n + 1, sizeof(*sbids));
        if (!cids || !sbids) {
                result_fail(&res, -ENOMEM, "out of memory");
                goto out;
        }
        for (i = 0; i < cl.n; i++)
                cids[n_c++] = cl.items[i].id;
        for (i = 0; i < sbl.n; i++)
                sbids[n_sb++] = sbl.items[i].id;
        kill_ids(&svc, cids, n_c, sbids, n_sb, grace_s, ctx, &res);
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
        bool make_log_dirs; /* a pod logs root is set: create the directories */
        struct sp_result *res;
};

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

/*
 * A failed start: recorded as the sync's error (if first) and reported.
 * Back-offs log as "<reason>: <message>" (their messages name the container
 * or the image), other failures in upstream's SyncResult shape.
 */
static void start_fail(struct start_ctx *sc, const struct kc_api_container *c, bool init, int r,
                       const char *reason, const char *msg, int64_t retry_after_ns)
{
        if (kc__streq(reason, KC_CRASH_LOOP_BACK_OFF_REASON) ||
            kc__streq(reason, KC_IMAGE_PULL_BACK_OFF_REASON))
                result_fail(sc->res, r, "%s: %s", reason, str_or_empty(msg));
        else
                result_fail(sc->res, r, "failed to \"StartContainer\" for \"%s\" with %s: %s",
                            str_or_empty(c->name), reason, str_or_empty(msg));
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
        struct kc_label annotations[2];
        struct kc_container_config config;
};

static void container_spec_done(struct container_spec *spec)
{
        free(spec->log_path);
}

/* generateContainerConfig for attempt @attempt of @c with image @image_ref. -ENOMEM or 0. */
static int generate_container_config(const struct kc_api_pod *pod, const struct kc_api_container *c,
                                     uint32_t attempt, const char *image_ref,
                                     struct container_spec *spec)
{
        spec->log_path = kc_strdup_printf("%s/%" PRIu32 ".log", str_or_empty(c->name), attempt);
        if (!spec->log_path)
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
        spec->config = (struct kc_container_config){
                .metadata = { .name = c->name, .attempt = attempt },
                .image = image_ref,
                .user_specified_image = c->image,
                .command = c->command,
                .n_command = c->n_command,
                .args = c->args,
                .n_args = c->n_args,
                .log_path = spec->log_path,
                .labels = spec->labels,
                .n_labels = KC_ELEMENTSOF(spec->labels),
                .annotations = spec->annotations,
                .n_annotations = KC_ELEMENTSOF(spec->annotations),
        };
        return 0;
}

/* BuildContainerLogsDirectory: the runtime writes <dir>/<name>/<attempt>.log. */
static int make_container_log_dir(const struct start_ctx *sc, const struct kc_api_container *c)
{
        _cleanup_free_ char *dir =
                kc_strdup_printf("%s/%s", sc->sb_config->log_directory, str_or_empty(c->name));

        return dir ? make_dirs(dir) : -ENOMEM;
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
        const struct kc_container_status *cs = kc__find_container_status(sc->status, c->name);
        uint32_t attempt = cs ? (uint32_t)cs->restart_count + 1 : 0;
        struct kc_runtime_error e = { 0 };
        _cleanup_free_ char *id = NULL;
        int r;

        if (generate_container_config(pod, c, attempt, image_ref, &spec) < 0) {
                start_fail(sc, c, init, -ENOMEM, KC_CREATE_CONTAINER_CONFIG_ERROR_REASON,
                           strerror(ENOMEM), -1);
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

        r = kc_ensure_image_exists(*sc->svc, sc->opts->image_backoff, pod, c, sc->sb_config,
                                   &image_ref, &image_reason, &image_msg, &retry_after);
        if (r < 0) {
                start_fail(sc, c, init, r,
                           image_reason ? image_reason : KC_ERR_IMAGE_INSPECT_REASON,
                           image_msg ? image_msg : strerror(-r), retry_after);
                return true;
        }
        return start_container(sc, c, init, image_ref);
}

/* Step 2, killPodWithSyncResult: the pod's running containers, then every sandbox. */
static int kill_pod_step(struct kc_runtime_service *svc, const struct kc_api_pod *pod,
                         const struct kc_pod_status *status, struct kc_cancel *ctx,
                         struct sp_result *res)
{
        _cleanup_free_ const char **cids = NULL, **sbids = NULL;
        size_t i, n;

        /* ConvertPodStatusToRunningPod: running containers, every sandbox. */
        cids = calloc(status->n_containers + 1, sizeof(*cids));
        sbids = calloc(status->n_sandboxes + 1, sizeof(*sbids));
        if (!cids || !sbids) {
                result_fail(res, -ENOMEM, "out of memory");
                return res->r;
        }
        for (i = 0, n = 0; i < status->n_containers; i++)
                if (status->containers[i].state == KC_CONTAINER_STATE_RUNNING)
                        cids[n++] = status->containers[i].id;
        for (i = 0; i < status->n_sandboxes; i++)
                sbids[i] = status->sandboxes[i].id;
        kill_ids(svc, cids, n, sbids, status->n_sandboxes, pod_grace(pod), ctx, res);
        return res->r; /* upstream: killPod failed → return */
}

/* Step 3: the containers not to keep; a failure does not stop the others. */
static int kill_containers_step(struct kc_runtime_service *svc, const struct kc_api_pod *pod,
                                const struct kc_pod_actions *a, struct kc_cancel *ctx,
                                struct sp_result *res)
{
        size_t i;

        for (i = 0; i < a->n_containers_to_kill; i++) {
                const char *id = a->containers_to_kill[i].id;

                if (!kill_ids(svc, &id, 1, NULL, 0, pod_grace(pod), ctx, res))
                        break;
        }
        return res->r;
}

/* generatePodSandboxConfig's result and the memory it points to. */
struct sandbox_spec {
        char *log_dir;
        struct kc_label *labels;
        struct kc_pod_sandbox_config config;
};

static void sandbox_spec_done(struct sandbox_spec *spec)
{
        free(spec->log_dir);
        free(spec->labels);
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

/* generatePodSandboxConfig for sandbox attempt @attempt. -ENOMEM or 0. */
static int generate_pod_sandbox_config(const char *logs_root, const struct kc_api_pod *pod,
                                       uint32_t attempt, struct sandbox_spec *spec)
{
        size_t n_labels = 0;

        spec->log_dir = kc_strdup_printf("%s/%s_%s_%s", logs_root ? logs_root : KC_POD_LOGS_ROOT,
                                         str_or_empty(pod->namespace), str_or_empty(pod->name),
                                         str_or_empty(pod->uid));
        spec->labels = new_pod_labels(pod, &n_labels);
        if (!spec->log_dir || !spec->labels)
                return -ENOMEM;
        spec->config = (struct kc_pod_sandbox_config){
                .metadata = { .name = pod->name,
                              .uid = pod->uid,
                              .namespace = pod->namespace,
                              .attempt = attempt },
                /* As kubelet: a host-network pod keeps the node's host name. */
                .hostname = pod->host_network ? NULL : pod->name,
                .log_directory = spec->log_dir,
                .host_network = pod->host_network,
                .labels = spec->labels,
                .n_labels = n_labels,
                .annotations = pod->annotations,
                .n_annotations = pod->n_annotations,
        };
        return 0;
}

/* Step 4, createPodSandbox: the pod log directory, then RunPodSandbox; *ret_id its ID. */
static int create_sandbox_step(struct kc_runtime_service *svc, const char *logs_root,
                               const struct kc_api_pod *pod, const struct sandbox_spec *spec,
                               struct kc_cancel *ctx, struct sp_result *res, char **ret_id)
{
        struct kc_runtime_error e = { 0 };
        int r;

        if (cancelled(ctx, res))
                return res->r;
        r = logs_root ? make_dirs(spec->log_dir) : 0;
        if (r < 0) {
                result_fail(res, r, "create pod log directory %s: %s", spec->log_dir, strerror(-r));
                return res->r;
        }
        r = svc->ops->run_pod_sandbox(svc->self, &spec->config, ret_id, &e);
        if (r < 0)
                result_fail(res, r,
                            "failed to \"CreatePodSandbox\" for \"%s_%s(%s)\" with "
                            "CreatePodSandboxError: %s",
                            str_or_empty(pod->name), str_or_empty(pod->namespace),
                            str_or_empty(pod->uid), e.message);
        return res->r;
}

/* SyncPod's steps; the first failure is recorded in @res and its code returned. */
static int sync_pod(struct kc_runtime_service *svc, const char *logs_root,
                    const struct kc_api_pod *pod, const struct kc_pod_status *status,
                    const struct kc_sync_pod_options *opts, struct sp_result *res)
{
        _cleanup_(kc_pod_actions_done) struct kc_pod_actions a = { 0 };
        _cleanup_(sandbox_spec_done) struct sandbox_spec sb = { 0 };
        _cleanup_free_ char *new_sb_id = NULL;
        const char *sandbox_id;
        struct start_ctx sc;
        size_t i;
        int r;

        /* Step 1: compute the actions. */
        r = kc_compute_pod_actions(pod, status, &a);
        if (r < 0) {
                result_fail(res, r, "failed to compute pod actions: %s", strerror(-r));
                return r;
        }

        /* Steps 2 and 3: kill the pod, or the unwanted containers. */
        r = a.kill_pod ? kill_pod_step(svc, pod, status, opts->ctx, res)
                       : kill_containers_step(svc, pod, &a, opts->ctx, res);
        if (r < 0)
                return r;

        /* Step 4: create the sandbox. */
        if (generate_pod_sandbox_config(logs_root, pod, a.attempt, &sb) < 0) {
                result_fail(res, -ENOMEM, "out of memory");
                return res->r;
        }
        sandbox_id = a.sandbox_id;
        if (a.create_sandbox) {
                r = create_sandbox_step(svc, logs_root, pod, &sb, opts->ctx, res, &new_sb_id);
                if (r < 0)
                        return r;
                sandbox_id = new_sb_id;
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
                .make_log_dirs = logs_root != NULL,
                .res = res,
        };
        if (a.next_init_container_to_start >= 0) {
                start_one(&sc, &pod->init_containers[a.next_init_container_to_start], true);
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
        sync_pod(&svc, kc__runtime_manager_pod_logs_root(m), pod, status, opts, &res);
        return result_finish(&res, ret_err);
}
