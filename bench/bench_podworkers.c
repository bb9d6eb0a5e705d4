/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pod workers benchmark (issue 3): the real kc_pod_workers with a fake pod
 * syncer (no runtime) and the real clock.
 *
 *  1. Dispatch latency: a producer thread stands in for PLEG + syncLoop and
 *     calls kc_pod_workers_update_pod(Sync) for random pods at a steady
 *     rate. Each update is stamped (CLOCK_MONOTONIC) just before the call;
 *     the fake sync_pod records now - stamp on entry. 1 % of the pods were
 *     killed first and sit in sync_terminating_pod for the whole run (30 s
 *     of real time, or until teardown triggers a cancel token).
 *  2. UpdatePod throughput from 1 and 2 producer threads (calls accepted/s
 *     and syncs executed/s; coalescing absorbs the difference).
 *  3. RSS per idle pod worker: N pods created in a burst, each synced once,
 *     now idle; RSS and heap delta divided by N, and the pool's threads.
 *
 * The pod cache's global timestamp is set one hour ahead once, so every
 * GetNewerThan the workers make is satisfied at once: the latency is the
 * pod workers' own (UpdatePod, ready queue, thread wake-up or spawn), not
 * a wait for a PLEG refresh.
 *
 * Usage: bench_podworkers [--quick] [--pods N ...] [--rate R] [--window S]
 * It prints figures; it never fails on them (targets live in docs/benchmarks.md).
 */
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/cancel.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "internal.h"
#include "podworkers/pod_workers.h"
#include "runtime/api_pod.h"
#include "runtime/cache.h"
#include "runtime/container.h"

#define UID_PREFIX "bpw-"
#define STUCK_NS (30 * KC_NSEC_PER_SEC)

/* ------------------------------------------------------------------------ */
/* Helpers                                                                    */

static int64_t mono_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * KC_NSEC_PER_SEC + ts.tv_nsec;
}

static void sleep_until(int64_t t)
{
        struct timespec ts = { .tv_sec = t / KC_NSEC_PER_SEC, .tv_nsec = t % KC_NSEC_PER_SEC };

        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                ;
}

static void sleep_ms(int ms)
{
        sleep_until(mono_ns() + ms * KC_NSEC_PER_MSEC);
}

static long rss_kib(void)
{
        long size = 0, resident = 0;
        FILE *f = fopen("/proc/self/statm", "re");

        if (!f)
                return -1;
        if (fscanf(f, "%ld %ld", &size, &resident) != 2)
                resident = -1;
        fclose(f);
        return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static size_t heap_bytes(void)
{
        struct mallinfo2 mi = mallinfo2();

        return mi.uordblks + mi.hblkhd;
}

static unsigned task_count(void)
{
        DIR *d = opendir("/proc/self/task");
        struct dirent *de;
        unsigned n = 0;

        if (!d)
                return 0;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        n++;
        closedir(d);
        return n;
}

static uint64_t xorshift(uint64_t *s)
{
        uint64_t x = *s;

        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return *s = x;
}

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

        return (x > y) - (x < y);
}

/* Nearest rank on a sorted array. */
static int64_t percentile(const int64_t *s, size_t n, double p)
{
        size_t k;

        if (n == 0)
                return 0;
        k = (size_t)(p * (double)n + 0.999999);
        if (k < 1)
                k = 1;
        if (k > n)
                k = n;
        return s[k - 1];
}

/* ------------------------------------------------------------------------ */
/* The world: pods, the fake syncer, the pod workers                          */

struct world {
        size_t n;
        struct kc_api_pod **pods;
        bool *stuck;
        size_t *live; /* indices of the pods that are not stuck */
        size_t n_live;
        _Atomic int64_t *stamps; /* oldest unserviced stamped update, 0: none */

        int64_t win_start, win_end;
        int64_t *samples;
        size_t cap_samples;
        atomic_size_t n_samples, dropped;

