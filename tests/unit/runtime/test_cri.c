/* SPDX-License-Identifier: Apache-2.0 */
/*
 * runtime/cri without a runtime: the requests the client builds (decoded
 * back with protobuf-c: namespace options, attempt, labels, annotations, log
 * paths, host network, filters), the responses it reads (hand-built
 * protobuf messages to kc_* results: states, timestamps, IPs, missing
 * fields, undecodable bytes), endpoint parsing, and the argument checks of
 * the service face, the GetContainerEvents state machine, and calls
 * through the real transport against the in-process server of
 * fake_grpc_server.h (which answers UNIMPLEMENTED to every CRI method, but
 * records the path and the grpc-timeout it was sent). Calls against a real
 * containerd are the integration tests' (tests/integration).
 */
#include <errno.h>
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
#include "cri/internal.h"
#include "fake_grpc_server.h"
#include "kc_test.h"
#include "runtime/container.h"
#include "runtime/cri.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                    */

/* The value of @p key in a decoded map<string, string> (entries of any map type). */
static const char *map_get(void *entries, size_t n, const char *key)
{
        ProtobufCMessage **v = entries;
        size_t i;

        for (i = 0; i < n; i++) {
                const ProtobufCMessageDescriptor *d = v[i]->descriptor;
                const ProtobufCFieldDescriptor *k = protobuf_c_message_descriptor_get_field(d, 1);
                const ProtobufCFieldDescriptor *val = protobuf_c_message_descriptor_get_field(d, 2);
                const char *ks = *(char **)((char *)v[i] + k->offset);

                if (strcmp(ks, key) == 0)
                        return *(char **)((char *)v[i] + val->offset);
        }
        return NULL;
}

#define MAP_GET(msg, field, key) map_get((msg)->field, (msg)->n_##field, (key))

static const char *label_get(const struct kc_label *l, size_t n, const char *key)
{
        size_t i;

        for (i = 0; i < n; i++)
                if (strcmp(l[i].key, key) == 0)
                        return l[i].value;
        return NULL;
}

/* Packs a hand-built message (malloc'd bytes). */
static uint8_t *pack_msg(const ProtobufCMessage *m, size_t *ret_len)
{
        size_t n = protobuf_c_message_get_packed_size(m);
        uint8_t *b = malloc(n + 1);

        assert_non_null(b);
        assert_int_equal(protobuf_c_message_pack(m, b), n);
        *ret_len = n;
        return b;
}

/*
 * Calls @p unpack (a kc__cri_unpack_*) on the bytes of the hand-built
 * message @p m, then the further arguments: its return value.
 */
#define UNPACK(unpack, m, ...)                                                                     \
        ({                                                                                         \
                size_t _len;                                                                       \
                uint8_t *_buf = pack_msg((m), &_len);                                              \
                int _r = unpack(_buf, _len, __VA_ARGS__);                                          \
                free(_buf);                                                                        \
                _r;                                                                                \
        })

/*
 * Decodes the bytes a kc__cri_pack_* made as a @p desc message, and frees
 * them. Free the result with its <message>__free_unpacked().
 */
static void *unpack_request(const ProtobufCMessageDescriptor *desc, uint8_t *buf, size_t len)
{
        ProtobufCMessage *m = protobuf_c_message_unpack(desc, NULL, len, buf);

        assert_non_null(m);
        free(buf);
        return m;
}

/* The sandbox metadata of the pod of sandbox_config(), as the runtime reports it. */
static Runtime__V1__PodSandboxMetadata pod_metadata(uint32_t attempt)
{
        Runtime__V1__PodSandboxMetadata md = RUNTIME__V1__POD_SANDBOX_METADATA__INIT;

        md.name = "web";
        md.uid = "uid-1";
        md.namespace_ = "default";
        md.attempt = attempt;
        return md;
}

/* A map entry array of @p n key/value pairs, for hand-built messages (test-lifetime). */
#define MAP_ENTRIES(type, init, ...)                                                               \
        ({                                                                                         \
                static type _e[] = { __VA_ARGS__ };                                                \
                static type *_p[KC_ELEMENTSOF(_e)];                                                \
                for (size_t _i = 0; _i < KC_ELEMENTSOF(_e); _i++) {                                \
                        type _t = init;                                                            \
                        _t.key = _e[_i].key;                                                       \
                        _t.value = _e[_i].value;                                                   \
                        _e[_i] = _t;                                                               \
                        _p[_i] = &_e[_i];                                                          \
                }                                                                                  \
                _p;                                                                                \
        })

static const struct kc_label pod_labels[] = {
        { KC_LABEL_POD_NAME, "web" },
        { KC_LABEL_POD_NAMESPACE, "default" },
        { KC_LABEL_POD_UID, "uid-1" },
        { "app", "nginx" },
};
static const struct kc_label pod_annotations[] = {
        { "kubernetes.io/config.source", "file" },
};

static struct kc_pod_sandbox_config sandbox_config(bool host_network)
{
        return (struct kc_pod_sandbox_config){
                .metadata = { .name = "web", .uid = "uid-1", .namespace = "default", .attempt = 2 },
                .hostname = "web",
                .log_directory = "/var/log/pods/default_web_uid-1",
                .host_network = host_network,
                .labels = pod_labels,
                .n_labels = KC_ELEMENTSOF(pod_labels),
                .annotations = pod_annotations,
                .n_annotations = KC_ELEMENTSOF(pod_annotations),
                /* As kubelet's namespacesForPod; host_network makes network NODE. */
                .security.namespace_options = { .pid = KC_CRI_NAMESPACE_CONTAINER },
        };
}

static void assert_sandbox_config(const Runtime__V1__PodSandboxConfig *pc, bool host_network)
{
        const Runtime__V1__NamespaceOption *ns;

        assert_non_null(pc);
        assert_non_null(pc->metadata);
        assert_string_equal(pc->metadata->name, "web");
        assert_string_equal(pc->metadata->uid, "uid-1");
        assert_string_equal(pc->metadata->namespace_, "default");
        assert_int_equal(pc->metadata->attempt, 2);
        /* kubelet: no hostname in the node's UTS namespace. */
        assert_string_equal(pc->hostname, host_network ? "" : "web");
        assert_string_equal(pc->log_directory, "/var/log/pods/default_web_uid-1");
        assert_int_equal(pc->n_labels, 4);
        assert_string_equal(MAP_GET(pc, labels, KC_LABEL_POD_UID), "uid-1");
        assert_string_equal(MAP_GET(pc, labels, "app"), "nginx");
        assert_int_equal(pc->n_annotations, 1);
        assert_string_equal(MAP_GET(pc, annotations, "kubernetes.io/config.source"), "file");
        assert_non_null(pc->linux);
        assert_string_equal(pc->linux->cgroup_parent, ""); /* left to the runtime */
        assert_non_null(pc->linux->security_context);
        ns = pc->linux->security_context->namespace_options;
        assert_non_null(ns);
        assert_int_equal(ns->network, host_network ? RUNTIME__V1__NAMESPACE_MODE__NODE
                                                   : RUNTIME__V1__NAMESPACE_MODE__POD);
        assert_int_equal(ns->pid, RUNTIME__V1__NAMESPACE_MODE__CONTAINER);
        assert_int_equal(ns->ipc, RUNTIME__V1__NAMESPACE_MODE__POD);
}

/* ------------------------------------------------------------------------ */
/* Endpoints                                                                  */

static void test_parse_endpoint(void **state)
{
        char *p = NULL, long_ep[200];

        (void)state;
        assert_int_equal(kc__cri_parse_endpoint("unix:///run/containerd/containerd.sock", &p), 0);
        assert_string_equal(p, "/run/containerd/containerd.sock");
        free(p);
        p = NULL;
        assert_int_equal(kc__cri_parse_endpoint("/tmp/ctrd-lab/containerd.sock", &p), 0);
        assert_string_equal(p, "/tmp/ctrd-lab/containerd.sock");
        free(p);
        p = NULL;

        assert_int_equal(kc__cri_parse_endpoint("tcp://127.0.0.1:1234", &p), -EINVAL);
        assert_int_equal(kc__cri_parse_endpoint("npipe:////./pipe/containerd", &p), -EINVAL);
        assert_int_equal(kc__cri_parse_endpoint("sim://", &p), -EINVAL);
        assert_int_equal(kc__cri_parse_endpoint("unix://run/x.sock", &p), -EINVAL);
        assert_int_equal(kc__cri_parse_endpoint("unix://", &p), -EINVAL);
        assert_int_equal(kc__cri_parse_endpoint("relative.sock", &p), -EINVAL);
        assert_int_equal(kc__cri_parse_endpoint("", &p), -EINVAL);
        assert_int_equal(kc__cri_parse_endpoint(NULL, &p), -EINVAL);
        snprintf(long_ep, sizeof(long_ep), "unix:///%0150d", 0);
        assert_int_equal(kc__cri_parse_endpoint(long_ep, &p), -ENAMETOOLONG);
        assert_null(p);
}

static void test_new_rejects(void **state)
{
        struct kc_cri *c = NULL;

        (void)state;
        assert_int_equal(kc_cri_new("tcp://localhost:1", KC_CRI_DEFAULT_REQUEST_TIMEOUT_NS, &c),
                         -EINVAL);
        assert_int_equal(kc_cri_new("", KC_CRI_DEFAULT_REQUEST_TIMEOUT_NS, &c), -EINVAL);
        assert_int_equal(kc_cri_new("unix:///run/x.sock", 0, &c), -EINVAL);
        assert_int_equal(kc_cri_new("unix:///run/x.sock", -1, &c), -EINVAL);
        assert_null(c);
        assert_null(kc_cri_free(NULL));
        assert_null(kc_cri_events_close(NULL));
}

/* The client does not connect until a call: make one over a socket nobody listens on. */
static void test_service_args(void **state)
{
        struct kc_runtime_error err = { 0 };
        struct kc_runtime_service svc;
        struct kc_cri *c = NULL;
        struct kc_pod_sandbox_filter bad = { .state = 5 };
        struct kc_pod_sandbox_list l = { 0 };
        char *id = NULL;

        (void)state;
        assert_int_equal(
                kc_cri_new("unix:///nonexistent/cubelet-test.sock", 5 * KC_NSEC_PER_SEC, &c), 0);
        assert_string_equal(kc_cri_socket_path(c), "/nonexistent/cubelet-test.sock");
        svc = kc_cri_service(c);
        assert_ptr_equal(svc.self, c);
        assert_non_null(svc.ops->pull_image);

        /* Refused before any I/O. */
        assert_int_equal(svc.ops->run_pod_sandbox(svc.self, NULL, &id, &err), -EINVAL);
        assert_int_equal(err.code, KC_RUNTIME_INVALID_ARGUMENT);
        assert_int_equal(svc.ops->stop_pod_sandbox(svc.self, NULL, &err), -EINVAL);
        assert_int_equal(svc.ops->start_container(svc.self, NULL, &err), -EINVAL);
        assert_int_equal(svc.ops->stop_container(svc.self, NULL, 1, &err), -EINVAL);
        assert_int_equal(svc.ops->image_status(svc.self, NULL, NULL, &err), -EINVAL);
        assert_int_equal(svc.ops->list_pod_sandbox(svc.self, &bad, &l, &err), -EINVAL);
        assert_int_equal(err.code, KC_RUNTIME_INVALID_ARGUMENT);
        assert_null(l.arena);
        assert_null(id);
        kc_cri_free(c);
}

