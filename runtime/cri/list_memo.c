/* SPDX-License-Identifier: Apache-2.0 */
/*
 * List memos (internal.h): ListPodSandbox / ListContainers responses decoded
 * item by item, skipping the items whose bytes the last response had.
 *
 * A relist lists every sandbox and container on the node, and between two
 * relists almost none of them change, yet protobuf-c decodes every field of
 * every item: about two thirds of a no-change relist over CRI at 10,000
 * pods (issue 18). The memo keeps the last response's bytes and a reference
 * to the last result's arena:
 *
 * - a response equal to the last one, byte for byte, or listing exactly
 *   the same items in another order, is answered with another reference
 *   to the last result, in the last order (nothing decoded or copied: a
 *   runtime's listing order means nothing, and containerd's changes on
 *   every call);
 * - two items are the same when their bytes are, or when they differ only
 *   in the order of their labels' and annotations' map entries: containerd
 *   1.6 writes those from Go maps, in another order on every call, so
 *   without this no item of its listings was ever found again (issue 18);
 * - otherwise the response's top-level fields are walked; each item (field
 *   1, a length-delimited message) that is the same as a last item
 *   (at the same position, as runtimes that list in a stable order give
 *   them, else the last item with the same id, field 1 of both PodSandbox
 *   and Container) is copied from the last result: one memcpy of its
 *   strings and labels and a pointer relocation. Other items are decoded
 *   by protobuf-c as before. A match is always a full comparison of the
 *   bytes (same_item()).
 *
 * Each result item's label arrays and strings lie in one "flat" block of its
 * arena, which is what makes the copy one memcpy. Results are shared
 * (kc_arena_ref): holders only read them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "core/arena.h"
#include "core/cleanup.h"
#include "core/map.h"
#include "internal.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"

/* The string fields and label arrays of one kind of item. */
struct item_kind {
        const char *method;
        size_t item_size;
        size_t str_off[8];
        size_t n_str;
        size_t labels_off[2], n_labels_off[2]; /* labels, annotations */
        uint32_t map_field[2];                 /* their field numbers on the wire */
        int (*decode)(struct kc_cri_wire_dec *d, const uint8_t *p, size_t len, void *item);
};

static int sandbox_decode(struct kc_cri_wire_dec *d, const uint8_t *p, size_t len, void *item)
{
        return kc__cri_wire_pod_sandbox(d, p, len, item);
}

static int container_decode(struct kc_cri_wire_dec *d, const uint8_t *p, size_t len, void *item)
{
        return kc__cri_wire_container(d, p, len, item);
}

/* One item of the last response: its bytes in m->bytes and its flat block. */
struct memo_item {
        uint32_t off, len;
        const char *flat;
        size_t flat_len;
        uint64_t token; /* the item's listing token */
};

struct kc_cri_list_memo {
        pthread_mutex_t lock;
        const struct item_kind *kind;
        /* The last result: a reference to its arena (NULL before the first call). */
        struct kc_arena *arena;
        char *items;
        size_t n;
        uint64_t *tokens;       /* n of them, in arena */
        struct memo_item *meta; /* n of them */
        size_t cap_meta;
        uint8_t *bytes; /* the last response */
        size_t len, cap_bytes;
        struct memo_item *next_meta; /* being built */
        size_t cap_next_meta;
        uint32_t *seen; /* per last item: the permutation check's stamp when matched */
        uint32_t seen_stamp;
        size_t cap_seen;
        uint32_t *index; /* item id -> last item index + 1, open addressing; built on demand */
        size_t index_size;
        bool index_built;
        size_t decoded; /* items decoded (not copied) by the last call */
};

#define SB(f) offsetof(struct kc_pod_sandbox, f)
#define CT(f) offsetof(struct kc_cri_container, f)

