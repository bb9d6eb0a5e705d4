/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pod workers: SyncKnownPods and the predicates (TestSyncKnownPods
 * transcription), coalescing, one sync in flight per pod, cancellation,
 * requeue delays, status errors, GetNewerThan, static-pod serialisation and
 * the worker pool (a stuck pod never delays another; idle threads exit).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/cancel.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/map.h"
#include "fixture.h"
#include "kc_test.h"
#include "podworkers/pod_workers.h"
#include "runtime/api_pod.h"
#include "runtime/cache.h"

/* TestSyncKnownPods (F-PW-14, F-PW-15). */
static void test_sync_known_pods(void **state)
{
        struct fixture *fx = fixture_new();
        struct kc_api_pod *desired[2];
        struct kc_pod_worker_sync_list l = { 0 };
        char uid[16];

        (void)state;
        for (int i = 0; i < 20; i++) {
                snprintf(uid, sizeof(uid), "%d", i);
                update_new(fx, KC_SYNC_POD_UPDATE, uid, "ns", "name", false);
        }
        drain(fx);
        assert_int_equal(kc__pod_workers_count(fx->pw), 20);

        /* kill all but the desired pods; even ones are also being deleted */
        for (int i = 0; i < 20; i++) {
                struct kc_api_pod tmpl = { .name = "name",
                                           .namespace = "ns",
                                           .termination_grace_s = 30,
                                           .deletion_grace_s = -1 };
                struct kc_api_pod *pod;

                if (i == 2 || i == 14)
                        continue;
                snprintf(uid, sizeof(uid), "%d", i);
                tmpl.uid = uid;
                if (i % 2 == 0)
                        tmpl.deletion_ts = T0;
                pod = new_pod_full(&tmpl);
                update(fx, KC_SYNC_POD_KILL, pod);
                kc_api_pod_unref(pod);
        }
        drain(fx);

        assert_true(kc_pod_workers_should_pod_containers_be_terminating(fx->pw, "0"));
        assert_true(kc_pod_workers_should_pod_containers_be_terminating(fx->pw, "1"));
        assert_false(kc_pod_workers_should_pod_containers_be_terminating(fx->pw, "2"));
        assert_true(kc_pod_workers_is_pod_termination_requested(fx->pw, "0"));
        assert_false(kc_pod_workers_is_pod_termination_requested(fx->pw, "2"));
        assert_false(kc_pod_workers_could_have_running_containers(fx->pw, "0"));
        assert_false(kc_pod_workers_could_have_running_containers(fx->pw, "1"));
        assert_true(kc_pod_workers_could_have_running_containers(fx->pw, "2"));
        assert_true(kc_pod_workers_should_pod_content_be_removed(fx->pw, "0"));
        assert_false(kc_pod_workers_should_pod_content_be_removed(fx->pw, "1"));
        assert_false(kc_pod_workers_should_pod_content_be_removed(fx->pw, "2"));
        /* unknown UID before the first SyncKnownPods */
        assert_false(kc_pod_workers_should_pod_containers_be_terminating(fx->pw, "abc"));
        assert_true(kc_pod_workers_could_have_running_containers(fx->pw, "abc"));
        assert_false(kc_pod_workers_should_pod_content_be_removed(fx->pw, "abc"));

        desired[0] = new_pod("2", "ns", "name", false);
        desired[1] = new_pod("14", "ns", "name", false);
        assert_int_equal(kc_pod_workers_sync_known_pods(fx->pw, desired, 2, &l), 0);
        assert_int_equal(kc__pod_workers_count(fx->pw), 2);
        assert_int_equal(l.n, 2);
        assert_non_null(kc_pod_worker_sync_list_find(&l, "2"));
        assert_non_null(kc_pod_worker_sync_list_find(&l, "14"));
        assert_int_equal(kc_pod_worker_sync_list_find(&l, "2")->state, KC_POD_WORK_SYNC);
        assert_true(kc_pod_worker_sync_list_find(&l, "2")->has_config);
        assert_false(kc_pod_worker_sync_list_find(&l, "2")->orphan);
        assert_null(kc_pod_worker_sync_list_find(&l, "3")); /* purged */
        /* Issue 17: an index by UID (upstream's map) makes each find O(1). */
        assert_non_null(l.by_uid);
        assert_int_equal(kc_map_size(l.by_uid), l.n);
        assert_ptr_equal(kc_map_get(l.by_uid, "14"), kc_pod_worker_sync_list_find(&l, "14"));
        kc_pod_worker_sync_list_done(&l);
        assert_null(l.by_uid);
        assert_null(kc_pod_worker_sync_list_find(&l, "2"));
        assert_false(kc_pod_workers_is_pod_termination_requested(fx->pw, "2"));
        /* unknown UID after a SyncKnownPods */
        assert_true(kc_pod_workers_should_pod_containers_be_terminating(fx->pw, "abc"));
        assert_false(kc_pod_workers_could_have_running_containers(fx->pw, "abc"));
        assert_true(kc_pod_workers_should_pod_content_be_removed(fx->pw, "abc"));

        /* workers that are not terminated stay even when config no longer has them;
         * they are driven to termination (issue #15) */
        assert_int_equal(kc_pod_workers_sync_known_pods(fx->pw, NULL, 0, &l), 0);
        assert_int_equal(l.n, 2);
        assert_true(kc_pod_worker_sync_list_find(&l, "2")->orphan);
        kc_pod_worker_sync_list_done(&l);
        drain(fx);
        assert_int_equal(kc__pod_workers_count(fx->pw), 2);
        assert_true(kc_pod_workers_is_pod_known_terminated(fx->pw, "2"));
        assert_true(kc_pod_workers_should_pod_content_be_removed(fx->pw, "2")); /* deleted */

        for (int i = 0; i < 2; i++)
                update(fx, KC_SYNC_POD_KILL, desired[i]); /* finished: ignored */
        drain(fx);
        assert_int_equal(kc_pod_workers_sync_known_pods(fx->pw, NULL, 0, NULL), 0);
        assert_int_equal(kc__pod_workers_count(fx->pw), 0);
        kc_api_pod_unref(desired[0]);
        kc_api_pod_unref(desired[1]);
        fixture_free(fx);
}

