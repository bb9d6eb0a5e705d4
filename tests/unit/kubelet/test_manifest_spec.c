/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Static-pod manifests, the whole v1 spec (issue 14): every field parsed
 * into kc_api_pod, upstream's v1 defaults, validation errors, quantities,
 * and the warnings for fields cubelet does not honour.
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
#include <cmocka.h>

#include "kubelet/config/manifest.h"
#include "manifest_internal.h"
#include "runtime/api_pod.h"

static const char spec_yaml[] =
        "apiVersion: v1\n"
        "kind: Pod\n"
        "metadata: {name: full, namespace: kube-system}\n"
        "spec:\n"
        "  nodeName: elsewhere\n"
        "  serviceAccount: old-sa\n"
        "  hostPID: true\n"
        "  hostIPC: true\n"
        "  shareProcessNamespace: true\n"
        "  hostname: h1\n"
        "  subdomain: sub\n"
        "  priorityClassName: system-node-critical\n"
        "  priority: 2000001000\n"
        "  enableServiceLinks: false\n"
        "  dnsPolicy: None\n"
        "  dnsConfig:\n"
        "    nameservers: [1.1.1.1]\n"
        "    searches: [svc.local]\n"
        "    options: [{name: ndots, value: '2'}, {name: edns0}]\n"
        "  hostAliases: [{ip: 10.0.0.1, hostnames: [a.local, b.local]}]\n"
        "  securityContext:\n"
        "    runAsUser: 1000\n"
        "    runAsGroup: 3000\n"
        "    runAsNonRoot: true\n"
        "    fsGroup: 2000\n"
        "    supplementalGroups: [4, 5]\n"
        "    sysctls: [{name: net.core.somaxconn, value: '1024'}]\n"
        "    seccompProfile: {type: RuntimeDefault}\n"
        "  volumes:\n"
        "  - name: data\n"
        "    hostPath: {path: /srv/data, type: DirectoryOrCreate}\n"
        "  - name: cache\n"
        "    emptyDir: {medium: Memory, sizeLimit: 64Mi}\n"
        "  - name: plain\n"
        "  - name: cfg\n"
        "    configMap: {name: my-config}\n"
        "  initContainers:\n"
        "  - name: side\n"
        "    image: busybox:1.36\n"
        "    restartPolicy: Always\n"
        "    readinessProbe:\n"
        "      exec: {command: [cat, /tmp/ready]}\n"
        "      successThreshold: 2\n"
        "  containers:\n"
        "  - name: app\n"
        "    image: busybox:1.36\n"
        "    command: [sh, -c]\n"
        "    args: ['echo $(GREETING)']\n"
        "    workingDir: /work\n"
        "    stdin: true\n"
        "    tty: true\n"
        "    ports:\n"
        "    - {name: http, containerPort: 80, hostPort: 8080, hostIP: 127.0.0.1}\n"
        "    - {containerPort: 53, protocol: UDP}\n"
        "    env:\n"
        "    - {name: GREETING, value: hello}\n"
        "    - name: POD\n"
        "      valueFrom: {fieldRef: {fieldPath: metadata.name}}\n"
        "    - name: APP\n"
        "      valueFrom: {fieldRef: {apiVersion: v1, fieldPath: \"metadata.labels['app']\"}}\n"
        "    - name: MEM\n"
        "      valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}\n"
        "    - name: CPU\n"
        "      valueFrom: {resourceFieldRef: {containerName: app, resource: requests.cpu}}\n"
        "    - name: SECRET\n"
        "      valueFrom: {secretKeyRef: {name: s, key: k, optional: true}}\n"
        "    envFrom:\n"
        "    - {prefix: CM_, configMapRef: {name: cm}}\n"
        "    resources:\n"
        "      limits: {memory: 128Mi, cpu: 500m}\n"
        "      requests: {cpu: 250m}\n"
        "    volumeMounts:\n"
        "    - {name: data, mountPath: /data, readOnly: true, subPath: app,\n"
        "       mountPropagation: HostToContainer}\n"
        "    - {name: cache, mountPath: /cache}\n"
        "    lifecycle:\n"
        "      postStart: {exec: {command: [touch, /tmp/started]}}\n"
        "      preStop:\n"
        "        httpGet: {port: http, httpHeaders: [{name: X-Stop, value: '1'}]}\n"
        "    livenessProbe:\n"
        "      httpGet: {path: /healthz, port: 8080, scheme: HTTPS}\n"
        "      initialDelaySeconds: 5\n"
        "      terminationGracePeriodSeconds: 9\n"
        "    terminationMessagePath: /tmp/msg\n"
        "    terminationMessagePolicy: FallbackToLogsOnError\n"
        "    securityContext:\n"
        "      runAsUser: 0\n"
        "      privileged: false\n"
        "      readOnlyRootFilesystem: true\n"
        "      allowPrivilegeEscalation: false\n"
        "      capabilities: {add: [NET_ADMIN], drop: [ALL]}\n"
        "      procMount: Default\n"
        "      seccompProfile: {type: Localhost, localhostProfile: prof.json}\n";

