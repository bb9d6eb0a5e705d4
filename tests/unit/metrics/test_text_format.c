/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whole scrapes against the Prometheus text format 0.0.4, line by line.
 *
 * text_format_check() is a small, independent reader of the format (it
 * shares no code with metrics/registry.c): it parses every line as a
 * # HELP / # TYPE / other comment or a sample, and checks what the format
 * asks of a family as a whole: one HELP and one TYPE at most, TYPE before
 * the family's first sample, a family's lines in one group, counters not
 * negative and, per histogram series, buckets in increasing le order with
 * non-decreasing cumulative counts, a +Inf bucket equal to _count, and a
 * _sum. It is deliberately stricter than the format in two places: no
 * blanks inside {...} and no escape other than \\, \" (label values only)
 * and \n. It does not check that strings are valid UTF-8.
 *
 * The checker is tested on its own first (hand-written valid and invalid
 * texts), then run on registries holding every metric type and on the
 * kubelet metrics.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdbool.h>
#include <cmocka.h>

#include "core/cleanup.h"
#include "metrics/kubelet_metrics.h"
#include "metrics/registry.h"

/* ------------------------------------------------------------------------ */
/* The checker                                                                */

#define TF_NAME_MAX 128
#define TF_VALUE_MAX 256
#define TF_KEY_MAX 1024
#define TF_LABELS_MAX 16
#define TF_FAMILIES_MAX 256
#define TF_GROUPS_MAX 64

struct tf_stats {
        unsigned families; /* including untyped ones without # TYPE */
        unsigned samples;
};

/* One histogram series: the labels of its samples but le. */
struct tf_group {
        char key[TF_KEY_MAX];
        double last_le; /* -Inf before the first bucket */
        double last_bucket;
        double inf, count;
        bool has_inf, has_sum, has_count;
};

struct tf_label {
        char name[TF_NAME_MAX];
        char value[TF_VALUE_MAX]; /* unescaped */
};

struct tf_state {
        char *why;
        size_t why_len;
        unsigned line;
        struct tf_stats stats;
        /* every family seen, the current one included */
        char seen[TF_FAMILIES_MAX][TF_NAME_MAX];
        size_t n_seen;
        /* the current family */
        char name[TF_NAME_MAX];
        char type[16]; /* "" until # TYPE: untyped */
        bool has_help, has_type, has_samples;
        struct tf_group groups[TF_GROUPS_MAX];
        size_t n_groups;
};

static bool tf_fail(struct tf_state *st, const char *fmt, ...)
{
        va_list ap;
        int n;

        n = snprintf(st->why, st->why_len, "line %u: ", st->line);
        va_start(ap, fmt);
        if (n >= 0 && (size_t)n < st->why_len)
                vsnprintf(st->why + n, st->why_len - (size_t)n, fmt, ap);
        va_end(ap);
        return false;
}

static bool tf_is_blank(char c)
{
        return c == ' ' || c == '\t';
}

/* [a-zA-Z_:][a-zA-Z0-9_:]* for metric names; no ':' for label names. */
static bool tf_name(const char **p, bool colon, char out[static TF_NAME_MAX])
{
        const char *s = *p;
        size_t n = 0;

        for (;; n++) {
                char c = s[n];
                bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                          (colon && c == ':') || (n > 0 && c >= '0' && c <= '9');

                if (!ok)
                        break;
        }
        if (n == 0 || n >= TF_NAME_MAX)
                return false;
        memcpy(out, s, n);
        out[n] = '\0';
        *p = s + n;
        return true;
}

/* A quoted label value; only \\, \" and \n escapes. */
static bool tf_label_value(const char **p, char out[static TF_VALUE_MAX])
{
        const char *s = *p;
        size_t n = 0;

        if (*s++ != '"')
                return false;
        for (; *s != '"'; s++) {
                char c = *s;

                if (c == '\0' || c == '\n')
                        return false;
                if (c == '\\') {
                        s++;
                        if (*s == '\\' || *s == '"')
                                c = *s;
                        else if (*s == 'n')
                                c = '\n';
                        else
                                return false;
                }
                if (n + 1 >= TF_VALUE_MAX)
                        return false;
                out[n++] = c;
        }
        out[n] = '\0';
        *p = s + 1;
        return true;
}