        atomic_ulong syncs, term_entered;
        struct kc_cancel *teardown;
        struct kc_pod_cache *cache;
        struct kc_pod_workers *pw;
};

static size_t uid_index(const char *uid)
{
        return (size_t)strtoul(uid + sizeof(UID_PREFIX) - 1, NULL, 10);
}

static int fake_sync_pod(void *userdata, struct kc_cancel *ctx, enum kc_sync_pod_type update_type,
                         struct kc_api_pod *pod, struct kc_api_pod *mirror_pod,
                         struct kc_pod_status *status, bool *ret_is_terminal,
                         int64_t *ret_requeue_after_ns, char **ret_err)
{
        (void)ret_requeue_after_ns;
        struct world *w = userdata;
        int64_t now = mono_ns(), stamp;
        size_t i = uid_index(pod->uid), k;

        (void)ctx, (void)update_type, (void)mirror_pod, (void)status, (void)ret_is_terminal,
                (void)ret_err;
        if (i < w->n) {
                stamp = atomic_exchange_explicit(&w->stamps[i], 0, memory_order_acq_rel);
                if (stamp != 0 && stamp >= w->win_start && stamp < w->win_end) {
                        k = atomic_fetch_add_explicit(&w->n_samples, 1, memory_order_relaxed);
                        if (k < w->cap_samples)
                                w->samples[k] = now - stamp;
                        else
                                atomic_fetch_add_explicit(&w->dropped, 1, memory_order_relaxed);
                }
        }
        atomic_fetch_add_explicit(&w->syncs, 1, memory_order_relaxed);
        return 0;
}

/* The stuck pods: 30 s of real time, cut short only by the teardown token. */
static int fake_sync_terminating_pod(void *userdata, struct kc_cancel *ctx, struct kc_api_pod *pod,
                                     struct kc_pod_status *status, int64_t grace_period_s,
                                     char **ret_err)
{
        struct world *w = userdata;

        (void)ctx, (void)pod, (void)status, (void)grace_period_s, (void)ret_err;
        atomic_fetch_add_explicit(&w->term_entered, 1, memory_order_relaxed);
        if (kc_clock_sleep(kc_clock_real(), STUCK_NS, w->teardown) == -ECANCELED)
                return -ECANCELED;
        return 0;
}

static int fake_sync_terminating_runtime_pod(void *userdata, struct kc_cancel *ctx,
                                             struct kc_pod *running_pod, char **ret_err)
{
        (void)userdata, (void)ctx, (void)running_pod, (void)ret_err;
        return 0;
}

static int fake_sync_terminated_pod(void *userdata, struct kc_cancel *ctx, struct kc_api_pod *pod,
                                    struct kc_pod_status *status, char **ret_err)
{
        (void)userdata, (void)ctx, (void)pod, (void)status, (void)ret_err;
        return 0;
}

static const struct kc_pod_syncer_ops fake_syncer = {
        .sync_pod = fake_sync_pod,
        .sync_terminating_pod = fake_sync_terminating_pod,
        .sync_terminating_runtime_pod = fake_sync_terminating_runtime_pod,
        .sync_terminated_pod = fake_sync_terminated_pod,
};

/* The kubelet work queue: resyncs (60 s jittered) are dropped, so the only
 * syncs are the ones the benchmark sends. */
static void noop_enqueue(void *userdata, const char *uid, int64_t delay_ns)
{
        (void)userdata, (void)uid, (void)delay_ns;
}

static void world_done(struct world *w)
{
        size_t i;

        if (w->teardown)
                kc_cancel_trigger_mp(w->teardown);
        kc_pod_workers_free(w->pw);
        kc_pod_cache_free(w->cache);
        kc_cancel_free(w->teardown);
        if (w->pods)
                for (i = 0; i < w->n; i++)
                        kc_api_pod_unref(w->pods[i]);
        free(w->pods);
        free(w->stuck);
        free(w->live);
        free(w->stamps);
        free(w->samples);
        *w = (struct world){ 0 };
}