/* ------------------------------------------------------------------------ */
/* Requests                                                                   */

static void test_pack_run_pod_sandbox(void **state)
{
        (void)state;
        for (int host = 0; host <= 1; host++) {
                struct kc_pod_sandbox_config cfg = sandbox_config(host);
                Runtime__V1__RunPodSandboxRequest *req;
                uint8_t *buf = NULL;
                size_t len = 0;

                assert_int_equal(kc__cri_pack_run_pod_sandbox(&cfg, &buf, &len), 0);
                req = unpack_request(&runtime__v1__run_pod_sandbox_request__descriptor, buf, len);
                assert_sandbox_config(req->config, host);
                assert_string_equal(req->runtime_handler, "");
                runtime__v1__run_pod_sandbox_request__free_unpacked(req, NULL);
        }
        assert_int_equal(kc__cri_pack_run_pod_sandbox(NULL, &(uint8_t *){ NULL }, &(size_t){ 0 }),
                         -EINVAL);
}

static void test_pack_create_container(void **state)
{
        static const char *const cmd[] = { "/bin/sh", "-c" };
        static const char *const args[] = { "exit 3" };
        static const struct kc_label labels[] = {
                { KC_LABEL_POD_UID, "uid-1" },
                { KC_LABEL_CONTAINER_NAME, "app" },
        };
        static const struct kc_label annotations[] = {
                { KC_ANNOTATION_CONTAINER_HASH, "1a2b" },
                { KC_ANNOTATION_CONTAINER_RESTART_COUNT, "3" },
        };
        struct kc_container_config cc = {
                .metadata = { .name = "app", .attempt = 3 },
                .image = "sha256:0123",
                .user_specified_image = "busybox:1",
                .command = cmd,
                .n_command = 2,
                .args = args,
                .n_args = 1,
                .log_path = "app/3.log",
                .labels = labels,
                .n_labels = 2,
                .annotations = annotations,
                .n_annotations = 2,
        };

        (void)state;
        for (int host = 0; host <= 2; host++) {
                struct kc_pod_sandbox_config sb = sandbox_config(host == 1);
                Runtime__V1__CreateContainerRequest *req;
                const Runtime__V1__ContainerConfig *c;
                const Runtime__V1__NamespaceOption *ns;
                uint8_t *buf = NULL;
                size_t len = 0;

                /* host == 2: no sandbox config at all. */
                assert_int_equal(kc__cri_pack_create_container("sb-1", &cc, host == 2 ? NULL : &sb,
                                                               &buf, &len),
                                 0);
                req = unpack_request(&runtime__v1__create_container_request__descriptor, buf, len);
                assert_string_equal(req->pod_sandbox_id, "sb-1");
                c = req->config;
                assert_non_null(c);
                assert_string_equal(c->metadata->name, "app");
                assert_int_equal(c->metadata->attempt, 3);
                assert_string_equal(c->image->image, "sha256:0123");
                assert_string_equal(c->image->user_specified_image, "busybox:1");
                assert_int_equal(c->n_command, 2);
                assert_string_equal(c->command[0], "/bin/sh");
                assert_string_equal(c->command[1], "-c");
                assert_int_equal(c->n_args, 1);
                assert_string_equal(c->args[0], "exit 3");
                assert_string_equal(c->log_path, "app/3.log");
                assert_int_equal(c->n_labels, 2);
                assert_string_equal(MAP_GET(c, labels, KC_LABEL_CONTAINER_NAME), "app");
                assert_int_equal(c->n_annotations, 2);
                assert_string_equal(MAP_GET(c, annotations, KC_ANNOTATION_CONTAINER_HASH), "1a2b");
                assert_string_equal(MAP_GET(c, annotations, KC_ANNOTATION_CONTAINER_RESTART_COUNT),
                                    "3");
                assert_non_null(c->linux);
                assert_non_null(c->linux->security_context);
                ns = c->linux->security_context->namespace_options;
                assert_non_null(ns);
                assert_int_equal(ns->network, host == 1 ? RUNTIME__V1__NAMESPACE_MODE__NODE
                                                        : RUNTIME__V1__NAMESPACE_MODE__POD);
                assert_int_equal(ns->pid, RUNTIME__V1__NAMESPACE_MODE__CONTAINER);
                assert_int_equal(ns->ipc, RUNTIME__V1__NAMESPACE_MODE__POD);
                if (host == 2)
                        assert_null(req->sandbox_config);
                else
                        assert_sandbox_config(req->sandbox_config, host == 1);
                runtime__v1__create_container_request__free_unpacked(req, NULL);
        }

        /* A NULL argument would crash the packer: refused. */
        static const char *const bad_args[] = { "a", NULL };
        struct kc_container_config bad = cc;
        uint8_t *buf = NULL;
        size_t len = 0;

        bad.args = bad_args;
        bad.n_args = 2;
        assert_int_equal(kc__cri_pack_create_container("sb-1", &bad, NULL, &buf, &len), -EINVAL);
        assert_int_equal(kc__cri_pack_create_container("sb-1", NULL, NULL, &buf, &len), -EINVAL);
        assert_null(buf);
}

/* Issue 14: every field of the sandbox config reaches the wire. */
static void test_pack_sandbox_every_field(void **state)
{
        static const char *const servers[] = { "10.96.0.10", "1.1.1.1" };
        static const char *const searches[] = { "default.svc.cluster.local", "svc.cluster.local" };
        static const char *const options[] = { "ndots:5" };
        static const struct kc_cri_dns_config dns = { servers, 2, searches, 2, options, 1 };
        static const struct kc_cri_port_mapping ports[] = {
                { KC_CRI_PROTOCOL_TCP, 80, 8080, "127.0.0.1" },
                { KC_CRI_PROTOCOL_UDP, 53, 5353, NULL },
                { KC_CRI_PROTOCOL_SCTP, 9, 0, NULL },
        };
        static const int64_t groups[] = { 1000, 2000 };
        static const struct kc_label sysctls[] = { { "net.ipv4.ip_unprivileged_port_start", "0" },
                                                   { "kernel.shm_rmid_forced", "1" } };
        struct kc_pod_sandbox_config cfg = sandbox_config(false);
        Runtime__V1__RunPodSandboxRequest *req;
        const Runtime__V1__PodSandboxConfig *pc;
        const Runtime__V1__LinuxSandboxSecurityContext *sc;
        uint8_t *buf = NULL;
        size_t len = 0;

        (void)state;
        cfg.dns_config = &dns;
        cfg.port_mappings = ports;
        cfg.n_port_mappings = 3;
        cfg.cgroup_parent = "/kubepods/besteffort/poduid-1";
        cfg.sysctls = sysctls;
        cfg.n_sysctls = 2;
        cfg.security = (struct kc_cri_sandbox_security){
                .namespace_options = { .network = KC_CRI_NAMESPACE_POD,
                                       .pid = KC_CRI_NAMESPACE_NODE,
                                       .ipc = KC_CRI_NAMESPACE_NODE },
                .run_as_user = { true, 1000 },
                .run_as_group = { true, 0 },
                .readonly_rootfs = true,
                .supplemental_groups = groups,
                .n_supplemental_groups = 2,
                .privileged = true,
                .seccomp = { true, KC_CRI_PROFILE_LOCALHOST, "profiles/audit.json" },
        };
        assert_int_equal(kc__cri_pack_run_pod_sandbox(&cfg, &buf, &len), 0);
        req = unpack_request(&runtime__v1__run_pod_sandbox_request__descriptor, buf, len);
        pc = req->config;
        assert_string_equal(pc->hostname, "web");
        assert_non_null(pc->dns_config);
        assert_int_equal(pc->dns_config->n_servers, 2);
        assert_string_equal(pc->dns_config->servers[1], "1.1.1.1");
        assert_int_equal(pc->dns_config->n_searches, 2);
        assert_string_equal(pc->dns_config->searches[0], "default.svc.cluster.local");
        assert_string_equal(pc->dns_config->searches[1], "svc.cluster.local");
        assert_int_equal(pc->dns_config->n_options, 1);
        assert_string_equal(pc->dns_config->options[0], "ndots:5");
        assert_int_equal(pc->n_port_mappings, 3);
        assert_int_equal(pc->port_mappings[0]->protocol, RUNTIME__V1__PROTOCOL__TCP);
        assert_int_equal(pc->port_mappings[0]->container_port, 80);
        assert_int_equal(pc->port_mappings[0]->host_port, 8080);
        assert_string_equal(pc->port_mappings[0]->host_ip, "127.0.0.1");
        assert_int_equal(pc->port_mappings[1]->protocol, RUNTIME__V1__PROTOCOL__UDP);
        assert_int_equal(pc->port_mappings[1]->container_port, 53);
        assert_int_equal(pc->port_mappings[1]->host_port, 5353);
        assert_string_equal(pc->port_mappings[1]->host_ip, "");
        assert_int_equal(pc->port_mappings[2]->protocol, RUNTIME__V1__PROTOCOL__SCTP);
        assert_string_equal(pc->linux->cgroup_parent, "/kubepods/besteffort/poduid-1");
        assert_int_equal(pc->linux->n_sysctls, 2);
        assert_string_equal(MAP_GET(pc->linux, sysctls, "net.ipv4.ip_unprivileged_port_start"),
                            "0");
        assert_string_equal(MAP_GET(pc->linux, sysctls, "kernel.shm_rmid_forced"), "1");
        sc = pc->linux->security_context;
        assert_int_equal(sc->namespace_options->network, RUNTIME__V1__NAMESPACE_MODE__POD);
        assert_int_equal(sc->namespace_options->pid, RUNTIME__V1__NAMESPACE_MODE__NODE);
        assert_int_equal(sc->namespace_options->ipc, RUNTIME__V1__NAMESPACE_MODE__NODE);
        assert_non_null(sc->run_as_user);
        assert_int_equal(sc->run_as_user->value, 1000);
        assert_non_null(sc->run_as_group); /* set to 0 is not unset */
        assert_int_equal(sc->run_as_group->value, 0);
        assert_true(sc->readonly_rootfs);
        assert_int_equal(sc->n_supplemental_groups, 2);
        assert_int_equal(sc->supplemental_groups[0], 1000);
        assert_int_equal(sc->supplemental_groups[1], 2000);
        assert_true(sc->privileged);
        assert_non_null(sc->seccomp);
        assert_int_equal(sc->seccomp->profile_type,
                         RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Localhost);
        assert_string_equal(sc->seccomp->localhost_ref, "profiles/audit.json");
        runtime__v1__run_pod_sandbox_request__free_unpacked(req, NULL);

        /* Unset optional values stay absent; a NULL DNS server is refused. */
        cfg = sandbox_config(false);
        assert_int_equal(kc__cri_pack_run_pod_sandbox(&cfg, &buf, &len), 0);
        req = unpack_request(&runtime__v1__run_pod_sandbox_request__descriptor, buf, len);
        sc = req->config->linux->security_context;
        assert_null(req->config->dns_config);
        assert_null(sc->run_as_user);
        assert_null(sc->run_as_group);
        assert_null(sc->seccomp);
        assert_false(sc->privileged);
        runtime__v1__run_pod_sandbox_request__free_unpacked(req, NULL);
        static const char *const bad[] = { NULL };
        struct kc_cri_dns_config bad_dns = { .servers = bad, .n_servers = 1 };

        cfg.dns_config = &bad_dns;
        buf = NULL;
        assert_int_equal(kc__cri_pack_run_pod_sandbox(&cfg, &buf, &len), -EINVAL);
        assert_null(buf);
}

