/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The v1 Node this kubelet would post (upstream pkg/kubelet/nodestatus
 * setters, kubelet_node_status.go), rendered for the read-only /node
 * endpoint: the addresses (NodeAddress), nodeInfo, capacity and allocatable
 * (MachineInfo, VersionInfo), the pressure conditions and the Ready
 * condition from runtimeErrors, networkErrors and storageErrors
 * (ReadyCondition). There is no API server, so nothing is posted; the
 * heartbeat is the render time, and syncNodeStatus's loop only keeps
 * Ready's transition time (docs/deviations.md D29).
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cancel.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "health/runtime_state.h"
#include "kubelet/node_status.h"
#include "kubelet/status/pod_status.h"
#include "machine_info.h"

/* GOARCH spelling of the build's architecture (kubernetes.io/arch). */
#if defined(__x86_64__)
#define KC_NODE_ARCH "amd64"
#elif defined(__aarch64__)
#define KC_NODE_ARCH "arm64"
#elif defined(__i386__)
#define KC_NODE_ARCH "386"
#else
#define KC_NODE_ARCH "unknown"
#endif

/* fastStatusUpdateOnce's tick, until the node is first ready. */
#define FAST_UPDATE_PERIOD (100 * KC_NSEC_PER_MSEC)
/* kubelet's default --max-pods. */
#define MAX_PODS "110"

struct kc_node_status {
        struct kc_node_status_config cfg;
        char *name, *ip, *runtime_version, *kubelet_version;
        struct kc_machine_info machine;
        int64_t created_ns;   /* the pressure conditions' transition time */
        pthread_mutex_t lock; /* guards the transition bookkeeping */
        bool ready;           /* the Ready status last seen */
        int64_t transition_ns;
        struct kc_cancel *stop; /* the loop, while it runs */
        pthread_t thread;
        int64_t period;
};

/* ReadyCondition: every error the kubelet knows, aggregated like upstream. */
static int not_ready_message(struct kc_runtime_state *s, char **ret)
{
        _cleanup_free_ char *rt = NULL, *net = NULL, *st = NULL;
        const char *msgs[3];
        int r;

        r = kc_runtime_state_runtime_errors(s, &rt);
        if (r >= 0)
                r = kc_runtime_state_network_errors(s, &net);
        if (r >= 0)
                r = kc_runtime_state_storage_errors(s, &st);
        if (r < 0)
                return r;
        msgs[0] = rt;
        msgs[1] = net;
        msgs[2] = st;
        return kc_aggregate_errors(msgs, 3, ret);
}

/* Looks at Ready now: its message (NULL when ready) and transition time. */
static int observe_ready(struct kc_node_status *n, int64_t now, char **ret_msg,
                         int64_t *ret_transition)
{
        char *msg = NULL;
        int r;

        r = not_ready_message(n->cfg.runtime_state, &msg);
        if (r < 0)
                return r;
        pthread_mutex_lock(&n->lock);
        if (n->ready != !msg) {
                n->ready = !msg;
                n->transition_ns = now;
        }
        if (ret_transition)
                *ret_transition = n->transition_ns;
        pthread_mutex_unlock(&n->lock);
        if (ret_msg)
                *ret_msg = msg;
        else
                free(msg);
        return 0;
}

