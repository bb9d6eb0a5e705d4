/* SPDX-License-Identifier: Apache-2.0 */
/*
 * v1.PodStatus generation (issue 4, item 4): the reason cache, getPhase,
 * generateAPIPodStatus's container statuses, conditions and IPs, and the
 * v1 Pod wrapper. Issue 14: sidecars (restartable init containers) in
 * getPhase, their statuses and the conditions.
 */
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
#include "kubelet/config/manifest.h"
#include "kubelet/status/pod_status.h"
#include "kubelet/status/reason_cache.h"
#include "runtime/api_pod.h"
#include "runtime/container.h"
#include "runtime/runtime_service.h"

/* 2026-11-21T10:00:00Z */
#define T0 (INT64_C(1795255200) * KC_NSEC_PER_SEC)
#define SEC KC_NSEC_PER_SEC

/* ------------------------------------------------------------------------ */
/* Helpers                                                                    */

/*
 * Walks @p root along a dotted path: object keys, and decimal segments as
 * array indexes ("containerStatuses.0.state.running.startedAt"). NULL when
 * absent.
 */
static json_t *jpath(json_t *root, const char *path)
{
        char buf[256], *save = NULL, *seg, *end;
        json_t *v = root;
        long idx;

        snprintf(buf, sizeof(buf), "%s", path);
        for (seg = strtok_r(buf, ".", &save); v && seg; seg = strtok_r(NULL, ".", &save)) {
                idx = strtol(seg, &end, 10);
                if (*end == '\0' && json_is_array(v))
                        v = json_array_get(v, (size_t)idx);
                else
                        v = json_object_get(v, seg);
        }
        return v;
}

/* The string at @p path, or "<absent>"/"<not a string>". */
static const char *jstr_at(json_t *root, const char *path)
{
        json_t *v = jpath(root, path);

        if (!v)
                return "<absent>";
        return json_is_string(v) ? json_string_value(v) : "<not a string>";
}

static long long jint_at(json_t *root, const char *path)
{
        json_t *v = jpath(root, path);

        assert_true(json_is_integer(v));
        return json_integer_value(v);
}

static bool jbool_at(json_t *root, const char *path)
{
        json_t *v = jpath(root, path);

        assert_true(json_is_boolean(v));
        return json_is_true(v);
}

static char *fmt_time(int64_t ns)
{
        static char buf[4][KC_RFC3339_MAX];
        static int i;
        char *b = buf[i++ % 4];

        assert_int_equal(kc_format_rfc3339(ns, b), 0);
        return b;
}

static const struct kc_api_container app_ctr = { .name = "app", .image = "nginx:1.25" };

static struct kc_api_pod pod_with(enum kc_restart_policy policy,
                                  const struct kc_api_container *apps, size_t n_apps,
                                  const struct kc_api_container *inits, size_t n_inits)
{
        return (struct kc_api_pod){ .uid = "u1",
                                    .name = "web",
                                    .namespace = "default",
                                    .deletion_grace_s = -1,
                                    .termination_grace_s = 30,
                                    .restart_policy = policy,
                                    .containers = apps,
                                    .n_containers = n_apps,
                                    .init_containers = inits,
                                    .n_init_containers = n_inits };
}

static struct kc_container_status cs_running(const char *id, const char *name, int32_t restarts)
{
        return (struct kc_container_status){ .id = id,
                                             .name = name,
                                             .state = KC_CONTAINER_STATE_RUNNING,
                                             .created_at = T0 - 70 * SEC,
                                             .started_at = T0 - 60 * SEC,
                                             .restart_count = restarts,
                                             .image = "nginx:1.25",
                                             .image_ref = "sha256:abc" };
}

static struct kc_container_status cs_exited(const char *id, const char *name, int32_t code,
                                            int32_t restarts)
{
        return (struct kc_container_status){ .id = id,
                                             .name = name,
                                             .state = KC_CONTAINER_STATE_EXITED,
                                             .exit_code = code,
                                             .created_at = T0 - 50 * SEC,
                                             .started_at = T0 - 40 * SEC,
                                             .finished_at = T0 - 30 * SEC,
                                             .restart_count = restarts,
                                             .image = "nginx:1.25",
                                             .image_ref = "sha256:abc" };
}

static const struct kc_sandbox_status ready_sandbox = {
        .id = "s1",
        .name = "web",
        .namespace = "default",
        .uid = "u1",
        .state = KC_SANDBOX_STATE_READY,
        .ip = "10.88.0.5",
};

static struct kc_pod_status status_of(const struct kc_container_status *cs, size_t n)
{
        return (struct kc_pod_status){ .id = "u1",
                                       .name = "web",
                                       .namespace = "default",
                                       .sandboxes = &ready_sandbox,
                                       .n_sandboxes = 1,
                                       .containers = cs,
                                       .n_containers = n };
}

static json_t *generate(const struct kc_api_pod *pod, const struct kc_pod_status *st,
                        struct kc_reason_cache *rc, const char *host_ip, const json_t *old,
                        int64_t now)
{
        json_t *o = NULL;

        assert_int_equal(
                kc_generate_api_pod_status(pod, st, rc, host_ip, "sim", false, old, now, &o), 0);
        assert_non_null(o);
        return o;
}

/* The condition of @p type in @p s (asserting the v1 order of the five). */
static json_t *condition(json_t *s, const char *type)
{
        static const char *const order[] = { "PodReadyToStartContainers", "Initialized", "Ready",
                                             "ContainersReady", "PodScheduled" };
        json_t *conds = json_object_get(s, "conditions"), *c;
        size_t i;

        assert_int_equal(json_array_size(conds), 5);
        for (i = 0; i < 5; i++) {
                c = json_array_get(conds, i);
                assert_string_equal(jstr_at(c, "type"), order[i]);
                assert_true(json_is_null(json_object_get(c, "lastProbeTime")));
                if (strcmp(order[i], type) == 0)
                        return c;
        }
        fail_msg("no condition %s", type);
        return NULL;
}

/* ------------------------------------------------------------------------ */
/* Time formatting                                                            */

static void test_format_rfc3339(void **state)
{
        char buf[KC_RFC3339_MAX] = "untouched";

        (void)state;
        assert_int_equal(kc_format_rfc3339(T0, buf), 0);
        assert_string_equal(buf, "2026-11-21T10:00:00Z");
        /* Sub-second parts are dropped (toward the past). */
        assert_int_equal(kc_format_rfc3339(T0 + 999999999, buf), 0);
        assert_string_equal(buf, "2026-11-21T10:00:00Z");
        assert_int_equal(kc_format_rfc3339(0, buf), 0);
        assert_string_equal(buf, "1970-01-01T00:00:00Z");
        assert_int_equal(kc_format_rfc3339(-1, buf), 0);
        assert_string_equal(buf, "1969-12-31T23:59:59Z");
        /* The int64 range (years 1677..2262) formats; floor for negatives. */
        assert_int_equal(kc_format_rfc3339(INT64_MAX, buf), 0);
        assert_string_equal(buf, "2262-04-11T23:47:16Z");
        assert_int_equal(kc_format_rfc3339(INT64_MIN, buf), 0);
        assert_string_equal(buf, "1677-09-21T00:12:43Z");
}

/* ------------------------------------------------------------------------ */
/* Reason cache                                                               */

static void test_reason_cache_basics(void **state)
{
        _cleanup_(kc_reason_cache_freep) struct kc_reason_cache *rc = NULL;
        char *reason = (char *)"untouched", *message = (char *)"untouched";

        (void)state;
        assert_int_equal(kc_reason_cache_new(&rc), 0);
        assert_int_equal(kc_reason_cache_get(rc, "u1", "app", &reason, &message), -ENOENT);
        assert_string_equal(reason, "untouched");
        assert_string_equal(message, "untouched");

        assert_int_equal(kc_reason_cache_update(rc, "u1", "app", "ErrImagePull", "no such image"),
                         0);
        assert_int_equal(kc_reason_cache_get(rc, "u1", "app", &reason, &message), 0);
        assert_string_equal(reason, "ErrImagePull");
        assert_string_equal(message, "no such image");
        free(reason);
        free(message);

        /* A later failure replaces the entry; a NULL message reads as "". */
        assert_int_equal(kc_reason_cache_update(rc, "u1", "app", "CrashLoopBackOff", NULL), 0);
        assert_int_equal(kc_reason_cache_len(rc), 1);
        assert_int_equal(kc_reason_cache_get(rc, "u1", "app", &reason, NULL), 0);
        assert_string_equal(reason, "CrashLoopBackOff");
        free(reason);
        assert_int_equal(kc_reason_cache_get(rc, "u1", "app", NULL, &message), 0);
        assert_string_equal(message, "");
        free(message);

        /* Keys do not collide across the UID/name boundary. */
        assert_int_equal(kc_reason_cache_update(rc, "a/b", "c", "RunContainerError", "x"), 0);
        assert_int_equal(kc_reason_cache_get(rc, "a", "b/c", NULL, NULL), -ENOENT);
        assert_int_equal(kc_reason_cache_get(rc, "a/b", "c", NULL, NULL), 0);

        /* A success removes the entry; removing twice is fine. */
        assert_int_equal(kc_reason_cache_remove(rc, "u1", "app"), 0);
        assert_int_equal(kc_reason_cache_remove(rc, "u1", "app"), 0);
        assert_int_equal(kc_reason_cache_get(rc, "u1", "app", NULL, NULL), -ENOENT);
        assert_int_equal(kc_reason_cache_len(rc), 1);

        assert_int_equal(kc_reason_cache_update(rc, "u1", "app", "", "m"), -EINVAL);
        assert_int_equal(kc_reason_cache_update(rc, NULL, "app", "R", "m"), -EINVAL);
        assert_int_equal(kc_reason_cache_update(rc, "u1", NULL, "R", "m"), -EINVAL);
        assert_int_equal(kc_reason_cache_len(rc), 1);
        assert_null(kc_reason_cache_free(NULL));
}

/* D18: housekeeping forgets the entries of pods neither desired nor known
 * to the workers; the others keep their place in the eviction order. */
