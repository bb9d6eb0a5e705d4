/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Chaos on the simulated runtime (issue 7, deliverable 3).
 *
 * The kubelet as the daemon assembles it (kc_kubelet_parts_build: the real
 * pod syncer, GenericPLEG, syncLoop, pod workers, work queue, deletor,
 * status manager, runtimeState) plus the runtime-up poller, over the
 * simulated runtime, everything on one fake clock. Pods arrive the way the
 * file source sends them: kc_pod_update ADD / UPDATE / REMOVE items (source
 * "file") on syncLoop's config channel.
 *
 * A seeded schedule (KC_CHAOS_SEED, else the time; printed as
 * "chaos: seed=<n>") drives 13:20 simulated minutes in 1 s steps:
 *  - 0 .. 8 min: call failures (kc_sim_inject_fault on the CRI calls the
 *    kubelet makes), latency spikes (kc_sim_inject_latency: a call sleeps
 *    1-20 s of the fake clock), container crashes (kc_sim_crash_container
 *    with a non-zero exit code), short network-not-ready windows, and pod
 *    churn (pods added, removed, and updated with a new container command
 *    or only new labels);
 *  - 8:00 .. 13:20: quiet, long enough for the longest wait a fault can
 *    leave behind: the image pull back-off, which consecutive failed pulls
 *    of one pod's image double up to upstream's 300 s cap (MaxImageBackOff;
 *    pulls are rare, so one pod may take every PullImage fault of several
 *    minutes), then 20 s for the sync, the pull and the relist after it. The
 *    10 s / 40 s crash-loop back-off (the daemon's --crash-loop-back-off-*
 *    settings) and the pod workers' 10 s error back-off are shorter.
 * The schedule is a pure function of the seed; thread timing decides only
 * which calls a fault hits and whether a crash finds a running container,
 * and the final checks hold whatever that was.
 *
 * The clock moves in quarter seconds (step()). After each quarter the
 * driver waits for the system to settle: the PLEG's relist when it is due,
 * then a progress fingerprint (runtime calls, pod syncs, relists, channel
 * lengths, clock sleepers, calls asleep in a latency spike) unchanged over a
 * few polls and every other thread asleep (/proc/self/task); a bounded
 * wall-clock wait is only a safety net (counted and reported).
 *
 * Then, at the first step after 13:20 that changed nothing in the runtime
 * and left the pod workers idle (at most 11 s later), every desired pod must
 * match its desired state exactly:
 *  - restartPolicy Always ("svc" pods): exactly one ready sandbox; for each
 *    spec container exactly one running instance, with the hash of the
 *    current spec (an update's new command); no other running container;
 *    status phase Running with every container running and ready;
 *  - OnFailure and Never jobs (`sleep N`, exit 0): nothing running, no
 *    ready sandbox, the newest instance of each container exited 0; status
 *    phase Succeeded;
 *  - removed pods: nothing left in the runtime (housekeeping's container
 *    GC removed their sandboxes, which takes their containers), no status,
 *    no container reason (D18), no pod worker;
 *  - no runtime pod the test never asked for; the pod manager holds exactly
 *    the desired pods; the pod workers track exactly them and are idle; no
 *    call is asleep.
 * A failure prints the seed and the first mismatches.
 *
 * KC_CHAOS_SEED sets the seed; KC_CHAOS_PODS the pod count (default 2000);
 * KC_CHAOS_LOG a file for the kubelet's log (else discarded) and
 * KC_CHAOS_V its verbosity; KC_CHAOS_VERBOSE prints progress every minute.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <stdlib.h>
#include <stdbool.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../podworkers/internal.h"
#include "core/chan.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/log.h"
#include "kc_test.h"
#include "kubelet/config/manifest.h"
#include "kubelet/config/pod_update.h"
#include "kubelet/kubelet_parts.h"
#include "kubelet/pod_manager.h"
#include "kubelet/runtime_up.h"
#include "kubelet/status/reason_cache.h"
#include "kubelet/status/status_manager.h"
#include "kubelet/sync_loop.h"
#include "metrics/kubelet_metrics.h"
#include "metrics/registry.h"
#include "pleg/generic.h"
#include "podworkers/pod_workers.h"
#include "runtime/api_pod.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/images.h"
#include "runtime/manager.h"
#include "runtime/pod_actions.h"
#include "runtime/runtime_service.h"
#include "runtime/sim.h"
#include "runtime/sync_pod.h"

#define T0 (INT64_C(1700000000) * KC_NSEC_PER_SEC)
#define SEC KC_NSEC_PER_SEC
#define NODE "chaos-node"

#define DEFAULT_PODS 2000
#define MAX_EXTRA_PODS 600 /* pods churn may add */
#define CHAOS_SECONDS 480  /* faults run for 8 min */
/* Then quiet until the longest image pull back-off has ended (see the top). */
#define QUIET_SECONDS ((int)(KC_IMAGE_BACKOFF_MAX_NS / SEC) + 20)
#define TOTAL_SECONDS (CHAOS_SECONDS + QUIET_SECONDS)
#define FINAL_EXTRA_STEPS 10 /* at most 11 steps after the quiet to see a still, idle state */
#define MAX_REPORTED 20

/* ------------------------------------------------------------------------ */
/* The seeded random source (splitmix64): the schedule is a function of it. */

static uint64_t rng_state;

static uint64_t rng_next(void)
{
        uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));

        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

/* Uniform in [0, n). */
static unsigned rng_below(unsigned n)
{
        return n ? (unsigned)(rng_next() % n) : 0;
}

static bool rng_chance(unsigned percent)
{
        return rng_below(100) < percent;
}

/* ------------------------------------------------------------------------ */
/* Desired pods                                                               */

