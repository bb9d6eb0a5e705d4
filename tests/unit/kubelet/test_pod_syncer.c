/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubelet's pod syncer (kubelet.go SyncPod and friends) over the
 * simulated runtime on a fake clock: F-SYNC-01 (the network-not-ready
 * rule), F-SYNC-02 (SyncPod drives the runtime manager), F-SYNC-03 (KillPod
 * on termination), the status it stores, the reason cache it feeds and the
 * back-off requeue (docs/deviations.md D10), and the pod directories and
 * volumes set up before the runtime (issue 14, D42).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/arena.h"
#include "core/backoff.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "health/runtime_state.h"
#include "kc_test.h"
#include "kubelet/pod_syncer.h"
#include "kubelet/runtime_helper.h"
#include "kubelet/runtime_up.h"
#include "kubelet/status/reason_cache.h"
#include "kubelet/status/status_manager.h"
#include "metrics/kubelet_metrics.h"
#include "metrics/registry.h"
#include "podworkers/pod_workers.h"
#include "runtime/api_pod.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/manager.h"
#include "runtime/sim.h"
#include "runtime/sync_pod.h"
#include "volume_manager.h"

#define T0 (INT64_C(1700000000) * KC_NSEC_PER_SEC)
#define SEC KC_NSEC_PER_SEC

struct env {
        struct kc_clock *clock;
        struct kc_sim *sim;
        struct kc_runtime_manager *manager;
        struct kc_runtime_state *state;
        struct kc_status_manager *sm;
        struct kc_reason_cache *rc;
        struct kc_backoff *backoff;
        struct kc_metrics_registry *registry;
        struct kc_kubelet_metrics metrics;
        struct kc_pod_syncer *syncer;
};

static int setup(void **state)
{
        struct env *e = calloc(1, sizeof(*e));
        struct kc_pod_syncer_config cfg;

        assert_non_null(e);
        assert_int_equal(kc_fake_clock_new(&e->clock, T0), 0);
        assert_int_equal(kc_sim_new(e->clock, &e->sim), 0);
        assert_int_equal(kc_sim_add_image(e->sim, "busybox:1.36"), 0);
        assert_int_equal(kc_runtime_manager_new(kc_sim_service(e->sim), e->clock, &e->manager), 0);
        assert_int_equal(kc_runtime_state_new(e->clock, 30 * SEC, &e->state), 0);
        assert_int_equal(kc_status_manager_new(&e->sm), 0);
        assert_int_equal(kc_reason_cache_new(&e->rc), 0);
        assert_int_equal(kc_backoff_new(e->clock, 10 * SEC, 300 * SEC, &e->backoff), 0);
        assert_int_equal(kc_metrics_registry_new(&e->registry), 0);
        assert_int_equal(kc_kubelet_metrics_register(e->registry, &e->metrics), 0);
        cfg = (struct kc_pod_syncer_config){
                .clock = e->clock,
                .manager = e->manager,
                .runtime_state = e->state,
                .status_manager = e->sm,
                .reasons = e->rc,
                .backoff = e->backoff,
                .metrics = &e->metrics,
                .node_ip = "10.0.0.7",
                .runtime_name = "sim",
        };
        assert_int_equal(kc_pod_syncer_new(&cfg, &e->syncer), 0);
        /* updateRuntimeUp once: the sim's network is ready. */
        assert_int_equal(kc_update_runtime_up(e->state, kc_sim_service(e->sim), e->clock), 0);
        *state = e;
        return 0;
}

static int teardown(void **state)
{
        struct env *e = *state;

        kc_pod_syncer_free(e->syncer);
        kc_metrics_registry_free(e->registry);
        kc_backoff_free(e->backoff);
        kc_reason_cache_free(e->rc);
        kc_status_manager_free(e->sm);
        kc_runtime_state_free(e->state);
        kc_runtime_manager_free(e->manager);
        kc_sim_free(e->sim);
        kc_clock_free(e->clock);
        free(e);
        return 0;
}

