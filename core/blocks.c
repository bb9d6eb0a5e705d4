/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small blocks kept for reuse, by size class (kc_block_alloc, core/memory.h).
 *
 * A changed relist builds a pod and a status for each changed pod and drops
 * the ones two relists old: thousands of blocks of a few sizes, allocated
 * in one burst and freed in another. glibc serves such a burst from its
 * bins (its per-thread caches hold seven blocks a size, and the daemon
 * turns them off, kc_memory_tune_exec): each allocation splits or unlinks
 * a chunk and each free coalesces with its neighbours, reading their cold
 * headers. Here a freed block goes onto its class's list, under the class's
 * lock, and the next allocation of the class takes it back: one list head
 * and the block itself are touched. The lists are process-wide, as Go's
 * per-CPU caches are, not per thread, and bounded in bytes; the scavenger
 * hands them back to malloc before it trims (kc_memory_scavenge).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/memory.h"
#include "internal.h"

#define BLOCK_GRAIN 64u
#define BLOCK_CLASSES (KC_BLOCK_MAX / BLOCK_GRAIN)

/* A kept block: its first word links it to the next one of its class. */
struct kept_block {
        struct kept_block *next;
};

struct block_class {
        pthread_mutex_t mu;
        struct kept_block *head;
};

static struct block_class classes[BLOCK_CLASSES] = {
        [0 ... BLOCK_CLASSES - 1] = { .mu = PTHREAD_MUTEX_INITIALIZER },
};
/* Bytes kept over all classes, at most KC_BLOCK_KEPT_MAX. */
static atomic_size_t kept_bytes;
static pthread_once_t keeps_once = PTHREAD_ONCE_INIT;
static bool keeps;

/*
 * AddressSanitizer and valgrind report a use after free, and a leak, only
 * of what malloc() and free() saw: under them nothing is kept, nor under
 * another malloc preloaded. ThreadSanitizer's malloc is its own too, but
 * it is there to check the lists' locking: blocks are kept.
 */
static void keeps_decide(void)
{
#if defined(__SANITIZE_ADDRESS__)
        keeps = false;
#elif defined(__SANITIZE_THREAD__)
        keeps = true;
#else
        keeps = kc__malloc_is_glibcs();
#endif
}

static size_t class_size(uint8_t cls)
{
        return (size_t)cls * BLOCK_GRAIN;
}

void *kc_block_alloc(size_t size, uint8_t *ret_class)
{
        struct block_class *c;
        struct kept_block *b;
        uint8_t cls;
        void *p;

        /* Not kept: malloc's own size, so a checker's bounds are the caller's. */
        if (size == 0 || size > KC_BLOCK_MAX || !kc_block_keeps()) {
                p = malloc(size);
                if (p)
                        *ret_class = 0;
                return p;
        }
        cls = (uint8_t)((size + BLOCK_GRAIN - 1) / BLOCK_GRAIN);
        c = &classes[cls - 1];
        pthread_mutex_lock(&c->mu);
        b = c->head;
        if (b) {
                c->head = b->next;
                /* The next allocation reads the new head's link: freed a
                 * burst ago, it is cold, and a relist allocates one block
                 * after another (issue 18). */
                if (c->head)
                        __builtin_prefetch(c->head, 1);
        }
        pthread_mutex_unlock(&c->mu);
        if (b) {
                atomic_fetch_sub_explicit(&kept_bytes, class_size(cls), memory_order_relaxed);
                p = b;
        } else {
                p = malloc(class_size(cls));
        }
        if (p)
                *ret_class = cls;
        return p;
}

void kc_block_free(void *p, uint8_t cls)
{
        struct block_class *c;
        struct kept_block *b = p;
        size_t size;

        if (cls == 0 || cls > BLOCK_CLASSES || !kc_block_keeps()) {
                free(p);
                return;
        }
        if (!p)
                return;
        size = class_size(cls);
        /* Counted first: concurrent frees cannot keep more than the bound between them. */
        if (atomic_fetch_add_explicit(&kept_bytes, size, memory_order_relaxed) + size >
            KC_BLOCK_KEPT_MAX) {
                atomic_fetch_sub_explicit(&kept_bytes, size, memory_order_relaxed);
                free(p);
                return;
        }
        c = &classes[cls - 1];
        pthread_mutex_lock(&c->mu);
        b->next = c->head;
        c->head = b;
        pthread_mutex_unlock(&c->mu);
}

size_t kc_block_trim(void)
{
        size_t freed = 0;

        for (uint8_t cls = 1; cls <= BLOCK_CLASSES; cls++) {
                struct block_class *c = &classes[cls - 1];
                struct kept_block *b;

                pthread_mutex_lock(&c->mu);
                b = c->head;
                c->head = NULL;
                pthread_mutex_unlock(&c->mu);
                while (b) {
                        struct kept_block *next = b->next;

                        atomic_fetch_sub_explicit(&kept_bytes, class_size(cls),
                                                  memory_order_relaxed);
                        free(b);
                        freed += class_size(cls);
                        b = next;
                }
        }
        return freed;
}

bool kc_block_keeps(void)
{
        (void)pthread_once(&keeps_once, keeps_decide);
        return keeps;
}

size_t kc_block_kept(void)
{
        return atomic_load_explicit(&kept_bytes, memory_order_relaxed);
}
