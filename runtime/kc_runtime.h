/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kc_runtime.h
 * @brief The two runtime layers, as upstream:
 *
 * 1. the runtime service (struct kc_runtime_service): CRI-shaped calls
 *    (ListPodSandbox, ContainerStatus, ...). Implementations: runtime/sim
 *    (embedded simulated runtime) and, later, runtime/cri (gRPC client);
 * 2. the kubecontainer-level view (struct kc_pod_runtime): GetPods and
 *    GetPodStatus, which is what PLEG consumes. The runtime manager
 *    (upstream kubeGenericRuntimeManager) implements it on top of any
 *    runtime service. The simulated runtime also exposes it directly, like
 *    upstream's containertest.FakeRuntime, for PLEG-only drivers
 *    (`cubelet pleg-replay`).
 *
 * All calls are safe from any thread unless stated otherwise.
 * Errors: 0 or -errno; the optional last parameter `err` receives a code and
 * a human-readable message when a call fails.
 */
#pragma once

#include "kc_core.h"

/* ------------------------------------------------------------------------ */
/* Errors                                                                     */

/** gRPC-style status codes (the CRI client maps grpc-status onto these). */
enum kc_runtime_code {
        KC_RUNTIME_OK = 0,
        KC_RUNTIME_CANCELLED = 1,
        KC_RUNTIME_UNKNOWN = 2,
        KC_RUNTIME_INVALID_ARGUMENT = 3,
        KC_RUNTIME_DEADLINE_EXCEEDED = 4,
        KC_RUNTIME_NOT_FOUND = 5,
        KC_RUNTIME_ALREADY_EXISTS = 6,
        KC_RUNTIME_PERMISSION_DENIED = 7,
        KC_RUNTIME_RESOURCE_EXHAUSTED = 8,
        KC_RUNTIME_FAILED_PRECONDITION = 9,
        KC_RUNTIME_ABORTED = 10,
        KC_RUNTIME_OUT_OF_RANGE = 11,
        KC_RUNTIME_UNIMPLEMENTED = 12,
        KC_RUNTIME_INTERNAL = 13,
        KC_RUNTIME_UNAVAILABLE = 14,
        KC_RUNTIME_DATA_LOSS = 15,
        KC_RUNTIME_UNAUTHENTICATED = 16,
};

#define KC_RUNTIME_ERROR_MAX 512

struct kc_runtime_error {
        enum kc_runtime_code code;
        char message[KC_RUNTIME_ERROR_MAX];
};

