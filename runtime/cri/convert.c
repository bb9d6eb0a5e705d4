/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CRI message codec: kc_* configs and filters to protobuf requests, and
 * protobuf responses to kc_* results (runtime/cri/internal.h).
 *
 * Requests are assembled from borrowed pointers: every protobuf-c struct
 * and pointer array lives in a scratch arena freed once the bytes are
 * packed, and strings are not copied (protobuf-c's packer only reads them;
 * the casts from const are for its non-const field types).
 *
 * Responses are decoded with a protobuf-c allocator that takes from the
 * result's arena (and never frees), so a result's strings are the decoded
 * message's own and the whole result goes with kc_runtime_result_done().
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/cleanup.h"
#include "cri/internal.h"
#include "runtime/container.h"
#include "runtime/cri.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"

/* ------------------------------------------------------------------------ */
/* Common                                                                     */

static int oom(struct kc_runtime_error *err)
{
        return kc_runtime_error_set(err, -ENOMEM, KC_RUNTIME_INTERNAL, "out of memory");
}

static int decode_error(struct kc_runtime_error *err, const char *method)
{
        return kc_runtime_error_set(err, -EPROTO, KC_RUNTIME_INTERNAL,
                                    "failed to decode %s response", method);
}

/* A field kubelet's remote client insists on is missing from a response. */
static int missing(struct kc_runtime_error *err, const char *what)
{
        return kc_runtime_error_set(err, -EPROTO, KC_RUNTIME_INTERNAL, "%s", what);
}

/* A zeroed, initialised message of type @p desc in @p a. NULL on ENOMEM. */
static void *pb_new(struct kc_arena *a, const ProtobufCMessageDescriptor *desc)
{
        void *m = kc_arena_alloc(a, desc->sizeof_message);

        if (m)
                protobuf_c_message_init(desc, m);
        return m;
}

#define PB_NEW(a, type, desc) ((type *)pb_new((a), &(desc)))

/*
 * A repeated message field's array: @p n new @p desc messages in @p a, for
 * the caller to fill. NULL on ENOMEM (never called with @p n 0).
 */
static void *pb_array(struct kc_arena *a, const ProtobufCMessageDescriptor *desc, size_t n)
{
        void **v = kc_arena_alloc(a, n * sizeof(*v));

        for (size_t i = 0; v && i < n; i++)
                if (!(v[i] = pb_new(a, desc)))
                        return NULL;
        return v;
}

static int pack(const ProtobufCMessage *m, uint8_t **ret, size_t *ret_len)
{
        size_t n = protobuf_c_message_get_packed_size(m);
        uint8_t *b = malloc(n > 0 ? n : 1);

        if (!b)
                return -ENOMEM;
        if (n > 0)
                protobuf_c_message_pack(m, b);
        *ret = b;
        *ret_len = n;
        return 0;
}

/* protobuf-c's fields are char *, never written through while packing. */
static char *unconst(const char *s)
{
        return (char *)s;
}

/* The key and value fields of a map entry type (fields 1 and 2). */
static void map_entry_fields(const ProtobufCMessageDescriptor *desc, size_t *ret_key,
                             size_t *ret_value)
{
        const ProtobufCFieldDescriptor *k = protobuf_c_message_descriptor_get_field(desc, 1);
        const ProtobufCFieldDescriptor *v = protobuf_c_message_descriptor_get_field(desc, 2);

        *ret_key = k->offset;
        *ret_value = v->offset;
}

/*
 * A map<string, string> field (or a list of KeyValue, the same shape) from
 * @p n labels: @p n entries of type @p desc (NULL when @p n is 0). Duplicate
 * keys are sent as they are (a map's receiver keeps the last).
 */
static int labels_to_pb(struct kc_arena *a, const ProtobufCMessageDescriptor *desc,
                        const struct kc_label *l, size_t n, ProtobufCMessage ***ret)
{
        char **v;
        size_t koff, voff, i;

        *ret = NULL;
        if (n == 0 || !l)
                return 0;
        v = pb_array(a, desc, n);
        if (!v)
                return -ENOMEM;
        map_entry_fields(desc, &koff, &voff);
        for (i = 0; i < n; i++) {
                *(char **)(v[i] + koff) = unconst(l[i].key);
                *(char **)(v[i] + voff) = unconst(l[i].value);
        }
        *ret = (ProtobufCMessage **)v;
        return 0;
}

/* Sets the map field @p field of @p msg (entries of @p entry_desc) from @p n labels. */
#define LABELS_TO_PB(a, entry_desc, l, n, msg, field)                                              \
        ({                                                                                         \
                ProtobufCMessage **_v = NULL;                                                      \
                int _r = labels_to_pb((a), &(entry_desc), (l), (n), &_v);                          \
                (msg)->field = (__typeof__((msg)->field))_v;                                       \
                (msg)->n_##field = _v ? (n) : 0;                                                   \
                _r;                                                                                \
        })

/* ------------------------------------------------------------------------ */
/* Requests                                                                   */

int kc__cri_pack_id_request(const ProtobufCMessageDescriptor *desc, const char *id, uint8_t **ret,
                            size_t *ret_len)
{
        const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(desc, 1);
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        char *m;

        if (!f || f->type != PROTOBUF_C_TYPE_STRING)
                return -EINVAL;
        if (kc_arena_new(&a) < 0)
                return -ENOMEM;
        m = pb_new(a, desc);
        if (!m)
                return -ENOMEM;
        *(char **)(m + f->offset) = unconst(id);
        return pack((ProtobufCMessage *)m, ret, ret_len);
}

int kc__cri_pack_version(uint8_t **ret, size_t *ret_len)
{
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;

        req.version = unconst(KC_CRI_CLIENT_API_VERSION);
        return pack(&req.base, ret, ret_len);
}

int kc__cri_pack_status(uint8_t **ret, size_t *ret_len)
{
        Runtime__V1__StatusRequest req = RUNTIME__V1__STATUS_REQUEST__INIT;

        return pack(&req.base, ret, ret_len);
}

