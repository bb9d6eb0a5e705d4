/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file core/duration.h
 * @brief Go-style durations: formatting and parsing.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KC_DURATION_MAX 40

/**
 * Formats @p ns like Go's time.Duration.String(): "0s", "1.5µs", "500ms",
 * "4m0s", "1h2m3.5s", "-2s". Returns @p buf.
 */
char *kc_format_duration(int64_t ns, char buf[static KC_DURATION_MAX]);

/**
 * Parses a Go duration (time.ParseDuration): an optional sign, then one or
 * more decimal numbers each with a unit (ns, us or µs, ms, s, m, h), e.g.
 * "300ms", "-1.5h", "2h45m"; "0" alone needs no unit.
 * @return 0, -EINVAL (malformed) or -ERANGE (beyond ±292 years); *ret
 * unchanged on failure.
 */
int kc_parse_duration(const char *s, int64_t *ret);
