/* SPDX-License-Identifier: Apache-2.0 */
/*
 * klog's text format:
 *
 *   Lmmdd hh:mm:ss.uuuuuu TTTTTTT file:line] msg
 *
 * L is I/W/E/F, the time is local wall time from CLOCK_REALTIME, TTTTTTT is
 * the kernel thread id right-aligned in 7 columns (klog prints its pid
 * there; per-thread ids are more useful in a threaded daemon) and file is
 * the basename of __FILE__. The structured form (kc_log_info_s() ...) then
 * writes "msg" and key=value pairs quoted as klog.InfoS does (see log.h).
 * Each line is formatted into one buffer and
 * written with a single fwrite()+fflush() under a mutex, so lines from
 * concurrent threads never interleave.
 *
 * Fatal lines are written like the others; this module does not exit: the
 * caller decides how to stop (unlike klog.Fatal).
 */
#include <errno.h>
#include <inttypes.h>
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
#include "core/duration.h"
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

/*
 * One line being built: in the stack buffer until it outgrows it, then on the
 * heap. When the heap refuses, the line is cut (oom) rather than lost.
 */
struct line {
        char *p;
        size_t len, cap;
        bool oom;
        char stack[1024];
};

static void line_init(struct line *l)
{
        l->p = l->stack;
        l->len = 0;
        l->cap = sizeof(l->stack);
        l->oom = false;
}

static void line_done(struct line *l)
{
        if (l->p != l->stack)
                free(l->p);
}

/* Room for @p more bytes plus the final newline; false once out of memory. */
static bool line_reserve(struct line *l, size_t more)
{
        size_t want = l->len + more + 1, cap = l->cap;
        char *n;

        if (l->oom)
                return false;
        if (want <= cap)
                return true;
        while (cap < want)
                cap *= 2;
        n = l->p == l->stack ? malloc(cap) : realloc(l->p, cap);
        if (!n) {
                l->oom = true;
                return false;
        }
        if (l->p == l->stack)
                memcpy(n, l->stack, l->len);
        l->p = n;
        l->cap = cap;
        return true;
}

static void line_put(struct line *l, const char *s, size_t n)
{
        if (!line_reserve(l, n))
                return;
        memcpy(l->p + l->len, s, n);
        l->len += n;
}

static void line_puts(struct line *l, const char *s)
{
        line_put(l, s, strlen(s));
}

