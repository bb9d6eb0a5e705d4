/* SPDX-License-Identifier: Apache-2.0 */
/* Static-pod manifests: kc_manifest_parse (config/common.go, file.go). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdbool.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/cleanup.h"
#include "kc_test.h"
#include "kubelet/config/manifest.h"
#include "runtime/api_pod.h"
#include "runtime/runtime_service.h"

#define SEEN_NS (INT64_C(1700000000) * KC_NSEC_PER_SEC + 120000000) /* 2023-11-14T22:13:20.12Z */

static const char full_yaml[] = "# a comment that does not count\n"
                                "apiVersion: v1\n"
                                "kind: Pod\n"
                                "metadata:\n"
                                "  name: web\n"
                                "  namespace: kube-system\n"
                                "  labels: {app: web, tier: \"1\"}\n"
                                "  annotations:\n"
                                "    note: hello\n"
                                "    kubernetes.io/config.source: api # replaced by the source\n"
                                "  resourceVersion: \"12\" # unknown here: ignored\n"
                                "spec:\n"
                                "  restartPolicy: OnFailure\n"
                                "  hostNetwork: true\n"
                                "  terminationGracePeriodSeconds: 5\n"
                                "  initContainers:\n"
                                "  - name: setup\n"
                                "    image: busybox:1.36\n"
                                "    command: [sh, -c, 'exit 0']\n"
                                "  containers:\n"
                                "  - name: app\n"
                                "    image: nginx\n"
                                "    args:\n"
                                "    - --port\n"
                                "    - \"8080\"\n"
                                "    imagePullPolicy: Never\n"
                                "    resources: {limits: {cpu: 1}}\n"
                                "  - name: side\n"
                                "    image: registry.local:5000/side@sha256:abcd\n"
                                "    command: [sleep, \"3600\"]\n";

static const char full_json[] =
        "{\"apiVersion\": \"v1\", \"kind\": \"Pod\",\n"
        " \"metadata\": {\"name\": \"web\", \"namespace\": \"kube-system\",\n"
        "   \"labels\": {\"app\": \"web\", \"tier\": \"1\"},\n"
        "   \"annotations\": {\"note\": \"hello\", \"kubernetes.io/config.source\": \"api\"},\n"
        "   \"resourceVersion\": \"12\"},\n"
        " \"spec\": {\"restartPolicy\": \"OnFailure\", \"hostNetwork\": true,\n"
        "   \"terminationGracePeriodSeconds\": 5,\n"
        "   \"initContainers\": [{\"name\": \"setup\", \"image\": \"busybox:1.36\",\n"
        "      \"command\": [\"sh\", \"-c\", \"exit 0\"]}],\n"
        "   \"containers\": [\n"
        "     {\"name\": \"app\", \"image\": \"nginx\", \"args\": [\"--port\", \"8080\"],\n"
        "      \"imagePullPolicy\": \"Never\", \"resources\": {\"limits\": {\"cpu\": 1}}},\n"
        "     {\"name\": \"side\", \"image\": \"registry.local:5000/side@sha256:abcd\",\n"
        "      \"command\": [\"sleep\", \"3600\"]}]}}\n";

static int parse(const char *doc, const char *file, const char *node, struct kc_api_pod **ret,
                 char **ret_err)
{
        return kc_manifest_parse(doc, strlen(doc), file, node, SEEN_NS, ret, ret_err);
}

static struct kc_api_pod *parse_ok(const char *doc, const char *file, const char *node)
{
        struct kc_api_pod *p = NULL;
        char *err = NULL;
        int r = parse(doc, file, node, &p, &err);

        if (r != 0)
                print_error("unexpected failure %d: %s\n", r, err ? err : "(no message)");
        assert_int_equal(r, 0);
        assert_null(err);
        assert_non_null(p);
        return p;
}

static bool strv_equal(const char *const *a, size_t na, const char *const *b, size_t nb)
{
        size_t i;

        if (na != nb)
                return false;
        for (i = 0; i < na; i++)
                if (strcmp(a[i], b[i]) != 0)
                        return false;
        return true;
}

static void assert_containers_equal(const struct kc_api_container *a, size_t na,
                                    const struct kc_api_container *b, size_t nb)
{
        size_t i;

        assert_int_equal(na, nb);
        for (i = 0; i < na; i++) {
                assert_string_equal(a[i].name, b[i].name);
                assert_string_equal(a[i].image, b[i].image);
                assert_true(strv_equal(a[i].command, a[i].n_command, b[i].command, b[i].n_command));
                assert_true(strv_equal(a[i].args, a[i].n_args, b[i].args, b[i].n_args));
                assert_int_equal(a[i].image_pull_policy, b[i].image_pull_policy);
        }
}

