/* SPDX-License-Identifier: Apache-2.0 */
/*
 * computePodActions and doBackOff (runtime/pod_actions.c).
 *
 * F-SYNC-02: the table of upstream TestComputePodActions and
 * TestComputePodActionsWithInitContainers (kuberuntime_manager_test.go),
 * for the cases our fields can express (no probes, no IP/netns sandbox
 * checks, no ephemeral/resize cases), and of
 * TestComputePodActionsWithRestartableInitContainers for sidecars (KEP-753).
 * F-BO-01 / F-BO-03: doBackOff key and first-crash / CrashLoopBackOff logic.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/backoff.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "internal.h"
#include "runtime/api_pod.h"
#include "runtime/container.h"
#include "runtime/pod_actions.h"

#define T0 (INT64_C(1700000000) * KC_NSEC_PER_SEC)

/* makeBasePodAndStatus: 3 running containers in a READY sandbox. */
struct tc {
        struct kc_api_container containers[3];
        struct kc_api_container init[3];
        struct kc_api_pod pod;
        struct kc_sandbox_status sb[2];
        struct kc_container_status cs[6];
        struct kc_pod_status st;
};

static void base(struct tc *t)
{
        static const char *const names[] = { "foo1", "foo2", "foo3" };
        static const char *const ids[] = { "id1", "id2", "id3" };
        static const char *const inames[] = { "init1", "init2", "init3" };
        size_t i;

        memset(t, 0, sizeof(*t));
        for (i = 0; i < 3; i++) {
                t->containers[i] =
                        (struct kc_api_container){ .name = names[i], .image = "busybox" };
                t->init[i] = (struct kc_api_container){ .name = inames[i], .image = "bar-image" };
        }
        t->pod = (struct kc_api_pod){
                .uid = "12345678",
                .name = "foo",
                .namespace = "foo-ns",
                .deletion_grace_s = -1,
                .termination_grace_s = -1,
                .restart_policy = KC_RESTART_POLICY_ALWAYS,
                .containers = t->containers,
                .n_containers = 3,
        };
        t->sb[0] = (struct kc_sandbox_status){ .id = "sandboxID",
                                               .name = "foo",
                                               .namespace = "foo-ns",
                                               .uid = "sandboxuid",
                                               .attempt = 0,
                                               .state = KC_SANDBOX_STATE_READY,
                                               .ip = "10.0.0.1" };
        for (i = 0; i < 3; i++)
                t->cs[i] = (struct kc_container_status){
                        .id = ids[i],
                        .name = names[i],
                        .state = KC_CONTAINER_STATE_RUNNING,
                        .hash = kc_container_spec_hash(&t->containers[i]),
                };
        t->st = (struct kc_pod_status){ .id = "12345678",
                                        .name = "foo",
                                        .namespace = "foo-ns",
                                        .sandboxes = t->sb,
                                        .n_sandboxes = 1,
                                        .containers = t->cs,
                                        .n_containers = 3 };
}

/* makeBasePodAndStatusWithInitContainers: the statuses are the 3 init
 * containers, all exited 0; no app container status yet. */
static void base_init(struct tc *t)
{
        static const char *const ids[] = { "initid1", "initid2", "initid3" };
        size_t i;

        base(t);
        t->pod.init_containers = t->init;
        t->pod.n_init_containers = 3;
        for (i = 0; i < 3; i++)
                t->cs[i] = (struct kc_container_status){
                        .id = ids[i],
                        .name = t->init[i].name,
                        .state = KC_CONTAINER_STATE_EXITED,
                        .hash = kc_container_spec_hash(&t->init[i]),
                };
}

#define START(...)                                                                                 \
        ((const size_t[]){ __VA_ARGS__ }), (sizeof((size_t[]){ __VA_ARGS__ }) / sizeof(size_t))
#define NONE NULL, 0
#define KILL(...)                                                                                  \
        ((const char *const[]){ __VA_ARGS__ }),                                                    \
                (sizeof((const char *[]){ __VA_ARGS__ }) / sizeof(const char *))

static void check(const struct tc *t, bool kill_pod, bool create_sandbox, const char *sandbox_id,
                  uint32_t attempt, int next_init, const size_t *start, size_t n_start,
                  const char *const *kill, size_t n_kill)
{
        struct kc_pod_actions a;
        size_t i;

        assert_int_equal(kc_compute_pod_actions(&t->pod, &t->st, &a), 0);
        assert_int_equal(a.kill_pod, kill_pod);
        assert_int_equal(a.create_sandbox, create_sandbox);
        if (sandbox_id)
                assert_string_equal(a.sandbox_id, sandbox_id);
        else
                assert_null(a.sandbox_id);
        assert_int_equal(a.attempt, attempt);
        assert_int_equal(a.next_init_container_to_start, next_init);
        assert_int_equal(a.n_containers_to_start, n_start);
        for (i = 0; i < n_start; i++)
                assert_int_equal(a.containers_to_start[i], start[i]);
        assert_int_equal(a.n_containers_to_kill, n_kill);
        for (i = 0; i < n_kill; i++) {
                assert_string_equal(a.containers_to_kill[i].id, kill[i]);
                assert_non_null(a.containers_to_kill[i].message);
        }
        assert_non_null(a.message);
        kc_pod_actions_done(&a);
}

/* ------------------------------------------------------------------------ */
/* TestComputePodActions                                                      */

static void test_everything_good(void **state)
{
        struct tc t;

        (void)state;
        base(&t);
        check(&t, false, false, "sandboxID", 0, -1, NONE, NONE);
}

static void test_new_pod(void **state)
{
        struct tc t;

        (void)state;
        base(&t);
        t.st.n_sandboxes = 0;
        t.st.n_containers = 0;
        check(&t, true, true, NULL, 0, -1, START(0, 1, 2), NONE);
}

