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
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/format.h"
#include "core/map.h"
#include "container_linux.h"
#include "internal.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/manager.h"
#include "runtime/runtime_service.h"
#include "runtime/sync_pod.h"
#include "termination.h"

/*
 * The pod reuse cache: the kc_pods this manager returned last, one per value
 * of GetPods' `all`, in the order the listing first showed their UIDs (group
 * order). kc_pod objects are immutable, so when a pod's freshly listed
 * sandboxes and containers (and the fields taken from them) equal the cached
 * pod's, returning another reference to the cached pod is indistinguishable
 * from building a new one. Every listing is still read in full and compared
 * field by field: nothing is assumed about the service returning the same
 * memory twice (a CRI client never does).
 *
 * Listings mostly show the same pods in the same order as last time, so the
 * cached pod of a group is looked for at the group's own position first, and
 * an item's group where the same item position's was last time (both checked
 * by UID); only a listing that breaks that pays for hash maps, built then.
 * Each call moves the references it reuses into the next array and drops the
 * rest, so pods the listing no longer has go without any bookkeeping.
 */
/*
 * Identity records (issue 18). While the manager holds the listing it last
 * built pods from (held_sb, held_c), the memory that listing reaches cannot
 * change or be reused (runtime_service.h), so a pointer in a new listing
 * equal to one recorded from it points at the same bytes: equal contents
 * without reading them. Each record says what an item, a cached pod or one
 * of its entries was last time, by address where the content is a string
 * or an array; anything that differs in address is compared by content as
 * before.
 */
struct item_src {
        const struct kc_label *labels;
        size_t n_labels;
        const char *uid; /* the pod UID found in labels; NULL when it came from elsewhere */
};

/*
 * A cached pod's sandbox or container: its fields equal these (strings by
 * address), and its strings are those of any listed item with this token
 * when nonzero (runtime_service.h).
 */
struct entry_src {
        const char *id, *name, *image;
        const struct kc_label *annotations; /* the hash's source */
        size_t n_annotations;
        int64_t created_at;
        int state; /* the kc_container_state the pod has */
        uint64_t token;
};

/* A cached pod: its fields equal these; its entries at sb_off / c_off of the entry records. */
struct group_src {
        const struct kc_label *labels; /* the first item's: name and namespace */
        size_t n_labels;
        uint64_t token; /* the first item's token */
        const char *name, *namespace;
        int64_t created_at;
        uint32_t n_sandboxes, n_containers, sb_off, c_off;
};

/* One set of pod and entry records; two of them, the last call's and the current one. */
struct src_set {
        struct group_src *g;
        size_t cap_g;
        struct entry_src *sb, *c;
        size_t cap_sb, cap_c;
};

struct pod_reuse {
        struct kc_pod **pods; /* one reference each; NULL once moved on */
        size_t n, cap;
        struct kc_pod **next; /* being built by the current call */
        size_t cap_next;
        uint32_t *item_group; /* the last listing's item (sandboxes, then containers) -> group */
        size_t n_items, cap_item_group;
        /* The last listing's items laid out group by group, in listing order (the cached
         * pods' entries, as the records' sb_off / c_off say). */
        uint32_t *sb_perm, *c_perm;
        size_t cap_sb_perm, cap_c_perm;
        /* pods[k]'s UID at uids + uid_off[k], back to back: compared in listing order
         * without touching the pods themselves, which are cold in the cache by then. */
        char *uids;
        size_t len_uids, cap_uids;
        size_t *uid_off;
        size_t cap_uid_off;
        /* Identity records of the last listing, valid while it is held (both set). */
        struct kc_arena *held_sb, *held_c;
        struct item_src *item_src; /* per item, as item_group */
        size_t cap_item_src;
        struct src_set src[2]; /* [cur]: the cached pods'; the other one being built */
        unsigned cur;
        /* The cached pods' generation: the lists built from them hold it, not each pod. */
        struct kc_pod_pin *pin;
        uint64_t identity_hits; /* pods found unchanged by the records alone */
        uint64_t listing_hits;  /* calls answered from a kept listing (*_listing_reuse) */
        uint64_t delta_hits;    /* calls answered from a delta (get_pods_delta_locked) */
};

/*
 * The last listing GetPods built pods from, per value of `all`, when its
 * results were shared arenas (a CRI list memo hands out the same result for
 * an unchanged response, issue 18): the same items in the same arenas are
 * the same listing, so the same pods in the same order. The references keep
 * the arenas alive, so an address cannot come back for another listing.
 */
struct last_listing {
        struct kc_arena *sb_arena, *c_arena; /* references, or NULL */
        const void *sb_items, *c_items;
        size_t n_sb, n_c;
        /* The result built from it: the cached pods (reuse[all].pods) in this order. */
        uint32_t *order;
        size_t n_pods;
};

/* One pod being assembled: counts first, then slots in the shared arrays. */
struct group {
        const char *uid; /* in the listing */
        const char *name;
        const char *namespace;
        const struct kc_label *labels; /* the first item's */
        size_t n_labels;
        uint64_t token; /* the first item's token */
        int64_t created_at;
        uint32_t n_sandboxes, n_containers;
        uint32_t sb_off, c_off; /* where its entries start in sb_perm / c_perm */
        bool has_sandbox;
        /*
         * A delta's group (delta_group()): one bit per listed item, sandboxes
         * first (@n_sb_items of them), then containers, set for the items
         * that changed; every other item is as its record says. NULL: any
         * item may differ.
         */
        const uint64_t *changed;
        size_t n_sb_items;
};

/* Whether @g's item @i (sandboxes first, then containers) may differ from its record. */
static bool item_changed(const struct group *g, size_t i)
{
        return !g->changed || (g->changed[i / 64] >> (i % 64) & 1);
}

/* Sorts items newest first; idx is the order of appearance, which breaks CreatedAt ties. */
struct sort_key {
        int64_t created_at;
        size_t idx;
};

struct kc_runtime_manager {
        struct kc_runtime_service svc;
        struct kc_clock *clock;
        char *pod_logs_root;     /* podLogsRootDirectory; NULL: log directories are not created */
        struct kc__sync_env env; /* the runtime helper and the machine (sync_pod.c) */
        char *seccomp_root;      /* env.seccomp_root's memory */
        char **hugepage_sizes;   /* env.hugepage_sizes' memory (NULL-terminated) */

        /* GetPods state, reused across calls. get_pods may run on several threads. */
        pthread_mutex_t lock;
        struct pod_reuse reuse[2];  /* [all] */
        struct kc_map *reuse_index; /* per call, when needed: pod UID -> reuse.pods index + 1 */
        struct kc_map *group_index; /* per call, when needed: pod UID -> group index + 1 */
        struct group *groups;
        size_t cap_groups;
        uint32_t *dirty; /* a delta's changed groups (get_pods_delta_locked) */
        size_t cap_dirty;
        uint64_t *dirty_mark; /* one bit per group: in dirty */
        size_t cap_dirty_mark;
        uint64_t *item_mark; /* one bit per listed item: changed in the delta (struct group) */
        size_t cap_item_mark;
        struct sort_key *order;
        size_t cap_order;
        struct kc_container *tmp; /* one pod's entries while building it */
        size_t cap_tmp;
        struct last_listing last[2]; /* [all] */
        bool scratch_kept;           /* a build's scratch is held (get_pods_scratch_release) */
        int64_t last_build;          /* when GetPods last built pods (m->clock) */
};

/* Forgets the identity records (the listing they describe is let go). */
static void pod_reuse_unhold(struct pod_reuse *pr)
{
        pr->held_sb = kc_arena_free(pr->held_sb);
        pr->held_c = kc_arena_free(pr->held_c);
}

/*
 * Lets go of the cache's reference on @p p: buried in the current pin, since
 * a list of this generation may show it (none yet: dropped at once).
 */
static void pod_reuse_drop(struct pod_reuse *pr, struct kc_pod *p)
{
        if (pr->pin)
                kc_pod_pin_bury(pr->pin, p);
        else
                kc_pod_unref(p);
}

/* Drops the cached pods; with @all_memory, the arrays and the pin too (the counters stay). */
static void pod_reuse_clear(struct pod_reuse *pr, bool all_memory)
{
        size_t i;

        for (i = 0; i < pr->n; i++)
                pod_reuse_drop(pr, pr->pods[i]);
        pr->n = 0;
        pr->n_items = 0;
        pod_reuse_unhold(pr);
        if (!all_memory)
                return;
        pr->pin = kc_pod_pin_unref(pr->pin);
        free(pr->item_src);
        for (i = 0; i < 2; i++) {
                free(pr->src[i].g);
                free(pr->src[i].sb);
                free(pr->src[i].c);
        }
        free(pr->pods);
        free(pr->next);
        free(pr->item_group);
        free(pr->sb_perm);
        free(pr->c_perm);
        free(pr->uids);
        free(pr->uid_off);
        *pr = (struct pod_reuse){ .identity_hits = pr->identity_hits,
                                  .listing_hits = pr->listing_hits,
                                  .delta_hits = pr->delta_hits };
}

/* A NULL-terminated array of malloc'd strings. */
static void strv_free(char **v)
{
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
}

static void last_listing_done(struct last_listing *l)
{
        kc_arena_free(l->sb_arena);
        kc_arena_free(l->c_arena);
        free(l->order);
        *l = (struct last_listing){ 0 };
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
        if (kc_map_new(&m->reuse_index) < 0 || kc_map_new(&m->group_index) < 0) {
                kc_runtime_manager_free(m);
                return -ENOMEM;
        }
        *ret = m;
        return 0;
}

struct kc_runtime_manager *kc_runtime_manager_free(struct kc_runtime_manager *m)
{
        size_t i;

        if (!m)
                return NULL;
        for (i = 0; i < 2; i++) {
                pod_reuse_clear(&m->reuse[i], true);
                last_listing_done(&m->last[i]);
        }
        kc_map_free(m->reuse_index);
        kc_map_free(m->group_index);
        free(m->groups);
        free(m->dirty);
        free(m->dirty_mark);
        free(m->item_mark);
        free(m->order);
        free(m->tmp);
        free(m->pod_logs_root);
        free(m->seccomp_root);
        strv_free(m->hugepage_sizes);
        pthread_mutex_destroy(&m->lock);
        free(m);
        return NULL;
}

int kc_runtime_manager_set_pod_logs_root(struct kc_runtime_manager *m, const char *dir)
{
        char *copy = NULL;

        if (!m || (dir && dir[0] != '/'))
                return -EINVAL;
        if (dir && !(copy = strdup(dir)))
                return -ENOMEM;
        free(m->pod_logs_root);
        m->pod_logs_root = copy;
        return 0;
}

const char *kc_runtime_manager_pod_logs_root(const struct kc_runtime_manager *m)
{
        return m->pod_logs_root;
}

struct kc_clock *kc__runtime_manager_clock(const struct kc_runtime_manager *m)
{
        return m->clock;
}