/* Pods and the (empty) pod workers; no thread runs yet. */
static int world_init(struct world *w, size_t n)
{
        struct kc_pod_workers_config cfg;
        char uid[32], name[32];
        size_t i;
        int r;

        *w = (struct world){ .n = n };
        w->pods = calloc(n, sizeof(*w->pods));
        w->stuck = calloc(n, sizeof(*w->stuck));
        w->live = calloc(n, sizeof(*w->live));
        w->stamps = calloc(n, sizeof(*w->stamps));
        if (!w->pods || !w->stuck || !w->live || !w->stamps)
                return -ENOMEM;
        for (i = 0; i < n; i++) {
                struct kc_api_pod tmpl = {
                        .uid = uid,
                        .name = name,
                        .namespace = "default",
                        .source = "api",
                        .creation_ts = INT64_C(1700000000) * KC_NSEC_PER_SEC,
                        .deletion_grace_s = -1,
                        .termination_grace_s = 30,
                        .phase = KC_POD_PHASE_RUNNING,
                };

                snprintf(uid, sizeof(uid), UID_PREFIX "%08zu", i);
                snprintf(name, sizeof(name), "bench-%zu", i);
                if ((r = kc_api_pod_new(&tmpl, &w->pods[i])) < 0)
                        return r;
                atomic_init(&w->stamps[i], 0);
        }
        if ((r = kc_cancel_new(&w->teardown)) < 0 || (r = kc_pod_cache_new(&w->cache)) < 0)
                return r;
        /* Every GetNewerThan(uid, lastSyncTime) is satisfied at once. */
        kc_pod_cache_update_time(w->cache, kc_clock_now(kc_clock_real()) + 3600 * KC_NSEC_PER_SEC);
        cfg = (struct kc_pod_workers_config){
                .clock = kc_clock_real(),
                .cache = w->cache,
                .syncer = &fake_syncer,
                .syncer_userdata = w,
                .enqueue = noop_enqueue,
        };
        return kc_pod_workers_new(&cfg, &w->pw);
}

static int update(struct world *w, size_t i, enum kc_sync_pod_type type)
{
        struct kc_pod_update_options o = { .update_type = type, .pod = w->pods[i] };

        return kc_pod_workers_update_pod(w->pw, &o);
}

/* Creates every pod (a burst, as at kubelet start) and waits until each synced once. */
static int world_create_all(struct world *w)
{
        size_t i;
        int r;

        for (i = 0; i < w->n; i++)
                if ((r = update(w, i, KC_SYNC_POD_CREATE)) < 0)
                        return r;
        return kc__pod_workers_drain(w->pw, 60000);
}

/* Kills every 100th pod (1 %, at least one) and waits until each is in
 * sync_terminating_pod. */
static int world_stick(struct world *w, size_t *ret_stuck)
{
        size_t i, n_stuck = 0;
        int64_t deadline;
        int r;

        for (i = 0; i < w->n; i++) {
                if (i % 100 == 50 % (w->n < 100 ? w->n : 100)) {
                        w->stuck[i] = true;
                        n_stuck++;
                        if ((r = update(w, i, KC_SYNC_POD_KILL)) < 0)
                                return r;
                } else {
                        w->live[w->n_live++] = i;
                }
        }
        deadline = mono_ns() + 10 * KC_NSEC_PER_SEC;
        while (atomic_load(&w->term_entered) < n_stuck) {
                if (mono_ns() > deadline)
                        return -ETIMEDOUT;
                sleep_ms(1);
        }
        *ret_stuck = n_stuck;
        return 0;
}

/* ------------------------------------------------------------------------ */
/* 1. Dispatch latency                                                        */