/* F-PW-12 / F-PW-14: SyncKnownPods purges a finished UID with restartRequested even though
 * it is still desired; a new Create then starts it again. */
static void test_restart_requested_purged(void **state)
{
        struct fixture *fx = fixture_new();
        struct kc_api_pod *pod = new_pod("1", "ns", "p", true);
        struct kc_pod_worker_sync_list l = { 0 };

        (void)state;
        update(fx, KC_SYNC_POD_CREATE, pod);
        drain(fx);
        assert_int_equal(kc__pod_workers_hold(fx->pw, "1"), 0);
        update(fx, KC_SYNC_POD_KILL, pod);
        update(fx, KC_SYNC_POD_CREATE, pod);
        assert_true(snap(fx, "1").restart_requested);
        kc__pod_workers_release(fx->pw, "1");
        drain(fx);
        assert_true(snap(fx, "1").finished);
        assert_int_equal(kc_pod_workers_sync_known_pods(fx->pw, &pod, 1, &l), 0);
        assert_int_equal(l.n, 0);
        kc_pod_worker_sync_list_done(&l);
        assert_int_equal(kc__pod_workers_count(fx->pw), 0);
        update(fx, KC_SYNC_POD_CREATE, pod);
        drain(fx);
        assert_true(snap(fx, "1").started_at != 0);
        assert_false(snap(fx, "1").finished);
        kc_api_pod_unref(pod);
        fixture_free(fx);
}

/* F-PW-02 coalescing: updates arriving during a sync are replaced by the latest one, which
 * runs next; the oldest StartTime is kept. */
static void test_coalescing(void **state)
{
        struct fixture *fx = fixture_new();
        const char *names[] = { "n1", "n2", "n3" };
        const int64_t starts[] = { T0 + 30, T0 + 10, T0 + 20 };
        struct kc__pod_sync_snapshot s;
        struct rec r[8];

        (void)state;
        fake_lock(&fx->fake);
        snprintf(fx->fake.gate_sync_uid, 64, "c");
        fake_unlock(&fx->fake);
        update_new(fx, KC_SYNC_POD_CREATE, "c", "ns", "n0", false);
        wait_entered(fx, 1);
        for (int i = 0; i < 3; i++) {
                struct kc_api_pod *p = new_pod("c", "ns", names[i], false);
                struct kc_pod_update_options o = { .update_type = KC_SYNC_POD_UPDATE,
                                                   .pod = p,
                                                   .start_time = starts[i] };

                assert_int_equal(kc_pod_workers_update_pod(fx->pw, &o), 0);
                kc_api_pod_unref(p);
        }
        s = snap(fx, "c");
        assert_true(s.has_pending);
        assert_int_equal(s.pending_start_time, T0 + 10);
        assert_int_equal(s.pending_type, KC_SYNC_POD_UPDATE);
        fake_lock(&fx->fake);
        fx->fake.gate_sync_uid[0] = '\0';
        fake_unlock(&fx->fake);
        kc_cancel_trigger_mp(fx->fake.gate);
        drain(fx);
        assert_int_equal(recs_for(fx, "c", r, 8), 2);
        assert_string_equal(r[0].name, "n0");
        assert_string_equal(r[1].name, "n3");
        assert_int_equal(r[1].update_type, KC_SYNC_POD_UPDATE);
        fixture_free(fx);
}

