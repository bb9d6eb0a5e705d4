/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubelet's RuntimeHelper (kubelet/runtime_helper.c): a container's
 * environment (makeEnvironmentVariables: values with $(VAR) expansion,
 * fieldRef, resourceFieldRef, the refs that need an API server), the pod's
 * hostname and domain, and GetPodDNS over a resolv.conf of the test's own.
 * Issue 14.
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
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/arena.h"
#include "core/cleanup.h"
#include "kubelet/runtime_helper.h"
#include "runtime/api_pod.h"
#include "runtime/runtime_service.h"

#define MI (INT64_C(1024) * 1024)

static const char *const node_ips[] = { "192.168.1.10" };

struct fixture {
        struct kc_kubelet_runtime_helper *h;
        struct kc_runtime_helper rh;
        struct kc_arena *a;
        char resolv[64];
};

static void new_helper(struct fixture *f, const char *resolv_conf)
{
        struct kc_kubelet_runtime_helper_config cfg = {
                .node_name = "node-1",
                .node_ips = node_ips,
                .n_node_ips = 1,
                .allocatable_milli_cpu = 4000,
                .allocatable_memory = 8192 * MI,
                .allocatable_ephemeral_storage = 100000 * MI,
                .resolv_conf = resolv_conf,
        };

        f->h = kc_kubelet_runtime_helper_free(f->h);
        assert_int_equal(kc_kubelet_runtime_helper_new(&cfg, &f->h), 0);
        f->rh = kc_kubelet_runtime_helper_get(f->h);
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        FILE *fp;
        int fd;

        assert_non_null(f);
        snprintf(f->resolv, sizeof(f->resolv), "/tmp/kc-resolv-XXXXXX");
        fd = mkstemp(f->resolv);
        assert_true(fd >= 0);
        fp = fdopen(fd, "w");
        assert_non_null(fp);
        fputs("# generated\nnameserver 10.0.0.2\nnameserver 10.0.0.3 ; trailing\n"
              "search old.example\nsearch corp.example. lab.example .\n"
              "options ndots:2 timeout:1\noptions ndots:3\n",
              fp);
        fclose(fp);
        new_helper(f, f->resolv);
        assert_int_equal(kc_arena_new(&f->a), 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        unlink(f->resolv);
        kc_kubelet_runtime_helper_free(f->h);
        kc_arena_free(f->a);
        free(f);
        return 0;
}

static const struct kc_label labels[] = { { "app", "web" }, { "tier", "front \"end\"" } };
static const struct kc_label annotations[] = { { "note", "hi" } };

static struct kc_api_pod pod_of(const struct kc_api_container *c, size_t n)
{
        return (struct kc_api_pod){ .uid = "uid-1",
                                    .name = "web",
                                    .namespace = "prod",
                                    .containers = c,
                                    .n_containers = n,
                                    .labels = labels,
                                    .n_labels = 2,
                                    .annotations = annotations,
                                    .n_annotations = 1,
                                    .service_account_name = "sa" };
}

/* Runs GenerateRunContainerOptions; returns its code, *o and *msg filled. */
static int options(struct fixture *f, const struct kc_api_pod *pod,
                   const struct kc_api_container *c, const char *const *ips, size_t n_ips,
                   struct kc_run_container_options *o, char **msg)
{
        *o = (struct kc_run_container_options){ 0 };
        *msg = NULL;
        return f->rh.ops->generate_run_container_options(f->rh.self, pod, c, ips, n_ips, f->a, o,
                                                         msg);
}

static const char *env_of(const struct kc_run_container_options *o, const char *name)
{
        for (size_t i = 0; i < o->n_envs; i++)
                if (strcmp(o->envs[i].key, name) == 0)
                        return o->envs[i].value;
        return NULL;
}

#define FIELD(n, p)                                                                                \
        {                                                                                          \
                .name = (n), .source = KC_ENV_SOURCE_FIELD_REF, .field_path = (p)                  \
        }

static void test_env_values_and_field_refs(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_env_var env[] = {
                { .name = "A", .value = "a" },
                { .name = "B", .value = "$(A)-b-$(C)-$$(A)" }, /* C is not declared yet */
                { .name = "C", .value = "c" },
                { .name = "EMPTY", .value = "" },
                { .name = "A",
                  .value = "again:$(A)" }, /* redeclared: the last value, first place */
                FIELD("NAME", "metadata.name"),
                FIELD("NS", "metadata.namespace"),
                FIELD("UID", "metadata.uid"),
                FIELD("APP", "metadata.labels['app']"),
                FIELD("NOPE", "metadata.labels['missing']"),
                FIELD("NOTE", "metadata.annotations['note']"),
                FIELD("LABELS", "metadata.labels"),
                FIELD("NODE", "spec.nodeName"),
                FIELD("SA", "spec.serviceAccountName"),
                FIELD("POD_IP", "status.podIP"),
                FIELD("POD_IPS", "status.podIPs"),
                FIELD("HOST_IP", "status.hostIP"),
                FIELD("HOST_IPS", "status.hostIPs"),
        };
        const struct kc_api_container c = { .name = "app",
                                            .env = env,
                                            .n_env = KC_ELEMENTSOF(env) };
        struct kc_api_pod pod = pod_of(&c, 1);
        const char *const ips[] = { "10.88.0.5", "fd00::5" };
        struct kc_run_container_options o;
        _cleanup_free_ char *msg = NULL;

        assert_int_equal(options(f, &pod, &c, ips, 2, &o, &msg), 0);
        assert_null(msg);
        assert_int_equal(o.n_envs, KC_ELEMENTSOF(env) - 1);
        assert_string_equal(o.envs[0].key, "A");
        assert_string_equal(o.envs[0].value, "again:a");
        assert_string_equal(env_of(&o, "B"), "a-b-$(C)-$(A)");
        assert_string_equal(env_of(&o, "EMPTY"), "");
        assert_string_equal(env_of(&o, "NAME"), "web");
        assert_string_equal(env_of(&o, "NS"), "prod");
        assert_string_equal(env_of(&o, "UID"), "uid-1");
        assert_string_equal(env_of(&o, "APP"), "web");
        assert_string_equal(env_of(&o, "NOPE"), "");
        assert_string_equal(env_of(&o, "NOTE"), "hi");
        assert_string_equal(env_of(&o, "LABELS"), "app=\"web\"\ntier=\"front \\\"end\\\"\"");
        assert_string_equal(env_of(&o, "NODE"), "node-1"); /* spec.nodeName unset: this node */
        assert_string_equal(env_of(&o, "SA"), "sa");
        assert_string_equal(env_of(&o, "POD_IP"), "10.88.0.5");
        assert_string_equal(env_of(&o, "POD_IPS"), "10.88.0.5,fd00::5");
        assert_string_equal(env_of(&o, "HOST_IP"), "192.168.1.10");
        assert_string_equal(env_of(&o, "HOST_IPS"), "192.168.1.10");
        assert_string_equal(o.hostname, "web");
        assert_int_equal(o.n_mounts, 0);

        /* A host-network pod before it has IPs: the node's. */
        pod.host_network = true;
        assert_int_equal(options(f, &pod, &c, NULL, 0, &o, &msg), 0);
        assert_string_equal(env_of(&o, "POD_IP"), "192.168.1.10");
}

#define RES(n, r, d)                                                                               \
        {                                                                                          \
                .name = (n), .source = KC_ENV_SOURCE_RESOURCE_FIELD, .resource = (r), .divisor = { \
                        "d",                                                                       \
                        (d)                                                                        \
                }                                                                                  \
        }

static void test_env_resource_field_refs(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_resource lim[] = { { "cpu", { "1500m", 1500 } },
                                               { "memory", { "100Mi", 100 * MI * 1000 } } };
        const struct kc_api_resource req[] = { { "cpu", { "250m", 250 } } };
        const struct kc_api_env_var env[] = {
                RES("CPU_LIMIT", "limits.cpu", 0),    /* divisor 1: cores, rounded up */
                RES("CPU_LIMIT_M", "limits.cpu", 1),  /* divisor 1m */
                RES("MEM_LIMIT", "limits.memory", 0), /* bytes */
                RES("MEM_LIMIT_MI", "limits.memory", MI * 1000),
                RES("CPU_REQ_M", "requests.cpu", 1),
                RES("MEM_REQ", "requests.memory", 0),            /* defaulted to the limit */
                RES("EPH_REQ", "requests.ephemeral-storage", 0), /* none: 0 */
                RES("EPH_LIMIT_MI", "limits.ephemeral-storage", MI * 1000), /* allocatable */
                { .name = "OTHER_MEM",
                  .source = KC_ENV_SOURCE_RESOURCE_FIELD,
                  .resource_container = "side",
                  .resource = "limits.memory",
                  .divisor = { "1Mi", MI * 1000 } },
        };
        struct kc_api_container c[2] = {
                { .name = "app",
                  .env = env,
                  .n_env = KC_ELEMENTSOF(env),
                  .resources = { .limits = lim, .n_limits = 2, .requests = req, .n_requests = 1 } },
                { .name = "side" }, /* no limit: the node's allocatable */
        };
        struct kc_api_pod pod = pod_of(c, 2);
        struct kc_run_container_options o;
        _cleanup_free_ char *msg = NULL;

        assert_int_equal(options(f, &pod, &c[0], NULL, 0, &o, &msg), 0);
        assert_string_equal(env_of(&o, "CPU_LIMIT"), "2");
        assert_string_equal(env_of(&o, "CPU_LIMIT_M"), "1500");
        assert_string_equal(env_of(&o, "MEM_LIMIT"), "104857600");
        assert_string_equal(env_of(&o, "MEM_LIMIT_MI"), "100");
        assert_string_equal(env_of(&o, "CPU_REQ_M"), "250");
        assert_string_equal(env_of(&o, "MEM_REQ"), "104857600");
        assert_string_equal(env_of(&o, "EPH_REQ"), "0");
        assert_string_equal(env_of(&o, "EPH_LIMIT_MI"), "100000");
        assert_string_equal(env_of(&o, "OTHER_MEM"), "8192");
}

static void test_env_needs_api_server(void **state)
{
        struct fixture *f = *state;
        struct kc_api_env_var cm = { .name = "X",
                                     .source = KC_ENV_SOURCE_CONFIG_MAP_KEY,
                                     .ref_name = "cfg",
                                     .ref_key = "k",
                                     .ref_optional = KC_OPT_TRUE };
        struct kc_api_env_var sec = {
                .name = "Y", .source = KC_ENV_SOURCE_SECRET_KEY, .ref_name = "creds", .ref_key = "k"
        };
        struct kc_api_env_from from = { .secret = true, .ref_name = "all" };
        struct kc_api_env_var bad = FIELD("Z", "spec.restartPolicy");
        struct kc_api_container c = { .name = "app", .env = &cm, .n_env = 1 };
        struct kc_api_pod pod = pod_of(&c, 1);
        struct kc_run_container_options o;
        char *msg = NULL;

        assert_int_equal(options(f, &pod, &c, NULL, 0, &o, &msg), -ENOENT);
        assert_string_equal(msg, "couldn't get configMap prod/cfg, no kubeClient defined");
        free(msg);
        c.env = &sec;
        assert_int_equal(options(f, &pod, &c, NULL, 0, &o, &msg), -ENOENT);
        assert_string_equal(msg, "couldn't get secret prod/creds, no kubeClient defined");
        free(msg);
        c.env_from = &from;
        c.n_env_from = 1;
        assert_int_equal(options(f, &pod, &c, NULL, 0, &o, &msg), -ENOENT);
        assert_string_equal(msg, "couldn't get secret prod/all, no kubeClient defined");
        free(msg);
        c.n_env_from = 0;
        c.env = &bad;
        assert_int_equal(options(f, &pod, &c, NULL, 0, &o, &msg), -EINVAL);
        assert_string_equal(msg, "unsupported fieldPath: spec.restartPolicy");
        free(msg);
}

static void test_hostname_and_domain(void **state)
{
        struct fixture *f = *state;
        struct kc_api_pod pod = pod_of(NULL, 0);
        const char *host = NULL, *domain = NULL;
        char *msg = NULL;

        assert_int_equal(f->rh.ops->generate_pod_hostname_and_domain(f->rh.self, &pod, f->a, &host,
                                                                     &domain, &msg),
                         0);
        assert_string_equal(host, "web");
        assert_null(domain);
        pod.hostname = "db-0";
        pod.subdomain = "db";
        assert_int_equal(f->rh.ops->generate_pod_hostname_and_domain(f->rh.self, &pod, f->a, &host,
                                                                     &domain, &msg),
                         0);
        assert_string_equal(host, "db-0");
        assert_string_equal(domain, "db.prod.svc.");
        /* A long pod name: cut at 63 bytes, then trailing '-' and '.' dropped. */
        pod.hostname = pod.subdomain = NULL;
        pod.name = "a123456789b123456789c123456789d123456789e123456789f123456789g-.-x";
        assert_int_equal(f->rh.ops->generate_pod_hostname_and_domain(f->rh.self, &pod, f->a, &host,
                                                                     &domain, &msg),
                         0);
        assert_string_equal(host, "a123456789b123456789c123456789d123456789e123456789f123456789g");
        pod.hostname = "Not_Valid";
        assert_int_equal(f->rh.ops->generate_pod_hostname_and_domain(f->rh.self, &pod, f->a, &host,
                                                                     &domain, &msg),
                         -EINVAL);
        assert_non_null(strstr(msg,
                               "pod Hostname \"Not_Valid\" is not a valid DNS label: a lowercase "
                               "RFC 1123 label must consist of"));
        free(msg);
}

static void dns(struct fixture *f, const struct kc_api_pod *pod, struct kc_cri_dns_config *d)
{
        bool set = false;
        char *msg = NULL;

        assert_int_equal(f->rh.ops->get_pod_dns(f->rh.self, pod, f->a, d, &set, &msg), 0);
        assert_true(set);
        assert_null(msg);
}

static void test_pod_dns(void **state)
{
        struct fixture *f = *state;
        struct kc_api_pod pod = pod_of(NULL, 0);
        const char *const ns[] = { "1.1.1.1", "10.0.0.2", "8.8.8.8" };
        const char *const search[] = { "extra.example", "corp.example" };
        const struct kc_api_dns_option opts[] = { { "ndots", "1" }, { "edns0", NULL } };
        struct kc_cri_dns_config d;

        /* ClusterFirst without cluster DNS: the host's resolv.conf (Default). */
        dns(f, &pod, &d);
        assert_int_equal(d.n_servers, 2);
        assert_string_equal(d.servers[0], "10.0.0.2");
        assert_string_equal(d.servers[1], "10.0.0.3");
        assert_int_equal(d.n_searches, 2); /* the last search line; "." skipped, dot trimmed */
        assert_string_equal(d.searches[0], "corp.example");
        assert_string_equal(d.searches[1], "lab.example");
        assert_int_equal(d.n_options, 2);
        assert_string_equal(d.options[0], "ndots:3");
        assert_string_equal(d.options[1], "timeout:1");

        /* Default plus dnsConfig: appended, duplicates dropped, at most 3 servers, options merged. */
        pod.dns_policy = KC_DNS_DEFAULT;
        pod.has_dns_config = true;
        pod.dns_config = (struct kc_api_dns_config){ ns, 3, search, 2, opts, 2 };
        dns(f, &pod, &d);
        assert_int_equal(d.n_servers, 3);
        assert_string_equal(d.servers[2], "1.1.1.1");
        assert_int_equal(d.n_searches, 3);
        assert_string_equal(d.searches[2], "extra.example");
        assert_int_equal(d.n_options, 3);
        assert_string_equal(d.options[0], "ndots:1");
        assert_string_equal(d.options[2], "edns0");

        /* None: only dnsConfig. */
        pod.dns_policy = KC_DNS_NONE;
        dns(f, &pod, &d);
        assert_int_equal(d.n_servers, 3);
        assert_string_equal(d.servers[0], "1.1.1.1");
        assert_int_equal(d.n_searches, 2);
        assert_int_equal(d.n_options, 2);

        /* --resolv-conf="": the local resolver and search ".". */
        new_helper(f, "");
        pod.dns_policy = KC_DNS_DEFAULT;
        pod.has_dns_config = false;
        dns(f, &pod, &d);
        assert_int_equal(d.n_servers, 1);
        assert_string_equal(d.servers[0], "127.0.0.1");
        assert_int_equal(d.n_searches, 1);
        assert_string_equal(d.searches[0], ".");
        assert_int_equal(d.n_options, 0);
}

struct worker_arg {
        struct fixture *f;
        int failures;
};

/* Pod workers call the helper at once: each with its own arena. */
static void *helper_worker(void *p)
{
        struct worker_arg *w = p;
        const struct kc_api_env_var env[] = { { .name = "A", .value = "a" },
                                              { .name = "B", .value = "$(A)b" } };
        const struct kc_api_container c = { .name = "app", .env = env, .n_env = 2 };
        struct kc_api_pod pod = pod_of(&c, 1);

        for (int i = 0; i < 200; i++) {
                struct kc_arena *a = NULL;
                struct kc_run_container_options o = { 0 };
                struct kc_cri_dns_config d;
                bool set = false;
                char *msg = NULL;

                if (kc_arena_new(&a) < 0 ||
                    w->f->rh.ops->generate_run_container_options(w->f->rh.self, &pod, &c, NULL, 0,
                                                                 a, &o, &msg) < 0 ||
                    w->f->rh.ops->get_pod_dns(w->f->rh.self, &pod, a, &d, &set, &msg) < 0 ||
                    o.n_envs != 2 || strcmp(o.envs[1].value, "ab") != 0 || d.n_servers != 2)
                        w->failures++;
                free(msg);
                kc_arena_free(a);
        }
        return NULL;
}

static void test_concurrent_calls(void **state)
{
        struct fixture *f = *state;
        struct worker_arg w[4];
        pthread_t th[4];

        for (int i = 0; i < 4; i++) {
                w[i] = (struct worker_arg){ .f = f };
                assert_int_equal(pthread_create(&th[i], NULL, helper_worker, &w[i]), 0);
        }
        for (int i = 0; i < 4; i++) {
                pthread_join(th[i], NULL);
                assert_int_equal(w[i].failures, 0);
        }
}

/*
 * makeMounts (kubelet/pod_mounts.c) through GenerateRunContainerOptions (issue 14):
 * with a root dir, a subPathExpr is expanded from the container's
 * environment and the managed /etc/hosts carries the pod's hostname;
 * without one, a container mounting a volume cannot start. The pod
 * container directory for the termination-message file.
 */
static void test_mounts(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_env_var env[] = { { .name = "DIR", .value = "logs" } };
        const struct kc_api_volume vol = { .name = "data",
                                           .kind = KC_VOLUME_HOST_PATH,
                                           .kind_name = "hostPath" };
        const struct kc_api_volume_mount vm = { .name = "data",
                                                .mount_path = "/data",
                                                .sub_path_expr = "$(DIR)" };
        const struct kc_api_container c = {
                .name = "app", .env = env, .n_env = 1, .volume_mounts = &vm, .n_volume_mounts = 1
        };
        const char *ips[] = { "10.1.0.5" };
        struct kc_kubelet_runtime_helper_config cfg = { .node_ips = node_ips,
                                                        .n_node_ips = 1,
                                                        .allocatable_memory = 8192 * MI };
        struct kc_api_pod pod = pod_of(&c, 1);
        struct kc_run_container_options o;
        char root[] = "/tmp/kc-rh-XXXXXX", hostdir[64], path[128], buf[512], cmd[64];
        char *msg = NULL;
        FILE *in;
        size_t n;

        assert_non_null(mkdtemp(root));
        snprintf(hostdir, sizeof(hostdir), "%s/host", root);
        assert_int_equal(mkdir(hostdir, 0755), 0);
        ((struct kc_api_volume *)&vol)->host_path = hostdir;
        pod.volumes = &vol;
        pod.n_volumes = 1;

        /* No root dir: the mount cannot be made. */
        assert_int_equal(options(f, &pod, &c, ips, 1, &o, &msg), -ENOENT);
        assert_string_equal(msg, "cannot find volume \"data\" to mount into container \"app\"");
        free(msg);

        cfg.root_dir = root;
        f->h = kc_kubelet_runtime_helper_free(f->h);
        assert_int_equal(kc_kubelet_runtime_helper_new(&cfg, &f->h), 0);
        f->rh = kc_kubelet_runtime_helper_get(f->h);
        snprintf(path, sizeof(path), "%s/pods", root);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/pods/uid-1", root);
        assert_int_equal(mkdir(path, 0750), 0);
        assert_int_equal(options(f, &pod, &c, ips, 1, &o, &msg), 0);
        assert_null(msg);
        assert_int_equal(o.n_mounts, 2);
        snprintf(path, sizeof(path), "%s/logs", hostdir);
        assert_string_equal(o.mounts[0].host_path, path);
        assert_string_equal(o.mounts[0].container_path, "/data");
        assert_string_equal(o.mounts[1].container_path, "/etc/hosts");
        in = fopen(o.mounts[1].host_path, "re");
        assert_non_null(in);
        n = fread(buf, 1, sizeof(buf) - 1, in);
        buf[n] = '\0';
        fclose(in);
        assert_non_null(strstr(buf, "\n10.1.0.5\tweb\n"));
        /* No terminationMessagePath: no pod container dir. */
        assert_null(o.pod_container_dir);

        /* With one: <root>/pods/<uid>/containers/<name>, made 0750 (issue 14). */
        ((struct kc_api_container *)&c)->termination_message_path = "/dev/termination-log";
        assert_int_equal(options(f, &pod, &c, ips, 1, &o, &msg), 0);
        snprintf(path, sizeof(path), "%s/pods/uid-1/containers/app", root);
        assert_string_equal(o.pod_container_dir, path);
        {
                struct stat st;

                assert_int_equal(stat(path, &st), 0);
                assert_true(S_ISDIR(st.st_mode));
                assert_int_equal(st.st_mode & 07777, 0750);
        }
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_env_values_and_field_refs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_env_resource_field_refs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_env_needs_api_server, setup, teardown),
                cmocka_unit_test_setup_teardown(test_hostname_and_domain, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pod_dns, setup, teardown),
                cmocka_unit_test_setup_teardown(test_concurrent_calls, setup, teardown),
                cmocka_unit_test_setup_teardown(test_mounts, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
