/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The prober manager and its workers (prober_manager.go, worker.go; issue
 * 15, F-LOOP-09) on a fake clock, with a fake probe runner (the manager's
 * kc_probe_runner_ops seam) and a fake status source: initialDelaySeconds,
 * periods, the first probe's jitter, the thresholds, the hold after a
 * liveness/startup failure until a new container, startup gating, the
 * readiness default and the manual trigger, the workers' exits (terminal
 * pod, non-restartable container, deletion), AddPod/RemovePod/CleanupPods,
 * and the prober_* metrics.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/chan.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/jitter.h"
#include "core/lock.h"
#include "kc_test.h"
#include "kubelet/prober/prober_manager.h"
#include "metrics/registry.h"
#include "runtime/api_pod.h"

#define T0 (INT64_C(1795255200) * KC_NSEC_PER_SEC)
#define SEC KC_NSEC_PER_SEC

/* ------------------------------------------------------------------------ */
/* Fakes                                                                      */

static struct fake {
        pthread_mutex_t lock;
        /* the status source */
        bool has_status;
        struct kc_probe_target target; /* container_id and pod_ip borrowed from static strings */
        /* the runner */
        enum kc_probe_result result[_KC_PROBE_TYPE_MAX];
        int calls[_KC_PROBE_TYPE_MAX];
        int gets; /* status reads: one per doProbe */
        char last_id[64];
} fake = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int fake_probe(void *self, enum kc_probe_type t, const struct kc_api_pod *pod,
                      const char *pod_ip, const struct kc_api_container *c,
                      const char *container_id, enum kc_probe_result *ret, char **ret_output)
{
        (void)self, (void)pod, (void)pod_ip, (void)c;
        KC_LOCK_GUARD(&fake.lock);
        fake.calls[t]++;
        snprintf(fake.last_id, sizeof(fake.last_id), "%s", container_id);
        *ret = fake.result[t];
        *ret_output = strdup("output");
        return 0;
}

static const struct kc_probe_runner_ops fake_runner = { .probe = fake_probe };

static int fake_get(void *self, const char *uid, const char *name, struct kc_probe_target *ret)
{
        (void)self, (void)uid, (void)name;
        KC_LOCK_GUARD(&fake.lock);
        fake.gets++;
        if (!fake.has_status)
                return -ENOENT;
        *ret = fake.target;
        ret->container_id = fake.target.container_id ? strdup(fake.target.container_id) : NULL;
        ret->pod_ip = fake.target.pod_ip ? strdup(fake.target.pod_ip) : NULL;
        return 0;
}

static const struct kc_probe_status_ops fake_status = { .get = fake_get };

static int calls(enum kc_probe_type t)
{
        KC_LOCK_GUARD(&fake.lock);
        return fake.calls[t];
}

static int gets(void)
{
        KC_LOCK_GUARD(&fake.lock);
        return fake.gets;
}

/* A running container c1 (started_at T0) of a running pod. */
static void fake_reset(void)
{
        KC_LOCK_GUARD(&fake.lock);
        fake.has_status = true;
        fake.target = (struct kc_probe_target){ .container_id = (char *)"c1",
                                                .running = true,
                                                .started_at_ns = T0,
                                                .started = true,
                                                .pod_ip = (char *)"10.0.0.2" };
        for (int t = 0; t < _KC_PROBE_TYPE_MAX; t++) {
                fake.result[t] = KC_PROBE_SUCCESS;
                fake.calls[t] = 0;
        }
        fake.gets = 0;
}

#define FAKE_SET(field, value)                                                                     \
        do {                                                                                       \
                KC_LOCK_GUARD(&fake.lock);                                                         \
                fake.field = (value);                                                              \
        } while (0)

/* ------------------------------------------------------------------------ */
/* The fixture: a manager on a fake clock, one pod                            */

struct fx {
        struct kc_clock *clock;
        struct kc_chan *updates;
        struct kc_metrics_registry *registry;
        struct kc_prober_manager *m;
        struct kc_api_container ctr;
        struct kc_api_container init[2];
        struct kc_api_pod *pod;
};

