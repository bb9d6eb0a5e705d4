/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pod-level fields of a static pod's spec: volumes, security contexts,
 * DNS, host aliases, namespaces and the scheduling fields a static pod
 * does not use, validated as ValidatePodCreate does, defaulted as
 * SetDefaults_PodSpec and SetDefaults_Volume do.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/enum_table.h"
#include "manifest_internal.h"

/* ------------------------------------------------------------------------ */
/* Security contexts                                                          */

int kc__mf_parse_seccomp(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                         struct kc_api_seccomp *out)
{
        const struct mf_node *n;
        struct mf_path sp;
        int r;

        r = kc__mf_object_field(c, p, m, "seccompProfile", MF_SECCOMP, &sp, &n);
        if (r < 0 || !n)
                return r;
        r = kc__mf_field_string(c, &sp, n, "type", &out->type);
        if (r >= 0)
                r = kc__mf_field_string(c, &sp, n, "localhostProfile", &out->localhost_profile);
        if (r < 0)
                return r;
        if (!out->type || !*out->type)
                return kc__mf_fail_path(c, &(struct mf_path){ .up = &sp, .field = "type" },
                                        "required value");
        if (strcmp(out->type, "RuntimeDefault") && strcmp(out->type, "Unconfined") &&
            strcmp(out->type, "Localhost"))
                return kc__mf_fail_unsupported(c, &sp, "type", out->type,
                                               "\"Localhost\", \"RuntimeDefault\", "
                                               "\"Unconfined\"");
        if (!strcmp(out->type, "Localhost") != (out->localhost_profile && *out->localhost_profile))
                return kc__mf_fail_path(
                        c, &(struct mf_path){ .up = &sp, .field = "localhostProfile" },
                        "must be set when seccomp type is Localhost, and only then");
        return 0;
}

static int parse_id(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                    const char *key, struct kc_opt_i64 *out)
{
        int64_t v = -1;
        int r = kc__mf_field_range(c, p, m, key, 0, INT32_MAX, &v);

        if (r >= 0 && v >= 0)
                *out = (struct kc_opt_i64){ true, v };
        return r;
}

static bool has_cap(const struct kc_api_capabilities *caps, const char *name)
{
        size_t i;

        for (i = 0; i < caps->n_add; i++)
                if (!strcmp(caps->add[i], name) || !strcmp(caps->add[i], name + 4))
                        return true;
        return false;
}

static int parse_capabilities(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                              struct kc_api_security_context *out)
{
        const struct mf_node *n;
        struct mf_path cp;
        int r;

        r = kc__mf_object_field(c, p, m, "capabilities", MF_CAPABILITIES, &cp, &n);
        if (r < 0 || !n)
                return r;
        out->has_capabilities = true;
        r = kc__mf_field_strv(c, &cp, n, "add", &out->capabilities.add, &out->capabilities.n_add);
        if (r >= 0)
                r = kc__mf_field_strv(c, &cp, n, "drop", &out->capabilities.drop,
                                      &out->capabilities.n_drop);
        return r;
}

