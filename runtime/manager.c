/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The runtime manager (upstream kubeGenericRuntimeManager): the
 * kubecontainer-level GetPods / GetPodStatus on top of any CRI-shaped
 * kc_runtime_service.
 *
 * GetPods runs once per relist over every pod on the node, so it avoids
 * per-string allocations: the CRI results stay in their arenas, grouping
 * works on indices, and each pod is built with one kc_pod_new().
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/*
 * The pod reuse cache: UID -> the kc_pod this manager returned last for it,
 * one table per value of GetPods' `all`. kc_pod objects are immutable, so
 * when a pod's freshly listed sandboxes and containers (and the fields taken
 * from them) equal the cached pod's, returning another reference to the
 * cached pod is indistinguishable from building a new one. Every listing is
 * still read in full and compared field by field: nothing is assumed about
 * the service returning the same memory twice (a CRI client never does).
 *
 * Open addressing with linear probing; a slot's key is its pod's id. A slot
 * remembers the last call (epoch) that listed its UID; after a call, slots
 * it did not list are dropped and their pods unref'd.
 */
struct pc_slot {
        const char *uid;    /* NULL: empty. Points into pod. */
        uint64_t hash;
        struct kc_pod *pod;
        uint32_t epoch;     /* the last call that listed this UID */
};

struct pod_cache {
        struct pc_slot *slots; /* NULL until the first call */
        size_t mask;           /* number of slots - 1 */
        size_t size;
        uint32_t epoch;
};

/*
 * The per-call grouping table: pod UID (pointing into the listing) -> group.
 * Sized from the previous call's pod count and cleared at the start of each
 * call; small slots, so it stays in cache while the listing streams by.
 */
struct group_slot {
        const char *uid; /* NULL: empty */
        uint32_t hash_hi; /* the upper half of the hash (the lower picks the slot) */
        uint32_t group;
};

struct group_table {
        struct group_slot *slots;
        size_t mask;
};

/* An item's pod UID (or "") and its hash. */
struct item_key {
        const char *uid;
        uint64_t hash;
};

/* One pod being assembled: counts first, then slots in the shared arrays. */
struct group {
        const char *uid; /* in the listing */
        const char *name;
        const char *namespace;
        int64_t created_at;
        uint64_t hash;
        uint32_t n_sandboxes, n_containers;
        uint32_t sb_off, c_off; /* where its entries start in sb_perm / c_perm */
        bool has_sandbox;
};

struct sort_key {
        int64_t created_at;
        uint32_t idx; /* group index = order of appearance; breaks CreatedAt ties */
};

struct kc_runtime_manager {
        struct kc_runtime_service svc;
        struct kc_clock *clock;

        /* GetPods state, reused across calls. get_pods may run on several threads. */
        pthread_mutex_t lock;
        struct pod_cache cache[2]; /* [all] */
        struct group_table gt;
        struct group *groups;
        size_t cap_groups;
        size_t n_groups_hint; /* the previous call's pod count: sizes the grouping table */
        struct item_key *keys; /* sandboxes, then containers */
        size_t cap_keys;
        uint32_t *item_group; /* item (same numbering) -> group */
        size_t cap_item_group;
        uint32_t *sb_perm, *c_perm; /* items laid out group by group, in listing order */
        size_t cap_sb_perm, cap_c_perm;
        struct sort_key *order;
        size_t cap_order;
        struct kc_container *tmp; /* one pod's entries while building it */
        size_t cap_tmp;
};

static void pod_cache_done(struct pod_cache *t)
{
        size_t i;

        for (i = 0; t->slots && i <= t->mask; i++)
                kc_pod_unref(t->slots[i].pod);
        free(t->slots);
        *t = (struct pod_cache){ 0 };
}

int kc_runtime_manager_new(struct kc_runtime_service svc, struct kc_clock *clock,
                           struct kc_runtime_manager **ret)
{
        struct kc_runtime_manager *m;

        if (!svc.ops || !ret)
                return -EINVAL;
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->svc = svc;
        m->clock = clock;
        pthread_mutex_init(&m->lock, NULL);
        *ret = m;
        return 0;
}

