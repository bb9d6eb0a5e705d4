/* SPDX-License-Identifier: Apache-2.0 */
/* runtime value types: state names, kc_pod / kc_pod_status packing, equality, refcounts. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "runtime/api_pod.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"

static void test_state_strings(void **state)
{
        (void)state;
        assert_string_equal(kc_container_state_to_string(KC_CONTAINER_STATE_CREATED), "created");
        assert_string_equal(kc_container_state_to_string(KC_CONTAINER_STATE_RUNNING), "running");
        assert_string_equal(kc_container_state_to_string(KC_CONTAINER_STATE_EXITED), "exited");
        assert_string_equal(kc_container_state_to_string(KC_CONTAINER_STATE_UNKNOWN), "unknown");
        assert_null(kc_container_state_to_string(_KC_CONTAINER_STATE_MAX));
        assert_null(kc_container_state_to_string(_KC_CONTAINER_STATE_INVALID));
        for (int s = 0; s < _KC_CONTAINER_STATE_MAX; s++)
                assert_int_equal(kc_container_state_from_string(kc_container_state_to_string(s)),
                                 s);
        assert_int_equal(kc_container_state_from_string("Running"), -EINVAL);
        assert_int_equal(kc_container_state_from_string(""), -EINVAL);
        assert_int_equal(kc_container_state_from_string(NULL), -EINVAL);
        assert_string_equal(kc_sandbox_state_to_string(KC_SANDBOX_STATE_READY), "SANDBOX_READY");
        assert_string_equal(kc_sandbox_state_to_string(KC_SANDBOX_STATE_NOTREADY),
                            "SANDBOX_NOTREADY");
        assert_null(kc_sandbox_state_to_string(_KC_SANDBOX_STATE_MAX));
}

static void test_error_set(void **state)
{
        struct kc_runtime_error err = { 0 };
        char big[KC_RUNTIME_ERROR_MAX * 2];

        (void)state;
        assert_int_equal(kc_runtime_error_set(&err, -ENOENT, KC_RUNTIME_NOT_FOUND, "x %d", 7),
                         -ENOENT);
        assert_int_equal(err.code, KC_RUNTIME_NOT_FOUND);
        assert_string_equal(err.message, "x 7");
        assert_int_equal(kc_runtime_error_set(NULL, -EIO, KC_RUNTIME_UNKNOWN, "y"), -EIO);
        memset(big, 'a', sizeof(big) - 1);
        big[sizeof(big) - 1] = 0;
        kc_runtime_error_set(&err, -EIO, KC_RUNTIME_UNKNOWN, "%s", big);
        assert_int_equal(strlen(err.message), KC_RUNTIME_ERROR_MAX - 1);
}

static void test_pod_round_trip(void **state)
{
        char id[] = "uid-1", name[] = "web", c1[] = "c1";
        struct kc_container ctrs[] = {
                { .id = c1,
                  .name = "app",
                  .image = "nginx",
                  .hash = 0xabc,
                  .state = KC_CONTAINER_STATE_RUNNING,
                  .created_at = 5 },
                { .id = "c2", .name = NULL, .image = NULL, .state = KC_CONTAINER_STATE_EXITED },
        };
        struct kc_container sbs[] = {
                { .id = "s1", .name = "POD", .state = KC_CONTAINER_STATE_RUNNING }
        };
        struct kc_pod t = { .id = id,
                            .name = name,
                            .namespace = NULL,
                            .created_at = 42,
                            .containers = ctrs,
                            .n_containers = 2,
                            .sandboxes = sbs,
                            .n_sandboxes = 1 };
        struct kc_pod *p = NULL, *q;

        (void)state;
        assert_int_equal(kc_pod_new(&t, &p), 0);
        /* Deep copy: the template can change afterwards. */
        id[0] = 'X';
        c1[0] = 'X';
        ctrs[0].state = KC_CONTAINER_STATE_UNKNOWN;
        assert_string_equal(p->id, "uid-1");
        assert_string_equal(p->name, "web");
        assert_null(p->namespace);
        assert_int_equal(p->created_at, 42);
        assert_int_equal(p->n_containers, 2);
        assert_string_equal(p->containers[0].id, "c1");
        assert_string_equal(p->containers[0].image, "nginx");
        assert_int_equal(p->containers[0].hash, 0xabc);
        assert_int_equal(p->containers[0].state, KC_CONTAINER_STATE_RUNNING);
        assert_int_equal(p->containers[0].created_at, 5);
        assert_null(p->containers[1].name);
        assert_null(p->containers[1].image);
        assert_int_equal(p->n_sandboxes, 1);
        assert_string_equal(p->sandboxes[0].id, "s1");
        /* Everything lives in the one allocation. */
        assert_true((const char *)p->containers[0].id > (const char *)p);
        assert_true((const char *)p->sandboxes > (const char *)p);

        q = kc_pod_ref(p);
        assert_ptr_equal(q, p);
        assert_null(kc_pod_unref(q));
        assert_string_equal(p->id, "uid-1");
        assert_null(kc_pod_unref(p));
        assert_null(kc_pod_unref(NULL));
        assert_null(kc_pod_ref(NULL));

        /* Empty pod. */
        assert_int_equal(kc_pod_new(&(struct kc_pod){ 0 }, &p), 0);
        assert_null(p->id);
        assert_int_equal(p->n_containers, 0);
        kc_pod_unref(p);
        assert_int_equal(kc_pod_new(NULL, &p), -EINVAL);
}