int kc_node_status_new(const struct kc_node_status_config *cfg, struct kc_node_status **ret)
{
        _cleanup_(kc_node_status_freep) struct kc_node_status *n = NULL;
        int r;

        if (!cfg || !ret || !cfg->clock || !cfg->runtime_state || !cfg->node_name ||
            !cfg->node_name[0] || !cfg->node_ip)
                return -EINVAL;
        n = calloc(1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        pthread_mutex_init(&n->lock, NULL);
        n->cfg = *cfg;
        n->name = strdup(cfg->node_name);
        n->ip = strdup(cfg->node_ip);
        n->runtime_version = strdup(cfg->runtime_version ? cfg->runtime_version : "");
        n->kubelet_version = strdup(cfg->kubelet_version ? cfg->kubelet_version : "");
        if (!n->name || !n->ip || !n->runtime_version || !n->kubelet_version)
                return -ENOMEM;
        n->cfg.root_dir = n->cfg.host_root = NULL; /* not kept */
        r = kc__machine_info_read(cfg->host_root, cfg->root_dir, &n->machine);
        if (r < 0)
                return r;
        /* The first look: every condition's transition starts here. */
        n->created_ns = kc_clock_now(cfg->clock);
        n->ready = false;
        r = observe_ready(n, n->created_ns, NULL, NULL);
        if (r < 0)
                return r;
        n->transition_ns = n->created_ns;
        *ret = TAKE_PTR(n);
        return 0;
}

struct kc_node_status *kc_node_status_free(struct kc_node_status *n)
{
        if (!n)
                return NULL;
        kc_node_status_stop(n);
        pthread_mutex_destroy(&n->lock);
        kc__machine_info_done(&n->machine);
        free(n->name);
        free(n->ip);
        free(n->runtime_version);
        free(n->kubelet_version);
        free(n);
        return NULL;
}

int kc_node_status_sync(struct kc_node_status *n)
{
        if (!n)
                return -EINVAL;
        return observe_ready(n, kc_clock_now(n->cfg.clock), NULL, NULL);
}

/*
 * wait.Until: a look at once, then one a period after each; until the node
 * is first seen ready, one every 100 ms instead (fastStatusUpdateOnce), so
 * the first transition to Ready is caught when it happens.
 */
static void *loop_main(void *arg)
{
        struct kc_node_status *n = arg;
        bool seen_ready = false;

        do {
                (void)kc_node_status_sync(n);
                if (!seen_ready) {
                        pthread_mutex_lock(&n->lock);
                        seen_ready = n->ready;
                        pthread_mutex_unlock(&n->lock);
                }
        } while (kc_clock_sleep(n->cfg.clock, seen_ready ? n->period : FAST_UPDATE_PERIOD,
                                n->stop) == 0);
        return NULL;
}

int kc_node_status_start(struct kc_node_status *n, int64_t period_ns)
{
        int r;

        if (!n || period_ns <= 0)
                return -EINVAL;
        if (n->stop)
                return -EALREADY;
        r = kc_cancel_new(&n->stop);
        if (r < 0)
                return r;
        n->period = period_ns;
        r = -pthread_create(&n->thread, NULL, loop_main, n);
        if (r < 0)
                n->stop = kc_cancel_free(n->stop);
        return r;
}

void kc_node_status_stop(struct kc_node_status *n)
{
        if (!n || !n->stop)
                return;
        kc_cancel_trigger_mp(n->stop);
        pthread_join(n->thread, NULL);
        n->stop = kc_cancel_free(n->stop);
}

/* capacity (reserve false) or allocatable (true): keys in Go's sorted order. */
static json_t *resources(const struct kc_machine_info *m, bool reserve)
{
        uint64_t mem = m->memory_bytes, fs = m->ephemeral_bytes;
        char q[KC_QUANTITY_MAX], name[16 + KC_QUANTITY_MAX];
        json_t *o = json_object();

        if (reserve)
                kc__machine_allocatable(m, &mem, &fs);
        snprintf(q, sizeof(q), "%" PRIu64, m->cpus);
        if (!o || json_object_set_new(o, "cpu", json_string(q)) < 0)
                goto fail;
        kc__format_quantity_binary(fs, q);
        if (m->ephemeral_bytes && json_object_set_new(o, "ephemeral-storage", json_string(q)) < 0)
                goto fail;
        /* hugepages-1Gi sorts before hugepages-2Mi: larger pages first */
        for (size_t i = m->n_hugepages; i-- > 0;) {
                kc__format_quantity_binary(m->hugepages[i].page_bytes, q);
                snprintf(name, sizeof(name), "hugepages-%s", q);
                kc__format_quantity_binary(m->hugepages[i].total_bytes, q);
                if (json_object_set_new(o, name, json_string(q)) < 0)
                        goto fail;
        }
        kc__format_quantity_binary(mem, q);
        if (json_object_set_new(o, "memory", json_string(q)) < 0 ||
            json_object_set_new(o, "pods", json_string(MAX_PODS)) < 0)
                goto fail;
        return o;
fail:
        json_decref(o);
        return NULL;
}

/* One NodeCondition. */
static json_t *condition(const char *type, bool status, const char *reason, const char *message,
                         const char *heartbeat, int64_t transition_ns)
{
        char trans[KC_RFC3339_MAX];

        if (kc_format_rfc3339(transition_ns, trans) < 0)
                return NULL;
        return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", type, "status",
                         status ? "True" : "False", "lastHeartbeatTime", heartbeat,
                         "lastTransitionTime", trans, "reason", reason, "message", message);
}

