/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The protobuf-c twins of wire.c's decoders (cri_pbc_oracle.h): protobuf-c
 * decodes the response into the result's arena, then convert.c's helpers
 * (runtime/cri/internal.h) make the kc_* result of it, and kubelet's checks
 * of a status (verifySandboxStatus, verifyContainerStatus) run on the
 * decoded message.
 */
#include "cri_pbc_oracle.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "cri/internal.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"

static int oom(struct kc_runtime_error *err)
{
        return kc_runtime_error_set(err, -ENOMEM, KC_RUNTIME_INTERNAL, "out of memory");
}

/* A field kubelet's remote client insists on is missing from a response. */
static int missing(struct kc_runtime_error *err, const char *what)
{
        return kc_runtime_error_set(err, -EPROTO, KC_RUNTIME_INTERNAL, "%s", what);
}

/* Strings kubelet reads as-is: "" when absent. */
static const char *str(const char *s)
{
        return s ? s : "";
}

/*
 * One listed item, a PodSandbox or a Container message: its strings stay in
 * the message (in @p a), labels are allocated from @p a. 0 or -ENOMEM.
 */
typedef int (*item_from_pb_fn)(struct kc_arena *a, const ProtobufCMessage *m, void *out);

static int sandbox_from_pb(struct kc_arena *a, const ProtobufCMessage *m, void *ret)
{
        const Runtime__V1__PodSandbox *p = (const void *)m;
        struct kc_pod_sandbox *out = ret;

        *out = (struct kc_pod_sandbox){
                .id = str(p->id),
                .state = kc__cri_sandbox_state(p->state),
                .created_at = p->created_at,
        };
        kc__cri_sandbox_metadata_from_pb(p->metadata, &out->metadata);
        if (KC_CRI_LABELS_FROM_PB(a, p, labels, &out->labels, &out->n_labels) < 0 ||
            KC_CRI_LABELS_FROM_PB(a, p, annotations, &out->annotations, &out->n_annotations) < 0)
                return -ENOMEM;
        return 0;
}

static int container_from_pb(struct kc_arena *a, const ProtobufCMessage *m, void *ret)
{
        const Runtime__V1__Container *c = (const void *)m;
        struct kc_cri_container *out = ret;

        *out = (struct kc_cri_container){
                .id = str(c->id),
                .pod_sandbox_id = str(c->pod_sandbox_id),
                .metadata = { .name = str(c->metadata ? c->metadata->name : NULL),
                              .attempt = c->metadata ? c->metadata->attempt : 0 },
                .image = kc__cri_image_from_pb(c->image),
                .image_ref = str(c->image_ref),
                .state = kc__cri_container_state(c->state),
                .created_at = c->created_at,
        };
        if (KC_CRI_LABELS_FROM_PB(a, c, labels, &out->labels, &out->n_labels) < 0 ||
            KC_CRI_LABELS_FROM_PB(a, c, annotations, &out->annotations, &out->n_annotations) < 0)
                return -ENOMEM;
        return 0;
}

/* kubelet's verifySandboxStatus. */
static int sandbox_status_verify(const Runtime__V1__PodSandboxStatus *s,
                                 struct kc_runtime_error *err)
{
        if (!s->id || !*s->id)
                return missing(err, "status.Id is not set");
        if (!s->metadata)
                return missing(err, "status.Metadata is not set");
        return 0;
}

/* kubelet's verifyContainerStatus. */
static int container_status_verify(const Runtime__V1__ContainerStatus *s,
                                   struct kc_runtime_error *err)
{
        if (!s->id || !*s->id)
                return missing(err, "status.Id is not set");
        if (!s->metadata)
                return missing(err, "status.Metadata is not set");
        if (!s->image)
                return missing(err, "status.Image is not set");
        return 0;
}

/*
 * The result of a status response (*ret: its status and the arena): the
 * status @p st is there and passes kubelet's @p verify, then @p convert
 * makes the kc_* status of it. 0 or -errno with err filled, *ret untouched
 * on failure. Both status callbacks are this.
 */
#define STATUS_RESULT_FROM_PB(a, st, method, verify, convert, ret, err)                            \
        ({                                                                                         \
                typeof((ret)->status) st_;                                                         \
                int r_ = (st) ? verify((st), (err))                                                \
                              : missing((err), method " response has no status");                  \
                                                                                                   \
                if (r_ >= 0 && convert((a), (st), &st_) < 0)                                       \
                        r_ = oom(err);                                                             \
                if (r_ >= 0)                                                                       \
                        *(ret) = (typeof(*(ret))){ .status = st_, .arena = (a) };                  \
                r_ < 0 ? r_ : 0;                                                                   \
        })

