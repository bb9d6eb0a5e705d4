/* SPDX-License-Identifier: Apache-2.0 */
/*
 * EventedPLEG (UPSTREAM.md §4; docs/deviations.md D12–D14): the CRI event to
 * PLEG event mapping, the cache rules, IP preservation, metrics, health, and
 * the stream's retries, fallback and recovery, on a fake clock.
 *
 * The event source is a fake written here: the test decides whether opening
 * fails, succeeds or is refused at once, delivers events on the stream and
 * breaks it. The generic PLEG runs over a fake kc_pod_runtime that counts
 * the relists and lists no pods, or the one pod a test gives it.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

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
#include "pleg/evented.h"
#include "pleg/generic.h"
#include "runtime/cache.h"
#include "runtime/container.h"
#include "runtime/cri.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"

#define T0 (INT64_C(1700000000) * KC_NSEC_PER_SEC)
#define SEC KC_NSEC_PER_SEC
#define MSEC KC_NSEC_PER_MSEC
#define WAIT_MS 10000

/* ------------------------------------------------------------------------ */
/* Fake runtime: counted relists, no pods or one                             */

struct fake_runtime {
        atomic_int relists;
        struct kc_pod *pod; /* listed when set; the test owns it */
        /* GetPodStatus raises in_status, then waits while hold is set. */
        atomic_bool hold, in_status;
};

static int fake_get_pods(void *self, bool all, struct kc_pod_list *ret,
                         struct kc_runtime_error *err)
{
        struct fake_runtime *rt = self;
        struct kc_pod **pods = NULL;

        (void)all;
        (void)err;
        atomic_fetch_add(&rt->relists, 1);
        if (rt->pod) {
                pods = calloc(1, sizeof(*pods));
                if (!pods)
                        return -ENOMEM;
                pods[0] = kc_pod_ref(rt->pod);
        }
        *ret = (struct kc_pod_list){ .pods = pods, .n = pods ? 1 : 0 };
        return 0;
}

static int fake_get_pod_status(void *self, const char *uid, const char *name, const char *ns,
                               struct kc_pod_status **ret, struct kc_runtime_error *err)
{
        struct fake_runtime *rt = self;

        (void)name;
        (void)ns;
        (void)err;
        atomic_store(&rt->in_status, true);
        assert_true(KC_TEST_WAIT_UNTIL(!atomic_load(&rt->hold), WAIT_MS));
        return kc_pod_status_new_default(uid, ret);
}

static const struct kc_pod_runtime_ops fake_runtime_ops = {
        .get_pods = fake_get_pods,
        .get_pod_status = fake_get_pod_status,
};

/* ------------------------------------------------------------------------ */
/* Fake event source                                                          */

enum source_mode {
        SOURCE_FAIL,   /* open() fails (UNAVAILABLE) */
        SOURCE_OK,     /* open() succeeds; the stream stays until broken or closed */
        SOURCE_REFUSE, /* open() succeeds and the stream ends at once (UNIMPLEMENTED) */
};

#define MAX_OPENS 64

struct fake_source {
        struct kc_clock *clock;
        /* Held while a callback runs: none runs once close() returned. */
        pthread_mutex_t mu;
        enum source_mode mode;
        int opens;
        int64_t open_times[MAX_OPENS];
        int closes;
        bool active;
        void (*on_event)(void *ud, const struct kc_container_event *ev);
        void (*on_close)(void *ud, int r, const struct kc_runtime_error *err);
        void *ud;
};

static int fake_open(void *self, void (*on_event)(void *ud, const struct kc_container_event *ev),
                     void (*on_close)(void *ud, int r, const struct kc_runtime_error *err),
                     void *ud, void **ret_handle, struct kc_runtime_error *err)
{
        struct fake_source *s = self;
        int r = 0;

        pthread_mutex_lock(&s->mu);
        assert_false(s->active);
        if (s->opens < MAX_OPENS)
                s->open_times[s->opens] = kc_clock_now(s->clock);
        s->opens++;
        switch (s->mode) {
        case SOURCE_FAIL:
                r = kc_runtime_error_set(err, -ECONNREFUSED, KC_RUNTIME_UNAVAILABLE,
                                         "connection refused");
                break;
        case SOURCE_OK:
                s->active = true;
                s->on_event = on_event;
                s->on_close = on_close;
                s->ud = ud;
                *ret_handle = s;
                break;
        case SOURCE_REFUSE: {
                struct kc_runtime_error e = { KC_RUNTIME_UNIMPLEMENTED, "unknown method" };

                *ret_handle = s;
                on_close(ud, -EOPNOTSUPP, &e);
                break;
        }
        }
        pthread_mutex_unlock(&s->mu);
        return r;
}

static void fake_close(void *self, void *handle)
{
        struct fake_source *s = self;
        struct kc_runtime_error e = { KC_RUNTIME_CANCELLED, "cancelled" };

        assert_ptr_equal(handle, s);
        pthread_mutex_lock(&s->mu);
        s->closes++;
        if (s->active) {
                s->active = false;
                s->on_close(s->ud, -ECANCELED, &e);
        }
        pthread_mutex_unlock(&s->mu);
}

static const struct kc_container_event_source_ops fake_source_ops = {
        .open = fake_open,
        .close = fake_close,
};

static void source_set_mode(struct fake_source *s, enum source_mode m)
{
        pthread_mutex_lock(&s->mu);
        s->mode = m;
        pthread_mutex_unlock(&s->mu);
}

static bool source_active(struct fake_source *s)
{
        bool a;

        pthread_mutex_lock(&s->mu);
        a = s->active;
        pthread_mutex_unlock(&s->mu);
        return a;
}

static int source_opens(struct fake_source *s)
{
        int n;

        pthread_mutex_lock(&s->mu);
        n = s->opens;
        pthread_mutex_unlock(&s->mu);
        return n;
}

static int64_t source_open_time(struct fake_source *s, int i)
{
        int64_t t;

        pthread_mutex_lock(&s->mu);
        t = s->open_times[i];
        pthread_mutex_unlock(&s->mu);
        return t;
}

/* Delivers @p ev on the open stream; false when there is none. */
static bool source_deliver(struct fake_source *s, const struct kc_container_event *ev)
{
        bool ok;

        pthread_mutex_lock(&s->mu);
        ok = s->active;
        if (ok)
                s->on_event(s->ud, ev);
        pthread_mutex_unlock(&s->mu);
        return ok;
}

/* The runtime drops the stream. */
static void source_break(struct fake_source *s)
{
        struct kc_runtime_error e = { KC_RUNTIME_UNAVAILABLE, "connection reset" };

        pthread_mutex_lock(&s->mu);
        assert_true(s->active);
        s->active = false;
        s->on_close(s->ud, -ECONNRESET, &e);
        pthread_mutex_unlock(&s->mu);
}

/* ------------------------------------------------------------------------ */
/* CRI events                                                                 */

struct cspec {
        const char *id;
        enum kc_container_state state;
        int64_t created_at;
};

struct evb {
        char sandbox_id[64], name[64];
        struct kc_pod_sandbox sb;
        struct kc_cri_container cs[8];
        struct kc_label hash[8];
        struct kc_container_event ev;
};

/* An event for pod @p uid whose sandbox is "sandbox-<uid>". */
static const struct kc_container_event *mkev(struct evb *b, enum kc_container_event_type type,
                                             const char *uid, const char *container_id,
                                             int64_t created_at, enum kc_sandbox_state sb_state,
                                             const char *ip, const struct cspec *cs, size_t n)
{
        size_t i;

        memset(b, 0, sizeof(*b));
        assert_true(n <= KC_ELEMENTSOF(b->cs));
        snprintf(b->sandbox_id, sizeof(b->sandbox_id), "sandbox-%s", uid);
        snprintf(b->name, sizeof(b->name), "name-%s", uid);
        b->sb = (struct kc_pod_sandbox){
                .id = b->sandbox_id,
                .metadata = { .name = b->name, .uid = uid, .namespace = "default", .attempt = 0 },
                .state = sb_state,
                .created_at = T0 - 10 * SEC,
                .ip = ip,
        };
        for (i = 0; i < n; i++) {
                b->hash[i] = (struct kc_label){ KC_ANNOTATION_CONTAINER_HASH, "1f" };
                b->cs[i] = (struct kc_cri_container){
                        .id = cs[i].id,
                        .pod_sandbox_id = NULL,
                        .metadata = { .name = cs[i].id, .attempt = 2 },
                        .image = "busybox",
                        .state = cs[i].state,
                        .created_at = cs[i].created_at,
                        .exit_code = cs[i].state == KC_CONTAINER_STATE_EXITED ? 3 : 0,
                        .annotations = &b->hash[i],
                        .n_annotations = 1,
                };
        }
        b->ev = (struct kc_container_event){
                .container_id = container_id,
                .type = type,
                .created_at = created_at,
                .pod_sandbox_id = b->sandbox_id,
                .pod_uid = uid,
                .pod_name = b->name,
                .pod_namespace = "default",
                .sandbox = &b->sb,
                .containers = b->cs,
                .n_containers = n,
        };
        return &b->ev;
}

/* A pod with one container "c1" in @p state. */
static const struct kc_container_event *mkev1(struct evb *b, enum kc_container_event_type type,
                                              const char *uid, int64_t created_at,
                                              enum kc_container_state state)
{
        const struct cspec cs[] = { { "c1", state, T0 } };

