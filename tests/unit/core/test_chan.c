/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/chan.h"
#include "core/cleanup.h"
#include "kc_test.h"

#define ITEM(i) ((void *)(uintptr_t)((i) + 1))

static bool fd_readable(int fd)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };

        return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void test_chan_invalid_capacity(void **state)
{
        struct kc_chan *ch = (struct kc_chan *)0x1;

        (void)state;
        assert_int_equal(kc_chan_new(&ch, 0, NULL), -EINVAL);
        assert_int_equal(kc_chan_new(&ch, (1u << 24) + 1, NULL), -EINVAL);
        assert_int_equal(kc_chan_new(&ch, UINT32_MAX, NULL), -EINVAL);
        assert_ptr_equal(ch, (struct kc_chan *)0x1); /* untouched on failure */
        assert_null(kc_chan_free(NULL));
}

static void test_chan_capacity_exact(void **state)
{
        const unsigned caps[] = { 1, 2, 3, 4, 5, 7, 8, 9, 1000, 1024 };

        (void)state;
        for (size_t c = 0; c < KC_ELEMENTSOF(caps); c++) {
                _cleanup_(kc_chan_freep) struct kc_chan *ch = NULL;
                unsigned n = caps[c];
                void *item;

                assert_int_equal(kc_chan_new(&ch, n, NULL), 0);
                assert_int_equal(kc_chan_cap(ch), n);
                assert_int_equal(kc_chan_len(ch), 0);
                for (unsigned i = 0; i < n; i++)
                        assert_int_equal(kc_chan_push_mp(ch, ITEM(i)), 0);
                assert_int_equal(kc_chan_len(ch), n);
                assert_int_equal(kc_chan_push_mp(ch, ITEM(n)), -EAGAIN);
                assert_int_equal(kc_chan_push_mp(ch, ITEM(n)), -EAGAIN);
                assert_int_equal(kc_chan_len(ch), n);

                /* One pop makes room for exactly one more. */
                assert_int_equal(kc_chan_pop_sc(ch, &item, 0), 0);
                assert_ptr_equal(item, ITEM(0));
                assert_int_equal(kc_chan_push_mp(ch, ITEM(n)), 0);
                assert_int_equal(kc_chan_push_mp(ch, ITEM(n + 1)), -EAGAIN);

                /* FIFO. */
                for (unsigned i = 1; i <= n; i++) {
                        assert_int_equal(kc_chan_pop_sc(ch, &item, 0), 0);
                        assert_ptr_equal(item, ITEM(i));
                }
                item = (void *)0x2;
                assert_int_equal(kc_chan_pop_sc(ch, &item, 0), -EAGAIN);
                assert_ptr_equal(item, (void *)0x2); /* untouched */
                assert_int_equal(kc_chan_len(ch), 0);
        }
}

/* Many laps around a small ring keep FIFO order and the exact bound. */
static void test_chan_wraparound(void **state)
{
        _cleanup_(kc_chan_freep) struct kc_chan *ch = NULL;
        unsigned pushed = 0, popped = 0;
        void *item;

        (void)state;
        assert_int_equal(kc_chan_new(&ch, 3, NULL), 0);
        for (int round = 0; round < 10000; round++) {
                unsigned k = (unsigned)round % 4;

                for (unsigned i = 0; i < k; i++) {
                        int r = kc_chan_push_mp(ch, ITEM(pushed));

                        if (pushed - popped < 3) {
                                assert_int_equal(r, 0);
                                pushed++;
                        } else {
                                assert_int_equal(r, -EAGAIN);
                        }
                }
                for (unsigned i = 0; i < (unsigned)(round * 7) % 4; i++) {
                        int r = kc_chan_pop_sc(ch, &item, 0);

                        if (popped < pushed) {
                                assert_int_equal(r, 0);
                                assert_ptr_equal(item, ITEM(popped));
                                popped++;
                        } else {
                                assert_int_equal(r, -EAGAIN);
                        }
                }
                assert_int_equal(kc_chan_len(ch), pushed - popped);
        }
}

