/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pod workers (upstream pkg/kubelet/pod_workers.go, UPSTREAM.md §8).
 *
 * Threading decision: a pool of worker threads with per-pod mailboxes and a
 * ready queue, not a thread per pod.
 *
 * Upstream runs one goroutine per pod UID that sleeps on a 1-slot channel.
 * A goroutine costs a few KiB; a pthread costs a kernel task, a stack
 * mapping (even at 64 KiB the touched pages plus guard page and the TLS/TCB
 * are several pages) and scheduler bookkeeping. At the target of 10,000 pods
 * that is 10,000 mostly idle threads: more than the ~16 KiB RSS budget per
 * idle pod once the kernel side is counted, thread creation on every pod
 * start and risk of hitting RLIMIT_NPROC / threads-max on small nodes. So:
 *
 *  - Per pod there is only a mailbox: `struct pod_entry` (the podSyncStatus
 *    plus the pending update, a few hundred bytes). An idle pod costs that
 *    and nothing else.
 *  - "Signalling the worker" sets the entry's `signalled` bit and, when no
 *    sync is in flight for the pod and it is not queued already, appends it
 *    to one FIFO ready queue. This gives upstream's guarantees directly: at
 *    most one sync in flight per pod (an entry is either queued, in flight,
 *    or idle, never two of them), the latest pending update wins (the
 *    mailbox holds one update, replaced under the lock) and an update that
 *    arrives during a sync is picked up right after it (the bit is checked
 *    when the sync finishes).
 *  - Worker threads take entries from the ready queue and run one
 *    iteration of upstream's podWorkerLoop each. A sync may block for a
 *    long time (SyncTerminatingPod waits out a grace period), so the pool
 *    grows on demand (up to max_threads, default 1024, stack 256 KiB via
 *    pthread_attr_setstacksize): at once while it has fewer than two
 *    threads per CPU, beyond that by one thread each time ready work
 *    waits 10 ms while no thread takes or finishes any (the grower
 *    thread). Syncs that only compute keep taking work, so a burst of
 *    thousands of them runs on a few threads; syncs that block stall the
 *    queue, so with 1 % of 10,000 pods stuck 30 s in termination ~100
 *    threads are blocked and the others keep serving the queue: a stuck
 *    pod delays another pod's dispatch by one stall at most. Threads above
 *    min_threads that stay idle for idle_timeout (30 s of monotonic time)
 *    exit, and so does a thread past eager_threads that finds no work while
 *    eager_threads others are idle, once no stall has called for a thread
 *    for idle_timeout (surplus_locked()); the next spawn, exit or
 *    kc_pod_workers_free joins them.
 *  - Waiting for a fresh status (GetNewerThan, F-PW-07) holds no thread:
 *    the iteration parks and the cache's observer resumes it when a write
 *    would have ended the wait (cache_status()). Every resync of every pod
 *    waits up to a relist period there; blocking a thread each, a resync
 *    burst at 5,000 pods held hundreds (issue 18).
 *  - Nothing spins: idle threads sleep on a condition variable
 *    (CLOCK_MONOTONIC, timed only for the idle exit), the grower on one of
 *    its own (timed while work is ready, else with a 1 s net); blocked
 *    syncs sleep in the syncer on the pod's ctx token.
 *  - One mutex (upstream's podLock) guards every entry, the ready queue,
 *    the static-pod maps and the pool counters. It is never held across a
 *    syncer call, the pod cache's blocking wait or the enqueue callback.
 *    Lock order: pw->lock, then the pod cache's lock (first-sight
 *    kc_pod_cache_get) or a kc_cancel's lock (cancelling a sync); the
 *    cache's observer lock, then pw->lock (cache_observed()).
 *
 * Idle-thread reaping uses monotonic wall time on purpose: it is a resource
 * policy, not kubelet behaviour, and must work under a fake clock.
 *
 * Deviations from upstream (docs/deviations.md candidates):
 *  - the oldest StartTime is kept also when the new update has none
 *    (upstream's time.Before drops it then);
 *  - mergeLastUpdate keeps Evict sticky across kill options (F-PW-19);
 *  - completion signals are also completed when an unstarted pod is
 *    cleaned up or the workers are freed, so waiters never hang;
 *  - PodStatusFunc (kill status override) is not implemented.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/array.h"
#include "core/cancel.h"
#include "core/cleanup.h"
#include "core/enum_table.h"
#include "core/clock.h"
#include "core/jitter.h"
#include "core/list.h"
#include "core/lock.h"
#include "core/log.h"
#include "core/map.h"
#include "core/thread.h"
#include "internal.h"
#include "metrics/kubelet_metrics.h"
#include "metrics/registry.h"
#include "podworkers/pod_workers.h"
#include "runtime/api_pod.h"
#include "runtime/cache.h"
#include "runtime/container.h"

#define DEFAULT_MIN_THREADS 2u
#define DEFAULT_MAX_THREADS 1024u
#define DEFAULT_STACK_SIZE ((size_t)256 * 1024)
#define DEFAULT_IDLE_TIMEOUT_NS (30 * KC_NSEC_PER_SEC)
/* Threads started at once for ready work, per CPU; more only when it stalls. */
#define EAGER_THREADS_PER_CPU 2u
/*
 * Ready work waiting this long while no thread took any or finished one
 * grows the pool by one thread. Shorter, threads waiting their turn for a
 * contended lock (the simulated runtime's, 5,000 pods starting at once)
 * looked blocked: at 1 ms the pool still grew to hundreds at start-up.
 */
#define STALL_NS (10 * KC_NSEC_PER_MSEC)

/* ------------------------------------------------------------------------ */
/* Completion signal                                                          */

struct kc_pod_completion {
        atomic_int refs;
        struct kc_cancel *done; /* a one-shot token: triggered = completed */
};

int kc_pod_completion_new(struct kc_pod_completion **ret)
{
        struct kc_pod_completion *c;
        int r;

        if (!ret)
                return -EINVAL;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        r = kc_cancel_new(&c->done);
        if (r < 0) {
                free(c);
                return r;
        }
        atomic_init(&c->refs, 1);
        *ret = c;
        return 0;
}

struct kc_pod_completion *kc_pod_completion_ref(struct kc_pod_completion *c)
{
        if (c)
                atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
        return c;
}

struct kc_pod_completion *kc_pod_completion_unref(struct kc_pod_completion *c)
{
        if (!c)
                return NULL;
        /* acq_rel: the last unref must see every write made under other refs. */
        if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1) {
                kc_cancel_free(c->done);
                free(c);
        }
        return NULL;
}

void kc_pod_completion_complete(struct kc_pod_completion *c)
{
        if (c)
                kc_cancel_trigger_mp(c->done);
}

bool kc_pod_completion_is_done(const struct kc_pod_completion *c)
{
        return c && kc_cancel_is_set(c->done);
}

int kc_pod_completion_wait(struct kc_pod_completion *c, struct kc_clock *clock, int64_t timeout_ns)
{
        if (kc_cancel_is_set(c->done))
                return 0;
        if (kc_clock_sleep(clock, timeout_ns, c->done) == -ECANCELED)
                return 0;
        return kc_cancel_is_set(c->done) ? 0 : -ETIMEDOUT;
}

/* ------------------------------------------------------------------------ */
/* Enum strings                                                               */

KC_DEFINE_STRING_TABLE(
        kc_sync_pod_type, enum kc_sync_pod_type,
        _KC_SYNC_POD_TYPE_MAX, [KC_SYNC_POD_SYNC] = "sync", [KC_SYNC_POD_UPDATE] = "update",
        [KC_SYNC_POD_CREATE] = "create", [KC_SYNC_POD_KILL] = "kill", )

KC_DEFINE_STRING_TABLE(
        kc_pod_work_type, enum kc_pod_work_type, _KC_POD_WORK_TYPE_MAX, [KC_POD_WORK_SYNC] = "sync",
        [KC_POD_WORK_TERMINATING] = "terminating", [KC_POD_WORK_TERMINATED] = "terminated", )

/* ------------------------------------------------------------------------ */
/* Data                                                                       */

/* One UpdatePodOptions as the workers keep it: owns its references. */
struct pw_update {
        enum kc_sync_pod_type type;
        int64_t start_time;
        struct kc_api_pod *pod;
        struct kc_api_pod *mirror;
        struct kc_pod *running;
        bool has_kill;
        int64_t grace_override; /* -1: unset */
        bool evict;
};

/* One iteration's work, as startPodSync hands it out. */
struct pod_work {
        enum kc_pod_work_type type;
        struct pw_update u;
        struct kc_cancel *ctx;
        /* Resumed by a cache write at least as new as the last sync: read the status plainly. */
        bool delivered;
};

/* An iteration waiting for the cache, allocated when it parks. */
struct parked_iteration {
        struct pod_entry *e;
        struct kc_list link; /* on pw->parked while parked */
        int64_t min;         /* the wait's minTime: the last sync */
        struct pod_work w;
};

/* podSyncStatus plus the pod's mailbox. Every field is under pw->lock,
 * except last_sync_time, touched only by the thread running the pod's
 * iteration (iterations hand over through the lock). */
struct pod_entry {
        char *fullname;
        struct kc_cancel *ctx; /* the running sync's context; NULL until first sync */
        bool has_pending, has_active;
        struct pw_update pending; /* latest unprocessed request */
        struct pw_update active;  /* last request handed to a sync function */
        int64_t synced_at, started_at, terminating_at, terminated_at; /* 0: unset */
        int64_t grace_period;                                         /* 0: unset */
        struct kc_pod_completion **notify;                            /* notifyPostTerminating */
        size_t n_notify, cap_notify;
        bool working, started_terminating, deleted, evicted, finished, restart_requested,
                observed_runtime;

        /* Mailbox / scheduling. */
        bool has_worker;        /* podUpdates[uid] exists */
        bool worker_exited;     /* the worker loop returned: never scheduled again */
        bool signalled;         /* the 1-slot channel holds a signal */
        bool in_flight;         /* a pool thread runs an iteration for it */
        bool removed;           /* dropped from the map while in flight: the thread frees it */
        struct kc_list rq_link; /* linked on pw->rq while queued */

        /*
         * Parked: an iteration (still in flight) whose sync waits for a
         * fresh status, held by no thread (@park on pw->parked). Resumed:
         * back on the ready queue to go on with @park. NULL otherwise.
         */
        struct parked_iteration *park;
        bool parked;

        int64_t last_sync_time;
        char uid[]; /* map key */
};

struct worker_thread {
        struct kc_thread thread;
        struct kc_pod_workers *pw;
        struct worker_thread *next; /* on pw->threads while live */
        /* Idle: waiting on its own condition variable, on pw->idle_top. */
        pthread_cond_t cond;
        struct worker_thread *idle_next;
        bool on_idle_stack;
};

struct static_started {
        char *uid;
        char fullname[]; /* map key */
};

struct static_waiting {
        char **uids;
        size_t n, cap;
        char fullname[]; /* map key */
};

struct kc_pod_workers {
        struct kc_clock *clock;
        struct kc_pod_cache *cache;
        const struct kc_pod_syncer_ops *syncer;
        void *syncer_userdata;
        void (*enqueue)(void *userdata, const char *uid, int64_t delay_ns);
        void *enqueue_userdata;
        int64_t resync_interval_ns, backoff_period_ns;
        double (*random)(void *userdata);
        void *random_userdata;
        unsigned min_threads, max_threads;
        unsigned eager_threads; /* grown at once up to this many; beyond, by the grower */
        size_t stack_size;
        int64_t idle_timeout_ns;
        struct kc_kubelet_metrics *metrics; /* borrowed, may be NULL */

        pthread_mutex_t lock;
        /*
         * Idle pool threads, the most recently idle first: work wakes the top
         * one, so under a light load the same few threads serve it and the
         * others reach the idle timeout and exit. (One shared condition
         * variable woke the oldest waiter first: every thread got work in
         * turn, none ever idled for the timeout, and a pool grown in a burst
         * never shrank, each thread's malloc cache growing: bench/soak.py.)
         */
        struct worker_thread *idle_top;
        pthread_cond_t idle_cond; /* kc__pod_workers_drain */

