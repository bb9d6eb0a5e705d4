/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared fixture for the pod-worker tests: a fake clock, a real pod cache, a
 * recording fake syncer (upstream createPodWorkers' podSyncerFuncs), a
 * recording enqueue callback (upstream fakeQueue) and a fixed random source.
 */
#pragma once

#include <stdio.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "core/cancel.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "internal.h"
#include "podworkers/pod_workers.h"
#include "runtime/api_pod.h"
#include "runtime/cache.h"
#include "runtime/container.h"

#define T0 (INT64_C(1700000000) * KC_NSEC_PER_SEC)
#define SEC KC_NSEC_PER_SEC
#define FAR_FUTURE (INT64_C(1) << 62)
#define DRAIN_MS 10000
#define MAX_RECORDS 4096

enum rec_kind {
        REC_SYNC,            /* SyncPod */
        REC_TERMINATING,     /* SyncTerminatingPod (upstream records SyncPodKill) */
        REC_TERMINATING_RUN, /* SyncTerminatingRuntimePod */
        REC_TERMINATED,      /* SyncTerminatedPod */
};

struct rec {
        char uid[64];
        char name[64];
        enum rec_kind kind;
        enum kc_sync_pod_type update_type;
        int64_t grace;
        int result;
        bool had_status;
};

struct queued {
        char uid[64];
        int64_t delay;
};

struct fake {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct rec recs[MAX_RECORDS];
        size_t n_recs;
        struct queued queue[MAX_RECORDS];
        size_t n_queue;
        /* behaviour */
        char terminal_uid[8][64];       /* SyncPod reports terminal */
        char block_sync_uid[64];        /* SyncPod blocks until ctx cancelled */
        char gate_sync_uid[64];         /* SyncPod blocks until gate triggered */
        char gate_sync_prefix[64];      /* so does SyncPod of every UID starting so */
        char block_terminating_uid[64]; /* SyncTerminatingPod blocks until release */
        struct kc_cancel *gate, *release;
        char next_error[128];       /* returned once by the next SyncPod */
        int64_t next_requeue_after; /* with next_error, when > 0: the back-off's end */
        /* concurrency accounting */
        char inflight_uid[256][64];
        int inflight_n[256];
        size_t n_inflight_uids;
        int max_concurrent_per_uid;
        int entered_blocking; /* count of calls that entered a blocking path */
};

struct fixture {
        struct kc_clock *clock;
        struct kc_pod_cache *cache;
        struct kc_pod_workers *pw;
        struct fake fake;
};

static inline void fake_lock(struct fake *f)
{
        pthread_mutex_lock(&f->lock);
}
static inline void fake_unlock(struct fake *f)
{
        pthread_mutex_unlock(&f->lock);
}

static inline int *inflight_slot(struct fake *f, const char *uid)
{
        for (size_t i = 0; i < f->n_inflight_uids; i++)
                if (strcmp(f->inflight_uid[i], uid) == 0)
                        return &f->inflight_n[i];
        assert_true(f->n_inflight_uids < 256);
        snprintf(f->inflight_uid[f->n_inflight_uids], 64, "%s", uid);
        f->inflight_n[f->n_inflight_uids] = 0;
        return &f->inflight_n[f->n_inflight_uids++];
}

static inline void enter(struct fake *f, const char *uid)
{
        int *n;

        fake_lock(f);
        n = inflight_slot(f, uid);
        (*n)++;
        if (*n > f->max_concurrent_per_uid)
                f->max_concurrent_per_uid = *n;
        fake_unlock(f);
}

static inline void leave(struct fake *f, const char *uid, enum rec_kind kind, const char *name,
                         enum kc_sync_pod_type t, int64_t grace, int result, bool had_status)
{
        struct rec *r;

        fake_lock(f);
        (*inflight_slot(f, uid))--;
        assert_true(f->n_recs < MAX_RECORDS);
        r = &f->recs[f->n_recs++];
        snprintf(r->uid, sizeof(r->uid), "%s", uid);
        snprintf(r->name, sizeof(r->name), "%s", name ? name : "");
        r->kind = kind;
        r->update_type = t;
        r->grace = grace;
        r->result = result;
        r->had_status = had_status;
        pthread_cond_broadcast(&f->cond);
        fake_unlock(f);
}

static inline void mark_entered(struct fake *f)
{
        fake_lock(f);
        f->entered_blocking++;
        pthread_cond_broadcast(&f->cond);
        fake_unlock(f);
}

static inline int fake_sync_pod(void *ud, struct kc_cancel *ctx, enum kc_sync_pod_type t,
                                struct kc_api_pod *pod, struct kc_api_pod *mirror,
                                struct kc_pod_status *status, bool *ret_is_terminal,
                                int64_t *ret_requeue_after_ns, char **ret_err)
{
        struct fake *f = ud;
        int r = 0;
        bool terminal = false;
        char err[128] = "";
        int64_t requeue_after = 0;

        (void)mirror;
        enter(f, pod->uid);
        fake_lock(f);
        for (size_t i = 0; i < 8; i++)
                if (strcmp(f->terminal_uid[i], pod->uid) == 0)
                        terminal = true;
        if (f->next_error[0]) {
                snprintf(err, sizeof(err), "%s", f->next_error);
                f->next_error[0] = '\0';
                requeue_after = f->next_requeue_after;
                f->next_requeue_after = 0;
        }
        bool block = strcmp(f->block_sync_uid, pod->uid) == 0;
        bool gate = strcmp(f->gate_sync_uid, pod->uid) == 0 ||
                    (f->gate_sync_prefix[0] &&
                     strncmp(pod->uid, f->gate_sync_prefix, strlen(f->gate_sync_prefix)) == 0);
        fake_unlock(f);
        if (block) {
                mark_entered(f);
                /* Blocks until the pod workers cancel this sync. */
                if (kc_clock_sleep(kc_clock_real(), 60 * SEC, ctx) == -ECANCELED)
                        r = -ECANCELED;
        } else if (gate) {
                mark_entered(f);
                kc_clock_sleep(kc_clock_real(), 60 * SEC, f->gate);
        }
        if (r == 0 && err[0]) {
                r = -EIO;
                *ret_err = strdup(err);
                if (requeue_after > 0)
                        *ret_requeue_after_ns = requeue_after;
        }
        if (r == 0)
                *ret_is_terminal = terminal;
        leave(f, pod->uid, REC_SYNC, pod->name, t, -1, r, status != NULL);
        return r;
}

static inline int fake_sync_terminating_pod(void *ud, struct kc_cancel *ctx, struct kc_api_pod *pod,
                                            struct kc_pod_status *status, int64_t grace,
                                            char **ret_err)
{
        struct fake *f = ud;
        int r = 0;

        (void)ret_err;
        enter(f, pod->uid);
        fake_lock(f);
        bool block = strcmp(f->block_terminating_uid, pod->uid) == 0;
        fake_unlock(f);
        if (block) {
                mark_entered(f);
                /* Stuck until the test releases it (a runtime that ignores ctx). */
                kc_clock_sleep(kc_clock_real(), 60 * SEC, f->release);
        }
        (void)ctx;
        leave(f, pod->uid, REC_TERMINATING, pod->name, KC_SYNC_POD_KILL, grace, r, status != NULL);
        return r;
}

static inline int fake_sync_terminating_runtime_pod(void *ud, struct kc_cancel *ctx,
                                                    struct kc_pod *rp, char **ret_err)
{
        struct fake *f = ud;

        (void)ctx;
        (void)ret_err;
        enter(f, rp->id);
        leave(f, rp->id, REC_TERMINATING_RUN, rp->name, KC_SYNC_POD_KILL, -1, 0, false);
        return 0;
}

static inline int fake_sync_terminated_pod(void *ud, struct kc_cancel *ctx, struct kc_api_pod *pod,
                                           struct kc_pod_status *status, char **ret_err)
{
        struct fake *f = ud;

        (void)ctx;
        (void)ret_err;
        enter(f, pod->uid);
        leave(f, pod->uid, REC_TERMINATED, pod->name, KC_SYNC_POD_SYNC, -1, 0, status != NULL);
        return 0;
}

static const struct kc_pod_syncer_ops fake_ops = {
        .sync_pod = fake_sync_pod,
        .sync_terminating_pod = fake_sync_terminating_pod,
        .sync_terminating_runtime_pod = fake_sync_terminating_runtime_pod,
        .sync_terminated_pod = fake_sync_terminated_pod,
};

static inline void fake_enqueue(void *ud, const char *uid, int64_t delay)
{
        struct fake *f = ud;

        fake_lock(f);
        if (f->n_queue < MAX_RECORDS) {
                snprintf(f->queue[f->n_queue].uid, 64, "%s", uid);
                f->queue[f->n_queue].delay = delay;
                f->n_queue++;
        }
        fake_unlock(f);
}

/* A fixed random source: jitter(d, 0.5) = d * 1.25. */
static inline double fixed_random(void *ud)
{
        (void)ud;
        return 0.5;
}

/* The fixture's pool configuration over @cache (0: the defaults). */
static inline struct kc_pod_workers_config fixture_cfg(struct fixture *fx,
                                                       struct kc_pod_cache *cache,
                                                       unsigned max_threads,
                                                       int64_t idle_timeout_ns)
{
        return (struct kc_pod_workers_config){
                .clock = fx->clock,
                .cache = cache,
                .syncer = &fake_ops,
                .syncer_userdata = &fx->fake,
                .enqueue = fake_enqueue,
                .enqueue_userdata = &fx->fake,
                .resync_interval_ns = 60 * SEC,
                .random = fixed_random,
                .max_threads = max_threads,
                .min_threads = 1,
                .stack_size = 128 * 1024,
                .idle_timeout_ns = idle_timeout_ns,
        };
}

static inline struct fixture *fixture_new_cfg(unsigned max_threads, int64_t idle_timeout_ns)
{
        struct fixture *fx = calloc(1, sizeof(*fx));
        struct kc_pod_workers_config cfg;

        assert_non_null(fx);
        pthread_mutex_init(&fx->fake.lock, NULL);
        pthread_cond_init(&fx->fake.cond, NULL);
        assert_int_equal(kc_cancel_new(&fx->fake.gate), 0);
        assert_int_equal(kc_cancel_new(&fx->fake.release), 0);
        assert_int_equal(kc_fake_clock_new(&fx->clock, T0), 0);
        assert_int_equal(kc_pod_cache_new(&fx->cache), 0);
        /* By default every GetNewerThan is satisfied at once (the PLEG is "ahead"). */
        kc_pod_cache_update_time(fx->cache, FAR_FUTURE);
        cfg = fixture_cfg(fx, fx->cache, max_threads, idle_timeout_ns);
        assert_int_equal(kc_pod_workers_new(&cfg, &fx->pw), 0);
        return fx;
}

static inline struct fixture *fixture_new(void)
{
        return fixture_new_cfg(0, 0);
}

static inline void fixture_free(struct fixture *fx)
{
        kc_cancel_trigger_mp(fx->fake.gate);
        kc_cancel_trigger_mp(fx->fake.release);
        kc_pod_workers_free(fx->pw);
        kc_pod_cache_free(fx->cache);
        kc_clock_free(fx->clock);
        kc_cancel_free(fx->fake.gate);
        kc_cancel_free(fx->fake.release);
        pthread_cond_destroy(&fx->fake.cond);
        pthread_mutex_destroy(&fx->fake.lock);
        free(fx);
}

static inline void drain(struct fixture *fx)
{
        assert_int_equal(kc__pod_workers_drain(fx->pw, DRAIN_MS), 0);
}

/* newNamedPod(uid, ns, name, static): spec grace 30 s, phase Pending. */
static inline struct kc_api_pod *new_pod(const char *uid, const char *ns, const char *name,
                                         bool is_static)
{
        struct kc_api_pod tmpl = {
                .uid = uid,
                .name = name,
                .namespace = ns,
                .source = is_static ? "file" : "api",
                .creation_ts = T0,
                .deletion_grace_s = -1,
                .termination_grace_s = 30,
                .phase = KC_POD_PHASE_PENDING,
                .static_pod = is_static,
        };
        struct kc_api_pod *p = NULL;

        assert_int_equal(kc_api_pod_new(&tmpl, &p), 0);
        return p;
}

static inline struct kc_api_pod *new_pod_full(const struct kc_api_pod *tmpl)
{
        struct kc_api_pod *p = NULL;

        assert_int_equal(kc_api_pod_new(tmpl, &p), 0);
        return p;
}

static inline struct kc_pod *new_running_pod(const char *uid, const char *ns, const char *name)
{
        struct kc_pod tmpl = { .id = uid, .name = name, .namespace = ns, .created_at = T0 };
        struct kc_pod *p = NULL;

        assert_int_equal(kc_pod_new(&tmpl, &p), 0);
        return p;
}

static inline void update(struct fixture *fx, enum kc_sync_pod_type t, struct kc_api_pod *pod)
{
        struct kc_pod_update_options o = { .update_type = t, .pod = pod };

        assert_int_equal(kc_pod_workers_update_pod(fx->pw, &o), 0);
}

/* Updates with a pod built on the fly and dropped right after (the workers keep a reference). */
static inline void update_new(struct fixture *fx, enum kc_sync_pod_type t, const char *uid,
                              const char *ns, const char *name, bool is_static)
{
        struct kc_api_pod *p = new_pod(uid, ns, name, is_static);

        update(fx, t, p);
        kc_api_pod_unref(p);
}

static inline size_t recs_for(struct fixture *fx, const char *uid, struct rec *out, size_t max)
{
        size_t n = 0;

        fake_lock(&fx->fake);
        for (size_t i = 0; i < fx->fake.n_recs; i++)
                if (strcmp(fx->fake.recs[i].uid, uid) == 0 && n < max)
                        out[n++] = fx->fake.recs[i];
        fake_unlock(&fx->fake);
        return n;
}

static inline size_t n_recs_for(struct fixture *fx, const char *uid)
{
        struct rec tmp[64];

        return recs_for(fx, uid, tmp, 64);
}

/* Waits (condition variable, real time) until at least @n blocking entries happened. */
static inline void wait_entered(struct fixture *fx, int n)
{
        struct timespec dl;

        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += 10;
        fake_lock(&fx->fake);
        while (fx->fake.entered_blocking < n)
                if (pthread_cond_timedwait(&fx->fake.cond, &fx->fake.lock, &dl) == ETIMEDOUT)
                        break;
        int got = fx->fake.entered_blocking;
        fake_unlock(&fx->fake);
        assert_true(got >= n);
}

/* Waits until @uid has at least @n records. */
static inline void wait_recs(struct fixture *fx, const char *uid, size_t n)
{
        struct timespec dl;
        size_t got;

        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += 10;
        for (;;) {
                got = n_recs_for(fx, uid);
                if (got >= n)
                        break;
                fake_lock(&fx->fake);
                int r = pthread_cond_timedwait(&fx->fake.cond, &fx->fake.lock, &dl);
                fake_unlock(&fx->fake);
                if (r == ETIMEDOUT)
                        break;
        }
        assert_true(n_recs_for(fx, uid) >= n);
}

static inline struct kc__pod_sync_snapshot snap(struct fixture *fx, const char *uid)
{
        struct kc__pod_sync_snapshot s;

        assert_int_equal(kc__pod_workers_snapshot(fx->pw, uid, &s), 0);
        return s;
}