/* A HELP docstring up to the end of the line; only \\ and \n escapes. */
static bool tf_docstring(const char *s, const char *end)
{
        for (; s < end; s++)
                if (*s == '\\' && (++s == end || (*s != '\\' && *s != 'n')))
                        return false;
        return true;
}

/* A sample value: a Go float, with "+Inf", "-Inf" and "NaN" spelt so. */
static bool tf_number(const char *s, size_t n, double *ret)
{
        char buf[64], *end;

        if (n == 0 || n >= sizeof(buf))
                return false;
        memcpy(buf, s, n);
        buf[n] = '\0';
        if (strcmp(buf, "+Inf") == 0 || strcmp(buf, "-Inf") == 0) {
                *ret = buf[0] == '+' ? INFINITY : -INFINITY;
                return true;
        }
        if (strcmp(buf, "NaN") == 0) {
                *ret = NAN;
                return true;
        }
        /* Plain decimal notation only: strtod alone would take "inf", hex, ... */
        if (strspn(buf, "0123456789+-.eE") != n)
                return false;
        *ret = strtod(buf, &end);
        return *end == '\0';
}

/* An optional timestamp: an integer (milliseconds). */
static bool tf_timestamp(const char *s, size_t n)
{
        size_t i = (n > 0 && s[0] == '-') ? 1 : 0;

        if (i == n)
                return false;
        for (; i < n; i++)
                if (s[i] < '0' || s[i] > '9')
                        return false;
        return true;
}

/* Checks a histogram family once all its lines are in. */
static bool tf_end_family(struct tf_state *st)
{
        if (strcmp(st->type, "histogram") != 0)
                return true;
        for (size_t i = 0; i < st->n_groups; i++) {
                const struct tf_group *g = &st->groups[i];

                if (!g->has_inf)
                        return tf_fail(st, "%s%s has no le=\"+Inf\" bucket", st->name, g->key);
                if (!g->has_count || !g->has_sum)
                        return tf_fail(st, "%s%s lacks _count or _sum", st->name, g->key);
                if (g->inf != g->count)
                        return tf_fail(st, "%s%s: +Inf bucket %g != _count %g", st->name, g->key,
                                       g->inf, g->count);
        }
        return true;
}

/* Makes @p name the current family, ending the previous one. */
static bool tf_begin_family(struct tf_state *st, const char *name)
{
        if (st->n_seen > 0 && strcmp(st->name, name) == 0)
                return true;
        if (!tf_end_family(st))
                return false;
        for (size_t i = 0; i < st->n_seen; i++)
                if (strcmp(st->seen[i], name) == 0)
                        return tf_fail(st, "family %s is not in one group", name);
        if (st->n_seen == TF_FAMILIES_MAX)
                return tf_fail(st, "too many families for the checker");
        snprintf(st->seen[st->n_seen++], TF_NAME_MAX, "%s", name);
        snprintf(st->name, sizeof(st->name), "%s", name);
        st->type[0] = '\0';
        st->has_help = st->has_type = st->has_samples = false;
        st->n_groups = 0;
        st->stats.families++;
        return true;
}

