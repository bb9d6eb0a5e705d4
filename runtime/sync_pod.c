/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SyncPod and KillPod (upstream kuberuntime_manager.go and
 * kuberuntime_container.go): the acting half of the runtime manager, over
 * any runtime service.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kc_runtime.h"

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
        char *s = NULL;

        if (res->r < 0)
                return;
        res->r = r;
        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        res->msg = s;
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

/* FindContainerStatusByName: the newest status named @name (statuses are newest first). */
static const struct kc_container_status *find_status(const struct kc_pod_status *st,
                                                     const char *name)
{
        size_t i;

        for (i = 0; i < st->n_containers; i++)
                if (kc__streq(st->containers[i].name, name))
                        return &st->containers[i];
        return NULL;
}

/*
 * startContainer: doBackOff, CreateContainer, StartContainer. Returns false
 * when cancelled; failures (including the back-off) are recorded in @res
 * and reported through *failed.
 */
static bool start_one(struct kc_runtime_service *svc, const struct kc_api_pod *pod,
                      const struct kc_api_container *c, const struct kc_pod_status *status,
                      struct kc_backoff *backoff, const char *sandbox_id,
                      const struct kc_pod_sandbox_config *sb_config, struct kc_cancel *ctx,
                      struct sp_result *res, bool *failed)
{
        const struct kc_container_status *cs;
        _cleanup_free_ char *bo_msg = NULL, *log_path = NULL, *id = NULL;
        struct kc_runtime_error e = { 0 };
        char hash[17], restart[16];
        uint32_t attempt = 0;
        int r;

        *failed = true;
        if (backoff) {
                r = kc_do_back_off(backoff, pod, c, status, 0, &bo_msg);
                if (r == -EAGAIN) {
                        result_fail(res, -EAGAIN, "%s: %s", KC_CRASH_LOOP_BACK_OFF_REASON,
                                    str_or_empty(bo_msg));
                        return true;
                }
                if (r < 0) {
                        result_fail(res, r, "failed to back off container %s: %s",
                                    str_or_empty(c->name), strerror(-r));
                        return true;
                }
        }

        cs = find_status(status, c->name);
        if (cs)
                attempt = (uint32_t)cs->restart_count + 1;
        log_path = kc__strdup_printf("%s/%" PRIu32 ".log", str_or_empty(c->name), attempt);
        if (!log_path) {
                result_fail(res, -ENOMEM, "out of memory");
                return true;
        }
        snprintf(hash, sizeof(hash), "%" PRIx64, kc_container_spec_hash(c));
        snprintf(restart, sizeof(restart), "%" PRIu32, attempt);
        struct kc_label labels[] = {
                { KC_LABEL_POD_NAME, str_or_empty(pod->name) },
                { KC_LABEL_POD_NAMESPACE, str_or_empty(pod->namespace) },
                { KC_LABEL_POD_UID, str_or_empty(pod->uid) },
                { KC_LABEL_CONTAINER_NAME, str_or_empty(c->name) },
        };
        struct kc_label annotations[] = {
                { KC_ANNOTATION_CONTAINER_HASH, hash },
                { KC_ANNOTATION_CONTAINER_RESTART_COUNT, restart },
        };
        struct kc_container_config config = {
                .metadata = { .name = c->name, .attempt = attempt },
                .image = c->image,
                .command = c->command,
                .n_command = c->n_command,
                .args = c->args,
                .n_args = c->n_args,
                .log_path = log_path,
                .labels = labels,
                .n_labels = sizeof(labels) / sizeof(labels[0]),
                .annotations = annotations,
                .n_annotations = sizeof(annotations) / sizeof(annotations[0]),
        };

        if (cancelled(ctx, res))
                return false;
        r = svc->ops->create_container(svc->self, sandbox_id, &config, sb_config, &id, &e);
        if (r < 0) {
                result_fail(res, r,
                            "failed to \"StartContainer\" for \"%s\" with CreateContainerError: %s",
                            str_or_empty(c->name), e.message);
                return true;
        }
        if (cancelled(ctx, res))
                return false;
        e = (struct kc_runtime_error){ 0 };
        r = svc->ops->start_container(svc->self, id, &e);
        if (r < 0) {
                result_fail(res, r,
                            "failed to \"StartContainer\" for \"%s\" with RunContainerError: %s",
                            str_or_empty(c->name), e.message);
                return true;
        }
        *failed = false;
        return true;
}

static int sync_pod(struct kc_runtime_service *svc, const struct kc_api_pod *pod,
                    const struct kc_pod_status *status, struct kc_backoff *backoff,
                    struct kc_cancel *ctx, struct sp_result *res)
{
        _cleanup_(kc_pod_actions_done) struct kc_pod_actions a = { 0 };
        _cleanup_free_ const char **cids = NULL, **sbids = NULL;
        _cleanup_free_ struct kc_label *sb_labels = NULL;
        _cleanup_free_ char *log_dir = NULL, *new_sb_id = NULL;
        struct kc_runtime_error e = { 0 };
        const char *sandbox_id;
        bool failed;
        size_t i, n;
        int r;

