/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file core/chan.h
 * @brief kc_chan: the bounded lock-free channel (ck_ring plus an eventfd).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"

/**
 * A bounded multi-producer, single-consumer queue of pointers: a ck_ring
 * (MPSC) plus an eventfd that wakes a sleeping consumer. @p capacity is the
 * number of usable slots ("capacity 1000" holds exactly 1000 items).
 *
 * Producers never wait for space or for the consumer: kc_chan_push_mp()
 * reports a full channel and the caller applies its documented policy. The
 * consumer side is lock-free. Producers serialise among themselves on a
 * short mutex around the enqueue, because ck_ring's multi-producer enqueue
 * spin-waits for earlier producers to publish (see core/chan.c for the
 * measurements). Wakeups are coalesced: the eventfd is written only when
 * the consumer may be asleep.
 *
 * @p free_item (may be NULL) releases items still queued at kc_chan_free().
 */
struct kc_chan;

int kc_chan_new(struct kc_chan **ret, unsigned capacity, void (*free_item)(void *));
/** Frees the channel and, with free_item, every queued item. No concurrent users. */
struct kc_chan *kc_chan_free(struct kc_chan *ch);
KC_DEFINE_CLEANUP_FUNC(struct kc_chan, kc_chan_free)

/**
 * Any thread. Never blocks.
 * @return 0 (the channel owns @p item) or -EAGAIN when full (the caller
 * still owns @p item).
 */
int kc_chan_push_mp(struct kc_chan *ch, void *item);

/**
 * The single consumer. Waits at most @p timeout_ms (0: do not wait, <0:
 * wait forever) for an item.
 * @return 0 and *ret set, -EAGAIN when empty and timeout_ms == 0,
 * -ETIMEDOUT when the wait expired.
 */
int kc_chan_pop_sc(struct kc_chan *ch, void **ret, int timeout_ms);

/** Any thread; a snapshot. */
unsigned kc_chan_len(const struct kc_chan *ch);
unsigned kc_chan_cap(const struct kc_chan *ch);

/**
 * For consumers that multiplex in epoll: the eventfd (EFD_NONBLOCK |
 * EFD_CLOEXEC) becomes readable when the consumer should look again.
 * Before sleeping in epoll the consumer calls kc_chan_prepare_wait_sc(): it
 * returns true when items are already queued (do not sleep) and otherwise
 * arms the wakeup. kc_chan_pop_sc() drains the eventfd itself.
 */
int kc_chan_fd(const struct kc_chan *ch);
bool kc_chan_prepare_wait_sc(struct kc_chan *ch);
