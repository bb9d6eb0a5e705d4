/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file internal.h
 * @brief runtime/cri internals: the message codec between the runtime
 * service's kc_* types and the CRI protobuf messages (convert.c), shared by
 * the client (cri.c) and the unit tests (tests/unit/runtime/test_cri.c).
 *
 * Requests are built from borrowed pointers and packed into malloc'd bytes;
 * responses are unpacked into the result's arena (the protobuf-c decoder
 * allocates from it, so the result's strings are the decoded ones, not
 * copies). Nothing here does I/O or logs.
 *
 * Every unpack function returns 0, -ENOMEM (INTERNAL "out of memory"), or
 * -EPROTO with err INTERNAL "failed to decode <Method> response" when the
 * bytes are not the message, or INTERNAL with kubelet's message when a field
 * that kubelet requires is missing (an empty sandbox or container id, a
 * status without metadata, ...). The out-parameter is untouched on failure.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "core/cleanup.h"
#include "runtime/container.h"

/*
 * The generated code has fields named "linux", which gcc's GNU dialects
 * predefine as a macro; the kc_cri_proto target passes -Ulinux to its users
 * too. Undefine it here as well so that this header works on its own.
 */
#undef linux
#include "api.pb-c.h"

struct kc_arena;
struct kc_container_config;
struct kc_container_event;
struct kc_container_filter;
struct kc_container_list;
struct kc_cri_container;
struct kc_container_status_result;
struct kc_cri_events;
struct kc_exec_sync_result;
struct kc_image_status_result;
struct kc_label;
struct kc_pod_sandbox_config;
struct kc_pod_sandbox;
struct kc_pod_sandbox_filter;
struct kc_pod_sandbox_metadata;
struct kc_pod_sandbox_list;
struct kc_pod_sandbox_status_result;
struct kc_runtime_error;
struct kc_runtime_status_result;
struct kc_version_result;

#define KC_CRI_RUNTIME_SERVICE "/runtime.v1.RuntimeService/"
#define KC_CRI_IMAGE_SERVICE "/runtime.v1.ImageService/"

/** The CRI API version kubelet's remote client sends with Version. */
#define KC_CRI_CLIENT_API_VERSION "0.1.0"

/**
 * @brief The socket path of a CRI endpoint: "unix:///abs/path" or a bare
 * "/abs/path" (as kubelet, which also warns about the latter).
 * @return 0 and *ret_path (malloc'd), -EINVAL (NULL, empty, another scheme,
 * a relative path), -ENAMETOOLONG (longer than sockaddr_un's sun_path), or
 * -ENOMEM. *ret_path untouched on failure.
 */
int kc__cri_parse_endpoint(const char *endpoint, char **ret_path);

/* ------------------------------------------------------------------------ */
/* Requests: protobuf bytes (without the gRPC prefix), malloc'd              */

/** A request message with only string field 1 set (the id-only requests). */
int kc__cri_pack_id_request(const ProtobufCMessageDescriptor *desc, const char *id, uint8_t **ret,
                            size_t *ret_len);

int kc__cri_pack_version(uint8_t **ret, size_t *ret_len);
int kc__cri_pack_status(uint8_t **ret, size_t *ret_len);

/**
 * RunPodSandboxRequest: every field of @p config. The hostname only off the
 * host network (@p config's is dropped for host-network pods, as kubelet
 * does); linux.security_context.namespace_options as @p config's security
 * has them, with network NODE for a host-network pod. Unset optional values
 * (run_as_user/group, seccomp, dns_config) are absent on the wire.
 * @return 0, -EINVAL (a NULL string in a DNS list), -ENOMEM.
 */
int kc__cri_pack_run_pod_sandbox(const struct kc_pod_sandbox_config *config, uint8_t **ret,
                                 size_t *ret_len);

int kc__cri_pack_list_pod_sandbox(const struct kc_pod_sandbox_filter *filter, uint8_t **ret,
                                  size_t *ret_len);

/**
 * CreateContainerRequest: every field of the container config (resources
 * only with has_resources, the security context only with has_security) and
 * the sandbox config as RunPodSandbox sent it. Without its own security
 * context, linux.security_context still carries the pod's namespace options
 * (kubelet always sets them): @p sandbox_config's, or {POD, CONTAINER, POD}
 * when that is NULL; network is NODE on a host-network sandbox.
 * @p sandbox_config may be NULL.
 * @return 0, -EINVAL (a NULL string in a list), -ENOMEM.
 */
