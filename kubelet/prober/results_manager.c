/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The probe results managers (upstream pkg/kubelet/prober/results): a cache
 * of the latest result per container ID, and an update into a channel on
 * every change. The workers write; syncLoop, UpdatePodStatus and
 * computePodActions read.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/chan.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/lock.h"
#include "core/map.h"
#include "kubelet/prober/results_manager.h"

/* How often a worker retries a push into a full updates channel. */
#define PUSH_RETRY_NS (10 * KC_NSEC_PER_MSEC)

struct entry {
        enum kc_probe_result result;
        char id[]; /* the map's key */
};

struct kc_results_manager {
        enum kc_probe_type type;
        struct kc_chan *updates; /* borrowed, may be NULL */
        struct kc_clock *clock;  /* borrowed */
        pthread_mutex_t lock;
        struct kc_map *cache; /* container ID -> struct entry */
};

void kc_probe_update_free(void *p)
{
        struct kc_probe_update *u = p;

        if (!u)
                return;
        free(u->pod_uid);
        free(u->container_id);
        free(u);
}

int kc_results_manager_new(enum kc_probe_type type, struct kc_chan *updates, struct kc_clock *clock,
                           struct kc_results_manager **ret)
{
        struct kc_results_manager *m;
        int r;

        if (!ret || !clock || type < 0 || type >= _KC_PROBE_TYPE_MAX)
                return -EINVAL;
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        r = kc_map_new(&m->cache);
        if (r < 0) {
                free(m);
                return r;
        }
        m->type = type;
        m->updates = updates;
        m->clock = clock;
        pthread_mutex_init(&m->lock, NULL);
        *ret = m;
        return 0;
}

struct kc_results_manager *kc_results_manager_free(struct kc_results_manager *m)
{
        size_t it = 0;
        const char *key;
        void *v;

        if (!m)
                return NULL;
        while (kc_map_next(m->cache, &it, &key, &v))
                free(v);
        kc_map_free(m->cache);
        pthread_mutex_destroy(&m->lock);
        free(m);
        return NULL;
}

bool kc_results_manager_get(struct kc_results_manager *m, const char *container_id,
                            enum kc_probe_result *ret)
{
        struct entry *e;

        if (!m || !container_id || !ret)
                return false;
        KC_LOCK_GUARD(&m->lock);
        e = kc_map_get(m->cache, container_id);
        if (!e)
                return false;
        *ret = e->result;
        return true;
}

/* setInternal: true when the cached result changed. */
static int set_internal(struct kc_results_manager *m, const char *id, enum kc_probe_result result)
{
        struct entry *e;
        size_t len = strlen(id);
        int r;

        KC_LOCK_GUARD(&m->lock);
        e = kc_map_get(m->cache, id);
        if (e) {
                if (e->result == result)
                        return 0;
                e->result = result;
                return 1;
        }
        e = malloc(sizeof(*e) + len + 1);
        if (!e)
                return -ENOMEM;
        memcpy(e->id, id, len + 1);
        e->result = result;
        r = kc_map_put(m->cache, e->id, e);
        if (r < 0) {
                free(e);
                return r;
        }
        return 1;
}

static struct kc_probe_update *update_new(enum kc_probe_type type, enum kc_probe_result result,
                                          const char *pod_uid, const char *container_id)
{
        struct kc_probe_update *u = calloc(1, sizeof(*u));

        if (!u)
                return NULL;
        u->type = type;
        u->result = result;
        u->pod_uid = strdup(pod_uid);
        u->container_id = strdup(container_id);
        if (!u->pod_uid || !u->container_id) {
                kc_probe_update_free(u);
                return NULL;
        }
        return u;
}

int kc_results_manager_set(struct kc_results_manager *m, const char *container_id,
                           enum kc_probe_result result, const char *pod_uid,
                           struct kc_cancel *cancel)
{
        struct kc_probe_update *u;
        int r;

        if (!m || !container_id || !pod_uid || result < 0 || result >= _KC_PROBE_RESULT_MAX)
                return -EINVAL;
        r = set_internal(m, container_id, result);
        if (r <= 0 || !m->updates)
                return r;
        u = update_new(m->type, result, pod_uid, container_id);
        if (!u)
                return -ENOMEM;
        /* Upstream's send blocks while syncLoop is busy: wait, on the clock, for room. */
        while (kc_chan_push_mp(m->updates, u) == -EAGAIN) {
                if (kc_clock_sleep(m->clock, PUSH_RETRY_NS, cancel) < 0) {
                        kc_probe_update_free(u);
                        return -ECANCELED;
                }
        }
        return 0;
}

void kc_results_manager_remove(struct kc_results_manager *m, const char *container_id)
{
        if (!m || !container_id)
                return;
        KC_LOCK_GUARD(&m->lock);
        free(kc_map_remove(m->cache, container_id));
}

size_t kc_results_manager_size(struct kc_results_manager *m)
{
        if (!m)
                return 0;
        KC_LOCK_GUARD(&m->lock);
        return kc_map_size(m->cache);
}
