/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sim's object store: pods (grouped by pod UID, kept in insertion
 * order), each with its sandboxes and containers (insertion order), plus
 * id -> object maps.
 *
 * Sandboxes and containers are one allocation each. The CRI view's strings
 * and arrays sit in one region right after the struct ("blob"), so a list
 * call copies an object with one memcpy and a pointer relocation instead of
 * a strlen and a copy per string. Well-known label keys are static literals
 * and are not copied at all.
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
#include "core/list.h"
#include "core/map.h"
#include "runtime/container.h"
#include "runtime/runtime_service.h"
#include "sim_internal.h"

#define BLOB_ALIGN alignof(max_align_t)

/* ------------------------------------------------------------------------ */
/* Pods and the state                                                         */

void kc__sim_pod_touch(struct sim_pod *p)
{
        p->cache_all = kc_pod_unref(p->cache_all);
        p->cache_running = kc_pod_unref(p->cache_running);
        p->cache_running_valid = false;
        p->cache_status = kc_pod_status_unref(p->cache_status);
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
        *st = (struct sim_state){ .next_deadline = INT64_MAX };
        kc_list_init(&st->pod_list);
}

int kc__sim_state_init(struct sim_state *st)
{
        *st = (struct sim_state){ .next_deadline = INT64_MAX };
        kc_list_init(&st->pod_list);
        if (kc_map_new(&st->pods) < 0 || kc_map_new(&st->sandboxes) < 0 ||
            kc_map_new(&st->containers) < 0) {
                kc__sim_state_done(st);
                return -ENOMEM;
        }
        return 0;
}

