/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file core/cancel.h
 * @brief One-shot cancellation tokens (a Go context's Done channel).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"

/**
 * A one-shot cancellation token (the counterpart of a Go context's Done
 * channel). Any thread may trigger it; sleepers in kc_clock_sleep() wake up.
 */
struct kc_cancel;

int kc_cancel_new(struct kc_cancel **ret);
struct kc_cancel *kc_cancel_free(struct kc_cancel *c);
KC_DEFINE_CLEANUP_FUNC(struct kc_cancel, kc_cancel_free)
/** Any thread. Idempotent. Wakes every kc_clock_sleep() using @p c. */
void kc_cancel_trigger_mp(struct kc_cancel *c);
/** Any thread. */
bool kc_cancel_is_set(const struct kc_cancel *c);
