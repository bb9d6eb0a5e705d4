/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file core/backoff.h
 * @brief The restart back-off (client-go flowcontrol.Backoff).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"

struct kc_clock;

/**
 * Per-key exponential backoff: each key holds {backoff, last_update}.
 * Every call is safe from any thread (one internal mutex). Times are
 * nanoseconds on the injected clock.
 *
 * An entry is "expired" for an event at t when t - last_update > expiry:
 * kubelet installs HasExpiredFunc "eventTime - lastUpdate > 600 s"
 * (KC_BACKOFF_DEFAULT_EXPIRY_NS), independent of the maximum.
 */
struct kc_backoff;

#define KC_BACKOFF_DEFAULT_EXPIRY_NS (600 * KC_NSEC_PER_SEC)

/**
 * @brief A backoff starting at @p initial_ns, doubling up to @p max_ns, with
 * the kubelet's 600 s expiry. @p clock is borrowed and must outlive it.
 * @return 0, -EINVAL (NULL clock or a negative duration) or -ENOMEM; *ret
 * unchanged on failure.
 */
int kc_backoff_new(struct kc_clock *clock, int64_t initial_ns, int64_t max_ns,
                   struct kc_backoff **ret);
/** Same with an explicit expiry (@p expiry_ns >= 0). */
int kc_backoff_new_with_expiry(struct kc_clock *clock, int64_t initial_ns, int64_t max_ns,
                               int64_t expiry_ns, struct kc_backoff **ret);
/** NULL-safe; returns NULL. No concurrent users. */
struct kc_backoff *kc_backoff_free(struct kc_backoff *b);
KC_DEFINE_CLEANUP_FUNC(struct kc_backoff, kc_backoff_free)

/**
 * @brief Next(key, eventTime): no entry or expired for @p event_time_ns →
 * backoff = initial; otherwise backoff = min(2 × backoff, max). Then
 * last_update = now.
 * @return 0, -EINVAL (NULL key) or -ENOMEM (backoff unchanged).
 */
int kc_backoff_next(struct kc_backoff *b, const char *key, int64_t event_time_ns);

/**
 * IsInBackOffSince(key, eventTime): false when there is no entry or it is
 * expired for @p event_time_ns; otherwise now - event_time < backoff.
 */
bool kc_backoff_is_in_backoff_since(struct kc_backoff *b, const char *key, int64_t event_time_ns);

/**
 * IsInBackOffSinceUpdate(key, eventTime): false when there is no entry or it
 * is expired for @p event_time_ns; otherwise event_time - last_update <
 * backoff. The image manager asks this with eventTime = now: "did the last
 * failure happen less than one backoff window ago?".
 */
bool kc_backoff_is_in_backoff_since_update(struct kc_backoff *b, const char *key,
                                           int64_t event_time_ns);

/** The clock the backoff was built with (upstream's Backoff.Clock); NULL for NULL. */
struct kc_clock *kc_backoff_clock(struct kc_backoff *b);

/**
 * The clock time of the key's last Next() in *ret (to tell when a window
 * that runs from the update ends: last update + Get()).
 * @return 0, -ENOENT (no entry) or -EINVAL; *ret unchanged on failure.
 */
int kc_backoff_last_update(struct kc_backoff *b, const char *key, int64_t *ret);

/**
 * Get(key): the current backoff in *ret.
 * @return 0, or -ENOENT when the key has no entry (upstream's Get returns 0
 * then); *ret unchanged on failure.
 */
int kc_backoff_get(struct kc_backoff *b, const char *key, int64_t *ret);

/** Reset(key): forgets the key. No-op when absent. */
void kc_backoff_reset(struct kc_backoff *b, const char *key);

/**
 * GC(): drops every entry whose last update is more than 2 × max ago.
 * @return the number of entries dropped.
 */
size_t kc_backoff_gc(struct kc_backoff *b);