static void line_printf(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line_printf(struct line *l, const char *fmt, ...)
{
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(l->p + l->len, l->cap - l->len, fmt, ap);
        va_end(ap);
        if (n < 0)
                return;
        if ((size_t)n + 1 >= l->cap - l->len) {
                if (!line_reserve(l, (size_t)n + 1))
                        return;
                va_start(ap, fmt);
                vsnprintf(l->p + l->len, l->cap - l->len, fmt, ap);
                va_end(ap);
        }
        l->len += (size_t)n;
}

static void line_header(struct line *l, enum kc_log_severity sev, const char *file, int lineno)
{
        struct timespec ts;
        struct tm tm;

        if ((int)sev < 0 || sev >= _KC_LOG_SEVERITY_MAX)
                sev = KC_LOG_ERROR;
        clock_gettime(CLOCK_REALTIME, &ts);
        if (!localtime_r(&ts.tv_sec, &tm))
                memset(&tm, 0, sizeof(tm));
        line_printf(l, "%c%02d%02d %02d:%02d:%02d.%06ld %7d %s:%d] ", severity_char[sev],
                    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000,
                    (int)gettid(), basename_of(file), lineno);
}

/* Ends the line with exactly one newline and writes it in one piece. */
static void line_write(struct line *l)
{
        FILE *out;

        if (l->len == 0 || l->p[l->len - 1] != '\n')
                l->p[l->len++] = '\n'; /* line_reserve() always keeps this byte */

        pthread_mutex_lock(&log_lock);
        out = log_output ? log_output : stderr;
        fwrite(l->p, 1, l->len, out);
        fflush(out);
        pthread_mutex_unlock(&log_lock);
}

void kc_log_internal(enum kc_log_severity sev, const char *file, int lineno, const char *fmt, ...)
{
        /* Messages may use %m: keep the caller's errno for vsnprintf. */
        int saved_errno = errno;
        struct line l;
        va_list ap;
        int n;

        line_init(&l);
        line_header(&l, sev, file, lineno);
        errno = saved_errno;
        va_start(ap, fmt);
        n = vsnprintf(l.p + l.len, l.cap - l.len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n + 1 >= l.cap - l.len && line_reserve(&l, (size_t)n + 1)) {
                /* Too long for the stack buffer: format again into the heap. */
                errno = saved_errno;
                va_start(ap, fmt);
                vsnprintf(l.p + l.len, l.cap - l.len, fmt, ap);
                va_end(ap);
        }
        if (n >= 0) /* cut to what fits when the heap refused */
                l.len += (size_t)n < l.cap - l.len ? (size_t)n : l.cap - l.len - 1;
        line_write(&l);
        line_done(&l);
        errno = saved_errno;
}

/* ---- strconv.Quote ------------------------------------------------------ */

/*
 * Length of the UTF-8 sequence at @p s (at most @p n bytes) and its code
 * point in *cp; 0 when the bytes are not valid UTF-8 (overlong forms,
 * surrogates and code points past U+10FFFF included), as utf8.DecodeRune.
 */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
        unsigned char lo = 0x80, hi = 0xbf;
        size_t len;
        uint32_t c;

        if (s[0] < 0x80) {
                *cp = s[0];
                return 1;
        }
        if (s[0] >= 0xc2 && s[0] <= 0xdf) {
                len = 2;
                c = s[0] & 0x1f;
        } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
                len = 3;
                c = s[0] & 0x0f;
                lo = s[0] == 0xe0 ? 0xa0 : 0x80;
                hi = s[0] == 0xed ? 0x9f : 0xbf;
        } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
                len = 4;
                c = s[0] & 0x07;
                lo = s[0] == 0xf0 ? 0x90 : 0x80;
                hi = s[0] == 0xf4 ? 0x8f : 0xbf;
        } else {
                return 0;
        }
        if (n < len || s[1] < lo || s[1] > hi)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if (i > 1 && (s[i] & 0xc0) != 0x80)
                        return 0;
                c = (c << 6) | (s[i] & 0x3f);
        }
        *cp = c;
        return len;
}

/*
 * unicode.IsPrint for code points past ASCII, approximated: everything is
 * printable except the C1 controls, the spaces other than U+0020, the line
 * and paragraph separators, the common format characters, private use and
 * the noncharacters (unassigned code points count as printable here:
 * docs/deviations.md D28).
 */
static bool rune_is_print(uint32_t c)
{
        static const uint32_t not_print[][2] = {
                { 0x80, 0xa0 },        { 0xad, 0xad },     { 0x600, 0x605 },   { 0x61c, 0x61c },
                { 0x6dd, 0x6dd },      { 0x70f, 0x70f },   { 0x1680, 0x1680 }, { 0x180e, 0x180e },
                { 0x2000, 0x200f },    { 0x2028, 0x202f }, { 0x205f, 0x206f }, { 0x3000, 0x3000 },
                { 0xd800, 0xf8ff },    { 0xfdd0, 0xfdef }, { 0xfeff, 0xfeff }, { 0xfff9, 0xfffb },
                { 0xf0000, 0x10ffff },
        };

        if ((c & 0xfffe) == 0xfffe)
                return false;
        for (size_t i = 0; i < KC_ELEMENTSOF(not_print); i++)
                if (c >= not_print[i][0] && c <= not_print[i][1])
                        return false;
        return true;
}

/* The inside of strconv.Quote(s): escapes, no surrounding quotes. */
static const char named_escape[] = {
        ['"'] = '"',  ['\\'] = '\\', ['\a'] = 'a', ['\b'] = 'b', ['\f'] = 'f',
        ['\n'] = 'n', ['\r'] = 'r',  ['\t'] = 't', ['\v'] = 'v',
};