int kc_runtime_manager_set_runtime_helper(struct kc_runtime_manager *m,
                                          const struct kc_runtime_helper *helper)
{
        if (!m)
                return -EINVAL;
        m->env.helper = helper ? *helper : (struct kc_runtime_helper){ 0 };
        return 0;
}

int kc_runtime_manager_set_machine(struct kc_runtime_manager *m, int64_t memory_capacity,
                                   const char *root_dir, const char *hugepages_dir)
{
        char *root = NULL, **sizes = NULL;
        size_t n_sizes = 0;

        if (!m || memory_capacity < 0 || (root_dir && root_dir[0] != '/'))
                return -EINVAL;
        if (root_dir && !(root = kc_strdup_printf("%s/seccomp", root_dir)))
                return -ENOMEM;
        if (kc__host_hugepage_sizes(hugepages_dir ? hugepages_dir : "/sys/kernel/mm/hugepages",
                                    &sizes, &n_sizes) < 0) {
                free(root);
                return -ENOMEM;
        }
        free(m->seccomp_root);
        strv_free(m->hugepage_sizes);
        m->seccomp_root = root;
        m->hugepage_sizes = sizes;
        m->env.seccomp_root = root;
        m->env.hugepage_sizes = (const char *const *)sizes;
        m->env.n_hugepage_sizes = n_sizes;
        m->env.memory_capacity = memory_capacity;
        return 0;
}

const struct kc__sync_env *kc__runtime_manager_sync_env(const struct kc_runtime_manager *m)
{
        return &m->env;
}

static void pod_sandbox_list_done(struct kc_pod_sandbox_list *l)
{
        kc_runtime_result_done(l);
}

static void container_list_done(struct kc_container_list *l)
{
        kc_runtime_result_done(l);
}

static int out_of_memory(struct kc_runtime_error *err)
{
        return kc_runtime_error_set(err, -ENOMEM, KC_RUNTIME_INTERNAL, "out of memory");
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
#define SCRATCH(m, field, n)                                                                       \
        scratch_reserve((void **)&(m)->field, &(m)->cap_##field, (n), sizeof(*(m)->field))

/* Room in @s for the records of @n_groups pods with @n_sb sandboxes and @n_c containers. */
static int src_set_reserve(struct src_set *s, size_t n_groups, size_t n_sb, size_t n_c)
{
        if (scratch_reserve((void **)&s->g, &s->cap_g, n_groups, sizeof(*s->g)) < 0 ||
            scratch_reserve((void **)&s->sb, &s->cap_sb, n_sb, sizeof(*s->sb)) < 0 ||
            scratch_reserve((void **)&s->c, &s->cap_c, n_c, sizeof(*s->c)) < 0)
                return -ENOMEM;
        return 0;
}

/* Pass 1's state. */
struct grouping {
        struct pod_reuse *pr;
        const struct group_src *prev; /* the cached pods' records; NULL when not valid */
        uint32_t n_groups;
        bool indexed; /* group_index holds the groups (else group k has cached pod k's UID) */
};

/*
 * Group @g's name and namespace, from its labels: @gs's (NULL: none) when
 * it has them from the same labels, by address.
 */
static inline void group_names(struct group *g, const struct group_src *gs)
{
        if (gs && gs->labels == g->labels && gs->n_labels == g->n_labels) {
                g->name = gs->name;
                g->namespace = gs->namespace;
        } else {
                g->name = kc__label_get(g->labels, g->n_labels, KC_LABEL_POD_NAME);
                g->namespace = kc__label_get(g->labels, g->n_labels, KC_LABEL_POD_NAMESPACE);
        }
}

/*
 * Appends a group for @uid, which has none yet. @gs: the record of the
 * cached pod it is taken to be, or NULL; its name and namespace are the
 * ones found in the same labels (by address) last time.
 */
static uint32_t group_add(struct kc_runtime_manager *m, struct grouping *gr, const char *uid,
                          const struct kc_label *labels, size_t n_labels,
                          const struct group_src *gs)
{
        struct group *g = &m->groups[gr->n_groups];

        *g = (struct group){ .uid = uid, .labels = labels, .n_labels = n_labels };
        group_names(g, gs);
        return gr->n_groups++;
}

/* The group of the items with pod UID @uid, by group_index; new when this call had not seen it. */
static int group_get(struct kc_runtime_manager *m, struct grouping *gr, const char *uid,
                     const struct kc_label *labels, size_t n_labels, uint32_t *ret)
{
        uintptr_t v = (uintptr_t)kc_map_get(m->group_index, uid);
        int r;

        if (v) {
                *ret = (uint32_t)(v - 1);
                return 0;
        }
        r = kc_map_put(m->group_index, uid, (void *)(uintptr_t)(gr->n_groups + 1));
        if (r < 0)
                return r;
        *ret = group_add(m, gr, uid, labels, n_labels, NULL);
        return 0;
}

/* The UID of cached pod @k. */
static const char *cached_uid(const struct pod_reuse *pr, size_t k)
{
        return pr->uids + pr->uid_off[k];
}

/*
 * The group of item @i, whose pod UID @uid is not the item before's. Until
 * gr->indexed, each group k so far has the UID of cached pod k (all
 * different), so a UID is placed without the map: in the group item @i had
 * last time when that group has this UID, or in a new group when the next
 * cached pod has it. @known: @uid is the one item @i had last time (by
 * identity), so those UIDs are equal without comparing them. Anything else
 * indexes the groups so far and goes on by the map.
 */
static int group_find(struct kc_runtime_manager *m, struct grouping *gr, size_t i, bool known,
                      const char *uid, const struct kc_label *labels, size_t n_labels,
                      uint32_t *ret)
{
        const struct pod_reuse *pr = gr->pr;
        uint32_t gi, k, n = gr->n_groups;
        int r;

        if (!gr->indexed) {
                gi = i < pr->n_items ? pr->item_group[i] : UINT32_MAX;
                if (gi < n && (known || kc__streq(cached_uid(pr, gi), uid))) {
                        *ret = gi;
                        return 0;
                }
                if (n < pr->n && ((known && gi == n) || kc__streq(cached_uid(pr, n), uid))) {
                        *ret = group_add(m, gr, uid, labels, n_labels,
                                         gr->prev ? &gr->prev[n] : NULL);
                        return 0;
                }
                for (k = 0; k < n; k++) {
                        r = kc_map_put(m->group_index, m->groups[k].uid,
                                       (void *)(uintptr_t)(k + 1));
                        if (r < 0)
                                return r;
                }
                gr->indexed = true;
        }
        return group_get(m, gr, uid, labels, n_labels, ret);
}

/* The kc_container_state a pod gives a sandbox in @state: running while ready, else exited. */
static enum kc_container_state sandbox_state_cstate(enum kc_sandbox_state state)
{
        return state == KC_SANDBOX_STATE_READY ? KC_CONTAINER_STATE_RUNNING
                                               : KC_CONTAINER_STATE_EXITED;
}

static enum kc_container_state sandbox_cstate(const struct kc_pod_sandbox *s)
{
        return sandbox_state_cstate(s->state);
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
                    !kc__streq(o->id, s->id) || !kc__streq(o->name, s->metadata.name) || o->image ||
                    o->hash != 0)
                        return false;
        }
        return true;
}

/* What the records say of a cached pod against a group. */
enum identity {
        IDENTITY_SAME,      /* equal to what the group builds */
        IDENTITY_DIFFERENT, /* a number differs: the pod changed */
        IDENTITY_UNKNOWN,   /* a string or array is elsewhere: compare contents */
};

/* Item @i's token in a list result's @tokens (runtime_service.h); 0 when it has none. */
static uint64_t item_token(const uint64_t *tokens, size_t i)
{
        return tokens ? tokens[i] : 0;
}

/*
 * Item @i of the listing @sbl, @cl (sandboxes first, then containers): its
 * labels into *labels and *n_labels; returns its token.
 */
static inline uint64_t item_labels(const struct kc_pod_sandbox_list *sbl,
                                   const struct kc_container_list *cl, size_t i,
                                   const struct kc_label **labels, size_t *n_labels)
{
        if (i < sbl->n) {
                *labels = sbl->items[i].labels;
                *n_labels = sbl->items[i].n_labels;
                return item_token(sbl->tokens, i);
        }
        *labels = cl->items[i - sbl->n].labels;
        *n_labels = cl->items[i - sbl->n].n_labels;
        return item_token(cl->tokens, i - sbl->n);
}

/* Nonzero tokens, equal: the two items have equal contents. */
static bool same_token(uint64_t a, uint64_t b)
{
        return a != 0 && a == b;
}

/* Entry record @e against a listed object's strings and arrays: by token, else by address. */
static bool entry_addresses(const struct entry_src *e, uint64_t token, const char *id,
                            const char *name, const char *image, const struct kc_label *annotations,
                            size_t n_annotations)
{
        if (same_token(e->token, token))
                return true;
        return e->id == id && e->name == name && e->image == image &&
               e->annotations == annotations && e->n_annotations == n_annotations;
}

/*
 * The cached pod of record @gs (entries in @prev) against what this group
 * builds. The records hold the pod's own values, so a number that differs
 * is a change; a pointer that differs says nothing (pod_unchanged() decides).
 * *ret_same_strings: every string and array is where the records say (the
 * pod's strings and hashes are the group's), whatever the numbers.
 */
static enum identity pod_identity(const struct src_set *prev, const struct group_src *gs,
                                  const struct group *g, const struct kc_pod_sandbox_list *sbl,
                                  const uint32_t *sb_perm, const struct kc_container_list *cl,
                                  const uint32_t *c_perm, bool *ret_same_strings)
{
        bool numbers, addresses;
        size_t k;

        *ret_same_strings = false;
        if (gs->n_sandboxes != g->n_sandboxes || gs->n_containers != g->n_containers)
                return IDENTITY_DIFFERENT;
        numbers = gs->created_at == g->created_at;
        /* The first items' labels, equal by token, give the same name and namespace. */
        addresses = (gs->name == g->name && gs->namespace == g->namespace) ||
                    same_token(gs->token, g->token);
        for (k = 0; k < g->n_containers; k++) {
                const struct kc_cri_container *c = &cl->items[c_perm[g->c_off + k]];
                const struct entry_src *e = &prev->c[gs->c_off + k];

                /* Unchanged, it is what its record says, by number and address. */
                if (!item_changed(g, g->n_sb_items + c_perm[g->c_off + k]))
                        continue;
                numbers &= e->created_at == c->created_at && e->state == (int)c->state;
                addresses &= entry_addresses(e, item_token(cl->tokens, c_perm[g->c_off + k]), c->id,
                                             c->metadata.name, c->image, c->annotations,
                                             c->n_annotations);
        }
        for (k = 0; k < g->n_sandboxes; k++) {
                const struct kc_pod_sandbox *s = &sbl->items[sb_perm[g->sb_off + k]];
                const struct entry_src *e = &prev->sb[gs->sb_off + k];

                if (!item_changed(g, sb_perm[g->sb_off + k]))
                        continue;
                numbers &= e->created_at == s->created_at && e->state == (int)sandbox_cstate(s);
                addresses &= entry_addresses(e, item_token(sbl->tokens, sb_perm[g->sb_off + k]),
                                             s->id, s->metadata.name, NULL, NULL, 0);
        }
        *ret_same_strings = addresses;
        if (!numbers)
                return IDENTITY_DIFFERENT;
        return addresses ? IDENTITY_SAME : IDENTITY_UNKNOWN;
}

