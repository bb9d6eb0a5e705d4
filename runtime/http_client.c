/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A TCP dial with a deadline and one HTTP/1.1 GET (runtime/http_client.h):
 * what the probes' httpGet and tcpSocket handlers and the lifecycle hooks'
 * httpGet share.
 */
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "core/cancel.h"
#include "core/cleanup.h"
#include "core/format.h"
#include "runtime/api_spec.h"
#include "runtime/http_client.h"

/* The status line and headers of one response may not exceed this. */
#define HTTP_MAX_HEAD (64 * 1024)

static int64_t mono_now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * KC_NSEC_PER_SEC + ts.tv_nsec;
}

int64_t kc_net_deadline(int64_t timeout_ns)
{
        int64_t now = mono_now();

        if (timeout_ns <= 0)
                return 0;
        return timeout_ns > INT64_MAX - now ? INT64_MAX : now + timeout_ns;
}

/* Milliseconds to poll: what is left until @p deadline, at most 1 s; 0 when it passed. */
static int poll_slice(int64_t deadline)
{
        int64_t left;

        if (deadline == 0)
                return 1000;
        left = deadline - mono_now();
        if (left <= 0)
                return 0;
        return left > KC_NSEC_PER_SEC ? 1000
                                      : (int)((left + KC_NSEC_PER_MSEC - 1) / KC_NSEC_PER_MSEC);
}

/*
 * Waits for @p events on @p fd: 0, -ETIMEDOUT, -ECANCELED or poll's -errno;
 * the events that came in *@p ret_revents when it is not NULL.
 */
static int wait_fd_revents(int fd, short events, int64_t deadline, struct kc_cancel *ctx,
                           short *ret_revents)
{
        struct pollfd p = { .fd = fd, .events = events };
        int ms, n;

        for (;;) {
                if (ctx && kc_cancel_is_set(ctx))
                        return -ECANCELED;
                ms = poll_slice(deadline);
                if (ms == 0)
                        return -ETIMEDOUT;
                n = poll(&p, 1, ms);
                if (n > 0) {
                        if (ret_revents)
                                *ret_revents = p.revents;
                        return 0;
                }
                if (n < 0 && errno != EINTR)
                        return -errno;
        }
}

static int wait_fd(int fd, short events, int64_t deadline, struct kc_cancel *ctx)
{
        return wait_fd_revents(fd, events, deadline, ctx, NULL);
}

/* One connection: plain TCP, or TLS over it. */
struct conn {
        int fd;
        SSL_CTX *ctx;
        SSL *ssl;
};

static void conn_close(struct conn *c)
{
        if (c->ssl)
                SSL_free(c->ssl);
        if (c->ctx)
                SSL_CTX_free(c->ctx);
        if (c->fd >= 0)
                close(c->fd);
        *c = (struct conn){ .fd = -1 };
}

/* Waits as OpenSSL asks after @p n from SSL_*(): 0 to retry, or -errno. */
static int tls_wait(struct conn *c, int n, int64_t deadline, struct kc_cancel *ctx)
{
        switch (SSL_get_error(c->ssl, n)) {
        case SSL_ERROR_WANT_READ:
                return wait_fd(c->fd, POLLIN, deadline, ctx);
        case SSL_ERROR_WANT_WRITE:
                return wait_fd(c->fd, POLLOUT, deadline, ctx);
        case SSL_ERROR_ZERO_RETURN:
                return -ECONNRESET;
        default:
                ERR_clear_error();
                return -ECONNABORTED;
        }
}

/*
 * The TLS handshake on c->fd: no certificate verification (upstream's
 * probes and hooks set InsecureSkipVerify); SNI unless @p host is an address.
 */
static int tls_handshake(struct conn *c, const char *host, int64_t deadline, struct kc_cancel *ctx)
{
        unsigned char addr[sizeof(struct in6_addr)];
        int n, r;

        c->ctx = SSL_CTX_new(TLS_client_method());
        c->ssl = c->ctx ? SSL_new(c->ctx) : NULL;
        if (!c->ssl || !SSL_set_fd(c->ssl, c->fd))
                return -ENOMEM;
        SSL_set_verify(c->ssl, SSL_VERIFY_NONE, NULL);
        if (inet_pton(AF_INET, host, addr) != 1 && inet_pton(AF_INET6, host, addr) != 1)
                (void)SSL_set_tlsext_host_name(c->ssl, host);
        while ((n = SSL_connect(c->ssl)) != 1)
                if ((r = tls_wait(c, n, deadline, ctx)) < 0)
                        return r == -ECONNRESET ? -ECONNABORTED : r;
        return 0;
}

