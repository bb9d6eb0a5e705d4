/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The injected clock (real or fake) and one-shot cancellation tokens.
 *
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
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "core/cancel.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/timer.h"
#include "internal.h"

struct kc_waiter {
        pthread_mutex_t lock;
        pthread_cond_t cond; /* CLOCK_MONOTONIC */
        bool expired;        /* under lock: a fake clock reached the deadline */
        bool cancelled;      /* under lock: the cancel token fired */
        int64_t deadline;    /* fake clocks: immutable while registered */
        struct kc_waiter *cancel_prev, *cancel_next; /* under cancel->lock */
        struct kc_waiter *clock_prev, *clock_next;   /* under clock->lock */
};

struct kc_cancel {
        pthread_mutex_t lock;
        /* Written under lock, read anywhere (kc_cancel_is_set()). */
        atomic_bool set;
        struct kc_waiter *waiters; /* under lock */
};

struct kc_timer {
        struct kc_clock *clock;
        int fd;                       /* timerfd (real clock) or eventfd (fake clock) */
        bool armed;                   /* fake clocks: under clock->lock */
        int64_t deadline;             /* fake clocks: under clock->lock */
        struct kc_timer *prev, *next; /* fake clocks: armed timers, under clock->lock */
};

struct kc_clock {
        bool fake;
        pthread_mutex_t lock;      /* fake clocks only */
        int64_t now;               /* fake clocks only, under lock */
        struct kc_waiter *waiters; /* fake clocks only, under lock */
        struct kc_timer *timers;   /* fake clocks only: armed timers, under lock */
};

static struct kc_clock real_clock = {
        .fake = false,
        .lock = PTHREAD_MUTEX_INITIALIZER,
};

/* ------------------------------------------------------------------------ */
/* Waiters                                                                    */

static void waiter_init(struct kc_waiter *w)
{
        pthread_condattr_t attr;
        int r;

        *w = (struct kc_waiter){ 0 };
        /* glibc cannot fail these for a process-private, default mutex/cond. */
        r = pthread_mutex_init(&w->lock, NULL);
        kc__assert_se(r == 0);
        r = pthread_condattr_init(&attr);
        kc__assert_se(r == 0);
        r = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        kc__assert_se(r == 0);
        r = pthread_cond_init(&w->cond, &attr);
        kc__assert_se(r == 0);
        pthread_condattr_destroy(&attr);
}

static void waiter_done(struct kc_waiter *w)
{
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
}

/* Called with the registry lock held that makes @p w reachable. */
static void waiter_wake(struct kc_waiter *w, bool cancel)
{
        pthread_mutex_lock(&w->lock);
        if (cancel)
                w->cancelled = true;
        else
                w->expired = true;
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
}

/* ------------------------------------------------------------------------ */
/* Cancellation token                                                         */

int kc_cancel_new(struct kc_cancel **ret)
{
        struct kc_cancel *c;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        r = pthread_mutex_init(&c->lock, NULL);
        if (r != 0) {
                free(c);
                return -r;
        }
        atomic_init(&c->set, false);
        *ret = c;
        return 0;
}

struct kc_cancel *kc_cancel_free(struct kc_cancel *c)
{
        if (!c)
                return NULL;
        kc__assert_se(!c->waiters);
        pthread_mutex_destroy(&c->lock);
        free(c);
        return NULL;
}

void kc_cancel_trigger_mp(struct kc_cancel *c)
{
        pthread_mutex_lock(&c->lock);
        if (!atomic_load_explicit(&c->set, memory_order_relaxed)) {
                /*
                 * Release: pairs with the acquire load in kc_cancel_is_set(),
                 * so a thread that sees the token set also sees what the
                 * triggering thread wrote before triggering.
                 */
                atomic_store_explicit(&c->set, true, memory_order_release);
                for (struct kc_waiter *w = c->waiters; w; w = w->cancel_next)
                        waiter_wake(w, true);
        }
        pthread_mutex_unlock(&c->lock);
}

bool kc_cancel_is_set(const struct kc_cancel *c)
{
        /* Acquire: pairs with the release store in kc_cancel_trigger_mp(). */
        return atomic_load_explicit(&c->set, memory_order_acquire);
}

/* Returns false (and registers nothing) when @p c is already set. */
static bool cancel_register(struct kc_cancel *c, struct kc_waiter *w)
{
        bool ok = false;

        pthread_mutex_lock(&c->lock);
        if (!atomic_load_explicit(&c->set, memory_order_relaxed)) {
                w->cancel_prev = NULL;
                w->cancel_next = c->waiters;
                if (c->waiters)
                        c->waiters->cancel_prev = w;
                c->waiters = w;
                ok = true;
        }
        pthread_mutex_unlock(&c->lock);
        return ok;
}

static void cancel_unregister(struct kc_cancel *c, struct kc_waiter *w)
{
        pthread_mutex_lock(&c->lock);
        if (w->cancel_prev)
                w->cancel_prev->cancel_next = w->cancel_next;
        else
                c->waiters = w->cancel_next;
        if (w->cancel_next)
                w->cancel_next->cancel_prev = w->cancel_prev;
        pthread_mutex_unlock(&c->lock);
}

