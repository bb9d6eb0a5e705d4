/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pod workers under an UpdatePod storm (UPSTREAM.md §8).
 *
 * 2,000 pods. Three "config" threads send random Create / Update / Sync /
 * Kill updates (a Kill is either UpdatePod(Kill) with random kill options or
 * an Update carrying a deletion timestamp, as an API deletion does) and a
 * "PLEG" thread re-sends each pod's current version with UpdatePod(Sync), as
 * syncLoop's HandlePodSyncs does for PLEG events, and calls the query
 * predicates. 200,000 operations in all, a fixed amount of work whatever
 * KC_TEST_TIMEOUT_MULTIPLIER says (it scales the time bounds only).
 *
 * Every pod version carries a per-UID generation in creation_ts (T0 + gen;
 * the pod workers never read creation_ts). The test side serialises the
 * updates of one UID on a per-pod mutex held across UpdatePod (which never
 * blocks on a sync), so "the last update sent" is well defined.
 *
 * The fake syncer never asserts (it runs on worker threads): it records
 * violations that the main thread asserts on afterwards:
 *  - two syncer calls in flight for one UID (a per-UID atomic counter);
 *  - a SyncPod that sees an older generation than the previous one;
 *  - a SyncPod starting after SyncTerminatingPod started, a
 *    SyncTerminatingPod after SyncTerminatedPod, SyncTerminatedPod twice
 *    (the one-way Sync -> Terminating -> Terminated machine);
 * and it sleeps 100-500 µs on about one call in 32, honouring its ctx.
 *
 * After the storm and a drain (kc__pod_workers_drain) the main thread checks:
 *  - no violation was recorded;
 *  - every pod never killed: termination not requested, no terminating call,
 *    and the generation its last SyncPod saw is the last one sent;
 *  - every killed pod (a Kill is never lost): SyncTerminatingPod and exactly
 *    one SyncTerminatedPod ran, the workers report it known terminated and
 *    finished, and every completion signal handed in with a Kill is done.
 *
 * A watchdog thread aborts the process with a clear message when neither
 * UpdatePod calls nor syncer calls make progress for 20 s x multiplier while
 * the storm, the drain or kc_pod_workers_free is running (a deadlock; a
 * cmocka assert cannot be used from that thread).
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

#include "core/cancel.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "internal.h"
#include "kc_test.h"
#include "podworkers/pod_workers.h"
#include "runtime/api_pod.h"
#include "runtime/cache.h"
#include "runtime/container.h"

#define T0 (INT64_C(1700000000) * KC_NSEC_PER_SEC)
#define FAR_FUTURE (INT64_C(1) << 62)

#define N_PODS 2000
#define N_CONFIG_THREADS 3
#define OPS_PER_CONFIG_THREAD 50000
#define OPS_PLEG 50000  /* 3 x 50,000 + 50,000 = 200,000 operations */
#define KILL_ONE_IN 800 /* per config op: ~190 kills, ~9 % of the pods */
#define MAX_COMPLETIONS 4
#define MAX_THREADS 32
#define WATCHDOG_MS 20000
#define DRAIN_MS 60000
#define MAX_VIOLATION_TEXT 4096

/* ------------------------------------------------------------------------ */
/* Shared state                                                               */

struct slot {
        /* Test side, under lock: the pod's "pod manager" entry. */
        pthread_mutex_t lock;
        struct kc_api_pod *current; /* latest version sent; NULL until created */
        uint64_t sent_gen;          /* generation of the last update sent */
        bool killed;
        bool deleted; /* a kill by deletion timestamp: later versions keep it */
        int64_t deletion_grace_s;
        struct kc_pod_completion *done[MAX_COMPLETIONS];
        bool done_to_finished[MAX_COMPLETIONS]; /* the pod had finished before the kill */
        unsigned n_done;
        char uid[16];

        /* Syncer side. */
        atomic_int inflight;
        atomic_uint_fast64_t applied_gen; /* generation the last SyncPod saw */
        atomic_int phase;                 /* 0 sync, 1 terminating, 2 terminated */
        atomic_uint n_sync, n_terminating, n_terminated, n_cancelled;
};

enum phase {
        PH_SETUP,
        PH_STORM,
        PH_DRAIN,
        PH_CHECK,
        PH_FREE,
        PH_DONE,
};

struct world {
        struct kc_clock *clock;
        struct kc_pod_cache *cache;
        struct kc_pod_workers *pw;
        struct slot slots[N_PODS];

