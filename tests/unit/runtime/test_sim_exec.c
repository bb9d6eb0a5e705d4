/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The simulated runtime's record of what it was sent (kc_sim_sandbox_config,
 * kc_sim_container_config: every field of the v1 spec's CRI configs, issue
 * 14) and its ExecSync: the busybox-like commands on the container's own
 * filesystem, envs, working directory, mounts shared by host path, a
 * read-only root, the container's command acting on its files, sleeps on
 * the fake clock bounded by the timeout, and containerd's errors.
 */
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
#include <unistd.h>
#include <cmocka.h>

#include "core/arena.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "fixture.h"
#include "kc_test.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"
#include "runtime/sim.h"

struct fixture {
        struct kc_clock *clock;
        struct kc_sim *sim;
        struct kc_runtime_service svc;
        char *sb;
};

static const struct kc_label sb_labels[] = {
        { KC_LABEL_POD_UID, "uid-1" },
        { KC_LABEL_POD_NAME, "web" },
        { KC_LABEL_POD_NAMESPACE, "default" },
};
static const char *const dns_servers[] = { "10.96.0.10" };
static const char *const dns_searches[] = { "default.svc.cluster.local" };
static const struct kc_cri_dns_config dns = { dns_servers, 1, dns_searches, 1, NULL, 0 };
static const struct kc_cri_port_mapping ports[] = { { KC_CRI_PROTOCOL_UDP, 53, 5353, "0.0.0.0" } };
static const int64_t groups[] = { 10, 20 };
static const struct kc_label sysctls[] = { { "net.ipv4.ip_forward", "1" } };

static const struct kc_pod_sandbox_config sandbox_cfg = {
        .metadata = { .name = "web", .uid = "uid-1", .namespace = "default", .attempt = 1 },
        .hostname = "web-host",
        .log_directory = "/var/log/pods/default_web_uid-1",
        .dns_config = &dns,
        .port_mappings = ports,
        .n_port_mappings = 1,
        .labels = sb_labels,
        .n_labels = 3,
        .cgroup_parent = "/kubepods/poduid-1",
        .security = { .namespace_options = { .pid = KC_CRI_NAMESPACE_CONTAINER },
                      .run_as_user = { true, 1000 },
                      .supplemental_groups = groups,
                      .n_supplemental_groups = 2,
                      .seccomp = { true, KC_CRI_PROFILE_LOCALHOST, "prof.json" } },
        .sysctls = sysctls,
        .n_sysctls = 1,
};

static int setup_with(void **state, bool record)
{
        struct fixture *f = calloc(1, sizeof(*f));
        struct kc_runtime_error err = { 0 };

        assert_non_null(f);
        sim_env_new(&f->clock, &f->sim, "busybox");
        assert_int_equal(kc_sim_record_configs(f->sim, record), 0);
        f->svc = kc_sim_service(f->sim);
        assert_int_equal(f->svc.ops->run_pod_sandbox(f->svc.self, &sandbox_cfg, &f->sb, &err), 0);
        *state = f;
        return 0;
}

static int setup(void **state)
{
        return setup_with(state, false);
}

/* The sim records the configs it is sent (kc_sim_record_configs), from the sandbox on. */
static int setup_recording(void **state)
{
        return setup_with(state, true);
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        free(f->sb);
        sim_env_free(f->clock, f->sim);
        free(f);
        return 0;
}

/* Creates and starts a container of @p cfg (name, image and sandbox config filled in). */
static char *start(struct fixture *f, struct kc_container_config cfg)
{
        struct kc_runtime_error err = { 0 };
        char *id = NULL;

        if (!cfg.metadata.name)
                cfg.metadata.name = "app";
        cfg.image = "busybox";
        assert_int_equal(
                f->svc.ops->create_container(f->svc.self, f->sb, &cfg, &sandbox_cfg, &id, &err), 0);
        assert_int_equal(f->svc.ops->start_container(f->svc.self, id, &err), 0);
        return id;
}

struct exec_out {
        int r;
        int32_t code;
        char out[1024], err[1024];
        struct kc_runtime_error e;
};

