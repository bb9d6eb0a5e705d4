/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kc_sim_set_pods: the whole simulated state replaced by a snapshot. The
 * objects get the labels the kubelet would have put on them, so the runtime
 * manager reads the same pods through the CRI face as the kubecontainer
 * face lists. An object already present (same id) keeps its timestamps.
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

/*
 * Loads the sandboxes of @p spec into @p p; *ret_home is the one its
 * containers belong to (the first running one, else the first; NULL when
 * there is none).
 */
static int load_sandboxes(struct sim_state *st, struct sim_pod *p, const struct sim_state *old,
                          const struct kc_sim_pod_spec *spec, int64_t base,
                          struct sim_sandbox **ret_home)
{
        const struct kc_sim_container_spec *home = NULL;
        struct sim_sandbox *home_sb = NULL;
        struct kc_label labels[4];
        size_t j;
        int r;

        for (j = 0; j < spec->n_sandboxes; j++) {
                const struct kc_sim_container_spec *cs = &spec->sandboxes[j];
                const struct sim_sandbox *prev = kc_map_get(old->sandboxes, cs->id);
                struct sim_sandbox *sb;

                sb = kc__sim_sandbox_alloc(&(struct kc_pod_sandbox){
                        .id = cs->id,
                        .metadata = { .name = cs->name,
                                      .uid = spec->id,
                                      .namespace = spec->namespace },
                        .labels = labels,
                        .n_labels = spec_labels(spec, NULL, labels),
                });
                if (!sb)
                        return -ENOMEM;
                /* Spec states are kept verbatim for the kubecontainer face. */
                sb->cstate = cs->state;
                sb->v.state = cs->state == KC_CONTAINER_STATE_RUNNING ? KC_SANDBOX_STATE_READY
                                                                      : KC_SANDBOX_STATE_NOTREADY;
                sb->v.created_at = prev ? prev->v.created_at : base - (int64_t)j;
                r = kc__sim_state_add_sandbox(st, p, sb);
                if (r < 0) {
                        kc__sim_sandbox_free(sb);
                        return r;
                }
                if (!home || (home->state != KC_CONTAINER_STATE_RUNNING &&
                              cs->state == KC_CONTAINER_STATE_RUNNING)) {
                        home = cs;
                        home_sb = sb;
                }
        }
        *ret_home = home_sb;
        return 0;
}

/*
 * The state and timestamps of a container loaded from @p cs: a container
 * seen before (@p prev) keeps its times, one that changed state now gets
 * @p now, a new one the times of its creation.
 */
static void spec_container_times(struct sim_container *c, const struct kc_sim_container_spec *cs,
                                 const struct sim_container *prev, int64_t now, int64_t created)
{
        bool started =
                cs->state == KC_CONTAINER_STATE_RUNNING || cs->state == KC_CONTAINER_STATE_EXITED;

        c->v.state = cs->state;
        c->v.exit_code = cs->exit_code;
        c->v.created_at = prev ? prev->v.created_at : created;
        if (started)
                c->v.started_at = prev && prev->v.started_at ? prev->v.started_at
                                  : prev                     ? now
                                                             : c->v.created_at;
        if (cs->state == KC_CONTAINER_STATE_EXITED) {
                c->v.finished_at = prev && prev->v.state == KC_CONTAINER_STATE_EXITED
                                           ? prev->v.finished_at
                                   : prev ? now
                                          : c->v.created_at;
                c->v.reason = cs->exit_code == 0 ? "Completed" : "Error";
        }
}

static int load_containers(struct sim_state *st, struct sim_pod *p, const struct sim_state *old,
                           const struct kc_sim_pod_spec *spec, struct sim_sandbox *home_sb,
                           int64_t now, int64_t base)
{
        struct kc_label labels[4];
        size_t j;
        int r;

        for (j = 0; j < spec->n_containers; j++) {
                const struct kc_sim_container_spec *cs = &spec->containers[j];
                struct sim_container *c;

                c = kc__sim_container_alloc(
                        &(struct kc_cri_container){
                                .id = cs->id,
                                .pod_sandbox_id = home_sb ? home_sb->v.id : NULL,
                                .metadata = { .name = cs->name },
                                .labels = labels,
                                .n_labels = spec_labels(spec, cs->name, labels),
                        },
                        NULL, 0, NULL, 0);
                if (!c)
                        return -ENOMEM;
                spec_container_times(c, cs, kc_map_get(old->containers, cs->id), now,
                                     base - (int64_t)j);
                r = kc__sim_state_add_container(st, p, home_sb, c);
                if (r < 0) {
                        kc__sim_container_free(c);
                        return r;
                }
        }
        return 0;
}

static int load_pod(struct sim_state *st, const struct sim_state *old,
                    const struct kc_sim_pod_spec *spec, int64_t now, int64_t base)
{
        struct sim_sandbox *home_sb;
        struct sim_pod *p;
        int r;

        p = kc__sim_pod_alloc(spec->id, spec->name, spec->namespace, spec->ips, spec->n_ips);
        if (!p)
                return -ENOMEM;
        p->from_spec = true;
        r = kc__sim_state_add_pod(st, p);
        if (r < 0) {
                kc__sim_pod_free(p);
                return r;
        }
        r = load_sandboxes(st, p, old, spec, base, &home_sb);
        if (r < 0)
                return r;
        return load_containers(st, p, old, spec, home_sb, now, base);
}

int kc_sim_set_pods(struct kc_sim *s, const struct kc_sim_pod_spec *pods, size_t n)
{
        struct sim_state st;
        int64_t now;
        size_t i;
        int r;

        if (!s || (n > 0 && !pods))
                return -EINVAL;
        r = validate_specs(pods, n);
        if (r < 0)
                return r;
        r = kc__sim_state_init(&st);
        if (r < 0)
                return r;
        KC_LOCK_GUARD(&s->lock);
        now = kc_clock_now(s->clock);
        for (i = 0; i < n; i++) {
                /* Listed order is creation order, newest first: pod i is 1 ms older than i-1. */
                r = load_pod(&st, &s->st, &pods[i], now, now - (int64_t)i * KC_NSEC_PER_MSEC);
                if (r < 0) {
                        kc__sim_state_done(&st);
                        return r;
                }
        }
        kc__sim_state_replace(&s->st, &st);
        return 0;
}
