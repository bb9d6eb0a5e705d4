/* SPDX-License-Identifier: Apache-2.0 */
/*
 * runtimeState: what the sync loop knows about the container runtime's
 * health (upstream pkg/kubelet/runtime.go; UPSTREAM.md §7).
 *
 * Fields
 *   One pthread rwlock guards everything: the last successful runtime
 *   status poll, the network/runtime/storage error strings and the list of
 *   health checks. Setters take it for writing, getters for reading, and
 *   every getter copies what it needs so nothing it returns aliases state.
 *
 *   Go marks "never synced" with the zero time.Time (year 1). We keep a
 *   separate flag instead, so a fake clock that starts at the Unix epoch
 *   (t == 0) still counts as a real sync.
 *
 * Health checks run without the lock
 *   Upstream calls each check while holding the read lock. We do not: the
 *   PLEG check takes the PLEG's own lock, and a check (or anything it calls)
 *   may call a runtime-state setter, which would then wait for a write lock
 *   held by its own thread's read lock, or deadlock against a writer queued
 *   behind it on a writer-preferring rwlock. So runtime_errors() takes a
 *   snapshot under the read lock (the sync verdict, a copy of the runtime
 *   error, and the registered checks), drops the lock, and only then calls
 *   the checks. A setter that runs meanwhile, inside a check or on another
 *   thread, shows up in the next call.
 *
 *   Checks are append-only and freed only with the state, so the snapshot
 *   of the checks is just the list head and the count: the first n nodes,
 *   their fields and the `next` links between them were all written under
 *   the write lock before our read lock was taken, and are never written
 *   again. The walk must not read the `next` of the n-th node, which a
 *   concurrent registration may be writing.
 *
 * Ordering and formatting follow runtimeErrors() exactly: sync verdict,
 * failing checks in registration order, runtime error; aggregated as
 * apimachinery's NewAggregate formats them (kc_aggregate_errors()).
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cleanup.h"
#include "core/clock.h"
#include "health/runtime_state.h"

#define MSG_SYNC_NOT_YET "container runtime status check may not have completed yet"
#define MSG_RUNTIME_DOWN "container runtime is down"

struct health_check {
        struct health_check *next;
        kc_health_check_fn fn;
        void *userdata;
        char name[];
};

struct kc_runtime_state {
        pthread_rwlock_t lock;
        struct kc_clock *clock;       /* immutable */
        int64_t sync_threshold_ns;    /* immutable */
        bool have_runtime_sync;       /* lock */
        int64_t last_runtime_sync_ns; /* lock; meaningful once have_runtime_sync */
        char *network_error;          /* lock; NULL when none */
        char *runtime_error;          /* lock */
        char *storage_error;          /* lock */
        struct health_check *checks;  /* lock for head/tail/count; nodes immutable */
        struct health_check *checks_tail;
        size_t n_checks;
};

/* ------------------------------------------------------------------------ */
/* Aggregation                                                                */

static bool seen_before(const char *const *msgs, size_t i)
{
        for (size_t j = 0; j < i; j++)
                if (msgs[j] && strcmp(msgs[j], msgs[i]) == 0)
                        return true;
        return false;
}

int kc_aggregate_errors(const char *const *msgs, size_t n, char **ret)
{
        size_t n_unique = 0, len = 0;
        char *buf, *p;

        assert(msgs || n == 0);
        assert(ret);

        /* NewAggregate drops nil errors; Error() prints each message once. */
        for (size_t i = 0; i < n; i++) {
                if (!msgs[i] || seen_before(msgs, i))
                        continue;
                len += strlen(msgs[i]) + (n_unique > 0 ? 2 : 0);
                n_unique++;
        }
        if (n_unique == 0) {
                *ret = NULL;
                return 0;
        }
        if (n_unique > 1)
                len += 2; /* brackets */

        buf = malloc(len + 1);
        if (!buf)
                return -ENOMEM;

        p = buf;
        if (n_unique > 1)
                *p++ = '[';
        for (size_t i = 0, k = 0; i < n; i++) {
                size_t l;

                if (!msgs[i] || seen_before(msgs, i))
                        continue;
                if (k++ > 0) {
                        memcpy(p, ", ", 2);
                        p += 2;
                }
                l = strlen(msgs[i]);
                memcpy(p, msgs[i], l);
                p += l;
        }
        if (n_unique > 1)
                *p++ = ']';
        *p = '\0';
        assert((size_t)(p - buf) == len);

        *ret = buf;
        return 0;
}