        atomic_uint_fast64_t progress; /* syncer calls + UpdatePod calls */
        atomic_uint_fast64_t syncer_calls;
        atomic_uint_fast64_t updates;
        atomic_uint_fast64_t enqueues;
        atomic_uint_fast64_t sleeps;
        atomic_int phase;
        atomic_uint seed_counter;
        atomic_bool hold_after_terminating; /* test_runtime_kill_completion_after_terminated */

        pthread_mutex_t vlock;
        atomic_uint violations;
        char vtext[MAX_VIOLATION_TEXT];
        size_t vlen;
};

static struct world *W;

static void violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void violation(const char *fmt, ...)
{
        va_list ap;

        atomic_fetch_add(&W->violations, 1);
        pthread_mutex_lock(&W->vlock);
        if (W->vlen < sizeof(W->vtext) - 2) {
                va_start(ap, fmt);
                int n = vsnprintf(W->vtext + W->vlen, sizeof(W->vtext) - W->vlen - 1, fmt, ap);
                va_end(ap);
                if (n > 0)
                        W->vlen += (size_t)n;
                if (W->vlen > sizeof(W->vtext) - 2)
                        W->vlen = sizeof(W->vtext) - 2;
                W->vtext[W->vlen++] = '\n';
                W->vtext[W->vlen] = '\0';
        }
        pthread_mutex_unlock(&W->vlock);
}

/* xorshift64*: one generator per thread, seeded from a counter (reproducible per thread). */
static uint64_t rnd(uint64_t *s)
{
        *s ^= *s >> 12;
        *s ^= *s << 25;
        *s ^= *s >> 27;
        return *s * UINT64_C(0x2545f4914f6cdd1d);
}

static _Thread_local uint64_t syncer_rng;

static uint64_t syncer_rnd(void)
{
        if (!syncer_rng)
                syncer_rng =
                        UINT64_C(0x9e3779b97f4a7c15) * (1 + atomic_fetch_add(&W->seed_counter, 1));
        return rnd(&syncer_rng);
}

/* ------------------------------------------------------------------------ */
/* The fake syncer                                                            */

static struct slot *slot_of(const char *uid, const char *who)
{
        char *end = NULL;
        unsigned long i;

        if (!uid || strncmp(uid, "pod-", 4) != 0)
                goto bad;
        i = strtoul(uid + 4, &end, 10);
        if (*end || i >= N_PODS)
                goto bad;
        return &W->slots[i];
bad:
        violation("%s: unexpected uid \"%s\"", who, uid ? uid : "(null)");
        return NULL;
}

static void enter(struct slot *s, const char *who)
{
        int prev = atomic_fetch_add(&s->inflight, 1);

        if (prev != 0)
                violation("%s: %d other sync(s) in flight for %s", who, prev, s->uid);
        atomic_fetch_add(&W->syncer_calls, 1);
        atomic_fetch_add(&W->progress, 1);
}

static void leave(struct slot *s)
{
        atomic_fetch_sub(&s->inflight, 1);
        atomic_fetch_add(&W->progress, 1);
}

/* About one call in 32 takes 100-500 µs of real time, cut short by ctx. */
static int maybe_sleep(struct slot *s, struct kc_cancel *ctx)
{
        uint64_t r = syncer_rnd();

        if (r % 32 != 0)
                return 0;
        atomic_fetch_add(&W->sleeps, 1);
        if (kc_clock_sleep(kc_clock_real(), (int64_t)(100 + (r >> 8) % 400) * KC_NSEC_PER_USEC,
                           ctx) == -ECANCELED) {
                atomic_fetch_add(&s->n_cancelled, 1);
                return -ECANCELED;
        }
        return 0;
}

static int f_sync_pod(void *ud, struct kc_cancel *ctx, enum kc_sync_pod_type t,
                      struct kc_api_pod *pod, struct kc_api_pod *mirror,
                      struct kc_pod_status *status, bool *ret_is_terminal,
                      int64_t *ret_requeue_after_ns, char **ret_err)
{
        (void)ret_requeue_after_ns;
        struct slot *s = slot_of(pod ? pod->uid : NULL, "SyncPod");
        uint64_t gen, prev;
        int r;

        (void)ud, (void)t, (void)mirror, (void)status, (void)ret_err;
        if (!s)
                return -EINVAL;
        enter(s, "SyncPod");
        atomic_fetch_add(&s->n_sync, 1);
        if (atomic_load(&s->phase) != 0)
                violation("SyncPod for %s after its termination started (phase %d)", s->uid,
                          atomic_load(&s->phase));
        gen = (uint64_t)(pod->creation_ts - T0);
        prev = atomic_exchange(&s->applied_gen, gen);
        if (gen < prev)
                violation("SyncPod for %s saw generation %llu after %llu", s->uid,
                          (unsigned long long)gen, (unsigned long long)prev);
        r = maybe_sleep(s, ctx);
        *ret_is_terminal = false;
        leave(s);
        return r;
}