/* Probes live in a ring of slots (kc_api_container points at them): a test keeps its last few. */
static struct kc_api_probe probe_slots[32];
static unsigned probe_next;
/* A probe of the ring, changed in place. */
#define MUT(pr) ((struct kc_api_probe *)(pr))

static struct kc_api_probe *probe(int32_t delay, int32_t period, int32_t success, int32_t failure)
{
        struct kc_api_probe *pr = &probe_slots[probe_next++ % KC_ELEMENTSOF(probe_slots)];

        *pr = (struct kc_api_probe){ .present = true,
                                     .handler = { .kind = KC_HANDLER_TCP_SOCKET },
                                     .initial_delay_seconds = delay,
                                     .timeout_seconds = 1,
                                     .period_seconds = period,
                                     .success_threshold = success,
                                     .failure_threshold = failure };
        return pr;
}

static struct kc_api_pod *mkpod(struct fx *f, const char *uid, enum kc_restart_policy policy,
                                int64_t deletion_ts)
{
        struct kc_api_pod t = { .uid = uid,
                                .name = "web",
                                .namespace = "default",
                                .deletion_grace_s = -1,
                                .termination_grace_s = 30,
                                .deletion_ts = deletion_ts,
                                .restart_policy = policy,
                                .containers = &f->ctr,
                                .n_containers = 1,
                                .init_containers = f->init,
                                .n_init_containers = 2 };
        struct kc_api_pod *p = NULL;

        assert_int_equal(kc_api_pod_new(&t, &p), 0);
        return p;
}

/* A manager whose start lies a minute back (no first-probe jitter) unless @young. */
static void fx_init(struct fx *f, bool young)
{
        struct kc_prober_manager_config cfg = { 0 };

        *f = (struct fx){ .ctr = { .name = "app", .image = "busybox" } };
        fake_reset();
        assert_int_equal(kc_fake_clock_new(&f->clock, T0), 0);
        assert_int_equal(kc_chan_new(&f->updates, 256, kc_probe_update_free), 0);
        assert_int_equal(kc_metrics_registry_new(&f->registry), 0);
        cfg = (struct kc_prober_manager_config){ .clock = f->clock,
                                                 .runner = &fake_runner,
                                                 .status = &fake_status,
                                                 .updates = f->updates,
                                                 .metrics = f->registry };
        assert_int_equal(kc_prober_manager_new(&cfg, &f->m), 0);
        if (!young)
                assert_int_equal(kc_fake_clock_advance(f->clock, 60 * SEC), 0);
        fake.target.started_at_ns = kc_clock_now(f->clock);
        f->init[0] = (struct kc_api_container){ .name = "setup", .image = "busybox" };
        f->init[1] = (struct kc_api_container){ .name = "sidecar",
                                                .image = "busybox",
                                                .restart_policy_always = true };
}

static void fx_done(struct fx *f)
{
        f->m = kc_prober_manager_free(f->m);
        kc_api_pod_unref(f->pod);
        kc_metrics_registry_free(f->registry);
        kc_chan_free(f->updates);
        kc_clock_free(f->clock);
}

static int64_t deadline_ms(void)
{
        return kc_test_mono_ms() + (int64_t)(10000 * kc_test_timeout_multiplier());
}

/*
 * Waits until every worker waits for its next tick: nothing queued or
 * running, and the scheduler (the clock's only sleeper) asleep. @n (the
 * workers expected alive) is checked too.
 */
static void settle(struct fx *f, size_t n)
{
        int64_t end = deadline_ms();

        while (!kc_prober_manager_quiescent(f->m) || kc_fake_clock_sleepers(f->clock) != 1) {
                assert_true(kc_test_mono_ms() < end);
                kc_test_sleep_ms(1);
        }
        assert_int_equal(kc_prober_manager_n_workers(f->m), n);
}

