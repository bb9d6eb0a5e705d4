/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file runtime/expansion.h
 * @brief $(VAR) references, expanded as upstream's
 * third_party/forked/golang/expansion: "$$" is a literal "$", "$(NAME)"
 * is NAME's value, and a reference to an unknown name, an unclosed "$("
 * or a "$" before any other byte is kept as written.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kc_label;

/**
 * Expand: @p input with every reference replaced by its value in
 * @p vars (name = key; of duplicates the last wins, as in the Go map
 * upstream builds). malloc'd; NULL on ENOMEM.
 */
char *kc_expand(const char *input, const struct kc_label *vars, size_t n_vars);
