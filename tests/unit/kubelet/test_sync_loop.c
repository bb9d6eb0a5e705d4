/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncLoop (UPSTREAM.md §6) with a fake SyncHandler on a fake clock:
 * F-LOOP-01 (runtime-error backoff), F-LOOP-02 (health check), F-LOOP-03
 * (one multiplexed wait, fairness), F-LOOP-04 (config ops), F-LOOP-05 and
 * F-LOOP-10 (housekeeping gated on sources), F-LOOP-06 and F-LOOP-07 (PLEG
 * events), F-LOOP-08 (sync tick), F-LOOP-09 (probe results).
 */
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/chan.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "health/runtime_state.h"
#include "kc_test.h"
#include "kubelet/config/pod_update.h"
#include "kubelet/prober/results_manager.h"
#include "kubelet/status/status_manager.h"
#include "kubelet/sync_loop.h"
#include "pleg/event.h"
#include "pleg/evented.h"
#include "pleg/generic.h"
#include "runtime/api_pod.h"
#include "runtime/cache.h"
#include "runtime/container.h"
#include "runtime/cri.h"
#include "runtime/error.h"

#define T0 (INT64_C(1700000000) * KC_NSEC_PER_SEC)
#define MS KC_NSEC_PER_MSEC
#define SEC KC_NSEC_PER_SEC

/* ------------------------------------------------------------------------ */
/* The fake handler: records every call as a line of text.                    */

struct fake {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        char log[16384];
        size_t len;
        unsigned calls;
        struct kc_api_pod *known[4]; /* the "pod manager" */
        struct kc_api_pod *due;      /* what get_pods_to_sync returns (once) */
        bool block_syncs;            /* handle_pod_syncs waits while set */
        atomic_int health_calls;
        atomic_bool runtime_down;
};

static void record(struct fake *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void record(struct fake *f, const char *fmt, ...)
{
        va_list ap;

        pthread_mutex_lock(&f->lock);
        va_start(ap, fmt);
        f->len += vsnprintf(f->log + f->len, sizeof(f->log) - f->len, fmt, ap);
        va_end(ap);
        if (f->len < sizeof(f->log) - 1)
                f->log[f->len++] = ';';
        f->log[f->len] = '\0';
        f->calls++;
        pthread_cond_broadcast(&f->cond);
        pthread_mutex_unlock(&f->lock);
}

static void record_pods(struct fake *f, const char *what, struct kc_api_pod *const *pods, size_t n)
{
        char buf[256] = "";
        size_t i, len = 0;

        for (i = 0; i < n; i++)
                len += snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? "," : "", pods[i]->uid);
        record(f, "%s(%s)", what, buf);
}

static void h_add(void *ud, struct kc_api_pod *const *p, size_t n)
{
        record_pods(ud, "add", p, n);
}
static void h_update(void *ud, struct kc_api_pod *const *p, size_t n)
{
        record_pods(ud, "update", p, n);
}
static void h_remove(void *ud, struct kc_api_pod *const *p, size_t n)
{
        record_pods(ud, "remove", p, n);
}
static void h_reconcile(void *ud, struct kc_api_pod *const *p, size_t n)
{
        record_pods(ud, "reconcile", p, n);
}
static void h_syncs(void *ud, struct kc_api_pod *const *p, size_t n)
{
        struct fake *f = ud;

        record_pods(f, "sync", p, n);
        pthread_mutex_lock(&f->lock);
        while (f->block_syncs)
                pthread_cond_wait(&f->cond, &f->lock);
        pthread_mutex_unlock(&f->lock);
}
static void h_cleanups(void *ud)
{
        record(ud, "cleanups");
}
static struct kc_api_pod *h_get_pod(void *ud, const char *uid)
{
        struct fake *f = ud;
        size_t i;

        for (i = 0; i < KC_ELEMENTSOF(f->known); i++)
                if (f->known[i] && strcmp(f->known[i]->uid, uid) == 0)
                        return kc_api_pod_ref(f->known[i]);
        return NULL;
}
static void h_cleanup_containers(void *ud, const char *uid, const char *cid)
{
        record(ud, "deletor(%s/%s)", uid, cid);
}
static size_t h_pods_to_sync(void *ud, struct kc_api_pod ***ret)
{
        struct fake *f = ud;
        struct kc_api_pod **v;

        if (!f->due)
                return 0;
        v = malloc(sizeof(*v));
        assert_non_null(v);
        v[0] = f->due;
        f->due = NULL; /* the work queue hands a pod out once */
        *ret = v;
        return 1;
}

