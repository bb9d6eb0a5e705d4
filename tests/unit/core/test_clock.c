/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "core/cancel.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/timer.h"
#include "internal.h"
#include "kc_test.h"

#define START_NS (INT64_C(1700000000) * KC_NSEC_PER_SEC)

static void real_sleep_ms(int ms)
{
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * KC_NSEC_PER_MSEC };

        nanosleep(&ts, NULL);
}

struct sleeper {
        pthread_t thread;
        struct kc_clock *clock;
        struct kc_cancel *cancel;
        int64_t ns;
        int ret;
        int64_t woke_mono_ns;
        atomic_bool done;
};

static void *sleeper_main(void *arg)
{
        struct sleeper *s = arg;

        s->ret = kc_clock_sleep(s->clock, s->ns, s->cancel);
        s->woke_mono_ns = kc_test_mono_ns();
        atomic_store_explicit(&s->done, true, memory_order_release);
        return NULL;
}

static void sleeper_start(struct sleeper *s, struct kc_clock *c, int64_t ns,
                          struct kc_cancel *cancel)
{
        s->clock = c;
        s->ns = ns;
        s->cancel = cancel;
        s->ret = 1;
        atomic_init(&s->done, false);
        assert_int_equal(pthread_create(&s->thread, NULL, sleeper_main, s), 0);
}

/* Joins within a bounded real time; fails the test instead of hanging. */
static void sleeper_join(struct sleeper *s)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += (time_t)(5 * kc_test_timeout_multiplier());
        assert_int_equal(pthread_timedjoin_np(s->thread, NULL, &ts), 0);
}

static void wait_for_sleepers(struct kc_clock *c, size_t n)
{
        int64_t limit =
                kc_test_mono_ns() + (int64_t)(5 * kc_test_timeout_multiplier() * KC_NSEC_PER_SEC);

        while (kc_fake_clock_sleepers(c) != n) {
                assert_true(kc_test_mono_ns() < limit);
                real_sleep_ms(1);
        }
}

static void test_fake_clock_now(void **state)
{
        _cleanup_(kc_clock_freep) struct kc_clock *c = NULL;

        (void)state;
        assert_int_equal(kc_fake_clock_new(&c, START_NS), 0);
        assert_int_equal(kc_clock_now(c), START_NS);
        assert_int_equal(kc_fake_clock_advance(c, 5 * KC_NSEC_PER_SEC), 0);
        assert_int_equal(kc_clock_now(c), START_NS + 5 * KC_NSEC_PER_SEC);
        assert_int_equal(kc_fake_clock_set(c, 42), 0);
        assert_int_equal(kc_clock_now(c), 42);
        assert_int_equal(kc_fake_clock_advance(c, INT64_MAX), -ERANGE);
        assert_int_equal(kc_clock_now(c), 42);
        /* Zero and negative sleeps return at once. */
        assert_int_equal(kc_clock_sleep(c, 0, NULL), 0);
        assert_int_equal(kc_clock_sleep(c, -5, NULL), 0);

        assert_int_equal(kc_fake_clock_advance(kc_clock_real(), 1), -EINVAL);
        assert_int_equal(kc_fake_clock_set(kc_clock_real(), 1), -EINVAL);
        assert_null(kc_clock_free(kc_clock_real()));
        assert_null(kc_clock_free(NULL));
}

static void test_real_clock_now(void **state)
{
        struct timespec ts;
        int64_t now;

        (void)state;
        clock_gettime(CLOCK_REALTIME, &ts);
        now = kc_clock_now(kc_clock_real());
        assert_true(llabs(now - ((int64_t)ts.tv_sec * KC_NSEC_PER_SEC + ts.tv_nsec)) <
                    KC_NSEC_PER_SEC);
}

static void test_fake_advance_wakes_sleeper(void **state)
{
        _cleanup_(kc_clock_freep) struct kc_clock *c = NULL;
        struct sleeper s;

        (void)state;
        assert_int_equal(kc_fake_clock_new(&c, START_NS), 0);
        sleeper_start(&s, c, 10 * KC_NSEC_PER_SEC, NULL);
        wait_for_sleepers(c, 1);

        /* Short of the deadline: still asleep. */
        assert_int_equal(kc_fake_clock_advance(c, 10 * KC_NSEC_PER_SEC - 1), 0);
        real_sleep_ms(30);
        assert_false(atomic_load_explicit(&s.done, memory_order_acquire));
        assert_int_equal(kc_fake_clock_sleepers(c), 1);

        /* Reaching it exactly wakes it. */
        assert_int_equal(kc_fake_clock_advance(c, 1), 0);
        sleeper_join(&s);
        assert_int_equal(s.ret, 0);
        assert_int_equal(kc_fake_clock_sleepers(c), 0);
}

