/* SPDX-License-Identifier: Apache-2.0 */
/*
 * List memos (runtime/cri/list_memo.c, issue 18): a list response decoded
 * through a memo equals the full decode, item for item; only the items
 * whose bytes the last response lacked are decoded; an unchanged response
 * is answered with the last result itself, also when only the order of its
 * items or of their map entries changed (containerd 1.6); malformed bytes
 * are refused as the full decode refuses them; a copied item keeps its
 * listing token and a decoded one gets a new one; and the runtime manager
 * answers a relist over such a listing with its last pods, without grouping
 * the listing again, whatever call came in between (F-PLEG-02).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/arena.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "cri/internal.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/manager.h"
#include "runtime/runtime_service.h"
#include "internal.h"

#define N_CTRS 6

/* A node's containers as a runtime lists them; tests edit them between packs. */
struct listing {
        Runtime__V1__Container c[N_CTRS];
        Runtime__V1__Container *cp[N_CTRS];
        Runtime__V1__ContainerMetadata md[N_CTRS];
        Runtime__V1__ImageSpec img[N_CTRS];
        Runtime__V1__Container__LabelsEntry lab[N_CTRS][2];
        Runtime__V1__Container__LabelsEntry *labp[N_CTRS][2];
        Runtime__V1__Container__AnnotationsEntry ann[N_CTRS];
        Runtime__V1__Container__AnnotationsEntry *annp[N_CTRS];
        char ids[N_CTRS][16], uids[N_CTRS][16];
        Runtime__V1__ListContainersResponse resp;
};

static void listing_init(struct listing *l)
{
        size_t i, j;

        memset(l, 0, sizeof(*l));
        l->resp = (Runtime__V1__ListContainersResponse)RUNTIME__V1__LIST_CONTAINERS_RESPONSE__INIT;
        for (i = 0; i < N_CTRS; i++) {
                snprintf(l->ids[i], sizeof(l->ids[i]), "ctr-%zu", i);
                snprintf(l->uids[i], sizeof(l->uids[i]), "uid-%zu", i / 2);
                l->md[i] = (Runtime__V1__ContainerMetadata)RUNTIME__V1__CONTAINER_METADATA__INIT;
                l->md[i].name = i % 2 ? "sidecar" : "app";
                l->md[i].attempt = (uint32_t)i;
                l->img[i] = (Runtime__V1__ImageSpec)RUNTIME__V1__IMAGE_SPEC__INIT;
                l->img[i].image = "busybox:1.36";
                for (j = 0; j < 2; j++) {
                        l->lab[i][j] = (Runtime__V1__Container__LabelsEntry)
                                RUNTIME__V1__CONTAINER__LABELS_ENTRY__INIT;
                        l->labp[i][j] = &l->lab[i][j];
                }
                l->lab[i][0].key = KC_LABEL_POD_UID;
                l->lab[i][0].value = l->uids[i];
                l->lab[i][1].key = KC_LABEL_CONTAINER_NAME;
                l->lab[i][1].value = l->md[i].name;
                l->ann[i] = (Runtime__V1__Container__AnnotationsEntry)
                        RUNTIME__V1__CONTAINER__ANNOTATIONS_ENTRY__INIT;
                l->ann[i].key = KC_ANNOTATION_CONTAINER_HASH;
                l->ann[i].value = "1a2b3c";
                l->annp[i] = &l->ann[i];
                l->c[i] = (Runtime__V1__Container)RUNTIME__V1__CONTAINER__INIT;
                l->c[i].id = l->ids[i];
                l->c[i].pod_sandbox_id = l->uids[i];
                l->c[i].metadata = &l->md[i];
                l->c[i].image = &l->img[i];
                l->c[i].image_ref = "sha256:0123";
                l->c[i].state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
                l->c[i].created_at = 1000 + (int64_t)i;
                l->c[i].n_labels = 2;
                l->c[i].labels = l->labp[i];
                l->c[i].n_annotations = i == 3 ? 0 : 1; /* one without annotations */
                l->c[i].annotations = l->annp + i;
                l->cp[i] = &l->c[i];
        }
        l->resp.n_containers = N_CTRS;
        l->resp.containers = l->cp;
}

/* The packed response (malloc'd). */
static uint8_t *listing_pack(struct listing *l, size_t *ret_len)
{
        size_t n = protobuf_c_message_get_packed_size(&l->resp.base);
        uint8_t *b = malloc(n + 1);

        assert_non_null(b);
        assert_int_equal(protobuf_c_message_pack(&l->resp.base, b), n);
        *ret_len = n;
        return b;
}