/* ExecSync of @p argv (NULL-terminated) in @p id with @p timeout_s. */
static struct exec_out exec_v(struct fixture *f, const char *id, int64_t timeout_s,
                              const char *const *argv)
{
        struct kc_exec_sync_result x = { 0 };
        struct exec_out o = { 0 };
        size_t argc = 0;

        while (argv[argc])
                argc++;
        o.r = f->svc.ops->exec_sync(f->svc.self, id, argv, argc, timeout_s, &x, &o.e);
        if (o.r == 0) {
                assert_non_null(x.out);
                assert_non_null(x.err);
                assert_int_equal(strlen(x.out), x.n_out);
                snprintf(o.out, sizeof(o.out), "%s", x.out);
                snprintf(o.err, sizeof(o.err), "%s", x.err);
                o.code = x.exit_code;
        }
        kc_exec_sync_result_done(&x);
        return o;
}

#define EXEC(f, id, ...) exec_v((f), (id), 0, (const char *const[]){ __VA_ARGS__, NULL })
#define SH(f, id, script) EXEC(f, id, "/bin/sh", "-c", script)

/* Issue 14: every config field is kept, deep-copied, and handed back. */
static void test_records_configs(void **state)
{
        static const char *const cmd[] = { "sh", "-c" };
        static const char *const args[] = { "sleep 3600" };
        static const struct kc_label envs[] = { { "A", "1" }, { "B", "two" } };
        static const struct kc_cri_mount mounts[] = {
                { "/data", "/host/data", true, true, KC_CRI_PROPAGATION_BIDIRECTIONAL },
        };
        static const char *const add[] = { "NET_ADMIN" };
        static const char *const masked[] = { "/proc/kcore" };
        struct fixture *f = *state;
        struct kc_sim_container_config cc = { 0 };
        struct kc_sim_sandbox_config sc = { 0 };
        char *id;

        /* The caller's strings die right after the call: the sim copied them. */
        char *wd = strdup("/srv/app");
        id = start(f, (struct kc_container_config){
                              .command = cmd,
                              .n_command = 2,
                              .args = args,
                              .n_args = 1,
                              .working_dir = wd,
                              .envs = envs,
                              .n_envs = 2,
                              .mounts = mounts,
                              .n_mounts = 1,
                              .tty = true,
                              .has_resources = true,
                              .resources = { .cpu_shares = 512,
                                             .cpu_quota = 20000,
                                             .cpu_period = 100000,
                                             .memory_limit_in_bytes = 1 << 26,
                                             .oom_score_adj = 1000,
                                             .cpuset_cpus = "0" },
                              .has_security = true,
                              .security = { .has_capabilities = true,
                                            .capabilities = { .add = add, .n_add = 1 },
                                            .run_as_user = { true, 0 },
                                            .readonly_rootfs = true,
                                            .no_new_privs = true,
                                            .masked_paths = masked,
                                            .n_masked_paths = 1 },
                      });
        memset(wd, 'x', strlen(wd));
        free(wd);

        assert_int_equal(kc_sim_container_config(f->sim, id, &cc), 0);
        assert_string_equal(cc.config.metadata.name, "app");
        assert_int_equal(cc.config.n_command, 2);
        assert_string_equal(cc.config.args[0], "sleep 3600");
        assert_string_equal(cc.config.working_dir, "/srv/app");
        assert_int_equal(cc.config.n_envs, 2);
        assert_string_equal(cc.config.envs[1].key, "B");
        assert_string_equal(cc.config.envs[1].value, "two");
        assert_int_equal(cc.config.n_mounts, 1);
        assert_string_equal(cc.config.mounts[0].host_path, "/host/data");
        assert_true(cc.config.mounts[0].readonly);
        assert_true(cc.config.mounts[0].selinux_relabel);
        assert_int_equal(cc.config.mounts[0].propagation, KC_CRI_PROPAGATION_BIDIRECTIONAL);
        assert_true(cc.config.tty);
        assert_true(cc.config.has_resources);
        assert_int_equal(cc.config.resources.cpu_shares, 512);
        assert_int_equal(cc.config.resources.cpu_quota, 20000);
        assert_int_equal(cc.config.resources.cpu_period, 100000);
        assert_int_equal(cc.config.resources.memory_limit_in_bytes, 1 << 26);
        assert_int_equal(cc.config.resources.oom_score_adj, 1000);
        assert_string_equal(cc.config.resources.cpuset_cpus, "0");
        assert_true(cc.config.has_security);
        assert_string_equal(cc.config.security.capabilities.add[0], "NET_ADMIN");
        assert_true(cc.config.security.run_as_user.set);
        assert_true(cc.config.security.readonly_rootfs);
        assert_true(cc.config.security.no_new_privs);
        assert_string_equal(cc.config.security.masked_paths[0], "/proc/kcore");
        assert_true(cc.has_sandbox_config);
        assert_string_equal(cc.sandbox_config.hostname, "web-host");
        kc_runtime_result_done(&cc);

        assert_int_equal(kc_sim_sandbox_config(f->sim, f->sb, &sc), 0);
        assert_string_equal(sc.config.metadata.uid, "uid-1");
        assert_string_equal(sc.config.log_directory, "/var/log/pods/default_web_uid-1");
        assert_non_null(sc.config.dns_config);
        assert_string_equal(sc.config.dns_config->servers[0], "10.96.0.10");
        assert_string_equal(sc.config.dns_config->searches[0], "default.svc.cluster.local");
        assert_int_equal(sc.config.n_port_mappings, 1);
        assert_int_equal(sc.config.port_mappings[0].protocol, KC_CRI_PROTOCOL_UDP);
        assert_int_equal(sc.config.port_mappings[0].host_port, 5353);
        assert_string_equal(sc.config.port_mappings[0].host_ip, "0.0.0.0");
        assert_string_equal(sc.config.cgroup_parent, "/kubepods/poduid-1");
        assert_int_equal(sc.config.security.namespace_options.pid, KC_CRI_NAMESPACE_CONTAINER);
        assert_int_equal(sc.config.security.run_as_user.v, 1000);
        assert_int_equal(sc.config.security.n_supplemental_groups, 2);
        assert_int_equal(sc.config.security.supplemental_groups[1], 20);
        assert_int_equal(sc.config.security.seccomp.type, KC_CRI_PROFILE_LOCALHOST);
        assert_string_equal(sc.config.security.seccomp.localhost_ref, "prof.json");
        assert_string_equal(sc.config.sysctls[0].key, "net.ipv4.ip_forward");
        kc_runtime_result_done(&sc);

        /* Unknown ids, and objects without a CRI config. */
        assert_int_equal(kc_sim_container_config(f->sim, "nope", &cc), -ENOENT);
        assert_int_equal(kc_sim_sandbox_config(f->sim, "nope", &sc), -ENOENT);
        assert_null(cc.arena);
        assert_int_equal(kc_sim_container_config(f->sim, NULL, &cc), -EINVAL);
        free(id);
}