static void test_fake_set_wakes_only_due_sleepers(void **state)
{
        _cleanup_(kc_clock_freep) struct kc_clock *c = NULL;
        struct sleeper s[3];

        (void)state;
        assert_int_equal(kc_fake_clock_new(&c, START_NS), 0);
        for (int i = 0; i < 3; i++)
                sleeper_start(&s[i], c, (i + 1) * KC_NSEC_PER_SEC, NULL);
        wait_for_sleepers(c, 3);

        assert_int_equal(kc_fake_clock_set(c, START_NS + 2 * KC_NSEC_PER_SEC), 0);
        sleeper_join(&s[0]);
        sleeper_join(&s[1]);
        assert_int_equal(s[0].ret, 0);
        assert_int_equal(s[1].ret, 0);
        real_sleep_ms(20);
        assert_false(atomic_load_explicit(&s[2].done, memory_order_acquire));
        assert_int_equal(kc_fake_clock_sleepers(c), 1);

        assert_int_equal(kc_fake_clock_advance(c, 5 * KC_NSEC_PER_SEC), 0);
        sleeper_join(&s[2]);
        assert_int_equal(s[2].ret, 0);
}

static void test_cancel_wakes_fake_sleeper(void **state)
{
        _cleanup_(kc_clock_freep) struct kc_clock *c = NULL;
        _cleanup_(kc_cancel_freep) struct kc_cancel *cancel = NULL;
        struct sleeper s;

        (void)state;
        assert_int_equal(kc_fake_clock_new(&c, START_NS), 0);
        assert_int_equal(kc_cancel_new(&cancel), 0);
        sleeper_start(&s, c, 3600 * KC_NSEC_PER_SEC, cancel);
        wait_for_sleepers(c, 1);
        assert_false(kc_cancel_is_set(cancel));
        kc_cancel_trigger_mp(cancel);
        kc_cancel_trigger_mp(cancel); /* idempotent */
        assert_true(kc_cancel_is_set(cancel));
        sleeper_join(&s);
        assert_int_equal(s.ret, -ECANCELED);
        assert_int_equal(kc_fake_clock_sleepers(c), 0);
        assert_int_equal(kc_clock_now(c), START_NS);

        /* A set token ends a sleep before it starts, on either clock. */
        assert_int_equal(kc_clock_sleep(c, KC_NSEC_PER_SEC, cancel), -ECANCELED);
        assert_int_equal(kc_clock_sleep(kc_clock_real(), 3600 * KC_NSEC_PER_SEC, cancel),
                         -ECANCELED);
}

static void test_cancel_wakes_real_sleeper_quickly(void **state)
{
        _cleanup_(kc_cancel_freep) struct kc_cancel *cancel = NULL;
        struct sleeper s[4];
        int64_t t0;

        (void)state;
        assert_int_equal(kc_cancel_new(&cancel), 0);
        for (int i = 0; i < 4; i++)
                sleeper_start(&s[i], kc_clock_real(), 3600 * KC_NSEC_PER_SEC, cancel);
        real_sleep_ms(20);
        t0 = kc_test_mono_ns();
        kc_cancel_trigger_mp(cancel);
        for (int i = 0; i < 4; i++) {
                sleeper_join(&s[i]);
                assert_int_equal(s[i].ret, -ECANCELED);
                /* Promptly: well under a second (a lost wakeup would hang). */
                assert_true(s[i].woke_mono_ns - t0 <
                            (int64_t)(0.5 * kc_test_timeout_multiplier() * KC_NSEC_PER_SEC));
        }
}

