/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "core/cleanup.h"
#include "core/duration.h"

struct case_ {
        int64_t ns;
        const char *want;
};

/* Expected strings are Go's time.Duration(ns).String(). */
static const struct case_ cases[] = {
        { 0, "0s" },
        { 1, "1ns" },
        { 999, "999ns" },
        { 1100, "1.1\xc2\xb5s" },
        { 1000, "1\xc2\xb5s" },
        { 2200 * KC_NSEC_PER_USEC, "2.2ms" },
        { 3300 * KC_NSEC_PER_MSEC, "3.3s" },
        { 4 * KC_NSEC_PER_MIN + 5 * KC_NSEC_PER_SEC, "4m5s" },
        { 4 * KC_NSEC_PER_MIN + 5001 * KC_NSEC_PER_MSEC, "4m5.001s" },
        { 5 * 60 * KC_NSEC_PER_MIN + 6 * KC_NSEC_PER_MIN + 7001 * KC_NSEC_PER_MSEC, "5h6m7.001s" },
        { 8 * KC_NSEC_PER_MIN + 1, "8m0.000000001s" },
        { -KC_NSEC_PER_SEC, "-1s" },
        { -1, "-1ns" },
        { 4 * KC_NSEC_PER_MIN, "4m0s" },
        { 3 * KC_NSEC_PER_MIN, "3m0s" },
        { 60 * KC_NSEC_PER_MIN, "1h0m0s" },
        { 181 * KC_NSEC_PER_SEC, "3m1s" },
        { 500 * KC_NSEC_PER_MSEC, "500ms" },
        { 1500, "1.5\xc2\xb5s" },
        { 100 * 60 * KC_NSEC_PER_MIN, "100h0m0s" },
        { INT64_MAX, "2562047h47m16.854775807s" },
        { INT64_MIN, "-2562047h47m16.854775808s" },
};

static void test_duration_table(void **state)
{
        (void)state;
        for (size_t i = 0; i < KC_ELEMENTSOF(cases); i++) {
                char buf[KC_DURATION_MAX];

                assert_ptr_equal(kc_format_duration(cases[i].ns, buf), buf);
                assert_string_equal(buf, cases[i].want);
        }
}

static void test_duration_fits(void **state)
{
        char buf[KC_DURATION_MAX];

        (void)state;
        /* The longest output must fit with its terminator. */
        memset(buf, 'x', sizeof(buf));
        kc_format_duration(INT64_MIN, buf);
        assert_true(strlen(buf) < KC_DURATION_MAX);
}

/* Every formatted duration parses back (INT64_MIN excepted: its magnitude overflows). */
static void test_parse_round_trip(void **state)
{
        (void)state;
        for (size_t i = 0; i < KC_ELEMENTSOF(cases); i++) {
                int64_t v = 42;

                if (cases[i].ns == INT64_MIN)
                        continue;
                assert_int_equal(kc_parse_duration(cases[i].want, &v), 0);
                assert_int_equal(v, cases[i].ns);
        }
}

static void test_parse_forms(void **state)
{
        static const struct {
                const char *in;
                int64_t ns;
        } ok[] = {
                { "0", 0 },
                { "+5s", 5 * KC_NSEC_PER_SEC },
                { "1.5h", 90 * KC_NSEC_PER_MIN },
                { "2h45m", 165 * KC_NSEC_PER_MIN },
                { "300ms", 300 * KC_NSEC_PER_MSEC },
                { "1us", 1000 },
                { "1\xce\xbcs", 1000 },
                { ".5s", 500 * KC_NSEC_PER_MSEC },
                { "1.s", KC_NSEC_PER_SEC },
                { "1m1m", 2 * KC_NSEC_PER_MIN },
                { "0.0000000019s", 1 }, /* extra digits are dropped, not rounded up */
        };
        static const char *const bad[] = { "",    "-",  "s",   "1",   "1x",
                                           "1.5", ".s", "1 s", "1s ", "--1s" };
        int64_t v;

        (void)state;
        for (size_t i = 0; i < KC_ELEMENTSOF(ok); i++) {
                assert_int_equal(kc_parse_duration(ok[i].in, &v), 0);
                assert_int_equal(v, ok[i].ns);
        }
        for (size_t i = 0; i < KC_ELEMENTSOF(bad); i++) {
                v = 7;
                assert_int_equal(kc_parse_duration(bad[i], &v), -EINVAL);
                assert_int_equal(v, 7); /* untouched on failure */
        }
        assert_int_equal(kc_parse_duration("2562048h", &v), -ERANGE);
        assert_int_equal(kc_parse_duration("99999999999999999999999s", &v), -ERANGE);
        assert_int_equal(kc_parse_duration(NULL, &v), -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_duration_table),
                cmocka_unit_test(test_duration_fits),
                cmocka_unit_test(test_parse_round_trip),
                cmocka_unit_test(test_parse_forms),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
