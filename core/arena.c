/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kc_arena: a bump allocator. Memory comes from zeroed 16 KiB chunks; a
 * request larger than a quarter chunk gets a chunk of its own (linked behind
 * the current one, so the current chunk keeps its free space). Every block
 * is aligned to alignof(max_align_t). Everything is freed at once.
 */
#include <stdalign.h>
#include <string.h>

#include "kc_core.h"

#define KC_ARENA_CHUNK (16u * 1024u)
#define KC_ARENA_ALIGN alignof(max_align_t)

struct kc_arena_chunk {
        struct kc_arena_chunk *next;
        size_t size; /* bytes in data[] */
        size_t used;
        alignas(max_align_t) unsigned char data[];
};

struct kc_arena {
        struct kc_arena_chunk *head; /* the chunk being filled first */
};

int kc_arena_new(struct kc_arena **ret)
{
        struct kc_arena *a;

        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        *ret = a;
        return 0;
}

struct kc_arena *kc_arena_free(struct kc_arena *a)
{
        struct kc_arena_chunk *c, *next;

        if (!a)
                return NULL;
        for (c = a->head; c; c = next) {
                next = c->next;
                free(c);
        }
        free(a);
        return NULL;
}

static struct kc_arena_chunk *chunk_new(size_t size)
{
        struct kc_arena_chunk *c;

        if (size > SIZE_MAX - sizeof(*c))
                return NULL;
        /* calloc: the memory handed out is zeroed, as documented. */
        c = calloc(1, sizeof(*c) + size);
        if (!c)
                return NULL;
        c->size = size;
        return c;
}

void *kc_arena_alloc(struct kc_arena *a, size_t size)
{
        struct kc_arena_chunk *c;
        void *p;

        /* Round up; a zero-byte request still gets a distinct block. */
        if (size > SIZE_MAX - KC_ARENA_ALIGN)
                return NULL;
        size = size == 0 ? KC_ARENA_ALIGN : (size + KC_ARENA_ALIGN - 1) & ~(KC_ARENA_ALIGN - 1);

        if (size > KC_ARENA_CHUNK / 4) {
                c = chunk_new(size);
                if (!c)
                        return NULL;
                c->used = size;
                if (a->head) {
                        c->next = a->head->next;
                        a->head->next = c;
                } else {
                        a->head = c;
                }
                return c->data;
        }

        c = a->head;
        if (!c || c->size - c->used < size) {
                c = chunk_new(KC_ARENA_CHUNK);
                if (!c)
                        return NULL;
                c->next = a->head;
                a->head = c;
        }
        p = c->data + c->used;
        c->used += size;
        return p;
}

char *kc_arena_strdup(struct kc_arena *a, const char *s)
{
        size_t len;
        char *p;

        if (!s)
                return NULL;
        len = strlen(s);
        p = kc_arena_alloc(a, len + 1);
        if (p)
                memcpy(p, s, len + 1);
        return p;
}
