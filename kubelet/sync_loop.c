/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncLoop (upstream pkg/kubelet/kubelet.go: syncLoop, syncLoopIteration,
 * syncLoopMonitor, SyncLoopHealthCheck), UPSTREAM.md §6.
 *
 * One thread (the caller of kc_sync_loop_run) owns the loop. Go's select over
 * channels becomes one epoll set over the channels' eventfds, two kc_timers
 * on the injected clock (sync every 1 s, housekeeping every 2 s) and a stop
 * eventfd. Go picks among ready cases at random; this loop serves one ready
 * source per iteration and rotates the starting source, so a busy source
 * (a PLEG storm) never starves the others.
 *
 * While runtimeErrors() reports a problem the loop reads nothing and sleeps
 * on the clock, 100 ms doubling to 5 s; producers meanwhile see full
 * channels and apply their own policy (PLEG counts the drop and owes the
 * pod a PodSync): nothing blocks, which is what upstream issue #72482 was
 * about. kc_sync_loop_backing_off() says when the loop is in that back-off,
 * for checks whose failure the back-off itself causes (a full PLEG channel:
 * the loop is its only reader); kc_sync_loop_evented_pleg_healthy() is
 * EventedPLEG's check with that exception.
 */
#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "core/cancel.h"
#include "core/chan.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/duration.h"
#include "core/log.h"
#include "core/timer.h"
#include "health/runtime_state.h"
#include "kubelet/config/pod_update.h"
#include "kubelet/kubelet.h"
#include "kubelet/prober/results_manager.h"
#include "kubelet/status/status_manager.h"
#include "kubelet/sync_loop.h"
#include "pleg/event.h"
#include "pleg/evented.h"
#include "runtime/api_pod.h"

/* Sources in their rotation order. */
enum source {
        SRC_CONFIG,
        SRC_PLEG,
        SRC_PROBES,
        SRC_SYNC_TICK,
        SRC_HOUSEKEEPING_TICK,
        _SRC_MAX,
        SRC_STOP = _SRC_MAX,
        _SRC_ALL,
};

/* A lost-wakeup net for the epoll wait (real time; nothing polls on it). */
#define EPOLL_NET_MS 1000

struct kc_sync_loop {
        struct kc_sync_loop_config cfg;
        char **sources;    /* copies of cfg.sources */
        bool *source_seen; /* sourcesReady */
        int epfd;
        int stop_fd;
        int signal_fd; /* -1 without stop signals; read by signal_thread only */
        pthread_t signal_thread;
        struct kc_cancel *stop;
        struct kc_timer *timers[2]; /* sync, housekeeping */
        int64_t deadlines[2];
        unsigned rotate;
        atomic_bool running;
        atomic_bool stopping;
        /* syncLoopMonitor: the last loop entry, read by the health check. */
        _Atomic int64_t last_entry;
        /* In the runtimeErrors back-off: reading nothing (kc_sync_loop_backing_off()). */
        atomic_bool backing_off;
};

/* ------------------------------------------------------------------------ */
/* Lifecycle                                                                  */

static int epoll_add(int epfd, int fd, uint32_t tag)
{
        struct epoll_event ev = { .events = EPOLLIN, .data.u32 = tag };

        return KC_NERRNO(epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev));
}