/* A listed sandbox never has additional_ips (a CRI PodSandbox item has no network status). */
static const struct item_kind kinds[] = {
        [KC_CRI_LIST_POD_SANDBOX] = {
                .method = "ListPodSandbox",
                .item_size = sizeof(struct kc_pod_sandbox),
                .str_off = { SB(id), SB(metadata.name), SB(metadata.uid), SB(metadata.namespace),
                             SB(ip) },
                .n_str = 5,
                .labels_off = { SB(labels), SB(annotations) },
                .n_labels_off = { SB(n_labels), SB(n_annotations) },
                .map_field = { 5, 6 },
                .decode = sandbox_decode,
        },
        [KC_CRI_LIST_CONTAINERS] = {
                .method = "ListContainers",
                .item_size = sizeof(struct kc_cri_container),
                .str_off = { CT(id), CT(pod_sandbox_id), CT(metadata.name), CT(image),
                             CT(image_ref), CT(reason), CT(message) },
                .n_str = 7,
                .labels_off = { CT(labels), CT(annotations) },
                .n_labels_off = { CT(n_labels), CT(n_annotations) },
                .map_field = { 8, 9 },
                .decode = container_decode,
        },
};

int kc__cri_list_memo_new(enum kc_cri_list_kind kind, struct kc_cri_list_memo **ret)
{
        struct kc_cri_list_memo *m;

        if ((size_t)kind >= sizeof(kinds) / sizeof(kinds[0]) || !ret)
                return -EINVAL;
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        pthread_mutex_init(&m->lock, NULL);
        m->kind = &kinds[kind];
        *ret = m;
        return 0;
}

struct kc_cri_list_memo *kc__cri_list_memo_free(struct kc_cri_list_memo *m)
{
        if (!m)
                return NULL;
        kc_arena_free(m->arena);
        free(m->meta);
        free(m->next_meta);
        free(m->bytes);
        free(m->index);
        free(m->seen);
        pthread_mutex_destroy(&m->lock);
        free(m);
        return NULL;
}

size_t kc__cri_list_memo_size(struct kc_cri_list_memo *m)
{
        size_t n;

        pthread_mutex_lock(&m->lock);
        n = m->n;
        pthread_mutex_unlock(&m->lock);
        return n;
}

size_t kc__cri_list_memo_decoded(struct kc_cri_list_memo *m)
{
        size_t n;

        pthread_mutex_lock(&m->lock);
        n = m->decoded;
        pthread_mutex_unlock(&m->lock);
        return n;
}

static int grow(void **p, size_t *cap, size_t n, size_t elem)
{
        void *q;

        if (n <= *cap)
                return 0;
        if (n > SIZE_MAX / 2 / elem)
                return -ENOMEM;
        q = realloc(*p, 2 * n * elem);
        if (!q)
                return -ENOMEM;
        *p = q;
        *cap = 2 * n;
        return 0;
}

/* ------------------------------------------------------------------------ */
/* Flat copies of an item: its label arrays and strings in one block          */

#define FIELD(item, off) ((void *)((char *)(item) + (off)))

static size_t align8(size_t n)
{
        return (n + 7) & ~(size_t)7;
}

static size_t flat_size(const struct item_kind *k, const void *item)
{
        size_t n = 0, i, j;

        for (j = 0; j < 2; j++) {
                const struct kc_label *l = *(const struct kc_label **)FIELD(item, k->labels_off[j]);
                size_t nl = *(const size_t *)FIELD(item, k->n_labels_off[j]);

                n += nl * sizeof(*l);
                for (i = 0; i < nl; i++)
                        n += strlen(l[i].key) + strlen(l[i].value) + 2;
        }
        for (i = 0; i < k->n_str; i++) {
                const char *s = *(const char **)FIELD(item, k->str_off[i]);

                if (s)
                        n += strlen(s) + 1;
        }
        return align8(n);
}

static char *put_str(char **pos, const char *s)
{
        size_t n = strlen(s) + 1;
        char *d = *pos;

        memcpy(d, s, n);
        *pos += n;
        return d;
}