static void test_reason_cache_remove_orphans(void **state)
{
        _cleanup_(kc_reason_cache_freep) struct kc_reason_cache *rc = NULL;
        const char *keep[] = { "u1", NULL, "u3" };
        char *reason = NULL;

        (void)state;
        assert_int_equal(kc_reason_cache_new(&rc), 0);
        assert_int_equal(kc_reason_cache_update(rc, "u1", "app", "CrashLoopBackOff", "a"), 0);
        assert_int_equal(kc_reason_cache_update(rc, "u2", "app", "ErrImagePull", "b"), 0);
        assert_int_equal(kc_reason_cache_update(rc, "u1", "side", "RunContainerError", "c"), 0);
        assert_int_equal(kc_reason_cache_update(rc, "u2", "side", "CrashLoopBackOff", "d"), 0);
        assert_int_equal(kc_reason_cache_update(rc, "u3", "app", "CrashLoopBackOff", "e"), 0);

        assert_int_equal(kc_reason_cache_remove_orphans(rc, keep, KC_ELEMENTSOF(keep)), 2);
        assert_int_equal(kc_reason_cache_len(rc), 3);
        assert_int_equal(kc_reason_cache_get(rc, "u2", "app", NULL, NULL), -ENOENT);
        assert_int_equal(kc_reason_cache_get(rc, "u2", "side", NULL, NULL), -ENOENT);
        assert_int_equal(kc_reason_cache_get(rc, "u1", "side", &reason, NULL), 0);
        assert_string_equal(reason, "RunContainerError");
        free(reason);
        /* Nothing more to drop; the kept entries still update in place. */
        assert_int_equal(kc_reason_cache_remove_orphans(rc, keep, KC_ELEMENTSOF(keep)), 0);
        assert_int_equal(kc_reason_cache_update(rc, "u1", "app", "CrashLoopBackOff", "f"), 0);
        assert_int_equal(kc_reason_cache_len(rc), 3);

        assert_int_equal(kc_reason_cache_remove_orphans(rc, NULL, 1), -EINVAL);
        assert_int_equal(kc_reason_cache_remove_orphans(NULL, keep, 1), -EINVAL);
        assert_int_equal(kc_reason_cache_len(rc), 3);
        /* No pod kept: the cache empties and stays usable. */
        assert_int_equal(kc_reason_cache_remove_orphans(rc, NULL, 0), 3);
        assert_int_equal(kc_reason_cache_len(rc), 0);
        assert_int_equal(kc_reason_cache_update(rc, "u4", "app", "CrashLoopBackOff", "g"), 0);
        assert_int_equal(kc_reason_cache_get(rc, "u4", "app", NULL, NULL), 0);
}

static bool rc_has(struct kc_reason_cache *rc, unsigned i)
{
        char name[32];

        snprintf(name, sizeof(name), "c%u", i);
        return kc_reason_cache_get(rc, "u", name, NULL, NULL) == 0;
}

static void rc_put(struct kc_reason_cache *rc, unsigned i)
{
        char name[32];

        snprintf(name, sizeof(name), "c%u", i);
        assert_int_equal(kc_reason_cache_update(rc, "u", name, "CrashLoopBackOff", "m"), 0);
}

/*
 * Bounded to 1000 entries; the least recently USED entry goes first, as
 * upstream's ReasonCache (an lru.Cache: Add and Get both refresh). Note
 * that rc_has is a get, so it refreshes too.
 */
static void test_reason_cache_eviction(void **state)
{
        _cleanup_(kc_reason_cache_freep) struct kc_reason_cache *rc = NULL;
        unsigned i;

        (void)state;
        assert_int_equal(kc_reason_cache_new(&rc), 0);
        for (i = 0; i < KC_REASON_CACHE_MAX_ENTRIES; i++)
                rc_put(rc, i);
        assert_int_equal(kc_reason_cache_len(rc), 1000);
        for (i = 0; i < KC_REASON_CACHE_MAX_ENTRIES; i++)
                assert_true(rc_has(rc, i)); /* in insertion order: the order stays */

        /* Entry 1001 evicts c0, the oldest. */
        rc_put(rc, 1000);
        assert_int_equal(kc_reason_cache_len(rc), 1000);
        assert_false(rc_has(rc, 0));
        assert_true(rc_has(rc, 1));
        assert_true(rc_has(rc, 1000));

        /* Updating c2 makes it recent: c3 goes next. */
        rc_put(rc, 2);
        rc_put(rc, 1001);
        assert_true(rc_has(rc, 2));
        assert_false(rc_has(rc, 3));
        assert_int_equal(kc_reason_cache_len(rc), 1000);

        /* Replacing an existing key in a full cache evicts nothing. */
        rc_put(rc, 1001);
        assert_int_equal(kc_reason_cache_len(rc), 1000);

        /* Removing makes room: nothing is evicted. */
        assert_int_equal(kc_reason_cache_remove(rc, "u", "c4"), 0);
        rc_put(rc, 1003);
        assert_int_equal(kc_reason_cache_len(rc), 1000);
        assert_true(rc_has(rc, 5));
}

/*
 * Issue 17: a get refreshes recency. c0 is the oldest entry, read just
 * before the cache overflows: it survives and c1 is evicted instead
 * (upstream's lru.Cache.Get moves the entry to the front).
 */
static void test_reason_cache_get_refreshes(void **state)
{
        _cleanup_(kc_reason_cache_freep) struct kc_reason_cache *rc = NULL;
        _cleanup_free_ char *reason = NULL;
        unsigned i;

        (void)state;
        assert_int_equal(kc_reason_cache_new(&rc), 0);
        for (i = 0; i < KC_REASON_CACHE_MAX_ENTRIES; i++)
                rc_put(rc, i);
        assert_int_equal(kc_reason_cache_get(rc, "u", "c0", &reason, NULL), 0);
        assert_string_equal(reason, "CrashLoopBackOff");
        rc_put(rc, 1000);
        assert_int_equal(kc_reason_cache_len(rc), 1000);
        assert_int_equal(kc_reason_cache_get(rc, "u", "c1", NULL, NULL), -ENOENT);
        assert_int_equal(kc_reason_cache_get(rc, "u", "c0", NULL, NULL), 0);
        /* A miss changes nothing: c2 is the next to go. */
        assert_int_equal(kc_reason_cache_get(rc, "u", "c1", NULL, NULL), -ENOENT);
        rc_put(rc, 1001);
        assert_int_equal(kc_reason_cache_get(rc, "u", "c2", NULL, NULL), -ENOENT);
        assert_int_equal(kc_reason_cache_get(rc, "u", "c3", NULL, NULL), 0);
}

/* ------------------------------------------------------------------------ */
/* Phase                                                                      */

enum app_case {
        APP_RUNNING,
        APP_EXITED_0,
        APP_EXITED_1,
        APP_NO_STATUS,
};

static enum kc_pod_phase phase_of(enum kc_restart_policy policy, enum app_case c, bool terminal,
                                  bool static_pod)
{
        struct kc_api_pod pod = pod_with(policy, &app_ctr, 1, NULL, 0);
        struct kc_container_status cs;
        struct kc_pod_status st;

        pod.static_pod = static_pod;
        switch (c) {
        case APP_RUNNING:
                cs = cs_running("c1", "app", 0);
                break;
        case APP_EXITED_0:
                cs = cs_exited("c1", "app", 0, 0);
                break;
        case APP_EXITED_1:
                cs = cs_exited("c1", "app", 1, 0);
                break;
        default:
                return kc_pod_get_phase(&pod, NULL, terminal);
        }
        st = status_of(&cs, 1);
        return kc_pod_get_phase(&pod, &st, terminal);
}

static void test_phase_table(void **state)
{
        static const struct {
                enum kc_restart_policy policy;
                enum app_case app;
                enum kc_pod_phase want;
        } table[] = {
                { KC_RESTART_POLICY_ALWAYS, APP_RUNNING, KC_POD_PHASE_RUNNING },
                { KC_RESTART_POLICY_ALWAYS, APP_EXITED_0, KC_POD_PHASE_RUNNING },
                { KC_RESTART_POLICY_ALWAYS, APP_EXITED_1, KC_POD_PHASE_RUNNING },
                { KC_RESTART_POLICY_ALWAYS, APP_NO_STATUS, KC_POD_PHASE_PENDING },
                { KC_RESTART_POLICY_ON_FAILURE, APP_RUNNING, KC_POD_PHASE_RUNNING },
                { KC_RESTART_POLICY_ON_FAILURE, APP_EXITED_0, KC_POD_PHASE_SUCCEEDED },
                { KC_RESTART_POLICY_ON_FAILURE, APP_EXITED_1, KC_POD_PHASE_RUNNING },
                { KC_RESTART_POLICY_ON_FAILURE, APP_NO_STATUS, KC_POD_PHASE_PENDING },
                { KC_RESTART_POLICY_NEVER, APP_RUNNING, KC_POD_PHASE_RUNNING },
                { KC_RESTART_POLICY_NEVER, APP_EXITED_0, KC_POD_PHASE_SUCCEEDED },
                { KC_RESTART_POLICY_NEVER, APP_EXITED_1, KC_POD_PHASE_FAILED },
                { KC_RESTART_POLICY_NEVER, APP_NO_STATUS, KC_POD_PHASE_PENDING },
        };
        size_t i;

        (void)state;
        for (i = 0; i < KC_ELEMENTSOF(table); i++) {
                enum kc_pod_phase got = phase_of(table[i].policy, table[i].app, false, false);

                if (got != table[i].want)
                        fail_msg("case %zu (%s): got %s, want %s", i,
                                 kc_restart_policy_to_string(table[i].policy),
                                 kc_pod_phase_to_string(got),
                                 kc_pod_phase_to_string(table[i].want));
        }
}

/* A terminal pod restarts nothing: its stopped containers decide, except for static pods. */
static void test_phase_terminal(void **state)
{
        (void)state;
        assert_int_equal(phase_of(KC_RESTART_POLICY_ALWAYS, APP_EXITED_0, true, false),
                         KC_POD_PHASE_SUCCEEDED);
        assert_int_equal(phase_of(KC_RESTART_POLICY_ALWAYS, APP_EXITED_1, true, false),
                         KC_POD_PHASE_FAILED);
        assert_int_equal(phase_of(KC_RESTART_POLICY_ON_FAILURE, APP_EXITED_1, true, false),
                         KC_POD_PHASE_FAILED);
        /* Static pods keep the restart-policy rule (upstream's TODO). */
        assert_int_equal(phase_of(KC_RESTART_POLICY_ALWAYS, APP_EXITED_0, true, true),
                         KC_POD_PHASE_RUNNING);
        /* Still running: terminal or not, Running. */
        assert_int_equal(phase_of(KC_RESTART_POLICY_NEVER, APP_RUNNING, true, false),
                         KC_POD_PHASE_RUNNING);
        assert_int_equal(kc_pod_get_phase(NULL, NULL, false), _KC_POD_PHASE_INVALID);
}

