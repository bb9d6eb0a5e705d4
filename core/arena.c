/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kc_arena: a bump allocator. Chunks start small (512 bytes) and double up
 * to 16 KiB, so an arena holding one small result (a status call) costs one
 * small allocation, and a list of thousands of items a handful of large
 * ones. A request larger than a quarter of the largest chunk gets a chunk of
 * its own (linked behind the current one, so the current chunk keeps its
 * free space). Chunks come from malloc and each block is zeroed when it is
 * handed out, so only memory in use is ever written. Every block is aligned
 * to alignof(max_align_t). Everything is freed at once.
 */
#include <stdalign.h>
#include <string.h>

#include "kc_core.h"

#define KC_ARENA_FIRST_CHUNK 512u
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
        size_t next_chunk;           /* size of the next regular chunk */
};

int kc_arena_new(struct kc_arena **ret)
{
        struct kc_arena *a;

        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->next_chunk = KC_ARENA_FIRST_CHUNK;
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
        /* Not zeroed here: arena_alloc() zeroes each block it hands out. */
        c = malloc(sizeof(*c) + size);
        if (!c)
                return NULL;
        c->next = NULL;
        c->size = size;
        c->used = 0;
        return c;
}

/* A block of @size bytes, not zeroed. */
static void *arena_alloc(struct kc_arena *a, size_t size)
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
                size_t chunk = a->next_chunk;

                while (chunk < size)
                        chunk *= 2;
                c = chunk_new(chunk);
                if (!c)
                        return NULL;
                c->next = a->head;
                a->head = c;
                if (chunk < KC_ARENA_CHUNK)
                        a->next_chunk = chunk * 2;
        }
        p = c->data + c->used;
        c->used += size;
        return p;
}

void *kc_arena_alloc(struct kc_arena *a, size_t size)
{
        void *p = arena_alloc(a, size);

        if (p)
                memset(p, 0, size);
        return p;
}

char *kc_arena_strdup(struct kc_arena *a, const char *s)
{
        size_t len;
        char *p;

        if (!s)
                return NULL;
        len = strlen(s);
        p = arena_alloc(a, len + 1); /* fully overwritten: no zeroing */
        if (p)
                memcpy(p, s, len + 1);
        return p;
}