/*
 * Would this group build a pod equal to cached pod @j (@p)? By the records
 * when they tell (counted in *identity_hits when the same). *ret_like: when
 * not, whether @p has the group's strings and hashes (a template for it).
 */
static bool pod_reusable(const struct src_set *prev, size_t j, const struct kc_pod *p,
                         const struct group *g, const struct kc_pod_sandbox_list *sbl,
                         const uint32_t *sb_perm, const struct kc_container_list *cl,
                         const uint32_t *c_perm, uint64_t *identity_hits, bool *ret_like)
{
        enum identity id = IDENTITY_UNKNOWN;

        *ret_like = false;
        if (prev)
                id = pod_identity(prev, &prev->g[j], g, sbl, sb_perm, cl, c_perm, ret_like);
        *identity_hits += id == IDENTITY_SAME;
        if (id != IDENTITY_UNKNOWN)
                return id == IDENTITY_SAME;
        return pod_unchanged(p, g, sbl, sb_perm, cl, c_perm);
}

/* Records group @gi's pod, which equals what the group builds, in @next. */
static void pod_record(struct src_set *next, uint32_t gi, const struct group *g,
                       const struct kc_pod_sandbox_list *sbl, const uint32_t *sb_perm,
                       const struct kc_container_list *cl, const uint32_t *c_perm)
{
        size_t k;

        next->g[gi] = (struct group_src){
                .labels = g->labels,
                .n_labels = g->n_labels,
                .token = g->token,
                .name = g->name,
                .namespace = g->namespace,
                .created_at = g->created_at,
                .n_sandboxes = g->n_sandboxes,
                .n_containers = g->n_containers,
                .sb_off = g->sb_off,
                .c_off = g->c_off,
        };
        /* A delta's group records in place: an unchanged item's record stands. */
        for (k = 0; k < g->n_containers; k++) {
                const struct kc_cri_container *c = &cl->items[c_perm[g->c_off + k]];

                if (!item_changed(g, g->n_sb_items + c_perm[g->c_off + k]))
                        continue;
                next->c[g->c_off + k] = (struct entry_src){
                        .id = c->id,
                        .name = c->metadata.name,
                        .image = c->image,
                        .annotations = c->annotations,
                        .n_annotations = c->n_annotations,
                        .created_at = c->created_at,
                        .state = (int)c->state,
                        .token = item_token(cl->tokens, c_perm[g->c_off + k]),
                };
        }
        for (k = 0; k < g->n_sandboxes; k++) {
                const struct kc_pod_sandbox *s = &sbl->items[sb_perm[g->sb_off + k]];

                if (!item_changed(g, sb_perm[g->sb_off + k]))
                        continue;
                next->sb[g->sb_off + k] = (struct entry_src){
                        .id = s->id,
                        .name = s->metadata.name,
                        .created_at = s->created_at,
                        .state = (int)sandbox_cstate(s),
                        .token = item_token(sbl->tokens, sb_perm[g->sb_off + k]),
                };
        }
}

/*
 * Builds group @g's pod. @like: NULL, or a pod with the same entries whose
 * strings and hashes equal the group's (pod_identity()): taken from it, one
 * block, rather than from the listing's objects, one each.
 */
static int pod_build(struct kc_runtime_manager *m, const struct group *g,
                     const struct kc_pod_sandbox_list *sbl, const uint32_t *sb_perm,
                     const struct kc_container_list *cl, const uint32_t *c_perm,
                     const struct kc_pod *like, struct kc_pod **ret)
{
        struct kc_container *ctrs, *sbs;
        struct kc_pod tmpl;
        size_t k;

        if (SCRATCH(m, tmp, (size_t)g->n_containers + g->n_sandboxes) < 0)
                return -ENOMEM;
        ctrs = m->tmp;
        sbs = m->tmp + g->n_containers;
        for (k = 0; k < g->n_containers; k++) {
                const struct kc_cri_container *c = &cl->items[c_perm[g->c_off + k]];

                /* An unchanged item is as @like has it, numbers too. */
                if (like && !item_changed(g, g->n_sb_items + c_perm[g->c_off + k])) {
                        ctrs[k] = like->containers[k];
                        continue;
                }
                ctrs[k] = (struct kc_container){
                        .id = c->id,
                        .name = c->metadata.name,
                        .image = c->image,
                        .state = c->state,
                        .created_at = c->created_at,
                };
                if (like) {
                        ctrs[k].id = like->containers[k].id;
                        ctrs[k].name = like->containers[k].name;
                        ctrs[k].image = like->containers[k].image;
                        ctrs[k].hash = like->containers[k].hash;
                } else {
                        ctrs[k].hash = container_hash(c);
                }
        }
        for (k = 0; k < g->n_sandboxes; k++) {
                const struct kc_pod_sandbox *s = &sbl->items[sb_perm[g->sb_off + k]];

                if (like && !item_changed(g, sb_perm[g->sb_off + k])) {
                        sbs[k] = like->sandboxes[k];
                        continue;
                }
                sbs[k] = (struct kc_container){
                        .id = like ? like->sandboxes[k].id : s->id,
                        .name = like ? like->sandboxes[k].name : s->metadata.name,
                        .state = sandbox_cstate(s),
                        .created_at = s->created_at,
                };
        }
        tmpl = (struct kc_pod){
                .id = like ? like->id : g->uid,
                .name = like ? like->name : g->name,
                .namespace = like ? like->namespace : g->namespace,
                .created_at = g->created_at,
                .containers = ctrs,
                .n_containers = g->n_containers,
                .sandboxes = sbs,
                .n_sandboxes = g->n_sandboxes,
        };
        return like ? kc__pod_new_like(&tmpl, like, ret) : kc_pod_new(&tmpl, ret);
}