/** Fills @p err (if non-NULL) and returns @p r (a negative errno). */
int kc_runtime_error_set(struct kc_runtime_error *err, int r, enum kc_runtime_code code,
                         const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ------------------------------------------------------------------------ */
/* States                                                                     */

enum kc_container_state {
        KC_CONTAINER_STATE_CREATED,
        KC_CONTAINER_STATE_RUNNING,
        KC_CONTAINER_STATE_EXITED,
        KC_CONTAINER_STATE_UNKNOWN,
        _KC_CONTAINER_STATE_MAX,
        _KC_CONTAINER_STATE_INVALID = -EINVAL,
};

/** "created", "running", "exited", "unknown" (upstream kubecontainer.State). */
const char *kc_container_state_to_string(enum kc_container_state s);
enum kc_container_state kc_container_state_from_string(const char *s);

enum kc_sandbox_state {
        KC_SANDBOX_STATE_READY,
        KC_SANDBOX_STATE_NOTREADY,
        _KC_SANDBOX_STATE_MAX,
        _KC_SANDBOX_STATE_INVALID = -EINVAL,
};

/** "SANDBOX_READY", "SANDBOX_NOTREADY" (CRI names). */
const char *kc_sandbox_state_to_string(enum kc_sandbox_state s);

/* ------------------------------------------------------------------------ */
/* kubecontainer-level data (immutable, reference counted)                    */

/** kubecontainer.Container: a container or a sandbox in a runtime pod. */
struct kc_container {
        const char *id;
        const char *name;
        const char *image;
        uint64_t hash;
        enum kc_container_state state;
        int64_t created_at; /* ns since epoch */
};

/** kubecontainer.Pod. Immutable once built; share it with kc_pod_ref(). */
struct kc_pod {
        const char *id; /* pod UID */
        const char *name;
        const char *namespace;
        int64_t created_at;
        const struct kc_container *containers;
        size_t n_containers;
        const struct kc_container *sandboxes; /* represented as containers */
        size_t n_sandboxes;
};

/**
 * @brief Deep-copies @p tmpl (whose pointers are borrowed) into one new
 * reference-counted allocation. NULL strings stay NULL.
 */
int kc_pod_new(const struct kc_pod *tmpl, struct kc_pod **ret);
struct kc_pod *kc_pod_ref(struct kc_pod *p);
/** Drops a reference; frees on the last one. NULL-safe; returns NULL. */
struct kc_pod *kc_pod_unref(struct kc_pod *p);
KC_DEFINE_CLEANUP_FUNC(struct kc_pod, kc_pod_unref)

/** A list of pod references; kc_pod_list_done() drops them. */
struct kc_pod_list {
        struct kc_pod **pods;
        size_t n;
};
void kc_pod_list_done(struct kc_pod_list *l);

/** kubecontainer.Status */
struct kc_container_status {
        const char *id;
        const char *name;
        enum kc_container_state state;
        int32_t exit_code;
        int64_t created_at;
        int64_t started_at;
        int64_t finished_at;
        int32_t restart_count; /* CRI metadata attempt */
        uint64_t hash;
        const char *image;
        const char *image_ref;
        const char *reason;
        const char *message;
};

/** The parts of a CRI PodSandboxStatus the kubelet keeps in PodStatus. */
struct kc_sandbox_status {
        const char *id;
        const char *name;
        const char *namespace;
        const char *uid;
        uint32_t attempt;
        enum kc_sandbox_state state;
        int64_t created_at;
        const char *ip; /* primary IP, may be NULL */
};

/** kubecontainer.PodStatus. Immutable once built; share with kc_pod_status_ref(). */
struct kc_pod_status {
        const char *id;
        const char *name;
        const char *namespace;
        const char *const *ips;
        size_t n_ips;
        const struct kc_sandbox_status *sandboxes;
        size_t n_sandboxes;
        const struct kc_container_status *containers;
        size_t n_containers;
        int64_t timestamp; /* runtime-provided; 0 when unset */
};

/** Deep-copies @p tmpl (borrowed pointers) into one reference-counted allocation. */
int kc_pod_status_new(const struct kc_pod_status *tmpl, struct kc_pod_status **ret);
/** A status with only the pod UID set (what cache.Get returns on a miss). */
int kc_pod_status_new_default(const char *uid, struct kc_pod_status **ret);
struct kc_pod_status *kc_pod_status_ref(struct kc_pod_status *s);
struct kc_pod_status *kc_pod_status_unref(struct kc_pod_status *s);
KC_DEFINE_CLEANUP_FUNC(struct kc_pod_status, kc_pod_status_unref)
/** Deep equality (NULL == NULL). */
bool kc_pod_status_equal(const struct kc_pod_status *a, const struct kc_pod_status *b);

/* ------------------------------------------------------------------------ */
/* The API pod (the parts of a v1.Pod the sync core reads)                    */

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
};

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

/* ------------------------------------------------------------------------ */
/* kubecontainer-level runtime interface (what PLEG uses)                     */

struct kc_pod_runtime_ops {
        /**
         * GetPods(all): pods built from sandboxes and containers. With
         * @p all false only running containers and ready sandboxes count.
         */
        int (*get_pods)(void *self, bool all, struct kc_pod_list *ret,
                        struct kc_runtime_error *err);
        /**
         * GetPodStatus. Exception to the out-parameter rule, as upstream: on
         * failure *ret may still be set to a partial status (to be unref'd by
         * the caller), which PLEG caches together with the error.
         */
        int (*get_pod_status)(void *self, const char *uid, const char *name, const char *namespace,
                              struct kc_pod_status **ret, struct kc_runtime_error *err);
        /**
         * RemovePodSandbox, for the kubelet's container garbage collection:
         * removes a sandbox and every container in it. A sandbox already gone
         * is not an error. May be NULL (nothing is ever removed then).
         */
        int (*remove_pod_sandbox)(void *self, const char *id, struct kc_runtime_error *err);
};

struct kc_pod_runtime {
        const struct kc_pod_runtime_ops *ops;
        void *self;
};

/* ------------------------------------------------------------------------ */
/* Runtime service (CRI-shaped)                                               */

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
};

/** Filters: NULL/-1 fields match everything; labels must all match. */
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

