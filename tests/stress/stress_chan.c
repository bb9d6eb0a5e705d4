/* SPDX-License-Identifier: Apache-2.0 */
/*
 * 4 producers x 200,000 items into a kc_chan of capacity 1000, one consumer
 * blocking in kc_chan_pop_sc(). Every item must arrive exactly once and
 * each producer's items in order. Producers retry a full channel after a
 * 50 µs nanosleep (the test backs off; the channel never spins). Items are
 * heap-allocated and written before the push, so ThreadSanitizer checks
 * that a pop happens after the push that published the item.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "core/chan.h"
#include "core/cleanup.h"
#include "kc_test.h"

#define PRODUCERS 4
#define PER_PRODUCER 200000
#define CAPACITY 1000

struct item {
        unsigned producer;
        unsigned seq;
        uint64_t check;
};

struct shared {
        struct kc_chan *ch;
        pthread_barrier_t start;
        atomic_ulong full_retries;
};

struct producer {
        pthread_t thread;
        struct shared *sh;
        unsigned id;
};

static uint64_t item_check(unsigned producer, unsigned seq)
{
        return ((uint64_t)producer << 32 | seq) * UINT64_C(0x9e3779b97f4a7c15);
}

static void *producer_main(void *arg)
{
        struct producer *p = arg;
        const struct timespec backoff = { .tv_nsec = 50 * 1000 };
        unsigned long retries = 0;

        pthread_barrier_wait(&p->sh->start);
        for (unsigned seq = 0; seq < PER_PRODUCER; seq++) {
                struct item *it = malloc(sizeof(*it));

                if (!it)
                        abort();
                it->producer = p->id;
                it->seq = seq;
                it->check = item_check(p->id, seq);
                while (kc_chan_push_mp(p->sh->ch, it) == -EAGAIN) {
                        retries++;
                        nanosleep(&backoff, NULL);
                }
        }
        /* Relaxed: a statistic, read after pthread_join(). */
        atomic_fetch_add_explicit(&p->sh->full_retries, retries, memory_order_relaxed);
        return NULL;
}