static int f_sync_terminating_pod(void *ud, struct kc_cancel *ctx, struct kc_api_pod *pod,
                                  struct kc_pod_status *status, int64_t grace, char **ret_err)
{
        struct slot *s = slot_of(pod ? pod->uid : NULL, "SyncTerminatingPod");
        int r;

        (void)ud, (void)status, (void)ret_err;
        if (!s)
                return -EINVAL;
        enter(s, "SyncTerminatingPod");
        atomic_fetch_add(&s->n_terminating, 1);
        if (grace < 1)
                violation("SyncTerminatingPod for %s with grace %lld", s->uid, (long long)grace);
        if (atomic_load(&s->phase) == 2)
                violation("SyncTerminatingPod for %s after SyncTerminatedPod", s->uid);
        atomic_store(&s->phase, 1);
        r = maybe_sleep(s, ctx);
        /* Park the pod between Terminated and finished (its next signal waits). */
        if (r == 0 && atomic_load(&W->hold_after_terminating) &&
            kc__pod_workers_hold(W->pw, s->uid) < 0)
                violation("cannot hold %s", s->uid);
        leave(s);
        return r;
}

static int f_sync_terminating_runtime_pod(void *ud, struct kc_cancel *ctx, struct kc_pod *rp,
                                          char **ret_err)
{
        (void)ud, (void)ctx, (void)ret_err;
        /* The storm never sends a runtime-only pod. */
        violation("SyncTerminatingRuntimePod for %s", rp && rp->id ? rp->id : "(null)");
        return 0;
}

static int f_sync_terminated_pod(void *ud, struct kc_cancel *ctx, struct kc_api_pod *pod,
                                 struct kc_pod_status *status, char **ret_err)
{
        struct slot *s = slot_of(pod ? pod->uid : NULL, "SyncTerminatedPod");
        int r;

        (void)ud, (void)status, (void)ret_err;
        if (!s)
                return -EINVAL;
        enter(s, "SyncTerminatedPod");
        if (atomic_load(&s->phase) != 1)
                violation("SyncTerminatedPod for %s in phase %d", s->uid, atomic_load(&s->phase));
        r = maybe_sleep(s, ctx);
        if (r == 0) {
                if (atomic_fetch_add(&s->n_terminated, 1) != 0)
                        violation("SyncTerminatedPod for %s succeeded twice", s->uid);
                atomic_store(&s->phase, 2);
        }
        leave(s);
        return r;
}

static const struct kc_pod_syncer_ops syncer_ops = {
        .sync_pod = f_sync_pod,
        .sync_terminating_pod = f_sync_terminating_pod,
        .sync_terminating_runtime_pod = f_sync_terminating_runtime_pod,
        .sync_terminated_pod = f_sync_terminated_pod,
};

/* The kubelet work queue: requeues are only counted (nothing re-drives them). */
static void f_enqueue(void *ud, const char *uid, int64_t delay_ns)
{
        (void)ud, (void)uid, (void)delay_ns;
        atomic_fetch_add_explicit(&W->enqueues, 1, memory_order_relaxed);
}

/* ------------------------------------------------------------------------ */
/* The storm                                                                  */

/* A new version of slot @s's pod with the next generation. Slot lock held. */
static struct kc_api_pod *next_version(struct slot *s, bool delete_it, int64_t deletion_grace_s)
{
        struct kc_api_pod tmpl = {
                .uid = s->uid,
                .name = s->uid,
                .namespace = "stress",
                .source = "api",
                .creation_ts = T0 + (int64_t)++s->sent_gen,
                .deletion_grace_s = -1,
                .termination_grace_s = 30,
                .phase = KC_POD_PHASE_RUNNING,
        };
        struct kc_api_pod *p = NULL;

        if (delete_it) {
                s->deleted = true;
                s->deletion_grace_s = deletion_grace_s;
        }
        if (s->deleted) {
                tmpl.deletion_ts = T0;
                tmpl.deletion_grace_s = s->deletion_grace_s;
        }
        if (kc_api_pod_new(&tmpl, &p) < 0)
                abort();
        kc_api_pod_unref(s->current);
        s->current = p;
        return p;
}

