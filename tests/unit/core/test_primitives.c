/* SPDX-License-Identifier: Apache-2.0 */
/* The small shared primitives: core/list.h, core/array.h, core/lock.h, core/enum_table.h. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/array.h"
#include "core/cleanup.h"
#include "core/enum_table.h"
#include "core/list.h"
#include "core/lock.h"

struct item {
        int v;
        struct kc_list link;
};

static int list_values(struct kc_list *head, int *out, int max)
{
        struct item *it;
        int n = 0;

        kc_list_for_each_entry (it, head, struct item, link) {
                assert_true(n < max);
                out[n++] = it->v;
        }
        return n;
}

static void test_list_order_and_del(void **state)
{
        struct kc_list head = KC_LIST_HEAD_INIT(head);
        struct item it[4];
        int got[8];

        (void)state;
        assert_true(kc_list_empty(&head));
        assert_null(kc_list_first(&head));
        for (int i = 0; i < 4; i++) {
                it[i].v = i;
                kc_list_init(&it[i].link);
                assert_false(kc_list_linked(&it[i].link));
        }
        kc_list_add_tail(&head, &it[1].link);
        kc_list_add_tail(&head, &it[2].link);
        kc_list_add_head(&head, &it[0].link);
        kc_list_add_tail(&head, &it[3].link);
        assert_int_equal(list_values(&head, got, 8), 4);
        for (int i = 0; i < 4; i++)
                assert_int_equal(got[i], i);
        assert_ptr_equal(kc_list_first(&head), &it[0].link);
        assert_ptr_equal(kc_list_last(&head), &it[3].link);

        /* Unlinking the middle, then the same node again (a no-op). */
        kc_list_del(&it[2].link);
        kc_list_del(&it[2].link);
        assert_false(kc_list_linked(&it[2].link));
        assert_int_equal(list_values(&head, got, 8), 3);
        assert_int_equal(got[0], 0);
        assert_int_equal(got[1], 1);
        assert_int_equal(got[2], 3);

        /* Move to front (the LRU use): delete, then add at the head. */
        kc_list_del(&it[3].link);
        kc_list_add_head(&head, &it[3].link);
        assert_int_equal(list_values(&head, got, 8), 3);
        assert_int_equal(got[0], 3);
        assert_int_equal(kc_list_entry(kc_list_last(&head), struct item, link)->v, 1);
}

static void test_list_safe_walk_frees(void **state)
{
        struct kc_list head = KC_LIST_HEAD_INIT(head);
        struct item *pos, *tmp;
        int freed = 0;

        (void)state;
        for (int i = 0; i < 100; i++) {
                struct item *x = malloc(sizeof(*x));

                assert_non_null(x);
                x->v = i;
                kc_list_add_tail(&head, &x->link);
        }
        kc_list_for_each_entry_safe (pos, tmp, &head, struct item, link) {
                if (pos->v % 2 == 0) {
                        kc_list_del(&pos->link);
                        free(pos);
                        freed++;
                }
        }
        assert_int_equal(freed, 50);
        kc_list_for_each_entry_safe (pos, tmp, &head, struct item, link) {
                assert_int_equal(pos->v % 2, 1);
                kc_list_del(&pos->link);
                free(pos);
        }
        assert_true(kc_list_empty(&head));
}

static void test_array_grow(void **state)
{
        _cleanup_free_ int *a = NULL;
        size_t cap = 0;
        int *before;

        (void)state;
        assert_int_equal(KC_ARRAY_GROW(a, cap, 0, 8), 0);
        assert_null(a);
        assert_int_equal(cap, 0);
        assert_int_equal(KC_ARRAY_GROW(a, cap, 1, 8), 0);
        assert_non_null(a);
        assert_int_equal(cap, 8);
        for (int i = 0; i < 8; i++)
                a[i] = i;
        before = a;
        assert_int_equal(KC_ARRAY_GROW(a, cap, 8, 8), 0); /* fits: untouched */
        assert_ptr_equal(a, before);
        assert_int_equal(KC_ARRAY_GROW(a, cap, 9, 8), 0);
        assert_int_equal(cap, 16);
        assert_int_equal(KC_ARRAY_GROW(a, cap, 100, 8), 0);
        assert_int_equal(cap, 128);
        for (int i = 0; i < 8; i++)
                assert_int_equal(a[i], i); /* kept */

        /* Overflow: -ENOMEM and the out-parameters untouched. */
        before = a;
        assert_int_equal(KC_ARRAY_GROW(a, cap, SIZE_MAX / 2, 8), -ENOMEM);
        assert_ptr_equal(a, before);
        assert_int_equal(cap, 128);

        /* No minimum given: starts at one element. */
        {
                _cleanup_free_ char *b = NULL;
                size_t bcap = 0;

                assert_int_equal(KC_ARRAY_GROW(b, bcap, 1, 0), 0);
                assert_int_equal(bcap, 1);
                assert_int_equal(KC_ARRAY_GROW(b, bcap, 3, 0), 0);
                assert_int_equal(bcap, 4);
        }
}

static pthread_mutex_t guarded = PTHREAD_MUTEX_INITIALIZER;

static int guarded_early_return(int x)
{
        KC_LOCK_GUARD(&guarded);

        assert_int_equal(pthread_mutex_trylock(&guarded), EBUSY);
        if (x > 0)
                return 1;
        return 0;
}

static void test_lock_guard_unlocks_on_every_return(void **state)
{
        (void)state;
        assert_int_equal(guarded_early_return(1), 1);
        assert_int_equal(pthread_mutex_trylock(&guarded), 0);
        pthread_mutex_unlock(&guarded);
        assert_int_equal(guarded_early_return(0), 0);
        assert_int_equal(pthread_mutex_trylock(&guarded), 0);
        pthread_mutex_unlock(&guarded);
        {
                KC_LOCK_GUARD(&guarded);
                assert_int_equal(pthread_mutex_trylock(&guarded), EBUSY);
        }
        assert_int_equal(pthread_mutex_trylock(&guarded), 0);
        pthread_mutex_unlock(&guarded);
}

enum color {
        COLOR_RED,
        COLOR_GREEN,
        COLOR_BLUE,
        _COLOR_MAX,
        _COLOR_INVALID = -EINVAL,
};
const char *color_to_string(enum color v);
enum color color_from_string(const char *s);
KC_DEFINE_STRING_TABLE_LOOKUP(
        color, enum color,
        _COLOR_MAX, [COLOR_RED] = "red", [COLOR_GREEN] = "green", [COLOR_BLUE] = "blue")

static void test_enum_table(void **state)
{
        (void)state;
        assert_string_equal(color_to_string(COLOR_RED), "red");
        assert_string_equal(color_to_string(COLOR_BLUE), "blue");
        assert_null(color_to_string(_COLOR_MAX));
        assert_null(color_to_string(_COLOR_INVALID));
        assert_int_equal(color_from_string("green"), COLOR_GREEN);
        assert_int_equal(color_from_string("Green"), _COLOR_INVALID);
        assert_int_equal(color_from_string(""), _COLOR_INVALID);
        assert_int_equal(color_from_string(NULL), _COLOR_INVALID);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_list_order_and_del),
                cmocka_unit_test(test_list_safe_walk_frees),
                cmocka_unit_test(test_array_grow),
                cmocka_unit_test(test_lock_guard_unlocks_on_every_return),
                cmocka_unit_test(test_enum_table),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