/* The container half of test_pack_container_every_field: what it sets. */
static struct kc_container_config full_container_config(void)
{
        static const char *const cmd[] = { "/bin/sh", "-c" };
        static const char *const args[] = { "echo $(GREETING)" };
        static const struct kc_label envs[] = { { "GREETING", "hi" },
                                                { "POD_NAME", "web" },
                                                { "EMPTY", "" } };
        static const struct kc_cri_mount mounts[] = {
                { "/data", "/var/lib/cubelet/pods/uid-1/volumes/kubernetes.io~empty-dir/d", false,
                  false, KC_CRI_PROPAGATION_PRIVATE },
                { "/etc/cfg", "/srv/cfg", true, true, KC_CRI_PROPAGATION_HOST_TO_CONTAINER },
                { "/mnt/shared", "/mnt/shared", false, false, KC_CRI_PROPAGATION_BIDIRECTIONAL },
        };
        static const char *const add[] = { "NET_ADMIN", "SYS_TIME" };
        static const struct kc_cri_hugepage_limit hugepages[] = { { "1GB", 0 },
                                                                  { "2MB", 4 << 20 } };
        static const char *const drop[] = { "ALL" };
        static const int64_t groups[] = { 3000 };
        static const char *const masked[] = { "/proc/kcore", "/proc/keys" };
        static const char *const ro[] = { "/proc/sys" };

        return (struct kc_container_config){
                .metadata = { .name = "app", .attempt = 1 },
                .image = "sha256:0123",
                .user_specified_image = "busybox:1",
                .command = cmd,
                .n_command = 2,
                .args = args,
                .n_args = 1,
                .working_dir = "/srv",
                .envs = envs,
                .n_envs = 3,
                .mounts = mounts,
                .n_mounts = 3,
                .log_path = "app/1.log",
                .stdin = true,
                .stdin_once = true,
                .tty = true,
                .has_resources = true,
                .resources = { .cpu_period = 100000,
                               .cpu_quota = 50000,
                               .cpu_shares = 512,
                               .memory_limit_in_bytes = 64 << 20,
                               .oom_score_adj = 999,
                               .cpuset_cpus = "0-1",
                               .cpuset_mems = "0",
                               .hugepage_limits = hugepages,
                               .n_hugepage_limits = 2 },
                .has_security = true,
                .security = { .has_capabilities = true,
                              .capabilities = { add, 2, drop, 1 },
                              .privileged = true,
                              .namespace_options = { .network = KC_CRI_NAMESPACE_POD,
                                                     .pid = KC_CRI_NAMESPACE_POD,
                                                     .ipc = KC_CRI_NAMESPACE_NODE },
                              .run_as_user = { true, 0 },
                              .run_as_group = { true, 2000 },
                              .run_as_username = "nobody",
                              .readonly_rootfs = true,
                              .supplemental_groups = groups,
                              .n_supplemental_groups = 1,
                              .no_new_privs = true,
                              .masked_paths = masked,
                              .n_masked_paths = 2,
                              .readonly_paths = ro,
                              .n_readonly_paths = 1,
                              .seccomp = { true, KC_CRI_PROFILE_RUNTIME_DEFAULT, NULL } },
        };
}

/* Issue 14: every field of the container config reaches the wire. */
static void test_pack_container_every_field(void **state)
{
        struct kc_container_config cc = full_container_config();
        struct kc_pod_sandbox_config sb = sandbox_config(false);
        Runtime__V1__CreateContainerRequest *req;
        const Runtime__V1__ContainerConfig *c;
        const Runtime__V1__LinuxContainerResources *r;
        const Runtime__V1__LinuxContainerSecurityContext *sc;
        uint8_t *buf = NULL;
        size_t len = 0;

        (void)state;
        assert_int_equal(kc__cri_pack_create_container("sb-1", &cc, &sb, &buf, &len), 0);
        req = unpack_request(&runtime__v1__create_container_request__descriptor, buf, len);
        c = req->config;
        assert_string_equal(c->working_dir, "/srv");
        assert_int_equal(c->n_envs, 3); /* in order, an empty value kept */
        assert_string_equal(c->envs[0]->key, "GREETING");
        assert_string_equal(c->envs[0]->value, "hi");
        assert_string_equal(c->envs[1]->key, "POD_NAME");
        assert_string_equal(c->envs[1]->value, "web");
        assert_string_equal(c->envs[2]->key, "EMPTY");
        assert_string_equal(c->envs[2]->value, "");
        assert_int_equal(c->n_mounts, 3);
        assert_string_equal(c->mounts[0]->container_path, "/data");
        assert_string_equal(c->mounts[0]->host_path,
                            "/var/lib/cubelet/pods/uid-1/volumes/kubernetes.io~empty-dir/d");
        assert_false(c->mounts[0]->readonly);
        assert_false(c->mounts[0]->selinux_relabel);
        assert_int_equal(c->mounts[0]->propagation,
                         RUNTIME__V1__MOUNT_PROPAGATION__PROPAGATION_PRIVATE);
        assert_string_equal(c->mounts[1]->container_path, "/etc/cfg");
        assert_string_equal(c->mounts[1]->host_path, "/srv/cfg");
        assert_true(c->mounts[1]->readonly);
        assert_true(c->mounts[1]->selinux_relabel);
        assert_int_equal(c->mounts[1]->propagation,
                         RUNTIME__V1__MOUNT_PROPAGATION__PROPAGATION_HOST_TO_CONTAINER);
        assert_int_equal(c->mounts[2]->propagation,
                         RUNTIME__V1__MOUNT_PROPAGATION__PROPAGATION_BIDIRECTIONAL);
        assert_true(c->stdin);
        assert_true(c->stdin_once);
        assert_true(c->tty);
        r = c->linux->resources;
        assert_non_null(r);
        assert_int_equal(r->cpu_period, 100000);
        assert_int_equal(r->cpu_quota, 50000);
        assert_int_equal(r->cpu_shares, 512);
        assert_int_equal(r->memory_limit_in_bytes, 64 << 20);
        assert_int_equal(r->oom_score_adj, 999);
        assert_string_equal(r->cpuset_cpus, "0-1");
        assert_string_equal(r->cpuset_mems, "0");
        assert_int_equal(r->n_hugepage_limits, 2);
        assert_string_equal(r->hugepage_limits[0]->page_size, "1GB");
        assert_int_equal(r->hugepage_limits[0]->limit, 0);
        assert_string_equal(r->hugepage_limits[1]->page_size, "2MB");
        assert_int_equal(r->hugepage_limits[1]->limit, 4 << 20);
        sc = c->linux->security_context;
        assert_non_null(sc->capabilities);
        assert_int_equal(sc->capabilities->n_add_capabilities, 2);
        assert_string_equal(sc->capabilities->add_capabilities[0], "NET_ADMIN");
        assert_string_equal(sc->capabilities->add_capabilities[1], "SYS_TIME");
        assert_int_equal(sc->capabilities->n_drop_capabilities, 1);
        assert_string_equal(sc->capabilities->drop_capabilities[0], "ALL");
        assert_true(sc->privileged);
        assert_int_equal(sc->namespace_options->network, RUNTIME__V1__NAMESPACE_MODE__POD);
        assert_int_equal(sc->namespace_options->pid, RUNTIME__V1__NAMESPACE_MODE__POD);
        assert_int_equal(sc->namespace_options->ipc, RUNTIME__V1__NAMESPACE_MODE__NODE);
        assert_non_null(sc->run_as_user);
        assert_int_equal(sc->run_as_user->value, 0);
        assert_non_null(sc->run_as_group);
        assert_int_equal(sc->run_as_group->value, 2000);
        assert_string_equal(sc->run_as_username, "nobody");
        assert_true(sc->readonly_rootfs);
        assert_int_equal(sc->n_supplemental_groups, 1);
        assert_int_equal(sc->supplemental_groups[0], 3000);
        assert_true(sc->no_new_privs);
        assert_int_equal(sc->n_masked_paths, 2);
        assert_string_equal(sc->masked_paths[0], "/proc/kcore");
        assert_string_equal(sc->masked_paths[1], "/proc/keys");
        assert_int_equal(sc->n_readonly_paths, 1);
        assert_string_equal(sc->readonly_paths[0], "/proc/sys");
        assert_non_null(sc->seccomp);
        assert_int_equal(sc->seccomp->profile_type,
                         RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__RuntimeDefault);
        assert_string_equal(sc->seccomp->localhost_ref, "");
        runtime__v1__create_container_request__free_unpacked(req, NULL);

        /* Without resources or a security context: no resources, the pod's namespaces only. */
        cc.has_resources = false;
        cc.has_security = false;
        sb.security.namespace_options.ipc = KC_CRI_NAMESPACE_NODE;
        assert_int_equal(kc__cri_pack_create_container("sb-1", &cc, &sb, &buf, &len), 0);
        req = unpack_request(&runtime__v1__create_container_request__descriptor, buf, len);
        sc = req->config->linux->security_context;
        assert_null(req->config->linux->resources);
        assert_null(sc->capabilities);
        assert_null(sc->run_as_user);
        assert_false(sc->privileged);
        assert_false(sc->readonly_rootfs);
        assert_int_equal(sc->n_masked_paths, 0);
        assert_int_equal(sc->namespace_options->pid, RUNTIME__V1__NAMESPACE_MODE__CONTAINER);
        assert_int_equal(sc->namespace_options->ipc, RUNTIME__V1__NAMESPACE_MODE__NODE);
        runtime__v1__create_container_request__free_unpacked(req, NULL);

        /* A NULL capability name would crash the packer: refused. */
        static const char *const bad[] = { "NET_ADMIN", NULL };

        cc = full_container_config();
        cc.security.capabilities.add = bad;
        buf = NULL;
        assert_int_equal(kc__cri_pack_create_container("sb-1", &cc, &sb, &buf, &len), -EINVAL);
        assert_null(buf);
}

