/* SPDX-License-Identifier: Apache-2.0 */
/*
 * EventedPLEG (upstream pkg/kubelet/pleg/evented.go, E1/E2 design),
 * following UPSTREAM.md §4. It wraps a GenericPLEG: both write the same pod
 * status cache and send into the same event channel.
 *
 * Threads, all started by kc_evented_pleg_start() and joined by
 * kc_evented_pleg_stop():
 *
 *   stream    opens the CRI event stream through cfg->source, waits until it
 *             ends, counts failures, forces generic relists, backs off, falls
 *             back to relisting and re-probes (see stream_loop()).
 *   consumer  takes the events the stream delivered out of the internal
 *             buffer and runs kc_evented_pleg_process_event() on each (in
 *             use or not: events flow only while a stream is connected, and
 *             a probe's first event is what switches EventedPLEG back on).
 *   cache     updateGlobalCache: stamps the cache's global time every
 *             cache_update_period while EventedPLEG is in use, and flushes
 *             the PodSyncs owed for dropped PLEG events (below).
 *
 * The source's callbacks run on the source's own I/O thread and must never
 * block: on_event deep-copies the event into the internal buffer (a kc_chan
 * of KC_PLEG_CHANNEL_CAPACITY) and on_close wakes the stream thread. When the
 * buffer is full the event is dropped, counted and logged, and the consumer
 * is asked to force a generic relist, which re-reads the runtime
 * (docs/deviations.md D14).
 *
 * A PLEG event that does not fit the full PLEG channel is dropped, counted in
 * kubelet_pleg_discard_events and logged, as upstream, and its pod is owed a
 * PodSync in the generic PLEG's list (kc_generic_pleg_owe_sync_mp(), D1).
 * That list is flushed, once the channel has room, by the next relist, by
 * the next processed event (before its own PLEG events) and by the cache
 * thread's tick, whichever comes first.
 *
 * The stream thread stops, updates and starts the generic PLEG on a fallback
 * and on a switch back: stop EventedPLEG before the generic PLEG.
 *
 * When a stream counts as connected. A gRPC server that refuses the call
 * (containerd 1.6 answers GetContainerEvents with UNIMPLEMENTED) still lets
 * the client open the stream; the refusal arrives a moment later as its end.
 * Counting such an opening as a connection would reset the failure count on
 * every attempt and the fallback would never come. So a stream is connected
 * once it delivered an event or stayed open for KC_EVENTED_STREAM_SETTLE; a
 * stream that ends before either is a failed attempt.
 *
 * Deliberate differences from upstream (docs/deviations.md):
 *   D1   a PLEG event dropped on the full channel owes its pod a PodSync;
 *   D12  after the fallback the stream is re-probed every reprobe period and
 *        EventedPLEG switches back when a probe connects (upstream: the
 *        fallback lasts until kubelet restarts);
 *   D13  retries back off (250 ms doubling to 30 s) and a connection resets
 *        the failure count (upstream: immediate retries, never reset);
 *   D14  the internal buffer drops instead of blocking the CRI I/O thread.
 *
 * Locking: run_lock serialises start/stop. lock guards the stream state and
 * the statistics; it is never held while calling the source, the generic
 * PLEG or the cache. process_lock serialises kc_evented_pleg_process_event()
 * (the consumer thread and direct callers) so that the cache read, the
 * metric deltas and the cache write of one event are not interleaved with
 * another's. Owing and flushing PodSyncs take the generic PLEG's list lock
 * inside process_lock; that lock is innermost (it never waits for a relist).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/arena.h"
#include "core/cancel.h"
#include "core/chan.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/format.h"
#include "core/lock.h"
#include "core/log.h"
#include "internal.h"
#include "metrics/kubelet_metrics.h"
#include "metrics/registry.h"
#include "pleg/event.h"
#include "pleg/evented.h"
#include "pleg/generic.h"
#include "runtime/cache.h"
#include "runtime/container.h"
#include "runtime/cri.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"

/* One buffered event: the copy and the arena that holds it. */
struct buffered_event {
        struct kc_arena *arena;
        struct kc_container_event ev;
};

/* How the stream thread's attempt ended. */
enum attempt_result {
        ATTEMPT_STOPPED,   /* kc_evented_pleg_stop() ended it */
        ATTEMPT_FAILED,    /* could not be opened, or ended before it connected */
        ATTEMPT_CONNECTED, /* connected, then ended */
};

struct kc_evented_pleg {
        struct kc_generic_pleg *generic;
        struct kc_container_event_source source;
        struct kc_chan *events;
        struct kc_pod_cache *cache;
        struct kc_clock *clock;
        struct kc_kubelet_metrics *metrics;
        int64_t cache_update_period;
        int64_t reprobe_period;
        int64_t fallback_period;
        int64_t fallback_threshold;

        /*
         * isEventedPLEGInUse. Release stores (start, fallback, switch back,
         * stop) pair with the acquire loads in kc_evented_pleg_in_use(): a
         * reader that sees "in use" also sees the generic durations set
         * before it was raised.
         */
        atomic_bool in_use;

        /* The internal buffer: the source's I/O thread produces, the consumer consumes. */
        struct kc_chan *buffer;
        /* Wakes the consumer for a stop or an owed relist (EFD_NONBLOCK). */
        int wake_fd;
        atomic_bool consumer_stop;
        /* A buffered event was dropped: the consumer forces a generic relist. */
        atomic_bool relist_owed;
        atomic_uint_fast64_t dropped;
        /* The clock when kc_evented_pleg_start() began (0: never started). */
        _Atomic int64_t started_at;
        /* Events older than the last relist, ignored (stale_event()). */
        atomic_uint_fast64_t stale;
        /* The stream in progress delivered an event (first one wakes the stream thread). */
        atomic_bool event_seen;

        pthread_mutex_t process_lock;
        /* Under process_lock: the container states update_running_metrics() exported. */
        bool state_counted[_KC_CONTAINER_STATE_MAX];

        pthread_mutex_t run_lock; /* start/stop */
        bool running;
        pthread_t stream_thread, consumer_thread, cache_thread;
        struct kc_cancel *stop; /* sleeps of the stream and cache threads */

