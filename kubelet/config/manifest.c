/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Static-pod manifests (upstream pkg/kubelet/config/file.go and common.go):
 * a v1 Pod in YAML or JSON becomes a defaulted kc_api_pod.
 *
 * Two passes. The first pulls libyaml events and builds a small tree, under
 * hard caps: the document size, the nesting depth, the length of a scalar,
 * the number of anchors, and the number of nodes and of scalar bytes the
 * document would have with every alias expanded (aliases are shared, never
 * copied, and each one adds its target's expanded size to those counts, so
 * an alias bomb fails at once, and so does a big string aliased many times,
 * which the pod would otherwise hold as that many copies). The same pass
 * hashes the event stream for the content UID. The second pass walks the
 * v1 fields (this file: metadata and the entry point; manifest_spec.c,
 * manifest_container.c and manifest_values.c: the spec), checks their
 * types and values and reports the first problem with its field path.
 * Fields cubelet does not honour, and names v1 does not have (which the
 * API server's non-strict decoding would drop silently), become warnings
 * (manifest_fields.c).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <yaml.h>

#include "core/array.h"
#include "core/cleanup.h"
#include "core/format.h"
#include "core/map.h"
#include "core/arena.h"
#include "kubelet/config/manifest.h"
#include "manifest_internal.h"
#include "runtime/api_pod.h"
#include "runtime/runtime_service.h"

/* ------------------------------------------------------------------------ */
/* The tree                                                                   */

static void builder_done(struct builder *b)
{
        size_t i;

        for (i = 0; i < b->n_all; i++) {
                free(b->all[i]->value);
                free(b->all[i]->kids);
                free(b->all[i]);
        }
        free(b->all);
        for (i = 0; i < b->n_anchors; i++)
                free(b->anchors[i].name);
        for (i = 0; i < b->depth; i++)
                free(b->stack_anchor[i]);
}

/*
 * FNV-1a, 128-bit (offset basis and prime from the FNV reference). Stable
 * across runs and hosts; it stands in for upstream's md5, which is no
 * stronger for this purpose (a content fingerprint, not a security check).
 */
#define FNV128_OFFSET                                                                              \
        (((unsigned __int128)0x6c62272e07bb0142ULL << 64) |                                        \
         (unsigned __int128)0x62b821756295c58dULL)
#define FNV128_PRIME (((unsigned __int128)1 << 88) | (unsigned __int128)0x13b)

static void hash_bytes(unsigned __int128 *h, const void *data, size_t len)
{
        const unsigned char *p = data;
        size_t i;

        for (i = 0; i < len; i++) {
                *h ^= p[i];
                *h *= FNV128_PRIME;
        }
}

/* A length-prefixed field, so that ("ab","c") and ("a","bc") differ. */
static void hash_field(unsigned __int128 *h, char tag, const void *data, size_t len)
{
        uint64_t n = len;

        hash_bytes(h, &tag, 1);
        hash_bytes(h, &n, sizeof(n));
        hash_bytes(h, data, len);
}

static int failv(struct mf_ctx *c, const char *fmt, va_list ap)
{
        _cleanup_free_ char *what = NULL;
        char *msg;

        if (c->err)
                return -EBADMSG;
        what = kc_strdup_vprintf(fmt, ap);
        msg = what ? kc_strdup_printf("%s: %s", c->file_name, what) : NULL;
        if (!msg) {
                c->oom = true;
                return -ENOMEM;
        }
        c->err = msg;
        return -EBADMSG;
}

int kc__mf_fail(struct mf_ctx *c, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = failv(c, fmt, ap);
        va_end(ap);
        return r;
}

static struct mf_node *node_new(struct mf_ctx *c, enum node_type type, const yaml_mark_t *mark)
{
        struct builder *b = &c->b;
        struct mf_node *n;

        if (KC_ARRAY_GROW(b->all, b->cap_all, b->n_all + 1, 64) < 0)
                return NULL;
        n = calloc(1, sizeof(*n));
        if (!n)
                return NULL;
        n->type = type;
        n->line = mark->line + 1;
        n->column = mark->column + 1;
        n->weight = 1;
        b->all[b->n_all++] = n;
        return n;
}

static int node_append(struct mf_node *parent, struct mf_node *kid)
{
        if (KC_ARRAY_GROW(parent->kids, parent->cap, parent->n + 1, 8) < 0)
                return -ENOMEM;
        parent->kids[parent->n++] = kid;
        return 0;
}

/* Counts @p weight more nodes and @p bytes more scalar bytes in the expanded document. */
static int count_nodes(struct mf_ctx *c, size_t weight, size_t bytes, const yaml_mark_t *mark)
{
        if (weight > KC_MANIFEST_MAX_NODES - c->b.expanded)
                return kc__mf_fail(
                        c,
                        "line %zu, column %zu: too many nodes (more than %d with aliases "
                        "expanded)",
                        mark->line + 1, mark->column + 1, KC_MANIFEST_MAX_NODES);
        if (bytes > (size_t)KC_MANIFEST_MAX_EXPANDED - c->b.expanded_bytes)
                return kc__mf_fail(
                        c,
                        "line %zu, column %zu: too much text (more than %d bytes of strings "
                        "with aliases expanded)",
                        mark->line + 1, mark->column + 1, KC_MANIFEST_MAX_EXPANDED);
        c->b.expanded += weight;
        c->b.expanded_bytes += bytes;
        return 0;
}

static int anchor_add(struct mf_ctx *c, const char *name, struct mf_node *n,
                      const yaml_mark_t *mark)
{
        struct builder *b = &c->b;
        char *copy;

        if (b->n_anchors == KC_MANIFEST_MAX_ANCHORS)
                return kc__mf_fail(c, "line %zu, column %zu: too many anchors (more than %d)",
                                   mark->line + 1, mark->column + 1, KC_MANIFEST_MAX_ANCHORS);
        copy = strdup(name);
        if (!copy)
                return -ENOMEM;
        b->anchors[b->n_anchors++] = (struct anchor){ copy, n };
        return 0;
}

static struct mf_node *anchor_find(struct builder *b, const char *name)
{
        size_t i;

        /* YAML lets an anchor be redefined: the latest definition wins. */
        for (i = b->n_anchors; i > 0; i--)
                if (strcmp(b->anchors[i - 1].name, name) == 0)
                        return b->anchors[i - 1].node;
        return NULL;
}

/* Hangs a finished node on the open collection (or makes it the root). */
static int attach(struct mf_ctx *c, struct mf_node *n)
{
        struct builder *b = &c->b;

        if (b->depth == 0) {
                b->root = n;
                return 0;
        }
        b->stack[b->depth - 1]->weight += n->weight;
        b->stack[b->depth - 1]->bytes += n->bytes;
        return node_append(b->stack[b->depth - 1], n);
}

static char scalar_kind(const struct mf_node *n);

static bool is_str_tag(const yaml_char_t *tag)
{
        return tag && (strcmp((const char *)tag, "tag:yaml.org,2002:str") == 0 ||
                       strcmp((const char *)tag, "!!str") == 0);
}

static int on_scalar(struct mf_ctx *c, const yaml_event_t *ev)
{
        const yaml_mark_t *mark = &ev->start_mark;
        struct mf_node *n;
        int r;

        if (ev->data.scalar.length > KC_MANIFEST_MAX_STRING)
                return kc__mf_fail(c, "line %zu, column %zu: string longer than %d bytes",
                                   mark->line + 1, mark->column + 1, KC_MANIFEST_MAX_STRING);
        r = count_nodes(c, 1, ev->data.scalar.length, mark);
        if (r < 0)
                return r;
        n = node_new(c, NODE_SCALAR, mark);
        if (!n)
                return -ENOMEM;
        n->value = malloc(ev->data.scalar.length + 1);
        if (!n->value)
                return -ENOMEM;
        memcpy(n->value, ev->data.scalar.value, ev->data.scalar.length);
        n->value[ev->data.scalar.length] = '\0';
        n->len = ev->data.scalar.length;
        n->bytes = n->len;
        n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                   !is_str_tag(ev->data.scalar.tag);
        /* Hash the resolved type, not the style: "v1" and v1 are one string. */
        hash_field(&c->b.hash, scalar_kind(n), n->value, n->len);
        if (ev->data.scalar.anchor) {
                r = anchor_add(c, (const char *)ev->data.scalar.anchor, n, mark);
                if (r < 0)
                        return r;
        }
        return attach(c, n);
}

static int on_start(struct mf_ctx *c, const yaml_event_t *ev, enum node_type type,
                    const yaml_char_t *anchor)
{
        const yaml_mark_t *mark = &ev->start_mark;
        struct builder *b = &c->b;
        struct mf_node *n;
        int r;

        if (b->depth == KC_MANIFEST_MAX_DEPTH)
                return kc__mf_fail(c, "line %zu, column %zu: nesting deeper than %d levels",
                                   mark->line + 1, mark->column + 1, KC_MANIFEST_MAX_DEPTH);
        r = count_nodes(c, 1, 0, mark);
        if (r < 0)
                return r;
        n = node_new(c, type, mark);
        if (!n)
                return -ENOMEM;
        hash_field(&b->hash, type == NODE_MAP ? '{' : '[', NULL, 0);
        b->stack_anchor[b->depth] = NULL;
        if (anchor) {
                b->stack_anchor[b->depth] = strdup((const char *)anchor);
                if (!b->stack_anchor[b->depth])
                        return -ENOMEM;
        }
        b->stack[b->depth++] = n;
        return 0;
}

static int on_end(struct mf_ctx *c)
{
        struct builder *b = &c->b;
        struct mf_node *n = b->stack[b->depth - 1];
        char *anchor = b->stack_anchor[b->depth - 1];
        yaml_mark_t mark = { .line = n->line - 1, .column = n->column - 1 };
        int r = 0;

        hash_field(&b->hash, n->type == NODE_MAP ? '}' : ']', NULL, 0);
        b->depth--;
        /*
         * The anchor names the node only once it is complete: an alias
         * inside its own anchored node is "unknown", so the tree is acyclic.
         */
        if (anchor)
                r = anchor_add(c, anchor, n, &mark);
        free(anchor);
        if (r < 0)
                return r;
        return attach(c, n);
}

static int on_alias(struct mf_ctx *c, const yaml_event_t *ev)
{
        const yaml_mark_t *mark = &ev->start_mark;
        const char *name = (const char *)ev->data.alias.anchor;
        struct mf_node *target = anchor_find(&c->b, name);
        int r;

        if (!target)
                return kc__mf_fail(c, "line %zu, column %zu: unknown anchor \"%.64s\"",
                                   mark->line + 1, mark->column + 1, name);
        /* The alias stands for a whole copy of its target: count that copy. */
        r = count_nodes(c, target->weight, target->bytes, mark);
        if (r < 0)
                return r;
        hash_field(&c->b.hash, '*', name, strlen(name));
        return attach(c, target);
}

/* The byte offset's 1-based line and column (libyaml gives reader errors as offsets). */
static void offset_position(const char *data, size_t len, size_t off, size_t *line, size_t *col)
{
        size_t i, l = 1, start = 0;

        for (i = 0; i < off && i < len; i++)
                if (data[i] == '\n') {
                        l++;
                        start = i + 1;
                }
        *line = l;
        *col = off - start + 1;
}

static int syntax_error(struct mf_ctx *c, const yaml_parser_t *p, const char *data, size_t len)
{
        size_t line, col;

        switch (p->error) {
        case YAML_MEMORY_ERROR:
                return -ENOMEM;
        case YAML_READER_ERROR:
                offset_position(data, len, p->problem_offset, &line, &col);
                if (p->problem_value >= 0)
                        return kc__mf_fail(c, "line %zu, column %zu: %s (#x%02X)", line, col,
                                           p->problem, (unsigned)p->problem_value);
                return kc__mf_fail(c, "line %zu, column %zu: %s", line, col, p->problem);
        default:
                if (p->context)
                        return kc__mf_fail(c,
                                           "line %zu, column %zu: %s (%s at line %zu, column %zu)",
                                           p->problem_mark.line + 1, p->problem_mark.column + 1,
                                           p->problem ? p->problem : "syntax error", p->context,
                                           p->context_mark.line + 1, p->context_mark.column + 1);
                return kc__mf_fail(c, "line %zu, column %zu: %s", p->problem_mark.line + 1,
                                   p->problem_mark.column + 1,
                                   p->problem ? p->problem : "syntax error");
        }
}

/* Parses the one document of @p data into c->b.root (NULL for an empty stream). */
static int build_tree(struct mf_ctx *c, const char *data, size_t len)
{
        yaml_parser_t parser;
        bool done = false;
        int documents = 0, r = 0;

        if (!yaml_parser_initialize(&parser))
                return -ENOMEM;
        yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
        yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
        while (!done && r >= 0) {
                yaml_event_t ev;

                if (!yaml_parser_parse(&parser, &ev)) {
                        r = syntax_error(c, &parser, data, len);
                        break;
                }
                switch (ev.type) {
                case YAML_STREAM_END_EVENT:
                        done = true;
                        break;
                case YAML_DOCUMENT_START_EVENT:
                        if (++documents > 1)
                                r = kc__mf_fail(
                                        c,
                                        "line %zu, column %zu: a manifest holds one document "
                                        "(found a second one)",
                                        ev.start_mark.line + 1, ev.start_mark.column + 1);
                        break;
                case YAML_SCALAR_EVENT:
                        r = on_scalar(c, &ev);
                        break;
                case YAML_SEQUENCE_START_EVENT:
                        r = on_start(c, &ev, NODE_SEQ, ev.data.sequence_start.anchor);
                        break;
                case YAML_MAPPING_START_EVENT:
                        r = on_start(c, &ev, NODE_MAP, ev.data.mapping_start.anchor);
                        break;
                case YAML_SEQUENCE_END_EVENT:
                case YAML_MAPPING_END_EVENT:
                        r = on_end(c);
                        break;
                case YAML_ALIAS_EVENT:
                        r = on_alias(c, &ev);
                        break;
                default:
                        break;
                }
                yaml_event_delete(&ev);
        }
        yaml_parser_delete(&parser);
        return r;
}

/* ------------------------------------------------------------------------ */
/* Field paths and typed access                                               */

void kc__mf_path_render(const struct mf_path *p, FILE *f)
{
        if (!p)
                return;
        kc__mf_path_render(p->up, f);
        if (p->field)
                fprintf(f, "%s%s", p->up ? "." : "", p->field);
        else if (p->key)
                fprintf(f, "[%.128s]", p->key);
        else
                fprintf(f, "[%zu]", p->index);
}

/* "<file>: <path>: <what>" */
int kc__mf_fail_path(struct mf_ctx *c, const struct mf_path *p, const char *fmt, ...)
{
        _cleanup_free_ char *path = NULL, *what = NULL;
        size_t n = 0;
        va_list ap;
        FILE *f;

        f = open_memstream(&path, &n);
        if (!f) {
                c->oom = true;
                return -ENOMEM;
        }
        kc__mf_path_render(p, f);
        if (fclose(f) != 0) {
                c->oom = true;
                return -ENOMEM;
        }
        va_start(ap, fmt);
        what = kc_strdup_vprintf(fmt, ap);
        va_end(ap);
        if (!what) {
                c->oom = true;
                return -ENOMEM;
        }
        return kc__mf_fail(c, "%s: %s", path, what);
}

/* A value as a message quotes it: at most 64 bytes, non-printable bytes escaped. */
const char *kc__mf_quote(char buf[static 300], const char *s, size_t len)
{
        size_t i, o = 0;

        buf[o++] = '"';
        for (i = 0; i < len && i < 64; i++) {
                unsigned char ch = (unsigned char)s[i];

                if (ch == '"' || ch == '\\') {
                        buf[o++] = '\\';
                        buf[o++] = (char)ch;
                } else if (ch < 0x20 || ch == 0x7f) {
                        o += (size_t)snprintf(buf + o, 5, "\\x%02x", ch);
                } else {
                        buf[o++] = (char)ch;
                }
        }
        if (len > 64) {
                memcpy(buf + o, "...", 3);
                o += 3;
        }
        buf[o++] = '"';
        buf[o] = '\0';
        return buf;
}

bool kc__mf_is_null(const struct mf_node *n)
{
        static const char *const nulls[] = { "", "~", "null", "Null", "NULL" };
        size_t i;

        if (!n)
                return true;
        if (n->type != NODE_SCALAR || !n->plain)
                return false;
        for (i = 0; i < KC_ELEMENTSOF(nulls); i++)
                if (strcmp(n->value, nulls[i]) == 0)
                        return true;
        return false;
}

/* YAML 1.1 booleans, as sigs.k8s.io/yaml (go-yaml v2) resolves them: 1 true, 0 false, -1 not. */
int kc__mf_plain_bool(const struct mf_node *n)
{
        static const char *const yes[] = { "y",  "Y",  "yes",  "Yes",  "YES", "on",
                                           "On", "ON", "true", "True", "TRUE" };
        static const char *const no[] = { "n",   "N",   "no",    "No",    "NO",   "off",
                                          "Off", "OFF", "false", "False", "FALSE" };
        size_t i;

        if (n->type != NODE_SCALAR || !n->plain)
                return -1;
        for (i = 0; i < KC_ELEMENTSOF(yes); i++)
                if (strcmp(n->value, yes[i]) == 0)
                        return 1;
        for (i = 0; i < KC_ELEMENTSOF(no); i++)
                if (strcmp(n->value, no[i]) == 0)
                        return 0;
        return -1;
}

static bool digits(const char **s, const char *set)
{
        const char *p = *s;

        while (**s && (strchr(set, **s) || **s == '_'))
                (*s)++;
        return *s > p;
}

/* Whether a plain scalar resolves to a number (int or float) in YAML 1.1. */
bool kc__mf_plain_number(const struct mf_node *n)
{
        const char *s = n->value;
        bool mantissa;

        if (n->type != NODE_SCALAR || !n->plain)
                return false;
        if (*s == '+' || *s == '-')
                s++;
        if (strcmp(s, ".inf") == 0 || strcmp(s, ".Inf") == 0 || strcmp(s, ".INF") == 0)
                return true;
        if (s == n->value &&
            (strcmp(s, ".nan") == 0 || strcmp(s, ".NaN") == 0 || strcmp(s, ".NAN") == 0))
                return true;
        if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
                s += 2;
                return digits(&s, "0123456789abcdefABCDEF") && !*s;
        }
        if (s[0] == '0' && (s[1] == 'b' || s[1] == 'o')) {
                s += 2;
                return digits(&s, s[-1] == 'b' ? "01" : "01234567") && !*s;
        }
        mantissa = digits(&s, "0123456789");
        if (*s == '.') {
                s++;
                mantissa = digits(&s, "0123456789") || mantissa;
        }
        if (!mantissa)
                return false;
        if (*s == 'e' || *s == 'E') {
                s++;
                if (*s == '+' || *s == '-')
                        s++;
                if (!digits(&s, "0123456789"))
                        return false;
        }
        return !*s;
}