static void assert_labels_equal(const struct kc_label *a, size_t na, const struct kc_label *b,
                                size_t nb)
{
        size_t i;

        assert_int_equal(na, nb);
        for (i = 0; i < na; i++) {
                assert_string_equal(a[i].key, b[i].key);
                assert_string_equal(a[i].value, b[i].value);
        }
}

static void assert_pods_equal(const struct kc_api_pod *a, const struct kc_api_pod *b)
{
        assert_string_equal(a->uid, b->uid);
        assert_string_equal(a->name, b->name);
        assert_string_equal(a->namespace, b->namespace);
        assert_string_equal(a->source, b->source);
        assert_int_equal(a->creation_ts, b->creation_ts);
        assert_int_equal(a->deletion_ts, b->deletion_ts);
        assert_int_equal(a->deletion_grace_s, b->deletion_grace_s);
        assert_int_equal(a->termination_grace_s, b->termination_grace_s);
        assert_int_equal(a->phase, b->phase);
        assert_int_equal(a->static_pod, b->static_pod);
        assert_int_equal(a->mirror_pod, b->mirror_pod);
        assert_int_equal(a->host_network, b->host_network);
        assert_int_equal(a->restart_policy, b->restart_policy);
        assert_containers_equal(a->containers, a->n_containers, b->containers, b->n_containers);
        assert_containers_equal(a->init_containers, a->n_init_containers, b->init_containers,
                                b->n_init_containers);
        assert_labels_equal(a->labels, a->n_labels, b->labels, b->n_labels);
        assert_labels_equal(a->annotations, a->n_annotations, b->annotations, b->n_annotations);
}

static const char *annotation(const struct kc_api_pod *p, const char *key)
{
        size_t i;

        for (i = 0; i < p->n_annotations; i++)
                if (strcmp(p->annotations[i].key, key) == 0)
                        return p->annotations[i].value;
        return NULL;
}

static void test_full_yaml_and_json_twin(void **state)
{
        _cleanup_(kc_api_pod_unrefp) struct kc_api_pod *y = NULL, *j = NULL;
        const struct kc_api_container *c;

        (void)state;
        y = parse_ok(full_yaml, "/etc/kubernetes/manifests/web.yaml", "Node-1");
        /* same file name: the UID inputs other than the content are equal */
        j = parse_ok(full_json, "/etc/kubernetes/manifests/web.yaml", "Node-1");
        assert_pods_equal(y, j);

        assert_string_equal(y->name, "web-node-1");
        assert_string_equal(y->namespace, "kube-system");
        assert_int_equal(y->restart_policy, KC_RESTART_POLICY_ON_FAILURE);
        assert_true(y->host_network);
        assert_int_equal(y->termination_grace_s, 5);
        assert_int_equal(y->n_init_containers, 1);
        c = &y->init_containers[0];
        assert_string_equal(c->name, "setup");
        assert_int_equal(c->n_command, 3);
        assert_string_equal(c->command[2], "exit 0");
        assert_int_equal(c->n_args, 0);
        assert_int_equal(c->image_pull_policy, KC_PULL_IF_NOT_PRESENT);
        assert_int_equal(y->n_containers, 2);
        c = &y->containers[0];
        assert_string_equal(c->name, "app");
        assert_string_equal(c->image, "nginx");
        assert_int_equal(c->n_args, 2);
        assert_string_equal(c->args[0], "--port");
        assert_string_equal(c->args[1], "8080");
        assert_int_equal(c->image_pull_policy, KC_PULL_NEVER);
        c = &y->containers[1];
        assert_string_equal(c->command[1], "3600");
        assert_int_equal(c->image_pull_policy, KC_PULL_IF_NOT_PRESENT); /* digest, no tag */
        assert_int_equal(y->n_labels, 2);
        assert_string_equal(y->labels[0].key, "app");
        assert_string_equal(y->labels[1].key, "tier");
        assert_string_equal(y->labels[1].value, "1");
        /* sorted; the source's own annotations replace the file's */
        assert_int_equal(y->n_annotations, 4);
        assert_string_equal(y->annotations[0].key, KC_ANNOTATION_CONFIG_HASH);
        assert_string_equal(y->annotations[1].key, KC_ANNOTATION_CONFIG_SEEN);
        assert_string_equal(y->annotations[2].key, KC_ANNOTATION_CONFIG_SOURCE);
        assert_string_equal(y->annotations[2].value, "file");
        assert_string_equal(y->annotations[3].key, "note");
        assert_string_equal(y->annotations[3].value, "hello");
}

