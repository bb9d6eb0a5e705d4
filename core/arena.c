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
 *
 * An arena can be shared once it is filled: kc_arena_ref() takes another
 * reference and kc_arena_free() drops one; the last one frees it. A result
 * that several holders read (a list memo's last result, issue 18) is
 * handed out that way instead of being copied. An arena can also hold
 * references to other arenas (kc_arena_hold()), dropped when it is freed, so
 * a result built in it may point into shared ones (the simulated runtime's
 * objects, issue 18) without copying them.
 *
 * Full-size (16 KiB) chunks are recycled through a process-wide cache of at
 * most 32 MiB, and large chunks (a request's own, 256 KiB or more, which
 * malloc maps anew each time) through one of at most 8 chunks and 64 MiB:
 * a listing's items array of megabytes, new on every relist that saw a
 * change, was otherwise paged in afresh each time (issue 18). Runtime list results are arenas of megabytes made and freed
 * on every relist; handing their chunks back to malloc let glibc trim the
 * heap and fault the same pages in again on the next relist, which cost
 * about two thirds of a no-change relist at 10,000 pods (12.7 ms against
 * 4.3 ms with the cache; docs/benchmarks.md). A cache nobody took from
 * between two calls of kc_arena_cache_release_idle() (the scavenger's, every
 * housekeeping) goes back to malloc: on a quiet node the relists answer from
 * their memos and it only held memory, 2 MB at 5,000 pods (issue 18).
 */
#include <errno.h>
#include <pthread.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"

#define KC_ARENA_FIRST_CHUNK 512u
#define KC_ARENA_CHUNK (16u * 1024u)
#define KC_ARENA_ALIGN alignof(max_align_t)
#define KC_ARENA_CACHE_MAX ((32u << 20) / KC_ARENA_CHUNK) /* chunks kept for reuse */
#define KC_ARENA_BIG_MIN (256u << 10)                     /* a large chunk: mmap'd by malloc */
#define KC_ARENA_BIG_MAX 8u                               /* large chunks kept for reuse */
#define KC_ARENA_BIG_BYTES (64u << 20)                    /* ... holding at most this much */

struct kc_arena_chunk {
        struct kc_arena_chunk *next;
        size_t size; /* bytes in data[] */
        size_t used;
        alignas(max_align_t) unsigned char data[];
};

/*
 * Recycled full-size chunks, linked through ->next, and large ones (a
 * request's own chunk: a list result's items array). Any thread.
 */
static struct {
        pthread_mutex_t lock;
        struct kc_arena_chunk *head;
        size_t n;
        struct kc_arena_chunk *big;
        size_t n_big, big_bytes;
        uint64_t takes, takes_seen; /* chunks taken out; as kc_arena_cache_release_idle() saw */
} chunk_cache = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* A reference kc_arena_hold() took beyond the first, in the holding arena's own memory. */
struct kc_arena_hold {
        struct kc_arena_hold *next;
        struct kc_arena *arena;
};

struct kc_arena {
        struct kc_arena_chunk *head;  /* the chunk being filled first */
        size_t next_chunk;            /* size of the next regular chunk */
        unsigned refs;                /* atomic */
        struct kc_arena_chunk *inner; /* allocated with the arena (kc_arena_new_block), or NULL */
        struct kc_arena *held;        /* the first arena held (kc_arena_hold), or NULL */
        struct kc_arena_hold *holds;  /* the others, newest first */
};

/*
 * An arena and its first chunk of @size bytes (rounded up), all of them
 * taken when @used, in one allocation: one malloc and one free per arena,
 * not two (issue 18: a relist makes several for each pod it inspects).
 */
static struct kc_arena *arena_with_chunk(size_t size, bool used, size_t next_chunk)
{
        const size_t off = (sizeof(struct kc_arena) + alignof(struct kc_arena_chunk) - 1) &
                           ~(alignof(struct kc_arena_chunk) - 1);
        struct kc_arena_chunk *c;
        struct kc_arena *a;

        if (size > SIZE_MAX - KC_ARENA_ALIGN - off - sizeof(*c))
                return NULL;
        size = size == 0 ? KC_ARENA_ALIGN : (size + KC_ARENA_ALIGN - 1) & ~(KC_ARENA_ALIGN - 1);
        a = malloc(off + sizeof(*c) + size);
        if (!a)
                return NULL;
        c = (struct kc_arena_chunk *)((char *)a + off);
        *c = (struct kc_arena_chunk){ .size = size, .used = used ? size : 0 };
        *a = (struct kc_arena){ .head = c, .next_chunk = next_chunk, .refs = 1, .inner = c };
        return a;
}

int kc_arena_new(struct kc_arena **ret)
{
        struct kc_arena *a =
                arena_with_chunk(KC_ARENA_FIRST_CHUNK, false, 2 * KC_ARENA_FIRST_CHUNK);

        if (!a)
                return -ENOMEM;
        *ret = a;
        return 0;
}

int kc_arena_new_block(size_t size, struct kc_arena **ret, void **ret_block)
{
        struct kc_arena *a = arena_with_chunk(size, true, KC_ARENA_FIRST_CHUNK);

        if (!a)
                return -ENOMEM;
        memset(a->inner->data, 0, a->inner->size);
        *ret = a;
        *ret_block = a->inner->data;
        return 0;
}

void kc_arena_prefetch(const struct kc_arena *a)
{
        if (a)
                __builtin_prefetch(&a->refs, 1);
}

bool kc_arena_shared(const struct kc_arena *a)
{
        return a && __atomic_load_n(&a->refs, __ATOMIC_RELAXED) > 1;
}

bool kc_arena_sole(const struct kc_arena *a)
{
        /* Pairs with the release half of the other holders' kc_arena_free(). */
        return a && __atomic_load_n(&a->refs, __ATOMIC_ACQUIRE) == 1;
}

struct kc_arena *kc_arena_ref(struct kc_arena *a)
{
        if (a)
                __atomic_add_fetch(&a->refs, 1, __ATOMIC_RELAXED);
        return a;
}

/* Frees the chunks linked from @p c; the bytes they held. */
static size_t chunks_free(struct kc_arena_chunk *c)
{
        struct kc_arena_chunk *next;
        size_t bytes = 0;

        for (; c; c = next) {
                next = c->next;
                bytes += c->size;
                free(c);
        }
        return bytes;
}

/* Empties the cache (the lock held); its chunks, linked, for chunks_free(). */
static struct kc_arena_chunk *chunk_cache_take_all_locked(void)
{
        struct kc_arena_chunk *all = chunk_cache.head, **tail = &all;

        while (*tail)
                tail = &(*tail)->next;
        *tail = chunk_cache.big;
        chunk_cache.head = chunk_cache.big = NULL;
        chunk_cache.n = chunk_cache.n_big = chunk_cache.big_bytes = 0;
        return all;
}

/* At exit, so leak checkers see every chunk released. */
__attribute__((destructor)) static void chunk_cache_release(void)
{
        struct kc_arena_chunk *all;

        pthread_mutex_lock(&chunk_cache.lock);
        all = chunk_cache_take_all_locked();
        pthread_mutex_unlock(&chunk_cache.lock);
        chunks_free(all);
}

size_t kc_arena_cache_release_idle(void)
{
        struct kc_arena_chunk *all = NULL;

        pthread_mutex_lock(&chunk_cache.lock);
        if (chunk_cache.takes == chunk_cache.takes_seen)
                all = chunk_cache_take_all_locked();
        chunk_cache.takes_seen = chunk_cache.takes;
        pthread_mutex_unlock(&chunk_cache.lock);
        return chunks_free(all);
}

/* Returns a chunk to the cache when it is full-size or large and the cache has room. */
static void chunk_free(struct kc_arena_chunk *c)
{
        if (c->size == KC_ARENA_CHUNK) {
                pthread_mutex_lock(&chunk_cache.lock);
                if (chunk_cache.n < KC_ARENA_CACHE_MAX) {
                        c->next = chunk_cache.head;
                        chunk_cache.head = c;
                        chunk_cache.n++;
                        c = NULL;
                }
                pthread_mutex_unlock(&chunk_cache.lock);
        } else if (c->size >= KC_ARENA_BIG_MIN) {
                pthread_mutex_lock(&chunk_cache.lock);
                if (chunk_cache.n_big < KC_ARENA_BIG_MAX &&
                    c->size <= KC_ARENA_BIG_BYTES - chunk_cache.big_bytes) {
                        c->next = chunk_cache.big;
                        chunk_cache.big = c;
                        chunk_cache.n_big++;
                        chunk_cache.big_bytes += c->size;
                        c = NULL;
                }
                pthread_mutex_unlock(&chunk_cache.lock);
        }
        free(c);
}

/*
 * The smallest cached large chunk of @p size bytes or more, up to twice
 * that (not to hold much more than asked), taken out of the cache; NULL when none.
 */
static struct kc_arena_chunk *big_chunk_take(size_t size)
{
        struct kc_arena_chunk **best = NULL, **pc, *c = NULL;

        pthread_mutex_lock(&chunk_cache.lock);
        for (pc = &chunk_cache.big; *pc; pc = &(*pc)->next)
                if ((*pc)->size >= size && (*pc)->size / 2 <= size &&
                    (!best || (*pc)->size < (*best)->size))
                        best = pc;
        if (best) {
                c = *best;
                *best = c->next;
                chunk_cache.n_big--;
                chunk_cache.big_bytes -= c->size;
                chunk_cache.takes++;
        }
        pthread_mutex_unlock(&chunk_cache.lock);
        return c;
}

/*
 * Drops the references of @p h and the records after it. The arenas held are
 * cold (a listing holds one per object listed): each is fetched a few
 * records ahead of its turn.
 */
static void holds_release(struct kc_arena_hold *h)
{
        struct kc_arena_hold *ahead = h;

        for (int k = 0; k < 8 && ahead; k++, ahead = ahead->next)
                __builtin_prefetch(ahead->arena, 1);
        for (; h; h = h->next) {
                if (ahead) {
                        __builtin_prefetch(ahead->arena, 1);
                        ahead = ahead->next;
                }
                kc_arena_free(h->arena);
        }
}

struct kc_arena *kc_arena_free(struct kc_arena *a)
{
        struct kc_arena_chunk *c, *next;

        if (!a || __atomic_sub_fetch(&a->refs, 1, __ATOMIC_ACQ_REL) != 0)
                return NULL;
        /* The hold records live in the chunks: release what they hold first. */
        kc_arena_free(a->held);
        holds_release(a->holds);
        for (c = a->head; c; c = next) {
                next = c->next;
                if (c != a->inner)
                        chunk_free(c);
        }
        free(a);
        return NULL;
}

static struct kc_arena_chunk *chunk_new(size_t size)
{
        struct kc_arena_chunk *c;

        if (size > SIZE_MAX - sizeof(*c))
                return NULL;
        c = NULL;
        if (size == KC_ARENA_CHUNK) {
                pthread_mutex_lock(&chunk_cache.lock);
                c = chunk_cache.head;
                if (c) {
                        chunk_cache.head = c->next;
                        chunk_cache.n--;
                        chunk_cache.takes++;
                }
                pthread_mutex_unlock(&chunk_cache.lock);
        }
        /*
         * A large chunk from the cache keeps its size: its memory is paged in
         * already, where a new one would be faulted in page by page again.
         */
        if (size >= KC_ARENA_BIG_MIN && (c = big_chunk_take(size))) {
                c->next = NULL;
                c->used = 0;
                return c;
        }
        /* Not zeroed here: arena_alloc() zeroes each block it hands out. */
        if (!c)
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

void *kc_arena_alloc_uninit(struct kc_arena *a, size_t size)
{
        return arena_alloc(a, size);
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

void *kc_arena_memdup(struct kc_arena *a, const void *src, size_t size)
{
        void *p = arena_alloc(a, size);

        if (p && size > 0)
                memcpy(p, src, size);
        return p;
}

int kc_arena_hold(struct kc_arena *a, struct kc_arena *other)
{
        struct kc_arena_hold *h;

        if (!a || a == other)
                return -EINVAL;
        if (!other)
                return 0;
        if (!a->held) {
                a->held = kc_arena_ref(other);
                return 0;
        }
        h = arena_alloc(a, sizeof(*h));
        if (!h)
                return -ENOMEM;
        *h = (struct kc_arena_hold){ .next = a->holds, .arena = kc_arena_ref(other) };
        a->holds = h;
        return 0;
}