static void assert_labels_equal(const struct kc_label *a, size_t na, const struct kc_label *b,
                                size_t nb)
{
        size_t i;

        assert_int_equal(na, nb);
        for (i = 0; i < na; i++) {
                assert_string_equal(a[i].key, b[i].key);
                assert_string_equal(a[i].value, b[i].value);
        }
}

static void assert_opt_str_equal(const char *a, const char *b)
{
        if (!a || !b)
                assert_ptr_equal(a, b);
        else
                assert_string_equal(a, b);
}

/* Decodes @buf both ways and checks that the memo's result is the full decode's. */
static void check_same_as_full(const struct kc_container_list *got, const uint8_t *buf, size_t len)
{
        struct kc_container_list want = { 0 };
        size_t i;

        assert_int_equal(kc__cri_unpack_list_containers(buf, len, &want, NULL), 0);
        assert_int_equal(got->n, want.n);
        for (i = 0; i < want.n; i++) {
                const struct kc_cri_container *g = &got->items[i], *w = &want.items[i];

                assert_string_equal(g->id, w->id);
                assert_string_equal(g->pod_sandbox_id, w->pod_sandbox_id);
                assert_string_equal(g->metadata.name, w->metadata.name);
                assert_int_equal(g->metadata.attempt, w->metadata.attempt);
                assert_string_equal(g->image, w->image);
                assert_string_equal(g->image_ref, w->image_ref);
                assert_int_equal(g->state, w->state);
                assert_int_equal(g->created_at, w->created_at);
                assert_opt_str_equal(g->reason, w->reason);
                assert_opt_str_equal(g->message, w->message);
                assert_labels_equal(g->labels, g->n_labels, w->labels, w->n_labels);
                assert_labels_equal(g->annotations, g->n_annotations, w->annotations,
                                    w->n_annotations);
        }
        kc_runtime_result_done(&want);
}

/* One decode through @m of @l as it is now; checks it against the full decode. */
static void decode(struct kc_cri_list_memo *m, struct listing *l, struct kc_container_list *ret)
{
        size_t len;
        _cleanup_free_ uint8_t *buf = listing_pack(l, &len);

        assert_int_equal(kc__cri_unpack_list_containers_memo(m, buf, len, ret, NULL), 0);
        check_same_as_full(ret, buf, len);
}

static void test_memo_decodes_only_new_bytes(void **state)
{
        _cleanup_(kc__cri_list_memo_freep) struct kc_cri_list_memo *m = NULL;
        struct listing l;
        struct kc_container_list a = { 0 }, b = { 0 };

        (void)state;
        listing_init(&l);
        assert_int_equal(kc__cri_list_memo_new(KC_CRI_LIST_CONTAINERS, &m), 0);
        decode(m, &l, &a);
        assert_int_equal(kc__cri_list_memo_decoded(m), N_CTRS);
        assert_int_equal(kc__cri_list_memo_size(m), N_CTRS);

        /* One container exits: only it is decoded; the others are copies. */
        l.c[2].state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED;
        decode(m, &l, &b);
        assert_int_equal(kc__cri_list_memo_decoded(m), 1);
        assert_int_equal(b.items[2].state, KC_CONTAINER_STATE_EXITED);
        assert_ptr_not_equal(b.items, a.items);
        /* A copy keeps its item's token (its strings elsewhere); the decoded one has a new one. */
        assert_non_null(a.tokens);
        assert_non_null(b.tokens);
        for (size_t i = 0; i < N_CTRS; i++) {
                assert_true(a.tokens[i] != 0 && b.tokens[i] != 0);
                if (i == 2) {
                        assert_true(b.tokens[i] != a.tokens[i]);
                        continue;
                }
                assert_true(b.tokens[i] == a.tokens[i]);
                assert_ptr_not_equal(b.items[i].id, a.items[i].id);
                for (size_t j = 0; j < N_CTRS; j++)
                        assert_true(j == i || a.tokens[j] != a.tokens[i]);
        }
        /* The first result does not depend on the memo's later state. */
        kc_runtime_result_done(&b);
        assert_string_equal(a.items[4].labels[0].value, "uid-2");
        kc_runtime_result_done(&a);

        /* The same items in another order (containerd lists from maps): the last result. */
        decode(m, &l, &a);
        l.cp[0] = &l.c[5];
        l.cp[5] = &l.c[0];
        {
                size_t len;
                _cleanup_free_ uint8_t *buf = listing_pack(&l, &len);

                assert_int_equal(kc__cri_unpack_list_containers_memo(m, buf, len, &b, NULL), 0);
        }
        assert_ptr_equal(b.items, a.items);
        assert_string_equal(b.items[0].id, "ctr-0");
        kc_runtime_result_done(&a);
        kc_runtime_result_done(&b);
        /* Another order and one change: items found by id, the changed one decoded. */
        l.c[1].state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED;
        decode(m, &l, &a);
        assert_int_equal(kc__cri_list_memo_decoded(m), 1);
        assert_string_equal(a.items[0].id, "ctr-5");
        kc_runtime_result_done(&a);

        /* One removed, one new. */
        l.resp.n_containers = N_CTRS - 1;
        decode(m, &l, &a);
        assert_int_equal(kc__cri_list_memo_size(m), N_CTRS - 1);
        kc_runtime_result_done(&a);
        l.c[0].id = "ctr-new";
        l.resp.n_containers = N_CTRS;
        decode(m, &l, &a);
        assert_int_equal(kc__cri_list_memo_decoded(m), 1);
        assert_string_equal(a.items[5].id, "ctr-new");
        kc_runtime_result_done(&a);
}

