/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pod status cache (upstream pkg/kubelet/container/cache.go), UPSTREAM.md
 * §5. One mutex guards everything; blocked readers wait on a condition
 * variable of their own, registered as a subscriber of their pod UID.
 *
 * Readiness on entry is strict (modified > minTime, or global > minTime);
 * a later notification delivers when ts >= minTime (non-strict). Delete
 * wakes nobody: waiters are released by the next UpdateTime.
 *
 * A reader that would rather not block a thread (the pod workers) checks
 * with TryGetNewerThan and registers as the cache's one observer: it hears
 * of every Set and UpdateTime after the cache's lock is released, under a
 * lock of its own (obs_mu), so that it may take its own locks and the cache
 * again, and is never called once kc_pod_cache_set_observer() has replaced
 * it.
 */
#include <stdatomic.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/cancel.h"
#include "core/cleanup.h"
#include "core/lock.h"
#include "core/map.h"
#include "runtime/cache.h"
#include "runtime/container.h"

#include "internal.h"

/* How often a cancellable waiter re-checks its token: a net, not a poll. */
#define CANCEL_CHECK_NS (100 * KC_NSEC_PER_MSEC)

struct cache_entry {
        struct kc_pod_status *status; /* may be NULL */
        char *err;                    /* may be NULL */
        int64_t modified;
        char uid[]; /* map key */
};

struct subscriber {
        struct subscriber *next;
        int64_t min_time;
        bool done;
        struct kc_pod_status *status;
        char *err;
        bool found;
        int result;
        pthread_cond_t cond;
};

struct subscriber_list {
        struct subscriber *head;
        char uid[]; /* map key */
};

struct kc_pod_cache {
        pthread_mutex_t mu;
        struct kc_map *entries;     /* uid -> struct cache_entry */
        struct kc_map *subscribers; /* uid -> struct subscriber_list */
        bool has_global;
        int64_t global;
        bool newer_wins;

        pthread_mutex_t obs_mu; /* held across an observer call */
        atomic_bool has_observer;
        kc_pod_cache_observer_fn observer;
        void *observer_ud;
};

static struct cache_entry *cache_entry_free(struct cache_entry *e)
{
        if (!e)
                return NULL;
        kc_pod_status_unref(e->status);
        free(e->err);
        free(e);
        return NULL;
}

int kc_pod_cache_new(struct kc_pod_cache **ret)
{
        _cleanup_free_ struct kc_pod_cache *c = NULL;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        r = kc_map_new(&c->entries);
        if (r < 0)
                return r;
        r = kc_map_new(&c->subscribers);
        if (r < 0) {
                kc_map_free(c->entries);
                return r;
        }
        pthread_mutex_init(&c->mu, NULL);
        pthread_mutex_init(&c->obs_mu, NULL);
        *ret = TAKE_PTR(c);
        return 0;
}

struct kc_pod_cache *kc_pod_cache_free(struct kc_pod_cache *c)
{
        size_t it = 0;
        void *v;

        if (!c)
                return NULL;
        while (kc_map_next(c->entries, &it, NULL, &v))
                cache_entry_free(v);
        kc_map_free(c->entries);
        /* No thread may be blocked here, so every list is empty. */
        it = 0;
        while (kc_map_next(c->subscribers, &it, NULL, &v))
                free(v);
        kc_map_free(c->subscribers);
        pthread_mutex_destroy(&c->obs_mu);
        pthread_mutex_destroy(&c->mu);
        free(c);
        return NULL;
}

void kc_pod_cache_set_newer_wins(struct kc_pod_cache *c, bool on)
{
        pthread_mutex_lock(&c->mu);
        c->newer_wins = on;
        pthread_mutex_unlock(&c->mu);
}

/* Copies out an entry (or the default status on a miss). Lock held. */
static int snapshot_locked(struct kc_pod_cache *c, const char *uid,
                           struct kc_pod_status **ret_status, char **ret_err)
{
        struct cache_entry *e = kc_map_get(c->entries, uid);
        struct kc_pod_status *status = NULL;
        char *err = NULL;
        int r;

        if (!e) {
                r = kc_pod_status_new_default(uid, &status);
                if (r < 0)
                        return r;
                *ret_status = status;
                *ret_err = NULL;
                return 0;
        }
        if (e->err) {
                err = strdup(e->err);
                if (!err)
                        return -ENOMEM;
        }
        *ret_status = kc_pod_status_ref(e->status);
        *ret_err = err;
        return 1;
}

int kc_pod_cache_get(struct kc_pod_cache *c, const char *uid, struct kc_pod_status **ret_status,
                     char **ret_err)
{
        int r;

        pthread_mutex_lock(&c->mu);
        r = snapshot_locked(c, uid, ret_status, ret_err);
        pthread_mutex_unlock(&c->mu);
        return r;
}

