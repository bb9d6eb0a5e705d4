/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gRPC over HTTP/2 with prior knowledge (h2c) on a unix socket, on nghttp2's
 * client session: the CRI client's transport. The contract is in grpc.h.
 *
 * Threads. One I/O thread per client owns every connection and every
 * nghttp2 session: it sleeps in ppoll() on the client's eventfd and on each
 * connection's socket, with a timeout set by the earliest call deadline.
 * Callers never touch a session. They hand a call to the I/O thread through
 * a locked FIFO (the submit queue) and one coalesced eventfd write, then
 * sleep on the call's own condition variable. A caller that gives up (its
 * kc_cancel fired, or the deadline net passed) sets the call's result
 * itself and queues the call on the cancel queue, so that the I/O thread
 * resets its stream; kc_grpc_stream_close() uses the same queue.
 *
 * Locks. client->lock guards the two queues, `closing` and `wake_pending`.
 * call->lock guards a call's result (done, r, err, resp), `started`,
 * `finished` and `cancel_queued`. Order: call->lock, then client->lock. The
 * I/O thread holds client->lock only to take both queues at once, and never
 * takes a call lock while holding it. Every other call field belongs to
 * the thread that holds the call at that time: the creator until submission,
 * then the I/O thread. A caller may touch the client only while it holds
 * the call's lock and the call is not finished: the I/O thread finishes
 * every call before kc_grpc_client_free() joins it, so the client is alive
 * then.
 *
 * Lifetime. A call is reference counted: one reference for the caller (or
 * the stream handle), one for the I/O thread from submission until the
 * call leaves its last I/O list (a connection, or the retry list), and one
 * per queue entry. The I/O thread keeps a call until nghttp2 reports its
 * stream closed (on_stream_close, or on_frame_not_send for request HEADERS
 * that never left) or the connection is torn down, because nghttp2 holds
 * the call as stream user data and as the request body's data source.
 *
 * Connections. The first call connects (a non-blocking connect; on a unix
 * socket it completes or fails at once). When that fails, every call of the
 * batch fails UNAVAILABLE; the next call tries again. A GOAWAY retires the
 * connection: it drains its streams while new calls open a new connection.
 * Streams the server never processed (REFUSED_STREAM, or above GOAWAY's
 * last stream id) are retried once on a new connection, as gRPC's
 * transparent retry does. When a connection drops, its other calls fail
 * UNAVAILABLE.
 */
#include <assert.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include <nghttp2/nghttp2.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdarg.h>
#include <stddef.h>

#include "core/cancel.h"
#include "core/cleanup.h"
#include "core/duration.h"
#include "grpc.h"
#include "runtime/error.h"

#define GRPC_PREFIX 5
/* Socket reads: one buffer, reused, at most READ_BUDGET times per wakeup. */
#define READ_BUF_SIZE (64 * 1024)
#define READ_BUDGET 16
/*
 * Receive windows. nghttp2 hands DATA to us as it arrives and (by default)
 * returns the window as soon as each chunk is consumed, so the windows only
 * bound what is in flight: 1 MiB per stream and 16 MiB per connection keep
 * a 16 MiB response to a few WINDOW_UPDATE round trips.
 */
#define STREAM_WINDOW (1 << 20)
#define CONN_WINDOW (16 << 20)
/* A caller with a kc_cancel re-checks it this often (grpc.h promises 100 ms). */
#define CTX_POLL_NS (100 * KC_NSEC_PER_MSEC)
/* The caller's own deadline check fires this long after the I/O thread's. */
#define DEADLINE_NET_NS (1 * KC_NSEC_PER_SEC)
/* Lost-wakeup net of waits that have no deadline. */
#define WAIT_NET_NS (1 * KC_NSEC_PER_SEC)
/* A connect() still in progress after this fails UNAVAILABLE. */
#define CONNECT_TIMEOUT_NS (5 * KC_NSEC_PER_SEC)

struct conn;
struct kc_grpc_client;

enum call_where {
        CALL_NOWHERE, /* not (or no longer) held by an I/O list */
        CALL_ON_CONN, /* submitted on conn (its stream may not be open yet) */
        CALL_RETRY,   /* on the client's retry list */
};

struct grpc_call {
        atomic_uint n_ref;
        pthread_mutex_t lock;
        pthread_cond_t cond; /* CLOCK_MONOTONIC */

        /* Immutable once submitted. */
        struct kc_grpc_client *client;
        char *path;
        uint8_t *req; /* the 5-byte prefix and the message */
        size_t req_len;
        int64_t deadline;   /* CLOCK_MONOTONIC ns; INT64_MAX for streams */
        int64_t timeout_ns; /* as asked, for messages */
        bool streaming;
        kc_grpc_message_fn on_message;
        kc_grpc_close_fn on_close;
        void *userdata;

        /* Under lock. */
        bool done;          /* unary: result set; stream: failed before it started */
        bool started;       /* stream: the request is on a connected connection */
        bool finished;      /* stream: on_close ran, no callback will run again */
        bool cancel_queued; /* on the cancel queue once, ever */
        int r;
        struct kc_runtime_error err;
        uint8_t *resp;
        size_t resp_len;

        /*
         * Under client->lock while queued; sub_next also links the I/O
         * thread's batches once it took them off the queue.
         */
        struct grpc_call *sub_next, *can_next;

        /* I/O thread only. */
        enum call_where where;
        struct conn *conn;
        struct grpc_call *prev, *next; /* conn->calls or client->retry */
        int32_t stream_id;
        size_t req_off;
        bool aborted;     /* the result is out: ignore the stream from now on */
        bool opened;      /* nghttp2 opened the stream: its HEADERS are leaving */
        bool rst_sent;    /* RST_STREAM submitted */
        bool retried;     /* already retried once on a new connection */
        bool io_started;  /* mirror of `started` */
        bool got_headers; /* the server answered on this stream */
        int http_status;  /* 0: none yet */
        int grpc_status;  /* -1: none, -2: malformed */
        bool content_type_seen, content_type_ok;
        char grpc_message[KC_RUNTIME_ERROR_MAX]; /* percent-decoded */
        const char *invalid;                     /* nghttp2's complaint about the stream */
        uint8_t hdr[GRPC_PREFIX];
        size_t hdr_got; /* > 0 while a message is being reassembled */
        uint8_t *msg;
        size_t msg_len, msg_got;
        size_t n_msgs;
        uint8_t *unary_msg; /* the response of a unary call, until handed over */
        size_t unary_msg_len;
};

/* The stream handle is the call itself. */
struct kc_grpc_stream {
        struct grpc_call call;
};
static_assert(offsetof(struct kc_grpc_stream, call) == 0, "a stream handle is its call");

struct conn {
        struct kc_grpc_client *client;
        struct conn *next;
        nghttp2_session *session;
        int fd;
        bool connecting;
        bool wblocked; /* the socket buffer was full: wait for POLLOUT */
        bool goaway;   /* no new streams (GOAWAY received, or ids exhausted) */
        int32_t goaway_last_id;
        int64_t connect_deadline;
        struct grpc_call *calls;
        size_t n_calls;
        /* Set once the connection is unusable; the loop tears it down. */
        bool broken;
        enum kc_runtime_code fail_code;
        char fail_msg[256];
        int send_errno;
        char h2_error[160]; /* nghttp2's last error message (error_callback2) */
        char goaway_info[200];
};

struct kc_grpc_client {
        char *path;
        struct sockaddr_un addr;
        socklen_t addr_len;
        int efd;
        pthread_t thread;

        pthread_mutex_t lock;
        /* Under lock. */
        struct grpc_call *sub_head, **sub_tail;
        struct grpc_call *can_head, **can_tail;
        bool closing;
        bool joined; /* the I/O thread was (or is being) joined */
        bool wake_pending;

        /* I/O thread only (and the creator before the thread starts). */
        nghttp2_session_callbacks *cbs;
        nghttp2_option *opt;
        struct conn *conns;
        struct conn *active; /* where new calls go; NULL: connect on demand */
        struct grpc_call *retry;
        int64_t next_deadline; /* no call or connect deadline before this */
        uint8_t *rbuf;
        struct pollfd *pfds;
        struct conn **pconns;
        size_t pfds_cap;
};

/* ------------------------------------------------------------------------ */
/* Helpers                                                                    */

