/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GenericPLEG relist scenarios (UPSTREAM.md §3), each citing the feature ids
 * of ../shared/spec/FEATURES.md it covers: F-PLEG-01 … F-PLEG-23 (F-PLEG-03
 * to 06 are also covered table by table in test_events.c).
 *
 * PLEG runs against the simulated runtime's kubecontainer face, wrapped by a
 * probe runtime that can make listing take (fake) time, stamp statuses with
 * a runtime timestamp and check invariants while PLEG is inside a call.
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

#include "core/chan.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/log.h"
#include "internal.h"
#include "kc_test.h"
#include "metrics/kubelet_metrics.h"
#include "metrics/registry.h"
#include "pleg/event.h"
#include "pleg/generic.h"
#include "pleg/pleg.h"
#include "runtime/cache.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/sim.h"

#define T0 (INT64_C(1700000000) * KC_NSEC_PER_SEC)
#define SEC KC_NSEC_PER_SEC

/* ------------------------------------------------------------------------ */
/* The probe runtime                                                          */

struct probe {
        struct kc_pod_runtime inner;
        struct kc_clock *clock;
        struct kc_pod_cache *cache;
        int64_t list_cost; /* fake time spent inside GetPods */
        int64_t status_ts; /* when non-zero, stamped on statuses */
        bool last_all;
        atomic_int in_flight;
        atomic_int max_in_flight;
        bool real_delay; /* sleep 1 ms for real inside GetPods */
        /* F-PLEG-14: while PLEG inspects pods, the global cache time must not
         * have moved to this relist's timestamp yet. */
        int64_t forbid_global_ready_at;
        int global_violations;
        /* get_listed_pod_status (probe_listed_ops only): the pods it was given, each
         * with the previous status it was given (compared, never read). */
        const struct kc_pod *listed[8];
        const struct kc_pod_status *listed_prev[8];
        size_t n_listed;
        /* The pods the last GetPods returned (compared, never read). */
        const struct kc_pod *got[8];
        size_t n_got;
};

static int probe_get_pods(void *self, bool all, struct kc_pod_list *ret,
                          struct kc_runtime_error *err)
{
        struct probe *p = self;
        int n, m, r;

        n = atomic_fetch_add(&p->in_flight, 1) + 1;
        m = atomic_load(&p->max_in_flight);
        while (n > m && !atomic_compare_exchange_weak(&p->max_in_flight, &m, n))
                ;
        p->last_all = all;
        if (p->real_delay) {
                struct timespec ts = { 0, 1000 * 1000 };

                nanosleep(&ts, NULL);
        }
        r = p->inner.ops->get_pods(p->inner.self, all, ret, err);
        for (p->n_got = 0; r >= 0 && p->n_got < ret->n && p->n_got < KC_ELEMENTSOF(p->got);
             p->n_got++)
                p->got[p->n_got] = ret->pods[p->n_got];
        if (p->list_cost)
                kc_fake_clock_advance(p->clock, p->list_cost);
        atomic_fetch_sub(&p->in_flight, 1);
        return r;
}

static int probe_get_pod_status(void *self, const char *uid, const char *name, const char *ns,
                                struct kc_pod_status **ret, struct kc_runtime_error *err)
{
        struct probe *p = self;
        struct kc_pod_status *s = NULL, *stamped = NULL;
        int r;

        if (p->forbid_global_ready_at) {
                struct kc_pod_status *d = NULL;
                char *e = NULL;

                /* "no-such-pod" has no entry: only the global time can make it ready. */
                if (kc_pod_cache_try_get_newer_than(p->cache, "no-such-pod",
                                                    p->forbid_global_ready_at - 1, &d, &e) == 0)
                        p->global_violations++;
                kc_pod_status_unref(d);
                free(e);
        }
        r = p->inner.ops->get_pod_status(p->inner.self, uid, name, ns, &s, err);
        if (r >= 0 && p->status_ts) {
                struct kc_pod_status tmpl = *s;

                tmpl.timestamp = p->status_ts;
                assert_int_equal(kc_pod_status_new(&tmpl, &stamped), 0);
                kc_pod_status_unref(s);
                s = stamped;
        }
        if (s)
                *ret = s;
        return r;
}

static const struct kc_pod_runtime_ops probe_ops = {
        .get_pods = probe_get_pods,
        .get_pod_status = probe_get_pod_status,
};

/* D54: the status of a listed pod; the probe notes the pod and reads it by UID. */
static int probe_get_listed_pod_status(void *self, const struct kc_pod *pod,
                                       const struct kc_pod_status *prev, struct kc_pod_status **ret,
                                       struct kc_runtime_error *err)
{
        struct probe *p = self;

        if (p->n_listed < KC_ELEMENTSOF(p->listed)) {
                p->listed_prev[p->n_listed] = prev;
                p->listed[p->n_listed++] = pod;
        }
        return probe_get_pod_status(self, pod->id, pod->name, pod->namespace, ret, err);
}

static const struct kc_pod_runtime_ops probe_listed_ops = {
        .get_pods = probe_get_pods,
        .get_pod_status = probe_get_pod_status,
        .get_listed_pod_status = probe_get_listed_pod_status,
};

/* ------------------------------------------------------------------------ */
/* Fixture                                                                    */

struct env {
        struct kc_clock *clock;
        struct kc_sim *sim;
        struct probe probe;
        struct kc_chan *events;
        struct kc_pod_cache *cache;
        struct kc_metrics_registry *reg;
        struct kc_kubelet_metrics metrics;
        struct kc_generic_pleg *pleg;
        bool evented;
};

static bool evented_in_use(void *userdata)
{
        return ((struct env *)userdata)->evented;
}

static struct env *env_new_ops(unsigned capacity, bool gate, const struct kc_pod_runtime_ops *ops)
{
        struct kc_generic_pleg_config cfg;
        struct env *e = calloc(1, sizeof(*e));

        assert_non_null(e);
        assert_int_equal(kc_fake_clock_new(&e->clock, T0), 0);
        assert_int_equal(kc_sim_new(e->clock, &e->sim), 0);
        assert_int_equal(kc_chan_new(&e->events, capacity, kc_pleg_event_free_item), 0);
        assert_int_equal(kc_pod_cache_new(&e->cache), 0);
        assert_int_equal(kc_metrics_registry_new(&e->reg), 0);
        assert_int_equal(kc_kubelet_metrics_register(e->reg, &e->metrics), 0);
        e->probe.inner = kc_sim_pod_runtime(e->sim);
        e->probe.clock = e->clock;
        e->probe.cache = e->cache;
        cfg = (struct kc_generic_pleg_config){
                .runtime = { ops, &e->probe },
                .events = e->events,
                .cache = e->cache,
                .clock = e->clock,
                .metrics = &e->metrics,
                .relist_period_ns = SEC,
                .relist_threshold_ns = 3 * 60 * SEC,
                .evented_in_use = gate ? evented_in_use : NULL,
                .evented_userdata = e,
        };
        assert_int_equal(kc_generic_pleg_new(&cfg, &e->pleg), 0);
        return e;
}

