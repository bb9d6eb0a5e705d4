/* SPDX-License-Identifier: Apache-2.0 */
/*
 * generateContainerConfig and generatePodSandboxConfig (runtime/sync_pod.c,
 * runtime/container_linux.c): SyncPod over the simulated runtime with a
 * wrapper that records each CreateContainer and RunPodSandbox config, and
 * a fake RuntimeHelper. Also the QoS class, CPU shares and quota, OOM score
 * and $(VAR) expansion tables (runtime/qos.c, runtime/expansion.c).
 * F-SYNC-02 (issue 14: env, resources, security, ports, DNS, hostname).
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
#include <sys/stat.h>
#include <cmocka.h>

#include "container_linux.h"
#include "core/arena.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "fixture.h"
#include "runtime/api_pod.h"
#include "runtime/error.h"
#include "runtime/expansion.h"
#include "runtime/manager.h"
#include "runtime/qos.h"
#include "runtime/runtime_helper.h"
#include "runtime/runtime_service.h"
#include "runtime/sim.h"
#include "runtime/sync_pod.h"

#define MI (INT64_C(1024) * 1024)
#define GI (MI * 1024)

/* ---------------------------------------------------------------- tables */

static struct kc_api_resource res_(const char *name, int64_t milli)
{
        return (struct kc_api_resource){ name, { "x", milli } };
}

static void test_cpu_shares_and_quota(void **state)
{
        static const struct {
                int64_t milli, shares, quota;
        } t[] = {
                { 0, 2, 0 },
                { 1, 2, 1000 },
                { 5, 5, 1000 }, /* 500 µs → min 1000 */
                { 100, 102, 10000 },
                { 250, 256, 25000 },
                { 1000, 1024, 100000 },
                { 1500, 1536, 150000 },
                { 256000, 262144, 25600000 },
                { 300000, 262144, 30000000 }, /* shares capped at 262144 */
        };

        (void)state;
        for (size_t i = 0; i < KC_ELEMENTSOF(t); i++) {
                assert_int_equal(kc_milli_cpu_to_shares(t[i].milli), t[i].shares);
                assert_int_equal(kc_milli_cpu_to_quota(t[i].milli, KC_CPU_QUOTA_PERIOD_US),
                                 t[i].quota);
        }
}

static void test_pod_qos(void **state)
{
        const struct kc_api_resource cpu1[] = { res_("cpu", 1000) };
        const struct kc_api_resource both[] = { res_("cpu", 1000), res_("memory", 64 * MI * 1000) };
        const struct kc_api_resource both_less[] = { res_("cpu", 500),
                                                     res_("memory", 64 * MI * 1000) };
        const struct kc_api_resource zero[] = { res_("cpu", 0) };
        const struct kc_api_resource storage[] = { res_("ephemeral-storage", GI * 1000) };
        struct kc_api_container c[2] = { { .name = "a" }, { .name = "b" } };
        struct kc_api_pod pod = { .containers = c, .n_containers = 2 };

        (void)state;
        /* Nothing, a zero quantity, or only resources other than cpu and memory: BestEffort. */
        assert_int_equal(kc_pod_qos_get(&pod), KC_POD_QOS_BEST_EFFORT);
        c[0].resources = (struct kc_api_resources){ .requests = zero, .n_requests = 1 };
        assert_int_equal(kc_pod_qos_get(&pod), KC_POD_QOS_BEST_EFFORT);
        c[0].resources = (struct kc_api_resources){ .limits = storage, .n_limits = 1 };
        assert_int_equal(kc_pod_qos_get(&pod), KC_POD_QOS_BEST_EFFORT);
        /* A request alone: Burstable. */
        c[0].resources = (struct kc_api_resources){ .requests = cpu1, .n_requests = 1 };
        assert_int_equal(kc_pod_qos_get(&pod), KC_POD_QOS_BURSTABLE);
        /* Limits on both in every container, requests defaulted to them: Guaranteed. */
        c[0].resources = (struct kc_api_resources){ .limits = both, .n_limits = 2 };
        assert_int_equal(kc_pod_qos_get(&pod), KC_POD_QOS_BURSTABLE); /* b has none */
        c[1].resources = (struct kc_api_resources){ .limits = both, .n_limits = 2 };
        assert_int_equal(kc_pod_qos_get(&pod), KC_POD_QOS_GUARANTEED);
        /* A request below its limit: Burstable. */
        c[1].resources = (struct kc_api_resources){
                .limits = both, .n_limits = 2, .requests = both_less, .n_requests = 2
        };
        assert_int_equal(kc_pod_qos_get(&pod), KC_POD_QOS_BURSTABLE);
        /* A cpu limit only: Burstable. */
        c[1].resources = (struct kc_api_resources){ .limits = cpu1, .n_limits = 1 };
        assert_int_equal(kc_pod_qos_get(&pod), KC_POD_QOS_BURSTABLE);
        /* Init containers count too. */
        c[1].resources = (struct kc_api_resources){ .limits = both, .n_limits = 2 };
        struct kc_api_container init = { .name = "i" };
        pod.init_containers = &init;
        pod.n_init_containers = 1;
        assert_int_equal(kc_pod_qos_get(&pod), KC_POD_QOS_BURSTABLE);
        assert_string_equal(kc_pod_qos_to_string(KC_POD_QOS_BEST_EFFORT), "BestEffort");
        assert_string_equal(kc_pod_qos_to_string(KC_POD_QOS_GUARANTEED), "Guaranteed");
        assert_string_equal(kc_pod_qos_to_string(KC_POD_QOS_BURSTABLE), "Burstable");
}