static void test_restart_exited_always(void **state)
{
        struct tc t;

        (void)state;
        base(&t);
        t.cs[0].state = KC_CONTAINER_STATE_EXITED;
        t.cs[0].exit_code = 0;
        t.cs[1].state = KC_CONTAINER_STATE_EXITED;
        t.cs[1].exit_code = 111;
        check(&t, false, false, "sandboxID", 0, -1, START(0, 1), NONE);
}

static void test_restart_failed_on_failure(void **state)
{
        struct tc t;

        (void)state;
        base(&t);
        t.pod.restart_policy = KC_RESTART_POLICY_ON_FAILURE;
        t.cs[0].state = KC_CONTAINER_STATE_EXITED;
        t.cs[0].exit_code = 0;
        t.cs[1].state = KC_CONTAINER_STATE_EXITED;
        t.cs[1].exit_code = 111;
        check(&t, false, false, "sandboxID", 0, -1, START(1), NONE);
}

static void test_restart_created_on_failure(void **state)
{
        struct tc t;

        (void)state;
        base(&t);
        t.pod.restart_policy = KC_RESTART_POLICY_ON_FAILURE;
        t.cs[0].state = KC_CONTAINER_STATE_EXITED;
        t.cs[1].state = KC_CONTAINER_STATE_CREATED;
        check(&t, false, false, "sandboxID", 0, -1, START(1), NONE);
}

static void test_never_no_restart(void **state)
{
        struct tc t;

        (void)state;
        base(&t);
        t.pod.restart_policy = KC_RESTART_POLICY_NEVER;
        t.cs[0].state = KC_CONTAINER_STATE_EXITED;
        t.cs[1].state = KC_CONTAINER_STATE_EXITED;
        t.cs[1].exit_code = 111;
        check(&t, false, false, "sandboxID", 0, -1, NONE, NONE);
}

static void test_sandbox_dead_always(void **state)
{
        struct tc t;

        (void)state;
        base(&t);
        t.sb[0].state = KC_SANDBOX_STATE_NOTREADY;
        check(&t, true, true, "sandboxID", 1, -1, START(0, 1, 2), NONE);
}

static void test_sandbox_dead_on_failure_skips_succeeded(void **state)
{
        struct tc t;

        (void)state;
        base(&t);
        t.pod.restart_policy = KC_RESTART_POLICY_ON_FAILURE;
        t.sb[0].state = KC_SANDBOX_STATE_NOTREADY;
        t.cs[1].state = KC_CONTAINER_STATE_EXITED;
        t.cs[1].exit_code = 0;
        check(&t, true, true, "sandboxID", 1, -1, START(0, 2), NONE);
}

/* Not in upstream's table: two READY sandboxes → re-create (PodSandboxChanged). */
static void test_several_ready_sandboxes(void **state)
{
        struct tc t;

        (void)state;
        base(&t);
        t.sb[0].attempt = 3;
        t.sb[1] = t.sb[0];
        t.sb[1].id = "older";
        t.sb[1].attempt = 2;
        t.st.n_sandboxes = 2;
        check(&t, true, true, "sandboxID", 4, -1, START(0, 1, 2), NONE);
}

static void test_spec_hash_changed(void **state)
{
        struct tc t;

        (void)state;
        base(&t);
        t.cs[1].hash = UINT64_C(432423432);
        check(&t, false, false, "sandboxID", 0, -1, START(1), KILL("id2"));
}

/* Issue 15: the liveness and startup results (upstream livenessManager/startupManager.Set). */
struct fake_probes {
        const char *liveness_failed; /* container ID or NULL */
        const char *startup_failed;
        const char *startup_ok; /* a startup Success (others: no result) */
};

static enum kc_probe_verdict fake_get(void *self, const char *id, bool startup)
{
        const struct fake_probes *fp = self;
        const char *failed = startup ? fp->startup_failed : fp->liveness_failed;

        if (failed && strcmp(failed, id) == 0)
                return KC_PROBE_VERDICT_FAILURE;
        if (startup && fp->startup_ok && strcmp(fp->startup_ok, id) == 0)
                return KC_PROBE_VERDICT_SUCCESS;
        return KC_PROBE_VERDICT_NONE;
}

static void probed(const struct tc *t, struct fake_probes *fp, struct kc_pod_actions *a)
{
        const struct kc_probe_results_view v = { .get = fake_get, .self = fp };

        assert_int_equal(kc_compute_pod_actions_probed(&t->pod, &t->st, &v, a), 0);
}

/* "Kill and recreate the container if the liveness check has failed" (and startup). */
static void test_probe_failure_kill_and_restart(void **state)
{
        struct fake_probes fp = { .liveness_failed = "id2" };
        struct kc_pod_actions a;
        struct tc t;

        (void)state;
        base(&t);
        probed(&t, &fp, &a);
        assert_false(a.kill_pod);
        assert_int_equal(a.n_containers_to_start, 1);
        assert_int_equal(a.containers_to_start[0], 1);
        assert_int_equal(a.n_containers_to_kill, 1);
        assert_string_equal(a.containers_to_kill[0].id, "id2");
        assert_int_equal(a.containers_to_kill[0].reason, KC_KILL_REASON_LIVENESS_PROBE);
        assert_string_equal(a.containers_to_kill[0].message,
                            "Container foo2 failed liveness probe, will be restarted");
        kc_pod_actions_done(&a);

        fp = (struct fake_probes){ .startup_failed = "id3" };
        probed(&t, &fp, &a);
        assert_int_equal(a.n_containers_to_start, 1);
        assert_int_equal(a.containers_to_start[0], 2);
        assert_int_equal(a.containers_to_kill[0].reason, KC_KILL_REASON_STARTUP_PROBE);
        assert_string_equal(a.containers_to_kill[0].message,
                            "Container foo3 failed startup probe, will be restarted");
        kc_pod_actions_done(&a);

        /* A changed spec wins over the probe (definition changed, no probe reason). */
        t.cs[1].hash = UINT64_C(432423432);
        fp = (struct fake_probes){ .liveness_failed = "id2" };
        probed(&t, &fp, &a);
        assert_int_equal(a.containers_to_kill[0].reason, KC_KILL_REASON_NONE);
        assert_string_equal(a.containers_to_kill[0].message,
                            "Container foo2 definition changed, will be restarted");
        kc_pod_actions_done(&a);
        /* No view: no probe kills. */
        t.cs[1].hash = kc_container_spec_hash(&t.containers[1]);
        check(&t, false, false, "sandboxID", 0, -1, NONE, NONE);
}