        return mkev(b, type, uid, "c1", created_at, KC_SANDBOX_STATE_READY, "10.0.0.1", cs, 1);
}

/* ------------------------------------------------------------------------ */
/* Fixture                                                                    */

struct env {
        struct kc_clock *clock;
        struct fake_runtime rt;
        struct fake_source src;
        struct kc_chan *events;
        struct kc_pod_cache *cache;
        struct kc_metrics_registry *reg;
        struct kc_kubelet_metrics m;
        struct kc_generic_pleg *generic;
        struct kc_evented_pleg *ev;
};

/* The generic PLEG is built first, so its callback reaches the PLEG through the env. */
static bool env_in_use(void *userdata)
{
        return kc_evented_pleg_in_use_cb(((struct env *)userdata)->ev);
}

struct env_opts {
        unsigned capacity;
        int64_t cache_update_period;
        int64_t reprobe_period;
        bool no_metrics;
};

static struct env *env_new(const struct env_opts *o)
{
        struct env *e = calloc(1, sizeof(*e));
        struct kc_generic_pleg_config gcfg;
        struct kc_evented_pleg_config ecfg;

        assert_non_null(e);
        assert_int_equal(kc_fake_clock_new(&e->clock, T0), 0);
        assert_int_equal(
                kc_chan_new(&e->events, o->capacity ? o->capacity : 4096, kc_pleg_event_free_item),
                0);
        assert_int_equal(kc_pod_cache_new(&e->cache), 0);
        assert_int_equal(kc_metrics_registry_new(&e->reg), 0);
        assert_int_equal(kc_kubelet_metrics_register(e->reg, &e->m), 0);
        atomic_init(&e->rt.relists, 0);
        e->src.clock = e->clock;
        e->src.mode = SOURCE_FAIL;
        pthread_mutex_init(&e->src.mu, NULL);

        gcfg = (struct kc_generic_pleg_config){
                .runtime = { &fake_runtime_ops, &e->rt },
                .events = e->events,
                .cache = e->cache,
                .clock = e->clock,
                .metrics = o->no_metrics ? NULL : &e->m,
                .relist_period_ns = KC_EVENTED_GENERIC_RELIST_PERIOD,
                .relist_threshold_ns = KC_EVENTED_GENERIC_RELIST_THRESHOLD,
                .evented_in_use = env_in_use,
                .evented_userdata = e,
        };
        assert_int_equal(kc_generic_pleg_new(&gcfg, &e->generic), 0);
        ecfg = (struct kc_evented_pleg_config){
                .generic = e->generic,
                .source = { &fake_source_ops, &e->src },
                .events = e->events,
                .cache = e->cache,
                .clock = e->clock,
                .metrics = o->no_metrics ? NULL : &e->m,
                .cache_update_period_ns = o->cache_update_period,
                .reprobe_period_ns = o->reprobe_period,
        };
        assert_int_equal(kc_evented_pleg_new(&ecfg, &e->ev), 0);
        return e;
}

static void env_free(struct env *e)
{
        kc_evented_pleg_free(e->ev);
        kc_generic_pleg_free(e->generic);
        kc_pod_cache_free(e->cache);
        kc_chan_free(e->events);
        kc_metrics_registry_free(e->reg);
        pthread_mutex_destroy(&e->src.mu);
        kc_clock_free(e->clock);
        free(e);
}

static struct kc_evented_pleg_stats stats(struct env *e)
{
        struct kc_evented_pleg_stats s;

        kc_evented_pleg_stats(e->ev, &s);
        return s;
}

static int relists(struct env *e)
{
        return atomic_load(&e->rt.relists);
}

static size_t sleepers(struct env *e)
{
        return kc_fake_clock_sleepers(e->clock);
}

/* Pops the next PLEG event and checks it. */
static void expect_event(struct env *e, const char *uid, enum kc_pleg_event_type type,
                         const char *data)
{
        void *item = NULL;
        struct kc_pleg_event *pe;

        assert_int_equal(kc_chan_pop_sc(e->events, &item, 0), 0);
        pe = item;
        assert_string_equal(pe->pod_id, uid);
        assert_string_equal(kc_pleg_event_type_to_string(pe->type),
                            kc_pleg_event_type_to_string(type));
        assert_string_equal(pe->data, data);
        kc_pleg_event_free(pe);
}

static void expect_no_event(struct env *e)
{
        void *item = NULL;

        assert_int_equal(kc_chan_pop_sc(e->events, &item, 0), -EAGAIN);
}

static double counter(struct kc_counter *c)
{
        return kc_counter_value(c);
}

/* The cached status of @p uid (a miss fails the test unless @p may_miss). */
static struct kc_pod_status *cached(struct env *e, const char *uid, int *ret_found)
{
        struct kc_pod_status *s = NULL;
        char *err = NULL;
        int r = kc_pod_cache_get(e->cache, uid, &s, &err);

        assert_true(r >= 0);
        assert_null(err);
        *ret_found = r;
        return s;
}

/* ------------------------------------------------------------------------ */
/* processCRIEvents                                                           */

/* §4.5 step 7: CREATED → nothing, STARTED → Started, STOPPED → Died, DELETED → Died + Removed. */
static void test_mapping_table(void **state)
{
        struct env *e = env_new(&(struct env_opts){ 0 });
        struct evb b;

        (void)state;
        assert_int_equal(
                kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_CREATED, "p1",
                                                           T0 + 1, KC_CONTAINER_STATE_CREATED)),
                0);
        expect_no_event(e);
        assert_int_equal(
                kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STARTED, "p1",
                                                           T0 + 2, KC_CONTAINER_STATE_RUNNING)),
                1);
        expect_event(e, "p1", KC_PLEG_CONTAINER_STARTED, "c1");
        expect_no_event(e);
        assert_int_equal(
                kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STOPPED, "p1",
                                                           T0 + 3, KC_CONTAINER_STATE_EXITED)),
                1);
        expect_event(e, "p1", KC_PLEG_CONTAINER_DIED, "c1");
        expect_no_event(e);
        assert_int_equal(kc_evented_pleg_process_event(
                                 e->ev, mkev(&b, KC_CONTAINER_EVENT_DELETED, "p1", "c1", T0 + 4,
                                             KC_SANDBOX_STATE_READY, "10.0.0.1", NULL, 0)),
                         2);
        expect_event(e, "p1", KC_PLEG_CONTAINER_DIED, "c1");
        expect_event(e, "p1", KC_PLEG_CONTAINER_REMOVED, "c1");
        expect_no_event(e);
        env_free(e);
}

/* §4.7: created_at (ns) orders cache writes; an older event is refused and emits nothing. */
static void test_stale_event_refused(void **state)
{
        struct env *e = env_new(&(struct env_opts){ 0 });
        struct kc_pod_status *s, *d = NULL;
        char *err = NULL;
        struct evb b;
        int found;

        (void)state;
        assert_int_equal(
                kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STARTED, "p1",
                                                           T0 + 200, KC_CONTAINER_STATE_RUNNING)),
                1);
        expect_event(e, "p1", KC_PLEG_CONTAINER_STARTED, "c1");
        /* The entry's modification time is the event's created_at. */
        assert_int_equal(kc_pod_cache_try_get_newer_than(e->cache, "p1", T0 + 199, &d, &err), 0);
        kc_pod_status_unref(d);
        d = NULL;
        assert_int_equal(kc_pod_cache_try_get_newer_than(e->cache, "p1", T0 + 200, &d, &err),
                         -EAGAIN);

        /* Older: refused, no event, the cache keeps the running container. */
        assert_int_equal(
                kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STOPPED, "p1",
                                                           T0 + 100, KC_CONTAINER_STATE_EXITED)),
                0);
        expect_no_event(e);
        s = cached(e, "p1", &found);
        assert_int_equal(found, 1);
        assert_int_equal(s->n_containers, 1);
        assert_int_equal(s->containers[0].state, KC_CONTAINER_STATE_RUNNING);
        kc_pod_status_unref(s);

        /* Equal: overwrites. */
        assert_int_equal(
                kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STOPPED, "p1",
                                                           T0 + 200, KC_CONTAINER_STATE_EXITED)),
                1);
        expect_event(e, "p1", KC_PLEG_CONTAINER_DIED, "c1");
        s = cached(e, "p1", &found);
        assert_int_equal(s->containers[0].state, KC_CONTAINER_STATE_EXITED);
        kc_pod_status_unref(s);
        env_free(e);
}