struct kc_runtime_manager *kc_runtime_manager_free(struct kc_runtime_manager *m)
{
        if (!m)
                return NULL;
        pod_cache_done(&m->cache[0]);
        pod_cache_done(&m->cache[1]);
        free(m->gt.slots);
        free(m->groups);
        free(m->keys);
        free(m->item_group);
        free(m->sb_perm);
        free(m->c_perm);
        free(m->order);
        free(m->tmp);
        pthread_mutex_destroy(&m->lock);
        free(m);
        return NULL;
}

static void pod_sandbox_list_done(struct kc_pod_sandbox_list *l)
{
        kc_runtime_result_done(l);
}

static void container_list_done(struct kc_container_list *l)
{
        kc_runtime_result_done(l);
}

/* ------------------------------------------------------------------------ */
/* GetPods                                                                    */

/*
 * A scratch array of at least @n elements (contents not kept). Shrinks when
 * far larger than needed, so one huge listing does not pin memory forever.
 */
static int scratch_reserve(void **p, size_t *cap, size_t n, size_t elem)
{
        void *q;

        if (n == 0)
                n = 1;
        if (n <= *cap && (*cap <= 4096 || *cap / 4 < n))
                return 0;
        if (n > SIZE_MAX / elem)
                return -ENOMEM;
        q = malloc(n * elem);
        if (!q)
                return -ENOMEM;
        free(*p);
        *p = q;
        *cap = n;
        return 0;
}
#define SCRATCH(m, field, n) scratch_reserve((void **)&(m)->field, &(m)->cap_##field, (n), sizeof(*(m)->field))

static inline uint64_t rotl64(uint64_t x, int r)
{
        return (x << r) | (x >> (64 - r));
}

/* Eight bytes at a time with a final avalanche (pod UIDs are 36 bytes). */
static uint64_t uid_hash(const char *key)
{
        const uint64_t k1 = UINT64_C(0x9e3779b97f4a7c15);
        const uint64_t k2 = UINT64_C(0xbf58476d1ce4e5b9);
        size_t len = strlen(key);
        uint64_t h = len * k1, w;

        for (; len >= 8; len -= 8, key += 8) {
                memcpy(&w, key, 8);
                h = rotl64(h ^ (w * k2), 29) * k1;
        }
        if (len > 0) {
                w = 0;
                memcpy(&w, key, len);
                h = rotl64(h ^ (w * k2), 29) * k1;
        }
        h ^= h >> 33;
        h *= UINT64_C(0xff51afd7ed558ccd);
        h ^= h >> 33;
        h *= UINT64_C(0xc4ceb9fe1a85ec53);
        h ^= h >> 33;
        return h;
}

/* The slot holding @uid, or the empty slot where it would go. */
static size_t pc_find(const struct pod_cache *t, const char *uid, uint64_t hash, bool *found)
{
        size_t i = hash & t->mask;

        for (;; i = (i + 1) & t->mask) {
                const struct pc_slot *s = &t->slots[i];

                if (!s->uid) {
                        *found = false;
                        return i;
                }
                if (s->hash == hash && (s->uid == uid || strcmp(s->uid, uid) == 0)) {
                        *found = true;
                        return i;
                }
        }
}

/* Rehashes into @nslots slots (a power of two above the size). */
static int pc_resize(struct pod_cache *t, size_t nslots)
{
        struct pc_slot *slots = calloc(nslots, sizeof(*slots));
        size_t i, j;

        if (!slots)
                return -ENOMEM;
        for (i = 0; t->slots && i <= t->mask; i++) {
                if (!t->slots[i].uid)
                        continue;
                for (j = t->slots[i].hash & (nslots - 1); slots[j].uid; j = (j + 1) & (nslots - 1))
                        ;
                slots[j] = t->slots[i];
        }
        free(t->slots);
        t->slots = slots;
        t->mask = nslots - 1;
        return 0;
}

/* Room for one more entry at a load factor of at most 3/4. */
static int pc_reserve_one(struct pod_cache *t)
{
        size_t nslots = t->slots ? t->mask + 1 : 0;

        if (t->slots && (t->size + 1) * 4 <= nslots * 3)
                return 0;
        if (nslots > SIZE_MAX / 2 / sizeof(struct pc_slot))
                return -ENOMEM;
        return pc_resize(t, nslots ? nslots * 2 : 64);
}