        pthread_mutex_t lock;
        pthread_cond_t cond; /* the stream ended, or stopping */
        bool stopping;       /* under lock */
        bool stream_closed;  /* under lock: on_close ran for this stream */
        int close_r;         /* under lock */
        char close_msg[KC_RUNTIME_ERROR_MAX];
        struct kc_cancel *attempt;          /* under lock: ends the settle wait */
        bool fallen_back;                   /* under lock; the stream thread writes it */
        struct kc_evented_pleg_stats stats; /* under lock, except .dropped */
};

/* ------------------------------------------------------------------------ */
/* Deep copies of events (the source's pointers live during on_event only)    */

static int dup_str(struct kc_arena *a, const char *s, const char **ret)
{
        char *d;

        if (!s) {
                *ret = NULL;
                return 0;
        }
        d = kc_arena_strdup(a, s);
        if (!d)
                return -ENOMEM;
        *ret = d;
        return 0;
}

static int dup_labels(struct kc_arena *a, const struct kc_label *l, size_t n,
                      const struct kc_label **ret)
{
        struct kc_label *d;
        size_t i;

        *ret = NULL;
        if (n == 0)
                return 0;
        d = kc_arena_alloc(a, n * sizeof(*d));
        if (!d)
                return -ENOMEM;
        for (i = 0; i < n; i++)
                if (dup_str(a, l[i].key, &d[i].key) < 0 || dup_str(a, l[i].value, &d[i].value) < 0)
                        return -ENOMEM;
        *ret = d;
        return 0;
}

static int dup_sandbox(struct kc_arena *a, const struct kc_pod_sandbox *s,
                       const struct kc_pod_sandbox **ret)
{
        struct kc_pod_sandbox *d = kc_arena_alloc(a, sizeof(*d));
        const char **ips = NULL;
        size_t i;

        if (!d)
                return -ENOMEM;
        *d = *s;
        if (s->n_additional_ips > 0) {
                ips = kc_arena_alloc(a, s->n_additional_ips * sizeof(*ips));
                if (!ips)
                        return -ENOMEM;
                for (i = 0; i < s->n_additional_ips; i++)
                        if (dup_str(a, s->additional_ips[i], &ips[i]) < 0)
                                return -ENOMEM;
        }
        d->additional_ips = ips;
        if (dup_str(a, s->id, &d->id) < 0 || dup_str(a, s->metadata.name, &d->metadata.name) < 0 ||
            dup_str(a, s->metadata.uid, &d->metadata.uid) < 0 ||
            dup_str(a, s->metadata.namespace, &d->metadata.namespace) < 0 ||
            dup_str(a, s->ip, &d->ip) < 0 ||
            dup_labels(a, s->labels, s->n_labels, &d->labels) < 0 ||
            dup_labels(a, s->annotations, s->n_annotations, &d->annotations) < 0)
                return -ENOMEM;
        *ret = d;
        return 0;
}

static int dup_container(struct kc_arena *a, const struct kc_cri_container *s,
                         struct kc_cri_container *d)
{
        *d = *s;
        if (dup_str(a, s->id, &d->id) < 0 ||
            dup_str(a, s->pod_sandbox_id, &d->pod_sandbox_id) < 0 ||
            dup_str(a, s->metadata.name, &d->metadata.name) < 0 ||
            dup_str(a, s->image, &d->image) < 0 || dup_str(a, s->image_ref, &d->image_ref) < 0 ||
            dup_str(a, s->reason, &d->reason) < 0 || dup_str(a, s->message, &d->message) < 0 ||
            dup_labels(a, s->labels, s->n_labels, &d->labels) < 0 ||
            dup_labels(a, s->annotations, s->n_annotations, &d->annotations) < 0)
                return -ENOMEM;
        return 0;
}

static void buffered_event_free(void *p)
{
        struct buffered_event *b = p;

        if (b)
                kc_arena_free(b->arena); /* b lives in its own arena */
}

/* One allocation chain holding a deep copy of @p ev. NULL on ENOMEM. */
static struct buffered_event *buffered_event_new(const struct kc_container_event *ev)
{
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        struct kc_cri_container *cs = NULL;
        struct buffered_event *b;
        size_t i;

        if (kc_arena_new(&a) < 0)
                return NULL;
        b = kc_arena_alloc(a, sizeof(*b));
        if (!b)
                return NULL;
        b->ev = *ev;
        b->ev.sandbox = NULL;
        if (ev->sandbox && dup_sandbox(a, ev->sandbox, &b->ev.sandbox) < 0)
                return NULL;
        if (ev->n_containers > 0) {
                cs = kc_arena_alloc(a, ev->n_containers * sizeof(*cs));
                if (!cs)
                        return NULL;
                for (i = 0; i < ev->n_containers; i++)
                        if (dup_container(a, &ev->containers[i], &cs[i]) < 0)
                                return NULL;
        }
        b->ev.containers = cs;
        if (dup_str(a, ev->container_id, &b->ev.container_id) < 0 ||
            dup_str(a, ev->pod_sandbox_id, &b->ev.pod_sandbox_id) < 0 ||
            dup_str(a, ev->pod_uid, &b->ev.pod_uid) < 0 ||
            dup_str(a, ev->pod_name, &b->ev.pod_name) < 0 ||
            dup_str(a, ev->pod_namespace, &b->ev.pod_namespace) < 0)
                return NULL;
        b->arena = TAKE_PTR(a);
        return b;
}

/* ------------------------------------------------------------------------ */
/* Small helpers                                                              */

/* Whole seconds and the fraction separately, to keep a double's precision. */
static double ns_to_seconds(int64_t ns)
{
        return (double)(ns / KC_NSEC_PER_SEC) +
               (double)(ns % KC_NSEC_PER_SEC) / (double)KC_NSEC_PER_SEC;
}

