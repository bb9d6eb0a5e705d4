/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file pleg/generic.h
 * @brief GenericPLEG: relist and diff (pkg/kubelet/pleg/generic.go).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"
#include "pleg/pleg.h"
#include "runtime/container.h"

struct kc_chan;
struct kc_clock;
struct kc_kubelet_metrics;
struct kc_pod_cache;

#define KC_PLEG_CHANNEL_CAPACITY 1000u
#define KC_GENERIC_PLEG_RELIST_PERIOD (1 * KC_NSEC_PER_SEC)
#define KC_GENERIC_PLEG_RELIST_THRESHOLD (3 * KC_NSEC_PER_MIN)

struct kc_generic_pleg;

struct kc_generic_pleg_config {
        struct kc_pod_runtime runtime;      /* borrowed */
        struct kc_chan *events;             /* borrowed; PLEG is a producer */
        struct kc_pod_cache *cache;         /* borrowed */
        struct kc_clock *clock;             /* borrowed */
        struct kc_kubelet_metrics *metrics; /* borrowed; may be NULL */
        int64_t relist_period_ns;
        int64_t relist_threshold_ns;
        /*
         * The EventedPLEG feature gate (UPSTREAM §3.5 step 6, §4.2). NULL
         * means the gate is off. Otherwise it is asked, on every cache
         * write, whether EventedPLEG is in use: then the runtime-provided
         * status timestamp orders cache writes (the kubelet clock when it is
         * zero), and a write refused by the newer-wins cache skips the pod.
         */
        bool (*evented_in_use)(void *userdata);
        void *evented_userdata;
};

int kc_generic_pleg_new(const struct kc_generic_pleg_config *cfg, struct kc_generic_pleg **ret);
/** Stops the relist thread if running. */
struct kc_generic_pleg *kc_generic_pleg_free(struct kc_generic_pleg *g);
KC_DEFINE_CLEANUP_FUNC(struct kc_generic_pleg, kc_generic_pleg_free)

/** Idempotent. Starts the relist thread: relist now, then every period after each return. */
int kc_generic_pleg_start(struct kc_generic_pleg *g);
/** Idempotent. Joins the relist thread. */
void kc_generic_pleg_stop(struct kc_generic_pleg *g);
/**
 * Before the runtime client shuts down under a relist: a relist that fails
 * from now on logs at V(2), not as an error. Any thread; the next
 * kc_generic_pleg_start() clears it.
 */
void kc_generic_pleg_begin_stop(struct kc_generic_pleg *g);
struct kc_chan *kc_generic_pleg_watch(struct kc_generic_pleg *g);
bool kc_generic_pleg_healthy(struct kc_generic_pleg *g, char **ret_err);
/** One relist; any thread; serialised with other relists. */
int kc_generic_pleg_relist(struct kc_generic_pleg *g);
/**
 * The timestamp of the last successful relist (taken before it listed the
 * runtime), 0 before the first. Any thread. It is set once the listing
 * came back, before that relist wrote the cache: what the runtime reported
 * before this time is in the listing the PLEG works from.
 */
int64_t kc_generic_pleg_last_relist_mp(struct kc_generic_pleg *g);
/**
 * True once a relist has written every pod it listed to the cache and
 * stamped the cache's global time. Any thread. Until then a cache miss may
 * be a pod the first relist has yet to write, not a pod with nothing.
 */
bool kc_generic_pleg_filled_mp(struct kc_generic_pleg *g);
void kc_generic_pleg_update(struct kc_generic_pleg *g, int64_t relist_period_ns,
                            int64_t relist_threshold_ns);
struct kc_pleg kc_generic_pleg_as_pleg(struct kc_generic_pleg *g);

/**
 * @brief Owes @p uid a PodSync (docs/deviations.md D1): for another producer
 * on this PLEG's channel (EventedPLEG) that dropped an event of the pod on
 * the full channel. The pod joins the list GenericPLEG keeps for its own
 * drops, once however often it is owed, until a flush delivers its PodSync.
 * Any thread, concurrently with a relist: it takes only the short lock of
 * that list, never held across a runtime call, so it does not wait for a
 * relist in progress.
 * @return 0, -EINVAL (no UID), -ENOMEM (not remembered).
 */
int kc_generic_pleg_owe_sync_mp(struct kc_generic_pleg *g, const char *uid);
/**
 * @brief Sends the owed PodSyncs, in the order they were owed, until the
 * channel refuses one; the rest stay owed (a refusal is not counted again
 * as a discard). Every successful relist does this before its own events;
 * EventedPLEG calls it too, as GenericPLEG relists only every 300 s while
 * it is in use. Any thread; never blocks (a non-blocking push per pod
 * under the list's lock).
 * @return the number of pods still owed.
 */
size_t kc_generic_pleg_flush_owed_mp(struct kc_generic_pleg *g);