int kc_grpc_code_to_errno(enum kc_runtime_code code)
{
        switch (code) {
        case KC_RUNTIME_OK:
                return 0;
        case KC_RUNTIME_CANCELLED:
                return -ECANCELED;
        case KC_RUNTIME_UNKNOWN:
                return -EIO;
        case KC_RUNTIME_INVALID_ARGUMENT:
                return -EINVAL;
        case KC_RUNTIME_DEADLINE_EXCEEDED:
                return -ETIMEDOUT;
        case KC_RUNTIME_NOT_FOUND:
                return -ENOENT;
        case KC_RUNTIME_ALREADY_EXISTS:
                return -EEXIST;
        case KC_RUNTIME_PERMISSION_DENIED:
                return -EACCES;
        case KC_RUNTIME_RESOURCE_EXHAUSTED:
                return -E2BIG;
        case KC_RUNTIME_FAILED_PRECONDITION:
                return -EBUSY;
        case KC_RUNTIME_ABORTED:
                return -ECONNABORTED;
        case KC_RUNTIME_OUT_OF_RANGE:
                return -ERANGE;
        case KC_RUNTIME_UNIMPLEMENTED:
                return -EOPNOTSUPP;
        case KC_RUNTIME_INTERNAL:
                return -EPROTO;
        case KC_RUNTIME_UNAVAILABLE:
                return -ECONNREFUSED;
        case KC_RUNTIME_DATA_LOSS:
                return -EBADMSG;
        case KC_RUNTIME_UNAUTHENTICATED:
                return -EPERM;
        }
        return -EIO;
}

static int64_t mono_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * KC_NSEC_PER_SEC + ts.tv_nsec;
}

static int64_t add_sat(int64_t a, int64_t b)
{
        return a > INT64_MAX - b ? INT64_MAX : a + b;
}

static int64_t min64(int64_t a, int64_t b)
{
        return a < b ? a : b;
}

static size_t min_size(size_t a, size_t b)
{
        return a < b ? a : b;
}

static void close_fd(int fd)
{
        if (fd >= 0)
                close(fd);
}

static void err_vset(struct kc_runtime_error *e, enum kc_runtime_code code, const char *fmt,
                     va_list ap)
{
        e->code = code;
        vsnprintf(e->message, sizeof(e->message), fmt, ap);
}

/*
 * The grpc-timeout value: at most 8 digits and a unit (the protocol's
 * limit), the finest unit that fits, rounded up so the server never sees a
 * shorter deadline than ours.
 */
static void format_grpc_timeout(int64_t ns, char buf[static 16])
{
        static const struct {
                int64_t div;
                char unit;
        } units[] = {
                { 1, 'n' },
                { KC_NSEC_PER_USEC, 'u' },
                { KC_NSEC_PER_MSEC, 'm' },
                { KC_NSEC_PER_SEC, 'S' },
                { KC_NSEC_PER_MIN, 'M' },
                { 60 * KC_NSEC_PER_MIN, 'H' },
        };
        int64_t v = 99999999; /* 99999999H: beyond any timeout we take */
        char unit = 'H';

        if (ns < 1)
                ns = 1;
        for (size_t i = 0; i < KC_ELEMENTSOF(units); i++) {
                int64_t q = ns / units[i].div + (ns % units[i].div != 0);

                if (q <= 99999999) {
                        v = q;
                        unit = units[i].unit;
                        break;
                }
        }
        snprintf(buf, 16, "%u%c", (unsigned)v, unit);
}

static int hexval(uint8_t ch)
{
        if (ch >= '0' && ch <= '9')
                return ch - '0';
        if (ch >= 'a' && ch <= 'f')
                return ch - 'a' + 10;
        if (ch >= 'A' && ch <= 'F')
                return ch - 'A' + 10;
        return -1;
}

/* grpc-message is percent-encoded; a '%' not followed by two hex digits stays as is. */
static void percent_decode(const uint8_t *v, size_t n, char *out, size_t cap)
{
        size_t i = 0, j = 0;

        while (i < n && j + 1 < cap) {
                int hi, lo;

                if (v[i] == '%' && i + 2 < n && (hi = hexval(v[i + 1])) >= 0 &&
                    (lo = hexval(v[i + 2])) >= 0) {
                        out[j++] = (char)(hi << 4 | lo);
                        i += 3;
                } else {
                        out[j++] = (char)v[i++];
                }
        }
        out[j] = '\0';
}

/* HTTP status → gRPC code, for responses that are not 200 (the protocol's table). */
static enum kc_runtime_code http_status_to_code(int status)
{
        switch (status) {
        case 400:
                return KC_RUNTIME_INTERNAL;
        case 401:
                return KC_RUNTIME_UNAUTHENTICATED;
        case 403:
                return KC_RUNTIME_PERMISSION_DENIED;
        case 404:
                return KC_RUNTIME_UNIMPLEMENTED;
        case 429:
        case 502:
        case 503:
        case 504:
                return KC_RUNTIME_UNAVAILABLE;
        default:
                return KC_RUNTIME_UNKNOWN;
        }
}

/* RST_STREAM error code → gRPC code (the protocol's table). */
static enum kc_runtime_code h2_error_to_code(uint32_t error_code)
{
        switch (error_code) {
        case NGHTTP2_REFUSED_STREAM:
                return KC_RUNTIME_UNAVAILABLE;
        case NGHTTP2_CANCEL:
                return KC_RUNTIME_CANCELLED;
        case NGHTTP2_ENHANCE_YOUR_CALM:
                return KC_RUNTIME_RESOURCE_EXHAUSTED;
        case NGHTTP2_INADEQUATE_SECURITY:
                return KC_RUNTIME_PERMISSION_DENIED;
        default:
                return KC_RUNTIME_INTERNAL;
        }
}

static int cond_init_monotonic(pthread_cond_t *cond)
{
        pthread_condattr_t attr;
        int r;

        r = pthread_condattr_init(&attr);
        if (r)
                return -r;
        r = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        if (r == 0)
                r = pthread_cond_init(cond, &attr);
        pthread_condattr_destroy(&attr);
        return -r;
}

static void cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *lock, int64_t until_ns)
{
        struct timespec ts = {
                .tv_sec = until_ns / KC_NSEC_PER_SEC,
                .tv_nsec = until_ns % KC_NSEC_PER_SEC,
        };

        (void)pthread_cond_timedwait(cond, lock, &ts);
}

/* ------------------------------------------------------------------------ */
/* Calls                                                                      */

static struct grpc_call *call_ref(struct grpc_call *call)
{
        /* Relaxed: a new reference is always taken from an existing one. */
        atomic_fetch_add_explicit(&call->n_ref, 1, memory_order_relaxed);
        return call;
}

static struct grpc_call *call_unref(struct grpc_call *call)
{
        if (!call)
                return NULL;
        /*
         * Acq_rel: the release orders this owner's writes (the I/O thread's
         * fields, the caller's result reads) before the decrement; the last
         * owner's acquire makes all of them visible before the free.
         */
        if (atomic_fetch_sub_explicit(&call->n_ref, 1, memory_order_acq_rel) != 1)
                return NULL;
        pthread_cond_destroy(&call->cond);
        pthread_mutex_destroy(&call->lock);
        free(call->path);
        free(call->req);
        free(call->resp);
        free(call->msg);
        free(call->unary_msg);
        free(call);
        return NULL;
}
KC_DEFINE_CLEANUP_FUNC(struct grpc_call, call_unref)

static int call_new(struct kc_grpc_client *c, const char *path, const uint8_t *req, size_t req_len,
                    struct grpc_call **ret)
{
        struct grpc_call *call;
        int r;

        call = calloc(1, sizeof(*call));
        if (!call)
                return -ENOMEM;
        call->path = strdup(path);
        call->req = malloc(GRPC_PREFIX + req_len);
        if (!call->path || !call->req) {
                free(call->path);
                free(call->req);
                free(call);
                return -ENOMEM;
        }
        call->req[0] = 0;
        call->req[1] = (uint8_t)(req_len >> 24);
        call->req[2] = (uint8_t)(req_len >> 16);
        call->req[3] = (uint8_t)(req_len >> 8);
        call->req[4] = (uint8_t)req_len;
        if (req_len)
                memcpy(call->req + GRPC_PREFIX, req, req_len);
        call->req_len = GRPC_PREFIX + req_len;
        r = -pthread_mutex_init(&call->lock, NULL);
        if (r == 0) {
                r = cond_init_monotonic(&call->cond);
                if (r < 0)
                        pthread_mutex_destroy(&call->lock);
        }
        if (r < 0) {
                free(call->path);
                free(call->req);
                free(call);
                return r;
        }
        atomic_init(&call->n_ref, 1);
        call->client = c;
        call->deadline = INT64_MAX;
        call->grpc_status = -1;
        *ret = call;
        return 0;
}

/* ------------------------------------------------------------------------ */
/* Queues (any thread)                                                        */