struct hammer {
        struct fixture *fx;
        int seed;
};

static void *hammer_main(void *arg)
{
        struct hammer *h = arg;
        char uid[16];

        for (int k = 0; k < 200; k++) {
                snprintf(uid, sizeof(uid), "h%d", (k * 7 + h->seed) % 10);
                update_new(h->fx, k % 3 ? KC_SYNC_POD_UPDATE : KC_SYNC_POD_SYNC, uid, "ns", uid,
                           false);
        }
        return NULL;
}

/* F-PW-01: at most one sync in flight per pod, with two threads hammering ten pods. */
static void test_one_sync_in_flight_per_pod(void **state)
{
        struct fixture *fx = fixture_new();
        struct hammer h[2] = { { fx, 0 }, { fx, 3 } };
        pthread_t t[2];

        (void)state;
        for (int i = 0; i < 2; i++)
                assert_int_equal(pthread_create(&t[i], NULL, hammer_main, &h[i]), 0);
        for (int i = 0; i < 2; i++)
                pthread_join(t[i], NULL);
        drain(fx);
        fake_lock(&fx->fake);
        assert_int_equal(fx->fake.max_concurrent_per_uid, 1);
        assert_true(fx->fake.n_recs >= 10);
        fake_unlock(&fx->fake);
        fixture_free(fx);
}

/* F-PW-05: a Kill cancels the in-flight SyncPod (which blocks on its ctx); the worker then
 * terminates the pod. */
static void test_kill_cancels_in_flight_sync(void **state)
{
        struct fixture *fx = fixture_new();
        struct rec r[8];

        (void)state;
        fake_lock(&fx->fake);
        snprintf(fx->fake.block_sync_uid, 64, "k");
        fake_unlock(&fx->fake);
        update_new(fx, KC_SYNC_POD_CREATE, "k", "ns", "k", false);
        wait_entered(fx, 1);
        fake_lock(&fx->fake);
        fx->fake.block_sync_uid[0] = '\0';
        fx->fake.n_queue = 0;
        fake_unlock(&fx->fake);
        update_new(fx, KC_SYNC_POD_KILL, "k", "ns", "k", false);
        drain(fx);
        assert_int_equal(recs_for(fx, "k", r, 8), 3);
        assert_int_equal(r[0].kind, REC_SYNC);
        assert_int_equal(r[0].result, -ECANCELED);
        assert_int_equal(r[1].kind, REC_TERMINATING);
        assert_int_equal(r[1].grace, 30);
        assert_int_equal(r[2].kind, REC_TERMINATED);
        assert_true(snap(fx, "k").finished);
        /* a cancelled sync counts as an error for the requeue (10 s × 1.25) */
        fake_lock(&fx->fake);
        assert_true(fx->fake.n_queue >= 1);
        assert_int_equal(fx->fake.queue[0].delay, 12500 * KC_NSEC_PER_MSEC);
        fake_unlock(&fx->fake);
        fixture_free(fx);
}

/* F-PW-05: a shorter grace during termination cancels and restarts SyncTerminatingPod. */
static void test_shorter_grace_restarts_terminating(void **state)
{
        struct fixture *fx = fixture_new();
        struct kc_api_pod *pod = new_pod("g", "ns", "g", false);
        struct kc_kill_pod_options kill = { .grace_period_override_s = 5 };
        struct kc_pod_update_options o = { .update_type = KC_SYNC_POD_KILL,
                                           .pod = pod,
                                           .kill_pod_options = &kill };
        struct kc__pod_sync_snapshot s;

        (void)state;
        update(fx, KC_SYNC_POD_CREATE, pod);
        drain(fx);
        assert_int_equal(kc__pod_workers_hold(fx->pw, "g"), 0);
        update(fx, KC_SYNC_POD_KILL, pod);
        assert_int_equal(snap(fx, "g").grace_period, 30);
        assert_int_equal(kc_pod_workers_update_pod(fx->pw, &o), 0);
        s = snap(fx, "g");
        assert_int_equal(s.grace_period, 5);
        assert_int_equal(s.pending_grace_override, 5);
        /* a longer one later does not raise it */
        kill.grace_period_override_s = 20;
        assert_int_equal(kc_pod_workers_update_pod(fx->pw, &o), 0);
        assert_int_equal(snap(fx, "g").grace_period, 5);
        kc__pod_workers_release(fx->pw, "g");
        drain(fx);
        {
                struct rec r[8];
                size_t n = recs_for(fx, "g", r, 8);

                assert_int_equal(n, 3);
                assert_int_equal(r[1].kind, REC_TERMINATING);
                assert_int_equal(r[1].grace, 5);
        }
        kc_api_pod_unref(pod);
        fixture_free(fx);
}

