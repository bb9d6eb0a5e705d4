/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's flags (cmd/flags.c) and the v1 Node of /node
 * (kubelet/node_status.c).
 */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "cmd/flags.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "health/runtime_state.h"
#include "kubelet/node_status.h"

#define SEC KC_NSEC_PER_SEC

static int parse(struct kc_kubelet_flags *f, int *optind_, char **err, ...)
{
        char *argv[32] = { "cubelet" };
        int argc = 1;
        va_list ap;

        va_start(ap, err);
        for (char *a; (a = va_arg(ap, char *));)
                argv[argc++] = a;
        va_end(ap);
        *err = NULL;
        return kc_kubelet_flags_parse(argc, argv, f, optind_, err);
}

static void test_defaults(void **state)
{
        struct kc_kubelet_flags f;
        char *err;
        int oi = -1;

        (void)state;
        assert_int_equal(parse(&f, &oi, &err, NULL), 0);
        assert_int_equal(oi, 1);
        assert_string_equal(f.container_runtime_endpoint, "sim://");
        assert_null(f.pod_manifest_path);
        assert_int_equal(f.file_check_frequency_ns, 20 * SEC);
        assert_int_equal(f.sync_frequency_ns, 60 * SEC);
        assert_int_equal(f.runtime_request_timeout_ns, 120 * SEC);
        assert_false(f.evented_pleg);
        assert_int_equal(f.evented_pleg_cache_update_period_ns, 2 * SEC);
        assert_int_equal(f.evented_pleg_reprobe_period_ns, 300 * SEC);
        assert_string_equal(f.address, "127.0.0.1");
        assert_int_equal(f.port, 10255);
        assert_int_equal(f.healthz_port, 10248);
        assert_non_null(f.hostname_override); /* the host name */
        assert_null(f.node_ip);
        assert_string_equal(f.root_dir, "/var/lib/kubelet");
        assert_int_equal(f.maximum_dead_containers_per_container, 1);
        assert_int_equal(f.max_wait_for_container_runtime_ns, 30 * SEC);
        assert_int_equal(f.crash_loop_initial_ns, 10 * SEC);
        assert_int_equal(f.crash_loop_max_ns, 300 * SEC);
        assert_int_equal(f.verbosity, 0);
        kc_kubelet_flags_done(&f);
}

static void test_forms(void **state)
{
        struct kc_kubelet_flags f;
        char *err;
        int oi;

        (void)state;
        assert_int_equal(parse(&f, &oi, &err, "--pod-manifest-path=/etc/m", "--port", "0", "-v",
                               "3", "--hostname-override=n1", "--sync-frequency=1.5s",
                               "--feature-gates=EventedPLEG=true", "--address=::1",
                               "--crash-loop-back-off-initial-container-restart-period=1s",
                               "--crash-loop-back-off-max-container-restart-period", "4s",
                               "pleg-replay", "x.jsonl", NULL),
                         0);
        assert_int_equal(oi, 13); /* the subcommand */
        assert_string_equal(f.pod_manifest_path, "/etc/m");
        assert_int_equal(f.port, 0);
        assert_int_equal(f.verbosity, 3);
        assert_string_equal(f.hostname_override, "n1");
        assert_int_equal(f.sync_frequency_ns, 1500 * KC_NSEC_PER_MSEC);
        assert_true(f.evented_pleg);
        assert_string_equal(f.address, "::1");
        assert_int_equal(f.crash_loop_initial_ns, SEC);
        assert_int_equal(f.crash_loop_max_ns, 4 * SEC);
        kc_kubelet_flags_done(&f);

        assert_int_equal(parse(&f, &oi, &err, "--v=2", "-h", NULL), 0);
        assert_true(f.help);
        assert_int_equal(f.verbosity, 2);
        kc_kubelet_flags_done(&f);
}

/* Every bad input names what is wrong; nothing is returned. */
static void test_errors(void **state)
{
        static const struct {
                const char *arg, *arg2, *want;
        } cases[] = {
                { "--bogus", NULL, "unknown flag: --bogus" },
                { "-pod-manifest-path=/x", NULL, "unknown flag: -pod-manifest-path" },
                { "--port=65536", NULL, "--port: invalid port \"65536\"" },
                { "--port=-1", NULL, "--port: invalid port" },
                { "--sync-frequency=10", NULL, "--sync-frequency: invalid duration \"10\"" },
                { "--sync-frequency=0s", NULL, "--sync-frequency: invalid duration" },
                { "--address=localhost", NULL, "--address: \"localhost\" is not an IP address" },
                { "--container-runtime-endpoint=tcp://x", NULL, "unsupported endpoint" },
                { "--feature-gates=Foo=true", NULL, "unrecognized feature gate: Foo" },
                { "--feature-gates=EventedPLEG=yes", NULL, "invalid value of EventedPLEG=yes" },
                { "-v=11", NULL, "-v: invalid verbosity \"11\"" },
                { "--help=maybe", NULL, "--help: invalid value" },
                { "--pod-manifest-path=", NULL, "--pod-manifest-path: must not be empty" },
                { "--crash-loop-back-off-initial-container-restart-period=10s",
                  "--crash-loop-back-off-max-container-restart-period=5s", "must not be below" },
                { "--sync-frequency", NULL, "flag needs an argument: --sync-frequency" },
        };

        (void)state;
        for (size_t i = 0; i < KC_ELEMENTSOF(cases); i++) {
                struct kc_kubelet_flags f = { .port = 7 };
                char *err;
                int oi = 42;

                assert_int_equal(parse(&f, &oi, &err, cases[i].arg, cases[i].arg2, NULL), -EINVAL);
                assert_non_null(err);
                if (!strstr(err, cases[i].want))
                        fail_msg("%s: got \"%s\", want \"%s\"", cases[i].arg, err, cases[i].want);
                assert_null(strchr(err, '\n')); /* one line */
                assert_int_equal(oi, 42);       /* untouched */
                assert_int_equal(f.port, 7);
                free(err);
        }
}

