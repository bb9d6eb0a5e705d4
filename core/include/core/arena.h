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

int kc_arena_new(struct kc_arena **ret);
struct kc_arena *kc_arena_free(struct kc_arena *a);
KC_DEFINE_CLEANUP_FUNC(struct kc_arena, kc_arena_free)
/** Zeroed, max_align_t-aligned memory; NULL on ENOMEM. */
void *kc_arena_alloc(struct kc_arena *a, size_t size);
/** NULL in → NULL out; NULL on ENOMEM otherwise. */
char *kc_arena_strdup(struct kc_arena *a, const char *s);
