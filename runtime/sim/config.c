/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the sim keeps of the configs RunPodSandbox and CreateContainer were
 * given. Always: what a container's processes see (struct sim_exec_config,
 * one exact-size block; the mounts are in the container's CRI view). Only
 * while kc_sim_record_configs() is on: a deep copy of every field in an
 * arena of its own, so that tests can check what a real runtime would have
 * been sent (kc_sim_sandbox_config, kc_sim_container_config). A record costs
 * kilobytes a pod, the exec view tens of bytes (issue 18).
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
#include "core/cleanup.h"
#include "core/lock.h"
#include "core/map.h"
#include "runtime/runtime_service.h"
#include "runtime/sim.h"
#include "sim_internal.h"

/* A copy of @p s in @p a (NULL stays NULL); false on ENOMEM. */
static bool str_copy(struct kc_arena *a, const char **s)
{
        if (!*s)
                return true;
        *s = kc_arena_strdup(a, *s);
        return *s != NULL;
}

/* A copy of the @p n elements of @p size bytes at *@p v (none: NULL); false on ENOMEM. */
static bool mem_copy(struct kc_arena *a, const void **v, size_t n, size_t size)
{
        void *d;

        if (!*v || n == 0) {
                *v = NULL;
                return true;
        }
        d = kc_arena_alloc(a, n * size);
        if (!d)
                return false;
        memcpy(d, *v, n * size);
        *v = d;
        return true;
}

static bool strv_copy(struct kc_arena *a, const char *const **v, size_t n)
{
        if (!mem_copy(a, (const void **)v, n, sizeof(**v)))
                return false;
        for (size_t i = 0; *v && i < n; i++)
                if (!str_copy(a, (const char **)&(*v)[i]))
                        return false;
        return true;
}

static bool labels_copy(struct kc_arena *a, const struct kc_label **l, size_t n)
{
        struct kc_label *d;

        if (!mem_copy(a, (const void **)l, n, sizeof(**l)))
                return false;
        d = (struct kc_label *)*l;
        for (size_t i = 0; d && i < n; i++)
                if (!str_copy(a, &d[i].key) || !str_copy(a, &d[i].value))
                        return false;
        return true;
}

static bool i64v_copy(struct kc_arena *a, const int64_t **v, size_t n)
{
        return mem_copy(a, (const void **)v, n, sizeof(**v));
}

static int sandbox_config_copy(struct kc_arena *a, const struct kc_pod_sandbox_config *src,
                               struct kc_pod_sandbox_config *dst)
{
        struct kc_pod_sandbox_config c = *src;
        struct kc_cri_dns_config *dns = NULL;
        struct kc_cri_port_mapping *pm;

        if (src->dns_config) {
                dns = kc_arena_alloc(a, sizeof(*dns));
                if (!dns)
                        return -ENOMEM;
                *dns = *src->dns_config;
                if (!strv_copy(a, &dns->servers, dns->n_servers) ||
                    !strv_copy(a, &dns->searches, dns->n_searches) ||
                    !strv_copy(a, &dns->options, dns->n_options))
                        return -ENOMEM;
        }
        c.dns_config = dns;
        if (!str_copy(a, &c.metadata.name) || !str_copy(a, &c.metadata.uid) ||
            !str_copy(a, &c.metadata.namespace) || !str_copy(a, &c.hostname) ||
            !str_copy(a, &c.log_directory) || !str_copy(a, &c.cgroup_parent) ||
            !mem_copy(a, (const void **)&c.port_mappings, c.n_port_mappings, sizeof(*pm)) ||
            !labels_copy(a, &c.labels, c.n_labels) ||
            !labels_copy(a, &c.annotations, c.n_annotations) ||
            !labels_copy(a, &c.sysctls, c.n_sysctls) ||
            !i64v_copy(a, &c.security.supplemental_groups, c.security.n_supplemental_groups) ||
            !str_copy(a, &c.security.seccomp.localhost_ref))
                return -ENOMEM;
        pm = (struct kc_cri_port_mapping *)c.port_mappings;
        for (size_t i = 0; pm && i < c.n_port_mappings; i++)
                if (!str_copy(a, &pm[i].host_ip))
                        return -ENOMEM;
        *dst = c;
        return 0;
}

static int container_config_copy(struct kc_arena *a, const struct kc_container_config *src,
                                 struct kc_container_config *dst)
{
        struct kc_container_config c = *src;
        struct kc_cri_container_security *sec = &c.security;
        struct kc_cri_mount *m;

        if (!str_copy(a, &c.metadata.name) || !str_copy(a, &c.image) ||
            !str_copy(a, &c.user_specified_image) || !strv_copy(a, &c.command, c.n_command) ||
            !strv_copy(a, &c.args, c.n_args) || !str_copy(a, &c.working_dir) ||
            !labels_copy(a, &c.envs, c.n_envs) ||
            !mem_copy(a, (const void **)&c.mounts, c.n_mounts, sizeof(*m)) ||
            !str_copy(a, &c.log_path) || !labels_copy(a, &c.labels, c.n_labels) ||
            !labels_copy(a, &c.annotations, c.n_annotations) ||
            !str_copy(a, &c.resources.cpuset_cpus) || !str_copy(a, &c.resources.cpuset_mems) ||
            !strv_copy(a, &sec->capabilities.add, sec->capabilities.n_add) ||
            !strv_copy(a, &sec->capabilities.drop, sec->capabilities.n_drop) ||
            !str_copy(a, &sec->run_as_username) ||
            !i64v_copy(a, &sec->supplemental_groups, sec->n_supplemental_groups) ||
            !strv_copy(a, &sec->masked_paths, sec->n_masked_paths) ||
            !strv_copy(a, &sec->readonly_paths, sec->n_readonly_paths) ||
            !str_copy(a, &sec->seccomp.localhost_ref))
                return -ENOMEM;
        m = (struct kc_cri_mount *)c.mounts;
        for (size_t i = 0; m && i < c.n_mounts; i++)
                if (!str_copy(a, &m[i].container_path) || !str_copy(a, &m[i].host_path))
                        return -ENOMEM;
        *dst = c;
        return 0;
}

