/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kc_chan: a bounded MPSC channel of pointers on Concurrency Kit's ck_ring,
 * with an eventfd to wake a sleeping consumer.
 *
 * Capacity. A ck_ring of size S (a power of two >= 4) holds S - 1 items. The
 * channel admits a push through its own counter `count` first: fetch_add,
 * and when the old value was already `capacity`, undo and report -EAGAIN.
 * The ring has S = next power of two >= capacity + 1 slots, so an admitted
 * push always finds a free slot (checked with kc__assert_se, which stays in
 * release builds). The consumer gives the unit back after each dequeue.
 * Hence "capacity N" means exactly N items, not S - 1.
 *
 * Why an admitted enqueue cannot fail: ck's MPSC enqueue reports "full" only
 * when p_head - c_head >= S - 1 as seen by the producer. Every slot between
 * c_head and p_head belongs to an item whose admission unit is still held,
 * or whose unit was returned with a release fetch_sub *after* the consumer
 * advanced c_head. The producer's acquire fetch_add reads the end of that
 * release sequence, so c_head is at least that new when ck loads it after
 * the admission. At most capacity - 1 other units are held besides ours, so
 * the producer sees at most capacity - 1 <= S - 2 occupied slots.
 *
 * Wakeup protocol (Dekker-style, coalesced):
 *
 *   consumer (about to sleep)          producer (after an enqueue)
 *   ------------------------------     -------------------------------------
 *   may_sleep = true                   ck enqueue (stores p_tail)
 *   fence(seq_cst)          <-pairs->  fence(seq_cst)
 *   ring empty? then poll(eventfd)     if exchange(may_sleep, false): write
 *
 * The two seq_cst fences forbid the outcome where the consumer misses the
 * item *and* the producer misses the flag: either the consumer's re-check
 * sees the item, or the producer's exchange sees the flag and writes the
 * eventfd. Many pushes during one sleep produce one eventfd write (the first
 * exchange clears the flag). Stale writes (the consumer found an item
 * without sleeping) only cost one spurious wakeup; the consumer drains the
 * eventfd whenever it finds the ring empty, before arming again.
 *
 * Producers take a short mutex around the enqueue. ck's MP enqueue
 * publishes slots in ticket order: after its CAS on p_head a producer spins
 * (`while (p_tail != ticket) ck_pr_stall()`) until every earlier ticket
 * holder has published. When a ticket holder is preempted between its CAS
 * and its p_tail store, every later producer spins on a CPU it needs, and
 * the convoy sustains itself: 4 producers on 2 vCPUs moved ~300 items/s in
 * tests/stress/stress_chan.c. With the mutex a waiting producer sleeps in
 * the kernel instead (same test: 800,000 items in ~0.16 s; it is faster even
 * with 2 producers on 2 CPUs). So ck's wait loop always exits on its first
 * check, and nothing in kc_chan spins or yields. The consumer never takes
 * the mutex: the ring stays lock-free between the producers and the
 * consumer. The enqueue stays the MPSC variant, so correctness does not
 * depend on the mutex; the mutex is there for progress under
 * oversubscription.
 */
#include <ck_ring.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "core/chan.h"
#include "core/cleanup.h"
#include "internal.h"

#define KC_CHAN_MAX_CAPACITY (1u << 24)
#define KC_CACHELINE 64

struct kc_chan {
        /* ck_ring pads its producer and consumer counters itself. */
        struct ck_ring ring;
        struct ck_ring_buffer *buf;
        unsigned capacity;
        int efd;
        void (*free_item)(void *);
        /* Serialises producers; see the top of the file for why. */
        pthread_mutex_t push_lock;

        /* Admission counter: written by every producer and the consumer. */
        alignas(KC_CACHELINE) atomic_uint count;
        /* "The consumer may be asleep": set by the consumer, cleared by the
         * producer that takes the wakeup duty. */
        alignas(KC_CACHELINE) atomic_bool may_sleep;
        /* TSan builds only: the address the push/pop edge is stated on. */
        alignas(KC_CACHELINE) char tsan_sync;
};