int kc_pod_cache_get_modified(struct kc_pod_cache *c, const char *uid, int64_t *ret_ns)
{
        struct cache_entry *e;
        int r = 0;

        pthread_mutex_lock(&c->mu);
        e = kc_map_get(c->entries, uid);
        if (e) {
                *ret_ns = e->modified;
                r = 1;
        }
        pthread_mutex_unlock(&c->mu);
        return r;
}

/* Delivers to the UID's subscribers whose minTime is not after @ts. Lock held. */
static void notify_locked(struct kc_pod_cache *c, const char *uid, int64_t ts)
{
        struct subscriber_list *l = kc_map_get(c->subscribers, uid);
        struct subscriber **pp;

        if (!l)
                return;
        pp = &l->head;
        while (*pp) {
                struct subscriber *s = *pp;

                if (ts < s->min_time) {
                        pp = &s->next;
                        continue;
                }
                s->result = snapshot_locked(c, uid, &s->status, &s->err);
                s->done = true;
                *pp = s->next;
                pthread_cond_signal(&s->cond);
        }
        if (!l->head) {
                kc_map_remove(c->subscribers, uid);
                free(l);
        }
}

int kc_pod_cache_set_observer(struct kc_pod_cache *c, kc_pod_cache_observer_fn fn, void *ud)
{
        KC_LOCK_GUARD(&c->obs_mu);
        if (fn && c->observer)
                return -EBUSY;
        c->observer = fn;
        c->observer_ud = ud;
        atomic_store(&c->has_observer, fn != NULL);
        return 0;
}

/* Tells the observer, if any, of a write (@uid NULL: UpdateTime). Cache lock not held. */
static void observe(struct kc_pod_cache *c, const char *uid, int64_t ts)
{
        if (!atomic_load_explicit(&c->has_observer, memory_order_relaxed))
                return;
        KC_LOCK_GUARD(&c->obs_mu);
        if (c->observer)
                c->observer(c->observer_ud, uid, ts);
}

void kc_pod_cache_prefetch(struct kc_pod_cache *c, const char *next, const char *second,
                           const char *third)
{
        struct cache_entry *e;

        pthread_mutex_lock(&c->mu);
        if (third)
                kc_map_prefetch_slot(c->entries, third);
        if (second)
                (void)kc_map_prefetch_entry(c->entries, second);
        /* The lock keeps whatever the map holds alive: the guess is safe to read. */
        if (next && (e = kc_map_prefetch_entry(c->entries, next)) && e->status)
                kc__pod_status_prefetch(e->status);
        pthread_mutex_unlock(&c->mu);
}

bool kc_pod_cache_set(struct kc_pod_cache *c, const char *uid, struct kc_pod_status *status,
                      const char *err, int64_t ts_ns)
{
        struct cache_entry *e, *old;
        size_t len;
        char *err_copy = NULL;

        if (err) {
                err_copy = strdup(err);
                if (!err_copy)
                        return false;
        }
        pthread_mutex_lock(&c->mu);
        old = kc_map_get(c->entries, uid);
        /* Newer wins: refuse only an entry strictly older than the cached one. */
        if (c->newer_wins && old && old->modified > ts_ns) {
                pthread_mutex_unlock(&c->mu);
                free(err_copy);
                return false;
        }
        if (old) {
                /* The entry stays where it is (its key too): only its contents change. */
                /* The new reference first: @status may be the one the entry holds. */
                kc_pod_status_ref(status);
                kc_pod_status_unref(old->status);
                free(old->err);
                old->status = status;
                old->err = err_copy;
                old->modified = ts_ns;
                goto notify;
        }
        len = strlen(uid) + 1;
        e = malloc(sizeof(*e) + len);
        if (!e) {
                pthread_mutex_unlock(&c->mu);
                free(err_copy);
                return false;
        }
        memcpy(e->uid, uid, len);
        e->status = kc_pod_status_ref(status);
        e->err = err_copy;
        e->modified = ts_ns;
        if (kc_map_put(c->entries, e->uid, e) < 0) {
                pthread_mutex_unlock(&c->mu);
                cache_entry_free(e);
                return false;
        }
notify:
        notify_locked(c, uid, ts_ns);
        pthread_mutex_unlock(&c->mu);
        observe(c, uid, ts_ns);
        return true;
}

void kc_pod_cache_delete(struct kc_pod_cache *c, const char *uid)
{
        pthread_mutex_lock(&c->mu);
        cache_entry_free(kc_map_remove(c->entries, uid));
        pthread_mutex_unlock(&c->mu);
}

void kc_pod_cache_foreach(struct kc_pod_cache *c,
                          bool (*fn)(void *ud, const char *uid, const struct kc_pod_status *status),
                          void *ud)
{
        struct cache_entry *e;
        const char *uid;
        size_t it = 0;
        void *v;

        KC_LOCK_GUARD(&c->mu);
        while (kc_map_next(c->entries, &it, &uid, &v)) {
                e = v;
                if (!fn(ud, uid, e->status))
                        break;
        }
}

