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
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct kc_runtime_manager {
        struct kc_runtime_service svc;
        struct kc_clock *clock;
};

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
        *ret = m;
        return 0;
}

struct kc_runtime_manager *kc_runtime_manager_free(struct kc_runtime_manager *m)
{
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

/* One pod being assembled: counts first, then slots in the shared arrays. */
struct group {
        const char *uid;
        const char *name;
        const char *namespace;
        int64_t created_at;
        bool has_sandbox;
        size_t first_seen; /* order of appearance; breaks CreatedAt ties */
        size_t n_sandboxes, n_containers;
        size_t sb_off, c_off; /* where its entries start in the shared arrays */
};

/* CreatedAt descending, as upstream; equal times keep the listing order. */
static int group_cmp(const void *a, const void *b)
{
        const struct group *x = *(const struct group *const *)a;
        const struct group *y = *(const struct group *const *)b;

        if (x->created_at != y->created_at)
                return x->created_at > y->created_at ? -1 : 1;
        return x->first_seen < y->first_seen ? -1 : x->first_seen > y->first_seen;
}

static const char *sandbox_pod_uid(const struct kc_pod_sandbox *s)
{
        const char *uid = kc__label_get(s->labels, s->n_labels, KC_LABEL_POD_UID);

        return uid ? uid : s->metadata.uid;
}

static struct group *group_get(struct kc_map *map, struct group *groups, size_t *n_groups,
                               const char *uid, const struct kc_label *labels, size_t n_labels,
                               int *r)
{
        struct group *g = kc_map_get(map, uid);

        if (g)
                return g;
        g = &groups[*n_groups];
        *g = (struct group){
                .uid = uid,
                .name = kc__label_get(labels, n_labels, KC_LABEL_POD_NAME),
                .namespace = kc__label_get(labels, n_labels, KC_LABEL_POD_NAMESPACE),
                .first_seen = *n_groups,
        };
        *r = kc_map_put(map, g->uid, g);
        if (*r < 0)
                return NULL;
        (*n_groups)++;
        return g;
}

int kc_runtime_manager_get_pods(struct kc_runtime_manager *m, bool all, struct kc_pod_list *ret,
                                struct kc_runtime_error *err)
{
        _cleanup_(pod_sandbox_list_done) struct kc_pod_sandbox_list sbl = { 0 };
        _cleanup_(container_list_done) struct kc_container_list cl = { 0 };
        _cleanup_(kc_map_freep) struct kc_map *map = NULL;
        _cleanup_free_ struct group *groups = NULL;
        _cleanup_free_ struct group **order = NULL;
        _cleanup_free_ struct kc_container *sbs = NULL, *ctrs = NULL;
        _cleanup_free_ size_t *sb_group = NULL, *c_group = NULL;
        _cleanup_(kc_pod_list_done) struct kc_pod_list out = { 0 };
        struct kc_pod_sandbox_filter sf = { .state = all ? -1 : KC_SANDBOX_STATE_READY };
        struct kc_container_filter cf = { .state = all ? -1 : KC_CONTAINER_STATE_RUNNING };
        size_t n_groups = 0, i, off;
        struct group *g;
        int r = 0;

        if (!m || !ret)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "invalid argument");
        r = m->svc.ops->list_pod_sandbox(m->svc.self, &sf, &sbl, err);
        if (r < 0)
                return r;
        r = m->svc.ops->list_containers(m->svc.self, &cf, &cl, err);
        if (r < 0)
                return r;

        groups = malloc((sbl.n + cl.n + 1) * sizeof(*groups));
        sb_group = malloc((sbl.n + 1) * sizeof(*sb_group));
        c_group = malloc((cl.n + 1) * sizeof(*c_group));
        sbs = malloc((sbl.n + 1) * sizeof(*sbs));
        ctrs = malloc((cl.n + 1) * sizeof(*ctrs));
        if (!groups || !sb_group || !c_group || !sbs || !ctrs || kc_map_new(&map) < 0)
                goto oom;

