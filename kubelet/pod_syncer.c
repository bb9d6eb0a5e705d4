/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubelet's podSyncer (upstream kubelet.go SyncPod, SyncTerminatingPod,
 * SyncTerminatingRuntimePod, SyncTerminatedPod): what the pod workers call
 * for each pod. It generates the pod's v1 status into the status manager,
 * refuses pods that need pod networking while the network is not ready
 * (F-SYNC-01), and drives the runtime manager's SyncPod and KillPod
 * (F-SYNC-02, F-SYNC-03). Every callback runs on a pod-worker thread, at most
 * one per pod at a time; the objects it uses are thread-safe.
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
#include "core/log.h"
#include "health/runtime_state.h"
#include "kubelet/pod_syncer.h"
#include "kubelet/prober/prober_manager.h"
#include "kubelet/status/pod_status.h"
#include "kubelet/status/reason_cache.h"
#include "kubelet/status/status_manager.h"
#include "metrics/kubelet_metrics.h"
#include "metrics/registry.h"
#include "podworkers/pod_workers.h"
#include "runtime/api_pod.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/manager.h"
#include "runtime/pod_actions.h"
#include "runtime/sync_pod.h"
#include "volume_manager.h"

/* v1 default of spec.terminationGracePeriodSeconds. */
#define DEFAULT_TERMINATION_GRACE_S 30
/* SyncTerminatingRuntimePod's grace (KillPod raises it to 2 s). */
#define RUNTIME_POD_GRACE_S 1

struct kc_pod_syncer {
        struct kc_pod_syncer_config cfg;
        /* The prober manager's results as SyncPod and the status generation read them. */
        struct kc_probe_results_view probe_results;
        struct kc_container_probe_view probe_view;
};

/* computePodActions' livenessManager/startupManager.Get(id). */
static enum kc_probe_verdict probe_get(void *self, const char *container_id, bool startup)
{
        static const enum kc_probe_verdict verdicts[_KC_PROBE_RESULT_MAX] = {
                [KC_PROBE_SUCCESS] = KC_PROBE_VERDICT_SUCCESS,
                [KC_PROBE_WARNING] = KC_PROBE_VERDICT_SUCCESS,
                [KC_PROBE_FAILURE] = KC_PROBE_VERDICT_FAILURE,
                [KC_PROBE_UNKNOWN] = KC_PROBE_VERDICT_UNKNOWN,
        };
        struct kc_results_manager *rm =
                kc_prober_manager_results(self, startup ? KC_PROBE_STARTUP : KC_PROBE_LIVENESS);
        enum kc_probe_result r;

        if (!kc_results_manager_get(rm, container_id, &r) || r < 0 || r >= _KC_PROBE_RESULT_MAX)
                return KC_PROBE_VERDICT_NONE;
        return verdicts[r];
}

/* UpdatePodStatus for one app container. */
static void probe_state(void *self, const char *pod_uid, const char *name, const char *id,
                        bool running, bool *ret_started, bool *ret_ready)
{
        kc_prober_manager_container_state(self, pod_uid, name, id, running, ret_started, ret_ready);
}

int kc_pod_syncer_new(const struct kc_pod_syncer_config *cfg, struct kc_pod_syncer **ret)
{
        struct kc_pod_syncer *s;

        if (!cfg || !ret || !cfg->clock || !cfg->manager || !cfg->runtime_state ||
            !cfg->status_manager || !cfg->reasons || !cfg->node_ip || !cfg->runtime_name)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (s && cfg->prober_manager) {
                s->probe_results = (struct kc_probe_results_view){ probe_get, cfg->prober_manager };
                s->probe_view =
                        (struct kc_container_probe_view){ probe_state, cfg->prober_manager };
        }
        if (!s)
                return -ENOMEM;
        s->cfg = *cfg;
        *ret = s;
        return 0;
}

struct kc_pod_syncer *kc_pod_syncer_free(struct kc_pod_syncer *s)
{
        free(s);
        return NULL;
}