/* "# HELP name doc", "# TYPE name type" or any other comment. */
static bool tf_comment(struct tf_state *st, const char *p, const char *end)
{
        static const char *const types[] = { "counter", "gauge", "histogram", "summary",
                                             "untyped" };
        char name[TF_NAME_MAX];
        bool help;
        size_t n;

        for (p++; p < end && tf_is_blank(*p); p++)
                ;
        if ((size_t)(end - p) >= 4 && strncmp(p, "HELP", 4) == 0)
                help = true;
        else if ((size_t)(end - p) >= 4 && strncmp(p, "TYPE", 4) == 0)
                help = false;
        else
                return true; /* a plain comment */
        p += 4;
        if (p == end)
                return true; /* "# HELP" alone is a plain comment too */
        if (!tf_is_blank(*p))
                return true; /* "# HELPER ..." */
        for (; p < end && tf_is_blank(*p); p++)
                ;
        if (!tf_name(&p, true, name))
                return tf_fail(st, "invalid metric name in # %s", help ? "HELP" : "TYPE");
        if (!tf_begin_family(st, name))
                return false;

        if (help) {
                if (st->has_help)
                        return tf_fail(st, "second # HELP for %s", name);
                st->has_help = true;
                if (p < end && !tf_is_blank(*p))
                        return tf_fail(st, "junk after the name in # HELP");
                if (p < end)
                        p++; /* the blank before the docstring */
                if (!tf_docstring(p, end))
                        return tf_fail(st, "invalid escape in # HELP %s", name);
                return true;
        }

        if (st->has_type)
                return tf_fail(st, "second # TYPE for %s", name);
        if (st->has_samples)
                return tf_fail(st, "# TYPE for %s after its samples", name);
        st->has_type = true;
        if (p == end || !tf_is_blank(*p))
                return tf_fail(st, "# TYPE %s without a type", name);
        for (; p < end && tf_is_blank(*p); p++)
                ;
        for (n = 0; p + n < end && !tf_is_blank(p[n]); n++)
                ;
        for (size_t i = 0; i < KC_ELEMENTSOF(types); i++)
                if (strlen(types[i]) == n && strncmp(p, types[i], n) == 0)
                        snprintf(st->type, sizeof(st->type), "%s", types[i]);
        if (st->type[0] == '\0')
                return tf_fail(st, "unknown type \"%.*s\"", (int)n, p);
        for (p += n; p < end && tf_is_blank(*p); p++)
                ;
        if (p != end)
                return tf_fail(st, "junk after the type in # TYPE %s", name);
        return true;
}

/* The family suffix of sample @p name in the current family, or NULL. */
static const char *tf_suffix(const struct tf_state *st, const char *name)
{
        static const char *const hist[] = { "_bucket", "_sum", "_count" };
        static const char *const summary[] = { "", "_sum", "_count" };
        const char *const *sfx = NULL;
        size_t len = strlen(st->name);

        if (st->n_seen == 0 || strncmp(name, st->name, len) != 0)
                return NULL;
        if (strcmp(st->type, "histogram") == 0)
                sfx = hist;
        else if (strcmp(st->type, "summary") == 0)
                sfx = summary;
        else
                return name[len] == '\0' ? "" : NULL;
        for (size_t i = 0; i < 3; i++)
                if (strcmp(name + len, sfx[i]) == 0)
                        return sfx[i];
        return NULL;
}

/* The series' group in the current family; *ret_new tells whether it was just added. */
static struct tf_group *tf_group(struct tf_state *st, const char *key, bool *ret_new)
{
        struct tf_group *g;

        *ret_new = false;
        for (size_t i = 0; i < st->n_groups; i++)
                if (strcmp(st->groups[i].key, key) == 0)
                        return &st->groups[i];
        if (st->n_groups == TF_GROUPS_MAX)
                return NULL;
        g = &st->groups[st->n_groups++];
        memset(g, 0, sizeof(*g));
        snprintf(g->key, sizeof(g->key), "%s", key);
        g->last_le = -INFINITY;
        *ret_new = true;
        return g;
}

/*
 * The series key: @p prefix, then {labels} sorted by name (so label order
 * within a line does not matter), le left out and returned in *ret_le when
 * @p ret_le is not NULL. Label names are distinct (checked by the caller).
 */
static void tf_series_key(const char *prefix, const struct tf_label *labels, size_t n_labels,
                          const char **ret_le, char key[static TF_KEY_MAX])
{
        snprintf(key, TF_KEY_MAX, "%s{", prefix);
        for (size_t rank = 0; rank < n_labels; rank++)
                for (size_t i = 0; i < n_labels; i++) {
                        size_t below = 0;

                        for (size_t j = 0; j < n_labels; j++)
                                below += strcmp(labels[j].name, labels[i].name) < 0;
                        if (below != rank)
                                continue;
                        if (ret_le && strcmp(labels[i].name, "le") == 0) {
                                *ret_le = labels[i].value;
                                continue;
                        }
                        snprintf(key + strlen(key), TF_KEY_MAX - strlen(key), "%s=\"%s\",",
                                 labels[i].name, labels[i].value);
                }
        snprintf(key + strlen(key), TF_KEY_MAX - strlen(key), "}");
}

