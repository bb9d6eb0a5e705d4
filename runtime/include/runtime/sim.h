/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file runtime/sim.h
 * @brief The embedded simulated runtime (runtime/sim).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"

struct kc_clock;

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
 * kc_sim_inject_fault() with status @p code instead of UNKNOWN (the call
 * returns the code's errno, e.g. -ENOENT for KC_RUNTIME_NOT_FOUND), as a
 * runtime answers for an object already gone.
 * @return 0, -EINVAL (as kc_sim_inject_fault(), or @p code OK or out of
 * range) or -ENOMEM.
 */
int kc_sim_inject_fault_code(struct kc_sim *s, const char *op, const char *key,
                             enum kc_runtime_code code, const char *message, unsigned times);

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

/**
 * Whether RunPodSandbox and CreateContainer keep a deep copy of every field
 * of their configs for kc_sim_sandbox_config() and kc_sim_container_config()
 * (tests); off by default, when the sim keeps only what exec reads (envs,
 * working dir, hostname, run-as ids, read-only root; the mounts are in the
 * container's status anyway): the copies cost kilobytes a pod (issue 18).
 * Applies to the objects created from then on.
 * @return 0 or -EINVAL.
 */
int kc_sim_record_configs(struct kc_sim *s, bool on);

/**
 * @brief What the sim was sent, when kc_sim_record_configs() was on as the
 * object was created: a copy of it for the caller, in its own arena
 * (kc_runtime_result_done() frees it), valid after the object is gone. Any
 * thread.
 * @return 0, -ENOENT (no such object, or one loaded by kc_sim_set_pods,
 * which has no config), -ENODATA (created while the sim did not record
 * configs), -EINVAL, -ENOMEM; @p ret untouched on failure.
 */
struct kc_sim_sandbox_config {
        struct kc_pod_sandbox_config config;
        struct kc_arena *arena;
};
int kc_sim_sandbox_config(struct kc_sim *s, const char *sandbox_id,
                          struct kc_sim_sandbox_config *ret);

/** CreateContainer's container config, and the sandbox config sent with it (if any). */
struct kc_sim_container_config {
        struct kc_container_config config;
        bool has_sandbox_config;
        struct kc_pod_sandbox_config sandbox_config;
        struct kc_arena *arena;
};
int kc_sim_container_config(struct kc_sim *s, const char *container_id,
                            struct kc_sim_container_config *ret);

/*
 * ExecSync (the service face's exec_sync) runs a busybox-like command set in
 * a running container (runtime/sim/shell.c): printenv/env, pwd, cd, cat,
 * test/[, ls, echo, touch, mkdir, rm, hostname, id, true, false, exit,
 * sleep (on the sim's clock with the lock dropped, bounded by the timeout:
 * DEADLINE_EXCEEDED after it; as with injected latency, no exec may be
 * asleep when the sim is freed), sh -c with ; && || and > >> 2> 2>&1 redirections and $VAR;
 * in a shell anything else exits 127 with "sh: <cmd>: not found", run
 * directly it fails UNKNOWN as runc's "executable file not found in $PATH"
 * does through containerd. The container's
 * envs and working_dir are the process's; files live in the container's
 * own small filesystem (its command's builtins act on it too, e.g.
 * `sh -c "touch /tmp/ready; sleep 3600"`), mounts lead to a sim-wide store
 * by host path (read-through to the host's files; writes stay in the sim),
 * and readonly_rootfs refuses writes outside writable mounts with
 * "Read-only file system". Errors as containerd 1.6: NOT_FOUND for an
 * unknown container, UNKNOWN "failed to exec in container: container is in
 * CONTAINER_EXITED state" for one not running.
 */

/** Counters for fault-injection drivers (kc_sim_get_stats()). */
struct kc_sim_stats {
        uint64_t calls; /* every call so far, all ops */
        /*
         * Calls in an injected latency or an exec sleep now. A call is counted
         * just before it sleeps on the clock: a test that advances a fake
         * clock waits for kc_fake_clock_sleepers() as well.
         */
        unsigned delayed_now;
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