static const struct kc_sync_handler_ops fake_ops = {
        .handle_pod_additions = h_add,
        .handle_pod_updates = h_update,
        .handle_pod_removes = h_remove,
        .handle_pod_reconcile = h_reconcile,
        .handle_pod_syncs = h_syncs,
        .handle_pod_cleanups = h_cleanups,
        .get_pod_by_uid = h_get_pod,
        .clean_up_containers_in_pod = h_cleanup_containers,
        .get_pods_to_sync = h_pods_to_sync,
};

/* A health check standing in for PLEG: counts the loop's runtimeErrors() calls. */
static bool fake_check(void *ud, char **ret_err)
{
        struct fake *f = ud;

        atomic_fetch_add(&f->health_calls, 1);
        if (atomic_load(&f->runtime_down)) {
                *ret_err = strdup("pleg was last seen active 3m1s ago; threshold is 3m0s");
                return false;
        }
        return true;
}

/* ------------------------------------------------------------------------ */
/* An EventedPLEG over the loop's PLEG channel, for its health check only      */

/* A runtime with no pods and a stream that never opens: the PLEG never starts. */
static int none_get_pods(void *self, bool all, struct kc_pod_list *ret,
                         struct kc_runtime_error *err)
{
        (void)self, (void)all, (void)err;
        *ret = (struct kc_pod_list){ 0 };
        return 0;
}

static int none_get_pod_status(void *self, const char *uid, const char *name, const char *ns,
                               struct kc_pod_status **ret, struct kc_runtime_error *err)
{
        (void)self, (void)name, (void)ns, (void)err;
        return kc_pod_status_new_default(uid, ret);
}

static const struct kc_pod_runtime_ops none_runtime_ops = {
        .get_pods = none_get_pods,
        .get_pod_status = none_get_pod_status,
};

static int none_open(void *self, void (*on_event)(void *, const struct kc_container_event *),
                     void (*on_close)(void *, int, const struct kc_runtime_error *), void *ud,
                     void **ret_handle, struct kc_runtime_error *err)
{
        (void)self, (void)on_event, (void)on_close, (void)ud, (void)ret_handle;
        return kc_runtime_error_set(err, -EOPNOTSUPP, KC_RUNTIME_UNIMPLEMENTED, "no stream");
}

static void none_close(void *self, void *handle)
{
        (void)self, (void)handle;
}

static const struct kc_container_event_source_ops none_source_ops = {
        .open = none_open,
        .close = none_close,
};

struct env;

struct evented {
        bool rule; /* the daemon's check (kc_sync_loop_evented_pleg_healthy) or the bare one */
        struct env *env;
        struct kc_pod_cache *cache;
        struct kc_generic_pleg *generic;
        struct kc_evented_pleg *pleg;
        atomic_int failures;
};

/* ------------------------------------------------------------------------ */
/* Fixture                                                                    */

struct env {
        struct fake f;
        struct kc_clock *clock;
        struct kc_chan *config, *pleg, *probes;
        struct kc_status_manager *sm;
        struct kc_runtime_state *rs;
        struct kc_sync_loop *loop;
        struct evented *ev; /* NULL: no EventedPLEG check */
        pthread_t thread;
        bool joined;
        int run_result;
};

/* The "EventedPLEG" runtimeState check, registered as the daemon registers it. */
static bool evented_check(void *ud, char **ret_err)
{
        struct evented *ev = ud;
        bool ok = ev->rule ? kc_sync_loop_evented_pleg_healthy(ev->env->loop, ev->pleg, ret_err)
                           : kc_evented_pleg_healthy(ev->pleg, ret_err);

        if (!ok)
                atomic_fetch_add(&ev->failures, 1);
        return ok;
}

