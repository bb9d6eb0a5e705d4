/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kc_map: string keys (stored by pointer) to void *, open addressing with
 * linear probing and backward-shift deletion (no tombstones, so lookups
 * never slow down after many removals).
 *
 * Each slot caches the key's full 64-bit hash: probes compare hashes before
 * strcmp(), and growing never rehashes a string. The table is a power of two
 * and grows at 3/4 full, so probe sequences stay short.
 *
 * ck_hs was considered: it stores one pointer per entry, so a key/value pair
 * would need a separate allocation per entry (the key is not always inside
 * the value) plus a ck_malloc adaptor, for a map that is single-threaded
 * anyway. A flat table is smaller and faster here.
 *
 * The hash reads the key eight bytes at a time (pod UIDs are 36 bytes) and
 * finishes with a 64-bit avalanche, so the low bits used for the index
 * depend on every input byte.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/cleanup.h"
#include "core/map.h"

#define KC_MAP_MIN_SLOTS 16u

struct kc_map_slot {
        const char *key; /* NULL: empty */
        void *value;
        uint64_t hash;
};

struct kc_map {
        struct kc_map_slot *slots;
        size_t mask; /* number of slots - 1 */
        size_t size;
};

static inline uint64_t rotl64(uint64_t x, int r)
{
        return (x << r) | (x >> (64 - r));
}

/* The final mixer: every input bit flips each output bit with p ~ 1/2. */
static inline uint64_t avalanche64(uint64_t h)
{
        h ^= h >> 33;
        h *= UINT64_C(0xff51afd7ed558ccd);
        h ^= h >> 33;
        h *= UINT64_C(0xc4ceb9fe1a85ec53);
        h ^= h >> 33;
        return h;
}

uint64_t kc_hash_bytes(const void *p, size_t n)
{
        const uint64_t k1 = UINT64_C(0x9e3779b97f4a7c15);
        const uint64_t k2 = UINT64_C(0xbf58476d1ce4e5b9);
        const char *b = p;
        uint64_t h = n * k1, w;

        for (; n >= 8; n -= 8, b += 8) {
                memcpy(&w, b, 8);
                h = rotl64(h ^ (w * k2), 29) * k1;
        }
        if (n > 0) {
                w = 0;
                memcpy(&w, b, n);
                h = rotl64(h ^ (w * k2), 29) * k1;
        }
        return avalanche64(h);
}

static uint64_t hash_key(const char *key)
{
        return kc_hash_bytes(key, strlen(key));
}

static size_t find_slot(const struct kc_map *m, const char *key, uint64_t hash, bool *found)
{
        size_t i = hash & m->mask;

        for (;; i = (i + 1) & m->mask) {
                const struct kc_map_slot *s = &m->slots[i];

                if (!s->key) {
                        *found = false;
                        return i;
                }
                if (s->hash == hash) {
                        /* The value is what a caller reads next: on its way while the key is. */
                        __builtin_prefetch(s->value);
                        if (s->key != key && strcmp(s->key, key) != 0)
                                continue;
                        *found = true;
                        return i;
                }
        }
}

int kc_map_new(struct kc_map **ret)
{
        _cleanup_free_ struct kc_map *m = NULL;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->slots = calloc(KC_MAP_MIN_SLOTS, sizeof(*m->slots));
        if (!m->slots)
                return -ENOMEM;
        m->mask = KC_MAP_MIN_SLOTS - 1;
        *ret = TAKE_PTR(m);
        return 0;
}

struct kc_map *kc_map_free(struct kc_map *m)
{
        if (!m)
                return NULL;
        free(m->slots);
        free(m);
        return NULL;
}

/* Rehashes into @nslots slots (a power of two above the size). */
static int map_resize(struct kc_map *m, size_t nslots)
{
        struct kc_map_slot *slots;

        if (nslots > SIZE_MAX / sizeof(*slots))
                return -ENOMEM;
        slots = calloc(nslots, sizeof(*slots));
        if (!slots)
                return -ENOMEM;
        for (size_t i = 0; i <= m->mask; i++) {
                const struct kc_map_slot *s = &m->slots[i];
                size_t j;

                if (!s->key)
                        continue;
                for (j = s->hash & (nslots - 1); slots[j].key; j = (j + 1) & (nslots - 1))
                        ;
                slots[j] = *s;
        }
        free(m->slots);
        m->slots = slots;
        m->mask = nslots - 1;
        return 0;
}

static int map_grow(struct kc_map *m)
{
        return map_resize(m, (m->mask + 1) * 2);
}

