/* SPDX-License-Identifier: Apache-2.0 */
/* The reason cache (kuberuntime ReasonCache): the last start failure of each container, least recently used evicted. */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cleanup.h"
#include "core/list.h"
#include "core/lock.h"
#include "core/map.h"
#include "kubelet/status/reason_cache.h"

struct rc_entry {
        struct kc_list lru_link; /* on kc_reason_cache.lru: the most recently used first */
        char *key;               /* the map's key */
        const char *uid;         /* the pod's: the tail of key */
        char *reason;
        char *message;
};

struct kc_reason_cache {
        pthread_mutex_t lock;
        struct kc_map *map; /* key -> struct rc_entry */
        struct kc_list lru; /* struct rc_entry by last use (update or get), the newest first */
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

/*
 * Checks the arguments every lookup takes and builds the key of @p uid's
 * container @p name. @return 0, -EINVAL or -ENOMEM (*@p ret untouched).
 */
static int rc_lookup_key(const struct kc_reason_cache *rc, const char *uid, const char *name,
                         char **ret)
{
        char *k;

        if (!rc || !uid || !name)
                return -EINVAL;
        k = rc_key(uid, name);
        if (!k)
                return -ENOMEM;
        *ret = k;
        return 0;
}

static struct rc_entry *rc_entry_free(struct rc_entry *e)
{
        if (!e)
                return NULL;
        free(e->key);
        free(e->reason);
        free(e->message);
        free(e);
        return NULL;
}
KC_DEFINE_CLEANUP_FUNC(struct rc_entry, rc_entry_free)

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
        kc_list_init(&rc->lru);
        *ret = rc;
        return 0;
}

struct kc_reason_cache *kc_reason_cache_free(struct kc_reason_cache *rc)
{
        struct rc_entry *e, *next;

        if (!rc)
                return NULL;
        kc_list_for_each_entry_safe (e, next, &rc->lru, struct rc_entry, lru_link)
                rc_entry_free(e);
        kc_map_free(rc->map);
        pthread_mutex_destroy(&rc->lock);
        free(rc);
        return NULL;
}

int kc_reason_cache_update(struct kc_reason_cache *rc, const char *uid, const char *container_name,
                           const char *reason, const char *message)
{
        _cleanup_free_ char *key = NULL, *r = NULL, *m = NULL;
        /* Declared before the guard: freed after the unlock. */
        _cleanup_(rc_entry_freep) struct rc_entry *victim = NULL;
        struct rc_entry *e;
        int ret;

        if (!reason || !*reason)
                return -EINVAL;
        ret = rc_lookup_key(rc, uid, container_name, &key);
        if (ret < 0)
                return ret;
        r = strdup(reason);
        m = strdup(message ? message : "");
        if (!r || !m)
                return -ENOMEM;

        KC_LOCK_GUARD(&rc->lock);
        e = kc_map_get(rc->map, key);
        if (e) {
                free(e->reason);
                free(e->message);
                e->reason = TAKE_PTR(r);
                e->message = TAKE_PTR(m);
                kc_list_del(&e->lru_link);
                kc_list_add_head(&rc->lru, &e->lru_link);
                return 0;
        }
        e = calloc(1, sizeof(*e));
        if (!e || kc_map_reserve(rc->map, kc_map_size(rc->map) + 1) < 0) {
                free(e);
                return -ENOMEM;
        }
        if (kc_map_size(rc->map) >= KC_REASON_CACHE_MAX_ENTRIES) {
                /* The least recently used. */
                victim = kc_list_entry(kc_list_last(&rc->lru), struct rc_entry, lru_link);
                kc_list_del(&victim->lru_link);
                kc_map_remove(rc->map, victim->key);
        }
        e->uid = rc_key_uid(key, uid);
        e->key = TAKE_PTR(key);
        e->reason = TAKE_PTR(r);
        e->message = TAKE_PTR(m);
        (void)kc_map_put(rc->map, e->key, e); /* reserved above */
        kc_list_add_head(&rc->lru, &e->lru_link);
        return 0;
}

int kc_reason_cache_remove(struct kc_reason_cache *rc, const char *uid, const char *container_name)
{
        _cleanup_free_ char *key = NULL;
        /* Declared before the guard: freed after the unlock. */
        _cleanup_(rc_entry_freep) struct rc_entry *e = NULL;
        int ret;

        ret = rc_lookup_key(rc, uid, container_name, &key);
        if (ret < 0)
                return ret;
        KC_LOCK_GUARD(&rc->lock);
        e = kc_map_remove(rc->map, key);
        if (e)
                kc_list_del(&e->lru_link);
        return 0;
}

int kc_reason_cache_remove_orphans(struct kc_reason_cache *rc, const char *const *keep_uids,
                                   size_t n)
{
        _cleanup_(kc_map_freep) struct kc_map *keep = NULL;
        struct kc_list gone = KC_LIST_HEAD_INIT(gone); /* freed outside the lock */
        struct rc_entry *e, *next;
        int n_gone = 0;

        if (!rc || (n > 0 && !keep_uids))
                return -EINVAL;
        if (kc_map_new_set(keep_uids, n, &keep) < 0)
                return -ENOMEM;
        {
                KC_LOCK_GUARD(&rc->lock);
                kc_list_for_each_entry_safe (e, next, &rc->lru, struct rc_entry, lru_link) {
                        if (kc_map_get(keep, e->uid))
                                continue;
                        kc_list_del(&e->lru_link);
                        kc_map_remove(rc->map, e->key);
                        kc_list_add_tail(&gone, &e->lru_link);
                        n_gone++;
                }
        }
        kc_list_for_each_entry_safe (e, next, &gone, struct rc_entry, lru_link)
                rc_entry_free(e);
        return n_gone;
}

int kc_reason_cache_get(struct kc_reason_cache *rc, const char *uid, const char *container_name,
                        char **ret_reason, char **ret_message)
{
        _cleanup_free_ char *key = NULL, *r = NULL, *m = NULL;
        struct rc_entry *e;
        int ret;

        ret = rc_lookup_key(rc, uid, container_name, &key);
        if (ret < 0)
                return ret;
        KC_LOCK_GUARD(&rc->lock);
        e = kc_map_get(rc->map, key);
        if (!e)
                return -ENOENT;
        /* A read is a use, as in upstream's LRU: the entry becomes the newest. */
        kc_list_del(&e->lru_link);
        kc_list_add_head(&rc->lru, &e->lru_link);
        if ((ret_reason && !(r = strdup(e->reason))) || (ret_message && !(m = strdup(e->message))))
                return -ENOMEM;
        if (ret_reason)
                *ret_reason = TAKE_PTR(r);
        if (ret_message)
                *ret_message = TAKE_PTR(m);
        return 0;
}

size_t kc_reason_cache_len(struct kc_reason_cache *rc)
{
        if (!rc)
                return 0;
        KC_LOCK_GUARD(&rc->lock);
        return kc_map_size(rc->map);
}