static void client_wake(struct kc_grpc_client *c)
{
        uint64_t one = 1;

        /* EAGAIN means the counter is already non-zero: the thread will wake. */
        (void)!write(c->efd, &one, sizeof(one));
}

/* Hands @p call to the I/O thread (which gets its own reference). */
static int client_submit(struct kc_grpc_client *c, struct grpc_call *call)
{
        bool wake = false;

        pthread_mutex_lock(&c->lock);
        if (c->closing) {
                pthread_mutex_unlock(&c->lock);
                return -ECANCELED;
        }
        call_ref(call);
        call->sub_next = NULL;
        *c->sub_tail = call;
        c->sub_tail = &call->sub_next;
        if (!c->wake_pending)
                wake = c->wake_pending = true;
        pthread_mutex_unlock(&c->lock);
        if (wake)
                client_wake(c);
        return 0;
}

/*
 * Asks the I/O thread to reset @p call's stream (and, for a stream, to run
 * on_close). Called with call->lock held and the call not finished, which
 * keeps the client alive; at most once per call.
 */
static void call_queue_cancel_locked(struct grpc_call *call)
{
        struct kc_grpc_client *c = call->client;
        bool wake = false;

        if (call->cancel_queued)
                return;
        call->cancel_queued = true;
        pthread_mutex_lock(&c->lock);
        if (!c->closing) { /* else the I/O thread is ending every call anyway */
                call_ref(call);
                call->can_next = NULL;
                *c->can_tail = call;
                c->can_tail = &call->can_next;
                if (!c->wake_pending)
                        wake = c->wake_pending = true;
        }
        pthread_mutex_unlock(&c->lock);
        if (wake)
                client_wake(c);
}

/* ------------------------------------------------------------------------ */
/* Completion (I/O thread)                                                    */

/* Hands the outcome to the caller (unary, or a stream not started yet) or runs on_close. */
static void io_complete(struct grpc_call *call, int r, const struct kc_runtime_error *err)
{
        if (call->aborted)
                return;
        call->aborted = true;
        if (call->streaming && call->io_started) {
                call->on_close(call->userdata, r, r < 0 ? err : NULL);
                pthread_mutex_lock(&call->lock);
                call->finished = true;
                pthread_cond_broadcast(&call->cond);
                pthread_mutex_unlock(&call->lock);
                return;
        }
        pthread_mutex_lock(&call->lock);
        if (!call->done) {
                call->done = true;
                call->r = r;
                if (r < 0) {
                        call->err = *err;
                } else {
                        call->resp = TAKE_PTR(call->unary_msg);
                        call->resp_len = call->unary_msg_len;
                }
        }
        pthread_cond_broadcast(&call->cond);
        pthread_mutex_unlock(&call->lock);
}

