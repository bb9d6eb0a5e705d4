/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pod container deletor (upstream pkg/kubelet/pod_container_deletor.go):
 * when a container dies, the syncLoop asks it to remove the older dead
 * instances of that container, keeping the newest few. Requests go through a
 * bounded kc_chan to one worker thread, so the syncLoop never waits for the
 * runtime and a burst beyond the buffer is dropped with a warning.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/chan.h"
#include "core/cleanup.h"
#include "core/log.h"
#include "kubelet/pod_container_deletor.h"
#include "runtime/container.h"
#include "runtime/error.h"

/* Lost-wakeup net for the worker's pop; stopping normally wakes it at once. */
#define DELETOR_POP_TIMEOUT_MS 1000

struct kc_pod_container_deletor {
        kc_delete_container_fn delete_container;
        void *userdata;
        int containers_to_keep;
        /* Items: malloc'd container-ID strings, or &stop_sentinel. */
        struct kc_chan *queue;
        /*
         * Set (release) by kc_pod_container_deletor_free() before it pushes
         * the sentinel; read (acquire) by the worker before each pop.
         */
        atomic_bool stop;
        pthread_t worker;
};

/* Its address is the stop request; it is never freed. */
static char stop_sentinel;

static void free_queued_id(void *item)
{
        if (item != &stop_sentinel)
                free(item);
}

static bool streq_nullable(const char *a, const char *b)
{
        return strcmp(a ? a : "", b ? b : "") == 0;
}

/* containerStatusbyCreatedList.Less: attempt desc, then created_at desc. */
static int cmp_newest_first(const void *pa, const void *pb)
{
        const struct kc_container_status *a = *(const struct kc_container_status *const *)pa;
        const struct kc_container_status *b = *(const struct kc_container_status *const *)pb;

        if (a->restart_count != b->restart_count)
                return a->restart_count > b->restart_count ? -1 : 1;
        if (a->created_at != b->created_at)
                return a->created_at > b->created_at ? -1 : 1;
        /* Both point into the same status array: keep the status order. */
        return a < b ? -1 : (a > b ? 1 : 0);
}

int kc__get_containers_to_delete_in_pod(const char *filter_id, const struct kc_pod_status *status,
                                        int keep, const struct kc_container_status ***ret,
                                        size_t *ret_n)
{
        _cleanup_free_ const struct kc_container_status **candidates = NULL;
        const struct kc_container_status *matched = NULL;
        size_t n = 0;

        if (!status || !ret || !ret_n || (status->n_containers > 0 && !status->containers))
                return -EINVAL;
        if (keep < 0)
                keep = 0;

        if (filter_id && *filter_id) {
                for (size_t i = 0; i < status->n_containers && !matched; i++)
                        if (streq_nullable(status->containers[i].id, filter_id))
                                matched = &status->containers[i];
                if (!matched) {
                        /* Sandboxes die too and are not containers: upstream logs at info. */
                        kc_log_v_s(4, "Container not found in pod's containers",
                                   KC_KV_STR("containerID", filter_id));
                        goto none;
                }
        }

        for (size_t i = 0; i < status->n_containers; i++) {
                const struct kc_container_status *c = &status->containers[i];

                if (c->state != KC_CONTAINER_STATE_EXITED)
                        continue;
                if (matched && !streq_nullable(matched->name, c->name))
                        continue;
                if (!candidates) {
                        candidates = malloc(status->n_containers * sizeof(*candidates));
                        if (!candidates)
                                return -ENOMEM;
                }
                candidates[n++] = c;
        }
        if (n <= (size_t)keep)
                goto none;

        qsort(candidates, n, sizeof(*candidates), cmp_newest_first);
        /* Return the tail: shift it to the front of the same allocation. */
        memmove(candidates, candidates + keep, (n - (size_t)keep) * sizeof(*candidates));
        *ret_n = n - (size_t)keep;
        *ret = TAKE_PTR(candidates);
        return 0;

none:
        *ret = NULL;
        *ret_n = 0;
        return 0;
}