/* A scalar's YAML 1.1 type: 'n'ull, 'b'oolean, number ('#') or 's'tring. */
static char scalar_kind(const struct mf_node *n)
{
        if (kc__mf_is_null(n))
                return 'n';
        if (kc__mf_plain_bool(n) >= 0)
                return 'b';
        return kc__mf_plain_number(n) ? '#' : 's';
}

/*
 * A string field. Null leaves *ret NULL (Go's zero value); a plain scalar
 * that YAML resolves to a boolean or a number is not a string.
 */
int kc__mf_get_string(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                      const char **ret)
{
        *ret = NULL;
        if (kc__mf_is_null(n))
                return 0;
        if (n->type != NODE_SCALAR || kc__mf_plain_bool(n) >= 0 || kc__mf_plain_number(n))
                return kc__mf_fail_path(c, p, "must be a string");
        if (strlen(n->value) != n->len)
                return kc__mf_fail_path(c, p, "must not contain NUL characters");
        *ret = n->value;
        return 0;
}

int kc__mf_get_bool(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n, bool *ret)
{
        int v;

        if (kc__mf_is_null(n))
                return 0;
        v = kc__mf_plain_bool(n);
        if (v < 0)
                return kc__mf_fail_path(c, p, "must be a boolean");
        *ret = v;
        return 0;
}

