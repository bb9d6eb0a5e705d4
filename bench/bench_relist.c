/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Relist benchmark: GenericPLEG over the runtime manager over the simulated
 * runtime's CRI-shaped face, at 100, 1,000 and 10,000 pods with 3 containers
 * and 1 sandbox each. Reports the CPU time of one relist with nothing
 * changed and with 10 % of the containers changed, and the peak RSS.
 * Also reports the same through the sim's kubecontainer face, which
 * isolates PLEG's own cost from the manager's listing and grouping.
 *
 * Usage: bench_relist [--quick] [--rounds N] [--pods N ...] [--no-churn]
 *                     [--runtime manager|sim]
 * (--no-churn skips the changed relists, for profiling the no-change path;
 * --runtime runs one of the two rows, for profiling it alone).
 * It prints figures; it never fails on them (targets live in docs/benchmarks.md).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "core/chan.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "metrics/kubelet_metrics.h"
#include "metrics/registry.h"
#include "pleg/event.h"
#include "pleg/generic.h"
#include "runtime/cache.h"
#include "runtime/container.h"
#include "runtime/manager.h"
#include "runtime/sim.h"
#include "runtime/sync_pod.h"

#include "relist_world.h"

static double cpu_now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long peak_rss_kib(void)
{
        struct rusage ru;

        getrusage(RUSAGE_SELF, &ru);
        return ru.ru_maxrss;
}

struct result {
        double nochange_ms;
        double changed_ms;
        size_t events_per_changed;
};

static bool no_churn;
static int only_via = -1; /* --runtime: 1 manager+sim, 0 sim-direct, -1 both */

static int run(size_t n_pods, bool via_manager, unsigned rounds, struct result *res)
{
        struct kc_clock *clock = NULL;
        struct kc_sim *sim = NULL;
        struct kc_runtime_manager *mgr = NULL;
        struct kc_chan *events = NULL;
        struct kc_pod_cache *cache = NULL;
        struct kc_metrics_registry *reg = NULL;
        struct kc_kubelet_metrics metrics;
        struct kc_generic_pleg *pleg = NULL;
        struct kc_generic_pleg_config cfg;
        struct world w = { 0 };
        double t, nochange = 0, changed = 0;
        size_t events_changed = 0;
        unsigned i;
        int r;

        if ((r = world_init(&w, n_pods)) < 0 ||
            (r = kc_fake_clock_new(&clock, INT64_C(1700000000) * KC_NSEC_PER_SEC)) < 0 ||
            (r = kc_sim_new(clock, &sim)) < 0 ||
            (r = kc_chan_new(&events, 1u << 16, kc_pleg_event_free_item)) < 0 ||
            (r = kc_pod_cache_new(&cache)) < 0 || (r = kc_metrics_registry_new(&reg)) < 0 ||
            (r = kc_kubelet_metrics_register(reg, &metrics)) < 0)
                goto out;
        if (via_manager && (r = kc_runtime_manager_new(kc_sim_service(sim), clock, &mgr)) < 0)
                goto out;
        cfg = (struct kc_generic_pleg_config){
                .runtime =
                        via_manager ? kc_runtime_manager_pod_runtime(mgr) : kc_sim_pod_runtime(sim),
                .events = events,
                .cache = cache,
                .clock = clock,
                .metrics = &metrics,
                .relist_period_ns = KC_GENERIC_PLEG_RELIST_PERIOD,
                .relist_threshold_ns = KC_GENERIC_PLEG_RELIST_THRESHOLD,
        };
        if ((r = kc_generic_pleg_new(&cfg, &pleg)) < 0)
                goto out;
        if ((r = kc_sim_set_pods(sim, w.pods, w.n_pods)) < 0)
                goto out;
        /* Warm-up: the first relist sees every container start. */
        kc_generic_pleg_relist(pleg);
        drain(events);
        kc_generic_pleg_relist(pleg);
        drain(events);

        for (i = 0; i < rounds; i++) {
                kc_fake_clock_advance(clock, KC_NSEC_PER_SEC);
                t = cpu_now();
                kc_generic_pleg_relist(pleg);
                nochange += cpu_now() - t;
                if (drain(events) != 0) {
                        fprintf(stderr, "bench: a no-change relist produced events\n");
                        r = -EINVAL;
                        goto out;
                }

                if (no_churn)
                        continue;
                world_churn(&w, i);
                if ((r = kc_sim_set_pods(sim, w.pods, w.n_pods)) < 0)
                        goto out;
                kc_fake_clock_advance(clock, KC_NSEC_PER_SEC);
                t = cpu_now();
                kc_generic_pleg_relist(pleg);
                changed += cpu_now() - t;
                events_changed += drain(events);
        }
        res->nochange_ms = nochange * 1e3 / rounds;
        res->changed_ms = changed * 1e3 / rounds;
        res->events_per_changed = events_changed / rounds;
        r = 0;
out:
        kc_generic_pleg_free(pleg);
        kc_metrics_registry_free(reg);
        kc_pod_cache_free(cache);
        kc_chan_free(events);
        kc_runtime_manager_free(mgr);
        kc_sim_free(sim);
        kc_clock_free(clock);
        world_done(&w);
        return r;
}