int kc__cri_pack_create_container(const char *pod_sandbox_id,
                                  const struct kc_container_config *config,
                                  const struct kc_pod_sandbox_config *sandbox_config, uint8_t **ret,
                                  size_t *ret_len);

int kc__cri_pack_stop_container(const char *id, int64_t timeout_s, uint8_t **ret, size_t *ret_len);

/** ExecSyncRequest; -EINVAL without a command or with a NULL argument. */
int kc__cri_pack_exec_sync(const char *id, const char *const *argv, size_t argc, int64_t timeout_s,
                           uint8_t **ret, size_t *ret_len);

int kc__cri_pack_list_containers(const struct kc_container_filter *filter, uint8_t **ret,
                                 size_t *ret_len);

int kc__cri_pack_image_status(const char *image, uint8_t **ret, size_t *ret_len);

/** @p sandbox_config may be NULL. */
int kc__cri_pack_pull_image(const char *image, const struct kc_pod_sandbox_config *sandbox_config,
                            uint8_t **ret, size_t *ret_len);

/* ------------------------------------------------------------------------ */
/* Responses                                                                  */

int kc__cri_unpack_version(const uint8_t *buf, size_t len, struct kc_version_result *ret,
                           struct kc_runtime_error *err);
/** As kubelet: fewer than two conditions (RuntimeReady, NetworkReady) is an error. */
int kc__cri_unpack_status(const uint8_t *buf, size_t len, struct kc_runtime_status_result *ret,
                          struct kc_runtime_error *err);
/** *ret_id malloc'd; an empty id is an error naming the sandbox @p name (may be NULL). */
int kc__cri_unpack_run_pod_sandbox(const uint8_t *buf, size_t len, const char *name, char **ret_id,
                                   struct kc_runtime_error *err);
/**
 * The four decoders a relist runs most (PodSandboxStatus, ListPodSandbox,
 * ListContainers, ContainerStatus) are wire.c's hand-written ones. Their
 * protobuf-c twins, the reference the differential tests and the fuzz
 * target hold them to, are test code (tests/harness/cri_pbc_oracle.h), built
 * from the helpers below.
 */
int kc__cri_unpack_pod_sandbox_status(const uint8_t *buf, size_t len,
                                      struct kc_pod_sandbox_status_result *ret,
                                      struct kc_runtime_error *err);
int kc__cri_unpack_list_pod_sandbox(const uint8_t *buf, size_t len, struct kc_pod_sandbox_list *ret,
                                    struct kc_runtime_error *err);
/** *ret_id malloc'd; an empty id is an error naming the container @p name (may be NULL). */
int kc__cri_unpack_create_container(const uint8_t *buf, size_t len, const char *name, char **ret_id,
                                    struct kc_runtime_error *err);
int kc__cri_unpack_list_containers(const uint8_t *buf, size_t len, struct kc_container_list *ret,
                                   struct kc_runtime_error *err);
int kc__cri_unpack_container_status(const uint8_t *buf, size_t len,
                                    struct kc_container_status_result *ret,
                                    struct kc_runtime_error *err);
/** A response without an image is success with ret->found false (and no arena). */
int kc__cri_unpack_image_status(const uint8_t *buf, size_t len, struct kc_image_status_result *ret,
                                struct kc_runtime_error *err);
/** *ret_image_ref malloc'd; an empty reference is an error naming @p image. */
int kc__cri_unpack_pull_image(const uint8_t *buf, size_t len, const char *image,
                              char **ret_image_ref, struct kc_runtime_error *err);
/**
 * One GetContainerEvents message into @p a (which then owns every string).
 * @return 0; 1 when the event type is not one this client knows (*ret then
 * untouched: the event is to be skipped); or an error as above.
 */
int kc__cri_unpack_container_event(const uint8_t *buf, size_t len, struct kc_arena *a,
                                   struct kc_container_event *ret, struct kc_runtime_error *err);

