/* SPDX-License-Identifier: Apache-2.0 */
/*
 * generateContainerConfig against a real containerd (issue 14): SyncPod over
 * the CRI client with the kubelet's RuntimeHelper, then ExecSync inside the
 * containers proves that
 *   - env (a value, a $(VAR) reference, a fieldRef) reaches the process
 *     (echo "$VAR" in sh: Debian's busybox has no printenv applet), and
 *     $(VAR) in the command was expanded;
 *   - workingDir is the process's directory (pwd);
 *   - the memory limit is the container's cgroup limit;
 *   - the CPU limit is its CFS quota;
 *   - readOnlyRootFilesystem refuses a write to /, while a writable one
 *     takes it.
 * Host-network pods only: the harness has no CNI.
 */
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

#include "core/cleanup.h"
#include "core/clock.h"
#include "integ.h"
#include "kubelet/runtime_helper.h"
#include "runtime/api_pod.h"
#include "runtime/container.h"
#include "runtime/cri.h"
#include "runtime/error.h"
#include "runtime/manager.h"
#include "runtime/runtime_service.h"
#include "runtime/sync_pod.h"

#define MI (INT64_C(1024) * 1024)

static struct integ_env env;

struct fixture {
        struct kc_cri *cri;
        struct kc_runtime_service svc;
        struct kc_runtime_manager *manager;
        struct kc_kubelet_runtime_helper *helper;
        char logs[64];
};

/* The id of the container named @p name of pod @p uid. */
static char *container_id(struct fixture *f, const char *uid, const char *name)
{
        struct kc_pod_status *st = NULL;
        struct kc_runtime_error err = { 0 };
        char *id = NULL;

        if (kc_runtime_manager_get_pod_status(f->manager, uid, NULL, "integ", &st, &err) < 0)
                fail_msg("GetPodStatus: %s", err.message);
        for (size_t i = 0; i < st->n_containers; i++)
                if (strcmp(st->containers[i].name, name) == 0 && !id)
                        id = strdup(st->containers[i].id);
        kc_pod_status_unref(st);
        assert_non_null(id);
        return id;
}

/* ExecSync @p argv in @p id: its exit code, and stdout (trailing newline cut) in @p out. */
static int32_t exec_in(struct fixture *f, const char *id, const char *const *argv, size_t argc,
                       char *out, size_t n)
{
        struct kc_exec_sync_result res = { 0 };
        struct kc_runtime_error err = { 0 };
        int32_t code;
        int r;

        r = f->svc.ops->exec_sync(f->svc.self, id, argv, argc, 10, &res, &err);
        if (r < 0)
                fail_msg("ExecSync %s: %d %s", argv[0], r, err.message);
        snprintf(out, n, "%s", res.out ? res.out : "");
        out[strcspn(out, "\n")] = '\0';
        printf("  exec %s ... -> %d \"%s\" (stderr \"%.80s\")\n", argv[argc - 1], res.exit_code,
               out, res.err ? res.err : "");
        code = res.exit_code;
        kc_exec_sync_result_done(&res);
        return code;
}