static struct env *env_new_full(unsigned capacity, bool gate)
{
        return env_new_ops(capacity, gate, &probe_ops);
}

static struct env *env_new(void)
{
        return env_new_full(100, false);
}

static void env_free(struct env *e)
{
        kc_generic_pleg_free(e->pleg);
        kc_metrics_registry_free(e->reg);
        kc_pod_cache_free(e->cache);
        kc_chan_free(e->events);
        kc_sim_free(e->sim);
        kc_clock_free(e->clock);
        free(e);
}

/*
 * Sets the runtime from a compact description, one string per pod:
 *   "uid c1:running c2:exited/3 | s1:running @10.0.0.1"
 * containers before "|", sandboxes after it, "/N" an exit code, "@ip" IPs.
 */
static void set_runtime(struct env *e, size_t n, const char *const *pods)
{
        struct kc_sim_pod_spec specs[8] = { 0 };
        struct kc_sim_container_spec ctrs[8][8] = { 0 }, sbs[8][8] = { 0 };
        const char *ips[8][4] = { 0 };
        char buf[8][256];
        size_t i;

        assert_true(n <= 8);
        for (i = 0; i < n; i++) {
                bool sandboxes = false;
                char *save = NULL, *tok;

                snprintf(buf[i], sizeof(buf[i]), "%s", pods[i]);
                specs[i].id = strtok_r(buf[i], " ", &save);
                specs[i].containers = ctrs[i];
                specs[i].sandboxes = sbs[i];
                specs[i].ips = ips[i];
                while ((tok = strtok_r(NULL, " ", &save))) {
                        struct kc_sim_container_spec *c;
                        char *colon, *slash;

                        if (strcmp(tok, "|") == 0) {
                                sandboxes = true;
                                continue;
                        }
                        if (tok[0] == '@') {
                                ips[i][specs[i].n_ips++] = tok + 1;
                                continue;
                        }
                        c = sandboxes ? &sbs[i][specs[i].n_sandboxes++]
                                      : &ctrs[i][specs[i].n_containers++];
                        colon = strchr(tok, ':');
                        assert_non_null(colon);
                        *colon = '\0';
                        slash = strchr(colon + 1, '/');
                        if (slash) {
                                *slash = '\0';
                                c->exit_code = atoi(slash + 1);
                        }
                        c->id = tok;
                        c->name = tok;
                        c->state = kc_container_state_from_string(colon + 1);
                        assert_true(c->state >= 0);
                }
        }
        assert_int_equal(kc_sim_set_pods(e->sim, specs, n), 0);
}
#define RUNTIME(e, ...)                                                                            \
        set_runtime(e, KC_ELEMENTSOF(((const char *const[]){ __VA_ARGS__ })),                      \
                    (const char *const[]){ __VA_ARGS__ })

/* Drains the channel into "uid Type data" lines joined by ';'. */
static char *drain(struct env *e)
{
        static char out[4096];
        size_t len = 0;
        void *item;

        out[0] = '\0';
        while (kc_chan_pop_sc(e->events, &item, 0) == 0) {
                struct kc_pleg_event *ev = item;

                len += snprintf(out + len, sizeof(out) - len, "%s%s %s %s", len ? ";" : "",
                                ev->pod_id, kc_pleg_event_type_to_string(ev->type), ev->data);
                kc_pleg_event_free(ev);
        }
        return out;
}

static uint64_t calls(struct env *e, const char *op, const char *key)
{
        struct kc_sim_call_count *c = NULL;
        uint64_t v = 0;
        size_t n = 0, i;

        assert_int_equal(kc_sim_call_counts(e->sim, &c, &n), 0);
        for (i = 0; i < n; i++)
                if (strcmp(c[i].op, op) == 0 && strcmp(c[i].key, key) == 0)
                        v = c[i].count;
        free(c);
        return v;
}

static bool cache_ready(struct env *e, const char *uid, int64_t min)
{
        struct kc_pod_status *s = NULL;
        char *err = NULL;
        int r = kc_pod_cache_try_get_newer_than(e->cache, uid, min, &s, &err);

        kc_pod_status_unref(s);
        free(err);
        return r == 0;
}

/* Waits (at most 5 s) for the relist thread to have listed @want times. */
static void wait_for_lists(struct env *e, uint64_t want)
{
        KC_TEST_WAIT_UNTIL(calls(e, "GetPods", "") >= want, 5000);
        assert_int_equal(calls(e, "GetPods", ""), want);
}

/* ------------------------------------------------------------------------ */
/* Tests                                                                      */

/* F-PLEG-02: GetPods is asked for all pods, exited containers included. */
static void test_lists_all(void **state)
{
        struct env *e = env_new();

        (void)state;
        RUNTIME(e, "p1 c1:exited | s1:exited");
        assert_int_equal(kc_generic_pleg_relist(e->pleg), 0);
        assert_true(e->probe.last_all);
        assert_string_equal(drain(e), "p1 ContainerDied c1;p1 ContainerDied s1");
        env_free(e);
}

/* F-PLEG-07, F-PLEG-08: only pods with changes are inspected; records advance. */
static void test_inspects_only_changed_pods(void **state)
{
        struct env *e = env_new();

        (void)state;
        RUNTIME(e, "p1 c1:running", "p2 c2:running");
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "p1 ContainerStarted c1;p2 ContainerStarted c2");
        assert_int_equal(calls(e, "GetPodStatus", "p1"), 1);
        assert_int_equal(calls(e, "GetPodStatus", "p2"), 1);
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "");
        assert_int_equal(calls(e, "GetPodStatus", "p1"), 1);
        RUNTIME(e, "p1 c1:exited/2", "p2 c2:running");
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "p1 ContainerDied c1");
        assert_int_equal(calls(e, "GetPodStatus", "p1"), 2);
        assert_int_equal(calls(e, "GetPodStatus", "p2"), 1);
        env_free(e);
}

