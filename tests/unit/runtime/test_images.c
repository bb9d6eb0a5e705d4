/* SPDX-License-Identifier: Apache-2.0 */
/*
 * runtime/images.c: image reference parsing (applyDefaultImageTag) and
 * EnsureImageExists over the simulated runtime: the three pull policies,
 * ErrImageNeverPull, ErrImagePull and the per-image pull backoff
 * (ImagePullBackOff, 10 s doubling, keyed by pod UID + image; F-SYNC-02's
 * startContainer step), InvalidImageName and ImageInspectError.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/backoff.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "fixture.h"
#include "internal.h"
#include "runtime/api_pod.h"
#include "runtime/images.h"
#include "runtime/pod_actions.h"
#include "runtime/runtime_service.h"
#include "runtime/sim.h"

struct fixture {
        struct kc_clock *clock;
        struct kc_sim *sim;
        struct kc_runtime_service svc;
        struct kc_backoff *image_backoff;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        sim_env_new(&f->clock, &f->sim, NULL);
        f->svc = kc_sim_service(f->sim);
        assert_int_equal(kc_backoff_new(f->clock, KC_IMAGE_BACKOFF_INITIAL_NS,
                                        KC_IMAGE_BACKOFF_MAX_NS, &f->image_backoff),
                         0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        kc_backoff_free(f->image_backoff);
        sim_env_free(f->clock, f->sim);
        free(f);
        return 0;
}

/* The id the sim stores for @p image, or NULL when absent (malloc'd). */
static char *sim_image_id(struct fixture *f, const char *image)
{
        struct kc_image_status_result st = { 0 };
        char *id = NULL;

        assert_int_equal(f->svc.ops->image_status(f->svc.self, image, &st, NULL), 0);
        if (st.found)
                id = strdup(st.image.id);
        kc_runtime_result_done(&st);
        return id;
}

static const struct kc_api_pod pod_a = { .uid = "uid-a", .name = "a", .namespace = "default" };
static const struct kc_api_pod pod_b = { .uid = "uid-b", .name = "b", .namespace = "default" };

struct outcome {
        int r;
        char *ref;
        const char *reason;
        char *msg;
        int64_t retry_after;
};

static struct outcome ensure(struct fixture *f, struct kc_backoff *b, const struct kc_api_pod *pod,
                             const char *image, enum kc_pull_policy policy)
{
        struct kc_api_container c = { .name = "c", .image = image, .image_pull_policy = policy };
        struct outcome o = { 0 };

        o.reason = "untouched";
        o.retry_after = -2;
        o.r = kc_ensure_image_exists(f->svc, b, pod, &c, NULL, &o.ref, &o.reason, &o.msg,
                                     &o.retry_after);
        if (o.r != -EAGAIN)
                assert_int_equal(o.retry_after, -1);
        else
                assert_true(o.retry_after >= 0);
        if (o.r == 0) {
                assert_non_null(o.ref);
                assert_null(o.reason);
                assert_null(o.msg);
        } else {
                assert_null(o.ref); /* untouched */
                assert_non_null(o.reason);
                assert_non_null(o.msg);
        }
        return o;
}

static void outcome_done(struct outcome *o)
{
        free(o->ref);
        free(o->msg);
        *o = (struct outcome){ 0 };
}

/* ---- reference parsing --------------------------------------------------- */