/* §4.5 step 6: DELETED of the sandbox deletes the entry; of a container it does not. */
static void test_deleted_sandbox_deletes_entry(void **state)
{
        struct env *e = env_new(&(struct env_opts){ 0 });
        struct kc_pod_status *s;
        struct evb b;
        int found;

        (void)state;
        assert_int_equal(
                kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STARTED, "p1",
                                                           T0 + 10, KC_CONTAINER_STATE_RUNNING)),
                1);
        expect_event(e, "p1", KC_PLEG_CONTAINER_STARTED, "c1");

        /* A container's DELETED, even older than the entry: events, entry kept. */
        assert_int_equal(kc_evented_pleg_process_event(
                                 e->ev, mkev(&b, KC_CONTAINER_EVENT_DELETED, "p1", "c1", T0 + 5,
                                             KC_SANDBOX_STATE_READY, "10.0.0.1", NULL, 0)),
                         2);
        expect_event(e, "p1", KC_PLEG_CONTAINER_DIED, "c1");
        expect_event(e, "p1", KC_PLEG_CONTAINER_REMOVED, "c1");
        s = cached(e, "p1", &found);
        assert_int_equal(found, 1);
        assert_int_equal(s->n_containers, 1); /* not rewritten by the DELETED */
        kc_pod_status_unref(s);

        /* The sandbox's DELETED: the entry goes. */
        assert_int_equal(kc_evented_pleg_process_event(
                                 e->ev, mkev(&b, KC_CONTAINER_EVENT_DELETED, "p1", "sandbox-p1",
                                             T0 + 20, KC_SANDBOX_STATE_NOTREADY, NULL, NULL, 0)),
                         2);
        expect_event(e, "p1", KC_PLEG_CONTAINER_DIED, "sandbox-p1");
        expect_event(e, "p1", KC_PLEG_CONTAINER_REMOVED, "sandbox-p1");
        s = cached(e, "p1", &found);
        assert_int_equal(found, 0);
        kc_pod_status_unref(s);
        env_free(e);
}

/* §4.5 step 1: an event without a sandbox status or its metadata is skipped. */
static void test_malformed_event_skipped(void **state)
{
        struct env *e = env_new(&(struct env_opts){ 0 });
        struct kc_container_event ev;
        struct kc_pod_status *s;
        struct evb b;
        int found;

        (void)state;
        ev = *mkev1(&b, KC_CONTAINER_EVENT_STARTED, "p1", T0, KC_CONTAINER_STATE_RUNNING);
        ev.sandbox = NULL;
        ev.pod_uid = ev.pod_name = ev.pod_namespace = ev.pod_sandbox_id = NULL;
        assert_int_equal(kc_evented_pleg_process_event(e->ev, &ev), -EBADMSG);

        /* A sandbox without metadata. */
        ev = *mkev1(&b, KC_CONTAINER_EVENT_STARTED, "p1", T0, KC_CONTAINER_STATE_RUNNING);
        b.sb.metadata = (struct kc_pod_sandbox_metadata){ 0 };
        ev.pod_uid = ev.pod_name = ev.pod_namespace = NULL;
        assert_int_equal(kc_evented_pleg_process_event(e->ev, &ev), -EBADMSG);

        /* A type out of range. */
        ev = *mkev1(&b, KC_CONTAINER_EVENT_STARTED, "p1", T0, KC_CONTAINER_STATE_RUNNING);
        ev.type = _KC_CONTAINER_EVENT_TYPE_MAX;
        assert_int_equal(kc_evented_pleg_process_event(e->ev, &ev), -EBADMSG);

        expect_no_event(e);
        s = cached(e, "p1", &found);
        assert_int_equal(found, 0);
        kc_pod_status_unref(s);
        assert_int_equal(kc_histogram_count(e->m.evented_pleg_connection_latency), 0);

        /* The next good event is processed. */
        assert_int_equal(
                kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STARTED, "p1", T0,
                                                           KC_CONTAINER_STATE_RUNNING)),
                1);
        expect_event(e, "p1", KC_PLEG_CONTAINER_STARTED, "c1");
        env_free(e);
}

/* GeneratePodStatus: identity, IPs, the sandbox, containers newest first. */
static void test_status_from_event(void **state)
{
        struct env *e = env_new(&(struct env_opts){ 0 });
        const struct cspec cs[] = {
                { "old", KC_CONTAINER_STATE_EXITED, T0 - 3 * SEC },
                { "new", KC_CONTAINER_STATE_RUNNING, T0 - 1 * SEC },
                { "mid", KC_CONTAINER_STATE_CREATED, T0 - 2 * SEC },
        };
        const char *extra[] = { "fd00::1" };
        struct kc_pod_status *s;
        struct evb b;
        int found;

        (void)state;
        mkev(&b, KC_CONTAINER_EVENT_STARTED, "p1", "new", T0, KC_SANDBOX_STATE_READY, "10.0.0.7",
             cs, 3);
        b.sb.additional_ips = extra;
        b.sb.n_additional_ips = 1;
        assert_int_equal(kc_evented_pleg_process_event(e->ev, &b.ev), 1);
        s = cached(e, "p1", &found);
        assert_int_equal(found, 1);
        assert_string_equal(s->id, "p1");
        assert_string_equal(s->name, "name-p1");
        assert_string_equal(s->namespace, "default");
        assert_int_equal(s->n_ips, 2);
        assert_string_equal(s->ips[0], "10.0.0.7");
        assert_string_equal(s->ips[1], "fd00::1");
        assert_int_equal(s->n_sandboxes, 1);
        assert_string_equal(s->sandboxes[0].id, "sandbox-p1");
        assert_string_equal(s->sandboxes[0].uid, "p1");
        assert_int_equal(s->sandboxes[0].state, KC_SANDBOX_STATE_READY);
        assert_int_equal(s->n_containers, 3);
        assert_string_equal(s->containers[0].id, "new");
        assert_string_equal(s->containers[1].id, "mid");
        assert_string_equal(s->containers[2].id, "old");
        assert_int_equal(s->containers[2].exit_code, 3);
        assert_int_equal(s->containers[0].restart_count, 2);
        assert_int_equal(s->containers[0].hash, 0x1f);
        assert_string_equal(s->containers[0].name, "new");
        assert_string_equal(s->containers[0].image, "busybox");
        kc_pod_status_unref(s);
        env_free(e);
}

/* §3.5 step 5 applied to events: a dead pod keeps its last IPs; a ready sandbox does not. */
static void test_ip_preservation(void **state)
{
        struct env *e = env_new(&(struct env_opts){ 0 });
        const struct cspec cs[] = { { "c1", KC_CONTAINER_STATE_EXITED, T0 } };
        struct kc_pod_status *s;
        struct evb b;
        int found;

        (void)state;
        assert_int_equal(
                kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STARTED, "p1",
                                                           T0 + 1, KC_CONTAINER_STATE_RUNNING)),
                1);
        /* Sandbox gone NOTREADY without an IP: the cached IP stays. */
        assert_int_equal(kc_evented_pleg_process_event(
                                 e->ev, mkev(&b, KC_CONTAINER_EVENT_STOPPED, "p1", "c1", T0 + 2,
                                             KC_SANDBOX_STATE_NOTREADY, NULL, cs, 1)),
                         1);
        s = cached(e, "p1", &found);
        assert_int_equal(s->n_ips, 1);
        assert_string_equal(s->ips[0], "10.0.0.1");
        assert_int_equal(s->containers[0].state, KC_CONTAINER_STATE_EXITED);
        kc_pod_status_unref(s);
        /* A READY sandbox without an IP: the empty list is what is cached. */
        assert_int_equal(kc_evented_pleg_process_event(
                                 e->ev, mkev(&b, KC_CONTAINER_EVENT_STOPPED, "p1", "c1", T0 + 3,
                                             KC_SANDBOX_STATE_READY, NULL, cs, 1)),
                         1);
        s = cached(e, "p1", &found);
        assert_int_equal(s->n_ips, 0);
        kc_pod_status_unref(s);
        /* Nothing cached to preserve: none. */
        assert_int_equal(kc_evented_pleg_process_event(
                                 e->ev, mkev(&b, KC_CONTAINER_EVENT_STOPPED, "p1", "c1", T0 + 4,
                                             KC_SANDBOX_STATE_NOTREADY, "", cs, 1)),
                         1);
        s = cached(e, "p1", &found);
        assert_int_equal(s->n_ips, 0);
        kc_pod_status_unref(s);
        env_free(e);
}

static double gauge_vec(struct kc_gauge_vec *g, const char *label)
{
        double v = -1;

        assert_int_equal(kc_gauge_vec_value(g, label, &v), 0);
        return v;
}

/*
 * §4.5 step 5 and D30: the running pods and containers per state are
 * recounted from the whole cache after each event (a pod runs while its
 * sandbox is READY), whoever wrote the entries; the latency histogram.
 */