struct producer {
        struct world *w;
        double rate; /* updates/s; 0: as fast as possible */
        int64_t start, end;
        uint64_t seed;
        atomic_bool *stop;
        /* results */
        size_t sent, stamped_in_window, coalesced, sent_in_window;
        int err;
};

static void *producer_main(void *arg)
{
        struct producer *p = arg;
        struct world *w = p->w;
        uint64_t rng = p->seed;
        int64_t now;
        int r;

        for (;;) {
                size_t due;

                now = mono_ns();
                if (now >= p->end || (p->stop && atomic_load(p->stop)))
                        break;
                due = p->rate > 0 ? (size_t)((double)(now - p->start) * p->rate / 1e9) + 1
                                  : p->sent + 64;
                while (p->sent < due) {
                        size_t i = w->live[xorshift(&rng) % w->n_live];
                        int64_t stamp = mono_ns(), zero = 0;
                        bool in_window = stamp >= w->win_start && stamp < w->win_end;

                        /* The oldest unserviced update of a pod keeps its stamp (as
                         * UpdatePod keeps the oldest StartTime). */
                        if (atomic_compare_exchange_strong(&w->stamps[i], &zero, stamp)) {
                                if (in_window)
                                        p->stamped_in_window++;
                        } else {
                                p->coalesced++;
                        }
                        if ((r = update(w, i, KC_SYNC_POD_SYNC)) < 0) {
                                p->err = r;
                                return NULL;
                        }
                        p->sent++;
                        if (in_window)
                                p->sent_in_window++;
                }
                if (p->rate > 0)
                        sleep_until(p->start + (int64_t)((double)p->sent * 1e9 / p->rate));
        }
        return NULL;
}

struct latency_result {
        size_t pods, stuck, samples, lost;
        double rate;
        int64_t p50, p99, max;
        unsigned threads_before, threads_after;
};

static int run_latency(size_t n_pods, double rate, int64_t warmup_ns, int64_t window_ns,
                       struct latency_result *res)
{
        struct world w;
        struct producer p;
        pthread_t tid;
        int64_t deadline;
        size_t n;
        int r;

        if ((r = world_init(&w, n_pods)) < 0)
                goto out;
        if ((r = world_create_all(&w)) < 0 || (r = world_stick(&w, &res->stuck)) < 0)
                goto out;
        res->pods = n_pods;
        w.cap_samples = (size_t)(rate * (double)window_ns / 1e9 * 1.5) + 1024;
        w.samples = malloc(w.cap_samples * sizeof(*w.samples));
        if (!w.samples) {
                r = -ENOMEM;
                goto out;
        }
        res->threads_before = kc__pod_workers_thread_count(w.pw);

        p = (struct producer){ .w = &w, .rate = rate, .seed = 0x9e3779b97f4a7c15ull };
        p.start = mono_ns();
        w.win_start = p.start + warmup_ns;
        w.win_end = w.win_start + window_ns;
        p.end = w.win_end;
        if ((r = -pthread_create(&tid, NULL, producer_main, &p)) < 0)
                goto out;
        pthread_join(tid, NULL);
        if ((r = p.err) < 0)
                goto out;
        /* Let the last stamped updates reach their sync. */
        deadline = mono_ns() + 5 * KC_NSEC_PER_SEC;
        while (atomic_load(&w.n_samples) < p.stamped_in_window && mono_ns() < deadline)
                sleep_ms(1);
        res->threads_after = kc__pod_workers_thread_count(w.pw);

        n = atomic_load(&w.n_samples);
        res->lost = p.stamped_in_window - (n < p.stamped_in_window ? n : p.stamped_in_window);
        if (n > w.cap_samples)
                n = w.cap_samples;
        qsort(w.samples, n, sizeof(*w.samples), cmp_i64);
        res->samples = n;
        res->rate = (double)p.sent_in_window * 1e9 / (double)window_ns;
        res->p50 = percentile(w.samples, n, 0.50);
        res->p99 = percentile(w.samples, n, 0.99);
        res->max = n ? w.samples[n - 1] : 0;
        r = 0;
out:
        world_done(&w);
        return r;
}