/* A non-negative decimal integer that fits int64; null leaves *ret alone. */
int kc__mf_get_count(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                     int64_t *ret)
{
        const char *s;
        int64_t v = 0;

        if (kc__mf_is_null(n))
                return 0;
        if (n->type != NODE_SCALAR || !n->plain)
                return kc__mf_fail_path(c, p, "must be a non-negative integer");
        s = n->value;
        if (*s == '+')
                s++;
        if (!*s)
                return kc__mf_fail_path(c, p, "must be a non-negative integer");
        for (; *s; s++) {
                if (*s < '0' || *s > '9' || v > (INT64_MAX - (*s - '0')) / 10)
                        return kc__mf_fail_path(c, p, "must be a non-negative integer");
                v = v * 10 + (*s - '0');
        }
        *ret = v;
        return 0;
}

int kc__mf_want_map(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n)
{
        if (n->type != NODE_MAP)
                return kc__mf_fail_path(c, p, "must be an object");
        return 0;
}

/*
 * Looks @p key up in mapping @p m: 0 with *ret NULL when absent. A known
 * key given twice is an error (a YAML parser keeps the last one, a JSON one
 * the first: refuse to guess).
 */
int kc__mf_map_get(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                   const char *key, const struct mf_node **ret)
{
        const struct mf_node *found = NULL;
        size_t i;

        for (i = 0; i + 1 < m->n; i += 2) {
                const struct mf_node *k = m->kids[i];

                if (k->type != NODE_SCALAR || strcmp(k->value, key) != 0 || k->len != strlen(key))
                        continue;
                if (found)
                        return kc__mf_fail_path(c, &(struct mf_path){ .up = p, .field = key },
                                                "duplicate key");
                found = m->kids[i + 1];
        }
        *ret = found;
        return 0;
}

