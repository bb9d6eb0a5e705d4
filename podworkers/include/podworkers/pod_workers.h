/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file podworkers/pod_workers.h
 * @brief The pod workers (upstream pkg/kubelet/pod_workers.go, UPSTREAM.md §8).
 *
 * One logical worker per pod UID drives the pod through the one-way state
 * machine Sync → Terminating → Terminated → finished, calling the injected
 * pod syncer (struct kc_pod_syncer_ops) with at most one sync in flight per
 * pod. Updates coalesce: the pending update is replaced by the latest one
 * (the oldest StartTime is kept). Requeues go through an injected enqueue
 * callback (the kubelet's work queue).
 *
 * Thread contract: every kc_pod_workers_* call except _new and _free may be
 * made from any thread, concurrently. Syncer callbacks run on the pool's
 * worker threads without any pod-workers lock held; they may call any
 * kc_pod_workers_* function except _free. The enqueue callback is never
 * called with the pod-workers lock held.
 *
 * Conventions: 0 or -errno; out-parameters untouched on failure.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"

struct kc_api_pod;
struct kc_cancel;
struct kc_clock;
struct kc_map;
struct kc_pod;
struct kc_pod_cache;
struct kc_pod_status;

/** backOffPeriod: retry delay after a sync error (jittered). */
#define KC_POD_WORKERS_BACKOFF_PERIOD_NS (10 * KC_NSEC_PER_SEC)
/** backOffOnTransientErrorPeriod: retry delay for "network is not ready". */
#define KC_POD_WORKERS_TRANSIENT_BACKOFF_NS (1 * KC_NSEC_PER_SEC)
/** workerResyncIntervalJitterFactor and workerBackOffPeriodJitterFactor. */
#define KC_POD_WORKERS_JITTER_FACTOR 0.5
/** NetworkNotReadyErrorMsg (pkg/kubelet/errors.go). */
#define KC_NETWORK_NOT_READY_ERROR_MSG "network is not ready"
/** Default resync interval (KubeletConfiguration.SyncFrequency). */
#define KC_POD_WORKERS_DEFAULT_RESYNC_NS (60 * KC_NSEC_PER_SEC)

/* ------------------------------------------------------------------------ */
/* Types                                                                      */

/** kubetypes.SyncPodType. Sync is the zero value, as upstream. */
enum kc_sync_pod_type {
        KC_SYNC_POD_SYNC,
        KC_SYNC_POD_UPDATE,
        KC_SYNC_POD_CREATE,
        KC_SYNC_POD_KILL,
        _KC_SYNC_POD_TYPE_MAX,
        _KC_SYNC_POD_TYPE_INVALID = -EINVAL,
};

/** "sync", "update", "create", "kill" (upstream SyncPodType.String()). */
const char *kc_sync_pod_type_to_string(enum kc_sync_pod_type t);

/** PodWorkerState: derived from the timestamps (UPSTREAM.md §8.1). */
enum kc_pod_work_type {
        KC_POD_WORK_SYNC,
        KC_POD_WORK_TERMINATING,
        KC_POD_WORK_TERMINATED,
        _KC_POD_WORK_TYPE_MAX,
        _KC_POD_WORK_TYPE_INVALID = -EINVAL,
};

/** "sync", "terminating", "terminated". */
const char *kc_pod_work_type_to_string(enum kc_pod_work_type t);

/**
 * A one-shot completion signal (the counterpart of KillPodOptions'
 * CompletedCh). Reference counted: the pod workers take their own reference
 * when handed one, so the caller may drop its reference at any time (for
 * example after a timed-out wait). Every call is safe from any thread.
 */
struct kc_pod_completion;

int kc_pod_completion_new(struct kc_pod_completion **ret);
struct kc_pod_completion *kc_pod_completion_ref(struct kc_pod_completion *c);
/** NULL-safe; returns NULL. */
struct kc_pod_completion *kc_pod_completion_unref(struct kc_pod_completion *c);
KC_DEFINE_CLEANUP_FUNC(struct kc_pod_completion, kc_pod_completion_unref)
/** Signals completion (close(ch)). Idempotent. */
void kc_pod_completion_complete(struct kc_pod_completion *c);
bool kc_pod_completion_is_done(const struct kc_pod_completion *c);
/**
 * Waits until completion or until @p timeout_ns of @p clock's time passed.
 * @return 0 when completed, -ETIMEDOUT otherwise.
 */
int kc_pod_completion_wait(struct kc_pod_completion *c, struct kc_clock *clock, int64_t timeout_ns);

/** KillPodOptions. The status override (PodStatusFunc) is not implemented. */
struct kc_kill_pod_options {
        /** PodTerminationGracePeriodSecondsOverride; -1: unset. */
        int64_t grace_period_override_s;
        /** The kubelet evicts the pod (sticky: ShouldPodContentBeRemoved). */
        bool evict;
        /** May be NULL. Borrowed; the workers take a reference and complete it
         * once the pod has terminated (or at once if it already had). */
        struct kc_pod_completion *completed;
};

/** UpdatePodOptions. Exactly one of pod / running_pod is normally set. */
struct kc_pod_update_options {
        enum kc_sync_pod_type update_type;
        /** When the update was observed (latency tracking); 0: unset. */
        int64_t start_time;
        /** The desired pod. Borrowed; the workers take their own reference. */
        struct kc_api_pod *pod;
        /** May be NULL. Borrowed; the workers take their own reference. */
        struct kc_api_pod *mirror_pod;
        /** Runtime-only pod (no config): Kill only. Borrowed; referenced. */
        struct kc_pod *running_pod;
        /** May be NULL. Borrowed (copied). */
        const struct kc_kill_pod_options *kill_pod_options;
};

/**
 * The podSyncer interface. Every callback returns 0 or a negative errno and
 * may set *ret_err to a malloc'd message (the pod workers free it; its text
 * drives the requeue policy, e.g. "network is not ready"). A callback that
 * returns because @p ctx was cancelled returns -ECANCELED (context.Canceled).
 * Callbacks run on worker threads with no pod-workers lock held; every
 * pointer argument is valid for the duration of the call only (take a
 * reference to keep it).
 */
struct kc_pod_syncer_ops {
        /**
         * SyncPod: @p status may be NULL. Sets *ret_is_terminal when the pod
         * reached a terminal phase. When the sync failed only on back-offs
         * (CrashLoopBackOff, ImagePullBackOff) it may set
         * *ret_requeue_after_ns (initially -1) to the time until the first
         * back-off ends: the failed sync is then requeued after that instead
         * of the jittered backOffPeriod (docs/deviations.md D10).
         */
        int (*sync_pod)(void *userdata, struct kc_cancel *ctx, enum kc_sync_pod_type update_type,
                        struct kc_api_pod *pod, struct kc_api_pod *mirror_pod,
                        struct kc_pod_status *status, bool *ret_is_terminal,
                        int64_t *ret_requeue_after_ns, char **ret_err);
        /** SyncTerminatingPod: @p grace_period_s is -1 when unset. */
        int (*sync_terminating_pod)(void *userdata, struct kc_cancel *ctx, struct kc_api_pod *pod,
                                    struct kc_pod_status *status, int64_t grace_period_s,
                                    char **ret_err);
        /** SyncTerminatingRuntimePod: orphaned runtime pods (no config, no status). */
        int (*sync_terminating_runtime_pod)(void *userdata, struct kc_cancel *ctx,
                                            struct kc_pod *running_pod, char **ret_err);
        /** SyncTerminatedPod. */
        int (*sync_terminated_pod)(void *userdata, struct kc_cancel *ctx, struct kc_api_pod *pod,
                                   struct kc_pod_status *status, char **ret_err);
};

struct kc_kubelet_metrics;

/** What kc_pod_workers_new needs. Zero values select the defaults. */
struct kc_pod_workers_config {
        struct kc_clock *clock;                 /* borrowed, required */
        struct kc_pod_cache *cache;             /* borrowed, required */
        const struct kc_pod_syncer_ops *syncer; /* borrowed, required */
        void *syncer_userdata;
        /** The kubelet work queue's Enqueue(uid, delay). Required. Any thread,
         * never called with the pod-workers lock held. */
        void (*enqueue)(void *userdata, const char *uid, int64_t delay_ns);
        void *enqueue_userdata;
        int64_t resync_interval_ns; /* default KC_POD_WORKERS_DEFAULT_RESYNC_NS */
        int64_t backoff_period_ns;  /* default KC_POD_WORKERS_BACKOFF_PERIOD_NS */
        /** Random source for the jitter: uniform in [0, 1). NULL: kc_jitter(). */
        double (*random)(void *userdata);
        void *random_userdata;
        /** Worker pool: threads kept when idle (default 2), cap (default 1024),
         * stack size (default 256 KiB), idle time before an extra thread exits
         * (monotonic wall time, default 30 s). */
        unsigned min_threads;
        unsigned max_threads;
        size_t stack_size;
        int64_t idle_timeout_ns;
        /** Borrowed, may be NULL: each sync of an update with a StartTime observes
         * kubelet_pod_worker_duration_seconds{operation_type} from that StartTime
         * (the update type; "terminated" once a terminated pod is done). */
        struct kc_kubelet_metrics *metrics;
};

/** PodWorkerSync: what SyncKnownPods reports for a kept worker. */
struct kc_pod_worker_sync {
        char *uid;
        enum kc_pod_work_type state;
        bool orphan;
        bool has_config;
        bool static_pod;
};

/** SyncKnownPods' map[UID]PodWorkerSync: the entries, and an index by UID over them. */
struct kc_pod_worker_sync_list {
        struct kc_pod_worker_sync *items;
        size_t n;
        struct kc_map *by_uid; /* uid → &items[i]; NULL in a zeroed list */
};
void kc_pod_worker_sync_list_done(struct kc_pod_worker_sync_list *l);
/** The entry for @p uid, or NULL. O(1): housekeeping calls it once per pod. */
const struct kc_pod_worker_sync *
kc_pod_worker_sync_list_find(const struct kc_pod_worker_sync_list *l, const char *uid);

/* ------------------------------------------------------------------------ */
/* Pod workers                                                                */

struct kc_pod_workers;

/** *ret unchanged on failure (-EINVAL, -ENOMEM). Starts no thread yet. */
int kc_pod_workers_new(const struct kc_pod_workers_config *cfg, struct kc_pod_workers **ret);

/**
 * Stops everything: cancels every in-flight sync (its ctx token), waits for
 * the syncs to return, joins every thread, completes every outstanding
 * completion signal and frees all memory. Syncer callbacks must honour
 * their ctx for this to return promptly. NULL-safe; returns NULL. No other
 * call may run concurrently or afterwards.
 */
struct kc_pod_workers *kc_pod_workers_free(struct kc_pod_workers *pw);
KC_DEFINE_CLEANUP_FUNC(struct kc_pod_workers, kc_pod_workers_free)

/**
 * UpdatePod (UPSTREAM.md §8.2). Never blocks on a sync. Any thread.
 * @return 0 (also when the update is ignored, as upstream), -EINVAL (no pod
 * and no running pod, or a bad type), -ENOMEM.
 */
int kc_pod_workers_update_pod(struct kc_pod_workers *pw, const struct kc_pod_update_options *o);

/**
 * SyncKnownPods (§8.8): @p desired is the set of pods in config. Purges
 * finished and unstarted orphaned workers, drives started orphans to
 * termination and reports the kept workers in *ret (kc_pod_worker_sync_list_done).
 * @p ret may be NULL. Any thread.
 * @return 0 or -ENOMEM (the purge still happened; *ret unchanged).
 */
int kc_pod_workers_sync_known_pods(struct kc_pod_workers *pw, struct kc_api_pod *const *desired,
                                   size_t n_desired, struct kc_pod_worker_sync_list *ret);

/**
 * TerminatePodAbnormallyAndWait (older killPodNow, §8.7): sends a Kill
 * update with a completion signal and waits for it at most
 * max(grace + grace/2, 10 s) of the workers' clock, where grace is
 * @p grace_override_s (-1: unset) or the pod's spec grace (else 0).
 * Must not be called from a syncer callback of the same pod.
 * @return 0, -ETIMEDOUT ("timeout waiting to terminate pod abnormally",
 * logged with the ExceededGracePeriod message), -EINVAL, -ENOMEM.
 */
int kc_pod_workers_terminate_pod_abnormally_and_wait(struct kc_pod_workers *pw,
                                                     struct kc_api_pod *pod, bool evict,
                                                     int64_t grace_override_s);

/* Query predicates (§8.9). Any thread. */
bool kc_pod_workers_is_pod_known_terminated(struct kc_pod_workers *pw, const char *uid);
bool kc_pod_workers_could_have_running_containers(struct kc_pod_workers *pw, const char *uid);
bool kc_pod_workers_should_pod_be_finished(struct kc_pod_workers *pw, const char *uid);
bool kc_pod_workers_is_pod_termination_requested(struct kc_pod_workers *pw, const char *uid);
bool kc_pod_workers_should_pod_containers_be_terminating(struct kc_pod_workers *pw,
                                                         const char *uid);
bool kc_pod_workers_should_pod_runtime_be_removed(struct kc_pod_workers *pw, const char *uid);
bool kc_pod_workers_should_pod_content_be_removed(struct kc_pod_workers *pw, const char *uid);
/** @p full_name is "name_namespace" (kubecontainer.BuildPodFullName). */
bool kc_pod_workers_is_pod_for_mirror_pod_terminating_by_full_name(struct kc_pod_workers *pw,
                                                                   const char *full_name);
