/* SPDX-License-Identifier: Apache-2.0 */
/*
 * runtimeState (UPSTREAM.md §7, FEATURES.md F-RT-01..06): the runtime-sync
 * threshold, named health checks, the runtime error, the separate network
 * and storage errors and the NewAggregate formatting; plus re-entrancy from
 * a health check and concurrent readers and writers (run under TSan).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/cleanup.h"
#include "core/clock.h"
#include "health/runtime_state.h"

#define T0 (INT64_C(1700000000) * KC_NSEC_PER_SEC)
#define THRESHOLD (30 * KC_NSEC_PER_SEC) /* maxWaitForContainerRuntime */

#define MSG_NOT_YET "container runtime status check may not have completed yet"
#define MSG_DOWN "container runtime is down"
#define PLEG_ERR "pleg was last seen active 3m3.9s ago; threshold is 3m0s"

struct fixture {
        struct kc_clock *clock;
        struct kc_runtime_state *rs;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        if (!f || kc_fake_clock_new(&f->clock, T0) < 0 ||
            kc_runtime_state_new(f->clock, THRESHOLD, &f->rs) < 0)
                return -1;
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        f->rs = kc_runtime_state_free(f->rs);
        f->clock = kc_clock_free(f->clock);
        free(f);
        return 0;
}

/* Asserts runtime_errors() returns exactly @p want (NULL: no error). */
static void expect_runtime_errors(struct kc_runtime_state *rs, const char *want)
{
        _cleanup_free_ char *got = NULL;

        assert_int_equal(kc_runtime_state_runtime_errors(rs, &got), 0);
        if (want) {
                assert_non_null(got);
                assert_string_equal(got, want);
        } else
                assert_null(got);
}

static void expect_network_errors(struct kc_runtime_state *rs, const char *want)
{
        _cleanup_free_ char *got = NULL;

        assert_int_equal(kc_runtime_state_network_errors(rs, &got), 0);
        if (want) {
                assert_non_null(got);
                assert_string_equal(got, want);
        } else
                assert_null(got);
}

static void expect_storage_errors(struct kc_runtime_state *rs, const char *want)
{
        _cleanup_free_ char *got = NULL;

        assert_int_equal(kc_runtime_state_storage_errors(rs, &got), 0);
        if (want) {
                assert_non_null(got);
                assert_string_equal(got, want);
        } else
                assert_null(got);
}

/* A controllable check: unhealthy with @err (NULL: no message) unless healthy. */
struct fake_check {
        atomic_bool healthy;
        const char *err;
        atomic_uint calls;
};

static bool fake_check_fn(void *userdata, char **ret_err)
{
        struct fake_check *c = userdata;

        atomic_fetch_add_explicit(&c->calls, 1, memory_order_relaxed);
        if (atomic_load_explicit(&c->healthy, memory_order_relaxed))
                return true;
        if (c->err)
                *ret_err = strdup(c->err);
        return false;
}

static void test_new_rejects_bad_threshold(void **state)
{
        struct fixture *f = *state;
        struct kc_runtime_state *rs = (void *)1;

        assert_int_equal(kc_runtime_state_new(f->clock, 0, &rs), -EINVAL);
        assert_int_equal(kc_runtime_state_new(f->clock, -1, &rs), -EINVAL);
        assert_ptr_equal(rs, (void *)1); /* untouched on failure */
        assert_null(kc_runtime_state_free(NULL));
}

/* F-RT-01: before the first runtime status poll, only "may not have completed yet". */
static void test_before_first_sync(void **state)
{
        struct fixture *f = *state;

        expect_runtime_errors(f->rs, MSG_NOT_YET);
        /* Time passing does not turn it into "down": there is no sync to age. */
        assert_int_equal(kc_fake_clock_advance(f->clock, 10 * KC_NSEC_PER_MIN), 0);
        expect_runtime_errors(f->rs, MSG_NOT_YET);
}

