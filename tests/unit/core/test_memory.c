/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kc_memory_*: the malloc arena cap and the scavenger (core/memory.c).
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
#include <cmocka.h>

#include "core/cleanup.h"
#include "core/memory.h"

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

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_tune_leaves_the_main_arena_alone),
                cmocka_unit_test(test_tune_keeps_the_users_arena_max),
                cmocka_unit_test(test_scavenge_returns_free_pages_in_the_middle_of_the_heap),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
