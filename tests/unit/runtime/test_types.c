/* SPDX-License-Identifier: Apache-2.0 */
/* runtime value types: state names, kc_pod / kc_pod_status packing, equality, refcounts. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "internal.h"
#include "runtime/api_pod.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"

static void test_state_strings(void **state)
{
        (void)state;
        assert_string_equal(kc_container_state_to_string(KC_CONTAINER_STATE_CREATED), "created");
        assert_string_equal(kc_container_state_to_string(KC_CONTAINER_STATE_RUNNING), "running");
        assert_string_equal(kc_container_state_to_string(KC_CONTAINER_STATE_EXITED), "exited");
        assert_string_equal(kc_container_state_to_string(KC_CONTAINER_STATE_UNKNOWN), "unknown");
        assert_null(kc_container_state_to_string(_KC_CONTAINER_STATE_MAX));
        assert_null(kc_container_state_to_string(_KC_CONTAINER_STATE_INVALID));
        for (int s = 0; s < _KC_CONTAINER_STATE_MAX; s++)
                assert_int_equal(kc_container_state_from_string(kc_container_state_to_string(s)),
                                 s);
        assert_int_equal(kc_container_state_from_string("Running"), -EINVAL);
        assert_int_equal(kc_container_state_from_string(""), -EINVAL);
        assert_int_equal(kc_container_state_from_string(NULL), -EINVAL);
        assert_string_equal(kc_sandbox_state_to_string(KC_SANDBOX_STATE_READY), "SANDBOX_READY");
        assert_string_equal(kc_sandbox_state_to_string(KC_SANDBOX_STATE_NOTREADY),
                            "SANDBOX_NOTREADY");
        assert_null(kc_sandbox_state_to_string(_KC_SANDBOX_STATE_MAX));
}

static void test_error_set(void **state)
{
        struct kc_runtime_error err = { 0 };
        char big[KC_RUNTIME_ERROR_MAX * 2];

        (void)state;
        assert_int_equal(kc_runtime_error_set(&err, -ENOENT, KC_RUNTIME_NOT_FOUND, "x %d", 7),
                         -ENOENT);
        assert_int_equal(err.code, KC_RUNTIME_NOT_FOUND);
        assert_string_equal(err.message, "x 7");
        assert_int_equal(kc_runtime_error_set(NULL, -EIO, KC_RUNTIME_UNKNOWN, "y"), -EIO);
        memset(big, 'a', sizeof(big) - 1);
        big[sizeof(big) - 1] = 0;
        kc_runtime_error_set(&err, -EIO, KC_RUNTIME_UNKNOWN, "%s", big);
        assert_int_equal(strlen(err.message), KC_RUNTIME_ERROR_MAX - 1);
}

static void test_pod_round_trip(void **state)
{
        char id[] = "uid-1", name[] = "web", c1[] = "c1";
        struct kc_container ctrs[] = {
                { .id = c1,
                  .name = "app",
                  .image = "nginx",
                  .hash = 0xabc,
                  .state = KC_CONTAINER_STATE_RUNNING,
                  .created_at = 5 },
                { .id = "c2", .name = NULL, .image = NULL, .state = KC_CONTAINER_STATE_EXITED },
        };
        struct kc_container sbs[] = {
                { .id = "s1", .name = "POD", .state = KC_CONTAINER_STATE_RUNNING }
        };
        struct kc_pod t = { .id = id,
                            .name = name,
                            .namespace = NULL,
                            .created_at = 42,
                            .containers = ctrs,
                            .n_containers = 2,
                            .sandboxes = sbs,
                            .n_sandboxes = 1 };
        struct kc_pod *p = NULL, *q;

        (void)state;
        assert_int_equal(kc_pod_new(&t, &p), 0);
        /* Deep copy: the template can change afterwards. */
        id[0] = 'X';
        c1[0] = 'X';
        ctrs[0].state = KC_CONTAINER_STATE_UNKNOWN;
        assert_string_equal(p->id, "uid-1");
        assert_string_equal(p->name, "web");
        assert_null(p->namespace);
        assert_int_equal(p->created_at, 42);
        assert_int_equal(p->n_containers, 2);
        assert_string_equal(p->containers[0].id, "c1");
        assert_string_equal(p->containers[0].image, "nginx");
        assert_int_equal(p->containers[0].hash, 0xabc);
        assert_int_equal(p->containers[0].state, KC_CONTAINER_STATE_RUNNING);
        assert_int_equal(p->containers[0].created_at, 5);
        assert_null(p->containers[1].name);
        assert_null(p->containers[1].image);
        assert_int_equal(p->n_sandboxes, 1);
        assert_string_equal(p->sandboxes[0].id, "s1");
        /* Everything lives in the one allocation. */
        assert_true((const char *)p->containers[0].id > (const char *)p);
        assert_true((const char *)p->sandboxes > (const char *)p);

        q = kc_pod_ref(p);
        assert_ptr_equal(q, p);
        assert_null(kc_pod_unref(q));
        assert_string_equal(p->id, "uid-1");
        assert_null(kc_pod_unref(p));
        assert_null(kc_pod_unref(NULL));
        assert_null(kc_pod_ref(NULL));

        /* Empty pod. */
        assert_int_equal(kc_pod_new(&(struct kc_pod){ 0 }, &p), 0);
        assert_null(p->id);
        assert_int_equal(p->n_containers, 0);
        kc_pod_unref(p);
        assert_int_equal(kc_pod_new(NULL, &p), -EINVAL);
}

static struct kc_pod_status *make_status(int variant)
{
        const char *ips[] = { "10.0.0.1", "fd00::1" };
        struct kc_sandbox_status sbs[] = {
                { .id = "s1",
                  .name = "POD",
                  .namespace = "ns",
                  .uid = "u",
                  .attempt = 1,
                  .state = KC_SANDBOX_STATE_READY,
                  .created_at = 10,
                  .ip = "10.0.0.1" },
        };
        struct kc_container_status cs[] = {
                { .id = "c1",
                  .name = "app",
                  .state = KC_CONTAINER_STATE_EXITED,
                  .exit_code = 2,
                  .created_at = 1,
                  .started_at = 2,
                  .finished_at = 3,
                  .restart_count = 4,
                  .hash = 5,
                  .image = "img",
                  .image_ref = "ref",
                  .reason = "Error",
                  .message = "m" },
                { .id = "c2", .name = "side", .state = KC_CONTAINER_STATE_RUNNING },
        };
        struct kc_pod_status t = { .id = "u",
                                   .name = "pod",
                                   .namespace = "ns",
                                   .ips = ips,
                                   .n_ips = 2,
                                   .sandboxes = sbs,
                                   .n_sandboxes = 1,
                                   .containers = cs,
                                   .n_containers = 2,
                                   .timestamp = 99 };
        struct kc_pod_status *s = NULL;

        switch (variant) {
        case 1:
                cs[0].exit_code = 3;
                break;
        case 2:
                t.n_ips = 1;
                break;
        case 3:
                sbs[0].state = KC_SANDBOX_STATE_NOTREADY;
                break;
        case 4:
                cs[1].reason = "x";
                break;
        case 5:
                t.timestamp = 0;
                break;
        case 6:
                sbs[0].ip = NULL;
                break;
        }
        assert_int_equal(kc_pod_status_new(&t, &s), 0);
        return s;
}

/*
 * kc__pod_new_like (issue 18): a template with every string of an
 * earlier pod gives a pod with the template's numbers whose strings are
 * that pod's, the very pointers, kept alive by a reference to the block
 * they are in; a pod made like that one shares the same block, not a
 * chain. A template with one string of its own is packed as kc_pod_new()
 * does.
 */
