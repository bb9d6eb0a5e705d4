/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file runtime/error.h
 * @brief Runtime errors: gRPC-style codes and messages.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** gRPC-style status codes (the CRI client maps grpc-status onto these). */
enum kc_runtime_code {
        KC_RUNTIME_OK = 0,
        KC_RUNTIME_CANCELLED = 1,
        KC_RUNTIME_UNKNOWN = 2,
        KC_RUNTIME_INVALID_ARGUMENT = 3,
        KC_RUNTIME_DEADLINE_EXCEEDED = 4,
        KC_RUNTIME_NOT_FOUND = 5,
        KC_RUNTIME_ALREADY_EXISTS = 6,
        KC_RUNTIME_PERMISSION_DENIED = 7,
        KC_RUNTIME_RESOURCE_EXHAUSTED = 8,
        KC_RUNTIME_FAILED_PRECONDITION = 9,
        KC_RUNTIME_ABORTED = 10,
        KC_RUNTIME_OUT_OF_RANGE = 11,
        KC_RUNTIME_UNIMPLEMENTED = 12,
        KC_RUNTIME_INTERNAL = 13,
        KC_RUNTIME_UNAVAILABLE = 14,
        KC_RUNTIME_DATA_LOSS = 15,
        KC_RUNTIME_UNAUTHENTICATED = 16,
};

#define KC_RUNTIME_ERROR_MAX 512

struct kc_runtime_error {
        enum kc_runtime_code code;
        char message[KC_RUNTIME_ERROR_MAX];
};

/**
 * Makes @p e an error of @p code with an empty message, leaving the rest of
 * the message buffer as it was: an initialiser zeroes all of it, 512 bytes
 * for each runtime call of a path as hot as GetPodStatus (issue 18). Only
 * the message up to its NUL is read; a copy carries the other bytes along.
 */
static inline void kc_runtime_error_init(struct kc_runtime_error *e, enum kc_runtime_code code)
{
        e->code = code;
        e->message[0] = '\0';
}

/** Fills @p err (if non-NULL) and returns @p r (a negative errno). */
int kc_runtime_error_set(struct kc_runtime_error *err, int r, enum kc_runtime_code code,
                         const char *fmt, ...) __attribute__((format(printf, 4, 5)));