static void test_memo_shares_an_unchanged_result(void **state)
{
        _cleanup_(kc__cri_list_memo_freep) struct kc_cri_list_memo *m = NULL;
        struct listing l;
        struct kc_container_list a = { 0 }, b = { 0 };

        (void)state;
        listing_init(&l);
        assert_int_equal(kc__cri_list_memo_new(KC_CRI_LIST_CONTAINERS, &m), 0);
        decode(m, &l, &a);
        decode(m, &l, &b);
        assert_int_equal(kc__cri_list_memo_decoded(m), 0);
        assert_ptr_equal(b.items, a.items);
        assert_ptr_equal(b.arena, a.arena);
        assert_true(kc_arena_shared(a.arena));
        kc_runtime_result_done(&a);
        /* Still held by b and the memo: ASan sees any early free. */
        assert_string_equal(b.items[1].metadata.name, "sidecar");
        kc_runtime_result_done(&b);
        m = kc__cri_list_memo_free(m);
}

static void test_memo_refuses_malformed_bytes(void **state)
{
        _cleanup_(kc__cri_list_memo_freep) struct kc_cri_list_memo *m = NULL;
        struct kc_runtime_error err = { 0 };
        struct listing l;
        struct kc_container_list a = { 0 }, bad = { 0 };
        size_t len;
        _cleanup_free_ uint8_t *buf = NULL;
        static const uint8_t wrong_type[] = { 0x08, 0x01 }; /* field 1 as a varint */

        (void)state;
        listing_init(&l);
        assert_int_equal(kc__cri_list_memo_new(KC_CRI_LIST_CONTAINERS, &m), 0);
        decode(m, &l, &a);
        kc_runtime_result_done(&a);
        buf = listing_pack(&l, &len);
        assert_int_equal(kc__cri_unpack_list_containers_memo(m, buf, len - 3, &bad, &err), -EPROTO);
        assert_string_equal(err.message, "failed to decode ListContainers response");
        assert_null(bad.arena);
        assert_int_equal(
                kc__cri_unpack_list_containers_memo(m, wrong_type, sizeof(wrong_type), &bad, NULL),
                -EPROTO);
        /* The last good response is still the one remembered. */
        assert_int_equal(kc__cri_unpack_list_containers_memo(m, buf, len, &a, NULL), 0);
        assert_int_equal(kc__cri_list_memo_decoded(m), 0);
        kc_runtime_result_done(&a);
        /* An empty response is an empty list. */
        assert_int_equal(kc__cri_unpack_list_containers_memo(m, NULL, 0, &a, NULL), 0);
        assert_int_equal(a.n, 0);
        assert_null(a.items);
        kc_runtime_result_done(&a);
}

