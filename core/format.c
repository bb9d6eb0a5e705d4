/* SPDX-License-Identifier: Apache-2.0 */
/*
 * printf into a new string: the one vasprintf() wrapper the tree uses, so
 * callers see a malloc'd string or NULL and never vasprintf()'s undefined
 * out-parameter on failure.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

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
