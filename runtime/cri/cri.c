/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CRI client: the runtime service (struct kc_runtime_service_ops) over
 * gRPC, like kubelet's remote runtime and image services
 * (k8s.io/cri-client remote_runtime.go, remote_image.go).
 *
 * Each op packs its request (convert.c), makes one unary call on the
 * transport (grpc.c) with the client's request timeout, and unpacks the
 * response into a kc_* result. The transport is shared and thread-safe, and
 * this object is immutable once made, so every op may run on any thread,
 * concurrently. Errors come back as the transport reports them: the
 * runtime's grpc-status and grpc-message, or the transport's own.
 */
#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "core/arena.h"
#include "core/cleanup.h"
#include "core/enum_table.h"
#include "cri/grpc.h"
#include "cri/internal.h"
#include "runtime/cri.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"

#define RS(method) KC_CRI_RUNTIME_SERVICE method
#define IS(method) KC_CRI_IMAGE_SERVICE method

struct kc_cri {
        struct kc_grpc_client *grpc;
        int64_t timeout_ns; /* every call's deadline (StopContainer, ExecSync: plus theirs) */
        char *path;         /* the socket */
        /* The whole listings (no filter but state "any", GenericPLEG's) decode through these. */
        struct kc_cri_list_memo *sb_memo, *c_memo;
};

static int oom(struct kc_runtime_error *err)
{
        return kc_runtime_error_set(err, -ENOMEM, KC_RUNTIME_INTERNAL, "out of memory");
}

static int invalid(struct kc_runtime_error *err, const char *what)
{
        return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT, "%s", what);
}

/*
 * A request that did not pack: -EINVAL (a filter state out of range, a NULL
 * string in a list) or -ENOMEM.
 */
static int pack_error(struct kc_runtime_error *err, int r)
{
        return r == -EINVAL ? invalid(err, "invalid request") : oom(err);
}