/* Builds @p ev's PLEGs over @p e's PLEG channel and registers its check. */
static void evented_build(struct evented *ev, struct env *e)
{
        const struct kc_generic_pleg_config gc = {
                .runtime = { &none_runtime_ops, NULL },
                .events = e->pleg,
                .clock = e->clock,
                .relist_period_ns = KC_EVENTED_GENERIC_RELIST_PERIOD,
                .relist_threshold_ns = KC_EVENTED_GENERIC_RELIST_THRESHOLD,
        };
        struct kc_generic_pleg_config g = gc;
        struct kc_evented_pleg_config c;

        ev->env = e;
        atomic_init(&ev->failures, 0);
        assert_int_equal(kc_pod_cache_new(&ev->cache), 0);
        g.cache = ev->cache;
        assert_int_equal(kc_generic_pleg_new(&g, &ev->generic), 0);
        c = (struct kc_evented_pleg_config){
                .generic = ev->generic,
                .source = { &none_source_ops, NULL },
                .events = e->pleg,
                .cache = ev->cache,
                .clock = e->clock,
        };
        assert_int_equal(kc_evented_pleg_new(&c, &ev->pleg), 0);
        assert_int_equal(kc_runtime_state_add_health_check(e->rs, "EventedPLEG", evented_check, ev),
                         0);
        e->ev = ev;
}

static void evented_free(struct evented *ev)
{
        kc_evented_pleg_free(ev->pleg);
        kc_generic_pleg_free(ev->generic);
        kc_pod_cache_free(ev->cache);
}

static void *loop_thread(void *arg)
{
        struct env *e = arg;

        e->run_result = kc_sync_loop_run(e->loop);
        return NULL;
}

static struct kc_api_pod *mkpod(const char *uid)
{
        struct kc_api_pod t = { .uid = uid,
                                .name = uid,
                                .namespace = "default",
                                .deletion_grace_s = -1,
                                .termination_grace_s = -1 };
        struct kc_api_pod *p = NULL;

        assert_int_equal(kc_api_pod_new(&t, &p), 0);
        return p;
}

/* Stop signals for the next env_start (NULL: none). */
static const sigset_t *next_stop_signals;
/* An EventedPLEG check for the next env_start (NULL: none). */
static struct evented *next_evented;
/* PLEG events queued before the next env_start's loop runs. */
static unsigned next_prefill;

/* Starts the loop; @pleg_down makes the fake PLEG health check fail from the start. */
static struct env *env_start(bool runtime_synced, bool pleg_down)
{
        static const char *const sources[] = { "file" };
        struct kc_sync_loop_config cfg;
        struct env *e = calloc(1, sizeof(*e));

        assert_non_null(e);
        pthread_mutex_init(&e->f.lock, NULL);
        pthread_cond_init(&e->f.cond, NULL);
        e->f.known[0] = mkpod("p1");
        e->f.known[1] = mkpod("p2");
        assert_int_equal(kc_fake_clock_new(&e->clock, T0), 0);
        assert_int_equal(kc_chan_new(&e->config, 100, kc_pod_update_free_item), 0);
        assert_int_equal(kc_chan_new(&e->pleg, 1000, kc_pleg_event_free_item), 0);
        assert_int_equal(kc_chan_new(&e->probes, 10, kc_probe_update_free), 0);
        assert_int_equal(kc_status_manager_new(&e->sm), 0);
        assert_int_equal(kc_runtime_state_new(e->clock, 30 * SEC, &e->rs), 0);
        assert_int_equal(kc_runtime_state_add_health_check(e->rs, "PLEG", fake_check, &e->f), 0);
        if (next_evented)
                evented_build(next_evented, e);
        for (unsigned i = 0; i < next_prefill; i++)
                assert_int_equal(
                        kc_chan_push_mp(e->pleg,
                                        kc_pleg_event_new("p1", KC_PLEG_CONTAINER_STARTED, "c1")),
                        0);
        if (runtime_synced)
                kc_runtime_state_set_runtime_sync(e->rs, T0);
        atomic_store(&e->f.runtime_down, pleg_down);
        cfg = (struct kc_sync_loop_config){
                .clock = e->clock,
                .config = e->config,
                .pleg = e->pleg,
                .probes = e->probes,
                .status_manager = e->sm,
                .runtime_state = e->rs,
                .handler = &fake_ops,
                .handler_userdata = &e->f,
                .sources = sources,
                .n_sources = 1,
                .stop_signals = next_stop_signals,
        };
        assert_int_equal(kc_sync_loop_new(&cfg, &e->loop), 0);
        assert_int_equal(pthread_create(&e->thread, NULL, loop_thread, e), 0);
        return e;
}