/* ------------------------------------------------------------------------ */
/* Clocks                                                                     */

struct kc_clock *kc_clock_real(void)
{
        return &real_clock;
}

int kc_fake_clock_new(struct kc_clock **ret, int64_t start_ns)
{
        struct kc_clock *c;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        r = pthread_mutex_init(&c->lock, NULL);
        if (r != 0) {
                free(c);
                return -r;
        }
        c->fake = true;
        c->now = start_ns;
        *ret = c;
        return 0;
}

struct kc_clock *kc_clock_free(struct kc_clock *c)
{
        if (!c || c == &real_clock)
                return NULL;
        kc__assert_se(!c->waiters);
        kc__assert_se(!c->timers);
        pthread_mutex_destroy(&c->lock);
        free(c);
        return NULL;
}

int64_t kc_clock_now(struct kc_clock *c)
{
        struct timespec ts;
        int64_t now;

        if (!c->fake) {
                clock_gettime(CLOCK_REALTIME, &ts);
                return (int64_t)ts.tv_sec * KC_NSEC_PER_SEC + ts.tv_nsec;
        }
        pthread_mutex_lock(&c->lock);
        now = c->now;
        pthread_mutex_unlock(&c->lock);
        return now;
}

/* With c->lock held: wakes every sleeper whose deadline is reached. */
static void timer_unlink_locked(struct kc_timer *t)
{
        if (!t->armed)
                return;
        if (t->prev)
                t->prev->next = t->next;
        else
                t->clock->timers = t->next;
        if (t->next)
                t->next->prev = t->prev;
        t->prev = t->next = NULL;
        t->armed = false;
}

/* Makes the timer's eventfd readable (a fake clock reached its deadline). */
static void timer_fire(struct kc_timer *t)
{
        uint64_t one = 1;

        /* EAGAIN only if the counter is saturated: it is readable anyway. */
        (void)!write(t->fd, &one, sizeof(one));
}

static void fake_clock_wake_expired(struct kc_clock *c)
{
        struct kc_waiter *w, *next;
        struct kc_timer *t, *tnext;

        for (t = c->timers; t; t = tnext) {
                tnext = t->next;
                if (t->deadline <= c->now) {
                        timer_unlink_locked(t);
                        timer_fire(t);
                }
        }

        for (w = c->waiters; w; w = next) {
                next = w->clock_next;
                if (w->deadline > c->now)
                        continue;
                /* Unlink now so a later advance does not signal it again. */
                if (w->clock_prev)
                        w->clock_prev->clock_next = w->clock_next;
                else
                        c->waiters = w->clock_next;
                if (w->clock_next)
                        w->clock_next->clock_prev = w->clock_prev;
                w->clock_prev = w->clock_next = NULL;
                waiter_wake(w, false);
        }
}

/*
 * Registers @p w on the fake clock @p c with a deadline @p ns from now.
 * Returns false (nothing registered) when the deadline is already reached.
 */
static bool fake_clock_register(struct kc_clock *c, struct kc_waiter *w, int64_t ns)
{
        bool ok = false;

        pthread_mutex_lock(&c->lock);
        if (__builtin_add_overflow(c->now, ns, &w->deadline))
                w->deadline = INT64_MAX;
        if (w->deadline > c->now) {
                w->clock_prev = NULL;
                w->clock_next = c->waiters;
                if (c->waiters)
                        c->waiters->clock_prev = w;
                c->waiters = w;
                ok = true;
        }
        pthread_mutex_unlock(&c->lock);
        return ok;
}

/* Idempotent: fake_clock_wake_expired() may have unlinked @p w already. */
static void fake_clock_unregister(struct kc_clock *c, struct kc_waiter *w)
{
        pthread_mutex_lock(&c->lock);
        if (w->clock_prev)
                w->clock_prev->clock_next = w->clock_next;
        else if (c->waiters == w)
                c->waiters = w->clock_next;
        if (w->clock_next)
                w->clock_next->clock_prev = w->clock_prev;
        w->clock_prev = w->clock_next = NULL;
        pthread_mutex_unlock(&c->lock);
}

static struct timespec monotonic_deadline(int64_t ns)
{
        struct timespec ts;
        int64_t sec = ns / KC_NSEC_PER_SEC;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        /* time_t is 64-bit here; keep far deadlines far without overflow. */
        if (sec > INT64_MAX / 2 - ts.tv_sec)
                sec = INT64_MAX / 2 - ts.tv_sec;
        ts.tv_sec += sec;
        ts.tv_nsec += ns % KC_NSEC_PER_SEC;
        if (ts.tv_nsec >= KC_NSEC_PER_SEC) {
                ts.tv_sec++;
                ts.tv_nsec -= KC_NSEC_PER_SEC;
        }
        return ts;
}