static void test_memo_sandboxes(void **state)
{
        _cleanup_(kc__cri_list_memo_freep) struct kc_cri_list_memo *m = NULL;
        Runtime__V1__PodSandboxMetadata md = RUNTIME__V1__POD_SANDBOX_METADATA__INIT;
        Runtime__V1__PodSandbox sb = RUNTIME__V1__POD_SANDBOX__INIT, *sbp[40];
        Runtime__V1__PodSandbox__LabelsEntry lab = RUNTIME__V1__POD_SANDBOX__LABELS_ENTRY__INIT;
        Runtime__V1__PodSandbox__LabelsEntry *labp[] = { &lab };
        Runtime__V1__ListPodSandboxResponse resp = RUNTIME__V1__LIST_POD_SANDBOX_RESPONSE__INIT;
        struct kc_pod_sandbox_list got = { 0 }, want = { 0 };
        struct kc_container_list wrong = { 0 };
        uint8_t buf[4096];
        size_t len, i;

        (void)state;
        md.name = "web";
        md.uid = "uid-1";
        md.namespace_ = "default";
        md.attempt = 2;
        lab.key = KC_LABEL_POD_UID;
        lab.value = "uid-1";
        sb.id = "sb-1";
        sb.metadata = &md;
        sb.state = RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY;
        sb.created_at = 42;
        sb.n_labels = 1;
        sb.labels = labp;
        /* Listed 40 times: every copy decodes, past the first array's room. */
        for (i = 0; i < KC_ELEMENTSOF(sbp); i++)
                sbp[i] = &sb;
        resp.n_items = KC_ELEMENTSOF(sbp);
        resp.items = sbp;
        len = protobuf_c_message_pack(&resp.base, buf);
        assert_int_equal(kc__cri_list_memo_new(KC_CRI_LIST_POD_SANDBOX, &m), 0);
        assert_int_equal(kc__cri_unpack_list_containers_memo(m, buf, len, &wrong, NULL), -EINVAL);
        assert_int_equal(kc__cri_unpack_list_pod_sandbox_memo(m, buf, len, &got, NULL), 0);
        assert_int_equal(kc__cri_unpack_list_pod_sandbox(buf, len, &want, NULL), 0);
        assert_int_equal(got.n, KC_ELEMENTSOF(sbp));
        for (i = 0; i < KC_ELEMENTSOF(sbp); i++) {
                assert_string_equal(got.items[i].id, want.items[i].id);
                assert_string_equal(got.items[i].metadata.name, "web");
                assert_string_equal(got.items[i].metadata.uid, "uid-1");
                assert_string_equal(got.items[i].metadata.namespace, "default");
                assert_int_equal(got.items[i].metadata.attempt, 2);
                assert_int_equal(got.items[i].state, want.items[i].state);
                assert_int_equal(got.items[i].created_at, 42);
                assert_null(got.items[i].ip);
                assert_labels_equal(got.items[i].labels, got.items[i].n_labels,
                                    want.items[i].labels, want.items[i].n_labels);
                /* The memo's decodes carry tokens (each its own); the plain decode has none. */
                assert_true(got.tokens[i] != 0);
                assert_true(i == 0 || got.tokens[i] != got.tokens[i - 1]);
        }
        assert_null(want.tokens);
        kc_runtime_result_done(&got);
        kc_runtime_result_done(&want);
}

/* The labels @a, in any order, are @b. */
static void assert_labels_same_set(const struct kc_label *a, size_t na, const struct kc_label *b,
                                   size_t nb)
{
        size_t i, j;

        assert_int_equal(na, nb);
        for (i = 0; i < nb; i++) {
                for (j = 0; j < na; j++)
                        if (strcmp(a[j].key, b[i].key) == 0 && strcmp(a[j].value, b[i].value) == 0)
                                break;
                assert_true(j < na);
        }
}

/*
 * Packs @l and decodes it through @m, expecting another reference to @last's
 * result, which is the full decode but for the order of the map entries.
 */
static void expect_last(struct kc_cri_list_memo *m, struct listing *l,
                        const struct kc_container_list *last)
{
        struct kc_container_list b = { 0 }, want = { 0 };
        size_t len, i, j;
        _cleanup_free_ uint8_t *buf = listing_pack(l, &len);

        assert_int_equal(kc__cri_unpack_list_containers_memo(m, buf, len, &b, NULL), 0);
        assert_int_equal(kc__cri_list_memo_decoded(m), 0);
        assert_ptr_equal(b.items, last->items);
        assert_int_equal(kc__cri_unpack_list_containers(buf, len, &want, NULL), 0);
        assert_int_equal(b.n, want.n);
        for (i = 0; i < want.n; i++) {
                for (j = 0; j < b.n && strcmp(b.items[j].id, want.items[i].id) != 0; j++)
                        ;
                assert_true(j < b.n);
                assert_int_equal(b.items[j].state, want.items[i].state);
                assert_labels_same_set(b.items[j].labels, b.items[j].n_labels, want.items[i].labels,
                                       want.items[i].n_labels);
                assert_labels_same_set(b.items[j].annotations, b.items[j].n_annotations,
                                       want.items[i].annotations, want.items[i].n_annotations);
        }
        kc_runtime_result_done(&want);
        kc_runtime_result_done(&b);
}

