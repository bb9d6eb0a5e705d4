/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kubelet/runtime_up.h
 * @brief Runtime status polling (kubelet.go: updateRuntimeUp).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"
#include "runtime/runtime_service.h"

struct kc_clock;
struct kc_runtime_state;

/** The updateRuntimeUp period. */
#define KC_RUNTIME_UP_PERIOD (5 * KC_NSEC_PER_SEC)

/**
 * updateRuntimeUp, once: asks the runtime for its Status and records it in
 * @p state. A failed call changes nothing. A missing or false NetworkReady
 * sets the network error "container runtime network not ready: <cond>"; a
 * missing or false RuntimeReady sets the runtime error "container runtime
 * not ready: <cond>" and stops there, so the runtime-sync time is not
 * refreshed; otherwise the runtime error is cleared and the sync time set
 * to now. <cond> is "NetworkReady=false reason:R message:M" or "<nil>".
 * Any thread. Returns the Status call's error, or 0.
 */
int kc_update_runtime_up(struct kc_runtime_state *state, struct kc_runtime_service svc,
                         struct kc_clock *clock);

/** A thread calling kc_update_runtime_up() at once and then every @p period_ns. */
struct kc_runtime_up_poller;

int kc_runtime_up_poller_start(struct kc_runtime_state *state, struct kc_runtime_service svc,
                               struct kc_clock *clock, int64_t period_ns,
                               struct kc_runtime_up_poller **ret);
/** Stops and joins the thread. NULL-safe; returns NULL. */
struct kc_runtime_up_poller *kc_runtime_up_poller_stop(struct kc_runtime_up_poller *p);
