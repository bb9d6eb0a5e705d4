/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file core/lock.h
 * @brief Lock guards: a mutex held until the end of the scope.
 *
 *     KC_LOCK_GUARD(&g->lock);   // locked here, unlocked at every return
 *
 * One guard per scope (it declares a local); for a guard inside a loop body
 * or a shorter region, open a block. Use it where every path out of a scope
 * must unlock; keep explicit lock/unlock where a lock is handed across
 * scopes or dropped to wait.
 */
#pragma once

#include <pthread.h>

static inline void kc__mutex_unlockp(pthread_mutex_t **m)
{
        if (*m)
                pthread_mutex_unlock(*m);
}

static inline pthread_mutex_t *kc__mutex_lock(pthread_mutex_t *m)
{
        pthread_mutex_lock(m);
        return m;
}

#define KC__LOCK_GUARD_NAME(line) KC__LOCK_GUARD_NAME2(line)
#define KC__LOCK_GUARD_NAME2(line) kc__lock_guard_##line
/** Locks @p mutex now and unlocks it when the enclosing scope ends. */
#define KC_LOCK_GUARD(mutex)                                                                       \
        __attribute__((cleanup(kc__mutex_unlockp), unused)) pthread_mutex_t *KC__LOCK_GUARD_NAME(  \
                __LINE__) = kc__mutex_lock(mutex)