static void test_apply_default_tag(void **state)
{
        static const struct {
                const char *in, *out;
        } ok[] = {
                { "busybox", "busybox:latest" },
                { "busybox:1.36", "busybox:1.36" },
                { "library/busybox", "library/busybox:latest" },
                { "registry.example.com:5000/team/app",
                  "registry.example.com:5000/team/app:latest" },
                { "localhost/app:v1", "localhost/app:v1" },
                { "localhost:5000/app", "localhost:5000/app:latest" },
                { "Registry.Example.com/app:V1",
                  "Registry.Example.com/app:V1" }, /* uppercase host, tag */
                { "a/b/c:tag_1.0-x", "a/b/c:tag_1.0-x" },
                { "my-app__x.y", "my-app__x.y:latest" },
                { "team/my-app__x.y", "team/my-app__x.y:latest" },
                { "app@sha256:0123456789abcdef0123456789abcdef",
                  "app@sha256:0123456789abcdef0123456789abcdef" },
                { "app:1@sha256:0123456789abcdef0123456789abcdef",
                  "app:1@sha256:0123456789abcdef0123456789abcdef" },
        };
        static const char *const bad[] = {
                "",
                "Busybox",
                "library/BusyBox:1",
                "busy box",
                " busybox",
                "busybox ",
                "busybox:",
                "busybox:-1",
                ":1",
                "/busybox",
                "busybox/",
                "a//b",
                "app_-x",
                "app--",
                "app@sha256:abc",
                "app@sha256",
                "app@:0123456789abcdef0123456789abcdef",
                "-app.com/x",
                "my_app.io/x", /* a registry (it has a '.') cannot hold '_' */
                "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        };
        char *out = (char *)"untouched";
        size_t i;

        (void)state;
        for (i = 0; i < KC_ELEMENTSOF(ok); i++) {
                out = NULL;
                assert_int_equal(kc_image_apply_default_tag(ok[i].in, &out), 0);
                assert_string_equal(out, ok[i].out);
                free(out);
        }
        for (i = 0; i < KC_ELEMENTSOF(bad); i++) {
                out = (char *)"untouched";
                if (kc_image_apply_default_tag(bad[i], &out) != -EINVAL)
                        fail_msg("\"%s\" should be invalid", bad[i]);
                assert_string_equal(out, "untouched");
        }
        assert_int_equal(kc_image_apply_default_tag(NULL, &out), -EINVAL);
        assert_int_equal(kc_image_apply_default_tag("busybox", NULL), -EINVAL);
}

static void test_ref_parse_spans(void **state)
{
        struct kc__image_ref ref;
        const char *why = NULL;
        const char *s = "reg.io:5000/team/app:v2@sha256:0123456789abcdef0123456789abcdef";

        (void)state;
        assert_int_equal(kc__image_ref_parse(s, &ref, &why), 0);
        assert_null(why);
        assert_int_equal(ref.domain_len, strlen("reg.io:5000"));
        assert_int_equal(ref.path_len, strlen("team/app"));
        assert_memory_equal(s + ref.path_off, "team/app", ref.path_len);
        assert_memory_equal(s + ref.tag_off, "v2", ref.tag_len);
        assert_int_equal(ref.tag_len, 2);
        assert_string_equal(s + ref.digest_off, "sha256:0123456789abcdef0123456789abcdef");

        assert_int_equal(kc__image_ref_parse("team/app", &ref, &why), 0);
        assert_int_equal(ref.domain_len, 0);
        assert_int_equal(ref.path_off, 0);
        assert_int_equal(ref.tag_len, 0);
        assert_int_equal(ref.digest_len, 0);

        assert_int_equal(kc__image_ref_parse("team/App", &ref, &why), -EINVAL);
        assert_string_equal(why, "invalid reference format: repository name must be lowercase");
        assert_int_equal(kc__image_ref_parse("team/a pp", &ref, &why), -EINVAL);
        assert_string_equal(why, "invalid reference format");
}

/* ---- pull policies ----------------------------------------------------------- */

static void test_policy_always(void **state)
{
        struct fixture *f = *state;
        struct outcome o;
        char *id;

        assert_int_equal(kc_sim_add_image(f->sim, "busybox:1"), 0);
        id = sim_image_id(f, "busybox:1");
        assert_non_null(id);
        /* Present or not, Always inspects and pulls on every start. */
        for (int i = 1; i <= 3; i++) {
                o = ensure(f, f->image_backoff, &pod_a, "busybox:1", KC_PULL_ALWAYS);
                assert_int_equal(o.r, 0);
                assert_string_equal(o.ref, id);
                outcome_done(&o);
                assert_int_equal(sim_op_count(f->sim, "ImageStatus"), (uint64_t)i + 1);
                assert_int_equal(sim_op_count(f->sim, "PullImage"), (uint64_t)i);
        }
        free(id);
}

static void test_policy_if_not_present(void **state)
{
        struct fixture *f = *state;
        struct outcome o;
        char *id;

        /* Missing: inspect, then pull. */
        o = ensure(f, f->image_backoff, &pod_a, "nginx:1", KC_PULL_IF_NOT_PRESENT);
        assert_int_equal(o.r, 0);
        assert_int_equal(sim_op_count(f->sim, "ImageStatus"), 1);
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 1);
        id = sim_image_id(f, "nginx:1");
        assert_string_equal(o.ref, id);
        outcome_done(&o);

        /* Present: inspect only. */
        for (int i = 0; i < 2; i++) {
                o = ensure(f, f->image_backoff, &pod_a, "nginx:1", KC_PULL_IF_NOT_PRESENT);
                assert_int_equal(o.r, 0);
                assert_string_equal(o.ref, id);
                outcome_done(&o);
        }
        assert_int_equal(sim_op_count(f->sim, "ImageStatus"), 2 + 2);
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 1);

        /* The default tag: "nginx" is "nginx:latest", not "nginx:1". */
        o = ensure(f, f->image_backoff, &pod_a, "nginx", KC_PULL_IF_NOT_PRESENT);
        assert_int_equal(o.r, 0);
        assert_string_not_equal(o.ref, id);
        outcome_done(&o);
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 2);
        free(id);
}