/* ------------------------------------------------------------------------ */
/* 2. UpdatePod throughput                                                    */

struct throughput_result {
        double calls_per_s, syncs_per_s;
        unsigned threads;
};

static int run_throughput(size_t n_pods, unsigned n_producers, int64_t window_ns,
                          struct throughput_result *res)
{
        struct world w;
        struct producer p[2];
        pthread_t tid[2];
        unsigned i, started = 0;
        unsigned long syncs0, syncs1;
        size_t calls = 0;
        int64_t t0, t1;
        int r;

        if ((r = world_init(&w, n_pods)) < 0 || (r = world_create_all(&w)) < 0)
                goto out;
        for (i = 0; i < n_pods; i++)
                w.live[w.n_live++] = i;
        w.win_start = w.win_end = 0; /* no latency samples */
        t0 = mono_ns();
        syncs0 = atomic_load(&w.syncs);
        for (i = 0; i < n_producers; i++) {
                p[i] = (struct producer){ .w = &w,
                                          .start = t0,
                                          .end = t0 + window_ns,
                                          .seed = 0x9e3779b97f4a7c15ull * (i + 1) };
                if ((r = -pthread_create(&tid[i], NULL, producer_main, &p[i])) < 0)
                        break;
                started++;
        }
        for (i = 0; i < started; i++) {
                pthread_join(tid[i], NULL);
                calls += p[i].sent;
                if (p[i].err < 0)
                        r = p[i].err;
        }
        t1 = mono_ns();
        syncs1 = atomic_load(&w.syncs);
        if (r < 0)
                goto out;
        res->calls_per_s = (double)calls * 1e9 / (double)(t1 - t0);
        res->syncs_per_s = (double)(syncs1 - syncs0) * 1e9 / (double)(t1 - t0);
        res->threads = kc__pod_workers_thread_count(w.pw);
out:
        world_done(&w);
        return r;
}

/* ------------------------------------------------------------------------ */
/* 3. RSS per idle pod worker                                                 */

struct rss_result {
        long rss_before, rss_after; /* KiB */
        size_t heap_before, heap_after;
        unsigned threads, tasks;
};

static int run_rss(size_t n_pods, struct rss_result *res)
{
        struct world w;
        int r;

        /* The pods (the pod manager's objects) exist before "before". */
        if ((r = world_init(&w, n_pods)) < 0)
                goto out;
        res->rss_before = rss_kib();
        res->heap_before = heap_bytes();
        if ((r = world_create_all(&w)) < 0)
                goto out;
        res->rss_after = rss_kib();
        res->heap_after = heap_bytes();
        res->threads = kc__pod_workers_thread_count(w.pw);
        res->tasks = task_count();
out:
        world_done(&w);
        return r;
}

/* ------------------------------------------------------------------------ */

static void usage(void)
{
        fprintf(stderr, "usage: bench_podworkers [--quick] [--pods N ...] [--rate R] "
                        "[--window SECONDS]\n");
}