/* Backward-shift deletion: no tombstones, probe chains stay exact. */
static void pc_delete_at(struct pod_cache *t, size_t i)
{
        size_t j = i, k;

        for (;;) {
                j = (j + 1) & t->mask;
                if (!t->slots[j].uid)
                        break;
                k = t->slots[j].hash & t->mask; /* where the entry at j would like to be */
                /* It may fill the hole at i unless its home lies cyclically in (i, j]. */
                if (i <= j ? (k <= i || k > j) : (k <= i && k > j)) {
                        t->slots[i] = t->slots[j];
                        i = j;
                }
        }
        t->slots[i] = (struct pc_slot){ 0 };
        t->size--;
}

/* Drops the entries call @epoch did not list. */
static void pc_sweep(struct pod_cache *t, uint32_t epoch)
{
        size_t start, n, i;

        if (!t->slots)
                return;
        /*
         * Start right after an empty slot (the load factor guarantees one):
         * no probe chain then wraps past the starting point, so deletions
         * only ever move entries into the current or later positions and
         * each entry is examined once.
         */
        for (start = 0; t->slots[start].uid; start++)
                ;
        for (n = 0; n <= t->mask; n++) {
                i = (start + 1 + n) & t->mask;
                while (t->slots[i].uid && t->slots[i].epoch != epoch) {
                        kc_pod_unref(t->slots[i].pod);
                        pc_delete_at(t, i);
                }
        }
        /* Most pods gone: give the table back (best effort; it still works if this fails). */
        if (t->mask + 1 > 64 && t->size * 8 < t->mask + 1) {
                size_t nslots = 64;

                while (nslots < t->size * 4)
                        nslots *= 2;
                (void)pc_resize(t, nslots);
        }
}

static const char *sandbox_pod_uid(const struct kc_pod_sandbox *s)
{
        const char *uid = kc__label_get(s->labels, s->n_labels, KC_LABEL_POD_UID);

        return uid ? uid : s->metadata.uid;
}

/* An empty grouping table with room for @n_expected groups at a load of at most 3/4. */
static int gt_prepare(struct group_table *gt, size_t n_expected)
{
        size_t nslots = 64;

        while (nslots * 3 < n_expected * 4 && nslots < SIZE_MAX / 8 / sizeof(struct group_slot))
                nslots *= 2;
        if (!gt->slots || gt->mask + 1 < nslots || gt->mask + 1 > 8 * nslots) {
                struct group_slot *slots = calloc(nslots, sizeof(*slots));

                if (!slots)
                        return -ENOMEM;
                free(gt->slots);
                gt->slots = slots;
                gt->mask = nslots - 1;
        } else {
                memset(gt->slots, 0, (gt->mask + 1) * sizeof(*gt->slots));
        }
        return 0;
}

static void gt_insert(struct group_table *gt, const char *uid, uint64_t hash, uint32_t group)
{
        size_t i;

        for (i = hash & gt->mask; gt->slots[i].uid; i = (i + 1) & gt->mask)
                ;
        gt->slots[i] = (struct group_slot){ uid, (uint32_t)(hash >> 32), group };
}

/* Doubles the table and re-enters this call's groups. */
static int gt_grow(struct kc_runtime_manager *m, uint32_t n_groups)
{
        struct group_table *gt = &m->gt;
        size_t nslots = (gt->mask + 1) * 2;
        struct group_slot *slots;
        uint32_t i;

        if (nslots > SIZE_MAX / sizeof(*slots))
                return -ENOMEM;
        slots = calloc(nslots, sizeof(*slots));
        if (!slots)
                return -ENOMEM;
        free(gt->slots);
        gt->slots = slots;
        gt->mask = nslots - 1;
        for (i = 0; i < n_groups; i++)
                gt_insert(gt, m->groups[i].uid, m->groups[i].hash, i);
        return 0;
}

/* The group of the items with pod UID @uid, new when this call had not seen it. */
static int group_get(struct kc_runtime_manager *m, uint32_t *n_groups, const char *uid,
                     uint64_t hash, const struct kc_label *labels, size_t n_labels,
                     uint32_t *ret)
{
        struct group_table *gt = &m->gt;
        uint32_t hash_hi = (uint32_t)(hash >> 32);
        size_t i;
        int r;

        for (i = hash & gt->mask; gt->slots[i].uid; i = (i + 1) & gt->mask) {
                const struct group_slot *s = &gt->slots[i];

                if (s->hash_hi == hash_hi && (s->uid == uid || strcmp(s->uid, uid) == 0)) {
                        *ret = s->group;
                        return 0;
                }
        }
        if ((size_t)(*n_groups + 1) * 4 > (gt->mask + 1) * 3) {
                r = gt_grow(m, *n_groups);
                if (r < 0)
                        return r;
        }
        gt_insert(gt, uid, hash, *n_groups);
        m->groups[*n_groups] = (struct group){
                .uid = uid,
                .name = kc__label_get(labels, n_labels, KC_LABEL_POD_NAME),
                .namespace = kc__label_get(labels, n_labels, KC_LABEL_POD_NAMESPACE),
                .hash = hash,
        };
        *ret = (*n_groups)++;
        return 0;
}

