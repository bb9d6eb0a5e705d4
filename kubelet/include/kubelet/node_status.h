/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kubelet/node_status.h
 * @brief Node status (pkg/kubelet/nodestatus): the v1 Node for /node.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"

struct kc_clock;
struct kc_runtime_state;

struct kc_node_status_config {
        struct kc_clock *clock;                 /* borrowed */
        struct kc_runtime_state *runtime_state; /* borrowed */
        const char *node_name;                  /* copied */
        const char *node_ip;                    /* copied */
        const char *runtime_version;            /* "<runtime name>://<version>", copied */
        const char *kubelet_version;            /* copied */
};

/**
 * The node as the kubelet would report it. Its Ready condition is "True"
 * (reason KubeletReady, "kubelet is posting ready status") when
 * runtimeErrors, networkErrors and storageErrors are all clear, else
 * "False" (KubeletNotReady) with their aggregated message (ReadyCondition).
 * lastTransitionTime is when a render first saw the current Ready status.
 */
struct kc_node_status;

int kc_node_status_new(const struct kc_node_status_config *cfg, struct kc_node_status **ret);
struct kc_node_status *kc_node_status_free(struct kc_node_status *n);
KC_DEFINE_CLEANUP_FUNC(struct kc_node_status, kc_node_status_free)

/**
 * A kc_http_render_fn (userdata: the kc_node_status): the v1 Node as JSON.
 * Any thread, concurrently.
 */
int kc_node_status_render(void *userdata, char **ret_json);
