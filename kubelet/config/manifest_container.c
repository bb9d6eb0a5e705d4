/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The containers of a static-pod manifest: every v1 Container field,
 * validated as ValidatePodCreate does and defaulted as SetDefaults_Container
 * and SetDefaults_Pod do (pull policy, termination message path and policy,
 * port protocol, requests from limits, probe timings).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/enum_table.h"
#include "manifest_internal.h"

#define DEFAULT_TERMINATION_MESSAGE_PATH "/dev/termination-log"

/*
 * The v1 default pull policy (SetDefaults_Container): Always when the
 * image's tag is "latest", or when it has neither tag nor digest (the
 * reference parser then defaults the tag to "latest"); else IfNotPresent.
 */
static enum kc_pull_policy default_pull_policy(const char *image)
{
        const char *at = strchr(image, '@');
        const char *end = at ? at : image + strlen(image);
        const char *slash = NULL, *colon = NULL, *q;

        for (q = image; q < end; q++)
                if (*q == '/')
                        slash = q;
        for (q = slash ? slash + 1 : image; q < end; q++)
                if (*q == ':')
                        colon = q;
        if (!colon)
                return at ? KC_PULL_IF_NOT_PRESENT : KC_PULL_ALWAYS;
        return (size_t)(end - colon - 1) == 6 && strncmp(colon + 1, "latest", 6) == 0
                       ? KC_PULL_ALWAYS
                       : KC_PULL_IF_NOT_PRESENT;
}

/* A subPath: relative, and no ".." element (validateLocalDescendingPath). */
static bool is_descending_path(const char *s)
{
        const char *e = s;

        if (*s == '/')
                return false;
        while (*e) {
                size_t n = strcspn(e, "/");

                if (n == 2 && e[0] == '.' && e[1] == '.')
                        return false;
                e += n;
                if (*e)
                        e++;
        }
        return true;
}

static int parse_mount(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                       void *item, void *userdata)
{
        struct kc_api_volume_mount *out = item;
        const struct mf_path sp = { .up = p, .field = "subPath" };
        const char *prop = NULL;
        char q[300];
        int r, v;

        (void)userdata;

        r = kc__mf_check_fields(c, p, n, MF_VOLUME_MOUNT);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "name", &out->name);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "mountPath", &out->mount_path);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "subPath", &out->sub_path);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "subPathExpr", &out->sub_path_expr);
        if (r >= 0)
                r = kc__mf_field_bool(c, p, n, "readOnly", &out->read_only);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "mountPropagation", &prop);
        if (r < 0)
                return r;
        if (!out->name || !*out->name)
                return kc__mf_fail_path(c, &(struct mf_path){ .up = p, .field = "name" },
                                        "required value");
        if (!out->mount_path || !*out->mount_path)
                return kc__mf_fail_path(c, &(struct mf_path){ .up = p, .field = "mountPath" },
                                        "required value");
        if (out->sub_path && *out->sub_path && out->sub_path_expr && *out->sub_path_expr)
                return kc__mf_fail_path(c, &(struct mf_path){ .up = p, .field = "subPathExpr" },
                                        "subPathExpr and subPath are mutually exclusive");
        if (out->sub_path && *out->sub_path && !is_descending_path(out->sub_path))
                return kc__mf_fail_path(c, &sp,
                                        "invalid value %s: must be a relative path without '..'",
                                        kc__mf_quote(q, out->sub_path, strlen(out->sub_path)));
        if (prop && *prop) {
                v = kc_mount_propagation_from_string(prop);
                if (v < 0)
                        return kc__mf_fail_unsupported(c, p, "mountPropagation", prop,
                                                       "\"Bidirectional\", \"HostToContainer\", "
                                                       "\"None\"");
                out->propagation = (enum kc_mount_propagation)v;
        }
        return 0;
}

static int parse_mounts(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *cn,
                        struct kc_api_container *out)
{
        int r = kc__mf_parse_list(c, p, cn, "volumeMounts", sizeof(*out->volume_mounts),
                                  parse_mount, NULL, &out->volume_mounts, &out->n_volume_mounts);

        if (r < 0 || out->n_volume_mounts == 0)
                return r;
        return kc__mf_check_unique(c, &(struct mf_path){ .up = p, .field = "volumeMounts" },
                                   out->volume_mounts, out->n_volume_mounts,
                                   sizeof(*out->volume_mounts),
                                   offsetof(struct kc_api_volume_mount, mount_path), "mountPath");
}

static int parse_lifecycle(struct mf_ctx *c, const struct mf_path *cp, const struct mf_node *cn,
                           struct kc_api_lifecycle *out)
{
        static const char *const hooks[] = { "postStart", "preStop" };
        struct kc_api_handler *h[] = { &out->post_start, &out->pre_stop };
        const struct mf_node *n, *k;
        struct mf_path p, kp;
        size_t i;
        int r;