int kc__mf_parse_security_context(struct mf_ctx *c, const struct mf_path *cp,
                                  const struct mf_node *cn, struct kc_api_security_context *out)
{
        const struct mf_node *n;
        struct mf_path p;
        int r;

        r = kc__mf_object_field(c, cp, cn, "securityContext", MF_SECURITY_CONTEXT, &p, &n);
        if (r < 0 || !n)
                return r;
        out->present = true;
        r = parse_id(c, &p, n, "runAsUser", &out->run_as_user);
        if (r >= 0)
                r = parse_id(c, &p, n, "runAsGroup", &out->run_as_group);
        if (r >= 0)
                r = kc__mf_field_opt_bool(c, &p, n, "runAsNonRoot", &out->run_as_non_root);
        if (r >= 0)
                r = kc__mf_field_opt_bool(c, &p, n, "privileged", &out->privileged);
        if (r >= 0)
                r = kc__mf_field_opt_bool(c, &p, n, "readOnlyRootFilesystem",
                                          &out->read_only_root_filesystem);
        if (r >= 0)
                r = kc__mf_field_opt_bool(c, &p, n, "allowPrivilegeEscalation",
                                          &out->allow_privilege_escalation);
        if (r >= 0)
                r = parse_capabilities(c, &p, n, out);
        if (r >= 0)
                r = kc__mf_field_string(c, &p, n, "procMount", &out->proc_mount);
        if (r >= 0)
                r = kc__mf_parse_seccomp(c, &p, n, &out->seccomp);
        if (r < 0)
                return r;
        if (out->proc_mount && *out->proc_mount && strcmp(out->proc_mount, "Default") &&
            strcmp(out->proc_mount, "Unmasked"))
                return kc__mf_fail_unsupported(c, &p, "procMount", out->proc_mount,
                                               "\"Default\", \"Unmasked\"");
        if (out->allow_privilege_escalation == KC_OPT_FALSE &&
            (out->privileged == KC_OPT_TRUE || has_cap(&out->capabilities, "CAP_SYS_ADMIN")))
                return kc__mf_fail_path(c, &p,
                                        "cannot set `allowPrivilegeEscalation` to false and "
                                        "`privileged` to true or add CAP_SYS_ADMIN");
        return 0;
}

/* A sysctl name: dot- or slash-separated segments of [a-z0-9_-] (IsValidSysctlName). */
static bool is_sysctl_name(const char *s)
{
        size_t i, n = strlen(s);

        if (n == 0 || n > 253 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
                return false;
        for (i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
                      strchr("._-/", s[i])))
                        return false;
        return strchr("._-/", s[n - 1]) == NULL;
}

static int parse_sysctls(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                         struct kc_api_pod_security_context *out)
{
        const struct mf_path lp = { .up = p, .field = "sysctls" };
        char q[300];
        size_t i;
        int r;

        r = kc__mf_parse_list(c, p, m, "sysctls", sizeof(*out->sysctls), kc__mf_parse_name_value,
                              &(enum mf_object){ MF_SYSCTL }, &out->sysctls, &out->n_sysctls);
        for (i = 0; r >= 0 && i < out->n_sysctls; i++)
                if (!is_sysctl_name(out->sysctls[i].name))
                        return kc__mf_fail_path(
                                c,
                                &(struct mf_path){ .up = &(struct mf_path){ .up = &lp, .index = i },
                                                   .field = "name" },
                                "invalid value %s: not a sysctl name",
                                kc__mf_quote(q, out->sysctls[i].name,
                                             strlen(out->sysctls[i].name)));
        if (r < 0 || out->n_sysctls == 0)
                return r;
        return kc__mf_check_unique(c, &lp, out->sysctls, out->n_sysctls, sizeof(*out->sysctls),
                                   offsetof(struct kc_api_sysctl, name), "name");
}

/* One supplemental group: 0..2^31-1. */
static int parse_group(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                       void *item, void *userdata)
{
        int64_t *out = item;
        int r;

        (void)userdata;
        r = kc__mf_get_count(c, p, n, out);
        if (r >= 0 && *out > INT32_MAX)
                return kc__mf_fail_path(c, p, "must be between 0 and 2147483647, inclusive");
        return r;
}

static int parse_pod_security_context(struct mf_ctx *c, const struct mf_path *sp,
                                      const struct mf_node *spec,
                                      struct kc_api_pod_security_context *out)
{
        const struct mf_node *n;
        struct mf_path p;
        int r;