/* F-RT-01: the 30 s threshold; down exactly at last + threshold, fine 1 ns earlier. */
static void test_sync_threshold_boundary(void **state)
{
        struct fixture *f = *state;

        kc_runtime_state_set_runtime_sync(f->rs, kc_clock_now(f->clock));
        expect_runtime_errors(f->rs, NULL);

        assert_int_equal(kc_fake_clock_advance(f->clock, THRESHOLD - 1), 0);
        expect_runtime_errors(f->rs, NULL);

        assert_int_equal(kc_fake_clock_advance(f->clock, 1), 0); /* now == last + 30 s */
        expect_runtime_errors(f->rs, MSG_DOWN);

        assert_int_equal(kc_fake_clock_advance(f->clock, KC_NSEC_PER_MIN), 0);
        expect_runtime_errors(f->rs, MSG_DOWN);

        /* A fresh poll (updateRuntimeUp every 5 s) brings it back. */
        kc_runtime_state_set_runtime_sync(f->rs, kc_clock_now(f->clock));
        expect_runtime_errors(f->rs, NULL);
}

/* F-RT-01: a sync at the Unix epoch is a real sync (Go's zero time is year 1, not 0). */
static void test_sync_at_epoch_counts(void **state)
{
        _cleanup_(kc_clock_freep) struct kc_clock *clock = NULL;
        _cleanup_(kc_runtime_state_freep) struct kc_runtime_state *rs = NULL;

        (void)state;
        assert_int_equal(kc_fake_clock_new(&clock, 0), 0);
        assert_int_equal(kc_runtime_state_new(clock, THRESHOLD, &rs), 0);
        expect_runtime_errors(rs, MSG_NOT_YET);
        kc_runtime_state_set_runtime_sync(rs, 0);
        expect_runtime_errors(rs, NULL);
        assert_int_equal(kc_fake_clock_advance(clock, THRESHOLD), 0);
        expect_runtime_errors(rs, MSG_DOWN);
}

/* F-RT-01: last + threshold beyond INT64_MAX is a deadline that never comes. */
static void test_sync_far_future(void **state)
{
        struct fixture *f = *state;

        kc_runtime_state_set_runtime_sync(f->rs, INT64_MAX - 1);
        expect_runtime_errors(f->rs, NULL);
}

/* F-RT-02, F-RT-06: named checks in registration order; one vs several errors. */
static void test_health_checks(void **state)
{
        struct fixture *f = *state;
        struct fake_check pleg = { .err = PLEG_ERR }, evented = { .err = "evented pleg stalled" };

        atomic_init(&pleg.healthy, true);
        atomic_init(&evented.healthy, true);
        atomic_init(&pleg.calls, 0);
        atomic_init(&evented.calls, 0);
        assert_int_equal(kc_runtime_state_add_health_check(f->rs, "PLEG", fake_check_fn, &pleg), 0);
        assert_int_equal(
                kc_runtime_state_add_health_check(f->rs, "EventedPLEG", fake_check_fn, &evented),
                0);
        kc_runtime_state_set_runtime_sync(f->rs, kc_clock_now(f->clock));

        /* All healthy: nil, and every check was consulted. */
        expect_runtime_errors(f->rs, NULL);
        assert_int_equal(atomic_load(&pleg.calls), 1);
        assert_int_equal(atomic_load(&evented.calls), 1);

        /* One failing check: its message alone, no brackets. */
        atomic_store(&pleg.healthy, false);
        expect_runtime_errors(f->rs, "PLEG is not healthy: " PLEG_ERR);

        /* Two failing checks: registration order, "[a, b]". */
        atomic_store(&evented.healthy, false);
        expect_runtime_errors(f->rs, "[PLEG is not healthy: " PLEG_ERR
                                     ", EventedPLEG is not healthy: evented pleg stalled]");

        /* Only the second failing. */
        atomic_store(&pleg.healthy, true);
        expect_runtime_errors(f->rs, "EventedPLEG is not healthy: evented pleg stalled");

        /* The upstream log line: runtime down first, then PLEG. */
        atomic_store(&evented.healthy, true);
        atomic_store(&pleg.healthy, false);
        assert_int_equal(kc_fake_clock_advance(f->clock, THRESHOLD), 0);
        expect_runtime_errors(f->rs, "[container runtime is down, PLEG is not healthy: pleg was "
                                     "last seen active 3m3.9s ago; threshold is 3m0s]");
}

