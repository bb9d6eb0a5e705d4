/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pod-worker state machine driven through UpdatePod with a fake syncer
 * and the real pod cache. Transcriptions of upstream pod_workers_test.go
 * (TestUpdatePod table, TestUpdatePodForRuntimePod,
 * TestUpdatePodDoesNotForgetSyncPodKill, TestTerminalPhaseTransition,
 * TestKillPodNowFunc) with upstream's expectations; timestamps are checked
 * for presence and order because our fake clock does not tick per call.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/cancel.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "fixture.h"
#include "podworkers/pod_workers.h"
#include "runtime/api_pod.h"
#include "runtime/cache.h"
#include "runtime/container.h"

/* TestUpdatePod "a new pod is recorded and started" (F-PW-01, F-PW-03). */
static void test_new_pod_recorded_and_started(void **state)
{
        struct fixture *fx = fixture_new();
        struct kc__pod_sync_snapshot s;

        (void)state;
        update_new(fx, KC_SYNC_POD_CREATE, "1", "ns", "running-pod", false);
        drain(fx);
        s = snap(fx, "1");
        assert_string_equal(s.fullname, "running-pod_ns");
        assert_int_equal(s.synced_at, T0);
        assert_int_equal(s.started_at, T0);
        assert_int_equal(s.terminating_at, 0);
        assert_true(s.has_ctx);
        assert_true(s.has_active);
        assert_true(s.active_has_pod);
        assert_int_equal(s.active_type, KC_SYNC_POD_SYNC); /* UpdateType never merged */
        assert_false(s.active_has_kill);
        assert_false(s.has_pending);
        assert_false(s.working);
        assert_false(kc_pod_workers_is_pod_known_terminated(fx->pw, "1"));
        fixture_free(fx);
}

/* TestUpdatePod "... unless it is a duplicate of an existing terminating pod UID" (F-PW-12). */
static void test_create_during_termination_requests_restart(void **state)
{
        struct fixture *fx = fixture_new();
        struct kc__pod_sync_snapshot s;
        struct kc_api_pod *labelled;

        (void)state;
        update_new(fx, KC_SYNC_POD_CREATE, "1", "ns", "running-pod", false);
        drain(fx);
        assert_int_equal(kc__pod_workers_hold(fx->pw, "1"), 0);
        update_new(fx, KC_SYNC_POD_KILL, "1", "ns", "running-pod", false);
        labelled = new_pod("1", "ns", "running-pod-updated", false);
        update(fx, KC_SYNC_POD_CREATE, labelled);
        kc_api_pod_unref(labelled);
        kc__pod_workers_release(fx->pw, "1");
        drain(fx);

        s = snap(fx, "1");
        assert_string_equal(s.fullname, "running-pod_ns");
        assert_true(s.started_at != 0 && s.terminating_at != 0 && s.terminated_at != 0);
        assert_int_equal(s.grace_period, 30);
        assert_true(s.started_terminating);
        assert_true(s.restart_requested); /* a create arrived during termination */
        assert_true(s.finished);
        assert_true(s.active_has_kill);
        assert_int_equal(s.active_grace_override, 30);
        /* the Create was not queued: the active pod is still the killed one */
        assert_string_equal(s.active_pod_name, "running-pod");
        assert_true(kc_pod_workers_is_pod_known_terminated(fx->pw, "1"));
        fixture_free(fx);
}

/* TestUpdatePod "a new pod is recorded and started and running pod is ignored". */
static void test_running_pod_ignored_with_pod(void **state)
{
        struct fixture *fx = fixture_new();
        struct kc_api_pod *pod = new_pod("1", "ns", "running-pod", false);
        struct kc_pod *rp = new_running_pod("1", "ns", "orphaned-pod");
        struct kc_pod_update_options o = { .update_type = KC_SYNC_POD_CREATE,
                                           .pod = pod,
                                           .running_pod = rp };
        struct kc__pod_sync_snapshot s;

        (void)state;
        assert_int_equal(kc_pod_workers_update_pod(fx->pw, &o), 0);
        drain(fx);
        s = snap(fx, "1");
        assert_string_equal(s.fullname, "running-pod_ns");
        assert_true(s.started_at != 0);
        assert_false(s.active_has_running_pod);
        assert_false(s.observed_runtime);
        assert_int_equal(s.terminating_at, 0);
        kc_pod_unref(rp);
        kc_api_pod_unref(pod);
        fixture_free(fx);
}