/* F-PW-08: requeue delays with a fixed random source (jitter factor 0.5 → ×1.25). */
static void test_requeue_delays(void **state)
{
        struct fixture *fx = fixture_new();

        (void)state;
        /* success: resync 60 s → 75 s */
        update_new(fx, KC_SYNC_POD_CREATE, "q", "ns", "q", false);
        drain(fx);
        /* "network is not ready": 1 s → 1.25 s */
        fake_lock(&fx->fake);
        snprintf(fx->fake.next_error, sizeof(fx->fake.next_error),
                 "runtime network not ready: " KC_NETWORK_NOT_READY_ERROR_MSG);
        fake_unlock(&fx->fake);
        update_new(fx, KC_SYNC_POD_SYNC, "q", "ns", "q", false);
        drain(fx);
        /* any other error: 10 s → 12.5 s */
        fake_lock(&fx->fake);
        snprintf(fx->fake.next_error, sizeof(fx->fake.next_error), "boom");
        fake_unlock(&fx->fake);
        update_new(fx, KC_SYNC_POD_SYNC, "q", "ns", "q", false);
        drain(fx);
        /* a back-off that ends in 3 s: exactly 3 s, no jitter (D10) */
        fake_lock(&fx->fake);
        snprintf(fx->fake.next_error, sizeof(fx->fake.next_error), "CrashLoopBackOff: back-off");
        fx->fake.next_requeue_after = 3 * SEC;
        fake_unlock(&fx->fake);
        update_new(fx, KC_SYNC_POD_SYNC, "q", "ns", "q", false);
        drain(fx);
        /* phase transition: 0 (sync terminal, then terminating); terminated: nothing */
        fake_lock(&fx->fake);
        snprintf(fx->fake.terminal_uid[0], 64, "q");
        fake_unlock(&fx->fake);
        update_new(fx, KC_SYNC_POD_SYNC, "q", "ns", "q", false);
        drain(fx);

        fake_lock(&fx->fake);
        assert_int_equal(fx->fake.n_queue, 6);
        assert_int_equal(fx->fake.queue[0].delay, 75 * SEC);
        assert_int_equal(fx->fake.queue[1].delay, 1250 * KC_NSEC_PER_MSEC);
        assert_int_equal(fx->fake.queue[2].delay, 12500 * KC_NSEC_PER_MSEC);
        assert_int_equal(fx->fake.queue[3].delay, 3 * SEC);
        assert_int_equal(fx->fake.queue[4].delay, 0);
        assert_int_equal(fx->fake.queue[5].delay, 0);
        for (size_t i = 0; i < 6; i++)
                assert_string_equal(fx->fake.queue[i].uid, "q");
        fake_unlock(&fx->fake);
        fixture_free(fx);
}

/* F-PW-07: a cached status error becomes a sync error ("error determining status"): the
 * sync is skipped and retried at the error backoff. */
static void test_status_error(void **state)
{
        struct fixture *fx = fixture_new();

        (void)state;
        assert_true(kc_pod_cache_set(fx->cache, "e", NULL, "rpc error: runtime down", T0));
        update_new(fx, KC_SYNC_POD_CREATE, "e", "ns", "e", false);
        drain(fx);
        assert_int_equal(n_recs_for(fx, "e"), 0);
        fake_lock(&fx->fake);
        assert_int_equal(fx->fake.n_queue, 1);
        assert_int_equal(fx->fake.queue[0].delay, 12500 * KC_NSEC_PER_MSEC);
        fake_unlock(&fx->fake);
        /* the pod still started: the status is fetched after the start decision */
        assert_true(snap(fx, "e").started_at != 0);
        /* once the cache holds a good status, the next update syncs */
        assert_true(kc_pod_cache_set(fx->cache, "e", NULL, NULL, T0 + 1));
        update_new(fx, KC_SYNC_POD_SYNC, "e", "ns", "e", false);
        drain(fx);
        assert_int_equal(n_recs_for(fx, "e"), 1);
        fixture_free(fx);
}

/*
 * Replaces fx's pool with one on a fresh cache with a real timeline (instead
 * of FAR_FUTURE), so that syncs can be made to wait in it; returned, for
 * fixture_free_on() to free with the pool.
 */
static struct kc_pod_cache *pool_on_own_cache(struct fixture *fx, unsigned max_threads,
                                              int64_t idle_timeout_ns)
{
        struct kc_pod_workers_config cfg;
        struct kc_pod_cache *cache = NULL;

        assert_int_equal(kc_pod_cache_new(&cache), 0);
        cfg = fixture_cfg(fx, cache, max_threads, idle_timeout_ns);
        kc_pod_workers_free(fx->pw);
        assert_int_equal(kc_pod_workers_new(&cfg, &fx->pw), 0);
        return cache;
}

