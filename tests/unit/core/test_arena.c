/* SPDX-License-Identifier: Apache-2.0 */
#include <setjmp.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "core/arena.h"
#include "core/cleanup.h"

static void test_arena_alignment_and_zero(void **state)
{
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        size_t sizes[] = { 0, 1, 3, 7, 16, 17, 100, 4095, 4096, 4097, 16384, 100000, 5 };

        (void)state;
        assert_int_equal(kc_arena_new(&a), 0);
        for (int round = 0; round < 200; round++) {
                for (size_t i = 0; i < KC_ELEMENTSOF(sizes); i++) {
                        unsigned char *p = kc_arena_alloc(a, sizes[i]);

                        assert_non_null(p);
                        assert_int_equal((uintptr_t)p % alignof(max_align_t), 0);
                        for (size_t j = 0; j < sizes[i]; j++)
                                assert_int_equal(p[j], 0);
                        /* Dirty it so overlap with a later block would show. */
                        memset(p, 0xa5, sizes[i]);
                }
        }
}

static void test_arena_distinct_blocks(void **state)
{
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        uint32_t *blocks[5000];

        (void)state;
        assert_int_equal(kc_arena_new(&a), 0);
        for (uint32_t i = 0; i < KC_ELEMENTSOF(blocks); i++) {
                blocks[i] = kc_arena_alloc(a, (i % 7 == 0) ? 8000 : sizeof(uint32_t) * 3);
                assert_non_null(blocks[i]);
                blocks[i][0] = i;
                blocks[i][2] = ~i;
        }
        for (uint32_t i = 0; i < KC_ELEMENTSOF(blocks); i++) {
                assert_int_equal(blocks[i][0], i);
                assert_int_equal(blocks[i][1], 0);
                assert_int_equal(blocks[i][2], ~i);
        }
}

