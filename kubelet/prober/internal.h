/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The prober manager's internals shared by prober_manager.c and worker.c.
 *
 * Threads (upstream: one goroutine per probe): a worker is a record, not a
 * thread. One scheduler thread keeps the workers in a heap by due time and
 * sleeps on the injected clock until the first is due (deadlines rounded up
 * to a 10 ms grid, so that one wake serves every probe due within it); due
 * workers go to a run queue that runner threads drain, each running one
 * worker's doProbe at a time (the probe blocks its runner for up to the
 * probe's timeout). One runner is woken per batch; a worker still queued at
 * the scheduler's next pass (10 ms later) gets a runner of its own, woken
 * or created, so a slow probe delays others by at most a pass. Runners idle
 * for 30 s exit (one stays). The manager's lock guards all of it; a worker
 * is exited by a runner, which removes it from the map; the manager's free
 * waits for the workers and the threads to be gone.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/list.h"
#include "core/thread.h"
#include "kubelet/prober/prober_manager.h"

struct kc_cancel;
struct kc_counter_vec;
struct kc_histogram_vec;
struct kc_map;
struct kc__probe_metrics;

struct kc_prober_manager {
        struct kc_prober_manager_config cfg;
        int64_t start_ns; /* the first probe's jitter applies while younger than a period */
        struct kc_results_manager *results[_KC_PROBE_TYPE_MAX];
        struct kc__probe_metrics *metrics; /* the registry's; NULL without one */

        pthread_mutex_t lock;
        pthread_cond_t exited;  /* a worker or a thread is gone */
        pthread_cond_t work;    /* runners wait here for the run queue */
        struct kc_map *workers; /* worker key -> struct kc__worker */
        size_t n_workers;
        bool closing; /* kc_prober_manager_free(): AddPod starts nothing */

        /* The scheduler. */
        struct kc__worker **heap; /* by due time */
        size_t n_heap, cap_heap;
        struct kc_list queue;         /* due workers waiting for a runner */
        uint64_t pass;                /* the scheduler's passes */
        int64_t sched_deadline;       /* what the scheduler sleeps until (INT64_MAX: nothing) */
        bool sched_asleep;            /* between its last pass and the next */
        bool sched_dirty;             /* woken for a new earlier deadline; recomputing */
        struct kc_cancel *sched_wake; /* wakes the scheduler; replaced after each use */
        struct kc_reaper threads;     /* the scheduler and the runners: running, exited */
        size_t n_runners, n_idle;     /* runners; those waiting for work */
};

/*
 * A scheduler or runner thread, joinable: on its way out it retires on
 * m->threads (under the lock, its last use of it), and the next runner
 * start or kc__scheduler_stop() joins it, so no thread outlives the manager.
 */
struct kc__thread {
        struct kc_prober_manager *m;
        struct kc_thread thread;
};

struct kc__worker {
        struct kc_prober_manager *m;
        enum kc_probe_type type;
        struct kc_api_pod *pod;           /* a reference */
        const struct kc_api_container *c; /* inside pod */
        const struct kc_api_probe *spec;  /* inside c */
        struct kc_results_manager *results;
        enum kc_probe_result initial;

        /* The running worker's own state (one runner at a time). */
        char *container_id; /* NULL until a container was seen */
        bool on_hold;
        enum kc_probe_result last_result;
        int32_t result_run;

        /* Under m->lock. */
        bool stop, triggered; /* triggered: run again once the probe ends */
        bool queued, running;
        size_t heap_idx;           /* SIZE_MAX: not in the heap */
        int64_t due;               /* the next tick (the ticker's phase) */
        uint64_t queued_pass;      /* the scheduler's pass when queued */
        struct kc_list link;       /* in the run queue */
        struct kc_cancel *stopped; /* triggered by a stop: cancels a waiting send */

        char key[]; /* "<uid>/<container>/<type>": the map's key */
};

/* The worker key of (uid, container, type) into a malloc'd string. */
char *kc__worker_key(const char *uid, const char *container, enum kc_probe_type t);
/* newWorker + go w.run(): registers the worker in the map and schedules it. Under m->lock. */
int kc__worker_start(struct kc_prober_manager *m, enum kc_probe_type t, struct kc_api_pod *pod,
                     const struct kc_api_container *c);
/* Starts the scheduler thread. */
int kc__scheduler_start(struct kc_prober_manager *m);
/* Stops every worker and waits for them and for every thread (kc_prober_manager_free). */
void kc__scheduler_stop(struct kc_prober_manager *m);
/* No worker queued or running and the scheduler asleep (tests). Under m->lock. */
bool kc__scheduler_quiescent(struct kc_prober_manager *m);
/* worker.stop(): asks the worker to exit. Under m->lock. */
void kc__worker_stop(struct kc__worker *w);
/* worker.go: a new worker (not scheduled), its free, and doProbe (false: exit). */
struct kc__worker *kc__worker_new(struct kc_prober_manager *m, enum kc_probe_type t,
                                  struct kc_api_pod *pod, const struct kc_api_container *c,
                                  const char *key);
struct kc__worker *kc__worker_free(struct kc__worker *w);
bool kc__worker_do_probe(struct kc__worker *w);
/* The manual trigger (non-blocking; a pending trigger absorbs further ones). Under m->lock. */
void kc__worker_trigger(struct kc__worker *w);
/* "Liveness", "Readiness", "Startup" (upstream probeType.String()). */
const char *kc__probe_type_name(enum kc_probe_type t);

/* Probe metrics (metrics.c): the registry owns the store; NULL-safe on a NULL @pm. */
int kc__probe_metrics_new(struct kc_metrics_registry *r, struct kc__probe_metrics **ret);
void kc__probe_metrics_observe(struct kc__probe_metrics *pm, const struct kc__worker *w,
                               enum kc_probe_result result, double seconds);
void kc__probe_metrics_forget(struct kc__probe_metrics *pm, const struct kc__worker *w);
