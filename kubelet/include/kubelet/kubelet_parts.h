/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kubelet/kubelet_parts.h
 * @brief NewMainKubelet's parts, built in one place for the daemon and the chaos test.
 */
#pragma once

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/runtime_service.h"

struct kc_backoff;
struct kc_chan;
struct kc_clock;
struct kc_generic_pleg;
struct kc_kubelet;
struct kc_kubelet_metrics;
struct kc_metrics_registry;
struct kc_prober;
struct kc_prober_manager;
struct kc_pod_cache;
struct kc_pod_container_deletor;
struct kc_pod_manager;
struct kc_pod_syncer;
struct kc_pod_workers;
struct kc_reason_cache;
struct kc_runtime_manager;
struct kc_runtime_state;
struct kc_status_manager;
struct kc_sync_loop;
struct kc_volume_manager;
struct kc_work_queue;

/**
 * What kc_kubelet_parts_build() needs. Everything is borrowed and must
 * outlive the parts. The daemon fills it from its flags; tests (the chaos
 * test) fill it directly, so both run the same assembly.
 */
struct kc_kubelet_parts_config {
        struct kc_clock *clock;
        /** The runtime service: the container deletor removes containers through it. */
        struct kc_runtime_service svc;
        struct kc_runtime_manager *manager; /* SyncPod, KillPod, GetPods (PLEG, housekeeping) */
        struct kc_kubelet_metrics *metrics; /* may be NULL */
        /* May be NULL: the registry of prober_probe_total/_duration_seconds; outlives the parts. */
        struct kc_metrics_registry *registry;
        const char *node_ip;      /* hostIP */
        const char *runtime_name; /* containerID scheme */
        /** --root-dir: pod directories and volumes below <root_dir>/pods; NULL: none (tests). */
        const char *root_dir;
        int64_t crash_loop_initial_ns, crash_loop_max_ns; /* the restart back-off */
        int64_t sync_frequency_ns;                        /* pod worker resync, loop health */
        int64_t max_wait_for_container_runtime_ns;
        int maximum_dead_containers_per_container; /* < 1 counts as 1 */
        /** GenericPLEG's relist period and health threshold. */
        int64_t relist_period_ns, relist_threshold_ns;
        /** GenericPLEG's EventedPLEG hook (kc_generic_pleg_config); NULL: gate off. */
        bool (*evented_in_use)(void *userdata);
        void *evented_userdata;
        /** syncLoop's config sources (kc_sync_loop_config) and stop signals. */
        const char *const *sources;
        size_t n_sources;
        const sigset_t *stop_signals;
};

/**
 * The parts NewMainKubelet builds, wired as the daemon runs them: pod
 * status cache, pod manager, restart and image-pull back-offs, reason
 * cache, status manager, the prober and the prober manager (whose workers
 * start with the pods' first syncs; their updates channel is syncLoop's
 * probe channel), runtimeState (with the "PLEG" health check), the
 * config channel (50) and the PLEG channel (1000), GenericPLEG, the work
 * queue, the pod syncer, the pod workers, the container deletor, the
 * kubelet's SyncHandler and syncLoop. No thread runs yet except the
 * deletor's; the caller starts PLEG, the runtime-up poller and syncLoop.
 */
struct kc_kubelet_parts {
        struct kc_pod_cache *cache;
        struct kc_pod_manager *pod_manager;
        struct kc_backoff *backoff, *image_backoff;
        struct kc_reason_cache *reasons;
        struct kc_status_manager *status_manager;
        struct kc_runtime_state *runtime_state;
        struct kc_chan *config, *events;
        struct kc_generic_pleg *pleg;
        struct kc_work_queue *work_queue;
        struct kc_pod_syncer *syncer;
        struct kc_pod_workers *pod_workers;
        struct kc_pod_container_deletor *deletor;
        struct kc_kubelet *kubelet;
        struct kc_volume_manager *volume_manager; /* NULL without a root dir */
        struct kc_sync_loop *loop;
        struct kc_chan *probe_updates; /* the results managers' updates, read by syncLoop */
        struct kc_prober *prober;      /* runs the probes over the runtime service */
        struct kc_prober_manager *prober_manager;
};

/**
 * Builds every part in upstream's order into @p ret (zeroed first). On
 * failure the parts built so far stay in @p ret: kc_kubelet_parts_done()
 * frees them. @return 0, -EINVAL or -ENOMEM (or a part's error).
 */
int kc_kubelet_parts_build(const struct kc_kubelet_parts_config *cfg, struct kc_kubelet_parts *ret);
/**
 * Stops the threads the parts own: the kubelet's container GC, the pod
 * workers (in-flight syncs cancelled and joined), the probe workers and
 * the deletor. The caller stops syncLoop, PLEG
 * and the runtime-up poller first. Idempotent.
 */
void kc_kubelet_parts_stop(struct kc_kubelet_parts *p);
/** kc_kubelet_parts_stop(), then frees every part. NULL fields are skipped. */
void kc_kubelet_parts_done(struct kc_kubelet_parts *p);
