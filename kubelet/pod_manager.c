/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pod manager (upstream pkg/kubelet/pod/pod_manager.go, basicManager):
 * the desired pods by UID and by full name, static pods and their mirror
 * pods kept apart, with the mirror UID → static UID translation. Mirror pods
 * share their static pod's full name, not its UID.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/cleanup.h"
#include "core/map.h"
#include "kubelet/pod_manager.h"
#include "runtime/api_pod.h"

/* One stored pod: the reference and its full name (the by-name map's key). */
struct entry {
        struct kc_api_pod *pod;
        char full_name[];
};

/* A pair of indexes over the same entries. */
struct index {
        struct kc_map *by_uid;       /* pod->uid -> entry */
        struct kc_map *by_full_name; /* entry->full_name -> entry */
};

struct kc_pod_manager {
        pthread_rwlock_t lock;
        struct index pods;    /* non-mirror (including static) pods */
        struct index mirrors; /* mirror pods */
        /* translationByUID is derived: a mirror's static pod is pods.by_full_name[its name]. */
};

static struct entry *entry_new(struct kc_api_pod *pod)
{
        _cleanup_free_ char *name = kc_pod_full_name(pod->name, pod->namespace);
        struct entry *e;
        size_t len;

        if (!name)
                return NULL;
        len = strlen(name) + 1;
        e = malloc(sizeof(*e) + len);
        if (!e)
                return NULL;
        e->pod = kc_api_pod_ref(pod);
        memcpy(e->full_name, name, len);
        return e;
}

static void entry_free(struct entry *e)
{
        if (!e)
                return;
        kc_api_pod_unref(e->pod);
        free(e);
}

static int index_init(struct index *x)
{
        if (kc_map_new(&x->by_uid) < 0 || kc_map_new(&x->by_full_name) < 0)
                return -ENOMEM;
        return 0;
}

/* Drops every entry (the UID map owns them). */
static void index_clear(struct index *x)
{
        size_t it = 0;
        void *v;

        while (kc_map_next(x->by_uid, &it, NULL, &v))
                entry_free(v);
        kc_map_clear(x->by_uid);
        kc_map_clear(x->by_full_name);
}

static void index_done(struct index *x)
{
        if (x->by_uid)
                index_clear(x);
        x->by_uid = kc_map_free(x->by_uid);
        x->by_full_name = kc_map_free(x->by_full_name);
}

static void index_remove(struct index *x, const char *uid)
{
        struct entry *e = kc_map_remove(x->by_uid, uid);

        if (!e)
                return;
        /* The name slot may since belong to another UID with the same name. */
        if (kc_map_get(x->by_full_name, e->full_name) == e)
                kc_map_remove(x->by_full_name, e->full_name);
        entry_free(e);
}

static int index_put(struct index *x, struct kc_api_pod *pod)
{
        struct entry *e = entry_new(pod);

        if (!e)
                return -ENOMEM;
        if (kc_map_reserve(x->by_uid, kc_map_size(x->by_uid) + 1) < 0 ||
            kc_map_reserve(x->by_full_name, kc_map_size(x->by_full_name) + 1) < 0) {
                entry_free(e);
                return -ENOMEM;
        }
        /* Replace the UID's previous entry, and its name slot if it still has it. */
        index_remove(x, pod->uid);
        (void)kc_map_put(x->by_uid, e->pod->uid, e);
        (void)kc_map_put(x->by_full_name, e->full_name, e);
        return 0;
}

int kc_pod_manager_new(struct kc_pod_manager **ret)
{
        struct kc_pod_manager *m = calloc(1, sizeof(*m));

        if (!m)
                return -ENOMEM;
        pthread_rwlock_init(&m->lock, NULL);
        if (index_init(&m->pods) < 0 || index_init(&m->mirrors) < 0) {
                kc_pod_manager_free(m);
                return -ENOMEM;
        }
        *ret = m;
        return 0;
}

struct kc_pod_manager *kc_pod_manager_free(struct kc_pod_manager *m)
{
        if (!m)
                return NULL;
        index_done(&m->pods);
        index_done(&m->mirrors);
        pthread_rwlock_destroy(&m->lock);
        free(m);
        return NULL;
}

static struct index *index_for(struct kc_pod_manager *m, const struct kc_api_pod *pod)
{
        return pod->mirror_pod ? &m->mirrors : &m->pods;
}

int kc_pod_manager_update_pod(struct kc_pod_manager *m, struct kc_api_pod *pod)
{
        int r;

        pthread_rwlock_wrlock(&m->lock);
        r = index_put(index_for(m, pod), pod);
        pthread_rwlock_unlock(&m->lock);
        return r;
}

void kc_pod_manager_remove_pod(struct kc_pod_manager *m, const struct kc_api_pod *pod)
{
        pthread_rwlock_wrlock(&m->lock);
        index_remove(index_for(m, pod), pod->uid);
        pthread_rwlock_unlock(&m->lock);
}

