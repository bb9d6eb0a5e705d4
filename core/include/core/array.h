/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file core/array.h
 * @brief Growing a malloc'd array geometrically.
 */
#pragma once

#include <stddef.h>

/**
 * @brief Makes room for at least @p need elements of @p elem_size bytes in
 * the malloc'd array *@p arr of capacity *@p cap (elements).
 *
 * Nothing happens when *@p cap >= @p need. Otherwise the capacity doubles
 * (from @p min_cap, at least 1, when the array is empty) until it holds
 * @p need, and the array is reallocated; its first *@p cap elements are
 * kept, the new ones are uninitialised.
 * @return 0, or -ENOMEM (on overflow too) with *@p arr and *@p cap untouched.
 */
int kc_array_grow(void **arr, size_t *cap, size_t need, size_t elem_size, size_t min_cap);

/** kc_array_grow() for a typed array pointer @p arr (a modifiable lvalue). */
#define KC_ARRAY_GROW(arr, cap, need, min_cap)                                                     \
        kc_array_grow((void **)&(arr), &(cap), (need), sizeof(*(arr)), (min_cap))