/*
 * containerd 1.6 writes each item's labels and annotations from Go maps, in
 * another order on every call: the same items still (issue 18), but not a
 * map with a key twice, whose decode depends on the order.
 */
static void test_memo_map_entries_in_another_order(void **state)
{
        _cleanup_(kc__cri_list_memo_freep) struct kc_cri_list_memo *m = NULL;
        Runtime__V1__Container__LabelsEntry twin = RUNTIME__V1__CONTAINER__LABELS_ENTRY__INIT;
        struct listing l;
        struct kc_container_list a = { 0 };
        size_t i;

        (void)state;
        listing_init(&l);
        assert_int_equal(kc__cri_list_memo_new(KC_CRI_LIST_CONTAINERS, &m), 0);
        decode(m, &l, &a);
        /* Every item's labels swapped. */
        for (i = 0; i < N_CTRS; i++) {
                l.labp[i][0] = &l.lab[i][1];
                l.labp[i][1] = &l.lab[i][0];
        }
        expect_last(m, &l, &a);
        /* And the items in another order too. */
        l.cp[0] = &l.c[4];
        l.cp[4] = &l.c[0];
        expect_last(m, &l, &a);
        kc_runtime_result_done(&a);

        /* A changed value among swapped labels is a changed item. */
        listing_init(&l);
        decode(m, &l, &a);
        kc_runtime_result_done(&a);
        l.labp[1][0] = &l.lab[1][1];
        l.labp[1][1] = &l.lab[1][0];
        l.lab[1][0].value = "uid-other";
        decode(m, &l, &a);
        assert_int_equal(kc__cri_list_memo_decoded(m), 1);
        kc_runtime_result_done(&a);

        /* One key twice, in one order then the other: decoded each time. */
        listing_init(&l);
        twin.key = KC_LABEL_POD_UID;
        twin.value = "uid-twin";
        l.labp[0][1] = &twin;
        decode(m, &l, &a);
        kc_runtime_result_done(&a);
        l.labp[0][0] = &twin;
        l.labp[0][1] = &l.lab[0][0];
        decode(m, &l, &a);
        assert_int_equal(kc__cri_list_memo_decoded(m), 1);
        assert_string_equal(a.items[0].labels[0].value, "uid-twin");
        kc_runtime_result_done(&a);
}

#define N_PODS 4
#define N_LABELS 3

/*
 * A CRI service as containerd 1.6 answers: N_PODS pods of one sandbox and
 * one container each, packed on every call in another order, with each
 * item's label entries in another order too, and read through the list
 * memos as kc_cri reads them.
 */
struct permuting_cri {
        struct kc_cri_list_memo *sb_memo, *c_memo;
        unsigned calls;
        char sb_ids[N_PODS][16], c_ids[N_PODS][16], names[N_PODS][16], uids[N_PODS][16];
};

/* The label entries of pod @i (its container's with @ctr), rotated by @turn. */
static void permuted_labels(struct permuting_cri *f, size_t i, bool ctr, unsigned turn,
                            Runtime__V1__PodSandbox__LabelsEntry *e,
                            Runtime__V1__PodSandbox__LabelsEntry **ep)
{
        const char *kv[N_LABELS][2] = { { KC_LABEL_POD_UID, f->uids[i] },
                                        { KC_LABEL_POD_NAME, f->names[i] },
                                        { ctr ? KC_LABEL_CONTAINER_NAME : KC_LABEL_POD_NAMESPACE,
                                          ctr ? "app" : "default" } };

        for (size_t j = 0; j < N_LABELS; j++) {
                e[j] = (Runtime__V1__PodSandbox__LabelsEntry)
                        RUNTIME__V1__POD_SANDBOX__LABELS_ENTRY__INIT;
                e[j].key = (char *)kv[(j + turn) % N_LABELS][0];
                e[j].value = (char *)kv[(j + turn) % N_LABELS][1];
                ep[j] = &e[j];
        }
}