static void io_fail(struct grpc_call *call, enum kc_runtime_code code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void io_fail(struct grpc_call *call, enum kc_runtime_code code, const char *fmt, ...)
{
        struct kc_runtime_error e;
        va_list ap;

        if (call->aborted)
                return;
        va_start(ap, fmt);
        err_vset(&e, code, fmt, ap);
        va_end(ap);
        io_complete(call, kc_grpc_code_to_errno(code), &e);
}

static void io_mark_started(struct grpc_call *call)
{
        if (!call->streaming || call->io_started)
                return;
        call->io_started = true;
        pthread_mutex_lock(&call->lock);
        call->started = true;
        pthread_cond_broadcast(&call->cond);
        pthread_mutex_unlock(&call->lock);
}

/* Resets the call's stream once it is open; an unopened one is reset when its HEADERS leave. */
static void io_reset(struct grpc_call *call, uint32_t error_code)
{
        if (call->where != CALL_ON_CONN || !call->opened || call->rst_sent)
                return;
        call->rst_sent = true;
        (void)nghttp2_submit_rst_stream(call->conn->session, NGHTTP2_FLAG_NONE, call->stream_id,
                                        error_code);
}

/* ------------------------------------------------------------------------ */
/* I/O lists                                                                  */

static void list_insert(struct grpc_call **head, struct grpc_call *call)
{
        call->prev = NULL;
        call->next = *head;
        if (*head)
                (*head)->prev = call;
        *head = call;
}

static void list_remove(struct grpc_call **head, struct grpc_call *call)
{
        if (call->prev)
                call->prev->next = call->next;
        else
                *head = call->next;
        if (call->next)
                call->next->prev = call->prev;
        call->prev = call->next = NULL;
}

/* Takes @p call off its connection; the I/O reference moves to the caller of this. */
static void io_detach(struct grpc_call *call)
{
        struct conn *conn = call->conn;

        if (call->where != CALL_ON_CONN)
                return;
        list_remove(&conn->calls, call);
        conn->n_calls--;
        call->where = CALL_NOWHERE;
        call->conn = NULL;
        /* Later callbacks for this stream (if it still exists) find no call. */
        (void)nghttp2_session_set_stream_user_data(conn->session, call->stream_id, NULL);
}

static void io_retry_add(struct kc_grpc_client *c, struct grpc_call *call)
{
        call->retried = true;
        call->where = CALL_RETRY;
        list_insert(&c->retry, call);
}

/*
 * Never processed by the server, so safe to send again on another
 * connection: its HEADERS never left, or the server refused the stream
 * (REFUSED_STREAM, or a stream id above the GOAWAY's last one).
 */
static bool io_refused(const struct conn *conn, const struct grpc_call *call, uint32_t error_code)
{
        if (call->retried || call->got_headers || call->aborted)
                return false;
        if (!call->opened)
                return true;
        return error_code == NGHTTP2_REFUSED_STREAM ||
               (conn->goaway && call->stream_id > conn->goaway_last_id);
}

static struct grpc_call *conn_find_call(struct conn *conn, int32_t stream_id)
{
        for (struct grpc_call *call = conn->calls; call; call = call->next)
                if (call->stream_id == stream_id)
                        return call;
        return NULL;
}

static void conn_break(struct conn *conn, enum kc_runtime_code code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void conn_break(struct conn *conn, enum kc_runtime_code code, const char *fmt, ...)
{
        va_list ap;

        if (conn->broken)
                return;
        conn->broken = true;
        conn->fail_code = code;
        va_start(ap, fmt);
        vsnprintf(conn->fail_msg, sizeof(conn->fail_msg), fmt, ap);
        va_end(ap);
}

/* ------------------------------------------------------------------------ */
/* Receiving messages (I/O thread)                                            */

static void io_message_done(struct grpc_call *call)
{
        call->n_msgs++;
        call->hdr_got = 0;
        if (call->streaming) {
                call->on_message(call->userdata, call->msg ? call->msg : (const uint8_t *)"",
                                 call->msg_len);
                free(call->msg);
                call->msg = NULL;
        } else {
                call->unary_msg = TAKE_PTR(call->msg);
                call->unary_msg_len = call->msg_len;
        }
        call->msg_len = call->msg_got = 0;
}

/* Reassembles length-prefixed messages from DATA chunks. */
static void io_feed(struct grpc_call *call, const uint8_t *p, size_t n)
{
        while (n > 0 && !call->aborted) {
                if (call->hdr_got < GRPC_PREFIX) {
                        size_t k = min_size(GRPC_PREFIX - call->hdr_got, n);
                        uint32_t len;

                        if (!call->streaming && call->n_msgs > 0) {
                                io_fail(call, KC_RUNTIME_INTERNAL,
                                        "malformed response: more than one message on a unary "
                                        "call");
                                io_reset(call, NGHTTP2_CANCEL);
                                return;
                        }
                        memcpy(call->hdr + call->hdr_got, p, k);
                        call->hdr_got += k;
                        p += k;
                        n -= k;
                        if (call->hdr_got < GRPC_PREFIX)
                                return;
                        len = (uint32_t)call->hdr[1] << 24 | (uint32_t)call->hdr[2] << 16 |
                              (uint32_t)call->hdr[3] << 8 | call->hdr[4];
                        if (call->hdr[0] & 1) {
                                io_fail(call, KC_RUNTIME_INTERNAL,
                                        "malformed response: compressed flag set, but no "
                                        "grpc-encoding was negotiated");
                                io_reset(call, NGHTTP2_CANCEL);
                                return;
                        }
                        if (call->hdr[0] != 0) {
                                io_fail(call, KC_RUNTIME_INTERNAL,
                                        "malformed response: invalid message flags 0x%02x",
                                        call->hdr[0]);
                                io_reset(call, NGHTTP2_CANCEL);
                                return;
                        }
                        if (len > KC_GRPC_MAX_MESSAGE) {
                                io_fail(call, KC_RUNTIME_RESOURCE_EXHAUSTED,
                                        "received message larger than max (%" PRIu32 " vs. %d)",
                                        len, KC_GRPC_MAX_MESSAGE);
                                io_reset(call, NGHTTP2_CANCEL);
                                return;
                        }
                        call->msg_len = len;
                        call->msg_got = 0;
                        if (len > 0) {
                                call->msg = malloc(len);
                                if (!call->msg) {
                                        io_fail(call, KC_RUNTIME_RESOURCE_EXHAUSTED,
                                                "out of memory for a %" PRIu32 "-byte message",
                                                len);
                                        io_reset(call, NGHTTP2_CANCEL);
                                        return;
                                }
                        }
                }
                if (call->msg_got < call->msg_len) {
                        size_t k = min_size(call->msg_len - call->msg_got, n);

                        memcpy(call->msg + call->msg_got, p, k);
                        call->msg_got += k;
                        p += k;
                        n -= k;
                }
                if (call->msg_got == call->msg_len)
                        io_message_done(call);
        }
}

/* The server ended its side of the stream: judge the whole response. */
static void io_end_of_response(struct grpc_call *call)
{
        nghttp2_session *session = call->conn->session;

        if (call->aborted)
                return;
        if (call->http_status != 200) {
                if (call->http_status == 0)
                        io_fail(call, KC_RUNTIME_INTERNAL, "malformed response: no :status");
                else
                        io_fail(call, http_status_to_code(call->http_status),
                                "unexpected HTTP status %d%s%s", call->http_status,
                                call->grpc_message[0] ? ": " : "", call->grpc_message);
        } else if (!call->content_type_ok) {
                io_fail(call, KC_RUNTIME_INTERNAL, "malformed response: %s",
                        call->content_type_seen ? "content-type is not application/grpc"
                                                : "no content-type");
        } else if (call->grpc_status == -1) {
                io_fail(call, KC_RUNTIME_INTERNAL,
                        "malformed response: the stream ended without grpc-status");
        } else if (call->grpc_status == -2) {
                io_fail(call, KC_RUNTIME_INTERNAL, "malformed response: invalid grpc-status");
        } else if (call->grpc_status != 0) {
                enum kc_runtime_code code = call->grpc_status <= KC_RUNTIME_UNAUTHENTICATED
                                                    ? (enum kc_runtime_code)call->grpc_status
                                                    : KC_RUNTIME_UNKNOWN;

                if (call->grpc_message[0])
                        io_fail(call, code, "%s", call->grpc_message);
                else
                        io_fail(call, code, "grpc-status %d", call->grpc_status);
        } else if (call->hdr_got > 0 && call->hdr_got < GRPC_PREFIX) {
                io_fail(call, KC_RUNTIME_INTERNAL,
                        "malformed response: the stream ended inside a message prefix (%zu of "
                        "5 bytes)",
                        call->hdr_got);
        } else if (call->hdr_got > 0) {
                io_fail(call, KC_RUNTIME_INTERNAL,
                        "malformed response: the stream ended inside a message (length prefix "
                        "%zu, %zu bytes received)",
                        call->msg_len, call->msg_got);
        } else if (!call->streaming && call->n_msgs == 0) {
                io_fail(call, KC_RUNTIME_INTERNAL,
                        "malformed response: grpc-status OK without a message on a unary call");
        } else {
                io_complete(call, 0, NULL);
        }
        /* Our request may still be on its way: the server no longer wants it. */
        if (call->opened && !nghttp2_session_get_stream_local_close(session, call->stream_id))
                io_reset(call, NGHTTP2_CANCEL);
}

/* ------------------------------------------------------------------------ */
/* nghttp2 callbacks (I/O thread; user_data is the connection)                */

static ssize_t cb_send(nghttp2_session *session, const uint8_t *data, size_t len, int flags,
                       void *user_data)
{
        struct conn *conn = user_data;
        ssize_t n;

        (void)session;
        (void)flags;
        do
                n = send(conn->fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n >= 0)
                return n;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
                conn->wblocked = true;
                return NGHTTP2_ERR_WOULDBLOCK;
        }
        conn->send_errno = errno;
        return NGHTTP2_ERR_CALLBACK_FAILURE;
}

/*
 * A request HEADERS is about to leave: from now on nghttp2 knows the stream
 * and RST_STREAM may be submitted for it. (Cancelling the frame here is not
 * an option: nghttp2 has already HPACK-encoded it, and dropping it would
 * desynchronise the server's header table.)
 */
static int cb_before_frame_send(nghttp2_session *session, const nghttp2_frame *frame,
                                void *user_data)
{
        struct grpc_call *call;

        (void)user_data;
        if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
                return 0;
        call = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
        if (call)
                call->opened = true;
        return 0;
}

/* A call given up while its HEADERS waited (e.g. for a stream slot) is reset at once. */
static int cb_frame_send(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
        struct grpc_call *call;

        (void)user_data;
        if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
                return 0;
        call = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
        if (call && call->aborted)
                io_reset(call, NGHTTP2_CANCEL);
        return 0;
}

static int cb_frame_not_send(nghttp2_session *session, const nghttp2_frame *frame,
                             int lib_error_code, void *user_data)
{
        struct conn *conn = user_data;
        struct kc_grpc_client *c = conn->client;
        struct grpc_call *call;

        (void)session;
        if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
                return 0;
        call = conn_find_call(conn, frame->hd.stream_id);
        if (!call)
                return 0;
        io_detach(call);
        if (!call->aborted && !call->retried &&
            (lib_error_code == NGHTTP2_ERR_START_STREAM_NOT_ALLOWED ||
             lib_error_code == NGHTTP2_ERR_SESSION_CLOSING)) {
                io_retry_add(c, call);
                return 0;
        }
        io_fail(call, KC_RUNTIME_UNAVAILABLE, "request not sent: %s",
                nghttp2_strerror(lib_error_code));
        call_unref(call);
        return 0;
}

static bool header_is(const uint8_t *name, size_t len, const char *lit)
{
        return len == strlen(lit) && memcmp(name, lit, len) == 0;
}

static int cb_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user_data)
{
        struct grpc_call *call;

        (void)flags;
        (void)user_data;
        if (frame->hd.type != NGHTTP2_HEADERS)
                return 0;
        call = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
        if (!call || call->aborted)
                return 0;
        if (header_is(name, namelen, ":status")) {
                int st = 0;

                for (size_t i = 0; i < valuelen && i < 3 && st >= 0; i++)
                        st = value[i] >= '0' && value[i] <= '9' ? st * 10 + value[i] - '0' : -1;
                /* Anything but three digits is nonsense, reported as UNKNOWN. */
                call->http_status = valuelen == 3 && st >= 100 ? st : 999;
        } else if (header_is(name, namelen, "content-type")) {
                static const char grpc_ct[] = "application/grpc";
                size_t k = sizeof(grpc_ct) - 1;

                call->content_type_seen = true;
                call->content_type_ok = valuelen >= k && memcmp(value, grpc_ct, k) == 0 &&
                                        (valuelen == k || value[k] == '+' || value[k] == ';');
        } else if (header_is(name, namelen, "grpc-status")) {
                int st = 0;

                if (valuelen == 0 || valuelen > 3)
                        st = -2;
                for (size_t i = 0; i < valuelen && st >= 0; i++)
                        st = value[i] >= '0' && value[i] <= '9' ? st * 10 + value[i] - '0' : -2;
                call->grpc_status = st;
        } else if (header_is(name, namelen, "grpc-message")) {
                percent_decode(value, valuelen, call->grpc_message, sizeof(call->grpc_message));
        }
        return 0;
}

static int cb_data_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id,
                         const uint8_t *data, size_t len, void *user_data)
{
        struct grpc_call *call;

        (void)flags;
        (void)user_data;
        call = nghttp2_session_get_stream_user_data(session, stream_id);
        if (call && !call->aborted)
                io_feed(call, data, len);
        return 0;
}

static int cb_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
        struct conn *conn = user_data;
        struct grpc_call *call;

        switch (frame->hd.type) {
        case NGHTTP2_GOAWAY: {
                const nghttp2_goaway *g = &frame->goaway;
                char dbg[128];
                size_t n = 0;

                for (size_t i = 0; i < g->opaque_data_len && n + 1 < sizeof(dbg); i++)
                        dbg[n++] = g->opaque_data[i] >= 0x20 && g->opaque_data[i] < 0x7f
                                           ? (char)g->opaque_data[i]
                                           : '?';
                dbg[n] = '\0';
                conn->goaway = true;
                conn->goaway_last_id = g->last_stream_id;
                snprintf(conn->goaway_info, sizeof(conn->goaway_info), " after GOAWAY %s%s%s%s",
                         nghttp2_http2_strerror(g->error_code), n ? " \"" : "", dbg, n ? "\"" : "");
                break;
        }
        case NGHTTP2_HEADERS:
        case NGHTTP2_DATA:
                call = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
                if (!call || call->aborted)
                        break;
                if (frame->hd.type == NGHTTP2_HEADERS)
                        call->got_headers = true;
                if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
                        io_end_of_response(call);
                break;
        default:
                break;
        }
        return 0;
}

