/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Regression test for kubernetes#72482 (USER-ISSUES.md #3): "Deadlock in
 * PLEG relist() for health check and Kubelet syncLoop()". Upstream's relist
 * blocked on a full event channel; PLEG then became unhealthy; syncLoop,
 * seeing runtime errors, stopped reading the channel; nothing could ever
 * drain it. The fix (PR #72709) made the send non-blocking and counts the
 * drops in kubelet_pleg_discard_events.
 *
 * The real pieces on one fake clock: the simulated runtime (kubecontainer
 * face) with 200 pods of one sandbox and two containers each, a GenericPLEG
 * on it with the default channel capacity (KC_PLEG_CHANNEL_CAPACITY, 1000),
 * a runtimeState with the PLEG health check registered as "PLEG" (an
 * adapter over kc_generic_pleg_healthy that counts the loop's calls), and a
 * kc_sync_loop over a fake SyncHandler that knows all 200 pods and counts
 * handle_pod_syncs per UID. Relists are driven by the test, one at a time,
 * on a separate "PLEG" thread, so a relist that blocked would be detected
 * (the test aborts with a message after 10 s x multiplier) instead of
 * hanging the test.
 *
 * (a) Outage. The runtime reports "container runtime not ready" and its
 *     status poll stops refreshing the runtime-sync time, so after 30 s of
 *     fake time "container runtime is down" joins in. Meanwhile the PLEG
 *     relists once per backoff sleep with container state changes: first
 *     pods 0-99 only (200 events a relist: five relists fill the channel,
 *     the sixth drops 200 events), then all 200 pods (400 drops a relist;
 *     pods 100-199 change here for the first time, so every event they ever
 *     had since the outage began was dropped). Asserted: every relist
 *     returns; the PLEG stays healthy; kubelet_pleg_discard_events is 0
 *     until the channel is full, then grows by exactly the dropped events;
 *     the channel holds exactly 1000 events; the handler is not called at
 *     all; the loop's backoff sleeps are 100, 200, 400, 800, 1600, 3200,
 *     5000, 5000, ... ms of the fake clock (it is still asleep 1 ns before
 *     each deadline and checks again right after it); the loop logged one
 *     "Skipping pod synchronization" per sleep, the last one naming
 *     "container runtime is down".
 * (b) Recovery. The error is cleared and the runtime sync refreshed: the
 *     loop drains the 1000-event backlog (pods 0-99 only). Then one relist
 *     with no runtime change: cubelet's PodSync-on-drop deviation
 *     (docs/deviations.md D1, pleg/generic.c resync_flush) sends one PodSync
 *     for every pod that had an event dropped, so every pod, in particular
 *     pods 100-199 whose events were all lost, is synced exactly once more.
 *     Upstream would leave pods 100-199 unsynced until their periodic resync
 *     (up to a minute): without D1 this test fails. A further relist sends
 *     nothing (each pod is owed once). The pod cache shows every pod's
 *     final runtime state, which is what those syncs read.
 */
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

#include "core/chan.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/log.h"
#include "health/runtime_state.h"
#include "kc_test.h"
#include "kubelet/config/pod_update.h"
#include "kubelet/sync_loop.h"
#include "metrics/kubelet_metrics.h"
#include "metrics/registry.h"
#include "pleg/event.h"
#include "pleg/generic.h"
#include "runtime/api_pod.h"
#include "runtime/cache.h"
#include "runtime/container.h"
#include "runtime/sim.h"

#define T0 (INT64_C(1700000000) * KC_NSEC_PER_SEC)
#define MS KC_NSEC_PER_MSEC
#define SEC KC_NSEC_PER_SEC

#define N_PODS 200
#define N_CTRS 2
#define PHASE_A_PODS 100 /* pods 0-99 change first */
#define CAPACITY KC_PLEG_CHANNEL_CAPACITY
#define RELIST_TIMEOUT_MS 10000
#define WAIT_MS 5000
#define RUNTIME_NOT_READY                                                                          \
        "container runtime not ready: RuntimeReady=false reason:DaemonDown message:the runtime "   \
        "daemon is not responding"

/* The loop's sleeps while runtimeErrors() fails; the last one ends with recovery. */
static const int64_t sleeps_ms[] = { 100,  200,  400,  800,  1600, 3200,
                                     5000, 5000, 5000, 5000, 5000, 5000 };
#define N_SLEEPS KC_ELEMENTSOF(sleeps_ms)
/* The first relists change pods 0-99, the later ones every pod; one relist per sleep but the last. */
#define PHASE_A_RELISTS 6

struct env {
        struct kc_clock *clock;
        struct kc_sim *sim;
        struct kc_pod_cache *cache;
        struct kc_chan *config, *events;
        struct kc_metrics_registry *registry;
        struct kc_kubelet_metrics metrics;
        struct kc_generic_pleg *pleg;
        struct kc_runtime_state *rs;
        struct kc_sync_loop *loop;
        pthread_t loop_thread, pleg_thread;
        atomic_int loop_result;

        /* What the simulated runtime shows; main thread only. */
        enum kc_container_state state[N_PODS][N_CTRS];

        /* The fake SyncHandler (loop thread) and the health check adapter. */
        struct kc_api_pod *pods[N_PODS];
        atomic_uint syncs[N_PODS];
        atomic_uint syncs_total, died_cleanups, cleanups, ticks, other_calls;
        atomic_uint health_calls;

        /* The "PLEG" thread: relists on request. */
        pthread_mutex_t lock;
        pthread_cond_t cond;
        unsigned relists_requested, relists_done;
        int relist_result;
        bool stop;
};

static _Thread_local bool on_loop_thread;

static int pod_index(const char *uid)
{
        char *end = NULL;
        unsigned long i;

        if (!uid || strncmp(uid, "pod-", 4) != 0)
                return -1;
        i = strtoul(uid + 4, &end, 10);
        return *end || i >= N_PODS ? -1 : (int)i;
}

/* ------------------------------------------------------------------------ */
/* The fake SyncHandler (runs on the loop thread)                             */

static void h_syncs(void *ud, struct kc_api_pod *const *pods, size_t n)
{
        struct env *e = ud;

        for (size_t i = 0; i < n; i++) {
                int k = pod_index(pods[i]->uid);

                if (k < 0)
                        atomic_fetch_add(&e->other_calls, 1);
                else
                        atomic_fetch_add(&e->syncs[k], 1);
                atomic_fetch_add(&e->syncs_total, 1);
        }
}

static void h_other(void *ud, struct kc_api_pod *const *pods, size_t n)
{
        struct env *e = ud;

        (void)pods, (void)n;
        atomic_fetch_add(&e->other_calls, 1);
}

static void h_cleanups(void *ud)
{
        struct env *e = ud;

        atomic_fetch_add(&e->cleanups, 1);
}

static struct kc_api_pod *h_get_pod(void *ud, const char *uid)
{
        struct env *e = ud;
        int k = pod_index(uid);

        return k < 0 ? NULL : kc_api_pod_ref(e->pods[k]);
}

static void h_clean_up_containers(void *ud, const char *uid, const char *cid)
{
        struct env *e = ud;

        (void)uid, (void)cid;
        atomic_fetch_add(&e->died_cleanups, 1);
}

static size_t h_pods_to_sync(void *ud, struct kc_api_pod ***ret)
{
        struct env *e = ud;

        (void)ret;
        atomic_fetch_add(&e->ticks, 1);
        return 0; /* no work queue: only PLEG events sync pods here */
}

static const struct kc_sync_handler_ops handler_ops = {
        .handle_pod_additions = h_other,
        .handle_pod_updates = h_other,
        .handle_pod_removes = h_other,
        .handle_pod_reconcile = h_other,
        .handle_pod_syncs = h_syncs,
        .handle_pod_cleanups = h_cleanups,
        .get_pod_by_uid = h_get_pod,
        .clean_up_containers_in_pod = h_clean_up_containers,
        .get_pods_to_sync = h_pods_to_sync,
};

static unsigned handler_calls(struct env *e)
{
        return atomic_load(&e->syncs_total) + atomic_load(&e->died_cleanups) +
               atomic_load(&e->cleanups) + atomic_load(&e->ticks) + atomic_load(&e->other_calls);
}

/* The kubelet's "PLEG" health check; counts the calls runtimeErrors() makes on the loop thread. */
static bool pleg_check(void *ud, char **ret_err)
{
        struct env *e = ud;

        if (on_loop_thread)
                atomic_fetch_add(&e->health_calls, 1);
        return kc_generic_pleg_healthy(e->pleg, ret_err);
}

/* ------------------------------------------------------------------------ */
/* Threads                                                                    */

static void *loop_main(void *arg)
{
        struct env *e = arg;

        on_loop_thread = true;
        atomic_store(&e->loop_result, kc_sync_loop_run(e->loop));
        return NULL;
}

static void *pleg_main(void *arg)
{
        struct env *e = arg;

        pthread_mutex_lock(&e->lock);
        for (;;) {
                while (!e->stop && e->relists_done == e->relists_requested)
                        pthread_cond_wait(&e->cond, &e->lock);
                if (e->stop)
                        break;
                pthread_mutex_unlock(&e->lock);
                int r = kc_generic_pleg_relist(e->pleg);
                pthread_mutex_lock(&e->lock);
                e->relist_result = r;
                e->relists_done++;
                pthread_cond_broadcast(&e->cond);
        }
        pthread_mutex_unlock(&e->lock);
        return NULL;
}

/* One relist on the PLEG thread. A relist that does not return is the #72482 deadlock. */
static void relist(struct env *e)
{
        int64_t limit = (int64_t)(RELIST_TIMEOUT_MS * kc_test_timeout_multiplier());
        struct timespec deadline;
        unsigned target;
        bool done;
        int r;

        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += limit / 1000;
        deadline.tv_nsec += (limit % 1000) * 1000000;
        if (deadline.tv_nsec >= 1000000000) {
                deadline.tv_sec++;
                deadline.tv_nsec -= 1000000000;
        }
        pthread_mutex_lock(&e->lock);
        target = ++e->relists_requested;
        pthread_cond_broadcast(&e->cond);
        while (e->relists_done < target &&
               pthread_cond_timedwait(&e->cond, &e->lock, &deadline) != ETIMEDOUT)
                ;
        done = e->relists_done >= target;
        r = e->relist_result;
        pthread_mutex_unlock(&e->lock);
        if (!done) {
                /* The relist thread is stuck: it cannot be joined, so no cleanup. */
                fprintf(stderr,
                        "stress_deadlock_72482: relist %u did not return within %lld ms "
                        "(channel %u/%u): PLEG blocked on its event channel, the "
                        "kubernetes#72482 deadlock\n",
                        target, (long long)limit, kc_chan_len(e->events), kc_chan_cap(e->events));
                fflush(stderr);
                abort();
        }
        assert_int_equal(r, 0);
}

/* ------------------------------------------------------------------------ */
/* The simulated runtime                                                      */

static void sim_apply(struct env *e)
{
        static struct kc_sim_pod_spec specs[N_PODS];
        static struct kc_sim_container_spec ctrs[N_PODS][N_CTRS], sbs[N_PODS];
        static char ids[N_PODS][N_CTRS + 2][32];

        for (unsigned i = 0; i < N_PODS; i++) {
                snprintf(ids[i][0], sizeof(ids[i][0]), "pod-%03u", i);
                snprintf(ids[i][1], sizeof(ids[i][1]), "sb-%03u", i);
                sbs[i] = (struct kc_sim_container_spec){ .id = ids[i][1],
                                                         .name = "POD",
                                                         .state = KC_CONTAINER_STATE_RUNNING };
                for (unsigned j = 0; j < N_CTRS; j++) {
                        snprintf(ids[i][2 + j], sizeof(ids[i][2 + j]), "c-%03u-%u", i, j);
                        ctrs[i][j] = (struct kc_sim_container_spec){
                                .id = ids[i][2 + j],
                                .name = j ? "sidecar" : "app",
                                .state = e->state[i][j],
                                .exit_code = e->state[i][j] == KC_CONTAINER_STATE_EXITED ? 1 : 0,
                        };
                }
                specs[i] = (struct kc_sim_pod_spec){
                        .id = ids[i][0],
                        .name = ids[i][0],
                        .namespace = "default",
                        .containers = ctrs[i],
                        .n_containers = N_CTRS,
                        .sandboxes = &sbs[i],
                        .n_sandboxes = 1,
                };
        }
        assert_int_equal(kc_sim_set_pods(e->sim, specs, N_PODS), 0);
}

/* Every container of pods [0, n) goes running <-> exited: 2 events per pod at the next relist. */
static void flip(struct env *e, unsigned n)
{
        for (unsigned i = 0; i < n; i++)
                for (unsigned j = 0; j < N_CTRS; j++)
                        e->state[i][j] = e->state[i][j] == KC_CONTAINER_STATE_RUNNING
                                                 ? KC_CONTAINER_STATE_EXITED
                                                 : KC_CONTAINER_STATE_RUNNING;
        sim_apply(e);
}

/* ------------------------------------------------------------------------ */
/* Setup                                                                      */

static struct env *env_new(void)
{
        struct kc_generic_pleg_config pcfg;
        struct kc_sync_loop_config lcfg;
        struct env *e = calloc(1, sizeof(*e));

        assert_non_null(e);
        pthread_mutex_init(&e->lock, NULL);
        pthread_cond_init(&e->cond, NULL);
        assert_int_equal(kc_fake_clock_new(&e->clock, T0), 0);
        assert_int_equal(kc_sim_new(e->clock, &e->sim), 0);
        for (unsigned i = 0; i < N_PODS; i++) {
                char uid[16];
                struct kc_api_pod t = { .uid = uid,
                                        .name = uid,
                                        .namespace = "default",
                                        .source = "api",
                                        .creation_ts = T0,
                                        .deletion_grace_s = -1,
                                        .termination_grace_s = 30,
                                        .phase = KC_POD_PHASE_RUNNING };

                snprintf(uid, sizeof(uid), "pod-%03u", i);
                assert_int_equal(kc_api_pod_new(&t, &e->pods[i]), 0);
                for (unsigned j = 0; j < N_CTRS; j++)
                        e->state[i][j] = KC_CONTAINER_STATE_RUNNING;
        }
        sim_apply(e);
        assert_int_equal(kc_pod_cache_new(&e->cache), 0);
        assert_int_equal(kc_chan_new(&e->config, 16, kc_pod_update_free_item), 0);
        assert_int_equal(kc_chan_new(&e->events, CAPACITY, kc_pleg_event_free_item), 0);
        assert_int_equal(kc_metrics_registry_new(&e->registry), 0);
        assert_int_equal(kc_kubelet_metrics_register(e->registry, &e->metrics), 0);
        pcfg = (struct kc_generic_pleg_config){
                .runtime = kc_sim_pod_runtime(e->sim),
                .events = e->events,
                .cache = e->cache,
                .clock = e->clock,
                .metrics = &e->metrics,
                .relist_period_ns = KC_GENERIC_PLEG_RELIST_PERIOD,
                .relist_threshold_ns = KC_GENERIC_PLEG_RELIST_THRESHOLD,
        };
        assert_int_equal(kc_generic_pleg_new(&pcfg, &e->pleg), 0);
        /* maxWaitForContainerRuntime: 30 s. */
        assert_int_equal(kc_runtime_state_new(e->clock, 30 * SEC, &e->rs), 0);
        assert_int_equal(kc_runtime_state_add_health_check(e->rs, "PLEG", pleg_check, e), 0);
        kc_runtime_state_set_runtime_sync(e->rs, T0);
        lcfg = (struct kc_sync_loop_config){
                .clock = e->clock,
                .config = e->config,
                .pleg = kc_generic_pleg_watch(e->pleg),
                .runtime_state = e->rs,
                .handler = &handler_ops,
                .handler_userdata = e,
        };
        assert_int_equal(kc_sync_loop_new(&lcfg, &e->loop), 0);
        assert_int_equal(pthread_create(&e->pleg_thread, NULL, pleg_main, e), 0);
        return e;
}

static void env_free(struct env *e)
{
        kc_sync_loop_stop_mp(e->loop);
        assert_int_equal(pthread_join(e->loop_thread, NULL), 0);
        assert_int_equal(atomic_load(&e->loop_result), 0);
        pthread_mutex_lock(&e->lock);
        e->stop = true;
        pthread_cond_broadcast(&e->cond);
        pthread_mutex_unlock(&e->lock);
        assert_int_equal(pthread_join(e->pleg_thread, NULL), 0);
        kc_sync_loop_free(e->loop);
        kc_runtime_state_free(e->rs);
        kc_generic_pleg_free(e->pleg);
        kc_metrics_registry_free(e->registry);
        kc_chan_free(e->events);
        kc_chan_free(e->config);
        kc_pod_cache_free(e->cache);
        kc_sim_free(e->sim);
        kc_clock_free(e->clock);
        for (unsigned i = 0; i < N_PODS; i++)
                kc_api_pod_unref(e->pods[i]);
        pthread_cond_destroy(&e->cond);
        pthread_mutex_destroy(&e->lock);
        free(e);
}

static unsigned discards(struct env *e)
{
        return (unsigned)kc_counter_value(e->metrics.pleg_discard_events);
}

/* Counts the lines of @f containing @needle; *ret_last gets the last such line. */
static unsigned count_lines(FILE *f, const char *needle, char *ret_last, size_t size)
{
        char line[1024];
        unsigned n = 0;

        rewind(f);
        while (fgets(line, sizeof(line), f))
                if (strstr(line, needle)) {
                        n++;
                        if (ret_last)
                                snprintf(ret_last, size, "%s", line);
                }
        return n;
}

/* ------------------------------------------------------------------------ */
/* The test                                                                   */

static void test_pleg_never_blocks_and_no_pod_is_lost(void **state)
{
        unsigned expect_discards = 0, expect_len = 0, base_calls, h0, synced_before[N_PODS];
        char last_skip[1024] = "", *err = NULL;
        struct env *e = env_new();
        FILE *log;
        size_t i;

        (void)state;
        /* The first relist sees 200 new pods: one ContainerStarted per sandbox
         * and container (600 events). It runs before the loop starts, as the
         * kubelet starts PLEG before syncLoop (PLEG must have relisted once
         * for its health check to pass). */
        relist(e);
        assert_int_equal(kc_chan_len(e->events), 3 * N_PODS);
        assert_int_equal(pthread_create(&e->loop_thread, NULL, loop_main, e), 0);
        assert_true(KC_TEST_WAIT_UNTIL(atomic_load(&e->syncs_total) == 3 * N_PODS, WAIT_MS));
        /* One runtimeErrors() per served event, plus the one before the iteration now waiting. */
        assert_true(KC_TEST_WAIT_UNTIL(atomic_load(&e->health_calls) == 3 * N_PODS + 1, WAIT_MS));
        assert_int_equal(kc_chan_len(e->events), 0);
        for (i = 0; i < N_PODS; i++)
                assert_int_equal(atomic_load(&e->syncs[i]), 3);
        assert_int_equal(discards(e), 0);

        /* (a) The outage. The runtime status poll reports the runtime not ready
         * and stops refreshing the sync time (updateRuntimeUp returns early). */
        log = tmpfile();
        assert_non_null(log);
        kc_log_set_output(log);
        assert_int_equal(kc_runtime_state_set_runtime_state(e->rs, RUNTIME_NOT_READY), 0);
        /* The loop is waiting in its iteration; the 1 s sync tick ends that
         * iteration, then runtimeErrors() fails and the backoff begins. */
        assert_int_equal(kc_fake_clock_advance(e->clock, 1 * SEC), 0);
        kc_runtime_state_set_runtime_sync(e->rs, T0 + 1 * SEC); /* the last successful poll */
        h0 = 3 * N_PODS + 2;
        base_calls = 0;
        for (i = 0; i < N_SLEEPS; i++) {
                unsigned h = h0 + (unsigned)i;

                /* The loop checked runtimeErrors() once more and went to sleep. */
                if (!KC_TEST_WAIT_UNTIL(atomic_load(&e->health_calls) == h &&
                                                kc_fake_clock_sleepers(e->clock) == 1,
                                        WAIT_MS))
                        fail_msg("backoff step %zu: runtimeErrors() calls %u (want %u), "
                                 "sleepers %zu",
                                 i, atomic_load(&e->health_calls), h,
                                 kc_fake_clock_sleepers(e->clock));
                if (i == 0)
                        base_calls = handler_calls(e); /* includes the 1 s tick */
                if (i + 1 < N_SLEEPS) {
                        /* The PLEG keeps relisting with changes; nothing blocks. */
                        flip(e, i < PHASE_A_RELISTS ? PHASE_A_PODS : N_PODS);
                        relist(e);
                        if (i < PHASE_A_RELISTS)
                                expect_len += 2 * PHASE_A_PODS;
                        else
                                expect_len += 2 * N_PODS;
                        if (expect_len > CAPACITY) {
                                expect_discards += expect_len - CAPACITY;
                                expect_len = CAPACITY;
                        }
                        assert_int_equal(kc_chan_len(e->events), expect_len);
                        assert_int_equal(discards(e), expect_discards);
                        /* The PLEG stays healthy: it never waits for the loop. */
                        assert_true(kc_generic_pleg_healthy(e->pleg, NULL));
                } else {
                        /* More than 30 s after the last poll: the runtime also counts as down. */
                        assert_int_equal(kc_runtime_state_runtime_errors(e->rs, &err), 0);
                        assert_non_null(err);
                        assert_string_equal(err,
                                            "[container runtime is down, " RUNTIME_NOT_READY "]");
                        err = (free(err), NULL);
                        /* (b) Recovery, during the last sleep. */
                        assert_int_equal(kc_runtime_state_set_runtime_state(e->rs, NULL), 0);
                        kc_runtime_state_set_runtime_sync(e->rs, kc_clock_now(e->clock));
                }
                /* The loop consumed nothing. */
                assert_int_equal(handler_calls(e), base_calls);
                /* It sleeps exactly sleeps_ms[i] of the fake clock. */
                assert_int_equal(kc_fake_clock_advance(e->clock, sleeps_ms[i] * MS - 1), 0);
                kc_test_sleep_ms(10);
                assert_int_equal(atomic_load(&e->health_calls), h);
                assert_int_equal(kc_fake_clock_sleepers(e->clock), 1);
                assert_int_equal(kc_fake_clock_advance(e->clock, 1), 0);
        }
        assert_int_equal(expect_len, CAPACITY);
        /* 200 drops at the sixth phase-A relist, then 400 per relist. */
        assert_int_equal(expect_discards,
                         2 * PHASE_A_PODS + (N_SLEEPS - 1 - PHASE_A_RELISTS) * 2 * N_PODS);
        assert_true(expect_discards > 0);

        /* The loop drains the backlog: events of pods 0-99 only. */
        if (!KC_TEST_WAIT_UNTIL(atomic_load(&e->syncs_total) == 3 * N_PODS + CAPACITY &&
                                        kc_chan_len(e->events) == 0,
                                WAIT_MS))
                fail_msg("backlog not drained: %u syncs, channel %u", atomic_load(&e->syncs_total),
                         kc_chan_len(e->events));
        kc_log_set_output(NULL);
        /* Of the phase-A events that fit, every other relist's were ContainerDied. */
        assert_int_equal(atomic_load(&e->died_cleanups), 3 * 2 * PHASE_A_PODS);
        for (i = 0; i < N_PODS; i++) {
                synced_before[i] = atomic_load(&e->syncs[i]);
                /* 5 relists x 2 containers for pods 0-99; nothing for pods
                 * 100-199, whose every event was dropped: upstream stops here. */
                assert_int_equal(synced_before[i], 3 + (i < PHASE_A_PODS ? 10 : 0));
        }

        /* One relist with no runtime change: no new event, but D1 owes a PodSync
         * to every pod that had an event dropped, i.e. all of them. */
        relist(e);
        if (!KC_TEST_WAIT_UNTIL(atomic_load(&e->syncs_total) == 3 * N_PODS + CAPACITY + N_PODS &&
                                        kc_chan_len(e->events) == 0,
                                WAIT_MS))
                fail_msg("after recovery %u of %u pods with dropped events were resynced "
                         "(docs/deviations.md D1)",
                         atomic_load(&e->syncs_total) - 3 * N_PODS - CAPACITY, N_PODS);
        for (i = 0; i < N_PODS; i++)
                if (atomic_load(&e->syncs[i]) != synced_before[i] + 1)
                        fail_msg("pod-%03zu: %u syncs after recovery, want exactly 1", i,
                                 atomic_load(&e->syncs[i]) - synced_before[i]);
        assert_int_equal(discards(e), expect_discards);

        /* Each pod was owed one PodSync: the next relist sends nothing. */
        relist(e);
        kc_test_sleep_ms(20);
        assert_int_equal(kc_chan_len(e->events), 0);
        assert_int_equal(atomic_load(&e->syncs_total), 3 * N_PODS + CAPACITY + N_PODS);
        assert_int_equal(atomic_load(&e->other_calls), 0);

        /* The syncs read the cache, which PLEG refreshed although it dropped the events. */
        for (i = 0; i < N_PODS; i++) {
                struct kc_pod_status *st = NULL;
                char uid[16], *cerr = NULL;

                snprintf(uid, sizeof(uid), "pod-%03zu", i);
                assert_int_equal(kc_pod_cache_get(e->cache, uid, &st, &cerr), 1);
                assert_null(cerr);
                assert_non_null(st);
                assert_int_equal(st->n_containers, N_CTRS);
                for (size_t c = 0; c < st->n_containers; c++) {
                        unsigned j = strcmp(st->containers[c].name, "app") == 0 ? 0 : 1;

                        assert_int_equal(st->containers[c].state, e->state[i][j]);
                }
                kc_pod_status_unref(st);
        }

        /* What the loop and the PLEG logged during the outage. */
        fflush(log);
        assert_int_equal(count_lines(log, "Event channel is full", NULL, 0), expect_discards);
        assert_int_equal(
                count_lines(log, "Skipping pod synchronization", last_skip, sizeof(last_skip)),
                N_SLEEPS);
        assert_non_null(strstr(last_skip, "container runtime is down"));
        fclose(log);

        print_message("%u relists, %u events discarded, %u syncs, backoff %zu sleeps\n",
                      e->relists_done, expect_discards, atomic_load(&e->syncs_total), N_SLEEPS);
        env_free(e);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pleg_never_blocks_and_no_pod_is_lost),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
