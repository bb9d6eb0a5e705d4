/* SPDX-License-Identifier: Apache-2.0 */
/* podworkers/ internals, exposed for unit tests (tests/unit/podworkers). */
#pragma once

#include "podworkers/pod_workers.h"

struct kc_api_pod;

/**
 * calculateEffectiveGracePeriod (§8.3). @p status_grace is the worker's
 * current grace (0: unset); @p pod may be NULL (a runtime-only pod: no
 * deletion or spec grace); @p override_s is -1 when unset. Returns the
 * grace (>= 1) and, in *ret_shortened (may be NULL), whether a set grace
 * changed.
 */
int64_t kc__calculate_effective_grace_period(int64_t status_grace, const struct kc_api_pod *pod,
                                             int64_t override_s, bool *ret_shortened);

/** allowPodStart (§8.4). Takes the lock. May call the enqueue callback ("not yet"). */
void kc__allow_pod_start(struct kc_pod_workers *pw, const struct kc_api_pod *pod,
                         bool *ret_can_start, bool *ret_can_ever_start);

/** The requeue jitter: uniform in [d, d * (1 + factor)) from the injected source. */
int64_t kc__pod_workers_jitter(struct kc_pod_workers *pw, int64_t d, double factor);

/** A copy of one worker's podSyncStatus, for tests. */
struct kc__pod_sync_snapshot {
        char fullname[256];
        int64_t synced_at, started_at, terminating_at, terminated_at; /* 0: unset */
        int64_t grace_period;
        bool started_terminating, deleted, evicted, finished, restart_requested;
        bool observed_runtime, working, has_ctx;
        bool has_pending, has_active;
        /* pendingUpdate (when has_pending) */
        enum kc_sync_pod_type pending_type;
        int64_t pending_start_time;
        bool pending_has_pod, pending_has_running_pod, pending_has_kill;
        int64_t pending_grace_override;
        /* activeUpdate (when has_active) */
        enum kc_sync_pod_type active_type;
        bool active_has_pod, active_has_running_pod, active_has_kill, active_evict;
        int64_t active_grace_override;
        char active_pod_name[256];
        int64_t active_pod_deletion_ts;
};

/** -ENOENT when the UID is not tracked. */
int kc__pod_workers_snapshot(struct kc_pod_workers *pw, const char *uid,
                             struct kc__pod_sync_snapshot *ret);
size_t kc__pod_workers_count(struct kc_pod_workers *pw);
/** Number of live worker threads in the pool. */
unsigned kc__pod_workers_thread_count(struct kc_pod_workers *pw);
/* Pool threads that exited and are not joined yet (their stacks still mapped). */
unsigned kc__pod_workers_unjoined_count(struct kc_pod_workers *pw);
/* How many threads the pool starts at once for ready work; more only when it stalls. */
unsigned kc__pod_workers_eager_threads(struct kc_pod_workers *pw);

/**
 * Test hooks (upstream's WorkChannel Hold/Release): a held UID is never put
 * on the ready queue; its signals wait until it is released.
 */
int kc__pod_workers_hold(struct kc_pod_workers *pw, const char *uid);
void kc__pod_workers_release(struct kc_pod_workers *pw, const char *uid);

/**
 * drainWorkers: waits (on a condition variable) until no tracked, unheld
 * worker is `working`, for at most @p timeout_ms of monotonic time.
 * @return 0 or -ETIMEDOUT.
 */
int kc__pod_workers_drain(struct kc_pod_workers *pw, int timeout_ms);

/* Direct access to the bookkeeping for Test_allowPodStart. */
/** Tracks @p uid with @p fullname and the given timestamps, without a worker. */
int kc__pod_workers_inject_status(struct kc_pod_workers *pw, const char *uid, const char *fullname,
                                  int64_t terminating_at, int64_t terminated_at);
int kc__pod_workers_set_started_static(struct kc_pod_workers *pw, const char *fullname,
                                       const char *uid);
int kc__pod_workers_set_waiting_static(struct kc_pod_workers *pw, const char *fullname,
                                       const char *const *uids, size_t n);
/** startedStaticPodsByFullname[fullname] copied into @p buf ("" when absent); returns found. */
bool kc__pod_workers_get_started_static(struct kc_pod_workers *pw, const char *fullname, char *buf,
                                        size_t size);
/** waitingToStartStaticPodsByFullname[fullname] as "a,b,c" ("" when absent); returns found. */
bool kc__pod_workers_get_waiting_static(struct kc_pod_workers *pw, const char *fullname, char *buf,
                                        size_t size);
size_t kc__pod_workers_started_static_count(struct kc_pod_workers *pw);
size_t kc__pod_workers_waiting_static_count(struct kc_pod_workers *pw);