static double seconds_since(struct kc_pod_syncer *s, int64_t t)
{
        return (double)(kc_clock_now(s->cfg.clock) - t) / (double)KC_NSEC_PER_SEC;
}

/*
 * generateAPIPodStatus + statusManager.SetPodStatus. Returns the phase the
 * status manager holds afterwards (a terminal phase it kept wins over a
 * refused update), or a negative errno.
 */
static int update_status(struct kc_pod_syncer *s, const struct kc_api_pod *pod,
                         const struct kc_pod_status *status, bool terminal)
{
        json_t *old = NULL, *st = NULL;
        enum kc_pod_phase phase;
        int r;

        if (kc_status_manager_get_pod_status(s->cfg.status_manager, pod->uid, &old) < 0)
                old = NULL;
        r = kc_generate_api_pod_status_probed(
                pod, status, s->cfg.reasons, s->cfg.node_ip, s->cfg.runtime_name, terminal, old,
                s->cfg.prober_manager ? &s->probe_view : NULL, kc_clock_now(s->cfg.clock), &st);
        json_decref(old);
        if (r < 0) {
                kc_log_error_s(strerror(-r), "Failed to generate the pod status",
                               KC_KV_POD(pod->namespace, pod->name), KC_KV_STR("podUID", pod->uid));
                return r;
        }
        r = kc_status_manager_set_pod_status(s->cfg.status_manager, pod, st);
        json_decref(st);
        if (r < 0 && r != -EPERM)
                return r;
        r = kc_status_manager_get_pod_phase(s->cfg.status_manager, pod->uid, &phase);
        return r < 0 ? r : (int)phase;
}

/*
 * Whether the status manager has no status for @p uid yet, or a Pending one:
 * the pod has not been seen running (PodStartDuration's condition).
 */
static bool stored_phase_is_pending(struct kc_pod_syncer *s, const char *uid)
{
        enum kc_pod_phase phase;

        if (kc_status_manager_get_pod_phase(s->cfg.status_manager, uid, &phase) < 0)
                return true;
        return phase == KC_POD_PHASE_PENDING;
}

/* The runtime manager reports each StartContainer: the reason cache keeps failures. */
struct start_results {
        struct kc_pod_syncer *s;
        const struct kc_api_pod *pod;
        int64_t requeue_after; /* the first back-off end, -1: none */
        bool other_failure;    /* a failure that is not a back-off */
        unsigned failures;     /* starts that failed */
};

static void on_start_result(void *ud, const struct kc_start_result *res)
{
        struct start_results *sr = ud;

        if (res->r == 0) {
                kc_reason_cache_remove(sr->s->cfg.reasons, sr->pod->uid, res->container_name);
                return;
        }
        sr->failures++;
        if (kc_reason_cache_update(sr->s->cfg.reasons, sr->pod->uid, res->container_name,
                                   res->reason, res->message) < 0)
                kc_log_error_s(NULL, "Failed to record a container start failure",
                               KC_KV_POD(sr->pod->namespace, sr->pod->name),
                               KC_KV_STR("podUID", sr->pod->uid));
        if (res->retry_after_ns >= 0) {
                if (sr->requeue_after < 0 || res->retry_after_ns < sr->requeue_after)
                        sr->requeue_after = res->retry_after_ns;
        } else {
                sr->other_failure = true;
        }
}

/*
 * SyncPod's steps before the runtime: makePodDataDirs, then
 * WaitForAttachAndMount (volume_manager.h). A pod whose volumes cannot be
 * set up does not start: its containers stay Waiting (ContainerCreating)
 * and the worker retries it.
 */
