/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file runtime/runtime_service.h
 * @brief The runtime service: the CRI-shaped RuntimeService and ImageService calls.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "runtime/container.h"

struct kc_runtime_error;

struct kc_label {
        const char *key;
        const char *value;
};

struct kc_pod_sandbox_metadata {
        const char *name;
        const char *uid;
        const char *namespace;
        uint32_t attempt;
};

/** CRI PodSandbox (ListPodSandbox item) and PodSandboxStatus in one shape. */
struct kc_pod_sandbox {
        const char *id;
        struct kc_pod_sandbox_metadata metadata;
        enum kc_sandbox_state state;
        int64_t created_at;
        const char *ip; /* status only: network.ip */
        const char *const *additional_ips;
        size_t n_additional_ips;
        const struct kc_label *labels;
        size_t n_labels;
        const struct kc_label *annotations;
        size_t n_annotations;
};

struct kc_container_metadata {
        const char *name;
        uint32_t attempt;
};

/** CRI Container (ListContainers item) and ContainerStatus in one shape. */
struct kc_cri_container {
        const char *id;
        const char *pod_sandbox_id;
        struct kc_container_metadata metadata;
        const char *image;
        const char *image_ref;
        enum kc_container_state state;
        int64_t created_at;
        int64_t started_at;  /* status only */
        int64_t finished_at; /* status only */
        int32_t exit_code;   /* status only */
        const char *reason;  /* status only */
        const char *message; /* status only */
        const struct kc_label *labels;
        size_t n_labels;
        const struct kc_label *annotations;
        size_t n_annotations;
        const struct kc_cri_mount *mounts; /* status only */
        size_t n_mounts;                   /* status only */
        const char *log_path; /* status only: the full path of the log file; may be NULL */
};

/** Filters: a NULL filter, and NULL/-1 fields, match everything; labels must all match. */
struct kc_pod_sandbox_filter {
        const char *id;
        int state; /* enum kc_sandbox_state or -1 */
        const struct kc_label *label_selector;
        size_t n_label_selector;
};

struct kc_container_filter {
        const char *id;
        const char *pod_sandbox_id;
        int state; /* enum kc_container_state or -1 */
        const struct kc_label *label_selector;
        size_t n_label_selector;
};

/**
 * Results of list/status calls live in one arena; kc_runtime_result_done frees it.
 * A service may hand out a shared result (another reference to an arena
 * it keeps, or items pointing into arenas it keeps, kc_arena_hold): a
 * listing of data that did not change, a status that is an object's own
 * (the simulated runtime's ContainerStatus); callers treat every result as
 * read-only. Memory a result
 * reaches never changes while the result's arena is held, so a consumer that
 * holds an earlier result may take a pointer equal to one in it for equal
 * contents (issue 18); a service need never return the same memory twice.
 *
 * A list result may also carry a token per item (tokens, in its arena; NULL
 * when it has none): two items, of one result or of two, with the same
 * nonzero token have equal contents, wherever their strings are; 0 says
 * nothing. A CRI list memo gives an item it decoded a new token and its
 * later copies of the item the same one (issue 18).
 *
 * And a list result may say how it differs from an earlier one (a delta):
 * base is that result's items (NULL: no delta), and changed holds
 * n_changed distinct item positions (in its arena, in no particular
 * order). The result then has as many items as the base, and every item
 * at a position not in changed equals the base's item at that position
 * byte for byte: the same strings at the same addresses. A consumer that
 * still holds the base result may take those items as it found them there
 * without reading them (issue 18); one that does not hold it cannot tell
 * the base from another result at the same address, and ignores the delta.
 */
struct kc_pod_sandbox_list {
        struct kc_pod_sandbox *items;
        size_t n;
        struct kc_arena *arena;
        const uint64_t *tokens;
        const void *base;
        const uint32_t *changed;
        size_t n_changed;
};
struct kc_container_list {
        struct kc_cri_container *items;
        size_t n;
        struct kc_arena *arena;
        const uint64_t *tokens;
        const void *base;
        const uint32_t *changed;
        size_t n_changed;
};
struct kc_pod_sandbox_status_result {
        struct kc_pod_sandbox status;
        struct kc_arena *arena;
};
struct kc_container_status_result {
        struct kc_cri_container status;
        struct kc_arena *arena;
};
#define kc_runtime_result_done(r) ((r)->arena = kc_arena_free((r)->arena))

