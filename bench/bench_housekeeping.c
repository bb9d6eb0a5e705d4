/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Housekeeping benchmark (issue 17): the time one HandlePodCleanups pass
 * takes on the syncLoop thread with N pods, each desired (pod manager),
 * known to a pod worker (synced once by a fake syncer, now idle) and
 * running in the simulated runtime (one sandbox, one container). Nothing
 * is orphaned or removed, so the figure is the bookkeeping: SyncKnownPods,
 * the orphan check per runtime pod, the restart check per desired pod and
 * the orphaned-status sweep. A quadratic lookup shows as time growing with
 * N squared. The container GC's pass is requested on the first call (then
 * not for 60 s of the fake clock); the first call is a warm-up, the figure
 * is the median of the next ones.
 *
 * Usage: bench_housekeeping [--quick] [--pods N ...] [--runs R]
 * It prints figures; it never fails on them.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/work_queue.h"
#include "internal.h"
#include "kubelet/kubelet.h"
#include "kubelet/pod_container_deletor.h"
#include "kubelet/pod_manager.h"
#include "kubelet/status/status_manager.h"
#include "podworkers/pod_workers.h"
#include "runtime/api_pod.h"
#include "runtime/cache.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/sim.h"

#define T0 (INT64_C(1700000000) * KC_NSEC_PER_SEC)
#define MAX_RUNS 32

#define CHECK(expr)                                                                                \
        do {                                                                                       \
                int _r = (expr);                                                                   \
                if (_r < 0) {                                                                      \
                        fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr,              \
                                strerror(-_r));                                                    \
                        exit(1);                                                                   \
                }                                                                                  \
        } while (0)

static int64_t mono_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * KC_NSEC_PER_SEC + ts.tv_nsec;
}

static int s_sync_pod(void *ud, struct kc_cancel *ctx, enum kc_sync_pod_type t,
                      struct kc_api_pod *pod, struct kc_api_pod *mirror,
                      struct kc_pod_status *status, bool *ret_is_terminal,
                      int64_t *ret_requeue_after_ns, char **ret_err)
{
        (void)ud, (void)ctx, (void)t, (void)pod, (void)mirror, (void)status;
        (void)ret_requeue_after_ns, (void)ret_err;
        *ret_is_terminal = false;
        return 0;
}

/* Nothing terminates here: the other syncer functions are never reached. */
static int s_terminating(void *ud, struct kc_cancel *ctx, struct kc_api_pod *pod,
                         struct kc_pod_status *status, int64_t grace, char **ret_err)
{
        (void)ud, (void)ctx, (void)pod, (void)status, (void)grace, (void)ret_err;
        return 0;
}

static int s_terminating_runtime(void *ud, struct kc_cancel *ctx, struct kc_pod *pod,
                                 char **ret_err)
{
        (void)ud, (void)ctx, (void)pod, (void)ret_err;
        return 0;
}

static int s_terminated(void *ud, struct kc_cancel *ctx, struct kc_api_pod *pod,
                        struct kc_pod_status *status, char **ret_err)
{
        (void)ud, (void)ctx, (void)pod, (void)status, (void)ret_err;
        return 0;
}

static const struct kc_pod_syncer_ops syncer = {
        .sync_pod = s_sync_pod,
        .sync_terminating_pod = s_terminating,
        .sync_terminating_runtime_pod = s_terminating_runtime,
        .sync_terminated_pod = s_terminated,
};

static void no_enqueue(void *ud, const char *uid, int64_t delay_ns)
{
        (void)ud, (void)uid, (void)delay_ns;
}

static int no_delete(void *ud, const char *id, struct kc_runtime_error *err)
{
        (void)ud, (void)id, (void)err;
        return 0;
}

struct node {
        struct kc_clock *clock;
        struct kc_sim *sim;
        struct kc_pod_cache *cache;
        struct kc_pod_manager *pm;
        struct kc_status_manager *sm;
        struct kc_work_queue *wq;
        struct kc_pod_container_deletor *deletor;
        struct kc_pod_workers *pw;
        struct kc_kubelet *k;
};

/* @p n running runtime pods "hk-N", each with a running sandbox and container. */
static void set_runtime_pods(struct node *n, size_t count, char (*uids)[24])
{
        struct kc_sim_container_spec *specs = calloc(2 * count, sizeof(*specs));
        struct kc_sim_pod_spec *pods = calloc(count, sizeof(*pods));
        char(*ids)[2][24] = calloc(count, sizeof(*ids));
        size_t i;

        if (!specs || !pods || !ids)
                CHECK(-ENOMEM);
        for (i = 0; i < count; i++) {
                snprintf(ids[i][0], sizeof(ids[i][0]), "sb-%zu", i);
                snprintf(ids[i][1], sizeof(ids[i][1]), "ct-%zu", i);
                specs[2 * i] = (struct kc_sim_container_spec){
                        .id = ids[i][0], .name = "POD", .state = KC_CONTAINER_STATE_RUNNING
                };
                specs[2 * i + 1] = (struct kc_sim_container_spec){
                        .id = ids[i][1], .name = "app", .state = KC_CONTAINER_STATE_RUNNING
                };
                pods[i] = (struct kc_sim_pod_spec){ .id = uids[i],
                                                    .name = uids[i],
                                                    .namespace = "bench",
                                                    .sandboxes = &specs[2 * i],
                                                    .n_sandboxes = 1,
                                                    .containers = &specs[2 * i + 1],
                                                    .n_containers = 1 };
        }
        CHECK(kc_sim_set_pods(n->sim, pods, count));
        free(ids);
        free(pods);
        free(specs);
}

