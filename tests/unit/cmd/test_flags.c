/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's flags (cmd/flags.c). The v1 Node of /node is tested in
 * tests/unit/kubelet/test_node_status.c.
 */
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

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_forms),
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_usage),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
