/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kubelet/pod_syncer.h
 * @brief The kubelet's pod syncer (kubelet.go SyncPod, SyncTerminatingPod, ...).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"
#include "kubelet/status/reason_cache.h"
#include "kubelet/status/status_manager.h"
#include "podworkers/pod_workers.h"
#include "runtime/manager.h"

struct kc_backoff;
struct kc_clock;
struct kc_prober_manager;
struct kc_kubelet_metrics;
struct kc_runtime_state;
struct kc_volume_manager;

struct kc_reason_cache;
struct kc_status_manager;
struct kc_runtime_manager;

/** What the pod syncer works with; all borrowed and thread-safe, outliving it. */
struct kc_pod_syncer_config {
        struct kc_clock *clock;
        struct kc_runtime_manager *manager;
        /** networkErrors() gates pods that need pod networking (F-SYNC-01). */
        struct kc_runtime_state *runtime_state;
        struct kc_status_manager *status_manager;
        struct kc_reason_cache *reasons;
        struct kc_backoff *backoff;         /* container restarts; may be NULL */
        struct kc_backoff *image_backoff;   /* image pulls; may be NULL */
        struct kc_kubelet_metrics *metrics; /* may be NULL */
        const char *node_ip;                /* hostIP */
        const char *runtime_name;           /* containerID scheme: "sim", "containerd" */
        /** makePodDataDirs and WaitForAttachAndMount before the runtime's SyncPod;
         * NULL: neither (unit tests without a root dir). */
        struct kc_volume_manager *volume_manager;
        /**
         * May be NULL (no probes run). Else SyncPod adds the pod's probes
         * (AddPod) before the runtime's SyncPod, which kills on their
         * liveness/startup failures; the generated status takes started
         * and ready from it (UpdatePodStatus); SyncTerminatingPod stops the
         * liveness and startup probes, SyncTerminatedPod removes the pod.
         */
        struct kc_prober_manager *prober_manager;
};

/**
 * The podSyncer the pod workers drive (kc_pod_syncer_kubelet_ops, userdata
 * the kc_pod_syncer):
 * - sync_pod: generates the v1 status into the status manager (a terminal
 *   phase ends the sync with *ret_is_terminal); a pod without hostNetwork
 *   fails with "network is not ready: <networkErrors>" while the network
 *   is not ready (the pod workers retry it after ~1 s); otherwise the
 *   runtime manager's SyncPod runs, its start results feed the reason
 *   cache, and a sync refused only by back-offs is requeued when the first
 *   one ends (D10). Observes on create
 *   kubelet_pod_worker_start_duration_seconds (since the pod's
 *   creation_ts, which file pods set to config.seen) and
 *   kubelet_containers_per_pod_count, and kubelet_pod_start_duration_seconds
 *   (since creation_ts) when the pod goes from no status or Pending to
 *   Running (D25); the pod workers time the whole sync
 *   (kubelet_pod_worker_duration_seconds);
 * - sync_terminating_pod: KillPod with the given grace (else the pod's),
 *   then checks that nothing runs any more and stores the final status;
 * - sync_terminating_runtime_pod: KillPod of an orphan with 1 s (raised to
 *   2 s by KillPod);
 * - sync_terminated_pod: stores the terminal status.
 * Callbacks run on pod-worker threads, concurrently for different pods.
 */
struct kc_pod_syncer;

int kc_pod_syncer_new(const struct kc_pod_syncer_config *cfg, struct kc_pod_syncer **ret);
struct kc_pod_syncer *kc_pod_syncer_free(struct kc_pod_syncer *s);
KC_DEFINE_CLEANUP_FUNC(struct kc_pod_syncer, kc_pod_syncer_free)

struct kc_pod_syncer_ops;
extern const struct kc_pod_syncer_ops kc_pod_syncer_kubelet_ops;