/* Copies what @item points to into @flat (flat_size() bytes); @item then points there. */
static void flatten(const struct item_kind *k, void *item, char *flat)
{
        char *strs = flat;
        size_t i, j;

        for (j = 0; j < 2; j++)
                strs += *(const size_t *)FIELD(item, k->n_labels_off[j]) * sizeof(struct kc_label);
        for (j = 0; j < 2; j++) {
                const struct kc_label **pl = FIELD(item, k->labels_off[j]);
                size_t nl = *(const size_t *)FIELD(item, k->n_labels_off[j]);
                struct kc_label *l = nl ? (struct kc_label *)flat : NULL;

                for (i = 0; i < nl; i++)
                        l[i] = (struct kc_label){ put_str(&strs, (*pl)[i].key),
                                                  put_str(&strs, (*pl)[i].value) };
                flat += nl * sizeof(struct kc_label);
                *pl = l;
        }
        for (i = 0; i < k->n_str; i++) {
                const char **ps = FIELD(item, k->str_off[i]);

                if (*ps)
                        *ps = put_str(&strs, *ps);
        }
}

/* @p moved from the block at @from to the one at @to. */
static const char *reloc(const char *p, const char *from, char *to)
{
        return p ? to + (p - from) : NULL;
}

/* Copies @src (pointing into @src_flat) into @dst, pointing into @flat, a copy of @src_flat. */
static void copy_item(const struct item_kind *k, const void *src, const char *src_flat,
                      size_t flat_len, void *dst, char *flat)
{
        size_t i, j;

        if (flat_len)
                memcpy(flat, src_flat, flat_len);
        memcpy(dst, src, k->item_size);
        for (j = 0; j < 2; j++) {
                const struct kc_label **pl = FIELD(dst, k->labels_off[j]);
                size_t nl = *(const size_t *)FIELD(dst, k->n_labels_off[j]);
                struct kc_label *l = (struct kc_label *)reloc((const char *)*pl, src_flat, flat);

                for (i = 0; i < nl; i++) {
                        l[i].key = reloc(l[i].key, src_flat, flat);
                        l[i].value = reloc(l[i].value, src_flat, flat);
                }
                *pl = l;
        }
        for (i = 0; i < k->n_str; i++) {
                const char **ps = FIELD(dst, k->str_off[i]);

                *ps = reloc(*ps, src_flat, flat);
        }
}

/* ------------------------------------------------------------------------ */
/* The wire walk                                                               */

/*
 * The next occurrence of field 1 (the items) in [*p, end): *ret_item and
 * *ret_len; other fields are skipped as protobuf-c skips unknown ones (a
 * list response has no other). Returns 1 with an item, 0 at the end,
 * -EPROTO on malformed bytes.
 */
static int next_item(const uint8_t **p, const uint8_t *end, const uint8_t **ret_item,
                     size_t *ret_len)
{
        struct kc_cri_wire w = { *p, end };
        struct kc_cri_wire_field f;
        int r;

        while ((r = kc__cri_wire_next(&w, &f)) > 0) {
                *p = w.p;
                if (f.num != 1)
                        continue;
                if (f.wt != 2)
                        return -EPROTO;
                *ret_item = f.data;
                *ret_len = f.len;
                return 1;
        }
        return r;
}

/* The id of an item: its field 1 when that comes first, as every encoder writes it. */
static bool item_id(const uint8_t *p, size_t len, const uint8_t **ret, size_t *ret_len)
{
        struct kc_cri_wire w = { p, p + len };
        struct kc_cri_wire_field f;

        if (kc__cri_wire_next(&w, &f) <= 0 || f.num != 1 || f.wt != 2)
                return false;
        *ret = f.data;
        *ret_len = f.len;
        return true;
}

static bool same_id(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
        const uint8_t *ia, *ib;
        size_t la, lb;

        return item_id(a, alen, &ia, &la) && item_id(b, blen, &ib, &lb) && la == lb &&
               memcmp(ia, ib, la) == 0;
}

