/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kubelet/sync_loop.h
 * @brief syncLoop (kubelet.go: syncLoop, syncLoopIteration) and the SyncHandler it drives.
 */
#pragma once

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"
#include "pleg/evented.h"

struct kc_api_pod;
struct kc_chan;
struct kc_clock;
struct kc_runtime_state;
struct kc_status_manager;

/**
 * The SyncHandler upstream's syncLoop drives, plus the lookups
 * syncLoopIteration makes (the kubelet implements it over its pod manager,
 * pod workers, work queue and container deletor; tests use fakes). Every
 * callback runs on the loop thread. Pod arrays are borrowed for the call.
 */
struct kc_sync_handler_ops {
        void (*handle_pod_additions)(void *ud, struct kc_api_pod *const *pods, size_t n);
        void (*handle_pod_updates)(void *ud, struct kc_api_pod *const *pods, size_t n);
        void (*handle_pod_removes)(void *ud, struct kc_api_pod *const *pods, size_t n);
        void (*handle_pod_reconcile)(void *ud, struct kc_api_pod *const *pods, size_t n);
        void (*handle_pod_syncs)(void *ud, struct kc_api_pod *const *pods, size_t n);
        /** HandlePodCleanups (housekeeping). */
        void (*handle_pod_cleanups)(void *ud);
        /** podManager.GetPodByUID: a new reference, or NULL when unknown. */
        struct kc_api_pod *(*get_pod_by_uid)(void *ud, const char *uid);
        /** cleanUpContainersInPod, on every ContainerDied (known pod or not). */
        void (*clean_up_containers_in_pod)(void *ud, const char *uid, const char *container_id);
        /**
         * getPodsToSync: the pods due in the work queue (and any other sync
         * handler's picks). *ret is a malloc'd array of new references.
         */
        size_t (*get_pods_to_sync)(void *ud, struct kc_api_pod ***ret);
};

/* Periods and limits (UPSTREAM §1). */
#define KC_SYNC_LOOP_SYNC_PERIOD (1 * KC_NSEC_PER_SEC)
#define KC_SYNC_LOOP_HOUSEKEEPING_PERIOD (2 * KC_NSEC_PER_SEC)
#define KC_SYNC_LOOP_HOUSEKEEPING_WARNING (1 * KC_NSEC_PER_SEC)
#define KC_SYNC_LOOP_BACKOFF_BASE (100 * KC_NSEC_PER_MSEC)
#define KC_SYNC_LOOP_BACKOFF_MAX (5 * KC_NSEC_PER_SEC)

struct kc_sync_loop_config {
        struct kc_clock *clock; /* borrowed */
        struct kc_chan *config; /* borrowed; items: struct kc_pod_update */
        struct kc_chan *pleg;   /* borrowed; items: struct kc_pleg_event */
        /*
         * Borrowed, may be NULL; items: struct kc_probe_update
         * (kubelet/prober/results_manager.h), freed by the loop.
         */
        struct kc_chan *probes;
        /* Borrowed, may be NULL: readiness and startup updates go here first. */
        struct kc_status_manager *status_manager;
        struct kc_runtime_state *runtime_state; /* borrowed */
        const struct kc_sync_handler_ops *handler;
        void *handler_userdata;
        /** Config sources that must have sent something before housekeeping runs. */
        const char *const *sources;
        size_t n_sources;
        int64_t resync_interval_ns; /* for the health check; default 1 min */
        /**
         * Signals that stop the loop (SIGTERM, SIGINT in the daemon), read
         * through a signalfd the loop owns; NULL for none. The caller blocks
         * them in every thread (pthread_sigmask before starting threads).
         * kc_sync_loop_run() reads them on a thread of its own, so a signal
         * stops the loop at once, also in the middle of a runtime-error
         * backoff sleep.
         */
        const sigset_t *stop_signals;
};

/**
 * The sync loop. kc_sync_loop_run() runs it on the calling thread, which
 * becomes its owner, until kc_sync_loop_stop_mp() is called from any thread
 * or one of the stop signals arrives.
 */
struct kc_sync_loop;

int kc_sync_loop_new(const struct kc_sync_loop_config *cfg, struct kc_sync_loop **ret);
/** Not while running. NULL-safe; returns NULL. */
struct kc_sync_loop *kc_sync_loop_free(struct kc_sync_loop *l);
KC_DEFINE_CLEANUP_FUNC(struct kc_sync_loop, kc_sync_loop_free)

/**
 * Runs syncLoop until stopped: while runtimeErrors() reports a problem it
 * reads nothing and sleeps (on the clock) 100 ms, doubling up to 5 s, and
 * resets on success; otherwise each iteration waits in epoll on the
 * channels and the sync and housekeeping timers and serves ready sources
 * fairly. Returns 0 when stopped, -EBUSY if already running.
 */
int kc_sync_loop_run(struct kc_sync_loop *l);
/** Any thread; idempotent. Wakes the loop, which then returns. */
void kc_sync_loop_stop_mp(struct kc_sync_loop *l);
/** SyncLoopHealthCheck, any thread: false and "sync Loop took longer than expected" when stale. */
bool kc_sync_loop_healthy(struct kc_sync_loop *l, char **ret_err);
/**
 * True while the loop backs off because runtimeErrors() reported a problem,
 * and so reads none of its channels; false once an iteration runs. Any
 * thread. A health check that fails *because* the loop does not read (the
 * PLEG channel is full) must pass meanwhile, or the loop would never read
 * again: see kc_sync_loop_evented_pleg_healthy().
 */
bool kc_sync_loop_backing_off(struct kc_sync_loop *l);

struct kc_evented_pleg;
/**
 * @brief EventedPLEG's runtimeState health check as the kubelet registers
 * it: kc_evented_pleg_healthy(@p e), except that it passes (*ret_err NULL)
 * while @p l backs off (kc_sync_loop_backing_off()). EventedPLEG fails
 * while the PLEG channel is full; a failing check makes syncLoop back off
 * and read nothing; syncLoop is that channel's only reader: without the
 * exception the channel would stay full and the loop back off forever. The
 * error that started the back-off is reported by its own check. @p l may
 * be NULL (no loop yet): the plain check. Any thread.
 */
bool kc_sync_loop_evented_pleg_healthy(struct kc_sync_loop *l, struct kc_evented_pleg *e,
                                       char **ret_err);
