/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The relist benchmarks' node: n pods of 3 containers and 1 sandbox each,
 * handed to the simulated runtime, the 10 % churn between relists, and the
 * draining of the PLEG's events.
 */
#pragma once

#include <stddef.h>

#include "runtime/sim.h"

struct kc_chan;

#define CONTAINERS_PER_POD 3

struct world {
        size_t n_pods;
        struct kc_sim_pod_spec *pods;
        struct kc_sim_container_spec *ctrs;
        struct kc_sim_container_spec *sandboxes;
        char *names; /* id strings */
};

int world_init(struct world *w, size_t n_pods);
void world_done(struct world *w);
/* Flips the state of 10 % of the containers (every 10th, offset by round). */
void world_churn(struct world *w, unsigned round);
/* Frees every event waiting in @ch; returns how many there were. */
size_t drain(struct kc_chan *ch);