/* UpdateTime's deliveries. Lock held. */
static void notify_all_locked(struct kc_pod_cache *c, int64_t ts_ns)
{
        size_t it = 0, n = 0, i;
        const char *uid;
        char **uids;

        if (kc_map_size(c->subscribers) == 0)
                return;
        /* notify_locked() edits the subscriber map: collect the keys first. */
        uids = malloc(kc_map_size(c->subscribers) * sizeof(*uids));
        if (!uids)
                return;
        while (kc_map_next(c->subscribers, &it, &uid, NULL))
                uids[n++] = strdup(uid);
        for (i = 0; i < n; i++) {
                if (uids[i])
                        notify_locked(c, uids[i], ts_ns);
                free(uids[i]);
        }
        free(uids);
}

void kc_pod_cache_update_time(struct kc_pod_cache *c, int64_t ts_ns)
{
        pthread_mutex_lock(&c->mu);
        c->has_global = true;
        c->global = ts_ns;
        notify_all_locked(c, ts_ns);
        pthread_mutex_unlock(&c->mu);
        observe(c, NULL, ts_ns);
}

/* getIfNewerThan: 1 (and results) when ready, 0 when not, <0 on error. Lock held. */
static int try_locked(struct kc_pod_cache *c, const char *uid, int64_t min_ns,
                      struct kc_pod_status **ret_status, char **ret_err)
{
        struct cache_entry *e = kc_map_get(c->entries, uid);
        bool global_newer = c->has_global && c->global > min_ns;
        int r;

        if (e ? (e->modified > min_ns || global_newer) : global_newer) {
                r = snapshot_locked(c, uid, ret_status, ret_err);
                return r < 0 ? r : 1;
        }
        return 0;
}

int kc_pod_cache_try_get_newer_than(struct kc_pod_cache *c, const char *uid, int64_t min_ns,
                                    struct kc_pod_status **ret_status, char **ret_err)
{
        int r;

        pthread_mutex_lock(&c->mu);
        r = try_locked(c, uid, min_ns, ret_status, ret_err);
        pthread_mutex_unlock(&c->mu);
        if (r == 0)
                return -EAGAIN;
        return r < 0 ? r : 0;
}

static void unsubscribe_locked(struct kc_pod_cache *c, const char *uid, struct subscriber *s)
{
        struct subscriber_list *l = kc_map_get(c->subscribers, uid);
        struct subscriber **pp;

        if (!l)
                return;
        for (pp = &l->head; *pp; pp = &(*pp)->next)
                if (*pp == s) {
                        *pp = s->next;
                        break;
                }
        if (!l->head) {
                kc_map_remove(c->subscribers, uid);
                free(l);
        }
}

int kc_pod_cache_get_newer_than(struct kc_pod_cache *c, const char *uid, int64_t min_ns,
                                struct kc_cancel *cancel, struct kc_pod_status **ret_status,
                                char **ret_err)
{
        struct subscriber s = { .min_time = min_ns };
        struct subscriber_list *l;
        pthread_condattr_t attr;
        int r;

        pthread_mutex_lock(&c->mu);
        r = try_locked(c, uid, min_ns, ret_status, ret_err);
        if (r != 0) {
                pthread_mutex_unlock(&c->mu);
                return r < 0 ? r : 0;
        }

        l = kc_map_get(c->subscribers, uid);
        if (!l) {
                size_t len = strlen(uid) + 1;

                l = malloc(sizeof(*l) + len);
                if (!l) {
                        pthread_mutex_unlock(&c->mu);
                        return -ENOMEM;
                }
                l->head = NULL;
                memcpy(l->uid, uid, len);
                if (kc_map_put(c->subscribers, l->uid, l) < 0) {
                        free(l);
                        pthread_mutex_unlock(&c->mu);
                        return -ENOMEM;
                }
        }
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&s.cond, &attr);
        pthread_condattr_destroy(&attr);
        s.next = l->head;
        l->head = &s;

        while (!s.done) {
                struct timespec deadline;

                if (!cancel) {
                        pthread_cond_wait(&s.cond, &c->mu);
                        continue;
                }
                if (kc_cancel_is_set(cancel)) {
                        unsubscribe_locked(c, uid, &s);
                        s.result = -ECANCELED;
                        break;
                }
                /* The token has no hook into this condvar: re-check it now and then. */
                clock_gettime(CLOCK_MONOTONIC, &deadline);
                deadline.tv_nsec += CANCEL_CHECK_NS;
                if (deadline.tv_nsec >= KC_NSEC_PER_SEC) {
                        deadline.tv_sec++;
                        deadline.tv_nsec -= KC_NSEC_PER_SEC;
                }
                pthread_cond_timedwait(&s.cond, &c->mu, &deadline);
        }
        pthread_mutex_unlock(&c->mu);
        pthread_cond_destroy(&s.cond);

        if (s.result < 0)
                return s.result;
        *ret_status = s.status;
        *ret_err = s.err;
        return 0;
}