int kc_map_reserve(struct kc_map *m, size_t n)
{
        size_t nslots = m->mask + 1;

        /* The same load factor as kc_map_put: at most 3/4. */
        while (n * 4 > nslots * 3) {
                if (nslots > SIZE_MAX / 2)
                        return -ENOMEM;
                nslots *= 2;
        }
        return nslots == m->mask + 1 ? 0 : map_resize(m, nslots);
}

int kc_map_new_set(const char *const *keys, size_t n, struct kc_map **ret)
{
        _cleanup_(kc_map_freep) struct kc_map *m = NULL;
        size_t i;

        if (kc_map_new(&m) < 0 || kc_map_reserve(m, n) < 0)
                return -ENOMEM;
        for (i = 0; i < n; i++)
                if (keys[i])
                        (void)kc_map_put(m, keys[i], (void *)keys[i]); /* reserved */
        *ret = TAKE_PTR(m);
        return 0;
}

void kc_map_clear(struct kc_map *m)
{
        if (m->size == 0)
                return;
        memset(m->slots, 0, (m->mask + 1) * sizeof(*m->slots));
        m->size = 0;
}

void *kc_map_get(const struct kc_map *m, const char *key)
{
        bool found;
        size_t i;

        /* An empty map (the pod cache's subscribers, mostly) is not worth hashing the key. */
        if (m->size == 0)
                return NULL;
        i = find_slot(m, key, hash_key(key), &found);
        return found ? m->slots[i].value : NULL;
}

void kc_map_prefetch_slot(const struct kc_map *m, const char *key)
{
        if (m->size > 0)
                __builtin_prefetch(&m->slots[hash_key(key) & m->mask]);
}

void *kc_map_prefetch_entry(const struct kc_map *m, const char *key)
{
        uint64_t hash;
        size_t i;

        if (m->size == 0)
                return NULL;
        hash = hash_key(key);
        /* find_slot() without the key comparison: a hash match is a guess, and reads nothing. */
        for (i = hash & m->mask; m->slots[i].key; i = (i + 1) & m->mask)
                if (m->slots[i].hash == hash) {
                        __builtin_prefetch(m->slots[i].key);
                        __builtin_prefetch(m->slots[i].value);
                        return m->slots[i].value;
                }
        return NULL;
}

int kc_map_put(struct kc_map *m, const char *key, void *value)
{
        uint64_t hash = hash_key(key);
        bool found;
        size_t i;
        int r;

        i = find_slot(m, key, hash, &found);
        if (found) {
                /* The new key pointer replaces the old: the old may go away. */
                m->slots[i].key = key;
                m->slots[i].value = value;
                return 0;
        }
        /* Keep the load factor at most 3/4. */
        if ((m->size + 1) * 4 > (m->mask + 1) * 3) {
                r = map_grow(m);
                if (r < 0)
                        return r;
                i = find_slot(m, key, hash, &found);
        }
        m->slots[i] = (struct kc_map_slot){ .key = key, .value = value, .hash = hash };
        m->size++;
        return 0;
}

void *kc_map_remove(struct kc_map *m, const char *key)
{
        bool found;
        size_t hole, j;
        void *value;

        hole = find_slot(m, key, hash_key(key), &found);
        if (!found)
                return NULL;
        value = m->slots[hole].value;

        /*
         * Backward shift: walk the run after the hole; an entry whose home
         * slot is not cyclically in (hole, j] may move back into the hole,
         * which then moves to j. The run ends at the first empty slot.
         */
        for (j = (hole + 1) & m->mask; m->slots[j].key; j = (j + 1) & m->mask) {
                size_t home = m->slots[j].hash & m->mask;

                if (((j - home) & m->mask) >= ((j - hole) & m->mask)) {
                        m->slots[hole] = m->slots[j];
                        hole = j;
                }
        }
        m->slots[hole] = (struct kc_map_slot){ 0 };
        m->size--;
        return value;
}

size_t kc_map_size(const struct kc_map *m)
{
        return m->size;
}

bool kc_map_next(const struct kc_map *m, size_t *iter, const char **ret_key, void **ret_value)
{
        for (size_t i = *iter; i <= m->mask; i++) {
                if (!m->slots[i].key)
                        continue;
                *iter = i + 1;
                if (ret_key)
                        *ret_key = m->slots[i].key;
                if (ret_value)
                        *ret_value = m->slots[i].value;
                return true;
        }
        *iter = m->mask + 1;
        return false;
}
