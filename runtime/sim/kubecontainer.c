/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubecontainer face (GetPods, GetPodStatus), like upstream's
 * containertest.FakeRuntime. Its kc_pod / kc_pod_status objects are
 * immutable, so each sim pod caches the ones it built last and hands out
 * references until the pod changes (kc__sim_pod_touch()).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/cleanup.h"
#include "core/list.h"
#include "core/lock.h"
#include "core/map.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/sim.h"
#include "sim_internal.h"

/* ------------------------------------------------------------------------ */
/* GetPods                                                                    */

/* Builds the kc_pod for @p p; *ret = NULL when nothing qualifies (all == false). */
static int build_kpod(struct kc_sim *s, struct sim_pod *p, bool all, struct kc_pod **ret)
{
        struct kc_container *ctrs, *sbs;
        struct sim_container *c;
        struct sim_sandbox *sb;
        size_t nc = 0, ns = 0, need = p->containers.n + p->sandboxes.n;
        int64_t created = 0;
        int r;

        /* Allocated even when nothing is needed: the arithmetic below wants a pointer. */
        r = KC_ARRAY_GROW(s->kscratch, s->kscratch_cap, need > 0 ? need : 1, 16);
        if (r < 0)
                return r;
        ctrs = s->kscratch;
        sim_for_each_container(c, p)
        {
                if (!all && c->v.state != KC_CONTAINER_STATE_RUNNING)
                        continue;
                ctrs[nc++] = (struct kc_container){
                        .id = c->v.id,
                        .name = c->v.metadata.name,
                        .image = c->v.image,
                        .hash = c->hash,
                        .state = c->v.state,
                        .created_at = c->v.created_at,
                };
        }
        sbs = ctrs + nc;
        sim_for_each_sandbox(sb, p)
        {
                if (!all && sb->cstate != KC_CONTAINER_STATE_RUNNING)
                        continue;
                sbs[ns++] = (struct kc_container){
                        .id = sb->v.id,
                        .name = sb->v.metadata.name,
                        .state = sb->cstate,
                        .created_at = sb->v.created_at,
                };
                if (ns == 1 || sb->v.created_at > created)
                        created = sb->v.created_at;
        }
        if (nc == 0 && ns == 0 && (!all || !p->from_spec)) {
                *ret = NULL;
                return 0;
        }
        return kc_pod_new(
                &(struct kc_pod){
                        .id = p->uid,
                        .name = p->name,
                        .namespace = p->namespace,
                        .created_at = created,
                        .containers = ctrs,
                        .n_containers = nc,
                        .sandboxes = sbs,
                        .n_sandboxes = ns,
                },
                ret);
}

/* The cached kc_pod of @p p for GetPods(@p all), built when missing; may be NULL. */
static int cached_kpod(struct kc_sim *s, struct sim_pod *p, bool all, struct kc_pod **ret)
{
        int r;

        if (all) {
                if (!p->cache_all) {
                        r = build_kpod(s, p, true, &p->cache_all);
                        if (r < 0)
                                return r;
                }
                *ret = p->cache_all;
                return 0;
        }
        if (!p->cache_running_valid) {
                r = build_kpod(s, p, false, &p->cache_running);
                if (r < 0)
                        return r;
                p->cache_running_valid = true;
        }
        *ret = p->cache_running;
        return 0;
}

static int sim_get_pods(void *self, bool all, struct kc_pod_list *ret, struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        KC_LOCK_GUARD(&s->lock);
        struct kc_pod_list out = { 0 };
        struct sim_pod *p;
        struct kc_pod *kp;
        int r;

        r = kc__sim_enter_locked(s, SIM_OP_GET_PODS, NULL, err);
        if (r < 0)
                return r;
        if (s->st.n_pods > 0) {
                out.pods = malloc(s->st.n_pods * sizeof(*out.pods));
                if (!out.pods)
                        return kc__sim_oom(err);
        }
        sim_for_each_pod(p, &s->st)
        {
                r = cached_kpod(s, p, all, &kp);
                if (r < 0) {
                        kc_pod_list_done(&out);
                        return kc_runtime_error_set(err, r, KC_RUNTIME_INTERNAL,
                                                    "building pods: %s", strerror(-r));
                }
                if (kp)
                        out.pods[out.n++] = kc_pod_ref(kp);
        }
        *ret = out;
        return 0;
}

/* ------------------------------------------------------------------------ */
/* GetPodStatus                                                               */

struct sort_item {
        const void *obj;
        int64_t created_at;
        size_t idx;
};

