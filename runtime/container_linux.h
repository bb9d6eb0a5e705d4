/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: the Linux parts of generateContainerConfig and
 * generatePodSandboxConfig (upstream kuberuntime_container_linux.go,
 * kuberuntime_sandbox_linux.go, security_context.go and
 * pkg/securitycontext), shared by sync_pod.c and its unit tests.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/runtime_service.h"

struct kc_api_container;
struct kc_api_pod;
struct kc_arena;

/** The image's user as ImageStatus says it (getImageUser). */
struct kc__image_user {
        bool has_uid;
        int64_t uid;
        const char *username; /* NULL or "" when none */
};

/**
 * generateLinuxContainerResources: cpu shares from the request (else the
 * limit), quota and period 100000 from the limit, the memory limit, and
 * the OOM score adjustment for @p memory_capacity bytes of node memory.
 */
void kc__container_resources(const struct kc_api_pod *pod, const struct kc_api_container *c,
                             int64_t memory_capacity, struct kc_cri_linux_resources *ret);

/**
 * GetHugepageLimitsFromResources: one limit per huge page size of the host
 * (@p sizes, "2MB"...), the container's hugepages-<size> limit in bytes or
 * 0, in the arena. @return 0 or -ENOMEM.
 */
int kc__hugepage_limits(const struct kc_api_container *c, const char *const *sizes, size_t n_sizes,
                        struct kc_arena *a, const struct kc_cri_hugepage_limit **ret,
                        size_t *ret_n);

/**
 * HugePageUnitSizeFromByteSize: 2097152 -> "2MB", 1073741824 -> "1GB"
 * (units B, KB, MB, GB, TB, PB). @p buf of 32 bytes.
 */
void kc__hugepage_unit_size(uint64_t bytes, char buf[static 32]);

/**
 * The host's huge page sizes (libcontainer's HugePageSizes): the
 * "hugepages-<n>kB" entries of @p dir (/sys/kernel/mm/hugepages), as
 * kc__hugepage_unit_size() names them; none when @p dir cannot be read.
 * *@p ret is a malloc'd NULL-terminated array of malloc'd strings.
 * @return 0 or -ENOMEM.
 */
int kc__host_hugepage_sizes(const char *dir, char ***ret, size_t *ret_n);

/**
 * verifyRunAsNonRoot: 0, or -EPERM with *@p ret_msg (malloc'd) in
 * upstream's words. -ENOMEM.
 */
int kc__verify_run_as_non_root(const struct kc_api_pod *pod, const struct kc_api_container *c,
                               const struct kc__image_user *user, char **ret_msg);

/**
 * determineEffectiveSecurityContext: the pod's and the container's
 * security contexts merged (the container's fields win), the image's user
 * when neither sets runAsUser, namespaces, supplemental groups (fsGroup
 * first), no_new_privs, masked and read-only /proc paths, seccomp.
 * @p seccomp_root: where Localhost profiles live (<root-dir>/seccomp).
 * Arrays are allocated in @p a. @return 0 or -ENOMEM.
 */
int kc__container_security(const struct kc_api_pod *pod, const struct kc_api_container *c,
                           const struct kc__image_user *user, const char *seccomp_root,
                           struct kc_arena *a, struct kc_cri_container_security *ret);

/** NamespacesForPod: network and IPC pod or node; PID container, pod or node. */
struct kc_cri_namespace_options kc__namespaces_for_pod(const struct kc_api_pod *pod);

/**
 * generatePodSandboxLinuxConfig's security context and sysctls: privileged
 * when any container is, seccomp RuntimeDefault, the pod's runAsUser and
 * runAsGroup, namespaces, fsGroup and supplemental groups.
 * @return 0 or -ENOMEM.
 */
int kc__sandbox_security(const struct kc_api_pod *pod, struct kc_arena *a,
                         struct kc_cri_sandbox_security *ret, const struct kc_label **ret_sysctls,
                         size_t *ret_n_sysctls);

/**
 * The sandbox's port mappings: every port of every app container
 * (MakePortMappings), a port name used twice in one container dropped and
 * logged. @return 0 or -ENOMEM.
 */
int kc__make_port_mappings(const struct kc_api_pod *pod, struct kc_arena *a,
                           const struct kc_cri_port_mapping **ret, size_t *ret_n);