/*
 * Issue 18: by default the sim keeps no copy of the configs (kilobytes a
 * pod), only what exec reads, which it still honours: envs, working dir,
 * the sandbox's hostname, run-as ids, the read-only root and the mounts.
 */
static void test_configs_not_recorded_by_default(void **state)
{
        static const struct kc_label envs[] = { { "A", "1" } };
        static const struct kc_cri_mount mounts[] = { { .container_path = "/data",
                                                        .host_path = "/host/data-18" } };
        struct fixture *f = *state;
        struct kc_sim_container_config cc = { 0 };
        struct kc_sim_sandbox_config sc = { 0 };
        struct exec_out o;
        char *wd = strdup("/srv/app"), *id;

        id = start(f, (struct kc_container_config){
                              .command = (const char *const[]){ "sleep", "3600" },
                              .n_command = 2,
                              .working_dir = wd,
                              .envs = envs,
                              .n_envs = 1,
                              .mounts = mounts,
                              .n_mounts = 1,
                              .has_security = true,
                              .security = { .run_as_user = { true, 1000 },
                                            .run_as_group = { true, 3000 },
                                            .readonly_rootfs = true },
                      });
        memset(wd, 'x', strlen(wd));
        free(wd);
        assert_int_equal(kc_sim_container_config(f->sim, id, &cc), -ENODATA);
        assert_int_equal(kc_sim_sandbox_config(f->sim, f->sb, &sc), -ENODATA);
        assert_null(cc.arena);
        assert_null(sc.arena);

        o = SH(f, id, "echo $A $HOSTNAME; pwd; hostname; id; cat /etc/hostname");
        assert_int_equal(o.code, 0);
        assert_string_equal(o.out, "1 web-host\n/srv/app\nweb-host\nuid=1000 gid=3000\nweb-host\n");
        o = SH(f, id, "touch /x");
        assert_int_not_equal(o.code, 0);
        assert_non_null(strstr(o.err, "Read-only file system"));
        o = SH(f, id, "echo hi > /data/f && cat /host/data-18/f; cat /data/f");
        assert_string_equal(o.out, "hi\n");
        free(id);
}

