/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The v1 Node this kubelet would post (upstream pkg/kubelet/nodestatus
 * setters, kubelet_node_status.go), rendered for the read-only /node
 * endpoint: the Ready condition from runtimeErrors, networkErrors and
 * storageErrors (ReadyCondition), the addresses and the node info. There is
 * no API server, so nothing is posted; the heartbeat is the render time.
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/cleanup.h"
#include "core/clock.h"
#include "health/runtime_state.h"
#include "kubelet/node_status.h"
#include "kubelet/status/pod_status.h"

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

struct kc_node_status {
        struct kc_node_status_config cfg;
        char *name, *ip, *runtime_version, *kubelet_version;
        pthread_mutex_t lock; /* guards the transition bookkeeping */
        int ready;            /* -1: never rendered; else the last Ready status */
        int64_t transition_ns;
};

int kc_node_status_new(const struct kc_node_status_config *cfg, struct kc_node_status **ret)
{
        _cleanup_(kc_node_status_freep) struct kc_node_status *n = NULL;

        if (!cfg || !ret || !cfg->clock || !cfg->runtime_state || !cfg->node_name ||
            !cfg->node_name[0] || !cfg->node_ip)
                return -EINVAL;
        n = calloc(1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        pthread_mutex_init(&n->lock, NULL);
        n->ready = -1;
        n->cfg = *cfg;
        n->name = strdup(cfg->node_name);
        n->ip = strdup(cfg->node_ip);
        n->runtime_version = strdup(cfg->runtime_version ? cfg->runtime_version : "");
        n->kubelet_version = strdup(cfg->kubelet_version ? cfg->kubelet_version : "");
        if (!n->name || !n->ip || !n->runtime_version || !n->kubelet_version)
                return -ENOMEM;
        *ret = TAKE_PTR(n);
        return 0;
}

struct kc_node_status *kc_node_status_free(struct kc_node_status *n)
{
        if (!n)
                return NULL;
        pthread_mutex_destroy(&n->lock);
        free(n->name);
        free(n->ip);
        free(n->runtime_version);
        free(n->kubelet_version);
        free(n);
        return NULL;
}

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

int kc_node_status_render(void *userdata, char **ret_json)
{
        struct kc_node_status *n = userdata;
        _cleanup_free_ char *msg = NULL;
        char now_s[KC_RFC3339_MAX], trans_s[KC_RFC3339_MAX];
        int64_t now = kc_clock_now(n->cfg.clock), trans;
        json_t *node;
        bool ready;
        char *out;
        int r;

        r = not_ready_message(n->cfg.runtime_state, &msg);
        if (r < 0)
                return r;
        ready = !msg;
        pthread_mutex_lock(&n->lock);
        if (n->ready != (int)ready) {
                n->ready = ready;
                n->transition_ns = now;
        }
        trans = n->transition_ns;
        pthread_mutex_unlock(&n->lock);
        if (kc_format_rfc3339(now, now_s) < 0 || kc_format_rfc3339(trans, trans_s) < 0)
                return -EINVAL;

        node = json_pack(
                "{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}}, s:{s:[{s:s, s:s, s:s, s:s, s:s, s:s}], "
                "s:[{s:s, s:s}, {s:s, s:s}], s:{s:s, s:s, s:s, s:s}}}",
                "kind", "Node", "apiVersion", "v1", "metadata", "name", n->name, "labels",
                "kubernetes.io/hostname", n->name, "kubernetes.io/os", "linux",
                "kubernetes.io/arch", KC_NODE_ARCH, "status", "conditions", "type", "Ready",
                "status", ready ? "True" : "False", "reason",
                ready ? "KubeletReady" : "KubeletNotReady", "message",
                ready ? "kubelet is posting ready status" : msg, "lastHeartbeatTime", now_s,
                "lastTransitionTime", trans_s, "addresses", "type", "InternalIP", "address", n->ip,
                "type", "Hostname", "address", n->name, "nodeInfo", "kubeletVersion",
                n->kubelet_version, "containerRuntimeVersion", n->runtime_version,
                "operatingSystem", "linux", "architecture", KC_NODE_ARCH);
        if (!node)
                return -ENOMEM;
        out = json_dumps(node, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        json_decref(node);
        if (!out)
                return -ENOMEM;
        *ret_json = out;
        return 0;
}