        r = kc__mf_object_field(c, sp, spec, "securityContext", MF_POD_SECURITY_CONTEXT, &p, &n);
        if (r < 0 || !n)
                return r;
        r = parse_id(c, &p, n, "runAsUser", &out->run_as_user);
        if (r >= 0)
                r = parse_id(c, &p, n, "runAsGroup", &out->run_as_group);
        if (r >= 0)
                r = kc__mf_field_opt_bool(c, &p, n, "runAsNonRoot", &out->run_as_non_root);
        if (r >= 0)
                r = parse_id(c, &p, n, "fsGroup", &out->fs_group);
        if (r >= 0)
                r = kc__mf_parse_list(c, &p, n, "supplementalGroups",
                                      sizeof(*out->supplemental_groups), parse_group, NULL,
                                      &out->supplemental_groups, &out->n_supplemental_groups);
        if (r >= 0)
                r = parse_sysctls(c, &p, n, out);
        if (r >= 0)
                r = kc__mf_parse_seccomp(c, &p, n, &out->seccomp);
        return r;
}

/* ------------------------------------------------------------------------ */
/* Volumes                                                                    */

static int parse_host_path(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                           struct kc_api_volume *out)
{
        const struct mf_path pp = { .up = p, .field = "path" };
        const char *type = NULL;
        char q[300];
        int r, v;

        r = kc__mf_check_fields(c, p, n, MF_HOST_PATH);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "path", &out->host_path);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "type", &type);
        if (r < 0)
                return r;
        out->kind = KC_VOLUME_HOST_PATH;
        if (!out->host_path || !*out->host_path)
                return kc__mf_fail_path(c, &pp, "required value");
        if (!strcmp(out->host_path, "..") || !strncmp(out->host_path, "../", 3) ||
            strstr(out->host_path, "/../") ||
            (strlen(out->host_path) >= 3 &&
             !strcmp(out->host_path + strlen(out->host_path) - 3, "/..")))
                return kc__mf_fail_path(c, &pp, "invalid value %s: must not contain '..'",
                                        kc__mf_quote(q, out->host_path, strlen(out->host_path)));
        if (!type || !*type)
                return 0;
        v = kc_host_path_type_from_string(type);
        if (v < 0)
                return kc__mf_fail_unsupported(c, p, "type", type,
                                               "\"\", \"BlockDevice\", \"CharDevice\", "
                                               "\"Directory\", \"DirectoryOrCreate\", \"File\", "
                                               "\"FileOrCreate\", \"Socket\"");
        out->host_path_type = (enum kc_host_path_type)v;
        return 0;
}

static int parse_empty_dir(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                           struct kc_api_volume *out)
{
        const char *medium = NULL;
        const struct mf_node *sl;
        struct mf_path slp;
        int r;

        out->kind = KC_VOLUME_EMPTY_DIR;
        out->kind_name = "emptyDir";
        if (kc__mf_is_null(n))
                return 0;
        r = kc__mf_check_fields(c, p, n, MF_EMPTY_DIR);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "medium", &medium);
        if (r >= 0)
                r = kc__mf_field(c, p, n, "sizeLimit", &slp, &sl);
        if (r >= 0)
                r = kc__mf_get_quantity(c, &slp, sl, &out->size_limit);
        if (r < 0)
                return r;
        out->has_size_limit = out->size_limit.text != NULL;
        if (out->has_size_limit && out->size_limit.milli < 0)
                return kc__mf_fail_path(c, &slp, "must be greater than or equal to 0");
        if (medium && *medium && strcmp(medium, "Memory"))
                /* HugePages media are valid v1, but cubelet has no hugetlbfs volumes: refuse */
                return kc__mf_fail_unsupported(c, p, "medium", medium,
                                               "\"\", \"Memory\" (cubelet has no HugePages "
                                               "volumes)");
        out->medium_memory = medium && !strcmp(medium, "Memory");
        if (out->has_size_limit && !out->medium_memory)
                /* kept and echoed, but only a tmpfs is bounded by it (D42) */
                return kc__mf_warn(c, &slp,
                                   "the size of a disk-backed emptyDir is not enforced (no "
                                   "eviction manager)");
        return 0;
}

