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

#include "core/cleanup.h"

struct kc_clock;

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
 * Turns glibc's per-thread caches of free blocks (tcache) off for the
 * process, by executing the program again (/proc/self/exe, the same
 * @p argv) with glibc.malloc.tcache_count=0 added to GLIBC_TUNABLES: glibc
 * reads its tunables only when a program starts. Each thread's cache keeps
 * up to seven free blocks of each of 64 sizes, which no other thread can
 * reuse; with the hundreds of threads the pod-worker pool starts, those
 * blocks and the holes they leave in the heap were 13 MB at 5,000 pods
 * (docs/benchmarks.md, issue 18). Go's runtime caches per CPU, not per
 * goroutine. Call first thing in main(), before any thread starts.
 * @return only when nothing is executed: 0 when the count is set already
 *         (by the user, or by the execution before), -EOPNOTSUPP when
 *         malloc is not glibc's, a library is preloaded (valgrind's, an
 *         allocator) or the program runs set-uid (AT_SECURE),
 *         -EINVAL (no @p argv), or the -errno of execv().
 */
int kc_memory_tune_exec(char *const argv[]);

/**
 * Hands the free pages of every malloc arena back to the kernel
 * (malloc_trim) at once, whatever they amount to, after the blocks
 * kc_block_free() kept (kc_block_trim()). Any thread; takes each arena's
 * lock in turn, briefly. The daemon paces it with a kc_scavenger.
 */
void kc_memory_scavenge(void);

/** Blocks of up to this many bytes are kept for reuse by kc_block_free(). */
#define KC_BLOCK_MAX 2048u
/** Bytes kc_block_free() keeps at most, over all sizes. */
#define KC_BLOCK_KEPT_MAX ((size_t)4 << 20)

/**
 * Allocates @p size bytes, aligned as malloc()'s, for an object built and
 * dropped by the thousand per relist (issue 18): a block of its size class
 * (64-byte steps up to KC_BLOCK_MAX) that kc_block_free() kept, else
 * malloc()'s; of @p size exactly, class 0, when blocks are not kept
 * (kc_block_keeps()). *ret_class is what kc_block_free() needs back (untouched on
 * failure). Any thread. NULL on ENOMEM.
 */
void *kc_block_alloc(size_t size, uint8_t *ret_class);
/**
 * Frees @p p (NULL: nothing), allocated by kc_block_alloc() with class
 * @p cls: kept for the next allocation of its class while the blocks kept
 * stay under KC_BLOCK_KEPT_MAX, else free()d. Any thread.
 */
void kc_block_free(void *p, uint8_t cls);
/** Frees every block kept; returns their bytes. Any thread. */
size_t kc_block_trim(void);
/** The bytes of the blocks kept now. */
size_t kc_block_kept(void);
/**
 * Whether kc_block_free() keeps blocks: not under AddressSanitizer or
 * valgrind, or with another malloc preloaded, which see only malloc's
 * blocks; under ThreadSanitizer it does, for the lists' locking.
 */
bool kc_block_keeps(void);

/**
 * The scavenger of Go's runtime, for malloc: hands free heap pages back to
 * the kernel when the process has grown well past what it held right after
 * the last trim, no more often than its CPU budget allows.
 *
 * - goal: resident anonymous memory (RssAnon) may grow by 10 % of what it
 *   was right after the last trim (the live heap plus stacks and partly
 *   used pages), at least 1 MiB, before the next (Go's
 *   retainExtraPercent): a steady heap is not trimmed, pages freed after a
 *   burst are. No malloc statistics are read: they cost a walk of every
 *   free chunk, as much as the trim;
 * - age: RssAnon does not show pages freed inside a heap that shrank, so a
 *   trim comes at least once a minute;
 * - memory pressure: while MemAvailable is under 5 % of MemTotal (Go's
 *   reduceExtraPercent below a memory limit), 64 KiB of growth or 10 s
 *   are enough;
 * - pace: a trim that took d is followed by none for 99 d (Go's
 *   scavengePercent: 1 % of one CPU).
 * The first run always trims (it measures the floor); RSS seen below the
 * floor lowers it.
 */
struct kc_scavenger;

/** @return 0 and *ret, -EINVAL (NULL @p clock or @p ret) or -ENOMEM. */
int kc_scavenger_new(struct kc_clock *clock, struct kc_scavenger **ret);
/** NULL-safe; returns NULL. */
struct kc_scavenger *kc_scavenger_free(struct kc_scavenger *s);
KC_DEFINE_CLEANUP_FUNC(struct kc_scavenger, kc_scavenger_free)

/**
 * One look (from housekeeping, every 2 s): trims when the goal is missed and
 * the pace allows. One thread at a time.
 * @return 1 when it trimmed, 0 when not, or -errno when the memory figures
 *         could not be read (nothing trimmed).
 */
int kc_scavenger_run(struct kc_scavenger *s);

/** Trims since kc_scavenger_new(). */
uint64_t kc_scavenger_trims(const struct kc_scavenger *s);
