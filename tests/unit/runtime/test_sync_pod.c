/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SyncPod and KillPod (runtime/sync_pod.c) over the simulated runtime's
 * service face, through a thin recording wrapper that notes the
 * StopContainer timeouts (the sim ignores them).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "internal.h"
#include "kc_runtime.h"

#define T0 (INT64_C(1700000000) * KC_NSEC_PER_SEC)
#define SEC KC_NSEC_PER_SEC

struct fixture {
        struct kc_clock *clock;
        struct kc_sim *sim;
        struct kc_runtime_service sim_svc; /* the real one */
        struct kc_runtime_service_ops rec_ops;
        struct kc_runtime_service svc; /* recording wrapper */
        struct kc_runtime_manager *mgr;
        struct kc_backoff *backoff;
        int64_t stop_timeouts[16];
        size_t n_stops;
};

static int rec_stop_container(void *self, const char *id, int64_t timeout_s,
                              struct kc_runtime_error *err)
{
        struct fixture *f = self;

        if (f->n_stops < 16)
                f->stop_timeouts[f->n_stops] = timeout_s;
        f->n_stops++;
        return f->sim_svc.ops->stop_container(f->sim_svc.self, id, timeout_s, err);
}

static int rec_run_pod_sandbox(void *self, const struct kc_pod_sandbox_config *c, char **id,
                               struct kc_runtime_error *e)
{
        struct fixture *f = self;
        return f->sim_svc.ops->run_pod_sandbox(f->sim_svc.self, c, id, e);
}
static int rec_stop_pod_sandbox(void *self, const char *id, struct kc_runtime_error *e)
{
        struct fixture *f = self;
        return f->sim_svc.ops->stop_pod_sandbox(f->sim_svc.self, id, e);
}
static int rec_pod_sandbox_status(void *self, const char *id,
                                  struct kc_pod_sandbox_status_result *r,
                                  struct kc_runtime_error *e)
{
        struct fixture *f = self;
        return f->sim_svc.ops->pod_sandbox_status(f->sim_svc.self, id, r, e);
}
static int rec_list_pod_sandbox(void *self, const struct kc_pod_sandbox_filter *fl,
                                struct kc_pod_sandbox_list *r, struct kc_runtime_error *e)
{
        struct fixture *f = self;
        return f->sim_svc.ops->list_pod_sandbox(f->sim_svc.self, fl, r, e);
}
static int rec_create_container(void *self, const char *sb, const struct kc_container_config *c,
                                const struct kc_pod_sandbox_config *sc, char **id,
                                struct kc_runtime_error *e)
{
        struct fixture *f = self;
        return f->sim_svc.ops->create_container(f->sim_svc.self, sb, c, sc, id, e);
}
static int rec_start_container(void *self, const char *id, struct kc_runtime_error *e)
{
        struct fixture *f = self;
        return f->sim_svc.ops->start_container(f->sim_svc.self, id, e);
}
static int rec_list_containers(void *self, const struct kc_container_filter *fl,
                               struct kc_container_list *r, struct kc_runtime_error *e)
{
        struct fixture *f = self;
        return f->sim_svc.ops->list_containers(f->sim_svc.self, fl, r, e);
}
static int rec_container_status(void *self, const char *id, struct kc_container_status_result *r,
                                struct kc_runtime_error *e)
{
        struct fixture *f = self;
        return f->sim_svc.ops->container_status(f->sim_svc.self, id, r, e);
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        assert_int_equal(kc_fake_clock_new(&f->clock, T0), 0);
        assert_int_equal(kc_sim_new(f->clock, &f->sim), 0);
        f->sim_svc = kc_sim_service(f->sim);
        f->rec_ops = (struct kc_runtime_service_ops){
                .run_pod_sandbox = rec_run_pod_sandbox,
                .stop_pod_sandbox = rec_stop_pod_sandbox,
                .pod_sandbox_status = rec_pod_sandbox_status,
                .list_pod_sandbox = rec_list_pod_sandbox,
                .create_container = rec_create_container,
                .start_container = rec_start_container,
                .stop_container = rec_stop_container,
                .list_containers = rec_list_containers,
                .container_status = rec_container_status,
        };
        f->svc = (struct kc_runtime_service){ .ops = &f->rec_ops, .self = f };
        assert_int_equal(kc_runtime_manager_new(f->svc, f->clock, &f->mgr), 0);
        assert_int_equal(kc_backoff_new(f->clock, 10 * SEC, 300 * SEC, &f->backoff), 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        kc_backoff_free(f->backoff);
        kc_runtime_manager_free(f->mgr);
        kc_sim_free(f->sim);
        kc_clock_free(f->clock);
        free(f);
        return 0;
}

static const char *const forever_cmd[] = { "sleep", "3600" };
static const char *const exit1_cmd[] = { "exit", "1" };
static const struct kc_label pod_annotations[] = { { "example.com/note", "hello" } };

static struct kc_api_pod make_pod(const char *uid, const char *name,
                                  const struct kc_api_container *cs, size_t n,
                                  enum kc_restart_policy rp)
{
        return (struct kc_api_pod){
                .uid = uid,
                .name = name,
                .namespace = "default",
                .deletion_grace_s = -1,
                .termination_grace_s = -1,
                .restart_policy = rp,
                .containers = cs,
                .n_containers = n,
                .annotations = pod_annotations,
                .n_annotations = 1,
        };
}

/* GetPodStatus, then SyncPod. */
static int sync_once(struct fixture *f, const struct kc_api_pod *pod, char **err)
{
        struct kc_pod_status *st = NULL;
        int r;

        assert_int_equal(kc_runtime_manager_get_pod_status(f->mgr, pod->uid, pod->name,
                                                           pod->namespace, &st, NULL),
                         0);
        r = kc_runtime_manager_sync_pod(f->mgr, pod, st, f->backoff, NULL, err);
        kc_pod_status_unref(st);
        return r;
}

static void list_pod_containers(struct fixture *f, const char *uid, struct kc_container_list *cl)
{
        struct kc_label sel = { KC_LABEL_POD_UID, uid };

        assert_int_equal(f->sim_svc.ops->list_containers(
                                 f->sim_svc.self,
                                 &(struct kc_container_filter){ .state = -1,
                                                                .label_selector = &sel,
                                                                .n_label_selector = 1 },
                                 cl, NULL),
                         0);
}

static void list_pod_sandboxes(struct fixture *f, const char *uid, struct kc_pod_sandbox_list *l)
{
        struct kc_label sel = { KC_LABEL_POD_UID, uid };

        assert_int_equal(f->sim_svc.ops->list_pod_sandbox(
                                 f->sim_svc.self,
                                 &(struct kc_pod_sandbox_filter){ .state = -1,
                                                                  .label_selector = &sel,
                                                                  .n_label_selector = 1 },
                                 l, NULL),
                         0);
}

/* The container of @name with @attempt, or NULL. */
static const struct kc_cri_container *find_c(const struct kc_container_list *cl, const char *name,
                                             uint32_t attempt)
{
        size_t i;

        for (i = 0; i < cl->n; i++)
                if (strcmp(cl->items[i].metadata.name, name) == 0 &&
                    cl->items[i].metadata.attempt == attempt)
                        return &cl->items[i];
        return NULL;
}

static void test_new_pod(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "web", .image = "nginx:1", .command = forever_cmd, .n_command = 2 },
                { .name = "side", .image = "busybox:1" },
        };
        struct kc_api_pod pod = make_pod("uid-1", "web-pod", cs, 2, KC_RESTART_POLICY_ALWAYS);
        struct kc_pod_sandbox_list sbl = { 0 };
        struct kc_container_list cl = { 0 };
        struct kc_container_status_result csr = { 0 };
        char *err = NULL, hash[17];
        size_t i;

        assert_int_equal(kc_runtime_manager_sync_pod(f->mgr, &pod, NULL, f->backoff, NULL, &err),
                         0);
        assert_null(err);

        list_pod_sandboxes(f, "uid-1", &sbl);
        assert_int_equal(sbl.n, 1);
        assert_int_equal(sbl.items[0].state, KC_SANDBOX_STATE_READY);
        assert_string_equal(sbl.items[0].metadata.name, "web-pod");
        assert_string_equal(sbl.items[0].metadata.namespace, "default");
        assert_string_equal(sbl.items[0].metadata.uid, "uid-1");
        assert_int_equal(sbl.items[0].metadata.attempt, 0);
        assert_string_equal(
                kc__label_get(sbl.items[0].labels, sbl.items[0].n_labels, KC_LABEL_POD_NAME),
                "web-pod");
        assert_string_equal(
                kc__label_get(sbl.items[0].labels, sbl.items[0].n_labels, KC_LABEL_POD_NAMESPACE),
                "default");
        assert_string_equal(
                kc__label_get(sbl.items[0].labels, sbl.items[0].n_labels, KC_LABEL_POD_UID),
                "uid-1");
        assert_string_equal(kc__label_get(sbl.items[0].annotations, sbl.items[0].n_annotations,
                                          "example.com/note"),
                            "hello");
        kc_runtime_result_done(&sbl);

        list_pod_containers(f, "uid-1", &cl);
        assert_int_equal(cl.n, 2);
        for (i = 0; i < 2; i++) {
                const struct kc_cri_container *c = find_c(&cl, cs[i].name, 0);

                assert_non_null(c);
                assert_int_equal(
                        f->sim_svc.ops->container_status(f->sim_svc.self, c->id, &csr, NULL), 0);
                assert_int_equal(csr.status.state, KC_CONTAINER_STATE_RUNNING);
                assert_string_equal(csr.status.image, cs[i].image);
                assert_string_equal(kc__label_get(csr.status.labels, csr.status.n_labels,
                                                  KC_LABEL_CONTAINER_NAME),
                                    cs[i].name);
                assert_string_equal(
                        kc__label_get(csr.status.labels, csr.status.n_labels, KC_LABEL_POD_NAME),
                        "web-pod");
                assert_string_equal(kc__label_get(csr.status.labels, csr.status.n_labels,
                                                  KC_LABEL_POD_NAMESPACE),
                                    "default");
                assert_string_equal(
                        kc__label_get(csr.status.labels, csr.status.n_labels, KC_LABEL_POD_UID),
                        "uid-1");
                snprintf(hash, sizeof(hash), "%" PRIx64, kc_container_spec_hash(&cs[i]));
                assert_string_equal(kc__label_get(csr.status.annotations, csr.status.n_annotations,
                                                  KC_ANNOTATION_CONTAINER_HASH),
                                    hash);
                assert_string_equal(kc__label_get(csr.status.annotations, csr.status.n_annotations,
                                                  KC_ANNOTATION_CONTAINER_RESTART_COUNT),
                                    "0");
                kc_runtime_result_done(&csr);
        }
        kc_runtime_result_done(&cl);

        /* Second sync with a fresh status: nothing to do. */
        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_null(err);
        list_pod_containers(f, "uid-1", &cl);
        assert_int_equal(cl.n, 2);
        kc_runtime_result_done(&cl);
        list_pod_sandboxes(f, "uid-1", &sbl);
        assert_int_equal(sbl.n, 1);
        kc_runtime_result_done(&sbl);
        assert_int_equal(f->n_stops, 0);
}