/* protobuf-c packs a repeated string with strlen(): no NULL elements. */
static bool strv_ok(const char *const *v, size_t n)
{
        for (size_t i = 0; v && i < n; i++)
                if (!v[i])
                        return false;
        return true;
}

/* A repeated string field: read-only for the packer, like the strings. */
#define STRV_TO_PB(msg, field, v, n)                                                               \
        do {                                                                                       \
                (msg)->field = (char **)(v);                                                       \
                (msg)->n_##field = (v) ? (n) : 0;                                                  \
        } while (0)

/* The same for a repeated int64 field. */
#define I64V_TO_PB(msg, field, v, n)                                                               \
        do {                                                                                       \
                (msg)->field = (int64_t *)(v);                                                     \
                (msg)->n_##field = (v) ? (n) : 0;                                                  \
        } while (0)

static Runtime__V1__NamespaceMode ns_mode_to_pb(enum kc_cri_namespace_mode m)
{
        switch (m) {
        case KC_CRI_NAMESPACE_CONTAINER:
                return RUNTIME__V1__NAMESPACE_MODE__CONTAINER;
        case KC_CRI_NAMESPACE_NODE:
                return RUNTIME__V1__NAMESPACE_MODE__NODE;
        case KC_CRI_NAMESPACE_TARGET:
                return RUNTIME__V1__NAMESPACE_MODE__TARGET;
        default:
                return RUNTIME__V1__NAMESPACE_MODE__POD;
        }
}

/* NamespaceOption from @p o; @p host_network forces the network namespace to NODE. */
static Runtime__V1__NamespaceOption *
namespace_options(struct kc_arena *a, const struct kc_cri_namespace_options *o, bool host_network)
{
        Runtime__V1__NamespaceOption *ns =
                PB_NEW(a, Runtime__V1__NamespaceOption, runtime__v1__namespace_option__descriptor);

        if (!ns)
                return NULL;
        ns->network = host_network ? RUNTIME__V1__NAMESPACE_MODE__NODE : ns_mode_to_pb(o->network);
        ns->pid = ns_mode_to_pb(o->pid);
        ns->ipc = ns_mode_to_pb(o->ipc);
        return ns;
}

/* An Int64Value for a set @p v, NULL (absent) for an unset one; -ENOMEM. */
static int opt_i64_to_pb(struct kc_arena *a, struct kc_cri_opt_i64 v, Runtime__V1__Int64Value **ret)
{
        Runtime__V1__Int64Value *m = NULL;

        if (v.set) {
                m = PB_NEW(a, Runtime__V1__Int64Value, runtime__v1__int64_value__descriptor);
                if (!m)
                        return -ENOMEM;
                m->value = v.v;
        }
        *ret = m;
        return 0;
}

/* A SecurityProfile for a set @p p, NULL for an unset one; -ENOMEM. */
static int profile_to_pb(struct kc_arena *a, const struct kc_cri_security_profile *p,
                         Runtime__V1__SecurityProfile **ret)
{
        Runtime__V1__SecurityProfile *m = NULL;

        if (p->set) {
                m = PB_NEW(a, Runtime__V1__SecurityProfile,
                           runtime__v1__security_profile__descriptor);
                if (!m)
                        return -ENOMEM;
                m->profile_type =
                        p->type == KC_CRI_PROFILE_UNCONFINED
                                ? RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Unconfined
                        : p->type == KC_CRI_PROFILE_LOCALHOST
                                ? RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Localhost
                                : RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__RuntimeDefault;
                m->localhost_ref = unconst(p->localhost_ref);
        }
        *ret = m;
        return 0;
}

static int dns_config_to_pb(struct kc_arena *a, const struct kc_cri_dns_config *d,
                            Runtime__V1__DNSConfig **ret)
{
        Runtime__V1__DNSConfig *m = NULL;

        if (d) {
                if (!strv_ok(d->servers, d->n_servers) || !strv_ok(d->searches, d->n_searches) ||
                    !strv_ok(d->options, d->n_options))
                        return -EINVAL;
                m = PB_NEW(a, Runtime__V1__DNSConfig, runtime__v1__dnsconfig__descriptor);
                if (!m)
                        return -ENOMEM;
                STRV_TO_PB(m, servers, d->servers, d->n_servers);
                STRV_TO_PB(m, searches, d->searches, d->n_searches);
                STRV_TO_PB(m, options, d->options, d->n_options);
        }
        *ret = m;
        return 0;
}

static int port_mappings_to_pb(struct kc_arena *a, const struct kc_pod_sandbox_config *c,
                               Runtime__V1__PodSandboxConfig *pc)
{
        Runtime__V1__PortMapping **v;

        if (c->n_port_mappings == 0 || !c->port_mappings)
                return 0;
        v = pb_array(a, &runtime__v1__port_mapping__descriptor, c->n_port_mappings);
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < c->n_port_mappings; i++) {
                const struct kc_cri_port_mapping *p = &c->port_mappings[i];

                v[i]->protocol = p->protocol == KC_CRI_PROTOCOL_UDP    ? RUNTIME__V1__PROTOCOL__UDP
                                 : p->protocol == KC_CRI_PROTOCOL_SCTP ? RUNTIME__V1__PROTOCOL__SCTP
                                                                       : RUNTIME__V1__PROTOCOL__TCP;
                v[i]->container_port = p->container_port;
                v[i]->host_port = p->host_port;
                v[i]->host_ip = unconst(p->host_ip);
        }
        pc->port_mappings = v;
        pc->n_port_mappings = c->n_port_mappings;
        return 0;
}

/* linux.security_context of a sandbox. */
static int sandbox_security_to_pb(struct kc_arena *a, const struct kc_pod_sandbox_config *c,
                                  Runtime__V1__LinuxSandboxSecurityContext **ret)
{
        const struct kc_cri_sandbox_security *s = &c->security;
        Runtime__V1__LinuxSandboxSecurityContext *sc;

        sc = PB_NEW(a, Runtime__V1__LinuxSandboxSecurityContext,
                    runtime__v1__linux_sandbox_security_context__descriptor);
        if (!sc)
                return -ENOMEM;
        sc->namespace_options = namespace_options(a, &s->namespace_options, c->host_network);
        if (!sc->namespace_options || opt_i64_to_pb(a, s->run_as_user, &sc->run_as_user) < 0 ||
            opt_i64_to_pb(a, s->run_as_group, &sc->run_as_group) < 0 ||
            profile_to_pb(a, &s->seccomp, &sc->seccomp) < 0)
                return -ENOMEM;
        sc->readonly_rootfs = s->readonly_rootfs;
        I64V_TO_PB(sc, supplemental_groups, s->supplemental_groups, s->n_supplemental_groups);
        sc->privileged = s->privileged;
        *ret = sc;
        return 0;
}