int kc_chan_new(struct kc_chan **ret, unsigned capacity, void (*free_item)(void *))
{
        _cleanup_free_ struct kc_chan *ch = NULL;
        _cleanup_free_ struct ck_ring_buffer *buf = NULL;
        _cleanup_close_ int efd = -1;
        unsigned size = 4;
        int r;

        if (!ret || capacity < 1 || capacity > KC_CHAN_MAX_CAPACITY)
                return -EINVAL;
        while (size < capacity + 1)
                size <<= 1;

        ch = aligned_alloc(KC_CACHELINE, sizeof(*ch));
        buf = calloc(size, sizeof(*buf));
        if (!ch || !buf)
                return -ENOMEM;
        efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (efd < 0)
                return -errno;

        *ch = (struct kc_chan){
                .capacity = capacity,
                .free_item = free_item,
        };
        r = pthread_mutex_init(&ch->push_lock, NULL);
        if (r != 0)
                return -r;
        ck_ring_init(&ch->ring, size);
        kc__assert_se(ck_ring_capacity(&ch->ring) == size && size > capacity);
        atomic_init(&ch->count, 0);
        atomic_init(&ch->may_sleep, false);
        ch->buf = TAKE_PTR(buf);
        ch->efd = TAKE_FD(efd);
        *ret = TAKE_PTR(ch);
        return 0;
}

/* The single consumer (or kc_chan_free()). */
static bool chan_dequeue(struct kc_chan *ch, void **ret)
{
        void *item;
        bool ok;

        kc__tsan_ignore_begin();
        ok = ck_ring_dequeue_mpsc(&ch->ring, ch->buf, &item);
        kc__tsan_ignore_end();
        if (!ok)
                return false;
        /* TSan: the item's contents were published by its push. */
        kc__tsan_acquire(&ch->tsan_sync);
        /*
         * Release: pairs with the acquire fetch_add in kc_chan_push_mp(). A
         * producer admitted with this unit sees c_head past the slot just
         * freed (see the capacity argument at the top of the file).
         */
        atomic_fetch_sub_explicit(&ch->count, 1, memory_order_release);
        *ret = item;
        return true;
}

static bool chan_ring_empty(struct kc_chan *ch)
{
        unsigned n;

        kc__tsan_ignore_begin();
        n = ck_ring_size(&ch->ring);
        kc__tsan_ignore_end();
        return n == 0;
}

struct kc_chan *kc_chan_free(struct kc_chan *ch)
{
        void *item;

        if (!ch)
                return NULL;
        while (chan_dequeue(ch, &item))
                if (ch->free_item)
                        ch->free_item(item);
        if (ch->efd >= 0)
                close(ch->efd);
        pthread_mutex_destroy(&ch->push_lock);
        free(ch->buf);
        free(ch);
        return NULL;
}

int kc_chan_push_mp(struct kc_chan *ch, void *item)
{
        unsigned old;
        bool ok;

        /*
         * Acquire: pairs with the release fetch_sub after each dequeue, so the
         * ring's c_head is at least as new as every unit given back before
         * this admission.
         */
        old = atomic_fetch_add_explicit(&ch->count, 1, memory_order_acquire);
        if (old >= ch->capacity) {
                /* Relaxed: the failed admission published nothing. */
                atomic_fetch_sub_explicit(&ch->count, 1, memory_order_relaxed);
                return -EAGAIN;
        }

        /* TSan: everything written before the push happens before the pop. */
        kc__tsan_release(&ch->tsan_sync);
        pthread_mutex_lock(&ch->push_lock);
        kc__tsan_ignore_begin();
        ok = ck_ring_enqueue_mpsc(&ch->ring, ch->buf, item);
        kc__tsan_ignore_end();
        pthread_mutex_unlock(&ch->push_lock);
        kc__assert_se(ok);

        /*
         * Seq_cst fence: pairs with the fence in chan_arm() (the consumer
         * stores may_sleep, fences, then re-reads the ring). It orders the
         * p_tail store inside ck_ring_enqueue_mpsc() before the load of
         * may_sleep below, so one of the two sides sees the other's store.
         */
        atomic_thread_fence(memory_order_seq_cst);
        if (atomic_load_explicit(&ch->may_sleep, memory_order_relaxed) &&
            /* Relaxed: ordering comes from the fence; only one producer may
             * take the wakeup duty, which the exchange decides. */
            atomic_exchange_explicit(&ch->may_sleep, false, memory_order_relaxed)) {
                uint64_t one = 1;
                ssize_t n;

                /* Cannot overflow (the consumer drains it) nor block. */
                n = write(ch->efd, &one, sizeof(one));
                kc__assert_se(n == sizeof(one));
        }
        return 0;
}

