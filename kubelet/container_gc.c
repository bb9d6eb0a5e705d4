/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The container GC's sandbox eviction for removed pods (upstream
 * kuberuntime_gc.go evictSandboxes with ShouldPodContentBeRemoved), on a
 * thread of its own as upstream runs its container GC on its own
 * goroutine. Housekeeping asks for a pass (kc__container_gc_request) and
 * returns at once: the RemovePodSandbox calls, one per sandbox and as slow
 * as the runtime is, never run on the syncLoop thread. Requests go through
 * a two-slot kc_chan (one pass token, one stop sentinel); an atomic flag
 * keeps one pass queued or running at a time. A pass also removes the log
 * directories of removed pods under the pod logs root (evictPodLogsDirectories).
 */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container_gc.h"
#include "core/chan.h"
#include "core/cleanup.h"
#include "core/format.h"
#include "core/log.h"
#include "core/map.h"
#include "kubelet/pod_manager.h"
#include "podworkers/pod_workers.h"
#include "runtime/api_pod.h"
#include "runtime/container.h"
#include "runtime/error.h"

/* Lost-wakeup net for the thread's pop; requests and stopping wake it at once. */
#define GC_POP_TIMEOUT_MS 1000

struct kc_container_gc {
        struct kc_container_gc_config cfg;
        char *pod_logs_root; /* cfg.pod_logs_root's copy */
        /* Items: &pass_token or &stop_sentinel; never more than one of each. */
        struct kc_chan *wake;
        /*
         * Set by a request (compare-exchange from false), cleared (release)
         * by the thread when the pass is over.
         */
        atomic_bool busy;
        /* Set (release) by kc__container_gc_free(); read (acquire) by the thread. */
        atomic_bool stop;
        pthread_t thread;
};

/* Their addresses are the messages; never freed. */
static char pass_token, stop_sentinel;

static bool stopping(struct kc_container_gc *gc)
{
        /* Pairs with the release store in kc__container_gc_free(). */
        return atomic_load_explicit(&gc->stop, memory_order_acquire);
}

/* The UIDs of the desired pods as a set (keys borrowed from @p pods). */
static int desired_set(struct kc_api_pod *const *pods, size_t n, struct kc_map **ret)
{
        _cleanup_(kc_map_freep) struct kc_map *set = NULL;
        size_t i;

        if (kc_map_new(&set) < 0 || kc_map_reserve(set, n) < 0)
                return -ENOMEM;
        for (i = 0; i < n; i++)
                if (pods[i]->uid && kc_map_put(set, pods[i]->uid, pods[i]) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(set);
        return 0;
}

/* A runtime pod whose sandboxes may go: nothing running, not desired, content removable. */
static bool removable(struct kc_container_gc *gc, const struct kc_pod *rp,
                      const struct kc_map *desired)
{
        size_t j;

        for (j = 0; j < rp->n_sandboxes; j++)
                if (rp->sandboxes[j].state == KC_CONTAINER_STATE_RUNNING)
                        return false;
        for (j = 0; j < rp->n_containers; j++)
                if (rp->containers[j].state == KC_CONTAINER_STATE_RUNNING)
                        return false;
        return rp->id && !kc_map_get(desired, rp->id) &&
               kc_pod_workers_should_pod_content_be_removed(gc->cfg.pod_workers, rp->id);
}

/* Removes the sandboxes of @p rp; false once a stop was requested. */
static bool remove_sandboxes(struct kc_container_gc *gc, const struct kc_pod *rp, size_t *removed)
{
        const struct kc_pod_runtime *rt = &gc->cfg.runtime;
        size_t j;

        for (j = 0; j < rp->n_sandboxes; j++) {
                struct kc_runtime_error e = { 0 };

                if (stopping(gc))
                        return false;
                if (rt->ops->remove_pod_sandbox(rt->self, rp->sandboxes[j].id, &e) < 0)
                        kc_log_error_s(e.message, "Failed to remove sandbox",
                                       KC_KV_STR("sandboxID", rp->sandboxes[j].id),
                                       KC_KV_STR("podUID", rp->id));
                else
                        (*removed)++;
        }
        return true;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(path) < 0 ? -1 : 0;
}

/*
 * evictPodLogsDirectories: a directory "<ns>_<name>_<uid>" under the pod
 * logs root goes with everything in it once the pod is not desired and
 * the pod workers say its content may be removed (the UID is what follows
 * the last '_', as parsePodUIDFromLogsDirectory reads it).
 */
static void evict_pod_logs_directories(struct kc_container_gc *gc, const struct kc_map *desired)
{
        _cleanup_free_ char *path = NULL;
        struct dirent *de;
        const char *uid;
        DIR *dir;

        if (!gc->pod_logs_root)
                return;
        dir = opendir(gc->pod_logs_root);
        if (!dir) {
                if (errno != ENOENT)
                        kc_log_errno_s(-errno, "Failed to read pod logs directory",
                                       KC_KV_STR("path", gc->pod_logs_root));
                return;
        }
        while (!stopping(gc) && (de = readdir(dir))) {
                uid = strrchr(de->d_name, '_');
                if (de->d_name[0] == '.' || !uid || !uid[1] || kc_map_get(desired, ++uid) ||
                    !kc_pod_workers_should_pod_content_be_removed(gc->cfg.pod_workers, uid))
                        continue;
                free(path);
                path = kc_strdup_printf("%s/%s", gc->pod_logs_root, de->d_name);
                kc_log_v_s(4, "Removing pod logs", KC_KV_STR("podUID", uid));
                if (!path || nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) < 0)
                        kc_log_errno_s(path ? -errno : -ENOMEM,
                                       "Failed to remove pod logs directory",
                                       KC_KV_STR("path", de->d_name));
        }
        closedir(dir);
}

