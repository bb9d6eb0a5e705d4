/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pod manager (pkg/kubelet/pod/pod_manager.go): desired pods by UID and
 * full name, static pods and their mirror pods (issue 3, "pod manager").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <cmocka.h>

#include "kubelet/pod_manager.h"
#include "runtime/api_pod.h"

static struct kc_api_pod *mkpod(const char *uid, const char *name, bool stat, bool mirror)
{
        struct kc_api_pod t = { .uid = uid,
                                .name = name,
                                .namespace = "ns",
                                .static_pod = stat,
                                .mirror_pod = mirror,
                                .deletion_grace_s = -1,
                                .termination_grace_s = -1 };
        struct kc_api_pod *p = NULL;

        assert_int_equal(kc_api_pod_new(&t, &p), 0);
        return p;
}

/* Returns @p's UID (or "-" for NULL) and drops the reference. */
static const char *uid_of(struct kc_api_pod *p)
{
        static char buf[64];

        snprintf(buf, sizeof(buf), "%s", p ? p->uid : "-");
        kc_api_pod_unref(p);
        return buf;
}

static void test_full_name(void **state)
{
        struct kc_api_pod *p = mkpod("u", "web", false, false);
        char *s = kc_pod_full_name(p->name, p->namespace);

        (void)state;
        assert_string_equal(s, "web_ns");
        free(s);
        kc_api_pod_unref(p);
}

/* A static pod and its mirror share the full name, not the UID. */
static void test_static_and_mirror(void **state)
{
        struct kc_pod_manager *m = NULL;
        struct kc_api_pod *st = mkpod("static-uid", "etcd", true, false);
        struct kc_api_pod *mi = mkpod("mirror-uid", "etcd", false, true);
        struct kc_api_pod *pod = NULL, *mirror = NULL;
        char **names = NULL;
        char *t;

        (void)state;
        assert_int_equal(kc_pod_manager_new(&m), 0);
        assert_int_equal(kc_pod_manager_update_pod(m, mi), 0);
        /* A mirror without its static pod is an orphan. */
        assert_int_equal(kc_pod_manager_get_orphaned_mirror_pod_names(m, &names), 1);
        assert_string_equal(names[0], "etcd_ns");
        free(names[0]);
        free(names);
        assert_int_equal(kc_pod_manager_update_pod(m, st), 0);
        assert_int_equal(kc_pod_manager_get_orphaned_mirror_pod_names(m, &names), 0);
        free(names);

        /* Mirror pods are not "pods" by UID. */
        assert_string_equal(uid_of(kc_pod_manager_get_pod_by_uid(m, "mirror-uid")), "-");
        assert_string_equal(uid_of(kc_pod_manager_get_pod_by_uid(m, "static-uid")), "static-uid");
        assert_string_equal(uid_of(kc_pod_manager_get_pod_by_mirror_pod(m, mi)), "static-uid");
        assert_string_equal(uid_of(kc_pod_manager_get_mirror_pod_by_pod(m, st)), "mirror-uid");
        assert_string_equal(uid_of(kc_pod_manager_get_pod_by_name(m, "ns", "etcd")), "static-uid");
        assert_string_equal(uid_of(kc_pod_manager_get_pod_by_full_name(m, "etcd_ns")),
                            "static-uid");
        t = kc_pod_manager_translate_pod_uid(m, "mirror-uid");
        assert_string_equal(t, "static-uid");
        free(t);
        t = kc_pod_manager_translate_pod_uid(m, "other");
        assert_string_equal(t, "other");
        free(t);

        assert_true(kc_pod_manager_get_pod_and_mirror_pod(m, mi, &pod, &mirror));
        assert_string_equal(uid_of(pod), "static-uid");
        assert_string_equal(uid_of(mirror), "mirror-uid");
        assert_true(kc_pod_manager_get_pod_and_mirror_pod(m, st, &pod, &mirror));
        assert_string_equal(uid_of(pod), "static-uid");
        assert_string_equal(uid_of(mirror), "mirror-uid");

        /* Removing the static pod orphans the mirror again. */
        kc_pod_manager_remove_pod(m, st);
        assert_false(kc_pod_manager_get_pod_and_mirror_pod(m, mi, &pod, &mirror));
        assert_null(pod);
        kc_api_pod_unref(mirror);
        t = kc_pod_manager_translate_pod_uid(m, "mirror-uid");
        assert_string_equal(t, "mirror-uid");
        free(t);
        kc_api_pod_unref(st);
        kc_api_pod_unref(mi);
        kc_pod_manager_free(m);
}

/* Update replaces by UID (a renamed pod leaves no stale name); SetPods replaces all. */
static void test_update_remove_set(void **state)
{
        struct kc_pod_manager *m = NULL;
        struct kc_api_pod *a = mkpod("a", "one", false, false);
        struct kc_api_pod *a2 = mkpod("a", "uno", false, false);
        struct kc_api_pod *b = mkpod("b", "two", false, false);
        struct kc_api_pod **pods = NULL;
        size_t n, i;

        (void)state;
        assert_int_equal(kc_pod_manager_new(&m), 0);
        assert_int_equal(kc_pod_manager_update_pod(m, a), 0);
        assert_int_equal(kc_pod_manager_update_pod(m, a2), 0);
        assert_string_equal(uid_of(kc_pod_manager_get_pod_by_full_name(m, "one_ns")), "-");
        assert_string_equal(uid_of(kc_pod_manager_get_pod_by_full_name(m, "uno_ns")), "a");
        n = kc_pod_manager_get_pods(m, &pods);
        assert_int_equal(n, 1);
        assert_ptr_equal(pods[0], a2);
        kc_api_pod_unref(pods[0]);
        free(pods);

        {
                struct kc_api_pod *const set[] = { b };

                assert_int_equal(kc_pod_manager_set_pods(m, set, 1), 0);
        }
        assert_string_equal(uid_of(kc_pod_manager_get_pod_by_uid(m, "a")), "-");
        assert_string_equal(uid_of(kc_pod_manager_get_pod_by_uid(m, "b")), "b");
        kc_pod_manager_remove_pod(m, b);
        kc_pod_manager_remove_pod(m, b); /* twice is harmless */
        n = kc_pod_manager_get_pods(m, &pods);
        assert_int_equal(n, 0);
        free(pods);
        for (i = 0; i < 3; i++)
                kc_api_pod_unref(i == 0 ? a : i == 1 ? a2 : b);
        kc_pod_manager_free(m);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_full_name),
                cmocka_unit_test(test_static_and_mirror),
                cmocka_unit_test(test_update_remove_set),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
