/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "core/cleanup.h"
#include "core/log.h"
#include "kc_test.h"
#include "kubelet/pod_container_deletor.h"
#include "runtime/container.h"
#include "runtime/error.h"

#define SEC KC_NSEC_PER_SEC
#define T0 (INT64_C(1700000000) * SEC)

/* ------------------------------------------------------------------------ */
/* getContainersToDeleteInPod (upstream pod_container_deletor_test.go)        */

#define EXITED KC_CONTAINER_STATE_EXITED
#define RUNNING KC_CONTAINER_STATE_RUNNING

/* The pod of the three upstream tests: foo(1), bar(2..4) exited, bar(5) running. */
static const struct kc_container_status upstream_containers[] = {
        { .id = "1", .name = "foo", .created_at = T0, .state = EXITED },
        { .id = "2", .name = "bar", .created_at = T0 + 1 * SEC, .state = EXITED },
        { .id = "3", .name = "bar", .created_at = T0 + 2 * SEC, .state = EXITED },
        { .id = "4", .name = "bar", .created_at = T0 + 3 * SEC, .state = EXITED },
        { .id = "5", .name = "bar", .created_at = T0 + 4 * SEC, .state = RUNNING },
};

static const struct kc_pod_status upstream_pod = {
        .id = "pod-uid",
        .name = "pod",
        .namespace = "default",
        .containers = upstream_containers,
        .n_containers = KC_ELEMENTSOF(upstream_containers),
};

/* Checks the result against indexes into @p pod's containers (-1 ends the list). */
static void expect_candidates(const char *filter, const struct kc_pod_status *pod, int keep,
                              const int *expected)
{
        _cleanup_free_ const struct kc_container_status **got = NULL;
        size_t n = 99, want = 0;

        assert_int_equal(kc__get_containers_to_delete_in_pod(filter, pod, keep, &got, &n), 0);
        while (expected[want] >= 0)
                want++;
        assert_int_equal(n, want);
        if (want == 0)
                assert_null(got);
        for (size_t i = 0; i < want; i++)
                assert_ptr_equal(got[i], &pod->containers[expected[i]]);
}

static void test_get_containers_to_delete_in_pod_with_filter(void **state)
{
        (void)state;
        expect_candidates("4", &upstream_pod, 0, (const int[]){ 3, 2, 1, -1 });
        expect_candidates("4", &upstream_pod, 1, (const int[]){ 2, 1, -1 });
        expect_candidates("4", &upstream_pod, 2, (const int[]){ 1, -1 });
}

static void test_get_containers_to_delete_in_pod(void **state)
{
        (void)state;
        expect_candidates("", &upstream_pod, 0, (const int[]){ 3, 2, 1, 0, -1 });
        expect_candidates("", &upstream_pod, 1, (const int[]){ 2, 1, 0, -1 });
        expect_candidates("", &upstream_pod, 2, (const int[]){ 1, 0, -1 });
        /* NULL is "no filter" too. */
        expect_candidates(NULL, &upstream_pod, 2, (const int[]){ 1, 0, -1 });
}

static void test_get_containers_to_delete_in_pod_with_no_match(void **state)
{
        (void)state;
        expect_candidates("abc", &upstream_pod, (int)upstream_pod.n_containers,
                          (const int[]){ -1 });
        /* Even with keep 0: an unknown filter selects nothing. */
        expect_candidates("abc", &upstream_pod, 0, (const int[]){ -1 });
}

static void test_get_containers_to_delete_keep_boundary(void **state)
{
        (void)state;
        /* 3 exited "bar": keep 3 or more → none ("<= keep"). */
        expect_candidates("2", &upstream_pod, 3, (const int[]){ -1 });
        expect_candidates("2", &upstream_pod, 100, (const int[]){ -1 });
        /* A running filter container still names the group to prune. */
        expect_candidates("5", &upstream_pod, 1, (const int[]){ 2, 1, -1 });
        /* A negative keep counts as 0. */
        expect_candidates("4", &upstream_pod, -5, (const int[]){ 3, 2, 1, -1 });
}

