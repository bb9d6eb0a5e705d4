/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file internal.h
 * @brief Helpers shared by the core/ sources only (not installed, not for
 * other modules).
 */
#pragma once

#include <stdio.h>
#include <stdlib.h>

/*
 * An assertion that stays in release builds (RelWithDebInfo defines NDEBUG):
 * used for invariants whose violation would corrupt memory, such as "an
 * admitted kc_chan push always finds a free ring slot".
 */
#define kc__assert_se(expr)                                                                        \
        do {                                                                                       \
                if (__builtin_expect(!(expr), 0)) {                                                \
                        fprintf(stderr, "%s:%d: %s: assertion '%s' failed\n", __FILE__, __LINE__,  \
                                __func__, #expr);                                                  \
                        abort();                                                                   \
                }                                                                                  \
        } while (0)

/*
 * ThreadSanitizer hooks. Concurrency Kit implements ck_pr_* with inline
 * assembly, which TSan cannot see: it neither observes the ring's
 * publication (so it would flag the slot copies as races) nor learns the
 * happens-before edge a push/pop pair creates. kc_chan therefore hides the
 * ring's own accesses from TSan and states the edge explicitly. These are
 * no-ops outside -fsanitize=thread builds.
 */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
#define kc__tsan_acquire(p) __tsan_acquire(p)
#define kc__tsan_release(p) __tsan_release(p)
#define kc__tsan_ignore_begin() __tsan_ignore_thread_begin()
#define kc__tsan_ignore_end() __tsan_ignore_thread_end()
#else
#define kc__tsan_acquire(p) ((void)(p))
#define kc__tsan_release(p) ((void)(p))
#define kc__tsan_ignore_begin() ((void)0)
#define kc__tsan_ignore_end() ((void)0)
#endif