static void test_defaults(void **state)
{
        _cleanup_(kc_api_pod_unrefp) struct kc_api_pod *p = NULL;
        const char *doc = "apiVersion: v1\n"
                          "kind: Pod\n"
                          "metadata: {name: mini}\n"
                          "spec:\n"
                          "  containers:\n"
                          "  - {name: a, image: nginx}\n"
                          "  - {name: b, image: 'nginx:latest'}\n"
                          "  - {name: c, image: 'nginx:1.25'}\n"
                          "  - {name: d, image: 'localhost:5000/nginx'}\n"
                          "  - {name: e, image: 'localhost:5000/nginx:v2'}\n"
                          "  - {name: f, image: 'nginx@sha256:0123'}\n"
                          "  - {name: g, image: 'nginx:latest@sha256:0123'}\n";
        const char *nulls = "{apiVersion: v1, kind: Pod, metadata: {name: x, namespace: ~, "
                            "labels: null}, spec: {restartPolicy: null, hostNetwork: ~, "
                            "terminationGracePeriodSeconds: ~, containers: [{name: a, image: b, "
                            "command: ~}]}}";
        size_t i;

        (void)state;
        p = parse_ok(doc, "mini.yaml", "Worker.Example.COM");
        assert_string_equal(p->name, "mini-worker.example.com");
        assert_string_equal(p->namespace, "default");
        assert_string_equal(p->source, "file");
        assert_true(p->static_pod);
        assert_false(p->mirror_pod);
        assert_false(p->host_network);
        assert_int_equal(p->phase, KC_POD_PHASE_PENDING);
        assert_int_equal(p->creation_ts, SEEN_NS);
        assert_int_equal(p->deletion_ts, 0);
        assert_int_equal(p->deletion_grace_s, -1);
        assert_int_equal(p->termination_grace_s, 30);
        assert_int_equal(p->restart_policy, KC_RESTART_POLICY_ALWAYS);
        assert_int_equal(p->n_init_containers, 0);
        assert_null(p->init_containers);
        assert_int_equal(p->n_labels, 0);
        assert_int_equal(p->n_containers, 7);
        for (i = 0; i < p->n_containers; i++) {
                assert_int_equal(p->containers[i].n_command, 0);
                assert_int_equal(p->containers[i].n_args, 0);
        }
        assert_int_equal(p->containers[0].image_pull_policy, KC_PULL_ALWAYS);
        assert_int_equal(p->containers[1].image_pull_policy, KC_PULL_ALWAYS);
        assert_int_equal(p->containers[2].image_pull_policy, KC_PULL_IF_NOT_PRESENT);
        assert_int_equal(p->containers[3].image_pull_policy, KC_PULL_ALWAYS);
        assert_int_equal(p->containers[4].image_pull_policy, KC_PULL_IF_NOT_PRESENT);
        assert_int_equal(p->containers[5].image_pull_policy, KC_PULL_IF_NOT_PRESENT);
        assert_int_equal(p->containers[6].image_pull_policy, KC_PULL_ALWAYS);
        /* UID: 32 hex digits, also the config hash */
        assert_int_equal(strlen(p->uid), 32);
        assert_int_equal(strspn(p->uid, "0123456789abcdef"), 32);
        assert_int_equal(p->n_annotations, 3);
        assert_string_equal(annotation(p, KC_ANNOTATION_CONFIG_HASH), p->uid);
        assert_string_equal(annotation(p, KC_ANNOTATION_CONFIG_SOURCE), "file");
        assert_string_equal(annotation(p, KC_ANNOTATION_CONFIG_SEEN), "2023-11-14T22:13:20.12Z");
        p = kc_api_pod_unref(p);

        /* whole seconds print without a fraction; explicit nulls are the zero values */
        assert_int_equal(kc_manifest_parse(nulls, strlen(nulls), "x.yaml", "n", 0, &p, NULL), 0);
        assert_string_equal(annotation(p, KC_ANNOTATION_CONFIG_SEEN), "1970-01-01T00:00:00Z");
        assert_string_equal(p->namespace, "default");
        assert_int_equal(p->termination_grace_s, 30);
        assert_int_equal(p->restart_policy, KC_RESTART_POLICY_ALWAYS);
        assert_int_equal(p->n_labels, 0);
}