static void test_policy_never(void **state)
{
        struct fixture *f = *state;
        struct outcome o;
        char *id;

        o = ensure(f, f->image_backoff, &pod_a, "redis:7", KC_PULL_NEVER);
        assert_int_equal(o.r, -ENOENT);
        assert_string_equal(o.reason, KC_ERR_IMAGE_NEVER_PULL_REASON);
        assert_string_equal(o.reason, "ErrImageNeverPull");
        assert_string_equal(o.msg,
                            "Container image \"redis:7\" is not present with pull policy of Never");
        outcome_done(&o);
        assert_int_equal(sim_op_count(f->sim, "ImageStatus"), 1);
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 0);

        /* Not a pull failure: no backoff afterwards, it works once the image is there. */
        assert_int_equal(kc_sim_add_image(f->sim, "redis:7"), 0);
        id = sim_image_id(f, "redis:7");
        o = ensure(f, f->image_backoff, &pod_a, "redis:7", KC_PULL_NEVER);
        assert_int_equal(o.r, 0);
        assert_string_equal(o.ref, id);
        outcome_done(&o);
        free(id);
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 0);
}

/* ---- pull failures and the backoff ------------------------------------------ */

static void test_err_image_pull_then_backoff(void **state)
{
        struct fixture *f = *state;
        const char *img = "example.com/doesnotexist:1";
        struct outcome o;

        o = ensure(f, f->image_backoff, &pod_a, img, KC_PULL_IF_NOT_PRESENT);
        assert_int_equal(o.r, -ENOENT);
        assert_string_equal(o.reason, KC_ERR_IMAGE_PULL_REASON);
        assert_string_equal(o.msg, "failed to pull and unpack image "
                                   "\"example.com/doesnotexist:1\": failed to resolve reference "
                                   "\"example.com/doesnotexist:1\": example.com/doesnotexist:1: "
                                   "not found");
        outcome_done(&o);
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 1);

        /* Within 10 s: fail fast, no pull. */
        assert_int_equal(kc_fake_clock_advance(f->clock, 9 * SEC), 0);
        o = ensure(f, f->image_backoff, &pod_a, img, KC_PULL_IF_NOT_PRESENT);
        assert_int_equal(o.r, -EAGAIN);
        assert_string_equal(o.reason, KC_IMAGE_PULL_BACK_OFF_REASON);
        assert_string_equal(o.reason, "ImagePullBackOff");
        assert_string_equal(o.msg, "Back-off pulling image \"example.com/doesnotexist:1\"");
        assert_int_equal(o.retry_after, 1 * SEC); /* the window ends 10 s after the failure */
        outcome_done(&o);
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 1);

        /* The key is per pod: another pod pulls the same image at once. */
        o = ensure(f, f->image_backoff, &pod_b, img, KC_PULL_IF_NOT_PRESENT);
        assert_string_equal(o.reason, KC_ERR_IMAGE_PULL_REASON);
        outcome_done(&o);
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 2);

        /* 10 s after the failure: pull again; it fails, the window doubles to 20 s. */
        assert_int_equal(kc_fake_clock_advance(f->clock, 1 * SEC), 0);
        o = ensure(f, f->image_backoff, &pod_a, img, KC_PULL_IF_NOT_PRESENT);
        assert_string_equal(o.reason, KC_ERR_IMAGE_PULL_REASON);
        outcome_done(&o);
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 3);
        assert_int_equal(kc_fake_clock_advance(f->clock, 19 * SEC), 0);
        o = ensure(f, f->image_backoff, &pod_a, img, KC_PULL_IF_NOT_PRESENT);
        assert_string_equal(o.reason, KC_IMAGE_PULL_BACK_OFF_REASON);
        assert_int_equal(o.retry_after, 1 * SEC);
        outcome_done(&o);
        assert_int_equal(kc_fake_clock_advance(f->clock, 1 * SEC), 0);
        o = ensure(f, f->image_backoff, &pod_a, img, KC_PULL_IF_NOT_PRESENT);
        assert_string_equal(o.reason, KC_ERR_IMAGE_PULL_REASON);
        outcome_done(&o);
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 4);
}