static void *deletor_worker(void *arg)
{
        struct kc_pod_container_deletor *d = arg;

        /* Pairs with the release store in kc_pod_container_deletor_free(). */
        while (!atomic_load_explicit(&d->stop, memory_order_acquire)) {
                struct kc_runtime_error err = { 0 };
                void *item;
                int r;

                r = kc_chan_pop_sc(d->queue, &item, DELETOR_POP_TIMEOUT_MS);
                if (r == -ETIMEDOUT || r == -EAGAIN)
                        continue;
                if (r < 0) {
                        /* poll() itself failed: looping would spin. */
                        kc_log_errno_s(r, "Pod container deletor worker stopped");
                        break;
                }
                if (item == &stop_sentinel)
                        break;

                r = d->delete_container(d->userdata, item, &err);
                if (r >= 0) {
                        kc_log_v_s(2, "Removed dead container",
                                   KC_KV_STR("containerID", (const char *)item));
                } else {
                        kc_log_warn_s(
                                "DeleteContainer returned error",
                                KC_KV_STR("containerID", (const char *)item),
                                KC_KV_STR("err", err.message[0] ? err.message : strerror(-r)));
                }
                free(item);
        }
        return NULL;
}

int kc_pod_container_deletor_new(kc_delete_container_fn delete_container, void *userdata,
                                 int containers_to_keep, struct kc_pod_container_deletor **ret)
{
        _cleanup_free_ struct kc_pod_container_deletor *d = NULL;
        int r;

        if (!delete_container || !ret)
                return -EINVAL;
        d = calloc(1, sizeof(*d));
        if (!d)
                return -ENOMEM;
        d->delete_container = delete_container;
        d->userdata = userdata;
        /* F-DEL-04: minDeadContainerInPod = 1. */
        d->containers_to_keep = containers_to_keep < 1 ? 1 : containers_to_keep;
        atomic_init(&d->stop, false);
        r = kc_chan_new(&d->queue, KC_CONTAINER_DELETOR_BUFFER_LIMIT, free_queued_id);
        if (r < 0)
                return r;
        r = -pthread_create(&d->worker, NULL, deletor_worker, d);
        if (r < 0) {
                kc_chan_free(d->queue);
                return r;
        }
        (void)pthread_setname_np(d->worker, "kc-ctr-deletor");
        *ret = TAKE_PTR(d);
        return 0;
}

struct kc_pod_container_deletor *kc_pod_container_deletor_free(struct kc_pod_container_deletor *d)
{
        if (!d)
                return NULL;

        /* Pairs with the acquire load in deletor_worker(). */
        atomic_store_explicit(&d->stop, true, memory_order_release);
        /*
         * Wake a sleeping worker. -EAGAIN means the queue is full, so the
         * worker is not asleep and sees the flag before its next pop.
         */
        (void)kc_chan_push_mp(d->queue, &stop_sentinel);
        pthread_join(d->worker, NULL);
        /* Drops the requests still queued (and the sentinel, not freed). */
        kc_chan_free(d->queue);
        free(d);
        return NULL;
}

int kc_pod_container_deletor_delete_containers_in_pod(struct kc_pod_container_deletor *d,
                                                      const char *filter_id,
                                                      const struct kc_pod_status *status,
                                                      bool remove_all)
{
        _cleanup_free_ const struct kc_container_status **victims = NULL;
        int keep, queued = 0, r;
        size_t n = 0;

        if (!d || !status)
                return -EINVAL;

        keep = d->containers_to_keep;
        if (remove_all) {
                keep = 0;
                filter_id = NULL;
        }
        r = kc__get_containers_to_delete_in_pod(filter_id, status, keep, &victims, &n);
        if (r < 0)
                return r;

        for (size_t i = 0; i < n; i++) {
                const char *id = victims[i]->id ? victims[i]->id : "";
                char *copy = strdup(id);

                if (copy && kc_chan_push_mp(d->queue, copy) == 0) {
                        queued++;
                        continue;
                }
                free(copy);
                kc_log_warn_s("Failed to issue the request to remove container",
                              KC_KV_STR("containerID", id));
        }
        return queued;
}