static void quote_body(struct line *l, const char *s, size_t n)
{
        const unsigned char *u = (const unsigned char *)s;
        size_t i = 0, w;
        uint32_t c;

        while (i < n) {
                /* Plain ASCII runs go in one copy. */
                size_t j = i;

                while (j < n && u[j] >= 0x20 && u[j] < 0x7f && u[j] != '"' && u[j] != '\\')
                        j++;
                line_put(l, s + i, j - i);
                if (j == n)
                        break;
                i = j;
                w = utf8_decode(u + i, n - i, &c);
                if (w == 0) {
                        line_printf(l, "\\x%02x", u[i]);
                        i++;
                        continue;
                }
                if (c < KC_ELEMENTSOF(named_escape) && named_escape[c]) {
                        char esc[2] = { '\\', named_escape[c] };

                        line_put(l, esc, 2);
                } else if (c < 0x20 || c == 0x7f) {
                        line_printf(l, "\\x%02x", c);
                } else if (rune_is_print(c)) {
                        line_put(l, s + i, w);
                } else if (c < 0x10000) {
                        line_printf(l, "\\u%04x", c);
                } else {
                        line_printf(l, "\\U%08x", c);
                }
                i += w;
        }
}

static void quote(struct line *l, const char *s)
{
        line_put(l, "\"", 1);
        if (s)
                quote_body(l, s, strlen(s));
        line_put(l, "\"", 1);
}

size_t kc_log_quote(char *buf, size_t size, const char *s, size_t len)
{
        struct line l;
        size_t n;

        line_init(&l);
        line_put(&l, "\"", 1);
        quote_body(&l, s, len);
        line_put(&l, "\"", 1);
        n = l.len;
        if (size > 0) {
                size_t c = n < size ? n : size - 1;

                memcpy(buf, l.p, c);
                buf[c] = '\0';
        }
        line_done(&l);
        return l.oom ? SIZE_MAX : n;
}

/* klog.KObj's text: "ns/name", or "name" when the namespace is empty. */
static void ref_body(struct line *l, const char *ns, const char *name)
{
        if (ns && *ns) {
                quote_body(l, ns, strlen(ns));
                line_put(l, "/", 1);
        }
        if (name)
                quote_body(l, name, strlen(name));
}

/* As it is, but never a control byte: the line stays one line. */
static void raw(struct line *l, const char *s)
{
        for (const char *p = s; *p; p++) {
                if ((unsigned char)*p < 0x20 || *p == 0x7f) {
                        line_put(l, s, (size_t)(p - s));
                        line_printf(l, "\\x%02x", (unsigned char)*p);
                        s = p + 1;
                }
        }
        line_puts(l, s);
}

static void kv_value(struct line *l, const struct kc_log_kv *kv)
{
        char d[KC_DURATION_MAX];

        switch (kv->type) {
        case KC_LOG_KV_STR:
                quote(l, kv->s);
                break;
        case KC_LOG_KV_INT:
                line_printf(l, "%" PRId64, kv->i);
                break;
        case KC_LOG_KV_UINT:
                line_printf(l, "%" PRIu64, kv->u);
                break;
        case KC_LOG_KV_BOOL:
                line_puts(l, kv->b ? "true" : "false");
                break;
        case KC_LOG_KV_DURATION:
                quote(l, kc_format_duration(kv->i, d));
                break;
        case KC_LOG_KV_REF:
                line_put(l, "\"", 1);
                ref_body(l, kv->ref.ns, kv->ref.name);
                line_put(l, "\"", 1);
                break;
        case KC_LOG_KV_REFS:
                line_put(l, "[", 1);
                for (size_t i = 0; i < kv->refs.n; i++) {
                        const char *ns = NULL, *name = NULL;

                        kv->refs.get(kv->refs.array, i, &ns, &name);
                        line_puts(l, i ? " \"" : "\"");
                        ref_body(l, ns, name);
                        line_put(l, "\"", 1);
                }
                line_put(l, "]", 1);
                break;
        case KC_LOG_KV_RAW:
                raw(l, kv->s ? kv->s : "");
                break;
        default:
                line_puts(l, "\"<bad value type>\"");
        }
}

void kc_log_s_internal(enum kc_log_severity sev, const char *file, int lineno, const char *err,
                       const char *msg, const struct kc_log_kv *kv, size_t n)
{
        int saved_errno = errno;
        struct line l;

        line_init(&l);
        line_header(&l, sev, file, lineno);
        quote(&l, msg);
        if (err) {
                line_puts(&l, " err=");
                quote(&l, err);
        }
        for (size_t i = 0; i < n; i++) {
                line_put(&l, " ", 1);
                line_puts(&l, kv[i].key ? kv[i].key : "");
                line_put(&l, "=", 1);
                kv_value(&l, &kv[i]);
        }
        line_write(&l);
        line_done(&l);
        errno = saved_errno;
}