static void test_uid(void **state)
{
        const char *base = "apiVersion: v1\nkind: Pod\nmetadata: {name: u}\n"
                           "spec: {containers: [{name: a, image: busybox}]}\n";
        const char *reformatted = "# edited comments and layout only\n"
                                  "apiVersion: \"v1\"\nkind: Pod\nmetadata:\n  name: u\n"
                                  "spec:\n  containers:\n  - name: a\n    image: busybox\n";
        const char *changed = "apiVersion: v1\nkind: Pod\nmetadata: {name: u}\n"
                              "spec: {containers: [{name: a, image: busybox:1}]}\n";
        const char *unknown_changed = "apiVersion: v1\nkind: Pod\nmetadata: {name: u}\n"
                                      "spec: {containers: [{name: a, image: busybox}]}\n"
                                      "status: {phase: Running}\n";
        const char *explicit_uid = "apiVersion: v1\nkind: Pod\nmetadata: {name: u, uid: abc}\n"
                                   "spec: {containers: [{name: a, image: busybox}]}\n";
        _cleanup_(kc_api_pod_unrefp) struct kc_api_pod *a = NULL, *b = NULL, *c = NULL, *d = NULL,
                                                       *e = NULL, *f = NULL, *g = NULL, *h = NULL;

        (void)state;
        a = parse_ok(base, "/m/u.yaml", "node1");
        b = parse_ok(base, "/m/u.yaml", "node1");
        assert_string_equal(a->uid, b->uid); /* stable */
        c = parse_ok(reformatted, "/m/u.yaml", "node1");
        assert_string_equal(a->uid, c->uid); /* comments, layout and quoting do not count */
        d = parse_ok(changed, "/m/u.yaml", "node1");
        assert_string_not_equal(a->uid, d->uid); /* content */
        e = parse_ok(base, "/m/u.yaml", "node2");
        assert_string_not_equal(a->uid, e->uid); /* node */
        f = parse_ok(base, "/m/other.yaml", "node1");
        assert_string_not_equal(a->uid, f->uid); /* source */
        g = parse_ok(unknown_changed, "/m/u.yaml", "node1");
        assert_string_not_equal(a->uid, g->uid); /* every field counts, as upstream */
        h = parse_ok(explicit_uid, "/m/u.yaml", "node1");
        assert_string_equal(h->uid, "abc");
        assert_string_equal(annotation(h, KC_ANNOTATION_CONFIG_HASH), "abc");
}

struct bad_case {
        const char *doc;
        const char *err;
};

#define POD(spec) "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: " spec "\n"
#define C1 "{name: a, image: busybox}"

