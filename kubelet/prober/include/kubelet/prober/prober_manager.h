/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kubelet/prober/prober_manager.h
 * @brief The prober manager and its workers (pkg/kubelet/prober/prober_manager.go, worker.go).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"
#include "kubelet/prober/prober.h"
#include "kubelet/prober/results_manager.h"

struct kc_api_container;
struct kc_api_pod;
struct kc_chan;
struct kc_clock;
struct kc_metrics_registry;

/**
 * What runs one probe: kc_prober_probe() in the daemon (self: the struct
 * kc_prober), a test double in the unit tests. Same contract as
 * kc_prober_probe(); called on the worker's thread.
 */
struct kc_probe_runner_ops {
        int (*probe)(void *self, enum kc_probe_type t, const struct kc_api_pod *pod,
                     const char *pod_ip, const struct kc_api_container *c, const char *container_id,
                     enum kc_probe_result *ret, char **ret_output);
};

/**
 * A worker's view of its container in the pod's latest v1 status (what
 * upstream's worker reads from the status manager). Strings malloc'd.
 */
struct kc_probe_target {
        bool pod_terminal;     /* phase Succeeded or Failed */
        char *container_id;    /* without "<runtime>://"; NULL: no status with a container ID */
        bool running;          /* state.running */
        int64_t started_at_ns; /* state.running.startedAt */
        bool terminated;       /* state.terminated */
        bool started;          /* the status' "started" */
        char *pod_ip;          /* status.podIP, may be NULL */
};
void kc_probe_target_done(struct kc_probe_target *t);

/** The status manager as the workers see it (the kubelet implements it). Any thread. */
struct kc_probe_status_ops {
        /**
         * The status of container @p container_name (app or init) of pod
         * @p pod_uid into *ret (zeroed first). @return 0, or -ENOENT when
         * the pod has no status yet.
         */
        int (*get)(void *self, const char *pod_uid, const char *container_name,
                   struct kc_probe_target *ret);
};

struct kc_prober_manager_config {
        struct kc_clock *clock; /* borrowed */
        const struct kc_probe_runner_ops *runner;
        void *runner_self;
        const struct kc_probe_status_ops *status;
        void *status_self;
        /**
         * Borrowed, may be NULL: the channel every results manager sends
         * its struct kc_probe_update items to (syncLoop's probe channel).
         */
        struct kc_chan *updates;
        /**
         * May be NULL; must outlive the manager: prober_probe_total and
         * prober_probe_duration_seconds are registered here.
         */
        struct kc_metrics_registry *metrics;
};

/**
 * The prober manager: one worker per probe per container, run by a
 * scheduler thread and a pool of runner threads, and the three results
 * managers. Every call is safe from any thread.
 */
struct kc_prober_manager;

/**
 * The manager's start time (for the first probe's jitter) is the clock's
 * now. @return 0, -EINVAL (no clock, runner or status), -EEXIST (metrics
 * already registered) or -ENOMEM; *ret unchanged on failure.
 */
int kc_prober_manager_new(const struct kc_prober_manager_config *cfg,
                          struct kc_prober_manager **ret);
/** Stops every worker and waits for them to exit. NULL-safe; returns NULL. */
struct kc_prober_manager *kc_prober_manager_free(struct kc_prober_manager *m);
KC_DEFINE_CLEANUP_FUNC(struct kc_prober_manager, kc_prober_manager_free)

/** The results managers (borrowed; they live as long as the manager). */
struct kc_results_manager *kc_prober_manager_results(struct kc_prober_manager *m,
                                                     enum kc_probe_type t);

/**
 * @brief AddPod: a worker for each startup, readiness and liveness probe of
 * each app container and sidecar (init container with restartPolicy
 * Always) of @p pod (referenced by the workers). A probe that already has
 * a worker ends the call, as upstream (AddPod is idempotent). A worker
 * that cannot be started is logged and skipped.
 */
void kc_prober_manager_add_pod(struct kc_prober_manager *m, struct kc_api_pod *pod);
/** RemovePod: stops every worker of @p pod (they exit on their own threads). */
void kc_prober_manager_remove_pod(struct kc_prober_manager *m, const struct kc_api_pod *pod);
/** StopLivenessAndStartup: stops @p pod's liveness and startup workers (pod terminating). */
void kc_prober_manager_stop_liveness_and_startup(struct kc_prober_manager *m,
                                                 const struct kc_api_pod *pod);
/** CleanupPods: stops the workers of every pod whose UID is not among @p desired_uids. */
void kc_prober_manager_cleanup_pods(struct kc_prober_manager *m, const char *const *desired_uids,
                                    size_t n);

/**
 * @brief UpdatePodStatus for one app container or sidecar: *ret_started and
 * *ret_ready of container @p container_name of pod @p pod_uid whose newest
 * instance is @p container_id (without prefix) and @p running.
 *
 * started: running and (the startup result is Success, or there is no
 * startup worker). ready: started, running and (the readiness result is
 * Success, or there is no readiness worker). A readiness worker that has
 * no result for the container yet is triggered to probe at once.
 */
void kc_prober_manager_container_state(struct kc_prober_manager *m, const char *pod_uid,
                                       const char *container_name, const char *container_id,
                                       bool running, bool *ret_started, bool *ret_ready);

/**
 * Tests: true when no probe is queued or running and the scheduler sleeps
 * until the next due probe (with a fake clock, advance only then).
 */
bool kc_prober_manager_quiescent(struct kc_prober_manager *m);

/** The number of live workers (tests, bench). */
size_t kc_prober_manager_n_workers(struct kc_prober_manager *m);
