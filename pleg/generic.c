/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GenericPLEG (upstream pkg/kubelet/pleg/generic.go, E2 baseline), following
 * UPSTREAM.md §3 step by step. The relist thread lists every pod, diffs each
 * pod's old and new container states into lifecycle events, refreshes the pod
 * status cache for the pods that changed, and sends the events without ever
 * blocking.
 *
 * Deliberate difference (docs/deviations.md D1): when the event channel is
 * full the dropped event is counted and logged as upstream does, and in
 * addition the pod is remembered and a PodSync event for it is sent at the
 * start of a later relist, once the channel has room, so no pod is lost
 * silently. EventedPLEG, which shares the channel, owes its pods through the
 * same list and flushes it too (kc_generic_pleg_owe_sync_mp()).
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/cancel.h"
#include "core/chan.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/duration.h"
#include "core/list.h"
#include "core/lock.h"
#include "core/log.h"
#include "core/map.h"
#include "internal.h"
#include "metrics/kubelet_metrics.h"
#include "metrics/registry.h"
#include "pleg/event.h"
#include "pleg/generic.h"
#include "pleg/pleg.h"
#include "runtime/cache.h"
#include "runtime/container.h"
#include "runtime/error.h"

/* What some pods add to the running pod and container gauges. */
struct running_counts {
        uint64_t per_state[_KC_CONTAINER_STATE_MAX];
        uint64_t pods;
};

/*
 * A pod record: the snapshot events were last computed against, and the
 * snapshot of the current relist (upstream podRecord). What every relist
 * reads of every record comes first, in the one cache line a record starts
 * on (RECORD_ALIGN): a relist of an unchanged pod reads no other.
 */
struct pod_record {
        /* The pod the last listing had under this UID (a reference, or NULL). */
        struct kc_pod *listed;
        struct kc_pod *old;
        struct kc_pod *current;
        uint64_t listed_gen; /* the relist that last listed it */
        uint64_t queued_gen; /* the relist that last queued it in kc_generic_pleg.dirty */
        /* In podsToReinspect: for the relist in progress until relist_pod()
         * reads it, then for the next one (needsReinspection). */
        bool reinspect;

        uint64_t seq;                  /* its place in kc_generic_pleg.order: first seen, first */
        struct kc_list link;           /* on kc_generic_pleg.order */
        struct running_counts counted; /* what listed adds to the running counts */
        char uid[];                    /* map key */
};

#define RECORD_ALIGN 64
static_assert(offsetof(struct pod_record, reinspect) < RECORD_ALIGN, "a record's hot fields");

struct kc_generic_pleg {
        struct kc_pod_runtime runtime;
        struct kc_chan *events;
        struct kc_pod_cache *cache;
        struct kc_clock *clock;
        struct kc_kubelet_metrics *metrics;
        bool (*evented_in_use)(void *userdata);
        void *evented_userdata;

        _Atomic int64_t relist_period;
        _Atomic int64_t relist_threshold;
        /* Start of the last successful relist; 0 = never. Written by relist,
         * read by Healthy() from any thread. */
        _Atomic int64_t relist_time;
        /* A relist has written the cache and stamped its global time. */
        atomic_bool filled;
        /* kc_generic_pleg_begin_stop(): a failed relist is the shutdown's, not an error. */
        atomic_bool stopping;

        pthread_mutex_t relist_lock; /* serialises relists (relistLock) */
        pthread_mutex_t cache_lock;  /* serialises cache writes (podCacheMutex) */

        /* Owned by whoever holds relist_lock. */
        struct kc_map *records;
        struct kc_list order; /* struct pod_record, in first-seen order */
        struct kc_pleg_event_spec *scratch;
        size_t scratch_cap;
        uint64_t gen;                    /* relists that recorded a listing */
        struct pod_record **by_position; /* the record of each pod of the last listing */
        size_t n_by_position, cap_by_position;
        uint64_t next_seq; /* the next new record's seq */
        /*
         * The records the relist in progress looks at, in order (issue 18):
         * those whose current snapshot is not their old one, or due for
         * reinspection. For any other, relist_pod() has nothing to do.
         */
        struct pod_record **dirty;
        size_t n_dirty, cap_dirty;
        struct running_counts running_sum; /* the sum of every record's counted */
        unsigned relist_events;            /* sent by the relist in progress (for its log line) */

        /*
         * Pods owed a PodSync after a dropped event, in the order they were
         * owed; EventedPLEG owes pods too (kc_generic_pleg_owe_sync_mp()).
         * resync_lock is innermost: held only to edit the list and to push
         * onto the channel (which never blocks), never across a runtime
         * call, so an owing thread never waits for a relist in progress.
         */
        pthread_mutex_t resync_lock;
        char **resync;
        size_t n_resync;
        size_t resync_cap;

        pthread_mutex_t run_lock; /* start/stop */
        bool running;
        pthread_t thread;
        struct kc_cancel *stop;
};

/* ------------------------------------------------------------------------ */
/* Events: state conversion and the per-container table                       */

enum kc_pleg_container_state kc__pleg_convert_state(enum kc_container_state s)
{
        switch (s) {
        case KC_CONTAINER_STATE_CREATED:
                /* kubelet does not use "created" yet: it maps to unknown. */
                return KC_PLEG_STATE_UNKNOWN;
        case KC_CONTAINER_STATE_RUNNING:
                return KC_PLEG_STATE_RUNNING;
        case KC_CONTAINER_STATE_EXITED:
                return KC_PLEG_STATE_EXITED;
        case KC_CONTAINER_STATE_UNKNOWN:
        default:
                return KC_PLEG_STATE_UNKNOWN;
        }
}