/* F-PLEG-09: a pod gone from the listing loses its cache entry (and record). */
static void test_pod_gone_deletes_cache_entry(void **state)
{
        struct env *e = env_new();
        struct kc_pod_status *s = NULL;
        char *err = NULL;

        (void)state;
        RUNTIME(e, "p1 c1:running");
        kc_generic_pleg_relist(e->pleg);
        assert_int_equal(kc_pod_cache_get(e->cache, "p1", &s, &err), 1);
        kc_pod_status_unref(s);
        set_runtime(e, 0, NULL);
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "p1 ContainerStarted c1;p1 ContainerDied c1;"
                                      "p1 ContainerRemoved c1");
        assert_int_equal(kc_pod_cache_get(e->cache, "p1", &s, &err), 0);
        kc_pod_status_unref(s);
        /* No status call for a vanished pod. */
        assert_int_equal(calls(e, "GetPodStatus", "p1"), 1);
        /* The record is gone: the pod coming back is new again. */
        RUNTIME(e, "p1 c1:running");
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "p1 ContainerStarted c1");
        env_free(e);
}

/* F-PLEG-10, F-PLEG-11, F-PLEG-07: a failed inspection caches the error,
 * sends nothing, keeps the old record and retries next relist. */
static void test_inspection_failure_defers_events(void **state)
{
        struct env *e = env_new();
        struct kc_pod_status *s = NULL;
        char *err = NULL;

        (void)state;
        RUNTIME(e, "p1 c1:running");
        assert_int_equal(
                kc_sim_inject_fault(e->sim, "GetPodStatus", "p1", "unable to get status", 1), 0);
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "");
        assert_int_equal(kc_pod_cache_get(e->cache, "p1", &s, &err), 1);
        assert_non_null(s);
        assert_string_equal(s->id, "p1");
        assert_int_equal(s->n_containers, 0);
        assert_string_equal(err, "unable to get status");
        kc_pod_status_unref(s);
        free(err);
        /* Next relist: nothing changed in the runtime, but the pod is reinspected
         * and the deferred event is computed against the old record again. */
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "p1 ContainerStarted c1");
        assert_int_equal(calls(e, "GetPodStatus", "p1"), 2);
        assert_int_equal(kc_pod_cache_get(e->cache, "p1", &s, &err), 1);
        assert_null(err);
        assert_int_equal(s->n_containers, 1);
        kc_pod_status_unref(s);
        /* Reinspection is done: a third relist inspects nothing. */
        kc_generic_pleg_relist(e->pleg);
        assert_int_equal(calls(e, "GetPodStatus", "p1"), 2);
        env_free(e);
}

/* F-PLEG-12: ContainerChanged refreshes the cache but is never delivered. */
static void test_changed_refreshes_but_is_not_sent(void **state)
{
        struct env *e = env_new();

        (void)state;
        RUNTIME(e, "p1 c1:running");
        kc_generic_pleg_relist(e->pleg);
        drain(e);
        RUNTIME(e, "p1 c1:created");
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "");
        assert_int_equal(calls(e, "GetPodStatus", "p1"), 2);
        RUNTIME(e, "p1 c1:running");
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "p1 ContainerStarted c1");
        env_free(e);
}

/* F-PLEG-13: a full channel never blocks: events are dropped and counted;
 * cubelet then owes the pod a PodSync (docs/deviations.md). */
static void test_channel_full(void **state)
{
        struct env *e = env_new_full(2, false);

        (void)state;
        RUNTIME(e, "p1 a:running b:running", "p2 c:running");
        assert_int_equal(kc_generic_pleg_relist(e->pleg), 0);
        assert_int_equal(kc_chan_len(e->events), 2);
        assert_true(kc_counter_value(e->metrics.pleg_discard_events) == 1.0);
        assert_string_equal(drain(e), "p1 ContainerStarted a;p1 ContainerStarted b");
        /* The lost pod is resynced once there is room, exactly once. */
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "p2 PodSync ");
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "");
        assert_true(kc_counter_value(e->metrics.pleg_discard_events) == 1.0);
        env_free(e);
}

/* F-PLEG-13: while the channel stays full the PodSync stays owed. */
static void test_resync_waits_for_room(void **state)
{
        struct env *e = env_new_full(1, false);

        (void)state;
        RUNTIME(e, "p1 a:running", "p2 b:running");
        kc_generic_pleg_relist(e->pleg); /* p2's event dropped */
        kc_generic_pleg_relist(e->pleg); /* still full: PodSync dropped silently, kept owed */
        assert_true(kc_counter_value(e->metrics.pleg_discard_events) == 1.0);
        assert_string_equal(drain(e), "p1 ContainerStarted a");
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "p2 PodSync ");
        env_free(e);
}

/*
 * D1, another producer's drops (EventedPLEG): kc_generic_pleg_owe_sync_mp()
 * joins the list of GenericPLEG's own drops, in owing order, once per pod;
 * a relist or kc_generic_pleg_flush_owed_mp() delivers them when there is
 * room, and neither counts a discard.
 */
static void test_owe_sync(void **state)
{
        struct env *e = env_new_full(2, false);

        (void)state;
        assert_int_equal(kc_generic_pleg_owe_sync_mp(e->pleg, NULL), -EINVAL);
        assert_int_equal(kc_generic_pleg_owe_sync_mp(e->pleg, ""), -EINVAL);
        assert_int_equal(kc_generic_pleg_flush_owed_mp(e->pleg), 0);
        RUNTIME(e, "p1 a:running b:running", "p2 c:running");
        assert_int_equal(kc_generic_pleg_relist(e->pleg), 0); /* p2's event dropped: owed */
        assert_int_equal(kc_generic_pleg_owe_sync_mp(e->pleg, "x1"), 0);
        assert_int_equal(kc_generic_pleg_owe_sync_mp(e->pleg, "p2"), 0); /* owed already */
        assert_int_equal(kc_generic_pleg_owe_sync_mp(e->pleg, "x2"), 0);
        assert_int_equal(kc_generic_pleg_owe_sync_mp(e->pleg, "x1"), 0);
        /* Full: nothing fits, all three stay owed. */
        assert_int_equal(kc_generic_pleg_flush_owed_mp(e->pleg), 3);
        assert_string_equal(drain(e), "p1 ContainerStarted a;p1 ContainerStarted b");
        /* Room for two: the first two in owing order, the third stays. */
        assert_int_equal(kc_generic_pleg_flush_owed_mp(e->pleg), 1);
        assert_string_equal(drain(e), "p2 PodSync ;x1 PodSync ");
        assert_int_equal(kc_generic_pleg_relist(e->pleg), 0);
        assert_string_equal(drain(e), "x2 PodSync ");
        assert_int_equal(kc_generic_pleg_flush_owed_mp(e->pleg), 0);
        assert_int_equal(kc_generic_pleg_relist(e->pleg), 0);
        assert_string_equal(drain(e), "");
        assert_true(kc_counter_value(e->metrics.pleg_discard_events) == 1.0);
        env_free(e);
}