static void env_stop(struct env *e)
{
        size_t i;

        if (!e->joined) {
                kc_sync_loop_stop_mp(e->loop);
                pthread_join(e->thread, NULL);
        }
        assert_int_equal(e->run_result, 0);
        kc_sync_loop_free(e->loop);
        kc_runtime_state_free(e->rs);
        if (e->ev)
                evented_free(e->ev);
        kc_chan_free(e->probes);
        kc_status_manager_free(e->sm);
        kc_chan_free(e->pleg);
        kc_chan_free(e->config);
        kc_clock_free(e->clock);
        for (i = 0; i < KC_ELEMENTSOF(e->f.known); i++)
                kc_api_pod_unref(e->f.known[i]);
        kc_api_pod_unref(e->f.due);
        pthread_cond_destroy(&e->f.cond);
        pthread_mutex_destroy(&e->f.lock);
        free(e);
}

/* Waits (at most 5 s) until the handler has been called @n times in all. */
static void wait_calls(struct env *e, unsigned n)
{
        struct timespec deadline;

        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += 5;
        pthread_mutex_lock(&e->f.lock);
        while (e->f.calls < n &&
               pthread_cond_timedwait(&e->f.cond, &e->f.lock, &deadline) != ETIMEDOUT)
                ;
        pthread_mutex_unlock(&e->f.lock);
        assert_true(e->f.calls >= n);
}

static void send_update(struct env *e, enum kc_pod_op op, const char *source, const char *uid)
{
        struct kc_api_pod *p = mkpod(uid);

        assert_int_equal(kc_chan_push_mp(e->config, kc_pod_update_new(op, source, &p, 1)), 0);
        kc_api_pod_unref(p);
}

static void send_event(struct env *e, const char *uid, enum kc_pleg_event_type t, const char *data)
{
        assert_int_equal(kc_chan_push_mp(e->pleg, kc_pleg_event_new(uid, t, data)), 0);
}

/* ------------------------------------------------------------------------ */
/* Tests                                                                      */

/* F-LOOP-04: each config op reaches its handler; DELETE is an update; SET is refused. */
static void test_config_ops(void **state)
{
        struct env *e = env_start(true, false);

        (void)state;
        send_update(e, KC_POD_OP_ADD, "file", "a");
        send_update(e, KC_POD_OP_UPDATE, "file", "b");
        send_update(e, KC_POD_OP_DELETE, "file", "c");
        send_update(e, KC_POD_OP_REMOVE, "file", "d");
        send_update(e, KC_POD_OP_RECONCILE, "file", "e");
        send_update(e, KC_POD_OP_SET, "file", "f");
        send_update(e, KC_POD_OP_ADD, "file", "g");
        wait_calls(e, 6);
        assert_string_equal(e->f.log, "add(a);update(b);update(c);remove(d);reconcile(e);add(g);");
        env_stop(e);
}

/* F-LOOP-06, F-LOOP-07: PLEG events sync known pods (not ContainerRemoved);
 * ContainerDied also goes to the deletor, even for an unknown pod. */
static void test_pleg_events(void **state)
{
        struct env *e = env_start(true, false);

        (void)state;
        send_event(e, "p1", KC_PLEG_CONTAINER_STARTED, "c1");
        send_event(e, "p1", KC_PLEG_CONTAINER_REMOVED, "c0");
        send_event(e, "p2", KC_PLEG_POD_SYNC, NULL);
        send_event(e, "ghost", KC_PLEG_CONTAINER_STARTED, "g1");
        send_event(e, "p2", KC_PLEG_CONTAINER_DIED, "c2");
        send_event(e, "ghost", KC_PLEG_CONTAINER_DIED, "g2");
        wait_calls(e, 5);
        kc_test_sleep_ms(20);
        assert_string_equal(e->f.log, "sync(p1);sync(p2);sync(p2);deletor(p2/c2);"
                                      "deletor(ghost/g2);");
        env_stop(e);
}

