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

#include "core/cleanup.h"
#include "core/clock.h"
#include "core/map.h"
#include "internal.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/manager.h"
#include "runtime/runtime_service.h"
#include "runtime/sync_pod.h"

/*
 * The pod reuse cache: UID -> the kc_pod this manager returned last for it,
 * one map per value of GetPods' `all`. kc_pod objects are immutable, so
 * when a pod's freshly listed sandboxes and containers (and the fields taken
 * from them) equal the cached pod's, returning another reference to the
 * cached pod is indistinguishable from building a new one. Every listing is
 * still read in full and compared field by field: nothing is assumed about
 * the service returning the same memory twice (a CRI client never does).
 *
 * Each call builds the next cache in a second map (holding one reference per
 * pod it returned) and swaps it in at the end, so pods the listing no longer
 * has are dropped without any bookkeeping. Map keys are the pods' own ids.
 */

/* One pod being assembled: counts first, then slots in the shared arrays. */
struct group {
        const char *uid; /* in the listing */
        const char *name;
        const char *namespace;
        int64_t created_at;
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
        char *pod_logs_root; /* podLogsRootDirectory; NULL: log directories are not created */

        /* GetPods state, reused across calls. get_pods may run on several threads. */
        pthread_mutex_t lock;
        struct kc_map *cache[2];    /* [all]: pod UID -> struct kc_pod (one reference) */
        struct kc_map *next_cache;  /* being built by the current call; empty between calls */
        struct kc_map *group_index; /* per call: pod UID -> group index + 1 */
        struct group *groups;
        size_t cap_groups;
        uint32_t *item_group; /* item (sandboxes, then containers) -> group */
        size_t cap_item_group;
        uint32_t *sb_perm, *c_perm; /* items laid out group by group, in listing order */
        size_t cap_sb_perm, cap_c_perm;
        struct sort_key *order;
        size_t cap_order;
        struct kc_container *tmp; /* one pod's entries while building it */
        size_t cap_tmp;
};

