/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file pleg/pleg.h
 * @brief The PLEG interface.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kc_chan;

struct kc_pleg_ops {
        int (*start)(void *self);
        void (*stop)(void *self);
        /** The event channel; its single consumer is syncLoop. */
        struct kc_chan *(*watch)(void *self);
        /** Returns true when healthy; else *ret_err (malloc'd) says why. */
        bool (*healthy)(void *self, char **ret_err);
        int (*relist)(void *self);
        /** Replaces period and threshold; call only while stopped. */
        void (*update)(void *self, int64_t relist_period_ns, int64_t relist_threshold_ns);
};

struct kc_pleg {
        const struct kc_pleg_ops *ops;
        void *self;
};
