/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kubelet/config/pod_update.h
 * @brief kubetypes.PodOperation and PodUpdate: what config sources send.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kc_api_pod;

/** kubetypes.PodOperation. */
enum kc_pod_op {
        KC_POD_OP_SET,
        KC_POD_OP_ADD,
        KC_POD_OP_DELETE,
        KC_POD_OP_REMOVE,
        KC_POD_OP_UPDATE,
        KC_POD_OP_RECONCILE,
        _KC_POD_OP_MAX,
        _KC_POD_OP_INVALID = -EINVAL,
};

/** "SET", "ADD", "DELETE", "REMOVE", "UPDATE", "RECONCILE". */
const char *kc_pod_op_to_string(enum kc_pod_op op);

/**
 * kubetypes.PodUpdate: what a config source sends on the config channel.
 * One allocation owning its pod references; free with kc_pod_update_free().
 */
struct kc_pod_update {
        enum kc_pod_op op;
        const char *source; /* "file", "api", ... */
        size_t n_pods;
        struct kc_api_pod *pods[]; /* one reference each */
};

/** Takes a new reference to each of @p pods. NULL on ENOMEM. */
struct kc_pod_update *kc_pod_update_new(enum kc_pod_op op, const char *source,
                                        struct kc_api_pod *const *pods, size_t n_pods);
void kc_pod_update_free(struct kc_pod_update *u);
/** The kc_chan item destructor for config channels. */
void kc_pod_update_free_item(void *u);
