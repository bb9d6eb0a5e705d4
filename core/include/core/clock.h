/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file core/clock.h
 * @brief The injected clock: real and fake clocks and sleeping on them.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"

struct kc_cancel;

struct kc_clock;

/** Process-wide real clock. Never freed (kc_clock_free ignores it). */
struct kc_clock *kc_clock_real(void);

/**
 * @brief A fake clock for tests and pleg-replay, starting at @p start_ns
 * (nanoseconds since the Unix epoch). Time moves only through
 * kc_fake_clock_advance()/kc_fake_clock_set().
 */
int kc_fake_clock_new(struct kc_clock **ret, int64_t start_ns);
struct kc_clock *kc_clock_free(struct kc_clock *c);
KC_DEFINE_CLEANUP_FUNC(struct kc_clock, kc_clock_free)

/** Any thread. Wall time in nanoseconds since the Unix epoch. */
int64_t kc_clock_now(struct kc_clock *c);

/**
 * @brief Sleep @p ns of this clock's time, or until @p cancel (may be NULL)
 * is triggered. On a fake clock the sleeper wakes when an advance reaches
 * the deadline.
 * @return 0 when the time elapsed, -ECANCELED when cancelled.
 */
int kc_clock_sleep(struct kc_clock *c, int64_t ns, struct kc_cancel *cancel);

/** Fake clocks only (-EINVAL otherwise). Any thread. */
int kc_fake_clock_advance(struct kc_clock *c, int64_t ns);
int kc_fake_clock_set(struct kc_clock *c, int64_t now_ns);
/**
 * Fake clocks only (0 otherwise): how many threads sleep on @p c right now.
 * Tests wait for a component to be asleep before they advance the clock,
 * so an advance never lands before the sleep it is meant to end.
 */
size_t kc_fake_clock_sleepers(struct kc_clock *c);
