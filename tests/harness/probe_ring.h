/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Probes for test containers. kc_api_container points at its probes (NULL
 * when absent), so a test needs somewhere for them to live: a ring of slots
 * per test file, of which the last few stay valid. Shared by
 * tests/unit/prober/test_prober.c and tests/integration/test_probes.c.
 */
#pragma once

#include "core/cleanup.h"
#include "runtime/api_pod.h"

static struct kc_api_probe probe_slots[32];
static unsigned probe_next;

/* A probe of the ring, changed in place. */
#define MUT(pr) ((struct kc_api_probe *)(pr))

/* A probe with upstream's defaults and handler @p h, in the next slot of the ring. */
static inline struct kc_api_probe *probe_of(struct kc_api_handler h)
{
        struct kc_api_probe *pr = &probe_slots[probe_next++ % KC_ELEMENTSOF(probe_slots)];

        *pr = (struct kc_api_probe){ .present = true,
                                     .handler = h,
                                     .timeout_seconds = 1,
                                     .period_seconds = 10,
                                     .success_threshold = 1,
                                     .failure_threshold = 3 };
        return pr;
}