static void test_invalid_fields(void **state)
{
        static const struct bad_case cases[] = {
                { "kind: Pod\nmetadata: {name: p}\n", "f.yaml: apiVersion: required value" },
                { "apiVersion: apps/v1\nkind: Pod\n",
                  "f.yaml: apiVersion: unsupported value \"apps/v1\" (supported: \"v1\")" },
                { "apiVersion: 1\nkind: Pod\n", "f.yaml: apiVersion: must be a string" },
                { "apiVersion: v1\n", "f.yaml: kind: required value" },
                { "apiVersion: v1\nkind: Deployment\n",
                  "f.yaml: kind: unsupported value \"Deployment\" (supported: \"Pod\")" },
                { "apiVersion: v1\nkind: Pod\nspec: {containers: [" C1 "]}\n",
                  "f.yaml: metadata.name: required value" },
                { "apiVersion: v1\nkind: Pod\nmetadata: {name: 42}\n",
                  "f.yaml: metadata.name: must be a string" },
                { "apiVersion: v1\nkind: Pod\nmetadata: {name: yes}\n",
                  "f.yaml: metadata.name: must be a string" },
                { "apiVersion: v1\nkind: Pod\nmetadata: {name: [a]}\n",
                  "f.yaml: metadata.name: must be a string" },
                { "apiVersion: v1\nkind: Pod\nmetadata: [name]\n",
                  "f.yaml: metadata: must be an object" },
                { "apiVersion: v1\nkind: Pod\nmetadata: {name: p, name: q}\n",
                  "f.yaml: metadata.name: duplicate key" },
                { "apiVersion: v1\nkind: Pod\nmetadata: {name: Web_1}\nspec: {containers: [" C1
                  "]}\n",
                  "f.yaml: metadata.name: invalid value \"Web_1-n\": with the node name, must be "
                  "a lowercase RFC 1123 subdomain of at most 253 characters" },
                { "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: Kube}\n",
                  "f.yaml: metadata.namespace: invalid value \"Kube\": must be a lowercase RFC "
                  "1123 label" },
                { "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {version: 2}}\n",
                  "f.yaml: metadata.labels[version]: must be a string" },
                { "apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: [a]}\n",
                  "f.yaml: metadata.annotations: must be an object" },
                { "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {a: p, a: q}}\n",
                  "f.yaml: metadata.labels[a]: duplicate key" },
                { "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n",
                  "f.yaml: spec.containers: required value" },
                { POD("{containers: []}"), "f.yaml: spec.containers: required value" },
                { POD("[]"), "f.yaml: spec: must be an object" },
                { POD("{containers: {name: a}}"), "f.yaml: spec.containers: must be a list" },
                { POD("{containers: [a]}"), "f.yaml: spec.containers[0]: must be an object" },
                { POD("{containers: [" C1 ", {name: b}]}"),
                  "f.yaml: spec.containers[1].image: required value" },
                { POD("{containers: [" C1 ", {name: b, image: ''}]}"),
                  "f.yaml: spec.containers[1].image: required value" },
                { POD("{containers: [{name: a, image: ' busybox'}]}"),
                  "f.yaml: spec.containers[0].image: invalid value \" busybox\": must not have "
                  "leading or trailing whitespace" },
                { POD("{containers: [{image: busybox}]}"),
                  "f.yaml: spec.containers[0].name: required value" },
                { POD("{containers: [{name: Web, image: busybox}]}"),
                  "f.yaml: spec.containers[0].name: invalid value \"Web\": must be a lowercase "
                  "RFC 1123 label" },
                { POD("{containers: [" C1 ", " C1 "]}"),
                  "f.yaml: spec.containers[1].name: duplicate value \"a\"" },
                { POD("{initContainers: [" C1 "], containers: [" C1 "]}"),
                  "f.yaml: spec.containers[0].name: duplicate value \"a\"" },
                { POD("{initContainers: [{name: i}], containers: [" C1 "]}"),
                  "f.yaml: spec.initContainers[0].image: required value" },
                { POD("{containers: [{name: a, image: b, command: sleep}]}"),
                  "f.yaml: spec.containers[0].command: must be a list" },
                { POD("{containers: [{name: a, image: b, command: [sleep, 10]}]}"),
                  "f.yaml: spec.containers[0].command[1]: must be a string" },
                { POD("{containers: [{name: a, image: b, args: [x, {y: 1}]}]}"),
                  "f.yaml: spec.containers[0].args[1]: must be a string" },
                { POD("{containers: [{name: a, image: b, imagePullPolicy: Sometimes}]}"),
                  "f.yaml: spec.containers[0].imagePullPolicy: unsupported value \"Sometimes\" "
                  "(supported: \"Always\", \"IfNotPresent\", \"Never\")" },
                { POD("{restartPolicy: Sometimes, containers: [" C1 "]}"),
                  "f.yaml: spec.restartPolicy: unsupported value \"Sometimes\" (supported: "
                  "\"Always\", \"OnFailure\", \"Never\")" },
                { POD("{restartPolicy: 3, containers: [" C1 "]}"),
                  "f.yaml: spec.restartPolicy: must be a string" },
                { POD("{terminationGracePeriodSeconds: -1, containers: [" C1 "]}"),
                  "f.yaml: spec.terminationGracePeriodSeconds: must be a non-negative integer" },
                { POD("{terminationGracePeriodSeconds: '30', containers: [" C1 "]}"),
                  "f.yaml: spec.terminationGracePeriodSeconds: must be a non-negative integer" },
                { POD("{terminationGracePeriodSeconds: 1.5, containers: [" C1 "]}"),
                  "f.yaml: spec.terminationGracePeriodSeconds: must be a non-negative integer" },
                { POD("{terminationGracePeriodSeconds: 99999999999999999999, containers: [" C1
                      "]}"),
                  "f.yaml: spec.terminationGracePeriodSeconds: must be a non-negative integer" },
                { POD("{hostNetwork: 'true', containers: [" C1 "]}"),
                  "f.yaml: spec.hostNetwork: must be a boolean" },
                { POD("{containers: [{name: a, image: \"x\\0y\"}]}"),
                  "f.yaml: spec.containers[0].image: must not contain NUL characters" },
                { POD("{containers: [{<<: {name: a}, image: b}]}"),
                  "f.yaml: spec.containers[0]: merge keys (<<) are not supported" },
                { "- apiVersion: v1\n", "f.yaml: a manifest must be an object (a v1 Pod)" },
                { "just a string\n", "f.yaml: a manifest must be an object (a v1 Pod)" },
                { "apiVersion: v1\nkind: Pod\n---\napiVersion: v1\n",
                  "f.yaml: line 3, column 1: a manifest holds one document (found a second one)" },
                { "apiVersion: v1\nkind: Pod\nmetadata: {name: *nope}\n",
                  "f.yaml: line 3, column 18: unknown anchor \"nope\"" },
                { "apiVersion: v1\nkind: Pod\nmetadata: &m {name: *m}\n",
                  "f.yaml: line 3, column 21: unknown anchor \"m\"" },
                { "apiVersion: v1\nkind: Pod\n  metadata: x\n",
                  "f.yaml: line 3, column 11: mapping values are not allowed in this context" },
                { "{\"apiVersion\": \"v1\", \"kind\": \"Pod\"\n",
                  "f.yaml: line 2, column 1: did not find expected ',' or '}' (while parsing a "
                  "flow mapping at line 1, column 1)" },
        };
        size_t i;

        (void)state;
        for (i = 0; i < KC_ELEMENTSOF(cases); i++) {
                struct kc_api_pod *p = (struct kc_api_pod *)0x1;
                char *err = NULL;
                int r = kc_manifest_parse(cases[i].doc, strlen(cases[i].doc), "f.yaml", "n",
                                          SEEN_NS, &p, &err);

                if (r != -EBADMSG || !err || strcmp(err, cases[i].err) != 0)
                        print_error("case %zu: r=%d\n  got  %s\n  want %s\n", i, r,
                                    err ? err : "(null)", cases[i].err);
                assert_int_equal(r, -EBADMSG);
                assert_non_null(err);
                assert_string_equal(err, cases[i].err);
                assert_ptr_equal(p, (struct kc_api_pod *)0x1); /* untouched */
                free(err);
                /* ret_err is optional */
                r = kc_manifest_parse(cases[i].doc, strlen(cases[i].doc), "f.yaml", "n", SEEN_NS,
                                      &p, NULL);
                assert_int_equal(r, -EBADMSG);
        }
}