/* Issue 14: printenv and pwd see the container's envs and working directory. */
static void test_exec_env_and_cwd(void **state)
{
        static const struct kc_label envs[] = { { "GREETING", "hello world" },
                                                { "EMPTY", "" },
                                                { "GREETING", "again" } };
        struct fixture *f = *state;
        struct exec_out o;
        char *id = start(f, (struct kc_container_config){
                                    .envs = envs, .n_envs = 3, .working_dir = "/srv/app" });
        char *plain = start(f, (struct kc_container_config){ .metadata.name = "plain" });

        o = EXEC(f, id, "printenv", "GREETING");
        assert_int_equal(o.r, 0);
        assert_int_equal(o.code, 0);
        assert_string_equal(o.out, "again\n"); /* the later one wins */
        o = EXEC(f, id, "printenv", "NOPE");
        assert_int_equal(o.code, 1);
        assert_string_equal(o.out, "");
        o = EXEC(f, id, "printenv");
        assert_string_equal(o.out,
                            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
                            "HOSTNAME=web-host\nEMPTY=\nGREETING=again\nHOME=/root\n");
        o = EXEC(f, id, "pwd");
        assert_string_equal(o.out, "/srv/app\n");
        o = EXEC(f, plain, "pwd");
        assert_string_equal(o.out, "/\n");
        /* The runtime made the working directory. */
        o = EXEC(f, id, "test", "-d", "/srv/app");
        assert_int_equal(o.code, 0);
        o = SH(f, id, "echo \"$GREETING\" ${EMPTY}x '$GREETING'; cd /tmp && pwd");
        assert_string_equal(o.out, "again x $GREETING\n/tmp\n");
        o = EXEC(f, id, "hostname");
        assert_string_equal(o.out, "web-host\n");
        o = EXEC(f, id, "cat", "/etc/hostname");
        assert_string_equal(o.out, "web-host\n");
        o = EXEC(f, id, "id", "-u");
        assert_string_equal(o.out, "0\n");
        free(id);
        free(plain);
}

