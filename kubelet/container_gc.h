/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kubelet/ internal: the container GC's sandbox eviction for removed pods
 * (upstream kuberuntime_gc.go evictSandboxes), run on its own thread so a
 * slow runtime never stalls syncLoop. Exposed for tests/unit/kubelet.
 */
#pragma once

#include <errno.h>

#include "runtime/container.h"

struct kc_pod_manager;
struct kc_pod_workers;

/** What a pass reads; all borrowed, outliving the GC (or at least its kc__container_gc_free()). */
struct kc_container_gc_config {
        /** GetPods(all) and RemovePodSandbox; ops->remove_pod_sandbox must be set. */
        struct kc_pod_runtime runtime;
        /** The desired pods (thread-safe). */
        struct kc_pod_manager *pod_manager;
        /** ShouldPodContentBeRemoved (thread-safe). */
        struct kc_pod_workers *pod_workers;
        /** Pods' log directories (evictPodLogsDirectories); NULL: none. Copied. */
        const char *pod_logs_root;
};

struct kc_container_gc;

/**
 * Starts the GC thread, idle until kc__container_gc_request().
 * @return 0, -EINVAL, -ENOMEM or the pthread_create error (*ret unchanged).
 */
int kc__container_gc_new(const struct kc_container_gc_config *cfg, struct kc_container_gc **ret);

/**
 * Asks the thread for one pass. Never blocks. At most one pass is queued or
 * running: while one is, the request is refused, not queued behind it.
 * Any thread.
 * @return 0 (a pass will run), -EBUSY (one is queued or running), -EINVAL.
 */
int kc__container_gc_request(struct kc_container_gc *gc);

/**
 * Stops and joins the thread, then frees the GC. NULL-safe; returns NULL.
 * A pass in progress stops after the removal in flight returns (that one
 * call is waited for; the runtime must let it end); a request not yet
 * started is dropped. Any thread but the GC's; no concurrent request.
 */
struct kc_container_gc *kc__container_gc_free(struct kc_container_gc *gc);