        struct kc_map *pods; /* uid → struct pod_entry */
        bool pods_synced;
        struct kc_map *started_static; /* fullname → struct static_started */
        struct kc_map *waiting_static; /* fullname → struct static_waiting */
        struct kc_map *held;           /* uid → malloc'd uid (tests) */

        struct kc_list rq; /* the ready queue, FIFO: struct pod_entry.rq_link */
        size_t rq_len;
        /* Monotonic ns of the last pop or finished iteration, or of the queue filling. */
        int64_t rq_progress;
        /* Monotonic ns of the grower's last spawn for a stall (surplus_locked()). */
        int64_t last_stall;

        /* Grows the pool past eager_threads while ready work stalls (grower_main()). */
        pthread_t grower;
        bool grower_started, grower_waiting;
        pthread_cond_t grow_cond;

        /*
         * Iterations waiting for the cache (struct parked_iteration), and
         * the observer's side of parking (cache_observed()): the writes it
         * has seen and how many are parked, both atomic so that a write and
         * a parking thread always see one another (park_locked()).
         */
        struct kc_list parked;
        atomic_uint n_parked;
        atomic_uint_fast64_t writes_seen;
        bool observing; /* registered as the cache's observer */

        struct worker_thread *threads; /* live */
        struct kc_reaper reaper;       /* counts the live; lists those exited on idle */
        unsigned n_idle;
        unsigned n_starting; /* spawned, not yet looking for work: as good as idle */
        bool stopping;
};

/* ------------------------------------------------------------------------ */
/* Small helpers                                                              */

static void cond_init_monotonic(pthread_cond_t *c)
{
        pthread_condattr_t attr;

        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(c, &attr);
        pthread_condattr_destroy(&attr);
}

static int64_t monotonic_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * KC_NSEC_PER_SEC + ts.tv_nsec;
}

/* Monotonic ns @t as a deadline for a CLOCK_MONOTONIC condition variable. */
static struct timespec timespec_at(int64_t t)
{
        return (struct timespec){ .tv_sec = t / KC_NSEC_PER_SEC, .tv_nsec = t % KC_NSEC_PER_SEC };
}

static struct timespec monotonic_deadline(int64_t ns)
{
        return timespec_at(monotonic_ns() + ns);
}

static void update_done(struct pw_update *u)
{
        kc_api_pod_unref(u->pod);
        kc_api_pod_unref(u->mirror);
        kc_pod_unref(u->running);
        *u = (struct pw_update){ .grace_override = -1 };
}

static void update_copy(struct pw_update *dst, const struct pw_update *src)
{
        *dst = *src;
        kc_api_pod_ref(dst->pod);
        kc_api_pod_ref(dst->mirror);
        kc_pod_ref(dst->running);
}

static bool is_static_pod(const struct kc_api_pod *pod)
{
        return pod && pod->static_pod;
}

static enum kc_pod_work_type work_type(const struct pod_entry *e)
{
        if (e->terminated_at != 0)
                return KC_POD_WORK_TERMINATED;
        if (e->terminating_at != 0)
                return KC_POD_WORK_TERMINATING;
        return KC_POD_WORK_SYNC;
}

static bool is_termination_requested(const struct pod_entry *e)
{
        return e->terminating_at != 0;
}

static bool is_terminated(const struct pod_entry *e)
{
        return e->terminated_at != 0;
}

static bool is_started(const struct pod_entry *e)
{
        return e->started_at != 0;
}

int64_t kc__pod_workers_jitter(struct kc_pod_workers *pw, int64_t d, double factor)
{
        double r;

        if (!pw->random)
                return kc_jitter(d, factor);
        if (d <= 0)
                return d;
        if (factor <= 0)
                factor = 1.0;
        r = pw->random(pw->random_userdata);
        if (!(r >= 0.0))
                r = 0.0;
        if (r >= 1.0)
                r = 0.999999999;
        return d + (int64_t)((double)d * factor * r);
}

/* @p d with the pod workers' jitter. */
static int64_t jittered(struct kc_pod_workers *pw, int64_t d)
{
        return kc__pod_workers_jitter(pw, d, KC_POD_WORKERS_JITTER_FACTOR);
}

/* Asks for a retry of @p uid after the back-off period ("not yet"). Call without the lock. */
static void enqueue_backoff(struct kc_pod_workers *pw, const char *uid)
{
        pw->enqueue(pw->enqueue_userdata, uid, jittered(pw, pw->backoff_period_ns));
}

/* ------------------------------------------------------------------------ */
/* Entries                                                                    */

static struct pod_entry *entry_new(const char *uid, const char *name, const char *ns)
{
        size_t len = strlen(uid) + 1;
        struct pod_entry *e;

        e = calloc(1, sizeof(*e) + len);
        if (!e)
                return NULL;
        memcpy(e->uid, uid, len);
        e->fullname = kc_pod_full_name(name, ns);
        if (!e->fullname) {
                free(e);
                return NULL;
        }
        e->pending.grace_override = -1;
        e->active.grace_override = -1;
        kc_list_init(&e->rq_link);
        return e;
}

static void notify_all_locked(struct pod_entry *e)
{
        for (size_t i = 0; i < e->n_notify; i++) {
                kc_pod_completion_complete(e->notify[i]);
                kc_pod_completion_unref(e->notify[i]);
        }
        e->n_notify = 0;
}

static void entry_free(struct pod_entry *e)
{
        if (!e)
                return;
        notify_all_locked(e);
        free(e->notify);
        update_done(&e->pending);
        update_done(&e->active);
        if (e->park)
                update_done(&e->park->w.u);
        free(e->park);
        kc_cancel_free(e->ctx);
        free(e->fullname);
        free(e);
}

static bool is_queued(const struct pod_entry *e)
{
        return kc_list_linked(&e->rq_link);
}

static void rq_unlink_locked(struct kc_pod_workers *pw, struct pod_entry *e)
{
        kc_list_del(&e->rq_link);
        pw->rq_len--;
}

static struct pod_entry *rq_pop_locked(struct kc_pod_workers *pw)
{
        struct kc_list *first = kc_list_first(&pw->rq);
        struct pod_entry *e;

        if (!first)
                return NULL;
        e = kc_list_entry(first, struct pod_entry, rq_link);
        rq_unlink_locked(pw, e);
        pw->rq_progress = monotonic_ns();
        return e;
}

/* Drops @e from the map (status gone). Frees it unless its iteration is in flight. */
static void remove_entry_locked(struct kc_pod_workers *pw, struct pod_entry *e)
{
        kc_map_remove(pw->pods, e->uid);
        pthread_cond_broadcast(&pw->idle_cond);
        if (e->in_flight) {
                /* Running, parked or resumed: the iteration frees it at its end. */
                e->removed = true;
                return;
        }
        if (is_queued(e))
                rq_unlink_locked(pw, e);
        entry_free(e);
}

static void set_not_working_locked(struct kc_pod_workers *pw, struct pod_entry *e)
{
        e->working = false;
        pthread_cond_broadcast(&pw->idle_cond);
}

/* ------------------------------------------------------------------------ */
/* The pool                                                                   */

static void *worker_main(void *arg);

/* Frees a joined pool thread. */
static void worker_thread_release(struct kc_thread *thread)
{
        struct worker_thread *t = kc_container_of(thread, struct worker_thread, thread);

        pthread_cond_destroy(&t->cond);
        free(t);
}

/* Starts a pool thread; false when it could not (logged). */
static bool spawn_locked(struct kc_pod_workers *pw)
{
        struct worker_thread *t;
        int r;

        t = calloc(1, sizeof(*t));
        if (!t) {
                kc_log_error_s(strerror(ENOMEM), "Pod workers: cannot allocate a worker thread");
                return false;
        }
        t->pw = pw;
        cond_init_monotonic(&t->cond);
        r = kc_reaper_spawn_locked(&pw->reaper, &t->thread, pw->stack_size, worker_main, t);
        if (r < 0) {
                /* Queued work stays queued: a running thread or the next
                 * spawn picks it up. */
                kc_log_error_s(strerror(-r), "Pod workers: pthread_create failed",
                               KC_KV_UINT("threads", pw->reaper.n_running));
                worker_thread_release(&t->thread);
                return false;
        }
        /* The pool is the one elastic set of threads: named, so that a soak
         * (bench/soak.py) or top -H tells it from the fixed ones. */
        (void)pthread_setname_np(t->thread.tid, "kc-podworker");
        t->next = pw->threads;
        pw->threads = t;
        pw->n_starting++;
        return true;
}

/* Wakes the most recently idle thread, if any. */
static void wake_one_locked(struct kc_pod_workers *pw)
{
        struct worker_thread *t = pw->idle_top;

        if (!t)
                return;
        pw->idle_top = t->idle_next;
        t->idle_next = NULL;
        t->on_idle_stack = false;
        pthread_cond_signal(&t->cond);
}

/* Sleeps on @self's condition variable until woken or @deadline, on top of the idle stack. */
static int idle_wait_locked(struct kc_pod_workers *pw, struct worker_thread *self,
                            const struct timespec *deadline)
{
        struct worker_thread **p;
        int r;

        self->idle_next = pw->idle_top;
        pw->idle_top = self;
        self->on_idle_stack = true;
        r = pthread_cond_timedwait(&self->cond, &pw->lock, deadline);
        if (self->on_idle_stack) {
                /* Timed out (or a spurious wakeup): nobody popped us. */
                for (p = &pw->idle_top; *p && *p != self; p = &(*p)->idle_next)
                        ;
                if (*p)
                        *p = self->idle_next;
                self->idle_next = NULL;
                self->on_idle_stack = false;
        }
        return r;
}

/* More ready pods than threads about to look for work (one still starting counts). */
static bool short_of_threads_locked(const struct kc_pod_workers *pw)
{
        return pw->rq_len > pw->n_idle + pw->n_starting && pw->reaper.n_running < pw->max_threads;
}

/*
 * Appends @e to the ready queue and finds it a thread: an idle one, a new
 * one while the pool is under eager_threads, or else the grower's, should
 * the queue stall.
 */
static void rq_push_locked(struct kc_pod_workers *pw, struct pod_entry *e)
{
        if (pw->rq_len == 0)
                pw->rq_progress = monotonic_ns();
        kc_list_add_tail(&pw->rq, &e->rq_link);
        pw->rq_len++;
        if (short_of_threads_locked(pw)) {
                if (pw->reaper.n_running < pw->eager_threads)
                        spawn_locked(pw);
                else if (pw->grower_waiting)
                        pthread_cond_signal(&pw->grow_cond);
        }
        wake_one_locked(pw);
}

/*
 * The grower: one thread past eager_threads each time ready work waits
 * STALL_NS while every thread is busy and none takes or finishes work.
 * Those threads are blocked (in a runtime call, a grace period), not short
 * of CPU: syncs that only compute keep taking work and the pool stays at
 * eager_threads, however long the queue. Upstream's goroutines get the
 * same from Go's scheduler, which adds an OS thread when one blocks in a
 * system call.
 */
static void *grower_main(void *arg)
{
        struct kc_pod_workers *pw = arg;

        (void)pthread_setname_np(pthread_self(), "kc-podgrower");
        pthread_mutex_lock(&pw->lock);
        while (!pw->stopping) {
                struct timespec at;
                int64_t due, now;

                if (!short_of_threads_locked(pw)) {
                        /* Nothing to do until a push finds every thread busy; 1 s is a net. */
                        pw->grower_waiting = true;
                        at = monotonic_deadline(KC_NSEC_PER_SEC);
                        pthread_cond_timedwait(&pw->grow_cond, &pw->lock, &at);
                        pw->grower_waiting = false;
                        continue;
                }
                due = pw->rq_progress + STALL_NS;
                now = monotonic_ns();
                if (now >= due) {
                        /* The new thread's start is the next progress to wait for;
                         * a failed start (logged) is tried again after the net. */
                        pw->rq_progress = now;
                        pw->last_stall = now;
                        if (spawn_locked(pw))
                                continue;
                        due = now + KC_NSEC_PER_SEC;
                }
                at = timespec_at(due);
                pthread_cond_timedwait(&pw->grow_cond, &pw->lock, &at);
        }
        pthread_mutex_unlock(&pw->lock);
        return NULL;
}

