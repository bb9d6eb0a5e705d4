/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kubelet/prober/results_manager.h
 * @brief The probe results managers (pkg/kubelet/prober/results/results_manager.go).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"
#include "kubelet/prober/prober.h"

struct kc_cancel;
struct kc_chan;
struct kc_clock;

/**
 * results.Update: a container's cached result changed. The items the
 * results managers push into their updates channel; the consumer (syncLoop)
 * frees them with kc_probe_update_free().
 */
struct kc_probe_update {
        enum kc_probe_type type; /* which manager sent it */
        enum kc_probe_result result;
        char *pod_uid;
        char *container_id; /* the runtime's ID, without the "<runtime>://" prefix */
};
/** NULL-safe; a void * so that it can be a kc_chan's free_item. */
void kc_probe_update_free(void *u);

/**
 * One results manager (upstream has three: liveness, readiness, startup):
 * the latest result of each container, by container ID, and an updates
 * channel. Every call is safe from any thread (one internal mutex).
 */
struct kc_results_manager;

/**
 * @brief A results manager for @p type results. @p updates (borrowed, may be
 * NULL: no updates are sent) receives a struct kc_probe_update for every
 * change; several managers may share one channel. @p clock (borrowed) paces
 * the retries of a push into a full channel.
 * @return 0, -EINVAL or -ENOMEM; *ret unchanged on failure.
 */
int kc_results_manager_new(enum kc_probe_type type, struct kc_chan *updates, struct kc_clock *clock,
                           struct kc_results_manager **ret);
/** NULL-safe; returns NULL. No concurrent users. */
struct kc_results_manager *kc_results_manager_free(struct kc_results_manager *m);
KC_DEFINE_CLEANUP_FUNC(struct kc_results_manager, kc_results_manager_free)

/**
 * @brief Get: the cached result of @p container_id.
 * @return true and *ret set, or false (no entry; *ret unchanged).
 */
bool kc_results_manager_get(struct kc_results_manager *m, const char *container_id,
                            enum kc_probe_result *ret);

/**
 * @brief Set: caches @p result for @p container_id (of pod @p pod_uid) and,
 * when it differs from the cached one (or there was none), sends an update.
 *
 * Upstream's send blocks until syncLoop takes the update; here a full
 * channel is retried every 10 ms of the clock until it has room or
 * @p cancel (may be NULL) is triggered, when the update is dropped (the
 * worker is stopping). The cache is updated either way.
 * @return 0 (unchanged or sent), -ECANCELED (cached, update dropped),
 * -EINVAL or -ENOMEM (nothing changed).
 */
int kc_results_manager_set(struct kc_results_manager *m, const char *container_id,
                           enum kc_probe_result result, const char *pod_uid,
                           struct kc_cancel *cancel);

/** Remove: drops the cached result of @p container_id (no update). */
void kc_results_manager_remove(struct kc_results_manager *m, const char *container_id);

/** The number of cached results (tests). */
size_t kc_results_manager_size(struct kc_results_manager *m);