static void test_pod_new_like(void **state)
{
        struct kc_container ctrs[] = {
                { .id = "c1", .name = "app", .image = "nginx", .hash = 1, .state = 1 },
                { .id = "c2", .name = "side", .image = NULL, .hash = 2, .state = 1 },
        };
        struct kc_container sbs[] = { { .id = "s1", .name = "POD", .state = 0 } };
        struct kc_pod t = { .id = "uid",
                            .name = "web",
                            .namespace = "ns",
                            .created_at = 7,
                            .containers = ctrs,
                            .n_containers = 2,
                            .sandboxes = sbs,
                            .n_sandboxes = 1 };
        struct kc_container like_ctrs[2], like_sbs[1];
        struct kc_pod *like = NULL, *p = NULL, *q = NULL, *r = NULL, *root;
        const char *root_c1;
        struct kc_pod tmpl;
        size_t k;

        (void)state;
        assert_int_equal(kc_pod_new(&t, &like), 0);
        root = like;
        root_c1 = like->containers[0].id;
        /* The numbers change, the strings are the earlier pod's own. */
        for (k = 0; k < 2; k++)
                like_ctrs[k] = (struct kc_container){ .id = like->containers[k].id,
                                                      .name = like->containers[k].name,
                                                      .image = like->containers[k].image,
                                                      .hash = 10 + k,
                                                      .state = 2,
                                                      .created_at = 20 + (int64_t)k };
        like_sbs[0] = (struct kc_container){ .id = like->sandboxes[0].id,
                                             .name = like->sandboxes[0].name,
                                             .state = 1,
                                             .created_at = 30 };
        tmpl = (struct kc_pod){ .id = like->id,
                                .name = like->name,
                                .namespace = like->namespace,
                                .created_at = 40,
                                .containers = like_ctrs,
                                .n_containers = 2,
                                .sandboxes = like_sbs,
                                .n_sandboxes = 1 };
        assert_int_equal(kc__pod_new_like(&tmpl, like, &p), 0);
        /* Another string: packed from the template. */
        like_ctrs[1].image = "busybox";
        assert_int_equal(kc__pod_new_like(&tmpl, like, &q), 0);
        like_ctrs[1].image = like->containers[1].image;
        for (k = 0; k < 2; k++) {
                assert_int_equal(p->containers[k].hash, 10 + k);
                assert_int_equal(p->containers[k].state, 2);
                assert_int_equal(p->containers[k].created_at, 20 + (int64_t)k);
                /* The earlier pod's strings themselves, not copies. */
                assert_ptr_equal(p->containers[k].id, like->containers[k].id);
                assert_ptr_equal(p->containers[k].name, like->containers[k].name);
                /* The template's entries are not the pod's. */
                assert_ptr_not_equal(&p->containers[k], &like_ctrs[k]);
        }
        assert_ptr_equal(p->id, like->id);
        assert_ptr_equal(p->sandboxes[0].id, like->sandboxes[0].id);
        assert_int_equal(p->created_at, 40);
        assert_int_equal(p->sandboxes[0].state, 1);
        assert_int_equal(p->sandboxes[0].created_at, 30);
        assert_null(p->containers[1].image);
        assert_string_equal(q->containers[1].image, "busybox");
        assert_ptr_not_equal(q->containers[0].id, like->containers[0].id);
        assert_int_equal(q->created_at, 40);
        /* The earlier pod goes; the new ones keep its strings (ASan: no use after free). */
        kc_pod_unref(like);
        assert_string_equal(p->id, "uid");
        assert_string_equal(p->name, "web");
        assert_string_equal(p->namespace, "ns");
        assert_string_equal(p->containers[0].id, "c1");
        assert_string_equal(p->containers[0].name, "app");
        assert_string_equal(p->containers[0].image, "nginx");
        assert_string_equal(p->containers[1].name, "side");
        assert_string_equal(p->sandboxes[0].id, "s1");
        assert_string_equal(p->sandboxes[0].name, "POD");
        assert_null(p->sandboxes[0].image);
        assert_string_equal(q->containers[0].id, "c1");
        /* Made like @p: the first pod's strings still, alive after @p goes too. */
        tmpl.containers = p->containers;
        tmpl.sandboxes = p->sandboxes;
        tmpl.created_at = 50;
        assert_int_equal(kc__pod_new_like(&tmpl, p, &r), 0);
        assert_ptr_equal(r->containers[0].id, root_c1);
        /* Not a chain of every pod made since: each holds the first one's block. */
        assert_ptr_equal(kc__pod_strings_block(r), kc__pod_strings_block(p));
        assert_ptr_equal(kc__pod_strings_block(p), root);
        assert_ptr_equal(kc__pod_strings_block(root), root);
        assert_int_equal(r->created_at, 50);
        assert_int_equal(r->containers[1].hash, 11);
        kc_pod_unref(p);
        assert_string_equal(r->containers[0].id, "c1");
        assert_string_equal(r->sandboxes[0].name, "POD");
        assert_string_equal(r->namespace, "ns");
        kc_pod_unref(r);
        kc_pod_unref(q);
}

static void test_status_round_trip_equal(void **state)
{
        struct kc_pod_status *a = make_status(0), *b = make_status(0), *d = NULL;

        (void)state;
        assert_ptr_not_equal(a, b);
        assert_string_equal(a->ips[1], "fd00::1");
        assert_string_equal(a->sandboxes[0].uid, "u");
        assert_int_equal(a->sandboxes[0].attempt, 1);
        assert_string_equal(a->containers[0].message, "m");
        assert_int_equal(a->containers[0].restart_count, 4);
        assert_null(a->containers[1].reason);
        assert_int_equal(a->timestamp, 99);
        assert_true(kc_pod_status_equal(a, b));
        assert_true(kc_pod_status_equal(a, a));
        assert_true(kc_pod_status_equal(NULL, NULL));
        assert_false(kc_pod_status_equal(a, NULL));
        for (int v = 1; v <= 6; v++) {
                struct kc_pod_status *c = make_status(v);

                assert_false(kc_pod_status_equal(a, c));
                kc_pod_status_unref(c);
        }
        /* Copying a status yields an equal one. */
        assert_int_equal(kc_pod_status_new(a, &d), 0);
        assert_true(kc_pod_status_equal(a, d));
        kc_pod_status_unref(d);

        assert_int_equal(kc_pod_status_new_default("u9", &d), 0);
        assert_string_equal(d->id, "u9");
        assert_null(d->name);
        assert_int_equal(d->n_ips + d->n_sandboxes + d->n_containers, 0);
        assert_ptr_equal(kc_pod_status_ref(d), d);
        kc_pod_status_unref(d);
        kc_pod_status_unref(d);

        kc_pod_status_unref(a);
        kc_pod_status_unref(b);
        assert_null(kc_pod_status_unref(NULL));
}

/*
 * Issue 18: a status keeps a container's id, name and images where they are
 * when their arena has another holder too, holding a reference to it until
 * the status goes; from an arena only the caller holds, and for the other
 * strings, it copies.
 */