static int sandbox_config_to_pb(struct kc_arena *a, const struct kc_pod_sandbox_config *c,
                                Runtime__V1__PodSandboxConfig **ret)
{
        Runtime__V1__PodSandboxConfig *pc;
        Runtime__V1__PodSandboxMetadata *md;
        Runtime__V1__LinuxPodSandboxConfig *lx;
        int r;

        pc = PB_NEW(a, Runtime__V1__PodSandboxConfig, runtime__v1__pod_sandbox_config__descriptor);
        md = PB_NEW(a, Runtime__V1__PodSandboxMetadata,
                    runtime__v1__pod_sandbox_metadata__descriptor);
        lx = PB_NEW(a, Runtime__V1__LinuxPodSandboxConfig,
                    runtime__v1__linux_pod_sandbox_config__descriptor);
        if (!pc || !md || !lx)
                return -ENOMEM;
        md->name = unconst(c->metadata.name);
        md->uid = unconst(c->metadata.uid);
        md->namespace_ = unconst(c->metadata.namespace);
        md->attempt = c->metadata.attempt;
        pc->metadata = md;
        /*
         * kubelet sets the hostname only off the host network: a host-network
         * sandbox shares the node's UTS namespace too, where runc refuses to
         * set one ("unable to set hostname without a private UTS namespace").
         */
        if (!c->host_network)
                pc->hostname = unconst(c->hostname);
        pc->log_directory = unconst(c->log_directory);
        r = dns_config_to_pb(a, c->dns_config, &pc->dns_config);
        if (r < 0)
                return r;
        if (port_mappings_to_pb(a, c, pc) < 0 ||
            LABELS_TO_PB(a, runtime__v1__pod_sandbox_config__labels_entry__descriptor, c->labels,
                         c->n_labels, pc, labels) < 0 ||
            LABELS_TO_PB(a, runtime__v1__pod_sandbox_config__annotations_entry__descriptor,
                         c->annotations, c->n_annotations, pc, annotations) < 0 ||
            LABELS_TO_PB(a, runtime__v1__linux_pod_sandbox_config__sysctls_entry__descriptor,
                         c->sysctls, c->n_sysctls, lx, sysctls) < 0 ||
            sandbox_security_to_pb(a, c, &lx->security_context) < 0)
                return -ENOMEM;
        lx->cgroup_parent = unconst(c->cgroup_parent); /* NULL: the runtime's default */
        pc->linux = lx;
        *ret = pc;
        return 0;
}

int kc__cri_pack_run_pod_sandbox(const struct kc_pod_sandbox_config *config, uint8_t **ret,
                                 size_t *ret_len)
{
        Runtime__V1__RunPodSandboxRequest req = RUNTIME__V1__RUN_POD_SANDBOX_REQUEST__INIT;
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        int r;

        if (!config)
                return -EINVAL;
        if (kc_arena_new(&a) < 0)
                return -ENOMEM;
        r = sandbox_config_to_pb(a, config, &req.config);
        return r < 0 ? r : pack(&req.base, ret, ret_len);
}

static Runtime__V1__PodSandboxState sandbox_state_to_pb(enum kc_sandbox_state s)
{
        return s == KC_SANDBOX_STATE_READY ? RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY
                                           : RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_NOTREADY;
}

int kc__cri_pack_list_pod_sandbox(const struct kc_pod_sandbox_filter *filter, uint8_t **ret,
                                  size_t *ret_len)
{
        Runtime__V1__ListPodSandboxRequest req = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        Runtime__V1__PodSandboxFilter *f;

        if (!filter)
                return pack(&req.base, ret, ret_len);
        if (filter->state >= _KC_SANDBOX_STATE_MAX || filter->state < -1)
                return -EINVAL;
        if (kc_arena_new(&a) < 0)
                return -ENOMEM;
        f = PB_NEW(a, Runtime__V1__PodSandboxFilter, runtime__v1__pod_sandbox_filter__descriptor);
        if (!f)
                return -ENOMEM;
        f->id = unconst(filter->id);
        if (filter->state >= 0) {
                f->state = PB_NEW(a, Runtime__V1__PodSandboxStateValue,
                                  runtime__v1__pod_sandbox_state_value__descriptor);
                if (!f->state)
                        return -ENOMEM;
                f->state->state = sandbox_state_to_pb((enum kc_sandbox_state)filter->state);
        }
        if (LABELS_TO_PB(a, runtime__v1__pod_sandbox_filter__label_selector_entry__descriptor,
                         filter->label_selector, filter->n_label_selector, f, label_selector) < 0)
                return -ENOMEM;
        req.filter = f;
        return pack(&req.base, ret, ret_len);
}

static int mounts_to_pb(struct kc_arena *a, const struct kc_container_config *c,
                        Runtime__V1__ContainerConfig *cc)
{
        Runtime__V1__Mount **v;

        if (c->n_mounts == 0 || !c->mounts)
                return 0;
        v = pb_array(a, &runtime__v1__mount__descriptor, c->n_mounts);
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < c->n_mounts; i++) {
                const struct kc_cri_mount *m = &c->mounts[i];

                v[i]->container_path = unconst(m->container_path);
                v[i]->host_path = unconst(m->host_path);
                v[i]->readonly = m->readonly;
                v[i]->selinux_relabel = m->selinux_relabel;
                v[i]->propagation =
                        m->propagation == KC_CRI_PROPAGATION_HOST_TO_CONTAINER
                                ? RUNTIME__V1__MOUNT_PROPAGATION__PROPAGATION_HOST_TO_CONTAINER
                        : m->propagation == KC_CRI_PROPAGATION_BIDIRECTIONAL
                                ? RUNTIME__V1__MOUNT_PROPAGATION__PROPAGATION_BIDIRECTIONAL
                                : RUNTIME__V1__MOUNT_PROPAGATION__PROPAGATION_PRIVATE;
        }
        cc->mounts = v;
        cc->n_mounts = c->n_mounts;
        return 0;
}