static void test_metrics_values(void **state)
{
        struct env *e = env_new(&(struct env_opts){ 0 });
        struct kc_container_event del;
        struct kc_pod_status *p2;
        struct evb b;

        (void)state;
        assert_int_equal(kc_fake_clock_advance(e->clock, 1500 * MSEC), 0);
        /* As containerd sends it: the sandbox is not among the containers. */
        assert_int_equal(
                kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STARTED, "p1", T0,
                                                           KC_CONTAINER_STATE_RUNNING)),
                1);
        assert_true(kc_gauge_value(e->m.running_pods) == 1);
        assert_true(gauge_vec(e->m.running_containers, "running") == 1);
        assert_int_equal(kc_histogram_count(e->m.evented_pleg_connection_latency), 1);
        assert_true(kc_histogram_sum(e->m.evented_pleg_connection_latency) == 1.5);

        assert_int_equal(kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STOPPED,
                                                                    "p1", T0 + 500 * MSEC,
                                                                    KC_CONTAINER_STATE_EXITED)),
                         1);
        assert_true(kc_gauge_value(e->m.running_pods) == 1);
        assert_true(gauge_vec(e->m.running_containers, "running") == 0);
        assert_true(gauge_vec(e->m.running_containers, "exited") == 1);
        assert_int_equal(kc_histogram_count(e->m.evented_pleg_connection_latency), 2);
        assert_true(kc_histogram_sum(e->m.evented_pleg_connection_latency) == 2.5);

        /* p2 written by a relist, then an event of it: counted once. */
        mkev1(&b, KC_CONTAINER_EVENT_STARTED, "p2", T0, KC_CONTAINER_STATE_RUNNING);
        assert_int_equal(
                kc_pod_status_new(
                        &(struct kc_pod_status){ .id = "p2",
                                                 .sandboxes =
                                                         &(struct kc_sandbox_status){
                                                                 .id = "sandbox-p2",
                                                                 .state = KC_SANDBOX_STATE_READY },
                                                 .n_sandboxes = 1 },
                        &p2),
                0);
        assert_true(kc_pod_cache_set(e->cache, "p2", p2, NULL, T0));
        kc_pod_status_unref(p2);
        assert_int_equal(
                kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STARTED, "p2",
                                                           T0 + 1, KC_CONTAINER_STATE_RUNNING)),
                1);
        assert_true(kc_gauge_value(e->m.running_pods) == 2);
        assert_true(gauge_vec(e->m.running_containers, "running") == 1);

        /* p1's sandbox deleted (containerd 1.7: no sandbox status): never below 0. */
        del = *mkev(&b, KC_CONTAINER_EVENT_DELETED, "p1", "sandbox-p1", T0 + SEC,
                    KC_SANDBOX_STATE_NOTREADY, NULL, NULL, 0);
        del.sandbox = NULL;
        del.pod_uid = del.pod_name = del.pod_namespace = NULL;
        assert_int_equal(kc_evented_pleg_process_event(e->ev, &del), 0);
        assert_true(kc_gauge_value(e->m.running_pods) == 1);
        assert_true(gauge_vec(e->m.running_containers, "running") == 1);
        assert_true(gauge_vec(e->m.running_containers, "exited") == 0);
        assert_true(counter(e->m.pleg_discard_events) == 0);
        env_free(e);
}

/*
 * containerd 1.7 sends a sandbox's DELETED without its status: the entry
 * holding that sandbox goes, found by its ID, with no error and no PLEG
 * event; an unknown sandbox ID changes nothing.
 */
static void test_deleted_sandbox_without_status(void **state)
{
        struct env *e = env_new(&(struct env_opts){ 0 });
        struct kc_container_event del;
        struct kc_pod_status *s;
        struct evb b;
        int found;

        (void)state;
        assert_int_equal(
                kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STARTED, "p1", T0,
                                                           KC_CONTAINER_STATE_RUNNING)),
                1);
        assert_int_equal(
                kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STARTED, "p2", T0,
                                                           KC_CONTAINER_STATE_RUNNING)),
                1);
        expect_event(e, "p1", KC_PLEG_CONTAINER_STARTED, "c1");
        expect_event(e, "p2", KC_PLEG_CONTAINER_STARTED, "c1");

        del = *mkev(&b, KC_CONTAINER_EVENT_DELETED, "x", "sandbox-unknown", T0 + 1,
                    KC_SANDBOX_STATE_NOTREADY, NULL, NULL, 0);
        del.sandbox = NULL;
        del.pod_uid = del.pod_name = del.pod_namespace = del.pod_sandbox_id = NULL;
        assert_int_equal(kc_evented_pleg_process_event(e->ev, &del), 0);
        del.container_id = "sandbox-p1";
        assert_int_equal(kc_evented_pleg_process_event(e->ev, &del), 0);
        expect_no_event(e);
        s = cached(e, "p1", &found);
        assert_int_equal(found, 0);
        kc_pod_status_unref(s);
        s = cached(e, "p2", &found);
        assert_int_equal(found, 1);
        kc_pod_status_unref(s);
        env_free(e);
}

/*
 * D31: an event older than the last relist is ignored (containerd 1.7
 * hands a new subscriber the events nobody took, possibly minutes late): it
 * neither brings back a removed pod's entry nor sends a PLEG event.
 */
static void test_stale_backlog_ignored(void **state)
{
        struct env *e = env_new(&(struct env_opts){ 0 });
        struct kc_pod_status *s;
        struct evb b;
        int found;

        (void)state;
        assert_int_equal(kc_fake_clock_advance(e->clock, 10 * SEC), 0);
        assert_int_equal(kc_generic_pleg_relist(e->generic), 0);
        assert_true(kc_generic_pleg_last_relist_mp(e->generic) == T0 + 10 * SEC);
        /* A backlog event of a pod gone before the relist. */
        assert_int_equal(kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STARTED,
                                                                    "gone", T0 + 5 * SEC,
                                                                    KC_CONTAINER_STATE_RUNNING)),
                         0);
        expect_no_event(e);
        s = cached(e, "gone", &found);
        assert_int_equal(found, 0);
        kc_pod_status_unref(s);
        assert_int_equal(stats(e).stale, 1);
        assert_true(kc_gauge_value(e->m.running_pods) == 0);
        /* At or after the relist: processed. */
        assert_int_equal(kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STARTED,
                                                                    "p1", T0 + 10 * SEC,
                                                                    KC_CONTAINER_STATE_RUNNING)),
                         1);
        expect_event(e, "p1", KC_PLEG_CONTAINER_STARTED, "c1");
        assert_int_equal(stats(e).stale, 1);
        env_free(e);
}

/* D31: before the first relist, an event from before the start is the relist's to report. */
static void test_backlog_before_first_relist_ignored(void **state)
{
        struct env *e = env_new(&(struct env_opts){ .cache_update_period = 3600 * SEC });
        struct evb b;

        (void)state;
        assert_int_equal(kc_fake_clock_advance(e->clock, 10 * SEC), 0);
        /* The stream opens and waits to settle on the fake clock: no failure, no relist. */
        source_set_mode(&e->src, SOURCE_OK);
        assert_int_equal(kc_evented_pleg_start(e->ev), 0);
        assert_true(KC_TEST_WAIT_UNTIL(source_active(&e->src), WAIT_MS));
        assert_true(kc_generic_pleg_last_relist_mp(e->generic) == 0);
        assert_int_equal(kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STARTED,
                                                                    "old", T0 + 9 * SEC,
                                                                    KC_CONTAINER_STATE_RUNNING)),
                         0);
        expect_no_event(e);
        assert_int_equal(stats(e).stale, 1);
        assert_int_equal(kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STARTED,
                                                                    "new", T0 + 10 * SEC,
                                                                    KC_CONTAINER_STATE_RUNNING)),
                         1);
        expect_event(e, "new", KC_PLEG_CONTAINER_STARTED, "c1");
        kc_evented_pleg_stop(e->ev);
        env_free(e);
}

/* §4.6: unhealthy exactly when the shared channel is full; events beyond are discarded. */
static void test_health_full_channel(void **state)
{
        struct env *e = env_new(&(struct env_opts){ .capacity = 2 });
        char *err = (char *)"unset";
        struct evb b;

        (void)state;
        assert_true(kc_evented_pleg_healthy(e->ev, &err));
        assert_null(err);
        assert_true(kc_gauge_value(e->m.pleg_last_seen) == 1700000000.0);
        assert_int_equal(
                kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STARTED, "p1",
                                                           T0 + 1, KC_CONTAINER_STATE_RUNNING)),
                1);
        assert_true(kc_evented_pleg_healthy(e->ev, NULL));
        assert_int_equal(
                kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STOPPED, "p1",
                                                           T0 + 2, KC_CONTAINER_STATE_EXITED)),
                1);
        assert_false(kc_evented_pleg_healthy(e->ev, &err));
        assert_string_equal(err, "EventedPLEG: pleg event channel capacity is full with 2 events");
        free(err);
        /* Full: the DELETED's two events are dropped and counted. */
        assert_int_equal(kc_evented_pleg_process_event(
                                 e->ev, mkev(&b, KC_CONTAINER_EVENT_DELETED, "p1", "c1", T0 + 3,
                                             KC_SANDBOX_STATE_READY, "10.0.0.1", NULL, 0)),
                         0);
        assert_true(counter(e->m.pleg_discard_events) == 2);
        expect_event(e, "p1", KC_PLEG_CONTAINER_STARTED, "c1");
        assert_true(kc_evented_pleg_healthy(e->ev, NULL));
        env_free(e);
}

/* Fills the PLEG channel to capacity with ContainerStarted events of pod "filler". */
static void fill_channel(struct env *e)
{
        while (kc_chan_len(e->events) < kc_chan_cap(e->events))
                assert_int_equal(kc_chan_push_mp(e->events,
                                                 kc_pleg_event_new("filler",
                                                                   KC_PLEG_CONTAINER_STARTED, "f")),
                                 0);
}

/* Pops every event; asserts they are all the filler's. */
static void drain_filler(struct env *e)
{
        void *item = NULL;

        while (kc_chan_pop_sc(e->events, &item, 0) == 0) {
                assert_string_equal(((struct kc_pleg_event *)item)->pod_id, "filler");
                kc_pleg_event_free(item);
        }
}