static struct kc_api_pod *parse_w(const char *doc, struct kc_manifest_warnings *w)
{
        struct kc_api_pod *p = NULL;
        char *err = NULL;
        int r;

        r = kc_manifest_parse_warn(doc, strlen(doc), "m.yaml", "node-1", 0, &p, &err, w);
        if (r < 0)
                fail_msg("parse failed (%d): %s", r, err ? err : "?");
        free(err);
        return p;
}

static struct kc_api_pod *parse_ok(const char *doc)
{
        return parse_w(doc, NULL);
}

static void check_pod_level(const struct kc_api_pod *p)
{
        assert_string_equal(p->node_name, "node-1"); /* applyDefaults: this node */
        assert_string_equal(p->service_account_name, "old-sa");
        assert_true(p->host_pid && p->host_ipc && p->share_process_namespace);
        assert_string_equal(p->hostname, "h1");
        assert_string_equal(p->subdomain, "sub");
        assert_string_equal(p->priority_class_name, "system-node-critical");
        assert_true(p->priority.set && p->priority.v == 2000001000);
        assert_int_equal(p->enable_service_links, KC_OPT_FALSE);
        assert_int_equal(p->dns_policy, KC_DNS_NONE);
        assert_true(p->has_dns_config);
        assert_string_equal(p->dns_config.nameservers[0], "1.1.1.1");
        assert_string_equal(p->dns_config.searches[0], "svc.local");
        assert_int_equal(p->dns_config.n_options, 2);
        assert_string_equal(p->dns_config.options[0].value, "2");
        assert_null(p->dns_config.options[1].value);
        assert_int_equal(p->n_host_aliases, 1);
        assert_string_equal(p->host_aliases[0].hostnames[1], "b.local");
        assert_true(p->security_context.run_as_user.set);
        assert_int_equal(p->security_context.run_as_user.v, 1000);
        assert_int_equal(p->security_context.run_as_group.v, 3000);
        assert_int_equal(p->security_context.run_as_non_root, KC_OPT_TRUE);
        assert_int_equal(p->security_context.fs_group.v, 2000);
        assert_int_equal(p->security_context.n_supplemental_groups, 2);
        assert_int_equal(p->security_context.supplemental_groups[1], 5);
        assert_string_equal(p->security_context.sysctls[0].name, "net.core.somaxconn");
        assert_string_equal(p->security_context.seccomp.type, "RuntimeDefault");
        assert_int_equal(p->n_volumes, 4);
        assert_int_equal(p->volumes[0].kind, KC_VOLUME_HOST_PATH);
        assert_string_equal(p->volumes[0].host_path, "/srv/data");
        assert_int_equal(p->volumes[0].host_path_type, KC_HOST_PATH_DIRECTORY_OR_CREATE);
        assert_int_equal(p->volumes[1].kind, KC_VOLUME_EMPTY_DIR);
        assert_true(p->volumes[1].medium_memory && p->volumes[1].has_size_limit);
        assert_int_equal(p->volumes[1].size_limit.milli, INT64_C(64) * 1048576 * 1000);
        /* no source: SetDefaults_Volume makes it an emptyDir */
        assert_int_equal(p->volumes[2].kind, KC_VOLUME_EMPTY_DIR);
        assert_string_equal(p->volumes[2].kind_name, "emptyDir");
        assert_int_equal(p->volumes[3].kind, KC_VOLUME_OTHER);
        assert_string_equal(p->volumes[3].kind_name, "configMap");
}

