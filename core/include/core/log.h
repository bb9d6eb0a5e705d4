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
#include <string.h>

/*
 * Header: "Lmmdd hh:mm:ss.uuuuuu tid file:line] ", L one of I W E F, tid
 * right-aligned in 7 columns as klog does with its pid (docs/deviations.md D4).
 *
 * Structured form, as klog.InfoS / klog.ErrorS print it (F-PLEG-20 and every
 * other logged event):
 *
 *   kc_log_info_s("SyncLoop ADD", KC_KV_STR("source", src), KC_KV_PODS("pods", ...));
 *   kc_log_error_s(err, "Error syncing pod, skipping", KC_KV_POD(ns, name),
 *                  KC_KV_STR("podUID", uid));
 *   kc_log_v_s(4, "Pod cannot start yet", KC_KV_STR("podUID", uid));
 *
 * prints the header, the message quoted as Go's strconv.Quote does, then for
 * each pair " key=value": strings (and durations, pod references) quoted and
 * escaped the same way, numbers and bools bare. kc_log_error_s() puts
 * err="..." first when err is not NULL (klog leaves a nil error out). Every
 * newline in a message or value is escaped, so a call writes exactly one line
 * (klog writes multi-line values as a "<" block instead: docs/deviations.md
 * D27).
 *
 * The unstructured form (kc_log_info/warn/error/v/errno: a printf message
 * after the header) stays for code not converted yet; new code uses the
 * structured one.
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

/* ---- structured form ------------------------------------------------- */

enum kc_log_kv_type {
        KC_LOG_KV_STR,      /* s; NULL prints as "" */
        KC_LOG_KV_INT,      /* i */
        KC_LOG_KV_UINT,     /* u */
        KC_LOG_KV_BOOL,     /* b */
        KC_LOG_KV_DURATION, /* i, nanoseconds, printed quoted as Go's Duration.String() */
        KC_LOG_KV_REF,      /* ref: "namespace/name" (klog.KObj / KRef) */
        KC_LOG_KV_REFS,     /* refs: ["ns/a" "ns/b"] (klog.KObjSlice) */
        KC_LOG_KV_RAW,      /* s as it is (a JSON-like composite), control bytes as \x.. */
};

/** Yields the namespace and name of element @p i of @p array (KC_KV_REFS). */
typedef void (*kc_log_ref_fn)(const void *array, size_t i, const char **ret_namespace,
                              const char **ret_name);

/** One key/value pair; built with the KC_KV_*() macros, never by hand. */
struct kc_log_kv {
        const char *key;
        enum kc_log_kv_type type;
        union {
                const char *s;
                int64_t i;
                uint64_t u;
                bool b;
                struct {
                        const char *ns, *name;
                } ref;
                struct {
                        const void *array;
                        size_t n;
                        kc_log_ref_fn get;
                } refs;
        };
};

#define KC_KV_STR(k, v) ((struct kc_log_kv){ .key = (k), .type = KC_LOG_KV_STR, .s = (v) })
#define KC_KV_INT(k, v) ((struct kc_log_kv){ .key = (k), .type = KC_LOG_KV_INT, .i = (v) })
#define KC_KV_UINT(k, v) ((struct kc_log_kv){ .key = (k), .type = KC_LOG_KV_UINT, .u = (v) })
#define KC_KV_BOOL(k, v) ((struct kc_log_kv){ .key = (k), .type = KC_LOG_KV_BOOL, .b = (v) })
#define KC_KV_DURATION(k, ns)                                                                      \
        ((struct kc_log_kv){ .key = (k), .type = KC_LOG_KV_DURATION, .i = (ns) })
/** An object reference under key @p k: "ns/name", or "name" without a namespace. */
#define KC_KV_REF(k, ns_, name_)                                                                   \
        ((struct kc_log_kv){                                                                       \
                .key = (k), .type = KC_LOG_KV_REF, .ref = { .ns = (ns_), .name = (name_) } })