/* TestUpdatePod "a running pod is terminated when an update contains a deletionTimestamp"
 * (F-PW-04, F-PW-06: the deletion grace 15 s wins over the spec's 30 s). */
static void test_deletion_timestamp_terminates(void **state)
{
        struct fixture *fx = fixture_new();
        struct kc_api_pod tmpl = { .uid = "1",
                                   .name = "running-pod",
                                   .namespace = "ns",
                                   .termination_grace_s = 30,
                                   .deletion_grace_s = 15,
                                   .deletion_ts = T0 - SEC };
        struct kc_api_pod *deleted = new_pod_full(&tmpl);
        struct kc__pod_sync_snapshot s;
        struct rec r[8];
        size_t n;

        (void)state;
        update_new(fx, KC_SYNC_POD_CREATE, "1", "ns", "running-pod", false);
        drain(fx);
        update(fx, KC_SYNC_POD_UPDATE, deleted);
        kc_api_pod_unref(deleted);
        drain(fx);

        s = snap(fx, "1");
        assert_true(s.started_at != 0 && s.terminating_at != 0 && s.terminated_at != 0);
        assert_int_equal(s.grace_period, 15);
        assert_true(s.started_terminating);
        assert_true(s.finished);
        assert_true(s.deleted);
        assert_false(s.evicted);
        assert_true(s.active_has_kill);
        assert_int_equal(s.active_grace_override, 15);
        assert_int_equal(s.active_pod_deletion_ts, T0 - SEC);
        assert_true(kc_pod_workers_is_pod_known_terminated(fx->pw, "1"));
        assert_true(kc_pod_workers_should_pod_content_be_removed(fx->pw, "1"));

        n = recs_for(fx, "1", r, 8);
        assert_int_equal(n, 3);
        assert_int_equal(r[0].kind, REC_SYNC);
        assert_int_equal(r[0].update_type, KC_SYNC_POD_CREATE);
        assert_int_equal(r[1].kind, REC_TERMINATING);
        assert_int_equal(r[1].grace, 15);
        assert_int_equal(r[2].kind, REC_TERMINATED);
        fixture_free(fx);
}

/* TestUpdatePod "a running pod is terminated when an eviction is requested" (F-PW-04, F-PW-19). */
static void test_eviction_terminates(void **state)
{
        struct fixture *fx = fixture_new();
        struct kc_api_pod *pod = new_pod("1", "ns", "running-pod", false);
        struct kc_kill_pod_options kill = { .grace_period_override_s = -1, .evict = true };
        struct kc_pod_update_options o = { .update_type = KC_SYNC_POD_KILL,
                                           .pod = pod,
                                           .kill_pod_options = &kill };
        struct kc__pod_sync_snapshot s;

        (void)state;
        update(fx, KC_SYNC_POD_CREATE, pod);
        drain(fx);
        assert_int_equal(kc_pod_workers_update_pod(fx->pw, &o), 0);
        drain(fx);
        s = snap(fx, "1");
        assert_true(s.terminating_at != 0 && s.terminated_at != 0);
        assert_int_equal(s.grace_period, 30);
        assert_true(s.started_terminating);
        assert_true(s.finished);
        assert_true(s.evicted);
        assert_false(s.deleted);
        assert_true(s.active_has_kill);
        assert_true(s.active_evict);
        assert_int_equal(s.active_grace_override, 30);
        assert_true(kc_pod_workers_is_pod_known_terminated(fx->pw, "1"));
        assert_true(kc_pod_workers_should_pod_content_be_removed(fx->pw, "1"));
        kc_api_pod_unref(pod);
        fixture_free(fx);
}

static struct kc_api_pod *done_pod(void)
{
        struct kc_api_pod tmpl = { .uid = "1",
                                   .name = "done-pod",
                                   .namespace = "ns",
                                   .termination_grace_s = 30,
                                   .deletion_grace_s = -1,
                                   .phase = KC_POD_PHASE_SUCCEEDED };

        return new_pod_full(&tmpl);
}

/* TestUpdatePod "a pod that is terminal and has never started must be terminated if the
 * runtime does not have a cached terminal state" (F-PW-04, F-PW-17). Upstream's fake cache
 * returns the runtime's NotFound error; here the cache holds that error until the worker runs. */