/* Several containers; the newest status per name decides; created counts as waiting. */
static void test_phase_mixed(void **state)
{
        static const struct kc_api_container two[] = { { .name = "a", .image = "i" },
                                                       { .name = "b", .image = "i" } };
        struct kc_api_pod pod = pod_with(KC_RESTART_POLICY_NEVER, two, 2, NULL, 0);
        struct kc_container_status cs[3];
        struct kc_pod_status st;

        (void)state;
        /* One running, one failed: Running. */
        cs[0] = cs_running("a1", "a", 0);
        cs[1] = cs_exited("b1", "b", 1, 0);
        st = status_of(cs, 2);
        assert_int_equal(kc_pod_get_phase(&pod, &st, false), KC_POD_PHASE_RUNNING);

        /* One running, one not started: Pending. */
        st = status_of(cs, 1);
        assert_int_equal(kc_pod_get_phase(&pod, &st, false), KC_POD_PHASE_PENDING);

        /* Newest first: a's newest instance exited 0, the older one ran. */
        cs[0] = cs_exited("a2", "a", 0, 1);
        cs[1] = cs_running("a1", "a", 0);
        cs[2] = cs_exited("b1", "b", 0, 0);
        st = status_of(cs, 3);
        assert_int_equal(kc_pod_get_phase(&pod, &st, false), KC_POD_PHASE_SUCCEEDED);

        /* A created container is waiting: Pending... */
        cs[0] = cs_running("a1", "a", 0);
        cs[1] = cs_exited("b2", "b", 0, 1);
        cs[1].state = KC_CONTAINER_STATE_CREATED;
        st = status_of(cs, 2);
        assert_int_equal(kc_pod_get_phase(&pod, &st, false), KC_POD_PHASE_PENDING);
        /* ...unless an older instance exited (lastState terminated: stopped). */
        cs[2] = cs_exited("b1", "b", 1, 0);
        st = status_of(cs, 3);
        assert_int_equal(kc_pod_get_phase(&pod, &st, false), KC_POD_PHASE_RUNNING);
}

static void test_phase_init_containers(void **state)
{
        static const struct kc_api_container init = { .name = "init", .image = "busybox" };
        struct kc_api_pod pod = pod_with(KC_RESTART_POLICY_NEVER, &app_ctr, 1, &init, 1);
        struct kc_container_status cs[2];
        struct kc_pod_status st;

        (void)state;
        /* Nothing ran yet: pending initialisation. */
        assert_int_equal(kc_pod_get_phase(&pod, NULL, false), KC_POD_PHASE_PENDING);

        /* Init running: Pending. */
        cs[0] = cs_running("i1", "init", 0);
        st = status_of(cs, 1);
        assert_int_equal(kc_pod_get_phase(&pod, &st, false), KC_POD_PHASE_PENDING);

        /* Init failed: Failed under Never, Pending (it restarts) otherwise. */
        cs[0] = cs_exited("i1", "init", 1, 0);
        assert_int_equal(kc_pod_get_phase(&pod, &st, false), KC_POD_PHASE_FAILED);
        pod.restart_policy = KC_RESTART_POLICY_ON_FAILURE;
        assert_int_equal(kc_pod_get_phase(&pod, &st, false), KC_POD_PHASE_PENDING);
        pod.restart_policy = KC_RESTART_POLICY_ALWAYS;
        assert_int_equal(kc_pod_get_phase(&pod, &st, false), KC_POD_PHASE_PENDING);

        /* Init done, app not started: Pending; app running: Running. */
        cs[0] = cs_exited("i1", "init", 0, 0);
        assert_int_equal(kc_pod_get_phase(&pod, &st, false), KC_POD_PHASE_PENDING);
        cs[1] = cs_running("c1", "app", 0);
        st = status_of(cs, 2);
        assert_int_equal(kc_pod_get_phase(&pod, &st, false), KC_POD_PHASE_RUNNING);

        /* An init container re-running after the app started does not make the pod Pending. */
        cs[0] = cs_running("i2", "init", 1);
        assert_int_equal(kc_pod_get_phase(&pod, &st, false), KC_POD_PHASE_RUNNING);
}

/* getPhase with a sidecar (KEP-753): a running sidecar counts as running; a terminated one
 * is neither running nor stopped, so a Never pod whose app succeeded completes. */
static void test_phase_sidecar(void **state)
{
        static const struct kc_api_container side = { .name = "side",
                                                      .image = "envoy",
                                                      .restart_policy_always = true };
        struct kc_api_pod pod = pod_with(KC_RESTART_POLICY_NEVER, &app_ctr, 1, &side, 1);
        struct kc_container_status cs[2];
        struct kc_pod_status st;

        (void)state;
        assert_int_equal(kc_pod_get_phase(&pod, NULL, false), KC_POD_PHASE_PENDING);
        /* The sidecar runs, the app is not there yet: Pending (the app waits). */
        cs[0] = cs_running("s1", "side", 0);
        st = status_of(cs, 1);
        assert_int_equal(kc_pod_get_phase(&pod, &st, false), KC_POD_PHASE_PENDING);
        /* Both run: Running. */
        cs[1] = cs_running("c1", "app", 0);
        st = status_of(cs, 2);
        assert_int_equal(kc_pod_get_phase(&pod, &st, false), KC_POD_PHASE_RUNNING);
        /* The app is done, the sidecar still runs: Running until it is stopped. */
        cs[1] = cs_exited("c1", "app", 0, 0);
        assert_int_equal(kc_pod_get_phase(&pod, &st, false), KC_POD_PHASE_RUNNING);
        /* The sidecar killed (exit 137): the pod Succeeded, whatever the sidecar's code. */
        cs[0] = cs_exited("s1", "side", 137, 0);
        assert_int_equal(kc_pod_get_phase(&pod, &st, false), KC_POD_PHASE_SUCCEEDED);
        /* The app failed instead: Failed. */
        cs[1] = cs_exited("c1", "app", 1, 0);
        assert_int_equal(kc_pod_get_phase(&pod, &st, false), KC_POD_PHASE_FAILED);
}

/* initContainerStatuses of a sidecar: running, started and ready; in the conditions. */
static void test_status_sidecar(void **state)
{
        static const struct kc_api_container side = { .name = "side",
                                                      .image = "envoy",
                                                      .restart_policy_always = true };
        struct kc_api_pod pod = pod_with(KC_RESTART_POLICY_ALWAYS, &app_ctr, 1, &side, 1);
        struct kc_container_status cs[2];
        struct kc_pod_status st;
        json_t *s, *c;

        (void)state;
        cs[0] = cs_running("c1", "app", 0);
        cs[1] = cs_running("s1", "side", 0);
        st = status_of(cs, 2);
        s = generate(&pod, &st, NULL, NULL, NULL, T0);
        assert_string_equal(jstr_at(s, "phase"), "Running");
        assert_string_equal(jstr_at(s, "initContainerStatuses.0.name"), "side");
        assert_non_null(jpath(s, "initContainerStatuses.0.state.running"));
        assert_true(jbool_at(s, "initContainerStatuses.0.started"));
        assert_true(jbool_at(s, "initContainerStatuses.0.ready"));
        assert_string_equal(jstr_at(condition(s, "Initialized"), "status"), "True");
        assert_string_equal(jstr_at(condition(s, "ContainersReady"), "status"), "True");
        json_decref(s);

        /* The sidecar crashed: not ready, and the pod's readiness says so (sidecar first). */
        cs[1] = cs_exited("s1", "side", 1, 0);
        s = generate(&pod, &st, NULL, NULL, NULL, T0);
        assert_false(jbool_at(s, "initContainerStatuses.0.ready"));
        assert_false(jbool_at(s, "initContainerStatuses.0.started"));
        c = condition(s, "ContainersReady");
        assert_string_equal(jstr_at(c, "status"), "False");
        assert_string_equal(jstr_at(c, "message"), "containers with unready status: [side]");
        json_decref(s);

        /* Only the sidecar runs (the app not started yet): Initialized, as it is started. */
        cs[0] = cs_running("s1", "side", 0);
        st = status_of(cs, 1);
        s = generate(&pod, &st, NULL, NULL, NULL, T0);
        assert_string_equal(jstr_at(condition(s, "Initialized"), "status"), "True");
        c = condition(s, "ContainersReady");
        assert_string_equal(jstr_at(c, "message"), "containers with unready status: [app]");
        json_decref(s);
}

/* ------------------------------------------------------------------------ */
/* generateAPIPodStatus                                                       */

/* status.qosClass is GetPodQOS of the spec (issue 14). */
static void test_status_qos_class(void **state)
{
        static const struct kc_api_resource lim[] = { { "cpu", { "1", 1000 } },
                                                      { "memory", { "1Gi", 1073741824000 } } };
        static const struct kc_api_resource req[] = { { "memory", { "1Mi", 1048576000 } } };
        struct kc_api_container c = { .name = "app", .image = "nginx:1.25" };
        struct kc_api_pod pod = pod_with(KC_RESTART_POLICY_ALWAYS, &c, 1, NULL, 0);
        struct kc_container_status cs = cs_running("c1", "app", 0);
        struct kc_pod_status st = status_of(&cs, 1);
        json_t *s;

        (void)state;
        c.resources = (struct kc_api_resources){ .limits = lim, .n_limits = 2 };
        s = generate(&pod, &st, NULL, "192.168.1.10", NULL, T0);
        assert_string_equal(jstr_at(s, "qosClass"), "Guaranteed");
        json_decref(s);
        c.resources = (struct kc_api_resources){ .requests = req, .n_requests = 1 };
        s = generate(&pod, &st, NULL, "192.168.1.10", NULL, T0);
        assert_string_equal(jstr_at(s, "qosClass"), "Burstable");
        json_decref(s);
}

static void test_status_running(void **state)
{
        struct kc_api_pod pod = pod_with(KC_RESTART_POLICY_ALWAYS, &app_ctr, 1, NULL, 0);
        struct kc_container_status cs = cs_running("c1", "app", 0);
        struct kc_pod_status st = status_of(&cs, 1);
        const char *ips[] = { "10.88.0.5" };
        json_t *s, *c;
        size_t i;

        (void)state;
        st.ips = ips;
        st.n_ips = 1;
        s = generate(&pod, &st, NULL, "192.168.1.10", NULL, T0);

        assert_string_equal(jstr_at(s, "phase"), "Running");
        for (i = 0; i < 5; i++) {
                c = json_array_get(json_object_get(s, "conditions"), i);
                assert_string_equal(jstr_at(c, "status"), "True");
                assert_string_equal(jstr_at(c, "lastTransitionTime"), "2026-11-21T10:00:00Z");
                assert_null(json_object_get(c, "reason"));
                assert_null(json_object_get(c, "message"));
        }
        (void)condition(s, "PodScheduled");
        assert_string_equal(jstr_at(s, "hostIP"), "192.168.1.10");
        assert_string_equal(jstr_at(s, "hostIPs.0.ip"), "192.168.1.10");
        assert_int_equal(json_array_size(jpath(s, "hostIPs")), 1);
        assert_string_equal(jstr_at(s, "podIP"), "10.88.0.5");
        assert_string_equal(jstr_at(s, "podIPs.0.ip"), "10.88.0.5");
        assert_string_equal(jstr_at(s, "startTime"), "2026-11-21T10:00:00Z");
        assert_string_equal(jstr_at(s, "qosClass"), "BestEffort");
        assert_null(json_object_get(s, "initContainerStatuses"));

        assert_int_equal(json_array_size(jpath(s, "containerStatuses")), 1);
        c = jpath(s, "containerStatuses.0");
        assert_string_equal(jstr_at(c, "name"), "app");
        assert_string_equal(jstr_at(c, "state.running.startedAt"), fmt_time(T0 - 60 * SEC));
        assert_int_equal(json_object_size(json_object_get(c, "state")), 1);
        assert_true(json_is_object(jpath(c, "lastState")));
        assert_int_equal(json_object_size(jpath(c, "lastState")), 0);
        assert_true(jbool_at(c, "ready"));
        assert_true(jbool_at(c, "started"));
        assert_int_equal(jint_at(c, "restartCount"), 0);
        assert_string_equal(jstr_at(c, "image"), "nginx:1.25");
        assert_string_equal(jstr_at(c, "imageID"), "sha256:abc");
        assert_string_equal(jstr_at(c, "containerID"), "sim://c1");

        /* The runtime name is the containerID's scheme. */
        json_decref(s);
        assert_int_equal(kc_generate_api_pod_status(&pod, &st, NULL, NULL, "containerd", false,
                                                    NULL, T0, &s),
                         0);
        assert_string_equal(jstr_at(s, "containerStatuses.0.containerID"), "containerd://c1");
        /* No host IP: no hostIP fields. */
        assert_null(json_object_get(s, "hostIP"));
        assert_null(json_object_get(s, "hostIPs"));
        json_decref(s);

        s = (json_t *)0x1;
        assert_int_equal(
                kc_generate_api_pod_status(&pod, &st, NULL, NULL, NULL, false, NULL, T0, &s),
                -EINVAL);
        assert_ptr_equal(s, (json_t *)0x1);
        assert_int_equal(
                kc_generate_api_pod_status(NULL, &st, NULL, NULL, "sim", false, NULL, T0, &s),
                -EINVAL);
}