static Runtime__V1__LinuxContainerResources *resources_to_pb(struct kc_arena *a,
                                                             const struct kc_cri_linux_resources *r)
{
        Runtime__V1__LinuxContainerResources *m =
                PB_NEW(a, Runtime__V1__LinuxContainerResources,
                       runtime__v1__linux_container_resources__descriptor);

        if (!m)
                return NULL;
        m->cpu_period = r->cpu_period;
        m->cpu_quota = r->cpu_quota;
        m->cpu_shares = r->cpu_shares;
        m->memory_limit_in_bytes = r->memory_limit_in_bytes;
        m->oom_score_adj = r->oom_score_adj;
        m->cpuset_cpus = unconst(r->cpuset_cpus);
        m->cpuset_mems = unconst(r->cpuset_mems);
        if (r->n_hugepage_limits > 0) {
                Runtime__V1__HugepageLimit **v =
                        pb_array(a, &runtime__v1__hugepage_limit__descriptor, r->n_hugepage_limits);

                if (!v)
                        return NULL;
                for (size_t i = 0; i < r->n_hugepage_limits; i++) {
                        v[i]->page_size = unconst(r->hugepage_limits[i].page_size);
                        v[i]->limit = r->hugepage_limits[i].limit;
                }
                m->hugepage_limits = v;
                m->n_hugepage_limits = r->n_hugepage_limits;
        }
        return m;
}

/*
 * linux.security_context of a container: @p config's own, or (without one)
 * only the pod's namespaces, which kubelet always sets.
 */
static int container_security_to_pb(struct kc_arena *a, const struct kc_container_config *config,
                                    const struct kc_pod_sandbox_config *sandbox_config,
                                    Runtime__V1__LinuxContainerSecurityContext **ret)
{
        static const struct kc_cri_namespace_options default_ns = {
                .pid = KC_CRI_NAMESPACE_CONTAINER,
        };
        const struct kc_cri_container_security *s = &config->security;
        bool host_network = sandbox_config && sandbox_config->host_network;
        Runtime__V1__LinuxContainerSecurityContext *sc;
        Runtime__V1__Capability *cap = NULL;

        sc = PB_NEW(a, Runtime__V1__LinuxContainerSecurityContext,
                    runtime__v1__linux_container_security_context__descriptor);
        if (!sc)
                return -ENOMEM;
        sc->namespace_options =
                namespace_options(a,
                                  config->has_security ? &s->namespace_options
                                  : sandbox_config     ? &sandbox_config->security.namespace_options
                                                       : &default_ns,
                                  host_network);
        if (!sc->namespace_options)
                return -ENOMEM;
        if (config->has_security) {
                if (!strv_ok(s->capabilities.add, s->capabilities.n_add) ||
                    !strv_ok(s->capabilities.drop, s->capabilities.n_drop) ||
                    !strv_ok(s->masked_paths, s->n_masked_paths) ||
                    !strv_ok(s->readonly_paths, s->n_readonly_paths))
                        return -EINVAL;
                if (s->has_capabilities) {
                        cap = PB_NEW(a, Runtime__V1__Capability,
                                     runtime__v1__capability__descriptor);
                        if (!cap)
                                return -ENOMEM;
                        STRV_TO_PB(cap, add_capabilities, s->capabilities.add,
                                   s->capabilities.n_add);
                        STRV_TO_PB(cap, drop_capabilities, s->capabilities.drop,
                                   s->capabilities.n_drop);
                }
                if (opt_i64_to_pb(a, s->run_as_user, &sc->run_as_user) < 0 ||
                    opt_i64_to_pb(a, s->run_as_group, &sc->run_as_group) < 0 ||
                    profile_to_pb(a, &s->seccomp, &sc->seccomp) < 0)
                        return -ENOMEM;
                sc->capabilities = cap;
                sc->privileged = s->privileged;
                sc->run_as_username = unconst(s->run_as_username);
                sc->readonly_rootfs = s->readonly_rootfs;
                I64V_TO_PB(sc, supplemental_groups, s->supplemental_groups,
                           s->n_supplemental_groups);
                sc->no_new_privs = s->no_new_privs;
                STRV_TO_PB(sc, masked_paths, s->masked_paths, s->n_masked_paths);
                STRV_TO_PB(sc, readonly_paths, s->readonly_paths, s->n_readonly_paths);
        }
        *ret = sc;
        return 0;
}

/* The ContainerConfig message; -EINVAL for a NULL string in a list, -ENOMEM. */
static int container_config_to_pb(struct kc_arena *a, const struct kc_container_config *config,
                                  const struct kc_pod_sandbox_config *sandbox_config,
                                  Runtime__V1__ContainerConfig **ret)
{
        Runtime__V1__ContainerConfig *cc;
        Runtime__V1__ContainerMetadata *md;
        Runtime__V1__ImageSpec *img;
        Runtime__V1__LinuxContainerConfig *lx;
        int r;

        if (!strv_ok(config->command, config->n_command) || !strv_ok(config->args, config->n_args))
                return -EINVAL;
        cc = PB_NEW(a, Runtime__V1__ContainerConfig, runtime__v1__container_config__descriptor);
        md = PB_NEW(a, Runtime__V1__ContainerMetadata, runtime__v1__container_metadata__descriptor);
        img = PB_NEW(a, Runtime__V1__ImageSpec, runtime__v1__image_spec__descriptor);
        lx = PB_NEW(a, Runtime__V1__LinuxContainerConfig,
                    runtime__v1__linux_container_config__descriptor);
        if (!cc || !md || !img || !lx)
                return -ENOMEM;
        md->name = unconst(config->metadata.name);
        md->attempt = config->metadata.attempt;
        cc->metadata = md;
        img->image = unconst(config->image);
        img->user_specified_image = unconst(config->user_specified_image);
        cc->image = img;
        STRV_TO_PB(cc, command, config->command, config->n_command);
        STRV_TO_PB(cc, args, config->args, config->n_args);
        cc->working_dir = unconst(config->working_dir);
        cc->log_path = unconst(config->log_path);
        cc->stdin = config->stdin;
        cc->stdin_once = config->stdin_once;
        cc->tty = config->tty;
        /* An env is a KeyValue, shaped as a map entry: kept in order, as a list. */
        if (LABELS_TO_PB(a, runtime__v1__key_value__descriptor, config->envs, config->n_envs, cc,
                         envs) < 0 ||
            mounts_to_pb(a, config, cc) < 0 ||
            LABELS_TO_PB(a, runtime__v1__container_config__labels_entry__descriptor, config->labels,
                         config->n_labels, cc, labels) < 0 ||
            LABELS_TO_PB(a, runtime__v1__container_config__annotations_entry__descriptor,
                         config->annotations, config->n_annotations, cc, annotations) < 0)
                return -ENOMEM;
        if (config->has_resources && !(lx->resources = resources_to_pb(a, &config->resources)))
                return -ENOMEM;
        r = container_security_to_pb(a, config, sandbox_config, &lx->security_context);
        if (r < 0)
                return r;
        cc->linux = lx;
        *ret = cc;
        return 0;
}