static void push_probe(struct env *e, enum kc_probe_type t, enum kc_probe_result r, const char *uid)
{
        struct kc_probe_update *u = calloc(1, sizeof(*u));

        assert_non_null(u);
        *u = (struct kc_probe_update){
                .type = t, .result = r, .pod_uid = strdup(uid), .container_id = strdup("c2")
        };
        assert_int_equal(kc_chan_push_mp(e->probes, u), 0);
}

static bool stored_flag(struct env *e, const char *key)
{
        json_t *s = NULL;
        bool v;

        assert_int_equal(kc_status_manager_get_pod_status(e->sm, "p2", &s), 0);
        v = json_is_true(
                json_object_get(json_array_get(json_object_get(s, "containerStatuses"), 0), key));
        json_decref(s);
        return v;
}

/*
 * F-LOOP-09 (issue 15): probe results sync their pod when the pod manager
 * knows it: a liveness failure (not a success), every readiness and
 * startup change, which first reaches the status manager.
 */
static void test_probe_results(void **state)
{
        struct env *e = env_start(true, false);
        json_t *st = json_pack("{s:s, s:[{s:s, s:s, s:b, s:b}]}", "phase", "Running",
                               "containerStatuses", "name", "app", "containerID", "sim://c2",
                               "ready", false, "started", false);

        (void)state;
        assert_non_null(st);
        assert_int_equal(kc_status_manager_set_pod_status(e->sm, e->f.known[1], st), 0);
        json_decref(st);
        push_probe(e, KC_PROBE_LIVENESS, KC_PROBE_FAILURE, "ghost");
        push_probe(e, KC_PROBE_LIVENESS, KC_PROBE_SUCCESS, "p2");
        push_probe(e, KC_PROBE_READINESS, KC_PROBE_SUCCESS, "p2");
        wait_calls(e, 1);
        assert_string_equal(e->f.log, "sync(p2);");
        assert_true(stored_flag(e, "ready"));
        push_probe(e, KC_PROBE_STARTUP, KC_PROBE_SUCCESS, "p2");
        wait_calls(e, 2);
        assert_true(stored_flag(e, "started"));
        push_probe(e, KC_PROBE_LIVENESS, KC_PROBE_FAILURE, "p2");
        wait_calls(e, 3);
        assert_string_equal(e->f.log, "sync(p2);sync(p2);sync(p2);");
        env_stop(e);
}

/* F-LOOP-08, F-LOOP-05, F-LOOP-10: the 1 s tick syncs due pods; housekeeping
 * every 2 s runs only once every config source has been seen. */
static void test_ticks(void **state)
{
        struct env *e = env_start(true, false);

        (void)state;
        e->f.due = mkpod("p1");
        kc_test_sleep_ms(20);
        kc_fake_clock_advance(e->clock, SEC);
        wait_calls(e, 1);
        assert_string_equal(e->f.log, "sync(p1);");
        kc_fake_clock_advance(e->clock, SEC); /* housekeeping due: source not seen, skipped */
        kc_test_sleep_ms(50);
        assert_int_equal(e->f.calls, 1);
        send_update(e, KC_POD_OP_ADD, "file", "x");
        wait_calls(e, 2);
        kc_fake_clock_advance(e->clock, 2 * SEC);
        wait_calls(e, 3);
        assert_string_equal(e->f.log, "sync(p1);add(x);cleanups;");
        env_stop(e);
}

/* F-LOOP-01: while runtimeErrors() reports a problem the loop reads nothing
 * and sleeps 100, 200, 400, ... 5000, 5000 ms on the clock; on success it
 * serves again and the backoff starts over (the #72482 shape: PLEG keeps
 * producing, nothing blocks, the events wait in the channel). */