/* Issue 15: the prober's verdicts (UpdatePodStatus) for the two app containers. */
struct fake_probes {
        bool started, ready;
        char seen_id[16];
        bool seen_running;
};

static void fake_probe_get(void *self, const char *uid, const char *name, const char *id,
                           bool running, bool *ret_started, bool *ret_ready)
{
        struct fake_probes *fp = self;

        assert_string_equal(uid, "u1");
        if (strcmp(name, "app") == 0) {
                snprintf(fp->seen_id, sizeof(fp->seen_id), "%s", id ? id : "");
                fp->seen_running = running;
                *ret_started = fp->started;
                *ret_ready = fp->ready;
        } else {
                *ret_started = *ret_ready = running;
        }
}

/* Readiness drives containerStatuses[].ready/started and the Ready and ContainersReady conditions. */
static void test_status_probed_readiness(void **state)
{
        static const struct kc_api_container apps[] = { { .name = "app", .image = "nginx:1.25" },
                                                        { .name = "side", .image = "nginx:1.25" } };
        struct kc_api_pod pod = pod_with(KC_RESTART_POLICY_ALWAYS, apps, 2, NULL, 0);
        struct kc_container_status cs[] = { cs_running("c1", "app", 0),
                                            cs_running("c2", "side", 0) };
        struct kc_pod_status st = status_of(cs, 2);
        struct fake_probes fp = { .started = true, .ready = false };
        const struct kc_container_probe_view view = { .get = fake_probe_get, .self = &fp };
        json_t *s = NULL, *c, *upd = NULL, *again = NULL;

        (void)state;
        assert_int_equal(kc_generate_api_pod_status_probed(&pod, &st, NULL, NULL, "sim", false,
                                                           NULL, &view, T0, &s),
                         0);
        assert_string_equal(fp.seen_id, "c1");
        assert_true(fp.seen_running);
        assert_false(jbool_at(s, "containerStatuses.0.ready")); /* "app" sorts first */
        assert_true(jbool_at(s, "containerStatuses.0.started"));
        assert_true(jbool_at(s, "containerStatuses.1.ready"));
        c = condition(s, "ContainersReady");
        assert_string_equal(jstr_at(c, "status"), "False");
        assert_string_equal(jstr_at(c, "reason"), "ContainersNotReady");
        assert_string_equal(jstr_at(c, "message"), "containers with unready status: [app]");
        c = condition(s, "Ready");
        assert_string_equal(jstr_at(c, "status"), "False");
        assert_string_equal(jstr_at(c, "message"), "containers with unready status: [app]");
        assert_string_equal(jstr_at(s, "phase"), "Running");

        /* SetContainerReadiness: ready, and both conditions turn True at the new time. */
        assert_int_equal(kc_pod_status_set_container_readiness(&pod, s, "c1", true, T0 + SEC, &upd),
                         0);
        assert_non_null(upd);
        assert_true(jbool_at(upd, "containerStatuses.0.ready"));
        c = condition(upd, "ContainersReady");
        assert_string_equal(jstr_at(c, "status"), "True");
        assert_null(json_object_get(c, "message"));
        assert_string_equal(jstr_at(c, "lastTransitionTime"), fmt_time(T0 + SEC));
        c = condition(upd, "Ready");
        assert_string_equal(jstr_at(c, "status"), "True");
        /* The old status is untouched; the same value again changes nothing. */
        assert_false(jbool_at(s, "containerStatuses.0.ready"));
        assert_int_equal(kc_pod_status_set_container_readiness(&pod, upd, "sim://c1", true,
                                                               T0 + 2 * SEC, &again),
                         0);
        assert_null(again);
        assert_int_equal(
                kc_pod_status_set_container_readiness(&pod, upd, "nope", false, T0, &again),
                -ENOENT);
        /* SetContainerStartup. */
        assert_int_equal(kc_pod_status_set_container_started(upd, "c1", false, &again), 0);
        assert_false(jbool_at(again, "containerStatuses.0.started"));
        json_decref(again);
        json_decref(upd);
        json_decref(s);

        /* Not started (a startup probe pending): neither started nor ready. */
        fp = (struct fake_probes){ .started = false, .ready = false };
        assert_int_equal(kc_generate_api_pod_status_probed(&pod, &st, NULL, NULL, "sim", false,
                                                           NULL, &view, T0, &s),
                         0);
        assert_false(jbool_at(s, "containerStatuses.0.started"));
        assert_false(jbool_at(s, "containerStatuses.0.ready"));
        json_decref(s);
}

/* No runtime status: waiting ContainerCreating, nothing ready, no sandbox yet. */
static void test_status_container_creating(void **state)
{
        static const struct kc_api_container two[] = { { .name = "a", .image = "img-a" },
                                                       { .name = "b", .image = "img-b" } };
        struct kc_api_pod pod = pod_with(KC_RESTART_POLICY_ALWAYS, two, 2, NULL, 0);
        json_t *s, *c;

        (void)state;
        s = generate(&pod, NULL, NULL, "192.168.1.10", NULL, T0);
        assert_string_equal(jstr_at(s, "phase"), "Pending");
        c = jpath(s, "containerStatuses.1");
        assert_string_equal(jstr_at(c, "name"), "b");
        assert_string_equal(jstr_at(c, "state.waiting.reason"), "ContainerCreating");
        assert_null(jpath(c, "state.waiting.message"));
        assert_false(jbool_at(c, "ready"));
        assert_false(jbool_at(c, "started"));
        assert_int_equal(jint_at(c, "restartCount"), 0);
        assert_string_equal(jstr_at(c, "image"), "img-b");
        assert_string_equal(jstr_at(c, "imageID"), "");
        assert_null(json_object_get(c, "containerID"));
        assert_null(json_object_get(s, "podIP"));
        assert_null(json_object_get(s, "podIPs"));
        assert_string_equal(jstr_at(s, "startTime"), "2026-11-21T10:00:00Z");

        c = condition(s, "PodReadyToStartContainers");
        assert_string_equal(jstr_at(c, "status"), "False");
        c = condition(s, "Initialized");
        assert_string_equal(jstr_at(c, "status"), "True");
        c = condition(s, "ContainersReady");
        assert_string_equal(jstr_at(c, "status"), "False");
        assert_string_equal(jstr_at(c, "reason"), "ContainersNotReady");
        assert_string_equal(jstr_at(c, "message"), "containers with unready status: [a b]");
        c = condition(s, "Ready");
        assert_string_equal(jstr_at(c, "status"), "False");
        assert_string_equal(jstr_at(c, "reason"), "ContainersNotReady");
        assert_string_equal(jstr_at(c, "message"), "containers with unready status: [a b]");
        c = condition(s, "PodScheduled");
        assert_string_equal(jstr_at(c, "status"), "True");
        json_decref(s);
}

/* With init containers the default waiting reason is PodInitializing. */
static void test_status_init_containers(void **state)
{
        static const struct kc_api_container inits[] = { { .name = "setup", .image = "busybox" },
                                                         { .name = "migrate", .image = "tool" } };
        struct kc_api_pod pod = pod_with(KC_RESTART_POLICY_ALWAYS, &app_ctr, 1, inits, 2);
        struct kc_container_status cs[3];
        struct kc_pod_status st;
        json_t *s, *c;

        (void)state;
        cs[0] = cs_exited("i1", "setup", 0, 0);
        st = status_of(cs, 1);
        s = generate(&pod, &st, NULL, NULL, NULL, T0);
        assert_string_equal(jstr_at(s, "phase"), "Pending");
        /* Spec order for init containers. */
        assert_string_equal(jstr_at(s, "initContainerStatuses.0.name"), "setup");
        assert_string_equal(jstr_at(s, "initContainerStatuses.0.state.terminated.reason"),
                            "Completed");
        assert_true(jbool_at(s, "initContainerStatuses.0.ready"));
        assert_false(jbool_at(s, "initContainerStatuses.0.started"));
        assert_string_equal(jstr_at(s, "initContainerStatuses.1.name"), "migrate");
        assert_string_equal(jstr_at(s, "initContainerStatuses.1.state.waiting.reason"),
                            "PodInitializing");
        assert_false(jbool_at(s, "initContainerStatuses.1.ready"));
        assert_string_equal(jstr_at(s, "containerStatuses.0.state.waiting.reason"),
                            "PodInitializing");
        c = condition(s, "Initialized");
        assert_string_equal(jstr_at(c, "status"), "False");
        assert_string_equal(jstr_at(c, "reason"), "ContainersNotInitialized");
        assert_string_equal(jstr_at(c, "message"), "containers with incomplete status: [migrate]");
        json_decref(s);

        /* All init containers done and the app running: Initialized, Running. */
        cs[0] = cs_running("c1", "app", 0);
        cs[1] = cs_exited("i2", "migrate", 0, 0);
        cs[2] = cs_exited("i1", "setup", 0, 0);
        st = status_of(cs, 3);
        s = generate(&pod, &st, NULL, NULL, NULL, T0);
        assert_string_equal(jstr_at(s, "phase"), "Running");
        c = condition(s, "Initialized");
        assert_string_equal(jstr_at(c, "status"), "True");
        assert_null(json_object_get(c, "reason"));
        assert_string_equal(jstr_at(condition(s, "Ready"), "status"), "True");
        json_decref(s);
}

