/* SPDX-License-Identifier: Apache-2.0 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "core/cleanup.h"
#include "core/map.h"

#define N 100000

/* The reference model: key i is present iff ref_present[i]. */
static char keys[N][40];
static char keys_copy[N][40];
static bool ref_present[N];
static uintptr_t ref_value[N];

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static uint64_t rng(void)
{
        /* xorshift64* */
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return rng_state * 0x2545f4914f6cdd1dULL;
}

static int setup(void **state)
{
        (void)state;
        for (int i = 0; i < N; i++) {
                /* UID-like keys, plus a few short and shared-prefix ones. */
                if (i % 10 == 0)
                        snprintf(keys[i], sizeof(keys[i]), "k%d", i);
                else
                        snprintf(keys[i], sizeof(keys[i]), "%08x-1b2c-4d5e-8f90-%012d",
                                 i * 2654435761u, i);
                memcpy(keys_copy[i], keys[i], sizeof(keys[i]));
                ref_present[i] = false;
        }
        return 0;
}

static void check_against_reference(const struct kc_map *m)
{
        static bool seen[N];
        size_t expected = 0, iter = 0, count = 0;
        const char *key;
        void *value;

        for (int i = 0; i < N; i++) {
                void *v = kc_map_get(m, keys_copy[i]); /* equal string, other pointer */

                if (ref_present[i]) {
                        expected++;
                        assert_ptr_equal(v, (void *)ref_value[i]);
                } else {
                        assert_null(v);
                }
        }
        assert_int_equal(kc_map_size(m), expected);

        memset(seen, 0, sizeof(seen));
        while (kc_map_next(m, &iter, &key, &value)) {
                uintptr_t idx = (uintptr_t)value >> 8;

                assert_true(idx < N);
                assert_true(ref_present[idx]);
                assert_false(seen[idx]);
                seen[idx] = true;
                assert_string_equal(key, keys[idx]);
                assert_ptr_equal(value, (void *)ref_value[idx]);
                count++;
        }
        assert_int_equal(count, expected);
        /* A finished iteration stays finished. */
        assert_false(kc_map_next(m, &iter, &key, &value));
}

/* Values encode the key index so iteration can find it: (i << 8) | tag. */
static void *val(int i, unsigned tag)
{
        return (void *)(((uintptr_t)i << 8) | (tag & 0xff) | 1);
}

static void test_map_basic(void **state)
{
        _cleanup_(kc_map_freep) struct kc_map *m = NULL;
        size_t iter = 0;
        const char *k;
        void *v;

        (void)state;
        assert_int_equal(kc_map_new(&m), 0);
        assert_int_equal(kc_map_size(m), 0);
        assert_false(kc_map_next(m, &iter, &k, &v));
        assert_null(kc_map_get(m, "a"));
        assert_null(kc_map_remove(m, "a"));
        assert_int_equal(kc_map_put(m, "a", (void *)1), 0);
        assert_int_equal(kc_map_put(m, "", (void *)2), 0);
        assert_ptr_equal(kc_map_get(m, "a"), (void *)1);
        assert_ptr_equal(kc_map_get(m, ""), (void *)2);
        assert_int_equal(kc_map_put(m, "a", (void *)3), 0);
        assert_int_equal(kc_map_size(m), 2);
        assert_ptr_equal(kc_map_remove(m, "a"), (void *)3);
        assert_null(kc_map_get(m, "a"));
        assert_int_equal(kc_map_size(m), 1);
        assert_null(kc_map_free(NULL));
}

/* kc_map_reserve grows once up front; kc_map_clear empties but keeps working. */
static void test_map_reserve_and_clear(void **state)
{
        _cleanup_(kc_map_freep) struct kc_map *m = NULL;
        static char keys[5000][16];
        size_t i, iter = 0;

        (void)state;
        assert_int_equal(kc_map_new(&m), 0);
        assert_int_equal(kc_map_put(m, "before", (void *)7), 0);
        assert_int_equal(kc_map_reserve(m, 5000), 0);
        assert_ptr_equal(kc_map_get(m, "before"), (void *)7); /* survives the rehash */
        for (i = 0; i < 5000; i++) {
                snprintf(keys[i], sizeof(keys[i]), "k%zu", i);
                assert_int_equal(kc_map_put(m, keys[i], (void *)(i + 1)), 0);
        }
        assert_int_equal(kc_map_size(m), 5001);
        assert_int_equal(kc_map_reserve(m, 10), 0); /* never shrinks, never fails */
        for (i = 0; i < 5000; i++)
                assert_ptr_equal(kc_map_get(m, keys[i]), (void *)(i + 1));
        kc_map_clear(m);
        assert_int_equal(kc_map_size(m), 0);
        assert_null(kc_map_get(m, "k42"));
        assert_null(kc_map_get(m, "before"));
        assert_false(kc_map_next(m, &iter, NULL, NULL));
        assert_int_equal(kc_map_put(m, keys[42], (void *)42), 0);
        assert_ptr_equal(kc_map_get(m, "k42"), (void *)42);
        assert_int_equal(kc_map_size(m), 1);
}

