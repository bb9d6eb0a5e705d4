/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file core/map.h
 * @brief kc_map: a string-keyed hash map.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"

struct kc_map;

/** The 64-bit hash kc_map gives its keys, of any @p n bytes at @p p (for other tables). */
uint64_t kc_hash_bytes(const void *p, size_t n);

int kc_map_new(struct kc_map **ret);
/** Frees the table only; keys and values belong to the caller. */
struct kc_map *kc_map_free(struct kc_map *m);
KC_DEFINE_CLEANUP_FUNC(struct kc_map, kc_map_free)

/** NULL when absent. */
void *kc_map_get(const struct kc_map *m, const char *key);
/**
 * Inserts or replaces. The map stores @p key by pointer: it must stay valid
 * and unchanged while the entry exists (usually it lives inside @p value).
 * @return 0 or -ENOMEM (map unchanged).
 */
int kc_map_put(struct kc_map *m, const char *key, void *value);
/**
 * Prefetching for a caller that knows which keys it looks up next (issue 18):
 * kc_map_prefetch_slot() asks for the line of @p key's home slot, which a
 * later kc_map_prefetch_entry() reads to ask for the lines of the key and the
 * value its hash points at. That value is returned as a guess, unchecked
 * (NULL: none): the caller may only prefetch through it, and only while it
 * holds whatever keeps the map's values alive. Neither reads a key.
 */
void kc_map_prefetch_slot(const struct kc_map *m, const char *key);
void *kc_map_prefetch_entry(const struct kc_map *m, const char *key);
/** Removes and returns the value, or NULL when absent. */
void *kc_map_remove(struct kc_map *m, const char *key);
size_t kc_map_size(const struct kc_map *m);
/** Makes room for @p n entries without further growth. -ENOMEM (map unchanged). */
int kc_map_reserve(struct kc_map *m, size_t n);
/** Removes every entry and keeps the table's capacity. */
void kc_map_clear(struct kc_map *m);
/**
 * A set: a new map whose keys (and values) are the @p n strings of @p keys,
 * borrowed; NULL entries are skipped. For "drop what is not among these".
 * @return 0 or -ENOMEM (*ret untouched).
 */
int kc_map_new_set(const char *const *keys, size_t n, struct kc_map **ret);
/**
 * Iteration in unspecified order: start with *iter = 0; returns false at the
 * end. The map must not be modified during an iteration.
 */
bool kc_map_next(const struct kc_map *m, size_t *iter, const char **ret_key, void **ret_value);
