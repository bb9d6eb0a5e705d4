/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The status manager (pkg/kubelet/status/status_manager.go, issue 4 item 4):
 * versioned statuses, the terminal-phase and container-transition guards,
 * RemoveOrphanedStatuses, and the /pods PodList document, also under
 * concurrent readers and writers.
 */
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/cleanup.h"
#include "kubelet/kubelet_pods.h"
#include "kubelet/pod_manager.h"
#include "kubelet/status/pod_status.h"
#include "kubelet/status/status_manager.h"
#include "runtime/api_pod.h"
#include "runtime/container.h"

#define T0 (INT64_C(1795255200) * KC_NSEC_PER_SEC)

static const struct kc_api_container app_ctr = { .name = "app", .image = "nginx" };

static struct kc_api_pod *mkpod(const char *uid, const char *ns, const char *name,
                                enum kc_restart_policy policy, bool mirror)
{
        struct kc_api_pod t = { .uid = uid,
                                .name = name,
                                .namespace = ns,
                                .deletion_grace_s = -1,
                                .termination_grace_s = 30,
                                .restart_policy = policy,
                                .mirror_pod = mirror,
                                .creation_ts = T0,
                                .containers = &app_ctr,
                                .n_containers = 1 };
        struct kc_api_pod *p = NULL;

        assert_int_equal(kc_api_pod_new(&t, &p), 0);
        return p;
}

static json_t *phase_status(const char *phase)
{
        json_t *s = json_pack("{s:s}", "phase", phase);

        assert_non_null(s);
        return s;
}

/* {"phase": phase, key: [{"name": "app", "state": {state: {...exitCode}}}]} */
static json_t *container_status(const char *phase, const char *key, const char *state,
                                int exit_code)
{
        json_t *s;

        if (strcmp(state, "terminated") == 0)
                s = json_pack("{s:s, s:[{s:s, s:{s:{s:i}}}]}", "phase", phase, key, "name", "app",
                              "state", state, "exitCode", exit_code);
        else
                s = json_pack("{s:s, s:[{s:s, s:{s:{}}}]}", "phase", phase, key, "name", "app",
                              "state", state);
        assert_non_null(s);
        return s;
}

static uint64_t version_of(struct kc_status_manager *sm, const char *uid)
{
        uint64_t v = 0;

        assert_int_equal(kc_status_manager_get_version(sm, uid, &v), 0);
        return v;
}

/* The stored phase, read from the status; the phase getter must say the same. */
static const char *phase_in(struct kc_status_manager *sm, const char *uid)
{
        static char buf[32];
        enum kc_pod_phase p = _KC_POD_PHASE_INVALID, want;
        json_t *s = NULL;

        assert_int_equal(kc_status_manager_get_pod_status(sm, uid, &s), 0);
        snprintf(buf, sizeof(buf), "%s", json_string_value(json_object_get(s, "phase")));
        json_decref(s);
        want = kc_pod_phase_from_string(buf);
        assert_int_equal(kc_status_manager_get_pod_phase(sm, uid, &p), 0);
        assert_int_equal(p, want < 0 ? KC_POD_PHASE_UNKNOWN : want);
        return buf;
}

/* Sets @p s (taken) for @p pod, expecting @p want, and returns the stored phase. */
static enum kc_pod_phase phase_after(struct kc_status_manager *sm, const struct kc_api_pod *pod,
                                     json_t *s, int want)
{
        enum kc_pod_phase p = _KC_POD_PHASE_INVALID;

        assert_non_null(s);
        assert_int_equal(kc_status_manager_set_pod_status(sm, pod, s), want);
        json_decref(s);
        assert_int_equal(kc_status_manager_get_pod_phase(sm, pod->uid, &p), 0);
        return p;
}

/*
 * GetPodPhase answers from what the manager keeps beside the text (the
 * pod syncer reads it twice per sync, issue 18): no status, none of the
 * v1 phases, a phase, a phase kept by the terminal guard.
 */
static void test_get_pod_phase(void **state)
{
        _cleanup_(kc_status_manager_freep) struct kc_status_manager *sm = NULL;
        _cleanup_(kc_api_pod_unrefp) struct kc_api_pod *pod =
                mkpod("u1", "default", "web", KC_RESTART_POLICY_NEVER, false);
        enum kc_pod_phase p = KC_POD_PHASE_RUNNING;

        (void)state;
        assert_int_equal(kc_status_manager_get_pod_phase(NULL, "u1", &p), -EINVAL);
        assert_int_equal(kc_status_manager_new(&sm), 0);
        assert_int_equal(kc_status_manager_get_pod_phase(sm, NULL, &p), -EINVAL);
        assert_int_equal(kc_status_manager_get_pod_phase(sm, "u1", NULL), -EINVAL);
        assert_int_equal(kc_status_manager_get_pod_phase(sm, "u1", &p), -ENOENT);
        assert_int_equal(p, KC_POD_PHASE_RUNNING);

        assert_int_equal(phase_after(sm, pod, json_object(), 0), KC_POD_PHASE_UNKNOWN);
        assert_int_equal(phase_after(sm, pod, phase_status("Sleeping"), 0), KC_POD_PHASE_UNKNOWN);
        assert_int_equal(phase_after(sm, pod, phase_status("Pending"), 0), KC_POD_PHASE_PENDING);
        assert_int_equal(phase_after(sm, pod, phase_status("Failed"), 0), KC_POD_PHASE_FAILED);
        assert_int_equal(phase_after(sm, pod, phase_status("Running"), -EPERM),
                         KC_POD_PHASE_FAILED);
        assert_string_equal(phase_in(sm, "u1"), "Failed");
}

