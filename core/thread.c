/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Joinable threads that list themselves on their way out (core/thread.h).
 * Everything here runs under the owner's lock; the reaper only keeps the
 * list and the counts.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>

#include "core/thread.h"

void kc_reaper_init(struct kc_reaper *r, void (*release)(struct kc_thread *t))
{
        *r = (struct kc_reaper){ .release = release };
}

size_t kc_reaper_join_locked(struct kc_reaper *r)
{
        struct kc_thread *t = r->exited;
        size_t n = 0;

        r->exited = NULL;
        r->n_exited = 0;
        while (t) {
                struct kc_thread *next = t->next;

                /* It released the owner's lock for the last time after it was
                 * listed: joining it under that lock cannot deadlock. */
                pthread_join(t->tid, NULL);
                if (r->release)
                        r->release(t);
                t = next;
                n++;
        }
        return n;
}

int kc_reaper_spawn_locked(struct kc_reaper *r, struct kc_thread *t, size_t stack_size,
                           void *(*fn)(void *), void *arg)
{
        pthread_attr_t attr;
        pthread_t tid;
        int e;

        kc_reaper_join_locked(r);
        e = pthread_attr_init(&attr);
        if (e != 0)
                return -e;
        if (stack_size > 0)
                e = pthread_attr_setstacksize(&attr, stack_size);
        if (e == 0)
                e = pthread_create(&tid, &attr, fn, arg);
        pthread_attr_destroy(&attr);
        if (e != 0)
                return -e;
        /* The new thread retires under the lock we hold: not before this. */
        t->tid = tid;
        t->next = NULL;
        r->n_running++;
        return 0;
}

void kc_reaper_retire_locked(struct kc_reaper *r, struct kc_thread *self)
{
        r->n_running--;
        self->next = r->exited;
        r->exited = self;
        r->n_exited++;
}