/* F-PLEG-14: the global cache time is the pre-listing timestamp, set only
 * after every per-pod write. */
static void test_update_time_after_pod_writes(void **state)
{
        struct env *e = env_new();
        int64_t before;

        (void)state;
        e->probe.list_cost = 2 * SEC;
        RUNTIME(e, "p1 c1:running", "p2 c2:running");
        kc_generic_pleg_relist(e->pleg);
        RUNTIME(e, "p1 c1:exited", "p2 c2:exited");
        before = kc_clock_now(e->clock);
        e->probe.forbid_global_ready_at = before;
        kc_generic_pleg_relist(e->pleg);
        assert_int_equal(calls(e, "GetPodStatus", "p2"), 2);
        assert_int_equal(e->probe.global_violations, 0);
        /* Global time == the timestamp taken before GetPods, not after. */
        assert_true(cache_ready(e, "no-such-pod", before - 1));
        assert_false(cache_ready(e, "no-such-pod", before));
        /* The per-pod entries carry the time of their own inspection. */
        assert_true(cache_ready(e, "p1", before + SEC));
        env_free(e);
}

/*
 * D54: a runtime that reads the status of a pod as listed is given the
 * listing's pod, and the entry is as new as that listing: it carries the
 * timestamp taken before GetPods, like the global time, not a later one.
 */
static void test_listed_status_dated_before_listing(void **state)
{
        struct env *e = env_new_ops(100, false, &probe_listed_ops);
        struct kc_pod_status *cached = NULL;
        char *cached_err = NULL;
        int64_t before;

        (void)state;
        e->probe.list_cost = 2 * SEC;
        RUNTIME(e, "p1 c1:running", "p2 c2:running");
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "p1 ContainerStarted c1;p2 ContainerStarted c2");
        assert_int_equal(e->probe.n_listed, 2);
        /* Nothing was cached for either pod yet: no previous status (D55). */
        assert_null(e->probe.listed_prev[0]);
        assert_null(e->probe.listed_prev[1]);
        RUNTIME(e, "p1 c1:exited", "p2 c2:running");
        before = kc_clock_now(e->clock);
        e->probe.n_listed = 0;
        assert_int_equal(kc_pod_cache_get(e->cache, "p1", &cached, &cached_err), 1);
        assert_null(cached_err);
        assert_int_equal(cached->n_containers, 1);
        kc_generic_pleg_relist(e->pleg);
        /* D55: the status cached for the pod is given as the previous one. */
        assert_ptr_equal(e->probe.listed_prev[0], cached);
        cached = kc_pod_status_unref(cached);
        assert_string_equal(drain(e), "p1 ContainerDied c1");
        /* Only the changed pod, as the listing has it; never by UID alone. */
        assert_int_equal(e->probe.n_listed, 1);
        assert_string_equal(e->probe.listed[0]->id, "p1");
        assert_int_equal(e->probe.listed[0]->n_containers, 1);
        assert_int_equal(e->probe.listed[0]->containers[0].state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(calls(e, "GetPodStatus", "p1"), 2);
        assert_true(cache_ready(e, "p1", before - 1));
        assert_false(cache_ready(e, "p1", before));
        assert_false(cache_ready(e, "no-such-pod", before));
        /* The very pod object that relist's GetPods returned. */
        assert_int_equal(e->probe.n_got, 2);
        assert_true(e->probe.listed[0] == e->probe.got[0] || e->probe.listed[0] == e->probe.got[1]);
        env_free(e);
}

/*
 * D54, while EventedPLEG is in use: the events' entries are dated by the
 * runtime, so a relist's entry is not dated at its listing; GetPodStatus
 * lists the pod again and the entry is stamped after the listing.
 */
static void test_listed_status_not_while_evented(void **state)
{
        struct env *e = env_new_ops(100, true, &probe_listed_ops);
        int64_t before;

        (void)state;
        e->evented = true;
        e->probe.list_cost = 2 * SEC;
        RUNTIME(e, "p1 c1:running");
        before = kc_clock_now(e->clock);
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "p1 ContainerStarted c1");
        assert_int_equal(e->probe.n_listed, 0);
        assert_int_equal(calls(e, "GetPodStatus", "p1"), 1);
        assert_true(cache_ready(e, "p1", before + SEC));
        /* Out of use again (a fallback): the listed pod's status, dated at the listing. */
        e->evented = false;
        RUNTIME(e, "p1 c1:exited");
        before = kc_clock_now(e->clock);
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "p1 ContainerDied c1");
        assert_int_equal(e->probe.n_listed, 1);
        assert_false(cache_ready(e, "p1", before));
        env_free(e);
}

/* F-PLEG-15: a listing failure changes nothing: relist time, global cache
 * time and the reinspection set stay as they were. */
static void test_list_failure_changes_nothing(void **state)
{
        struct env *e = env_new();
        char *err = NULL;

        (void)state;
        RUNTIME(e, "p1 c1:running");
        kc_sim_inject_fault(e->sim, "GetPodStatus", "p1", "inspect failed", 1);
        kc_generic_pleg_relist(e->pleg); /* p1 now owes a reinspection */
        kc_fake_clock_advance(e->clock, 100 * SEC);
        kc_sim_inject_fault(e->sim, "GetPods", NULL, "runtime down", 1);
        assert_true(kc_generic_pleg_relist(e->pleg) < 0);
        assert_false(cache_ready(e, "no-such-pod", T0));
        kc_fake_clock_advance(e->clock, 81 * SEC);
        assert_false(kc_generic_pleg_healthy(e->pleg, &err)); /* 181 s since T0 */
        assert_string_equal(err, "pleg was last seen active 3m1s ago; threshold is 3m0s");
        free(err);
        /* The reinspection survived the failed relist. */
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "p1 ContainerStarted c1");
        assert_int_equal(calls(e, "GetPodStatus", "p1"), 2);
        env_free(e);
}

/* F-PLEG-16: exact health messages, strictly greater than the threshold. */
static void test_health(void **state)
{
        struct env *e = env_new();
        char *err = NULL;

        (void)state;
        assert_false(kc_generic_pleg_healthy(e->pleg, &err));
        assert_string_equal(err, "pleg has yet to be successful");
        free(err);
        kc_generic_pleg_relist(e->pleg);
        kc_fake_clock_advance(e->clock, 3 * 60 * SEC);
        assert_true(kc_generic_pleg_healthy(e->pleg, &err)); /* equal is healthy */
        assert_null(err);
        kc_fake_clock_advance(e->clock, 1);
        assert_false(kc_generic_pleg_healthy(e->pleg, &err));
        assert_string_equal(err, "pleg was last seen active 3m0.000000001s ago; threshold is 3m0s");
        free(err);
        kc_generic_pleg_update(e->pleg, SEC, 10 * 60 * SEC);
        assert_true(kc_generic_pleg_healthy(e->pleg, NULL));
        env_free(e);
}

