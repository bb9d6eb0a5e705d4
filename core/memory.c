/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How the daemon keeps its resident memory equal to what it uses.
 *
 * Go's runtime, which runs the upstream kubelet, returns free heap pages to
 * the kernel in the background (its scavenger). glibc's malloc does not:
 *
 * - it hands each new thread an arena of its own (or one a finished thread
 *   left) until there are eight per CPU. The pod-worker pool's threads come
 *   and go with the load, so the pods' blocks end up spread over up to 16
 *   arenas (on two CPUs), each keeping its own free pages;
 * - malloc_trim() hands back the free pages inside every arena, but the
 *   free space at the top of a thread's arena goes back only when a block
 *   of 64 KiB or more is freed in it. Small blocks come and go, the top
 *   grows, and it stays resident. Only the main arena's top is trimmed on
 *   request.
 *
 * The 30-minute soak of 500 churning pods (docs/benchmarks.md) measured it:
 * a live heap of 9.6 to 9.9 MiB in 16 arenas holding 28 to 33 MiB, RSS
 * stepping from 25.2 to 28.1 MiB (+11.5 %). Two arenas and a trim every
 * housekeeping still left RSS +5 % after 25 minutes: the second arena's
 * top grew by 0.2 MiB and dropped back 1.9 MiB at once when a large free
 * came.
 *
 * So the daemon uses the main arena alone (kc_memory_tune_process) and
 * housekeeping hands every free page back (kc_memory_scavenge). Threads
 * then share the arena's lock, but each has its own cache of small blocks
 * (tcache) that serves most calls without it, and the daemon's threads
 * spend their time waiting, not allocating.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"

/* True when the user chose the arena count (MALLOC_ARENA_MAX, or
 * glibc.malloc.arena_max in GLIBC_TUNABLES): theirs wins. */
static bool arena_max_set_by_user(void)
{
        const char *t = getenv("GLIBC_TUNABLES");

        return getenv("MALLOC_ARENA_MAX") || (t && strstr(t, "glibc.malloc.arena_max="));
}

/*
 * mallopt() tunes glibc's malloc only while that is the malloc in use. A
 * sanitizer runtime or a preloaded allocator (jemalloc, tcmalloc) brings its
 * own malloc: AddressSanitizer answers mallopt() with 0, but ThreadSanitizer
 * and the preloaded allocators leave it to glibc, which answers 1 for an
 * arena nobody allocates from. So both symbols must come from one object.
 */
static bool malloc_is_the_one_mallopt_tunes(void)
{
        void *m = dlsym(RTLD_DEFAULT, "malloc"), *o = dlsym(RTLD_DEFAULT, "mallopt");
        Dl_info mi, oi;

        if (!m || !o || !dladdr(m, &mi) || !dladdr(o, &oi))
                return false;
        return mi.dli_fbase == oi.dli_fbase;
}

int kc_memory_tune_process(unsigned *ret_arenas)
{
        if (arena_max_set_by_user()) {
                if (ret_arenas)
                        *ret_arenas = 0;
                return 0;
        }
        /* mallopt() returns 1 on success. */
        if (!malloc_is_the_one_mallopt_tunes() || mallopt(M_ARENA_MAX, 1) != 1)
                return -EOPNOTSUPP;
        if (ret_arenas)
                *ret_arenas = 1;
        return 0;
}

void kc_memory_scavenge(void)
{
        malloc_trim(0);
}