/* MemoryPressure, DiskPressure, PIDPressure (never: no eviction manager), Ready. */
static json_t *conditions(const struct kc_node_status *n, const char *msg, int64_t now,
                          int64_t ready_transition)
{
        char hb[KC_RFC3339_MAX];

        if (kc_format_rfc3339(now, hb) < 0)
                return NULL;
        return json_pack("[o, o, o, o]",
                         condition("MemoryPressure", false, "KubeletHasSufficientMemory",
                                   "kubelet has sufficient memory available", hb, n->created_ns),
                         condition("DiskPressure", false, "KubeletHasNoDiskPressure",
                                   "kubelet has no disk pressure", hb, n->created_ns),
                         condition("PIDPressure", false, "KubeletHasSufficientPID",
                                   "kubelet has sufficient PID available", hb, n->created_ns),
                         condition("Ready", !msg, msg ? "KubeletNotReady" : "KubeletReady",
                                   msg ? msg : "kubelet is posting ready status", hb,
                                   ready_transition));
}

static json_t *node_info(const struct kc_node_status *n)
{
        const struct kc_machine_info *m = &n->machine;

        return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "machineID",
                         m->machine_id, "systemUUID", m->system_uuid, "bootID", m->boot_id,
                         "kernelVersion", m->kernel_version, "osImage", m->os_image,
                         "containerRuntimeVersion", n->runtime_version, "kubeletVersion",
                         n->kubelet_version, "kubeProxyVersion", n->kubelet_version,
                         "operatingSystem", "linux", "architecture", KC_NODE_ARCH);
}

int kc_node_status_render(void *userdata, char **ret_json)
{
        struct kc_node_status *n = userdata;
        _cleanup_free_ char *msg = NULL;
        int64_t now = kc_clock_now(n->cfg.clock), trans;
        json_t *node, *conds;
        char *out;
        int r;

        r = observe_ready(n, now, &msg, &trans);
        if (r < 0)
                return r;
        conds = conditions(n, msg, now, trans);
        if (!conds)
                return -ENOMEM;
        node = json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}}, s:{s:o, s:o, s:o, "
                         "s:[{s:s, s:s}, {s:s, s:s}], s:o}}",
                         "kind", "Node", "apiVersion", "v1", "metadata", "name", n->name, "labels",
                         "kubernetes.io/hostname", n->name, "kubernetes.io/os", "linux",
                         "kubernetes.io/arch", KC_NODE_ARCH, "status", "capacity",
                         resources(&n->machine, false), "allocatable", resources(&n->machine, true),
                         "conditions", conds, "addresses", "type", "InternalIP", "address", n->ip,
                         "type", "Hostname", "address", n->name, "nodeInfo", node_info(n));
        if (!node)
                return -ENOMEM;
        out = json_dumps(node, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        json_decref(node);
        if (!out)
                return -ENOMEM;
        *ret_json = out;
        return 0;
}
