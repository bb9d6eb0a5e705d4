/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file core/thread.h
 * @brief Joinable threads that list themselves on their way out: the next
 * spawn (or the owner's shutdown) joins them.
 *
 * An elastic set of threads (the prober's runners, the pod-worker pool) lets
 * a thread leave when it has nothing to do. A detached thread could outlive
 * its owner; a thread that joins itself cannot. So a leaving thread, as the
 * last thing it does under its owner's lock, lists itself on the owner's
 * struct kc_reaper (kc_reaper_retire_locked()), drops the lock and returns.
 * Whoever takes the lock next may join it without deadlock: it has released
 * the lock for the last time. kc_reaper_spawn_locked() joins the listed
 * threads before it starts a new one, and the owner calls
 * kc_reaper_join_locked() once its threads are all gone, so an exited thread
 * keeps its stack mapped only until the next spawn or the shutdown.
 *
 * Thread contract: the reaper has no lock of its own; it lives under the
 * owner's lock ("the lock" below), which every kc_reaper_*_locked() call
 * needs held, and which guards the fields of struct kc_reaper too. The one
 * call an exiting thread makes is kc_reaper_retire_locked() on its own
 * struct kc_thread; the others are made by any thread holding the lock.
 * The release callback runs inside kc_reaper_join_locked(), so under the
 * lock: it frees the thread's payload and must not take the lock again.
 *
 * The caller owns the memory: it embeds a struct kc_thread in its per-thread
 * payload and gets back to the payload with kc_container_of() (core/list.h).
 *
 *     struct runner { struct owner *o; struct kc_thread thread; };
 *
 *     static void runner_release(struct kc_thread *t)
 *     {
 *             free(kc_container_of(t, struct runner, thread));
 *     }
 *
 *     // owner, lock held: r = kc_reaper_spawn_locked(&o->reaper, &rn->thread,
 *     //                                                 0, runner_main, rn);
 *     // runner_main, on the way out, lock held:
 *     //         kc_reaper_retire_locked(&o->reaper, &self->thread);
 *     //         pthread_mutex_unlock(&o->lock);
 *     //         return NULL;
 */
#pragma once

#include <pthread.h>
#include <stddef.h>

/** A joinable thread, embedded in its caller's per-thread payload. */
struct kc_thread {
        pthread_t tid;          /* set by kc_reaper_spawn_locked() */
        struct kc_thread *next; /* on the reaper's list once retired */
};

/** The threads of one owner that are running or waiting to be joined. */
struct kc_reaper {
        /* Frees a joined thread's payload; under the lock. NULL: nothing to free. */
        void (*release)(struct kc_thread *t);
        struct kc_thread *exited; /* retired, not joined yet */
        size_t n_exited;          /* on that list */
        size_t n_running;         /* spawned, not retired yet */
};

/** Sets up an empty reaper whose joined threads go to @p release (may be NULL). */
void kc_reaper_init(struct kc_reaper *r, void (*release)(struct kc_thread *t));

/**
 * Joins the threads listed on @p r, then starts fn(arg) on a new joinable
 * thread with a stack of @p stack_size bytes (0: the default). The lock held.
 *
 * @return 0 (@p t->tid set, counted in n_running), or -errno with @p t
 *         untouched and not counted (-EINVAL for a stack below
 *         PTHREAD_STACK_MIN, -EAGAIN when no thread can be made). Either way
 *         the threads listed before the call are joined and released.
 */
int kc_reaper_spawn_locked(struct kc_reaper *r, struct kc_thread *t, size_t stack_size,
                           void *(*fn)(void *), void *arg);

/**
 * Called by the thread @p self, started by kc_reaper_spawn_locked() on @p r,
 * with the lock held, as the last use it makes of the lock: counted out of
 * n_running and listed to be joined. After it the thread only releases the
 * lock and returns; it must not touch @p self or the owner afterwards.
 */
void kc_reaper_retire_locked(struct kc_reaper *r, struct kc_thread *self);

/**
 * Joins every thread listed on @p r and hands each to the release callback.
 * The lock held (it is safe: a listed thread has released it for good).
 * Threads still running are not waited for: the owner stops them and waits
 * for n_running to reach 0 first when it shuts down.
 *
 * @return how many threads were joined.
 */
size_t kc_reaper_join_locked(struct kc_reaper *r);