static void wait_workers(struct fx *f, size_t n)
{
        int64_t end = deadline_ms();

        while (kc_prober_manager_n_workers(f->m) != n) {
                assert_true(kc_test_mono_ms() < end);
                kc_test_sleep_ms(1);
        }
}

/* Advances the clock by @s seconds and waits for the @n workers to sleep again. */
static void tick(struct fx *f, int s, size_t n)
{
        assert_int_equal(kc_fake_clock_advance(f->clock, s * SEC), 0);
        settle(f, n);
}

/*
 * UpdatePodStatus' view of app container c1 (running); it may trigger a
 * readiness worker: then wait for that worker's doProbe and sleep.
 */
static void state_of(struct fx *f, size_t n, bool running, bool *started, bool *ready)
{
        int before = gets();
        int64_t end = deadline_ms();

        kc_prober_manager_container_state(f->m, "uid1", "app", "c1", running, started, ready);
        if (!kc_api_probe_or_none(f->ctr.readiness_probe)->present || !*started || *ready)
                return;
        while (gets() == before) {
                assert_true(kc_test_mono_ms() < end);
                kc_test_sleep_ms(1);
        }
        kc_test_sleep_ms(5);
        settle(f, n);
}

static void add(struct fx *f, size_t n_workers)
{
        if (!f->pod)
                f->pod = mkpod(f, "uid1", KC_RESTART_POLICY_ALWAYS, 0);
        kc_prober_manager_add_pod(f->m, f->pod);
        assert_int_equal(kc_prober_manager_n_workers(f->m), n_workers);
        settle(f, n_workers);
}

static bool cached(struct fx *f, enum kc_probe_type t, const char *id, enum kc_probe_result *r)
{
        return kc_results_manager_get(kc_prober_manager_results(f->m, t), id, r);
}

/* The next update of the channel (NULL when none). */
static struct kc_probe_update *next_update(struct fx *f)
{
        void *item = NULL;

        return kc_chan_pop_sc(f->updates, &item, 0) == 0 ? item : NULL;
}

static void expect_update(struct fx *f, enum kc_probe_type t, const char *id,
                          enum kc_probe_result r)
{
        struct kc_probe_update *u = next_update(f);

        assert_non_null(u);
        assert_int_equal(u->type, t);
        assert_string_equal(u->container_id, id);
        assert_string_equal(u->pod_uid, "uid1");
        assert_int_equal(u->result, r);
        kc_probe_update_free(u);
}

/* ------------------------------------------------------------------------ */
/* Tests                                                                      */

/* Readiness: Failure until the first successful probe, then Success; both reach the channel. */
static void test_readiness_default_then_success(void **state)
{
        struct fx f;
        bool started = false, ready = true;
        enum kc_probe_result r;

        (void)state;
        fx_init(&f, false);
        f.ctr.readiness_probe = probe(0, 10, 1, 3);
        FAKE_SET(has_status, false);
        add(&f, 1);
        /* No status yet: nothing probed, nothing cached, the container not ready. */
        assert_int_equal(calls(KC_PROBE_READINESS), 0);
        state_of(&f, 1, true, &started, &ready);
        assert_true(started);
        assert_false(ready);

        FAKE_SET(has_status, true);
        tick(&f, 10, 1);
        assert_int_equal(calls(KC_PROBE_READINESS), 1);
        expect_update(&f, KC_PROBE_READINESS, "c1", KC_PROBE_FAILURE); /* the initial value */
        expect_update(&f, KC_PROBE_READINESS, "c1", KC_PROBE_SUCCESS);
        assert_null(next_update(&f));
        assert_true(cached(&f, KC_PROBE_READINESS, "c1", &r));
        assert_int_equal(r, KC_PROBE_SUCCESS);
        kc_prober_manager_container_state(f.m, "uid1", "app", "c1", true, &started, &ready);
        assert_true(ready);
        /* Not running: neither started nor ready. */
        kc_prober_manager_container_state(f.m, "uid1", "app", "c1", false, &started, &ready);
        assert_false(started);
        assert_false(ready);
        /* One probe per period; the same result sends nothing. */
        tick(&f, 10, 1);
        tick(&f, 10, 1);
        assert_int_equal(calls(KC_PROBE_READINESS), 3);
        assert_null(next_update(&f));
        fx_done(&f);
}