/* Which volume source is set: exactly one; none defaults to emptyDir (SetDefaults_Volume). */
static int parse_volume_source(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                               struct kc_api_volume *out)
{
        const struct mf_node *src = NULL;
        const char *kind = NULL;
        size_t i, count = 0;

        for (i = 0; i + 1 < n->n; i += 2) {
                const char *k = n->kids[i]->value;

                if (!strcmp(k, "name") || kc__mf_is_null(n->kids[i + 1]))
                        continue;
                count++;
                kind = k;
                src = n->kids[i + 1];
        }
        if (count > 1)
                return kc__mf_fail_path(c, p, "may not specify more than 1 volume type");
        if (count == 0)
                return parse_empty_dir(c, p, NULL, out);
        if (!strcmp(kind, "hostPath")) {
                out->kind_name = "hostPath";
                return parse_host_path(c, &(struct mf_path){ .up = p, .field = "hostPath" }, src,
                                       out);
        }
        if (!strcmp(kind, "emptyDir"))
                return parse_empty_dir(c, &(struct mf_path){ .up = p, .field = "emptyDir" }, src,
                                       out);
        /* Another source: the volume manager makes the pod wait for it, naming it. */
        out->kind = KC_VOLUME_OTHER;
        out->kind_name = kind;
        return 0;
}

static int parse_volume(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                        void *item, void *userdata)
{
        const struct mf_path np = { .up = p, .field = "name" };
        struct kc_api_volume *out = item;
        char q[300];
        int r;

        (void)userdata;
        r = kc__mf_check_fields(c, p, n, MF_VOLUME);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "name", &out->name);
        if (r < 0)
                return r;
        if (!out->name || !*out->name)
                return kc__mf_fail_path(c, &np, "required value");
        if (!kc__mf_is_dns_label(out->name))
                return kc__mf_fail_path(c, &np,
                                        "invalid value %s: must be a lowercase RFC 1123 label",
                                        kc__mf_quote(q, out->name, strlen(out->name)));
        return parse_volume_source(c, p, n, out);
}

static int parse_volumes(struct mf_ctx *c, const struct mf_path *sp, const struct mf_node *spec,
                         struct kc_api_pod *t)
{
        int r = kc__mf_parse_list(c, sp, spec, "volumes", sizeof(*t->volumes), parse_volume, NULL,
                                  &t->volumes, &t->n_volumes);

        if (r < 0 || t->n_volumes == 0)
                return r;
        return kc__mf_check_unique(c, &(struct mf_path){ .up = sp, .field = "volumes" }, t->volumes,
                                   t->n_volumes, sizeof(*t->volumes),
                                   offsetof(struct kc_api_volume, name), "name");
}

/* ------------------------------------------------------------------------ */
/* DNS and host aliases                                                       */

static int parse_host_alias(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                            void *item, void *userdata)
{
        struct kc_api_host_alias *out = item;
        char q[300];
        int r;

        (void)userdata;
        r = kc__mf_check_fields(c, p, n, MF_HOST_ALIAS);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "ip", &out->ip);
        if (r >= 0)
                r = kc__mf_field_strv(c, p, n, "hostnames", &out->hostnames, &out->n_hostnames);
        if (r < 0)
                return r;
        if (!out->ip || !kc__mf_is_ip(out->ip))
                return kc__mf_fail_path(
                        c, &(struct mf_path){ .up = p, .field = "ip" },
                        "invalid value %s: must be a valid IP address",
                        kc__mf_quote(q, out->ip ? out->ip : "", out->ip ? strlen(out->ip) : 0));
        return 0;
}

static int parse_dns(struct mf_ctx *c, const struct mf_path *sp, const struct mf_node *spec,
                     struct kc_api_pod *t)
{
        const struct mf_path np = { .up = sp, .field = "dnsConfig" };
        const struct mf_node *n;
        struct mf_path p;
        const char *policy = NULL;
        char q[300];
        size_t i;
        int r, v;