/** pod="ns/name", as klog.KObj(pod) prints it. */
#define KC_KV_POD(ns_, name_) KC_KV_REF("pod", ns_, name_)
/** A list of @p n object references; @p get reads element i of @p array. */
#define KC_KV_REFS(k, array_, n_, get_)                                                            \
        ((struct kc_log_kv){ .key = (k),                                                           \
                             .type = KC_LOG_KV_REFS,                                               \
                             .refs = { .array = (array_), .n = (n_), .get = (get_) } })
/**
 * A value written as it is, for composites the caller formats the way klog
 * does (e.g. event={"ID":"...","Type":"..."}); bytes below 0x20 and 0x7f are
 * still escaped as \x.., so the line stays one line.
 */
#define KC_KV_RAW(k, v) ((struct kc_log_kv){ .key = (k), .type = KC_LOG_KV_RAW, .s = (v) })
/** err="<strerror(-r)>", for the unconverted -errno results of lower layers. */
#define KC_KV_ERRNO(r) KC_KV_STR("err", strerror((r) < 0 ? -(r) : (r)))

/**
 * Writes one structured line: the header, "msg" quoted, err="..." when @p err
 * is not NULL, then the @p n pairs of @p kv. Keeps errno.
 */
void kc_log_s_internal(enum kc_log_severity sev, const char *file, int line, const char *err,
                       const char *msg, const struct kc_log_kv *kv, size_t n);

/**
 * Appends @p len bytes of @p s to @p buf quoted as strconv.Quote does; returns
 * the length the quoted text needs (like snprintf: at most @p size - 1 bytes
 * and a NUL are written). For tests and the rare caller that quotes by hand.
 */
size_t kc_log_quote(char *buf, size_t size, const char *s, size_t len);

/* The array starts with a placeholder so that an empty pair list compiles. */
#define KC__LOG_KVS(...) ((const struct kc_log_kv[]){ { 0 }, ##__VA_ARGS__ })
#define KC__LOG_S(sev, err, msg, ...)                                                              \
        kc_log_s_internal((sev), __FILE__, __LINE__, (err), (msg), KC__LOG_KVS(__VA_ARGS__) + 1,   \
                          sizeof(KC__LOG_KVS(__VA_ARGS__)) / sizeof(struct kc_log_kv) - 1)

/** klog.InfoS(msg, kv...). */
#define kc_log_info_s(msg, ...) KC__LOG_S(KC_LOG_INFO, NULL, msg, ##__VA_ARGS__)
/** A warning in the structured form (klog has no WarningS; a W line otherwise like InfoS). */
#define kc_log_warn_s(msg, ...) KC__LOG_S(KC_LOG_WARNING, NULL, msg, ##__VA_ARGS__)
/** klog.ErrorS(err, msg, kv...); @p err is the error text or NULL (left out, like a nil error). */
#define kc_log_error_s(err, msg, ...) KC__LOG_S(KC_LOG_ERROR, (err), msg, ##__VA_ARGS__)
/** klog.V(level).InfoS(msg, kv...): nothing is evaluated below the -v level. */
#define kc_log_v_s(level, msg, ...)                                                                \
        do {                                                                                       \
                if (kc_log_get_verbosity() >= (level))                                             \
                        kc_log_info_s(msg, ##__VA_ARGS__);                                         \
        } while (0)
/**
 * klog.ErrorS with err=strerror(-r) (r may be either sign); evaluates to
 * -abs(r), so `return kc_log_errno_s(r, "...", ...)` logs and fails at once.
 */
#define kc_log_errno_s(r, msg, ...)                                                                \
        ({                                                                                         \
                int _kc_rs = (r);                                                                  \
                kc_log_error_s(strerror(_kc_rs < 0 ? -_kc_rs : _kc_rs), msg, ##__VA_ARGS__);       \
                _kc_rs < 0 ? _kc_rs : -_kc_rs;                                                     \
        })

/* ---- unstructured form: a printf message after the header ------------- */

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