/* Indexes the last response's items by id; -ENOMEM. */
static int index_build(struct kc_cri_list_memo *m)
{
        size_t size = 16, i, j;
        const uint8_t *id;
        size_t id_len;
        uint32_t *t;

        while (size < 2 * m->n)
                size *= 2;
        t = calloc(size, sizeof(*t));
        if (!t)
                return -ENOMEM;
        for (i = 0; i < m->n; i++) {
                if (!item_id(m->bytes + m->meta[i].off, m->meta[i].len, &id, &id_len))
                        continue;
                for (j = kc_hash_bytes(id, id_len) & (size - 1); t[j]; j = (j + 1) & (size - 1))
                        ;
                t[j] = (uint32_t)i + 1;
        }
        free(m->index);
        m->index = t;
        m->index_size = size;
        m->index_built = true;
        return 0;
}

/* One map entry of an item (a label or an annotation): its field and bytes. */
struct map_entry {
        uint32_t num;
        uint32_t len;
        const uint8_t *data;
};

/* Map entries compared as a set per item; an item with more is only found byte for byte. */
#define MAP_ENTRIES_MAX 64

/*
 * The next field of @w that is not a map entry of @k (1, 0 at the end, or
 * -EPROTO); the map entries passed go to @e (*n of them, -E2BIG past
 * MAP_ENTRIES_MAX).
 */
static int next_plain(const struct item_kind *k, struct kc_cri_wire *w, struct kc_cri_wire_field *f,
                      struct map_entry *e, size_t *n)
{
        int r;

        while ((r = kc__cri_wire_next(w, f)) > 0) {
                if (f->wt != 2 || (f->num != k->map_field[0] && f->num != k->map_field[1]))
                        return 1;
                if (*n == MAP_ENTRIES_MAX)
                        return -E2BIG;
                e[(*n)++] = (struct map_entry){ f->num, (uint32_t)f->len, f->data };
        }
        return r;
}

/* Does entry @i of @e have the key of an earlier entry of the same map? */
static bool key_seen(const struct map_entry *e, size_t i)
{
        const uint8_t *key, *other;
        size_t len, other_len, j;

        if (!item_id(e[i].data, e[i].len, &key, &len))
                return true; /* no key first: not worth understanding */
        for (j = 0; j < i; j++)
                if (e[j].num == e[i].num && item_id(e[j].data, e[j].len, &other, &other_len) &&
                    other_len == len && memcmp(other, key, len) == 0)
                        return true;
        return false;
}

/*
 * Do the entries @a and @b (@n each) hold the same maps? Each entry of @a
 * must have its own equal entry in @b, and no key may come twice in a map
 * (decoded, the later one of two would depend on the order).
 */
static bool same_maps(const struct map_entry *a, const struct map_entry *b, size_t n)
{
        uint64_t used = 0;
        size_t i, j, t;

        for (i = 0; i < n; i++) {
                if (key_seen(a, i))
                        return false;
                for (t = 0; t < n; t++) {
                        j = (i + t) % n; /* the same position first */
                        if (!(used & (UINT64_C(1) << j)) && b[j].num == a[i].num &&
                            b[j].len == a[i].len && memcmp(b[j].data, a[i].data, a[i].len) == 0)
                                break;
                }
                if (t == n)
                        return false;
                used |= UINT64_C(1) << j;
        }
        return true;
}

/*
 * Are items @a and @b (@len bytes each, different bytes) the same item with
 * its map entries in another order? Every other field must be equal and
 * in the same order.
 */
static bool same_but_map_order(const struct item_kind *k, const uint8_t *a, const uint8_t *b,
                               size_t len)
{
        struct map_entry ea[MAP_ENTRIES_MAX], eb[MAP_ENTRIES_MAX];
        struct kc_cri_wire wa = { a, a + len }, wb = { b, b + len };
        struct kc_cri_wire_field fa, fb;
        size_t na = 0, nb = 0;
        int ra, rb;

        for (;;) {
                ra = next_plain(k, &wa, &fa, ea, &na);
                rb = next_plain(k, &wb, &fb, eb, &nb);
                if (ra <= 0 || rb <= 0)
                        break;
                if (fa.num != fb.num || fa.wt != fb.wt || fa.raw_len != fb.raw_len ||
                    memcmp(fa.raw, fb.raw, fa.raw_len) != 0)
                        return false;
        }
        return ra == 0 && rb == 0 && na == nb && na > 0 && same_maps(ea, eb, na);
}

