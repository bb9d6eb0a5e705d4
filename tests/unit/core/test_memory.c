/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kc_memory_*: the malloc arena cap and the scavenger (core/memory.c), and
 * the paced scavenger (kc_scavenger: its goal, pressure and pace on figures
 * and a fake clock the test sets, then on the process itself).
 * Under AddressSanitizer or ThreadSanitizer, malloc is the sanitizer's:
 * the cap must then report -EOPNOTSUPP, and what glibc would do is checked
 * by the plain build.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/cleanup.h"
#include "core/clock.h"
#include "core/memory.h"
#include "internal.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZER_MALLOC 1
#else
#define SANITIZER_MALLOC 0
#endif

/* How many arenas glibc has made so far: malloc_info lists one <heap> each. */
static unsigned count_arenas(void)
{
        char *buf = NULL, *p;
        size_t len = 0;
        unsigned n = 0;
        FILE *f = open_memstream(&buf, &len);

        assert_non_null(f);
        assert_int_equal(malloc_info(0, f), 0);
        assert_int_equal(fclose(f), 0);
        for (p = buf; (p = strstr(p, "<heap nr=")); p++)
                n++;
        free(buf);
        return n;
}

static long rss_anon_kib(void)
{
        char line[256];
        long kib = -1;
        FILE *f = fopen("/proc/self/status", "re");

        assert_non_null(f);
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "RssAnon: %ld kB", &kib) == 1)
                        break;
        fclose(f);
        assert_true(kib >= 0);
        return kib;
}

#define N_THREADS 24

static pthread_barrier_t all_allocated;

/* Allocates while every other thread is alive, the case where glibc hands
 * out a new arena per thread. */
static void *allocate(void *arg)
{
        void *blocks[64];

        (void)arg;
        for (size_t i = 0; i < KC_ELEMENTSOF(blocks); i++) {
                blocks[i] = malloc(1000 + i * 64);
                if (!blocks[i])
                        abort(); /* cmocka's asserts belong to the main thread */
                memset(blocks[i], 0x5a, 1000 + i * 64);
        }
        pthread_barrier_wait(&all_allocated);
        for (size_t i = 0; i < KC_ELEMENTSOF(blocks); i++)
                free(blocks[i]);
        return NULL;
}

/* 24 threads allocating at once all share the main arena. */
static void test_tune_leaves_the_main_arena_alone(void **state)
{
        pthread_t t[N_THREADS];
        unsigned arenas = 12345;
        int r;

        (void)state;
        unsetenv("MALLOC_ARENA_MAX");
        unsetenv("GLIBC_TUNABLES");
        r = kc_memory_tune_process(&arenas);
        if (SANITIZER_MALLOC) {
                assert_int_equal(r, -EOPNOTSUPP);
                assert_int_equal(arenas, 12345); /* untouched on failure */
                return;
        }
        assert_int_equal(r, 0);
        assert_int_equal(arenas, 1);

        assert_int_equal(pthread_barrier_init(&all_allocated, NULL, N_THREADS), 0);
        for (int i = 0; i < N_THREADS; i++)
                assert_int_equal(pthread_create(&t[i], NULL, allocate, NULL), 0);
        for (int i = 0; i < N_THREADS; i++)
                assert_int_equal(pthread_join(t[i], NULL), 0);
        pthread_barrier_destroy(&all_allocated);
        /* Uncapped, glibc makes up to 8 per CPU: 16 on two CPUs. */
        assert_int_equal(count_arenas(), 1);
}

/* A count the user set in the environment is theirs: nothing is changed. */
static void test_tune_keeps_the_users_arena_max(void **state)
{
        unsigned arenas = 12345;

        (void)state;
        assert_int_equal(setenv("MALLOC_ARENA_MAX", "3", 1), 0);
        assert_int_equal(kc_memory_tune_process(&arenas), 0);
        assert_int_equal(arenas, 0);
        unsetenv("MALLOC_ARENA_MAX");

        arenas = 12345;
        assert_int_equal(
                setenv("GLIBC_TUNABLES", "glibc.malloc.check=0:glibc.malloc.arena_max=4", 1), 0);
        assert_int_equal(kc_memory_tune_process(&arenas), 0);
        assert_int_equal(arenas, 0);
        unsetenv("GLIBC_TUNABLES");
        assert_int_equal(kc_memory_tune_process(NULL), SANITIZER_MALLOC ? -EOPNOTSUPP : 0);
}