/* io.kubernetes.container.hash is hexadecimal; 0 when absent or malformed. */
static uint64_t container_hash(const struct kc_cri_container *c)
{
        const char *s = NULL;
        uint64_t v = 0;
        size_t i;

        for (i = 0; i < c->n_annotations; i++)
                if (c->annotations[i].key &&
                    strcmp(c->annotations[i].key, KC_ANNOTATION_CONTAINER_HASH) == 0) {
                        s = c->annotations[i].value;
                        break;
                }
        if (!s || !*s)
                return 0;
        for (; *s; s++) {
                unsigned d;

                if (*s >= '0' && *s <= '9')
                        d = (unsigned)(*s - '0');
                else if (*s >= 'a' && *s <= 'f')
                        d = (unsigned)(*s - 'a' + 10);
                else if (*s >= 'A' && *s <= 'F')
                        d = (unsigned)(*s - 'A' + 10);
                else
                        return 0;
                if (v > UINT64_MAX >> 4)
                        return 0;
                v = v << 4 | d;
        }
        return v;
}

static void wake_consumer(struct kc_evented_pleg *e)
{
        uint64_t one = 1;

        /* EAGAIN means the counter is already non-zero: the wakeup is pending. */
        (void)!write(e->wake_fd, &one, sizeof(one));
}

/* ------------------------------------------------------------------------ */
/* processCRIEvents                                                           */

/* GeneratePodStatus: the pod status the event describes. */
static int build_status(const struct kc_container_event *ev, struct kc_pod_status **ret)
{
        const struct kc_pod_sandbox *sb = ev->sandbox;
        _cleanup_free_ const char **ips = NULL;
        _cleanup_free_ struct kc_container_status *cs = NULL;
        struct kc_sandbox_status sbs;
        size_t n_ips = 0, i, j;

        ips = calloc(sb->n_additional_ips + 1, sizeof(*ips));
        cs = calloc(ev->n_containers + 1, sizeof(*cs));
        if (!ips || !cs)
                return -ENOMEM;
        /* The sandbox's IPs whatever its state (determinePodSandboxIPs). */
        if (sb->ip && sb->ip[0])
                ips[n_ips++] = sb->ip;
        for (i = 0; i < sb->n_additional_ips; i++)
                if (sb->additional_ips[i] && sb->additional_ips[i][0])
                        ips[n_ips++] = sb->additional_ips[i];
        sbs = (struct kc_sandbox_status){
                .id = sb->id,
                .name = sb->metadata.name,
                .namespace = sb->metadata.namespace,
                .uid = sb->metadata.uid,
                .attempt = sb->metadata.attempt,
                .state = sb->state,
                .created_at = sb->created_at,
                .ip = sb->ip,
        };
        /* Converted, newest created first; equal times keep the event's order. */
        for (i = 0; i < ev->n_containers; i++) {
                const struct kc_cri_container *c = &ev->containers[i];
                struct kc_container_status s = {
                        .id = c->id,
                        .name = c->metadata.name,
                        .state = c->state,
                        .exit_code = c->exit_code,
                        .created_at = c->created_at,
                        .started_at = c->started_at,
                        .finished_at = c->finished_at,
                        .restart_count = (int32_t)c->metadata.attempt,
                        .hash = container_hash(c),
                        .image = c->image,
                        .image_ref = c->image_ref,
                        .reason = c->reason,
                        .message = c->message,
                };

                for (j = i; j > 0 && cs[j - 1].created_at < s.created_at; j--)
                        cs[j] = cs[j - 1];
                cs[j] = s;
        }
        return kc_pod_status_new(
                &(struct kc_pod_status){
                        .id = ev->pod_uid,
                        .name = ev->pod_name,
                        .namespace = ev->pod_namespace,
                        .ips = ips,
                        .n_ips = n_ips,
                        .sandboxes = &sbs,
                        .n_sandboxes = 1,
                        .containers = cs,
                        .n_containers = ev->n_containers,
                },
                ret);
}

static bool has_ready_sandbox(const struct kc_pod_status *s)
{
        size_t i;

        for (i = 0; i < s->n_sandboxes; i++)
                if (s->sandboxes[i].state == KC_SANDBOX_STATE_READY)
                        return true;
        return false;
}

/*
 * getPodIPs, the rule GenericPLEG applies too (UPSTREAM §3.5 step 5): a
 * status without IPs and without a READY sandbox keeps the cached IPs.
 * Returns a new reference to what is to be cached.
 */
static int preserve_pod_ips(struct kc_pod_status *status, const struct kc_pod_status *cached,
                            const char *cached_err, struct kc_pod_status **ret)
{
        struct kc_pod_status tmpl;

        if (status->n_ips > 0 || has_ready_sandbox(status) || cached_err || !cached ||
            cached->n_ips == 0) {
                *ret = kc_pod_status_ref(status);
                return 0;
        }
        tmpl = *status;
        tmpl.ips = cached->ips;
        tmpl.n_ips = cached->n_ips;
        return kc_pod_status_new(&tmpl, ret);
}

/* The running pods and the containers per state of the cached statuses. */
struct running_count {
        int64_t pods;
        int64_t per_state[_KC_CONTAINER_STATE_MAX];
};

static bool count_running(void *ud, const char *uid, const struct kc_pod_status *status)
{
        struct running_count *n = ud;
        size_t i;
        int s;

        (void)uid;
        if (!status)
                return true;
        if (has_ready_sandbox(status))
                n->pods++;
        for (i = 0; i < status->n_containers; i++) {
                s = status->containers[i].state;
                if (s >= 0 && s < _KC_CONTAINER_STATE_MAX)
                        n->per_state[s]++;
        }
        return true;
}

/*
 * updateRunningPodMetric and updateRunningContainerMetric, recounted from
 * the whole cache after each event instead of upstream's deltas (D30): a
 * CRI event never lists the sandbox among the containers, so upstream's
 * "sandbox running" test never passes and its deltas against statuses the
 * generic relist wrote drift (running pods stuck at 0, exited below 0). A
 * pod runs while a sandbox is READY, as GenericPLEG counts it. States that
 * were never counted are not exported (GenericPLEG's rule); one that was
 * keeps being set, to 0 when it has no container left. process_lock held.
 */
static void update_running_metrics(struct kc_evented_pleg *e)
{
        struct running_count n = { 0 };
        int s;

        if (!e->metrics)
                return;
        kc_pod_cache_foreach(e->cache, count_running, &n);
        kc_gauge_set_mp(e->metrics->running_pods, (double)n.pods);
        for (s = 0; s < _KC_CONTAINER_STATE_MAX; s++) {
                if (!n.per_state[s] && !e->state_counted[s])
                        continue;
                e->state_counted[s] = true;
                (void)kc_gauge_vec_set_mp(e->metrics->running_containers,
                                          kc_container_state_to_string(s), (double)n.per_state[s]);
        }
}