/* Sends the signal: marks the mailbox and makes the entry ready if it can run. */
static void schedule_locked(struct kc_pod_workers *pw, struct pod_entry *e)
{
        e->signalled = true;
        if (e->in_flight || is_queued(e) || !e->has_worker || e->worker_exited || e->removed ||
            pw->stopping)
                return;
        if (pw->held && kc_map_get(pw->held, e->uid))
                return;
        rq_push_locked(pw, e);
}

/*
 * Resumes parked @e: back on the ready queue to go on with its work.
 * @delivered: a cache write at least as new as the wait's minTime was seen.
 */
static void unpark_locked(struct kc_pod_workers *pw, struct pod_entry *e, bool delivered)
{
        kc_list_del(&e->park->link);
        e->parked = false;
        atomic_fetch_sub(&pw->n_parked, 1);
        e->park->w.delivered = delivered;
        rq_push_locked(pw, e);
}

/*
 * The cache's observer: a write of @uid's entry (NULL: UpdateTime) at
 * @ts resumes the parked iterations it makes ready, as a subscriber's wait
 * would end (ts >= minTime). Called on the writer's thread, cache unlocked.
 */
static void cache_observed(void *ud, const char *uid, int64_t ts)
{
        struct kc_pod_workers *pw = ud;
        struct parked_iteration *p, *next;
        struct pod_entry *e;

        /* Sequentially consistent, against park_locked(): see there. */
        atomic_fetch_add(&pw->writes_seen, 1);
        if (atomic_load(&pw->n_parked) == 0)
                return;
        KC_LOCK_GUARD(&pw->lock);
        if (uid) {
                /* A removed entry is not in the map: the next UpdateTime resumes it. */
                e = kc_map_get(pw->pods, uid);
                if (e && e->parked && ts >= e->park->min)
                        unpark_locked(pw, e, true);
                return;
        }
        kc_list_for_each_entry_safe (p, next, &pw->parked, struct parked_iteration, link)
                if (ts >= p->min)
                        unpark_locked(pw, p->e, true);
}

/* ------------------------------------------------------------------------ */
/* Grace period and static pods                                               */

int64_t kc__calculate_effective_grace_period(int64_t status_grace, const struct kc_api_pod *pod,
                                             int64_t override_s, bool *ret_shortened)
{
        int64_t g = status_grace;
        bool overridden = false;

        /* Bedrock truth: the API server's deletion grace. */
        if (pod && pod->deletion_grace_s >= 0 && (g == 0 || pod->deletion_grace_s < g)) {
                g = pod->deletion_grace_s;
                overridden = true;
        }
        /* Other parts of the kubelet (eviction) may ask for faster termination. */
        if (override_s >= 0 && (g == 0 || override_s < g)) {
                g = override_s;
                overridden = true;
        }
        if (!overridden && g == 0 && pod && pod->termination_grace_s >= 0)
                g = pod->termination_grace_s;
        if (g < 1)
                g = 1;
        if (ret_shortened)
                *ret_shortened = status_grace != 0 && status_grace != g;
        return g;
}

static void clear_started_static_locked(struct kc_pod_workers *pw, struct pod_entry *e)
{
        struct static_started *s = kc_map_get(pw->started_static, e->fullname);

        if (s && strcmp(s->uid, e->uid) == 0) {
                kc_map_remove(pw->started_static, e->fullname);
                free(s->uid);
                free(s);
        }
}

static void waiting_drop_front_locked(struct kc_pod_workers *pw, struct static_waiting *w, size_t k)
{
        for (size_t i = 0; i < k; i++)
                free(w->uids[i]);
        memmove(w->uids, w->uids + k, (w->n - k) * sizeof(*w->uids));
        w->n -= k;
        if (w->n == 0) {
                kc_map_remove(pw->waiting_static, w->fullname);
                free(w->uids);
                free(w);
        }
}

static int waiting_append_locked(struct kc_pod_workers *pw, const char *fullname, const char *uid)
{
        struct static_waiting *w = kc_map_get(pw->waiting_static, fullname);
        char *copy;

        if (!w) {
                size_t len = strlen(fullname) + 1;

                w = calloc(1, sizeof(*w) + len);
                if (!w)
                        return -ENOMEM;
                memcpy(w->fullname, fullname, len);
                if (kc_map_put(pw->waiting_static, w->fullname, w) < 0) {
                        free(w);
                        return -ENOMEM;
                }
        }
        if (KC_ARRAY_GROW(w->uids, w->cap, w->n + 1, 4) < 0)
                return -ENOMEM;
        copy = strdup(uid);
        if (!copy)
                return -ENOMEM;
        w->uids[w->n++] = copy;
        return 0;
}

static int set_started_static_locked(struct kc_pod_workers *pw, const char *fullname,
                                     const char *uid)
{
        struct static_started *s = kc_map_get(pw->started_static, fullname);
        char *copy = strdup(uid);

        if (!copy)
                return -ENOMEM;
        if (s) {
                free(s->uid);
                s->uid = copy;
                return 0;
        }
        s = calloc(1, sizeof(*s) + strlen(fullname) + 1);
        if (!s) {
                free(copy);
                return -ENOMEM;
        }
        strcpy(s->fullname, fullname);
        s->uid = copy;
        if (kc_map_put(pw->started_static, s->fullname, s) < 0) {
                free(copy);
                free(s);
                return -ENOMEM;
        }
        return 0;
}

/* allowStaticPodStart: static pods with one full name start one at a time, in arrival order. */
static bool allow_static_pod_start_locked(struct kc_pod_workers *pw, const char *fullname,
                                          const char *uid)
{
        struct static_started *s = kc_map_get(pw->started_static, fullname);
        struct static_waiting *w;
        size_t drop = 0;

        if (s)
                return strcmp(s->uid, uid) == 0;

        w = kc_map_get(pw->waiting_static, fullname);
        for (size_t i = 0; w && i < w->n; i++) {
                struct pod_entry *st = kc_map_get(pw->pods, w->uids[i]);

                /* already terminated or deleted? */
                if (!st || is_termination_requested(st) || is_terminated(st))
                        continue;
                if (strcmp(w->uids[i], uid) != 0) {
                        /* another pod is next in line */
                        waiting_drop_front_locked(pw, w, i);
                        return false;
                }
                /* we are up next: remove ourselves */
                drop = i + 1;
                break;
        }
        if (w && drop > 0)
                waiting_drop_front_locked(pw, w, drop);
        if (set_started_static_locked(pw, fullname, uid) < 0) {
                kc_log_error_s(strerror(ENOMEM),
                               "Pod workers: recording a started static pod failed",
                               KC_KV_STR("podUID", uid));
                return false;
        }
        return true;
}

static void allow_pod_start_locked(struct kc_pod_workers *pw, const struct kc_api_pod *pod,
                                   bool *ret_can_start, bool *ret_can_ever_start, bool *ret_retry)
{
        struct pod_entry *e;

        *ret_retry = false;
        if (!is_static_pod(pod)) {
                *ret_can_start = *ret_can_ever_start = true;
                return;
        }
        e = kc_map_get(pw->pods, pod->uid);
        if (!e) {
                kc_log_error_s(NULL,
                               "Pod sync status does not exist, the worker should not be running",
                               KC_KV_POD(pod->namespace, pod->name), KC_KV_STR("podUID", pod->uid));
                *ret_can_start = *ret_can_ever_start = false;
                return;
        }
        if (is_termination_requested(e)) {
                *ret_can_start = *ret_can_ever_start = false;
                return;
        }
        if (!allow_static_pod_start_locked(pw, e->fullname, pod->uid)) {
                *ret_retry = true;
                *ret_can_start = false;
                *ret_can_ever_start = true;
                return;
        }
        *ret_can_start = *ret_can_ever_start = true;
}

void kc__allow_pod_start(struct kc_pod_workers *pw, const struct kc_api_pod *pod,
                         bool *ret_can_start, bool *ret_can_ever_start)
{
        bool retry;

        pthread_mutex_lock(&pw->lock);
        allow_pod_start_locked(pw, pod, ret_can_start, ret_can_ever_start, &retry);
        pthread_mutex_unlock(&pw->lock);
        if (retry)
                enqueue_backoff(pw, pod->uid);
}

/* ------------------------------------------------------------------------ */
/* State transitions (worker side, under lock)                                */

/* mergeLastUpdate (§8.5). */
static void merge_last_update_locked(struct pod_entry *e, const struct pw_update *u)
{
        struct pw_update *a = &e->active;
        bool old_evict = a->has_kill && a->evict;

        if (!e->has_active) {
                *a = (struct pw_update){ .grace_override = -1 };
                e->has_active = true;
                old_evict = false;
        }
        /* Keep the most recent real Pod: a RunningPod never overwrites one. */
        if (!a->pod || !u->running) {
                kc_api_pod_ref(u->pod);
                kc_api_pod_unref(a->pod);
                a->pod = u->pod;
        }
        /* Running pods are remembered for replay only. */
        kc_pod_ref(u->running);
        kc_pod_unref(a->running);
        a->running = u->running;
        if (u->mirror) {
                kc_api_pod_ref(u->mirror);
                kc_api_pod_unref(a->mirror);
                a->mirror = u->mirror;
        }
        if (u->has_kill) {
                a->has_kill = true;
                a->evict = u->evict || old_evict;
                a->grace_override = u->grace_override;
        }
        /* UpdateType and StartTime are not copied: active type stays Sync. */
}

/* requeueLastPodUpdate (§8.6). */
static void requeue_last_pod_update_locked(struct kc_pod_workers *pw, struct pod_entry *e)
{
        if (e->has_pending || !e->has_active)
                return;
        update_copy(&e->pending, &e->active);
        e->has_pending = true;
        e->working = true;
        schedule_locked(pw, e);
}

static void cleanup_unstarted_pod_locked(struct kc_pod_workers *pw, struct pod_entry *e)
{
        if (e->terminating_at == 0)
                kc_log_v_s(4,
                           "Pod worker is complete but did not have terminatingAt set, likely "
                           "programmer error",
                           KC_KV_STR("podUID", e->uid));
        e->worker_exited = true;
        e->finished = true;
        e->terminated_at = kc_clock_now(pw->clock);
        set_not_working_locked(pw, e);
        notify_all_locked(e);
        clear_started_static_locked(pw, e);
}

static void complete_sync_locked(struct kc_pod_workers *pw, struct pod_entry *e)
{
        kc_log_v_s(4, "Pod indicated lifecycle completed naturally and should now terminate",
                   KC_KV_STR("podUID", e->uid));
        if (e->terminating_at == 0)
                e->terminating_at = kc_clock_now(pw->clock);
        e->started_terminating = true;
        requeue_last_pod_update_locked(pw, e);
}

static void complete_terminating_locked(struct kc_pod_workers *pw, struct pod_entry *e)
{
        kc_log_v_s(4, "Pod terminated all containers successfully", KC_KV_STR("podUID", e->uid));
        e->terminated_at = kc_clock_now(pw->clock);
        notify_all_locked(e);
        requeue_last_pod_update_locked(pw, e);
}