static void test_oom_score_adjust(void **state)
{
        const int64_t cap = 10 * GI;
        const struct kc_api_resource mem10[] = { res_("memory", cap / 10 * 1000) };
        const struct kc_api_resource mem_tiny[] = { res_("memory", 1000) };
        const struct kc_api_resource mem_all[] = { res_("memory", cap * 1000) };
        const struct kc_api_resource mem_more[] = { res_("memory", 2 * cap * 1000) };
        const struct kc_api_resource mem512[] = { res_("memory", 512 * MI * 1000) };
        const struct kc_api_resource both[] = { res_("cpu", 100), res_("memory", 64 * MI * 1000) };
        struct kc_api_container c = { .name = "a" };
        struct kc_api_container side = { .name = "s", .restart_policy_always = true };
        struct kc_api_pod pod = { .containers = &c, .n_containers = 1 };

        (void)state;
        assert_int_equal(kc_container_oom_score_adjust(&pod, &c, cap), 1000);
        c.resources = (struct kc_api_resources){ .limits = both, .n_limits = 2 };
        assert_int_equal(kc_container_oom_score_adjust(&pod, &c, cap), -997);
        c.resources = (struct kc_api_resources){ .requests = mem10, .n_requests = 1 };
        assert_int_equal(kc_container_oom_score_adjust(&pod, &c, cap), 900);
        c.resources = (struct kc_api_resources){ .requests = mem_tiny, .n_requests = 1 };
        assert_int_equal(kc_container_oom_score_adjust(&pod, &c, cap), 999);
        c.resources = (struct kc_api_resources){ .requests = mem_all, .n_requests = 1 };
        assert_int_equal(kc_container_oom_score_adjust(&pod, &c, cap), 3);
        c.resources = (struct kc_api_resources){ .requests = mem_more, .n_requests = 1 };
        assert_int_equal(kc_container_oom_score_adjust(&pod, &c, cap), 3);
        /* A sidecar goes no higher than the app container with the least memory. */
        c.resources = (struct kc_api_resources){ .requests = mem10, .n_requests = 1 };
        side.resources = (struct kc_api_resources){ .requests = mem512, .n_requests = 1 };
        pod.init_containers = &side;
        pod.n_init_containers = 1;
        assert_int_equal(kc_container_oom_score_adjust(&pod, &side, cap), 900);
        side.restart_policy_always = false;
        assert_int_equal(kc_container_oom_score_adjust(&pod, &side, cap), 950);
        /* A static pod of class system-node-critical: -997 whatever its QoS. */
        pod.static_pod = true;
        pod.priority_class_name = "system-node-critical";
        assert_int_equal(kc_container_oom_score_adjust(&pod, &c, cap), -997);
        pod.priority_class_name = "system-cluster-critical";
        assert_int_equal(kc_container_oom_score_adjust(&pod, &c, cap), 900);
}

