/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Probe CPU benchmark (issue 15): N pods (1,000 by default), each with one
 * running container in the simulated runtime and two probes at 1 s
 * periods: a readiness exec probe (`cat /tmp/ready`, answered by the sim's
 * ExecSync on the container's files) and a liveness tcpSocket probe on a
 * real listener on 127.0.0.1. The prober manager runs its workers on the
 * real clock, kc_prober_probe() runs the handlers. The listener runs in a
 * child process (it stands for the containers: its CPU is not the
 * kubelet's); the figure is this process's CPU (getrusage, user + system)
 * over a measured window after a warm-up, as a percentage of one core,
 * with the probes run per second. The target is under 3 % of a core.
 *
 * Usage: bench_probes [--quick] [--pods N] [--seconds S] [--only exec|tcp|workers]
 * It prints figures; it never fails on them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "kubelet/prober/prober.h"
#include "kubelet/prober/prober_manager.h"
#include "runtime/api_pod.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"
#include "runtime/sim.h"

#define CHECK(expr)                                                                                \
        do {                                                                                       \
                int _r = (expr);                                                                   \
                if (_r < 0) {                                                                      \
                        fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr,              \
                                strerror(-_r));                                                    \
                        exit(1);                                                                   \
                }                                                                                  \
        } while (0)

struct bench_pod {
        char uid[40], name[40];
        char *sandbox_id, *container_id;
        struct kc_api_pod *pod; /* packed copy, referenced by the workers */
};

static struct bench_pod *pods;
static size_t n_pods;
static bool no_exec, no_tcp; /* --only tcp / --only exec */
static bool no_handler;      /* --only workers: the runner answers Success at once */
static atomic_ulong n_probes, n_success;

static int64_t mono_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * KC_NSEC_PER_SEC + ts.tv_nsec;
}

/* This process's CPU (the listener child's is not in RUSAGE_SELF): user and system. */
struct cpu {
        int64_t user_ns, sys_ns;
};

static struct cpu cpu_now(void)
{
        struct rusage ru;

        getrusage(RUSAGE_SELF, &ru);
        return (struct cpu){ (int64_t)ru.ru_utime.tv_sec * KC_NSEC_PER_SEC +
                                     (int64_t)ru.ru_utime.tv_usec * KC_NSEC_PER_USEC,
                             (int64_t)ru.ru_stime.tv_sec * KC_NSEC_PER_SEC +
                                     (int64_t)ru.ru_stime.tv_usec * KC_NSEC_PER_USEC };
}

/* The runner: kc_prober_probe(), counted. */
static int run_probe(void *self, enum kc_probe_type t, const struct kc_api_pod *pod,
                     const char *pod_ip, const struct kc_api_container *c, const char *container_id,
                     enum kc_probe_result *ret, char **ret_output)
{
        int r = 0;

        if (no_handler) {
                *ret = KC_PROBE_SUCCESS;
                *ret_output = NULL;
        } else {
                r = kc_prober_probe(self, t, pod, pod_ip, c, container_id, ret, ret_output);
        }

        atomic_fetch_add(&n_probes, 1);
        if (r == 0 && *ret == KC_PROBE_SUCCESS)
                atomic_fetch_add(&n_success, 1);
        return r;
}

static const struct kc_probe_runner_ops runner_ops = { .probe = run_probe };

/* The status manager's view: every container running and started since long ago. */
static int status_get(void *self, const char *pod_uid, const char *container_name,
                      struct kc_probe_target *ret)
{
        size_t i = strtoul(pod_uid + 4, NULL, 10);

        (void)self, (void)container_name;
        if (i >= n_pods)
                return -ENOENT;
        *ret = (struct kc_probe_target){ .container_id = strdup(pods[i].container_id),
                                         .running = true,
                                         .started = true,
                                         .started_at_ns = 0,
                                         .pod_ip = strdup("127.0.0.1") };
        return 0;
}

static const struct kc_probe_status_ops status_ops = { .get = status_get };

/* A child process that accepts and closes connections on 127.0.0.1:*port until killed. */
static pid_t start_listener(int *port)
{
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001) };
        socklen_t len = sizeof(a);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        pid_t pid;

        if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4096) < 0 ||
            getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
                perror("listener");
                exit(1);
        }
        *port = ntohs(a.sin_port);
        pid = fork();
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                for (;;) {
                        int c = accept(fd, NULL, NULL);

                        if (c >= 0)
                                close(c);
                }
        }
        close(fd);
        return pid;
}