        r = kc__mf_field_string(c, sp, spec, "dnsPolicy", &policy);
        if (r >= 0 && policy && *policy) {
                v = kc_dns_policy_from_string(policy);
                if (v < 0)
                        return kc__mf_fail_unsupported(c, sp, "dnsPolicy", policy,
                                                       "\"ClusterFirst\", "
                                                       "\"ClusterFirstWithHostNet\", "
                                                       "\"Default\", \"None\"");
                t->dns_policy = (enum kc_dns_policy)v;
        }
        if (r >= 0)
                r = kc__mf_object_field(c, sp, spec, "dnsConfig", MF_DNS_CONFIG, &p, &n);
        if (r >= 0 && n) {
                struct kc_api_dns_config *d = &t->dns_config;

                t->has_dns_config = true;
                r = kc__mf_field_strv(c, &p, n, "nameservers", &d->nameservers, &d->n_nameservers);
                if (r >= 0)
                        r = kc__mf_field_strv(c, &p, n, "searches", &d->searches, &d->n_searches);
                if (r >= 0)
                        r = kc__mf_parse_list(
                                c, &p, n, "options", sizeof(*d->options), kc__mf_parse_name_value,
                                &(enum mf_object){ MF_DNS_OPTION }, &d->options, &d->n_options);
                for (i = 0; r >= 0 && i < d->n_nameservers; i++)
                        if (!kc__mf_is_ip(d->nameservers[i]))
                                return kc__mf_fail_path(
                                        c,
                                        &(struct mf_path){
                                                .up = &(struct mf_path){ .up = &p,
                                                                         .field = "nameservers" },
                                                .index = i },
                                        "invalid value %s: must be a valid IP address",
                                        kc__mf_quote(q, d->nameservers[i],
                                                     strlen(d->nameservers[i])));
                if (r >= 0 && d->n_nameservers > 3)
                        return kc__mf_fail_path(c, &np, "must not have more than 3 nameservers");
                if (r >= 0 && d->n_searches > 32)
                        return kc__mf_fail_path(c, &np, "must not have more than 32 search paths");
        }
        if (r >= 0 && t->dns_policy == KC_DNS_NONE &&
            (!t->has_dns_config || t->dns_config.n_nameservers == 0))
                return kc__mf_fail_path(c, &np,
                                        "must provide at least one DNS nameserver when "
                                        "dnsPolicy is None");
        return r;
}

/* ------------------------------------------------------------------------ */
/* The pod's own fields                                                       */

static int parse_dns_label_field(struct mf_ctx *c, const struct mf_path *sp,
                                 const struct mf_node *spec, const char *key, const char **ret)
{
        char q[300];
        int r = kc__mf_field_string(c, sp, spec, key, ret);

        if (r < 0 || !*ret)
                return r;
        if (!**ret) {
                *ret = NULL;
                return 0;
        }
        if (!kc__mf_is_dns_label(*ret))
                return kc__mf_fail_path(c, &(struct mf_path){ .up = sp, .field = key },
                                        "invalid value %s: must be a lowercase RFC 1123 label",
                                        kc__mf_quote(q, *ret, strlen(*ret)));
        return 0;
}