static void test_status_new_holding(void **state)
{
        _cleanup_(kc_arena_freep) struct kc_arena *shared = NULL, *sole = NULL;
        struct kc_container_status cs[2];
        struct kc_arena *holds[2];
        struct kc_pod_status *st = NULL;
        struct kc_arena *extra;
        size_t i;

        (void)state;
        assert_int_equal(kc_arena_new(&shared), 0);
        assert_int_equal(kc_arena_new(&sole), 0);
        for (i = 0; i < 2; i++) {
                struct kc_arena *a = i == 0 ? shared : sole;

                cs[i] = (struct kc_container_status){
                        .id = kc_arena_strdup(a, i == 0 ? "c-held" : "c-copied"),
                        .name = kc_arena_strdup(a, "app"),
                        .image = kc_arena_strdup(a, "nginx"),
                        .image_ref = kc_arena_strdup(a, "sha256:abc"),
                        .reason = kc_arena_strdup(a, "Error"),
                        .message = kc_arena_strdup(a, "bye"),
                        .state = KC_CONTAINER_STATE_EXITED,
                        .exit_code = 3,
                };
                holds[i] = a;
        }
        extra = kc_arena_ref(shared); /* the other holder, as the runtime's object */
        assert_int_equal(
                kc__pod_status_new_holding(
                        &(struct kc_pod_status){ .id = "uid", .containers = cs, .n_containers = 2 },
                        holds, NULL, &st),
                0);
        /* The shared arena's strings stay where they are, its reason and message copied. */
        assert_ptr_equal(st->containers[0].id, cs[0].id);
        assert_ptr_equal(st->containers[0].name, cs[0].name);
        assert_ptr_equal(st->containers[0].image, cs[0].image);
        assert_ptr_equal(st->containers[0].image_ref, cs[0].image_ref);
        assert_ptr_not_equal(st->containers[0].reason, cs[0].reason);
        assert_ptr_not_equal(st->containers[0].message, cs[0].message);
        /* The sole one's are all copied. */
        assert_ptr_not_equal(st->containers[1].id, cs[1].id);
        assert_ptr_not_equal(st->containers[1].image_ref, cs[1].image_ref);
        assert_string_equal(st->containers[1].id, "c-copied");
        assert_int_equal(st->containers[1].exit_code, 3);
        /* The status holds the shared arena: with its other holders gone, it reads it still. */
        kc_arena_free(extra);
        shared = kc_arena_free(shared);
        assert_string_equal(st->containers[0].id, "c-held");
        assert_string_equal(st->containers[0].image_ref, "sha256:abc");
        assert_string_equal(st->containers[0].message, "bye");
        /* Built without holds, nothing stays. */
        kc_pod_status_unref(st);
        st = NULL;
        assert_int_equal(kc_pod_status_new(&(struct kc_pod_status){ .id = "uid",
                                                                    .containers = &cs[1],
                                                                    .n_containers = 1 },
                                           &st),
                         0);
        assert_ptr_not_equal(st->containers[0].id, cs[1].id);
        kc_pod_status_unref(st);
}

/*
 * A status of one running container whose id is in a new arena, *@a, which
 * the status holds (the runtime's reference, shared while the status is
 * made, is dropped after).
 */
static struct kc_pod_status *status_holding_new_arena(struct kc_arena **a)
{
        struct kc_container_status c = { .state = KC_CONTAINER_STATE_RUNNING };
        struct kc_pod_status *st = NULL;
        struct kc_arena *other;

        assert_int_equal(kc_arena_new(a), 0);
        c.id = kc_arena_strdup(*a, "c1");
        other = kc_arena_ref(*a);
        assert_int_equal(
                kc__pod_status_new_holding(
                        &(struct kc_pod_status){ .id = "uid", .containers = &c, .n_containers = 1 },
                        a, NULL, &st),
                0);
        kc_arena_free(other);
        return st;
}

/* The status's reference to the arena it holds goes with the status. */
static void test_status_holding_releases(void **state)
{
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        struct kc_pod_status *st, *again;

        (void)state;
        st = status_holding_new_arena(&a);
        assert_true(kc_arena_shared(a)); /* the test's reference and the status's */
        again = kc_pod_status_ref(st);
        kc_pod_status_unref(st);
        assert_true(kc_arena_shared(a)); /* a status reference remains */
        kc_pod_status_unref(again);
        assert_true(kc_arena_sole(a));
}

/*
 * Issue 18: the relist's prefetch calls take nothing and change nothing.
 * They read only inside the objects they are given (ASan checks the
 * reads), NULL included, and hold no reference: the arena a status held is
 * the test's alone once the status goes, and a pod's strings block is
 * still the one it was built on.
 */
static void test_prefetch_takes_nothing(void **state)
{
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        struct kc_container ctr = { .id = "c1", .name = "app", .image = "nginx" };
        struct kc_pod t = { .id = "uid", .containers = &ctr, .n_containers = 1 };
        struct kc_pod *first = NULL, *later = NULL;
        struct kc_pod_status *st;

        (void)state;
        assert_int_equal(kc_pod_new(&t, &first), 0);
        assert_int_equal(kc__pod_new_like(first, first, &later), 0);
        st = status_holding_new_arena(&a);
        assert_ptr_equal(kc__pod_status_held_arena(st, 0), a);

        kc__pod_prefetch_header(NULL);
        kc__pod_prefetch_header(first);
        kc__pod_prefetch_header(later);
        kc__pod_prefetch_strings_block(NULL);
        kc__pod_prefetch_strings_block(first); /* its own block: nothing further */
        kc__pod_prefetch_strings_block(later);
        kc__pod_status_prefetch(st);
        kc__pod_status_prefetch_held(st);
        kc_arena_prefetch(NULL);
        kc_arena_prefetch(a);

        assert_ptr_equal(kc__pod_strings_block(later), first);
        assert_ptr_equal(kc__pod_strings_block(first), first);
        assert_true(kc_arena_shared(a)); /* the test's reference and the status's */
        kc_pod_status_unref(st);
        assert_true(kc_arena_sole(a));
        /* The later pod holds the first one's block: it outlives the first's reference (ASan). */
        kc_pod_unref(first);
        assert_string_equal(later->containers[0].id, "c1");
        kc_pod_unref(later);
}

/*
 * Issue 18: a status names a sandbox or container by the pod's own id
 * string when its id is, by address, one of the pod's: the status holds
 * the block the pod's strings live in and outlives the pod. An equal id
 * elsewhere is copied.
 */
static void test_status_ids_of_pod(void **state)
{
        struct kc_container ctrs[] = { { .id = "c1", .name = "app" }, { .id = "c2", .name = "b" } };
        struct kc_container sbs[] = { { .id = "s1", .name = "POD" } };
        struct kc_pod *pod = NULL, *later = NULL;
        struct kc_container_status cs[2];
        struct kc_sandbox_status sb;
        struct kc_pod_status *st = NULL;
        char other_c2[] = "c2";

        (void)state;
        assert_int_equal(kc_pod_new(&(struct kc_pod){ .id = "uid",
                                                      .containers = ctrs,
                                                      .n_containers = 2,
                                                      .sandboxes = sbs,
                                                      .n_sandboxes = 1 },
                                    &pod),
                         0);
        /* A pod made on its strings: the status holds their block, not either pod. */
        assert_int_equal(kc__pod_new_like(pod, pod, &later), 0);
        cs[0] = (struct kc_container_status){ .id = later->containers[0].id, .name = "app" };
        cs[1] = (struct kc_container_status){ .id = other_c2, .name = "b" };
        sb = (struct kc_sandbox_status){ .id = later->sandboxes[0].id, .name = "POD" };
        assert_int_equal(kc__pod_status_new_holding(&(struct kc_pod_status){ .id = later->id,
                                                                             .name = "web",
                                                                             .sandboxes = &sb,
                                                                             .n_sandboxes = 1,
                                                                             .containers = cs,
                                                                             .n_containers = 2 },
                                                    NULL, later, &st),
                         0);
        assert_ptr_equal(st->containers[0].id, pod->containers[0].id);
        assert_ptr_equal(st->sandboxes[0].id, pod->sandboxes[0].id);
        assert_ptr_equal(st->id, pod->id);
        assert_string_equal(st->name, "web"); /* not the pod's (it has none): copied */
        /* Equal, not the same string: copied. */
        assert_ptr_not_equal(st->containers[1].id, other_c2);
        assert_ptr_not_equal(st->containers[1].id, pod->containers[1].id);
        assert_ptr_not_equal(st->containers[0].name, cs[0].name);
        /* Both pods go (ASan: no use after free, and no leak once the status goes). */
        kc_pod_unref(later);
        kc_pod_unref(pod);
        other_c2[0] = 'x';
        assert_string_equal(st->containers[0].id, "c1");
        assert_string_equal(st->containers[1].id, "c2");
        assert_string_equal(st->sandboxes[0].id, "s1");
        assert_string_equal(st->id, "uid");
        kc_pod_status_unref(st);
}