static void add_pods(struct kc_runtime_service svc, int port)
{
        static const char *const cat[] = { "cat", "/tmp/ready" };
        static const char *const sh[] = { "sh", "-c" };
        static const char *const script[] = { "touch /tmp/ready; sleep 3600" };
        struct kc_runtime_error err = { 0 };

        pods = calloc(n_pods, sizeof(*pods));
        if (!pods)
                exit(1);
        for (size_t i = 0; i < n_pods; i++) {
                struct bench_pod *p = &pods[i];
                struct kc_pod_sandbox_config sc = { 0 };
                struct kc_container_config cc = { .metadata = { .name = "app" },
                                                  .image = "busybox",
                                                  .command = sh,
                                                  .n_command = 2,
                                                  .args = script,
                                                  .n_args = 1 };

                snprintf(p->uid, sizeof(p->uid), "uid-%zu", i);
                snprintf(p->name, sizeof(p->name), "pod-%zu", i);
                sc.metadata = (struct kc_pod_sandbox_metadata){ .name = p->name,
                                                                .uid = p->uid,
                                                                .namespace = "bench" };
                CHECK(svc.ops->run_pod_sandbox(svc.self, &sc, &p->sandbox_id, &err));
                CHECK(svc.ops->create_container(svc.self, p->sandbox_id, &cc, &sc, &p->container_id,
                                                &err));
                CHECK(svc.ops->start_container(svc.self, p->container_id, &err));
                struct kc_api_container c = { .name = "app" };

                c.readiness_probe = &(struct kc_api_probe){
                        .present = !no_exec,
                        .handler = { .kind = KC_HANDLER_EXEC, .command = cat, .n_command = 2 },
                        .timeout_seconds = 1,
                        .period_seconds = 1,
                        .success_threshold = 1,
                        .failure_threshold = 3,
                };
                c.liveness_probe = &(struct kc_api_probe){
                        .present = !no_tcp,
                        .handler = { .kind = KC_HANDLER_TCP_SOCKET, .port = { .number = port } },
                        .timeout_seconds = 1,
                        .period_seconds = 1,
                        .success_threshold = 1,
                        .failure_threshold = 3,
                };
                CHECK(kc_api_pod_new(&(struct kc_api_pod){ .uid = p->uid,
                                                           .name = p->name,
                                                           .namespace = "bench",
                                                           .containers = &c,
                                                           .n_containers = 1 },
                                     &p->pod));
        }
}

int main(int argc, char **argv)
{
        struct kc_clock *clock = kc_clock_real();
        struct kc_prober_manager *m = NULL;
        struct kc_prober *prober = NULL;
        struct kc_sim *sim = NULL;
        struct kc_runtime_service svc;
        int64_t seconds = 10, warmup = 3, t0, t1;
        struct cpu c0, c1;
        unsigned long p0, p1, s0, s1;
        int port;
        pid_t listener;

        n_pods = 1000;
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--quick") == 0) {
                        n_pods = 100;
                        seconds = 2;
                        warmup = 2;
                } else if (strcmp(argv[i], "--pods") == 0 && i + 1 < argc) {
                        n_pods = strtoul(argv[++i], NULL, 10);
                } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
                        i++;
                        no_exec = strcmp(argv[i], "tcp") == 0;
                        no_tcp = strcmp(argv[i], "exec") == 0;
                        no_handler = strcmp(argv[i], "workers") == 0;
                } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
                        seconds = strtoll(argv[++i], NULL, 10);
                } else {
                        fprintf(stderr,
                                "usage: %s [--quick] [--pods N] [--seconds S] [--only "
                                "exec|tcp|workers]\n",
                                argv[0]);
                        return 2;
                }
        }
        listener = start_listener(&port);
        CHECK(kc_sim_new(clock, &sim));
        CHECK(kc_sim_add_image(sim, "busybox"));
        svc = kc_sim_service(sim);
        add_pods(svc, port);
        CHECK(kc_prober_new(svc, clock, &prober));
        CHECK(kc_prober_manager_new(&(struct kc_prober_manager_config){ .clock = clock,
                                                                        .runner = &runner_ops,
                                                                        .runner_self = prober,
                                                                        .status = &status_ops },
                                    &m));
        for (size_t i = 0; i < n_pods; i++)
                kc_prober_manager_add_pod(m, pods[i].pod);
        printf("bench_probes: %zu pods, %zu workers (exec on the sim + tcp on 127.0.0.1, 1 s "
               "periods), warm-up %" PRId64 " s, measured %" PRId64 " s\n",
               n_pods, kc_prober_manager_n_workers(m), warmup, seconds);
        sleep((unsigned)warmup);
        t0 = mono_ns(), c0 = cpu_now();
        p0 = atomic_load(&n_probes), s0 = atomic_load(&n_success);
        sleep((unsigned)seconds);
        t1 = mono_ns(), c1 = cpu_now();
        p1 = atomic_load(&n_probes), s1 = atomic_load(&n_success);
        printf("probes: %.0f/s (%.1f%% successes)\n", (double)(p1 - p0) * 1e9 / (double)(t1 - t0),
               p1 > p0 ? 100.0 * (double)(s1 - s0) / (double)(p1 - p0) : 0.0);
        printf("cpu: %.2f%% of one core (target < 3%%): user %.2f%%, system %.2f%%\n",
               100.0 * (double)(c1.user_ns - c0.user_ns + c1.sys_ns - c0.sys_ns) /
                       (double)(t1 - t0),
               100.0 * (double)(c1.user_ns - c0.user_ns) / (double)(t1 - t0),
               100.0 * (double)(c1.sys_ns - c0.sys_ns) / (double)(t1 - t0));
        kc_prober_manager_free(m);
        kc_prober_free(prober);
        kc_sim_free(sim);
        kill(listener, SIGKILL);
        waitpid(listener, NULL, 0);
        for (size_t i = 0; i < n_pods; i++) {
                free(pods[i].sandbox_id);
                free(pods[i].container_id);
                kc_api_pod_unref(pods[i].pod);
        }
        free(pods);
        return 0;
}