static void test_runtime_error_backoff(void **state)
{
        static const int64_t sleeps_ms[] = { 100, 200, 400, 800, 1600, 3200, 5000, 5000 };
        struct env *e;
        size_t i;
        int calls;

        (void)state;
        e = env_start(true, true);
        for (i = 0; i < 100; i++)
                send_event(e, "p1", KC_PLEG_CONTAINER_STARTED, "c1");
        for (i = 0; i < KC_ELEMENTSOF(sleeps_ms); i++) {
                /* The loop checked runtimeErrors() once more and went to sleep. */
                KC_TEST_WAIT_UNTIL(atomic_load(&e->f.health_calls) >= (int)i + 1 &&
                                           kc_fake_clock_sleepers(e->clock) == 1,
                                   5000);
                calls = atomic_load(&e->f.health_calls);
                assert_int_equal(calls, (int)i + 1);
                kc_fake_clock_advance(e->clock, sleeps_ms[i] * MS - 1);
                kc_test_sleep_ms(10);
                assert_int_equal(atomic_load(&e->f.health_calls), calls); /* still asleep */
                kc_fake_clock_advance(e->clock, 1);
        }
        /* Nothing was consumed meanwhile. */
        assert_int_equal(kc_chan_len(e->pleg), 100);
        assert_int_equal(e->f.calls, 0);
        /* Recovery: once the loop is back asleep (advancing earlier would let it
         * fall asleep on a clock that no longer moves), the next step ends and
         * the loop serves the backlog. */
        KC_TEST_WAIT_UNTIL(atomic_load(&e->f.health_calls) >= (int)KC_ELEMENTSOF(sleeps_ms) + 1 &&
                                   kc_fake_clock_sleepers(e->clock) == 1,
                           5000);
        atomic_store(&e->f.runtime_down, false);
        kc_fake_clock_advance(e->clock, 5 * SEC);
        wait_calls(e, 100);
        assert_int_equal(kc_chan_len(e->pleg), 0);
        env_stop(e);
}

/* F-LOOP-02: a loop stuck inside one iteration for more than max(2 x resync,
 * 5 min) is reported unhealthy with upstream's message. */
static void test_health_check(void **state)
{
        struct env *e = env_start(true, false);
        char *err = NULL;

        (void)state;
        assert_true(kc_sync_loop_healthy(e->loop, NULL)); /* before any iteration */
        e->f.block_syncs = true;
        send_event(e, "p1", KC_PLEG_CONTAINER_STARTED, "c1");
        wait_calls(e, 1); /* now stuck in handle_pod_syncs */
        kc_fake_clock_advance(e->clock, 5 * KC_NSEC_PER_MIN);
        assert_true(kc_sync_loop_healthy(e->loop, &err));
        assert_null(err);
        kc_fake_clock_advance(e->clock, 1);
        assert_false(kc_sync_loop_healthy(e->loop, &err));
        assert_string_equal(err, "sync Loop took longer than expected");
        free(err);
        pthread_mutex_lock(&e->f.lock);
        e->f.block_syncs = false;
        pthread_cond_broadcast(&e->f.cond);
        pthread_mutex_unlock(&e->f.lock);
        env_stop(e);
}

/* F-LOOP-03: with both channels full of work, neither starves: the loop
 * serves them in turn. */
static void test_fairness(void **state)
{
        struct env *e = env_start(true, false);
        size_t i;

        (void)state;
        e->f.block_syncs = true; /* hold the loop while the backlog builds */
        send_event(e, "p1", KC_PLEG_CONTAINER_STARTED, "first");
        wait_calls(e, 1);
        for (i = 0; i < 20; i++) {
                send_event(e, "p2", KC_PLEG_CONTAINER_STARTED, "c");
                send_update(e, KC_POD_OP_UPDATE, "file", "u");
        }
        pthread_mutex_lock(&e->f.lock);
        e->f.block_syncs = false;
        pthread_cond_broadcast(&e->f.cond);
        pthread_mutex_unlock(&e->f.lock);
        wait_calls(e, 41);
        /* Strict alternation from the first served item on. */
        assert_non_null(strstr(e->f.log, "sync(p1);update(u);sync(p2);update(u);sync(p2);"));
        assert_null(strstr(e->f.log, "sync(p2);sync(p2);"));
        assert_null(strstr(e->f.log, "update(u);update(u);"));
        env_stop(e);
}

