/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One-shot timers that an event loop polls by fd. On the real clock the fd is
 * a CLOCK_MONOTONIC timerfd. On a fake clock it is an eventfd: an armed timer
 * sits on the clock's list and the clock writes the eventfd when an advance
 * reaches the deadline (kc__timers_fire_expired_locked()), so tests drive
 * timers with the fake time alone.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "core/cleanup.h"
#include "core/clock.h"
#include "core/list.h"
#include "core/lock.h"
#include "core/timer.h"
#include "internal.h"

struct kc_timer {
        struct kc_clock *clock;
        int fd;              /* timerfd (real clock) or eventfd (fake clock) */
        int64_t deadline;    /* fake clocks: under clock->lock */
        struct kc_list link; /* fake clocks: on clock->timers while armed, under clock->lock */
};

/* Makes the timer's eventfd readable (a fake clock reached its deadline). */
static void timer_fire(struct kc_timer *t)
{
        uint64_t one = 1;

        /* EAGAIN only if the counter is saturated: it is readable anyway. */
        (void)!write(t->fd, &one, sizeof(one));
}

void kc__timers_fire_expired_locked(struct kc_clock *c)
{
        struct kc_timer *t, *next;

        kc_list_for_each_entry_safe (t, next, &c->timers, struct kc_timer, link) {
                if (t->deadline <= c->now) {
                        kc_list_del(&t->link);
                        timer_fire(t);
                }
        }
}

int kc_timer_new(struct kc_clock *c, struct kc_timer **ret)
{
        struct kc_timer *t;

        if (!c || !ret)
                return -EINVAL;
        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->clock = c;
        kc_list_init(&t->link);
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

/* Arms the timerfd of a real-clock timer for the wall-clock @p deadline_ns. */
static int real_timer_arm(struct kc_timer *t, int64_t deadline_ns)
{
        /* The deadline is wall time; the timerfd counts the rest of it. */
        int64_t rel = deadline_ns - kc_clock_now(t->clock);
        struct itimerspec its = { 0 };

        if (rel < 1)
                rel = 1; /* 0 would disarm: fire at once instead */
        its.it_value.tv_sec = rel / KC_NSEC_PER_SEC;
        its.it_value.tv_nsec = rel % KC_NSEC_PER_SEC;
        return KC_NERRNO(timerfd_settime(t->fd, 0, &its, NULL));
}

int kc_timer_arm(struct kc_timer *t, int64_t deadline_ns)
{
        struct kc_clock *c = t->clock;

        if (!c->fake)
                return real_timer_arm(t, deadline_ns);
        KC_LOCK_GUARD(&c->lock);
        kc_list_del(&t->link); /* a no-op unless armed */
        if (deadline_ns <= c->now) {
                timer_fire(t);
                return 0;
        }
        t->deadline = deadline_ns;
        kc_list_add_head(&c->timers, &t->link);
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
        KC_LOCK_GUARD(&c->lock);
        kc_list_del(&t->link);
}

bool kc_timer_ack(struct kc_timer *t)
{
        uint64_t v;

        /* Both a timerfd and an eventfd read 8 bytes and reset when read. */
        return read(t->fd, &v, sizeof(v)) == sizeof(v) && v > 0;
}