static void test_bad_arguments(void **state)
{
        struct kc_api_pod *p = NULL;
        char *err = (char *)0x1;

        (void)state;
        assert_int_equal(kc_manifest_parse(NULL, 1, "f", "n", 0, &p, &err), -EINVAL);
        assert_int_equal(kc_manifest_parse("", 0, NULL, "n", 0, &p, &err), -EINVAL);
        assert_int_equal(kc_manifest_parse("", 0, "f", NULL, 0, &p, &err), -EINVAL);
        assert_int_equal(kc_manifest_parse("", 0, "f", "", 0, &p, &err), -EINVAL);
        assert_int_equal(kc_manifest_parse("", 0, "f", "n", 0, NULL, &err), -EINVAL);
        assert_null(p);
        assert_ptr_equal(err, (char *)0x1);
}

/* Each hostile input fails with @p want (a prefix), quickly. */
static void expect_hostile(const char *data, size_t len, const char *want)
{
        struct kc_api_pod *p = NULL;
        char *err = NULL;
        int64_t t0 = kc_test_mono_ms();
        int r = kc_manifest_parse(data, len, "evil.yaml", "n", SEEN_NS, &p, &err);
        int64_t ms = kc_test_mono_ms() - t0;

        if (r != -EBADMSG || !err || strncmp(err, want, strlen(want)) != 0)
                print_error("r=%d\n  got  %s\n  want %s...\n", r, err ? err : "(null)", want);
        assert_int_equal(r, -EBADMSG);
        assert_null(p);
        assert_non_null(err);
        assert_true(strncmp(err, want, strlen(want)) == 0);
        assert_true(ms < 2000 * kc_test_timeout_multiplier());
        free(err);
}

