/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/array.h"

int kc_array_grow(void **arr, size_t *cap, size_t need, size_t elem_size, size_t min_cap)
{
        size_t n;
        void *p;

        if (*cap >= need)
                return 0;
        if (elem_size == 0)
                return -EINVAL;
        n = *cap ? *cap : (min_cap ? min_cap : 1);
        while (n < need) {
                if (n > SIZE_MAX / 2)
                        return -ENOMEM;
                n *= 2;
        }
        if (n > SIZE_MAX / elem_size)
                return -ENOMEM;
        p = realloc(*arr, n * elem_size);
        if (!p)
                return -ENOMEM;
        *arr = p;
        *cap = n;
        return 0;
}