static void complete_terminating_runtime_pod_locked(struct kc_pod_workers *pw, struct pod_entry *e)
{
        kc_log_v_s(4, "Pod terminated all orphaned containers successfully and worker can now stop",
                   KC_KV_STR("podUID", e->uid));
        if (e->terminated_at == 0)
                e->terminated_at = kc_clock_now(pw->clock);
        e->finished = true;
        e->worker_exited = true;
        e->working = false;
        clear_started_static_locked(pw, e);
        /* A runtime pod is transient: once terminated, stop tracking it. */
        remove_entry_locked(pw, e);
}

static void complete_terminated_locked(struct kc_pod_workers *pw, struct pod_entry *e)
{
        kc_log_v_s(4, "Pod is complete and the worker can now stop", KC_KV_STR("podUID", e->uid));
        e->worker_exited = true;
        e->finished = true;
        set_not_working_locked(pw, e);
        notify_all_locked(e);
        clear_started_static_locked(pw, e);
}

/* acknowledgeTerminating. */
static void acknowledge_terminating_locked(struct pod_entry *e)
{
        if (e->terminating_at != 0 && !e->started_terminating) {
                kc_log_v_s(4, "Pod worker has observed request to terminate",
                           KC_KV_STR("podUID", e->uid));
                e->started_terminating = true;
        }
}

/*
 * startPodSync (§8.5). Returns false when there is nothing to run (no
 * update, status gone, cannot start now or ever). *ret_retry asks the
 * caller to enqueue a "not yet" retry after unlocking.
 */
static bool start_pod_sync_locked(struct kc_pod_workers *pw, struct pod_entry *e,
                                  struct pod_work *w, bool *ret_retry)
{
        bool can_start, can_ever_start;

        *ret_retry = false;
        if (e->removed || pw->stopping)
                return false;
        if (!e->has_pending) {
                kc_log_v_s(4, "Pod worker received no pending work, programmer error?",
                           KC_KV_STR("podUID", e->uid));
                set_not_working_locked(pw, e);
                return false;
        }

        /* Consume the pending update and the signal. */
        w->type = work_type(e);
        w->u = e->pending;
        e->pending = (struct pw_update){ .grace_override = -1 };
        e->has_pending = false;
        e->signalled = false;

        if (!e->ctx || kc_cancel_is_set(e->ctx)) {
                struct kc_cancel *c = NULL;

                if (kc_cancel_new(&c) < 0) {
                        kc_log_error_s(strerror(ENOMEM), "Pod workers: creating a context failed",
                                       KC_KV_STR("podUID", e->uid));
                        e->pending = w->u;
                        e->has_pending = true;
                        w->u = (struct pw_update){ .grace_override = -1 };
                        set_not_working_locked(pw, e);
                        return false;
                }
                /* No sync of this pod is in flight: nobody waits on the old one. */
                kc_cancel_free(e->ctx);
                e->ctx = c;
        }
        w->ctx = e->ctx;

        if (is_started(e)) {
                merge_last_update_locked(e, &w->u);
                return true;
        }
        /* Already terminating with only a running pod: "start" to terminate. */
        if (w->u.running && w->type == KC_POD_WORK_TERMINATING) {
                merge_last_update_locked(e, &w->u);
                return true;
        }
        if (!w->u.pod) {
                merge_last_update_locked(e, &w->u);
                kc_log_v_s(4, "Running pod cannot start ever, programmer error",
                           KC_KV_STR("podUID", e->uid));
                e->worker_exited = true;
                update_done(&w->u);
                return false;
        }

        allow_pod_start_locked(pw, w->u.pod, &can_start, &can_ever_start, ret_retry);
        if (!can_ever_start) {
                cleanup_unstarted_pod_locked(pw, e);
                kc_log_v_s(4, "Pod cannot start ever", KC_KV_STR("podUID", e->uid),
                           KC_KV_STR("updateType", kc_sync_pod_type_to_string(w->u.type)));
                update_done(&w->u);
                return false;
        }
        if (!can_start) {
                /* The only path that does not start: put the update back. */
                e->pending = w->u;
                e->has_pending = true;
                w->u = (struct pw_update){ .grace_override = -1 };
                /* `working` is cleared by the caller once the retry is enqueued,
                 * so that an observer never sees an idle worker without it. */
                kc_log_v_s(4, "Pod cannot start yet", KC_KV_STR("podUID", e->uid));
                return false;
        }
        e->started_at = kc_clock_now(pw->clock);
        merge_last_update_locked(e, &w->u);
        return true;
}

/* After an iteration: hand the entry back (free it, requeue it or leave it idle). */
static void finish_iteration_locked(struct kc_pod_workers *pw, struct pod_entry *e)
{
        /* A finished iteration is progress too: its thread takes work next. */
        pw->rq_progress = monotonic_ns();
        e->in_flight = false;
        if (e->removed) {
                entry_free(e);
                return;
        }
        if (e->signalled)
                schedule_locked(pw, e);
}

static bool error_is_network_not_ready(const char *msg)
{
        return msg && strstr(msg, KC_NETWORK_NOT_READY_ERROR_MSG);
}

/*
 * Parks @e's iteration in @p, its work @w moved there, unless a cache
 * write was seen since @seen or the sync was cancelled. A write and a
 * parking thread always see one another: this raises n_parked and then
 * reads writes_seen, cache_observed() raises writes_seen and then reads
 * n_parked (all sequentially consistent), so either this sees the write
 * and tries the cache again, or the observer sees a parked iteration and
 * takes the lock, which is held here until @e is on the list.
 */
static bool park_locked(struct kc_pod_workers *pw, struct pod_entry *e, struct pod_work *w,
                        struct parked_iteration *p, uint_fast64_t seen)
{
        atomic_fetch_add(&pw->n_parked, 1);
        if (atomic_load(&pw->writes_seen) != seen || kc_cancel_is_set(w->ctx)) {
                atomic_fetch_sub(&pw->n_parked, 1);
                return false;
        }
        *p = (struct parked_iteration){ .e = e, .min = e->last_sync_time, .w = *w };
        *w = (struct pod_work){ .u = { .grace_override = -1 } };
        e->park = p;
        e->parked = true;
        kc_list_add_tail(&pw->parked, &p->link);
        return true;
}

/*
 * GetNewerThan without holding a thread: the status at once when the cache
 * is fresh enough, otherwise the iteration parks (-EINPROGRESS: @w now
 * belongs to the entry) until cache_observed() or a cancellation resumes
 * it. A pool that could not become the cache's observer waits in the cache.
 */
static int cache_status(struct kc_pod_workers *pw, struct pod_entry *e, struct pod_work *w,
                        struct kc_pod_status **ret, char **ret_err)
{
        _cleanup_free_ struct parked_iteration *p = NULL;
        uint_fast64_t seen;
        int r;

        if (w->delivered) {
                /* What a subscriber would have been handed when the write came. */
                w->delivered = false;
                r = kc_pod_cache_get(pw->cache, e->uid, ret, ret_err);
                return r < 0 ? r : 0;
        }
        for (;;) {
                if (kc_cancel_is_set(w->ctx))
                        return -ECANCELED;
                seen = atomic_load(&pw->writes_seen);
                r = kc_pod_cache_try_get_newer_than(pw->cache, e->uid, e->last_sync_time, ret,
                                                    ret_err);
                if (r != -EAGAIN)
                        return r;
                /* Not observing, or no memory to park in: wait in the cache. */
                if (!pw->observing || (!p && !(p = malloc(sizeof(*p)))))
                        return kc_pod_cache_get_newer_than(pw->cache, e->uid, e->last_sync_time,
                                                           w->ctx, ret, ret_err);
                KC_LOCK_GUARD(&pw->lock);
                if (park_locked(pw, e, w, p, seen)) {
                        TAKE_PTR(p);
                        return -EINPROGRESS;
                }
        }
}

/*
 * The status the sync works from: none for runtime pods; otherwise one
 * newer than the last sync (F-PW-07). Returns 0, -ECANCELED, -EINPROGRESS
 * (parked, see cache_status()), or another error with its message in
 * *ret_msg.
 */
static int wait_for_status(struct kc_pod_workers *pw, struct pod_entry *e, struct pod_work *w,
                           struct kc_pod_status **ret, char **ret_msg)
{
        _cleanup_free_ char *cerr = NULL;
        struct kc_pod_status *status = NULL;
        int err = 0, r;

        if (w->u.running)
                return 0;
        r = cache_status(pw, e, w, &status, &cerr);
        if (r == -EINPROGRESS)
                return r;
        if (r == -ECANCELED) {
                err = -ECANCELED;
        } else if (r < 0) {
                err = r;
                errno = -r;
                if (asprintf(ret_msg, "error determining status: %m") < 0)
                        *ret_msg = NULL;
        } else if (cerr) {
                err = -EIO;
                if (asprintf(ret_msg, "error determining status: %s", cerr) < 0)
                        *ret_msg = NULL;
                kc_pod_status_unref(status);
                status = NULL;
        }
        if (err != 0 && err != -ECANCELED)
                kc_log_warn_s(
                        "Event occurred",
                        KC_KV_REF("object", w->u.pod ? w->u.pod->namespace : NULL,
                                  w->u.pod ? w->u.pod->name : NULL),
                        KC_KV_STR("podUID", e->uid), KC_KV_STR("kind", "Pod"),
                        KC_KV_STR("type", "Warning"), KC_KV_STR("reason", "FailedSync"),
                        KC_KV_STR("message", *ret_msg ? *ret_msg : "error determining status"));
        *ret = status;
        return err;
}

/* What one sync function call came to. */
struct sync_result {
        int err;
        char *msg;
        bool is_terminal;      /* SyncPod: the pod reached a terminal phase */
        int64_t requeue_after; /* SyncPod: -1, or when its back-off ends */
};

/* Calls the sync function for the work type: sync, terminating or terminated. */
static void dispatch_sync(struct kc_pod_workers *pw, struct pod_entry *e, const struct pod_work *w,
                          struct kc_pod_status *status, struct sync_result *res)
{
        const struct kc_pod_syncer_ops *ops = pw->syncer;
        void *ud = pw->syncer_userdata;

        switch (w->type) {
        case KC_POD_WORK_TERMINATED:
                res->err = ops->sync_terminated_pod(ud, w->ctx, w->u.pod, status, &res->msg);
                break;
        case KC_POD_WORK_TERMINATING: {
                int64_t grace = w->u.has_kill ? w->u.grace_override : -1;

                pthread_mutex_lock(&pw->lock);
                acknowledge_terminating_locked(e);
                pthread_mutex_unlock(&pw->lock);
                if (w->u.running)
                        res->err = ops->sync_terminating_runtime_pod(ud, w->ctx, w->u.running,
                                                                     &res->msg);
                else
                        res->err = ops->sync_terminating_pod(ud, w->ctx, w->u.pod, status, grace,
                                                             &res->msg);
                break;
        }
        default:
                res->err = ops->sync_pod(ud, w->ctx, w->u.type, w->u.pod, w->u.mirror, status,
                                         &res->is_terminal, &res->requeue_after, &res->msg);
                break;
        }
        e->last_sync_time = kc_clock_now(pw->clock);
}

/* Whether the work just done ends the worker: a terminated pod, or a terminated runtime pod. */
static bool ends_worker(const struct pod_work *w)
{
        return w->type == KC_POD_WORK_TERMINATED ||
               (w->type == KC_POD_WORK_TERMINATING && w->u.running);
}

/* completeWork's requeue policy (F-PW-08). */
static int64_t requeue_delay(struct kc_pod_workers *pw, const struct sync_result *res,
                             bool phase_transition)
{
        if (phase_transition)
                return 0;
        if (res->err == 0)
                return jittered(pw, pw->resync_interval_ns);
        if (res->requeue_after >= 0)
                return res->requeue_after; /* a back-off ends then (D10) */
        if (error_is_network_not_ready(res->msg))
                return jittered(pw, KC_POD_WORKERS_TRANSIENT_BACKOFF_NS);
        return jittered(pw, pw->backoff_period_ns);
}