/* kc_pod_ids_distinct() of a pod packed from @t; a pod made like it says the same. */
static bool packed_ids_distinct(const struct kc_pod *t)
{
        struct kc_pod *p = NULL, *like = NULL;
        bool d;

        assert_int_equal(kc_pod_new(t, &p), 0);
        d = kc_pod_ids_distinct(p);
        assert_int_equal(kc__pod_new_like(p, p, &like), 0);
        assert_int_equal(kc_pod_ids_distinct(like), d);
        kc_pod_unref(like);
        kc_pod_unref(p);
        return d;
}

/* kc_pod_ids_distinct: found when a pod is packed, kept by a pod made like it. */
static void test_pod_ids_distinct(void **state)
{
        struct kc_container ctrs[KC__POD_IDS_CHECKED_MAX + 1], sbs[1] = { { .id = "s1" } };
        char ids[KC__POD_IDS_CHECKED_MAX + 1][8];
        struct kc_pod t = { .id = "uid", .containers = ctrs, .sandboxes = sbs, .n_sandboxes = 1 };
        size_t i;

        (void)state;
        for (i = 0; i < KC_ELEMENTSOF(ctrs); i++) {
                snprintf(ids[i], sizeof(ids[i]), "c%zu", i);
                ctrs[i] = (struct kc_container){ .id = ids[i], .name = "n" };
        }
        t.n_containers = 3;
        assert_true(packed_ids_distinct(&t));
        /* A container's id again, as another container's or as the sandbox's. */
        strcpy(ids[2], "c0");
        assert_false(packed_ids_distinct(&t));
        strcpy(ids[2], "s1");
        assert_false(packed_ids_distinct(&t));
        strcpy(ids[2], "c2");
        /* Too many entries to check: not known. */
        t.n_containers = KC__POD_IDS_CHECKED_MAX;
        assert_false(packed_ids_distinct(&t));
        t.n_containers = KC__POD_IDS_CHECKED_MAX - 1;
        assert_true(packed_ids_distinct(&t));
}

static void test_pod_list_done(void **state)
{
        struct kc_pod_list l = { 0 };

        (void)state;
        kc_pod_list_done(&l);
        kc_pod_list_done(NULL);
        l.pods = calloc(3, sizeof(*l.pods));
        assert_non_null(l.pods);
        for (l.n = 0; l.n < 3; l.n++)
                assert_int_equal(kc_pod_new(&(struct kc_pod){ .id = "x" }, &l.pods[l.n]), 0);
        kc_pod_list_done(&l);
        assert_null(l.pods);
        assert_int_equal(l.n, 0);
}

/* The shape GenericPLEG builds per relist: 10,000 pods of 3 containers and a
 * sandbox, built and released; every one carries its own copy.
 * (Speed is measured by bench/bench_relist, not asserted here.) */
static void test_pod_many(void **state)
{
        struct kc_container ctrs[3] = {
                { .id = "0123456789abcdef0123456789abcdef",
                  .name = "app",
                  .image = "nginx:1.25",
                  .state = KC_CONTAINER_STATE_RUNNING },
                { .id = "1123456789abcdef0123456789abcdef",
                  .name = "sidecar",
                  .image = "envoy",
                  .state = KC_CONTAINER_STATE_RUNNING },
                { .id = "2123456789abcdef0123456789abcdef",
                  .name = "logger",
                  .image = "fluentbit",
                  .state = KC_CONTAINER_STATE_RUNNING },
        };
        struct kc_container sb = { .id = "3123456789abcdef0123456789abcdef",
                                   .name = "POD",
                                   .state = KC_CONTAINER_STATE_RUNNING };
        struct kc_pod t = { .id = "6f1c1e4e-1b2c-4d5e-8f90-123456789012",
                            .name = "bench-1234",
                            .namespace = "default",
                            .containers = ctrs,
                            .n_containers = 3,
                            .sandboxes = &sb,
                            .n_sandboxes = 1 };
        struct kc_pod **pods = calloc(10000, sizeof(*pods));

        (void)state;
        assert_non_null(pods);
        for (int i = 0; i < 10000; i++)
                assert_int_equal(kc_pod_new(&t, &pods[i]), 0);
        for (int i = 0; i < 10000; i++) {
                assert_ptr_not_equal(pods[i]->id, t.id);
                assert_string_equal(pods[i]->id, t.id);
                assert_int_equal(pods[i]->n_containers, 3);
                assert_string_equal(pods[i]->containers[2].image, "fluentbit");
                assert_string_equal(pods[i]->sandboxes[0].name, "POD");
                if (i > 0)
                        assert_ptr_not_equal(pods[i]->containers, pods[i - 1]->containers);
        }
        for (int i = 0; i < 10000; i++)
                kc_pod_unref(pods[i]);
        free(pods);
}

/* kc_api_pod: a deep copy with every field, shared by reference. */
static void test_api_pod(void **state)
{
        char uid[] = "uid-1", name[] = "web";
        struct kc_api_pod t = { .uid = uid,
                                .name = name,
                                .namespace = "default",
                                .source = "file",
                                .creation_ts = 5,
                                .deletion_ts = 7,
                                .deletion_grace_s = 30,
                                .termination_grace_s = -1,
                                .phase = KC_POD_PHASE_RUNNING,
                                .static_pod = true,
                                .host_network = true };
        struct kc_api_pod *p = NULL, *q;

        (void)state;
        assert_int_equal(kc_api_pod_new(&t, &p), 0);
        uid[0] = name[0] = 'X'; /* the copy does not see the template change */
        assert_string_equal(p->uid, "uid-1");
        assert_string_equal(p->name, "web");
        assert_string_equal(p->namespace, "default");
        assert_string_equal(p->source, "file");
        assert_int_equal(p->creation_ts, 5);
        assert_int_equal(p->deletion_ts, 7);
        assert_int_equal(p->deletion_grace_s, 30);
        assert_int_equal(p->termination_grace_s, -1);
        assert_int_equal(p->phase, KC_POD_PHASE_RUNNING);
        assert_true(p->static_pod && p->host_network && !p->mirror_pod);
        q = kc_api_pod_ref(p);
        assert_ptr_equal(q, p);
        assert_null(kc_api_pod_unref(q));
        assert_string_equal(p->uid, "uid-1"); /* still alive: one reference left */
        kc_api_pod_unref(p);
        t.namespace = NULL;
        t.source = NULL;
        assert_int_equal(kc_api_pod_new(&t, &p), 0);
        assert_null(p->namespace);
        assert_null(p->source);
        kc_api_pod_unref(p);
        assert_null(kc_api_pod_unref(NULL));
        assert_string_equal(kc_pod_phase_to_string(KC_POD_PHASE_SUCCEEDED), "Succeeded");
        assert_null(kc_pod_phase_to_string(_KC_POD_PHASE_MAX));
        assert_int_equal(kc_api_pod_new(NULL, &p), -EINVAL);
}