static int permuting_list_pod_sandbox(void *self, const struct kc_pod_sandbox_filter *filter,
                                      struct kc_pod_sandbox_list *ret, struct kc_runtime_error *err)
{
        struct permuting_cri *f = self;
        Runtime__V1__PodSandbox sb[N_PODS], *sbp[N_PODS];
        Runtime__V1__PodSandboxMetadata md[N_PODS];
        Runtime__V1__PodSandbox__LabelsEntry lab[N_PODS][N_LABELS], *labp[N_PODS][N_LABELS];
        Runtime__V1__ListPodSandboxResponse resp = RUNTIME__V1__LIST_POD_SANDBOX_RESPONSE__INIT;
        unsigned turn = f->calls++;
        uint8_t buf[4096];

        assert_true(!filter || (filter->state < 0 && !filter->id && !filter->n_label_selector));
        for (size_t i = 0; i < N_PODS; i++) {
                size_t k = (i + turn) % N_PODS;

                md[k] = (Runtime__V1__PodSandboxMetadata)RUNTIME__V1__POD_SANDBOX_METADATA__INIT;
                md[k].name = f->names[i];
                md[k].uid = f->uids[i];
                md[k].namespace_ = "default";
                sb[k] = (Runtime__V1__PodSandbox)RUNTIME__V1__POD_SANDBOX__INIT;
                sb[k].id = f->sb_ids[i];
                sb[k].metadata = &md[k];
                sb[k].state = RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY;
                sb[k].created_at = 100 + (int64_t)i;
                permuted_labels(f, i, false, turn + (unsigned)i, lab[k], labp[k]);
                sb[k].n_labels = N_LABELS;
                sb[k].labels = labp[k];
                sbp[k] = &sb[k];
        }
        resp.n_items = N_PODS;
        resp.items = sbp;
        assert_true(protobuf_c_message_get_packed_size(&resp.base) <= sizeof(buf));
        return kc__cri_unpack_list_pod_sandbox_memo(
                f->sb_memo, buf, protobuf_c_message_pack(&resp.base, buf), ret, err);
}

static int permuting_list_containers(void *self, const struct kc_container_filter *filter,
                                     struct kc_container_list *ret, struct kc_runtime_error *err)
{
        struct permuting_cri *f = self;
        Runtime__V1__Container c[N_PODS], *cp[N_PODS];
        Runtime__V1__ContainerMetadata md = RUNTIME__V1__CONTAINER_METADATA__INIT;
        Runtime__V1__ImageSpec img = RUNTIME__V1__IMAGE_SPEC__INIT;
        /* The same layout as the sandboxes' entries (key 1, value 2). */
        Runtime__V1__PodSandbox__LabelsEntry lab[N_PODS][N_LABELS], *labp[N_PODS][N_LABELS];
        Runtime__V1__ListContainersResponse resp = RUNTIME__V1__LIST_CONTAINERS_RESPONSE__INIT;
        unsigned turn = f->calls++;
        uint8_t buf[4096];

        assert_true(!filter || (filter->state < 0 && !filter->id && !filter->pod_sandbox_id &&
                                !filter->n_label_selector));
        md.name = "app";
        img.image = "busybox";
        for (size_t i = 0; i < N_PODS; i++) {
                size_t k = (i + 3 * turn) % N_PODS;

                c[k] = (Runtime__V1__Container)RUNTIME__V1__CONTAINER__INIT;
                c[k].id = f->c_ids[i];
                c[k].pod_sandbox_id = f->sb_ids[i];
                c[k].metadata = &md;
                c[k].image = &img;
                c[k].image_ref = "sha256:0123";
                c[k].state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
                c[k].created_at = 200 + (int64_t)i;
                permuted_labels(f, i, true, turn + 2 * (unsigned)i, lab[k], labp[k]);
                c[k].n_labels = N_LABELS;
                c[k].labels = (Runtime__V1__Container__LabelsEntry **)labp[k];
                cp[k] = &c[k];
        }
        resp.n_containers = N_PODS;
        resp.containers = cp;
        assert_true(protobuf_c_message_get_packed_size(&resp.base) <= sizeof(buf));
        return kc__cri_unpack_list_containers_memo(
                f->c_memo, buf, protobuf_c_message_pack(&resp.base, buf), ret, err);
}

