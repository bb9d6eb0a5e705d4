/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pod workers' delay queue (upstream pkg/kubelet/util/queue/work_queue.go)
 * and the jitter helper (apimachinery wait.Jitter) the pod workers use for
 * their requeue delays.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "core/cleanup.h"
#include "core/clock.h"
#include "core/jitter.h"
#include "core/map.h"
#include "core/work_queue.h"

/* ------------------------------------------------------------------------ */
/* Jitter                                                                     */

/*
 * splitmix64 is a counter passed through a mixing function, so a thread-safe
 * generator is one atomic fetch-add of the golden-ratio increment: no lock,
 * and no two callers ever see the same counter value. Relaxed ordering is
 * enough because the counter publishes nothing else.
 */
#define SPLITMIX_GAMMA UINT64_C(0x9e3779b97f4a7c15)

static _Atomic uint64_t jitter_state;
/* Set (release) once jitter_state holds a seed; read (acquire) before use. */
static atomic_bool jitter_seeded;
static pthread_mutex_t jitter_seed_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t splitmix64_mix(uint64_t z)
{
        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

static void jitter_seed_from_system(void)
{
        uint64_t seed;
        struct timespec ts;

        pthread_mutex_lock(&jitter_seed_lock);
        if (!atomic_load_explicit(&jitter_seeded, memory_order_relaxed)) {
                if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != (ssize_t)sizeof(seed)) {
                        clock_gettime(CLOCK_REALTIME, &ts);
                        seed = ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)ts.tv_nsec ^
                               ((uint64_t)getpid() << 16);
                }
                atomic_store_explicit(&jitter_state, seed, memory_order_relaxed);
                /* Pairs with the acquire load in jitter_next(). */
                atomic_store_explicit(&jitter_seeded, true, memory_order_release);
        }
        pthread_mutex_unlock(&jitter_seed_lock);
}

void kc_jitter_seed(uint64_t seed)
{
        pthread_mutex_lock(&jitter_seed_lock);
        atomic_store_explicit(&jitter_state, seed, memory_order_relaxed);
        /* Pairs with the acquire load in jitter_next(). */
        atomic_store_explicit(&jitter_seeded, true, memory_order_release);
        pthread_mutex_unlock(&jitter_seed_lock);
}

static uint64_t jitter_next(void)
{
        uint64_t z;

        /* Pairs with the release stores in the two seeding functions. */
        if (!atomic_load_explicit(&jitter_seeded, memory_order_acquire))
                jitter_seed_from_system();
        z = atomic_fetch_add_explicit(&jitter_state, SPLITMIX_GAMMA, memory_order_relaxed);
        return splitmix64_mix(z + SPLITMIX_GAMMA);
}

int64_t kc_jitter(int64_t d, double max_factor)
{
        double unit, span, add;

        if (max_factor <= 0.0)
                max_factor = 1.0;
        if (d <= 0)
                return d;

        /* 53 random bits: a double uniformly distributed in [0, 1). */
        unit = (double)(jitter_next() >> 11) * 0x1.0p-53;
        span = (double)d * max_factor;
        add = unit * span; /* < span, so d + floor(add) < d * (1 + f) */
        if (add >= (double)(INT64_MAX - d))
                return INT64_MAX;
        return d + (int64_t)add;
}

/* ------------------------------------------------------------------------ */
/* Work queue                                                                 */

struct wq_entry {
        int64_t ready_at; /* clock time; ready when strictly before now */
        char uid[];       /* the map key */
};

struct kc_work_queue {
        struct kc_clock *clock;
        pthread_mutex_t lock;   /* protects entries */
        struct kc_map *entries; /* uid → struct wq_entry * (owned) */
};

int kc_work_queue_new(struct kc_clock *clock, struct kc_work_queue **ret)
{
        _cleanup_free_ struct kc_work_queue *q = NULL;
        int r;

        if (!clock || !ret)
                return -EINVAL;
        q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        r = kc_map_new(&q->entries);
        if (r < 0)
                return r;
        r = -pthread_mutex_init(&q->lock, NULL);
        if (r < 0) {
                kc_map_free(q->entries);
                return r;
        }
        q->clock = clock;
        *ret = TAKE_PTR(q);
        return 0;
}

struct kc_work_queue *kc_work_queue_free(struct kc_work_queue *q)
{
        size_t iter = 0;
        void *value;

        if (!q)
                return NULL;
        while (kc_map_next(q->entries, &iter, NULL, &value))
                free(value);
        kc_map_free(q->entries);
        pthread_mutex_destroy(&q->lock);
        free(q);
        return NULL;
}

int kc_work_queue_enqueue(struct kc_work_queue *q, const char *uid, int64_t delay_ns)
{
        struct wq_entry *e;
        int64_t now;
        size_t len;
        int r = 0;

        if (!q || !uid || !*uid)
                return -EINVAL;

        pthread_mutex_lock(&q->lock);
        now = kc_clock_now(q->clock);
        e = kc_map_get(q->entries, uid);
        if (!e) {
                len = strlen(uid);
                e = malloc(sizeof(*e) + len + 1);
                if (!e) {
                        r = -ENOMEM;
                        goto out;
                }
                memcpy(e->uid, uid, len + 1);
                r = kc_map_put(q->entries, e->uid, e);
                if (r < 0) {
                        free(e);
                        goto out;
                }
        }
        /* time.Time.Add saturates; so does this. */
        if (__builtin_add_overflow(now, delay_ns, &e->ready_at))
                e->ready_at = delay_ns > 0 ? INT64_MAX : INT64_MIN;
out:
        pthread_mutex_unlock(&q->lock);
        return r;
}

int kc_work_queue_get_work(struct kc_work_queue *q, char ***ret_uids, size_t *ret_n)
{
        _cleanup_free_ struct wq_entry **ready = NULL;
        size_t n = 0, bytes, iter = 0;
        char **block = NULL, *strings;
        void *value;
        int64_t now;
        int r = 0;

        if (!q || !ret_uids || !ret_n)
                return -EINVAL;

        pthread_mutex_lock(&q->lock);
        now = kc_clock_now(q->clock);
        if (kc_map_size(q->entries) == 0)
                goto done;

        /* Pass 1: collect (the map must not change while iterating). */
        ready = malloc(kc_map_size(q->entries) * sizeof(*ready));
        if (!ready) {
                r = -ENOMEM;
                goto unlock;
        }
        bytes = 0;
        while (kc_map_next(q->entries, &iter, NULL, &value)) {
                struct wq_entry *e = value;

                if (e->ready_at < now) {
                        ready[n++] = e;
                        bytes += sizeof(char *) + strlen(e->uid) + 1;
                }
        }
        if (n == 0)
                goto done;

        /* Pass 2: allocate the result before touching the queue. */
        block = malloc(bytes);
        if (!block) {
                r = -ENOMEM;
                goto unlock;
        }
        strings = (char *)(block + n);
        for (size_t i = 0; i < n; i++) {
                size_t len = strlen(ready[i]->uid) + 1;

                memcpy(strings, ready[i]->uid, len);
                block[i] = strings;
                strings += len;
                kc_map_remove(q->entries, ready[i]->uid);
                free(ready[i]);
        }

done:
        *ret_uids = block;
        *ret_n = n;
unlock:
        pthread_mutex_unlock(&q->lock);
        return r;
}

size_t kc_work_queue_len(struct kc_work_queue *q)
{
        size_t n;

        if (!q)
                return 0;
        pthread_mutex_lock(&q->lock);
        n = kc_map_size(q->entries);
        pthread_mutex_unlock(&q->lock);
        return n;
}