static void test_api_pod_spec(void **state)
{
        char image[] = "busybox:1.36", cmd0[] = "sleep", key[] = "app";
        const char *command[] = { cmd0, "3600" }, *args[] = { "-v" };
        struct kc_api_container c[] = {
                { .name = "web",
                  .image = image,
                  .command = command,
                  .n_command = 2,
                  .args = args,
                  .n_args = 1,
                  .image_pull_policy = KC_PULL_IF_NOT_PRESENT },
                { .name = "side", .image = "busybox", .image_pull_policy = KC_PULL_ALWAYS },
        };
        struct kc_api_container ic[] = {
                { .name = "init", .image = "busybox", .image_pull_policy = KC_PULL_NEVER }
        };
        struct kc_label labels[] = { { key, "web" } };
        struct kc_label ann[] = { { "a", "1" }, { "b", "" } };
        struct kc_api_pod t = { .uid = "u",
                                .name = "p",
                                .restart_policy = KC_RESTART_POLICY_ON_FAILURE,
                                .termination_grace_s = 30,
                                .containers = c,
                                .n_containers = 2,
                                .init_containers = ic,
                                .n_init_containers = 1,
                                .labels = labels,
                                .n_labels = 1,
                                .annotations = ann,
                                .n_annotations = 2 };
        struct kc_api_pod *p = NULL;

        (void)state;
        assert_int_equal(kc_api_pod_new(&t, &p), 0);
        image[0] = cmd0[0] = key[0] = 'X'; /* the copy does not see template changes */
        assert_int_equal(p->restart_policy, KC_RESTART_POLICY_ON_FAILURE);
        assert_int_equal(p->termination_grace_s, 30);
        assert_int_equal(p->n_containers, 2);
        assert_ptr_not_equal(p->containers, c);
        assert_string_equal(p->containers[0].name, "web");
        assert_string_equal(p->containers[0].image, "busybox:1.36");
        assert_int_equal(p->containers[0].n_command, 2);
        assert_string_equal(p->containers[0].command[0], "sleep");
        assert_string_equal(p->containers[0].command[1], "3600");
        assert_int_equal(p->containers[0].n_args, 1);
        assert_string_equal(p->containers[0].args[0], "-v");
        assert_int_equal(p->containers[0].image_pull_policy, KC_PULL_IF_NOT_PRESENT);
        assert_string_equal(p->containers[1].name, "side");
        assert_null(p->containers[1].command);
        assert_int_equal(p->containers[1].n_command, 0);
        assert_null(p->containers[1].args);
        assert_int_equal(p->containers[1].image_pull_policy, KC_PULL_ALWAYS);
        assert_int_equal(p->n_init_containers, 1);
        assert_string_equal(p->init_containers[0].name, "init");
        assert_int_equal(p->init_containers[0].image_pull_policy, KC_PULL_NEVER);
        assert_int_equal(p->n_labels, 1);
        assert_string_equal(p->labels[0].key, "app");
        assert_string_equal(p->labels[0].value, "web");
        assert_int_equal(p->n_annotations, 2);
        assert_string_equal(p->annotations[1].key, "b");
        assert_string_equal(p->annotations[1].value, "");
        /* everything lives in the object's one allocation, after the pod */
        assert_true((const char *)p->containers > (const char *)p);
        assert_true((const char *)p->containers[0].command[1] > (const char *)p);
        kc_api_pod_unref(p);

        /* a pod without a spec packs no arrays */
        assert_int_equal(kc_api_pod_new(&(struct kc_api_pod){ .uid = "u" }, &p), 0);
        assert_null(p->containers);
        assert_null(p->init_containers);
        assert_null(p->labels);
        assert_null(p->annotations);
        assert_int_equal(p->restart_policy, KC_RESTART_POLICY_ALWAYS);
        kc_api_pod_unref(p);

        assert_string_equal(kc_restart_policy_to_string(KC_RESTART_POLICY_NEVER), "Never");
        assert_null(kc_restart_policy_to_string(_KC_RESTART_POLICY_MAX));
        assert_int_equal(kc_restart_policy_from_string("OnFailure"), KC_RESTART_POLICY_ON_FAILURE);
        assert_int_equal(kc_restart_policy_from_string("always"), _KC_RESTART_POLICY_INVALID);
        assert_int_equal(kc_restart_policy_from_string(NULL), _KC_RESTART_POLICY_INVALID);
        assert_string_equal(kc_pull_policy_to_string(KC_PULL_IF_NOT_PRESENT), "IfNotPresent");
        assert_null(kc_pull_policy_to_string(_KC_PULL_POLICY_INVALID));
        assert_int_equal(kc_pull_policy_from_string("Never"), KC_PULL_NEVER);
        assert_int_equal(kc_pull_policy_from_string(""), _KC_PULL_POLICY_INVALID);
}

/* The v1 names of the spec's enums, both ways; the unset zero values have none. */
static void test_api_spec_enum_names(void **state)
{
        (void)state;
        assert_null(kc_mount_propagation_to_string(KC_MOUNT_PROPAGATION_UNSET));
        assert_string_equal(kc_mount_propagation_to_string(KC_MOUNT_PROPAGATION_HOST_TO_CONTAINER),
                            "HostToContainer");
        assert_int_equal(kc_mount_propagation_from_string("Bidirectional"),
                         KC_MOUNT_PROPAGATION_BIDIRECTIONAL);
        assert_int_equal(kc_mount_propagation_from_string(""), _KC_MOUNT_PROPAGATION_INVALID);
        assert_null(kc_host_path_type_to_string(KC_HOST_PATH_UNSET));
        assert_string_equal(kc_host_path_type_to_string(KC_HOST_PATH_CHAR_DEVICE), "CharDevice");
        assert_int_equal(kc_host_path_type_from_string("DirectoryOrCreate"),
                         KC_HOST_PATH_DIRECTORY_OR_CREATE);
        assert_int_equal(kc_host_path_type_from_string("directory"), _KC_HOST_PATH_TYPE_INVALID);
        assert_string_equal(kc_termination_message_policy_to_string(KC_TERMINATION_MESSAGE_FILE),
                            "File");
        assert_int_equal(kc_termination_message_policy_from_string("FallbackToLogsOnError"),
                         KC_TERMINATION_MESSAGE_FALLBACK_TO_LOGS_ON_ERROR);
        assert_string_equal(kc_dns_policy_to_string(KC_DNS_CLUSTER_FIRST_WITH_HOST_NET),
                            "ClusterFirstWithHostNet");
        assert_int_equal(kc_dns_policy_from_string("None"), KC_DNS_NONE);
        assert_int_equal(kc_dns_policy_from_string(NULL), _KC_DNS_POLICY_INVALID);
        assert_null(kc_dns_policy_to_string(_KC_DNS_POLICY_MAX));
}

/*
 * A template whose every byte lives in one malloc'd pool: after the copy the
 * pool is poisoned and freed, so a pointer the copy still borrows reads
 * garbage (and is a use-after-free under ASan).
 */
struct pool {
        char *base;
        size_t off, cap;
};

static void *pool_dup(struct pool *p, const void *src, size_t n)
{
        void *d;

        p->off = (p->off + 15) & ~(size_t)15;
        assert_true(p->off + n <= p->cap);
        d = p->base + p->off;
        memcpy(d, src, n);
        p->off += n;
        return d;
}

#define PS(p, s) ((const char *)pool_dup((p), (s), strlen(s) + 1))
#define PA(p, arr) pool_dup((p), (arr), sizeof(arr))
/* A copy of the value @p v in the pool, typed. */
#define PV(p, v)                                                                                   \
        ({                                                                                         \
                __typeof__(v) v_ = (v);                                                            \
                (const __typeof__(v) *)pool_dup((p), &v_, sizeof(v_));                             \
        })

static struct kc_api_handler full_handler(struct pool *p, enum kc_handler_kind kind,
                                          const char *tag)
{
        const char *cmd[] = { PS(p, "sh"), PS(p, tag) };
        struct kc_api_http_header h[] = { { PS(p, "X-Tag"), PS(p, tag) } };

        return (struct kc_api_handler){ .kind = kind,
                                        .command = PA(p, cmd),
                                        .n_command = 2,
                                        .host = PS(p, "10.0.0.9"),
                                        .port = { .number = 0, .name = PS(p, tag) },
                                        .path = PS(p, "/hook"),
                                        .https = true,
                                        .headers = PA(p, h),
                                        .n_headers = 1,
                                        .grpc_service = PS(p, "svc"),
                                        .sleep_seconds = 4 };
}

