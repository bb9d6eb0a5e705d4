/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file runtime/instrumented.h
 * @brief instrumentedRuntimeService: a runtime service that records every call in the metrics.
 */
#pragma once

#include <errno.h>

#include "runtime/runtime_service.h"

struct kc_clock;
struct kc_kubelet_metrics;
struct kc_instrumented_runtime;

/**
 * Wraps @p inner (borrowed, must outlive the wrapper) so that every call
 * counts in kubelet_runtime_operations_total{operation_type}, observes its
 * duration (measured on @p clock) in
 * kubelet_runtime_operations_duration_seconds{operation_type} and, when it
 * fails, counts in kubelet_runtime_operations_errors_total{operation_type},
 * under upstream's operation names (instrumented_services.go: "version",
 * "list_podsandbox", "container_status", ...). Calls the inner service
 * lacks stay NULL in the wrapper's ops. Any thread, as the inner service.
 * @return 0, -EINVAL (no ops, metrics or clock) or -ENOMEM; *ret untouched
 * on failure.
 */
int kc_instrumented_runtime_new(struct kc_runtime_service inner, struct kc_kubelet_metrics *metrics,
                                struct kc_clock *clock, struct kc_instrumented_runtime **ret);
struct kc_instrumented_runtime *kc_instrumented_runtime_free(struct kc_instrumented_runtime *ir);
/** The wrapping service; valid while @p ir lives. */
struct kc_runtime_service kc_instrumented_runtime_service(struct kc_instrumented_runtime *ir);