/*
 * D1 for EventedPLEG: an event dropped on the full PLEG channel owes its pod
 * a PodSync, like GenericPLEG's drops. Pods A then B lose every event; once
 * the channel has room, the next relist delivers one PodSync each, in the
 * order they were owed. A pod that then loses an event is resynced by the
 * next processed event, before that event's own PLEG events.
 */
static void test_full_channel_owes_pod_sync(void **state)
{
        struct env *e = env_new(&(struct env_opts){ .capacity = KC_PLEG_CHANNEL_CAPACITY });
        struct evb b;

        (void)state;
        fill_channel(e);
        assert_false(kc_evented_pleg_healthy(e->ev, NULL));
        assert_int_equal(
                kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STARTED, "A",
                                                           T0 + 1, KC_CONTAINER_STATE_RUNNING)),
                0);
        assert_int_equal(
                kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STARTED, "B",
                                                           T0 + 2, KC_CONTAINER_STATE_RUNNING)),
                0);
        /* Two of A's events lost as well: A stays owed once. */
        assert_int_equal(kc_evented_pleg_process_event(
                                 e->ev, mkev(&b, KC_CONTAINER_EVENT_DELETED, "A", "c1", T0 + 3,
                                             KC_SANDBOX_STATE_READY, "10.0.0.1", NULL, 0)),
                         0);
        assert_true(counter(e->m.pleg_discard_events) == 4);
        drain_filler(e);
        assert_true(kc_evented_pleg_healthy(e->ev, NULL));

        /* The next relist with room (the runtime lists nothing: no events of its own). */
        assert_int_equal(kc_generic_pleg_relist(e->generic), 0);
        expect_event(e, "A", KC_PLEG_POD_SYNC, "");
        expect_event(e, "B", KC_PLEG_POD_SYNC, "");
        expect_no_event(e);
        /* Owed once: a second relist sends nothing. */
        assert_int_equal(kc_generic_pleg_relist(e->generic), 0);
        expect_no_event(e);

        /* The consumer's next event flushes first. */
        fill_channel(e);
        assert_int_equal(
                kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STOPPED, "B",
                                                           T0 + 4, KC_CONTAINER_STATE_EXITED)),
                0);
        drain_filler(e);
        assert_int_equal(
                kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STARTED, "C",
                                                           T0 + 5, KC_CONTAINER_STATE_RUNNING)),
                1);
        expect_event(e, "B", KC_PLEG_POD_SYNC, "");
        expect_event(e, "C", KC_PLEG_CONTAINER_STARTED, "c1");
        expect_no_event(e);
        assert_true(counter(e->m.pleg_discard_events) == 5);
        env_free(e);
}

/* ------------------------------------------------------------------------ */
/* The stream                                                                 */

/* Waits until @p cond holds and every thread expected on the clock sleeps. */
#define WAIT_SETTLED(e, cond, n_sleepers)                                                          \
        assert_true(KC_TEST_WAIT_UNTIL((cond) && sleepers(e) == (n_sleepers), WAIT_MS))

/* Events delivered on the stream reach the PLEG channel through the consumer. */
static void test_stream_events_flow(void **state)
{
        struct env *e = env_new(&(struct env_opts){ .cache_update_period = 3600 * SEC });
        struct evb b;
        void *item = NULL;
        struct kc_pleg_event *pe;

        (void)state;
        source_set_mode(&e->src, SOURCE_OK);
        assert_int_equal(kc_evented_pleg_start(e->ev), 0);
        assert_true(kc_evented_pleg_in_use(e->ev));
        assert_true(KC_TEST_WAIT_UNTIL(source_active(&e->src), WAIT_MS));
        /* The first event connects the stream at once, without the settle time. */
        assert_true(source_deliver(&e->src, mkev1(&b, KC_CONTAINER_EVENT_STARTED, "p1", T0 + 1,
                                                  KC_CONTAINER_STATE_RUNNING)));
        assert_true(source_deliver(&e->src, mkev1(&b, KC_CONTAINER_EVENT_STOPPED, "p1", T0 + 2,
                                                  KC_CONTAINER_STATE_EXITED)));
        assert_int_equal(
                kc_chan_pop_sc(e->events, &item, (int)(WAIT_MS * kc_test_timeout_multiplier())), 0);
        pe = item;
        assert_string_equal(pe->pod_id, "p1");
        assert_int_equal(pe->type, KC_PLEG_CONTAINER_STARTED);
        kc_pleg_event_free(pe);
        assert_int_equal(
                kc_chan_pop_sc(e->events, &item, (int)(WAIT_MS * kc_test_timeout_multiplier())), 0);
        pe = item;
        assert_int_equal(pe->type, KC_PLEG_CONTAINER_DIED);
        assert_string_equal(pe->data, "c1");
        kc_pleg_event_free(pe);
        assert_true(KC_TEST_WAIT_UNTIL(stats(e).connections == 1 && stats(e).streaming, WAIT_MS));
        assert_true(counter(e->m.evented_pleg_connection_success_count) == 1);
        assert_int_equal(stats(e).failures, 0);
        kc_evented_pleg_stop(e->ev);
        assert_false(kc_evented_pleg_in_use(e->ev));
        assert_false(source_active(&e->src));
        env_free(e);
}

/* A stream that stays open for the settle time counts as connected. */
static void test_stream_connects_after_settle(void **state)
{
        struct env *e = env_new(&(struct env_opts){ .cache_update_period = 3600 * SEC });

        (void)state;
        source_set_mode(&e->src, SOURCE_OK);
        assert_int_equal(kc_evented_pleg_start(e->ev), 0);
        /* Cache thread and the stream thread's settle wait. */
        WAIT_SETTLED(e, source_active(&e->src), 2);
        assert_int_equal(stats(e).connections, 0);
        assert_int_equal(kc_fake_clock_advance(e->clock, KC_EVENTED_STREAM_SETTLE - 1), 0);
        assert_int_equal(stats(e).connections, 0);
        assert_int_equal(kc_fake_clock_advance(e->clock, 1), 0);
        assert_true(KC_TEST_WAIT_UNTIL(stats(e).connections == 1 && stats(e).streaming, WAIT_MS));
        assert_true(counter(e->m.evented_pleg_connection_success_count) == 1);
        kc_evented_pleg_stop(e->ev);
        env_free(e);
}

/* Drives failures 1..@p n on a failing source from the start; generic runs at 300 s. */
static void drive_failures(struct env *e, unsigned n)
{
        static const int64_t delays[] = { 250 * MSEC, 500 * MSEC, 1000 * MSEC, 2000 * MSEC };
        int64_t t = T0;
        unsigned i;

        /* Generic: relist at start, then asleep for 300 s. Evented: cache thread, stream thread. */
        assert_int_equal(kc_generic_pleg_start(e->generic), 0);
        assert_int_equal(kc_evented_pleg_start(e->ev), 0);
        WAIT_SETTLED(e, stats(e).failures == 1, 3);
        for (i = 1;; i++) {
                assert_int_equal(source_opens(&e->src), (int)i);
                assert_true(source_open_time(&e->src, (int)i - 1) == t);
                assert_int_equal(stats(e).consecutive_failures, i);
                /* One forced relist per failure, besides the generic start's. */
                assert_int_equal(relists(e), (int)i + 1);
                assert_true(counter(e->m.evented_pleg_connection_error_count) == i);
                assert_true(kc_evented_pleg_in_use(e->ev));
                if (i == n || i == KC_EVENTED_MAX_STREAM_RETRIES - 1)
                        break;
                /* One nanosecond short: no attempt yet. */
                assert_int_equal(kc_fake_clock_advance(e->clock, delays[i - 1] - 1), 0);
                assert_int_equal(source_opens(&e->src), (int)i);
                assert_int_equal(kc_fake_clock_advance(e->clock, 1), 0);
                t += delays[i - 1];
                WAIT_SETTLED(e, stats(e).failures == i + 1, 3);
        }
}

/* D13: retries after 250, 500, 1000, 2000 ms, each failure forcing a generic relist. */
static void test_retry_backoff(void **state)
{
        struct env *e = env_new(&(struct env_opts){ .cache_update_period = 3600 * SEC });
        int64_t t0;

        (void)state;
        drive_failures(e, 4);
        assert_int_equal(stats(e).fallbacks, 0);
        /* Stop is prompt in the middle of a back-off. */
        t0 = kc_test_mono_ms();
        kc_evented_pleg_stop(e->ev);
        assert_true(kc_test_mono_ms() - t0 < 2000 * kc_test_timeout_multiplier());
        kc_generic_pleg_stop(e->generic);
        env_free(e);
}

