/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by cubelet's tests: real-time waits and their scaling.
 * Real time appears in tests only as a bound or a short pause between
 * threads; components run on fake clocks.
 */
#pragma once

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/** KC_TEST_TIMEOUT_MULTIPLIER (default 1) scales every real-time bound (slow sanitizer runs). */
static inline double kc_test_timeout_multiplier(void)
{
        const char *e = getenv("KC_TEST_TIMEOUT_MULTIPLIER");
        double v = e ? strtod(e, NULL) : 1.0;

        return v > 0 ? v : 1.0;
}

static inline int64_t kc_test_mono_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t kc_test_mono_ms(void)
{
        return kc_test_mono_ns() / 1000000;
}

static inline void kc_test_sleep_ms(long ms)
{
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };

        while (nanosleep(&ts, &ts) != 0)
                ;
}

/**
 * Re-evaluates @p cond every millisecond for at most @p ms milliseconds
 * (scaled by the multiplier) and evaluates to its last value.
 */
#define KC_TEST_WAIT_UNTIL(cond, ms)                                                               \
        ({                                                                                         \
                int64_t _kc_deadline =                                                             \
                        kc_test_mono_ms() + (int64_t)((ms)*kc_test_timeout_multiplier());          \
                bool _kc_ok;                                                                       \
                while (!(_kc_ok = (cond)) && kc_test_mono_ms() < _kc_deadline)                     \
                        kc_test_sleep_ms(1);                                                       \
                _kc_ok;                                                                            \
        })
