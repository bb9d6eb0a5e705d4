/* SPDX-License-Identifier: Apache-2.0 */
/*
 * integration.probes (issue 15): kc_prober_probe() against real containers
 * in containerd, through the CRI client. One host-network pod runs busybox
 * httpd serving /www and busybox nc listening; the probes are those of a
 * static pod: httpGet readiness turning true when the file it serves
 * appears (written by an exec), exec probes (cat, test -f, the timeout
 * enforced by the runtime), tcpSocket against nc, and both failing once
 * their servers are gone.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/cleanup.h"
#include "core/clock.h"
#include "integ.h"
#include "kubelet/prober/prober.h"
#include "probe_ring.h"
#include "runtime/api_pod.h"
#include "runtime/container.h"
#include "runtime/cri.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"

static struct integ_env env;
static struct kc_cri *cri;
static struct kc_runtime_service svc;
static const struct kc_api_pod pod = { .uid = "probes-uid",
                                       .name = "probes",
                                       .namespace = "integ" };

/* A TCP port nothing listens on right now (the kernel's pick, released). */
static int free_port(void)
{
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001) };
        socklen_t len = sizeof(a);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
        assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
        close(fd);
        return ntohs(a.sin_port);
}

/* Creates and starts container @p name running `sh -c @p script` in sandbox @p sb. */
static char *start(const char *sb, const struct kc_pod_sandbox_config *sc, const char *name,
                   const char *script)
{
        const char *const cmd[] = { "sh", "-c", script };
        struct kc_label labels[] = { { INTEG_LABEL, env.run }, { KC_LABEL_CONTAINER_NAME, name } };
        struct kc_container_config cc = { .metadata = { .name = name },
                                          .image = env.image,
                                          .command = cmd,
                                          .n_command = 3,
                                          .labels = labels,
                                          .n_labels = 2 };
        struct kc_runtime_error err = { 0 };
        char *id = NULL;

        if (svc.ops->create_container(svc.self, sb, &cc, sc, &id, &err) < 0)
                fail_msg("CreateContainer(%s): %s", name, err.message);
        if (svc.ops->start_container(svc.self, id, &err) < 0)
                fail_msg("StartContainer(%s): %s", name, err.message);
        return id;
}

struct outcome {
        enum kc_probe_result result;
        char output[1024];
};

static struct outcome probe(struct kc_prober *p, const struct kc_api_container *c, const char *id)
{
        struct outcome o = { .result = _KC_PROBE_RESULT_INVALID };
        _cleanup_free_ char *out = NULL;

        assert_int_equal(
                kc_prober_probe(p, KC_PROBE_READINESS, &pod, "127.0.0.1", c, id, &o.result, &out),
                0);
        snprintf(o.output, sizeof(o.output), "%s", out ? out : "");
        printf("  probe %d -> %d \"%.200s\"\n", c->readiness_probe->handler.kind, o.result,
               o.output);
        return o;
}

/* Probes @p c until it answers @p want or 10 s pass (the servers take a moment to listen). */
static struct outcome probe_until(struct kc_prober *p, const struct kc_api_container *c,
                                  const char *id, enum kc_probe_result want)
{
        int64_t deadline = kc_test_mono_ms() + (int64_t)(10000 * kc_test_timeout_multiplier());
        struct outcome o;

        while ((o = probe(p, c, id)).result != want && kc_test_mono_ms() < deadline)
                kc_test_sleep_ms(200);
        return o;
}

