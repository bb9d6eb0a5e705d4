/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kubelet/status/pod_status.h
 * @brief v1.PodStatus generation: getPhase, container statuses, conditions, the v1 Pod document.
 */
#pragma once

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/api_pod.h"

struct kc_pod_status;
struct kc_reason_cache;

/** Room for kc_format_rfc3339(): "2026-11-21T10:00:00Z" and its NUL. */
#define KC_RFC3339_MAX 32

/**
 * @brief Formats @p ns (since the Unix epoch) as RFC 3339 UTC with second
 * precision, the way metav1.Time serialises ("2026-11-21T10:00:00Z";
 * sub-second parts are truncated toward the past).
 * @return 0, or -ERANGE when the year is outside 0000..9999 (Go refuses to
 * marshal those; int64 nanoseconds only span 1677..2262, so this is a
 * safety net); @p buf unchanged on failure.
 */
int kc_format_rfc3339(int64_t ns, char buf[static KC_RFC3339_MAX]);

/**
 * @brief getPhase (non-sidecar init containers): the pod phase implied by
 * the runtime @p status (NULL: no status) for @p pod's spec.
 *
 * Each spec container is judged by its NEWEST status (statuses in
 * kc_pod_status are newest first) as convertToAPIContainerStatuses shows
 * it: running → running; exited → terminated; created/unknown → waiting,
 * "stopped" when the second newest instance exited (lastState terminated);
 * no status at all → waiting. Init containers: running, waiting without a
 * previous exit, or no status → pending; exited non-zero (or waiting after
 * a non-zero exit) → failed. Then, in order: failed init and restartPolicy
 * Never → Failed; pending init with no app container started, or any app
 * container waiting → Pending; any running → Running; all app containers
 * stopped: with @p pod_is_terminal and not a static pod → Succeeded when all
 * exited 0, else Failed; otherwise Always → Running, all exited 0 →
 * Succeeded, Never → Failed, OnFailure → Running. No app container at all →
 * Pending.
 *
 * This is the phase without reason-cache entries: kc_generate_api_pod_status()
 * also turns an exited container due for restart into "waiting" when the
 * reason cache names a failure, which only matters for @p pod_is_terminal
 * pods (an exited-0 container then counts as stopped, not succeeded).
 * Any thread; no allocation.
 * @return the phase, or _KC_POD_PHASE_INVALID when @p pod is NULL.
 */
enum kc_pod_phase kc_pod_get_phase(const struct kc_api_pod *pod, const struct kc_pod_status *status,
                                   bool pod_is_terminal);