static void test_pack_unpack_exec_sync(void **state)
{
        static const char *const argv[] = { "printenv", "HOME" };
        Runtime__V1__ExecSyncRequest *req;
        Runtime__V1__ExecSyncResponse resp = RUNTIME__V1__EXEC_SYNC_RESPONSE__INIT;
        struct kc_exec_sync_result x = { 0 };
        struct kc_runtime_error err = { 0 };
        uint8_t *buf = NULL;
        size_t len = 0;

        (void)state;
        assert_int_equal(kc__cri_pack_exec_sync("c-1", argv, 2, 7, &buf, &len), 0);
        req = unpack_request(&runtime__v1__exec_sync_request__descriptor, buf, len);
        assert_string_equal(req->container_id, "c-1");
        assert_int_equal(req->n_cmd, 2);
        assert_string_equal(req->cmd[0], "printenv");
        assert_string_equal(req->cmd[1], "HOME");
        assert_int_equal(req->timeout, 7);
        runtime__v1__exec_sync_request__free_unpacked(req, NULL);
        buf = NULL;
        assert_int_equal(kc__cri_pack_exec_sync("c-1", argv, 0, 7, &buf, &len), -EINVAL);
        assert_int_equal(kc__cri_pack_exec_sync("c-1", NULL, 2, 7, &buf, &len), -EINVAL);
        assert_null(buf);

        /* Bytes with a NUL inside, an empty stderr, a failing command. */
        resp.stdout = (ProtobufCBinaryData){ 4, (uint8_t *)"a\0b\n" };
        resp.exit_code = 127;
        assert_int_equal(UNPACK(kc__cri_unpack_exec_sync, &resp.base, &x, &err), 0);
        assert_int_equal(x.n_out, 4);
        assert_memory_equal(x.out, "a\0b\n", 5);
        assert_int_equal(x.n_err, 0);
        assert_string_equal(x.err, "");
        assert_int_equal(x.exit_code, 127);
        kc_exec_sync_result_done(&x);
        assert_null(x.out);

        /* Not an ExecSyncResponse: an error, the result untouched. */
        x.exit_code = 5;
        assert_int_equal(kc__cri_unpack_exec_sync((const uint8_t *)"\x0a\x80", 2, &x, &err),
                         -EPROTO);
        assert_string_equal(err.message, "failed to decode ExecSync response");
        assert_null(x.out);
        assert_int_equal(x.exit_code, 5);
}

static void test_pack_filters(void **state)
{
        static const struct kc_label sel[] = { { KC_LABEL_POD_UID, "uid-1" } };
        Runtime__V1__ListPodSandboxRequest *sreq;
        Runtime__V1__ListContainersRequest *creq;
        uint8_t *buf = NULL;
        size_t len = 99;

        (void)state;
        /* No filter: an empty message. */
        assert_int_equal(kc__cri_pack_list_pod_sandbox(NULL, &buf, &len), 0);
        assert_int_equal(len, 0);
        free(buf);

        /* READY is 0 on the wire: it must still travel, inside the state wrapper. */
        assert_int_equal(kc__cri_pack_list_pod_sandbox(
                                 &(struct kc_pod_sandbox_filter){ .state = KC_SANDBOX_STATE_READY,
                                                                  .label_selector = sel,
                                                                  .n_label_selector = 1 },
                                 &buf, &len),
                         0);
        sreq = unpack_request(&runtime__v1__list_pod_sandbox_request__descriptor, buf, len);
        assert_non_null(sreq->filter);
        assert_string_equal(sreq->filter->id, "");
        assert_non_null(sreq->filter->state);
        assert_int_equal(sreq->filter->state->state, RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY);
        assert_string_equal(MAP_GET(sreq->filter, label_selector, KC_LABEL_POD_UID), "uid-1");
        runtime__v1__list_pod_sandbox_request__free_unpacked(sreq, NULL);

        /* state -1: no state filter at all. */
        assert_int_equal(
                kc__cri_pack_list_pod_sandbox(
                        &(struct kc_pod_sandbox_filter){ .id = "sb-1", .state = -1 }, &buf, &len),
                0);
        sreq = unpack_request(&runtime__v1__list_pod_sandbox_request__descriptor, buf, len);
        assert_string_equal(sreq->filter->id, "sb-1");
        assert_null(sreq->filter->state);
        assert_int_equal(sreq->filter->n_label_selector, 0);
        runtime__v1__list_pod_sandbox_request__free_unpacked(sreq, NULL);

        assert_int_equal(kc__cri_pack_list_containers(
                                 &(struct kc_container_filter){ .pod_sandbox_id = "sb-1",
                                                                .state = KC_CONTAINER_STATE_EXITED,
                                                                .label_selector = sel,
                                                                .n_label_selector = 1 },
                                 &buf, &len),
                         0);
        creq = unpack_request(&runtime__v1__list_containers_request__descriptor, buf, len);
        assert_string_equal(creq->filter->pod_sandbox_id, "sb-1");
        assert_string_equal(creq->filter->id, "");
        assert_non_null(creq->filter->state);
        assert_int_equal(creq->filter->state->state,
                         RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED);
        assert_string_equal(MAP_GET(creq->filter, label_selector, KC_LABEL_POD_UID), "uid-1");
        runtime__v1__list_containers_request__free_unpacked(creq, NULL);

        assert_int_equal(
                kc__cri_pack_list_containers(
                        &(struct kc_container_filter){ .state = KC_CONTAINER_STATE_CREATED }, &buf,
                        &len),
                0);
        creq = unpack_request(&runtime__v1__list_containers_request__descriptor, buf, len);
        assert_non_null(creq->filter->state);
        assert_int_equal(creq->filter->state->state,
                         RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED);
        runtime__v1__list_containers_request__free_unpacked(creq, NULL);
        buf = NULL;

        /* Out-of-range states are refused. */
        assert_int_equal(kc__cri_pack_list_containers(&(struct kc_container_filter){ .state = 4 },
                                                      &buf, &len),
                         -EINVAL);
        assert_int_equal(kc__cri_pack_list_pod_sandbox(
                                 &(struct kc_pod_sandbox_filter){ .state = -2 }, &buf, &len),
                         -EINVAL);
        assert_null(buf);
}

static void test_pack_small_requests(void **state)
{
        Runtime__V1__StopContainerRequest *stop;
        Runtime__V1__ContainerStatusRequest *cs;
        Runtime__V1__VersionRequest *ver;
        Runtime__V1__ImageStatusRequest *is;
        Runtime__V1__PullImageRequest *pull;
        struct kc_pod_sandbox_config sb = sandbox_config(true);
        uint8_t *buf = NULL;
        size_t len = 0;

        (void)state;
        assert_int_equal(kc__cri_pack_stop_container("c-1", 30, &buf, &len), 0);
        stop = unpack_request(&runtime__v1__stop_container_request__descriptor, buf, len);
        assert_string_equal(stop->container_id, "c-1");
        assert_int_equal(stop->timeout, 30);
        runtime__v1__stop_container_request__free_unpacked(stop, NULL);

        assert_int_equal(kc__cri_pack_id_request(&runtime__v1__container_status_request__descriptor,
                                                 "c-2", &buf, &len),
                         0);
        cs = unpack_request(&runtime__v1__container_status_request__descriptor, buf, len);
        assert_string_equal(cs->container_id, "c-2");
        assert_false(cs->verbose);
        runtime__v1__container_status_request__free_unpacked(cs, NULL);

        assert_int_equal(kc__cri_pack_version(&buf, &len), 0);
        ver = unpack_request(&runtime__v1__version_request__descriptor, buf, len);
        assert_string_equal(ver->version, KC_CRI_CLIENT_API_VERSION);
        runtime__v1__version_request__free_unpacked(ver, NULL);

        assert_int_equal(kc__cri_pack_image_status("busybox:1", &buf, &len), 0);
        is = unpack_request(&runtime__v1__image_status_request__descriptor, buf, len);
        assert_string_equal(is->image->image, "busybox:1");
        runtime__v1__image_status_request__free_unpacked(is, NULL);

        assert_int_equal(kc__cri_pack_pull_image("busybox:1", &sb, &buf, &len), 0);
        pull = unpack_request(&runtime__v1__pull_image_request__descriptor, buf, len);
        assert_string_equal(pull->image->image, "busybox:1");
        assert_sandbox_config(pull->sandbox_config, true);
        runtime__v1__pull_image_request__free_unpacked(pull, NULL);

        assert_int_equal(kc__cri_pack_pull_image("busybox:1", NULL, &buf, &len), 0);
        pull = unpack_request(&runtime__v1__pull_image_request__descriptor, buf, len);
        assert_null(pull->sandbox_config);
        runtime__v1__pull_image_request__free_unpacked(pull, NULL);
}

/* ------------------------------------------------------------------------ */
/* Responses                                                                  */