/* One histogram sample of the current family. */
static bool tf_histogram_sample(struct tf_state *st, const char *suffix,
                                const struct tf_label *labels, size_t n_labels, double v)
{
        char key[TF_KEY_MAX];
        const char *le = NULL;
        struct tf_group *g;
        double bound;
        bool added;

        tf_series_key("", labels, n_labels, &le, key);
        g = tf_group(st, key, &added);
        if (!g)
                return tf_fail(st, "too many series for the checker");

        if (strcmp(suffix, "_bucket") != 0) {
                bool *has = strcmp(suffix, "_sum") == 0 ? &g->has_sum : &g->has_count;

                if (le)
                        return tf_fail(st, "le label on %s%s", st->name, suffix);
                if (*has)
                        return tf_fail(st, "second %s%s%s", st->name, suffix, key);
                *has = true;
                if (has == &g->has_count) {
                        if (!(v >= 0) || isinf(v))
                                return tf_fail(st, "bad count %g", v);
                        g->count = v;
                }
                return true;
        }

        if (!le)
                return tf_fail(st, "%s_bucket without le", st->name);
        if (!tf_number(le, strlen(le), &bound) || isnan(bound))
                return tf_fail(st, "bad le \"%s\"", le);
        if (g->has_inf)
                return tf_fail(st, "bucket after le=\"+Inf\" in %s%s", st->name, key);
        if (!(bound > g->last_le))
                return tf_fail(st, "le=\"%s\" not above the previous bucket's", le);
        if (!(v >= 0) || isinf(v))
                return tf_fail(st, "bad bucket count %g", v);
        if (v < g->last_bucket)
                return tf_fail(st, "cumulative bucket le=\"%s\" decreases", le);
        g->last_le = bound;
        g->last_bucket = v;
        if (isinf(bound) && bound > 0) {
                g->has_inf = true;
                g->inf = v;
        }
        return true;
}

/* name[{labels}] value [timestamp] */
static bool tf_sample(struct tf_state *st, const char *p, const char *end)
{
        struct tf_label labels[TF_LABELS_MAX];
        char name[TF_NAME_MAX];
        const char *suffix, *tok;
        size_t n_labels = 0;
        double v;

        if (!tf_name(&p, true, name))
                return tf_fail(st, "invalid metric name");
        if (p < end && *p == '{') {
                for (p++; p < end && *p != '}';) {
                        if (n_labels == TF_LABELS_MAX)
                                return tf_fail(st, "too many labels for the checker");
                        if (!tf_name(&p, false, labels[n_labels].name) || p == end || *p++ != '=')
                                return tf_fail(st, "invalid label name");
                        if (!tf_label_value(&p, labels[n_labels].value))
                                return tf_fail(st, "invalid label value");
                        for (size_t i = 0; i < n_labels; i++)
                                if (strcmp(labels[i].name, labels[n_labels].name) == 0)
                                        return tf_fail(st, "label %s twice", labels[i].name);
                        n_labels++;
                        if (p < end && *p == ',')
                                p++; /* a trailing comma is allowed */
                        else if (p < end && *p != '}')
                                return tf_fail(st, "expected , or } after a label");
                }
                if (p == end)
                        return tf_fail(st, "unterminated label set");
                p++;
        }
        if (p == end || !tf_is_blank(*p))
                return tf_fail(st, "expected a blank before the value");
        for (; p < end && tf_is_blank(*p); p++)
                ;
        for (tok = p; p < end && !tf_is_blank(*p); p++)
                ;
        if (!tf_number(tok, (size_t)(p - tok), &v))
                return tf_fail(st, "invalid value \"%.*s\"", (int)(p - tok), tok);
        for (; p < end && tf_is_blank(*p); p++)
                ;
        if (p < end) {
                for (tok = p; p < end && !tf_is_blank(*p); p++)
                        ;
                if (!tf_timestamp(tok, (size_t)(p - tok)))
                        return tf_fail(st, "invalid timestamp");
                for (; p < end && tf_is_blank(*p); p++)
                        ;
                if (p < end)
                        return tf_fail(st, "junk after the timestamp");
        }

        suffix = tf_suffix(st, name);
        if (!suffix) { /* an untyped sample starts its own family */
                if (!tf_begin_family(st, name))
                        return false;
                suffix = "";
        }
        st->has_samples = true;
        st->stats.samples++;
        if (strcmp(st->type, "histogram") == 0)
                return tf_histogram_sample(st, suffix, labels, n_labels, v);
        if (strcmp(st->type, "counter") == 0 && v < 0)
                return tf_fail(st, "negative counter %s", name);
        {
                char key[TF_KEY_MAX];
                bool added;

                tf_series_key(name, labels, n_labels, NULL, key);
                if (!tf_group(st, key, &added))
                        return tf_fail(st, "too many series for the checker");
                if (!added)
                        return tf_fail(st, "duplicate series %s", key);
        }
        return true;
}