static struct kc_api_pod *make_pod(const char *uid, const char *const *cmd, size_t n_cmd,
                                   enum kc_restart_policy policy, bool host_network)
{
        const struct kc_api_container c = {
                .name = "app",
                .image = "busybox:1.36",
                .command = cmd,
                .n_command = n_cmd,
                .image_pull_policy = KC_PULL_IF_NOT_PRESENT,
        };
        const struct kc_api_pod tmpl = {
                .uid = uid,
                .name = uid,
                .namespace = "default",
                .source = "file",
                .creation_ts = T0,
                .deletion_grace_s = -1,
                .termination_grace_s = 5,
                .restart_policy = policy,
                .host_network = host_network,
                .containers = &c,
                .n_containers = 1,
        };
        struct kc_api_pod *p = NULL;

        assert_int_equal(kc_api_pod_new(&tmpl, &p), 0);
        return p;
}

static struct kc_pod_status *runtime_status(struct env *e, const struct kc_api_pod *pod)
{
        struct kc_pod_status *s = NULL;
        struct kc_runtime_error err = { 0 };

        assert_int_equal(kc_runtime_manager_get_pod_status(e->manager, pod->uid, pod->name,
                                                           pod->namespace, &s, &err),
                         0);
        return s;
}

/* One SyncPod with the pod's current runtime status, as a pod worker makes it. */
static int do_sync(struct env *e, struct kc_api_pod *pod, enum kc_sync_pod_type type,
                   bool *terminal, int64_t *requeue, char **err)
{
        struct kc_pod_status *s = runtime_status(e, pod);
        int r;

        *terminal = false;
        *requeue = -1;
        *err = NULL;
        r = kc_pod_syncer_kubelet_ops.sync_pod(e->syncer, NULL, type, pod, NULL, s, terminal,
                                               requeue, err);
        kc_pod_status_unref(s);
        return r;
}

static const char *stored(struct env *e, const char *uid, const char *path0, const char *path1)
{
        static char buf[256];
        json_t *st = NULL, *v;

        assert_int_equal(kc_status_manager_get_pod_status(e->sm, uid, &st), 0);
        v = json_object_get(st, path0);
        if (path1) {
                /* containerStatuses[0].state.<key>: the one key's name. */
                v = json_object_get(json_array_get(v, 0), path1);
                snprintf(buf, sizeof(buf), "%s", json_object_iter_key(json_object_iter(v)));
        } else {
                snprintf(buf, sizeof(buf), "%s", json_string_value(v));
        }
        json_decref(st);
        return buf;
}

/* F-SYNC-02: create starts the container; the next sync reports Running. */
static void test_create_then_running(void **state)
{
        struct env *e = *state;
        static const char *const cmd[] = { "run-forever" };
        struct kc_api_pod *pod = make_pod("web", cmd, 1, KC_RESTART_POLICY_ALWAYS, false);
        struct kc_pod_status *s;
        bool terminal;
        int64_t requeue;
        char *err;
        uint64_t n = 0;

        assert_int_equal(do_sync(e, pod, KC_SYNC_POD_CREATE, &terminal, &requeue, &err), 0);
        assert_null(err);
        assert_false(terminal);
        /* The status is generated before the runtime acts (as upstream). */
        assert_string_equal(stored(e, "web", "phase", NULL), "Pending");
        s = runtime_status(e, pod);
        assert_int_equal(s->n_sandboxes, 1);
        assert_int_equal(s->n_containers, 1);
        assert_int_equal(s->containers[0].state, KC_CONTAINER_STATE_RUNNING);
        kc_pod_status_unref(s);

        kc_fake_clock_advance(e->clock, SEC);
        assert_int_equal(do_sync(e, pod, KC_SYNC_POD_SYNC, &terminal, &requeue, &err), 0);
        assert_string_equal(stored(e, "web", "phase", NULL), "Running");
        assert_string_equal(stored(e, "web", "hostIP", NULL), "10.0.0.7");
        assert_string_equal(stored(e, "web", "containerStatuses", "state"), "running");

        /* Metrics: the pod workers time whole syncs (upstream's PodWorkerDuration from
         * the update's StartTime), not SyncPod: nothing here. */
        assert_int_equal(kc_histogram_vec_count(e->metrics.pod_worker_duration, "create", &n),
                         -ENOENT);
        (void)n;
        assert_int_equal(kc_histogram_count(e->metrics.pod_worker_start_duration), 1);
        /* PodStartDuration: once, when Pending became Running, 1 s after creation_ts
         * (issue 17). */
        assert_int_equal(kc_histogram_count(e->metrics.pod_start_duration), 1);
        assert_true(kc_histogram_sum(e->metrics.pod_start_duration) >= 1.0);
        assert_int_equal(do_sync(e, pod, KC_SYNC_POD_SYNC, &terminal, &requeue, &err), 0);
        assert_int_equal(kc_histogram_count(e->metrics.pod_start_duration), 1);
        /* The runtime manager's SyncPod counted one sandbox and one container started. */
        {
                const char *const container[] = { "container" };
                double v = 0;

                assert_int_equal(kc_counter_value(e->metrics.started_pods_total), 1);
                assert_int_equal(kc_counter_value(e->metrics.started_pods_errors_total), 0);
                assert_int_equal(
                        kc_counter_vec_value(e->metrics.started_containers_total, container, &v),
                        0);
                assert_true(v == 1);
        }
        assert_int_equal(kc_histogram_count(e->metrics.containers_per_pod), 1);
        kc_api_pod_unref(pod);
}

