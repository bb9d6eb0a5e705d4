/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Running the probe workers (upstream: each worker's goroutine with its
 * time.Ticker, worker.go run()): a scheduler thread and a pool of runner
 * threads, so that 2,000 probes a second cost a few wakes, not one thread
 * wake per probe (internal.h says how). Everything here is under m->lock
 * unless said otherwise.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/array.h"
#include "core/cancel.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/jitter.h"
#include "core/list.h"
#include "core/lock.h"
#include "core/log.h"
#include "core/map.h"
#include "internal.h"
#include "runtime/api_pod.h"

/* One scheduler wake serves every probe due within a grid step. */
#define GRID_NS (10 * KC_NSEC_PER_MSEC)
/* Runners only probe and wait: a small stack is plenty. */
#define RUNNER_STACK_SIZE (256 * 1024)
/* A runner idle this long (real time) exits, but for the last one. */
#define RUNNER_IDLE_S 30

/* ------------------------------------------------------------------------ */
/* The heap of idle workers, by due time                                      */

static void heap_set(struct kc_prober_manager *m, size_t i, struct kc__worker *w)
{
        m->heap[i] = w;
        w->heap_idx = i;
}

static void heap_up(struct kc_prober_manager *m, size_t i)
{
        struct kc__worker *w = m->heap[i];

        while (i > 0 && m->heap[(i - 1) / 2]->due > w->due) {
                heap_set(m, i, m->heap[(i - 1) / 2]);
                i = (i - 1) / 2;
        }
        heap_set(m, i, w);
}

static void heap_down(struct kc_prober_manager *m, size_t i)
{
        struct kc__worker *w = m->heap[i];

        for (;;) {
                size_t c = 2 * i + 1;

                if (c >= m->n_heap)
                        break;
                if (c + 1 < m->n_heap && m->heap[c + 1]->due < m->heap[c]->due)
                        c++;
                if (m->heap[c]->due >= w->due)
                        break;
                heap_set(m, i, m->heap[c]);
                i = c;
        }
        heap_set(m, i, w);
}

static int heap_push(struct kc_prober_manager *m, struct kc__worker *w)
{
        if (KC_ARRAY_GROW(m->heap, m->cap_heap, m->n_heap + 1, 64) < 0)
                return -ENOMEM;
        m->heap[m->n_heap++] = w;
        heap_up(m, m->n_heap - 1);
        return 0;
}

static void heap_remove(struct kc_prober_manager *m, struct kc__worker *w)
{
        size_t i = w->heap_idx;
        struct kc__worker *last;

        if (i == SIZE_MAX)
                return;
        w->heap_idx = SIZE_MAX;
        last = m->heap[--m->n_heap];
        if (i == m->n_heap)
                return;
        heap_set(m, i, last);
        heap_up(m, i);
        heap_down(m, last->heap_idx);
}

/* ------------------------------------------------------------------------ */
/* Waking threads                                                             */

/* Wakes the scheduler to look at the heap again (a new earlier deadline, a stop). */
static void wake_scheduler(struct kc_prober_manager *m)
{
        m->sched_dirty = true;
        kc_cancel_trigger_mp(m->sched_wake);
}

static void *runner_main(void *arg);

/* Frees a joined scheduler or runner thread; under m->lock (kc_reaper_join_locked()). */
static void thread_release(struct kc_thread *t)
{
        free(kc_container_of(t, struct kc__thread, thread));
}

/* Starts @p fn on a new joinable thread, joining those that exited; under m->lock. */
static int spawn_locked(struct kc_prober_manager *m, void *(*fn)(void *))
{
        struct kc__thread *t = calloc(1, sizeof(*t));
        int r;

        if (!t)
                return -ENOMEM;
        t->m = m;
        r = kc_reaper_spawn_locked(&m->threads, &t->thread, RUNNER_STACK_SIZE, fn, t);
        if (r < 0)
                free(t);
        return r;
}

/* The last thing a thread does under m->lock: counted out and listed for joining. */
static void thread_exit_locked(struct kc__thread *t)
{
        struct kc_prober_manager *m = t->m;

        kc_reaper_retire_locked(&m->threads, &t->thread);
        pthread_cond_broadcast(&m->exited);
}

/* One more runner for the queue: an idle one woken, else a new one. */
static void add_runner(struct kc_prober_manager *m)
{
        if (m->n_idle > 0) {
                pthread_cond_signal(&m->work);
                return;
        }
        if (spawn_locked(m, runner_main) == 0)
                m->n_runners++;
        else if (m->n_runners == 0)
                kc_log_error_s(NULL, "Failed to start a probe runner");
}