/* F-RT-02: an unhealthy check without a message prints Go's nil error. */
static void test_health_check_without_message(void **state)
{
        struct fixture *f = *state;
        struct fake_check c = { .err = NULL };

        atomic_init(&c.healthy, false);
        atomic_init(&c.calls, 0);
        assert_int_equal(kc_runtime_state_add_health_check(f->rs, "PLEG", fake_check_fn, &c), 0);
        kc_runtime_state_set_runtime_sync(f->rs, kc_clock_now(f->clock));
        expect_runtime_errors(f->rs, "PLEG is not healthy: <nil>");
}

/* F-RT-03: the runtime-condition error comes last; NULL clears it. */
static void test_runtime_error_last(void **state)
{
        struct fixture *f = *state;
        struct fake_check pleg = { .err = PLEG_ERR };
        const char *rt_err = "container runtime not ready: RuntimeReady=false "
                             "reason:DockerDaemonNotReady message:docker: failed to get docker "
                             "version";

        atomic_init(&pleg.healthy, true);
        atomic_init(&pleg.calls, 0);
        assert_int_equal(kc_runtime_state_add_health_check(f->rs, "PLEG", fake_check_fn, &pleg), 0);

        /* Runtime error alone (after a sync). */
        kc_runtime_state_set_runtime_sync(f->rs, kc_clock_now(f->clock));
        assert_int_equal(kc_runtime_state_set_runtime_state(f->rs, rt_err), 0);
        {
                _cleanup_free_ char *got = NULL;

                assert_int_equal(kc_runtime_state_runtime_errors(f->rs, &got), 0);
                assert_string_equal(got, rt_err);
        }

        /* updateRuntimeUp returns before setRuntimeSync: after 30 s all three show. */
        atomic_store(&pleg.healthy, false);
        assert_int_equal(kc_fake_clock_advance(f->clock, THRESHOLD), 0);
        {
                _cleanup_free_ char *want = NULL;

                assert_true(asprintf(&want, "[%s, PLEG is not healthy: %s, %s]", MSG_DOWN, PLEG_ERR,
                                     rt_err) > 0);
                expect_runtime_errors(f->rs, want);
        }

        /* Replacing and clearing. */
        atomic_store(&pleg.healthy, true);
        kc_runtime_state_set_runtime_sync(f->rs, kc_clock_now(f->clock));
        assert_int_equal(kc_runtime_state_set_runtime_state(f->rs, "other"), 0);
        expect_runtime_errors(f->rs, "other");
        assert_int_equal(kc_runtime_state_set_runtime_state(f->rs, NULL), 0);
        expect_runtime_errors(f->rs, NULL);
}

/* F-RT-04: the network error starts as "network state unknown" and never joins runtime errors. */
static void test_network_error_separate(void **state)
{
        struct fixture *f = *state;

        expect_network_errors(f->rs, "network state unknown");
        expect_network_errors(f->rs, KC_RUNTIME_NETWORK_UNKNOWN);
        expect_runtime_errors(f->rs, MSG_NOT_YET);

        kc_runtime_state_set_runtime_sync(f->rs, kc_clock_now(f->clock));
        expect_runtime_errors(f->rs, NULL); /* network unknown does not stop the sync loop */

        assert_int_equal(kc_runtime_state_set_network_state(
                                 f->rs, "container runtime network not ready: NetworkReady=false"),
                         0);
        expect_network_errors(f->rs, "container runtime network not ready: NetworkReady=false");
        expect_runtime_errors(f->rs, NULL);

        assert_int_equal(kc_runtime_state_set_network_state(f->rs, NULL), 0);
        expect_network_errors(f->rs, NULL);
        expect_runtime_errors(f->rs, NULL);
}

