/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_cri_decode: the protobuf decode of every CRI response the client
 * parses (runtime/cri/convert.c, kc__cri_unpack_*), and the
 * GetContainerEvents path (kc__cri_events_on_message) that the gRPC stream
 * drives. Byte 0 picks the decoder; the rest is the message. Each result is
 * walked field by field (so that ASan sees every pointer the callers would
 * follow) and freed as the callers free it; errors must name a code and a
 * message.
 *
 * The four decoders a relist runs most (PodSandboxStatus, ListPodSandbox,
 * ListContainers, ContainerStatus) are the hand-written ones of wire.c:
 * each input is also decoded by their protobuf-c twins (cri_pbc_oracle.c),
 * and any difference in the return value, the error or the result aborts
 * (cri_wire_diff.h).
 *
 * The events path (byte 0 = 11) cuts the rest into messages, each
 * [length: 2 bytes big-endian][bytes], and hands them in turn to one events
 * handle, as the stream would.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "cri/internal.h"
#include "cri_wire_diff.h"
#include "runtime/cri.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"

enum {
        SEL_VERSION,
        SEL_STATUS,
        SEL_RUN_POD_SANDBOX,
        SEL_POD_SANDBOX_STATUS,
        SEL_LIST_POD_SANDBOX,
        SEL_CREATE_CONTAINER,
        SEL_LIST_CONTAINERS,
        SEL_CONTAINER_STATUS,
        SEL_IMAGE_STATUS,
        SEL_PULL_IMAGE,
        SEL_CONTAINER_EVENT,
        SEL_EVENTS_STREAM,
        SEL_EMPTY,
        SEL_EXEC_SYNC,
        _SEL_MAX,
};

static volatile size_t sink;

/* Reads the whole string: a dangling or unterminated one trips ASan. */
static void touch(const char *s)
{
        if (s)
                sink += strlen(s);
}

static void touch_required(const char *s)
{
        if (!s)
                abort(); /* the decoders promise strings, "" at least, where kubelet needs one */
        touch(s);
}

static void touch_labels(const struct kc_label *l, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                touch(l[i].key);
                touch(l[i].value);
        }
}

static void walk_sandbox(const struct kc_pod_sandbox *s)
{
        touch_required(s->id);
        touch(s->metadata.name);
        touch(s->metadata.uid);
        touch(s->metadata.namespace);
        touch(s->ip);
        for (size_t i = 0; i < s->n_additional_ips; i++)
                touch(s->additional_ips[i]);
        touch_labels(s->labels, s->n_labels);
        touch_labels(s->annotations, s->n_annotations);
        if ((unsigned)s->state > 64)
                abort();
}

static void walk_container(const struct kc_cri_container *c)
{
        touch(c->id);
        touch(c->pod_sandbox_id);
        touch(c->metadata.name);
        touch(c->image);
        touch(c->image_ref);
        touch(c->reason);
        touch(c->message);
        touch_labels(c->labels, c->n_labels);
        touch_labels(c->annotations, c->n_annotations);
        if ((unsigned)c->state > 64)
                abort();
}

static void walk_event(void *ud, const struct kc_container_event *ev)
{
        (void)ud;
        touch(ev->container_id);
        touch(ev->pod_sandbox_id);
        touch(ev->pod_uid);
        touch(ev->pod_name);
        touch(ev->pod_namespace);
        if (!kc_container_event_type_to_string(ev->type))
                abort();
        if (ev->sandbox)
                walk_sandbox(ev->sandbox);
        for (size_t i = 0; i < ev->n_containers; i++)
                walk_container(&ev->containers[i]);
}

static void check_error(int r, const struct kc_runtime_error *err)
{
        if (r >= 0)
                return;
        if (err->code == KC_RUNTIME_OK || !memchr(err->message, '\0', sizeof(err->message)) ||
            !err->message[0]) {
                fprintf(stderr, "r=%d without a proper error (code %d)\n", r, (int)err->code);
                abort();
        }
}

struct stream_state {
        int n_close;
};

static void on_close(void *ud, int r, const struct kc_runtime_error *err)
{
        struct stream_state *st = ud;

        st->n_close++;
        if (st->n_close > 1)
                abort(); /* on_close runs once */
        check_error(r, err);
}

static void events_stream(const uint8_t *p, size_t n)
{
        struct stream_state st = { 0 };
        struct kc_cri_events *e = NULL;
        struct kc_runtime_error err = { 0 };

        if (kc__cri_events_new(walk_event, on_close, &st, &e) < 0)
                return;
        while (n >= 2) {
                size_t len = (size_t)p[0] << 8 | p[1];

                p += 2;
                n -= 2;
                if (len > n)
                        len = n;
                kc__cri_events_on_message(e, p, len);
                p += len;
                n -= len;
        }
        /* The transport's end of the stream: a no-op when a bad message ended it already. */
        kc_runtime_error_set(&err, -ECONNREFUSED, KC_RUNTIME_UNAVAILABLE, "end of input");
        kc__cri_events_on_close(e, -ECONNREFUSED, &err);
        if (st.n_close != 1)
                abort();
        kc_cri_events_close(e);
}