/* Queues @p w to run; with no runner at work, one is woken or made. */
static void enqueue(struct kc_prober_manager *m, struct kc__worker *w)
{
        if (w->queued || w->running)
                return;
        heap_remove(m, w);
        w->queued = true;
        w->queued_pass = m->pass;
        kc_list_add_tail(&m->queue, &w->link);
        if (m->n_runners == m->n_idle)
                add_runner(m);
}

/* Takes the ticks due by now: the run about to start serves them (a Go ticker drops missed ticks). */
static void take_ticks(struct kc_prober_manager *m, struct kc__worker *w)
{
        int64_t period = (int64_t)w->spec->period_seconds * KC_NSEC_PER_SEC;
        int64_t now = kc_clock_now(m->cfg.clock);

        if (period <= 0)
                period = KC_NSEC_PER_SEC;
        while (w->due <= now)
                w->due += period;
}

/* After a run: again at once (a manual trigger, a tick passed meanwhile), else at the next tick. */
static void rearm(struct kc_prober_manager *m, struct kc__worker *w)
{
        if (w->triggered || kc_clock_now(m->cfg.clock) >= w->due) {
                w->triggered = false;
                enqueue(m, w);
                return;
        }
        if (heap_push(m, w) < 0) {
                enqueue(m, w); /* no room in the heap: probe again rather than lose it */
                return;
        }
        if (w->due < m->sched_deadline)
                wake_scheduler(m);
}

/* ------------------------------------------------------------------------ */
/* Workers                                                                    */

void kc__worker_stop(struct kc__worker *w)
{
        w->stop = true;
        kc_cancel_trigger_mp(w->stopped);
        enqueue(w->m, w); /* a runner exits it */
}

void kc__worker_trigger(struct kc__worker *w)
{
        if (w->queued)
                return; /* about to run anyway */
        if (w->triggered) {
                kc_log_info_s("Failed to trigger a manual run",
                              KC_KV_STR("probe", kc__probe_type_name(w->type)));
                return;
        }
        if (w->running) {
                w->triggered = true; /* once its probe ends */
                return;
        }
        enqueue(w->m, w);
}

int kc__worker_start(struct kc_prober_manager *m, enum kc_probe_type t, struct kc_api_pod *pod,
                     const struct kc_api_container *c)
{
        _cleanup_free_ char *key = kc__worker_key(pod->uid, c->name, t);
        struct kc__worker *w;
        int64_t now = kc_clock_now(m->cfg.clock), period;
        int r;

        if (!key)
                return -ENOMEM;
        w = kc__worker_new(m, t, pod, c, key);
        if (!w)
                return -ENOMEM;
        r = kc_map_put(m->workers, w->key, w);
        if (r < 0) {
                kc__worker_free(w);
                return r;
        }
        m->n_workers++;
        /* A kubelet that just started would probe everything at once: spread the first probes. */
        period = (int64_t)w->spec->period_seconds * KC_NSEC_PER_SEC;
        w->due = now;
        if (period > now - m->start_ns)
                w->due += kc_jitter(period, 1.0) - period;
        if (w->due <= now) {
                enqueue(m, w);
        } else if (heap_push(m, w) == 0) {
                if (w->due < m->sched_deadline)
                        wake_scheduler(m);
        } else {
                enqueue(m, w);
        }
        return 0;
}

/* The worker's exit (worker.run's deferred clean-up): its result, metrics and map entry. */
static void worker_exit(struct kc_prober_manager *m, struct kc__worker *w)
{
        if (kc_map_get(m->workers, w->key) == w)
                kc_map_remove(m->workers, w->key);
        m->n_workers--;
        pthread_mutex_unlock(&m->lock);
        if (w->container_id)
                kc_results_manager_remove(w->results, w->container_id);
        kc__probe_metrics_forget(m->metrics, w);
        kc__worker_free(w);
        pthread_mutex_lock(&m->lock);
        pthread_cond_broadcast(&m->exited);
}

/* ------------------------------------------------------------------------ */
/* Runners                                                                    */

/* Waits for work; false when the runner should exit (closing, or idle too long). */
static bool runner_wait(struct kc_prober_manager *m)
{
        while (kc_list_empty(&m->queue)) {
                struct timespec ts;
                int r;

                if (m->closing)
                        return false;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += RUNNER_IDLE_S;
                m->n_idle++;
                r = pthread_cond_timedwait(&m->work, &m->lock, &ts);
                m->n_idle--;
                if (r == ETIMEDOUT && kc_list_empty(&m->queue) && m->n_runners > 1)
                        return false;
        }
        return true;
}