static void test_map_100k_against_reference(void **state)
{
        _cleanup_(kc_map_freep) struct kc_map *m = NULL;

        (void)state;
        assert_int_equal(kc_map_new(&m), 0);

        /* Insert everything. */
        for (int i = 0; i < N; i++) {
                assert_int_equal(kc_map_put(m, keys[i], val(i, 0)), 0);
                ref_present[i] = true;
                ref_value[i] = (uintptr_t)val(i, 0);
        }
        check_against_reference(m);

        /* Replace every other value. */
        for (int i = 0; i < N; i += 2) {
                assert_int_equal(kc_map_put(m, keys[i], val(i, 2)), 0);
                ref_value[i] = (uintptr_t)val(i, 2);
        }
        assert_int_equal(kc_map_size(m), N);

        /* Remove every third key (this exercises backward shifts). */
        for (int i = 0; i < N; i += 3) {
                assert_ptr_equal(kc_map_remove(m, keys_copy[i]), (void *)ref_value[i]);
                ref_present[i] = false;
                assert_null(kc_map_remove(m, keys[i]));
        }
        check_against_reference(m);

        /* Random mix of operations. */
        for (int op = 0; op < 300000; op++) {
                int i = (int)(rng() % N);
                unsigned tag = (unsigned)(rng() & 0xfe);

                switch (rng() % 3) {
                case 0:
                case 1:
                        assert_int_equal(kc_map_put(m, keys[i], val(i, tag)), 0);
                        ref_present[i] = true;
                        ref_value[i] = (uintptr_t)val(i, tag);
                        break;
                default:
                        assert_ptr_equal(kc_map_remove(m, keys[i]),
                                         ref_present[i] ? (void *)ref_value[i] : NULL);
                        ref_present[i] = false;
                        break;
                }
        }
        check_against_reference(m);

        /* Remove everything. */
        for (int i = 0; i < N; i++) {
                kc_map_remove(m, keys[i]);
                ref_present[i] = false;
        }
        check_against_reference(m);
        assert_int_equal(kc_map_size(m), 0);
}

/* PLEG's use: 10,000 records looked up by equal strings at other addresses
 * (the listing's copies of the UIDs). The cost is bench/bench_relist's. */
static void test_map_10k_lookups_by_copy(void **state)
{
        _cleanup_(kc_map_freep) struct kc_map *m = NULL;

        (void)state;
        assert_int_equal(kc_map_new(&m), 0);
        for (int i = 0; i < 10000; i++)
                assert_int_equal(kc_map_put(m, keys[i], val(i, 0)), 0);
        for (int i = 0; i < 10000; i++) {
                assert_ptr_not_equal(keys_copy[i], keys[i]);
                assert_ptr_equal(kc_map_get(m, keys_copy[i]), val(i, 0));
        }
}

/*
 * The prefetch pair (issue 18) changes nothing, and the entry's guess is the
 * value of the key's hash: for these keys, whose 64-bit hashes are distinct,
 * the key's own value, also after removals moved entries back; NULL for an
 * absent key and in an empty map.
 */
static void test_map_prefetch(void **state)
{
        _cleanup_(kc_map_freep) struct kc_map *m = NULL;

        (void)state;
        assert_int_equal(kc_map_new(&m), 0);
        kc_map_prefetch_slot(m, "a");
        assert_null(kc_map_prefetch_entry(m, "a"));
        for (int i = 0; i < 10000; i++)
                assert_int_equal(kc_map_put(m, keys[i], val(i, 0)), 0);
        for (int i = 0; i < 10000; i += 3)
                assert_ptr_equal(kc_map_remove(m, keys[i]), val(i, 0));
        for (int i = 0; i < 10000; i++) {
                kc_map_prefetch_slot(m, keys_copy[i]);
                if (i % 3 == 0)
                        assert_null(kc_map_prefetch_entry(m, keys_copy[i]));
                else
                        assert_ptr_equal(kc_map_prefetch_entry(m, keys_copy[i]), val(i, 0));
        }
        assert_null(kc_map_prefetch_entry(m, "not-a-key"));
        assert_int_equal(kc_map_size(m), 10000 - 3334);
        for (int i = 0; i < 10000; i++)
                assert_ptr_equal(kc_map_get(m, keys[i]), i % 3 == 0 ? NULL : val(i, 0));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_map_basic),
                cmocka_unit_test(test_map_reserve_and_clear),
                cmocka_unit_test_setup(test_map_100k_against_reference, setup),
                cmocka_unit_test_setup(test_map_10k_lookups_by_copy, setup),
                cmocka_unit_test_setup(test_map_prefetch, setup),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