int kc__cri_pack_create_container(const char *pod_sandbox_id,
                                  const struct kc_container_config *config,
                                  const struct kc_pod_sandbox_config *sandbox_config, uint8_t **ret,
                                  size_t *ret_len)
{
        Runtime__V1__CreateContainerRequest req = RUNTIME__V1__CREATE_CONTAINER_REQUEST__INIT;
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        int r;

        if (!config)
                return -EINVAL;
        if (kc_arena_new(&a) < 0)
                return -ENOMEM;
        r = container_config_to_pb(a, config, sandbox_config, &req.config);
        if (r >= 0 && sandbox_config)
                r = sandbox_config_to_pb(a, sandbox_config, &req.sandbox_config);
        if (r < 0)
                return r;
        req.pod_sandbox_id = unconst(pod_sandbox_id);
        return pack(&req.base, ret, ret_len);
}

int kc__cri_pack_exec_sync(const char *id, const char *const *argv, size_t argc, int64_t timeout_s,
                           uint8_t **ret, size_t *ret_len)
{
        Runtime__V1__ExecSyncRequest req = RUNTIME__V1__EXEC_SYNC_REQUEST__INIT;

        if (!argv || argc == 0 || !strv_ok(argv, argc))
                return -EINVAL;
        req.container_id = unconst(id);
        STRV_TO_PB(&req, cmd, argv, argc);
        req.timeout = timeout_s;
        return pack(&req.base, ret, ret_len);
}

int kc__cri_pack_stop_container(const char *id, int64_t timeout_s, uint8_t **ret, size_t *ret_len)
{
        Runtime__V1__StopContainerRequest req = RUNTIME__V1__STOP_CONTAINER_REQUEST__INIT;

        req.container_id = unconst(id);
        req.timeout = timeout_s;
        return pack(&req.base, ret, ret_len);
}

static Runtime__V1__ContainerState container_state_to_pb(enum kc_container_state s)
{
        switch (s) {
        case KC_CONTAINER_STATE_CREATED:
                return RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED;
        case KC_CONTAINER_STATE_RUNNING:
                return RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
        case KC_CONTAINER_STATE_EXITED:
                return RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED;
        default:
                return RUNTIME__V1__CONTAINER_STATE__CONTAINER_UNKNOWN;
        }
}

int kc__cri_pack_list_containers(const struct kc_container_filter *filter, uint8_t **ret,
                                 size_t *ret_len)
{
        Runtime__V1__ListContainersRequest req = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        Runtime__V1__ContainerFilter *f;

        if (!filter)
                return pack(&req.base, ret, ret_len);
        if (filter->state >= _KC_CONTAINER_STATE_MAX || filter->state < -1)
                return -EINVAL;
        if (kc_arena_new(&a) < 0)
                return -ENOMEM;
        f = PB_NEW(a, Runtime__V1__ContainerFilter, runtime__v1__container_filter__descriptor);
        if (!f)
                return -ENOMEM;
        f->id = unconst(filter->id);
        f->pod_sandbox_id = unconst(filter->pod_sandbox_id);
        if (filter->state >= 0) {
                f->state = PB_NEW(a, Runtime__V1__ContainerStateValue,
                                  runtime__v1__container_state_value__descriptor);
                if (!f->state)
                        return -ENOMEM;
                f->state->state = container_state_to_pb((enum kc_container_state)filter->state);
        }
        if (LABELS_TO_PB(a, runtime__v1__container_filter__label_selector_entry__descriptor,
                         filter->label_selector, filter->n_label_selector, f, label_selector) < 0)
                return -ENOMEM;
        req.filter = f;
        return pack(&req.base, ret, ret_len);
}

int kc__cri_pack_image_status(const char *image, uint8_t **ret, size_t *ret_len)
{
        Runtime__V1__ImageStatusRequest req = RUNTIME__V1__IMAGE_STATUS_REQUEST__INIT;
        Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;

        spec.image = unconst(image);
        req.image = &spec;
        return pack(&req.base, ret, ret_len);
}

int kc__cri_pack_pull_image(const char *image, const struct kc_pod_sandbox_config *sandbox_config,
                            uint8_t **ret, size_t *ret_len)
{
        Runtime__V1__PullImageRequest req = RUNTIME__V1__PULL_IMAGE_REQUEST__INIT;
        Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;

        spec.image = unconst(image);
        req.image = &spec;
        if (sandbox_config) {
                int r = kc_arena_new(&a) < 0
                                ? -ENOMEM
                                : sandbox_config_to_pb(a, sandbox_config, &req.sandbox_config);

                if (r < 0)
                        return r;
        }
        return pack(&req.base, ret, ret_len);
}

/* ------------------------------------------------------------------------ */
/* Responses                                                                  */

struct arena_allocator {
        ProtobufCAllocator pb;
        struct kc_arena *arena;
        bool oom;
};