static void test_expansion(void **state)
{
        const struct kc_label vars[] = {
                { "VAR_A", "A" },    { "VAR_B", "B" },  { "VAR_C", "C" }, { "VAR_REF", "$(VAR_A)" },
                { "VAR_EMPTY", "" }, { "VAR_B", "B2" }, /* a later duplicate wins */
        };
        static const struct {
                const char *in, *out;
        } t[] = {
                { "$(VAR_A)", "A" },
                { "___$(VAR_B)___", "___B2___" },
                { "$(VAR_A)-$(VAR_C)", "A-C" },
                { "$(VAR_EMPTY)", "" },
                { "$(VAR_REF)", "$(VAR_A)" }, /* one level only */
                { "$(UNKNOWN)", "$(UNKNOWN)" },
                { "$$(VAR_A)", "$(VAR_A)" }, /* escaped */
                { "$$$(VAR_A)", "$A" },
                { "$$$$(VAR_A)", "$$(VAR_A)" },
                { "$$", "$" },
                { "$", "$" },
                { "foo$", "foo$" },
                { "$(VAR_A", "$(VAR_A" }, /* unclosed */
                { "$(VAR_A$(VAR_B)", "$(VAR_A$(VAR_B)" },
                { "$VAR_A", "$VAR_A" },
                { "$()", "$()" },
                { "f$(VAR_A)$(VAR_C)", "fAC" },
                { "((VAR_A))", "((VAR_A))" },
                { "", "" },
        };

        (void)state;
        for (size_t i = 0; i < KC_ELEMENTSOF(t); i++) {
                _cleanup_free_ char *out = kc_expand(t[i].in, vars, KC_ELEMENTSOF(vars));

                assert_non_null(out);
                if (strcmp(out, t[i].out) != 0)
                        fail_msg("expand(\"%s\") = \"%s\", want \"%s\"", t[i].in, out, t[i].out);
        }
}

/* ---------------------------------------------------------------- SyncPod */

struct fixture {
        struct kc_clock *clock;
        struct kc_sim *sim;
        struct kc_runtime_service sim_svc;
        struct kc_runtime_service_ops ops; /* the sim's, two of them recording */
        struct kc_runtime_manager *mgr;
        char containers[4][4096]; /* the CreateContainer configs of the last sync, as text */
        size_t n_containers;
        char sandbox[4096]; /* the last RunPodSandbox config, as text */
        int helper_fail;    /* GenerateRunContainerOptions fails with this */
        size_t n_helper_calls;
        char last_reason[64], last_msg[512];
        char hugepages[64]; /* a /sys/kernel/mm/hugepages of the test's own */
};

static struct fixture *the_fixture;

