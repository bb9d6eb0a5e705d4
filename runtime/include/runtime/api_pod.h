/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file runtime/api_pod.h
 * @brief The API pod: the parts of a v1.Pod the sync core reads.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"
#include "runtime/api_spec.h"
#include "runtime/runtime_service.h"

enum kc_pod_phase {
        KC_POD_PHASE_PENDING,
        KC_POD_PHASE_RUNNING,
        KC_POD_PHASE_SUCCEEDED,
        KC_POD_PHASE_FAILED,
        KC_POD_PHASE_UNKNOWN,
        _KC_POD_PHASE_MAX,
        _KC_POD_PHASE_INVALID = -EINVAL,
};

/** "Pending", "Running", "Succeeded", "Failed", "Unknown" (v1.PodPhase). */
const char *kc_pod_phase_to_string(enum kc_pod_phase p);
/** The phase named @p s; _KC_POD_PHASE_INVALID for NULL or any other text. */
enum kc_pod_phase kc_pod_phase_from_string(const char *s);

/** v1.RestartPolicy; the zero value is the v1 default, Always. */
enum kc_restart_policy {
        KC_RESTART_POLICY_ALWAYS,
        KC_RESTART_POLICY_ON_FAILURE,
        KC_RESTART_POLICY_NEVER,
        _KC_RESTART_POLICY_MAX,
        _KC_RESTART_POLICY_INVALID = -EINVAL,
};

/** "Always", "OnFailure", "Never" (v1.RestartPolicy). */
const char *kc_restart_policy_to_string(enum kc_restart_policy p);
enum kc_restart_policy kc_restart_policy_from_string(const char *s);

/** v1.PullPolicy. */
enum kc_pull_policy {
        KC_PULL_ALWAYS,
        KC_PULL_IF_NOT_PRESENT,
        KC_PULL_NEVER,
        _KC_PULL_POLICY_MAX,
        _KC_PULL_POLICY_INVALID = -EINVAL,
};

/** "Always", "IfNotPresent", "Never" (v1.PullPolicy). */
const char *kc_pull_policy_to_string(enum kc_pull_policy p);
enum kc_pull_policy kc_pull_policy_from_string(const char *s);

/** A v1.Container: the fields the node agent uses. */
struct kc_api_container {
        const char *name;
        const char *image;
        const char *const *command; /* may be NULL when n_command == 0 */
        size_t n_command;
        const char *const *args; /* may be NULL when n_args == 0 */
        size_t n_args;
        /* v1 default: Always when the image tag is ":latest" or absent, else IfNotPresent */
        enum kc_pull_policy image_pull_policy;
        const char *working_dir; /* NULL: the image's */
        const struct kc_api_container_port *ports;
        size_t n_ports;
        const struct kc_api_env_from *env_from;
        size_t n_env_from;
        const struct kc_api_env_var *env;
        size_t n_env;
        struct kc_api_resources resources;
        const struct kc_api_volume_mount *volume_mounts;
        size_t n_volume_mounts;
        /*
         * The rarely given parts, NULL when absent (issue 18: held inline
         * they made most of a container's 928 bytes); read them through
         * kc_api_lifecycle_of(), kc_api_probe_or_none() and
         * kc_api_security_context_of(), which stand in an empty one.
         */
        const struct kc_api_lifecycle *lifecycle;
        const struct kc_api_probe *liveness_probe;
        const struct kc_api_probe *readiness_probe;
        const struct kc_api_probe *startup_probe;
        /* default "/dev/termination-log" */
        const char *termination_message_path;
        enum kc_termination_message_policy termination_message_policy;
        const struct kc_api_security_context *security_context;
        /*
         * Init containers only: restartPolicy "Always" makes a sidecar
         * (KEP-753). Unset for app containers (the API refuses it there).
         */
        bool restart_policy_always;
        bool stdin, stdin_once, tty;
};

