/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file pleg/evented.h
 * @brief EventedPLEG: the CRI event stream (pkg/kubelet/pleg/evented.go).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"
#include "runtime/cri.h"

struct kc_chan;
struct kc_clock;
struct kc_generic_pleg;
struct kc_kubelet_metrics;
struct kc_pod_cache;

/** While EventedPLEG is in use, GenericPLEG relists this rarely (§4.1). */
#define KC_EVENTED_GENERIC_RELIST_PERIOD (300 * KC_NSEC_PER_SEC)
#define KC_EVENTED_GENERIC_RELIST_THRESHOLD (10 * KC_NSEC_PER_MIN)
/** globalCacheUpdatePeriod: --evented-pleg-cache-update-period's default. */
#define KC_EVENTED_CACHE_UPDATE_PERIOD (2 * KC_NSEC_PER_SEC)
/** eventedPlegMaxStreamRetries: consecutive stream failures before the fallback. */
#define KC_EVENTED_MAX_STREAM_RETRIES 5
/** Retry back-off after a stream failure: 250 ms doubling, capped at 30 s. */
#define KC_EVENTED_RETRY_INITIAL (250 * KC_NSEC_PER_MSEC)
#define KC_EVENTED_RETRY_MAX (30 * KC_NSEC_PER_SEC)
/** --evented-pleg-reprobe-period's default: probing the stream after a fallback (D12). */
#define KC_EVENTED_REPROBE_PERIOD (5 * KC_NSEC_PER_MIN)
/**
 * A stream counts as connected (success metric, failure count reset, switch
 * back) once it delivered an event or stayed open this long; one that ends
 * sooner is a failed attempt. A server refusing the call (containerd 1.6:
 * UNIMPLEMENTED) lets the stream open and ends it at once.
 */
#define KC_EVENTED_STREAM_SETTLE (1 * KC_NSEC_PER_SEC)

/* The event source (struct kc_container_event_source) is in runtime/cri.h. */

struct kc_evented_pleg;

struct kc_evented_pleg_config {
        /** The GenericPLEG it wraps (borrowed): same channel, same cache (§4.1). */
        struct kc_generic_pleg *generic;
        struct kc_container_event_source source; /* borrowed */
        struct kc_chan *events;                  /* borrowed: the generic PLEG's channel */
        struct kc_pod_cache *cache;              /* borrowed: the generic PLEG's cache */
        struct kc_clock *clock;                  /* borrowed */
        struct kc_kubelet_metrics *metrics;      /* borrowed; may be NULL */
        /** 0 selects the defaults above. */
        int64_t cache_update_period_ns;
        int64_t reprobe_period_ns;
        /** GenericPLEG's durations to fall back to (1 s / 3 min when 0). */
        int64_t fallback_relist_period_ns;
        int64_t fallback_relist_threshold_ns;
};

/**
 * @brief EventedPLEG around @p cfg->generic. Does not start anything; the
 * caller builds the generic PLEG with 300 s / 10 min and its evented_in_use
 * callback pointing at kc_evented_pleg_in_use_cb (userdata: this PLEG).
 * *ret unchanged on failure. @return 0, -EINVAL, -ENOMEM.
 */
int kc_evented_pleg_new(const struct kc_evented_pleg_config *cfg, struct kc_evented_pleg **ret);
/** Stops it if running. NULL-safe; returns NULL. */
struct kc_evented_pleg *kc_evented_pleg_free(struct kc_evented_pleg *e);
KC_DEFINE_CLEANUP_FUNC(struct kc_evented_pleg, kc_evented_pleg_free)

/**
 * @brief Start (§4.3): sets in-use and starts the stream thread (open the
 * stream; on failure count it, force a generic relist, retry after the
 * back-off; after KC_EVENTED_MAX_STREAM_RETRIES consecutive failures fall
 * back: clear in-use, generic stop/update(fallback)/start; then re-probe
 * every reprobe period and, when a stream connects, switch back: generic
 * to 300 s / 10 min, in-use set), the event consumer thread and the
 * updateGlobalCache loop. A successful connection resets the failure count.
 * Idempotent. @return 0 or a thread error.
 */
int kc_evented_pleg_start(struct kc_evented_pleg *e);
/** Stop: clears in-use, closes the stream, joins every thread. Idempotent. */
void kc_evented_pleg_stop(struct kc_evented_pleg *e);
/**
 * The first half of kc_evented_pleg_stop(), without waiting: from now on
 * the stream's end is the stop's (no failure counted or logged, no relist,
 * no fallback). The daemon calls it before it shuts the CRI client down,
 * which ends the stream. Any thread; idempotent; kc_evented_pleg_start()
 * clears it.
 */
void kc_evented_pleg_begin_stop(struct kc_evented_pleg *e);
/** Whether EventedPLEG is in use (isEventedPLEGInUse). Any thread. */
bool kc_evented_pleg_in_use(struct kc_evented_pleg *e);
/** The same as a kc_generic_pleg_config.evented_in_use callback (userdata: the PLEG). */
bool kc_evented_pleg_in_use_cb(void *userdata);
/** Healthy (§4.6): false, "EventedPLEG: pleg event channel capacity is full with N events", when the channel is full. */
bool kc_evented_pleg_healthy(struct kc_evented_pleg *e, char **ret_err);
/**
 * @brief processCRIEvents for one event, on the calling thread (§4.5): the
 * consumer thread calls it for each buffered event; pleg-replay and tests
 * call it directly. Skips (with a log, returns -EBADMSG) an event without a
 * sandbox status or metadata; builds the pod status from the event (IPs
 * preserved as GenericPLEG does), updates the running metrics, writes the
 * cache with the event's created_at (newer wins) or deletes the entry for a
 * DELETED sandbox, and emits CREATED → nothing, STARTED → ContainerStarted,
 * STOPPED → ContainerDied, DELETED → ContainerDied + ContainerRemoved; only
 * when the cache accepted the write, except DELETED.
 * @return the number of PLEG events sent (>= 0), -EBADMSG, -ENOMEM.
 */
int kc_evented_pleg_process_event(struct kc_evented_pleg *e, const struct kc_container_event *ev);

/** Test and metrics hooks, any thread. */
struct kc_evented_pleg_stats {
        uint64_t connections; /* streams connected (see KC_EVENTED_STREAM_SETTLE) */
        uint64_t failures;    /* stream failures (open or break) */
        unsigned consecutive_failures;
        uint64_t fallbacks;        /* switches to relisting */
        uint64_t recoveries;       /* switches back to evented (D12) */
        uint64_t dropped;          /* events dropped on a full internal buffer */
        bool streaming;            /* a stream is open now */
        uint64_t catch_up_relists; /* relists after a connection, until caught up (D31) */
        uint64_t caught_up;        /* connections whose catch-up finished */
        uint64_t stale;            /* events older than the last relist, ignored (D31) */
};
void kc_evented_pleg_stats(struct kc_evented_pleg *e, struct kc_evented_pleg_stats *ret);