static void test_set_get_version(void **state)
{
        _cleanup_(kc_status_manager_freep) struct kc_status_manager *sm = NULL;
        _cleanup_(kc_api_pod_unrefp) struct kc_api_pod *pod =
                mkpod("u1", "default", "web", KC_RESTART_POLICY_ALWAYS, false);
        json_t *a = phase_status("Pending"), *b = phase_status("Pending"),
               *c = phase_status("Running"), *got = (json_t *)0x1;
        uint64_t v = 7;

        (void)state;
        assert_int_equal(kc_status_manager_new(&sm), 0);
        assert_int_equal(kc_status_manager_get_pod_status(sm, "u1", &got), -ENOENT);
        assert_ptr_equal(got, (json_t *)0x1);
        assert_int_equal(kc_status_manager_get_version(sm, "u1", &v), -ENOENT);
        assert_int_equal(v, 7);

        assert_int_equal(kc_status_manager_set_pod_status(sm, pod, a), 0);
        assert_int_equal(a->refcount, 1); /* copied, not shared */
        assert_int_equal(kc_status_manager_get_pod_status(sm, "u1", &got), 0);
        assert_ptr_not_equal(got, a);
        assert_true(json_equal(got, a));
        /* Both sides' values are their own. */
        assert_int_equal(json_object_set_new(a, "phase", json_string("Failed")), 0);
        assert_int_equal(json_object_set_new(got, "phase", json_string("Unknown")), 0);
        json_decref(got);
        assert_string_equal(phase_in(sm, "u1"), "Pending");
        assert_int_equal(version_of(sm, "u1"), 1);

        /* An equal status is ignored: no new version. */
        assert_int_equal(kc_status_manager_set_pod_status(sm, pod, b), 0);
        assert_int_equal(version_of(sm, "u1"), 1);

        assert_int_equal(kc_status_manager_set_pod_status(sm, pod, c), 0);
        assert_int_equal(version_of(sm, "u1"), 2);
        assert_string_equal(phase_in(sm, "u1"), "Running");

        assert_int_equal(kc_status_manager_set_pod_status(sm, pod, NULL), -EINVAL);
        json_decref(b);
        b = json_array();
        assert_int_equal(kc_status_manager_set_pod_status(sm, pod, b), -EINVAL);
        assert_int_equal(kc_status_manager_set_pod_status(NULL, pod, c), -EINVAL);
        assert_int_equal(kc_status_manager_get_pod_status(sm, NULL, &got), -EINVAL);
        assert_int_equal(version_of(sm, "u1"), 2);
        json_decref(a);
        json_decref(b);
        json_decref(c);
        assert_null(kc_status_manager_free(NULL));
}

/* Succeeded/Failed never go back to Pending/Running. */
/* Issue 15: SetContainerReadiness / SetContainerStartup change the stored status in place. */
static void test_set_container_readiness(void **state)
{
        _cleanup_(kc_status_manager_freep) struct kc_status_manager *sm = NULL;
        _cleanup_(kc_api_pod_unrefp) struct kc_api_pod *pod =
                mkpod("u1", "default", "web", KC_RESTART_POLICY_ALWAYS, false);
        _cleanup_json_ json_t *st =
                json_pack("{s:s, s:[{s:s, s:s}], s:[{s:s, s:{s:{}}, s:b, s:s, s:b}]}", "phase",
                          "Running", "conditions", "type", "Ready", "status", "False",
                          "containerStatuses", "name", "app", "state", "running", "ready", false,
                          "containerID", "sim://c1", "started", true);
        json_t *got = NULL;

        (void)state;
        assert_non_null(st);
        assert_int_equal(kc_status_manager_set_container_readiness(sm, pod, "c1", true, 0),
                         -EINVAL);
        assert_int_equal(kc_status_manager_new(&sm), 0);
        assert_int_equal(kc_status_manager_set_container_readiness(sm, pod, "c1", true, T0),
                         -ENOENT);
        assert_int_equal(kc_status_manager_set_pod_status(sm, pod, st), 0);
        assert_int_equal(version_of(sm, "u1"), 1);
        assert_int_equal(kc_status_manager_set_container_readiness(sm, pod, "c1", true, T0), 0);
        assert_int_equal(version_of(sm, "u1"), 2);
        assert_int_equal(kc_status_manager_get_pod_status(sm, "u1", &got), 0);
        assert_true(json_is_true(json_object_get(
                json_array_get(json_object_get(got, "containerStatuses"), 0), "ready")));
        json_decref(got);
        /* Unchanged: no new version. Unknown container: -ENOENT. */
        assert_int_equal(kc_status_manager_set_container_readiness(sm, pod, "c1", true, T0), 0);
        assert_int_equal(version_of(sm, "u1"), 2);
        assert_int_equal(kc_status_manager_set_container_readiness(sm, pod, "c9", true, T0),
                         -ENOENT);
        assert_int_equal(kc_status_manager_set_container_startup(sm, pod, "c1", false), 0);
        assert_int_equal(version_of(sm, "u1"), 3);
}