static int sort_key_cmp(const void *a, const void *b)
{
        const struct sort_key *x = a, *y = b;

        if (x->created_at != y->created_at)
                return x->created_at > y->created_at ? -1 : 1;
        return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * The pod UID of item @i (its labels @labels), and whether it is the one the
 * item had last time by identity (*ret_known). The item's record is brought
 * up to date.
 */
static const char *item_uid(const struct grouping *gr, size_t i,
                            const struct kc_pod_sandbox_list *sbl, const struct kc_label *labels,
                            size_t n_labels, bool *ret_known)
{
        struct item_src *rec = &gr->pr->item_src[i];
        const char *uid;

        *ret_known = gr->prev && i < gr->pr->n_items && rec->uid && rec->labels == labels &&
                     rec->n_labels == n_labels;
        if (*ret_known)
                return rec->uid;
        uid = kc__label_get(labels, n_labels, KC_LABEL_POD_UID);
        *rec = (struct item_src){ labels, n_labels, uid };
        if (!uid && i < sbl->n)
                uid = sbl->items[i].metadata.uid;
        return uid ? uid : "";
}

/*
 * Pass 1: groups the items by pod UID (sandboxes first, as upstream) and
 * counts each group's entries; *ret_n_groups is the number of groups made
 * (untouched on failure).
 * Runtimes list a pod's objects together, so an item with the same UID as
 * the one before skips the lookup; an item whose UID is known by identity
 * is placed by position without reading the UID.
 */
static int group_items(struct kc_runtime_manager *m, struct pod_reuse *pr,
                       const struct kc_pod_sandbox_list *sbl, const struct kc_container_list *cl,
                       uint32_t *ret_n_groups, bool *ret_indexed)
{
        struct grouping gr = { .pr = pr, .prev = pr->held_sb ? pr->src[pr->cur].g : NULL };
        const char *uid, *prev_uid = NULL;
        uint32_t gi = 0;
        struct group *g;
        bool known;
        size_t i;
        int r;

        for (i = 0; i < sbl->n + cl->n; i++) {
                const struct kc_label *labels;
                size_t n_labels;
                uint64_t token = item_labels(sbl, cl, i, &labels, &n_labels);

                uid = item_uid(&gr, i, sbl, labels, n_labels, &known);
                if ((known && !gr.indexed) || !prev_uid || !kc__streq(uid, prev_uid)) {
                        r = group_find(m, &gr, i, known, uid, labels, n_labels, &gi);
                        if (r < 0)
                                return r;
                        prev_uid = uid;
                }
                pr->item_group[i] = gi;
                g = &m->groups[gi];
                /* The item that made the group, whose labels it has. */
                if (g->n_sandboxes == 0 && g->n_containers == 0)
                        g->token = token;
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
        *ret_n_groups = gr.n_groups;
        *ret_indexed = gr.indexed;
        return 0;
}

/* Pass 2: lays each pod's entries out contiguously in sb_perm / c_perm, in listing order. */
static void lay_out_groups(struct kc_runtime_manager *m, struct pod_reuse *pr, size_t n_sandboxes,
                           size_t n_containers, uint32_t n_groups)
{
        struct group *g;
        uint32_t gi, off;
        size_t i;

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
        for (i = 0; i < n_sandboxes; i++) {
                g = &m->groups[pr->item_group[i]];
                pr->sb_perm[g->sb_off + g->n_sandboxes++] = (uint32_t)i;
        }
        for (i = 0; i < n_containers; i++) {
                g = &m->groups[pr->item_group[n_sandboxes + i]];
                pr->c_perm[g->c_off + g->n_containers++] = (uint32_t)i;
        }
}

/* Orders the groups in m->order: CreatedAt descending, ties in order of appearance. */
static int sort_groups(struct kc_runtime_manager *m, uint32_t n_groups)
{
        bool sorted = true;
        uint32_t gi;

        if (SCRATCH(m, order, n_groups) < 0)
                return -ENOMEM;
        for (gi = 0; gi < n_groups; gi++) {
                m->order[gi] = (struct sort_key){ m->groups[gi].created_at, gi };
                if (gi > 0 && m->order[gi].created_at > m->order[gi - 1].created_at)
                        sorted = false;
        }
        /* Listings are often in this order already. */
        if (!sorted)
                qsort(m->order, n_groups, sizeof(*m->order), sort_key_cmp);
        return 0;
}

/*
 * The index in pr->pods of the cached pod with UID @uid (group @gi's), or
 * SIZE_MAX: the one at the group's own position, else through reuse_index
 * (built on first need; without memory, nothing is reused). @by_position:
 * the grouping never indexed, so group @gi has cached pod @gi's UID.
 */
static size_t reuse_find(struct kc_runtime_manager *m, const struct pod_reuse *pr, uint32_t gi,
                         const char *uid, bool by_position, bool *indexed)
{
        uintptr_t v;
        size_t k;

        if (gi < pr->n && pr->pods[gi] && (by_position || kc__streq(cached_uid(pr, gi), uid)))
                return gi;
        if (!*indexed) {
                if (kc_map_reserve(m->reuse_index, pr->n) < 0)
                        return SIZE_MAX;
                /* Keyed by the pods' own ids; cannot fail after the reserve. */
                for (k = 0; k < pr->n; k++)
                        if (pr->pods[k])
                                (void)kc_map_put(m->reuse_index, pr->pods[k]->id,
                                                 (void *)(uintptr_t)(k + 1));
                *indexed = true;
        }
        v = (uintptr_t)kc_map_get(m->reuse_index, uid);
        return v && pr->pods[v - 1] ? v - 1 : SIZE_MAX;
}

/* How many groups ahead build_pods() fetches a cached pod. */
#define POD_PREFETCH_AHEAD 8

/*
 * The cached pod at @gi, likely group @gi's, is cold by the time its group
 * comes (a listing of every object went through the caches since): fetched
 * ahead, its reference count (right before it) to be written, and its link
 * to the block its strings live in, which a pod built like it takes a
 * reference to (fetched half as far ahead, kc__pod_prefetch_strings_block()).
 */
static void prefetch_cached_pod(const struct pod_reuse *pr, uint32_t gi)
{
        if (gi < pr->n)
                kc__pod_prefetch_header(pr->pods[gi]);
}

/*
 * Pass 3: reuses or builds each pod, in m->order, into @out and pr->next
 * (in group order; a reused pod's reference moves there from pr->pods).
 * On failure the pods placed in pr->next so far are dropped.
 */
static int build_pods(struct kc_runtime_manager *m, struct pod_reuse *pr,
                      const struct kc_pod_sandbox_list *sbl, const struct kc_container_list *cl,
                      uint32_t n_groups, bool by_position, struct kc_pod_list *out)
{
        const struct src_set *prev = pr->held_sb ? &pr->src[pr->cur] : NULL;
        struct src_set *next = &pr->src[!pr->cur];
        bool indexed = false, like = false;
        size_t i, j;
        int r = 0;

        if (n_groups > 0) {
                out->pods = malloc(n_groups * sizeof(*out->pods));
                if (!out->pods)
                        return -ENOMEM;
        }
        if (KC_ARRAY_GROW(pr->next, pr->cap_next, n_groups, 64) < 0)
                return -ENOMEM;
        for (i = 0; i < n_groups; i++) {
                uint32_t gi = (uint32_t)m->order[i].idx;
                const struct group *g = &m->groups[gi];
                struct kc_pod *p;

                if (i + POD_PREFETCH_AHEAD < n_groups)
                        prefetch_cached_pod(pr, (uint32_t)m->order[i + POD_PREFETCH_AHEAD].idx);
                like = false;
                j = reuse_find(m, pr, gi, g->uid, by_position, &indexed);
                p = j != SIZE_MAX ? pr->pods[j] : NULL;
                if (p && pod_reusable(prev, j, p, g, sbl, pr->sb_perm, cl, pr->c_perm,
                                      &pr->identity_hits, &like)) {
                        pr->pods[j] = NULL;
                } else {
                        r = pod_build(m, g, sbl, pr->sb_perm, cl, pr->c_perm, like ? p : NULL, &p);
                        if (r < 0)
                                break;
                }
                pod_record(next, gi, g, sbl, pr->sb_perm, cl, pr->c_perm);
                pr->next[gi] = p;
                out->pods[out->n++] = p; /* out->pin keeps it */
        }
        /* Its keys are the cached pods' ids, which may go now. */
        if (indexed)
                kc_map_clear(m->reuse_index);
        if (r < 0)
                for (j = 0; j < i; j++)
                        pod_reuse_drop(pr, pr->next[m->order[j].idx]);
        return r;
}

/* Lays out the UIDs of pr->pods[0..n) in pr->uids. */
static int pod_reuse_index_uids(struct pod_reuse *pr, size_t n)
{
        size_t k, len = 0, l;

        for (k = 0; k < n; k++)
                len += strlen(pr->pods[k]->id) + 1;
        if (KC_ARRAY_GROW(pr->uids, pr->cap_uids, len, 1024) < 0 ||
            KC_ARRAY_GROW(pr->uid_off, pr->cap_uid_off, n, 64) < 0)
                return -ENOMEM;
        for (k = 0, len = 0; k < n; k++) {
                l = strlen(pr->pods[k]->id) + 1;
                memcpy(pr->uids + len, pr->pods[k]->id, l);
                pr->uid_off[k] = len;
                len += l;
        }
        pr->len_uids = len;
        return 0;
}

/*
 * @next_pin (its reference taken) becomes the cache's generation: the last
 * pin keeps it (and so what it buries) alive.
 */
static void pod_reuse_new_generation(struct pod_reuse *pr, struct kc_pod_pin *next_pin)
{
        if (pr->pin) {
                kc_pod_pin_chain(pr->pin, next_pin);
                kc_pod_pin_unref(pr->pin);
        }
        pr->pin = next_pin;
}

/*
 * The records describe the listing @sbl, @cl now: held, they stay true. A
 * listing only we hold is fresh memory, which no later listing can point
 * into while held: holding it would only cost memory.
 */
static void pod_reuse_hold(struct pod_reuse *pr, const struct kc_pod_sandbox_list *sbl,
                           const struct kc_container_list *cl)
{
        pod_reuse_unhold(pr);
        if (sbl->arena && cl->arena && kc_arena_shared(sbl->arena) && kc_arena_shared(cl->arena)) {
                pr->held_sb = kc_arena_ref(sbl->arena);
                pr->held_c = kc_arena_ref(cl->arena);
        }
}

/*
 * The pods just built from @sbl and @cl become the cache; the cached pods not
 * reused go. @same_uids: the groups had the cached pods' UIDs, in order
 * (pr->uids holds). @next_pin: the new pods' generation, whose reference the
 * cache takes.
 */
static void pod_reuse_advance(struct pod_reuse *pr, const struct kc_pod_sandbox_list *sbl,
                              const struct kc_container_list *cl, uint32_t n_groups, size_t n_items,
                              bool same_uids, struct kc_pod_pin *next_pin)
{
        struct kc_pod **swap = pr->pods;
        size_t cap = pr->cap;
        size_t i;

        /* The pods not reused: the last generation's lists may still show them. */
        for (i = 0; i < pr->n; i++)
                pod_reuse_drop(pr, pr->pods[i]);
        pod_reuse_new_generation(pr, next_pin);
        pr->pods = pr->next;
        pr->cap = pr->cap_next;
        pr->next = swap;
        pr->cap_next = cap;
        pr->n = n_groups;
        pr->n_items = n_items;
        pr->cur = !pr->cur;
        pod_reuse_unhold(pr);
        /* Without memory for the UIDs, the cache starts over (the pods go too). */
        if (!same_uids && pod_reuse_index_uids(pr, n_groups) < 0) {
                pod_reuse_clear(pr, false);
                return;
        }
        pod_reuse_hold(pr, sbl, cl);
}

/* Groups, sorts and builds (or reuses) the pods; called with m->lock held. */
static int get_pods_locked(struct kc_runtime_manager *m, bool all,
                           const struct kc_pod_sandbox_list *sbl,
                           const struct kc_container_list *cl, struct kc_pod_list *ret)
{
        _cleanup_(kc_pod_list_done) struct kc_pod_list out = { 0 };
        _cleanup_(kc_pod_pin_unrefp) struct kc_pod_pin *next_pin = NULL;
        struct pod_reuse *pr = &m->reuse[all];
        uint32_t n_groups = 0;
        bool indexed = true;
        size_t n_items;
        int r;

        if (sbl->n > UINT32_MAX / 2 || cl->n > UINT32_MAX / 2 || kc_pod_pin_new(&next_pin) < 0)
                return -ENOMEM;
        /* The list holds the new generation, not each pod (issue 18). */
        out.pin = kc_pod_pin_ref(next_pin);
        n_items = sbl->n + cl->n;
        /* item_group keeps its contents (the last listing's groups) while it grows. */
        if (SCRATCH(m, groups, n_items) < 0 ||
            KC_ARRAY_GROW(pr->item_group, pr->cap_item_group, n_items, 64) < 0 ||
            KC_ARRAY_GROW(pr->item_src, pr->cap_item_src, n_items, 64) < 0 ||
            KC_ARRAY_GROW(pr->sb_perm, pr->cap_sb_perm, sbl->n, 64) < 0 ||
            KC_ARRAY_GROW(pr->c_perm, pr->cap_c_perm, cl->n, 64) < 0)
                return -ENOMEM;

        r = group_items(m, pr, sbl, cl, &n_groups, &indexed);
        /* The grouping keys point into this listing: forget them now. */
        if (kc_map_size(m->group_index) > 0)
                kc_map_clear(m->group_index);
        if (r < 0)
                goto fail;
        lay_out_groups(m, pr, sbl->n, cl->n, n_groups);
        r = sort_groups(m, n_groups);
        if (r < 0)
                goto fail;
        r = src_set_reserve(&pr->src[!pr->cur], n_groups, sbl->n, cl->n);
        if (r < 0)
                goto fail;
        r = build_pods(m, pr, sbl, cl, n_groups, !indexed, &out);
        if (r < 0)
                goto fail;
        /* Unindexed, group k has cached pod k's UID: the UIDs are the same when as many. */
        pod_reuse_advance(pr, sbl, cl, n_groups, n_items, !indexed && n_groups == pr->n,
                          TAKE_PTR(next_pin));
        *ret = out;
        out = (struct kc_pod_list){ 0 };
        return 0;
fail:
        /* Forget the cache (the item groups were partly overwritten): the next call builds anew. */
        pod_reuse_clear(pr, false);
        return r;
}

/* How long GetPods keeps a build's scratch while it builds nothing (ten relist periods). */
#define GET_PODS_SCRATCH_IDLE (10 * KC_NSEC_PER_SEC)

/* Frees *@p and zeroes its capacity @p cap. */
static void scratch_release(void **p, size_t *cap)
{
        free(*p);
        *p = NULL;
        *cap = 0;
}
#define SCRATCH_RELEASE(m, field) scratch_release((void **)&(m)->field, &(m)->cap_##field)

/* An empty @p *map again, with no slots kept (a new one; the old one kept on ENOMEM). */
static void index_release(struct kc_map **map)
{
        struct kc_map *fresh;

        if (kc_map_new(&fresh) == 0) {
                kc_map_free(*map);
                *map = fresh;
        }
}

/*
 * When GetPods is given the last listing again and built nothing for
 * GET_PODS_SCRATCH_IDLE: the memory only a build uses goes (issue 18).
 * Kept, it was 0.5 KB a pod at 5,000 pods the whole time no listing
 * changes (every relist then reuses the last result without building).
 * Let go after every build, it cost a changed relist 6 % at 5,000 pods,
 * and at the first repeated listing a no-change one 30 % (bench_relist
 * alternates them: the memory unmapped and faulted in again each time).
 * Kept: the records of the cached pods (the current src set, item_group,
 * item_src, the UIDs).
 */
static void get_pods_scratch_release(struct kc_runtime_manager *m)
{
        SCRATCH_RELEASE(m, groups);
        SCRATCH_RELEASE(m, dirty);
        SCRATCH_RELEASE(m, dirty_mark);
        SCRATCH_RELEASE(m, item_mark);
        SCRATCH_RELEASE(m, order);
        SCRATCH_RELEASE(m, tmp);
        for (size_t i = 0; i < KC_ELEMENTSOF(m->reuse); i++) {
                struct pod_reuse *pr = &m->reuse[i];
                struct src_set *other = &pr->src[!pr->cur];

                scratch_release((void **)&other->g, &other->cap_g);
                scratch_release((void **)&other->sb, &other->cap_sb);
                scratch_release((void **)&other->c, &other->cap_c);
                scratch_release((void **)&pr->next, &pr->cap_next);
        }
        index_release(&m->reuse_index);
        index_release(&m->group_index);
        m->scratch_kept = false;
}

enum reuse_counter { REUSE_PODS, REUSE_IDENTITY_HITS, REUSE_LISTING_HITS, REUSE_DELTA_HITS };

/* One of reuse[@all]'s counters, read under the lock. */
static uint64_t reuse_count(struct kc_runtime_manager *m, bool all, enum reuse_counter c)
{
        const struct pod_reuse *pr = &m->reuse[all];
        uint64_t n;

        pthread_mutex_lock(&m->lock);
        n = c == REUSE_PODS            ? pr->n
            : c == REUSE_IDENTITY_HITS ? pr->identity_hits
            : c == REUSE_LISTING_HITS  ? pr->listing_hits
                                       : pr->delta_hits;
        pthread_mutex_unlock(&m->lock);
        return n;
}

size_t kc__runtime_manager_cached_pods(struct kc_runtime_manager *m, bool all)
{
        return (size_t)reuse_count(m, all, REUSE_PODS);
}

uint64_t kc__runtime_manager_identity_hits(struct kc_runtime_manager *m, bool all)
{
        return reuse_count(m, all, REUSE_IDENTITY_HITS);
}

uint64_t kc__runtime_manager_listing_hits(struct kc_runtime_manager *m, bool all)
{
        return reuse_count(m, all, REUSE_LISTING_HITS);
}

uint64_t kc__runtime_manager_delta_hits(struct kc_runtime_manager *m, bool all)
{
        return reuse_count(m, all, REUSE_DELTA_HITS);
}

size_t kc__runtime_manager_scratch_bytes(struct kc_runtime_manager *m)
{
        size_t n;

        pthread_mutex_lock(&m->lock);
        n = m->cap_groups * sizeof(*m->groups) + m->cap_dirty * sizeof(*m->dirty) +
            m->cap_dirty_mark * sizeof(*m->dirty_mark) + m->cap_item_mark * sizeof(*m->item_mark) +
            m->cap_order * sizeof(*m->order) + m->cap_tmp * sizeof(*m->tmp);
        for (size_t i = 0; i < KC_ELEMENTSOF(m->reuse); i++) {
                const struct pod_reuse *pr = &m->reuse[i];
                const struct src_set *o = &pr->src[!pr->cur];

                n += o->cap_g * sizeof(*o->g) + o->cap_sb * sizeof(*o->sb) +
                     o->cap_c * sizeof(*o->c) + pr->cap_next * sizeof(*pr->next);
        }
        pthread_mutex_unlock(&m->lock);
        return n;
}

/* Is this listing the last one, by identity? Then *ret holds its pods (in @pr) again. */
static int last_listing_reuse(const struct last_listing *l, const struct pod_reuse *pr,
                              const struct kc_pod_sandbox_list *sbl,
                              const struct kc_container_list *cl, struct kc_pod_list *ret)
{
        struct kc_pod_list out = { 0 };

        if (!l->sb_arena || !l->c_arena || l->sb_arena != sbl->arena || l->c_arena != cl->arena ||
            l->sb_items != sbl->items || l->c_items != cl->items || l->n_sb != sbl->n ||
            l->n_c != cl->n || l->n_pods != pr->n || !pr->pin)
                return 0;
        if (l->n_pods > 0 && !(out.pods = malloc(l->n_pods * sizeof(*out.pods))))
                return -ENOMEM;
        /* The cache's pin keeps its pods (a kept listing comes from a build, which set it). */
        out.pin = kc_pod_pin_ref(pr->pin);
        for (out.n = 0; out.n < l->n_pods; out.n++)
                out.pods[out.n] = pr->pods[l->order[out.n]];
        *ret = out;
        return 1;
}

/*
 * Remembers the listing the cache was just built from, when its arenas are
 * shared (best effort): the cached pods in m->order's order, the result's.
 */
static void last_listing_keep(struct kc_runtime_manager *m, struct last_listing *l,
                              const struct pod_reuse *pr, const struct kc_pod_sandbox_list *sbl,
                              const struct kc_container_list *cl)
{
        uint32_t *order = NULL;
        size_t i;

        last_listing_done(l);
        /* An arena only we hold cannot be handed out again: keeping it would only cost memory. */
        if (!kc_arena_shared(sbl->arena) || !kc_arena_shared(cl->arena))
                return;
        if (pr->n > 0 && !(order = malloc(pr->n * sizeof(*order))))
                return;
        for (i = 0; i < pr->n; i++)
                order[i] = (uint32_t)m->order[i].idx;
        *l = (struct last_listing){
                .sb_arena = kc_arena_ref(sbl->arena),
                .c_arena = kc_arena_ref(cl->arena),
                .sb_items = sbl->items,
                .c_items = cl->items,
                .n_sb = sbl->n,
                .n_c = cl->n,
                .order = order,
                .n_pods = pr->n,
        };
}

/*
 * GetPods(all = false) given the very listing the full cache was last built
 * from: a runtime whose sandboxes are all ready and containers all running
 * may hand out one result for both filters (the simulated runtime does).
 * The full cache's pods are then the answer, and the running cache lets go
 * of its own copies of them (issue 18: 0.3 KB of pods and 0.2 KB of records
 * a pod). Returns as last_listing_reuse().
 */
static int full_listing_reuse(struct kc_runtime_manager *m, const struct kc_pod_sandbox_list *sbl,
                              const struct kc_container_list *cl, struct kc_pod_list *ret)
{
        int r;

        r = last_listing_reuse(&m->last[true], &m->reuse[true], sbl, cl, ret);
        if (r <= 0)
                return r;
        last_listing_done(&m->last[false]);
        pod_reuse_clear(&m->reuse[false], true);
        return r;
}

/*
 * The positions of a listing (@items, @n) that may differ from the held
 * one (@held, @n_held), by the listing's delta (runtime_service.h): none
 * when it is the held listing itself. False when it does not say.
 */
static bool list_delta(const void *held, size_t n_held, const void *items, size_t n,
                       const void *base, const uint32_t *changed, size_t n_changed,
                       const uint32_t **ret, size_t *ret_n)
{
        if (!held || n != n_held)
                return false;
        if (items == held) {
                *ret = NULL;
                *ret_n = 0;
                return true;
        }
        if (!base || base != held)
                return false;
        *ret = changed;
        *ret_n = n_changed;
        return true;
}

/*
 * Changed item @i (sandboxes first, then containers; @labels its labels)
 * still in group @gi: the pod UID it has is the cached pod's. Its record
 * (item_src) then describes it; a UID that differs leaves it untouched, so
 * the record still says what item @i was when the cache was built.
 */
static bool item_keeps_group(struct pod_reuse *pr, size_t i, uint32_t gi,
                             const struct kc_pod_sandbox_list *sbl, const struct kc_label *labels,
                             size_t n_labels)
{
        struct item_src *rec = &pr->item_src[i];
        const char *uid, *key;

        if (rec->uid && rec->labels == labels && rec->n_labels == n_labels)
                return true;
        /* As item_uid() finds it. */
        uid = kc__label_get(labels, n_labels, KC_LABEL_POD_UID);
        key = uid ? uid : i < sbl->n ? sbl->items[i].metadata.uid : NULL;
        if (!kc__streq(key ? key : "", cached_uid(pr, gi)))
                return false;
        *rec = (struct item_src){ labels, n_labels, uid };
        return true;
}

/*
 * Pass 1 of a delta: the groups of the @n_sb changed sandboxes @sb_changed
 * and @n_c changed containers @c_changed, once each, in m->dirty
 * (*ret_n_dirty). False when an item is out of range or has moved to
 * another pod: then only the whole listing tells the groups.
 */
static bool delta_groups(struct kc_runtime_manager *m, struct pod_reuse *pr,
                         const struct kc_pod_sandbox_list *sbl, const uint32_t *sb_changed,
                         size_t n_sb, const struct kc_container_list *cl, const uint32_t *c_changed,
                         size_t n_c, size_t *ret_n_dirty)
{
        size_t k, n_dirty = 0;

        memset(m->dirty_mark, 0, (pr->n + 63) / 64 * sizeof(*m->dirty_mark));
        memset(m->item_mark, 0, (sbl->n + cl->n + 63) / 64 * sizeof(*m->item_mark));
        for (k = 0; k < n_sb + n_c; k++) {
                size_t pos = k < n_sb ? sb_changed[k] : c_changed[k - n_sb];
                size_t i = k < n_sb ? pos : sbl->n + pos;
                const struct kc_label *labels;
                size_t n_labels;
                uint32_t gi;

                if (pos >= (k < n_sb ? sbl->n : cl->n))
                        return false;
                m->item_mark[i / 64] |= UINT64_C(1) << (i % 64);
                gi = pr->item_group[i];
                (void)item_labels(sbl, cl, i, &labels, &n_labels);
                if (gi >= pr->n || !item_keeps_group(pr, i, gi, sbl, labels, n_labels))
                        return false;
                if (m->dirty_mark[gi / 64] & (UINT64_C(1) << (gi % 64)))
                        continue;
                m->dirty_mark[gi / 64] |= UINT64_C(1) << (gi % 64);
                m->dirty[n_dirty++] = gi;
        }
        *ret_n_dirty = n_dirty;
        return true;
}

/*
 * Group @gi of the cached pods as the listing now has it, into @g: the
 * same items as when the cache was built (its record says where), read
 * again as group_items() and group_add() read them.
 */
static void delta_group(const struct pod_reuse *pr, uint32_t gi,
                        const struct kc_pod_sandbox_list *sbl, const struct kc_container_list *cl,
                        const uint64_t *changed, struct group *g)
{
        const struct group_src *gs = &pr->src[pr->cur].g[gi];
        bool sb_changed = false;
        size_t k, first;

        *g = (struct group){ .uid = cached_uid(pr, gi),
                             .n_sandboxes = gs->n_sandboxes,
                             .n_containers = gs->n_containers,
                             .sb_off = gs->sb_off,
                             .c_off = gs->c_off,
                             .has_sandbox = gs->n_sandboxes > 0,
                             .changed = changed,
                             .n_sb_items = sbl->n };
        /* The labels of the group's first item in listing order: sandboxes come first. */
        if (g->n_sandboxes > 0 || g->n_containers > 0) {
                first = g->n_sandboxes > 0 ? pr->sb_perm[g->sb_off] : sbl->n + pr->c_perm[g->c_off];
                if (item_changed(g, first)) {
                        g->token = item_labels(sbl, cl, first, &g->labels, &g->n_labels);
                } else {
                        /* Unchanged: the labels its record has. */
                        g->labels = gs->labels;
                        g->n_labels = gs->n_labels;
                        g->token = gs->token;
                }
        }
        group_names(g, gs);
        for (k = 0; k < g->n_sandboxes; k++)
                sb_changed |= item_changed(g, pr->sb_perm[g->sb_off + k]);
        /* The newest sandbox's CreatedAt: the record's while none changed. */
        g->created_at = gs->created_at;
        for (k = 0; sb_changed && k < g->n_sandboxes; k++) {
                const struct kc_pod_sandbox *s = &sbl->items[pr->sb_perm[g->sb_off + k]];

                if (k == 0 || s->created_at > g->created_at)
                        g->created_at = s->created_at;
        }
}

/*
 * Pass 2 of a delta: reuses or builds each changed group's pod in place
 * of its cached one, whose records now describe it. The cached pods
 * replaced are buried in the generation the last lists show.
 */
static int delta_build(struct kc_runtime_manager *m, struct pod_reuse *pr,
                       const struct kc_pod_sandbox_list *sbl, const struct kc_container_list *cl,
                       size_t n_dirty)
{
        struct src_set *cur = &pr->src[pr->cur];
        size_t k;
        int r;

        for (k = 0; k < n_dirty; k++) {
                uint32_t gi = m->dirty[k];
                const struct group *g = &m->groups[k];
                struct kc_pod *p = pr->pods[gi], *built;
                bool like;

                if (k + POD_PREFETCH_AHEAD < n_dirty)
                        prefetch_cached_pod(pr, m->dirty[k + POD_PREFETCH_AHEAD]);
                /* A changed pod built like the cached one takes a reference to its strings. */
                if (k + POD_PREFETCH_AHEAD / 2 < n_dirty)
                        kc__pod_prefetch_strings_block(
                                pr->pods[m->dirty[k + POD_PREFETCH_AHEAD / 2]]);
                if (!pod_reusable(cur, gi, p, g, sbl, pr->sb_perm, cl, pr->c_perm,
                                  &pr->identity_hits, &like)) {
                        r = pod_build(m, g, sbl, pr->sb_perm, cl, pr->c_perm, like ? p : NULL,
                                      &built);
                        if (r < 0)
                                return r;
                        pod_reuse_drop(pr, p);
                        pr->pods[gi] = built;
                }
                pod_record(cur, gi, g, sbl, pr->sb_perm, cl, pr->c_perm);
        }
        return 0;
}

/*
 * GetPods from a listing whose delta says how it differs from the one the
 * cache was last built from, @l, which the cache holds (issue 18): only
 * the groups of the changed items are looked at. The rest of the listing
 * is the held one, so its groups, records and pods stay as they are, and
 * the pods come out in @l's order when no group's CreatedAt moved.
 * Returns 1 with *ret set; 0 when the delta does not tell (the caller
 * builds from the whole listing); -ENOMEM, the cache then dropped.
 */
static int get_pods_delta_locked(struct kc_runtime_manager *m, bool all, struct last_listing *l,
                                 const struct kc_pod_sandbox_list *sbl,
                                 const struct kc_container_list *cl, struct kc_pod_list *ret)
{
        _cleanup_(kc_pod_list_done) struct kc_pod_list out = { 0 };
        struct kc_pod_pin *next_pin = NULL;
        struct pod_reuse *pr = &m->reuse[all];
        const uint32_t *sb_changed, *c_changed;
        size_t n_sb, n_c, n_dirty, k;
        int r;

        if (!pr->held_sb || pr->held_sb != l->sb_arena || pr->held_c != l->c_arena || !pr->pin ||
            l->n_pods != pr->n || pr->n_items != sbl->n + cl->n || !kc_arena_shared(sbl->arena) ||
            !kc_arena_shared(cl->arena) ||
            !list_delta(l->sb_items, l->n_sb, sbl->items, sbl->n, sbl->base, sbl->changed,
                        sbl->n_changed, &sb_changed, &n_sb) ||
            !list_delta(l->c_items, l->n_c, cl->items, cl->n, cl->base, cl->changed, cl->n_changed,
                        &c_changed, &n_c))
                return 0;
        if (SCRATCH(m, dirty, n_sb + n_c < pr->n ? n_sb + n_c : pr->n) < 0 ||
            SCRATCH(m, dirty_mark, (pr->n + 63) / 64) < 0 ||
            SCRATCH(m, item_mark, (sbl->n + cl->n + 63) / 64) < 0)
                return 0;
        if (!delta_groups(m, pr, sbl, sb_changed, n_sb, cl, c_changed, n_c, &n_dirty))
                return 0;
        if (SCRATCH(m, groups, n_dirty) < 0)
                return 0;
        for (k = 0; k < n_dirty; k++) {
                delta_group(pr, m->dirty[k], sbl, cl, m->item_mark, &m->groups[k]);
                /* The order of the pods may change: the whole listing sorts them. */
                if (m->groups[k].created_at != pr->src[pr->cur].g[m->dirty[k]].created_at)
                        return 0;
        }
        if (kc_pod_pin_new(&next_pin) < 0)
                return -ENOMEM;
        out.pin = next_pin;
        if (pr->n > 0 && !(out.pods = malloc(pr->n * sizeof(*out.pods))))
                return -ENOMEM;
        r = delta_build(m, pr, sbl, cl, n_dirty);
        if (r < 0) {
                pod_reuse_clear(pr, false);
                last_listing_done(l);
                return r;
        }
        for (out.n = 0; out.n < pr->n; out.n++)
                out.pods[out.n] = pr->pods[l->order[out.n]];
        pod_reuse_new_generation(pr, kc_pod_pin_ref(next_pin));
        /* The records now describe this listing, which reaches what they point at. */
        pod_reuse_hold(pr, sbl, cl);
        kc_arena_free(l->sb_arena);
        kc_arena_free(l->c_arena);
        l->sb_arena = kc_arena_ref(sbl->arena);
        l->c_arena = kc_arena_ref(cl->arena);
        l->sb_items = sbl->items;
        l->c_items = cl->items;
        pr->delta_hits++;
        *ret = out;
        out = (struct kc_pod_list){ 0 };
        return 1;
}

int kc_runtime_manager_get_pods(struct kc_runtime_manager *m, bool all, struct kc_pod_list *ret,
                                struct kc_runtime_error *err)
{
        _cleanup_(pod_sandbox_list_done) struct kc_pod_sandbox_list sbl = { 0 };
        _cleanup_(container_list_done) struct kc_container_list cl = { 0 };
        struct kc_pod_sandbox_filter sf = { .state = KC_SANDBOX_STATE_READY };
        struct kc_container_filter cf = { .state = all ? -1 : KC_CONTAINER_STATE_RUNNING };
        int r;

        if (!m || !ret)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "invalid argument");
        /* As kubelet's getKubeletSandboxes and getKubeletContainers: every sandbox is asked
         * for with no filter at all, every container with an empty one. containerd filters
         * an empty sandbox filter's listing item by item (issue 18: half of a 10-pod relist's
         * 20 us over the raw lists). */
        r = m->svc.ops->list_pod_sandbox(m->svc.self, all ? NULL : &sf, &sbl, err);
        if (r < 0)
                return r;
        r = m->svc.ops->list_containers(m->svc.self, &cf, &cl, err);
        if (r < 0)
                return r;

        pthread_mutex_lock(&m->lock);
        r = all ? 0 : full_listing_reuse(m, &sbl, &cl, ret);
        if (r == 0)
                r = last_listing_reuse(&m->last[all], &m->reuse[all], &sbl, &cl, ret);
        if (r > 0)
                m->reuse[all].listing_hits++;
        if (r == 0) {
                /* A delta keeps the last listing's order, and the listing. */
                r = get_pods_delta_locked(m, all, &m->last[all], &sbl, &cl, ret);
                if (r == 0) {
                        r = get_pods_locked(m, all, &sbl, &cl, ret);
                        /* The cache may be gone (it always is on failure): only a full one
                         * is kept. */
                        if (r >= 0 && m->reuse[all].n == ret->n)
                                last_listing_keep(m, &m->last[all], &m->reuse[all], &sbl, &cl);
                        else
                                last_listing_done(&m->last[all]);
                }
                m->scratch_kept = true;
                m->last_build = m->clock ? kc_clock_now(m->clock) : 0;
        } else if (r > 0 && m->scratch_kept && m->clock &&
                   kc_clock_now(m->clock) - m->last_build >= GET_PODS_SCRATCH_IDLE) {
                get_pods_scratch_release(m);
        }
        pthread_mutex_unlock(&m->lock);
        if (r < 0)
                return out_of_memory(err);
        return 0;
}

/* ------------------------------------------------------------------------ */
/* GetPodStatus                                                               */

/* A pod's arrays up to this length live in struct status_parts itself, not on the heap. */
#define STATUS_INLINE 8

/* What GetPodStatus gathers before building the status; released together. */
struct status_parts {
        struct kc_pod_sandbox_list sbl;
        struct kc_container_list cl;
        struct kc_pod_sandbox_status_result *sb_res;
        size_t n_sb_res;
        struct kc_container_status_result *c_res;
        size_t n_c_res;
        struct kc_sandbox_status *sbs; /* newest first; strings in sb_res */
        size_t n_sbs;
        struct kc_container_status *cs; /* newest first once sorted; strings in c_res */
        size_t n_cs;
        const char **ips; /* strings in sb_res */
        size_t n_ips;
        struct sort_key *order; /* sandboxes, then containers, by age */
        struct kc_container_status *unsorted;
        struct kc_arena **unsorted_holds; /* the arena each of unsorted's strings stay in */
        /* The arena of each of cs's results (kc__pod_status_new_holding()). */
        struct kc_arena **holds;
        /* Termination messages (a ContainerStatus result's arena may be shared); NULL: none. */
        struct kc_arena *msgs;

        struct kc_pod_sandbox_status_result sb_res_buf[STATUS_INLINE];
        struct kc_container_status_result c_res_buf[STATUS_INLINE];
        struct kc_sandbox_status sbs_buf[STATUS_INLINE];
        struct kc_container_status cs_buf[STATUS_INLINE], unsorted_buf[STATUS_INLINE];
        const char *ips_buf[STATUS_INLINE];
        struct sort_key order_buf[STATUS_INLINE];
        struct kc_arena *holds_buf[STATUS_INLINE], *unsorted_holds_buf[STATUS_INLINE];
};

/*
 * Room for @n elements of @size, unset (each is written before it is read,
 * and only the first so many are ever read): in @buf when they fit its
 * STATUS_INLINE, else on the heap.
 */
static void *parts_array(void *buf, size_t n, size_t size)
{
        return n <= STATUS_INLINE ? buf : reallocarray(NULL, n, size);
}

static void parts_array_free(void *p, void *buf)
{
        if (p != buf)
                free(p);
}

/* Zeroes everything but the inline arrays (parts_array() hands them out unset). */
static void status_parts_init(struct status_parts *p)
{
        memset(p, 0, offsetof(struct status_parts, sb_res_buf));
}

static void status_parts_done(struct status_parts *p)
{
        size_t i;

        for (i = 0; i < p->n_sb_res; i++)
                kc_runtime_result_done(&p->sb_res[i]);
        for (i = 0; i < p->n_c_res; i++)
                kc_runtime_result_done(&p->c_res[i]);
        parts_array_free(p->sb_res, p->sb_res_buf);
        parts_array_free(p->c_res, p->c_res_buf);
        parts_array_free(p->sbs, p->sbs_buf);
        parts_array_free(p->cs, p->cs_buf);
        parts_array_free(p->unsorted, p->unsorted_buf);
        parts_array_free(p->ips, p->ips_buf);
        parts_array_free(p->order, p->order_buf);
        parts_array_free(p->holds, p->holds_buf);
        parts_array_free(p->unsorted_holds, p->unsorted_holds_buf);
        pod_sandbox_list_done(&p->sbl);
        container_list_done(&p->cl);
        kc_arena_free(p->msgs);
}

/* p->order for @n items (what it held before is dropped). */
static int parts_order(struct status_parts *p, size_t n)
{
        parts_array_free(p->order, p->order_buf);
        p->order = parts_array(p->order_buf, n, sizeof(*p->order));
        return p->order ? 0 : -ENOMEM;
}

/*
 * The outcome of a status call that returned @r with error @e: 0 to use the
 * result, 1 to skip an object removed since the listing (as upstream does),
 * or the failure (then @e is copied to @err).
 */
static int status_outcome(int r, const struct kc_runtime_error *e, struct kc_runtime_error *err)
{
        if (r >= 0)
                return 0;
        if (e->code == KC_RUNTIME_NOT_FOUND)
                return 1;
        if (err)
                *err = *e;
        return r;
}

/* PodSandboxStatus(@id) into the next free result slot; returns as status_outcome(). */
static int sandbox_status_call(struct kc_runtime_manager *m, const char *id, struct status_parts *p,
                               struct kc_runtime_error *err)
{
        struct kc_runtime_error e;
        int r;

        /* The code is preset in case the service leaves it unset. */
        kc_runtime_error_init(&e, KC_RUNTIME_UNKNOWN);
        r = m->svc.ops->pod_sandbox_status(m->svc.self, id, &p->sb_res[p->n_sb_res], &e);
        return status_outcome(r, &e, err);
}

/* ContainerStatus(@id) into the next free result slot; returns as status_outcome(). */
static int container_status_call(struct kc_runtime_manager *m, const char *id,
                                 struct status_parts *p, struct kc_runtime_error *err)
{
        struct kc_runtime_error e;
        int r;

        kc_runtime_error_init(&e, KC_RUNTIME_UNKNOWN);
        r = m->svc.ops->container_status(m->svc.self, id, &p->c_res[p->n_c_res], &e);
        return status_outcome(r, &e, err);
}

/* determinePodSandboxIPs: the sandbox's IP (when set), then its additional ones. */
static int determine_pod_sandbox_ips(struct status_parts *p, const struct kc_pod_sandbox *st)
{
        size_t k;

        p->ips = parts_array(p->ips_buf, st->n_additional_ips + 1, sizeof(*p->ips));
        if (!p->ips)
                return -ENOMEM;
        if (st->ip && st->ip[0])
                p->ips[p->n_ips++] = st->ip;
        for (k = 0; k < st->n_additional_ips; k++)
                p->ips[p->n_ips++] = st->additional_ips[k];
        return 0;
}

static struct kc_sandbox_status sandbox_status_of(const struct kc_pod_sandbox *st)
{
        return (struct kc_sandbox_status){
                .id = st->id,
                .name = st->metadata.name,
                .namespace = st->metadata.namespace,
                .uid = st->metadata.uid,
                .attempt = st->metadata.attempt,
                .state = st->state,
                .created_at = st->created_at,
                .ip = st->ip,
        };
}

/* Sorts @n keys as sort_key_cmp() does; short runs (a pod's few objects) by insertion. */
static void sort_keys(struct sort_key *k, size_t n)
{
        size_t i, j;

        if (n > STATUS_INLINE) {
                qsort(k, n, sizeof(*k), sort_key_cmp);
                return;
        }
        for (i = 1; i < n; i++) {
                struct sort_key x = k[i];

                for (j = i; j > 0 && sort_key_cmp(&k[j - 1], &x) > 0; j--)
                        k[j] = k[j - 1];
                k[j] = x;
        }
}

/*
 * A pod's sandboxes or containers as a status reads them, whichever array
 * lists them (a ListPodSandbox or ListContainers result, or the sandboxes
 * or containers of a pod GetPods built): each one's ID and CreatedAt.
 */
struct listed {
        const char *items;
        size_t n, stride, id_off, created_off;
};

#define LISTED(array, count)                                                                       \
        ((struct listed){ .items = (const char *)(array),                                          \
                          .n = (count),                                                            \
                          .stride = sizeof(*(array)),                                              \
                          .id_off = offsetof(__typeof__(*(array)), id),                            \
                          .created_off = offsetof(__typeof__(*(array)), created_at) })

/* listed_id() and listed_created() read these as a const char * and an int64_t. */
#define LISTED_FIELDS_OK(type)                                                                     \
        (__builtin_types_compatible_p(__typeof__(((type *)0)->id), const char *) &&                \
         __builtin_types_compatible_p(__typeof__(((type *)0)->created_at), int64_t))
_Static_assert(LISTED_FIELDS_OK(struct kc_pod_sandbox) &&
                       LISTED_FIELDS_OK(struct kc_cri_container) &&
                       LISTED_FIELDS_OK(struct kc_container),
               "an id or created_at that struct listed cannot read");

static const char *listed_id(const struct listed *l, size_t i)
{
        const char *id;

        memcpy(&id, l->items + i * l->stride + l->id_off, sizeof(id));
        return id;
}

static int64_t listed_created(const struct listed *l, size_t i)
{
        int64_t t;

        memcpy(&t, l->items + i * l->stride + l->created_off, sizeof(t));
        return t;
}

/* As getSandboxIDByPodUID orders them: the sandboxes @sb, newest first, in p->order. */
static int sandboxes_newest_first(struct status_parts *p, const struct listed *sb)
{
        size_t i;

        if (parts_order(p, sb->n) < 0)
                return -ENOMEM;
        for (i = 0; i < sb->n; i++)
                p->order[i] = (struct sort_key){ listed_created(sb, i), i };
        sort_keys(p->order, sb->n);
        return 0;
}

/*
 * D55: the index in @prev of listed sandbox @s when @prev gives it in the
 * state it is listed in now (ready, or not ready: a sandbox never becomes
 * ready again); else -1.
 */
static ssize_t prev_sandbox(const struct kc_pod_status *prev, const struct kc_container *s)
{
        if (!prev)
                return -1;
        for (size_t j = 0; j < prev->n_sandboxes; j++) {
                const struct kc_sandbox_status *t = &prev->sandboxes[j];

                if (t->created_at == s->created_at && sandbox_state_cstate(t->state) == s->state &&
                    kc__streq(t->id, s->id))
                        return (ssize_t)j;
        }
        return -1;
}

/*
 * Takes the @i-th newest sandbox, listed as @s, from @prev when it gives
 * it as it is (D55), the pod IPs with it when it is the newest: returns 1,
 * 0 when it does not, -ENOMEM. The pod IPs come from the newest sandbox
 * when ready; taken only when it was the newest in @prev too, whose IPs
 * came from it then.
 */
static int sandbox_from_prev(struct status_parts *p, size_t i, const struct kc_container *s,
                             const struct kc_pod_status *prev)
{
        ssize_t j = prev_sandbox(prev, s);
        const struct kc_sandbox_status *t;

        if (j < 0)
                return 0;
        t = &prev->sandboxes[j];
        if (i == 0 && t->state == KC_SANDBOX_STATE_READY) {
                if (j != 0)
                        return 0;
                p->ips = parts_array(p->ips_buf, prev->n_ips, sizeof(*p->ips));
                if (!p->ips)
                        return -ENOMEM;
                for (size_t k = 0; k < prev->n_ips; k++)
                        p->ips[p->n_ips++] = prev->ips[k];
        }
        p->sbs[p->n_sbs++] = *t;
        return 1;
}

/*
 * Reads the @i-th newest sandbox of @sb, the pod IPs with it when it is
 * the newest and ready: returns 0, 1 when it is gone (skipped), or <0.
 */
static int sandbox_read(struct kc_runtime_manager *m, struct status_parts *p,
                        const struct listed *sb, size_t i, struct kc_runtime_error *err)
{
        const struct kc_pod_sandbox *st;
        int r;

        r = sandbox_status_call(m, listed_id(sb, p->order[i].idx), p, err);
        if (r != 0)
                return r;
        st = &p->sb_res[p->n_sb_res++].status;
        p->sbs[p->n_sbs++] = sandbox_status_of(st);
        /* Pod IPs come only from the newest sandbox, and only when it is ready. */
        if (i == 0 && st->state == KC_SANDBOX_STATE_READY && determine_pod_sandbox_ips(p, st) < 0)
                return out_of_memory(err);
        return 0;
}

/*
 * The status of each sandbox of @sb, newest first, and the pod IPs. @pod
 * (may be NULL): the pod @sb lists the sandboxes of, with @prev (may be
 * NULL), an earlier status of it to take sandboxes from (D55); each
 * sandbox's id is then the pod's own string.
 */
static int pod_sandbox_statuses(struct kc_runtime_manager *m, struct status_parts *p,
                                const struct listed *sb, const struct kc_pod *pod,
                                const struct kc_pod_status *prev, struct kc_runtime_error *err)
{
        size_t i;
        int r;

        p->sb_res = parts_array(p->sb_res_buf, sb->n, sizeof(*p->sb_res));
        p->sbs = parts_array(p->sbs_buf, sb->n, sizeof(*p->sbs));
        if (sandboxes_newest_first(p, sb) < 0 || !p->sb_res || !p->sbs)
                return out_of_memory(err);
        for (i = 0; i < sb->n; i++) {
                const struct kc_container *s = pod ? &pod->sandboxes[p->order[i].idx] : NULL;

                r = s ? sandbox_from_prev(p, i, s, prev) : 0;
                if (r < 0)
                        return out_of_memory(err);
                if (r == 0) {
                        r = sandbox_read(m, p, sb, i, err);
                        if (r < 0)
                                return r;
                        if (r > 0)
                                continue;
                }
                /* The pod's own id string: the next status finds it by address. */
                if (s)
                        p->sbs[p->n_sbs - 1].id = s->id;
        }
        return 0;
}

static struct kc_container_status container_status_of(const struct kc_cri_container *st)
{
        return (struct kc_container_status){
                .id = st->id,
                .name = st->metadata.name,
                .state = st->state,
                .exit_code = st->exit_code,
                .created_at = st->created_at,
                .started_at = st->started_at,
                .finished_at = st->finished_at,
                .restart_count = (int32_t)st->metadata.attempt,
                .hash = container_hash(st),
                .image = st->image,
                .image_ref = st->image_ref,
                .reason = st->reason,
                .message = st->message,
        };
}

/*
 * D55: the index in @prev of listed container @c when @prev gives it in the
 * state it is listed in now, one it stays in until it leaves it for good
 * (created, running, exited); else -1.
 */
static ssize_t prev_container(const struct kc_pod_status *prev, const struct kc_container *c)
{
        if (!prev ||
            (c->state != KC_CONTAINER_STATE_CREATED && c->state != KC_CONTAINER_STATE_RUNNING &&
             c->state != KC_CONTAINER_STATE_EXITED))
                return -1;
        for (size_t j = 0; j < prev->n_containers; j++) {
                const struct kc_container_status *s = &prev->containers[j];

                /* The numbers first: they sit in @prev's block, the ID may be elsewhere. */
                if (s->created_at == c->created_at && s->state == c->state &&
                    kc__streq(s->id, c->id))
                        return (ssize_t)j;
        }
        return -1;
}

/*
 * getPodContainerStatuses: the status of each container of @c, newest
 * first. @pod (may be NULL): the pod @c lists the containers of, with
 * @prev (may be NULL), an earlier status of it to take containers from
 * (D55); each container's id is then the pod's own string.
 */
static int pod_container_statuses(struct kc_runtime_manager *m, struct status_parts *p,
                                  const struct listed *c, const struct kc_pod *pod,
                                  const struct kc_pod_status *prev, struct kc_runtime_error *err)
{
        size_t i;
        int r;

        p->c_res = parts_array(p->c_res_buf, c->n, sizeof(*p->c_res));
        p->unsorted = parts_array(p->unsorted_buf, c->n, sizeof(*p->unsorted));
        p->unsorted_holds = parts_array(p->unsorted_holds_buf, c->n, sizeof(*p->unsorted_holds));
        if (parts_order(p, c->n) < 0 || !p->c_res || !p->unsorted || !p->unsorted_holds)
                return out_of_memory(err);
        for (i = 0; i < c->n; i++) {
                ssize_t j = pod ? prev_container(prev, &pod->containers[i]) : -1;
                const struct kc_cri_container *st;

                if (j >= 0) {
                        p->order[p->n_cs] =
                                (struct sort_key){ prev->containers[j].created_at, p->n_cs };
                        p->unsorted_holds[p->n_cs] = kc__pod_status_held_arena(prev, (size_t)j);
                        p->unsorted[p->n_cs] = prev->containers[j];
                } else {
                        r = container_status_call(m, listed_id(c, i), p, err);
                        if (r < 0)
                                return r;
                        if (r > 0)
                                continue;
                        p->unsorted_holds[p->n_cs] = p->c_res[p->n_c_res].arena;
                        st = &p->c_res[p->n_c_res++].status;
                        p->order[p->n_cs] = (struct sort_key){ st->created_at, p->n_cs };
                        p->unsorted[p->n_cs] = container_status_of(st);
                        /* toKubeContainerStatus: an exited container's termination message. */
                        if ((st->state == KC_CONTAINER_STATE_EXITED && !p->msgs &&
                             kc_arena_new(&p->msgs) < 0) ||
                            kc__termination_message(st, p->msgs, &p->unsorted[p->n_cs].message) < 0)
                                return out_of_memory(err);
                }
                /* The pod's own id string: the next status finds it by address. */
                if (pod)
                        p->unsorted[p->n_cs].id = pod->containers[i].id;
                p->n_cs++;
        }
        sort_keys(p->order, p->n_cs);
        p->cs = parts_array(p->cs_buf, p->n_cs, sizeof(*p->cs));
        p->holds = parts_array(p->holds_buf, p->n_cs, sizeof(*p->holds));
        if (!p->cs || !p->holds)
                return out_of_memory(err);
        for (i = 0; i < p->n_cs; i++) {
                p->cs[i] = p->unsorted[p->order[i].idx];
                p->holds[i] = p->unsorted_holds[p->order[i].idx];
        }
        return 0;
}

/* The pod status of @p's results; @pod (may be NULL): the pod whose ids they name. */
static int status_of_parts(struct status_parts *p, const char *uid, const char *name,
                           const char *namespace, const struct kc_pod *pod,
                           struct kc_pod_status **ret, struct kc_runtime_error *err)
{
        int r;

        /* A status result's strings stay in its arena when the runtime keeps that one too. */
        r = kc__pod_status_new_holding(
                &(struct kc_pod_status){
                        .id = uid,
                        .name = name,
                        .namespace = namespace,
                        .ips = p->ips,
                        .n_ips = p->n_ips,
                        .sandboxes = p->sbs,
                        .n_sandboxes = p->n_sbs,
                        .containers = p->cs,
                        .n_containers = p->n_cs,
                },
                p->holds, pod, ret);
        if (r < 0)
                return out_of_memory(err);
        return 0;
}

int kc_runtime_manager_get_pod_status(struct kc_runtime_manager *m, const char *uid,
                                      const char *name, const char *namespace,
                                      struct kc_pod_status **ret, struct kc_runtime_error *err)
{
        _cleanup_(status_parts_done) struct status_parts p;
        struct kc_label sel = { KC_LABEL_POD_UID, uid };
        int r;

        status_parts_init(&p);
        if (!m || !uid || !ret)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "invalid argument");
        r = m->svc.ops->list_pod_sandbox(m->svc.self,
                                         &(struct kc_pod_sandbox_filter){
                                                 .state = -1,
                                                 .label_selector = &sel,
                                                 .n_label_selector = 1,
                                         },
                                         &p.sbl, err);
        if (r < 0)
                return r;
        r = pod_sandbox_statuses(m, &p, &LISTED(p.sbl.items, p.sbl.n), NULL, NULL, err);
        if (r < 0)
                return r;
        r = m->svc.ops->list_containers(m->svc.self,
                                        &(struct kc_container_filter){
                                                .state = -1,
                                                .label_selector = &sel,
                                                .n_label_selector = 1,
                                        },
                                        &p.cl, err);
        if (r < 0)
                return r;
        r = pod_container_statuses(m, &p, &LISTED(p.cl.items, p.cl.n), NULL, NULL, err);
        if (r < 0)
                return r;
        return status_of_parts(&p, uid, name, namespace, NULL, ret, err);
}

