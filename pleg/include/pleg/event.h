/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file pleg/event.h
 * @brief PLEG events (PodLifecycleEvent).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum kc_pleg_event_type {
        KC_PLEG_CONTAINER_STARTED,
        KC_PLEG_CONTAINER_DIED,
        KC_PLEG_CONTAINER_REMOVED,
        KC_PLEG_POD_SYNC,
        KC_PLEG_CONTAINER_CHANGED,
        _KC_PLEG_EVENT_TYPE_MAX,
        _KC_PLEG_EVENT_TYPE_INVALID = -EINVAL,
};

/** Upstream names: "ContainerStarted", "ContainerDied", ... */
const char *kc_pleg_event_type_to_string(enum kc_pleg_event_type t);

/** PodLifecycleEvent. One allocation; free with kc_pleg_event_free(). */
struct kc_pleg_event {
        enum kc_pleg_event_type type;
        uint8_t block_class; /* the allocation's (kc_block_alloc); set by kc_pleg_event_new */
        const char *data;    /* container ID; "" for PodSync */
        char pod_id[];
};

/** @p data may be NULL (stored as ""). Returns NULL on ENOMEM. */
struct kc_pleg_event *kc_pleg_event_new(const char *pod_id, enum kc_pleg_event_type type,
                                        const char *data);
void kc_pleg_event_free(struct kc_pleg_event *e);
/** The kc_chan item destructor for PLEG channels. */
void kc_pleg_event_free_item(void *e);
