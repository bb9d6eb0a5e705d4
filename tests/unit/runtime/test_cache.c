/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pod status cache (UPSTREAM.md §5): F-CACHE-01 … F-CACHE-06.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/cancel.h"
#include "core/cleanup.h"
#include "kc_test.h"
#include "runtime/cache.h"
#include "runtime/container.h"

#define T0 (INT64_C(1700000000) * KC_NSEC_PER_SEC)
#define SEC KC_NSEC_PER_SEC

static struct kc_pod_status *mkstatus(const char *uid, const char *ip)
{
        const char *ips[] = { ip };
        struct kc_pod_status tmpl = { .id = uid, .ips = ips, .n_ips = ip ? 1 : 0 };
        struct kc_pod_status *s = NULL;

        assert_int_equal(kc_pod_status_new(&tmpl, &s), 0);
        return s;
}

/* F-CACHE-01: a miss returns the default status {ID} and no error. */
static void test_get_miss_default(void **state)
{
        struct kc_pod_cache *c = NULL;
        struct kc_pod_status *s = NULL;
        char *err = (char *)"unset";

        (void)state;
        assert_int_equal(kc_pod_cache_new(&c), 0);
        assert_int_equal(kc_pod_cache_get(c, "u1", &s, &err), 0);
        assert_non_null(s);
        assert_string_equal(s->id, "u1");
        assert_int_equal(s->n_containers, 0);
        assert_int_equal(s->n_ips, 0);
        assert_null(err);
        kc_pod_status_unref(s);
        kc_pod_cache_free(c);
}

/* F-CACHE-02: Set stores status and error; Delete removes. */
static void test_set_get_delete(void **state)
{
        struct kc_pod_cache *c = NULL;
        struct kc_pod_status *in = mkstatus("u1", "10.0.0.1"), *s = NULL;
        char *err = NULL;

        (void)state;
        assert_int_equal(kc_pod_cache_new(&c), 0);
        assert_true(kc_pod_cache_set(c, "u1", in, "boom", T0));
        assert_int_equal(kc_pod_cache_get(c, "u1", &s, &err), 1);
        assert_ptr_equal(s, in); /* the cached object is shared, not copied */
        assert_string_equal(err, "boom");
        kc_pod_status_unref(s);
        free(err);
        /* A NULL status may be cached with an error, as upstream does. */
        assert_true(kc_pod_cache_set(c, "u2", NULL, "no status", T0));
        assert_int_equal(kc_pod_cache_get(c, "u2", &s, &err), 1);
        assert_null(s);
        assert_string_equal(err, "no status");
        free(err);
        kc_pod_cache_delete(c, "u1");
        assert_int_equal(kc_pod_cache_get(c, "u1", &s, &err), 0);
        assert_string_equal(s->id, "u1");
        assert_null(err);
        kc_pod_status_unref(s);
        kc_pod_status_unref(in);
        kc_pod_cache_free(c);
}

/* F-CACHE-02, issue 18: a Set over an entry replaces all of it (status, error, time) in place. */
static void test_set_overwrites_entry(void **state)
{
        struct kc_pod_cache *c = NULL;
        struct kc_pod_status *a = mkstatus("u1", "1.1.1.1"), *b = mkstatus("u1", "2.2.2.2");
        struct kc_pod_status *s = NULL;
        char *err = NULL;
        int64_t ts = 0;

        (void)state;
        assert_int_equal(kc_pod_cache_new(&c), 0);
        assert_true(kc_pod_cache_set(c, "u1", a, "boom", T0));
        assert_true(kc_pod_cache_set(c, "u2", b, NULL, T0));
        assert_true(kc_pod_cache_set(c, "u1", b, NULL, T0 + 3));
        assert_int_equal(kc_pod_cache_get(c, "u1", &s, &err), 1);
        assert_ptr_equal(s, b);
        assert_null(err);
        kc_pod_status_unref(s);
        assert_int_equal(kc_pod_cache_get_modified(c, "u1", &ts), 1);
        assert_true(ts == T0 + 3);
        assert_true(kc_pod_cache_set(c, "u1", NULL, "gone", T0 + 4));
        assert_int_equal(kc_pod_cache_get(c, "u1", &s, &err), 1);
        assert_null(s);
        assert_string_equal(err, "gone");
        free(err);
        /* The other entry is untouched; the old status lives on only in our reference. */
        assert_int_equal(kc_pod_cache_get(c, "u2", &s, &err), 1);
        assert_ptr_equal(s, b);
        kc_pod_status_unref(s);
        assert_int_equal(kc_pod_cache_get_modified(c, "u2", &ts), 1);
        assert_true(ts == T0);
        kc_pod_status_unref(a);
        kc_pod_status_unref(b);
        kc_pod_cache_free(c);
}

