/* SPDX-License-Identifier: Apache-2.0 */
/* The reason cache (kuberuntime ReasonCache): the last start failure of each container, least recently used evicted. */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cleanup.h"
#include "core/map.h"
#include "kubelet/status/reason_cache.h"

struct rc_entry {
        struct rc_entry *prev, *next; /* update order: lru.next is the newest */
        char *key;                    /* the map's key */
        const char *uid;              /* the pod's: the tail of key */
        char *reason;
        char *message;
};

struct kc_reason_cache {
        pthread_mutex_t lock;
        struct kc_map *map;  /* key -> struct rc_entry */
        struct rc_entry lru; /* list head (sentinel) */
};

/*
 * "<len(name)>:<name>/<uid>": the length prefix keeps any name unambiguous,
 * and the UID, last, can be read in place (rc_key_uid).
 */
static char *rc_key(const char *uid, const char *name)
{
        char *k;

        if (asprintf(&k, "%zu:%s/%s", strlen(name), name, uid) < 0)
                return NULL;
        return k;
}

static const char *rc_key_uid(const char *key, const char *uid)
{
        return key + strlen(key) - strlen(uid);
}

static void rc_unlink(struct rc_entry *e)
{
        e->prev->next = e->next;
        e->next->prev = e->prev;
}

static void rc_push_front(struct kc_reason_cache *rc, struct rc_entry *e)
{
        e->prev = &rc->lru;
        e->next = rc->lru.next;
        rc->lru.next->prev = e;
        rc->lru.next = e;
}

static void rc_entry_free(struct rc_entry *e)
{
        free(e->key);
        free(e->reason);
        free(e->message);
        free(e);
}

int kc_reason_cache_new(struct kc_reason_cache **ret)
{
        struct kc_reason_cache *rc;

        if (!ret)
                return -EINVAL;
        rc = calloc(1, sizeof(*rc));
        if (!rc)
                return -ENOMEM;
        if (kc_map_new(&rc->map) < 0) {
                free(rc);
                return -ENOMEM;
        }
        pthread_mutex_init(&rc->lock, NULL);
        rc->lru.prev = rc->lru.next = &rc->lru;
        *ret = rc;
        return 0;
}

struct kc_reason_cache *kc_reason_cache_free(struct kc_reason_cache *rc)
{
        struct rc_entry *e, *next;

        if (!rc)
                return NULL;
        for (e = rc->lru.next; e != &rc->lru; e = next) {
                next = e->next;
                rc_entry_free(e);
        }
        kc_map_free(rc->map);
        pthread_mutex_destroy(&rc->lock);
        free(rc);
        return NULL;
}

int kc_reason_cache_update(struct kc_reason_cache *rc, const char *uid, const char *container_name,
                           const char *reason, const char *message)
{
        _cleanup_free_ char *key = NULL, *r = NULL, *m = NULL;
        struct rc_entry *e, *victim = NULL;

        if (!rc || !uid || !container_name || !reason || !*reason)
                return -EINVAL;
        key = rc_key(uid, container_name);
        r = strdup(reason);
        m = strdup(message ? message : "");
        if (!key || !r || !m)
                return -ENOMEM;

        pthread_mutex_lock(&rc->lock);
        e = kc_map_get(rc->map, key);
        if (e) {
                free(e->reason);
                free(e->message);
                e->reason = TAKE_PTR(r);
                e->message = TAKE_PTR(m);
                rc_unlink(e);
                rc_push_front(rc, e);
                pthread_mutex_unlock(&rc->lock);
                return 0;
        }
        e = calloc(1, sizeof(*e));
        if (!e || kc_map_reserve(rc->map, kc_map_size(rc->map) + 1) < 0) {
                pthread_mutex_unlock(&rc->lock);
                free(e);
                return -ENOMEM;
        }
        if (kc_map_size(rc->map) >= KC_REASON_CACHE_MAX_ENTRIES) {
                victim = rc->lru.prev; /* the least recently updated */
                rc_unlink(victim);
                kc_map_remove(rc->map, victim->key);
        }
        e->uid = rc_key_uid(key, uid);
        e->key = TAKE_PTR(key);
        e->reason = TAKE_PTR(r);
        e->message = TAKE_PTR(m);
        (void)kc_map_put(rc->map, e->key, e); /* reserved above */
        rc_push_front(rc, e);
        pthread_mutex_unlock(&rc->lock);
        if (victim)
                rc_entry_free(victim);
        return 0;
}

int kc_reason_cache_remove(struct kc_reason_cache *rc, const char *uid, const char *container_name)
{
        _cleanup_free_ char *key = NULL;
        struct rc_entry *e;

        if (!rc || !uid || !container_name)
                return -EINVAL;
        key = rc_key(uid, container_name);
        if (!key)
                return -ENOMEM;
        pthread_mutex_lock(&rc->lock);
        e = kc_map_remove(rc->map, key);
        if (e)
                rc_unlink(e);
        pthread_mutex_unlock(&rc->lock);
        if (e)
                rc_entry_free(e);
        return 0;
}

int kc_reason_cache_remove_orphans(struct kc_reason_cache *rc, const char *const *keep_uids,
                                   size_t n)
{
        _cleanup_(kc_map_freep) struct kc_map *keep = NULL;
        struct rc_entry *e, *next, *gone = NULL;
        int n_gone = 0;

        if (!rc || (n > 0 && !keep_uids))
                return -EINVAL;
        if (kc_map_new_set(keep_uids, n, &keep) < 0)
                return -ENOMEM;
        pthread_mutex_lock(&rc->lock);
        for (e = rc->lru.next; e != &rc->lru; e = next) {
                next = e->next;
                if (kc_map_get(keep, e->uid))
                        continue;
                rc_unlink(e);
                kc_map_remove(rc->map, e->key);
                e->next = gone; /* freed outside the lock */
                gone = e;
                n_gone++;
        }
        pthread_mutex_unlock(&rc->lock);
        for (e = gone; e; e = next) {
                next = e->next;
                rc_entry_free(e);
        }
        return n_gone;
}

int kc_reason_cache_get(struct kc_reason_cache *rc, const char *uid, const char *container_name,
                        char **ret_reason, char **ret_message)
{
        _cleanup_free_ char *key = NULL, *r = NULL, *m = NULL;
        struct rc_entry *e;
        int ret = 0;

        if (!rc || !uid || !container_name)
                return -EINVAL;
        key = rc_key(uid, container_name);
        if (!key)
                return -ENOMEM;
        pthread_mutex_lock(&rc->lock);
        e = kc_map_get(rc->map, key);
        if (!e)
                ret = -ENOENT;
        else if ((ret_reason && !(r = strdup(e->reason))) ||
                 (ret_message && !(m = strdup(e->message))))
                ret = -ENOMEM;
        pthread_mutex_unlock(&rc->lock);
        if (ret < 0)
                return ret;
        if (ret_reason)
                *ret_reason = TAKE_PTR(r);
        if (ret_message)
                *ret_message = TAKE_PTR(m);
        return 0;
}

size_t kc_reason_cache_len(struct kc_reason_cache *rc)
{
        size_t n;

        if (!rc)
                return 0;
        pthread_mutex_lock(&rc->lock);
        n = kc_map_size(rc->map);
        pthread_mutex_unlock(&rc->lock);
        return n;
}
