/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The v1 Node of /node (kubelet/node_status.c, kubelet/machine_info.c):
 * the Ready condition and when it last changed (ReadyCondition), the
 * machine in nodeInfo, capacity and allocatable (MachineInfo,
 * VersionInfo), read from a machine tree of the test's own.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/cleanup.h"
#include "core/clock.h"
#include "health/runtime_state.h"
#include "kc_test.h"
#include "kubelet/node_status.h"
#include "machine_info.h"

#define SEC KC_NSEC_PER_SEC
/* 2023-11-14T22:13:20Z */
#define T0 (INT64_C(1700000000) * SEC)

struct fixture {
        struct kc_clock *clock;
        struct kc_runtime_state *rs;
        struct kc_node_status *n;
        char root[64];
};

static void write_file(const char *root, const char *path, const char *content)
{
        char full[PATH_MAX], *p;
        FILE *f;

        snprintf(full, sizeof(full), "%s/%s", root, path);
        for (p = strchr(full + strlen(root) + 1, '/'); p; p = strchr(p + 1, '/')) {
                *p = '\0';
                (void)mkdir(full, 0755);
                *p = '/';
        }
        f = fopen(full, "we");
        assert_non_null(f);
        fputs(content, f);
        fclose(f);
}

/* A machine of 4 CPUs, 16303412 KiB, one 1 GiB huge page, no product_uuid. */
static void make_machine(const char *root)
{
        write_file(root, "etc/machine-id", "0123456789abcdef0123456789abcdef\n");
        write_file(root, "proc/sys/kernel/random/boot_id",
                   "5a3f0c2e-1b7d-4e8a-9c61-7d2b3e4f5a60\n");
        write_file(root, "proc/sys/kernel/osrelease", "6.1.0-18-amd64\n");
        write_file(root, "etc/os-release",
                   "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n");
        write_file(root, "proc/cpuinfo",
                   "processor\t: 0\nmodel name\t: x\n\nprocessor\t: 1\n\nprocessor\t: 2\n\n"
                   "processor\t: 3\n");
        write_file(root, "proc/meminfo", "MemTotal:       16303412 kB\nMemFree: 1 kB\n");
        write_file(root, "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "0\n");
        write_file(root, "sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages", "1\n");
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        snprintf(f->root, sizeof(f->root), "/tmp/kc-node-status-XXXXXX");
        assert_non_null(mkdtemp(f->root));
        make_machine(f->root);
        assert_int_equal(kc_fake_clock_new(&f->clock, T0), 0);
        assert_int_equal(kc_runtime_state_new(f->clock, 30 * SEC, &f->rs), 0);
        const struct kc_node_status_config cfg = {
                .clock = f->clock,
                .runtime_state = f->rs,
                .node_name = "n1",
                .node_ip = "10.0.0.7",
                .runtime_version = "sim://0.1.0",
                .kubelet_version = "v0.1.0",
                .root_dir = f->root,
                .host_root = f->root,
        };
        assert_int_equal(kc_node_status_new(&cfg, &f->n), 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        char cmd[128];

        kc_node_status_free(f->n);
        kc_runtime_state_free(f->rs);
        kc_clock_free(f->clock);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
        assert_int_equal(system(cmd), 0);
        free(f);
        return 0;
}

static json_t *render(struct fixture *f)
{
        char *js = NULL;
        json_t *node;

        assert_int_equal(kc_node_status_render(f->n, &js), 0);
        node = json_loads(js, 0, NULL);
        free(js);
        assert_non_null(node);
        return node;
}

static const char *cond(json_t *node, const char *type, const char *key)
{
        json_t *c, *conds = json_object_get(json_object_get(node, "status"), "conditions");
        size_t i;

        json_array_foreach (conds, i, c)
                if (strcmp(json_string_value(json_object_get(c, "type")), type) == 0)
                        return json_string_value(json_object_get(c, key));
        fail_msg("no %s condition", type);
        return NULL;
}

static const char *field(json_t *node, const char *obj, const char *key)
{
        return json_string_value(
                json_object_get(json_object_get(json_object_get(node, "status"), obj), key));
}

static void become_ready(struct fixture *f)
{
        kc_runtime_state_set_runtime_sync(f->rs, kc_clock_now(f->clock));
        assert_int_equal(kc_runtime_state_set_network_state(f->rs, NULL), 0);
}

/* Ready follows runtimeErrors, networkErrors and storageErrors. */
static void test_ready_follows_the_errors(void **state)
{
        struct fixture *f = *state;
        json_t *node;

        const struct kc_node_status_config cfg0 = { 0 };
        struct kc_node_status *n = NULL;
        assert_int_equal(kc_node_status_new(&cfg0, &n), -EINVAL);
        assert_null(n);

        /* Before the first runtime status: not ready, with upstream's messages. */
        node = render(f);
        assert_string_equal(json_string_value(json_object_get(node, "kind")), "Node");
        assert_string_equal(cond(node, "Ready", "status"), "False");
        assert_string_equal(cond(node, "Ready", "reason"), "KubeletNotReady");
        assert_string_equal(cond(node, "Ready", "message"),
                            "[container runtime status check may not have completed yet, "
                            "network state unknown]");
        assert_string_equal(cond(node, "MemoryPressure", "status"), "False");
        assert_string_equal(cond(node, "DiskPressure", "reason"), "KubeletHasNoDiskPressure");
        assert_string_equal(cond(node, "PIDPressure", "message"),
                            "kubelet has sufficient PID available");
        json_decref(node);

        become_ready(f);
        kc_fake_clock_advance(f->clock, 5 * SEC);
        node = render(f);
        assert_string_equal(cond(node, "Ready", "status"), "True");
        assert_string_equal(cond(node, "Ready", "reason"), "KubeletReady");
        assert_string_equal(cond(node, "Ready", "message"), "kubelet is posting ready status");
        assert_string_equal(cond(node, "Ready", "lastHeartbeatTime"), "2023-11-14T22:13:25Z");
        json_decref(node);

        /* 30 s without a runtime status: the runtime counts as down. */
        kc_fake_clock_advance(f->clock, 30 * SEC);
        node = render(f);
        assert_string_equal(cond(node, "Ready", "status"), "False");
        assert_string_equal(cond(node, "Ready", "message"), "container runtime is down");
        json_decref(node);
}

/*
 * lastTransitionTime is when Ready last changed, not when someone first
 * asked: it starts when the node status is built, and the node status loop
 * moves it when the status flips, whether or not /node is read then.
 */
static void test_ready_transition_is_when_ready_changed(void **state)
{
        struct fixture *f = *state;
        json_t *node;

        /* Read first 7 s after the start: not ready since the start. */
        kc_fake_clock_advance(f->clock, 7 * SEC);
        node = render(f);
        assert_string_equal(cond(node, "Ready", "status"), "False");
        assert_string_equal(cond(node, "Ready", "lastTransitionTime"), "2023-11-14T22:13:20Z");
        assert_string_equal(cond(node, "MemoryPressure", "lastTransitionTime"),
                            "2023-11-14T22:13:20Z");
        json_decref(node);

        /* The loop looks at once, then every 100 ms until the node is first ready
         * (fastStatusUpdateOnce), then every 10 s. */
        assert_int_equal(kc_node_status_start(f->n, KC_NODE_STATUS_UPDATE_FREQUENCY), 0);
        assert_int_equal(kc_node_status_start(f->n, KC_NODE_STATUS_UPDATE_FREQUENCY), -EALREADY);
        assert_true(KC_TEST_WAIT_UNTIL(kc_fake_clock_sleepers(f->clock) == 1, 5000));
        kc_fake_clock_advance(f->clock, 3 * SEC); /* 22:13:30: still not ready */
        assert_true(KC_TEST_WAIT_UNTIL(kc_fake_clock_sleepers(f->clock) == 1, 5000));
        become_ready(f);
        kc_fake_clock_advance(f->clock, 100 * KC_NSEC_PER_MSEC); /* the loop sees Ready */
        assert_true(KC_TEST_WAIT_UNTIL(kc_fake_clock_sleepers(f->clock) == 1, 5000));
        kc_fake_clock_advance(f->clock, 5 * SEC);
        assert_int_equal(kc_fake_clock_sleepers(f->clock), 1); /* asleep for 10 s now */
        node = render(f);
        assert_string_equal(cond(node, "Ready", "status"), "True");
        assert_string_equal(cond(node, "Ready", "lastTransitionTime"), "2023-11-14T22:13:30Z");
        assert_string_equal(cond(node, "Ready", "lastHeartbeatTime"), "2023-11-14T22:13:35Z");
        json_decref(node);

        /* Reads without a change leave it alone. */
        kc_fake_clock_advance(f->clock, 3 * SEC);
        become_ready(f);
        node = render(f);
        assert_string_equal(cond(node, "Ready", "lastTransitionTime"), "2023-11-14T22:13:30Z");
        json_decref(node);
        kc_node_status_stop(f->n);
        kc_node_status_stop(f->n);

        /* Without the loop a sync is the look: the runtime is down 30 s later. */
        kc_fake_clock_advance(f->clock, 31 * SEC);
        assert_int_equal(kc_node_status_sync(f->n), 0);
        kc_fake_clock_advance(f->clock, 60 * SEC);
        node = render(f);
        assert_string_equal(cond(node, "Ready", "status"), "False");
        assert_string_equal(cond(node, "Ready", "lastTransitionTime"), "2023-11-14T22:14:09Z");
        json_decref(node);
}

/* nodeInfo, capacity and allocatable from the machine tree. */
static void test_machine(void **state)
{
        struct fixture *f = *state;
        struct statvfs st;
        char want[KC_QUANTITY_MAX];
        uint64_t fs;
        json_t *node = render(f);

        assert_string_equal(field(node, "nodeInfo", "machineID"),
                            "0123456789abcdef0123456789abcdef");
        assert_string_equal(field(node, "nodeInfo", "systemUUID"), ""); /* unreadable */
        assert_string_equal(field(node, "nodeInfo", "bootID"),
                            "5a3f0c2e-1b7d-4e8a-9c61-7d2b3e4f5a60");
        assert_string_equal(field(node, "nodeInfo", "kernelVersion"), "6.1.0-18-amd64");
        assert_string_equal(field(node, "nodeInfo", "osImage"), "Debian GNU/Linux 12 (bookworm)");
        assert_string_equal(field(node, "nodeInfo", "containerRuntimeVersion"), "sim://0.1.0");
        assert_string_equal(field(node, "nodeInfo", "kubeletVersion"), "v0.1.0");
        assert_string_equal(field(node, "nodeInfo", "kubeProxyVersion"), "v0.1.0");
        assert_string_equal(field(node, "nodeInfo", "operatingSystem"), "linux");
        assert_non_null(field(node, "nodeInfo", "architecture"));

        assert_string_equal(field(node, "capacity", "cpu"), "4");
        assert_string_equal(field(node, "capacity", "memory"), "16303412Ki");
        assert_string_equal(field(node, "capacity", "pods"), "110");
        assert_string_equal(field(node, "capacity", "hugepages-1Gi"), "1Gi");
        assert_string_equal(field(node, "capacity", "hugepages-2Mi"), "0");
        assert_int_equal(statvfs(f->root, &st), 0);
        fs = (uint64_t)st.f_blocks * st.f_frsize;
        kc__format_quantity_binary(fs, want);
        assert_string_equal(field(node, "capacity", "ephemeral-storage"), want);

        /* Allocatable: less the default hard eviction thresholds (memory
         * 100Mi, nodefs 10 %) and, for memory, the huge pages. */
        assert_string_equal(field(node, "allocatable", "cpu"), "4");
        assert_string_equal(field(node, "allocatable", "memory"), "15152436Ki");
        assert_string_equal(field(node, "allocatable", "pods"), "110");
        assert_string_equal(field(node, "allocatable", "hugepages-1Gi"), "1Gi");
        kc__format_quantity_binary(fs - (uint64_t)((double)0.1f * (double)fs), want);
        assert_string_equal(field(node, "allocatable", "ephemeral-storage"), want);
        json_decref(node);
}

/* The real machine's files are read the same way. */
static void test_machine_real(void **state)
{
        struct kc_machine_info m;
        char *id = NULL;
        FILE *fp;

        (void)state;
        assert_int_equal(kc__machine_info_read(NULL, "/nonexistent/kubelet", &m), 0);
        assert_true(m.cpus > 0);
        assert_true(m.memory_bytes > 0);
        assert_true(m.ephemeral_bytes > 0); /* the nearest existing parent's: / */
        assert_true(m.kernel_version[0]);
        assert_true(m.os_image[0]);
        fp = fopen("/proc/sys/kernel/random/boot_id", "re");
        if (fp) {
                size_t len = 0;

                assert_true(getline(&id, &len, fp) > 0);
                id[strcspn(id, "\n")] = '\0';
                assert_string_equal(m.boot_id, id);
                free(id);
                fclose(fp);
        }
        kc__machine_info_done(&m);
}

static void test_quantity(void **state)
{
        static const struct {
                uint64_t v;
                const char *want;
        } cases[] = {
                { 0, "0" },
                { 1023, "1023" },
                { 1024, "1Ki" },
                { 1536, "1536" },
                { 2097152, "2Mi" },
                { UINT64_C(16303412) * 1024, "16303412Ki" },
                { UINT64_C(1) << 30, "1Gi" },
                { UINT64_C(94580049215), "94580049215" },
                { UINT64_C(1) << 60, "1Ei" },
                { UINT64_C(1) << 62, "4Ei" },
        };
        char buf[KC_QUANTITY_MAX];

        (void)state;
        for (size_t i = 0; i < KC_ELEMENTSOF(cases); i++) {
                kc__format_quantity_binary(cases[i].v, buf);
                assert_string_equal(buf, cases[i].want);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_ready_follows_the_errors, setup, teardown),
                cmocka_unit_test_setup_teardown(test_ready_transition_is_when_ready_changed, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_machine, setup, teardown),
                cmocka_unit_test(test_machine_real),
                cmocka_unit_test(test_quantity),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