static void test_get_containers_to_delete_attempt_first(void **state)
{
        /* Attempt (restart_count) outranks creation time; then newest first. */
        static const struct kc_container_status cs[] = {
                { .id = "a", .name = "app", .restart_count = 2, .created_at = T0, .state = EXITED },
                { .id = "b",
                  .name = "app",
                  .restart_count = 0,
                  .created_at = T0 + 9 * SEC,
                  .state = EXITED },
                { .id = "c",
                  .name = "app",
                  .restart_count = 1,
                  .created_at = T0 + 1 * SEC,
                  .state = EXITED },
                { .id = "d",
                  .name = "app",
                  .restart_count = 1,
                  .created_at = T0 + 5 * SEC,
                  .state = EXITED },
                { .id = "e",
                  .name = "app",
                  .restart_count = 3,
                  .created_at = T0 + 2 * SEC,
                  .state = RUNNING },
        };
        const struct kc_pod_status pod = { .id = "u", .containers = cs, .n_containers = 5 };

        (void)state;
        /* Order: a(2) d(1,+5) c(1,+1) b(0). */
        expect_candidates("e", &pod, 0, (const int[]){ 0, 3, 2, 1, -1 });
        expect_candidates("e", &pod, 1, (const int[]){ 3, 2, 1, -1 });
        expect_candidates(NULL, &pod, 3, (const int[]){ 1, -1 });
}

static void test_get_containers_to_delete_never_running(void **state)
{
        static const struct kc_container_status cs[] = {
                { .id = "1", .name = "x", .state = KC_CONTAINER_STATE_RUNNING },
                { .id = "2", .name = "x", .state = KC_CONTAINER_STATE_CREATED },
                { .id = "3", .name = "x", .state = KC_CONTAINER_STATE_UNKNOWN },
        };
        static const struct kc_sandbox_status sb[] = {
                { .id = "s1", .state = KC_SANDBOX_STATE_NOTREADY },
        };
        const struct kc_pod_status pod = {
                .id = "u",
                .containers = cs,
                .n_containers = 3,
                .sandboxes = sb,
                .n_sandboxes = 1,
        };
        const struct kc_pod_status empty = { .id = "u" };
        const struct kc_container_status **untouched = (const struct kc_container_status **)0x1;
        size_t n = 7;

        (void)state;
        expect_candidates(NULL, &pod, 0, (const int[]){ -1 });
        expect_candidates("1", &pod, 0, (const int[]){ -1 });
        expect_candidates(NULL, &empty, 0, (const int[]){ -1 });
        /* Sandboxes are not containers. */
        expect_candidates("s1", &pod, 0, (const int[]){ -1 });

        assert_int_equal(kc__get_containers_to_delete_in_pod(NULL, NULL, 0, &untouched, &n),
                         -EINVAL);
        assert_ptr_equal(untouched, (const struct kc_container_status **)0x1);
        assert_int_equal(n, 7);
}

/* ------------------------------------------------------------------------ */
/* The deletor with a fake runtime                                            */

#define FAKE_MAX_IDS 256

struct fake_runtime {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool block;     /* calls wait while set */
        int fail;       /* errno to fail with (0: succeed) */
        size_t entered; /* calls started */
        size_t done;    /* calls returned */
        char *ids[FAKE_MAX_IDS];
};

static void fake_init(struct fake_runtime *f)
{
        memset(f, 0, sizeof(*f));
        pthread_mutex_init(&f->lock, NULL);
        pthread_cond_init(&f->cond, NULL);
}

static void fake_done(struct fake_runtime *f)
{
        for (size_t i = 0; i < f->entered && i < FAKE_MAX_IDS; i++)
                free(f->ids[i]);
        pthread_cond_destroy(&f->cond);
        pthread_mutex_destroy(&f->lock);
}