static int cb_invalid_frame_recv(nghttp2_session *session, const nghttp2_frame *frame,
                                 int lib_error_code, void *user_data)
{
        struct grpc_call *call;

        (void)user_data;
        if (frame->hd.stream_id == 0)
                return 0;
        call = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
        if (call)
                call->invalid = nghttp2_strerror(lib_error_code);
        return 0;
}

static int cb_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                           void *user_data)
{
        struct conn *conn = user_data;
        struct grpc_call *call;

        call = nghttp2_session_get_stream_user_data(session, stream_id);
        if (!call || call->where != CALL_ON_CONN || call->conn != conn)
                return 0;
        io_detach(call);
        if (io_refused(conn, call, error_code)) {
                io_retry_add(conn->client, call);
                return 0;
        }
        if (!call->aborted) {
                if (error_code == NGHTTP2_NO_ERROR)
                        io_fail(call, KC_RUNTIME_INTERNAL,
                                "malformed response: the stream closed without a complete "
                                "response");
                else
                        io_fail(call, h2_error_to_code(error_code),
                                "HTTP/2 stream reset with %s%s%s",
                                nghttp2_http2_strerror(error_code), call->invalid ? ": " : "",
                                call->invalid ? call->invalid : "");
        }
        call_unref(call);
        return 0;
}

static int cb_error(nghttp2_session *session, int lib_error_code, const char *msg, size_t len,
                    void *user_data)
{
        struct conn *conn = user_data;

        (void)session;
        (void)lib_error_code;
        snprintf(conn->h2_error, sizeof(conn->h2_error), "%.*s", (int)len, msg);
        return 0;
}

static ssize_t req_read(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                        uint32_t *data_flags, nghttp2_data_source *source, void *user_data)
{
        struct grpc_call *call = source->ptr;
        size_t n = call->req_len - call->req_off;

        (void)session;
        (void)stream_id;
        (void)user_data;
        if (n > length)
                n = length;
        memcpy(buf, call->req + call->req_off, n);
        call->req_off += n;
        if (call->req_off == call->req_len)
                *data_flags |= NGHTTP2_DATA_FLAG_EOF;
        return (ssize_t)n;
}

static int callbacks_new(nghttp2_session_callbacks **ret)
{
        nghttp2_session_callbacks *cbs;

        if (nghttp2_session_callbacks_new(&cbs) != 0)
                return -ENOMEM;
        nghttp2_session_callbacks_set_send_callback(cbs, cb_send);
        nghttp2_session_callbacks_set_before_frame_send_callback(cbs, cb_before_frame_send);
        nghttp2_session_callbacks_set_on_frame_send_callback(cbs, cb_frame_send);
        nghttp2_session_callbacks_set_on_frame_not_send_callback(cbs, cb_frame_not_send);
        nghttp2_session_callbacks_set_on_header_callback(cbs, cb_header);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, cb_data_chunk);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, cb_frame_recv);
        nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(cbs, cb_invalid_frame_recv);
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, cb_stream_close);
        nghttp2_session_callbacks_set_error_callback2(cbs, cb_error);
        *ret = cbs;
        return 0;
}

/* ------------------------------------------------------------------------ */
/* Connections (I/O thread)                                                   */

/* The connection on @p fd (which it owns on success): its session, with our SETTINGS queued. */
static int conn_attach(struct kc_grpc_client *c, int fd, bool connecting, struct conn **ret,
                       char *why, size_t why_len)
{
        static const nghttp2_settings_entry settings[] = {
                { NGHTTP2_SETTINGS_ENABLE_PUSH, 0 },
                { NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW },
        };
        struct conn *conn;
        int r;

        conn = calloc(1, sizeof(*conn));
        if (!conn) {
                snprintf(why, why_len, "out of memory");
                return -ENOMEM;
        }
        conn->client = c;
        conn->connecting = connecting;
        conn->connect_deadline = connecting ? add_sat(mono_ns(), CONNECT_TIMEOUT_NS) : INT64_MAX;
        if (nghttp2_session_client_new2(&conn->session, c->cbs, conn, c->opt) != 0) {
                free(conn);
                snprintf(why, why_len, "out of memory");
                return -ENOMEM;
        }
        r = nghttp2_submit_settings(conn->session, NGHTTP2_FLAG_NONE, settings,
                                    KC_ELEMENTSOF(settings));
        if (r == 0)
                r = nghttp2_session_set_local_window_size(conn->session, NGHTTP2_FLAG_NONE, 0,
                                                          CONN_WINDOW);
        if (r != 0) {
                nghttp2_session_del(conn->session);
                free(conn);
                snprintf(why, why_len, "HTTP/2 session setup: %s", nghttp2_strerror(r));
                return -ENOMEM;
        }
        conn->fd = fd;
        c->next_deadline = min64(c->next_deadline, conn->connect_deadline);
        conn->next = c->conns;
        c->conns = conn;
        *ret = conn;
        return 0;
}

static int conn_new(struct kc_grpc_client *c, struct conn **ret, char *why, size_t why_len)
{
        _cleanup_close_ int fd = -1;
        bool connecting = false;
        int r;

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
                r = -errno;
                snprintf(why, why_len, "socket: %s", strerror(-r));
                return r;
        }
        if (connect(fd, (const struct sockaddr *)&c->addr, c->addr_len) < 0) {
                if (errno != EINPROGRESS) {
                        r = -errno;
                        snprintf(why, why_len, "connect %s: %s", c->path, strerror(-r));
                        return r;
                }
                connecting = true;
        }
        r = conn_attach(c, fd, connecting, ret, why, why_len);
        if (r < 0)
                return r;
        fd = -1; /* the connection's now */
        return 0;
}

/* The connection new calls go to, connecting if needed. */
static int io_get_conn(struct kc_grpc_client *c, struct conn **ret, char *why, size_t why_len)
{
        struct conn *a = c->active;

        if (a && !a->goaway && !a->broken) {
                *ret = a;
                return 0;
        }
        c->active = NULL;
        if (conn_new(c, &a, why, why_len) < 0)
                return -ECONNREFUSED;
        c->active = a;
        *ret = a;
        return 0;
}

/*
 * Tears @p conn down: every call still on it fails with @p code (or goes
 * back to the retry list when @p allow_retry and the server never saw it).
 */
static void conn_destroy(struct kc_grpc_client *c, struct conn *conn, bool allow_retry,
                         enum kc_runtime_code code, const char *msg)
{
        struct grpc_call *call;

        while ((call = conn->calls)) {
                io_detach(call);
                if (allow_retry && io_refused(conn, call, NGHTTP2_NO_ERROR)) {
                        io_retry_add(c, call);
                        continue;
                }
                io_fail(call, code, "%s", msg);
                call_unref(call);
        }
        for (struct conn **p = &c->conns; *p; p = &(*p)->next)
                if (*p == conn) {
                        *p = conn->next;
                        break;
                }
        if (c->active == conn)
                c->active = NULL;
        nghttp2_session_del(conn->session);
        close_fd(conn->fd);
        free(conn);
}

