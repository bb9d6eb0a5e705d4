/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: the kubelet's pod directories and its small volume manager
 * (upstream kubelet_getters.go, kubelet_pods.go makePodDataDirs,
 * cleanupOrphanedPodDirs, makeMounts, makeHostsMount; volumemanager
 * WaitForAttachAndMount; pkg/volume/hostpath and pkg/volume/emptydir).
 *
 * Layout under --root-dir, as upstream:
 *   <root>/pods/<uid>/                        makePodDataDirs (0750)
 *   <root>/pods/<uid>/volumes/kubernetes.io~empty-dir/<name>   emptyDir (0777)
 *   <root>/pods/<uid>/plugins/
 *   <root>/pods/<uid>/etc-hosts               the managed /etc/hosts
 *
 * The manager keeps no per-pod state: what is mounted is read back from the
 * filesystem, so every call is idempotent and pod workers may call it
 * concurrently for different pods; housekeeping (the syncLoop thread) removes
 * the directories of pods nobody works on any more.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"
#include "runtime/runtime_service.h"

struct kc_api_container;
struct kc_api_pod;
struct kc_arena;

/* The CRI mount name of the managed /etc/hosts (upstream's). */
#define KC_MANAGED_ETC_HOSTS_NAME "k8s-managed-etc-hosts"
#define KC_EMPTY_DIR_PLUGIN_DIR "kubernetes.io~empty-dir"

struct kc_volume_manager_config {
        const char *root_dir; /* --root-dir; copied */
        /* Node allocatable memory: the size of a Memory emptyDir without a
         * smaller limit. 0: the machine's physical memory. */
        uint64_t node_memory_bytes;
        /* The node's hosts file, copied for hostNetwork pods; NULL: /etc/hosts. */
        const char *node_hosts_file;
};

struct kc_volume_manager;

/** @return 0, -EINVAL (no root dir) or -ENOMEM; *ret unchanged on failure. */
int kc__volume_manager_new(const struct kc_volume_manager_config *cfg,
                           struct kc_volume_manager **ret);
struct kc_volume_manager *kc__volume_manager_free(struct kc_volume_manager *vm);
KC_DEFINE_CLEANUP_FUNC(struct kc_volume_manager, kc__volume_manager_free)

/**
 * <root>/pods/<uid> (getPodDir), malloc'd in *@p ret. -EINVAL for a UID
 * that is not one path component.
 */
int kc__volume_manager_pod_dir(const struct kc_volume_manager *vm, const char *uid, char **ret);

/**
 * getPodContainerDir, made (0750, as GenerateRunContainerOptions does):
 * <root>/pods/<uid>/containers/<name>, malloc'd in *@p ret. -EINVAL for a
 * UID or name that is not one path component; -errno of mkdir.
 */
int kc__make_pod_container_dir(const struct kc_volume_manager *vm, const char *uid,
                               const char *name, char **ret);

/** The node's hosts file (kc_volume_manager_config.node_hosts_file). */
const char *kc__volume_manager_node_hosts_file(const struct kc_volume_manager *vm);

/**
 * makePodDataDirs: the pod's directory, volumes/ and plugins/ (0750).
 * @return 0 or -errno.
 */
int kc__make_pod_data_dirs(const struct kc_volume_manager *vm, const struct kc_api_pod *pod);

/**
 * WaitForAttachAndMount, synchronously: sets up every volume a container
 * of @p pod mounts (hostPath type checks and creation, emptyDir directories,
 * tmpfs for medium Memory). Volumes no container mounts are left alone, as
 * upstream's populator does. Volumes that need the API server or a volume
 * plugin (secret, configMap, projected, downwardAPI, PVC, csi, ...) are
 * never set up: the call fails for as long as a container mounts one
 * (D42). On failure *@p ret_msg (malloc'd) is upstream's
 * "unmounted volumes=[...], unattached volumes=[...], failed to process
 * volumes=[...]: <why>" and each failed volume was logged with the pod.
 * @return 0 or -errno (-EAGAIN when the pod has to wait).
 */
int kc__wait_for_attach_and_mount(const struct kc_volume_manager *vm, const struct kc_api_pod *pod,
                                  char **ret_msg);

/**
 * cleanupOrphanedPodDirs: for every pod directory whose UID is not in
 * @p keep (desired pods, pods the workers still work on, runtime pods),
 * unmounts its tmpfs emptyDirs, then removes the directory without
 * following symlinks and without crossing into another filesystem (a
 * directory still mounted stays, for the next pass).
 * @return how many pod directories were removed, or -errno when the pods
 * directory cannot be read.
 */
int kc__cleanup_orphaned_pod_dirs(const struct kc_volume_manager *vm, const char *const *keep,
                                  size_t n_keep);

/**
 * makeMounts: the CRI mounts of container @p c of @p pod: one per
 * volumeMount (the volume's host path, subPath or subPathExpr below it,
 * readOnly, propagation), then the managed /etc/hosts (written to
 * <pod dir>/etc-hosts) unless the pod has no IP yet or the container mounts
 * /etc/hosts itself. @p envs (the container's expanded environment) serve
 * subPathExpr. Everything is allocated in @p a. On failure *@p ret_msg
 * (malloc'd) is upstream's text; the runtime manager reports it as
 * CreateContainerConfigError.
 * @return 0 or -errno; out-parameters untouched on failure.
 */
int kc__make_mounts(const struct kc_volume_manager *vm, const struct kc_api_pod *pod,
                    const struct kc_api_container *c, const char *hostname, const char *domain,
                    const char *const *pod_ips, size_t n_pod_ips, const struct kc_label *envs,
                    size_t n_envs, struct kc_arena *a, const struct kc_cri_mount **ret,
                    size_t *ret_n, char **ret_msg);