static struct kc_pod_status *make_status(int variant)
{
        const char *ips[] = { "10.0.0.1", "fd00::1" };
        struct kc_sandbox_status sbs[] = {
                { .id = "s1",
                  .name = "POD",
                  .namespace = "ns",
                  .uid = "u",
                  .attempt = 1,
                  .state = KC_SANDBOX_STATE_READY,
                  .created_at = 10,
                  .ip = "10.0.0.1" },
        };
        struct kc_container_status cs[] = {
                { .id = "c1",
                  .name = "app",
                  .state = KC_CONTAINER_STATE_EXITED,
                  .exit_code = 2,
                  .created_at = 1,
                  .started_at = 2,
                  .finished_at = 3,
                  .restart_count = 4,
                  .hash = 5,
                  .image = "img",
                  .image_ref = "ref",
                  .reason = "Error",
                  .message = "m" },
                { .id = "c2", .name = "side", .state = KC_CONTAINER_STATE_RUNNING },
        };
        struct kc_pod_status t = { .id = "u",
                                   .name = "pod",
                                   .namespace = "ns",
                                   .ips = ips,
                                   .n_ips = 2,
                                   .sandboxes = sbs,
                                   .n_sandboxes = 1,
                                   .containers = cs,
                                   .n_containers = 2,
                                   .timestamp = 99 };
        struct kc_pod_status *s = NULL;

        switch (variant) {
        case 1:
                cs[0].exit_code = 3;
                break;
        case 2:
                t.n_ips = 1;
                break;
        case 3:
                sbs[0].state = KC_SANDBOX_STATE_NOTREADY;
                break;
        case 4:
                cs[1].reason = "x";
                break;
        case 5:
                t.timestamp = 0;
                break;
        case 6:
                sbs[0].ip = NULL;
                break;
        }
        assert_int_equal(kc_pod_status_new(&t, &s), 0);
        return s;
}

static void test_status_round_trip_equal(void **state)
{
        struct kc_pod_status *a = make_status(0), *b = make_status(0), *d = NULL;

        (void)state;
        assert_ptr_not_equal(a, b);
        assert_string_equal(a->ips[1], "fd00::1");
        assert_string_equal(a->sandboxes[0].uid, "u");
        assert_int_equal(a->sandboxes[0].attempt, 1);
        assert_string_equal(a->containers[0].message, "m");
        assert_int_equal(a->containers[0].restart_count, 4);
        assert_null(a->containers[1].reason);
        assert_int_equal(a->timestamp, 99);
        assert_true(kc_pod_status_equal(a, b));
        assert_true(kc_pod_status_equal(a, a));
        assert_true(kc_pod_status_equal(NULL, NULL));
        assert_false(kc_pod_status_equal(a, NULL));
        for (int v = 1; v <= 6; v++) {
                struct kc_pod_status *c = make_status(v);

                assert_false(kc_pod_status_equal(a, c));
                kc_pod_status_unref(c);
        }
        /* Copying a status yields an equal one. */
        assert_int_equal(kc_pod_status_new(a, &d), 0);
        assert_true(kc_pod_status_equal(a, d));
        kc_pod_status_unref(d);

        assert_int_equal(kc_pod_status_new_default("u9", &d), 0);
        assert_string_equal(d->id, "u9");
        assert_null(d->name);
        assert_int_equal(d->n_ips + d->n_sandboxes + d->n_containers, 0);
        assert_ptr_equal(kc_pod_status_ref(d), d);
        kc_pod_status_unref(d);
        kc_pod_status_unref(d);

        kc_pod_status_unref(a);
        kc_pod_status_unref(b);
        assert_null(kc_pod_status_unref(NULL));
}

static void test_pod_list_done(void **state)
{
        struct kc_pod_list l = { 0 };

        (void)state;
        kc_pod_list_done(&l);
        kc_pod_list_done(NULL);
        l.pods = calloc(3, sizeof(*l.pods));
        assert_non_null(l.pods);
        for (l.n = 0; l.n < 3; l.n++)
                assert_int_equal(kc_pod_new(&(struct kc_pod){ .id = "x" }, &l.pods[l.n]), 0);
        kc_pod_list_done(&l);
        assert_null(l.pods);
        assert_int_equal(l.n, 0);
}