/**
 * @brief generateAPIPodStatus: builds the v1.PodStatus JSON of @p pod from its
 * runtime @p status (NULL: no runtime status yet).
 *
 * Output object, keys in v1 order (empty optional fields omitted):
 * - "phase": getPhase over the container statuses below (see
 *   kc_pod_get_phase()). A terminal phase in @p old_status, or in
 *   @p pod->phase, is never left (upstream's three-way merge and its
 *   "illegal phase transition" guard).
 * - "conditions": PodReadyToStartContainers (True when the newest sandbox
 *   is READY and no other one is, the same test as kc_compute_pod_actions),
 *   Initialized (True when every init container exited 0, or an app
 *   container has started; False "ContainersNotInitialized" "containers
 *   with incomplete status: [a b]"; True "PodCompleted" when Succeeded),
 *   Ready and ContainersReady (True when every app container is ready;
 *   False "ContainersNotReady" "containers with unready status: [a b]";
 *   False "PodCompleted" when Succeeded, False "PodFailed" when Failed;
 *   Ready copies ContainersReady since there are no readiness gates),
 *   PodScheduled True. Each is {type, status "True"/"False", lastProbeTime
 *   null, lastTransitionTime, reason?, message?}. lastTransitionTime is
 *   taken from @p old_status's condition of the same type when its status
 *   is unchanged, else @p now_ns (the status manager does this upstream).
 * - "hostIP", "hostIPs" [{ip}] from @p host_ip (omitted when NULL or "").
 * - "podIP", "podIPs" [{ip}] from @p status->ips as sortPodIPs orders them:
 *   the first IP of @p host_ip's family (IPv4 when unknown), then the first
 *   of the other family; other entries and invalid addresses are dropped.
 *   When @p status has none and no ready sandbox (the pod was stopped: its
 *   network is gone), @p old_status's podIP/podIPs stay (upstream's
 *   preserveDataFromBeforeStopping and GenericPLEG.getPodIPs; D20).
 *   A host-network pod without pod IPs gets @p host_ip.
 * - "startTime": @p old_status's when set, else @p now_ns.
 * - "initContainerStatuses" (only when the spec has init containers, spec
 *   order) and "containerStatuses" (sorted by name, as upstream's
 *   SortedContainerStatuses; not spec order), one per spec container:
 *   {name, state, lastState, ready, restartCount, image, imageID,
 *   containerID?, started}.
 *   state: running {startedAt}; terminated {exitCode, reason (the
 *   runtime's, else "Completed" for 0 and "Error" otherwise), message?,
 *   startedAt, finishedAt, containerID}; waiting {reason?, message?}. No
 *   runtime status: waiting "ContainerCreating" ("PodInitializing" when the
 *   pod has init containers). Created/unknown newest status: waiting {}.
 *   A container that ShouldContainerBeRestarted (not being deleted; no
 *   status, created/unknown, or exited and the restart policy allows it;
 *   never an init container that exited 0) and that has a reason-cache
 *   entry shows waiting {reason, message} from the cache, e.g.
 *   CrashLoopBackOff with the back-off message, and an exited newest
 *   instance moves to lastState.
 *   lastState: {terminated} of the second newest instance when it exited,
 *   else {} (unless moved there as above).
 *   restartCount: the newest status' restart_count.
 *   Continuity with @p old_status (convertToAPIContainerStatuses' previous
 *   statuses, same list, matched by name):
 *   - no runtime status and the old one terminated: the old status is
 *     reused (state, lastState, restartCount, containerID, imageID);
 *   - no runtime status otherwise: the default waiting state above keeps
 *     the old restartCount and lastState; when the old state was running
 *     and there is no old lastState, lastState becomes {terminated
 *     {exitCode 137, reason "ContainerStatusUnknown", message "The container
 *     could not be located when the pod was deleted.  The container used to
 *     be Running"}} and restartCount grows by one unless the pod is being
 *     deleted (the container then counts as stopped, not as never started);
 *   - an unknown-state runtime instance whose old state was running:
 *     terminated {137, "ContainerStatusUnknown", "The container could not
 *     be located when the pod was terminated"} (as the state for the newest
 *     instance, with the old restartCount + 1; as lastState for the second
 *     newest); without a running old state it is waiting {} as before.
 *   Without @p old_status a container without runtime status has
 *   restartCount 0 and lastState {}.
 *   ready: app containers: running (there are no probes yet, so a running
 *   container is ready); init containers: exited 0. started: running.
 *   image: the spec image. imageID: the newest status' image_ref ("" when
 *   unknown). containerID: "<runtime_name>://<id>" of the newest instance.
 * - "qosClass": GetPodQOS of the spec (kc_pod_qos_get): "Guaranteed",
 *   "Burstable" or "BestEffort".
 * Times are RFC 3339 seconds (kc_format_rfc3339); a zero time is null.
 *
 * Not done: pod-level reason/message, ephemeral containers, resources.
 *
 * @param rc the reason cache; may be NULL (no entries).
 * @param host_ip the node's IP; NULL or "" when unknown.
 * @param runtime_name the containerID scheme: "sim", "containerd", ...
 * @param old_status the status this function produced last time for the
 *        same pod (e.g. from the status manager), or NULL; only read. Its
 *        phase, conditions' lastTransitionTime, startTime and container
 *        statuses carry over as described above.
 * @param ret on success a new JSON object; untouched on failure.
 * @return 0, -EINVAL (NULL @p pod or @p runtime_name), -ENOMEM.
 *
 * Any thread; @p pod, @p status and @p old_status are only read.
 */
int kc_generate_api_pod_status(const struct kc_api_pod *pod, const struct kc_pod_status *status,
                               struct kc_reason_cache *rc, const char *host_ip,
                               const char *runtime_name, bool pod_is_terminal,
                               const json_t *old_status, int64_t now_ns, json_t **ret);

