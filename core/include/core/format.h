/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file core/format.h
 * @brief printf into a new string.
 */
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * Formats into a new string, like asprintf().
 * @return the string (the caller frees it), or NULL on failure (ENOMEM, or
 * EOVERFLOW when the result does not fit an int), errno set.
 */
char *kc_strdup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** kc_strdup_printf() with a va_list; @p ap is consumed as by vprintf(). */
char *kc_strdup_vprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/**
 * Go's %q of @p s (strconv.Quote for ASCII): double-quoted, with \", \\,
 * \a \b \f \n \r \t \v and \xNN for other control bytes. The caller frees
 * it; NULL on ENOMEM.
 */
char *kc_go_quote(const char *s);
