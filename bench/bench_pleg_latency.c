/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PLEG latency (issue 6, item 6): the time from a container's exit in the
 * runtime to the pod worker's sync entering SyncPod for that pod, with
 *   (a) GenericPLEG relisting every 1 s (3 min threshold), and
 *   (b) EventedPLEG reading GetContainerEvents, GenericPLEG at 300 s / 10 min,
 * against the Node.js test CRI server of tests/integration/cri-server/ (a
 * real gRPC stack: @grpc/grpc-js, our runtime/cri/api.proto), at 100 and
 * 1,000 pods of one sandbox and one running container each.
 *
 * The node side is core/daemon.c's build() with one substitution: the pod
 * workers' syncer is a recording stub instead of the kubelet pod syncer. So
 * the path is the daemon's: kc_cri → runtime manager → GenericPLEG (and
 * EventedPLEG) → the PLEG channel → kc_sync_loop (the kubelet's
 * SyncHandler over a pod manager holding the N pods, the work queue, the
 * container deletor, the status manager, restart back-off) → pod workers
 * (GetNewerThan on the pod cache) → SyncPod. The runtime-up poller keeps
 * runtimeState healthy, housekeeping runs every 2 s, resyncs every 1 min,
 * all on the real clock.
 *
 * One sample: at time T (CLOCK_MONOTONIC, taken just before the write) the
 * benchmark sends the server, in one write, `put_pod` with the pod's
 * container now CONTAINER_EXITED and, in evented mode, a
 * CONTAINER_STOPPED_EVENT carrying the new statuses (created_at = the exit
 * time). The stub SyncPod stamps CLOCK_MONOTONIC on entry; the first entry
 * for that pod whose status shows that container exited ends the sample:
 * latency = entry − T. Then the container is restored (running again under
 * a new ID, with a CONTAINER_STARTED_EVENT in evented mode) and the
 * benchmark waits for the SyncPod that sees it running. A random delay,
 * uniform over one relist interval (generic: the measured mean interval
 * between relist starts) or over 2 s (evented: housekeeping and the global
 * cache update), precedes each exit, so the exits fall uniformly over the
 * periodic work; pods are taken in a random order, never the same pod
 * twice in a row.
 *
 * Besides the total, each sample records when syncLoop took the PLEG event
 * for the pod (the SyncHandler's get_pod_by_uid, which syncLoop calls only
 * for PLEG and probe events; a forwarding wrapper stamps it), splitting the
 * latency into "exit → syncLoop" (detection and the channel) and "syncLoop →
 * SyncPod" (UpdatePod, the worker's wake-up, GetNewerThan). A second
 * wrapper times HandlePodCleanups, which holds the loop thread, so the
 * samples that waited for housekeeping can be told apart. Besides, each
 * configuration reports the relists' mean duration and interval (from the
 * kubelet metrics), the raw ListPodSandbox + ListContainers and one
 * GetPodStatus against the server, the server's reply time and, in evented
 * mode, kubelet_evented_pleg_connection_latency_seconds.
 *
 * Usage: bench_pleg_latency [--env FILE] [--quick] [--samples N]
 *                           [--pods N ...] [--mode generic|evented ...]
 *                           [--seed S] [--keep-logs]
 * FILE (default $KC_CRI_SERVER_ENV) is what cri-server/setup.sh writes;
 * bench/bench_pleg_latency.sh does the set-up and the run. Figures only,
 * never pass/fail: it exits non-zero only when it cannot run.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/backoff.h"
#include "core/cancel.h"
#include "core/chan.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/work_queue.h"
#include "cri_server_client.h"
#include "health/runtime_state.h"
#include "kubelet/config/pod_update.h"
#include "kubelet/kubelet.h"
#include "kubelet/pod_container_deletor.h"
#include "kubelet/pod_manager.h"
#include "kubelet/runtime_up.h"
#include "kubelet/status/status_manager.h"
#include "kubelet/sync_loop.h"
#include "metrics/kubelet_metrics.h"
#include "metrics/registry.h"
#include "pleg/event.h"
#include "pleg/evented.h"
#include "pleg/generic.h"
#include "podworkers/pod_workers.h"
#include "runtime/api_pod.h"
#include "runtime/cache.h"
#include "runtime/container.h"
#include "runtime/cri.h"
#include "runtime/error.h"
#include "runtime/manager.h"
#include "runtime/runtime_service.h"
#include "runtime/sync_pod.h"

#define MSEC KC_NSEC_PER_MSEC
#define SEC KC_NSEC_PER_SEC
/* A sample whose SyncPod does not come within this is counted as lost. */
#define SAMPLE_TIMEOUT (15 * SEC)
#define SETTLE_TIMEOUT (120 * SEC)
/* core/daemon.c's values (its flags' defaults). */
#define CONFIG_CHANNEL_CAPACITY 50
#define SYNC_FREQUENCY (1 * KC_NSEC_PER_MIN)
#define RUNTIME_REQUEST_TIMEOUT (2 * KC_NSEC_PER_MIN)
#define MAX_WAIT_FOR_CONTAINER_RUNTIME (30 * SEC)
#define CRASH_LOOP_INITIAL (10 * SEC)
#define CRASH_LOOP_MAX (300 * SEC)
#define EVENTED_DELAY_SPAN (2 * SEC)
#define NAMESPACE "lat"
#define HK_RING 8

static struct kc_cri_server_env env;
static bool keep_logs;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
        va_list ap;

        fputs("bench_pleg_latency: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        exit(1);
}

static int64_t mono_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

static int64_t real_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