/* A crashing container due for restart shows CrashLoopBackOff with lastState. */
static void test_status_crash_loop(void **state)
{
        _cleanup_(kc_reason_cache_freep) struct kc_reason_cache *rc = NULL;
        static const char msg[] =
                "back-off 20s restarting failed container=app pod=web_default(u1)";
        struct kc_api_pod pod = pod_with(KC_RESTART_POLICY_ALWAYS, &app_ctr, 1, NULL, 0);
        struct kc_container_status cs[2];
        struct kc_pod_status st;
        json_t *s, *c;

        (void)state;
        assert_int_equal(kc_reason_cache_new(&rc), 0);
        cs[0] = cs_exited("c3", "app", 1, 2);
        cs[0].finished_at = T0 - 5 * SEC;
        cs[1] = cs_exited("c2", "app", 1, 1);
        st = status_of(cs, 2);

        /* Without a reason: terminated, the previous instance in lastState. */
        s = generate(&pod, &st, rc, NULL, NULL, T0);
        c = jpath(s, "containerStatuses.0");
        assert_int_equal(jint_at(c, "state.terminated.exitCode"), 1);
        assert_string_equal(jstr_at(c, "state.terminated.reason"), "Error");
        assert_string_equal(jstr_at(c, "state.terminated.containerID"), "sim://c3");
        assert_string_equal(jstr_at(c, "state.terminated.finishedAt"), fmt_time(T0 - 5 * SEC));
        assert_string_equal(jstr_at(c, "state.terminated.startedAt"), fmt_time(T0 - 40 * SEC));
        assert_string_equal(jstr_at(c, "lastState.terminated.containerID"), "sim://c2");
        assert_int_equal(jint_at(c, "restartCount"), 2);
        json_decref(s);

        /* SyncPod recorded the back-off. */
        assert_int_equal(kc_reason_cache_update(rc, "u1", "app", "CrashLoopBackOff", msg), 0);
        s = generate(&pod, &st, rc, NULL, NULL, T0);
        assert_string_equal(jstr_at(s, "phase"), "Running");
        c = jpath(s, "containerStatuses.0");
        assert_string_equal(jstr_at(c, "state.waiting.reason"), "CrashLoopBackOff");
        assert_string_equal(jstr_at(c, "state.waiting.message"), msg);
        assert_int_equal(json_object_size(json_object_get(c, "state")), 1);
        assert_int_equal(jint_at(c, "lastState.terminated.exitCode"), 1);
        assert_string_equal(jstr_at(c, "lastState.terminated.reason"), "Error");
        assert_string_equal(jstr_at(c, "lastState.terminated.containerID"), "sim://c3");
        assert_string_equal(jstr_at(c, "lastState.terminated.finishedAt"), fmt_time(T0 - 5 * SEC));
        assert_int_equal(jint_at(c, "restartCount"), 2);
        assert_string_equal(jstr_at(c, "containerID"), "sim://c3");
        assert_false(jbool_at(c, "ready"));
        assert_false(jbool_at(c, "started"));
        assert_string_equal(jstr_at(condition(s, "ContainersReady"), "message"),
                            "containers with unready status: [app]");
        json_decref(s);

        /* Never restarts: the reason cache does not apply, the pod failed. */
        pod.restart_policy = KC_RESTART_POLICY_NEVER;
        s = generate(&pod, &st, rc, NULL, NULL, T0);
        assert_string_equal(jstr_at(s, "phase"), "Failed");
        assert_string_equal(jstr_at(s, "containerStatuses.0.state.terminated.reason"), "Error");
        assert_string_equal(jstr_at(condition(s, "ContainersReady"), "reason"), "PodFailed");
        assert_string_equal(jstr_at(condition(s, "Ready"), "reason"), "PodFailed");
        json_decref(s);

        /* A pod being deleted is not restarted either. */
        pod.restart_policy = KC_RESTART_POLICY_ALWAYS;
        pod.deletion_ts = T0;
        s = generate(&pod, &st, rc, NULL, NULL, T0);
        assert_string_equal(jstr_at(s, "containerStatuses.0.state.terminated.reason"), "Error");
        json_decref(s);

        /* Never started, image pull failing: waiting ErrImagePull, no lastState. */
        pod.deletion_ts = 0;
        assert_int_equal(
                kc_reason_cache_update(rc, "u1", "app", "ErrImagePull", "pull access denied"), 0);
        s = generate(&pod, NULL, rc, NULL, NULL, T0);
        c = jpath(s, "containerStatuses.0");
        assert_string_equal(jstr_at(c, "state.waiting.reason"), "ErrImagePull");
        assert_string_equal(jstr_at(c, "state.waiting.message"), "pull access denied");
        assert_int_equal(json_object_size(json_object_get(c, "lastState")), 0);
        assert_string_equal(jstr_at(s, "phase"), "Pending");
        json_decref(s);
}

static void test_status_terminated(void **state)
{
        struct kc_api_pod pod = pod_with(KC_RESTART_POLICY_NEVER, &app_ctr, 1, NULL, 0);
        struct kc_container_status cs = cs_exited("c1", "app", 0, 0);
        struct kc_pod_status st = status_of(&cs, 1);
        json_t *s, *c;

        (void)state;
        s = generate(&pod, &st, NULL, NULL, NULL, T0);
        assert_string_equal(jstr_at(s, "phase"), "Succeeded");
        c = jpath(s, "containerStatuses.0.state.terminated");
        assert_int_equal(jint_at(c, "exitCode"), 0);
        assert_string_equal(jstr_at(c, "reason"), "Completed");
        assert_null(json_object_get(c, "message"));
        assert_string_equal(jstr_at(c, "containerID"), "sim://c1");
        assert_false(jbool_at(s, "containerStatuses.0.ready"));
        c = condition(s, "Initialized");
        assert_string_equal(jstr_at(c, "status"), "True");
        assert_string_equal(jstr_at(c, "reason"), "PodCompleted");
        c = condition(s, "Ready");
        assert_string_equal(jstr_at(c, "status"), "False");
        assert_string_equal(jstr_at(c, "reason"), "PodCompleted");
        assert_null(json_object_get(c, "message"));
        assert_string_equal(jstr_at(condition(s, "ContainersReady"), "reason"), "PodCompleted");
        json_decref(s);

        /* The runtime's reason and message win; a zero time is null. */
        cs.exit_code = 137;
        cs.reason = "OOMKilled";
        cs.message = "memory limit \xff exceeded"; /* not UTF-8: U+FFFD, like Go */
        cs.started_at = 0;
        s = generate(&pod, &st, NULL, NULL, NULL, T0);
        assert_string_equal(jstr_at(s, "phase"), "Failed");
        c = jpath(s, "containerStatuses.0.state.terminated");
        assert_int_equal(jint_at(c, "exitCode"), 137);
        assert_string_equal(jstr_at(c, "reason"), "OOMKilled");
        assert_string_equal(jstr_at(c, "message"), "memory limit \xef\xbf\xbd exceeded");
        assert_true(json_is_null(json_object_get(c, "startedAt")));
        json_decref(s);

        /* Exit 1 without a runtime reason: "Error". */
        cs.exit_code = 1;
        cs.reason = NULL;
        cs.message = NULL;
        s = generate(&pod, &st, NULL, NULL, NULL, T0);
        assert_string_equal(jstr_at(s, "containerStatuses.0.state.terminated.reason"), "Error");
        json_decref(s);
}

/* restartCount is the newest instance's; containerStatuses are sorted by name. */
static void test_status_restart_count_and_order(void **state)
{
        static const struct kc_api_container two[] = { { .name = "zeta", .image = "z" },
                                                       { .name = "alpha", .image = "a" } };
        struct kc_api_pod pod = pod_with(KC_RESTART_POLICY_ALWAYS, two, 2, NULL, 0);
        struct kc_container_status cs[3];
        struct kc_pod_status st;
        json_t *s;

        (void)state;
        cs[0] = cs_running("z6", "zeta", 5);
        cs[1] = cs_exited("z5", "zeta", 2, 4);
        cs[2] = cs_exited("a1", "alpha", 1, 0);
        st = status_of(cs, 3);
        s = generate(&pod, &st, NULL, NULL, NULL, T0);
        assert_string_equal(jstr_at(s, "containerStatuses.0.name"), "alpha");
        assert_string_equal(jstr_at(s, "containerStatuses.0.image"), "a");
        assert_int_equal(jint_at(s, "containerStatuses.0.restartCount"), 0);
        assert_string_equal(jstr_at(s, "containerStatuses.1.name"), "zeta");
        assert_int_equal(jint_at(s, "containerStatuses.1.restartCount"), 5);
        assert_int_equal(jint_at(s, "containerStatuses.1.lastState.terminated.exitCode"), 2);
        assert_string_equal(jstr_at(s, "containerStatuses.1.lastState.terminated.containerID"),
                            "sim://z5");
        /* The unready message keeps spec order. */
        assert_string_equal(jstr_at(condition(s, "ContainersReady"), "message"),
                            "containers with unready status: [alpha]");
        json_decref(s);
}

static void test_status_ips(void **state)
{
        struct kc_api_pod pod = pod_with(KC_RESTART_POLICY_ALWAYS, &app_ctr, 1, NULL, 0);
        struct kc_container_status cs = cs_running("c1", "app", 0);
        struct kc_pod_status st = status_of(&cs, 1);
        const char *ips[] = { "bogus", "fd00::5", "10.88.0.5", "10.88.0.6", "fd00::6" };
        json_t *s;

        (void)state;
        st.ips = ips;
        st.n_ips = KC_ELEMENTSOF(ips);
        /* IPv4 node: the first IPv4, then the first IPv6. */
        s = generate(&pod, &st, NULL, "192.168.1.10", NULL, T0);
        assert_string_equal(jstr_at(s, "podIP"), "10.88.0.5");
        assert_int_equal(json_array_size(jpath(s, "podIPs")), 2);
        assert_string_equal(jstr_at(s, "podIPs.0.ip"), "10.88.0.5");
        assert_string_equal(jstr_at(s, "podIPs.1.ip"), "fd00::5");
        json_decref(s);

        /* IPv6 node: IPv6 first. */
        s = generate(&pod, &st, NULL, "fd00::1", NULL, T0);
        assert_string_equal(jstr_at(s, "hostIP"), "fd00::1");
        assert_string_equal(jstr_at(s, "podIP"), "fd00::5");
        assert_string_equal(jstr_at(s, "podIPs.1.ip"), "10.88.0.5");
        json_decref(s);

        /* Host network, no pod IPs: the host's IP. */
        pod.host_network = true;
        st.n_ips = 0;
        s = generate(&pod, &st, NULL, "192.168.1.10", NULL, T0);
        assert_string_equal(jstr_at(s, "podIP"), "192.168.1.10");
        assert_int_equal(json_array_size(jpath(s, "podIPs")), 1);
        assert_string_equal(jstr_at(s, "podIPs.0.ip"), "192.168.1.10");
        json_decref(s);
        /* ...unless the host IP is unknown. */
        s = generate(&pod, &st, NULL, "", NULL, T0);
        assert_null(json_object_get(s, "podIP"));
        assert_null(json_object_get(s, "hostIP"));
        json_decref(s);
}