int kc__cri_parse_endpoint(const char *endpoint, char **ret_path)
{
        struct sockaddr_un sa;
        const char *p;
        char *d;

        if (!endpoint || !ret_path)
                return -EINVAL;
        if (strncmp(endpoint, "unix://", 7) == 0)
                p = endpoint + 7;
        else if (endpoint[0] == '/')
                p = endpoint; /* kubelet: deprecated, still accepted */
        else
                return -EINVAL; /* tcp://, npipe://, no scheme, "" */
        if (p[0] != '/')
                return -EINVAL; /* "unix://" with a host or a relative path */
        if (strlen(p) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        d = strdup(p);
        if (!d)
                return -ENOMEM;
        *ret_path = d;
        return 0;
}

int kc_cri_new(const char *endpoint, int64_t request_timeout_ns, struct kc_cri **ret)
{
        _cleanup_free_ char *path = NULL;
        struct kc_cri *c;
        int r;

        if (!ret || request_timeout_ns <= 0)
                return -EINVAL;
        r = kc__cri_parse_endpoint(endpoint, &path);
        if (r < 0)
                return r;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        r = kc__cri_list_memo_new(KC_CRI_LIST_POD_SANDBOX, &c->sb_memo);
        if (r >= 0)
                r = kc__cri_list_memo_new(KC_CRI_LIST_CONTAINERS, &c->c_memo);
        if (r >= 0)
                r = kc_grpc_client_new(path, &c->grpc);
        if (r < 0) {
                kc__cri_list_memo_free(c->sb_memo);
                kc__cri_list_memo_free(c->c_memo);
                free(c);
                return r;
        }
        c->timeout_ns = request_timeout_ns;
        c->path = TAKE_PTR(path);
        *ret = c;
        return 0;
}

struct kc_cri *kc_cri_free(struct kc_cri *c)
{
        if (!c)
                return NULL;
        c->grpc = kc_grpc_client_free(c->grpc);
        kc__cri_list_memo_free(c->sb_memo);
        kc__cri_list_memo_free(c->c_memo);
        free(c->path);
        free(c);
        return NULL;
}

void kc_cri_shutdown(struct kc_cri *c)
{
        if (c)
                kc_grpc_client_shutdown(c->grpc);
}

const char *kc_cri_socket_path(const struct kc_cri *c)
{
        return c ? c->path : NULL;
}

/*
 * One unary call's bytes: the request the op packed, then the response it
 * unpacks. Both malloc'd; call_done() frees them.
 */
struct call {
        uint8_t *req, *resp;
        size_t req_len, resp_len;
};

static void call_done(struct call *k)
{
        free(k->req);
        free(k->resp);
}

/*
 * What every op does between checking its arguments and unpacking: @p pack_r
 * is what the op's kc__cri_pack_*() returned when it filled k->req; the
 * request goes on @p path with the deadline @p timeout_ns, and on success
 * k->resp holds the response's bytes.
 */
static int call_timeout(struct kc_cri *c, const char *path, int64_t timeout_ns, int pack_r,
                        struct call *k, struct kc_runtime_error *err)
{
        if (pack_r < 0)
                return pack_error(err, pack_r);
        return kc_grpc_unary(c->grpc, path, k->req, k->req_len, timeout_ns, NULL, &k->resp,
                             &k->resp_len, err);
}

/* call_timeout() with the client's request timeout. */
static int call(struct kc_cri *c, const char *path, int pack_r, struct call *k,
                struct kc_runtime_error *err)
{
        return call_timeout(c, path, c->timeout_ns, pack_r, k, err);
}

/*
 * kubelet's deadline for a call that waits @p timeout_s seconds on the
 * runtime's side (StopContainer's grace, ExecSync's timeout): the request
 * timeout plus those seconds, saturating; @p none when @p timeout_s is 0.
 */
static int64_t deadline_plus(const struct kc_cri *c, int64_t timeout_s, int64_t none)
{
        if (timeout_s <= 0)
                return none;
        return timeout_s > (INT64_MAX - c->timeout_ns) / KC_NSEC_PER_SEC
                       ? INT64_MAX
                       : c->timeout_ns + timeout_s * KC_NSEC_PER_SEC;
}

/* A call whose request is just an id and whose response is empty. */
static int id_call(struct kc_cri *c, const char *method, const char *path,
                   const ProtobufCMessageDescriptor *req_desc,
                   const ProtobufCMessageDescriptor *resp_desc, const char *id,
                   struct kc_runtime_error *err)
{
        _cleanup_(call_done) struct call k = { 0 };
        int r;

        if (!id)
                return invalid(err, "id is required");
        r = call(c, path, kc__cri_pack_id_request(req_desc, id, &k.req, &k.req_len), &k, err);
        return r < 0 ? r : kc__cri_unpack_empty(resp_desc, method, k.resp, k.resp_len, err);
}

static int cri_version(void *self, struct kc_version_result *ret, struct kc_runtime_error *err)
{
        _cleanup_(call_done) struct call k = { 0 };
        int r;

        if (!ret)
                return invalid(err, "invalid argument");
        r = call(self, RS("Version"), kc__cri_pack_version(&k.req, &k.req_len), &k, err);
        return r < 0 ? r : kc__cri_unpack_version(k.resp, k.resp_len, ret, err);
}

static int cri_status(void *self, struct kc_runtime_status_result *ret,
                      struct kc_runtime_error *err)
{
        _cleanup_(call_done) struct call k = { 0 };
        int r;

        if (!ret)
                return invalid(err, "invalid argument");
        r = call(self, RS("Status"), kc__cri_pack_status(&k.req, &k.req_len), &k, err);
        return r < 0 ? r : kc__cri_unpack_status(k.resp, k.resp_len, ret, err);
}

static int cri_run_pod_sandbox(void *self, const struct kc_pod_sandbox_config *config,
                               char **ret_id, struct kc_runtime_error *err)
{
        _cleanup_(call_done) struct call k = { 0 };
        int r;

        if (!config || !ret_id)
                return invalid(err, "sandbox config is required");
        /* kubelet gives RunPodSandbox the plain request timeout too. */
        r = call(self, RS("RunPodSandbox"),
                 kc__cri_pack_run_pod_sandbox(config, &k.req, &k.req_len), &k, err);
        return r < 0 ? r
                     : kc__cri_unpack_run_pod_sandbox(k.resp, k.resp_len, config->metadata.name,
                                                      ret_id, err);
}

static int cri_stop_pod_sandbox(void *self, const char *id, struct kc_runtime_error *err)
{
        return id_call(self, "StopPodSandbox", RS("StopPodSandbox"),
                       &runtime__v1__stop_pod_sandbox_request__descriptor,
                       &runtime__v1__stop_pod_sandbox_response__descriptor, id, err);
}

static int cri_remove_pod_sandbox(void *self, const char *id, struct kc_runtime_error *err)
{
        return id_call(self, "RemovePodSandbox", RS("RemovePodSandbox"),
                       &runtime__v1__remove_pod_sandbox_request__descriptor,
                       &runtime__v1__remove_pod_sandbox_response__descriptor, id, err);
}

static int cri_pod_sandbox_status(void *self, const char *id,
                                  struct kc_pod_sandbox_status_result *ret,
                                  struct kc_runtime_error *err)
{
        _cleanup_(call_done) struct call k = { 0 };
        int r;

        if (!id || !ret)
                return invalid(err, "sandbox id is required");
        r = call(self, RS("PodSandboxStatus"),
                 kc__cri_pack_id_request(&runtime__v1__pod_sandbox_status_request__descriptor, id,
                                         &k.req, &k.req_len),
                 &k, err);
        return r < 0 ? r : kc__cri_unpack_pod_sandbox_status(k.resp, k.resp_len, ret, err);
}

static int cri_list_pod_sandbox(void *self, const struct kc_pod_sandbox_filter *filter,
                                struct kc_pod_sandbox_list *ret, struct kc_runtime_error *err)
{
        _cleanup_(call_done) struct call k = { 0 };
        int r;

        if (!ret)
                return invalid(err, "invalid argument");
        r = call(self, RS("ListPodSandbox"),
                 kc__cri_pack_list_pod_sandbox(filter, &k.req, &k.req_len), &k, err);
        if (r < 0)
                return r;
        if (!filter || (!filter->id && filter->state < 0 && filter->n_label_selector == 0))
                return kc__cri_unpack_list_pod_sandbox_memo(((struct kc_cri *)self)->sb_memo,
                                                            k.resp, k.resp_len, ret, err);
        return kc__cri_unpack_list_pod_sandbox(k.resp, k.resp_len, ret, err);
}

static int cri_create_container(void *self, const char *pod_sandbox_id,
                                const struct kc_container_config *config,
                                const struct kc_pod_sandbox_config *sandbox_config, char **ret_id,
                                struct kc_runtime_error *err)
{
        _cleanup_(call_done) struct call k = { 0 };
        int r;

        if (!pod_sandbox_id || !config || !ret_id)
                return invalid(err, "sandbox id and container config are required");
        r = call(self, RS("CreateContainer"),
                 kc__cri_pack_create_container(pod_sandbox_id, config, sandbox_config, &k.req,
                                               &k.req_len),
                 &k, err);
        return r < 0 ? r
                     : kc__cri_unpack_create_container(k.resp, k.resp_len, config->metadata.name,
                                                       ret_id, err);
}

static int cri_start_container(void *self, const char *id, struct kc_runtime_error *err)
{
        return id_call(self, "StartContainer", RS("StartContainer"),
                       &runtime__v1__start_container_request__descriptor,
                       &runtime__v1__start_container_response__descriptor, id, err);
}

static int cri_stop_container(void *self, const char *id, int64_t timeout_s,
                              struct kc_runtime_error *err)
{
        struct kc_cri *c = self;
        _cleanup_(call_done) struct call k = { 0 };
        int r;

        if (!id)
                return invalid(err, "container id is required");
        /* kubelet: the request timeout plus the grace period. */
        r = call_timeout(c, RS("StopContainer"), deadline_plus(c, timeout_s, c->timeout_ns),
                         kc__cri_pack_stop_container(id, timeout_s, &k.req, &k.req_len), &k, err);
        return r < 0 ? r
                     : kc__cri_unpack_empty(&runtime__v1__stop_container_response__descriptor,
                                            "StopContainer", k.resp, k.resp_len, err);
}

static int cri_remove_container(void *self, const char *id, struct kc_runtime_error *err)
{
        return id_call(self, "RemoveContainer", RS("RemoveContainer"),
                       &runtime__v1__remove_container_request__descriptor,
                       &runtime__v1__remove_container_response__descriptor, id, err);
}

static int cri_list_containers(void *self, const struct kc_container_filter *filter,
                               struct kc_container_list *ret, struct kc_runtime_error *err)
{
        _cleanup_(call_done) struct call k = { 0 };
        int r;

        if (!ret)
                return invalid(err, "invalid argument");
        r = call(self, RS("ListContainers"),
                 kc__cri_pack_list_containers(filter, &k.req, &k.req_len), &k, err);
        if (r < 0)
                return r;
        if (!filter || (!filter->id && !filter->pod_sandbox_id && filter->state < 0 &&
                        filter->n_label_selector == 0))
                return kc__cri_unpack_list_containers_memo(((struct kc_cri *)self)->c_memo, k.resp,
                                                           k.resp_len, ret, err);
        return kc__cri_unpack_list_containers(k.resp, k.resp_len, ret, err);
}

static int cri_container_status(void *self, const char *id, struct kc_container_status_result *ret,
                                struct kc_runtime_error *err)
{
        _cleanup_(call_done) struct call k = { 0 };
        int r;

        if (!id || !ret)
                return invalid(err, "container id is required");
        r = call(self, RS("ContainerStatus"),
                 kc__cri_pack_id_request(&runtime__v1__container_status_request__descriptor, id,
                                         &k.req, &k.req_len),
                 &k, err);
        return r < 0 ? r : kc__cri_unpack_container_status(k.resp, k.resp_len, ret, err);
}

/* The command as one line, for the timeout's message. */
static char *join_argv(const char *const *argv, size_t argc)
{
        size_t n = 1;
        char *s;

        for (size_t i = 0; i < argc; i++)
                n += strlen(argv[i]) + 1;
        s = malloc(n);
        if (!s)
                return NULL;
        s[0] = '\0';
        for (size_t i = 0; i < argc; i++) {
                if (i > 0)
                        strcat(s, " ");
                strcat(s, argv[i]);
        }
        return s;
}

static int cri_exec_sync(void *self, const char *id, const char *const *argv, size_t argc,
                         int64_t timeout_s, struct kc_exec_sync_result *ret,
                         struct kc_runtime_error *err)
{
        struct kc_cri *c = self;
        _cleanup_(call_done) struct call k = { 0 };
        _cleanup_free_ char *line = NULL;
        int r;

        if (!id || !ret)
                return invalid(err, "container id is required");
        if (timeout_s < 0)
                return invalid(err, "negative exec timeout");
        /*
         * kubelet's remote runtime: the exec timeout plus the request timeout,
         * to leave the runtime time to clean up; no deadline without one.
         */
        r = call_timeout(c, RS("ExecSync"), deadline_plus(c, timeout_s, INT64_MAX),
                         kc__cri_pack_exec_sync(id, argv, argc, timeout_s, &k.req, &k.req_len), &k,
                         err);
        if (r == -ETIMEDOUT && (line = join_argv(argv, argc)))
                return kc_runtime_error_set(err, r, KC_RUNTIME_DEADLINE_EXCEEDED,
                                            "command \"%s\" timed out", line);
        return r < 0 ? r : kc__cri_unpack_exec_sync(k.resp, k.resp_len, ret, err);
}

static int cri_image_status(void *self, const char *image, struct kc_image_status_result *ret,
                            struct kc_runtime_error *err)
{
        _cleanup_(call_done) struct call k = { 0 };
        int r;

        if (!image || !ret)
                return invalid(err, "image is required");
        r = call(self, IS("ImageStatus"), kc__cri_pack_image_status(image, &k.req, &k.req_len), &k,
                 err);
        return r < 0 ? r : kc__cri_unpack_image_status(k.resp, k.resp_len, ret, err);
}

static int cri_pull_image(void *self, const char *image,
                          const struct kc_pod_sandbox_config *sandbox_config, char **ret_image_ref,
                          struct kc_runtime_error *err)
{
        _cleanup_(call_done) struct call k = { 0 };
        int r;

        if (!image || !ret_image_ref)
                return invalid(err, "image is required");
        r = call(self, IS("PullImage"),
                 kc__cri_pack_pull_image(image, sandbox_config, &k.req, &k.req_len), &k, err);
        return r < 0 ? r : kc__cri_unpack_pull_image(k.resp, k.resp_len, image, ret_image_ref, err);
}

static const struct kc_runtime_service_ops cri_service_ops = {
        .version = cri_version,
        .status = cri_status,
        .run_pod_sandbox = cri_run_pod_sandbox,
        .stop_pod_sandbox = cri_stop_pod_sandbox,
        .remove_pod_sandbox = cri_remove_pod_sandbox,
        .pod_sandbox_status = cri_pod_sandbox_status,
        .list_pod_sandbox = cri_list_pod_sandbox,
        .create_container = cri_create_container,
        .start_container = cri_start_container,
        .stop_container = cri_stop_container,
        .remove_container = cri_remove_container,
        .list_containers = cri_list_containers,
        .container_status = cri_container_status,
        .exec_sync = cri_exec_sync,
        .image_status = cri_image_status,
        .pull_image = cri_pull_image,
};

struct kc_runtime_service kc_cri_service(struct kc_cri *c)
{
        return (struct kc_runtime_service){ .ops = &cri_service_ops, .self = c };
}

/* ------------------------------------------------------------------------ */
/* GetContainerEvents                                                         */

KC_DEFINE_STRING_TABLE(
        kc_container_event_type, enum kc_container_event_type,
        _KC_CONTAINER_EVENT_TYPE_MAX, [KC_CONTAINER_EVENT_CREATED] = "CONTAINER_CREATED_EVENT",
        [KC_CONTAINER_EVENT_STARTED] = "CONTAINER_STARTED_EVENT",
        [KC_CONTAINER_EVENT_STOPPED] = "CONTAINER_STOPPED_EVENT",
        [KC_CONTAINER_EVENT_DELETED] = "CONTAINER_DELETED_EVENT", )

struct kc_cri_events {
        struct kc_grpc_stream *stream;
        void (*on_event)(void *ud, const struct kc_container_event *ev);
        void (*on_close)(void *ud, int r, const struct kc_runtime_error *err);
        void *ud;
        /*
         * Set by whichever callback ends the stream for the user first: a
         * message that does not decode, or the transport's close. The
         * exchange makes on_close run once even if the transport closed
         * the stream from another thread than the one delivering messages.
         */
        atomic_bool closed;
};

static void events_finish(struct kc_cri_events *e, int r, const struct kc_runtime_error *err)
{
        if (atomic_exchange_explicit(&e->closed, true, memory_order_acq_rel))
                return;
        if (e->on_close)
                e->on_close(e->ud, r, err);
}

void kc__cri_events_on_message(void *userdata, const uint8_t *msg, size_t len)
{
        struct kc_cri_events *e = userdata;
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        struct kc_runtime_error err = { 0 };
        struct kc_container_event ev;
        int r;

        if (atomic_load_explicit(&e->closed, memory_order_acquire))
                return;
        r = kc_arena_new(&a) < 0 ? oom(&err)
                                 : kc__cri_unpack_container_event(msg, len, a, &ev, &err);
        if (r == 1)
                return; /* an event type this client does not know */
        if (r < 0) {
                events_finish(e, r, &err);
                return;
        }
        e->on_event(e->ud, &ev);
}

void kc__cri_events_on_close(void *userdata, int r, const struct kc_runtime_error *err)
{
        events_finish(userdata, r, err);
}

int kc__cri_events_new(void (*on_event)(void *ud, const struct kc_container_event *ev),
                       void (*on_close)(void *ud, int r, const struct kc_runtime_error *err),
                       void *ud, struct kc_cri_events **ret)
{
        struct kc_cri_events *e;

        if (!on_event || !ret)
                return -EINVAL;
        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        e->on_event = on_event;
        e->on_close = on_close;
        e->ud = ud;
        atomic_init(&e->closed, false);
        *ret = e;
        return 0;
}

int kc_cri_get_container_events(struct kc_cri *c,
                                void (*on_event)(void *ud, const struct kc_container_event *ev),
                                void (*on_close)(void *ud, int r,
                                                 const struct kc_runtime_error *err),
                                void *ud, struct kc_cri_events **ret, struct kc_runtime_error *err)
{
        Runtime__V1__GetEventsRequest req = RUNTIME__V1__GET_EVENTS_REQUEST__INIT;
        struct kc_cri_events *e = NULL;
        uint8_t buf[16];
        size_t len;
        int r;

        if (!c || !on_event || !ret)
                return invalid(err, "invalid argument");
        len = runtime__v1__get_events_request__pack(&req, buf); /* empty: 0 bytes */
        if (kc__cri_events_new(on_event, on_close, ud, &e) < 0)
                return oom(err);
        r = kc_grpc_stream_open(c->grpc, RS("GetContainerEvents"), buf, len,
                                kc__cri_events_on_message, kc__cri_events_on_close, e, &e->stream,
                                err);
        if (r < 0) {
                free(e);
                return r;
        }
        *ret = e;
        return 0;
}

struct kc_cri_events *kc_cri_events_close(struct kc_cri_events *e)
{
        if (!e)
                return NULL;
        e->stream = kc_grpc_stream_close(e->stream);
        free(e);
        return NULL;
}

/* ------------------------------------------------------------------------ */
/* As EventedPLEG's event source                                              */

static int cri_source_open(void *self,
                           void (*on_event)(void *ud, const struct kc_container_event *ev),
                           void (*on_close)(void *ud, int r, const struct kc_runtime_error *err),
                           void *ud, void **ret_handle, struct kc_runtime_error *err)
{
        struct kc_cri_events *e = NULL;
        int r;

        if (!ret_handle)
                return invalid(err, "invalid argument");
        r = kc_cri_get_container_events(self, on_event, on_close, ud, &e, err);
        if (r < 0)
                return r;
        *ret_handle = e;
        return 0;
}

static void cri_source_close(void *self, void *handle)
{
        (void)self;
        kc_cri_events_close(handle);
}

static const struct kc_container_event_source_ops cri_event_source_ops = {
        .open = cri_source_open,
        .close = cri_source_close,
};

struct kc_container_event_source kc_cri_event_source(struct kc_cri *c)
{
        return (struct kc_container_event_source){ .ops = &cri_event_source_ops, .self = c };
}