bool kc__mf_has_merge_key(const struct mf_node *m)
{
        size_t i;

        for (i = 0; i + 1 < m->n; i += 2)
                if (m->kids[i]->type == NODE_SCALAR && m->kids[i]->plain &&
                    strcmp(m->kids[i]->value, "<<") == 0)
                        return true;
        return false;
}

/* Merge keys (<<) would silently drop fields since we ignore unknown keys: refuse them. */
int kc__mf_no_merge_keys(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m)
{
        if (kc__mf_has_merge_key(m))
                return kc__mf_fail_path(c, p, "merge keys (<<) are not supported");
        return 0;
}

/*
 * Looks up the field @p key of mapping @p m (NULL when absent, which reads
 * as null) and gives its path, @p p then @p key, for the typed getters:
 * kc__mf_field_string() and the like are kc__mf_get_string() and the like on a field.
 */
int kc__mf_field(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                 const char *key, struct mf_path *ret_path, const struct mf_node **ret)
{
        *ret_path = (struct mf_path){ .up = p, .field = key };
        return kc__mf_map_get(c, p, m, key, ret);
}

int kc__mf_field_string(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                        const char *key, const char **ret)
{
        const struct mf_node *n;
        struct mf_path fp;
        int r;

        r = kc__mf_field(c, p, m, key, &fp, &n);
        return r < 0 ? r : kc__mf_get_string(c, &fp, n, ret);
}