static struct kc_api_probe full_probe(struct pool *p, const char *tag)
{
        return (struct kc_api_probe){
                .present = true,
                .handler = full_handler(p, KC_HANDLER_HTTP_GET, tag),
                .initial_delay_seconds = 1,
                .timeout_seconds = 2,
                .period_seconds = 3,
                .success_threshold = 1,
                .failure_threshold = 5,
                .termination_grace_period_seconds = { true, 7 },
        };
}

static struct kc_api_container full_container(struct pool *p, const char *name)
{
        const char *cmd[] = { PS(p, "/bin/sh"), PS(p, "-c") }, *args[] = { PS(p, "echo $(A)") };
        const char *add[] = { PS(p, "NET_ADMIN") }, *drop[] = { PS(p, "ALL"), PS(p, "KILL") };
        struct kc_api_container_port ports[] = { { PS(p, "http"), 80, 8080, PS(p, "127.0.0.1"),
                                                   PS(p, "TCP") } };
        struct kc_api_env_from ef[] = { { PS(p, "P_"), true, PS(p, "sec"), KC_OPT_TRUE } };
        struct kc_api_env_var env[] = {
                { .name = PS(p, "A"), .value = PS(p, "1") },
                { .name = PS(p, "B"),
                  .source = KC_ENV_SOURCE_FIELD_REF,
                  .field_path = PS(p, "metadata.labels['app']") },
                { .name = PS(p, "C"),
                  .source = KC_ENV_SOURCE_RESOURCE_FIELD,
                  .resource_container = PS(p, name),
                  .resource = PS(p, "limits.memory"),
                  .divisor = { PS(p, "1Mi"), 1048576000 } },
                { .name = PS(p, "D"),
                  .source = KC_ENV_SOURCE_SECRET_KEY,
                  .ref_name = PS(p, "s"),
                  .ref_key = PS(p, "k"),
                  .ref_optional = KC_OPT_FALSE },
        };
        struct kc_api_resource lim[] = { { PS(p, "memory"), { PS(p, "128Mi"), 134217728000 } } };
        struct kc_api_resource req[] = { { PS(p, "cpu"), { PS(p, "250m"), 250 } },
                                         { PS(p, "memory"), { PS(p, "64Mi"), 67108864000 } } };
        struct kc_api_volume_mount vm[] = { { PS(p, "data"), PS(p, "/data"), PS(p, "sub"),
                                              PS(p, "$(POD)"), true,
                                              KC_MOUNT_PROPAGATION_HOST_TO_CONTAINER } };

        return (struct kc_api_container){
                .name = PS(p, name),
                .image = PS(p, "busybox:1.36"),
                .command = PA(p, cmd),
                .n_command = 2,
                .args = PA(p, args),
                .n_args = 1,
                .image_pull_policy = KC_PULL_NEVER,
                .working_dir = PS(p, "/work"),
                .ports = PA(p, ports),
                .n_ports = 1,
                .env_from = PA(p, ef),
                .n_env_from = 1,
                .env = PA(p, env),
                .n_env = 4,
                .resources = { PA(p, lim), 1, PA(p, req), 2 },
                .volume_mounts = PA(p, vm),
                .n_volume_mounts = 1,
                .lifecycle = PV(
                        p, ((struct kc_api_lifecycle){ full_handler(p, KC_HANDLER_EXEC, "post"),
                                                       full_handler(p, KC_HANDLER_SLEEP, "pre") })),
                .liveness_probe = PV(p, full_probe(p, "live")),
                .readiness_probe = PV(p, full_probe(p, "ready")),
                .startup_probe = PV(p, full_probe(p, "start")),
                .termination_message_path = PS(p, "/dev/termination-log"),
                .termination_message_policy = KC_TERMINATION_MESSAGE_FALLBACK_TO_LOGS_ON_ERROR,
                .security_context =
                        PV(p, ((struct kc_api_security_context){
                                      .present = true,
                                      .run_as_user = { true, 1000 },
                                      .run_as_group = { true, 2000 },
                                      .run_as_non_root = KC_OPT_TRUE,
                                      .privileged = KC_OPT_FALSE,
                                      .read_only_root_filesystem = KC_OPT_TRUE,
                                      .allow_privilege_escalation = KC_OPT_FALSE,
                                      .has_capabilities = true,
                                      .capabilities = { PA(p, add), 1, PA(p, drop), 2 },
                                      .proc_mount = PS(p, "Default"),
                                      .seccomp = { PS(p, "Localhost"), PS(p, "prof.json") } })),
                .restart_policy_always = true,
                .stdin = true,
                .stdin_once = true,
                .tty = true,
        };
}

static struct kc_api_pod *full_pod_template(struct pool *p)
{
        struct kc_api_container c[] = { full_container(p, "app") };
        struct kc_api_container ic[] = { full_container(p, "side") };
        struct kc_label labels[] = { { PS(p, "app"), PS(p, "web") } };
        struct kc_label ann[] = { { PS(p, "note"), PS(p, "x") } };
        struct kc_api_volume vols[] = {
                { PS(p, "data"),
                  KC_VOLUME_HOST_PATH,
                  PS(p, "hostPath"),
                  PS(p, "/srv"),
                  KC_HOST_PATH_DIRECTORY_OR_CREATE,
                  false,
                  false,
                  { NULL, 0 } },
                { PS(p, "cache"),
                  KC_VOLUME_EMPTY_DIR,
                  PS(p, "emptyDir"),
                  NULL,
                  KC_HOST_PATH_UNSET,
                  true,
                  true,
                  { PS(p, "1Gi"), 1073741824000 } },
        };
        const char *hn[] = { PS(p, "foo.local"), PS(p, "bar.local") };
        struct kc_api_host_alias ha[] = { { PS(p, "10.1.2.3"), PA(p, hn), 2 } };
        const char *ns[] = { PS(p, "1.1.1.1") }, *search[] = { PS(p, "svc.local") };
        struct kc_api_dns_option opts[] = { { PS(p, "ndots"), PS(p, "2") },
                                            { PS(p, "edns0"), NULL } };
        int64_t groups[] = { 10, 20, 30 };
        struct kc_api_sysctl sysctls[] = { { PS(p, "net.core.somaxconn"), PS(p, "1024") } };
        struct kc_api_pod t = {
                .uid = PS(p, "uid-9"),
                .name = PS(p, "full"),
                .namespace = PS(p, "kube-system"),
                .source = PS(p, "file"),
                .termination_grace_s = 45,
                .static_pod = true,
                .containers = PA(p, c),
                .n_containers = 1,
                .init_containers = PA(p, ic),
                .n_init_containers = 1,
                .labels = PA(p, labels),
                .n_labels = 1,
                .annotations = PA(p, ann),
                .n_annotations = 1,
                .volumes = PA(p, vols),
                .n_volumes = 2,
                .node_name = PS(p, "node-1"),
                .service_account_name = PS(p, "default"),
                .hostname = PS(p, "h"),
                .subdomain = PS(p, "sub"),
                .host_pid = true,
                .host_ipc = true,
                .share_process_namespace = true,
                .host_aliases = PA(p, ha),
                .n_host_aliases = 1,
                .dns_policy = KC_DNS_NONE,
                .has_dns_config = true,
                .dns_config = { PA(p, ns), 1, PA(p, search), 1, PA(p, opts), 2 },
                .security_context = { .run_as_user = { true, 0 },
                                      .run_as_group = { true, 5 },
                                      .run_as_non_root = KC_OPT_FALSE,
                                      .fs_group = { true, 2000 },
                                      .supplemental_groups = PA(p, groups),
                                      .n_supplemental_groups = 3,
                                      .sysctls = PA(p, sysctls),
                                      .n_sysctls = 1,
                                      .seccomp = { PS(p, "RuntimeDefault"), NULL } },
                .priority_class_name = PS(p, "system-node-critical"),
                .priority = { true, 2000001000 },
                .active_deadline_seconds = { true, 600 },
        };