static enum kc_container_state sandbox_cstate(const struct kc_pod_sandbox *s)
{
        return s->state == KC_SANDBOX_STATE_READY ? KC_CONTAINER_STATE_RUNNING
                                                  : KC_CONTAINER_STATE_EXITED;
}

static uint64_t container_hash(const struct kc_cri_container *c)
{
        return kc__parse_container_hash(
                kc__label_get(c->annotations, c->n_annotations, KC_ANNOTATION_CONTAINER_HASH));
}

/* Would kc_pod_new() from this group build a pod equal to @p in every field? */
static bool pod_unchanged(const struct kc_pod *p, const struct group *g,
                          const struct kc_pod_sandbox_list *sbl, const uint32_t *sb_perm,
                          const struct kc_container_list *cl, const uint32_t *c_perm)
{
        size_t k;

        /* The id matched as the cache key. */
        if (p->created_at != g->created_at || p->n_sandboxes != g->n_sandboxes ||
            p->n_containers != g->n_containers || !kc__streq(p->name, g->name) ||
            !kc__streq(p->namespace, g->namespace))
                return false;
        for (k = 0; k < g->n_containers; k++) {
                const struct kc_cri_container *c = &cl->items[c_perm[g->c_off + k]];
                const struct kc_container *o = &p->containers[k];

                if (o->state != c->state || o->created_at != c->created_at ||
                    !kc__streq(o->id, c->id) || !kc__streq(o->name, c->metadata.name) ||
                    !kc__streq(o->image, c->image) || o->hash != container_hash(c))
                        return false;
        }
        for (k = 0; k < g->n_sandboxes; k++) {
                const struct kc_pod_sandbox *s = &sbl->items[sb_perm[g->sb_off + k]];
                const struct kc_container *o = &p->sandboxes[k];

                if (o->state != sandbox_cstate(s) || o->created_at != s->created_at ||
                    !kc__streq(o->id, s->id) || !kc__streq(o->name, s->metadata.name) ||
                    o->image || o->hash != 0)
                        return false;
        }
        return true;
}

static int pod_build(struct kc_runtime_manager *m, const struct group *g,
                     const struct kc_pod_sandbox_list *sbl, const struct kc_container_list *cl,
                     struct kc_pod **ret)
{
        struct kc_container *ctrs, *sbs;
        size_t k;

        if (SCRATCH(m, tmp, (size_t)g->n_containers + g->n_sandboxes) < 0)
                return -ENOMEM;
        ctrs = m->tmp;
        sbs = m->tmp + g->n_containers;
        for (k = 0; k < g->n_containers; k++) {
                const struct kc_cri_container *c = &cl->items[m->c_perm[g->c_off + k]];

                ctrs[k] = (struct kc_container){
                        .id = c->id,
                        .name = c->metadata.name,
                        .image = c->image,
                        .hash = container_hash(c),
                        .state = c->state,
                        .created_at = c->created_at,
                };
        }
        for (k = 0; k < g->n_sandboxes; k++) {
                const struct kc_pod_sandbox *s = &sbl->items[m->sb_perm[g->sb_off + k]];

                sbs[k] = (struct kc_container){
                        .id = s->id,
                        .name = s->metadata.name,
                        .state = sandbox_cstate(s),
                        .created_at = s->created_at,
                };
        }
        return kc_pod_new(
                &(struct kc_pod){
                        .id = g->uid,
                        .name = g->name,
                        .namespace = g->namespace,
                        .created_at = g->created_at,
                        .containers = ctrs,
                        .n_containers = g->n_containers,
                        .sandboxes = sbs,
                        .n_sandboxes = g->n_sandboxes,
                },
                ret);
}