/* restartPolicy Never: killed, not restarted; a pod left with nothing to keep is killed. */
static void test_probe_failure_never(void **state)
{
        struct fake_probes fp = { .liveness_failed = "id1" };
        struct kc_pod_actions a;
        struct tc t;

        (void)state;
        base(&t);
        t.pod.restart_policy = KC_RESTART_POLICY_NEVER;
        probed(&t, &fp, &a);
        assert_false(a.kill_pod);
        assert_int_equal(a.n_containers_to_start, 0);
        assert_int_equal(a.n_containers_to_kill, 1);
        assert_string_equal(a.containers_to_kill[0].message,
                            "Container foo1 failed liveness probe");
        kc_pod_actions_done(&a);

        t.pod.n_containers = 1;
        probed(&t, &fp, &a);
        assert_true(a.kill_pod);
        kc_pod_actions_done(&a);
}

static void test_never_exited_no_sandbox_kill_only(void **state)
{
        struct tc t;
        size_t i;

        (void)state;
        base(&t);
        t.pod.restart_policy = KC_RESTART_POLICY_NEVER;
        t.sb[0].state = KC_SANDBOX_STATE_NOTREADY;
        t.sb[0].attempt = 1;
        for (i = 0; i < 3; i++)
                t.cs[i].state = KC_CONTAINER_STATE_EXITED;
        check(&t, true, false, "sandboxID", 2, -1, NONE, NONE);
}

static void test_on_failure_all_succeeded_no_sandbox(void **state)
{
        struct tc t;
        size_t i;

        (void)state;
        base(&t);
        t.pod.restart_policy = KC_RESTART_POLICY_ON_FAILURE;
        t.sb[0].state = KC_SANDBOX_STATE_NOTREADY;
        t.sb[0].attempt = 1;
        for (i = 0; i < 3; i++)
                t.cs[i].state = KC_CONTAINER_STATE_EXITED;
        check(&t, true, false, "sandboxID", 2, -1, NONE, NONE);
}

/* Same, but the sandbox is still READY: nothing kept, nothing to start → kill pod. */
static void test_on_failure_all_succeeded_ready_sandbox(void **state)
{
        struct tc t;
        size_t i;

        (void)state;
        base(&t);
        t.pod.restart_policy = KC_RESTART_POLICY_ON_FAILURE;
        for (i = 0; i < 3; i++)
                t.cs[i].state = KC_CONTAINER_STATE_EXITED;
        check(&t, true, false, "sandboxID", 0, -1, NONE, NONE);
}

static void test_never_no_containers_ever_created(void **state)
{
        struct tc t;

        (void)state;
        base(&t);
        t.pod.restart_policy = KC_RESTART_POLICY_NEVER;
        t.sb[0].state = KC_SANDBOX_STATE_NOTREADY;
        t.sb[0].attempt = 2;
        t.st.n_containers = 0;
        check(&t, true, true, "sandboxID", 3, -1, START(0, 1, 2), NONE);
}

/* Deliberate deviation (only reachable with no sandbox at all, since any
 * existing sandbox makes the attempt non-zero): Never, the sandbox is gone
 * (e.g. removed) but foo1 already exited → create a sandbox without
 * re-running foo1. Upstream would start all three. */
static void test_never_no_sandbox_skips_exited(void **state)
{
        struct tc t;

        (void)state;
        base(&t);
        t.pod.restart_policy = KC_RESTART_POLICY_NEVER;
        t.st.n_sandboxes = 0;
        t.cs[0].state = KC_CONTAINER_STATE_EXITED;
        t.cs[0].exit_code = 1;
        check(&t, true, true, NULL, 0, -1, START(1, 2), NONE);
}

/* Never, one sandbox existed (attempt 0) and died → kill only. */
static void test_never_first_sandbox_dead_kill_only(void **state)
{
        struct tc t;

        (void)state;
        base(&t);
        t.pod.restart_policy = KC_RESTART_POLICY_NEVER;
        t.sb[0].state = KC_SANDBOX_STATE_NOTREADY;
        check(&t, true, false, "sandboxID", 1, -1, NONE, NONE);
}

static void test_unknown_state_kill_and_restart(void **state)
{
        struct tc t;

        (void)state;
        base(&t);
        t.pod.restart_policy = KC_RESTART_POLICY_NEVER;
        t.cs[1].state = KC_CONTAINER_STATE_UNKNOWN;
        check(&t, false, false, "sandboxID", 0, -1, START(1), KILL("id2"));
}

static void test_created_state_restart(void **state)
{
        struct tc t;

        (void)state;
        base(&t);
        t.pod.restart_policy = KC_RESTART_POLICY_NEVER;
        t.cs[1].state = KC_CONTAINER_STATE_CREATED;
        check(&t, false, false, "sandboxID", 0, -1, START(1), NONE);
}