/* F-RT-05: storage errors are only reported by storage_errors(). */
static void test_storage_error_separate(void **state)
{
        struct fixture *f = *state;

        expect_storage_errors(f->rs, NULL);
        kc_runtime_state_set_runtime_sync(f->rs, kc_clock_now(f->clock));
        assert_int_equal(kc_runtime_state_set_storage_state(f->rs, "disk pressure"), 0);
        expect_storage_errors(f->rs, "disk pressure");
        expect_runtime_errors(f->rs, NULL);
        expect_network_errors(f->rs, KC_RUNTIME_NETWORK_UNKNOWN);
        assert_int_equal(kc_runtime_state_set_storage_state(f->rs, NULL), 0);
        expect_storage_errors(f->rs, NULL);
}

/* F-RT-06: apimachinery NewAggregate(...).Error() formatting. */
static void test_aggregate_format(void **state)
{
        const char *three[] = { "a", "b", "c" };
        const char *with_nil[] = { NULL, "only", NULL };
        const char *dups[] = { "x", "y", "x" };
        const char *same[] = { "z", "z" };
        const char *nils[] = { NULL, NULL };
        char *got = (void *)1;

        (void)state;
        assert_int_equal(kc_aggregate_errors(NULL, 0, &got), 0);
        assert_null(got);
        assert_int_equal(kc_aggregate_errors(nils, 2, &got), 0);
        assert_null(got);

        assert_int_equal(kc_aggregate_errors(three, 1, &got), 0);
        assert_string_equal(got, "a");
        free(got);
        assert_int_equal(kc_aggregate_errors(three, 2, &got), 0);
        assert_string_equal(got, "[a, b]");
        free(got);
        assert_int_equal(kc_aggregate_errors(three, 3, &got), 0);
        assert_string_equal(got, "[a, b, c]");
        free(got);
        assert_int_equal(kc_aggregate_errors(with_nil, 3, &got), 0);
        assert_string_equal(got, "only");
        free(got);
        /* Error() prints each distinct message once, in first-seen order. */
        assert_int_equal(kc_aggregate_errors(dups, 3, &got), 0);
        assert_string_equal(got, "[x, y]");
        free(got);
        assert_int_equal(kc_aggregate_errors(same, 2, &got), 0);
        assert_string_equal(got, "z");
        free(got);
}

/* A check that calls back into the state: setters, a registration and a nested read. */
struct reentrant {
        struct kc_runtime_state *rs;
        struct kc_clock *clock;
        int depth;
        bool nested_ok;
        struct fake_check late;
};

static bool reentrant_check(void *userdata, char **ret_err)
{
        struct reentrant *r = userdata;

        if (r->depth++ == 0) {
                char *nested = NULL;

                kc_runtime_state_set_runtime_sync(r->rs, kc_clock_now(r->clock));
                (void)kc_runtime_state_set_runtime_state(r->rs, "set from a check");
                (void)kc_runtime_state_set_network_state(r->rs, NULL);
                (void)kc_runtime_state_set_storage_state(r->rs, "storage from a check");
                (void)kc_runtime_state_add_health_check(r->rs, "Late", fake_check_fn, &r->late);
                /* The nested call sees the setters above and the late check. */
                r->nested_ok = kc_runtime_state_runtime_errors(r->rs, &nested) == 0 && nested &&
                               strcmp(nested, "[Reentrant is not healthy: inner, Late is not "
                                              "healthy: late, set from a check]") == 0;
                free(nested);
        }
        r->depth--;
        *ret_err = strdup(r->depth == 0 ? "outer" : "inner");
        return false;
}

static void *call_runtime_errors(void *arg)
{
        struct reentrant *r = arg;
        char *msg = NULL;

        if (kc_runtime_state_runtime_errors(r->rs, &msg) < 0)
                return NULL;
        return msg;
}