static const struct kc_runtime_service_ops permuting_ops = {
        .list_pod_sandbox = permuting_list_pod_sandbox,
        .list_containers = permuting_list_containers,
};

/*
 * A relist over containerd 1.6 with nothing changed hands back the last
 * pods without grouping the listing again, also across a raw listing in
 * between (bench_cri_relist's), and the pods are the ones a fresh manager
 * builds.
 */
static void test_manager_relist_over_permuted_listings(void **state)
{
        _cleanup_(kc_clock_freep) struct kc_clock *clock = NULL;
        struct permuting_cri f = { 0 };
        struct kc_runtime_service svc = { &permuting_ops, &f };
        struct kc_runtime_manager *mgr = NULL, *fresh = NULL;
        struct kc_pod_list a = { 0 }, b = { 0 }, want = { 0 };
        struct kc_pod_sandbox_list sl = { 0 };
        struct kc_container_list cl = { 0 };
        size_t i, round;

        (void)state;
        for (i = 0; i < N_PODS; i++) {
                snprintf(f.sb_ids[i], sizeof(f.sb_ids[i]), "sb-%zu", i);
                snprintf(f.c_ids[i], sizeof(f.c_ids[i]), "c-%zu", i);
                snprintf(f.names[i], sizeof(f.names[i]), "pod-%zu", i);
                snprintf(f.uids[i], sizeof(f.uids[i]), "uid-%zu", i);
        }
        assert_int_equal(kc__cri_list_memo_new(KC_CRI_LIST_POD_SANDBOX, &f.sb_memo), 0);
        assert_int_equal(kc__cri_list_memo_new(KC_CRI_LIST_CONTAINERS, &f.c_memo), 0);
        assert_int_equal(kc_fake_clock_new(&clock, 0), 0);
        assert_int_equal(kc_runtime_manager_new(svc, clock, &mgr), 0);
        assert_int_equal(kc_runtime_manager_get_pods(mgr, true, &a, NULL), 0);
        assert_int_equal(a.n, N_PODS);
        for (round = 1; round <= 3; round++) {
                /* The raw lists, released before the relist. */
                assert_int_equal(svc.ops->list_pod_sandbox(&f, NULL, &sl, NULL), 0);
                assert_int_equal(svc.ops->list_containers(&f, NULL, &cl, NULL), 0);
                kc_runtime_result_done(&sl);
                kc_runtime_result_done(&cl);
                assert_int_equal(kc_runtime_manager_get_pods(mgr, true, &b, NULL), 0);
                assert_int_equal(kc__runtime_manager_listing_hits(mgr, true), round);
                assert_int_equal(kc__cri_list_memo_decoded(f.sb_memo), 0);
                assert_int_equal(kc__cri_list_memo_decoded(f.c_memo), 0);
                assert_int_equal(b.n, a.n);
                for (i = 0; i < a.n; i++)
                        assert_ptr_equal(b.pods[i], a.pods[i]);
                kc_pod_list_done(&b);
        }
        /* What a manager with nothing cached builds from the same listing. */
        assert_int_equal(kc_runtime_manager_new(svc, clock, &fresh), 0);
        assert_int_equal(kc_runtime_manager_get_pods(fresh, true, &want, NULL), 0);
        assert_int_equal(want.n, a.n);
        for (i = 0; i < a.n; i++) {
                assert_string_equal(want.pods[i]->id, a.pods[i]->id);
                assert_string_equal(want.pods[i]->name, a.pods[i]->name);
                assert_int_equal(want.pods[i]->n_containers, a.pods[i]->n_containers);
                assert_string_equal(want.pods[i]->containers[0].id, a.pods[i]->containers[0].id);
        }
        kc_pod_list_done(&want);
        kc_pod_list_done(&a);
        kc_runtime_manager_free(fresh);
        kc_runtime_manager_free(mgr);
        kc__cri_list_memo_free(f.sb_memo);
        kc__cri_list_memo_free(f.c_memo);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_memo_decodes_only_new_bytes),
                cmocka_unit_test(test_memo_shares_an_unchanged_result),
                cmocka_unit_test(test_memo_refuses_malformed_bytes),
                cmocka_unit_test(test_memo_sandboxes),
                cmocka_unit_test(test_memo_map_entries_in_another_order),
                cmocka_unit_test(test_manager_relist_over_permuted_listings),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
