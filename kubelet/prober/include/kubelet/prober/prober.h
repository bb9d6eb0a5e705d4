/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kubelet/prober/prober.h
 * @brief The prober (pkg/kubelet/prober/prober.go): runs one probe with its handler.
 *
 * This is the interface between the two halves of the prober module: the
 * prober manager, its workers and the results managers (prober_manager.h,
 * results_manager.h) call kc_prober_probe() once per period per probe; the
 * prober runs the probe's handler (exec, httpGet, tcpSocket, grpc) and
 * answers with its result.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"
#include "runtime/runtime_service.h"

struct kc_api_container;
struct kc_api_probe;
struct kc_api_pod;
struct kc_clock;

/** The three probe kinds of a container (upstream probeType). */
enum kc_probe_type {
        KC_PROBE_LIVENESS,
        KC_PROBE_READINESS,
        KC_PROBE_STARTUP,
        _KC_PROBE_TYPE_MAX,
        _KC_PROBE_TYPE_INVALID = -EINVAL,
};

/** A probe's outcome (pkg/probe Result: Success, Warning, Failure, Unknown). */
enum kc_probe_result {
        KC_PROBE_SUCCESS,
        KC_PROBE_WARNING, /* a success with a note (e.g. a redirect to another host) */
        KC_PROBE_FAILURE,
        KC_PROBE_UNKNOWN, /* the probe could not run (an error after the retries) */
        _KC_PROBE_RESULT_MAX,
        _KC_PROBE_RESULT_INVALID = -EINVAL,
};

/**
 * The prober: the runtime service (for exec probes' ExecSync) and the
 * clock. Safe to share between threads: every probe worker calls
 * kc_prober_probe() on its own thread, concurrently.
 */
struct kc_prober;

/**
 * @brief A prober over @p svc (copied; its self must outlive the prober)
 * and @p clock (borrowed, must outlive it).
 * @return 0, -EINVAL or -ENOMEM; *ret unchanged on failure.
 */
int kc_prober_new(struct kc_runtime_service svc, struct kc_clock *clock, struct kc_prober **ret);
/** NULL-safe; returns NULL. No concurrent users. */
struct kc_prober *kc_prober_free(struct kc_prober *p);
KC_DEFINE_CLEANUP_FUNC(struct kc_prober, kc_prober_free)

/** The container's probe of type @p t (its `present` flag says whether it has one). */
const struct kc_api_probe *kc_prober_probe_spec(const struct kc_api_container *c,
                                                enum kc_probe_type t);

/**
 * @brief prober.probe(): runs the probe of type @p t of container @p c
 * (running as @p container_id) in @p pod, whose IP is @p pod_ip (may be
 * NULL or "" when unknown: handlers that need it then fail).
 *
 * Retries as upstream's runProbeWithRetries (maxProbeRetries 3) while the
 * handler reports an error. A container without that probe is a success.
 *
 * Blocking: runs on the calling thread, each attempt bounded by the probe's
 * timeoutSeconds. Any thread.
 *
 * @param ret the result; KC_PROBE_UNKNOWN when the probe could not run.
 * @param ret_output the handler's output or error text, malloc'd (may be
 * set to NULL); the caller frees it.
 * @return 0 with *ret (and *ret_output) set; -EINVAL (NULL argument, bad
 * type) or -ENOMEM with both unchanged.
 */
int kc_prober_probe(struct kc_prober *p, enum kc_probe_type t, const struct kc_api_pod *pod,
                    const char *pod_ip, const struct kc_api_container *c, const char *container_id,
                    enum kc_probe_result *ret, char **ret_output);
