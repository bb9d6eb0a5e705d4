/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The simulated runtime's CRI face, cheap in proportion to change (issue 18):
 * a full listing nothing changed since is handed out again by identity
 * (F-PLEG-02: GetPods lists through it every relist), any change a listing
 * could show gives a new one, status results share the objects' strings
 * instead of copying them, and every result outlives the objects it shows
 * and the sim itself.
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
#include "fixture.h"
#include "internal.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"
#include "runtime/sim.h"

static struct kc_sim_container_spec ctrs[] = {
        { "c1", "app", KC_CONTAINER_STATE_RUNNING, 0 },
        { "c2", "side", KC_CONTAINER_STATE_EXITED, 3 },
};
static const struct kc_sim_container_spec sbs[] = {
        { "s1", "POD", KC_CONTAINER_STATE_RUNNING, 0 },
};
static const char *const ips[] = { "10.0.0.5", "fd00::5" };
static const struct kc_sim_pod_spec pods[] = {
        { .id = "p1",
          .name = "web",
          .namespace = "ns",
          .ips = ips,
          .n_ips = 2,
          .containers = ctrs,
          .n_containers = 2,
          .sandboxes = sbs,
          .n_sandboxes = 1 },
};

/* Both full listings GetPods makes (all: every state). */
struct listing {
        struct kc_pod_sandbox_list sbl;
        struct kc_container_list cl;
};

static void listing_done(struct listing *l)
{
        kc_runtime_result_done(&l->sbl);
        kc_runtime_result_done(&l->cl);
}

/*
 * Both listings, sandboxes in state @p sb_state and containers in @p c_state
 * (-1: any), of the objects @p sel selects (NULL: every object).
 */
static struct listing list_selected(struct sim_faces_fixture *f, int sb_state, int c_state,
                                    const struct kc_label *sel)
{
        struct kc_runtime_error err = { 0 };
        struct listing l = { 0 };

        assert_int_equal(f->svc.ops->list_pod_sandbox(f->svc.self,
                                                      &(struct kc_pod_sandbox_filter){
                                                              .state = sb_state,
                                                              .label_selector = sel,
                                                              .n_label_selector = sel ? 1 : 0,
                                                      },
                                                      &l.sbl, &err),
                         0);
        assert_int_equal(f->svc.ops->list_containers(f->svc.self,
                                                     &(struct kc_container_filter){
                                                             .state = c_state,
                                                             .label_selector = sel,
                                                             .n_label_selector = sel ? 1 : 0,
                                                     },
                                                     &l.cl, &err),
                         0);
        return l;
}

/* Both full listings, sandboxes in state @p sb_state and containers in @p c_state (-1: any). */
static struct listing list_states(struct sim_faces_fixture *f, int sb_state, int c_state)
{
        return list_selected(f, sb_state, c_state, NULL);
}

static struct listing list_all(struct sim_faces_fixture *f, int state)
{
        return list_states(f, state, state);
}

static bool same_listing(const struct listing *a, const struct listing *b)
{
        return a->sbl.arena == b->sbl.arena && a->sbl.items == b->sbl.items &&
               a->sbl.n == b->sbl.n && a->cl.arena == b->cl.arena && a->cl.items == b->cl.items &&
               a->cl.n == b->cl.n;
}

/* Neither listing is the one before: both kinds are looked at again after any change. */
static bool new_listing(const struct listing *a, const struct listing *b)
{
        return a->sbl.arena != b->sbl.arena && a->cl.arena != b->cl.arena;
}

static const struct kc_cri_container *find_listed(const struct listing *l, const char *id)
{
        for (size_t i = 0; i < l->cl.n; i++)
                if (strcmp(l->cl.items[i].id, id) == 0)
                        return &l->cl.items[i];
        return NULL;
}

/* Nothing changed: the same result by identity, for each filter class, NULL as "any". */
static void test_list_identity_no_change(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        struct kc_container_list nul = { 0 };
        struct listing a, b, ra, rb;

        assert_int_equal(kc_sim_set_pods(f->sim, pods, KC_ELEMENTSOF(pods)), 0);
        a = list_all(f, -1);
        kc_fake_clock_advance(f->clock, SEC);
        b = list_all(f, -1);
        assert_true(same_listing(&a, &b));
        assert_int_equal(a.cl.n, 2);
        assert_int_equal(a.sbl.n, 1);
        assert_int_equal(f->svc.ops->list_containers(f->svc.self, NULL, &nul, &err), 0);
        assert_ptr_equal(nul.arena, a.cl.arena);
        kc_runtime_result_done(&nul);

        /* The state filter GetPods(all=false) uses is a class of its own. */
        ra = list_all(f, KC_CONTAINER_STATE_RUNNING);
        rb = list_all(f, KC_CONTAINER_STATE_RUNNING);
        assert_true(same_listing(&ra, &rb));
        assert_int_equal(ra.cl.n, 1);
        assert_false(ra.cl.arena == a.cl.arena);
        /* ... which does not push the other class out. */
        listing_done(&b);
        b = list_all(f, -1);
        assert_true(same_listing(&a, &b));
        listing_done(&a);
        listing_done(&b);
        listing_done(&ra);
        listing_done(&rb);
}

/* The listings GetPods(false) makes: ready sandboxes, running containers. */
static struct listing list_running(struct sim_faces_fixture *f)
{
        return list_states(f, KC_SANDBOX_STATE_READY, KC_CONTAINER_STATE_RUNNING);
}

/*
 * A listing of every object in one state, while the last listing of every
 * object is current and shows only objects in that state, is that listing
 * (issue 18); the moment one object is in another state it is a listing of
 * its own, showing only the matching objects.
 */