static bool ready(struct kc_pod_cache *c, const char *uid, int64_t min)
{
        struct kc_pod_status *s = NULL;
        char *err = NULL;
        int r = kc_pod_cache_try_get_newer_than(c, uid, min, &s, &err);

        assert_true(r == 0 || r == -EAGAIN);
        kc_pod_status_unref(s);
        free(err);
        return r == 0;
}

/*
 * Issue 18: kc_pod_cache_prefetch() changes nothing, whichever of its UIDs
 * are cached (with a status or none), absent or NULL; nor does it wake a
 * waiter. ASan checks that it reads only live memory.
 */
static void test_prefetch_changes_nothing(void **state)
{
        struct kc_pod_cache *c = NULL;
        struct kc_pod_status *a = mkstatus("u1", "1.1.1.1"), *s = NULL;
        char *err = NULL;
        int64_t ts = 0;

        (void)state;
        assert_int_equal(kc_pod_cache_new(&c), 0);
        kc_pod_cache_prefetch(c, "u1", "u2", "u3");
        assert_true(kc_pod_cache_set(c, "u1", a, NULL, T0));
        assert_true(kc_pod_cache_set(c, "u2", NULL, "no status", T0 + 1));
        kc_pod_status_unref(a);
        kc_pod_cache_update_time(c, T0 + 1);
        kc_pod_cache_prefetch(c, "u1", "u2", "u3");
        kc_pod_cache_prefetch(c, "u2", NULL, "u1");
        kc_pod_cache_prefetch(c, NULL, NULL, NULL);
        kc_pod_cache_prefetch(c, "absent", "u1", NULL);
        assert_int_equal(kc_pod_cache_get(c, "u1", &s, &err), 1);
        assert_string_equal(s->ips[0], "1.1.1.1");
        assert_null(err);
        kc_pod_status_unref(s);
        assert_int_equal(kc_pod_cache_get(c, "u2", &s, &err), 1);
        assert_null(s);
        assert_string_equal(err, "no status");
        free(err);
        assert_int_equal(kc_pod_cache_get(c, "u3", &s, &err), 0);
        kc_pod_status_unref(s);
        assert_int_equal(kc_pod_cache_get_modified(c, "u2", &ts), 1);
        assert_true(ts == T0 + 1);
        assert_false(ready(c, "u3", T0 + 1));
        kc_pod_cache_free(c);
}

/* F-CACHE-03 (strict readiness) and F-CACHE-04 (not ready before the first UpdateTime). */
static void test_readiness_strict(void **state)
{
        struct kc_pod_cache *c = NULL;
        struct kc_pod_status *in = mkstatus("u1", NULL);

        (void)state;
        assert_int_equal(kc_pod_cache_new(&c), 0);
        /* No entry, no global time: never ready, whatever minTime. */
        assert_false(ready(c, "u1", 0));
        assert_false(ready(c, "u1", INT64_MIN));
        assert_true(kc_pod_cache_set(c, "u1", in, NULL, T0 + 10 * SEC));
        assert_true(ready(c, "u1", T0 + 9 * SEC));
        assert_false(ready(c, "u1", T0 + 10 * SEC)); /* strictly newer on entry */
        /* The global timestamp makes data ready too, also for unknown pods. */
        kc_pod_cache_update_time(c, T0 + 20 * SEC);
        assert_true(ready(c, "u1", T0 + 15 * SEC));
        assert_true(ready(c, "other", T0 + 19 * SEC));
        assert_false(ready(c, "other", T0 + 20 * SEC));
        kc_pod_status_unref(in);
        kc_pod_cache_free(c);
}

struct waiter {
        struct kc_pod_cache *cache;
        const char *uid;
        int64_t min;
        struct kc_cancel *cancel;
        int r;
        struct kc_pod_status *status;
        char *err;
        _Atomic bool done;
};

static void *wait_thread(void *arg)
{
        struct waiter *w = arg;

        w->r = kc_pod_cache_get_newer_than(w->cache, w->uid, w->min, w->cancel, &w->status,
                                           &w->err);
        w->done = true;
        return NULL;
}

/* F-CACHE-03: non-strict notification (ts >= minTime delivers), the current
 * data is delivered, and a too-old Set keeps the waiter blocked. */
