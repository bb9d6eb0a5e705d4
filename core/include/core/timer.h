/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file core/timer.h
 * @brief One-shot timers on a clock, for event loops that wait in epoll.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"

struct kc_clock;

/**
 * A one-shot timer on a clock, for event loops that wait in epoll: its fd
 * (EFD_NONBLOCK | EFD_CLOEXEC) becomes readable once the clock reaches the
 * armed deadline. Real clocks use a timerfd; fake clocks an eventfd that
 * kc_fake_clock_advance()/set() make readable. The owner thread arms, acks
 * and frees it; the fake clock fires it from the advancing thread. The timer
 * must be freed before its clock.
 */
struct kc_timer;

int kc_timer_new(struct kc_clock *c, struct kc_timer **ret);
struct kc_timer *kc_timer_free(struct kc_timer *t);
KC_DEFINE_CLEANUP_FUNC(struct kc_timer, kc_timer_free)
int kc_timer_fd(const struct kc_timer *t);
/** (Re)arms for the absolute clock time @p deadline_ns; a past one fires at once. */
int kc_timer_arm(struct kc_timer *t, int64_t deadline_ns);
void kc_timer_disarm(struct kc_timer *t);
/** Drains the fd. Returns true when the timer had fired. */
bool kc_timer_ack(struct kc_timer *t);
