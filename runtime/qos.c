/* SPDX-License-Identifier: Apache-2.0 */
/*
 * QoS class, CPU shares and quota, OOM score adjustment (upstream
 * pkg/apis/core/v1/helper/qos, pkg/kubelet/qos, pkg/kubelet/cm).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/enum_table.h"
#include "runtime/api_pod.h"
#include "runtime/api_spec.h"
#include "runtime/qos.h"

KC_DEFINE_STRING_TABLE(
        kc_pod_qos, enum kc_pod_qos, _KC_POD_QOS_MAX, [KC_POD_QOS_GUARANTEED] = "Guaranteed",
        [KC_POD_QOS_BURSTABLE] = "Burstable", [KC_POD_QOS_BEST_EFFORT] = "BestEffort")

/* types.IsCriticalPod's priority bound (scheduling.SystemCriticalPriority). */
#define SYSTEM_CRITICAL_PRIORITY 2000000000LL

bool kc_api_resource_get(const struct kc_api_resource *l, size_t n, const char *name,
                         int64_t *ret_milli)
{
        for (size_t i = 0; i < n; i++)
                if (l[i].name && strcmp(l[i].name, name) == 0) {
                        *ret_milli = l[i].q.milli;
                        return true;
                }
        return false;
}

bool kc_container_limit(const struct kc_api_container *c, const char *name, int64_t *ret_milli)
{
        return kc_api_resource_get(c->resources.limits, c->resources.n_limits, name, ret_milli);
}

bool kc_container_request(const struct kc_api_container *c, const char *name, int64_t *ret_milli)
{
        return kc_api_resource_get(c->resources.requests, c->resources.n_requests, name,
                                   ret_milli) ||
               kc_container_limit(c, name, ret_milli);
}

/* The sums GetPodQOS builds over the containers, for cpu [0] and memory [1]. */
struct qos_sums {
        int64_t req[2], lim[2];
        bool has_req[2], has_lim[2];
        bool guaranteed;
};

static void qos_add(struct qos_sums *s, const struct kc_api_container *c)
{
        static const char *const names[2] = { "cpu", "memory" };
        bool lim_found[2] = { false, false };
        int64_t v;

        for (int i = 0; i < 2; i++) {
                /* Only a positive quantity counts (isSupportedQoSComputeResource, Sign() == 1). */
                if (kc_container_request(c, names[i], &v) && v > 0) {
                        s->req[i] += v;
                        s->has_req[i] = true;
                }
                if (kc_container_limit(c, names[i], &v) && v > 0) {
                        s->lim[i] += v;
                        s->has_lim[i] = true;
                        lim_found[i] = true;
                }
        }
        if (!lim_found[0] || !lim_found[1])
                s->guaranteed = false;
}

enum kc_pod_qos kc_pod_qos_get(const struct kc_api_pod *pod)
{
        struct qos_sums s = { .guaranteed = true };
        size_t i;

        for (i = 0; i < pod->n_init_containers; i++)
                qos_add(&s, &pod->init_containers[i]);
        for (i = 0; i < pod->n_containers; i++)
                qos_add(&s, &pod->containers[i]);
        if (!s.has_req[0] && !s.has_req[1] && !s.has_lim[0] && !s.has_lim[1])
                return KC_POD_QOS_BEST_EFFORT;
        if (s.guaranteed)
                for (i = 0; i < 2; i++)
                        if (s.has_req[i] && (!s.has_lim[i] || s.lim[i] != s.req[i]))
                                s.guaranteed = false;
        /* Guaranteed also needs as many kinds requested as limited. */
        if (s.guaranteed && s.has_req[0] == s.has_lim[0] && s.has_req[1] == s.has_lim[1])
                return KC_POD_QOS_GUARANTEED;
        return KC_POD_QOS_BURSTABLE;
}

