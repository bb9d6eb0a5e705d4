/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How the daemon keeps its resident memory equal to what it uses.
 *
 * Go's runtime, which runs the upstream kubelet, returns free heap pages to
 * the kernel in the background (its scavenger). glibc's malloc does not: a
 * free block stays resident until the top of its heap is free or someone
 * calls malloc_trim(). Two things make that visible in a node agent:
 *
 * - glibc hands each new thread an arena of its own (or one a finished
 *   thread left) until there are eight per CPU. The pod-worker pool's
 *   threads come and go with the load, so one pod's blocks end up spread
 *   over up to 16 arenas (on two CPUs), each keeping its own free pages,
 *   and the footprint ratchets up as the pool's membership changes;
 * - the free pages in the middle of a heap are only returned by a trim.
 *
 * The 30-minute soak of 500 churning pods (docs/benchmarks.md) measured it:
 * a live heap of 9.6 to 9.9 MiB in 16 arenas holding 28 to 33 MiB, RSS
 * stepping from 25.2 to 28.1 MiB (+11.5 %). kc_memory_tune_process() caps
 * the arenas at one per CPU: no more threads than CPUs run malloc at once,
 * so more arenas buy no parallelism, only fragmentation.
 * kc_memory_scavenge() is the daemon's scavenger, called by housekeeping.
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kc_core.h"

/* True when the user chose the arena count (MALLOC_ARENA_MAX, or
 * glibc.malloc.arena_max in GLIBC_TUNABLES): theirs wins. */
static bool arena_max_set_by_user(void)
{
        const char *t = getenv("GLIBC_TUNABLES");

        return getenv("MALLOC_ARENA_MAX") || (t && strstr(t, "glibc.malloc.arena_max="));
}

int kc_memory_tune_process(unsigned *ret_arenas)
{
        long n = sysconf(_SC_NPROCESSORS_ONLN);

        if (arena_max_set_by_user()) {
                if (ret_arenas)
                        *ret_arenas = 0;
                return 0;
        }
        if (n < 1)
                n = 1;
        /* mallopt() returns 1 on success; sanitizer runtimes, which bring
         * their own allocator, answer 0. */
        if (mallopt(M_ARENA_MAX, (int)n) != 1)
                return -EOPNOTSUPP;
        if (ret_arenas)
                *ret_arenas = (unsigned)n;
        return 0;
}

void kc_memory_scavenge(void)
{
        malloc_trim(0);
}
