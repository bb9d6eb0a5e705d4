/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sim's object store: pods (grouped by pod UID, kept in insertion
 * order), each with its sandboxes and containers (insertion order), plus
 * id -> object maps.
 *
 * Sandboxes and containers are one block each, in an arena of their own.
 * The CRI view's strings and arrays sit in one region right after the
 * struct ("blob") and never change while the object lives, so a list or
 * status call hands out a copy of the view's struct and a hold on the
 * object's arena instead of copying strings (issue 18). Well-known label
 * keys are static literals and are not copied at all.
 */
#include <errno.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "core/arena.h"
#include "core/array.h"
#include "core/cleanup.h"
#include "core/list.h"
#include "core/map.h"
#include "runtime/container.h"
#include "runtime/runtime_service.h"
#include "sim_internal.h"

#define BLOB_ALIGN alignof(max_align_t)

/* ------------------------------------------------------------------------ */
/* Pods and the state                                                         */

/* The state @p p is in (its generation's). */
static struct sim_state *state_of(struct sim_pod *p)
{
        return kc_container_of(p->gen, struct sim_state, gen);
}

void kc__sim_shape_changed(struct sim_state *st)
{
        st->shape++;
        st->n_touched = 0;
        st->n_prev_touched = 0;
        st->prev_touch_epoch = 0;
        st->touch_epoch++;
}

/*
 * Puts @p p in @p st's touch log once, and its objects @p sandboxes and
 * @p containers (masks) with those touched in this epoch; a log that
 * cannot grow is given up as a new shape.
 */
static void touch_log(struct sim_state *st, struct sim_pod *p, uint64_t sandboxes,
                      uint64_t containers)
{
        if (p->touch_epoch != st->touch_epoch) {
                /* What the epoch before touched stays known for its log (cri_list.c). */
                bool prev = st->prev_touch_epoch != 0 && p->touch_epoch == st->prev_touch_epoch;

                if (KC_ARRAY_GROW(st->touched, st->cap_touched, st->n_touched + 1, 64) < 0) {
                        kc__sim_shape_changed(st);
                        return;
                }
                st->touched[st->n_touched++] = p;
                p->touch_epoch = st->touch_epoch;
                p->prev_touched[0] = prev ? p->touched[0] : 0;
                p->prev_touched[1] = prev ? p->touched[1] : 0;
                p->touched[0] = p->touched[1] = 0;
        }
        p->touched[0] |= sandboxes;
        p->touched[1] |= containers;
}

void kc__sim_pod_touch_objects(struct sim_pod *p, uint64_t sandboxes, uint64_t containers)
{
        if (p->gen) {
                (*p->gen)++;
                touch_log(state_of(p), p, sandboxes, containers);
        }
        p->cache_all = kc_pod_unref(p->cache_all);
        p->cache_running = kc_pod_unref(p->cache_running);
        p->cache_running_valid = false;
        p->cache_status = kc_pod_status_unref(p->cache_status);
}

void kc__sim_pod_touch(struct sim_pod *p)
{
        kc__sim_pod_touch_objects(p, SIM_TOUCHED_ALL, SIM_TOUCHED_ALL);
}

void kc__sim_object_touch(struct sim_object *o, bool container)
{
        uint64_t bit = kc__sim_touch_bit(o->idx);

        if (o->pod)
                kc__sim_pod_touch_objects(o->pod, container ? 0 : bit, container ? bit : 0);
}

void kc__sim_pod_free(struct sim_pod *p)
{
        struct sim_sandbox *sb, *sb_next;
        struct sim_container *c, *c_next;

        if (!p)
                return;
        kc_list_for_each_entry_safe (sb, sb_next, &p->sandboxes.list, struct sim_sandbox, o.link)
                kc__sim_sandbox_free(sb);
        kc_list_for_each_entry_safe (c, c_next, &p->containers.list, struct sim_container, o.link)
                kc__sim_container_free(c);
        kc__sim_pod_touch(p);
        if (p->gen)
                kc__sim_shape_changed(state_of(p)); /* out of the touch log */
        free(p);
}