static void test_terminal_never_started_not_cached(void **state)
{
        struct fixture *fx = fixture_new();
        struct kc_api_pod *pod = done_pod();
        struct kc__pod_sync_snapshot s;
        struct rec r[8];

        (void)state;
        assert_true(kc_pod_cache_set(fx->cache, "1", NULL, "No such pod", T0));
        assert_int_equal(kc__pod_workers_hold(fx->pw, "1"), 0);
        update(fx, KC_SYNC_POD_CREATE, pod);
        s = snap(fx, "1");
        assert_int_equal(s.terminated_at, 0); /* not pre-marked */
        assert_int_equal(s.terminating_at, T0);
        kc_pod_cache_delete(fx->cache, "1");
        kc__pod_workers_release(fx->pw, "1");
        drain(fx);

        s = snap(fx, "1");
        assert_string_equal(s.fullname, "done-pod_ns");
        assert_int_equal(s.synced_at, T0);
        assert_int_equal(s.terminating_at, T0);
        assert_true(s.started_at != 0 && s.terminated_at != 0);
        assert_int_equal(s.grace_period, 30);
        assert_true(s.started_terminating);
        assert_true(s.finished);
        assert_true(s.active_has_kill);
        assert_int_equal(s.active_grace_override, 30);
        assert_true(kc_pod_workers_is_pod_known_terminated(fx->pw, "1"));
        /* it never ran SyncPod: terminating with grace 30, then terminated */
        assert_int_equal(recs_for(fx, "1", r, 8), 2);
        assert_int_equal(r[0].kind, REC_TERMINATING);
        assert_int_equal(r[0].grace, 30);
        assert_int_equal(r[1].kind, REC_TERMINATED);
        kc_api_pod_unref(pod);
        fixture_free(fx);
}

/* TestUpdatePod "a pod that is terminal and has never started advances to finished if the
 * runtime has a cached terminal state" (F-PW-17: pre-marked terminated, finished false). */
static void test_terminal_never_started_cached(void **state)
{
        struct fixture *fx = fixture_new();
        struct kc_api_pod *pod = done_pod();
        struct kc_pod_status *empty = NULL;
        struct kc__pod_sync_snapshot s;
        struct rec r[8];

        (void)state;
        assert_int_equal(kc_pod_status_new_default("1", &empty), 0);
        assert_true(kc_pod_cache_set(fx->cache, "1", empty, NULL, T0));
        kc_pod_status_unref(empty);
        assert_int_equal(kc__pod_workers_hold(fx->pw, "1"), 0);
        update(fx, KC_SYNC_POD_CREATE, pod);
        /* expectBeforeWorker */
        s = snap(fx, "1");
        assert_string_equal(s.fullname, "done-pod_ns");
        assert_int_equal(s.synced_at, T0);
        assert_int_equal(s.terminating_at, T0);
        assert_int_equal(s.terminated_at, T0);
        assert_false(s.finished);
        assert_true(s.started_terminating);
        assert_true(s.working);
        assert_true(s.has_pending);
        assert_int_equal(s.pending_type, KC_SYNC_POD_CREATE);
        assert_false(s.pending_has_kill); /* terminated: kill options dropped */
        assert_true(kc_pod_workers_is_pod_known_terminated(fx->pw, "1"));
        kc__pod_workers_release(fx->pw, "1");
        drain(fx);

        s = snap(fx, "1");
        assert_true(s.started_at != 0);
        assert_true(s.finished);
        assert_false(s.restart_requested);
        assert_true(s.active_has_pod);
        assert_int_equal(s.active_type, KC_SYNC_POD_SYNC);
        /* only SyncTerminatedPod ran */
        assert_int_equal(recs_for(fx, "1", r, 8), 1);
        assert_int_equal(r[0].kind, REC_TERMINATED);
        kc_api_pod_unref(pod);
        fixture_free(fx);
}

/* TestUpdatePod "an orphaned running pod we have not seen is marked terminating and advances
 * to finished and then is removed" (F-PW-11). */