struct kc_runtime_condition {
        const char *type; /* "RuntimeReady", "NetworkReady" */
        bool status;
        const char *reason;
        const char *message;
};

struct kc_runtime_status_result {
        struct kc_runtime_condition *conditions;
        size_t n_conditions;
        struct kc_arena *arena;
};

struct kc_version_result {
        const char *version;
        const char *runtime_name;
        const char *runtime_version;
        const char *runtime_api_version;
        struct kc_arena *arena;
};

/** CRI NamespaceMode. */
enum kc_cri_namespace_mode {
        KC_CRI_NAMESPACE_POD = 0,
        KC_CRI_NAMESPACE_CONTAINER = 1,
        KC_CRI_NAMESPACE_NODE = 2,
        KC_CRI_NAMESPACE_TARGET = 3,
};

/** CRI NamespaceOption. */
struct kc_cri_namespace_options {
        enum kc_cri_namespace_mode network;
        enum kc_cri_namespace_mode pid;
        enum kc_cri_namespace_mode ipc;
};

/** CRI Protocol. */
enum kc_cri_protocol {
        KC_CRI_PROTOCOL_TCP = 0,
        KC_CRI_PROTOCOL_UDP = 1,
        KC_CRI_PROTOCOL_SCTP = 2,
};

/** CRI PortMapping. */
struct kc_cri_port_mapping {
        enum kc_cri_protocol protocol;
        int32_t container_port;
        int32_t host_port;
        const char *host_ip;
};

/** CRI DNSConfig. */
struct kc_cri_dns_config {
        const char *const *servers;
        size_t n_servers;
        const char *const *searches;
        size_t n_searches;
        const char *const *options;
        size_t n_options;
};

/** CRI SecurityProfile (seccomp), the fields we use. */
enum kc_cri_profile_type {
        KC_CRI_PROFILE_RUNTIME_DEFAULT = 0,
        KC_CRI_PROFILE_UNCONFINED = 1,
        KC_CRI_PROFILE_LOCALHOST = 2,
};
struct kc_cri_security_profile {
        bool set;
        enum kc_cri_profile_type type;
        const char *localhost_ref;
};

/** CRI Int64Value: optional. */
struct kc_cri_opt_i64 {
        bool set;
        int64_t v;
};

/** CRI LinuxSandboxSecurityContext, the fields we use. */
struct kc_cri_sandbox_security {
        struct kc_cri_namespace_options namespace_options;
        struct kc_cri_opt_i64 run_as_user;
        struct kc_cri_opt_i64 run_as_group;
        bool readonly_rootfs;
        const int64_t *supplemental_groups;
        size_t n_supplemental_groups;
        bool privileged;
        struct kc_cri_security_profile seccomp;
};

/** What RunPodSandbox needs (CRI PodSandboxConfig, the fields we use). */
struct kc_pod_sandbox_config {
        struct kc_pod_sandbox_metadata metadata;
        const char *hostname;
        const char *log_directory;
        bool host_network; /* also security.namespace_options.network == NODE */
        const struct kc_cri_dns_config *dns_config; /* NULL: none */
        const struct kc_cri_port_mapping *port_mappings;
        size_t n_port_mappings;
        const struct kc_label *labels;
        size_t n_labels;
        const struct kc_label *annotations;
        size_t n_annotations;
        /* linux */
        const char *cgroup_parent;
        struct kc_cri_sandbox_security security;
        const struct kc_label *sysctls; /* key = sysctl name */
        size_t n_sysctls;
};

/** CRI MountPropagation. */
enum kc_cri_propagation {
        KC_CRI_PROPAGATION_PRIVATE = 0,
        KC_CRI_PROPAGATION_HOST_TO_CONTAINER = 1,
        KC_CRI_PROPAGATION_BIDIRECTIONAL = 2,
};