enum kind { KIND_SVC, KIND_ONFAILURE, KIND_NEVER };

struct dpod {
        char uid[40];
        char name[32];
        enum kind kind;
        unsigned n_containers;
        unsigned gen;       /* the svc "app" container's --gen: bumped by spec updates */
        unsigned label_gen; /* metadata-only updates */
        unsigned sleep_s;   /* jobs: sleep N then exit 0 */
        unsigned image;     /* image index */
        bool desired;       /* false once removed */
        bool ever_added;
        struct kc_api_pod *pod; /* what the config channel was last told */
};

struct chaos {
        uint64_t seed;
        struct kc_clock *clock;
        struct kc_sim *sim;
        struct kc_runtime_service svc;
        struct kc_runtime_manager *manager;
        struct kc_metrics_registry *registry;
        struct kc_kubelet_metrics metrics;
        struct kc_kubelet_parts k;
        struct kc_runtime_up_poller *poller;
        pthread_t loop_thread;
        bool loop_running;

        struct dpod *pods;
        size_t n_pods, cap_pods;
        struct kc_pod_update **pending; /* not yet accepted by the config channel */
        size_t n_pending;

        /* What happened, for the report. */
        unsigned settle_timeouts;
        int pleg_quarter;              /* the quarter of a second the PLEG relists in (1: x.5 s) */
        unsigned pleg_unhealthy_steps; /* steps that ended with the PLEG unhealthy */
        uint64_t faults_scheduled, delays_scheduled, crash_attempts, adds, removes, updates;
        unsigned net_outages;

        /* First mismatches. */
        char report[8192];
        size_t report_len;
        unsigned mismatches;
};