int kc_sync_loop_new(const struct kc_sync_loop_config *cfg, struct kc_sync_loop **ret)
{
        struct kc_sync_loop *l;
        size_t i;
        int r;

        if (!cfg || !ret || !cfg->clock || !cfg->config || !cfg->pleg || !cfg->runtime_state ||
            !cfg->handler)
                return -EINVAL;
        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        l->cfg = *cfg;
        l->epfd = l->stop_fd = l->signal_fd = -1;
        if (l->cfg.resync_interval_ns <= 0)
                l->cfg.resync_interval_ns = 60 * KC_NSEC_PER_SEC;

        r = -ENOMEM;
        l->sources = calloc(cfg->n_sources + 1, sizeof(*l->sources));
        l->source_seen = calloc(cfg->n_sources + 1, sizeof(*l->source_seen));
        if (!l->sources || !l->source_seen)
                goto fail;
        for (i = 0; i < cfg->n_sources; i++)
                if (!(l->sources[i] = strdup(cfg->sources[i])))
                        goto fail;
        l->cfg.sources = NULL; /* only the copies are used */

        if ((r = kc_cancel_new(&l->stop)) < 0 ||
            (r = kc_timer_new(cfg->clock, &l->timers[0])) < 0 ||
            (r = kc_timer_new(cfg->clock, &l->timers[1])) < 0)
                goto fail;
        l->epfd = epoll_create1(EPOLL_CLOEXEC);
        l->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (l->epfd < 0 || l->stop_fd < 0) {
                r = -errno;
                goto fail;
        }
        if ((r = epoll_add(l->epfd, kc_chan_fd(cfg->config), SRC_CONFIG)) < 0 ||
            (r = epoll_add(l->epfd, kc_chan_fd(cfg->pleg), SRC_PLEG)) < 0 ||
            (cfg->probes && (r = epoll_add(l->epfd, kc_chan_fd(cfg->probes), SRC_PROBES)) < 0) ||
            (r = epoll_add(l->epfd, kc_timer_fd(l->timers[0]), SRC_SYNC_TICK)) < 0 ||
            (r = epoll_add(l->epfd, kc_timer_fd(l->timers[1]), SRC_HOUSEKEEPING_TICK)) < 0 ||
            (r = epoll_add(l->epfd, l->stop_fd, SRC_STOP)) < 0)
                goto fail;
        if (cfg->stop_signals) {
                l->signal_fd = signalfd(-1, cfg->stop_signals, SFD_CLOEXEC | SFD_NONBLOCK);
                if (l->signal_fd < 0) {
                        r = -errno;
                        goto fail;
                }
        }
        l->cfg.stop_signals = NULL; /* the signalfd carries them */
        *ret = l;
        return 0;
fail:
        kc_sync_loop_free(l);
        return r;
}

struct kc_sync_loop *kc_sync_loop_free(struct kc_sync_loop *l)
{
        size_t i;

        if (!l)
                return NULL;
        for (i = 0; l->sources && i < l->cfg.n_sources; i++)
                free(l->sources[i]);
        free(l->sources);
        free(l->source_seen);
        kc_timer_free(l->timers[0]);
        kc_timer_free(l->timers[1]);
        kc_cancel_free(l->stop);
        if (l->epfd >= 0)
                close(l->epfd);
        if (l->stop_fd >= 0)
                close(l->stop_fd);
        if (l->signal_fd >= 0)
                close(l->signal_fd);
        free(l);
        return NULL;
}

void kc_sync_loop_stop_mp(struct kc_sync_loop *l)
{
        uint64_t one = 1;

        atomic_store_explicit(&l->stopping, true, memory_order_release);
        kc_cancel_trigger_mp(l->stop);               /* a backoff sleep */
        (void)!write(l->stop_fd, &one, sizeof(one)); /* an epoll wait */
}

bool kc_sync_loop_healthy(struct kc_sync_loop *l, char **ret_err)
{
        int64_t entry = atomic_load_explicit(&l->last_entry, memory_order_relaxed);
        int64_t limit = 2 * l->cfg.resync_interval_ns;

        if (limit < 5 * KC_NSEC_PER_MIN)
                limit = 5 * KC_NSEC_PER_MIN;
        /* Before the first iteration there is nothing to judge (upstream: zero time). */
        if (entry != 0 && kc_clock_now(l->cfg.clock) > entry + limit) {
                if (ret_err)
                        *ret_err = strdup("sync Loop took longer than expected");
                return false;
        }
        if (ret_err)
                *ret_err = NULL;
        return true;
}

bool kc_sync_loop_backing_off(struct kc_sync_loop *l)
{
        /* Relaxed: a snapshot for a health check, which tolerates a stale answer. */
        return atomic_load_explicit(&l->backing_off, memory_order_relaxed);
}

bool kc_sync_loop_evented_pleg_healthy(struct kc_sync_loop *l, struct kc_evented_pleg *e,
                                       char **ret_err)
{
        /* A full channel is then the back-off's effect, not a cause. */
        if (l && kc_sync_loop_backing_off(l)) {
                if (ret_err)
                        *ret_err = NULL;
                return true;
        }
        return kc_evented_pleg_healthy(e, ret_err);
}

