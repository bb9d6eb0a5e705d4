/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file runtime/http_client.h
 * @brief The small network client the kubelet's handlers share: a TCP dial
 * bounded by a deadline, and one HTTP/1.1 GET (or HTTPS through OpenSSL,
 * certificates not verified) built as upstream's pkg/probe/http request.go
 * builds probe and lifecycle requests.
 *
 * Deadlines are on CLOCK_MONOTONIC (network time is real time, whatever
 * clock the caller schedules on). Every wait polls in slices of at most
 * 1 s, so a set @p ctx ends it within a second. Any thread, concurrently.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kc_api_http_header;
struct kc_cancel;

/** CLOCK_MONOTONIC now plus @p timeout_ns (> 0), saturating; 0 for no deadline. */
int64_t kc_net_deadline(int64_t timeout_ns);

/**
 * @brief A connected non-blocking TCP socket (O_CLOEXEC) to @p host:@p port.
 * @param deadline_ns from kc_net_deadline(); 0: no bound but @p ctx.
 * @return the fd, or -ETIMEDOUT, -ECANCELED, -EHOSTUNREACH (the name does
 *         not resolve), or connect()'s -errno (-ECONNREFUSED...).
 */
int kc_net_dial(const char *host, int port, int64_t deadline_ns, struct kc_cancel *ctx);

/**
 * @brief Go's words for a failed dial of "tcp" @p hostport:
 * "dial tcp <hostport>: connect: connection refused", "... i/o timeout".
 * NULL on ENOMEM.
 */
char *kc_net_dial_error(const char *hostport, int r);

/** One GET. */
struct kc_http_request {
        const char *host; /* dialled; Host is "<host>:<port>" unless a header sets it */
        int port;
        bool tls;         /* HTTPS: TLS without certificate verification (InsecureSkipVerify) */
        const char *path; /* sent as is, with a leading '/' added when missing */
        /*
         * Sent in order. Host: the first one replaces the default. Accept:
         * "* / *" (no spaces) unless set; set to "" it is not sent.
         * User-Agent: @p user_agent unless set.
         */
        const struct kc_api_http_header *headers;
        size_t n_headers;
        const char *user_agent;
};

/** What came back. */
struct kc_http_response {
        int status;     /* 100..999 */
        char *location; /* the Location header, or NULL */
        char *body;     /* the first max_body bytes of the body (decoded), NUL-terminated */
        size_t n_body;
        bool truncated; /* the body was longer */
};
void kc_http_response_done(struct kc_http_response *r);

/**
 * @brief Sends @p req on a new connection (Connection: close) and reads the
 * response: the status line, the headers (1xx interim responses skipped),
 * and at most @p max_body bytes of the body (Content-Length, chunked, or up
 * to EOF). The connection is closed afterwards either way.
 * @param ret_err on failure, what went wrong in Go's net/http words
 *        ("dial tcp ...: connect: connection refused", "context deadline
 *        exceeded (Client.Timeout exceeded while awaiting headers)",
 *        "malformed HTTP response ..."), malloc'd; NULL on ENOMEM.
 * @return 0 with *@p ret filled, or -errno (*@p ret untouched).
 */
int kc_http_get(const struct kc_http_request *req, int64_t deadline_ns, struct kc_cancel *ctx,
                size_t max_body, struct kc_http_response *ret, char **ret_err);
