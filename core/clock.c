/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The injected clock, real or fake, and sleeping on it.
 *
 * kc_clock_sleep() parks a waiter (internal.h) on a CLOCK_MONOTONIC condition
 * variable. A real clock lets the condition variable time out; a fake clock
 * keeps the waiter on its list until kc_fake_clock_set() or
 * kc_fake_clock_advance() moves the time past the waiter's deadline, and then
 * also fires the fake clock's armed timers (timer.c). A cancel token given to
 * the sleep ends it early (cancel.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "core/cancel.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/list.h"
#include "core/lock.h"
#include "internal.h"

static struct kc_clock real_clock = {
        .fake = false,
        .lock = PTHREAD_MUTEX_INITIALIZER,
        .waiters = KC_LIST_HEAD_INIT(real_clock.waiters),
        .timers = KC_LIST_HEAD_INIT(real_clock.timers),
};

/* ------------------------------------------------------------------------ */
/* Waiters                                                                    */

static void waiter_init(struct kc_waiter *w)
{
        pthread_condattr_t attr;
        int r;

        *w = (struct kc_waiter){ 0 };
        kc_list_init(&w->cancel_link);
        kc_list_init(&w->clock_link);
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

void kc__waiter_wake(struct kc_waiter *w, bool cancel)
{
        KC_LOCK_GUARD(&w->lock);
        if (cancel)
                w->cancelled = true;
        else
                w->expired = true;
        pthread_cond_signal(&w->cond);
}

/* ------------------------------------------------------------------------ */
/* Clocks                                                                     */

struct kc_clock *kc_clock_real(void)
{
        return &real_clock;
}

int kc_fake_clock_new(struct kc_clock **ret, int64_t start_ns)
{
        _cleanup_free_ struct kc_clock *c = calloc(1, sizeof(*c));
        int r;

        if (!c)
                return -ENOMEM;
        r = pthread_mutex_init(&c->lock, NULL);
        if (r != 0)
                return -r;
        c->fake = true;
        c->now = start_ns;
        kc_list_init(&c->waiters);
        kc_list_init(&c->timers);
        *ret = TAKE_PTR(c);
        return 0;
}

struct kc_clock *kc_clock_free(struct kc_clock *c)
{
        if (!c || c == &real_clock)
                return NULL;
        kc__assert_se(kc_list_empty(&c->waiters));
        kc__assert_se(kc_list_empty(&c->timers));
        pthread_mutex_destroy(&c->lock);
        free(c);
        return NULL;
}

int64_t kc_clock_now(struct kc_clock *c)
{
        struct timespec ts;

        if (!c->fake) {
                clock_gettime(CLOCK_REALTIME, &ts);
                return (int64_t)ts.tv_sec * KC_NSEC_PER_SEC + ts.tv_nsec;
        }
        KC_LOCK_GUARD(&c->lock);
        return c->now;
}

/* With c->lock held: fires the timers and wakes the sleepers that are due. */
static void fake_clock_wake_expired(struct kc_clock *c)
{
        struct kc_waiter *w, *next;

        kc__timers_fire_expired_locked(c);

        kc_list_for_each_entry_safe (w, next, &c->waiters, struct kc_waiter, clock_link) {
                if (w->deadline > c->now)
                        continue;
                /* Unlink now so a later advance does not signal it again. */
                kc_list_del(&w->clock_link);
                kc__waiter_wake(w, false);
        }
}

/*
 * Registers @p w on the fake clock @p c with a deadline @p ns from now.
 * Returns false (nothing registered) when the deadline is already reached.
 */
static bool fake_clock_register(struct kc_clock *c, struct kc_waiter *w, int64_t ns)
{
        KC_LOCK_GUARD(&c->lock);
        if (__builtin_add_overflow(c->now, ns, &w->deadline))
                w->deadline = INT64_MAX;
        if (w->deadline <= c->now)
                return false;
        kc_list_add_head(&c->waiters, &w->clock_link);
        return true;
}

/* Idempotent: fake_clock_wake_expired() may have unlinked @p w already. */
static void fake_clock_unregister(struct kc_clock *c, struct kc_waiter *w)
{
        KC_LOCK_GUARD(&c->lock);
        kc_list_del(&w->clock_link);
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

/*
 * Blocks until @p w expires or is cancelled; returns whether it was
 * cancelled. A real clock times out at @p deadline; a fake clock waits for
 * fake_clock_wake_expired().
 */
static bool waiter_wait(struct kc_waiter *w, bool fake, const struct timespec *deadline)
{
        bool cancelled;
        int r;

        pthread_mutex_lock(&w->lock);
        while (!w->expired && !w->cancelled) {
                if (fake) {
                        pthread_cond_wait(&w->cond, &w->lock);
                        continue;
                }
                r = pthread_cond_timedwait(&w->cond, &w->lock, deadline);
                if (r == ETIMEDOUT)
                        w->expired = true;
        }
        cancelled = w->cancelled;
        pthread_mutex_unlock(&w->lock);
        return cancelled;
}

int kc_clock_sleep(struct kc_clock *c, int64_t ns, struct kc_cancel *cancel)
{
        struct kc_waiter w;
        struct timespec deadline = { 0 };
        bool on_clock = false, on_cancel = false, cancelled;

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
                on_cancel = kc__cancel_register(cancel, &w);
                if (!on_cancel)
                        w.cancelled = true;
        }

        cancelled = waiter_wait(&w, c->fake, &deadline);

        if (on_cancel)
                kc__cancel_unregister(cancel, &w);
        if (on_clock)
                fake_clock_unregister(c, &w);
        waiter_done(&w);
        return cancelled ? -ECANCELED : 0;
}

size_t kc_fake_clock_sleepers(struct kc_clock *c)
{
        struct kc_waiter *w;
        size_t n = 0;

        if (!c->fake)
                return 0;
        KC_LOCK_GUARD(&c->lock);
        kc_list_for_each_entry (w, &c->waiters, struct kc_waiter, clock_link)
                n++;
        return n;
}

int kc_fake_clock_set(struct kc_clock *c, int64_t now_ns)
{
        if (!c || !c->fake)
                return -EINVAL;
        KC_LOCK_GUARD(&c->lock);
        c->now = now_ns;
        fake_clock_wake_expired(c);
        return 0;
}

int kc_fake_clock_advance(struct kc_clock *c, int64_t ns)
{
        int64_t now;

        if (!c || !c->fake)
                return -EINVAL;
        KC_LOCK_GUARD(&c->lock);
        if (__builtin_add_overflow(c->now, ns, &now))
                return -ERANGE;
        c->now = now;
        fake_clock_wake_expired(c);
        return 0;
}