static void test_backoff_recovery(void **state)
{
        struct fixture *f = *state;
        struct outcome o;

        /* The registry fails twice, then recovers. */
        assert_int_equal(kc_sim_inject_fault(f->sim, "PullImage", "app:2", "registry down", 2), 0);
        o = ensure(f, f->image_backoff, &pod_a, "app:2", KC_PULL_ALWAYS);
        assert_int_equal(o.r, -EIO);
        assert_string_equal(o.reason, KC_ERR_IMAGE_PULL_REASON);
        assert_string_equal(o.msg, "registry down");
        outcome_done(&o);

        assert_int_equal(kc_fake_clock_advance(f->clock, 5 * SEC), 0);
        o = ensure(f, f->image_backoff, &pod_a, "app:2", KC_PULL_ALWAYS);
        assert_string_equal(o.reason, KC_IMAGE_PULL_BACK_OFF_REASON);
        outcome_done(&o);

        assert_int_equal(kc_fake_clock_advance(f->clock, 5 * SEC), 0);
        o = ensure(f, f->image_backoff, &pod_a, "app:2", KC_PULL_ALWAYS);
        assert_string_equal(o.reason, KC_ERR_IMAGE_PULL_REASON);
        outcome_done(&o);

        /* 20 s later the pull goes through and returns the image id. */
        assert_int_equal(kc_fake_clock_advance(f->clock, 20 * SEC), 0);
        o = ensure(f, f->image_backoff, &pod_a, "app:2", KC_PULL_ALWAYS);
        assert_int_equal(o.r, 0);
        assert_int_equal(strncmp(o.ref, "sha256:", 7), 0);
        outcome_done(&o);
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 3);

        /* Without a backoff every attempt pulls. */
        for (int i = 0; i < 3; i++) {
                o = ensure(f, NULL, &pod_a, "doesnotexist", KC_PULL_ALWAYS);
                assert_string_equal(o.reason, KC_ERR_IMAGE_PULL_REASON);
                outcome_done(&o);
        }
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 6);
}

/*
 * The whole curve (F-SYNC-02): each failed pull doubles the window from 10 s
 * to the 300 s cap (MaxImageBackOff), where it stays; a pull is refused
 * until the window ends and made as soon as it has. Six failures in a row
 * hold a container 300 s, which the chaos test's quiet period outlasts.
 */
static void test_backoff_curve_to_cap(void **state)
{
        static const int64_t windows_s[] = { 10, 20, 40, 80, 160, 300, 300 };
        struct fixture *f = *state;
        struct outcome o;
        size_t i;

        assert_int_equal(kc_sim_inject_fault(f->sim, "PullImage", "app:3", "registry down",
                                             (int)KC_ELEMENTSOF(windows_s)),
                         0);
        o = ensure(f, f->image_backoff, &pod_a, "app:3", KC_PULL_IF_NOT_PRESENT);
        assert_string_equal(o.reason, KC_ERR_IMAGE_PULL_REASON);
        outcome_done(&o);
        for (i = 0; i < KC_ELEMENTSOF(windows_s); i++) {
                /* A second before the window ends: refused, no pull, 1 s to go. */
                assert_int_equal(kc_fake_clock_advance(f->clock, (windows_s[i] - 1) * SEC), 0);
                o = ensure(f, f->image_backoff, &pod_a, "app:3", KC_PULL_IF_NOT_PRESENT);
                assert_string_equal(o.reason, KC_IMAGE_PULL_BACK_OFF_REASON);
                assert_int_equal(o.retry_after, 1 * SEC);
                outcome_done(&o);
                assert_int_equal(sim_op_count(f->sim, "PullImage"), i + 1);

                /* The window ends: the pull is made (the last one goes through). */
                assert_int_equal(kc_fake_clock_advance(f->clock, 1 * SEC), 0);
                o = ensure(f, f->image_backoff, &pod_a, "app:3", KC_PULL_IF_NOT_PRESENT);
                if (i + 1 < KC_ELEMENTSOF(windows_s)) {
                        assert_string_equal(o.reason, KC_ERR_IMAGE_PULL_REASON);
                } else {
                        assert_int_equal(o.r, 0);
                }
                outcome_done(&o);
                assert_int_equal(sim_op_count(f->sim, "PullImage"), i + 2);
        }
}

