/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The httpGet probe (upstream pkg/probe/http: request.go builds the request,
 * http.go's DoHTTPProbe sends it and reads the answer): 200-299 succeeds,
 * 300-399 (a redirect not followed) is a warning, anything else fails.
 * Redirects are followed only to the same host name, as upstream's
 * RedirectChecker(followNonLocalRedirects=false); at most 10 requests.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/cleanup.h"
#include "core/format.h"
#include "prober_internal.h"
#include "runtime/api_pod.h"
#include "runtime/api_spec.h"
#include "runtime/http_client.h"

/* One request's target. */
struct target {
        bool https;
        char *host; /* without brackets */
        int port;
        char *path; /* "/..." with its query */
};

static void target_done(struct target *t)
{
        free(t->host);
        free(t->path);
        *t = (struct target){ 0 };
}

static char *url_of(const struct target *t)
{
        return kc_strdup_printf(strchr(t->host, ':') ? "%s://[%s]:%d%s%s" : "%s://%s:%d%s%s",
                                t->https ? "https" : "http", t->host, t->port,
                                *t->path == '/' ? "" : "/", t->path);
}

/* The authority "host[:port]" or "[v6][:port]" of [@p a, @p end) into @p t. */
static int parse_authority(const char *a, const char *end, struct target *t)
{
        const char *colon, *host_end;

        if (*a == '[') {
                host_end = memchr(a, ']', (size_t)(end - a));
                if (!host_end)
                        return -EINVAL;
                t->host = strndup(a + 1, (size_t)(host_end - a - 1));
                colon = host_end + 1 < end && host_end[1] == ':' ? host_end + 1 : NULL;
        } else {
                colon = memchr(a, ':', (size_t)(end - a));
                host_end = colon ? colon : end;
                t->host = strndup(a, (size_t)(host_end - a));
        }
        if (!t->host)
                return -ENOMEM;
        t->port = t->https ? 443 : 80;
        if (colon && colon + 1 < end) {
                char *e;
                long p = strtol(colon + 1, &e, 10);

                if (e != end || p <= 0 || p > 65535)
                        return -EINVAL;
                t->port = (int)p;
        }
        return 0;
}

/*
 * Resolves Location @p loc against @p cur into @p next (RFC 3986 for the
 * shapes servers send: absolute, scheme-relative, absolute path, relative
 * path, query only). *@p relative tells whether @p loc named no host.
 */
static int resolve_location(const struct target *cur, const char *loc, struct target *next,
                            bool *relative)
{
        size_t n = strcspn(loc, "#");
        _cleanup_free_ char *l = strndup(loc, n);
        const char *rest;

        if (!l)
                return -ENOMEM;
        *next = (struct target){ .https = cur->https };
        *relative = false;
        if (strncasecmp(l, "http://", 7) == 0 || strncasecmp(l, "https://", 8) == 0 ||
            strncmp(l, "//", 2) == 0) {
                const char *a = strstr(l, "//") + 2, *end = a + strcspn(a, "/?");

                if (l[0] != '/')
                        next->https = strncasecmp(l, "https:", 6) == 0;
                if (parse_authority(a, end, next) < 0)
                        return -EINVAL;
                next->path = kc_strdup_printf("%s%s", *end == '/' ? "" : "/", end);
                return next->path ? 0 : -ENOMEM;
        }
        *relative = true;
        next->host = strdup(cur->host);
        next->port = cur->port;
        if (l[0] == '/') {
                next->path = strdup(l);
        } else if (l[0] == '?' || l[0] == '\0') {
                size_t q = strcspn(cur->path, "?");

                next->path = kc_strdup_printf("%.*s%s", (int)q, cur->path, l);
        } else {
                size_t q = strcspn(cur->path, "?");

                while (q > 0 && cur->path[q - 1] != '/')
                        q--;
                next->path = kc_strdup_printf("%.*s%s", (int)q, cur->path, l);
        }
        rest = next->path;
        return next->host && rest ? 0 : -ENOMEM;
}

static bool is_redirect(int status)
{
        return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

/* The handler's headers without Host (an absolute redirect drops the caller's Host). */
static struct kc_api_http_header *without_host(const struct kc_api_handler *h, size_t *n)
{
        struct kc_api_http_header *v = calloc(h->n_headers + 1, sizeof(*v));

        *n = 0;
        if (!v)
                return NULL;
        for (size_t i = 0; i < h->n_headers; i++)
                if (!h->headers[i].name || strcasecmp(h->headers[i].name, "Host") != 0)
                        v[(*n)++] = h->headers[i];
        return v;
}

/* client.Do with the redirect checker: the last response, or an error in *@p ret_err. */
static int do_get(const struct kc_api_probe *pr, struct target *t, struct kc_http_response *ret,
                  char **ret_err)
{
        const struct kc_api_handler *h = &pr->handler;
        int64_t deadline = kc_net_deadline(pr->timeout_seconds * KC_NSEC_PER_SEC);
        _cleanup_free_ char *first_host = strdup(t->host), *err = NULL, *url = NULL;
        _cleanup_free_ struct kc_api_http_header *no_host = NULL;
        size_t n_no_host = 0;
        bool keep_host = true;
        int r;

        if (!first_host)
                return -ENOMEM;
        for (int via = 1;; via++) {
                struct kc_http_request req = {
                        .host = t->host,
                        .port = t->port,
                        .path = t->path,
                        .headers = keep_host ? h->headers : no_host,
                        .n_headers = keep_host ? h->n_headers : n_no_host,
                        .tls = t->https,
                        .user_agent = KC_PROBE_USER_AGENT,
                };
                struct kc_http_response resp = { 0 };
                struct target next = { 0 };
                bool relative;

                free(url);
                url = url_of(t);
                if (!url)
                        return -ENOMEM;
                r = kc_http_get(&req, deadline, NULL, KC_PROBE_MAX_OUTPUT, &resp, &err);
                if (r < 0) {
                        *ret_err = err ? kc_strdup_printf("Get \"%s\": %s", url, err) : NULL;
                        return r == -ENOMEM ? r : -EIO;
                }
                if (!is_redirect(resp.status) || !resp.location ||
                    resolve_location(t, resp.location, &next, &relative) < 0 ||
                    strcasecmp(next.host, first_host) != 0) {
                        /* Not a redirect to follow: ErrUseLastResponse. */
                        target_done(&next);
                        *ret = resp;
                        return 0;
                }
                kc_http_response_done(&resp);
                if (via >= KC_PROBE_MAX_REDIRECTS) {
                        target_done(&next);
                        *ret_err = kc_strdup_printf("Get \"%s\": stopped after 10 redirects", url);
                        return -ELOOP;
                }
                if (!relative && keep_host && !no_host) {
                        keep_host = false;
                        no_host = without_host(h, &n_no_host);
                        if (!no_host) {
                                target_done(&next);
                                return -ENOMEM;
                        }
                }
                target_done(t);
                *t = next;
        }
}

int kc__probe_http(const struct kc_api_probe *pr, const struct kc_api_container *c,
                   const char *pod_ip, struct kc__probe_attempt *a)
{
        const struct kc_api_handler *h = &pr->handler;
        struct kc_http_response resp = { 0 };
        struct target t = { .https = h->https };
        const char *host = h->host && *h->host ? h->host : pod_ip;
        _cleanup_free_ char *err = NULL;
        int port, r;

        port = kc__probe_resolve_port(c, &h->port, &a->err);
        if (port < 0) {
                a->result = KC_PROBE_UNKNOWN;
                return a->err ? 0 : -ENOMEM;
        }
        t.host = strdup(host ? host : "");
        t.port = port;
        t.path = kc_strdup_printf("%s%s", *(h->path ? h->path : "") == '/' ? "" : "/",
                                  h->path ? h->path : "");
        if (!t.host || !t.path) {
                target_done(&t);
                return -ENOMEM;
        }
        r = do_get(pr, &t, &resp, &err);
        target_done(&t);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                /* "Convert errors into failures to catch timeouts." */
                a->result = KC_PROBE_FAILURE;
                a->output = TAKE_PTR(err);
                return a->output ? 0 : -ENOMEM;
        }
        if (resp.status >= 200 && resp.status < 300) {
                a->result = KC_PROBE_SUCCESS;
                a->output = TAKE_PTR(resp.body);
        } else if (resp.status >= 300 && resp.status < 400) {
                a->result = KC_PROBE_WARNING;
                a->output = kc_strdup_printf("Probe terminated redirects, Response body: %s",
                                             resp.body);
        } else {
                /* The body stays out of the message (upstream issue 99425). */
                a->result = KC_PROBE_FAILURE;
                a->output = kc_strdup_printf("HTTP probe failed with statuscode: %d", resp.status);
        }
        kc_http_response_done(&resp);
        return a->output ? 0 : -ENOMEM;
}
