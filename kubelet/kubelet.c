/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubelet's SyncHandler (upstream pkg/kubelet/kubelet.go HandlePod*,
 * getPodsToSync, cleanUpContainersInPod; kubelet_pods.go HandlePodCleanups),
 * UPSTREAM.md §6.3: what syncLoop's branches do with the pod manager, the
 * pod workers, the work queue and the container deletor. Every handler runs
 * on the syncLoop thread; housekeeping's runtime removals run on the
 * container GC's thread (container_gc.c), and its per-pod lookups are map
 * lookups, so a housekeeping pass is linear in pods.
 *
 * Not here yet (later issues): admission (every pod is admitted), the
 * status manager's readiness reconcile and evicted-status checks, and
 * mirror-pod cleanup in housekeeping. Pod directories and volumes of pods
 * that are gone are removed (volume_manager.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/backoff.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/memory.h"
#include "core/work_queue.h"
#include "container_gc.h"
#include "kubelet/kubelet.h"
#include "kubelet/pod_container_deletor.h"
#include "kubelet/pod_manager.h"
#include "kubelet/prober/prober_manager.h"
#include "kubelet/status/reason_cache.h"
#include "kubelet/status/status_manager.h"
#include "kubelet/sync_loop.h"
#include "metrics/kubelet_metrics.h"
#include "metrics/registry.h"
#include "podworkers/pod_workers.h"
#include "runtime/api_pod.h"
#include "runtime/cache.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "volume_manager.h"

/* Orphaned runtime pods are killed with a 1 s grace period (upstream). */
#define ORPHAN_KILL_GRACE_S 1
/* How often housekeeping asks for the sandboxes of removed pods to be
 * removed (upstream's ContainerGCPeriod). */
#define CONTAINER_GC_PERIOD_NS (60 * KC_NSEC_PER_SEC)

struct kc_kubelet {
        struct kc_kubelet_deps d;
        struct kc_sync_loop *loop;
        /* The container GC's thread; NULL without RemovePodSandbox or once stopped. */
        struct kc_container_gc *gc;
        int64_t last_container_gc; /* 0: never */
        /* Hands free heap pages back from housekeeping (core/memory.h). */
        struct kc_scavenger *scavenger;
};

int kc_kubelet_new(const struct kc_kubelet_deps *deps, struct kc_kubelet **ret)
{
        struct kc_kubelet *k;

        if (!deps || !ret || !deps->clock || !deps->pod_manager || !deps->pod_workers ||
            !deps->work_queue || !deps->deletor || !deps->cache || !deps->runtime.ops)
                return -EINVAL;
        k = calloc(1, sizeof(*k));
        if (!k)
                return -ENOMEM;
        k->d = *deps;
        if (kc_scavenger_new(deps->clock, &k->scavenger) < 0) {
                free(k);
                return -ENOMEM;
        }
        if (deps->runtime.ops->remove_pod_sandbox) {
                const struct kc_container_gc_config gc = {
                        .runtime = deps->runtime,
                        .pod_manager = deps->pod_manager,
                        .pod_workers = deps->pod_workers,
                        .pod_logs_root = deps->pod_logs_root,
                };
                int r = kc__container_gc_new(&gc, &k->gc);

                if (r < 0) {
                        kc_scavenger_free(k->scavenger);
                        free(k);
                        return r;
                }
        }
        *ret = k;
        return 0;
}

void kc_kubelet_stop(struct kc_kubelet *k)
{
        if (k)
                k->gc = kc__container_gc_free(k->gc);
}

struct kc_kubelet *kc_kubelet_free(struct kc_kubelet *k)
{
        kc_kubelet_stop(k);
        if (k)
                kc_scavenger_free(k->scavenger);
        free(k);
        return NULL;
}

void kc_kubelet_set_sync_loop(struct kc_kubelet *k, struct kc_sync_loop *loop)
{
        k->loop = loop;
}

void kc_kubelet_enqueue(void *work_queue, const char *uid, int64_t delay_ns)
{
        if (kc_work_queue_enqueue(work_queue, uid, delay_ns) < 0)
                kc_log_error_s(NULL, "Failed to requeue pod", KC_KV_STR("podUID", uid));
}

static void update_pod(struct kc_kubelet *k, enum kc_sync_pod_type type, struct kc_api_pod *pod,
                       struct kc_api_pod *mirror, int64_t start)
{
        const struct kc_pod_update_options o = {
                .update_type = type,
                .start_time = start,
                .pod = pod,
                .mirror_pod = mirror,
        };

        if (kc_pod_workers_update_pod(k->d.pod_workers, &o) < 0)
                kc_log_error_s(NULL, "Failed to update pod worker",
                               KC_KV_POD(pod->namespace, pod->name), KC_KV_STR("podUID", pod->uid));
}

/*
 * The static pod and mirror of @pod, as GetPodAndMirrorPod returns them.
 * False when @pod is a mirror pod whose static pod is unknown (skip it).
 */
static bool resolve(struct kc_kubelet *k, struct kc_api_pod *pod, struct kc_api_pod **ret_pod,
                    struct kc_api_pod **ret_mirror)
{
        if (kc_pod_manager_get_pod_and_mirror_pod(k->d.pod_manager, pod, ret_pod, ret_mirror))
                return true;
        kc_log_v_s(2, "Unable to find pod for mirror pod, skipping",
                   KC_KV_REF("mirrorPod", pod->namespace, pod->name),
                   KC_KV_STR("mirrorPodUID", pod->uid));
        *ret_mirror = kc_api_pod_unref(*ret_mirror);
        return false;
}

static int by_creation(const void *a, const void *b)
{
        const struct kc_api_pod *x = *(struct kc_api_pod *const *)a;
        const struct kc_api_pod *y = *(struct kc_api_pod *const *)b;

        return (x->creation_ts > y->creation_ts) - (x->creation_ts < y->creation_ts);
}

/* HandlePodAdditions and HandlePodUpdates: store, then hand the pod (or, for
 * a mirror pod, its static pod) to its worker. */
static void add_or_update(struct kc_kubelet *k, struct kc_api_pod *const *pods, size_t n,
                          enum kc_sync_pod_type type)
{
        int64_t start = kc_clock_now(k->d.clock);
        struct kc_api_pod **sorted;
        size_t i;

        sorted = malloc((n + 1) * sizeof(*sorted));
        if (!sorted) {
                kc_log_error_s(strerror(ENOMEM), "Failed to handle pods", KC_KV_UINT("pods", n));
                return;
        }
        memcpy(sorted, pods, n * sizeof(*sorted));
        /* Additions are handled oldest first, as upstream sorts by creation time. */
        if (type == KC_SYNC_POD_CREATE)
                qsort(sorted, n, sizeof(*sorted), by_creation);
        for (i = 0; i < n; i++) {
                struct kc_api_pod *pod = NULL, *mirror = NULL;

                if (kc_pod_manager_update_pod(k->d.pod_manager, sorted[i]) < 0) {
                        kc_log_error_s(NULL, "Failed to record pod",
                                       KC_KV_POD(sorted[i]->namespace, sorted[i]->name),
                                       KC_KV_STR("podUID", sorted[i]->uid));
                        continue;
                }
                if (!resolve(k, sorted[i], &pod, &mirror))
                        continue;
                /* A mirror pod's arrival is an update of its static pod. */
                update_pod(k, sorted[i]->mirror_pod ? KC_SYNC_POD_UPDATE : type, pod, mirror,
                           start);
                kc_api_pod_unref(pod);
                kc_api_pod_unref(mirror);
        }
        free(sorted);
}

static void handle_pod_additions(void *ud, struct kc_api_pod *const *pods, size_t n)
{
        add_or_update(ud, pods, n, KC_SYNC_POD_CREATE);
}

static void handle_pod_updates(void *ud, struct kc_api_pod *const *pods, size_t n)
{
        add_or_update(ud, pods, n, KC_SYNC_POD_UPDATE);
}

/* HandlePodRemoves: forget the pod; kill it once every source has been seen. */
static void handle_pod_removes(void *ud, struct kc_api_pod *const *pods, size_t n)
{
        struct kc_kubelet *k = ud;
        int64_t start = kc_clock_now(k->d.clock);
        size_t i;

        for (i = 0; i < n; i++) {
                struct kc_api_pod *pod = pods[i], *static_pod, *mirror;

                kc_pod_manager_remove_pod(k->d.pod_manager, pod);
                if (pod->mirror_pod) {
                        /* The static pod goes on; its worker learns the mirror is gone. */
                        static_pod = kc_pod_manager_get_pod_by_mirror_pod(k->d.pod_manager, pod);
                        if (static_pod)
                                update_pod(k, KC_SYNC_POD_UPDATE, static_pod, NULL, start);
                        kc_api_pod_unref(static_pod);
                        continue;
                }
                /* deletePod: a removal seen before all sources may be a stale view. */
                if (k->loop && !kc_sync_loop_sources_ready(k->loop)) {
                        kc_log_error_s("skipping delete because sources aren't ready yet",
                                       "Failed to delete pod", KC_KV_POD(pod->namespace, pod->name),
                                       KC_KV_STR("podUID", pod->uid));
                        continue;
                }
                mirror = kc_pod_manager_get_mirror_pod_by_pod(k->d.pod_manager, pod);
                update_pod(k, KC_SYNC_POD_KILL, pod, mirror, start);
                kc_api_pod_unref(mirror);
        }
}

/* HandlePodReconcile: the pod manager learns the new status; readiness and
 * eviction follow-ups belong to the status manager (not built yet). */
static void handle_pod_reconcile(void *ud, struct kc_api_pod *const *pods, size_t n)
{
        struct kc_kubelet *k = ud;
        size_t i;

        for (i = 0; i < n; i++)
                if (kc_pod_manager_update_pod(k->d.pod_manager, pods[i]) < 0)
                        kc_log_error_s(NULL, "Failed to record pod",
                                       KC_KV_POD(pods[i]->namespace, pods[i]->name),
                                       KC_KV_STR("podUID", pods[i]->uid));
}

/* HandlePodSyncs: a Sync for each pod; mirror pods here are a programmer error. */
static void handle_pod_syncs(void *ud, struct kc_api_pod *const *pods, size_t n)
{
        struct kc_kubelet *k = ud;
        int64_t start = kc_clock_now(k->d.clock);
        size_t i;

        for (i = 0; i < n; i++) {
                struct kc_api_pod *pod = NULL, *mirror = NULL;

                if (!resolve(k, pods[i], &pod, &mirror))
                        continue;
                if (pods[i]->mirror_pod) {
                        kc_log_v_s(3,
                                   "Programmer error, HandlePodSyncs does not expect to receive "
                                   "mirror pods",
                                   KC_KV_STR("podUID", pods[i]->uid));
                } else {
                        update_pod(k, KC_SYNC_POD_SYNC, pod, mirror, start);
                }
                kc_api_pod_unref(pod);
                kc_api_pod_unref(mirror);
        }
}

/*
 * Kills every running runtime pod the workers are not already syncing or
 * terminating. Returns how many the workers did not know at all (upstream's
 * orphanCount: they are terminating runtime-only pods from now on).
 * *@p running keeps the runtime's pods; *@p ret_listed says whether it could
 * be listed.
 */
static size_t kill_orphaned_runtime_pods(struct kc_kubelet *k,
                                         const struct kc_pod_worker_sync_list *working,
                                         struct kc_pod_list *running, bool *ret_listed)
{
        const struct kc_kill_pod_options kill = { .grace_period_override_s = ORPHAN_KILL_GRACE_S };
        struct kc_runtime_error err = { 0 };
        size_t i, unknown = 0;

        if (k->d.runtime.ops->get_pods(k->d.runtime.self, false, running, &err) < 0) {
                kc_log_error_s(err.message, "Error listing containers");
                *ret_listed = false;
                return 0;
        }
        *ret_listed = true;
        for (i = 0; i < running->n; i++) {
                struct kc_pod *rp = running->pods[i];
                const struct kc_pod_worker_sync *w = kc_pod_worker_sync_list_find(working, rp->id);
                const struct kc_pod_update_options o = {
                        .update_type = KC_SYNC_POD_KILL,
                        .running_pod = rp,
                        .kill_pod_options = &kill,
                };

                if (w && (w->state == KC_POD_WORK_SYNC || w->state == KC_POD_WORK_TERMINATING))
                        continue; /* a worker is in charge already */
                if (!w)
                        unknown++;
                kc_log_v_s(3, "Clean up orphaned pod containers", KC_KV_STR("podUID", rp->id));
                if (kc_pod_workers_update_pod(k->d.pod_workers, &o) < 0)
                        kc_log_error_s(NULL, "Failed to kill orphaned pod",
                                       KC_KV_STR("podUID", rp->id));
        }
        return unknown;
}

/* What housekeeping counts for the metrics. */
struct cleanup_counts {
        size_t restarted[2];  /* [static]: desired pods restarted (unknown to the workers) */
        size_t orphaned;      /* runtime pods the workers did not know */
        size_t working[5][3]; /* [config kind][lifecycle], see record_pod_counts() */
};

/* The config kinds of kubelet_working_pods: upstream's valid PodWorkerSync combinations. */
static const struct {
        const char *config, *static_label;
} working_kinds[5] = {
        { "desired", KC_METRICS_STATIC_TRUE }, { "desired", KC_METRICS_STATIC_FALSE },
        { "orphan", KC_METRICS_STATIC_TRUE },  { "orphan", KC_METRICS_STATIC_FALSE },
        { "runtime_only", "unknown" },
};

/* The working_kinds index of a worker (a worker without config is runtime_only). */
static size_t working_kind(const struct kc_pod_worker_sync *w)
{
        if (!w->has_config)
                return 4;
        return (w->orphan ? 2 : 0) + (w->static_pod ? 0 : 1);
}

/*
 * The end of HandlePodCleanups' metrics: desired, active and mirror pods
 * as the pod manager and the workers see them, the restarts and orphans
 * counted, and every (lifecycle, config, static) combination of working
 * pods, zeros included, as upstream sets them.
 */
static void record_pod_counts(struct kc_kubelet *k, struct kc_api_pod *const *pods, size_t n,
                              const struct kc_pod_worker_sync_list *working,
                              const struct cleanup_counts *c)
{
        static const char *const lifecycles[3] = { "sync", "terminating", "terminated" };
        static const enum kc_pod_work_type states[3] = { KC_POD_WORK_SYNC, KC_POD_WORK_TERMINATING,
                                                         KC_POD_WORK_TERMINATED };
        struct kc_kubelet_metrics *m = k->d.metrics;
        size_t desired[2] = { 0 }, active[2] = { 0 }, mirrors, counts[5][3];
        _cleanup_free_ char **orphaned_mirrors = NULL;
        size_t i, j;

        memcpy(counts, c->working, sizeof(counts));
        mirrors = kc_pod_manager_get_orphaned_mirror_pod_names(k->d.pod_manager, &orphaned_mirrors);
        for (i = 0; i < mirrors; i++)
                free(orphaned_mirrors[i]);
        for (i = 0; i < n; i++) {
                struct kc_api_pod *mirror;
                bool st = pods[i]->static_pod;

                desired[st]++;
                if (!kc_pod_workers_is_pod_known_terminated(k->d.pod_workers, pods[i]->uid) &&
                    pods[i]->phase != KC_POD_PHASE_SUCCEEDED &&
                    pods[i]->phase != KC_POD_PHASE_FAILED)
                        active[st]++;
                mirror =
                        st ? kc_pod_manager_get_mirror_pod_by_pod(k->d.pod_manager, pods[i]) : NULL;
                mirrors += mirror != NULL;
                kc_api_pod_unref(mirror);
        }
        kc_gauge_vec_set_mp(m->desired_pods, KC_METRICS_STATIC_FALSE, (double)desired[0]);
        kc_gauge_vec_set_mp(m->desired_pods, KC_METRICS_STATIC_TRUE, (double)desired[1]);
        kc_gauge_vec_set_mp(m->active_pods, KC_METRICS_STATIC_FALSE, (double)active[0]);
        kc_gauge_vec_set_mp(m->active_pods, KC_METRICS_STATIC_TRUE, (double)active[1]);
        kc_gauge_set_mp(m->mirror_pods, (double)mirrors);
        {
                const char *t[] = { KC_METRICS_STATIC_TRUE }, *f[] = { KC_METRICS_STATIC_FALSE };

                kc_counter_vec_add_mp(m->restarted_pods_total, t, (double)c->restarted[1]);
                kc_counter_vec_add_mp(m->restarted_pods_total, f, (double)c->restarted[0]);
        }
        kc_counter_add_mp(m->orphaned_runtime_pods_total, (double)c->orphaned);
        for (i = 0; i < working->n; i++)
                for (j = 0; j < 3; j++)
                        if (working->items[i].state == states[j])
                                counts[working_kind(&working->items[i])][j]++;
        for (i = 0; i < 5; i++)
                for (j = 0; j < 3; j++) {
                        const char *labels[] = { lifecycles[j], working_kinds[i].config,
                                                 working_kinds[i].static_label };

                        kc_gauge_vec_set_labels_mp(m->working_pods, labels, (double)counts[i][j]);
                }
}

/*
 * statusManager.RemoveOrphanedStatuses, and the same for the reason cache
 * (D18): what is kept for a pod goes once it is neither desired nor still
 * being worked on.
 */
static void remove_orphaned_pod_state(struct kc_kubelet *k,
                                      const struct kc_pod_worker_sync_list *working,
                                      struct kc_api_pod *const *pods, size_t n)
{
        _cleanup_free_ const char **keep = malloc((n + working->n + 1) * sizeof(*keep));
        size_t i, m = 0;

        if (!keep) {
                kc_log_error_s(strerror(ENOMEM), "Failed to remove orphaned pod statuses");
                return;
        }
        for (i = 0; i < n; i++)
                keep[m++] = pods[i]->uid;
        for (i = 0; i < working->n; i++)
                keep[m++] = working->items[i].uid;
        if (k->d.status_manager &&
            kc_status_manager_remove_orphaned_statuses(k->d.status_manager, keep, m) < 0)
                kc_log_error_s(NULL, "Failed to remove orphaned pod statuses");
        if (k->d.reasons && kc_reason_cache_remove_orphans(k->d.reasons, keep, m) < 0)
                kc_log_error_s(NULL, "Failed to remove the container reasons of orphaned pods");
}

/* CleanupPods: only the pods that may still run (syncing or terminating) keep their probes. */
static void cleanup_probes(struct kc_kubelet *k, const struct kc_pod_worker_sync_list *working)
{
        _cleanup_free_ const char **keep = malloc((working->n + 1) * sizeof(*keep));
        size_t i, m = 0;

        if (!keep) {
                kc_log_error_s(strerror(ENOMEM), "Failed to clean up probes");
                return;
        }
        for (i = 0; i < working->n; i++)
                if (working->items[i].state == KC_POD_WORK_SYNC ||
                    working->items[i].state == KC_POD_WORK_TERMINATING)
                        keep[m++] = working->items[i].uid;
        kc_log_v_s(3, "Clean up probes for terminated pods");
        kc_prober_manager_cleanup_pods(k->d.prober_manager, keep, m);
}

/*
 * The container GC's pass for removed pods (container_gc.c), every
 * CONTAINER_GC_PERIOD_NS: only requested here, it runs on the GC's thread,
 * so housekeeping returns whatever the runtime's latency. A pass still
 * running refuses the request; the period then starts again, so the next
 * pass comes about a period after the slow one ended (upstream's
 * wait.Until is sliding too).
 */
static void request_container_gc(struct kc_kubelet *k, int64_t now)
{
        int r;

        if (!k->gc || (k->last_container_gc && now - k->last_container_gc < CONTAINER_GC_PERIOD_NS))
                return;
        k->last_container_gc = now;
        r = kc__container_gc_request(k->gc);
        if (r == -EBUSY)
                kc_log_v_s(4, "Container garbage collection still running, next pass postponed");
        else if (r < 0)
                kc_log_errno_s(r, "Failed to request container garbage collection");
}

/*
 * cleanupOrphanedPodDirs: the directories of pods that are neither desired,
 * nor worked on (a pod being terminated keeps its volumes), nor running in
 * the runtime go, their tmpfs volumes unmounted first.
 */
static void cleanup_orphaned_pod_dirs(struct kc_kubelet *k, struct kc_api_pod *const *pods,
                                      size_t n, const struct kc_pod_worker_sync_list *working,
                                      const struct kc_pod_list *running)
{
        _cleanup_free_ const char **keep =
                malloc((n + working->n + running->n + 1) * sizeof(*keep));
        size_t i, m = 0;
        int r;

        if (!keep) {
                kc_log_error_s(strerror(ENOMEM), "Failed cleaning up orphaned pod directories");
                return;
        }
        for (i = 0; i < n; i++)
                keep[m++] = pods[i]->uid;
        for (i = 0; i < working->n; i++)
                keep[m++] = working->items[i].uid;
        for (i = 0; i < running->n; i++)
                keep[m++] = running->pods[i]->id;
        r = kc__cleanup_orphaned_pod_dirs(k->d.volume_manager, keep, m);
        if (r < 0)
                kc_log_errno_s(r, "Failed cleaning up orphaned pod directories");
        else if (r > 0)
                kc_log_v_s(3, "Removed orphaned pod directories", KC_KV_INT("pods", r));
}

/* HandlePodCleanups (housekeeping). */
static void handle_pod_cleanups(void *ud)
{
        struct kc_kubelet *k = ud;
        struct kc_pod_worker_sync_list working = { 0 };
        struct kc_pod_list running = { 0 };
        bool listed = false;
        struct cleanup_counts counts = { 0 };
        struct kc_api_pod **pods = NULL;
        int64_t start = kc_clock_now(k->d.clock);
        size_t n, i;

        n = kc_pod_manager_get_pods(k->d.pod_manager, &pods);
        if (kc_pod_workers_sync_known_pods(k->d.pod_workers, pods, n, &working) < 0) {
                kc_log_error_s(NULL, "Failed to sync known pods");
                goto out;
        }
        counts.orphaned = kill_orphaned_runtime_pods(k, &working, &running, &listed);
        /* The orphans killed now are terminating runtime-only pods. */
        counts.working[4][1] = counts.orphaned;
        request_container_gc(k, start);
        /* Without the runtime's pods, a directory in use could look orphaned. */
        if (k->d.volume_manager && listed)
                cleanup_orphaned_pod_dirs(k, pods, n, &working, &running);
        /* Desired pods the workers no longer know (forgotten after a same-UID
         * restart, or terminated and purged) start again. */
        for (i = 0; i < n; i++) {
                struct kc_api_pod *mirror;

                if (kc_pod_worker_sync_list_find(&working, pods[i]->uid) ||
                    pods[i]->phase == KC_POD_PHASE_SUCCEEDED ||
                    pods[i]->phase == KC_POD_PHASE_FAILED)
                        continue;
                kc_log_v_s(3,
                           "Pod will be restarted because it is in the desired set and not known "
                           "to the pod workers (likely due to UID reuse)",
                           KC_KV_STR("podUID", pods[i]->uid));
                mirror = kc_pod_manager_get_mirror_pod_by_pod(k->d.pod_manager, pods[i]);
                update_pod(k, KC_SYNC_POD_CREATE, pods[i], mirror, start);
                kc_api_pod_unref(mirror);
                /* Now known as well: a desired pod in sync. */
                counts.restarted[pods[i]->static_pod]++;
                counts.working[pods[i]->static_pod ? 0 : 1][0]++;
        }
        if (k->d.metrics)
                record_pod_counts(k, pods, n, &working, &counts);
        if (k->d.status_manager || k->d.reasons)
                remove_orphaned_pod_state(k, &working, pods, n);
        if (k->d.prober_manager)
                cleanup_probes(k, &working);
        if (k->d.backoff)
                kc_backoff_gc(k->d.backoff);
out:
        kc_pod_list_done(&running);
        kc_pod_worker_sync_list_done(&working);
        for (i = 0; i < n; i++)
                kc_api_pod_unref(pods[i]);
        free(pods);
        /* Not upstream's: the scavenging Go's runtime does on its own (core/memory.h). */
        (void)kc_scavenger_run(k->scavenger);
}

static struct kc_api_pod *get_pod_by_uid(void *ud, const char *uid)
{
        struct kc_kubelet *k = ud;

        return kc_pod_manager_get_pod_by_uid(k->d.pod_manager, uid);
}

/* cleanUpContainersInPod: dead containers beyond the kept ones go to the deletor. */
static void clean_up_containers_in_pod(void *ud, const char *uid, const char *container_id)
{
        struct kc_kubelet *k = ud;
        struct kc_pod_status *status = NULL;
        char *err = NULL;

        if (kc_pod_cache_get(k->d.cache, uid, &status, &err) >= 0 && !err && status) {
                bool remove_all =
                        kc_pod_workers_should_pod_content_be_removed(k->d.pod_workers, uid);

                kc_pod_container_deletor_delete_containers_in_pod(k->d.deletor, container_id,
                                                                  status, remove_all);
        }
        kc_pod_status_unref(status);
        free(err);
}

/* getPodsToSync: the work queue's due UIDs the pod manager knows. */
static size_t get_pods_to_sync(void *ud, struct kc_api_pod ***ret)
{
        struct kc_kubelet *k = ud;
        struct kc_api_pod **pods;
        char **uids = NULL;
        size_t n = 0, i, out = 0;

        if (kc_work_queue_get_work(k->d.work_queue, &uids, &n) < 0 || n == 0) {
                free(uids);
                return 0;
        }
        pods = malloc(n * sizeof(*pods));
        if (pods)
                for (i = 0; i < n; i++) {
                        /* Unknown UIDs are dropped: housekeeping drives orphans. */
                        struct kc_api_pod *p =
                                kc_pod_manager_get_pod_by_uid(k->d.pod_manager, uids[i]);

                        if (p)
                                pods[out++] = p;
                }
        free(uids);
        *ret = pods;
        return out;
}

const struct kc_sync_handler_ops kc_kubelet_sync_handler = {
        .handle_pod_additions = handle_pod_additions,
        .handle_pod_updates = handle_pod_updates,
        .handle_pod_removes = handle_pod_removes,
        .handle_pod_reconcile = handle_pod_reconcile,
        .handle_pod_syncs = handle_pod_syncs,
        .handle_pod_cleanups = handle_pod_cleanups,
        .get_pod_by_uid = get_pod_by_uid,
        .clean_up_containers_in_pod = clean_up_containers_in_pod,
        .get_pods_to_sync = get_pods_to_sync,
};