/* No probe during initialDelaySeconds (whole seconds since state.running.startedAt). */
static void test_initial_delay(void **state)
{
        struct fx f;

        (void)state;
        fx_init(&f, false);
        f.ctr.liveness_probe = probe(15, 10, 1, 3);
        add(&f, 1);
        assert_int_equal(calls(KC_PROBE_LIVENESS), 0);
        tick(&f, 10, 1); /* 10 s < 15 s */
        assert_int_equal(calls(KC_PROBE_LIVENESS), 0);
        tick(&f, 10, 1); /* 20 s */
        assert_int_equal(calls(KC_PROBE_LIVENESS), 1);
        fx_done(&f);
}

/*
 * Liveness: Failure only after failureThreshold failures in a row; then on
 * hold (no probes) until a new container ID, which starts from Success.
 */
static void test_failure_threshold_and_hold(void **state)
{
        struct fx f;
        enum kc_probe_result r;

        (void)state;
        fx_init(&f, false);
        f.ctr.liveness_probe = probe(0, 10, 1, 3);
        FAKE_SET(result[KC_PROBE_LIVENESS], KC_PROBE_FAILURE);
        add(&f, 1);
        expect_update(&f, KC_PROBE_LIVENESS, "c1", KC_PROBE_SUCCESS); /* the initial value */
        tick(&f, 10, 1);
        assert_int_equal(calls(KC_PROBE_LIVENESS), 2);
        assert_true(cached(&f, KC_PROBE_LIVENESS, "c1", &r));
        assert_int_equal(r, KC_PROBE_SUCCESS); /* 2 < 3 */
        assert_null(next_update(&f));
        tick(&f, 10, 1);
        assert_int_equal(calls(KC_PROBE_LIVENESS), 3);
        expect_update(&f, KC_PROBE_LIVENESS, "c1", KC_PROBE_FAILURE);
        /* On hold: the same container is not probed again. */
        tick(&f, 10, 1);
        tick(&f, 10, 1);
        assert_int_equal(calls(KC_PROBE_LIVENESS), 3);

        /* The restarted container: the old result goes, probing resumes from Success. */
        FAKE_SET(target.container_id, (char *)"c2");
        FAKE_SET(result[KC_PROBE_LIVENESS], KC_PROBE_SUCCESS);
        tick(&f, 10, 1);
        assert_int_equal(calls(KC_PROBE_LIVENESS), 4);
        assert_false(cached(&f, KC_PROBE_LIVENESS, "c1", &r));
        assert_true(cached(&f, KC_PROBE_LIVENESS, "c2", &r));
        assert_int_equal(r, KC_PROBE_SUCCESS);
        expect_update(&f, KC_PROBE_LIVENESS, "c2", KC_PROBE_SUCCESS);
        {
                KC_LOCK_GUARD(&fake.lock);
                assert_string_equal(fake.last_id, "c2");
        }
        fx_done(&f);
}

/* successThreshold: Success only after that many successes in a row; a Warning counts as one. */
static void test_success_threshold(void **state)
{
        struct fx f;
        enum kc_probe_result r;

        (void)state;
        fx_init(&f, false);
        f.ctr.readiness_probe = probe(0, 10, 2, 3);
        FAKE_SET(result[KC_PROBE_READINESS], KC_PROBE_WARNING);
        add(&f, 1);
        assert_true(cached(&f, KC_PROBE_READINESS, "c1", &r));
        assert_int_equal(r, KC_PROBE_FAILURE);
        tick(&f, 10, 1);
        assert_true(cached(&f, KC_PROBE_READINESS, "c1", &r));
        assert_int_equal(r, KC_PROBE_SUCCESS);
        /* A prober error (Unknown) is thrown away: the result and the run stay. */
        FAKE_SET(result[KC_PROBE_READINESS], KC_PROBE_UNKNOWN);
        tick(&f, 10, 1);
        assert_true(cached(&f, KC_PROBE_READINESS, "c1", &r));
        assert_int_equal(r, KC_PROBE_SUCCESS);
        fx_done(&f);
}