int kc_pod_manager_set_pods(struct kc_pod_manager *m, struct kc_api_pod *const *pods, size_t n)
{
        size_t i;
        int r = 0;

        pthread_rwlock_wrlock(&m->lock);
        index_clear(&m->pods);
        index_clear(&m->mirrors);
        for (i = 0; i < n && r == 0; i++)
                r = index_put(index_for(m, pods[i]), pods[i]);
        pthread_rwlock_unlock(&m->lock);
        return r;
}

/* A new reference to the pod of @e, NULL-safe. */
static struct kc_api_pod *ref_of(const struct entry *e)
{
        return e ? kc_api_pod_ref(e->pod) : NULL;
}

struct kc_api_pod *kc_pod_manager_get_pod_by_uid(struct kc_pod_manager *m, const char *uid)
{
        struct kc_api_pod *p;

        pthread_rwlock_rdlock(&m->lock);
        p = ref_of(kc_map_get(m->pods.by_uid, uid));
        pthread_rwlock_unlock(&m->lock);
        return p;
}

struct kc_api_pod *kc_pod_manager_get_pod_by_full_name(struct kc_pod_manager *m,
                                                       const char *full_name)
{
        struct kc_api_pod *p;

        pthread_rwlock_rdlock(&m->lock);
        p = ref_of(kc_map_get(m->pods.by_full_name, full_name));
        pthread_rwlock_unlock(&m->lock);
        return p;
}

struct kc_api_pod *kc_pod_manager_get_pod_by_name(struct kc_pod_manager *m, const char *namespace,
                                                  const char *name)
{
        _cleanup_free_ char *full = kc_pod_full_name(name, namespace);

        return full ? kc_pod_manager_get_pod_by_full_name(m, full) : NULL;
}

/* The entry in @x with @pod's full name. Lock held. */
static struct entry *by_name_of(struct index *x, const struct kc_api_pod *pod)
{
        _cleanup_free_ char *full = kc_pod_full_name(pod->name, pod->namespace);

        return full ? kc_map_get(x->by_full_name, full) : NULL;
}

struct kc_api_pod *kc_pod_manager_get_pod_by_mirror_pod(struct kc_pod_manager *m,
                                                        const struct kc_api_pod *mirror)
{
        struct kc_api_pod *p;

        pthread_rwlock_rdlock(&m->lock);
        p = ref_of(by_name_of(&m->pods, mirror));
        pthread_rwlock_unlock(&m->lock);
        return p;
}

struct kc_api_pod *kc_pod_manager_get_mirror_pod_by_pod(struct kc_pod_manager *m,
                                                        const struct kc_api_pod *pod)
{
        struct kc_api_pod *p;

        pthread_rwlock_rdlock(&m->lock);
        p = ref_of(by_name_of(&m->mirrors, pod));
        pthread_rwlock_unlock(&m->lock);
        return p;
}

bool kc_pod_manager_get_pod_and_mirror_pod(struct kc_pod_manager *m, struct kc_api_pod *pod,
                                           struct kc_api_pod **ret_pod,
                                           struct kc_api_pod **ret_mirror)
{
        if (pod->mirror_pod) {
                *ret_pod = kc_pod_manager_get_pod_by_mirror_pod(m, pod);
                *ret_mirror = kc_api_pod_ref(pod);
                return *ret_pod != NULL;
        }
        *ret_pod = kc_api_pod_ref(pod);
        *ret_mirror = kc_pod_manager_get_mirror_pod_by_pod(m, pod);
        return true;
}

size_t kc_pod_manager_get_pods(struct kc_pod_manager *m, struct kc_api_pod ***ret)
{
        struct kc_api_pod **v;
        size_t it = 0, n = 0;
        void *e;

        pthread_rwlock_rdlock(&m->lock);
        v = malloc((kc_map_size(m->pods.by_uid) + 1) * sizeof(*v));
        if (v)
                while (kc_map_next(m->pods.by_uid, &it, NULL, &e))
                        v[n++] = ref_of(e);
        pthread_rwlock_unlock(&m->lock);
        *ret = v;
        return n;
}

size_t kc_pod_manager_get_orphaned_mirror_pod_names(struct kc_pod_manager *m, char ***ret)
{
        size_t it = 0, n = 0;
        const char *name;
        char **v;

        pthread_rwlock_rdlock(&m->lock);
        v = calloc(kc_map_size(m->mirrors.by_full_name) + 1, sizeof(*v));
        if (v)
                while (kc_map_next(m->mirrors.by_full_name, &it, &name, NULL))
                        if (!kc_map_get(m->pods.by_full_name, name) && (v[n] = strdup(name)))
                                n++;
        pthread_rwlock_unlock(&m->lock);
        *ret = v;
        return n;
}

char *kc_pod_manager_translate_pod_uid(struct kc_pod_manager *m, const char *uid)
{
        const struct entry *mirror, *pod = NULL;
        char *out;

        pthread_rwlock_rdlock(&m->lock);
        mirror = kc_map_get(m->mirrors.by_uid, uid);
        if (mirror)
                pod = kc_map_get(m->pods.by_full_name, mirror->full_name);
        out = strdup(pod ? pod->pod->uid : uid);
        pthread_rwlock_unlock(&m->lock);
        return out;
}
