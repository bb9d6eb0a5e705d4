/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kubelet/kubelet_pods.h
 * @brief The /pods document (kubelet_pods.go GetPods): the pod manager's pods with their statuses.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kc_pod_manager;
struct kc_status_manager;

/**
 * @brief The /pods document: a v1 PodList {kind "PodList", apiVersion "v1",
 * metadata {}, items} of the pod manager's (non-mirror) pods, sorted by
 * namespace, then name (then UID), each built by kc_api_pod_to_json() with
 * its stored status, or {"phase": "Pending"} when the status manager has
 * none. Compact JSON, UTF-8.
 *
 * Safe from any thread (HTTP threads call it): it works on snapshots of
 * both managers (pod references, status copies), taken pod by pod.
 * @param node_name spec.nodeName of every item; may be NULL.
 * @param ret_json on success a malloc'd NUL-terminated string; untouched on
 *        failure.
 * @return 0, -EINVAL or -ENOMEM.
 */
int kc_render_pod_list(struct kc_pod_manager *pm, struct kc_status_manager *sm,
                       const char *node_name, char **ret_json);
