/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file runtime/runtime_helper.h
 * @brief kubecontainer.RuntimeHelper: what the runtime manager asks the
 * kubelet while it builds a sandbox's or a container's CRI config.
 *
 * The kubelet (tier 5) implements it: environment variables, volume mounts,
 * the managed /etc/hosts, the pod's DNS, hostname and directories. The
 * runtime manager (tier 2) only calls it, so the dependency points down.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/runtime_service.h"

struct kc_api_container;
struct kc_api_pod;
struct kc_arena;

/**
 * kubecontainer.RunContainerOptions, the parts cubelet uses. Everything
 * lives in @p arena, which the caller frees.
 */
struct kc_run_container_options {
        const struct kc_label *envs; /* name, value: already expanded */
        size_t n_envs;
        const struct kc_cri_mount *mounts;
        size_t n_mounts;
        const char *pod_container_dir; /* <root-dir>/pods/<uid>/containers/<name> (may be NULL) */
        const char *hostname;          /* may be NULL */
};

struct kc_runtime_helper_ops {
        /**
         * GenerateRunContainerOptions for @p c of @p pod, with the pod's IPs
         * (the first is status.podIP; none before the sandbox has one).
         * Allocates in @p a. On failure *@p ret_msg (malloc'd) says why in
         * upstream's words; the runtime manager reports it as
         * CreateContainerConfigError.
         * @return 0 or -errno; out-parameters untouched on failure.
         */
        int (*generate_run_container_options)(void *self, const struct kc_api_pod *pod,
                                              const struct kc_api_container *c,
                                              const char *const *pod_ips, size_t n_pod_ips,
                                              struct kc_arena *a,
                                              struct kc_run_container_options *ret, char **ret_msg);
        /**
         * GetPodDNS: the sandbox's DNS config. *@p ret_set false: none (the
         * runtime's default). Allocates in @p a.
         */
        int (*get_pod_dns)(void *self, const struct kc_api_pod *pod, struct kc_arena *a,
                           struct kc_cri_dns_config *ret, bool *ret_set, char **ret_msg);
        /**
         * GeneratePodHostNameAndDomain: hostname (spec.hostname, else the
         * pod name, truncated to 63 bytes as upstream) and domain
         * ("<subdomain>.<ns>.svc.<cluster-domain>", or NULL). In @p a.
         */
        int (*generate_pod_hostname_and_domain)(void *self, const struct kc_api_pod *pod,
                                                struct kc_arena *a, const char **ret_hostname,
                                                const char **ret_domain, char **ret_msg);
};

/** A runtime helper: ops NULL means none (the manager then adds nothing). */
struct kc_runtime_helper {
        const struct kc_runtime_helper_ops *ops;
        void *self;
};
