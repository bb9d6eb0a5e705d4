/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file health/runtime_state.h
 * @brief runtimeState (pkg/kubelet/runtime.go): the aggregated health checks.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"

struct kc_clock;

/**
 * @brief Formats messages like apimachinery's utilerrors.NewAggregate(...)
 * .Error(): NULL entries are skipped (nil errors), repeated messages are
 * shown once, a single remaining message is returned as is and several are
 * joined as "[a, b, c]".
 * @return 0 and *ret set to NULL (no message) or a malloc'd string; -ENOMEM
 * with *ret unchanged.
 */
int kc_aggregate_errors(const char *const *msgs, size_t n, char **ret);

/**
 * Health of the container runtime as the sync loop sees it. Every call is
 * thread-safe (an rwlock guards the fields); kc_runtime_state_free() needs
 * exclusive access.
 */
struct kc_runtime_state;

/** upstream ErrNetworkUnknown: the network error a new runtime state starts with. */
#define KC_RUNTIME_NETWORK_UNKNOWN "network state unknown"

/**
 * A health check: returns true when healthy. When unhealthy it may set
 * *ret_err to a malloc'd message (ownership passes to the caller) or leave
 * it NULL, which is reported as "<nil>" as Go's %v prints a nil error.
 * Called without any runtime-state lock held, on the thread calling
 * kc_runtime_state_runtime_errors(); it may call back into the state.
 */
typedef bool (*kc_health_check_fn)(void *userdata, char **ret_err);

/**
 * @param clock used for "now"; must outlive the state.
 * @param base_runtime_sync_threshold_ns how old the last successful runtime
 * status poll may get before the runtime counts as down (kubelet: 30 s,
 * maxWaitForContainerRuntime). Must be > 0 (-EINVAL).
 * @return 0 and *ret, -EINVAL or -ENOMEM (*ret unchanged).
 */
int kc_runtime_state_new(struct kc_clock *clock, int64_t base_runtime_sync_threshold_ns,
                         struct kc_runtime_state **ret);
/** NULL-safe; returns NULL. No concurrent users. */
struct kc_runtime_state *kc_runtime_state_free(struct kc_runtime_state *s);
KC_DEFINE_CLEANUP_FUNC(struct kc_runtime_state, kc_runtime_state_free)

/**
 * Any thread. Appends a check; checks run in registration order (kubelet:
 * "PLEG", then "EventedPLEG"). @p name is copied; @p userdata is borrowed
 * and must outlive the state. Checks cannot be removed.
 * @return 0 or -ENOMEM (nothing registered).
 */
int kc_runtime_state_add_health_check(struct kc_runtime_state *s, const char *name,
                                      kc_health_check_fn fn, void *userdata);

/** Any thread. Records a successful runtime status poll at @p t_ns (clock time). */
void kc_runtime_state_set_runtime_sync(struct kc_runtime_state *s, int64_t t_ns);

/**
 * Any thread. Replace the network / runtime / storage error with a copy of
 * @p err; NULL clears it.
 * @return 0 or -ENOMEM (the previous error is kept).
 */
int kc_runtime_state_set_network_state(struct kc_runtime_state *s, const char *err);
int kc_runtime_state_set_runtime_state(struct kc_runtime_state *s, const char *err);
int kc_runtime_state_set_storage_state(struct kc_runtime_state *s, const char *err);

/**
 * Any thread. Aggregates, in this order: "container runtime status check
 * may not have completed yet" before the first runtime sync, or "container
 * runtime is down" once now >= last sync + threshold; "<name> is not
 * healthy: <err>" for each failing check; the runtime error if set.
 * Network and storage errors are never included.
 * @return 0 and *ret NULL (healthy) or a malloc'd message; -ENOMEM (*ret
 * unchanged).
 */
int kc_runtime_state_runtime_errors(struct kc_runtime_state *s, char **ret);
/** Any thread. Only the network error (initially KC_RUNTIME_NETWORK_UNKNOWN). Same returns. */
int kc_runtime_state_network_errors(struct kc_runtime_state *s, char **ret);
/** Any thread. Only the storage error. Same returns. */
int kc_runtime_state_storage_errors(struct kc_runtime_state *s, char **ret);
