/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-key exponential backoff: client-go util/flowcontrol.Backoff as the
 * kubelet configures it for container restarts (10 s initial, 300 s cap,
 * HasExpiredFunc "eventTime - lastUpdate > 600 s"). No jitter: the kubelet
 * builds its restart backoff without one.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/backoff.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/map.h"

struct backoff_entry {
        int64_t backoff;     /* current window */
        int64_t last_update; /* clock time of the last Next() */
        char key[];          /* the map key */
};

struct kc_backoff {
        struct kc_clock *clock;
        int64_t initial;
        int64_t max;
        int64_t expiry;
        pthread_mutex_t lock;   /* protects entries */
        struct kc_map *entries; /* key → struct backoff_entry * (owned) */
};

int kc_backoff_new_with_expiry(struct kc_clock *clock, int64_t initial_ns, int64_t max_ns,
                               int64_t expiry_ns, struct kc_backoff **ret)
{
        _cleanup_free_ struct kc_backoff *b = NULL;
        int r;

        if (!clock || !ret || initial_ns < 0 || max_ns < 0 || expiry_ns < 0)
                return -EINVAL;
        b = calloc(1, sizeof(*b));
        if (!b)
                return -ENOMEM;
        r = kc_map_new(&b->entries);
        if (r < 0)
                return r;
        r = -pthread_mutex_init(&b->lock, NULL);
        if (r < 0) {
                kc_map_free(b->entries);
                return r;
        }
        b->clock = clock;
        b->initial = initial_ns;
        b->max = max_ns;
        b->expiry = expiry_ns;
        *ret = TAKE_PTR(b);
        return 0;
}

int kc_backoff_new(struct kc_clock *clock, int64_t initial_ns, int64_t max_ns,
                   struct kc_backoff **ret)
{
        return kc_backoff_new_with_expiry(clock, initial_ns, max_ns, KC_BACKOFF_DEFAULT_EXPIRY_NS,
                                          ret);
}

struct kc_backoff *kc_backoff_free(struct kc_backoff *b)
{
        size_t iter = 0;
        void *value;

        if (!b)
                return NULL;
        while (kc_map_next(b->entries, &iter, NULL, &value))
                free(value);
        kc_map_free(b->entries);
        pthread_mutex_destroy(&b->lock);
        free(b);
        return NULL;
}

/* a - b, saturated, so far-apart times compare correctly. */
static int64_t sub_sat(int64_t a, int64_t b)
{
        int64_t d;

        if (__builtin_sub_overflow(a, b, &d))
                return b < 0 ? INT64_MAX : INT64_MIN;
        return d;
}

/* kubelet's HasExpiredFunc. Caller holds b->lock. */
static bool entry_expired(const struct kc_backoff *b, const struct backoff_entry *e,
                          int64_t event_time)
{
        return sub_sat(event_time, e->last_update) > b->expiry;
}

int kc_backoff_next(struct kc_backoff *b, const char *key, int64_t event_time_ns)
{
        struct backoff_entry *e;
        size_t len;
        int r = 0;

        if (!b || !key)
                return -EINVAL;

        pthread_mutex_lock(&b->lock);
        e = kc_map_get(b->entries, key);
        if (!e) {
                len = strlen(key);
                e = malloc(sizeof(*e) + len + 1);
                if (!e) {
                        r = -ENOMEM;
                        goto out;
                }
                memcpy(e->key, key, len + 1);
                r = kc_map_put(b->entries, e->key, e);
                if (r < 0) {
                        free(e);
                        goto out;
                }
                e->backoff = b->initial;
        } else if (entry_expired(b, e, event_time_ns)) {
                e->backoff = b->initial;
        } else {
                /* min(2 × backoff, max) without overflowing. */
                e->backoff = e->backoff > b->max / 2 ? b->max : 2 * e->backoff;
        }
        e->last_update = kc_clock_now(b->clock);
out:
        pthread_mutex_unlock(&b->lock);
        return r;
}

/*
 * The two IsInBackOff* questions: false without an entry or with one expired
 * for @p event_time_ns; otherwise whether the elapsed time is under the
 * backoff, measured from @p event_time_ns to now, or (@p since_update) from
 * the last update to @p event_time_ns.
 */