static void test_chan_pop_timeout(void **state)
{
        _cleanup_(kc_chan_freep) struct kc_chan *ch = NULL;
        void *item = (void *)0x2;
        int64_t t0, elapsed;

        (void)state;
        assert_int_equal(kc_chan_new(&ch, 4, NULL), 0);
        assert_int_equal(kc_chan_pop_sc(ch, &item, 0), -EAGAIN);
        t0 = kc_test_mono_ms();
        assert_int_equal(kc_chan_pop_sc(ch, &item, 30), -ETIMEDOUT);
        elapsed = kc_test_mono_ms() - t0;
        assert_true(elapsed >= 30);
        assert_true(elapsed < (int64_t)(2000 * kc_test_timeout_multiplier()));
        assert_ptr_equal(item, (void *)0x2);

        /* An item already queued is returned at once, whatever the timeout. */
        assert_int_equal(kc_chan_push_mp(ch, ITEM(7)), 0);
        assert_int_equal(kc_chan_pop_sc(ch, &item, 10000), 0);
        assert_ptr_equal(item, ITEM(7));
}

static unsigned freed_sum, freed_count;

static void count_free(void *p)
{
        freed_sum += (unsigned)(uintptr_t)p;
        freed_count++;
}

static void test_chan_free_leftovers(void **state)
{
        struct kc_chan *ch = NULL;
        void *item;

        (void)state;
        freed_sum = freed_count = 0;
        assert_int_equal(kc_chan_new(&ch, 10, count_free), 0);
        for (unsigned i = 0; i < 10; i++)
                assert_int_equal(kc_chan_push_mp(ch, ITEM(i)), 0);
        assert_int_equal(kc_chan_pop_sc(ch, &item, 0), 0); /* the caller owns this one */
        ch = kc_chan_free(ch);
        assert_null(ch);
        assert_int_equal(freed_count, 9);
        assert_int_equal(freed_sum, 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 10);

        /* Heap items are released (ASan would report a leak otherwise). */
        assert_int_equal(kc_chan_new(&ch, 3, free), 0);
        assert_int_equal(kc_chan_push_mp(ch, malloc(16)), 0);
        assert_int_equal(kc_chan_push_mp(ch, malloc(16)), 0);
        kc_chan_free(ch);
}

static void test_chan_prepare_wait_and_fd(void **state)
{
        _cleanup_(kc_chan_freep) struct kc_chan *ch = NULL;
        uint64_t v;
        void *item;
        int fd;

        (void)state;
        assert_int_equal(kc_chan_new(&ch, 100, NULL), 0);
        fd = kc_chan_fd(ch);
        assert_true(fd >= 0);
        assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
        assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);

        /* Not armed: a push does not touch the eventfd. */
        assert_int_equal(kc_chan_push_mp(ch, ITEM(0)), 0);
        assert_false(fd_readable(fd));
        /* Items queued: do not sleep. */
        assert_true(kc_chan_prepare_wait_sc(ch));
        assert_int_equal(kc_chan_pop_sc(ch, &item, 0), 0);

        /* Empty: armed, and the next push makes the fd readable. */
        assert_false(kc_chan_prepare_wait_sc(ch));
        assert_false(fd_readable(fd));
        for (unsigned i = 0; i < 50; i++)
                assert_int_equal(kc_chan_push_mp(ch, ITEM(i)), 0);
        assert_true(fd_readable(fd));
        /* Coalesced: fifty pushes during one sleep wrote the eventfd once. */
        assert_int_equal(read(fd, &v, sizeof(v)), (ssize_t)sizeof(v));
        assert_int_equal(v, 1);

        /* pop_sc drains the eventfd once the channel is empty. */
        assert_true(kc_chan_prepare_wait_sc(ch)); /* 50 items queued */
        assert_int_equal(kc_chan_push_mp(ch, ITEM(50)), 0);
        for (unsigned i = 0; i < 51; i++)
                assert_int_equal(kc_chan_pop_sc(ch, &item, 0), 0);
        assert_int_equal(kc_chan_pop_sc(ch, &item, 0), -EAGAIN);
        assert_false(fd_readable(fd));
        assert_false(kc_chan_prepare_wait_sc(ch));
        assert_int_equal(kc_chan_push_mp(ch, ITEM(1)), 0);
        assert_true(fd_readable(fd));
        assert_int_equal(kc_chan_pop_sc(ch, &item, 0), 0);
        assert_int_equal(kc_chan_pop_sc(ch, &item, 0), -EAGAIN);
        assert_false(fd_readable(fd));
}

struct delayed_push {
        struct kc_chan *ch;
        int delay_ms;
        int count;
        int error; /* the first push error other than full; checked by the main thread */
};

/*
 * Pushes count items, delay_ms apart. A full channel (the consumer was
 * descheduled on a loaded machine) is waited out: these tests are about
 * wakeups, not capacity. cmocka's assertions may run on the main thread
 * only, so an unexpected error is recorded for it.
 */
