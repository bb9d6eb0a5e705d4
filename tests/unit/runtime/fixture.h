/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared pieces of the runtime/ tests that run over the simulated runtime:
 * the fake clock's start time, the clock + sim pair each fixture starts
 * from, and the sim's per-operation call counts.
 */
#pragma once

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/cleanup.h"
#include "core/clock.h"
#include "runtime/container.h"
#include "runtime/runtime_service.h"
#include "runtime/sim.h"

#define T0 (INT64_C(1700000000) * KC_NSEC_PER_SEC)
#define SEC KC_NSEC_PER_SEC

/*
 * A fake clock at T0 and a sim on it; with @p image (may be NULL) already in
 * the sim's image store (CreateContainer needs its image). Free both with
 * sim_env_free().
 */
static inline void sim_env_new(struct kc_clock **ret_clock, struct kc_sim **ret_sim,
                               const char *image)
{
        assert_int_equal(kc_fake_clock_new(ret_clock, T0), 0);
        assert_int_equal(kc_sim_new(*ret_clock, ret_sim), 0);
        if (image)
                assert_int_equal(kc_sim_add_image(*ret_sim, image), 0);
}

/* The sim goes first: it reads the clock. */
static inline void sim_env_free(struct kc_clock *clock, struct kc_sim *sim)
{
        kc_sim_free(sim);
        kc_clock_free(clock);
}

/* How many times the sim was asked for @p op ("PullImage", ...), over all keys. */
static inline uint64_t sim_op_count(struct kc_sim *sim, const char *op)
{
        struct kc_sim_call_count *c = NULL;
        uint64_t n = 0;
        size_t nc = 0, i;

        assert_int_equal(kc_sim_call_counts(sim, &c, &nc), 0);
        for (i = 0; i < nc; i++)
                if (strcmp(c[i].op, op) == 0)
                        n += c[i].count;
        free(c);
        return n;
}

/* A sim with "busybox" pulled and both its faces: the fixture of the sim's own tests. */
struct sim_faces_fixture {
        struct kc_clock *clock;
        struct kc_sim *sim;
        struct kc_pod_runtime pr;
        struct kc_runtime_service svc;
};

static inline int sim_faces_setup(void **state)
{
        struct sim_faces_fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        sim_env_new(&f->clock, &f->sim, "busybox");
        f->pr = kc_sim_pod_runtime(f->sim);
        f->svc = kc_sim_service(f->sim);
        *state = f;
        return 0;
}

static inline int sim_faces_teardown(void **state)
{
        struct sim_faces_fixture *f = *state;

        sim_env_free(f->clock, f->sim);
        free(f);
        return 0;
}