static void send(struct slot *s, enum kc_sync_pod_type t, struct kc_api_pod *pod,
                 const struct kc_kill_pod_options *kill)
{
        struct kc_pod_update_options o = {
                .update_type = t,
                .start_time = kc_clock_now(W->clock),
                .pod = pod,
                .kill_pod_options = kill,
        };
        int r = kc_pod_workers_update_pod(W->pw, &o);

        if (r < 0)
                violation("UpdatePod(%s) for %s: %s", kc_sync_pod_type_to_string(t), s->uid,
                          strerror(-r));
        atomic_fetch_add(&W->updates, 1);
        atomic_fetch_add(&W->progress, 1);
}

/* One Kill: UpdatePod(Kill) with random options, or an API deletion. Slot lock held. */
static void kill_pod(struct slot *s, uint64_t r)
{
        struct kc_kill_pod_options kill = {
                .grace_period_override_s = (r >> 8) % 3 == 0 ? -1 : (int64_t)((r >> 12) % 30),
                .evict = (r >> 20) % 4 == 0,
        };
        struct kc_pod_completion *c = NULL;

        s->killed = true;
        if ((r >> 24) % 3 == 0) {
                /* HandlePodUpdates with a deletion timestamp (graceful deletion). */
                send(s, KC_SYNC_POD_UPDATE, next_version(s, true, (int64_t)((r >> 28) % 30)), NULL);
                return;
        }
        if ((r >> 32) % 2 == 0 && s->n_done < MAX_COMPLETIONS) {
                if (kc_pod_completion_new(&c) < 0)
                        abort();
                kill.completed = c;
                /* finished only ever goes false -> true, and this UID's updates are
                 * serialised by s->lock: true here means finished at UpdatePod. */
                s->done_to_finished[s->n_done] =
                        kc_pod_workers_should_pod_be_finished(W->pw, s->uid);
                s->done[s->n_done++] = c; /* our reference, checked at the end */
        }
        send(s, KC_SYNC_POD_KILL, next_version(s, false, 0), &kill);
}

struct config_thread {
        pthread_t tid;
        unsigned id;
        pthread_barrier_t *start;
};

static void *config_main(void *arg)
{
        struct config_thread *ct = arg;
        uint64_t rng = UINT64_C(0xd1b54a32d192ed03) * (ct->id + 1);

        pthread_barrier_wait(ct->start);
        for (unsigned op = 0; op < OPS_PER_CONFIG_THREAD; op++) {
                uint64_t r = rnd(&rng);
                struct slot *s = &W->slots[r % N_PODS];
                unsigned what = (unsigned)((r >> 16) % 1000);

                r = rnd(&rng);
                pthread_mutex_lock(&s->lock);
                if (!s->current)
                        send(s, KC_SYNC_POD_CREATE, next_version(s, false, 0), NULL);
                else if (r % KILL_ONE_IN == 0 || (s->killed && what < 100))
                        /* Killed pods get more kills: shorter graces, more completions. */
                        kill_pod(s, r);
                else if (what < 500)
                        send(s, KC_SYNC_POD_UPDATE, next_version(s, false, 0), NULL);
                else if (what < 800)
                        send(s, KC_SYNC_POD_SYNC, next_version(s, false, 0), NULL);
                else
                        /* Create again: an update for a live pod, a restart
                         * request for a terminating one. */
                        send(s, KC_SYNC_POD_CREATE, next_version(s, false, 0), NULL);
                pthread_mutex_unlock(&s->lock);
        }
        return NULL;
}

/* syncLoop's PLEG branch: HandlePodSyncs for the pod manager's current version. */
static void *pleg_main(void *arg)
{
        pthread_barrier_t *start = arg;
        uint64_t rng = UINT64_C(0x8cb92ba72f3d8dd7);
        unsigned reads = 0;

        pthread_barrier_wait(start);
        for (unsigned op = 0; op < OPS_PLEG; op++) {
                uint64_t r = rnd(&rng);
                struct slot *s = &W->slots[r % N_PODS];

                pthread_mutex_lock(&s->lock);
                if (s->current)
                        send(s, KC_SYNC_POD_SYNC, s->current, NULL);
                pthread_mutex_unlock(&s->lock);
                /* What the status manager, the deletor and housekeeping ask meanwhile. */
                switch ((r >> 32) % 8) {
                case 0:
                        reads += kc_pod_workers_could_have_running_containers(W->pw, s->uid);
                        break;
                case 1:
                        reads += kc_pod_workers_should_pod_content_be_removed(W->pw, s->uid);
                        break;
                case 2:
                        reads += kc_pod_workers_is_pod_known_terminated(W->pw, s->uid);
                        break;
                default:
                        break;
                }
        }
        (void)reads;
        return NULL;
}