static void test_invalid_image_name(void **state)
{
        struct fixture *f = *state;
        struct outcome o;

        o = ensure(f, f->image_backoff, &pod_a, "Busybox:1", KC_PULL_ALWAYS);
        assert_int_equal(o.r, -EINVAL);
        assert_string_equal(o.reason, KC_INVALID_IMAGE_NAME_REASON);
        assert_string_equal(o.reason, "InvalidImageName");
        assert_string_equal(o.msg,
                            "Failed to apply default image tag \"Busybox:1\": couldn't parse "
                            "image reference \"Busybox:1\": invalid reference format: "
                            "repository name must be lowercase");
        outcome_done(&o);

        o = ensure(f, f->image_backoff, &pod_a, "busy box", KC_PULL_IF_NOT_PRESENT);
        assert_string_equal(o.reason, KC_INVALID_IMAGE_NAME_REASON);
        assert_string_equal(o.msg, "Failed to apply default image tag \"busy box\": couldn't parse "
                                   "image reference \"busy box\": invalid reference format");
        outcome_done(&o);

        o = ensure(f, f->image_backoff, &pod_a, "", KC_PULL_NEVER);
        assert_string_equal(o.reason, KC_INVALID_IMAGE_NAME_REASON);
        outcome_done(&o);
        o = ensure(f, f->image_backoff, &pod_a, NULL, KC_PULL_ALWAYS);
        assert_string_equal(o.reason, KC_INVALID_IMAGE_NAME_REASON);
        outcome_done(&o);

        /* Decided before any runtime call. */
        assert_int_equal(sim_op_count(f->sim, "ImageStatus"), 0);
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 0);
}

static void test_image_inspect_error(void **state)
{
        struct fixture *f = *state;
        struct outcome o;

        assert_int_equal(kc_sim_inject_fault(f->sim, "ImageStatus", NULL, "disk error", 1), 0);
        o = ensure(f, f->image_backoff, &pod_a, "busybox", KC_PULL_IF_NOT_PRESENT);
        assert_int_equal(o.r, -EIO);
        assert_string_equal(o.reason, KC_ERR_IMAGE_INSPECT_REASON);
        assert_string_equal(o.msg, "Failed to inspect image \"busybox\": disk error");
        outcome_done(&o);
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 0);

        /* A runtime without an image service cannot inspect. */
        {
                struct kc_runtime_service_ops ops = *f->svc.ops;
                struct kc_runtime_service svc = { .ops = &ops, .self = f->svc.self };
                struct kc_api_container c = { .name = "c", .image = "busybox" };
                const char *reason = NULL;
                char *ref = NULL, *msg = NULL;

                ops.image_status = NULL;
                assert_int_equal(kc_ensure_image_exists(svc, NULL, &pod_a, &c, NULL, &ref, &reason,
                                                        &msg, NULL),
                                 -EOPNOTSUPP);
                assert_string_equal(reason, KC_ERR_IMAGE_INSPECT_REASON);
                assert_null(ref);
                free(msg);
        }
}

static void test_invalid_args(void **state)
{
        struct fixture *f = *state;
        struct kc_api_container c = { .name = "c", .image = "busybox" };
        const char *reason = "x";
        char *ref = NULL, *msg = NULL;

        assert_int_equal(
                kc_ensure_image_exists(f->svc, NULL, NULL, &c, NULL, &ref, &reason, &msg, NULL),
                -EINVAL);
        assert_null(reason);
        assert_null(msg);
        assert_int_equal(
                kc_ensure_image_exists(f->svc, NULL, &pod_a, NULL, NULL, &ref, &reason, &msg, NULL),
                -EINVAL);
        assert_int_equal(
                kc_ensure_image_exists(f->svc, NULL, &pod_a, &c, NULL, NULL, &reason, &msg, NULL),
                -EINVAL);
        assert_null(ref);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_apply_default_tag),
                cmocka_unit_test(test_ref_parse_spans),
                cmocka_unit_test_setup_teardown(test_policy_always, setup, teardown),
                cmocka_unit_test_setup_teardown(test_policy_if_not_present, setup, teardown),
                cmocka_unit_test_setup_teardown(test_policy_never, setup, teardown),
                cmocka_unit_test_setup_teardown(test_err_image_pull_then_backoff, setup, teardown),
                cmocka_unit_test_setup_teardown(test_backoff_recovery, setup, teardown),
                cmocka_unit_test_setup_teardown(test_backoff_curve_to_cap, setup, teardown),
                cmocka_unit_test_setup_teardown(test_invalid_image_name, setup, teardown),
                cmocka_unit_test_setup_teardown(test_image_inspect_error, setup, teardown),
                cmocka_unit_test_setup_teardown(test_invalid_args, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
