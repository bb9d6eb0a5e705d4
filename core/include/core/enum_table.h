/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file core/enum_table.h
 * @brief Enum-to-string tables, checked at compile time.
 *
 * An enum with the sentinels _KC_X_MAX and _KC_X_INVALID = -EINVAL gets its
 * to-string (and from-string) function from one table; a static_assert
 * fails the build when the table and the enum disagree in length, so a new
 * value cannot go without a name:
 *
 *     KC_DEFINE_STRING_TABLE(kc_pod_op, enum kc_pod_op, _KC_POD_OP_MAX,
 *                            [KC_POD_OP_SET] = "SET", ...)
 *
 * defines `const char *kc_pod_op_to_string(enum kc_pod_op v)`: the name,
 * or NULL for a value out of range. KC_DEFINE_STRING_TABLE_LOOKUP() also
 * defines `enum kc_pod_op kc_pod_op_from_string(const char *s)`: the value
 * whose name equals @p s, or the enum's -EINVAL sentinel (also for NULL).
 */
#pragma once

#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#define KC_DEFINE_STRING_TABLE(name, type, max, ...)                                               \
        static const char *const name##_table[] = { __VA_ARGS__ };                                 \
        static_assert(sizeof(name##_table) / sizeof(name##_table[0]) == (size_t)(max),             \
                      #name ": every value needs a name");                                         \
        const char *name##_to_string(type v)                                                       \
        {                                                                                          \
                return (unsigned)v < (unsigned)(max) ? name##_table[v] : NULL;                     \
        }

#define KC_DEFINE_STRING_TABLE_LOOKUP(name, type, max, ...)                                        \
        KC_DEFINE_STRING_TABLE(name, type, max, __VA_ARGS__)                                       \
        type name##_from_string(const char *s)                                                     \
        {                                                                                          \
                for (size_t i = 0; s && i < (size_t)(max); i++)                                    \
                        if (name##_table[i] && strcmp(name##_table[i], s) == 0)                    \
                                return (type)i;                                                    \
                return (type)-EINVAL;                                                              \
        }