size_t kc__pleg_generate_events(enum kc_pleg_container_state old_state,
                                enum kc_pleg_container_state new_state,
                                enum kc_pleg_event_type out[static 2])
{
        if (new_state == old_state)
                return 0;
        switch (new_state) {
        case KC_PLEG_STATE_RUNNING:
                out[0] = KC_PLEG_CONTAINER_STARTED;
                return 1;
        case KC_PLEG_STATE_EXITED:
                out[0] = KC_PLEG_CONTAINER_DIED;
                return 1;
        case KC_PLEG_STATE_UNKNOWN:
                out[0] = KC_PLEG_CONTAINER_CHANGED;
                return 1;
        case KC_PLEG_STATE_NON_EXISTENT:
                if (old_state == KC_PLEG_STATE_EXITED) {
                        /* Already reported dead: it was only removed. */
                        out[0] = KC_PLEG_CONTAINER_REMOVED;
                        return 1;
                }
                /* Running or unknown, then gone: it died in between. */
                out[0] = KC_PLEG_CONTAINER_DIED;
                out[1] = KC_PLEG_CONTAINER_REMOVED;
                return 2;
        default:
                return 0;
        }
}

/* getContainerState: containers first, then sandboxes; absent → non-existent. */
static enum kc_pleg_container_state container_state(const struct kc_pod *pod, const char *id)
{
        size_t i;

        if (!pod)
                return KC_PLEG_STATE_NON_EXISTENT;
        for (i = 0; i < pod->n_containers; i++)
                if (strcmp(pod->containers[i].id, id) == 0)
                        return kc__pleg_convert_state(pod->containers[i].state);
        for (i = 0; i < pod->n_sandboxes; i++)
                if (strcmp(pod->sandboxes[i].id, id) == 0)
                        return kc__pleg_convert_state(pod->sandboxes[i].state);
        return KC_PLEG_STATE_NON_EXISTENT;
}

/* Is @id among the first @n IDs of the union (old containers, old sandboxes,
 * new containers, new sandboxes)? */
static bool seen_before(const struct kc_container *const lists[4], const size_t counts[4],
                        size_t list, size_t idx, const char *id)
{
        size_t l, i;

        for (l = 0; l <= list; l++) {
                size_t end = l == list ? idx : counts[l];

                for (i = 0; i < end; i++)
                        if (strcmp(lists[l][i].id, id) == 0)
                                return true;
        }
        return false;
}

/* Do @old and @cur list the same container IDs and the same sandbox IDs, position by position? */
static bool same_ids(const struct kc_pod *old, const struct kc_pod *cur)
{
        size_t i;

        if (!old || !cur || old->n_containers != cur->n_containers ||
            old->n_sandboxes != cur->n_sandboxes)
                return false;
        for (i = 0; i < old->n_containers; i++)
                if (old->containers[i].id != cur->containers[i].id &&
                    strcmp(old->containers[i].id, cur->containers[i].id) != 0)
                        return false;
        for (i = 0; i < old->n_sandboxes; i++)
                if (old->sandboxes[i].id != cur->sandboxes[i].id &&
                    strcmp(old->sandboxes[i].id, cur->sandboxes[i].id) != 0)
                        return false;
        return true;
}

/*
 * computeEvents when same_ids() holds (the usual change: a state flipped).
 * The union is then old's list (the new one adds no ID), and an ID's first
 * occurrence is at the same position in both pods, which is where
 * getContainerState finds it; so each first occurrence compares its own two
 * entries, and only an entry whose state changed needs the duplicate check,
 * none when @old's IDs are known all different (kc_pod_ids_distinct()).
 */
static int compute_events_same_ids(const struct kc_pod *old, const struct kc_pod *cur,
                                   const struct kc_container *const lists[4],
                                   const size_t counts[4], struct kc_pleg_event_spec **buf,
                                   size_t *cap, size_t *ret_n)
{
        /* No ID twice in @old: each entry is its ID's first occurrence. */
        bool distinct = kc_pod_ids_distinct(old);
        size_t n = 0, l, i, k;

        for (l = 0; l < 2; l++)
                for (i = 0; i < counts[l]; i++) {
                        const struct kc_container *o = &lists[l][i];
                        const struct kc_container *c =
                                l == 0 ? &cur->containers[i] : &cur->sandboxes[i];
                        enum kc_pleg_container_state os = kc__pleg_convert_state(o->state);
                        enum kc_pleg_container_state cs = kc__pleg_convert_state(c->state);
                        enum kc_pleg_event_type types[2];
                        size_t m;

                        if (os == cs || (!distinct && seen_before(lists, counts, l, i, o->id)))
                                continue;
                        m = kc__pleg_generate_events(os, cs, types);
                        if (KC_ARRAY_GROW(*buf, *cap, n + m, 16) < 0)
                                return -ENOMEM;
                        for (k = 0; k < m; k++)
                                (*buf)[n++] = (struct kc_pleg_event_spec){ types[k], o->id };
                }
        *ret_n = n;
        return 0;
}

int kc__pleg_compute_events(const struct kc_pod *old, const struct kc_pod *cur,
                            struct kc_pleg_event_spec **buf, size_t *cap, size_t *ret_n)
{
        const struct kc_container *lists[4] = {
                old ? old->containers : NULL,
                old ? old->sandboxes : NULL,
                cur ? cur->containers : NULL,
                cur ? cur->sandboxes : NULL,
        };
        const size_t counts[4] = {
                old ? old->n_containers : 0,
                old ? old->n_sandboxes : 0,
                cur ? cur->n_containers : 0,
                cur ? cur->n_sandboxes : 0,
        };
        size_t n = 0, l, i, k;

