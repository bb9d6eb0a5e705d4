/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The prober manager's internals shared by prober_manager.c and worker.c.
 *
 * Threads: each worker is a detached thread of its own (upstream: one
 * goroutine per probe). The manager's lock guards the worker map and each
 * worker's stop/trigger flags and wake token; a worker removes itself from
 * the map when it exits and the manager's free waits for n_workers to reach
 * zero.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
        pthread_cond_t exited;  /* a worker left the map */
        struct kc_map *workers; /* worker key -> struct kc__worker */
        size_t n_workers;
        bool closing; /* kc_prober_manager_free(): AddPod starts nothing */
};

struct kc__worker {
        struct kc_prober_manager *m;
        enum kc_probe_type type;
        struct kc_api_pod *pod;           /* a reference */
        const struct kc_api_container *c; /* inside pod */
        const struct kc_api_probe *spec;  /* inside c */
        struct kc_results_manager *results;
        enum kc_probe_result initial;

        /* The worker thread's own state. */
        char *container_id; /* NULL until a container was seen */
        bool on_hold;
        enum kc_probe_result last_result;
        int32_t result_run;

        /* Under m->lock. */
        bool stop, triggered;
        struct kc_cancel *wake;    /* triggered by a stop or a manual trigger */
        struct kc_cancel *stopped; /* triggered by a stop only: cancels a waiting send */

        char key[]; /* "<uid>/<container>/<type>": the map's key */
};

/* The worker key of (uid, container, type) into a malloc'd string. */
char *kc__worker_key(const char *uid, const char *container, enum kc_probe_type t);
/* newWorker + go w.run(): registers the worker in the map. Under m->lock. */
int kc__worker_start(struct kc_prober_manager *m, enum kc_probe_type t, struct kc_api_pod *pod,
                     const struct kc_api_container *c);
/* worker.stop(): asks the worker to exit. Under m->lock. */
void kc__worker_stop(struct kc__worker *w);
/* The manual trigger (non-blocking; a pending trigger absorbs further ones). Under m->lock. */
void kc__worker_trigger(struct kc__worker *w);
/* "Liveness", "Readiness", "Startup" (upstream probeType.String()). */
const char *kc__probe_type_name(enum kc_probe_type t);

/* Probe metrics (metrics.c): the registry owns the store; NULL-safe on a NULL @pm. */
int kc__probe_metrics_new(struct kc_metrics_registry *r, struct kc__probe_metrics **ret);
void kc__probe_metrics_observe(struct kc__probe_metrics *pm, const struct kc__worker *w,
                               enum kc_probe_result result, double seconds);
void kc__probe_metrics_forget(struct kc__probe_metrics *pm, const struct kc__worker *w);