/* The fields a static pod accepts but whose value changes nothing here, or is refused. */
static int parse_unused(struct mf_ctx *c, const struct mf_path *sp, const struct mf_node *spec)
{
        enum kc_opt_bool automount = KC_OPT_UNSET, host_users = KC_OPT_UNSET;
        bool fqdn = false;
        const char *sched = NULL, *os = NULL;
        const struct mf_node *n;
        struct mf_path p;
        int r;

        r = kc__mf_field_opt_bool(c, sp, spec, "automountServiceAccountToken", &automount);
        if (r >= 0 && automount == KC_OPT_TRUE)
                r = kc__mf_warn(
                        c, &(struct mf_path){ .up = sp, .field = "automountServiceAccountToken" },
                        "service account tokens come from the API server; none is "
                        "mounted");
        if (r >= 0)
                r = kc__mf_field_string(c, sp, spec, "schedulerName", &sched);
        if (r >= 0 && sched && *sched && strcmp(sched, "default-scheduler"))
                r = kc__mf_warn(c, &(struct mf_path){ .up = sp, .field = "schedulerName" },
                                "scheduling only: a static pod is bound to this node without a "
                                "scheduler");
        if (r >= 0)
                r = kc__mf_field_opt_bool(c, sp, spec, "hostUsers", &host_users);
        if (r >= 0 && host_users == KC_OPT_FALSE)
                r = kc__mf_warn(c, &(struct mf_path){ .up = sp, .field = "hostUsers" },
                                "user namespaces are not supported; the pod uses the host's");
        if (r >= 0)
                r = kc__mf_field_bool(c, sp, spec, "setHostnameAsFQDN", &fqdn);
        if (r >= 0 && fqdn)
                r = kc__mf_warn(c, &(struct mf_path){ .up = sp, .field = "setHostnameAsFQDN" },
                                "the hostname is always the short name");
        if (r >= 0)
                r = kc__mf_field(c, sp, spec, "ephemeralContainers", &p, &n);
        if (r >= 0 && !kc__mf_is_null(n) && n->n > 0)
                return kc__mf_fail_path(c, &p, "forbidden: cannot be set on create");
        if (r >= 0)
                r = kc__mf_object_field(c, sp, spec, "os", MF_POD_OS, &p, &n);
        if (r >= 0 && n) {
                r = kc__mf_field_string(c, &p, n, "name", &os);
                if (r >= 0 && (!os || strcmp(os, "linux")))
                        return kc__mf_fail_unsupported(c, &p, "name", os ? os : "",
                                                       "\"linux\" (the node's OS)");
        }
        return r;
}

/* restartPolicy, grace and deadline, namespaces, names, priority, service links. */
static int parse_settings(struct mf_ctx *c, const struct mf_path *sp, const struct mf_node *spec,
                          struct kc_api_pod *t)
{
        const char *s = NULL, *node = NULL;
        int64_t deadline = 0, prio = 0;
        bool has_prio;
        int r, v;

        r = kc__mf_field_string(c, sp, spec, "restartPolicy", &s);
        if (r >= 0 && s && *s) {
                v = kc_restart_policy_from_string(s);
                if (v < 0)
                        return kc__mf_fail_unsupported(c, sp, "restartPolicy", s,
                                                       "\"Always\", \"OnFailure\", \"Never\"");
                t->restart_policy = (enum kc_restart_policy)v;
        }
        if (r >= 0)
                r = kc__mf_field_bool(c, sp, spec, "hostNetwork", &t->host_network);
        if (r >= 0)
                r = kc__mf_field_count(c, sp, spec, "terminationGracePeriodSeconds",
                                       &t->termination_grace_s);
        if (r >= 0)
                r = kc__mf_field_range(c, sp, spec, "activeDeadlineSeconds", 1, INT64_MAX,
                                       &deadline);
        if (r >= 0 && deadline > 0) {
                t->active_deadline_seconds = (struct kc_opt_i64){ true, deadline };
                r = kc__mf_warn(c, &(struct mf_path){ .up = sp, .field = "activeDeadlineSeconds" },
                                "cubelet does not enforce an active deadline");
        }
        if (r >= 0)
                r = kc__mf_field_bool(c, sp, spec, "hostPID", &t->host_pid);
        if (r >= 0)
                r = kc__mf_field_bool(c, sp, spec, "hostIPC", &t->host_ipc);
        if (r >= 0)
                r = kc__mf_field_bool(c, sp, spec, "shareProcessNamespace",
                                      &t->share_process_namespace);
        if (r >= 0)
                r = kc__mf_field_string(c, sp, spec, "nodeName", &node);
        if (r >= 0)
                r = kc__mf_field_string(c, sp, spec, "serviceAccountName",
                                        &t->service_account_name);
        if (r >= 0 && (!t->service_account_name || !*t->service_account_name))
                /* the deprecated alias (SetDefaults_PodSpec copies it over) */
                r = kc__mf_field_string(c, sp, spec, "serviceAccount", &t->service_account_name);
        if (r >= 0)
                r = parse_dns_label_field(c, sp, spec, "hostname", &t->hostname);
        if (r >= 0)
                r = parse_dns_label_field(c, sp, spec, "subdomain", &t->subdomain);
        if (r >= 0)
                r = kc__mf_field_string(c, sp, spec, "priorityClassName", &t->priority_class_name);
        has_prio = false;
        if (r >= 0) {
                prio = INT64_MIN;
                r = kc__mf_field_range(c, sp, spec, "priority", INT32_MIN, INT32_MAX, &prio);
                has_prio = prio != INT64_MIN;
        }
        if (has_prio)
                t->priority = (struct kc_opt_i64){ true, prio };
        if (r >= 0)
                r = kc__mf_field_opt_bool(c, sp, spec, "enableServiceLinks",
                                          &t->enable_service_links);
        return r;
}

