/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Linux parts of a container's and a sandbox's CRI config: resources
 * (kuberuntime_container_linux.go), security contexts (security_context.go,
 * pkg/securitycontext), namespaces (runtimeutil.NamespacesForPod), sysctls
 * and port mappings (kuberuntime_sandbox_linux.go, kubecontainer).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container_linux.h"
#include "core/arena.h"
#include "core/cleanup.h"
#include "core/format.h"
#include "core/log.h"
#include "runtime/api_pod.h"
#include "runtime/api_spec.h"
#include "runtime/qos.h"
#include "runtime/runtime_service.h"

void kc__container_resources(const struct kc_api_pod *pod, const struct kc_api_container *c,
                             int64_t memory_capacity, struct kc_cri_linux_resources *ret)
{
        int64_t cpu_req = 0, cpu_lim = 0, mem_lim = 0;
        bool has_cpu_req = kc_container_request(c, "cpu", &cpu_req);

        (void)kc_container_limit(c, "cpu", &cpu_lim);
        (void)kc_container_limit(c, "memory", &mem_lim);
        *ret = (struct kc_cri_linux_resources){
                /* calculateLinuxResources: no request, the limit's shares (0 gives the minimum). */
                .cpu_shares = kc_milli_cpu_to_shares(has_cpu_req ? cpu_req : cpu_lim),
                /* Value(): whole bytes, rounded up. */
                .memory_limit_in_bytes = mem_lim / 1000 + (mem_lim % 1000 > 0),
                /* cpuCFSQuota is on by default: the period is always sent, the quota with a limit. */
                .cpu_period = KC_CPU_QUOTA_PERIOD_US,
                .cpu_quota = kc_milli_cpu_to_quota(cpu_lim, KC_CPU_QUOTA_PERIOD_US),
                .oom_score_adj = kc_container_oom_score_adjust(pod, c, memory_capacity),
        };
}

void kc__hugepage_unit_size(uint64_t bytes, char buf[static 32])
{
        static const char *const units[] = { "B", "KB", "MB", "GB", "TB", "PB" };
        size_t i = 0;

        while (bytes >= 1024 && i + 1 < KC_ELEMENTSOF(units)) {
                bytes /= 1024;
                i++;
        }
        snprintf(buf, 32, "%" PRIu64 "%s", bytes, units[i]);
}

/* The bytes of a hugepages-<quantity> resource name's size ("2Mi", "1Gi", "2M"); 0 if not one. */
static uint64_t hugepage_name_bytes(const char *name)
{
        static const struct {
                const char *suffix;
                uint64_t mult;
        } sfx[] = { { "Ki", 1ULL << 10 },   { "Mi", 1ULL << 20 },      { "Gi", 1ULL << 30 },
                    { "Ti", 1ULL << 40 },   { "k", 1000ULL },          { "M", 1000000ULL },
                    { "G", 1000000000ULL }, { "T", 1000000000000ULL }, { "", 1 } };
        uint64_t n = 0;
        const char *p;

        if (strncmp(name, "hugepages-", 10) != 0)
                return 0;
        for (p = name + 10; *p >= '0' && *p <= '9' && n < UINT64_MAX / 10; p++)
                n = n * 10 + (uint64_t)(*p - '0');
        if (p == name + 10)
                return 0;
        for (size_t i = 0; i < KC_ELEMENTSOF(sfx); i++)
                if (strcmp(p, sfx[i].suffix) == 0)
                        return n <= UINT64_MAX / sfx[i].mult ? n * sfx[i].mult : 0;
        return 0;
}

int kc__hugepage_limits(const struct kc_api_container *c, const char *const *sizes, size_t n_sizes,
                        struct kc_arena *a, const struct kc_cri_hugepage_limit **ret, size_t *ret_n)
{
        struct kc_cri_hugepage_limit *v;

