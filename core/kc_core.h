/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kc_core.h
 * @brief cubelet core: ownership helpers, the injected clock, cancellation
 * tokens, klog-style logging, the bounded lock-free channel (kc_chan), a
 * string-keyed hash map, a bump arena, printf into a new string and Go-style
 * duration formatting.
 *
 * Conventions (see docs/architecture.md):
 * - functions return 0 or a negative errno; `ret_*`/`*ret` out-parameters are
 *   left untouched on failure unless the comment says otherwise;
 * - destructors accept NULL and return NULL: `x = kc_x_free(x);`;
 * - the thread contract of each call is in its name (`_mp`: any number of
 *   threads, `_sc`: the single consumer) or in its comment.
 */
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Ownership helpers                                                          */

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void kc_freep(void *p)
{
        free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(kc_freep)

static inline void kc_closep(int *fd)
{
        if (*fd >= 0)
                close(*fd);
}
#define _cleanup_close_ _cleanup_(kc_closep)

/* Defines `static inline void <func>p(type **p)` calling `func(*p)`. */
#define KC_DEFINE_CLEANUP_FUNC(type, func)                                                         \
        static inline void func##p(type **p)                                                       \
        {                                                                                          \
                if (*p)                                                                            \
                        (void)func(*p);                                                            \
        }

#define TAKE_PTR(p)                                                                                \
        ({                                                                                         \
                __typeof__(p) _kc_p = (p);                                                         \
                (p) = NULL;                                                                        \
                _kc_p;                                                                             \
        })
#define TAKE_FD(fd)                                                                                \
        ({                                                                                         \
                int _kc_fd = (fd);                                                                 \
                (fd) = -1;                                                                         \
                _kc_fd;                                                                            \
        })

/* Turns a libc call that returns -1/errno into 0/-errno. */
#define KC_NERRNO(expr) ((expr) < 0 ? -errno : 0)

#define KC_ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

#define KC_NSEC_PER_USEC INT64_C(1000)
#define KC_NSEC_PER_MSEC INT64_C(1000000)
#define KC_NSEC_PER_SEC INT64_C(1000000000)
#define KC_NSEC_PER_MIN (60 * KC_NSEC_PER_SEC)

/* ------------------------------------------------------------------------ */
/* Cancellation token                                                         */

/**
 * A one-shot cancellation token (the counterpart of a Go context's Done
 * channel). Any thread may trigger it; sleepers in kc_clock_sleep() wake up.
 */
struct kc_cancel;

int kc_cancel_new(struct kc_cancel **ret);
struct kc_cancel *kc_cancel_free(struct kc_cancel *c);
/** Any thread. Idempotent. Wakes every kc_clock_sleep() using @p c. */
void kc_cancel_trigger_mp(struct kc_cancel *c);
/** Any thread. */
bool kc_cancel_is_set(const struct kc_cancel *c);

/* ------------------------------------------------------------------------ */
/* Clock (injected everywhere; no component sleeps on wall time directly)     */

struct kc_clock;

/** Process-wide real clock. Never freed (kc_clock_free ignores it). */
struct kc_clock *kc_clock_real(void);

/**
 * @brief A fake clock for tests and pleg-replay, starting at @p start_ns
 * (nanoseconds since the Unix epoch). Time moves only through
 * kc_fake_clock_advance()/kc_fake_clock_set().
 */
int kc_fake_clock_new(struct kc_clock **ret, int64_t start_ns);
struct kc_clock *kc_clock_free(struct kc_clock *c);
KC_DEFINE_CLEANUP_FUNC(struct kc_clock, kc_clock_free)

/** Any thread. Wall time in nanoseconds since the Unix epoch. */
int64_t kc_clock_now(struct kc_clock *c);

/**
 * @brief Sleep @p ns of this clock's time, or until @p cancel (may be NULL)
 * is triggered. On a fake clock the sleeper wakes when an advance reaches
 * the deadline.
 * @return 0 when the time elapsed, -ECANCELED when cancelled.
 */
int kc_clock_sleep(struct kc_clock *c, int64_t ns, struct kc_cancel *cancel);

/** Fake clocks only (-EINVAL otherwise). Any thread. */
int kc_fake_clock_advance(struct kc_clock *c, int64_t ns);
int kc_fake_clock_set(struct kc_clock *c, int64_t now_ns);
/**
 * Fake clocks only (0 otherwise): how many threads sleep on @p c right now.
 * Tests wait for a component to be asleep before they advance the clock,
 * so an advance never lands before the sleep it is meant to end.
 */
size_t kc_fake_clock_sleepers(struct kc_clock *c);

/**
 * A one-shot timer on a clock, for event loops that wait in epoll: its fd
 * (EFD_NONBLOCK | EFD_CLOEXEC) becomes readable once the clock reaches the
 * armed deadline. Real clocks use a timerfd; fake clocks an eventfd that
 * kc_fake_clock_advance()/set() make readable. The owner thread arms, acks
 * and frees it; the fake clock fires it from the advancing thread. The timer
 * must be freed before its clock.
 */
struct kc_timer;

int kc_timer_new(struct kc_clock *c, struct kc_timer **ret);
struct kc_timer *kc_timer_free(struct kc_timer *t);
KC_DEFINE_CLEANUP_FUNC(struct kc_timer, kc_timer_free)
int kc_timer_fd(const struct kc_timer *t);
/** (Re)arms for the absolute clock time @p deadline_ns; a past one fires at once. */
int kc_timer_arm(struct kc_timer *t, int64_t deadline_ns);
void kc_timer_disarm(struct kc_timer *t);
/** Drains the fd. Returns true when the timer had fired. */
bool kc_timer_ack(struct kc_timer *t);

/* ------------------------------------------------------------------------ */
/* printf into a new string                                                   */

/**
 * Formats into a new string, like asprintf().
 * @return the string (the caller frees it), or NULL on failure (ENOMEM, or
 * EOVERFLOW when the result does not fit an int), errno set.
 */
char *kc_strdup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** kc_strdup_printf() with a va_list; @p ap is consumed as by vprintf(). */
char *kc_strdup_vprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* ------------------------------------------------------------------------ */
/* Process memory (glibc malloc)                                              */

/**
 * Makes glibc's malloc use its main arena alone (mallopt M_ARENA_MAX 1),
 * the one whose free pages kc_memory_scavenge() can all hand back, so that
 * threads coming and going do not spread the heap over eight arenas per
 * CPU. A count the user set (MALLOC_ARENA_MAX, GLIBC_TUNABLES) is kept.
 * Call once, before the first thread starts.
 * @param ret_arenas 1, or 0 when the user's count is kept; may be NULL.
 * @return 0, or -EOPNOTSUPP when malloc is not glibc's (a sanitizer's).
 */
int kc_memory_tune_process(unsigned *ret_arenas);

/**
 * Hands the free pages of every malloc arena back to the kernel
 * (malloc_trim), as Go's scavenger does for the upstream kubelet. Any
 * thread; takes each arena's lock in turn, briefly.
 */
void kc_memory_scavenge(void);

/* ------------------------------------------------------------------------ */
/* Go-style duration formatting                                               */

#define KC_DURATION_MAX 40

/**
 * Formats @p ns like Go's time.Duration.String(): "0s", "1.5µs", "500ms",
 * "4m0s", "1h2m3.5s", "-2s". Returns @p buf.
 */
char *kc_format_duration(int64_t ns, char buf[static KC_DURATION_MAX]);

/**
 * Parses a Go duration (time.ParseDuration): an optional sign, then one or
 * more decimal numbers each with a unit (ns, us or µs, ms, s, m, h), e.g.
 * "300ms", "-1.5h", "2h45m"; "0" alone needs no unit.
 * @return 0, -EINVAL (malformed) or -ERANGE (beyond ±292 years); *ret
 * unchanged on failure.
 */
int kc_parse_duration(const char *s, int64_t *ret);

/* ------------------------------------------------------------------------ */
/* Logging (klog text format)                                                 */

/*
 * Header: "Lmmdd hh:mm:ss.uuuuuu tid file:line] msg", L one of I W E F,
 * tid right-aligned in 7 columns as klog does with its pid. Callers write
 * structured fields into the message as key="value".
 */
enum kc_log_severity {
        KC_LOG_INFO,
        KC_LOG_WARNING,
        KC_LOG_ERROR,
        KC_LOG_FATAL,
        _KC_LOG_SEVERITY_MAX,
        _KC_LOG_SEVERITY_INVALID = -EINVAL,
};

/** Set once at start-up (-v); read by any thread. */
void kc_log_set_verbosity(int v);
int kc_log_get_verbosity(void);
/** Where log lines go (default stderr). NULL restores stderr. */
void kc_log_set_output(FILE *f);

void kc_log_internal(enum kc_log_severity sev, const char *file, int line, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

#define kc_log_info(...) kc_log_internal(KC_LOG_INFO, __FILE__, __LINE__, __VA_ARGS__)
#define kc_log_warn(...) kc_log_internal(KC_LOG_WARNING, __FILE__, __LINE__, __VA_ARGS__)
#define kc_log_error(...) kc_log_internal(KC_LOG_ERROR, __FILE__, __LINE__, __VA_ARGS__)
#define kc_log_v(level, ...)                                                                       \
        do {                                                                                       \
                if (kc_log_get_verbosity() >= (level))                                             \
                        kc_log_info(__VA_ARGS__);                                                  \
        } while (0)
/** Logs at error level with errno set from @p r (so %m names it) and
 * evaluates to -abs(r). */
#define kc_log_errno(r, ...)                                                                       \
        ({                                                                                         \
                int _kc_r = (r);                                                                   \
                errno = _kc_r < 0 ? -_kc_r : _kc_r;                                                \
                kc_log_error(__VA_ARGS__);                                                         \
                _kc_r < 0 ? _kc_r : -_kc_r;                                                        \
        })

/* ------------------------------------------------------------------------ */
/* kc_chan: bounded lock-free channel                                         */

/**
 * A bounded multi-producer, single-consumer queue of pointers: a ck_ring
 * (MPSC) plus an eventfd that wakes a sleeping consumer. @p capacity is the
 * number of usable slots ("capacity 1000" holds exactly 1000 items).
 *
 * Producers never wait for space or for the consumer: kc_chan_push_mp()
 * reports a full channel and the caller applies its documented policy. The
 * consumer side is lock-free. Producers serialise among themselves on a
 * short mutex around the enqueue, because ck_ring's multi-producer enqueue
 * spin-waits for earlier producers to publish (see core/chan.c for the
 * measurements). Wakeups are coalesced: the eventfd is written only when
 * the consumer may be asleep.
 *
 * @p free_item (may be NULL) releases items still queued at kc_chan_free().
 */
struct kc_chan;

int kc_chan_new(struct kc_chan **ret, unsigned capacity, void (*free_item)(void *));
/** Frees the channel and, with free_item, every queued item. No concurrent users. */
struct kc_chan *kc_chan_free(struct kc_chan *ch);
KC_DEFINE_CLEANUP_FUNC(struct kc_chan, kc_chan_free)

/**
 * Any thread. Never blocks.
 * @return 0 (the channel owns @p item) or -EAGAIN when full (the caller
 * still owns @p item).
 */
int kc_chan_push_mp(struct kc_chan *ch, void *item);

/**
 * The single consumer. Waits at most @p timeout_ms (0: do not wait, <0:
 * wait forever) for an item.
 * @return 0 and *ret set, -EAGAIN when empty and timeout_ms == 0,
 * -ETIMEDOUT when the wait expired.
 */
int kc_chan_pop_sc(struct kc_chan *ch, void **ret, int timeout_ms);

/** Any thread; a snapshot. */
unsigned kc_chan_len(const struct kc_chan *ch);
unsigned kc_chan_cap(const struct kc_chan *ch);

/**
 * For consumers that multiplex in epoll: the eventfd (EFD_NONBLOCK |
 * EFD_CLOEXEC) becomes readable when the consumer should look again.
 * Before sleeping in epoll the consumer calls kc_chan_prepare_wait_sc(): it
 * returns true when items are already queued (do not sleep) and otherwise
 * arms the wakeup. kc_chan_pop_sc() drains the eventfd itself.
 */
int kc_chan_fd(const struct kc_chan *ch);
bool kc_chan_prepare_wait_sc(struct kc_chan *ch);

/* ------------------------------------------------------------------------ */
/* kc_map: string-keyed hash map (not thread-safe; callers lock)              */

struct kc_map;

int kc_map_new(struct kc_map **ret);
/** Frees the table only; keys and values belong to the caller. */
struct kc_map *kc_map_free(struct kc_map *m);
KC_DEFINE_CLEANUP_FUNC(struct kc_map, kc_map_free)

/** NULL when absent. */
void *kc_map_get(const struct kc_map *m, const char *key);
/**
 * Inserts or replaces. The map stores @p key by pointer: it must stay valid
 * and unchanged while the entry exists (usually it lives inside @p value).
 * @return 0 or -ENOMEM (map unchanged).
 */
int kc_map_put(struct kc_map *m, const char *key, void *value);
/** Removes and returns the value, or NULL when absent. */
void *kc_map_remove(struct kc_map *m, const char *key);
size_t kc_map_size(const struct kc_map *m);
/** Makes room for @p n entries without further growth. -ENOMEM (map unchanged). */
int kc_map_reserve(struct kc_map *m, size_t n);
/** Removes every entry and keeps the table's capacity. */
void kc_map_clear(struct kc_map *m);
/**
 * A set: a new map whose keys (and values) are the @p n strings of @p keys,
 * borrowed; NULL entries are skipped. For "drop what is not among these".
 * @return 0 or -ENOMEM (*ret untouched).
 */
int kc_map_new_set(const char *const *keys, size_t n, struct kc_map **ret);
/**
 * Iteration in unspecified order: start with *iter = 0; returns false at the
 * end. The map must not be modified during an iteration.
 */
bool kc_map_next(const struct kc_map *m, size_t *iter, const char **ret_key, void **ret_value);

/* ------------------------------------------------------------------------ */
/* kc_arena: bump allocator for results freed all at once                     */

struct kc_arena;

int kc_arena_new(struct kc_arena **ret);
struct kc_arena *kc_arena_free(struct kc_arena *a);
KC_DEFINE_CLEANUP_FUNC(struct kc_arena, kc_arena_free)
/** Zeroed, max_align_t-aligned memory; NULL on ENOMEM. */
void *kc_arena_alloc(struct kc_arena *a, size_t size);
/** NULL in → NULL out; NULL on ENOMEM otherwise. */
char *kc_arena_strdup(struct kc_arena *a, const char *s);

/* ------------------------------------------------------------------------ */
/* Jitter (wait.Jitter)                                                       */

/**
 * @brief Returns a uniformly random duration in [@p d, @p d * (1 + @p max_factor)),
 * like Go's wait.Jitter: @p max_factor <= 0 means 1.0. @p d <= 0 is returned
 * unchanged; a result beyond INT64_MAX saturates.
 *
 * Any thread. The generator is a lock-free splitmix64 counter seeded from
 * getrandom() on first use (from the time of day if getrandom fails).
 */
int64_t kc_jitter(int64_t d, double max_factor);

/** Tests: reseeds the kc_jitter() generator so its sequence is reproducible. Any thread. */
void kc_jitter_seed(uint64_t seed);

/* ------------------------------------------------------------------------ */
/* Work queue (pkg/kubelet/util/queue/work_queue.go)                          */

/**
 * A set of pod UIDs, each with the clock time at which it becomes ready.
 * Every call is safe from any thread (one internal mutex).
 */
struct kc_work_queue;

/** @p clock is borrowed and must outlive the queue. *ret unchanged on failure. */
int kc_work_queue_new(struct kc_clock *clock, struct kc_work_queue **ret);
/** Frees the queue and every pending UID. NULL-safe; returns NULL. No concurrent users. */
struct kc_work_queue *kc_work_queue_free(struct kc_work_queue *q);
KC_DEFINE_CLEANUP_FUNC(struct kc_work_queue, kc_work_queue_free)

/**
 * @brief Enqueue(uid, delay): inserts @p uid or overwrites its ready time
 * with now + @p delay_ns (an earlier time too: the last call wins).
 * @return 0, -EINVAL (NULL or empty uid) or -ENOMEM (queue unchanged).
 */
int kc_work_queue_enqueue(struct kc_work_queue *q, const char *uid, int64_t delay_ns);

/**
 * @brief GetWork(): removes and returns every UID whose ready time is
 * strictly before now, in unspecified order.
 *
 * On success *ret_uids is one malloc'd block (release it with a single
 * free()) holding *ret_n string pointers followed by the strings, or NULL
 * when nothing is ready (*ret_n = 0).
 * @return 0, or -ENOMEM with the queue and the out-parameters unchanged.
 */
int kc_work_queue_get_work(struct kc_work_queue *q, char ***ret_uids, size_t *ret_n);

/** Number of queued UIDs, ready or not (a snapshot). */
size_t kc_work_queue_len(struct kc_work_queue *q);

/* ------------------------------------------------------------------------ */
/* Restart backoff (client-go flowcontrol.Backoff, kubelet settings)          */

/**
 * Per-key exponential backoff: each key holds {backoff, last_update}.
 * Every call is safe from any thread (one internal mutex). Times are
 * nanoseconds on the injected clock.
 *
 * An entry is "expired" for an event at t when t - last_update > expiry:
 * kubelet installs HasExpiredFunc "eventTime - lastUpdate > 600 s"
 * (KC_BACKOFF_DEFAULT_EXPIRY_NS), independent of the maximum.
 */
struct kc_backoff;

#define KC_BACKOFF_DEFAULT_EXPIRY_NS (600 * KC_NSEC_PER_SEC)

/**
 * @brief A backoff starting at @p initial_ns, doubling up to @p max_ns, with
 * the kubelet's 600 s expiry. @p clock is borrowed and must outlive it.
 * @return 0, -EINVAL (NULL clock or a negative duration) or -ENOMEM; *ret
 * unchanged on failure.
 */
int kc_backoff_new(struct kc_clock *clock, int64_t initial_ns, int64_t max_ns,
                   struct kc_backoff **ret);
/** Same with an explicit expiry (@p expiry_ns >= 0). */
int kc_backoff_new_with_expiry(struct kc_clock *clock, int64_t initial_ns, int64_t max_ns,
                               int64_t expiry_ns, struct kc_backoff **ret);
/** NULL-safe; returns NULL. No concurrent users. */
struct kc_backoff *kc_backoff_free(struct kc_backoff *b);
KC_DEFINE_CLEANUP_FUNC(struct kc_backoff, kc_backoff_free)

/**
 * @brief Next(key, eventTime): no entry or expired for @p event_time_ns →
 * backoff = initial; otherwise backoff = min(2 × backoff, max). Then
 * last_update = now.
 * @return 0, -EINVAL (NULL key) or -ENOMEM (backoff unchanged).
 */
int kc_backoff_next(struct kc_backoff *b, const char *key, int64_t event_time_ns);

/**
 * IsInBackOffSince(key, eventTime): false when there is no entry or it is
 * expired for @p event_time_ns; otherwise now - event_time < backoff.
 */
bool kc_backoff_is_in_backoff_since(struct kc_backoff *b, const char *key, int64_t event_time_ns);

/**
 * IsInBackOffSinceUpdate(key, eventTime): false when there is no entry or it
 * is expired for @p event_time_ns; otherwise event_time - last_update <
 * backoff. The image manager asks this with eventTime = now: "did the last
 * failure happen less than one backoff window ago?".
 */
bool kc_backoff_is_in_backoff_since_update(struct kc_backoff *b, const char *key,
                                           int64_t event_time_ns);

/** The clock the backoff was built with (upstream's Backoff.Clock); NULL for NULL. */
struct kc_clock *kc_backoff_clock(struct kc_backoff *b);

/**
 * The clock time of the key's last Next() in *ret (to tell when a window
 * that runs from the update ends: last update + Get()).
 * @return 0, -ENOENT (no entry) or -EINVAL; *ret unchanged on failure.
 */
int kc_backoff_last_update(struct kc_backoff *b, const char *key, int64_t *ret);

/**
 * Get(key): the current backoff in *ret.
 * @return 0, or -ENOENT when the key has no entry (upstream's Get returns 0
 * then); *ret unchanged on failure.
 */
int kc_backoff_get(struct kc_backoff *b, const char *key, int64_t *ret);

/** Reset(key): forgets the key. No-op when absent. */
void kc_backoff_reset(struct kc_backoff *b, const char *key);

/**
 * GC(): drops every entry whose last update is more than 2 × max ago.
 * @return the number of entries dropped.
 */
size_t kc_backoff_gc(struct kc_backoff *b);