        /* Pods are immutable: the same snapshot twice has nothing to report.
         * (The runtimes hand out the same object for a pod that did not change.) */
        if (old == cur) {
                *ret_n = 0;
                return 0;
        }
        if (same_ids(old, cur))
                return compute_events_same_ids(old, cur, lists, counts, buf, cap, ret_n);
        for (l = 0; l < 4; l++)
                for (i = 0; i < counts[l]; i++) {
                        const char *id = lists[l][i].id;
                        enum kc_pleg_event_type types[2];
                        size_t m;

                        /* De-duplicate by the ID string only. */
                        if (seen_before(lists, counts, l, i, id))
                                continue;
                        m = kc__pleg_generate_events(container_state(old, id),
                                                     container_state(cur, id), types);
                        if (KC_ARRAY_GROW(*buf, *cap, n + m, 16) < 0)
                                return -ENOMEM;
                        for (k = 0; k < m; k++)
                                (*buf)[n++] = (struct kc_pleg_event_spec){ types[k], id };
                }
        *ret_n = n;
        return 0;
}

/* ------------------------------------------------------------------------ */
/* Pod records                                                                */

static struct pod_record *record_free(struct pod_record *r)
{
        if (!r)
                return NULL;
        kc_pod_unref(r->old);
        kc_pod_unref(r->current);
        kc_pod_unref(r->listed);
        free(r);
        return NULL;
}

/* What @p adds to the running gauges (updateRunningPodAndContainerMetrics). */
static struct running_counts running_counts_of(const struct kc_pod *p)
{
        struct running_counts c = { 0 };
        size_t j;
        int s;

        for (j = 0; j < p->n_containers; j++) {
                s = p->containers[j].state;
                if (s >= 0 && s < _KC_CONTAINER_STATE_MAX)
                        c.per_state[s]++;
        }
        for (j = 0; j < p->n_sandboxes; j++)
                if (p->sandboxes[j].state == KC_CONTAINER_STATE_RUNNING) {
                        c.pods = 1;
                        break;
                }
        return c;
}

/* Makes @p (may be NULL) the pod @r was last listed with, keeping g->running_sum the sum. */
static void record_set_listed(struct kc_generic_pleg *g, struct pod_record *r, struct kc_pod *p)
{
        struct running_counts c = p ? running_counts_of(p) : (struct running_counts){ 0 };
        int s;

        for (s = 0; s < _KC_CONTAINER_STATE_MAX; s++)
                g->running_sum.per_state[s] += c.per_state[s] - r->counted.per_state[s];
        g->running_sum.pods += c.pods - r->counted.pods;
        r->counted = c;
        kc_pod_unref(r->listed);
        r->listed = kc_pod_ref(p);
}

/*
 * The record of listing position @i's pod @p: the one at the same position
 * last time when it has the same UID (its pod the same object, or an equal
 * ID), else the map's; NULL when the UID is new.
 */
static struct pod_record *record_find(struct kc_generic_pleg *g, size_t i, const struct kc_pod *p)
{
        struct pod_record *r = i < g->n_by_position ? g->by_position[i] : NULL;

        /* The same UID string: @p's strings may be its last pod's (kc__pod_new_like). */
        if (r &&
            (r->listed == p || (r->listed && r->listed->id == p->id) || strcmp(r->uid, p->id) == 0))
                return r;
        return kc_map_get(g->records, p->id);
}

/* Queues @p r in g->dirty (room was made) once per relist when relist_pod() has work on it. */
static void record_queue(struct kc_generic_pleg *g, struct pod_record *r)
{
        if ((r->current != r->old || r->reinspect) && r->queued_gen != g->gen) {
                r->queued_gen = g->gen;
                g->dirty[g->n_dirty++] = r;
        }
}

static int record_seq_cmp(const void *a, const void *b)
{
        uint64_t x = (*(struct pod_record *const *)a)->seq,
                 y = (*(struct pod_record *const *)b)->seq;

        return x < y ? -1 : x > y;
}

/* Puts g->dirty in the records' order (g->order), which it usually is already. */
static void dirty_sort(struct kc_generic_pleg *g)
{
        for (size_t i = 1; i < g->n_dirty; i++)
                if (g->dirty[i - 1]->seq > g->dirty[i]->seq) {
                        qsort(g->dirty, g->n_dirty, sizeof(*g->dirty), record_seq_cmp);
                        return;
                }
}

/* A UID is mostly a 36-character UUID: the offset of its last character
 * (past a shorter one's end, a prefetch reads nothing). */
#define UID_LAST_BYTE 35

/* How far ahead records_set_current() asks for what a changed pod's visit reads. */
#define CHANGED_PREFETCH_AHEAD 4

/*
 * Before records_set_current() visits listing position @i: when the record
 * last at position i + CHANGED_PREFETCH_AHEAD has another pod than last
 * time, what its visit reads of that change is asked for: its UID, the new
 * pod and the one it lets go. An unchanged pod's visit reads only its
 * record's first line, which this reads too (issue 18).
 */
static void records_prefetch(const struct kc_generic_pleg *g, const struct kc_pod_list *pods,
                             size_t i)
{
        const struct pod_record *r;
        size_t k = i + CHANGED_PREFETCH_AHEAD;

        if (k >= g->n_by_position || k >= pods->n)
                return;
        r = g->by_position[k];
        if (r->listed == pods->pods[k])
                return;
        __builtin_prefetch(r->uid);
        kc_pod_prefetch(pods->pods[k]);
        kc_pod_prefetch(r->listed);
}

