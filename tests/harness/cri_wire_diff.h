/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The hand-written CRI decoders (runtime/cri/wire.c) against their
 * protobuf-c twins (cri_pbc_oracle.c, *_pbc): the same bytes must give the same
 * return value, the same error, and results equal field by field. Shared by
 * tests/unit/runtime/test_cri_wire.c and tests/fuzz/fuzz_cri_decode.c.
 *
 * kc_cri_wire_diff(sel, buf, len) returns NULL when both agree, else a
 * static description of the first difference.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cri/internal.h"
#include "cri_pbc_oracle.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"

enum kc_cri_wire_sel {
        KC_CRI_WIRE_POD_SANDBOX_STATUS,
        KC_CRI_WIRE_LIST_POD_SANDBOX,
        KC_CRI_WIRE_LIST_CONTAINERS,
        KC_CRI_WIRE_CONTAINER_STATUS,
        KC_CRI_WIRE_SEL_MAX,
};

static char kc_cri_wire_diff_buf[2 * KC_RUNTIME_ERROR_MAX + 64];

static inline bool kc_cri_wire_str_eq(const char *a, const char *b)
{
        return a == b || (a && b && strcmp(a, b) == 0);
}

static inline bool kc_cri_wire_labels_eq(const struct kc_label *a, size_t na,
                                         const struct kc_label *b, size_t nb)
{
        if (na != nb || (na && (!a || !b)))
                return false;
        for (size_t i = 0; i < na; i++)
                if (!kc_cri_wire_str_eq(a[i].key, b[i].key) ||
                    !kc_cri_wire_str_eq(a[i].value, b[i].value))
                        return false;
        return true;
}

static inline const char *kc_cri_wire_sandbox_diff(const struct kc_pod_sandbox *a,
                                                   const struct kc_pod_sandbox *b)
{
        if (!kc_cri_wire_str_eq(a->id, b->id))
                return "sandbox id";
        if (!kc_cri_wire_str_eq(a->metadata.name, b->metadata.name) ||
            !kc_cri_wire_str_eq(a->metadata.uid, b->metadata.uid) ||
            !kc_cri_wire_str_eq(a->metadata.namespace, b->metadata.namespace) ||
            a->metadata.attempt != b->metadata.attempt)
                return "sandbox metadata";
        if (a->state != b->state || a->created_at != b->created_at)
                return "sandbox state or created_at";
        if (!kc_cri_wire_str_eq(a->ip, b->ip) || a->n_additional_ips != b->n_additional_ips)
                return "sandbox ip";
        for (size_t i = 0; i < a->n_additional_ips; i++)
                if (!kc_cri_wire_str_eq(a->additional_ips[i], b->additional_ips[i]))
                        return "sandbox additional ip";
        if (!kc_cri_wire_labels_eq(a->labels, a->n_labels, b->labels, b->n_labels))
                return "sandbox labels";
        if (!kc_cri_wire_labels_eq(a->annotations, a->n_annotations, b->annotations,
                                   b->n_annotations))
                return "sandbox annotations";
        return NULL;
}

static inline const char *kc_cri_wire_container_diff(const struct kc_cri_container *a,
                                                     const struct kc_cri_container *b)
{
        if (!kc_cri_wire_str_eq(a->id, b->id) ||
            !kc_cri_wire_str_eq(a->pod_sandbox_id, b->pod_sandbox_id))
                return "container id or sandbox id";
        if (!kc_cri_wire_str_eq(a->metadata.name, b->metadata.name) ||
            a->metadata.attempt != b->metadata.attempt)
                return "container metadata";
        if (!kc_cri_wire_str_eq(a->image, b->image) ||
            !kc_cri_wire_str_eq(a->image_ref, b->image_ref))
                return "container image";
        if (a->state != b->state || a->created_at != b->created_at ||
            a->started_at != b->started_at || a->finished_at != b->finished_at ||
            a->exit_code != b->exit_code)
                return "container state or times";
        if (!kc_cri_wire_str_eq(a->reason, b->reason) ||
            !kc_cri_wire_str_eq(a->message, b->message) ||
            !kc_cri_wire_str_eq(a->log_path, b->log_path))
                return "container reason, message or log path";
        if (!kc_cri_wire_labels_eq(a->labels, a->n_labels, b->labels, b->n_labels))
                return "container labels";
        if (!kc_cri_wire_labels_eq(a->annotations, a->n_annotations, b->annotations,
                                   b->n_annotations))
                return "container annotations";
        if (a->n_mounts != b->n_mounts)
                return "container mount count";
        for (size_t i = 0; i < a->n_mounts; i++)
                if (!kc_cri_wire_str_eq(a->mounts[i].container_path, b->mounts[i].container_path) ||
                    !kc_cri_wire_str_eq(a->mounts[i].host_path, b->mounts[i].host_path) ||
                    a->mounts[i].readonly != b->mounts[i].readonly)
                        return "container mount";
        return NULL;
}

