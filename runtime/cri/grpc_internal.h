/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file grpc_internal.h
 * @brief The gRPC transport's private structures and the functions its
 * files share (runtime/cri/grpc*.c); the contract is in grpc.h.
 *
 * The files, one concern each:
 *   grpc.c          the client object, the public API and the callers' waits
 *   grpc_call.c     a call's life: references, completion, the I/O lists
 *   grpc_message.c  gRPC message framing: the request body, reassembly
 *   grpc_status.c   status codes, response headers and trailers, the verdict
 *   grpc_conn.c     a connection and its nghttp2 session and callbacks
 *   grpc_loop.c     the I/O thread: submission, deadlines, the poll loop
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
#pragma once

#include <assert.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "core/cleanup.h"
#include "core/list.h"
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
        struct kc_list link; /* on conn->calls or client->retry */
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
        struct kc_list link; /* on client->conns */
        nghttp2_session *session;
        int fd;
        bool connecting;
        bool wblocked; /* the socket buffer was full: wait for POLLOUT */
        bool goaway;   /* no new streams (GOAWAY received, or ids exhausted) */
        int32_t goaway_last_id;
        int64_t connect_deadline;
        struct kc_list calls; /* struct grpc_call, newest first */
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
        char *path; /* the socket's path, or "host:port" for TCP (messages) */
        struct sockaddr_storage addr;
        socklen_t addr_len;
        const char *authority; /* :authority: "localhost" on a unix socket, else path */
        char *user_agent;      /* sent when set */
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
        struct kc_list conns;  /* struct conn, newest first */
        struct conn *active;   /* where new calls go; NULL: connect on demand */
        struct kc_list retry;  /* struct grpc_call, last refused first */
        int64_t next_deadline; /* no call or connect deadline before this */
        uint8_t *rbuf;
        struct pollfd *pfds;
        struct conn **pconns;
        size_t pfds_cap, pconns_cap;
};

/* ------------------------------------------------------------------------ */
/* Small helpers                                                              */

static inline int64_t mono_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * KC_NSEC_PER_SEC + ts.tv_nsec;
}

static inline int64_t add_sat(int64_t a, int64_t b)
{
        return a > INT64_MAX - b ? INT64_MAX : a + b;
}

static inline int64_t min64(int64_t a, int64_t b)
{
        return a < b ? a : b;
}

static inline size_t min_size(size_t a, size_t b)
{
        return a < b ? a : b;
}

static inline void close_fd(int fd)
{
        if (fd >= 0)
                close(fd);
}

/* ------------------------------------------------------------------------ */
/* The client (grpc.c)                                                        */

/**
 * Everything of a client but its I/O thread: the socket address (not
 * connected), the eventfd, the nghttp2 callbacks and options. 0, -EINVAL,
 * -ENAMETOOLONG, -ENOMEM or an eventfd error; *ret untouched on failure.
 */
int kc__grpc_client_alloc(const char *socket_path, struct kc_grpc_client **ret);
/** kc__grpc_client_alloc() for TCP to @p host:@p port (numeric or resolved now). */
int kc__grpc_client_alloc_tcp(const char *host, int port, struct kc_grpc_client **ret);
/** Frees a client whose I/O thread is not running (or was joined), and its connections. */
void kc__grpc_client_destroy(struct kc_grpc_client *c);

/* ------------------------------------------------------------------------ */
/* Calls (grpc_call.c; I/O thread unless stated)                              */

/** A new reference, from an existing one (any thread). */
struct grpc_call *kc__grpc_call_ref(struct grpc_call *call);
/** Drops a reference (any thread); the last one frees the call. NULL-safe; returns NULL. */
struct grpc_call *kc__grpc_call_unref(struct grpc_call *call);
KC_DEFINE_CLEANUP_FUNC(struct grpc_call, kc__grpc_call_unref)
/** A unary call of @p c on @p path with the request @p req framed; one reference (any thread). */
int kc__grpc_call_new(struct kc_grpc_client *c, const char *path, const uint8_t *req,
                      size_t req_len, struct grpc_call **ret);
/**
 * The caller's side of a result set by the I/O thread (call->done): the
 * error into @p err, or the response into *ret_resp. With call->lock held
 * once the call is submitted.
 */
int kc__grpc_call_take_result(struct grpc_call *call, uint8_t **ret_resp, size_t *ret_resp_len,
                              struct kc_runtime_error *err);