/* Health checks run without the lock held: calling back in must not deadlock. */
static void test_reentrant_check_no_deadlock(void **state)
{
        struct fixture *f = *state;
        struct reentrant r = { .rs = f->rs, .clock = f->clock, .late = { .err = "late" } };
        _cleanup_free_ char *msg = NULL;
        struct timespec deadline;
        pthread_t t;
        void *rv = NULL;

        atomic_init(&r.late.healthy, false);
        atomic_init(&r.late.calls, 0);
        assert_int_equal(kc_runtime_state_add_health_check(f->rs, "Reentrant", reentrant_check, &r),
                         0);

        /* On a thread with a deadline, so a deadlock fails the test instead of hanging it. */
        assert_int_equal(pthread_create(&t, NULL, call_runtime_errors, &r), 0);
        assert_int_equal(clock_gettime(CLOCK_REALTIME, &deadline), 0);
        deadline.tv_sec += 10;
        if (pthread_timedjoin_np(t, &rv, &deadline) != 0)
                fail_msg("runtime_errors() deadlocked on a re-entrant health check");
        msg = rv;

        assert_true(r.nested_ok);
        /* The outer call snapshotted before its check ran: sync missing, one check, no
         * runtime error; the next call sees everything. */
        assert_string_equal(msg, "[" MSG_NOT_YET ", Reentrant is not healthy: outer]");
        expect_storage_errors(f->rs, "storage from a check");
        expect_network_errors(f->rs, NULL);
}

/* ------------------------------------------------------------------------ */
/* Concurrency (TSan): readers aggregate while writers toggle every field.    */

#define N_READERS 3
#define N_WRITER_ITER 3000
#define N_LATE_CHECKS 16

struct shared {
        pthread_barrier_t start;
        atomic_bool done;
        struct kc_runtime_state *rs;
        struct kc_clock *clock;
        struct fake_check checks[N_LATE_CHECKS];
        atomic_uint reads;
        atomic_bool bad;
};

static bool known_piece(const char *p, size_t len)
{
        static const char *const pieces[] = {
                MSG_NOT_YET,
                MSG_DOWN,
                "runtime not ready",
                "C is not healthy: flaky",
                "C is not healthy: <nil>",
        };

        for (size_t i = 0; i < KC_ELEMENTSOF(pieces); i++)
                if (strlen(pieces[i]) == len && memcmp(pieces[i], p, len) == 0)
                        return true;
        return false;
}

/* Every message is NULL, one known piece, or "[p, q, ...]" of known pieces. */
static bool well_formed(const char *msg)
{
        size_t len;

        if (!msg)
                return true;
        len = strlen(msg);
        if (known_piece(msg, len))
                return true;
        if (len < 2 || msg[0] != '[' || msg[len - 1] != ']')
                return false;
        for (const char *p = msg + 1, *end = msg + len - 1; p < end;) {
                const char *sep = strstr(p, ", ");
                const char *stop = sep && sep < end ? sep : end;

                if (!known_piece(p, (size_t)(stop - p)))
                        return false;
                p = stop == end ? end : stop + 2;
        }
        return true;
}

static void *reader(void *arg)
{
        struct shared *s = arg;

        pthread_barrier_wait(&s->start);
        /* At least one read each, even if the writer finished before this
         * reader was scheduled (a loaded machine). Acquire pairs with the
         * release store of done in the test body. */
        do {
                char *msg = NULL, *net = NULL, *sto = NULL;

                if (kc_runtime_state_runtime_errors(s->rs, &msg) < 0 || !well_formed(msg) ||
                    kc_runtime_state_network_errors(s->rs, &net) < 0 ||
                    kc_runtime_state_storage_errors(s->rs, &sto) < 0)
                        atomic_store(&s->bad, true);
                free(msg);
                free(net);
                free(sto);
                atomic_fetch_add_explicit(&s->reads, 1, memory_order_relaxed);
        } while (!atomic_load_explicit(&s->done, memory_order_acquire));
        return NULL;
}