/* Drops every pod reference @m holds and empties it. */
static void pod_map_clear(struct kc_map *m)
{
        size_t it = 0;
        void *p;

        if (!m)
                return;
        while (kc_map_next(m, &it, NULL, &p))
                kc_pod_unref(p);
        kc_map_clear(m);
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
        if (kc_map_new(&m->cache[0]) < 0 || kc_map_new(&m->cache[1]) < 0 ||
            kc_map_new(&m->next_cache) < 0 || kc_map_new(&m->group_index) < 0) {
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
                pod_map_clear(m->cache[i]);
                kc_map_free(m->cache[i]);
        }
        kc_map_free(m->next_cache);
        kc_map_free(m->group_index);
        free(m->groups);
        free(m->item_group);
        free(m->sb_perm);
        free(m->c_perm);
        free(m->order);
        free(m->tmp);
        free(m->pod_logs_root);
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

const char *kc__runtime_manager_pod_logs_root(const struct kc_runtime_manager *m)
{
        return m->pod_logs_root;
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
#define SCRATCH(m, field, n)                                                                       \
        scratch_reserve((void **)&(m)->field, &(m)->cap_##field, (n), sizeof(*(m)->field))

static const char *sandbox_pod_uid(const struct kc_pod_sandbox *s)
{
        const char *uid = kc__label_get(s->labels, s->n_labels, KC_LABEL_POD_UID);

        return uid ? uid : s->metadata.uid;
}

/* The group of the items with pod UID @uid, new when this call had not seen it. */
static int group_get(struct kc_runtime_manager *m, uint32_t *n_groups, const char *uid,
                     const struct kc_label *labels, size_t n_labels, uint32_t *ret)
{
        uintptr_t v = (uintptr_t)kc_map_get(m->group_index, uid);
        int r;

        if (v) {
                *ret = (uint32_t)(v - 1);
                return 0;
        }
        r = kc_map_put(m->group_index, uid, (void *)(uintptr_t)(*n_groups + 1));
        if (r < 0)
                return r;
        m->groups[*n_groups] = (struct group){
                .uid = uid,
                .name = kc__label_get(labels, n_labels, KC_LABEL_POD_NAME),
                .namespace = kc__label_get(labels, n_labels, KC_LABEL_POD_NAMESPACE),
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
                    !kc__streq(o->id, s->id) || !kc__streq(o->name, s->metadata.name) || o->image ||
                    o->hash != 0)
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
        const char *uid, *prev_uid = NULL;
        uint32_t n_groups = 0, gi = 0, off;
        struct kc_map *swap;
        bool sorted = true;
        struct group *g;
        size_t i, n_items;
        int r;

        if (sbl->n > UINT32_MAX / 2 || cl->n > UINT32_MAX / 2)
                return -ENOMEM;
        n_items = sbl->n + cl->n;
        if (SCRATCH(m, groups, n_items) < 0 || SCRATCH(m, item_group, n_items) < 0 ||
            SCRATCH(m, sb_perm, sbl->n) < 0 || SCRATCH(m, c_perm, cl->n) < 0)
                return -ENOMEM;

        /*
         * Pass 1: group by pod UID (sandboxes first, as upstream) and count.
         * Runtimes list a pod's objects together, so an item with the same
         * UID as the one before skips the lookup.
         */
        for (i = 0; i < n_items; i++) {
                const struct kc_label *labels;
                size_t n_labels;

                if (i < sbl->n) {
                        labels = sbl->items[i].labels;
                        n_labels = sbl->items[i].n_labels;
                        uid = sandbox_pod_uid(&sbl->items[i]);
                } else {
                        labels = cl->items[i - sbl->n].labels;
                        n_labels = cl->items[i - sbl->n].n_labels;
                        uid = kc__label_get(labels, n_labels, KC_LABEL_POD_UID);
                }
                if (!uid)
                        uid = "";
                if (!prev_uid || strcmp(uid, prev_uid) != 0) {
                        r = group_get(m, &n_groups, uid, labels, n_labels, &gi);
                        if (r < 0)
                                goto fail;
                        prev_uid = uid;
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

        /* Pass 2: lay each pod's entries out contiguously, in listing order. */
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

        /* The grouping keys point into this listing: forget them now. */
        kc_map_clear(m->group_index);

        /* CreatedAt descending, ties in order of appearance. Often already so. */
        if (SCRATCH(m, order, n_groups) < 0)
                return -ENOMEM;
        for (gi = 0; gi < n_groups; gi++) {
                m->order[gi] = (struct sort_key){ m->groups[gi].created_at, gi };
                if (gi > 0 && m->order[gi].created_at > m->order[gi - 1].created_at)
                        sorted = false;
        }
        if (!sorted)
                qsort(m->order, n_groups, sizeof(*m->order), sort_key_cmp);

        /* Pass 3: reuse or build each pod; the next cache holds one reference each. */
        if (n_groups > 0) {
                out.pods = malloc(n_groups * sizeof(*out.pods));
                if (!out.pods) {
                        r = -ENOMEM;
                        goto fail;
                }
        }
        r = kc_map_reserve(m->next_cache, n_groups);
        if (r < 0)
                goto fail;
        for (i = 0; i < n_groups; i++) {
                struct kc_pod *p;

                g = &m->groups[m->order[i].idx];
                p = kc_map_get(m->cache[all], g->uid);
                if (p && pod_unchanged(p, g, sbl, m->sb_perm, cl, m->c_perm)) {
                        kc_pod_ref(p);
                } else {
                        r = pod_build(m, g, sbl, cl, &p);
                        if (r < 0)
                                goto fail;
                }
                /* Keyed by the pod's own copy of the UID; cannot fail after the reserve. */
                (void)kc_map_put(m->next_cache, p->id, p);
                out.pods[out.n++] = kc_pod_ref(p);
        }

        /* The old cache's references go; pods this listing lacks go with them. */
        pod_map_clear(m->cache[all]);
        swap = m->cache[all];
        m->cache[all] = m->next_cache;
        m->next_cache = swap;
        (void)kc_map_reserve(m->group_index, n_groups); /* best effort: sizes the next call */
        *ret = out;
        out = (struct kc_pod_list){ 0 };
        return 0;
fail:
        /* Leave the cache as it was; undo the partial next one. */
        kc_map_clear(m->group_index);
        pod_map_clear(m->next_cache);
        return r;
}

size_t kc__runtime_manager_cached_pods(struct kc_runtime_manager *m, bool all)
{
        size_t n;

        pthread_mutex_lock(&m->lock);
        n = kc_map_size(m->cache[all]);
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
        struct kc_pod_sandbox_filter sf = { .state = -1,
                                            .label_selector = &sel,
                                            .n_label_selector = 1 };
        struct kc_container_filter cf = { .state = -1,
                                          .label_selector = &sel,
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
                r = m->svc.ops->container_status(m->svc.self, cl.items[i].id, &res.c[res.n_c], &e2);
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
                _cleanup_free_ struct kc_container_status *sorted =
                        calloc(n_cs + 1, sizeof(*sorted));

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

static int mgr_get_pods(void *self, bool all, struct kc_pod_list *ret, struct kc_runtime_error *err)
{
        return kc_runtime_manager_get_pods(self, all, ret, err);
}

static int mgr_get_pod_status(void *self, const char *uid, const char *name, const char *namespace,
                              struct kc_pod_status **ret, struct kc_runtime_error *err)
{
        return kc_runtime_manager_get_pod_status(self, uid, name, namespace, ret, err);
}

static int mgr_remove_pod_sandbox(void *self, const char *id, struct kc_runtime_error *err)
{
        struct kc_runtime_manager *m = self;

        return m->svc.ops->remove_pod_sandbox(m->svc.self, id, err);
}

static const struct kc_pod_runtime_ops manager_pod_runtime_ops = {
        .get_pods = mgr_get_pods,
        .get_pod_status = mgr_get_pod_status,
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
