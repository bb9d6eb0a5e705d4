/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kubelet/runtime_helper.h
 * @brief The kubelet's kubecontainer.RuntimeHelper (upstream
 * kubelet_pods.go GenerateRunContainerOptions, makeEnvironmentVariables,
 * GeneratePodHostNameAndDomain; network/dns/dns.go GetPodDNS), which the
 * runtime manager calls while it builds sandbox and container configs.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"
#include "runtime/runtime_helper.h"

struct kc_kubelet_runtime_helper;

/** What the helper knows of the node; strings are copied. */
struct kc_kubelet_runtime_helper_config {
        const char *node_name;       /* spec.nodeName of pods that leave it empty */
        const char *const *node_ips; /* status.hostIP(s); at least one */
        size_t n_node_ips;
        /* Node allocatable, for resourceFieldRef of containers without a limit: cpu in
         * thousandths, memory and ephemeral in bytes; and the memory capacity (bytes).
         * All three allocatable 0: all four read from the machine (cadvisor's MachineInfo),
         * allocatable as /node reports it (capacity less the default --eviction-hard). */
        int64_t allocatable_milli_cpu;
        int64_t allocatable_memory;
        int64_t allocatable_ephemeral_storage;
        int64_t memory_capacity;
        /* --resolv-conf: NULL is upstream's default /etc/resolv.conf; "" reads none */
        const char *resolv_conf;
        const char *root_dir; /* --root-dir (pod directories); may be NULL */
};

/** @return 0, -EINVAL (no node IP), -ENOMEM. */
int kc_kubelet_runtime_helper_new(const struct kc_kubelet_runtime_helper_config *cfg,
                                  struct kc_kubelet_runtime_helper **ret);
struct kc_kubelet_runtime_helper *
kc_kubelet_runtime_helper_free(struct kc_kubelet_runtime_helper *h);
KC_DEFINE_CLEANUP_FUNC(struct kc_kubelet_runtime_helper, kc_kubelet_runtime_helper_free)

/** The node's memory capacity in bytes as the helper knows it (for kc_runtime_manager_set_machine()). */
int64_t kc_kubelet_runtime_helper_memory_capacity(const struct kc_kubelet_runtime_helper *h);

/**
 * The RuntimeHelper face for kc_runtime_manager_set_runtime_helper().
 * Thread contract: every op may run on several pod workers at once.
 */
struct kc_runtime_helper kc_kubelet_runtime_helper_get(struct kc_kubelet_runtime_helper *h);