/**
 * Decodes @p buf as a @p desc message allocated from @p a (from malloc when
 * @p a is NULL: the caller then frees it with protobuf_c_message_free_unpacked()).
 * @p method names the call in the decode error.
 */
int kc__cri_unpack_message(const ProtobufCMessageDescriptor *desc, const char *method,
                           struct kc_arena *a, const uint8_t *buf, size_t len,
                           ProtobufCMessage **ret, struct kc_runtime_error *err);

/*
 * Each response with a result in an arena has one shape: decode @p buf as a
 * @p desc message from a new arena, then let @p from_pb check it and fill
 * @p ret. from_pb returns 0 when the result now owns the arena (it stored
 * @p a in it), 1 when it succeeded without it (the arena is freed), or an
 * error with err filled and @p ret untouched.
 */
typedef int (*kc_cri_result_from_pb_fn)(struct kc_arena *a, const ProtobufCMessage *m, void *ret,
                                        struct kc_runtime_error *err);
int kc__cri_unpack_result(const ProtobufCMessageDescriptor *desc, const char *method,
                          const uint8_t *buf, size_t len, kc_cri_result_from_pb_fn from_pb,
                          void *ret, struct kc_runtime_error *err);

/*
 * Pieces of protobuf-c messages to kc_* values, from and into @p a: strings
 * stay the message's own (absent ones read ""), arrays are allocated from
 * @p a. Each returns 0 or -ENOMEM.
 */
/** An arena array of @p n elements of @p size bytes (NULL for none). */
int kc__cri_arena_array(struct kc_arena *a, size_t n, size_t size, void **ret);
/** The @p n entries of a map<string, string> field; NULL and 0 for none. */
int kc__cri_labels_from_pb(struct kc_arena *a, ProtobufCMessage *const *entries, size_t n,
                           const struct kc_label **ret, size_t *ret_n);
/** kc__cri_labels_from_pb() of the map field @p field of @p msg. */
#define KC_CRI_LABELS_FROM_PB(a, msg, field, out, n_out)                                           \
        kc__cri_labels_from_pb((a), (ProtobufCMessage *const *)(msg)->field, (msg)->n_##field,     \
                               (out), (n_out))
/** @p md may be NULL (every field then empty). */
void kc__cri_sandbox_metadata_from_pb(const Runtime__V1__PodSandboxMetadata *md,
                                      struct kc_pod_sandbox_metadata *out);
/** The image as the pod spec named it when the runtime knows that, else the runtime's name. */
const char *kc__cri_image_from_pb(const Runtime__V1__ImageSpec *img);
/** A status as kubelet reads it (the checks kubelet makes of it are the caller's). */
int kc__cri_sandbox_status_from_pb(struct kc_arena *a, const Runtime__V1__PodSandboxStatus *s,
                                   struct kc_pod_sandbox *out);
int kc__cri_container_status_from_pb(struct kc_arena *a, const Runtime__V1__ContainerStatus *s,
                                     struct kc_cri_container *out);

/* ------------------------------------------------------------------------ */
/* The protobuf wire format (wire.c)                                          */

/** A walk over the top-level fields of one message's bytes [p, end). */
struct kc_cri_wire {
        const uint8_t *p, *end;
};

/** One field as kc__cri_wire_next() found it. */
struct kc_cri_wire_field {
        uint32_t num;
        uint8_t wt;         /* wire type: 0 varint, 1 64-bit, 2 length-delimited, 5 32-bit */
        const uint8_t *raw; /* the value's bytes after the tag (a length prefix included) */
        size_t raw_len;
        const uint8_t *data; /* wire type 2: the bytes after the prefix */
        size_t len;
        uint64_t v; /* wire type 0: the value */
};

/**
 * The next field, framed as protobuf-c frames it (wire.c says how).
 * @return 1 with *f, 0 at the end, -EPROTO on malformed bytes (w then
 * unchanged).
 */
int kc__cri_wire_next(struct kc_cri_wire *w, struct kc_cri_wire_field *f);
/**
 * Where decoded strings and arrays go: arena @a, taking from [p, p + left)
 * first and then from blocks of @a. Start one as { .a = arena } (or over a
 * block of the arena) and keep it for every item of a listing: the items
 * then share blocks.
 */
struct kc_cri_wire_dec {
        struct kc_arena *a;
        char *p;
        size_t left;
};