/* Is the item @p (@len) the one in @m->bytes at @last? */
static bool same_item(const struct kc_cri_list_memo *m, const struct memo_item *last,
                      const uint8_t *p, size_t len)
{
        const uint8_t *q = m->bytes + last->off;

        return last->len == len &&
               (memcmp(q, p, len) == 0 || same_but_map_order(m->kind, q, p, len));
}

/*
 * The last item that is @p (@len), the @i-th of the new response, by same_item():
 * its index, or -1 (none, or -ENOMEM building the index).
 */
static ssize_t find_last(struct kc_cri_list_memo *m, size_t i, const uint8_t *p, size_t len)
{
        const struct memo_item *last = i < m->n ? &m->meta[i] : NULL;
        const uint8_t *id;
        size_t id_len, j;

        if (last && same_item(m, last, p, len))
                return (ssize_t)i;
        /* The same object, changed: nothing to find elsewhere. */
        if ((last && same_id(m->bytes + last->off, last->len, p, len)) ||
            !item_id(p, len, &id, &id_len) || m->n == 0)
                return -1;
        if (!m->index_built && index_build(m) < 0)
                return -1;
        for (j = kc_hash_bytes(id, id_len) & (m->index_size - 1); m->index[j];
             j = (j + 1) & (m->index_size - 1)) {
                const struct memo_item *c = &m->meta[m->index[j] - 1];

                if (same_item(m, c, p, len))
                        return (ssize_t)m->index[j] - 1;
        }
        return -1;
}

/*
 * The tokens of decoded items (the list results' tokens), one counter for
 * every memo: a copy of an item (copy_last()) keeps its token, so the
 * runtime manager knows an unchanged item without comparing its strings
 * (issue 18: the copies are elsewhere each time).
 */
static _Atomic uint64_t last_token;

/* Decodes one item into @dst; its strings and labels go to a flat block of @a. */
static int decode_item(const struct item_kind *k, struct kc_arena *a, struct kc_cri_wire_dec *tmp,
                       const uint8_t *p, size_t len, void *dst, struct memo_item *meta,
                       struct kc_runtime_error *err)
{
        char *flat = NULL;
        int r;

        r = k->decode(tmp, p, len, dst);
        if (r == -EPROTO)
                return kc_runtime_error_set(err, r, KC_RUNTIME_INTERNAL,
                                            "failed to decode %s response", k->method);
        if (r < 0)
                return r;
        meta->flat_len = flat_size(k, dst);
        if (meta->flat_len && !(flat = kc_arena_alloc(a, meta->flat_len)))
                return -ENOMEM;
        flatten(k, dst, flat);
        meta->flat = flat;
        meta->token = atomic_fetch_add_explicit(&last_token, 1, memory_order_relaxed) + 1;
        return 0;
}

/* Copies the last result's item @j into @dst, its flat block into @a. */
static int copy_last(struct kc_cri_list_memo *m, struct kc_arena *a, size_t j, void *dst,
                     struct memo_item *meta)
{
        const struct memo_item *src = &m->meta[j];
        char *flat = NULL;

        /* copy_item() writes all of it. */
        if (src->flat_len && !(flat = kc_arena_alloc_uninit(a, src->flat_len)))
                return -ENOMEM;
        copy_item(m->kind, m->items + j * m->kind->item_size, src->flat, src->flat_len, dst, flat);
        meta->flat = flat;
        meta->flat_len = src->flat_len;
        meta->token = src->token;
        return 0;
}

/*
 * Room for item @i in *items (capacity *cap, in @a). The first array has
 * room for @hint items (the last response's count and some), so that a
 * listing of about the last one's size is never copied; then it doubles.
 */
static int items_reserve(struct kc_arena *a, size_t item_size, size_t hint, size_t i, char **items,
                         size_t *cap)
{
        size_t want = *cap == 0 ? hint : 2 * *cap;
        char *bigger;

        if (i < *cap)
                return 0;
        if (want > SIZE_MAX / 2 / item_size)
                return -ENOMEM;
        /* Items are written one by one before the result is read; the rest is never read. */
        bigger = kc_arena_alloc_uninit(a, want * item_size);
        if (!bigger)
                return -ENOMEM;
        if (*items)
                memcpy(bigger, *items, *cap * item_size);
        *items = bigger;
        *cap = want;
        return 0;
}

