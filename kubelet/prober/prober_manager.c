/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The prober manager (upstream pkg/kubelet/prober/prober_manager.go): the
 * workers of every pod's probes, the three results managers, and
 * UpdatePodStatus' view of them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/cleanup.h"
#include "core/clock.h"
#include "core/lock.h"
#include "core/log.h"
#include "core/map.h"
#include "internal.h"
#include "kubelet/prober/prober.h"
#include "runtime/api_pod.h"

int kc_prober_manager_new(const struct kc_prober_manager_config *cfg,
                          struct kc_prober_manager **ret)
{
        struct kc_prober_manager *m;
        int r;

        if (!cfg || !ret || !cfg->clock || !cfg->runner || !cfg->runner->probe || !cfg->status ||
            !cfg->status->get)
                return -EINVAL;
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->cfg = *cfg;
        pthread_mutex_init(&m->lock, NULL);
        pthread_cond_init(&m->exited, NULL);
        pthread_cond_init(&m->work, NULL);
        kc_list_init(&m->queue);
        m->start_ns = kc_clock_now(cfg->clock);
        r = kc_map_new(&m->workers);
        for (int t = 0; r == 0 && t < _KC_PROBE_TYPE_MAX; t++)
                r = kc_results_manager_new(t, cfg->updates, cfg->clock, &m->results[t]);
        if (r == 0 && cfg->metrics)
                r = kc__probe_metrics_new(cfg->metrics, &m->metrics);
        if (r == 0)
                r = kc__scheduler_start(m);
        if (r < 0) {
                kc_prober_manager_free(m);
                return r;
        }
        *ret = m;
        return 0;
}

struct kc_prober_manager *kc_prober_manager_free(struct kc_prober_manager *m)
{
        if (!m)
                return NULL;
        if (m->workers)
                kc__scheduler_stop(m); /* every worker and thread gone */
        kc_map_free(m->workers);
        for (int t = 0; t < _KC_PROBE_TYPE_MAX; t++)
                kc_results_manager_free(m->results[t]);
        pthread_cond_destroy(&m->work);
        pthread_cond_destroy(&m->exited);
        pthread_mutex_destroy(&m->lock);
        free(m);
        return NULL;
}

struct kc_results_manager *kc_prober_manager_results(struct kc_prober_manager *m,
                                                     enum kc_probe_type t)
{
        if (!m || t < 0 || t >= _KC_PROBE_TYPE_MAX)
                return NULL;
        return m->results[t];
}

/* The worker of (uid, container, type), or NULL. Under m->lock. */
static struct kc__worker *find_worker(struct kc_prober_manager *m, const char *uid,
                                      const char *container, enum kc_probe_type t)
{
        _cleanup_free_ char *key = kc__worker_key(uid, container, t);

        return key ? kc_map_get(m->workers, key) : NULL;
}

/* The containers AddPod and RemovePod walk: app containers, then sidecars. */
static const struct kc_api_container *nth_probed(const struct kc_api_pod *pod, size_t *i)
{
        while (*i < pod->n_containers + pod->n_init_containers) {
                size_t k = (*i)++;

                if (k < pod->n_containers)
                        return &pod->containers[k];
                if (pod->init_containers[k - pod->n_containers].restart_policy_always)
                        return &pod->init_containers[k - pod->n_containers];
        }
        return NULL;
}

/* Upstream's order per container: startup, readiness, liveness. */
static const enum kc_probe_type add_order[] = { KC_PROBE_STARTUP, KC_PROBE_READINESS,
                                                KC_PROBE_LIVENESS };

void kc_prober_manager_add_pod(struct kc_prober_manager *m, struct kc_api_pod *pod)
{
        const struct kc_api_container *c;
        size_t i = 0;

        if (!m || !pod || !pod->uid)
                return;
        KC_LOCK_GUARD(&m->lock);
        if (m->closing)
                return;
        while ((c = nth_probed(pod, &i))) {
                for (size_t k = 0; k < KC_ELEMENTSOF(add_order); k++) {
                        enum kc_probe_type t = add_order[k];
                        int r;

                        if (!kc_prober_probe_spec(c, t)->present)
                                continue;
                        if (find_worker(m, pod->uid, c->name, t)) {
                                kc_log_v_s(8, "Probe already exists for container",
                                           KC_KV_STR("probeType", kc__probe_type_name(t)),
                                           KC_KV_POD(pod->namespace, pod->name),
                                           KC_KV_STR("containerName", c->name));
                                return;
                        }
                        r = kc__worker_start(m, t, pod, c);
                        if (r < 0)
                                kc_log_error_s(strerror(-r), "Failed to start a probe worker",
                                               KC_KV_STR("probeType", kc__probe_type_name(t)),
                                               KC_KV_POD(pod->namespace, pod->name),
                                               KC_KV_STR("containerName", c->name));
                }
        }
}