/*
 * Issue 17 (D20): a stopped pod keeps the IPs of its old status; a pod
 * with a ready sandbox shows what the runtime says.
 */
static void test_status_ips_kept_after_stop(void **state)
{
        struct kc_api_pod pod = pod_with(KC_RESTART_POLICY_ALWAYS, &app_ctr, 1, NULL, 0);
        struct kc_container_status cs = cs_running("c1", "app", 0);
        struct kc_pod_status st = status_of(&cs, 1);
        const char *ips[] = { "10.88.0.5", "fd00::5" };
        struct kc_sandbox_status stopped = ready_sandbox;
        json_t *running, *s;

        (void)state;
        st.ips = ips;
        st.n_ips = KC_ELEMENTSOF(ips);
        running = generate(&pod, &st, NULL, "192.168.1.10", NULL, T0);

        /* Stopped: no IP from the runtime, no ready sandbox. */
        cs = cs_exited("c1", "app", 137, 0);
        st.n_ips = 0;
        stopped.state = KC_SANDBOX_STATE_NOTREADY;
        st.sandboxes = &stopped;
        s = generate(&pod, &st, NULL, "192.168.1.10", running, T0 + SEC);
        assert_string_equal(jstr_at(s, "podIP"), "10.88.0.5");
        assert_int_equal(json_array_size(jpath(s, "podIPs")), 2);
        assert_string_equal(jstr_at(s, "podIPs.1.ip"), "fd00::5");
        json_decref(s);

        /* A ready sandbox without an IP: none (the runtime is believed). */
        st.sandboxes = &ready_sandbox;
        s = generate(&pod, &st, NULL, "192.168.1.10", running, T0 + SEC);
        assert_null(json_object_get(s, "podIP"));
        assert_null(json_object_get(s, "podIPs"));
        json_decref(s);
        json_decref(running);
}

/* lastTransitionTime moves only when a condition's status changes; startTime sticks. */
static void test_status_transition_times(void **state)
{
        struct kc_api_pod pod = pod_with(KC_RESTART_POLICY_ALWAYS, &app_ctr, 1, NULL, 0);
        struct kc_container_status cs = cs_running("c1", "app", 0);
        struct kc_pod_status st = status_of(&cs, 1);
        json_t *s1, *s2, *s3;

        (void)state;
        s1 = generate(&pod, &st, NULL, NULL, NULL, T0);
        s2 = generate(&pod, &st, NULL, NULL, s1, T0 + 10 * SEC);
        assert_true(json_equal(s1, s2));

        /* The container dies: Ready and ContainersReady flip at T0+20. */
        cs = cs_exited("c1", "app", 1, 0);
        s3 = generate(&pod, &st, NULL, NULL, s2, T0 + 20 * SEC);
        assert_string_equal(jstr_at(s3, "phase"), "Running");
        assert_string_equal(jstr_at(condition(s3, "Ready"), "status"), "False");
        assert_string_equal(jstr_at(condition(s3, "Ready"), "lastTransitionTime"),
                            fmt_time(T0 + 20 * SEC));
        assert_string_equal(jstr_at(condition(s3, "ContainersReady"), "lastTransitionTime"),
                            fmt_time(T0 + 20 * SEC));
        assert_string_equal(jstr_at(condition(s3, "Initialized"), "lastTransitionTime"),
                            fmt_time(T0));
        assert_string_equal(jstr_at(condition(s3, "PodScheduled"), "lastTransitionTime"),
                            fmt_time(T0));
        assert_string_equal(
                jstr_at(condition(s3, "PodReadyToStartContainers"), "lastTransitionTime"),
                fmt_time(T0));
        assert_string_equal(jstr_at(s3, "startTime"), fmt_time(T0));
        json_decref(s1);
        json_decref(s2);
        json_decref(s3);
}

/* A terminal phase is never left: not the old status', not the API pod's. */
static void test_status_terminal_phase_sticks(void **state)
{
        struct kc_api_pod pod = pod_with(KC_RESTART_POLICY_ALWAYS, &app_ctr, 1, NULL, 0);
        struct kc_container_status cs = cs_running("c1", "app", 0);
        struct kc_pod_status st = status_of(&cs, 1);
        json_t *old = json_pack("{s:s}", "phase", "Succeeded"), *s;

        (void)state;
        s = generate(&pod, &st, NULL, NULL, old, T0);
        assert_string_equal(jstr_at(s, "phase"), "Succeeded");
        json_decref(s);
        json_decref(old);

        pod.phase = KC_POD_PHASE_FAILED;
        s = generate(&pod, &st, NULL, NULL, NULL, T0);
        assert_string_equal(jstr_at(s, "phase"), "Failed");
        assert_string_equal(jstr_at(condition(s, "ContainersReady"), "reason"), "PodFailed");
        json_decref(s);

        /* pod_is_terminal reaches the phase. */
        pod.phase = KC_POD_PHASE_PENDING;
        cs = cs_exited("c1", "app", 0, 0);
        assert_int_equal(
                kc_generate_api_pod_status(&pod, &st, NULL, NULL, "sim", true, NULL, T0, &s), 0);
        assert_string_equal(jstr_at(s, "phase"), "Succeeded");
        json_decref(s);
}

/* ------------------------------------------------------------------------ */
/* Status continuity (convertToAPIContainerStatuses' previous statuses)      */

#define MSG_UNKNOWN_DELETED                                                                        \
        "The container could not be located when the pod was deleted.  The container used "        \
        "to be Running"
#define MSG_UNKNOWN_TERMINATED "The container could not be located when the pod was terminated"

/* A crash-looping container (two dead instances, restartCount 2) as the old status. */
static json_t *crash_looped_status(const struct kc_api_pod *pod, struct kc_reason_cache *rc)
{
        struct kc_container_status cs[2] = { cs_exited("c3", "app", 1, 2),
                                             cs_exited("c2", "app", 1, 1) };
        struct kc_pod_status st = status_of(cs, 2);

        cs[0].finished_at = T0 - 5 * SEC;
        return generate(pod, &st, rc, NULL, NULL, T0);
}

/* Every instance removed (container GC): restartCount carries on from the old status. */
static void test_status_gc_keeps_restart_count(void **state)
{
        struct kc_api_pod pod = pod_with(KC_RESTART_POLICY_ALWAYS, &app_ctr, 1, NULL, 0);
        json_t *old, *s;

        (void)state;
        old = crash_looped_status(&pod, NULL);
        assert_int_equal(jint_at(old, "containerStatuses.0.restartCount"), 2);
        /* Old terminated: reused whole, count included. */
        s = generate(&pod, NULL, NULL, NULL, old, T0 + SEC);
        assert_int_equal(jint_at(s, "containerStatuses.0.restartCount"), 2);
        json_decref(s);
        json_decref(old);
}

/* Every instance removed while waiting in CrashLoopBackOff: lastState and
 * restartCount stay, the waiting reason still comes from the reason cache. */
static void test_status_gc_keeps_last_state(void **state)
{
        _cleanup_(kc_reason_cache_freep) struct kc_reason_cache *rc = NULL;
        struct kc_api_pod pod = pod_with(KC_RESTART_POLICY_ALWAYS, &app_ctr, 1, NULL, 0);
        json_t *old, *s, *c;

        (void)state;
        assert_int_equal(kc_reason_cache_new(&rc), 0);
        assert_int_equal(kc_reason_cache_update(rc, "u1", "app", "CrashLoopBackOff", "back-off"),
                         0);
        old = crash_looped_status(&pod, rc);
        assert_string_equal(jstr_at(old, "containerStatuses.0.state.waiting.reason"),
                            "CrashLoopBackOff");

        s = generate(&pod, NULL, rc, NULL, old, T0 + SEC);
        c = jpath(s, "containerStatuses.0");
        assert_string_equal(jstr_at(c, "state.waiting.reason"), "CrashLoopBackOff");
        assert_int_equal(jint_at(c, "restartCount"), 2);
        assert_int_equal(jint_at(c, "lastState.terminated.exitCode"), 1);
        assert_string_equal(jstr_at(c, "lastState.terminated.containerID"), "sim://c3");
        assert_string_equal(jstr_at(c, "lastState.terminated.finishedAt"), fmt_time(T0 - 5 * SEC));
        assert_null(json_object_get(c, "containerID"));
        /* A stopped container, not one that never ran: the pod stays Running. */
        assert_string_equal(jstr_at(s, "phase"), "Running");
        json_decref(s);

        /* Without a reason: the default waiting reason, the same lastState. */
        s = generate(&pod, NULL, NULL, NULL, old, T0 + SEC);
        c = jpath(s, "containerStatuses.0");
        assert_string_equal(jstr_at(c, "state.waiting.reason"), "ContainerCreating");
        assert_int_equal(jint_at(c, "restartCount"), 2);
        assert_string_equal(jstr_at(c, "lastState.terminated.containerID"), "sim://c3");
        assert_string_equal(jstr_at(s, "phase"), "Running");
        json_decref(s);
        json_decref(old);
}

/* A container terminated in the old status and gone from the runtime keeps
 * its terminated state; the Never pod then finishes (instead of Pending). */