int64_t kc_milli_cpu_to_shares(int64_t milli_cpu)
{
        int64_t shares;

        if (milli_cpu <= 0)
                return KC_MIN_CPU_SHARES;
        if (milli_cpu > INT64_MAX / 1024)
                return KC_MAX_CPU_SHARES;
        shares = milli_cpu * 1024 / 1000;
        if (shares < KC_MIN_CPU_SHARES)
                return KC_MIN_CPU_SHARES;
        return shares > KC_MAX_CPU_SHARES ? KC_MAX_CPU_SHARES : shares;
}

int64_t kc_milli_cpu_to_quota(int64_t milli_cpu, int64_t period_us)
{
        int64_t quota;

        if (milli_cpu <= 0)
                return 0;
        if (__builtin_mul_overflow(milli_cpu, period_us, &quota))
                return INT64_MAX / 1000;
        quota /= 1000;
        return quota < KC_MIN_CPU_QUOTA_US ? KC_MIN_CPU_QUOTA_US : quota;
}

/* types.IsNodeCriticalPod: a critical pod (static, mirror or priority >= 2e9) of class system-node-critical. */
static bool node_critical(const struct kc_api_pod *pod)
{
        bool critical = pod->static_pod || pod->mirror_pod ||
                        (pod->priority.set && pod->priority.v >= SYSTEM_CRITICAL_PRIORITY);

        return critical && pod->priority_class_name &&
               strcmp(pod->priority_class_name, "system-node-critical") == 0;
}

/* A quantity's Value(): whole units, rounded up. */
static int64_t whole_units(int64_t milli)
{
        return milli / 1000 + (milli % 1000 > 0);
}

static int64_t memory_request(const struct kc_api_container *c)
{
        int64_t v = 0;

        return kc_container_request(c, "memory", &v) ? whole_units(v) : 0;
}

static bool is_sidecar(const struct kc_api_pod *pod, const struct kc_api_container *c)
{
        return c->restart_policy_always && c >= pod->init_containers &&
               c < pod->init_containers + pod->n_init_containers;
}

/* 1000 - 1000 x request / capacity, without overflow (a request above capacity goes negative). */
static int64_t burstable_adj(int64_t request, int64_t capacity)
{
        __int128 p = (__int128)1000 * request / capacity;

        return p > 2000 ? -1000 : 1000 - (int64_t)p;
}

int kc_container_oom_score_adjust(const struct kc_api_pod *pod, const struct kc_api_container *c,
                                  int64_t memory_capacity)
{
        int64_t adj, min_req = INT64_MAX;
        size_t i;

        if (node_critical(pod))
                return KC_GUARANTEED_OOM_SCORE_ADJ;
        switch (kc_pod_qos_get(pod)) {
        case KC_POD_QOS_GUARANTEED:
                return KC_GUARANTEED_OOM_SCORE_ADJ;
        case KC_POD_QOS_BEST_EFFORT:
                return KC_BEST_EFFORT_OOM_SCORE_ADJ;
        default:
                break;
        }
        if (memory_capacity <= 0)
                return KC_BEST_EFFORT_OOM_SCORE_ADJ - 1;
        adj = burstable_adj(memory_request(c), memory_capacity);
        /* A sidecar goes no higher than the app container with the smallest request. */
        if (is_sidecar(pod, c)) {
                for (i = 0; i < pod->n_containers; i++) {
                        int64_t r = memory_request(&pod->containers[i]);

                        min_req = r < min_req ? r : min_req;
                }
                if (pod->n_containers == 0)
                        min_req = 0;
                if (adj > burstable_adj(min_req, memory_capacity))
                        adj = burstable_adj(min_req, memory_capacity);
        }
        if (adj < 1000 + KC_GUARANTEED_OOM_SCORE_ADJ)
                return 1000 + KC_GUARANTEED_OOM_SCORE_ADJ;
        if (adj == KC_BEST_EFFORT_OOM_SCORE_ADJ)
                return (int)adj - 1;
        return (int)adj;
}