/* F-PLEG-01, F-PLEG-17: the first relist is immediate, the next one comes a
 * period after the previous one returned (sliding); start and stop are
 * idempotent and restartable. */
static void test_periodic_sliding(void **state)
{
        struct env *e = env_new();

        (void)state;
        e->probe.list_cost = SEC / 2;
        RUNTIME(e, "p1 c1:running");
        assert_int_equal(kc_generic_pleg_start(e->pleg), 0);
        assert_int_equal(kc_generic_pleg_start(e->pleg), 0);
        /* Wait for the first relist to be done (its event arrives). */
        {
                void *item = NULL;

                assert_int_equal(kc_chan_pop_sc(e->events, &item, 5000), 0);
                kc_pleg_event_free(item);
        }
        /* Relist 1 ran from T0 to T0+0.5s. At T0+1.1s (past T0+1s, before
         * T0+1.5s) a fixed-rate timer would have fired; a sliding one not.
         * Advance only once the relist thread sleeps on the clock. */
        assert_true(KC_TEST_WAIT_UNTIL(kc_fake_clock_sleepers(e->clock) == 1, 5000));
        kc_fake_clock_advance(e->clock, SEC * 6 / 10);
        kc_test_sleep_ms(50);
        assert_int_equal(calls(e, "GetPods", ""), 1);
        kc_fake_clock_advance(e->clock, SEC * 4 / 10);
        wait_for_lists(e, 2);
        assert_true(KC_TEST_WAIT_UNTIL(kc_fake_clock_sleepers(e->clock) == 1, 5000));
        kc_generic_pleg_stop(e->pleg);
        kc_generic_pleg_stop(e->pleg);
        kc_fake_clock_advance(e->clock, 10 * SEC);
        kc_test_sleep_ms(20);
        assert_int_equal(calls(e, "GetPods", ""), 2);
        /* A restart relists at once. */
        assert_int_equal(kc_generic_pleg_start(e->pleg), 0);
        wait_for_lists(e, 3);
        kc_generic_pleg_stop(e->pleg);
        assert_ptr_equal(kc_generic_pleg_watch(e->pleg), e->events);
        env_free(e);
}

struct relister {
        struct env *e;
        int n;
};

static void *relist_thread(void *arg)
{
        struct relister *r = arg;
        int i;

        for (i = 0; i < r->n; i++)
                kc_generic_pleg_relist(r->e->pleg);
        return NULL;
}

/* F-PLEG-18: relists forced from several threads are serialised. */
static void test_relists_serialised(void **state)
{
        struct env *e = env_new_full(1000, false);
        struct relister r = { e, 30 };
        pthread_t t[3];
        int i;

        (void)state;
        e->probe.real_delay = true;
        RUNTIME(e, "p1 c1:running");
        for (i = 0; i < 3; i++)
                assert_int_equal(pthread_create(&t[i], NULL, relist_thread, &r), 0);
        for (i = 0; i < 3; i++)
                pthread_join(t[i], NULL);
        assert_int_equal(atomic_load(&e->probe.max_in_flight), 1);
        assert_int_equal(calls(e, "GetPods", ""), 90);
        /* The single start event was sent once, not once per thread. */
        assert_string_equal(drain(e), "p1 ContainerStarted c1");
        env_free(e);
}

struct owner {
        struct env *e;
        int n;
        atomic_bool done;
};

static void *owe_thread(void *arg)
{
        struct owner *o = arg;
        char uid[32];
        int i;

        for (i = 0; i < o->n; i++) {
                snprintf(uid, sizeof(uid), "o%d", i);
                assert_int_equal(kc_generic_pleg_owe_sync_mp(o->e->pleg, uid), 0);
        }
        atomic_store(&o->done, true);
        return NULL;
}

static void *flush_thread(void *arg)
{
        struct owner *o = arg;

        while (!atomic_load(&o->done))
                (void)kc_generic_pleg_flush_owed_mp(o->e->pleg);
        return NULL;
}

/*
 * D1 across threads (run under TSan too): pods owed from one thread while
 * another relists and a third flushes (EventedPLEG's consumer and cache
 * threads against the relist thread) each get exactly one PodSync.
 */
static void test_owe_sync_concurrent(void **state)
{
        struct env *e = env_new_full(1000, false);
        struct relister r = { e, 20 };
        struct owner o = { .e = e, .n = 300 };
        bool seen[300] = { false };
        pthread_t t[3];
        void *item;
        int i, n = 0;

        (void)state;
        atomic_init(&o.done, false);
        e->probe.real_delay = true;
        assert_int_equal(pthread_create(&t[0], NULL, relist_thread, &r), 0);
        assert_int_equal(pthread_create(&t[1], NULL, owe_thread, &o), 0);
        assert_int_equal(pthread_create(&t[2], NULL, flush_thread, &o), 0);
        for (i = 0; i < 3; i++)
                pthread_join(t[i], NULL);
        assert_int_equal(kc_generic_pleg_flush_owed_mp(e->pleg), 0);
        while (kc_chan_pop_sc(e->events, &item, 0) == 0) {
                struct kc_pleg_event *ev = item;

                assert_int_equal(ev->type, KC_PLEG_POD_SYNC);
                assert_int_equal(ev->pod_id[0], 'o');
                i = atoi(ev->pod_id + 1);
                assert_true(i >= 0 && i < o.n);
                assert_false(seen[i]);
                seen[i] = true;
                n++;
                kc_pleg_event_free(ev);
        }
        assert_int_equal(n, o.n);
        env_free(e);
}

static char *cached_ips(struct env *e, const char *uid)
{
        static char out[128];
        struct kc_pod_status *s = NULL;
        char *err = NULL;
        size_t i, len = 0;

        assert_true(kc_pod_cache_get(e->cache, uid, &s, &err) >= 0);
        out[0] = '\0';
        for (i = 0; s && i < s->n_ips; i++)
                len += snprintf(out + len, sizeof(out) - len, "%s%s", i ? "," : "", s->ips[i]);
        kc_pod_status_unref(s);
        free(err);
        return out;
}

