/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kubelet/pod_container_deletor.h
 * @brief The pod container deletor (pkg/kubelet/pod_container_deletor.go).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"

struct kc_container_status;
struct kc_pod_status;
struct kc_runtime_error;

/** containerDeletorBufferLimit: queued deletion requests beyond this are dropped. */
#define KC_CONTAINER_DELETOR_BUFFER_LIMIT 50u

/**
 * Removes one container by ID (runtime.DeleteContainer). The runtime
 * manager provides it; its signature matches
 * kc_runtime_service_ops.remove_container so a runtime service can be
 * plugged in directly. Called only on the deletor's worker thread.
 * @return 0 or -errno, filling @p err (may be NULL) on failure.
 */
typedef int (*kc_delete_container_fn)(void *userdata, const char *container_id,
                                      struct kc_runtime_error *err);

/**
 * Issues container deletions asynchronously: a bounded queue (capacity
 * KC_CONTAINER_DELETOR_BUFFER_LIMIT) of container IDs consumed by one
 * worker thread that calls the delete function for each ID. Failed
 * deletions are logged and not retried (the container GC catches up).
 */
struct kc_pod_container_deletor;

/**
 * @brief Starts the deletor and its worker thread.
 *
 * @p containers_to_keep is the number of dead instances of a container kept
 * per pod. The kubelet passes max(MaxPerPodContainer, 1) (minDeadContainerInPod,
 * F-DEL-04); the clamp to >= 1 is also applied here, so 0 or a negative
 * value keeps one (remove-all mode is per call, see below).
 * @p delete_container and @p userdata are borrowed: they must stay valid
 * until kc_pod_container_deletor_free() returns.
 * @return 0, -EINVAL, -ENOMEM or the pthread_create error; *ret unchanged on
 * failure.
 */
int kc_pod_container_deletor_new(kc_delete_container_fn delete_container, void *userdata,
                                 int containers_to_keep, struct kc_pod_container_deletor **ret);

/**
 * @brief Stops the worker and frees the deletor. NULL-safe; returns NULL.
 *
 * Waits for a deletion in flight to return, then joins the worker. Requests
 * still queued are dropped, not executed: at shutdown the runtime may be
 * going away, and upstream's worker never finishes its queue either. The
 * worker is woken by a stop sentinel pushed into the queue; when the queue
 * is full the push fails, but then the worker is busy and checks the stop
 * flag before its next pop (its 1 s pop timeout is only a net).
 * Any thread except the worker (i.e. not from the delete function); no
 * concurrent kc_pod_container_deletor_delete_containers_in_pod().
 */
struct kc_pod_container_deletor *kc_pod_container_deletor_free(struct kc_pod_container_deletor *d);
KC_DEFINE_CLEANUP_FUNC(struct kc_pod_container_deletor, kc_pod_container_deletor_free)

/**
 * @brief deleteContainersInPod: queues the deletion of the dead containers
 * selected by kc__get_containers_to_delete_in_pod().
 *
 * With @p remove_all the deletor keeps no instance and ignores @p filter_id
 * (used when the pod's content should be removed); otherwise it keeps the
 * configured number of instances of the container named by @p filter_id
 * (NULL or "" = every exited container of the pod).
 * Never blocks: when the queue is full the request is dropped with the
 * warning "Failed to issue the request to remove container".
 * Any thread. @p status is only read during the call.
 * @return the number of requests queued (>= 0), or -EINVAL/-ENOMEM.
 */
int kc_pod_container_deletor_delete_containers_in_pod(struct kc_pod_container_deletor *d,
                                                      const char *filter_id,
                                                      const struct kc_pod_status *status,
                                                      bool remove_all);

/**
 * @brief getContainersToDeleteInPod (internal, exposed for tests).
 *
 * - @p filter_id non-empty and not among @p status's containers → none
 *   (logged as a warning);
 * - candidates: the EXITED container statuses whose name equals the filter
 *   container's name, or every exited one without a filter (running,
 *   created and unknown containers never are; sandboxes are not looked at);
 * - at most @p keep candidates → none; otherwise they are sorted by
 *   restart_count (attempt) descending, then created_at descending, and all
 *   but the first @p keep are returned. Full ties keep status order (upstream's
 *   sort.Sort leaves them unspecified).
 *
 * On success *ret is a malloc'd array of *ret_n pointers into @p status
 * (borrowed; free() the array only), or NULL with *ret_n = 0.
 * @return 0 or -EINVAL/-ENOMEM (out-parameters unchanged).
 */
int kc__get_containers_to_delete_in_pod(const char *filter_id, const struct kc_pod_status *status,
                                        int keep, const struct kc_container_status ***ret,
                                        size_t *ret_n);
