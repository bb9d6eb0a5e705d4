/* SPDX-License-Identifier: Apache-2.0 */
/* The runtime manager over the simulated runtime's CRI face. */
#include <errno.h>
#include <pthread.h>
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

#include "core/arena.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "fixture.h"
#include "internal.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/manager.h"
#include "runtime/runtime_service.h"
#include "runtime/sim.h"
#include "runtime/sync_pod.h"

struct fixture {
        struct kc_clock *clock;
        struct kc_sim *sim;
        struct kc_runtime_service svc;
        struct kc_runtime_manager *mgr;
        struct kc_pod_runtime sim_pr, mgr_pr;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        sim_env_new(&f->clock, &f->sim, "busybox");
        f->svc = kc_sim_service(f->sim);
        assert_int_equal(kc_runtime_manager_new(f->svc, f->clock, &f->mgr), 0);
        f->sim_pr = kc_sim_pod_runtime(f->sim);
        f->mgr_pr = kc_runtime_manager_pod_runtime(f->mgr);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        kc_runtime_manager_free(f->mgr);
        sim_env_free(f->clock, f->sim);
        free(f);
        return 0;
}

static char *run_sandbox(struct fixture *f, const char *uid, const char *name, uint32_t attempt)
{
        const struct kc_label labels[] = {
                { KC_LABEL_POD_UID, uid },
                { KC_LABEL_POD_NAME, name },
                { KC_LABEL_POD_NAMESPACE, "default" },
        };
        struct kc_pod_sandbox_config cfg = {
                .metadata = { .name = name,
                              .uid = uid,
                              .namespace = "default",
                              .attempt = attempt },
                .labels = labels,
                .n_labels = KC_ELEMENTSOF(labels),
        };
        char *id = NULL;

        assert_int_equal(f->svc.ops->run_pod_sandbox(f->svc.self, &cfg, &id, NULL), 0);
        return id;
}

static char *start_ctr(struct fixture *f, const char *sb, const char *uid, const char *pod,
                       const char *name, const char *cmd, uint32_t attempt, bool start)
{
        const struct kc_label labels[] = {
                { KC_LABEL_POD_UID, uid },
                { KC_LABEL_POD_NAME, pod },
                { KC_LABEL_POD_NAMESPACE, "default" },
                { KC_LABEL_CONTAINER_NAME, name },
        };
        const struct kc_label ann[] = { { KC_ANNOTATION_CONTAINER_HASH, "deadbeef" } };
        struct kc_container_config cfg = {
                .metadata = { .name = name, .attempt = attempt },
                .image = "busybox",
                .command = &cmd,
                .n_command = 1,
                .labels = labels,
                .n_labels = KC_ELEMENTSOF(labels),
                .annotations = ann,
                .n_annotations = 1,
        };
        char *id = NULL;

        assert_int_equal(f->svc.ops->create_container(f->svc.self, sb, &cfg, NULL, &id, NULL), 0);
        if (start)
                assert_int_equal(f->svc.ops->start_container(f->svc.self, id, NULL), 0);
        return id;
}

static const struct kc_pod *find_pod_hint(const struct kc_pod_list *l, const char *uid, size_t hint)
{
        /* Both faces usually agree on the order: try the same index first. */
        if (hint < l->n && strcmp(l->pods[hint]->id, uid) == 0)
                return l->pods[hint];
        for (size_t i = 0; i < l->n; i++)
                if (strcmp(l->pods[i]->id, uid) == 0)
                        return l->pods[i];
        return NULL;
}

static const struct kc_pod *find_pod(const struct kc_pod_list *l, const char *uid)
{
        return find_pod_hint(l, uid, SIZE_MAX);
}

static void assert_containers_equal(const struct kc_container *a, size_t na,
                                    const struct kc_container *b, size_t nb)
{
        assert_int_equal(na, nb);
        for (size_t i = 0; i < na; i++) {
                assert_string_equal(a[i].id, b[i].id);
                assert_int_equal(a[i].state, b[i].state);
                assert_true(kc__streq(a[i].image, b[i].image));
                if (a[i].name || b[i].name)
                        assert_string_equal(a[i].name, b[i].name);
                assert_int_equal(a[i].hash, b[i].hash);
                assert_int_equal(a[i].created_at, b[i].created_at);
        }
}

/*
 * D54: the status of a listed pod, read without listing it again, is the
 * status GetPodStatus reads for its UID, while nothing changed since.
 */
static void assert_listed_status_agrees(struct kc_pod_runtime pr, const struct kc_pod *p)
{
        struct kc_pod_status *a = NULL, *b = NULL;

        assert_int_equal(pr.ops->get_pod_status(pr.self, p->id, p->name, p->namespace, &a, NULL),
                         0);
        assert_int_equal(pr.ops->get_listed_pod_status(pr.self, p, NULL, &b, NULL), 0);
        assert_true(kc_pod_status_equal(a, b));
        kc_pod_status_unref(a);
        kc_pod_status_unref(b);
}

/* The manager over the sim's CRI face sees what the sim's own kubecontainer face shows. */
static void assert_faces_agree(struct fixture *f, bool all)
{
        struct kc_pod_list ms = { 0 }, ss = { 0 };
        struct kc_runtime_error err = { 0 };

        assert_int_equal(f->mgr_pr.ops->get_pods(f->mgr_pr.self, all, &ms, &err), 0);
        assert_int_equal(f->sim_pr.ops->get_pods(f->sim_pr.self, all, &ss, &err), 0);
        assert_int_equal(ms.n, ss.n);
        for (size_t i = 0; i < ms.n; i++) {
                const struct kc_pod *m = ms.pods[i], *s = find_pod_hint(&ss, m->id, i);

                assert_non_null(s);
                if (i > 0)
                        assert_true(ms.pods[i - 1]->created_at >= m->created_at);
                assert_string_equal(m->name, s->name);
                assert_string_equal(m->namespace, s->namespace);
                assert_int_equal(m->created_at, s->created_at);
                assert_containers_equal(m->containers, m->n_containers, s->containers,
                                        s->n_containers);
                assert_containers_equal(m->sandboxes, m->n_sandboxes, s->sandboxes, s->n_sandboxes);
                if (all) {
                        struct kc_pod_status *a = NULL, *b = NULL;

                        assert_int_equal(f->mgr_pr.ops->get_pod_status(f->mgr_pr.self, m->id,
                                                                       m->name, m->namespace, &a,
                                                                       &err),
                                         0);
                        assert_int_equal(f->sim_pr.ops->get_pod_status(f->sim_pr.self, m->id,
                                                                       m->name, m->namespace, &b,
                                                                       &err),
                                         0);
                        assert_true(kc_pod_status_equal(a, b));
                        kc_pod_status_unref(a);
                        kc_pod_status_unref(b);
                        assert_listed_status_agrees(f->mgr_pr, m);
                }
        }
        kc_pod_list_done(&ms);
        kc_pod_list_done(&ss);
}