/**
 * UpdatePodStatus' source (the prober manager, through the kubelet):
 * @p get fills *ret_started and *ret_ready of app container (or sidecar)
 * @p container_name of pod @p pod_uid whose newest instance is
 * @p container_id (the runtime's ID; NULL: none) and @p running. Any thread.
 */
struct kc_container_probe_view {
        void (*get)(void *self, const char *pod_uid, const char *container_name,
                    const char *container_id, bool running, bool *ret_started, bool *ret_ready);
        void *self;
};

/**
 * @brief kc_generate_api_pod_status() with the probes' verdicts: the
 * "started" and "ready" of every app container and sidecar (init container
 * with restartPolicy Always) come from @p probes (may be NULL: the
 * probe-less rules above), and so do the Ready and ContainersReady
 * conditions. Other init containers keep their rule (ready: exited 0).
 */
int kc_generate_api_pod_status_probed(const struct kc_api_pod *pod,
                                      const struct kc_pod_status *status,
                                      struct kc_reason_cache *rc, const char *host_ip,
                                      const char *runtime_name, bool pod_is_terminal,
                                      const json_t *old_status,
                                      const struct kc_container_probe_view *probes, int64_t now_ns,
                                      json_t **ret);

/**
 * @brief SetContainerReadiness on a v1 status: a copy of @p old in which the
 * container status whose containerID names @p container_id (the runtime's
 * ID, with or without the "<runtime>://" prefix; app, then init statuses)
 * (either ID may carry the prefix) has "ready" = @p ready, and the Ready and ContainersReady conditions are
 * computed again from the app containers' "ready" (lastTransitionTime kept
 * when a condition's status is unchanged, else @p now_ns).
 * @return 0 with a new *ret, or with *ret NULL when "ready" is already
 * @p ready; -ENOENT (no such container), -EINVAL or -ENOMEM (*ret NULL).
 */
int kc_pod_status_set_container_readiness(const struct kc_api_pod *pod, const json_t *old,
                                          const char *container_id, bool ready, int64_t now_ns,
                                          json_t **ret);
/** SetContainerStartup: the same for "started" (no condition depends on it). */
int kc_pod_status_set_container_started(const json_t *old, const char *container_id, bool started,
                                        json_t **ret);

/**
 * @brief Makes element @p i of a JSON array being built by
 * kc_json_array_build() from @p userdata.
 *
 * Returns 0 with a new reference in *@p ret (a NULL one counts as -ENOMEM),
 * or -errno, which ends the build.
 */
typedef int (*kc_json_item_fn)(const void *userdata, size_t i, json_t **ret);

/**
 * @brief A JSON array of the @p n elements @p item makes from @p userdata,
 * in order (the loop every JSON list of the kubelet's documents shares).
 * @return 0, -EINVAL (NULL @p item or @p ret), -ENOMEM or the first error of
 * @p item; *@p ret (a new array) untouched on failure.
 */
int kc_json_array_build(size_t n, kc_json_item_fn item, const void *userdata, json_t **ret);

/**
 * @brief A v1 Pod object for @p pod: {kind "Pod", apiVersion "v1", metadata
 * {name, namespace, uid, creationTimestamp, deletionTimestamp?,
 * deletionGracePeriodSeconds?, labels?, annotations?}, spec, status}. The
 * spec holds every field kc_api_pod keeps, under the v1 API's JSON names
 * and with its omitempty rules (volumes, containers with ports, env,
 * resources, volumeMounts, lifecycle, probes, securityContext...; dnsPolicy,
 * the pod's securityContext, schedulerName "default-scheduler"); nodeName is
 * the pod's, else @p node_name. docs/pod-spec.md lists the fields.
 *
 * "status" shares @p status (a new reference is taken, it is not copied:
 * nobody may modify it afterwards); {} when @p status is NULL.
 * @p node_name may be NULL (no nodeName).
 * Any thread. @return 0, -EINVAL (NULL @p pod, @p status not an object) or
 * -ENOMEM; *ret (a new object) untouched on failure.
 */
int kc_api_pod_to_json(const struct kc_api_pod *pod, const char *node_name, const json_t *status,
                       json_t **ret);