/* Startup gates the others; once started the startup worker stops probing. */
static void test_startup_gating(void **state)
{
        struct fx f;
        bool started = true, ready = true;
        enum kc_probe_result r;

        (void)state;
        fx_init(&f, false);
        f.ctr.startup_probe = probe(0, 10, 1, 3);
        f.ctr.readiness_probe = probe(0, 10, 1, 3);
        f.ctr.liveness_probe = probe(0, 10, 1, 3);
        FAKE_SET(target.started, false);
        FAKE_SET(result[KC_PROBE_STARTUP], KC_PROBE_FAILURE);
        add(&f, 3);
        tick(&f, 10, 3);
        assert_int_equal(calls(KC_PROBE_STARTUP), 2);
        assert_int_equal(calls(KC_PROBE_READINESS), 0);
        assert_int_equal(calls(KC_PROBE_LIVENESS), 0);
        assert_true(cached(&f, KC_PROBE_STARTUP, "c1", &r));
        assert_int_equal(r, KC_PROBE_UNKNOWN); /* the initial value, 2 failures < 3 */
        kc_prober_manager_container_state(f.m, "uid1", "app", "c1", true, &started, &ready);
        assert_false(started);
        assert_false(ready);

        FAKE_SET(result[KC_PROBE_STARTUP], KC_PROBE_SUCCESS);
        tick(&f, 10, 3);
        assert_true(cached(&f, KC_PROBE_STARTUP, "c1", &r));
        assert_int_equal(r, KC_PROBE_SUCCESS);
        state_of(&f, 3, true, &started, &ready);
        assert_true(started);
        assert_false(ready); /* readiness has not run yet: its default */
        /* The status now says started: startup stops, the others run. */
        FAKE_SET(target.started, true);
        tick(&f, 10, 3);
        assert_int_equal(calls(KC_PROBE_STARTUP), 3);
        assert_true(calls(KC_PROBE_READINESS) >= 1);
        assert_int_equal(calls(KC_PROBE_LIVENESS), 1);
        kc_prober_manager_container_state(f.m, "uid1", "app", "c1", true, &started, &ready);
        assert_true(ready);
        fx_done(&f);
}

/* A startup failure at the threshold holds the worker like a liveness one. */
static void test_startup_failure_holds(void **state)
{
        struct fx f;
        enum kc_probe_result r;

        (void)state;
        fx_init(&f, false);
        f.ctr.startup_probe = probe(0, 10, 1, 1);
        FAKE_SET(target.started, false);
        FAKE_SET(result[KC_PROBE_STARTUP], KC_PROBE_FAILURE);
        add(&f, 1);
        assert_true(cached(&f, KC_PROBE_STARTUP, "c1", &r));
        assert_int_equal(r, KC_PROBE_FAILURE);
        tick(&f, 10, 1);
        assert_int_equal(calls(KC_PROBE_STARTUP), 1);
        fx_done(&f);
}

/* The manual trigger: UpdatePodStatus asks an unready container's readiness worker to probe now. */
static void test_manual_trigger(void **state)
{
        struct fx f;
        bool started, ready;
        int64_t end;

        (void)state;
        fx_init(&f, false);
        f.ctr.readiness_probe = probe(0, 10, 1, 3);
        FAKE_SET(result[KC_PROBE_READINESS], KC_PROBE_FAILURE);
        add(&f, 1);
        assert_int_equal(calls(KC_PROBE_READINESS), 1);
        tick(&f, 4, 1);
        kc_prober_manager_container_state(f.m, "uid1", "app", "c1", true, &started, &ready);
        assert_false(ready);
        end = deadline_ms();
        while (calls(KC_PROBE_READINESS) < 2) { /* no clock advance */
                assert_true(kc_test_mono_ms() < end);
                kc_test_sleep_ms(1);
        }
        settle(&f, 1);
        /* The ticker kept its phase: the next probe is still due at +10 s, not 10 s after the trigger. */
        tick(&f, 5, 1);
        assert_int_equal(calls(KC_PROBE_READINESS), 2);
        tick(&f, 1, 1);
        assert_int_equal(calls(KC_PROBE_READINESS), 3);
        fx_done(&f);
}