/* F-PLEG-19: a status without IPs keeps the cached IPs unless a sandbox is READY. */
static void test_ip_preservation(void **state)
{
        struct env *e = env_new();

        (void)state;
        RUNTIME(e, "p1 c1:running @10.0.0.1 @fd00::1", "p2 c2:running | s2:running @10.0.0.2");
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(cached_ips(e, "p1"), "10.0.0.1,fd00::1");
        assert_string_equal(cached_ips(e, "p2"), "10.0.0.2");
        /* Both lose their IPs; p1 has no sandbox at all, p2's sandbox is still READY. */
        RUNTIME(e, "p1 c1:exited", "p2 c2:exited | s2:running");
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "p1 ContainerStarted c1;p2 ContainerStarted c2;"
                                      "p2 ContainerStarted s2;p1 ContainerDied c1;"
                                      "p2 ContainerDied c2");
        assert_string_equal(cached_ips(e, "p1"), "10.0.0.1,fd00::1");
        assert_string_equal(cached_ips(e, "p2"), "");
        /* New IPs always win. */
        RUNTIME(e, "p1 c1:running @10.0.0.9");
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(cached_ips(e, "p1"), "10.0.0.9");
        /* A failed inspection caches no IPs (the error entry has none to keep). */
        RUNTIME(e, "p1 c1:exited");
        kc_sim_inject_fault(e->sim, "GetPodStatus", "p1", "boom", 1);
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(cached_ips(e, "p1"), "");
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(cached_ips(e, "p1"), "");
        env_free(e);
}

/* F-PLEG-20: a delivered ContainerDied logs the container's exit code. */
static void test_died_logs_exit_code(void **state)
{
        struct env *e = env_new();
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        (void)state;
        assert_non_null(f);
        kc_log_set_output(f);
        kc_log_set_verbosity(2);
        RUNTIME(e, "p1 c1:exited/42");
        kc_generic_pleg_relist(e->pleg);
        kc_log_set_verbosity(0);
        kc_log_set_output(NULL);
        fclose(f);
        assert_non_null(strstr(text, "containerID=\"c1\" exitCode=42"));
        free(text);
        assert_string_equal(drain(e), "p1 ContainerDied c1");
        env_free(e);
}

static double state_gauge(struct env *e, const char *label)
{
        double v = -1;

        if (kc_gauge_vec_value(e->metrics.running_containers, label, &v) < 0)
                return -1;
        return v;
}

/* F-PLEG-21: running gauges; states absent this round keep their value. */
static void test_running_gauges(void **state)
{
        struct env *e = env_new();

        (void)state;
        RUNTIME(e, "p1 a:running b:exited | s1:running s0:exited", "p2 c:running | s2:exited",
                "p3 d:created");
        kc_generic_pleg_relist(e->pleg);
        assert_true(kc_gauge_value(e->metrics.running_pods) == 1.0);
        assert_true(state_gauge(e, "running") == 2.0);
        assert_true(state_gauge(e, "exited") == 1.0);
        assert_true(state_gauge(e, "created") == 1.0);
        assert_true(state_gauge(e, "unknown") == -1);
        RUNTIME(e, "p1 a:running");
        kc_generic_pleg_relist(e->pleg);
        assert_true(kc_gauge_value(e->metrics.running_pods) == 0.0);
        assert_true(state_gauge(e, "running") == 1.0);
        assert_true(state_gauge(e, "exited") == 1.0); /* stale, as upstream */
        env_free(e);
}

/* F-PLEG-22: relist duration on every relist (failures too), interval from
 * the second successful one, last-seen set by Healthy(). */
static void test_relist_histograms(void **state)
{
        struct env *e = env_new();

        (void)state;
        e->probe.list_cost = SEC / 4;
        kc_generic_pleg_relist(e->pleg);
        assert_int_equal(kc_histogram_count(e->metrics.pleg_relist_duration), 1);
        assert_true(kc_histogram_sum(e->metrics.pleg_relist_duration) == 0.25);
        assert_int_equal(kc_histogram_count(e->metrics.pleg_relist_interval), 0);
        kc_fake_clock_advance(e->clock, SEC);
        kc_generic_pleg_relist(e->pleg);
        assert_int_equal(kc_histogram_count(e->metrics.pleg_relist_interval), 1);
        assert_true(kc_histogram_sum(e->metrics.pleg_relist_interval) == 1.25);
        kc_sim_inject_fault(e->sim, "GetPods", NULL, "down", 1);
        kc_generic_pleg_relist(e->pleg);
        assert_int_equal(kc_histogram_count(e->metrics.pleg_relist_duration), 3);
        assert_true(kc_gauge_value(e->metrics.pleg_last_seen) == 0.0);
        assert_true(kc_generic_pleg_healthy(e->pleg, NULL));
        /* Relist 2 started at T0 + 1.25 s. */
        assert_true(kc_gauge_value(e->metrics.pleg_last_seen) == 1700000001.25);
        env_free(e);
}

/* F-PLEG-23: with the gate on and EventedPLEG in use, the runtime's status
 * timestamp orders cache writes; a write refused by newer-wins skips the pod
 * (no events, record kept) until it is accepted. */
static void test_evented_timestamps(void **state)
{
        struct env *e = env_new_full(100, true);

        (void)state;
        kc_pod_cache_set_newer_wins(e->cache, true);
        e->evented = true;
        e->probe.status_ts = T0 + 500 * SEC;
        RUNTIME(e, "p1 c1:running");
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "p1 ContainerStarted c1");
        assert_true(cache_ready(e, "p1", T0 + 499 * SEC));
        assert_false(cache_ready(e, "p1", T0 + 500 * SEC));
        /* The runtime now reports an older timestamp: refused, events held back. */
        e->probe.status_ts = T0 + 100 * SEC;
        RUNTIME(e, "p1 c1:exited");
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "");
        e->probe.status_ts = T0 + 600 * SEC;
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "p1 ContainerDied c1");
        /* Not in use (fallen back): the kubelet clock (T0) is older than the
         * runtime-stamped entry, so newer-wins still refuses the write. */
        e->evented = false;
        RUNTIME(e, "p1 c1:running");
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "");
        env_free(e);
}

/* F-PLEG-23: a zero runtime timestamp falls back to the kubelet clock. */
static void test_evented_zero_timestamp(void **state)
{
        struct env *e = env_new_full(100, true);

        (void)state;
        e->evented = true;
        RUNTIME(e, "p1 c1:running");
        kc_fake_clock_advance(e->clock, 7 * SEC);
        kc_generic_pleg_relist(e->pleg);
        assert_true(cache_ready(e, "p1", T0 + 7 * SEC - 1));
        assert_false(cache_ready(e, "p1", T0 + 7 * SEC));
        env_free(e);
}

/* A runtime that lists exactly the kc_pod objects a test hands it, in its order. */
struct scripted {
        struct kc_pod *pods[16];
        size_t n;
        unsigned fail_status; /* GetPodStatus calls still to fail */
};