static void test_orphaned_running_pod_kill(void **state)
{
        struct fixture *fx = fixture_new();
        struct kc_pod *rp = new_running_pod("1", "ns", "orphaned-pod");
        struct kc_pod_update_options o = { .update_type = KC_SYNC_POD_KILL, .running_pod = rp };
        struct kc__pod_sync_snapshot s;
        struct rec r[8];

        (void)state;
        assert_int_equal(kc__pod_workers_hold(fx->pw, "1"), 0);
        assert_int_equal(kc_pod_workers_update_pod(fx->pw, &o), 0);
        s = snap(fx, "1");
        assert_string_equal(s.fullname, "orphaned-pod_ns");
        assert_int_equal(s.terminating_at, T0);
        assert_int_equal(s.grace_period, 1);
        assert_true(s.deleted);
        assert_true(s.observed_runtime);
        assert_true(s.working);
        assert_true(s.pending_has_running_pod);
        assert_false(s.pending_has_pod);
        assert_int_equal(s.pending_type, KC_SYNC_POD_KILL);
        assert_true(s.pending_has_kill);
        assert_int_equal(s.pending_grace_override, 1);
        kc__pod_workers_release(fx->pw, "1");
        drain(fx);
        /* once fully terminated, a runtime pod is no longer tracked */
        assert_int_equal(kc__pod_workers_snapshot(fx->pw, "1", &s), -ENOENT);
        assert_false(kc_pod_workers_is_pod_known_terminated(fx->pw, "1"));
        assert_int_equal(recs_for(fx, "1", r, 8), 1);
        assert_int_equal(r[0].kind, REC_TERMINATING_RUN);
        assert_string_equal(r[0].name, "orphaned-pod");
        kc_pod_unref(rp);
        fixture_free(fx);
}

/* TestUpdatePod "an orphaned running pod with a non-kill update type does nothing" and
 * TestUpdatePodForRuntimePod (F-PW-11). */
static void test_runtime_pod_only_kill(void **state)
{
        struct fixture *fx = fixture_new();
        struct kc_pod *rp = new_running_pod("1", "test", "1");
        struct kc_pod_update_options o = { .update_type = KC_SYNC_POD_CREATE, .running_pod = rp };
        struct kc__pod_sync_snapshot s;
        struct rec r[8];

        (void)state;
        assert_int_equal(kc_pod_workers_update_pod(fx->pw, &o), 0);
        drain(fx);
        assert_int_equal(kc__pod_workers_snapshot(fx->pw, "1", &s), -ENOENT);
        assert_int_equal(n_recs_for(fx, "1"), 0);

        o.update_type = KC_SYNC_POD_KILL;
        assert_int_equal(kc_pod_workers_update_pod(fx->pw, &o), 0);
        drain(fx);
        assert_int_equal(recs_for(fx, "1", r, 8), 1);
        assert_int_equal(r[0].kind, REC_TERMINATING_RUN);
        assert_string_equal(r[0].name, "1");
        kc_pod_unref(rp);
        fixture_free(fx);
}

/* F-PW-13 / TestUpdatePodForTerminatedRuntimePod in spirit: a finished pod ignores every
 * update (a runtime kill included) until SyncKnownPods forgets it. */
static void test_finished_pod_ignores_updates(void **state)
{
        struct fixture *fx = fixture_new();
        struct kc_pod *rp = new_running_pod("1", "ns", "p");
        struct kc_pod_update_options o = { .update_type = KC_SYNC_POD_KILL, .running_pod = rp };
        struct kc_pod_completion *c = NULL;
        struct kc_kill_pod_options kill = { .grace_period_override_s = 5 };
        struct kc_api_pod *pod = new_pod("1", "ns", "p", false);
        struct kc_pod_update_options ko = { .update_type = KC_SYNC_POD_KILL,
                                            .pod = pod,
                                            .kill_pod_options = &kill };

        (void)state;
        update(fx, KC_SYNC_POD_CREATE, pod);
        update(fx, KC_SYNC_POD_KILL, pod);
        drain(fx);
        assert_true(kc_pod_workers_should_pod_be_finished(fx->pw, "1"));
        size_t before = n_recs_for(fx, "1");
        assert_int_equal(kc_pod_workers_update_pod(fx->pw, &o), 0);
        update(fx, KC_SYNC_POD_UPDATE, pod);
        /* kill of a terminated pod: the completion signal fires immediately */
        assert_int_equal(kc_pod_completion_new(&c), 0);
        kill.completed = c;
        assert_int_equal(kc_pod_workers_update_pod(fx->pw, &ko), 0);
        /* The pod has terminated: the kill's completion fires at once
         * (upstream returns first and its waiter times out; deviations D7). */
        assert_true(kc_pod_completion_is_done(c));
        drain(fx);
        /* Otherwise ignored entirely: no sync function ran again. */
        assert_int_equal(n_recs_for(fx, "1"), before);
        kc_pod_completion_unref(c);
        kc_pod_unref(rp);
        kc_api_pod_unref(pod);
        fixture_free(fx);
}