        if (n_sizes == 0) {
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        v = kc_arena_alloc(a, n_sizes * sizeof(*v));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < n_sizes; i++)
                v[i] = (struct kc_cri_hugepage_limit){ .page_size = sizes[i] };
        for (size_t j = 0; j < c->resources.n_limits; j++) {
                uint64_t bytes = hugepage_name_bytes(c->resources.limits[j].name);
                int64_t milli = c->resources.limits[j].q.milli;
                char unit[32];

                if (bytes == 0)
                        continue;
                kc__hugepage_unit_size(bytes, unit);
                for (size_t i = 0; i < n_sizes; i++)
                        if (strcmp(sizes[i], unit) == 0)
                                v[i].limit = (uint64_t)(milli / 1000 + (milli % 1000 > 0));
        }
        *ret = v;
        *ret_n = n_sizes;
        return 0;
}

int kc__host_hugepage_sizes(const char *dir, char ***ret, size_t *ret_n)
{
        struct dirent **ents = NULL;
        char **v;
        size_t n = 0;
        int n_ents, i, r = 0;

        /* Sorted by name, as Go's ReadDir. */
        n_ents = scandir(dir, &ents, NULL, alphasort);
        v = calloc(n_ents > 0 ? (size_t)n_ents + 1 : 1, sizeof(*v));
        for (i = 0; i < n_ents; i++) {
                uint64_t kb = 0;
                char unit[32];

                if (v && r == 0 && sscanf(ents[i]->d_name, "hugepages-%" SCNu64 "kB", &kb) == 1 &&
                    kb > 0 && kb <= UINT64_MAX / 1024) {
                        kc__hugepage_unit_size(kb * 1024, unit);
                        if (!(v[n++] = strdup(unit)))
                                r = -ENOMEM;
                }
                free(ents[i]);
        }
        free(ents);
        if (!v || r < 0) {
                for (size_t j = 0; v && j < n; j++)
                        free(v[j]);
                free(v);
                return -ENOMEM;
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

/* securitycontext.DetermineEffectiveSecurityContext: the pod's fields, then the container's over them. */
struct effective_sc {
        bool present;
        struct kc_opt_i64 run_as_user, run_as_group;
        enum kc_opt_bool run_as_non_root, privileged, read_only_root, allow_escalation;
        const struct kc_api_capabilities *caps;
        const char *proc_mount;
};

static struct effective_sc effective_sc(const struct kc_api_pod *pod,
                                        const struct kc_api_container *c)
{
        const struct kc_api_pod_security_context *p = &pod->security_context;
        const struct kc_api_security_context *s = kc_api_security_context_of(c);
        struct effective_sc e = {
                .run_as_user = p->run_as_user,
                .run_as_group = p->run_as_group,
                .run_as_non_root = p->run_as_non_root,
        };

        e.present = s->present || p->run_as_user.set || p->run_as_group.set ||
                    p->run_as_non_root != KC_OPT_UNSET;
        if (!s->present)
                return e;
        if (s->run_as_user.set)
                e.run_as_user = s->run_as_user;
        if (s->run_as_group.set)
                e.run_as_group = s->run_as_group;
        if (s->run_as_non_root != KC_OPT_UNSET)
                e.run_as_non_root = s->run_as_non_root;
        e.privileged = s->privileged;
        e.read_only_root = s->read_only_root_filesystem;
        e.allow_escalation = s->allow_privilege_escalation;
        e.caps = s->has_capabilities ? &s->capabilities : NULL;
        e.proc_mount = s->proc_mount;
        return e;
}

/* format.Pod: "<name>_<namespace>(<uid>)". */
static char *format_pod(const struct kc_api_pod *pod)
{
        return kc_strdup_printf("%s_%s(%s)", pod->name ? pod->name : "",
                                pod->namespace ? pod->namespace : "", pod->uid ? pod->uid : "");
}

int kc__verify_run_as_non_root(const struct kc_api_pod *pod, const struct kc_api_container *c,
                               const struct kc__image_user *user, char **ret_msg)
{
        struct effective_sc e = effective_sc(pod, c);
        _cleanup_free_ char *fp = NULL;
        char *msg;

        if (e.run_as_non_root != KC_OPT_TRUE)
                return 0;
        if (e.run_as_user.set && e.run_as_user.v != 0)
                return 0;
        if (!e.run_as_user.set && !(user->has_uid && user->uid == 0) &&
            (user->has_uid || !user->username || !user->username[0]))
                return 0;
        fp = format_pod(pod);
        if (!fp)
                return -ENOMEM;
        if (e.run_as_user.set)
                msg = kc_strdup_printf(
                        "container's runAsUser breaks non-root policy (pod: \"%s\", container: %s)",
                        fp, c->name ? c->name : "");
        else if (user->has_uid)
                msg = kc_strdup_printf(
                        "container has runAsNonRoot and image will run as root (pod: \"%s\", "
                        "container: %s)",
                        fp, c->name ? c->name : "");
        else
                msg = kc_strdup_printf("container has runAsNonRoot and image has non-numeric user "
                                       "(%s), cannot verify user is non-root (pod: \"%s\", "
                                       "container: %s)",
                                       user->username, fp, c->name ? c->name : "");
        if (!msg)
                return -ENOMEM;
        *ret_msg = msg;
        return -EPERM;
}

/* securitycontext's DefaultProcMount paths (kubelet 1.34, without the per-CPU thermal_throttle ones). */
static const char *const masked_paths[] = {
        "/proc/asound",     "/proc/acpi",        "/proc/interrupts",
        "/proc/kcore",      "/proc/keys",        "/proc/latency_stats",
        "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
        "/proc/scsi",       "/sys/firmware",     "/sys/devices/virtual/powercap",
};
static const char *const readonly_paths[] = {
        "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
};

/* getSeccompProfile/fieldSeccompProfile; -EINVAL for Localhost without a profile. */
static int seccomp_profile(const struct kc_api_seccomp *s, const char *root, struct kc_arena *a,
                           struct kc_cri_security_profile *ret)
{
        *ret = (struct kc_cri_security_profile){ .set = true, .type = KC_CRI_PROFILE_UNCONFINED };
        if (!s->type || strcmp(s->type, "Unconfined") == 0)
                return 0;
        if (strcmp(s->type, "RuntimeDefault") == 0) {
                ret->type = KC_CRI_PROFILE_RUNTIME_DEFAULT;
                return 0;
        }
        if (strcmp(s->type, "Localhost") != 0)
                return 0;
        if (!s->localhost_profile || !s->localhost_profile[0])
                return -EINVAL;
        ret->type = KC_CRI_PROFILE_LOCALHOST;
        {
                _cleanup_free_ char *path = kc_strdup_printf(
                        "%s/%s", root ? root : "/var/lib/kubelet/seccomp", s->localhost_profile);

                ret->localhost_ref = path ? kc_arena_strdup(a, path) : NULL;
        }
        return ret->localhost_ref ? 0 : -ENOMEM;
}

struct kc_cri_namespace_options kc__namespaces_for_pod(const struct kc_api_pod *pod)
{
        return (struct kc_cri_namespace_options){
                .network = pod->host_network ? KC_CRI_NAMESPACE_NODE : KC_CRI_NAMESPACE_POD,
                .ipc = pod->host_ipc ? KC_CRI_NAMESPACE_NODE : KC_CRI_NAMESPACE_POD,
                .pid = pod->host_pid                  ? KC_CRI_NAMESPACE_NODE
                       : pod->share_process_namespace ? KC_CRI_NAMESPACE_POD
                                                      : KC_CRI_NAMESPACE_CONTAINER,
        };
}

/* fsGroup, then supplementalGroups, into the arena. */
static int pod_groups(const struct kc_api_pod *pod, struct kc_arena *a, const int64_t **ret,
                      size_t *ret_n)
{
        const struct kc_api_pod_security_context *p = &pod->security_context;
        size_t n = (p->fs_group.set ? 1 : 0) + p->n_supplemental_groups, i = 0;
        int64_t *g;

        if (n == 0)
                return 0;
        g = kc_arena_alloc(a, n * sizeof(*g));
        if (!g)
                return -ENOMEM;
        if (p->fs_group.set)
                g[i++] = p->fs_group.v;
        if (p->n_supplemental_groups > 0) /* NULL with none: no memcpy from NULL */
                memcpy(g + i, p->supplemental_groups, p->n_supplemental_groups * sizeof(*g));
        *ret = g;
        *ret_n = n;
        return 0;
}

int kc__container_security(const struct kc_api_pod *pod, const struct kc_api_container *c,
                           const struct kc__image_user *user, const char *seccomp_root,
                           struct kc_arena *a, struct kc_cri_container_security *ret)
{
        struct effective_sc e = effective_sc(pod, c);
        const struct kc_api_security_context *csc = kc_api_security_context_of(c);
        const struct kc_api_seccomp *sp =
                csc->seccomp.type ? &csc->seccomp : &pod->security_context.seccomp;
        struct kc_cri_container_security s = {
                .privileged = e.privileged == KC_OPT_TRUE,
                .readonly_rootfs = e.read_only_root == KC_OPT_TRUE,
                .run_as_user = { e.run_as_user.set, e.run_as_user.v },
                .run_as_group = { e.run_as_group.set, e.run_as_group.v },
                .no_new_privs = e.allow_escalation == KC_OPT_FALSE,
                .namespace_options = kc__namespaces_for_pod(pod),
        };
        bool unmasked = e.proc_mount && strcmp(e.proc_mount, "Unmasked") == 0;
        int r;

        if (e.caps) {
                s.has_capabilities = true;
                /* As upstream: the names go as written; the runtime adds "CAP_". */
                s.capabilities = (struct kc_cri_capability){ e.caps->add, e.caps->n_add,
                                                             e.caps->drop, e.caps->n_drop };
        }
        if (!e.run_as_user.set) {
                s.run_as_user = (struct kc_cri_opt_i64){ user->has_uid, user->uid };
                s.run_as_username = user->username && user->username[0] ? user->username : NULL;
        }
        /* A privileged container gets the whole /proc and /sys (the runtimes ignore the paths then). */
        if (!unmasked && !s.privileged) {
                s.masked_paths = masked_paths;
                s.n_masked_paths = KC_ELEMENTSOF(masked_paths);
                s.readonly_paths = readonly_paths;
                s.n_readonly_paths = KC_ELEMENTSOF(readonly_paths);
        }
        r = pod_groups(pod, a, &s.supplemental_groups, &s.n_supplemental_groups);
        if (r >= 0)
                r = seccomp_profile(sp, seccomp_root, a, &s.seccomp);
        if (r < 0)
                return r;
        *ret = s;
        return 0;
}

static bool has_privileged_container(const struct kc_api_pod *pod)
{
        size_t i;

        for (i = 0; i < pod->n_init_containers; i++)
                if (kc_api_security_context_of(&pod->init_containers[i])->privileged == KC_OPT_TRUE)
                        return true;
        for (i = 0; i < pod->n_containers; i++)
                if (kc_api_security_context_of(&pod->containers[i])->privileged == KC_OPT_TRUE)
                        return true;
        return false;
}

int kc__sandbox_security(const struct kc_api_pod *pod, struct kc_arena *a,
                         struct kc_cri_sandbox_security *ret, const struct kc_label **ret_sysctls,
                         size_t *ret_n_sysctls)
{
        const struct kc_api_pod_security_context *p = &pod->security_context;
        struct kc_cri_sandbox_security s = {
                .privileged = has_privileged_container(pod),
                /* Issue 84623: the sandbox always runs RuntimeDefault. */
                .seccomp = { .set = true, .type = KC_CRI_PROFILE_RUNTIME_DEFAULT },
                .run_as_user = { p->run_as_user.set, p->run_as_user.v },
                .run_as_group = { p->run_as_group.set, p->run_as_group.v },
                .namespace_options = kc__namespaces_for_pod(pod),
        };
        struct kc_label *sysctls = NULL;
        size_t i, n = 0;

        if (pod_groups(pod, a, &s.supplemental_groups, &s.n_supplemental_groups) < 0)
                return -ENOMEM;
        if (p->n_sysctls > 0) {
                sysctls = kc_arena_alloc(a, p->n_sysctls * sizeof(*sysctls));
                if (!sysctls)
                        return -ENOMEM;
        }
        /* A map upstream: a name given twice keeps its last value, in the first one's place. */
        for (i = 0; i < p->n_sysctls; i++) {
                size_t j;

                for (j = 0; j < n && strcmp(sysctls[j].key, p->sysctls[i].name) != 0; j++)
                        ;
                sysctls[j] = (struct kc_label){ p->sysctls[i].name,
                                                p->sysctls[i].value ? p->sysctls[i].value : "" };
                if (j == n)
                        n++;
        }
        *ret = s;
        *ret_sysctls = sysctls;
        *ret_n_sysctls = n;
        return 0;
}

static enum kc_cri_protocol to_protocol(const char *p)
{
        if (p && strcmp(p, "UDP") == 0)
                return KC_CRI_PROTOCOL_UDP;
        if (p && strcmp(p, "SCTP") == 0)
                return KC_CRI_PROTOCOL_SCTP;
        return KC_CRI_PROTOCOL_TCP;
}

/* MakePortMappings' key of a port: its name, else "<family>-<proto>-<hostIP>:<port>:<hostPort>". */
static char *port_key(const struct kc_api_container_port *p)
{
        const char *hip = p->host_ip ? p->host_ip : "";
        const char *family = !hip[0] ? "any" : strchr(hip, ':') ? "v6" : "v4";

        if (p->name && p->name[0])
                return strdup(p->name);
        return kc_strdup_printf("%s-%s-%s:%d:%d", family, p->protocol ? p->protocol : "TCP", hip,
                                p->container_port, p->host_port);
}

static int container_port_mappings(const struct kc_api_container *c,
                                   struct kc_cri_port_mapping *out, size_t *n)
{
        char **keys = calloc(c->n_ports + 1, sizeof(*keys));
        size_t i, j, n_keys = 0;
        int r = 0;

        if (!keys)
                return -ENOMEM;
        for (i = 0; i < c->n_ports && r == 0; i++) {
                const struct kc_api_container_port *p = &c->ports[i];
                char *key = port_key(p);

                if (!key) {
                        r = -ENOMEM;
                        break;
                }
                for (j = 0; j < n_keys && strcmp(keys[j], key) != 0; j++)
                        ;
                if (j < n_keys) {
                        kc_log_info_s("Port name conflicted, it is defined more than once",
                                      KC_KV_STR("portName", key));
                        free(key);
                        continue;
                }
                keys[n_keys++] = key;
                out[(*n)++] = (struct kc_cri_port_mapping){
                        .protocol = to_protocol(p->protocol),
                        .container_port = p->container_port,
                        .host_port = p->host_port,
                        .host_ip = p->host_ip,
                };
        }
        for (i = 0; i < n_keys; i++)
                free(keys[i]);
        free(keys);
        return r;
}

int kc__make_port_mappings(const struct kc_api_pod *pod, struct kc_arena *a,
                           const struct kc_cri_port_mapping **ret, size_t *ret_n)
{
        struct kc_cri_port_mapping *pm;
        size_t i, total = 0, n = 0;
        int r;

        for (i = 0; i < pod->n_containers; i++)
                total += pod->containers[i].n_ports;
        if (total == 0) {
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        pm = kc_arena_alloc(a, total * sizeof(*pm));
        if (!pm)
                return -ENOMEM;
        for (i = 0; i < pod->n_containers; i++) {
                r = container_port_mappings(&pod->containers[i], pm, &n);
                if (r < 0)
                        return r;
        }
        *ret = pm;
        *ret_n = n;
        return 0;
}
