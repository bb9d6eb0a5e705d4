/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file runtime/api_spec.h
 * @brief The parts of a v1 PodSpec and Container below the pod: volumes,
 * mounts, env, resources, security contexts, ports, lifecycle hooks, probes.
 *
 * Plain data, borrowed strings: kc_api_pod_new() deep-copies a pod with all
 * of these into one reference-counted block. Optional scalars are a value
 * and a has_ flag (Go's pointer fields); "tri-state" booleans use
 * enum kc_opt_bool. Names follow the v1 API's JSON names.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kc_label;

/** A *bool of the v1 API: unset, false or true. */
enum kc_opt_bool {
        KC_OPT_UNSET = 0,
        KC_OPT_FALSE,
        KC_OPT_TRUE,
};

/** An optional int64 (*int64 of the API). */
struct kc_opt_i64 {
        bool set;
        int64_t v;
};

/**
 * A resource.Quantity: the text as written ("500m", "128Mi", "1G") and its
 * value in thousandths (cpu "500m" = 500, memory "1Ki" = 1,024,000).
 * Parsing rounds up as Quantity.MilliValue() does.
 */
struct kc_api_quantity {
        const char *text;
        int64_t milli;
};

/** One entry of a v1.ResourceList ("cpu", "memory", "ephemeral-storage", "hugepages-2Mi", ...). */
struct kc_api_resource {
        const char *name;
        struct kc_api_quantity q;
};

/** v1.ResourceRequirements (claims are refused: they need the API server). */
struct kc_api_resources {
        const struct kc_api_resource *limits;
        size_t n_limits;
        const struct kc_api_resource *requests;
        size_t n_requests;
};

/** v1.ObjectFieldSelector / ResourceFieldSelector / key refs in EnvVarSource. */
enum kc_env_source_kind {
        KC_ENV_SOURCE_NONE = 0,       /* value (possibly "") */
        KC_ENV_SOURCE_FIELD_REF,      /* fieldRef.fieldPath (apiVersion v1) */
        KC_ENV_SOURCE_RESOURCE_FIELD, /* resourceFieldRef */
        KC_ENV_SOURCE_CONFIG_MAP_KEY, /* configMapKeyRef: needs the API server */
        KC_ENV_SOURCE_SECRET_KEY,     /* secretKeyRef: needs the API server */
};

/** v1.EnvVar. */
struct kc_api_env_var {
        const char *name;
        const char *value; /* KC_ENV_SOURCE_NONE; NULL when unset */
        enum kc_env_source_kind source;
        /* FIELD_REF: the field path ("metadata.name", "metadata.labels['k']", "status.podIP") */
        const char *field_path;
        /* RESOURCE_FIELD: container name (NULL: this container), resource, divisor ("1" when unset) */
        const char *resource_container;
        const char *resource;
        struct kc_api_quantity divisor;
        /* CONFIG_MAP_KEY / SECRET_KEY: the object's name and key, and optional */
        const char *ref_name;
        const char *ref_key;
        enum kc_opt_bool ref_optional;
};

/** v1.EnvFromSource: both kinds need the API server. */
struct kc_api_env_from {
        const char *prefix;
        bool secret; /* secretRef; else configMapRef */
        const char *ref_name;
        enum kc_opt_bool optional;
};

/** v1.MountPropagationMode; the zero value is unset (None). */
enum kc_mount_propagation {
        KC_MOUNT_PROPAGATION_UNSET = 0,
        KC_MOUNT_PROPAGATION_NONE,
        KC_MOUNT_PROPAGATION_HOST_TO_CONTAINER,
        KC_MOUNT_PROPAGATION_BIDIRECTIONAL,
        _KC_MOUNT_PROPAGATION_MAX,
        _KC_MOUNT_PROPAGATION_INVALID = -EINVAL,
};

/** v1.VolumeMount. */
struct kc_api_volume_mount {
        const char *name;
        const char *mount_path;
        const char *sub_path;      /* NULL or "" when unset */
        const char *sub_path_expr; /* NULL or "" when unset */
        bool read_only;
        enum kc_mount_propagation propagation;
};

/** v1.HostPathType; the zero value is "" (no check). */
enum kc_host_path_type {
        KC_HOST_PATH_UNSET = 0,
        KC_HOST_PATH_DIRECTORY_OR_CREATE,
        KC_HOST_PATH_DIRECTORY,
        KC_HOST_PATH_FILE_OR_CREATE,
        KC_HOST_PATH_FILE,
        KC_HOST_PATH_SOCKET,
        KC_HOST_PATH_CHAR_DEVICE,
        KC_HOST_PATH_BLOCK_DEVICE,
        _KC_HOST_PATH_TYPE_MAX,
        _KC_HOST_PATH_TYPE_INVALID = -EINVAL,
};

/** The kind of a v1.Volume: the volume source that is set. */
enum kc_volume_kind {
        KC_VOLUME_HOST_PATH,
        KC_VOLUME_EMPTY_DIR,
        /*
         * Any other source (secret, configMap, projected, downwardAPI,
         * persistentVolumeClaim, csi, nfs, ...): kind_name holds its JSON
         * name. These need the API server or a volume plugin.
         */
        KC_VOLUME_OTHER,
};

/** v1.Volume. */
struct kc_api_volume {
        const char *name;
        enum kc_volume_kind kind;
        const char *kind_name; /* the source's JSON name: "hostPath", "emptyDir", "secret", ... */
        /* hostPath */
        const char *host_path;
        enum kc_host_path_type host_path_type;
        /* emptyDir: medium "" (node disk) or "Memory" (tmpfs); sizeLimit */
        bool medium_memory;
        bool has_size_limit;
        struct kc_api_quantity size_limit;
};

/** v1.ContainerPort; protocol defaults to "TCP". */
struct kc_api_container_port {
        const char *name;
        int32_t container_port;
        int32_t host_port; /* 0: none */
        const char *host_ip;
        const char *protocol; /* "TCP", "UDP", "SCTP" */
};

/** v1.Capabilities. */
struct kc_api_capabilities {
        const char *const *add;
        size_t n_add;
        const char *const *drop;
        size_t n_drop;
};

/** v1.SeccompProfile; type "" when unset. */
struct kc_api_seccomp {
        const char *type; /* "RuntimeDefault", "Unconfined", "Localhost" or NULL */
        const char *localhost_profile;
};

/** v1.SecurityContext (a container's). */
struct kc_api_security_context {
        bool present; /* the field was given */
        struct kc_opt_i64 run_as_user;
        struct kc_opt_i64 run_as_group;
        enum kc_opt_bool run_as_non_root;
        enum kc_opt_bool privileged;
        enum kc_opt_bool read_only_root_filesystem;
        enum kc_opt_bool allow_privilege_escalation;
        bool has_capabilities;
        struct kc_api_capabilities capabilities;
        const char *proc_mount; /* "Default", "Unmasked" or NULL */
        struct kc_api_seccomp seccomp;
};

/** v1.Sysctl. */
struct kc_api_sysctl {
        const char *name;
        const char *value;
};

/** v1.PodSecurityContext. */
struct kc_api_pod_security_context {
        struct kc_opt_i64 run_as_user;
        struct kc_opt_i64 run_as_group;
        enum kc_opt_bool run_as_non_root;
        struct kc_opt_i64 fs_group;
        const int64_t *supplemental_groups;
        size_t n_supplemental_groups;
        const struct kc_api_sysctl *sysctls;
        size_t n_sysctls;
        struct kc_api_seccomp seccomp;
};

/** v1.HTTPHeader. */
struct kc_api_http_header {
        const char *name;
        const char *value;
};

/** An IntOrString port: a number, or a container port's name. */
struct kc_api_port_ref {
        int32_t number; /* when name is NULL */
        const char *name;
};

/** The kind of a v1.LifecycleHandler or ProbeHandler. */
enum kc_handler_kind {
        KC_HANDLER_NONE = 0,
        KC_HANDLER_EXEC,
        KC_HANDLER_HTTP_GET,
        KC_HANDLER_TCP_SOCKET,
        KC_HANDLER_GRPC,  /* probes only */
        KC_HANDLER_SLEEP, /* lifecycle hooks only (PodLifecycleSleepAction) */
};

/** v1.LifecycleHandler and v1.ProbeHandler in one shape. */
struct kc_api_handler {
        enum kc_handler_kind kind;
        /* exec */
        const char *const *command;
        size_t n_command;
        /* httpGet, tcpSocket, grpc */
        const char *host; /* NULL: the pod IP */
        struct kc_api_port_ref port;
        /* httpGet */
        const char *path;
        bool https; /* scheme HTTPS; default HTTP */
        const struct kc_api_http_header *headers;
        size_t n_headers;
        /* grpc: the service name for the health check ("" when unset) */
        const char *grpc_service;
        /* sleep */
        int64_t sleep_seconds;
};

/** v1.Lifecycle. */
struct kc_api_lifecycle {
        struct kc_api_handler post_start;
        struct kc_api_handler pre_stop;
};

/** v1.Probe with upstream's defaults applied (timeout 1, period 10, success 1, failure 3). */
struct kc_api_probe {
        bool present;
        struct kc_api_handler handler;
        int32_t initial_delay_seconds;
        int32_t timeout_seconds;
        int32_t period_seconds;
        int32_t success_threshold;
        int32_t failure_threshold;
        struct kc_opt_i64 termination_grace_period_seconds;
};

/** v1.TerminationMessagePolicy. */
enum kc_termination_message_policy {
        KC_TERMINATION_MESSAGE_FILE = 0, /* "File", the default */
        KC_TERMINATION_MESSAGE_FALLBACK_TO_LOGS_ON_ERROR,
        _KC_TERMINATION_MESSAGE_POLICY_MAX,
        _KC_TERMINATION_MESSAGE_POLICY_INVALID = -EINVAL,
};

/** v1.HostAlias. */
struct kc_api_host_alias {
        const char *ip;
        const char *const *hostnames;
        size_t n_hostnames;
};

/** v1.PodDNSConfigOption and PodDNSConfig. */
struct kc_api_dns_option {
        const char *name;
        const char *value; /* may be NULL */
};
struct kc_api_dns_config {
        const char *const *nameservers;
        size_t n_nameservers;
        const char *const *searches;
        size_t n_searches;
        const struct kc_api_dns_option *options;
        size_t n_options;
};

/** v1.DNSPolicy; the zero value is the default, ClusterFirst. */
enum kc_dns_policy {
        KC_DNS_CLUSTER_FIRST = 0,
        KC_DNS_CLUSTER_FIRST_WITH_HOST_NET,
        KC_DNS_DEFAULT,
        KC_DNS_NONE,
        _KC_DNS_POLICY_MAX,
        _KC_DNS_POLICY_INVALID = -EINVAL,
};

/*
 * The v1 API's names of the enums above ("HostToContainer", "DirectoryOrCreate",
 * "FallbackToLogsOnError", "ClusterFirstWithHostNet"): to_string gives NULL
 * for a value out of range (and for the unset zero values of propagation and
 * host path type, whose v1 form is "" or absent); from_string gives the
 * enum's -EINVAL sentinel for an unknown name or NULL.
 */
const char *kc_mount_propagation_to_string(enum kc_mount_propagation v);
enum kc_mount_propagation kc_mount_propagation_from_string(const char *s);
const char *kc_host_path_type_to_string(enum kc_host_path_type v);
enum kc_host_path_type kc_host_path_type_from_string(const char *s);
const char *kc_termination_message_policy_to_string(enum kc_termination_message_policy v);
enum kc_termination_message_policy kc_termination_message_policy_from_string(const char *s);
const char *kc_dns_policy_to_string(enum kc_dns_policy v);
enum kc_dns_policy kc_dns_policy_from_string(const char *s);