static void fixture_free_on(struct fixture *fx, struct kc_pod_cache *cache)
{
        kc_pod_workers_free(fx->pw);
        fx->pw = NULL;
        kc_pod_cache_free(cache);
        fixture_free(fx);
}

/* F-PW-07: the next sync waits for a status newer than the last sync time. */
static void test_get_newer_than_blocks(void **state)
{
        struct fixture *fx = fixture_new();
        struct kc_pod_cache *cache = pool_on_own_cache(fx, 0, 0);

        (void)state;
        kc_pod_cache_update_time(cache, T0);
        update_new(fx, KC_SYNC_POD_CREATE, "b", "ns", "b", false); /* newer than 0: runs */
        drain(fx);
        assert_int_equal(n_recs_for(fx, "b"), 1);
        kc_fake_clock_advance(fx->clock, SEC); /* last sync was at T0 */
        update_new(fx, KC_SYNC_POD_SYNC, "b", "ns", "b", false);
        /* blocked: the cache has nothing newer than T0 */
        assert_int_equal(kc__pod_workers_drain(fx->pw, 200), -ETIMEDOUT);
        assert_int_equal(n_recs_for(fx, "b"), 1);
        kc_pod_cache_update_time(cache, T0 + SEC);
        drain(fx);
        assert_int_equal(n_recs_for(fx, "b"), 2);
        fixture_free_on(fx, cache);
}

/* UpdatePod(@type) for pods @prefix0..(n-1). */
static void update_pods(struct fixture *fx, enum kc_sync_pod_type type, const char *prefix, int n)
{
        char uid[16];

        for (int i = 0; i < n; i++) {
                snprintf(uid, sizeof(uid), "%s%d", prefix, i);
                update_new(fx, type, uid, "ns", uid, false);
        }
}

/*
 * Holds @n syncs of pods @prefix0..(n-1) in the syncer at once, each on a
 * thread of its own (the grower adds those past eager), then lets them end.
 */
static void gated_burst(struct fixture *fx, const char *prefix, int n)
{
        fake_lock(&fx->fake);
        snprintf(fx->fake.gate_sync_prefix, 64, "%s", prefix);
        fake_unlock(&fx->fake);
        update_pods(fx, KC_SYNC_POD_SYNC, prefix, n);
        wait_entered(fx, n);
        assert_true(kc__pod_workers_thread_count(fx->pw) >= (unsigned)n);
        kc_cancel_trigger_mp(fx->fake.gate);
        drain(fx);
}

/* Creates pods @prefix0..(n-1) and lets their first syncs run (newer than 0: at once). */
static void create_pods(struct fixture *fx, const char *prefix, int n)
{
        update_pods(fx, KC_SYNC_POD_CREATE, prefix, n);
        drain(fx);
}

/*
 * A sync waiting for a fresh status holds no thread (issue 18: at 5,000
 * pods each resync burst blocked hundreds of pool threads in GetNewerThan):
 * it parks, and the cache write that would end a subscriber's wait resumes
 * it: a Set of its own entry, or an UpdateTime.
 */
static void test_cache_wait_parks(void **state)
{
        struct fixture *fx = fixture_new();
        struct kc_pod_cache *cache = pool_on_own_cache(fx, 256, 0);
        unsigned eager = kc__pod_workers_eager_threads(fx->pw);
        char uid[16];

        (void)state;
        kc_pod_cache_update_time(cache, T0);
        create_pods(fx, "w", 64);
        kc_fake_clock_advance(fx->clock, SEC); /* the last syncs were at T0 */
        update_pods(fx, KC_SYNC_POD_SYNC, "w", 64);
        /* every one waits: the cache has nothing newer than T0 */
        assert_int_equal(kc__pod_workers_drain(fx->pw, 200), -ETIMEDOUT);
        for (int i = 0; i < 64; i++) {
                snprintf(uid, sizeof(uid), "w%d", i);
                assert_int_equal(n_recs_for(fx, uid), 1);
        }
        /* Waiting in the cache, each had held a thread: 64 of them. Parked,
         * the pool stays at what it starts at once (the margin: threads the
         * grower may add should a loaded machine stall the queue). */
        assert_true(kc__pod_workers_thread_count(fx->pw) <= eager + 12);
        /* A write of one pod's entry, as new as its last sync, resumes it alone. */
        assert_true(kc_pod_cache_set(cache, "w7", NULL, NULL, T0));
        wait_recs(fx, "w7", 2);
        assert_int_equal(n_recs_for(fx, "w8"), 1);
        /* UpdateTime resumes the others. */
        kc_pod_cache_update_time(cache, T0 + SEC);
        drain(fx);
        for (int i = 0; i < 64; i++) {
                snprintf(uid, sizeof(uid), "w%d", i);
                assert_int_equal(n_recs_for(fx, uid), 2);
        }
        fixture_free_on(fx, cache);
}

