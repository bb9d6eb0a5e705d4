/* SPDX-License-Identifier: Apache-2.0 */
/*
 * printf into a new string: the one vasprintf() wrapper the tree uses, so
 * callers see a malloc'd string or NULL and never vasprintf()'s undefined
 * out-parameter on failure.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/format.h"

char *kc_strdup_vprintf(const char *fmt, va_list ap)
{
        char *s;

        if (vasprintf(&s, fmt, ap) < 0)
                return NULL;
        return s;
}

char *kc_strdup_printf(const char *fmt, ...)
{
        va_list ap;
        char *s;

        va_start(ap, fmt);
        s = kc_strdup_vprintf(fmt, ap);
        va_end(ap);
        return s;
}

char *kc_go_quote(const char *s)
{
        static const char from[] = "\"\\\a\b\f\n\r\t\v", to[] = "\"\\abfnrtv";
        char *q = malloc(strlen(s) * 4 + 3), *o;
        const char *p;

        if (!q)
                return NULL;
        o = q;
        *o++ = '"';
        for (; *s; s++) {
                unsigned char ch = (unsigned char)*s;

                if ((p = strchr(from, ch))) {
                        *o++ = '\\';
                        *o++ = to[p - from];
                } else if (ch < 0x20 || ch == 0x7f) {
                        o += sprintf(o, "\\x%02x", ch);
                } else {
                        *o++ = (char)ch;
                }
        }
        *o++ = '"';
        *o = '\0';
        return q;
}
