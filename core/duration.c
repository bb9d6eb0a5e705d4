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
#include <string.h>

#include "kc_core.h"

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