        return pool_dup(p, &t, sizeof(t));
}

static void check_handler(const struct kc_api_handler *h, enum kc_handler_kind kind,
                          const char *tag)
{
        assert_int_equal(h->kind, kind);
        assert_int_equal(h->n_command, 2);
        assert_string_equal(h->command[0], "sh");
        assert_string_equal(h->command[1], tag);
        assert_string_equal(h->host, "10.0.0.9");
        assert_string_equal(h->port.name, tag);
        assert_string_equal(h->path, "/hook");
        assert_true(h->https);
        assert_int_equal(h->n_headers, 1);
        assert_string_equal(h->headers[0].name, "X-Tag");
        assert_string_equal(h->headers[0].value, tag);
        assert_string_equal(h->grpc_service, "svc");
        assert_int_equal(h->sleep_seconds, 4);
}

static void check_probe(const struct kc_api_probe *pr, const char *tag)
{
        assert_true(pr->present);
        check_handler(&pr->handler, KC_HANDLER_HTTP_GET, tag);
        assert_int_equal(pr->initial_delay_seconds, 1);
        assert_int_equal(pr->timeout_seconds, 2);
        assert_int_equal(pr->period_seconds, 3);
        assert_int_equal(pr->success_threshold, 1);
        assert_int_equal(pr->failure_threshold, 5);
        assert_true(pr->termination_grace_period_seconds.set);
        assert_int_equal(pr->termination_grace_period_seconds.v, 7);
}

static void check_env(const struct kc_api_container *c, const char *name)
{
        assert_int_equal(c->n_env_from, 1);
        assert_string_equal(c->env_from[0].prefix, "P_");
        assert_true(c->env_from[0].secret);
        assert_string_equal(c->env_from[0].ref_name, "sec");
        assert_int_equal(c->env_from[0].optional, KC_OPT_TRUE);
        assert_int_equal(c->n_env, 4);
        assert_string_equal(c->env[0].name, "A");
        assert_string_equal(c->env[0].value, "1");
        assert_int_equal(c->env[1].source, KC_ENV_SOURCE_FIELD_REF);
        assert_string_equal(c->env[1].field_path, "metadata.labels['app']");
        assert_null(c->env[1].value);
        assert_int_equal(c->env[2].source, KC_ENV_SOURCE_RESOURCE_FIELD);
        assert_string_equal(c->env[2].resource_container, name);
        assert_string_equal(c->env[2].resource, "limits.memory");
        assert_string_equal(c->env[2].divisor.text, "1Mi");
        assert_int_equal(c->env[2].divisor.milli, 1048576000);
        assert_int_equal(c->env[3].source, KC_ENV_SOURCE_SECRET_KEY);
        assert_string_equal(c->env[3].ref_name, "s");
        assert_string_equal(c->env[3].ref_key, "k");
        assert_int_equal(c->env[3].ref_optional, KC_OPT_FALSE);
}

static void check_security_context(const struct kc_api_security_context *sc)
{
        assert_true(sc->present);
        assert_true(sc->run_as_user.set && sc->run_as_user.v == 1000);
        assert_true(sc->run_as_group.set && sc->run_as_group.v == 2000);
        assert_int_equal(sc->run_as_non_root, KC_OPT_TRUE);
        assert_int_equal(sc->privileged, KC_OPT_FALSE);
        assert_int_equal(sc->read_only_root_filesystem, KC_OPT_TRUE);
        assert_int_equal(sc->allow_privilege_escalation, KC_OPT_FALSE);
        assert_true(sc->has_capabilities);
        assert_int_equal(sc->capabilities.n_add, 1);
        assert_string_equal(sc->capabilities.add[0], "NET_ADMIN");
        assert_int_equal(sc->capabilities.n_drop, 2);
        assert_string_equal(sc->capabilities.drop[0], "ALL");
        assert_string_equal(sc->capabilities.drop[1], "KILL");
        assert_string_equal(sc->proc_mount, "Default");
        assert_string_equal(sc->seccomp.type, "Localhost");
        assert_string_equal(sc->seccomp.localhost_profile, "prof.json");
}

static void check_full_container(const struct kc_api_container *c, const char *name)
{
        assert_string_equal(c->name, name);
        assert_string_equal(c->image, "busybox:1.36");
        assert_int_equal(c->n_command, 2);
        assert_string_equal(c->command[1], "-c");
        assert_int_equal(c->n_args, 1);
        assert_string_equal(c->args[0], "echo $(A)");
        assert_int_equal(c->image_pull_policy, KC_PULL_NEVER);
        assert_string_equal(c->working_dir, "/work");
        assert_int_equal(c->n_ports, 1);
        assert_string_equal(c->ports[0].name, "http");
        assert_int_equal(c->ports[0].container_port, 80);
        assert_int_equal(c->ports[0].host_port, 8080);
        assert_string_equal(c->ports[0].host_ip, "127.0.0.1");
        assert_string_equal(c->ports[0].protocol, "TCP");
        check_env(c, name);
        assert_int_equal(c->resources.n_limits, 1);
        assert_string_equal(c->resources.limits[0].name, "memory");
        assert_string_equal(c->resources.limits[0].q.text, "128Mi");
        assert_int_equal(c->resources.limits[0].q.milli, 134217728000);
        assert_int_equal(c->resources.n_requests, 2);
        assert_string_equal(c->resources.requests[0].name, "cpu");
        assert_string_equal(c->resources.requests[0].q.text, "250m");
        assert_int_equal(c->resources.requests[0].q.milli, 250);
        assert_string_equal(c->resources.requests[1].q.text, "64Mi");
        assert_int_equal(c->n_volume_mounts, 1);
        assert_string_equal(c->volume_mounts[0].name, "data");
        assert_string_equal(c->volume_mounts[0].mount_path, "/data");
        assert_string_equal(c->volume_mounts[0].sub_path, "sub");
        assert_string_equal(c->volume_mounts[0].sub_path_expr, "$(POD)");
        assert_true(c->volume_mounts[0].read_only);
        assert_int_equal(c->volume_mounts[0].propagation, KC_MOUNT_PROPAGATION_HOST_TO_CONTAINER);
        check_handler(&c->lifecycle->post_start, KC_HANDLER_EXEC, "post");
        check_handler(&c->lifecycle->pre_stop, KC_HANDLER_SLEEP, "pre");
        check_probe(c->liveness_probe, "live");
        check_probe(c->readiness_probe, "ready");
        check_probe(c->startup_probe, "start");
        assert_string_equal(c->termination_message_path, "/dev/termination-log");
        assert_int_equal(c->termination_message_policy,
                         KC_TERMINATION_MESSAGE_FALLBACK_TO_LOGS_ON_ERROR);
        check_security_context(c->security_context);
        assert_true(c->restart_policy_always && c->stdin && c->stdin_once && c->tty);
}

