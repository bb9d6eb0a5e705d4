/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The v1 Pod the /pods endpoint serves: metadata and the whole spec as the
 * API's JSON writes it (k8s.io/api/core/v1 field names; omitempty fields
 * left out when zero, structs without omitempty, such as a container's
 * resources or the pod's securityContext, always written), with the status
 * generated in pod_status.c.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/cleanup.h"
#include "json_internal.h"
#include "kubelet/status/pod_status.h"
#include "runtime/api_pod.h"

/* Each put_* sets @p key of @p o and returns 0 or -ENOMEM; "_ne" ones skip a zero value. */
static int put_str_ne(json_t *o, const char *key, const char *s)
{
        return s && *s ? kc__json_set_str(o, key, s) : 0;
}

static int put_int_ne(json_t *o, const char *key, int64_t v)
{
        return v ? kc__json_set_new(o, key, json_integer(v)) : 0;
}

static int put_true(json_t *o, const char *key, bool b)
{
        return b ? kc__json_set_new(o, key, json_true()) : 0;
}

static int put_opt_bool(json_t *o, const char *key, enum kc_opt_bool b)
{
        return b == KC_OPT_UNSET ? 0 : kc__json_set_new(o, key, json_boolean(b == KC_OPT_TRUE));
}

static int put_opt_i64(json_t *o, const char *key, struct kc_opt_i64 v)
{
        return v.set ? kc__json_set_new(o, key, json_integer(v.v)) : 0;
}

static int string_item(const void *v, size_t i, json_t **ret)
{
        *ret = kc__json_str(((const char *const *)v)[i]);
        return 0;
}

static int put_strv(json_t *o, const char *key, const char *const *v, size_t n)
{
        json_t *a = NULL;

        if (n == 0)
                return 0;
        return kc_json_array_build(n, string_item, v, &a) < 0 ? -ENOMEM
                                                              : kc__json_set_new(o, key, a);
}

/* An array under @p key of the @p n items @p item makes from @p v; nothing when empty. */
static int put_items(json_t *o, const char *key, size_t n, kc_json_item_fn item, const void *v)
{
        json_t *a = NULL;
        int r;

        if (n == 0)
                return 0;
        r = kc_json_array_build(n, item, v, &a);
        return r < 0 ? r : kc__json_set_new(o, key, a);
}

static json_t *resource_list(const struct kc_api_resource *v, size_t n)
{
        _cleanup_json_ json_t *o = json_object();
        size_t i;

        for (i = 0; o && i < n; i++)
                if (kc__json_set_str(o, v[i].name, v[i].q.text) < 0)
                        return NULL;
        return TAKE_PTR(o);
}

/* The object under @p key of @p o, created empty when missing; NULL on ENOMEM. */
static json_t *child(json_t *o, const char *key)
{
        json_t *c = json_object_get(o, key);

        if (c)
                return c;
        c = json_object();
        return c && kc__json_set_new(o, key, c) == 0 ? c : NULL;
}

/* ------------------------------------------------------------------------ */
/* Container                                                                  */