/*
 * Checks @p text line by line; see the file comment for what is checked.
 * @return true and, if @p ret_stats, the counts; false with the first
 * problem ("line N: ...") in @p why.
 */
static bool text_format_check(const char *text, char *why, size_t why_len,
                              struct tf_stats *ret_stats)
{
        struct tf_state *st = calloc(1, sizeof(*st));
        bool ok = true;

        assert_non_null(st);
        st->why = why;
        st->why_len = why_len;
        why[0] = '\0';
        for (const char *p = text, *end; ok && *p; p = end + 1) {
                st->line++;
                end = strchr(p, '\n');
                if (!end) {
                        ok = tf_fail(st, "no newline at the end of the text");
                        break;
                }
                if (p == end)
                        continue; /* empty lines are ignored */
                ok = *p == '#' ? tf_comment(st, p, end) : tf_sample(st, p, end);
        }
        if (ok)
                ok = tf_end_family(st);
        if (ok && ret_stats)
                *ret_stats = st->stats;
        free(st);
        return ok;
}

/* Asserts @p text passes, printing the checker's reason and the text if not. */
static struct tf_stats assert_text_format(const char *text)
{
        struct tf_stats stats = {};
        char why[256];

        if (!text_format_check(text, why, sizeof(why), &stats)) {
                print_error("text format: %s\n--- text ---\n%s--- end ---\n", why, text);
                fail();
        }
        return stats;
}

/* ------------------------------------------------------------------------ */
/* The checker on its own                                                     */

static void test_checker_accepts(void **state)
{
        static const char *const valid[] = {
                "",
                "\n",
                "# just a comment\n",
                "#\n# HELP\n# HELPER x\n",
                "# HELP a Doc \\\\ with \\n escapes and \"quotes\".\n# TYPE a counter\na 1\n",
                "# HELP a\n# TYPE a gauge\na -1.5e-3\n",
                "# TYPE a gauge\n# HELP a after TYPE\na NaN\n",
                "# TYPE a gauge\na{x=\"1\"} +Inf\na{x=\"2\"} -Inf\na{y=\"1\"} 0\n",
                "a 1\nb{x=\"y\"} 2 1700000000000\nc -Inf\n", /* untyped */
                "a{x=\"\\\"\\\\\\n\",y=\"\",} 1\n",          /* escapes, trailing comma */
                "a{} 1\n",
                "a\t1   -5\n",
                "# TYPE h histogram\n"
                "h_bucket{le=\"0.5\"} 1\n"
                "h_bucket{le=\"+Inf\"} 2\n"
                "h_sum 3\n"
                "h_count 2\n",
                /* label order within a sample is free; series interleave */
                "# TYPE h histogram\n"
                "h_bucket{le=\"1\",op=\"a\"} 1\n"
                "h_bucket{op=\"b\",le=\"1\"} 0\n"
                "h_bucket{op=\"a\",le=\"+Inf\"} 1\n"
                "h_bucket{op=\"b\",le=\"+Inf\"} 4\n"
                "h_count{op=\"b\"} 4\n"
                "h_sum{op=\"b\"} 9\n"
                "h_sum{op=\"a\"} 0.5\n"
                "h_count{op=\"a\"} 1\n",
                "# TYPE h histogram\n", /* no series yet */
                "# TYPE s summary\ns{quantile=\"0.5\"} 1\ns_sum 2\ns_count 3\n",
        };
        char why[256];

        (void)state;
        for (size_t i = 0; i < KC_ELEMENTSOF(valid); i++)
                if (!text_format_check(valid[i], why, sizeof(why), NULL)) {
                        print_error("valid[%zu] rejected: %s\n", i, why);
                        fail();
                }
}