static int fake_delete(void *userdata, const char *id, struct kc_runtime_error *err)
{
        struct fake_runtime *f = userdata;
        int fail;

        pthread_mutex_lock(&f->lock);
        if (f->entered < FAKE_MAX_IDS)
                f->ids[f->entered] = strdup(id);
        f->entered++;
        pthread_cond_broadcast(&f->cond);
        while (f->block)
                pthread_cond_wait(&f->cond, &f->lock);
        f->done++;
        fail = f->fail;
        pthread_cond_broadcast(&f->cond);
        pthread_mutex_unlock(&f->lock);

        if (fail)
                return kc_runtime_error_set(err, -fail, KC_RUNTIME_UNKNOWN,
                                            "fake failure removing %s", id);
        return 0;
}

static void fake_set_block(struct fake_runtime *f, bool block)
{
        pthread_mutex_lock(&f->lock);
        f->block = block;
        pthread_cond_broadcast(&f->cond);
        pthread_mutex_unlock(&f->lock);
}

/* Waits until *counter >= n; false after the (scaled) timeout. */
static bool fake_wait(struct fake_runtime *f, const size_t *counter, size_t n)
{
        int64_t deadline = kc_test_mono_ns() + (int64_t)(5 * SEC * kc_test_timeout_multiplier());
        bool ok;

        pthread_mutex_lock(&f->lock);
        while (*counter < n && kc_test_mono_ns() < deadline) {
                struct timespec ts;

                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 10 * 1000000;
                if (ts.tv_nsec >= SEC) {
                        ts.tv_sec++;
                        ts.tv_nsec -= SEC;
                }
                pthread_cond_timedwait(&f->cond, &f->lock, &ts);
        }
        ok = *counter >= n;
        pthread_mutex_unlock(&f->lock);
        return ok;
}