int kc_runtime_manager_get_listed_pod_status(struct kc_runtime_manager *m, const struct kc_pod *pod,
                                             const struct kc_pod_status *prev,
                                             struct kc_pod_status **ret,
                                             struct kc_runtime_error *err)
{
        _cleanup_(status_parts_done) struct status_parts p;
        int r;

        status_parts_init(&p);
        if (!m || !pod || !pod->id || !ret)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "invalid argument");
        /* The new status takes held arenas of @prev's (a count each): cold by now. */
        if (prev)
                kc__pod_status_prefetch_held(prev);
        r = pod_sandbox_statuses(m, &p, &LISTED(pod->sandboxes, pod->n_sandboxes), pod, prev, err);
        if (r < 0)
                return r;
        r = pod_container_statuses(m, &p, &LISTED(pod->containers, pod->n_containers), pod, prev,
                                   err);
        if (r < 0)
                return r;
        return status_of_parts(&p, pod->id, pod->name, pod->namespace, pod, ret, err);
}

size_t kc__listed_changed_ids(const struct kc_pod *pod, const struct kc_pod *old, const char **ret,
                              size_t max)
{
        bool same = old && old->n_containers == pod->n_containers;
        size_t i, n = 0;

        for (i = 0; i < pod->n_containers && n < max; i++) {
                const struct kc_container *c = &pod->containers[i];
                const struct kc_container *o = same ? &old->containers[i] : NULL;

                /* By address: a pod and the one listed before share their id strings. */
                if (o && o->id == c->id && o->state == c->state && o->created_at == c->created_at)
                        continue;
                ret[n++] = c->id;
        }
        return n;
}