/* ------------------------------------------------------------------------ */
/* Life cycle                                                                 */

int kc_runtime_state_new(struct kc_clock *clock, int64_t base_runtime_sync_threshold_ns,
                         struct kc_runtime_state **ret)
{
        _cleanup_free_ struct kc_runtime_state *s = NULL;
        int r;

        assert(clock && ret);

        if (base_runtime_sync_threshold_ns <= 0)
                return -EINVAL;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->network_error = strdup(KC_RUNTIME_NETWORK_UNKNOWN);
        if (!s->network_error)
                return -ENOMEM;
        r = pthread_rwlock_init(&s->lock, NULL);
        if (r != 0) {
                free(s->network_error);
                return -r;
        }
        s->clock = clock;
        s->sync_threshold_ns = base_runtime_sync_threshold_ns;

        *ret = TAKE_PTR(s);
        return 0;
}

struct kc_runtime_state *kc_runtime_state_free(struct kc_runtime_state *s)
{
        struct health_check *c, *next;

        if (!s)
                return NULL;

        for (c = s->checks; c; c = next) {
                next = c->next;
                free(c);
        }
        free(s->network_error);
        free(s->runtime_error);
        free(s->storage_error);
        pthread_rwlock_destroy(&s->lock);
        free(s);
        return NULL;
}

/* ------------------------------------------------------------------------ */
/* Setters                                                                    */

static void wrlock(struct kc_runtime_state *s)
{
        int r = pthread_rwlock_wrlock(&s->lock);

        assert(r == 0);
        (void)r;
}

static void rdlock(struct kc_runtime_state *s)
{
        int r = pthread_rwlock_rdlock(&s->lock);

        assert(r == 0);
        (void)r;
}

static void unlock(struct kc_runtime_state *s)
{
        int r = pthread_rwlock_unlock(&s->lock);

        assert(r == 0);
        (void)r;
}

int kc_runtime_state_add_health_check(struct kc_runtime_state *s, const char *name,
                                      kc_health_check_fn fn, void *userdata)
{
        struct health_check *c;
        size_t l;

        assert(s && name && fn);

        l = strlen(name);
        c = malloc(sizeof(*c) + l + 1);
        if (!c)
                return -ENOMEM;
        c->next = NULL;
        c->fn = fn;
        c->userdata = userdata;
        memcpy(c->name, name, l + 1);

        wrlock(s);
        if (s->checks_tail)
                s->checks_tail->next = c;
        else
                s->checks = c;
        s->checks_tail = c;
        s->n_checks++;
        unlock(s);
        return 0;
}

void kc_runtime_state_set_runtime_sync(struct kc_runtime_state *s, int64_t t_ns)
{
        assert(s);

        wrlock(s);
        s->last_runtime_sync_ns = t_ns;
        s->have_runtime_sync = true;
        unlock(s);
}

/* Replaces *field with a copy of @p err (NULL clears); the copy is made before locking. */
static int set_error(struct kc_runtime_state *s, char **field, const char *err)
{
        char *copy = NULL, *old;

        if (err) {
                copy = strdup(err);
                if (!copy)
                        return -ENOMEM;
        }

        wrlock(s);
        old = *field;
        *field = copy;
        unlock(s);

        free(old);
        return 0;
}

int kc_runtime_state_set_network_state(struct kc_runtime_state *s, const char *err)
{
        assert(s);
        return set_error(s, &s->network_error, err);
}