/* Walks the response into @a: *ret_items, their tokens and *ret_n; next_meta describes them. */
static int walk(struct kc_cri_list_memo *m, const uint8_t *buf, size_t len, struct kc_arena *a,
                char **ret_items, uint64_t **ret_tokens, size_t *ret_n,
                struct kc_runtime_error *err)
{
        const struct item_kind *k = m->kind;
        _cleanup_(kc_arena_freep) struct kc_arena *tmp = NULL;
        struct kc_cri_wire_dec d;
        const uint8_t *p = buf, *end = buf + len, *item;
        size_t i, ilen, cap = 0;
        uint64_t *tokens = NULL;
        char *items = NULL;
        ssize_t j;
        int r;

        if (kc_arena_new(&tmp) < 0)
                return -ENOMEM;
        d = (struct kc_cri_wire_dec){ .a = tmp };
        m->decoded = 0;
        for (i = 0; (r = next_item(&p, end, &item, &ilen)) > 0; i++) {
                char *dst;

                if (ilen > UINT32_MAX || (size_t)(item - buf) > UINT32_MAX ||
                    items_reserve(a, k->item_size, m->n + m->n / 16 + 16, i, &items, &cap) < 0 ||
                    grow((void **)&m->next_meta, &m->cap_next_meta, i + 1, sizeof(*m->next_meta)) <
                            0)
                        return -ENOMEM;
                dst = items + i * k->item_size;
                m->next_meta[i] =
                        (struct memo_item){ .off = (uint32_t)(item - buf), .len = (uint32_t)ilen };
                j = find_last(m, i, item, ilen);
                if (j >= 0) {
                        r = copy_last(m, a, (size_t)j, dst, &m->next_meta[i]);
                } else {
                        r = decode_item(k, a, &d, item, ilen, dst, &m->next_meta[i], err);
                        m->decoded++;
                }
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return kc_runtime_error_set(err, r, KC_RUNTIME_INTERNAL,
                                            "failed to decode %s response", k->method);
        if (i > 0 && !(tokens = kc_arena_alloc(a, i * sizeof(*tokens))))
                return -ENOMEM;
        for (j = 0; j < (ssize_t)i; j++)
                tokens[j] = m->next_meta[j].token;
        *ret_items = items;
        *ret_tokens = tokens;
        *ret_n = i;
        return 0;
}

/* Makes the result in @a (holding @items and @tokens) the last one. */
static int remember(struct kc_cri_list_memo *m, const uint8_t *buf, size_t len, struct kc_arena *a,
                    char *items, uint64_t *tokens, size_t n)
{
        struct memo_item *swap;
        size_t cap;

        if (grow((void **)&m->bytes, &m->cap_bytes, len + 1, 1) < 0)
                return -ENOMEM;
        memcpy(m->bytes, buf, len);
        m->len = len;
        swap = m->meta;
        cap = m->cap_meta;
        m->meta = m->next_meta;
        m->cap_meta = m->cap_next_meta;
        m->next_meta = swap;
        m->cap_next_meta = cap;
        kc_arena_free(m->arena);
        m->arena = kc_arena_ref(a);
        m->items = items;
        m->tokens = tokens;
        m->n = n;
        m->index_built = false;
        return 0;
}

/*
 * Does @buf list exactly the last response's items, each once, in another
 * order? (containerd lists from Go maps: its order changes every call.)
 * Only worth asking when the lengths are equal, as they then are.
 */
static bool is_permutation(struct kc_cri_list_memo *m, const uint8_t *buf, size_t len)
{
        const uint8_t *p = buf, *end = buf + len, *item;
        size_t i, ilen;
        ssize_t j;
        int r;

        if (!m->arena || len != m->len || m->n == 0)
                return false;
        if (m->cap_seen < m->n) {
                free(m->seen);
                m->cap_seen = 0;
                if (!(m->seen = calloc(m->n, sizeof(*m->seen))))
                        return false;
                m->cap_seen = m->n;
                m->seen_stamp = 0;
        }
        if (++m->seen_stamp == 0) { /* wrapped: forget the old stamps */
                memset(m->seen, 0, m->n * sizeof(*m->seen));
                m->seen_stamp = 1;
        }
        for (i = 0; (r = next_item(&p, end, &item, &ilen)) > 0; i++) {
                j = i < m->n ? find_last(m, i, item, ilen) : -1;
                if (j < 0 || m->seen[j] == m->seen_stamp)
                        return false;
                m->seen[j] = m->seen_stamp;
        }
        return r == 0 && i == m->n;
}

/* A list result as the memo hands it out. */
struct memo_result {
        void *items;
        size_t n;
        const uint64_t *tokens;
        struct kc_arena *arena;
};

static int memo_unpack_locked(struct kc_cri_list_memo *m, const uint8_t *buf, size_t len,
                              struct memo_result *ret, struct kc_runtime_error *err)
{
        static const uint8_t empty[1];
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        uint64_t *tokens = NULL;
        char *items = NULL;
        size_t n = 0;
        int r;