static int port_item(const void *v, size_t i, json_t **ret)
{
        const struct kc_api_container_port *p = &((const struct kc_api_container_port *)v)[i];
        _cleanup_json_ json_t *o = json_object();

        if (!o || put_str_ne(o, "name", p->name) < 0 || put_int_ne(o, "hostPort", p->host_port) ||
            kc__json_set_new(o, "containerPort", json_integer(p->container_port)) < 0 ||
            kc__json_set_str(o, "protocol", p->protocol) < 0 ||
            put_str_ne(o, "hostIP", p->host_ip) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

static int env_source(json_t *o, const struct kc_api_env_var *e)
{
        json_t *vf = child(o, "valueFrom"), *s;

        if (!vf)
                return -ENOMEM;
        switch (e->source) {
        case KC_ENV_SOURCE_FIELD_REF:
                s = child(vf, "fieldRef");
                return !s || kc__json_set_str(s, "apiVersion", "v1") < 0 ||
                                       kc__json_set_str(s, "fieldPath", e->field_path) < 0
                               ? -ENOMEM
                               : 0;
        case KC_ENV_SOURCE_RESOURCE_FIELD:
                s = child(vf, "resourceFieldRef");
                return !s || put_str_ne(s, "containerName", e->resource_container) < 0 ||
                                       kc__json_set_str(s, "resource", e->resource) < 0 ||
                                       kc__json_set_str(s, "divisor", e->divisor.text) < 0
                               ? -ENOMEM
                               : 0;
        default:
                s = child(vf, e->source == KC_ENV_SOURCE_SECRET_KEY ? "secretKeyRef"
                                                                    : "configMapKeyRef");
                return !s || put_str_ne(s, "name", e->ref_name) < 0 ||
                                       kc__json_set_str(s, "key", e->ref_key) < 0 ||
                                       put_opt_bool(s, "optional", e->ref_optional) < 0
                               ? -ENOMEM
                               : 0;
        }
}

static int env_item(const void *v, size_t i, json_t **ret)
{
        const struct kc_api_env_var *e = &((const struct kc_api_env_var *)v)[i];
        _cleanup_json_ json_t *o = json_object();

        if (!o || kc__json_set_str(o, "name", e->name) < 0 ||
            put_str_ne(o, "value", e->value) < 0 ||
            (e->source != KC_ENV_SOURCE_NONE && env_source(o, e) < 0))
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

static int env_from_item(const void *v, size_t i, json_t **ret)
{
        const struct kc_api_env_from *e = &((const struct kc_api_env_from *)v)[i];
        _cleanup_json_ json_t *o = json_object();
        json_t *ref = o ? child(o, e->secret ? "secretRef" : "configMapRef") : NULL;

        if (!ref || put_str_ne(o, "prefix", e->prefix) < 0 ||
            kc__json_set_str(ref, "name", e->ref_name) < 0 ||
            put_opt_bool(ref, "optional", e->optional) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

static int mount_item(const void *v, size_t i, json_t **ret)
{
        const struct kc_api_volume_mount *m = &((const struct kc_api_volume_mount *)v)[i];
        _cleanup_json_ json_t *o = json_object();

        if (!o || kc__json_set_str(o, "name", m->name) < 0 ||
            put_true(o, "readOnly", m->read_only) < 0 ||
            kc__json_set_str(o, "mountPath", m->mount_path) < 0 ||
            put_str_ne(o, "subPath", m->sub_path) < 0 ||
            put_str_ne(o, "mountPropagation", kc_mount_propagation_to_string(m->propagation)) < 0 ||
            put_str_ne(o, "subPathExpr", m->sub_path_expr) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

static int header_item(const void *v, size_t i, json_t **ret)
{
        const struct kc_api_http_header *h = &((const struct kc_api_http_header *)v)[i];

        *ret = json_pack("{s:s,s:s}", "name", h->name, "value", h->value ? h->value : "");
        return 0;
}

static json_t *port_ref(const struct kc_api_port_ref *p)
{
        return p->name ? kc__json_str(p->name) : json_integer(p->number);
}

/* A handler's fields into @p o (a Lifecycle handler or a Probe). */
static int handler_fields(json_t *o, const struct kc_api_handler *h)
{
        static const char *const keys[] = {
                [KC_HANDLER_EXEC] = "exec",
                [KC_HANDLER_HTTP_GET] = "httpGet",
                [KC_HANDLER_TCP_SOCKET] = "tcpSocket",
                [KC_HANDLER_GRPC] = "grpc",
                [KC_HANDLER_SLEEP] = "sleep",
        };
        json_t *k;

        if (!o)
                return -ENOMEM;
        if (h->kind == KC_HANDLER_NONE || (size_t)h->kind >= KC_ELEMENTSOF(keys))
                return 0;
        k = child(o, keys[h->kind]);
        if (!k)
                return -ENOMEM;
        switch (h->kind) {
        case KC_HANDLER_EXEC:
                return put_strv(k, "command", h->command, h->n_command);
        case KC_HANDLER_HTTP_GET:
                return kc__json_set_str(k, "path", h->path) < 0 ||
                                       kc__json_set_new(k, "port", port_ref(&h->port)) < 0 ||
                                       put_str_ne(k, "host", h->host) < 0 ||
                                       kc__json_set_str(k, "scheme", h->https ? "HTTPS" : "HTTP") <
                                               0 ||
                                       put_items(k, "httpHeaders", h->n_headers, header_item,
                                                 h->headers) < 0
                               ? -ENOMEM
                               : 0;
        case KC_HANDLER_TCP_SOCKET:
                return kc__json_set_new(k, "port", port_ref(&h->port)) < 0 ||
                                       put_str_ne(k, "host", h->host) < 0
                               ? -ENOMEM
                               : 0;
        case KC_HANDLER_GRPC:
                return kc__json_set_new(k, "port", json_integer(h->port.number)) < 0 ||
                                       kc__json_set_str(k, "service",
                                                        h->grpc_service ? h->grpc_service : "") < 0
                               ? -ENOMEM
                               : 0;
        default:
                return kc__json_set_new(k, "seconds", json_integer(h->sleep_seconds));
        }
}

static int put_probe(json_t *o, const char *key, const struct kc_api_probe *p)
{
        json_t *po;

        if (!p->present)
                return 0;
        po = child(o, key);
        if (!po || handler_fields(po, &p->handler) < 0 ||
            put_int_ne(po, "initialDelaySeconds", p->initial_delay_seconds) < 0 ||
            kc__json_set_new(po, "timeoutSeconds", json_integer(p->timeout_seconds)) < 0 ||
            kc__json_set_new(po, "periodSeconds", json_integer(p->period_seconds)) < 0 ||
            kc__json_set_new(po, "successThreshold", json_integer(p->success_threshold)) < 0 ||
            kc__json_set_new(po, "failureThreshold", json_integer(p->failure_threshold)) < 0 ||
            put_opt_i64(po, "terminationGracePeriodSeconds", p->termination_grace_period_seconds) <
                    0)
                return -ENOMEM;
        return 0;
}

static int put_lifecycle(json_t *o, const struct kc_api_lifecycle *l)
{
        json_t *lo;

        if (l->post_start.kind == KC_HANDLER_NONE && l->pre_stop.kind == KC_HANDLER_NONE)
                return 0;
        lo = child(o, "lifecycle");
        if (!lo || (l->post_start.kind && handler_fields(child(lo, "postStart"), &l->post_start)) ||
            (l->pre_stop.kind && handler_fields(child(lo, "preStop"), &l->pre_stop)))
                return -ENOMEM;
        return 0;
}

static int put_seccomp(json_t *o, const struct kc_api_seccomp *s)
{
        json_t *so;

        if (!s->type)
                return 0;
        so = child(o, "seccompProfile");
        return !so || kc__json_set_str(so, "type", s->type) < 0 ||
                               put_str_ne(so, "localhostProfile", s->localhost_profile) < 0
                       ? -ENOMEM
                       : 0;
}

static int put_security_context(json_t *o, const struct kc_api_security_context *s)
{
        json_t *so, *caps;

        if (!s->present)
                return 0;
        so = child(o, "securityContext");
        if (!so)
                return -ENOMEM;
        if (s->has_capabilities) {
                caps = child(so, "capabilities");
                if (!caps ||
                    put_strv(caps, "add", s->capabilities.add, s->capabilities.n_add) < 0 ||
                    put_strv(caps, "drop", s->capabilities.drop, s->capabilities.n_drop) < 0)
                        return -ENOMEM;
        }
        return put_opt_bool(so, "privileged", s->privileged) < 0 ||
                               put_opt_i64(so, "runAsUser", s->run_as_user) < 0 ||
                               put_opt_i64(so, "runAsGroup", s->run_as_group) < 0 ||
                               put_opt_bool(so, "runAsNonRoot", s->run_as_non_root) < 0 ||
                               put_opt_bool(so, "readOnlyRootFilesystem",
                                            s->read_only_root_filesystem) < 0 ||
                               put_opt_bool(so, "allowPrivilegeEscalation",
                                            s->allow_privilege_escalation) < 0 ||
                               put_str_ne(so, "procMount", s->proc_mount) < 0 ||
                               put_seccomp(so, &s->seccomp) < 0
                       ? -ENOMEM
                       : 0;
}

static int put_resources(json_t *o, const struct kc_api_resources *r)
{
        json_t *ro = child(o, "resources");

        if (!ro ||
            (r->n_limits &&
             kc__json_set_new(ro, "limits", resource_list(r->limits, r->n_limits)) < 0) ||
            (r->n_requests &&
             kc__json_set_new(ro, "requests", resource_list(r->requests, r->n_requests)) < 0))
                return -ENOMEM;
        return 0;
}

/* A kc_json_item_fn: the v1 Container of @p containers[i]. */
static int container_item(const void *containers, size_t i, json_t **ret)
{
        const struct kc_api_container *c = &((const struct kc_api_container *)containers)[i];
        _cleanup_json_ json_t *o = json_object();

        if (!o || kc__json_set_str(o, "name", c->name) < 0 ||
            kc__json_set_str(o, "image", c->image) < 0 ||
            put_strv(o, "command", c->command, c->n_command) < 0 ||
            put_strv(o, "args", c->args, c->n_args) < 0 ||
            put_str_ne(o, "workingDir", c->working_dir) < 0 ||
            put_items(o, "ports", c->n_ports, port_item, c->ports) < 0 ||
            put_items(o, "envFrom", c->n_env_from, env_from_item, c->env_from) < 0 ||
            put_items(o, "env", c->n_env, env_item, c->env) < 0 ||
            put_resources(o, &c->resources) < 0 ||
            put_items(o, "volumeMounts", c->n_volume_mounts, mount_item, c->volume_mounts) < 0 ||
            put_lifecycle(o, kc_api_lifecycle_of(c)) < 0 ||
            put_probe(o, "livenessProbe", kc_api_probe_or_none(c->liveness_probe)) < 0 ||
            put_probe(o, "readinessProbe", kc_api_probe_or_none(c->readiness_probe)) < 0 ||
            put_probe(o, "startupProbe", kc_api_probe_or_none(c->startup_probe)) < 0 ||
            put_str_ne(o, "terminationMessagePath", c->termination_message_path) < 0 ||
            (c->termination_message_path &&
             kc__json_set_str(
                     o, "terminationMessagePolicy",
                     kc_termination_message_policy_to_string(c->termination_message_policy)) < 0) ||
            kc__json_set_str(o, "imagePullPolicy", kc_pull_policy_to_string(c->image_pull_policy)) <
                    0 ||
            put_security_context(o, kc_api_security_context_of(c)) < 0 ||
            put_true(o, "stdin", c->stdin) < 0 || put_true(o, "stdinOnce", c->stdin_once) < 0 ||
            put_true(o, "tty", c->tty) < 0 ||
            (c->restart_policy_always && kc__json_set_str(o, "restartPolicy", "Always") < 0))
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

/* ------------------------------------------------------------------------ */
/* Pod spec                                                                   */

static int volume_item(const void *v, size_t i, json_t **ret)
{
        const struct kc_api_volume *vol = &((const struct kc_api_volume *)v)[i];
        _cleanup_json_ json_t *o = json_object();
        const char *type = kc_host_path_type_to_string(vol->host_path_type);
        json_t *src;

        if (!o || kc__json_set_str(o, "name", vol->name) < 0)
                return -ENOMEM;
        switch (vol->kind) {
        case KC_VOLUME_HOST_PATH:
                src = child(o, "hostPath");
                if (!src || kc__json_set_str(src, "path", vol->host_path) < 0 ||
                    kc__json_set_str(src, "type", type ? type : "") < 0)
                        return -ENOMEM;
                break;
        case KC_VOLUME_EMPTY_DIR:
                src = child(o, "emptyDir");
                if (!src || (vol->medium_memory && kc__json_set_str(src, "medium", "Memory") < 0) ||
                    (vol->has_size_limit &&
                     kc__json_set_str(src, "sizeLimit", vol->size_limit.text) < 0))
                        return -ENOMEM;
                break;
        default:
                /* the source's own fields are not kept: the pod waits for it */
                if (!child(o, vol->kind_name ? vol->kind_name : "unknown"))
                        return -ENOMEM;
                break;
        }
        *ret = TAKE_PTR(o);
        return 0;
}

static int host_alias_item(const void *v, size_t i, json_t **ret)
{
        const struct kc_api_host_alias *h = &((const struct kc_api_host_alias *)v)[i];
        _cleanup_json_ json_t *o = json_object();

        if (!o || kc__json_set_str(o, "ip", h->ip) < 0 ||
            put_strv(o, "hostnames", h->hostnames, h->n_hostnames) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

static int dns_option_item(const void *v, size_t i, json_t **ret)
{
        const struct kc_api_dns_option *d = &((const struct kc_api_dns_option *)v)[i];
        _cleanup_json_ json_t *o = json_object();

        if (!o || kc__json_set_str(o, "name", d->name) < 0 ||
            (d->value && kc__json_set_str(o, "value", d->value)))
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

static int sysctl_item(const void *v, size_t i, json_t **ret)
{
        const struct kc_api_sysctl *s = &((const struct kc_api_sysctl *)v)[i];

        *ret = json_pack("{s:s,s:s}", "name", s->name, "value", s->value ? s->value : "");
        return 0;
}

static int group_item(const void *v, size_t i, json_t **ret)
{
        *ret = json_integer(((const int64_t *)v)[i]);
        return 0;
}

static int put_pod_security_context(json_t *spec, const struct kc_api_pod_security_context *s)
{
        json_t *o = child(spec, "securityContext"); /* {} at least, as upstream defaults it */

        return !o || put_opt_i64(o, "runAsUser", s->run_as_user) < 0 ||
                               put_opt_i64(o, "runAsGroup", s->run_as_group) < 0 ||
                               put_opt_bool(o, "runAsNonRoot", s->run_as_non_root) < 0 ||
                               put_items(o, "supplementalGroups", s->n_supplemental_groups,
                                         group_item, s->supplemental_groups) < 0 ||
                               put_opt_i64(o, "fsGroup", s->fs_group) < 0 ||
                               put_items(o, "sysctls", s->n_sysctls, sysctl_item, s->sysctls) < 0 ||
                               put_seccomp(o, &s->seccomp) < 0
                       ? -ENOMEM
                       : 0;
}

static int put_dns(json_t *spec, const struct kc_api_pod *pod)
{
        const struct kc_api_dns_config *d = &pod->dns_config;
        json_t *o;

        if (kc__json_set_str(spec, "dnsPolicy", kc_dns_policy_to_string(pod->dns_policy)) < 0)
                return -ENOMEM;
        if (!pod->has_dns_config)
                return 0;
        o = child(spec, "dnsConfig");
        return !o || put_strv(o, "nameservers", d->nameservers, d->n_nameservers) < 0 ||
                               put_strv(o, "searches", d->searches, d->n_searches) < 0 ||
                               put_items(o, "options", d->n_options, dns_option_item, d->options) <
                                       0
                       ? -ENOMEM
                       : 0;
}

static int container_list(json_t *spec, const char *key, const struct kc_api_container *c, size_t n,
                          bool always)
{
        json_t *a = NULL;

        if (n == 0 && !always)
                return 0;
        return kc_json_array_build(n, container_item, c, &a) < 0 ? -ENOMEM
                                                                 : kc__json_set_new(spec, key, a);
}

/* The pod's spec: every field cubelet keeps, in the v1 API's order. */
static json_t *spec_json(const struct kc_api_pod *pod, const char *node_name)
{
        const char *restart = kc_restart_policy_to_string(pod->restart_policy);
        _cleanup_json_ json_t *spec = json_object();

        if (!spec || put_items(spec, "volumes", pod->n_volumes, volume_item, pod->volumes) < 0 ||
            container_list(spec, "initContainers", pod->init_containers, pod->n_init_containers,
                           false) < 0 ||
            container_list(spec, "containers", pod->containers, pod->n_containers, true) < 0 ||
            kc__json_set_str(spec, "restartPolicy", restart ? restart : "Always") < 0 ||
            (pod->termination_grace_s >= 0 &&
             kc__json_set_new(spec, "terminationGracePeriodSeconds",
                              json_integer(pod->termination_grace_s)) < 0) ||
            put_opt_i64(spec, "activeDeadlineSeconds", pod->active_deadline_seconds) < 0 ||
            put_dns(spec, pod) < 0 ||
            put_str_ne(spec, "serviceAccountName", pod->service_account_name) < 0 ||
            put_str_ne(spec, "nodeName", pod->node_name ? pod->node_name : node_name) < 0 ||
            put_true(spec, "hostNetwork", pod->host_network) < 0 ||
            put_true(spec, "hostPID", pod->host_pid) < 0 ||
            put_true(spec, "hostIPC", pod->host_ipc) < 0 ||
            put_true(spec, "shareProcessNamespace", pod->share_process_namespace) < 0 ||
            put_pod_security_context(spec, &pod->security_context) < 0 ||
            put_str_ne(spec, "hostname", pod->hostname) < 0 ||
            put_str_ne(spec, "subdomain", pod->subdomain) < 0 ||
            kc__json_set_str(spec, "schedulerName", "default-scheduler") < 0 ||
            put_items(spec, "hostAliases", pod->n_host_aliases, host_alias_item,
                      pod->host_aliases) < 0 ||
            put_str_ne(spec, "priorityClassName", pod->priority_class_name) < 0 ||
            put_opt_i64(spec, "priority", pod->priority) < 0 ||
            put_opt_bool(spec, "enableServiceLinks", pod->enable_service_links) < 0)
                return NULL;
        return TAKE_PTR(spec);
}

static int label_map(json_t *meta, const char *key, const struct kc_label *l, size_t n)
{
        json_t *o;
        size_t i;

        if (n == 0)
                return 0;
        o = child(meta, key);
        for (i = 0; o && i < n; i++)
                if (l[i].key && kc__json_set_str(o, l[i].key, l[i].value) < 0)
                        return -ENOMEM;
        return o ? 0 : -ENOMEM;
}

int kc_api_pod_to_json(const struct kc_api_pod *pod, const char *node_name, const json_t *status,
                       json_t **ret)
{
        _cleanup_json_ json_t *o = NULL, *meta = NULL, *spec = NULL, *st = NULL;

        if (!pod || !ret || (status && !json_is_object(status)))
                return -EINVAL;
        meta = json_object();
        if (!meta || kc__json_set_str(meta, "name", pod->name) < 0 ||
            kc__json_set_str(meta, "namespace", pod->namespace) < 0 ||
            kc__json_set_str(meta, "uid", pod->uid) < 0 ||
            kc__json_set_new(meta, "creationTimestamp", kc__json_time(pod->creation_ts)) < 0 ||
            (pod->deletion_ts != 0 &&
             kc__json_set_new(meta, "deletionTimestamp", kc__json_time(pod->deletion_ts)) < 0) ||
            (pod->deletion_ts != 0 && pod->deletion_grace_s >= 0 &&
             kc__json_set_new(meta, "deletionGracePeriodSeconds",
                              json_integer(pod->deletion_grace_s)) < 0) ||
            label_map(meta, "labels", pod->labels, pod->n_labels) < 0 ||
            label_map(meta, "annotations", pod->annotations, pod->n_annotations) < 0)
                return -ENOMEM;
        spec = spec_json(pod, node_name);
        if (!spec)
                return -ENOMEM;
        /* Shared, not copied: statuses are immutable once generated. */
        st = status ? json_incref((json_t *)status) : json_object();
        o = json_object();
        if (!st || !o || kc__json_set_str(o, "kind", "Pod") < 0 ||
            kc__json_set_str(o, "apiVersion", "v1") < 0 ||
            kc__json_set_new(o, "metadata", TAKE_PTR(meta)) < 0 ||
            kc__json_set_new(o, "spec", TAKE_PTR(spec)) < 0 ||
            kc__json_set_new(o, "status", TAKE_PTR(st)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}