/* F-SYNC-01: without a ready network only host-network pods run. */
static void test_network_not_ready(void **state)
{
        struct env *e = *state;
        static const char *const cmd[] = { "run-forever" };
        struct kc_api_pod *pod = make_pod("needs-net", cmd, 1, KC_RESTART_POLICY_ALWAYS, false);
        struct kc_api_pod *host = make_pod("host-net", cmd, 1, KC_RESTART_POLICY_ALWAYS, true);
        struct kc_pod_status *s;
        bool terminal;
        int64_t requeue;
        char *err;

        assert_int_equal(kc_sim_set_network_ready(e->sim, false, "NetworkPluginNotReady",
                                                  "cni config uninitialized"),
                         0);
        assert_int_equal(kc_update_runtime_up(e->state, kc_sim_service(e->sim), e->clock), 0);

        assert_int_equal(do_sync(e, pod, KC_SYNC_POD_CREATE, &terminal, &requeue, &err), -ENETDOWN);
        assert_string_equal(err, "network is not ready: container runtime network not ready: "
                                 "NetworkReady=false reason:NetworkPluginNotReady message:cni "
                                 "config uninitialized");
        free(err);
        s = runtime_status(e, pod);
        assert_int_equal(s->n_sandboxes, 0); /* nothing was created */
        kc_pod_status_unref(s);

        assert_int_equal(do_sync(e, host, KC_SYNC_POD_CREATE, &terminal, &requeue, &err), 0);
        s = runtime_status(e, host);
        assert_int_equal(s->n_containers, 1);
        kc_pod_status_unref(s);

        /* Once the network is ready the other pod starts too. */
        assert_int_equal(kc_sim_set_network_ready(e->sim, true, NULL, NULL), 0);
        assert_int_equal(kc_update_runtime_up(e->state, kc_sim_service(e->sim), e->clock), 0);
        assert_int_equal(do_sync(e, pod, KC_SYNC_POD_SYNC, &terminal, &requeue, &err), 0);
        s = runtime_status(e, pod);
        assert_int_equal(s->n_containers, 1);
        kc_pod_status_unref(s);
        kc_api_pod_unref(pod);
        kc_api_pod_unref(host);
}

/* A crash restarts at once; the next one waits for the back-off, and the
 * sync asks to be requeued exactly when it ends (D10). */