static void test_config_inside_containers(void **state)
{
        struct fixture *f = *state;
        static const char *const app_cmd[] = { "sh", "-c",
                                               "echo $(GREETING) > /tmp/said; sleep 1000000" };
        static const char *const sleep_cmd[] = { "sleep", "1000000" };
        const struct kc_api_env_var app_env[] = {
                { .name = "GREETING", .value = "hello" },
                { .name = "PHRASE", .value = "$(GREETING)-world-$$(GREETING)" },
                { .name = "MY_POD",
                  .source = KC_ENV_SOURCE_FIELD_REF,
                  .field_path = "metadata.name" },
        };
        const struct kc_api_resource limits[] = { { "cpu", { "250m", 250 } },
                                                  { "memory", { "64Mi", 64 * MI * 1000 } } };
        char uid[64], name[64], out[256];
        struct kc_label pod_labels[] = { { INTEG_LABEL, env.run } };
        struct kc_api_container containers[] = {
                { .name = "app",
                  .image = env.image,
                  .command = app_cmd,
                  .n_command = 3,
                  .working_dir = "/tmp",
                  .env = app_env,
                  .n_env = KC_ELEMENTSOF(app_env),
                  .resources = { .limits = limits, .n_limits = 2 },
                  .image_pull_policy = KC_PULL_IF_NOT_PRESENT },
                { .name = "ro",
                  .image = env.image,
                  .command = sleep_cmd,
                  .n_command = 2,
                  .security_context =
                          &(struct kc_api_security_context){
                                  .present = true, .read_only_root_filesystem = KC_OPT_TRUE },
                  .image_pull_policy = KC_PULL_IF_NOT_PRESENT },
        };
        _cleanup_(kc_api_pod_unrefp) struct kc_api_pod *pod = NULL;
        _cleanup_free_ char *sync_err = NULL, *app = NULL, *ro = NULL;
        int r;

        integ_unique(uid, sizeof(uid), "cfg-uid");
        integ_unique(name, sizeof(name), "cfg");
        struct kc_api_pod tmpl = {
                .uid = uid,
                .name = name,
                .namespace = "integ",
                .source = "file",
                .creation_ts = kc_clock_now(kc_clock_real()),
                .deletion_grace_s = -1,
                .termination_grace_s = 0,
                .phase = KC_POD_PHASE_PENDING,
                .static_pod = true,
                .host_network = true,
                .restart_policy = KC_RESTART_POLICY_NEVER,
                .containers = containers,
                .n_containers = 2,
                .labels = pod_labels,
                .n_labels = 1,
        };
        assert_int_equal(kc_api_pod_new(&tmpl, &pod), 0);

        r = kc_runtime_manager_sync_pod(f->manager, pod, NULL, NULL, &sync_err);
        if (r < 0)
                fail_msg("SyncPod: %d %s", r, sync_err);
        app = container_id(f, uid, "app");
        ro = container_id(f, uid, "ro");
        assert_int_equal(
                integ_wait_container_state(f->svc, app, KC_CONTAINER_STATE_RUNNING, 10000, NULL),
                KC_CONTAINER_STATE_RUNNING);

        /* env: a value, a reference, an escaped reference, a fieldRef. */
        assert_int_equal(exec_in(f, app, (const char *const[]){ "sh", "-c", "echo \"$GREETING\"" },
                                 3, out, sizeof(out)),
                         0);
        assert_string_equal(out, "hello");
        assert_int_equal(exec_in(f, app, (const char *const[]){ "sh", "-c", "echo \"$PHRASE\"" }, 3,
                                 out, sizeof(out)),
                         0);
        assert_string_equal(out, "hello-world-$(GREETING)");
        assert_int_equal(exec_in(f, app, (const char *const[]){ "sh", "-c", "echo \"$MY_POD\"" }, 3,
                                 out, sizeof(out)),
                         0);
        assert_string_equal(out, name);
        /* $(GREETING) in the command was expanded before the shell saw it. */
        assert_int_equal(
                exec_in(f, app, (const char *const[]){ "cat", "/tmp/said" }, 2, out, sizeof(out)),
                0);
        assert_string_equal(out, "hello");

        /* workingDir. */
        assert_int_equal(exec_in(f, app, (const char *const[]){ "pwd" }, 1, out, sizeof(out)), 0);
        assert_string_equal(out, "/tmp");

        /* The memory limit and the CFS quota of the container's cgroup (v2, else v1). */
        assert_int_equal(
                exec_in(f, app,
                        (const char *const[]){ "sh", "-c",
                                               "cat /sys/fs/cgroup/memory.max 2>/dev/null || "
                                               "cat /sys/fs/cgroup/memory/memory.limit_in_bytes" },
                        3, out, sizeof(out)),
                0);
        assert_string_equal(out, "67108864");
        assert_int_equal(exec_in(f, app,
                                 (const char *const[]){ "sh", "-c",
                                                        "cat /sys/fs/cgroup/cpu.max 2>/dev/null || "
                                                        "cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us" },
                                 3, out, sizeof(out)),
                         0);
        assert_true(strcmp(out, "25000") == 0 || strcmp(out, "25000 100000") == 0);

        /* readOnlyRootFilesystem: a write to / fails; the other container's succeeds. */
        assert_int_not_equal(
                exec_in(f, ro, (const char *const[]){ "touch", "/written" }, 2, out, sizeof(out)),
                0);
        assert_int_equal(
                exec_in(f, app, (const char *const[]){ "touch", "/written" }, 2, out, sizeof(out)),
                0);
        assert_int_equal(integ_remove_all(f->svc, &env), 1);
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        const char *const node_ips[] = { "127.0.0.1" };
        struct kc_kubelet_runtime_helper_config hc = {
                .node_name = "integ-node",
                .node_ips = node_ips,
                .n_node_ips = 1,
                .resolv_conf = "",
        };
        struct kc_runtime_helper rh;
        int r;

        if (!f || integ_env_load(&env, "test_container_config") < 0)
                return -1;
        snprintf(f->logs, sizeof(f->logs), "/tmp/cubelet-integ-pods.XXXXXX");
        if (!mkdtemp(f->logs))
                return -1;
        r = kc_cri_new(env.endpoint, 30 * KC_NSEC_PER_SEC, &f->cri);
        if (r < 0) {
                fprintf(stderr, "kc_cri_new(%s): %s\n", env.endpoint, strerror(-r));
                return -1;
        }
        f->svc = kc_cri_service(f->cri);
        if (kc_runtime_manager_new(f->svc, kc_clock_real(), &f->manager) < 0 ||
            kc_runtime_manager_set_pod_logs_root(f->manager, f->logs) < 0 ||
            kc_kubelet_runtime_helper_new(&hc, &f->helper) < 0)
                return -1;
        rh = kc_kubelet_runtime_helper_get(f->helper);
        if (kc_runtime_manager_set_runtime_helper(f->manager, &rh) < 0 ||
            kc_runtime_manager_set_machine(f->manager,
                                           kc_kubelet_runtime_helper_memory_capacity(f->helper),
                                           NULL, NULL) < 0)
                return -1;
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        if (!f)
                return 0;
        integ_teardown_leftovers(f->cri ? &f->svc : NULL, &env, f->logs);
        kc_runtime_manager_free(f->manager);
        kc_kubelet_runtime_helper_free(f->helper);
        kc_cri_free(f->cri);
        free(f);
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_config_inside_containers, setup, teardown),
        };

        return cmocka_run_group_tests_name("integration.container_config", tests, NULL, NULL);
}