/* Statuses are newest first: an older running instance does not count. */
static void test_newest_status_wins(void **state)
{
        struct tc t;

        (void)state;
        base(&t);
        t.cs[3] = t.cs[0]; /* older instance of foo1, still "running" */
        t.cs[3].id = "old1";
        t.cs[0].state = KC_CONTAINER_STATE_EXITED;
        t.cs[0].exit_code = 2;
        t.st.n_containers = 4;
        check(&t, false, false, "sandboxID", 0, -1, START(0), NONE);
}

static void test_deleted_pod_no_restart(void **state)
{
        struct tc t;
        size_t i;

        (void)state;
        base(&t);
        t.pod.deletion_ts = T0;
        for (i = 0; i < 3; i++) {
                t.cs[i].state = KC_CONTAINER_STATE_EXITED;
                t.cs[i].exit_code = 1;
        }
        check(&t, true, false, "sandboxID", 0, -1, NONE, NONE);
}

/* ------------------------------------------------------------------------ */
/* TestComputePodActionsWithInitContainers (non-sidecar path)                 */

static void test_init_completed_start_all(void **state)
{
        struct tc t;

        (void)state;
        base_init(&t);
        check(&t, false, false, "sandboxID", 0, -1, START(0, 1, 2), NONE);
}

static void test_init_none_started(void **state)
{
        struct tc t;

        (void)state;
        base_init(&t);
        t.st.n_containers = 0;
        check(&t, false, false, "sandboxID", 0, 0, NONE, NONE);
}

static void test_init_in_progress(void **state)
{
        struct tc t;

        (void)state;
        base_init(&t);
        t.cs[2].state = KC_CONTAINER_STATE_RUNNING;
        check(&t, false, false, "sandboxID", 0, -1, NONE, NONE);
}

/* Not an upstream row: init1 done, init2 not seen yet → start init2. */
static void test_init_in_order(void **state)
{
        struct tc t;

        (void)state;
        base_init(&t);
        t.st.n_containers = 1; /* only init1, exited 0 */
        check(&t, false, false, "sandboxID", 0, 1, NONE, NONE);
}

static void test_init_sandbox_dead(void **state)
{
        struct tc t;

        (void)state;
        base_init(&t);
        t.sb[0].state = KC_SANDBOX_STATE_NOTREADY;
        check(&t, true, true, "sandboxID", 1, 0, NONE, NONE);
}

static void test_init_failed_always(void **state)
{
        struct tc t;

        (void)state;
        base_init(&t);
        t.cs[2].exit_code = 137;
        check(&t, false, false, "sandboxID", 0, 2, NONE, NONE);
}

static void test_init_failed_on_failure(void **state)
{
        struct tc t;

        (void)state;
        base_init(&t);
        t.pod.restart_policy = KC_RESTART_POLICY_ON_FAILURE;
        t.cs[2].exit_code = 137;
        check(&t, false, false, "sandboxID", 0, 2, NONE, NONE);
}

static void test_init_failed_never(void **state)
{
        struct tc t;

        (void)state;
        base_init(&t);
        t.pod.restart_policy = KC_RESTART_POLICY_NEVER;
        t.cs[2].exit_code = 137;
        check(&t, true, false, "sandboxID", 0, -1, NONE, NONE);
}

static void test_init_unknown_always(void **state)
{
        struct tc t;

        (void)state;
        base_init(&t);
        t.cs[2].state = KC_CONTAINER_STATE_UNKNOWN;
        check(&t, false, false, "sandboxID", 0, 2, NONE, KILL("initid3"));
}

static void test_init_unknown_never(void **state)
{
        struct tc t;

        (void)state;
        base_init(&t);
        t.pod.restart_policy = KC_RESTART_POLICY_NEVER;
        t.cs[2].state = KC_CONTAINER_STATE_UNKNOWN;
        check(&t, true, false, "sandboxID", 0, -1, NONE, NONE);
}

static void test_init_sandbox_dead_never_kill_only(void **state)
{
        struct tc t;

        (void)state;
        base_init(&t);
        t.pod.restart_policy = KC_RESTART_POLICY_NEVER;
        t.sb[0].state = KC_SANDBOX_STATE_NOTREADY;
        check(&t, true, false, "sandboxID", 1, -1, NONE, NONE);
}

static void test_init_sandbox_dead_never_no_statuses(void **state)
{
        struct tc t;

        (void)state;
        base_init(&t);
        t.pod.restart_policy = KC_RESTART_POLICY_NEVER;
        t.sb[0].state = KC_SANDBOX_STATE_NOTREADY;
        t.st.n_containers = 0;
        check(&t, true, true, "sandboxID", 1, 0, NONE, NONE);
}

static void test_init_sandbox_dead_failed_on_failure(void **state)
{
        struct tc t;

        (void)state;
        base_init(&t);
        t.pod.restart_policy = KC_RESTART_POLICY_ON_FAILURE;
        t.sb[0].state = KC_SANDBOX_STATE_NOTREADY;
        t.cs[2].exit_code = 137;
        check(&t, true, true, "sandboxID", 1, 0, NONE, NONE);
}

static void test_init_last_running_missing_preceding(void **state)
{
        struct tc t;

        (void)state;
        base_init(&t);
        t.cs[2].state = KC_CONTAINER_STATE_RUNNING;
        t.st.containers = &t.cs[2];
        t.st.n_containers = 1;
        check(&t, false, false, "sandboxID", 0, -1, NONE, NONE);
}

static void test_init_created_restart(void **state)
{
        struct tc t;

        (void)state;
        base_init(&t);
        t.cs[2].state = KC_CONTAINER_STATE_CREATED;
        check(&t, false, false, "sandboxID", 0, 2, NONE, NONE);
}