/* Appends to @p buf. */
static void add(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(char *buf, const char *fmt, ...)
{
        size_t n = strlen(buf);
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(buf + n, 4096 - n, fmt, ap);
        va_end(ap);
}

static void add_strs(char *buf, const char *name, const char *const *v, size_t n)
{
        add(buf, "%s=", name);
        for (size_t i = 0; i < n; i++)
                add(buf, "%s%s", i ? "," : "", v[i]);
        add(buf, ";");
}

static void add_ns(char *buf, const struct kc_cri_namespace_options *ns)
{
        add(buf, "ns=%d/%d/%d;", ns->network, ns->pid, ns->ipc);
}

static int rec_create_container(void *self, const char *sb, const struct kc_container_config *c,
                                const struct kc_pod_sandbox_config *sc, char **id,
                                struct kc_runtime_error *e)
{
        struct fixture *f = the_fixture;
        const struct kc_cri_container_security *s = &c->security;
        char *b = f->containers[f->n_containers++ % 4];

        b[0] = '\0';
        add_strs(b, "command", c->command, c->n_command);
        add_strs(b, "args", c->args, c->n_args);
        add(b, "wd=%s;env=", c->working_dir ? c->working_dir : "(null)");
        for (size_t i = 0; i < c->n_envs; i++)
                add(b, "%s=%s,", c->envs[i].key, c->envs[i].value);
        add(b, ";mounts=%zu;", c->n_mounts);
        if (c->has_resources)
                add(b,
                    "shares=%" PRId64 ";quota=%" PRId64 ";period=%" PRId64 ";mem=%" PRId64
                    ";oom=%" PRId64 ";",
                    c->resources.cpu_shares, c->resources.cpu_quota, c->resources.cpu_period,
                    c->resources.memory_limit_in_bytes, c->resources.oom_score_adj);
        if (c->has_resources) {
                add(b, "huge=");
                for (size_t i = 0; i < c->resources.n_hugepage_limits; i++)
                        add(b, "%s:%" PRIu64 ",", c->resources.hugepage_limits[i].page_size,
                            c->resources.hugepage_limits[i].limit);
                add(b, ";");
        }
        if (c->has_security) {
                add(b, "user=%s%" PRId64 ";group=%s%" PRId64 ";username=%s;",
                    s->run_as_user.set ? "" : "unset", s->run_as_user.v,
                    s->run_as_group.set ? "" : "unset", s->run_as_group.v,
                    s->run_as_username ? s->run_as_username : "");
                add(b, "priv=%d;ro=%d;nnp=%d;masked=%zu;ropaths=%zu;", s->privileged,
                    s->readonly_rootfs, s->no_new_privs, s->n_masked_paths, s->n_readonly_paths);
                if (s->has_capabilities) {
                        add_strs(b, "add", s->capabilities.add, s->capabilities.n_add);
                        add_strs(b, "drop", s->capabilities.drop, s->capabilities.n_drop);
                }
                add(b, "groups=");
                for (size_t i = 0; i < s->n_supplemental_groups; i++)
                        add(b, "%" PRId64 ",", s->supplemental_groups[i]);
                add(b, ";seccomp=%d:%d:%s;", s->seccomp.set, s->seccomp.type,
                    s->seccomp.localhost_ref ? s->seccomp.localhost_ref : "");
                add_ns(b, &s->namespace_options);
        }
        return f->sim_svc.ops->create_container(self, sb, c, sc, id, e);
}

static int rec_run_pod_sandbox(void *self, const struct kc_pod_sandbox_config *c, char **id,
                               struct kc_runtime_error *e)
{
        struct fixture *f = the_fixture;
        const struct kc_cri_sandbox_security *s = &c->security;
        char *b = f->sandbox;

        b[0] = '\0';
        add(b, "hostname=%s;", c->hostname ? c->hostname : "(null)");
        if (c->dns_config) {
                add_strs(b, "servers", c->dns_config->servers, c->dns_config->n_servers);
                add_strs(b, "searches", c->dns_config->searches, c->dns_config->n_searches);
        } else {
                add(b, "dns=none;");
        }
        add(b, "ports=");
        for (size_t i = 0; i < c->n_port_mappings; i++)
                add(b, "%d:%d:%d:%s,", c->port_mappings[i].protocol,
                    c->port_mappings[i].container_port, c->port_mappings[i].host_port,
                    c->port_mappings[i].host_ip ? c->port_mappings[i].host_ip : "");
        add(b, ";sysctls=");
        for (size_t i = 0; i < c->n_sysctls; i++)
                add(b, "%s=%s,", c->sysctls[i].key, c->sysctls[i].value);
        add(b, ";priv=%d;seccomp=%d:%d;user=%s%" PRId64 ";groups=", s->privileged, s->seccomp.set,
            s->seccomp.type, s->run_as_user.set ? "" : "unset", s->run_as_user.v);
        for (size_t i = 0; i < s->n_supplemental_groups; i++)
                add(b, "%" PRId64 ",", s->supplemental_groups[i]);
        add(b, ";cgroup=%s;", c->cgroup_parent ? c->cgroup_parent : "(null)");
        add_ns(b, &s->namespace_options);
        return f->sim_svc.ops->run_pod_sandbox(self, c, id, e);
}

static const struct kc_label helper_envs[] = {
        { "GREETING", "hello" },
        { "TARGET", "world" },
};

static int fake_options(void *self, const struct kc_api_pod *pod, const struct kc_api_container *c,
                        const char *const *pod_ips, size_t n_pod_ips, struct kc_arena *a,
                        struct kc_run_container_options *ret, char **ret_msg)
{
        struct fixture *f = self;

        (void)pod, (void)c, (void)a;
        f->n_helper_calls++;
        /* The sandbox's IP reaches the helper (status.podIP). */
        assert_int_equal(n_pod_ips, 1);
        assert_non_null(pod_ips[0]);
        if (f->helper_fail) {
                *ret_msg = strdup("couldn't get configMap default/cfg, no kubeClient defined");
                return f->helper_fail;
        }
        *ret = (struct kc_run_container_options){ .envs = helper_envs, .n_envs = 2 };
        return 0;
}

static int fake_dns(void *self, const struct kc_api_pod *pod, struct kc_arena *a,
                    struct kc_cri_dns_config *ret, bool *ret_set, char **ret_msg)
{
        static const char *const servers[] = { "10.0.0.10" };
        static const char *const searches[] = { "example.com" };

        (void)self, (void)pod, (void)a, (void)ret_msg;
        *ret = (struct kc_cri_dns_config){
                .servers = servers, .n_servers = 1, .searches = searches, .n_searches = 1
        };
        *ret_set = true;
        return 0;
}

static int fake_hostname(void *self, const struct kc_api_pod *pod, struct kc_arena *a,
                         const char **ret_hostname, const char **ret_domain, char **ret_msg)
{
        (void)self, (void)a, (void)ret_msg;
        *ret_hostname = pod->hostname ? pod->hostname : "from-helper";
        *ret_domain = NULL;
        return 0;
}

static const struct kc_runtime_helper_ops fake_helper_ops = {
        .generate_run_container_options = fake_options,
        .get_pod_dns = fake_dns,
        .generate_pod_hostname_and_domain = fake_hostname,
};

static void on_start(void *userdata, const struct kc_start_result *res)
{
        struct fixture *f = userdata;

        snprintf(f->last_reason, sizeof(f->last_reason), "%s", res->reason ? res->reason : "");
        snprintf(f->last_msg, sizeof(f->last_msg), "%s", res->message ? res->message : "");
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        struct kc_runtime_helper h = { &fake_helper_ops, f };

        assert_non_null(f);
        snprintf(f->hugepages, sizeof(f->hugepages), "/tmp/kc-hugepages-XXXXXX");
        assert_non_null(mkdtemp(f->hugepages));
        for (size_t i = 0; i < 3; i++) {
                static const char *const dirs[] = { "hugepages-2048kB", "hugepages-1048576kB",
                                                    "not-hugepages" };
                char path[128];

                snprintf(path, sizeof(path), "%s/%s", f->hugepages, dirs[i]);
                assert_int_equal(mkdir(path, 0755), 0);
        }
        sim_env_new(&f->clock, &f->sim, "app:1");
        f->sim_svc = kc_sim_service(f->sim);
        f->ops = *f->sim_svc.ops;
        f->ops.create_container = rec_create_container;
        f->ops.run_pod_sandbox = rec_run_pod_sandbox;
        assert_int_equal(
                kc_runtime_manager_new((struct kc_runtime_service){ &f->ops, f->sim_svc.self },
                                       f->clock, &f->mgr),
                0);
        assert_int_equal(kc_runtime_manager_set_runtime_helper(f->mgr, &h), 0);
        assert_int_equal(
                kc_runtime_manager_set_machine(f->mgr, 10 * GI, "/var/lib/kubelet", f->hugepages),
                0);
        the_fixture = f;
        *state = f;
        return 0;
}

/* Every op gets the sim as self; the two recording ones find the fixture in the_fixture. */
static int teardown(void **state)
{
        struct fixture *f = *state;

        kc_runtime_manager_free(f->mgr);
        sim_env_free(f->clock, f->sim);
        {
                char cmd[128];

                snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->hugepages);
                assert_int_equal(system(cmd), 0);
        }
        free(f);
        return 0;
}

