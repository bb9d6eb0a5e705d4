/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file runtime/lifecycle.h
 * @brief The lifecycle handler runner (upstream kubelet/lifecycle
 * handlers.go, HandlerRunner): postStart and preStop hooks. Internal to
 * runtime/.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kc_api_container;
struct kc_api_handler;
struct kc_api_pod;
struct kc_cancel;
struct kc_clock;
struct kc_runtime_service;

/** What a hook runs with. */
struct kc__hook_env {
        struct kc_runtime_service *svc;
        struct kc_clock *clock; /* the sleep action's; NULL: the real clock */
        struct kc_cancel *ctx;  /* ends a sleep early; may be NULL */
        const char *pod_ip;     /* status.podIP for an httpGet without host; may be NULL */
        const char *sandbox_id; /* asked for its IP when pod_ip is NULL; may be NULL */
};

/**
 * HandlerRunner.Run: runs @p h for container @p c (runtime ID
 * @p container_id) of @p pod. exec: ExecSync (a non-zero exit fails);
 * httpGet: one HTTP/1.1 GET (only a transport failure fails, the status
 * code is not looked at, as upstream; HTTPS without certificate
 * verification); sleep: sleeps on the clock until done or @p env->ctx is set.
 * @p timeout_s > 0 bounds the exec, the HTTP exchange and the sleep
 * (preStop's grace); 0: no bound, as upstream's postStart.
 * @return 0, or -errno with *@p ret_msg (malloc'd, may be NULL on ENOMEM)
 *         in upstream's words ("Exec lifecycle hook ([cmd]) for Container
 *         \"c\" in Pod \"name_ns(uid)\" failed - error: ..., message: \"...\"").
 */
int kc__run_handler(const struct kc__hook_env *env, const struct kc_api_pod *pod,
                    const struct kc_api_container *c, const char *container_id,
                    const struct kc_api_handler *h, int64_t timeout_s, char **ret_msg);