static void test_stress_chan_mpsc(void **state)
{
        struct shared sh = { 0 };
        struct producer prod[PRODUCERS];
        unsigned next_seq[PRODUCERS] = { 0 };
        _cleanup_free_ uint8_t *seen = NULL;
        int timeout_ms = (int)(10000 * kc_test_timeout_multiplier());
        unsigned long total = 0, max_len = 0;
        struct timespec t0, t1;

        (void)state;
        seen = calloc((size_t)PRODUCERS * PER_PRODUCER, 1);
        assert_non_null(seen);
        assert_int_equal(kc_chan_new(&sh.ch, CAPACITY, free), 0);
        assert_int_equal(pthread_barrier_init(&sh.start, NULL, PRODUCERS + 1), 0);
        atomic_init(&sh.full_retries, 0);

        for (unsigned i = 0; i < PRODUCERS; i++) {
                prod[i] = (struct producer){ .sh = &sh, .id = i };
                assert_int_equal(pthread_create(&prod[i].thread, NULL, producer_main, &prod[i]), 0);
        }
        pthread_barrier_wait(&sh.start);
        clock_gettime(CLOCK_MONOTONIC, &t0);

        while (total < (unsigned long)PRODUCERS * PER_PRODUCER) {
                struct item *it = NULL;
                unsigned len = kc_chan_len(sh.ch);
                int r;

                assert_true(len <= CAPACITY);
                if (len > max_len)
                        max_len = len;
                /*
                 * Producers push until they are done, so a pop never has to
                 * wait long. A lost wakeup shows up as a pop that slept
                 * until poll() expired (its final dequeue then finds the
                 * item), or as -ETIMEDOUT.
                 */
                int64_t t_pop = kc_test_mono_ms();

                r = kc_chan_pop_sc(sh.ch, (void **)&it, timeout_ms);
                if (r != 0)
                        fail_msg("pop failed after %lu items: %s", total, strerror(-r));
                if (kc_test_mono_ms() - t_pop >= timeout_ms / 2)
                        fail_msg("pop %lu took %lld ms: lost wakeup?", total,
                                 (long long)(kc_test_mono_ms() - t_pop));
                assert_true(it->producer < PRODUCERS);
                assert_true(it->seq < PER_PRODUCER);
                assert_int_equal(it->check, item_check(it->producer, it->seq));
                /* Exactly once, and FIFO per producer. */
                assert_false(seen[(size_t)it->producer * PER_PRODUCER + it->seq]);
                seen[(size_t)it->producer * PER_PRODUCER + it->seq] = 1;
                assert_int_equal(it->seq, next_seq[it->producer]);
                next_seq[it->producer]++;
                free(it);
                total++;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);

        for (unsigned i = 0; i < PRODUCERS; i++)
                assert_int_equal(pthread_join(prod[i].thread, NULL), 0);
        for (unsigned i = 0; i < PRODUCERS; i++)
                assert_int_equal(next_seq[i], PER_PRODUCER);
        assert_int_equal(kc_chan_len(sh.ch), 0);
        assert_int_equal(kc_chan_pop_sc(sh.ch, &(void *){ NULL }, 0), -EAGAIN);

        print_message("%lu items in %.3f s, max len %lu, full retries %lu\n", total,
                      (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
                      max_len, atomic_load_explicit(&sh.full_retries, memory_order_relaxed));
        sh.ch = kc_chan_free(sh.ch);
        pthread_barrier_destroy(&sh.start);
}

#define ROUND_TRIPS 50000

struct pingpong {
        struct kc_chan *ping, *pong;
        int timeout_ms;
};

/*
 * Pops one item and fails when the pop took as long as the timeout: the
 * peer pushes right away, so only a lost wakeup (the consumer sleeping
 * through a push, found again by the dequeue after poll() expired) can make
 * a pop that slow.
 */
static uintptr_t pop_promptly(struct kc_chan *ch, int timeout_ms)
{
        int64_t t0 = kc_test_mono_ms();
        void *item = NULL;
        int r;

        r = kc_chan_pop_sc(ch, &item, timeout_ms);
        if (r != 0 || kc_test_mono_ms() - t0 >= timeout_ms / 2)
                abort(); /* not a cmocka assert: this may run off the main thread */
        return (uintptr_t)item;
}

static void *echo_main(void *arg)
{
        struct pingpong *pp = arg;

        for (uintptr_t i = 1; i <= ROUND_TRIPS; i++) {
                uintptr_t v = pop_promptly(pp->ping, pp->timeout_ms);

                if (v != i || kc_chan_push_mp(pp->pong, (void *)v) != 0)
                        abort();
        }
        return NULL;
}

/*
 * Each side sleeps in kc_chan_pop_sc() while the other pushes: every round
 * trip exercises the arm / re-check / poll race twice.
 */
static void test_stress_chan_pingpong(void **state)
{
        _cleanup_(kc_chan_freep) struct kc_chan *ping = NULL, *pong = NULL;
        struct pingpong pp;
        pthread_t t;

        (void)state;
        assert_int_equal(kc_chan_new(&ping, 1, NULL), 0);
        assert_int_equal(kc_chan_new(&pong, 1, NULL), 0);
        pp = (struct pingpong){ .ping = ping,
                                .pong = pong,
                                .timeout_ms = (int)(2000 * kc_test_timeout_multiplier()) };
        assert_int_equal(pthread_create(&t, NULL, echo_main, &pp), 0);
        for (uintptr_t i = 1; i <= ROUND_TRIPS; i++) {
                assert_int_equal(kc_chan_push_mp(ping, (void *)i), 0);
                assert_int_equal(pop_promptly(pong, pp.timeout_ms), i);
        }
        assert_int_equal(pthread_join(t, NULL), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_stress_chan_mpsc),
                cmocka_unit_test(test_stress_chan_pingpong),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
