/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kubelet/status/reason_cache.h
 * @brief The reason cache (pkg/kubelet/kuberuntime ReasonCache).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"

/* (kuberuntime ReasonCache; kubelet_pods.go generateAPIPodStatus, getPhase,  */
/* convertToAPIContainerStatuses; status/generate.go)                         */

/* JSON documents are jansson values (kc_kubelet links jansson publicly). */

/** maxReasonCacheEntries: the reason cache keeps at most this many containers. */
#define KC_REASON_CACHE_MAX_ENTRIES 1000u

/**
 * The last start failure of each container, keyed by (pod UID, container
 * name) → (reason, message): what a container that will be restarted shows
 * as its waiting state ("CrashLoopBackOff", "ErrImagePull",
 * "ImagePullBackOff", "ErrImageNeverPull", "CreateContainerError",
 * "RunContainerError"). SyncPod records each StartContainer outcome:
 * a failure updates the entry, a success removes it.
 *
 * At most KC_REASON_CACHE_MAX_ENTRIES entries: inserting a new key into a
 * full cache evicts the least recently used entry, as upstream's LRU: an
 * update and a successful get both count as use. Every call is safe from
 * any thread (one internal mutex).
 */
struct kc_reason_cache;

/** *ret unchanged on failure. @return 0 or -ENOMEM. */
int kc_reason_cache_new(struct kc_reason_cache **ret);
/** Frees every entry. NULL-safe; returns NULL. No concurrent users. */
struct kc_reason_cache *kc_reason_cache_free(struct kc_reason_cache *rc);
KC_DEFINE_CLEANUP_FUNC(struct kc_reason_cache, kc_reason_cache_free)

/**
 * @brief Update: records (@p reason, @p message) for the container,
 * replacing any previous entry, and makes it the most recently updated one.
 * The strings are copied; @p message may be NULL (stored as "").
 * @return 0, -EINVAL (NULL argument or empty @p reason) or -ENOMEM (cache
 * unchanged).
 */
int kc_reason_cache_update(struct kc_reason_cache *rc, const char *uid, const char *container_name,
                           const char *reason, const char *message);

/**
 * @brief Remove: forgets the container's entry (no-op when absent).
 * @return 0, -EINVAL or -ENOMEM (the lookup key could not be built).
 */
int kc_reason_cache_remove(struct kc_reason_cache *rc, const char *uid, const char *container_name);

/**
 * Forgets every entry of a pod not among @p keep_uids (@p n entries, NULL
 * ones ignored). Not upstream's, which keeps a deleted pod's entries until
 * they are the least recently used of 1,000 (docs/deviations.md D18):
 * housekeeping calls it with the pods still desired or still known to the
 * pod workers.
 * @return the number of entries dropped, -EINVAL or -ENOMEM (nothing
 * dropped).
 */
int kc_reason_cache_remove_orphans(struct kc_reason_cache *rc, const char *const *keep_uids,
                                   size_t n);

/**
 * @brief Get: malloc'd copies of the container's reason and message ("" when
 * none was given). Either out-parameter may be NULL. A hit makes the entry
 * the most recently used (upstream's lru.Cache.Get).
 * @return 0, -ENOENT when absent, -EINVAL or -ENOMEM; out-parameters
 * unchanged on failure.
 */
int kc_reason_cache_get(struct kc_reason_cache *rc, const char *uid, const char *container_name,
                        char **ret_reason, char **ret_message);

/** Number of entries (a snapshot). Any thread. */
size_t kc_reason_cache_len(struct kc_reason_cache *rc);