/* The empty ones the accessors below stand in for absent parts. */
extern const struct kc_api_lifecycle kc_api_lifecycle_none;
extern const struct kc_api_probe kc_api_probe_none;
extern const struct kc_api_security_context kc_api_security_context_none;

/** @p c's lifecycle hooks; an empty kc_api_lifecycle (no handlers) when it has none. */
static inline const struct kc_api_lifecycle *kc_api_lifecycle_of(const struct kc_api_container *c)
{
        return c->lifecycle ? c->lifecycle : &kc_api_lifecycle_none;
}

/** @p p, or an absent probe (present false) for NULL. */
static inline const struct kc_api_probe *kc_api_probe_or_none(const struct kc_api_probe *p)
{
        return p ? p : &kc_api_probe_none;
}

/** @p c's security context; an absent one (present false, nothing set) when not given. */
static inline const struct kc_api_security_context *
kc_api_security_context_of(const struct kc_api_container *c)
{
        return c->security_context ? c->security_context : &kc_api_security_context_none;
}

struct kc_label;

/**
 * A desired pod as the config sources and the pod manager see it (v1.Pod,
 * the fields the sync core and the node agent use). Immutable once built,
 * reference counted like kc_pod.
 */
struct kc_api_pod {
        const char *uid;
        const char *name;
        const char *namespace;
        const char *source;          /* config source: "file", "api", ... (may be NULL) */
        int64_t creation_ts;         /* ns since epoch */
        int64_t deletion_ts;         /* ns since epoch; 0: not being deleted */
        int64_t deletion_grace_s;    /* DeletionGracePeriodSeconds; -1: unset */
        int64_t termination_grace_s; /* spec.TerminationGracePeriodSeconds; -1: unset */
        enum kc_pod_phase phase;
        bool static_pod; /* from a file or http source */
        bool mirror_pod; /* the API server's mirror of a static pod */
        bool host_network;
        enum kc_restart_policy restart_policy;     /* spec.restartPolicy; zero value Always */
        const struct kc_api_container *containers; /* spec.containers, in order */
        size_t n_containers;
        const struct kc_api_container *init_containers; /* spec.initContainers, in order */
        size_t n_init_containers;
        const struct kc_label *labels; /* metadata.labels */
        size_t n_labels;
        const struct kc_label *annotations; /* metadata.annotations */
        size_t n_annotations;
        const struct kc_api_volume *volumes; /* spec.volumes, in order */
        size_t n_volumes;
        const char *node_name;            /* spec.nodeName: the file source sets this node */
        const char *service_account_name; /* spec.serviceAccountName (may be NULL) */
        const char *hostname;             /* spec.hostname (may be NULL) */
        const char *subdomain;            /* spec.subdomain (may be NULL) */
        bool host_pid;
        bool host_ipc;
        bool share_process_namespace;
        const struct kc_api_host_alias *host_aliases;
        size_t n_host_aliases;
        enum kc_dns_policy dns_policy;
        bool has_dns_config;
        struct kc_api_dns_config dns_config;
        struct kc_api_pod_security_context security_context;
        const char *priority_class_name; /* may be NULL */
        struct kc_opt_i64 priority;
        struct kc_opt_i64 active_deadline_seconds;
        /* spec.enableServiceLinks (v1 default true); no services without an API server */
        enum kc_opt_bool enable_service_links;
};

/**
 * "name_namespace" (kubecontainer.BuildPodFullName): how static pods and
 * their mirror pods are matched. NULL parts count as "". malloc'd; NULL on
 * ENOMEM.
 */
char *kc_pod_full_name(const char *name, const char *namespace);

/** Deep-copies @p tmpl (borrowed pointers) into one reference-counted allocation. */
int kc_api_pod_new(const struct kc_api_pod *tmpl, struct kc_api_pod **ret);
struct kc_api_pod *kc_api_pod_ref(struct kc_api_pod *p);
struct kc_api_pod *kc_api_pod_unref(struct kc_api_pod *p);
KC_DEFINE_CLEANUP_FUNC(struct kc_api_pod, kc_api_pod_unref)