static void test_terminal_phase_guard(void **state)
{
        _cleanup_(kc_status_manager_freep) struct kc_status_manager *sm = NULL;
        _cleanup_(kc_api_pod_unrefp) struct kc_api_pod *pod =
                mkpod("u1", "default", "job", KC_RESTART_POLICY_ALWAYS, false);
        json_t *s;

        (void)state;
        assert_int_equal(kc_status_manager_new(&sm), 0);
        s = phase_status("Running");
        assert_int_equal(kc_status_manager_set_pod_status(sm, pod, s), 0);
        json_decref(s);
        s = phase_status("Succeeded");
        assert_int_equal(kc_status_manager_set_pod_status(sm, pod, s), 0);
        json_decref(s);
        assert_int_equal(version_of(sm, "u1"), 2);

        s = phase_status("Running");
        assert_int_equal(kc_status_manager_set_pod_status(sm, pod, s), -EPERM);
        json_decref(s);
        s = phase_status("Pending");
        assert_int_equal(kc_status_manager_set_pod_status(sm, pod, s), -EPERM);
        json_decref(s);
        s = json_object(); /* no phase at all is not terminal either */
        assert_int_equal(kc_status_manager_set_pod_status(sm, pod, s), -EPERM);
        json_decref(s);
        assert_string_equal(phase_in(sm, "u1"), "Succeeded");
        assert_int_equal(version_of(sm, "u1"), 2);

        /* Terminal to terminal is not this guard's business. */
        s = phase_status("Failed");
        assert_int_equal(kc_status_manager_set_pod_status(sm, pod, s), 0);
        json_decref(s);
        assert_string_equal(phase_in(sm, "u1"), "Failed");
        assert_int_equal(version_of(sm, "u1"), 3);
}

/* checkContainerStateTransition: terminated containers stay terminated unless they may restart. */
static void test_container_transition_guard(void **state)
{
        static const struct {
                enum kc_restart_policy policy;
                const char *key;
                int exit_code;
                int want;
        } table[] = {
                { KC_RESTART_POLICY_NEVER, "containerStatuses", 0, -EPERM },
                { KC_RESTART_POLICY_NEVER, "containerStatuses", 1, -EPERM },
                { KC_RESTART_POLICY_ON_FAILURE, "containerStatuses", 0, -EPERM },
                { KC_RESTART_POLICY_ON_FAILURE, "containerStatuses", 1, 0 },
                { KC_RESTART_POLICY_ALWAYS, "containerStatuses", 0, 0 },
                { KC_RESTART_POLICY_NEVER, "initContainerStatuses", 1, -EPERM },
                { KC_RESTART_POLICY_ON_FAILURE, "initContainerStatuses", 1, 0 },
        };
        size_t i;

        (void)state;
        for (i = 0; i < KC_ELEMENTSOF(table); i++) {
                _cleanup_(kc_status_manager_freep) struct kc_status_manager *sm = NULL;
                _cleanup_(kc_api_pod_unrefp) struct kc_api_pod *pod =
                        mkpod("u1", "default", "p", table[i].policy, false);
                json_t *old =
                        container_status("Running", table[i].key, "terminated", table[i].exit_code);
                json_t *new = container_status("Running", table[i].key, "waiting", 0);
                json_t *same = container_status("Running", table[i].key, "terminated",
                                                table[i].exit_code + 100);

                assert_int_equal(kc_status_manager_new(&sm), 0);
                assert_int_equal(kc_status_manager_set_pod_status(sm, pod, old), 0);
                if (kc_status_manager_set_pod_status(sm, pod, new) != table[i].want)
                        fail_msg("case %zu: want %d", i, table[i].want);
                /* Terminated to terminated is always fine. */
                assert_int_equal(kc_status_manager_set_pod_status(sm, pod, same), 0);
                json_decref(old);
                json_decref(new);
                json_decref(same);
        }
}