/* ------------------------------------------------------------------------ */
/* Watchdog                                                                   */

static bool watched(int phase)
{
        return phase == PH_STORM || phase == PH_DRAIN || phase == PH_FREE;
}

static void *watchdog_main(void *arg)
{
        int64_t limit = (int64_t)(WATCHDOG_MS * kc_test_timeout_multiplier());
        uint64_t last = atomic_load(&W->progress);
        int last_phase = atomic_load(&W->phase);
        int64_t since = kc_test_mono_ms();

        (void)arg;
        for (;;) {
                int phase = atomic_load(&W->phase);
                uint64_t now = atomic_load(&W->progress);

                if (phase == PH_DONE)
                        return NULL;
                if (now != last || phase != last_phase) {
                        last = now;
                        last_phase = phase;
                        since = kc_test_mono_ms();
                } else if (watched(phase) && kc_test_mono_ms() - since > limit) {
                        fprintf(stderr,
                                "stress_podworkers: WATCHDOG: no progress for %lld ms in "
                                "phase %d (updates=%llu syncer calls=%llu): deadlock in the "
                                "pod workers?\n",
                                (long long)limit, phase,
                                (unsigned long long)atomic_load(&W->updates),
                                (unsigned long long)atomic_load(&W->syncer_calls));
                        for (unsigned i = 0; i < N_PODS; i++)
                                if (atomic_load(&W->slots[i].inflight) != 0)
                                        fprintf(stderr, "  %s: sync in flight (phase %d)\n",
                                                W->slots[i].uid, atomic_load(&W->slots[i].phase));
                        fflush(stderr);
                        abort();
                }
                kc_test_sleep_ms(50);
        }
}

/* ------------------------------------------------------------------------ */
/* The test                                                                   */

static void world_new(void)
{
        struct kc_pod_workers_config cfg;

        W = calloc(1, sizeof(*W));
        assert_non_null(W);
        pthread_mutex_init(&W->vlock, NULL);
        for (unsigned i = 0; i < N_PODS; i++) {
                pthread_mutex_init(&W->slots[i].lock, NULL);
                snprintf(W->slots[i].uid, sizeof(W->slots[i].uid), "pod-%04u", i);
        }
        assert_int_equal(kc_fake_clock_new(&W->clock, T0), 0);
        assert_int_equal(kc_pod_cache_new(&W->cache), 0);
        /*
         * No PLEG writes the cache here: every sync waits in GetNewerThan for
         * data newer than the pod's last sync time, which is the fake clock's
         * time (T0; the clock never moves). A global timestamp far in the
         * future satisfies every such wait at once (cache.go: the global
         * timestamp is what makes GetNewerThan return for pods the runtime
         * has nothing new about), so the syncs run as fast as the workers
         * dispatch them and the storm measures the pod workers, not a PLEG.
         */
        kc_pod_cache_update_time(W->cache, FAR_FUTURE);
        cfg = (struct kc_pod_workers_config){
                .clock = W->clock,
                .cache = W->cache,
                .syncer = &syncer_ops,
                .enqueue = f_enqueue,
                .min_threads = 2,
                .max_threads = MAX_THREADS,
        };
        assert_int_equal(kc_pod_workers_new(&cfg, &W->pw), 0);
}

/* Frees everything and returns the number of violations; their text is copied to @text. */
static unsigned world_free(char text[static MAX_VIOLATION_TEXT])
{
        unsigned n = atomic_load(&W->violations);

        memcpy(text, W->vtext, MAX_VIOLATION_TEXT);
        W->pw = kc_pod_workers_free(W->pw);
        for (unsigned i = 0; i < N_PODS; i++) {
                struct slot *s = &W->slots[i];

                for (unsigned k = 0; k < s->n_done; k++)
                        kc_pod_completion_unref(s->done[k]);
                kc_api_pod_unref(s->current);
                pthread_mutex_destroy(&s->lock);
        }
        kc_pod_cache_free(W->cache);
        kc_clock_free(W->clock);
        pthread_mutex_destroy(&W->vlock);
        free(W);
        W = NULL;
        return n;
}

