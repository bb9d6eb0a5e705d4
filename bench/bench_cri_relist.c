/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Relist over CRI: GenericPLEG over the runtime manager over the CRI client
 * against a real containerd, with 10, 50 and 100 pods (one host-network
 * sandbox and one sleeping container each). For each size it reports the
 * wall time of one relist with nothing changed, and of the two raw calls a
 * relist cannot avoid (ListPodSandbox then ListContainers, back to back on
 * the same client), and the relist's overhead over them. Target (issue 5):
 * at most 15 % above the raw calls; issue 18: at most 5 %.
 *
 * Usage: bench_cri_relist --socket PATH --image NAME [--pods N ...] [--rounds N]
 * Start containerd first (tests/integration/ has the harness; bench/
 * bench_cri_relist.sh does the whole run). The pods it creates are named
 * bench-<i> and are removed at the end. Figures only, never pass/fail.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/chan.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "pleg/event.h"
#include "pleg/generic.h"
#include "runtime/cache.h"
#include "runtime/cri.h"
#include "runtime/error.h"
#include "runtime/manager.h"
#include "runtime/runtime_service.h"
#include "runtime/sync_pod.h"

static int64_t now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * KC_NSEC_PER_SEC + ts.tv_nsec;
}

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

        return (x > y) - (x < y);
}

static double median_ms(int64_t *v, size_t n)
{
        qsort(v, n, sizeof(*v), cmp_i64);
        return (double)v[n / 2] / 1e6;
}

static double p95_ms(int64_t *v, size_t n)
{
        return (double)v[(n * 95) / 100] / 1e6; /* v sorted by median_ms() */
}

/* One pod: a host-network sandbox and one container running `sleep`. */
static int create_pod(struct kc_runtime_service svc, const char *image, size_t i)
{
        char name[32], uid[48];
        struct kc_runtime_error err = { 0 };
        _cleanup_free_ char *sb = NULL, *ctr = NULL;
        int r;

        snprintf(name, sizeof(name), "bench-%zu", i);
        snprintf(uid, sizeof(uid), "bench-uid-%zu", i);
        const struct kc_label labels[] = {
                { KC_LABEL_POD_NAME, name },
                { KC_LABEL_POD_NAMESPACE, "bench" },
                { KC_LABEL_POD_UID, uid },
        };
        const struct kc_label clabels[] = {
                { KC_LABEL_POD_NAME, name },
                { KC_LABEL_POD_NAMESPACE, "bench" },
                { KC_LABEL_POD_UID, uid },
                { KC_LABEL_CONTAINER_NAME, "sleep" },
        };
        const struct kc_pod_sandbox_config sbc = {
                .metadata = { .name = name, .uid = uid, .namespace = "bench" },
                .hostname = name,
                .host_network = true,
                .labels = labels,
                .n_labels = KC_ELEMENTSOF(labels),
        };
        static const char *const cmd[] = { "sleep", "1000000" };
        const struct kc_container_config cc = {
                .metadata = { .name = "sleep" },
                .image = image,
                .user_specified_image = image,
                .command = cmd,
                .n_command = 2,
                .labels = clabels,
                .n_labels = KC_ELEMENTSOF(clabels),
        };

        r = svc.ops->run_pod_sandbox(svc.self, &sbc, &sb, &err);
        if (r >= 0)
                r = svc.ops->create_container(svc.self, sb, &cc, &sbc, &ctr, &err);
        if (r >= 0)
                r = svc.ops->start_container(svc.self, ctr, &err);
        if (r < 0)
                fprintf(stderr, "bench_cri_relist: creating %s: %s\n", name, err.message);
        return r;
}

/* Removes every sandbox this benchmark created (and with them their containers). */
static void remove_pods(struct kc_runtime_service svc)
{
        const struct kc_label sel[] = { { KC_LABEL_POD_NAMESPACE, "bench" } };
        const struct kc_pod_sandbox_filter f = { .state = -1,
                                                 .label_selector = sel,
                                                 .n_label_selector = 1 };
        struct kc_pod_sandbox_list l = { 0 };
        struct kc_runtime_error err = { 0 };

        if (svc.ops->list_pod_sandbox(svc.self, &f, &l, &err) < 0) {
                fprintf(stderr, "bench_cri_relist: cleanup: %s\n", err.message);
                return;
        }
        for (size_t i = 0; i < l.n; i++) {
                svc.ops->stop_pod_sandbox(svc.self, l.items[i].id, &err);
                svc.ops->remove_pod_sandbox(svc.self, l.items[i].id, &err);
        }
        kc_runtime_result_done(&l);
}

/* One relist with nothing changed, timed; any event it sends is a bug in the bench's setup. */
static int time_relist(struct kc_generic_pleg *g, struct kc_chan *events, int64_t *ns)
{
        int64_t t0 = now_ns();
        void *item;
        int r;

        r = kc_generic_pleg_relist(g);
        *ns = now_ns() - t0;
        while (kc_chan_pop_sc(events, &item, 0) == 0)
                kc_pleg_event_free(item);
        return r;
}

/* The two list calls a relist cannot avoid, back to back on the same client, timed; their
 * results are released before the relist that may follow. */