static bool in_backoff(struct kc_backoff *b, const char *key, int64_t event_time_ns,
                       bool since_update)
{
        const struct backoff_entry *e;
        bool in = false;

        if (!b || !key)
                return false;

        pthread_mutex_lock(&b->lock);
        e = kc_map_get(b->entries, key);
        if (e && !entry_expired(b, e, event_time_ns)) {
                int64_t elapsed = since_update ? sub_sat(event_time_ns, e->last_update)
                                               : sub_sat(kc_clock_now(b->clock), event_time_ns);

                in = elapsed < e->backoff;
        }
        pthread_mutex_unlock(&b->lock);
        return in;
}

bool kc_backoff_is_in_backoff_since(struct kc_backoff *b, const char *key, int64_t event_time_ns)
{
        return in_backoff(b, key, event_time_ns, false);
}

bool kc_backoff_is_in_backoff_since_update(struct kc_backoff *b, const char *key,
                                           int64_t event_time_ns)
{
        return in_backoff(b, key, event_time_ns, true);
}

struct kc_clock *kc_backoff_clock(struct kc_backoff *b)
{
        return b ? b->clock : NULL;
}

/* Reads one field of @p key's entry (an offset into struct backoff_entry). */
static int read_entry(struct kc_backoff *b, const char *key, size_t field, int64_t *ret)
{
        const struct backoff_entry *e;
        int r = -ENOENT;

        if (!b || !key || !ret)
                return -EINVAL;

        pthread_mutex_lock(&b->lock);
        e = kc_map_get(b->entries, key);
        if (e) {
                *ret = *(const int64_t *)((const char *)e + field);
                r = 0;
        }
        pthread_mutex_unlock(&b->lock);
        return r;
}

int kc_backoff_last_update(struct kc_backoff *b, const char *key, int64_t *ret)
{
        return read_entry(b, key, offsetof(struct backoff_entry, last_update), ret);
}

int kc_backoff_get(struct kc_backoff *b, const char *key, int64_t *ret)
{
        return read_entry(b, key, offsetof(struct backoff_entry, backoff), ret);
}

void kc_backoff_reset(struct kc_backoff *b, const char *key)
{
        if (!b || !key)
                return;

        pthread_mutex_lock(&b->lock);
        free(kc_map_remove(b->entries, key));
        pthread_mutex_unlock(&b->lock);
}

size_t kc_backoff_gc(struct kc_backoff *b)
{
        _cleanup_free_ struct backoff_entry **stale = NULL;
        size_t n = 0, iter = 0;
        int64_t now, idle_limit;
        void *value;

        if (!b)
                return 0;
        idle_limit = b->max > INT64_MAX / 2 ? INT64_MAX : 2 * b->max;

        pthread_mutex_lock(&b->lock);
        now = kc_clock_now(b->clock);
        if (kc_map_size(b->entries) == 0)
                goto out;
        /*
         * The map must not change while iterating: collect first. Without
         * memory for the list, drop what fits on the stack per pass.
         */
        stale = malloc(kc_map_size(b->entries) * sizeof(*stale));
        if (stale) {
                while (kc_map_next(b->entries, &iter, NULL, &value)) {
                        struct backoff_entry *e = value;

                        if (sub_sat(now, e->last_update) > idle_limit)
                                stale[n++] = e;
                }
                for (size_t i = 0; i < n; i++) {
                        kc_map_remove(b->entries, stale[i]->key);
                        free(stale[i]);
                }
        } else {
                struct backoff_entry *batch[32];
                size_t k;

                do {
                        k = 0;
                        iter = 0;
                        while (k < KC_ELEMENTSOF(batch) &&
                               kc_map_next(b->entries, &iter, NULL, &value)) {
                                struct backoff_entry *e = value;

                                if (sub_sat(now, e->last_update) > idle_limit)
                                        batch[k++] = e;
                        }
                        for (size_t i = 0; i < k; i++) {
                                kc_map_remove(b->entries, batch[i]->key);
                                free(batch[i]);
                        }
                        n += k;
                } while (k == KC_ELEMENTSOF(batch));
        }
out:
        pthread_mutex_unlock(&b->lock);
        return n;
}