/* The exec view's layout, for both passes of @p pk; *@p ret only on the copying pass. */
static void exec_config_pack(struct kc__packer *pk, const struct kc_container_config *config,
                             const struct kc_pod_sandbox_config *sandbox_config,
                             struct sim_exec_config **ret)
{
        struct sim_exec_config *x =
                kc__pack_reserve(pk, sizeof(*x), alignof(struct sim_exec_config));
        const struct kc_label *envs = kc__pack_labels(pk, config->envs, config->n_envs);
        const char *wd = kc__pack_str(pk, config->working_dir);
        const char *host = kc__pack_str(pk, sandbox_config ? sandbox_config->hostname : NULL);

        if (!x)
                return;
        *x = (struct sim_exec_config){
                .envs = envs,
                .n_envs = envs ? config->n_envs : 0,
                .working_dir = wd,
                .hostname = host,
        };
        if (config->has_security) {
                x->run_as_user = config->security.run_as_user;
                x->run_as_group = config->security.run_as_group;
                x->readonly_rootfs = config->security.readonly_rootfs;
        }
        *ret = x;
}

struct sim_exec_config *kc__sim_exec_config_new(const struct kc_container_config *config,
                                                const struct kc_pod_sandbox_config *sandbox_config)
{
        struct kc__packer pk = { 0 };
        struct sim_exec_config *x = NULL;

        exec_config_pack(&pk, config, sandbox_config, &x);
        pk.base = calloc(1, pk.off);
        if (!pk.base)
                return NULL;
        pk.off = 0;
        exec_config_pack(&pk, config, sandbox_config, &x);
        return x;
}

int kc__sim_config_record_new(const struct kc_pod_sandbox_config *sandbox_config,
                              const struct kc_container_config *config,
                              struct sim_config_record **ret)
{
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        struct sim_config_record *rec;

        if (kc_arena_new_block(sizeof(*rec), &a, (void **)&rec) < 0)
                return -ENOMEM;
        if (sandbox_config && (!(rec->sandbox = kc_arena_alloc(a, sizeof(*rec->sandbox))) ||
                               sandbox_config_copy(a, sandbox_config, rec->sandbox) < 0))
                return -ENOMEM;
        if (config && (!(rec->container = kc_arena_alloc(a, sizeof(*rec->container))) ||
                       container_config_copy(a, config, rec->container) < 0))
                return -ENOMEM;
        rec->arena = TAKE_PTR(a);
        *ret = rec;
        return 0;
}

void kc__sim_config_record_free(struct sim_config_record *rec)
{
        if (rec)
                kc_arena_free(rec->arena); /* holds rec itself */
}

int kc_sim_record_configs(struct kc_sim *s, bool on)
{
        if (!s)
                return -EINVAL;
        KC_LOCK_GUARD(&s->lock);
        s->record_configs = on;
        return 0;
}

int kc_sim_sandbox_config(struct kc_sim *s, const char *id, struct kc_sim_sandbox_config *ret)
{
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        const struct sim_sandbox *sb;
        struct kc_pod_sandbox_config c;

        if (!s || !id || !ret)
                return -EINVAL;
        KC_LOCK_GUARD(&s->lock);
        sb = kc_map_get(s->st.sandboxes, id);
        if (!sb)
                return -ENOENT;
        if (!sb->rec)
                return sb->o.from_spec ? -ENOENT : -ENODATA;
        if (kc_arena_new(&a) < 0 || sandbox_config_copy(a, sb->rec->sandbox, &c) < 0)
                return -ENOMEM;
        *ret = (struct kc_sim_sandbox_config){ .config = c, .arena = TAKE_PTR(a) };
        return 0;
}

int kc_sim_container_config(struct kc_sim *s, const char *id, struct kc_sim_container_config *ret)
{
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        const struct sim_container *c;
        struct kc_sim_container_config x = { 0 };

        if (!s || !id || !ret)
                return -EINVAL;
        KC_LOCK_GUARD(&s->lock);
        c = kc_map_get(s->st.containers, id);
        if (!c)
                return -ENOENT;
        if (!c->rec)
                return c->o.from_spec ? -ENOENT : -ENODATA;
        if (kc_arena_new(&a) < 0 || container_config_copy(a, c->rec->container, &x.config) < 0)
                return -ENOMEM;
        x.has_sandbox_config = c->rec->sandbox != NULL;
        if (c->rec->sandbox && sandbox_config_copy(a, c->rec->sandbox, &x.sandbox_config) < 0)
                return -ENOMEM;
        x.arena = TAKE_PTR(a);
        *ret = x;
        return 0;
}