static void test_remove_orphaned_statuses(void **state)
{
        _cleanup_(kc_status_manager_freep) struct kc_status_manager *sm = NULL;
        static const char *const uids[] = { "u1", "u2", "u3" };
        const char *keep[] = { "u2", NULL, "unknown" };
        json_t *s = phase_status("Running"), *got;
        struct kc_api_pod *p;
        size_t i;

        (void)state;
        assert_int_equal(kc_status_manager_new(&sm), 0);
        for (i = 0; i < 3; i++) {
                p = mkpod(uids[i], "default", uids[i], KC_RESTART_POLICY_ALWAYS, false);
                assert_int_equal(kc_status_manager_set_pod_status(sm, p, s), 0);
                kc_api_pod_unref(p);
        }
        assert_int_equal(kc_status_manager_remove_orphaned_statuses(sm, keep, 3), 2);
        assert_int_equal(kc_status_manager_get_pod_status(sm, "u1", &got), -ENOENT);
        assert_int_equal(kc_status_manager_get_pod_status(sm, "u3", &got), -ENOENT);
        assert_string_equal(phase_in(sm, "u2"), "Running");
        assert_int_equal(kc_status_manager_remove_orphaned_statuses(sm, keep, 3), 0);
        assert_int_equal(kc_status_manager_remove_orphaned_statuses(sm, NULL, 0), 1);
        assert_int_equal(kc_status_manager_get_pod_status(sm, "u2", &got), -ENOENT);
        assert_int_equal(kc_status_manager_remove_orphaned_statuses(sm, NULL, 1), -EINVAL);
        assert_int_equal(s->refcount, 1);
        json_decref(s);
}

/* ------------------------------------------------------------------------ */
/* The /pods document                                                         */

static void test_render_pod_list(void **state)
{
        _cleanup_(kc_status_manager_freep) struct kc_status_manager *sm = NULL;
        _cleanup_(kc_pod_manager_freep) struct kc_pod_manager *pm = NULL;
        struct kc_api_pod *pods[] = {
                mkpod("u-bx", "b", "x", KC_RESTART_POLICY_ALWAYS, false),
                mkpod("u-az", "a", "z", KC_RESTART_POLICY_ALWAYS, false),
                mkpod("u-ay", "a", "y", KC_RESTART_POLICY_ALWAYS, false),
                mkpod("u-mirror", "a", "m", KC_RESTART_POLICY_ALWAYS, true),
        };
        json_t *doc, *items, *s = phase_status("Running");
        char *out = NULL;
        json_error_t jerr;
        size_t i;

        (void)state;
        assert_int_equal(kc_pod_manager_new(&pm), 0);
        assert_int_equal(kc_status_manager_new(&sm), 0);

        /* No pods: an empty list. */
        assert_int_equal(kc_render_pod_list(pm, sm, "node-1", &out), 0);
        assert_string_equal(out, "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{},"
                                 "\"items\":[]}");
        free(out);

        for (i = 0; i < KC_ELEMENTSOF(pods); i++)
                assert_int_equal(kc_pod_manager_update_pod(pm, pods[i]), 0);
        assert_int_equal(kc_status_manager_set_pod_status(sm, pods[1], s), 0);

        assert_int_equal(kc_render_pod_list(pm, sm, "node-1", &out), 0);
        doc = json_loads(out, 0, &jerr);
        assert_non_null(doc);
        assert_string_equal(json_string_value(json_object_get(doc, "kind")), "PodList");
        assert_string_equal(json_string_value(json_object_get(doc, "apiVersion")), "v1");
        assert_true(json_is_object(json_object_get(doc, "metadata")));
        assert_int_equal(json_object_size(json_object_get(doc, "metadata")), 0);
        items = json_object_get(doc, "items");
        /* Sorted by namespace, then name; the mirror pod is not listed. */
        assert_int_equal(json_array_size(items), 3);
        {
                static const char *const want[][3] = { { "a", "y", "Pending" },
                                                       { "a", "z", "Running" },
                                                       { "b", "x", "Pending" } };
                for (i = 0; i < 3; i++) {
                        json_t *it = json_array_get(items, i);
                        json_t *md = json_object_get(it, "metadata");

                        assert_string_equal(json_string_value(json_object_get(it, "kind")), "Pod");
                        assert_string_equal(json_string_value(json_object_get(md, "namespace")),
                                            want[i][0]);
                        assert_string_equal(json_string_value(json_object_get(md, "name")),
                                            want[i][1]);
                        assert_string_equal(json_string_value(json_object_get(
                                                    json_object_get(it, "status"), "phase")),
                                            want[i][2]);
                        assert_string_equal(json_string_value(json_object_get(
                                                    json_object_get(it, "spec"), "nodeName")),
                                            "node-1");
                }
        }
        /* A pod without a stored status has exactly {"phase":"Pending"}. */
        assert_int_equal(json_object_size(json_object_get(json_array_get(items, 0), "status")), 1);
        json_decref(doc);
        /* Compact output. */
        assert_null(strstr(out, ": "));
        assert_null(strchr(out, '\n'));
        free(out);

        out = (char *)"untouched";
        assert_int_equal(kc_render_pod_list(NULL, sm, NULL, &out), -EINVAL);
        assert_string_equal(out, "untouched");

        for (i = 0; i < KC_ELEMENTSOF(pods); i++)
                kc_api_pod_unref(pods[i]);
        json_decref(s);
}

/*
 * The tree the /pods document was built as before it was streamed: the
 * whole PodList in jansson, dumped at once. The stream must print exactly
 * its bytes.
 */
static char *pod_list_as_one_tree(struct kc_api_pod **sorted, size_t n,
                                  struct kc_status_manager *sm, const char *node_name)
{
        json_t *items = json_array(), *list;
        char *out;

