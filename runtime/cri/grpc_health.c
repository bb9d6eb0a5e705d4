/* SPDX-License-Identifier: Apache-2.0 */
/*
 * grpc.health.v1.Health/Check (runtime/grpc_health.h). The two messages are
 * coded by hand: HealthCheckRequest { string service = 1; } and
 * HealthCheckResponse { ServingStatus status = 1; }.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/cleanup.h"
#include "core/format.h"
#include "grpc.h"
#include "runtime/error.h"
#include "runtime/grpc_health.h"

#define HEALTH_CHECK_PATH "/grpc.health.v1.Health/Check"

/* grpc-go's codes.Code String(). */
static const char *const code_names[] = {
        "OK",
        "Canceled",
        "Unknown",
        "InvalidArgument",
        "DeadlineExceeded",
        "NotFound",
        "AlreadyExists",
        "PermissionDenied",
        "ResourceExhausted",
        "FailedPrecondition",
        "Aborted",
        "OutOfRange",
        "Unimplemented",
        "Internal",
        "Unavailable",
        "DataLoss",
        "Unauthenticated",
};

/* HealthCheckResponse_ServingStatus names. */
static const char *const status_names[] = { "UNKNOWN", "SERVING", "NOT_SERVING",
                                            "SERVICE_UNKNOWN" };

static size_t put_varint(uint8_t *o, uint64_t v)
{
        size_t n = 0;

        do {
                o[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
                v >>= 7;
        } while (v);
        return n;
}

static int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
        *v = 0;
        for (int shift = 0; *p < end && shift < 64; shift += 7) {
                uint8_t b = *(*p)++;

                *v |= (uint64_t)(b & 0x7f) << shift;
                if (!(b & 0x80))
                        return 0;
        }
        return -EBADMSG;
}

/* HealthCheckResponse.status; -EBADMSG for bytes that are not one. */
static int decode_status(const uint8_t *p, size_t len, int64_t *ret)
{
        const uint8_t *end = p + len;
        uint64_t key, v;
        int64_t status = 0;

        while (p < end) {
                if (get_varint(&p, end, &key) < 0)
                        return -EBADMSG;
                switch (key & 7) {
                case 0:
                        if (get_varint(&p, end, &v) < 0)
                                return -EBADMSG;
                        if (key >> 3 == 1)
                                status = (int64_t)(int32_t)v;
                        break;
                case 1:
                        if (end - p < 8)
                                return -EBADMSG;
                        p += 8;
                        break;
                case 2:
                        if (get_varint(&p, end, &v) < 0 || v > (uint64_t)(end - p))
                                return -EBADMSG;
                        p += v;
                        break;
                case 5:
                        if (end - p < 4)
                                return -EBADMSG;
                        p += 4;
                        break;
                default:
                        return -EBADMSG;
                }
        }
        *ret = status;
        return 0;
}

/* Go's %v of a time.Duration of whole seconds or less ("1s", "500ms"). */
static char *go_duration(int64_t ns)
{
        if (ns % KC_NSEC_PER_SEC == 0)
                return kc_strdup_printf("%" PRId64 "s", ns / KC_NSEC_PER_SEC);
        return kc_strdup_printf("%" PRId64 "ms", ns / KC_NSEC_PER_MSEC);
}

/* The failure message for a call that ended with @p e. */
static char *call_error(const struct kc_runtime_error *e, int64_t timeout_ns)
{
        _cleanup_free_ char *d = NULL;
        const char *name =
                (unsigned)e->code < KC_ELEMENTSOF(code_names) ? code_names[e->code] : "Unknown";

        switch (e->code) {
        case KC_RUNTIME_UNIMPLEMENTED:
                return kc_strdup_printf("error: this server does not implement the grpc health "
                                        "protocol (grpc.health.v1.Health): %s",
                                        e->message);
        case KC_RUNTIME_DEADLINE_EXCEEDED:
                d = go_duration(timeout_ns);
                return d ? kc_strdup_printf("timeout: health rpc did not complete within %s", d)
                         : NULL;
        default:
                return kc_strdup_printf("error: health rpc probe failed: rpc error: code = %s "
                                        "desc = %s",
                                        name, e->message);
        }
}

int kc_grpc_health_check(const char *host, int port, const char *service, const char *user_agent,
                         int64_t timeout_ns, int *ret_serving, char **ret_msg)
{
        struct kc_grpc_client *c = NULL;
        struct kc_runtime_error e = { 0 };
        _cleanup_free_ uint8_t *req = NULL, *resp = NULL;
        _cleanup_free_ char *hostport = NULL;
        size_t n_service, req_len = 0, resp_len = 0;
        int64_t status = 0;
        char *msg = NULL;
        int r;

        if (!host || !service || !ret_serving || !ret_msg || timeout_ns <= 0)
                return -EINVAL;
        n_service = strlen(service);
        req = malloc(n_service + 11);
        hostport = kc_strdup_printf(strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
        if (!req || !hostport)
                return -ENOMEM;
        if (n_service) {
                req[req_len++] = 0x0a; /* field 1, length-delimited */
                req_len += put_varint(req + req_len, n_service);
                memcpy(req + req_len, service, n_service);
                req_len += n_service;
        }
        r = kc_grpc_client_new_tcp(host, port, user_agent, &c);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                msg = kc_strdup_printf("error: failed to connect service at \"%s\": %s", hostport,
                                       r == -EHOSTUNREACH ? "no such host" : strerror(-r));
        } else {
                r = kc_grpc_unary(c, HEALTH_CHECK_PATH, req, req_len, timeout_ns, NULL, &resp,
                                  &resp_len, &e);
                c = kc_grpc_client_free(c);
                if (r == 0 && decode_status(resp, resp_len, &status) < 0)
                        msg = strdup("error: health rpc probe failed: rpc error: code = Internal "
                                     "desc = grpc: failed to unmarshal the received message");
                else if (r == 0 && status != 1)
                        msg = kc_strdup_printf("service unhealthy (responded with \"%s\")",
                                               status >= 0 && status < 4 ? status_names[status]
                                                                         : "UNKNOWN");
                else if (r == -ECONNREFUSED && e.code == KC_RUNTIME_UNAVAILABLE)
                        msg = kc_strdup_printf("error: failed to connect service at \"%s\": %s",
                                               hostport, e.message);
                else if (r < 0)
                        msg = call_error(&e, timeout_ns);
                if (r == 0 && status == 1) {
                        *ret_serving = 1;
                        *ret_msg = NULL;
                        return 0;
                }
        }
        if (!msg)
                return -ENOMEM;
        *ret_serving = 0;
        *ret_msg = msg;
        return 0;
}