/* Issue 18: the tunables the daemon executes again with turn glibc's tcaches off; the user's count wins. */
static void test_tunables_without_tcache(void **state)
{
        static const struct {
                const char *cur, *want; /* want NULL: nothing to add */
        } cases[] = {
                { NULL, "glibc.malloc.tcache_count=0" },
                { "", "glibc.malloc.tcache_count=0" },
                { "glibc.malloc.arena_max=4",
                  "glibc.malloc.arena_max=4:glibc.malloc.tcache_count=0" },
                { "glibc.malloc.check=0:glibc.malloc.tcache_count=3", NULL },
        };
        char *t = NULL;

        (void)state;

        for (size_t i = 0; i < KC_ELEMENTSOF(cases); i++) {
                assert_int_equal(kc__memory_tunables_without_tcache(cases[i].cur, &t),
                                 cases[i].want ? 1 : 0);
                if (cases[i].want)
                        assert_string_equal(t, cases[i].want);
                else
                        assert_null(t);
                free(t);
                t = NULL;
        }
        /* Set already: nothing to execute, whatever malloc is in use. */
        assert_int_equal(setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=2", 1), 0);
        assert_int_equal(kc_memory_tune_exec((char *[]){ "x", NULL }),
                         SANITIZER_MALLOC ? -EOPNOTSUPP : 0);
        unsetenv("GLIBC_TUNABLES");
        assert_int_equal(kc_memory_tune_exec(NULL), -EINVAL);
}

#define N_BLOCKS 16384
#define BLOCK 4000 /* below the mmap threshold: from the heap */

/*
 * 64 MB freed in the middle of the heap, a live block above it: free()
 * cannot shrink the heap, so the pages stay resident until the scavenger
 * hands them back.
 */
static void test_scavenge_returns_free_pages_in_the_middle_of_the_heap(void **state)
{
        char **blocks = calloc(N_BLOCKS, sizeof(*blocks));
        long before, after;

        (void)state;
        assert_non_null(blocks);
        for (size_t i = 0; i < N_BLOCKS; i++) {
                blocks[i] = malloc(BLOCK);
                assert_non_null(blocks[i]);
                memset(blocks[i], 0xa5, BLOCK);
        }
        for (size_t i = 0; i < N_BLOCKS - 1; i++)
                free(blocks[i]);
        before = rss_anon_kib();
        kc_memory_scavenge();
        after = rss_anon_kib();
        print_message("RssAnon %ld KiB -> %ld KiB after kc_memory_scavenge()\n", before, after);
        if (!SANITIZER_MALLOC)
                assert_true(after < before - 32 * 1024);
        free(blocks[N_BLOCKS - 1]);
        free(blocks);
}

/* ---- the paced scavenger on figures the test sets ---------------------- */

#define MIB ((uint64_t)1 << 20)
#define MS (INT64_C(1000000))

/* A process whose RssAnon the test sets; a trim brings it down to live + overhead. */
struct fake_process {
        struct kc__memory_sample m;
        struct kc_clock *clock;
        uint64_t live;   /* what a trim leaves resident */
        int64_t trim_ns; /* how long a trim takes on the fake clock */
        int fail;        /* the sample fails with this */
        unsigned trims;
};

static int fake_sample(void *userdata, struct kc__memory_sample *ret)
{
        struct fake_process *p = userdata;

        if (p->fail)
                return p->fail;
        *ret = p->m;
        return 0;
}

static void fake_trim(void *userdata)
{
        struct fake_process *p = userdata;

        p->trims++;
        p->m.rss_anon = p->live;
        assert_int_equal(kc_fake_clock_advance(p->clock, p->trim_ns), 0);
}

static struct kc_scavenger *fake_scavenger(struct fake_process *p)
{
        struct kc_scavenger *s = NULL;

        assert_int_equal(kc_fake_clock_new(&p->clock, 1000 * MS), 0);
        assert_int_equal(kc_scavenger_new(p->clock, &s), 0);
        kc__scavenger_set_ops(s, fake_sample, fake_trim, p);
        p->live = 100 * MIB;
        p->m = (struct kc__memory_sample){ .rss_anon = 120 * MIB,
                                           .mem_total = 1000 * MIB,
                                           .mem_available = 800 * MIB };
        p->trim_ns = 10 * MS;
        return s;
}

/*
 * The first run trims (and measures the floor); then growth up to 10 % of
 * the floor stays, more goes; the floor follows what each trim leaves.
 */
static void test_scavenger_goal(void **state)
{
        struct fake_process p = { 0 };
        _cleanup_(kc_scavenger_freep) struct kc_scavenger *s = fake_scavenger(&p);

        (void)state;
        assert_int_equal(kc_scavenger_run(s), 1);
        assert_int_equal(p.trims, 1);
        assert_int_equal(kc_fake_clock_advance(p.clock, 1000 * MS), 0);

        /* 10 MiB more than the 100 MiB left by the trim: the goal holds. */
        p.m.rss_anon = 110 * MIB;
        assert_int_equal(kc_scavenger_run(s), 0);
        assert_int_equal(kc_scavenger_run(s), 0);
        /* A burst freed: 11 MiB over. */
        p.m.rss_anon = 111 * MIB;
        assert_int_equal(kc_scavenger_run(s), 1);
        assert_int_equal(p.trims, 2);
        assert_int_equal(kc_scavenger_trims(s), 2);

        /* The heap grew for good (more pods): one trim, and the floor is the new size. */
        assert_int_equal(kc_fake_clock_advance(p.clock, 1000 * MS), 0);
        p.live = 150 * MIB;
        p.m.rss_anon = 170 * MIB;
        assert_int_equal(kc_scavenger_run(s), 1);
        p.m.rss_anon = 164 * MIB;
        assert_int_equal(kc_scavenger_run(s), 0);

        /* A small process keeps up to 1 MiB. */
        assert_int_equal(kc_fake_clock_advance(p.clock, 1000 * MS), 0);
        p.live = 2 * MIB;
        p.m.rss_anon = 2 * MIB; /* below the floor: the floor follows */
        assert_int_equal(kc_scavenger_run(s), 0);
        p.m.rss_anon = 3 * MIB;
        assert_int_equal(kc_scavenger_run(s), 0);
        p.m.rss_anon += 64 << 10;
        assert_int_equal(kc_scavenger_run(s), 1);
        assert_int_equal(p.trims, 4);
        kc_clock_free(p.clock);
}

/* A trim that took d is followed by none for 99 d: 1 % of one CPU. */
static void test_scavenger_pace(void **state)
{
        struct fake_process p = { 0 };
        _cleanup_(kc_scavenger_freep) struct kc_scavenger *s = fake_scavenger(&p);

        (void)state;
        assert_int_equal(kc_scavenger_run(s), 1); /* took 10 ms */
        p.m.rss_anon = 200 * MIB;
        assert_int_equal(kc_fake_clock_advance(p.clock, 989 * MS), 0);
        assert_int_equal(kc_scavenger_run(s), 0);
        assert_int_equal(kc_fake_clock_advance(p.clock, 1 * MS), 0);
        p.trim_ns = 100 * MS;
        assert_int_equal(kc_scavenger_run(s), 1);
        p.m.rss_anon = 200 * MIB;
        assert_int_equal(kc_fake_clock_advance(p.clock, 9899 * MS), 0);
        assert_int_equal(kc_scavenger_run(s), 0);
        assert_int_equal(kc_fake_clock_advance(p.clock, 1 * MS), 0);
        assert_int_equal(kc_scavenger_run(s), 1);
        assert_int_equal(p.trims, 3);
        kc_clock_free(p.clock);
}

/*
 * Under memory pressure (MemAvailable under 5 % of MemTotal) 64 KiB of
 * growth is enough; unreadable figures trim nothing.
 */
static void test_scavenger_pressure(void **state)
{
        struct fake_process p = { 0 };
        _cleanup_(kc_scavenger_freep) struct kc_scavenger *s = fake_scavenger(&p);

        (void)state;
        assert_int_equal(kc_scavenger_run(s), 1);
        assert_int_equal(kc_fake_clock_advance(p.clock, 1000 * MS), 0);
        p.m.rss_anon = 100 * MIB + 512 * 1024;
        assert_int_equal(kc_scavenger_run(s), 0);
        p.m.mem_available = 49 * MIB;
        assert_int_equal(kc_scavenger_run(s), 1);
        p.m.rss_anon = 100 * MIB + 64 * 1024;
        assert_int_equal(kc_fake_clock_advance(p.clock, 1000 * MS), 0);
        assert_int_equal(kc_scavenger_run(s), 0);

        p.m.rss_anon = 200 * MIB;
        p.fail = -ENOENT;
        assert_int_equal(kc_scavenger_run(s), -ENOENT);
        assert_int_equal(p.trims, 2);
        p.fail = 0;
        assert_int_equal(kc_scavenger_run(s), 1);

        assert_int_equal(kc_scavenger_new(NULL, &s), -EINVAL);
        assert_int_equal(kc_scavenger_run(NULL), -EINVAL);
        kc_clock_free(p.clock);
}

/*
 * RssAnon does not show pages freed in a heap that shrank: a trim comes at
 * least once a minute, every 10 s under pressure.
 */
static void test_scavenger_age(void **state)
{
        struct fake_process p = { 0 };
        _cleanup_(kc_scavenger_freep) struct kc_scavenger *s = fake_scavenger(&p);

        (void)state;
        assert_int_equal(kc_scavenger_run(s), 1); /* ends at 1.01 s */
        assert_int_equal(kc_fake_clock_advance(p.clock, 59999 * MS), 0);
        assert_int_equal(kc_scavenger_run(s), 0);
        assert_int_equal(kc_fake_clock_advance(p.clock, 1 * MS), 0);
        assert_int_equal(kc_scavenger_run(s), 1);
        p.m.mem_available = 10 * MIB;
        assert_int_equal(kc_fake_clock_advance(p.clock, 9999 * MS), 0);
        assert_int_equal(kc_scavenger_run(s), 0);
        assert_int_equal(kc_fake_clock_advance(p.clock, 1 * MS), 0);
        assert_int_equal(kc_scavenger_run(s), 1);
        assert_int_equal(p.trims, 3);
        kc_clock_free(p.clock);
}

/* The real figures: 64 MB freed in the middle of the heap go back. */
static void test_scavenger_on_the_process(void **state)
{
        _cleanup_(kc_scavenger_freep) struct kc_scavenger *s = NULL;
        _cleanup_(kc_clock_freep) struct kc_clock *clock = NULL;
        char **blocks = calloc(N_BLOCKS, sizeof(*blocks));
        long before, after;
        int r;

        (void)state;
        assert_non_null(blocks);
        assert_int_equal(kc_fake_clock_new(&clock, 1000 * MS), 0);
        assert_int_equal(kc_scavenger_new(clock, &s), 0);
        assert_int_equal(kc_scavenger_run(s), 1); /* the first run measures */
        for (size_t i = 0; i < N_BLOCKS; i++) {
                blocks[i] = malloc(BLOCK);
                assert_non_null(blocks[i]);
                memset(blocks[i], 0xa5, BLOCK);
        }
        /*
         * Grown by 64 MB, all in use: a trim, which hands little back. (A
         * sanitizer's shadow memory makes RssAnon far larger: 64 MB may be
         * under 10 % of it.)
         */
        assert_int_equal(kc_fake_clock_advance(clock, 1000 * MS), 0);
        r = kc_scavenger_run(s);
        if (!SANITIZER_MALLOC)
                assert_int_equal(r, 1);
        for (size_t i = 0; i < N_BLOCKS - 1; i++)
                free(blocks[i]);
        /* Freed but not grown: RssAnon cannot tell; the next minute's trim can. */
        assert_int_equal(kc_fake_clock_advance(clock, 1000 * MS), 0);
        r = kc_scavenger_run(s);
        if (!SANITIZER_MALLOC)
                assert_int_equal(r, 0);
        before = rss_anon_kib();
        assert_int_equal(kc_fake_clock_advance(clock, 60000 * MS), 0);
        assert_int_equal(kc_scavenger_run(s), 1);
        after = rss_anon_kib();
        print_message("RssAnon %ld KiB -> %ld KiB after kc_scavenger_run()\n", before, after);
        if (!SANITIZER_MALLOC) {
                assert_true(after < before - 32 * 1024);
                assert_int_equal(kc_scavenger_trims(s), 3);
        }
        free(blocks[N_BLOCKS - 1]);
        free(blocks);
}

/*
 * Issue 18: a freed small block is kept for the next allocation of its size
 * class, the bytes kept stay under KC_BLOCK_KEPT_MAX, a large block is
 * malloc's alone, and kc_block_trim() hands every kept block back.
 */
static void test_blocks_reused_and_bounded(void **state)
{
        static void *many[(KC_BLOCK_KEPT_MAX / 2048) + 8];
        uint8_t cls = 0, cls2 = 0, big_cls = 9;
        void *a, *b, *big;
        size_t i;

        (void)state;
        (void)kc_block_trim();
        assert_int_equal(kc_block_kept(), 0);
#if !defined(__SANITIZE_ADDRESS__)
        /* Off only under AddressSanitizer and where something is preloaded (valgrind). */
        if (!getenv("LD_PRELOAD") || !*getenv("LD_PRELOAD"))
                assert_true(kc_block_keeps());
#endif
        a = kc_block_alloc(100, &cls);
        assert_non_null(a);
        if (!kc_block_keeps()) {
                /* AddressSanitizer's build: malloc's block of the size asked, never kept. */
                assert_int_equal(cls, 0);
                memset(a, 0x5a, 100);
                kc_block_free(a, cls);
                assert_int_equal(kc_block_kept(), 0);
                skip();
        }
        assert_int_equal(cls, 2); /* 65 to 128 bytes */
        memset(a, 0x5a, 128);     /* the whole class is the caller's */
        kc_block_free(a, cls);
        assert_int_equal(kc_block_kept(), 128);
        /* Another size of the class: the same block back. */
        b = kc_block_alloc(128, &cls2);
        assert_ptr_equal(b, a);
        assert_int_equal(cls2, cls);
        assert_int_equal(kc_block_kept(), 0);
        kc_block_free(b, cls2);
        /* Too large to keep: malloc's, class 0, freed at once. */
        big = kc_block_alloc(KC_BLOCK_MAX + 1, &big_cls);
        assert_non_null(big);
        assert_int_equal(big_cls, 0);
        kc_block_free(big, big_cls);
        assert_int_equal(kc_block_kept(), 128);
        kc_block_free(NULL, 3);
        assert_int_equal(kc_block_kept(), 128);
        assert_int_equal(kc_block_trim(), 128);
        /* More freed than the bound: the rest goes back to malloc. */
        for (i = 0; i < KC_ELEMENTSOF(many); i++) {
                many[i] = kc_block_alloc(KC_BLOCK_MAX, &cls);
                assert_non_null(many[i]);
        }
        for (i = 0; i < KC_ELEMENTSOF(many); i++)
                kc_block_free(many[i], cls);
        assert_int_equal(kc_block_kept(), KC_BLOCK_KEPT_MAX);
        assert_int_equal(kc_block_trim(), KC_BLOCK_KEPT_MAX);
        assert_int_equal(kc_block_kept(), 0);
}

/* Blocks allocated on one thread and freed on another, both at once (TSan: no race). */
static void *blocks_churn(void *arg)
{
        void *mine[64];
        uint8_t cls[64];

        for (int round = 0; round < 200; round++) {
                for (int i = 0; i < 64; i++) {
                        mine[i] = kc_block_alloc(64 + (size_t)(i % 8) * 64, &cls[i]);
                        assert_non_null(mine[i]);
                        memset(mine[i], round, 64);
                }
                for (int i = 0; i < 64; i++)
                        kc_block_free(mine[i], cls[i]);
        }
        return arg;
}

static void test_blocks_shared_by_threads(void **state)
{
        pthread_t t;

        (void)state;
        assert_int_equal(pthread_create(&t, NULL, blocks_churn, NULL), 0);
        (void)blocks_churn(NULL);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_true(kc_block_kept() <= KC_BLOCK_KEPT_MAX);
        (void)kc_block_trim();
        assert_int_equal(kc_block_kept(), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_tune_leaves_the_main_arena_alone),
                cmocka_unit_test(test_tune_keeps_the_users_arena_max),
                cmocka_unit_test(test_tunables_without_tcache),
                cmocka_unit_test(test_scavenge_returns_free_pages_in_the_middle_of_the_heap),
                cmocka_unit_test(test_scavenger_goal),
                cmocka_unit_test(test_scavenger_pace),
                cmocka_unit_test(test_scavenger_pressure),
                cmocka_unit_test(test_scavenger_age),
                cmocka_unit_test(test_scavenger_on_the_process),
                /* After the arena tests: their threads must be the process's first. */
                cmocka_unit_test(test_blocks_reused_and_bounded),
                cmocka_unit_test(test_blocks_shared_by_threads),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
