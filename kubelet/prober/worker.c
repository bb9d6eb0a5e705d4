/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The probe workers (upstream pkg/kubelet/prober/worker.go): one per probe
 * per container; doProbe and its rules. scheduler.c runs them every
 * periodSeconds of the injected clock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cancel.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/format.h"
#include "core/jitter.h"
#include "core/lock.h"
#include "core/log.h"
#include "core/map.h"
#include "internal.h"
#include "runtime/api_pod.h"

static const char *const type_names[_KC_PROBE_TYPE_MAX] = {
        [KC_PROBE_LIVENESS] = "Liveness",
        [KC_PROBE_READINESS] = "Readiness",
        [KC_PROBE_STARTUP] = "Startup",
};

const char *kc__probe_type_name(enum kc_probe_type t)
{
        return t >= 0 && t < _KC_PROBE_TYPE_MAX ? type_names[t] : "unknown";
}

char *kc__worker_key(const char *uid, const char *container, enum kc_probe_type t)
{
        return kc_strdup_printf("%s/%s/%d", uid, container, (int)t);
}

void kc_probe_target_done(struct kc_probe_target *t)
{
        if (!t)
                return;
        free(t->container_id);
        free(t->pod_ip);
        *t = (struct kc_probe_target){ 0 };
}

struct kc__worker *kc__worker_free(struct kc__worker *w)
{
        if (!w)
                return NULL;
        kc_api_pod_unref(w->pod);
        free(w->container_id);
        kc_cancel_free(w->stopped);
        free(w);
        return NULL;
}

/* Results.Set with the worker's stop token: a stopping worker never waits for syncLoop. */
static void set_result(struct kc__worker *w, enum kc_probe_result r)
{
        int k = kc_results_manager_set(w->results, w->container_id, r, w->pod->uid, w->stopped);

        if (k < 0 && k != -ECANCELED)
                kc_log_error_s(strerror(-k), "Failed to record a probe result",
                               KC_KV_POD(w->pod->namespace, w->pod->name),
                               KC_KV_STR("containerName", w->c->name));
}

/* A new container instance: drop the old one's result, start from the initial value. */
static int follow_container(struct kc__worker *w, const char *id)
{
        char *copy;

        if (w->container_id && strcmp(w->container_id, id) == 0)
                return 0;
        copy = strdup(id);
        if (!copy)
                return -ENOMEM;
        if (w->container_id)
                kc_results_manager_remove(w->results, w->container_id);
        free(w->container_id);
        w->container_id = copy;
        set_result(w, w->initial);
        w->on_hold = false; /* a new container: resume probing */
        return 0;
}

/*
 * The checks before a probe runs. Returns 1 to probe now, 0 to wait for the
 * next tick, -1 to stop the worker.
 */
static int should_probe(struct kc__worker *w, const struct kc_probe_target *t, int64_t now)
{
        bool liveness_or_startup = w->type == KC_PROBE_LIVENESS || w->type == KC_PROBE_STARTUP;

        if (t->pod_terminal) {
                kc_log_v_s(3, "Pod is terminated, exiting probe worker",
                           KC_KV_POD(w->pod->namespace, w->pod->name));
                return -1;
        }
        if (!t->container_id) {
                kc_log_v_s(3, "Probe target container not found",
                           KC_KV_POD(w->pod->namespace, w->pod->name),
                           KC_KV_STR("containerName", w->c->name));
                return 0;
        }
        if (follow_container(w, t->container_id) < 0 || w->on_hold)
                return 0;
        if (!t->running) {
                kc_log_v_s(3, "Non-running container probed",
                           KC_KV_POD(w->pod->namespace, w->pod->name),
                           KC_KV_STR("containerName", w->c->name));
                set_result(w, KC_PROBE_FAILURE);
                /* Stop when the container will not be restarted. */
                return t->terminated && w->pod->restart_policy == KC_RESTART_POLICY_NEVER ? -1 : 0;
        }
        if (w->pod->deletion_ts != 0 && liveness_or_startup) {
                kc_log_v_s(3, "Pod deletion requested, setting probe result to success",
                           KC_KV_STR("probeType", kc__probe_type_name(w->type)),
                           KC_KV_POD(w->pod->namespace, w->pod->name),
                           KC_KV_STR("containerName", w->c->name));
                if (w->type == KC_PROBE_STARTUP)
                        kc_log_info_s("Pod deletion requested before container has fully started",
                                      KC_KV_POD(w->pod->namespace, w->pod->name),
                                      KC_KV_STR("containerName", w->c->name));
                set_result(w, KC_PROBE_SUCCESS); /* a quiet shutdown */
                return -1;
        }
        /* Disabled for initialDelaySeconds (whole seconds since the start, as int32). */
        if ((int32_t)((now - t->started_at_ns) / KC_NSEC_PER_SEC) < w->spec->initial_delay_seconds)
                return 0;
        /* Startup stops once started (kept for a restart); the others wait for it. */
        if (t->started ? w->type == KC_PROBE_STARTUP : w->type != KC_PROBE_STARTUP)
                return 0;
        return 1;
}