/* A stop wakes the loop promptly, also in the middle of a backoff sleep. */
static void test_stop_during_backoff(void **state)
{
        struct env *e = env_start(false, false); /* never synced: the runtime is "not yet" up */

        (void)state;
        KC_TEST_WAIT_UNTIL(kc_fake_clock_sleepers(e->clock) == 1, 5000);
        assert_int_equal(kc_fake_clock_sleepers(e->clock), 1);
        env_stop(e); /* joins: would hang if the sleep ignored the stop */
}

/* The daemon's SIGTERM/SIGINT path: a stop signal, read through the loop's
 * signalfd, ends kc_sync_loop_run, also in the middle of a runtime-error
 * backoff sleep, without waiting for that sleep to end: the fake clock is not
 * advanced (the daemon's back-off sleeps up to 5 s; its shutdown limit is 2 s). */
static void test_stop_signal(void **state)
{
        sigset_t set, old;
        struct env *e;
        int i;

        (void)state;
        sigemptyset(&set);
        sigaddset(&set, SIGUSR1);
        /* Blocked here before the loop thread exists, so in every thread. */
        assert_int_equal(pthread_sigmask(SIG_BLOCK, &set, &old), 0);
        next_stop_signals = &set;
        for (i = 0; i < 2; i++) {
                e = env_start(true, i == 1); /* idle, then in a backoff */
                if (i == 1)
                        KC_TEST_WAIT_UNTIL(kc_fake_clock_sleepers(e->clock) == 1, 5000);
                else
                        kc_test_sleep_ms(20);
                assert_int_equal(kill(getpid(), SIGUSR1), 0);
                /* Returns: the signal stopped it (a timeout here is a hang). */
                {
                        struct timespec deadline;

                        clock_gettime(CLOCK_REALTIME, &deadline);
                        deadline.tv_sec += 5;
                        assert_int_equal(pthread_timedjoin_np(e->thread, NULL, &deadline), 0);
                }
                e->joined = true;
                assert_int_equal(e->run_result, 0);
                env_stop(e);
        }
        next_stop_signals = NULL;
        assert_int_equal(pthread_sigmask(SIG_SETMASK, &old, NULL), 0);
}

/* The handler's call count, read under its lock (the loop thread writes it). */
static unsigned handled(struct env *e)
{
        unsigned n;

        pthread_mutex_lock(&e->f.lock);
        n = e->f.calls;
        pthread_mutex_unlock(&e->f.lock);
        return n;
}

/*
 * Runs the loop until it has handled @p want PLEG events, advancing the
 * fake clock past each back-off step it sleeps (5 s is the longest). Gives
 * up after @p max_steps steps. Returns the number of back-off steps taken.
 */
static unsigned steps_until_handled(struct env *e, unsigned want, unsigned max_steps)
{
        unsigned steps = 0;

        for (;;) {
                /* Settled: everything handled, or asleep in a back-off step. */
                assert_true(KC_TEST_WAIT_UNTIL(
                        handled(e) >= want || kc_fake_clock_sleepers(e->clock) == 1, 5000));
                if (handled(e) >= want || steps == max_steps)
                        return steps;
                steps++;
                /* advance unlinks the sleeper at once: the next settle is the next step. */
                kc_fake_clock_advance(e->clock, 5 * SEC);
        }
}

/*
 * The #72482 shape with EventedPLEG (core/daemon.c registers its check
 * through kc_sync_loop_evented_pleg_healthy): the runtime is down, syncLoop
 * backs off and reads nothing, a flood fills the PLEG channel (1000), and
 * EventedPLEG's check now fails because the channel is full. When the
 * runtime recovers the loop must drain the channel, although the check that
 * fails is caused by the loop's own back-off. It does in one back-off step.
 * (test_evented_full_channel_without_rule shows the same setup deadlocks
 * without the rule.)
 */