static void test_checker_rejects(void **state)
{
        static const char *const invalid[] = {
                "a 1",                                          /* no final newline */
                "1a 1\n",                                       /* metric name */
                "a-b 1\n",                                      /* metric name */
                "a{1x=\"v\"} 1\n",                              /* label name */
                "a{x:y=\"v\"} 1\n",                             /* no colon in label names */
                "a{x=v} 1\n",                                   /* unquoted label value */
                "a{x=\"v} 1\n",                                 /* unterminated label value */
                "a{x=\"\\t\"} 1\n",                             /* unknown escape */
                "a{x=\"v\" 1\n",                                /* unterminated label set */
                "a{x=\"v\"y=\"w\"} 1\n",                        /* missing comma */
                "a{x=\"v\",x=\"w\"} 1\n",                       /* duplicate label */
                "a{x=\"v\"}1\n",                                /* no blank before the value */
                "a\n",                                          /* no value */
                "a 1.2.3\n",                                    /* value */
                "a inf\n",                                      /* Inf must be spelt +Inf */
                "a 0x10\n",                                     /* no hex */
                "a 1 1.5\n",                                    /* timestamp is an integer */
                "a 1 2 3\n",                                    /* junk */
                "# HELP a x\\t\n",                              /* escape in HELP */
                "# HELP a x\n# HELP a y\n",                     /* second HELP */
                "# TYPE a gauge\n# TYPE a gauge\n",             /* second TYPE */
                "a 1\n# TYPE a gauge\n",                        /* TYPE after samples */
                "# TYPE a gauges\n",                            /* unknown type */
                "# TYPE a\n",                                   /* no type */
                "# TYPE a gauge x\n",                           /* junk after type */
                "# TYPE 1a gauge\n",                            /* name in TYPE */
                "a 1\nb 1\na 2\n",                              /* family not in one group */
                "# TYPE a counter\na -1\n",                     /* negative counter */
                "# TYPE a gauge\na 1\na 2\n",                   /* duplicate series */
                "a{x=\"1\",y=\"2\"} 1\na{y=\"2\",x=\"1\"} 1\n", /* the same, reordered */
                "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\n"
                "h_sum 1\nh_count 1\n", /* decreasing buckets */
                "# TYPE h histogram\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\n"
                "h_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",                     /* le order */
                "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",    /* no +Inf */
                "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n", /* != count */
                "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n",          /* no _sum */
                "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\n",            /* no _count */
                "# TYPE h histogram\nh_bucket 1\n",                                  /* no le */
                "# TYPE h histogram\nh_bucket{le=\"x\"} 1\n",                        /* bad le */
                "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_bucket{le=\"+Inf\"} 1\n",
                "# TYPE h histogram\nh_bucket{le=\"1\"} -1\n", /* negative count */
                "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\nh_count 1\n",
                /* op="b" lacks +Inf even though op="a" has one */
                "# TYPE h histogram\nh_bucket{op=\"a\",le=\"+Inf\"} 1\nh_sum{op=\"a\"} 1\n"
                "h_count{op=\"a\"} 1\nh_bucket{op=\"b\",le=\"1\"} 1\nh_sum{op=\"b\"} 1\n"
                "h_count{op=\"b\"} 1\n",
        };
        char why[256];

        (void)state;
        for (size_t i = 0; i < KC_ELEMENTSOF(invalid); i++) {
                if (text_format_check(invalid[i], why, sizeof(why), NULL)) {
                        print_error("invalid[%zu] accepted:\n%s", i, invalid[i]);
                        fail();
                }
                assert_true(strncmp(why, "line ", 5) == 0);
        }
}