        assert_non_null(items);
        for (size_t i = 0; i < n; i++) {
                json_t *st = NULL, *item = NULL;

                if (kc_status_manager_get_pod_status(sm, sorted[i]->uid, &st) == -ENOENT)
                        st = phase_status("Pending");
                assert_int_equal(kc_api_pod_to_json(sorted[i], node_name, st, &item), 0);
                assert_int_equal(json_array_append_new(items, item), 0);
                json_decref(st);
        }
        list = json_pack("{s:s, s:s, s:{}, s:o}", "kind", "PodList", "apiVersion", "v1", "metadata",
                         "items", items);
        assert_non_null(list);
        out = json_dumps(list, JSON_COMPACT);
        assert_non_null(out);
        json_decref(list);
        return out;
}

/*
 * The stream gives the whole list's bytes piece by piece: the head with the
 * first pod, one pod a piece, the tail, then nothing. Pods with strings that
 * need escaping, statuses stored or not, and a list of 0, 1 and 3 pods.
 */
static void test_pod_list_stream_bytes(void **state)
{
        _cleanup_(kc_status_manager_freep) struct kc_status_manager *sm = NULL;
        _cleanup_(kc_pod_manager_freep) struct kc_pod_manager *pm = NULL;
        struct kc_api_pod *pods[] = {
                mkpod("u-2", "ns\"q", "caf\xc3\xa9-\xe2\x9c\x93", KC_RESTART_POLICY_ALWAYS, false),
                mkpod("u-1", "ns\"q", "a\\b/c\n\t\x01", KC_RESTART_POLICY_NEVER, false),
                mkpod("u-3", "z", "<script>&", KC_RESTART_POLICY_ON_FAILURE, false),
        };
        /* pods[1] sorts first, then pods[0], then pods[2]. */
        struct kc_api_pod *sorted[] = { pods[1], pods[0], pods[2] };
        json_t *s = container_status("Running", "containerStatuses", "running", 0);

        (void)state;
        assert_int_equal(kc_pod_manager_new(&pm), 0);
        assert_int_equal(kc_status_manager_new(&sm), 0);
        assert_int_equal(kc_status_manager_set_pod_status(sm, pods[0], s), 0);

        for (size_t n = 0; n <= KC_ELEMENTSOF(pods); n++) {
                _cleanup_(kc_pod_list_stream_closep) struct kc_pod_list_stream *st = NULL;
                _cleanup_free_ char *want = NULL, *rendered = NULL;
                size_t off = 0, pieces = 0, len;
                const char *data;

                if (n > 0)
                        assert_int_equal(kc_pod_manager_update_pod(pm, pods[n - 1]), 0);
                {
                        struct kc_api_pod *v[3];
                        size_t k = 0;

                        for (size_t i = 0; i < KC_ELEMENTSOF(sorted); i++)
                                for (size_t j = 0; j < n; j++)
                                        if (sorted[i] == pods[j])
                                                v[k++] = sorted[i];
                        want = pod_list_as_one_tree(v, k, sm, "node-1");
                }
                assert_int_equal(kc_pod_list_stream_open(pm, sm, "node-1", &st), 0);
                for (;;) {
                        assert_int_equal(kc_pod_list_stream_next(st, &data, &len), 0);
                        if (len == 0)
                                break;
                        assert_true(off + len <= strlen(want));
                        assert_memory_equal(data, want + off, len);
                        off += len;
                        pieces++;
                }
                assert_int_equal(off, strlen(want));
                assert_int_equal(pieces, n ? n + 1 : 1);
                /* Still nothing after the end. */
                assert_int_equal(kc_pod_list_stream_next(st, &data, &len), 0);
                assert_int_equal(len, 0);

                assert_int_equal(kc_render_pod_list(pm, sm, "node-1", &rendered), 0);
                assert_string_equal(rendered, want);
        }
        for (size_t i = 0; i < KC_ELEMENTSOF(pods); i++)
                kc_api_pod_unref(pods[i]);
        json_decref(s);
}

/*
 * Changes while a stream is open: the pods are those of the moment it
 * opened (a pod deleted since is still listed, one added is not); each
 * pod's status is the one stored when its turn comes.
 */