/*
 * Non-blocking send; a full channel drops the event (counted, logged) and
 * owes the pod a PodSync through the generic PLEG's list (D1): the cache
 * already holds what the event reported, so a sync of the pod is all the
 * lost event would have caused.
 */
static bool send_event(struct kc_evented_pleg *e, const char *uid, enum kc_pleg_event_type type,
                       const char *data)
{
        struct kc_pleg_event *pe = kc_pleg_event_new(uid, type, data);

        if (pe && kc_chan_push_mp(e->events, pe) == 0)
                return true;
        kc_pleg_event_free(pe);
        if (e->metrics)
                kc_counter_inc_mp(e->metrics->pleg_discard_events);
        kc_log_error_s(NULL, "Evented PLEG: Event channel is full, discarded pod lifecycle event",
                       KC_KV_STR("podUID", uid),
                       KC_KV_STR("type", kc_pleg_event_type_to_string(type)));
        if (kc_generic_pleg_owe_sync_mp(e->generic, uid) < 0)
                kc_log_error_s(NULL, "Evented PLEG: could not remember pod for resync",
                               KC_KV_STR("podUID", uid));
        return false;
}

/* processCRIEvent: the PLEG events one accepted CRI event stands for. */
static int emit(struct kc_evented_pleg *e, const struct kc_container_event *ev)
{
        const char *uid = ev->pod_uid, *id = ev->container_id ? ev->container_id : "";
        int n = 0;

        switch (ev->type) {
        case KC_CONTAINER_EVENT_CREATED:
                kc_log_v_s(4, "Evented PLEG: container created", KC_KV_STR("podUID", uid),
                           KC_KV_STR("containerID", id));
                break;
        case KC_CONTAINER_EVENT_STARTED:
                kc_log_v_s(4, "Evented PLEG: container started", KC_KV_STR("podUID", uid),
                           KC_KV_STR("containerID", id));
                n += send_event(e, uid, KC_PLEG_CONTAINER_STARTED, id);
                break;
        case KC_CONTAINER_EVENT_STOPPED:
                kc_log_v_s(4, "Evented PLEG: container stopped", KC_KV_STR("podUID", uid),
                           KC_KV_STR("containerID", id));
                n += send_event(e, uid, KC_PLEG_CONTAINER_DIED, id);
                break;
        case KC_CONTAINER_EVENT_DELETED:
                kc_log_v_s(4, "Evented PLEG: container deleted", KC_KV_STR("podUID", uid),
                           KC_KV_STR("containerID", id));
                /* Died too, even when it was reported already (generic's "missed" case). */
                n += send_event(e, uid, KC_PLEG_CONTAINER_DIED, id);
                n += send_event(e, uid, KC_PLEG_CONTAINER_REMOVED, id);
                break;
        default:
                break;
        }
        return n;
}

/*
 * Writes the status @p to_cache that @p ev brings into the cache (a deleted
 * sandbox drops the pod's entry). Returns false when the cache holds a newer
 * status, which the event must not override.
 */
static bool cache_event(struct kc_evented_pleg *e, const struct kc_container_event *ev,
                        struct kc_pod_status *to_cache)
{
        const char *uid = ev->pod_uid;
        bool accepted;
        size_t i;

        if (ev->type == KC_CONTAINER_EVENT_DELETED) {
                /* The runtime removed the sandbox: so does the cache. Wakes nobody. */
                for (i = 0; i < to_cache->n_sandboxes; i++)
                        if (ev->container_id && to_cache->sandboxes[i].id &&
                            strcmp(to_cache->sandboxes[i].id, ev->container_id) == 0) {
                                kc_pod_cache_delete(e->cache, uid);
                                break;
                        }
                return true;
        }
        /* created_at is in nanoseconds; an older event than the entry is refused. */
        accepted = kc_pod_cache_set(e->cache, uid, to_cache, NULL, ev->created_at);
        if (!accepted)
                kc_log_v_s(4, "Evented PLEG: the cache holds a newer status, ignoring the event",
                           KC_KV_STR("podUID", uid), KC_KV_STR("containerID", ev->container_id),
                           KC_KV_STR("type", kc_container_event_type_to_string(ev->type)));
        return accepted;
}

/* Finds the UID of the cached pod whose sandbox is ud->sandbox_id. */
struct sandbox_owner {
        const char *sandbox_id;
        char *uid;
};

static bool find_sandbox_owner(void *ud, const char *uid, const struct kc_pod_status *status)
{
        struct sandbox_owner *o = ud;
        size_t i;

        for (i = 0; status && i < status->n_sandboxes; i++)
                if (status->sandboxes[i].id &&
                    strcmp(status->sandboxes[i].id, o->sandbox_id) == 0) {
                        o->uid = strdup(uid);
                        return false;
                }
        return true;
}

/*
 * A sandbox's DELETED event without a sandbox status (containerd 1.7 sends
 * it so, the sandbox being gone): the cache entry that holds the sandbox
 * goes, found by the sandbox's ID. No PLEG event: without the pod's UID
 * there is nobody to send it to, and the removal is what the pod worker
 * already did. process_lock held.
 */
static int delete_by_sandbox_id(struct kc_evented_pleg *e, const struct kc_container_event *ev)
{
        struct sandbox_owner o = { .sandbox_id = ev->container_id };

        kc_pod_cache_foreach(e->cache, find_sandbox_owner, &o);
        if (!o.uid) {
                kc_log_v_s(4, "Evented PLEG: deleted sandbox is in no cached pod status",
                           KC_KV_STR("sandboxID", ev->container_id));
                return 0;
        }
        kc_log_v_s(4, "Evented PLEG: sandbox deleted, removing the pod's cache entry",
                   KC_KV_STR("podUID", o.uid), KC_KV_STR("sandboxID", ev->container_id));
        kc_pod_cache_delete(e->cache, o.uid);
        free(o.uid);
        update_running_metrics(e);
        return 0;
}