static void conn_connected(struct conn *conn)
{
        int soerr = 0;
        socklen_t len = sizeof(soerr);

        if (getsockopt(conn->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
                soerr = errno;
        if (soerr) {
                conn_break(conn, KC_RUNTIME_UNAVAILABLE, "connect %s: %s", conn->client->path,
                           strerror(soerr));
                return;
        }
        conn->connecting = false;
        conn->connect_deadline = INT64_MAX;
        for (struct grpc_call *call = conn->calls; call; call = call->next)
                io_mark_started(call);
}

/*
 * Reads what the socket has, up to READ_BUDGET buffers at a time so that a
 * large response does not hold up the other connections, the queues and the
 * WINDOW_UPDATEs the next flush sends (poll is level-triggered).
 */
static void conn_read(struct conn *conn, int budget)
{
        struct kc_grpc_client *c = conn->client;

        for (; budget > 0; budget--) {
                ssize_t n = read(conn->fd, c->rbuf, READ_BUF_SIZE), m;

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return;
                if (n < 0) {
                        conn_break(conn, KC_RUNTIME_UNAVAILABLE, "connection to %s lost: %s%s",
                                   c->path, strerror(errno), conn->goaway_info);
                        return;
                }
                if (n == 0) {
                        conn_break(conn, KC_RUNTIME_UNAVAILABLE,
                                   "connection to %s closed by the server%s", c->path,
                                   conn->goaway_info);
                        return;
                }
                m = nghttp2_session_mem_recv(conn->session, c->rbuf, (size_t)n);
                if (m < 0) {
                        conn_break(conn, KC_RUNTIME_INTERNAL, "HTTP/2 protocol error: %s",
                                   conn->h2_error[0] ? conn->h2_error : nghttp2_strerror((int)m));
                        return;
                }
                if (n < READ_BUF_SIZE)
                        return;
        }
}

static void conn_flush(struct conn *conn)
{
        int r;

        if (conn->broken || conn->connecting || conn->wblocked)
                return;
        r = nghttp2_session_send(conn->session);
        if (r == 0)
                return;
        /*
         * The server may have closed the socket right after a GOAWAY we have
         * not read yet: read what is left first, so that the streams it
         * never saw are known (above its last stream id) and retried.
         */
        conn_read(conn, INT_MAX);
        if (conn->send_errno)
                conn_break(conn, KC_RUNTIME_UNAVAILABLE, "connection to %s lost: send: %s%s",
                           conn->client->path, strerror(conn->send_errno), conn->goaway_info);
        else
                conn_break(conn, KC_RUNTIME_INTERNAL, "HTTP/2 error: %s", nghttp2_strerror(r));
}

/* ------------------------------------------------------------------------ */
/* The I/O loop                                                               */

static void io_submit(struct kc_grpc_client *c, struct conn *conn, struct grpc_call *call)
{
        char timeout[16];
        nghttp2_nv nva[8];
        size_t n = 0;
        nghttp2_data_provider prd = { .source.ptr = call, .read_callback = req_read };
        int32_t id;

#define NV(n_, v_)                                                                                 \
        ((nghttp2_nv){ .name = (uint8_t *)(n_),                                                    \
                       .value = (uint8_t *)(v_),                                                   \
                       .namelen = strlen(n_),                                                      \
                       .valuelen = strlen(v_),                                                     \
                       .flags = NGHTTP2_NV_FLAG_NONE })
        nva[n++] = NV(":method", "POST");
        nva[n++] = NV(":scheme", "http");
        nva[n++] = NV(":path", call->path);
        nva[n++] = NV(":authority", "localhost");
        nva[n++] = NV("content-type", "application/grpc");
        nva[n++] = NV("te", "trailers");
        if (call->deadline != INT64_MAX) {
                int64_t left = call->deadline - mono_ns();

                if (left <= 0) {
                        io_fail(call, KC_RUNTIME_DEADLINE_EXCEEDED,
                                "deadline exceeded before the request was sent");
                        call_unref(call);
                        return;
                }
                format_grpc_timeout(left, timeout);
                nva[n++] = NV("grpc-timeout", timeout);
        }
#undef NV
        /* A retried call starts over (it never got an answer, but be thorough). */
        call->req_off = 0;
        call->opened = call->rst_sent = call->got_headers = false;
        call->http_status = 0;
        call->grpc_status = -1;
        call->content_type_seen = call->content_type_ok = false;
        call->grpc_message[0] = '\0';
        call->invalid = NULL;
        call->hdr_got = call->msg_len = call->msg_got = call->n_msgs = 0;
        free(call->msg);
        call->msg = NULL;
        id = nghttp2_submit_request(conn->session, NULL, nva, n, &prd, call);
        if (id < 0) {
                /* Out of stream ids: this connection takes no more streams. */
                conn->goaway = true;
                if (id == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE && !call->retried) {
                        io_retry_add(c, call);
                        return;
                }
                io_fail(call, KC_RUNTIME_UNAVAILABLE, "request not submitted: %s",
                        nghttp2_strerror(id));
                call_unref(call);
                return;
        }
        call->stream_id = id;
        call->where = CALL_ON_CONN;
        call->conn = conn;
        list_insert(&conn->calls, call);
        conn->n_calls++;
        if (!call->streaming)
                c->next_deadline = min64(c->next_deadline, call->deadline);
        if (!conn->connecting)
                io_mark_started(call);
}

/* Puts a list of calls (linked by sub_next; the list's references) on the active connection. */
static void io_submit_all(struct kc_grpc_client *c, struct grpc_call *list)
{
        char why[256];
        struct conn *conn = NULL;
        bool no_conn = false;

        while (list) {
                struct grpc_call *call = list;
                bool given_up;

                list = call->sub_next;
                call->sub_next = NULL;
                pthread_mutex_lock(&call->lock);
                given_up = call->done; /* the caller gave up already */
                pthread_mutex_unlock(&call->lock);
                if (given_up) {
                        call->aborted = true;
                        call_unref(call);
                        continue;
                }
                if (!conn && !no_conn && io_get_conn(c, &conn, why, sizeof(why)) < 0)
                        no_conn = true;
                if (no_conn) {
                        io_fail(call, KC_RUNTIME_UNAVAILABLE, "%s", why);
                        call_unref(call);
                        continue;
                }
                io_submit(c, conn, call);
        }
}

static void io_process_retries(struct kc_grpc_client *c)
{
        struct grpc_call *list = NULL, **tail = &list;

        while (c->retry) {
                struct grpc_call *call = c->retry;

                list_remove(&c->retry, call);
                call->where = CALL_NOWHERE;
                *tail = call;
                tail = &call->sub_next;
                call->sub_next = NULL;
        }
        io_submit_all(c, list);
}

static void io_process_cancels(struct kc_grpc_client *c, struct grpc_call *list)
{
        while (list) {
                struct grpc_call *call = list;

                list = call->can_next;
                call->can_next = NULL;
                if (call->streaming)
                        io_fail(call, KC_RUNTIME_CANCELLED, "stream closed by the client");
                call->aborted = true; /* a unary caller has its result already */
                if (call->where == CALL_ON_CONN) {
                        io_reset(call, NGHTTP2_CANCEL);
                } else if (call->where == CALL_RETRY) {
                        list_remove(&c->retry, call);
                        call->where = CALL_NOWHERE;
                        call_unref(call);
                }
                call_unref(call); /* the queue's reference */
        }
}

static void io_check_deadlines(struct kc_grpc_client *c, int64_t now)
{
        char d[KC_DURATION_MAX];
        int64_t next = INT64_MAX;

        if (now < c->next_deadline)
                return;
        for (struct conn *conn = c->conns; conn; conn = conn->next) {
                if (conn->connecting) {
                        if (now >= conn->connect_deadline)
                                conn_break(conn, KC_RUNTIME_UNAVAILABLE, "connect %s: timed out",
                                           c->path);
                        else
                                next = min64(next, conn->connect_deadline);
                }
                for (struct grpc_call *call = conn->calls; call; call = call->next) {
                        if (call->aborted || call->streaming)
                                continue;
                        if (now < call->deadline) {
                                next = min64(next, call->deadline);
                                continue;
                        }
                        io_fail(call, KC_RUNTIME_DEADLINE_EXCEEDED, "deadline exceeded after %s",
                                kc_format_duration(call->timeout_ns, d));
                        io_reset(call, NGHTTP2_CANCEL);
                }
        }
        c->next_deadline = next;
}

/* Flushes every connection and tears down the ones that are done. */
static void io_flush_and_reap(struct kc_grpc_client *c)
{
        struct conn *conn, *next;

        for (conn = c->conns; conn; conn = next) {
                next = conn->next;
                conn_flush(conn);
                if (conn->broken) {
                        conn_destroy(c, conn, true, conn->fail_code, conn->fail_msg);
                } else if (!conn->connecting && !nghttp2_session_want_read(conn->session) &&
                           !nghttp2_session_want_write(conn->session)) {
                        if (conn->h2_error[0])
                                conn_destroy(c, conn, true, KC_RUNTIME_INTERNAL, conn->h2_error);
                        else
                                conn_destroy(c, conn, true, KC_RUNTIME_UNAVAILABLE,
                                             "HTTP/2 session ended");
                } else if (conn->goaway && conn->n_calls == 0) {
                        conn_destroy(c, conn, true, KC_RUNTIME_UNAVAILABLE, "connection retired");
                }
        }
}

static int io_poll(struct kc_grpc_client *c)
{
        size_t n = 1, want = 1;
        struct timespec ts, *tsp = NULL;
        int64_t now;
        int k;

        for (struct conn *conn = c->conns; conn; conn = conn->next)
                want++;
        if (want > c->pfds_cap) {
                struct pollfd *p = reallocarray(c->pfds, want, sizeof(*p));
                struct conn **q;

                if (!p)
                        return -ENOMEM;
                c->pfds = p;
                q = reallocarray(c->pconns, want, sizeof(*q));
                if (!q)
                        return -ENOMEM;
                c->pconns = q;
                c->pfds_cap = want;
        }
        c->pfds[0] = (struct pollfd){ .fd = c->efd, .events = POLLIN };
        for (struct conn *conn = c->conns; conn; conn = conn->next) {
                short ev = 0;

                if (conn->connecting) {
                        ev = POLLOUT;
                } else {
                        if (nghttp2_session_want_read(conn->session))
                                ev |= POLLIN;
                        if (conn->wblocked)
                                ev |= POLLOUT;
                }
                c->pfds[n] = (struct pollfd){ .fd = conn->fd, .events = ev };
                c->pconns[n++] = conn;
        }
        now = mono_ns();
        if (c->retry) {
                ts = (struct timespec){ 0 };
                tsp = &ts;
        } else if (c->next_deadline != INT64_MAX) {
                int64_t d = c->next_deadline > now ? c->next_deadline - now : 0;

                ts = (struct timespec){ .tv_sec = d / KC_NSEC_PER_SEC,
                                        .tv_nsec = d % KC_NSEC_PER_SEC };
                tsp = &ts;
        }
        k = ppoll(c->pfds, n, tsp, NULL);
        if (k < 0)
                return errno == EINTR ? 0 : -errno;
        if (c->pfds[0].revents & POLLIN) {
                uint64_t v;

                (void)!read(c->efd, &v, sizeof(v));
        }
        for (size_t i = 1; i < n; i++) {
                struct conn *conn = c->pconns[i];
                short rev = c->pfds[i].revents;

                if (!rev)
                        continue;
                if (conn->connecting) {
                        conn_connected(conn);
                        continue;
                }
                if (rev & POLLOUT)
                        conn->wblocked = false;
                if (rev & (POLLIN | POLLHUP | POLLERR))
                        conn_read(conn, READ_BUDGET);
                if ((rev & (POLLHUP | POLLERR)) && !(rev & POLLIN))
                        conn_break(conn, KC_RUNTIME_UNAVAILABLE,
                                   "connection to %s closed by the server%s", c->path,
                                   conn->goaway_info);
        }
        return 0;
}

/* client_free(): every call ends CANCELLED; no retries. */
static void io_shutdown(struct kc_grpc_client *c, struct grpc_call *subs, struct grpc_call *cans)
{
        static const char msg[] = "the gRPC client was closed";

        while (subs) {
                struct grpc_call *call = subs;

                subs = call->sub_next;
                io_fail(call, KC_RUNTIME_CANCELLED, msg);
                call_unref(call);
        }
        while (cans) {
                struct grpc_call *call = cans;

                cans = call->can_next;
                call_unref(call);
        }
        while (c->conns)
                conn_destroy(c, c->conns, false, KC_RUNTIME_CANCELLED, msg);
        while (c->retry) {
                struct grpc_call *call = c->retry;

                list_remove(&c->retry, call);
                call->where = CALL_NOWHERE;
                io_fail(call, KC_RUNTIME_CANCELLED, msg);
                call_unref(call);
        }
}

static void *io_main(void *arg)
{
        struct kc_grpc_client *c = arg;
        sigset_t all;

        /* Signals belong to the daemon's signalfd, never to this thread. */
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, NULL);
        for (;;) {
                struct grpc_call *subs, *cans;
                bool closing;

                pthread_mutex_lock(&c->lock);
                subs = c->sub_head;
                cans = c->can_head;
                c->sub_head = c->can_head = NULL;
                c->sub_tail = &c->sub_head;
                c->can_tail = &c->can_head;
                c->wake_pending = false;
                closing = c->closing;
                pthread_mutex_unlock(&c->lock);
                if (closing) {
                        io_shutdown(c, subs, cans);
                        return NULL;
                }
                io_submit_all(c, subs);
                io_process_retries(c);
                io_process_cancels(c, cans);
                io_check_deadlines(c, mono_ns());
                io_flush_and_reap(c);
                if (io_poll(c) < 0) {
                        /* Out of memory for the poll set: fail what we have, start over. */
                        while (c->conns)
                                conn_destroy(c, c->conns, false, KC_RUNTIME_UNAVAILABLE,
                                             "gRPC I/O: out of memory");
                }
        }
}

/* ------------------------------------------------------------------------ */
/* Public API                                                                 */

static void client_destroy(struct kc_grpc_client *c)
{
        if (c->cbs)
                nghttp2_session_callbacks_del(c->cbs);
        if (c->opt)
                nghttp2_option_del(c->opt);
        close_fd(c->efd);
        pthread_mutex_destroy(&c->lock);
        free(c->pfds);
        free(c->pconns);
        free(c->rbuf);
        free(c->path);
        free(c);
}

int kc_grpc_client_new(const char *socket_path, struct kc_grpc_client **ret)
{
        struct kc_grpc_client *c;
        size_t len;
        int r;

        if (!socket_path || !*socket_path || !ret)
                return -EINVAL;
        len = strlen(socket_path);
        if (len >= sizeof(((struct sockaddr_un *)NULL)->sun_path))
                return -ENAMETOOLONG;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->efd = -1;
        r = -pthread_mutex_init(&c->lock, NULL);
        if (r < 0) {
                free(c);
                return r;
        }
        c->sub_tail = &c->sub_head;
        c->can_tail = &c->can_head;
        c->next_deadline = INT64_MAX;
        c->addr.sun_family = AF_UNIX;
        memcpy(c->addr.sun_path, socket_path, len + 1);
        c->addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
        c->path = strdup(socket_path);
        c->rbuf = malloc(READ_BUF_SIZE);
        if (!c->path || !c->rbuf) {
                client_destroy(c);
                return -ENOMEM;
        }
        c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (c->efd < 0) {
                r = -errno;
                client_destroy(c);
                return r;
        }
        r = callbacks_new(&c->cbs);
        if (r == 0 && nghttp2_option_new(&c->opt) != 0)
                r = -ENOMEM;
        if (r < 0) {
                client_destroy(c);
                return r;
        }
        /*
         * Default options: nghttp2 answers the server's PINGs and SETTINGS,
         * returns receive windows as DATA is consumed, and caps concurrent
         * streams at 100 until the server's SETTINGS say otherwise.
         */
        r = -pthread_create(&c->thread, NULL, io_main, c);
        if (r < 0) {
                client_destroy(c);
                return r;
        }
        (void)pthread_setname_np(c->thread, "kc-grpc-io");
        *ret = c;
        return 0;
}

void kc_grpc_client_shutdown(struct kc_grpc_client *c)
{
        bool joined;

        pthread_mutex_lock(&c->lock);
        c->closing = true;
        joined = c->joined;
        c->joined = true;
        pthread_mutex_unlock(&c->lock);
        if (joined)
                return;
        client_wake(c);
        pthread_join(c->thread, NULL);
}

struct kc_grpc_client *kc_grpc_client_free(struct kc_grpc_client *c)
{
        if (!c)
                return NULL;
        kc_grpc_client_shutdown(c);
        client_destroy(c);
        return NULL;
}

int kc_grpc_unary(struct kc_grpc_client *c, const char *path, const uint8_t *req, size_t req_len,
                  int64_t timeout_ns, struct kc_cancel *ctx, uint8_t **ret_resp,
                  size_t *ret_resp_len, struct kc_runtime_error *err)
{
        _cleanup_(call_unrefp) struct grpc_call *call = NULL;
        int r;

        if (!c || !path || path[0] != '/' || (!req && req_len) || timeout_ns <= 0 || !ret_resp ||
            !ret_resp_len)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "invalid gRPC call arguments");
        if (req_len > KC_GRPC_MAX_MESSAGE)
                return kc_runtime_error_set(err, -E2BIG, KC_RUNTIME_RESOURCE_EXHAUSTED,
                                            "trying to send message larger than max (%zu vs. %d)",
                                            req_len, KC_GRPC_MAX_MESSAGE);
        if (ctx && kc_cancel_is_set(ctx))
                return kc_runtime_error_set(err, -ECANCELED, KC_RUNTIME_CANCELLED,
                                            "%s: cancelled before it was sent", path);
        r = call_new(c, path, req, req_len, &call);
        if (r < 0)
                return kc_runtime_error_set(err, r, KC_RUNTIME_RESOURCE_EXHAUSTED, "%s: %s", path,
                                            strerror(-r));
        call->timeout_ns = timeout_ns;
        call->deadline = add_sat(mono_ns(), timeout_ns);
        r = client_submit(c, call);
        if (r < 0)
                return kc_runtime_error_set(err, r, KC_RUNTIME_CANCELLED,
                                            "the gRPC client was closed");

        pthread_mutex_lock(&call->lock);
        while (!call->done) {
                int64_t now = mono_ns(), net = add_sat(call->deadline, DEADLINE_NET_NS);
                char d[KC_DURATION_MAX];

                if (ctx && kc_cancel_is_set(ctx)) {
                        call->done = true;
                        call->r = kc_runtime_error_set(&call->err, -ECANCELED, KC_RUNTIME_CANCELLED,
                                                       "%s: cancelled", path);
                        call_queue_cancel_locked(call);
                        break;
                }
                if (now >= net) {
                        /* The I/O thread should have failed it at the deadline: the net. */
                        call->done = true;
                        call->r = kc_runtime_error_set(
                                &call->err, -ETIMEDOUT, KC_RUNTIME_DEADLINE_EXCEEDED,
                                "deadline exceeded after %s", kc_format_duration(timeout_ns, d));
                        call_queue_cancel_locked(call);
                        break;
                }
                cond_wait_until(&call->cond, &call->lock,
                                ctx ? min64(net, now + CTX_POLL_NS) : net);
        }
        r = call->r;
        if (r == 0) {
                *ret_resp = TAKE_PTR(call->resp);
                *ret_resp_len = call->resp_len;
        } else if (err) {
                *err = call->err;
        }
        pthread_mutex_unlock(&call->lock);
        return r;
}