static void *delayed_pusher(void *arg)
{
        struct delayed_push *d = arg;
        struct timespec ts = { .tv_nsec = (long)d->delay_ms * 1000000 };
        const struct timespec retry = { .tv_nsec = 1000000 };

        for (int i = 0; i < d->count; i++) {
                int r;

                nanosleep(&ts, NULL);
                while ((r = kc_chan_push_mp(d->ch, ITEM(i))) == -EAGAIN)
                        nanosleep(&retry, NULL);
                if (r < 0) {
                        d->error = r;
                        break;
                }
        }
        return NULL;
}

/* A consumer blocked in pop_sc wakes for a push from another thread. */
static void test_chan_blocking_pop_wakes(void **state)
{
        _cleanup_(kc_chan_freep) struct kc_chan *ch = NULL;
        struct delayed_push d;
        pthread_t t;
        void *item;

        (void)state;
        assert_int_equal(kc_chan_new(&ch, 8, NULL), 0);
        d = (struct delayed_push){ .ch = ch, .delay_ms = 5, .count = 20 };
        assert_int_equal(pthread_create(&t, NULL, delayed_pusher, &d), 0);
        for (int i = 0; i < d.count; i++) {
                int64_t t0 = kc_test_mono_ms();

                /* "Forever" in the first half, a long bounded wait after. */
                assert_int_equal(kc_chan_pop_sc(ch, &item, i < 10 ? -1 : 10000), 0);
                assert_ptr_equal(item, ITEM(i));
                assert_true(kc_test_mono_ms() - t0 <
                            (int64_t)(2000 * kc_test_timeout_multiplier()));
        }
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(d.error, 0);
}

/* The epoll-style consumer: prepare_wait, then poll the fd, never missing a push. */
static void test_chan_prepare_wait_threaded(void **state)
{
        _cleanup_(kc_chan_freep) struct kc_chan *ch = NULL;
        struct delayed_push d;
        pthread_t t;
        void *item;
        int got = 0;

        (void)state;
        assert_int_equal(kc_chan_new(&ch, 4, NULL), 0);
        d = (struct delayed_push){ .ch = ch, .delay_ms = 1, .count = 200 };
        assert_int_equal(pthread_create(&t, NULL, delayed_pusher, &d), 0);
        while (got < d.count) {
                struct pollfd p = { .fd = kc_chan_fd(ch), .events = POLLIN };

                while (kc_chan_pop_sc(ch, &item, 0) == 0) {
                        assert_ptr_equal(item, ITEM(got));
                        got++;
                }
                if (got == d.count)
                        break;
                if (kc_chan_prepare_wait_sc(ch))
                        continue;
                /* A lost wakeup would show up as this timeout. */
                assert_int_equal(poll(&p, 1, (int)(5000 * kc_test_timeout_multiplier())), 1);
        }
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(d.error, 0);
}

/* An epoll consumer that emptied the ring must not find the fd readable
 * again from pushes it already served (it would spin). */
static void test_chan_prepare_wait_drains_stale_wakeups(void **state)
{
        struct kc_chan *ch = NULL;
        struct pollfd p;
        void *item;

        (void)state;
        assert_int_equal(kc_chan_new(&ch, 8, NULL), 0);
        assert_false(kc_chan_prepare_wait_sc(ch));           /* empty: armed */
        assert_int_equal(kc_chan_push_mp(ch, (void *)1), 0); /* writes the eventfd */
        assert_int_equal(kc_chan_pop_sc(ch, &item, 0), 0);   /* ring had an item: no drain */
        assert_false(kc_chan_prepare_wait_sc(ch));           /* empty again: drains, re-arms */
        p = (struct pollfd){ .fd = kc_chan_fd(ch), .events = POLLIN };
        assert_int_equal(poll(&p, 1, 0), 0);
        assert_int_equal(kc_chan_push_mp(ch, (void *)2), 0);
        assert_int_equal(poll(&p, 1, 0), 1); /* a new push still wakes */
        kc_chan_free(ch);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_chan_invalid_capacity),
                cmocka_unit_test(test_chan_capacity_exact),
                cmocka_unit_test(test_chan_wraparound),
                cmocka_unit_test(test_chan_pop_timeout),
                cmocka_unit_test(test_chan_free_leftovers),
                cmocka_unit_test(test_chan_prepare_wait_and_fd),
                cmocka_unit_test(test_chan_prepare_wait_drains_stale_wakeups),
                cmocka_unit_test(test_chan_blocking_pop_wakes),
                cmocka_unit_test(test_chan_prepare_wait_threaded),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
