/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core/thread.h: threads that list themselves on their way out are joined by
 * the next spawn and by the owner's shutdown, each exactly once, and only
 * once it has really ended.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <cmocka.h>

#include "core/list.h"
#include "core/thread.h"

#define N_THREADS 8

/* The owner: its lock guards the reaper and the fields below. */
struct owner {
        pthread_mutex_t lock;
        pthread_cond_t changed;
        struct kc_reaper reaper;
        bool go; /* the threads may retire */
        size_t released;
        size_t stack_seen; /* the smallest stack a thread found itself on */
};

struct item {
        struct owner *o;
        struct kc_thread thread;
        atomic_bool ended; /* set by a thread-specific destructor: after the thread returned */
};

static pthread_key_t ended_key;

static void mark_ended(void *v)
{
        struct item *it = v;

        atomic_store_explicit(&it->ended, true, memory_order_release);
}

static void release_item(struct kc_thread *t)
{
        struct item *it = kc_container_of(t, struct item, thread);

        /* Joined first: the thread ran its destructors before pthread_join returned. */
        assert_true(atomic_load_explicit(&it->ended, memory_order_acquire));
        it->o->released++;
        free(it);
}

static void *item_main(void *arg)
{
        struct item *self = arg;
        struct owner *o = self->o;
        struct timespec pause = { .tv_nsec = 20 * 1000 * 1000 };
        pthread_attr_t attr;
        size_t stack = 0;

        pthread_setspecific(ended_key, self);
        if (pthread_getattr_np(pthread_self(), &attr) == 0) {
                pthread_attr_getstacksize(&attr, &stack);
                pthread_attr_destroy(&attr);
        }
        pthread_mutex_lock(&o->lock);
        if (stack < o->stack_seen)
                o->stack_seen = stack;
        while (!o->go)
                pthread_cond_wait(&o->changed, &o->lock);
        kc_reaper_retire_locked(&o->reaper, &self->thread);
        pthread_cond_broadcast(&o->changed);
        pthread_mutex_unlock(&o->lock);
        /* Still running after it listed itself: a release before the join
         * would find it not ended. */
        nanosleep(&pause, NULL);
        return NULL;
}

/* For spawns that must fail: harmless if one wrongly starts. */
static void *noop_main(void *arg)
{
        return arg;
}

static int setup(void **state)
{
        struct owner *o = calloc(1, sizeof(*o));

        assert_non_null(o);
        pthread_mutex_init(&o->lock, NULL);
        pthread_cond_init(&o->changed, NULL);
        kc_reaper_init(&o->reaper, release_item);
        o->stack_seen = SIZE_MAX;
        assert_int_equal(pthread_key_create(&ended_key, mark_ended), 0);
        *state = o;
        return 0;
}

static int teardown(void **state)
{
        struct owner *o = *state;

        pthread_key_delete(ended_key);
        pthread_cond_destroy(&o->changed);
        pthread_mutex_destroy(&o->lock);
        free(o);
        return 0;
}

/* Spawns one item thread; the lock held. */
static int spawn_item_locked(struct owner *o, size_t stack_size)
{
        struct item *it = calloc(1, sizeof(*it));
        int r;

        assert_non_null(it);
        it->o = o;
        r = kc_reaper_spawn_locked(&o->reaper, &it->thread, stack_size, item_main, it);
        if (r < 0)
                free(it);
        return r;
}

static void wait_exited_locked(struct owner *o, size_t n)
{
        while (o->reaper.n_exited < n)
                pthread_cond_wait(&o->changed, &o->lock);
}