static size_t fake_get(struct fake_runtime *f, const size_t *counter)
{
        size_t v;

        pthread_mutex_lock(&f->lock);
        v = *counter;
        pthread_mutex_unlock(&f->lock);
        return v;
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The deleted IDs, sorted and joined with ','. Call when the fake is idle. */
static void fake_ids(struct fake_runtime *f, char *buf, size_t size)
{
        char *sorted[FAKE_MAX_IDS];
        size_t n;

        pthread_mutex_lock(&f->lock);
        n = f->entered < FAKE_MAX_IDS ? f->entered : FAKE_MAX_IDS;
        memcpy(sorted, f->ids, n * sizeof(*sorted));
        pthread_mutex_unlock(&f->lock);
        qsort(sorted, n, sizeof(*sorted), cmp_str);
        buf[0] = '\0';
        for (size_t i = 0; i < n; i++) {
                if (i)
                        strncat(buf, ",", size - strlen(buf) - 1);
                strncat(buf, sorted[i], size - strlen(buf) - 1);
        }
}

struct log_capture {
        FILE *f;
        char *buf;
        size_t len;
};

static void capture_start(struct log_capture *c)
{
        c->buf = NULL;
        c->len = 0;
        c->f = open_memstream(&c->buf, &c->len);
        assert_non_null(c->f);
        kc_log_set_output(c->f);
}

/* Stops capturing and returns the text (owned by @p c). */
static const char *capture_stop(struct log_capture *c)
{
        kc_log_set_output(NULL);
        fclose(c->f);
        c->f = NULL;
        return c->buf ? c->buf : "";
}

static size_t count_substr(const char *s, const char *needle)
{
        size_t n = 0;

        for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
                n++;
        return n;
}

static void test_deletor_new_invalid(void **state)
{
        struct kc_pod_container_deletor *d = (struct kc_pod_container_deletor *)0x1;
        struct fake_runtime f;

        (void)state;
        fake_init(&f);
        assert_int_equal(kc_pod_container_deletor_new(NULL, &f, 1, &d), -EINVAL);
        assert_ptr_equal(d, (struct kc_pod_container_deletor *)0x1);
        assert_null(kc_pod_container_deletor_free(NULL));
        assert_int_equal(kc_pod_container_deletor_new(fake_delete, &f, 1, &d), 0);
        assert_int_equal(kc_pod_container_deletor_delete_containers_in_pod(d, NULL, NULL, false),
                         -EINVAL);
        assert_null(kc_pod_container_deletor_free(d));
        assert_int_equal(fake_get(&f, &f.entered), 0);
        fake_done(&f);
}

/* The worker deletes every queued ID; keep is clamped to >= 1 (F-DEL-04). */
static void test_deletor_deletes_candidates(void **state)
{
        _cleanup_(kc_pod_container_deletor_freep) struct kc_pod_container_deletor *d = NULL;
        struct fake_runtime f;
        char buf[256];

        (void)state;
        fake_init(&f);
        assert_int_equal(kc_pod_container_deletor_new(fake_delete, &f, 0, &d), 0);

        /* ContainerDied "4": keep 1 newest "bar" (4), delete 3 and 2. */
        assert_int_equal(
                kc_pod_container_deletor_delete_containers_in_pod(d, "4", &upstream_pod, false), 2);
        assert_true(fake_wait(&f, &f.done, 2));
        fake_ids(&f, buf, sizeof(buf));
        assert_string_equal(buf, "2,3");

        /* foo has one dead instance: nothing to do. */
        assert_int_equal(
                kc_pod_container_deletor_delete_containers_in_pod(d, "1", &upstream_pod, false), 0);
        d = kc_pod_container_deletor_free(d);
        assert_int_equal(fake_get(&f, &f.entered), 2);
        fake_done(&f);
}

static void test_deletor_remove_all(void **state)
{
        _cleanup_(kc_pod_container_deletor_freep) struct kc_pod_container_deletor *d = NULL;
        struct fake_runtime f;
        char buf[256];

        (void)state;
        fake_init(&f);
        assert_int_equal(kc_pod_container_deletor_new(fake_delete, &f, 5, &d), 0);

        /* keep 0 and the filter is ignored: every exited container, any name. */
        assert_int_equal(
                kc_pod_container_deletor_delete_containers_in_pod(d, "4", &upstream_pod, true), 4);
        assert_true(fake_wait(&f, &f.done, 4));
        fake_ids(&f, buf, sizeof(buf));
        assert_string_equal(buf, "1,2,3,4");

        /* Without remove_all, keep 5 leaves everything in place. */
        assert_int_equal(
                kc_pod_container_deletor_delete_containers_in_pod(d, NULL, &upstream_pod, false),
                0);
        d = kc_pod_container_deletor_free(d);
        assert_int_equal(fake_get(&f, &f.entered), 4);
        fake_done(&f);
}

static void test_deletor_errors_logged_not_retried(void **state)
{
        struct kc_pod_container_deletor *d = NULL;
        struct log_capture cap;
        struct fake_runtime f;
        const char *log;

        (void)state;
        fake_init(&f);
        f.fail = EIO;
        capture_start(&cap);
        assert_int_equal(kc_pod_container_deletor_new(fake_delete, &f, 1, &d), 0);
        assert_int_equal(
                kc_pod_container_deletor_delete_containers_in_pod(d, NULL, &upstream_pod, true), 4);
        assert_true(fake_wait(&f, &f.done, 4));
        d = kc_pod_container_deletor_free(d);
        log = capture_stop(&cap);

        assert_int_equal(fake_get(&f, &f.entered), 4);
        assert_int_equal(count_substr(log, "DeleteContainer returned error"), 4);
        assert_non_null(strstr(log, "\"DeleteContainer returned error\" containerID=\"3\" "
                                    "err=\"fake failure removing 3\""));
        free(cap.buf);
        fake_done(&f);
}

#define FULL_N 60

/*
 * A full queue drops without blocking: with one deletion in flight (blocked
 * in the fake), 50 more are accepted and the other 10 are dropped with the
 * upstream warning.
 */
static void test_deletor_queue_full_drops(void **state)
{
        _cleanup_(kc_pod_container_deletor_freep) struct kc_pod_container_deletor *d = NULL;
        struct kc_container_status cs[FULL_N];
        char ids[FULL_N][8];
        const struct kc_pod_status first = {
                .id = "u1",
                .containers = upstream_containers,
                .n_containers = 1, /* "1": exited foo */
        };
        const struct kc_pod_status burst = { .id = "u2", .containers = cs, .n_containers = FULL_N };
        struct log_capture cap;
        struct fake_runtime f;
        const char *log;
        int64_t t;
        int r;

        (void)state;
        for (int i = 0; i < FULL_N; i++) {
                snprintf(ids[i], sizeof(ids[i]), "c%02d", i);
                cs[i] = (struct kc_container_status){
                        .id = ids[i],
                        .name = "bar",
                        .state = EXITED,
                        .created_at = T0 + i * SEC,
                };
        }
        fake_init(&f);
        f.block = true;
        assert_int_equal(kc_pod_container_deletor_new(fake_delete, &f, 1, &d), 0);

        /* Put one deletion in flight and wait until the worker is stuck in it. */
        assert_int_equal(kc_pod_container_deletor_delete_containers_in_pod(d, NULL, &first, true),
                         1);
        assert_true(fake_wait(&f, &f.entered, 1));

        capture_start(&cap);
        t = kc_test_mono_ns();
        r = kc_pod_container_deletor_delete_containers_in_pod(d, NULL, &burst, true);
        t = kc_test_mono_ns() - t;
        log = capture_stop(&cap);
        assert_int_equal(r, (int)KC_CONTAINER_DELETOR_BUFFER_LIMIT);
        assert_true(t < (int64_t)(SEC *
                                  kc_test_timeout_multiplier())); /* never waited for the worker */
        assert_int_equal(count_substr(log, "Failed to issue the request to remove container"),
                         FULL_N - KC_CONTAINER_DELETOR_BUFFER_LIMIT);
        /* Newest first: the 10 oldest (c00..c09) are the ones dropped. */
        assert_non_null(strstr(log, "containerID=\"c00\""));
        assert_non_null(strstr(log, "containerID=\"c09\""));
        assert_null(strstr(log, "containerID=\"c10\""));
        free(cap.buf);
        assert_int_equal(fake_get(&f, &f.entered), 1);

        /* Release the worker: it works through exactly the accepted ones. */
        fake_set_block(&f, false);
        assert_true(fake_wait(&f, &f.done, 1 + KC_CONTAINER_DELETOR_BUFFER_LIMIT));
        kc_test_sleep_ms(50);
        assert_int_equal(fake_get(&f, &f.entered), 1 + KC_CONTAINER_DELETOR_BUFFER_LIMIT);
        d = kc_pod_container_deletor_free(d);
        fake_done(&f);
}

struct free_arg {
        struct kc_pod_container_deletor *d;
        atomic_bool started;
        atomic_bool returned;
};

static void *free_thread(void *p)
{
        struct free_arg *a = p;

        atomic_store(&a->started, true);
        a->d = kc_pod_container_deletor_free(a->d);
        atomic_store(&a->returned, true);
        return NULL;
}

/*
 * Free with a deletion in flight and requests pending: it waits for the
 * in-flight call, joins the worker and drops (frees) the pending IDs.
 */
static void test_deletor_free_with_pending(void **state)
{
        struct free_arg arg = { 0 };
        struct fake_runtime f;
        pthread_t th;

        (void)state;
        fake_init(&f);
        f.block = true;
        assert_int_equal(kc_pod_container_deletor_new(fake_delete, &f, 1, &arg.d), 0);
        assert_int_equal(
                kc_pod_container_deletor_delete_containers_in_pod(arg.d, NULL, &upstream_pod, true),
                4);
        assert_true(fake_wait(&f, &f.entered, 1));

        assert_int_equal(pthread_create(&th, NULL, free_thread, &arg), 0);
        while (!atomic_load(&arg.started))
                kc_test_sleep_ms(1);
        kc_test_sleep_ms((int64_t)(200 * kc_test_timeout_multiplier()));
        /* Still joined on the worker, which is inside the delete call. */
        assert_false(atomic_load(&arg.returned));

        fake_set_block(&f, false);
        assert_int_equal(pthread_join(th, NULL), 0);
        assert_true(atomic_load(&arg.returned));
        assert_null(arg.d);
        /* The three pending requests were dropped, not executed. */
        assert_int_equal(fake_get(&f, &f.entered), 1);
        fake_done(&f);
}

/* An idle deletor stops promptly (the sentinel wakes it, not the timeout). */
static void test_deletor_idle_free_is_prompt(void **state)
{
        struct kc_pod_container_deletor *d = NULL;
        struct fake_runtime f;
        int64_t t;

        (void)state;
        fake_init(&f);
        assert_int_equal(kc_pod_container_deletor_new(fake_delete, &f, 1, &d), 0);
        kc_test_sleep_ms(20); /* let the worker fall asleep in its pop */
        t = kc_test_mono_ns();
        d = kc_pod_container_deletor_free(d);
        t = kc_test_mono_ns() - t;
        assert_true(t < (int64_t)(500 * KC_NSEC_PER_MSEC * kc_test_timeout_multiplier()));
        fake_done(&f);
}

#define MP_THREADS 4
#define MP_PODS 50

struct mp_arg {
        struct kc_pod_container_deletor *d;
        int id;
        int queued;
};

/* Concurrent callers: each issues one removal per pod; nothing is lost. */
static void *mp_caller(void *p)
{
        struct mp_arg *a = p;

        for (int i = 0; i < MP_PODS; i++) {
                char id[32];
                struct kc_container_status cs[2] = {
                        { .id = id, .name = "app", .state = EXITED, .created_at = T0 },
                        { .id = "newest", .name = "app", .state = EXITED, .created_at = T0 + 1 },
                };
                struct kc_pod_status pod = { .id = "u", .containers = cs, .n_containers = 2 };
                int r;

                snprintf(id, sizeof(id), "t%d-%d", a->id, i);
                r = kc_pod_container_deletor_delete_containers_in_pod(a->d, "newest", &pod, false);
                if (r < 0)
                        return (void *)1;
                a->queued += r;
        }
        return NULL;
}

static void test_deletor_concurrent_callers(void **state)
{
        struct kc_pod_container_deletor *d = NULL;
        struct mp_arg args[MP_THREADS];
        pthread_t th[MP_THREADS];
        struct log_capture cap;
        struct fake_runtime f;
        size_t queued = 0;
        void *res;

        (void)state;
        fake_init(&f);
        capture_start(&cap); /* drops are possible and expected to be logged */
        assert_int_equal(kc_pod_container_deletor_new(fake_delete, &f, 1, &d), 0);
        for (int i = 0; i < MP_THREADS; i++) {
                args[i] = (struct mp_arg){ .d = d, .id = i };
                assert_int_equal(pthread_create(&th[i], NULL, mp_caller, &args[i]), 0);
        }
        for (int i = 0; i < MP_THREADS; i++) {
                assert_int_equal(pthread_join(th[i], &res), 0);
                assert_null(res);
                queued += (size_t)args[i].queued;
        }
        assert_true(queued > 0);
        assert_true(fake_wait(&f, &f.done, queued));
        d = kc_pod_container_deletor_free(d);
        capture_stop(&cap);
        assert_int_equal(count_substr(cap.buf ? cap.buf : "", "Failed to issue the request"),
                         MP_THREADS * MP_PODS - queued);
        free(cap.buf);
        assert_int_equal(fake_get(&f, &f.entered), queued);
        fake_done(&f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_get_containers_to_delete_in_pod_with_filter),
                cmocka_unit_test(test_get_containers_to_delete_in_pod),
                cmocka_unit_test(test_get_containers_to_delete_in_pod_with_no_match),
                cmocka_unit_test(test_get_containers_to_delete_keep_boundary),
                cmocka_unit_test(test_get_containers_to_delete_attempt_first),
                cmocka_unit_test(test_get_containers_to_delete_never_running),
                cmocka_unit_test(test_deletor_new_invalid),
                cmocka_unit_test(test_deletor_deletes_candidates),
                cmocka_unit_test(test_deletor_remove_all),
                cmocka_unit_test(test_deletor_errors_logged_not_retried),
                cmocka_unit_test(test_deletor_queue_full_drops),
                cmocka_unit_test(test_deletor_free_with_pending),
                cmocka_unit_test(test_deletor_idle_free_is_prompt),
                cmocka_unit_test(test_deletor_concurrent_callers),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