static void test_notification_non_strict(void **state)
{
        struct kc_pod_cache *c = NULL;
        struct kc_pod_status *old = mkstatus("u1", "1.1.1.1"), *fresh = mkstatus("u1", "2.2.2.2");
        struct waiter w = { .uid = "u1", .min = T0 + SEC };
        pthread_t t;

        (void)state;
        assert_int_equal(kc_pod_cache_new(&c), 0);
        w.cache = c;
        assert_int_equal(pthread_create(&t, NULL, wait_thread, &w), 0);
        kc_test_sleep_ms(30);
        assert_false(w.done);
        kc_pod_cache_set(c, "u1", old, NULL, T0); /* older than minTime: keep waiting */
        kc_test_sleep_ms(30);
        assert_false(w.done);
        kc_pod_cache_set(c, "u1", fresh, NULL, T0 + SEC); /* equal: delivered */
        pthread_join(t, NULL);
        assert_int_equal(w.r, 0);
        assert_ptr_equal(w.status, fresh);
        assert_null(w.err);
        kc_pod_status_unref(w.status);
        kc_pod_status_unref(old);
        kc_pod_status_unref(fresh);
        kc_pod_cache_free(c);
}

/* F-CACHE-05: Delete wakes nobody; UpdateTime wakes every subscribed pod,
 * delivering the default status for a pod without an entry. */
static void test_delete_silent_update_time_wakes(void **state)
{
        struct kc_pod_cache *c = NULL;
        struct kc_pod_status *in = mkstatus("u1", NULL);
        struct waiter w1 = { .uid = "u1", .min = T0 + 5 * SEC };
        struct waiter w2 = { .uid = "u2", .min = T0 + 5 * SEC };
        pthread_t t1, t2;

        (void)state;
        assert_int_equal(kc_pod_cache_new(&c), 0);
        kc_pod_cache_set(c, "u1", in, NULL, T0);
        w1.cache = w2.cache = c;
        assert_int_equal(pthread_create(&t1, NULL, wait_thread, &w1), 0);
        assert_int_equal(pthread_create(&t2, NULL, wait_thread, &w2), 0);
        kc_test_sleep_ms(30);
        kc_pod_cache_delete(c, "u1");
        kc_test_sleep_ms(30);
        assert_false(w1.done);
        assert_false(w2.done);
        kc_pod_cache_update_time(c, T0 + 4 * SEC); /* too old for both */
        kc_test_sleep_ms(30);
        assert_false(w1.done);
        kc_pod_cache_update_time(c, T0 + 5 * SEC);
        pthread_join(t1, NULL);
        pthread_join(t2, NULL);
        assert_int_equal(w1.r, 0);
        assert_string_equal(w1.status->id, "u1");
        assert_int_equal(w2.r, 0);
        assert_string_equal(w2.status->id, "u2");
        kc_pod_status_unref(w1.status);
        kc_pod_status_unref(w2.status);
        kc_pod_status_unref(in);
        kc_pod_cache_free(c);
}

/* F-CACHE-03: a cached inspection error is returned to the waiter. */
static void test_waiter_gets_error(void **state)
{
        struct kc_pod_cache *c = NULL;
        struct waiter w = { .uid = "u1", .min = T0 };
        pthread_t t;

        (void)state;
        assert_int_equal(kc_pod_cache_new(&c), 0);
        w.cache = c;
        assert_int_equal(pthread_create(&t, NULL, wait_thread, &w), 0);
        kc_test_sleep_ms(30);
        kc_pod_cache_set(c, "u1", NULL, "unable to get status", T0 + 1);
        pthread_join(t, NULL);
        assert_int_equal(w.r, 0);
        assert_null(w.status);
        assert_string_equal(w.err, "unable to get status");
        free(w.err);
        kc_pod_cache_free(c);
}

/* A cancelled waiter returns -ECANCELED and leaves no subscriber behind. */
static void test_cancel(void **state)
{
        struct kc_pod_cache *c = NULL;
        struct waiter w = { .uid = "u1", .min = T0 };
        pthread_t t;

        (void)state;
        assert_int_equal(kc_pod_cache_new(&c), 0);
        assert_int_equal(kc_cancel_new(&w.cancel), 0);
        w.cache = c;
        assert_int_equal(pthread_create(&t, NULL, wait_thread, &w), 0);
        kc_test_sleep_ms(30);
        assert_false(w.done);
        kc_cancel_trigger_mp(w.cancel);
        pthread_join(t, NULL);
        assert_int_equal(w.r, -ECANCELED);
        /* A later UpdateTime must not touch the departed waiter. */
        kc_pod_cache_update_time(c, T0 + SEC);
        kc_cancel_free(w.cancel);
        kc_pod_cache_free(c);
}

/* F-CACHE-06: newer-wins refuses strictly older writes, accepts equal ones,
 * and a refused write notifies nobody. Off: always overwrites. */