static void test_hostile(void **state)
{
        const char *bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                           "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                           "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                           "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                           "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                           "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
                           "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
                           "h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]\n"
                           "i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]\n";
        size_t n = 100000, i, o;
        char *buf;

        (void)state;
        /* 100,000-deep nesting, flow and block */
        buf = malloc(2 * n + 1);
        assert_non_null(buf);
        memset(buf, '[', n);
        memset(buf + n, ']', n);
        buf[2 * n] = '\0';
        expect_hostile(buf, 2 * n, "evil.yaml: line 1, column 65: nesting deeper than 64 levels");
        for (i = 0; i < n; i++)
                buf[i] = i % 2 ? ' ' : '-';
        expect_hostile(buf, n, "evil.yaml: line 1, column 129: nesting deeper than 64 levels");
        free(buf);

        /* a 2 MiB document */
        n = 2 * 1024 * 1024;
        buf = malloc(n);
        assert_non_null(buf);
        memset(buf, ' ', n);
        memcpy(buf, "apiVersion: v1", 14);
        expect_hostile(buf, n,
                       "evil.yaml: manifest too large (2097152 bytes; the limit is 1048576)");
        free(buf);

        /* a 100 KiB string */
        n = 100 * 1024;
        buf = malloc(n + 64);
        assert_non_null(buf);
        o = (size_t)sprintf(buf, "apiVersion: v1\nkind: Pod\nmetadata: {name: ");
        memset(buf + o, 'a', n);
        strcpy(buf + o + n, "}\n");
        expect_hostile(buf, strlen(buf),
                       "evil.yaml: line 3, column 18: string longer than 65536 bytes");
        free(buf);

        /* invalid UTF-8, with its position */
        expect_hostile("apiVersion: v1\nkind: P\xffod\n", 24,
                       "evil.yaml: line 2, column 8: invalid leading UTF-8 octet (#xFF)");
        expect_hostile("apiVersion: v1\nkind: \xc3(\n", 23,
                       "evil.yaml: line 2, column 8: invalid trailing UTF-8 octet (#x28)");
        /* empty, blank and comment-only files */
        expect_hostile("", 0, "evil.yaml: empty manifest");
        expect_hostile(NULL, 0, "evil.yaml: empty manifest");
        expect_hostile("\n  \n# nothing\n", 13, "evil.yaml: empty manifest");
        /* an embedded NUL byte is not YAML */
        expect_hostile("apiVersion: v1\0kind: Pod\n", 25, "evil.yaml: line 1, column 15: ");

        /* billion laughs: 10^9 nodes once expanded; aliases are never copied */
        expect_hostile(bomb, strlen(bomb),
                       "evil.yaml: line 5, column 36: too many nodes (more than 100000 with "
                       "aliases expanded)");
        /* too many anchors */
        buf = malloc(300 * 16 + 1);
        assert_non_null(buf);
        for (i = 0, o = 0; i < 300; i++)
                o += (size_t)sprintf(buf + o, "k%zu: &a%zu x\n", i, i);
        expect_hostile(buf, o, "evil.yaml: line 257, column 7: too many anchors (more than 256)");
        free(buf);
        /* a flat document with too many nodes */
        n = 150000;
        buf = malloc(2 * n + 3);
        assert_non_null(buf);
        buf[0] = '[';
        for (i = 0; i < n; i++) {
                buf[1 + 2 * i] = '1';
                buf[2 + 2 * i] = ',';
        }
        buf[2 * n] = ']';
        expect_hostile(buf, 2 * n + 1,
                       "evil.yaml: line 1, column 200000: too many nodes (more than 100000 with "
                       "aliases expanded)");
        free(buf);
}

/* Builds "apiVersion... containers:" followed by @p n containers c0..c{n-1} (c{dup} twice if dup < n). */
static char *many_containers(size_t n, size_t dup)
{
        size_t cap = 128 + n * 40, o, i;
        char *buf = malloc(cap);

        assert_non_null(buf);
        o = (size_t)snprintf(buf, cap,
                             "apiVersion: v1\nkind: Pod\nmetadata: {name: many}\nspec:\n"
                             "  containers:\n");
        for (i = 0; i < n; i++)
                o += (size_t)snprintf(buf + o, cap - o, "  - {name: c%zu, image: b}\n",
                                      i == n - 1 && dup < n ? dup : i);
        return buf;
}

/*
 * Regressions for hostile input that used to cost far more than its size:
 * - a 60 KB string aliased 20,000 times: 140 KB of YAML became a pod with
 *   1.2 GB of command strings (the daemon grew to 2.3 GB of RSS); 100 times
 *   (6 MB) is enough to cross the limit here;
 * - 19,900 containers: the duplicate-name check was quadratic (~1 s); its
 *   parse time against the container count is bench/bench_manifest's.
 */