static void test_evented_full_channel_drains(void **state)
{
        struct evented ev = { .rule = true };
        struct env *e;
        unsigned i;

        (void)state;
        next_evented = &ev;
        e = env_start(true, true); /* the runtime is down: the loop backs off */
        next_evented = NULL;
        assert_true(KC_TEST_WAIT_UNTIL(kc_fake_clock_sleepers(e->clock) == 1, 5000));
        assert_true(kc_sync_loop_backing_off(e->loop));
        for (i = 0; i < KC_PLEG_CHANNEL_CAPACITY; i++)
                send_event(e, "p1", KC_PLEG_CONTAINER_STARTED, "c1");
        /* Full: the bare check fails; the daemon's passes while the loop backs off. */
        assert_false(kc_evented_pleg_healthy(ev.pleg, NULL));
        assert_true(kc_sync_loop_evented_pleg_healthy(e->loop, ev.pleg, NULL));
        /* Still down for two more steps: nothing is read. */
        assert_int_equal(steps_until_handled(e, 1, 2), 2);
        assert_int_equal(kc_chan_len(e->pleg), KC_PLEG_CHANNEL_CAPACITY);
        assert_int_equal(handled(e), 0);

        atomic_store(&e->f.runtime_down, false);
        assert_int_equal(steps_until_handled(e, KC_PLEG_CHANNEL_CAPACITY, 10), 1);
        wait_calls(e, KC_PLEG_CHANNEL_CAPACITY);
        assert_int_equal(handled(e), KC_PLEG_CHANNEL_CAPACITY);
        assert_int_equal(kc_chan_len(e->pleg), 0);
        assert_false(kc_sync_loop_backing_off(e->loop));
        /* Drained, the check passes on its own again. */
        assert_true(kc_evented_pleg_healthy(ev.pleg, NULL));
        assert_int_equal(atomic_load(&ev.failures), 0);
        env_stop(e);
}

/*
 * A flood that fills the channel while the loop runs normally: the first
 * runtimeErrors() sees EventedPLEG fail (the loop was not backing off yet)
 * and backs off once; the next check passes and the loop drains.
 */
static void test_evented_flood_before_loop_runs(void **state)
{
        struct evented ev = { .rule = true };
        struct env *e;

        (void)state;
        next_evented = &ev;
        next_prefill = KC_PLEG_CHANNEL_CAPACITY;
        e = env_start(true, false);
        next_evented = NULL;
        next_prefill = 0;
        assert_int_equal(steps_until_handled(e, KC_PLEG_CHANNEL_CAPACITY, 10), 1);
        wait_calls(e, KC_PLEG_CHANNEL_CAPACITY);
        assert_int_equal(kc_chan_len(e->pleg), 0);
        assert_int_equal(atomic_load(&ev.failures), 1);
        env_stop(e);
}

/*
 * The control: the same recovery with EventedPLEG's bare check (no rule)
 * never drains. The runtime is back, but the full channel fails the check
 * at every step and the loop, the channel's only reader, backs off forever.
 */
static void test_evented_full_channel_without_rule(void **state)
{
        struct evented ev = { .rule = false };
        struct env *e;
        unsigned i;

        (void)state;
        next_evented = &ev;
        e = env_start(true, true);
        next_evented = NULL;
        assert_true(KC_TEST_WAIT_UNTIL(kc_fake_clock_sleepers(e->clock) == 1, 5000));
        for (i = 0; i < KC_PLEG_CHANNEL_CAPACITY; i++)
                send_event(e, "p1", KC_PLEG_CONTAINER_STARTED, "c1");
        atomic_store(&e->f.runtime_down, false);
        /* 10 steps (100 ms ... 5 s each, 10 x 5 s of fake time): nothing read. */
        assert_int_equal(steps_until_handled(e, 1, 10), 10);
        assert_int_equal(handled(e), 0);
        assert_int_equal(kc_chan_len(e->pleg), KC_PLEG_CHANNEL_CAPACITY);
        assert_true(kc_sync_loop_backing_off(e->loop));
        assert_true(atomic_load(&ev.failures) >= 10);
        env_stop(e);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_config_ops),
                cmocka_unit_test(test_pleg_events),
                cmocka_unit_test(test_probe_results),
                cmocka_unit_test(test_ticks),
                cmocka_unit_test(test_runtime_error_backoff),
                cmocka_unit_test(test_health_check),
                cmocka_unit_test(test_fairness),
                cmocka_unit_test(test_stop_during_backoff),
                cmocka_unit_test(test_stop_signal),
                cmocka_unit_test(test_evented_full_channel_drains),
                cmocka_unit_test(test_evented_flood_before_loop_runs),
                cmocka_unit_test(test_evented_full_channel_without_rule),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