int kc__mf_field_bool(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                      const char *key, bool *ret)
{
        const struct mf_node *n;
        struct mf_path fp;
        int r;

        r = kc__mf_field(c, p, m, key, &fp, &n);
        return r < 0 ? r : kc__mf_get_bool(c, &fp, n, ret);
}

int kc__mf_field_count(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                       const char *key, int64_t *ret)
{
        const struct mf_node *n;
        struct mf_path fp;
        int r;

        r = kc__mf_field(c, p, m, key, &fp, &n);
        return r < 0 ? r : kc__mf_get_count(c, &fp, n, ret);
}

/* "unsupported value" for the field @p key of @p p, listing the @p supported values. */
int kc__mf_fail_unsupported(struct mf_ctx *c, const struct mf_path *p, const char *key,
                            const char *value, const char *supported)
{
        char q[300];

        return kc__mf_fail_path(c, &(struct mf_path){ .up = p, .field = key },
                                "unsupported value %s (supported: %s)",
                                kc__mf_quote(q, value, strlen(value)), supported);
}

/* ------------------------------------------------------------------------ */
/* Validation                                                                 */

/* RFC 1123 label (a container name, a namespace): [a-z0-9]([-a-z0-9]*[a-z0-9])?, <= 63. */
bool kc__mf_is_dns_label(const char *s)
{
        size_t i, n = strlen(s);

        if (n == 0 || n > 63)
                return false;
        for (i = 0; i < n; i++) {
                bool alnum = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9');

                if (!alnum && (s[i] != '-' || i == 0 || i == n - 1))
                        return false;
        }
        return true;
}

/* RFC 1123 subdomain (a pod name): dot-separated labels, <= 253 in all. */
bool kc__mf_is_dns_subdomain(const char *s)
{
        size_t n = strlen(s), i = 0;

        if (n == 0 || n > 253)
                return false;
        while (i < n) {
                size_t j = i;
                char label[64];

                while (j < n && s[j] != '.')
                        j++;
                if (j - i == 0 || j - i > 63)
                        return false;
                memcpy(label, s + i, j - i);
                label[j - i] = '\0';
                if (!kc__mf_is_dns_label(label))
                        return false;
                if (j == n)
                        break;
                i = j + 1;
                if (i == n)
                        return false; /* trailing dot */
        }
        return true;
}

bool kc__mf_has_outer_space(const char *s)
{
        size_t n = strlen(s);

        return n > 0 && (isspace((unsigned char)s[0]) || isspace((unsigned char)s[n - 1]));
}

/* A list of strings; null is empty. *ret is in the arena (NULL when empty). */
int kc__mf_get_strv(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                    const char ***ret, size_t *ret_n)
{
        const char **v;
        size_t i;
        int r;

        if (kc__mf_is_null(n))
                return 0;
        if (n->type != NODE_SEQ)
                return kc__mf_fail_path(c, p, "must be a list");
        if (n->n == 0)
                return 0;
        v = kc__mf_alloc(c, n->n, sizeof(*v));
        if (!v)
                return -ENOMEM;
        for (i = 0; i < n->n; i++) {
                r = kc__mf_get_string(c, &(struct mf_path){ .up = p, .index = i }, n->kids[i],
                                      &v[i]);
                if (r < 0)
                        return r;
                if (!v[i])
                        v[i] = ""; /* a null item decodes as "" */
        }
        *ret = v;
        *ret_n = n->n;
        return 0;
}

int kc__mf_field_strv(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                      const char *key, const char *const **ret, size_t *ret_n)
{
        const struct mf_node *n;
        struct mf_path fp;
        int r;

        r = kc__mf_field(c, p, m, key, &fp, &n);
        return r < 0 ? r : kc__mf_get_strv(c, &fp, n, (const char ***)ret, ret_n);
}

int kc__mf_label_cmp(const void *a, const void *b)
{
        return strcmp(((const struct kc_label *)a)->key, ((const struct kc_label *)b)->key);
}

/* A map of strings (labels, annotations), sorted by key; @p extra slots are left free. */
int kc__mf_get_string_map(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                          size_t extra, struct mf_labels *out)
{
        size_t i, m = 0;
        int r;

        if (!kc__mf_is_null(n)) {
                if (n->type != NODE_MAP)
                        return kc__mf_fail_path(c, p, "must be an object");
                r = kc__mf_no_merge_keys(c, p, n);
                if (r < 0)
                        return r;
                m = n->n / 2;
        }
        if (m + extra == 0)
                return 0;
        out->v = calloc(m + extra, sizeof(*out->v));
        if (!out->v)
                return -ENOMEM;
        for (i = 0; i < m; i++) {
                const struct mf_node *k = n->kids[2 * i];
                const struct mf_path kp = { .up = p,
                                            .key = k->type == NODE_SCALAR ? k->value : "?" };
                const char *v;

                if (k->type != NODE_SCALAR || kc__mf_is_null(k) || strlen(k->value) != k->len)
                        return kc__mf_fail_path(c, p, "keys must be non-empty strings");
                r = kc__mf_get_string(c, &kp, n->kids[2 * i + 1], &v);
                if (r < 0)
                        return r;
                out->v[out->n++] = (struct kc_label){ k->value, v ? v : "" };
        }
        qsort(out->v, out->n, sizeof(*out->v), kc__mf_label_cmp);
        for (i = 1; i < out->n; i++)
                if (strcmp(out->v[i - 1].key, out->v[i].key) == 0)
                        return kc__mf_fail_path(c,
                                                &(struct mf_path){ .up = p, .key = out->v[i].key },
                                                "duplicate key");
        return 0;
}

