/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kc_sim_set_pods: the whole simulated state replaced by a snapshot. The
 * objects get the labels the kubelet would have put on them, so the runtime
 * manager reads the same pods through the CRI face as the kubecontainer
 * face lists. An object already present (same id) keeps its timestamps.
 *
 * What the snapshot does not change keeps its identity (issue 18): a pod
 * loaded before with the same name, namespace and IPs stays the same pod,
 * and its objects loaded before with the same id and name (and, for a
 * container, the same sandbox) stay the same objects, with only their
 * state brought to the snapshot's. So results shared by identity (the CRI
 * face's listings and views, the kubecontainer face's pods) live on for
 * what did not change, and a snapshot equal to the state changes nothing.
 *
 * Loading happens in two phases so that a failure leaves the state as it
 * was: the plan (every allocation, the new id maps) first, touching nothing
 * of the state but marks, then the switch, which cannot fail.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/cleanup.h"
#include "core/clock.h"
#include "core/lock.h"
#include "core/map.h"
#include "../internal.h"
#include "runtime/container.h"
#include "runtime/sim.h"
#include "sim_internal.h"

static bool spec_state_valid(enum kc_container_state st)
{
        return (int)st >= 0 && st < _KC_CONTAINER_STATE_MAX;
}

/* True when every object of @p objs has an id and a known state. */
static bool spec_objects_valid(const struct kc_sim_container_spec *objs, size_t n)
{
        size_t j;

        for (j = 0; j < n; j++)
                if (!objs[j].id || !spec_state_valid(objs[j].state))
                        return false;
        return true;
}