/* A kubelet that just started spreads the first probes over a period; an older one does not. */
static void test_first_probe_jitter(void **state)
{
        struct fx f;
        int s;

        (void)state;
        kc_jitter_seed(42);
        fx_init(&f, true);
        f.ctr.liveness_probe = probe(0, 10, 1, 3);
        f.pod = mkpod(&f, "uid1", KC_RESTART_POLICY_ALWAYS, 0);
        kc_prober_manager_add_pod(f.m, f.pod);
        settle(&f, 1);
        assert_int_equal(calls(KC_PROBE_LIVENESS), 0);
        for (s = 1; s <= 10 && calls(KC_PROBE_LIVENESS) == 0; s++)
                tick(&f, 1, 1);
        assert_int_equal(calls(KC_PROBE_LIVENESS), 1);
        assert_true(s <= 11);
        fx_done(&f);
}

/* Workers exit: a terminal pod; a terminated container that will not restart. */
static void test_worker_exits(void **state)
{
        struct fx f;
        enum kc_probe_result r;

        (void)state;
        fx_init(&f, false);
        f.ctr.readiness_probe = probe(0, 10, 1, 3);
        f.pod = mkpod(&f, "uid1", KC_RESTART_POLICY_NEVER, 0);
        add(&f, 1);
        /* Not running, will restart (exited, not yet terminated state): Failure, keeps going. */
        FAKE_SET(target.running, false);
        tick(&f, 10, 1);
        assert_true(cached(&f, KC_PROBE_READINESS, "c1", &r));
        assert_int_equal(r, KC_PROBE_FAILURE);
        /* Terminated under restartPolicy Never: the worker exits and drops its result. */
        FAKE_SET(target.terminated, true);
        assert_int_equal(kc_fake_clock_advance(f.clock, 10 * SEC), 0);
        wait_workers(&f, 0);
        assert_false(cached(&f, KC_PROBE_READINESS, "c1", &r));
        fx_done(&f);

        fx_init(&f, false);
        f.ctr.readiness_probe = probe(0, 10, 1, 3);
        FAKE_SET(target.pod_terminal, true);
        kc_prober_manager_add_pod(f.m, f.pod = mkpod(&f, "uid1", KC_RESTART_POLICY_ALWAYS, 0));
        wait_workers(&f, 0);
        assert_int_equal(calls(KC_PROBE_READINESS), 0);
        fx_done(&f);
}

/* A pod being deleted: liveness and startup set Success (a quiet shutdown) and exit. */
static void test_deletion_quiet_shutdown(void **state)
{
        struct fx f;
        int64_t end;

        (void)state;
        fx_init(&f, false);
        f.ctr.liveness_probe = probe(0, 10, 1, 3);
        f.ctr.readiness_probe = probe(0, 10, 1, 3);
        f.pod = mkpod(&f, "uid1", KC_RESTART_POLICY_ALWAYS, T0);
        kc_prober_manager_add_pod(f.m, f.pod);
        wait_workers(&f, 1); /* readiness keeps probing */
        settle(&f, 1);
        assert_int_equal(calls(KC_PROBE_LIVENESS), 0);
        assert_int_equal(calls(KC_PROBE_READINESS), 1);
        /* liveness: the initial Success, then the quiet Success (no change, one update) */
        end = deadline_ms();
        while (kc_chan_len(f.updates) < 3) {
                assert_true(kc_test_mono_ms() < end);
                kc_test_sleep_ms(1);
        }
        fx_done(&f);
}