int kc_grpc_stream_open(struct kc_grpc_client *c, const char *path, const uint8_t *req,
                        size_t req_len, kc_grpc_message_fn on_message, kc_grpc_close_fn on_close,
                        void *userdata, struct kc_grpc_stream **ret, struct kc_runtime_error *err)
{
        _cleanup_(call_unrefp) struct grpc_call *call = NULL;
        int r;

        if (!c || !path || path[0] != '/' || (!req && req_len) || !on_message || !on_close || !ret)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "invalid gRPC stream arguments");
        if (req_len > KC_GRPC_MAX_MESSAGE)
                return kc_runtime_error_set(err, -E2BIG, KC_RUNTIME_RESOURCE_EXHAUSTED,
                                            "trying to send message larger than max (%zu vs. %d)",
                                            req_len, KC_GRPC_MAX_MESSAGE);
        r = call_new(c, path, req, req_len, &call);
        if (r < 0)
                return kc_runtime_error_set(err, r, KC_RUNTIME_RESOURCE_EXHAUSTED, "%s: %s", path,
                                            strerror(-r));
        call->streaming = true;
        call->on_message = on_message;
        call->on_close = on_close;
        call->userdata = userdata;
        r = client_submit(c, call);
        if (r < 0)
                return kc_runtime_error_set(err, r, KC_RUNTIME_CANCELLED,
                                            "the gRPC client was closed");

        pthread_mutex_lock(&call->lock);
        while (!call->started && !call->done)
                cond_wait_until(&call->cond, &call->lock, add_sat(mono_ns(), WAIT_NET_NS));
        if (!call->started) {
                r = call->r;
                if (err)
                        *err = call->err;
                pthread_mutex_unlock(&call->lock);
                return r;
        }
        pthread_mutex_unlock(&call->lock);
        *ret = (struct kc_grpc_stream *)TAKE_PTR(call);
        return 0;
}

