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
 * Gauge vectors
 *   Series are never deleted. The sorted series index is an immutable
 *   snapshot published through an atomic pointer: writers that create a
 *   series copy the index under the vec's mutex, insert and publish the copy
 *   with release; lookups load it with acquire and binary-search without a
 *   lock. Old snapshots are chained and freed with the vec. That costs
 *   O(n^2) pointers for n label values over the vec's lifetime, which is
 *   nothing for the handful of values a label like container_state takes.
 *
 * Registry
 *   An array of metrics in registration order under a mutex held by
 *   registration and rendering (registration normally happens at start-up,
 *   the lock only makes a late registration safe against a scrape).
 *
 * Differences from the Go client (client_golang, expfmt), on purpose:
 *   - families are rendered in registration order, not sorted by name;
 *   - a gauge vector without series still renders its # HELP and # TYPE
 *     lines (Go drops families without samples);
 *   - integral values up to 2^53 print without exponent ("1700000000"
 *     where Go's 'g' formatting prints "1.7e+09"); both parse to the same
 *     double.
 * Number formatting uses snprintf/strtod and so assumes the C locale's
 * decimal point, which cubelet never changes.
 */
#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "kc_health.h"

const double kc_metrics_default_buckets[11] = {
        0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

enum metric_type {
        METRIC_COUNTER,
        METRIC_GAUGE,
        METRIC_GAUGE_VEC,
        METRIC_HISTOGRAM,
        _METRIC_TYPE_MAX,
};

static const char *const metric_type_names[] = {
        [METRIC_COUNTER] = "counter",
        [METRIC_GAUGE] = "gauge",
        [METRIC_GAUGE_VEC] = "gauge",
        [METRIC_HISTOGRAM] = "histogram",
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

struct series {
        char *label_value;
        _Atomic uint64_t bits;
};

/* Immutable once published; see "Gauge vectors" above. */
struct series_index {
        struct series_index *older; /* retired snapshots, freed with the vec */
        size_t n;
        struct series *items[]; /* sorted by strcmp(label_value) */
};

struct kc_gauge_vec {
        struct metric m;
        char *label_name;
        pthread_mutex_t create_lock; /* serialises series creation */
        _Atomic(struct series_index *) index;
};

struct kc_histogram {
        struct metric m;
        size_t n_bounds;
        double *bounds;                 /* finite upper bounds, ascending */
        _Atomic uint64_t *bucket_count; /* n_bounds, per bucket, not cumulative */
        _Atomic uint64_t count;
        _Atomic uint64_t sum_bits;
};

struct kc_metrics_registry {
        pthread_mutex_t lock; /* registration vs. rendering */
        struct metric **metrics;
        size_t n_metrics;
        size_t cap_metrics;
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

static void metric_free(struct metric *m)
{
        if (!m)
                return;
        switch (m->type) {
        case METRIC_COUNTER:
        case METRIC_GAUGE:
                break;
        case METRIC_GAUGE_VEC: {
                struct kc_gauge_vec *g = (struct kc_gauge_vec *)m;
                struct series_index *idx = atomic_load_explicit(&g->index, memory_order_relaxed);

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
                pthread_mutex_destroy(&g->create_lock);
                free(g->label_name);
                break;
        }
        case METRIC_HISTOGRAM: {
                struct kc_histogram *h = (struct kc_histogram *)m;

                free(h->bounds);
                free((void *)h->bucket_count);
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
        int ret = 0;

        pthread_mutex_lock(&r->lock);
        for (size_t i = 0; i < r->n_metrics; i++)
                if (strcmp(r->metrics[i]->name, m->name) == 0) {
                        ret = -EEXIST;
                        goto out;
                }
        if (r->n_metrics == r->cap_metrics) {
                size_t cap = r->cap_metrics ? r->cap_metrics * 2 : 16;
                struct metric **a = realloc(r->metrics, cap * sizeof(*a));

                if (!a) {
                        ret = -ENOMEM;
                        goto out;
                }
                r->metrics = a;
                r->cap_metrics = cap;
        }
        r->metrics[r->n_metrics++] = m;
out:
        pthread_mutex_unlock(&r->lock);
        return ret;
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
        if (k < 0)
                return k;
        *ret = m;
        return 0;
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

int kc_metrics_gauge_vec_new(struct kc_metrics_registry *r, const char *name, const char *help,
                             const char *label_name, struct kc_gauge_vec **ret)
{
        struct kc_gauge_vec *g;
        struct metric *m;
        int k;

        assert(r && ret);
        if (!label_name_is_valid(label_name))
                return -EINVAL;
        k = metric_alloc(METRIC_GAUGE_VEC, name, help, sizeof(struct kc_gauge_vec), &m);
        if (k < 0)
                return k;
        g = (struct kc_gauge_vec *)m;
        pthread_mutex_init(&g->create_lock, NULL);
        atomic_init(&g->index, NULL);
        g->label_name = strdup(label_name);
        if (!g->label_name) {
                metric_free(m);
                return -ENOMEM;
        }
        k = register_or_free(r, m);
        if (k < 0)
                return k;
        *ret = (struct kc_gauge_vec *)m;
        return 0;
}

int kc_metrics_histogram_new(struct kc_metrics_registry *r, const char *name, const char *help,
                             const double *buckets, size_t n_buckets, struct kc_histogram **ret)
{
        struct kc_histogram *h;
        struct metric *m;
        int k;

        assert(r && ret);
        if (!buckets) {
                buckets = kc_metrics_default_buckets;
                n_buckets = KC_ELEMENTSOF(kc_metrics_default_buckets);
        }
        /* A trailing +Inf is implicit (the Go client drops it too). */
        if (n_buckets > 0 && isinf(buckets[n_buckets - 1]) && buckets[n_buckets - 1] > 0)
                n_buckets--;
        for (size_t i = 0; i < n_buckets; i++)
                if (isnan(buckets[i]) || isinf(buckets[i]) ||
                    (i > 0 && !(buckets[i - 1] < buckets[i])))
                        return -EINVAL;

        k = metric_alloc(METRIC_HISTOGRAM, name, help, sizeof(struct kc_histogram), &m);
        if (k < 0)
                return k;
        h = (struct kc_histogram *)m;
        h->n_bounds = n_buckets;
        /* +1: never malloc(0), so NULL always means ENOMEM. */
        h->bounds = malloc((n_buckets + 1) * sizeof(double));
        h->bucket_count = calloc(n_buckets + 1, sizeof(_Atomic uint64_t));
        if (!h->bounds || !h->bucket_count) {
                metric_free(m);
                return -ENOMEM;
        }
        if (n_buckets > 0)
                memcpy(h->bounds, buckets, n_buckets * sizeof(double));
        for (size_t i = 0; i < n_buckets; i++)
                atomic_init(&h->bucket_count[i], 0);
        atomic_init(&h->count, 0);
        atomic_init(&h->sum_bits, double_to_bits(0.0));
        k = register_or_free(r, m);
        if (k < 0)
                return k;
        *ret = (struct kc_histogram *)m;
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

/*
 * Acquire pairs with the release store in series_create(): a reader that
 * sees a snapshot also sees its array and every series it points to.
 */
static struct series_index *series_index_load(const struct kc_gauge_vec *g)
{
        return atomic_load_explicit((_Atomic(struct series_index *) *)&g->index,
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

static int series_create(struct kc_gauge_vec *g, const char *label_value, struct series **ret)
{
        struct series_index *old, *idx = NULL;
        struct series *s = NULL;
        size_t pos = 0;
        int k = 0;

        pthread_mutex_lock(&g->create_lock);
        /* Writers are serialised here, so relaxed would do; acquire is harmless. */
        old = series_index_load(g);
        s = series_find(old, label_value, &pos);
        if (s) /* another thread created it first */
                goto out;

        s = calloc(1, sizeof(*s));
        idx = malloc(sizeof(*idx) + ((old ? old->n : 0) + 1) * sizeof(idx->items[0]));
        if (!s || !idx || !(s->label_value = strdup(label_value))) {
                free(s);
                free(idx);
                s = NULL;
                k = -ENOMEM;
                goto out;
        }
        atomic_init(&s->bits, double_to_bits(0.0));
        idx->older = old;
        idx->n = (old ? old->n : 0) + 1;
        if (pos > 0)
                memcpy(idx->items, old->items, pos * sizeof(idx->items[0]));
        idx->items[pos] = s;
        if (old && old->n > pos)
                memcpy(idx->items + pos + 1, old->items + pos,
                       (old->n - pos) * sizeof(idx->items[0]));
        /* Release pairs with the acquire in series_index_load(). */
        atomic_store_explicit(&g->index, idx, memory_order_release);
out:
        pthread_mutex_unlock(&g->create_lock);
        if (k == 0)
                *ret = s;
        return k;
}

static int series_get(struct kc_gauge_vec *g, const char *label_value, struct series **ret)
{
        struct series *s;

        if (!label_value)
                return -EINVAL;
        s = series_find(series_index_load(g), label_value, NULL);
        if (s) {
                *ret = s;
                return 0;
        }
        return series_create(g, label_value, ret);
}

int kc_gauge_vec_set_mp(struct kc_gauge_vec *g, const char *label_value, double v)
{
        struct series *s;
        int k;

        k = series_get(g, label_value, &s);
        if (k < 0)
                return k;
        atomic_store_explicit(&s->bits, double_to_bits(v), memory_order_relaxed); /* standalone */
        return 0;
}

int kc_gauge_vec_add_mp(struct kc_gauge_vec *g, const char *label_value, double v)
{
        struct series *s;
        int k;

        k = series_get(g, label_value, &s);
        if (k < 0)
                return k;
        atomic_double_add(&s->bits, v, memory_order_relaxed); /* standalone value */
        return 0;
}

int kc_gauge_vec_value(const struct kc_gauge_vec *g, const char *label_value, double *ret)
{
        struct series *s;

        if (!label_value)
                return -EINVAL;
        s = series_find(series_index_load(g), label_value, NULL);
        if (!s)
                return -ENOENT;
        *ret = atomic_double_load(&s->bits, memory_order_relaxed); /* standalone value */
        return 0;
}

void kc_gauge_vec_foreach(const struct kc_gauge_vec *g,
                          void (*cb)(const char *label_value, double v, void *userdata),
                          void *userdata)
{
        const struct series_index *idx = series_index_load(g);

        if (!idx)
                return;
        for (size_t i = 0; i < idx->n; i++)
                cb(idx->items[i]->label_value,
                   atomic_double_load(&idx->items[i]->bits, memory_order_relaxed), userdata);
}

/* ------------------------------------------------------------------------ */
/* Histogram                                                                  */

void kc_histogram_observe_mp(struct kc_histogram *h, double v)
{
        size_t lo = 0, hi = h->n_bounds;

        /* First bucket whose upper bound is >= v (le is inclusive); n_bounds
         * means +Inf only, which has no slot: it is the count. NaN lands
         * there too, as in Go. */
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (v <= h->bounds[mid])
                        hi = mid;
                else
                        lo = mid + 1;
        }

        /* Order matters, see the file comment: count, sum, then bucket. */
        atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
        atomic_double_add(&h->sum_bits, v, memory_order_relaxed);
        if (lo < h->n_bounds)
                /* Release pairs with the acquire bucket loads in render_histogram(). */
                atomic_fetch_add_explicit(&h->bucket_count[lo], 1, memory_order_release);
}

uint64_t kc_histogram_count(const struct kc_histogram *h)
{
        return atomic_load_explicit((_Atomic uint64_t *)&h->count, memory_order_relaxed);
}

double kc_histogram_sum(const struct kc_histogram *h)
{
        return atomic_double_load(&h->sum_bits, memory_order_relaxed);
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
        if (b->len + n + 1 > b->cap) {
                size_t cap = b->cap ? b->cap : 1024;
                char *p;

                while (b->len + n + 1 > cap)
                        cap *= 2;
                p = realloc(b->s, cap);
                if (!p) {
                        b->oom = true;
                        return;
                }
                b->s = p;
                b->cap = cap;
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

/* "name[suffix][{label="value"}] number\n"; @p label_value is escaped here. */
static void render_sample(struct strbuf *b, const char *name, const char *suffix,
                          const char *label_name, const char *label_value, double v)
{
        char num[NUMBER_MAX];

        strbuf_puts(b, name);
        if (suffix)
                strbuf_puts(b, suffix);
        if (label_name) {
                strbuf_puts(b, "{");
                strbuf_puts(b, label_name);
                strbuf_puts(b, "=\"");
                strbuf_put_escaped(b, label_value, true);
                strbuf_puts(b, "\"}");
        }
        strbuf_puts(b, " ");
        strbuf_puts(b, format_number(v, num));
        strbuf_puts(b, "\n");
}

static void render_histogram(struct strbuf *b, const struct kc_histogram *h)
{
        char le[NUMBER_MAX];
        uint64_t cumulative = 0, count;
        double sum;

        for (size_t i = 0; i < h->n_bounds; i++) {
                /* Acquire pairs with the release in kc_histogram_observe_mp(). */
                cumulative += atomic_load_explicit((_Atomic uint64_t *)&h->bucket_count[i],
                                                   memory_order_acquire);
                render_sample(b, h->m.name, "_bucket", "le", format_number(h->bounds[i], le),
                              (double)cumulative);
        }
        /* Loaded after every bucket: count >= cumulative (see the file comment). */
        sum = atomic_double_load(&h->sum_bits, memory_order_relaxed);
        count = atomic_load_explicit((_Atomic uint64_t *)&h->count, memory_order_relaxed);
        render_sample(b, h->m.name, "_bucket", "le", "+Inf", (double)count);
        render_sample(b, h->m.name, "_sum", NULL, NULL, sum);
        render_sample(b, h->m.name, "_count", NULL, NULL, (double)count);
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
                render_sample(b, m->name, NULL, NULL, NULL,
                              kc_counter_value((const struct kc_counter *)m));
                break;
        case METRIC_GAUGE:
                render_sample(b, m->name, NULL, NULL, NULL,
                              kc_gauge_value((const struct kc_gauge *)m));
                break;
        case METRIC_GAUGE_VEC: {
                const struct kc_gauge_vec *g = (const struct kc_gauge_vec *)m;
                const struct series_index *idx = series_index_load(g);

                for (size_t i = 0; idx && i < idx->n; i++)
                        render_sample(
                                b, m->name, NULL, g->label_name, idx->items[i]->label_value,
                                atomic_double_load(&idx->items[i]->bits, memory_order_relaxed));
                break;
        }
        case METRIC_HISTOGRAM:
                render_histogram(b, (const struct kc_histogram *)m);
                break;
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
