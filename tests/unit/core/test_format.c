/* SPDX-License-Identifier: Apache-2.0 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/cleanup.h"
#include "core/format.h"

/* kc_strdup_printf() is va_start + kc_strdup_vprintf(): this covers both. */
static void test_strdup_printf(void **state)
{
        _cleanup_free_ char *s = NULL, *empty = NULL, *big = NULL;

        (void)state;
        s = kc_strdup_printf("%s_%s_%u", "pod", "ns", 3u);
        assert_non_null(s);
        assert_string_equal(s, "pod_ns_3");
        free(TAKE_PTR(s));

        s = kc_strdup_printf("%s: %d%%", "attempt", 42);
        assert_non_null(s);
        assert_string_equal(s, "attempt: 42%");

        empty = kc_strdup_printf("%s", "");
        assert_non_null(empty);
        assert_string_equal(empty, "");

        /* Longer than any small stack buffer a formatter might start with. */
        big = kc_strdup_printf("%0*d", 5000, 7);
        assert_non_null(big);
        assert_int_equal(strlen(big), 5000);
        assert_int_equal(big[4999], '7');
        assert_int_equal(big[0], '0');
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_strdup_printf),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