static int prepare_volumes(struct kc_pod_syncer *s, const struct kc_api_pod *pod, char **ret_err)
{
        int r;

        if (!s->cfg.volume_manager)
                return 0;
        r = kc__make_pod_data_dirs(s->cfg.volume_manager, pod);
        if (r < 0) {
                kc_log_errno_s(r, "Unable to make pod data directories for pod",
                               KC_KV_POD(pod->namespace, pod->name));
                if (asprintf(ret_err, "error making pod data directories: %s", strerror(-r)) < 0)
                        *ret_err = NULL;
                return r;
        }
        return kc__wait_for_attach_and_mount(s->cfg.volume_manager, pod, ret_err);
}

static int sync_pod(void *ud, struct kc_cancel *ctx, enum kc_sync_pod_type type,
                    struct kc_api_pod *pod, struct kc_api_pod *mirror, struct kc_pod_status *status,
                    bool *ret_is_terminal, int64_t *ret_requeue_after_ns, char **ret_err)
{
        struct kc_pod_syncer *s = ud;
        struct kc_kubelet_metrics *m = s->cfg.metrics;
        struct start_results sr = { .s = s, .pod = pod, .requeue_after = -1 };
        const struct kc_sync_pod_options opts = {
                .backoff = s->cfg.backoff,
                .image_backoff = s->cfg.image_backoff,
                .ctx = ctx,
                .on_start_result = on_start_result,
                .userdata = &sr,
                .metrics = m,
                .probes = s->cfg.prober_manager ? &s->probe_results : NULL,
        };
        _cleanup_free_ char *net = NULL;
        bool was_pending;
        int r, phase;

        (void)mirror;
        kc_log_v_s(2, "SyncPod enter", KC_KV_POD(pod->namespace, pod->name),
                   KC_KV_STR("podUID", pod->uid),
                   KC_KV_STR("updateType", kc_sync_pod_type_to_string(type)));
        if (type == KC_SYNC_POD_CREATE && m) {
                /* The first sight of the pod is its config.seen time (creation_ts). */
                kc_histogram_observe_mp(m->pod_worker_start_duration,
                                        seconds_since(s, pod->creation_ts));
                kc_histogram_observe_mp(m->containers_per_pod, (double)pod->n_containers);
        }

        was_pending = stored_phase_is_pending(s, pod->uid);
        phase = update_status(s, pod, status, false);
        if (m && was_pending && phase == KC_POD_PHASE_RUNNING)
                kc_histogram_observe_mp(m->pod_start_duration, seconds_since(s, pod->creation_ts));
        if (phase == KC_POD_PHASE_SUCCEEDED || phase == KC_POD_PHASE_FAILED) {
                kc_log_v_s(2, "Pod is terminal", KC_KV_POD(pod->namespace, pod->name),
                           KC_KV_STR("podUID", pod->uid),
                           KC_KV_STR("phase", kc_pod_phase_to_string(phase)));
                *ret_is_terminal = true;
                r = 0;
                goto out;
        }

        /* F-SYNC-01: only host-network pods run without a ready network. */
        r = kc_runtime_state_network_errors(s->cfg.runtime_state, &net);
        if (r >= 0 && net && !pod->host_network) {
                if (asprintf(ret_err, "%s: %s", KC_NETWORK_NOT_READY_ERROR_MSG, net) < 0)
                        *ret_err = NULL;
                r = -ENETDOWN;
                goto out;
        }

        r = prepare_volumes(s, pod, ret_err);
        if (r < 0)
                goto out;
        /* Ensure the pod is being probed. */
        kc_prober_manager_add_pod(s->cfg.prober_manager, pod);
        r = kc_runtime_manager_sync_pod(s->cfg.manager, pod, status, &opts, ret_err);
        if (r < 0 && !sr.other_failure && sr.requeue_after >= 0)
                *ret_requeue_after_ns = sr.requeue_after;
        /* A refused start shows at once (waiting CrashLoopBackOff, ErrImagePull, ...),
         * not at the next sync, which a back-off may put minutes away. */
        if (sr.failures)
                update_status(s, pod, status, false);
out:
        return r;
}