static void test_status_terminated_reused(void **state)
{
        static const struct kc_api_container two[] = { { .name = "a", .image = "img-a" },
                                                       { .name = "b", .image = "img-b" } };
        struct kc_api_pod pod = pod_with(KC_RESTART_POLICY_NEVER, two, 2, NULL, 0);
        struct kc_container_status cs[2] = { cs_exited("a1", "a", 0, 0), cs_running("b1", "b", 0) };
        struct kc_pod_status st = status_of(cs, 2);
        json_t *old, *s, *c;

        (void)state;
        cs[0].reason = "Completed";
        cs[0].message = "done";
        old = generate(&pod, &st, NULL, NULL, NULL, T0);
        assert_string_equal(jstr_at(old, "phase"), "Running");

        /* a's instance is removed; b still runs. */
        st = status_of(&cs[1], 1);
        s = generate(&pod, &st, NULL, NULL, old, T0 + SEC);
        assert_string_equal(jstr_at(s, "phase"), "Running");
        c = jpath(s, "containerStatuses.0");
        assert_string_equal(jstr_at(c, "name"), "a");
        assert_true(json_equal(jpath(c, "state"), jpath(old, "containerStatuses.0.state")));
        assert_string_equal(jstr_at(c, "state.terminated.message"), "done");
        assert_string_equal(jstr_at(c, "state.terminated.finishedAt"), fmt_time(T0 - 30 * SEC));
        assert_string_equal(jstr_at(c, "containerID"), "sim://a1");
        assert_string_equal(jstr_at(c, "imageID"), "sha256:abc");
        assert_false(jbool_at(c, "ready"));
        assert_false(jbool_at(c, "started"));
        json_decref(old);
        old = s;

        /* b exits 1: the pod fails. */
        cs[1] = cs_exited("b1", "b", 1, 0);
        s = generate(&pod, &st, NULL, NULL, old, T0 + 2 * SEC);
        assert_string_equal(jstr_at(s, "phase"), "Failed");
        assert_int_equal(jint_at(s, "containerStatuses.0.state.terminated.exitCode"), 0);
        assert_int_equal(jint_at(s, "containerStatuses.1.state.terminated.exitCode"), 1);
        json_decref(s);
        /* ...or 0: it succeeds. */
        cs[1].exit_code = 0;
        s = generate(&pod, &st, NULL, NULL, old, T0 + 2 * SEC);
        assert_string_equal(jstr_at(s, "phase"), "Succeeded");
        json_decref(s);
        json_decref(old);

        /* An init container's reused exit 0 still counts as initialized. */
        {
                struct kc_api_pod ip = pod_with(KC_RESTART_POLICY_NEVER, &two[1], 1, two, 1);

                st = status_of(cs, 2); /* a exited 0 (init), b exited 0 */
                old = generate(&ip, &st, NULL, NULL, NULL, T0);
                st = status_of(&cs[1], 1);
                s = generate(&ip, &st, NULL, NULL, old, T0 + SEC);
                assert_true(jbool_at(s, "initContainerStatuses.0.ready"));
                assert_string_equal(jstr_at(s, "phase"), "Succeeded");
                json_decref(s);
                json_decref(old);
        }
}

/* The terminated object upstream makes up for a container that vanished. */
static void assert_status_unknown(json_t *t, const char *message)
{
        assert_int_equal(jint_at(t, "exitCode"), 137);
        assert_string_equal(jstr_at(t, "reason"), "ContainerStatusUnknown");
        assert_string_equal(jstr_at(t, "message"), message);
        assert_true(json_is_null(json_object_get(t, "startedAt")));
        assert_true(json_is_null(json_object_get(t, "finishedAt")));
        assert_null(json_object_get(t, "containerID"));
}

/* Running in the old status, gone from the runtime: ContainerStatusUnknown,
 * exit 137, in lastState, one restart more unless the pod is being deleted. */
static void test_status_unknown_after_running(void **state)
{
        struct kc_api_pod pod = pod_with(KC_RESTART_POLICY_ALWAYS, &app_ctr, 1, NULL, 0);
        struct kc_container_status cs = cs_running("c4", "app", 3);
        struct kc_pod_status st = status_of(&cs, 1);
        json_t *old, *s, *c;

        (void)state;
        old = generate(&pod, &st, NULL, NULL, NULL, T0);
        s = generate(&pod, NULL, NULL, NULL, old, T0 + SEC);
        c = jpath(s, "containerStatuses.0");
        assert_string_equal(jstr_at(c, "state.waiting.reason"), "ContainerCreating");
        assert_status_unknown(jpath(c, "lastState.terminated"), MSG_UNKNOWN_DELETED);
        assert_int_equal(jint_at(c, "restartCount"), 4);
        assert_string_equal(jstr_at(s, "phase"), "Running");
        json_decref(s);

        /* Never: stopped, not back to Pending (where SyncPod would run it twice). */
        pod.restart_policy = KC_RESTART_POLICY_NEVER;
        s = generate(&pod, NULL, NULL, NULL, old, T0 + SEC);
        assert_string_equal(jstr_at(s, "phase"), "Failed");
        assert_string_equal(jstr_at(condition(s, "Ready"), "reason"), "PodFailed");
        json_decref(s);
        pod.restart_policy = KC_RESTART_POLICY_ALWAYS;

        /* Being deleted: no restart counted. */
        pod.deletion_ts = T0;
        s = generate(&pod, NULL, NULL, NULL, old, T0 + SEC);
        assert_int_equal(jint_at(s, "containerStatuses.0.restartCount"), 3);
        assert_status_unknown(jpath(s, "containerStatuses.0.lastState.terminated"),
                              MSG_UNKNOWN_DELETED);
        json_decref(s);
        pod.deletion_ts = 0;

        /* The runtime still lists it, in the unknown state: terminated at once. */
        cs.state = KC_CONTAINER_STATE_UNKNOWN;
        s = generate(&pod, &st, NULL, NULL, old, T0 + SEC);
        c = jpath(s, "containerStatuses.0");
        assert_status_unknown(jpath(c, "state.terminated"), MSG_UNKNOWN_TERMINATED);
        assert_int_equal(jint_at(c, "restartCount"), 4);
        assert_string_equal(jstr_at(c, "containerID"), "sim://c4");
        assert_string_equal(jstr_at(s, "phase"), "Running");
        json_decref(s);
        json_decref(old);
}

/* Where upstream makes no ContainerStatusUnknown. */
static void test_status_unknown_not_applied(void **state)
{
        struct kc_api_pod pod = pod_with(KC_RESTART_POLICY_ALWAYS, &app_ctr, 1, NULL, 0);
        struct kc_container_status cs[2] = { cs_running("c2", "app", 1),
                                             cs_exited("c1", "app", 2, 0) };
        struct kc_pod_status st = status_of(cs, 2);
        json_t *old, *s, *c;

        (void)state;
        /* Old status waiting (never ran): the default waiting state, nothing made up. */
        old = generate(&pod, NULL, NULL, NULL, NULL, T0);
        s = generate(&pod, NULL, NULL, NULL, old, T0 + SEC);
        assert_true(json_equal(s, old));
        json_decref(s);
        /* Unknown runtime state without a running old status: waiting {}. */
        cs[0].state = KC_CONTAINER_STATE_UNKNOWN;
        s = generate(&pod, &st, NULL, NULL, old, T0 + SEC);
        assert_int_equal(json_object_size(jpath(s, "containerStatuses.0.state.waiting")), 0);
        assert_int_equal(jint_at(s, "containerStatuses.0.restartCount"), 1);
        json_decref(s);
        json_decref(old);

        /* Running with a real lastState already: that one stays, no restart added. */
        cs[0].state = KC_CONTAINER_STATE_RUNNING;
        old = generate(&pod, &st, NULL, NULL, NULL, T0);
        s = generate(&pod, NULL, NULL, NULL, old, T0 + SEC);
        c = jpath(s, "containerStatuses.0");
        assert_int_equal(jint_at(c, "restartCount"), 1);
        assert_int_equal(jint_at(c, "lastState.terminated.exitCode"), 2);
        assert_string_equal(jstr_at(c, "lastState.terminated.containerID"), "sim://c1");
        json_decref(s);
        json_decref(old);
}

/* ------------------------------------------------------------------------ */
/* v1 Pod                                                                     */

static void test_api_pod_to_json(void **state)
{
        static const char *const cmd[] = { "/bin/sh", "-c" };
        static const char *const args[] = { "sleep 3600" };
        static const struct kc_label labels[] = { { "app", "web" }, { "tier", "front" } };
        static const struct kc_label ann[] = { { KC_ANNOTATION_CONFIG_SOURCE, "file" } };
        static const struct kc_api_container init = { .name = "init",
                                                      .image = "busybox",
                                                      .image_pull_policy = KC_PULL_IF_NOT_PRESENT };
        static const struct kc_api_container app = { .name = "app",
                                                     .image = "nginx",
                                                     .command = cmd,
                                                     .n_command = 2,
                                                     .args = args,
                                                     .n_args = 1,
                                                     .image_pull_policy = KC_PULL_ALWAYS };
        struct kc_api_pod pod = pod_with(KC_RESTART_POLICY_ON_FAILURE, &app, 1, &init, 1);
        json_t *status = json_pack("{s:s}", "phase", "Running"), *o = NULL;

        (void)state;
        pod.creation_ts = T0 + 123;
        pod.labels = labels;
        pod.n_labels = 2;
        pod.annotations = ann;
        pod.n_annotations = 1;
        assert_int_equal(kc_api_pod_to_json(&pod, "node-1", status, &o), 0);
        assert_string_equal(jstr_at(o, "kind"), "Pod");
        assert_string_equal(jstr_at(o, "apiVersion"), "v1");
        assert_string_equal(jstr_at(o, "metadata.name"), "web");
        assert_string_equal(jstr_at(o, "metadata.namespace"), "default");
        assert_string_equal(jstr_at(o, "metadata.uid"), "u1");
        assert_string_equal(jstr_at(o, "metadata.creationTimestamp"), "2026-11-21T10:00:00Z");
        assert_null(jpath(o, "metadata.deletionTimestamp"));
        assert_string_equal(jstr_at(o, "metadata.labels.tier"), "front");
        assert_int_equal(json_object_size(jpath(o, "metadata.labels")), 2);
        /* jpath splits on dots: look the dotted key up directly. */
        assert_string_equal(json_string_value(json_object_get(jpath(o, "metadata.annotations"),
                                                              KC_ANNOTATION_CONFIG_SOURCE)),
                            "file");
        assert_string_equal(jstr_at(o, "spec.nodeName"), "node-1");
        assert_string_equal(jstr_at(o, "spec.restartPolicy"), "OnFailure");
        assert_int_equal(jint_at(o, "spec.terminationGracePeriodSeconds"), 30);
        assert_null(jpath(o, "spec.hostNetwork"));
        assert_string_equal(jstr_at(o, "spec.initContainers.0.name"), "init");
        assert_string_equal(jstr_at(o, "spec.initContainers.0.imagePullPolicy"), "IfNotPresent");
        assert_null(jpath(o, "spec.initContainers.0.command"));
        assert_null(jpath(o, "spec.initContainers.0.args"));
        assert_string_equal(jstr_at(o, "spec.containers.0.name"), "app");
        assert_string_equal(jstr_at(o, "spec.containers.0.image"), "nginx");
        assert_string_equal(jstr_at(o, "spec.containers.0.command.1"), "-c");
        assert_string_equal(jstr_at(o, "spec.containers.0.args.0"), "sleep 3600");
        assert_string_equal(jstr_at(o, "spec.containers.0.imagePullPolicy"), "Always");
        /* The status is shared, not copied. */
        assert_ptr_equal(json_object_get(o, "status"), status);
        json_decref(o);

        /* hostNetwork appears when true; no status → {}; deletion fields when deleting. */
        pod.host_network = true;
        pod.n_init_containers = 0;
        pod.n_labels = pod.n_annotations = 0;
        pod.deletion_ts = T0 + 60 * SEC;
        pod.deletion_grace_s = 30;
        pod.termination_grace_s = -1;
        assert_int_equal(kc_api_pod_to_json(&pod, NULL, NULL, &o), 0);
        assert_true(jbool_at(o, "spec.hostNetwork"));
        assert_null(jpath(o, "spec.initContainers"));
        assert_null(jpath(o, "spec.nodeName"));
        assert_null(jpath(o, "spec.terminationGracePeriodSeconds"));
        assert_null(jpath(o, "metadata.labels"));
        assert_null(jpath(o, "metadata.annotations"));
        assert_string_equal(jstr_at(o, "metadata.deletionTimestamp"), fmt_time(T0 + 60 * SEC));
        assert_int_equal(jint_at(o, "metadata.deletionGracePeriodSeconds"), 30);
        assert_true(json_is_object(jpath(o, "status")));
        assert_int_equal(json_object_size(jpath(o, "status")), 0);
        json_decref(o);

        o = (json_t *)0x1;
        json_decref(status);
        status = json_array();
        assert_int_equal(kc_api_pod_to_json(&pod, NULL, status, &o), -EINVAL);
        assert_ptr_equal(o, (json_t *)0x1);
        assert_int_equal(kc_api_pod_to_json(NULL, NULL, NULL, &o), -EINVAL);
        json_decref(status);
}