static int sync_p(struct fixture *f, const struct kc_api_pod *pod)
{
        struct kc_sync_pod_options o = { .on_start_result = on_start, .userdata = f };
        _cleanup_free_ char *err = NULL;

        f->n_containers = 0;
        f->sandbox[0] = '\0';
        f->last_reason[0] = f->last_msg[0] = '\0';
        return kc_runtime_manager_sync_pod(f->mgr, pod, NULL, &o, &err);
}

static void assert_has(const char *text, const char *part)
{
        if (!strstr(text, part))
                fail_msg("\"%s\" not in \"%s\"", part, text);
}

static struct kc_api_pod base_pod(struct kc_api_container *c, size_t n)
{
        return (struct kc_api_pod){ .uid = "uid-1",
                                    .name = "web",
                                    .namespace = "default",
                                    .deletion_grace_s = -1,
                                    .termination_grace_s = -1,
                                    .containers = c,
                                    .n_containers = n };
}

static const char *const sh_cmd[] = { "sh", "-c", "echo $(GREETING) $$(TARGET) $(MISSING)" };
static const char *const to_args[] = { "--to=$(TARGET)" };

/* The helper's env reaches the config and expands command and args; workingDir; resources. */
static void test_env_command_resources(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_resource lim[] = { res_("cpu", 500), res_("memory", 128 * MI * 1000) };
        const struct kc_api_resource req[] = { res_("cpu", 250), res_("memory", 64 * MI * 1000) };
        struct kc_api_container c = {
                .name = "app",
                .image = "app:1",
                .image_pull_policy = KC_PULL_IF_NOT_PRESENT,
                .command = sh_cmd,
                .n_command = 3,
                .args = to_args,
                .n_args = 1,
                .working_dir = "/srv",
                .resources = { .limits = lim, .n_limits = 2, .requests = req, .n_requests = 2 },
        };
        struct kc_api_pod pod = base_pod(&c, 1);

        assert_int_equal(sync_p(f, &pod), 0);
        assert_int_equal(f->n_containers, 1);
        assert_int_equal(f->n_helper_calls, 1);
        assert_has(f->containers[0], "command=sh,-c,echo hello $(TARGET) $(MISSING);");
        assert_has(f->containers[0], "args=--to=world;");
        assert_has(f->containers[0], "wd=/srv;");
        assert_has(f->containers[0], "env=GREETING=hello,TARGET=world,;");
        /* Burstable: 1000 - 1000 x 64Mi / 10Gi = 994. */
        assert_has(f->containers[0], "shares=256;quota=50000;period=100000;mem=134217728;oom=994;");
        /* Defaults: the image's user (none: root), /proc masked, Unconfined, PID per container. */
        assert_has(f->containers[0], "user=0;group=unset0;username=;priv=0;ro=0;nnp=0;masked=12;"
                                     "ropaths=5;groups=;seccomp=1:1:;ns=0/1/0;");
}

