/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file runtime/cri.h
 * @brief The CRI client: the runtime service over gRPC (runtime.v1).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"
#include "runtime/runtime_service.h"

struct kc_runtime_error;

/** kubelet's --runtime-request-timeout default. */
#define KC_CRI_DEFAULT_REQUEST_TIMEOUT_NS (2 * KC_NSEC_PER_MIN)

struct kc_cri;

/**
 * @brief A CRI client for @p endpoint ("unix:///run/containerd/containerd.sock";
 * a bare absolute path is accepted too). Every call gets the deadline
 * @p request_timeout_ns (> 0); StopContainer gets its timeout plus that.
 * Does not connect yet. *ret unchanged on failure.
 * @return 0, -EINVAL (not a unix endpoint), -ENAMETOOLONG, -ENOMEM.
 */
int kc_cri_new(const char *endpoint, int64_t request_timeout_ns, struct kc_cri **ret);
/** Ends every call in flight (CANCELLED) and frees the client. NULL-safe; returns NULL. */
struct kc_cri *kc_cri_free(struct kc_cri *c);
KC_DEFINE_CLEANUP_FUNC(struct kc_cri, kc_cri_free)

/**
 * Ends every call in flight (CANCELLED) and makes later calls fail at once,
 * before kc_cri_free(): a daemon stopping while the runtime hangs does not
 * wait for its threads' call deadlines. Idempotent; any thread.
 */
void kc_cri_shutdown(struct kc_cri *c);

/** The runtime-service face. Valid while the client lives. Any thread. */
struct kc_runtime_service kc_cri_service(struct kc_cri *c);

/** The socket path the client connects to (from the endpoint). Valid while the client lives. */
const char *kc_cri_socket_path(const struct kc_cri *c);

/** CRI ContainerEventType. */
enum kc_container_event_type {
        KC_CONTAINER_EVENT_CREATED,
        KC_CONTAINER_EVENT_STARTED,
        KC_CONTAINER_EVENT_STOPPED,
        KC_CONTAINER_EVENT_DELETED,
        _KC_CONTAINER_EVENT_TYPE_MAX,
        _KC_CONTAINER_EVENT_TYPE_INVALID = -EINVAL,
};

/** "CONTAINER_CREATED_EVENT", ... (CRI names); NULL when out of range. */
const char *kc_container_event_type_to_string(enum kc_container_event_type t);

/**
 * One GetContainerEvents message (CRI ContainerEventResponse). Every pointer
 * is valid during the on_event call only.
 */
struct kc_container_event {
        const char *container_id;
        enum kc_container_event_type type;
        int64_t created_at; /* ns since the epoch */
        /* From the event's sandbox status; all NULL when it carries none. */
        const char *pod_sandbox_id;
        const char *pod_uid;
        const char *pod_name;
        const char *pod_namespace;
        const struct kc_pod_sandbox *sandbox; /* the whole sandbox status, or NULL */
        /* The statuses of the pod's containers (pod_sandbox_id NULL in each). */
        const struct kc_cri_container *containers;
        size_t n_containers;
};

struct kc_cri_events;

/**
 * @brief Opens the GetContainerEvents stream (a server-streaming call, no
 * deadline). @p on_event runs for each event and @p on_close exactly once
 * when the stream ends, both on the client's I/O thread (they must not
 * block nor call kc_cri_events_close()):
 * - the server ended it: 0 after grpc-status OK, else its status (containerd
 *   1.6: UNIMPLEMENTED, -EOPNOTSUPP, at once);
 * - the connection dropped: UNAVAILABLE (-ECONNREFUSED);
 * - a message did not decode: INTERNAL "failed to decode GetContainerEvents
 *   response" (-EPROTO); nothing more is delivered after it;
 * - kc_cri_events_close(): CANCELLED (-ECANCELED), unless it already ran.
 * Events of a type this client does not know are skipped. @p on_close may
 * be NULL.
 * @return 0 and *ret (to be closed with kc_cri_events_close() in every case,
 * even after on_close), or a negative errno with @p err filled when the
 * stream could not be opened (then no callback runs and *ret is untouched).
 */
int kc_cri_get_container_events(struct kc_cri *c,
                                void (*on_event)(void *ud, const struct kc_container_event *ev),
                                void (*on_close)(void *ud, int r,
                                                 const struct kc_runtime_error *err),
                                void *ud, struct kc_cri_events **ret, struct kc_runtime_error *err);

/**
 * @brief Cancels the stream if still open, waits until none of its callbacks
 * runs any more, and frees it. Any thread but the client's I/O thread (not
 * from a callback). Before kc_cri_free(). NULL-safe; returns NULL.
 */
struct kc_cri_events *kc_cri_events_close(struct kc_cri_events *e);
KC_DEFINE_CLEANUP_FUNC(struct kc_cri_events, kc_cri_events_close)

/**
 * Where CRI container events come from (GetContainerEvents). The CRI client
 * implements it (kc_cri_event_source()); tests and pleg-replay fake it.
 */
struct kc_container_event_source_ops {
        /**
         * Opens one stream. @p on_event runs for each event and @p on_close
         * exactly once when the stream ends (r = 0 or -errno, @p err says why),
         * on the source's own thread: both must not block (EventedPLEG copies
         * the event into its buffer). Returns 0 and *ret_handle, or -errno with
         * @p err filled when the stream cannot be opened (no callback runs then).
         */
        int (*open)(void *self, void (*on_event)(void *ud, const struct kc_container_event *ev),
                    void (*on_close)(void *ud, int r, const struct kc_runtime_error *err), void *ud,
                    void **ret_handle, struct kc_runtime_error *err);
        /** Closes a handle from open(): no callback runs once this returns. */
        void (*close)(void *self, void *handle);
};

struct kc_container_event_source {
        const struct kc_container_event_source_ops *ops;
        void *self;
};

/** GetContainerEvents as EventedPLEG's event source. Valid while @p c lives. */
struct kc_container_event_source kc_cri_event_source(struct kc_cri *c);