/**
 * One PodSandbox / Container message (a listed item) into *out, its
 * strings and arrays from @d: what protobuf-c's decode of it makes once
 * converted (tests/harness/cri_pbc_oracle.c).
 * @return 0, -EPROTO (bytes protobuf-c refuses), -ENOMEM; *out untouched on failure.
 */
int kc__cri_wire_pod_sandbox(struct kc_cri_wire_dec *d, const uint8_t *p, size_t len,
                             struct kc_pod_sandbox *out);
int kc__cri_wire_container(struct kc_cri_wire_dec *d, const uint8_t *p, size_t len,
                           struct kc_cri_container *out);
/** CRI state values to the kc_* ones, as kubelet reads them. */
enum kc_sandbox_state kc__cri_sandbox_state(int s);
enum kc_container_state kc__cri_container_state(int s);

/* ------------------------------------------------------------------------ */
/* List memos (list_memo.c)                                                   */

/**
 * A list memo remembers the last response of one kind (sandboxes or
 * containers) it decoded and a reference to its result. Decoding the next
 * response through it decodes only the items whose bytes the last one did
 * not have; the others are copied from the last result, and a response
 * equal to the last one is answered with the last result itself. The
 * result equals kc__cri_unpack_list_*()'s, but its arena may be shared
 * (kc_arena_ref): it is read-only. Thread-safe (one lock).
 */
struct kc_cri_list_memo;

enum kc_cri_list_kind {
        KC_CRI_LIST_POD_SANDBOX,
        KC_CRI_LIST_CONTAINERS,
};

int kc__cri_list_memo_new(enum kc_cri_list_kind kind, struct kc_cri_list_memo **ret);
struct kc_cri_list_memo *kc__cri_list_memo_free(struct kc_cri_list_memo *m);
KC_DEFINE_CLEANUP_FUNC(struct kc_cri_list_memo, kc__cri_list_memo_free)
/** Items of the last response. */
size_t kc__cri_list_memo_size(struct kc_cri_list_memo *m);
/** Items the last call decoded rather than copied (0 when the response was the same). */
size_t kc__cri_list_memo_decoded(struct kc_cri_list_memo *m);

/** kc__cri_unpack_list_pod_sandbox() through a KC_CRI_LIST_POD_SANDBOX memo. */
int kc__cri_unpack_list_pod_sandbox_memo(struct kc_cri_list_memo *m, const uint8_t *buf, size_t len,
                                         struct kc_pod_sandbox_list *ret,
                                         struct kc_runtime_error *err);
/** kc__cri_unpack_list_containers() through a KC_CRI_LIST_CONTAINERS memo. */
int kc__cri_unpack_list_containers_memo(struct kc_cri_list_memo *m, const uint8_t *buf, size_t len,
                                        struct kc_container_list *ret,
                                        struct kc_runtime_error *err);

/** ExecSyncResponse: stdout and stderr copied into ret (malloc'd, NUL-terminated). */
int kc__cri_unpack_exec_sync(const uint8_t *buf, size_t len, struct kc_exec_sync_result *ret,
                             struct kc_runtime_error *err);

/** Checks that an empty response (Stop/Remove/Start...) decodes. */
int kc__cri_unpack_empty(const ProtobufCMessageDescriptor *desc, const char *method,
                         const uint8_t *buf, size_t len, struct kc_runtime_error *err);

/* ------------------------------------------------------------------------ */
/* GetContainerEvents (cri.c)                                                 */

/**
 * Tests: an events handle without a stream; drive it through the two
 * transport callbacks below, then kc_cri_events_close() it.
 * @return 0, -EINVAL (no @p on_event), -ENOMEM.
 */
int kc__cri_events_new(void (*on_event)(void *ud, const struct kc_container_event *ev),
                       void (*on_close)(void *ud, int r, const struct kc_runtime_error *err),
                       void *ud, struct kc_cri_events **ret);
/** The stream's kc_grpc_message_fn: decodes one message and calls on_event. */
void kc__cri_events_on_message(void *userdata, const uint8_t *msg, size_t len);
/** The stream's kc_grpc_close_fn. */
void kc__cri_events_on_close(void *userdata, int r, const struct kc_runtime_error *err);