struct kc_grpc_stream *kc_grpc_stream_close(struct kc_grpc_stream *s)
{
        struct grpc_call *call;

        if (!s)
                return NULL;
        call = &s->call;
        pthread_mutex_lock(&call->lock);
        if (!call->finished) {
                call_queue_cancel_locked(call);
                while (!call->finished)
                        cond_wait_until(&call->cond, &call->lock, add_sat(mono_ns(), WAIT_NET_NS));
        }
        pthread_mutex_unlock(&call->lock);
        call_unref(call);
        return NULL;
}

/* ------------------------------------------------------------------------ */
/* Canned server bytes (tests and fuzzing)                                    */

struct canned {
        kc_grpc_message_fn on_message;
        void *userdata;
        bool closed;
        int r;
        struct kc_runtime_error err;
};

/* What the client sends goes nowhere: the server's answer is canned. */
static ssize_t canned_send(nghttp2_session *session, const uint8_t *data, size_t len, int flags,
                           void *user_data)
{
        (void)session;
        (void)data;
        (void)flags;
        (void)user_data;
        return (ssize_t)len;
}

static void canned_on_message(void *userdata, const uint8_t *msg, size_t len)
{
        struct canned *k = userdata;

        k->on_message(k->userdata, msg, len);
}

static void canned_on_close(void *userdata, int r, const struct kc_runtime_error *err)
{
        struct canned *k = userdata;

        k->closed = true;
        k->r = r;
        if (r < 0)
                k->err = *err;
}

int kc__grpc_run_canned(const uint8_t *server, size_t len, size_t chunk,
                        kc_grpc_message_fn on_message, void *userdata, uint8_t **ret_resp,
                        size_t *ret_resp_len, struct kc_runtime_error *err)
{
        _cleanup_(call_unrefp) struct grpc_call *call = NULL;
        struct canned k = { .on_message = on_message, .userdata = userdata };
        struct kc_grpc_client *c;
        struct conn *conn;
        char why[256];
        int r;

        if ((!server && len) || (!on_message && (!ret_resp || !ret_resp_len)))
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "invalid canned call arguments");
        c = calloc(1, sizeof(*c));
        if (!c)
                return kc_runtime_error_set(err, -ENOMEM, KC_RUNTIME_RESOURCE_EXHAUSTED,
                                            "out of memory");
        c->efd = -1;
        (void)pthread_mutex_init(&c->lock, NULL);
        c->sub_tail = &c->sub_head;
        c->can_tail = &c->can_head;
        c->next_deadline = INT64_MAX;
        c->path = strdup("canned");
        r = c->path ? callbacks_new(&c->cbs) : -ENOMEM;
        if (r == 0 && nghttp2_option_new(&c->opt) != 0)
                r = -ENOMEM;
        if (r == 0) {
                nghttp2_session_callbacks_set_send_callback(c->cbs, canned_send);
                r = conn_attach(c, -1, false, &conn, why, sizeof(why));
        }
        if (r == 0)
                r = call_new(c, "/runtime.v1.RuntimeService/Canned", NULL, 0, &call);
        if (r < 0) {
                if (c->conns)
                        conn_destroy(c, c->conns, false, KC_RUNTIME_CANCELLED, "canned");
                client_destroy(c);
                return kc_runtime_error_set(err, r, KC_RUNTIME_RESOURCE_EXHAUSTED, "%s",
                                            strerror(-r));
        }
        if (on_message) {
                call->streaming = true;
                call->on_message = canned_on_message;
                call->on_close = canned_on_close;
                call->userdata = &k;
        }

        /* What io_main() does, with the socket's bytes coming from @p server. */
        io_submit(c, conn, call_ref(call));
        io_flush_and_reap(c);
        for (size_t off = 0; off < len && c->conns;) {
                size_t n = chunk ? min_size(chunk, len - off) : len - off;
                ssize_t m;

                conn = c->conns;
                m = nghttp2_session_mem_recv(conn->session, server + off, n);
                off += n;
                if (m < 0)
                        conn_break(conn, KC_RUNTIME_INTERNAL, "HTTP/2 protocol error: %s",
                                   conn->h2_error[0] ? conn->h2_error : nghttp2_strerror((int)m));
                io_flush_and_reap(c);
        }
        /* The server closed the connection. */
        if (c->conns) {
                conn = c->conns;
                conn_break(conn, KC_RUNTIME_UNAVAILABLE, "connection to %s closed by the server%s",
                           c->path, conn->goaway_info);
                io_flush_and_reap(c);
        }
        /* A refused call would be sent again on a new connection: there is none. */
        while (c->retry) {
                struct grpc_call *rc = c->retry;

                list_remove(&c->retry, rc);
                rc->where = CALL_NOWHERE;
                io_fail(rc, KC_RUNTIME_UNAVAILABLE, "canned: refused, would be retried");
                call_unref(rc);
        }
        client_destroy(c);

        if (on_message && k.closed) {
                if (k.r < 0 && err)
                        *err = k.err;
                return k.r;
        }
        /* A unary call, or a stream that failed before it started (as kc_grpc_stream_open()). */
        if (!call->done)
                return kc_runtime_error_set(err, -EDEADLK, KC_RUNTIME_INTERNAL,
                                            "canned: the call never ended (a caller would hang)");
        r = call->r;
        if (r == 0) {
                *ret_resp = TAKE_PTR(call->resp);
                *ret_resp_len = call->resp_len;
        } else if (err) {
                *err = call->err;
        }
        return r;
}
