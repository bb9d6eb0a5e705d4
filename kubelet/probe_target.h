/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The prober manager's status source over the status manager: what a probe
 * worker reads of its container in the pod's latest v1 status (upstream's
 * worker calls statusManager.GetPodStatus).
 */
#pragma once

#include <jansson.h>

#include "kubelet/prober/prober_manager.h"

/*
 * Container @name of v1 status @status into *ret (zeroed first): the app
 * container statuses, then the init ones, skipping a status without a
 * containerID (upstream's two lookups). Returns 0 or -ENOMEM.
 */
int kc__probe_target_from_status(const json_t *status, const char *name,
                                 struct kc_probe_target *ret);

/* kc_probe_status_ops over a struct kc_status_manager (the self). */
extern const struct kc_probe_status_ops kc__probe_status_ops;

/* kc_probe_runner_ops over kc_prober_probe() (self: the struct kc_prober). */
extern const struct kc_probe_runner_ops kc__probe_runner_ops;