/* How many containers of a pod one prefetch asks for at most. */
#define PREFETCH_IDS_MAX 8

void kc_runtime_manager_prefetch_listed_pod_status(struct kc_runtime_manager *m,
                                                   const struct kc_pod *pod,
                                                   const struct kc_pod *old, unsigned ahead)
{
        const char *ids[PREFETCH_IDS_MAX];
        size_t i, n;

        if (!pod)
                return;
        /* The status takes a reference to the block the pod's ids live in. */
        if (ahead == 2)
                kc__pod_prefetch_strings_block(pod);
        if (!m->svc.ops->prefetch_container_statuses)
                return;
        n = kc__listed_changed_ids(pod, old, ids, PREFETCH_IDS_MAX);
        if (n == 0)
                return;
        if (ahead >= 3) {
                /* The runtime hashes each id string two calls from now. */
                for (i = 0; i < n; i++)
                        __builtin_prefetch(ids[i]);
                return;
        }
        m->svc.ops->prefetch_container_statuses(m->svc.self, ids, n, ahead == 2);
}

/* ------------------------------------------------------------------------ */
/* As a kc_pod_runtime                                                        */

static int mgr_get_pods(void *self, bool all, struct kc_pod_list *ret, struct kc_runtime_error *err)
{
        return kc_runtime_manager_get_pods(self, all, ret, err);
}