static void test_unpack_version_and_status(void **state)
{
        Runtime__V1__VersionResponse v = RUNTIME__V1__VERSION_RESPONSE__INIT;
        Runtime__V1__StatusResponse s = RUNTIME__V1__STATUS_RESPONSE__INIT;
        Runtime__V1__RuntimeStatus rs = RUNTIME__V1__RUNTIME_STATUS__INIT;
        Runtime__V1__RuntimeCondition c0 = RUNTIME__V1__RUNTIME_CONDITION__INIT;
        Runtime__V1__RuntimeCondition c1 = RUNTIME__V1__RUNTIME_CONDITION__INIT;
        Runtime__V1__RuntimeCondition *conds[] = { &c0, &c1 };
        struct kc_runtime_status_result sr = { 0 };
        struct kc_version_result vr = { 0 };
        struct kc_runtime_error err = { 0 };

        (void)state;
        v.version = "0.1.0";
        v.runtime_name = "containerd";
        v.runtime_version = "1.6.20~ds1";
        v.runtime_api_version = "v1";
        assert_int_equal(UNPACK(kc__cri_unpack_version, &v.base, &vr, &err), 0);
        assert_string_equal(vr.runtime_name, "containerd");
        assert_string_equal(vr.runtime_version, "1.6.20~ds1");
        assert_string_equal(vr.runtime_api_version, "v1");
        assert_string_equal(vr.version, "0.1.0");
        kc_runtime_result_done(&vr);
        assert_null(vr.arena);

        c0.type = "RuntimeReady";
        c0.status = true;
        c1.type = "NetworkReady";
        c1.status = false;
        c1.reason = "NetworkPluginNotReady";
        c1.message = "Network plugin returns error: cni plugin not initialized";
        rs.conditions = conds;
        rs.n_conditions = 2;
        s.status = &rs;
        assert_int_equal(UNPACK(kc__cri_unpack_status, &s.base, &sr, &err), 0);
        assert_int_equal(sr.n_conditions, 2);
        assert_string_equal(sr.conditions[0].type, "RuntimeReady");
        assert_true(sr.conditions[0].status);
        assert_null(sr.conditions[0].reason); /* "" on the wire */
        assert_null(sr.conditions[0].message);
        assert_string_equal(sr.conditions[1].type, "NetworkReady");
        assert_false(sr.conditions[1].status);
        assert_string_equal(sr.conditions[1].reason, "NetworkPluginNotReady");
        kc_runtime_result_done(&sr);

        /* kubelet: both conditions are required. */
        rs.n_conditions = 1;
        assert_int_equal(UNPACK(kc__cri_unpack_status, &s.base, &sr, &err), -EPROTO);
        assert_int_equal(err.code, KC_RUNTIME_INTERNAL);
        assert_string_equal(err.message, "RuntimeReady or NetworkReady condition are not set");
        assert_null(sr.arena);
        assert_int_equal(kc__cri_unpack_status(NULL, 0, &sr, &err), -EPROTO);
}

static void test_unpack_ids(void **state)
{
        Runtime__V1__RunPodSandboxResponse rp = RUNTIME__V1__RUN_POD_SANDBOX_RESPONSE__INIT;
        Runtime__V1__CreateContainerResponse cc = RUNTIME__V1__CREATE_CONTAINER_RESPONSE__INIT;
        Runtime__V1__PullImageResponse pi = RUNTIME__V1__PULL_IMAGE_RESPONSE__INIT;
        struct kc_runtime_error err = { 0 };
        char *id = NULL;

        (void)state;
        rp.pod_sandbox_id = "4f5e";
        assert_int_equal(UNPACK(kc__cri_unpack_run_pod_sandbox, &rp.base, "web", &id, &err), 0);
        assert_string_equal(id, "4f5e");
        free(id);
        id = NULL;

        cc.container_id = "c0ffee";
        assert_int_equal(UNPACK(kc__cri_unpack_create_container, &cc.base, "app", &id, &err), 0);
        assert_string_equal(id, "c0ffee");
        free(id);
        id = NULL;

        pi.image_ref = "sha256:abcd";
        assert_int_equal(UNPACK(kc__cri_unpack_pull_image, &pi.base, "busybox:1", &id, &err), 0);
        assert_string_equal(id, "sha256:abcd");
        free(id);
        id = NULL;

        /* An empty id is kubelet's error, not a success with "". */
        assert_int_equal(kc__cri_unpack_run_pod_sandbox(NULL, 0, "web", &id, &err), -EPROTO);
        assert_int_equal(err.code, KC_RUNTIME_INTERNAL);
        assert_string_equal(err.message, "PodSandboxId is not set for sandbox \"web\"");
        assert_int_equal(kc__cri_unpack_create_container(NULL, 0, "app", &id, &err), -EPROTO);
        assert_string_equal(err.message, "ContainerId is not set for container \"app\"");
        assert_int_equal(kc__cri_unpack_pull_image(NULL, 0, "busybox:1", &id, &err), -EPROTO);
        assert_string_equal(err.message, "imageRef of image \"busybox:1\" is not set");
        assert_null(id);
}

static void test_unpack_list_pod_sandbox(void **state)
{
        Runtime__V1__ListPodSandboxResponse resp = RUNTIME__V1__LIST_POD_SANDBOX_RESPONSE__INIT;
        Runtime__V1__PodSandbox a = RUNTIME__V1__POD_SANDBOX__INIT;
        Runtime__V1__PodSandbox b = RUNTIME__V1__POD_SANDBOX__INIT;
        Runtime__V1__PodSandboxMetadata md = pod_metadata(1);
        Runtime__V1__PodSandbox *items[] = { &a, &b };
        struct kc_pod_sandbox_list l = { 0 };
        struct kc_runtime_error err = { 0 };

        (void)state;
        a.id = "sb-a";
        a.metadata = &md;
        a.state = RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY;
        a.created_at = INT64_C(1700000000123456789);
        a.labels = MAP_ENTRIES(
                Runtime__V1__PodSandbox__LabelsEntry, RUNTIME__V1__POD_SANDBOX__LABELS_ENTRY__INIT,
                { .key = KC_LABEL_POD_UID, .value = "uid-1" }, { .key = "app", .value = "nginx" });
        a.n_labels = 2;
        a.annotations = MAP_ENTRIES(Runtime__V1__PodSandbox__AnnotationsEntry,
                                    RUNTIME__V1__POD_SANDBOX__ANNOTATIONS_ENTRY__INIT,
                                    { .key = "note", .value = "x" });
        a.n_annotations = 1;
        b.id = "sb-b"; /* no metadata at all */
        b.state = RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_NOTREADY;
        b.created_at = 5;
        resp.items = items;
        resp.n_items = 2;
        assert_int_equal(UNPACK(kc__cri_unpack_list_pod_sandbox, &resp.base, &l, &err), 0);

        assert_int_equal(l.n, 2);
        assert_non_null(l.arena);
        assert_string_equal(l.items[0].id, "sb-a");
        assert_string_equal(l.items[0].metadata.name, "web");
        assert_string_equal(l.items[0].metadata.uid, "uid-1");
        assert_string_equal(l.items[0].metadata.namespace, "default");
        assert_int_equal(l.items[0].metadata.attempt, 1);
        assert_int_equal(l.items[0].state, KC_SANDBOX_STATE_READY);
        assert_true(l.items[0].created_at == INT64_C(1700000000123456789));
        assert_null(l.items[0].ip); /* list items carry no network status */
        assert_int_equal(l.items[0].n_labels, 2);
        assert_string_equal(label_get(l.items[0].labels, 2, "app"), "nginx");
        assert_string_equal(label_get(l.items[0].labels, 2, KC_LABEL_POD_UID), "uid-1");
        assert_int_equal(l.items[0].n_annotations, 1);
        assert_string_equal(l.items[0].annotations[0].key, "note");
        assert_string_equal(l.items[1].id, "sb-b");
        assert_int_equal(l.items[1].state, KC_SANDBOX_STATE_NOTREADY);
        assert_string_equal(l.items[1].metadata.name, "");
        assert_int_equal(l.items[1].created_at, 5);
        assert_int_equal(l.items[1].n_labels, 0);
        assert_null(l.items[1].labels);
        kc_runtime_result_done(&l);

        /* An empty list is an empty message. */
        assert_int_equal(kc__cri_unpack_list_pod_sandbox(NULL, 0, &l, &err), 0);
        assert_int_equal(l.n, 0);
        assert_null(l.items);
        kc_runtime_result_done(&l);
}

static void test_unpack_pod_sandbox_status(void **state)
{
        Runtime__V1__PodSandboxStatusResponse resp = RUNTIME__V1__POD_SANDBOX_STATUS_RESPONSE__INIT;
        Runtime__V1__PodSandboxStatus st = RUNTIME__V1__POD_SANDBOX_STATUS__INIT;
        Runtime__V1__PodSandboxMetadata md = pod_metadata(3);
        Runtime__V1__PodSandboxNetworkStatus net = RUNTIME__V1__POD_SANDBOX_NETWORK_STATUS__INIT;
        Runtime__V1__PodIP ip6 = RUNTIME__V1__POD_IP__INIT, empty = RUNTIME__V1__POD_IP__INIT;
        Runtime__V1__PodIP *extra[] = { &empty, &ip6 };
        struct kc_pod_sandbox_status_result r = { 0 };
        struct kc_runtime_error err = { 0 };

        (void)state;
        st.id = "sb-a";
        st.metadata = &md;
        st.state = RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_NOTREADY;
        st.created_at = 42;
        net.ip = "10.88.0.5";
        ip6.ip = "fd00::5";
        net.additional_ips = extra;
        net.n_additional_ips = 2;
        st.network = &net;
        resp.status = &st;
        assert_int_equal(UNPACK(kc__cri_unpack_pod_sandbox_status, &resp.base, &r, &err), 0);
        assert_string_equal(r.status.id, "sb-a");
        assert_int_equal(r.status.metadata.attempt, 3);
        assert_string_equal(r.status.metadata.namespace, "default");
        assert_int_equal(r.status.state, KC_SANDBOX_STATE_NOTREADY);
        assert_int_equal(r.status.created_at, 42);
        assert_string_equal(r.status.ip, "10.88.0.5");
        assert_int_equal(r.status.n_additional_ips, 1); /* the empty one is dropped */
        assert_string_equal(r.status.additional_ips[0], "fd00::5");
        kc_runtime_result_done(&r);

        /* Host network (containerd 1.6): a network status with an empty ip. */
        net.ip = "";
        net.n_additional_ips = 0;
        st.state = RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY;
        assert_int_equal(UNPACK(kc__cri_unpack_pod_sandbox_status, &resp.base, &r, &err), 0);
        assert_null(r.status.ip);
        assert_int_equal(r.status.n_additional_ips, 0);
        assert_null(r.status.additional_ips);
        assert_int_equal(r.status.state, KC_SANDBOX_STATE_READY);
        kc_runtime_result_done(&r);

        /* verifySandboxStatus */
        st.metadata = NULL;
        assert_int_equal(UNPACK(kc__cri_unpack_pod_sandbox_status, &resp.base, &r, &err), -EPROTO);
        assert_int_equal(err.code, KC_RUNTIME_INTERNAL);
        assert_string_equal(err.message, "status.Metadata is not set");
        st.metadata = &md;
        st.id = "";
        assert_int_equal(UNPACK(kc__cri_unpack_pod_sandbox_status, &resp.base, &r, &err), -EPROTO);
        assert_string_equal(err.message, "status.Id is not set");
        assert_int_equal(kc__cri_unpack_pod_sandbox_status(NULL, 0, &r, &err), -EPROTO);
        assert_null(r.arena);
}

