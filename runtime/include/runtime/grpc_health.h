/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file runtime/grpc_health.h
 * @brief The standard gRPC health check (grpc.health.v1.Health/Check) over
 * the CRI client's own gRPC transport, on TCP: what a grpc probe sends.
 */
#pragma once

#include <stdint.h>

/**
 * @brief Asks @p host:@p port (h2c, no TLS) whether @p service ("" for the
 * server as a whole) is serving, within @p timeout_ns. One connection per
 * call, closed afterwards. Blocking; any thread.
 * @param user_agent sent as user-agent; may be NULL.
 * @param ret_serving 1 when the answer is SERVING, else 0.
 * @param ret_msg unless SERVING, why, in upstream pkg/probe/grpc's words:
 *        "error: failed to connect service at \"h:p\": ...", "error: this
 *        server does not implement the grpc health protocol
 *        (grpc.health.v1.Health): ...", "timeout: health rpc did not
 *        complete within 1s", "error: health rpc probe failed: rpc error:
 *        code = ... desc = ...", "service unhealthy (responded with
 *        \"NOT_SERVING\")"; malloc'd, NULL when SERVING.
 * @return 0 with both set, or -EINVAL / -ENOMEM with neither.
 */
int kc_grpc_health_check(const char *host, int port, const char *service, const char *user_agent,
                         int64_t timeout_ns, int *ret_serving, char **ret_msg);