/** CRI Mount, the fields we use. */
struct kc_cri_mount {
        const char *container_path;
        const char *host_path;
        bool readonly;
        bool selinux_relabel;
        enum kc_cri_propagation propagation;
};

/** CRI HugepageLimit: a page size as the kernel names it ("2MB", "1GB") and bytes. */
struct kc_cri_hugepage_limit {
        const char *page_size;
        uint64_t limit;
};

/** CRI LinuxContainerResources, the fields we use; 0 means unset as in CRI. */
struct kc_cri_linux_resources {
        int64_t cpu_period;
        int64_t cpu_quota;
        int64_t cpu_shares;
        int64_t memory_limit_in_bytes;
        int64_t oom_score_adj;
        const char *cpuset_cpus;
        const char *cpuset_mems;
        /* Every huge page size of the host: the container's limit, else 0 */
        const struct kc_cri_hugepage_limit *hugepage_limits;
        size_t n_hugepage_limits;
};

/** CRI Capability. */
struct kc_cri_capability {
        const char *const *add;
        size_t n_add;
        const char *const *drop;
        size_t n_drop;
};

/** CRI LinuxContainerSecurityContext, the fields we use. */
struct kc_cri_container_security {
        bool has_capabilities;
        struct kc_cri_capability capabilities;
        bool privileged;
        struct kc_cri_namespace_options namespace_options;
        struct kc_cri_opt_i64 run_as_user;
        struct kc_cri_opt_i64 run_as_group;
        const char *run_as_username;
        bool readonly_rootfs;
        const int64_t *supplemental_groups;
        size_t n_supplemental_groups;
        bool no_new_privs;
        const char *const *masked_paths;
        size_t n_masked_paths;
        const char *const *readonly_paths;
        size_t n_readonly_paths;
        struct kc_cri_security_profile seccomp;
};

/** What CreateContainer needs (CRI ContainerConfig, the fields we use). */
struct kc_container_config {
        struct kc_container_metadata metadata;
        /* ImageSpec.image: what the runtime resolves; kubelet passes the image ref (id) */
        const char *image;
        /* ImageSpec.user_specified_image: the image as the pod spec names it (may be NULL) */
        const char *user_specified_image;
        const char *const *command;
        size_t n_command;
        const char *const *args;
        size_t n_args;
        const char *working_dir;
        const struct kc_label *envs; /* CRI KeyValue: key = name */
        size_t n_envs;
        const struct kc_cri_mount *mounts;
        size_t n_mounts;
        const char *log_path;
        bool stdin, stdin_once, tty;
        const struct kc_label *labels;
        size_t n_labels;
        const struct kc_label *annotations;
        size_t n_annotations;
        /* linux */
        bool has_resources;
        struct kc_cri_linux_resources resources;
        bool has_security;
        struct kc_cri_container_security security;
};

/** ExecSync's result: stdout and stderr (capped by the runtime) and the exit code. */
struct kc_exec_sync_result {
        char *out; /* malloc'd, NUL-terminated */
        size_t n_out;
        char *err; /* malloc'd, NUL-terminated */
        size_t n_err;
        int32_t exit_code;
};
void kc_exec_sync_result_done(struct kc_exec_sync_result *r);

/** CRI Image (ImageStatus), the fields we use. */
struct kc_image {
        const char *id; /* "sha256:<hex>" */
        const char *const *repo_tags;
        size_t n_repo_tags;
        const char *const *repo_digests;
        size_t n_repo_digests;
        uint64_t size; /* bytes */
        /* The image's user: a numeric uid, else a user name (NULL or ""); neither: root. */
        bool has_uid;
        int64_t uid;
        const char *username;
};

/**
 * ImageStatus' result. A missing image is a success with found = false (CRI
 * answers with a nil image); then image is zeroed and arena may be NULL.
 */
struct kc_image_status_result {
        bool found;
        struct kc_image image;
        struct kc_arena *arena;
};