static void check_env(const struct kc_api_container *c)
{
        assert_int_equal(c->n_env, 6);
        assert_string_equal(c->env[0].value, "hello");
        assert_int_equal(c->env[1].source, KC_ENV_SOURCE_FIELD_REF);
        assert_string_equal(c->env[1].field_path, "metadata.name");
        assert_string_equal(c->env[2].field_path, "metadata.labels['app']");
        assert_int_equal(c->env[3].source, KC_ENV_SOURCE_RESOURCE_FIELD);
        assert_null(c->env[3].resource_container);
        assert_string_equal(c->env[3].resource, "limits.memory");
        assert_int_equal(c->env[3].divisor.milli, INT64_C(1048576) * 1000);
        assert_string_equal(c->env[4].resource_container, "app");
        assert_string_equal(c->env[4].divisor.text, "1"); /* default divisor */
        assert_int_equal(c->env[5].source, KC_ENV_SOURCE_SECRET_KEY);
        assert_string_equal(c->env[5].ref_key, "k");
        assert_int_equal(c->env[5].ref_optional, KC_OPT_TRUE);
        assert_int_equal(c->n_env_from, 1);
        assert_false(c->env_from[0].secret);
        assert_string_equal(c->env_from[0].prefix, "CM_");
        assert_string_equal(c->env_from[0].ref_name, "cm");
}

static void check_app(const struct kc_api_container *c)
{
        assert_string_equal(c->working_dir, "/work");
        assert_true(c->stdin && c->tty && !c->stdin_once);
        assert_int_equal(c->n_ports, 2);
        assert_string_equal(c->ports[0].name, "http");
        assert_int_equal(c->ports[0].host_port, 8080);
        assert_string_equal(c->ports[0].host_ip, "127.0.0.1");
        assert_string_equal(c->ports[0].protocol, "TCP");
        assert_string_equal(c->ports[1].protocol, "UDP");
        check_env(c);
        /* sorted by name; the memory request defaults to its limit */
        assert_int_equal(c->resources.n_limits, 2);
        assert_string_equal(c->resources.limits[0].name, "cpu");
        assert_int_equal(c->resources.limits[0].q.milli, 500);
        assert_int_equal(c->resources.n_requests, 2);
        assert_string_equal(c->resources.requests[0].q.text, "250m");
        assert_string_equal(c->resources.requests[1].name, "memory");
        assert_string_equal(c->resources.requests[1].q.text, "128Mi");
        assert_int_equal(c->n_volume_mounts, 2);
        assert_true(c->volume_mounts[0].read_only);
        assert_string_equal(c->volume_mounts[0].sub_path, "app");
        assert_int_equal(c->volume_mounts[0].propagation, KC_MOUNT_PROPAGATION_HOST_TO_CONTAINER);
        assert_int_equal(c->lifecycle->post_start.kind, KC_HANDLER_EXEC);
        assert_string_equal(c->lifecycle->post_start.command[1], "/tmp/started");
        assert_int_equal(c->lifecycle->pre_stop.kind, KC_HANDLER_HTTP_GET);
        assert_string_equal(c->lifecycle->pre_stop.port.name, "http");
        assert_string_equal(c->lifecycle->pre_stop.path, "/"); /* default */
        assert_false(c->lifecycle->pre_stop.https);
        assert_string_equal(c->lifecycle->pre_stop.headers[0].name, "X-Stop");
        assert_true(c->liveness_probe->present);
        assert_true(c->liveness_probe->handler.https);
        assert_int_equal(c->liveness_probe->handler.port.number, 8080);
        assert_int_equal(c->liveness_probe->initial_delay_seconds, 5);
        assert_int_equal(c->liveness_probe->timeout_seconds, 1);
        assert_int_equal(c->liveness_probe->period_seconds, 10);
        assert_int_equal(c->liveness_probe->success_threshold, 1);
        assert_int_equal(c->liveness_probe->failure_threshold, 3);
        assert_int_equal(c->liveness_probe->termination_grace_period_seconds.v, 9);
        assert_null(c->readiness_probe);
        assert_string_equal(c->termination_message_path, "/tmp/msg");
        assert_int_equal(c->termination_message_policy,
                         KC_TERMINATION_MESSAGE_FALLBACK_TO_LOGS_ON_ERROR);
        assert_true(c->security_context->present);
        assert_true(c->security_context->run_as_user.set &&
                    c->security_context->run_as_user.v == 0);
        assert_int_equal(c->security_context->privileged, KC_OPT_FALSE);
        assert_int_equal(c->security_context->read_only_root_filesystem, KC_OPT_TRUE);
        assert_int_equal(c->security_context->allow_privilege_escalation, KC_OPT_FALSE);
        assert_string_equal(c->security_context->capabilities.add[0], "NET_ADMIN");
        assert_string_equal(c->security_context->capabilities.drop[0], "ALL");
        assert_string_equal(c->security_context->proc_mount, "Default");
        assert_string_equal(c->security_context->seccomp.localhost_profile, "prof.json");
}