static int scripted_get_pods(void *self, bool all, struct kc_pod_list *ret,
                             struct kc_runtime_error *err)
{
        struct scripted *sc = self;
        size_t i;

        (void)all;
        (void)err;
        ret->pods = calloc(sc->n + 1, sizeof(*ret->pods));
        assert_non_null(ret->pods);
        for (i = 0; i < sc->n; i++)
                ret->pods[i] = kc_pod_ref(sc->pods[i]);
        ret->n = sc->n;
        return 0;
}

static int scripted_get_pod_status(void *self, const char *uid, const char *name, const char *ns,
                                   struct kc_pod_status **ret, struct kc_runtime_error *err)
{
        struct scripted *sc = self;

        if (sc->fail_status > 0) {
                sc->fail_status--;
                return kc_runtime_error_set(err, -EIO, KC_RUNTIME_UNAVAILABLE, "status failed");
        }
        return kc_pod_status_new(
                &(struct kc_pod_status){ .id = uid, .name = name, .namespace = ns }, ret);
}

static const struct kc_pod_runtime_ops scripted_ops = {
        .get_pods = scripted_get_pods,
        .get_pod_status = scripted_get_pod_status,
};

/* Sets the listing (taking the references); the previous one is dropped. */
static void scripted_set(struct scripted *sc, size_t n, struct kc_pod *const *pods)
{
        size_t i;

        for (i = 0; i < sc->n; i++)
                kc_pod_unref(sc->pods[i]);
        for (i = 0; i < n; i++)
                sc->pods[i] = pods[i];
        sc->n = n;
}

/* A fresh pod @uid: container "<uid>c<i>" in states[i], one sandbox "<uid>s" in @sb. */
static struct kc_pod *fresh_pod(const char *uid, size_t n, const enum kc_container_state *states,
                                enum kc_container_state sb)
{
        struct kc_container c[4], sbx;
        char ids[5][32];
        struct kc_pod *p = NULL;
        size_t i;

        assert_true(n <= 4);
        for (i = 0; i < n; i++) {
                snprintf(ids[i], sizeof(ids[i]), "%sc%zu", uid, i);
                c[i] = (struct kc_container){ .id = ids[i], .name = ids[i], .state = states[i] };
        }
        snprintf(ids[4], sizeof(ids[4]), "%ss", uid);
        sbx = (struct kc_container){ .id = ids[4], .name = ids[4], .state = sb };
        assert_int_equal(kc_pod_new(&(struct kc_pod){ .id = uid,
                                                      .name = uid,
                                                      .namespace = "ns",
                                                      .containers = c,
                                                      .n_containers = n,
                                                      .sandboxes = &sbx,
                                                      .n_sandboxes = 1 },
                                    &p),
                         0);
        return p;
}

/*
 * Issue 18: records are found by listing position when the pod there has the
 * same UID; a reordered listing, pods rebuilt as new objects, and pods
 * listed in the same objects must each give the events the UIDs call for.
 */
static void test_records_follow_uids_not_positions(void **state)
{
        const enum kc_container_state run[] = { KC_CONTAINER_STATE_RUNNING },
                                      ex[] = { KC_CONTAINER_STATE_EXITED };
        struct env *e = env_new();
        struct scripted sc = { 0 };
        struct kc_pod *a = fresh_pod("a", 1, run, KC_CONTAINER_STATE_RUNNING);
        struct kc_pod *b = fresh_pod("b", 1, run, KC_CONTAINER_STATE_RUNNING);

        (void)state;
        e->probe.inner = (struct kc_pod_runtime){ &scripted_ops, &sc };
        scripted_set(&sc, 2, (struct kc_pod *[]){ kc_pod_ref(a), kc_pod_ref(b) });
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "a ContainerStarted ac0;a ContainerStarted as;"
                                      "b ContainerStarted bc0;b ContainerStarted bs");
        /* Swapped, b's container exited (a new object), a an equal new object. */
        scripted_set(&sc, 2,
                     (struct kc_pod *[]){ fresh_pod("b", 1, ex, KC_CONTAINER_STATE_RUNNING),
                                          fresh_pod("a", 1, run, KC_CONTAINER_STATE_RUNNING) });
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "b ContainerDied bc0");
        /* Swapped back, the same objects: nothing happened. */
        scripted_set(&sc, 2, (struct kc_pod *[]){ kc_pod_ref(sc.pods[1]), kc_pod_ref(sc.pods[0]) });
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "");
        /* a goes, a new c takes its position, then a comes back (exited) at b's. */
        scripted_set(&sc, 2,
                     (struct kc_pod *[]){ fresh_pod("c", 1, run, KC_CONTAINER_STATE_RUNNING),
                                          kc_pod_ref(sc.pods[1]) });
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "a ContainerDied ac0;a ContainerRemoved ac0;"
                                      "a ContainerDied as;a ContainerRemoved as;"
                                      "c ContainerStarted cc0;c ContainerStarted cs");
        scripted_set(&sc, 2,
                     (struct kc_pod *[]){ kc_pod_ref(sc.pods[0]),
                                          fresh_pod("a", 1, ex, KC_CONTAINER_STATE_EXITED) });
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e),
                            "b ContainerRemoved bc0;b ContainerDied bs;"
                            "b ContainerRemoved bs;a ContainerDied ac0;a ContainerDied as");
        scripted_set(&sc, 0, NULL);
        kc_pod_unref(a);
        kc_pod_unref(b);
        env_free(e);
}

/*
 * Issue 18, F-PLEG-11: the relist visits only records with work, and a pod
 * due for reinspection has some even when it is listed as the very object
 * its record holds (no events then): its cached error goes.
 */
static void test_reinspects_pod_listed_as_before(void **state)
{
        const enum kc_container_state run[] = { KC_CONTAINER_STATE_RUNNING },
                                      ex[] = { KC_CONTAINER_STATE_EXITED };
        struct env *e = env_new();
        struct scripted sc = { 0 };
        struct kc_pod *a = fresh_pod("a", 1, run, KC_CONTAINER_STATE_RUNNING);
        struct kc_pod_status *s = NULL;
        char *err = NULL;

        (void)state;
        e->probe.inner = (struct kc_pod_runtime){ &scripted_ops, &sc };
        scripted_set(&sc, 1, (struct kc_pod *[]){ kc_pod_ref(a) });
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "a ContainerStarted ac0;a ContainerStarted as");
        /* Its container exits; the inspection fails: the error is cached, the record kept. */
        sc.fail_status = 1;
        scripted_set(&sc, 1,
                     (struct kc_pod *[]){ fresh_pod("a", 1, ex, KC_CONTAINER_STATE_RUNNING) });
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "");
        assert_int_equal(kc_pod_cache_get(e->cache, "a", &s, &err), 1);
        assert_string_equal(err, "status failed");
        kc_pod_status_unref(s);
        free(err);
        err = NULL;
        /* Listed as the object its record had: no events, but inspected again. */
        scripted_set(&sc, 1, (struct kc_pod *[]){ kc_pod_ref(a) });
        kc_generic_pleg_relist(e->pleg);
        assert_string_equal(drain(e), "");
        assert_int_equal(kc_pod_cache_get(e->cache, "a", &s, &err), 1);
        assert_null(err);
        assert_string_equal(s->id, "a");
        kc_pod_status_unref(s);
        scripted_set(&sc, 0, NULL);
        kc_pod_unref(a);
        env_free(e);
}