static void test_list_state_shares_full_listing(void **state)
{
        static const struct kc_sim_container_spec up[] = {
                { "u1", "app", KC_CONTAINER_STATE_RUNNING, 0 },
                { "u2", "side", KC_CONTAINER_STATE_RUNNING, 0 },
        };
        static const struct kc_sim_container_spec up_sb[] = {
                { "us1", "POD", KC_CONTAINER_STATE_RUNNING, 0 },
        };
        static const struct kc_sim_pod_spec all_up[] = {
                { .id = "pu",
                  .name = "up",
                  .namespace = "ns",
                  .containers = up,
                  .n_containers = 2,
                  .sandboxes = up_sb,
                  .n_sandboxes = 1 },
                { .id = "p1",
                  .name = "web",
                  .namespace = "ns",
                  .containers = ctrs,
                  .n_containers = 1,
                  .sandboxes = sbs,
                  .n_sandboxes = 1 },
        };
        struct sim_faces_fixture *f = *state;
        struct listing a, r, r2;

        assert_int_equal(kc_sim_set_pods(f->sim, all_up, KC_ELEMENTSOF(all_up)), 0);
        /* Not listed in full yet: the running listing walks the objects itself. */
        r = list_running(f);
        assert_int_equal(r.sbl.n, 2);
        assert_int_equal(r.cl.n, 3);
        a = list_all(f, -1);
        assert_false(r.cl.arena == a.cl.arena);
        listing_done(&r);
        r = list_running(f);
        assert_true(same_listing(&a, &r));
        r2 = list_running(f);
        assert_true(same_listing(&a, &r2));
        listing_done(&r2);
        listing_done(&r);
        listing_done(&a);

        /* One container exits: the sandboxes still share, the containers do not. */
        assert_int_equal(kc_sim_crash_container(f->sim, "pu", "side", 1), 1);
        a = list_all(f, -1);
        r = list_running(f);
        assert_int_equal(a.cl.n, 3);
        assert_int_equal(r.cl.n, 2);
        assert_false(r.cl.arena == a.cl.arena);
        assert_null(find_listed(&r, "u2"));
        assert_int_equal(find_listed(&a, "u2")->state, KC_CONTAINER_STATE_EXITED);
        assert_ptr_equal(r.sbl.arena, a.sbl.arena);
        assert_ptr_equal(r.sbl.items, a.sbl.items);
        listing_done(&r);
        listing_done(&a);
}

static char *run_sandbox(struct sim_faces_fixture *f, const char *uid)
{
        const struct kc_label labels[] = { { KC_LABEL_POD_UID, uid } };
        struct kc_pod_sandbox_config cfg = {
                .metadata = { .name = "pod", .uid = uid, .namespace = "default" },
                .labels = labels,
                .n_labels = KC_ELEMENTSOF(labels),
                .log_directory = "/var/log/pods/x",
        };
        struct kc_runtime_error err = { 0 };
        char *id = NULL;

        assert_int_equal(f->svc.ops->run_pod_sandbox(f->svc.self, &cfg, &id, &err), 0);
        return id;
}

static const struct kc_label ctr_ann[] = {
        { KC_ANNOTATION_CONTAINER_HASH, "1a2b" },
        { "io.example/note", "a value of its own" },
};
static const struct kc_cri_mount ctr_mounts[] = {
        { .container_path = "/data", .host_path = "/var/lib/data", .readonly = true },
};

static char *create_ctr(struct sim_faces_fixture *f, const char *sb, const char *uid,
                        const char *name, const char *const *cmd, size_t n_cmd)
{
        const struct kc_label labels[] = {
                { KC_LABEL_POD_UID, uid },
                { KC_LABEL_CONTAINER_NAME, name },
        };
        struct kc_container_config cfg = {
                .metadata = { .name = name, .attempt = 2 },
                .image = "busybox",
                .command = cmd,
                .n_command = n_cmd,
                .labels = labels,
                .n_labels = KC_ELEMENTSOF(labels),
                .annotations = ctr_ann,
                .n_annotations = KC_ELEMENTSOF(ctr_ann),
                .mounts = ctr_mounts,
                .n_mounts = KC_ELEMENTSOF(ctr_mounts),
                .log_path = "c/0.log",
        };
        struct kc_pod_sandbox_config sb_cfg = { .log_directory = "/var/log/pods/x" };
        struct kc_runtime_error err = { 0 };
        char *id = NULL;

        assert_int_equal(f->svc.ops->create_container(f->svc.self, sb, &cfg, &sb_cfg, &id, &err),
                         0);
        return id;
}

/*
 * Lists again after a change and checks the result is new; *prev becomes it.
 * The previous result stays held meanwhile, so a new arena cannot reuse its address.
 */
static void expect_new(struct sim_faces_fixture *f, struct listing *prev)
{
        struct listing next = list_all(f, -1);

        assert_true(new_listing(prev, &next));
        listing_done(prev);
        *prev = next;
}