        /* Step 1: compute the actions. */
        r = kc_compute_pod_actions(pod, status, &a);
        if (r < 0) {
                result_fail(res, r, "failed to compute pod actions: %s", strerror(-r));
                return r;
        }

        /* Step 2: kill the pod, or the unwanted containers. */
        if (a.kill_pod) {
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
                if (!kill_ids(svc, cids, n, sbids, status->n_sandboxes, pod_grace(pod), ctx, res))
                        return res->r;
                if (res->r < 0)
                        return res->r; /* upstream: killPod failed → return */
        } else {
                for (i = 0; i < a.n_containers_to_kill; i++) {
                        const char *id = a.containers_to_kill[i].id;

                        if (!kill_ids(svc, &id, 1, NULL, 0, pod_grace(pod), ctx, res))
                                return res->r;
                }
                if (res->r < 0)
                        return res->r;
        }

        /* Step 4: create the sandbox. */
        log_dir = kc__strdup_printf("/var/log/pods/%s_%s_%s", str_or_empty(pod->namespace),
                                    str_or_empty(pod->name), str_or_empty(pod->uid));
        sb_labels = calloc(pod->n_labels + 3, sizeof(*sb_labels));
        if (!log_dir || !sb_labels) {
                result_fail(res, -ENOMEM, "out of memory");
                return res->r;
        }
        /* newPodLabels: the pod's labels, then kubelet's (which win on lookups by key). */
        n = 0;
        sb_labels[n++] = (struct kc_label){ KC_LABEL_POD_NAME, str_or_empty(pod->name) };
        sb_labels[n++] = (struct kc_label){ KC_LABEL_POD_NAMESPACE, str_or_empty(pod->namespace) };
        sb_labels[n++] = (struct kc_label){ KC_LABEL_POD_UID, str_or_empty(pod->uid) };
        for (i = 0; i < pod->n_labels; i++)
                if (!kc__streq(pod->labels[i].key, KC_LABEL_POD_NAME) &&
                    !kc__streq(pod->labels[i].key, KC_LABEL_POD_NAMESPACE) &&
                    !kc__streq(pod->labels[i].key, KC_LABEL_POD_UID))
                        sb_labels[n++] = pod->labels[i];
        struct kc_pod_sandbox_config sb_config = {
                .metadata = { .name = pod->name,
                              .uid = pod->uid,
                              .namespace = pod->namespace,
                              .attempt = a.attempt },
                .hostname = pod->name,
                .log_directory = log_dir,
                .host_network = pod->host_network,
                .labels = sb_labels,
                .n_labels = n,
                .annotations = pod->annotations,
                .n_annotations = pod->n_annotations,
        };
        sandbox_id = a.sandbox_id;
        if (a.create_sandbox) {
                if (cancelled(ctx, res))
                        return res->r;
                r = svc->ops->run_pod_sandbox(svc->self, &sb_config, &new_sb_id, &e);
                if (r < 0) {
                        result_fail(res, r,
                                    "failed to \"CreatePodSandbox\" for \"%s_%s(%s)\" with "
                                    "CreatePodSandboxError: %s",
                                    str_or_empty(pod->name), str_or_empty(pod->namespace),
                                    str_or_empty(pod->uid), e.message);
                        return res->r;
                }
                sandbox_id = new_sb_id;
        }
        if (!sandbox_id)
                return res->r; /* nothing to start in (no sandbox and none to create) */

        /* Step 6: the next init container, and nothing else this sync. */
        if (a.next_init_container_to_start >= 0) {
                const struct kc_api_container *c =
                        &pod->init_containers[a.next_init_container_to_start];

                start_one(svc, pod, c, status, backoff, sandbox_id, &sb_config, ctx, res, &failed);
                return res->r;
        }

        /* Step 8: the app containers; a failure (back-off included) does not stop the others. */
        for (i = 0; i < a.n_containers_to_start; i++) {
                const struct kc_api_container *c = &pod->containers[a.containers_to_start[i]];

                if (!start_one(svc, pod, c, status, backoff, sandbox_id, &sb_config, ctx, res,
                               &failed))
                        return res->r;
        }
        return res->r;
}

int kc_runtime_manager_sync_pod(struct kc_runtime_manager *m, const struct kc_api_pod *pod,
                                const struct kc_pod_status *status, struct kc_backoff *backoff,
                                struct kc_cancel *ctx, char **ret_err)
{
        struct kc_runtime_service svc = kc_runtime_manager_service(m);
        _cleanup_(kc_pod_status_unrefp) struct kc_pod_status *empty = NULL;
        struct sp_result res = { 0 };
        int r;

        if (ret_err)
                *ret_err = NULL;
        if (!m || !svc.ops || !pod || !pod->uid)
                return -EINVAL;
        if (cancelled(ctx, &res))
                return result_finish(&res, ret_err);
        if (!status) {
                r = kc_pod_status_new_default(pod->uid, &empty);
                if (r < 0)
                        return r;
                status = empty;
        }
        sync_pod(&svc, pod, status, backoff, ctx, &res);
        return result_finish(&res, ret_err);
}