/*
 * Issue 18, F-PLEG-21: the running gauges are kept as each record's pod
 * changes; over random listings (pods kept as the same objects, rebuilt,
 * dropped, reordered, listed twice) they must equal a count of the listing.
 */
static void test_running_gauges_follow_listings(void **state)
{
        static const char *const uids[] = { "p0", "p1", "p2", "p3", "p4", "p5" };
        static const char *const labels[] = { "created", "running", "exited", "unknown" };
        struct kc_pod *last[6] = { NULL };
        double want[4] = { -1, -1, -1, -1 };
        struct env *e = env_new();
        struct scripted sc = { 0 };
        unsigned seed = 21, round;
        size_t i, k;

        (void)state;
        e->probe.inner = (struct kc_pod_runtime){ &scripted_ops, &sc };
        for (round = 0; round < 300; round++) {
                struct kc_pod *list[16];
                size_t n = 0, per_state[4] = { 0 }, running = 0;

                for (i = 0; i < 6; i++) {
                        enum kc_container_state st[4];
                        size_t nc = (size_t)rand_r(&seed) % 5;

                        if (rand_r(&seed) % 10 < 3)
                                continue;
                        if (!last[i] || rand_r(&seed) % 2) {
                                for (k = 0; k < nc; k++)
                                        st[k] = (enum kc_container_state)(rand_r(&seed) % 4);
                                kc_pod_unref(last[i]);
                                last[i] = fresh_pod(uids[i], nc, st,
                                                    rand_r(&seed) % 2 ? KC_CONTAINER_STATE_RUNNING
                                                                      : KC_CONTAINER_STATE_EXITED);
                        }
                        list[n++] = kc_pod_ref(last[i]);
                        if (rand_r(&seed) % 10 == 0)
                                list[n++] = kc_pod_ref(last[i]);
                }
                for (i = n; i > 1; i--) {
                        struct kc_pod *t;

                        k = (size_t)rand_r(&seed) % i;
                        t = list[i - 1];
                        list[i - 1] = list[k];
                        list[k] = t;
                }
                for (i = 0; i < n; i++) {
                        for (k = 0; k < list[i]->n_containers; k++)
                                per_state[list[i]->containers[k].state]++;
                        running += list[i]->sandboxes[0].state == KC_CONTAINER_STATE_RUNNING;
                }
                scripted_set(&sc, n, list);
                assert_int_equal(kc_generic_pleg_relist(e->pleg), 0);
                (void)drain(e);
                for (k = 0; k < 4; k++) {
                        if (per_state[k] > 0)
                                want[k] = (double)per_state[k];
                        assert_true(state_gauge(e, labels[k]) == want[k]);
                }
                assert_true(kc_gauge_value(e->metrics.running_pods) == (double)running);
        }
        scripted_set(&sc, 0, NULL);
        for (i = 0; i < 6; i++)
                kc_pod_unref(last[i]);
        env_free(e);
}

/* The PLEG interface (start, stop, watch, healthy, relist, update) reaches GenericPLEG. */
static void test_pleg_interface(void **state)
{
        struct env *e = env_new();
        struct kc_pleg p = kc_generic_pleg_as_pleg(e->pleg);
        char *err = NULL;
        void *item = NULL;

        (void)state;
        RUNTIME(e, "p1 c1:running");
        assert_ptr_equal(p.ops->watch(p.self), e->events);
        assert_false(p.ops->healthy(p.self, &err));
        assert_string_equal(err, "pleg has yet to be successful");
        free(err);
        assert_int_equal(p.ops->relist(p.self), 0);
        assert_string_equal(drain(e), "p1 ContainerStarted c1");
        assert_true(p.ops->healthy(p.self, NULL));
        p.ops->update(p.self, SEC, SEC);
        kc_fake_clock_advance(e->clock, 2 * SEC);
        assert_false(p.ops->healthy(p.self, &err));
        assert_string_equal(err, "pleg was last seen active 2s ago; threshold is 1s");
        free(err);
        RUNTIME(e, "p1 c1:exited");
        assert_int_equal(p.ops->start(p.self), 0);
        assert_int_equal(kc_chan_pop_sc(e->events, &item, 5000), 0);
        assert_string_equal(((struct kc_pleg_event *)item)->data, "c1");
        assert_int_equal(((struct kc_pleg_event *)item)->type, KC_PLEG_CONTAINER_DIED);
        kc_pleg_event_free(item);
        p.ops->stop(p.self);
        env_free(e);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_lists_all),
                cmocka_unit_test(test_inspects_only_changed_pods),
                cmocka_unit_test(test_pod_gone_deletes_cache_entry),
                cmocka_unit_test(test_inspection_failure_defers_events),
                cmocka_unit_test(test_changed_refreshes_but_is_not_sent),
                cmocka_unit_test(test_channel_full),
                cmocka_unit_test(test_resync_waits_for_room),
                cmocka_unit_test(test_owe_sync),
                cmocka_unit_test(test_owe_sync_concurrent),
                cmocka_unit_test(test_update_time_after_pod_writes),
                cmocka_unit_test(test_listed_status_dated_before_listing),
                cmocka_unit_test(test_listed_status_not_while_evented),
                cmocka_unit_test(test_list_failure_changes_nothing),
                cmocka_unit_test(test_health),
                cmocka_unit_test(test_periodic_sliding),
                cmocka_unit_test(test_relists_serialised),
                cmocka_unit_test(test_ip_preservation),
                cmocka_unit_test(test_died_logs_exit_code),
                cmocka_unit_test(test_running_gauges),
                cmocka_unit_test(test_relist_histograms),
                cmocka_unit_test(test_evented_timestamps),
                cmocka_unit_test(test_evented_zero_timestamp),
                cmocka_unit_test(test_pleg_interface),
                cmocka_unit_test(test_records_follow_uids_not_positions),
                cmocka_unit_test(test_reinspects_pod_listed_as_before),
                cmocka_unit_test(test_running_gauges_follow_listings),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