/* Retired threads stay listed until the next spawn joins them; the shutdown joins the rest. */
static void test_spawn_joins_the_retired(void **state)
{
        struct owner *o = *state;

        pthread_mutex_lock(&o->lock);
        for (int i = 0; i < N_THREADS; i++)
                assert_int_equal(spawn_item_locked(o, 0), 0);
        assert_int_equal(o->reaper.n_running, N_THREADS);
        assert_int_equal(o->reaper.n_exited, 0);

        o->go = true;
        pthread_cond_broadcast(&o->changed);
        wait_exited_locked(o, N_THREADS);
        assert_int_equal(o->reaper.n_running, 0);
        assert_int_equal(o->released, 0); /* listed, not joined yet */

        o->go = false;
        assert_int_equal(spawn_item_locked(o, 0), 0);
        assert_int_equal(o->released, N_THREADS); /* the spawn joined every one */
        assert_null(o->reaper.exited);
        assert_int_equal(o->reaper.n_exited, 0);
        assert_int_equal(o->reaper.n_running, 1);

        /* Shutdown: let the last one go, wait for it to retire, join it. */
        o->go = true;
        pthread_cond_broadcast(&o->changed);
        while (o->reaper.n_running > 0)
                pthread_cond_wait(&o->changed, &o->lock);
        assert_int_equal(kc_reaper_join_locked(&o->reaper), 1);
        assert_int_equal(o->released, N_THREADS + 1);
        assert_int_equal(kc_reaper_join_locked(&o->reaper), 0);
        pthread_mutex_unlock(&o->lock);
}

/* A spawn that fails returns -errno, counts nothing, and still joins the listed threads. */
static void test_spawn_failure(void **state)
{
        struct owner *o = *state;
        struct kc_thread t = { .next = (struct kc_thread *)0x1 };

        pthread_mutex_lock(&o->lock);
        assert_int_equal(spawn_item_locked(o, 0), 0);
        o->go = true;
        pthread_cond_broadcast(&o->changed);
        wait_exited_locked(o, 1);

        assert_int_equal(
                kc_reaper_spawn_locked(&o->reaper, &t, PTHREAD_STACK_MIN / 2, noop_main, NULL),
                -EINVAL);
        assert_ptr_equal(t.next, (struct kc_thread *)0x1); /* untouched */
        assert_int_equal(o->reaper.n_running, 0);
        assert_int_equal(o->released, 1);
        assert_int_equal(o->reaper.n_exited, 0);
        pthread_mutex_unlock(&o->lock);
}

/* Spawns one item thread with @p stack_size and returns the stack it found itself on. */
static size_t stack_of_one(struct owner *o, size_t stack_size)
{
        o->stack_seen = SIZE_MAX;
        assert_int_equal(spawn_item_locked(o, stack_size), 0);
        wait_exited_locked(o, 1);
        assert_int_equal(kc_reaper_join_locked(&o->reaper), 1);
        return o->stack_seen;
}

/*
 * The stack size asked for is honoured: at least that much, and less than a
 * thread on the default stack gets (sanitizers resize stacks, so the sizes
 * are compared, not matched).
 */
static void test_stack_size(void **state)
{
        struct owner *o = *state;
        const size_t want = 256 * 1024;
        size_t small, dflt;

        pthread_mutex_lock(&o->lock);
        o->go = true;
        small = stack_of_one(o, want);
        dflt = stack_of_one(o, 0);
        pthread_mutex_unlock(&o->lock);
        assert_true(small >= want);
        assert_true(small < dflt);
}

/* No release callback: joining still empties the list. */
static void test_no_release(void **state)
{
        struct owner *o = *state;
        struct item *it = calloc(1, sizeof(*it));

        assert_non_null(it);
        it->o = o;
        pthread_mutex_lock(&o->lock);
        kc_reaper_init(&o->reaper, NULL);
        o->go = true;
        assert_int_equal(kc_reaper_spawn_locked(&o->reaper, &it->thread, 0, item_main, it), 0);
        wait_exited_locked(o, 1);
        assert_int_equal(kc_reaper_join_locked(&o->reaper), 1);
        assert_true(atomic_load(&it->ended));
        assert_null(o->reaper.exited);
        assert_int_equal(o->released, 0);
        pthread_mutex_unlock(&o->lock);
        free(it);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_spawn_joins_the_retired, setup, teardown),
                cmocka_unit_test_setup_teardown(test_spawn_failure, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stack_size, setup, teardown),
                cmocka_unit_test_setup_teardown(test_no_release, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