static int mgr_get_pod_status(void *self, const char *uid, const char *name, const char *namespace,
                              struct kc_pod_status **ret, struct kc_runtime_error *err)
{
        return kc_runtime_manager_get_pod_status(self, uid, name, namespace, ret, err);
}

static int mgr_get_listed_pod_status(void *self, const struct kc_pod *pod,
                                     const struct kc_pod_status *prev, struct kc_pod_status **ret,
                                     struct kc_runtime_error *err)
{
        return kc_runtime_manager_get_listed_pod_status(self, pod, prev, ret, err);
}

static void mgr_prefetch_listed_pod_status(void *self, const struct kc_pod *pod,
                                           const struct kc_pod *old, unsigned ahead)
{
        kc_runtime_manager_prefetch_listed_pod_status(self, pod, old, ahead);
}

static int mgr_remove_pod_sandbox(void *self, const char *id, struct kc_runtime_error *err)
{
        struct kc_runtime_manager *m = self;

        return m->svc.ops->remove_pod_sandbox(m->svc.self, id, err);
}

static const struct kc_pod_runtime_ops manager_pod_runtime_ops = {
        .get_pods = mgr_get_pods,
        .get_pod_status = mgr_get_pod_status,
        .get_listed_pod_status = mgr_get_listed_pod_status,
        .prefetch_listed_pod_status = mgr_prefetch_listed_pod_status,
        .remove_pod_sandbox = mgr_remove_pod_sandbox,
};

struct kc_pod_runtime kc_runtime_manager_pod_runtime(struct kc_runtime_manager *m)
{
        return (struct kc_pod_runtime){ .ops = &manager_pod_runtime_ops, .self = m };
}

struct kc_runtime_service kc_runtime_manager_service(struct kc_runtime_manager *m)
{
        return m ? m->svc : (struct kc_runtime_service){ 0 };
}