/*
 * The stop signals' reader, on a thread of its own: a signal stops the loop
 * as kc_sync_loop_stop_mp() does, which also ends a runtime-error backoff
 * sleep (up to 5 s) at once. Read on the loop's own thread, a signal waited
 * for the end of that sleep. Ends once stop_fd is written (it is never
 * drained): by a stop, or by kc_sync_loop_run() on its way out.
 */
static void *signal_loop(void *arg)
{
        struct kc_sync_loop *l = arg;
        struct pollfd pfd[2] = {
                { .fd = l->signal_fd, .events = POLLIN },
                { .fd = l->stop_fd, .events = POLLIN },
        };
        struct signalfd_siginfo si;

        for (;;) {
                if (poll(pfd, KC_ELEMENTSOF(pfd), -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        kc_log_errno_s(-errno, "Cannot wait for stop signals");
                        break;
                }
                if (pfd[1].revents)
                        break;
                if (read(l->signal_fd, &si, sizeof(si)) != sizeof(si))
                        continue;
                kc_log_info_s("Received signal, shutting down the sync loop",
                              KC_KV_STR("signal", strsignal((int)si.ssi_signo)));
                kc_sync_loop_stop_mp(l);
                break;
        }
        return NULL;
}

/* ------------------------------------------------------------------------ */
/* One iteration                                                              */

/* sourcesReady.AddSource, and AllReady. */
static void source_seen(struct kc_sync_loop *l, const char *source)
{
        size_t i;

        for (i = 0; source && i < l->cfg.n_sources; i++)
                if (strcmp(l->sources[i], source) == 0)
                        l->source_seen[i] = true;
}

bool kc_sync_loop_sources_ready(const struct kc_sync_loop *l)
{
        size_t i;

        for (i = 0; i < l->cfg.n_sources; i++)
                if (!l->source_seen[i])
                        return false;
        return true;
}

/* klog.KObjSlice over a struct kc_api_pod * array. */
static void api_pod_ref(const void *array, size_t i, const char **ret_ns, const char **ret_name)
{
        struct kc_api_pod *const *pods = array;

        *ret_ns = pods[i]->namespace;
        *ret_name = pods[i]->name;
}

static const char *sync_loop_op_message(enum kc_pod_op op)
{
        static const char *const msg[_KC_POD_OP_MAX] = {
                [KC_POD_OP_SET] = "SyncLoop SET",
                [KC_POD_OP_ADD] = "SyncLoop ADD",
                [KC_POD_OP_DELETE] = "SyncLoop DELETE",
                [KC_POD_OP_REMOVE] = "SyncLoop REMOVE",
                [KC_POD_OP_UPDATE] = "SyncLoop UPDATE",
                [KC_POD_OP_RECONCILE] = "SyncLoop RECONCILE",
        };

        return (unsigned)op < _KC_POD_OP_MAX ? msg[op] : "SyncLoop (unknown operation)";
}

static void serve_config(struct kc_sync_loop *l)
{
        const struct kc_sync_handler_ops *h = l->cfg.handler;
        void *ud = l->cfg.handler_userdata;
        struct kc_pod_update *u;
        void *item;

        if (kc_chan_pop_sc(l->cfg.config, &item, 0) < 0)
                return;
        u = item;
        kc_log_v_s(2, sync_loop_op_message(u->op), KC_KV_STR("source", u->source),
                   KC_KV_REFS("pods", u->pods, u->n_pods, api_pod_ref));
        switch (u->op) {
        case KC_POD_OP_ADD:
                h->handle_pod_additions(ud, u->pods, u->n_pods);
                break;
        case KC_POD_OP_UPDATE:
        case KC_POD_OP_DELETE: /* graceful deletion is an update */
                h->handle_pod_updates(ud, u->pods, u->n_pods);
                break;
        case KC_POD_OP_REMOVE:
                h->handle_pod_removes(ud, u->pods, u->n_pods);
                break;
        case KC_POD_OP_RECONCILE:
                h->handle_pod_reconcile(ud, u->pods, u->n_pods);
                break;
        case KC_POD_OP_SET:
                kc_log_error_s(NULL, "Kubelet does not support snapshot update");
                break;
        default:
                kc_log_error_s(NULL, "Invalid operation type received",
                               KC_KV_INT("operation", (int)u->op));
                break;
        }
        source_seen(l, u->source);
        kc_pod_update_free(u);
}

static void sync_one(struct kc_sync_loop *l, const char *uid, const char *why)
{
        const struct kc_sync_handler_ops *h = l->cfg.handler;
        struct kc_api_pod *pod = h->get_pod_by_uid(l->cfg.handler_userdata, uid);

        if (!pod) {
                /* Orphans are driven by housekeeping, not here. */
                kc_log_v_s(4, "SyncLoop: pod does not exist, ignore irrelevant event",
                           KC_KV_STR("source", why), KC_KV_STR("podUID", uid));
                return;
        }
        h->handle_pod_syncs(l->cfg.handler_userdata, &pod, 1);
        kc_api_pod_unref(pod);
}

/* "SyncLoop (PLEG): event for pod" with the event as klog prints the struct. */
static void log_pleg_event(const struct kc_pleg_event *e)
{
        const char *t = kc_pleg_event_type_to_string(e->type) ?: "";
        char id[256], type[64], data[256], ev[600];

        if (kc_log_get_verbosity() < 2)
                return;
        kc_log_quote(id, sizeof(id), e->pod_id, strlen(e->pod_id));
        kc_log_quote(type, sizeof(type), t, strlen(t));
        kc_log_quote(data, sizeof(data), e->data, strlen(e->data));
        snprintf(ev, sizeof(ev), "{\"ID\":%s,\"Type\":%s,\"Data\":%s}", id, type, data);
        kc_log_info_s("SyncLoop (PLEG): event for pod", KC_KV_STR("podUID", e->pod_id),
                      KC_KV_RAW("event", ev));
}

static void serve_pleg(struct kc_sync_loop *l)
{
        struct kc_pleg_event *e;
        void *item;

        if (kc_chan_pop_sc(l->cfg.pleg, &item, 0) < 0)
                return;
        e = item;
        log_pleg_event(e);
        /* isSyncPodWorthy: everything but ContainerRemoved. */
        if (e->type != KC_PLEG_CONTAINER_REMOVED)
                sync_one(l, e->pod_id, "PLEG");
        /* Independently, and even for pods the pod manager does not know. */
        if (e->type == KC_PLEG_CONTAINER_DIED && e->data[0])
                l->cfg.handler->clean_up_containers_in_pod(l->cfg.handler_userdata, e->pod_id,
                                                           e->data);
        kc_pleg_event_free(e);
}

/*
 * A probe result (syncLoopIteration's three prober cases): a liveness
 * failure syncs the pod; a readiness or startup change first goes into the
 * status manager (SetContainerReadiness/SetContainerStartup), then syncs
 * the pod (handleProbeSync).
 */
static void handle_probe_update(struct kc_sync_loop *l, const struct kc_probe_update *u)
{
        static const char *const probe_names[] = {
                [KC_PROBE_LIVENESS] = "liveness",
                [KC_PROBE_READINESS] = "readiness",
                [KC_PROBE_STARTUP] = "startup",
        };
        const struct kc_sync_handler_ops *h = l->cfg.handler;
        bool success = u->result == KC_PROBE_SUCCESS;
        _cleanup_(kc_api_pod_unrefp) struct kc_api_pod *pod = NULL;
        const char *status;

        if (u->type < 0 || u->type >= _KC_PROBE_TYPE_MAX)
                return;
        if (u->type == KC_PROBE_LIVENESS && u->result != KC_PROBE_FAILURE)
                return;
        pod = h->get_pod_by_uid(l->cfg.handler_userdata, u->pod_uid);
        switch (u->type) {
        case KC_PROBE_READINESS:
                status = success ? "ready" : "not ready";
                if (pod && l->cfg.status_manager)
                        (void)kc_status_manager_set_container_readiness(l->cfg.status_manager, pod,
                                                                        u->container_id, success,
                                                                        kc_clock_now(l->cfg.clock));
                break;
        case KC_PROBE_STARTUP:
                status = success ? "started" : "unhealthy";
                if (pod && l->cfg.status_manager)
                        (void)kc_status_manager_set_container_startup(l->cfg.status_manager, pod,
                                                                      u->container_id, success);
                break;
        default:
                status = "unhealthy";
                break;
        }
        if (!pod) {
                kc_log_v_s(4, "SyncLoop (probe): ignore irrelevant update",
                           KC_KV_STR("probe", probe_names[u->type]), KC_KV_STR("status", status),
                           KC_KV_STR("podUID", u->pod_uid),
                           KC_KV_STR("containerID", u->container_id));
                return;
        }
        kc_log_v_s(1, "SyncLoop (probe)", KC_KV_STR("probe", probe_names[u->type]),
                   KC_KV_STR("status", status), KC_KV_POD(pod->namespace, pod->name));
        h->handle_pod_syncs(l->cfg.handler_userdata, &pod, 1);
}

static void serve_probe(struct kc_sync_loop *l)
{
        void *item;

        if (kc_chan_pop_sc(l->cfg.probes, &item, 0) < 0)
                return;
        handle_probe_update(l, item);
        kc_probe_update_free(item);
}

/* Go's ticker: the next tick a period after the last one, skipping missed ones. */
static void rearm(struct kc_sync_loop *l, size_t i, int64_t period)
{
        int64_t now = kc_clock_now(l->cfg.clock);

        l->deadlines[i] += period;
        if (l->deadlines[i] <= now)
                l->deadlines[i] = now + period;
        (void)kc_timer_arm(l->timers[i], l->deadlines[i]);
}

static void serve_sync_tick(struct kc_sync_loop *l)
{
        const struct kc_sync_handler_ops *h = l->cfg.handler;
        struct kc_api_pod **pods = NULL;
        size_t n, i;

        kc_timer_ack(l->timers[0]);
        rearm(l, 0, KC_SYNC_LOOP_SYNC_PERIOD);
        n = h->get_pods_to_sync(l->cfg.handler_userdata, &pods);
        if (n > 0) {
                kc_log_v_s(4, "SyncLoop (SYNC) pods", KC_KV_REFS("pods", pods, n, api_pod_ref));
                h->handle_pod_syncs(l->cfg.handler_userdata, pods, n);
        }
        for (i = 0; i < n; i++)
                kc_api_pod_unref(pods[i]);
        free(pods);
}

static void serve_housekeeping_tick(struct kc_sync_loop *l)
{
        int64_t start, d;

        kc_timer_ack(l->timers[1]);
        rearm(l, 1, KC_SYNC_LOOP_HOUSEKEEPING_PERIOD);
        if (!kc_sync_loop_sources_ready(l)) {
                kc_log_v_s(4, "SyncLoop (housekeeping, skipped): sources aren't ready yet");
                return;
        }
        start = kc_clock_now(l->cfg.clock);
        l->cfg.handler->handle_pod_cleanups(l->cfg.handler_userdata);
        d = kc_clock_now(l->cfg.clock) - start;
        if (d > KC_SYNC_LOOP_HOUSEKEEPING_WARNING)
                kc_log_error_s(NULL, "Housekeeping took longer than expected",
                               KC_KV_STR("expected", "1s"), KC_KV_DURATION("actual", d));
}

/* Which sources are ready, without sleeping when any already is. */
static bool wait_ready(struct kc_sync_loop *l, bool ready[_SRC_ALL])
{
        struct epoll_event evs[_SRC_ALL];
        bool any = false;
        int n, i;

        memset(ready, 0, sizeof(bool) * _SRC_ALL);
        /* Channels: items already queued, or arm the wakeup before sleeping. */
        ready[SRC_CONFIG] = kc_chan_prepare_wait_sc(l->cfg.config);
        ready[SRC_PLEG] = kc_chan_prepare_wait_sc(l->cfg.pleg);
        ready[SRC_PROBES] = l->cfg.probes && kc_chan_prepare_wait_sc(l->cfg.probes);
        any = ready[SRC_CONFIG] || ready[SRC_PLEG] || ready[SRC_PROBES];

        n = epoll_wait(l->epfd, evs, KC_ELEMENTSOF(evs), any ? 0 : EPOLL_NET_MS);
        for (i = 0; i < n; i++) {
                uint32_t src = evs[i].data.u32;

                /* Channel fds only say "look again"; their length is the truth. */
                if (src == SRC_SYNC_TICK || src == SRC_HOUSEKEEPING_TICK || src == SRC_STOP)
                        ready[src] = true;
        }
        if (!any) {
                ready[SRC_CONFIG] = kc_chan_len(l->cfg.config) > 0;
                ready[SRC_PLEG] = kc_chan_len(l->cfg.pleg) > 0;
                ready[SRC_PROBES] = l->cfg.probes && kc_chan_len(l->cfg.probes) > 0;
        }
        if (atomic_load_explicit(&l->stopping, memory_order_acquire))
                ready[SRC_STOP] = true;
        for (i = 0; i <= SRC_STOP; i++)
                any = any || ready[i];
        return any;
}

/* syncLoopIteration: false when the loop must end. */
static bool sync_loop_iteration(struct kc_sync_loop *l)
{
        bool ready[_SRC_ALL];
        unsigned k;

        while (!wait_ready(l, ready))
                ;
        if (ready[SRC_STOP])
                return false;
        /* Serve one ready source, starting after the one served last. */
        for (k = 0; k < _SRC_MAX; k++) {
                unsigned src = (l->rotate + k) % _SRC_MAX;

                if (!ready[src])
                        continue;
                l->rotate = src + 1;
                switch (src) {
                case SRC_CONFIG:
                        serve_config(l);
                        break;
                case SRC_PLEG:
                        serve_pleg(l);
                        break;
                case SRC_PROBES:
                        serve_probe(l);
                        break;
                case SRC_SYNC_TICK:
                        serve_sync_tick(l);
                        break;
                case SRC_HOUSEKEEPING_TICK:
                        serve_housekeeping_tick(l);
                        break;
                }
                break;
        }
        return true;
}

/* ------------------------------------------------------------------------ */
/* The loop                                                                   */

int kc_sync_loop_run(struct kc_sync_loop *l)
{
        int64_t duration = KC_SYNC_LOOP_BACKOFF_BASE, now;
        bool expected = false;
        char *err = NULL;
        int r;

        if (!atomic_compare_exchange_strong(&l->running, &expected, true))
                return -EBUSY;
        if (l->signal_fd >= 0) {
                r = -pthread_create(&l->signal_thread, NULL, signal_loop, l);
                if (r < 0) {
                        atomic_store(&l->running, false);
                        return r;
                }
        }
        kc_log_info_s("Starting kubelet main sync loop");
        now = kc_clock_now(l->cfg.clock);
        l->deadlines[0] = now + KC_SYNC_LOOP_SYNC_PERIOD;
        l->deadlines[1] = now + KC_SYNC_LOOP_HOUSEKEEPING_PERIOD;
        (void)kc_timer_arm(l->timers[0], l->deadlines[0]);
        (void)kc_timer_arm(l->timers[1], l->deadlines[1]);

        while (!atomic_load_explicit(&l->stopping, memory_order_acquire)) {
                r = kc_runtime_state_runtime_errors(l->cfg.runtime_state, &err);
                if (r == 0 && err) {
                        atomic_store_explicit(&l->backing_off, true, memory_order_relaxed);
                        kc_log_error_s(err, "Skipping pod synchronization");
                        err = (free(err), NULL);
                        /* Read nothing: producers see full channels, never a blocked send. */
                        if (kc_clock_sleep(l->cfg.clock, duration, l->stop) < 0)
                                break;
                        duration = duration * 2 > KC_SYNC_LOOP_BACKOFF_MAX
                                           ? KC_SYNC_LOOP_BACKOFF_MAX
                                           : duration * 2;
                        continue;
                }
                duration = KC_SYNC_LOOP_BACKOFF_BASE;
                atomic_store_explicit(&l->backing_off, false, memory_order_relaxed);
                atomic_store_explicit(&l->last_entry, kc_clock_now(l->cfg.clock),
                                      memory_order_relaxed);
                if (!sync_loop_iteration(l))
                        break;
                atomic_store_explicit(&l->last_entry, kc_clock_now(l->cfg.clock),
                                      memory_order_relaxed);
        }
        kc_timer_disarm(l->timers[0]);
        kc_timer_disarm(l->timers[1]);
        if (l->signal_fd >= 0) {
                kc_sync_loop_stop_mp(l); /* ends signal_loop when nothing else did */
                pthread_join(l->signal_thread, NULL);
        }
        atomic_store(&l->running, false);
        return 0;
}
