/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file internal.h
 * @brief Helpers shared by the core/ sources only (not installed, not for
 * other modules).
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/list.h"

/*
 * An assertion that stays in release builds (RelWithDebInfo defines NDEBUG):
 * used for invariants whose violation would corrupt memory, such as "an
 * admitted kc_chan push always finds a free ring slot".
 */
#define kc__assert_se(expr)                                                                        \
        do {                                                                                       \
                if (__builtin_expect(!(expr), 0)) {                                                \
                        fprintf(stderr, "%s:%d: %s: assertion '%s' failed\n", __FILE__, __LINE__,  \
                                __func__, #expr);                                                  \
                        abort();                                                                   \
                }                                                                                  \
        } while (0)

/*
 * ThreadSanitizer hooks. Concurrency Kit implements ck_pr_* with inline
 * assembly, which TSan cannot see: it neither observes the ring's
 * publication (so it would flag the slot copies as races) nor learns the
 * happens-before edge a push/pop pair creates. kc_chan therefore hides the
 * ring's own accesses from TSan and states the edge explicitly. These are
 * no-ops outside -fsanitize=thread builds.
 */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
#define kc__tsan_acquire(p) __tsan_acquire(p)
#define kc__tsan_release(p) __tsan_release(p)
#define kc__tsan_ignore_begin() __tsan_ignore_thread_begin()
#define kc__tsan_ignore_end() __tsan_ignore_thread_end()
#else
#define kc__tsan_acquire(p) ((void)(p))
#define kc__tsan_release(p) ((void)(p))
#define kc__tsan_ignore_begin() ((void)0)
#define kc__tsan_ignore_end() ((void)0)
#endif

/* ------------------------------------------------------------------------ */
/* Sleeping: shared by clock.c, cancel.c and timer.c                          */

struct kc_cancel;

/*
 * Every kc_clock_sleep() builds a waiter on its own stack: a mutex, a
 * CLOCK_MONOTONIC condition variable and two flags. Whoever may end the
 * sleep holds a registry of waiters under its own lock:
 *
 *   - a kc_cancel keeps every sleeper that passed it, under cancel->lock;
 *   - a fake clock keeps every sleeper with its deadline, under clock->lock.
 *
 * A waker takes its registry lock, then the waiter's lock, sets the flag and
 * signals. The sleeper registers *before* it checks the condition (the
 * registration itself checks it under the registry lock), and checks its
 * flags under its own lock before it waits, so a wakeup can never fall
 * between the check and the wait. It unregisters before the waiter leaves
 * scope, and wakers only touch registered waiters, under the registry lock.
 *
 * Lock order: cancel->lock or clock->lock, then waiter->lock. A sleeper never
 * holds two of them at once.
 */
struct kc_waiter {
        pthread_mutex_t lock;
        pthread_cond_t cond;        /* CLOCK_MONOTONIC */
        bool expired;               /* under lock: a fake clock reached the deadline */
        bool cancelled;             /* under lock: the cancel token fired */
        int64_t deadline;           /* fake clocks: immutable while registered */
        struct kc_list cancel_link; /* on kc_cancel.waiters, under cancel->lock */
        struct kc_list clock_link;  /* on kc_clock.waiters, under clock->lock */
};

/*
 * A clock. The real one is a static singleton whose lists stay empty; a fake
 * clock keeps its time, its sleepers and its armed timers under its lock.
 */
struct kc_clock {
        bool fake;
        pthread_mutex_t lock;   /* fake clocks only */
        int64_t now;            /* fake clocks only, under lock */
        struct kc_list waiters; /* fake clocks only: struct kc_waiter, under lock */
        struct kc_list timers;  /* fake clocks only: armed struct kc_timer, under lock */
};

/* Called with the registry lock held that makes @p w reachable (clock.c). */
void kc__waiter_wake(struct kc_waiter *w, bool cancel);

/*
 * Registers @p w on @p c; returns false (and registers nothing) when @p c is
 * already set (cancel.c).
 */
bool kc__cancel_register(struct kc_cancel *c, struct kc_waiter *w);
void kc__cancel_unregister(struct kc_cancel *c, struct kc_waiter *w);

/*
 * With the fake clock's lock held: fires and disarms every armed timer of
 * @p c whose deadline is reached (timer.c).
 */
void kc__timers_fire_expired_locked(struct kc_clock *c);

struct kc_scavenger;

/* The figures core/memory.c's scavenger goes by, in bytes (0: unknown). */
struct kc__memory_sample {
        uint64_t rss_anon;      /* resident anonymous memory */
        uint64_t mem_available; /* the system's MemAvailable */
        uint64_t mem_total;     /* the system's MemTotal */
};

typedef int (*kc__memory_sample_fn)(void *userdata, struct kc__memory_sample *ret);
typedef void (*kc__memory_trim_fn)(void *userdata);

/* Tests: replaces how @p s reads its figures and trims (NULL: the real ones). */
void kc__scavenger_set_ops(struct kc_scavenger *s, kc__memory_sample_fn sample,
                           kc__memory_trim_fn trim, void *userdata);
/*
 * GLIBC_TUNABLES @p cur (NULL: unset) with glibc's per-thread caches off
 * added (*ret, malloc'd): 1; 0 with *ret untouched when @p cur sets their
 * count already; -ENOMEM.
 */
int kc__memory_tunables_without_tcache(const char *cur, char **ret);
/* Whether malloc is the C library's own, nothing preloaded (not valgrind's, not a sanitizer's). */
bool kc__malloc_is_glibcs(void);