/* Checks an event before it is used: -EBADMSG (logged) when it cannot be. */
static int validate_event(const struct kc_container_event *ev)
{
        if (!ev->sandbox || !ev->pod_uid || !ev->pod_uid[0]) {
                kc_log_error_s(NULL,
                               "Evented PLEG: received a container event without a pod sandbox "
                               "status or its metadata, skipping it",
                               KC_KV_STR("containerID", ev->container_id));
                return -EBADMSG;
        }
        if ((unsigned)ev->type >= _KC_CONTAINER_EVENT_TYPE_MAX) {
                kc_log_error_s(
                        NULL,
                        "Evented PLEG: received a container event of unknown type, skipping it",
                        KC_KV_INT("type", (int)ev->type),
                        KC_KV_STR("containerID", ev->container_id));
                return -EBADMSG;
        }
        return 0;
}

/*
 * An event older than the last successful relist tells nothing the relist
 * did not see, and applied to a pod whose entry the relist (or a DELETED)
 * removed it would bring back a dead status. containerd 1.7 keeps events
 * nobody received and hands them to the next subscriber, possibly minutes
 * late (D31): such a backlog is dropped here.
 */
static bool stale_event(struct kc_evented_pleg *e, const struct kc_container_event *ev)
{
        int64_t relist = kc_generic_pleg_last_relist_mp(e->generic);
        int64_t started = atomic_load_explicit(&e->started_at, memory_order_relaxed);

        /* Before the first relist: what happened before the start is the relist's. */
        if (relist < started)
                relist = started;
        if (relist == 0 || ev->created_at >= relist)
                return false;
        atomic_fetch_add_explicit(&e->stale, 1, memory_order_relaxed);
        kc_log_v_s(4, "Evented PLEG: event older than the last relist, ignoring it",
                   KC_KV_STR("containerID", ev->container_id),
                   KC_KV_STR("type", kc_container_event_type_to_string(ev->type)));
        return true;
}

int kc_evented_pleg_process_event(struct kc_evented_pleg *e, const struct kc_container_event *ev)
{
        _cleanup_(kc_pod_status_unrefp) struct kc_pod_status *status = NULL, *to_cache = NULL;
        _cleanup_(kc_pod_status_unrefp) struct kc_pod_status *cached = NULL;
        _cleanup_free_ char *cached_err = NULL;
        const char *uid;
        bool accepted;
        int r;

        if (!e || !ev)
                return -EINVAL;
        if (!ev->sandbox && ev->type == KC_CONTAINER_EVENT_DELETED && ev->container_id &&
            ev->container_id[0]) {
                KC_LOCK_GUARD(&e->process_lock);
                return delete_by_sandbox_id(e, ev);
        }
        r = validate_event(ev);
        if (r < 0)
                return r;
        uid = ev->pod_uid;

        r = build_status(ev, &status);
        if (r < 0)
                return kc_log_errno_s(r, "Evented PLEG: cannot build the pod status",
                                      KC_KV_STR("podUID", uid));

        KC_LOCK_GUARD(&e->process_lock);
        if (stale_event(e, ev))
                return 0;
        r = kc_pod_cache_get(e->cache, uid, &cached, &cached_err);
        if (r >= 0)
                r = preserve_pod_ips(status, cached, cached_err, &to_cache);
        if (r < 0)
                return kc_log_errno_s(r, "Evented PLEG: cannot read the cached status",
                                      KC_KV_STR("podUID", uid));

        if (e->metrics)
                kc_histogram_observe_mp(e->metrics->evented_pleg_connection_latency,
                                        ns_to_seconds(kc_clock_now(e->clock) - ev->created_at));

        accepted = cache_event(e, ev, to_cache);
        update_running_metrics(e);
        /* Pods owed a PodSync for earlier drops go first, once there is room (D1). */
        (void)kc_generic_pleg_flush_owed_mp(e->generic);
        return accepted ? emit(e, ev) : 0;
}

/* ------------------------------------------------------------------------ */
/* The source's callbacks (its I/O thread; must not block)                   */

void kc__evented_pleg_on_event(void *ud, const struct kc_container_event *ev)
{
        struct kc_evented_pleg *e = ud;
        struct buffered_event *b = buffered_event_new(ev);

        if (!b || kc_chan_push_mp(e->buffer, b) < 0) {
                buffered_event_free(b);
                atomic_fetch_add_explicit(&e->dropped, 1, memory_order_relaxed);
                /*
                 * Release: pairs with the consumer's acquire exchange. One log
                 * line and one wakeup per owed relist, however many drops.
                 */
                if (!atomic_exchange_explicit(&e->relist_owed, true, memory_order_release)) {
                        kc_log_error_s(NULL,
                                       "Evented PLEG: the event buffer is full, dropping container "
                                       "events and forcing a relist",
                                       KC_KV_STR("containerID", ev->container_id));
                        wake_consumer(e);
                }
        }
        /* The first event proves the stream connected: end the settle wait. */
        if (!atomic_exchange_explicit(&e->event_seen, true, memory_order_acq_rel)) {
                pthread_mutex_lock(&e->lock);
                if (e->attempt)
                        kc_cancel_trigger_mp(e->attempt);
                pthread_mutex_unlock(&e->lock);
        }
}

static void on_stream_close(void *ud, int r, const struct kc_runtime_error *err)
{
        struct kc_evented_pleg *e = ud;

        pthread_mutex_lock(&e->lock);
        e->stream_closed = true;
        snprintf(e->close_msg, sizeof(e->close_msg), "%s",
                 err && err->message[0] ? err->message
                 : r < 0                ? strerror(-r)
                                        : "end of stream");
        if (e->attempt)
                kc_cancel_trigger_mp(e->attempt);
        pthread_cond_broadcast(&e->cond);
        pthread_mutex_unlock(&e->lock);
}

/* ------------------------------------------------------------------------ */
/* The stream thread                                                          */

/*
 * After every connection, relist at the generic period until the new
 * stream delivered an event and one relist started after it (D31).
 * containerd 1.7's GetContainerEvents is one shared queue: a server-side
 * stream whose client went away (cubelet restarted, or the connection
 * dropped) takes the next event with it, so a death can reach nobody; the
 * first event on the new stream shows the queue feeds it, and the relist
 * after it finds whatever the dead stream took. Returns when done, or when
 * the stream ended or stop began (the caller checks which).
 */