int kc_runtime_state_set_runtime_state(struct kc_runtime_state *s, const char *err)
{
        assert(s);
        return set_error(s, &s->runtime_error, err);
}

int kc_runtime_state_set_storage_state(struct kc_runtime_state *s, const char *err)
{
        assert(s);
        return set_error(s, &s->storage_error, err);
}

/* ------------------------------------------------------------------------ */
/* Getters                                                                    */

/* !last.Add(threshold).After(now); a deadline past INT64_MAX never comes. */
static bool runtime_sync_expired(int64_t last_ns, int64_t threshold_ns, int64_t now_ns)
{
        int64_t deadline;

        if (__builtin_add_overflow(last_ns, threshold_ns, &deadline))
                return false;
        return deadline <= now_ns;
}

static void free_messages(char **msgs, size_t n)
{
        if (!msgs)
                return;
        for (size_t i = 0; i < n; i++)
                free(msgs[i]);
        free(msgs);
}

int kc_runtime_state_runtime_errors(struct kc_runtime_state *s, char **ret)
{
        const struct health_check *c;
        const char *sync_msg = NULL;
        char *runtime_error = NULL, **msgs;
        size_t n_checks, n = 0;
        bool oom = false;
        int r;

        assert(s && ret);

        /* Snapshot under the read lock; see "Health checks run without the lock". */
        rdlock(s);
        if (!s->have_runtime_sync)
                sync_msg = MSG_SYNC_NOT_YET;
        else if (runtime_sync_expired(s->last_runtime_sync_ns, s->sync_threshold_ns,
                                      kc_clock_now(s->clock)))
                sync_msg = MSG_RUNTIME_DOWN;
        if (s->runtime_error) {
                runtime_error = strdup(s->runtime_error);
                oom = !runtime_error;
        }
        c = s->checks;
        n_checks = s->n_checks;
        unlock(s);

        if (oom)
                return -ENOMEM;

        /* Every slot is owned, so one loop frees them on every path. */
        msgs = calloc(n_checks + 2, sizeof(*msgs));
        if (!msgs) {
                free(runtime_error);
                return -ENOMEM;
        }

        if (sync_msg) {
                msgs[n] = strdup(sync_msg);
                if (!msgs[n++])
                        goto oom;
        }

        for (size_t i = 0; i < n_checks; i++) {
                char *err = NULL;

                if (!c->fn(c->userdata, &err)) {
                        /* fmt.Errorf("%s is not healthy: %v", ...) prints a nil error as <nil>. */
                        r = asprintf(&msgs[n], "%s is not healthy: %s", c->name,
                                     err ? err : "<nil>");
                        free(err);
                        if (r < 0) {
                                msgs[n] = NULL;
                                goto oom;
                        }
                        n++;
                } else
                        free(err); /* a healthy check should not set it; do not leak if it did */
                /* Never read the n-th node's next: a registration may be writing it. */
                if (i + 1 < n_checks)
                        c = c->next;
        }

        if (runtime_error)
                msgs[n++] = TAKE_PTR(runtime_error);

        r = kc_aggregate_errors((const char *const *)msgs, n, ret);
        free_messages(msgs, n);
        return r;

oom:
        free(runtime_error);
        free_messages(msgs, n_checks + 2);
        return -ENOMEM;
}

/* Copies one error field under the read lock; NULL when unset. */
static int get_error(struct kc_runtime_state *s, char *const *field, char **ret)
{
        char *copy = NULL;
        bool oom = false;

        rdlock(s);
        if (*field) {
                copy = strdup(*field);
                oom = !copy;
        }
        unlock(s);

        if (oom)
                return -ENOMEM;
        *ret = copy;
        return 0;
}

int kc_runtime_state_network_errors(struct kc_runtime_state *s, char **ret)
{
        assert(s && ret);
        return get_error(s, &s->network_error, ret);
}

int kc_runtime_state_storage_errors(struct kc_runtime_state *s, char **ret)
{
        assert(s && ret);
        return get_error(s, &s->storage_error, ret);
}