void kc__sim_state_done(struct sim_state *st)
{
        struct sim_pod *p, *next;

        kc_list_for_each_entry_safe (p, next, &st->pod_list, struct sim_pod, link)
                kc__sim_pod_free(p);
        st->pods = kc_map_free(st->pods);
        st->sandboxes = kc_map_free(st->sandboxes);
        st->containers = kc_map_free(st->containers);
        free(st->touched);
        free(st->prev_touched);
        *st = (struct sim_state){ .next_deadline = INT64_MAX, .touch_epoch = 1 };
        kc_list_init(&st->pod_list);
}

int kc__sim_state_init(struct sim_state *st)
{
        /* Epoch 0 is no pod's: a new pod goes in the log at its first touch. */
        *st = (struct sim_state){ .next_deadline = INT64_MAX, .touch_epoch = 1 };
        kc_list_init(&st->pod_list);
        if (kc_map_new(&st->pods) < 0 || kc_map_new(&st->sandboxes) < 0 ||
            kc_map_new(&st->containers) < 0) {
                kc__sim_state_done(st);
                return -ENOMEM;
        }
        return 0;
}

struct sim_pod *kc__sim_pod_alloc(const char *uid, const char *name, const char *ns,
                                  const char *const *ips, size_t n_ips)
{
        struct kc__packer pk = { 0 };
        struct sim_pod *p;
        int pass;

        for (pass = 0; pass < 2; pass++) {
                const char *u, *n, *s;
                const char *const *v;

                p = kc__pack_reserve(&pk, sizeof(*p), alignof(struct sim_pod));
                u = kc__pack_str(&pk, uid);
                n = kc__pack_str(&pk, name);
                s = kc__pack_str(&pk, ns);
                v = kc__pack_strv(&pk, ips, n_ips);
                if (pass == 0) {
                        pk.base = calloc(1, pk.off);
                        if (!pk.base)
                                return NULL;
                        pk.off = 0;
                        continue;
                }
                p->uid = u;
                p->name = n;
                p->namespace = s;
                p->ips = v;
                p->n_ips = n_ips;
        }
        kc_list_init(&p->link);
        kc_list_init(&p->sandboxes.list);
        kc_list_init(&p->containers.list);
        return p;
}

int kc__sim_state_add_pod(struct sim_state *st, struct sim_pod *p)
{
        int r = kc_map_put(st->pods, p->uid, p);

        if (r < 0)
                return r;
        kc_list_add_tail(&st->pod_list, &p->link);
        st->n_pods++;
        p->gen = &st->gen;
        kc__sim_pod_touch(p);
        kc__sim_shape_changed(st);
        return 0;
}

void kc__sim_state_remove_pod(struct sim_state *st, struct sim_pod *p)
{
        kc_map_remove(st->pods, p->uid);
        kc_list_del(&p->link);
        st->n_pods--;
        st->n_sandboxes -= p->sandboxes.n;
        st->n_containers -= p->containers.n;
        kc__sim_pod_free(p);
}

/* ------------------------------------------------------------------------ */
/* Sandboxes and containers                                                   */

/*
 * After the measuring pass: the object's own arena, holding one block of the
 * measured size where the copying pass lays it out.
 */
static int object_arena_alloc(struct kc__packer *pk, struct kc_arena **ret)
{
        void *base;

        if (kc_arena_new_block(pk->off, ret, &base) < 0)
                return -ENOMEM;
        pk->base = base;
        pk->off = 0;
        return 0;
}

struct sim_sandbox *kc__sim_sandbox_alloc(const struct kc_pod_sandbox *tmpl)
{
        struct kc__packer pk = { .intern_keys = true };
        struct sim_sandbox *sb = NULL;
        struct kc_arena *a = NULL;
        int pass;

        for (pass = 0; pass < 2; pass++) {
                sb = kc__pack_reserve(&pk, sizeof(*sb), alignof(struct sim_sandbox));
                (void)kc__pack_reserve(&pk, 0, BLOB_ALIGN);
                kc__pack_pod_sandbox(&pk, tmpl, sb ? &sb->v : NULL);
                if (pass == 0 && object_arena_alloc(&pk, &a) < 0)
                        return NULL;
        }
        sb->o.arena = a;
        kc_list_init(&sb->o.link);
        return sb;
}