static void test_unpack_list_containers(void **state)
{
        static const struct {
                int pb;
                enum kc_container_state kc;
        } states[] = {
                { RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED, KC_CONTAINER_STATE_CREATED },
                { RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING, KC_CONTAINER_STATE_RUNNING },
                { RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED, KC_CONTAINER_STATE_EXITED },
                { RUNTIME__V1__CONTAINER_STATE__CONTAINER_UNKNOWN, KC_CONTAINER_STATE_UNKNOWN },
                { 9, KC_CONTAINER_STATE_UNKNOWN }, /* a state from a newer CRI */
        };
        Runtime__V1__ListContainersResponse resp = RUNTIME__V1__LIST_CONTAINERS_RESPONSE__INIT;
        Runtime__V1__Container cs[KC_ELEMENTSOF(states)];
        Runtime__V1__Container *items[KC_ELEMENTSOF(states)];
        Runtime__V1__ContainerMetadata md = RUNTIME__V1__CONTAINER_METADATA__INIT;
        Runtime__V1__ImageSpec by_ref = RUNTIME__V1__IMAGE_SPEC__INIT;
        Runtime__V1__ImageSpec by_user = RUNTIME__V1__IMAGE_SPEC__INIT;
        struct kc_container_list l = { 0 };
        struct kc_runtime_error err = { 0 };
        size_t i;

        (void)state;
        md.name = "app";
        md.attempt = 4;
        by_ref.image = "localhost/ctrd-lab/busybox:1";
        by_user.image = "sha256:0123";
        by_user.user_specified_image = "busybox:1";
        for (i = 0; i < KC_ELEMENTSOF(states); i++) {
                Runtime__V1__Container init = RUNTIME__V1__CONTAINER__INIT;

                cs[i] = init;
                cs[i].id = i == 0 ? "c-0" : "c-n";
                cs[i].pod_sandbox_id = "sb-a";
                cs[i].metadata = i == 1 ? NULL : &md;
                cs[i].image = i == 2 ? &by_user : &by_ref;
                cs[i].image_ref = "sha256:0123";
                cs[i].state = states[i].pb;
                cs[i].created_at = (int64_t)i * KC_NSEC_PER_SEC + 7;
                items[i] = &cs[i];
        }
        cs[0].labels = MAP_ENTRIES(Runtime__V1__Container__LabelsEntry,
                                   RUNTIME__V1__CONTAINER__LABELS_ENTRY__INIT,
                                   { .key = KC_LABEL_CONTAINER_NAME, .value = "app" });
        cs[0].n_labels = 1;
        resp.containers = items;
        resp.n_containers = KC_ELEMENTSOF(states);
        assert_int_equal(UNPACK(kc__cri_unpack_list_containers, &resp.base, &l, &err), 0);

        assert_int_equal(l.n, KC_ELEMENTSOF(states));
        for (i = 0; i < l.n; i++) {
                assert_int_equal(l.items[i].state, states[i].kc);
                assert_true(l.items[i].created_at == (int64_t)i * KC_NSEC_PER_SEC + 7);
                assert_string_equal(l.items[i].pod_sandbox_id, "sb-a");
                assert_string_equal(l.items[i].image_ref, "sha256:0123");
        }
        assert_string_equal(l.items[0].id, "c-0");
        assert_string_equal(l.items[0].metadata.name, "app");
        assert_int_equal(l.items[0].metadata.attempt, 4);
        assert_string_equal(l.items[0].image, "localhost/ctrd-lab/busybox:1");
        assert_string_equal(
                label_get(l.items[0].labels, l.items[0].n_labels, KC_LABEL_CONTAINER_NAME), "app");
        assert_string_equal(l.items[1].metadata.name, ""); /* no metadata */
        assert_int_equal(l.items[1].metadata.attempt, 0);
        /* The image as the pod named it, when the runtime reports it. */
        assert_string_equal(l.items[2].image, "busybox:1");
        kc_runtime_result_done(&l);
}

static void test_unpack_container_status(void **state)
{
        Runtime__V1__ContainerStatusResponse resp = RUNTIME__V1__CONTAINER_STATUS_RESPONSE__INIT;
        Runtime__V1__ContainerStatus st = RUNTIME__V1__CONTAINER_STATUS__INIT;
        Runtime__V1__ContainerMetadata md = RUNTIME__V1__CONTAINER_METADATA__INIT;
        Runtime__V1__ImageSpec img = RUNTIME__V1__IMAGE_SPEC__INIT;
        struct kc_container_status_result r = { 0 };
        struct kc_runtime_error err = { 0 };

        (void)state;
        md.name = "app";
        md.attempt = 2;
        img.image = "localhost/ctrd-lab/busybox:1";
        st.id = "c-1";
        st.metadata = &md;
        st.state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED;
        st.created_at = INT64_C(1700000000000000001);
        st.started_at = INT64_C(1700000000100000000);
        st.finished_at = INT64_C(1700000001100000000);
        st.exit_code = 137;
        st.image = &img;
        st.image_ref = "sha256:0123";
        st.reason = "Error";
        st.log_path = "/var/log/pods/x/app/2.log";
        st.annotations = MAP_ENTRIES(Runtime__V1__ContainerStatus__AnnotationsEntry,
                                     RUNTIME__V1__CONTAINER_STATUS__ANNOTATIONS_ENTRY__INIT,
                                     { .key = KC_ANNOTATION_CONTAINER_HASH, .value = "beef" });
        st.n_annotations = 1;
        resp.status = &st;
        assert_int_equal(UNPACK(kc__cri_unpack_container_status, &resp.base, &r, &err), 0);
        assert_string_equal(r.status.id, "c-1");
        assert_null(r.status.pod_sandbox_id);
        assert_string_equal(r.status.metadata.name, "app");
        assert_int_equal(r.status.metadata.attempt, 2);
        assert_int_equal(r.status.state, KC_CONTAINER_STATE_EXITED);
        assert_true(r.status.created_at == INT64_C(1700000000000000001));
        assert_true(r.status.started_at == INT64_C(1700000000100000000));
        assert_true(r.status.finished_at == INT64_C(1700000001100000000));
        assert_int_equal(r.status.exit_code, 137);
        assert_string_equal(r.status.image, "localhost/ctrd-lab/busybox:1");
        assert_string_equal(r.status.image_ref, "sha256:0123");
        assert_string_equal(r.status.reason, "Error");
        assert_null(r.status.message); /* "" on the wire */
        assert_string_equal(label_get(r.status.annotations, r.status.n_annotations,
                                      KC_ANNOTATION_CONTAINER_HASH),
                            "beef");
        kc_runtime_result_done(&r);

        /* A running container: the unset times are 0. */
        st.state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
        st.finished_at = 0;
        st.exit_code = 0;
        st.reason = "";
        assert_int_equal(UNPACK(kc__cri_unpack_container_status, &resp.base, &r, &err), 0);
        assert_int_equal(r.status.state, KC_CONTAINER_STATE_RUNNING);
        assert_int_equal(r.status.finished_at, 0);
        assert_null(r.status.reason);
        kc_runtime_result_done(&r);

        /* verifyContainerStatus */
        st.image = NULL;
        assert_int_equal(UNPACK(kc__cri_unpack_container_status, &resp.base, &r, &err), -EPROTO);
        assert_string_equal(err.message, "status.Image is not set");
        resp.status = NULL;
        assert_int_equal(UNPACK(kc__cri_unpack_container_status, &resp.base, &r, &err), -EPROTO);
        assert_int_equal(err.code, KC_RUNTIME_INTERNAL);
        assert_null(r.arena);
}

static void test_unpack_image_status(void **state)
{
        Runtime__V1__ImageStatusResponse resp = RUNTIME__V1__IMAGE_STATUS_RESPONSE__INIT;
        Runtime__V1__Image img = RUNTIME__V1__IMAGE__INIT;
        char *tags[] = { "localhost/ctrd-lab/busybox:1" };
        char *digests[] = { "localhost/ctrd-lab/busybox@sha256:feed" };
        struct kc_image_status_result r = { .found = true };
        struct kc_runtime_error err = { 0 };

        (void)state;
        /* A missing image: success, not found. */
        assert_int_equal(kc__cri_unpack_image_status(NULL, 0, &r, &err), 0);
        assert_false(r.found);
        assert_null(r.arena);
        assert_null(r.image.id);

        img.id = "sha256:0123";
        img.repo_tags = tags;
        img.n_repo_tags = 1;
        img.repo_digests = digests;
        img.n_repo_digests = 1;
        img.size = 1234567;
        resp.image = &img;
        assert_int_equal(UNPACK(kc__cri_unpack_image_status, &resp.base, &r, &err), 0);
        assert_true(r.found);
        assert_string_equal(r.image.id, "sha256:0123");
        assert_int_equal(r.image.n_repo_tags, 1);
        assert_string_equal(r.image.repo_tags[0], "localhost/ctrd-lab/busybox:1");
        assert_int_equal(r.image.n_repo_digests, 1);
        assert_string_equal(r.image.repo_digests[0], "localhost/ctrd-lab/busybox@sha256:feed");
        assert_int_equal(r.image.size, 1234567);
        kc_runtime_result_done(&r);

        img.size = 0;
        r = (struct kc_image_status_result){ 0 };
        assert_int_equal(UNPACK(kc__cri_unpack_image_status, &resp.base, &r, &err), -EPROTO);
        assert_false(r.found);
        assert_string_equal(err.message, "id or size of image is not set");
}