static void test_arena_strdup(void **state)
{
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        char big[40000];
        char *s;

        (void)state;
        assert_int_equal(kc_arena_new(&a), 0);
        assert_null(kc_arena_strdup(a, NULL));
        s = kc_arena_strdup(a, "");
        assert_non_null(s);
        assert_string_equal(s, "");
        s = kc_arena_strdup(a, "pod-uid-1234");
        assert_string_equal(s, "pod-uid-1234");
        memset(big, 'q', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        s = kc_arena_strdup(a, big);
        assert_non_null(s);
        assert_ptr_not_equal(s, big);
        assert_string_equal(s, big);
        assert_null(kc_arena_free(NULL));
}

/* kc_arena_memdup: an aligned copy, small or chunk-sized, and a distinct block for 0 bytes. */
static void test_arena_memdup(void **state)
{
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        static unsigned char big[100000];
        const uint64_t small[3] = { 1, UINT64_MAX, 42 };
        uint64_t *c;
        unsigned char *b;
        void *z1, *z2;

        (void)state;
        assert_int_equal(kc_arena_new(&a), 0);
        (void)kc_arena_strdup(a, "x"); /* the next block starts past an odd one */
        c = kc_arena_memdup(a, small, sizeof(small));
        assert_non_null(c);
        assert_int_equal((uintptr_t)c % _Alignof(max_align_t), 0);
        assert_memory_equal(c, small, sizeof(small));
        for (size_t i = 0; i < sizeof(big); i++)
                big[i] = (unsigned char)(i * 7 + 1);
        b = kc_arena_memdup(a, big, sizeof(big));
        assert_non_null(b);
        assert_ptr_not_equal(b, big);
        assert_memory_equal(b, big, sizeof(big));
        z1 = kc_arena_memdup(a, NULL, 0);
        z2 = kc_arena_memdup(a, NULL, 0);
        assert_non_null(z1);
        assert_ptr_not_equal(z1, z2);
}

/* Full-size chunks are recycled between arenas, and a block cut from a
 * recycled (dirty) chunk is still zeroed. */
static void test_arena_recycled_chunks_are_zeroed(void **state)
{
        enum { N = 4000 };
        struct kc_arena *a = NULL, *b = NULL;
        unsigned char *blocks[N];
        size_t i, j, reused = 0;

        (void)state;
        assert_int_equal(kc_arena_new(&a), 0);
        /* Enough 100-byte blocks to fill many full-size chunks; dirty them. */
        for (i = 0; i < N; i++) {
                blocks[i] = kc_arena_alloc(a, 100);
                assert_non_null(blocks[i]);
                memset(blocks[i], 0xff, 100);
        }
        kc_arena_free(a);

        assert_int_equal(kc_arena_new(&b), 0);
        for (i = 0; i < N; i++) {
                unsigned char *p = kc_arena_alloc(b, 100);

                assert_non_null(p);
                for (j = 0; j < 100; j++)
                        assert_int_equal(p[j], 0);
                /* Addresses only: the old blocks are never dereferenced. */
                for (j = 0; j < N && !reused; j++)
                        if ((uintptr_t)blocks[j] == (uintptr_t)p)
                                reused++;
        }
        /* The second arena got at least one block at an address of the first:
         * its chunks came from the cache, not from fresh memory. */
        assert_true(reused > 0);
        kc_arena_free(b);
}

/*
 * A large block's chunk is recycled too, for a request of up to its size
 * and down to half of it, zeroed again (issue 18: a listing's items array,
 * new at every changed relist, was paged in afresh each time).
 */
static void test_arena_recycled_large_chunks(void **state)
{
        enum { BIG = 1 << 20 };
        struct kc_arena *a = NULL, *b = NULL;
        unsigned char *p, *q;
        size_t j;

        (void)state;
        assert_int_equal(kc_arena_new(&a), 0);
        p = kc_arena_alloc(a, BIG);
        assert_non_null(p);
        memset(p, 0xff, BIG);
        kc_arena_free(a);

        assert_int_equal(kc_arena_new(&b), 0);
        q = kc_arena_alloc(b, BIG - BIG / 4);
        assert_non_null(q);
        /* Addresses only: the old block is never dereferenced through p. */
        assert_true((uintptr_t)q == (uintptr_t)p);
        for (j = 0; j < BIG - BIG / 4; j++)
                if (q[j] != 0)
                        fail_msg("byte %zu of a recycled chunk is not zeroed", j);
        kc_arena_free(b);
}

/*
 * Issue 18: the chunk cache goes back to malloc once a whole period between
 * two calls passed without a take; a take in the period keeps it.
 */
static void test_arena_cache_released_when_idle(void **state)
{
        enum { BIG = 1 << 20 };
        struct kc_arena *a = NULL;

        (void)state;
        kc_arena_cache_release_idle();
        kc_arena_cache_release_idle(); /* whatever earlier tests left is gone */
        assert_int_equal(kc_arena_new(&a), 0);
        assert_non_null(kc_arena_alloc(a, BIG));
        kc_arena_free(a); /* cached */
        assert_int_equal(kc_arena_new(&a), 0);
        assert_non_null(kc_arena_alloc(a, BIG)); /* taken from the cache */
        kc_arena_free(a);
        /* A take since the last call: the cache was in use, it stays. */
        assert_int_equal(kc_arena_cache_release_idle(), 0);
        /* None since: released, and nothing is left after. */
        assert_true(kc_arena_cache_release_idle() >= BIG);
        assert_int_equal(kc_arena_cache_release_idle(), 0);
}

/* A shared arena lives until its last reference goes (issue 18: list memos share results). */
static void test_arena_ref(void **state)
{
        struct kc_arena *a = NULL;
        char *s;

        (void)state;
        assert_int_equal(kc_arena_new(&a), 0);
        s = kc_arena_strdup(a, "shared");
        assert_non_null(s);
        assert_false(kc_arena_shared(a));
        assert_true(kc_arena_sole(a));
        assert_ptr_equal(kc_arena_ref(a), a);
        assert_true(kc_arena_shared(a));
        assert_false(kc_arena_sole(a));
        assert_null(kc_arena_ref(NULL));
        assert_false(kc_arena_sole(NULL));
        assert_null(kc_arena_free(a)); /* one reference left */
        assert_false(kc_arena_shared(a));
        assert_true(kc_arena_sole(a));
        /* Still readable: ASan reports a use after free here without the count. */
        assert_string_equal(s, "shared");
        assert_null(kc_arena_free(a));
}

/*
 * An arena holding others keeps them alive until it is freed itself, then
 * drops exactly the references it took (issue 18: the simulated runtime's
 * results point into its objects' arenas). ASan reports the use after free
 * or the leak when a hold is lost or released twice.
 */
static void test_arena_hold(void **state)
{
        struct kc_arena *result = NULL, *obj[3] = { NULL };
        const char *s[3];
        size_t i;

        (void)state;
        assert_int_equal(kc_arena_new(&result), 0);
        assert_int_equal(kc_arena_hold(result, result), -EINVAL);
        assert_int_equal(kc_arena_hold(NULL, result), -EINVAL);
        assert_int_equal(kc_arena_hold(result, NULL), 0);
        for (i = 0; i < 3; i++) {
                assert_int_equal(kc_arena_new(&obj[i]), 0);
                s[i] = kc_arena_strdup(obj[i], i == 0 ? "zero" : i == 1 ? "one" : "two");
                assert_int_equal(kc_arena_hold(result, obj[i]), 0);
                assert_true(kc_arena_shared(obj[i]));
        }
        /* The same arena twice: two references, both dropped with the holder. */
        assert_int_equal(kc_arena_hold(result, obj[1]), 0);
        for (i = 0; i < 3; i++)
                kc_arena_free(obj[i]);
        assert_string_equal(s[0], "zero");
        assert_string_equal(s[1], "one");
        assert_string_equal(s[2], "two");
        /* A held arena shared elsewhere outlives the holder. */
        kc_arena_ref(obj[2]);
        assert_null(kc_arena_free(result));
        assert_false(kc_arena_shared(obj[2]));
        assert_string_equal(s[2], "two");
        kc_arena_free(obj[2]);
}

/* An arena made with its first block: zeroed, aligned, more blocks after it, one free. */
static void test_arena_new_block(void **state)
{
        struct kc_arena *a = NULL;
        unsigned char *block = NULL, *more;
        size_t j;

        (void)state;
        assert_int_equal(kc_arena_new_block(300, &a, (void **)&block), 0);
        assert_non_null(block);
        assert_int_equal((uintptr_t)block % alignof(max_align_t), 0);
        for (j = 0; j < 300; j++)
                assert_int_equal(block[j], 0);
        memset(block, 0x5a, 300);
        more = kc_arena_alloc(a, 64);
        assert_non_null(more);
        assert_true(more + 64 <= block || more >= block + 300);
        assert_string_equal(kc_arena_strdup(a, "after"), "after");
        kc_arena_ref(a);
        assert_null(kc_arena_free(a));
        assert_int_equal(block[299], 0x5a); /* still there: one reference left */
        assert_null(kc_arena_free(a));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_arena_alignment_and_zero),
                cmocka_unit_test(test_arena_distinct_blocks),
                cmocka_unit_test(test_arena_strdup),
                cmocka_unit_test(test_arena_memdup),
                cmocka_unit_test(test_arena_recycled_chunks_are_zeroed),
                cmocka_unit_test(test_arena_recycled_large_chunks),
                cmocka_unit_test(test_arena_cache_released_when_idle),
                cmocka_unit_test(test_arena_ref),
                cmocka_unit_test(test_arena_hold),
                cmocka_unit_test(test_arena_new_block),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
