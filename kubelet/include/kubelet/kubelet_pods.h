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

#include "core/cleanup.h"

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
 * both managers (pod references, status copies), taken pod by pod. The
 * text is the concatenation of what a kc_pod_list_stream gives.
 * @param node_name spec.nodeName of every item; may be NULL.
 * @param ret_json on success a malloc'd NUL-terminated string; untouched on
 *        failure.
 * @return 0, -EINVAL or -ENOMEM.
 */
int kc_render_pod_list(struct kc_pod_manager *pm, struct kc_status_manager *sm,
                       const char *node_name, char **ret_json);

/**
 * @brief The /pods document of kc_render_pod_list(), written piece by piece
 * so that the whole list never exists at once (as a tree or as text): the
 * HTTP server sends each piece as it comes.
 *
 * The pod list is taken (references to the pod manager's pods, sorted) when
 * the stream opens; each pod's status is read when its turn comes, so a pod
 * that changes meanwhile shows either status, never a mix. A stream is used
 * by one thread at a time; the managers must outlive it.
 */
struct kc_pod_list_stream;

/**
 * Opens a stream over the pod manager's pods now.
 * @return 0 and *ret, -EINVAL or -ENOMEM (*ret untouched).
 */
int kc_pod_list_stream_open(struct kc_pod_manager *pm, struct kc_status_manager *sm,
                            const char *node_name, struct kc_pod_list_stream **ret);

/**
 * The next piece of the document: the list's head with the first pod, one
 * pod, or the list's tail; *ret_len is 0 once everything was given.
 * *ret_data stays valid until the next call or the close.
 * @return 0, -EINVAL or -ENOMEM (the document is then unusable).
 */
int kc_pod_list_stream_next(struct kc_pod_list_stream *st, const char **ret_data, size_t *ret_len);

/** Frees the stream and its pod references. NULL-safe; returns NULL. */
struct kc_pod_list_stream *kc_pod_list_stream_close(struct kc_pod_list_stream *st);
KC_DEFINE_CLEANUP_FUNC(struct kc_pod_list_stream, kc_pod_list_stream_close)