/*
 * setCurrent: every record's current snapshot becomes its pod in this
 * listing, or NULL. A record whose pod is the same object as last time keeps
 * it untouched; records the listing lacks are visited only when there are
 * some. *ret_dup is set when a UID is listed twice (the last one wins, as
 * upstream; the running counts are then not the records' sum). The records
 * relist_pod() has work on are queued in g->dirty, in g->order's order: the
 * relist loop visits only them, so it walks no record of an unchanged pod.
 */
static int records_set_current(struct kc_generic_pleg *g, const struct kc_pod_list *pods,
                               bool *ret_dup)
{
        struct pod_record *r;
        size_t i, touched = 0;
        int q = 0;

        g->gen++;
        g->n_dirty = 0;
        if (KC_ARRAY_GROW(g->by_position, g->cap_by_position, pods->n, 64) < 0 ||
            KC_ARRAY_GROW(g->dirty, g->cap_dirty, kc_map_size(g->records) + pods->n, 64) < 0)
                return -ENOMEM;
        for (i = 0; i < pods->n; i++) {
                struct kc_pod *p = pods->pods[i];

                records_prefetch(g, pods, i);
                r = record_find(g, i, p);
                if (!r) {
                        size_t len = strlen(p->id) + 1;

                        /* Its first line holds what each relist reads (struct pod_record). */
                        r = aligned_alloc(RECORD_ALIGN, (sizeof(*r) + len + RECORD_ALIGN - 1) /
                                                                RECORD_ALIGN * RECORD_ALIGN);
                        if (!r) {
                                q = -ENOMEM;
                                break;
                        }
                        *r = (struct pod_record){ 0 };
                        memcpy(r->uid, p->id, len);
                        r->seq = g->next_seq++;
                        if (kc_map_put(g->records, r->uid, r) < 0) {
                                free(r);
                                q = -ENOMEM;
                                break;
                        }
                        kc_list_add_tail(&g->order, &r->link);
                }
                if (r->listed_gen == g->gen)
                        *ret_dup = true;
                else
                        touched++;
                r->listed_gen = g->gen;
                if (r->current != p) {
                        kc_pod_unref(r->current);
                        r->current = kc_pod_ref(p);
                }
                if (r->listed != p)
                        record_set_listed(g, r, p);
                record_queue(g, r);
                g->by_position[i] = r;
        }
        /* Records are freed only while unlisted: the positions stay valid till the next call. */
        g->n_by_position = q < 0 ? 0 : pods->n;
        if (q < 0)
                return q;
        if (touched != kc_map_size(g->records))
                kc_list_for_each_entry (r, &g->order, struct pod_record, link)
                        if (r->listed_gen != g->gen) {
                                r->current = kc_pod_unref(r->current);
                                record_set_listed(g, r, NULL);
                                record_queue(g, r);
                        }
        dirty_sort(g);
        return 0;
}

/* update: the current snapshot becomes the old one, or the record goes. */
static void record_update(struct kc_generic_pleg *g, struct pod_record *r)
{
        if (!r->current) {
                kc_map_remove(g->records, r->uid);
                kc_list_del(&r->link);
                record_free(r);
                return;
        }
        kc_pod_unref(r->old);
        r->old = TAKE_PTR(r->current);
}

/* ------------------------------------------------------------------------ */
/* Cache update                                                               */

static bool status_has_ready_sandbox(const struct kc_pod_status *s)
{
        size_t i;

        for (i = 0; i < s->n_sandboxes; i++)
                if (s->sandboxes[i].state == KC_SANDBOX_STATE_READY)
                        return true;
        return false;
}

/*
 * *ret: a reference to the status cached for @uid; NULL when there is
 * none, or when an error is cached with it. 0 or -ENOMEM (*ret untouched).
 */
static int cached_status(struct kc_generic_pleg *g, const char *uid, struct kc_pod_status **ret)
{
        _cleanup_(kc_pod_status_unrefp) struct kc_pod_status *status = NULL;
        _cleanup_free_ char *err = NULL;
        int r;

        r = kc_pod_cache_get(g->cache, uid, &status, &err);
        if (r < 0)
                return r;
        /* 0: nothing is cached, and the status is a default one. */
        *ret = r == 0 || err ? NULL : TAKE_PTR(status);
        return 0;
}

/*
 * getPodIPs: a status without IPs and without a READY sandbox (an exited
 * pod) keeps reporting the IPs cached before. Returns a new reference to the
 * status to cache: @status itself or a copy carrying the cached IPs.
 */
static int preserve_pod_ips(struct kc_generic_pleg *g, const char *uid,
                            struct kc_pod_status *status, struct kc_pod_status **ret)
{
        _cleanup_(kc_pod_status_unrefp) struct kc_pod_status *cached = NULL;
        struct kc_pod_status tmpl;
        int r;

        if (status->n_ips > 0 || status_has_ready_sandbox(status))
                goto keep;
        r = cached_status(g, uid, &cached);
        if (r < 0)
                return r;
        if (!cached || cached->n_ips == 0)
                goto keep;
        tmpl = *status;
        tmpl.ips = cached->ips;
        tmpl.n_ips = cached->n_ips;
        return kc_pod_status_new(&tmpl, ret);
keep:
        *ret = kc_pod_status_ref(status);
        return 0;
}

static bool evented_in_use(struct kc_generic_pleg *g)
{
        return g->evented_in_use && g->evented_in_use(g->evented_userdata);
}

/* A pod's status is read from what the listing found (D54): not while EventedPLEG is in use. */
static bool reads_listed_status(const struct kc_generic_pleg *g, bool evented)
{
        return g->runtime.ops->get_listed_pod_status && !evented;
}