static void test_newer_wins(void **state)
{
        struct kc_pod_cache *c = NULL;
        struct kc_pod_status *a = mkstatus("u1", "1.1.1.1"), *b = mkstatus("u1", "2.2.2.2");
        struct kc_pod_status *s = NULL;
        char *err = NULL;

        (void)state;
        assert_int_equal(kc_pod_cache_new(&c), 0);
        assert_true(kc_pod_cache_set(c, "u1", a, NULL, T0 + 10));
        assert_true(kc_pod_cache_set(c, "u1", b, NULL, T0 + 5)); /* gate off: overwrite */
        kc_pod_cache_set_newer_wins(c, true);
        assert_true(kc_pod_cache_set(c, "u1", a, NULL, T0 + 10));
        assert_false(kc_pod_cache_set(c, "u1", b, NULL, T0 + 9));
        assert_int_equal(kc_pod_cache_get(c, "u1", &s, &err), 1);
        assert_ptr_equal(s, a);
        kc_pod_status_unref(s);
        assert_true(kc_pod_cache_set(c, "u1", b, NULL, T0 + 10)); /* equal overwrites */
        assert_int_equal(kc_pod_cache_get(c, "u1", &s, &err), 1);
        assert_ptr_equal(s, b);
        kc_pod_status_unref(s);
        kc_pod_status_unref(a);
        kc_pod_status_unref(b);
        kc_pod_cache_free(c);
}

/* What an observer heard: the writes in order, NULL standing for UpdateTime. */
struct heard {
        char uid[8][16];
        int64_t ts[8];
        int n;
        struct kc_pod_cache *cache;
};

static void hear(void *ud, const char *uid, int64_t ts)
{
        struct heard *h = ud;
        struct kc_pod_status *st = NULL;
        char *err = NULL;

        assert_true(h->n < 8);
        snprintf(h->uid[h->n], sizeof(h->uid[0]), "%s", uid ? uid : "(time)");
        h->ts[h->n++] = ts;
        /* The cache's lock is not held: the observer may read the entry written. */
        if (uid) {
                assert_int_equal(kc_pod_cache_get(h->cache, uid, &st, &err), 1);
                kc_pod_status_unref(st);
                free(err);
        }
}

/* The observer hears every write that could end a wait, and nothing once replaced. */
static void test_observer(void **state)
{
        _cleanup_(kc_pod_cache_freep) struct kc_pod_cache *c = NULL;
        struct heard h = { 0 }, other = { 0 };

        (void)state;
        assert_int_equal(kc_pod_cache_new(&c), 0);
        h.cache = other.cache = c;
        assert_int_equal(kc_pod_cache_set_observer(c, hear, &h), 0);
        /* one observer at a time */
        assert_int_equal(kc_pod_cache_set_observer(c, hear, &other), -EBUSY);
        assert_true(kc_pod_cache_set(c, "a", NULL, NULL, T0));
        kc_pod_cache_update_time(c, T0 + SEC);
        kc_pod_cache_delete(c, "a"); /* wakes nobody, so tells nobody */
        /* a write newer-wins refuses changes nothing to tell */
        kc_pod_cache_set_newer_wins(c, true);
        assert_true(kc_pod_cache_set(c, "b", NULL, NULL, T0 + 2 * SEC));
        assert_false(kc_pod_cache_set(c, "b", NULL, NULL, T0));
        assert_int_equal(h.n, 3);
        assert_string_equal(h.uid[0], "a");
        assert_int_equal(h.ts[0], T0);
        assert_string_equal(h.uid[1], "(time)");
        assert_int_equal(h.ts[1], T0 + SEC);
        assert_string_equal(h.uid[2], "b");
        assert_int_equal(h.ts[2], T0 + 2 * SEC);
        /* replaced: the old one hears nothing more, the new one does */
        assert_int_equal(kc_pod_cache_set_observer(c, NULL, NULL), 0);
        assert_int_equal(kc_pod_cache_set_observer(c, hear, &other), 0);
        kc_pod_cache_update_time(c, T0 + 3 * SEC);
        assert_int_equal(h.n, 3);
        assert_int_equal(other.n, 1);
        assert_int_equal(other.ts[0], T0 + 3 * SEC);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_get_miss_default),
                cmocka_unit_test(test_set_get_delete),
                cmocka_unit_test(test_set_overwrites_entry),
                cmocka_unit_test(test_readiness_strict),
                cmocka_unit_test(test_notification_non_strict),
                cmocka_unit_test(test_delete_silent_update_time_wakes),
                cmocka_unit_test(test_waiter_gets_error),
                cmocka_unit_test(test_cancel),
                cmocka_unit_test(test_newer_wins),
                cmocka_unit_test(test_observer),
                cmocka_unit_test(test_prefetch_changes_nothing),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