static void test_hostile_amplification(void **state)
{
        size_t n = 60000, reps = 100, o, i;
        struct kc_api_pod *p = NULL;
        char *buf, *err = NULL, want[96];

        (void)state;
        buf = malloc(n + reps * 4 + 256);
        assert_non_null(buf);
        o = (size_t)sprintf(buf, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                                 "  containers:\n  - name: c\n    image: b\n    command: [&s \"");
        memset(buf + o, 'x', n);
        o += n;
        o += (size_t)sprintf(buf + o, "\"");
        for (i = 0; i < reps; i++)
                o += (size_t)sprintf(buf + o, ", *s");
        o += (size_t)sprintf(buf + o, "]\n");
        /* The alias that passes 4 MiB of text is the one named: the 69th, 4 columns apart. */
        snprintf(want, sizeof(want),
                 "evil.yaml: line 8, column %zu: too much text (more than %d bytes of strings",
                 22 + n + 4 * ((size_t)KC_MANIFEST_MAX_EXPANDED / n - 1), KC_MANIFEST_MAX_EXPANDED);
        expect_hostile(buf, o, want);
        /* The same string aliased a few times is fine. */
        o = (size_t)sprintf(buf, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                                 "  containers:\n  - name: c\n    image: b\n    command: [&s \"");
        memset(buf + o, 'x', n);
        o += n;
        o += (size_t)sprintf(buf + o, "\", *s, *s]\n");
        assert_int_equal(kc_manifest_parse(buf, o, "ok.yaml", "n", SEEN_NS, &p, &err), 0);
        assert_int_equal(p->containers[0].n_command, 3);
        assert_int_equal(strlen(p->containers[0].command[2]), n);
        p = kc_api_pod_unref(p);
        free(buf);

        /* 19,900 distinct containers, near the node limit, parse. */
        buf = many_containers(19900, SIZE_MAX);
        assert_int_equal(kc_manifest_parse(buf, strlen(buf), "many.yaml", "n", SEEN_NS, &p, NULL),
                         0);
        assert_int_equal(p->n_containers, 19900);
        p = kc_api_pod_unref(p);
        free(buf);
        /* ...and the last one repeating the first is still found, with its index. */
        buf = many_containers(19900, 0);
        expect_hostile(buf, strlen(buf),
                       "evil.yaml: spec.containers[19899].name: duplicate value \"c0\"");
        free(buf);
}

#define S(lit) (lit), strlen(lit)

/* Each field's own rules catch a huge or strange value, with the field's path. */
static void test_hostile_fields(void **state)
{
        size_t n = 60000, o;
        char *buf;

        (void)state;
        buf = malloc(n + 256);
        assert_non_null(buf);
        /* a 60 KB name: within the scalar limit, refused by the name rules (quoted, cut at 64) */
        o = (size_t)sprintf(buf, "apiVersion: v1\nkind: Pod\nmetadata: {name: ");
        memset(buf + o, 'a', n);
        o += n;
        o += (size_t)sprintf(buf + o, "}\nspec: {containers: [{name: c, image: b}]}\n");
        expect_hostile(
                buf, o,
                "evil.yaml: metadata.name: invalid value \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaa...\": with the node name, must be a lowercase "
                "RFC 1123 subdomain of at most 253 characters");
        /* a 60 KB container name */
        o = (size_t)sprintf(buf, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
                                 "spec: {containers: [{image: b, name: ");
        memset(buf + o, 'b', n);
        o += n;
        o += (size_t)sprintf(buf + o, "}]}\n");
        expect_hostile(buf, o, "evil.yaml: spec.containers[0].name: invalid value \"bbbb");
        free(buf);

        /* an escaped NUL inside a string (valid YAML, refused as a string) */
        expect_hostile(S("apiVersion: v1\nkind: Pod\nmetadata: {name: \"p\\0x\"}\n"),
                       "evil.yaml: metadata.name: must not contain NUL characters");
        /* invalid UTF-8 in a JSON manifest: an overlong encoding of '/' */
        expect_hostile(S("{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": "
                         "\"\xc0\xaf\"}}"),
                       "evil.yaml: line 1, column 59: invalid length of a UTF-8 sequence");
        /* a UTF-16 surrogate encoded in UTF-8 */
        expect_hostile(S("apiVersion: v1\nkind: \xed\xa0\x80\n"),
                       "evil.yaml: line 2, column 7: invalid Unicode character");
        /* a duplicated known key, in JSON */
        expect_hostile(S("{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"kind\": \"Pod\"}"),
                       "evil.yaml: kind: duplicate key");
        /* a raw C0 control character in a plain scalar */
        expect_hostile(S("apiVersion: v1\nkind: P\x01od\n"),
                       "evil.yaml: line 2, column 8: control characters are not allowed");
}

static void test_aliases_are_followed(void **state)
{
        const char *doc = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
                          "spec:\n"
                          "  containers:\n"
                          "  - &app {name: a, image: busybox, command: &cmd [sleep, '1']}\n"
                          "  - {name: b, image: busybox, command: *cmd}\n";
        _cleanup_(kc_api_pod_unrefp) struct kc_api_pod *p = NULL;

        (void)state;
        p = parse_ok(doc, "a.yaml", "n");
        assert_int_equal(p->n_containers, 2);
        assert_int_equal(p->containers[1].n_command, 2);
        assert_string_equal(p->containers[1].command[0], "sleep");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_full_yaml_and_json_twin),
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_uid),
                cmocka_unit_test(test_invalid_fields),
                cmocka_unit_test(test_bad_arguments),
                cmocka_unit_test(test_hostile),
                cmocka_unit_test(test_hostile_amplification),
                cmocka_unit_test(test_hostile_fields),
                cmocka_unit_test(test_aliases_are_followed),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