static void node_build(struct node *n, size_t count)
{
        char(*uids)[24] = calloc(count, sizeof(*uids));
        struct kc_pod_workers_config pwc;
        size_t i;

        if (!uids)
                CHECK(-ENOMEM);
        CHECK(kc_fake_clock_new(&n->clock, T0));
        CHECK(kc_sim_new(n->clock, &n->sim));
        CHECK(kc_pod_cache_new(&n->cache));
        kc_pod_cache_update_time(n->cache, T0 + 3600 * KC_NSEC_PER_SEC);
        CHECK(kc_pod_manager_new(&n->pm));
        CHECK(kc_status_manager_new(&n->sm));
        CHECK(kc_work_queue_new(n->clock, &n->wq));
        CHECK(kc_pod_container_deletor_new(no_delete, NULL, 1, &n->deletor));
        pwc = (struct kc_pod_workers_config){
                .clock = n->clock,
                .cache = n->cache,
                .syncer = &syncer,
                .enqueue = no_enqueue,
        };
        CHECK(kc_pod_workers_new(&pwc, &n->pw));
        CHECK(kc_kubelet_new(
                &(struct kc_kubelet_deps){
                        .clock = n->clock,
                        .pod_manager = n->pm,
                        .pod_workers = n->pw,
                        .work_queue = n->wq,
                        .deletor = n->deletor,
                        .cache = n->cache,
                        .runtime = kc_sim_pod_runtime(n->sim),
                        .status_manager = n->sm,
                },
                &n->k));
        for (i = 0; i < count; i++) {
                struct kc_api_pod t = { .name = uids[i],
                                        .namespace = "bench",
                                        .source = "file",
                                        .creation_ts = T0,
                                        .deletion_grace_s = -1,
                                        .termination_grace_s = 30 };
                struct kc_api_pod *p = NULL;

                snprintf(uids[i], sizeof(uids[i]), "hk-%zu", i);
                t.uid = uids[i];
                CHECK(kc_api_pod_new(&t, &p));
                CHECK(kc_pod_manager_update_pod(n->pm, p));
                CHECK(kc_pod_workers_update_pod(
                        n->pw, &(struct kc_pod_update_options){ .update_type = KC_SYNC_POD_CREATE,
                                                                .start_time = T0,
                                                                .pod = p }));
                kc_api_pod_unref(p);
        }
        CHECK(kc__pod_workers_drain(n->pw, 600 * 1000));
        set_runtime_pods(n, count, uids);
        free(uids);
}

static void node_free(struct node *n)
{
        kc_kubelet_stop(n->k);
        kc_pod_workers_free(n->pw);
        kc_kubelet_free(n->k);
        kc_pod_container_deletor_free(n->deletor);
        kc_work_queue_free(n->wq);
        kc_status_manager_free(n->sm);
        kc_pod_manager_free(n->pm);
        kc_pod_cache_free(n->cache);
        kc_sim_free(n->sim);
        kc_clock_free(n->clock);
}

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

        return (x > y) - (x < y);
}

static void bench_one(size_t count, int runs)
{
        struct node n = { 0 };
        int64_t t[MAX_RUNS], first;
        int i;

        node_build(&n, count);
        first = mono_ns();
        kc_kubelet_sync_handler.handle_pod_cleanups(n.k);
        first = mono_ns() - first;
        for (i = 0; i < runs; i++) {
                int64_t s = mono_ns();

                kc_kubelet_sync_handler.handle_pod_cleanups(n.k);
                t[i] = mono_ns() - s;
        }
        qsort(t, (size_t)runs, sizeof(*t), cmp_i64);
        printf("pods=%-6zu housekeeping median=%9.3f ms  min=%9.3f ms  max=%9.3f ms  "
               "first=%9.3f ms\n",
               count, t[runs / 2] / 1e6, t[0] / 1e6, t[runs - 1] / 1e6, first / 1e6);
        fflush(stdout);
        node_free(&n);
}

int main(int argc, char **argv)
{
        size_t pods[16] = { 1000, 5000, 10000 };
        size_t n_pods = 3, custom = 0;
        int runs = 5, i;

        for (i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--quick") == 0) {
                        pods[0] = 200;
                        n_pods = 1;
                        runs = 3;
                } else if (strcmp(argv[i], "--pods") == 0 && i + 1 < argc && custom < 16) {
                        pods[custom++] = strtoul(argv[++i], NULL, 10);
                        n_pods = custom;
                } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
                        runs = atoi(argv[++i]);
                } else {
                        fprintf(stderr, "usage: %s [--quick] [--pods N ...] [--runs R]\n", argv[0]);
                        return 2;
                }
        }
        if (runs < 1 || runs > MAX_RUNS)
                runs = 5;
        for (size_t k = 0; k < n_pods; k++)
                bench_one(pods[k], runs);
        return 0;
}