/* Prefetch distances: in items for grouping, in pods for the build loop. */
#define PREFETCH_GROUP 16
#define PREFETCH_SLOT 16
#define PREFETCH_POD 8
#define PREFETCH_POD_BYTES 512

static int sort_key_cmp(const void *a, const void *b)
{
        const struct sort_key *x = a, *y = b;

        if (x->created_at != y->created_at)
                return x->created_at > y->created_at ? -1 : 1;
        return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Groups, sorts and builds (or reuses) the pods; called with m->lock held. */
static int get_pods_locked(struct kc_runtime_manager *m, bool all,
                           const struct kc_pod_sandbox_list *sbl,
                           const struct kc_container_list *cl, struct kc_pod_list *ret)
{
        _cleanup_(kc_pod_list_done) struct kc_pod_list out = { 0 };
        struct pod_cache *t = &m->cache[all];
        uint32_t n_groups = 0, gi, off;
        bool sorted = true;
        struct group *g;
        size_t i, n_items;
        int r;

        if (sbl->n > UINT32_MAX / 2 || cl->n > UINT32_MAX / 2)
                return -ENOMEM;
        n_items = sbl->n + cl->n;
        if (SCRATCH(m, groups, n_items) < 0 || SCRATCH(m, keys, n_items) < 0 ||
            SCRATCH(m, item_group, n_items) < 0 || SCRATCH(m, sb_perm, sbl->n) < 0 ||
            SCRATCH(m, c_perm, cl->n) < 0)
                return -ENOMEM;
        if (gt_prepare(&m->gt, m->n_groups_hint) < 0)
                return -ENOMEM;
        if (++t->epoch == 0) {
                /* Wrapped: forget the old epochs so none can match by accident. */
                for (i = 0; t->slots && i <= t->mask; i++)
                        t->slots[i].epoch = 0;
                t->epoch = 1;
        }

        /* Pass 1: each item's pod UID and its hash, sandboxes first (as upstream). */
        for (i = 0; i < sbl->n; i++) {
                const char *uid = sandbox_pod_uid(&sbl->items[i]);

                m->keys[i].uid = uid ? uid : "";
                m->keys[i].hash = uid_hash(m->keys[i].uid);
        }
        for (i = 0; i < cl->n; i++) {
                const struct kc_cri_container *c = &cl->items[i];
                const char *uid = kc__label_get(c->labels, c->n_labels, KC_LABEL_POD_UID);

                m->keys[sbl->n + i].uid = uid ? uid : "";
                m->keys[sbl->n + i].hash = uid_hash(m->keys[sbl->n + i].uid);
        }

        /*
         * Pass 2: group by UID and count. The table is looked up a few items
         * ahead of use (a prefetch). Runtimes tend to list a pod's objects
         * together: an item with the same UID as the one before skips it.
         */
        for (i = 0; i < n_items; i++) {
                const struct item_key *k = &m->keys[i];

                if (i + PREFETCH_GROUP < n_items)
                        __builtin_prefetch(&m->gt.slots[m->keys[i + PREFETCH_GROUP].hash & m->gt.mask]);
                if (i > 0 && k->hash == k[-1].hash &&
                    (k->uid == k[-1].uid || strcmp(k->uid, k[-1].uid) == 0)) {
                        gi = m->item_group[i - 1];
                } else if (i < sbl->n) {
                        r = group_get(m, &n_groups, k->uid, k->hash, sbl->items[i].labels,
                                      sbl->items[i].n_labels, &gi);
                        if (r < 0)
                                goto fail;
                } else {
                        r = group_get(m, &n_groups, k->uid, k->hash, cl->items[i - sbl->n].labels,
                                      cl->items[i - sbl->n].n_labels, &gi);
                        if (r < 0)
                                goto fail;
                }
                m->item_group[i] = gi;
                g = &m->groups[gi];
                if (i < sbl->n) {
                        const struct kc_pod_sandbox *s = &sbl->items[i];

                        if (!g->has_sandbox || s->created_at > g->created_at)
                                g->created_at = s->created_at;
                        g->has_sandbox = true;
                        g->n_sandboxes++;
                } else {
                        g->n_containers++;
                }
        }

        /* Pass 3: lay each pod's entries out contiguously, in listing order. */
        for (gi = 0, off = 0; gi < n_groups; gi++) {
                m->groups[gi].sb_off = off;
                off += m->groups[gi].n_sandboxes;
                m->groups[gi].n_sandboxes = 0;
        }
        for (gi = 0, off = 0; gi < n_groups; gi++) {
                m->groups[gi].c_off = off;
                off += m->groups[gi].n_containers;
                m->groups[gi].n_containers = 0;
        }
        for (i = 0; i < sbl->n; i++) {
                g = &m->groups[m->item_group[i]];
                m->sb_perm[g->sb_off + g->n_sandboxes++] = (uint32_t)i;
        }
        for (i = 0; i < cl->n; i++) {
                g = &m->groups[m->item_group[sbl->n + i]];
                m->c_perm[g->c_off + g->n_containers++] = (uint32_t)i;
        }

        /* CreatedAt descending, ties in order of appearance. Often already so. */
        if (SCRATCH(m, order, n_groups) < 0) {
                r = -ENOMEM;
                goto fail;
        }
        for (gi = 0; gi < n_groups; gi++) {
                m->order[gi] = (struct sort_key){ m->groups[gi].created_at, gi };
                if (gi > 0 && m->order[gi].created_at > m->order[gi - 1].created_at)
                        sorted = false;
        }
        if (!sorted)
                qsort(m->order, n_groups, sizeof(*m->order), sort_key_cmp);

        if (n_groups > 0) {
                out.pods = malloc(n_groups * sizeof(*out.pods));
                if (!out.pods) {
                        r = -ENOMEM;
                        goto fail;
                }
        }
        for (i = 0; i < n_groups; i++) {
                struct pc_slot *s;
                bool found;
                size_t k;

                /*
                 * The cached pods are cold (the rest of the relist ran since):
                 * fetch a later pod's probe slot, then the pod it most likely
                 * holds, ahead of use. Hints only; the lookup below decides.
                 */
                if (t->slots && i + PREFETCH_SLOT < n_groups)
                        __builtin_prefetch(
                                &t->slots[m->groups[m->order[i + PREFETCH_SLOT].idx].hash & t->mask]);
                if (t->slots && i + PREFETCH_POD < n_groups) {
                        const struct kc_pod *p =
                                t->slots[m->groups[m->order[i + PREFETCH_POD].idx].hash & t->mask].pod;

                        /* A pod of a few containers is a few hundred bytes (kc_pod_new). */
                        for (k = 0; p && k < PREFETCH_POD_BYTES; k += 64)
                                __builtin_prefetch((const char *)p + k);
                }
                g = &m->groups[m->order[i].idx];
                r = pc_reserve_one(t);
                if (r < 0)
                        goto fail;
                k = pc_find(t, g->uid, g->hash, &found);
                s = &t->slots[k];
                if (!found || !pod_unchanged(s->pod, g, sbl, m->sb_perm, cl, m->c_perm)) {
                        struct kc_pod *p;

                        r = pod_build(m, g, sbl, cl, &p);
                        if (r < 0)
                                goto fail;
                        if (found)
                                kc_pod_unref(s->pod);
                        else
                                t->size++;
                        /* The key is the pod's own copy of the UID. */
                        *s = (struct pc_slot){ .uid = p->id, .hash = g->hash, .pod = p };
                }
                s->epoch = t->epoch;
                out.pods[out.n++] = kc_pod_ref(s->pod);
        }
        m->n_groups_hint = n_groups;

        /* Forget the pods this listing no longer has. */
        if (t->size > n_groups)
                pc_sweep(t, t->epoch);
        *ret = out;
        out = (struct kc_pod_list){ 0 };
        return 0;
fail:
        /* The cache is consistent (every entry owns its pod); the next call sweeps it. */
        return r;
}

size_t kc__runtime_manager_cached_pods(struct kc_runtime_manager *m, bool all)
{
        size_t n;

        pthread_mutex_lock(&m->lock);
        n = m->cache[all].size;
        pthread_mutex_unlock(&m->lock);
        return n;
}

int kc_runtime_manager_get_pods(struct kc_runtime_manager *m, bool all, struct kc_pod_list *ret,
                                struct kc_runtime_error *err)
{
        _cleanup_(pod_sandbox_list_done) struct kc_pod_sandbox_list sbl = { 0 };
        _cleanup_(container_list_done) struct kc_container_list cl = { 0 };
        struct kc_pod_sandbox_filter sf = { .state = all ? -1 : KC_SANDBOX_STATE_READY };
        struct kc_container_filter cf = { .state = all ? -1 : KC_CONTAINER_STATE_RUNNING };
        int r;

        if (!m || !ret)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "invalid argument");
        r = m->svc.ops->list_pod_sandbox(m->svc.self, &sf, &sbl, err);
        if (r < 0)
                return r;
        r = m->svc.ops->list_containers(m->svc.self, &cf, &cl, err);
        if (r < 0)
                return r;

        pthread_mutex_lock(&m->lock);
        r = get_pods_locked(m, all, &sbl, &cl, ret);
        pthread_mutex_unlock(&m->lock);
        if (r < 0)
                return kc_runtime_error_set(err, -ENOMEM, KC_RUNTIME_INTERNAL, "out of memory");
        return 0;
}