/* Both decoders on @buf as the response @sel picks; NULL when they agree. */
static inline const char *kc_cri_wire_diff(enum kc_cri_wire_sel sel, const uint8_t *buf, size_t len)
{
        struct kc_runtime_error ea = { 0 }, eb = { 0 };
        const char *d = NULL;
        int ra, rb;

        switch (sel) {
        case KC_CRI_WIRE_POD_SANDBOX_STATUS: {
                struct kc_pod_sandbox_status_result a = { 0 }, b = { 0 };

                ra = kc__cri_unpack_pod_sandbox_status(buf, len, &a, &ea);
                rb = kc_test_cri_unpack_pod_sandbox_status_pbc(buf, len, &b, &eb);
                if (ra == 0 && rb == 0)
                        d = kc_cri_wire_sandbox_diff(&a.status, &b.status);
                kc_runtime_result_done(&a);
                kc_runtime_result_done(&b);
                break;
        }
        case KC_CRI_WIRE_LIST_POD_SANDBOX: {
                struct kc_pod_sandbox_list a = { 0 }, b = { 0 };

                ra = kc__cri_unpack_list_pod_sandbox(buf, len, &a, &ea);
                rb = kc_test_cri_unpack_list_pod_sandbox_pbc(buf, len, &b, &eb);
                if (ra == 0 && rb == 0 && a.n != b.n)
                        d = "item count";
                for (size_t i = 0; ra == 0 && rb == 0 && !d && i < a.n; i++)
                        d = kc_cri_wire_sandbox_diff(&a.items[i], &b.items[i]);
                kc_runtime_result_done(&a);
                kc_runtime_result_done(&b);
                break;
        }
        case KC_CRI_WIRE_LIST_CONTAINERS: {
                struct kc_container_list a = { 0 }, b = { 0 };

                ra = kc__cri_unpack_list_containers(buf, len, &a, &ea);
                rb = kc_test_cri_unpack_list_containers_pbc(buf, len, &b, &eb);
                if (ra == 0 && rb == 0 && a.n != b.n)
                        d = "item count";
                for (size_t i = 0; ra == 0 && rb == 0 && !d && i < a.n; i++)
                        d = kc_cri_wire_container_diff(&a.items[i], &b.items[i]);
                kc_runtime_result_done(&a);
                kc_runtime_result_done(&b);
                break;
        }
        default: {
                struct kc_container_status_result a = { 0 }, b = { 0 };

                ra = kc__cri_unpack_container_status(buf, len, &a, &ea);
                rb = kc_test_cri_unpack_container_status_pbc(buf, len, &b, &eb);
                if (ra == 0 && rb == 0)
                        d = kc_cri_wire_container_diff(&a.status, &b.status);
                kc_runtime_result_done(&a);
                kc_runtime_result_done(&b);
                break;
        }
        }
        if (ra != rb) {
                snprintf(kc_cri_wire_diff_buf, sizeof(kc_cri_wire_diff_buf),
                         "wire returned %d (%s), protobuf-c %d (%s)", ra, ea.message, rb,
                         eb.message);
                return kc_cri_wire_diff_buf;
        }
        if (ra < 0 && (ea.code != eb.code || strcmp(ea.message, eb.message) != 0)) {
                snprintf(kc_cri_wire_diff_buf, sizeof(kc_cri_wire_diff_buf),
                         "errors differ: \"%s\" against \"%s\"", ea.message, eb.message);
                return kc_cri_wire_diff_buf;
        }
        return d;
}