static int time_raw_lists(struct kc_runtime_service svc, struct kc_runtime_error *err, int64_t *ns)
{
        struct kc_pod_sandbox_list sl = { 0 };
        struct kc_container_list cl = { 0 };
        int64_t t0 = now_ns();
        int r;

        r = svc.ops->list_pod_sandbox(svc.self, NULL, &sl, err);
        if (r >= 0)
                r = svc.ops->list_containers(svc.self, NULL, &cl, err);
        *ns = now_ns() - t0;
        kc_runtime_result_done(&sl);
        kc_runtime_result_done(&cl);
        return r;
}

static int measure(struct kc_runtime_service svc, struct kc_runtime_manager *m, size_t n_pods,
                   size_t rounds)
{
        _cleanup_free_ int64_t *relist = calloc(rounds, sizeof(int64_t));
        _cleanup_free_ int64_t *raw = calloc(rounds, sizeof(int64_t));
        struct kc_pod_cache *cache = NULL;
        struct kc_chan *events = NULL;
        struct kc_generic_pleg *g = NULL;
        struct kc_generic_pleg_config pc;
        double rel, rw;
        int r;

        if (!relist || !raw)
                return -ENOMEM;
        if ((r = kc_pod_cache_new(&cache)) < 0 ||
            (r = kc_chan_new(&events, 4096, kc_pleg_event_free_item)) < 0)
                goto out;
        pc = (struct kc_generic_pleg_config){
                .runtime = kc_runtime_manager_pod_runtime(m),
                .events = events,
                .cache = cache,
                .clock = kc_clock_real(),
                .relist_period_ns = KC_NSEC_PER_SEC,
                .relist_threshold_ns = 3 * KC_NSEC_PER_MIN,
        };
        if ((r = kc_generic_pleg_new(&pc, &g)) < 0)
                goto out;
        /* The first relists see everything new and inspect every pod; then nothing changes. */
        for (int i = 0; i < 3 && r >= 0; i++)
                r = kc_generic_pleg_relist(g);
        for (size_t i = 0; i < rounds && r >= 0; i++) {
                struct kc_runtime_error err = { 0 };

                /* The two take turns going first, so that whatever the first call after
                 * the last round pays (containerd's goroutines waking, cold caches) and
                 * drift in containerd fall on both alike. */
                if (i % 2 == 0)
                        r = time_relist(g, events, &relist[i]);
                if (r >= 0)
                        r = time_raw_lists(svc, &err, &raw[i]);
                if (r >= 0 && i % 2 == 1)
                        r = time_relist(g, events, &relist[i]);
                if (r < 0)
                        fprintf(stderr, "bench_cri_relist: %s\n", err.message);
        }
        if (r >= 0) {
                rel = median_ms(relist, rounds);
                rw = median_ms(raw, rounds);
                printf("| %5zu | %8.2f | %8.2f | %8.2f | %8.2f | %+7.1f %% |\n", n_pods, rel,
                       p95_ms(relist, rounds), rw, p95_ms(raw, rounds), (rel / rw - 1) * 100);
        }
out:
        kc_generic_pleg_free(g);
        kc_chan_free(events);
        kc_pod_cache_free(cache);
        return r;
}

int main(int argc, char **argv)
{
        const char *socket = NULL, *image = NULL;
        size_t sizes[8] = { 10, 50, 100 }, n_sizes = 0, rounds = 50, have = 0;
        struct kc_cri *cri = NULL;
        struct kc_runtime_manager *m = NULL;
        struct kc_runtime_service svc;
        int r = 0;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc)
                        socket = argv[++i];
                else if (strcmp(argv[i], "--image") == 0 && i + 1 < argc)
                        image = argv[++i];
                else if (strcmp(argv[i], "--pods") == 0 && i + 1 < argc && n_sizes < 8)
                        sizes[n_sizes++] = strtoul(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
                        rounds = strtoul(argv[++i], NULL, 10);
                else {
                        fprintf(stderr, "usage: bench_cri_relist --socket PATH --image NAME "
                                        "[--pods N ...] [--rounds N]\n");
                        return 2;
                }
        }
        if (!socket || !image || rounds < 2) {
                fprintf(stderr, "bench_cri_relist: --socket and --image are required\n");
                return 2;
        }
        if (n_sizes == 0)
                n_sizes = 3;
        if ((r = kc_cri_new(socket, KC_CRI_DEFAULT_REQUEST_TIMEOUT_NS, &cri)) < 0 ||
            (r = kc_runtime_manager_new(kc_cri_service(cri), kc_clock_real(), &m)) < 0) {
                fprintf(stderr, "bench_cri_relist: %s\n", strerror(-r));
                return 1;
        }
        svc = kc_cri_service(cri);
        printf("relist over CRI (containerd at %s), %zu rounds, medians and p95 in ms\n\n", socket,
               rounds);
        printf("|  pods | relist | relist p95 | raw lists | raw p95 | overhead |\n");
        printf("|------:|-------:|-----------:|----------:|--------:|---------:|\n");
        for (size_t k = 0; k < n_sizes && r >= 0; k++) {
                for (; have < sizes[k] && r >= 0; have++)
                        r = create_pod(svc, image, have);
                if (r >= 0)
                        r = measure(svc, m, sizes[k], rounds);
        }
        remove_pods(svc);
        kc_runtime_manager_free(m);
        kc_cri_free(cri);
        return r < 0 ? 1 : 0;
}