struct kc_runtime_service_ops {
        int (*version)(void *self, struct kc_version_result *ret, struct kc_runtime_error *err);
        int (*status)(void *self, struct kc_runtime_status_result *ret,
                      struct kc_runtime_error *err);

        int (*run_pod_sandbox)(void *self, const struct kc_pod_sandbox_config *config,
                               char **ret_id, struct kc_runtime_error *err);
        int (*stop_pod_sandbox)(void *self, const char *id, struct kc_runtime_error *err);
        int (*remove_pod_sandbox)(void *self, const char *id, struct kc_runtime_error *err);
        int (*pod_sandbox_status)(void *self, const char *id,
                                  struct kc_pod_sandbox_status_result *ret,
                                  struct kc_runtime_error *err);
        int (*list_pod_sandbox)(void *self, const struct kc_pod_sandbox_filter *filter,
                                struct kc_pod_sandbox_list *ret, struct kc_runtime_error *err);

        int (*create_container)(void *self, const char *pod_sandbox_id,
                                const struct kc_container_config *config,
                                const struct kc_pod_sandbox_config *sandbox_config, char **ret_id,
                                struct kc_runtime_error *err);
        int (*start_container)(void *self, const char *id, struct kc_runtime_error *err);
        int (*stop_container)(void *self, const char *id, int64_t timeout_s,
                              struct kc_runtime_error *err);
        int (*remove_container)(void *self, const char *id, struct kc_runtime_error *err);
        int (*list_containers)(void *self, const struct kc_container_filter *filter,
                               struct kc_container_list *ret, struct kc_runtime_error *err);
        int (*container_status)(void *self, const char *id, struct kc_container_status_result *ret,
                                struct kc_runtime_error *err);
        /**
         * Not a CRI call: container_status() is about to be asked for the
         * @p n @p ids (issue 18). With @p far, the call after next: where
         * each would be looked up is asked for; else the next: what that
         * place names. Only speed changes. May be NULL. Any thread.
         */
        void (*prefetch_container_statuses)(void *self, const char *const *ids, size_t n, bool far);
        /**
         * ExecSync: runs @p argv in container @p id and waits up to
         * @p timeout_s seconds (0: no timeout). A command that ran and
         * failed is a success with ret->exit_code != 0.
         */
        int (*exec_sync)(void *self, const char *id, const char *const *argv, size_t argc,
                         int64_t timeout_s, struct kc_exec_sync_result *ret,
                         struct kc_runtime_error *err);

        /* ImageService */

        /**
         * ImageStatus(@p image): @p image is a reference ("busybox:1.36",
         * "registry/x@sha256:...") or an image id. An absent image is not an
         * error: 0 with ret->found = false.
         */
        int (*image_status)(void *self, const char *image, struct kc_image_status_result *ret,
                            struct kc_runtime_error *err);
        /**
         * PullImage(@p image, @p sandbox_config): on success *ret_image_ref
         * (malloc'd) is the pulled image's reference, its id. No credentials
         * (the CRI's AuthConfig) yet. @p sandbox_config may be NULL.
         */
        int (*pull_image)(void *self, const char *image,
                          const struct kc_pod_sandbox_config *sandbox_config, char **ret_image_ref,
                          struct kc_runtime_error *err);
};

struct kc_runtime_service {
        const struct kc_runtime_service_ops *ops;
        void *self;
};

/* Labels kubelet puts on sandboxes and containers (upstream kubelet/types). */
#define KC_LABEL_POD_NAME "io.kubernetes.pod.name"
#define KC_LABEL_POD_NAMESPACE "io.kubernetes.pod.namespace"
#define KC_LABEL_POD_UID "io.kubernetes.pod.uid"
#define KC_LABEL_CONTAINER_NAME "io.kubernetes.container.name"
#define KC_ANNOTATION_CONTAINER_HASH "io.kubernetes.container.hash"
#define KC_ANNOTATION_CONTAINER_RESTART_COUNT "io.kubernetes.container.restartCount"