void kc__sim_state_replace(struct sim_state *dst, struct sim_state *src)
{
        kc__sim_state_done(dst);
        *dst = *src;
        /*
         * The copied head still points at src's neighbours: put dst's head
         * into the ring next to src's, then take src's out, which leaves
         * dst heading the same pods in the same order.
         */
        kc_list_init(&dst->pod_list);
        kc_list_add_tail(&src->pod_list, &dst->pod_list);
        kc_list_del(&src->pod_list);
        /* The maps belong to dst now. */
        *src = (struct sim_state){ .next_deadline = INT64_MAX };
        kc_list_init(&src->pod_list);
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

struct sim_sandbox *kc__sim_sandbox_alloc(const struct kc_pod_sandbox *tmpl)
{
        struct kc__packer pk = { .intern_keys = true };
        struct sim_sandbox *sb = NULL;
        size_t blob_off = 0;
        int pass;

        for (pass = 0; pass < 2; pass++) {
                sb = kc__pack_reserve(&pk, sizeof(*sb), alignof(struct sim_sandbox));
                (void)kc__pack_reserve(&pk, 0, BLOB_ALIGN);
                blob_off = pk.off;
                kc__pack_pod_sandbox(&pk, tmpl, sb ? &sb->v : NULL);
                if (pass == 0) {
                        pk.base = calloc(1, pk.off);
                        if (!pk.base)
                                return NULL;
                        pk.off = 0;
                }
        }
        sb->o.blob = pk.base + blob_off;
        sb->o.blob_size = pk.off - blob_off;
        kc_list_init(&sb->o.link);
        return sb;
}

struct sim_container *kc__sim_container_alloc(const struct kc_cri_container *tmpl,
                                              const char *const *cmd, size_t n_cmd,
                                              const char *const *args, size_t n_args)
{
        struct kc__packer pk = { .intern_keys = true };
        struct sim_container *c = NULL;
        size_t blob_off = 0, blob_end = 0;
        const char **argv;
        int pass;
        size_t i;

        for (pass = 0; pass < 2; pass++) {
                c = kc__pack_reserve(&pk, sizeof(*c), alignof(struct sim_container));
                (void)kc__pack_reserve(&pk, 0, BLOB_ALIGN);
                blob_off = pk.off;
                kc__pack_cri_container(&pk, tmpl, c ? &c->v : NULL);
                blob_end = pk.off;
                argv = kc__pack_array(&pk, const char *, n_cmd + n_args);
                for (i = 0; i < n_cmd + n_args; i++) {
                        const char *a = kc__pack_str(&pk, i < n_cmd ? cmd[i] : args[i - n_cmd]);

                        if (argv)
                                argv[i] = a ? a : "";
                }
                if (pass == 0) {
                        pk.base = calloc(1, pk.off);
                        if (!pk.base)
                                return NULL;
                        pk.off = 0;
                }
        }
        c->o.blob = pk.base + blob_off;
        c->o.blob_size = blob_end - blob_off;
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
        kc_arena_free(sb->cfg_arena);
        free(sb);
}

void kc__sim_container_free(struct sim_container *c)
{
        if (!c)
                return;
        kc_arena_free(c->cfg_arena);
        kc__sim_fs_done(&c->fs);
        free(c);
}

/* Puts @p o, already in the id map, at the end of @p p's list @p objs. */
static void object_link(size_t *total, struct sim_pod *p, struct sim_objects *objs,
                        struct sim_object *o)
{
        o->pod = p;
        kc_list_add_tail(&objs->list, &o->link);
        objs->n++;
        (*total)++;
        kc__sim_pod_touch(p);
}

/* Takes @p o out of its pod's list @p objs and of @p map (when it is the one under @p id). */
static void object_unlink(size_t *total, struct kc_map *map, const char *id, const void *obj,
                          struct sim_objects *objs, struct sim_object *o)
{
        if (kc_map_get(map, id) == obj)
                kc_map_remove(map, id);
        kc_list_del(&o->link);
        objs->n--;
        (*total)--;
        kc__sim_pod_touch(o->pod);
}

int kc__sim_state_add_sandbox(struct sim_state *st, struct sim_pod *p, struct sim_sandbox *sb)
{
        int r = kc_map_put(st->sandboxes, sb->v.id, sb);

        if (r < 0)
                return r;
        object_link(&st->n_sandboxes, p, &p->sandboxes, &sb->o);
        return 0;
}

int kc__sim_state_add_container(struct sim_state *st, struct sim_pod *p, struct sim_sandbox *sb,
                                struct sim_container *c)
{
        int r = kc_map_put(st->containers, c->v.id, c);

        if (r < 0)
                return r;
        c->sandbox = sb;
        object_link(&st->n_containers, p, &p->containers, &c->o);
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

/* @p p moved from [ob, ob + n) to nb; pointers elsewhere (static literals) stay. */
static const void *reloc(const void *p, const char *ob, size_t n, char *nb)
{
        const char *q = p;

        if (q && q >= ob && q < ob + n)
                return nb + (q - ob);
        return p;
}

static struct kc_label *reloc_labels(const struct kc_label *l, size_t n_labels, const char *ob,
                                     size_t n, char *nb)
{
        struct kc_label *out = (struct kc_label *)reloc(l, ob, n, nb);
        size_t i;

        /* The array was copied with the region: fix its entries in place. */
        if (out && (const void *)out != (const void *)l)
                for (i = 0; i < n_labels; i++) {
                        out[i].key = reloc(out[i].key, ob, n, nb);
                        out[i].value = reloc(out[i].value, ob, n, nb);
                }
        return out;
}

/* A copy of @p o's blob in @p a (NULL for an empty one). @return 0 or -ENOMEM. */
static int blob_dup(struct kc_arena *a, const struct sim_object *o, char **ret)
{
        char *nb = NULL;

        if (o->blob_size > 0) {
                nb = kc_arena_alloc(a, o->blob_size);
                if (!nb)
                        return -ENOMEM;
                memcpy(nb, o->blob, o->blob_size);
        }
        *ret = nb;
        return 0;
}

int kc__sim_sandbox_copy_listed(struct kc_arena *a, const struct sim_sandbox *sb,
                                struct kc_pod_sandbox *out)
{
        const char *ob = sb->o.blob;
        size_t n = sb->o.blob_size;
        char *nb;

        if (blob_dup(a, &sb->o, &nb) < 0)
                return -ENOMEM;
        *out = sb->v;
        out->id = reloc(out->id, ob, n, nb);
        out->metadata.name = reloc(out->metadata.name, ob, n, nb);
        out->metadata.uid = reloc(out->metadata.uid, ob, n, nb);
        out->metadata.namespace = reloc(out->metadata.namespace, ob, n, nb);
        out->ip = NULL;
        out->additional_ips = NULL;
        out->n_additional_ips = 0;
        out->labels = reloc_labels(out->labels, out->n_labels, ob, n, nb);
        out->annotations = reloc_labels(out->annotations, out->n_annotations, ob, n, nb);
        return 0;
}

int kc__sim_container_copy_listed(struct kc_arena *a, const struct sim_container *c,
                                  struct kc_cri_container *out)
{
        const char *ob = c->o.blob;
        size_t n = c->o.blob_size;
        char *nb;

        if (blob_dup(a, &c->o, &nb) < 0)
                return -ENOMEM;
        *out = c->v;
        out->id = reloc(out->id, ob, n, nb);
        out->pod_sandbox_id = reloc(out->pod_sandbox_id, ob, n, nb);
        out->metadata.name = reloc(out->metadata.name, ob, n, nb);
        out->image = reloc(out->image, ob, n, nb);
        out->image_ref = reloc(out->image_ref, ob, n, nb);
        out->started_at = 0;
        out->finished_at = 0;
        out->exit_code = 0;
        out->reason = NULL;
        out->message = NULL;
        out->labels = reloc_labels(out->labels, out->n_labels, ob, n, nb);
        out->annotations = reloc_labels(out->annotations, out->n_annotations, ob, n, nb);
        return 0;
}