static void catch_up(struct kc_evented_pleg *e)
{
        _cleanup_(kc_cancel_freep) struct kc_cancel *wait = NULL;
        bool seen = false, done = false;

        if (kc_cancel_new(&wait) < 0)
                return;
        pthread_mutex_lock(&e->lock);
        if (e->stream_closed || e->stopping) {
                pthread_mutex_unlock(&e->lock);
                return;
        }
        /* on_close and stop trigger it; so does the stream's first event. */
        e->attempt = wait;
        pthread_mutex_unlock(&e->lock);

        while (!done) {
                seen = atomic_load_explicit(&e->event_seen, memory_order_acquire);
                if (kc_clock_sleep(e->clock, e->fallback_period, wait) < 0) {
                        /* The stream ended, stop began, or its first event came. */
                        pthread_mutex_lock(&e->lock);
                        done = e->stream_closed || e->stopping;
                        pthread_mutex_unlock(&e->lock);
                        if (done)
                                break;
                        seen = atomic_load_explicit(&e->event_seen, memory_order_acquire);
                }
                /* The flag was read before this relist started: the relist follows the event. */
                (void)kc_generic_pleg_relist(e->generic);
                done = seen;
                pthread_mutex_lock(&e->lock);
                e->stats.catch_up_relists++;
                e->stats.caught_up += done;
                pthread_mutex_unlock(&e->lock);
        }
        done = done && seen;
        pthread_mutex_lock(&e->lock);
        e->attempt = NULL;
        pthread_mutex_unlock(&e->lock);
        if (done)
                kc_log_v_s(2, "Evented PLEG: the container events stream delivers; relisting "
                              "only at the long period again");
}

/* One stream: open, wait until it connects (or not), then until it ends. */
static enum attempt_result stream_attempt(struct kc_evented_pleg *e)
{
        _cleanup_(kc_cancel_freep) struct kc_cancel *attempt = NULL;
        struct kc_runtime_error err = { 0 };
        void *handle = NULL;
        bool connected, stopping, switch_back = false;
        int r;

        r = kc_cancel_new(&attempt);
        if (r < 0) {
                kc_log_errno_s(r, "Evented PLEG: cannot open the container events stream");
                return ATTEMPT_FAILED;
        }
        pthread_mutex_lock(&e->lock);
        if (e->stopping) {
                pthread_mutex_unlock(&e->lock);
                return ATTEMPT_STOPPED;
        }
        e->attempt = attempt;
        e->stream_closed = false;
        atomic_store_explicit(&e->event_seen, false, memory_order_relaxed);
        pthread_mutex_unlock(&e->lock);

        r = e->source.ops->open(e->source.self, kc__evented_pleg_on_event, on_stream_close, e,
                                &handle, &err);
        if (r < 0) {
                pthread_mutex_lock(&e->lock);
                e->attempt = NULL;
                snprintf(e->close_msg, sizeof(e->close_msg), "%s",
                         err.message[0] ? err.message : strerror(-r));
                pthread_mutex_unlock(&e->lock);
                return ATTEMPT_FAILED;
        }

        /* Connected after an event or KC_EVENTED_STREAM_SETTLE open; see the top. */
        (void)kc_clock_sleep(e->clock, KC_EVENTED_STREAM_SETTLE, attempt);

        pthread_mutex_lock(&e->lock);
        e->attempt = NULL;
        stopping = e->stopping;
        connected = !stopping && (!e->stream_closed ||
                                  atomic_load_explicit(&e->event_seen, memory_order_acquire));
        if (connected) {
                e->stats.connections++;
                e->stats.consecutive_failures = 0;
                e->stats.streaming = !e->stream_closed;
                switch_back = e->fallen_back;
                if (e->metrics)
                        kc_counter_inc_mp(e->metrics->evented_pleg_connection_success_count);
        }
        pthread_mutex_unlock(&e->lock);

        if (switch_back) {
                /* Switch back before waiting: the stream serves from now on. */
                kc_generic_pleg_stop(e->generic);
                kc_generic_pleg_update(e->generic, KC_EVENTED_GENERIC_RELIST_PERIOD,
                                       KC_EVENTED_GENERIC_RELIST_THRESHOLD);
                (void)kc_generic_pleg_start(e->generic);
                atomic_store_explicit(&e->in_use, true, memory_order_release);
                pthread_mutex_lock(&e->lock);
                e->fallen_back = false;
                e->stats.recoveries++;
                pthread_mutex_unlock(&e->lock);
                kc_log_info_s("Evented PLEG is working again: switching back from Generic PLEG "
                              "relisting to the container events stream");
        }
        if (connected) {
                kc_log_v_s(2, "Evented PLEG: connected to the container events stream");
                catch_up(e);
        }

        pthread_mutex_lock(&e->lock);
        while (connected && !e->stream_closed && !e->stopping)
                pthread_cond_wait(&e->cond, &e->lock);
        e->stats.streaming = false;
        stopping = e->stopping;
        pthread_mutex_unlock(&e->lock);

        /* Without e->lock: the source may run on_close from inside close(). */
        e->source.ops->close(e->source.self, handle);
        if (stopping)
                return ATTEMPT_STOPPED;
        return connected ? ATTEMPT_CONNECTED : ATTEMPT_FAILED;
}

/* The retry delay after @p n consecutive failures: 250 ms doubling, capped. */
static int64_t retry_delay(unsigned n)
{
        int64_t d = KC_EVENTED_RETRY_INITIAL;

        while (n-- > 1 && d < KC_EVENTED_RETRY_MAX)
                d *= 2;
        return d < KC_EVENTED_RETRY_MAX ? d : KC_EVENTED_RETRY_MAX;
}