static void test_real_sleep_duration(void **state)
{
        _cleanup_(kc_cancel_freep) struct kc_cancel *cancel = NULL;
        int64_t t0, elapsed;

        (void)state;
        t0 = kc_test_mono_ns();
        assert_int_equal(kc_clock_sleep(kc_clock_real(), 20 * KC_NSEC_PER_MSEC, NULL), 0);
        elapsed = kc_test_mono_ns() - t0;
        assert_true(elapsed >= 20 * KC_NSEC_PER_MSEC);
        assert_true(elapsed < (int64_t)(2 * kc_test_timeout_multiplier() * KC_NSEC_PER_SEC));

        /* With an untriggered token it still sleeps the full time. */
        assert_int_equal(kc_cancel_new(&cancel), 0);
        t0 = kc_test_mono_ns();
        assert_int_equal(kc_clock_sleep(kc_clock_real(), 20 * KC_NSEC_PER_MSEC, cancel), 0);
        assert_true(kc_test_mono_ns() - t0 >= 20 * KC_NSEC_PER_MSEC);
}

static bool fd_readable(int fd, int timeout_ms)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };

        return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

/* A fake-clock timer fires exactly when an advance reaches its deadline. */
static void test_fake_timer(void **state)
{
        struct kc_clock *c = NULL;
        struct kc_timer *t = NULL;
        int64_t t0;

        (void)state;
        assert_int_equal(kc_fake_clock_new(&c, 1000 * KC_NSEC_PER_SEC), 0);
        assert_int_equal(kc_timer_new(c, &t), 0);
        t0 = kc_clock_now(c);
        assert_int_equal(kc_timer_arm(t, t0 + KC_NSEC_PER_SEC), 0);
        assert_false(fd_readable(kc_timer_fd(t), 0));
        kc_fake_clock_advance(c, KC_NSEC_PER_SEC - 1);
        assert_false(fd_readable(kc_timer_fd(t), 0));
        assert_false(kc_timer_ack(t));
        kc_fake_clock_advance(c, 1);
        assert_true(fd_readable(kc_timer_fd(t), 0));
        assert_true(kc_timer_ack(t));
        assert_false(fd_readable(kc_timer_fd(t), 0)); /* one shot, drained */
        kc_fake_clock_advance(c, 10 * KC_NSEC_PER_SEC);
        assert_false(fd_readable(kc_timer_fd(t), 0));
        /* Re-arming replaces the deadline; a past deadline fires at once. */
        assert_int_equal(kc_timer_arm(t, kc_clock_now(c) + 5), 0);
        assert_int_equal(kc_timer_arm(t, kc_clock_now(c) + 50), 0);
        kc_fake_clock_advance(c, 5);
        assert_false(fd_readable(kc_timer_fd(t), 0));
        kc_fake_clock_advance(c, 45);
        assert_true(kc_timer_ack(t));
        assert_int_equal(kc_timer_arm(t, kc_clock_now(c) - 1), 0);
        assert_true(kc_timer_ack(t));
        /* Disarmed: nothing fires; the clock can be freed after the timer. */
        assert_int_equal(kc_timer_arm(t, kc_clock_now(c) + 1), 0);
        kc_timer_disarm(t);
        kc_fake_clock_advance(c, 2);
        assert_false(kc_timer_ack(t));
        assert_int_equal(kc_timer_arm(t, kc_clock_now(c) + 1), 0);
        kc_timer_free(t); /* unlinks an armed timer */
        kc_clock_free(c);
}

/* A real-clock timer is a timerfd: readable after about the delay, not before. */
static void test_real_timer(void **state)
{
        struct kc_clock *c = kc_clock_real();
        struct kc_timer *t = NULL;

        (void)state;
        assert_int_equal(kc_timer_new(c, &t), 0);
        assert_int_equal(kc_timer_arm(t, kc_clock_now(c) + 30 * KC_NSEC_PER_MSEC), 0);
        assert_false(fd_readable(kc_timer_fd(t), 0));
        assert_true(fd_readable(kc_timer_fd(t), 5000));
        assert_true(kc_timer_ack(t));
        kc_timer_disarm(t);
        kc_timer_free(t);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fake_clock_now),
                cmocka_unit_test(test_real_clock_now),
                cmocka_unit_test(test_fake_advance_wakes_sleeper),
                cmocka_unit_test(test_fake_set_wakes_only_due_sleepers),
                cmocka_unit_test(test_cancel_wakes_fake_sleeper),
                cmocka_unit_test(test_cancel_wakes_real_sleeper_quickly),
                cmocka_unit_test(test_real_sleep_duration),
                cmocka_unit_test(test_fake_timer),
                cmocka_unit_test(test_real_timer),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