        /* Pass 1: group by pod UID (sandboxes first, as upstream) and count. */
        for (i = 0; i < sbl.n; i++) {
                const struct kc_pod_sandbox *s = &sbl.items[i];
                const char *uid = sandbox_pod_uid(s);

                if (!uid)
                        uid = "";
                g = group_get(map, groups, &n_groups, uid, s->labels, s->n_labels, &r);
                if (!g)
                        goto oom;
                if (!g->has_sandbox || s->created_at > g->created_at)
                        g->created_at = s->created_at;
                g->has_sandbox = true;
                g->n_sandboxes++;
                sb_group[i] = (size_t)(g - groups);
        }
        for (i = 0; i < cl.n; i++) {
                const struct kc_cri_container *c = &cl.items[i];
                const char *uid = kc__label_get(c->labels, c->n_labels, KC_LABEL_POD_UID);

                if (!uid)
                        uid = "";
                g = group_get(map, groups, &n_groups, uid, c->labels, c->n_labels, &r);
                if (!g)
                        goto oom;
                g->n_containers++;
                c_group[i] = (size_t)(g - groups);
        }

        /* Pass 2: lay each pod's entries out contiguously, in listing order. */
        for (i = 0, off = 0; i < n_groups; i++) {
                groups[i].sb_off = off;
                off += groups[i].n_sandboxes;
                groups[i].n_sandboxes = 0;
        }
        for (i = 0, off = 0; i < n_groups; i++) {
                groups[i].c_off = off;
                off += groups[i].n_containers;
                groups[i].n_containers = 0;
        }
        for (i = 0; i < sbl.n; i++) {
                const struct kc_pod_sandbox *s = &sbl.items[i];

                g = &groups[sb_group[i]];
                sbs[g->sb_off + g->n_sandboxes++] = (struct kc_container){
                        .id = s->id,
                        .name = s->metadata.name,
                        .state = s->state == KC_SANDBOX_STATE_READY ? KC_CONTAINER_STATE_RUNNING
                                                                    : KC_CONTAINER_STATE_EXITED,
                        .created_at = s->created_at,
                };
        }
        for (i = 0; i < cl.n; i++) {
                const struct kc_cri_container *c = &cl.items[i];

                g = &groups[c_group[i]];
                ctrs[g->c_off + g->n_containers++] = (struct kc_container){
                        .id = c->id,
                        .name = c->metadata.name,
                        .image = c->image,
                        .hash = kc__parse_container_hash(kc__label_get(
                                c->annotations, c->n_annotations, KC_ANNOTATION_CONTAINER_HASH)),
                        .state = c->state,
                        .created_at = c->created_at,
                };
        }

        order = malloc((n_groups + 1) * sizeof(*order));
        if (!order)
                goto oom;
        for (i = 0; i < n_groups; i++)
                order[i] = &groups[i];
        qsort(order, n_groups, sizeof(*order), group_cmp);

        if (n_groups > 0) {
                out.pods = calloc(n_groups, sizeof(*out.pods));
                if (!out.pods)
                        goto oom;
        }
        for (i = 0; i < n_groups; i++) {
                g = order[i];
                r = kc_pod_new(
                        &(struct kc_pod){
                                .id = g->uid,
                                .name = g->name,
                                .namespace = g->namespace,
                                .created_at = g->created_at,
                                .containers = ctrs + g->c_off,
                                .n_containers = g->n_containers,
                                .sandboxes = sbs + g->sb_off,
                                .n_sandboxes = g->n_sandboxes,
                        },
                        &out.pods[out.n]);
                if (r < 0)
                        goto oom;
                out.n++;
        }
        *ret = out;
        out = (struct kc_pod_list){ 0 };
        return 0;
oom:
        return kc_runtime_error_set(err, -ENOMEM, KC_RUNTIME_INTERNAL, "out of memory");
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
