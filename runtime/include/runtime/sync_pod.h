/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file runtime/sync_pod.h
 * @brief SyncPod and KillPod: the acting half of the runtime manager.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/runtime_service.h"

struct kc_api_pod;
struct kc_backoff;
struct kc_cancel;
struct kc_pod;
struct kc_pod_status;
struct kc_runtime_manager;

/** KillPod raises any smaller grace period to this (minimumGracePeriodInSeconds). */
#define KC_MINIMUM_GRACE_PERIOD_S 2

/** KillPod stops at most this many containers at once (docs/deviations.md D19). */
#define KC_KILL_POD_PARALLELISM 16

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
/** The directory set above, or NULL; owned by @p m. */
const char *kc_runtime_manager_pod_logs_root(const struct kc_runtime_manager *m);

struct kc_runtime_helper;

/**
 * @brief Sets the runtime helper (kubecontainer.RuntimeHelper, copied; its
 * self must outlive the manager): SyncPod then asks it for each
 * container's environment, mounts and hostname
 * (GenerateRunContainerOptions) and for each sandbox's DNS, hostname and
 * domain. NULL (the default) asks nothing: no env, no mounts, the pod name
 * as hostname, the runtime's DNS. Not concurrently with SyncPod.
 * @return 0 or -EINVAL.
 */
int kc_runtime_manager_set_runtime_helper(struct kc_runtime_manager *m,
                                          const struct kc_runtime_helper *helper);

/**
 * @brief Sets what generateContainerConfig reads of the machine: the node's
 * memory in bytes (cadvisor's MemoryCapacity, for Burstable containers'
 * oom_score_adj; 0: unknown, which gives 999) and the kubelet's root
 * directory (absolute; Localhost seccomp profiles live in <root>/seccomp;
 * NULL: /var/lib/kubelet), and the host's huge page sizes, read from
 * @p hugepages_dir (NULL: /sys/kernel/mm/hugepages; each container gets a
 * limit for every size, 0 unless it asks for hugepages-<size>). Not
 * concurrently with SyncPod.
 * @return 0, -EINVAL, -ENOMEM.
 */
int kc_runtime_manager_set_machine(struct kc_runtime_manager *m, int64_t memory_capacity,
                                   const char *root_dir, const char *hugepages_dir);

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

struct kc_kubelet_metrics;
struct kc_probe_results_view;

struct kc_sync_pod_options {
        struct kc_backoff *backoff;       /* restart backoff; NULL: never back off */
        struct kc_backoff *image_backoff; /* image pull backoff; NULL: never back off */
        struct kc_cancel *ctx;            /* checked before each runtime call; may be NULL */
        /* May be NULL; called on the calling thread for every start attempted. */
        kc_start_result_fn on_start_result;
        void *userdata;
        /* May be NULL. Counts kubelet_started_pods_total (each sandbox creation) and
         * _errors_total (failed), kubelet_started_containers_total{container_type}
         * (each start past its back-off) and _errors_total{container_type,code}. */
        struct kc_kubelet_metrics *metrics;
        /*
         * May be NULL: the liveness and startup results computePodActions
         * kills on (kc_compute_pod_actions_probed()). Such a kill uses the
         * probe's terminationGracePeriodSeconds when set, unless the pod is
         * being deleted (its deletion grace then wins, as upstream).
         */
        const struct kc_probe_results_view *probes;
};