int main(int argc, char **argv)
{
        size_t sizes[8] = { 100, 1000, 10000 }, n_sizes = 3, i, big;
        double rate = 2000, window_s = 3, warmup_s = 1;
        bool custom = false, quick = false;
        struct rss_result rr = { 0 };
        int a, r;

        for (a = 1; a < argc; a++) {
                if (strcmp(argv[a], "--quick") == 0) {
                        quick = true;
                } else if (strcmp(argv[a], "--pods") == 0 && a + 1 < argc) {
                        if (!custom)
                                n_sizes = 0;
                        custom = true;
                        if (n_sizes < KC_ELEMENTSOF(sizes))
                                sizes[n_sizes++] = strtoul(argv[++a], NULL, 10);
                } else if (strcmp(argv[a], "--rate") == 0 && a + 1 < argc) {
                        rate = strtod(argv[++a], NULL);
                } else if (strcmp(argv[a], "--window") == 0 && a + 1 < argc) {
                        window_s = strtod(argv[++a], NULL);
                } else {
                        usage();
                        return 2;
                }
        }
        if (quick) {
                if (!custom) {
                        n_sizes = 2;
                        sizes[0] = 100;
                        sizes[1] = 1000;
                }
                window_s = 1;
                warmup_s = 0.25;
        }
        if (rate <= 0 || window_s <= 0) {
                usage();
                return 2;
        }
        for (i = 0; i < n_sizes; i++)
                if (sizes[i] == 0) {
                        usage();
                        return 2;
                }
        big = sizes[0];
        for (i = 1; i < n_sizes; i++)
                if (sizes[i] > big)
                        big = sizes[i];

        /* RSS first, while the process is fresh (glibc keeps freed memory). */
        if ((r = run_rss(big, &rr)) < 0) {
                fprintf(stderr, "bench: rss, %zu pods: %s\n", big, strerror(-r));
                return 1;
        }
        printf("# RSS per idle pod worker: %zu pods created in one burst, each synced once, "
               "now idle\n",
               big);
        printf("%-8s %12s %12s %14s %16s %8s %8s\n", "pods", "RSS before", "RSS after", "RSS B/pod",
               "heap B/pod", "threads", "tasks");
        printf("%-8zu %9ld KiB %9ld KiB %14.0f %16.0f %8u %8u\n\n", big, rr.rss_before,
               rr.rss_after, (double)(rr.rss_after - rr.rss_before) * 1024.0 / (double)big,
               ((double)rr.heap_after - (double)rr.heap_before) / (double)big, rr.threads,
               rr.tasks);
        fflush(stdout);

        printf("# Dispatch latency, UpdatePod(Sync) -> sync_pod entered, 1 %% of pods stuck in "
               "sync_terminating_pod; warm-up %.2f s, window %.2f s\n",
               warmup_s, window_s);
        printf("%-8s %6s %10s %9s %10s %10s %10s %6s %8s\n", "pods", "stuck", "updates/s",
               "samples", "p50 us", "p99 us", "max us", "lost", "threads");
        for (i = 0; i < n_sizes; i++) {
                struct latency_result lr = { 0 };

                r = run_latency(sizes[i], rate, (int64_t)(warmup_s * 1e9),
                                (int64_t)(window_s * 1e9), &lr);
                if (r < 0) {
                        fprintf(stderr, "bench: latency, %zu pods: %s\n", sizes[i], strerror(-r));
                        return 1;
                }
                printf("%-8zu %6zu %10.0f %9zu %10.1f %10.1f %10.1f %6zu %4u->%-3u\n", lr.pods,
                       lr.stuck, lr.rate, lr.samples, (double)lr.p50 / 1e3, (double)lr.p99 / 1e3,
                       (double)lr.max / 1e3, lr.lost, lr.threads_before, lr.threads_after);
                fflush(stdout);
        }

        printf("\n# UpdatePod throughput, %zu pods, random pods, syncer returns at once, "
               "window %.2f s\n",
               big, window_s);
        printf("%-10s %14s %14s %8s\n", "producers", "calls/s", "syncs/s", "threads");
        for (unsigned np = 1; np <= 2; np++) {
                struct throughput_result tr = { 0 };

                r = run_throughput(big, np, (int64_t)(window_s * 1e9), &tr);
                if (r < 0) {
                        fprintf(stderr, "bench: throughput, %u producers: %s\n", np, strerror(-r));
                        return 1;
                }
                printf("%-10u %14.0f %14.0f %8u\n", np, tr.calls_per_s, tr.syncs_per_s, tr.threads);
                fflush(stdout);
        }
        return 0;
}