/* F-PW-18: a kill of a terminated (not yet finished) pod completes its signal at once. The
 * pod is pre-marked terminated (F-PW-17) and held so that it stays there. */
static void test_kill_of_terminated_pod_completes_at_once(void **state)
{
        struct fixture *fx = fixture_new();
        struct kc_api_pod *pod = done_pod();
        struct kc_pod_completion *c = NULL;
        struct kc_kill_pod_options kill = { .grace_period_override_s = -1 };
        struct kc_pod_update_options ko = { .update_type = KC_SYNC_POD_KILL,
                                            .pod = pod,
                                            .kill_pod_options = &kill };
        struct kc_pod_status *empty = NULL;

        (void)state;
        assert_int_equal(kc_pod_status_new_default("1", &empty), 0);
        assert_true(kc_pod_cache_set(fx->cache, "1", empty, NULL, T0));
        kc_pod_status_unref(empty);
        assert_int_equal(kc__pod_workers_hold(fx->pw, "1"), 0);
        update(fx, KC_SYNC_POD_CREATE, pod);
        assert_true(kc_pod_workers_is_pod_known_terminated(fx->pw, "1"));
        assert_int_equal(kc_pod_completion_new(&c), 0);
        kill.completed = c;
        assert_int_equal(kc_pod_workers_update_pod(fx->pw, &ko), 0);
        assert_true(kc_pod_completion_is_done(c));
        assert_false(snap(fx, "1").pending_has_kill); /* options dropped */
        kc__pod_workers_release(fx->pw, "1");
        drain(fx);
        assert_true(snap(fx, "1").finished);
        kc_pod_completion_unref(c);
        kc_api_pod_unref(pod);
        fixture_free(fx);
}

/* TestUpdatePodDoesNotForgetSyncPodKill (F-PW-02, F-PW-10). */
static void test_update_pod_does_not_forget_kill(void **state)
{
        struct fixture *fx = fixture_new();
        char uid[16];

        (void)state;
        for (int i = 0; i < 20; i++) {
                struct kc_api_pod *pod;

                snprintf(uid, sizeof(uid), "%d", i);
                pod = new_pod(uid, "ns", uid, false);
                update(fx, KC_SYNC_POD_CREATE, pod);
                update(fx, KC_SYNC_POD_KILL, pod);
                update(fx, KC_SYNC_POD_UPDATE, pod);
                kc_api_pod_unref(pod);
        }
        drain(fx);
        for (int i = 0; i < 20; i++) {
                struct rec r[8];
                size_t n, k = 0;

                snprintf(uid, sizeof(uid), "%d", i);
                n = recs_for(fx, uid, r, 8);
                /* (kill, terminated) or (create, kill, terminated) */
                assert_true(n == 2 || n == 3);
                if (n == 3) {
                        assert_int_equal(r[0].kind, REC_SYNC);
                        assert_int_equal(r[0].update_type, KC_SYNC_POD_CREATE);
                        k = 1;
                }
                assert_int_equal(r[k].kind, REC_TERMINATING);
                assert_int_equal(r[k].grace, 30);
                assert_string_equal(r[k].name, uid);
                assert_int_equal(r[k + 1].kind, REC_TERMINATED);
        }
        fixture_free(fx);
}

/* TestTerminalPhaseTransition (F-PW-04: SyncPod reporting terminal; F-PW-08: phase change
 * requeues with delay 0). */