/*
 * updateCache: refresh @uid's cache entry from the runtime. @pod is the
 * current snapshot; NULL means the pod is gone and its entry is deleted.
 * Returns 0, or the runtime's error (which is cached too, as upstream does).
 * *ret_status (may be NULL) is a new reference to what was cached.
 */
static int update_cache(struct kc_generic_pleg *g, const struct kc_pod *pod, const char *uid,
                        struct kc_pod_status **ret_status, bool *ret_updated)
{
        _cleanup_(kc_pod_status_unrefp) struct kc_pod_status *status = NULL;
        _cleanup_(kc_pod_status_unrefp) struct kc_pod_status *to_cache = NULL;
        _cleanup_(kc_pod_status_unrefp) struct kc_pod_status *prev = NULL;
        struct kc_runtime_error err;
        bool evented;
        int64_t ts;
        int r, q;

        kc_runtime_error_init(&err, KC_RUNTIME_OK);

        if (!pod) {
                /* Gone from the listing: drop its entry. Wakes nobody. */
                kc_pod_cache_delete(g->cache, uid);
                *ret_status = NULL;
                *ret_updated = true;
                return 0;
        }

        pthread_mutex_lock(&g->cache_lock);
        evented = evented_in_use(g);
        if (reads_listed_status(g, evented)) {
                /*
                 * The pod's objects are those the listing found (D54): the
                 * status is as new as the listing, whose relist set the
                 * timestamp before it listed. Not while EventedPLEG is in
                 * use: there an entry so dated would lose to the entries of
                 * the events that came during the relist. The status this
                 * PLEG cached last may give containers that stayed as they
                 * were (D55).
                 */
                ts = atomic_load_explicit(&g->relist_time, memory_order_relaxed);
                /* Out of memory: prev stays NULL, and every object is read anew. */
                (void)cached_status(g, uid, &prev);
                r = g->runtime.ops->get_listed_pod_status(g->runtime.self, pod, prev, &status,
                                                          &err);
        } else {
                /* The timestamp is taken before the runtime is asked. */
                ts = kc_clock_now(g->clock);
                r = g->runtime.ops->get_pod_status(g->runtime.self, uid, pod->name, pod->namespace,
                                                   &status, &err);
        }
        if (r >= 0 && status) {
                q = preserve_pod_ips(g, uid, status, &to_cache);
                if (q < 0) {
                        pthread_mutex_unlock(&g->cache_lock);
                        return q;
                }
        } else {
                to_cache = kc_pod_status_ref(status);
        }
        if (r < 0 && !err.message[0])
                snprintf(err.message, sizeof(err.message), "%s", strerror(-r));
        /* While EventedPLEG is in use, the runtime's own timestamp orders writes. */
        if (evented && status && status->timestamp != 0)
                ts = status->timestamp;
        *ret_updated = kc_pod_cache_set(g->cache, uid, to_cache, r < 0 ? err.message : NULL, ts);
        pthread_mutex_unlock(&g->cache_lock);

        if (r < 0) {
                kc_log_error_s(err.message, "PLEG: Write status",
                               KC_KV_POD(pod->namespace, pod->name), KC_KV_STR("podUID", uid));
                return r;
        }
        *ret_status = TAKE_PTR(to_cache);
        return 0;
}

/* ------------------------------------------------------------------------ */
/* Sending                                                                    */

/* Remembers @uid once (under resync_lock). */
static int resync_mark(struct kc_generic_pleg *g, const char *uid)
{
        char *copy;
        size_t i;

        KC_LOCK_GUARD(&g->resync_lock);
        for (i = 0; i < g->n_resync; i++)
                if (strcmp(g->resync[i], uid) == 0)
                        return 0;
        if (KC_ARRAY_GROW(g->resync, g->resync_cap, g->n_resync + 1, 16) < 0)
                return -ENOMEM;
        copy = strdup(uid);
        if (!copy)
                return -ENOMEM;
        g->resync[g->n_resync++] = copy;
        return 0;
}

/* Non-blocking send; a full channel drops the event and marks the pod. */
static bool send_event(struct kc_generic_pleg *g, const char *uid, enum kc_pleg_event_type type,
                       const char *data)
{
        struct kc_pleg_event *e = kc_pleg_event_new(uid, type, data);

        if (e && kc_chan_push_mp(g->events, e) == 0) {
                g->relist_events++;
                return true;
        }
        kc_pleg_event_free(e);
        if (g->metrics)
                kc_counter_inc_mp(g->metrics->pleg_discard_events);
        kc_log_error_s(NULL, "Event channel is full, discard this relist() cycle event");
        if (resync_mark(g, uid) < 0)
                kc_log_error_s(NULL, "PLEG: could not remember pod for resync",
                               KC_KV_STR("podUID", uid));
        return false;
}

/* Sends the PodSync events owed for earlier drops, in the order they were
 * owed; returns how many stay owed. */
static size_t resync_flush(struct kc_generic_pleg *g)
{
        size_t i, kept = 0;

        pthread_mutex_lock(&g->resync_lock);
        for (i = 0; i < g->n_resync; i++) {
                struct kc_pleg_event *e = kc_pleg_event_new(g->resync[i], KC_PLEG_POD_SYNC, NULL);

                if (e && kc_chan_push_mp(g->events, e) == 0) {
                        kc_log_v_s(2, "PLEG: resyncing pod after a dropped event",
                                   KC_KV_STR("podUID", g->resync[i]));
                        free(g->resync[i]);
                        continue;
                }
                kc_pleg_event_free(e);
                g->resync[kept++] = g->resync[i];
        }
        g->n_resync = kept;
        pthread_mutex_unlock(&g->resync_lock);
        return kept;
}

