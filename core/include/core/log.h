/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file core/log.h
 * @brief klog-style logging.
 */
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Header: "Lmmdd hh:mm:ss.uuuuuu tid file:line] msg", L one of I W E F,
 * tid right-aligned in 7 columns as klog does with its pid. Callers write
 * structured fields into the message as key="value".
 */
enum kc_log_severity {
        KC_LOG_INFO,
        KC_LOG_WARNING,
        KC_LOG_ERROR,
        KC_LOG_FATAL,
        _KC_LOG_SEVERITY_MAX,
        _KC_LOG_SEVERITY_INVALID = -EINVAL,
};

/** Set once at start-up (-v); read by any thread. */
void kc_log_set_verbosity(int v);
int kc_log_get_verbosity(void);
/** Where log lines go (default stderr). NULL restores stderr. */
void kc_log_set_output(FILE *f);

void kc_log_internal(enum kc_log_severity sev, const char *file, int line, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

#define kc_log_info(...) kc_log_internal(KC_LOG_INFO, __FILE__, __LINE__, __VA_ARGS__)
#define kc_log_warn(...) kc_log_internal(KC_LOG_WARNING, __FILE__, __LINE__, __VA_ARGS__)
#define kc_log_error(...) kc_log_internal(KC_LOG_ERROR, __FILE__, __LINE__, __VA_ARGS__)
#define kc_log_v(level, ...)                                                                       \
        do {                                                                                       \
                if (kc_log_get_verbosity() >= (level))                                             \
                        kc_log_info(__VA_ARGS__);                                                  \
        } while (0)
/** Logs at error level with errno set from @p r (so %m names it) and
 * evaluates to -abs(r). */
#define kc_log_errno(r, ...)                                                                       \
        ({                                                                                         \
                int _kc_r = (r);                                                                   \
                errno = _kc_r < 0 ? -_kc_r : _kc_r;                                                \
                kc_log_error(__VA_ARGS__);                                                         \
                _kc_r < 0 ? _kc_r : -_kc_r;                                                        \
        })