int kc_clock_sleep(struct kc_clock *c, int64_t ns, struct kc_cancel *cancel)
{
        struct kc_waiter w;
        struct timespec deadline;
        bool on_clock = false, on_cancel = false, cancelled;
        int r;

        if (cancel && kc_cancel_is_set(cancel))
                return -ECANCELED;
        if (ns <= 0)
                return 0;

        waiter_init(&w);
        if (c->fake) {
                on_clock = fake_clock_register(c, &w, ns);
                if (!on_clock)
                        w.expired = true;
        } else {
                deadline = monotonic_deadline(ns);
        }
        if (cancel) {
                on_cancel = cancel_register(cancel, &w);
                if (!on_cancel)
                        w.cancelled = true;
        }

        pthread_mutex_lock(&w.lock);
        while (!w.expired && !w.cancelled) {
                if (c->fake) {
                        pthread_cond_wait(&w.cond, &w.lock);
                        continue;
                }
                r = pthread_cond_timedwait(&w.cond, &w.lock, &deadline);
                if (r == ETIMEDOUT)
                        w.expired = true;
        }
        cancelled = w.cancelled;
        pthread_mutex_unlock(&w.lock);

        if (on_cancel)
                cancel_unregister(cancel, &w);
        if (on_clock)
                fake_clock_unregister(c, &w);
        waiter_done(&w);
        return cancelled ? -ECANCELED : 0;
}

size_t kc_fake_clock_sleepers(struct kc_clock *c)
{
        size_t n = 0;

        if (!c->fake)
                return 0;
        pthread_mutex_lock(&c->lock);
        for (struct kc_waiter *w = c->waiters; w; w = w->clock_next)
                n++;
        pthread_mutex_unlock(&c->lock);
        return n;
}

int kc_fake_clock_set(struct kc_clock *c, int64_t now_ns)
{
        if (!c || !c->fake)
                return -EINVAL;
        pthread_mutex_lock(&c->lock);
        c->now = now_ns;
        fake_clock_wake_expired(c);
        pthread_mutex_unlock(&c->lock);
        return 0;
}

int kc_fake_clock_advance(struct kc_clock *c, int64_t ns)
{
        int64_t now;
        int r = 0;

        if (!c || !c->fake)
                return -EINVAL;
        pthread_mutex_lock(&c->lock);
        if (__builtin_add_overflow(c->now, ns, &now)) {
                r = -ERANGE;
        } else {
                c->now = now;
                fake_clock_wake_expired(c);
        }
        pthread_mutex_unlock(&c->lock);
        return r;
}

/* ------------------------------------------------------------------------ */
/* Timers                                                                     */

int kc_timer_new(struct kc_clock *c, struct kc_timer **ret)
{
        struct kc_timer *t;

        if (!c || !ret)
                return -EINVAL;
        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->clock = c;
        /* Real clocks sleep on CLOCK_MONOTONIC, like kc_clock_sleep(). */
        t->fd = c->fake ? eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)
                        : timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (t->fd < 0) {
                int r = -errno;

                free(t);
                return r;
        }
        *ret = t;
        return 0;
}

struct kc_timer *kc_timer_free(struct kc_timer *t)
{
        if (!t)
                return NULL;
        kc_timer_disarm(t);
        close(t->fd);
        free(t);
        return NULL;
}

int kc_timer_fd(const struct kc_timer *t)
{
        return t->fd;
}

int kc_timer_arm(struct kc_timer *t, int64_t deadline_ns)
{
        struct kc_clock *c = t->clock;

        if (!c->fake) {
                /* The deadline is wall time; the timerfd counts the rest of it. */
                int64_t rel = deadline_ns - kc_clock_now(c);
                struct itimerspec its = { 0 };

                if (rel < 1)
                        rel = 1; /* 0 would disarm: fire at once instead */
                its.it_value.tv_sec = rel / KC_NSEC_PER_SEC;
                its.it_value.tv_nsec = rel % KC_NSEC_PER_SEC;
                return KC_NERRNO(timerfd_settime(t->fd, 0, &its, NULL));
        }
        pthread_mutex_lock(&c->lock);
        timer_unlink_locked(t);
        if (deadline_ns <= c->now) {
                timer_fire(t);
        } else {
                t->deadline = deadline_ns;
                t->armed = true;
                t->next = c->timers;
                if (c->timers)
                        c->timers->prev = t;
                c->timers = t;
        }
        pthread_mutex_unlock(&c->lock);
        return 0;
}

void kc_timer_disarm(struct kc_timer *t)
{
        struct kc_clock *c = t->clock;

        if (!c->fake) {
                struct itimerspec its = { 0 };

                (void)timerfd_settime(t->fd, 0, &its, NULL);
                return;
        }
        pthread_mutex_lock(&c->lock);
        timer_unlink_locked(t);
        pthread_mutex_unlock(&c->lock);
}

bool kc_timer_ack(struct kc_timer *t)
{
        uint64_t v;

        /* Both a timerfd and an eventfd read 8 bytes and reset when read. */
        return read(t->fd, &v, sizeof(v)) == sizeof(v) && v > 0;
}