/**
 * @brief SyncPod (kuberuntime_manager.go), steps 1-4, 6 and 8 (F-SYNC-02):
 * kc_compute_pod_actions; KillPod (grace from the pod: deletion grace, else
 * spec termination grace, else 30 s) or stop containers_to_kill; RunPodSandbox
 * when asked (metadata, io.kubernetes.pod.* labels plus the pod labels, the
 * pod annotations, log directory "/var/log/pods/<ns>_<name>_<uid>",
 * host_network; the runtime helper's hostname (none for host-network pods;
 * the pod name without a helper) and DNS; every container port; namespaces,
 * sysctls and the pod's security context; no cgroup parent, D40), then
 * PodSandboxStatus for the pod IPs the containers' env sees; then the next init
 * container (and nothing else, as upstream), else every container to start.
 * On the sidecar path (a pod with a restartable init container, KEP-753)
 * step 6 starts every init container the actions list; a sidecar that
 * fails to start does not stop the others, an init container that fails
 * ends the sync.
 * Each start (startContainer): doBackOff (CrashLoopBackOff), then
 * kc_ensure_image_exists (ImagePullBackOff, ErrImagePull, ErrImageNeverPull,
 * ImageInspectError, InvalidImageName), CreateContainer (image = the image
 * ref, user_specified_image = the spec's image; attempt = newest status'
 * restart count + 1, or 0; log path "<name>/<attempt>.log"; container
 * labels; hash and restartCount annotations; the helper's env and mounts,
 * command and args with $(VAR) expanded, workingDir, stdin/tty, Linux
 * resources (shares, quota, memory limit, QoS oom_score_adj) and security
 * context (with the image's user from ImageStatus); a helper failure or
 * runAsNonRoot violation is CreateContainerConfigError; CreateContainer's
 * failure CreateContainerError),
 * StartContainer (failure RunContainerError), then the postStart hook
 * (exec through ExecSync, httpGet, sleep; a failure kills the container,
 * its preStop hook included, and fails the start with PostStartHookError
 * and upstream's message). Each start attempted is
 * reported through opts->on_start_result, success included; a failed start
 * does not stop the other app containers. A start cut short by @p ctx is
 * reported with r = -ECANCELED and the reason of the step it did not run.
 * Not done: pruning and purging init containers, ephemeral containers,
 * resize, the "network is not ready" check, image pull
 * secrets.
 * Thread contract: any thread; concurrent calls for different pods are
 * safe, for the same pod they are not (the pod worker serialises them).
 * @param status the pod's current runtime status (NULL: none known).
 * @param opts may be NULL (no backoffs, no context, no callback).
 * A failed kill in step 3 ends the sync, as upstream.
 * @param ret_err (may be NULL) on failure, malloc'd, upstream's
 *        PodSyncResult.Error() text: each failed action as
 *        'failed to "<action>" for "<target>" with <reason>: "<message>"'
 *        (action StartContainer, KillContainer, KillPodSandbox or
 *        CreatePodSandbox; the message quoted as Go's %q), e.g.
 *        'failed to "StartContainer" for "app" with CrashLoopBackOff:
 *        "back-off 10s restarting failed container=app pod=<name>_<ns>(<uid>)"';
 *        other failures "failed to SyncPod: <what>" or "context canceled".
 *        One failure reads as itself, several as "[<a>, <b>, ...]" in the
 *        order they happened, duplicates once (utilerrors aggregate).
 * @return 0; the first error: -ECANCELED (ctx), -EAGAIN (CrashLoopBackOff,
 *         ImagePullBackOff), a runtime call's -errno, -EINVAL or -ENOMEM.
 */
int kc_runtime_manager_sync_pod(struct kc_runtime_manager *m, const struct kc_api_pod *pod,
                                const struct kc_pod_status *status,
                                const struct kc_sync_pod_options *opts, char **ret_err);

/**
 * @brief KillPod (killPodWithSyncResult): for every container of
 * @p running_pod its preStop hook when @p pod has one (bounded by the
 * grace, its whole seconds taken off it), then StopContainer(timeout =
 * what is left, at least 2 s); the app containers all at once, then the
 * sidecars of @p pod from the last to the first, each with what is left
 * of the grace (D44) (at most KC_KILL_POD_PARALLELISM calls in
 * flight, D19; each call has its own deadline, grace + the runtime
 * request timeout), and once every one has returned StopPodSandbox for
 * each of its sandboxes. With @p running_pod NULL the pod's running
 * containers and all its sandboxes are listed through the service by the
 * io.kubernetes.pod.uid label of @p pod. A container or sandbox the
 * runtime answers NOT_FOUND for counts as stopped. Errors do not stop the
 * other calls; the first is returned, and *@p ret_err holds every one in
 * the PodSyncResult text kc_runtime_manager_sync_pod() describes
 * (KillContainer for the container's name, KillPodSandbox for the pod UID).
 * Thread contract: blocks the caller until every stop returned; the
 * service must accept concurrent calls (the sim and the CRI client do).
 * @param pod may be NULL when @p running_pod is given.
 * @return 0, -ECANCELED, the first runtime call's -errno, -EINVAL, -ENOMEM.
 */
int kc_runtime_manager_kill_pod(struct kc_runtime_manager *m, const struct kc_api_pod *pod,
                                const struct kc_pod *running_pod, int64_t grace_s,
                                struct kc_cancel *ctx, char **ret_err);