static void stop_types(struct kc_prober_manager *m, const struct kc_api_pod *pod,
                       const enum kc_probe_type *types, size_t n)
{
        const struct kc_api_container *c;
        size_t i = 0;

        if (!m || !pod || !pod->uid)
                return;
        KC_LOCK_GUARD(&m->lock);
        while ((c = nth_probed(pod, &i))) {
                for (size_t k = 0; k < n; k++) {
                        struct kc__worker *w = find_worker(m, pod->uid, c->name, types[k]);

                        if (w)
                                kc__worker_stop(w);
                }
        }
}

void kc_prober_manager_remove_pod(struct kc_prober_manager *m, const struct kc_api_pod *pod)
{
        static const enum kc_probe_type all[] = { KC_PROBE_READINESS, KC_PROBE_LIVENESS,
                                                  KC_PROBE_STARTUP };

        stop_types(m, pod, all, KC_ELEMENTSOF(all));
}

void kc_prober_manager_stop_liveness_and_startup(struct kc_prober_manager *m,
                                                 const struct kc_api_pod *pod)
{
        static const enum kc_probe_type ls[] = { KC_PROBE_LIVENESS, KC_PROBE_STARTUP };

        stop_types(m, pod, ls, KC_ELEMENTSOF(ls));
}

void kc_prober_manager_cleanup_pods(struct kc_prober_manager *m, const char *const *desired_uids,
                                    size_t n)
{
        _cleanup_(kc_map_freep) struct kc_map *desired = NULL;
        size_t it = 0;
        const char *key;
        void *v;

        if (!m || kc_map_new_set(desired_uids, n, &desired) < 0)
                return;
        KC_LOCK_GUARD(&m->lock);
        while (kc_map_next(m->workers, &it, &key, &v)) {
                struct kc__worker *w = v;

                if (!kc_map_get(desired, w->pod->uid))
                        kc__worker_stop(w);
        }
}

/* isContainerStarted. Under m->lock. */
static bool container_started(struct kc_prober_manager *m, const char *uid, const char *name,
                              const char *id, bool running)
{
        enum kc_probe_result r;

        if (!running)
                return false;
        if (id && kc_results_manager_get(m->results[KC_PROBE_STARTUP], id, &r))
                return r == KC_PROBE_SUCCESS;
        /* No result: started unless a startup probe has yet to succeed. */
        return !find_worker(m, uid, name, KC_PROBE_STARTUP);
}

void kc_prober_manager_container_state(struct kc_prober_manager *m, const char *pod_uid,
                                       const char *container_name, const char *container_id,
                                       bool running, bool *ret_started, bool *ret_ready)
{
        struct kc__worker *w;
        enum kc_probe_result r;
        bool started, ready;

        if (!m || !pod_uid || !container_name || !ret_started || !ret_ready)
                return;
        KC_LOCK_GUARD(&m->lock);
        started = container_started(m, pod_uid, container_name, container_id, running);
        ready = false;
        if (started && container_id &&
            kc_results_manager_get(m->results[KC_PROBE_READINESS], container_id, &r) &&
            r == KC_PROBE_SUCCESS) {
                ready = true;
        } else if (started) {
                w = find_worker(m, pod_uid, container_name, KC_PROBE_READINESS);
                ready = !w; /* no readiness probe: ready */
                if (w)
                        kc__worker_trigger(w); /* probe at once to learn the state */
        }
        *ret_started = started;
        *ret_ready = ready;
}

bool kc_prober_manager_quiescent(struct kc_prober_manager *m)
{
        if (!m)
                return true;
        KC_LOCK_GUARD(&m->lock);
        return kc__scheduler_quiescent(m);
}

size_t kc_prober_manager_n_workers(struct kc_prober_manager *m)
{
        if (!m)
                return 0;
        KC_LOCK_GUARD(&m->lock);
        return m->n_workers;
}