/*
 * F-PW-05 for a parked sync: the kill cancels it at once, as it would end a
 * wait in the cache; SyncPod is never called with the stale status, and the
 * kill's own iteration waits for a fresh one in turn.
 */
static void test_kill_cancels_parked_sync(void **state)
{
        struct fixture *fx = fixture_new();
        struct kc_pod_cache *cache = pool_on_own_cache(fx, 0, 0);
        struct rec r[8];

        (void)state;
        kc_pod_cache_update_time(cache, T0);
        create_pods(fx, "k", 1);
        kc_fake_clock_advance(fx->clock, SEC);
        update_pods(fx, KC_SYNC_POD_SYNC, "k", 1);
        assert_int_equal(kc__pod_workers_drain(fx->pw, 100), -ETIMEDOUT);
        update_new(fx, KC_SYNC_POD_KILL, "k0", "ns", "k0", false);
        /* The kill's iteration waits for a status newer than T0 too. */
        assert_int_equal(kc__pod_workers_drain(fx->pw, 100), -ETIMEDOUT);
        assert_int_equal(n_recs_for(fx, "k0"), 1);
        kc_pod_cache_update_time(cache, T0 + SEC);
        wait_recs(fx, "k0", 2);
        /* SyncTerminatedPod waits for a status newer than SyncTerminatingPod's end. */
        kc_pod_cache_update_time(cache, FAR_FUTURE);
        drain(fx);
        assert_int_equal(recs_for(fx, "k0", r, 8), 3);
        assert_int_equal(r[0].kind, REC_SYNC);
        assert_int_equal(r[1].kind, REC_TERMINATING);
        assert_int_equal(r[2].kind, REC_TERMINATED);
        assert_true(snap(fx, "k0").finished);
        fixture_free_on(fx, cache);
}

/*
 * Syncs blocked in the syncer (a runtime call, a grace period) stall the
 * queue: the grower adds a thread each time, past what the pool starts at
 * once, until every ready pod has one.
 */
static void test_blocked_syncs_grow_the_pool(void **state)
{
        struct fixture *fx = fixture_new_cfg(64, 0);
        int n;

        (void)state;
        n = (int)kc__pod_workers_eager_threads(fx->pw) + 4;
        gated_burst(fx, "g", n);
        fixture_free(fx);
}

/* F-PW-16 through UpdatePod: static pods with one full name start one at a time, in
 * arrival order; "not yet" re-enqueues at jitter(10 s, 0.5). */
static void test_static_pods_serialised(void **state)
{
        struct fixture *fx = fixture_new();
        char buf[128];

        (void)state;
        update_new(fx, KC_SYNC_POD_UPDATE, "s1", "test1", "pod1", true);
        drain(fx);
        update_new(fx, KC_SYNC_POD_UPDATE, "s2", "test1", "pod1", true);
        update_new(fx, KC_SYNC_POD_UPDATE, "s3", "test1", "pod1", true);
        drain(fx);
        assert_int_equal(n_recs_for(fx, "s1"), 1);
        assert_int_equal(n_recs_for(fx, "s2"), 0);
        assert_int_equal(n_recs_for(fx, "s3"), 0);
        assert_true(kc__pod_workers_get_started_static(fx->pw, "pod1_test1", buf, sizeof(buf)));
        assert_string_equal(buf, "s1");
        assert_true(kc__pod_workers_get_waiting_static(fx->pw, "pod1_test1", buf, sizeof(buf)));
        assert_string_equal(buf, "s2,s3");
        /* both got a "not yet" retry (the two may run in either order) */
        fake_lock(&fx->fake);
        {
                int retries = 0;

                for (size_t i = 0; i < fx->fake.n_queue; i++)
                        if (strcmp(fx->fake.queue[i].uid, "s1") != 0 &&
                            fx->fake.queue[i].delay == 12500 * KC_NSEC_PER_MSEC)
                                retries++;
                assert_int_equal(retries, 2);
        }
        fake_unlock(&fx->fake);
        assert_false(kc_pod_workers_is_pod_for_mirror_pod_terminating_by_full_name(fx->pw,
                                                                                   "pod1_test1"));

        /* kill s1; while it terminates the mirror predicate is true */
        fake_lock(&fx->fake);
        snprintf(fx->fake.block_terminating_uid, 64, "s1");
        fake_unlock(&fx->fake);
        update_new(fx, KC_SYNC_POD_KILL, "s1", "test1", "pod1", true);
        wait_entered(fx, 1);
        assert_true(kc_pod_workers_is_pod_for_mirror_pod_terminating_by_full_name(fx->pw,
                                                                                  "pod1_test1"));
        kc_cancel_trigger_mp(fx->fake.release);
        drain(fx);
        assert_false(kc_pod_workers_is_pod_for_mirror_pod_terminating_by_full_name(fx->pw,
                                                                                   "pod1_test1"));
        assert_false(kc__pod_workers_get_started_static(fx->pw, "pod1_test1", buf, sizeof(buf)));

        /* the work queue would now retry s3 first: it must still wait for s2 */
        update_new(fx, KC_SYNC_POD_UPDATE, "s3", "test1", "pod1", true);
        drain(fx);
        assert_int_equal(n_recs_for(fx, "s3"), 0);
        update_new(fx, KC_SYNC_POD_UPDATE, "s2", "test1", "pod1", true);
        drain(fx);
        assert_int_equal(n_recs_for(fx, "s2"), 1);
        assert_true(kc__pod_workers_get_started_static(fx->pw, "pod1_test1", buf, sizeof(buf)));
        assert_string_equal(buf, "s2");
        fixture_free(fx);
}

