/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file core/cleanup.h
 * @brief Ownership helpers: cleanup attributes, TAKE_PTR/TAKE_FD, errno and time-unit macros.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void kc_freep(void *p)
{
        free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(kc_freep)

static inline void kc_closep(int *fd)
{
        if (*fd >= 0)
                close(*fd);
}
#define _cleanup_close_ _cleanup_(kc_closep)

/* jansson values (jansson ships json_decrefp(); include <jansson.h> to use it). */
#define _cleanup_json_ _cleanup_(json_decrefp)

/* Defines `static inline void <func>p(type **p)` calling `func(*p)`. */
#define KC_DEFINE_CLEANUP_FUNC(type, func)                                                         \
        static inline void func##p(type **p)                                                       \
        {                                                                                          \
                if (*p)                                                                            \
                        (void)func(*p);                                                            \
        }

#define TAKE_PTR(p)                                                                                \
        ({                                                                                         \
                __typeof__(p) _kc_p = (p);                                                         \
                (p) = NULL;                                                                        \
                _kc_p;                                                                             \
        })
#define TAKE_FD(fd)                                                                                \
        ({                                                                                         \
                int _kc_fd = (fd);                                                                 \
                (fd) = -1;                                                                         \
                _kc_fd;                                                                            \
        })

/* Turns a libc call that returns -1/errno into 0/-errno. */
#define KC_NERRNO(expr) ((expr) < 0 ? -errno : 0)

#define KC_ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

#define KC_NSEC_PER_USEC INT64_C(1000)
#define KC_NSEC_PER_MSEC INT64_C(1000000)
#define KC_NSEC_PER_SEC INT64_C(1000000000)
#define KC_NSEC_PER_MIN (60 * KC_NSEC_PER_SEC)