/* completeSync, completeTerminating...: the bookkeeping after a sync, under the lock. */
static void complete_work_locked(struct kc_pod_workers *pw, struct pod_entry *e,
                                 const struct pod_work *w, const struct sync_result *res,
                                 bool exit_worker)
{
        if (e->removed)
                return;
        if (res->err == 0 && w->type == KC_POD_WORK_TERMINATED)
                complete_terminated_locked(pw, e);
        else if (res->err == 0 && w->type == KC_POD_WORK_TERMINATING && w->u.running)
                complete_terminating_runtime_pod_locked(pw, e);
        else if (res->err == 0 && w->type == KC_POD_WORK_TERMINATING)
                complete_terminating_locked(pw, e);
        else if (res->err == 0 && res->is_terminal)
                complete_sync_locked(pw, e);
        if (!exit_worker && !e->removed) {
                if (e->has_pending)
                        e->signalled = true;
                else
                        set_not_working_locked(pw, e);
        }
}

/*
 * PodWorkerDuration: from the update's StartTime (when the kubelet received
 * it) to the end of its sync, by update type; a terminated pod's last sync
 * is "terminated". Updates without a StartTime are not observed.
 */
static void observe_worker_duration(struct kc_pod_workers *pw, const struct pod_work *w,
                                    const struct sync_result *res)
{
        const char *op = kc_sync_pod_type_to_string(w->u.type);

        if (!pw->metrics || w->u.start_time == 0)
                return;
        if (res->err == 0 && w->type == KC_POD_WORK_TERMINATED)
                op = "terminated";
        (void)kc_histogram_vec_observe_mp(pw->metrics->pod_worker_duration, op,
                                          (double)(kc_clock_now(pw->clock) - w->u.start_time) /
                                                  (double)KC_NSEC_PER_SEC);
}

/*
 * Runs the work startPodSync handed out and completes it. Unlocked on entry
 * and exit. Returns true when the iteration parked instead: @w and @e are
 * no longer the caller's.
 */
static bool sync_and_complete(struct kc_pod_workers *pw, struct pod_entry *e, struct pod_work *w)
{
        struct sync_result res = { .requeue_after = -1 };
        struct kc_pod_status *status = NULL;
        bool phase_transition = false, exit_worker = false;

        kc_log_v_s(
                4, "Processing pod event",
                KC_KV_POD(w->u.pod ? w->u.pod->namespace : NULL, w->u.pod ? w->u.pod->name : NULL),
                KC_KV_STR("podUID", e->uid),
                KC_KV_STR("updateType", kc_sync_pod_type_to_string(w->u.type)),
                KC_KV_STR("workType", kc_pod_work_type_to_string(w->type)));
        res.err = wait_for_status(pw, e, w, &status, &res.msg);
        if (res.err == -EINPROGRESS)
                return true;
        if (res.err == 0)
                dispatch_sync(pw, e, w, status, &res);

        if (res.err == -ECANCELED) {
                /* A pending update is expected to be queued already. */
                kc_log_v_s(2, "Sync exited with context cancellation error",
                           KC_KV_POD(w->u.pod ? w->u.pod->namespace : NULL,
                                     w->u.pod ? w->u.pod->name : NULL),
                           KC_KV_STR("podUID", e->uid),
                           KC_KV_STR("updateType", kc_sync_pod_type_to_string(w->u.type)));
        } else if (res.err < 0) {
                kc_log_error_s(res.msg ? res.msg : strerror(-res.err),
                               "Error syncing pod, skipping",
                               KC_KV_POD(w->u.pod ? w->u.pod->namespace : NULL,
                                         w->u.pod ? w->u.pod->name : NULL),
                               KC_KV_STR("podUID", e->uid));
        } else if (ends_worker(w)) {
                exit_worker = true;
        } else if (w->type == KC_POD_WORK_TERMINATING || res.is_terminal) {
                phase_transition = true;
        }

        /* completeWork: the requeue, outside the lock. */
        if (!exit_worker)
                pw->enqueue(pw->enqueue_userdata, e->uid,
                            requeue_delay(pw, &res, phase_transition));

        pthread_mutex_lock(&pw->lock);
        complete_work_locked(pw, e, w, &res, exit_worker);
        pthread_mutex_unlock(&pw->lock);
        observe_worker_duration(pw, w, &res);

        free(res.msg);
        kc_pod_status_unref(status);
        return false;
}

/*
 * One iteration of podWorkerLoop for @e (in_flight set by the caller), or
 * what is left of a parked one. Unlocked on entry/exit.
 */
static void run_one(struct kc_pod_workers *pw, struct pod_entry *e)
{
        struct pod_work w = { .u = { .grace_override = -1 } };
        bool retry, ok;

        pthread_mutex_lock(&pw->lock);
        if (e->park) {
                /* A parked iteration goes on: its status is ready or its sync cancelled. */
                w = e->park->w;
                free(e->park);
                e->park = NULL;
                retry = false;
                ok = true;
        } else {
                ok = start_pod_sync_locked(pw, e, &w, &retry);
        }
        pthread_mutex_unlock(&pw->lock);
        if (retry)
                enqueue_backoff(pw, e->uid);
        if (ok && sync_and_complete(pw, e, &w))
                return;
        update_done(&w.u);

        pthread_mutex_lock(&pw->lock);
        /* "not yet": idle until the next signal (none arrived since). */
        if (retry && !e->removed && !e->signalled)
                set_not_working_locked(pw, e);
        finish_iteration_locked(pw, e);
        pthread_mutex_unlock(&pw->lock);
}

/*
 * A thread past eager_threads that finds no work while eager_threads others
 * wait idle, and no stall has called for a thread for an idle timeout, is
 * surplus. The idle timeout alone did not retire it: a burst of ready pods
 * (every sync tick has one) wakes every idle thread, so a thread the
 * grower added for one stall (a loaded machine pausing the workers for
 * 10 ms) got work each second and stayed for good (bench/soak.py).
 */
static bool surplus_locked(const struct kc_pod_workers *pw)
{
        return pw->reaper.n_running > pw->eager_threads && pw->n_idle >= pw->eager_threads &&
               monotonic_ns() - pw->last_stall >= pw->idle_timeout_ns;
}

/* Leaves the pool: the next spawn, the next exit or free joins @self. */
static void retire_locked(struct kc_pod_workers *pw, struct worker_thread *self)
{
        struct worker_thread **p;

        /* An exited thread keeps its stack mapped (and its first pages
         * resident) until joined: after a burst, the hundreds that retire
         * would keep theirs until the next burst. */
        kc_reaper_join_locked(&pw->reaper);
        for (p = &pw->threads; *p && *p != self; p = &(*p)->next)
                ;
        if (*p)
                *p = self->next;
        kc_reaper_retire_locked(&pw->reaper, &self->thread);
}

static void *worker_main(void *arg)
{
        struct worker_thread *self = arg;
        struct kc_pod_workers *pw = self->pw;

        pthread_mutex_lock(&pw->lock);
        pw->n_starting--;
        for (;;) {
                struct pod_entry *e;
                struct timespec deadline;
                int r;

                if (pw->stopping)
                        break;
                e = rq_pop_locked(pw);
                if (e) {
                        e->in_flight = true;
                        pthread_mutex_unlock(&pw->lock);
                        run_one(pw, e);
                        pthread_mutex_lock(&pw->lock);
                        continue;
                }
                if (surplus_locked(pw)) {
                        retire_locked(pw, self);
                        break;
                }
                deadline = monotonic_deadline(pw->idle_timeout_ns);
                pw->n_idle++;
                r = idle_wait_locked(pw, self, &deadline);
                pw->n_idle--;
                if (r == ETIMEDOUT && !pw->stopping && kc_list_empty(&pw->rq) &&
                    pw->reaper.n_running > pw->min_threads) {
                        /* Idle above the minimum for the timeout. */
                        retire_locked(pw, self);
                        break;
                }
        }
        pthread_mutex_unlock(&pw->lock);
        return NULL;
}

/* ------------------------------------------------------------------------ */
/* Public API                                                                 */

static unsigned cpu_count(void)
{
        long n = sysconf(_SC_NPROCESSORS_ONLN);

        return n > 0 ? (unsigned)n : 1u;
}

/* The grower, on a small stack: it only takes the lock and spawns. */
static int start_grower(struct kc_pod_workers *pw)
{
        pthread_attr_t attr;
        int r;

        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, (size_t)PTHREAD_STACK_MIN + 64 * 1024);
        r = pthread_create(&pw->grower, &attr, grower_main, pw);
        pthread_attr_destroy(&attr);
        if (r != 0)
                return -r;
        pw->grower_started = true;
        return 0;
}

int kc_pod_workers_new(const struct kc_pod_workers_config *cfg, struct kc_pod_workers **ret)
{
        struct kc_pod_workers *pw;

        if (!cfg || !ret || !cfg->clock || !cfg->cache || !cfg->syncer || !cfg->enqueue ||
            !cfg->syncer->sync_pod || !cfg->syncer->sync_terminating_pod ||
            !cfg->syncer->sync_terminating_runtime_pod || !cfg->syncer->sync_terminated_pod)
                return -EINVAL;
        pw = calloc(1, sizeof(*pw));
        if (!pw)
                return -ENOMEM;
        pw->clock = cfg->clock;
        pw->cache = cfg->cache;
        pw->syncer = cfg->syncer;
        pw->syncer_userdata = cfg->syncer_userdata;
        pw->enqueue = cfg->enqueue;
        pw->enqueue_userdata = cfg->enqueue_userdata;
        pw->resync_interval_ns = cfg->resync_interval_ns > 0 ? cfg->resync_interval_ns
                                                             : KC_POD_WORKERS_DEFAULT_RESYNC_NS;
        pw->backoff_period_ns = cfg->backoff_period_ns > 0 ? cfg->backoff_period_ns
                                                           : KC_POD_WORKERS_BACKOFF_PERIOD_NS;
        pw->random = cfg->random;
        pw->random_userdata = cfg->random_userdata;
        pw->min_threads = cfg->min_threads ? cfg->min_threads : DEFAULT_MIN_THREADS;
        pw->max_threads = cfg->max_threads ? cfg->max_threads : DEFAULT_MAX_THREADS;
        if (pw->min_threads > pw->max_threads)
                pw->min_threads = pw->max_threads;
        pw->eager_threads = EAGER_THREADS_PER_CPU * cpu_count();
        if (pw->eager_threads < pw->min_threads)
                pw->eager_threads = pw->min_threads;
        if (pw->eager_threads > pw->max_threads)
                pw->eager_threads = pw->max_threads;
        pw->stack_size = cfg->stack_size ? cfg->stack_size : DEFAULT_STACK_SIZE;
        if (pw->stack_size < (size_t)PTHREAD_STACK_MIN)
                pw->stack_size = PTHREAD_STACK_MIN;
        pw->idle_timeout_ns =
                cfg->idle_timeout_ns > 0 ? cfg->idle_timeout_ns : DEFAULT_IDLE_TIMEOUT_NS;
        pw->metrics = cfg->metrics;

        if (kc_map_new(&pw->pods) < 0 || kc_map_new(&pw->started_static) < 0 ||
            kc_map_new(&pw->waiting_static) < 0 || kc_map_new(&pw->held) < 0) {
                kc_map_free(pw->pods);
                kc_map_free(pw->started_static);
                kc_map_free(pw->waiting_static);
                kc_map_free(pw->held);
                free(pw);
                return -ENOMEM;
        }
        kc_list_init(&pw->rq);
        kc_list_init(&pw->parked);
        kc_reaper_init(&pw->reaper, worker_thread_release);
        pthread_mutex_init(&pw->lock, NULL);
        cond_init_monotonic(&pw->idle_cond);
        cond_init_monotonic(&pw->grow_cond);
        if (start_grower(pw) < 0) {
                kc_pod_workers_free(pw);
                return -ENOMEM;
        }
        /* Last: the observer may be called from now on. Another pool observing
         * the cache (tests) leaves this one waiting in it, as before. */
        pw->observing = kc_pod_cache_set_observer(pw->cache, cache_observed, pw) == 0;
        *ret = pw;
        return 0;
}