/* A limit for every huge page size of the host: the container's, else 0 (1GB sorts first). */
static void test_hugepage_limits(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_resource lim[] = { res_("hugepages-2Mi", 4 * MI * 1000),
                                               res_("memory", 64 * MI * 1000) };
        struct kc_api_container c = { .name = "app",
                                      .image = "app:1",
                                      .image_pull_policy = KC_PULL_IF_NOT_PRESENT,
                                      .resources = { .limits = lim, .n_limits = 2 } };
        struct kc_api_pod pod = base_pod(&c, 1);
        char unit[32];

        assert_int_equal(sync_p(f, &pod), 0);
        assert_has(f->containers[0], "huge=1GB:0,2MB:4194304,;");
        kc__hugepage_unit_size(2048 * 1024, unit);
        assert_string_equal(unit, "2MB");
        kc__hugepage_unit_size(UINT64_C(1) << 30, unit);
        assert_string_equal(unit, "1GB");
        kc__hugepage_unit_size(512, unit);
        assert_string_equal(unit, "512B");
}

/* No limits: the minimum shares, no quota, no memory limit, BestEffort's 1000. */
static void test_best_effort_resources(void **state)
{
        struct fixture *f = *state;
        struct kc_api_container c = { .name = "app",
                                      .image = "app:1",
                                      .image_pull_policy = KC_PULL_IF_NOT_PRESENT };
        struct kc_api_pod pod = base_pod(&c, 1);

        assert_int_equal(sync_p(f, &pod), 0);
        assert_has(f->containers[0],
                   "shares=2;quota=0;period=100000;mem=0;oom=1000;huge=1GB:0,2MB:0,;");
        assert_has(f->containers[0], "wd=(null);");
}

static const char *const caps_add[] = { "NET_ADMIN" };
static const char *const caps_drop[] = { "ALL" };
static const int64_t sup_groups[] = { 4000 };
static const struct kc_api_sysctl sysctls[] = {
        { "net.ipv4.ip_unprivileged_port_start", "0" },
        { "kernel.shm_rmid_forced", "1" },
        { "net.ipv4.ip_unprivileged_port_start", "80" }, /* the last value of a name wins */
};