int kc_generic_pleg_owe_sync_mp(struct kc_generic_pleg *g, const char *uid)
{
        if (!g || !uid || !uid[0])
                return -EINVAL;
        return resync_mark(g, uid);
}

size_t kc_generic_pleg_flush_owed_mp(struct kc_generic_pleg *g)
{
        return resync_flush(g);
}

static void log_container_died(const struct kc_pod_status *status, const char *uid,
                               const char *container_id)
{
        size_t i;

        if (!status)
                return;
        for (i = 0; i < status->n_containers; i++)
                if (strcmp(status->containers[i].id, container_id) == 0) {
                        kc_log_v_s(2, "Generic (PLEG): container finished", KC_KV_STR("podID", uid),
                                   KC_KV_STR("containerID", container_id),
                                   KC_KV_INT("exitCode", status->containers[i].exit_code));
                        return;
                }
}

/* ------------------------------------------------------------------------ */
/* Relist                                                                     */

/*
 * The running pod and container gauges from this listing's counts: @recount
 * counts them from @pods, else they are the records' sum, kept as each
 * record's listed pod changed (equal when every UID is listed once).
 */
static void update_running_metrics(struct kc_generic_pleg *g, const struct kc_pod_list *pods,
                                   bool recount)
{
        struct running_counts c = g->running_sum;
        size_t i;
        int s;

        if (!g->metrics)
                return;
        if (recount) {
                c = (struct running_counts){ 0 };
                for (i = 0; i < pods->n; i++) {
                        struct running_counts one = running_counts_of(pods->pods[i]);

                        for (s = 0; s < _KC_CONTAINER_STATE_MAX; s++)
                                c.per_state[s] += one.per_state[s];
                        c.pods += one.pods;
                }
        }
        /* Only the states present this round are set; others keep their value. */
        for (s = 0; s < _KC_CONTAINER_STATE_MAX; s++)
                if (c.per_state[s] > 0)
                        kc_gauge_vec_set_mp(g->metrics->running_containers,
                                            kc_container_state_to_string(s),
                                            (double)c.per_state[s]);
        kc_gauge_set_mp(g->metrics->running_pods, (double)c.pods);
}

/* Whole seconds and the fraction separately: epoch nanoseconds do not fit a
 * double's mantissa, epoch seconds with a fraction do (to about 0.1 µs). */
static double ns_to_seconds(int64_t ns)
{
        return (double)(ns / KC_NSEC_PER_SEC) +
               (double)(ns % KC_NSEC_PER_SEC) / (double)KC_NSEC_PER_SEC;
}

/* One pod of the relist loop (steps 9.1–9.9). May free @r. */
static void relist_pod(struct kc_generic_pleg *g, struct pod_record *r)
{
        _cleanup_(kc_pod_status_unrefp) struct kc_pod_status *status = NULL;
        _cleanup_(kc_pod_unrefp) struct kc_pod *old = NULL;
        bool reinspect = r->reinspect, updated = false;
        _cleanup_free_ char *uid = NULL;
        const char *send_uid;
        size_t n = 0, i;

        r->reinspect = false;
        if (kc__pleg_compute_events(r->old, r->current, &g->scratch, &g->scratch_cap, &n) < 0) {
                kc_log_error_s(strerror(ENOMEM), "PLEG: computing events failed",
                               KC_KV_STR("podUID", r->uid));
                r->reinspect = true;
                return;
        }
        if (n == 0 && !reinspect)
                return;

        if (update_cache(g, r->current, r->uid, &status, &updated) < 0) {
                /* Keep the old snapshot: the same events come back next time. */
                if (kc_log_get_verbosity() >= 4)
                        kc_log_error_s(NULL, "PLEG: Ignoring events for pod",
                                       KC_KV_STR("podUID", r->uid));
                r->reinspect = true;
                return;
        }
        if (g->evented_in_use && !updated)
                /* The gate is on and a newer entry won: skip the pod, as upstream. */
                return;

        /* The events point into the snapshots; record_update() lets go of the
         * old one, and of the whole record when the pod is gone (its current
         * one becomes the old one otherwise): keep what the sends need. */
        if (!r->current) {
                uid = strdup(r->uid);
                if (!uid) {
                        r->reinspect = true;
                        return;
                }
        }
        send_uid = uid ? uid : r->uid;
        old = kc_pod_ref(r->old);
        record_update(g, r);
        for (i = 0; i < n; i++) {
                const struct kc_pleg_event_spec *ev = &g->scratch[i];

                /* ContainerChanged is computed, never delivered. */
                if (ev->type == KC_PLEG_CONTAINER_CHANGED)
                        continue;
                if (send_event(g, send_uid, ev->type, ev->container_id) &&
                    ev->type == KC_PLEG_CONTAINER_DIED)
                        log_container_died(status, send_uid, ev->container_id);
        }
}

/*
 * Before relist_pod() of g->dirty[@i]: what the next few visits read is
 * asked for ahead, each a step further the closer its visit (issue 18).
 * Each would otherwise be a wait for memory that the pods before it
 * evicted, one after another: a record (five visits ahead), its pods
 * (four), what the runtime reads for their status (three to one, when
 * @listed_status: update_cache() asks for a listed pod's) and their cache
 * entries (two to none).
 */
