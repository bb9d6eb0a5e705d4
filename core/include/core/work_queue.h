/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file core/work_queue.h
 * @brief The work queue (pkg/kubelet/util/queue).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"

struct kc_clock;

/**
 * A set of pod UIDs, each with the clock time at which it becomes ready.
 * Every call is safe from any thread (one internal mutex).
 */
struct kc_work_queue;

/** @p clock is borrowed and must outlive the queue. *ret unchanged on failure. */
int kc_work_queue_new(struct kc_clock *clock, struct kc_work_queue **ret);
/** Frees the queue and every pending UID. NULL-safe; returns NULL. No concurrent users. */
struct kc_work_queue *kc_work_queue_free(struct kc_work_queue *q);
KC_DEFINE_CLEANUP_FUNC(struct kc_work_queue, kc_work_queue_free)

/**
 * @brief Enqueue(uid, delay): inserts @p uid or overwrites its ready time
 * with now + @p delay_ns (an earlier time too: the last call wins).
 * @return 0, -EINVAL (NULL or empty uid) or -ENOMEM (queue unchanged).
 */
int kc_work_queue_enqueue(struct kc_work_queue *q, const char *uid, int64_t delay_ns);

/**
 * @brief GetWork(): removes and returns every UID whose ready time is
 * strictly before now, in unspecified order.
 *
 * On success *ret_uids is one malloc'd block (release it with a single
 * free()) holding *ret_n string pointers followed by the strings, or NULL
 * when nothing is ready (*ret_n = 0).
 * @return 0, or -ENOMEM with the queue and the out-parameters unchanged.
 */
int kc_work_queue_get_work(struct kc_work_queue *q, char ***ret_uids, size_t *ret_n);

/** Number of queued UIDs, ready or not (a snapshot). */
size_t kc_work_queue_len(struct kc_work_queue *q);