static void test_update_pod_storm(void **state)
{
        static char text[MAX_VIOLATION_TEXT];
        struct config_thread ct[N_CONFIG_THREADS];
        pthread_t pleg, watchdog;
        pthread_barrier_t start;
        unsigned killed = 0, live = 0, completions = 0, cancelled = 0, n_violations;
        unsigned lost_completions = 0, lost_to_finished = 0;
        uint64_t syncs = 0, terminating = 0;
        int64_t t0, t_storm, t_drain;
        int r;

        (void)state;
        world_new();
        atomic_store(&W->phase, PH_SETUP);
        assert_int_equal(pthread_create(&watchdog, NULL, watchdog_main, NULL), 0);
        assert_int_equal(pthread_barrier_init(&start, NULL, N_CONFIG_THREADS + 2), 0);
        for (unsigned i = 0; i < N_CONFIG_THREADS; i++) {
                ct[i] = (struct config_thread){ .id = i, .start = &start };
                assert_int_equal(pthread_create(&ct[i].tid, NULL, config_main, &ct[i]), 0);
        }
        assert_int_equal(pthread_create(&pleg, NULL, pleg_main, &start), 0);

        atomic_store(&W->phase, PH_STORM);
        t0 = kc_test_mono_ms();
        pthread_barrier_wait(&start);
        for (unsigned i = 0; i < N_CONFIG_THREADS; i++)
                assert_int_equal(pthread_join(ct[i].tid, NULL), 0);
        assert_int_equal(pthread_join(pleg, NULL), 0);
        t_storm = kc_test_mono_ms();

        atomic_store(&W->phase, PH_DRAIN);
        r = kc__pod_workers_drain(W->pw, (int)(DRAIN_MS * kc_test_timeout_multiplier()));
        t_drain = kc_test_mono_ms();
        atomic_store(&W->phase, PH_CHECK);
        if (r < 0)
                fail_msg("the pod workers did not go idle within %d ms after the storm",
                         (int)(DRAIN_MS * kc_test_timeout_multiplier()));

        /* Quiescent: nothing runs any more, every counter is final. Every
         * failed check is collected, then reported together. */
        for (unsigned i = 0; i < N_PODS; i++) {
                struct slot *s = &W->slots[i];

                if (atomic_load(&s->inflight) != 0)
                        violation("%s: a sync is still in flight after the drain", s->uid);
                syncs += atomic_load(&s->n_sync);
                terminating += atomic_load(&s->n_terminating);
                cancelled += atomic_load(&s->n_cancelled);
                if (!s->current)
                        continue;
                if (!s->killed) {
                        live++;
                        if (kc_pod_workers_is_pod_termination_requested(W->pw, s->uid))
                                violation("%s was never killed but is terminating", s->uid);
                        if (atomic_load(&s->n_terminating) != 0)
                                violation("%s was never killed but SyncTerminatingPod ran", s->uid);
                        /* The last update sent is the last one applied (coalescing
                         * keeps the latest; nothing is lost or reordered). */
                        if (atomic_load(&s->applied_gen) != s->sent_gen)
                                violation("%s: last update sent was generation %llu, the last "
                                          "SyncPod saw %llu",
                                          s->uid, (unsigned long long)s->sent_gen,
                                          (unsigned long long)atomic_load(&s->applied_gen));
                        continue;
                }
                killed++;
                /* A kill is never lost: the pod went all the way to finished. */
                if (atomic_load(&s->n_terminating) == 0)
                        violation("%s was killed but SyncTerminatingPod never ran", s->uid);
                if (atomic_load(&s->n_terminated) != 1)
                        violation("%s was killed but SyncTerminatedPod succeeded %u times", s->uid,
                                  atomic_load(&s->n_terminated));
                if (!kc_pod_workers_is_pod_known_terminated(W->pw, s->uid))
                        violation("%s was killed but is not known terminated", s->uid);
                if (!kc_pod_workers_should_pod_be_finished(W->pw, s->uid))
                        violation("%s was killed but is not finished", s->uid);
                if (kc_pod_workers_could_have_running_containers(W->pw, s->uid))
                        violation("%s was killed but could still have running containers", s->uid);
                /* kc_kill_pod_options.completed: "complete it once the pod has
                 * terminated (or at once if it already had)". */
                for (unsigned k = 0; k < s->n_done; k++) {
                        completions++;
                        if (kc_pod_completion_is_done(s->done[k]))
                                continue;
                        lost_completions++;
                        lost_to_finished += s->done_to_finished[k];
                        violation("%s: the completion of kill %u was never signalled%s", s->uid, k,
                                  s->done_to_finished[k] ? " (handed in after the pod finished)"
                                                         : "");
                }
        }
        assert_true(killed > 0 && live > 0);
        if (kc__pod_workers_count(W->pw) != killed + live)
                violation("the workers track %zu pods, %u were created",
                          kc__pod_workers_count(W->pw), killed + live);

        print_message("%llu updates, %llu syncer calls (%llu SyncPod, %llu SyncTerminatingPod, "
                      "%u cancelled sleeps, %llu sleeps), %u live + %u killed pods, %u "
                      "completions, %llu requeues, %u threads; storm %lld ms, drain %lld ms\n",
                      (unsigned long long)atomic_load(&W->updates),
                      (unsigned long long)atomic_load(&W->syncer_calls), (unsigned long long)syncs,
                      (unsigned long long)terminating, cancelled,
                      (unsigned long long)atomic_load(&W->sleeps), live, killed, completions,
                      (unsigned long long)atomic_load(&W->enqueues),
                      kc__pod_workers_thread_count(W->pw), (long long)(t_storm - t0),
                      (long long)(t_drain - t_storm));

        atomic_store(&W->phase, PH_FREE);
        /* kc_pod_workers_free (cancels, joins) runs under the watchdog too. */
        W->pw = kc_pod_workers_free(W->pw);
        atomic_store(&W->phase, PH_DONE);
        assert_int_equal(pthread_join(watchdog, NULL), 0);
        pthread_barrier_destroy(&start);
        n_violations = world_free(text);
        if (n_violations != 0)
                fail_msg("%u invariant violation(s) (%u of %u kill completions never signalled, "
                         "%u of them handed in after the pod had finished); first ones:\n%s",
                         n_violations, lost_completions, completions, lost_to_finished, text);
}