static void chan_drain(struct kc_chan *ch)
{
        uint64_t v;

        /* One read resets the counter; EAGAIN when nothing is pending. */
        (void)!read(ch->efd, &v, sizeof(v));
}

/*
 * Arms the wakeup. Returns true when the ring is not empty after arming
 * (then the consumer must not sleep; the flag is withdrawn).
 */
static bool chan_arm(struct kc_chan *ch)
{
        /* Relaxed store: ordered before the re-check by the fence below. */
        atomic_store_explicit(&ch->may_sleep, true, memory_order_relaxed);
        /*
         * Seq_cst fence: pairs with the fence in kc_chan_push_mp(), between
         * its enqueue and its read of may_sleep (see the top of the file).
         */
        atomic_thread_fence(memory_order_seq_cst);
        if (chan_ring_empty(ch))
                return false;
        /* Relaxed: a producer that still saw the flag only wakes us once. */
        atomic_store_explicit(&ch->may_sleep, false, memory_order_relaxed);
        return true;
}

bool kc_chan_prepare_wait_sc(struct kc_chan *ch)
{
        if (!chan_ring_empty(ch))
                return true;
        /*
         * Empty: clear stale wakeups (from pushes this consumer already
         * served) before arming, or an epoll on the eventfd would return at
         * once, again and again, with nothing to read.
         */
        chan_drain(ch);
        return chan_arm(ch);
}

static int64_t monotonic_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / KC_NSEC_PER_MSEC;
}

int kc_chan_pop_sc(struct kc_chan *ch, void **ret, int timeout_ms)
{
        int64_t deadline = timeout_ms > 0 ? monotonic_ms() + timeout_ms + 1 : 0;
        void *item;

        for (;;) {
                struct pollfd pfd = { .fd = ch->efd, .events = POLLIN };
                int wait_ms = -1, r;

                if (chan_dequeue(ch, &item)) {
                        *ret = item;
                        return 0;
                }
                /*
                 * Empty: clear stale wakeups before arming, so an epoll or poll
                 * that follows waits for a push that comes after this point.
                 */
                chan_drain(ch);
                if (timeout_ms == 0)
                        return -EAGAIN;
                if (timeout_ms > 0) {
                        int64_t left = deadline - monotonic_ms();

                        if (left <= 0)
                                return -ETIMEDOUT;
                        wait_ms = left > INT32_MAX ? INT32_MAX : (int)left;
                }
                if (chan_arm(ch))
                        continue;

                r = poll(&pfd, 1, wait_ms);
                if (r < 0 && errno != EINTR)
                        return -errno;
                /* Timeouts are decided at the top, after one more dequeue. */
        }
}

unsigned kc_chan_len(const struct kc_chan *ch)
{
        unsigned n;

        /*
         * Relaxed: a snapshot. It counts admitted pushes, and may briefly
         * exceed capacity while a refused push undoes its increment.
         */
        n = atomic_load_explicit(&ch->count, memory_order_relaxed);
        return n > ch->capacity ? ch->capacity : n;
}

unsigned kc_chan_cap(const struct kc_chan *ch)
{
        return ch->capacity;
}

int kc_chan_fd(const struct kc_chan *ch)
{
        return ch->efd;
}
