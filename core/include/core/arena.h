/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file core/arena.h
 * @brief kc_arena: a bump allocator for results freed all at once.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"

struct kc_arena;

/** A new arena holding one reference. */
int kc_arena_new(struct kc_arena **ret);
/**
 * A new arena holding one reference and one zeroed block of @p size bytes
 * (*@p ret_block), allocated together: one allocation where kc_arena_new()
 * and kc_arena_alloc() make two, and the arena's header sits right before
 * the block (an object that keeps itself in its own arena, shared by the
 * results pointing into it: the simulated runtime's, issue 18).
 * @return 0 or -ENOMEM.
 */
int kc_arena_new_block(size_t size, struct kc_arena **ret, void **ret_block);
/**
 * Drops one reference (NULL is fine); the last one frees every block.
 * @return NULL.
 */
struct kc_arena *kc_arena_free(struct kc_arena *a);
/**
 * Another reference to @p a (NULL in, NULL out), for sharing a filled arena
 * between holders, any thread. Holders of a shared arena only read it:
 * kc_arena_alloc() on it is not thread-safe.
 */
struct kc_arena *kc_arena_ref(struct kc_arena *a);
/**
 * Asks the CPU for the line of @p a's count of references, to be written
 * (NULL is fine): a hint, any thread. Reads and writes nothing.
 */
void kc_arena_prefetch(const struct kc_arena *a);
/** Does @p a have more than one reference now? (A hint: another holder may drop its own.) */
bool kc_arena_shared(const struct kc_arena *a);
/**
 * Is the caller's reference the only one to @p a now? Then every other
 * holder's accesses to it happened before this call returned true (an
 * acquire), and, while the caller shares it with nobody, no one else can
 * reach it: the caller may write to what it allocated in it.
 */
bool kc_arena_sole(const struct kc_arena *a);
/**
 * Makes @p a keep a reference to @p other until @p a is freed (its last
 * reference dropped), so what is built in @p a may point into @p other. The
 * first hold costs no memory; each further one a few bytes of @p a. Like
 * kc_arena_alloc(), not thread-safe on @p a. No cycles: @p other must not
 * hold @p a, directly or not.
 * @return 0 (also for a NULL @p other), -EINVAL (@p a NULL or @p other itself), -ENOMEM.
 */
int kc_arena_hold(struct kc_arena *a, struct kc_arena *other);
/**
 * Hands the process-wide cache of recycled chunks back to malloc when none
 * was taken from it since the last call (none: the cache is idle), so a
 * quiet process does not keep megabytes for the next burst. Any thread.
 * @return the bytes of the chunks released (0 when kept).
 */
size_t kc_arena_cache_release_idle(void);
KC_DEFINE_CLEANUP_FUNC(struct kc_arena, kc_arena_free)
/** Zeroed, max_align_t-aligned memory; NULL on ENOMEM. */
void *kc_arena_alloc(struct kc_arena *a, size_t size);
/**
 * As kc_arena_alloc(), not zeroed: for memory the caller writes before
 * anyone reads it (issue 18: a listing's item array, written item by item,
 * was zeroed first, megabytes per relist over CRI).
 */
void *kc_arena_alloc_uninit(struct kc_arena *a, size_t size);
/** NULL in → NULL out; NULL on ENOMEM otherwise. */
char *kc_arena_strdup(struct kc_arena *a, const char *s);
/**
 * A copy of the @p size bytes at @p src, aligned as kc_arena_alloc()'s
 * (never zeroed first: the copy covers it). NULL on ENOMEM.
 */
void *kc_arena_memdup(struct kc_arena *a, const void *src, size_t size);