static void test_compute_einval(void **state)
{
        struct kc_pod_actions a;
        struct tc t;

        (void)state;
        base(&t);
        assert_int_equal(kc_compute_pod_actions(NULL, &t.st, &a), -EINVAL);
        assert_int_equal(a.next_init_container_to_start, -1);
        assert_null(a.containers_to_start);
        assert_int_equal(kc_compute_pod_actions(&t.pod, NULL, &a), -EINVAL);
        assert_int_equal(kc_compute_pod_actions(&t.pod, &t.st, NULL), -EINVAL);
        kc_pod_actions_done(&a);
        kc_pod_actions_done(NULL);
}

/* ------------------------------------------------------------------------ */
/* Spec hash                                                                  */

static void test_spec_hash(void **state)
{
        const char *cmd_a[] = { "sh", "-c" }, *cmd_b[] = { "sh-c" }, *args[] = { "x" };
        struct kc_api_container a = { .name = "c", .image = "busybox" }, b = a;

        (void)state;
        assert_int_equal(kc_container_spec_hash(&a), kc_container_spec_hash(&b));
        assert_true(kc_container_spec_hash(&a) != 0);
        b.image = "busybox:1";
        assert_true(kc_container_spec_hash(&a) != kc_container_spec_hash(&b));
        b = a;
        b.image_pull_policy = KC_PULL_NEVER;
        assert_true(kc_container_spec_hash(&a) != kc_container_spec_hash(&b));
        /* Field boundaries are length-prefixed: ["sh","-c"] != ["sh-c"], command != args. */
        a.command = cmd_a;
        a.n_command = 2;
        b = a;
        b.command = cmd_b;
        b.n_command = 1;
        assert_true(kc_container_spec_hash(&a) != kc_container_spec_hash(&b));
        b = (struct kc_api_container){ .name = "c", .image = "busybox", .args = args, .n_args = 1 };
        a = (struct kc_api_container){
                .name = "c", .image = "busybox", .command = args, .n_command = 1
        };
        assert_true(kc_container_spec_hash(&a) != kc_container_spec_hash(&b));
        /* Stable across runs: pinned value. */
        a = (struct kc_api_container){ .name = "c", .image = "busybox" };
        assert_int_equal(kc_container_spec_hash(&a), kc_container_spec_hash(&a));
        assert_int_equal(kc_container_spec_hash(NULL), 0);
}

/* ------------------------------------------------------------------------ */
/* doBackOff (F-BO-01, F-BO-03)                                               */

struct bo {
        struct kc_clock *clock;
        struct kc_backoff *b;
        struct tc t;
};

static int bo_setup(void **state)
{
        struct bo *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        assert_int_equal(kc_fake_clock_new(&f->clock, T0), 0);
        assert_int_equal(
                kc_backoff_new(f->clock, 10 * KC_NSEC_PER_SEC, 300 * KC_NSEC_PER_SEC, &f->b), 0);
        base(&f->t);
        *state = f;
        return 0;
}

static int bo_teardown(void **state)
{
        struct bo *f = *state;

        kc_backoff_free(f->b);
        kc_clock_free(f->clock);
        free(f);
        return 0;
}

/* foo2 exited (crashed) at @finished. */
static void crash(struct bo *f, int64_t finished)
{
        f->t.cs[1].state = KC_CONTAINER_STATE_EXITED;
        f->t.cs[1].exit_code = 1;
        f->t.cs[1].finished_at = finished;
}

static void test_backoff_key(void **state)
{
        struct bo *f = *state;
        char want[128];
        _cleanup_free_ char *k1 = NULL, *k2 = NULL;

        snprintf(want, sizeof(want), "foo_foo-ns_12345678_foo2_%" PRIx64,
                 kc_container_spec_hash(&f->t.containers[1]));
        k1 = kc__backoff_key(&f->t.pod, &f->t.containers[1]);
        assert_string_equal(k1, want);
        /* F-BO-01: a spec change yields a fresh key. */
        f->t.containers[1].image = "busybox:2";
        k2 = kc__backoff_key(&f->t.pod, &f->t.containers[1]);
        assert_string_not_equal(k1, k2);
}

static void test_backoff_no_exited_status(void **state)
{
        struct bo *f = *state;
        char *msg = (char *)1;
        int64_t d;
        _cleanup_free_ char *key = kc__backoff_key(&f->t.pod, &f->t.containers[1]);

        assert_int_equal(kc_do_back_off(f->b, &f->t.pod, &f->t.containers[1], &f->t.st, T0, &msg),
                         0);
        assert_null(msg);
        assert_int_equal(kc_backoff_get(f->b, key, &d), -ENOENT);
}