        r = kc__mf_object_field(c, cp, cn, "lifecycle", MF_LIFECYCLE, &p, &n);
        if (r < 0 || !n)
                return r;
        for (i = 0; r >= 0 && i < KC_ELEMENTSOF(hooks); i++) {
                r = kc__mf_object_field(c, &p, n, hooks[i], MF_HANDLER, &kp, &k);
                if (r >= 0 && k)
                        r = kc__mf_parse_handler(c, &kp, k, false, h[i]);
        }
        return r;
}

static int parse_termination_message(struct mf_ctx *c, const struct mf_path *p,
                                     const struct mf_node *n, struct kc_api_container *out)
{
        const char *policy = NULL;
        int r;

        r = kc__mf_field_string(c, p, n, "terminationMessagePath", &out->termination_message_path);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "terminationMessagePolicy", &policy);
        if (r < 0)
                return r;
        if (!out->termination_message_path || !*out->termination_message_path)
                out->termination_message_path = DEFAULT_TERMINATION_MESSAGE_PATH;
        if (strlen(out->termination_message_path) > 4096)
                return kc__mf_fail_path(
                        c, &(struct mf_path){ .up = p, .field = "terminationMessagePath" },
                        "must not be longer than 4096 bytes");
        if (!policy || !*policy || !strcmp(policy, "File"))
                out->termination_message_policy = KC_TERMINATION_MESSAGE_FILE;
        else if (!strcmp(policy, "FallbackToLogsOnError"))
                out->termination_message_policy = KC_TERMINATION_MESSAGE_FALLBACK_TO_LOGS_ON_ERROR;
        else
                return kc__mf_fail_unsupported(c, p, "terminationMessagePolicy", policy,
                                               "\"FallbackToLogsOnError\", \"File\"");
        return 0;
}

/* restartPolicy: init containers only, and only "Always" (a sidecar, KEP-753). */
static int parse_restart_policy(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                                bool init, struct kc_api_container *out)
{
        const char *s = NULL;
        int r;

        r = kc__mf_field_string(c, p, n, "restartPolicy", &s);
        if (r < 0 || !s || !*s)
                return r;
        if (!init)
                return kc__mf_fail_path(c, &(struct mf_path){ .up = p, .field = "restartPolicy" },
                                        "forbidden: may not be set for non-init containers");
        if (strcmp(s, "Always"))
                return kc__mf_fail_unsupported(c, p, "restartPolicy", s, "\"Always\"");
        out->restart_policy_always = true;
        return 0;
}

/* name, image, command, args, imagePullPolicy, workingDir. */
static int parse_basics(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                        struct kc_api_container *out)
{
        const struct mf_path name_p = { .up = p, .field = "name" };
        const struct mf_path image_p = { .up = p, .field = "image" };
        const char *s;
        char q[300];
        int r, v;

        r = kc__mf_field_string(c, p, n, "name", &out->name);
        if (r < 0)
                return r;
        if (!out->name || !*out->name)
                return kc__mf_fail_path(c, &name_p, "required value");
        if (!kc__mf_is_dns_label(out->name))
                return kc__mf_fail_path(c, &name_p,
                                        "invalid value %s: must be a lowercase RFC 1123 label",
                                        kc__mf_quote(q, out->name, strlen(out->name)));
        r = kc__mf_field_string(c, p, n, "image", &out->image);
        if (r < 0)
                return r;
        if (!out->image || !*out->image)
                return kc__mf_fail_path(c, &image_p, "required value");
        if (kc__mf_has_outer_space(out->image))
                return kc__mf_fail_path(
                        c, &image_p,
                        "invalid value %s: must not have leading or trailing whitespace",
                        kc__mf_quote(q, out->image, strlen(out->image)));
        r = kc__mf_field_strv(c, p, n, "command", &out->command, &out->n_command);
        if (r >= 0)
                r = kc__mf_field_strv(c, p, n, "args", &out->args, &out->n_args);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "workingDir", &out->working_dir);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "imagePullPolicy", &s);
        if (r < 0)
                return r;
        if (out->working_dir && !*out->working_dir)
                out->working_dir = NULL;
        if (!s || !*s) {
                out->image_pull_policy = default_pull_policy(out->image);
                return 0;
        }
        v = kc_pull_policy_from_string(s);
        if (v < 0)
                return kc__mf_fail_unsupported(c, p, "imagePullPolicy", s,
                                               "\"Always\", \"IfNotPresent\", \"Never\"");
        out->image_pull_policy = (enum kc_pull_policy)v;
        return 0;
}