static void *arena_pb_alloc(void *data, size_t size)
{
        struct arena_allocator *al = data;
        void *p = kc_arena_alloc(al->arena, size);

        if (!p)
                al->oom = true;
        return p;
}

static void arena_pb_free(void *data, void *p)
{
        (void)data; /* the arena frees everything at once */
        (void)p;
}

/*
 * Decodes @p buf as a @p desc message allocated from @p a (or from malloc
 * when @p a is NULL: then the caller frees it with
 * protobuf_c_message_free_unpacked(m, NULL)).
 */
int kc__cri_unpack_message(const ProtobufCMessageDescriptor *desc, const char *method,
                           struct kc_arena *a, const uint8_t *buf, size_t len,
                           ProtobufCMessage **ret, struct kc_runtime_error *err)
{
        static const uint8_t empty[1];
        struct arena_allocator al = {
                .pb = { .alloc = arena_pb_alloc, .free = arena_pb_free },
                .arena = a,
        };
        ProtobufCMessage *m;

        al.pb.allocator_data = &al;
        m = protobuf_c_message_unpack(desc, a ? &al.pb : NULL, len, buf ? buf : empty);
        if (!m)
                return al.oom ? oom(err) : decode_error(err, method);
        *ret = m;
        return 0;
}

/* Strings kubelet reads as-is: "" when absent. */
static const char *str(const char *s)
{
        return s ? s : "";
}

/* Strings the sim leaves NULL when there is nothing to say (ip, reason, message). */
static const char *opt_str(const char *s)
{
        return s && *s ? s : NULL;
}