static void test_probes_in_containerd(void **state)
{
        static const char *const cat[] = { "cat", "/www/ready" };
        static const char *const test_f[] = { "test", "-f", "/www/ready" };
        static const char *const sleep5[] = { "sleep", "5" };
        static const char *const touch[] = { "sh", "-c", "echo ok > /www/ready" };
        int http_port = free_port(), tcp_port = free_port();
        struct kc_label labels[3];
        char name[64], uid[64], script[160], want[160];
        struct kc_pod_sandbox_config sc;
        struct kc_runtime_error err = { 0 };
        struct kc_exec_sync_result x = { 0 };
        struct kc_api_container c = { .name = "web" };
        _cleanup_free_ char *sb = NULL, *web = NULL, *tcp = NULL;
        struct kc_prober *p = NULL;
        struct outcome o;

        (void)state;
        integ_unique(name, sizeof(name), "probes");
        integ_unique(uid, sizeof(uid), "probes-uid");
        sc = integ_sandbox_config(&env, name, uid, 0, labels);
        if (svc.ops->run_pod_sandbox(svc.self, &sc, &sb, &err) < 0)
                fail_msg("RunPodSandbox: %s", err.message);
        snprintf(script, sizeof(script), "mkdir -p /www && exec httpd -f -p 127.0.0.1:%d -h /www",
                 http_port);
        web = start(sb, &sc, "web", script);
        snprintf(script, sizeof(script), "exec nc -ll -p %d -e /bin/true", tcp_port);
        tcp = start(sb, &sc, "tcp", script);
        assert_int_equal(kc_prober_new(svc, kc_clock_real(), &p), 0);

        /* httpGet readiness: 404 until the file it serves exists. */
        c.readiness_probe = probe_of((struct kc_api_handler){
                .kind = KC_HANDLER_HTTP_GET, .path = "/ready", .port = { .number = http_port } });
        o = probe_until(p, &c, web, KC_PROBE_FAILURE);
        assert_int_equal(o.result, KC_PROBE_FAILURE);
        if (strcmp(o.output, "HTTP probe failed with statuscode: 404") != 0)
                fail_msg("before the file: %s", o.output);
        c.readiness_probe = probe_of(
                (struct kc_api_handler){ .kind = KC_HANDLER_EXEC, .command = cat, .n_command = 2 });
        o = probe(p, &c, web);
        assert_int_equal(o.result, KC_PROBE_FAILURE);
        assert_non_null(strstr(o.output, "/www/ready"));

        if (svc.ops->exec_sync(svc.self, web, touch, 3, 10, &x, &err) < 0 || x.exit_code != 0)
                fail_msg("writing /www/ready: %s", err.message);
        kc_exec_sync_result_done(&x);

        o = probe(p, &c, web);
        assert_int_equal(o.result, KC_PROBE_SUCCESS);
        assert_string_equal(o.output, "ok\n");
        MUT(c.readiness_probe)->handler.command = test_f;
        MUT(c.readiness_probe)->handler.n_command = 3;
        assert_int_equal(probe(p, &c, web).result, KC_PROBE_SUCCESS);
        c.readiness_probe = probe_of((struct kc_api_handler){
                .kind = KC_HANDLER_HTTP_GET, .path = "/ready", .port = { .number = http_port } });
        o = probe(p, &c, web);
        assert_int_equal(o.result, KC_PROBE_SUCCESS);
        assert_string_equal(o.output, "ok\n");

        /* exec: the runtime enforces timeoutSeconds; upstream's message. */
        c.readiness_probe = probe_of((struct kc_api_handler){
                .kind = KC_HANDLER_EXEC, .command = sleep5, .n_command = 2 });
        o = probe(p, &c, web);
        assert_int_equal(o.result, KC_PROBE_FAILURE);
        assert_string_equal(o.output, "command \"sleep 5\" timed out");

        /* tcpSocket against nc. */
        c.readiness_probe = probe_of((struct kc_api_handler){ .kind = KC_HANDLER_TCP_SOCKET,
                                                              .port = { .number = tcp_port } });
        o = probe_until(p, &c, tcp, KC_PROBE_SUCCESS);
        assert_int_equal(o.result, KC_PROBE_SUCCESS);

        /* Both servers stopped: the probes fail with Go's dial error. */
        if (svc.ops->stop_container(svc.self, tcp, 0, &err) < 0 ||
            svc.ops->stop_container(svc.self, web, 0, &err) < 0)
                fail_msg("StopContainer: %s", err.message);
        o = probe(p, &c, tcp);
        assert_int_equal(o.result, KC_PROBE_FAILURE);
        snprintf(want, sizeof(want), "dial tcp 127.0.0.1:%d: connect: connection refused",
                 tcp_port);
        assert_string_equal(o.output, want);
        c.readiness_probe = probe_of((struct kc_api_handler){
                .kind = KC_HANDLER_HTTP_GET, .path = "/ready", .port = { .number = http_port } });
        o = probe(p, &c, web);
        assert_int_equal(o.result, KC_PROBE_FAILURE);
        assert_non_null(strstr(o.output, "connect: connection refused"));
        /* An exec in a stopped container errors (Unknown, after the retries). */
        c.readiness_probe = probe_of(
                (struct kc_api_handler){ .kind = KC_HANDLER_EXEC, .command = cat, .n_command = 2 });
        o = probe(p, &c, web);
        assert_int_equal(o.result, KC_PROBE_UNKNOWN);
        assert_string_equal(o.output,
                            "failed to exec in container: container is in CONTAINER_EXITED state");
        kc_prober_free(p);
}

static int group_setup(void **state)
{
        int r;

        (void)state;
        if (integ_env_load(&env, "test_probes") < 0)
                return -1;
        r = kc_cri_new(env.endpoint, 30 * KC_NSEC_PER_SEC, &cri);
        if (r < 0) {
                fprintf(stderr, "kc_cri_new(%s): %s\n", env.endpoint, strerror(-r));
                return -1;
        }
        svc = kc_cri_service(cri);
        return 0;
}

static int group_teardown(void **state)
{
        (void)state;
        if (cri)
                integ_remove_all(svc, &env);
        cri = kc_cri_free(cri);
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_probes_in_containerd),
        };

        return cmocka_run_group_tests_name("integration.probes", tests, group_setup,
                                           group_teardown);
}