/* *@p ret: a copy of @p v in the parse's memory when @p present, else NULL (issue 18). */
static int keep_optional(struct mf_ctx *c, bool present, const void *v, size_t size,
                         const void **ret)
{
        void *d = present ? kc__mf_alloc(c, 1, size) : NULL;

        if (present && !d)
                return -ENOMEM;
        if (d)
                memcpy(d, v, size);
        *ret = d;
        return 0;
}

/* The parts a container holds only when given: hooks, probes, security context. */
static int parse_optional_parts(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                                struct kc_api_container *out)
{
        struct kc_api_lifecycle lc = { 0 };
        struct kc_api_probe probes[3] = { 0 };
        static const char *const probe_fields[] = { "livenessProbe", "readinessProbe",
                                                    "startupProbe" };
        const struct kc_api_probe **probe_out[] = { &out->liveness_probe, &out->readiness_probe,
                                                    &out->startup_probe };
        struct kc_api_security_context sc = { 0 };
        int r;

        r = parse_lifecycle(c, p, n, &lc);
        if (r >= 0)
                r = keep_optional(c, lc.post_start.kind || lc.pre_stop.kind, &lc, sizeof(lc),
                                  (const void **)&out->lifecycle);
        for (size_t i = 0; r >= 0 && i < KC_ELEMENTSOF(probes); i++) {
                r = kc__mf_parse_probe(c, p, n, probe_fields[i], &probes[i]);
                if (r >= 0)
                        r = keep_optional(c, probes[i].present, &probes[i], sizeof(probes[i]),
                                          (const void **)probe_out[i]);
        }
        if (r >= 0)
                r = parse_termination_message(c, p, n, out);
        if (r >= 0)
                r = kc__mf_parse_security_context(c, p, n, &sc);
        if (r >= 0)
                r = keep_optional(c, sc.present, &sc, sizeof(sc),
                                  (const void **)&out->security_context);
        return r;
}

static int parse_container(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                           bool init, bool host_network, struct kc_api_container *out)
{
        const struct mf_node *k;
        struct mf_path kp;
        int r;

        r = kc__mf_check_fields(c, p, n, init ? MF_INIT_CONTAINER : MF_CONTAINER);
        if (r >= 0)
                r = parse_basics(c, p, n, out);
        if (r >= 0)
                r = kc__mf_parse_ports(c, p, n, host_network, out);
        if (r >= 0)
                r = kc__mf_parse_env(c, p, n, out);
        if (r >= 0)
                r = kc__mf_field(c, p, n, "resources", &kp, &k);
        if (r >= 0)
                r = kc__mf_parse_resources(c, &kp, k, &out->resources);
        if (r >= 0)
                r = parse_mounts(c, p, n, out);
        if (r >= 0)
                r = parse_optional_parts(c, p, n, out);
        if (r >= 0)
                r = kc__mf_field_bool(c, p, n, "stdin", &out->stdin);
        if (r >= 0)
                r = kc__mf_field_bool(c, p, n, "stdinOnce", &out->stdin_once);
        if (r >= 0)
                r = kc__mf_field_bool(c, p, n, "tty", &out->tty);
        if (r >= 0)
                r = parse_restart_policy(c, p, n, init, out);
        if (r < 0)
                return r;
        /* Only sidecars (restartable init containers) may have these, as upstream validates. */
        if (init && !out->restart_policy_always &&
            (out->lifecycle || out->liveness_probe || out->readiness_probe || out->startup_probe))
                return kc__mf_fail_path(c, p,
                                        "forbidden: lifecycle hooks and probes may only be set "
                                        "on init containers with restartPolicy Always");
        return 0;
}

int kc__mf_parse_containers(struct mf_ctx *c, const struct mf_path *spec,
                            const struct mf_node *specn, bool init, bool host_network,
                            struct mf_containers *out)
{
        const char *field = init ? "initContainers" : "containers";
        const struct mf_path p = { .up = spec, .field = field };
        const struct mf_node *n = NULL;
        size_t i;
        int r;

        if (specn) {
                r = kc__mf_map_get(c, spec, specn, field, &n);
                if (r < 0)
                        return r;
        }
        if (kc__mf_is_null(n))
                return 0;
        if (n->type != NODE_SEQ)
                return kc__mf_fail_path(c, &p, "must be a list");
        if (n->n == 0)
                return 0;
        out->v = kc__mf_alloc(c, n->n, sizeof(*out->v));
        if (!out->v)
                return -ENOMEM;
        out->n = n->n;
        for (i = 0; i < n->n; i++) {
                r = parse_container(c, &(struct mf_path){ .up = &p, .index = i }, n->kids[i], init,
                                    host_network, &out->v[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}