static void relist_prefetch(struct kc_generic_pleg *g, size_t i, bool listed_status)
{
        void (*runtime_prefetch)(void *, const struct kc_pod *, const struct kc_pod *, unsigned) =
                listed_status ? g->runtime.ops->prefetch_listed_pod_status : NULL;
        struct pod_record *const *d = g->dirty;
        size_t n = g->n_dirty;

        if (i + 5 < n) {
                /* The UID may run into the next line (a record's first holds its pointers). */
                __builtin_prefetch(d[i + 5]);
                __builtin_prefetch(d[i + 5]->uid);
                __builtin_prefetch(d[i + 5]->uid + UID_LAST_BYTE);
        }
        if (i + 4 < n) {
                kc_pod_prefetch(d[i + 4]->old);
                kc_pod_prefetch(d[i + 4]->current);
        }
        for (unsigned ahead = 3; runtime_prefetch && ahead > 0; ahead--)
                if (i + ahead < n && d[i + ahead]->current)
                        runtime_prefetch(g->runtime.self, d[i + ahead]->current, d[i + ahead]->old,
                                         ahead);
        kc_pod_cache_prefetch(g->cache, d[i]->uid, i + 1 < n ? d[i + 1]->uid : NULL,
                              i + 2 < n ? d[i + 2]->uid : NULL);
}

int64_t kc_generic_pleg_last_relist_mp(struct kc_generic_pleg *g)
{
        return atomic_load_explicit(&g->relist_time, memory_order_relaxed);
}

bool kc_generic_pleg_filled_mp(struct kc_generic_pleg *g)
{
        /* Acquire: pairs with the release store after the relist's cache writes. */
        return atomic_load_explicit(&g->filled, memory_order_acquire);
}

int kc_generic_pleg_relist(struct kc_generic_pleg *g)
{
        struct kc_pod_list pods = { 0 };
        struct kc_runtime_error err = { 0 };
        size_t i;
        int64_t start, timestamp, last;
        bool dup = false, listed_status;
        int q;

        pthread_mutex_lock(&g->relist_lock);
        kc_log_v_s(5, "GenericPLEG: Relisting");
        g->relist_events = 0;

        start = kc_clock_now(g->clock);
        last = atomic_load_explicit(&g->relist_time, memory_order_relaxed);
        if (last != 0 && g->metrics)
                kc_histogram_observe_mp(g->metrics->pleg_relist_interval,
                                        ns_to_seconds(start - last));

        /* The timestamp is taken before listing. */
        timestamp = kc_clock_now(g->clock);
        q = g->runtime.ops->get_pods(g->runtime.self, true, &pods, &err);
        if (q < 0) {
                if (atomic_load_explicit(&g->stopping, memory_order_relaxed))
                        kc_log_v_s(2, "GenericPLEG: relist ended by the shutdown",
                                   KC_KV_STR("err", err.message[0] ? err.message : strerror(-q)));
                else
                        kc_log_error_s(err.message[0] ? err.message : strerror(-q),
                                       "GenericPLEG: Unable to retrieve pods");
                goto out;
        }
        /* Healthy() reads this from other threads; the value is all it needs. */
        atomic_store_explicit(&g->relist_time, timestamp, memory_order_relaxed);

        q = records_set_current(g, &pods, &dup);
        update_running_metrics(g, &pods, dup || q < 0);
        kc_pod_list_done(&pods);
        if (q < 0) {
                kc_log_error_s(strerror(ENOMEM), "GenericPLEG: recording pods failed");
                goto out;
        }

        (void)resync_flush(g);

        /* As update_cache() decides it; should it change meanwhile, only speed does. */
        listed_status = reads_listed_status(g, evented_in_use(g));
        /* relist_pod() may free its record, no other. */
        for (i = 0; i < g->n_dirty; i++) {
                relist_prefetch(g, i, listed_status);
                relist_pod(g, g->dirty[i]);
        }
        g->n_dirty = 0;

        /* Only after every per-pod write: the cache is as new as the listing. */
        kc_pod_cache_update_time(g->cache, timestamp);
        atomic_store_explicit(&g->filled, true, memory_order_release);
        /* Quiet relists stay at -v=5 (above); one that saw changes tells the story at -v=2. */
        if (g->relist_events)
                kc_log_v_s(2, "GenericPLEG: relist found changes",
                           KC_KV_UINT("events", g->relist_events));

out:
        if (g->metrics)
                kc_histogram_observe_mp(g->metrics->pleg_relist_duration,
                                        ns_to_seconds(kc_clock_now(g->clock) - start));
        pthread_mutex_unlock(&g->relist_lock);
        return q < 0 ? q : 0;
}

/* ------------------------------------------------------------------------ */
/* Health                                                                     */

bool kc_generic_pleg_healthy(struct kc_generic_pleg *g, char **ret_err)
{
        int64_t relist_time = atomic_load_explicit(&g->relist_time, memory_order_relaxed);
        int64_t threshold = atomic_load_explicit(&g->relist_threshold, memory_order_relaxed);
        char elapsed_s[KC_DURATION_MAX], threshold_s[KC_DURATION_MAX];
        int64_t elapsed;
        char *msg;

        if (relist_time == 0) {
                if (ret_err)
                        *ret_err = strdup("pleg has yet to be successful");
                return false;
        }
        if (g->metrics)
                kc_gauge_set_mp(g->metrics->pleg_last_seen, ns_to_seconds(relist_time));
        elapsed = kc_clock_now(g->clock) - relist_time;
        if (elapsed > threshold) {
                if (ret_err) {
                        if (asprintf(&msg, "pleg was last seen active %s ago; threshold is %s",
                                     kc_format_duration(elapsed, elapsed_s),
                                     kc_format_duration(threshold, threshold_s)) < 0)
                                msg = NULL;
                        *ret_err = msg;
                }
                return false;
        }
        if (ret_err)
                *ret_err = NULL;
        return true;
}