static void *writer(void *arg)
{
        struct shared *s = arg;

        pthread_barrier_wait(&s->start);
        for (unsigned i = 0; i < N_WRITER_ITER; i++) {
                int r = 0;

                switch (i % 6) {
                case 0:
                        kc_runtime_state_set_runtime_sync(s->rs, kc_clock_now(s->clock));
                        break;
                case 1:
                        r = kc_runtime_state_set_runtime_state(s->rs, "runtime not ready");
                        break;
                case 2:
                        r = kc_runtime_state_set_network_state(s->rs, i % 4 ? "net" : NULL);
                        break;
                case 3:
                        r = kc_runtime_state_set_runtime_state(s->rs, NULL);
                        break;
                case 4:
                        r = kc_fake_clock_advance(s->clock, THRESHOLD / 2);
                        break;
                case 5:
                        r = kc_runtime_state_set_storage_state(s->rs, i % 4 ? "disk" : NULL);
                        break;
                }
                /* Late registrations race with readers walking the list. */
                if (r == 0 && i % (N_WRITER_ITER / N_LATE_CHECKS) == 0 &&
                    i / (N_WRITER_ITER / N_LATE_CHECKS) < N_LATE_CHECKS)
                        r = kc_runtime_state_add_health_check(
                                s->rs, "C", fake_check_fn,
                                &s->checks[i / (N_WRITER_ITER / N_LATE_CHECKS)]);
                if (i % 7 == 0)
                        atomic_store(&s->checks[i % N_LATE_CHECKS].healthy,
                                     !atomic_load(&s->checks[i % N_LATE_CHECKS].healthy));
                if (r < 0)
                        atomic_store(&s->bad, true);
        }
        return NULL;
}

static void test_concurrent_readers_writers(void **state)
{
        struct fixture *f = *state;
        struct shared s = { .rs = f->rs, .clock = f->clock };
        pthread_t readers[N_READERS], w;

        for (size_t i = 0; i < N_LATE_CHECKS; i++) {
                s.checks[i].err = i % 2 ? "flaky" : NULL;
                atomic_init(&s.checks[i].healthy, i % 3 == 0);
                atomic_init(&s.checks[i].calls, 0);
        }
        atomic_init(&s.done, false);
        atomic_init(&s.bad, false);
        atomic_init(&s.reads, 0);
        assert_int_equal(pthread_barrier_init(&s.start, NULL, N_READERS + 1), 0);

        for (int i = 0; i < N_READERS; i++)
                assert_int_equal(pthread_create(&readers[i], NULL, reader, &s), 0);
        assert_int_equal(pthread_create(&w, NULL, writer, &s), 0);
        assert_int_equal(pthread_join(w, NULL), 0);
        atomic_store_explicit(&s.done, true, memory_order_release);
        for (int i = 0; i < N_READERS; i++)
                assert_int_equal(pthread_join(readers[i], NULL), 0);
        pthread_barrier_destroy(&s.start);

        assert_false(atomic_load(&s.bad));
        assert_true(atomic_load(&s.reads) > 0);

        /* Quiescent: a final, exact answer with all 16 late checks registered. */
        for (size_t i = 0; i < N_LATE_CHECKS; i++)
                atomic_store(&s.checks[i].healthy, true);
        kc_runtime_state_set_runtime_sync(f->rs, kc_clock_now(f->clock));
        assert_int_equal(kc_runtime_state_set_runtime_state(f->rs, NULL), 0);
        expect_runtime_errors(f->rs, NULL);
        for (size_t i = 0; i < N_LATE_CHECKS; i++)
                assert_true(atomic_load(&s.checks[i].calls) > 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
        const struct CMUnitTest tests[] = {
                T(test_new_rejects_bad_threshold),
                T(test_before_first_sync),
                T(test_sync_threshold_boundary),
                cmocka_unit_test(test_sync_at_epoch_counts),
                T(test_sync_far_future),
                T(test_health_checks),
                T(test_health_check_without_message),
                T(test_runtime_error_last),
                T(test_network_error_separate),
                T(test_storage_error_separate),
                cmocka_unit_test(test_aggregate_format),
                T(test_reentrant_check_no_deadlock),
                T(test_concurrent_readers_writers),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
