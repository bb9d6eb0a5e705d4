/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kubelet/prober/prober_internal.h
 * @brief The prober's handlers, shared between prober.c and prober_http.c
 * (internal to kubelet/prober; its unit tests reach them).
 */
#pragma once

#include <stddef.h>

#include "kubelet/prober/prober.h"

struct kc_api_container;
struct kc_api_port_ref;
struct kc_api_probe;

/* prober.go maxProbeRetries: attempts while the handler errors. */
#define KC_PROBE_MAX_RETRIES 3
/* pkg/probe/exec maxReadLength and pkg/probe/http maxRespBodyLength: 10 KiB. */
#define KC_PROBE_MAX_OUTPUT (10 * 1024)
/* pkg/probe/http redirects: at most 10 (Go's client default). */
#define KC_PROBE_MAX_REDIRECTS 10
/*
 * The User-Agent of probe requests, "kube-probe/<major>.<minor>" of the
 * kubelet's version: cubelet's (KC_PROBE_VERSION, set by CMake from the
 * project's version).
 */
#define KC_PROBE_USER_AGENT "kube-probe/" KC_PROBE_VERSION

/** One attempt's outcome: a result with its output, or an error (err set: could not run). */
struct kc__probe_attempt {
        enum kc_probe_result result;
        char *output; /* malloc'd or NULL */
        char *err;    /* malloc'd: the handler could not run (Unknown) */
};

/**
 * probe.ResolveContainerPort: a number, a container port's name, or a
 * number written as a string; 1..65535.
 * @return the port, or -EINVAL with *@p ret_err in upstream's words (NULL on ENOMEM).
 */
int kc__probe_resolve_port(const struct kc_api_container *c, const struct kc_api_port_ref *ref,
                           char **ret_err);

/**
 * The httpGet probe (pkg/probe/http DoHTTPProbe): fills @p a.
 * @return 0, or -ENOMEM.
 */
int kc__probe_http(const struct kc_api_probe *pr, const struct kc_api_container *c,
                   const char *pod_ip, struct kc__probe_attempt *a);