static void test_backoff_sequence(void **state)
{
        struct bo *f = *state;
        const struct kc_api_container *c = &f->t.containers[1];
        _cleanup_free_ char *key = kc__backoff_key(&f->t.pod, c);
        char *msg = NULL;
        int64_t d, now = T0;

        /* First crash: no entry yet → restart immediately (upstream issue #133472). */
        crash(f, now);
        assert_int_equal(kc_do_back_off(f->b, &f->t.pod, c, &f->t.st, now, &msg), 0);
        assert_null(msg);
        assert_int_equal(kc_backoff_get(f->b, key, &d), 0);
        assert_int_equal(d, 10 * KC_NSEC_PER_SEC);

        /* Second crash 1 s later; at +5 s after it, still within 10 s → CrashLoopBackOff. */
        now += KC_NSEC_PER_SEC;
        crash(f, now);
        now += 5 * KC_NSEC_PER_SEC;
        assert_int_equal(kc_fake_clock_set(f->clock, now), 0);
        assert_int_equal(kc_do_back_off(f->b, &f->t.pod, c, &f->t.st, now, &msg), -EAGAIN);
        assert_string_equal(
                msg, "back-off 10s restarting failed container=foo2 pod=foo_foo-ns(12345678)");
        free(msg);
        msg = NULL;
        /* NULL ret_msg is accepted. */
        assert_int_equal(kc_do_back_off(f->b, &f->t.pod, c, &f->t.st, now, NULL), -EAGAIN);

        /* 10 s after that crash: allowed, next delay 20 s. */
        now += 5 * KC_NSEC_PER_SEC;
        assert_int_equal(kc_fake_clock_set(f->clock, now), 0);
        assert_int_equal(kc_do_back_off(f->b, &f->t.pod, c, &f->t.st, now, &msg), 0);
        assert_null(msg);
        assert_int_equal(kc_backoff_get(f->b, key, &d), 0);
        assert_int_equal(d, 20 * KC_NSEC_PER_SEC);

        /* Third crash: within 20 s → "back-off 20s". */
        now += KC_NSEC_PER_SEC;
        crash(f, now);
        now += 19 * KC_NSEC_PER_SEC;
        assert_int_equal(kc_fake_clock_set(f->clock, now), 0);
        assert_int_equal(kc_do_back_off(f->b, &f->t.pod, c, &f->t.st, now, &msg), -EAGAIN);
        assert_string_equal(
                msg, "back-off 20s restarting failed container=foo2 pod=foo_foo-ns(12345678)");
        free(msg);
        msg = NULL;

        /* F-BO-01: after a spec change the key is fresh → not in backoff. */
        f->t.containers[1].image = "busybox:2";
        assert_int_equal(kc_do_back_off(f->b, &f->t.pod, c, &f->t.st, now, &msg), 0);
        assert_null(msg);
}

static void test_backoff_einval(void **state)
{
        struct bo *f = *state;
        char *msg = NULL;

        assert_int_equal(kc_do_back_off(NULL, &f->t.pod, &f->t.containers[0], &f->t.st, T0, &msg),
                         -EINVAL);
        assert_int_equal(kc_do_back_off(f->b, &f->t.pod, NULL, &f->t.st, T0, &msg), -EINVAL);
        assert_null(msg);
        assert_string_equal(KC_CRASH_LOOP_BACK_OFF_REASON, "CrashLoopBackOff");
}

/* ------------------------------------------------------------------------ */
/* Sidecars: TestComputePodActionsWithRestartableInitContainers (KEP-753)    */

/*
 * makeBasePodAndStatusWithRestartableInitContainers: three sidecars, all
 * running; no app container status yet.
 */
static void base_sidecar(struct tc *t)
{
        static const char *const ids[] = { "initid1", "initid2", "initid3" };
        size_t i;

        base(t);
        t->pod.init_containers = t->init;
        t->pod.n_init_containers = 3;
        for (i = 0; i < 3; i++) {
                t->init[i].restart_policy_always = true;
                t->cs[i] = (struct kc_container_status){
                        .id = ids[i],
                        .name = t->init[i].name,
                        .state = KC_CONTAINER_STATE_RUNNING,
                        .hash = kc_container_spec_hash(&t->init[i]),
                };
        }
}

/* check() plus the sidecar path's init containers to start (next init stays -1). */
static void check_sc(const struct tc *t, bool kill_pod, bool create_sandbox, const size_t *init,
                     size_t n_init, const size_t *start, size_t n_start, const char *const *kill,
                     size_t n_kill)
{
        struct kc_pod_actions a;
        size_t i;

        assert_int_equal(kc_compute_pod_actions(&t->pod, &t->st, &a), 0);
        assert_int_equal(a.kill_pod, kill_pod);
        assert_int_equal(a.create_sandbox, create_sandbox);
        assert_int_equal(a.next_init_container_to_start, -1);
        assert_int_equal(a.n_init_containers_to_start, n_init);
        for (i = 0; i < n_init; i++)
                assert_int_equal(a.init_containers_to_start[i], init[i]);
        assert_int_equal(a.n_containers_to_start, n_start);
        for (i = 0; i < n_start; i++)
                assert_int_equal(a.containers_to_start[i], start[i]);
        assert_int_equal(a.n_containers_to_kill, n_kill);
        for (i = 0; i < n_kill; i++)
                assert_string_equal(a.containers_to_kill[i].id, kill[i]);
        assert_non_null(a.message);
        kc_pod_actions_done(&a);
}

static void test_sidecar_initialized_start_all(void **state)
{
        struct tc t;

        (void)state;
        base_sidecar(&t);
        assert_true(kc_pod_has_restartable_init_container(&t.pod));
        check_sc(&t, false, false, NONE, START(0, 1, 2), NONE);
}

static void test_sidecar_none_started(void **state)
{
        struct tc t;

        (void)state;
        base_sidecar(&t);
        t.st.n_containers = 0;
        check_sc(&t, false, false, START(0), NONE, NONE);
}

/* A running sidecar counts as started: the next init container starts beside it. */
static void test_sidecar_running_starts_next(void **state)
{
        struct tc t;

        (void)state;
        base_sidecar(&t);
        t.st.n_containers = 1;
        check_sc(&t, false, false, START(1), NONE, NONE);
}

/*
 * Issue 15, upstream's sidecar probe cases: a startup probe not yet
 * successful holds the next init container back; its failure, or a liveness
 * failure, kills the sidecar and starts it again.
 */
