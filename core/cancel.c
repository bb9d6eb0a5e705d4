/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One-shot cancellation tokens. A token keeps every kc_clock_sleep() that
 * passed it on a list under its lock, and triggering it wakes them all (the
 * waiter protocol is described in internal.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "core/cancel.h"
#include "core/cleanup.h"
#include "core/list.h"
#include "core/lock.h"
#include "internal.h"

struct kc_cancel {
        pthread_mutex_t lock;
        /* Written under lock, read anywhere (kc_cancel_is_set()). */
        atomic_bool set;
        struct kc_list waiters; /* struct kc_waiter, under lock */
};

int kc_cancel_new(struct kc_cancel **ret)
{
        _cleanup_free_ struct kc_cancel *c = calloc(1, sizeof(*c));
        int r;

        if (!c)
                return -ENOMEM;
        r = pthread_mutex_init(&c->lock, NULL);
        if (r != 0)
                return -r;
        atomic_init(&c->set, false);
        kc_list_init(&c->waiters);
        *ret = TAKE_PTR(c);
        return 0;
}

struct kc_cancel *kc_cancel_free(struct kc_cancel *c)
{
        if (!c)
                return NULL;
        kc__assert_se(kc_list_empty(&c->waiters));
        pthread_mutex_destroy(&c->lock);
        free(c);
        return NULL;
}

void kc_cancel_trigger_mp(struct kc_cancel *c)
{
        struct kc_waiter *w;

        KC_LOCK_GUARD(&c->lock);
        if (atomic_load_explicit(&c->set, memory_order_relaxed))
                return;
        /*
         * Release: pairs with the acquire load in kc_cancel_is_set(), so a
         * thread that sees the token set also sees what the triggering
         * thread wrote before triggering.
         */
        atomic_store_explicit(&c->set, true, memory_order_release);
        kc_list_for_each_entry (w, &c->waiters, struct kc_waiter, cancel_link)
                kc__waiter_wake(w, true);
}

bool kc_cancel_is_set(const struct kc_cancel *c)
{
        /* Acquire: pairs with the release store in kc_cancel_trigger_mp(). */
        return atomic_load_explicit(&c->set, memory_order_acquire);
}

bool kc__cancel_register(struct kc_cancel *c, struct kc_waiter *w)
{
        KC_LOCK_GUARD(&c->lock);
        if (atomic_load_explicit(&c->set, memory_order_relaxed))
                return false;
        kc_list_add_head(&c->waiters, &w->cancel_link);
        return true;
}

void kc__cancel_unregister(struct kc_cancel *c, struct kc_waiter *w)
{
        KC_LOCK_GUARD(&c->lock);
        kc_list_del(&w->cancel_link);
}