/** Hands the outcome to the caller (unary, or a stream not started yet) or runs on_close. */
void kc__grpc_call_complete(struct grpc_call *call, int r, const struct kc_runtime_error *err);
/** kc__grpc_call_complete() with the errno of @p code and a formatted message. */
void kc__grpc_call_fail(struct grpc_call *call, enum kc_runtime_code code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/** A stream's request is on a connected connection: kc_grpc_stream_open() may return. */
void kc__grpc_call_mark_started(struct grpc_call *call);
/** Resets the call's stream once it is open; an unopened one is reset when its HEADERS leave. */
void kc__grpc_call_reset(struct grpc_call *call, uint32_t error_code);
/** Takes @p call off its connection; the I/O reference moves to the caller of this. */
void kc__grpc_call_detach(struct grpc_call *call);
/** Puts @p call (holding the I/O reference) on the retry list, once. */
void kc__grpc_call_retry(struct kc_grpc_client *c, struct grpc_call *call);
/**
 * Never processed by the server, so safe to send again on another
 * connection: its HEADERS never left, or the server refused the stream
 * (REFUSED_STREAM, or a stream id above the GOAWAY's last one).
 */
bool kc__grpc_call_refused(const struct conn *conn, const struct grpc_call *call,
                           uint32_t error_code);

/* ------------------------------------------------------------------------ */
/* Messages (grpc_message.c; I/O thread)                                      */

/** The 5-byte prefix of a @p len-byte message: not compressed, the length big-endian. */
void kc__grpc_frame_prefix(uint8_t out[static GRPC_PREFIX], size_t len);
/** Reassembles length-prefixed messages from the DATA chunks of @p call's response. */
void kc__grpc_call_feed(struct grpc_call *call, const uint8_t *p, size_t n);
/** The request body's nghttp2 data source (source->ptr is the call). */
ssize_t kc__grpc_req_read(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                          uint32_t *data_flags, nghttp2_data_source *source, void *user_data);

/* ------------------------------------------------------------------------ */
/* Status, headers and trailers (grpc_status.c; I/O thread)                   */

/**
 * The grpc-timeout value: at most 8 digits and a unit (the protocol's
 * limit), the finest unit that fits, rounded up so the server never sees a
 * shorter deadline than ours.
 */
void kc__grpc_format_timeout(int64_t ns, char buf[static 16]);
/** One response header or trailer of @p call (:status, content-type, grpc-status, grpc-message). */
void kc__grpc_call_header(struct grpc_call *call, const uint8_t *name, size_t namelen,
                          const uint8_t *value, size_t valuelen);
/** The server ended its side of the stream: judge the whole response. */
void kc__grpc_call_end_of_response(struct grpc_call *call);
/** The stream closed (@p error_code) before the response was judged: fail the call. */
void kc__grpc_call_closed_early(struct grpc_call *call, uint32_t error_code);

/* ------------------------------------------------------------------------ */
/* Connections (grpc_conn.c; I/O thread)                                      */

/** The nghttp2 callbacks of every session of a client. */
int kc__grpc_callbacks_new(nghttp2_session_callbacks **ret);
/**
 * The connection on @p fd (which it owns on success; -1 for none): its
 * session, with our SETTINGS queued. On failure @p why says what failed.
 */
int kc__grpc_conn_attach(struct kc_grpc_client *c, int fd, bool connecting, struct conn **ret,
                         char *why, size_t why_len);
/** The connection new calls go to, connecting if needed; -ECONNREFUSED with @p why. */
int kc__grpc_conn_get(struct kc_grpc_client *c, struct conn **ret, char *why, size_t why_len);
/**
 * Tears @p conn down: every call still on it fails with @p code (or goes
 * back to the retry list when @p allow_retry and the server never saw it).
 */
void kc__grpc_conn_destroy(struct kc_grpc_client *c, struct conn *conn, bool allow_retry,
                           enum kc_runtime_code code, const char *msg);
/** The connection is unusable (the first reason sticks); the loop tears it down. */
void kc__grpc_conn_break(struct conn *conn, enum kc_runtime_code code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/** The server closed the connection (EOF or a hang-up). */
void kc__grpc_conn_closed(struct conn *conn);
/** A non-blocking connect() finished, one way or the other. */
void kc__grpc_conn_connected(struct conn *conn);
/**
 * Feeds @p len bytes from the server to the session. 0, or -EPROTO when
 * they break the protocol (the connection is then broken).
 */
int kc__grpc_conn_recv(struct conn *conn, const uint8_t *data, size_t len);
/** Reads what the socket has, at most @p budget buffers. */
void kc__grpc_conn_read(struct conn *conn, int budget);
/** Sends what the session has queued, unless the connection cannot take it now. */
void kc__grpc_conn_flush(struct conn *conn);

/* ------------------------------------------------------------------------ */
/* The I/O thread (grpc_loop.c)                                               */

/** Opens @p call's stream on @p conn; takes the call's I/O reference. */
void kc__grpc_io_submit(struct kc_grpc_client *c, struct conn *conn, struct grpc_call *call);
/** Flushes every connection and tears down the ones that are done. */
void kc__grpc_io_flush_and_reap(struct kc_grpc_client *c);
/** Fails every call on the retry list with @p code. */
void kc__grpc_io_fail_retries(struct kc_grpc_client *c, enum kc_runtime_code code, const char *msg);
/** The I/O thread's main (@p arg is the client). */
void *kc__grpc_io_main(void *arg);