static void test_crash_loop_requeue(void **state)
{
        struct env *e = *state;
        static const char *const cmd[] = { "exit", "1" };
        struct kc_api_pod *pod = make_pod("crasher", cmd, 2, KC_RESTART_POLICY_ALWAYS, false);
        struct kc_pod_status *s;
        char *reason = NULL, *msg = NULL;
        bool terminal;
        int64_t requeue;
        char *err;

        assert_int_equal(do_sync(e, pod, KC_SYNC_POD_CREATE, &terminal, &requeue, &err), 0);
        kc_fake_clock_advance(e->clock, SEC);
        /* First crash: restarted immediately (upstream #133472). */
        assert_int_equal(do_sync(e, pod, KC_SYNC_POD_SYNC, &terminal, &requeue, &err), 0);
        s = runtime_status(e, pod);
        assert_int_equal(s->n_containers, 2);
        kc_pod_status_unref(s);
        kc_fake_clock_advance(e->clock, 3 * SEC);
        /* Second crash: 10 s back-off from its exit, 3 s of it gone. */
        assert_int_equal(do_sync(e, pod, KC_SYNC_POD_SYNC, &terminal, &requeue, &err), -EAGAIN);
        assert_non_null(strstr(err, "CrashLoopBackOff"));
        free(err);
        assert_int_equal(requeue, 7 * SEC);
        assert_int_equal(kc_reason_cache_get(e->rc, "crasher", "app", &reason, &msg), 0);
        assert_string_equal(reason, "CrashLoopBackOff");
        free(reason);
        free(msg);
        /* The refusal shows in the stored status at once. */
        assert_string_equal(stored(e, "crasher", "containerStatuses", "state"), "waiting");
        assert_string_equal(stored(e, "crasher", "containerStatuses", "lastState"), "terminated");

        kc_fake_clock_advance(e->clock, 7 * SEC);
        assert_int_equal(do_sync(e, pod, KC_SYNC_POD_SYNC, &terminal, &requeue, &err), 0);
        assert_int_equal(requeue, -1);
        /* A successful start clears the reason. */
        assert_int_equal(kc_reason_cache_get(e->rc, "crasher", "app", &reason, &msg), -ENOENT);
        kc_api_pod_unref(pod);
}

/* A job that exits 0 under OnFailure is terminal; SyncTerminatingPod then
 * finds nothing running and stores the final status (F-SYNC-03). */
static void test_job_terminal_and_terminating(void **state)
{
        struct env *e = *state;
        static const char *const cmd[] = { "sleep", "2" };
        struct kc_api_pod *pod = make_pod("job", cmd, 2, KC_RESTART_POLICY_ON_FAILURE, false);
        struct kc_pod_status *s;
        bool terminal;
        int64_t requeue;
        char *err = NULL;

        assert_int_equal(do_sync(e, pod, KC_SYNC_POD_CREATE, &terminal, &requeue, &err), 0);
        kc_fake_clock_advance(e->clock, 3 * SEC);
        assert_int_equal(do_sync(e, pod, KC_SYNC_POD_SYNC, &terminal, &requeue, &err), 0);
        assert_true(terminal);
        assert_string_equal(stored(e, "job", "phase", NULL), "Succeeded");

        s = runtime_status(e, pod);
        assert_int_equal(
                kc_pod_syncer_kubelet_ops.sync_terminating_pod(e->syncer, NULL, pod, s, -1, &err),
                0);
        assert_int_equal(
                kc_pod_syncer_kubelet_ops.sync_terminated_pod(e->syncer, NULL, pod, s, &err), 0);
        kc_pod_status_unref(s);
        assert_string_equal(stored(e, "job", "phase", NULL), "Succeeded");
        kc_api_pod_unref(pod);
}