static int validate_specs(const struct kc_sim_pod_spec *pods, size_t n)
{
        _cleanup_(kc_map_freep) struct kc_map *seen = NULL;
        size_t i, j;
        int r;

        r = kc_map_new(&seen);
        if (r < 0)
                return r;
        for (i = 0; i < n; i++) {
                const struct kc_sim_pod_spec *p = &pods[i];

                if (!p->id || (p->n_ips && !p->ips) || (p->n_containers && !p->containers) ||
                    (p->n_sandboxes && !p->sandboxes))
                        return -EINVAL;
                for (j = 0; j < p->n_ips; j++)
                        if (!p->ips[j])
                                return -EINVAL;
                if (!spec_objects_valid(p->containers, p->n_containers) ||
                    !spec_objects_valid(p->sandboxes, p->n_sandboxes))
                        return -EINVAL;
                if (kc_map_get(seen, p->id))
                        return -EEXIST;
                r = kc_map_put(seen, p->id, (void *)p);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Labels kubelet would have put on the objects, so the runtime manager sees the same pods. */
static size_t spec_labels(const struct kc_sim_pod_spec *p, const char *container_name,
                          struct kc_label l[static 4])
{
        size_t n = 0;

        l[n++] = (struct kc_label){ KC_LABEL_POD_UID, p->id };
        if (p->name)
                l[n++] = (struct kc_label){ KC_LABEL_POD_NAME, p->name };
        if (p->namespace)
                l[n++] = (struct kc_label){ KC_LABEL_POD_NAMESPACE, p->namespace };
        if (container_name)
                l[n++] = (struct kc_label){ KC_LABEL_CONTAINER_NAME, container_name };
        return n;
}

/* One pod of the snapshot: the pod kept or made, and its objects in the snapshot's order. */
struct plan_pod {
        struct sim_pod *pod;
        struct sim_object **sandboxes; /* into plan.objs */
        struct sim_object **containers;
        struct sim_sandbox *home; /* the sandbox its containers belong to, or NULL */
        const struct kc_sim_pod_spec *spec;
};

struct plan {
        struct plan_pod *pods;
        size_t n_pods;            /* planned so far */
        struct sim_object **objs; /* every object, pod by pod */
        struct sim_state next;    /* its maps are the new id maps; its list is unused */
        int64_t now;
};

static bool strv_equal(const char *const *a, size_t na, const char *const *b, size_t nb)
{
        if (na != nb)
                return false;
        for (size_t i = 0; i < na; i++)
                if (!kc__streq(a[i], b[i]))
                        return false;
        return true;
}

/* The pod @p old stays when the snapshot loads it again as it was. */
static bool pod_kept(const struct sim_pod *old, const struct kc_sim_pod_spec *spec)
{
        return old && old->from_spec && kc__streq(old->name, spec->name) &&
               kc__streq(old->namespace, spec->namespace) &&
               strv_equal(old->ips, old->n_ips, spec->ips, spec->n_ips);
}

static struct sim_sandbox *new_sandbox(const struct sim_state *old,
                                       const struct kc_sim_pod_spec *spec,
                                       const struct kc_sim_container_spec *cs, int64_t created)
{
        const struct sim_sandbox *prev = kc_map_get(old->sandboxes, cs->id);
        struct kc_label labels[4];
        struct sim_sandbox *sb;

        sb = kc__sim_sandbox_alloc(&(struct kc_pod_sandbox){
                .id = cs->id,
                .metadata = { .name = cs->name, .uid = spec->id, .namespace = spec->namespace },
                .labels = labels,
                .n_labels = spec_labels(spec, NULL, labels),
        });
        if (!sb)
                return NULL;
        sb->o.from_spec = true;
        sb->v.created_at = prev ? prev->v.created_at : created;
        return sb;
}

/* Spec states are kept verbatim for the kubecontainer face. @return whether anything changed. */
static bool sandbox_apply(struct sim_sandbox *sb, const struct kc_sim_container_spec *cs)
{
        enum kc_sandbox_state st = cs->state == KC_CONTAINER_STATE_RUNNING
                                           ? KC_SANDBOX_STATE_READY
                                           : KC_SANDBOX_STATE_NOTREADY;

        if (sb->cstate == cs->state && sb->v.state == st)
                return false;
        sb->cstate = cs->state;
        sb->v.state = st;
        return true;
}

/*
 * The state and timestamps of a container loaded from @p cs into @p v: a
 * container seen before (@p prev) keeps its times, one that changed state
 * now gets @p now, a new one the times of its creation.
 */
static void spec_container_times(struct kc_cri_container *v, const struct kc_sim_container_spec *cs,
                                 const struct kc_cri_container *prev, int64_t now, int64_t created)
{
        bool started =
                cs->state == KC_CONTAINER_STATE_RUNNING || cs->state == KC_CONTAINER_STATE_EXITED;

        v->state = cs->state;
        v->exit_code = cs->exit_code;
        v->created_at = prev ? prev->created_at : created;
        v->started_at = 0;
        v->finished_at = 0;
        v->reason = NULL;
        if (started)
                v->started_at = prev && prev->started_at ? prev->started_at
                                : prev                   ? now
                                                         : v->created_at;
        if (cs->state == KC_CONTAINER_STATE_EXITED) {
                v->finished_at = prev && prev->state == KC_CONTAINER_STATE_EXITED
                                         ? prev->finished_at
                                 : prev ? now
                                        : v->created_at;
                v->reason = cs->exit_code == 0 ? "Completed" : "Error";
        }
}

/* A kept container brought to @p cs. @return whether anything changed. */
static bool container_apply(struct sim_container *c, const struct kc_sim_container_spec *cs,
                            int64_t now)
{
        struct kc_cri_container prev = c->v, v = c->v;

        spec_container_times(&v, cs, &prev, now, 0);
        if (v.state == prev.state && v.exit_code == prev.exit_code &&
            v.started_at == prev.started_at && v.finished_at == prev.finished_at &&
            v.reason == prev.reason)
                return false;
        c->v = v;
        return true;
}

static struct sim_container *new_container(const struct sim_state *old,
                                           const struct kc_sim_pod_spec *spec,
                                           const struct kc_sim_container_spec *cs,
                                           const struct sim_sandbox *home, int64_t now,
                                           int64_t created)
{
        const struct sim_container *prev = kc_map_get(old->containers, cs->id);
        struct kc_label labels[4];
        struct sim_container *c;

        c = kc__sim_container_alloc(
                &(struct kc_cri_container){
                        .id = cs->id,
                        .pod_sandbox_id = home ? home->v.id : NULL,
                        .metadata = { .name = cs->name },
                        .labels = labels,
                        .n_labels = spec_labels(spec, cs->name, labels),
                },
                NULL, 0, NULL, 0);
        if (!c)
                return NULL;
        c->o.from_spec = true;
        spec_container_times(&c->v, cs, prev ? &prev->v : NULL, now, created);
        return c;
}

/* Puts @p o under its own @p id in @p map and into the plan's slot @p slot. */
static int plan_object(struct kc_map *map, const char *id, struct sim_object *o,
                       struct sim_object **slot)
{
        int r = kc_map_put(map, id, o);

        *slot = o;
        return r;
}

/* The sandboxes of @p pp: kept when @p old (the pod kept) has them as they were, else new. */
static int plan_sandboxes(struct plan *pl, const struct sim_state *old, struct plan_pod *pp,
                          struct sim_pod *old_pod, int64_t base)
{
        const struct kc_sim_pod_spec *spec = pp->spec;
        const struct kc_sim_container_spec *home = NULL;
        size_t j;

        for (j = 0; j < spec->n_sandboxes; j++) {
                const struct kc_sim_container_spec *cs = &spec->sandboxes[j];
                struct sim_sandbox *sb = old_pod ? kc_map_get(old->sandboxes, cs->id) : NULL;

                /* Not kept twice: a snapshot may name an object twice. */
                if (sb && sb->o.pod == old_pod && sb->o.from_spec && !sb->o.keep &&
                    kc__streq(sb->v.metadata.name, cs->name)) {
                        sb->o.keep = true;
                } else {
                        sb = new_sandbox(old, spec, cs, base - (int64_t)j);
                        if (!sb)
                                return -ENOMEM;
                        sb->cstate = cs->state;
                        (void)sandbox_apply(sb, cs);
                }
                if (plan_object(pl->next.sandboxes, sb->v.id, &sb->o, &pp->sandboxes[j]) < 0)
                        return -ENOMEM;
                if (!home || (home->state != KC_CONTAINER_STATE_RUNNING &&
                              cs->state == KC_CONTAINER_STATE_RUNNING)) {
                        home = cs;
                        pp->home = sb;
                }
        }
        return 0;
}

static int plan_containers(struct plan *pl, const struct sim_state *old, struct plan_pod *pp,
                           struct sim_pod *old_pod, int64_t base)
{
        const struct kc_sim_pod_spec *spec = pp->spec;
        const char *home_id = pp->home ? pp->home->v.id : NULL;
        size_t j;

        for (j = 0; j < spec->n_containers; j++) {
                const struct kc_sim_container_spec *cs = &spec->containers[j];
                struct sim_container *c = old_pod ? kc_map_get(old->containers, cs->id) : NULL;

                if (c && c->o.pod == old_pod && c->o.from_spec && !c->o.keep &&
                    kc__streq(c->v.metadata.name, cs->name) &&
                    kc__streq(c->v.pod_sandbox_id, home_id)) {
                        c->o.keep = true;
                } else {
                        c = new_container(old, spec, cs, pp->home, pl->now, base - (int64_t)j);
                        if (!c)
                                return -ENOMEM;
                }
                if (plan_object(pl->next.containers, c->v.id, &c->o, &pp->containers[j]) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* Plans pod @p spec: the pod kept or a new one, its objects. */
static int plan_pod(struct plan *pl, const struct sim_state *old,
                    const struct kc_sim_pod_spec *spec, struct sim_object **objs, int64_t base)
{
        struct plan_pod *pp = &pl->pods[pl->n_pods];
        struct sim_pod *old_pod = kc_map_get(old->pods, spec->id);
        int r;

        *pp = (struct plan_pod){
                .spec = spec,
                .sandboxes = objs,
                .containers = objs + spec->n_sandboxes,
        };
        if (pod_kept(old_pod, spec)) {
                old_pod->keep = true;
                pp->pod = old_pod;
        } else {
                old_pod = NULL;
                pp->pod = kc__sim_pod_alloc(spec->id, spec->name, spec->namespace, spec->ips,
                                            spec->n_ips);
                if (!pp->pod)
                        return -ENOMEM;
                pp->pod->from_spec = true;
        }
        pl->n_pods++; /* from here on plan_undo() takes it apart */
        r = kc_map_put(pl->next.pods, pp->pod->uid, pp->pod);
        if (r < 0)
                return r;
        r = plan_sandboxes(pl, old, pp, old_pod, base);
        if (r < 0)
                return r;
        return plan_containers(pl, old, pp, old_pod, base);
}

/* The objects of @p pp's kind: @p n slots from @p v (NULL slots are not planned yet). */
static void objects_undo(struct sim_object **v, size_t n, bool containers)
{
        for (size_t j = 0; j < n; j++) {
                if (!v[j])
                        continue;
                if (v[j]->keep)
                        v[j]->keep = false;
                else if (containers)
                        kc__sim_container_free(kc_container_of(v[j], struct sim_container, o));
                else
                        kc__sim_sandbox_free(kc_container_of(v[j], struct sim_sandbox, o));
        }
}

/* After a failure: frees what the plan made, clears its marks; the state is as it was. */
static void plan_undo(struct plan *pl)
{
        for (size_t i = 0; i < pl->n_pods; i++) {
                struct plan_pod *pp = &pl->pods[i];

                objects_undo(pp->sandboxes, pp->spec->n_sandboxes, false);
                objects_undo(pp->containers, pp->spec->n_containers, true);
                if (pp->pod->keep)
                        pp->pod->keep = false;
                else
                        kc__sim_pod_free(pp->pod);
        }
}

/* Whether the objects of @p list are not @p v[0..n) in that order. */
static bool order_differs(struct kc_list *list, struct sim_object *const *v, size_t n)
{
        struct sim_object *o;
        size_t j = 0;

        kc_list_for_each_entry (o, list, struct sim_object, link) {
                if (j == n || v[j] != o)
                        return true;
                j++;
        }
        return j != n;
}

/* Frees the objects of @p list the plan does not keep; empties it. @return whether any went. */
static bool objects_detach(struct sim_objects *objs, bool containers)
{
        struct sim_object *o, *next;
        bool dropped = false;

        kc_list_for_each_entry_safe (o, next, &objs->list, struct sim_object, link) {
                if (o->keep)
                        continue;
                dropped = true;
                if (containers)
                        kc__sim_container_free(kc_container_of(o, struct sim_container, o));
                else
                        kc__sim_sandbox_free(kc_container_of(o, struct sim_sandbox, o));
        }
        kc_list_init(&objs->list);
        objs->n = 0;
        objs->n_unnamed = 0;
        return dropped;
}

/*
 * Links the planned objects @p v[0..n) into @p objs (@p containers: of
 * containers) in order; @return whether any was new.
 */
static bool objects_attach(struct sim_pod *p, struct sim_objects *objs, struct sim_object **v,
                           size_t n, bool containers)
{
        bool added = false;

        for (size_t j = 0; j < n; j++) {
                added |= !v[j]->keep;
                v[j]->keep = false;
                v[j]->pod = p;
                v[j]->idx = (uint32_t)j;
                kc__sim_object_name(objs, p, v[j], containers);
                kc_list_add_tail(&objs->list, &v[j]->link);
        }
        objs->n = n;
        return added;
}

/*
 * Switches @p st to the plan (cannot fail): the pods and objects it keeps
 * are relinked in the snapshot's order, brought to their spec states, the
 * others freed. A pod that changed is touched; pods or objects that came,
 * went or moved are a new shape. @return whether anything changed.
 */
static bool plan_apply(struct plan *pl, struct sim_state *st)
{
        struct sim_pod *p, *next;
        bool changed = false, shape;
        size_t i = 0, j;

        kc_list_for_each_entry_safe (p, next, &st->pod_list, struct sim_pod, link) {
                changed |= i >= pl->n_pods || pl->pods[i].pod != p;
                i++;
                if (!p->keep) {
                        changed = true;
                        kc__sim_pod_free(p);
                }
        }
        changed |= i != pl->n_pods;
        shape = changed;
        kc_list_init(&st->pod_list);
        for (i = 0; i < pl->n_pods; i++) {
                struct plan_pod *pp = &pl->pods[i];
                bool pod_changed = !pp->pod->keep;
                uint64_t sb_touched = 0, c_touched = 0;

                p = pp->pod;
                if (p->keep) {
                        pod_changed |= order_differs(&p->sandboxes.list, pp->sandboxes,
                                                     pp->spec->n_sandboxes) ||
                                       order_differs(&p->containers.list, pp->containers,
                                                     pp->spec->n_containers);
                        pod_changed |= objects_detach(&p->sandboxes, false);
                        pod_changed |= objects_detach(&p->containers, true);
                }
                /* Only the states of kept objects in their places can have changed below. */
                shape |= pod_changed;
                p->keep = false;
                for (j = 0; j < pp->spec->n_sandboxes; j++)
                        if (pp->sandboxes[j]->keep &&
                            sandbox_apply(kc_container_of(pp->sandboxes[j], struct sim_sandbox, o),
                                          &pp->spec->sandboxes[j]))
                                sb_touched |= kc__sim_touch_bit(j);
                for (j = 0; j < pp->spec->n_containers; j++) {
                        struct sim_container *c =
                                kc_container_of(pp->containers[j], struct sim_container, o);

                        c->sandbox = pp->home;
                        if (c->o.keep && container_apply(c, &pp->spec->containers[j], pl->now))
                                c_touched |= kc__sim_touch_bit(j);
                }
                if (objects_attach(p, &p->sandboxes, pp->sandboxes, pp->spec->n_sandboxes, false))
                        shape = pod_changed = true;
                if (objects_attach(p, &p->containers, pp->containers, pp->spec->n_containers, true))
                        shape = pod_changed = true;
                kc_list_add_tail(&st->pod_list, &p->link);
                p->gen = &st->gen;
                /* A pod that came or whose objects did is touched whole; else what changed. */
                if (pod_changed)
                        kc__sim_pod_touch(p);
                else if (sb_touched || c_touched)
                        kc__sim_pod_touch_objects(p, sb_touched, c_touched);
                changed |= pod_changed || sb_touched || c_touched;
        }
        if (shape)
                kc__sim_shape_changed(st);
        return changed;
}

/* Plans every pod of the snapshot; on failure the state is as it was. */
static int plan_make(struct plan *pl, const struct sim_state *old,
                     const struct kc_sim_pod_spec *pods, size_t n)
{
        size_t i, n_objs = 0;
        struct sim_object **objs;
        int r;

        for (i = 0; i < n; i++)
                n_objs += pods[i].n_sandboxes + pods[i].n_containers;
        pl->pods = calloc(n + 1, sizeof(*pl->pods));
        pl->objs = calloc(n_objs + 1, sizeof(*pl->objs));
        if (!pl->pods || !pl->objs)
                return -ENOMEM;
        objs = pl->objs;
        for (i = 0; i < n; i++) {
                /* Listed order is creation order, newest first: pod i is 1 ms older than i-1. */
                r = plan_pod(pl, old, &pods[i], objs, pl->now - (int64_t)i * KC_NSEC_PER_MSEC);
                if (r < 0) {
                        plan_undo(pl);
                        return r;
                }
                objs += pods[i].n_sandboxes + pods[i].n_containers;
        }
        return 0;
}

static void map_swap(struct kc_map **a, struct kc_map **b)
{
        struct kc_map *t = *a;

        *a = *b;
        *b = t;
}

static void plan_done(struct plan *pl)
{
        free(pl->pods);
        free(pl->objs);
        if (pl->next.pod_list.next) /* initialised */
                kc__sim_state_done(&pl->next);
}

int kc_sim_set_pods(struct kc_sim *s, const struct kc_sim_pod_spec *pods, size_t n)
{
        _cleanup_(plan_done) struct plan pl = { 0 };
        struct sim_state *st;
        size_t i;
        int r;

        if (!s || (n > 0 && !pods))
                return -EINVAL;
        r = validate_specs(pods, n);
        if (r < 0)
                return r;
        r = kc__sim_state_init(&pl.next);
        if (r < 0)
                return r;
        KC_LOCK_GUARD(&s->lock);
        st = &s->st;
        pl.now = kc_clock_now(s->clock);
        r = plan_make(&pl, st, pods, n);
        if (r < 0)
                return r;
        if (plan_apply(&pl, st))
                st->gen++;
        /* The plan's maps are the state's now; the state's old ones go with the plan. */
        map_swap(&st->pods, &pl.next.pods);
        map_swap(&st->sandboxes, &pl.next.sandboxes);
        map_swap(&st->containers, &pl.next.containers);
        st->n_pods = n;
        st->n_sandboxes = st->n_containers = 0;
        for (i = 0; i < n; i++) {
                st->n_sandboxes += pods[i].n_sandboxes;
                st->n_containers += pods[i].n_containers;
        }
        /*
         * A snapshot may give one id to two objects (upstream's relist tests
         * do, in two pods): the id maps then hold the last, and the status
         * calls' lookup by address (listed_object()) is off, or it could find
         * the other.
         */
        st->dup_ids = kc_map_size(st->sandboxes) != st->n_sandboxes ||
                      kc_map_size(st->containers) != st->n_containers;
        /* Containers of a snapshot have no command: none has an exit to come. */
        st->next_deadline = INT64_MAX;
        return 0;
}