/* Newest first; ties keep insertion order (the runtime manager does the same). */
static int sort_item_cmp(const void *a, const void *b)
{
        const struct sort_item *x = a, *y = b;

        if (x->created_at != y->created_at)
                return x->created_at > y->created_at ? -1 : 1;
        return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * Fills @p items with the objects of @p objs, newest first. An object's
 * creation time is at @p created_at_off in it; its struct sim_object is its
 * first member, so an item's obj is the object itself.
 */
static void sort_objects(const struct sim_objects *objs, size_t created_at_off,
                         struct sort_item *items)
{
        const struct sim_object *o;
        size_t i = 0;

        kc_list_for_each_entry (o, &objs->list, struct sim_object, link) {
                items[i] =
                        (struct sort_item){ o, *(const int64_t *)((const char *)o + created_at_off),
                                            i };
                i++;
        }
        qsort(items, objs->n, sizeof(*items), sort_item_cmp);
}

static struct kc_sandbox_status sandbox_status(const struct sim_sandbox *sb)
{
        const char *const *more;
        const char *ip;
        size_t n_more;

        kc__sim_sandbox_ips(sb, &ip, &more, &n_more);
        return (struct kc_sandbox_status){
                .id = sb->v.id,
                .name = sb->v.metadata.name,
                .namespace = sb->v.metadata.namespace,
                .uid = sb->v.metadata.uid,
                .attempt = sb->v.metadata.attempt,
                .state = sb->v.state,
                .created_at = sb->v.created_at,
                .ip = ip,
        };
}

static struct kc_container_status container_status(const struct sim_container *c)
{
        return (struct kc_container_status){
                .id = c->v.id,
                .name = c->v.metadata.name,
                .state = c->v.state,
                .exit_code = c->v.exit_code,
                .created_at = c->v.created_at,
                .started_at = c->v.started_at,
                .finished_at = c->v.finished_at,
                .restart_count = (int32_t)c->v.metadata.attempt,
                .hash = c->hash,
                .image = c->v.image,
                .image_ref = c->v.image_ref,
                .reason = c->v.reason,
                .message = c->v.message,
        };
}

/*
 * The pod's IPs (malloc'd array of borrowed strings, NULL when the pod has
 * none to report); @p newest is its newest sandbox, if any.
 */
static int pod_ips(const struct sim_pod *p, const struct sim_sandbox *newest, const char ***ret,
                   size_t *ret_n)
{
        _cleanup_free_ const char **ips = NULL;
        const char *const *more;
        const char *ip;
        size_t i, n = 0, n_more;

        if (p->from_spec) {
                ips = calloc(p->n_ips + 1, sizeof(*ips));
                if (!ips)
                        return -ENOMEM;
                for (i = 0; i < p->n_ips; i++)
                        ips[n++] = p->ips[i];
        } else if (newest) {
                /* As the runtime manager: the newest sandbox's IPs, only when it is ready. */
                kc__sim_sandbox_ips(newest, &ip, &more, &n_more);
                ips = calloc(n_more + 2, sizeof(*ips));
                if (!ips)
                        return -ENOMEM;
                if (newest->v.state == KC_SANDBOX_STATE_READY) {
                        if (ip)
                                ips[n++] = ip;
                        for (i = 0; i < n_more; i++)
                                ips[n++] = more[i];
                }
        }
        *ret = TAKE_PTR(ips);
        *ret_n = n;
        return 0;
}

static int build_status(struct sim_pod *p, struct kc_pod_status **ret)
{
        _cleanup_free_ struct sort_item *items = NULL;
        _cleanup_free_ struct kc_sandbox_status *sbs = NULL;
        _cleanup_free_ struct kc_container_status *cs = NULL;
        _cleanup_free_ const char **ips = NULL;
        size_t i, n, n_ips = 0;
        int r;

        n = p->sandboxes.n > p->containers.n ? p->sandboxes.n : p->containers.n;
        items = calloc(n + 1, sizeof(*items));
        sbs = calloc(p->sandboxes.n + 1, sizeof(*sbs));
        cs = calloc(p->containers.n + 1, sizeof(*cs));
        if (!items || !sbs || !cs)
                return -ENOMEM;

        sort_objects(&p->sandboxes, offsetof(struct sim_sandbox, v.created_at), items);
        for (i = 0; i < p->sandboxes.n; i++)
                sbs[i] = sandbox_status(items[i].obj);
        r = pod_ips(p, p->sandboxes.n > 0 ? items[0].obj : NULL, &ips, &n_ips);
        if (r < 0)
                return r;
        sort_objects(&p->containers, offsetof(struct sim_container, v.created_at), items);
        for (i = 0; i < p->containers.n; i++)
                cs[i] = container_status(items[i].obj);

        return kc_pod_status_new(
                &(struct kc_pod_status){
                        .id = p->uid,
                        .name = p->name,
                        .namespace = p->namespace,
                        .ips = ips,
                        .n_ips = n_ips,
                        .sandboxes = sbs,
                        .n_sandboxes = p->sandboxes.n,
                        .containers = cs,
                        .n_containers = p->containers.n,
                },
                ret);
}

static int sim_get_pod_status(void *self, const char *uid, const char *name, const char *namespace,
                              struct kc_pod_status **ret, struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        KC_LOCK_GUARD(&s->lock);
        struct sim_pod *p;
        int r, q;

        (void)name;
        (void)namespace;
        if (!uid || !ret)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "pod UID is required");
        r = kc__sim_enter_locked(s, SIM_OP_GET_POD_STATUS, uid, err);
        if (r < 0) {
                /* As upstream: a failing GetPodStatus still returns a status with the ID. */
                q = kc_pod_status_new_default(uid, ret);
                if (q < 0)
                        *ret = NULL;
                return r;
        }
        p = kc_map_get(s->st.pods, uid);
        if (!p) {
                r = kc_pod_status_new_default(uid, ret);
                if (r < 0)
                        return kc_runtime_error_set(err, r, KC_RUNTIME_INTERNAL, "out of memory");
                return 0;
        }
        if (!p->cache_status) {
                r = build_status(p, &p->cache_status);
                if (r < 0)
                        return kc_runtime_error_set(err, r, KC_RUNTIME_INTERNAL,
                                                    "building pod status: %s", strerror(-r));
        }
        *ret = kc_pod_status_ref(p->cache_status);
        return 0;
}

static const struct kc_pod_runtime_ops sim_pod_runtime_ops = {
        .get_pods = sim_get_pods,
        .get_pod_status = sim_get_pod_status,
        .remove_pod_sandbox = kc__sim_remove_pod_sandbox,
};

struct kc_pod_runtime kc_sim_pod_runtime(struct kc_sim *s)
{
        return (struct kc_pod_runtime){ .ops = &sim_pod_runtime_ops, .self = s };
}