/* §4.4 and D12: 5 failures fall back to 1 s relisting; a probe that connects switches back. */
static void test_fallback_and_reprobe(void **state)
{
        struct env *e = env_new(&(struct env_opts){ .cache_update_period = 3600 * SEC,
                                                    .reprobe_period = 60 * SEC });
        int64_t t_fallback;
        struct evb b;
        int n;

        (void)state;
        drive_failures(e, 4);
        /* The fifth failure (2 s later) falls back at once: generic restarts at 1 s. */
        assert_int_equal(kc_fake_clock_advance(e->clock, 2000 * MSEC), 0);
        t_fallback = T0 + 3750 * MSEC;
        WAIT_SETTLED(e, stats(e).fallbacks == 1 && relists(e) == 7, 3);
        assert_true(source_open_time(&e->src, 4) == t_fallback);
        assert_false(kc_evented_pleg_in_use(e->ev));
        assert_int_equal(stats(e).failures, 5);
        assert_int_equal(stats(e).consecutive_failures, 5);
        assert_true(counter(e->m.evented_pleg_connection_error_count) == 5);
        assert_true(counter(e->m.evented_pleg_connection_success_count) == 0);
        /* Generic relists every second now. */
        assert_int_equal(kc_fake_clock_advance(e->clock, SEC), 0);
        WAIT_SETTLED(e, relists(e) == 8, 3);
        assert_int_equal(kc_fake_clock_advance(e->clock, SEC), 0);
        WAIT_SETTLED(e, relists(e) == 9, 3);
        assert_int_equal(source_opens(&e->src), 5);

        /* The runtime is back; the probe comes a reprobe period after the fallback. */
        source_set_mode(&e->src, SOURCE_OK);
        assert_int_equal(kc_fake_clock_advance(e->clock, 58 * SEC - 1), 0);
        WAIT_SETTLED(e, relists(e) == 10, 3);
        assert_int_equal(source_opens(&e->src), 5);
        assert_int_equal(kc_fake_clock_advance(e->clock, 1), 0);
        WAIT_SETTLED(e, source_active(&e->src), 3);
        assert_true(source_open_time(&e->src, 5) == t_fallback + 60 * SEC);
        assert_false(kc_evented_pleg_in_use(e->ev));
        /* Settled: connected, switch back. */
        n = relists(e);
        assert_int_equal(kc_fake_clock_advance(e->clock, KC_EVENTED_STREAM_SETTLE), 0);
        /* Generic (restarted at 300 s), the cache thread and the catch-up (D31) sleep. */
        WAIT_SETTLED(e, stats(e).recoveries == 1 && relists(e) >= n + 1, 3);
        /* The stream's first event ends the catch-up with one relist at once. */
        n = relists(e);
        assert_true(
                source_deliver(&e->src, mkev1(&b, KC_CONTAINER_EVENT_STARTED, "p1",
                                              kc_clock_now(e->clock), KC_CONTAINER_STATE_RUNNING)));
        WAIT_SETTLED(e, stats(e).caught_up == 1 && relists(e) == n + 1, 2);
        assert_true(kc_evented_pleg_in_use(e->ev));
        assert_int_equal(stats(e).consecutive_failures, 0);
        assert_int_equal(stats(e).connections, 1);
        assert_true(stats(e).streaming);
        assert_true(counter(e->m.evented_pleg_connection_success_count) == 1);
        /* Generic is at 300 s / 10 min again: 4 minutes pass without a relist, still healthy. */
        n = relists(e);
        assert_int_equal(kc_fake_clock_advance(e->clock, 240 * SEC), 0);
        kc_test_sleep_ms(20);
        assert_int_equal(relists(e), n);
        assert_true(kc_generic_pleg_healthy(e->generic, NULL));

        /* The stream breaks again: one failure, a relist, the first back-off step. */
        source_break(&e->src);
        WAIT_SETTLED(e, stats(e).failures == 6 && relists(e) == n + 1, 3);
        assert_int_equal(stats(e).consecutive_failures, 1);
        assert_true(kc_evented_pleg_in_use(e->ev));
        assert_int_equal(kc_fake_clock_advance(e->clock, 250 * MSEC), 0);
        WAIT_SETTLED(e, source_active(&e->src), 3);
        assert_int_equal(source_opens(&e->src), 7);
        kc_evented_pleg_stop(e->ev);
        kc_generic_pleg_stop(e->generic);
        env_free(e);
}

/*
 * D31: after each connection the generic PLEG relists every second until
 * the stream delivered an event and one relist followed it (containerd
 * 1.7's shared event queue can hand the next event to a dead stream).
 */
static void test_catch_up_after_connect(void **state)
{
        struct env *e = env_new(&(struct env_opts){ .cache_update_period = 3600 * SEC });
        struct evb b;
        int i;

        (void)state;
        assert_int_equal(kc_generic_pleg_start(e->generic), 0);
        source_set_mode(&e->src, SOURCE_OK);
        assert_int_equal(kc_evented_pleg_start(e->ev), 0);
        /* Generic (300 s), cache thread, settle wait. */
        WAIT_SETTLED(e, source_active(&e->src) && relists(e) == 1, 3);
        assert_int_equal(kc_fake_clock_advance(e->clock, KC_EVENTED_STREAM_SETTLE), 0);
        WAIT_SETTLED(e, stats(e).connections == 1, 3);
        /* A quiet stream: a relist every second, for as long as it stays quiet. */
        for (i = 0; i < 3; i++) {
                assert_int_equal(kc_fake_clock_advance(e->clock, SEC - 1), 0);
                kc_test_sleep_ms(5);
                assert_int_equal(relists(e), 1 + i);
                assert_int_equal(kc_fake_clock_advance(e->clock, 1), 0);
                WAIT_SETTLED(e, relists(e) == 2 + i, 3);
        }
        assert_int_equal(stats(e).caught_up, 0);
        /* The first event: one more relist at once, then only the 300 s period. */
        assert_true(
                source_deliver(&e->src, mkev1(&b, KC_CONTAINER_EVENT_STARTED, "p1",
                                              kc_clock_now(e->clock), KC_CONTAINER_STATE_RUNNING)));
        WAIT_SETTLED(e, stats(e).caught_up == 1 && relists(e) == 5, 2);
        assert_int_equal(stats(e).catch_up_relists, 4);
        assert_int_equal(kc_fake_clock_advance(e->clock, 60 * SEC), 0);
        kc_test_sleep_ms(20);
        assert_int_equal(relists(e), 5);
        /* A reconnect starts over: the failure's relist, then one a second after connecting. */
        source_break(&e->src);
        WAIT_SETTLED(e, stats(e).failures == 1 && relists(e) == 6, 3);
        assert_int_equal(kc_fake_clock_advance(e->clock, 250 * MSEC), 0);
        WAIT_SETTLED(e, source_active(&e->src), 3);
        assert_true(
                source_deliver(&e->src, mkev1(&b, KC_CONTAINER_EVENT_STOPPED, "p1",
                                              kc_clock_now(e->clock), KC_CONTAINER_STATE_EXITED)));
        WAIT_SETTLED(e, stats(e).connections == 2, 3);
        assert_int_equal(relists(e), 6);
        assert_int_equal(kc_fake_clock_advance(e->clock, SEC), 0);
        WAIT_SETTLED(e, stats(e).caught_up == 2 && relists(e) == 7, 2);
        kc_evented_pleg_stop(e->ev);
        kc_generic_pleg_stop(e->generic);
        env_free(e);
}

/*
 * The daemon's shutdown: after kc_evented_pleg_begin_stop() the stream's
 * end (the CRI client closing under it) is no failure: nothing counted,
 * logged or relisted.
 */
static void test_begin_stop_quiet_stream_end(void **state)
{
        struct env *e = env_new(&(struct env_opts){ .cache_update_period = 3600 * SEC });
        struct evb b;
        int n;

        (void)state;
        source_set_mode(&e->src, SOURCE_OK);
        assert_int_equal(kc_evented_pleg_start(e->ev), 0);
        assert_true(KC_TEST_WAIT_UNTIL(source_active(&e->src), WAIT_MS));
        assert_true(source_deliver(&e->src, mkev1(&b, KC_CONTAINER_EVENT_STARTED, "p1", T0,
                                                  KC_CONTAINER_STATE_RUNNING)));
        assert_true(KC_TEST_WAIT_UNTIL(stats(e).connections == 1, WAIT_MS));
        n = relists(e);
        kc_evented_pleg_begin_stop(e->ev);
        /* The client's shutdown ends the stream, unless the stream thread closed it first. */
        pthread_mutex_lock(&e->src.mu);
        if (e->src.active) {
                e->src.active = false;
                e->src.on_close(e->src.ud, -ECONNRESET,
                                &(struct kc_runtime_error){ KC_RUNTIME_UNAVAILABLE, "closed" });
        }
        pthread_mutex_unlock(&e->src.mu);
        kc_test_sleep_ms(50);
        assert_int_equal(stats(e).failures, 0);
        assert_int_equal(relists(e), n);
        assert_true(counter(e->m.evented_pleg_connection_error_count) == 0);
        kc_evented_pleg_stop(e->ev);
        assert_int_equal(stats(e).failures, 0);
        assert_int_equal(relists(e), n);
        env_free(e);
}

/* A stream the runtime ends at once (containerd 1.6: UNIMPLEMENTED) is a failure. */
static void test_refused_stream_falls_back(void **state)
{
        struct env *e = env_new(&(struct env_opts){ .cache_update_period = 3600 * SEC });
        static const int64_t delays[] = { 250 * MSEC, 500 * MSEC, 1000 * MSEC, 2000 * MSEC };
        unsigned i;

        (void)state;
        source_set_mode(&e->src, SOURCE_REFUSE);
        assert_int_equal(kc_evented_pleg_start(e->ev), 0);
        WAIT_SETTLED(e, stats(e).failures == 1, 2);
        for (i = 0; i < KC_ELEMENTSOF(delays); i++) {
                assert_int_equal(kc_fake_clock_advance(e->clock, delays[i]), 0);
                WAIT_SETTLED(e, stats(e).failures == i + 2, i + 2 == 5 ? 3 : 2);
        }
        /* The fallback started the generic PLEG at 1 s (it was not running here). */
        assert_int_equal(stats(e).fallbacks, 1);
        assert_int_equal(stats(e).connections, 0);
        assert_false(kc_evented_pleg_in_use(e->ev));
        assert_true(counter(e->m.evented_pleg_connection_success_count) == 0);
        assert_int_equal(source_opens(&e->src), 5);
        kc_evented_pleg_stop(e->ev);
        kc_generic_pleg_stop(e->generic);
        env_free(e);
}