static void test_unpack_garbage(void **state)
{
        /* Field 1, length-delimited, 5 bytes announced, 2 present. */
        static const uint8_t truncated[] = { 0x0a, 0x05, 'a', 'b' };
        /* A varint that never ends. */
        static const uint8_t endless[] = { 0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
                                           0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
        struct kc_version_result v = { 0 };
        struct kc_runtime_status_result s = { 0 };
        struct kc_pod_sandbox_list sl = { 0 };
        struct kc_pod_sandbox_status_result ss = { 0 };
        struct kc_container_list cl = { 0 };
        struct kc_container_status_result cs = { 0 };
        struct kc_image_status_result is = { 0 };
        struct kc_container_event ev = { 0 };
        struct kc_runtime_error err = { 0 };
        struct kc_arena *a = NULL;
        char *id = NULL;

        (void)state;
#define GARBAGE(call, method)                                                                      \
        do {                                                                                       \
                err = (struct kc_runtime_error){ 0 };                                              \
                assert_int_equal(call, -EPROTO);                                                   \
                assert_int_equal(err.code, KC_RUNTIME_INTERNAL);                                   \
                assert_string_equal(err.message, "failed to decode " method " response");          \
        } while (0)
        GARBAGE(kc__cri_unpack_version(truncated, sizeof(truncated), &v, &err), "Version");
        GARBAGE(kc__cri_unpack_status(endless, sizeof(endless), &s, &err), "Status");
        GARBAGE(kc__cri_unpack_run_pod_sandbox(truncated, sizeof(truncated), "web", &id, &err),
                "RunPodSandbox");
        GARBAGE(kc__cri_unpack_list_pod_sandbox(truncated, sizeof(truncated), &sl, &err),
                "ListPodSandbox");
        GARBAGE(kc__cri_unpack_pod_sandbox_status(endless, sizeof(endless), &ss, &err),
                "PodSandboxStatus");
        GARBAGE(kc__cri_unpack_create_container(truncated, sizeof(truncated), "app", &id, &err),
                "CreateContainer");
        GARBAGE(kc__cri_unpack_list_containers(endless, sizeof(endless), &cl, &err),
                "ListContainers");
        GARBAGE(kc__cri_unpack_container_status(truncated, sizeof(truncated), &cs, &err),
                "ContainerStatus");
        GARBAGE(kc__cri_unpack_image_status(truncated, sizeof(truncated), &is, &err),
                "ImageStatus");
        GARBAGE(kc__cri_unpack_pull_image(truncated, sizeof(truncated), "x", &id, &err),
                "PullImage");
        GARBAGE(kc__cri_unpack_empty(&runtime__v1__stop_container_response__descriptor,
                                     "StopContainer", truncated, sizeof(truncated), &err),
                "StopContainer");
        assert_int_equal(kc_arena_new(&a), 0);
        GARBAGE(kc__cri_unpack_container_event(truncated, sizeof(truncated), a, &ev, &err),
                "GetContainerEvents");
        kc_arena_free(a);
#undef GARBAGE
        /* Results untouched. */
        assert_null(v.arena);
        assert_null(sl.arena);
        assert_null(cl.arena);
        assert_null(id);
        assert_null(ev.container_id);
        /* Empty responses decode from 0 bytes and ignore unknown fields. */
        assert_int_equal(kc__cri_unpack_empty(&runtime__v1__stop_container_response__descriptor,
                                              "StopContainer", NULL, 0, &err),
                         0);
        assert_int_equal(kc__cri_unpack_empty(&runtime__v1__stop_container_response__descriptor,
                                              "StopContainer", (const uint8_t[]){ 0x08, 0x01 }, 2,
                                              &err),
                         0);
}

static void test_unpack_container_event(void **state)
{
        Runtime__V1__ContainerEventResponse resp = RUNTIME__V1__CONTAINER_EVENT_RESPONSE__INIT;
        Runtime__V1__PodSandboxStatus sb = RUNTIME__V1__POD_SANDBOX_STATUS__INIT;
        Runtime__V1__PodSandboxMetadata md = pod_metadata(0);
        Runtime__V1__ContainerStatus c0 = RUNTIME__V1__CONTAINER_STATUS__INIT;
        Runtime__V1__ContainerMetadata cmd = RUNTIME__V1__CONTAINER_METADATA__INIT;
        Runtime__V1__ContainerStatus *statuses[] = { &c0 };
        struct kc_runtime_error err = { 0 };
        struct kc_container_event ev;
        struct kc_arena *a = NULL;

        (void)state;
        sb.id = "sb-a";
        sb.metadata = &md;
        sb.created_at = 3;
        cmd.name = "app";
        c0.id = "c-1";
        c0.metadata = &cmd;
        c0.state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED;
        c0.exit_code = 3;
        resp.container_id = "c-1";
        resp.container_event_type = RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_STOPPED_EVENT;
        resp.created_at = INT64_C(1700000002000000000);
        resp.pod_sandbox_status = &sb;
        resp.containers_statuses = statuses;
        resp.n_containers_statuses = 1;
        assert_int_equal(kc_arena_new(&a), 0);
        assert_int_equal(UNPACK(kc__cri_unpack_container_event, &resp.base, a, &ev, &err), 0);
        assert_string_equal(ev.container_id, "c-1");
        assert_int_equal(ev.type, KC_CONTAINER_EVENT_STOPPED);
        assert_true(ev.created_at == INT64_C(1700000002000000000));
        assert_string_equal(ev.pod_sandbox_id, "sb-a");
        assert_string_equal(ev.pod_uid, "uid-1");
        assert_string_equal(ev.pod_name, "web");
        assert_string_equal(ev.pod_namespace, "default");
        assert_non_null(ev.sandbox);
        assert_int_equal(ev.sandbox->created_at, 3);
        assert_int_equal(ev.n_containers, 1);
        assert_string_equal(ev.containers[0].metadata.name, "app");
        assert_int_equal(ev.containers[0].state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(ev.containers[0].exit_code, 3);
        kc_arena_free(a);

        /* No sandbox status: the pod fields are NULL. */
        resp.pod_sandbox_status = NULL;
        resp.n_containers_statuses = 0;
        resp.container_event_type = RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_CREATED_EVENT;
        assert_int_equal(kc_arena_new(&a), 0);
        assert_int_equal(UNPACK(kc__cri_unpack_container_event, &resp.base, a, &ev, &err), 0);
        assert_int_equal(ev.type, KC_CONTAINER_EVENT_CREATED);
        assert_null(ev.pod_sandbox_id);
        assert_null(ev.pod_uid);
        assert_null(ev.sandbox);
        assert_int_equal(ev.n_containers, 0);
        assert_null(ev.containers);
        kc_arena_free(a);

        /* A type from a newer CRI: skipped (1), the event untouched. */
        resp.container_event_type = 7;
        assert_int_equal(kc_arena_new(&a), 0);
        ev.container_id = "untouched";
        assert_int_equal(UNPACK(kc__cri_unpack_container_event, &resp.base, a, &ev, &err), 1);
        assert_string_equal(ev.container_id, "untouched");
        kc_arena_free(a);

        assert_string_equal(kc_container_event_type_to_string(KC_CONTAINER_EVENT_CREATED),
                            "CONTAINER_CREATED_EVENT");
        assert_string_equal(kc_container_event_type_to_string(KC_CONTAINER_EVENT_DELETED),
                            "CONTAINER_DELETED_EVENT");
        assert_null(kc_container_event_type_to_string(_KC_CONTAINER_EVENT_TYPE_MAX));
        assert_null(kc_container_event_type_to_string(_KC_CONTAINER_EVENT_TYPE_INVALID));
}

/* ------------------------------------------------------------------------ */
/* GetContainerEvents: the callbacks, driven by hand                          */

struct events_probe {
        atomic_int events, closes;
        int r;
        struct kc_runtime_error err;
        char last_id[64];
        enum kc_container_event_type last_type;
};

static void probe_on_event(void *ud, const struct kc_container_event *ev)
{
        struct events_probe *p = ud;

        snprintf(p->last_id, sizeof(p->last_id), "%s", ev->container_id);
        p->last_type = ev->type;
        atomic_fetch_add(&p->events, 1);
}

static void probe_on_close(void *ud, int r, const struct kc_runtime_error *err)
{
        struct events_probe *p = ud;

        p->r = r;
        if (err)
                p->err = *err;
        atomic_fetch_add(&p->closes, 1);
}

static uint8_t *event_msg(const char *id, int type, size_t *ret_len)
{
        Runtime__V1__ContainerEventResponse resp = RUNTIME__V1__CONTAINER_EVENT_RESPONSE__INIT;

        resp.container_id = (char *)id;
        resp.container_event_type = type;
        resp.created_at = 1;
        return pack_msg(&resp.base, ret_len);
}

static void test_events_callbacks(void **state)
{
        static const uint8_t garbage[] = { 0x0a, 0x05, 'a' };
        struct kc_runtime_error cancelled = { .code = KC_RUNTIME_CANCELLED };
        struct events_probe p = { 0 };
        struct kc_cri_events *e = NULL;
        uint8_t *msg;
        size_t len;

        (void)state;
        assert_int_equal(kc__cri_events_new(NULL, probe_on_close, &p, &e), -EINVAL);
        assert_int_equal(kc__cri_events_new(probe_on_event, probe_on_close, &p, &e), 0);

        msg = event_msg("c-1", RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_STARTED_EVENT, &len);
        kc__cri_events_on_message(e, msg, len);
        free(msg);
        assert_int_equal(atomic_load(&p.events), 1);
        assert_string_equal(p.last_id, "c-1");
        assert_int_equal(p.last_type, KC_CONTAINER_EVENT_STARTED);

        /* A type from a newer CRI is skipped; the stream goes on. */
        msg = event_msg("c-2", 42, &len);
        kc__cri_events_on_message(e, msg, len);
        free(msg);
        assert_int_equal(atomic_load(&p.events), 1);
        assert_int_equal(atomic_load(&p.closes), 0);

        /* A message that does not decode ends the stream for the user, once. */
        kc__cri_events_on_message(e, garbage, sizeof(garbage));
        assert_int_equal(atomic_load(&p.closes), 1);
        assert_int_equal(p.r, -EPROTO);
        assert_int_equal(p.err.code, KC_RUNTIME_INTERNAL);
        assert_string_equal(p.err.message, "failed to decode GetContainerEvents response");

        /* Nothing after it: neither events nor the transport's own close. */
        msg = event_msg("c-3", RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_DELETED_EVENT, &len);
        kc__cri_events_on_message(e, msg, len);
        free(msg);
        kc__cri_events_on_close(e, -ECANCELED, &cancelled);
        assert_int_equal(atomic_load(&p.events), 1);
        assert_int_equal(atomic_load(&p.closes), 1);
        assert_int_equal(p.r, -EPROTO);
        e = kc_cri_events_close(e);
        assert_null(e);

        /* The server's end is passed on, once; on_close may be NULL. */
        p = (struct events_probe){ 0 };
        assert_int_equal(kc__cri_events_new(probe_on_event, probe_on_close, &p, &e), 0);
        kc__cri_events_on_close(e, -EOPNOTSUPP,
                                &(struct kc_runtime_error){ .code = KC_RUNTIME_UNIMPLEMENTED,
                                                            .message = "not implemented" });
        kc__cri_events_on_close(e, -ECANCELED, &cancelled);
        assert_int_equal(atomic_load(&p.closes), 1);
        assert_int_equal(p.r, -EOPNOTSUPP);
        assert_int_equal(p.err.code, KC_RUNTIME_UNIMPLEMENTED);
        kc_cri_events_close(e);
        assert_int_equal(kc__cri_events_new(probe_on_event, NULL, NULL, &e), 0);
        kc__cri_events_on_close(e, 0, NULL);
        kc_cri_events_close(e);
}

/* ------------------------------------------------------------------------ */
/* Through the transport, against fake_grpc_server.h                          */

#define REQUEST_TIMEOUT (5 * KC_NSEC_PER_SEC)

struct server_fixture {
        char dir[64];
        char sock[128];
        struct fs_server *srv;
        struct kc_cri *cri;
        struct kc_runtime_service svc;
};

static int server_setup(void **state)
{
        struct server_fixture *f = calloc(1, sizeof(*f));
        char ep[160];

        assert_non_null(f);
        snprintf(f->dir, sizeof(f->dir), "/tmp/kc-cri-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        snprintf(f->sock, sizeof(f->sock), "%s/cri.sock", f->dir);
        f->srv = fs_start(f->sock, 0);
        snprintf(ep, sizeof(ep), "unix://%s", f->sock);
        assert_int_equal(kc_cri_new(ep, REQUEST_TIMEOUT, &f->cri), 0);
        f->svc = kc_cri_service(f->cri);
        *state = f;
        return 0;
}

static int server_teardown(void **state)
{
        struct server_fixture *f = *state;

        f->cri = kc_cri_free(f->cri);
        fs_stop(f->srv);
        rmdir(f->dir);
        free(f);
        return 0;
}

/* A grpc-timeout header value ("35000000u") in ns; -1 when malformed. */
static int64_t parse_grpc_timeout(const char *s)
{
        static const struct {
                char unit;
                int64_t ns;
        } units[] = {
                { 'n', 1 },
                { 'u', KC_NSEC_PER_USEC },
                { 'm', KC_NSEC_PER_MSEC },
                { 'S', KC_NSEC_PER_SEC },
                { 'M', KC_NSEC_PER_MIN },
                { 'H', 60 * KC_NSEC_PER_MIN },
        };
        char *end = NULL;
        long long v = strtoll(s, &end, 10);

        if (!end || end == s || end[0] == 0 || end[1] != 0)
                return -1;
        for (size_t i = 0; i < KC_ELEMENTSOF(units); i++)
                if (units[i].unit == *end)
                        return (int64_t)v * units[i].ns;
        return -1;
}

static void test_server_paths_and_errors(void **state)
{
        struct server_fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        struct kc_version_result v = { 0 };
        struct kc_image_status_result is = { 0 };
        struct kc_container_list cl = { 0 };
        char buf[256];

        assert_int_equal(f->svc.ops->version(f->svc.self, &v, &err), -EOPNOTSUPP);
        assert_int_equal(err.code, KC_RUNTIME_UNIMPLEMENTED);
        assert_string_equal(err.message, "unknown method");
        assert_null(v.arena);
        fs_last(f->srv, ":path", buf, sizeof(buf));
        assert_string_equal(buf, "/runtime.v1.RuntimeService/Version");
        fs_last(f->srv, "content-type", buf, sizeof(buf));
        assert_string_equal(buf, "application/grpc");
        fs_last(f->srv, "grpc-timeout", buf, sizeof(buf));
        assert_true(parse_grpc_timeout(buf) > 0 && parse_grpc_timeout(buf) <= REQUEST_TIMEOUT);

        /* An error is an error, even for ImageStatus (not "not found"). */
        is.found = true;
        assert_int_equal(f->svc.ops->image_status(f->svc.self, "busybox:1", &is, &err),
                         -EOPNOTSUPP);
        fs_last(f->srv, ":path", buf, sizeof(buf));
        assert_string_equal(buf, "/runtime.v1.ImageService/ImageStatus");
        assert_null(is.arena);

        assert_int_equal(f->svc.ops->list_containers(f->svc.self, NULL, &cl, &err), -EOPNOTSUPP);
        fs_last(f->srv, ":path", buf, sizeof(buf));
        assert_string_equal(buf, "/runtime.v1.RuntimeService/ListContainers");
        assert_int_equal(f->svc.ops->remove_pod_sandbox(f->svc.self, "sb-1", &err), -EOPNOTSUPP);
        fs_last(f->srv, ":path", buf, sizeof(buf));
        assert_string_equal(buf, "/runtime.v1.RuntimeService/RemovePodSandbox");
        assert_int_equal(
                f->svc.ops->pull_image(f->svc.self, "busybox:1", NULL, &(char *){ NULL }, &err),
                -EOPNOTSUPP);
        fs_last(f->srv, ":path", buf, sizeof(buf));
        assert_string_equal(buf, "/runtime.v1.ImageService/PullImage");

        /* The runtime goes away: UNAVAILABLE. */
        fs_stop(f->srv);
        f->srv = NULL;
        assert_int_equal(
                f->svc.ops->status(f->svc.self, &(struct kc_runtime_status_result){ 0 }, &err),
                -ECONNREFUSED);
        assert_int_equal(err.code, KC_RUNTIME_UNAVAILABLE);
}

/* StopContainer's deadline is its grace period plus the request timeout (kubelet). */
static void test_server_stop_container_deadline(void **state)
{
        struct server_fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        char buf[64];
        int64_t t;

        assert_int_equal(f->svc.ops->stop_container(f->svc.self, "c-1", 30, &err), -EOPNOTSUPP);
        fs_last(f->srv, ":path", buf, sizeof(buf));
        assert_string_equal(buf, "/runtime.v1.RuntimeService/StopContainer");
        fs_last(f->srv, "grpc-timeout", buf, sizeof(buf));
        t = parse_grpc_timeout(buf);
        assert_true(t > 30 * KC_NSEC_PER_SEC + REQUEST_TIMEOUT - 2 * KC_NSEC_PER_SEC);
        assert_true(t <= 30 * KC_NSEC_PER_SEC + REQUEST_TIMEOUT);

        assert_int_equal(f->svc.ops->stop_container(f->svc.self, "c-1", 0, &err), -EOPNOTSUPP);
        fs_last(f->srv, "grpc-timeout", buf, sizeof(buf));
        t = parse_grpc_timeout(buf);
        assert_true(t > 0 && t <= REQUEST_TIMEOUT);
}

/*
 * ExecSync's deadline is its timeout plus the request timeout; without a
 * timeout there is none (kubelet's remote runtime).
 */
static void test_server_exec_sync_deadline(void **state)
{
        static const char *const argv[] = { "true" };
        struct server_fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        struct kc_exec_sync_result x = { 0 };
        char buf[64];
        int64_t t;

        assert_non_null(f->svc.ops->exec_sync);
        assert_int_equal(f->svc.ops->exec_sync(f->svc.self, "c-1", argv, 1, 10, &x, &err),
                         -EOPNOTSUPP);
        assert_null(x.out);
        fs_last(f->srv, ":path", buf, sizeof(buf));
        assert_string_equal(buf, "/runtime.v1.RuntimeService/ExecSync");
        fs_last(f->srv, "grpc-timeout", buf, sizeof(buf));
        t = parse_grpc_timeout(buf);
        assert_true(t > 10 * KC_NSEC_PER_SEC + REQUEST_TIMEOUT - 2 * KC_NSEC_PER_SEC);
        assert_true(t <= 10 * KC_NSEC_PER_SEC + REQUEST_TIMEOUT);

        assert_int_equal(f->svc.ops->exec_sync(f->svc.self, "c-1", argv, 1, 0, &x, &err),
                         -EOPNOTSUPP);
        fs_last(f->srv, "grpc-timeout", buf, sizeof(buf));
        assert_string_equal(buf, ""); /* no deadline */

        assert_int_equal(f->svc.ops->exec_sync(f->svc.self, NULL, argv, 1, 0, &x, &err), -EINVAL);
        assert_int_equal(f->svc.ops->exec_sync(f->svc.self, "c-1", argv, 1, -1, &x, &err), -EINVAL);
        assert_int_equal(f->svc.ops->exec_sync(f->svc.self, "c-1", argv, 0, 1, &x, &err), -EINVAL);
        assert_int_equal(err.code, KC_RUNTIME_INVALID_ARGUMENT);
}

/* containerd 1.6's answer to GetContainerEvents: the stream ends at once. */
static void test_server_events_unimplemented(void **state)
{
        struct server_fixture *f = *state;
        struct kc_runtime_error err = { 0 };
        struct events_probe p = { 0 };
        struct kc_cri_events *e = NULL;
        char buf[256];

        assert_int_equal(
                kc_cri_get_container_events(f->cri, probe_on_event, probe_on_close, &p, &e, &err),
                0);
        assert_non_null(e);
        assert_true(KC_TEST_WAIT_UNTIL(atomic_load(&p.closes) == 1, 5000));
        assert_int_equal(p.r, -EOPNOTSUPP);
        assert_int_equal(p.err.code, KC_RUNTIME_UNIMPLEMENTED);
        assert_int_equal(atomic_load(&p.events), 0);
        fs_last(f->srv, ":path", buf, sizeof(buf));
        assert_string_equal(buf, "/runtime.v1.RuntimeService/GetContainerEvents");
        e = kc_cri_events_close(e);
        assert_int_equal(atomic_load(&p.closes), 1);
        assert_int_equal(kc_cri_get_container_events(f->cri, NULL, NULL, NULL, &e, &err), -EINVAL);
        assert_null(e);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_endpoint),
                cmocka_unit_test(test_new_rejects),
                cmocka_unit_test(test_service_args),
                cmocka_unit_test(test_pack_run_pod_sandbox),
                cmocka_unit_test(test_pack_create_container),
                cmocka_unit_test(test_pack_sandbox_every_field),
                cmocka_unit_test(test_pack_container_every_field),
                cmocka_unit_test(test_pack_unpack_exec_sync),
                cmocka_unit_test(test_pack_filters),
                cmocka_unit_test(test_pack_small_requests),
                cmocka_unit_test(test_unpack_version_and_status),
                cmocka_unit_test(test_unpack_ids),
                cmocka_unit_test(test_unpack_list_pod_sandbox),
                cmocka_unit_test(test_unpack_pod_sandbox_status),
                cmocka_unit_test(test_unpack_list_containers),
                cmocka_unit_test(test_unpack_container_status),
                cmocka_unit_test(test_unpack_image_status),
                cmocka_unit_test(test_unpack_garbage),
                cmocka_unit_test(test_unpack_container_event),
                cmocka_unit_test(test_events_callbacks),
                cmocka_unit_test_setup_teardown(test_server_paths_and_errors, server_setup,
                                                server_teardown),
                cmocka_unit_test_setup_teardown(test_server_stop_container_deadline, server_setup,
                                                server_teardown),
                cmocka_unit_test_setup_teardown(test_server_exec_sync_deadline, server_setup,
                                                server_teardown),
                cmocka_unit_test_setup_teardown(test_server_events_unimplemented, server_setup,
                                                server_teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