static void test_sidecar_probes(void **state)
{
        struct fake_probes fp = { 0 };
        struct kc_pod_actions a;
        struct tc t;

        (void)state;
        base_sidecar(&t);
        t.st.n_containers = 1; /* only the first sidecar runs */
        t.init[0].startup_probe = &(struct kc_api_probe){ .present = true };
        probed(&t, &fp, &a); /* no startup result yet: wait */
        assert_int_equal(a.n_init_containers_to_start, 0);
        assert_int_equal(a.n_containers_to_kill, 0);
        kc_pod_actions_done(&a);

        fp.startup_ok = "initid1";
        probed(&t, &fp, &a); /* started: the next one starts */
        assert_int_equal(a.n_init_containers_to_start, 1);
        assert_int_equal(a.init_containers_to_start[0], 1);
        kc_pod_actions_done(&a);

        fp = (struct fake_probes){ .startup_failed = "initid1" };
        probed(&t, &fp, &a);
        assert_int_equal(a.n_containers_to_kill, 1);
        assert_string_equal(a.containers_to_kill[0].message,
                            "Init container init1 failed startup probe");
        assert_int_equal(a.containers_to_kill[0].reason, KC_KILL_REASON_STARTUP_PROBE);
        assert_true(a.containers_to_kill[0].init_container);
        assert_int_equal(a.n_init_containers_to_start, 1);
        assert_int_equal(a.init_containers_to_start[0], 0);
        kc_pod_actions_done(&a);

        /* Liveness: all three running, the pod initialized; the second fails. */
        base_sidecar(&t);
        t.init[1].liveness_probe = &(struct kc_api_probe){ .present = true };
        fp = (struct fake_probes){ .liveness_failed = "initid2" };
        probed(&t, &fp, &a);
        assert_int_equal(a.n_containers_to_kill, 1);
        assert_string_equal(a.containers_to_kill[0].id, "initid2");
        assert_string_equal(a.containers_to_kill[0].message,
                            "Init container init2 failed liveness probe");
        assert_int_equal(a.containers_to_kill[0].reason, KC_KILL_REASON_LIVENESS_PROBE);
        assert_int_equal(a.n_init_containers_to_start, 1);
        assert_int_equal(a.init_containers_to_start[0], 1);
        assert_int_equal(a.n_containers_to_start, 3); /* the apps start: initialized */
        kc_pod_actions_done(&a);
}

static void test_sidecar_created_restart(void **state)
{
        struct tc t;

        (void)state;
        base_sidecar(&t);
        t.cs[2].state = KC_CONTAINER_STATE_CREATED;
        check_sc(&t, false, false, START(2), NONE, NONE);
}

/* A sidecar that exited restarts whatever the pod's restartPolicy. */
static void test_sidecar_exited_restart_never(void **state)
{
        struct tc t;

        (void)state;
        base_sidecar(&t);
        t.pod.restart_policy = KC_RESTART_POLICY_NEVER;
        t.cs[2].state = KC_CONTAINER_STATE_EXITED;
        t.cs[2].exit_code = 137;
        check_sc(&t, false, false, START(2), NONE, NONE);
}

/* Initialized pod (apps running): an exited or vanished sidecar is started again, apps kept. */
static void test_sidecar_restart_after_init(void **state)
{
        static const char *const names[] = { "foo1", "foo2", "foo3" };
        struct tc t;
        size_t i;

        (void)state;
        base_sidecar(&t);
        for (i = 0; i < 3; i++)
                t.cs[3 + i] = (struct kc_container_status){
                        .id = names[i],
                        .name = names[i],
                        .state = KC_CONTAINER_STATE_RUNNING,
                        .hash = kc_container_spec_hash(&t.containers[i]),
                };
        t.st.n_containers = 6;
        t.cs[0].state = KC_CONTAINER_STATE_EXITED; /* init1 exited */
        t.cs[1].name = "gone";                     /* init2 has no status any more */
        check_sc(&t, false, false, START(0, 1), NONE, NONE);
}

/* A running sidecar whose spec changed is killed and started again. */
static void test_sidecar_definition_changed(void **state)
{
        struct tc t;
        struct kc_pod_actions a;

        (void)state;
        base_sidecar(&t);
        t.cs[1].hash ^= 1;
        check_sc(&t, false, false, START(1), START(0, 1, 2), KILL("initid2"));
        assert_int_equal(kc_compute_pod_actions(&t.pod, &t.st, &a), 0);
        assert_true(a.containers_to_kill[0].init_container);
        assert_string_equal(a.containers_to_kill[0].message,
                            "Init container init2 definition changed");
        kc_pod_actions_done(&a);
}

/* A sidecar in the unknown state is killed before its restart. */
static void test_sidecar_unknown_kill_restart(void **state)
{
        struct tc t;

        (void)state;
        base_sidecar(&t);
        t.cs[0].state = KC_CONTAINER_STATE_UNKNOWN;
        t.st.n_containers = 1;
        check_sc(&t, false, false, START(0), NONE, KILL("initid1"));
}

/* A regular init container after a sidecar: it runs; the sidecar before it is kept. */
static void test_sidecar_then_regular_init(void **state)
{
        struct tc t;

        (void)state;
        base_sidecar(&t);
        t.init[1].restart_policy_always = false;
        t.cs[1].hash = kc_container_spec_hash(&t.init[1]);
        t.st.n_containers = 2; /* init1 running, init2 running: wait */
        check_sc(&t, false, false, NONE, NONE, NONE);
        t.cs[1].state = KC_CONTAINER_STATE_EXITED; /* init2 done: init3 next */
        check_sc(&t, false, false, START(2), NONE, NONE);
        t.cs[1].exit_code = 1; /* init2 failed: again (Always) */
        check_sc(&t, false, false, START(1), NONE, NONE);
        t.pod.restart_policy = KC_RESTART_POLICY_NEVER; /* ... or the pod is done */
        check_sc(&t, true, false, NONE, NONE, NONE);
}