/* ------------------------------------------------------------------------ */
/* GetPodStatus                                                               */

struct sorted {
        size_t idx;
        int64_t created_at;
};

static int sorted_cmp(const void *a, const void *b)
{
        const struct sorted *x = a, *y = b;

        if (x->created_at != y->created_at)
                return x->created_at > y->created_at ? -1 : 1;
        return x->idx < y->idx ? -1 : x->idx > y->idx;
}

struct status_results {
        struct kc_pod_sandbox_status_result *sb;
        size_t n_sb;
        struct kc_container_status_result *c;
        size_t n_c;
};

static void status_results_done(struct status_results *r)
{
        size_t i;

        for (i = 0; i < r->n_sb; i++)
                kc_runtime_result_done(&r->sb[i]);
        for (i = 0; i < r->n_c; i++)
                kc_runtime_result_done(&r->c[i]);
        free(r->sb);
        free(r->c);
}

int kc_runtime_manager_get_pod_status(struct kc_runtime_manager *m, const char *uid,
                                      const char *name, const char *namespace,
                                      struct kc_pod_status **ret, struct kc_runtime_error *err)
{
        _cleanup_(pod_sandbox_list_done) struct kc_pod_sandbox_list sbl = { 0 };
        _cleanup_(container_list_done) struct kc_container_list cl = { 0 };
        _cleanup_(status_results_done) struct status_results res = { 0 };
        _cleanup_free_ struct sorted *order = NULL;
        _cleanup_free_ struct kc_sandbox_status *sbs = NULL;
        _cleanup_free_ struct kc_container_status *cs = NULL;
        _cleanup_free_ const char **ips = NULL;
        struct kc_label sel = { KC_LABEL_POD_UID, uid };
        struct kc_pod_sandbox_filter sf = { .state = -1, .label_selector = &sel,
                                            .n_label_selector = 1 };
        struct kc_container_filter cf = { .state = -1, .label_selector = &sel,
                                          .n_label_selector = 1 };
        struct kc_runtime_error e2;
        size_t i, n_ips = 0, n_sbs = 0, n_cs = 0;
        int r;