int kc__cri_labels_from_pb(struct kc_arena *a, ProtobufCMessage *const *entries, size_t n,
                           const struct kc_label **ret, size_t *ret_n)
{
        struct kc_label *l;
        size_t koff, voff, i;

        *ret = NULL;
        *ret_n = 0;
        if (n == 0)
                return 0;
        l = kc_arena_alloc(a, n * sizeof(*l));
        if (!l)
                return -ENOMEM;
        map_entry_fields(entries[0]->descriptor, &koff, &voff);
        for (i = 0; i < n; i++) {
                const char *e = (const char *)entries[i];

                l[i].key = str(*(char *const *)(e + koff));
                l[i].value = str(*(char *const *)(e + voff));
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

enum kc_sandbox_state kc__cri_sandbox_state(int s)
{
        /* kubelet: anything but READY is not ready. */
        return s == RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY ? KC_SANDBOX_STATE_READY
                                                                  : KC_SANDBOX_STATE_NOTREADY;
}

enum kc_container_state kc__cri_container_state(int s)
{
        switch (s) {
        case RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED:
                return KC_CONTAINER_STATE_CREATED;
        case RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING:
                return KC_CONTAINER_STATE_RUNNING;
        case RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED:
                return KC_CONTAINER_STATE_EXITED;
        default:
                return KC_CONTAINER_STATE_UNKNOWN;
        }
}

void kc__cri_sandbox_metadata_from_pb(const Runtime__V1__PodSandboxMetadata *md,
                                      struct kc_pod_sandbox_metadata *out)
{
        *out = (struct kc_pod_sandbox_metadata){
                .name = str(md ? md->name : NULL),
                .uid = str(md ? md->uid : NULL),
                .namespace = str(md ? md->namespace_ : NULL),
                .attempt = md ? md->attempt : 0,
        };
}

int kc__cri_sandbox_status_from_pb(struct kc_arena *a, const Runtime__V1__PodSandboxStatus *s,
                                   struct kc_pod_sandbox *out)
{
        const Runtime__V1__PodSandboxNetworkStatus *net = s->network;
        const char **ips = NULL;
        size_t i, n = 0;

        *out = (struct kc_pod_sandbox){
                .id = str(s->id),
                .state = kc__cri_sandbox_state(s->state),
                .created_at = s->created_at,
                .ip = net ? opt_str(net->ip) : NULL,
        };
        kc__cri_sandbox_metadata_from_pb(s->metadata, &out->metadata);
        if (net && net->n_additional_ips > 0) {
                ips = kc_arena_alloc(a, net->n_additional_ips * sizeof(*ips));
                if (!ips)
                        return -ENOMEM;
                for (i = 0; i < net->n_additional_ips; i++)
                        if (net->additional_ips[i] && opt_str(net->additional_ips[i]->ip))
                                ips[n++] = net->additional_ips[i]->ip;
        }
        out->additional_ips = n > 0 ? ips : NULL;
        out->n_additional_ips = n;
        if (KC_CRI_LABELS_FROM_PB(a, s, labels, &out->labels, &out->n_labels) < 0 ||
            KC_CRI_LABELS_FROM_PB(a, s, annotations, &out->annotations, &out->n_annotations) < 0)
                return -ENOMEM;
        return 0;
}

/* The image as the pod spec named it when the runtime knows it, else the runtime's name. */
const char *kc__cri_image_from_pb(const Runtime__V1__ImageSpec *img)
{
        if (!img)
                return "";
        if (img->user_specified_image && *img->user_specified_image)
                return img->user_specified_image;
        return str(img->image);
}

/* A status's mounts: the paths and read-only flag (what the status path reads). */
static int mounts_from_pb(struct kc_arena *a, Runtime__V1__Mount *const *v, size_t n,
                          const struct kc_cri_mount **ret, size_t *ret_n)
{
        struct kc_cri_mount *m;
        size_t k = 0;

        if (n == 0)
                return 0;
        m = kc_arena_alloc(a, n * sizeof(*m));
        if (!m)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (v[i])
                        m[k++] = (struct kc_cri_mount){ .container_path = str(v[i]->container_path),
                                                        .host_path = str(v[i]->host_path),
                                                        .readonly = v[i]->readonly };
        *ret = m;
        *ret_n = k;
        return 0;
}

int kc__cri_container_status_from_pb(struct kc_arena *a, const Runtime__V1__ContainerStatus *s,
                                     struct kc_cri_container *out)
{
        *out = (struct kc_cri_container){
                .id = str(s->id),
                .pod_sandbox_id = NULL, /* not in a CRI ContainerStatus */
                .metadata = { .name = str(s->metadata ? s->metadata->name : NULL),
                              .attempt = s->metadata ? s->metadata->attempt : 0 },
                .image = kc__cri_image_from_pb(s->image),
                .image_ref = str(s->image_ref),
                .state = kc__cri_container_state(s->state),
                .created_at = s->created_at,
                .started_at = s->started_at,
                .finished_at = s->finished_at,
                .exit_code = s->exit_code,
                .reason = opt_str(s->reason),
                .message = opt_str(s->message),
                .log_path = opt_str(s->log_path),
        };
        if (KC_CRI_LABELS_FROM_PB(a, s, labels, &out->labels, &out->n_labels) < 0 ||
            KC_CRI_LABELS_FROM_PB(a, s, annotations, &out->annotations, &out->n_annotations) < 0 ||
            mounts_from_pb(a, s->mounts, s->n_mounts, &out->mounts, &out->n_mounts) < 0)
                return -ENOMEM;
        return 0;
}

int kc__cri_unpack_empty(const ProtobufCMessageDescriptor *desc, const char *method,
                         const uint8_t *buf, size_t len, struct kc_runtime_error *err)
{
        ProtobufCMessage *m = NULL;
        int r;

        if (len == 0)
                return 0;
        r = kc__cri_unpack_message(desc, method, NULL, buf, len, &m, err);
        if (r < 0)
                return r;
        protobuf_c_message_free_unpacked(m, NULL);
        return 0;
}

int kc__cri_unpack_result(const ProtobufCMessageDescriptor *desc, const char *method,
                          const uint8_t *buf, size_t len, kc_cri_result_from_pb_fn from_pb,
                          void *ret, struct kc_runtime_error *err)
{
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        ProtobufCMessage *m = NULL;
        int r;

        if (kc_arena_new(&a) < 0)
                return oom(err);
        r = kc__cri_unpack_message(desc, method, a, buf, len, &m, err);
        if (r < 0)
                return r;
        r = from_pb(a, m, ret, err);
        if (r < 0)
                return r;
        if (r == 0)
                TAKE_PTR(a);
        return 0;
}

static int version_from_pb(struct kc_arena *a, const ProtobufCMessage *m, void *out,
                           struct kc_runtime_error *err)
{
        const Runtime__V1__VersionResponse *v = (const void *)m;

        (void)err;
        *(struct kc_version_result *)out = (struct kc_version_result){
                .version = str(v->version),
                .runtime_name = str(v->runtime_name),
                .runtime_version = str(v->runtime_version),
                .runtime_api_version = str(v->runtime_api_version),
                .arena = a,
        };
        return 0;
}

int kc__cri_unpack_version(const uint8_t *buf, size_t len, struct kc_version_result *ret,
                           struct kc_runtime_error *err)
{
        return kc__cri_unpack_result(&runtime__v1__version_response__descriptor, "Version", buf,
                                     len, version_from_pb, ret, err);
}

static int status_from_pb(struct kc_arena *a, const ProtobufCMessage *m, void *out,
                          struct kc_runtime_error *err)
{
        const Runtime__V1__StatusResponse *s = (const void *)m;
        struct kc_runtime_condition *c;
        size_t i, n;

        if (!s->status || s->status->n_conditions < 2)
                return missing(err, "RuntimeReady or NetworkReady condition are not set");
        n = s->status->n_conditions;
        c = kc_arena_alloc(a, n * sizeof(*c));
        if (!c)
                return oom(err);
        for (i = 0; i < n; i++) {
                const Runtime__V1__RuntimeCondition *pc = s->status->conditions[i];

                c[i] = (struct kc_runtime_condition){
                        .type = str(pc->type),
                        .status = pc->status,
                        .reason = opt_str(pc->reason),
                        .message = opt_str(pc->message),
                };
        }
        *(struct kc_runtime_status_result *)out = (struct kc_runtime_status_result){
                .conditions = c,
                .n_conditions = n,
                .arena = a,
        };
        return 0;
}

int kc__cri_unpack_status(const uint8_t *buf, size_t len, struct kc_runtime_status_result *ret,
                          struct kc_runtime_error *err)
{
        return kc__cri_unpack_result(&runtime__v1__status_response__descriptor, "Status", buf, len,
                                     status_from_pb, ret, err);
}

/*
 * The one string of an id-only response (RunPodSandbox, CreateContainer,
 * PullImage), malloc'd. kubelet's remote client refuses an empty one, with
 * @p fmt naming @p subject.
 */
static int unpack_id(const ProtobufCMessageDescriptor *desc, const char *method, const uint8_t *buf,
                     size_t len, const char *fmt, const char *subject, char **ret,
                     struct kc_runtime_error *err)
{
        const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(desc, 1);
        ProtobufCMessage *m = NULL;
        const char *s;
        char *d = NULL;
        int r;

        r = kc__cri_unpack_message(desc, method, NULL, buf, len, &m, err);
        if (r < 0)
                return r;
        s = *(char **)((char *)m + f->offset);
        if (!s || !*s)
                r = kc_runtime_error_set(err, -EPROTO, KC_RUNTIME_INTERNAL, fmt, str(subject));
        else if (!(d = strdup(s)))
                r = oom(err);
        protobuf_c_message_free_unpacked(m, NULL);
        if (r < 0)
                return r;
        *ret = d;
        return 0;
}

int kc__cri_unpack_run_pod_sandbox(const uint8_t *buf, size_t len, const char *name, char **ret_id,
                                   struct kc_runtime_error *err)
{
        return unpack_id(&runtime__v1__run_pod_sandbox_response__descriptor, "RunPodSandbox", buf,
                         len, "PodSandboxId is not set for sandbox \"%s\"", name, ret_id, err);
}

int kc__cri_unpack_create_container(const uint8_t *buf, size_t len, const char *name, char **ret_id,
                                    struct kc_runtime_error *err)
{
        return unpack_id(&runtime__v1__create_container_response__descriptor, "CreateContainer",
                         buf, len, "ContainerId is not set for container \"%s\"", name, ret_id,
                         err);
}

int kc__cri_unpack_pull_image(const uint8_t *buf, size_t len, const char *image,
                              char **ret_image_ref, struct kc_runtime_error *err)
{
        return unpack_id(&runtime__v1__pull_image_response__descriptor, "PullImage", buf, len,
                         "imageRef of image \"%s\" is not set", image, ret_image_ref, err);
}

static int image_status_from_pb(struct kc_arena *a, const ProtobufCMessage *m, void *out,
                                struct kc_runtime_error *err)
{
        const Runtime__V1__Image *img = ((const Runtime__V1__ImageStatusResponse *)m)->image;

        if (!img) {
                /* CRI: the image is not present; not an error (and no arena). */
                *(struct kc_image_status_result *)out =
                        (struct kc_image_status_result){ .found = false };
                return 1;
        }
        /* kubelet's remote client rejects these. */
        if (!img->id || !*img->id || img->size == 0)
                return missing(err, "id or size of image is not set");
        *(struct kc_image_status_result *)out = (struct kc_image_status_result){
                .found = true,
                .image = {
                        .id = img->id,
                        .repo_tags = (const char *const *)img->repo_tags,
                        .n_repo_tags = img->n_repo_tags,
                        .repo_digests = (const char *const *)img->repo_digests,
                        .n_repo_digests = img->n_repo_digests,
                        .size = img->size,
                        .has_uid = img->uid != NULL,
                        .uid = img->uid ? img->uid->value : 0,
                        .username = img->username,
                },
                .arena = a,
        };
        return 0;
}

int kc__cri_unpack_image_status(const uint8_t *buf, size_t len, struct kc_image_status_result *ret,
                                struct kc_runtime_error *err)
{
        return kc__cri_unpack_result(&runtime__v1__image_status_response__descriptor, "ImageStatus",
                                     buf, len, image_status_from_pb, ret, err);
}

int kc__cri_arena_array(struct kc_arena *a, size_t n, size_t size, void **ret)
{
        void *p = NULL;

        if (n > 0 && !(p = kc_arena_alloc(a, n * size)))
                return -ENOMEM;
        *ret = p;
        return 0;
}

static int event_type_from_pb(int t, enum kc_container_event_type *ret)
{
        switch (t) {
        case RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_CREATED_EVENT:
                *ret = KC_CONTAINER_EVENT_CREATED;
                return 0;
        case RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_STARTED_EVENT:
                *ret = KC_CONTAINER_EVENT_STARTED;
                return 0;
        case RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_STOPPED_EVENT:
                *ret = KC_CONTAINER_EVENT_STOPPED;
                return 0;
        case RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_DELETED_EVENT:
                *ret = KC_CONTAINER_EVENT_DELETED;
                return 0;
        default:
                return -EINVAL;
        }
}

int kc__cri_unpack_container_event(const uint8_t *buf, size_t len, struct kc_arena *a,
                                   struct kc_container_event *ret, struct kc_runtime_error *err)
{
        const Runtime__V1__ContainerEventResponse *m;
        enum kc_container_event_type type;
        struct kc_cri_container *cs;
        struct kc_pod_sandbox *sb = NULL;
        ProtobufCMessage *pm = NULL;
        int r;

        r = kc__cri_unpack_message(&runtime__v1__container_event_response__descriptor,
                                   "GetContainerEvents", a, buf, len, &pm, err);
        if (r < 0)
                return r;
        m = (const void *)pm;
        if (event_type_from_pb(m->container_event_type, &type) < 0)
                return 1;
        if (m->pod_sandbox_status) {
                sb = kc_arena_alloc(a, sizeof(*sb));
                if (!sb || kc__cri_sandbox_status_from_pb(a, m->pod_sandbox_status, sb) < 0)
                        return oom(err);
        }
        if (kc__cri_arena_array(a, m->n_containers_statuses, sizeof(*cs), (void **)&cs) < 0)
                return oom(err);
        for (size_t i = 0; i < m->n_containers_statuses; i++)
                if (kc__cri_container_status_from_pb(a, m->containers_statuses[i], &cs[i]) < 0)
                        return oom(err);
        *ret = (struct kc_container_event){
                .container_id = str(m->container_id),
                .type = type,
                .created_at = m->created_at,
                .pod_sandbox_id = sb ? sb->id : NULL,
                .pod_uid = sb && m->pod_sandbox_status->metadata ? sb->metadata.uid : NULL,
                .pod_name = sb && m->pod_sandbox_status->metadata ? sb->metadata.name : NULL,
                .pod_namespace =
                        sb && m->pod_sandbox_status->metadata ? sb->metadata.namespace : NULL,
                .sandbox = sb,
                .containers = cs,
                .n_containers = m->n_containers_statuses,
        };
        return 0;
}

/* A malloc'd, NUL-terminated copy of @p b (the runtime's bytes may hold NULs). */
static char *bytes_dup(ProtobufCBinaryData b)
{
        char *s = malloc(b.len + 1);

        if (!s)
                return NULL;
        if (b.len > 0)
                memcpy(s, b.data, b.len);
        s[b.len] = '\0';
        return s;
}

int kc__cri_unpack_exec_sync(const uint8_t *buf, size_t len, struct kc_exec_sync_result *ret,
                             struct kc_runtime_error *err)
{
        _cleanup_(kc_exec_sync_result_done) struct kc_exec_sync_result x = { 0 };
        const Runtime__V1__ExecSyncResponse *m;
        ProtobufCMessage *pm = NULL;
        int r;

        r = kc__cri_unpack_message(&runtime__v1__exec_sync_response__descriptor, "ExecSync", NULL,
                                   buf, len, &pm, err);
        if (r < 0)
                return r;
        m = (const void *)pm;
        x.out = bytes_dup(m->stdout);
        x.n_out = m->stdout.len;
        x.err = bytes_dup(m->stderr);
        x.n_err = m->stderr.len;
        x.exit_code = m->exit_code;
        protobuf_c_message_free_unpacked(pm, NULL);
        if (!x.out || !x.err)
                return oom(err);
        *ret = x;
        x = (struct kc_exec_sync_result){ 0 };
        return 0;
}