static int pod_sandbox_status_from_pb(struct kc_arena *a, const ProtobufCMessage *m, void *out,
                                      struct kc_runtime_error *err)
{
        const Runtime__V1__PodSandboxStatusResponse *resp = (const void *)m;

        return STATUS_RESULT_FROM_PB(a, resp->status, "PodSandboxStatus", sandbox_status_verify,
                                     kc__cri_sandbox_status_from_pb,
                                     (struct kc_pod_sandbox_status_result *)out, err);
}

int kc_test_cri_unpack_pod_sandbox_status_pbc(const uint8_t *buf, size_t len,
                                              struct kc_pod_sandbox_status_result *ret,
                                              struct kc_runtime_error *err)
{
        return kc__cri_unpack_result(&runtime__v1__pod_sandbox_status_response__descriptor,
                                     "PodSandboxStatus", buf, len, pod_sandbox_status_from_pb, ret,
                                     err);
}

/* The @p n items of a listing, each @p size bytes, in an array of @p a (NULL for none). */
static int items_from_pb(struct kc_arena *a, ProtobufCMessage *const *pb, size_t n, size_t size,
                         item_from_pb_fn from_pb, void **ret, struct kc_runtime_error *err)
{
        char *items;

        if (kc__cri_arena_array(a, n, size, (void **)&items) < 0)
                return oom(err);
        for (size_t i = 0; i < n; i++)
                if (from_pb(a, pb[i], items + i * size) < 0)
                        return oom(err);
        *ret = items;
        return 0;
}

/* The result of a list response (*ret: items, count, arena): its @p count items @p pb. */
#define LIST_RESULT_FROM_PB(a, pb, count, item_from_pb, ret, err)                                  \
        ({                                                                                         \
                void *items_ = NULL;                                                               \
                int r_ = items_from_pb((a), (ProtobufCMessage *const *)(pb), (count),              \
                                       sizeof(*(ret)->items), (item_from_pb), &items_, (err));     \
                                                                                                   \
                if (r_ >= 0)                                                                       \
                        *(ret) = (typeof(*(ret))){ .items = items_, .n = (count), .arena = (a) };  \
                r_;                                                                                \
        })

static int list_pod_sandbox_from_pb(struct kc_arena *a, const ProtobufCMessage *m, void *out,
                                    struct kc_runtime_error *err)
{
        const Runtime__V1__ListPodSandboxResponse *resp = (const void *)m;

        return LIST_RESULT_FROM_PB(a, resp->items, resp->n_items, sandbox_from_pb,
                                   (struct kc_pod_sandbox_list *)out, err);
}

int kc_test_cri_unpack_list_pod_sandbox_pbc(const uint8_t *buf, size_t len,
                                            struct kc_pod_sandbox_list *ret,
                                            struct kc_runtime_error *err)
{
        return kc__cri_unpack_result(&runtime__v1__list_pod_sandbox_response__descriptor,
                                     "ListPodSandbox", buf, len, list_pod_sandbox_from_pb, ret,
                                     err);
}

static int list_containers_from_pb(struct kc_arena *a, const ProtobufCMessage *m, void *out,
                                   struct kc_runtime_error *err)
{
        const Runtime__V1__ListContainersResponse *resp = (const void *)m;

        return LIST_RESULT_FROM_PB(a, resp->containers, resp->n_containers, container_from_pb,
                                   (struct kc_container_list *)out, err);
}

int kc_test_cri_unpack_list_containers_pbc(const uint8_t *buf, size_t len,
                                           struct kc_container_list *ret,
                                           struct kc_runtime_error *err)
{
        return kc__cri_unpack_result(&runtime__v1__list_containers_response__descriptor,
                                     "ListContainers", buf, len, list_containers_from_pb, ret, err);
}

static int container_status_result_from_pb(struct kc_arena *a, const ProtobufCMessage *m, void *out,
                                           struct kc_runtime_error *err)
{
        const Runtime__V1__ContainerStatusResponse *resp = (const void *)m;

        return STATUS_RESULT_FROM_PB(a, resp->status, "ContainerStatus", container_status_verify,
                                     kc__cri_container_status_from_pb,
                                     (struct kc_container_status_result *)out, err);
}

int kc_test_cri_unpack_container_status_pbc(const uint8_t *buf, size_t len,
                                            struct kc_container_status_result *ret,
                                            struct kc_runtime_error *err)
{
        return kc__cri_unpack_result(&runtime__v1__container_status_response__descriptor,
                                     "ContainerStatus", buf, len, container_status_result_from_pb,
                                     ret, err);
}