struct sim_container *kc__sim_container_alloc(const struct kc_cri_container *tmpl,
                                              const char *const *cmd, size_t n_cmd,
                                              const char *const *args, size_t n_args)
{
        struct kc__packer pk = { .intern_keys = true };
        struct sim_container *c = NULL;
        struct kc_arena *a = NULL;
        const char **argv;
        int pass;
        size_t i;

        for (pass = 0; pass < 2; pass++) {
                c = kc__pack_reserve(&pk, sizeof(*c), alignof(struct sim_container));
                (void)kc__pack_reserve(&pk, 0, BLOB_ALIGN);
                kc__pack_cri_container(&pk, tmpl, c ? &c->v : NULL);
                argv = kc__pack_array(&pk, const char *, n_cmd + n_args);
                for (i = 0; i < n_cmd + n_args; i++) {
                        const char *a = kc__pack_str(&pk, i < n_cmd ? cmd[i] : args[i - n_cmd]);

                        if (argv)
                                argv[i] = a ? a : "";
                }
                if (pass == 0 && object_arena_alloc(&pk, &a) < 0)
                        return NULL;
        }
        c->o.arena = a;
        kc_list_init(&c->o.link);
        c->argv = argv;
        c->argc = n_cmd + n_args;
        c->hash = kc__parse_container_hash(
                kc__label_get(c->v.annotations, c->v.n_annotations, KC_ANNOTATION_CONTAINER_HASH));
        return c;
}

void kc__sim_sandbox_free(struct sim_sandbox *sb)
{
        if (!sb)
                return;
        kc__sim_config_record_free(sb->rec);
        kc_arena_free(sb->o.arena); /* holds sb itself; results may keep it a while */
}

void kc__sim_container_free(struct sim_container *c)
{
        if (!c)
                return;
        kc__sim_config_record_free(c->rec);
        free(c->exec);
        kc__sim_fs_done(&c->fs);
        kc_arena_free(c->o.arena); /* holds c itself; results may keep it a while */
}

void kc__sim_object_name(struct sim_objects *objs, const struct sim_pod *p, struct sim_object *o,
                         bool container)
{
        const struct kc_label *l;
        size_t n;

        if (container) {
                const struct sim_container *c = kc_container_of(o, struct sim_container, o);

                l = c->v.labels;
                n = c->v.n_labels;
        } else {
                const struct sim_sandbox *sb = kc_container_of(o, struct sim_sandbox, o);

                l = sb->v.labels;
                n = sb->v.n_labels;
        }
        o->unnamed = !kc__streq(kc__label_get(l, n, KC_LABEL_POD_UID), p->uid);
        objs->n_unnamed += o->unnamed;
}

/* Puts @p o, already in the id map, at the end of @p p's list @p objs. */
static void object_link(size_t *total, struct sim_pod *p, struct sim_objects *objs,
                        struct sim_object *o, bool container)
{
        o->pod = p;
        o->idx = (uint32_t)objs->n;
        kc__sim_object_name(objs, p, o, container);
        kc_list_add_tail(&objs->list, &o->link);
        objs->n++;
        (*total)++;
        kc__sim_pod_touch(p);
        if (p->gen)
                kc__sim_shape_changed(state_of(p));
}

/* Takes @p o out of its pod's list @p objs and of @p map (when it is the one under @p id). */
static void object_unlink(size_t *total, struct kc_map *map, const char *id, const void *obj,
                          struct sim_objects *objs, struct sim_object *o)
{
        struct sim_object *sibling;
        uint32_t idx = 0;

        if (kc_map_get(map, id) == obj)
                kc_map_remove(map, id);
        kc_list_del(&o->link);
        /* The objects after it move up one. */
        kc_list_for_each_entry (sibling, &objs->list, struct sim_object, link)
                sibling->idx = idx++;
        objs->n_unnamed -= o->unnamed;
        objs->n--;
        (*total)--;
        kc__sim_pod_touch(o->pod);
        if (o->pod->gen)
                kc__sim_shape_changed(state_of(o->pod));
}

int kc__sim_state_add_sandbox(struct sim_state *st, struct sim_pod *p, struct sim_sandbox *sb)
{
        int r = kc_map_put(st->sandboxes, sb->v.id, sb);

        if (r < 0)
                return r;
        object_link(&st->n_sandboxes, p, &p->sandboxes, &sb->o, false);
        return 0;
}

int kc__sim_state_add_container(struct sim_state *st, struct sim_pod *p, struct sim_sandbox *sb,
                                struct sim_container *c)
{
        int r = kc_map_put(st->containers, c->v.id, c);