/*
 * /pods echoes the whole spec of a parsed manifest, with the file source's
 * v1 defaults, under the API's JSON names (issue 14).
 */
static void test_api_pod_to_json_full_spec(void **state)
{
        static const char doc[] =
                "apiVersion: v1\nkind: Pod\nmetadata: {name: full, namespace: kube-system}\n"
                "spec:\n"
                "  hostNetwork: true\n"
                "  priorityClassName: system-node-critical\n"
                "  priority: 2000001000\n"
                "  hostAliases: [{ip: 10.0.0.1, hostnames: [a.local]}]\n"
                "  dnsConfig: {options: [{name: ndots, value: '2'}]}\n"
                "  securityContext: {sysctls: [{name: kernel.shm_rmid_forced, value: '1'}],\n"
                "    supplementalGroups: [7], seccompProfile: {type: RuntimeDefault}}\n"
                "  volumes:\n"
                "  - {name: certs, hostPath: {path: /etc/pki}}\n"
                "  - {name: tmp, emptyDir: {medium: Memory, sizeLimit: 1Gi}}\n"
                "  - {name: cfg, configMap: {name: c}}\n"
                "  initContainers:\n"
                "  - {name: side, image: busybox, restartPolicy: Always}\n"
                "  containers:\n"
                "  - name: app\n"
                "    image: busybox:1.36\n"
                "    workingDir: /w\n"
                "    ports: [{name: https, containerPort: 6443}]\n"
                "    env:\n"
                "    - {name: A, value: x}\n"
                "    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}\n"
                "    - {name: MEM, valueFrom: {resourceFieldRef: {resource: limits.memory}}}\n"
                "    envFrom: [{secretRef: {name: s}}]\n"
                "    resources: {limits: {memory: 64Mi}, requests: {cpu: 100m}}\n"
                "    volumeMounts:\n"
                "    - {name: certs, mountPath: /etc/pki, readOnly: true,\n"
                "       mountPropagation: HostToContainer}\n"
                "    lifecycle: {preStop: {sleep: {seconds: 3}},\n"
                "      postStart: {httpGet: {port: https, scheme: HTTPS}}}\n"
                "    livenessProbe: {httpGet: {host: 127.0.0.1, path: /livez, port: 6443},\n"
                "      initialDelaySeconds: 10, failureThreshold: 8}\n"
                "    securityContext: {readOnlyRootFilesystem: true,\n"
                "      capabilities: {drop: [ALL]}}\n";
        struct kc_api_pod *pod = NULL;
        json_t *o = NULL;

        (void)state;
        assert_int_equal(kc_manifest_parse(doc, strlen(doc), "f.yaml", "node-1", T0, &pod, NULL),
                         0);
        assert_int_equal(kc_api_pod_to_json(pod, "ignored", NULL, &o), 0);
        /* pod level, with the v1 defaults */
        assert_string_equal(jstr_at(o, "spec.nodeName"), "node-1");
        assert_string_equal(jstr_at(o, "spec.dnsPolicy"), "ClusterFirst");
        assert_string_equal(jstr_at(o, "spec.schedulerName"), "default-scheduler");
        assert_true(jbool_at(o, "spec.enableServiceLinks"));
        assert_true(jbool_at(o, "spec.hostNetwork"));
        assert_null(jpath(o, "spec.hostPID"));
        assert_string_equal(jstr_at(o, "spec.priorityClassName"), "system-node-critical");
        assert_int_equal(jint_at(o, "spec.priority"), 2000001000);
        assert_string_equal(jstr_at(o, "spec.hostAliases.0.hostnames.0"), "a.local");
        assert_string_equal(jstr_at(o, "spec.dnsConfig.options.0.value"), "2");
        assert_string_equal(jstr_at(o, "spec.securityContext.sysctls.0.value"), "1");
        assert_int_equal(jint_at(o, "spec.securityContext.supplementalGroups.0"), 7);
        assert_string_equal(jstr_at(o, "spec.securityContext.seccompProfile.type"),
                            "RuntimeDefault");
        assert_string_equal(jstr_at(o, "spec.volumes.0.hostPath.path"), "/etc/pki");
        assert_string_equal(jstr_at(o, "spec.volumes.0.hostPath.type"), "");
        assert_string_equal(jstr_at(o, "spec.volumes.1.emptyDir.medium"), "Memory");
        assert_string_equal(jstr_at(o, "spec.volumes.1.emptyDir.sizeLimit"), "1Gi");
        assert_true(json_is_object(jpath(o, "spec.volumes.2.configMap")));
        assert_string_equal(jstr_at(o, "spec.initContainers.0.restartPolicy"), "Always");
        /* the container, with its defaults */
        assert_string_equal(jstr_at(o, "spec.containers.0.workingDir"), "/w");
        assert_int_equal(jint_at(o, "spec.containers.0.ports.0.containerPort"), 6443);
        assert_int_equal(jint_at(o, "spec.containers.0.ports.0.hostPort"), 6443);
        assert_string_equal(jstr_at(o, "spec.containers.0.ports.0.protocol"), "TCP");
        assert_string_equal(jstr_at(o, "spec.containers.0.env.0.value"), "x");
        assert_string_equal(jstr_at(o, "spec.containers.0.env.1.valueFrom.fieldRef.apiVersion"),
                            "v1");
        assert_string_equal(jstr_at(o, "spec.containers.0.env.1.valueFrom.fieldRef.fieldPath"),
                            "spec.nodeName");
        assert_string_equal(
                jstr_at(o, "spec.containers.0.env.2.valueFrom.resourceFieldRef.divisor"), "1");
        assert_string_equal(jstr_at(o, "spec.containers.0.envFrom.0.secretRef.name"), "s");
        assert_string_equal(jstr_at(o, "spec.containers.0.resources.limits.memory"), "64Mi");
        assert_string_equal(jstr_at(o, "spec.containers.0.resources.requests.memory"), "64Mi");
        assert_string_equal(jstr_at(o, "spec.containers.0.resources.requests.cpu"), "100m");
        assert_true(jbool_at(o, "spec.containers.0.volumeMounts.0.readOnly"));
        assert_string_equal(jstr_at(o, "spec.containers.0.volumeMounts.0.mountPropagation"),
                            "HostToContainer");
        assert_int_equal(jint_at(o, "spec.containers.0.lifecycle.preStop.sleep.seconds"), 3);
        assert_string_equal(jstr_at(o, "spec.containers.0.lifecycle.postStart.httpGet.port"),
                            "https");
        assert_string_equal(jstr_at(o, "spec.containers.0.lifecycle.postStart.httpGet.path"), "/");
        assert_string_equal(jstr_at(o, "spec.containers.0.lifecycle.postStart.httpGet.scheme"),
                            "HTTPS");
        assert_int_equal(jint_at(o, "spec.containers.0.livenessProbe.httpGet.port"), 6443);
        assert_string_equal(jstr_at(o, "spec.containers.0.livenessProbe.httpGet.scheme"), "HTTP");
        assert_int_equal(jint_at(o, "spec.containers.0.livenessProbe.initialDelaySeconds"), 10);
        assert_int_equal(jint_at(o, "spec.containers.0.livenessProbe.timeoutSeconds"), 1);
        assert_int_equal(jint_at(o, "spec.containers.0.livenessProbe.periodSeconds"), 10);
        assert_int_equal(jint_at(o, "spec.containers.0.livenessProbe.failureThreshold"), 8);
        assert_string_equal(jstr_at(o, "spec.containers.0.terminationMessagePath"),
                            "/dev/termination-log");
        assert_string_equal(jstr_at(o, "spec.containers.0.terminationMessagePolicy"), "File");
        assert_true(jbool_at(o, "spec.containers.0.securityContext.readOnlyRootFilesystem"));
        assert_string_equal(jstr_at(o, "spec.containers.0.securityContext.capabilities.drop.0"),
                            "ALL");
        assert_null(jpath(o, "spec.containers.0.securityContext.privileged"));
        assert_true(json_is_object(jpath(o, "spec.initContainers.0.resources")));
        json_decref(o);
        kc_api_pod_unref(pod);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_format_rfc3339),
                cmocka_unit_test(test_reason_cache_basics),
                cmocka_unit_test(test_reason_cache_eviction),
                cmocka_unit_test(test_reason_cache_get_refreshes),
                cmocka_unit_test(test_reason_cache_remove_orphans),
                cmocka_unit_test(test_phase_table),
                cmocka_unit_test(test_phase_terminal),
                cmocka_unit_test(test_phase_mixed),
                cmocka_unit_test(test_phase_init_containers),
                cmocka_unit_test(test_phase_sidecar),
                cmocka_unit_test(test_status_sidecar),
                cmocka_unit_test(test_status_running),
                cmocka_unit_test(test_status_probed_readiness),
                cmocka_unit_test(test_status_qos_class),
                cmocka_unit_test(test_status_container_creating),
                cmocka_unit_test(test_status_init_containers),
                cmocka_unit_test(test_status_crash_loop),
                cmocka_unit_test(test_status_terminated),
                cmocka_unit_test(test_status_restart_count_and_order),
                cmocka_unit_test(test_status_ips),
                cmocka_unit_test(test_status_ips_kept_after_stop),
                cmocka_unit_test(test_status_transition_times),
                cmocka_unit_test(test_status_terminal_phase_sticks),
                cmocka_unit_test(test_status_gc_keeps_restart_count),
                cmocka_unit_test(test_status_gc_keeps_last_state),
                cmocka_unit_test(test_status_terminated_reused),
                cmocka_unit_test(test_status_unknown_after_running),
                cmocka_unit_test(test_status_unknown_not_applied),
                cmocka_unit_test(test_api_pod_to_json),
                cmocka_unit_test(test_api_pod_to_json_full_spec),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
