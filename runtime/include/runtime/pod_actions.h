/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file runtime/pod_actions.h
 * @brief Pod actions: the decision half of SyncPod (computePodActions).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kc_api_container;
struct kc_api_pod;
struct kc_backoff;
struct kc_pod_status;

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
/** ErrPostStartHook: the postStart hook failed and the container was killed. */
#define KC_POST_START_HOOK_ERROR_REASON "PostStartHookError"

/**
 * HashContainer, our own: FNV-1a 64 over name, image, command, args and pull
 * policy (length-prefixed, so field boundaries cannot collide). Stable across
 * runs and builds; used for the io.kubernetes.container.hash annotation, the
 * restart-on-spec-change check and the backoff key. Not upstream-compatible.
 */
uint64_t kc_container_spec_hash(const struct kc_api_container *c);

/** Why a running container is killed (upstream containerKillReason, the probe ones). */
enum kc_kill_reason {
        KC_KILL_REASON_NONE = 0,
        KC_KILL_REASON_LIVENESS_PROBE, /* killContainer then uses the liveness probe's grace */
        KC_KILL_REASON_STARTUP_PROBE,  /* ... the startup probe's */
};

/** One entry of upstream's podActions.ContainersToKill. */
struct kc_container_to_kill {
        char *id;      /* runtime container ID */
        char *name;    /* container name */
        char *message; /* why, e.g. "Container foo definition changed, will be restarted" */
        enum kc_kill_reason reason;
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
        /*
         * The sidecar path (a pod with a restartable init container,
         * KEP-753): upstream's InitContainersToStart, indices into
         * pod->init_containers in spec order. next_init_container_to_start
         * stays -1 on that path.
         */
        size_t *init_containers_to_start;
        size_t n_init_containers_to_start;
        size_t *containers_to_start; /* indices into pod->containers, ascending */
        size_t n_containers_to_start;
        struct kc_container_to_kill *containers_to_kill;
        size_t n_containers_to_kill;
        char *message; /* why the pod-level decision was taken (never NULL on success) */
};

void kc_pod_actions_done(struct kc_pod_actions *a);

/** IsRestartableInitContainer: an init container with restartPolicy Always (a sidecar). */
bool kc_is_restartable_init_container(const struct kc_api_container *c);

/** HasRestartableInitContainer. */
bool kc_pod_has_restartable_init_container(const struct kc_api_pod *pod);

/**
 * @brief computePodActions. A pod without a restartable init container
 * takes the findNextInitContainerToRun path (one init container at a time,
 * next_init_container_to_start); a pod with one takes the SidecarContainers
 * path, computeInitContainerActions (init_containers_to_start: the next
 * init container once the previous one exited 0 or, for a sidecar, runs;
 * every exited, unknown or changed sidecar again; app containers only once
 * the last init container is done or running). With nothing to keep or
 * start the pod is killed and no sidecar restarted. Statuses are matched by
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
 * The probe results computePodActions reads (upstream's livenessManager
 * and startupManager); the kubelet implements it over the prober manager.
 */
enum kc_probe_verdict {
        KC_PROBE_VERDICT_NONE = 0, /* no result cached (not probed yet) */
        KC_PROBE_VERDICT_SUCCESS,
        KC_PROBE_VERDICT_FAILURE,
        KC_PROBE_VERDICT_UNKNOWN,
};
struct kc_probe_results_view {
        /**
         * Any thread: the cached liveness result (@p startup false) or
         * startup result of container @p container_id (the runtime's ID).
         */
        enum kc_probe_verdict (*get)(void *self, const char *container_id, bool startup);
        void *self;
};

/**
 * @brief kc_compute_pod_actions() that also kills a running app container
 * whose spec is unchanged but whose liveness, else startup, result is
 * Failure: "Container <name> failed liveness probe" (or "startup probe"),
 * reason KC_KILL_REASON_LIVENESS_PROBE (STARTUP_PROBE), plus ", will be
 * restarted" and a start when the restart policy is not Never (otherwise
 * it is not kept, so a pod with nothing left to keep is killed).
 * A running sidecar (restartable init container) with a startup probe
 * counts as started only once its startup result is Success (no result
 * yet: wait; Failure: "Init container <name> failed startup probe", killed
 * and started again); one whose liveness result is Failure is killed and
 * started again ("Init container <name> failed liveness probe").
 * @p probes may be NULL (no probe results: kc_compute_pod_actions()).
 */
int kc_compute_pod_actions_probed(const struct kc_api_pod *pod, const struct kc_pod_status *status,
                                  const struct kc_probe_results_view *probes,
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