/** Results of list/status calls live in one arena; kc_runtime_result_done frees it. */
struct kc_pod_sandbox_list {
        struct kc_pod_sandbox *items;
        size_t n;
        struct kc_arena *arena;
};
struct kc_container_list {
        struct kc_cri_container *items;
        size_t n;
        struct kc_arena *arena;
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

/** What RunPodSandbox needs (CRI PodSandboxConfig, the fields we use). */
struct kc_pod_sandbox_config {
        struct kc_pod_sandbox_metadata metadata;
        const char *hostname;
        const char *log_directory;
        bool host_network;
        const struct kc_label *labels;
        size_t n_labels;
        const struct kc_label *annotations;
        size_t n_annotations;
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
        const char *log_path;
        const struct kc_label *labels;
        size_t n_labels;
        const struct kc_label *annotations;
        size_t n_annotations;
};

/** CRI Image (ImageStatus), the fields we use. */
struct kc_image {
        const char *id; /* "sha256:<hex>" */
        const char *const *repo_tags;
        size_t n_repo_tags;
        const char *const *repo_digests;
        size_t n_repo_digests;
        uint64_t size; /* bytes */
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

/* ------------------------------------------------------------------------ */
/* Runtime manager (kubeGenericRuntimeManager)                                */

struct kc_runtime_manager;

/** @p svc is borrowed and must outlive the manager. */
int kc_runtime_manager_new(struct kc_runtime_service svc, struct kc_clock *clock,
                           struct kc_runtime_manager **ret);
struct kc_runtime_manager *kc_runtime_manager_free(struct kc_runtime_manager *m);
KC_DEFINE_CLEANUP_FUNC(struct kc_runtime_manager, kc_runtime_manager_free)

/**
 * GetPods(all): ListPodSandbox + ListContainers, grouped by the pod-UID
 * label, sorted by CreatedAt descending (upstream).
 */
int kc_runtime_manager_get_pods(struct kc_runtime_manager *m, bool all, struct kc_pod_list *ret,
                                struct kc_runtime_error *err);
/**
 * GetPodStatus: the pod's sandboxes (newest first) with their statuses, IPs
 * from the newest sandbox when it is READY, and the statuses of all the
 * pod's containers (newest first).
 */
int kc_runtime_manager_get_pod_status(struct kc_runtime_manager *m, const char *uid,
                                      const char *name, const char *namespace,
                                      struct kc_pod_status **ret, struct kc_runtime_error *err);
/** The manager as a kc_pod_runtime (for PLEG). */
struct kc_pod_runtime kc_runtime_manager_pod_runtime(struct kc_runtime_manager *m);

/* ------------------------------------------------------------------------ */
/* Simulated runtime (runtime/sim)                                            */

struct kc_sim;

int kc_sim_new(struct kc_clock *clock, struct kc_sim **ret);
struct kc_sim *kc_sim_free(struct kc_sim *s);
KC_DEFINE_CLEANUP_FUNC(struct kc_sim, kc_sim_free)

/** The CRI-shaped face. Valid while the sim lives. */
struct kc_runtime_service kc_sim_service(struct kc_sim *s);
/** The kubecontainer-level face (GetPods/GetPodStatus), like upstream FakeRuntime. */
struct kc_pod_runtime kc_sim_pod_runtime(struct kc_sim *s);

/** A container or sandbox in a snapshot handed to kc_sim_set_pods(). */
struct kc_sim_container_spec {
        const char *id;
        const char *name;
        enum kc_container_state state; /* sandboxes: RUNNING means READY */
        int32_t exit_code;
};

struct kc_sim_pod_spec {
        const char *id;
        const char *name;
        const char *namespace;
        const char *const *ips;
        size_t n_ips;
        const struct kc_sim_container_spec *containers;
        size_t n_containers;
        const struct kc_sim_container_spec *sandboxes;
        size_t n_sandboxes;
};

/**
 * Replaces the whole simulated state with @p pods (copied). Pods are listed
 * by the kubecontainer face in this order.
 */
int kc_sim_set_pods(struct kc_sim *s, const struct kc_sim_pod_spec *pods, size_t n);

/**
 * @brief Images: the sim keeps a store of pulled images. PullImage "pulls"
 * at once and records the image under its reference with the default tag
 * applied ("busybox" is "busybox:latest", no registry normalisation) and a
 * stable id, "sha256:" + 64 hex digits of a hash of that reference. It fails
 * with NOT_FOUND (-ENOENT), as a registry would, when the repository path
 * (the name without registry, tag and digest) contains "doesnotexist" or
 * "invalid", and with INVALID_ARGUMENT (-EINVAL) for a malformed reference.
 * ImageStatus finds an image by reference or id. CreateContainer fails with
 * NOT_FOUND unless ImageSpec.image names a stored image, and records the
 * image's id as image_ref and user_specified_image (else image) as image.
 *
 * kc_sim_add_image() preloads @p image as if pulled (no call counted, no
 * fault consumed; the "doesnotexist" rule does not apply).
 * @return 0, -EINVAL (NULL or malformed reference) or -ENOMEM.
 */
int kc_sim_add_image(struct kc_sim *s, const char *image);

/**
 * What Status reports as NetworkReady (initially true): false models a node
 * whose CNI is not ready yet, with @p reason and @p message (copied,
 * truncated to 63 and 255 bytes; NULL means "").
 */
int kc_sim_set_network_ready(struct kc_sim *s, bool ready, const char *reason, const char *message);

/**
 * Fault injection: the next @p times calls of operation @p op fail with
 * @p message (code UNKNOWN). @p key narrows it to one pod UID (for
 * GetPodStatus), object id or image (ImageStatus, PullImage: the reference
 * as passed); NULL matches any call. Operation names are upstream's:
 * GetPods, GetPodStatus (kubecontainer face) and the CRI method names
 * (ListPodSandbox, ContainerStatus, ImageStatus, PullImage, ...) of the
 * service face.
 */
int kc_sim_inject_fault(struct kc_sim *s, const char *op, const char *key, const char *message,
                        unsigned times);

/**
 * Latency injection: the next @p times calls of operation @p op (matched
 * by @p key as kc_sim_inject_fault() does) sleep @p delay_ns on the sim's
 * clock before they run, as a slow runtime would answer. The sim's lock is
 * not held while a call sleeps: other calls go on meanwhile. On a fake
 * clock the caller stays blocked until the driver advances the clock past
 * the delay (kc_sim_get_stats() counts the calls asleep); no call may be
 * asleep when the sim is freed. A spike and a fault may both match one
 * call: it sleeps, then fails.
 * @return 0, -EINVAL (NULL op, times or delay_ns not > 0, unknown op) or
 * -ENOMEM.
 */
int kc_sim_inject_latency(struct kc_sim *s, const char *op, const char *key, int64_t delay_ns,
                          unsigned times);

/** Drops every pending injected fault and latency spike (calls asleep stay asleep). */
void kc_sim_clear_faults(struct kc_sim *s);

/**
 * A crash: every running container named @p name (NULL: any) of pod
 * @p pod_uid exits now with @p exit_code (reason "Error", or "Completed"
 * for 0), as if its process died. Exits due by the clock happen first.
 * @return the number of containers that exited (0: none was running),
 * -ENOENT (no such pod) or -EINVAL.
 */
int kc_sim_crash_container(struct kc_sim *s, const char *pod_uid, const char *name,
                           int32_t exit_code);

/** Counters for fault-injection drivers (kc_sim_get_stats()). */
struct kc_sim_stats {
        uint64_t calls;        /* every call so far, all ops */
        unsigned delayed_now;  /* calls asleep in an injected latency right now */
        size_t faults_pending; /* injected faults not used up yet */
        size_t delays_pending; /* injected latency spikes not used up yet */
        uint64_t faults_taken; /* calls failed by an injected fault */
        uint64_t delays_taken; /* calls delayed by an injected latency */
        uint64_t crashes;      /* containers exited through kc_sim_crash_container() */
};
/** A consistent snapshot. @return 0 or -EINVAL. */
int kc_sim_get_stats(struct kc_sim *s, struct kc_sim_stats *ret);

/** Cumulative call counts per (op, key). Key is the pod UID for GetPodStatus, "" otherwise. */
struct kc_sim_call_count {
        const char *op;
        const char *key;
        uint64_t count;
};
/** A malloc'd snapshot (strings inside the same block), sorted by op then key. */
int kc_sim_call_counts(struct kc_sim *s, struct kc_sim_call_count **ret, size_t *ret_n);

/* ------------------------------------------------------------------------ */
/* Pod actions: the decision half of SyncPod (kuberuntime_manager.go)         */

/*
 * Reasons of a failed container start (upstream kubecontainer and images
 * error names); they become the waiting state's reason in the pod status.
 */
/** ErrCrashLoopBackOff's reason string (kubecontainer.ErrCrashLoopBackOff). */
#define KC_CRASH_LOOP_BACK_OFF_REASON "CrashLoopBackOff"
#define KC_IMAGE_PULL_BACK_OFF_REASON "ImagePullBackOff"
#define KC_ERR_IMAGE_PULL_REASON "ErrImagePull"
#define KC_ERR_IMAGE_NEVER_PULL_REASON "ErrImageNeverPull"
#define KC_ERR_IMAGE_INSPECT_REASON "ImageInspectError"
#define KC_INVALID_IMAGE_NAME_REASON "InvalidImageName"
#define KC_CREATE_CONTAINER_CONFIG_ERROR_REASON "CreateContainerConfigError"
#define KC_CREATE_CONTAINER_ERROR_REASON "CreateContainerError"
#define KC_RUN_CONTAINER_ERROR_REASON "RunContainerError"

/**
 * HashContainer, our own: FNV-1a 64 over name, image, command, args and pull
 * policy (length-prefixed, so field boundaries cannot collide). Stable across
 * runs and builds; used for the io.kubernetes.container.hash annotation, the
 * restart-on-spec-change check and the backoff key. Not upstream-compatible.
 */
uint64_t kc_container_spec_hash(const struct kc_api_container *c);

/** One entry of upstream's podActions.ContainersToKill. */
struct kc_container_to_kill {
        char *id;            /* runtime container ID */
        char *name;          /* container name */
        char *message;       /* why, e.g. "Container foo definition changed, will be restarted" */
        bool init_container; /* container_index refers to pod->init_containers */
        size_t container_index;
};

/** podActions. Owns its strings and arrays; release with kc_pod_actions_done(). */
struct kc_pod_actions {
        bool kill_pod;
        bool create_sandbox;
        char *sandbox_id; /* newest sandbox (also when re-creating, as upstream); NULL if none */
        uint32_t attempt; /* attempt of the sandbox to create/keep */
        int next_init_container_to_start; /* index into pod->init_containers, or -1 */
        size_t *containers_to_start;      /* indices into pod->containers, ascending */
        size_t n_containers_to_start;
        struct kc_container_to_kill *containers_to_kill;
        size_t n_containers_to_kill;
        char *message; /* why the pod-level decision was taken (never NULL on success) */
};

void kc_pod_actions_done(struct kc_pod_actions *a);

/**
 * @brief computePodActions (non-sidecar init path). Statuses are matched by
 * name, newest first. The sandbox is re-created when there is none, the
 * newest is not READY, or several are READY; the network-namespace and
 * missing-IP checks of PodSandboxChanged are not done (the status has no
 * namespace mode and cannot tell "no network status" from "no IP").
 * Deliberate deviation: on sandbox (re-)creation with restartPolicy Never
 * (reachable only when no sandbox is left: any existing sandbox with
 * container statuses makes it "kill only", as upstream), containers that
 * already exited are not started again; upstream would start them.
 * @return 0, -EINVAL or -ENOMEM (then *ret is zeroed with next init = -1).
 */
int kc_compute_pod_actions(const struct kc_api_pod *pod, const struct kc_pod_status *status,
                           struct kc_pod_actions *ret);

/**
 * @brief doBackOff: key "<pod>_<ns>_<uid>_<container>_<spec hash hex>"; the
 * first exited status named like @p c gives ts = finished_at. In backoff
 * since ts → -EAGAIN (ErrCrashLoopBackOff) and *ret_msg = "back-off <d>
 * restarting failed container=<name> pod=<pod>_<ns>(<uid>)"; otherwise
 * Next(key, ts) and 0 (also when no exited status exists: the first crash
 * restarts at once). @p now_ns is informational: as upstream, the backoff's
 * own clock decides. *ret_msg (may be NULL) is set to NULL unless -EAGAIN.
 * @return 0, -EAGAIN, -EINVAL or -ENOMEM.
 */
int kc_do_back_off(struct kc_backoff *b, const struct kc_api_pod *pod,
                   const struct kc_api_container *c, const struct kc_pod_status *status,
                   int64_t now_ns, char **ret_msg);

/* ------------------------------------------------------------------------ */
/* Images (runtime/images.c; upstream pkg/kubelet/images)                     */

/** The kubelet's image pull backoff: 10 s initial (backOffPeriod), 300 s cap (MaxImageBackOff). */
#define KC_IMAGE_BACKOFF_INITIAL_NS (10 * KC_NSEC_PER_SEC)
#define KC_IMAGE_BACKOFF_MAX_NS (300 * KC_NSEC_PER_SEC)

/**
 * @brief applyDefaultImageTag: parses @p image as a container image
 * reference ([registry[:port]/]path[:tag][@digest]: lowercase path
 * components, a registry recognised by a '.' or ':' or as "localhost" or by
 * an uppercase letter, tags of word characters, digests "algo:hex") and
 * appends ":latest" when it has neither tag nor digest.
 * @return 0 and *ret (malloc'd); -EINVAL for NULL, empty or malformed
 * references (whitespace, an uppercase repository, a bare 64-hex id, ...);
 * -ENOMEM. *ret untouched on failure.
 */
int kc_image_apply_default_tag(const char *image, char **ret);

/**
 * @brief EnsureImageExists for container @p c of @p pod: InvalidImageName
 * (-EINVAL) unless the image parses (kc_image_apply_default_tag); then
 * ImageStatus (failure: ImageInspectError); with policy Never a missing
 * image is ErrImageNeverPull (-ENOENT), with IfNotPresent a present one is
 * used as is, with Always (and IfNotPresent when missing) the image is
 * pulled. Before a pull, key "<pod uid>_<c->image>" in @p image_backoff
 * (NULL: never back off) gives ImagePullBackOff (-EAGAIN) while the last
 * failed pull is less than one backoff window old; a failed pull is
 * ErrImagePull (the runtime's -errno and message) and counts Next() for the
 * key; a successful one runs the backoff's GC.
 *
 * Messages (upstream's): ErrImageNeverPull 'Container image "<img>" is not
 * present with pull policy of Never', ImagePullBackOff 'Back-off pulling
 * image "<img>"', ErrImagePull the runtime's message, ImageInspectError
 * 'Failed to inspect image "<img>": <runtime message>', InvalidImageName
 * 'Failed to apply default image tag "<img>": couldn't parse image reference
 * "<img>": invalid reference format'.
 *
 * Exception to the out-parameter rule: on failure *ret_reason (a static
 * KC_*_REASON string) and *ret_msg (malloc'd, may be NULL on ENOMEM) are
 * set, *ret_image_ref is untouched; on success *ret_image_ref (malloc'd)
 * is the image ref (id) and *ret_reason, *ret_msg are NULL. NULL arguments
 * are -EINVAL with no reason (*ret_reason NULL). @p ret_retry_after_ns
 * (may be NULL) is always set: on ImagePullBackOff the time left in the
 * window (last failed pull + backoff - now, >= 0), else -1.
 * Same thread contract as the runtime service; @p image_backoff is
 * thread-safe.
 * @return 0, -EAGAIN, -EINVAL, -ENOENT, -ENOMEM or a runtime call's -errno.
 */
int kc_ensure_image_exists(struct kc_runtime_service svc, struct kc_backoff *image_backoff,
                           const struct kc_api_pod *pod, const struct kc_api_container *c,
                           const struct kc_pod_sandbox_config *sandbox_config, char **ret_image_ref,
                           const char **ret_reason, char **ret_msg, int64_t *ret_retry_after_ns);

/* ------------------------------------------------------------------------ */
/* SyncPod and KillPod: the acting half (runtime/sync_pod.c)                  */

/** KillPod raises any smaller grace period to this (minimumGracePeriodInSeconds). */
#define KC_MINIMUM_GRACE_PERIOD_S 2

/** The runtime service the manager was built on (borrowed). */
struct kc_runtime_service kc_runtime_manager_service(struct kc_runtime_manager *m);

/** kubelet's podLogsRootDirectory. */
#define KC_POD_LOGS_ROOT "/var/log/pods"

/**
 * @brief Sets podLogsRootDirectory (absolute; copied): SyncPod then creates
 * the pod's log directory "<dir>/<ns>_<name>_<uid>" (0755) before
 * RunPodSandbox and "<that>/<container>" before CreateContainer, as the
 * kubelet does, because a real runtime writes the container logs there.
 * NULL (the default) creates nothing: the simulated runtime writes no logs.
 * Not concurrently with SyncPod. @return 0, -EINVAL, -ENOMEM.
 */
int kc_runtime_manager_set_pod_logs_root(struct kc_runtime_manager *m, const char *dir);

/** One StartContainer action's outcome (a kubecontainer SyncResult). */
struct kc_start_result {
        const char *container_name;
        bool init_container;
        int r;               /* 0 on success, else a negative errno */
        const char *reason;  /* NULL on success: "CrashLoopBackOff", "ErrImagePull", ... */
        const char *message; /* NULL on success; may be NULL on ENOMEM */
        /*
         * CrashLoopBackOff, ImagePullBackOff: clock time until the back-off
         * window ends (>= 0), after which a sync may start the container;
         * -1 for success and every other failure.
         */
        int64_t retry_after_ns;
};

/** Receives each start result; the strings are valid during the call only. */
typedef void (*kc_start_result_fn)(void *userdata, const struct kc_start_result *res);

struct kc_sync_pod_options {
        struct kc_backoff *backoff;       /* restart backoff; NULL: never back off */
        struct kc_backoff *image_backoff; /* image pull backoff; NULL: never back off */
        struct kc_cancel *ctx;            /* checked before each runtime call; may be NULL */
        /* May be NULL; called on the calling thread for every start attempted. */
        kc_start_result_fn on_start_result;
        void *userdata;
};

/**
 * @brief SyncPod (kuberuntime_manager.go), steps 1-4, 6 and 8 (F-SYNC-02):
 * kc_compute_pod_actions; KillPod (grace from the pod: deletion grace, else
 * spec termination grace, else 30 s) or stop containers_to_kill; RunPodSandbox
 * when asked (metadata, io.kubernetes.pod.* labels plus the pod labels, the
 * pod annotations, hostname = pod name (none for host-network pods), log directory
 * "/var/log/pods/<ns>_<name>_<uid>", host_network); then the next init
 * container (and nothing else, as upstream), else every container to start.
 * Each start (startContainer): doBackOff (CrashLoopBackOff), then
 * kc_ensure_image_exists (ImagePullBackOff, ErrImagePull, ErrImageNeverPull,
 * ImageInspectError, InvalidImageName), CreateContainer (image = the image
 * ref, user_specified_image = the spec's image; attempt = newest status'
 * restart count + 1, or 0; log path "<name>/<attempt>.log"; container
 * labels; hash and restartCount annotations; failure CreateContainerError),
 * StartContainer (failure RunContainerError). Each start attempted is
 * reported through opts->on_start_result, success included; a failed start
 * does not stop the other app containers. A start cut short by @p ctx is
 * reported with r = -ECANCELED and the reason of the step it did not run.
 * Not done: pruning and purging init containers, ephemeral containers,
 * resize, post-start hooks, the "network is not ready" check, image pull
 * secrets.
 * Thread contract: any thread; concurrent calls for different pods are
 * safe, for the same pod they are not (the pod worker serialises them).
 * @param status the pod's current runtime status (NULL: none known).
 * @param opts may be NULL (no backoffs, no context, no callback).
 * @param ret_err (may be NULL) on failure the first error's message,
 *        malloc'd, for the worker's log: "<reason>: <message>" for
 *        CrashLoopBackOff and ImagePullBackOff ("CrashLoopBackOff: back-off
 *        10s restarting failed container=<c> pod=<name>_<ns>(<uid>)"), for
 *        other start failures upstream's SyncResult shape
 *        'failed to "StartContainer" for "<c>" with <reason>: <message>'.
 * @return 0; the first error: -ECANCELED (ctx), -EAGAIN (CrashLoopBackOff,
 *         ImagePullBackOff), a runtime call's -errno, -EINVAL or -ENOMEM.
 */
int kc_runtime_manager_sync_pod(struct kc_runtime_manager *m, const struct kc_api_pod *pod,
                                const struct kc_pod_status *status,
                                const struct kc_sync_pod_options *opts, char **ret_err);

/**
 * @brief KillPod: @p grace_s below 2 s is raised to 2 s; StopContainer(timeout
 * = grace) for every container of @p running_pod (sequentially; upstream runs
 * them in parallel), then StopPodSandbox for each of its sandboxes. With
 * @p running_pod NULL the pod's running containers and all its sandboxes
 * are listed through the service by the io.kubernetes.pod.uid label of
 * @p pod. Errors do not stop the other calls; the first is returned.
 * @param pod may be NULL when @p running_pod is given.
 * @return 0, -ECANCELED, the first runtime call's -errno, -EINVAL, -ENOMEM.
 */
int kc_runtime_manager_kill_pod(struct kc_runtime_manager *m, const struct kc_api_pod *pod,
                                const struct kc_pod *running_pod, int64_t grace_s,
                                struct kc_cancel *ctx, char **ret_err);

/* ------------------------------------------------------------------------ */
/* CRI client (runtime/cri): the runtime service over gRPC (runtime.v1)      */

/** kubelet's --runtime-request-timeout default. */
#define KC_CRI_DEFAULT_REQUEST_TIMEOUT_NS (2 * KC_NSEC_PER_MIN)

struct kc_cri;

/**
 * @brief A CRI client for @p endpoint ("unix:///run/containerd/containerd.sock";
 * a bare absolute path is accepted too). Every call gets the deadline
 * @p request_timeout_ns (> 0); StopContainer gets its timeout plus that.
 * Does not connect yet. *ret unchanged on failure.
 * @return 0, -EINVAL (not a unix endpoint), -ENAMETOOLONG, -ENOMEM.
 */
int kc_cri_new(const char *endpoint, int64_t request_timeout_ns, struct kc_cri **ret);
/** Ends every call in flight (CANCELLED) and frees the client. NULL-safe; returns NULL. */
struct kc_cri *kc_cri_free(struct kc_cri *c);
KC_DEFINE_CLEANUP_FUNC(struct kc_cri, kc_cri_free)

/**
 * Ends every call in flight (CANCELLED) and makes later calls fail at once,
 * before kc_cri_free(): a daemon stopping while the runtime hangs does not
 * wait for its threads' call deadlines. Idempotent; any thread.
 */
void kc_cri_shutdown(struct kc_cri *c);

/** The runtime-service face. Valid while the client lives. Any thread. */
struct kc_runtime_service kc_cri_service(struct kc_cri *c);

/** The socket path the client connects to (from the endpoint). Valid while the client lives. */
const char *kc_cri_socket_path(const struct kc_cri *c);

/** CRI ContainerEventType. */
enum kc_container_event_type {
        KC_CONTAINER_EVENT_CREATED,
        KC_CONTAINER_EVENT_STARTED,
        KC_CONTAINER_EVENT_STOPPED,
        KC_CONTAINER_EVENT_DELETED,
        _KC_CONTAINER_EVENT_TYPE_MAX,
        _KC_CONTAINER_EVENT_TYPE_INVALID = -EINVAL,
};

/** "CONTAINER_CREATED_EVENT", ... (CRI names); NULL when out of range. */
const char *kc_container_event_type_to_string(enum kc_container_event_type t);

/**
 * One GetContainerEvents message (CRI ContainerEventResponse). Every pointer
 * is valid during the on_event call only.
 */
struct kc_container_event {
        const char *container_id;
        enum kc_container_event_type type;
        int64_t created_at; /* ns since the epoch */
        /* From the event's sandbox status; all NULL when it carries none. */
        const char *pod_sandbox_id;
        const char *pod_uid;
        const char *pod_name;
        const char *pod_namespace;
        const struct kc_pod_sandbox *sandbox; /* the whole sandbox status, or NULL */
        /* The statuses of the pod's containers (pod_sandbox_id NULL in each). */
        const struct kc_cri_container *containers;
        size_t n_containers;
};

struct kc_cri_events;

/**
 * @brief Opens the GetContainerEvents stream (a server-streaming call, no
 * deadline). @p on_event runs for each event and @p on_close exactly once
 * when the stream ends, both on the client's I/O thread (they must not
 * block nor call kc_cri_events_close()):
 * - the server ended it: 0 after grpc-status OK, else its status (containerd
 *   1.6: UNIMPLEMENTED, -EOPNOTSUPP, at once);
 * - the connection dropped: UNAVAILABLE (-ECONNREFUSED);
 * - a message did not decode: INTERNAL "failed to decode GetContainerEvents
 *   response" (-EPROTO); nothing more is delivered after it;
 * - kc_cri_events_close(): CANCELLED (-ECANCELED), unless it already ran.
 * Events of a type this client does not know are skipped. @p on_close may
 * be NULL.
 * @return 0 and *ret (to be closed with kc_cri_events_close() in every case,
 * even after on_close), or a negative errno with @p err filled when the
 * stream could not be opened (then no callback runs and *ret is untouched).
 */
int kc_cri_get_container_events(struct kc_cri *c,
                                void (*on_event)(void *ud, const struct kc_container_event *ev),
                                void (*on_close)(void *ud, int r,
                                                 const struct kc_runtime_error *err),
                                void *ud, struct kc_cri_events **ret, struct kc_runtime_error *err);

/**
 * @brief Cancels the stream if still open, waits until none of its callbacks
 * runs any more, and frees it. Any thread but the client's I/O thread (not
 * from a callback). Before kc_cri_free(). NULL-safe; returns NULL.
 */
struct kc_cri_events *kc_cri_events_close(struct kc_cri_events *e);
KC_DEFINE_CLEANUP_FUNC(struct kc_cri_events, kc_cri_events_close)

/**
 * Where CRI container events come from (GetContainerEvents). The CRI client
 * implements it (kc_cri_event_source()); tests and pleg-replay fake it.
 */
struct kc_container_event_source_ops {
        /**
         * Opens one stream. @p on_event runs for each event and @p on_close
         * exactly once when the stream ends (r = 0 or -errno, @p err says why),
         * on the source's own thread: both must not block (EventedPLEG copies
         * the event into its buffer). Returns 0 and *ret_handle, or -errno with
         * @p err filled when the stream cannot be opened (no callback runs then).
         */
        int (*open)(void *self, void (*on_event)(void *ud, const struct kc_container_event *ev),
                    void (*on_close)(void *ud, int r, const struct kc_runtime_error *err), void *ud,
                    void **ret_handle, struct kc_runtime_error *err);
        /** Closes a handle from open(): no callback runs once this returns. */
        void (*close)(void *self, void *handle);
};

struct kc_container_event_source {
        const struct kc_container_event_source_ops *ops;
        void *self;
};

/** GetContainerEvents as EventedPLEG's event source. Valid while @p c lives. */
struct kc_container_event_source kc_cri_event_source(struct kc_cri *c);