int kc__mf_field_string_map(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                            const char *key, size_t extra, struct mf_labels *out)
{
        const struct mf_node *n;
        struct mf_path fp;
        int r;

        r = kc__mf_field(c, p, m, key, &fp, &n);
        return r < 0 ? r : kc__mf_get_string_map(c, &fp, n, extra, out);
}

/* Drops the entry for @p key (which the source sets itself), keeping the order. */
static void labels_remove(struct mf_labels *l, const char *key)
{
        size_t i;

        for (i = 0; i < l->n; i++)
                if (strcmp(l->v[i].key, key) == 0) {
                        memmove(&l->v[i], &l->v[i + 1], (l->n - i - 1) * sizeof(*l->v));
                        l->n--;
                        return;
                }
}

/* RFC 3339 with nanoseconds, trailing zeros trimmed, UTC (Go's time.RFC3339Nano). */
static void format_rfc3339nano(int64_t ns, char buf[static 64])
{
        time_t sec = (time_t)(ns / KC_NSEC_PER_SEC);
        long frac = (long)(ns % KC_NSEC_PER_SEC);
        struct tm tm;
        size_t o;
        int width = 9;

        if (frac < 0) {
                frac += KC_NSEC_PER_SEC;
                sec--;
        }
        gmtime_r(&sec, &tm);
        o = strftime(buf, 64, "%Y-%m-%dT%H:%M:%S", &tm);
        if (frac) {
                while (frac % 10 == 0) {
                        frac /= 10;
                        width--;
                }
                o += (size_t)snprintf(buf + o, 64 - o, ".%0*ld", width, frac);
        }
        snprintf(buf + o, 64 - o, "Z");
}

static int check_constant(struct mf_ctx *c, const struct mf_node *root, const char *field,
                          const char *want)
{
        const struct mf_path p = { .field = field };
        const char *s;
        char q[300];
        int r;

        r = kc__mf_field_string(c, NULL, root, field, &s);
        if (r < 0)
                return r;
        if (!s || !*s)
                return kc__mf_fail_path(c, &p, "required value");
        if (strcmp(s, want) != 0)
                return kc__mf_fail_path(c, &p, "unsupported value %s (supported: \"%s\")",
                                        kc__mf_quote(q, s, strlen(s)), want);
        return 0;
}

struct parsed {
        struct mf_containers containers, init_containers;
        struct mf_labels labels, annotations;
        const char *meta_name, *ns, *uid; /* as metadata gives them (NULL: unset) */
        char *name;                       /* <metadata.name>-<node name> */
        char uid_hex[33];                 /* the content hash, when metadata.uid is unset */
        char seen[64];                    /* the config.seen annotation */
};

static void parsed_done(struct parsed *pp)
{
        free(pp->labels.v);
        free(pp->annotations.v);
        free(pp->name);
}