/* A connection resets the failure count; the next failure starts the back-off over. */
static void test_connection_resets_failures(void **state)
{
        struct env *e = env_new(&(struct env_opts){ .cache_update_period = 3600 * SEC });
        struct evb b;

        (void)state;
        assert_int_equal(kc_evented_pleg_start(e->ev), 0);
        WAIT_SETTLED(e, stats(e).failures == 1, 2);
        assert_int_equal(kc_fake_clock_advance(e->clock, 250 * MSEC), 0);
        WAIT_SETTLED(e, stats(e).failures == 2, 2);
        source_set_mode(&e->src, SOURCE_OK);
        assert_int_equal(kc_fake_clock_advance(e->clock, 500 * MSEC), 0);
        assert_true(KC_TEST_WAIT_UNTIL(source_active(&e->src), WAIT_MS));
        assert_true(source_deliver(&e->src, mkev1(&b, KC_CONTAINER_EVENT_STARTED, "p1", T0,
                                                  KC_CONTAINER_STATE_RUNNING)));
        assert_true(KC_TEST_WAIT_UNTIL(stats(e).consecutive_failures == 0, WAIT_MS));
        assert_int_equal(stats(e).recoveries, 0); /* never fell back */
        source_break(&e->src);
        WAIT_SETTLED(e, stats(e).failures == 3, 2);
        assert_int_equal(stats(e).consecutive_failures, 1);
        assert_int_equal(relists(e), 3);
        assert_int_equal(kc_fake_clock_advance(e->clock, 250 * MSEC - 1), 0);
        assert_int_equal(source_opens(&e->src), 3);
        assert_int_equal(kc_fake_clock_advance(e->clock, 1), 0);
        assert_true(KC_TEST_WAIT_UNTIL(source_active(&e->src), WAIT_MS));
        assert_int_equal(source_opens(&e->src), 4);
        kc_evented_pleg_stop(e->ev);
        env_free(e);
}

/* D14: a full internal buffer drops events, counts them and forces one relist. */
static void test_buffer_full_forces_relist(void **state)
{
        struct env *e = env_new(&(struct env_opts){ .cache_update_period = 3600 * SEC });
        struct evb b;
        unsigned i;

        (void)state;
        /* No consumer runs yet: the 1001st event does not fit. */
        for (i = 0; i < KC_PLEG_CHANNEL_CAPACITY + 5; i++)
                kc__evented_pleg_on_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STARTED, "p1", T0 + i,
                                                       KC_CONTAINER_STATE_RUNNING));
        assert_int_equal(stats(e).dropped, 5);
        assert_int_equal(relists(e), 0);
        /* The stream thread opens and waits to settle; the consumer drains and relists. */
        source_set_mode(&e->src, SOURCE_OK);
        assert_int_equal(kc_evented_pleg_start(e->ev), 0);
        assert_true(KC_TEST_WAIT_UNTIL(
                kc_chan_len(e->events) == KC_PLEG_CHANNEL_CAPACITY && relists(e) == 1, WAIT_MS));
        expect_event(e, "p1", KC_PLEG_CONTAINER_STARTED, "c1");
        kc_test_sleep_ms(10);
        assert_int_equal(relists(e), 1);
        kc_evented_pleg_stop(e->ev);
        env_free(e);
}

/* updateGlobalCache: the cache's global time follows the clock every period while in use. */
static void test_global_cache_update(void **state)
{
        struct env *e = env_new(&(struct env_opts){ .cache_update_period = 2 * SEC });
        struct kc_pod_status *s = NULL;
        char *err = NULL;

        (void)state;
        /* Before any update a missing pod is never ready. */
        assert_int_equal(kc_pod_cache_try_get_newer_than(e->cache, "none", T0 - 1, &s, &err),
                         -EAGAIN);
        source_set_mode(&e->src, SOURCE_OK);
        assert_int_equal(kc_evented_pleg_start(e->ev), 0);
        /* Cache thread (2 s) and the stream's settle wait (1 s). */
        WAIT_SETTLED(e, source_active(&e->src), 2);
        /*
         * No relist has filled the cache yet: no stamp (D31), or a pod
         * worker would read a miss as "no sandbox" and create a second one
         * after a restart (seen on containerd 1.7).
         */
        assert_int_equal(kc_pod_cache_try_get_newer_than(e->cache, "none", T0 - 1, &s, &err),
                         -EAGAIN);
        assert_int_equal(kc_generic_pleg_relist(e->generic), 0);
        assert_int_equal(kc_fake_clock_advance(e->clock, 2 * SEC), 0);
        assert_true(KC_TEST_WAIT_UNTIL(
                kc_pod_cache_try_get_newer_than(e->cache, "none", T0 - 1, &s, &err) == 0, WAIT_MS));
        kc_pod_status_unref(s);
        s = NULL;
        assert_int_equal(kc_pod_cache_try_get_newer_than(e->cache, "none", T0 + 2 * SEC, &s, &err),
                         -EAGAIN);
        assert_int_equal(kc_fake_clock_advance(e->clock, 2 * SEC), 0);
        assert_true(KC_TEST_WAIT_UNTIL(
                kc_pod_cache_try_get_newer_than(e->cache, "none", T0 + 4 * SEC - 1, &s, &err) == 0,
                WAIT_MS));
        kc_pod_status_unref(s);
        kc_evented_pleg_stop(e->ev);
        env_free(e);
}

static void *relist_thread(void *arg)
{
        return (void *)(intptr_t)kc_generic_pleg_relist(arg);
}

/*
 * D31: a relist's listing is in (Healthy, so syncLoop dispatches) before
 * it wrote its pods to the cache. A stamp in between would hand a pod
 * worker the pod's miss as a pod with no sandbox, and it would create a
 * second one (containerd 1.7, a cubelet restarted next to its pods). The
 * cache thread's first tick comes while the relist inspects the one pod.
 */
static void test_no_stamp_before_the_first_fill(void **state)
{
        const struct kc_container sb = { .id = "s1",
                                         .name = "s1",
                                         .state = KC_CONTAINER_STATE_RUNNING };
        struct env *e = env_new(&(struct env_opts){ .cache_update_period = 2 * SEC });
        struct kc_pod_status *s = NULL;
        char *err = NULL;
        pthread_t t;
        void *rv;

        (void)state;
        assert_int_equal(kc_pod_new(&(struct kc_pod){ .id = "p1",
                                                      .name = "p1",
                                                      .namespace = "ns",
                                                      .sandboxes = &sb,
                                                      .n_sandboxes = 1 },
                                    &e->rt.pod),
                         0);
        atomic_store(&e->rt.hold, true);
        assert_int_equal(pthread_create(&t, NULL, relist_thread, e->generic), 0);
        assert_true(KC_TEST_WAIT_UNTIL(atomic_load(&e->rt.in_status), WAIT_MS));
        assert_true(kc_generic_pleg_last_relist_mp(e->generic) == T0);
        assert_false(kc_generic_pleg_filled_mp(e->generic));

        source_set_mode(&e->src, SOURCE_OK);
        assert_int_equal(kc_evented_pleg_start(e->ev), 0);
        /* The cache thread ticked once and sleeps (2 s); the stream waits to settle (1 s). */
        WAIT_SETTLED(e, source_active(&e->src), 2);
        assert_true(kc_evented_pleg_in_use(e->ev));
        assert_int_equal(kc_pod_cache_try_get_newer_than(e->cache, "p1", T0 - 1, &s, &err),
                         -EAGAIN);

        atomic_store(&e->rt.hold, false);
        assert_int_equal(pthread_join(t, &rv), 0);
        assert_int_equal((int)(intptr_t)rv, 0);
        assert_true(kc_generic_pleg_filled_mp(e->generic));
        /* The relist's own write of p1, not an empty miss. */
        assert_int_equal(kc_pod_cache_try_get_newer_than(e->cache, "p1", T0 - 1, &s, &err), 0);
        assert_non_null(s);
        assert_string_equal(s->id, "p1");
        kc_pod_status_unref(s);
        free(err);
        expect_event(e, "p1", KC_PLEG_CONTAINER_STARTED, "s1");
        kc_evented_pleg_stop(e->ev);
        kc_pod_unref(e->rt.pod);
        env_free(e);
}

/*
 * D1 on a quiet stream: GenericPLEG relists only every 300 s while
 * EventedPLEG is in use, and no further event comes; the owed PodSync goes
 * out on the next updateGlobalCache tick (2 s) once the channel has room.
 */