        if (r < 0)
                return r;
        c->sandbox = sb;
        object_link(&st->n_containers, p, &p->containers, &c->o, true);
        return 0;
}

void kc__sim_state_remove_container(struct sim_state *st, struct sim_container *c)
{
        object_unlink(&st->n_containers, st->containers, c->v.id, c, &c->o.pod->containers, &c->o);
        kc__sim_container_free(c);
}

void kc__sim_state_remove_sandbox(struct sim_state *st, struct sim_sandbox *sb)
{
        struct sim_pod *p = sb->o.pod;
        struct sim_container *c, *next;

        /* Removing a sandbox removes its containers, as containerd does. */
        kc_list_for_each_entry_safe (c, next, &p->containers.list, struct sim_container, o.link)
                if (c->sandbox == sb)
                        kc__sim_state_remove_container(st, c);
        object_unlink(&st->n_sandboxes, st->sandboxes, sb->v.id, sb, &p->sandboxes, &sb->o);
        kc__sim_sandbox_free(sb);
        /* A pod created through the CRI face exists while it has objects. */
        if (!p->from_spec && p->sandboxes.n == 0 && p->containers.n == 0)
                kc__sim_state_remove_pod(st, p);
}

void kc__sim_sandbox_ips(const struct sim_sandbox *sb, const char **ip, const char *const **more,
                         size_t *n_more)
{
        const struct sim_pod *p = sb->o.pod;

        if (p->from_spec) {
                /* The pod's network namespace: every sandbox of the pod reports it. */
                *ip = p->n_ips > 0 ? p->ips[0] : NULL;
                *more = p->n_ips > 1 ? p->ips + 1 : NULL;
                *n_more = p->n_ips > 1 ? p->n_ips - 1 : 0;
        } else {
                *ip = sb->v.ip;
                *more = sb->v.additional_ips;
                *n_more = sb->v.n_additional_ips;
        }
}

/* ------------------------------------------------------------------------ */
/* Copies for the list calls                                                  */

/*
 * The CRI views' strings and arrays never change while an object lives (only
 * its scalars and static literals do), and they sit in the object's own
 * arena: a result copies the view's struct and holds that arena.
 */

int kc__sim_sandbox_copy_listed(struct kc_arena *a, const struct sim_sandbox *sb,
                                struct kc_pod_sandbox *out)
{
        if (a && kc_arena_hold(a, sb->o.arena) < 0)
                return -ENOMEM;
        *out = sb->v;
        out->ip = NULL;
        out->additional_ips = NULL;
        out->n_additional_ips = 0;
        return 0;
}

int kc__sim_sandbox_view(struct kc_arena *a, const struct sim_sandbox *sb,
                         struct kc_pod_sandbox *out)
{
        const struct sim_pod *p = sb->o.pod;
        struct kc_pod_sandbox v = sb->v;
        const char **more = NULL;
        size_t i;

        if (kc_arena_hold(a, sb->o.arena) < 0)
                return -ENOMEM;
        if (p->from_spec) {
                /* The pod's IPs live with the pod, which a snapshot may replace: copied. */
                if (p->n_ips > 1 && !(more = kc_arena_alloc(a, (p->n_ips - 1) * sizeof(*more))))
                        return -ENOMEM;
                for (i = 0; i < p->n_ips; i++) {
                        const char *ip = kc_arena_strdup(a, p->ips[i]);

                        if (!ip)
                                return -ENOMEM;
                        if (i == 0)
                                v.ip = ip;
                        else
                                more[i - 1] = ip;
                }
                v.ip = p->n_ips > 0 ? v.ip : NULL;
                v.additional_ips = more;
                v.n_additional_ips = p->n_ips > 1 ? p->n_ips - 1 : 0;
        }
        *out = v;
        return 0;
}

int kc__sim_container_copy_listed(struct kc_arena *a, const struct sim_container *c,
                                  struct kc_cri_container *out)
{
        if (a && kc_arena_hold(a, c->o.arena) < 0)
                return -ENOMEM;
        *out = c->v;
        out->started_at = 0;
        out->finished_at = 0;
        out->exit_code = 0;
        out->reason = NULL;
        out->message = NULL;
        return 0;
}
