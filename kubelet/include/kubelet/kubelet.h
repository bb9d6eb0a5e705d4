/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kubelet/kubelet.h
 * @brief The kubelet's SyncHandler (kubelet.go HandlePod*, HandlePodCleanups).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/backoff.h"
#include "core/cleanup.h"
#include "core/work_queue.h"
#include "kubelet/sync_loop.h"
#include "podworkers/pod_workers.h"
#include "runtime/container.h"

struct kc_clock;
struct kc_pod_cache;
struct kc_pod_container_deletor;
struct kc_pod_manager;
struct kc_reason_cache;
struct kc_status_manager;
struct kc_volume_manager;

struct kc_pod_workers;
struct kc_prober_manager;
struct kc_work_queue;
struct kc_backoff;
struct kc_kubelet_metrics;

/** What the kubelet's handlers work with; all borrowed, outliving the kubelet. */
struct kc_kubelet_deps {
        struct kc_clock *clock;
        struct kc_pod_manager *pod_manager;
        struct kc_pod_workers *pod_workers;
        struct kc_work_queue *work_queue;
        struct kc_pod_container_deletor *deletor;
        struct kc_pod_cache *cache;
        /** GetPods for housekeeping's orphan kill (the runtime cache upstream). */
        struct kc_pod_runtime runtime;
        /** Restart backoff, GC'd at the end of housekeeping; may be NULL. */
        struct kc_backoff *backoff;
        /** Statuses of pods no longer desired are dropped in housekeeping; may be NULL. */
        struct kc_status_manager *status_manager;
        /** So are their start-failure reasons (D18); may be NULL. */
        struct kc_reason_cache *reasons;
        /** Housekeeping's pod counts (desired, active, mirror, working, restarted,
         * orphaned runtime pods); may be NULL. */
        struct kc_kubelet_metrics *metrics;
        /** Housekeeping removes the directories (and volumes) of pods that are
         * gone (cleanupOrphanedPodDirs); may be NULL. */
        struct kc_volume_manager *volume_manager;
        /** Where pods' log directories are ("<ns>_<name>_<uid>"): the container
         * GC removes those of removed pods. NULL: none (copied). */
        const char *pod_logs_root;
        /** Probes: CleanupPods in housekeeping (RemovePod is SyncTerminatedPod's); may be NULL. */
        struct kc_prober_manager *prober_manager;
};

struct kc_kubelet;

/**
 * When the runtime has RemovePodSandbox, starts the container GC's thread,
 * which housekeeping hands the sandbox removals of removed pods to.
 * @return 0, -EINVAL, -ENOMEM or the pthread_create error (*ret unchanged).
 */
int kc_kubelet_new(const struct kc_kubelet_deps *deps, struct kc_kubelet **ret);
/**
 * Stops and joins the container GC's thread (a RemovePodSandbox in flight is
 * waited for; the rest of the pass is dropped); housekeeping afterwards
 * removes no sandbox. Call it before freeing the pod workers or the pod
 * manager. Not concurrently with housekeeping; idempotent; NULL-safe.
 */
void kc_kubelet_stop(struct kc_kubelet *k);
/** kc_kubelet_stop(), then frees. NULL-safe; returns NULL. */
struct kc_kubelet *kc_kubelet_free(struct kc_kubelet *k);
KC_DEFINE_CLEANUP_FUNC(struct kc_kubelet, kc_kubelet_free)

/** The loop whose config sources gate deletions (HandlePodRemoves); set before it runs. */
void kc_kubelet_set_sync_loop(struct kc_kubelet *k, struct kc_sync_loop *loop);

/** The SyncHandler to give kc_sync_loop (userdata: the kc_kubelet). */
extern const struct kc_sync_handler_ops kc_kubelet_sync_handler;

/** The pod workers' enqueue callback (userdata: the kc_work_queue). Any thread. */
void kc_kubelet_enqueue(void *work_queue, const char *uid, int64_t delay_ns);

/** sourcesReady.AllReady(): loop thread only (the handlers run there). */
bool kc_sync_loop_sources_ready(const struct kc_sync_loop *l);