/* The shape GenericPLEG builds per relist: 10,000 pods of 3 containers and a
 * sandbox, built and released; every one carries its own copy.
 * (Speed is measured by bench/bench_relist, not asserted here.) */
static void test_pod_many(void **state)
{
        struct kc_container ctrs[3] = {
                { .id = "0123456789abcdef0123456789abcdef",
                  .name = "app",
                  .image = "nginx:1.25",
                  .state = KC_CONTAINER_STATE_RUNNING },
                { .id = "1123456789abcdef0123456789abcdef",
                  .name = "sidecar",
                  .image = "envoy",
                  .state = KC_CONTAINER_STATE_RUNNING },
                { .id = "2123456789abcdef0123456789abcdef",
                  .name = "logger",
                  .image = "fluentbit",
                  .state = KC_CONTAINER_STATE_RUNNING },
        };
        struct kc_container sb = { .id = "3123456789abcdef0123456789abcdef",
                                   .name = "POD",
                                   .state = KC_CONTAINER_STATE_RUNNING };
        struct kc_pod t = { .id = "6f1c1e4e-1b2c-4d5e-8f90-123456789012",
                            .name = "bench-1234",
                            .namespace = "default",
                            .containers = ctrs,
                            .n_containers = 3,
                            .sandboxes = &sb,
                            .n_sandboxes = 1 };
        struct kc_pod **pods = calloc(10000, sizeof(*pods));

        (void)state;
        assert_non_null(pods);
        for (int i = 0; i < 10000; i++)
                assert_int_equal(kc_pod_new(&t, &pods[i]), 0);
        for (int i = 0; i < 10000; i++) {
                assert_ptr_not_equal(pods[i]->id, t.id);
                assert_string_equal(pods[i]->id, t.id);
                assert_int_equal(pods[i]->n_containers, 3);
                assert_string_equal(pods[i]->containers[2].image, "fluentbit");
                assert_string_equal(pods[i]->sandboxes[0].name, "POD");
                if (i > 0)
                        assert_ptr_not_equal(pods[i]->containers, pods[i - 1]->containers);
        }
        for (int i = 0; i < 10000; i++)
                kc_pod_unref(pods[i]);
        free(pods);
}

/* kc_api_pod: a deep copy with every field, shared by reference. */
static void test_api_pod(void **state)
{
        char uid[] = "uid-1", name[] = "web";
        struct kc_api_pod t = { .uid = uid,
                                .name = name,
                                .namespace = "default",
                                .source = "file",
                                .creation_ts = 5,
                                .deletion_ts = 7,
                                .deletion_grace_s = 30,
                                .termination_grace_s = -1,
                                .phase = KC_POD_PHASE_RUNNING,
                                .static_pod = true,
                                .host_network = true };
        struct kc_api_pod *p = NULL, *q;

        (void)state;
        assert_int_equal(kc_api_pod_new(&t, &p), 0);
        uid[0] = name[0] = 'X'; /* the copy does not see the template change */
        assert_string_equal(p->uid, "uid-1");
        assert_string_equal(p->name, "web");
        assert_string_equal(p->namespace, "default");
        assert_string_equal(p->source, "file");
        assert_int_equal(p->creation_ts, 5);
        assert_int_equal(p->deletion_ts, 7);
        assert_int_equal(p->deletion_grace_s, 30);
        assert_int_equal(p->termination_grace_s, -1);
        assert_int_equal(p->phase, KC_POD_PHASE_RUNNING);
        assert_true(p->static_pod && p->host_network && !p->mirror_pod);
        q = kc_api_pod_ref(p);
        assert_ptr_equal(q, p);
        assert_null(kc_api_pod_unref(q));
        assert_string_equal(p->uid, "uid-1"); /* still alive: one reference left */
        kc_api_pod_unref(p);
        t.namespace = NULL;
        t.source = NULL;
        assert_int_equal(kc_api_pod_new(&t, &p), 0);
        assert_null(p->namespace);
        assert_null(p->source);
        kc_api_pod_unref(p);
        assert_null(kc_api_pod_unref(NULL));
        assert_string_equal(kc_pod_phase_to_string(KC_POD_PHASE_SUCCEEDED), "Succeeded");
        assert_null(kc_pod_phase_to_string(_KC_POD_PHASE_MAX));
        assert_int_equal(kc_api_pod_new(NULL, &p), -EINVAL);
}