/* Every kind of change a listing shows gives a new listing, showing it. */
static void test_list_new_after_each_mutation(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        const char *const forever[] = { "nginx" };
        const char *const sleep5[] = { "sleep", "5" };
        _cleanup_free_ char *sb = NULL, *app = NULL, *job = NULL, *sb2 = NULL;
        struct listing l = list_all(f, -1);
        struct listing again;

        sb = run_sandbox(f, "u1");
        expect_new(f, &l);
        assert_int_equal(l.sbl.n, 1);
        app = create_ctr(f, sb, "u1", "app", forever, 1);
        expect_new(f, &l);
        assert_int_equal(l.cl.n, 1);
        assert_int_equal(l.cl.items[0].state, KC_CONTAINER_STATE_CREATED);
        assert_int_equal(f->svc.ops->start_container(f->svc.self, app, &err), 0);
        expect_new(f, &l);
        assert_int_equal(l.cl.items[0].state, KC_CONTAINER_STATE_RUNNING);

        /* The lazy clock: an exit falls due between two calls, nothing else happens. */
        job = create_ctr(f, sb, "u1", "job", sleep5, 2);
        assert_int_equal(f->svc.ops->start_container(f->svc.self, job, &err), 0);
        expect_new(f, &l);
        assert_int_equal(find_listed(&l, job)->state, KC_CONTAINER_STATE_RUNNING);
        kc_fake_clock_advance(f->clock, 4 * SEC);
        again = list_all(f, -1);
        assert_true(same_listing(&l, &again));
        listing_done(&again);
        kc_fake_clock_advance(f->clock, 2 * SEC);
        expect_new(f, &l);
        assert_int_equal(find_listed(&l, job)->state, KC_CONTAINER_STATE_EXITED);

        assert_int_equal(kc_sim_crash_container(f->sim, "u1", "app", 1), 1);
        expect_new(f, &l);
        assert_int_equal(find_listed(&l, app)->state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(f->svc.ops->remove_container(f->svc.self, job, &err), 0);
        expect_new(f, &l);
        assert_int_equal(l.cl.n, 1);

        sb2 = run_sandbox(f, "u2");
        expect_new(f, &l);
        assert_int_equal(f->svc.ops->stop_pod_sandbox(f->svc.self, sb2, &err), 0);
        expect_new(f, &l);
        assert_int_equal(l.sbl.items[1].state, KC_SANDBOX_STATE_NOTREADY);
        assert_int_equal(f->svc.ops->remove_pod_sandbox(f->svc.self, sb2, &err), 0);
        expect_new(f, &l);
        assert_int_equal(l.sbl.n, 1);

        /* A snapshot replaces it all; the same snapshot again changes nothing. */
        assert_int_equal(kc_sim_set_pods(f->sim, pods, KC_ELEMENTSOF(pods)), 0);
        expect_new(f, &l);
        assert_int_equal(l.cl.n, 2);
        assert_int_equal(kc_sim_set_pods(f->sim, pods, KC_ELEMENTSOF(pods)), 0);
        again = list_all(f, -1);
        assert_true(same_listing(&l, &again));
        listing_done(&again);
        ctrs[0].state = KC_CONTAINER_STATE_EXITED;
        assert_int_equal(kc_sim_set_pods(f->sim, pods, KC_ELEMENTSOF(pods)), 0);
        ctrs[0].state = KC_CONTAINER_STATE_RUNNING;
        expect_new(f, &l);
        assert_int_equal(find_listed(&l, "c1")->state, KC_CONTAINER_STATE_EXITED);
        listing_done(&l);
}

/*
 * kc_sim_set_pods keeps what did not change: the pod the kubecontainer face
 * returned and the objects (their strings are the same memory), while the
 * changed container gets its new state with the times a new load would
 * give it; reordering the snapshot is a change of the listing.
 */
static void test_set_pods_keeps_unchanged(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_sim_container_spec c2[] = { { "c9", "job", KC_CONTAINER_STATE_RUNNING, 0 } };
        struct kc_sim_pod_spec two[2] = { pods[0],
                                          { .id = "p2",
                                            .name = "batch",
                                            .namespace = "ns",
                                            .containers = c2,
                                            .n_containers = 1 } };
        struct kc_pod_list a = { 0 }, b = { 0 };
        struct listing la, lb;
        const char *c1_id, *c9_id;
        int64_t started;

        assert_int_equal(kc_sim_set_pods(f->sim, two, 2), 0);
        assert_int_equal(f->pr.ops->get_pods(f->pr.self, true, &a, NULL), 0);
        la = list_all(f, -1);
        c1_id = find_listed(&la, "c1")->id;
        c9_id = find_listed(&la, "c9")->id;
        started = find_listed(&la, "c9")->created_at;

        kc_fake_clock_advance(f->clock, 5 * SEC);
        c2[0] = (struct kc_sim_container_spec){ "c9", "job", KC_CONTAINER_STATE_EXITED, 4 };
        assert_int_equal(kc_sim_set_pods(f->sim, two, 2), 0);
        assert_int_equal(f->pr.ops->get_pods(f->pr.self, true, &b, NULL), 0);
        assert_int_equal(b.n, 2);
        assert_ptr_equal(a.pods[0], b.pods[0]); /* p1: the same result, nothing changed */
        assert_true(a.pods[1] != b.pods[1]);
        lb = list_all(f, -1);
        assert_true(new_listing(&la, &lb));
        assert_ptr_equal(find_listed(&lb, "c1")->id, c1_id); /* the same object */
        assert_ptr_equal(find_listed(&lb, "c9")->id, c9_id);
        assert_int_equal(find_listed(&lb, "c9")->state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(find_listed(&lb, "c9")->created_at, started);
        listing_done(&la);
        {
                struct kc_container_status_result cr = { 0 };
                struct kc_runtime_error err = { 0 };

                assert_int_equal(f->svc.ops->container_status(f->svc.self, "c9", &cr, &err), 0);
                assert_int_equal(cr.status.exit_code, 4);
                assert_string_equal(cr.status.reason, "Error");
                assert_true(cr.status.started_at == started);
                assert_true(cr.status.finished_at == T0 + 5 * SEC);
                kc_runtime_result_done(&cr);
        }

        /* The same pods in another order: a new listing, in the snapshot's order. */
        {
                struct kc_sim_pod_spec swapped[2] = { two[1], two[0] };

                assert_int_equal(kc_sim_set_pods(f->sim, swapped, 2), 0);
                la = list_all(f, -1);
                assert_true(new_listing(&lb, &la));
                assert_string_equal(la.cl.items[0].id, "c9");
                assert_ptr_equal(la.cl.items[0].id, c9_id);
                listing_done(&la);
        }
        listing_done(&lb);
        kc_pod_list_done(&a);
        kc_pod_list_done(&b);
}

/* Faults and latency still apply to every call, memo or not. */
static void test_list_faults_still_apply(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        struct kc_container_list cl = { 0 };
        struct listing l;

        assert_int_equal(kc_sim_set_pods(f->sim, pods, KC_ELEMENTSOF(pods)), 0);
        l = list_all(f, -1);
        assert_int_equal(kc_sim_inject_fault(f->sim, "ListContainers", NULL, "boom", 1), 0);
        assert_int_equal(f->svc.ops->list_containers(f->svc.self,
                                                     &(struct kc_container_filter){ .state = -1 },
                                                     &cl, &err),
                         -EIO);
        assert_string_equal(err.message, "boom");
        assert_null(cl.arena);
        assert_int_equal(f->svc.ops->list_containers(f->svc.self,
                                                     &(struct kc_container_filter){ .state = -1 },
                                                     &cl, &err),
                         0);
        assert_ptr_equal(cl.arena, l.cl.arena);
        kc_runtime_result_done(&cl);
        listing_done(&l);
}

static void assert_labels_equal(const struct kc_label *a, size_t na, const struct kc_label *b,
                                size_t nb)
{
        assert_int_equal(na, nb);
        for (size_t i = 0; i < na; i++) {
                assert_string_equal(a[i].key, b[i].key);
                assert_string_equal(a[i].value, b[i].value);
        }
}

/*
 * A status result holds what a deep copy held: every field of the view, the
 * listed items the same minus the status-only fields, the pod IPs of a
 * snapshot's sandbox; a ContainerStatus result is the container's own
 * arena, shared (issue 18).
 */
static void test_status_views(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        struct kc_container_status_result cr = { 0 };
        struct kc_pod_sandbox_status_result sr = { 0 };
        const char *const forever[] = { "nginx" };
        _cleanup_free_ char *sb = NULL, *app = NULL;
        const struct kc_label sel = { KC_LABEL_POD_UID, "u1" };
        struct kc_container_list cl = { 0 };
        const struct kc_cri_container *c, *li;

        sb = run_sandbox(f, "u1");
        app = create_ctr(f, sb, "u1", "app", forever, 1);
        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(f->svc.ops->start_container(f->svc.self, app, &err), 0);
        assert_int_equal(kc_sim_crash_container(f->sim, "u1", "app", 2), 1);
        assert_int_equal(f->svc.ops->container_status(f->svc.self, app, &cr, &err), 0);
        c = &cr.status;
        assert_string_equal(c->id, app);
        assert_string_equal(c->pod_sandbox_id, sb);
        assert_string_equal(c->metadata.name, "app");
        assert_int_equal(c->metadata.attempt, 2);
        assert_string_equal(c->image, "busybox");
        assert_non_null(c->image_ref);
        assert_int_equal(c->state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(c->exit_code, 2);
        assert_string_equal(c->reason, "Error");
        assert_true(c->started_at == T0 + SEC && c->finished_at == T0 + SEC);
        assert_true(c->created_at > 0 && c->created_at < c->started_at);
        assert_string_equal(c->log_path, "/var/log/pods/x/c/0.log");
        assert_int_equal(c->n_labels, 2);
        assert_string_equal(c->labels[1].value, "app");
        assert_labels_equal(c->annotations, c->n_annotations, ctr_ann, KC_ELEMENTSOF(ctr_ann));
        assert_int_equal(c->n_mounts, 1);
        assert_string_equal(c->mounts[0].container_path, "/data");
        assert_string_equal(c->mounts[0].host_path, "/var/lib/data");
        assert_true(c->mounts[0].readonly);
        /* The container's own arena, shared (read-only): a second call gives it again. */
        assert_true(kc_arena_shared(cr.arena));
        {
                struct kc_container_status_result again = { 0 };

                assert_int_equal(f->svc.ops->container_status(f->svc.self, app, &again, &err), 0);
                assert_ptr_equal(again.arena, cr.arena);
                assert_ptr_equal(again.status.labels, c->labels);
                kc_runtime_result_done(&again);
        }

        /* The per-pod listing: the same view without the status-only fields. */
        assert_int_equal(f->svc.ops->list_containers(f->svc.self,
                                                     &(struct kc_container_filter){
                                                             .state = -1,
                                                             .label_selector = &sel,
                                                             .n_label_selector = 1,
                                                     },
                                                     &cl, &err),
                         0);
        assert_int_equal(cl.n, 1);
        li = &cl.items[0];
        assert_string_equal(li->id, c->id);
        assert_string_equal(li->image_ref, c->image_ref);
        assert_int_equal(li->state, c->state);
        assert_int_equal(li->created_at, c->created_at);
        assert_true(li->started_at == 0 && li->finished_at == 0 && li->exit_code == 0);
        assert_null(li->reason);
        assert_labels_equal(li->labels, li->n_labels, c->labels, c->n_labels);
        assert_labels_equal(li->annotations, li->n_annotations, c->annotations, c->n_annotations);
        kc_runtime_result_done(&cl);
        kc_runtime_result_done(&cr);

        /* A CRI sandbox's own IP; a snapshot pod's IPs for its sandbox. */
        assert_int_equal(f->svc.ops->pod_sandbox_status(f->svc.self, sb, &sr, &err), 0);
        assert_string_equal(sr.status.id, sb);
        assert_non_null(sr.status.ip);
        assert_string_equal(sr.status.labels[0].value, "u1");
        kc_runtime_result_done(&sr);
        assert_int_equal(kc_sim_set_pods(f->sim, pods, KC_ELEMENTSOF(pods)), 0);
        assert_int_equal(f->svc.ops->pod_sandbox_status(f->svc.self, "s1", &sr, &err), 0);
        assert_string_equal(sr.status.metadata.uid, "p1");
        assert_string_equal(sr.status.ip, "10.0.0.5");
        assert_int_equal(sr.status.n_additional_ips, 1);
        assert_string_equal(sr.status.additional_ips[0], "fd00::5");
        assert_int_equal(sr.status.state, KC_SANDBOX_STATE_READY);
        kc_runtime_result_done(&sr);
}

/*
 * A snapshot may give one id to two objects (upstream's relist tests do):
 * the id maps hold the last, and a status call answers with that object
 * whether the caller's id is the listed item's own string or a copy, as
 * the lookup by address must not find the first.
 */
static void test_status_duplicate_ids(void **state)
{
        struct sim_faces_fixture *f = *state;
        static const struct kc_sim_container_spec twins[] = {
                { "x", "first", KC_CONTAINER_STATE_RUNNING, 0 },
                { "x", "second", KC_CONTAINER_STATE_EXITED, 0 },
        };
        static const struct kc_sim_pod_spec pod[] = {
                { .id = "pd",
                  .name = "web",
                  .namespace = "ns",
                  .sandboxes = twins,
                  .n_sandboxes = 2 },
        };
        const struct kc_label sel = { KC_LABEL_POD_UID, "pd" };
        struct kc_pod_sandbox_list l = { 0 };
        struct kc_pod_sandbox_status_result sr = { 0 };
        struct kc_runtime_error err = { 0 };
        char copy[8];
        size_t i;

        assert_int_equal(kc_sim_set_pods(f->sim, pod, 1), 0);
        assert_int_equal(f->svc.ops->list_pod_sandbox(
                                 f->svc.self,
                                 &(struct kc_pod_sandbox_filter){ .state = -1,
                                                                  .label_selector = &sel,
                                                                  .n_label_selector = 1 },
                                 &l, &err),
                         0);
        assert_int_equal(l.n, 2);
        for (i = 0; i < l.n; i++) {
                assert_int_equal(
                        f->svc.ops->pod_sandbox_status(f->svc.self, l.items[i].id, &sr, &err), 0);
                assert_string_equal(sr.status.metadata.name, "second");
                kc_runtime_result_done(&sr);
                strcpy(copy, l.items[i].id);
                assert_int_equal(f->svc.ops->pod_sandbox_status(f->svc.self, copy, &sr, &err), 0);
                assert_string_equal(sr.status.metadata.name, "second");
                kc_runtime_result_done(&sr);
        }
        kc_runtime_result_done(&l);
}

/*
 * Checks a listing of every object against the objects themselves: as many
 * items as objects, each id once, each item's state and name the object's
 * (its status call reads the object, never a listing).
 */
static void assert_listing_current(struct sim_faces_fixture *f, const struct listing *l,
                                   bool sandboxes, bool containers)
{
        struct kc_runtime_error err = { 0 };
        size_t i, j;

        for (i = 0; containers && i < l->cl.n; i++) {
                struct kc_container_status_result cr = { 0 };
                const struct kc_cri_container *it = &l->cl.items[i];

                for (j = 0; j < i; j++)
                        assert_string_not_equal(l->cl.items[j].id, it->id);
                assert_int_equal(f->svc.ops->container_status(f->svc.self, it->id, &cr, &err), 0);
                assert_int_equal(it->state, cr.status.state);
                assert_string_equal(it->metadata.name, cr.status.metadata.name);
                assert_string_equal(it->pod_sandbox_id, cr.status.pod_sandbox_id);
                kc_runtime_result_done(&cr);
        }
        for (i = 0; sandboxes && i < l->sbl.n; i++) {
                struct kc_pod_sandbox_status_result sr = { 0 };
                const struct kc_pod_sandbox *it = &l->sbl.items[i];

                for (j = 0; j < i; j++)
                        assert_string_not_equal(l->sbl.items[j].id, it->id);
                assert_int_equal(f->svc.ops->pod_sandbox_status(f->svc.self, it->id, &sr, &err), 0);
                assert_int_equal(it->state, sr.status.state);
                assert_string_equal(it->metadata.uid, sr.status.metadata.uid);
                kc_runtime_result_done(&sr);
        }
}

/*
 * A listing's delta (runtime_service.h) against @p held (@p n_held items of
 * @p size), a listing of the same kind still held: when it names that one
 * as its base, the positions are distinct and in range, and every item at
 * another position has the held item's bytes. Returns whether it did.
 */
static bool check_delta(const void *items, size_t n, size_t size, const void *base,
                        const uint32_t *changed, size_t n_changed, const void *held, size_t n_held)
{
        _cleanup_free_ bool *named = NULL;
        size_t i;

        if (!base || base != held)
                return false;
        assert_int_equal(n, n_held);
        assert_true(n_changed <= n);
        assert_non_null(named = calloc(n + 1, sizeof(*named)));
        for (i = 0; i < n_changed; i++) {
                assert_true(changed[i] < n);
                assert_false(named[changed[i]]);
                named[changed[i]] = true;
        }
        for (i = 0; i < n; i++)
                if (!named[i])
                        assert_memory_equal((const char *)items + i * size,
                                            (const char *)held + i * size, size);
        return true;
}

#define CHURN_PODS 12
#define CHURN_CTRS 3

/* How many of the @p n objects @p objs says were touched. */
static size_t touched(const bool *objs, size_t n)
{
        size_t i, k = 0;

        for (i = 0; i < n; i++)
                k += objs[i];
        return k;
}

/* A listing of every object of @p n pods of CHURN_CTRS containers shows them in their order. */
static void assert_listing_order(const struct listing *l, const struct kc_sim_pod_spec *pods,
                                 size_t n)
{
        size_t i, j;

        assert_int_equal(l->sbl.n, n);
        assert_int_equal(l->cl.n, n * CHURN_CTRS);
        for (i = 0; i < n; i++) {
                assert_string_equal(l->sbl.items[i].id, pods[i].sandboxes[0].id);
                for (j = 0; j < CHURN_CTRS; j++)
                        assert_string_equal(l->cl.items[i * CHURN_CTRS + j].id,
                                            pods[i].containers[j].id);
        }
}

/* A snapshot of CHURN_PODS pods of CHURN_CTRS containers and a sandbox each. */
struct churn {
        struct kc_sim_pod_spec pods[CHURN_PODS];
        struct kc_sim_container_spec ctrs[CHURN_PODS * CHURN_CTRS];
        struct kc_sim_container_spec sbs[CHURN_PODS];
        char names[CHURN_PODS * (CHURN_CTRS + 2)][24];
};

static void churn_init(struct churn *c)
{
        static const char *const names[CHURN_CTRS] = { "app", "side", "log" };
        size_t i, j, k = 0;

        for (i = 0; i < CHURN_PODS; i++) {
                snprintf(c->names[k], sizeof(c->names[k]), "pod-%zu", i);
                c->pods[i] = (struct kc_sim_pod_spec){ .id = c->names[k++],
                                                       .name = "p",
                                                       .namespace = "ns",
                                                       .sandboxes = &c->sbs[i],
                                                       .n_sandboxes = 1,
                                                       .containers = &c->ctrs[i * CHURN_CTRS],
                                                       .n_containers = CHURN_CTRS };
                snprintf(c->names[k], sizeof(c->names[k]), "sb-%zu", i);
                c->sbs[i] = (struct kc_sim_container_spec){ c->names[k++], "POD",
                                                            KC_CONTAINER_STATE_RUNNING, 0 };
                for (j = 0; j < CHURN_CTRS; j++) {
                        snprintf(c->names[k], sizeof(c->names[k]), "ctr-%zu-%zu", i, j);
                        c->ctrs[i * CHURN_CTRS + j] =
                                (struct kc_sim_container_spec){ c->names[k++], names[j],
                                                                KC_CONTAINER_STATE_RUNNING, 0 };
                }
        }
}

static void flip(struct kc_sim_container_spec *c)
{
        c->state = c->state == KC_CONTAINER_STATE_RUNNING ? KC_CONTAINER_STATE_EXITED
                                                          : KC_CONTAINER_STATE_RUNNING;
}

/*
 * A listing of every object is patched from the last one when only states
 * changed (issue 18): it shows every change made since, whichever kind was
 * listed in between (a sandbox change waits in the touch log while only
 * containers are listed), through snapshots and CRI calls alike, and a pod
 * or object that comes, goes or moves gives a whole new listing. A patched
 * listing's delta names the last listing of its kind and holds: only the
 * objects touched since differ, and the delta names those alone.
 */
static void test_list_patched_shows_every_change(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        const char *const forever[] = { "nginx" };
        const char *const sleep3[] = { "sleep", "3" };
        _cleanup_free_ char *sb = NULL, *app = NULL, *job = NULL;
        struct churn c;
        struct listing l = { 0 }, next;
        struct kc_container_list between = { 0 };
        size_t round, i, n_pods = CHURN_PODS, deltas = 0;
        /* The objects touched since both kinds were last listed: the sim's touch log. */
        bool since_c[CHURN_PODS * CHURN_CTRS] = { false }, since_sb[CHURN_PODS] = { false };
        uint64_t patched;

        churn_init(&c);
        assert_int_equal(kc_sim_set_pods(f->sim, c.pods, n_pods), 0);
        l = list_all(f, -1);
        assert_int_equal(kc__sim_listings_patched(f->sim), 0);
        for (round = 0; round < 24; round++) {
                /* Every 5th container, and one sandbox, change state: they are touched. */
                for (i = round % 5; i < n_pods * CHURN_CTRS; i += 5) {
                        flip(&c.ctrs[i]);
                        since_c[i] = true;
                }
                flip(&c.sbs[round % n_pods]);
                since_sb[round % n_pods] = true;
                if (round == 12) /* a pod goes: a new shape */
                        n_pods--;
                if (round == 16) { /* two pods swap places: a new shape */
                        struct kc_sim_pod_spec t = c.pods[0];

                        c.pods[0] = c.pods[1];
                        c.pods[1] = t;
                }
                assert_int_equal(kc_sim_set_pods(f->sim, c.pods, n_pods), 0);
                if (round % 4 == 1) {
                        /* Containers only: the sandbox change stays owed to the next listing. */
                        struct kc_container_list cl = { 0 };

                        assert_int_equal(f->svc.ops->list_containers(f->svc.self, NULL, &cl, &err),
                                         0);
                        next = (struct listing){ .cl = cl };
                        assert_int_equal(next.cl.n, n_pods * CHURN_CTRS);
                        assert_listing_current(f, &next, false, true);
                        if (check_delta(cl.items, cl.n, sizeof(*cl.items), cl.base, cl.changed,
                                        cl.n_changed, l.cl.items, l.cl.n)) {
                                assert_int_equal(cl.n_changed,
                                                 touched(since_c, KC_ELEMENTSOF(since_c)));
                                deltas++;
                        }
                        kc_runtime_result_done(&between);
                        between = next.cl;
                        continue;
                }
                next = list_all(f, -1);
                assert_true(new_listing(&l, &next));
                if (check_delta(next.sbl.items, next.sbl.n, sizeof(*next.sbl.items), next.sbl.base,
                                next.sbl.changed, next.sbl.n_changed, l.sbl.items, l.sbl.n)) {
                        assert_int_equal(next.sbl.n_changed,
                                         touched(since_sb, KC_ELEMENTSOF(since_sb)));
                        deltas++;
                }
                if (check_delta(next.cl.items, next.cl.n, sizeof(*next.cl.items), next.cl.base,
                                next.cl.changed, next.cl.n_changed,
                                between.items ? between.items : l.cl.items,
                                between.items ? between.n : l.cl.n)) {
                        assert_int_equal(next.cl.n_changed,
                                         touched(since_c, KC_ELEMENTSOF(since_c)));
                        deltas++;
                }
                memset(since_c, 0, sizeof(since_c));
                memset(since_sb, 0, sizeof(since_sb));
                kc_runtime_result_done(&between);
                between = (struct kc_container_list){ 0 };
                assert_listing_order(&next, c.pods, n_pods);
                assert_listing_current(f, &next, true, true);
                listing_done(&l);
                l = next;
        }
        patched = kc__sim_listings_patched(f->sim);
        assert_true(patched >= 30);
        /* Every patched listing said how, against the listing of its kind before it. */
        assert_int_equal(deltas, patched);
        /* The listing before the last one, let go by the test, was patched in place. */
        assert_true(kc__sim_listings_recycled(f->sim) >= patched / 2);

        /* Through the CRI: starts, a stop, an exit falling due, a sandbox stopped. */
        sb = run_sandbox(f, "u1");
        app = create_ctr(f, sb, "u1", "app", forever, 1);
        job = create_ctr(f, sb, "u1", "job", sleep3, 2);
        expect_new(f, &l);
        assert_int_equal(f->svc.ops->start_container(f->svc.self, app, &err), 0);
        assert_int_equal(f->svc.ops->start_container(f->svc.self, job, &err), 0);
        expect_new(f, &l);
        assert_listing_current(f, &l, true, true);
        assert_int_equal(find_listed(&l, job)->state, KC_CONTAINER_STATE_RUNNING);
        kc_fake_clock_advance(f->clock, 4 * SEC);
        expect_new(f, &l);
        assert_int_equal(find_listed(&l, job)->state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(f->svc.ops->stop_container(f->svc.self, app, 0, &err), 0);
        expect_new(f, &l);
        assert_int_equal(find_listed(&l, app)->state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(f->svc.ops->stop_pod_sandbox(f->svc.self, sb, &err), 0);
        expect_new(f, &l);
        assert_listing_current(f, &l, true, true);
        assert_true(kc__sim_listings_patched(f->sim) > patched);
        listing_done(&l);
}

/*
 * A patched listing copies only the objects touched, each at its place in
 * its pod (issue 18): after a container before it in its pod went (a new
 * shape), a container's change still lands on its own item, and the delta
 * names that item alone.
 */
static void test_list_patched_objects_keep_their_place(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        const char *const forever[] = { "nginx" };
        _cleanup_free_ char *sb = NULL, *first = NULL, *mid = NULL, *last = NULL;
        struct listing l;

        sb = run_sandbox(f, "u1");
        first = create_ctr(f, sb, "u1", "first", forever, 1);
        mid = create_ctr(f, sb, "u1", "mid", forever, 1);
        last = create_ctr(f, sb, "u1", "last", forever, 1);
        assert_int_equal(f->svc.ops->start_container(f->svc.self, mid, &err), 0);
        assert_int_equal(f->svc.ops->start_container(f->svc.self, last, &err), 0);
        l = list_all(f, -1);
        /* The first container goes: the others move up one, a new shape. */
        assert_int_equal(f->svc.ops->remove_container(f->svc.self, first, &err), 0);
        expect_new(f, &l);
        assert_int_equal(l.cl.n, 2);
        /* The last one stops: patched, at its new place. */
        assert_int_equal(f->svc.ops->stop_container(f->svc.self, last, 0, &err), 0);
        expect_new(f, &l);
        assert_listing_current(f, &l, true, true);
        assert_int_equal(find_listed(&l, last)->state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(find_listed(&l, mid)->state, KC_CONTAINER_STATE_RUNNING);
        assert_non_null(l.cl.base);
        assert_int_equal(l.cl.n_changed, 1);
        assert_ptr_equal(&l.cl.items[l.cl.changed[0]], find_listed(&l, last));
        /* Nothing of the sandboxes changed: their listing names no item. */
        assert_int_equal(l.sbl.n_changed, 0);
        listing_done(&l);
}

/*
 * The listing before the last one is patched in place only while listings
 * change: handed out again ten times in a row (nothing changed), the last
 * listing lets it go, and the next change is a copy again (issue 18).
 */
static void test_list_spare_goes_when_idle(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct churn c;
        struct listing l;
        uint64_t recycled;
        int idle;

        churn_init(&c);
        for (idle = 9; idle <= 10; idle++) {
                assert_int_equal(kc_sim_set_pods(f->sim, c.pods, CHURN_PODS), 0);
                l = list_all(f, -1);
                listing_done(&l);
                flip(&c.ctrs[0]);
                assert_int_equal(kc_sim_set_pods(f->sim, c.pods, CHURN_PODS), 0);
                l = list_all(f, -1);
                listing_done(&l);
                /* The first listing is the spare now, held by the sim only. */
                for (int k = 0; k < idle; k++) {
                        l = list_all(f, -1);
                        listing_done(&l);
                }
                recycled = kc__sim_listings_recycled(f->sim);
                flip(&c.ctrs[1]);
                assert_int_equal(kc_sim_set_pods(f->sim, c.pods, CHURN_PODS), 0);
                l = list_all(f, -1);
                assert_listing_current(f, &l, true, true);
                listing_done(&l);
                /* Both kinds patched in place after 9 idle listings, copied after 10. */
                assert_int_equal(kc__sim_listings_recycled(f->sim), recycled + (idle < 10 ? 2 : 0));
        }
}

/* Results outlive the objects they show and the sim (ASan: use after free otherwise). */
static void test_results_outlive_objects_and_sim(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        struct kc_container_status_result cr = { 0 };
        struct kc_pod_sandbox_status_result sr = { 0 };
        struct kc_container_list pod_cl = { 0 };
        const struct kc_label sel = { KC_LABEL_POD_UID, "u1" };
        const char *const forever[] = { "nginx" };
        _cleanup_free_ char *sb = NULL, *app = NULL, *side = NULL;
        struct listing l;

        sb = run_sandbox(f, "u1");
        app = create_ctr(f, sb, "u1", "app", forever, 1);
        side = create_ctr(f, sb, "u1", "side", forever, 1);
        l = list_all(f, -1);
        assert_int_equal(f->svc.ops->container_status(f->svc.self, app, &cr, &err), 0);
        assert_int_equal(f->svc.ops->pod_sandbox_status(f->svc.self, sb, &sr, &err), 0);
        assert_int_equal(f->svc.ops->list_containers(f->svc.self,
                                                     &(struct kc_container_filter){
                                                             .state = -1,
                                                             .label_selector = &sel,
                                                             .n_label_selector = 1,
                                                     },
                                                     &pod_cl, &err),
                         0);
        assert_int_equal(f->svc.ops->remove_pod_sandbox(f->svc.self, sb, &err), 0);
        assert_int_equal(kc_sim_set_pods(f->sim, pods, KC_ELEMENTSOF(pods)), 0);
        f->sim = kc_sim_free(f->sim);

        assert_string_equal(cr.status.id, app);
        assert_string_equal(cr.status.annotations[1].value, "a value of its own");
        assert_string_equal(cr.status.mounts[0].host_path, "/var/lib/data");
        assert_string_equal(sr.status.metadata.name, "pod");
        assert_string_equal(sr.status.labels[0].value, "u1");
        /* Each result on its own: side is in no status result. */
        assert_string_equal(l.cl.items[1].id, side);
        assert_string_equal(l.cl.items[1].labels[1].value, "side");
        assert_string_equal(l.cl.items[1].log_path, "/var/log/pods/x/c/0.log");
        assert_string_equal(l.sbl.items[0].id, sb);
        assert_string_equal(pod_cl.items[1].labels[1].value, "side");
        kc_runtime_result_done(&cr);
        kc_runtime_result_done(&sr);
        kc_runtime_result_done(&pod_cl);
        listing_done(&l);
}

/* Both listings of one pod, selected by its UID alone, as GetPodStatus asks. */
static struct listing list_pod(struct sim_faces_fixture *f, const char *uid)
{
        return list_selected(f, -1, -1, &(struct kc_label){ KC_LABEL_POD_UID, uid });
}

/* Whether the @p n items at @p items, of @p size, lie among the @p n_all at @p all. */
static bool among(const void *items, size_t n, const void *all, size_t n_all, size_t size)
{
        const char *p = items, *a = all;

        return p && a && p >= a && p + n * size <= a + n_all * size;
}

/*
 * A pod listed by its UID right after a listing of every object, with
 * nothing changed between, is that listing's items of the pod, the bytes a
 * walk of the pod gives, nothing copied (issue 18); a pod with an object
 * its UID does not select, or a state changed since, is walked.
 */
static void test_list_pod_from_full_listing(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        const char *const forever[] = { "nginx" };
        _cleanup_free_ char *sb1 = NULL, *app1 = NULL, *stray = NULL, *sb2 = NULL, *app2 = NULL,
                            *side2 = NULL;
        const struct kc_label by_u2 = { KC_LABEL_POD_UID, "u2" };
        struct kc_container_list running = { 0 };
        struct listing walked, l, served, u1, after;

        sb1 = run_sandbox(f, "u1");
        app1 = create_ctr(f, sb1, "u1", "app", forever, 1);
        stray = create_ctr(f, sb1, "u9", "stray", forever, 1); /* in pod u1, labelled u9 */
        sb2 = run_sandbox(f, "u2");
        app2 = create_ctr(f, sb2, "u2", "app", forever, 1);
        side2 = create_ctr(f, sb2, "u2", "side", forever, 1);
        walked = list_pod(f, "u2"); /* no listing of every object yet */
        l = list_all(f, -1);

        served = list_pod(f, "u2");
        assert_ptr_equal(served.sbl.arena, l.sbl.arena);
        assert_ptr_equal(served.cl.arena, l.cl.arena);
        assert_true(
                among(served.sbl.items, served.sbl.n, l.sbl.items, l.sbl.n, sizeof(*l.sbl.items)));
        assert_true(among(served.cl.items, served.cl.n, l.cl.items, l.cl.n, sizeof(*l.cl.items)));
        assert_int_equal(served.sbl.n, 1);
        assert_int_equal(served.cl.n, 2);
        assert_memory_equal(served.sbl.items, walked.sbl.items, sizeof(*walked.sbl.items));
        assert_memory_equal(served.cl.items, walked.cl.items, 2 * sizeof(*walked.cl.items));
        assert_string_equal(served.cl.items[0].id, app2);
        assert_string_equal(served.cl.items[1].id, side2);
        /* A state besides the UID: the items are looked at, and none is running yet. */
        assert_int_equal(f->svc.ops->list_containers(f->svc.self,
                                                     &(struct kc_container_filter){
                                                             .state = KC_CONTAINER_STATE_RUNNING,
                                                             .label_selector = &by_u2,
                                                             .n_label_selector = 1,
                                                     },
                                                     &running, &err),
                         0);
        assert_int_equal(running.n, 0);
        kc_runtime_result_done(&running);

        /* Its sandbox is served; its containers are walked, the stray one left out. */
        u1 = list_pod(f, "u1");
        assert_ptr_equal(u1.sbl.arena, l.sbl.arena);
        assert_string_equal(u1.sbl.items[0].id, sb1);
        assert_ptr_not_equal(u1.cl.arena, l.cl.arena);
        assert_int_equal(u1.cl.n, 1);
        assert_string_equal(u1.cl.items[0].id, app1);

        /* The listing held no longer shows the state: walked again, showing the change. */
        assert_int_equal(served.cl.items[0].state, KC_CONTAINER_STATE_CREATED);
        assert_int_equal(f->svc.ops->start_container(f->svc.self, app2, &err), 0);
        after = list_pod(f, "u2");
        assert_ptr_not_equal(after.cl.arena, l.cl.arena);
        assert_int_equal(after.cl.n, 2);
        assert_string_equal(after.cl.items[0].id, app2);
        assert_int_equal(after.cl.items[0].state, KC_CONTAINER_STATE_RUNNING);

        /* With the stray container gone, u1 is served too. */
        assert_int_equal(f->svc.ops->remove_container(f->svc.self, stray, &err), 0);
        listing_done(&l);
        l = list_all(f, -1);
        listing_done(&u1);
        u1 = list_pod(f, "u1");
        assert_ptr_equal(u1.cl.arena, l.cl.arena);
        assert_int_equal(u1.cl.n, 1);
        assert_string_equal(u1.cl.items[0].id, app1);

        listing_done(&after);
        listing_done(&u1);
        listing_done(&served);
        listing_done(&l);
        listing_done(&walked);
}

/* A pod listed by UID and then gone is not found again by that UID (cri_list.c's selector_scope). */
static void test_list_pod_gone(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        const char *const forever[] = { "nginx" };
        _cleanup_free_ char *sb = NULL, *app = NULL;
        struct listing l;

        sb = run_sandbox(f, "u1");
        app = create_ctr(f, sb, "u1", "app", forever, 1);
        l = list_pod(f, "u1");
        assert_int_equal(l.cl.n, 1);
        listing_done(&l);
        /* Its last sandbox gone, a pod made through the CRI goes with it. */
        assert_int_equal(f->svc.ops->remove_pod_sandbox(f->svc.self, sb, &err), 0);
        l = list_pod(f, "u1");
        assert_int_equal(l.sbl.n, 0);
        assert_int_equal(l.cl.n, 0);
        listing_done(&l);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_list_state_shares_full_listing,
                                                sim_faces_setup, sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_list_identity_no_change, sim_faces_setup,
                                                sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_list_new_after_each_mutation, sim_faces_setup,
                                                sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_set_pods_keeps_unchanged, sim_faces_setup,
                                                sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_list_faults_still_apply, sim_faces_setup,
                                                sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_status_views, sim_faces_setup,
                                                sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_status_duplicate_ids, sim_faces_setup,
                                                sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_results_outlive_objects_and_sim,
                                                sim_faces_setup, sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_list_patched_objects_keep_their_place,
                                                sim_faces_setup, sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_list_spare_goes_when_idle, sim_faces_setup,
                                                sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_list_patched_shows_every_change,
                                                sim_faces_setup, sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_list_pod_from_full_listing, sim_faces_setup,
                                                sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_list_pod_gone, sim_faces_setup,
                                                sim_faces_teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