static void test_crash_loop(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "crasher", .image = "busybox:1", .command = exit1_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-2", "crash", cs, 1, KC_RESTART_POLICY_ALWAYS);
        struct kc_container_list cl = { 0 };
        char *err = NULL;

        assert_int_equal(sync_once(f, &pod, &err), 0);
        list_pod_containers(f, "uid-2", &cl);
        assert_int_equal(cl.n, 1);
        assert_non_null(find_c(&cl, "crasher", 0));
        assert_int_equal(cl.items[0].state, KC_CONTAINER_STATE_EXITED);
        kc_runtime_result_done(&cl);

        /* The first crash restarts at once (no backoff entry yet): attempt 1. */
        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_null(err);
        list_pod_containers(f, "uid-2", &cl);
        assert_int_equal(cl.n, 2);
        assert_non_null(find_c(&cl, "crasher", 1));
        assert_string_equal(kc__label_get(find_c(&cl, "crasher", 1)->annotations,
                                          find_c(&cl, "crasher", 1)->n_annotations,
                                          KC_ANNOTATION_CONTAINER_RESTART_COUNT),
                            "1");
        kc_runtime_result_done(&cl);

        /* Within 10 s: CrashLoopBackOff, upstream's message shape. */
        kc_fake_clock_advance(f->clock, 5 * SEC);
        assert_int_equal(sync_once(f, &pod, &err), -EAGAIN);
        assert_non_null(err);
        assert_string_equal(err, "CrashLoopBackOff: back-off 10s restarting failed "
                                 "container=crasher pod=crash_default(uid-2)");
        free(err);
        err = NULL;
        list_pod_containers(f, "uid-2", &cl);
        assert_int_equal(cl.n, 2);
        kc_runtime_result_done(&cl);

        /* 10 s more: restarted, attempt 2. */
        kc_fake_clock_advance(f->clock, 10 * SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_null(err);
        list_pod_containers(f, "uid-2", &cl);
        assert_int_equal(cl.n, 3);
        assert_non_null(find_c(&cl, "crasher", 2));
        kc_runtime_result_done(&cl);

        /* And now the backoff is 20 s. */
        kc_fake_clock_advance(f->clock, 11 * SEC);
        assert_int_equal(sync_once(f, &pod, &err), -EAGAIN);
        assert_non_null(strstr(err, "back-off 20s"));
        free(err);
}

/* A back-off of one container does not stop the others. */
static void test_backoff_continues(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "a", .image = "busybox:1", .command = exit1_cmd, .n_command = 2 },
                { .name = "b", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-6", "mixed", cs, 2, KC_RESTART_POLICY_ALWAYS);
        struct kc_container_list cl = { 0 };
        struct kc_pod_status *st = NULL;
        const struct kc_cri_container *b;
        char *err = NULL;

        assert_int_equal(sync_once(f, &pod, &err), 0);
        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0); /* a restarted: attempt 1 */
        kc_fake_clock_advance(f->clock, SEC);
        /* Kill b behind the kubelet's back. */
        list_pod_containers(f, "uid-6", &cl);
        b = find_c(&cl, "b", 0);
        assert_non_null(b);
        assert_int_equal(f->sim_svc.ops->stop_container(f->sim_svc.self, b->id, 2, NULL), 0);
        kc_runtime_result_done(&cl);
        kc_fake_clock_advance(f->clock, SEC);

        assert_int_equal(kc_runtime_manager_get_pod_status(f->mgr, pod.uid, pod.name, pod.namespace,
                                                           &st, NULL),
                         0);
        assert_int_equal(kc_runtime_manager_sync_pod(f->mgr, &pod, st, f->backoff, NULL, &err),
                         -EAGAIN);
        kc_pod_status_unref(st);
        assert_non_null(strstr(err, "container=a "));
        free(err);
        list_pod_containers(f, "uid-6", &cl);
        assert_non_null(find_c(&cl, "b", 1)); /* b restarted despite a's back-off */
        assert_null(find_c(&cl, "a", 2));
        kc_runtime_result_done(&cl);
}

