/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file runtime/cache.h
 * @brief The pod status cache (pkg/kubelet/container/cache.go).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"

struct kc_cancel;
struct kc_pod_status;

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
 * Readies the next writes of a writer going through many pods (the generic
 * PLEG's relist, issue 18), called before each: the entry of @p next (the
 * next write's UID) and the status it holds, the entry of @p second, and
 * the map slot of @p third are asked for ahead, so that a write does not
 * wait for them one after another. Any may be NULL. Changes nothing.
 */
void kc_pod_cache_prefetch(struct kc_pod_cache *c, const char *next, const char *second,
                           const char *third);

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

/**
 * Calls @p fn for every entry with its UID and status (may be NULL), under
 * the cache's lock: @p fn must not call back into the cache. Stops early
 * when @p fn returns false.
 */
void kc_pod_cache_foreach(struct kc_pod_cache *c,
                          bool (*fn)(void *ud, const char *uid, const struct kc_pod_status *status),
                          void *ud);

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

/**
 * Told of every write that could make a GetNewerThan ready: a Set of @p uid
 * with modification time @p ts_ns, or (@p uid NULL) an UpdateTime to
 * @p ts_ns. Called on the writer's thread after the cache's lock is
 * released, so it may call into the cache; writes are reported in their
 * order, one at a time.
 */
typedef void (*kc_pod_cache_observer_fn)(void *ud, const char *uid, int64_t ts_ns);

/**
 * Sets the cache's one observer (@p fn NULL: none). Once this returns, the
 * observer it replaced is not running and is never called again.
 * @return 0, or -EBUSY when another observer is set (it stays).
 */
int kc_pod_cache_set_observer(struct kc_pod_cache *c, kc_pod_cache_observer_fn fn, void *ud);
