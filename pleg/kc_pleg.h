/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kc_pleg.h
 * @brief Pod lifecycle event generator (upstream pkg/kubelet/pleg) and the
 * pod status cache (upstream pkg/kubelet/container/cache.go).
 */
#pragma once

#include "kc_core.h"
#include "kc_health.h"
#include "kc_runtime.h"

/* ------------------------------------------------------------------------ */
/* Events                                                                     */

enum kc_pleg_event_type {
        KC_PLEG_CONTAINER_STARTED,
        KC_PLEG_CONTAINER_DIED,
        KC_PLEG_CONTAINER_REMOVED,
        KC_PLEG_POD_SYNC,
        KC_PLEG_CONTAINER_CHANGED,
        _KC_PLEG_EVENT_TYPE_MAX,
        _KC_PLEG_EVENT_TYPE_INVALID = -EINVAL,
};

/** Upstream names: "ContainerStarted", "ContainerDied", ... */
const char *kc_pleg_event_type_to_string(enum kc_pleg_event_type t);

/** PodLifecycleEvent. One allocation; free with kc_pleg_event_free(). */
struct kc_pleg_event {
        enum kc_pleg_event_type type;
        const char *data; /* container ID; "" for PodSync */
        char pod_id[];
};

/** @p data may be NULL (stored as ""). Returns NULL on ENOMEM. */
struct kc_pleg_event *kc_pleg_event_new(const char *pod_id, enum kc_pleg_event_type type,
                                        const char *data);
void kc_pleg_event_free(struct kc_pleg_event *e);
/** The kc_chan item destructor for PLEG channels. */
void kc_pleg_event_free_item(void *e);

/* ------------------------------------------------------------------------ */
/* Pod status cache                                                           */

/**
 * Map UID → {status, error, modified} plus a global timestamp. Thread-safe.
 * One writer path per pod (PLEG); readers may block in GetNewerThan.
 */
struct kc_pod_cache;

int kc_pod_cache_new(struct kc_pod_cache **ret);
/** No thread may be blocked in the cache. */
struct kc_pod_cache *kc_pod_cache_free(struct kc_pod_cache *c);
KC_DEFINE_CLEANUP_FUNC(struct kc_pod_cache, kc_pod_cache_free)

/**
 * Newer-wins mode (the EventedPLEG gate, UPSTREAM §4.7): Set refuses an
 * entry strictly older than the cached one. Off by default.
 */
void kc_pod_cache_set_newer_wins(struct kc_pod_cache *c, bool on);

/**
 * Get: never blocks. On a miss *ret_status is a default status {ID: uid}
 * and *ret_err NULL. Otherwise *ret_status is a new reference (may be NULL
 * when NULL was cached) and *ret_err a malloc'd copy of the cached error
 * text or NULL.
 * @return 1 when an entry was found, 0 on a miss, -ENOMEM.
 */
int kc_pod_cache_get(struct kc_pod_cache *c, const char *uid, struct kc_pod_status **ret_status,
                     char **ret_err);

/**
 * Set: stores @p status (a new reference is taken; may be NULL) and @p err
 * (copied; may be NULL) with modification time @p ts_ns, then notifies the
 * UID's subscribers. Returns true when written (always, unless newer-wins
 * refuses an older entry), false when refused.
 */
bool kc_pod_cache_set(struct kc_pod_cache *c, const char *uid, struct kc_pod_status *status,
                      const char *err, int64_t ts_ns);

/**
 * The modification time of @p uid's entry: the @p ts_ns of the Set that
 * wrote it. *ret_ns unchanged on a miss.
 * @return 1 when an entry was found, 0 on a miss.
 */
int kc_pod_cache_get_modified(struct kc_pod_cache *c, const char *uid, int64_t *ret_ns);

/** Delete: removes the entry. Wakes nobody (upstream). */
void kc_pod_cache_delete(struct kc_pod_cache *c, const char *uid);

/** UpdateTime: sets the global timestamp and notifies every subscribed UID. */
void kc_pod_cache_update_time(struct kc_pod_cache *c, int64_t ts_ns);

/**
 * GetNewerThan: blocks until the cache holds data for @p uid newer than
 * @p min_ns (strict on entry; a later notification with ts >= min_ns
 * delivers). Results as kc_pod_cache_get(). @p cancel (may be NULL) aborts
 * the wait with -ECANCELED.
 */
int kc_pod_cache_get_newer_than(struct kc_pod_cache *c, const char *uid, int64_t min_ns,
                                struct kc_cancel *cancel, struct kc_pod_status **ret_status,
                                char **ret_err);

/** The non-blocking readiness check of GetNewerThan: -EAGAIN when not ready. */
int kc_pod_cache_try_get_newer_than(struct kc_pod_cache *c, const char *uid, int64_t min_ns,
                                    struct kc_pod_status **ret_status, char **ret_err);

/* ------------------------------------------------------------------------ */
/* PLEG interface                                                             */

struct kc_pleg_ops {
        int (*start)(void *self);
        void (*stop)(void *self);
        /** The event channel; its single consumer is syncLoop. */
        struct kc_chan *(*watch)(void *self);
        /** Returns true when healthy; else *ret_err (malloc'd) says why. */
        bool (*healthy)(void *self, char **ret_err);
        int (*relist)(void *self);
        /** Replaces period and threshold; call only while stopped. */
        void (*update)(void *self, int64_t relist_period_ns, int64_t relist_threshold_ns);
};

struct kc_pleg {
        const struct kc_pleg_ops *ops;
        void *self;
};

/* ------------------------------------------------------------------------ */
/* GenericPLEG                                                                */

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
struct kc_chan *kc_generic_pleg_watch(struct kc_generic_pleg *g);
bool kc_generic_pleg_healthy(struct kc_generic_pleg *g, char **ret_err);
/** One relist; any thread; serialised with other relists. */
int kc_generic_pleg_relist(struct kc_generic_pleg *g);
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

/* ------------------------------------------------------------------------ */
/* EventedPLEG (pkg/kubelet/pleg/evented.go; UPSTREAM.md §4, E1/E2 design)    */

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

/* The event source (struct kc_container_event_source) is in kc_runtime.h. */

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
        uint64_t fallbacks;  /* switches to relisting */
        uint64_t recoveries; /* switches back to evented (D12) */
        uint64_t dropped;    /* events dropped on a full internal buffer */
        bool streaming;      /* a stream is open now */
};
void kc_evented_pleg_stats(struct kc_evented_pleg *e, struct kc_evented_pleg_stats *ret);