/* Every honoured field reaches kc_api_pod, and the copy owns it (issue 14). */
static void test_every_field(void **state)
{
        struct kc_api_pod *p = parse_ok(spec_yaml);

        (void)state;
        check_pod_level(p);
        check_app(&p->containers[0]);
        assert_true(p->init_containers[0].restart_policy_always);
        assert_true(p->init_containers[0].readiness_probe->present);
        assert_int_equal(p->init_containers[0].readiness_probe->success_threshold, 2);
        kc_api_pod_unref(p);
}

/* Upstream's v1 defaults as the file source applies them. */
static void test_defaults(void **state)
{
        static const char doc[] = "apiVersion: v1\nkind: Pod\nmetadata: {name: d}\n"
                                  "spec:\n"
                                  "  hostNetwork: true\n"
                                  "  containers:\n"
                                  "  - name: c\n"
                                  "    image: busybox\n"
                                  "    ports: [{containerPort: 9000}]\n"
                                  "    resources: {limits: {memory: 1Gi}}\n"
                                  "    readinessProbe: {tcpSocket: {port: 9000}}\n";
        struct kc_api_pod *p = parse_ok(doc);
        const struct kc_api_container *c = &p->containers[0];

        (void)state;
        assert_string_equal(p->node_name, "node-1");
        assert_int_equal(p->dns_policy, KC_DNS_CLUSTER_FIRST);
        assert_int_equal(p->enable_service_links, KC_OPT_TRUE);
        assert_int_equal(p->termination_grace_s, 30);
        assert_null(p->service_account_name);
        assert_string_equal(c->termination_message_path, "/dev/termination-log");
        assert_int_equal(c->termination_message_policy, KC_TERMINATION_MESSAGE_FILE);
        assert_string_equal(c->ports[0].protocol, "TCP");
        assert_int_equal(c->ports[0].host_port, 9000); /* host network: hostPort = containerPort */
        assert_int_equal(c->resources.n_requests, 1);
        assert_string_equal(c->resources.requests[0].q.text, "1Gi");
        assert_int_equal(c->readiness_probe->timeout_seconds, 1);
        assert_int_equal(c->readiness_probe->period_seconds, 10);
        assert_int_equal(c->readiness_probe->success_threshold, 1);
        assert_int_equal(c->readiness_probe->failure_threshold, 3);
        assert_null(c->security_context);
        assert_null(c->working_dir);
        assert_false(c->restart_policy_always);
        kc_api_pod_unref(p);
}

/* resource.Quantity syntax: suffixes, exponents, rounding up to milli, errors. */
static void test_quantities(void **state)
{
        static const struct {
                const char *s;
                int64_t milli;
        } ok[] = {
                { "1", 1000 },
                { "500m", 500 },
                { "0.5", 500 },
                { ".5", 500 },
                { "1.5Gi", INT64_C(1610612736000) },
                { "128Mi", INT64_C(134217728000) },
                { "1Ki", 1024000 },
                { "1k", 1000000 },
                { "2M", INT64_C(2000000000) },
                { "1e3", 1000000 },
                { "1E3", 1000000 },
                { "1E", INT64_MAX }, /* 1e21 milli: saturates */
                { "1.0001m", 2 },    /* rounds up */
                { "100n", 1 },
                { "0", 0 },
                { "+3", 3000 },
                { "-1", -1000 },
                { "12e-3", 12 },
                { "5Pi", INT64_C(5629499534213120000) },
        };
        static const char *const bad[] = { "",   "m",   "1.2.3", "1 Gi", "1Gb", "1i", "e3",
                                           "1e", "--1", "0x10",  "1..",  "1e+", "Mi" };
        size_t i;
        int64_t m;

        (void)state;
        for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                m = -42;
                if (kc__mf_parse_quantity(ok[i].s, &m) != 0 || m != ok[i].milli)
                        fail_msg("quantity \"%s\": got %lld, want %lld", ok[i].s, (long long)m,
                                 (long long)ok[i].milli);
        }
        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (kc__mf_parse_quantity(bad[i], &m) != -EINVAL)
                        fail_msg("quantity \"%s\" should be refused", bad[i]);
}