/* Pod and container security contexts merged; the sandbox's own. */
static void test_security_contexts(void **state)
{
        struct fixture *f = *state;
        struct kc_api_container c[2] = {
                { .name = "app",
                  .image = "app:1",
                  .image_pull_policy = KC_PULL_IF_NOT_PRESENT,
                  .security_context =
                          &(struct kc_api_security_context){
                                  .present = true,
                                  .run_as_user = { true, 1001 },
                                  .read_only_root_filesystem = KC_OPT_TRUE,
                                  .allow_privilege_escalation = KC_OPT_FALSE,
                                  .has_capabilities = true,
                                  .capabilities = { caps_add, 1, caps_drop, 1 },
                          } },
                { .name = "priv",
                  .image = "app:1",
                  .image_pull_policy = KC_PULL_IF_NOT_PRESENT,
                  .security_context =
                          &(struct kc_api_security_context){
                                  .present = true,
                                  .privileged = KC_OPT_TRUE,
                                  .seccomp = { "Localhost", "profiles/a.json" },
                          } },
        };
        struct kc_api_pod pod = base_pod(c, 2);

        pod.host_pid = true;
        pod.security_context = (struct kc_api_pod_security_context){
                .run_as_user = { true, 1000 },
                .run_as_group = { true, 3000 },
                .fs_group = { true, 2000 },
                .supplemental_groups = sup_groups,
                .n_supplemental_groups = 1,
                .sysctls = sysctls,
                .n_sysctls = 3,
                .seccomp = { "RuntimeDefault", NULL },
        };
        assert_int_equal(sync_p(f, &pod), 0);
        assert_int_equal(f->n_containers, 2);
        assert_has(f->containers[0], "user=1001;group=3000;username=;priv=0;ro=1;nnp=1;masked=12;"
                                     "ropaths=5;add=NET_ADMIN;drop=ALL;groups=2000,4000,;"
                                     "seccomp=1:0:;ns=0/2/0;");
        assert_has(f->containers[1], "user=1000;group=3000;username=;priv=1;ro=0;nnp=0;masked=0;"
                                     "ropaths=0;groups=2000,4000,;"
                                     "seccomp=1:2:/var/lib/kubelet/seccomp/profiles/a.json;");
        assert_has(f->sandbox, ";sysctls=net.ipv4.ip_unprivileged_port_start=80,"
                               "kernel.shm_rmid_forced=1,;priv=1;seccomp=1:0;user=1000;"
                               "groups=2000,4000,;cgroup=(null);ns=0/2/0;");
}

/* verifyRunAsNonRoot, in upstream's words, as CreateContainerConfigError. */
static void test_run_as_non_root(void **state)
{
        struct fixture *f = *state;
        struct kc_api_security_context sc = { .present = true, .run_as_non_root = KC_OPT_TRUE };
        struct kc_api_container c = {
                .name = "app",
                .image = "app:1",
                .image_pull_policy = KC_PULL_IF_NOT_PRESENT,
                .security_context = &sc,
        };
        struct kc_api_pod pod = base_pod(&c, 1);

        assert_int_equal(sync_p(f, &pod), -EPERM);
        assert_int_equal(f->n_containers, 0);
        assert_string_equal(f->last_reason, "CreateContainerConfigError");
        assert_string_equal(f->last_msg, "container has runAsNonRoot and image will run as root "
                                         "(pod: \"web_default(uid-1)\", container: app)");
        sc.run_as_user = (struct kc_opt_i64){ true, 0 };
        pod.uid = "uid-2"; /* a new pod each time: no status is given */
        assert_int_equal(sync_p(f, &pod), -EPERM);
        assert_string_equal(f->last_msg, "container's runAsUser breaks non-root policy "
                                         "(pod: \"web_default(uid-2)\", container: app)");
        /* The pod's runAsUser counts too. */
        sc.run_as_user = (struct kc_opt_i64){ 0 };
        pod.security_context.run_as_user = (struct kc_opt_i64){ true, 65534 };
        pod.uid = "uid-3";
        assert_int_equal(sync_p(f, &pod), 0);
        assert_int_equal(f->n_containers, 1);
        assert_has(f->containers[0], "user=65534;");
}

/* A helper failure is the start's CreateContainerConfigError with the helper's message. */
static void test_helper_failure(void **state)
{
        struct fixture *f = *state;
        struct kc_api_container c = { .name = "app",
                                      .image = "app:1",
                                      .image_pull_policy = KC_PULL_IF_NOT_PRESENT };
        struct kc_api_pod pod = base_pod(&c, 1);

        f->helper_fail = -ENOENT;
        assert_int_equal(sync_p(f, &pod), -ENOENT);
        assert_int_equal(f->n_containers, 0);
        assert_string_equal(f->last_reason, "CreateContainerConfigError");
        assert_string_equal(f->last_msg,
                            "couldn't get configMap default/cfg, no kubeClient defined");
}

