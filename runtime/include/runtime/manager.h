/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file runtime/manager.h
 * @brief The runtime manager (kuberuntime's kubeGenericRuntimeManager).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"
#include "runtime/container.h"
#include "runtime/runtime_service.h"

struct kc_clock;
struct kc_runtime_error;

struct kc_runtime_manager;

/** @p svc is borrowed and must outlive the manager. */
int kc_runtime_manager_new(struct kc_runtime_service svc, struct kc_clock *clock,
                           struct kc_runtime_manager **ret);
struct kc_runtime_manager *kc_runtime_manager_free(struct kc_runtime_manager *m);
KC_DEFINE_CLEANUP_FUNC(struct kc_runtime_manager, kc_runtime_manager_free)

/**
 * GetPods(all): ListPodSandbox + ListContainers, grouped by the pod-UID
 * label, sorted by CreatedAt descending (upstream).
 */
int kc_runtime_manager_get_pods(struct kc_runtime_manager *m, bool all, struct kc_pod_list *ret,
                                struct kc_runtime_error *err);
/**
 * GetPodStatus: the pod's sandboxes (newest first) with their statuses, IPs
 * from the newest sandbox when it is READY, and the statuses of all the
 * pod's containers (newest first).
 */
int kc_runtime_manager_get_pod_status(struct kc_runtime_manager *m, const char *uid,
                                      const char *name, const char *namespace,
                                      struct kc_pod_status **ret, struct kc_runtime_error *err);
/**
 * GetPodStatus of @p pod as GetPods listed it: the statuses of its
 * sandboxes and containers, read now, without listing the pod's objects
 * again (docs/deviations.md D54). The status names them by @p pod's own
 * id strings, holding a reference to the block they live in, so that a
 * later status finds them by address (issue 18). An object removed since the listing is
 * skipped, as GetPodStatus skips one removed since its own listing.
 * @p prev (may be NULL): an earlier status of the pod. A container that
 * @p prev gives in the state @p pod lists it in now, created, running or
 * exited, is taken from @p prev without a ContainerStatus call, and so is
 * a sandbox, ready or not (with the pod IPs when it is the newest and was
 * the newest in @p prev): a CRI container or sandbox never goes back to a
 * state it left, and what its status adds to its listing is fixed while
 * it stays in one (D55).
 */
int kc_runtime_manager_get_listed_pod_status(struct kc_runtime_manager *m, const struct kc_pod *pod,
                                             const struct kc_pod_status *prev,
                                             struct kc_pod_status **ret,
                                             struct kc_runtime_error *err);
/** kc_pod_runtime_ops.prefetch_listed_pod_status (container.h). Any thread. */
void kc_runtime_manager_prefetch_listed_pod_status(struct kc_runtime_manager *m,
                                                   const struct kc_pod *pod,
                                                   const struct kc_pod *old, unsigned ahead);
/** The manager as a kc_pod_runtime (for PLEG). */
struct kc_pod_runtime kc_runtime_manager_pod_runtime(struct kc_runtime_manager *m);