        if (!buf) {
                buf = empty; /* no pointer arithmetic or memcmp on NULL */
                len = 0;
        }
        if ((m->arena && len == m->len && memcmp(buf, m->bytes, len) == 0) ||
            is_permutation(m, buf, len)) {
                m->decoded = 0;
                *ret = (struct memo_result){
                        .items = m->n ? m->items : NULL,
                        .n = m->n,
                        .tokens = m->n ? m->tokens : NULL,
                        .arena = kc_arena_ref(m->arena),
                };
                return 0;
        }
        if (kc_arena_new(&a) < 0)
                return kc_runtime_error_set(err, -ENOMEM, KC_RUNTIME_INTERNAL, "out of memory");
        r = walk(m, buf, len, a, &items, &tokens, &n, err);
        if (r == -ENOMEM || (r >= 0 && remember(m, buf, len, a, items, tokens, n) < 0))
                return kc_runtime_error_set(err, -ENOMEM, KC_RUNTIME_INTERNAL, "out of memory");
        if (r < 0)
                return r;
        *ret = (struct memo_result){
                .items = n ? items : NULL,
                .n = n,
                .tokens = n ? tokens : NULL,
                .arena = TAKE_PTR(a),
        };
        return 0;
}

/* The locked call for a memo of kind @kind. */
static int memo_unpack(struct kc_cri_list_memo *m, enum kc_cri_list_kind kind, const uint8_t *buf,
                       size_t len, struct memo_result *ret, struct kc_runtime_error *err)
{
        int r;

        if (!m || m->kind != &kinds[kind])
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INTERNAL, "invalid memo");
        pthread_mutex_lock(&m->lock);
        r = memo_unpack_locked(m, buf, len, ret, err);
        pthread_mutex_unlock(&m->lock);
        return r;
}

int kc__cri_unpack_list_pod_sandbox_memo(struct kc_cri_list_memo *m, const uint8_t *buf, size_t len,
                                         struct kc_pod_sandbox_list *ret,
                                         struct kc_runtime_error *err)
{
        struct memo_result res;
        int r = memo_unpack(m, KC_CRI_LIST_POD_SANDBOX, buf, len, &res, err);

        if (r < 0)
                return r;
        *ret = (struct kc_pod_sandbox_list){
                .items = res.items, .n = res.n, .arena = res.arena, .tokens = res.tokens
        };
        return 0;
}

int kc__cri_unpack_list_containers_memo(struct kc_cri_list_memo *m, const uint8_t *buf, size_t len,
                                        struct kc_container_list *ret, struct kc_runtime_error *err)
{
        struct memo_result res;
        int r = memo_unpack(m, KC_CRI_LIST_CONTAINERS, buf, len, &res, err);

        if (r < 0)
                return r;
        *ret = (struct kc_container_list){
                .items = res.items, .n = res.n, .arena = res.arena, .tokens = res.tokens
        };
        return 0;
}