/* A failed or ended stream: count it, relist, maybe fall back. Returns the delay. */
static int64_t stream_failed(struct kc_evented_pleg *e, enum attempt_result res)
{
        char msg[KC_RUNTIME_ERROR_MAX];
        bool fall_back = false, fallen_back;
        unsigned n;

        {
                KC_LOCK_GUARD(&e->lock);
                /* Stopping: no relist, no fallback; the sleep that follows is cancelled. */
                if (e->stopping)
                        return 0;
                e->stats.failures++;
                n = ++e->stats.consecutive_failures;
                fallen_back = e->fallen_back;
                if (!fallen_back && n >= KC_EVENTED_MAX_STREAM_RETRIES) {
                        fall_back = true;
                        e->fallen_back = fallen_back = true;
                        e->stats.fallbacks++;
                }
                memcpy(msg, e->close_msg, sizeof(msg));
        }

        if (e->metrics)
                kc_counter_inc_mp(e->metrics->evented_pleg_connection_error_count);
        kc_log_error_s(
                msg,
                res == ATTEMPT_CONNECTED
                        ? "Evented PLEG: the connection to the container events stream failed, "
                          "relisting"
                        : "Evented PLEG: opening the container events stream failed, relisting",
                KC_KV_UINT("failures", n));
        /* The stream may have missed changes: relist now. */
        (void)kc_generic_pleg_relist(e->generic);

        if (fall_back) {
                atomic_store_explicit(&e->in_use, false, memory_order_release);
                kc_generic_pleg_stop(e->generic);
                kc_generic_pleg_update(e->generic, e->fallback_period, e->fallback_threshold);
                (void)kc_generic_pleg_start(e->generic);
                kc_log_warn_s(
                        "Fall back to Generic PLEG relisting since Evented PLEG is not working");
        }
        return fallen_back ? e->reprobe_period : retry_delay(n);
}

static void *stream_loop(void *arg)
{
        struct kc_evented_pleg *e = arg;

        for (;;) {
                enum attempt_result res = stream_attempt(e);

                if (res == ATTEMPT_STOPPED)
                        break;
                if (kc_clock_sleep(e->clock, stream_failed(e, res), e->stop) < 0 ||
                    kc_cancel_is_set(e->stop))
                        break;
        }
        return NULL;
}

/* ------------------------------------------------------------------------ */
/* The consumer and updateGlobalCache                                         */

static void *consumer_loop(void *arg)
{
        struct kc_evented_pleg *e = arg;
        struct pollfd pfd[2] = {
                { .fd = kc_chan_fd(e->buffer), .events = POLLIN },
                { .fd = e->wake_fd, .events = POLLIN },
        };
        uint64_t v;
        void *item;

        for (;;) {
                if (atomic_load_explicit(&e->consumer_stop, memory_order_acquire))
                        break;
                /* Acquire: pairs with the release exchange in kc__evented_pleg_on_event(). */
                if (atomic_exchange_explicit(&e->relist_owed, false, memory_order_acquire))
                        (void)kc_generic_pleg_relist(e->generic);
                if (kc_chan_pop_sc(e->buffer, &item, 0) == 0) {
                        struct buffered_event *b = item;

                        (void)kc_evented_pleg_process_event(e, &b->ev);
                        buffered_event_free(b);
                        continue;
                }
                if (kc_chan_prepare_wait_sc(e->buffer))
                        continue;
                /*
                 * Stop and relist requests set their flag, then write wake_fd:
                 * a request made after the checks above makes this poll return,
                 * and the counter is drained only after it did.
                 */
                if (poll(pfd, KC_ELEMENTSOF(pfd), -1) > 0 && (pfd[1].revents & POLLIN))
                        (void)!read(e->wake_fd, &v, sizeof(v));
        }
        return NULL;
}

/*
 * wait.Until(updateGlobalCache, period): at once, then every period. Each
 * tick also flushes the PodSyncs owed for dropped events (D1): the relist
 * that would flush them comes only every 300 s while EventedPLEG is in use,
 * and the next event (which flushes too) may never come on a quiet stream.
 */
static void *cache_loop(void *arg)
{
        struct kc_evented_pleg *e = arg;

        do {
                /*
                 * Not before the first relist filled the cache (D31): its
                 * listing is in, but until its writes are done a stamp would
                 * turn a pod it has yet to write into a pod with nothing.
                 */
                if (kc_evented_pleg_in_use(e) && kc_generic_pleg_filled_mp(e->generic))
                        kc_pod_cache_update_time(e->cache, kc_clock_now(e->clock));
                (void)kc_generic_pleg_flush_owed_mp(e->generic);
        } while (kc_clock_sleep(e->clock, e->cache_update_period, e->stop) == 0);
        return NULL;
}

/* ------------------------------------------------------------------------ */
/* Lifecycle                                                                  */

int kc_evented_pleg_new(const struct kc_evented_pleg_config *cfg, struct kc_evented_pleg **ret)
{
        _cleanup_free_ struct kc_evented_pleg *e = NULL;
        int r;

        if (!cfg || !ret || !cfg->generic || !cfg->source.ops || !cfg->source.ops->open ||
            !cfg->source.ops->close || !cfg->events || !cfg->cache || !cfg->clock ||
            cfg->cache_update_period_ns < 0 || cfg->reprobe_period_ns < 0 ||
            cfg->fallback_relist_period_ns < 0 || cfg->fallback_relist_threshold_ns < 0)
                return -EINVAL;
        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        *e = (struct kc_evented_pleg){
                .generic = cfg->generic,
                .source = cfg->source,
                .events = cfg->events,
                .cache = cfg->cache,
                .clock = cfg->clock,
                .metrics = cfg->metrics,
                .cache_update_period =
                        cfg->cache_update_period_ns ?: KC_EVENTED_CACHE_UPDATE_PERIOD,
                .reprobe_period = cfg->reprobe_period_ns ?: KC_EVENTED_REPROBE_PERIOD,
                .fallback_period = cfg->fallback_relist_period_ns ?: KC_GENERIC_PLEG_RELIST_PERIOD,
                .fallback_threshold =
                        cfg->fallback_relist_threshold_ns ?: KC_GENERIC_PLEG_RELIST_THRESHOLD,
                .wake_fd = -1,
        };
        r = kc_chan_new(&e->buffer, KC_PLEG_CHANNEL_CAPACITY, buffered_event_free);
        if (r < 0)
                return r;
        e->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (e->wake_fd < 0) {
                r = -errno;
                kc_chan_free(e->buffer);
                return r;
        }
        atomic_init(&e->in_use, false);
        atomic_init(&e->consumer_stop, false);
        atomic_init(&e->relist_owed, false);
        atomic_init(&e->dropped, 0);
        atomic_init(&e->stale, 0);
        atomic_init(&e->started_at, 0);
        atomic_init(&e->event_seen, false);
        pthread_mutex_init(&e->process_lock, NULL);
        pthread_mutex_init(&e->run_lock, NULL);
        pthread_mutex_init(&e->lock, NULL);
        pthread_cond_init(&e->cond, NULL);
        /* With the gate on the cache refuses statuses older than the entry (§4.7). */
        kc_pod_cache_set_newer_wins(e->cache, true);
        *ret = TAKE_PTR(e);
        return 0;
}