static void test_terminal_phase_transition(void **state)
{
        struct fixture *fx = fixture_new();
        struct kc__pod_sync_snapshot s;

        (void)state;
        update_new(fx, KC_SYNC_POD_UPDATE, "1", "test1", "pod1", false);
        drain(fx);
        assert_int_equal(snap(fx, "1").terminated_at, 0);
        update_new(fx, KC_SYNC_POD_UPDATE, "1", "test1", "pod1", false);
        drain(fx);
        assert_int_equal(snap(fx, "1").terminated_at, 0);

        fake_lock(&fx->fake);
        snprintf(fx->fake.terminal_uid[0], 64, "1");
        fx->fake.n_queue = 0;
        fake_unlock(&fx->fake);
        update_new(fx, KC_SYNC_POD_UPDATE, "1", "test1", "pod1", false);
        drain(fx);
        s = snap(fx, "1");
        assert_true(s.terminating_at != 0);
        assert_true(s.terminated_at != 0);
        assert_true(kc_pod_workers_is_pod_termination_requested(fx->pw, "1"));
        /* sync(terminal) → 0, terminating → 0; terminated enqueues nothing */
        fake_lock(&fx->fake);
        assert_int_equal(fx->fake.n_queue, 2);
        assert_int_equal(fx->fake.queue[0].delay, 0);
        assert_int_equal(fx->fake.queue[1].delay, 0);
        fake_unlock(&fx->fake);
        fixture_free(fx);
}

/* TestKillPodNowFunc (F-PW-18): kill-and-wait returns once the pod has terminated. */
static void test_kill_pod_now(void **state)
{
        struct fixture *fx = fixture_new();
        struct kc_api_pod *pod = new_pod("test", "ns", "test", false);
        struct rec r[8];

        (void)state;
        assert_int_equal(kc_pod_workers_terminate_pod_abnormally_and_wait(fx->pw, pod, false, 0),
                         0);
        drain(fx);
        assert_int_equal(recs_for(fx, "test", r, 8), 2);
        assert_int_equal(r[0].kind, REC_TERMINATING);
        assert_int_equal(r[0].grace, 1); /* override 0 → the minimum 1 s */
        assert_int_equal(r[1].kind, REC_TERMINATED);
        kc_api_pod_unref(pod);
        fixture_free(fx);
}

struct kill_waiter {
        struct fixture *fx;
        struct kc_api_pod *pod;
        int result;
};

static void *kill_waiter_main(void *arg)
{
        struct kill_waiter *kw = arg;

        kw->result =
                kc_pod_workers_terminate_pod_abnormally_and_wait(kw->fx->pw, kw->pod, true, 20);
        return NULL;
}

/* F-PW-18: the wait gives up after max(1.5 × grace, 10 s) of the injected clock. */
static void test_kill_pod_now_times_out(void **state)
{
        struct fixture *fx = fixture_new();
        struct kill_waiter kw = { .fx = fx, .pod = new_pod("stuck", "ns", "stuck", false) };
        pthread_t t;

        (void)state;
        fake_lock(&fx->fake);
        snprintf(fx->fake.block_terminating_uid, 64, "stuck");
        fake_unlock(&fx->fake);
        assert_int_equal(pthread_create(&t, NULL, kill_waiter_main, &kw), 0);
        wait_entered(fx, 1);
        assert_true(snap(fx, "stuck").evicted);
        /* 20 s grace → 30 s timeout of the fake clock: step it until the waiter gives up */
        int64_t advanced = 0;
        while (pthread_tryjoin_np(t, NULL) == EBUSY) {
                struct timespec ms = { 0, 2 * KC_NSEC_PER_MSEC };

                kc_fake_clock_advance(fx->clock, SEC);
                advanced += SEC;
                nanosleep(&ms, NULL);
                assert_true(advanced < 600 * SEC);
        }
        assert_true(advanced >= 30 * SEC);
        assert_int_equal(kw.result, -ETIMEDOUT);
        kc_cancel_trigger_mp(fx->fake.release);
        drain(fx);
        kc_api_pod_unref(kw.pod);
        fixture_free(fx);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_new_pod_recorded_and_started),
                cmocka_unit_test(test_create_during_termination_requests_restart),
                cmocka_unit_test(test_running_pod_ignored_with_pod),
                cmocka_unit_test(test_deletion_timestamp_terminates),
                cmocka_unit_test(test_eviction_terminates),
                cmocka_unit_test(test_terminal_never_started_not_cached),
                cmocka_unit_test(test_terminal_never_started_cached),
                cmocka_unit_test(test_orphaned_running_pod_kill),
                cmocka_unit_test(test_runtime_pod_only_kill),
                cmocka_unit_test(test_finished_pod_ignores_updates),
                cmocka_unit_test(test_kill_of_terminated_pod_completes_at_once),
                cmocka_unit_test(test_update_pod_does_not_forget_kill),
                cmocka_unit_test(test_terminal_phase_transition),
                cmocka_unit_test(test_kill_pod_now),
                cmocka_unit_test(test_kill_pod_now_times_out),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