        if (!m || !uid || !ret)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "invalid argument");

        /* Sandboxes, newest first. */
        r = m->svc.ops->list_pod_sandbox(m->svc.self, &sf, &sbl, err);
        if (r < 0)
                return r;
        order = calloc(sbl.n + 1, sizeof(*order));
        res.sb = calloc(sbl.n + 1, sizeof(*res.sb));
        sbs = calloc(sbl.n + 1, sizeof(*sbs));
        if (!order || !res.sb || !sbs)
                goto oom;
        for (i = 0; i < sbl.n; i++)
                order[i] = (struct sorted){ i, sbl.items[i].created_at };
        qsort(order, sbl.n, sizeof(*order), sorted_cmp);

        for (i = 0; i < sbl.n; i++) {
                const struct kc_pod_sandbox *st;

                e2.code = KC_RUNTIME_UNKNOWN; /* in case the service leaves it unset */
                e2.message[0] = 0;
                r = m->svc.ops->pod_sandbox_status(m->svc.self, sbl.items[order[i].idx].id,
                                                   &res.sb[res.n_sb], &e2);
                if (r < 0) {
                        /* Removed since the listing: skip it, as upstream does. */
                        if (e2.code == KC_RUNTIME_NOT_FOUND)
                                continue;
                        if (err)
                                *err = e2;
                        return r;
                }
                st = &res.sb[res.n_sb++].status;
                sbs[n_sbs++] = (struct kc_sandbox_status){
                        .id = st->id,
                        .name = st->metadata.name,
                        .namespace = st->metadata.namespace,
                        .uid = st->metadata.uid,
                        .attempt = st->metadata.attempt,
                        .state = st->state,
                        .created_at = st->created_at,
                        .ip = st->ip,
                };
                /* Pod IPs come only from the newest sandbox, and only when it is ready. */
                if (i == 0 && st->state == KC_SANDBOX_STATE_READY) {
                        ips = calloc(st->n_additional_ips + 2, sizeof(*ips));
                        if (!ips)
                                goto oom;
                        if (st->ip && st->ip[0])
                                ips[n_ips++] = st->ip;
                        for (size_t k = 0; k < st->n_additional_ips; k++)
                                ips[n_ips++] = st->additional_ips[k];
                }
        }

        /* Every container of the pod, newest first. */
        r = m->svc.ops->list_containers(m->svc.self, &cf, &cl, err);
        if (r < 0)
                return r;
        free(order);
        order = calloc(cl.n + 1, sizeof(*order));
        res.c = calloc(cl.n + 1, sizeof(*res.c));
        cs = calloc(cl.n + 1, sizeof(*cs));
        if (!order || !res.c || !cs)
                goto oom;
        for (i = 0; i < cl.n; i++) {
                const struct kc_cri_container *st;

                e2.code = KC_RUNTIME_UNKNOWN;
                e2.message[0] = 0;
                r = m->svc.ops->container_status(m->svc.self, cl.items[i].id, &res.c[res.n_c],
                                                 &e2);
                if (r < 0) {
                        if (e2.code == KC_RUNTIME_NOT_FOUND)
                                continue;
                        if (err)
                                *err = e2;
                        return r;
                }
                st = &res.c[res.n_c++].status;
                order[n_cs] = (struct sorted){ n_cs, st->created_at };
                cs[n_cs++] = (struct kc_container_status){
                        .id = st->id,
                        .name = st->metadata.name,
                        .state = st->state,
                        .exit_code = st->exit_code,
                        .created_at = st->created_at,
                        .started_at = st->started_at,
                        .finished_at = st->finished_at,
                        .restart_count = (int32_t)st->metadata.attempt,
                        .hash = kc__parse_container_hash(kc__label_get(
                                st->annotations, st->n_annotations, KC_ANNOTATION_CONTAINER_HASH)),
                        .image = st->image,
                        .image_ref = st->image_ref,
                        .reason = st->reason,
                        .message = st->message,
                };
        }
        qsort(order, n_cs, sizeof(*order), sorted_cmp);
        {
                _cleanup_free_ struct kc_container_status *sorted = calloc(n_cs + 1, sizeof(*sorted));

                if (!sorted)
                        goto oom;
                for (i = 0; i < n_cs; i++)
                        sorted[i] = cs[order[i].idx];
                r = kc_pod_status_new(
                        &(struct kc_pod_status){
                                .id = uid,
                                .name = name,
                                .namespace = namespace,
                                .ips = ips,
                                .n_ips = n_ips,
                                .sandboxes = sbs,
                                .n_sandboxes = n_sbs,
                                .containers = sorted,
                                .n_containers = n_cs,
                        },
                        ret);
        }
        if (r < 0)
                goto oom;
        return 0;
oom:
        return kc_runtime_error_set(err, -ENOMEM, KC_RUNTIME_INTERNAL, "out of memory");
}

/* ------------------------------------------------------------------------ */
/* As a kc_pod_runtime                                                        */

static int mgr_get_pods(void *self, bool all, struct kc_pod_list *ret,
                        struct kc_runtime_error *err)
{
        return kc_runtime_manager_get_pods(self, all, ret, err);
}

static int mgr_get_pod_status(void *self, const char *uid, const char *name,
                              const char *namespace, struct kc_pod_status **ret,
                              struct kc_runtime_error *err)
{
        return kc_runtime_manager_get_pod_status(self, uid, name, namespace, ret, err);
}

static const struct kc_pod_runtime_ops manager_pod_runtime_ops = {
        .get_pods = mgr_get_pods,
        .get_pod_status = mgr_get_pod_status,
};

struct kc_pod_runtime kc_runtime_manager_pod_runtime(struct kc_runtime_manager *m)
{
        return (struct kc_pod_runtime){ .ops = &manager_pod_runtime_ops, .self = m };
}
