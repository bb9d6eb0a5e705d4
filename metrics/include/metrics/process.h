/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file metrics/process.h
 * @brief The process_* metrics of the Go client's process collector, read from /proc.
 */
#pragma once

#include <errno.h>

struct kc_metrics_registry;

/**
 * Registers process_cpu_seconds_total, process_open_fds, process_max_fds,
 * process_virtual_memory_bytes, process_resident_memory_bytes and
 * process_start_time_seconds in @p r, with the Go client's help texts, and
 * a collector that refreshes them at every render, as the Go client's
 * process collector reads them at every scrape: from <proc>/self/stat,
 * <proc>/self/fd, <proc>/self/limits and <proc>/stat (btime), where <proc>
 * is @p proc_root, NULL meaning "/proc" (tests pass a fake tree). A value
 * that cannot be read keeps its last one. @p proc_root is copied; the
 * state lives as long as @p r.
 * @return 0, -EEXIST, -EINVAL or -ENOMEM (metrics registered before the
 * failure stay in @p r).
 */
int kc_process_metrics_register(struct kc_metrics_registry *r, const char *proc_root);