static int unique_names(struct mf_ctx *c, const struct parsed *pp)
{
        const struct mf_containers *sets[] = { &pp->init_containers, &pp->containers };
        const char *fields[] = { "initContainers", "containers" };
        const struct mf_path spec = { .field = "spec" };
        _cleanup_(kc_map_freep) struct kc_map *seen = NULL;
        size_t s, i;
        char q[300];
        int r;

        /*
         * Names are unique across init and app containers (validateContainers).
         * A hash set keeps this linear: a manifest may list ~20,000 containers.
         */
        r = kc_map_new(&seen);
        if (r >= 0)
                r = kc_map_reserve(seen, pp->init_containers.n + pp->containers.n);
        if (r < 0)
                return r;
        for (s = 0; s < 2; s++) {
                for (i = 0; i < sets[s]->n; i++) {
                        const char *name = sets[s]->v[i].name;
                        const struct mf_path list = { .up = &spec, .field = fields[s] };
                        const struct mf_path item = { .up = &list, .index = i };

                        if (kc_map_get(seen, name))
                                return kc__mf_fail_path(
                                        c, &(struct mf_path){ .up = &item, .field = "name" },
                                        "duplicate value %s", kc__mf_quote(q, name, strlen(name)));
                        r = kc_map_put(seen, name, (void *)name);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* A v1 Pod: an object whose apiVersion is v1 and whose kind is Pod. */
static int check_pod_object(struct mf_ctx *c, const struct mf_node *root)
{
        int r;

        if (root->type != NODE_MAP)
                return kc__mf_fail(c, "a manifest must be an object (a v1 Pod)");
        if (kc__mf_has_merge_key(root))
                return kc__mf_fail(c, "merge keys (<<) are not supported");
        r = check_constant(c, root, "apiVersion", "v1");
        if (r >= 0)
                r = check_constant(c, root, "kind", "Pod");
        if (r >= 0)
                r = kc__mf_check_fields(c, NULL, root, MF_POD);
        return r;
}

/* The top-level object named by @p p (metadata, spec): *ret NULL when absent or null. */
static int get_section(struct mf_ctx *c, const struct mf_node *root, const struct mf_path *p,
                       const struct mf_node **ret)
{
        const struct mf_node *n;
        int r;

        r = kc__mf_map_get(c, NULL, root, p->field, &n);
        if (r < 0)
                return r;
        if (kc__mf_is_null(n))
                n = NULL;
        if (n && (kc__mf_want_map(c, p, n) < 0 || kc__mf_no_merge_keys(c, p, n) < 0))
                return -EBADMSG;
        *ret = n;
        return 0;
}

/* metadata: name (required), namespace, uid, labels and annotations. */
static int parse_metadata(struct mf_ctx *c, const struct mf_node *root, struct parsed *pp)
{
        const struct mf_path p = { .field = "metadata" };
        const struct mf_node *meta;
        char q[300];
        int r;

        r = get_section(c, root, &p, &meta);
        if (r < 0)
                return r;
        if (meta) {
                r = kc__mf_check_fields(c, &p, meta, MF_OBJECT_META);
                if (r >= 0)
                        r = kc__mf_field_string(c, &p, meta, "name", &pp->meta_name);
                if (r >= 0)
                        r = kc__mf_field_string(c, &p, meta, "namespace", &pp->ns);
                if (r >= 0)
                        r = kc__mf_field_string(c, &p, meta, "uid", &pp->uid);
                if (r >= 0)
                        r = kc__mf_field_string_map(c, &p, meta, "labels", 0, &pp->labels);
                if (r >= 0)
                        r = kc__mf_field_string_map(c, &p, meta, "annotations", 3,
                                                    &pp->annotations);
        } else {
                /* No annotations given: room for the three the source sets. */
                r = kc__mf_get_string_map(c, NULL, NULL, 3, &pp->annotations);
        }
        if (r < 0)
                return r;
        if (!pp->meta_name || !*pp->meta_name)
                return kc__mf_fail_path(c, &(struct mf_path){ .up = &p, .field = "name" },
                                        "required value");
        if (pp->ns && *pp->ns && !kc__mf_is_dns_label(pp->ns))
                return kc__mf_fail_path(c, &(struct mf_path){ .up = &p, .field = "namespace" },
                                        "invalid value %s: must be a lowercase RFC 1123 label",
                                        kc__mf_quote(q, pp->ns, strlen(pp->ns)));
        return 0;
}

/* spec: the pod's settings into @p t, then its init and app containers. */
static int parse_spec(struct mf_ctx *c, const struct mf_node *root, struct kc_api_pod *t,
                      struct parsed *pp)
{
        const struct mf_path p = { .field = "spec" };
        const struct mf_node *spec;
        int r;

        r = get_section(c, root, &p, &spec);
        if (r >= 0)
                r = kc__mf_parse_pod_fields(c, &p, spec, t);
        if (r >= 0)
                r = kc__mf_parse_containers(c, &p, spec, true, t->host_network,
                                            &pp->init_containers);
        if (r >= 0)
                r = kc__mf_parse_containers(c, &p, spec, false, t->host_network, &pp->containers);
        if (r < 0)
                return r;
        if (pp->containers.n == 0)
                return kc__mf_fail_path(c, &(struct mf_path){ .up = &p, .field = "containers" },
                                        "required value");
        return unique_names(c, pp);
}

/*
 * Defaults (config/common.go applyDefaults, file.go, v1 defaulting): the
 * content UID, the name with the node's, and the source's annotations.
 */
static int apply_defaults(struct mf_ctx *c, const char *node_name, int64_t seen_ns,
                          struct parsed *pp)
{
        const struct mf_path meta_p = { .field = "metadata" };
        struct mf_labels *an = &pp->annotations;
        char q[300];
        size_t i;

        if (!pp->uid || !*pp->uid) {
                unsigned __int128 h = c->b.hash;

                hash_field(&h, 'h', "host:", 5);
                hash_field(&h, 'h', node_name, strlen(node_name));
                hash_field(&h, 'f', "file:", 5);
                hash_field(&h, 'f', c->file_name, strlen(c->file_name));
                snprintf(pp->uid_hex, sizeof(pp->uid_hex), "%016" PRIx64 "%016" PRIx64,
                         (uint64_t)(h >> 64), (uint64_t)h);
                pp->uid = pp->uid_hex;
        }
        if (asprintf(&pp->name, "%s-%s", pp->meta_name, node_name) < 0) {
                pp->name = NULL;
                return -ENOMEM;
        }
        for (i = strlen(pp->meta_name) + 1; pp->name[i]; i++)
                pp->name[i] = (char)tolower((unsigned char)pp->name[i]);
        if (!kc__mf_is_dns_subdomain(pp->name))
                return kc__mf_fail_path(
                        c, &(struct mf_path){ .up = &meta_p, .field = "name" },
                        "invalid value %s: with the node name, must be a lowercase RFC "
                        "1123 subdomain of at most 253 characters",
                        kc__mf_quote(q, pp->name, strlen(pp->name)));
        labels_remove(an, KC_ANNOTATION_CONFIG_HASH);
        labels_remove(an, KC_ANNOTATION_CONFIG_SOURCE);
        labels_remove(an, KC_ANNOTATION_CONFIG_SEEN);
        format_rfc3339nano(seen_ns, pp->seen);
        an->v[an->n++] = (struct kc_label){ KC_ANNOTATION_CONFIG_HASH, pp->uid };
        an->v[an->n++] = (struct kc_label){ KC_ANNOTATION_CONFIG_SEEN, pp->seen };
        an->v[an->n++] = (struct kc_label){ KC_ANNOTATION_CONFIG_SOURCE, KC_MANIFEST_SOURCE };
        qsort(an->v, an->n, sizeof(*an->v), kc__mf_label_cmp);
        return 0;
}

static int parse_pod(struct mf_ctx *c, const struct mf_node *root, const char *node_name,
                     int64_t seen_ns, struct kc_api_pod **ret)
{
        _cleanup_(parsed_done) struct parsed pp = { 0 };
        struct kc_api_pod t = {
                .source = KC_MANIFEST_SOURCE,
                .deletion_grace_s = -1,
                .termination_grace_s = 30, /* v1 DefaultTerminationGracePeriodSeconds */
                .phase = KC_POD_PHASE_PENDING,
                .static_pod = true,
                .creation_ts = seen_ns,
                .dns_policy = KC_DNS_CLUSTER_FIRST,
                .enable_service_links = KC_OPT_TRUE,
        };
        int r;

        r = check_pod_object(c, root);
        if (r >= 0)
                r = parse_metadata(c, root, &pp);
        if (r >= 0)
                r = parse_spec(c, root, &t, &pp);
        if (r >= 0)
                r = apply_defaults(c, node_name, seen_ns, &pp);
        if (r < 0)
                return r;

        t.uid = pp.uid;
        t.name = pp.name;
        t.namespace = pp.ns && *pp.ns ? pp.ns : "default";
        t.containers = pp.containers.v;
        t.n_containers = pp.containers.n;
        t.init_containers = pp.init_containers.v;
        t.n_init_containers = pp.init_containers.n;
        t.labels = pp.labels.v;
        t.n_labels = pp.labels.n;
        t.annotations = pp.annotations.v;
        t.n_annotations = pp.annotations.n;
        /* upstream applyDefaults: the file source's pods are bound to this node */
        t.node_name = node_name;
        r = kc__mf_check_references(c, &t);
        if (r < 0)
                return r;
        return kc_api_pod_new(&t, ret);
}

void *kc__mf_alloc(struct mf_ctx *c, size_t n, size_t size)
{
        void *p = NULL;

        if (n == 0)
                return NULL;
        if (size <= SIZE_MAX / n)
                p = kc_arena_alloc(c->arena, n * size);
        if (!p)
                c->oom = true;
        return p;
}

static void warning_done(struct kc_manifest_warning *w)
{
        free(w->field);
        free(w->why);
        free(w->message);
}

int kc__mf_warn(struct mf_ctx *c, const struct mf_path *p, const char *fmt, ...)
{
        struct kc_manifest_warning w = { 0 };
        size_t n = 0;
        va_list ap;
        FILE *f;

        if (!c->record_warnings)
                return 0;
        f = open_memstream(&w.field, &n);
        if (!f)
                goto oom;
        kc__mf_path_render(p, f);
        if (fclose(f) != 0)
                goto oom;
        va_start(ap, fmt);
        w.why = kc_strdup_vprintf(fmt, ap);
        va_end(ap);
        if (!w.why)
                goto oom;
        w.message = kc_strdup_printf("%s: %s: %s, ignored", c->file_name, w.field, w.why);
        if (!w.message || KC_ARRAY_GROW(c->warnings, c->cap_warnings, c->n_warnings + 1, 8) < 0)
                goto oom;
        c->warnings[c->n_warnings++] = w;
        return 0;
oom:
        warning_done(&w);
        c->oom = true;
        return -ENOMEM;
}

void kc_manifest_warnings_done(struct kc_manifest_warnings *w)
{
        size_t i;

        if (!w)
                return;
        for (i = 0; i < w->n; i++)
                warning_done(&w->v[i]);
        free(w->v);
        *w = (struct kc_manifest_warnings){ 0 };
}

int kc_manifest_parse(const char *data, size_t len, const char *file_name, const char *node_name,
                      int64_t seen_ns, struct kc_api_pod **ret, char **ret_err)
{
        return kc_manifest_parse_warn(data, len, file_name, node_name, seen_ns, ret, ret_err, NULL);
}

static void ctx_done(struct mf_ctx *c)
{
        builder_done(&c->b);
        kc_manifest_warnings_done(
                &(struct kc_manifest_warnings){ .v = c->warnings, .n = c->n_warnings });
        c->warnings = NULL;
        c->n_warnings = 0;
        c->arena = kc_arena_free(c->arena);
        free(c->err);
}

int kc_manifest_parse_warn(const char *data, size_t len, const char *file_name,
                           const char *node_name, int64_t seen_ns, struct kc_api_pod **ret,
                           char **ret_err, struct kc_manifest_warnings *ret_warnings)
{
        struct mf_ctx c = { .file_name = file_name,
                            .node_name = node_name,
                            .record_warnings = ret_warnings != NULL };
        struct kc_api_pod *pod = NULL;
        int r;

        if ((!data && len > 0) || !file_name || !node_name || !*node_name || !ret)
                return -EINVAL;
        c.b.hash = FNV128_OFFSET;
        r = kc_arena_new(&c.arena);
        if (r < 0)
                return r;
        if (len > KC_MANIFEST_MAX_SIZE)
                r = kc__mf_fail(&c, "manifest too large (%zu bytes; the limit is %d)", len,
                                KC_MANIFEST_MAX_SIZE);
        else
                r = build_tree(&c, data ? data : "", len);
        if (r >= 0 && !c.b.root)
                r = kc__mf_fail(&c, "empty manifest");
        if (r >= 0)
                r = parse_pod(&c, c.b.root, node_name, seen_ns, &pod);
        if (c.oom)
                r = -ENOMEM;
        if (r < 0) {
                if (r == -EBADMSG && ret_err)
                        *ret_err = TAKE_PTR(c.err);
                kc_api_pod_unref(pod);
                ctx_done(&c);
                return r;
        }
        *ret = pod;
        if (ret_warnings) {
                *ret_warnings = (struct kc_manifest_warnings){ .v = TAKE_PTR(c.warnings),
                                                               .n = c.n_warnings };
                c.n_warnings = 0;
        }
        ctx_done(&c);
        return 0;
}