/* App containers all exited (Never): kill the pod, no sidecar restarted. */
static void test_sidecar_apps_done_never_kill(void **state)
{
        static const char *const names[] = { "foo1", "foo2", "foo3" };
        struct tc t;
        size_t i;

        (void)state;
        base_sidecar(&t);
        t.pod.restart_policy = KC_RESTART_POLICY_NEVER;
        for (i = 0; i < 3; i++)
                t.cs[3 + i] = (struct kc_container_status){
                        .id = names[i],
                        .name = names[i],
                        .state = KC_CONTAINER_STATE_EXITED,
                        .hash = kc_container_spec_hash(&t.containers[i]),
                };
        t.st.n_containers = 6;
        check_sc(&t, true, false, NONE, NONE, NONE);
        /*
         * As upstream: exited app containers do not prove initialization, so
         * a crashed last sidecar is started once more before the kill.
         */
        t.cs[2].state = KC_CONTAINER_STATE_EXITED;
        check_sc(&t, false, false, START(2), NONE, NONE);
}

/* Sandbox gone: re-create it and start from the first init container; apps already ran
 * (OnFailure, all succeeded): kill only. */
static void test_sidecar_sandbox_dead(void **state)
{
        struct tc t;

        (void)state;
        base_sidecar(&t);
        t.sb[0].state = KC_SANDBOX_STATE_NOTREADY;
        check_sc(&t, true, true, START(0), NONE, NONE);
        t.pod.restart_policy = KC_RESTART_POLICY_ON_FAILURE;
        t.cs[3] = (struct kc_container_status){ .id = "a",
                                                .name = "foo1",
                                                .state = KC_CONTAINER_STATE_EXITED };
        t.cs[4] = (struct kc_container_status){ .id = "b",
                                                .name = "foo2",
                                                .state = KC_CONTAINER_STATE_EXITED };
        t.cs[5] = (struct kc_container_status){ .id = "c",
                                                .name = "foo3",
                                                .state = KC_CONTAINER_STATE_EXITED };
        t.st.n_containers = 6;
        t.sb[0].attempt = 0;
        check_sc(&t, true, false, NONE, NONE, NONE);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_everything_good),
                cmocka_unit_test(test_new_pod),
                cmocka_unit_test(test_restart_exited_always),
                cmocka_unit_test(test_restart_failed_on_failure),
                cmocka_unit_test(test_restart_created_on_failure),
                cmocka_unit_test(test_never_no_restart),
                cmocka_unit_test(test_sandbox_dead_always),
                cmocka_unit_test(test_sandbox_dead_on_failure_skips_succeeded),
                cmocka_unit_test(test_several_ready_sandboxes),
                cmocka_unit_test(test_spec_hash_changed),
                cmocka_unit_test(test_probe_failure_kill_and_restart),
                cmocka_unit_test(test_probe_failure_never),
                cmocka_unit_test(test_sidecar_probes),
                cmocka_unit_test(test_never_exited_no_sandbox_kill_only),
                cmocka_unit_test(test_on_failure_all_succeeded_no_sandbox),
                cmocka_unit_test(test_on_failure_all_succeeded_ready_sandbox),
                cmocka_unit_test(test_never_no_containers_ever_created),
                cmocka_unit_test(test_never_no_sandbox_skips_exited),
                cmocka_unit_test(test_never_first_sandbox_dead_kill_only),
                cmocka_unit_test(test_unknown_state_kill_and_restart),
                cmocka_unit_test(test_created_state_restart),
                cmocka_unit_test(test_newest_status_wins),
                cmocka_unit_test(test_deleted_pod_no_restart),
                cmocka_unit_test(test_init_completed_start_all),
                cmocka_unit_test(test_init_none_started),
                cmocka_unit_test(test_init_in_progress),
                cmocka_unit_test(test_init_in_order),
                cmocka_unit_test(test_init_sandbox_dead),
                cmocka_unit_test(test_init_failed_always),
                cmocka_unit_test(test_init_failed_on_failure),
                cmocka_unit_test(test_init_failed_never),
                cmocka_unit_test(test_init_unknown_always),
                cmocka_unit_test(test_init_unknown_never),
                cmocka_unit_test(test_init_sandbox_dead_never_kill_only),
                cmocka_unit_test(test_init_sandbox_dead_never_no_statuses),
                cmocka_unit_test(test_init_sandbox_dead_failed_on_failure),
                cmocka_unit_test(test_init_last_running_missing_preceding),
                cmocka_unit_test(test_init_created_restart),
                cmocka_unit_test(test_sidecar_initialized_start_all),
                cmocka_unit_test(test_sidecar_none_started),
                cmocka_unit_test(test_sidecar_running_starts_next),
                cmocka_unit_test(test_sidecar_created_restart),
                cmocka_unit_test(test_sidecar_exited_restart_never),
                cmocka_unit_test(test_sidecar_restart_after_init),
                cmocka_unit_test(test_sidecar_definition_changed),
                cmocka_unit_test(test_sidecar_unknown_kill_restart),
                cmocka_unit_test(test_sidecar_then_regular_init),
                cmocka_unit_test(test_sidecar_apps_done_never_kill),
                cmocka_unit_test(test_sidecar_sandbox_dead),
                cmocka_unit_test(test_compute_einval),
                cmocka_unit_test(test_spec_hash),
                cmocka_unit_test_setup_teardown(test_backoff_key, bo_setup, bo_teardown),
                cmocka_unit_test_setup_teardown(test_backoff_no_exited_status, bo_setup,
                                                bo_teardown),
                cmocka_unit_test_setup_teardown(test_backoff_sequence, bo_setup, bo_teardown),
                cmocka_unit_test_setup_teardown(test_backoff_einval, bo_setup, bo_teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
