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
#include "core/clock.h"

struct kc_clock;
struct kc_runtime_state;

struct kc_node_status_config {
        struct kc_clock *clock;                 /* borrowed */
        struct kc_runtime_state *runtime_state; /* borrowed */
        const char *node_name;                  /* copied */
        const char *node_ip;                    /* copied */
        const char *runtime_version;            /* "<runtime name>://<version>", copied */
        const char *kubelet_version;            /* copied */
        const char *root_dir;  /* --root-dir: its filesystem is ephemeral-storage; copied */
        const char *host_root; /* prefix of /etc, /proc and /sys (tests); NULL: "/" */
};

/** nodeStatusUpdateFrequency: how often the node status loop looks at the node. */
#define KC_NODE_STATUS_UPDATE_FREQUENCY (10 * KC_NSEC_PER_SEC)

/**
 * The node as the kubelet would report it. Its Ready condition is "True"
 * (reason KubeletReady, "kubelet is posting ready status") when
 * runtimeErrors, networkErrors and storageErrors are all clear, else
 * "False" (KubeletNotReady) with their aggregated message (ReadyCondition).
 * Its lastTransitionTime is when Ready last changed: set when the node
 * status is built, moved only when a look at the node (the node status
 * loop's, or a render's) finds the status flipped. nodeInfo, capacity and
 * allocatable describe the machine, read once when it is built (MachineInfo,
 * VersionInfo).
 */
struct kc_node_status;

int kc_node_status_new(const struct kc_node_status_config *cfg, struct kc_node_status **ret);
/** Stops the loop if it runs, then frees. NULL-safe; returns NULL. */
struct kc_node_status *kc_node_status_free(struct kc_node_status *n);
KC_DEFINE_CLEANUP_FUNC(struct kc_node_status, kc_node_status_free)

/**
 * syncNodeStatus, once: looks at the Ready status and records a flip with
 * the current time. Any thread.
 */
int kc_node_status_sync(struct kc_node_status *n);

/**
 * The node status loop: kc_node_status_sync() every @p period_ns on a thread
 * of its own until kc_node_status_stop(); every 100 ms until it first sees
 * the node ready (fastStatusUpdateOnce). -EALREADY when it runs.
 */
int kc_node_status_start(struct kc_node_status *n, int64_t period_ns);
/** Stops and joins the loop's thread; nothing when it does not run. */
void kc_node_status_stop(struct kc_node_status *n);

/**
 * A kc_http_render_fn (userdata: the kc_node_status): the v1 Node as JSON.
 * Any thread, concurrently.
 */
int kc_node_status_render(void *userdata, char **ret_json);