/* ------------------------------------------------------------------------ */
/* Rendered registries                                                        */

static void test_every_metric_type(void **state)
{
        _cleanup_(kc_metrics_registry_freep) struct kc_metrics_registry *r = NULL;
        static const double buckets[] = { 0.1, 0.5, 1 };
        static const double only_inf[] = { INFINITY };
        struct kc_histogram_vec *hv = NULL, *hv_empty = NULL;
        struct kc_histogram *h = NULL, *hd = NULL, *hi = NULL;
        struct kc_gauge_vec *gv = NULL, *gv_empty = NULL;
        _cleanup_free_ char *text = NULL;
        struct kc_counter *c = NULL;
        struct kc_gauge *g = NULL, *gnan = NULL, *ginf = NULL;
        struct tf_stats stats;
        double exp_bounds[4];

        (void)state;
        assert_int_equal(kc_metrics_registry_new(&r), 0);
        assert_int_equal(kc_metrics_counter_new(r, "c_total", "A \\ counter\nover lines.", &c), 0);
        assert_int_equal(kc_metrics_gauge_new(r, "g", "", &g), 0);
        assert_int_equal(kc_metrics_gauge_new(r, "g_nan", NULL, &gnan), 0);
        assert_int_equal(kc_metrics_gauge_new(r, "ns:g_inf", "Inf.", &ginf), 0);
        assert_int_equal(kc_metrics_gauge_vec_new(r, "gv", "Vec \"q\".", "state", &gv), 0);
        assert_int_equal(kc_metrics_gauge_vec_new(r, "gv_empty", "No series.", "l", &gv_empty), 0);
        assert_int_equal(kc_metrics_histogram_new(r, "h_seconds", "H.", buckets, 3, &h), 0);
        assert_int_equal(kc_metrics_histogram_new(r, "hd", "Default.", NULL, 0, &hd), 0);
        assert_int_equal(kc_metrics_histogram_new(r, "hi", "+Inf only.", only_inf, 1, &hi), 0);
        assert_int_equal(kc_metrics_exponential_buckets(0.5, 4, 4, exp_bounds), 0);
        assert_int_equal(kc_metrics_histogram_vec_new(r, "hv", "By op.", "op", exp_bounds, 4, &hv),
                         0);
        assert_int_equal(
                kc_metrics_histogram_vec_new(r, "hv_empty", "No series.", "op", NULL, 0, &hv_empty),
                0);

        kc_counter_add_mp(c, 1e17);
        kc_gauge_set_mp(g, -0.1);
        kc_gauge_set_mp(gnan, NAN);
        kc_gauge_set_mp(ginf, -INFINITY);
        assert_int_equal(kc_gauge_vec_set_mp(gv, "running", 2), 0);
        assert_int_equal(kc_gauge_vec_set_mp(gv, "a\"b\\c\nd", -1), 0);
        assert_int_equal(kc_gauge_vec_set_mp(gv, "", 1e-300), 0);
        for (int i = 0; i < 20; i++) {
                kc_histogram_observe_mp(h, i * 0.1);
                kc_histogram_observe_mp(hd, i * 0.7);
                assert_int_equal(kc_histogram_vec_observe_mp(hv, i % 2 ? "sync" : "create", i), 0);
        }
        kc_histogram_observe_mp(h, NAN); /* counted in +Inf only */
        kc_histogram_observe_mp(hi, 3);
        assert_int_equal(kc_histogram_vec_observe_mp(hv, "", -1), 0);
        assert_int_equal(kc_histogram_vec_observe_mp(hv, "a\"b\\c\nd,le=\"1\"}", 1e9), 0);

        assert_int_equal(kc_metrics_render(r, &text), 0);
        stats = assert_text_format(text);
        assert_int_equal(stats.families, 11);
        /* 4 plain values, 3 gauge series, histograms: (bounds + 3) per series. */
        assert_int_equal(stats.samples, 4 + 3 + (3 + 3) + (11 + 3) + (0 + 3) + 4 * (4 + 3));
}