struct kc_evented_pleg *kc_evented_pleg_free(struct kc_evented_pleg *e)
{
        if (!e)
                return NULL;
        kc_evented_pleg_stop(e);
        kc_chan_free(e->buffer);
        if (e->wake_fd >= 0)
                close(e->wake_fd);
        pthread_mutex_destroy(&e->process_lock);
        pthread_mutex_destroy(&e->run_lock);
        pthread_mutex_destroy(&e->lock);
        pthread_cond_destroy(&e->cond);
        free(e);
        return NULL;
}

/* Signals every thread to end and joins the ones flagged (those started). */
static void stop_threads(struct kc_evented_pleg *e, bool stream, bool consumer, bool cache)
{
        pthread_mutex_lock(&e->lock);
        e->stopping = true;
        if (e->attempt)
                kc_cancel_trigger_mp(e->attempt);
        pthread_cond_broadcast(&e->cond);
        pthread_mutex_unlock(&e->lock);
        kc_cancel_trigger_mp(e->stop);
        /* Release: pairs with the consumer's acquire load after its drain. */
        atomic_store_explicit(&e->consumer_stop, true, memory_order_release);
        wake_consumer(e);

        if (stream)
                pthread_join(e->stream_thread, NULL);
        if (consumer)
                pthread_join(e->consumer_thread, NULL);
        if (cache)
                pthread_join(e->cache_thread, NULL);
        e->stop = kc_cancel_free(e->stop);
}

/* Starts the consumer, cache and stream threads; on failure, ends those started. */
static int start_threads(struct kc_evented_pleg *e)
{
        int r;

        r = -pthread_create(&e->consumer_thread, NULL, consumer_loop, e);
        if (r < 0) {
                stop_threads(e, false, false, false);
                return r;
        }
        r = -pthread_create(&e->cache_thread, NULL, cache_loop, e);
        if (r < 0) {
                stop_threads(e, false, true, false);
                return r;
        }
        r = -pthread_create(&e->stream_thread, NULL, stream_loop, e);
        if (r < 0) {
                stop_threads(e, false, true, true);
                return r;
        }
        return 0;
}

int kc_evented_pleg_start(struct kc_evented_pleg *e)
{
        bool fallen_back;
        int r;

        KC_LOCK_GUARD(&e->run_lock);
        if (e->running)
                return 0;
        r = kc_cancel_new(&e->stop);
        if (r < 0)
                return r;
        pthread_mutex_lock(&e->lock);
        e->stopping = false;
        fallen_back = e->fallen_back;
        pthread_mutex_unlock(&e->lock);
        atomic_store_explicit(&e->consumer_stop, false, memory_order_relaxed);
        atomic_store_explicit(&e->started_at, kc_clock_now(e->clock), memory_order_relaxed);
        /* A PLEG stopped while fallen back stays so until a probe connects. */
        atomic_store_explicit(&e->in_use, !fallen_back, memory_order_release);

        r = start_threads(e);
        if (r < 0) {
                atomic_store_explicit(&e->in_use, false, memory_order_release);
                return r;
        }
        e->running = true;
        return 0;
}

void kc_evented_pleg_begin_stop(struct kc_evented_pleg *e)
{
        if (!e)
                return;
        KC_LOCK_GUARD(&e->lock);
        e->stopping = true;
        if (e->attempt)
                kc_cancel_trigger_mp(e->attempt);
        pthread_cond_broadcast(&e->cond);
}

void kc_evented_pleg_stop(struct kc_evented_pleg *e)
{
        void *item;

        if (!e)
                return;
        pthread_mutex_lock(&e->run_lock);
        if (e->running) {
                atomic_store_explicit(&e->in_use, false, memory_order_release);
                stop_threads(e, true, true, true);
                /* Again: a switch back may have raised it while the threads ended. */
                atomic_store_explicit(&e->in_use, false, memory_order_release);
                /* Events of a stream that is gone: a restart relies on a relist instead. */
                while (kc_chan_pop_sc(e->buffer, &item, 0) == 0)
                        buffered_event_free(item);
                e->running = false;
        }
        pthread_mutex_unlock(&e->run_lock);
}

bool kc_evented_pleg_in_use(struct kc_evented_pleg *e)
{
        return e && atomic_load_explicit(&e->in_use, memory_order_acquire);
}

bool kc_evented_pleg_in_use_cb(void *userdata)
{
        return kc_evented_pleg_in_use(userdata);
}

bool kc_evented_pleg_healthy(struct kc_evented_pleg *e, char **ret_err)
{
        unsigned len = kc_chan_len(e->events), cap = kc_chan_cap(e->events);

        if (len == cap) {
                if (ret_err)
                        *ret_err = kc_strdup_printf(
                                "EventedPLEG: pleg event channel capacity is full with %u events",
                                len);
                return false;
        }
        if (e->metrics)
                kc_gauge_set_mp(e->metrics->pleg_last_seen, ns_to_seconds(kc_clock_now(e->clock)));
        if (ret_err)
                *ret_err = NULL;
        return true;
}

void kc_evented_pleg_stats(struct kc_evented_pleg *e, struct kc_evented_pleg_stats *ret)
{
        pthread_mutex_lock(&e->lock);
        *ret = e->stats;
        pthread_mutex_unlock(&e->lock);
        ret->dropped = atomic_load_explicit(&e->dropped, memory_order_relaxed);
        ret->stale = atomic_load_explicit(&e->stale, memory_order_relaxed);
}