/*
 * One pass: a runtime pod that is not desired, whose content the pod
 * workers say may go (deleted and terminated, or unknown once they
 * synced), with no ready sandbox and no running container, loses its
 * sandboxes and with them its dead containers. Without it every deleted
 * pod stayed in the runtime, so each relist, the PLEG records and the pod
 * cache grew with the number of pods ever deleted (found by bench/soak.py).
 * Sandboxes of pods still desired are left (upstream keeps the newest
 * one), and so is anything running: killing orphans is housekeeping's job.
 * The desired set is a map built once: the pass is linear in pods.
 */
static void evict_sandboxes_of_removed_pods(struct kc_container_gc *gc)
{
        const struct kc_pod_runtime *rt = &gc->cfg.runtime;
        _cleanup_(kc_map_freep) struct kc_map *desired = NULL;
        struct kc_runtime_error err = { 0 };
        struct kc_pod_list all = { 0 };
        struct kc_api_pod **pods = NULL;
        size_t n, i, removed = 0;

        n = kc_pod_manager_get_pods(gc->cfg.pod_manager, &pods);
        if (!pods || desired_set(pods, n, &desired) < 0) {
                kc_log_errno_s(-ENOMEM, "Container garbage collection failed");
                goto out;
        }
        if (rt->ops->get_pods(rt->self, true, &all, &err) < 0) {
                kc_log_error_s(err.message, "Container garbage collection failed to list pods");
                goto out;
        }
        for (i = 0; i < all.n; i++)
                if (removable(gc, all.pods[i], desired) &&
                    !remove_sandboxes(gc, all.pods[i], &removed))
                        break;
        if (removed)
                kc_log_v_s(2, "Container garbage collection removed sandboxes",
                           KC_KV_UINT("count", removed));
        kc_pod_list_done(&all);
        evict_pod_logs_directories(gc, desired);
out:
        for (i = 0; pods && i < n; i++)
                kc_api_pod_unref(pods[i]);
        free(pods);
}

static void *gc_main(void *arg)
{
        struct kc_container_gc *gc = arg;

        while (!stopping(gc)) {
                void *item;
                int r;

                r = kc_chan_pop_sc(gc->wake, &item, GC_POP_TIMEOUT_MS);
                if (r == -ETIMEDOUT || r == -EAGAIN)
                        continue;
                if (r < 0) {
                        /* poll() itself failed: looping would spin. */
                        kc_log_errno_s(r, "Container garbage collection stopped");
                        break;
                }
                if (item == &stop_sentinel)
                        break;
                evict_sandboxes_of_removed_pods(gc);
                /* Pairs with the compare-exchange in kc__container_gc_request(). */
                atomic_store_explicit(&gc->busy, false, memory_order_release);
        }
        return NULL;
}

int kc__container_gc_new(const struct kc_container_gc_config *cfg, struct kc_container_gc **ret)
{
        _cleanup_free_ struct kc_container_gc *gc = NULL;
        int r;

        if (!cfg || !ret || !cfg->runtime.ops || !cfg->runtime.ops->get_pods ||
            !cfg->runtime.ops->remove_pod_sandbox || !cfg->pod_manager || !cfg->pod_workers)
                return -EINVAL;
        gc = calloc(1, sizeof(*gc));
        if (!gc)
                return -ENOMEM;
        gc->cfg = *cfg;
        if (cfg->pod_logs_root) {
                gc->pod_logs_root = strdup(cfg->pod_logs_root);
                if (!gc->pod_logs_root)
                        return -ENOMEM;
        }
        atomic_init(&gc->busy, false);
        atomic_init(&gc->stop, false);
        r = kc_chan_new(&gc->wake, 2, NULL);
        if (r >= 0) {
                r = -pthread_create(&gc->thread, NULL, gc_main, gc);
                if (r < 0)
                        kc_chan_free(gc->wake);
        }
        if (r < 0) {
                free(gc->pod_logs_root);
                return r;
        }
        (void)pthread_setname_np(gc->thread, "kc-container-gc");
        *ret = TAKE_PTR(gc);
        return 0;
}

int kc__container_gc_request(struct kc_container_gc *gc)
{
        bool idle = false;

        if (!gc)
                return -EINVAL;
        /* Pairs with the release store at the end of a pass in gc_main(). */
        if (!atomic_compare_exchange_strong_explicit(&gc->busy, &idle, true, memory_order_acquire,
                                                     memory_order_relaxed))
                return -EBUSY;
        /* Two slots, one token at most (busy) and one sentinel: the push cannot fail. */
        if (kc_chan_push_mp(gc->wake, &pass_token) < 0) {
                atomic_store_explicit(&gc->busy, false, memory_order_relaxed);
                return -EBUSY;
        }
        return 0;
}

struct kc_container_gc *kc__container_gc_free(struct kc_container_gc *gc)
{
        if (!gc)
                return NULL;
        /* Pairs with the acquire load in stopping(). */
        atomic_store_explicit(&gc->stop, true, memory_order_release);
        (void)kc_chan_push_mp(gc->wake, &stop_sentinel);
        pthread_join(gc->thread, NULL);
        kc_chan_free(gc->wake);
        free(gc->pod_logs_root);
        free(gc);
        return NULL;
}