static void test_never_not_restarted(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "once", .image = "busybox:1", .command = exit1_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-3", "once", cs, 1, KC_RESTART_POLICY_NEVER);
        struct kc_container_list cl = { 0 };
        char *err = NULL;

        assert_int_equal(sync_once(f, &pod, &err), 0);
        kc_fake_clock_advance(f->clock, 30 * SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_null(err);
        kc_fake_clock_advance(f->clock, 30 * SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        list_pod_containers(f, "uid-3", &cl);
        assert_int_equal(cl.n, 1);
        assert_int_equal(cl.items[0].state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(cl.items[0].metadata.attempt, 0);
        kc_runtime_result_done(&cl);
}

static void test_spec_change(void **state)
{
        struct fixture *f = *state;
        struct kc_api_container cs[] = {
                { .name = "app", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-4", "app", cs, 1, KC_RESTART_POLICY_ALWAYS);
        struct kc_container_list cl = { 0 };
        const struct kc_cri_container *c0, *c1;
        char *err = NULL;

        assert_int_equal(sync_once(f, &pod, &err), 0);
        kc_fake_clock_advance(f->clock, SEC);
        cs[0].image = "busybox:2";
        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_null(err);
        assert_int_equal(f->n_stops, 1);
        assert_int_equal(f->stop_timeouts[0], 30); /* the v1 default grace */
        list_pod_containers(f, "uid-4", &cl);
        assert_int_equal(cl.n, 2);
        c0 = find_c(&cl, "app", 0);
        c1 = find_c(&cl, "app", 1);
        assert_non_null(c0);
        assert_non_null(c1);
        assert_int_equal(c0->state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(c1->state, KC_CONTAINER_STATE_RUNNING);
        assert_string_equal(c1->image, "busybox:2");
        kc_runtime_result_done(&cl);

        /* Stable afterwards. */
        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        list_pod_containers(f, "uid-4", &cl);
        assert_int_equal(cl.n, 2);
        kc_runtime_result_done(&cl);
}

static void test_kill_pod(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "a", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
                { .name = "b", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-5", "kill", cs, 2, KC_RESTART_POLICY_ALWAYS);
        struct kc_container_list cl = { 0 };
        struct kc_pod_sandbox_list sbl = { 0 };
        char *err = NULL;
        size_t i;

        assert_int_equal(sync_once(f, &pod, &err), 0);
        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(kc_runtime_manager_kill_pod(f->mgr, &pod, NULL, 0, NULL, &err), 0);
        assert_null(err);
        assert_int_equal(f->n_stops, 2);
        assert_int_equal(f->stop_timeouts[0], 2); /* grace 0 raised to 2 */
        assert_int_equal(f->stop_timeouts[1], 2);
        list_pod_containers(f, "uid-5", &cl);
        assert_int_equal(cl.n, 2);
        for (i = 0; i < cl.n; i++)
                assert_int_equal(cl.items[i].state, KC_CONTAINER_STATE_EXITED);
        kc_runtime_result_done(&cl);
        list_pod_sandboxes(f, "uid-5", &sbl);
        assert_int_equal(sbl.n, 1);
        assert_int_equal(sbl.items[0].state, KC_SANDBOX_STATE_NOTREADY);
        kc_runtime_result_done(&sbl);
}

static void test_kill_running_pod(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "a", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-7", "krp", cs, 1, KC_RESTART_POLICY_ALWAYS);
        struct kc_pod_list pl = { 0 };
        struct kc_pod_sandbox_list sbl = { 0 };
        char *err = NULL;
        size_t i;

        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_int_equal(kc_runtime_manager_get_pods(f->mgr, false, &pl, NULL), 0);
        assert_int_equal(pl.n, 1);
        /* An orphan: no API pod, grace 5 kept as is. */
        assert_int_equal(kc_runtime_manager_kill_pod(f->mgr, NULL, pl.pods[0], 5, NULL, &err), 0);
        kc_pod_list_done(&pl);
        assert_int_equal(f->n_stops, 1);
        assert_int_equal(f->stop_timeouts[0], 5);
        list_pod_sandboxes(f, "uid-7", &sbl);
        for (i = 0; i < sbl.n; i++)
                assert_int_equal(sbl.items[i].state, KC_SANDBOX_STATE_NOTREADY);
        kc_runtime_result_done(&sbl);

        /* Sync of a dead pod (sandbox NOTREADY): a new sandbox, attempt 1. */
        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        list_pod_sandboxes(f, "uid-7", &sbl);
        assert_int_equal(sbl.n, 2);
        for (i = 0; i < sbl.n; i++)
                if (sbl.items[i].metadata.attempt == 1)
                        assert_int_equal(sbl.items[i].state, KC_SANDBOX_STATE_READY);
        kc_runtime_result_done(&sbl);
}

static const char *const true_cmd[] = { "true" };

/* One init container per sync, and the app containers only once init is done. */
static void test_init_containers(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container init[] = {
                { .name = "i1", .image = "busybox:1", .command = true_cmd, .n_command = 1 },
                { .name = "i2", .image = "busybox:1", .command = true_cmd, .n_command = 1 },
        };
        const struct kc_api_container cs[] = {
                { .name = "app", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-9", "init", cs, 1, KC_RESTART_POLICY_ALWAYS);
        struct kc_container_list cl = { 0 };
        char *err = NULL;

        pod.init_containers = init;
        pod.n_init_containers = 2;
        assert_int_equal(sync_once(f, &pod, &err), 0);
        list_pod_containers(f, "uid-9", &cl);
        assert_int_equal(cl.n, 1);
        assert_non_null(find_c(&cl, "i1", 0));
        kc_runtime_result_done(&cl);

        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        list_pod_containers(f, "uid-9", &cl);
        assert_int_equal(cl.n, 2);
        assert_non_null(find_c(&cl, "i2", 0));
        kc_runtime_result_done(&cl);

        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        list_pod_containers(f, "uid-9", &cl);
        assert_int_equal(cl.n, 3);
        assert_non_null(find_c(&cl, "app", 0));
        assert_int_equal(find_c(&cl, "app", 0)->state, KC_CONTAINER_STATE_RUNNING);
        kc_runtime_result_done(&cl);
}

/* A runtime failure is returned with a message; the other containers still start. */
static void test_create_fails(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "a", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
                { .name = "b", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-10", "fail", cs, 2, KC_RESTART_POLICY_ALWAYS);
        struct kc_container_list cl = { 0 };
        char *err = NULL;
        int r;

        assert_int_equal(kc_sim_inject_fault(f->sim, "CreateContainer", NULL, "boom", 1), 0);
        r = sync_once(f, &pod, &err);
        assert_true(r < 0);
        assert_non_null(err);
        assert_non_null(strstr(err, "CreateContainerError"));
        assert_non_null(strstr(err, "boom"));
        assert_non_null(strstr(err, "\"a\""));
        free(err);
        list_pod_containers(f, "uid-10", &cl);
        assert_int_equal(cl.n, 1);
        assert_non_null(find_c(&cl, "b", 0));
        kc_runtime_result_done(&cl);

        /* The next sync starts a. */
        assert_int_equal(sync_once(f, &pod, &err), 0);
        list_pod_containers(f, "uid-10", &cl);
        assert_int_equal(cl.n, 2);
        kc_runtime_result_done(&cl);

        /* A sandbox failure stops the sync. */
        assert_int_equal(kc_sim_inject_fault(f->sim, "RunPodSandbox", NULL, "no sandbox", 1), 0);
        pod.uid = "uid-11";
        r = sync_once(f, &pod, &err);
        assert_true(r < 0);
        assert_non_null(strstr(err, "CreatePodSandboxError"));
        free(err);
        list_pod_containers(f, "uid-11", &cl);
        assert_int_equal(cl.n, 0);
        kc_runtime_result_done(&cl);
}

static uint64_t total_calls(struct fixture *f)
{
        struct kc_sim_call_count *cc = NULL;
        size_t n = 0, i;
        uint64_t t = 0;

        assert_int_equal(kc_sim_call_counts(f->sim, &cc, &n), 0);
        for (i = 0; i < n; i++)
                t += cc[i].count;
        free(cc);
        return t;
}

static void test_cancelled(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "a", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-8", "cancel", cs, 1, KC_RESTART_POLICY_ALWAYS);
        struct kc_cancel *ctx = NULL;
        char *err = NULL;
        uint64_t before;

        assert_int_equal(kc_cancel_new(&ctx), 0);
        kc_cancel_trigger_mp(ctx);
        before = total_calls(f);
        assert_int_equal(kc_runtime_manager_sync_pod(f->mgr, &pod, NULL, f->backoff, ctx, &err),
                         -ECANCELED);
        assert_string_equal(err, "context canceled");
        free(err);
        err = NULL;
        assert_int_equal(kc_runtime_manager_kill_pod(f->mgr, &pod, NULL, 0, ctx, &err), -ECANCELED);
        free(err);
        assert_int_equal(total_calls(f), before);
        kc_cancel_free(ctx);
}

static void test_invalid(void **state)
{
        struct fixture *f = *state;
        char *err = (char *)"x";

        assert_int_equal(kc_runtime_manager_sync_pod(NULL, NULL, NULL, NULL, NULL, &err), -EINVAL);
        assert_null(err);
        assert_int_equal(kc_runtime_manager_kill_pod(f->mgr, NULL, NULL, 0, NULL, NULL), -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_new_pod, setup, teardown),
                cmocka_unit_test_setup_teardown(test_crash_loop, setup, teardown),
                cmocka_unit_test_setup_teardown(test_backoff_continues, setup, teardown),
                cmocka_unit_test_setup_teardown(test_never_not_restarted, setup, teardown),
                cmocka_unit_test_setup_teardown(test_spec_change, setup, teardown),
                cmocka_unit_test_setup_teardown(test_kill_pod, setup, teardown),
                cmocka_unit_test_setup_teardown(test_kill_running_pod, setup, teardown),
                cmocka_unit_test_setup_teardown(test_init_containers, setup, teardown),
                cmocka_unit_test_setup_teardown(test_create_fails, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cancelled, setup, teardown),
                cmocka_unit_test_setup_teardown(test_invalid, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