/* Issue 14: files, exit codes and messages as busybox's. */
static void test_exec_busybox(void **state)
{
        struct fixture *f = *state;
        struct exec_out o;
        char *id = start(f, (struct kc_container_config){ 0 });

        o = EXEC(f, id, "true");
        assert_int_equal(o.code, 0);
        o = EXEC(f, id, "false");
        assert_int_equal(o.code, 1);
        o = SH(f, id, "nginx -g 'daemon off;'");
        assert_int_equal(o.r, 0);
        assert_int_equal(o.code, 127);
        assert_string_equal(o.err, "sh: nginx: not found\n");
        /* Run directly, a missing program does not start (runc through containerd). */
        o = EXEC(f, id, "nginx", "-g", "daemon off;");
        assert_int_equal(o.r, -EIO);
        assert_int_equal(o.e.code, KC_RUNTIME_UNKNOWN);
        assert_non_null(strstr(o.e.message, "OCI runtime exec failed: exec failed: unable to "
                                            "start container process: exec: \"nginx\": "
                                            "executable file not found in $PATH: unknown"));
        o = EXEC(f, id, "cat", "/nope");
        assert_int_equal(o.code, 1);
        assert_string_equal(o.err, "cat: can't open '/nope': No such file or directory\n");
        o = SH(f, id, "echo one > /tmp/f && echo two >> /tmp/f; cat /tmp/f");
        assert_int_equal(o.code, 0);
        assert_string_equal(o.out, "one\ntwo\n");
        o = SH(f, id, "touch /tmp/a; mkdir -p /tmp/d/e; ls /tmp");
        assert_string_equal(o.out, "a\nd\nf\n");
        o = EXEC(f, id, "test", "-f", "/tmp/a");
        assert_int_equal(o.code, 0);
        o = EXEC(f, id, "test", "-f", "/tmp/d");
        assert_int_equal(o.code, 1);
        o = EXEC(f, id, "[", "-e", "/tmp/d/e", "]");
        assert_int_equal(o.code, 0);
        o = EXEC(f, id, "test", "-e", "/tmp/zz");
        assert_int_equal(o.code, 1);
        o = SH(f, id, "rm /tmp/a && test -e /tmp/a || echo gone");
        assert_string_equal(o.out, "gone\n");
        o = SH(f, id, "touch /nodir/x");
        assert_int_equal(o.code, 1);
        assert_string_equal(o.err, "touch: /nodir/x: No such file or directory\n");
        o = SH(f, id, "exit 3; echo never");
        assert_int_equal(o.code, 3);
        assert_string_equal(o.out, "");
        o = SH(f, id, "false && echo no; echo yes");
        assert_string_equal(o.out, "yes\n");
        o = SH(f, id, "cat /nope 2>&1");
        assert_string_equal(o.out, "cat: can't open '/nope': No such file or directory\n");
        o = SH(f, id, "cat /nope 2>/dev/null");
        assert_string_equal(o.err, "");
        o = SH(f, id, "sh -c 'echo nested' && echo after");
        assert_string_equal(o.out, "nested\nafter\n");
        o = SH(f, id, "echo 'unterminated");
        assert_int_equal(o.code, 2);
        o = SH(f, id, "sleep abc");
        assert_int_equal(o.code, 1);
        assert_string_equal(o.err, "sleep: invalid number 'abc'\n");
        o = EXEC(f, id, "ls", "/nope");
        assert_int_equal(o.code, 1);
        assert_string_equal(o.err, "ls: /nope: No such file or directory\n");
        free(id);
}

/* Issue 14: mounts lead to one store by host path; a read-only root refuses writes. */
static void test_exec_mounts_and_readonly_root(void **state)
{
        static const struct kc_cri_mount shared[] = {
                { "/data", "/var/lib/cubelet/pods/uid-1/volumes/kubernetes.io~empty-dir/d", false,
                  false, KC_CRI_PROPAGATION_PRIVATE },
                { "/cfg", "/nonexistent-host-dir/cfg", true, false, KC_CRI_PROPAGATION_PRIVATE },
        };
        static const struct kc_cri_mount other[] = {
                { "/other/data", "/var/lib/cubelet/pods/uid-1/volumes/kubernetes.io~empty-dir/d",
                  false, false, KC_CRI_PROPAGATION_PRIVATE },
        };
        struct fixture *f = *state;
        struct exec_out o;
        char *a = start(f, (struct kc_container_config){
                                   .mounts = shared,
                                   .n_mounts = 2,
                                   .has_security = true,
                                   .security.readonly_rootfs = true,
                           });
        char *b = start(f, (struct kc_container_config){
                                   .metadata.name = "b", .mounts = other, .n_mounts = 1 });

        o = SH(f, a, "echo shared > /data/file");
        assert_int_equal(o.code, 0);
        o = EXEC(f, b, "cat", "/other/data/file");
        assert_string_equal(o.out, "shared\n");
        o = EXEC(f, b, "ls", "/other/data");
        assert_string_equal(o.out, "file\n");
        o = EXEC(f, a, "test", "-d", "/cfg");
        assert_int_equal(o.code, 0);

        /* The root is read-only; a read-only mount too; a writable mount is not. */
        o = EXEC(f, a, "touch", "/newfile");
        assert_int_equal(o.code, 1);
        assert_string_equal(o.err, "touch: /newfile: Read-only file system\n");
        o = SH(f, a, "echo x > /tmp/x");
        assert_int_equal(o.code, 1);
        assert_string_equal(o.err, "sh: can't create /tmp/x: Read-only file system\n");
        o = EXEC(f, a, "mkdir", "/cfg/sub");
        assert_string_equal(o.err,
                            "mkdir: can't create directory '/cfg/sub': Read-only file system\n");
        o = EXEC(f, a, "touch", "/data/ok");
        assert_int_equal(o.code, 0);
        o = EXEC(f, b, "touch", "/newfile");
        assert_int_equal(o.code, 0);

        /* A mount's file the sim never wrote is read from the host. */
        char dir[] = "/tmp/kc-sim-exec-XXXXXX", path[64];
        FILE *fp;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/hosts", dir);
        fp = fopen(path, "w");
        assert_non_null(fp);
        fputs("127.0.0.1 localhost\n", fp);
        fclose(fp);
        const struct kc_cri_mount hosts[] = {
                { "/etc/hosts", path, false, false, KC_CRI_PROPAGATION_PRIVATE },
        };
        char *c = start(f, (struct kc_container_config){
                                   .metadata.name = "c", .mounts = hosts, .n_mounts = 1 });

        o = EXEC(f, c, "cat", "/etc/hosts");
        assert_string_equal(o.out, "127.0.0.1 localhost\n");
        o = EXEC(f, c, "test", "-f", "/etc/hosts");
        assert_int_equal(o.code, 0);
        unlink(path);
        rmdir(dir);
        free(a);
        free(b);
        free(c);
}