/* The result against the thresholds; Set and, for a liveness/startup failure, hold. */
static void record(struct kc__worker *w, enum kc_probe_result result)
{
        int32_t threshold;

        if (w->last_result == result) {
                w->result_run++;
        } else {
                w->last_result = result;
                w->result_run = 1;
        }
        threshold = result == KC_PROBE_FAILURE ? w->spec->failure_threshold
                                               : w->spec->success_threshold;
        if (w->result_run < threshold)
                return; /* below the threshold: the state stays */
        set_result(w, result);
        if (result == KC_PROBE_FAILURE &&
            (w->type == KC_PROBE_LIVENESS || w->type == KC_PROBE_STARTUP)) {
                /* The container will be restarted: stop probing until a new container ID. */
                w->on_hold = true;
                w->result_run = 0;
        }
}

/* doProbe: false when the worker should stop. */
bool kc__worker_do_probe(struct kc__worker *w)
{
        struct kc_prober_manager *m = w->m;
        _cleanup_(kc_probe_target_done) struct kc_probe_target t = { 0 };
        _cleanup_free_ char *output = NULL;
        enum kc_probe_result result = KC_PROBE_UNKNOWN;
        int64_t start = kc_clock_now(m->cfg.clock);
        int r;

        r = m->cfg.status->get(m->cfg.status_self, w->pod->uid, w->c->name, &t);
        if (r < 0) {
                kc_log_v_s(3, "No status for pod", KC_KV_POD(w->pod->namespace, w->pod->name));
                return true;
        }
        r = should_probe(w, &t, start);
        if (r <= 0)
                return r == 0;
        r = m->cfg.runner->probe(m->cfg.runner_self, w->type, w->pod, t.pod_ip, w->c,
                                 w->container_id, &result, &output);
        /* A prober error (an Unknown result) is thrown away. */
        if (r < 0 || result == KC_PROBE_UNKNOWN)
                return true;
        if (result == KC_PROBE_WARNING)
                result = KC_PROBE_SUCCESS; /* results.Result has no Warning */
        kc__probe_metrics_observe(m->metrics, w, result,
                                  (double)(kc_clock_now(m->cfg.clock) - start) / 1e9);
        record(w, result);
        return true;
}

struct kc__worker *kc__worker_new(struct kc_prober_manager *m, enum kc_probe_type t,
                                  struct kc_api_pod *pod, const struct kc_api_container *c,
                                  const char *key)
{
        struct kc__worker *w;
        size_t len = strlen(key);

        w = calloc(1, sizeof(*w) + len + 1);
        if (!w)
                return NULL;
        memcpy(w->key, key, len + 1);
        w->m = m;
        w->type = t;
        w->pod = kc_api_pod_ref(pod);
        w->c = c;
        w->results = m->results[t];
        w->last_result = KC_PROBE_UNKNOWN;
        switch (t) {
        case KC_PROBE_READINESS:
                w->spec = kc_api_probe_or_none(c->readiness_probe);
                w->initial = KC_PROBE_FAILURE;
                break;
        case KC_PROBE_LIVENESS:
                w->spec = kc_api_probe_or_none(c->liveness_probe);
                w->initial = KC_PROBE_SUCCESS;
                break;
        default:
                w->spec = kc_api_probe_or_none(c->startup_probe);
                w->initial = KC_PROBE_UNKNOWN;
                break;
        }
        w->heap_idx = SIZE_MAX;
        kc_list_init(&w->link);
        if (kc_cancel_new(&w->stopped) < 0)
                return kc__worker_free(w);
        return w;
}
