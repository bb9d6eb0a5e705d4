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
