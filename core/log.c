/* SPDX-License-Identifier: Apache-2.0 */
/*
 * klog's text format:
 *
 *   Lmmdd hh:mm:ss.uuuuuu TTTTTTT file:line] msg
 *
 * L is I/W/E/F, the time is local wall time from CLOCK_REALTIME, TTTTTTT is
 * the kernel thread id right-aligned in 7 columns (klog prints its pid
 * there; per-thread ids are more useful in a threaded daemon) and file is
 * the basename of __FILE__. Each line is formatted into one buffer and
 * written with a single fwrite()+fflush() under a mutex, so lines from
 * concurrent threads never interleave.
 *
 * Fatal lines are written like the others; this module does not exit: the
 * caller decides how to stop (unlike klog.Fatal).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/cleanup.h"
#include "core/log.h"

/* Read on every kc_log_v(); no other data is published through it. */
static atomic_int log_verbosity;

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *log_output; /* under log_lock; NULL means stderr */

static const char severity_char[_KC_LOG_SEVERITY_MAX] = {
        [KC_LOG_INFO] = 'I',
        [KC_LOG_WARNING] = 'W',
        [KC_LOG_ERROR] = 'E',
        [KC_LOG_FATAL] = 'F',
};
_Static_assert(KC_ELEMENTSOF(severity_char) == _KC_LOG_SEVERITY_MAX, "one letter per severity");

void kc_log_set_verbosity(int v)
{
        /* Relaxed: a plain setting, it orders nothing else. */
        atomic_store_explicit(&log_verbosity, v, memory_order_relaxed);
}

int kc_log_get_verbosity(void)
{
        /* Relaxed: pairs with nothing, see kc_log_set_verbosity(). */
        return atomic_load_explicit(&log_verbosity, memory_order_relaxed);
}

void kc_log_set_output(FILE *f)
{
        pthread_mutex_lock(&log_lock);
        log_output = f;
        pthread_mutex_unlock(&log_lock);
}

static const char *basename_of(const char *path)
{
        const char *slash = strrchr(path, '/');

        return slash ? slash + 1 : path;
}

void kc_log_internal(enum kc_log_severity sev, const char *file, int line, const char *fmt, ...)
{
        /* Messages may use %m: keep the caller's errno for vsnprintf. */
        int saved_errno = errno;
        _cleanup_free_ char *big = NULL;
        char small[1024], *msg = small;
        struct timespec ts;
        struct tm tm;
        va_list ap;
        int hlen, mlen;
        size_t len;
        FILE *out;

        if ((int)sev < 0 || sev >= _KC_LOG_SEVERITY_MAX)
                sev = KC_LOG_ERROR;

        clock_gettime(CLOCK_REALTIME, &ts);
        if (!localtime_r(&ts.tv_sec, &tm))
                memset(&tm, 0, sizeof(tm));

        hlen = snprintf(small, sizeof(small), "%c%02d%02d %02d:%02d:%02d.%06ld %7d %s:%d] ",
                        severity_char[sev], tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                        tm.tm_sec, ts.tv_nsec / 1000, (int)gettid(), basename_of(file), line);
        if (hlen < 0)
                return;
        if ((size_t)hlen >= sizeof(small) - 2)
                hlen = (int)sizeof(small) - 2; /* absurd file name: truncate */

        errno = saved_errno;
        va_start(ap, fmt);
        mlen = vsnprintf(small + hlen, sizeof(small) - (size_t)hlen, fmt, ap);
        va_end(ap);
        if (mlen < 0)
                return;

        len = (size_t)hlen + (size_t)mlen;
        if (len + 2 > sizeof(small)) {
                /* Too long for the stack buffer: format again into the heap. */
                big = malloc(len + 2);
                if (big) {
                        memcpy(big, small, (size_t)hlen);
                        errno = saved_errno;
                        va_start(ap, fmt);
                        vsnprintf(big + hlen, (size_t)mlen + 1, fmt, ap);
                        va_end(ap);
                        msg = big;
                } else {
                        len = sizeof(small) - 2; /* keep the truncated line */
                }
        }
        if (len == 0 || msg[len - 1] != '\n')
                msg[len++] = '\n';

        pthread_mutex_lock(&log_lock);
        out = log_output ? log_output : stderr;
        fwrite(msg, 1, len, out);
        fflush(out);
        pthread_mutex_unlock(&log_lock);

        errno = saved_errno;
}