/* AddPod is idempotent and covers sidecars (not plain init containers); RemovePod, CleanupPods. */
static void test_add_remove_cleanup(void **state)
{
        struct fx f;
        struct kc_api_pod *other;
        const char *desired[] = { "uid2" };

        (void)state;
        fx_init(&f, false);
        f.ctr.liveness_probe = probe(0, 10, 1, 3);
        f.init[0].readiness_probe = probe(0, 10, 1, 3); /* plain init container: ignored */
        f.init[1].readiness_probe = probe(0, 10, 1, 3); /* sidecar: probed */
        add(&f, 2);
        kc_prober_manager_add_pod(f.m, f.pod);
        assert_int_equal(kc_prober_manager_n_workers(f.m), 2);

        other = mkpod(&f, "uid2", KC_RESTART_POLICY_ALWAYS, 0);
        kc_prober_manager_add_pod(f.m, other);
        assert_int_equal(kc_prober_manager_n_workers(f.m), 4);
        settle(&f, 4);
        kc_prober_manager_stop_liveness_and_startup(f.m, f.pod);
        wait_workers(&f, 3);
        kc_prober_manager_cleanup_pods(f.m, desired, 1);
        wait_workers(&f, 2);
        kc_prober_manager_remove_pod(f.m, other);
        wait_workers(&f, 0);
        kc_api_pod_unref(other);
        fx_done(&f);
}

/* prober_probe_total and prober_probe_duration_seconds, labelled as upstream, gone with the worker. */
static void test_metrics(void **state)
{
        struct fx f;
        _cleanup_free_ char *text = NULL, *after = NULL;

        (void)state;
        fx_init(&f, false);
        f.ctr.liveness_probe = probe(0, 10, 1, 3);
        f.ctr.readiness_probe = probe(0, 10, 1, 3);
        FAKE_SET(result[KC_PROBE_READINESS], KC_PROBE_FAILURE);
        add(&f, 2);
        tick(&f, 10, 2);
        assert_int_equal(kc_metrics_render(f.registry, &text), 0);
        assert_non_null(strstr(text, "# TYPE prober_probe_total counter\n"));
        assert_non_null(strstr(text, "prober_probe_total{container=\"app\",namespace=\"default\","
                                     "pod=\"web\",pod_uid=\"uid1\",probe_type=\"Liveness\","
                                     "result=\"successful\"} 2\n"));
        assert_non_null(strstr(text, "prober_probe_total{container=\"app\",namespace=\"default\","
                                     "pod=\"web\",pod_uid=\"uid1\",probe_type=\"Readiness\","
                                     "result=\"failed\"} 2\n"));
        assert_non_null(strstr(text, "# TYPE prober_probe_duration_seconds histogram\n"));
        assert_non_null(strstr(text, "prober_probe_duration_seconds_count{container=\"app\","
                                     "namespace=\"default\",pod=\"web\",probe_type=\"Liveness\"} "
                                     "2\n"));
        /* Failed probes are not timed (upstream). */
        assert_null(strstr(text, "prober_probe_duration_seconds_count{container=\"app\","
                                 "namespace=\"default\",pod=\"web\",probe_type=\"Readiness\"}"));
        kc_prober_manager_remove_pod(f.m, f.pod);
        wait_workers(&f, 0);
        assert_int_equal(kc_metrics_render(f.registry, &after), 0);
        assert_null(strstr(after, "uid1"));
        fx_done(&f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_readiness_default_then_success),
                cmocka_unit_test(test_initial_delay),
                cmocka_unit_test(test_failure_threshold_and_hold),
                cmocka_unit_test(test_success_threshold),
                cmocka_unit_test(test_startup_gating),
                cmocka_unit_test(test_startup_failure_holds),
                cmocka_unit_test(test_manual_trigger),
                cmocka_unit_test(test_first_probe_jitter),
                cmocka_unit_test(test_worker_exits),
                cmocka_unit_test(test_deletion_quiet_shutdown),
                cmocka_unit_test(test_add_remove_cleanup),
                cmocka_unit_test(test_metrics),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