static void test_api_pod_spec(void **state)
{
        char image[] = "busybox:1.36", cmd0[] = "sleep", key[] = "app";
        const char *command[] = { cmd0, "3600" }, *args[] = { "-v" };
        struct kc_api_container c[] = {
                { .name = "web",
                  .image = image,
                  .command = command,
                  .n_command = 2,
                  .args = args,
                  .n_args = 1,
                  .image_pull_policy = KC_PULL_IF_NOT_PRESENT },
                { .name = "side", .image = "busybox", .image_pull_policy = KC_PULL_ALWAYS },
        };
        struct kc_api_container ic[] = {
                { .name = "init", .image = "busybox", .image_pull_policy = KC_PULL_NEVER }
        };
        struct kc_label labels[] = { { key, "web" } };
        struct kc_label ann[] = { { "a", "1" }, { "b", "" } };
        struct kc_api_pod t = { .uid = "u",
                                .name = "p",
                                .restart_policy = KC_RESTART_POLICY_ON_FAILURE,
                                .termination_grace_s = 30,
                                .containers = c,
                                .n_containers = 2,
                                .init_containers = ic,
                                .n_init_containers = 1,
                                .labels = labels,
                                .n_labels = 1,
                                .annotations = ann,
                                .n_annotations = 2 };
        struct kc_api_pod *p = NULL;

        (void)state;
        assert_int_equal(kc_api_pod_new(&t, &p), 0);
        image[0] = cmd0[0] = key[0] = 'X'; /* the copy does not see template changes */
        assert_int_equal(p->restart_policy, KC_RESTART_POLICY_ON_FAILURE);
        assert_int_equal(p->termination_grace_s, 30);
        assert_int_equal(p->n_containers, 2);
        assert_ptr_not_equal(p->containers, c);
        assert_string_equal(p->containers[0].name, "web");
        assert_string_equal(p->containers[0].image, "busybox:1.36");
        assert_int_equal(p->containers[0].n_command, 2);
        assert_string_equal(p->containers[0].command[0], "sleep");
        assert_string_equal(p->containers[0].command[1], "3600");
        assert_int_equal(p->containers[0].n_args, 1);
        assert_string_equal(p->containers[0].args[0], "-v");
        assert_int_equal(p->containers[0].image_pull_policy, KC_PULL_IF_NOT_PRESENT);
        assert_string_equal(p->containers[1].name, "side");
        assert_null(p->containers[1].command);
        assert_int_equal(p->containers[1].n_command, 0);
        assert_null(p->containers[1].args);
        assert_int_equal(p->containers[1].image_pull_policy, KC_PULL_ALWAYS);
        assert_int_equal(p->n_init_containers, 1);
        assert_string_equal(p->init_containers[0].name, "init");
        assert_int_equal(p->init_containers[0].image_pull_policy, KC_PULL_NEVER);
        assert_int_equal(p->n_labels, 1);
        assert_string_equal(p->labels[0].key, "app");
        assert_string_equal(p->labels[0].value, "web");
        assert_int_equal(p->n_annotations, 2);
        assert_string_equal(p->annotations[1].key, "b");
        assert_string_equal(p->annotations[1].value, "");
        /* everything lives in the object's one allocation, after the pod */
        assert_true((const char *)p->containers > (const char *)p);
        assert_true((const char *)p->containers[0].command[1] > (const char *)p);
        kc_api_pod_unref(p);

        /* a pod without a spec packs no arrays */
        assert_int_equal(kc_api_pod_new(&(struct kc_api_pod){ .uid = "u" }, &p), 0);
        assert_null(p->containers);
        assert_null(p->init_containers);
        assert_null(p->labels);
        assert_null(p->annotations);
        assert_int_equal(p->restart_policy, KC_RESTART_POLICY_ALWAYS);
        kc_api_pod_unref(p);

        assert_string_equal(kc_restart_policy_to_string(KC_RESTART_POLICY_NEVER), "Never");
        assert_null(kc_restart_policy_to_string(_KC_RESTART_POLICY_MAX));
        assert_int_equal(kc_restart_policy_from_string("OnFailure"), KC_RESTART_POLICY_ON_FAILURE);
        assert_int_equal(kc_restart_policy_from_string("always"), _KC_RESTART_POLICY_INVALID);
        assert_int_equal(kc_restart_policy_from_string(NULL), _KC_RESTART_POLICY_INVALID);
        assert_string_equal(kc_pull_policy_to_string(KC_PULL_IF_NOT_PRESENT), "IfNotPresent");
        assert_null(kc_pull_policy_to_string(_KC_PULL_POLICY_INVALID));
        assert_int_equal(kc_pull_policy_from_string("Never"), KC_PULL_NEVER);
        assert_int_equal(kc_pull_policy_from_string(""), _KC_PULL_POLICY_INVALID);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_state_strings),
                cmocka_unit_test(test_error_set),
                cmocka_unit_test(test_pod_round_trip),
                cmocka_unit_test(test_status_round_trip_equal),
                cmocka_unit_test(test_pod_list_done),
                cmocka_unit_test(test_pod_many),
                cmocka_unit_test(test_api_pod),
                cmocka_unit_test(test_api_pod_spec),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