/* ------------------------------------------------------------------------ */
/* Lifecycle                                                                  */

int kc_generic_pleg_new(const struct kc_generic_pleg_config *cfg, struct kc_generic_pleg **ret)
{
        _cleanup_free_ struct kc_generic_pleg *g = NULL;
        int r;

        if (!cfg || !cfg->runtime.ops || !cfg->events || !cfg->cache || !cfg->clock ||
            cfg->relist_period_ns <= 0 || cfg->relist_threshold_ns <= 0)
                return -EINVAL;
        g = calloc(1, sizeof(*g));
        if (!g)
                return -ENOMEM;
        r = kc_map_new(&g->records);
        if (r < 0)
                return r;
        kc_list_init(&g->order);
        g->runtime = cfg->runtime;
        g->events = cfg->events;
        g->cache = cfg->cache;
        g->clock = cfg->clock;
        g->metrics = cfg->metrics;
        g->evented_in_use = cfg->evented_in_use;
        g->evented_userdata = cfg->evented_userdata;
        atomic_init(&g->relist_period, cfg->relist_period_ns);
        atomic_init(&g->relist_threshold, cfg->relist_threshold_ns);
        atomic_init(&g->relist_time, 0);
        atomic_init(&g->filled, false);
        atomic_init(&g->stopping, false);
        pthread_mutex_init(&g->relist_lock, NULL);
        pthread_mutex_init(&g->cache_lock, NULL);
        pthread_mutex_init(&g->resync_lock, NULL);
        pthread_mutex_init(&g->run_lock, NULL);
        *ret = TAKE_PTR(g);
        return 0;
}

struct kc_generic_pleg *kc_generic_pleg_free(struct kc_generic_pleg *g)
{
        struct pod_record *r, *next;
        size_t i;

        if (!g)
                return NULL;
        kc_generic_pleg_stop(g);
        kc_list_for_each_entry_safe (r, next, &g->order, struct pod_record, link)
                record_free(r);
        kc_map_free(g->records);
        for (i = 0; i < g->n_resync; i++)
                free(g->resync[i]);
        free(g->resync);
        free(g->scratch);
        free(g->by_position);
        free(g->dirty);
        pthread_mutex_destroy(&g->relist_lock);
        pthread_mutex_destroy(&g->cache_lock);
        pthread_mutex_destroy(&g->resync_lock);
        pthread_mutex_destroy(&g->run_lock);
        free(g);
        return NULL;
}

/* wait.Until: relist at once, then sleep a period after each relist returns. */
static void *relist_loop(void *arg)
{
        struct kc_generic_pleg *g = arg;
        struct kc_cancel *stop = g->stop;

        do {
                (void)kc_generic_pleg_relist(g);
        } while (kc_clock_sleep(g->clock,
                                atomic_load_explicit(&g->relist_period, memory_order_relaxed),
                                stop) == 0);
        return NULL;
}

int kc_generic_pleg_start(struct kc_generic_pleg *g)
{
        int r;

        KC_LOCK_GUARD(&g->run_lock);
        if (g->running)
                return 0;
        atomic_store_explicit(&g->stopping, false, memory_order_relaxed);
        r = kc_cancel_new(&g->stop);
        if (r < 0)
                return r;
        r = -pthread_create(&g->thread, NULL, relist_loop, g);
        if (r < 0) {
                g->stop = kc_cancel_free(g->stop);
                return r;
        }
        g->running = true;
        return 0;
}

void kc_generic_pleg_begin_stop(struct kc_generic_pleg *g)
{
        atomic_store_explicit(&g->stopping, true, memory_order_relaxed);
}

void kc_generic_pleg_stop(struct kc_generic_pleg *g)
{
        pthread_mutex_lock(&g->run_lock);
        if (g->running) {
                kc_cancel_trigger_mp(g->stop);
                pthread_join(g->thread, NULL);
                g->stop = kc_cancel_free(g->stop);
                g->running = false;
        }
        pthread_mutex_unlock(&g->run_lock);
}

struct kc_chan *kc_generic_pleg_watch(struct kc_generic_pleg *g)
{
        return g->events;
}

void kc_generic_pleg_update(struct kc_generic_pleg *g, int64_t relist_period_ns,
                            int64_t relist_threshold_ns)
{
        atomic_store_explicit(&g->relist_period, relist_period_ns, memory_order_relaxed);
        atomic_store_explicit(&g->relist_threshold, relist_threshold_ns, memory_order_relaxed);
}

/* The kc_pleg vtable. */
static int op_start(void *self)
{
        return kc_generic_pleg_start(self);
}
static void op_stop(void *self)
{
        kc_generic_pleg_stop(self);
}
static struct kc_chan *op_watch(void *self)
{
        return kc_generic_pleg_watch(self);
}
static bool op_healthy(void *self, char **ret_err)
{
        return kc_generic_pleg_healthy(self, ret_err);
}
static int op_relist(void *self)
{
        return kc_generic_pleg_relist(self);
}
static void op_update(void *self, int64_t period, int64_t threshold)
{
        kc_generic_pleg_update(self, period, threshold);
}

static const struct kc_pleg_ops generic_pleg_ops = {
        .start = op_start,
        .stop = op_stop,
        .watch = op_watch,
        .healthy = op_healthy,
        .relist = op_relist,
        .update = op_update,
};

struct kc_pleg kc_generic_pleg_as_pleg(struct kc_generic_pleg *g)
{
        return (struct kc_pleg){ .ops = &generic_pleg_ops, .self = g };
}
