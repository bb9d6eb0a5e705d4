/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kubelet/status/status_manager.h
 * @brief The status manager (pkg/kubelet/status/status_manager.go, without an API server).
 */
#pragma once

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"
#include "runtime/api_pod.h" /* enum kc_pod_phase */

/**
 * The latest v1.PodStatus of each pod, by UID, with a per-pod version that
 * grows with every accepted change. Every call is safe from any thread (one
 * internal mutex).
 *
 * The manager keeps private deep copies: no jansson value is ever shared
 * between threads through it. (jansson's reference counts are atomic, but
 * json_incref() reads the count with a plain load first, a data race
 * ThreadSanitizer reports; copying a status costs microseconds.)
 */
struct kc_status_manager;

/** *ret unchanged on failure. @return 0 or -ENOMEM. */
int kc_status_manager_new(struct kc_status_manager **ret);
/** Drops every stored status. NULL-safe; returns NULL. No concurrent users. */
struct kc_status_manager *kc_status_manager_free(struct kc_status_manager *sm);
KC_DEFINE_CLEANUP_FUNC(struct kc_status_manager, kc_status_manager_free)

/**
 * @brief SetPodStatus: stores a deep copy of @p status (a v1.PodStatus
 * object; the caller keeps its value) for @p pod->uid.
 *
 * Refused, with a warning logged and the stored status kept, as upstream's
 * updateStatusInternal checks do:
 * - a terminal stored phase (Succeeded, Failed) followed by a non-terminal
 *   one;
 * - checkContainerStateTransition: a container (or init container) whose
 *   stored state is terminated and whose new state is not, unless the
 *   restart policy lets it restart (Always; OnFailure after a non-zero
 *   exit).
 * A status equal to the stored one (json_equal) changes nothing, not even
 * the version ("Ignoring same status").
 * @return 0 (stored or unchanged), -EPERM (refused), -EINVAL (NULL
 * argument, empty UID, @p status not an object) or -ENOMEM.
 */
int kc_status_manager_set_pod_status(struct kc_status_manager *sm, const struct kc_api_pod *pod,
                                     const json_t *status);

/**
 * @brief SetContainerReadiness: in @p pod's stored status, the container
 * whose containerID names @p container_id (the runtime's ID) gets "ready"
 * = @p ready and the Ready and ContainersReady conditions follow
 * (kc_pod_status_set_container_readiness(); @p now_ns for a changed
 * condition's lastTransitionTime). No change when already so.
 * @return 0, -ENOENT (no status, or no such container: upstream logs
 * "Container readiness changed for unknown container" and does nothing),
 * -EINVAL or -ENOMEM.
 */
int kc_status_manager_set_container_readiness(struct kc_status_manager *sm,
                                              const struct kc_api_pod *pod,
                                              const char *container_id, bool ready, int64_t now_ns);
/** SetContainerStartup: the same for the container's "started". */
int kc_status_manager_set_container_startup(struct kc_status_manager *sm,
                                            const struct kc_api_pod *pod, const char *container_id,
                                            bool started);

/**
 * @brief GetPodStatus: a deep copy of the stored status, owned by the
 * caller (json_decref it; modifying it changes nothing stored).
 * @return 0, -ENOENT, -EINVAL or -ENOMEM; *ret untouched on failure.
 */
int kc_status_manager_get_pod_status(struct kc_status_manager *sm, const char *uid, json_t **ret);

/**
 * The stored status' phase, without parsing the status: what
 * kc_pod_phase_from_string() makes of its "phase" (KC_POD_PHASE_UNKNOWN when
 * it has none or one v1.PodPhase does not name).
 * @return 0, -ENOENT or -EINVAL; *ret untouched on failure.
 */
int kc_status_manager_get_pod_phase(struct kc_status_manager *sm, const char *uid,
                                    enum kc_pod_phase *ret);

/**
 * The stored status' version: 1 for the first status of a UID, +1 for each
 * accepted change. @return 0, -ENOENT or -EINVAL; *ret untouched on failure.
 */
int kc_status_manager_get_version(struct kc_status_manager *sm, const char *uid, uint64_t *ret);

/**
 * @brief RemoveOrphanedStatuses: drops the status of every UID not among
 * @p keep_uids (@p n entries; NULL entries are ignored).
 * @return the number of statuses dropped, -EINVAL or -ENOMEM (nothing
 * dropped).
 */
int kc_status_manager_remove_orphaned_statuses(struct kc_status_manager *sm,
                                               const char *const *keep_uids, size_t n);