static void sleep_ns(int64_t ns)
{
        struct timespec ts = { .tv_sec = ns / SEC, .tv_nsec = ns % SEC };

        while (ns > 0 && nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* splitmix64: reproducible delays and pod order for a given --seed. */
static uint64_t rng_state;

static uint64_t rng_next(void)
{
        uint64_t z = (rng_state += UINT64_C(0x9E3779B97F4A7C15));

        z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
        return z ^ (z >> 31);
}

/* Uniform in [0, n). */
static uint64_t rng_below(uint64_t n)
{
        return n ? rng_next() % n : 0;
}

/* ------------------------------------------------------------------------ */
/* The test CRI server and its JSON-lines control channel                     */

static void server_start(struct kc_cri_server *s)
{
        char why[2 * PATH_MAX + 128];

        if (kc_cri_server_start(s, &env, "/tmp/cubelet-lat.XXXXXX", true, 60000, NULL, why,
                                sizeof(why)) < 0)
                die("%s", why);
}

static void server_stop(struct kc_cri_server *s)
{
        kc_cri_server_stop(s, keep_logs);
}

static void write_all(struct kc_cri_server *s, const char *text, size_t len)
{
        int r = kc_cri_server_write(s, text, len);

        if (r < 0)
                die("server: writing a command: %s", strerror(-r));
}

/* @p cmd (stolen) as one compact line, newline included; malloc'd. */
static char *command_line(json_t *cmd)
{
        char *text = kc_cri_server_command_line(cmd);

        if (!text)
                die("out of memory");
        return text;
}

/* Reads one reply; dies unless it says ok. Returns it (json_decref). */
static json_t *server_reply(struct kc_cri_server *s, const char *what)
{
        char why[1024];
        json_t *reply = NULL;

        if (kc_cri_server_reply(s, what, 60000, &reply, why, sizeof(why)) < 0)
                die("%s (its log: %s)", why, s->log);
        if (!json_is_true(json_object_get(reply, "ok"))) {
                char *text = json_dumps(reply, JSON_COMPACT);

                die("server: %s failed: %s", what, text ? text : "?");
        }
        return reply;
}

/* Sends @p cmd (stolen), checks ok, returns the reply (json_decref). */
static json_t *server_call(struct kc_cri_server *s, json_t *cmd)
{
        char *text = command_line(cmd);
        json_t *r;

        write_all(s, text, strlen(text));
        r = server_reply(s, text);
        free(text);
        return r;
}

static void server_do(struct kc_cri_server *s, json_t *cmd)
{
        json_decref(server_call(s, cmd));
}

static json_t *ns_json(int64_t ns)
{
        char b[32];

        snprintf(b, sizeof(b), "%" PRId64, ns);
        return json_string(b);
}

/* ------------------------------------------------------------------------ */
/* The pods                                                                   */

struct pod {
        char uid[32];
        char sandbox[32];
        char container[48]; /* the current container's ID */
        unsigned generation;
        int64_t created; /* realtime ns: sandbox and first container */
        struct kc_api_pod *api;
};

static void pod_set_container(struct pod *p, size_t i)
{
        snprintf(p->container, sizeof(p->container), "c-%05zu-%u", i, p->generation);
}

/* The POD of the server's JSON: its sandbox and its one container. */
static json_t *pod_json(const struct pod *p, const char *state, int64_t created, int64_t started,
                        int64_t finished, int exit_code)
{
        return json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:s, s:o}, s:[{s:s, s:s, s:s, s:o, s:o, "
                         "s:o, s:i}]}",
                         "uid", p->uid, "name", p->uid, "namespace", NAMESPACE, "ip", "10.1.0.1",
                         "sandbox", "id", p->sandbox, "state", "SANDBOX_READY", "created_at",
                         ns_json(p->created), "containers", "id", p->container, "name", "app",
                         "state", state, "created_at", ns_json(created), "started_at",
                         ns_json(started), "finished_at", ns_json(finished), "exit_code",
                         exit_code);
}

/* ------------------------------------------------------------------------ */
/* The recording pod syncer                                                   */

struct watch {
        bool armed;
        bool settled;                    /* the initial SyncPod saw the container running */
        char want[48];                   /* container ID */
        enum kc_container_state want_st; /* its state in the status */
        int64_t hit_ns;                  /* first SyncPod entry showing it (monotonic) */
        int64_t loop_ns;                 /* syncLoop took a PLEG event for the pod (monotonic) */
        unsigned early;                  /* SyncPod entries before the hit */
        enum kc_sync_pod_type hit_type;
};

struct recorder {
        pthread_mutex_t lock;
        pthread_cond_t cond; /* CLOCK_MONOTONIC */
        struct watch *w;
        size_t n;
        size_t n_settled;
        uint64_t syncs;
        /* The last housekeeping runs (HandlePodCleanups on the loop thread). */
        struct {
                int64_t start, end; /* monotonic */
        } hk[HK_RING];
        unsigned hk_next;
        uint64_t hk_count;
        int64_t hk_total;
};

static struct recorder rec;

/* The pod index from a UID "lat-%05zu"; -1 for anything else. */
static ssize_t pod_index(const char *uid)
{
        char *end;
        unsigned long i;

        if (!uid || strncmp(uid, "lat-", 4) != 0)
                return -1;
        i = strtoul(uid + 4, &end, 10);
        return *end == '\0' && i < rec.n ? (ssize_t)i : -1;
}

static bool status_shows(const struct kc_pod_status *st, const char *id, enum kc_container_state s)
{
        for (size_t i = 0; st && i < st->n_containers; i++)
                if (st->containers[i].id && strcmp(st->containers[i].id, id) == 0)
                        return st->containers[i].state == s;
        return false;
}

static int rec_sync_pod(void *userdata, struct kc_cancel *ctx, enum kc_sync_pod_type update_type,
                        struct kc_api_pod *pod, struct kc_api_pod *mirror_pod,
                        struct kc_pod_status *status, bool *ret_is_terminal,
                        int64_t *ret_requeue_after_ns, char **ret_err)
{
        int64_t t = mono_ns(); /* first: the entry time */
        ssize_t i = pod_index(pod ? pod->uid : NULL);

        (void)userdata, (void)ctx, (void)mirror_pod, (void)ret_requeue_after_ns, (void)ret_err;
        *ret_is_terminal = false;
        pthread_mutex_lock(&rec.lock);
        rec.syncs++;
        if (i >= 0 && rec.w[i].armed) {
                struct watch *w = &rec.w[i];

                if (status_shows(status, w->want, w->want_st)) {
                        w->armed = false;
                        w->hit_ns = t;
                        w->hit_type = update_type;
                        if (!w->settled) {
                                w->settled = true;
                                rec.n_settled++;
                        }
                        pthread_cond_broadcast(&rec.cond);
                } else {
                        w->early++;
                }
        }
        pthread_mutex_unlock(&rec.lock);
        return 0;
}

static int rec_sync_terminating_pod(void *userdata, struct kc_cancel *ctx, struct kc_api_pod *pod,
                                    struct kc_pod_status *status, int64_t grace_period_s,
                                    char **ret_err)
{
        (void)userdata, (void)ctx, (void)pod, (void)status, (void)grace_period_s, (void)ret_err;
        return 0;
}

static int rec_sync_terminating_runtime_pod(void *userdata, struct kc_cancel *ctx,
                                            struct kc_pod *running_pod, char **ret_err)
{
        (void)userdata, (void)ctx, (void)running_pod, (void)ret_err;
        return 0;
}

static int rec_sync_terminated_pod(void *userdata, struct kc_cancel *ctx, struct kc_api_pod *pod,
                                   struct kc_pod_status *status, char **ret_err)
{
        (void)userdata, (void)ctx, (void)pod, (void)status, (void)ret_err;
        return 0;
}

static const struct kc_pod_syncer_ops recording_syncer = {
        .sync_pod = rec_sync_pod,
        .sync_terminating_pod = rec_sync_terminating_pod,
        .sync_terminating_runtime_pod = rec_sync_terminating_runtime_pod,
        .sync_terminated_pod = rec_sync_terminated_pod,
};

/*
 * The kubelet's SyncHandler, forwarded; get_pod_by_uid (called by syncLoop
 * for PLEG and probe events only) also stamps when the loop took the event.
 */
static struct kc_api_pod *stamp_get_pod_by_uid(void *ud, const char *uid)
{
        int64_t t = mono_ns();
        ssize_t i = pod_index(uid);

        if (i >= 0) {
                pthread_mutex_lock(&rec.lock);
                if (rec.w[i].armed && rec.w[i].loop_ns == 0)
                        rec.w[i].loop_ns = t;
                pthread_mutex_unlock(&rec.lock);
        }
        return kc_kubelet_sync_handler.get_pod_by_uid(ud, uid);
}

/* HandlePodCleanups, forwarded and timed: housekeeping holds the loop thread. */
static void stamp_handle_pod_cleanups(void *ud)
{
        int64_t t0 = mono_ns(), t1;

        kc_kubelet_sync_handler.handle_pod_cleanups(ud);
        t1 = mono_ns();
        pthread_mutex_lock(&rec.lock);
        rec.hk[rec.hk_next % HK_RING].start = t0;
        rec.hk[rec.hk_next % HK_RING].end = t1;
        rec.hk_next++;
        rec.hk_count++;
        rec.hk_total += t1 - t0;
        pthread_mutex_unlock(&rec.lock);
}

/* Whether a recent housekeeping run overlapped [@p from, @p to]. */
static bool rec_housekeeping_between(int64_t from, int64_t to)
{
        bool hit = false;

        pthread_mutex_lock(&rec.lock);
        for (unsigned k = 0; k < HK_RING && !hit; k++)
                hit = rec.hk[k].end > 0 && rec.hk[k].start <= to && rec.hk[k].end >= from;
        pthread_mutex_unlock(&rec.lock);
        return hit;
}

static struct kc_sync_handler_ops stamping_handler;

static void rec_init(size_t n)
{
        pthread_condattr_t ca;

        pthread_mutex_init(&rec.lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&rec.cond, &ca);
        pthread_condattr_destroy(&ca);
        rec.w = calloc(n, sizeof(*rec.w));
        if (!rec.w)
                die("out of memory");
        rec.n = n;
        rec.n_settled = 0;
        rec.syncs = 0;
        memset(rec.hk, 0, sizeof(rec.hk));
        rec.hk_next = 0;
        rec.hk_count = 0;
        rec.hk_total = 0;
}

static void rec_done(void)
{
        free(rec.w);
        rec.w = NULL;
        rec.n = 0;
        pthread_cond_destroy(&rec.cond);
        pthread_mutex_destroy(&rec.lock);
}

static void rec_arm(size_t i, const char *id, enum kc_container_state st)
{
        pthread_mutex_lock(&rec.lock);
        snprintf(rec.w[i].want, sizeof(rec.w[i].want), "%s", id);
        rec.w[i].want_st = st;
        rec.w[i].hit_ns = 0;
        rec.w[i].loop_ns = 0;
        rec.w[i].early = 0;
        rec.w[i].armed = true;
        pthread_mutex_unlock(&rec.lock);
}

/* Waits until pod @p i's watch hit, at most until @p deadline (monotonic); copies it. */
static bool rec_wait(size_t i, int64_t deadline, struct watch *ret)
{
        struct timespec ts = { .tv_sec = deadline / SEC, .tv_nsec = deadline % SEC };
        bool hit;

        pthread_mutex_lock(&rec.lock);
        while (rec.w[i].armed && pthread_cond_timedwait(&rec.cond, &rec.lock, &ts) != ETIMEDOUT)
                ;
        hit = !rec.w[i].armed;
        rec.w[i].armed = false;
        *ret = rec.w[i];
        pthread_mutex_unlock(&rec.lock);
        return hit;
}

/* ------------------------------------------------------------------------ */
/* The node: core/daemon.c's build(), with the recording syncer               */

struct node {
        bool evented_gate;
        struct kc_clock *clock;
        struct kc_metrics_registry *registry;
        struct kc_kubelet_metrics metrics;
        struct kc_cri *cri;
        struct kc_runtime_service svc;
        struct kc_runtime_manager *manager;
        struct kc_pod_cache *cache;
        struct kc_pod_manager *pod_manager;
        struct kc_backoff *backoff;
        struct kc_status_manager *status_manager;
        struct kc_runtime_state *runtime_state;
        struct kc_chan *config, *events;
        struct kc_generic_pleg *pleg;
        struct kc_evented_pleg *evented;
        struct kc_work_queue *work_queue;
        struct kc_pod_workers *pod_workers;
        struct kc_pod_container_deletor *deletor;
        struct kc_kubelet *kubelet;
        struct kc_sync_loop *loop;
        struct kc_runtime_up_poller *runtime_up;
        pthread_t loop_thread;
        bool loop_running;
};

static bool pleg_healthy(void *ud, char **ret_err)
{
        return kc_generic_pleg_healthy(ud, ret_err);
}

static bool evented_healthy(void *ud, char **ret_err)
{
        return kc_evented_pleg_healthy(ud, ret_err);
}

static bool evented_in_use(void *ud)
{
        struct node *n = ud;

        return n->evented && kc_evented_pleg_in_use(n->evented);
}

#define CHECK(call)                                                                                \
        do {                                                                                       \
                int r_ = (call);                                                                   \
                if (r_ < 0)                                                                        \
                        die("%s:%d: %s: %s", __FILE__, __LINE__, #call, strerror(-r_));            \
        } while (0)

static void node_build(struct node *n, const char *sock)
{
        struct kc_runtime_error err = { 0 };
        struct kc_version_result v = { 0 };
        char endpoint[160];
        struct kc_generic_pleg_config pc;

        n->clock = kc_clock_real();
        CHECK(kc_metrics_registry_new(&n->registry));
        CHECK(kc_kubelet_metrics_register(n->registry, &n->metrics));

        /* open_runtime */
        snprintf(endpoint, sizeof(endpoint), "unix://%s", sock);
        CHECK(kc_cri_new(endpoint, RUNTIME_REQUEST_TIMEOUT, &n->cri));
        n->svc = kc_cri_service(n->cri);
        if (n->svc.ops->version(n->svc.self, &v, &err) < 0)
                die("Version: %s", err.message);
        kc_runtime_result_done(&v);
        CHECK(kc_runtime_manager_new(n->svc, n->clock, &n->manager));

        /* build */
        CHECK(kc_pod_cache_new(&n->cache));
        CHECK(kc_pod_manager_new(&n->pod_manager));
        CHECK(kc_backoff_new(n->clock, CRASH_LOOP_INITIAL, CRASH_LOOP_MAX, &n->backoff));
        CHECK(kc_status_manager_new(&n->status_manager));
        CHECK(kc_runtime_state_new(n->clock, MAX_WAIT_FOR_CONTAINER_RUNTIME, &n->runtime_state));
        CHECK(kc_chan_new(&n->config, CONFIG_CHANNEL_CAPACITY, kc_pod_update_free_item));
        CHECK(kc_chan_new(&n->events, KC_PLEG_CHANNEL_CAPACITY, kc_pleg_event_free_item));
        pc = (struct kc_generic_pleg_config){
                .runtime = kc_runtime_manager_pod_runtime(n->manager),
                .events = n->events,
                .cache = n->cache,
                .clock = n->clock,
                .metrics = &n->metrics,
                .relist_period_ns = KC_GENERIC_PLEG_RELIST_PERIOD,
                .relist_threshold_ns = KC_GENERIC_PLEG_RELIST_THRESHOLD,
        };
        if (n->evented_gate) {
                pc.relist_period_ns = KC_EVENTED_GENERIC_RELIST_PERIOD;
                pc.relist_threshold_ns = KC_EVENTED_GENERIC_RELIST_THRESHOLD;
                pc.evented_in_use = evented_in_use;
                pc.evented_userdata = n;
        }
        CHECK(kc_generic_pleg_new(&pc, &n->pleg));
        CHECK(kc_runtime_state_add_health_check(n->runtime_state, "PLEG", pleg_healthy, n->pleg));
        if (n->evented_gate) {
                const struct kc_evented_pleg_config ec = {
                        .generic = n->pleg,
                        .source = kc_cri_event_source(n->cri),
                        .events = n->events,
                        .cache = n->cache,
                        .clock = n->clock,
                        .metrics = &n->metrics,
                        .cache_update_period_ns = KC_EVENTED_CACHE_UPDATE_PERIOD,
                        .reprobe_period_ns = KC_EVENTED_REPROBE_PERIOD,
                        .fallback_relist_period_ns = KC_GENERIC_PLEG_RELIST_PERIOD,
                        .fallback_relist_threshold_ns = KC_GENERIC_PLEG_RELIST_THRESHOLD,
                };

                CHECK(kc_evented_pleg_new(&ec, &n->evented));
                kc_pod_cache_set_newer_wins(n->cache, true);
                CHECK(kc_runtime_state_add_health_check(n->runtime_state, "EventedPLEG",
                                                        evented_healthy, n->evented));
        }
        CHECK(kc_work_queue_new(n->clock, &n->work_queue));
        CHECK(kc_pod_workers_new(
                &(struct kc_pod_workers_config){
                        .clock = n->clock,
                        .cache = n->cache,
                        .syncer = &recording_syncer,
                        .enqueue = kc_kubelet_enqueue,
                        .enqueue_userdata = n->work_queue,
                        .resync_interval_ns = SYNC_FREQUENCY,
                },
                &n->pod_workers));
        CHECK(kc_pod_container_deletor_new(n->svc.ops->remove_container, n->svc.self, 1,
                                           &n->deletor));
        CHECK(kc_kubelet_new(
                &(struct kc_kubelet_deps){
                        .clock = n->clock,
                        .pod_manager = n->pod_manager,
                        .pod_workers = n->pod_workers,
                        .work_queue = n->work_queue,
                        .deletor = n->deletor,
                        .cache = n->cache,
                        .runtime = kc_runtime_manager_pod_runtime(n->manager),
                        .backoff = n->backoff,
                        .status_manager = n->status_manager,
                },
                &n->kubelet));
        stamping_handler = kc_kubelet_sync_handler;
        stamping_handler.get_pod_by_uid = stamp_get_pod_by_uid;
        stamping_handler.handle_pod_cleanups = stamp_handle_pod_cleanups;
        CHECK(kc_sync_loop_new(
                &(struct kc_sync_loop_config){
                        .clock = n->clock,
                        .config = n->config,
                        .pleg = n->events,
                        .runtime_state = n->runtime_state,
                        .handler = &stamping_handler,
                        .handler_userdata = n->kubelet,
                        .resync_interval_ns = SYNC_FREQUENCY,
                },
                &n->loop));
        kc_kubelet_set_sync_loop(n->kubelet, n->loop);
}

static void *loop_main(void *ud)
{
        struct node *n = ud;
        int r = kc_sync_loop_run(n->loop);

        if (r < 0)
                die("syncLoop: %s", strerror(-r));
        return NULL;
}

/* Run: the runtime-up poller, GenericPLEG, EventedPLEG, then syncLoop on its thread. */
static void node_run(struct node *n)
{
        int r;

        CHECK(kc_runtime_up_poller_start(n->runtime_state, n->svc, n->clock, KC_RUNTIME_UP_PERIOD,
                                         &n->runtime_up));
        CHECK(kc_generic_pleg_start(n->pleg));
        if (n->evented)
                CHECK(kc_evented_pleg_start(n->evented));
        r = pthread_create(&n->loop_thread, NULL, loop_main, n);
        if (r != 0)
                die("pthread_create: %s", strerror(r));
        n->loop_running = true;
}

/* core/daemon.c's teardown(), in the same order. */
static void node_teardown(struct node *n)
{
        if (n->loop_running) {
                kc_sync_loop_stop_mp(n->loop);
                pthread_join(n->loop_thread, NULL);
                n->loop_running = false;
        }
        kc_cri_shutdown(n->cri);
        if (n->evented)
                kc_evented_pleg_stop(n->evented);
        if (n->pleg)
                kc_generic_pleg_stop(n->pleg);
        n->runtime_up = kc_runtime_up_poller_stop(n->runtime_up);
        kc_kubelet_stop(n->kubelet);
        n->pod_workers = kc_pod_workers_free(n->pod_workers);
        n->deletor = kc_pod_container_deletor_free(n->deletor);
        n->loop = kc_sync_loop_free(n->loop);
        n->kubelet = kc_kubelet_free(n->kubelet);
        n->work_queue = kc_work_queue_free(n->work_queue);
        n->evented = kc_evented_pleg_free(n->evented);
        n->pleg = kc_generic_pleg_free(n->pleg);
        n->events = kc_chan_free(n->events);
        n->config = kc_chan_free(n->config);
        n->runtime_state = kc_runtime_state_free(n->runtime_state);
        n->status_manager = kc_status_manager_free(n->status_manager);
        n->backoff = kc_backoff_free(n->backoff);
        n->pod_manager = kc_pod_manager_free(n->pod_manager);
        n->cache = kc_pod_cache_free(n->cache);
        n->manager = kc_runtime_manager_free(n->manager);
        n->cri = kc_cri_free(n->cri);
        n->registry = kc_metrics_registry_free(n->registry);
}

/* ------------------------------------------------------------------------ */
/* One configuration                                                          */

struct result {
        bool evented;
        size_t pods;
        size_t samples, lost;
        int64_t *lat, *to_loop, *loop_to_sync, *ack;
        size_t n_loop;     /* samples with a syncLoop stamp */
        int64_t *lat_free; /* the samples no housekeeping run overlapped */
        size_t n_free;
        int64_t *restore; /* restore → its SyncPod (not part of the figures) */
        size_t n_restore;
        uint64_t hk_count;
        double hk_mean_ms;
        uint64_t early;
        uint64_t relists;
        double relist_mean_ms, relist_interval_mean_ms;
        double event_latency_mean_ms; /* kubelet_evented_pleg_connection_latency_seconds */
        double lists_ms, inspect_ms;  /* medians: the two raw lists; one GetPodStatus */
        struct kc_evented_pleg_stats ev;
        double seconds;
};

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

        return (x > y) - (x < y);
}

/* Nearest rank over a sorted array, in ms. */
static double pct_ms(const int64_t *v, size_t n, double p)
{
        size_t k;

        if (n == 0)
                return 0;
        k = (size_t)(p * (double)n + 0.999999999);
        if (k < 1)
                k = 1;
        if (k > n)
                k = n;
        return (double)v[k - 1] / 1e6;
}

static double mean_ms(const int64_t *v, size_t n)
{
        double s = 0;

        for (size_t i = 0; i < n; i++)
                s += (double)v[i];
        return n ? s / (double)n / 1e6 : 0;
}

/* A histogram's count and sum at one time: means over a window come from two. */
struct hist_mark {
        uint64_t count;
        double sum;
};

static struct hist_mark hist_mark(const struct kc_histogram *h)
{
        return (struct hist_mark){ kc_histogram_count(h), kc_histogram_sum(h) };
}

/* The mean observation since @p since (zero: since the start), in ms. */
static double hist_mean_ms(const struct kc_histogram *h, struct hist_mark since)
{
        struct hist_mark now = hist_mark(h);

        return now.count > since.count
                       ? (now.sum - since.sum) / (double)(now.count - since.count) * 1e3
                       : 0;
}

/*
 * For the explanation: the median of @p rounds raw ListPodSandbox +
 * ListContainers pairs (what every relist starts with) and of GetPodStatus
 * through the runtime manager for one pod (what a relist does per changed
 * pod, and EventedPLEG never), on the node's own client.
 */
static void measure_runtime(struct node *n, const struct pod *p, size_t rounds, struct result *res)
{
        struct kc_pod_runtime rt = kc_runtime_manager_pod_runtime(n->manager);
        int64_t *lists = calloc(rounds, sizeof(int64_t)),
                *inspect = calloc(rounds, sizeof(int64_t));

        if (!lists || !inspect)
                die("out of memory");
        for (size_t i = 0; i < rounds; i++) {
                struct kc_pod_sandbox_list sl = { 0 };
                struct kc_container_list cl = { 0 };
                struct kc_runtime_error err = { 0 };
                struct kc_pod_status *st = NULL;
                int64_t t0 = mono_ns();

                if (n->svc.ops->list_pod_sandbox(n->svc.self, NULL, &sl, &err) < 0 ||
                    n->svc.ops->list_containers(n->svc.self, NULL, &cl, &err) < 0)
                        die("listing: %s", err.message);
                lists[i] = mono_ns() - t0;
                kc_runtime_result_done(&sl);
                kc_runtime_result_done(&cl);
                t0 = mono_ns();
                if (rt.ops->get_pod_status(rt.self, p->uid, p->uid, NAMESPACE, &st, &err) < 0)
                        die("GetPodStatus: %s", err.message);
                inspect[i] = mono_ns() - t0;
                kc_pod_status_unref(st);
        }
        qsort(lists, rounds, sizeof(int64_t), cmp_i64);
        qsort(inspect, rounds, sizeof(int64_t), cmp_i64);
        res->lists_ms = pct_ms(lists, rounds, 0.5);
        res->inspect_ms = pct_ms(inspect, rounds, 0.5);
        free(lists);
        free(inspect);
}

/* One exit and its restore on pod @p i; false when the exit's SyncPod never came. */
static bool one_sample(struct kc_cri_server *srv, struct node *n, struct pod *pods, size_t i,
                       struct result *res)
{
        struct pod *p = &pods[i];
        int64_t t_real, t0, t_ack;
        char *cmds, *ev = NULL;
        struct watch w;
        bool hit;

        /* The exit. Everything is built before T; T is the write. */
        t_real = real_ns();
        cmds = command_line(
                json_pack("{s:s, s:o}", "cmd", "put_pod", "pod",
                          pod_json(p, "CONTAINER_EXITED", p->created, p->created, t_real, 137)));
        if (n->evented) {
                ev = command_line(json_pack("{s:s, s:s, s:s, s:o, s:s}", "cmd", "event", "type",
                                            "CONTAINER_STOPPED_EVENT", "container", p->container,
                                            "created_at", ns_json(t_real), "pod", p->uid));
                cmds = realloc(cmds, strlen(cmds) + strlen(ev) + 1);
                if (!cmds)
                        die("out of memory");
                strcat(cmds, ev);
        }
        rec_arm(i, p->container, KC_CONTAINER_STATE_EXITED);
        t0 = mono_ns();
        write_all(srv, cmds, strlen(cmds));
        json_decref(server_reply(srv, "put_pod (exit)"));
        if (ev) {
                json_t *r = server_reply(srv, "event (stopped)");

                if (json_integer_value(json_object_get(r, "streams")) != 1)
                        fprintf(stderr,
                                "warning: the STOPPED event reached %" JSON_INTEGER_FORMAT
                                " streams\n",
                                json_integer_value(json_object_get(r, "streams")));
                json_decref(r);
        }
        t_ack = mono_ns();
        free(cmds);
        free(ev);

        hit = rec_wait(i, t0 + SAMPLE_TIMEOUT, &w);
        if (hit) {
                res->lat[res->samples] = w.hit_ns - t0;
                res->ack[res->samples] = t_ack - t0;
                if (w.loop_ns && w.loop_ns <= w.hit_ns) {
                        res->to_loop[res->n_loop] = w.loop_ns - t0;
                        res->loop_to_sync[res->n_loop] = w.hit_ns - w.loop_ns;
                        res->n_loop++;
                }
                res->early += w.early;
                if (!rec_housekeeping_between(t0, w.hit_ns))
                        res->lat_free[res->n_free++] = w.hit_ns - t0;
                res->samples++;
        } else {
                res->lost++;
                fprintf(stderr, "lost: no SyncPod saw %s exited within %" PRId64 " s\n",
                        p->container, SAMPLE_TIMEOUT / SEC);
        }

        /*
         * The restore: running again under a new ID; wait for its SyncPod.
         * First a pause: the worker sets the pod's lastSyncTime only when
         * the exit's SyncPod returns, and a STARTED event stamped before
         * that would wait for the next global cache update (up to 2 s).
         */
        sleep_ns(5 * MSEC);
        p->generation++;
        pod_set_container(p, i);
        t_real = real_ns();
        rec_arm(i, p->container, KC_CONTAINER_STATE_RUNNING);
        t0 = mono_ns();
        server_do(srv, json_pack("{s:s, s:o}", "cmd", "put_pod", "pod",
                                 pod_json(p, "CONTAINER_RUNNING", t_real, t_real, 0, 0)));
        if (n->evented)
                server_do(srv, json_pack("{s:s, s:s, s:s, s:o, s:s}", "cmd", "event", "type",
                                         "CONTAINER_STARTED_EVENT", "container", p->container,
                                         "created_at", ns_json(t_real), "pod", p->uid));
        if (rec_wait(i, mono_ns() + SAMPLE_TIMEOUT, &w))
                res->restore[res->n_restore++] = w.hit_ns - t0;
        else
                fprintf(stderr, "warning: no SyncPod saw %s running again within %" PRId64 " s\n",
                        p->container, SAMPLE_TIMEOUT / SEC);
        return hit;
}

static void run_config(bool evented, size_t n_pods, size_t n_samples, struct result *res)
{
        struct kc_cri_server srv;
        struct node n = { .evented_gate = evented };
        struct pod *pods = calloc(n_pods, sizeof(*pods));
        struct kc_api_pod **api = calloc(n_pods, sizeof(*api));
        size_t *order = calloc(n_pods, sizeof(*order));
        struct kc_pod_update *u;
        json_t *all;
        struct hist_mark m_dur, m_iv, m_ev;
        uint64_t hk_count0;
        int64_t hk_total0;
        int64_t start, now, deadline;
        size_t k, last = SIZE_MAX;

        if (!pods || !api || !order)
                die("out of memory");
        memset(res, 0, sizeof(*res));
        res->evented = evented;
        res->pods = n_pods;
        res->lat = calloc(n_samples, sizeof(int64_t));
        res->to_loop = calloc(n_samples, sizeof(int64_t));
        res->loop_to_sync = calloc(n_samples, sizeof(int64_t));
        res->ack = calloc(n_samples, sizeof(int64_t));
        res->lat_free = calloc(n_samples, sizeof(int64_t));
        res->restore = calloc(n_samples, sizeof(int64_t));
        if (!res->lat || !res->to_loop || !res->loop_to_sync || !res->ack || !res->lat_free ||
            !res->restore)
                die("out of memory");
        rec_init(n_pods);

        fprintf(stderr, "== %s, %zu pods: starting the server and the node\n",
                evented ? "evented" : "generic", n_pods);
        server_start(&srv);
        now = real_ns();
        all = json_array();
        for (size_t i = 0; i < n_pods; i++) {
                struct pod *p = &pods[i];
                const struct kc_api_container c = { .name = "app",
                                                    .image = "localhost/cubelet/busybox:1",
                                                    .image_pull_policy = KC_PULL_IF_NOT_PRESENT };

                snprintf(p->uid, sizeof(p->uid), "lat-%05zu", i);
                snprintf(p->sandbox, sizeof(p->sandbox), "sb-%05zu", i);
                p->created = now;
                pod_set_container(p, i);
                json_array_append_new(all, pod_json(p, "CONTAINER_RUNNING", now, now, 0, 0));
                CHECK(kc_api_pod_new(
                        &(struct kc_api_pod){
                                .uid = p->uid,
                                .name = p->uid,
                                .namespace = NAMESPACE,
                                .source = "api",
                                .creation_ts = now + (int64_t)i,
                                .deletion_grace_s = -1,
                                .termination_grace_s = 30,
                                .phase = KC_POD_PHASE_PENDING,
                                .containers = &c,
                                .n_containers = 1,
                        },
                        &p->api));
                api[i] = p->api;
                order[i] = i;
                rec.w[i].want_st = KC_CONTAINER_STATE_RUNNING;
                snprintf(rec.w[i].want, sizeof(rec.w[i].want), "%s", p->container);
                rec.w[i].armed = true;
        }
        server_do(&srv, json_pack("{s:s, s:o}", "cmd", "set_state", "pods", all));

        node_build(&n, srv.sock);
        node_run(&n);
        /* The pods arrive as one ADD from the "api" source, as at start-up. */
        u = kc_pod_update_new(KC_POD_OP_ADD, "api", api, n_pods);
        if (!u)
                die("out of memory");
        CHECK(kc_chan_push_mp(n.config, u));

        /* Settled: every pod had a SyncPod that saw its container running. */
        deadline = mono_ns() + SETTLE_TIMEOUT;
        pthread_mutex_lock(&rec.lock);
        while (rec.n_settled < n_pods && mono_ns() < deadline) {
                pthread_mutex_unlock(&rec.lock);
                sleep_ns(20 * MSEC);
                pthread_mutex_lock(&rec.lock);
        }
        k = rec.n_settled;
        pthread_mutex_unlock(&rec.lock);
        if (k < n_pods)
                die("only %zu of %zu pods synced with their container running after %" PRId64 " s",
                    k, n_pods, SETTLE_TIMEOUT / SEC);
        if (evented) {
                struct kc_evented_pleg_stats st;

                server_do(&srv, json_pack("{s:s, s:i, s:i}", "cmd", "wait_streams", "count", 1,
                                          "timeout_ms", 30000));
                deadline = mono_ns() + 30 * SEC;
                do {
                        sleep_ns(50 * MSEC);
                        kc_evented_pleg_stats(n.evented, &st);
                } while (!(st.streaming && kc_evented_pleg_in_use(n.evented)) &&
                         mono_ns() < deadline);
                if (!st.streaming)
                        die("EventedPLEG is not streaming");
        }
        measure_runtime(&n, &pods[0], 20, res);
        /* Let the start-up burst (create syncs, first relists) pass. */
        sleep_ns(2 * SEC);
        fprintf(stderr, "== %s, %zu pods: settled; %zu samples\n", evented ? "evented" : "generic",
                n_pods, n_samples);

        /* The relists and events of the sampling window (not the start-up's). */
        m_dur = hist_mark(n.metrics.pleg_relist_duration);
        m_iv = hist_mark(n.metrics.pleg_relist_interval);
        m_ev = hist_mark(n.metrics.evented_pleg_connection_latency);
        pthread_mutex_lock(&rec.lock);
        hk_count0 = rec.hk_count;
        hk_total0 = rec.hk_total;
        pthread_mutex_unlock(&rec.lock);
        start = mono_ns();
        for (size_t s = 0; s < n_samples; s++) {
                int64_t span;
                size_t i;

                /* Pods in a random order, reshuffled per round, never twice in a row. */
                k = s % n_pods;
                if (k == 0) {
                        for (size_t j = n_pods - 1; j > 0; j--) {
                                size_t r = (size_t)rng_below(j + 1), t = order[j];

                                order[j] = order[r];
                                order[r] = t;
                        }
                        if (order[0] == last && n_pods > 1) {
                                size_t t = order[0];

                                order[0] = order[1];
                                order[1] = t;
                        }
                }
                i = order[k];
                last = i;

                /* A uniform delay over the periodic work's cycle. */
                span = EVENTED_DELAY_SPAN;
                if (!evented) {
                        /* The mean interval between relist starts in this window
                         * (period + relist), once a few relists are in it. */
                        double iv = hist_mean_ms(n.metrics.pleg_relist_interval, m_iv);

                        span = kc_histogram_count(n.metrics.pleg_relist_interval) >= m_iv.count + 3
                                       ? (int64_t)(iv * 1e6)
                                       : KC_GENERIC_PLEG_RELIST_PERIOD;
                }
                sleep_ns((int64_t)rng_below((uint64_t)span));
                one_sample(&srv, &n, pods, i, res);
                if ((s + 1) % 50 == 0)
                        fprintf(stderr, "   %zu/%zu samples (%.0f s)\n", s + 1, n_samples,
                                (double)(mono_ns() - start) / 1e9);
        }
        res->seconds = (double)(mono_ns() - start) / 1e9;
        res->relists = kc_histogram_count(n.metrics.pleg_relist_duration) - m_dur.count;
        res->relist_mean_ms = hist_mean_ms(n.metrics.pleg_relist_duration, m_dur);
        res->relist_interval_mean_ms = hist_mean_ms(n.metrics.pleg_relist_interval, m_iv);
        res->event_latency_mean_ms = hist_mean_ms(n.metrics.evented_pleg_connection_latency, m_ev);
        if (n.evented)
                kc_evented_pleg_stats(n.evented, &res->ev);
        pthread_mutex_lock(&rec.lock);
        res->hk_count = rec.hk_count - hk_count0;
        res->hk_mean_ms = res->hk_count
                                  ? (double)(rec.hk_total - hk_total0) / (double)res->hk_count / 1e6
                                  : 0;
        pthread_mutex_unlock(&rec.lock);

        node_teardown(&n);
        server_stop(&srv);
        for (size_t i = 0; i < n_pods; i++)
                kc_api_pod_unref(pods[i].api);
        free(pods);
        free(api);
        free(order);
        rec_done();

        qsort(res->lat, res->samples, sizeof(int64_t), cmp_i64);
        qsort(res->ack, res->samples, sizeof(int64_t), cmp_i64);
        qsort(res->to_loop, res->n_loop, sizeof(int64_t), cmp_i64);
        qsort(res->loop_to_sync, res->n_loop, sizeof(int64_t), cmp_i64);
        qsort(res->lat_free, res->n_free, sizeof(int64_t), cmp_i64);
        qsort(res->restore, res->n_restore, sizeof(int64_t), cmp_i64);
}

static void print_result(const struct result *r)
{
        printf("| %s | %zu | %zu | %zu | %.2f | %.2f | %.2f | %.2f | %.2f | %.3f | %.2f |\n",
               r->evented ? "evented" : "generic 1 s", r->pods, r->samples, r->lost,
               pct_ms(r->lat, r->samples, 0.50), pct_ms(r->lat, r->samples, 0.99),
               pct_ms(r->lat, r->samples, 1.0), mean_ms(r->lat, r->samples),
               pct_ms(r->to_loop, r->n_loop, 0.50), pct_ms(r->loop_to_sync, r->n_loop, 0.50),
               pct_ms(r->loop_to_sync, r->n_loop, 0.99));
}

static void print_detail(const struct result *r)
{
        printf("%s, %zu pods: %zu samples (%zu lost) in %.0f s\n",
               r->evented ? "evented" : "generic", r->pods, r->samples, r->lost, r->seconds);
        printf("  exit → SyncPod     p50 %.2f p99 %.2f max %.2f ms\n",
               pct_ms(r->lat, r->samples, 0.5), pct_ms(r->lat, r->samples, 0.99),
               pct_ms(r->lat, r->samples, 1.0));
        printf("  exit → syncLoop    p50 %.2f p99 %.2f max %.2f ms\n",
               pct_ms(r->to_loop, r->n_loop, 0.5), pct_ms(r->to_loop, r->n_loop, 0.99),
               pct_ms(r->to_loop, r->n_loop, 1.0));
        printf("  syncLoop → SyncPod p50 %.3f p99 %.3f max %.3f ms\n",
               pct_ms(r->loop_to_sync, r->n_loop, 0.5), pct_ms(r->loop_to_sync, r->n_loop, 0.99),
               pct_ms(r->loop_to_sync, r->n_loop, 1.0));
        printf("  no housekeeping run in between: %zu samples, p50 %.2f p99 %.2f max %.2f ms\n",
               r->n_free, pct_ms(r->lat_free, r->n_free, 0.5), pct_ms(r->lat_free, r->n_free, 0.99),
               pct_ms(r->lat_free, r->n_free, 1.0));
        printf("  housekeeping: %" PRIu64 " runs, mean %.2f ms; server ack p50 %.2f p99 %.2f ms; "
               "early SyncPods %" PRIu64 "; restore → SyncPod p50 %.2f max %.2f ms\n",
               r->hk_count, r->hk_mean_ms, pct_ms(r->ack, r->samples, 0.5),
               pct_ms(r->ack, r->samples, 0.99), r->early, pct_ms(r->restore, r->n_restore, 0.5),
               pct_ms(r->restore, r->n_restore, 1.0));
        printf("  relists %" PRIu64 " (mean %.2f ms, interval %.1f ms); raw lists %.2f ms, "
               "GetPodStatus %.2f ms\n",
               r->relists, r->relist_mean_ms, r->relist_interval_mean_ms, r->lists_ms,
               r->inspect_ms);
        if (r->evented)
                printf("  CRI event latency mean %.2f ms; stream connections %" PRIu64
                       " failures %" PRIu64 " fallbacks %" PRIu64 "\n",
                       r->event_latency_mean_ms, r->ev.connections, r->ev.failures,
                       r->ev.fallbacks);
}

static void usage(void)
{
        fprintf(stderr, "usage: bench_pleg_latency [--env FILE] [--quick] [--samples N] "
                        "[--pods N ...] [--mode generic|evented ...] [--seed S] [--keep-logs]\n");
        exit(2);
}

int main(int argc, char **argv)
{
        const char *file = getenv("KC_CRI_SERVER_ENV");
        size_t pods[8], n_pods = 0, samples = 200;
        bool modes[2] = { false, false }, any_mode = false, quick = false;
        struct result res[16];
        size_t n_res = 0;
        uint64_t seed = 1;

        for (int i = 1; i < argc; i++) {
                const char *a = argv[i];
                const char *v = i + 1 < argc ? argv[i + 1] : NULL;

                if (strcmp(a, "--quick") == 0) {
                        quick = true;
                } else if (strcmp(a, "--keep-logs") == 0) {
                        keep_logs = true;
                } else if (!v) {
                        usage();
                } else if (strcmp(a, "--env") == 0) {
                        file = v, i++;
                } else if (strcmp(a, "--samples") == 0) {
                        samples = strtoul(v, NULL, 10), i++;
                } else if (strcmp(a, "--seed") == 0) {
                        seed = strtoull(v, NULL, 10), i++;
                } else if (strcmp(a, "--pods") == 0 && n_pods < KC_ELEMENTSOF(pods)) {
                        pods[n_pods++] = strtoul(v, NULL, 10), i++;
                } else if (strcmp(a, "--mode") == 0 &&
                           (strcmp(v, "generic") == 0 || strcmp(v, "evented") == 0)) {
                        modes[strcmp(v, "evented") == 0] = any_mode = true, i++;
                } else {
                        usage();
                }
        }
        if (quick && samples == 200)
                samples = 20;
        if (samples == 0)
                usage();
        if (n_pods == 0) {
                pods[n_pods++] = 100;
                pods[n_pods++] = 1000;
        }
        if (!any_mode)
                modes[0] = modes[1] = true;
        for (size_t i = 0; i < n_pods; i++)
                if (pods[i] < 2 || pods[i] > 99999)
                        usage();
        if (!file || !*file)
                die("no server: pass --env FILE or set KC_CRI_SERVER_ENV (the file "
                    "tests/integration/cri-server/setup.sh writes); bench/bench_pleg_latency.sh "
                    "does both");
        if (kc_cri_server_env_load(file, &env) < 0)
                die("%s does not describe an installed CRI server", file);

        signal(SIGPIPE, SIG_IGN);
        setvbuf(stdout, NULL, _IOLBF, 0);
        rng_state = seed;
        for (int m = 0; m < 2; m++) {
                if (!modes[m])
                        continue;
                for (size_t i = 0; i < n_pods; i++) {
                        run_config(m == 1, pods[i], samples, &res[n_res]);
                        print_detail(&res[n_res]);
                        n_res++;
                }
        }

        printf("\n| PLEG | pods | samples | lost | p50 ms | p99 ms | max ms | mean ms | exit → "
               "syncLoop p50 ms | syncLoop → SyncPod p50 ms | syncLoop → SyncPod p99 ms |\n");
        printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (size_t i = 0; i < n_res; i++)
                print_result(&res[i]);
        for (size_t i = 0; i < n_res; i++) {
                free(res[i].lat);
                free(res[i].to_loop);
                free(res[i].loop_to_sync);
                free(res[i].ack);
                free(res[i].lat_free);
                free(res[i].restore);
        }
        return 0;
}
