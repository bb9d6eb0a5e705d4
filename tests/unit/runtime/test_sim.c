/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated runtime: kubecontainer face, kc_sim_set_pods, faults, call counts, CRI face. */
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
#include <cmocka.h>

#include "core/cleanup.h"
#include "core/clock.h"
#include "fixture.h"
#include "kc_test.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"
#include "runtime/sim.h"

/* Two pods: p1 (2 containers, a ready and a dead sandbox, IPs), p2 (1 exited container). */
static const struct kc_sim_container_spec p1_ctrs[] = {
        { "c1", "app", KC_CONTAINER_STATE_RUNNING, 0 },
        { "c2", "side", KC_CONTAINER_STATE_EXITED, 3 },
};
static const struct kc_sim_container_spec p1_sbs[] = {
        { "s1", "POD", KC_CONTAINER_STATE_RUNNING, 0 },
        { "s0", "POD", KC_CONTAINER_STATE_EXITED, 0 },
};
static const char *const p1_ips[] = { "10.0.0.5", "fd00::5" };
static const struct kc_sim_container_spec p2_ctrs[] = {
        { "c3", "job", KC_CONTAINER_STATE_UNKNOWN, 0 },
};
static const struct kc_sim_pod_spec two_pods[] = {
        { .id = "p1",
          .name = "web",
          .namespace = "ns",
          .ips = p1_ips,
          .n_ips = 2,
          .containers = p1_ctrs,
          .n_containers = 2,
          .sandboxes = p1_sbs,
          .n_sandboxes = 2 },
        { .id = "p2",
          .name = "batch",
          .namespace = "ns",
          .containers = p2_ctrs,
          .n_containers = 1 },
};

static const char *label_get(const struct kc_label *l, size_t n, const char *key)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(l[i].key, key) == 0)
                        return l[i].value;
        return NULL;
}

static const struct kc_container *find_ctr(const struct kc_pod *p, const char *id)
{
        for (size_t i = 0; i < p->n_containers; i++)
                if (strcmp(p->containers[i].id, id) == 0)
                        return &p->containers[i];
        for (size_t i = 0; i < p->n_sandboxes; i++)
                if (strcmp(p->sandboxes[i].id, id) == 0)
                        return &p->sandboxes[i];
        return NULL;
}