static const struct kc_api_container_port ports_a[] = {
        { .name = "http", .container_port = 80, .host_port = 8080, .protocol = "TCP" },
        { .name = "http", .container_port = 81, .host_port = 8081, .protocol = "TCP" },
        { .container_port = 53, .protocol = "UDP" },
        { .container_port = 53, .protocol = "UDP" }, /* same generated name: dropped */
};
static const struct kc_api_container_port ports_b[] = {
        { .container_port = 443, .host_port = 8443, .host_ip = "127.0.0.1", .protocol = "TCP" },
        { .container_port = 9, .protocol = "SCTP" },
};

/* The sandbox: the helper's hostname and DNS, every container port, namespaces
 * (hostIPC, shareProcessNamespace, hostPID). */
static void test_sandbox_config(void **state)
{
        struct fixture *f = *state;
        struct kc_api_container c[2] = {
                { .name = "a",
                  .image = "app:1",
                  .image_pull_policy = KC_PULL_IF_NOT_PRESENT,
                  .ports = ports_a,
                  .n_ports = 4 },
                { .name = "b",
                  .image = "app:1",
                  .image_pull_policy = KC_PULL_IF_NOT_PRESENT,
                  .ports = ports_b,
                  .n_ports = 2 },
        };
        struct kc_api_pod pod = base_pod(c, 2);

        pod.hostname = "custom";
        pod.host_ipc = true;
        assert_int_equal(sync_p(f, &pod), 0);
        assert_has(f->sandbox, "hostname=custom;servers=10.0.0.10;searches=example.com;");
        assert_has(f->sandbox, "ports=0:80:8080:,1:53:0:,0:443:8443:127.0.0.1,2:9:0:,;");
        assert_has(f->sandbox, "priv=0;seccomp=1:0;user=unset0;groups=;cgroup=(null);ns=0/1/2;");
        /* shareProcessNamespace: one PID namespace for the sandbox and its containers. */
        pod.share_process_namespace = true;
        pod.uid = "uid-shared-pid";
        assert_int_equal(sync_p(f, &pod), 0);
        assert_has(f->sandbox, "ns=0/0/2;");
        assert_has(f->containers[0], "ns=0/0/2;");
        assert_has(f->containers[1], "ns=0/0/2;");
        /* hostPID wins over it. */
        pod.host_pid = true;
        pod.uid = "uid-host-pid";
        assert_int_equal(sync_p(f, &pod), 0);
        assert_has(f->sandbox, "ns=0/2/2;");
}

/* A host-network pod keeps the node's hostname; without a helper the pod name and no DNS. */
static void test_sandbox_host_network_and_no_helper(void **state)
{
        struct fixture *f = *state;
        struct kc_api_container c = { .name = "a",
                                      .image = "app:1",
                                      .image_pull_policy = KC_PULL_IF_NOT_PRESENT };
        struct kc_api_pod pod = base_pod(&c, 1);

        pod.host_network = true;
        pod.uid = "uid-hn";
        f->helper_fail = 0;
        assert_int_equal(kc_runtime_manager_set_runtime_helper(f->mgr, NULL), 0);
        assert_int_equal(sync_p(f, &pod), 0);
        assert_has(f->sandbox, "hostname=(null);dns=none;");
        assert_has(f->sandbox, "ns=2/1/0;");
        assert_has(f->containers[0], "env=;");
        pod.host_network = false;
        pod.uid = "uid-2";
        assert_int_equal(sync_p(f, &pod), 0);
        assert_has(f->sandbox, "hostname=web;dns=none;");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cpu_shares_and_quota),
                cmocka_unit_test(test_pod_qos),
                cmocka_unit_test(test_oom_score_adjust),
                cmocka_unit_test(test_expansion),
                cmocka_unit_test_setup_teardown(test_env_command_resources, setup, teardown),
                cmocka_unit_test_setup_teardown(test_best_effort_resources, setup, teardown),
                cmocka_unit_test_setup_teardown(test_hugepage_limits, setup, teardown),
                cmocka_unit_test_setup_teardown(test_security_contexts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_run_as_non_root, setup, teardown),
                cmocka_unit_test_setup_teardown(test_helper_failure, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sandbox_config, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sandbox_host_network_and_no_helper, setup,
                                                teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