static void test_pod_list_stream_snapshot(void **state)
{
        _cleanup_(kc_status_manager_freep) struct kc_status_manager *sm = NULL;
        _cleanup_(kc_pod_manager_freep) struct kc_pod_manager *pm = NULL;
        _cleanup_(kc_pod_list_stream_closep) struct kc_pod_list_stream *st = NULL;
        struct kc_api_pod *a = mkpod("u-a", "d", "a", KC_RESTART_POLICY_ALWAYS, false);
        struct kc_api_pod *b = mkpod("u-b", "d", "b", KC_RESTART_POLICY_ALWAYS, false);
        struct kc_api_pod *c = mkpod("u-c", "d", "c", KC_RESTART_POLICY_ALWAYS, false);
        json_t *running = phase_status("Running");
        const char *data;
        size_t len;
        char *out = NULL, *b_item;

        (void)state;
        assert_int_equal(kc_pod_manager_new(&pm), 0);
        assert_int_equal(kc_status_manager_new(&sm), 0);
        assert_int_equal(kc_pod_manager_update_pod(pm, a), 0);
        assert_int_equal(kc_pod_manager_update_pod(pm, b), 0);
        assert_int_equal(kc_pod_list_stream_open(pm, sm, NULL, &st), 0);

        kc_pod_manager_remove_pod(pm, b);
        assert_int_equal(kc_pod_manager_update_pod(pm, c), 0);
        kc_api_pod_unref(a);
        kc_api_pod_unref(b);
        kc_api_pod_unref(c);
        assert_int_equal(kc_pod_list_stream_next(st, &data, &len), 0);
        assert_non_null(memmem(data, len, "\"name\":\"a\"", 10));
        assert_non_null(memmem(data, len, "\"phase\":\"Pending\"", 17));
        {
                _cleanup_(kc_api_pod_unrefp) struct kc_api_pod *b2 =
                        mkpod("u-b", "d", "b", KC_RESTART_POLICY_ALWAYS, false);
                assert_int_equal(kc_status_manager_set_pod_status(sm, b2, running), 0);
        }
        assert_int_equal(kc_pod_list_stream_next(st, &data, &len), 0);
        out = strndup(data, len);
        assert_non_null(out);
        b_item = strstr(out, "\"name\":\"b\"");
        assert_non_null(b_item);
        assert_non_null(strstr(b_item, "\"phase\":\"Running\""));
        free(out);
        assert_int_equal(kc_pod_list_stream_next(st, &data, &len), 0);
        assert_int_equal(len, 2);
        assert_memory_equal(data, "]}", 2);
        assert_int_equal(kc_pod_list_stream_next(st, &data, &len), 0);
        assert_int_equal(len, 0);
        json_decref(running);

        assert_int_equal(kc_pod_list_stream_open(NULL, sm, NULL, &st), -EINVAL);
        assert_int_equal(kc_pod_list_stream_next(NULL, &data, &len), -EINVAL);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZER_MALLOC 1
#else
#define SANITIZER_MALLOC 0
#endif

#define N_STORED 1000

/*
 * A stored status costs about its text (issue 18: memory per pod), not a
 * jansson tree (about 6 KiB for one container); it reads back as the same
 * tree, keys in the same order.
 */
static void test_stored_status_is_compact(void **state)
{
        _cleanup_(kc_status_manager_freep) struct kc_status_manager *sm = NULL;
        struct kc_container_status cs = {
                .id = "c1", .name = "app", .state = KC_CONTAINER_STATE_RUNNING, .started_at = T0
        };
        struct kc_pod_status st = { .id = "u", .containers = &cs, .n_containers = 1 };
        struct kc_api_pod *pods[N_STORED];
        json_t *s = NULL, *back = NULL;
        char *text, *text_back;
        size_t before, after, per_status;

        (void)state;
        assert_int_equal(kc_status_manager_new(&sm), 0);
        for (size_t i = 0; i < N_STORED; i++) {
                char uid[32];

                snprintf(uid, sizeof(uid), "uid-%05zu", i);
                pods[i] = mkpod(uid, "default", uid, KC_RESTART_POLICY_ALWAYS, false);
        }
        assert_int_equal(kc_generate_api_pod_status(pods[0], &st, NULL, "192.168.1.10", "sim",
                                                    false, NULL, T0, &s),
                         0);
        text = json_dumps(s, JSON_COMPACT);
        assert_non_null(text);

        before = mallinfo2().uordblks;
        for (size_t i = 0; i < N_STORED; i++)
                assert_int_equal(kc_status_manager_set_pod_status(sm, pods[i], s), 0);
        after = mallinfo2().uordblks;
        per_status = (after - before) / N_STORED;
        print_message("a stored status: %zu bytes (its text %zu)\n", per_status, strlen(text));
        if (!SANITIZER_MALLOC)
                assert_true(per_status < 2 * strlen(text) + 256);

        assert_int_equal(kc_status_manager_get_pod_status(sm, "uid-00007", &back), 0);
        assert_true(json_equal(back, s));
        text_back = json_dumps(back, JSON_COMPACT);
        assert_non_null(text_back);
        assert_string_equal(text_back, text);
        free(text_back);
        free(text);
        json_decref(back);
        json_decref(s);
        for (size_t i = 0; i < N_STORED; i++)
                kc_api_pod_unref(pods[i]);
}

/* What the kubelet will do: generate, store, serve. */
static void test_generate_store_render(void **state)
{
        _cleanup_(kc_status_manager_freep) struct kc_status_manager *sm = NULL;
        _cleanup_(kc_pod_manager_freep) struct kc_pod_manager *pm = NULL;
        _cleanup_(kc_api_pod_unrefp) struct kc_api_pod *pod =
                mkpod("u1", "default", "web", KC_RESTART_POLICY_NEVER, false);
        struct kc_container_status cs = {
                .id = "c1", .name = "app", .state = KC_CONTAINER_STATE_RUNNING, .started_at = T0
        };
        struct kc_pod_status st = { .id = "u1", .containers = &cs, .n_containers = 1 };
        json_t *s = NULL, *old = NULL, *doc;
        char *out = NULL;

        (void)state;
        assert_int_equal(kc_pod_manager_new(&pm), 0);
        assert_int_equal(kc_status_manager_new(&sm), 0);
        assert_int_equal(kc_pod_manager_update_pod(pm, pod), 0);

        assert_int_equal(kc_generate_api_pod_status(pod, &st, NULL, "192.168.1.10", "sim", false,
                                                    NULL, T0, &s),
                         0);
        assert_int_equal(kc_status_manager_set_pod_status(sm, pod, s), 0);
        json_decref(s);

        /* The container exits 0 under Never: Succeeded, stored. */
        cs.state = KC_CONTAINER_STATE_EXITED;
        cs.finished_at = T0 + KC_NSEC_PER_SEC;
        assert_int_equal(kc_status_manager_get_pod_status(sm, "u1", &old), 0);
        assert_int_equal(kc_generate_api_pod_status(pod, &st, NULL, "192.168.1.10", "sim", false,
                                                    old, T0 + 2 * KC_NSEC_PER_SEC, &s),
                         0);
        json_decref(old);
        assert_int_equal(kc_status_manager_set_pod_status(sm, pod, s), 0);
        json_decref(s);
        assert_int_equal(version_of(sm, "u1"), 2);

        assert_int_equal(kc_render_pod_list(pm, sm, "node-1", &out), 0);
        doc = json_loads(out, 0, NULL);
        free(out);
        assert_non_null(doc);
        s = json_object_get(json_array_get(json_object_get(doc, "items"), 0), "status");
        assert_string_equal(json_string_value(json_object_get(s, "phase")), "Succeeded");
        assert_string_equal(json_string_value(json_object_get(s, "startTime")),
                            "2026-11-21T10:00:00Z");
        assert_string_equal(json_string_value(json_object_get(s, "hostIP")), "192.168.1.10");
        json_decref(doc);
}

/* ------------------------------------------------------------------------ */
/* Concurrency: HTTP threads render while the sync side writes                */

#define N_PODS 8
#define N_READERS 4
#define N_ROUNDS 300

struct shared {
        struct kc_pod_manager *pm;
        struct kc_status_manager *sm;
        struct kc_api_pod *pods[N_PODS];
        const char *uids[N_PODS];
        pthread_barrier_t start;
        int reader_errors;
        int writer_errors;
        pthread_mutex_t lock;
};

static void *reader(void *arg)
{
        struct shared *sh = arg;
        json_t *doc;
        char *out;
        int i, bad = 0;

        pthread_barrier_wait(&sh->start);
        for (i = 0; i < N_ROUNDS; i++) {
                out = NULL;
                if (kc_render_pod_list(sh->pm, sh->sm, "node-1", &out) < 0) {
                        bad++;
                        continue;
                }
                doc = json_loads(out, 0, NULL);
                if (!doc || json_array_size(json_object_get(doc, "items")) != N_PODS)
                        bad++;
                json_decref(doc);
                free(out);
        }
        pthread_mutex_lock(&sh->lock);
        sh->reader_errors += bad;
        pthread_mutex_unlock(&sh->lock);
        return NULL;
}

static void *writer(void *arg)
{
        static const char *const phases[] = { "Pending", "Running" };
        struct shared *sh = arg;
        json_t *s;
        int i;

        int bad = 0;

        pthread_barrier_wait(&sh->start);
        for (i = 0; i < N_ROUNDS; i++) {
                s = json_pack("{s:s, s:i}", "phase", phases[i % 2], "round", i);
                if (!s || kc_status_manager_set_pod_status(sh->sm, sh->pods[i % N_PODS], s) < 0)
                        bad++;
                json_decref(s);
                if (i % 50 == 49 &&
                    kc_status_manager_remove_orphaned_statuses(sh->sm, sh->uids, N_PODS / 2) < 0)
                        bad++;
        }
        /* cmocka's asserts must stay on the main thread. */
        pthread_mutex_lock(&sh->lock);
        sh->writer_errors += bad;
        pthread_mutex_unlock(&sh->lock);
        return NULL;
}

static void test_concurrent_render(void **state)
{
        static const char *const uids[N_PODS] = { "p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7" };
        struct shared sh = { 0 };
        pthread_t readers[N_READERS], w;
        size_t i;

        (void)state;
        assert_int_equal(kc_pod_manager_new(&sh.pm), 0);
        assert_int_equal(kc_status_manager_new(&sh.sm), 0);
        pthread_mutex_init(&sh.lock, NULL);
        for (i = 0; i < N_PODS; i++) {
                sh.pods[i] = mkpod(uids[i], "ns", uids[i], KC_RESTART_POLICY_ALWAYS, false);
                sh.uids[i] = uids[i];
                assert_int_equal(kc_pod_manager_update_pod(sh.pm, sh.pods[i]), 0);
        }
        pthread_barrier_init(&sh.start, NULL, N_READERS + 1);
        for (i = 0; i < N_READERS; i++)
                assert_int_equal(pthread_create(&readers[i], NULL, reader, &sh), 0);
        assert_int_equal(pthread_create(&w, NULL, writer, &sh), 0);
        for (i = 0; i < N_READERS; i++)
                pthread_join(readers[i], NULL);
        pthread_join(w, NULL);
        assert_int_equal(sh.reader_errors, 0);
        assert_int_equal(sh.writer_errors, 0);

        /* The writer's last round (299) wrote p3 last; p0..p3 survived the orphan sweeps. */
        assert_string_equal(phase_in(sh.sm, "p3"), "Running");

        pthread_barrier_destroy(&sh.start);
        pthread_mutex_destroy(&sh.lock);
        for (i = 0; i < N_PODS; i++)
                kc_api_pod_unref(sh.pods[i]);
        kc_status_manager_free(sh.sm);
        kc_pod_manager_free(sh.pm);
}

/*
 * normalizeStatus (issue 14): a terminated message (state and lastState)
 * is cut to 12 KiB / (containers + init containers); a shorter one and the
 * caller's tree stay as they are; a character cut in two becomes U+FFFD.
 */
static void test_termination_message_cap(void **state)
{
        _cleanup_(kc_status_manager_freep) struct kc_status_manager *sm = NULL;
        _cleanup_(kc_api_pod_unrefp) struct kc_api_pod *pod =
                mkpod("u1", "default", "web", KC_RESTART_POLICY_ALWAYS, false);
        static char big[13000], accents[13000];
        json_t *s, *got = NULL, *cs;

        (void)state;
        memset(big, 'x', sizeof(big) - 1);
        /* "é" is two bytes: 12288 falls inside one (after 6143 of them and a leading 'a'). */
        accents[0] = 'a';
        for (size_t i = 1; i + 2 < sizeof(accents); i += 2)
                memcpy(&accents[i], "\xc3\xa9", 2);
        assert_int_equal(kc_status_manager_new(&sm), 0);
        s = json_pack("{s:s, s:[{s:s, s:{s:{s:i, s:s}}, s:{s:{s:i, s:s}}}]}", "phase", "Running",
                      "containerStatuses", "name", "app", "state", "terminated", "exitCode", 1,
                      "message", big, "lastState", "terminated", "exitCode", 2, "message", "short");
        assert_non_null(s);
        assert_int_equal(kc_status_manager_set_pod_status(sm, pod, s), 0);
        /* the caller's tree is untouched */
        assert_int_equal(
                json_string_length(json_object_get(
                        json_object_get(
                                json_object_get(
                                        json_array_get(json_object_get(s, "containerStatuses"), 0),
                                        "state"),
                                "terminated"),
                        "message")),
                sizeof(big) - 1);
        assert_int_equal(kc_status_manager_get_pod_status(sm, "u1", &got), 0);
        cs = json_array_get(json_object_get(got, "containerStatuses"), 0);
        assert_int_equal(
                json_string_length(json_object_get(
                        json_object_get(json_object_get(cs, "state"), "terminated"), "message")),
                12 * 1024);
        assert_string_equal(json_string_value(json_object_get(
                                    json_object_get(json_object_get(cs, "lastState"), "terminated"),
                                    "message")),
                            "short");
        json_decref(got);
        json_decref(s);

        s = json_pack("{s:s, s:[{s:s, s:{s:{s:i, s:s}}}]}", "phase", "Running", "containerStatuses",
                      "name", "app", "state", "terminated", "exitCode", 1, "message", accents);
        assert_non_null(s);
        assert_int_equal(kc_status_manager_set_pod_status(sm, pod, s), 0);
        assert_int_equal(kc_status_manager_get_pod_status(sm, "u1", &got), 0);
        cs = json_array_get(json_object_get(got, "containerStatuses"), 0);
        {
                const char *m = json_string_value(json_object_get(
                        json_object_get(json_object_get(cs, "state"), "terminated"), "message"));
                size_t n = strlen(m);

                /* 12287 whole bytes, then the cut "é"'s first byte as U+FFFD */
                assert_int_equal(n, 12 * 1024 - 1 + 3);
                assert_memory_equal(m + n - 3, "\xef\xbf\xbd", 3);
        }
        json_decref(got);
        json_decref(s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_set_get_version),
                cmocka_unit_test(test_get_pod_phase),
                cmocka_unit_test(test_set_container_readiness),
                cmocka_unit_test(test_termination_message_cap),
                cmocka_unit_test(test_terminal_phase_guard),
                cmocka_unit_test(test_container_transition_guard),
                cmocka_unit_test(test_remove_orphaned_statuses),
                cmocka_unit_test(test_render_pod_list),
                cmocka_unit_test(test_pod_list_stream_bytes),
                cmocka_unit_test(test_pod_list_stream_snapshot),
                cmocka_unit_test(test_stored_status_is_compact),
                cmocka_unit_test(test_generate_store_render),
                cmocka_unit_test(test_concurrent_render),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
