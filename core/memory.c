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
 * housekeeping hands free pages back (kc_memory_scavenge). Threads then
 * share the arena's lock, and the daemon's threads spend their time
 * waiting, not allocating. Their own caches of small blocks (tcache) are
 * off too (kc_memory_tune_exec): each kept up to seven free blocks of each
 * of 64 sizes that no other thread could reuse, and the pod-worker pool
 * runs hundreds of threads; at 5,000 pods that held 13 MB, and steady CPU
 * did not rise without them (issue 18, docs/benchmarks.md).
 *
 * A trim every housekeeping (2 s) kept RSS flat but cost CPU that grew with
 * the heap: each one walks every free chunk and hands back pages that the
 * next syncs fault in again. The scavenger (struct kc_scavenger) trims only
 * when the free pages kept are worth it, as Go's does: see core/memory.h.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "core/arena.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/memory.h"
#include "internal.h"

/* Go's retainExtraPercent: growth kept beyond the last trim's RSS before the next. */
#define SCAVENGE_RETAIN_EXTRA_PERCENT 10
#define SCAVENGE_RETAIN_MIN ((uint64_t)1 << 20)
/* Go's reduceExtraPercent: under pressure below 5 % of the memory left. */
#define SCAVENGE_PRESSURE_PERCENT 5
#define SCAVENGE_PRESSURE_RETAIN ((uint64_t)64 << 10)
/* Go's scavengePercent: the share of one CPU trimming may take. */
#define SCAVENGE_CPU_PERCENT 1
/*
 * RssAnon does not see pages freed inside a heap that shrank (pods gone):
 * a trim comes at least this often (more often under pressure) to hand
 * them back. Go's scavenger runs in the background all the time.
 */
#define SCAVENGE_MAX_INTERVAL (60 * KC_NSEC_PER_SEC)
#define SCAVENGE_PRESSURE_MAX_INTERVAL (10 * KC_NSEC_PER_SEC)

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

/*
 * Stricter than the above, for kc_memory_tune_exec() and the block cache
 * (core/blocks.c): malloc comes from the object getauxval() comes from,
 * the C library, and nothing is preloaded. valgrind redirects malloc
 * without a symbol of its own (only its LD_PRELOAD shows), and a program
 * executed again under it would not run.
 */
bool kc__malloc_is_glibcs(void)
{
        const char *preload = getenv("LD_PRELOAD");
        void *m = dlsym(RTLD_DEFAULT, "malloc"), *g = dlsym(RTLD_DEFAULT, "getauxval");
        Dl_info mi, gi;

        if ((preload && *preload) || !m || !g || !dladdr(m, &mi) || !dladdr(g, &gi))
                return false;
        return mi.dli_fbase == gi.dli_fbase;
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

/* The tunable kc_memory_tune_exec() sets, and its value. */
#define TCACHE_COUNT_TUNABLE "glibc.malloc.tcache_count="
#define TCACHE_OFF TCACHE_COUNT_TUNABLE "0"

int kc__memory_tunables_without_tcache(const char *cur, char **ret)
{
        char *t;

        if (cur && strstr(cur, TCACHE_COUNT_TUNABLE))
                return 0;
        if (cur && *cur) {
                if (asprintf(&t, "%s:%s", cur, TCACHE_OFF) < 0)
                        return -ENOMEM;
        } else if (!(t = strdup(TCACHE_OFF))) {
                return -ENOMEM;
        }
        *ret = t;
        return 1;
}

int kc_memory_tune_exec(char *const argv[])
{
        _cleanup_free_ char *t = NULL, *before = NULL;
        const char *cur = getenv("GLIBC_TUNABLES");
        int r;

        if (!argv || !argv[0])
                return -EINVAL;
        /* A set-uid program's ld.so may drop the tunables: it would execute again and again. */
        if (getauxval(AT_SECURE) || !kc__malloc_is_glibcs())
                return -EOPNOTSUPP;
        r = kc__memory_tunables_without_tcache(cur, &t);
        if (r <= 0)
                return r;
        if (cur && !(before = strdup(cur)))
                return -ENOMEM;
        if (setenv("GLIBC_TUNABLES", t, 1) < 0)
                return -errno;
        execv("/proc/self/exe", argv);
        r = -errno;
        /* Still this process, caches on: the environment says so again. */
        if (before)
                setenv("GLIBC_TUNABLES", before, 1);
        else
                unsetenv("GLIBC_TUNABLES");
        return r;
}

void kc_memory_scavenge(void)
{
        (void)kc_block_trim();
        malloc_trim(0);
}

struct kc_scavenger {
        struct kc_clock *clock;
        kc__memory_sample_fn sample;
        kc__memory_trim_fn trim;
        void *userdata;
        int64_t not_before; /* no trim before (the CPU budget) */
        int64_t last_trim;  /* when the last trim ended */
        uint64_t floor;     /* RssAnon right after the last trim, or lower since */
        bool trimmed;       /* floor and last_trim are known */
        uint64_t trims;
};

/* Reads @p path (a small /proc file) into @p buf; 0 or -errno. */
static int read_small_file(const char *path, char *buf, size_t size)
{
        ssize_t n;
        int fd, r = 0;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, size - 1);
        if (n < 0)
                r = -errno;
        else
                buf[n] = '\0';
        close(fd);
        return r;
}