struct kc_pod_workers *kc_pod_workers_free(struct kc_pod_workers *pw)
{
        struct parked_iteration *p, *pnext;
        struct pod_entry *e, *next;
        struct worker_thread *live, *t;
        size_t iter = 0;
        const char *key;
        void *value;

        if (!pw)
                return NULL;

        /* No write resumes anything from here on. */
        if (pw->observing)
                (void)kc_pod_cache_set_observer(pw->cache, NULL, NULL);
        pthread_mutex_lock(&pw->lock);
        pw->stopping = true;
        /* Cancel every in-flight sync. */
        while (kc_map_next(pw->pods, &iter, &key, &value)) {
                struct pod_entry *e = value;

                if (e->ctx)
                        kc_cancel_trigger_mp(e->ctx);
        }
        for (t = pw->threads; t; t = t->next)
                pthread_cond_signal(&t->cond);
        pthread_cond_signal(&pw->grow_cond);
        pw->idle_top = NULL;
        live = pw->threads;
        pw->threads = NULL;
        pthread_mutex_unlock(&pw->lock);

        for (t = live; t;) {
                struct worker_thread *next = t->next;

                pthread_join(t->thread.tid, NULL);
                worker_thread_release(&t->thread);
                t = next;
        }
        if (pw->grower_started)
                pthread_join(pw->grower, NULL);
        pthread_mutex_lock(&pw->lock);
        kc_reaper_join_locked(&pw->reaper);
        pthread_mutex_unlock(&pw->lock);

        /* Every thread is gone. Iterations left parked or resumed end here;
         * their entries go with the map, unless removed from it already. */
        kc_list_for_each_entry_safe (p, pnext, &pw->parked, struct parked_iteration, link) {
                kc_list_del(&p->link);
                if (p->e->removed)
                        entry_free(p->e);
        }
        kc_list_for_each_entry_safe (e, next, &pw->rq, struct pod_entry, rq_link) {
                rq_unlink_locked(pw, e);
                if (e->removed)
                        entry_free(e);
        }

        /* Free the entries and the static-pod maps. */
        iter = 0;
        while (kc_map_next(pw->pods, &iter, &key, &value))
                entry_free(value);
        kc_map_free(pw->pods);
        iter = 0;
        while (kc_map_next(pw->started_static, &iter, &key, &value)) {
                struct static_started *s = value;

                free(s->uid);
                free(s);
        }
        kc_map_free(pw->started_static);
        iter = 0;
        while (kc_map_next(pw->waiting_static, &iter, &key, &value)) {
                struct static_waiting *w = value;

                for (size_t i = 0; i < w->n; i++)
                        free(w->uids[i]);
                free(w->uids);
                free(w);
        }
        kc_map_free(pw->waiting_static);
        iter = 0;
        while (kc_map_next(pw->held, &iter, &key, &value))
                free(value);
        kc_map_free(pw->held);
        pthread_cond_destroy(&pw->idle_cond);
        pthread_cond_destroy(&pw->grow_cond);
        pthread_mutex_destroy(&pw->lock);
        free(pw);
        return NULL;
}

/* isPodStatusCacheTerminal: nothing running, no READY sandbox. */
static bool pod_status_cache_terminal(const struct kc_pod_status *s)
{
        if (!s)
                return true;
        for (size_t i = 0; i < s->n_containers; i++)
                if (s->containers[i].state == KC_CONTAINER_STATE_RUNNING)
                        return false;
        for (size_t i = 0; i < s->n_sandboxes; i++)
                if (s->sandboxes[i].state == KC_SANDBOX_STATE_READY)
                        return false;
        return true;
}

static bool is_terminal_phase(const struct kc_api_pod *pod)
{
        return pod->phase == KC_POD_PHASE_SUCCEEDED || pod->phase == KC_POD_PHASE_FAILED;
}

/* One UpdatePod call as its steps see it: the request and what was decided so far. */
struct pod_update_req {
        const struct kc_pod_update_options *o;
        const char *uid, *name, *ns;
        struct kc_api_pod *pod; /* the pod to work on; NULL for the synthetic (runtime-only) pod */
        struct kc_pod *running; /* the RunningPod, unless a real pod seen before stands in */
        bool is_runtime;        /* the update names a RunningPod only */
        bool has_kill;
        struct kc_kill_pod_options kill; /* meaningful when has_kill */
        int64_t now;
        bool first_time, became_terminating, shortened;
};

/*
 * Checks the options and names the pod they are about: a real pod, or a
 * RunningPod that can only be killed. Returns 0, 1 when the update is to be
 * ignored, or -EINVAL.
 */
static int update_req_init(struct pod_update_req *q, const struct kc_pod_update_options *o)
{
        *q = (struct pod_update_req){ .o = o, .kill = { .grace_period_override_s = -1 } };
        if (o->running_pod && !o->pod) {
                /* The synthetic pod is only a placeholder for termination. */
                if (o->update_type != KC_SYNC_POD_KILL) {
                        kc_log_v_s(4, "Pod update is ignored, runtime pods can only be killed",
                                   KC_KV_POD(o->running_pod->namespace, o->running_pod->name),
                                   KC_KV_STR("podUID", o->running_pod->id),
                                   KC_KV_STR("updateType",
                                             kc_sync_pod_type_to_string(o->update_type)));
                        return 1;
                }
                if (!o->running_pod->id)
                        return -EINVAL;
                q->uid = o->running_pod->id;
                q->name = o->running_pod->name;
                q->ns = o->running_pod->namespace;
                q->running = o->running_pod;
                q->is_runtime = true;
        } else if (o->pod) {
                if (!o->pod->uid)
                        return -EINVAL;
                if (o->running_pod)
                        kc_log_v_s(4,
                                   "Pod update included RunningPod which is only valid when Pod is "
                                   "not specified",
                                   KC_KV_POD(o->pod->namespace, o->pod->name),
                                   KC_KV_STR("podUID", o->pod->uid));
                q->uid = o->pod->uid;
                q->name = o->pod->name;
                q->ns = o->pod->namespace;
        } else {
                return -EINVAL;
        }
        q->has_kill = o->kill_pod_options != NULL;
        if (q->has_kill)
                q->kill = *o->kill_pod_options;
        return 0;
}

/*
 * F-PW-17: a terminal pod whose cached runtime status shows nothing running
 * already finished SyncTerminatingPod before a restart; SyncTerminatedPod
 * must still run (issue 105523). Takes the pod cache's lock under pw->lock.
 */
static bool seen_terminated_locked(struct kc_pod_workers *pw, const struct kc_api_pod *pod,
                                   const char *uid)
{
        struct kc_pod_status *st = NULL;
        char *serr = NULL;
        bool terminated;
        int r;

        if (!pod || !is_terminal_phase(pod))
                return false;
        r = kc_pod_cache_get(pw->cache, uid, &st, &serr);
        terminated = r >= 0 && !serr && pod_status_cache_terminal(st);
        kc_pod_status_unref(st);
        free(serr);
        return terminated;
}

/* The pod's podSyncStatus, created when the UID is seen for the first time. 0 or -ENOMEM. */
static int lookup_entry_locked(struct kc_pod_workers *pw, struct pod_update_req *q,
                               struct pod_entry **ret)
{
        struct pod_entry *e = kc_map_get(pw->pods, q->uid);

        if (e) {
                *ret = e;
                return 0;
        }
        kc_log_v_s(4, "Pod is being synced for the first time", KC_KV_POD(q->ns, q->name),
                   KC_KV_STR("podUID", q->uid),
                   KC_KV_STR("updateType", kc_sync_pod_type_to_string(q->o->update_type)));
        e = entry_new(q->uid, q->name, q->ns);
        if (!e)
                return -ENOMEM;
        e->synced_at = q->now;
        if (seen_terminated_locked(pw, q->o->pod, q->uid)) {
                e->terminating_at = e->terminated_at = q->now;
                e->started_terminating = true;
                e->finished = false;
        }
        if (kc_map_put(pw->pods, e->uid, e) < 0) {
                entry_free(e);
                return -ENOMEM;
        }
        q->first_time = true;
        *ret = e;
        return 0;
}

/*
 * A RunningPod only carries enough to terminate: prefer a real pod seen
 * before. Once a runtime pod is observed it must be driven to completion.
 */
static void resolve_pod_locked(struct pod_entry *e, struct pod_update_req *q)
{
        q->pod = q->o->pod;
        if (!q->is_runtime)
                return;
        e->observed_runtime = true;
        if (e->has_pending && e->pending.pod) {
                q->pod = e->pending.pod;
                q->running = NULL;
        } else if (e->has_active && e->active.pod) {
                q->pod = e->active.pod;
                q->running = NULL;
        } else {
                q->pod = NULL; /* the synthetic pod */
        }
}

/* The updates that go no further than the bookkeeping. Returns true when @p q stops here. */
static bool update_dropped_locked(struct pod_entry *e, const struct pod_update_req *q)
{
        const struct kc_kill_pod_options *kill = q->o->kill_pod_options;

        /* F-PW-12: a Create for a terminating UID means the UID was reused. */
        if (!q->first_time && is_termination_requested(e) &&
            q->o->update_type == KC_SYNC_POD_CREATE) {
                e->restart_requested = true;
                kc_log_v_s(4,
                           "Pod is terminating but has been requested to restart with same UID, "
                           "will be reconciled later",
                           KC_KV_POD(q->ns, q->name), KC_KV_STR("podUID", q->uid));
                return true;
        }
        /* F-PW-13: once finished, a UID cannot re-enter until forgotten. */
        if (e->finished) {
                kc_log_v_s(4, "Pod is finished processing, no further updates",
                           KC_KV_POD(q->ns, q->name), KC_KV_STR("podUID", q->uid));
                /* The pod has terminated, which is what a kill waits for: say so
                 * now (upstream returns first and leaves the waiter to time out;
                 * docs/deviations.md D7). */
                if (kill && kill->completed)
                        kc_pod_completion_complete(kill->completed);
                return true;
        }
        return false;
}

/* F-PW-04: termination triggers (deletion, a terminal phase, a kill). */
static void begin_termination_locked(struct pod_entry *e, struct pod_update_req *q)
{
        if (is_termination_requested(e))
                return;
        if (q->is_runtime || q->pod->deletion_ts != 0) {
                e->deleted = true;
        } else if (is_terminal_phase(q->pod)) {
                /* Terminating, neither deleted nor evicted. */
        } else if (q->o->update_type == KC_SYNC_POD_KILL) {
                if (q->has_kill && q->kill.evict)
                        e->evicted = true;
        } else {
                return;
        }
        e->terminating_at = q->now;
        q->became_terminating = true;
        kc_log_v_s(4, "Pod begins teardown", KC_KV_POD(q->ns, q->name),
                   KC_KV_STR("podUID", q->uid));
}

/*
 * Once terminating every update is a kill and the grace period only
 * decreases; outside termination kill options mean nothing. Returns 0, 1
 * when the update is to be ignored, or -ENOMEM.
 */
static int apply_kill_options_locked(struct pod_entry *e, struct pod_update_req *q)
{
        if (is_terminated(e)) {
                if (q->is_runtime)
                        kc_log_v_s(3,
                                   "Pod is waiting for termination, ignoring runtime-only kill "
                                   "until after pod worker is fully terminated",
                                   KC_KV_POD(q->ns, q->name), KC_KV_STR("podUID", q->uid));
                /* The pod has terminated, which is what a kill waits for: a waiter
                 * is told now, also when the update is ignored (docs/deviations.md D7). */
                if (q->has_kill)
                        kc_pod_completion_complete(q->kill.completed);
                q->has_kill = false;
                return q->is_runtime ? 1 : 0;
        }
        if (!is_termination_requested(e)) {
                if (q->has_kill)
                        kc_pod_completion_complete(q->kill.completed);
                q->has_kill = false;
                return 0;
        }
        if (!q->has_kill) {
                q->has_kill = true;
                q->kill = (struct kc_kill_pod_options){ .grace_period_override_s = -1 };
        }
        if (q->kill.completed) {
                if (KC_ARRAY_GROW(e->notify, e->cap_notify, e->n_notify + 1, 2) < 0)
                        return -ENOMEM;
                e->notify[e->n_notify++] = kc_pod_completion_ref(q->kill.completed);
        }
        e->grace_period = kc__calculate_effective_grace_period(
                e->grace_period, q->pod, q->kill.grace_period_override_s, &q->shortened);
        /* Always pass the computed grace down (never zero). */
        q->kill.grace_period_override_s = e->grace_period;
        return 0;
}

