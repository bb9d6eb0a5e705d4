/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file core/jitter.h
 * @brief Jitter (wait.Jitter).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * @brief Returns a uniformly random duration in [@p d, @p d * (1 + @p max_factor)),
 * like Go's wait.Jitter: @p max_factor <= 0 means 1.0. @p d <= 0 is returned
 * unchanged; a result beyond INT64_MAX saturates.
 *
 * Any thread. The generator is a lock-free splitmix64 counter seeded from
 * getrandom() on first use (from the time of day if getrandom fails).
 */
int64_t kc_jitter(int64_t d, double max_factor);

/** Tests: reseeds the kc_jitter() generator so its sequence is reproducible. Any thread. */
void kc_jitter_seed(uint64_t seed);
