/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Go's time.Duration.String(), digit for digit. The text is built backwards
 * from the end of a scratch buffer, then moved to the front of @p buf:
 *
 *   |d| < 1s  → one unit (ns, µs, ms) with up to 0/3/6 fraction digits;
 *   |d| >= 1s → [h][m]s with up to 9 fraction digits on the seconds; the
 *               hour and minute parts appear only from the first non-zero
 *               one on ("4m0s", "1h0m0s").
 *
 * Fractions drop trailing zeros, and the '.' when nothing is left. The
 * magnitude is computed in uint64_t, so INT64_MIN needs no special case.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/cleanup.h"
#include "core/duration.h"

/* Writes the fraction of @p *v (prec digits) before @p end; updates *v. */
static char *put_frac(char *end, uint64_t *v, int prec)
{
        bool nonzero = false;

        for (int i = 0; i < prec; i++) {
                unsigned digit = (unsigned)(*v % 10);

                nonzero = nonzero || digit != 0;
                if (nonzero)
                        *--end = (char)('0' + digit);
                *v /= 10;
        }
        if (nonzero)
                *--end = '.';
        return end;
}

static char *put_uint(char *end, uint64_t v)
{
        do {
                *--end = (char)('0' + v % 10);
                v /= 10;
        } while (v > 0);
        return end;
}

char *kc_format_duration(int64_t ns, char buf[static KC_DURATION_MAX])
{
        char tmp[KC_DURATION_MAX];
        char *end = tmp + sizeof(tmp), *p = end;
        bool neg = ns < 0;
        /* Two's complement negation in unsigned arithmetic is well defined. */
        uint64_t u = neg ? -(uint64_t)ns : (uint64_t)ns;

        if (u == 0) {
                memcpy(buf, "0s", 3);
                return buf;
        }

        *--p = 's';
        if (u < (uint64_t)KC_NSEC_PER_SEC) {
                int prec;

                if (u < (uint64_t)KC_NSEC_PER_USEC) {
                        prec = 0;
                        *--p = 'n';
                } else if (u < (uint64_t)KC_NSEC_PER_MSEC) {
                        prec = 3;
                        /* U+00B5 MICRO SIGN in UTF-8, like Go. */
                        *--p = '\xb5';
                        *--p = '\xc2';
                } else {
                        prec = 6;
                        *--p = 'm';
                }
                p = put_frac(p, &u, prec);
                p = put_uint(p, u);
        } else {
                p = put_frac(p, &u, 9);
                /* u is now whole seconds. */
                p = put_uint(p, u % 60);
                u /= 60;
                if (u > 0) {
                        *--p = 'm';
                        p = put_uint(p, u % 60);
                        u /= 60;
                        if (u > 0) {
                                *--p = 'h';
                                p = put_uint(p, u);
                        }
                }
        }
        if (neg)
                *--p = '-';

        memcpy(buf, p, (size_t)(end - p));
        buf[end - p] = '\0';
        return buf;
}

/* Units time.ParseDuration accepts, longest spelling first where one is a prefix. */
static const struct {
        const char *name;
        uint64_t ns;
} units[] = {
        { "ns", 1 },
        { "us", 1000 },
        { "\xc2\xb5s", 1000 }, /* U+00B5 micro sign */
        { "\xce\xbcs", 1000 }, /* U+03BC Greek mu */
        { "ms", 1000000 },
        { "s", 1000000000 },
        { "m", 60ull * 1000000000 },
        { "h", 3600ull * 1000000000 },
};

/* Matches the unit at @p s (the longest one: "ms" before "m"). */
static int match_unit(const char *s, uint64_t *ret_ns)
{
        size_t best = 0;

        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
                size_t n = strlen(units[i].name);

                if (n > best && strncmp(s, units[i].name, n) == 0) {
                        best = n;
                        *ret_ns = units[i].ns;
                }
        }
        return (int)best;
}

int kc_parse_duration(const char *s, int64_t *ret)
{
        const char *p = s;
        bool neg = false;
        uint64_t total = 0;

        if (!s || !ret)
                return -EINVAL;
        if (*p == '-' || *p == '+')
                neg = *p++ == '-';
        if (strcmp(p, "0") == 0) {
                *ret = 0;
                return 0;
        }
        if (!*p)
                return -EINVAL;
        while (*p) {
                uint64_t whole = 0, frac = 0, scale = 1, unit = 0, v;
                bool digits = false;
                int n;

                for (; *p >= '0' && *p <= '9'; p++, digits = true) {
                        if (whole > (UINT64_MAX - 9) / 10)
                                return -ERANGE;
                        whole = whole * 10 + (uint64_t)(*p - '0');
                }
                if (*p == '.') {
                        for (p++; *p >= '0' && *p <= '9'; p++, digits = true)
                                /* Digits beyond what a nanosecond can hold are dropped. */
                                if (scale <= UINT64_MAX / 100) {
                                        frac = frac * 10 + (uint64_t)(*p - '0');
                                        scale *= 10;
                                }
                }
                if (!digits)
                        return -EINVAL;
                n = match_unit(p, &unit);
                if (n == 0)
                        return -EINVAL; /* a missing or unknown unit */
                p += n;
                if (whole > (uint64_t)INT64_MAX / unit)
                        return -ERANGE;
                v = whole * unit;
                /* frac/scale of a unit, rounded down like Go. */
                v += (uint64_t)((long double)frac * (long double)unit / (long double)scale);
                if (v > (uint64_t)INT64_MAX - total)
                        return -ERANGE;
                total += v;
        }
        *ret = neg ? -(int64_t)total : (int64_t)total;
        return 0;
}