/* The kubelet metrics, fresh and after updates. */
static void test_kubelet_metrics(void **state)
{
        _cleanup_(kc_metrics_registry_freep) struct kc_metrics_registry *r = NULL;
        struct kc_kubelet_metrics m = {};
        struct tf_stats stats;

        (void)state;
        assert_int_equal(kc_metrics_registry_new(&r), 0);
        assert_int_equal(kc_kubelet_metrics_register(r, &m), 0);
        {
                _cleanup_free_ char *text = NULL;

                assert_int_equal(kc_metrics_render(r, &text), 0);
                stats = assert_text_format(text);
                assert_int_equal(stats.families, 27);
        }

        kc_histogram_observe_mp(m.pleg_relist_duration, 0.02);
        kc_histogram_observe_mp(m.pleg_relist_interval, 1.01);
        kc_counter_inc_mp(m.pleg_discard_events);
        kc_gauge_set_mp(m.pleg_last_seen, 1700000001.25);
        kc_gauge_set_mp(m.running_pods, 3);
        assert_int_equal(kc_gauge_vec_set_mp(m.running_containers, "running", 5), 0);
        assert_int_equal(kc_gauge_vec_set_mp(m.running_containers, "exited", 1), 0);
        assert_int_equal(kc_histogram_vec_observe_mp(m.pod_worker_duration, "create", 1.5), 0);
        assert_int_equal(kc_histogram_vec_observe_mp(m.pod_worker_duration, "sync", 0.2), 0);
        assert_int_equal(kc_histogram_vec_observe_mp(m.pod_worker_duration, "update", 12), 0);
        kc_histogram_observe_mp(m.pod_worker_start_duration, 0.001);
        kc_histogram_observe_mp(m.containers_per_pod, 2);
        kc_histogram_observe_mp(m.containers_per_pod, 40);
        /* Issue 17's metrics: multi-label gauges, counter vectors, the runtime operations. */
        {
                const char *const working[] = { "sync", "desired", "" };
                const char *const op[] = { "list_podsandbox" };
                const char *const err[] = { "container", "CreateContainerError" };

                assert_int_equal(kc_gauge_vec_set_mp(m.node_name, "node-a", 1), 0);
                assert_int_equal(kc_gauge_vec_set_labels_mp(m.working_pods, working, 2), 0);
                assert_int_equal(kc_gauge_vec_set_mp(m.desired_pods, "true", 1), 0);
                kc_gauge_set_mp(m.mirror_pods, 0);
                kc_counter_inc_mp(m.started_pods_total);
                assert_int_equal(kc_counter_vec_inc_mp(m.runtime_operations, op), 0);
                assert_int_equal(
                        kc_histogram_vec_observe_mp(m.runtime_operations_duration, op[0], 0.01), 0);
                assert_int_equal(kc_counter_vec_inc_mp(m.started_containers_errors_total, err), 0);
                kc_histogram_observe_mp(m.pod_start_duration, 3.5);
        }
        kc_counter_inc_mp(m.evented_pleg_connection_error_count);
        kc_counter_inc_mp(m.evented_pleg_connection_success_count);
        kc_histogram_observe_mp(m.evented_pleg_connection_latency, 0.003);
        {
                _cleanup_free_ char *text = NULL;

                assert_int_equal(kc_metrics_render(r, &text), 0);
                stats = assert_text_format(text);
                assert_int_equal(stats.families, 27);
                /* 2 DefBuckets histograms, a counter, 2 gauges, 2 gauge series, 3 pod
                 * worker series and a DefBuckets histogram, then 5 buckets; the
                 * EventedPLEG counters and DefBuckets histogram. */
                /* Issue 17: 9 single samples, a runtime-operations series
                 * (14 buckets) and the pod start histogram (25 buckets). */
                assert_int_equal(stats.samples, 2 * 14 + 1 + 2 + 2 + 3 * 14 + 14 + (5 + 3) + 2 +
                                                        14 + 9 + (14 + 3) + (25 + 3));
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_checker_accepts),
                cmocka_unit_test(test_checker_rejects),
                cmocka_unit_test(test_every_metric_type),
                cmocka_unit_test(test_kubelet_metrics),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
