/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Metrics registry and the Prometheus text exposition format, version 0.0.4.
 *
 * Values
 *   Every double lives in an _Atomic uint64_t holding its IEEE-754 bit
 *   pattern. Set is one store; add is a compare-and-swap loop (the Go
 *   client's atomicUpdateFloat). Counters and gauges publish no other data,
 *   so their loads, stores and CAS loops are relaxed: a reader needs the
 *   value itself to be untorn, not an ordering with anything else.
 *
 * Histograms
 *   One atomic count per finite bucket (not cumulative), an atomic
 *   observation count and an atomic sum. There is no +Inf slot: the +Inf
 *   bucket is the observation count, as in the Go client's exposition.
 *   Observe bumps count (relaxed), then the sum (relaxed CAS), then the
 *   bucket with release; render loads the buckets with acquire and only then
 *   sum and count. Any bucket increment render sees therefore comes with its
 *   count increment, so every cumulative bucket, le="+Inf" included, is <=
 *   _count and the buckets stay monotonic. An observation in flight may be in
 *   _count (and _sum) but not yet in its bucket; Prometheus accepts this, and
 *   the next scrape catches up. We do not copy the Go client's hot/cold
 *   double buffer: a scrape that is one observation off is fine for kubelet
 *   alerting, and observe stays three atomics with no writer coordination.
 *
 * Vectors (gauge, counter and histogram)
 *   A histogram vector has one label dimension, a gauge or counter vector up
 *   to KC_METRICS_LABELS_MAX; each label value (each combination, joined by
 *   LABEL_SEP into one key) has its own series, created on first use and
 *   never deleted. The sorted series index is an
 *   immutable snapshot published through an atomic pointer: writers that
 *   create a series copy the index under the vector's mutex, insert and
 *   publish the copy with release; lookups load it with acquire and
 *   binary-search without a lock. A series is fully initialised (atomics
 *   included) before the snapshot holding it is published, so an updater or
 *   renderer that finds it through an acquired snapshot sees its initial
 *   state, never an unconstructed one. Old snapshots are chained and freed
 *   with the vector. That costs O(n^2) pointers for n label values over the
 *   vector's lifetime, which is nothing for the handful of values labels
 *   like container_state or operation_type take. The same code (struct
 *   series_set) serves both vector kinds; only the series payload differs.
 *
 * Histogram vectors
 *   Every series is a histogram of its own as described above (same bounds
 *   for all series, same observe and render orders), so each series' scrape
 *   has the same guarantees. Series render in label-value order, each with
 *   its _bucket lines (the vector's label first, le last, as the Go client
 *   orders them), then _sum and _count.
 *
 * Registry
 *   An array of metrics in registration order under a mutex held by
 *   registration and rendering (registration normally happens at start-up,
 *   the lock only makes a late registration safe against a scrape).
 *
 * Differences from the Go client (client_golang, expfmt), on purpose:
 *   - families are rendered in registration order, not sorted by name;
 *   - a vector (gauge or histogram) without series still renders its
 *     # HELP and # TYPE lines (Go drops families without samples);
 *   - integral values up to 2^53 print without exponent ("1700000000"
 *     where Go's 'g' formatting prints "1.7e+09"); both parse to the same
 *     double.
 * Number formatting uses snprintf/strtod and so assumes the C locale's
 * decimal point, which cubelet never changes.
 */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/cleanup.h"
#include "core/lock.h"
#include "metrics/registry.h"

const double kc_metrics_default_buckets[11] = {
        0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

enum metric_type {
        METRIC_COUNTER,
        METRIC_GAUGE,
        METRIC_GAUGE_VEC,
        METRIC_HISTOGRAM,
        METRIC_HISTOGRAM_VEC,
        METRIC_COUNTER_VEC,
        METRIC_CUSTOM_COUNTER,
        METRIC_CUSTOM_HISTOGRAM,
        _METRIC_TYPE_MAX,
};

static const char *const metric_type_names[] = {
        [METRIC_COUNTER] = "counter",
        [METRIC_GAUGE] = "gauge",
        [METRIC_GAUGE_VEC] = "gauge", /* one gauge per label value */
        [METRIC_HISTOGRAM] = "histogram",
        [METRIC_HISTOGRAM_VEC] = "histogram", /* one histogram per label value */
        [METRIC_COUNTER_VEC] = "counter",     /* one counter per label value */
        [METRIC_CUSTOM_COUNTER] = "counter",  /* samples written by the owner */
        [METRIC_CUSTOM_HISTOGRAM] = "histogram",
};
static_assert(KC_ELEMENTSOF(metric_type_names) == _METRIC_TYPE_MAX,
              "every metric type needs its # TYPE name");

/* Common head of every metric object; always the first member. */
struct metric {
        enum metric_type type;
        char *name;
        char *help;
};

struct kc_counter {
        struct metric m;
        _Atomic uint64_t bits;
};

struct kc_gauge {
        struct metric m;
        _Atomic uint64_t bits;
};

/*
 * Common head of the series of a vector; always the first member. A series
 * is one allocation (the label value aside), freed with free(). With more
 * than one label, label_value is the values joined by LABEL_SEP: the key
 * the index sorts and searches by.
 */
struct series {
        char *label_value;
};

/* 0xff never occurs in UTF-8, so it cannot be part of a valid label value. */
#define LABEL_SEP '\xff'

struct gauge_series {
        struct series s;
        _Atomic uint64_t bits;
};

/* Finite upper bounds of a histogram, shared by every series of a vector. */
struct hist_bounds {
        size_t n;
        double *v; /* ascending; n + 1 allocated so that it is never malloc(0) */
};

/* The observations of one histogram; see "Histograms" above. */
struct hist_cells {
        _Atomic uint64_t *bucket_count; /* hist_bounds.n, per bucket, not cumulative */
        _Atomic uint64_t count;
        _Atomic uint64_t sum_bits;
};

struct hist_series {
        struct series s;
        struct hist_cells cells; /* cells.bucket_count points at storage */
        _Atomic uint64_t storage[];
};

/* Immutable once published; see "Vectors" above. */
struct series_index {
        struct series_index *older; /* retired snapshots, freed with the vector */
        size_t n;
        struct series *items[]; /* sorted by strcmp(label_value) */
};

/* The series of one vector. */
struct series_set {
        pthread_mutex_t create_lock; /* serialises series creation */
        _Atomic(struct series_index *) index;
};

/* Common head of the vector metrics; always the first member. */
struct vec {
        struct metric m;
        char *label_names[KC_METRICS_LABELS_MAX];
        size_t n_labels;
        struct series_set set;
};

struct kc_gauge_vec {
        struct vec v; /* its set holds struct gauge_series */
};

struct kc_counter_vec {
        struct vec v; /* its set holds struct gauge_series: a value that only goes up */
};

struct collector {
        void (*fn)(void *userdata);
        void (*free_fn)(void *userdata); /* may be NULL */
        void *userdata;
};

struct kc_histogram {
        struct metric m;
        struct hist_bounds bounds;
        struct hist_cells cells;
};

struct kc_histogram_vec {
        struct vec v; /* its set holds struct hist_series */
        struct hist_bounds bounds;
};

/* A family whose owner writes its samples at render time (kc_metrics_custom_new()). */
struct custom {
        struct metric m;
        kc_metrics_write_fn write;
        void (*free_fn)(void *userdata);
        void *userdata;
};

struct kc_metrics_registry {
        pthread_mutex_t lock; /* registration vs. rendering */
        struct metric **metrics;
        size_t n_metrics;
        size_t cap_metrics;
        struct collector *collectors; /* called before each render */
        size_t n_collectors;
        size_t cap_collectors;
};

/* ------------------------------------------------------------------------ */
/* Atomic doubles                                                             */

static inline uint64_t double_to_bits(double v)
{
        uint64_t b;

        memcpy(&b, &v, sizeof(b));
        return b;
}

static inline double bits_to_double(uint64_t b)
{
        double v;

        memcpy(&v, &b, sizeof(v));
        return v;
}

static inline double atomic_double_load(const _Atomic uint64_t *a, memory_order mo)
{
        /* The cast drops const only for C11's non-const atomic_load signature. */
        return bits_to_double(atomic_load_explicit((_Atomic uint64_t *)a, mo));
}

static inline void atomic_double_add(_Atomic uint64_t *a, double v, memory_order mo)
{
        uint64_t old = atomic_load_explicit(a, memory_order_relaxed);

        /* On failure the CAS reloads old; retry with the fresh value. */
        while (!atomic_compare_exchange_weak_explicit(
                a, &old, double_to_bits(bits_to_double(old) + v), mo, memory_order_relaxed))
                ;
}

/* ------------------------------------------------------------------------ */
/* Names                                                                      */

static bool is_name_start(char c, bool colon)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
}

static bool is_name_char(char c, bool colon)
{
        return is_name_start(c, colon) || (c >= '0' && c <= '9');
}

/* Metric names: [a-zA-Z_:][a-zA-Z0-9_:]* */
static bool metric_name_is_valid(const char *s)
{
        if (!s || !is_name_start(*s, true))
                return false;
        for (s++; *s; s++)
                if (!is_name_char(*s, true))
                        return false;
        return true;
}

/* Label names: [a-zA-Z_][a-zA-Z0-9_]*, the "__" prefix reserved to Prometheus. */
static bool label_name_is_valid(const char *s)
{
        if (!s || !is_name_start(*s, false) || strncmp(s, "__", 2) == 0)
                return false;
        for (s++; *s; s++)
                if (!is_name_char(*s, false))
                        return false;
        return true;
}

/* ------------------------------------------------------------------------ */
/* Series sets (the label values of a vector)                                 */

/* Initialises a series just allocated (zeroed, label value set) before it is published. */
typedef void (*series_init_fn)(struct series *s, const void *userdata);

static void series_set_init(struct series_set *set)
{
        pthread_mutex_init(&set->create_lock, NULL);
        atomic_init(&set->index, NULL);
}

/* Frees every series and snapshot. No concurrent users. */
static void series_set_done(struct series_set *set)
{
        struct series_index *idx = atomic_load_explicit(&set->index, memory_order_relaxed);

        /* The newest snapshot holds every series; older ones only pointers. */
        if (idx)
                for (size_t i = 0; i < idx->n; i++) {
                        free(idx->items[i]->label_value);
                        free(idx->items[i]);
                }
        while (idx) {
                struct series_index *older = idx->older;

                free(idx);
                idx = older;
        }
        pthread_mutex_destroy(&set->create_lock);
}

/*
 * Acquire pairs with the release store in series_create(): a reader that
 * sees a snapshot also sees its array and every series it points to,
 * initialised.
 */
static struct series_index *series_index_load(const struct series_set *set)
{
        return atomic_load_explicit((_Atomic(struct series_index *) *)&set->index,
                                    memory_order_acquire);
}

/* Binary search; *ret_pos is the insertion point when not found. */
static struct series *series_find(const struct series_index *idx, const char *label_value,
                                  size_t *ret_pos)
{
        size_t lo = 0, hi = idx ? idx->n : 0;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(idx->items[mid]->label_value, label_value);

                if (c == 0)
                        return idx->items[mid];
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (ret_pos)
                *ret_pos = lo;
        return NULL;
}

/*
 * Finds the series for @p label_value or creates it: @p size bytes zeroed,
 * label set, then @p init; published only once initialised.
 */
static int series_create(struct series_set *set, const char *label_value, size_t size,
                         series_init_fn init, const void *userdata, struct series **ret)
{
        struct series_index *old, *idx = NULL;
        struct series *s = NULL;
        size_t pos = 0;

        assert(size >= sizeof(struct series));
        KC_LOCK_GUARD(&set->create_lock);
        /* Writers are serialised here, so relaxed would do; acquire is harmless. */
        old = series_index_load(set);
        s = series_find(old, label_value, &pos);
        if (s) { /* another thread created it first */
                *ret = s;
                return 0;
        }

        s = calloc(1, size);
        idx = malloc(sizeof(*idx) + ((old ? old->n : 0) + 1) * sizeof(idx->items[0]));
        if (!s || !idx || !(s->label_value = strdup(label_value))) {
                free(s);
                free(idx);
                return -ENOMEM;
        }
        init(s, userdata);
        idx->older = old;
        idx->n = (old ? old->n : 0) + 1;
        if (pos > 0)
                memcpy(idx->items, old->items, pos * sizeof(idx->items[0]));
        idx->items[pos] = s;
        if (old && old->n > pos)
                memcpy(idx->items + pos + 1, old->items + pos,
                       (old->n - pos) * sizeof(idx->items[0]));
        /* Release pairs with the acquire in series_index_load(). */
        atomic_store_explicit(&set->index, idx, memory_order_release);
        *ret = s;
        return 0;
}

/* The lock-free path first; creation (under the mutex) only on a miss. */
static int series_get(struct series_set *set, const char *label_value, size_t size,
                      series_init_fn init, const void *userdata, struct series **ret)
{
        struct series *s;

        if (!label_value)
                return -EINVAL;
        s = series_find(series_index_load(set), label_value, NULL);
        if (s) {
                *ret = s;
                return 0;
        }
        return series_create(set, label_value, size, init, userdata, ret);
}

/* -EINVAL for a NULL label value, -ENOENT for a missing series. */
static int series_lookup(const struct series_set *set, const char *label_value,
                         const struct series **ret)
{
        const struct series *s;

        if (!label_value)
                return -EINVAL;
        s = series_find(series_index_load(set), label_value, NULL);
        if (!s)
                return -ENOENT;
        *ret = s;
        return 0;
}

/* ------------------------------------------------------------------------ */
/* Histogram bounds and cells (shared by histograms and histogram vectors)    */

/*
 * Resolves NULL to the default buckets and drops a trailing +Inf (implicit,
 * as in the Go client), then checks the rest are finite and strictly
 * ascending.
 */
static int hist_bounds_check(const double **buckets, size_t *n_buckets)
{
        const double *b = *buckets;
        size_t n = *n_buckets;

        if (!b) {
                b = kc_metrics_default_buckets;
                n = KC_ELEMENTSOF(kc_metrics_default_buckets);
        }
        if (n > 0 && isinf(b[n - 1]) && b[n - 1] > 0)
                n--;
        for (size_t i = 0; i < n; i++)
                if (isnan(b[i]) || isinf(b[i]) || (i > 0 && !(b[i - 1] < b[i])))
                        return -EINVAL;
        *buckets = b;
        *n_buckets = n;
        return 0;
}

/* Copies bounds that passed hist_bounds_check(). */
static int hist_bounds_copy(struct hist_bounds *hb, const double *buckets, size_t n)
{
        /* +1: never malloc(0), so NULL always means ENOMEM. */
        hb->v = malloc((n + 1) * sizeof(double));
        if (!hb->v)
                return -ENOMEM;
        if (n > 0)
                memcpy(hb->v, buckets, n * sizeof(double));
        hb->n = n;
        return 0;
}

/* @p bucket_count has room for @p n_bounds counters. */
static void hist_cells_init(struct hist_cells *c, _Atomic uint64_t *bucket_count, size_t n_bounds)
{
        c->bucket_count = bucket_count;
        for (size_t i = 0; i < n_bounds; i++)
                atomic_init(&c->bucket_count[i], 0);
        atomic_init(&c->count, 0);
        atomic_init(&c->sum_bits, double_to_bits(0.0));
}

static void hist_observe(const struct hist_bounds *hb, struct hist_cells *c, double v)
{
        size_t lo = 0, hi = hb->n;

        /* First bucket whose upper bound is >= v (le is inclusive); hb->n
         * means +Inf only, which has no slot: it is the count. NaN lands
         * there too, as in Go. */
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (v <= hb->v[mid])
                        hi = mid;
                else
                        lo = mid + 1;
        }

        /* Order matters, see the file comment: count, sum, then bucket. */
        atomic_fetch_add_explicit(&c->count, 1, memory_order_relaxed);
        atomic_double_add(&c->sum_bits, v, memory_order_relaxed);
        if (lo < hb->n)
                /* Release pairs with the acquire bucket loads in render_histogram(). */
                atomic_fetch_add_explicit(&c->bucket_count[lo], 1, memory_order_release);
}

static uint64_t hist_count(const struct hist_cells *c)
{
        return atomic_load_explicit((_Atomic uint64_t *)&c->count, memory_order_relaxed);
}

static double hist_sum(const struct hist_cells *c)
{
        return atomic_double_load(&c->sum_bits, memory_order_relaxed);
}

/* ------------------------------------------------------------------------ */
/* Registry                                                                   */

int kc_metrics_registry_new(struct kc_metrics_registry **ret)
{
        struct kc_metrics_registry *r;

        assert(ret);
        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        pthread_mutex_init(&r->lock, NULL);
        *ret = r;
        return 0;
}

/* Frees what a vector head owns (its series and label name). */
static void vec_done(struct vec *v)
{
        series_set_done(&v->set);
        for (size_t i = 0; i < v->n_labels; i++)
                free(v->label_names[i]);
}

static void metric_free(struct metric *m)
{
        if (!m)
                return;
        switch (m->type) {
        case METRIC_COUNTER:
        case METRIC_GAUGE:
                break;
        case METRIC_GAUGE_VEC:
        case METRIC_COUNTER_VEC:
                vec_done((struct vec *)m);
                break;
        case METRIC_HISTOGRAM: {
                struct kc_histogram *h = (struct kc_histogram *)m;

                free(h->bounds.v);
                free((void *)h->cells.bucket_count);
                break;
        }
        case METRIC_HISTOGRAM_VEC:
                vec_done((struct vec *)m);
                free(((struct kc_histogram_vec *)m)->bounds.v);
                break;
        case METRIC_CUSTOM_COUNTER:
        case METRIC_CUSTOM_HISTOGRAM: {
                struct custom *c = (struct custom *)m;

                if (c->free_fn)
                        c->free_fn(c->userdata);
                break;
        }
        case _METRIC_TYPE_MAX:
                assert(false);
                break;
        }
        free(m->name);
        free(m->help);
        free(m);
}

struct kc_metrics_registry *kc_metrics_registry_free(struct kc_metrics_registry *r)
{
        if (!r)
                return NULL;
        for (size_t i = 0; i < r->n_metrics; i++)
                metric_free(r->metrics[i]);
        free(r->metrics);
        for (size_t i = 0; i < r->n_collectors; i++)
                if (r->collectors[i].free_fn)
                        r->collectors[i].free_fn(r->collectors[i].userdata);
        free(r->collectors);
        pthread_mutex_destroy(&r->lock);
        free(r);
        return NULL;
}

/*
 * Allocates a zeroed metric object of @p size with its head filled in.
 * Does not register it.
 */
static int metric_alloc(enum metric_type type, const char *name, const char *help, size_t size,
                        struct metric **ret)
{
        struct metric *m;

        assert(size >= sizeof(struct metric));
        if (!metric_name_is_valid(name))
                return -EINVAL;
        m = calloc(1, size);
        if (!m)
                return -ENOMEM;
        m->type = type;
        m->name = strdup(name);
        m->help = strdup(help ? help : "");
        if (!m->name || !m->help) {
                free(m->name);
                free(m->help);
                free(m);
                return -ENOMEM;
        }
        *ret = m;
        return 0;
}

/* Takes @p m on success only. */
static int registry_add(struct kc_metrics_registry *r, struct metric *m)
{
        KC_LOCK_GUARD(&r->lock);
        for (size_t i = 0; i < r->n_metrics; i++)
                if (strcmp(r->metrics[i]->name, m->name) == 0)
                        return -EEXIST;
        if (KC_ARRAY_GROW(r->metrics, r->cap_metrics, r->n_metrics + 1, 16) < 0)
                return -ENOMEM;
        r->metrics[r->n_metrics++] = m;
        return 0;
}

/* Registers @p m or frees it. */
static int register_or_free(struct kc_metrics_registry *r, struct metric *m)
{
        int k = registry_add(r, m);

        if (k < 0)
                metric_free(m);
        return k;
}

/* A registered counter or gauge: a metric with nothing beyond its value. */
static int simple_new(struct kc_metrics_registry *r, enum metric_type type, const char *name,
                      const char *help, size_t size, struct metric **ret)
{
        struct metric *m;
        int k;

        assert(r && ret);
        k = metric_alloc(type, name, help, size, &m);
        if (k < 0)
                return k;
        k = register_or_free(r, m);
        if (k == 0)
                *ret = m;
        return k;
}

int kc_metrics_counter_new(struct kc_metrics_registry *r, const char *name, const char *help,
                           struct kc_counter **ret)
{
        struct metric *m;
        int k = simple_new(r, METRIC_COUNTER, name, help, sizeof(struct kc_counter), &m);

        if (k == 0)
                *ret = (struct kc_counter *)m; /* the metric header comes first */
        return k;
}

int kc_metrics_gauge_new(struct kc_metrics_registry *r, const char *name, const char *help,
                         struct kc_gauge **ret)
{
        struct metric *m;
        int k = simple_new(r, METRIC_GAUGE, name, help, sizeof(struct kc_gauge), &m);

        if (k == 0)
                *ret = (struct kc_gauge *)m;
        return k;
}

/* 1..KC_METRICS_LABELS_MAX valid, distinct label names. */
static bool label_names_are_valid(const char *const *names, size_t n)
{
        if (!names || n == 0 || n > KC_METRICS_LABELS_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                if (!label_name_is_valid(names[i]))
                        return false;
                for (size_t j = 0; j < i; j++)
                        if (strcmp(names[i], names[j]) == 0)
                                return false;
        }
        return true;
}

/*
 * Allocates a vector metric of @p size (a struct vec first) with its label
 * names and an empty series set. Does not register it.
 */
static int vec_alloc(enum metric_type type, const char *name, const char *help,
                     const char *const *label_names, size_t n_labels, size_t size,
                     struct metric **ret)
{
        struct metric *m;
        struct vec *v;
        int k;

        assert(size >= sizeof(struct vec));
        if (!label_names_are_valid(label_names, n_labels))
                return -EINVAL;
        k = metric_alloc(type, name, help, size, &m);
        if (k < 0)
                return k;
        v = (struct vec *)m;
        series_set_init(&v->set);
        for (; v->n_labels < n_labels; v->n_labels++) {
                v->label_names[v->n_labels] = strdup(label_names[v->n_labels]);
                if (!v->label_names[v->n_labels]) {
                        metric_free(m);
                        return -ENOMEM;
                }
        }
        *ret = m;
        return 0;
}

/* A registered gauge or counter vector. */
static int value_vec_new(struct kc_metrics_registry *r, enum metric_type type, const char *name,
                         const char *help, const char *const *label_names, size_t n_labels,
                         struct metric **ret)
{
        struct metric *m;
        int k;

        assert(r && ret);
        k = vec_alloc(type, name, help, label_names, n_labels, sizeof(struct vec), &m);
        if (k < 0)
                return k;
        k = register_or_free(r, m);
        if (k == 0)
                *ret = m;
        return k;
}

int kc_metrics_gauge_vec_new(struct kc_metrics_registry *r, const char *name, const char *help,
                             const char *label_name, struct kc_gauge_vec **ret)
{
        return kc_metrics_gauge_vec_new_labels(r, name, help, &label_name, 1, ret);
}

int kc_metrics_gauge_vec_new_labels(struct kc_metrics_registry *r, const char *name,
                                    const char *help, const char *const *label_names,
                                    size_t n_labels, struct kc_gauge_vec **ret)
{
        struct metric *m;
        int k = value_vec_new(r, METRIC_GAUGE_VEC, name, help, label_names, n_labels, &m);

        if (k == 0)
                *ret = (struct kc_gauge_vec *)m; /* the vector head comes first */
        return k;
}

int kc_metrics_counter_vec_new(struct kc_metrics_registry *r, const char *name, const char *help,
                               const char *const *label_names, size_t n_labels,
                               struct kc_counter_vec **ret)
{
        struct metric *m;
        int k = value_vec_new(r, METRIC_COUNTER_VEC, name, help, label_names, n_labels, &m);

        if (k == 0)
                *ret = (struct kc_counter_vec *)m;
        return k;
}

int kc_metrics_registry_add_collector(struct kc_metrics_registry *r, void (*fn)(void *userdata),
                                      void (*free_fn)(void *userdata), void *userdata)
{
        assert(r && fn);
        KC_LOCK_GUARD(&r->lock);
        if (KC_ARRAY_GROW(r->collectors, r->cap_collectors, r->n_collectors + 1, 4) < 0)
                return -ENOMEM;
        r->collectors[r->n_collectors++] = (struct collector){ fn, free_fn, userdata };
        return 0;
}

int kc_metrics_custom_new(struct kc_metrics_registry *r, const char *name, const char *help,
                          bool histogram, kc_metrics_write_fn write,
                          void (*free_fn)(void *userdata), void *userdata)
{
        struct metric *m;
        struct custom *c;
        int k;

        if (!r || !write)
                return -EINVAL;
        k = metric_alloc(histogram ? METRIC_CUSTOM_HISTOGRAM : METRIC_CUSTOM_COUNTER, name, help,
                         sizeof(struct custom), &m);
        if (k < 0)
                return k;
        c = (struct custom *)m;
        c->write = write;
        k = registry_add(r, m);
        if (k < 0) {
                metric_free(m); /* free_fn not set yet: userdata stays the caller's */
                return k;
        }
        c->free_fn = free_fn;
        c->userdata = userdata;
        return 0;
}

int kc_metrics_histogram_new(struct kc_metrics_registry *r, const char *name, const char *help,
                             const double *buckets, size_t n_buckets, struct kc_histogram **ret)
{
        _Atomic uint64_t *bucket_count;
        struct kc_histogram *h;
        struct metric *m;
        int k;

        assert(r && ret);
        k = hist_bounds_check(&buckets, &n_buckets);
        if (k < 0)
                return k;
        k = metric_alloc(METRIC_HISTOGRAM, name, help, sizeof(struct kc_histogram), &m);
        if (k < 0)
                return k;
        h = (struct kc_histogram *)m;
        /* +1: never calloc(0), so NULL always means ENOMEM. */
        bucket_count = calloc(n_buckets + 1, sizeof(_Atomic uint64_t));
        if (!bucket_count) {
                metric_free(m);
                return -ENOMEM;
        }
        hist_cells_init(&h->cells, bucket_count, n_buckets);
        k = hist_bounds_copy(&h->bounds, buckets, n_buckets);
        if (k < 0) {
                metric_free(m);
                return k;
        }
        k = register_or_free(r, m);
        if (k < 0)
                return k;
        *ret = h;
        return 0;
}

int kc_metrics_histogram_vec_new(struct kc_metrics_registry *r, const char *name, const char *help,
                                 const char *label_name, const double *buckets, size_t n_buckets,
                                 struct kc_histogram_vec **ret)
{
        struct kc_histogram_vec *hv;
        struct metric *m;
        int k;

        assert(r && ret);
        /* le is the bucket label; a vector label of that name would be ambiguous. */
        if (label_name && strcmp(label_name, "le") == 0)
                return -EINVAL;
        k = hist_bounds_check(&buckets, &n_buckets);
        if (k < 0)
                return k;
        k = vec_alloc(METRIC_HISTOGRAM_VEC, name, help, &label_name, 1,
                      sizeof(struct kc_histogram_vec), &m);
        if (k < 0)
                return k;
        hv = (struct kc_histogram_vec *)m;
        k = hist_bounds_copy(&hv->bounds, buckets, n_buckets);
        if (k < 0) {
                metric_free(m);
                return k;
        }
        k = register_or_free(r, m);
        if (k < 0)
                return k;
        *ret = hv;
        return 0;
}

int kc_metrics_exponential_buckets(double start, double factor, size_t count, double *out)
{
        double b = start;

        if (count == 0 || !isfinite(start) || !isfinite(factor) || !(start > 0) || !(factor > 1))
                return -EINVAL;
        assert(out);
        /* Validate every bound before writing any, so that @p out stays untouched on
         * failure. Each bound is the previous one times factor, rounded, as Go
         * computes them; a bound that overflows, or that rounding fails to grow
         * (subnormal start), would make an invalid bucket layout. */
        for (size_t i = 1; i < count; i++) {
                double next = b * factor;

                if (isinf(next) || !(next > b))
                        return -EINVAL;
                b = next;
        }
        b = start;
        for (size_t i = 0; i < count; i++) {
                out[i] = b;
                b *= factor;
        }
        return 0;
}

/* ------------------------------------------------------------------------ */
/* Counter and gauge                                                          */

void kc_counter_add_mp(struct kc_counter *c, double v)
{
        /* Counters only go up; a negative add is a caller bug and is dropped
         * (the Go client panics). NaN passes, as in Go. */
        if (v < 0)
                return;
        atomic_double_add(&c->bits, v, memory_order_relaxed); /* standalone value */
}

void kc_counter_inc_mp(struct kc_counter *c)
{
        kc_counter_add_mp(c, 1.0);
}

double kc_counter_value(const struct kc_counter *c)
{
        return atomic_double_load(&c->bits, memory_order_relaxed); /* standalone value */
}

void kc_gauge_set_mp(struct kc_gauge *g, double v)
{
        atomic_store_explicit(&g->bits, double_to_bits(v), memory_order_relaxed); /* standalone */
}

void kc_gauge_add_mp(struct kc_gauge *g, double v)
{
        atomic_double_add(&g->bits, v, memory_order_relaxed); /* standalone value */
}

double kc_gauge_value(const struct kc_gauge *g)
{
        return atomic_double_load(&g->bits, memory_order_relaxed); /* standalone value */
}

/* ------------------------------------------------------------------------ */
/* Gauge vector                                                               */

static void gauge_series_init(struct series *s, const void *userdata)
{
        (void)userdata;
        atomic_init(&((struct gauge_series *)s)->bits, double_to_bits(0.0));
}

/* The longest joined label values a multi-label series may have. */
#define SERIES_KEY_MAX 512

/*
 * The index key of the series for @p values (one per label of @p v): the
 * values joined by LABEL_SEP into @p buf. -EINVAL for a NULL value, one
 * holding LABEL_SEP, or a key longer than SERIES_KEY_MAX.
 */
static int series_key(const struct vec *v, const char *const *values, char buf[SERIES_KEY_MAX])
{
        size_t len = 0;

        if (!values)
                return -EINVAL;
        for (size_t i = 0; i < v->n_labels; i++) {
                size_t n;

                if (!values[i] || strchr(values[i], LABEL_SEP))
                        return -EINVAL;
                n = strlen(values[i]);
                if (len + n + 1 > SERIES_KEY_MAX)
                        return -EINVAL;
                if (i > 0)
                        buf[len - 1] = LABEL_SEP;
                memcpy(buf + len, values[i], n + 1);
                len += n + 1;
        }
        return 0;
}

/* Sets the series of @p key to @p v, or with @p add adds @p v; creates it first. */
static int value_vec_update(struct vec *vec, const char *key, double v, bool add)
{
        _Atomic uint64_t *bits;
        struct series *s;
        int k;

        k = series_get(&vec->set, key, sizeof(struct gauge_series), gauge_series_init, NULL, &s);
        if (k < 0)
                return k;
        bits = &((struct gauge_series *)s)->bits; /* the series head comes first */
        /* Relaxed: a standalone value, as for kc_gauge. */
        if (add)
                atomic_double_add(bits, v, memory_order_relaxed);
        else
                atomic_store_explicit(bits, double_to_bits(v), memory_order_relaxed);
        return 0;
}

/* The value of the series of @p key: -ENOENT when missing. */
static int value_vec_lookup(const struct vec *vec, const char *key, double *ret)
{
        const struct series *s;
        int k;

        k = series_lookup(&vec->set, key, &s);
        if (k < 0)
                return k;
        *ret = atomic_double_load(&((const struct gauge_series *)s)->bits,
                                  memory_order_relaxed); /* standalone value */
        return 0;
}

/* The single-label calls on a vector with more labels are a caller bug: -EINVAL. */
static int single_label_key(const struct vec *v, const char *label_value, const char **ret)
{
        if (v->n_labels != 1)
                return -EINVAL;
        *ret = label_value;
        return 0;
}

int kc_gauge_vec_set_mp(struct kc_gauge_vec *g, const char *label_value, double v)
{
        const char *key;
        int k = single_label_key(&g->v, label_value, &key);

        return k < 0 ? k : value_vec_update(&g->v, key, v, false);
}

int kc_gauge_vec_add_mp(struct kc_gauge_vec *g, const char *label_value, double v)
{
        const char *key;
        int k = single_label_key(&g->v, label_value, &key);

        return k < 0 ? k : value_vec_update(&g->v, key, v, true);
}

int kc_gauge_vec_value(const struct kc_gauge_vec *g, const char *label_value, double *ret)
{
        const char *key;
        int k = single_label_key(&g->v, label_value, &key);

        return k < 0 ? k : value_vec_lookup(&g->v, key, ret);
}

int kc_gauge_vec_set_labels_mp(struct kc_gauge_vec *g, const char *const *label_values, double v)
{
        char key[SERIES_KEY_MAX];
        int k = series_key(&g->v, label_values, key);

        return k < 0 ? k : value_vec_update(&g->v, key, v, false);
}

int kc_gauge_vec_labels_value(const struct kc_gauge_vec *g, const char *const *label_values,
                              double *ret)
{
        char key[SERIES_KEY_MAX];
        int k = series_key(&g->v, label_values, key);

        return k < 0 ? k : value_vec_lookup(&g->v, key, ret);
}

int kc_counter_vec_add_mp(struct kc_counter_vec *c, const char *const *label_values, double v)
{
        char key[SERIES_KEY_MAX];
        int k;

        /* Counters only go up (as kc_counter_add_mp). */
        if (v < 0)
                return -EINVAL;
        k = series_key(&c->v, label_values, key);
        return k < 0 ? k : value_vec_update(&c->v, key, v, true);
}

int kc_counter_vec_inc_mp(struct kc_counter_vec *c, const char *const *label_values)
{
        return kc_counter_vec_add_mp(c, label_values, 1.0);
}

int kc_counter_vec_value(const struct kc_counter_vec *c, const char *const *label_values,
                         double *ret)
{
        char key[SERIES_KEY_MAX];
        int k = series_key(&c->v, label_values, key);

        return k < 0 ? k : value_vec_lookup(&c->v, key, ret);
}

void kc_gauge_vec_foreach(const struct kc_gauge_vec *g,
                          void (*cb)(const char *label_value, double v, void *userdata),
                          void *userdata)
{
        const struct series_index *idx = series_index_load(&g->v.set);

        for (size_t i = 0; idx && i < idx->n; i++) {
                const struct gauge_series *s = (const struct gauge_series *)idx->items[i];

                cb(s->s.label_value, atomic_double_load(&s->bits, memory_order_relaxed), userdata);
        }
}

/* ------------------------------------------------------------------------ */
/* Histogram and histogram vector                                             */

void kc_histogram_observe_mp(struct kc_histogram *h, double v)
{
        hist_observe(&h->bounds, &h->cells, v);
}

uint64_t kc_histogram_count(const struct kc_histogram *h)
{
        return hist_count(&h->cells);
}

double kc_histogram_sum(const struct kc_histogram *h)
{
        return hist_sum(&h->cells);
}

static void hist_series_init(struct series *s, const void *userdata)
{
        const struct kc_histogram_vec *hv = userdata;
        struct hist_series *hs = (struct hist_series *)s;

        hist_cells_init(&hs->cells, hs->storage, hv->bounds.n);
}

int kc_histogram_vec_observe_mp(struct kc_histogram_vec *hv, const char *label_value, double v)
{
        struct series *s;
        int k;

        k = series_get(&hv->v.set, label_value,
                       sizeof(struct hist_series) + hv->bounds.n * sizeof(_Atomic uint64_t),
                       hist_series_init, hv, &s);
        if (k < 0)
                return k;
        hist_observe(&hv->bounds, &((struct hist_series *)s)->cells, v);
        return 0;
}

/* The cells of @p label_value's series: -EINVAL for a NULL label value, -ENOENT if missing. */
static int hist_vec_lookup(const struct kc_histogram_vec *hv, const char *label_value,
                           const struct hist_cells **ret)
{
        const struct series *s;
        int k;

        k = series_lookup(&hv->v.set, label_value, &s);
        if (k < 0)
                return k;
        *ret = &((const struct hist_series *)s)->cells;
        return 0;
}

int kc_histogram_vec_count(const struct kc_histogram_vec *hv, const char *label_value,
                           uint64_t *ret)
{
        const struct hist_cells *c;
        int k = hist_vec_lookup(hv, label_value, &c);

        if (k == 0)
                *ret = hist_count(c);
        return k;
}

int kc_histogram_vec_sum(const struct kc_histogram_vec *hv, const char *label_value, double *ret)
{
        const struct hist_cells *c;
        int k = hist_vec_lookup(hv, label_value, &c);

        if (k == 0)
                *ret = hist_sum(c);
        return k;
}

/* ------------------------------------------------------------------------ */
/* Text format                                                                */

#define NUMBER_MAX 32

/*
 * Formats @p v as the text format wants it: "+Inf", "-Inf", "NaN"; integral
 * values up to 2^53 in plain digits; anything else in the shortest "%g"
 * form that reads back as the same double. Returns a pointer into @p buf or
 * to a literal.
 */
static const char *format_number(double v, char buf[static NUMBER_MAX])
{
        if (isnan(v))
                return "NaN";
        if (isinf(v))
                return v > 0 ? "+Inf" : "-Inf";
        if (v == 0) /* also -0, printed as "0" like the Go client */
                return "0";
        if (v == trunc(v) && fabs(v) <= 0x1p53) {
                snprintf(buf, NUMBER_MAX, "%.0f", v);
                return buf;
        }
        for (int prec = 1; prec <= 17; prec++) {
                snprintf(buf, NUMBER_MAX, "%.*g", prec, v);
                if (strtod(buf, NULL) == v)
                        break;
        }
        return buf;
}

/* A growing string; the first failure sticks and later appends are no-ops. */
struct strbuf {
        char *s;
        size_t len;
        size_t cap;
        bool oom;
};

static void strbuf_putn(struct strbuf *b, const char *s, size_t n)
{
        if (b->oom)
                return;
        if (KC_ARRAY_GROW(b->s, b->cap, b->len + n + 1, 1024) < 0) {
                b->oom = true;
                return;
        }
        memcpy(b->s + b->len, s, n);
        b->len += n;
        b->s[b->len] = '\0';
}

static void strbuf_puts(struct strbuf *b, const char *s)
{
        strbuf_putn(b, s, strlen(s));
}

/*
 * Appends @p s escaped: backslash and newline always, the double quote too
 * when @p quote (label values; HELP text leaves it alone).
 */
static void strbuf_put_escaped(struct strbuf *b, const char *s, bool quote)
{
        const char *run = s;

        for (; *s; s++) {
                const char *esc;

                if (*s == '\\')
                        esc = "\\\\";
                else if (*s == '\n')
                        esc = "\\n";
                else if (*s == '"' && quote)
                        esc = "\\\"";
                else
                        continue;
                strbuf_putn(b, run, (size_t)(s - run));
                strbuf_puts(b, esc);
                run = s + 1;
        }
        strbuf_puts(b, run);
}

struct label {
        const char *name;
        const char *value; /* unescaped */
};

/* "name[suffix][{l1="v1",l2="v2"}] number\n"; label values are escaped here. */
static void render_sample(struct strbuf *b, const char *name, const char *suffix,
                          const struct label *labels, size_t n_labels, double v)
{
        char num[NUMBER_MAX];

        strbuf_puts(b, name);
        if (suffix)
                strbuf_puts(b, suffix);
        for (size_t i = 0; i < n_labels; i++) {
                strbuf_puts(b, i == 0 ? "{" : ",");
                strbuf_puts(b, labels[i].name);
                strbuf_puts(b, "=\"");
                strbuf_put_escaped(b, labels[i].value, true);
                strbuf_puts(b, "\"");
        }
        if (n_labels > 0)
                strbuf_puts(b, "}");
        strbuf_puts(b, " ");
        strbuf_puts(b, format_number(v, num));
        strbuf_puts(b, "\n");
}

/*
 * One histogram's samples; @p series_label is the vector's label of this
 * series, or NULL for a plain histogram. le comes after it.
 */
static void render_histogram(struct strbuf *b, const char *name, const struct label *series_label,
                             const struct hist_bounds *hb, const struct hist_cells *c)
{
        struct label labels[2];
        char le[NUMBER_MAX];
        uint64_t cumulative = 0, count;
        size_t n = 0;
        double sum;

        if (series_label)
                labels[n++] = *series_label;
        labels[n].name = "le";
        for (size_t i = 0; i < hb->n; i++) {
                /* Acquire pairs with the release in hist_observe(). */
                cumulative += atomic_load_explicit((_Atomic uint64_t *)&c->bucket_count[i],
                                                   memory_order_acquire);
                labels[n].value = format_number(hb->v[i], le);
                render_sample(b, name, "_bucket", labels, n + 1, (double)cumulative);
        }
        /* Loaded after every bucket: count >= cumulative (see the file comment). */
        sum = hist_sum(c);
        count = hist_count(c);
        labels[n].value = "+Inf";
        render_sample(b, name, "_bucket", labels, n + 1, (double)count);
        render_sample(b, name, "_sum", labels, n, sum);
        render_sample(b, name, "_count", labels, n, (double)count);
}

/*
 * The labels of series @p s of @p v: with several labels, its key split at
 * LABEL_SEP into @p buf (keys of such series fit, see series_key()).
 */
static void series_labels(const struct vec *v, const struct series *s,
                          char buf[static SERIES_KEY_MAX], struct label *labels)
{
        char *p = buf;

        if (v->n_labels == 1) {
                labels[0] = (struct label){ v->label_names[0], s->label_value };
                return;
        }
        snprintf(buf, SERIES_KEY_MAX, "%s", s->label_value);
        for (size_t i = 0; i < v->n_labels; i++) {
                char *sep = strchr(p, LABEL_SEP);

                if (sep)
                        *sep = '\0';
                labels[i] = (struct label){ v->label_names[i], p };
                p = sep ? sep + 1 : p + strlen(p);
        }
}

/* A gauge or counter vector: one sample per series, in key order. */
static void render_value_vec(struct strbuf *b, const struct vec *v)
{
        const struct series_index *idx = series_index_load(&v->set);

        for (size_t i = 0; idx && i < idx->n; i++) {
                const struct gauge_series *s = (const struct gauge_series *)idx->items[i];
                struct label labels[KC_METRICS_LABELS_MAX];
                char buf[SERIES_KEY_MAX];

                series_labels(v, &s->s, buf, labels);
                render_sample(b, v->m.name, NULL, labels, v->n_labels,
                              atomic_double_load(&s->bits, memory_order_relaxed));
        }
}

/* What a custom family's write callback writes into: the render buffer and the family. */
struct kc_metrics_writer {
        struct strbuf *b;
        const struct metric *m;
};

void kc_metrics_write_sample(struct kc_metrics_writer *w, const char *suffix,
                             const struct kc_metrics_label *labels, size_t n_labels, double v)
{
        struct label l[KC_METRICS_CUSTOM_LABELS_MAX + 1];

        if (!w || n_labels > KC_METRICS_CUSTOM_LABELS_MAX + 1)
                return;
        for (size_t i = 0; i < n_labels; i++)
                l[i] = (struct label){ labels[i].name, labels[i].value ? labels[i].value : "" };
        render_sample(w->b, w->m->name, suffix, l, n_labels, v);
}

void kc_metrics_write_histogram(struct kc_metrics_writer *w, const struct kc_metrics_label *labels,
                                size_t n_labels, const double *bounds, const uint64_t *buckets,
                                size_t n_bounds, uint64_t count, double sum)
{
        struct kc_metrics_label l[KC_METRICS_CUSTOM_LABELS_MAX + 1];
        char le[NUMBER_MAX];
        uint64_t cumulative = 0;

        if (!w || n_labels > KC_METRICS_CUSTOM_LABELS_MAX)
                return;
        memcpy(l, labels, n_labels * sizeof(*l));
        l[n_labels].name = "le";
        for (size_t i = 0; i < n_bounds; i++) {
                cumulative += buckets[i];
                l[n_labels].value = format_number(bounds[i], le);
                kc_metrics_write_sample(w, "_bucket", l, n_labels + 1, (double)cumulative);
        }
        l[n_labels].value = "+Inf";
        kc_metrics_write_sample(w, "_bucket", l, n_labels + 1, (double)count);
        kc_metrics_write_sample(w, "_sum", l, n_labels, sum);
        kc_metrics_write_sample(w, "_count", l, n_labels, (double)count);
}

static void render_metric(struct strbuf *b, const struct metric *m)
{
        strbuf_puts(b, "# HELP ");
        strbuf_puts(b, m->name);
        strbuf_puts(b, " ");
        strbuf_put_escaped(b, m->help, false);
        strbuf_puts(b, "\n# TYPE ");
        strbuf_puts(b, m->name);
        strbuf_puts(b, " ");
        strbuf_puts(b, metric_type_names[m->type]);
        strbuf_puts(b, "\n");

        switch (m->type) {
        case METRIC_COUNTER:
                render_sample(b, m->name, NULL, NULL, 0,
                              kc_counter_value((const struct kc_counter *)m));
                break;
        case METRIC_GAUGE:
                render_sample(b, m->name, NULL, NULL, 0,
                              kc_gauge_value((const struct kc_gauge *)m));
                break;
        case METRIC_GAUGE_VEC:
        case METRIC_COUNTER_VEC:
                render_value_vec(b, (const struct vec *)m);
                break;
        case METRIC_HISTOGRAM: {
                const struct kc_histogram *h = (const struct kc_histogram *)m;

                render_histogram(b, m->name, NULL, &h->bounds, &h->cells);
                break;
        }
        case METRIC_HISTOGRAM_VEC: {
                const struct kc_histogram_vec *hv = (const struct kc_histogram_vec *)m;
                const struct series_index *idx = series_index_load(&hv->v.set);

                for (size_t i = 0; idx && i < idx->n; i++) {
                        const struct hist_series *s = (const struct hist_series *)idx->items[i];
                        const struct label l = { hv->v.label_names[0], s->s.label_value };

                        render_histogram(b, m->name, &l, &hv->bounds, &s->cells);
                }
                break;
        }
        case METRIC_CUSTOM_COUNTER:
        case METRIC_CUSTOM_HISTOGRAM: {
                const struct custom *c = (const struct custom *)m;
                struct kc_metrics_writer w = { b, m };

                c->write(c->userdata, &w);
                break;
        }
        case _METRIC_TYPE_MAX:
                assert(false);
                break;
        }
}

int kc_metrics_render(const struct kc_metrics_registry *r, char **ret)
{
        /* The lock is state of the registry, not part of its logical value. */
        pthread_mutex_t *lock = (pthread_mutex_t *)&r->lock;
        struct strbuf b = {};

        assert(ret);
        strbuf_puts(&b, ""); /* an empty registry still renders "" */
        pthread_mutex_lock(lock);
        /* Collectors refresh their metrics first (the Go client's Collect). */
        for (size_t i = 0; i < r->n_collectors; i++)
                r->collectors[i].fn(r->collectors[i].userdata);
        for (size_t i = 0; i < r->n_metrics; i++)
                render_metric(&b, r->metrics[i]);
        pthread_mutex_unlock(lock);
        if (b.oom) {
                free(b.s);
                return -ENOMEM;
        }
        *ret = b.s;
        return 0;
}
