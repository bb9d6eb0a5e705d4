/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file core/memory.h
 * @brief Process memory: the malloc arena choice and the scavenger.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * Makes glibc's malloc use its main arena alone (mallopt M_ARENA_MAX 1),
 * the one whose free pages kc_memory_scavenge() can all hand back, so that
 * threads coming and going do not spread the heap over eight arenas per
 * CPU. A count the user set (MALLOC_ARENA_MAX, GLIBC_TUNABLES) is kept.
 * Call once, before the first thread starts.
 * @param ret_arenas 1, or 0 when the user's count is kept; may be NULL.
 * @return 0, or -EOPNOTSUPP when malloc is not glibc's (a sanitizer's, or an
 *         allocator such as jemalloc preloaded).
 */
int kc_memory_tune_process(unsigned *ret_arenas);

/**
 * Hands the free pages of every malloc arena back to the kernel
 * (malloc_trim), as Go's scavenger does for the upstream kubelet. Any
 * thread; takes each arena's lock in turn, briefly.
 */
void kc_memory_scavenge(void);