int kc__mf_parse_pod_fields(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *spec,
                            struct kc_api_pod *t)
{
        int r;

        if (!spec)
                return 0;
        r = kc__mf_check_fields(c, p, spec, MF_POD_SPEC);
        if (r >= 0)
                r = parse_settings(c, p, spec, t);
        if (r >= 0)
                r = parse_unused(c, p, spec);
        if (r >= 0)
                r = parse_volumes(c, p, spec, t);
        if (r >= 0)
                r = parse_pod_security_context(c, p, spec, &t->security_context);
        if (r >= 0)
                r = kc__mf_parse_list(c, p, spec, "hostAliases", sizeof(*t->host_aliases),
                                      parse_host_alias, NULL, &t->host_aliases, &t->n_host_aliases);
        if (r >= 0)
                r = parse_dns(c, p, spec, t);
        return r;
}

/* ------------------------------------------------------------------------ */
/* Across the spec                                                            */

static const struct kc_api_volume *find_volume(const struct kc_api_pod *t, const char *name)
{
        size_t i;

        for (i = 0; i < t->n_volumes; i++)
                if (!strcmp(t->volumes[i].name, name))
                        return &t->volumes[i];
        return NULL;
}

static int check_mounts(struct mf_ctx *c, const char *field, const struct kc_api_container *v,
                        size_t n, const struct kc_api_pod *t)
{
        const struct mf_path spec = { .field = "spec" };
        const struct mf_path list = { .up = &spec, .field = field };
        char q[300];
        size_t i, j;

        for (i = 0; i < n; i++) {
                const struct mf_path cp = { .up = &list, .index = i };
                const struct mf_path mp = { .up = &cp, .field = "volumeMounts" };

                for (j = 0; j < v[i].n_volume_mounts; j++) {
                        const struct kc_api_volume_mount *m = &v[i].volume_mounts[j];
                        const struct mf_path ip = { .up = &mp, .index = j };

                        if (!find_volume(t, m->name))
                                return kc__mf_fail_path(
                                        c, &(struct mf_path){ .up = &ip, .field = "name" },
                                        "not found %s", kc__mf_quote(q, m->name, strlen(m->name)));
                        if (m->propagation == KC_MOUNT_PROPAGATION_BIDIRECTIONAL &&
                            kc_api_security_context_of(&v[i])->privileged != KC_OPT_TRUE)
                                return kc__mf_fail_path(
                                        c,
                                        &(struct mf_path){ .up = &ip, .field = "mountPropagation" },
                                        "forbidden: Bidirectional mount propagation is available "
                                        "only to privileged containers");
                }
        }
        return 0;
}

int kc__mf_check_references(struct mf_ctx *c, const struct kc_api_pod *t)
{
        int r = check_mounts(c, "initContainers", t->init_containers, t->n_init_containers, t);

        return r < 0 ? r : check_mounts(c, "containers", t->containers, t->n_containers, t);
}