struct abnormal_wait {
        struct kc_api_pod *pod;
        atomic_int result;
        atomic_bool done;
};

static void *abnormal_wait_main(void *arg)
{
        struct abnormal_wait *a = arg;

        atomic_store(&a->result,
                     kc_pod_workers_terminate_pod_abnormally_and_wait(W->pw, a->pod, false, -1));
        atomic_store(&a->done, true);
        return NULL;
}

/*
 * What the storm found first, made deterministic: a Kill carrying a
 * completion signal for a pod that already finished. podworkers/pod_workers.h
 * promises to complete it "at once if it already had [terminated]"; before
 * the F-PW-13 branch of kc_pod_workers_update_pod completed it
 * (docs/deviations.md D7) the signal was dropped, and
 * TerminatePodAbnormallyAndWait on such a pod waited out its whole timeout
 * (10 s of the workers' clock), then reported -ETIMEDOUT with a false
 * ExceededGracePeriod warning.
 */
static void test_kill_completion_after_finished(void **state)
{
        static char text[MAX_VIOLATION_TEXT];
        struct slot *s;
        struct kc_kill_pod_options kill = { .grace_period_override_s = -1 };
        struct abnormal_wait aw = { 0 };
        struct kc_pod_completion *c = NULL;
        bool done_at_once, waited;
        pthread_t t;
        int result;

        (void)state;
        world_new();
        s = &W->slots[0];
        pthread_mutex_lock(&s->lock);
        send(s, KC_SYNC_POD_CREATE, next_version(s, false, 0), NULL);
        send(s, KC_SYNC_POD_KILL, next_version(s, false, 0), &kill);
        pthread_mutex_unlock(&s->lock);
        assert_int_equal(kc__pod_workers_drain(W->pw, (int)(10000 * kc_test_timeout_multiplier())),
                         0);
        assert_true(kc_pod_workers_should_pod_be_finished(W->pw, s->uid));
        assert_int_equal(atomic_load(&s->n_terminated), 1);

        /* UpdatePod(Kill) with a completion on the finished pod. */
        assert_int_equal(kc_pod_completion_new(&c), 0);
        kill.completed = c;
        pthread_mutex_lock(&s->lock);
        send(s, KC_SYNC_POD_KILL, next_version(s, false, 0), &kill);
        aw.pod = kc_api_pod_ref(s->current);
        pthread_mutex_unlock(&s->lock);
        done_at_once = kc_pod_completion_is_done(c);
        kc_pod_completion_unref(c);

        /* TerminatePodAbnormallyAndWait on it: should return 0 at once. When it
         * sleeps on the fake clock instead, move the clock past its 10 s. */
        assert_int_equal(pthread_create(&t, NULL, abnormal_wait_main, &aw), 0);
        waited = KC_TEST_WAIT_UNTIL(atomic_load(&aw.done) || kc_fake_clock_sleepers(W->clock) > 0,
                                    5000) &&
                 !atomic_load(&aw.done);
        if (waited)
                assert_int_equal(kc_fake_clock_advance(W->clock, 11 * KC_NSEC_PER_SEC), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        result = atomic_load(&aw.result);
        kc_api_pod_unref(aw.pod);

        assert_int_equal(world_free(text), 0);
        if (!done_at_once || waited || result != 0)
                fail_msg("kill of a finished pod: completion done at once: %s; "
                         "TerminatePodAbnormallyAndWait %s and returned %d (%s)",
                         done_at_once ? "yes" : "NO",
                         waited ? "SLEPT until the clock passed its timeout" : "did not wait",
                         result, result < 0 ? strerror(-result) : "ok");
}

/*
 * The same promise for a runtime-only kill (the RunningPod that
 * HandlePodCleanups sends for runtime pods the workers do not know) arriving
 * while the pod is terminated but not yet finished: kc_pod_workers_update_pod
 * returns at "Pod is waiting for termination, ignoring runtime-only kill"
 * before it completes the kill's completion signal, which is then never
 * completed (the workers did not take a reference, so not even
 * kc_pod_workers_free completes it). Upstream's UpdatePod returns there too
 * without closing CompletedCh; podworkers/pod_workers.h (kill_pod_options.completed:
 * "complete it once the pod has terminated (or at once if it already had)")
 * and docs/deviations.md D7 ("completion signals always fire") promise more.
 */
static void test_runtime_kill_completion_after_terminated(void **state)
{
        static char text[MAX_VIOLATION_TEXT];
        struct kc_kill_pod_options kill = { .grace_period_override_s = -1 };
        struct kc_pod_update_options o;
        struct kc_pod_completion *c = NULL;
        struct kc_pod *running = NULL;
        struct slot *s;
        bool done_at_once, terminated, finished_before;

        (void)state;
        world_new();
        s = &W->slots[1];
        atomic_store(&W->hold_after_terminating, true);
        pthread_mutex_lock(&s->lock);
        send(s, KC_SYNC_POD_CREATE, next_version(s, false, 0), NULL);
        send(s, KC_SYNC_POD_KILL, next_version(s, false, 0), &kill);
        pthread_mutex_unlock(&s->lock);
        /* Not a drain first: kc__pod_workers_hold does not signal the drain's
         * condition variable, so a drain already waiting when the pod gets held
         * only returns at its timeout. Once terminated (and held), it is idle. */
        assert_true(
                KC_TEST_WAIT_UNTIL(kc_pod_workers_is_pod_known_terminated(W->pw, s->uid), 10000));
        assert_int_equal(kc__pod_workers_drain(W->pw, (int)(10000 * kc_test_timeout_multiplier())),
                         0);
        terminated = kc_pod_workers_is_pod_known_terminated(W->pw, s->uid);
        finished_before = kc_pod_workers_should_pod_be_finished(W->pw, s->uid);

        assert_int_equal(kc_pod_completion_new(&c), 0);
        assert_int_equal(kc_pod_new(&(struct kc_pod){ .id = s->uid,
                                                      .name = s->uid,
                                                      .namespace = "stress",
                                                      .created_at = T0 },
                                    &running),
                         0);
        kill = (struct kc_kill_pod_options){ .grace_period_override_s = 1, .completed = c };
        o = (struct kc_pod_update_options){
                .update_type = KC_SYNC_POD_KILL,
                .running_pod = running,
                .kill_pod_options = &kill,
        };
        assert_int_equal(kc_pod_workers_update_pod(W->pw, &o), 0);
        done_at_once = kc_pod_completion_is_done(c);
        kc_pod_unref(running);

        /* Let the pod finish; the signal is still not completed then. */
        kc__pod_workers_release(W->pw, s->uid);
        assert_int_equal(kc__pod_workers_drain(W->pw, (int)(10000 * kc_test_timeout_multiplier())),
                         0);
        assert_true(kc_pod_workers_should_pod_be_finished(W->pw, s->uid));
        assert_int_equal(world_free(text), 0);
        /* Even kc_pod_workers_free did not complete it. */
        bool done_ever = kc_pod_completion_is_done(c);
        kc_pod_completion_unref(c);

        assert_true(terminated);
        assert_false(finished_before);
        if (!done_at_once)
                fail_msg("runtime-only kill of a terminated pod: its completion was not "
                         "completed at once (completed later: %s)",
                         done_ever ? "yes" : "NEVER, not even by kc_pod_workers_free");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_kill_completion_after_finished),
                cmocka_unit_test(test_runtime_kill_completion_after_terminated),
                cmocka_unit_test(test_update_pod_storm),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
