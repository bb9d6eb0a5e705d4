/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file runtime/qos.h
 * @brief A pod's QoS class and what follows from it: the cgroup CPU shares
 * and quota, and the OOM score adjustment of each container.
 *
 * Upstream: pkg/apis/core/v1/helper/qos (GetPodQOS), pkg/kubelet/qos
 * (GetContainerOOMScoreAdjust) and pkg/kubelet/cm (MilliCPUToShares,
 * MilliCPUToQuota).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kc_api_container;
struct kc_api_pod;
struct kc_api_resource;

/** v1.PodQOSClass. */
enum kc_pod_qos {
        KC_POD_QOS_GUARANTEED,
        KC_POD_QOS_BURSTABLE,
        KC_POD_QOS_BEST_EFFORT,
        _KC_POD_QOS_MAX,
        _KC_POD_QOS_INVALID = -EINVAL,
};

/** "Guaranteed", "Burstable", "BestEffort". */
const char *kc_pod_qos_to_string(enum kc_pod_qos q);

/** cm's bounds: MinShares, MaxShares, the CFS period and the smallest quota (µs). */
#define KC_MIN_CPU_SHARES 2
#define KC_MAX_CPU_SHARES 262144
#define KC_CPU_QUOTA_PERIOD_US 100000
#define KC_MIN_CPU_QUOTA_US 1000

/** OOM score adjustments (pkg/kubelet/qos/policy.go). */
#define KC_GUARANTEED_OOM_SCORE_ADJ (-997)
#define KC_BEST_EFFORT_OOM_SCORE_ADJ 1000

/**
 * A resource of a list by name (v1.ResourceList lookup): true and its value
 * in thousandths in *@p ret_milli when present.
 */
bool kc_api_resource_get(const struct kc_api_resource *l, size_t n, const char *name,
                         int64_t *ret_milli);

/**
 * The container's request for @p name as the API server leaves it after v1
 * defaulting: the request, else the limit (a limit alone defaults the
 * request to it). False when neither is set.
 */
bool kc_container_request(const struct kc_api_container *c, const char *name, int64_t *ret_milli);

/** The container's limit for @p name; false when unset. */
bool kc_container_limit(const struct kc_api_container *c, const char *name, int64_t *ret_milli);

/**
 * GetPodQOS: over every init and app container, cpu and memory only;
 * nothing requested or limited: BestEffort; every container limiting both
 * and requests (summed) equal to limits (summed): Guaranteed; else
 * Burstable.
 */
enum kc_pod_qos kc_pod_qos_get(const struct kc_api_pod *pod);

/** MilliCPUToShares: 1024 per CPU, in [2, 262144]; 0 gives 2. */
int64_t kc_milli_cpu_to_shares(int64_t milli_cpu);

/** milliCPUToQuota: 0 for no limit, else milli x period / 1000, at least 1000 µs. */
int64_t kc_milli_cpu_to_quota(int64_t milli_cpu, int64_t period_us);

/**
 * GetContainerOOMScoreAdjust: node-critical pods and Guaranteed ones -997,
 * BestEffort 1000, Burstable 1000 - 1000 x memoryRequest / @p memory_capacity,
 * kept in [3, 999]. @p memory_capacity 0 (unknown) counts as no request.
 */
int kc_container_oom_score_adjust(const struct kc_api_pod *pod, const struct kc_api_container *c,
                                  int64_t memory_capacity);