/* Issue 14: the container's own command acts on its files, on the clock. */
static void test_own_command_files(void **state)
{
        static const char *const cmd[] = { "sh", "-c",
                                           "touch /tmp/ready; sleep 10; echo late > /tmp/late; "
                                           "sleep 3600" };
        struct fixture *f = *state;
        struct exec_out o;
        char *id = start(f, (struct kc_container_config){ .command = cmd, .n_command = 3 });

        o = EXEC(f, id, "cat", "/tmp/ready");
        assert_int_equal(o.code, 0);
        o = EXEC(f, id, "test", "-e", "/tmp/late");
        assert_int_equal(o.code, 1);
        assert_int_equal(kc_fake_clock_advance(f->clock, 10 * KC_NSEC_PER_SEC), 0);
        o = EXEC(f, id, "cat", "/tmp/late");
        assert_string_equal(o.out, "late\n");
        /* Once, not at every look: an exec's rm stays. */
        o = SH(f, id, "rm /tmp/late; test -e /tmp/late");
        assert_int_equal(o.code, 1);
        o = EXEC(f, id, "test", "-e", "/tmp/late");
        assert_int_equal(o.code, 1);
        free(id);
}

struct exec_call {
        struct fixture *f;
        const char *id;
        const char *const *argv;
        int64_t timeout_s;
        struct exec_out o;
};

static void *exec_main(void *arg)
{
        struct exec_call *c = arg;

        c->o = exec_v(c->f, c->id, c->timeout_s, c->argv);
        return NULL;
}