/* The pool: a pod stuck in SyncTerminatingPod does not delay another pod's sync. */
static void test_stuck_pod_does_not_delay_others(void **state)
{
        struct fixture *fx = fixture_new_cfg(0, 0);

        (void)state;
        fake_lock(&fx->fake);
        snprintf(fx->fake.block_terminating_uid, 64, "stuck");
        fake_unlock(&fx->fake);
        update_new(fx, KC_SYNC_POD_KILL, "stuck", "ns", "stuck", false);
        wait_entered(fx, 1);
        for (int i = 0; i < 5; i++) {
                char uid[16];

                snprintf(uid, sizeof(uid), "other%d", i);
                update_new(fx, KC_SYNC_POD_CREATE, uid, "ns", uid, false);
                wait_recs(fx, uid, 1);
        }
        /* the stuck pod is still stuck */
        assert_int_equal(n_recs_for(fx, "stuck"), 0);
        kc_cancel_trigger_mp(fx->fake.release);
        drain(fx);
        assert_int_equal(n_recs_for(fx, "stuck"), 2);
        fixture_free(fx);
}

/* The pool grows on demand and idle threads above the minimum exit (joined later). */
static void test_pool_grows_and_shrinks(void **state)
{
        struct fixture *fx = fixture_new_cfg(64, 50 * KC_NSEC_PER_MSEC);
        struct timespec ms = { 0, 10 * KC_NSEC_PER_MSEC };
        char uid[16];

        (void)state;
        fake_lock(&fx->fake);
        snprintf(fx->fake.gate_sync_uid, 64, "g0");
        fake_unlock(&fx->fake);
        update_new(fx, KC_SYNC_POD_CREATE, "g0", "ns", "g0", false);
        wait_entered(fx, 1);
        for (int i = 0; i < 20; i++) {
                snprintf(uid, sizeof(uid), "p%d", i);
                update_new(fx, KC_SYNC_POD_CREATE, uid, "ns", uid, false);
        }
        for (int i = 0; i < 20; i++) {
                snprintf(uid, sizeof(uid), "p%d", i);
                wait_recs(fx, uid, 1);
        }
        assert_true(kc__pod_workers_thread_count(fx->pw) >= 2);
        kc_cancel_trigger_mp(fx->fake.gate);
        drain(fx);
        /* 50 ms idle timeout; up to 5 s (scaled) for a loaded machine to run the exits. */
        for (int i = 0;
             i < 500 * kc_test_timeout_multiplier() && kc__pod_workers_thread_count(fx->pw) > 1;
             i++)
                nanosleep(&ms, NULL);
        assert_int_equal(kc__pod_workers_thread_count(fx->pw), 1);
        /* and it still works after shrinking (a spawn joins the exited threads) */
        update_new(fx, KC_SYNC_POD_CREATE, "late", "ns", "late", false);
        drain(fx);
        assert_int_equal(n_recs_for(fx, "late"), 1);
        fixture_free(fx);
}

/*
 * A trickle of work after a burst lets the surplus threads retire: the most
 * recently idle thread is woken first, so one thread serves the trickle and
 * the others reach the idle timeout. Woken in arrival order (the oldest
 * waiter first), every thread got work before its timeout and the pool stayed
 * at its burst size for good, each thread's malloc cache growing (bench/soak).
 */