int kc_net_dial(const char *host, int port, int64_t deadline_ns, struct kc_cancel *ctx)
{
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV }, *ai;
        _cleanup_close_ int fd = -1;
        char ps[16];
        int r, err = 0;
        socklen_t len = sizeof(err);

        if (!host || !*host || port <= 0 || port > 65535)
                return -EINVAL;
        snprintf(ps, sizeof(ps), "%d", port);
        if (getaddrinfo(host, ps, &hints, &ai) != 0)
                return -EHOSTUNREACH;
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        r = fd < 0 ? -errno : KC_NERRNO(connect(fd, ai->ai_addr, ai->ai_addrlen));
        freeaddrinfo(ai);
        if (r == -EINPROGRESS) {
                short rev = 0;

                /*
                 * Writable with no error or hang-up: connected, without asking
                 * SO_ERROR (a syscall per probe); otherwise SO_ERROR says why.
                 */
                r = wait_fd_revents(fd, POLLOUT, deadline_ns, ctx, &rev);
                if (r == 0 && (rev & (POLLERR | POLLHUP))) {
                        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
                                r = -errno;
                        else
                                r = -err;
                }
        }
        if (r < 0)
                return r;
        return TAKE_FD(fd);
}

char *kc_net_dial_error(const char *hostport, int r)
{
        if (r == -ETIMEDOUT)
                return kc_strdup_printf("dial tcp %s: i/o timeout", hostport);
        if (r == -EHOSTUNREACH)
                return kc_strdup_printf("dial tcp %s: no such host", hostport);
        if (r == -ECANCELED)
                return kc_strdup_printf("dial tcp %s: operation was canceled", hostport);
        /* Go's syscall errors are strerror()'s, lower-cased. */
        char e[128];

        snprintf(e, sizeof(e), "%s", strerror(-r));
        e[0] = (char)tolower((unsigned char)e[0]);
        return kc_strdup_printf("dial tcp %s: connect: %s", hostport, e);
}

static const char *s_or_empty(const char *s)
{
        return s ? s : "";
}

/* The first header named @p name, or NULL. */
static const struct kc_api_http_header *header(const struct kc_http_request *req, const char *name)
{
        for (size_t i = 0; i < req->n_headers; i++)
                if (strcasecmp(s_or_empty(req->headers[i].name), name) == 0)
                        return &req->headers[i];
        return NULL;
}

/* newProbeRequest's headers on the wire. NULL on ENOMEM. */
static char *format_request(const struct kc_http_request *req)
{
        const struct kc_api_http_header *host = header(req, "Host"),
                                        *accept = header(req, "Accept");
        const char *path = s_or_empty(req->path);
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        if (!f)
                return NULL;
        fprintf(f, "GET %s%s HTTP/1.1\r\n", *path == '/' ? "" : "/", path);
        if (host)
                fprintf(f, "Host: %s\r\n", s_or_empty(host->value));
        else if (strchr(req->host, ':'))
                fprintf(f, "Host: [%s]:%d\r\n", req->host, req->port);
        else
                fprintf(f, "Host: %s:%d\r\n", req->host, req->port);
        if (!header(req, "User-Agent") && req->user_agent)
                fprintf(f, "User-Agent: %s\r\n", req->user_agent);
        if (!accept)
                fprintf(f, "Accept: */*\r\n");
        for (size_t i = 0; i < req->n_headers; i++) {
                const struct kc_api_http_header *h = &req->headers[i];

                if (strcasecmp(s_or_empty(h->name), "Host") == 0 ||
                    (strcasecmp(s_or_empty(h->name), "Accept") == 0 && !*s_or_empty(h->value)))
                        continue;
                fprintf(f, "%s: %s\r\n", s_or_empty(h->name), s_or_empty(h->value));
        }
        fprintf(f, "Connection: close\r\n\r\n");
        if (fclose(f) != 0)
                return NULL;
        return TAKE_PTR(buf);
}

static int send_all(struct conn *c, const char *data, int64_t deadline, struct kc_cancel *ctx)
{
        size_t off = 0, len = strlen(data);
        ssize_t n;
        int r;

        while (c->ssl && off < len) {
                n = SSL_write(c->ssl, data + off, (int)(len - off));
                if (n > 0)
                        off += (size_t)n;
                else if ((r = tls_wait(c, (int)n, deadline, ctx)) < 0)
                        return r;
        }
        while (off < len) {
                n = send(c->fd, data + off, len - off, MSG_NOSIGNAL);
                if (n < 0 && errno != EAGAIN && errno != EINTR)
                        return -errno;
                if (n > 0)
                        off += (size_t)n;
                else if ((r = wait_fd(c->fd, POLLOUT, deadline, ctx)) < 0)
                        return r;
        }
        return 0;
}