/* Starts the pod's worker (its mailbox) if it has none. */
static void ensure_worker_locked(struct kc_pod_workers *pw, struct pod_entry *e,
                                 const struct pod_update_req *q)
{
        if (e->has_worker)
                return;
        e->has_worker = true;
        /* static pods start in the order UpdatePod saw them */
        if (is_static_pod(q->pod) && waiting_append_locked(pw, e->fullname, q->uid) < 0)
                kc_log_error_s(strerror(ENOMEM), "Pod workers: queueing a static pod failed",
                               KC_KV_POD(q->ns, q->name), KC_KV_STR("podUID", q->uid));
}

/* Makes @p q the pending update (the latest one wins) and signals the worker. */
static void queue_update_locked(struct kc_pod_workers *pw, struct pod_entry *e,
                                const struct pod_update_req *q)
{
        struct pw_update nu = {
                .type = q->o->update_type,
                .start_time = q->o->start_time,
                .has_kill = q->has_kill,
                .grace_override = q->has_kill ? q->kill.grace_period_override_s : -1,
                .evict = q->has_kill && q->kill.evict,
        };

        /* F-PW-02: keep the oldest StartTime. */
        if (e->has_pending && e->pending.start_time != 0 &&
            (nu.start_time == 0 || e->pending.start_time < nu.start_time))
                nu.start_time = e->pending.start_time;
        nu.pod = kc_api_pod_ref(q->pod);
        nu.mirror = kc_api_pod_ref(q->o->mirror_pod);
        nu.running = kc_pod_ref(q->running);

        /* Coalescing: the latest update replaces the pending one. */
        update_done(&e->pending);
        e->pending = nu;
        e->has_pending = true;
        e->working = true;
        kc_log_v_s(4, "Notifying pod of pending update", KC_KV_POD(q->ns, q->name),
                   KC_KV_STR("podUID", q->uid));
        schedule_locked(pw, e);

        /* F-PW-05: cancel the in-flight sync when terminating starts or grace shrinks. */
        if ((q->became_terminating || q->shortened) && e->ctx) {
                kc_log_v_s(3, "Cancelling current pod sync", KC_KV_POD(q->ns, q->name),
                           KC_KV_STR("podUID", q->uid));
                kc_cancel_trigger_mp(e->ctx);
                /* A sync parked in the cache ends now, as a waiting one would. */
                if (e->parked)
                        unpark_locked(pw, e, false);
        }
}

/* UpdatePod's steps under the lock: find the pod, decide on termination, queue the update. */
static int update_pod_locked(struct kc_pod_workers *pw, struct pod_update_req *q)
{
        struct pod_entry *e;
        int r;

        q->now = kc_clock_now(pw->clock);
        r = lookup_entry_locked(pw, q, &e);
        if (r < 0)
                return r;
        resolve_pod_locked(e, q);
        if (update_dropped_locked(e, q))
                return 0;
        begin_termination_locked(e, q);
        r = apply_kill_options_locked(e, q);
        if (r != 0)
                return r < 0 ? r : 0;
        ensure_worker_locked(pw, e, q);
        queue_update_locked(pw, e, q);
        return 0;
}

int kc_pod_workers_update_pod(struct kc_pod_workers *pw, const struct kc_pod_update_options *o)
{
        struct pod_update_req q;
        int r;

        if (!pw || !o || (int)o->update_type < 0 || o->update_type >= _KC_SYNC_POD_TYPE_MAX)
                return -EINVAL;
        r = update_req_init(&q, o);
        if (r != 0)
                return r < 0 ? r : 0;
        pthread_mutex_lock(&pw->lock);
        r = update_pod_locked(pw, &q);
        pthread_mutex_unlock(&pw->lock);
        return r;
}

/* removeTerminatedWorker (§8.8). Returns true when the worker was removed. */
static bool remove_terminated_worker_locked(struct kc_pod_workers *pw, struct pod_entry *e,
                                            bool orphan)
{
        if (!e->finished) {
                if (!orphan) {
                        kc_log_v_s(4,
                                   "Pod worker has been requested for removal but is still not "
                                   "fully terminated",
                                   KC_KV_STR("podUID", e->uid));
                        return false;
                }
                /* all orphaned pods are considered deleted */
                e->deleted = true;
                if (!is_started(e) && !e->observed_runtime) {
                        kc_log_v_s(4, "Pod is orphaned and has not been started",
                                   KC_KV_STR("podUID", e->uid));
                } else if (!is_termination_requested(e)) {
                        e->terminating_at = kc_clock_now(pw->clock);
                        if (e->has_active && e->active.pod)
                                e->grace_period = kc__calculate_effective_grace_period(
                                        e->grace_period, e->active.pod, -1, NULL);
                        else
                                e->grace_period = 1;
                        requeue_last_pod_update_locked(pw, e);
                        kc_log_v_s(4, "Pod is orphaned and still running, began terminating",
                                   KC_KV_STR("podUID", e->uid));
                        return false;
                } else {
                        requeue_last_pod_update_locked(pw, e);
                        kc_log_v_s(4,
                                   "Pod is orphaned and still terminating, notified the pod worker",
                                   KC_KV_STR("podUID", e->uid));
                        return false;
                }
        }
        kc_log_v_s(4,
                   e->restart_requested ? "Pod has been terminated but another pod with the same "
                                          "UID was created, remove history to allow restart"
                                        : "Pod has been terminated and is no longer known to the "
                                          "kubelet, remove all history",
                   KC_KV_STR("podUID", e->uid));
        clear_started_static_locked(pw, e);
        remove_entry_locked(pw, e);
        return true;
}

void kc_pod_worker_sync_list_done(struct kc_pod_worker_sync_list *l)
{
        if (!l)
                return;
        for (size_t i = 0; i < l->n; i++)
                free(l->items[i].uid);
        free(l->items);
        l->items = NULL;
        l->n = 0;
        l->by_uid = kc_map_free(l->by_uid);
}

const struct kc_pod_worker_sync *
kc_pod_worker_sync_list_find(const struct kc_pod_worker_sync_list *l, const char *uid)
{
        return l && l->by_uid && uid ? kc_map_get(l->by_uid, uid) : NULL;
}

/* The UID index of @p l, over its final items (they never move afterwards). */
static int sync_list_index(struct kc_pod_worker_sync_list *l)
{
        if (kc_map_new(&l->by_uid) < 0 || kc_map_reserve(l->by_uid, l->n) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < l->n; i++)
                if (kc_map_put(l->by_uid, l->items[i].uid, &l->items[i]) < 0)
                        return -ENOMEM;
        return 0;
}

int kc_pod_workers_sync_known_pods(struct kc_pod_workers *pw, struct kc_api_pod *const *desired,
                                   size_t n_desired, struct kc_pod_worker_sync_list *ret)
{
        _cleanup_(kc_map_freep) struct kc_map *known = NULL;
        _cleanup_free_ struct pod_entry **entries = NULL;
        struct kc_pod_worker_sync_list out = { 0 };
        size_t n = 0, iter = 0;
        const char *key;
        void *value;
        int r = 0;

        if (!pw)
                return -EINVAL;
        if (kc_map_new(&known) < 0 || kc_map_reserve(known, n_desired) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < n_desired; i++)
                if (desired[i] && desired[i]->uid)
                        (void)kc_map_put(known, desired[i]->uid, desired[i]);

        pthread_mutex_lock(&pw->lock);
        pw->pods_synced = true;
        /* The map must not change while iterating: snapshot the entries first. */
        entries = malloc((kc_map_size(pw->pods) + 1) * sizeof(*entries));
        if (!entries) {
                pthread_mutex_unlock(&pw->lock);
                return -ENOMEM;
        }
        while (kc_map_next(pw->pods, &iter, &key, &value))
                entries[n++] = value;
        if (ret) {
                out.items = calloc(n + 1, sizeof(*out.items));
                if (!out.items)
                        r = -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                struct pod_entry *e = entries[i];
                bool orphan = !kc_map_get(known, e->uid);
                const struct pw_update *u = NULL;
                struct kc_pod_worker_sync *s;

                /* Purge the history of orphans and of UIDs reused by a new pod. */
                if ((e->restart_requested || orphan) &&
                    remove_terminated_worker_locked(pw, e, orphan))
                        continue;
                if (!out.items)
                        continue;
                s = &out.items[out.n];
                s->uid = strdup(e->uid);
                if (!s->uid) {
                        r = -ENOMEM;
                        continue;
                }
                s->state = work_type(e);
                s->orphan = orphan;
                if (e->has_active)
                        u = &e->active;
                else if (e->has_pending)
                        u = &e->pending;
                if (u && u->pod) {
                        s->has_config = true;
                        s->static_pod = is_static_pod(u->pod);
                }
                out.n++;
        }
        pthread_mutex_unlock(&pw->lock);

        if (r == 0 && out.items)
                r = sync_list_index(&out);
        if (r < 0) {
                kc_pod_worker_sync_list_done(&out);
                return r;
        }
        if (ret)
                *ret = out;
        return 0;
}

int kc_pod_workers_terminate_pod_abnormally_and_wait(struct kc_pod_workers *pw,
                                                     struct kc_api_pod *pod, bool evict,
                                                     int64_t grace_override_s)
{
        _cleanup_(kc_pod_completion_unrefp) struct kc_pod_completion *done = NULL;
        struct kc_kill_pod_options kill;
        struct kc_pod_update_options o;
        int64_t grace = 0, timeout_s;
        int r;

        if (!pw || !pod || !pod->uid)
                return -EINVAL;
        if (grace_override_s >= 0)
                grace = grace_override_s;
        else if (pod->termination_grace_s >= 0)
                grace = pod->termination_grace_s;
        /* Wait the grace period plus half of it, but at least 10 s. */
        timeout_s = grace + grace / 2;
        if (timeout_s < 10)
                timeout_s = 10;

        r = kc_pod_completion_new(&done);
        if (r < 0)
                return r;
        kill = (struct kc_kill_pod_options){
                .grace_period_override_s = grace_override_s,
                .evict = evict,
                .completed = done,
        };
        o = (struct kc_pod_update_options){
                .update_type = KC_SYNC_POD_KILL,
                .start_time = kc_clock_now(pw->clock),
                .pod = pod,
                .kill_pod_options = &kill,
        };
        r = kc_pod_workers_update_pod(pw, &o);
        if (r < 0)
                return r;
        if (kc_pod_completion_wait(done, pw->clock, timeout_s * KC_NSEC_PER_SEC) < 0) {
                kc_log_warn_s("Event occurred", KC_KV_REF("object", pod->namespace, pod->name),
                              KC_KV_STR("podUID", pod->uid), KC_KV_STR("kind", "Pod"),
                              KC_KV_STR("type", "Warning"),
                              KC_KV_STR("reason", "ExceededGracePeriod"),
                              KC_KV_STR("message", "Container runtime did not terminate the pod "
                                                   "within specified grace period."));
                kc_log_error_s(NULL, "timeout waiting to terminate pod abnormally",
                               KC_KV_POD(pod->namespace, pod->name), KC_KV_STR("podUID", pod->uid));
                return -ETIMEDOUT;
        }
        return 0;
}