int main(int argc, char **argv)
{
        size_t sizes[8] = { 100, 1000, 10000 }, n_sizes = 3, i;
        unsigned rounds = 20;
        bool custom = false;
        int a;

        for (a = 1; a < argc; a++) {
                if (strcmp(argv[a], "--quick") == 0) {
                        rounds = 3;
                        sizes[0] = 100;
                        sizes[1] = 1000;
                        n_sizes = 2;
                } else if (strcmp(argv[a], "--pods") == 0 && a + 1 < argc) {
                        if (!custom)
                                n_sizes = 0;
                        custom = true;
                        if (n_sizes < KC_ELEMENTSOF(sizes))
                                sizes[n_sizes++] = strtoul(argv[++a], NULL, 10);
                } else if (strcmp(argv[a], "--runtime") == 0 && a + 1 < argc) {
                        a++;
                        only_via = strcmp(argv[a], "manager") == 0 ? 1
                                   : strcmp(argv[a], "sim") == 0   ? 0
                                                                   : -2;
                        if (only_via == -2) {
                                fprintf(stderr, "bench_relist: --runtime manager|sim\n");
                                return 2;
                        }
                } else if (strcmp(argv[a], "--no-churn") == 0) {
                        no_churn = true;
                } else if (strcmp(argv[a], "--rounds") == 0 && a + 1 < argc) {
                        rounds = (unsigned)strtoul(argv[++a], NULL, 10);
                        if (rounds == 0)
                                rounds = 1;
                } else {
                        fprintf(stderr, "usage: bench_relist [--quick] [--rounds N] [--pods N ...] "
                                        "[--no-churn] [--runtime manager|sim]\n");
                        return 2;
                }
        }

        printf("# GenericPLEG relist, %d containers + 1 sandbox per pod, CPU time per relist "
               "(mean of %u)\n",
               CONTAINERS_PER_POD, rounds);
        printf("%-8s %-12s %14s %16s %14s %14s\n", "pods", "runtime", "no-change ms",
               "10%-changed ms", "events/relist", "peak RSS KiB");
        for (i = 0; i < n_sizes; i++) {
                int via;

                for (via = 1; via >= 0; via--) {
                        struct result res = { 0 };
                        int r;

                        if (only_via >= 0 && via != only_via)
                                continue;
                        r = run(sizes[i], via, rounds, &res);

                        if (r < 0) {
                                fprintf(stderr, "bench: %zu pods: %s\n", sizes[i], strerror(-r));
                                return 1;
                        }
                        printf("%-8zu %-12s %14.3f %16.3f %14zu %14ld\n", sizes[i],
                               via ? "manager+sim" : "sim-direct", res.nochange_ms, res.changed_ms,
                               res.events_per_changed, peak_rss_kib());
                        fflush(stdout);
                }
        }
        return 0;
}