static void *runner_main(void *arg)
{
        struct kc__thread *self = arg;
        struct kc_prober_manager *m = self->m;

        pthread_mutex_lock(&m->lock);
        while (runner_wait(m)) {
                struct kc__worker *w =
                        kc_list_entry(kc_list_first(&m->queue), struct kc__worker, link);
                bool keep = false;

                kc_list_del(&w->link);
                w->queued = false;
                w->running = true;
                take_ticks(m, w);
                if (!w->stop) {
                        pthread_mutex_unlock(&m->lock);
                        keep = kc__worker_do_probe(w);
                        pthread_mutex_lock(&m->lock);
                }
                w->running = false;
                if (keep && !w->stop && !m->closing)
                        rearm(m, w);
                else
                        worker_exit(m, w);
        }
        m->n_runners--;
        thread_exit_locked(self);
        pthread_mutex_unlock(&m->lock);
        return NULL;
}

/* ------------------------------------------------------------------------ */
/* The scheduler                                                              */

/* One pass: due workers to the queue; a runner for each worker queued since the last pass. */
static void schedule_pass(struct kc_prober_manager *m, int64_t now)
{
        struct kc__worker *w;
        size_t stalled = 0;

        kc_list_for_each_entry (w, &m->queue, struct kc__worker, link)
                stalled += w->queued_pass < m->pass;
        m->pass++;
        while (m->n_heap > 0 && m->heap[0]->due <= now)
                enqueue(m, m->heap[0]);
        for (; stalled > 0; stalled--)
                add_runner(m);
}

/* How long to sleep: to the first due time on the grid, or a grid step while work waits. */
static int64_t sleep_ns(struct kc_prober_manager *m, int64_t now)
{
        int64_t until = INT64_MAX;

        if (m->n_heap > 0) {
                until = m->heap[0]->due;
                if (until % GRID_NS)
                        until += GRID_NS - until % GRID_NS;
        }
        if (!kc_list_empty(&m->queue) && until > now + GRID_NS)
                until = now + GRID_NS;
        m->sched_deadline = until;
        return until == INT64_MAX ? 3600 * KC_NSEC_PER_SEC : until - now;
}

static void *scheduler_main(void *arg)
{
        struct kc__thread *self = arg;
        struct kc_prober_manager *m = self->m;

        pthread_mutex_lock(&m->lock);
        while (!m->closing) {
                struct kc_cancel *tok;
                int64_t now = kc_clock_now(m->cfg.clock), ns;

                m->sched_asleep = false;
                schedule_pass(m, now);
                ns = sleep_ns(m, now);
                if (kc_cancel_is_set(m->sched_wake)) {
                        struct kc_cancel *fresh = NULL;

                        if (kc_cancel_new(&fresh) < 0) {
                                /* No fresh token: poll a grid step instead of spinning. */
                                ns = GRID_NS;
                        } else {
                                kc_cancel_free(m->sched_wake);
                                m->sched_wake = fresh;
                        }
                }
                tok = kc_cancel_is_set(m->sched_wake) ? NULL : m->sched_wake;
                m->sched_dirty = false;
                m->sched_asleep = true;
                pthread_mutex_unlock(&m->lock);
                (void)kc_clock_sleep(m->cfg.clock, ns, tok);
                pthread_mutex_lock(&m->lock);
        }
        m->sched_asleep = false;
        thread_exit_locked(self);
        pthread_mutex_unlock(&m->lock);
        return NULL;
}

int kc__scheduler_start(struct kc_prober_manager *m)
{
        int r;

        kc_list_init(&m->queue);
        kc_reaper_init(&m->threads, thread_release);
        m->sched_deadline = INT64_MAX;
        r = kc_cancel_new(&m->sched_wake);
        if (r < 0)
                return r;
        KC_LOCK_GUARD(&m->lock);
        return spawn_locked(m, scheduler_main);
}

void kc__scheduler_stop(struct kc_prober_manager *m)
{
        size_t it = 0;
        const char *key;
        void *v;

        KC_LOCK_GUARD(&m->lock);
        m->closing = true;
        while (kc_map_next(m->workers, &it, &key, &v))
                kc__worker_stop(v);
        /* The runners exit the queued workers, then themselves. */
        while (m->n_workers > 0) {
                if (!kc_list_empty(&m->queue) && m->n_runners == m->n_idle)
                        add_runner(m);
                pthread_cond_wait(&m->exited, &m->lock);
        }
        if (m->sched_wake)
                kc_cancel_trigger_mp(m->sched_wake);
        pthread_cond_broadcast(&m->work);
        while (m->threads.n_running > 0)
                pthread_cond_wait(&m->exited, &m->lock);
        kc_reaper_join_locked(&m->threads);
        kc_cancel_free(m->sched_wake);
        m->sched_wake = NULL;
        free(m->heap);
        m->heap = NULL;
}

bool kc__scheduler_quiescent(struct kc_prober_manager *m)
{
        return kc_list_empty(&m->queue) && m->n_runners == m->n_idle && m->sched_asleep &&
               !m->sched_dirty;
}