static void test_owed_sync_on_quiet_stream(void **state)
{
        struct env *e = env_new(&(struct env_opts){ .capacity = KC_PLEG_CHANNEL_CAPACITY,
                                                    .cache_update_period = 2 * SEC });
        struct evb b;
        void *item = NULL;
        struct kc_pleg_event *pe;

        (void)state;
        assert_int_equal(kc_generic_pleg_start(e->generic), 0);
        source_set_mode(&e->src, SOURCE_OK);
        assert_int_equal(kc_evented_pleg_start(e->ev), 0);
        assert_true(KC_TEST_WAIT_UNTIL(source_active(&e->src) && relists(e) == 1, WAIT_MS));
        /* An event connects the stream; the catch-up relist a second later ends the catch-up. */
        assert_true(source_deliver(&e->src, mkev1(&b, KC_CONTAINER_EVENT_STARTED, "B", T0 + 1,
                                                  KC_CONTAINER_STATE_RUNNING)));
        WAIT_SETTLED(e, stats(e).connections == 1 && kc_chan_len(e->events) == 1, 3);
        assert_int_equal(kc_fake_clock_advance(e->clock, SEC), 0);
        WAIT_SETTLED(e, stats(e).caught_up == 1 && relists(e) == 2, 2);
        expect_event(e, "B", KC_PLEG_CONTAINER_STARTED, "c1");
        fill_channel(e);
        assert_true(source_deliver(&e->src, mkev1(&b, KC_CONTAINER_EVENT_STARTED, "A", T0 + 2 * SEC,
                                                  KC_CONTAINER_STATE_RUNNING)));
        /* The consumer processed it: cached, its ContainerStarted dropped. */
        assert_true(KC_TEST_WAIT_UNTIL(counter(e->m.pleg_discard_events) == 1, WAIT_MS));
        /* Generic (300 s) and the cache thread (2 s) asleep; the stream is connected. */
        WAIT_SETTLED(e, stats(e).connections == 1, 2);
        drain_filler(e);
        kc_test_sleep_ms(20);
        expect_no_event(e);

        assert_int_equal(kc_fake_clock_advance(e->clock, SEC), 0);
        assert_int_equal(
                kc_chan_pop_sc(e->events, &item, (int)(WAIT_MS * kc_test_timeout_multiplier())), 0);
        pe = item;
        assert_string_equal(pe->pod_id, "A");
        assert_string_equal(kc_pleg_event_type_to_string(pe->type), "PodSync");
        kc_pleg_event_free(pe);
        /* Without a relist: the generic PLEG still sleeps its 300 s. */
        assert_int_equal(relists(e), 2);
        WAIT_SETTLED(e, true, 2);
        expect_no_event(e);
        kc_evented_pleg_stop(e->ev);
        kc_generic_pleg_stop(e->generic);
        env_free(e);
}

/* Start and stop are idempotent; stop is prompt in every state; free stops. */
static void test_start_stop(void **state)
{
        struct env *e = env_new(&(struct env_opts){ .cache_update_period = 3600 * SEC });
        int64_t t0;

        (void)state;
        kc_evented_pleg_stop(e->ev); /* never started */
        assert_false(kc_evented_pleg_in_use(e->ev));

        /* Streaming. */
        source_set_mode(&e->src, SOURCE_OK);
        assert_int_equal(kc_evented_pleg_start(e->ev), 0);
        assert_int_equal(kc_evented_pleg_start(e->ev), 0);
        assert_true(kc_evented_pleg_in_use(e->ev));
        WAIT_SETTLED(e, source_active(&e->src), 2);
        assert_int_equal(kc_fake_clock_advance(e->clock, KC_EVENTED_STREAM_SETTLE), 0);
        assert_true(KC_TEST_WAIT_UNTIL(stats(e).streaming, WAIT_MS));
        t0 = kc_test_mono_ms();
        kc_evented_pleg_stop(e->ev);
        assert_true(kc_test_mono_ms() - t0 < 2000 * kc_test_timeout_multiplier());
        assert_false(kc_evented_pleg_in_use(e->ev));
        assert_false(stats(e).streaming);
        assert_false(source_active(&e->src));
        kc_evented_pleg_stop(e->ev);

        /* Restart, stop in the settle wait. */
        assert_int_equal(kc_evented_pleg_start(e->ev), 0);
        WAIT_SETTLED(e, source_active(&e->src), 2);
        t0 = kc_test_mono_ms();
        kc_evented_pleg_stop(e->ev);
        assert_true(kc_test_mono_ms() - t0 < 2000 * kc_test_timeout_multiplier());
        assert_int_equal(stats(e).connections, 1);

        /* Fallen back, stop in the 5-minute re-probe wait. */
        source_set_mode(&e->src, SOURCE_REFUSE);
        assert_int_equal(kc_evented_pleg_start(e->ev), 0);
        WAIT_SETTLED(e, stats(e).failures == 1, 2);
        assert_int_equal(kc_fake_clock_advance(e->clock, 250 * MSEC), 0);
        WAIT_SETTLED(e, stats(e).failures == 2, 2);
        assert_int_equal(kc_fake_clock_advance(e->clock, 500 * MSEC), 0);
        WAIT_SETTLED(e, stats(e).failures == 3, 2);
        assert_int_equal(kc_fake_clock_advance(e->clock, 1000 * MSEC), 0);
        WAIT_SETTLED(e, stats(e).failures == 4, 2);
        assert_int_equal(kc_fake_clock_advance(e->clock, 2000 * MSEC), 0);
        WAIT_SETTLED(e, stats(e).fallbacks == 1, 3);
        t0 = kc_test_mono_ms();
        kc_evented_pleg_stop(e->ev);
        assert_true(kc_test_mono_ms() - t0 < 2000 * kc_test_timeout_multiplier());
        kc_generic_pleg_stop(e->generic);

        /* A PLEG stopped while fallen back starts fallen back and probes at once. */
        source_set_mode(&e->src, SOURCE_OK);
        assert_int_equal(kc_evented_pleg_start(e->ev), 0);
        assert_false(kc_evented_pleg_in_use(e->ev));
        WAIT_SETTLED(e, source_active(&e->src), 2);
        assert_int_equal(kc_fake_clock_advance(e->clock, KC_EVENTED_STREAM_SETTLE), 0);
        assert_true(KC_TEST_WAIT_UNTIL(stats(e).recoveries == 1, WAIT_MS));
        assert_true(kc_evented_pleg_in_use(e->ev));

        /* Free stops it. */
        kc_generic_pleg_stop(e->generic);
        e->ev = kc_evented_pleg_free(e->ev);
        assert_false(source_active(&e->src));
        env_free(e);
}

/* Without metrics every path still works. */
static void test_no_metrics(void **state)
{
        struct env *e = env_new(&(struct env_opts){ .no_metrics = true });
        struct evb b;

        (void)state;
        assert_int_equal(
                kc_evented_pleg_process_event(e->ev, mkev1(&b, KC_CONTAINER_EVENT_STARTED, "p1", T0,
                                                           KC_CONTAINER_STATE_RUNNING)),
                1);
        assert_true(kc_evented_pleg_healthy(e->ev, NULL));
        assert_int_equal(kc_evented_pleg_start(e->ev), 0);
        WAIT_SETTLED(e, stats(e).failures == 1, 2);
        kc_evented_pleg_stop(e->ev);
        env_free(e);
}

static void test_new_invalid(void **state)
{
        struct kc_evented_pleg_config cfg = { 0 };
        struct kc_evented_pleg *p = (void *)0x1;

        (void)state;
        assert_int_equal(kc_evented_pleg_new(&cfg, &p), -EINVAL);
        assert_int_equal(kc_evented_pleg_new(NULL, &p), -EINVAL);
        assert_ptr_equal(p, (void *)0x1);
        assert_null(kc_evented_pleg_free(NULL));
        assert_false(kc_evented_pleg_in_use(NULL));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_mapping_table),
                cmocka_unit_test(test_stale_event_refused),
                cmocka_unit_test(test_deleted_sandbox_deletes_entry),
                cmocka_unit_test(test_malformed_event_skipped),
                cmocka_unit_test(test_status_from_event),
                cmocka_unit_test(test_ip_preservation),
                cmocka_unit_test(test_metrics_values),
                cmocka_unit_test(test_deleted_sandbox_without_status),
                cmocka_unit_test(test_stale_backlog_ignored),
                cmocka_unit_test(test_backlog_before_first_relist_ignored),
                cmocka_unit_test(test_health_full_channel),
                cmocka_unit_test(test_full_channel_owes_pod_sync),
                cmocka_unit_test(test_owed_sync_on_quiet_stream),
                cmocka_unit_test(test_stream_events_flow),
                cmocka_unit_test(test_stream_connects_after_settle),
                cmocka_unit_test(test_retry_backoff),
                cmocka_unit_test(test_fallback_and_reprobe),
                cmocka_unit_test(test_catch_up_after_connect),
                cmocka_unit_test(test_begin_stop_quiet_stream_end),
                cmocka_unit_test(test_refused_stream_falls_back),
                cmocka_unit_test(test_connection_resets_failures),
                cmocka_unit_test(test_buffer_full_forces_relist),
                cmocka_unit_test(test_global_cache_update),
                cmocka_unit_test(test_no_stamp_before_the_first_fill),
                cmocka_unit_test(test_start_stop),
                cmocka_unit_test(test_no_metrics),
                cmocka_unit_test(test_new_invalid),
        };

        kc_log_set_verbosity(0);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