static void test_get_pods_cri_world(void **state)
{
        struct fixture *f = *state;
        struct kc_pod_list l = { 0 };
        char *sb[4], *c[6];

        sb[0] = run_sandbox(f, "u-a", "a", 0);
        c[0] = start_ctr(f, sb[0], "u-a", "a", "app", "top", 0, true);
        c[1] = start_ctr(f, sb[0], "u-a", "a", "init", "true", 0, true);
        kc_fake_clock_advance(f->clock, KC_NSEC_PER_SEC);
        sb[1] = run_sandbox(f, "u-b", "b", 0);
        c[2] = start_ctr(f, sb[1], "u-b", "b", "app", "sleep 10", 0, true);
        c[3] = start_ctr(f, sb[1], "u-b", "b", "new", "top", 0, false);
        kc_fake_clock_advance(f->clock, KC_NSEC_PER_SEC);
        sb[2] = run_sandbox(f, "u-c", "c", 0);
        c[4] = start_ctr(f, sb[2], "u-c", "c", "app", "top", 0, true);
        assert_int_equal(f->svc.ops->stop_pod_sandbox(f->svc.self, sb[2], NULL), 0);
        kc_fake_clock_advance(f->clock, KC_NSEC_PER_SEC);
        sb[3] = run_sandbox(f, "u-c", "c", 1);
        c[5] = start_ctr(f, sb[3], "u-c", "c", "app", "top", 1, true);

        assert_faces_agree(f, true);
        assert_faces_agree(f, false);

        /* Newest first: c (sb[3]), b, a. */
        assert_int_equal(f->mgr_pr.ops->get_pods(f->mgr_pr.self, true, &l, NULL), 0);
        assert_int_equal(l.n, 3);
        assert_string_equal(l.pods[0]->id, "u-c");
        assert_int_equal(l.pods[0]->created_at, T0 + 3 * KC_NSEC_PER_SEC);
        assert_int_equal(l.pods[0]->n_sandboxes, 2);
        assert_int_equal(l.pods[0]->sandboxes[0].state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(l.pods[0]->sandboxes[1].state, KC_CONTAINER_STATE_RUNNING);
        assert_string_equal(l.pods[1]->id, "u-b");
        assert_string_equal(l.pods[1]->name, "b");
        assert_string_equal(l.pods[1]->namespace, "default");
        assert_int_equal(l.pods[1]->containers[0].hash, 0xdeadbeef);
        assert_string_equal(l.pods[1]->containers[0].image, "busybox");
        assert_int_equal(l.pods[1]->containers[1].state, KC_CONTAINER_STATE_CREATED);
        assert_string_equal(l.pods[2]->id, "u-a");
        assert_int_equal(l.pods[2]->containers[1].state, KC_CONTAINER_STATE_EXITED);
        kc_pod_list_done(&l);

        /* The sleeper exits after 10 s; both faces see it. */
        kc_fake_clock_advance(f->clock, 10 * KC_NSEC_PER_SEC);
        assert_faces_agree(f, true);
        assert_faces_agree(f, false);
        assert_int_equal(f->mgr_pr.ops->get_pods(f->mgr_pr.self, false, &l, NULL), 0);
        /* u-b: no running container left, but its sandbox is still ready. */
        assert_non_null(find_pod(&l, "u-b"));
        assert_int_equal(find_pod(&l, "u-b")->n_containers, 0);
        assert_int_equal(find_pod(&l, "u-b")->n_sandboxes, 1);
        kc_pod_list_done(&l);

        for (int i = 0; i < 4; i++)
                free(sb[i]);
        for (int i = 0; i < 6; i++)
                free(c[i]);
}

static const char *const ips1[] = { "10.1.0.1", "fd00::1" };

static void test_get_pods_set_pods_world(void **state)
{
        struct fixture *f = *state;
        const struct kc_sim_container_spec ctrs1[] = {
                { "c1", "app", KC_CONTAINER_STATE_RUNNING, 0 },
                { "c2", "side", KC_CONTAINER_STATE_EXITED, 1 },
        };
        const struct kc_sim_container_spec sbs1[] = {
                { "s1", "POD", KC_CONTAINER_STATE_RUNNING, 0 },
                { "s0", "POD", KC_CONTAINER_STATE_EXITED, 0 },
        };
        const struct kc_sim_container_spec ctrs2[] = { { "c3", "app", KC_CONTAINER_STATE_RUNNING,
                                                         0 } };
        const struct kc_sim_container_spec sbs2[] = { { "s2", "POD", KC_CONTAINER_STATE_RUNNING,
                                                        0 } };
        const struct kc_sim_pod_spec pods[] = {
                { .id = "p1",
                  .name = "one",
                  .namespace = "ns",
                  .ips = ips1,
                  .n_ips = 2,
                  .containers = ctrs1,
                  .n_containers = 2,
                  .sandboxes = sbs1,
                  .n_sandboxes = 2 },
                { .id = "p2",
                  .name = "two",
                  .namespace = "ns",
                  .containers = ctrs2,
                  .n_containers = 1,
                  .sandboxes = sbs2,
                  .n_sandboxes = 1 },
        };
        struct kc_pod_list a = { 0 }, b = { 0 };

        assert_int_equal(kc_sim_set_pods(f->sim, pods, 2), 0);
        assert_faces_agree(f, true);
        assert_faces_agree(f, false);
        /* Pods loaded with set_pods come out of the manager in the given order. */
        assert_int_equal(f->mgr_pr.ops->get_pods(f->mgr_pr.self, true, &a, NULL), 0);
        assert_int_equal(f->sim_pr.ops->get_pods(f->sim_pr.self, true, &b, NULL), 0);
        for (size_t i = 0; i < a.n; i++)
                assert_string_equal(a.pods[i]->id, b.pods[i]->id);
        kc_pod_list_done(&a);
        kc_pod_list_done(&b);
}

static void test_get_pod_status_ips(void **state)
{
        struct fixture *f = *state;
        struct kc_pod_status *s = NULL;
        struct kc_runtime_error err = { 0 };
        char *old, *new, *c1, *c2;

        old = run_sandbox(f, "u1", "p", 0);
        c1 = start_ctr(f, old, "u1", "p", "app", "exit 2", 0, true);
        kc_fake_clock_advance(f->clock, KC_NSEC_PER_SEC);
        new = run_sandbox(f, "u1", "p", 1);
        c2 = start_ctr(f, new, "u1", "p", "app", "top", 1, true);

        assert_int_equal(kc_runtime_manager_get_pod_status(f->mgr, "u1", "p", "default", &s, &err),
                         0);
        assert_string_equal(s->id, "u1");
        assert_string_equal(s->name, "p");
        assert_string_equal(s->namespace, "default");
        assert_int_equal(s->n_sandboxes, 2);
        assert_string_equal(s->sandboxes[0].id, new); /* newest first */
        assert_string_equal(s->sandboxes[1].id, old);
        assert_int_equal(s->sandboxes[0].attempt, 1);
        assert_int_equal(s->n_ips, 1);
        assert_string_equal(s->ips[0], s->sandboxes[0].ip);
        assert_string_equal(s->ips[0], "10.88.0.3");
        assert_int_equal(s->n_containers, 2);
        assert_string_equal(s->containers[0].id, c2); /* newest first */
        assert_int_equal(s->containers[0].restart_count, 1);
        assert_int_equal(s->containers[0].hash, 0xdeadbeef);
        assert_int_equal(s->containers[0].state, KC_CONTAINER_STATE_RUNNING);
        assert_string_equal(s->containers[1].id, c1);
        assert_int_equal(s->containers[1].state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(s->containers[1].exit_code, 2);
        s = kc_pod_status_unref(s);

        /* The newest sandbox is not ready: no IPs, although the older one still is. */
        assert_int_equal(f->svc.ops->stop_pod_sandbox(f->svc.self, new, NULL), 0);
        assert_int_equal(kc_runtime_manager_get_pod_status(f->mgr, "u1", "p", "default", &s, &err),
                         0);
        assert_int_equal(s->n_ips, 0);
        assert_int_equal(s->sandboxes[0].state, KC_SANDBOX_STATE_NOTREADY);
        assert_int_equal(s->sandboxes[1].state, KC_SANDBOX_STATE_READY);
        assert_int_equal(s->containers[0].exit_code, 137);
        s = kc_pod_status_unref(s);
        assert_faces_agree(f, true);

        /* A pod the runtime does not know: an empty status, no error. */
        assert_int_equal(kc_runtime_manager_get_pod_status(f->mgr, "nope", "n", "ns", &s, &err), 0);
        assert_string_equal(s->id, "nope");
        assert_int_equal(s->n_sandboxes + s->n_containers + s->n_ips, 0);
        s = kc_pod_status_unref(s);

        free(old);
        free(new);
        free(c1);
        free(c2);
}

/*
 * D54: the status of a listed pod reads each listed object's status now. An
 * object removed since the listing is skipped, as GetPodStatus skips one
 * removed between its own listing and the status call; a change since the
 * listing shows; a failed status call fails it, out-parameter untouched.
 */
static void test_get_listed_pod_status(void **state)
{
        struct fixture *f = *state;
        struct kc_pod_list l = { 0 };
        struct kc_pod_status *s = NULL;
        struct kc_runtime_error err = { 0 };
        const struct kc_pod *p;
        char *old, *new, *c1, *c2;

        old = run_sandbox(f, "u1", "p", 0);
        c1 = start_ctr(f, old, "u1", "p", "app", "top", 0, true);
        kc_fake_clock_advance(f->clock, KC_NSEC_PER_SEC);
        new = run_sandbox(f, "u1", "p", 1);
        c2 = start_ctr(f, new, "u1", "p", "app", "top", 1, true);
        assert_int_equal(f->mgr_pr.ops->get_pods(f->mgr_pr.self, true, &l, &err), 0);
        assert_int_equal(l.n, 1);
        p = l.pods[0];
        assert_int_equal(p->n_sandboxes, 2);
        assert_int_equal(p->n_containers, 2);

        /* Since the listing: the older sandbox and its container gone, the newer stopped. */
        assert_int_equal(f->svc.ops->remove_container(f->svc.self, c1, NULL), 0);
        assert_int_equal(f->svc.ops->stop_pod_sandbox(f->svc.self, old, NULL), 0);
        assert_int_equal(f->svc.ops->remove_pod_sandbox(f->svc.self, old, NULL), 0);
        assert_int_equal(f->svc.ops->stop_pod_sandbox(f->svc.self, new, NULL), 0);
        assert_int_equal(f->mgr_pr.ops->get_listed_pod_status(f->mgr_pr.self, p, NULL, &s, &err),
                         0);
        assert_string_equal(s->id, "u1");
        assert_string_equal(s->name, "p");
        assert_string_equal(s->namespace, "default");
        assert_int_equal(s->n_sandboxes, 1);
        assert_string_equal(s->sandboxes[0].id, new);
        assert_int_equal(s->sandboxes[0].state, KC_SANDBOX_STATE_NOTREADY);
        assert_int_equal(s->n_ips, 0);
        assert_int_equal(s->n_containers, 1);
        assert_string_equal(s->containers[0].id, c2);
        assert_int_equal(s->containers[0].state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(s->containers[0].exit_code, 137);
        s = kc_pod_status_unref(s);
        assert_listed_status_agrees(f->mgr_pr, p);

        s = (void *)0x2;
        assert_int_equal(kc_sim_inject_fault(f->sim, "ContainerStatus", c2, "inspect failed", 1),
                         0);
        assert_int_equal(f->mgr_pr.ops->get_listed_pod_status(f->mgr_pr.self, p, NULL, &s, &err),
                         -EIO);
        assert_string_equal(err.message, "inspect failed");
        assert_ptr_equal(s, (void *)0x2);
        assert_int_equal(f->mgr_pr.ops->get_listed_pod_status(f->mgr_pr.self, NULL, NULL, &s, &err),
                         -EINVAL);
        assert_ptr_equal(s, (void *)0x2);

        kc_pod_list_done(&l);
        free(old);
        free(new);
        free(c1);
        free(c2);
}

/*
 * The listed pod's status given @prev: how many ContainerStatus calls it
 * took, and PodSandboxStatus calls in *ret_sb (may be NULL).
 */
static uint64_t listed_status_calls(struct fixture *f, const struct kc_pod *p,
                                    const struct kc_pod_status *prev, struct kc_pod_status **ret,
                                    uint64_t *ret_sb)
{
        uint64_t before = sim_op_count(f->sim, "ContainerStatus");
        uint64_t sb_before = sim_op_count(f->sim, "PodSandboxStatus");

        assert_int_equal(f->mgr_pr.ops->get_listed_pod_status(f->mgr_pr.self, p, prev, ret, NULL),
                         0);
        if (ret_sb)
                *ret_sb = sim_op_count(f->sim, "PodSandboxStatus") - sb_before;
        return sim_op_count(f->sim, "ContainerStatus") - before;
}

/* A status of pod "u1" with the one container @c. */
static struct kc_pod_status *status_of_one(const struct kc_container_status *c)
{
        struct kc_pod_status *s = NULL;

        assert_int_equal(
                kc_pod_status_new(
                        &(struct kc_pod_status){ .id = "u1", .containers = c, .n_containers = 1 },
                        &s),
                0);
        return s;
}

/* The index of container @id in @s. */
static size_t status_index(const struct kc_pod_status *s, const char *id)
{
        for (size_t i = 0; i < s->n_containers; i++)
                if (strcmp(s->containers[i].id, id) == 0)
                        return i;
        fail_msg("no container %s in the status", id);
        return 0;
}

/* What a runtime was told to prefetch (test_prefetch_listed_pod_status). */
struct prefetch_rec {
        unsigned calls;
        bool far;
        const char *ids[8];
        size_t n;
};

static void rec_prefetch(void *self, const char *const *ids, size_t n, bool far)
{
        struct prefetch_rec *r = self;

        r->calls++;
        r->far = far;
        r->n = n < 8 ? n : 8;
        memcpy(r->ids, ids, r->n * sizeof(*ids));
}

/*
 * The prefetch hint before get_listed_pod_status (issue 18): the runtime is
 * told about the containers not listed as before, two calls ahead "far",
 * one "near", three ahead not at all (the manager asks for the id strings
 * itself). The simulated runtime takes ids it has and ids it does not.
 */
static void test_prefetch_listed_pod_status(void **state)
{
        static const struct kc_runtime_service_ops rec_ops = {
                .prefetch_container_statuses = rec_prefetch,
        };
        struct fixture *f = *state;
        struct prefetch_rec rec = { 0 };
        _cleanup_(kc_runtime_manager_freep) struct kc_runtime_manager *m = NULL;
        struct kc_pod_list l1 = { 0 }, l2 = { 0 };
        struct kc_pod_status *s = NULL;
        const char *ids[4], *b_id;
        char *sb, *a, *b;

        sb = run_sandbox(f, "u1", "p", 0);
        a = start_ctr(f, sb, "u1", "p", "a", "top", 0, true);
        b = start_ctr(f, sb, "u1", "p", "b", "top", 0, true);
        assert_int_equal(f->mgr_pr.ops->get_pods(f->mgr_pr.self, true, &l1, NULL), 0);
        assert_int_equal(f->svc.ops->stop_container(f->svc.self, b, 0, NULL), 0);
        assert_int_equal(f->mgr_pr.ops->get_pods(f->mgr_pr.self, true, &l2, NULL), 0);
        assert_int_equal(l2.n, 1);

        /* Which: b alone changed; with nothing to compare, every one; at most max. */
        assert_int_equal(kc__listed_changed_ids(l2.pods[0], l1.pods[0], ids, 4), 1);
        assert_string_equal(ids[0], b);
        b_id = ids[0];
        assert_int_equal(kc__listed_changed_ids(l2.pods[0], l2.pods[0], ids, 4), 0);
        assert_int_equal(kc__listed_changed_ids(l2.pods[0], NULL, ids, 4), 2);
        assert_int_equal(kc__listed_changed_ids(l2.pods[0], NULL, ids, 1), 1);

        /* When: through a runtime that records the hints. */
        assert_int_equal(
                kc_runtime_manager_new((struct kc_runtime_service){ &rec_ops, &rec }, f->clock, &m),
                0);
        kc_runtime_manager_prefetch_listed_pod_status(m, l2.pods[0], l1.pods[0], 3);
        assert_int_equal(rec.calls, 0);
        kc_runtime_manager_prefetch_listed_pod_status(m, l2.pods[0], l1.pods[0], 2);
        assert_int_equal(rec.calls, 1);
        assert_true(rec.far);
        assert_int_equal(rec.n, 1);
        assert_ptr_equal(rec.ids[0], b_id);
        kc_runtime_manager_prefetch_listed_pod_status(m, l2.pods[0], l1.pods[0], 1);
        assert_int_equal(rec.calls, 2);
        assert_false(rec.far);
        kc_runtime_manager_prefetch_listed_pod_status(m, l2.pods[0], l2.pods[0], 1);
        assert_int_equal(rec.calls, 2);

        /* The simulated runtime, through the manager: a removed id is only not found. */
        assert_int_equal(f->svc.ops->remove_container(f->svc.self, b, NULL), 0);
        for (unsigned ahead = 3; ahead > 0; ahead--)
                f->mgr_pr.ops->prefetch_listed_pod_status(f->mgr_pr.self, l2.pods[0], NULL, ahead);
        assert_int_equal(listed_status_calls(f, l2.pods[0], NULL, &s, NULL), 2);
        assert_int_equal(s->n_containers, 1);
        assert_string_equal(s->containers[0].id, a);
        kc_pod_status_unref(s);

        kc_pod_list_done(&l1);
        kc_pod_list_done(&l2);
        free(sb);
        free(a);
        free(b);
}

/*
 * D55: given an earlier status, a listed container that status gives in
 * the state the listing gives now (created, running, exited) is taken from
 * it without a ContainerStatus call; one whose state, CreatedAt or ID
 * differs, or whose state is unknown, is read. The new status outlives
 * the earlier one.
 */
static void test_listed_status_reuses_prev(void **state)
{
        struct fixture *f = *state;
        struct kc_pod_list l1 = { 0 }, l2 = { 0 };
        struct kc_pod_status *s1 = NULL, *s2 = NULL, *fresh = NULL, *s = NULL, *fake = NULL;
        struct kc_container_status fake_c;
        struct kc_container listed[3];
        struct kc_sandbox_status fake_sb[2];
        struct kc_pod tmpl, *pod = NULL;
        uint64_t n_sb = 0;
        char *sb, *a, *b, *c;
        size_t i;

        sb = run_sandbox(f, "u1", "p", 0);
        a = start_ctr(f, sb, "u1", "p", "a", "top", 0, true);
        b = start_ctr(f, sb, "u1", "p", "b", "top", 0, true);
        c = start_ctr(f, sb, "u1", "p", "c", "top", 0, false);
        assert_int_equal(f->mgr_pr.ops->get_pods(f->mgr_pr.self, true, &l1, NULL), 0);
        assert_int_equal(l1.n, 1);
        /* No earlier status: every container and the sandbox are read. */
        assert_int_equal(listed_status_calls(f, l1.pods[0], NULL, &s1, &n_sb), 3);
        assert_int_equal(n_sb, 1);
        assert_int_equal(s1->n_ips, 1);

        /* b exits: only b is read; a (running) and c (created) come from s1. */
        assert_int_equal(f->svc.ops->stop_container(f->svc.self, b, 0, NULL), 0);
        assert_int_equal(f->mgr_pr.ops->get_pods(f->mgr_pr.self, true, &l2, NULL), 0);
        assert_int_equal(listed_status_calls(f, l2.pods[0], s1, &s2, &n_sb), 1);
        /* The sandbox is still ready: taken too, with the pod's IP. */
        assert_int_equal(n_sb, 0);
        assert_int_equal(
                f->mgr_pr.ops->get_pod_status(f->mgr_pr.self, "u1", "p", "default", &fresh, NULL),
                0);
        assert_true(kc_pod_status_equal(s2, fresh));
        /* Named by the pod's own id strings, those taken from s1 too: found by address next. */
        for (i = 0; i < 3; i++)
                assert_ptr_equal(s2->containers[status_index(s2, l2.pods[0]->containers[i].id)].id,
                                 l2.pods[0]->containers[i].id);
        assert_ptr_equal(s2->sandboxes[0].id, l2.pods[0]->sandboxes[0].id);
        /* What s2 took from s1 stays when s1 goes (ASan sees a read of freed memory). */
        s1 = kc_pod_status_unref(s1);
        assert_true(kc_pod_status_equal(s2, fresh));
        assert_int_equal(s2->containers[status_index(s2, b)].state, KC_CONTAINER_STATE_EXITED);
        fresh = kc_pod_status_unref(fresh);

        /* Nothing changed: nothing is read, and the status is the same. */
        assert_int_equal(listed_status_calls(f, l2.pods[0], s2, &s, &n_sb), 0);
        assert_int_equal(n_sb, 0);
        assert_true(kc_pod_status_equal(s, s2));
        s = kc_pod_status_unref(s);

        /* Taken on trust: an earlier entry in the same state is what the status gives. */
        i = status_index(s2, b);
        fake_c = s2->containers[i];
        fake_c.exit_code = 99;
        fake = status_of_one(&fake_c);
        assert_int_equal(listed_status_calls(f, l2.pods[0], fake, &s, NULL), 2);
        assert_int_equal(s->containers[status_index(s, b)].exit_code, 99);
        s = kc_pod_status_unref(s);
        fake = kc_pod_status_unref(fake);

        /* Another CreatedAt, another ID or another state: read. */
        for (int k = 0; k < 3; k++) {
                fake_c = s2->containers[i];
                if (k == 0)
                        fake_c.created_at++;
                else if (k == 1)
                        fake_c.id = a;
                else
                        fake_c.state = KC_CONTAINER_STATE_RUNNING;
                fake = status_of_one(&fake_c);
                assert_int_equal(listed_status_calls(f, l2.pods[0], fake, &s, NULL), 3);
                assert_int_equal(s->containers[status_index(s, b)].exit_code,
                                 s2->containers[i].exit_code);
                s = kc_pod_status_unref(s);
                fake = kc_pod_status_unref(fake);
        }

        /* A container listed in an unknown state is read, whatever the earlier status says. */
        tmpl = *l2.pods[0];
        memcpy(listed, tmpl.containers, sizeof(listed));
        for (i = 0; i < 3; i++)
                listed[i].state = KC_CONTAINER_STATE_UNKNOWN;
        tmpl.containers = listed;
        assert_int_equal(kc_pod_new(&tmpl, &pod), 0);
        fake_c = s2->containers[0];
        fake_c.state = KC_CONTAINER_STATE_UNKNOWN;
        fake = status_of_one(&fake_c);
        assert_int_equal(listed_status_calls(f, pod, fake, &s, NULL), 3);
        s = kc_pod_status_unref(s);
        fake = kc_pod_status_unref(fake);
        pod = kc_pod_unref(pod);

        /*
         * A ready sandbox that was not the newest in the earlier status is
         * read: the IPs that status has came from the newer one.
         */
        fake_sb[0] = s2->sandboxes[0];
        fake_sb[0].id = "gone";
        fake_sb[0].created_at++;
        fake_sb[0].ip = "192.0.2.99";
        fake_sb[1] = s2->sandboxes[0];
        assert_int_equal(kc_pod_status_new(&(struct kc_pod_status){ .id = "u1",
                                                                    .ips = &fake_sb[0].ip,
                                                                    .n_ips = 1,
                                                                    .sandboxes = fake_sb,
                                                                    .n_sandboxes = 2 },
                                           &fake),
                         0);
        assert_int_equal(listed_status_calls(f, l2.pods[0], fake, &s, &n_sb), 3);
        assert_int_equal(n_sb, 1);
        assert_int_equal(s->n_ips, 1);
        assert_string_equal(s->ips[0], s2->ips[0]);
        s = kc_pod_status_unref(s);
        fake = kc_pod_status_unref(fake);

        /* The sandbox stops: read, no IP. */
        assert_int_equal(f->svc.ops->stop_pod_sandbox(f->svc.self, sb, NULL), 0);
        kc_pod_list_done(&l1);
        assert_int_equal(f->mgr_pr.ops->get_pods(f->mgr_pr.self, true, &l1, NULL), 0);
        assert_int_equal(listed_status_calls(f, l1.pods[0], s2, &s, &n_sb), 1);
        assert_int_equal(n_sb, 1);
        assert_int_equal(s->n_ips, 0);
        assert_int_equal(s->sandboxes[0].state, KC_SANDBOX_STATE_NOTREADY);
        assert_int_equal(
                f->mgr_pr.ops->get_pod_status(f->mgr_pr.self, "u1", "p", "default", &fresh, NULL),
                0);
        assert_true(kc_pod_status_equal(s, fresh));
        fresh = kc_pod_status_unref(fresh);
        s = kc_pod_status_unref(s);

        s2 = kc_pod_status_unref(s2);
        kc_pod_list_done(&l1);
        kc_pod_list_done(&l2);
        free(sb);
        free(a);
        free(b);
        free(c);
}

static void test_errors_propagate(void **state)
{
        struct fixture *f = *state;
        struct kc_pod_list l = { .pods = (void *)0x1, .n = 7 };
        struct kc_pod_status *s = (void *)0x2;
        struct kc_runtime_error err = { 0 };
        char *sb, *c;

        sb = run_sandbox(f, "u1", "p", 0);
        c = start_ctr(f, sb, "u1", "p", "app", "top", 0, true);

        assert_int_equal(kc_sim_inject_fault(f->sim, "ListPodSandbox", NULL, "runtime down", 2), 0);
        assert_int_equal(f->mgr_pr.ops->get_pods(f->mgr_pr.self, true, &l, &err), -EIO);
        assert_int_equal(err.code, KC_RUNTIME_UNKNOWN);
        assert_string_equal(err.message, "runtime down");
        assert_ptr_equal(l.pods, (void *)0x1);
        assert_int_equal(l.n, 7);
        memset(&err, 0, sizeof(err));
        assert_int_equal(kc_runtime_manager_get_pod_status(f->mgr, "u1", "p", "default", &s, &err),
                         -EIO);
        assert_string_equal(err.message, "runtime down");
        assert_ptr_equal(s, (void *)0x2);

        assert_int_equal(kc_sim_inject_fault(f->sim, "ListContainers", NULL, "list failed", 1), 0);
        assert_int_equal(f->mgr_pr.ops->get_pods(f->mgr_pr.self, true, &l, &err), -EIO);
        assert_string_equal(err.message, "list failed");
        assert_ptr_equal(l.pods, (void *)0x1);

        assert_int_equal(kc_sim_inject_fault(f->sim, "ContainerStatus", c, "inspect failed", 1), 0);
        assert_int_equal(kc_runtime_manager_get_pod_status(f->mgr, "u1", "p", "default", &s, &err),
                         -EIO);
        assert_int_equal(err.code, KC_RUNTIME_UNKNOWN);
        assert_string_equal(err.message, "inspect failed");
        assert_ptr_equal(s, (void *)0x2);

        assert_int_equal(kc_sim_inject_fault(f->sim, "PodSandboxStatus", sb, "sandbox failed", 1),
                         0);
        assert_int_equal(kc_runtime_manager_get_pod_status(f->mgr, "u1", "p", "default", &s, &err),
                         -EIO);
        assert_string_equal(err.message, "sandbox failed");

        /* All consumed: back to normal. */
        s = NULL;
        assert_int_equal(kc_runtime_manager_get_pod_status(f->mgr, "u1", "p", "default", &s, &err),
                         0);
        assert_int_equal(s->n_containers, 1);
        kc_pod_status_unref(s);
        l = (struct kc_pod_list){ 0 };
        assert_int_equal(f->mgr_pr.ops->get_pods(f->mgr_pr.self, true, &l, &err), 0);
        assert_int_equal(l.n, 1);
        kc_pod_list_done(&l);
        free(sb);
        free(c);
}

/* ------------------------------------------------------------------------ */
/* The GetPods reuse cache                                                    */

static const struct kc_pod *find_or_null(const struct kc_pod_list *l, const char *uid)
{
        return find_pod(l, uid);
}

/* Unchanged pods come back as the same objects; any difference rebuilds just that pod. */
static void test_get_pods_reuse(void **state)
{
        struct fixture *f = *state;
        struct kc_sim_container_spec c1[] = {
                { "c1", "app", KC_CONTAINER_STATE_RUNNING, 0 },
                { "c2", "side", KC_CONTAINER_STATE_RUNNING, 0 },
        };
        struct kc_sim_container_spec c2[] = { { "c3", "app", KC_CONTAINER_STATE_RUNNING, 0 } };
        struct kc_sim_container_spec c3[] = { { "c4", "app", KC_CONTAINER_STATE_EXITED, 1 } };
        struct kc_sim_container_spec s1[] = { { "s1", "POD", KC_CONTAINER_STATE_RUNNING, 0 } };
        struct kc_sim_container_spec s2[] = { { "s2", "POD", KC_CONTAINER_STATE_RUNNING, 0 } };
        struct kc_sim_container_spec s3[] = { { "s3", "POD", KC_CONTAINER_STATE_RUNNING, 0 } };
        struct kc_sim_pod_spec pods[] = {
                { .id = "p1",
                  .name = "one",
                  .namespace = "ns",
                  .containers = c1,
                  .n_containers = 2,
                  .sandboxes = s1,
                  .n_sandboxes = 1 },
                { .id = "p2",
                  .name = "two",
                  .namespace = "ns",
                  .containers = c2,
                  .n_containers = 1,
                  .sandboxes = s2,
                  .n_sandboxes = 1 },
                { .id = "p3",
                  .name = "three",
                  .namespace = "ns",
                  .containers = c3,
                  .n_containers = 1,
                  .sandboxes = s3,
                  .n_sandboxes = 1 },
        };
        struct kc_pod_list a = { 0 }, b = { 0 }, r = { 0 };

        assert_int_equal(kc_sim_set_pods(f->sim, pods, 3), 0);
        assert_int_equal(kc_runtime_manager_get_pods(f->mgr, true, &a, NULL), 0);
        assert_int_equal(kc_runtime_manager_get_pods(f->mgr, true, &b, NULL), 0);
        assert_int_equal(a.n, 3);
        assert_int_equal(b.n, 3);
        for (size_t i = 0; i < 3; i++)
                assert_ptr_equal(a.pods[i], b.pods[i]);
        assert_int_equal(kc__runtime_manager_cached_pods(f->mgr, true), 3);
        assert_int_equal(kc__runtime_manager_cached_pods(f->mgr, false), 0);

        /* The running-only view has its own cache and does not disturb the other. */
        assert_int_equal(kc_runtime_manager_get_pods(f->mgr, false, &r, NULL), 0);
        assert_int_equal(r.n, 3);
        assert_int_equal(find_pod(&r, "p3")->n_containers, 0);
        assert_ptr_not_equal(find_pod(&r, "p3"), find_pod(&a, "p3"));
        assert_int_equal(kc__runtime_manager_cached_pods(f->mgr, false), 3);
        kc_pod_list_done(&r);
        kc_pod_list_done(&b);
        assert_int_equal(kc_runtime_manager_get_pods(f->mgr, true, &b, NULL), 0);
        for (size_t i = 0; i < 3; i++)
                assert_ptr_equal(a.pods[i], b.pods[i]);
        kc_pod_list_done(&b);

        /* One container changes state: only its pod is rebuilt. */
        c1[1].state = KC_CONTAINER_STATE_EXITED;
        assert_int_equal(kc_sim_set_pods(f->sim, pods, 3), 0);
        assert_int_equal(kc_runtime_manager_get_pods(f->mgr, true, &b, NULL), 0);
        assert_int_equal(b.n, 3);
        assert_ptr_not_equal(find_pod(&b, "p1"), find_pod(&a, "p1"));
        assert_int_equal(find_pod(&b, "p1")->containers[1].state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(find_pod(&a, "p1")->containers[1].state, KC_CONTAINER_STATE_RUNNING);
        assert_ptr_equal(find_pod(&b, "p2"), find_pod(&a, "p2"));
        assert_ptr_equal(find_pod(&b, "p3"), find_pod(&a, "p3"));
        /*
         * Issue 18: a build's scratch stays while listings change, and goes
         * once the same listing comes back 10 s after the last build.
         */
        assert_true(kc__runtime_manager_scratch_bytes(f->mgr) > 0);
        kc_fake_clock_advance(f->clock, 9 * KC_NSEC_PER_SEC);
        assert_int_equal(kc_runtime_manager_get_pods(f->mgr, true, &r, NULL), 0);
        kc_pod_list_done(&r);
        assert_true(kc__runtime_manager_scratch_bytes(f->mgr) > 0);
        kc_fake_clock_advance(f->clock, KC_NSEC_PER_SEC);
        assert_int_equal(kc_runtime_manager_get_pods(f->mgr, true, &r, NULL), 0);
        kc_pod_list_done(&r);
        assert_int_equal(kc__runtime_manager_scratch_bytes(f->mgr), 0);
        assert_faces_agree(f, true);
        assert_faces_agree(f, false);
        kc_pod_list_done(&b);

        /* A renamed pod, a replaced container: rebuilt. */
        pods[1].name = "two-b";
        c3[0].id = "c4b";
        assert_int_equal(kc_sim_set_pods(f->sim, pods, 3), 0);
        assert_int_equal(kc_runtime_manager_get_pods(f->mgr, true, &b, NULL), 0);
        assert_string_equal(find_pod(&b, "p2")->name, "two-b");
        assert_ptr_not_equal(find_pod(&b, "p2"), find_pod(&a, "p2"));
        assert_string_equal(find_pod(&b, "p3")->containers[0].id, "c4b");
        assert_ptr_not_equal(find_pod(&b, "p3"), find_pod(&a, "p3"));
        assert_faces_agree(f, true);
        kc_pod_list_done(&b);

        /* A pod leaves the listing: the cache lets go of it; the caller's reference stays good. */
        assert_int_equal(kc_sim_set_pods(f->sim, pods, 2), 0);
        assert_int_equal(kc_runtime_manager_get_pods(f->mgr, true, &b, NULL), 0);
        assert_int_equal(b.n, 2);
        assert_null(find_or_null(&b, "p3"));
        assert_int_equal(kc__runtime_manager_cached_pods(f->mgr, true), 2);
        assert_string_equal(find_pod(&a, "p3")->containers[0].id, "c4");
        kc_pod_list_done(&b);

        /* ...and comes back as a new object with the new content. */
        c3[0].state = KC_CONTAINER_STATE_RUNNING;
        assert_int_equal(kc_sim_set_pods(f->sim, pods, 3), 0);
        assert_int_equal(kc_runtime_manager_get_pods(f->mgr, true, &b, NULL), 0);
        assert_int_equal(b.n, 3);
        assert_int_equal(find_pod(&b, "p3")->containers[0].state, KC_CONTAINER_STATE_RUNNING);
        assert_faces_agree(f, true);
        assert_faces_agree(f, false);
        kc_pod_list_done(&b);
        kc_pod_list_done(&a);

        /* Nothing listed: nothing cached. */
        assert_int_equal(kc_sim_set_pods(f->sim, NULL, 0), 0);
        assert_int_equal(kc_runtime_manager_get_pods(f->mgr, true, &b, NULL), 0);
        assert_int_equal(b.n, 0);
        assert_int_equal(kc__runtime_manager_cached_pods(f->mgr, true), 0);
        kc_pod_list_done(&b);
        assert_int_equal(kc_runtime_manager_get_pods(f->mgr, false, &b, NULL), 0);
        assert_int_equal(kc__runtime_manager_cached_pods(f->mgr, false), 0);
        kc_pod_list_done(&b);
}

/* Through the CRI face: state changes, new attempts and removals are all seen. */
static void test_get_pods_reuse_cri(void **state)
{
        struct fixture *f = *state;
        struct kc_pod_list a = { 0 }, b = { 0 };
        char *sb0, *sb1, *c0, *c1, *c2;

        sb0 = run_sandbox(f, "u-a", "a", 0);
        c0 = start_ctr(f, sb0, "u-a", "a", "app", "top", 0, true);
        c1 = start_ctr(f, sb0, "u-a", "a", "side", "sleep 5", 0, true);
        kc_fake_clock_advance(f->clock, KC_NSEC_PER_SEC);
        sb1 = run_sandbox(f, "u-b", "b", 0);
        c2 = start_ctr(f, sb1, "u-b", "b", "app", "top", 0, true);

        assert_int_equal(kc_runtime_manager_get_pods(f->mgr, true, &a, NULL), 0);
        /* The sleeper exits on its own (the lazy clock): u-a changes, u-b does not. */
        kc_fake_clock_advance(f->clock, 5 * KC_NSEC_PER_SEC);
        assert_int_equal(kc_runtime_manager_get_pods(f->mgr, true, &b, NULL), 0);
        assert_ptr_not_equal(find_pod(&b, "u-a"), find_pod(&a, "u-a"));
        assert_int_equal(find_pod(&b, "u-a")->containers[1].state, KC_CONTAINER_STATE_EXITED);
        assert_ptr_equal(find_pod(&b, "u-b"), find_pod(&a, "u-b"));
        assert_faces_agree(f, true);
        kc_pod_list_done(&a);
        a = b;

        /* A removed container. */
        assert_int_equal(f->svc.ops->remove_container(f->svc.self, c1, NULL), 0);
        assert_int_equal(kc_runtime_manager_get_pods(f->mgr, true, &b, NULL), 0);
        assert_int_equal(find_pod(&b, "u-a")->n_containers, 1);
        assert_ptr_equal(find_pod(&b, "u-b"), find_pod(&a, "u-b"));
        assert_faces_agree(f, true);
        kc_pod_list_done(&a);
        a = b;

        /* A stopped sandbox: the pod's sandbox entry changes state. */
        assert_int_equal(f->svc.ops->stop_pod_sandbox(f->svc.self, sb1, NULL), 0);
        assert_int_equal(kc_runtime_manager_get_pods(f->mgr, true, &b, NULL), 0);
        assert_int_equal(find_pod(&b, "u-b")->sandboxes[0].state, KC_CONTAINER_STATE_EXITED);
        assert_ptr_not_equal(find_pod(&b, "u-b"), find_pod(&a, "u-b"));
        assert_faces_agree(f, true);
        assert_faces_agree(f, false);
        kc_pod_list_done(&a);
        kc_pod_list_done(&b);

        /* Removed entirely. */
        assert_int_equal(f->svc.ops->remove_pod_sandbox(f->svc.self, sb1, NULL), 0);
        assert_int_equal(kc_runtime_manager_get_pods(f->mgr, true, &b, NULL), 0);
        assert_int_equal(b.n, 1);
        assert_int_equal(kc__runtime_manager_cached_pods(f->mgr, true), 1);
        kc_pod_list_done(&b);
        free(sb0);
        free(sb1);
        free(c0);
        free(c1);
        free(c2);
}

/*
 * A service whose list results are shared arenas, as a CRI list memo hands
 * out (issue 18): one sandbox and one container of pod u-s, the same
 * result on every call until the test swaps it.
 */
struct shared_listing {
        struct kc_arena *arena;
        struct kc_pod_sandbox *sb;
        struct kc_cri_container *c;
        /* The last calls' filters: copies, or the NULLs asked for. */
        struct kc_pod_sandbox_filter sf, *sf_seen;
        struct kc_container_filter cf, *cf_seen;
};

static const struct kc_label shared_labels[] = { { KC_LABEL_POD_UID, "u-s" },
                                                 { KC_LABEL_POD_NAME, "s" },
                                                 { KC_LABEL_POD_NAMESPACE, "default" } };

static void shared_listing_make(struct shared_listing *l, enum kc_container_state state)
{
        kc_arena_free(l->arena);
        assert_int_equal(kc_arena_new(&l->arena), 0);
        l->sb = kc_arena_alloc(l->arena, sizeof(*l->sb));
        l->c = kc_arena_alloc(l->arena, sizeof(*l->c));
        assert_non_null(l->sb);
        assert_non_null(l->c);
        *l->sb = (struct kc_pod_sandbox){ .id = "sb-s",
                                          .metadata = { "s", "u-s", "default", 0 },
                                          .state = KC_SANDBOX_STATE_READY,
                                          .created_at = 10,
                                          .labels = shared_labels,
                                          .n_labels = 3 };
        *l->c = (struct kc_cri_container){ .id = "c-s",
                                           .pod_sandbox_id = "sb-s",
                                           .metadata = { "app", 0 },
                                           .image = "busybox",
                                           .state = state,
                                           .created_at = 11,
                                           .labels = shared_labels,
                                           .n_labels = 3 };
}

static int shared_list_pod_sandbox(void *self, const struct kc_pod_sandbox_filter *filter,
                                   struct kc_pod_sandbox_list *ret, struct kc_runtime_error *err)
{
        struct shared_listing *l = self;

        (void)err;
        l->sf_seen = filter ? &l->sf : NULL;
        if (filter)
                l->sf = *filter;
        *ret = (struct kc_pod_sandbox_list){ .items = l->sb,
                                             .n = 1,
                                             .arena = kc_arena_ref(l->arena) };
        return 0;
}

static int shared_list_containers(void *self, const struct kc_container_filter *filter,
                                  struct kc_container_list *ret, struct kc_runtime_error *err)
{
        struct shared_listing *l = self;

        (void)err;
        l->cf_seen = filter ? &l->cf : NULL;
        if (filter)
                l->cf = *filter;
        *ret = (struct kc_container_list){ .items = l->c, .n = 1, .arena = kc_arena_ref(l->arena) };
        return 0;
}

static const struct kc_runtime_service_ops shared_ops = {
        .list_pod_sandbox = shared_list_pod_sandbox,
        .list_containers = shared_list_containers,
};

/* The same shared listing again is the same pods, without reading the items again. */
static void test_get_pods_same_shared_listing(void **state)
{
        struct fixture *f = *state;
        struct shared_listing l = { 0 };
        struct kc_runtime_manager *mgr = NULL;
        struct kc_pod_list a = { 0 }, b = { 0 };

        shared_listing_make(&l, KC_CONTAINER_STATE_RUNNING);
        assert_int_equal(kc_runtime_manager_new((struct kc_runtime_service){ &shared_ops, &l },
                                                f->clock, &mgr),
                         0);
        /* Before any full listing, GetPods(false) builds a cache of its own. */
        assert_int_equal(kc_runtime_manager_get_pods(mgr, false, &b, NULL), 0);
        assert_int_equal(kc__runtime_manager_cached_pods(mgr, false), 1);
        kc_pod_list_done(&b);
        assert_int_equal(kc_runtime_manager_get_pods(mgr, true, &a, NULL), 0);
        assert_int_equal(a.n, 1);
        assert_int_equal(a.pods[0]->containers[0].state, KC_CONTAINER_STATE_RUNNING);
        /* A probe, not something a memo does: the manager must not read the items again. */
        l.c->state = KC_CONTAINER_STATE_EXITED;
        assert_int_equal(kc_runtime_manager_get_pods(mgr, true, &b, NULL), 0);
        assert_int_equal(b.n, 1);
        assert_ptr_equal(b.pods[0], a.pods[0]);
        assert_int_equal(b.pods[0]->containers[0].state, KC_CONTAINER_STATE_RUNNING);
        kc_pod_list_done(&b);
        /*
         * GetPods(false) handed the very listing GetPods(true) was built
         * from: the full cache's pods, the items not read again either, and
         * no cache of its own (issue 18).
         */
        assert_int_equal(kc_runtime_manager_get_pods(mgr, false, &b, NULL), 0);
        assert_int_equal(b.n, 1);
        assert_ptr_equal(b.pods[0], a.pods[0]);
        assert_int_equal(b.pods[0]->containers[0].state, KC_CONTAINER_STATE_RUNNING);
        assert_int_equal(kc__runtime_manager_cached_pods(mgr, false), 0);
        assert_int_equal(kc__runtime_manager_listing_hits(mgr, false), 1);
        kc_pod_list_done(&b);

        /* Another listing is read. */
        shared_listing_make(&l, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(kc_runtime_manager_get_pods(mgr, true, &b, NULL), 0);
        assert_ptr_not_equal(b.pods[0], a.pods[0]);
        assert_int_equal(b.pods[0]->containers[0].state, KC_CONTAINER_STATE_EXITED);
        kc_pod_list_done(&a);
        kc_pod_list_done(&b);
        kc_runtime_manager_free(mgr);
        kc_arena_free(l.arena);
}

/*
 * The filters GetPods lists with are kubelet's (F-PLEG-02): GetPods(true)
 * no sandbox filter at all and an empty container filter; GetPods(false)
 * the ready sandboxes and the running containers.
 */
static void test_get_pods_filters_as_kubelet(void **state)
{
        struct fixture *f = *state;
        struct shared_listing l = { 0 };
        struct kc_runtime_manager *mgr = NULL;
        struct kc_pod_list a = { 0 };

        shared_listing_make(&l, KC_CONTAINER_STATE_RUNNING);
        assert_int_equal(kc_runtime_manager_new((struct kc_runtime_service){ &shared_ops, &l },
                                                f->clock, &mgr),
                         0);
        assert_int_equal(kc_runtime_manager_get_pods(mgr, true, &a, NULL), 0);
        kc_pod_list_done(&a);
        assert_null(l.sf_seen);
        assert_non_null(l.cf_seen);
        assert_int_equal(l.cf.state, -1);
        assert_null(l.cf.id);
        assert_null(l.cf.pod_sandbox_id);
        assert_int_equal(l.cf.n_label_selector, 0);
        assert_int_equal(kc_runtime_manager_get_pods(mgr, false, &a, NULL), 0);
        kc_pod_list_done(&a);
        assert_non_null(l.sf_seen);
        assert_int_equal(l.sf.state, KC_SANDBOX_STATE_READY);
        assert_null(l.sf.id);
        assert_int_equal(l.sf.n_label_selector, 0);
        assert_non_null(l.cf_seen);
        assert_int_equal(l.cf.state, KC_CONTAINER_STATE_RUNNING);
        kc_runtime_manager_free(mgr);
        kc_arena_free(l.arena);
}

static uint64_t rng_next(uint64_t *s)
{
        /* splitmix64: deterministic, good enough to shuffle a world. */
        uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

/*
 * A service listing what the test describes, copied into a fresh arena on
 * every call (no pointer the manager saw before comes back), in the order
 * the test gives: the manager's position-based fast paths (issue 18) must
 * give what a manager without any history gives.
 */
#define RND_PODS 8

struct rnd_world {
        char uid[RND_PODS][24], name[RND_PODS][24], ids[RND_PODS][5][32];
        struct kc_label labels[RND_PODS][3];
        struct kc_pod_sandbox sb[RND_PODS * 2];
        struct kc_cri_container c[RND_PODS * 3];
        size_t n_sb, n_c;
};

static const struct kc_label rnd_hash[] = { { KC_ANNOTATION_CONTAINER_HASH, "1f" } };

/*
 * *ret: the items of @p w's array @p arr (sandboxes or containers, whose
 * fields have the same names) that @p filter (NULL: all) matches, each
 * copied with @p copy into a fresh arena. Both list ops are this one loop.
 */
#define RND_LIST(w, filter, arr, n_arr, copy, ret)                                                 \
        do {                                                                                       \
                typeof(*(ret)) l_ = { 0 };                                                         \
                                                                                                   \
                assert_int_equal(kc_arena_new(&l_.arena), 0);                                      \
                l_.items = kc_arena_alloc(l_.arena, sizeof(*l_.items) * ((w)->n_arr + 1));         \
                assert_non_null(l_.items);                                                         \
                for (size_t i_ = 0; i_ < (w)->n_arr; i_++)                                         \
                        if (!(filter) ||                                                           \
                            (((filter)->state < 0 ||                                               \
                              (int)(w)->arr[i_].state == (filter)->state) &&                       \
                             kc__labels_match((w)->arr[i_].labels, (w)->arr[i_].n_labels,          \
                                              (filter)->label_selector,                            \
                                              (filter)->n_label_selector)))                        \
                                assert_int_equal(copy(l_.arena, &(w)->arr[i_], &l_.items[l_.n++]), \
                                                 0);                                               \
                *(ret) = l_;                                                                       \
        } while (0)

static int rnd_list_pod_sandbox(void *self, const struct kc_pod_sandbox_filter *filter,
                                struct kc_pod_sandbox_list *ret, struct kc_runtime_error *err)
{
        struct rnd_world *w = self;

        (void)err;
        RND_LIST(w, filter, sb, n_sb, kc__pod_sandbox_copy, ret);
        return 0;
}

static int rnd_list_containers(void *self, const struct kc_container_filter *filter,
                               struct kc_container_list *ret, struct kc_runtime_error *err)
{
        struct rnd_world *w = self;

        (void)err;
        RND_LIST(w, filter, c, n_c, kc__cri_container_copy, ret);
        return 0;
}

static int rnd_pod_sandbox_status(void *self, const char *id,
                                  struct kc_pod_sandbox_status_result *ret,
                                  struct kc_runtime_error *err)
{
        struct rnd_world *w = self;

        for (size_t i = 0; i < w->n_sb; i++)
                if (strcmp(w->sb[i].id, id) == 0) {
                        assert_int_equal(kc_arena_new(&ret->arena), 0);
                        return kc__pod_sandbox_copy(ret->arena, &w->sb[i], &ret->status);
                }
        return kc_runtime_error_set(err, -ENOENT, KC_RUNTIME_NOT_FOUND, "no sandbox %s", id);
}

static int rnd_container_status(void *self, const char *id, struct kc_container_status_result *ret,
                                struct kc_runtime_error *err)
{
        struct rnd_world *w = self;

        for (size_t i = 0; i < w->n_c; i++)
                if (strcmp(w->c[i].id, id) == 0) {
                        assert_int_equal(kc_arena_new(&ret->arena), 0);
                        return kc__cri_container_copy(ret->arena, &w->c[i], &ret->status);
                }
        return kc_runtime_error_set(err, -ENOENT, KC_RUNTIME_NOT_FOUND, "no container %s", id);
}

static const struct kc_runtime_service_ops rnd_ops = {
        .list_pod_sandbox = rnd_list_pod_sandbox,
        .list_containers = rnd_list_containers,
        .pod_sandbox_status = rnd_pod_sandbox_status,
        .container_status = rnd_container_status,
};

/* Every field GetPods fills, compared. */
static void assert_pods_equal(const struct kc_pod *a, const struct kc_pod *b)
{
        assert_string_equal(a->id, b->id);
        assert_true(kc__streq(a->name, b->name));
        assert_true(kc__streq(a->namespace, b->namespace));
        assert_true(a->created_at == b->created_at);
        assert_containers_equal(a->containers, a->n_containers, b->containers, b->n_containers);
        assert_containers_equal(a->sandboxes, a->n_sandboxes, b->sandboxes, b->n_sandboxes);
}

static void rnd_shuffle(void *v, size_t n, size_t size, uint64_t *seed);

/* One round's listing: pods present at random, items in one of several orders. */
static void rnd_world_make(struct rnd_world *w, uint64_t *seed, bool keep_order)
{
        size_t p, k;

        if (keep_order && rng_next(seed) % 2) {
                /* The same items in the same places, a few states flipped. */
                for (k = 0; k < w->n_c; k++)
                        if (rng_next(seed) % 4 == 0)
                                w->c[k].state = (enum kc_container_state)(rng_next(seed) % 4);
                return;
        }
        w->n_sb = w->n_c = 0;
        for (p = 0; p < RND_PODS; p++) {
                size_t nsb = rng_next(seed) % 3, nc = rng_next(seed) % 4;

                if (rng_next(seed) % 4 == 0)
                        continue;
                for (k = 0; k < nsb; k++)
                        w->sb[w->n_sb++] = (struct kc_pod_sandbox){
                                .id = w->ids[p][k],
                                .metadata = { w->name[p], w->uid[p], "ns", 0 },
                                .state = rng_next(seed) % 2 ? KC_SANDBOX_STATE_READY
                                                            : KC_SANDBOX_STATE_NOTREADY,
                                .created_at = (int64_t)(rng_next(seed) % 4),
                                .labels = w->labels[p],
                                .n_labels = 3,
                        };
                for (k = 0; k < nc; k++)
                        w->c[w->n_c++] = (struct kc_cri_container){
                                .id = w->ids[p][2 + k],
                                .metadata = { w->ids[p][2 + k], 0 },
                                .image = rng_next(seed) % 2 ? "busybox" : "nginx",
                                .state = (enum kc_container_state)(rng_next(seed) % 4),
                                .created_at = (int64_t)(rng_next(seed) % 4),
                                .labels = w->labels[p],
                                .n_labels = 3,
                                .annotations = rnd_hash,
                                .n_annotations = rng_next(seed) % 2,
                        };
        }
        if (rng_next(seed) % 2) {
                rnd_shuffle(w->sb, w->n_sb, sizeof(w->sb[0]), seed);
                rnd_shuffle(w->c, w->n_c, sizeof(w->c[0]), seed);
        }
}

static void rnd_shuffle(void *v, size_t n, size_t size, uint64_t *seed)
{
        char tmp[512], *b = v;
        size_t i, k;

        assert_true(size <= sizeof(tmp));
        for (i = n; i > 1; i--) {
                k = rng_next(seed) % i;
                memcpy(tmp, b + (i - 1) * size, size);
                memcpy(b + (i - 1) * size, b + k * size, size);
                memcpy(b + k * size, tmp, size);
        }
}

static void rnd_world_init(struct rnd_world *w, size_t distinct)
{
        for (size_t p = 0; p < RND_PODS; p++) {
                snprintf(w->uid[p], sizeof(w->uid[p]), "u%zu", p);
                snprintf(w->name[p], sizeof(w->name[p]), "n%zu", p % distinct);
                for (size_t k = 0; k < 5; k++)
                        snprintf(w->ids[p][k], sizeof(w->ids[p][k]), "i%zu-%zu", p % distinct, k);
                w->labels[p][0] = (struct kc_label){ KC_LABEL_POD_UID, w->uid[p] };
                w->labels[p][1] = (struct kc_label){ KC_LABEL_POD_NAME, w->name[p] };
                w->labels[p][2] = (struct kc_label){ KC_LABEL_POD_NAMESPACE, "ns" };
        }
}

/*
 * Issue 18: a manager that keeps its last pods and groups (found by position,
 * checked by UID) lists exactly what a new manager lists, whatever the
 * listings do between calls: pods come and go, items move, states change.
 */
static void test_get_pods_history_matches_fresh(void **state)
{
        struct fixture *f = *state;
        struct rnd_world *w = calloc(1, sizeof(*w));
        struct kc_runtime_service svc = { &rnd_ops, w };
        struct kc_runtime_manager *mgr = NULL;
        uint64_t seed = 18;
        size_t k, reused = 0;

        assert_non_null(w);
        /* Pods p and p + 4 differ only by UID: a pod taken for another shows. */
        rnd_world_init(w, 4);
        assert_int_equal(kc_runtime_manager_new(svc, f->clock, &mgr), 0);
        for (int round = 0; round < 3000; round++) {
                bool all = round % 7 != 3;
                struct kc_runtime_manager *fresh = NULL;
                struct kc_pod_list a = { 0 }, b = { 0 }, again = { 0 };

                rnd_world_make(w, &seed, round > 0);
                assert_int_equal(kc_runtime_manager_new(svc, f->clock, &fresh), 0);
                assert_int_equal(kc_runtime_manager_get_pods(mgr, all, &a, NULL), 0);
                assert_int_equal(kc_runtime_manager_get_pods(fresh, all, &b, NULL), 0);
                assert_int_equal(a.n, b.n);
                for (k = 0; k < a.n; k++) {
                        assert_pods_equal(a.pods[k], b.pods[k]);
                        if (all)
                                assert_listed_status_agrees(kc_runtime_manager_pod_runtime(mgr),
                                                            a.pods[k]);
                }
                assert_int_equal(kc__runtime_manager_cached_pods(mgr, all), a.n);
                /* Nothing changed: the same objects. */
                assert_int_equal(kc_runtime_manager_get_pods(mgr, all, &again, NULL), 0);
                assert_int_equal(again.n, a.n);
                for (k = 0; k < a.n; k++)
                        assert_ptr_equal(again.pods[k], a.pods[k]);
                reused += a.n;
                kc_pod_list_done(&again);
                kc_pod_list_done(&a);
                kc_pod_list_done(&b);
                kc_runtime_manager_free(fresh);
        }
        assert_true(reused > 0);
        kc_runtime_manager_free(mgr);
        free(w);
}

/* Everything @p l shows, as text: compared later, after the manager moved on. */
static char *list_digest(const struct kc_pod_list *l)
{
        char *buf = NULL;
        size_t len = 0, i, k;
        FILE *f = open_memstream(&buf, &len);

        assert_non_null(f);
        for (i = 0; i < l->n; i++) {
                const struct kc_pod *p = l->pods[i];

                fprintf(f, "%s|%s|%s|%lld", p->id, p->name ? p->name : "-",
                        p->namespace ? p->namespace : "-", (long long)p->created_at);
                for (k = 0; k < p->n_sandboxes + p->n_containers; k++) {
                        const struct kc_container *c = k < p->n_sandboxes
                                                               ? &p->sandboxes[k]
                                                               : &p->containers[k - p->n_sandboxes];

                        fprintf(f, " %s,%s,%s,%llx,%d,%lld", c->id, c->name ? c->name : "-",
                                c->image ? c->image : "-", (unsigned long long)c->hash,
                                (int)c->state, (long long)c->created_at);
                }
                fputc('\n', f);
        }
        assert_int_equal(fclose(f), 0);
        return buf;
}

#define HELD_LISTS 6

/*
 * Issue 18: a list holds its generation's pin, not a reference on each pod.
 * Lists kept while the cache moves on (pods change and go, calls with and
 * without `all` interleave, the manager itself is freed and made again)
 * still show every pod as it was when listed; freeing them all leaves
 * nothing behind (the sanitizer builds check that).
 */
static void test_get_pods_lists_outlive_the_cache(void **state)
{
        struct fixture *f = *state;
        struct rnd_world *w = calloc(1, sizeof(*w));
        struct kc_runtime_service svc = { &rnd_ops, w };
        struct kc_runtime_manager *mgr = NULL;
        struct kc_pod_list held[HELD_LISTS] = { 0 };
        char *digest[HELD_LISTS] = { 0 };
        uint64_t seed = 1818;
        size_t shown = 0;
        int round, k;

        assert_non_null(w);
        rnd_world_init(w, 4);
        assert_int_equal(kc_runtime_manager_new(svc, f->clock, &mgr), 0);
        for (round = 0; round < 600 + HELD_LISTS; round++) {
                int slot = round % HELD_LISTS;
                char *now;

                if (digest[slot]) {
                        /* Made HELD_LISTS calls ago: what it shows has not changed. */
                        now = list_digest(&held[slot]);
                        assert_string_equal(now, digest[slot]);
                        shown += held[slot].n;
                        free(now);
                        free(digest[slot]);
                        digest[slot] = NULL;
                        kc_pod_list_done(&held[slot]);
                }
                if (round >= 600)
                        continue;
                rnd_world_make(w, &seed, round > 0);
                assert_int_equal(
                        kc_runtime_manager_get_pods(mgr, round % 5 != 2, &held[slot], NULL), 0);
                digest[slot] = list_digest(&held[slot]);
                if (round % 97 == 96) {
                        /* The lists outlive the manager that made them. */
                        kc_runtime_manager_free(mgr);
                        assert_int_equal(kc_runtime_manager_new(svc, f->clock, &mgr), 0);
                }
        }
        for (k = 0; k < HELD_LISTS; k++)
                assert_null(digest[k]);
        assert_true(shown > 600);
        kc_runtime_manager_free(mgr);
        free(w);
}

/* Pins released one by one along a long chain: no recursion, every buried pod goes. */
static void test_pod_pin_chain(void **state)
{
        struct kc_pod_pin *first = NULL, *pin, *next;
        struct kc_pod *keep = NULL, *p = NULL;
        int i;

        (void)state;
        assert_int_equal(kc_pod_new(&(struct kc_pod){ .id = "kept" }, &keep), 0);
        assert_int_equal(kc_pod_pin_new(&first), 0);
        pin = kc_pod_pin_ref(first);
        for (i = 0; i < 200000; i++) {
                assert_int_equal(kc_pod_new(&(struct kc_pod){ .id = "buried" }, &p), 0);
                kc_pod_pin_bury(pin, p);
                if (i == 7)
                        kc_pod_pin_bury(pin, kc_pod_ref(keep)); /* someone else holds it too */
                assert_int_equal(kc_pod_pin_new(&next), 0);
                kc_pod_pin_chain(pin, next);
                kc_pod_pin_unref(pin);
                pin = next;
        }
        kc_pod_pin_bury(pin, NULL);
        /* The owner lets go of the newest; the first still holds the whole chain. */
        kc_pod_pin_unref(pin);
        assert_string_equal(keep->id, "kept");
        kc_pod_pin_unref(first);
        /* Its burial dropped only the reference it was given. */
        assert_string_equal(keep->id, "kept");
        kc_pod_unref(keep);
}

/*
 * Issue 18: a service that hands out its objects by identity, as the
 * simulated runtime does: each object's strings, labels and annotations live
 * in an arena of its own, and every list result is a new arena of item
 * structs that holds the objects' arenas. An object whose content changes is
 * made again: its old arena is let go first, so the new one often lands at
 * the same addresses with different bytes. With @keep_last the service keeps
 * its last results (shared, as the sim's list memo does), so the manager
 * holds a listing and compares by address; without, its results are only the
 * manager's, which must then compare contents. With @copy as well, each
 * list result has the objects' strings and labels copied into it, as a CRI
 * list memo copies the items it had (new addresses every time), and each
 * item carries its object's token: a new one whenever the object
 * changes, and now and then none. With @delta instead, a listing of every
 * object says how it differs from the last such listing (runtime_service.h):
 * the objects changed since, and now and then one that did not.
 */
#define IDW_PODS 6

struct idw_obj {
        struct kc_arena *arena;
        struct kc_pod_sandbox sb;
        struct kc_cri_container c;
        uint64_t token;
        bool dirty; /* changed since the last listing of every object of its kind */
};

struct idw {
        struct idw_obj sb[IDW_PODS], c[IDW_PODS * 2];
        struct kc_arena *last_sb, *last_c;
        bool keep_last, copy, delta;
        uint64_t seed, last_token;
        const void *last_full[2]; /* the items of the last listing of every sandbox, container */
};

/* Object @o changed: a new token (with @w->copy; 1 in 8 gets none). */
static void idw_changed(struct idw *w, struct idw_obj *o)
{
        o->dirty = true;
        o->token = w->copy && rng_next(&w->seed) % 8 ? ++w->last_token : 0;
}

/* Makes object @o of pod @p again, in new memory, with content drawn from @w->seed. */
static void idw_obj_make(struct idw *w, struct idw_obj *o, size_t p, size_t k, bool sandbox)
{
        const struct kc_label *old = !o->arena ? NULL : sandbox ? o->sb.labels : o->c.labels;
        /* With deltas, mostly the same UID and CreatedAt: a pod that keeps its group. */
        bool keep = old && w->delta && rng_next(&w->seed) % 8;
        char uid_letter = keep ? old[0].value[0] : rng_next(&w->seed) % 2 ? 'u' : 'v';
        int64_t created = sandbox ? o->sb.created_at : o->c.created_at;
        struct kc_label *labels, *ann;
        char buf[32];

        if (!keep)
                created = (int64_t)(rng_next(&w->seed) % 3);
        o->arena = kc_arena_free(o->arena);
        assert_int_equal(kc_arena_new(&o->arena), 0);
        idw_changed(w, o);
        /* Two label sets, the same UID with two pod names (idw_round() switches). */
        labels = kc_arena_alloc(o->arena, 6 * sizeof(*labels));
        ann = kc_arena_alloc(o->arena, sizeof(*ann));
        assert_non_null(labels);
        assert_non_null(ann);
        /* Same lengths whatever is drawn: a new object reuses the old one's addresses. */
        snprintf(buf, sizeof(buf), "%c%zu", uid_letter, p);
        labels[0] = (struct kc_label){ KC_LABEL_POD_UID, kc_arena_strdup(o->arena, buf) };
        snprintf(buf, sizeof(buf), "%c%zu", rng_next(&w->seed) % 2 ? 'n' : 'm', p);
        labels[1] = (struct kc_label){ KC_LABEL_POD_NAME, kc_arena_strdup(o->arena, buf) };
        labels[2] = (struct kc_label){ KC_LABEL_POD_NAMESPACE, "ns" };
        labels[3] = labels[0];
        labels[4] = (struct kc_label){ KC_LABEL_POD_NAME, "x" };
        labels[5] = labels[2];
        ann[0] = (struct kc_label){ KC_ANNOTATION_CONTAINER_HASH,
                                    rng_next(&w->seed) % 2 ? "1f" : "2f" };
        snprintf(buf, sizeof(buf), "%c%zu-%zu", rng_next(&w->seed) % 2 ? 'i' : 'j', p, k);
        if (sandbox) {
                o->sb = (struct kc_pod_sandbox){
                        .id = kc_arena_strdup(o->arena, buf),
                        .metadata = { labels[1].value, labels[0].value, "ns", 0 },
                        .state = KC_SANDBOX_STATE_READY,
                        .created_at = created,
                        .labels = labels,
                        .n_labels = 3,
                };
                return;
        }
        o->c = (struct kc_cri_container){
                .id = kc_arena_strdup(o->arena, buf),
                .metadata = { kc_arena_strdup(o->arena, rng_next(&w->seed) % 2 ? "a" : "b"), 0 },
                .image = kc_arena_strdup(o->arena, rng_next(&w->seed) % 2 ? "busybox" : "busyfox"),
                .state = KC_CONTAINER_STATE_RUNNING,
                .created_at = created,
                .labels = labels,
                .n_labels = 3,
                .annotations = ann,
                .n_annotations = 1,
        };
}

static const struct kc_label idw_hash[2][1] = { { { KC_ANNOTATION_CONTAINER_HASH, "1f" } },
                                                { { KC_ANNOTATION_CONTAINER_HASH, "2f" } } };

/* One field of container @o now points elsewhere (static memory), the others where they did. */
static void idw_repoint(struct idw *w, struct idw_obj *o)
{
        bool x = rng_next(&w->seed) % 2;

        switch (rng_next(&w->seed) % 3) {
        case 0:
                o->c.image = x ? "busybox" : "busyfox";
                break;
        case 1:
                o->c.metadata.name = x ? "a" : "b";
                break;
        default:
                o->c.annotations = idw_hash[x];
                break;
        }
}

/*
 * A new round: each object kept, its state flipped, a field pointed
 * elsewhere, or the object made again (maybe the same).
 */
static void idw_round(struct idw *w)
{
        size_t p, k;

        /* The service lets its last results go: the manager is then their only holder. */
        w->last_sb = kc_arena_free(w->last_sb);
        w->last_c = kc_arena_free(w->last_c);
        for (p = 0; p < IDW_PODS; p++) {
                switch (rng_next(&w->seed) % 6) {
                case 0:
                        idw_obj_make(w, &w->sb[p], p, 0, true);
                        break;
                case 1:
                        w->sb[p].sb.state = rng_next(&w->seed) % 2 ? KC_SANDBOX_STATE_READY
                                                                   : KC_SANDBOX_STATE_NOTREADY;
                        idw_changed(w, &w->sb[p]);
                        break;
                case 2:
                        w->sb[p].sb.metadata.name = rng_next(&w->seed) % 2 ? "n" : "m";
                        idw_changed(w, &w->sb[p]);
                        break;
                case 3:
                        /* The other label set: the same UID, another pod name. */
                        w->sb[p].sb.labels += w->sb[p].sb.labels[1].value[0] == 'x' ? -3 : 3;
                        idw_changed(w, &w->sb[p]);
                        break;
                default:
                        break;
                }
                for (k = 0; k < 2; k++) {
                        struct idw_obj *o = &w->c[p * 2 + k];

                        switch (rng_next(&w->seed) % 5) {
                        case 0:
                                idw_obj_make(w, o, p, k + 1, false);
                                break;
                        case 1:
                                o->c.state = (enum kc_container_state)(rng_next(&w->seed) % 4);
                                idw_changed(w, o);
                                break;
                        case 2:
                                idw_repoint(w, o);
                                idw_changed(w, o);
                                break;
                        default:
                                break;
                        }
                }
        }
}

static const char *idw_strdup(struct kc_arena *a, const char *s)
{
        char *d = kc_arena_strdup(a, s);

        assert_non_null(d);
        return d;
}

static const struct kc_label *idw_labels_dup(struct kc_arena *a, const struct kc_label *l, size_t n)
{
        struct kc_label *d = n ? kc_arena_alloc(a, n * sizeof(*d)) : NULL;

        assert_true(n == 0 || d);
        for (size_t i = 0; i < n; i++)
                d[i] = (struct kc_label){ idw_strdup(a, l[i].key), idw_strdup(a, l[i].value) };
        return d;
}

/* Listed item @item as @w gives it: with @w->copy, its strings copied into @a (new addresses). */
static void idw_item(const struct idw *w, struct kc_arena *a, bool sandbox, void *item)
{
        if (!w->copy)
                return;
        if (sandbox) {
                struct kc_pod_sandbox *s = item;

                s->id = idw_strdup(a, s->id);
                s->metadata.name = idw_strdup(a, s->metadata.name);
                s->metadata.uid = idw_strdup(a, s->metadata.uid);
                s->metadata.namespace = idw_strdup(a, s->metadata.namespace);
                s->labels = idw_labels_dup(a, s->labels, s->n_labels);
                return;
        }
        struct kc_cri_container *c = item;

        c->id = idw_strdup(a, c->id);
        c->metadata.name = idw_strdup(a, c->metadata.name);
        c->image = idw_strdup(a, c->image);
        c->labels = idw_labels_dup(a, c->labels, c->n_labels);
        c->annotations = idw_labels_dup(a, c->annotations, c->n_annotations);
}

/*
 * With @w->delta, the delta of a listing of every object (@items, @n, in
 * @a) against the last one: *ret_base NULL when there is none.
 */
static void idw_delta(struct idw *w, bool sandboxes, struct kc_arena *a, const void *items,
                      size_t n, const void **ret_base, const uint32_t **ret_changed,
                      size_t *ret_n_changed)
{
        uint32_t *changed = kc_arena_alloc(a, (n + 1) * sizeof(*changed));
        size_t i, n_changed = 0;

        assert_non_null(changed);
        for (i = 0; i < n; i++) {
                struct idw_obj *o = sandboxes ? &w->sb[i] : &w->c[i];

                /* A position that did not change may be named too. */
                if (o->dirty || rng_next(&w->seed) % 7 == 0)
                        changed[n_changed++] = (uint32_t)i;
                o->dirty = false;
        }
        /* Now and then one out of range: the delta is then not taken. */
        if (rng_next(&w->seed) % 50 == 0)
                changed[n_changed++] = (uint32_t)n;
        *ret_base = w->last_full[sandboxes];
        *ret_changed = changed;
        *ret_n_changed = n_changed;
        w->last_full[sandboxes] = items;
}

/*
 * A list result: new item structs holding the listed objects' arenas, with
 * the objects' tokens in ret->tokens when @w->copy (else none) and, with
 * @w->delta, a listing of every object's delta.
 */
struct idw_result {
        void *items;
        size_t n;
        struct kc_arena *arena;
        const uint64_t *tokens;
        const void *base;
        const uint32_t *changed;
        size_t n_changed;
};

static void idw_list(struct idw *w, bool sandboxes, int state, struct idw_result *ret)
{
        size_t n_obj = sandboxes ? IDW_PODS : IDW_PODS * 2, size, i, n = 0;
        struct kc_arena *a = NULL;
        uint64_t *tokens = NULL;
        char *items;

        size = sandboxes ? sizeof(struct kc_pod_sandbox) : sizeof(struct kc_cri_container);
        assert_int_equal(kc_arena_new(&a), 0);
        items = kc_arena_alloc(a, n_obj * size);
        assert_non_null(items);
        if (w->copy)
                assert_non_null(tokens = kc_arena_alloc(a, n_obj * sizeof(*tokens)));
        for (i = 0; i < n_obj; i++) {
                struct idw_obj *o = sandboxes ? &w->sb[i] : &w->c[i];
                int st = sandboxes ? (int)o->sb.state : (int)o->c.state;

                if (state >= 0 && st != state)
                        continue;
                memcpy(items + n * size, sandboxes ? (void *)&o->sb : (void *)&o->c, size);
                idw_item(w, a, sandboxes, items + n * size);
                if (tokens)
                        tokens[n] = o->token;
                n++;
                assert_int_equal(kc_arena_hold(a, o->arena), 0);
        }
        if (w->keep_last) {
                struct kc_arena **last = sandboxes ? &w->last_sb : &w->last_c;

                kc_arena_free(*last);
                *last = kc_arena_ref(a);
        }
        *ret = (struct idw_result){ .items = items, .n = n, .arena = a, .tokens = tokens };
        if (w->delta && state < 0)
                idw_delta(w, sandboxes, a, items, n, &ret->base, &ret->changed, &ret->n_changed);
}

static int idw_list_pod_sandbox(void *self, const struct kc_pod_sandbox_filter *filter,
                                struct kc_pod_sandbox_list *ret, struct kc_runtime_error *err)
{
        struct idw_result res;

        (void)err;
        idw_list(self, true, filter ? filter->state : -1, &res);
        *ret = (struct kc_pod_sandbox_list){ .items = res.items,
                                             .n = res.n,
                                             .arena = res.arena,
                                             .tokens = res.tokens,
                                             .base = res.base,
                                             .changed = res.changed,
                                             .n_changed = res.n_changed };
        return 0;
}

static int idw_list_containers(void *self, const struct kc_container_filter *filter,
                               struct kc_container_list *ret, struct kc_runtime_error *err)
{
        struct idw_result res;

        (void)err;
        idw_list(self, false, filter->state, &res);
        *ret = (struct kc_container_list){ .items = res.items,
                                           .n = res.n,
                                           .arena = res.arena,
                                           .tokens = res.tokens,
                                           .base = res.base,
                                           .changed = res.changed,
                                           .n_changed = res.n_changed };
        return 0;
}

static const struct kc_runtime_service_ops idw_ops = {
        .list_pod_sandbox = idw_list_pod_sandbox,
        .list_containers = idw_list_containers,
};

/*
 * The manager's identity records (issue 18) against a manager without
 * history: the same pods whatever the listings do, whether the service's
 * results are shared (records used) or only the manager's (never used), or
 * shared with every string at a new address and listing tokens (records
 * used by token), or shared with deltas (only the changed groups looked
 * at), and unchanged pods come back as the same objects.
 */
static void test_get_pods_identity_matches_fresh(void **state)
{
        struct fixture *f = *state;

        for (int mode = 0; mode < 4; mode++) {
                bool keep_last = mode > 0;
                struct idw w = {
                        .keep_last = keep_last, .copy = mode == 2, .delta = mode == 3, .seed = 55
                };
                struct kc_runtime_service svc = { &idw_ops, &w };
                struct kc_runtime_manager *mgr = NULL;
                size_t p, k;

                for (p = 0; p < IDW_PODS; p++) {
                        idw_obj_make(&w, &w.sb[p], p, 0, true);
                        for (k = 0; k < 2; k++)
                                idw_obj_make(&w, &w.c[p * 2 + k], p, k + 1, false);
                }
                assert_int_equal(kc_runtime_manager_new(svc, f->clock, &mgr), 0);
                for (int round = 0; round < 2000; round++) {
                        bool all = round % 5 != 2;
                        struct kc_runtime_manager *fresh = NULL;
                        struct kc_pod_list a = { 0 }, b = { 0 }, again = { 0 };

                        idw_round(&w);
                        assert_int_equal(kc_runtime_manager_new(svc, f->clock, &fresh), 0);
                        assert_int_equal(kc_runtime_manager_get_pods(mgr, all, &a, NULL), 0);
                        assert_int_equal(kc_runtime_manager_get_pods(fresh, all, &b, NULL), 0);
                        assert_int_equal(a.n, b.n);
                        for (k = 0; k < a.n; k++)
                                assert_pods_equal(a.pods[k], b.pods[k]);
                        /* The same objects listed again (new item structs): the same pods. */
                        assert_int_equal(kc_runtime_manager_get_pods(mgr, all, &again, NULL), 0);
                        assert_int_equal(again.n, a.n);
                        for (k = 0; k < a.n; k++)
                                assert_ptr_equal(again.pods[k], a.pods[k]);
                        kc_pod_list_done(&again);
                        kc_pod_list_done(&a);
                        kc_pod_list_done(&b);
                        kc_runtime_manager_free(fresh);
                }
                /* Shared results are compared by address or token; the manager's own never are. */
                if (keep_last)
                        assert_true(kc__runtime_manager_identity_hits(mgr, true) > 1000);
                else
                        assert_int_equal(kc__runtime_manager_identity_hits(mgr, true), 0);
                /* Deltas are taken when given (not when a pod's UID or CreatedAt moved). */
                if (w.delta)
                        assert_true(kc__runtime_manager_delta_hits(mgr, true) > 1000);
                else
                        assert_int_equal(kc__runtime_manager_delta_hits(mgr, true), 0);
                kc_runtime_manager_free(mgr);
                kc_arena_free(w.last_sb);
                kc_arena_free(w.last_c);
                for (p = 0; p < IDW_PODS; p++)
                        kc_arena_free(w.sb[p].arena);
                for (p = 0; p < IDW_PODS * 2; p++)
                        kc_arena_free(w.c[p].arena);
        }
}

/* ContainerStatus(@id) through the sim's CRI face: the id it reports (a copy). */
static char *status_id(struct fixture *f, const char *id)
{
        struct kc_container_status_result st = { 0 };
        char *ret;

        assert_int_equal(f->svc.ops->container_status(f->svc.self, id, &st, NULL), 0);
        ret = strdup(st.status.id);
        assert_non_null(ret);
        kc_runtime_result_done(&st);
        return ret;
}

/*
 * Issue 18: the sim finds a status call's object among the objects of the
 * pod its last list call narrowed to, or of the object its last status
 * call found (D54), before its maps. An id of another pod, an equal id
 * elsewhere in memory, and a listed pod removed since (its memory reused)
 * must all give what the maps give.
 */
static void test_sim_status_after_listing(void **state)
{
        struct fixture *f = *state;
        struct kc_label sel_a = { KC_LABEL_POD_UID, "u-a" }, sel_b = { KC_LABEL_POD_UID, "u-b" };
        struct kc_container_filter fa = { .state = -1,
                                          .label_selector = &sel_a,
                                          .n_label_selector = 1 };
        struct kc_container_filter fb = { .state = -1,
                                          .label_selector = &sel_b,
                                          .n_label_selector = 1 };
        struct kc_container_list la = { 0 }, lb = { 0 };
        char *sa = run_sandbox(f, "u-a", "a", 0), *sb = run_sandbox(f, "u-b", "b", 0);
        char *a1 = start_ctr(f, sa, "u-a", "a", "one", "sleep 100", 0, true);
        char *a2 = start_ctr(f, sa, "u-a", "a", "two", "sleep 100", 0, true);
        char *b1 = start_ctr(f, sb, "u-b", "b", "one", "sleep 100", 0, true);
        char *got, *copy;

        assert_int_equal(f->svc.ops->list_containers(f->svc.self, &fb, &lb, NULL), 0);
        assert_int_equal(lb.n, 1);
        assert_int_equal(f->svc.ops->list_containers(f->svc.self, &fa, &la, NULL), 0);
        assert_int_equal(la.n, 2);
        /* The listed pod's own strings, a copy of one, and another pod's. */
        for (size_t i = 0; i < 2; i++) {
                got = status_id(f, la.items[i].id);
                assert_string_equal(got, la.items[i].id);
                free(got);
        }
        copy = strdup(la.items[1].id);
        assert_non_null(copy);
        got = status_id(f, copy);
        assert_string_equal(got, a2);
        free(got);
        free(copy);
        got = status_id(f, lb.items[0].id);
        assert_string_equal(got, b1);
        free(got);
        /* Pod a goes (its sandbox takes its containers); b is listed by address after. */
        assert_int_equal(f->svc.ops->stop_pod_sandbox(f->svc.self, sa, NULL), 0);
        assert_int_equal(f->svc.ops->remove_pod_sandbox(f->svc.self, sa, NULL), 0);
        kc_runtime_result_done(&la);
        got = status_id(f, lb.items[0].id);
        assert_string_equal(got, b1);
        free(got);
        kc_runtime_result_done(&lb);

        /* No listing: one status call by the map, then its sibling's, then another pod's. */
        {
                char *sc = run_sandbox(f, "u-c", "c", 0);
                char *c1 = start_ctr(f, sc, "u-c", "c", "one", "sleep 100", 0, true);
                char *c2 = start_ctr(f, sc, "u-c", "c", "two", "sleep 100", 0, true);
                const char *seq[] = { c2, c1, c2, b1, c1, a1 };

                for (size_t i = 0; i < KC_ELEMENTSOF(seq); i++) {
                        struct kc_container_status_result st = { 0 };
                        struct kc_runtime_error err = { 0 };

                        copy = strdup(seq[i]);
                        assert_non_null(copy);
                        if (seq[i] == a1) {
                                /* Gone with pod a. */
                                assert_int_equal(
                                        f->svc.ops->container_status(f->svc.self, copy, &st, &err),
                                        -ENOENT);
                                assert_int_equal(err.code, KC_RUNTIME_NOT_FOUND);
                        } else {
                                got = status_id(f, copy);
                                assert_string_equal(got, seq[i]);
                                free(got);
                        }
                        free(copy);
                }
                free(sc);
                free(c1);
                free(c2);
        }
        free(sa);
        free(sb);
        free(a1);
        free(a2);
        free(b1);
}

/* The IDs of @n items ordered newest first, ties in listing order (a stable sort). */
static void newest_first_ids(const char **ids, int64_t *created, size_t n)
{
        size_t i, k;

        for (i = 1; i < n; i++)
                for (k = i; k > 0 && created[k - 1] < created[k]; k--) {
                        const char *t = ids[k];
                        int64_t c = created[k];

                        ids[k] = ids[k - 1];
                        created[k] = created[k - 1];
                        ids[k - 1] = t;
                        created[k - 1] = c;
                }
}

/*
 * Issue 18: two pods alike in everything but their UIDs swap places and
 * swap back; the manager must never hand one out for the other (its UIDs by
 * position must follow the pods it keeps).
 */
static void test_get_pods_twins_swapped(void **state)
{
        struct fixture *f = *state;
        struct rnd_world *w = calloc(1, sizeof(*w));
        struct kc_runtime_manager *mgr = NULL;
        const size_t order[][2] = { { 0, 4 }, { 4, 0 }, { 0, 4 }, { 0, 4 }, { 4, 0 }, { 4, 0 } };

        assert_non_null(w);
        rnd_world_init(w, 4);
        assert_int_equal(
                kc_runtime_manager_new((struct kc_runtime_service){ &rnd_ops, w }, f->clock, &mgr),
                0);
        for (size_t round = 0; round < KC_ELEMENTSOF(order); round++) {
                struct kc_pod_list l = { 0 };

                w->n_sb = w->n_c = 0;
                for (size_t k = 0; k < 2; k++) {
                        size_t p = order[round][k];

                        w->sb[w->n_sb++] = (struct kc_pod_sandbox){
                                .id = w->ids[p][0],
                                .metadata = { w->name[p], w->uid[p], "ns", 0 },
                                .state = KC_SANDBOX_STATE_READY,
                                .created_at = 1,
                                .labels = w->labels[p],
                                .n_labels = 3,
                        };
                }
                assert_int_equal(kc_runtime_manager_get_pods(mgr, true, &l, NULL), 0);
                assert_int_equal(l.n, 2);
                /* Equal CreatedAt: listing order. */
                assert_string_equal(l.pods[0]->id, w->uid[order[round][0]]);
                assert_string_equal(l.pods[1]->id, w->uid[order[round][1]]);
                kc_pod_list_done(&l);
        }
        kc_runtime_manager_free(mgr);
        free(w);
}

/*
 * Issue 18: GetPodStatus sorts a pod's few sandboxes and containers by
 * insertion; over random listings with CreatedAt ties, newest first and ties
 * in listing order, as the sort it replaced.
 */
static void test_get_pod_status_ties(void **state)
{
        struct fixture *f = *state;
        struct rnd_world *w = calloc(1, sizeof(*w));
        struct kc_runtime_manager *mgr = NULL;
        uint64_t seed = 5;
        size_t ties = 0;

        assert_non_null(w);
        rnd_world_init(w, RND_PODS);
        assert_int_equal(
                kc_runtime_manager_new((struct kc_runtime_service){ &rnd_ops, w }, f->clock, &mgr),
                0);
        for (int round = 0; round < 500; round++) {
                rnd_world_make(w, &seed, false);
                for (size_t p = 0; p < RND_PODS; p++) {
                        const char *want_sb[2], *want_c[3];
                        int64_t created_sb[2], created_c[3];
                        size_t n_sb = 0, n_c = 0, i;
                        struct kc_pod_status *s = NULL;

                        for (i = 0; i < w->n_sb; i++)
                                if (w->sb[i].labels == w->labels[p]) {
                                        want_sb[n_sb] = w->sb[i].id;
                                        created_sb[n_sb++] = w->sb[i].created_at;
                                }
                        for (i = 0; i < w->n_c; i++)
                                if (w->c[i].labels == w->labels[p]) {
                                        want_c[n_c] = w->c[i].id;
                                        created_c[n_c++] = w->c[i].created_at;
                                }
                        for (i = 1; i < n_c; i++)
                                ties += created_c[i] == created_c[0];
                        newest_first_ids(want_sb, created_sb, n_sb);
                        newest_first_ids(want_c, created_c, n_c);
                        assert_int_equal(kc_runtime_manager_get_pod_status(mgr, w->uid[p], "n",
                                                                           "ns", &s, NULL),
                                         0);
                        assert_int_equal(s->n_sandboxes, n_sb);
                        for (i = 0; i < n_sb; i++)
                                assert_string_equal(s->sandboxes[i].id, want_sb[i]);
                        assert_int_equal(s->n_containers, n_c);
                        for (i = 0; i < n_c; i++)
                                assert_string_equal(s->containers[i].id, want_c[i]);
                        kc_pod_status_unref(s);
                }
        }
        assert_true(ties > 100);
        kc_runtime_manager_free(mgr);
        free(w);
}

/*
 * Issue 18: GetPodStatus keeps a pod's few sandboxes and containers in
 * arrays of its own and sorts them by insertion; past that size, on the
 * heap and by qsort. Either way: newest first, ties in listing order.
 */
static void test_get_pod_status_order_any_size(void **state)
{
        static const size_t sizes[] = { 1, 3, 8, 9, 20 };
        struct fixture *f = *state;
        uint64_t seed = 7;

        for (size_t t = 0; t < KC_ELEMENTSOF(sizes); t++) {
                size_t n = sizes[t], n_sb = n < 10 ? n : 10, i;
                char uid[32], *sb[10], *c[20];
                const char *want[20];
                int64_t created[20];
                struct kc_label sel = { KC_LABEL_POD_UID, uid };
                struct kc_container_list cl = { 0 };
                struct kc_pod_sandbox_list sbl = { 0 };
                struct kc_pod_status *s = NULL;

                snprintf(uid, sizeof(uid), "u-order-%zu", n);
                for (i = 0; i < n_sb; i++) {
                        sb[i] = run_sandbox(f, uid, "p", (uint32_t)i);
                        kc_fake_clock_advance(f->clock, (int64_t)(rng_next(&seed) % 2));
                }
                for (i = 0; i < n; i++) {
                        char name[32];

                        snprintf(name, sizeof(name), "c%zu", i);
                        c[i] = start_ctr(f, sb[0], uid, "p", name, "top", 0, true);
                        kc_fake_clock_advance(f->clock, (int64_t)(rng_next(&seed) % 2));
                }
                assert_int_equal(
                        kc_runtime_manager_get_pod_status(f->mgr, uid, "p", "default", &s, NULL),
                        0);

                assert_int_equal(f->svc.ops->list_pod_sandbox(
                                         f->svc.self,
                                         &(struct kc_pod_sandbox_filter){ .state = -1,
                                                                          .label_selector = &sel,
                                                                          .n_label_selector = 1 },
                                         &sbl, NULL),
                                 0);
                assert_int_equal(sbl.n, n_sb);
                for (i = 0; i < n_sb; i++) {
                        want[i] = sbl.items[i].id;
                        created[i] = sbl.items[i].created_at;
                }
                newest_first_ids(want, created, n_sb);
                assert_int_equal(s->n_sandboxes, n_sb);
                for (i = 0; i < n_sb; i++)
                        assert_string_equal(s->sandboxes[i].id, want[i]);

                assert_int_equal(f->svc.ops->list_containers(
                                         f->svc.self,
                                         &(struct kc_container_filter){ .state = -1,
                                                                        .label_selector = &sel,
                                                                        .n_label_selector = 1 },
                                         &cl, NULL),
                                 0);
                assert_int_equal(cl.n, n);
                for (i = 0; i < n; i++) {
                        want[i] = cl.items[i].id;
                        created[i] = cl.items[i].created_at;
                }
                newest_first_ids(want, created, n);
                assert_int_equal(s->n_containers, n);
                for (i = 0; i < n; i++) {
                        assert_string_equal(s->containers[i].id, want[i]);
                        assert_int_equal(s->containers[i].state, KC_CONTAINER_STATE_RUNNING);
                        assert_int_equal(s->containers[i].hash, 0xdeadbeef);
                }
                assert_int_equal(s->n_ips, 1);
                kc_pod_status_unref(s);
                kc_runtime_result_done(&sbl);
                kc_runtime_result_done(&cl);
                for (i = 0; i < n_sb; i++)
                        free(sb[i]);
                for (i = 0; i < n; i++)
                        free(c[i]);
        }
}

#define CHURN_UNIVERSE 1500
#define CHURN_ROUNDS 12

/*
 * Random subsets of a pod universe with random container states, round after
 * round: the table grows, loses pods by the hundred and shrinks, and every
 * pod whose spec did not change must still come back as the same object.
 */
static void test_get_pods_reuse_churn(void **state)
{
        struct fixture *f = *state;
        struct kc_sim_pod_spec *specs = calloc(CHURN_UNIVERSE, sizeof(*specs));
        struct kc_sim_pod_spec *cur = calloc(CHURN_UNIVERSE, sizeof(*cur));
        struct kc_sim_container_spec *ctrs = calloc(CHURN_UNIVERSE * 3, sizeof(*ctrs));
        char(*names)[32] = calloc(CHURN_UNIVERSE * 4, sizeof(*names));
        bool *present = calloc(CHURN_UNIVERSE, sizeof(*present));
        bool *changed = calloc(CHURN_UNIVERSE, sizeof(*changed));
        struct kc_pod_list prev = { 0 }, l = { 0 };
        uint64_t seed = 42;

        assert_non_null(specs);
        assert_non_null(cur);
        assert_non_null(ctrs);
        assert_non_null(names);
        assert_non_null(present);
        assert_non_null(changed);
        for (size_t i = 0; i < CHURN_UNIVERSE; i++) {
                snprintf(names[i * 4], 32, "uid-%zu", i);
                snprintf(names[i * 4 + 1], 32, "sb-%zu", i);
                snprintf(names[i * 4 + 2], 32, "ca-%zu", i);
                snprintf(names[i * 4 + 3], 32, "cb-%zu", i);
                ctrs[i * 3] = (struct kc_sim_container_spec){ names[i * 4 + 1], "POD",
                                                              KC_CONTAINER_STATE_RUNNING, 0 };
                ctrs[i * 3 + 1] = (struct kc_sim_container_spec){ names[i * 4 + 2], "a",
                                                                  KC_CONTAINER_STATE_RUNNING, 0 };
                ctrs[i * 3 + 2] = (struct kc_sim_container_spec){ names[i * 4 + 3], "b",
                                                                  KC_CONTAINER_STATE_RUNNING, 0 };
                specs[i] = (struct kc_sim_pod_spec){ .id = names[i * 4],
                                                     .name = names[i * 4],
                                                     .namespace = "ns",
                                                     .sandboxes = &ctrs[i * 3],
                                                     .n_sandboxes = 1,
                                                     .containers = &ctrs[i * 3 + 1],
                                                     .n_containers = 2 };
        }

        for (int round = 0; round < CHURN_ROUNDS; round++) {
                /* Rounds 0-3 grow the world, 4-7 keep about half, 8+ keep a handful. */
                unsigned keep = round < 4 ? 95 : round < 8 ? 50 : 3;
                size_t n = 0;

                for (size_t i = 0; i < CHURN_UNIVERSE; i++) {
                        bool was = present[i];

                        present[i] = rng_next(&seed) % 100 < keep;
                        changed[i] = !was;
                        if (present[i] && rng_next(&seed) % 10 == 0) {
                                struct kc_sim_container_spec *c =
                                        &ctrs[i * 3 + 1 + rng_next(&seed) % 2];

                                c->state = c->state == KC_CONTAINER_STATE_RUNNING
                                                   ? KC_CONTAINER_STATE_EXITED
                                                   : KC_CONTAINER_STATE_RUNNING;
                                changed[i] = true;
                        }
                        if (present[i])
                                cur[n++] = specs[i];
                }
                assert_int_equal(kc_sim_set_pods(f->sim, cur, n), 0);
                assert_int_equal(kc_runtime_manager_get_pods(f->mgr, true, &l, NULL), 0);
                assert_int_equal(l.n, n);
                assert_int_equal(kc__runtime_manager_cached_pods(f->mgr, true), n);
                for (size_t i = 0; i < CHURN_UNIVERSE; i++) {
                        const struct kc_pod *p = find_or_null(&l, specs[i].id);
                        const struct kc_pod *q = find_or_null(&prev, specs[i].id);

                        assert_true((p != NULL) == present[i]);
                        if (p && q && !changed[i])
                                assert_ptr_equal(p, q);
                        if (p && changed[i])
                                assert_ptr_not_equal(p, q);
                }
                if (round % 4 == 3)
                        assert_faces_agree(f, true);
                kc_pod_list_done(&prev);
                prev = l;
                l = (struct kc_pod_list){ 0 };
        }
        assert_faces_agree(f, false);
        kc_pod_list_done(&prev);
        free(specs);
        free(cur);
        free(ctrs);
        free(names);
        free(present);
        free(changed);
}

struct reader {
        struct kc_runtime_manager *mgr;
        int failures;
        int torn; /* pods listed while the world changed between the two list calls */
};

static void *reader_main(void *arg)
{
        struct reader *rd = arg;

        for (int i = 0; i < 200; i++) {
                struct kc_pod_list l = { 0 };

                if (kc_runtime_manager_get_pods(rd->mgr, i % 3 != 0, &l, NULL) < 0) {
                        rd->failures++;
                        continue;
                }
                /*
                 * The two list calls are not atomic together (nor are they
                 * upstream): a pod set between them may show containers but
                 * no sandbox, and then sorts with CreatedAt 0.
                 */
                for (size_t k = 0; k < l.n; k++) {
                        const struct kc_pod *p = l.pods[k];

                        if (p->n_sandboxes > 1 || !p->id ||
                            (p->n_sandboxes == 0 && p->created_at) ||
                            (k > 0 && l.pods[k - 1]->created_at < p->created_at))
                                rd->failures++;
                        if (p->n_sandboxes == 0)
                                rd->torn++;
                }
                kc_pod_list_done(&l);
        }
        return NULL;
}

/* Several threads share one manager (and its cache) while the world changes. */
static void test_get_pods_concurrent(void **state)
{
        struct fixture *f = *state;
        struct kc_sim_container_spec ctrs[64], sbs[32];
        struct kc_sim_pod_spec pods[32];
        char names[32][3][16];
        struct reader rd[3];
        pthread_t th[3];

        for (int i = 0; i < 32; i++) {
                snprintf(names[i][0], 16, "u%d", i);
                snprintf(names[i][1], 16, "s%d", i);
                snprintf(names[i][2], 16, "c%d", i);
                sbs[i] = (struct kc_sim_container_spec){ names[i][1], "POD",
                                                         KC_CONTAINER_STATE_RUNNING, 0 };
                ctrs[i] = (struct kc_sim_container_spec){ names[i][2], "app",
                                                          KC_CONTAINER_STATE_RUNNING, 0 };
                pods[i] = (struct kc_sim_pod_spec){ .id = names[i][0],
                                                    .name = names[i][0],
                                                    .namespace = "ns",
                                                    .sandboxes = &sbs[i],
                                                    .n_sandboxes = 1,
                                                    .containers = &ctrs[i],
                                                    .n_containers = 1 };
        }
        assert_int_equal(kc_sim_set_pods(f->sim, pods, 32), 0);
        for (int t = 0; t < 3; t++) {
                rd[t] = (struct reader){ .mgr = f->mgr };
                assert_int_equal(pthread_create(&th[t], NULL, reader_main, &rd[t]), 0);
        }
        for (int i = 0; i < 200; i++) {
                ctrs[i % 32].state = ctrs[i % 32].state == KC_CONTAINER_STATE_RUNNING
                                             ? KC_CONTAINER_STATE_EXITED
                                             : KC_CONTAINER_STATE_RUNNING;
                assert_int_equal(kc_sim_set_pods(f->sim, pods, (size_t)(16 + i % 17)), 0);
        }
        for (int t = 0; t < 3; t++) {
                assert_int_equal(pthread_join(th[t], NULL), 0);
                assert_int_equal(rd[t].failures, 0);
        }
        assert_faces_agree(f, true);
        assert_faces_agree(f, false);
}

#define N_PODS 10000

/* 10,000 pods x (3 containers + 1 sandbox) through both faces (the timing is
 * bench/bench_relist's job). */
static void test_get_pods_10k(void **state)
{
        struct fixture *f = *state;
        struct kc_sim_pod_spec *pods = calloc(N_PODS, sizeof(*pods));
        struct kc_sim_container_spec *ctrs = calloc(N_PODS * 4, sizeof(*ctrs));
        char(*names)[48] = calloc(N_PODS * 6, sizeof(*names));

        assert_non_null(pods);
        assert_non_null(ctrs);
        assert_non_null(names);
        for (size_t i = 0; i < N_PODS; i++) {
                char(*n)[48] = &names[i * 6];

                snprintf(n[0], 48, "%08zx-1b2c-4d5e-8f90-%012zu", i * 2654435761u, i);
                snprintf(n[1], 48, "pod-%zu", i);
                for (size_t j = 0; j < 4; j++) {
                        snprintf(n[2 + j], 48, "%016zx%08zx", i, j);
                        ctrs[i * 4 + j] =
                                (struct kc_sim_container_spec){ n[2 + j],
                                                                j == 3   ? "POD"
                                                                : j == 0 ? "app"
                                                                : j == 1 ? "side"
                                                                         : "log",
                                                                KC_CONTAINER_STATE_RUNNING, 0 };
                }
                pods[i] = (struct kc_sim_pod_spec){ .id = n[0],
                                                    .name = n[1],
                                                    .namespace = "default",
                                                    .containers = &ctrs[i * 4],
                                                    .n_containers = 3,
                                                    .sandboxes = &ctrs[i * 4 + 3],
                                                    .n_sandboxes = 1 };
        }
        assert_int_equal(kc_sim_set_pods(f->sim, pods, N_PODS), 0);

        for (int round = 0; round < 3; round++) {
                struct kc_pod_list l = { 0 };
                struct kc_pod_status *s = NULL;

                assert_int_equal(f->mgr_pr.ops->get_pods(f->mgr_pr.self, true, &l, NULL), 0);
                assert_int_equal(l.n, N_PODS);
                assert_int_equal(l.pods[N_PODS - 1]->n_containers, 3);
                kc_pod_list_done(&l);

                assert_int_equal(f->sim_pr.ops->get_pods(f->sim_pr.self, true, &l, NULL), 0);
                assert_int_equal(l.n, N_PODS);
                kc_pod_list_done(&l);

                for (size_t i = 0; i < 100; i++) {
                        assert_int_equal(f->mgr_pr.ops->get_pod_status(f->mgr_pr.self, pods[i].id,
                                                                       NULL, NULL, &s, NULL),
                                         0);
                        assert_int_equal(s->n_containers, 3);
                        s = kc_pod_status_unref(s);
                }
        }
        assert_faces_agree(f, false);
        free(pods);
        free(ctrs);
        free(names);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_get_pods_history_matches_fresh, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_get_pod_status_order_any_size, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_get_listed_pod_status, setup, teardown),
                cmocka_unit_test_setup_teardown(test_listed_status_reuses_prev, setup, teardown),
                cmocka_unit_test_setup_teardown(test_prefetch_listed_pod_status, setup, teardown),
                cmocka_unit_test_setup_teardown(test_get_pod_status_ties, setup, teardown),
                cmocka_unit_test_setup_teardown(test_get_pods_twins_swapped, setup, teardown),
                cmocka_unit_test_setup_teardown(test_get_pods_cri_world, setup, teardown),
                cmocka_unit_test_setup_teardown(test_get_pods_set_pods_world, setup, teardown),
                cmocka_unit_test_setup_teardown(test_get_pod_status_ips, setup, teardown),
                cmocka_unit_test_setup_teardown(test_errors_propagate, setup, teardown),
                cmocka_unit_test_setup_teardown(test_get_pods_reuse, setup, teardown),
                cmocka_unit_test_setup_teardown(test_get_pods_reuse_cri, setup, teardown),
                cmocka_unit_test_setup_teardown(test_get_pods_reuse_churn, setup, teardown),
                cmocka_unit_test_setup_teardown(test_get_pods_same_shared_listing, setup, teardown),
                cmocka_unit_test_setup_teardown(test_get_pods_filters_as_kubelet, setup, teardown),
                cmocka_unit_test_setup_teardown(test_get_pods_identity_matches_fresh, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_sim_status_after_listing, setup, teardown),
                cmocka_unit_test_setup_teardown(test_get_pods_concurrent, setup, teardown),
                cmocka_unit_test_setup_teardown(test_get_pods_10k, setup, teardown),
                cmocka_unit_test_setup_teardown(test_get_pods_lists_outlive_the_cache, setup,
                                                teardown),
                cmocka_unit_test(test_pod_pin_chain),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