/* wire.c's decoders against protobuf-c's on the same bytes. */
static void wire_diff(int sel, const uint8_t *p, size_t n)
{
        const char *d;

        switch (sel) {
        case SEL_POD_SANDBOX_STATUS:
                d = kc_cri_wire_diff(KC_CRI_WIRE_POD_SANDBOX_STATUS, p, n);
                break;
        case SEL_LIST_POD_SANDBOX:
                d = kc_cri_wire_diff(KC_CRI_WIRE_LIST_POD_SANDBOX, p, n);
                break;
        case SEL_LIST_CONTAINERS:
                d = kc_cri_wire_diff(KC_CRI_WIRE_LIST_CONTAINERS, p, n);
                break;
        case SEL_CONTAINER_STATUS:
                d = kc_cri_wire_diff(KC_CRI_WIRE_CONTAINER_STATUS, p, n);
                break;
        default:
                return;
        }
        if (d) {
                fprintf(stderr, "wire.c and protobuf-c differ: %s\n", d);
                abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct kc_runtime_error err = { 0 };
        const uint8_t *p;
        size_t n;
        int r = 0;

        if (size < 1)
                return 0;
        p = data + 1;
        n = size - 1;
        switch (data[0] % _SEL_MAX) {
        case SEL_VERSION: {
                struct kc_version_result v = { 0 };

                r = kc__cri_unpack_version(p, n, &v, &err);
                if (r == 0) {
                        touch(v.version);
                        touch(v.runtime_name);
                        touch(v.runtime_version);
                        touch(v.runtime_api_version);
                        kc_runtime_result_done(&v);
                }
                break;
        }
        case SEL_STATUS: {
                struct kc_runtime_status_result s = { 0 };

                r = kc__cri_unpack_status(p, n, &s, &err);
                if (r == 0) {
                        for (size_t i = 0; i < s.n_conditions; i++) {
                                touch(s.conditions[i].type);
                                touch(s.conditions[i].reason);
                                touch(s.conditions[i].message);
                        }
                        kc_runtime_result_done(&s);
                }
                break;
        }
        case SEL_RUN_POD_SANDBOX:
        case SEL_CREATE_CONTAINER:
        case SEL_PULL_IMAGE: {
                char *id = NULL;

                if (data[0] % _SEL_MAX == SEL_RUN_POD_SANDBOX)
                        r = kc__cri_unpack_run_pod_sandbox(p, n, "pod", &id, &err);
                else if (data[0] % _SEL_MAX == SEL_CREATE_CONTAINER)
                        r = kc__cri_unpack_create_container(p, n, NULL, &id, &err);
                else
                        r = kc__cri_unpack_pull_image(p, n, "busybox", &id, &err);
                if (r == 0) {
                        touch_required(id);
                        if (!id[0])
                                abort(); /* an empty id is an error */
                }
                free(id);
                break;
        }
        case SEL_POD_SANDBOX_STATUS: {
                struct kc_pod_sandbox_status_result s = { 0 };

                r = kc__cri_unpack_pod_sandbox_status(p, n, &s, &err);
                if (r == 0) {
                        walk_sandbox(&s.status);
                        kc_runtime_result_done(&s);
                }
                break;
        }
        case SEL_LIST_POD_SANDBOX: {
                struct kc_pod_sandbox_list l = { 0 };

                r = kc__cri_unpack_list_pod_sandbox(p, n, &l, &err);
                if (r == 0) {
                        for (size_t i = 0; i < l.n; i++)
                                walk_sandbox(&l.items[i]);
                        kc_runtime_result_done(&l);
                }
                break;
        }
        case SEL_LIST_CONTAINERS: {
                struct kc_container_list l = { 0 };

                r = kc__cri_unpack_list_containers(p, n, &l, &err);
                if (r == 0) {
                        for (size_t i = 0; i < l.n; i++)
                                walk_container(&l.items[i]);
                        kc_runtime_result_done(&l);
                }
                break;
        }
        case SEL_CONTAINER_STATUS: {
                struct kc_container_status_result s = { 0 };

                r = kc__cri_unpack_container_status(p, n, &s, &err);
                if (r == 0) {
                        walk_container(&s.status);
                        kc_runtime_result_done(&s);
                }
                break;
        }
        case SEL_IMAGE_STATUS: {
                struct kc_image_status_result s = { 0 };

                r = kc__cri_unpack_image_status(p, n, &s, &err);
                if (r == 0 && s.found) {
                        touch_required(s.image.id);
                        for (size_t i = 0; i < s.image.n_repo_tags; i++)
                                touch(s.image.repo_tags[i]);
                        for (size_t i = 0; i < s.image.n_repo_digests; i++)
                                touch(s.image.repo_digests[i]);
                }
                if (r == 0)
                        kc_runtime_result_done(&s);
                break;
        }
        case SEL_CONTAINER_EVENT: {
                struct kc_arena *a = NULL;
                struct kc_container_event ev;

                if (kc_arena_new(&a) < 0)
                        return 0;
                r = kc__cri_unpack_container_event(p, n, a, &ev, &err);
                if (r == 0)
                        walk_event(NULL, &ev);
                kc_arena_free(a);
                break;
        }
        case SEL_EVENTS_STREAM:
                events_stream(p, n);
                break;
        case SEL_EXEC_SYNC: {
                struct kc_exec_sync_result x = { 0 };

                r = kc__cri_unpack_exec_sync(p, n, &x, &err);
                if (r == 0) {
                        /* NUL-terminated after exactly n bytes, whatever they hold. */
                        if (!x.out || !x.err || x.out[x.n_out] || x.err[x.n_err])
                                abort();
                        sink += x.n_out + x.n_err + (size_t)x.exit_code;
                        kc_exec_sync_result_done(&x);
                }
                break;
        }
        case SEL_EMPTY:
                r = kc__cri_unpack_empty(&runtime__v1__stop_container_response__descriptor,
                                         "StopContainer", p, n, &err);
                break;
        }
        check_error(r, &err);
        wire_diff(data[0] % _SEL_MAX, p, n);
        return 0;
}