static void test_set_pods_get_pods(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_pod_list l = { 0 };
        struct kc_runtime_error err = { 0 };

        assert_int_equal(kc_sim_set_pods(f->sim, two_pods, 2), 0);
        assert_int_equal(f->pr.ops->get_pods(f->pr.self, true, &l, &err), 0);
        assert_int_equal(l.n, 2);
        /* Insertion order. */
        assert_string_equal(l.pods[0]->id, "p1");
        assert_string_equal(l.pods[0]->name, "web");
        assert_string_equal(l.pods[0]->namespace, "ns");
        assert_string_equal(l.pods[1]->id, "p2");
        assert_int_equal(l.pods[0]->n_containers, 2);
        assert_int_equal(l.pods[0]->n_sandboxes, 2);
        assert_int_equal(find_ctr(l.pods[0], "c1")->state, KC_CONTAINER_STATE_RUNNING);
        assert_string_equal(find_ctr(l.pods[0], "c1")->name, "app");
        assert_int_equal(find_ctr(l.pods[0], "c2")->state, KC_CONTAINER_STATE_EXITED);
        /* Sandbox states verbatim. */
        assert_int_equal(find_ctr(l.pods[0], "s1")->state, KC_CONTAINER_STATE_RUNNING);
        assert_int_equal(find_ctr(l.pods[0], "s0")->state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(find_ctr(l.pods[1], "c3")->state, KC_CONTAINER_STATE_UNKNOWN);
        kc_pod_list_done(&l);

        /* all=false: running containers and ready sandboxes only; p2 has nothing. */
        assert_int_equal(f->pr.ops->get_pods(f->pr.self, false, &l, &err), 0);
        assert_int_equal(l.n, 1);
        assert_string_equal(l.pods[0]->id, "p1");
        assert_int_equal(l.pods[0]->n_containers, 1);
        assert_int_equal(l.pods[0]->n_sandboxes, 1);
        assert_string_equal(l.pods[0]->sandboxes[0].id, "s1");
        kc_pod_list_done(&l);

        /* Replacing the state replaces everything. */
        assert_int_equal(kc_sim_set_pods(f->sim, &two_pods[1], 1), 0);
        assert_int_equal(f->pr.ops->get_pods(f->pr.self, true, &l, &err), 0);
        assert_int_equal(l.n, 1);
        assert_string_equal(l.pods[0]->id, "p2");
        kc_pod_list_done(&l);

        /* Bad input. */
        assert_int_equal(
                kc_sim_set_pods(f->sim, (struct kc_sim_pod_spec[]){ two_pods[0], two_pods[0] }, 2),
                -EEXIST);
        assert_int_equal(kc_sim_set_pods(f->sim, (struct kc_sim_pod_spec[]){ { .id = NULL } }, 1),
                         -EINVAL);
        assert_int_equal(kc_sim_set_pods(f->sim, NULL, 0), 0);
        assert_int_equal(f->pr.ops->get_pods(f->pr.self, true, &l, &err), 0);
        assert_int_equal(l.n, 0);
        kc_pod_list_done(&l);
}

static void test_unchanged_pods_are_shared(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_pod_list a = { 0 }, b = { 0 };

        assert_int_equal(kc_sim_set_pods(f->sim, two_pods, 2), 0);
        assert_int_equal(f->pr.ops->get_pods(f->pr.self, true, &a, NULL), 0);
        assert_int_equal(f->pr.ops->get_pods(f->pr.self, true, &b, NULL), 0);
        assert_int_equal(a.n, b.n);
        for (size_t i = 0; i < a.n; i++)
                assert_ptr_equal(a.pods[i], b.pods[i]);
        kc_pod_list_done(&a);
        kc_pod_list_done(&b);
}

static void test_get_pod_status(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_pod_status *s = NULL;
        struct kc_runtime_error err = { 0 };

        assert_int_equal(kc_sim_set_pods(f->sim, two_pods, 2), 0);
        assert_int_equal(f->pr.ops->get_pod_status(f->pr.self, "p1", "web", "ns", &s, &err), 0);
        assert_string_equal(s->id, "p1");
        assert_string_equal(s->name, "web");
        assert_string_equal(s->namespace, "ns");
        assert_int_equal(s->n_ips, 2);
        assert_string_equal(s->ips[0], "10.0.0.5");
        assert_string_equal(s->ips[1], "fd00::5");
        assert_int_equal(s->n_sandboxes, 2);
        assert_string_equal(s->sandboxes[0].id, "s1");
        assert_int_equal(s->sandboxes[0].state, KC_SANDBOX_STATE_READY);
        assert_string_equal(s->sandboxes[0].ip, "10.0.0.5");
        assert_string_equal(s->sandboxes[1].id, "s0");
        assert_int_equal(s->sandboxes[1].state, KC_SANDBOX_STATE_NOTREADY);
        assert_int_equal(s->n_containers, 2);
        assert_string_equal(s->containers[0].id, "c1");
        assert_string_equal(s->containers[0].name, "app");
        assert_int_equal(s->containers[0].state, KC_CONTAINER_STATE_RUNNING);
        assert_string_equal(s->containers[1].id, "c2");
        assert_int_equal(s->containers[1].state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(s->containers[1].exit_code, 3);
        s = kc_pod_status_unref(s);

        /* Unknown UID: success and a status with only the id. */
        assert_int_equal(f->pr.ops->get_pod_status(f->pr.self, "nope", NULL, NULL, &s, &err), 0);
        assert_string_equal(s->id, "nope");
        assert_int_equal(s->n_containers + s->n_sandboxes + s->n_ips, 0);
        s = kc_pod_status_unref(s);
}

static void test_faults(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_pod_list l = { .pods = (void *)0x1, .n = 42 };
        struct kc_pod_status *s = NULL;
        struct kc_runtime_error err = { 0 };

        assert_int_equal(kc_sim_set_pods(f->sim, two_pods, 2), 0);
        assert_int_equal(kc_sim_inject_fault(f->sim, "NoSuchCall", NULL, "x", 1), -EINVAL);
        assert_int_equal(kc_sim_inject_fault(f->sim, "GetPods", NULL, "x", 0), -EINVAL);

        /* GetPods fails twice, then works; *ret untouched on failure. */
        assert_int_equal(kc_sim_inject_fault(f->sim, "GetPods", NULL, "boom", 1), 0);
        assert_int_equal(kc_sim_inject_fault(f->sim, "GetPods", NULL, "bang", 1), 0);
        assert_int_equal(f->pr.ops->get_pods(f->pr.self, true, &l, &err), -EIO);
        assert_int_equal(err.code, KC_RUNTIME_UNKNOWN);
        assert_string_equal(err.message, "boom");
        assert_ptr_equal(l.pods, (void *)0x1);
        assert_int_equal(l.n, 42);
        assert_int_equal(f->pr.ops->get_pods(f->pr.self, true, &l, &err), -EIO);
        assert_string_equal(err.message, "bang");
        l = (struct kc_pod_list){ 0 };
        assert_int_equal(f->pr.ops->get_pods(f->pr.self, true, &l, &err), 0);
        assert_int_equal(l.n, 2);
        kc_pod_list_done(&l);

        /* GetPodStatus narrowed to p1, 2 times: p2 is unaffected; partial status on failure. */
        assert_int_equal(kc_sim_inject_fault(f->sim, "GetPodStatus", "p1", "inspect failed", 2), 0);
        assert_int_equal(f->pr.ops->get_pod_status(f->pr.self, "p2", NULL, NULL, &s, &err), 0);
        assert_int_equal(s->n_containers, 1);
        s = kc_pod_status_unref(s);
        for (int i = 0; i < 2; i++) {
                memset(&err, 0, sizeof(err));
                assert_int_equal(f->pr.ops->get_pod_status(f->pr.self, "p1", NULL, NULL, &s, &err),
                                 -EIO);
                assert_string_equal(err.message, "inspect failed");
                assert_non_null(s);
                assert_string_equal(s->id, "p1");
                assert_int_equal(s->n_containers + s->n_sandboxes + s->n_ips, 0);
                s = kc_pod_status_unref(s);
        }
        assert_int_equal(f->pr.ops->get_pod_status(f->pr.self, "p1", NULL, NULL, &s, &err), 0);
        assert_int_equal(s->n_containers, 2);
        s = kc_pod_status_unref(s);

        /* CRI faults narrowed by object id. */
        struct kc_container_status_result cr = { 0 };

        assert_int_equal(kc_sim_inject_fault(f->sim, "ContainerStatus", "c2", "gone", 1), 0);
        assert_int_equal(f->svc.ops->container_status(f->svc.self, "c1", &cr, &err), 0);
        kc_runtime_result_done(&cr);
        assert_int_equal(f->svc.ops->container_status(f->svc.self, "c2", &cr, &err), -EIO);
        assert_int_equal(err.code, KC_RUNTIME_UNKNOWN);
        assert_null(cr.arena);
        assert_int_equal(f->svc.ops->container_status(f->svc.self, "c2", &cr, &err), 0);
        assert_int_equal(cr.status.exit_code, 3);
        kc_runtime_result_done(&cr);
}

static void test_call_counts(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_sim_call_count *c = NULL;
        struct kc_pod_status *s = NULL;
        struct kc_pod_list l = { 0 };
        struct kc_pod_sandbox_list sl = { 0 };
        size_t n = 99;

        assert_int_equal(kc_sim_call_counts(f->sim, &c, &n), 0);
        assert_int_equal(n, 0);
        free(c);

        assert_int_equal(kc_sim_set_pods(f->sim, two_pods, 2), 0);
        assert_int_equal(kc_sim_inject_fault(f->sim, "GetPods", NULL, "x", 1), 0);
        assert_int_equal(f->pr.ops->get_pods(f->pr.self, true, &l, NULL), -EIO); /* counted too */
        assert_int_equal(f->pr.ops->get_pods(f->pr.self, true, &l, NULL), 0);
        kc_pod_list_done(&l);
        for (int i = 0; i < 3; i++) {
                assert_int_equal(f->pr.ops->get_pod_status(f->pr.self, "p2", NULL, NULL, &s, NULL),
                                 0);
                s = kc_pod_status_unref(s);
        }
        assert_int_equal(f->pr.ops->get_pod_status(f->pr.self, "p1", NULL, NULL, &s, NULL), 0);
        s = kc_pod_status_unref(s);
        assert_int_equal(f->svc.ops->list_pod_sandbox(f->svc.self, NULL, &sl, NULL), 0);
        kc_runtime_result_done(&sl);

        assert_int_equal(kc_sim_call_counts(f->sim, &c, &n), 0);
        assert_int_equal(n, 4);
        assert_string_equal(c[0].op, "GetPodStatus");
        assert_string_equal(c[0].key, "p1");
        assert_int_equal(c[0].count, 1);
        assert_string_equal(c[1].op, "GetPodStatus");
        assert_string_equal(c[1].key, "p2");
        assert_int_equal(c[1].count, 3);
        assert_string_equal(c[2].op, "GetPods");
        assert_string_equal(c[2].key, "");
        assert_int_equal(c[2].count, 2);
        assert_string_equal(c[3].op, "ListPodSandbox");
        assert_string_equal(c[3].key, "");
        assert_int_equal(c[3].count, 1);
        free(c);
}

/* ---- CRI face ---------------------------------------------------------- */

static char *run_sandbox(struct sim_faces_fixture *f, const char *uid, const char *name,
                         bool host_network)
{
        const struct kc_label labels[] = {
                { KC_LABEL_POD_UID, uid },
                { KC_LABEL_POD_NAME, name },
                { KC_LABEL_POD_NAMESPACE, "default" },
        };
        struct kc_pod_sandbox_config cfg = {
                .metadata = { .name = name, .uid = uid, .namespace = "default" },
                .host_network = host_network,
                .labels = labels,
                .n_labels = KC_ELEMENTSOF(labels),
        };
        struct kc_runtime_error err = { 0 };
        char *id = NULL;

        assert_int_equal(f->svc.ops->run_pod_sandbox(f->svc.self, &cfg, &id, &err), 0);
        assert_non_null(id);
        return id;
}

static char *create_ctr(struct sim_faces_fixture *f, const char *sb, const char *uid,
                        const char *name, const char *const *cmd, size_t n_cmd)
{
        const struct kc_label labels[] = {
                { KC_LABEL_POD_UID, uid },
                { KC_LABEL_POD_NAME, "pod" },
                { KC_LABEL_POD_NAMESPACE, "default" },
                { KC_LABEL_CONTAINER_NAME, name },
        };
        const struct kc_label ann[] = { { KC_ANNOTATION_CONTAINER_HASH, "1a2b" } };
        struct kc_container_config cfg = {
                .metadata = { .name = name },
                .image = "busybox",
                .command = cmd,
                .n_command = n_cmd,
                .labels = labels,
                .n_labels = KC_ELEMENTSOF(labels),
                .annotations = ann,
                .n_annotations = 1,
        };
        struct kc_runtime_error err = { 0 };
        char *id = NULL;

        assert_int_equal(f->svc.ops->create_container(f->svc.self, sb, &cfg, NULL, &id, &err), 0);
        return id;
}

static struct kc_cri_container ctr_status(struct sim_faces_fixture *f, const char *id,
                                          struct kc_container_status_result *res)
{
        struct kc_runtime_error err = { 0 };

        kc_runtime_result_done(res);
        assert_int_equal(f->svc.ops->container_status(f->svc.self, id, res, &err), 0);
        return res->status;
}

/* Lists the containers whose labels match @p sel; returns how many, the first in *ret_id. */
static size_t list_selected(struct sim_faces_fixture *f, const struct kc_label *sel, size_t n_sel,
                            char **ret_id)
{
        struct kc_container_filter cf = { .state = -1,
                                          .label_selector = sel,
                                          .n_label_selector = n_sel };
        struct kc_runtime_error err = { 0 };
        struct kc_container_list cl = { 0 };
        size_t n;

        assert_int_equal(f->svc.ops->list_containers(f->svc.self, &cf, &cl, &err), 0);
        n = cl.n;
        if (ret_id)
                *ret_id = n > 0 ? strdup(cl.items[0].id) : NULL;
        kc_runtime_result_done(&cl);
        return n;
}

/*
 * A pod UID selector narrows a listing to the pod, and each of the pod's
 * objects is still matched by its own labels: one labelled with another
 * UID is left out, on the first call and on the ones after it; a selector
 * on another pod right after finds that pod's objects only.
 */
static void test_uid_selector_reads_stray_labels(void **state)
{
        struct sim_faces_fixture *f = *state;
        const char *const top[] = { "top" };
        const struct kc_label by_u1 = { KC_LABEL_POD_UID, "u1" };
        const struct kc_label u1_stray[] = { { KC_LABEL_POD_UID, "u1" },
                                             { KC_LABEL_CONTAINER_NAME, "stray" } };
        const struct kc_label u1_app[] = { { KC_LABEL_POD_UID, "u1" },
                                           { KC_LABEL_CONTAINER_NAME, "app" } };
        char *sb, *sb2, *app, *stray, *other, *got = NULL;
        int round;

        sb = run_sandbox(f, "u1", "pod", false);
        sb2 = run_sandbox(f, "u2", "pod2", false);
        app = create_ctr(f, sb, "u1", "app", top, 1);
        stray = create_ctr(f, sb, "u9", "stray", top, 1); /* in pod u1, labelled u9 */
        other = create_ctr(f, sb2, "u2", "app", top, 1);
        for (round = 0; round < 2; round++) {
                assert_int_equal(list_selected(f, &by_u1, 1, &got), 1);
                assert_string_equal(got, app);
                free(got);
                assert_int_equal(list_selected(f, u1_stray, 2, NULL), 0);
                assert_int_equal(list_selected(f, u1_app, 2, &got), 1);
                assert_string_equal(got, app);
                free(got);
        }
        /* Another pod right after: not the one listed last. */
        assert_int_equal(list_selected(f, &(struct kc_label){ KC_LABEL_POD_UID, "u2" }, 1, &got),
                         1);
        assert_string_equal(got, other);
        free(got);
        free(sb);
        free(sb2);
        free(app);
        free(stray);
        free(other);
}

static void test_cri_version_status(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_version_result v = { 0 };
        struct kc_runtime_status_result st = { 0 };

        assert_int_equal(f->svc.ops->version(f->svc.self, &v, NULL), 0);
        assert_string_equal(v.runtime_name, "sim");
        kc_runtime_result_done(&v);
        assert_int_equal(f->svc.ops->status(f->svc.self, &st, NULL), 0);
        assert_int_equal(st.n_conditions, 2);
        assert_string_equal(st.conditions[0].type, "RuntimeReady");
        assert_true(st.conditions[0].status);
        assert_string_equal(st.conditions[1].type, "NetworkReady");
        assert_true(st.conditions[1].status);
        kc_runtime_result_done(&st);
}

static void test_cri_lifecycle(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        struct kc_container_status_result cr = { 0 };
        struct kc_pod_sandbox_status_result sr = { 0 };
        struct kc_pod_sandbox_list sl = { 0 };
        struct kc_container_list cl = { 0 };
        const char *const top[] = { "top" };
        struct kc_cri_container c;
        char *sb, *sb2, *c1, *c2, *hn;

        sb = run_sandbox(f, "u1", "pod", false);
        assert_int_equal(strncmp(sb, "sim-", 4), 0);
        assert_int_equal(strlen(sb), 4 + 16);
        assert_int_equal(f->svc.ops->pod_sandbox_status(f->svc.self, sb, &sr, &err), 0);
        assert_int_equal(sr.status.state, KC_SANDBOX_STATE_READY);
        assert_string_equal(sr.status.ip, "10.88.0.2");
        assert_string_equal(sr.status.metadata.uid, "u1");
        kc_runtime_result_done(&sr);

        /* Same metadata again: the name is reserved. */
        {
                struct kc_pod_sandbox_config cfg = {
                        .metadata = { .name = "pod", .uid = "u1", .namespace = "default" },
                };
                char *dup = NULL;

                assert_int_equal(f->svc.ops->run_pod_sandbox(f->svc.self, &cfg, &dup, &err),
                                 -EEXIST);
                assert_int_equal(err.code, KC_RUNTIME_ALREADY_EXISTS);
                assert_null(dup);
        }

        c1 = create_ctr(f, sb, "u1", "app", top, 1);
        c2 = create_ctr(f, sb, "u1", "side", top, 1);
        c = ctr_status(f, c1, &cr);
        assert_int_equal(c.state, KC_CONTAINER_STATE_CREATED);
        assert_string_equal(c.pod_sandbox_id, sb);
        assert_string_equal(c.image, "busybox");
        assert_string_equal(c.metadata.name, "app");

        assert_int_equal(f->svc.ops->start_container(f->svc.self, c1, &err), 0);
        assert_int_equal(f->svc.ops->start_container(f->svc.self, c1, &err), -EINVAL);
        assert_int_equal(err.code, KC_RUNTIME_FAILED_PRECONDITION);
        c = ctr_status(f, c1, &cr);
        assert_int_equal(c.state, KC_CONTAINER_STATE_RUNNING);
        assert_int_equal(c.started_at, T0);

        /* List filters. */
        assert_int_equal(f->svc.ops->list_containers(f->svc.self, NULL, &cl, &err), 0);
        assert_int_equal(cl.n, 2);
        kc_runtime_result_done(&cl);
        assert_int_equal(f->svc.ops->list_containers(f->svc.self,
                                                     &(struct kc_container_filter){
                                                             .state = KC_CONTAINER_STATE_RUNNING },
                                                     &cl, &err),
                         0);
        assert_int_equal(cl.n, 1);
        assert_string_equal(cl.items[0].id, c1);
        kc_runtime_result_done(&cl);
        {
                struct kc_label side = { KC_LABEL_CONTAINER_NAME, "side" };
                struct kc_container_filter by_name = { .state = -1,
                                                       .label_selector = &side,
                                                       .n_label_selector = 1 };

                assert_int_equal(f->svc.ops->list_containers(f->svc.self, &by_name, &cl, &err), 0);
        }
        assert_int_equal(cl.n, 1);
        assert_string_equal(cl.items[0].id, c2);
        kc_runtime_result_done(&cl);
        assert_int_equal(
                f->svc.ops->list_containers(
                        f->svc.self,
                        &(struct kc_container_filter){
                                .state = -1,
                                .label_selector = &(struct kc_label){ KC_LABEL_POD_UID, "other" },
                                .n_label_selector = 1 },
                        &cl, &err),
                0);
        assert_int_equal(cl.n, 0);
        kc_runtime_result_done(&cl);

        /* Stop: killed -> 137. A created container stays created. */
        assert_int_equal(kc_fake_clock_advance(f->clock, KC_NSEC_PER_SEC), 0);
        assert_int_equal(f->svc.ops->stop_container(f->svc.self, c1, 10, &err), 0);
        c = ctr_status(f, c1, &cr);
        assert_int_equal(c.state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(c.exit_code, 137);
        assert_int_equal(c.finished_at, T0 + KC_NSEC_PER_SEC);
        assert_int_equal(f->svc.ops->stop_container(f->svc.self, c1, 10, &err), 0);
        c = ctr_status(f, c1, &cr);
        assert_int_equal(c.exit_code, 137);
        kc_runtime_result_done(&cr);

        /* Second sandbox, host network: no IP. */
        hn = run_sandbox(f, "u2", "hostpod", true);
        assert_int_equal(f->svc.ops->pod_sandbox_status(f->svc.self, hn, &sr, &err), 0);
        assert_null(sr.status.ip);
        kc_runtime_result_done(&sr);

        assert_int_equal(f->svc.ops->list_pod_sandbox(f->svc.self, NULL, &sl, &err), 0);
        assert_int_equal(sl.n, 2);
        kc_runtime_result_done(&sl);
        assert_int_equal(f->svc.ops->list_pod_sandbox(
                                 f->svc.self,
                                 &(struct kc_pod_sandbox_filter){ .id = hn, .state = -1 }, &sl,
                                 &err),
                         0);
        assert_int_equal(sl.n, 1);
        assert_string_equal(sl.items[0].metadata.name, "hostpod");
        kc_runtime_result_done(&sl);

        /* Stop the first sandbox: NOTREADY, no IP, creating in it fails. */
        assert_int_equal(f->svc.ops->stop_pod_sandbox(f->svc.self, sb, &err), 0);
        assert_int_equal(f->svc.ops->pod_sandbox_status(f->svc.self, sb, &sr, &err), 0);
        assert_int_equal(sr.status.state, KC_SANDBOX_STATE_NOTREADY);
        assert_null(sr.status.ip);
        kc_runtime_result_done(&sr);
        assert_int_equal(f->svc.ops->list_pod_sandbox(
                                 f->svc.self,
                                 &(struct kc_pod_sandbox_filter){ .state = KC_SANDBOX_STATE_READY },
                                 &sl, &err),
                         0);
        assert_int_equal(sl.n, 1);
        assert_string_equal(sl.items[0].id, hn);
        kc_runtime_result_done(&sl);
        {
                struct kc_container_config cfg = { .metadata = { .name = "late" } };
                char *id = NULL;

                assert_int_equal(
                        f->svc.ops->create_container(f->svc.self, sb, &cfg, NULL, &id, &err),
                        -EINVAL);
                assert_int_equal(err.code, KC_RUNTIME_FAILED_PRECONDITION);
                assert_int_equal(f->svc.ops->create_container(f->svc.self, "sim-nope", &cfg, NULL,
                                                              &id, &err),
                                 -ENOENT);
                assert_int_equal(err.code, KC_RUNTIME_NOT_FOUND);
        }

        /* A new sandbox for u1 is the newest. */
        sb2 = run_sandbox(f, "u1", "pod2", false);

        /* Remove a container; then the sandbox takes its remaining containers along. */
        assert_int_equal(f->svc.ops->remove_container(f->svc.self, c1, &err), 0);
        assert_int_equal(f->svc.ops->remove_container(f->svc.self, c1, &err), 0); /* idempotent */
        assert_int_equal(f->svc.ops->container_status(f->svc.self, c1, &cr, &err), -ENOENT);
        assert_int_equal(err.code, KC_RUNTIME_NOT_FOUND);
        assert_int_equal(f->svc.ops->stop_container(f->svc.self, c1, 0, &err), -ENOENT);
        assert_int_equal(f->svc.ops->start_container(f->svc.self, c1, &err), -ENOENT);
        assert_int_equal(f->svc.ops->remove_pod_sandbox(f->svc.self, sb, &err), 0);
        assert_int_equal(f->svc.ops->container_status(f->svc.self, c2, &cr, &err), -ENOENT);
        assert_int_equal(f->svc.ops->pod_sandbox_status(f->svc.self, sb, &sr, &err), -ENOENT);
        assert_int_equal(err.code, KC_RUNTIME_NOT_FOUND);
        /* Removing a missing sandbox succeeds (containerd semantics); so does stopping it. */
        assert_int_equal(f->svc.ops->remove_pod_sandbox(f->svc.self, sb, &err), 0);
        assert_int_equal(f->svc.ops->stop_pod_sandbox(f->svc.self, sb, &err), 0);

        /* The kubecontainer face sees the same world: u1 (sb2), u2 (hn). */
        {
                struct kc_pod_list l = { 0 };

                assert_int_equal(f->pr.ops->get_pods(f->pr.self, true, &l, &err), 0);
                assert_int_equal(l.n, 2);
                assert_string_equal(l.pods[0]->id, "u1");
                assert_int_equal(l.pods[0]->n_sandboxes, 1);
                assert_string_equal(l.pods[0]->sandboxes[0].id, sb2);
                assert_int_equal(l.pods[0]->n_containers, 0);
                assert_string_equal(l.pods[1]->id, "u2");
                assert_string_equal(l.pods[1]->name, "hostpod");
                kc_pod_list_done(&l);
        }
        assert_int_equal(f->svc.ops->remove_pod_sandbox(f->svc.self, sb2, &err), 0);
        assert_int_equal(f->svc.ops->remove_pod_sandbox(f->svc.self, hn, &err), 0);
        {
                struct kc_pod_list l = { 0 };

                assert_int_equal(f->pr.ops->get_pods(f->pr.self, true, &l, &err), 0);
                assert_int_equal(l.n, 0);
                kc_pod_list_done(&l);
        }
        free(sb);
        free(sb2);
        free(hn);
        free(c1);
        free(c2);
}

static void test_busybox_commands(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        struct kc_container_status_result cr = { 0 };
        const char *const sleep5[] = { "sleep", "5" };
        const char *const exit3[] = { "sh", "-c", "exit 3" };
        const char *const exit4[] = { "exit", "4" };
        const char *const fals[] = { "false" };
        const char *const tru[] = { "/bin/true" };
        const char *const forever[] = { "nginx", "-g", "daemon off;" };
        struct kc_cri_container c;
        char *sb, *s5, *e3, *e4, *fa, *tr, *fo;

        sb = run_sandbox(f, "u1", "pod", false);
        s5 = create_ctr(f, sb, "u1", "sleeper", sleep5, 2);
        e3 = create_ctr(f, sb, "u1", "exit3", exit3, 3);
        e4 = create_ctr(f, sb, "u1", "exit4", exit4, 2);
        fa = create_ctr(f, sb, "u1", "false", fals, 1);
        tr = create_ctr(f, sb, "u1", "true", tru, 1);
        fo = create_ctr(f, sb, "u1", "forever", forever, 3);
        for (const char *const *id = (const char *const[]){ s5, e3, e4, fa, tr, fo, NULL }; *id;
             id++)
                assert_int_equal(f->svc.ops->start_container(f->svc.self, *id, &err), 0);

        c = ctr_status(f, e3, &cr);
        assert_int_equal(c.state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(c.exit_code, 3);
        assert_string_equal(c.reason, "Error");
        c = ctr_status(f, e4, &cr);
        assert_int_equal(c.exit_code, 4);
        c = ctr_status(f, fa, &cr);
        assert_int_equal(c.state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(c.exit_code, 1);
        c = ctr_status(f, tr, &cr);
        assert_int_equal(c.state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(c.exit_code, 0);
        assert_string_equal(c.reason, "Completed");

        assert_int_equal(kc_fake_clock_advance(f->clock, 4999 * KC_NSEC_PER_MSEC), 0);
        c = ctr_status(f, s5, &cr);
        assert_int_equal(c.state, KC_CONTAINER_STATE_RUNNING);
        assert_int_equal(kc_fake_clock_advance(f->clock, KC_NSEC_PER_MSEC), 0);
        c = ctr_status(f, s5, &cr);
        assert_int_equal(c.state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(c.exit_code, 0);
        assert_int_equal(c.finished_at, T0 + 5 * KC_NSEC_PER_SEC);

        /* The kubecontainer face sees the exit too (lazily advanced by any call). */
        {
                struct kc_pod_status *s = NULL;
                bool seen = false;

                assert_int_equal(f->pr.ops->get_pod_status(f->pr.self, "u1", NULL, NULL, &s, &err),
                                 0);
                for (size_t i = 0; i < s->n_containers; i++)
                        if (strcmp(s->containers[i].id, s5) == 0) {
                                assert_int_equal(s->containers[i].state, KC_CONTAINER_STATE_EXITED);
                                seen = true;
                        }
                assert_true(seen);
                kc_pod_status_unref(s);
        }

        /* A stop after a natural exit keeps the exit code; the long runner is killed. */
        assert_int_equal(f->svc.ops->stop_container(f->svc.self, s5, 2, &err), 0);
        c = ctr_status(f, s5, &cr);
        assert_int_equal(c.exit_code, 0);
        assert_int_equal(kc_fake_clock_advance(f->clock, 3600 * KC_NSEC_PER_SEC), 0);
        c = ctr_status(f, fo, &cr);
        assert_int_equal(c.state, KC_CONTAINER_STATE_RUNNING);
        assert_int_equal(f->svc.ops->stop_container(f->svc.self, fo, 2, &err), 0);
        c = ctr_status(f, fo, &cr);
        assert_int_equal(c.exit_code, 137);
        kc_runtime_result_done(&cr);

        free(sb);
        free(s5);
        free(e3);
        free(e4);
        free(fa);
        free(tr);
        free(fo);
}

static void test_set_pods_through_cri(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        struct kc_pod_sandbox_status_result sr = { 0 };
        struct kc_pod_sandbox_list sl = { 0 };
        struct kc_container_list cl = { 0 };

        assert_int_equal(kc_sim_set_pods(f->sim, two_pods, 2), 0);
        /* Every sandbox of p1 reports the pod-level IPs. */
        assert_int_equal(f->svc.ops->pod_sandbox_status(f->svc.self, "s0", &sr, &err), 0);
        assert_int_equal(sr.status.state, KC_SANDBOX_STATE_NOTREADY);
        assert_string_equal(sr.status.ip, "10.0.0.5");
        assert_int_equal(sr.status.n_additional_ips, 1);
        assert_string_equal(sr.status.additional_ips[0], "fd00::5");
        assert_string_equal(label_get(sr.status.labels, sr.status.n_labels, KC_LABEL_POD_NAME),
                            "web");
        kc_runtime_result_done(&sr);

        assert_int_equal(
                f->svc.ops->list_pod_sandbox(
                        f->svc.self,
                        &(struct kc_pod_sandbox_filter){
                                .state = -1,
                                .label_selector = &(struct kc_label){ KC_LABEL_POD_UID, "p1" },
                                .n_label_selector = 1 },
                        &sl, &err),
                0);
        assert_int_equal(sl.n, 2);
        kc_runtime_result_done(&sl);
        assert_int_equal(
                f->svc.ops->list_containers(
                        f->svc.self,
                        &(struct kc_container_filter){
                                .state = -1,
                                .label_selector = &(struct kc_label){ KC_LABEL_POD_UID, "p1" },
                                .n_label_selector = 1 },
                        &cl, &err),
                0);
        assert_int_equal(cl.n, 2);
        assert_string_equal(cl.items[0].pod_sandbox_id, "s1");
        kc_runtime_result_done(&cl);

        /* Stopping a set_pods container through the CRI shows in the kubecontainer face. */
        assert_int_equal(f->svc.ops->stop_container(f->svc.self, "c1", 0, &err), 0);
        {
                struct kc_pod_list l = { 0 };

                assert_int_equal(f->pr.ops->get_pods(f->pr.self, true, &l, &err), 0);
                assert_int_equal(find_ctr(l.pods[0], "c1")->state, KC_CONTAINER_STATE_EXITED);
                kc_pod_list_done(&l);
        }
}

/* Concurrent use of both faces: ASan/TSan find races and leaks; the sim must stay coherent. */
struct worker {
        struct sim_faces_fixture *f;
        int kind;
        int errors;
};

static void *worker_main(void *arg)
{
        struct worker *w = arg;
        struct sim_faces_fixture *f = w->f;

        for (int i = 0; i < 300; i++) {
                struct kc_pod_list l = { 0 };
                struct kc_pod_status *s = NULL;
                struct kc_container_list cl = { 0 };
                struct kc_sim_call_count *c = NULL;
                size_t n = 0;

                switch (w->kind) {
                case 0:
                        if (kc_sim_set_pods(f->sim, two_pods, (size_t)(i % 3)) < 0)
                                w->errors++;
                        break;
                case 1:
                        if (f->pr.ops->get_pods(f->pr.self, i % 2, &l, NULL) < 0)
                                w->errors++;
                        kc_pod_list_done(&l);
                        break;
                case 2: {
                        struct kc_runtime_error err = { 0 };
                        int r = f->pr.ops->get_pod_status(f->pr.self, i % 2 ? "p1" : "p2", NULL,
                                                          NULL, &s, &err);

                        /* Worker 3 injects GetPodStatus faults on p1 now and then:
                         * exactly that failure is expected, nothing else. */
                        if (r < 0 && !(r == -EIO && strcmp(err.message, "x") == 0 && i % 2))
                                w->errors++;
                        kc_pod_status_unref(s);
                        break;
                }
                default:
                        if (f->svc.ops->list_containers(f->svc.self, NULL, &cl, NULL) < 0 ||
                            kc_sim_call_counts(f->sim, &c, &n) < 0)
                                w->errors++;
                        kc_runtime_result_done(&cl);
                        free(c);
                        if (i % 50 == 0)
                                kc_sim_inject_fault(f->sim, "GetPodStatus", "p1", "x", 1);
                        break;
                }
        }
        return NULL;
}

static void test_threads(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct worker w[4];
        pthread_t t[4];

        for (int i = 0; i < 4; i++) {
                w[i] = (struct worker){ .f = f, .kind = i };
                assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
        }
        for (int i = 0; i < 4; i++) {
                assert_int_equal(pthread_join(t[i], NULL), 0);
                assert_int_equal(w[i].errors, 0);
        }
}

/* ---- Images ------------------------------------------------------------ */

static void assert_image_id(const char *id)
{
        size_t i;

        assert_non_null(id);
        assert_int_equal(strlen(id), 7 + 64);
        assert_memory_equal(id, "sha256:", 7);
        for (i = 7; i < 7 + 64; i++)
                assert_non_null(strchr("0123456789abcdef", id[i]));
}

static void test_image_store(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_image_status_result st = { 0 };
        struct kc_runtime_error err = { 0 };
        struct kc_sim *other = NULL;
        struct kc_runtime_service osvc;
        char *ref = NULL, *ref2 = NULL, *id;

        /* Missing: success with no image, as CRI's nil image. */
        assert_int_equal(f->svc.ops->image_status(f->svc.self, "nginx:1.25", &st, &err), 0);
        assert_false(st.found);
        assert_null(st.image.id);
        kc_runtime_result_done(&st);

        /* Preloaded "busybox" is "busybox:latest"; found by either name and by id. */
        assert_int_equal(f->svc.ops->image_status(f->svc.self, "busybox:latest", &st, &err), 0);
        assert_true(st.found);
        assert_image_id(st.image.id);
        assert_int_equal(st.image.n_repo_tags, 1);
        assert_string_equal(st.image.repo_tags[0], "busybox:latest");
        assert_int_equal(st.image.n_repo_digests, 1);
        assert_int_equal(strncmp(st.image.repo_digests[0], "busybox@sha256:", 15), 0);
        assert_string_equal(st.image.repo_digests[0] + 8, st.image.id);
        assert_true(st.image.size >= (1u << 20));
        id = strdup(st.image.id);
        kc_runtime_result_done(&st);
        assert_int_equal(f->svc.ops->image_status(f->svc.self, id, &st, &err), 0);
        assert_true(st.found);
        assert_string_equal(st.image.id, id);
        kc_runtime_result_done(&st);
        assert_int_equal(f->svc.ops->image_status(f->svc.self, "busybox", &st, &err), 0);
        assert_true(st.found);
        kc_runtime_result_done(&st);

        /* Pull: instant, the id is stable (another sim computes the same one). */
        assert_int_equal(f->svc.ops->pull_image(f->svc.self, "nginx:1.25", NULL, &ref, &err), 0);
        assert_image_id(ref);
        assert_string_not_equal(ref, id);
        assert_int_equal(f->svc.ops->image_status(f->svc.self, "nginx:1.25", &st, &err), 0);
        assert_true(st.found);
        assert_string_equal(st.image.id, ref);
        kc_runtime_result_done(&st);
        assert_int_equal(kc_sim_new(f->clock, &other), 0);
        osvc = kc_sim_service(other);
        assert_int_equal(osvc.ops->pull_image(osvc.self, "nginx:1.25", NULL, &ref2, &err), 0);
        assert_string_equal(ref2, ref);
        free(ref2);
        ref2 = NULL;
        assert_int_equal(osvc.ops->pull_image(osvc.self, "busybox", NULL, &ref2, &err), 0);
        assert_string_equal(ref2, id); /* "busybox" pulls "busybox:latest" */
        free(ref2);
        ref2 = NULL;
        kc_sim_free(other);

        /* A digest reference has no tag. */
        assert_int_equal(f->svc.ops->pull_image(f->svc.self,
                                                "quay.io/team/app@sha256:"
                                                "0123456789abcdef0123456789abcdef"
                                                "0123456789abcdef0123456789abcdef",
                                                NULL, &ref2, &err),
                         0);
        assert_int_equal(f->svc.ops->image_status(f->svc.self, ref2, &st, &err), 0);
        assert_true(st.found);
        assert_int_equal(st.image.n_repo_tags, 0);
        assert_int_equal(strncmp(st.image.repo_digests[0], "quay.io/team/app@sha256:", 24), 0);
        kc_runtime_result_done(&st);
        free(ref2);
        ref2 = NULL;

        /* Unknown repositories: NOT_FOUND with containerd's message; nothing stored. */
        assert_int_equal(f->svc.ops->pull_image(f->svc.self, "doesnotexist:1", NULL, &ref2, &err),
                         -ENOENT);
        assert_null(ref2);
        assert_int_equal(err.code, KC_RUNTIME_NOT_FOUND);
        assert_string_equal(err.message,
                            "failed to pull and unpack image \"doesnotexist:1\": failed to resolve "
                            "reference \"doesnotexist:1\": doesnotexist:1: not found");
        assert_int_equal(f->svc.ops->pull_image(f->svc.self, "example.com/team/invalid-image", NULL,
                                                &ref2, &err),
                         -ENOENT);
        assert_non_null(strstr(err.message, "example.com/team/invalid-image:latest: not found"));
        assert_int_equal(f->svc.ops->image_status(f->svc.self, "doesnotexist:1", &st, &err), 0);
        assert_false(st.found);
        kc_runtime_result_done(&st);
        /* Only the repository path counts, not the registry. */
        assert_int_equal(
                f->svc.ops->pull_image(f->svc.self, "invalid.example.com/app:1", NULL, &ref2, &err),
                0);
        free(ref2);
        ref2 = NULL;

        /* Malformed references. */
        assert_int_equal(f->svc.ops->pull_image(f->svc.self, "Busy Box", NULL, &ref2, &err),
                         -EINVAL);
        assert_int_equal(err.code, KC_RUNTIME_INVALID_ARGUMENT);
        assert_int_equal(f->svc.ops->image_status(f->svc.self, "", &st, &err), -EINVAL);
        assert_int_equal(kc_sim_add_image(f->sim, "library/BusyBox"), -EINVAL);
        assert_int_equal(kc_sim_add_image(f->sim, NULL), -EINVAL);
        assert_int_equal(kc_sim_add_image(NULL, "busybox"), -EINVAL);
        /* kc_sim_add_image is not subject to the "doesnotexist" rule. */
        assert_int_equal(kc_sim_add_image(f->sim, "doesnotexist:2"), 0);
        assert_int_equal(f->svc.ops->image_status(f->svc.self, "doesnotexist:2", &st, &err), 0);
        assert_true(st.found);
        kc_runtime_result_done(&st);

        free(ref);
        free(id);
}

static void test_image_faults_and_counts(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_image_status_result st = { 0 };
        struct kc_runtime_error err = { 0 };
        uint64_t status0, pull0;
        char *ref = NULL;

        /* kc_sim_add_image in setup counted nothing. */
        assert_int_equal(sim_op_count(f->sim, "ImageStatus"), 0);
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 0);

        assert_int_equal(kc_sim_inject_fault(f->sim, "PullImage", "nginx:1", "registry down", 1),
                         0);
        assert_int_equal(kc_sim_inject_fault(f->sim, "ImageStatus", NULL, "disk error", 2), 0);
        /* A fault keyed to another image does not fire. */
        assert_int_equal(f->svc.ops->pull_image(f->svc.self, "redis:7", NULL, &ref, &err), 0);
        free(ref);
        ref = NULL;
        assert_int_equal(f->svc.ops->pull_image(f->svc.self, "nginx:1", NULL, &ref, &err), -EIO);
        assert_null(ref);
        assert_int_equal(err.code, KC_RUNTIME_UNKNOWN);
        assert_string_equal(err.message, "registry down");
        assert_int_equal(f->svc.ops->pull_image(f->svc.self, "nginx:1", NULL, &ref, &err), 0);
        free(ref);
        ref = NULL;
        for (int i = 0; i < 2; i++) {
                assert_int_equal(f->svc.ops->image_status(f->svc.self, "nginx:1", &st, &err), -EIO);
                assert_string_equal(err.message, "disk error");
        }
        assert_int_equal(f->svc.ops->image_status(f->svc.self, "nginx:1", &st, &err), 0);
        assert_true(st.found);
        kc_runtime_result_done(&st);

        /* Failed calls count too. */
        status0 = sim_op_count(f->sim, "ImageStatus");
        pull0 = sim_op_count(f->sim, "PullImage");
        assert_int_equal(status0, 3);
        assert_int_equal(pull0, 3);
}

static void test_create_needs_image(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        struct kc_container_status_result cr = { 0 };
        struct kc_image_status_result st = { 0 };
        struct kc_container_config cfg = { .metadata = { .name = "app" }, .image = "nginx:1" };
        char *sb, *id = NULL, *ref = NULL;

        sb = run_sandbox(f, "u1", "pod", false);
        assert_int_equal(f->svc.ops->create_container(f->svc.self, sb, &cfg, NULL, &id, &err),
                         -ENOENT);
        assert_int_equal(err.code, KC_RUNTIME_NOT_FOUND);
        assert_string_equal(err.message, "failed to get image \"nginx:1\": not found");
        assert_null(id);
        cfg.image = NULL;
        assert_int_equal(f->svc.ops->create_container(f->svc.self, sb, &cfg, NULL, &id, &err),
                         -EINVAL);
        assert_int_equal(err.code, KC_RUNTIME_INVALID_ARGUMENT);

        /* As kubelet: ImageSpec.image is the ref, user_specified_image the spec's name. */
        assert_int_equal(f->svc.ops->pull_image(f->svc.self, "nginx:1", NULL, &ref, &err), 0);
        cfg.image = ref;
        cfg.user_specified_image = "nginx:1";
        assert_int_equal(f->svc.ops->create_container(f->svc.self, sb, &cfg, NULL, &id, &err), 0);
        assert_int_equal(f->svc.ops->container_status(f->svc.self, id, &cr, &err), 0);
        assert_string_equal(cr.status.image, "nginx:1");
        assert_string_equal(cr.status.image_ref, ref);
        kc_runtime_result_done(&cr);
        free(id);
        id = NULL;

        /* By name without user_specified_image: image as given, image_ref the id. */
        cfg = (struct kc_container_config){ .metadata = { .name = "side" }, .image = "busybox" };
        assert_int_equal(f->svc.ops->create_container(f->svc.self, sb, &cfg, NULL, &id, &err), 0);
        assert_int_equal(f->svc.ops->container_status(f->svc.self, id, &cr, &err), 0);
        assert_string_equal(cr.status.image, "busybox");
        assert_int_equal(f->svc.ops->image_status(f->svc.self, "busybox", &st, &err), 0);
        assert_string_equal(cr.status.image_ref, st.image.id);
        kc_runtime_result_done(&st);
        kc_runtime_result_done(&cr);

        free(id);
        free(ref);
        free(sb);
}

/* A call that runs on its own thread, so a latency spike can hold it. */
struct version_call {
        struct sim_faces_fixture *f;
        int r;
        char message[512];
};

static void *version_main(void *arg)
{
        struct version_call *vc = arg;
        struct kc_runtime_error err = { 0 };
        struct kc_version_result v = { 0 };

        vc->r = vc->f->svc.ops->version(vc->f->svc.self, &v, &err);
        snprintf(vc->message, sizeof(vc->message), "%s", err.message);
        if (vc->r == 0)
                kc_runtime_result_done(&v);
        return NULL;
}

static struct kc_sim_stats sim_stats(struct sim_faces_fixture *f)
{
        struct kc_sim_stats st;

        assert_int_equal(kc_sim_get_stats(f->sim, &st), 0);
        return st;
}

/* kc_sim_inject_latency: the call sleeps on the sim's clock, the sim stays usable meanwhile. */
static void test_latency(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct version_call vc = { .f = f, .r = 1 };
        struct kc_runtime_error err = { 0 };
        struct kc_runtime_status_result rs = { 0 };
        pthread_t t;

        assert_int_equal(kc_sim_inject_latency(f->sim, "Version", NULL, 0, 1), -EINVAL);
        assert_int_equal(kc_sim_inject_latency(f->sim, "Version", NULL, KC_NSEC_PER_SEC, 0),
                         -EINVAL);
        assert_int_equal(kc_sim_inject_latency(f->sim, "NoSuchCall", NULL, KC_NSEC_PER_SEC, 1),
                         -EINVAL);
        assert_int_equal(kc_sim_inject_latency(f->sim, NULL, NULL, KC_NSEC_PER_SEC, 1), -EINVAL);

        assert_int_equal(kc_sim_inject_latency(f->sim, "Version", NULL, 5 * KC_NSEC_PER_SEC, 1), 0);
        assert_int_equal(sim_stats(f).delays_pending, 1);
        assert_int_equal(pthread_create(&t, NULL, version_main, &vc), 0);
        /* Counted as delayed before it sleeps: wait for both. */
        assert_true(KC_TEST_WAIT_UNTIL(
                sim_stats(f).delayed_now == 1 && kc_fake_clock_sleepers(f->clock) == 1, 5000));
        assert_int_equal(sim_stats(f).delays_pending, 0);
        /* The lock is not held while the call sleeps: other calls go on. */
        assert_int_equal(f->svc.ops->status(f->svc.self, &rs, &err), 0);
        kc_runtime_result_done(&rs);
        /* 1 ns short of the delay: still asleep. */
        assert_int_equal(kc_fake_clock_advance(f->clock, 5 * KC_NSEC_PER_SEC - 1), 0);
        kc_test_sleep_ms(20);
        assert_int_equal(sim_stats(f).delayed_now, 1);
        assert_int_equal(vc.r, 1);
        assert_int_equal(kc_fake_clock_advance(f->clock, 1), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(vc.r, 0);
        assert_int_equal(sim_stats(f).delayed_now, 0);
        assert_int_equal(sim_stats(f).delays_taken, 1);

        /* Used up: the next call runs at once. A spike and a fault on one call: sleep, then fail. */
        vc.r = 1;
        version_main(&vc);
        assert_int_equal(vc.r, 0);
        assert_int_equal(kc_sim_inject_latency(f->sim, "Version", NULL, KC_NSEC_PER_SEC, 1), 0);
        assert_int_equal(kc_sim_inject_fault(f->sim, "Version", NULL, "slow and broken", 1), 0);
        assert_int_equal(pthread_create(&t, NULL, version_main, &vc), 0);
        assert_true(KC_TEST_WAIT_UNTIL(
                sim_stats(f).delayed_now == 1 && kc_fake_clock_sleepers(f->clock) == 1, 5000));
        assert_int_equal(kc_fake_clock_advance(f->clock, KC_NSEC_PER_SEC), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(vc.r, -EIO);
        assert_string_equal(vc.message, "slow and broken");
        assert_int_equal(sim_stats(f).faults_taken, 1);
}

/* kc_sim_clear_faults drops pending faults and spikes alike. */
static void test_clear_faults(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct version_call vc = { .f = f, .r = 1 };
        struct kc_sim_stats st;

        assert_int_equal(kc_sim_inject_fault(f->sim, "Version", NULL, "x", 3), 0);
        assert_int_equal(kc_sim_inject_latency(f->sim, "Version", NULL, KC_NSEC_PER_SEC, 3), 0);
        st = sim_stats(f);
        assert_int_equal(st.faults_pending, 1);
        assert_int_equal(st.delays_pending, 1);
        kc_sim_clear_faults(f->sim);
        st = sim_stats(f);
        assert_int_equal(st.faults_pending, 0);
        assert_int_equal(st.delays_pending, 0);
        version_main(&vc); /* neither sleeps nor fails */
        assert_int_equal(vc.r, 0);
        st = sim_stats(f);
        assert_int_equal(st.faults_taken, 0);
        assert_int_equal(st.delays_taken, 0);
        assert_true(st.calls >= 1);
}

/* kc_sim_crash_container: running containers exit with the given code, nothing else changes. */
static void test_crash_container(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        struct kc_container_status_result cr = { 0 };
        const char *const forever[] = { "nginx" };
        const char *const sleep5[] = { "sleep", "5" };
        struct kc_cri_container c;
        char *sb, *app, *side, *job, *idle;

        sb = run_sandbox(f, "u1", "pod", false);
        app = create_ctr(f, sb, "u1", "app", forever, 1);
        side = create_ctr(f, sb, "u1", "side", forever, 1);
        job = create_ctr(f, sb, "u1", "job", sleep5, 2);
        idle = create_ctr(f, sb, "u1", "idle", forever, 1); /* created, never started */
        assert_int_equal(f->svc.ops->start_container(f->svc.self, app, &err), 0);
        assert_int_equal(f->svc.ops->start_container(f->svc.self, side, &err), 0);
        assert_int_equal(f->svc.ops->start_container(f->svc.self, job, &err), 0);

        assert_int_equal(kc_sim_crash_container(NULL, "u1", NULL, 1), -EINVAL);
        assert_int_equal(kc_sim_crash_container(f->sim, NULL, NULL, 1), -EINVAL);
        assert_int_equal(kc_sim_crash_container(f->sim, "nope", NULL, 1), -ENOENT);
        assert_int_equal(kc_sim_crash_container(f->sim, "u1", "missing", 1), 0);

        assert_int_equal(kc_sim_crash_container(f->sim, "u1", "app", 137), 1);
        c = ctr_status(f, app, &cr);
        assert_int_equal(c.state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(c.exit_code, 137);
        assert_string_equal(c.reason, "Error");
        assert_int_equal(c.finished_at, kc_clock_now(f->clock));
        kc_runtime_result_done(&cr);
        c = ctr_status(f, side, &cr);
        assert_int_equal(c.state, KC_CONTAINER_STATE_RUNNING);
        kc_runtime_result_done(&cr);
        /* Already exited: nothing to crash. */
        assert_int_equal(kc_sim_crash_container(f->sim, "u1", "app", 2), 0);

        /* The job's exit is due by the clock: it happens first, with its own code. */
        assert_int_equal(kc_fake_clock_advance(f->clock, 6 * KC_NSEC_PER_SEC), 0);
        assert_int_equal(kc_sim_crash_container(f->sim, "u1", NULL, 9), 1); /* side only */
        c = ctr_status(f, job, &cr);
        assert_int_equal(c.state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(c.exit_code, 0);
        kc_runtime_result_done(&cr);
        c = ctr_status(f, side, &cr);
        assert_int_equal(c.exit_code, 9);
        kc_runtime_result_done(&cr);
        c = ctr_status(f, idle, &cr);
        assert_int_equal(c.state, KC_CONTAINER_STATE_CREATED);
        kc_runtime_result_done(&cr);
        assert_int_equal(sim_stats(f).crashes, 2);
        free(sb);
        free(app);
        free(side);
        free(job);
        free(idle);
}

/*
 * Objects created at one fake instant get strictly increasing creation
 * times, so "newest first" never depends on a tie. Regression: with equal
 * times a container's older instance sorted first, the kubelet reused the
 * newer one's attempt number and CreateContainer failed "attempt N is
 * reserved" forever (found by tests/chaos).
 */
static void test_creation_times_increase(void **state)
{
        struct sim_faces_fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        struct kc_pod_status *st = NULL;
        const char *const forever[] = { "nginx" };
        char *sb, *a0, *a1;
        int64_t now = kc_clock_now(f->clock);
        struct kc_container_status_result cr = { 0 };
        int64_t t0, t1;

        sb = run_sandbox(f, "u1", "pod", false);
        a0 = create_ctr(f, sb, "u1", "app", forever, 1);
        a1 = create_ctr(f, sb, "u1", "app2", forever, 1);
        t0 = ctr_status(f, a0, &cr).created_at;
        t1 = ctr_status(f, a1, &cr).created_at;
        kc_runtime_result_done(&cr);
        assert_true(t0 > now); /* after the sandbox, created at now */
        assert_true(t1 > t0);
        assert_true(t1 - now < KC_NSEC_PER_MSEC); /* nanoseconds apart, not a clock step */
        /* The kubecontainer face lists the newer one first. */
        assert_int_equal(f->pr.ops->get_pod_status(f->pr.self, "u1", NULL, NULL, &st, &err), 0);
        assert_int_equal(st->n_containers, 2);
        assert_string_equal(st->containers[0].id, a1);
        kc_pod_status_unref(st);
        free(sb);
        free(a0);
        free(a1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_set_pods_get_pods, sim_faces_setup,
                                                sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_unchanged_pods_are_shared, sim_faces_setup,
                                                sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_get_pod_status, sim_faces_setup,
                                                sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_faults, sim_faces_setup, sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_call_counts, sim_faces_setup,
                                                sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_cri_version_status, sim_faces_setup,
                                                sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_cri_lifecycle, sim_faces_setup,
                                                sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_uid_selector_reads_stray_labels,
                                                sim_faces_setup, sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_busybox_commands, sim_faces_setup,
                                                sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_set_pods_through_cri, sim_faces_setup,
                                                sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_threads, sim_faces_setup, sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_image_store, sim_faces_setup,
                                                sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_image_faults_and_counts, sim_faces_setup,
                                                sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_create_needs_image, sim_faces_setup,
                                                sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_latency, sim_faces_setup, sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_clear_faults, sim_faces_setup,
                                                sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_crash_container, sim_faces_setup,
                                                sim_faces_teardown),
                cmocka_unit_test_setup_teardown(test_creation_times_increase, sim_faces_setup,
                                                sim_faces_teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