/* --help lists every flag with a default. */
static void test_usage(void **state)
{
        static const char *const names[] = {
                "--container-runtime-endpoint",
                "--pod-manifest-path",
                "--file-check-frequency",
                "--sync-frequency",
                "--runtime-request-timeout",
                "--feature-gates",
                "--evented-pleg-cache-update-period",
                "--evented-pleg-reprobe-period",
                "--address",
                "--port",
                "--healthz-bind-address",
                "--healthz-port",
                "--hostname-override",
                "--node-ip",
                "--root-dir",
                "--maximum-dead-containers-per-container",
                "--max-wait-for-container-runtime",
                "--crash-loop-back-off-initial-container-restart-period",
                "--crash-loop-back-off-max-container-restart-period",
                "--v",
        };
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        (void)state;
        assert_non_null(f);
        kc_kubelet_flags_usage(f);
        fclose(f);
        for (size_t i = 0; i < KC_ELEMENTSOF(names); i++) {
                const char *p = strstr(buf, names[i]);

                assert_non_null(p);
                /* The flag's help line (the next line) ends with its default. */
                p = strchr(strchr(p, '\n') + 1, '\n');
                assert_non_null(p);
                assert_memory_equal(p - 1, ")", 1);
        }
        assert_non_null(strstr(buf, "(default \"10255\")"));
        free(buf);
}

static const char *ready(json_t *node, const char *key)
{
        json_t *c =
                json_array_get(json_object_get(json_object_get(node, "status"), "conditions"), 0);

        return json_string_value(json_object_get(c, key));
}

/* /node: Ready follows runtimeErrors and networkErrors (ReadyCondition). */
static void test_node_ready(void **state)
{
        struct kc_clock *clock = NULL;
        struct kc_runtime_state *rs = NULL;
        struct kc_node_status *n = NULL;
        const struct kc_node_status_config cfg0 = { 0 };
        char *js = NULL;
        json_t *node;

        (void)state;
        assert_int_equal(kc_fake_clock_new(&clock, 1700000000 * SEC), 0);
        assert_int_equal(kc_runtime_state_new(clock, 30 * SEC, &rs), 0);
        assert_int_equal(kc_node_status_new(&cfg0, &n), -EINVAL);
        const struct kc_node_status_config cfg = {
                .clock = clock,
                .runtime_state = rs,
                .node_name = "n1",
                .node_ip = "10.0.0.7",
                .runtime_version = "sim://0.1.0",
                .kubelet_version = "v0.1.0",
        };
        assert_int_equal(kc_node_status_new(&cfg, &n), 0);

        /* Before the first runtime status: not ready, with upstream's messages. */
        assert_int_equal(kc_node_status_render(n, &js), 0);
        node = json_loads(js, 0, NULL);
        free(js);
        assert_string_equal(json_string_value(json_object_get(node, "kind")), "Node");
        assert_string_equal(ready(node, "status"), "False");
        assert_string_equal(ready(node, "reason"), "KubeletNotReady");
        assert_string_equal(ready(node, "message"),
                            "[container runtime status check may not have completed yet, "
                            "network state unknown]");
        json_decref(node);

        kc_runtime_state_set_runtime_sync(rs, kc_clock_now(clock));
        assert_int_equal(kc_runtime_state_set_network_state(rs, NULL), 0);
        kc_fake_clock_advance(clock, 5 * SEC);
        assert_int_equal(kc_node_status_render(n, &js), 0);
        node = json_loads(js, 0, NULL);
        free(js);
        assert_string_equal(ready(node, "status"), "True");
        assert_string_equal(ready(node, "reason"), "KubeletReady");
        assert_string_equal(ready(node, "message"), "kubelet is posting ready status");
        assert_string_equal(ready(node, "lastTransitionTime"), "2023-11-14T22:13:25Z");
        assert_string_equal(json_string_value(json_object_get(
                                    json_object_get(json_object_get(node, "status"), "nodeInfo"),
                                    "containerRuntimeVersion")),
                            "sim://0.1.0");
        json_decref(node);

        /* 30 s without a runtime status: the runtime counts as down. */
        kc_fake_clock_advance(clock, 30 * SEC);
        assert_int_equal(kc_node_status_render(n, &js), 0);
        node = json_loads(js, 0, NULL);
        free(js);
        assert_string_equal(ready(node, "status"), "False");
        assert_string_equal(ready(node, "message"), "container runtime is down");
        assert_string_equal(ready(node, "lastTransitionTime"), "2023-11-14T22:13:55Z");
        json_decref(node);

        kc_node_status_free(n);
        kc_runtime_state_free(rs);
        kc_clock_free(clock);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),   cmocka_unit_test(test_forms),
                cmocka_unit_test(test_errors),     cmocka_unit_test(test_usage),
                cmocka_unit_test(test_node_ready),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
