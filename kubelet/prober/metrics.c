/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The prober's metrics (upstream pkg/kubelet/prober/prober_manager.go:
 * ProberResults, ProberDuration): prober_probe_total{probe_type, result,
 * container, pod, namespace, pod_uid} and prober_probe_duration_seconds
 * {probe_type, container, pod, namespace}. Each worker's series exist from
 * its first probe until it exits (upstream deletes them then), so they are
 * kept here, one entry per worker, and written at scrape time as a custom
 * family of the registry (labels in the Go client's name order).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/cleanup.h"
#include "core/lock.h"
#include "core/map.h"
#include "internal.h"
#include "metrics/registry.h"
#include "runtime/api_pod.h"

enum { RES_SUCCESSFUL, RES_FAILED, RES_UNKNOWN, _RES_MAX };
static const char *const result_names[_RES_MAX] = { "successful", "failed", "unknown" };

/* Prometheus' DefBuckets, the histogram's (metrics.HistogramOpts without Buckets). */
#define N_BOUNDS 11

struct series {
        const char *type;
        char *container, *pod, *namespace, *pod_uid;
        uint64_t total[_RES_MAX];
        uint64_t buckets[N_BOUNDS];
        uint64_t count;
        double sum;
        char key[];
};

struct kc__probe_metrics {
        pthread_mutex_t lock;
        struct kc_map *series; /* worker key -> struct series */
};

static void series_free(struct series *s)
{
        if (!s)
                return;
        free(s->container);
        free(s->pod);
        free(s->namespace);
        free(s->pod_uid);
        free(s);
}

static struct series *series_new(const struct kc__worker *w)
{
        size_t len = strlen(w->key);
        struct series *s = calloc(1, sizeof(*s) + len + 1);

        if (!s)
                return NULL;
        memcpy(s->key, w->key, len + 1);
        s->type = kc__probe_type_name(w->type);
        s->container = strdup(w->c->name);
        s->pod = strdup(w->pod->name ? w->pod->name : "");
        s->namespace = strdup(w->pod->namespace ? w->pod->namespace : "");
        s->pod_uid = strdup(w->pod->uid);
        if (!s->container || !s->pod || !s->namespace || !s->pod_uid) {
                series_free(s);
                return NULL;
        }
        return s;
}

/* prober_probe_total's samples of @s: one per result seen. */
static void write_total_of(const struct series *s, struct kc_metrics_writer *wr)
{
        for (int r = 0; r < _RES_MAX; r++) {
                const struct kc_metrics_label l[] = {
                        { "container", s->container },
                        { "namespace", s->namespace },
                        { "pod", s->pod },
                        { "pod_uid", s->pod_uid },
                        { "probe_type", s->type },
                        { "result", result_names[r] },
                };

                if (s->total[r])
                        kc_metrics_write_sample(wr, NULL, l, KC_ELEMENTSOF(l), (double)s->total[r]);
        }
}

/* prober_probe_duration_seconds' series of @s, once it has observations. */
static void write_duration_of(const struct series *s, struct kc_metrics_writer *wr)
{
        const struct kc_metrics_label l[] = {
                { "container", s->container },
                { "namespace", s->namespace },
                { "pod", s->pod },
                { "probe_type", s->type },
        };

        if (s->count)
                kc_metrics_write_histogram(wr, l, KC_ELEMENTSOF(l), kc_metrics_default_buckets,
                                           s->buckets, N_BOUNDS, s->count, s->sum);
}

static void write_each(struct kc__probe_metrics *pm, struct kc_metrics_writer *wr,
                       void (*write)(const struct series *s, struct kc_metrics_writer *wr))
{
        size_t it = 0;
        const char *key;
        void *v;

        KC_LOCK_GUARD(&pm->lock);
        while (kc_map_next(pm->series, &it, &key, &v))
                write(v, wr);
}

static void write_total(void *userdata, struct kc_metrics_writer *wr)
{
        write_each(userdata, wr, write_total_of);
}

static void write_duration(void *userdata, struct kc_metrics_writer *wr)
{
        write_each(userdata, wr, write_duration_of);
}

static void store_free(void *userdata)
{
        struct kc__probe_metrics *pm = userdata;
        size_t it = 0;
        const char *key;
        void *v;

        if (!pm)
                return;
        while (kc_map_next(pm->series, &it, &key, &v))
                series_free(v);
        kc_map_free(pm->series);
        pthread_mutex_destroy(&pm->lock);
        free(pm);
}

int kc__probe_metrics_new(struct kc_metrics_registry *r, struct kc__probe_metrics **ret)
{
        struct kc__probe_metrics *pm = calloc(1, sizeof(*pm));
        int k;

        if (!pm)
                return -ENOMEM;
        pthread_mutex_init(&pm->lock, NULL);
        k = kc_map_new(&pm->series);
        if (k < 0) {
                store_free(pm);
                return k;
        }
        /* The registry owns the store (a scrape may come after the manager's end). */
        k = kc_metrics_custom_new(
                r, "prober_probe_total",
                "Cumulative number of a liveness, readiness or startup probe for a container by "
                "result.",
                false, write_total, store_free, pm);
        if (k < 0) {
                store_free(pm);
                return k;
        }
        k = kc_metrics_custom_new(r, "prober_probe_duration_seconds",
                                  "Duration in seconds for a probe response.", true, write_duration,
                                  NULL, pm);
        if (k < 0)
                return k; /* the registry frees the store with the first family */
        *ret = pm;
        return 0;
}

void kc__probe_metrics_observe(struct kc__probe_metrics *pm, const struct kc__worker *w,
                               enum kc_probe_result result, double seconds)
{
        struct series *s;

        if (!pm)
                return;
        KC_LOCK_GUARD(&pm->lock);
        s = kc_map_get(pm->series, w->key);
        if (!s) {
                s = series_new(w);
                if (!s)
                        return;
                if (kc_map_put(pm->series, s->key, s) < 0) {
                        series_free(s);
                        return;
                }
        }
        switch (result) {
        case KC_PROBE_SUCCESS:
                s->total[RES_SUCCESSFUL]++;
                break;
        case KC_PROBE_FAILURE:
                s->total[RES_FAILED]++;
                return; /* upstream times successful and unknown probes only */
        default:
                s->total[RES_UNKNOWN]++;
                break;
        }
        for (size_t i = 0; i < N_BOUNDS; i++) {
                if (seconds <= kc_metrics_default_buckets[i]) {
                        s->buckets[i]++;
                        break;
                }
        }
        s->count++;
        s->sum += seconds;
}

void kc__probe_metrics_forget(struct kc__probe_metrics *pm, const struct kc__worker *w)
{
        if (!pm)
                return;
        KC_LOCK_GUARD(&pm->lock);
        series_free(kc_map_remove(pm->series, w->key));
}