/* The response as read so far. */
struct rbuf {
        char *data;
        size_t len, cap;
        bool eof;
};

/* Reads more into @p b (at least one byte, or EOF). */
static int read_more(struct conn *c, struct rbuf *b, int64_t deadline, struct kc_cancel *ctx)
{
        ssize_t n;
        int r;

        if (b->cap - b->len < 4096) {
                size_t cap = b->cap ? b->cap * 2 : 8192;
                char *d = realloc(b->data, cap);

                if (!d)
                        return -ENOMEM;
                b->data = d;
                b->cap = cap;
        }
        for (;;) {
                if (c->ssl) {
                        n = SSL_read(c->ssl, b->data + b->len, (int)(b->cap - b->len - 1));
                        if (n <= 0) {
                                r = tls_wait(c, (int)n, deadline, ctx);
                                /* A close_notify, or a peer that just hangs up, ends the body. */
                                if (r == -ECONNRESET || (r == -ECONNABORTED && n == 0))
                                        n = 0;
                                else if (r < 0)
                                        return r;
                                else
                                        continue;
                        }
                } else {
                        n = recv(c->fd, b->data + b->len, b->cap - b->len - 1, 0);
                }
                if (n > 0) {
                        b->len += (size_t)n;
                        b->data[b->len] = '\0';
                        return 0;
                }
                if (n == 0) {
                        b->eof = true;
                        return 0;
                }
                if (errno != EAGAIN && errno != EINTR)
                        return -errno;
                if ((r = wait_fd(c->fd, POLLIN, deadline, ctx)) < 0)
                        return r;
        }
}

/* The value of header @p name in the head [@p head, @p end), or NULL. */
static char *head_value(const char *head, const char *end, const char *name)
{
        size_t nl = strlen(name);
        const char *p = strstr(head, "\r\n");

        while (p && p + 2 < end) {
                const char *line = p + 2, *eol = strstr(line, "\r\n");

                if (!eol || eol > end)
                        break;
                if ((size_t)(eol - line) > nl && strncasecmp(line, name, nl) == 0 &&
                    line[nl] == ':') {
                        const char *v = line + nl + 1;
                        const char *ve = eol;

                        while (v < ve && (*v == ' ' || *v == '\t'))
                                v++;
                        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                                ve--;
                        return strndup(v, (size_t)(ve - v));
                }
                p = eol;
        }
        return NULL;
}

/*
 * Decodes the chunked body in [@p p, @p end) into @p out (at most @p cap
 * bytes kept, *@p n_out counting every byte seen). true when the last chunk
 * was reached; -EPROTO in *@p r for a malformed size line.
 */
static bool dechunk(const char *p, const char *end, char *out, size_t cap, size_t *n_out, int *r)
{
        *n_out = 0;
        *r = 0;
        while (p < end) {
                const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
                char *e;
                unsigned long long size;

                if (!eol)
                        return false;
                size = strtoull(p, &e, 16);
                if (e == p || (*e != '\r' && *e != ';' && *e != ' ')) {
                        *r = -EPROTO;
                        return false;
                }
                if (size == 0)
                        return true;
                p = eol + 2;
                for (unsigned long long i = 0; i < size && p < end; i++, p++, (*n_out)++)
                        if (*n_out < cap)
                                out[*n_out] = *p;
                if (p + 2 > end)
                        return false;
                p += 2;
        }
        return false;
}

/* Reads the head of a final (non-1xx) response: returns its length, with *@p status. */
static int read_head(struct conn *c, struct rbuf *b, int64_t deadline, struct kc_cancel *ctx,
                     int *status, size_t *head_len)
{
        for (;;) {
                char *end = b->data ? strstr(b->data, "\r\n\r\n") : NULL;
                int r, code;

                if (!end) {
                        if (b->eof || b->len > HTTP_MAX_HEAD)
                                return -EPROTO;
                        if ((r = read_more(c, b, deadline, ctx)) < 0)
                                return r;
                        continue;
                }
                if (strncmp(b->data, "HTTP/1.", 7) != 0 || b->data[8] != ' ' ||
                    sscanf(b->data + 9, "%3d", &code) != 1 || code < 100)
                        return -EPROTO;
                if (code >= 200 || code == 101) {
                        *status = code;
                        *head_len = (size_t)(end + 4 - b->data);
                        return 0;
                }
                /* An interim response: drop it. */
                memmove(b->data, end + 4, b->len - (size_t)(end + 4 - b->data) + 1);
                b->len -= (size_t)(end + 4 - b->data);
        }
}