/* A container snippet inside a minimal pod, with @p pod_extra at spec level. */
static void expect_error(const char *pod_extra, const char *container_extra, const char *want)
{
        char doc[4096];
        struct kc_api_pod *p = NULL;
        char *err = NULL;
        int r;

        snprintf(doc, sizeof(doc),
                 "apiVersion: v1\nkind: Pod\nmetadata: {name: e}\nspec:\n%s"
                 "  containers:\n  - name: c\n    image: busybox\n%s",
                 pod_extra, container_extra);
        r = kc_manifest_parse(doc, strlen(doc), "e.yaml", "n", 0, &p, &err);
        if (r != -EBADMSG || !err || strcmp(err, want) != 0)
                fail_msg("%s%s: got %d \"%s\", want \"%s\"", pod_extra, container_extra, r,
                         err ? err : "(none)", want);
        free(err);
}

/* Upstream's validation: the first problem, "<file>: <path>: <what>". */
static void test_errors(void **state)
{
        (void)state;
        expect_error("", "    resources: {limits: {cpu: lots}}\n",
                     "e.yaml: spec.containers[0].resources.limits[cpu]: invalid value \"lots\": "
                     "quantities must match the regular expression "
                     "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
        expect_error("", "    resources: {limits: {cpu: 1}, requests: {cpu: 2}}\n",
                     "e.yaml: spec.containers[0].resources.requests[cpu]: invalid value \"2\": "
                     "must be less than or equal to cpu limit of 1");
        expect_error("", "    resources: {limits: {gpu: 1}}\n",
                     "e.yaml: spec.containers[0].resources.limits[gpu]: invalid resource name "
                     "\"gpu\": must be a standard resource type or fully qualified");
        expect_error("", "    ports: [{containerPort: 70000}]\n",
                     "e.yaml: spec.containers[0].ports[0].containerPort: invalid value 70000: "
                     "must be between 0 and 65535, inclusive");
        expect_error("", "    ports: [{containerPort: 80, protocol: ICMP}]\n",
                     "e.yaml: spec.containers[0].ports[0].protocol: unsupported value \"ICMP\" "
                     "(supported: \"SCTP\", \"TCP\", \"UDP\")");
        expect_error("  hostNetwork: true\n", "    ports: [{containerPort: 80, hostPort: 81}]\n",
                     "e.yaml: spec.containers[0].ports[0].hostPort: invalid value 81: must "
                     "match `containerPort` when `hostNetwork` is true");
        expect_error("", "    env: [{name: 1BAD, value: x}]\n",
                     "e.yaml: spec.containers[0].env[0].name: invalid value \"1BAD\": a valid "
                     "environment variable name must consist of alphabetic characters, digits, "
                     "'_', '-', or '.', and must not start with a digit");
        expect_error("",
                     "    env: [{name: X, valueFrom: {fieldRef: {fieldPath: spec.hostname}}}]\n",
                     "e.yaml: spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: "
                     "unsupported value \"spec.hostname\" (supported: \"metadata.name\", "
                     "\"metadata.namespace\", \"metadata.uid\", \"metadata.labels['<key>']\", "
                     "\"metadata.annotations['<key>']\", \"spec.nodeName\", "
                     "\"spec.serviceAccountName\", \"status.hostIP\", \"status.hostIPs\", "
                     "\"status.podIP\", \"status.podIPs\")");
        expect_error("", "    volumeMounts: [{name: nope, mountPath: /x}]\n",
                     "e.yaml: spec.containers[0].volumeMounts[0].name: not found \"nope\"");
        expect_error("  volumes: [{name: v, hostPath: {path: /a}, emptyDir: {}}]\n", "",
                     "e.yaml: spec.volumes[0]: may not specify more than 1 volume type");
        expect_error("  volumes: [{name: v, hostPath: {path: /a, type: Dir}}]\n", "",
                     "e.yaml: spec.volumes[0].hostPath.type: unsupported value \"Dir\" "
                     "(supported: \"\", \"BlockDevice\", \"CharDevice\", \"Directory\", "
                     "\"DirectoryOrCreate\", \"File\", \"FileOrCreate\", \"Socket\")");
        expect_error("  volumes: [{name: v, emptyDir: {medium: HugePages}}]\n", "",
                     "e.yaml: spec.volumes[0].emptyDir.medium: unsupported value \"HugePages\" "
                     "(supported: \"\", \"Memory\" (cubelet has no HugePages volumes))");
        expect_error("  volumes: [{name: v}, {name: v}]\n", "",
                     "e.yaml: spec.volumes[1].name: duplicate value \"v\"");
        expect_error("  volumes: [{name: v, emptyDir: {}}]\n",
                     "    volumeMounts: [{name: v, mountPath: /x, subPath: ../etc}]\n",
                     "e.yaml: spec.containers[0].volumeMounts[0].subPath: invalid value "
                     "\"../etc\": must be a relative path without '..'");
        expect_error("  volumes: [{name: v, emptyDir: {}}]\n",
                     "    volumeMounts: [{name: v, mountPath: /x, mountPropagation: "
                     "Bidirectional}]\n",
                     "e.yaml: spec.containers[0].volumeMounts[0].mountPropagation: forbidden: "
                     "Bidirectional mount propagation is available only to privileged "
                     "containers");
        expect_error("", "    restartPolicy: Always\n",
                     "e.yaml: spec.containers[0].restartPolicy: forbidden: may not be set for "
                     "non-init containers");
        expect_error("", "    terminationMessagePolicy: Sometimes\n",
                     "e.yaml: spec.containers[0].terminationMessagePolicy: unsupported value "
                     "\"Sometimes\" (supported: \"FallbackToLogsOnError\", \"File\")");
        expect_error("",
                     "    lifecycle: {postStart: {exec: {command: [a]}, sleep: {seconds: 1}}}\n",
                     "e.yaml: spec.containers[0].lifecycle.postStart: may not specify more than "
                     "1 handler type");
        expect_error("", "    livenessProbe: {exec: {command: [a]}, successThreshold: 2}\n",
                     "e.yaml: spec.containers[0].livenessProbe.successThreshold: invalid value "
                     "2: must be 1");
        expect_error("",
                     "    securityContext: {privileged: true, allowPrivilegeEscalation: false}\n",
                     "e.yaml: spec.containers[0].securityContext: cannot set "
                     "`allowPrivilegeEscalation` to false and `privileged` to true or add "
                     "CAP_SYS_ADMIN");
        expect_error("", "    securityContext: {seccompProfile: {type: Localhost}}\n",
                     "e.yaml: spec.containers[0].securityContext.seccompProfile."
                     "localhostProfile: must be set when seccomp type is Localhost, and only "
                     "then");
        expect_error("  dnsPolicy: None\n", "",
                     "e.yaml: spec.dnsConfig: must provide at least one DNS nameserver when "
                     "dnsPolicy is None");
        expect_error("  dnsPolicy: Cluster\n", "",
                     "e.yaml: spec.dnsPolicy: unsupported value \"Cluster\" (supported: "
                     "\"ClusterFirst\", \"ClusterFirstWithHostNet\", \"Default\", \"None\")");
        expect_error("  hostAliases: [{ip: not-an-ip, hostnames: [a]}]\n", "",
                     "e.yaml: spec.hostAliases[0].ip: invalid value \"not-an-ip\": must be a "
                     "valid IP address");
        expect_error("  ephemeralContainers: [{name: dbg, image: busybox}]\n", "",
                     "e.yaml: spec.ephemeralContainers: forbidden: cannot be set on create");
        expect_error("  os: {name: windows}\n", "",
                     "e.yaml: spec.os.name: unsupported value \"windows\" (supported: "
                     "\"linux\" (the node's OS))");
        expect_error("  hostname: Not_A_Label\n", "",
                     "e.yaml: spec.hostname: invalid value \"Not_A_Label\": must be a lowercase "
                     "RFC 1123 label");
        expect_error("  securityContext: {runAsUser: -1}\n", "",
                     "e.yaml: spec.securityContext.runAsUser: invalid value -1: must be between "
                     "0 and 2147483647, inclusive");
        expect_error("  initContainers: [{name: i, image: busybox, restartPolicy: Never}]\n", "",
                     "e.yaml: spec.initContainers[0].restartPolicy: unsupported value \"Never\" "
                     "(supported: \"Always\")");
        expect_error("  initContainers: [{name: i, image: busybox,\n"
                     "    lifecycle: {preStop: {exec: {command: [a]}}}}]\n",
                     "",
                     "e.yaml: spec.initContainers[0]: forbidden: lifecycle hooks and probes may "
                     "only be set on init containers with restartPolicy Always");
}

static void expect_warnings(const char *doc, const char *const *want, size_t n)
{
        struct kc_manifest_warnings w = { 0 };
        struct kc_api_pod *p = parse_w(doc, &w);
        size_t i;

        for (i = 0; i < w.n && i < n; i++)
                if (strcmp(w.v[i].message, want[i]) != 0)
                        fail_msg("warning %zu: got \"%s\", want \"%s\"", i, w.v[i].message,
                                 want[i]);
        if (w.n != n)
                fail_msg("got %zu warnings (first extra: \"%s\"), want %zu", w.n,
                         w.n > n ? w.v[n].message : "-", n);
        kc_manifest_warnings_done(&w);
        assert_null(w.v);
        kc_api_pod_unref(p);
}

/* Fields set but not honoured, and names not in v1, warn with the file and the path. */
static void test_warnings(void **state)
{
        static const char doc[] =
                "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  name: w\n"
                "  creationTimestamp: null\n" /* kubeadm writes these: null and {} are unset */
                "  ownerReferences: [{kind: Node}]\n"
                "spec:\n"
                "  nodeSelector: {disk: ssd}\n"
                "  tolerations: [{operator: Exists}]\n"
                "  affinity: {}\n"
                "  schedulerName: my-scheduler\n"
                "  activeDeadlineSeconds: 60\n"
                "  hostUsers: false\n"
                "  automountServiceAccountToken: true\n"
                "  securityContext: {seLinuxOptions: {level: 's0'}}\n"
                "  containers:\n"
                "  - name: c\n"
                "    image: busybox\n"
                "    imagePullPolcy: Never\n"
                "    livenessProbe: {exec: {command: [ls]}}\n"
                "    lifecycle: {stopSignal: SIGUSR1}\n"
                "    securityContext: {appArmorProfile: {type: RuntimeDefault}}\n"
                "status: {}\n";
        static const char *const want[] = {
                "w.yaml: metadata.ownerReferences: garbage collection needs the API server, "
                "which cubelet does not use, ignored",
                "w.yaml: spec.nodeSelector: scheduling only: a static pod is bound to this node "
                "without a scheduler, ignored",
                "w.yaml: spec.tolerations: scheduling only: a static pod is bound to this node "
                "without a scheduler, ignored",
                "w.yaml: spec.activeDeadlineSeconds: cubelet does not enforce an active "
                "deadline, ignored",
                "w.yaml: spec.automountServiceAccountToken: service account tokens come from the "
                "API server; none is mounted, ignored",
                "w.yaml: spec.schedulerName: scheduling only: a static pod is bound to this node "
                "without a scheduler, ignored",
                "w.yaml: spec.hostUsers: user namespaces are not supported; the pod uses the "
                "host's, ignored",
                "w.yaml: spec.securityContext.seLinuxOptions: cubelet does not apply SELinux "
                "labels, ignored",
                "w.yaml: spec.containers[0].imagePullPolcy: unknown field (not in the v1 API), "
                "ignored",
                "w.yaml: spec.containers[0].lifecycle.stopSignal: containers are stopped with "
                "the runtime's signal (the image's STOPSIGNAL), ignored",
                "w.yaml: spec.containers[0].securityContext.appArmorProfile: cubelet does not "
                "apply AppArmor profiles, ignored",
        };
        struct kc_manifest_warnings w = { 0 };
        struct kc_api_pod *p = NULL;

        (void)state;
        /* the file name in the messages */
        assert_int_equal(kc_manifest_parse_warn(doc, strlen(doc), "w.yaml", "n", 0, &p, NULL, &w),
                         0);
        kc_api_pod_unref(p);
        assert_int_equal(w.n, sizeof(want) / sizeof(want[0]));
        for (size_t i = 0; i < w.n; i++)
                assert_string_equal(w.v[i].message, want[i]);
        assert_string_equal(w.v[1].field, "spec.nodeSelector");
        assert_string_equal(w.v[1].why,
                            "scheduling only: a static pod is bound to this node without a "
                            "scheduler");
        kc_manifest_warnings_done(&w);
        kc_manifest_warnings_done(NULL);

        /* the full spec above warns for nothing: its probes run (issue 15) and its
         * termination message is honoured */
        expect_warnings(spec_yaml, NULL, 0);
        /* false/default values of the conditional fields do not warn */
        expect_warnings("apiVersion: v1\nkind: Pod\nmetadata: {name: q}\n"
                        "spec:\n  schedulerName: default-scheduler\n  hostUsers: true\n"
                        "  automountServiceAccountToken: false\n  os: {name: linux}\n"
                        "  tolerations: []\n"
                        "  containers: [{name: c, image: busybox}]\n",
                        NULL, 0);
}

/*
 * emptyDir.sizeLimit bounds a Memory emptyDir (its tmpfs) but nothing bounds
 * one on the node's disk (no eviction manager, D42): a warning, the limit
 * kept for the echo.
 */
static void test_disk_size_limit_warning(void **state)
{
        static const char doc[] = "apiVersion: v1\nkind: Pod\nmetadata: {name: q}\n"
                                  "spec:\n"
                                  "  volumes:\n"
                                  "  - {name: disk, emptyDir: {sizeLimit: 1Gi}}\n"
                                  "  - {name: mem, emptyDir: {medium: Memory, sizeLimit: 64Mi}}\n"
                                  "  - {name: plain, emptyDir: {}}\n"
                                  "  containers: [{name: c, image: busybox}]\n";
        struct kc_manifest_warnings w = { 0 };
        struct kc_api_pod *p = parse_w(doc, &w);

        (void)state;
        assert_int_equal(w.n, 1);
        assert_string_equal(w.v[0].field, "spec.volumes[0].emptyDir.sizeLimit");
        assert_string_equal(w.v[0].message,
                            "m.yaml: spec.volumes[0].emptyDir.sizeLimit: the size of a "
                            "disk-backed emptyDir is not enforced (no eviction manager), ignored");
        assert_true(p->volumes[0].has_size_limit);
        assert_string_equal(p->volumes[0].size_limit.text, "1Gi");
        kc_api_pod_unref(p);
        kc_manifest_warnings_done(&w);
}

/*
 * Limits nothing enforces warn, and are kept: ephemeral-storage (no eviction
 * manager) and extended resources (no device plugins, D53); cpu, memory and
 * hugepages do not warn.
 */
static void test_unenforced_limits_warning(void **state)
{
        static const char doc[] = "apiVersion: v1\nkind: Pod\nmetadata: {name: q}\n"
                                  "spec:\n"
                                  "  containers:\n"
                                  "  - name: c\n"
                                  "    image: busybox\n"
                                  "    resources:\n"
                                  "      limits: {cpu: 1, memory: 1Gi, hugepages-2Mi: 4Mi,\n"
                                  "               ephemeral-storage: 2Gi, example.com/gpu: 1}\n"
                                  "      requests: {ephemeral-storage: 1Gi}\n";
        struct kc_manifest_warnings w = { 0 };
        struct kc_api_pod *p = parse_w(doc, &w);

        (void)state;
        assert_int_equal(w.n, 2);
        assert_string_equal(w.v[0].message,
                            "m.yaml: spec.containers[0].resources.limits[ephemeral-storage]: "
                            "local storage limits are not enforced (no eviction manager), "
                            "ignored");
        assert_string_equal(w.v[1].message,
                            "m.yaml: spec.containers[0].resources.limits[example.com/gpu]: "
                            "extended resources come from device plugins, which cubelet does "
                            "not have: nothing is allocated, ignored");
        assert_int_equal(p->containers[0].resources.n_limits, 5);
        kc_api_pod_unref(p);
        kc_manifest_warnings_done(&w);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_every_field),
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_quantities),
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_warnings),
                cmocka_unit_test(test_disk_size_limit_warning),
                cmocka_unit_test(test_unenforced_limits_warning),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
