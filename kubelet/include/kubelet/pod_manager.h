/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kubelet/pod_manager.h
 * @brief The pod manager (pkg/kubelet/pod/pod_manager.go).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"

struct kc_api_pod;

/**
 * The desired pods, by UID and by full name ("name_namespace"), keeping
 * static pods and the API server's mirror pods of them apart and mapping one
 * to the other. Thread-safe (a read-write lock); every getter returns new
 * references (kc_api_pod_unref them).
 */
struct kc_pod_manager;

int kc_pod_manager_new(struct kc_pod_manager **ret);
struct kc_pod_manager *kc_pod_manager_free(struct kc_pod_manager *m);
KC_DEFINE_CLEANUP_FUNC(struct kc_pod_manager, kc_pod_manager_free)

/** AddPod/UpdatePod: stores @p pod (a reference is taken), mirror or not. */
int kc_pod_manager_update_pod(struct kc_pod_manager *m, struct kc_api_pod *pod);
/** RemovePod. */
void kc_pod_manager_remove_pod(struct kc_pod_manager *m, const struct kc_api_pod *pod);
/** SetPods: replaces everything. */
int kc_pod_manager_set_pods(struct kc_pod_manager *m, struct kc_api_pod *const *pods, size_t n);

/** GetPodByUID: the non-mirror pod, or NULL. */
struct kc_api_pod *kc_pod_manager_get_pod_by_uid(struct kc_pod_manager *m, const char *uid);
/** GetPodByFullName / GetPodByName: the non-mirror pod, or NULL. */
struct kc_api_pod *kc_pod_manager_get_pod_by_full_name(struct kc_pod_manager *m,
                                                       const char *full_name);
struct kc_api_pod *kc_pod_manager_get_pod_by_name(struct kc_pod_manager *m, const char *namespace,
                                                  const char *name);
/** GetPodByMirrorPod: the static pod a mirror pod stands for, or NULL. */
struct kc_api_pod *kc_pod_manager_get_pod_by_mirror_pod(struct kc_pod_manager *m,
                                                        const struct kc_api_pod *mirror);
/** GetMirrorPodByPod: the mirror of a static pod, or NULL. */
struct kc_api_pod *kc_pod_manager_get_mirror_pod_by_pod(struct kc_pod_manager *m,
                                                        const struct kc_api_pod *pod);
/**
 * GetPodAndMirrorPod: for a mirror pod, its static pod (*ret_pod, may be
 * NULL) and itself; for any other pod, itself and its mirror (may be NULL).
 * Returns true when the static pod is known (upstream's wasMirror flag is
 * @p pod->mirror_pod).
 */
bool kc_pod_manager_get_pod_and_mirror_pod(struct kc_pod_manager *m, struct kc_api_pod *pod,
                                           struct kc_api_pod **ret_pod,
                                           struct kc_api_pod **ret_mirror);
/** GetPods: every non-mirror pod, a malloc'd array of references. */
size_t kc_pod_manager_get_pods(struct kc_pod_manager *m, struct kc_api_pod ***ret);
/** GetOrphanedMirrorPodNames: full names of mirror pods without a static pod (malloc'd). */
size_t kc_pod_manager_get_orphaned_mirror_pod_names(struct kc_pod_manager *m, char ***ret);
/** TranslatePodUID: a mirror pod's UID becomes its static pod's; others map to themselves. */
char *kc_pod_manager_translate_pod_uid(struct kc_pod_manager *m, const char *uid);
