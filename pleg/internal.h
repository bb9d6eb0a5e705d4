/* SPDX-License-Identifier: Apache-2.0 */
/* pleg/ internals, exposed for unit tests (tests/unit/pleg). */
#pragma once

#include "pleg/event.h"
#include "runtime/container.h"

struct kc_container_event;

/* plegContainerState (upstream generic.go). */
enum kc_pleg_container_state {
        KC_PLEG_STATE_RUNNING,
        KC_PLEG_STATE_EXITED,
        KC_PLEG_STATE_UNKNOWN,
        KC_PLEG_STATE_NON_EXISTENT,
        _KC_PLEG_STATE_MAX,
        _KC_PLEG_STATE_INVALID = -EINVAL,
};

/* An event before it is sent: its type and the container ID it is about
 * (borrowed from the pod snapshots it was computed from). */
struct kc_pleg_event_spec {
        enum kc_pleg_event_type type;
        const char *container_id;
};

/* convertState: created maps to unknown. */
enum kc_pleg_container_state kc__pleg_convert_state(enum kc_container_state s);

/* generateEvents for one container: writes 0, 1 or 2 event types. */
size_t kc__pleg_generate_events(enum kc_pleg_container_state old_state,
                                enum kc_pleg_container_state new_state,
                                enum kc_pleg_event_type out[static 2]);

/*
 * computeEvents over the container union of @old and @cur (either may be
 * NULL). Grows *buf (capacity *cap) as needed; *ret_n events are written.
 */
int kc__pleg_compute_events(const struct kc_pod *old, const struct kc_pod *cur,
                            struct kc_pleg_event_spec **buf, size_t *cap, size_t *ret_n);

/*
 * EventedPLEG's on_event callback (pleg/evented.c): copies @ev into the
 * internal buffer, or drops it when the buffer is full and asks the consumer
 * for a relist. Exposed so tests can fill the buffer while no consumer runs.
 */
void kc__evented_pleg_on_event(void *ud, const struct kc_container_event *ev);