static void mismatch(struct chaos *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mismatch(struct chaos *c, const char *fmt, ...)
{
        va_list ap;
        int n;

        c->mismatches++;
        if (c->mismatches > MAX_REPORTED || c->report_len >= sizeof(c->report) - 2)
                return;
        c->report[c->report_len++] = '\n';
        c->report[c->report_len++] = ' ';
        va_start(ap, fmt);
        n = vsnprintf(c->report + c->report_len, sizeof(c->report) - c->report_len, fmt, ap);
        va_end(ap);
        if (n > 0)
                c->report_len += (size_t)n < sizeof(c->report) - c->report_len
                                         ? (size_t)n
                                         : sizeof(c->report) - c->report_len - 1;
}

#define CHAOS_FAIL(c, ...) fail_msg("chaos: seed=%" PRIu64 ": " __VA_ARGS__)

/* Builds the pod's manifest and parses it as the file source would. */
static struct kc_api_pod *make_api_pod(struct chaos *c, const struct dpod *d)
{
        static const char *const policy[] = { "Always", "OnFailure", "Never" };
        char json[1024], file[96], cmd[64];
        struct kc_api_pod *pod = NULL;
        char *err = NULL;
        int r;

        if (d->kind == KIND_SVC)
                snprintf(cmd, sizeof(cmd), "[\"app\", \"--gen=%u\"]", d->gen);
        else
                snprintf(cmd, sizeof(cmd), "[\"sh\", \"-c\", \"sleep %u\"]", d->sleep_s);
        snprintf(json, sizeof(json),
                 "{\"apiVersion\": \"v1\", \"kind\": \"Pod\","
                 " \"metadata\": {\"name\": \"%s\", \"uid\": \"%s\","
                 " \"labels\": {\"chaos/label-gen\": \"%u\"}},"
                 " \"spec\": {\"restartPolicy\": \"%s\", \"containers\": ["
                 "{\"name\": \"app\", \"image\": \"registry.local/img-%u:v1\", \"command\": %s}"
                 "%s]}}",
                 d->name, d->uid, d->label_gen, policy[d->kind], d->image, cmd,
                 d->n_containers > 1 ? ", {\"name\": \"side\", \"image\": "
                                       "\"registry.local/side:v1\", \"command\": [\"side\"]}"
                                     : "");
        snprintf(file, sizeof(file), "/etc/kubernetes/manifests/%s.json", d->name);
        r = kc_manifest_parse(json, strlen(json), file, NODE, kc_clock_now(c->clock), &pod, &err);
        if (r < 0)
                CHAOS_FAIL(c, "manifest of %s: %s (%d)", c->seed, d->name, err ? err : "?", r);
        return pod;
}

static struct dpod *new_dpod(struct chaos *c)
{
        struct dpod *d;
        unsigned k;

        assert_true(c->n_pods < c->cap_pods);
        d = &c->pods[c->n_pods];
        *d = (struct dpod){ 0 };
        snprintf(d->uid, sizeof(d->uid), "c4a05000-0000-4000-8000-%012zx", c->n_pods);
        snprintf(d->name, sizeof(d->name), "pod-%zu", c->n_pods);
        c->n_pods++;
        k = rng_below(100);
        d->kind = k < 70 ? KIND_SVC : k < 85 ? KIND_ONFAILURE : KIND_NEVER;
        d->n_containers = d->kind == KIND_SVC ? 1 + rng_below(2) : 1;
        d->gen = 1;
        d->sleep_s = 1 + rng_below(30);
        d->image = rng_below(64);
        return d;
}

/*
 * Sends what is pending, in order, as the file source does: a full channel
 * (capacity 50; syncLoop reads nothing while the runtime or the PLEG is
 * unhealthy) keeps the rest for the next step.
 */
static void flush_updates(struct chaos *c)
{
        size_t i;

        for (i = 0; i < c->n_pending; i++)
                if (kc_chan_push_mp(c->k.config, c->pending[i]) < 0)
                        break;
        if (i == 0)
                return;
        memmove(c->pending, c->pending + i, (c->n_pending - i) * sizeof(*c->pending));
        c->n_pending -= i;
}

static void push_update(struct chaos *c, enum kc_pod_op op, struct kc_api_pod **pods, size_t n)
{
        struct kc_pod_update *u = kc_pod_update_new(op, KC_MANIFEST_SOURCE, pods, n);
        struct kc_pod_update **v;

        assert_non_null(u);
        v = realloc(c->pending, (c->n_pending + 1) * sizeof(*v));
        assert_non_null(v);
        c->pending = v;
        c->pending[c->n_pending++] = u;
        flush_updates(c);
}

static void add_pods(struct chaos *c, struct dpod **ds, size_t n)
{
        struct kc_api_pod **pods = calloc(n, sizeof(*pods));
        size_t i;

        assert_non_null(pods);
        for (i = 0; i < n; i++) {
                ds[i]->pod = make_api_pod(c, ds[i]);
                ds[i]->desired = ds[i]->ever_added = true;
                pods[i] = ds[i]->pod;
        }
        push_update(c, KC_POD_OP_ADD, pods, n);
        c->adds += n;
        free(pods);
}

/* ------------------------------------------------------------------------ */
/* Settling after a step                                                      */

struct fingerprint {
        uint64_t calls, delays_taken, syncs, relists;
        size_t sleepers;
        unsigned delayed_now, config_len, events_len;
};

static uint64_t pod_syncs(struct chaos *c)
{
        static const char *const types[] = { "create", "update", "sync", "kill" };
        uint64_t total = 0, n;
        size_t i;

        for (i = 0; i < KC_ELEMENTSOF(types); i++)
                if (kc_histogram_vec_count(c->metrics.pod_worker_duration, types[i], &n) == 0)
                        total += n;
        return total;
}

static void take_fingerprint(struct chaos *c, struct fingerprint *f)
{
        struct kc_sim_stats st;

        assert_int_equal(kc_sim_get_stats(c->sim, &st), 0);
        *f = (struct fingerprint){
                .calls = st.calls,
                .delays_taken = st.delays_taken,
                .delayed_now = st.delayed_now,
                .syncs = pod_syncs(c),
                .relists = kc_histogram_count(c->metrics.pleg_relist_duration),
                .sleepers = kc_fake_clock_sleepers(c->clock),
                .config_len = kc_chan_len(c->k.config),
                .events_len = kc_chan_len(c->k.events),
        };
}

/*
 * True when every other thread of the process is asleep (state S in
 * /proc/self/task/<tid>/stat): none is running or runnable. A thread busy
 * with CPU work that makes no call the fingerprint sees (a housekeeping
 * pass over 2,000 pods under ASan) keeps the step from being declared
 * settled.
 */
KC_DEFINE_CLEANUP_FUNC(DIR, closedir)

static bool others_asleep(void)
{
        pid_t self = (pid_t)syscall(SYS_gettid);
        _cleanup_(closedirp) DIR *d = opendir("/proc/self/task");
        struct dirent *de;
        bool asleep = true;

        if (!d)
                return true; /* no /proc: the fingerprint alone decides */
        while (asleep && (de = readdir(d))) {
                char path[300], buf[512], *rp;
                ssize_t n;
                int fd;

                if (de->d_name[0] == '.' || atoi(de->d_name) == self)
                        continue;
                snprintf(path, sizeof(path), "/proc/self/task/%s/stat", de->d_name);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue; /* the thread just exited */
                n = read(fd, buf, sizeof(buf) - 1);
                close(fd);
                if (n <= 0)
                        continue;
                buf[n] = '\0';
                rp = strrchr(buf, ')'); /* "tid (comm) S ...": comm may hold anything */
                if (rp && rp[1] == ' ' && rp[2] != 'S')
                        asleep = false;
        }
        return asleep;
}

/*
 * With @p want_relist (the PLEG is due), waits until it relisted (relist
 * count above @p relists_before; not while a call sleeps in a latency
 * spike: it may be the PLEG's; at most 200 ms), then until nothing moves: at least two clock sleepers (the PLEG and the
 * poller asleep, in their period or in a latency spike) and the fingerprint,
 * channel lengths included, unchanged over @p stable_polls polls 1 ms
 * apart. (The channels need not be empty: syncLoop itself may be asleep in
 * a latency spike of a housekeeping call until the clock moves on.) The
 * wall-clock bound is a safety net: a timeout only counts (a lost pod or a
 * deadlock shows in the final checks). A call the sim already counts in
 * delayed_now but not yet asleep on the clock is running or runnable, so
 * others_asleep() keeps the step unsettled until its sleep is registered.
 * (The updates and crashes a second starts with meet its first advance
 * unsettled: a call they set off may see that advance anywhere, before its
 * sleep included, and its spike then ends a quarter later, at x.0.)
 */
static void settle(struct chaos *c, int stable_polls, bool want_relist, uint64_t relists_before)
{
        int64_t deadline = kc_test_mono_ms() + (int64_t)(10000 * kc_test_timeout_multiplier());
        struct fingerprint prev, cur;
        int64_t relist_deadline;
        int stable = 0;

        take_fingerprint(c, &prev);
        /* The step's relist comes first, unless a latency spike holds a call (maybe the PLEG's). */
        relist_deadline = kc_test_mono_ms() + (int64_t)(200 * kc_test_timeout_multiplier());
        while (want_relist && prev.relists <= relists_before && prev.delayed_now == 0 &&
               kc_test_mono_ms() < relist_deadline) {
                kc_test_sleep_ms(1);
                take_fingerprint(c, &prev);
        }
        while (stable < stable_polls) {
                if (kc_test_mono_ms() > deadline) {
                        c->settle_timeouts++;
                        return;
                }
                kc_test_sleep_ms(1);
                take_fingerprint(c, &cur);
                if (cur.sleepers >= 2 && memcmp(&cur, &prev, sizeof(cur)) == 0)
                        stable++;
                else
                        stable = 0;
                /* The costlier look at the threads, once the cheap signals agree. */
                if (stable == stable_polls && !others_asleep())
                        stable = 0;
                prev = cur;
        }
}

static uint64_t relists(struct chaos *c)
{
        return kc_histogram_count(c->metrics.pleg_relist_duration);
}

/*
 * One second of the fake clock, in four quarters with a settle after each.
 * The PLEG relists at x.5 s (it was started half a second in), syncLoop's
 * ticks come at x.0 s, and the latency spikes of the pod workers' calls end
 * at x.25 or x.75 s, so no sync ends at the instant a relist starts. (On a
 * fake clock equal timestamps are the rule: a pod worker whose sync ended
 * at the relist's own instant would accept that relist's status, read
 * before the sync changed the runtime, as newer than its sync. A real
 * clock's nanoseconds make that tie practically impossible.)
 */
static void step(struct chaos *c, int stable_polls)
{
        int q;

        for (q = 0; q < 4; q++) {
                uint64_t before = relists(c);

                kc_fake_clock_advance(c->clock, SEC / 4);
                /* The PLEG is due in the quarter it last relisted in, a second later. */
                settle(c, stable_polls, q == c->pleg_quarter, before);
                if (relists(c) > before)
                        c->pleg_quarter = q;
        }
}

/* The calls that change the runtime, so far. */
static uint64_t mutating_calls(struct chaos *c)
{
        static const char *const ops[] = { "RunPodSandbox",   "StopPodSandbox", "RemovePodSandbox",
                                           "CreateContainer", "StartContainer", "StopContainer",
                                           "RemoveContainer", "PullImage" };
        struct kc_sim_call_count *v = NULL;
        struct kc_sim_stats st;
        uint64_t total = 0;
        size_t n = 0, i, j;

        assert_int_equal(kc_sim_call_counts(c->sim, &v, &n), 0);
        for (i = 0; i < n; i++)
                for (j = 0; j < KC_ELEMENTSOF(ops); j++)
                        if (strcmp(v[i].op, ops[j]) == 0)
                                total += v[i].count;
        free(v);
        assert_int_equal(kc_sim_get_stats(c->sim, &st), 0);
        return total + st.crashes;
}

/* ------------------------------------------------------------------------ */
/* The fault schedule                                                         */

/*
 * The CRI calls the kubelet makes, weighted: the two listings every relist
 * makes appear once each, or the PLEG would fail nearly every relist.
 */
static const char *const fault_ops[] = {
        "ListPodSandbox",  "ListContainers",   "ContainerStatus", "PodSandboxStatus",
        "CreateContainer", "StartContainer",   "StopContainer",   "RemoveContainer",
        "RunPodSandbox",   "StopPodSandbox",   "PullImage",       "ImageStatus",
        "CreateContainer", "StartContainer",   "RunPodSandbox",   "StopPodSandbox",
        "ContainerStatus", "PodSandboxStatus", "StopContainer",   "RemoveContainer",
};

/*
 * 1-10 s. The calls a relist makes sleep whole seconds, so the PLEG stays
 * on its x.5 s phase; the pod workers' calls a quarter more (see step()).
 */
static int64_t spike_ns(const char *op)
{
        static const char *const relist_ops[] = { "ListPodSandbox", "ListContainers",
                                                  "PodSandboxStatus", "ContainerStatus" };
        int64_t ns = (int64_t)(1 + rng_below(10)) * SEC;
        size_t i;

        for (i = 0; i < KC_ELEMENTSOF(relist_ops); i++)
                if (strcmp(op, relist_ops[i]) == 0)
                        return ns;
        return ns + SEC / 4;
}

static void schedule_faults(struct chaos *c)
{
        unsigned n = rng_below(5), i;

        for (i = 0; i < n; i++) {
                const char *op = fault_ops[rng_below(KC_ELEMENTSOF(fault_ops))];

                assert_int_equal(
                        kc_sim_inject_fault(c->sim, op, NULL, "chaos: injected", 1 + rng_below(3)),
                        0);
                c->faults_scheduled++;
        }
        /* Spikes of 1-10 s: whoever calls next waits (a relist that absorbs
         * several in a row holds the PLEG up, as a slow runtime does). */
        if (rng_chance(6)) {
                const char *op = fault_ops[rng_below(KC_ELEMENTSOF(fault_ops))];

                assert_int_equal(
                        kc_sim_inject_latency(c->sim, op, NULL, spike_ns(op), 1 + rng_below(2)), 0);
                c->delays_scheduled++;
        }
}

/* Crashes: containers of svc and OnFailure pods die with a non-zero code. */
static void schedule_crashes(struct chaos *c)
{
        static const int32_t codes[] = { 1, 2, 137, 139, 143, 255 };
        unsigned n = rng_below(6), i, tries;

        for (i = 0; i < n; i++) {
                for (tries = 0; tries < 8; tries++) {
                        struct dpod *d = &c->pods[rng_below((unsigned)c->n_pods)];

                        if (!d->desired || d->kind == KIND_NEVER)
                                continue;
                        (void)kc_sim_crash_container(c->sim, d->uid,
                                                     d->n_containers > 1 && rng_chance(50) ? "side"
                                                                                           : "app",
                                                     codes[rng_below(KC_ELEMENTSOF(codes))]);
                        c->crash_attempts++;
                        break;
                }
        }
}

/* Churn: remove, add, update (spec or labels only) a few pods. */
static void schedule_churn(struct chaos *c)
{
        struct kc_api_pod *pods[8];
        struct dpod *added[8];
        unsigned n, i;

        n = rng_below(4);
        for (i = 0; i < n; i++) {
                struct dpod *d = &c->pods[rng_below((unsigned)c->n_pods)];

                if (!d->desired)
                        continue;
                d->desired = false;
                pods[0] = d->pod;
                push_update(c, KC_POD_OP_REMOVE, pods, 1);
                c->removes++;
        }
        n = rng_below(4);
        for (i = 0; i < n && c->n_pods < c->cap_pods; i++)
                added[i] = new_dpod(c);
        if (i > 0)
                add_pods(c, added, i);
        n = rng_below(4);
        for (i = 0; i < n; i++) {
                struct dpod *d = &c->pods[rng_below((unsigned)c->n_pods)];
                struct kc_api_pod *old;

                if (!d->desired)
                        continue;
                if (d->kind == KIND_SVC && rng_chance(60))
                        d->gen++; /* a new command: the container is replaced */
                else
                        d->label_gen++;
                old = d->pod;
                d->pod = make_api_pod(c, d);
                kc_api_pod_unref(old);
                pods[0] = d->pod;
                push_update(c, KC_POD_OP_UPDATE, pods, 1);
                c->updates++;
        }
}

/* ------------------------------------------------------------------------ */
/* Assembly                                                                   */

static void *loop_main(void *arg)
{
        struct chaos *c = arg;

        kc_sync_loop_run(c->k.loop);
        return NULL;
}

static void chaos_start(struct chaos *c, size_t n_pods)
{
        static const char *const sources[] = { KC_MANIFEST_SOURCE };
        struct kc_kubelet_parts_config kc;

        assert_int_equal(kc_fake_clock_new(&c->clock, T0), 0);
        assert_int_equal(kc_sim_new(c->clock, &c->sim), 0);
        c->svc = kc_sim_service(c->sim);
        assert_int_equal(kc_runtime_manager_new(c->svc, c->clock, &c->manager), 0);
        assert_int_equal(kc_metrics_registry_new(&c->registry), 0);
        assert_int_equal(kc_kubelet_metrics_register(c->registry, &c->metrics), 0);
        kc = (struct kc_kubelet_parts_config){
                .clock = c->clock,
                .svc = c->svc,
                .manager = c->manager,
                .metrics = &c->metrics,
                .registry = c->registry,
                .node_ip = "10.0.0.1",
                .runtime_name = "sim",
                /* --crash-loop-back-off-initial/max-container-restart-period=10s/40s */
                .crash_loop_initial_ns = 10 * SEC,
                .crash_loop_max_ns = 40 * SEC,
                .sync_frequency_ns = KC_POD_WORKERS_DEFAULT_RESYNC_NS,
                .max_wait_for_container_runtime_ns = 30 * SEC,
                .maximum_dead_containers_per_container = 1,
                .relist_period_ns = KC_GENERIC_PLEG_RELIST_PERIOD,
                .relist_threshold_ns = KC_GENERIC_PLEG_RELIST_THRESHOLD,
                .sources = sources,
                .n_sources = 1,
        };
        assert_int_equal(kc_kubelet_parts_build(&kc, &c->k), 0);

        c->cap_pods = n_pods + MAX_EXTRA_PODS;
        c->pods = calloc(c->cap_pods, sizeof(*c->pods));
        assert_non_null(c->pods);

        /* Run, as the daemon does: poller, (PLEG,) syncLoop. The PLEG starts
         * half a second later (test_chaos), off syncLoop's ticks. */
        assert_int_equal(kc_runtime_up_poller_start(c->k.runtime_state, c->svc, c->clock,
                                                    KC_RUNTIME_UP_PERIOD, &c->poller),
                         0);
        assert_int_equal(pthread_create(&c->loop_thread, NULL, loop_main, c), 0);
        c->loop_running = true;
}

static void chaos_stop(struct chaos *c)
{
        size_t i;

        /* Nobody may stay asleep in a spike: drop the rest, let the clock pass them. */
        kc_sim_clear_faults(c->sim);
        kc_fake_clock_advance(c->clock, 60 * SEC);
        if (c->loop_running) {
                kc_sync_loop_stop_mp(c->k.loop);
                pthread_join(c->loop_thread, NULL);
        }
        kc_generic_pleg_stop(c->k.pleg);
        c->poller = kc_runtime_up_poller_stop(c->poller);
        kc_kubelet_parts_done(&c->k);
        c->manager = kc_runtime_manager_free(c->manager);
        c->sim = kc_sim_free(c->sim);
        c->registry = kc_metrics_registry_free(c->registry);
        c->clock = kc_clock_free(c->clock);
        for (i = 0; i < c->n_pods; i++)
                kc_api_pod_unref(c->pods[i].pod);
        free(c->pods);
        for (i = 0; i < c->n_pending; i++)
                kc_pod_update_free(c->pending[i]);
        free(c->pending);
}

/* ------------------------------------------------------------------------ */
/* The final checks                                                           */

static const struct dpod *find_dpod(const struct chaos *c, const char *uid)
{
        size_t i;

        /* UIDs end in the pod's index (hex). */
        if (!uid || strlen(uid) != 36 || strncmp(uid, "c4a05000-0000-4000-8000-", 24) != 0)
                return NULL;
        i = (size_t)strtoull(uid + 24, NULL, 16);
        return i < c->n_pods && strcmp(c->pods[i].uid, uid) == 0 ? &c->pods[i] : NULL;
}

static const struct kc_api_container *spec_container(const struct dpod *d, const char *name)
{
        size_t i;

        for (i = 0; i < d->pod->n_containers; i++)
                if (strcmp(d->pod->containers[i].name, name) == 0)
                        return &d->pod->containers[i];
        return NULL;
}

/* Appends the runtime's containers of @p uid (newest first) to the report. */
static void dump_containers(struct chaos *c, const char *uid)
{
        struct kc_pod_runtime prt = kc_sim_pod_runtime(c->sim);
        struct kc_runtime_error err = { 0 };
        struct kc_pod_status *st = NULL;
        char line[512];
        size_t i, len = 0;

        if (prt.ops->get_pod_status(prt.self, uid, NULL, NULL, &st, &err) < 0 || !st) {
                kc_pod_status_unref(st);
                return;
        }
        for (i = 0; i < st->n_containers && len < sizeof(line) - 1; i++) {
                const struct kc_container_status *cs = &st->containers[i];
                int n = snprintf(line + len, sizeof(line) - len, " %s#%d:%s(%d)@%+.3fs", cs->name,
                                 cs->restart_count, kc_container_state_to_string(cs->state),
                                 cs->exit_code, (double)(cs->created_at - T0) / (double)SEC);

                len += n > 0 ? (size_t)n : 0;
        }
        mismatch(c, "  runtime containers of %s:%s", uid, line);
        kc_pod_status_unref(st);
}

/* The runtime's view of one pod (the sim's kubecontainer face, all objects). */
static void check_runtime_pod(struct chaos *c, const struct kc_pod *rp)
{
        const struct dpod *d = find_dpod(c, rp->id);
        size_t i, j, ready = 0, running;
        struct kc_pod_status *st = NULL;
        struct kc_runtime_error err = { 0 };
        struct kc_pod_runtime prt = kc_sim_pod_runtime(c->sim);

        if (!d || !d->ever_added) {
                mismatch(c, "runtime pod %s was never desired", rp->id);
                return;
        }
        for (i = 0; i < rp->n_sandboxes; i++)
                if (rp->sandboxes[i].state == KC_CONTAINER_STATE_RUNNING)
                        ready++;
        if (!d->desired || d->kind != KIND_SVC) {
                if (ready != 0)
                        mismatch(c, "%s (%s): %zu ready sandboxes, want 0", d->name,
                                 d->desired ? "job" : "removed", ready);
                for (i = 0; i < rp->n_containers; i++)
                        if (rp->containers[i].state == KC_CONTAINER_STATE_RUNNING)
                                mismatch(c, "%s (%s): container %s (%s) still running", d->name,
                                         d->desired ? "job" : "removed", rp->containers[i].name,
                                         rp->containers[i].id);
                /* Container GC (every 60 s) removed its sandboxes and with them the rest. */
                if (!d->desired) {
                        if (rp->n_sandboxes + rp->n_containers > 0)
                                mismatch(c,
                                         "%s (removed): runtime still holds %zu sandboxes, "
                                         "%zu containers",
                                         d->name, rp->n_sandboxes, rp->n_containers);
                        return;
                }
                /* A job: the newest instance of each container exited 0. */
                if (prt.ops->get_pod_status(prt.self, d->uid, NULL, NULL, &st, &err) < 0) {
                        mismatch(c, "%s: GetPodStatus: %s", d->name, err.message);
                        kc_pod_status_unref(st);
                        return;
                }
                for (j = 0; j < d->pod->n_containers; j++) {
                        const char *name = d->pod->containers[j].name;
                        const struct kc_container_status *newest = NULL;

                        for (i = 0; i < st->n_containers && !newest; i++)
                                if (strcmp(st->containers[i].name, name) == 0)
                                        newest = &st->containers[i];
                        if (!newest || newest->state != KC_CONTAINER_STATE_EXITED ||
                            newest->exit_code != 0) {
                                mismatch(c, "%s (job): container %s newest instance %s, exit %d",
                                         d->name, name,
                                         newest ? kc_container_state_to_string(newest->state)
                                                : "missing",
                                         newest ? newest->exit_code : -1);
                                dump_containers(c, d->uid);
                        }
                }
                kc_pod_status_unref(st);
                return;
        }
        /* A desired svc pod. */
        if (ready != 1)
                mismatch(c, "%s (svc): %zu ready sandboxes, want 1", d->name, ready);
        for (j = 0; j < d->pod->n_containers; j++) {
                const struct kc_api_container *sc = &d->pod->containers[j];
                uint64_t want = kc_container_spec_hash(sc);

                running = 0;
                for (i = 0; i < rp->n_containers; i++) {
                        const struct kc_container *rc = &rp->containers[i];

                        if (rc->state != KC_CONTAINER_STATE_RUNNING || strcmp(rc->name, sc->name))
                                continue;
                        running++;
                        if (rc->hash != want)
                                mismatch(c, "%s (svc): container %s runs an old spec (gen %u)",
                                         d->name, sc->name, d->gen);
                }
                if (running != 1) {
                        mismatch(c, "%s (svc): %zu running instances of %s, want 1", d->name,
                                 running, sc->name);
                        dump_containers(c, d->uid);
                }
        }
        for (i = 0; i < rp->n_containers; i++)
                if (rp->containers[i].state == KC_CONTAINER_STATE_RUNNING &&
                    !spec_container(d, rp->containers[i].name))
                        mismatch(c, "%s (svc): unexpected running container %s", d->name,
                                 rp->containers[i].name);
}

/* The status manager's view of a desired pod. */
static void check_status(struct chaos *c, const struct dpod *d)
{
        json_t *st = NULL, *cs, *e;
        const char *phase, *want = d->kind == KIND_SVC ? "Running" : "Succeeded";
        size_t i;

        if (kc_status_manager_get_pod_status(c->k.status_manager, d->uid, &st) < 0) {
                mismatch(c, "%s: no status", d->name);
                return;
        }
        phase = json_string_value(json_object_get(st, "phase"));
        if (!phase || strcmp(phase, want) != 0)
                mismatch(c, "%s: status phase %s, want %s", d->name, phase ? phase : "(none)",
                         want);
        cs = json_object_get(st, "containerStatuses");
        if (json_array_size(cs) != d->pod->n_containers)
                mismatch(c, "%s: %zu container statuses, want %zu", d->name, json_array_size(cs),
                         d->pod->n_containers);
        json_array_foreach (cs, i, e) {
                json_t *state = json_object_get(e, "state");
                const char *name = json_string_value(json_object_get(e, "name"));

                if (d->kind == KIND_SVC) {
                        if (!json_object_get(state, "running") ||
                            !json_is_true(json_object_get(e, "ready"))) {
                                char *txt = json_dumps(e, JSON_COMPACT);

                                mismatch(c, "%s: status of %s is not running and ready: %.300s",
                                         d->name, name ? name : "?", txt ? txt : "?");
                                free(txt);
                                dump_containers(c, d->uid);
                        }
                } else {
                        json_t *t = json_object_get(state, "terminated");

                        if (!t || json_integer_value(json_object_get(t, "exitCode")) != 0)
                                mismatch(c, "%s: status of %s is not terminated with 0", d->name,
                                         name ? name : "?");
                }
        }
        json_decref(st);
}

static void check_all(struct chaos *c)
{
        struct kc_pod_runtime prt = kc_sim_pod_runtime(c->sim);
        struct kc_runtime_error err = { 0 };
        struct kc_pod_list list = { 0 };
        struct kc_api_pod **pm = NULL;
        struct kc_sim_stats st;
        bool *seen;
        size_t i, n_desired = 0, n_pm;
        json_t *js = NULL;

        seen = calloc(c->n_pods, sizeof(*seen));
        assert_non_null(seen);
        assert_int_equal(kc_sim_get_stats(c->sim, &st), 0);
        if (st.delayed_now != 0)
                mismatch(c, "%u calls still asleep in a latency spike", st.delayed_now);
        if (c->n_pending != 0)
                mismatch(c, "%zu config updates never accepted", c->n_pending);
        if (prt.ops->get_pods(prt.self, true, &list, &err) < 0)
                CHAOS_FAIL(c, "GetPods: %s", c->seed, err.message);
        for (i = 0; i < list.n; i++) {
                const struct dpod *d = find_dpod(c, list.pods[i]->id);

                if (d)
                        seen[d - c->pods] = true;
                check_runtime_pod(c, list.pods[i]);
        }
        kc_pod_list_done(&list);

        for (i = 0; i < c->n_pods; i++) {
                const struct dpod *d = &c->pods[i];
                struct kc__pod_sync_snapshot snap;

                if (!d->desired) {
                        if (kc_status_manager_get_pod_status(c->k.status_manager, d->uid, &js) ==
                            0) {
                                mismatch(c, "%s (removed): still has a status", d->name);
                                json_decref(js);
                        }
                        if (kc__pod_workers_snapshot(c->k.pod_workers, d->uid, &snap) == 0)
                                mismatch(c, "%s (removed): pod worker still tracked", d->name);
                        for (size_t j = 0; j < d->pod->n_containers; j++)
                                if (kc_reason_cache_get(c->k.reasons, d->uid,
                                                        d->pod->containers[j].name, NULL,
                                                        NULL) == 0)
                                        mismatch(c, "%s (removed): reason kept for %s (D18)",
                                                 d->name, d->pod->containers[j].name);
                        continue;
                }
                n_desired++;
                if (!seen[i])
                        mismatch(c, "%s: unknown to the runtime", d->name);
                check_status(c, d);
                if (kc__pod_workers_snapshot(c->k.pod_workers, d->uid, &snap) < 0)
                        mismatch(c, "%s: no pod worker", d->name);
        }
        free(seen);

        n_pm = kc_pod_manager_get_pods(c->k.pod_manager, &pm);
        if (n_pm != n_desired)
                mismatch(c, "pod manager holds %zu pods, want %zu", n_pm, n_desired);
        for (i = 0; i < n_pm; i++) {
                const struct dpod *d = find_dpod(c, pm[i]->uid);

                if (!d || !d->desired)
                        mismatch(c, "pod manager holds %s, not desired", pm[i]->uid);
                kc_api_pod_unref(pm[i]);
        }
        free(pm);
        if (kc__pod_workers_count(c->k.pod_workers) != n_desired)
                mismatch(c, "pod workers track %zu pods, want %zu",
                         kc__pod_workers_count(c->k.pod_workers), n_desired);
}

/* ------------------------------------------------------------------------ */

static uint64_t chaos_seed(void)
{
        const char *e = getenv("KC_CHAOS_SEED");
        struct timespec ts;

        if (e && *e)
                return strtoull(e, NULL, 0);
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec;
}

static void test_chaos(void **state)
{
        struct chaos *c = calloc(1, sizeof(*c));
        const char *e = getenv("KC_CHAOS_PODS");
        size_t n_pods = e && *e ? strtoul(e, NULL, 10) : DEFAULT_PODS;
        int64_t t_start = kc_test_mono_ms(), converged_at = -1;
        struct dpod **initial;
        struct kc_sim_stats st;
        int stable_polls = kc_test_timeout_multiplier() > 1 ? 5 : 3;
        int sec, extra, r;
        bool net_down = false;
        int64_t net_up_at = 0;
        FILE *log_file;
        bool verbose = getenv("KC_CHAOS_VERBOSE") != NULL;
        size_t i;

        (void)state;
        assert_non_null(c);
        /* The kubelet's log goes to KC_CHAOS_LOG (a path), else nowhere. */
        e = getenv("KC_CHAOS_LOG");
        log_file = fopen(e && *e ? e : "/dev/null", "we");
        assert_non_null(log_file);
        kc_log_set_output(log_file);
        e = getenv("KC_CHAOS_V"); /* klog verbosity of that log */
        if (e && *e)
                kc_log_set_verbosity(atoi(e));
        c->seed = chaos_seed();
        rng_state = c->seed;
        fprintf(stderr, "chaos: seed=%" PRIu64 " pods=%zu\n", c->seed, n_pods);
        assert_true(n_pods > 0);
        chaos_start(c, n_pods);

        /* Every pod in one ADD, as the file source's first scan sends them. */
        initial = calloc(n_pods, sizeof(*initial));
        assert_non_null(initial);
        for (i = 0; i < n_pods; i++)
                initial[i] = new_dpod(c);
        add_pods(c, initial, n_pods);
        free(initial);
        settle(c, stable_polls, false, 0);
        kc_fake_clock_advance(c->clock, SEC / 2);
        assert_int_equal(kc_generic_pleg_start(c->k.pleg), 0);
        settle(c, stable_polls, true, 0);
        c->pleg_quarter = 1;

        for (sec = 1; sec <= TOTAL_SECONDS; sec++) {
                if (sec <= CHAOS_SECONDS) {
                        schedule_faults(c);
                        schedule_crashes(c);
                        if (sec % 5 == 0)
                                schedule_churn(c);
                        if (!net_down && rng_chance(1)) {
                                net_down = true;
                                net_up_at = sec + 3 + rng_below(8);
                                kc_sim_set_network_ready(c->sim, false, "ChaosNetwork",
                                                         "the chaos test took the network down");
                                c->net_outages++;
                        }
                } else if (sec == CHAOS_SECONDS + 1) {
                        kc_sim_clear_faults(c->sim); /* the quiet period */
                }
                if (net_down && (sec >= net_up_at || sec > CHAOS_SECONDS)) {
                        net_down = false;
                        kc_sim_set_network_ready(c->sim, true, NULL, NULL);
                }
                flush_updates(c);
                step(c, stable_polls);
                if (!kc_generic_pleg_healthy(c->k.pleg, NULL))
                        c->pleg_unhealthy_steps++;
                if (verbose && sec % 60 == 0) {
                        assert_int_equal(kc_sim_get_stats(c->sim, &st), 0);
                        fprintf(stderr,
                                "chaos: t=%ds wall=%.1fs calls=%" PRIu64 " syncs=%" PRIu64
                                " settle-timeouts=%u pending-updates=%zu\n",
                                sec, (double)(kc_test_mono_ms() - t_start) / 1000.0, st.calls,
                                pod_syncs(c), c->settle_timeouts, c->n_pending);
                }
        }

        /*
         * 13:20. The state is final once a whole step changed nothing in the
         * runtime (so its relist saw the final runtime and the statuses were
         * generated from it) and left the pod workers idle; allow at most
         * FINAL_EXTRA_STEPS more seconds for the work the last steps started.
         */
        for (extra = 0;; extra++) {
                uint64_t before = mutating_calls(c);

                flush_updates(c);
                step(c, stable_polls * 3);
                r = kc__pod_workers_drain(c->k.pod_workers,
                                          (int)(200 * kc_test_timeout_multiplier()));
                settle(c, stable_polls * 3, false, 0);
                if (r == 0 && c->n_pending == 0 && mutating_calls(c) == before)
                        break;
                if (extra == FINAL_EXTRA_STEPS) {
                        mismatch(c, "not settled %d s after the end (workers %s, runtime %s)",
                                 FINAL_EXTRA_STEPS + 1, r == 0 ? "idle" : "busy",
                                 mutating_calls(c) == before ? "still" : "changing");
                        break;
                }
        }
        check_all(c);
        converged_at = kc_test_mono_ms();

        assert_int_equal(kc_sim_get_stats(c->sim, &st), 0);
        fprintf(stderr,
                "chaos: seed=%" PRIu64 " pods=%zu (+%" PRIu64 " added, %" PRIu64
                " removed, %" PRIu64 " updated) faults=%" PRIu64 " (hit %" PRIu64
                ") spikes=%" PRIu64 " (calls delayed %" PRIu64 ") crashes=%" PRIu64 " (hit %" PRIu64
                ") net-outages=%u calls=%" PRIu64
                " pleg-unhealthy=%us settle-timeouts=%u extra-steps=%d wall=%.1fs"
                " mismatches=%u\n",
                c->seed, n_pods, c->adds - n_pods, c->removes, c->updates, c->faults_scheduled,
                st.faults_taken, c->delays_scheduled, st.delays_taken, c->crash_attempts,
                st.crashes, c->net_outages, st.calls, c->pleg_unhealthy_steps, c->settle_timeouts,
                extra, (double)(converged_at - t_start) / 1000.0, c->mismatches);
        if (c->mismatches > 0) {
                fprintf(stderr, "chaos: seed=%" PRIu64 ": %u mismatches, the first:%s\n", c->seed,
                        c->mismatches, c->report);
                chaos_stop(c);
                CHAOS_FAIL(c, "%u mismatches (see above); rerun with KC_CHAOS_SEED=%" PRIu64,
                           c->seed, c->mismatches, c->seed);
        }
        chaos_stop(c);
        free(c);
        kc_log_set_output(stderr);
        fclose(log_file);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_chaos),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