static void check_full_pod_spec(const struct kc_api_pod *p)
{
        const struct kc_api_pod_security_context *psc = &p->security_context;

        assert_int_equal(p->n_volumes, 2);
        assert_string_equal(p->volumes[0].name, "data");
        assert_int_equal(p->volumes[0].kind, KC_VOLUME_HOST_PATH);
        assert_string_equal(p->volumes[0].kind_name, "hostPath");
        assert_string_equal(p->volumes[0].host_path, "/srv");
        assert_int_equal(p->volumes[0].host_path_type, KC_HOST_PATH_DIRECTORY_OR_CREATE);
        assert_null(p->volumes[0].size_limit.text);
        assert_string_equal(p->volumes[1].kind_name, "emptyDir");
        assert_true(p->volumes[1].medium_memory && p->volumes[1].has_size_limit);
        assert_string_equal(p->volumes[1].size_limit.text, "1Gi");
        assert_int_equal(p->volumes[1].size_limit.milli, 1073741824000);
        assert_string_equal(p->node_name, "node-1");
        assert_string_equal(p->service_account_name, "default");
        assert_string_equal(p->hostname, "h");
        assert_string_equal(p->subdomain, "sub");
        assert_true(p->host_pid && p->host_ipc && p->share_process_namespace);
        assert_int_equal(p->n_host_aliases, 1);
        assert_string_equal(p->host_aliases[0].ip, "10.1.2.3");
        assert_int_equal(p->host_aliases[0].n_hostnames, 2);
        assert_string_equal(p->host_aliases[0].hostnames[1], "bar.local");
        assert_int_equal(p->dns_policy, KC_DNS_NONE);
        assert_true(p->has_dns_config);
        assert_string_equal(p->dns_config.nameservers[0], "1.1.1.1");
        assert_string_equal(p->dns_config.searches[0], "svc.local");
        assert_int_equal(p->dns_config.n_options, 2);
        assert_string_equal(p->dns_config.options[0].name, "ndots");
        assert_string_equal(p->dns_config.options[0].value, "2");
        assert_string_equal(p->dns_config.options[1].name, "edns0");
        assert_null(p->dns_config.options[1].value);
        assert_true(psc->run_as_user.set && psc->run_as_user.v == 0);
        assert_true(psc->run_as_group.set && psc->run_as_group.v == 5);
        assert_int_equal(psc->run_as_non_root, KC_OPT_FALSE);
        assert_true(psc->fs_group.set && psc->fs_group.v == 2000);
        assert_int_equal(psc->n_supplemental_groups, 3);
        assert_int_equal(psc->supplemental_groups[2], 30);
        assert_int_equal(psc->n_sysctls, 1);
        assert_string_equal(psc->sysctls[0].name, "net.core.somaxconn");
        assert_string_equal(psc->sysctls[0].value, "1024");
        assert_string_equal(psc->seccomp.type, "RuntimeDefault");
        assert_null(psc->seccomp.localhost_profile);
        assert_string_equal(p->priority_class_name, "system-node-critical");
        assert_true(p->priority.set && p->priority.v == 2000001000);
        assert_true(p->active_deadline_seconds.set && p->active_deadline_seconds.v == 600);
}

/* kc_api_pod_new copies every field of the v1 spec: nothing is borrowed from the template. */
static void test_api_pod_full_spec(void **state)
{
        struct pool pool = { .cap = 64 * 1024 };
        struct kc_api_pod *t, *p = NULL;

        (void)state;
        pool.base = malloc(pool.cap);
        assert_non_null(pool.base);
        t = full_pod_template(&pool);
        assert_int_equal(kc_api_pod_new(t, &p), 0);
        memset(pool.base, 0x5a, pool.cap); /* poison, then free the template's storage */
        free(pool.base);
        assert_string_equal(p->uid, "uid-9");
        assert_string_equal(p->namespace, "kube-system");
        assert_string_equal(p->source, "file");
        assert_int_equal(p->termination_grace_s, 45);
        assert_string_equal(p->labels[0].value, "web");
        assert_string_equal(p->annotations[0].key, "note");
        assert_int_equal(p->n_containers, 1);
        check_full_container(&p->containers[0], "app");
        assert_int_equal(p->n_init_containers, 1);
        check_full_container(&p->init_containers[0], "side");
        check_full_pod_spec(p);
        kc_api_pod_unref(p);
}

/*
 * Issue 18: a container holds its hooks, probes and security context only
 * when given (pointers, NULL when absent: 928 bytes a container before); the
 * accessors stand in empty ones.
 */
static void test_api_container_optional_parts(void **state)
{
        static const struct kc_api_probe live = { .present = true, .period_seconds = 7 };
        const struct kc_api_container cs[] = { { .name = "bare" },
                                               { .name = "probed", .liveness_probe = &live } };
        struct kc_api_pod *p = NULL;
        const struct kc_api_container *c;

        (void)state;
        assert_true(sizeof(struct kc_api_container) <= 256);
        assert_int_equal(
                kc_api_pod_new(
                        &(struct kc_api_pod){ .uid = "u", .containers = cs, .n_containers = 2 },
                        &p),
                0);
        c = &p->containers[0];
        assert_null(c->lifecycle);
        assert_null(c->liveness_probe);
        assert_null(c->readiness_probe);
        assert_null(c->startup_probe);
        assert_null(c->security_context);
        assert_int_equal(kc_api_lifecycle_of(c)->post_start.kind, KC_HANDLER_NONE);
        assert_int_equal(kc_api_lifecycle_of(c)->pre_stop.kind, KC_HANDLER_NONE);
        assert_false(kc_api_probe_or_none(c->liveness_probe)->present);
        assert_false(kc_api_security_context_of(c)->present);
        assert_int_equal(kc_api_security_context_of(c)->privileged, KC_OPT_UNSET);
        c = &p->containers[1];
        assert_non_null(c->liveness_probe);
        assert_ptr_not_equal(c->liveness_probe, &live); /* copied into the pod */
        assert_int_equal(c->liveness_probe->period_seconds, 7);
        assert_null(c->readiness_probe);
        kc_api_pod_unref(p);
}

/*
 * Issue 18: the well-known label and annotation keys (kubelet's, the config
 * sources') point at one static copy in every object instead of a copy
 * each; any other key is copied.
 */
static void test_well_known_keys_shared(void **state)
{
        char k1[] = "kubernetes.io/config.hash", k2[] = "kubernetes.io/config.hash";
        char t1[] = "io.kubernetes.container.terminationMessagePath";
        char t2[] = "io.kubernetes.container.terminationMessagePath";
        char o1[] = "example.com/other", o2[] = "example.com/other";
        struct kc_label a1[] = { { k1, "h1" }, { t1, "/dev/termination-log" }, { o1, "x" } };
        struct kc_label a2[] = { { k2, "h2" }, { t2, "/dev/termination-log" }, { o2, "y" } };
        struct kc_api_pod *p1 = NULL, *p2 = NULL;

        (void)state;
        assert_int_equal(
                kc_api_pod_new(
                        &(struct kc_api_pod){ .uid = "u1", .annotations = a1, .n_annotations = 3 },
                        &p1),
                0);
        assert_int_equal(
                kc_api_pod_new(
                        &(struct kc_api_pod){ .uid = "u2", .annotations = a2, .n_annotations = 3 },
                        &p2),
                0);
        assert_ptr_equal(p1->annotations[0].key, p2->annotations[0].key);
        assert_ptr_equal(p1->annotations[1].key, p2->annotations[1].key);
        assert_ptr_not_equal(p1->annotations[2].key, p2->annotations[2].key);
        assert_string_equal(p1->annotations[0].key, "kubernetes.io/config.hash");
        assert_string_equal(p2->annotations[0].value, "h2");
        assert_string_equal(p2->annotations[2].key, "example.com/other");
        kc_api_pod_unref(p1);
        kc_api_pod_unref(p2);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_state_strings),
                cmocka_unit_test(test_error_set),
                cmocka_unit_test(test_pod_round_trip),
                cmocka_unit_test(test_pod_new_like),
                cmocka_unit_test(test_status_ids_of_pod),
                cmocka_unit_test(test_pod_ids_distinct),
                cmocka_unit_test(test_status_round_trip_equal),
                cmocka_unit_test(test_status_new_holding),
                cmocka_unit_test(test_status_holding_releases),
                cmocka_unit_test(test_prefetch_takes_nothing),
                cmocka_unit_test(test_pod_list_done),
                cmocka_unit_test(test_pod_many),
                cmocka_unit_test(test_api_pod),
                cmocka_unit_test(test_api_pod_spec),
                cmocka_unit_test(test_api_pod_full_spec),
                cmocka_unit_test(test_api_container_optional_parts),
                cmocka_unit_test(test_well_known_keys_shared),
                cmocka_unit_test(test_api_spec_enum_names),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