static void test_pool_shrinks_under_trickle(void **state)
{
        struct fixture *fx = fixture_new_cfg(64, 300 * KC_NSEC_PER_MSEC);
        struct timespec tick = { 0, 20 * KC_NSEC_PER_MSEC };
        struct kc_clock *real = kc_clock_real();
        int64_t deadline;
        unsigned n = 0;

        (void)state;
        /* The burst: eight syncs blocked in the syncer at once, on eight threads. */
        gated_burst(fx, "p", 8);

        /* The trickle: one sync every 20 ms, far more often than the 300 ms
         * timeout, until the pool is down to two threads (or the deadline). */
        deadline = kc_clock_now(real) + 10 * SEC * kc_test_timeout_multiplier();
        while ((n = kc__pod_workers_thread_count(fx->pw)) > 2 && kc_clock_now(real) < deadline) {
                update_new(fx, KC_SYNC_POD_SYNC, "p0", "ns", "p0", false);
                nanosleep(&tick, NULL);
        }
        assert_true(n <= 2);
        /* The retired threads are joined as they go (issue 18: each kept its
         * stack mapped until the next burst): one at most waits. */
        assert_true(kc__pod_workers_unjoined_count(fx->pw) <= 1);
        /* and the trickle was served all along */
        drain(fx);
        assert_true(n_recs_for(fx, "p0") >= 3);
        fixture_free(fx);
}

/*
 * Bursts after a stall let the threads the grower added retire: every burst
 * wakes every idle thread, so none reaches the idle timeout, but a thread
 * past what the pool starts at once that finds no work while that many
 * others are idle leaves once no stall has called for a thread for the
 * timeout (bench/soak: one stall on a loaded machine kept a fifth thread
 * for good).
 */
static void test_surplus_retires_under_bursts(void **state)
{
        struct fixture *fx = fixture_new_cfg(64, 300 * KC_NSEC_PER_MSEC);
        struct timespec tick = { 0, 20 * KC_NSEC_PER_MSEC };
        struct kc_clock *real = kc_clock_real();
        unsigned eager = kc__pod_workers_eager_threads(fx->pw), n = 0;
        int64_t deadline;
        int bursts = 0;

        (void)state;
        /* Blocked syncs stall the queue: the grower takes the pool past eager. */
        gated_burst(fx, "g", (int)eager + 3);

        /* Bursts of twice eager pods every 20 ms, far more often than the
         * 300 ms timeout, until the pool is down to eager (or the deadline). */
        deadline = kc_clock_now(real) + 10 * SEC * kc_test_timeout_multiplier();
        while ((n = kc__pod_workers_thread_count(fx->pw)) > eager &&
               kc_clock_now(real) < deadline) {
                update_pods(fx, KC_SYNC_POD_SYNC, "b", 2 * (int)eager);
                bursts++;
                nanosleep(&tick, NULL);
        }
        assert_true(n <= eager);
        /* the bursts were served all along */
        drain(fx);
        assert_true(bursts >= 1);
        assert_true(n_recs_for(fx, "b0") >= 1);
        fixture_free(fx);
}

/* kc_pod_workers_free cancels in-flight syncs and joins everything. */
static void test_free_cancels_in_flight(void **state)
{
        struct fixture *fx = fixture_new();

        (void)state;
        fake_lock(&fx->fake);
        snprintf(fx->fake.block_sync_uid, 64, "f");
        fake_unlock(&fx->fake);
        update_new(fx, KC_SYNC_POD_CREATE, "f", "ns", "f", false);
        wait_entered(fx, 1);
        kc_pod_workers_free(fx->pw);
        fx->pw = NULL;
        {
                struct rec r[4];

                assert_int_equal(recs_for(fx, "f", r, 4), 1);
                assert_int_equal(r[0].result, -ECANCELED);
        }
        fixture_free(fx);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sync_known_pods),
                cmocka_unit_test(test_restart_requested_purged),
                cmocka_unit_test(test_coalescing),
                cmocka_unit_test(test_one_sync_in_flight_per_pod),
                cmocka_unit_test(test_kill_cancels_in_flight_sync),
                cmocka_unit_test(test_shorter_grace_restarts_terminating),
                cmocka_unit_test(test_requeue_delays),
                cmocka_unit_test(test_status_error),
                cmocka_unit_test(test_get_newer_than_blocks),
                cmocka_unit_test(test_static_pods_serialised),
                cmocka_unit_test(test_stuck_pod_does_not_delay_others),
                cmocka_unit_test(test_pool_grows_and_shrinks),
                cmocka_unit_test(test_pool_shrinks_under_trickle),
                cmocka_unit_test(test_surplus_retires_under_bursts),
                cmocka_unit_test(test_cache_wait_parks),
                cmocka_unit_test(test_kill_cancels_parked_sync),
                cmocka_unit_test(test_blocked_syncs_grow_the_pool),
                cmocka_unit_test(test_free_cancels_in_flight),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