/* Issue 14: sleep on the clock, bounded by the timeout: DEADLINE_EXCEEDED as containerd. */
static void test_exec_sleep_and_timeout(void **state)
{
        static const char *const sleep2[] = { "sh", "-c", "sleep 2; echo done", NULL };
        struct fixture *f = *state;
        char *id = start(f, (struct kc_container_config){ 0 });
        struct exec_call c = { .f = f, .id = id, .argv = sleep2, .timeout_s = 5 };
        struct kc_sim_stats st;
        pthread_t t;

        assert_int_equal(pthread_create(&t, NULL, exec_main, &c), 0);
        /* Each wait is on the clock's sleepers, not on the sim's delayed count:
         * the exec is counted before its sleep is registered, and an advance
         * in between would not end that sleep (the join would hang). */
        assert_true(KC_TEST_WAIT_UNTIL(kc_fake_clock_sleepers(f->clock) == 1, 5000));
        assert_int_equal(kc_sim_get_stats(f->sim, &st), 0);
        assert_int_equal(st.delayed_now, 1);
        assert_int_equal(kc_fake_clock_advance(f->clock, 2 * KC_NSEC_PER_SEC), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(c.o.r, 0);
        assert_string_equal(c.o.out, "done\n");

        c.timeout_s = 1;
        assert_int_equal(pthread_create(&t, NULL, exec_main, &c), 0);
        assert_true(KC_TEST_WAIT_UNTIL(kc_fake_clock_sleepers(f->clock) == 1, 5000));
        assert_int_equal(kc_fake_clock_advance(f->clock, KC_NSEC_PER_SEC), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(c.o.r, -ETIMEDOUT);
        assert_int_equal(c.o.e.code, KC_RUNTIME_DEADLINE_EXCEEDED);
        assert_string_equal(c.o.e.message, "failed to exec in container: timeout 1s exceeded: "
                                           "context deadline exceeded");

        /* sleep infinity: until the timeout. */
        static const char *const forever[] = { "sleep", "infinity", NULL };

        c.argv = forever;
        assert_int_equal(pthread_create(&t, NULL, exec_main, &c), 0);
        assert_true(KC_TEST_WAIT_UNTIL(kc_fake_clock_sleepers(f->clock) == 1, 5000));
        assert_int_equal(kc_fake_clock_advance(f->clock, KC_NSEC_PER_SEC), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(c.o.e.code, KC_RUNTIME_DEADLINE_EXCEEDED);

        /* The container stops while the exec sleeps: its process is killed. */
        c.argv = sleep2;
        c.timeout_s = 0;
        assert_int_equal(pthread_create(&t, NULL, exec_main, &c), 0);
        assert_true(KC_TEST_WAIT_UNTIL(kc_fake_clock_sleepers(f->clock) == 1, 5000));
        assert_int_equal(f->svc.ops->stop_container(f->svc.self, id, 0, &c.o.e), 0);
        assert_int_equal(kc_fake_clock_advance(f->clock, 2 * KC_NSEC_PER_SEC), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(c.o.r, 0);
        assert_int_equal(c.o.code, 137);
        free(id);
}

/* Issue 14: exec where nothing runs fails as containerd 1.6 does. */
static void test_exec_errors(void **state)
{
        static const char *const cmd[] = { "sh", "-c", "exit 0" };
        struct fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        struct exec_out o;
        char *done = start(f, (struct kc_container_config){ .command = cmd, .n_command = 3 });
        char *created = NULL;

        o = EXEC(f, "nope", "true");
        assert_int_equal(o.r, -ENOENT);
        assert_int_equal(o.e.code, KC_RUNTIME_NOT_FOUND);
        assert_string_equal(o.e.message,
                            "an error occurred when try to find container \"nope\": not found");
        o = EXEC(f, done, "true");
        assert_int_equal(o.e.code, KC_RUNTIME_UNKNOWN);
        assert_string_equal(o.e.message,
                            "failed to exec in container: container is in CONTAINER_EXITED state");
        assert_int_equal(
                f->svc.ops->create_container(
                        f->svc.self, f->sb,
                        &(struct kc_container_config){ .metadata.name = "c", .image = "busybox" },
                        NULL, &created, &err),
                0);
        o = EXEC(f, created, "true");
        assert_string_equal(o.e.message,
                            "failed to exec in container: container is in CONTAINER_CREATED state");
        o = exec_v(f, done, 0, (const char *const[]){ NULL });
        assert_int_equal(o.r, -EINVAL);
        assert_int_equal(o.e.code, KC_RUNTIME_INVALID_ARGUMENT);
        /* Faults apply to ExecSync too. */
        assert_int_equal(kc_sim_inject_fault(f->sim, "ExecSync", NULL, "boom", 1), 0);
        o = EXEC(f, done, "true");
        assert_string_equal(o.e.message, "boom");
        assert_int_equal(sim_op_count(f->sim, "ExecSync"), 5);
        free(done);
        free(created);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_records_configs, setup_recording, teardown),
                cmocka_unit_test_setup_teardown(test_configs_not_recorded_by_default, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_exec_env_and_cwd, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_busybox, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_mounts_and_readonly_root, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_own_command_files, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_sleep_and_timeout, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_errors, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