/* ------------------------------------------------------------------------ */
/* Predicates (§8.9)                                                          */

enum predicate {
        P_KNOWN_TERMINATED,
        P_COULD_HAVE_RUNNING,
        P_SHOULD_BE_FINISHED,
        P_TERMINATION_REQUESTED,
        P_CONTAINERS_TERMINATING,
        P_RUNTIME_REMOVED,
        P_CONTENT_REMOVED,
};

static bool predicate(struct kc_pod_workers *pw, const char *uid, enum predicate p)
{
        struct pod_entry *e;
        bool v = false;

        pthread_mutex_lock(&pw->lock);
        e = uid ? kc_map_get(pw->pods, uid) : NULL;
        if (e) {
                switch (p) {
                case P_KNOWN_TERMINATED:
                case P_RUNTIME_REMOVED:
                        v = is_terminated(e);
                        break;
                case P_COULD_HAVE_RUNNING:
                        v = !is_terminated(e);
                        break;
                case P_SHOULD_BE_FINISHED:
                        v = e->finished;
                        break;
                case P_TERMINATION_REQUESTED:
                        v = is_termination_requested(e);
                        break;
                case P_CONTAINERS_TERMINATING:
                        v = e->started_terminating;
                        break;
                case P_CONTENT_REMOVED:
                        v = e->evicted || (e->deleted && is_terminated(e));
                        break;
                }
        } else {
                switch (p) {
                case P_KNOWN_TERMINATED:
                case P_TERMINATION_REQUESTED:
                        v = false;
                        break;
                case P_COULD_HAVE_RUNNING:
                        v = !pw->pods_synced;
                        break;
                default:
                        v = pw->pods_synced;
                        break;
                }
        }
        pthread_mutex_unlock(&pw->lock);
        return v;
}

bool kc_pod_workers_is_pod_known_terminated(struct kc_pod_workers *pw, const char *uid)
{
        return predicate(pw, uid, P_KNOWN_TERMINATED);
}

bool kc_pod_workers_could_have_running_containers(struct kc_pod_workers *pw, const char *uid)
{
        return predicate(pw, uid, P_COULD_HAVE_RUNNING);
}

bool kc_pod_workers_should_pod_be_finished(struct kc_pod_workers *pw, const char *uid)
{
        return predicate(pw, uid, P_SHOULD_BE_FINISHED);
}

bool kc_pod_workers_is_pod_termination_requested(struct kc_pod_workers *pw, const char *uid)
{
        return predicate(pw, uid, P_TERMINATION_REQUESTED);
}

bool kc_pod_workers_should_pod_containers_be_terminating(struct kc_pod_workers *pw, const char *uid)
{
        return predicate(pw, uid, P_CONTAINERS_TERMINATING);
}

bool kc_pod_workers_should_pod_runtime_be_removed(struct kc_pod_workers *pw, const char *uid)
{
        return predicate(pw, uid, P_RUNTIME_REMOVED);
}

bool kc_pod_workers_should_pod_content_be_removed(struct kc_pod_workers *pw, const char *uid)
{
        return predicate(pw, uid, P_CONTENT_REMOVED);
}

bool kc_pod_workers_is_pod_for_mirror_pod_terminating_by_full_name(struct kc_pod_workers *pw,
                                                                   const char *full_name)
{
        struct static_started *s;
        struct pod_entry *e;
        bool v = false;

        if (!pw || !full_name)
                return false;
        pthread_mutex_lock(&pw->lock);
        s = kc_map_get(pw->started_static, full_name);
        e = s ? kc_map_get(pw->pods, s->uid) : NULL;
        if (e)
                v = is_termination_requested(e) && !is_terminated(e);
        pthread_mutex_unlock(&pw->lock);
        return v;
}

/* ------------------------------------------------------------------------ */
/* Test hooks (internal.h)                                                    */

static void copy_str(char *dst, size_t size, const char *src)
{
        snprintf(dst, size, "%s", src ? src : "");
}

int kc__pod_workers_snapshot(struct kc_pod_workers *pw, const char *uid,
                             struct kc__pod_sync_snapshot *ret)
{
        struct kc__pod_sync_snapshot s = { 0 };
        struct pod_entry *e;

        pthread_mutex_lock(&pw->lock);
        e = kc_map_get(pw->pods, uid);
        if (!e) {
                pthread_mutex_unlock(&pw->lock);
                return -ENOENT;
        }
        copy_str(s.fullname, sizeof(s.fullname), e->fullname);
        s.synced_at = e->synced_at;
        s.started_at = e->started_at;
        s.terminating_at = e->terminating_at;
        s.terminated_at = e->terminated_at;
        s.grace_period = e->grace_period;
        s.started_terminating = e->started_terminating;
        s.deleted = e->deleted;
        s.evicted = e->evicted;
        s.finished = e->finished;
        s.restart_requested = e->restart_requested;
        s.observed_runtime = e->observed_runtime;
        s.working = e->working;
        s.has_ctx = e->ctx != NULL;
        s.has_pending = e->has_pending;
        if (e->has_pending) {
                s.pending_type = e->pending.type;
                s.pending_start_time = e->pending.start_time;
                s.pending_has_pod = e->pending.pod != NULL;
                s.pending_has_running_pod = e->pending.running != NULL;
                s.pending_has_kill = e->pending.has_kill;
                s.pending_grace_override = e->pending.grace_override;
        }
        s.has_active = e->has_active;
        if (e->has_active) {
                s.active_type = e->active.type;
                s.active_has_pod = e->active.pod != NULL;
                s.active_has_running_pod = e->active.running != NULL;
                s.active_has_kill = e->active.has_kill;
                s.active_evict = e->active.evict;
                s.active_grace_override = e->active.grace_override;
                if (e->active.pod) {
                        copy_str(s.active_pod_name, sizeof(s.active_pod_name), e->active.pod->name);
                        s.active_pod_deletion_ts = e->active.pod->deletion_ts;
                }
        }
        pthread_mutex_unlock(&pw->lock);
        *ret = s;
        return 0;
}

size_t kc__pod_workers_count(struct kc_pod_workers *pw)
{
        size_t n;

        pthread_mutex_lock(&pw->lock);
        n = kc_map_size(pw->pods);
        pthread_mutex_unlock(&pw->lock);
        return n;
}

unsigned kc__pod_workers_unjoined_count(struct kc_pod_workers *pw)
{
        unsigned n;

        pthread_mutex_lock(&pw->lock);
        n = pw->reaper.n_exited;
        pthread_mutex_unlock(&pw->lock);
        return n;
}

unsigned kc__pod_workers_eager_threads(struct kc_pod_workers *pw)
{
        return pw->eager_threads; /* set once, before any thread */
}

unsigned kc__pod_workers_thread_count(struct kc_pod_workers *pw)
{
        unsigned n;

        pthread_mutex_lock(&pw->lock);
        n = pw->reaper.n_running;
        pthread_mutex_unlock(&pw->lock);
        return n;
}

int kc__pod_workers_hold(struct kc_pod_workers *pw, const char *uid)
{
        char *copy;
        int r = 0;

        pthread_mutex_lock(&pw->lock);
        if (!kc_map_get(pw->held, uid)) {
                copy = strdup(uid);
                if (!copy || kc_map_put(pw->held, copy, copy) < 0) {
                        free(copy);
                        r = -ENOMEM;
                }
        }
        pthread_mutex_unlock(&pw->lock);
        return r;
}

void kc__pod_workers_release(struct kc_pod_workers *pw, const char *uid)
{
        struct pod_entry *e;
        char *copy;

        pthread_mutex_lock(&pw->lock);
        copy = kc_map_remove(pw->held, uid);
        free(copy);
        e = kc_map_get(pw->pods, uid);
        if (e && e->signalled)
                schedule_locked(pw, e);
        pthread_cond_broadcast(&pw->idle_cond);
        pthread_mutex_unlock(&pw->lock);
}

static bool busy_locked(struct kc_pod_workers *pw)
{
        size_t iter = 0;
        const char *key;
        void *value;

        while (kc_map_next(pw->pods, &iter, &key, &value)) {
                struct pod_entry *e = value;

                if (e->working && !kc_map_get(pw->held, e->uid))
                        return true;
        }
        return false;
}

int kc__pod_workers_drain(struct kc_pod_workers *pw, int timeout_ms)
{
        struct timespec deadline = monotonic_deadline((int64_t)timeout_ms * KC_NSEC_PER_MSEC);
        int r = 0;

        pthread_mutex_lock(&pw->lock);
        while (busy_locked(pw)) {
                if (pthread_cond_timedwait(&pw->idle_cond, &pw->lock, &deadline) == ETIMEDOUT) {
                        r = busy_locked(pw) ? -ETIMEDOUT : 0;
                        break;
                }
        }
        pthread_mutex_unlock(&pw->lock);
        return r;
}

int kc__pod_workers_inject_status(struct kc_pod_workers *pw, const char *uid, const char *fullname,
                                  int64_t terminating_at, int64_t terminated_at)
{
        struct pod_entry *e = entry_new(uid, "", "");

        if (!e)
                return -ENOMEM;
        free(e->fullname);
        e->fullname = strdup(fullname);
        if (!e->fullname) {
                free(e);
                return -ENOMEM;
        }
        e->terminating_at = terminating_at;
        e->terminated_at = terminated_at;
        pthread_mutex_lock(&pw->lock);
        if (kc_map_get(pw->pods, uid) || kc_map_put(pw->pods, e->uid, e) < 0) {
                pthread_mutex_unlock(&pw->lock);
                entry_free(e);
                return -EEXIST;
        }
        pthread_mutex_unlock(&pw->lock);
        return 0;
}

int kc__pod_workers_set_started_static(struct kc_pod_workers *pw, const char *fullname,
                                       const char *uid)
{
        int r;

        pthread_mutex_lock(&pw->lock);
        r = set_started_static_locked(pw, fullname, uid);
        pthread_mutex_unlock(&pw->lock);
        return r;
}

int kc__pod_workers_set_waiting_static(struct kc_pod_workers *pw, const char *fullname,
                                       const char *const *uids, size_t n)
{
        int r = 0;

        pthread_mutex_lock(&pw->lock);
        for (size_t i = 0; i < n && r == 0; i++)
                r = waiting_append_locked(pw, fullname, uids[i]);
        pthread_mutex_unlock(&pw->lock);
        return r;
}

bool kc__pod_workers_get_started_static(struct kc_pod_workers *pw, const char *fullname, char *buf,
                                        size_t size)
{
        struct static_started *s;

        pthread_mutex_lock(&pw->lock);
        s = kc_map_get(pw->started_static, fullname);
        copy_str(buf, size, s ? s->uid : "");
        pthread_mutex_unlock(&pw->lock);
        return s != NULL;
}

bool kc__pod_workers_get_waiting_static(struct kc_pod_workers *pw, const char *fullname, char *buf,
                                        size_t size)
{
        struct static_waiting *w;
        size_t off = 0;

        pthread_mutex_lock(&pw->lock);
        w = kc_map_get(pw->waiting_static, fullname);
        if (size > 0)
                buf[0] = '\0';
        for (size_t i = 0; w && i < w->n && off < size; i++) {
                int k = snprintf(buf + off, size - off, "%s%s", i ? "," : "", w->uids[i]);

                if (k < 0)
                        break;
                off += (size_t)k;
        }
        pthread_mutex_unlock(&pw->lock);
        return w != NULL;
}

size_t kc__pod_workers_started_static_count(struct kc_pod_workers *pw)
{
        size_t n;

        pthread_mutex_lock(&pw->lock);
        n = kc_map_size(pw->started_static);
        pthread_mutex_unlock(&pw->lock);
        return n;
}

size_t kc__pod_workers_waiting_static_count(struct kc_pod_workers *pw)
{
        size_t n;

        pthread_mutex_lock(&pw->lock);
        n = kc_map_size(pw->waiting_static);
        pthread_mutex_unlock(&pw->lock);
        return n;
}