/* Terminating a running pod stops its container and sandbox. */
static void test_terminating_kills(void **state)
{
        struct env *e = *state;
        static const char *const cmd[] = { "run-forever" };
        struct kc_api_pod *pod = make_pod("victim", cmd, 1, KC_RESTART_POLICY_ALWAYS, false);
        struct kc_pod_status *s;
        bool terminal;
        int64_t requeue;
        char *err = NULL;

        assert_int_equal(do_sync(e, pod, KC_SYNC_POD_CREATE, &terminal, &requeue, &err), 0);
        s = runtime_status(e, pod);
        assert_int_equal(s->containers[0].state, KC_CONTAINER_STATE_RUNNING);
        assert_int_equal(
                kc_pod_syncer_kubelet_ops.sync_terminating_pod(e->syncer, NULL, pod, s, 0, &err),
                0);
        kc_pod_status_unref(s);
        s = runtime_status(e, pod);
        assert_int_equal(s->containers[0].state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(s->sandboxes[0].state, KC_SANDBOX_STATE_NOTREADY);
        kc_pod_status_unref(s);
        /* The final status is terminal. */
        assert_string_equal(stored(e, "victim", "phase", NULL), "Failed");
        kc_api_pod_unref(pod);
}

/* The container named @p name in the pod's runtime status, removed from the runtime. */
static void remove_container(struct env *e, const struct kc_api_pod *pod, const char *name)
{
        struct kc_runtime_service svc = kc_sim_service(e->sim);
        struct kc_pod_status *s = runtime_status(e, pod);
        struct kc_runtime_error err = { 0 };
        size_t i, n = 0;

        for (i = 0; i < s->n_containers; i++) {
                if (strcmp(s->containers[i].name, name) != 0)
                        continue;
                if (s->containers[i].state == KC_CONTAINER_STATE_RUNNING)
                        assert_int_equal(
                                svc.ops->stop_container(svc.self, s->containers[i].id, 0, &err), 0);
                assert_int_equal(svc.ops->remove_container(svc.self, s->containers[i].id, &err), 0);
                n++;
        }
        assert_int_not_equal(n, 0);
        kc_pod_status_unref(s);
}

/*
 * A Never pod whose finished container was removed from the runtime keeps
 * that container's terminated status: the status manager accepts the next
 * statuses and the pod finishes. Before, the removed container went back to
 * waiting, the status manager refused every later status (terminated may
 * not become waiting under Never) and the pod stayed Running for good.
 */
static void test_never_pod_finishes_after_removal(void **state)
{
        struct env *e = *state;
        static const char *const quick[] = { "sleep", "1" }, *const slow[] = { "sleep", "3" };
        const struct kc_api_container cs[] = {
                { .name = "a", .image = "busybox:1.36", .command = quick, .n_command = 2 },
                { .name = "b", .image = "busybox:1.36", .command = slow, .n_command = 2 },
        };
        const struct kc_api_pod tmpl = { .uid = "never2",
                                         .name = "never2",
                                         .namespace = "default",
                                         .source = "file",
                                         .creation_ts = T0,
                                         .deletion_grace_s = -1,
                                         .termination_grace_s = 5,
                                         .restart_policy = KC_RESTART_POLICY_NEVER,
                                         .containers = cs,
                                         .n_containers = 2 };
        struct kc_api_pod *pod = NULL;
        struct kc_pod_status *s;
        bool terminal;
        int64_t requeue;
        char *err = NULL;

        assert_int_equal(kc_api_pod_new(&tmpl, &pod), 0);
        assert_int_equal(do_sync(e, pod, KC_SYNC_POD_CREATE, &terminal, &requeue, &err), 0);
        kc_fake_clock_advance(e->clock, 2 * SEC);
        assert_int_equal(do_sync(e, pod, KC_SYNC_POD_SYNC, &terminal, &requeue, &err), 0);
        assert_false(terminal);
        assert_string_equal(stored(e, "never2", "phase", NULL), "Running");
        assert_string_equal(stored(e, "never2", "containerStatuses", "state"), "terminated");

        remove_container(e, pod, "a");
        kc_fake_clock_advance(e->clock, 2 * SEC);
        assert_int_equal(do_sync(e, pod, KC_SYNC_POD_SYNC, &terminal, &requeue, &err), 0);
        assert_true(terminal);
        assert_string_equal(stored(e, "never2", "phase", NULL), "Succeeded");
        assert_string_equal(stored(e, "never2", "containerStatuses", "state"), "terminated");
        /* Nothing ran a second time. */
        s = runtime_status(e, pod);
        assert_int_equal(s->n_containers, 1);
        assert_string_equal(s->containers[0].name, "b");
        kc_pod_status_unref(s);
        kc_api_pod_unref(pod);
}

/*
 * A Never pod's running container vanishes before its exit was seen: the
 * pod fails (ContainerStatusUnknown, 137) instead of going back to Pending
 * and running the container a second time.
 */
static void test_never_pod_vanished_container_fails(void **state)
{
        struct env *e = *state;
        static const char *const cmd[] = { "run-forever" };
        struct kc_api_pod *pod = make_pod("runonce", cmd, 1, KC_RESTART_POLICY_NEVER, false);
        struct kc_pod_status *s;
        json_t *st = NULL, *last;
        bool terminal;
        int64_t requeue;
        char *err = NULL;

        assert_int_equal(do_sync(e, pod, KC_SYNC_POD_CREATE, &terminal, &requeue, &err), 0);
        kc_fake_clock_advance(e->clock, SEC);
        assert_int_equal(do_sync(e, pod, KC_SYNC_POD_SYNC, &terminal, &requeue, &err), 0);
        assert_string_equal(stored(e, "runonce", "containerStatuses", "state"), "running");

        remove_container(e, pod, "app");
        kc_fake_clock_advance(e->clock, SEC);
        assert_int_equal(do_sync(e, pod, KC_SYNC_POD_SYNC, &terminal, &requeue, &err), 0);
        assert_true(terminal);
        assert_string_equal(stored(e, "runonce", "phase", NULL), "Failed");
        assert_int_equal(kc_status_manager_get_pod_status(e->sm, "runonce", &st), 0);
        last = json_object_get(json_array_get(json_object_get(st, "containerStatuses"), 0),
                               "lastState");
        last = json_object_get(last, "terminated");
        assert_string_equal(json_string_value(json_object_get(last, "reason")),
                            "ContainerStatusUnknown");
        assert_int_equal(json_integer_value(json_object_get(last, "exitCode")), 137);
        json_decref(st);
        s = runtime_status(e, pod);
        assert_int_equal(s->n_containers, 0);
        kc_pod_status_unref(s);
        kc_api_pod_unref(pod);
}

/* The status' podIPs[0].ip ("" when absent). */
static const char *stored_pod_ips0(struct env *e, const char *uid)
{
        static char buf[64];
        json_t *st = NULL;
        const char *ip;

        assert_int_equal(kc_status_manager_get_pod_status(e->sm, uid, &st), 0);
        ip = json_string_value(
                json_object_get(json_array_get(json_object_get(st, "podIPs"), 0), "ip"));
        snprintf(buf, sizeof(buf), "%s", ip ? ip : "");
        json_decref(st);
        return buf;
}

/*
 * Issue 17: the terminal status keeps the pod IPs. KillPod stops the
 * sandbox and the runtime then reports no IP; SyncTerminatingPod's final
 * status and SyncTerminatedPod's still show the IP the pod had
 * (upstream's preserveDataFromBeforeStopping).
 */
static void test_terminal_status_keeps_ips(void **state)
{
        struct env *e = *state;
        static const char *const cmd[] = { "run-forever" };
        struct kc_api_pod *pod = make_pod("keepip", cmd, 1, KC_RESTART_POLICY_ALWAYS, false);
        struct kc_pod_status *s;
        char ip[64], *err = NULL;
        bool terminal;
        int64_t requeue;

        assert_int_equal(do_sync(e, pod, KC_SYNC_POD_CREATE, &terminal, &requeue, &err), 0);
        assert_int_equal(do_sync(e, pod, KC_SYNC_POD_SYNC, &terminal, &requeue, &err), 0);
        assert_string_equal(stored(e, "keepip", "phase", NULL), "Running");
        snprintf(ip, sizeof(ip), "%s", stored(e, "keepip", "podIP", NULL));
        assert_true(ip[0] != '\0');
        assert_string_equal(stored_pod_ips0(e, "keepip"), ip);

        s = runtime_status(e, pod);
        assert_int_equal(
                kc_pod_syncer_kubelet_ops.sync_terminating_pod(e->syncer, NULL, pod, s, 0, &err),
                0);
        kc_pod_status_unref(s);
        s = runtime_status(e, pod);
        assert_int_equal(s->n_ips, 0); /* the runtime forgot it */
        assert_string_equal(stored(e, "keepip", "phase", NULL), "Failed");
        assert_string_equal(stored(e, "keepip", "podIP", NULL), ip);
        assert_string_equal(stored_pod_ips0(e, "keepip"), ip);
        assert_int_equal(
                kc_pod_syncer_kubelet_ops.sync_terminated_pod(e->syncer, NULL, pod, s, &err), 0);
        kc_pod_status_unref(s);
        assert_string_equal(stored(e, "keepip", "podIP", NULL), ip);
        assert_string_equal(stored_pod_ips0(e, "keepip"), ip);
        kc_api_pod_unref(pod);
}

/*
 * Issue 14 (D42): makePodDataDirs and WaitForAttachAndMount come before the
 * runtime. A pod mounting a configMap volume never reaches the runtime: the
 * sync fails with upstream's message and its container stays Waiting
 * (ContainerCreating); its emptyDir is set up all the same.
 */
static void test_volumes_before_runtime(void **state)
{
        struct env *e = *state;
        struct kc_api_volume vols[] = {
                { .name = "cfg", .kind = KC_VOLUME_OTHER, .kind_name = "configMap" },
                { .name = "data", .kind = KC_VOLUME_EMPTY_DIR, .kind_name = "emptyDir" },
        };
        struct kc_api_volume_mount mounts[] = {
                { .name = "cfg", .mount_path = "/etc/cfg" },
                { .name = "data", .mount_path = "/data" },
        };
        struct kc_api_container c = { .name = "app",
                                      .image = "busybox:1.36",
                                      .image_pull_policy = KC_PULL_IF_NOT_PRESENT,
                                      .volume_mounts = mounts,
                                      .n_volume_mounts = 2 };
        struct kc_api_pod tmpl = { .uid = "vol",
                                   .name = "vol",
                                   .namespace = "default",
                                   .deletion_grace_s = -1,
                                   .termination_grace_s = 5,
                                   .containers = &c,
                                   .n_containers = 1,
                                   .volumes = vols,
                                   .n_volumes = 2 };
        struct kc_pod_syncer_config cfg = { .clock = e->clock,
                                            .manager = e->manager,
                                            .runtime_state = e->state,
                                            .status_manager = e->sm,
                                            .reasons = e->rc,
                                            .node_ip = "10.0.0.7",
                                            .runtime_name = "sim" };
        struct kc_volume_manager_config vc = { .node_memory_bytes = 1 << 20 };
        static const char *const node_ips[] = { "10.0.0.7" };
        struct kc_kubelet_runtime_helper_config hc = { .node_ips = node_ips,
                                                       .n_node_ips = 1,
                                                       .allocatable_memory = 1 << 30,
                                                       .resolv_conf = "" };
        struct kc_kubelet_runtime_helper *helper = NULL;
        struct kc_runtime_helper rh;
        struct kc_pod_syncer *syncer = NULL;
        struct kc_pod_status *s = NULL;
        struct kc_api_pod *pod = NULL;
        char root[] = "/tmp/kc-syncer-XXXXXX", path[256], cmd[300];
        bool terminal = false;
        int64_t requeue = -1;
        char *err = NULL;
        struct stat st;

        assert_non_null(mkdtemp(root));
        assert_int_equal(kc_sim_record_configs(e->sim, true), 0); /* read below */
        vc.root_dir = root;
        assert_int_equal(kc__volume_manager_new(&vc, &cfg.volume_manager), 0);
        assert_int_equal(kc_pod_syncer_new(&cfg, &syncer), 0);
        /* GenerateRunContainerOptions with the same root dir: makeMounts. */
        hc.root_dir = root;
        assert_int_equal(kc_kubelet_runtime_helper_new(&hc, &helper), 0);
        rh = kc_kubelet_runtime_helper_get(helper);
        assert_int_equal(kc_runtime_manager_set_runtime_helper(e->manager, &rh), 0);
        assert_int_equal(kc_api_pod_new(&tmpl, &pod), 0);
        s = runtime_status(e, pod);
        assert_int_equal(kc_pod_syncer_kubelet_ops.sync_pod(syncer, NULL, KC_SYNC_POD_CREATE, pod,
                                                            NULL, s, &terminal, &requeue, &err),
                         -EAGAIN);
        kc_pod_status_unref(s);
        assert_string_equal(err, "unmounted volumes=[cfg], unattached volumes=[], failed to "
                                 "process volumes=[]: MountVolume.SetUp failed for volume "
                                 "\"cfg\" : configMap volumes need the API server or a volume "
                                 "plugin, which cubelet does not have");
        free(err);
        err = NULL;
        s = runtime_status(e, pod);
        assert_int_equal(s->n_sandboxes, 0); /* the runtime was never asked */
        kc_pod_status_unref(s);
        assert_string_equal(stored(e, "vol", "phase", NULL), "Pending");
        assert_string_equal(stored(e, "vol", "containerStatuses", "state"), "waiting");
        snprintf(path, sizeof(path), "%s/pods/vol/volumes/kubernetes.io~empty-dir/data", root);
        assert_int_equal(stat(path, &st), 0);

        /* Without the configMap volume the pod runs. */
        kc_api_pod_unref(pod);
        c.volume_mounts = &mounts[1];
        c.n_volume_mounts = 1;
        assert_int_equal(kc_api_pod_new(&tmpl, &pod), 0);
        s = runtime_status(e, pod);
        assert_int_equal(kc_pod_syncer_kubelet_ops.sync_pod(syncer, NULL, KC_SYNC_POD_CREATE, pod,
                                                            NULL, s, &terminal, &requeue, &err),
                         0);
        kc_pod_status_unref(s);
        assert_null(err);
        s = runtime_status(e, pod);
        assert_int_equal(s->n_containers, 1);
        /* What CreateContainer was sent: the emptyDir and the managed /etc/hosts. */
        {
                struct kc_sim_container_config sent = { 0 };
                char hosts[256];

                assert_int_equal(kc_sim_container_config(e->sim, s->containers[0].id, &sent), 0);
                assert_int_equal(sent.config.n_mounts, 2);
                assert_string_equal(sent.config.mounts[0].container_path, "/data");
                assert_string_equal(sent.config.mounts[0].host_path, path);
                assert_string_equal(sent.config.mounts[1].container_path, "/etc/hosts");
                snprintf(hosts, sizeof(hosts), "%s/pods/vol/etc-hosts", root);
                assert_string_equal(sent.config.mounts[1].host_path, hosts);
                assert_int_equal(stat(hosts, &st), 0);
                kc_arena_free(sent.arena);
        }
        kc_pod_status_unref(s);

        kc_api_pod_unref(pod);
        kc_runtime_manager_set_runtime_helper(e->manager, &(struct kc_runtime_helper){ 0 });
        kc_kubelet_runtime_helper_free(helper);
        kc_pod_syncer_free(syncer);
        kc__volume_manager_free(cfg.volume_manager);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_create_then_running, setup, teardown),
                cmocka_unit_test_setup_teardown(test_volumes_before_runtime, setup, teardown),
                cmocka_unit_test_setup_teardown(test_network_not_ready, setup, teardown),
                cmocka_unit_test_setup_teardown(test_crash_loop_requeue, setup, teardown),
                cmocka_unit_test_setup_teardown(test_job_terminal_and_terminating, setup, teardown),
                cmocka_unit_test_setup_teardown(test_terminating_kills, setup, teardown),
                cmocka_unit_test_setup_teardown(test_never_pod_finishes_after_removal, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_never_pod_vanished_container_fails, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_terminal_status_keeps_ips, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