/* Reads the body after a head of @p head_len bytes into @p ret. */
static int read_body(struct conn *c, struct rbuf *b, size_t head_len, int64_t deadline,
                     struct kc_cancel *ctx, size_t max_body, struct kc_http_response *ret)
{
        _cleanup_free_ char *te = head_value(b->data, b->data + head_len, "Transfer-Encoding"),
                            *cl = head_value(b->data, b->data + head_len, "Content-Length");
        bool chunked = te && strcasestr(te, "chunked");
        long long want = cl && !chunked ? strtoll(cl, NULL, 10) : -1;
        size_t n = 0;
        int r = 0;

        if (ret->status == 204 || ret->status == 304 || ret->status == 101) {
                chunked = false;
                want = 0;
        }

        ret->body = malloc(max_body + 1);
        if (!ret->body)
                return -ENOMEM;
        for (;;) {
                size_t raw = b->len - head_len;
                bool done;

                if (chunked) {
                        done = dechunk(b->data + head_len, b->data + b->len, ret->body, max_body,
                                       &n, &r);
                        if (r < 0)
                                return r;
                } else {
                        n = raw;
                        done = want >= 0 && (long long)raw >= want;
                        if (want >= 0 && (long long)n > want)
                                n = (size_t)want;
                }
                if (done || b->eof || n > max_body)
                        break;
                if ((r = read_more(c, b, deadline, ctx)) < 0)
                        return r;
        }
        ret->truncated = n > max_body;
        ret->n_body = n > max_body ? max_body : n;
        if (!chunked)
                memcpy(ret->body, b->data + head_len, ret->n_body);
        ret->body[ret->n_body] = '\0';
        return 0;
}

void kc_http_response_done(struct kc_http_response *r)
{
        if (!r)
                return;
        free(r->location);
        free(r->body);
        *r = (struct kc_http_response){ 0 };
}

static char *http_error(int r, bool dialled, const struct kc_http_request *req)
{
        _cleanup_free_ char *hp = kc_strdup_printf(strchr(req->host, ':') ? "[%s]:%d" : "%s:%d",
                                                   req->host, req->port);

        if (!hp)
                return NULL;
        if (!dialled)
                return kc_net_dial_error(hp, r);
        if (r == -ETIMEDOUT)
                return strdup("context deadline exceeded (Client.Timeout exceeded while awaiting "
                              "headers)");
        if (r == -EPROTO)
                return strdup("net/http: HTTP/1.x transport connection broken: malformed HTTP "
                              "response");
        if (r == -ECANCELED)
                return strdup("context canceled");
        if (r == -ECONNABORTED)
                return strdup("remote error: tls: handshake failure");
        return kc_strdup_printf("read tcp %s: %s", hp, strerror(-r));
}

int kc_http_get(const struct kc_http_request *req, int64_t deadline_ns, struct kc_cancel *ctx,
                size_t max_body, struct kc_http_response *ret, char **ret_err)
{
        _cleanup_free_ char *wire = NULL;
        struct conn c = { .fd = -1 };
        struct kc_http_response resp = { 0 };
        struct rbuf b = { 0 };
        size_t head_len = 0;
        int r;

        if (!req || !req->host || !ret || !ret_err)
                return -EINVAL;
        *ret_err = NULL;
        wire = format_request(req);
        if (!wire)
                return -ENOMEM;
        c.fd = kc_net_dial(req->host, req->port, deadline_ns, ctx);
        if (c.fd < 0) {
                *ret_err = http_error(c.fd, false, req);
                return c.fd;
        }
        r = req->tls ? tls_handshake(&c, req->host, deadline_ns, ctx) : 0;
        if (r == 0)
                r = send_all(&c, wire, deadline_ns, ctx);
        if (r == 0)
                r = read_head(&c, &b, deadline_ns, ctx, &resp.status, &head_len);
        if (r == 0) {
                resp.location = head_value(b.data, b.data + head_len, "Location");
                r = read_body(&c, &b, head_len, deadline_ns, ctx, max_body, &resp);
        }
        conn_close(&c);
        free(b.data);
        if (r < 0) {
                kc_http_response_done(&resp);
                *ret_err = http_error(r, true, req);
                return r;
        }
        *ret = resp;
        return 0;
}