/* The grace period to kill with: the override, else the pod's own. */
static int64_t grace_of(const struct kc_api_pod *pod, int64_t override_s)
{
        if (override_s >= 0)
                return override_s;
        if (pod && pod->deletion_grace_s >= 0)
                return pod->deletion_grace_s;
        if (pod && pod->termination_grace_s >= 0)
                return pod->termination_grace_s;
        return DEFAULT_TERMINATION_GRACE_S;
}

/* Whether @status still shows a running container. */
static bool any_running(const struct kc_pod_status *status)
{
        for (size_t i = 0; status && i < status->n_containers; i++)
                if (status->containers[i].state == KC_CONTAINER_STATE_RUNNING)
                        return true;
        return false;
}

static int sync_terminating_pod(void *ud, struct kc_cancel *ctx, struct kc_api_pod *pod,
                                struct kc_pod_status *status, int64_t grace_period_s,
                                char **ret_err)
{
        struct kc_pod_syncer *s = ud;
        struct kc_runtime_error err = { 0 };
        struct kc_pod_status *after = NULL;
        int64_t grace = grace_of(pod, grace_period_s);
        int r;

        kc_log_v_s(2, "SyncTerminatingPod enter", KC_KV_POD(pod->namespace, pod->name),
                   KC_KV_STR("podUID", pod->uid), KC_KV_INT("gracePeriod", grace));
        /* Readiness keeps probing while the pod terminates (it shows in the status). */
        kc_prober_manager_stop_liveness_and_startup(s->cfg.prober_manager, pod);
        update_status(s, pod, status, false);
        r = kc_runtime_manager_kill_pod(s->cfg.manager, pod, NULL, grace, ctx, ret_err);
        if (r < 0)
                return r;
        /* Upstream re-reads the runtime: nothing may still run after KillPod. */
        r = kc_runtime_manager_get_pod_status(s->cfg.manager, pod->uid, pod->name, pod->namespace,
                                              &after, &err);
        if (r < 0) {
                kc_pod_status_unref(after);
                if (asprintf(ret_err,
                             "unable to read pod status prior to final pod termination: %s",
                             err.message) < 0)
                        *ret_err = NULL;
                return r;
        }
        if (any_running(after)) {
                kc_pod_status_unref(after);
                *ret_err = strdup("detected running containers after a successful KillPod");
                return -EBUSY;
        }
        update_status(s, pod, after, true);
        kc_pod_status_unref(after);
        kc_log_v_s(2, "Pod termination stopped all running containers",
                   KC_KV_POD(pod->namespace, pod->name), KC_KV_STR("podUID", pod->uid));
        return 0;
}

static int sync_terminating_runtime_pod(void *ud, struct kc_cancel *ctx, struct kc_pod *running_pod,
                                        char **ret_err)
{
        struct kc_pod_syncer *s = ud;

        kc_log_v_s(2, "SyncTerminatingRuntimePod enter",
                   KC_KV_POD(running_pod->namespace, running_pod->name),
                   KC_KV_STR("podUID", running_pod->id));
        return kc_runtime_manager_kill_pod(s->cfg.manager, NULL, running_pod, RUNTIME_POD_GRACE_S,
                                           ctx, ret_err);
}

static int sync_terminated_pod(void *ud, struct kc_cancel *ctx, struct kc_api_pod *pod,
                               struct kc_pod_status *status, char **ret_err)
{
        struct kc_pod_syncer *s = ud;

        (void)ctx;
        (void)ret_err;
        kc_log_v_s(2, "SyncTerminatedPod enter", KC_KV_POD(pod->namespace, pod->name),
                   KC_KV_STR("podUID", pod->uid));
        update_status(s, pod, status, true);
        kc_prober_manager_remove_pod(s->cfg.prober_manager, pod);
        return 0;
}

const struct kc_pod_syncer_ops kc_pod_syncer_kubelet_ops = {
        .sync_pod = sync_pod,
        .sync_terminating_pod = sync_terminating_pod,
        .sync_terminating_runtime_pod = sync_terminating_runtime_pod,
        .sync_terminated_pod = sync_terminated_pod,
};