/* The value in KiB of "@p key: N kB" in /proc/meminfo's text, in bytes; 0 if absent. */
static uint64_t meminfo_bytes(const char *text, const char *key)
{
        const char *p = strstr(text, key);
        uint64_t kib;

        if (!p || sscanf(p + strlen(key), ": %" SCNu64, &kib) != 1)
                return 0;
        return kib << 10;
}

/*
 * No malloc statistics here: mallinfo2() walks every free chunk under the
 * arena lock, the very work a trim does, and would cost as much every run.
 */
static int sample_process(void *userdata, struct kc__memory_sample *ret)
{
        char buf[512];
        uint64_t size, resident, shared;
        int r;

        (void)userdata;
        /* statm: pages of the whole, resident, resident file-backed or shared. */
        r = read_small_file("/proc/self/statm", buf, sizeof(buf));
        if (r < 0)
                return r;
        if (sscanf(buf, "%" SCNu64 " %" SCNu64 " %" SCNu64, &size, &resident, &shared) != 3)
                return -EIO;
        *ret = (struct kc__memory_sample){
                .rss_anon = (resident > shared ? resident - shared : 0) * (uint64_t)getpagesize(),
        };
        /* The first lines of meminfo are enough: MemTotal, MemFree, MemAvailable. */
        if (read_small_file("/proc/meminfo", buf, sizeof(buf)) == 0) {
                ret->mem_total = meminfo_bytes(buf, "MemTotal");
                ret->mem_available = meminfo_bytes(buf, "MemAvailable");
        }
        return 0;
}

static void trim_process(void *userdata)
{
        (void)userdata;
        kc_memory_scavenge();
}

int kc_scavenger_new(struct kc_clock *clock, struct kc_scavenger **ret)
{
        struct kc_scavenger *s;

        if (!clock || !ret)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->clock = clock;
        kc__scavenger_set_ops(s, NULL, NULL, NULL);
        *ret = s;
        return 0;
}

struct kc_scavenger *kc_scavenger_free(struct kc_scavenger *s)
{
        free(s);
        return NULL;
}

void kc__scavenger_set_ops(struct kc_scavenger *s, kc__memory_sample_fn sample,
                           kc__memory_trim_fn trim, void *userdata)
{
        s->sample = sample ? sample : sample_process;
        s->trim = trim ? trim : trim_process;
        s->userdata = userdata;
}

uint64_t kc_scavenger_trims(const struct kc_scavenger *s)
{
        return s ? s->trims : 0;
}

/* Whether the pages kept since the last trim miss the goal at @p now (see core/memory.h). */
static bool goal_missed(const struct kc_scavenger *s, const struct kc__memory_sample *m,
                        int64_t now)
{
        uint64_t grown, retain;
        int64_t max_interval;

        if (!s->trimmed)
                return true;
        grown = m->rss_anon > s->floor ? m->rss_anon - s->floor : 0;
        if (m->mem_total && m->mem_available < m->mem_total / 100 * SCAVENGE_PRESSURE_PERCENT) {
                retain = SCAVENGE_PRESSURE_RETAIN;
                max_interval = SCAVENGE_PRESSURE_MAX_INTERVAL;
        } else {
                retain = s->floor / 100 * SCAVENGE_RETAIN_EXTRA_PERCENT;
                if (retain < SCAVENGE_RETAIN_MIN)
                        retain = SCAVENGE_RETAIN_MIN;
                max_interval = SCAVENGE_MAX_INTERVAL;
        }
        return grown > retain || now - s->last_trim >= max_interval;
}

int kc_scavenger_run(struct kc_scavenger *s)
{
        struct kc__memory_sample m;
        int64_t start, end;
        int r;

        if (!s)
                return -EINVAL;
        /* Chunks the arenas' cache kept for nothing since the last run, for the trim to find. */
        kc_arena_cache_release_idle();
        r = s->sample(s->userdata, &m);
        if (r < 0)
                return r;
        /* Below the floor: memory went back on its own (threads exited, a large free). */
        if (s->trimmed && m.rss_anon < s->floor)
                s->floor = m.rss_anon;
        start = kc_clock_now(s->clock);
        if (!goal_missed(s, &m, start) || start < s->not_before)
                return 0;
        s->trim(s->userdata);
        end = kc_clock_now(s->clock);
        s->not_before = end + (end - start) * (100 - SCAVENGE_CPU_PERCENT) / SCAVENGE_CPU_PERCENT;
        s->trims++;
        s->last_trim = end;
        if (s->sample(s->userdata, &m) >= 0) {
                s->floor = m.rss_anon;
                s->trimmed = true;
        }
        return 1;
}
