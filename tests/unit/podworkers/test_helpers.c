/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pod-worker helpers without a running sync: calculateEffectiveGracePeriod
 * (F-PW-06), allowPodStart (F-PW-16) and the requeue jitter (F-PW-08).
 * Transcribed from upstream pod_workers_test.go where noted.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"
#include "fixture.h"
#include "podworkers/pod_workers.h"
#include "runtime/api_pod.h"

/* Test_calculateEffectiveGracePeriod (F-PW-06). -1 stands for nil. */
static void test_calculate_effective_grace_period(void **state)
{
        static const struct {
                const char *desc;
                int64_t spec, deletion, override, expected;
        } cases[] = {
                { "use termination grace period from the spec when no overrides", 30, -1, -1, 30 },
                { "use pod DeletionGracePeriodSeconds when set", 30, 5, -1, 5 },
                { "use grace period override when set", 30, 5, 2, 2 },
                { "use 1 when pod DeletionGracePeriodSeconds is zero", 30, 0, -1, 1 },
                { "use 1 when grace period override is zero", 30, 5, 0, 1 },
        };

        (void)state;
        for (size_t i = 0; i < KC_ELEMENTSOF(cases); i++) {
                struct kc_api_pod tmpl = { .uid = "1",
                                           .name = "running-pod",
                                           .namespace = "ns",
                                           .termination_grace_s = cases[i].spec,
                                           .deletion_grace_s = cases[i].deletion };
                struct kc_api_pod *pod = new_pod_full(&tmpl);
                int64_t g = kc__calculate_effective_grace_period(0, pod, cases[i].override, NULL);

                if (g != cases[i].expected)
                        fail_msg("%s: expected %lld, got %lld", cases[i].desc,
                                 (long long)cases[i].expected, (long long)g);
                kc_api_pod_unref(pod);
        }
}

/* F-PW-06: once set, grace only decreases; a shorter value reports "shortened". */
static void test_grace_period_only_decreases(void **state)
{
        struct kc_api_pod tmpl = { .uid = "1",
                                   .name = "p",
                                   .namespace = "ns",
                                   .termination_grace_s = 30,
                                   .deletion_grace_s = -1 };
        struct kc_api_pod *pod = new_pod_full(&tmpl);
        bool shortened = true;

        (void)state;
        assert_int_equal(kc__calculate_effective_grace_period(0, pod, -1, &shortened), 30);
        assert_false(shortened);
        /* a longer override is ignored */
        assert_int_equal(kc__calculate_effective_grace_period(30, pod, 60, &shortened), 30);
        assert_false(shortened);
        /* a shorter one wins and is reported */
        assert_int_equal(kc__calculate_effective_grace_period(30, pod, 10, &shortened), 10);
        assert_true(shortened);
        /* runtime-only pod (no pod): 1 s unless overridden lower (never below 1) */
        assert_int_equal(kc__calculate_effective_grace_period(0, NULL, -1, &shortened), 1);
        kc_api_pod_unref(pod);
}

struct status_seed {
        const char *uid;
        const char *fullname;
        bool terminating, terminated;
};

struct allow_case {
        const char *desc;
        bool is_static;
        struct status_seed statuses[4];
        const char *started_fullname, *started_uid;
        const char *waiting_fullname;
        const char *waiting[6];
        /* expectations */
        const char *exp_started[2][2]; /* {fullname, uid} pairs, NULL-terminated */
        size_t exp_started_n;
        const char *exp_waiting_fullname; /* NULL: no waiting lists expected */
        const char *exp_waiting;          /* "a,b" */
        bool allowed, allowed_ever;
};

/* Test_allowPodStart (F-PW-16). The pod is uid-0: "test" in ns "ns" when
 * not static; newStaticPod("uid-0", "foo") (no namespace) when static. */
static void test_allow_pod_start(void **state)
{
        static const struct allow_case cases[] = {
                { .desc = "non-static pod",
                  .statuses = { { "uid-0", "test_" }, { "uid-1", "test_" } },
                  .allowed = true,
                  .allowed_ever = true },
                { .desc = "non-static pod when there is a started static pod with the same full "
                          "name",
                  .statuses = { { "uid-0", "test_" }, { "uid-1", "test_" } },
                  .started_fullname = "test_",
                  .started_uid = "uid-1",
                  .exp_started = { { "test_", "uid-1" } },
                  .exp_started_n = 1,
                  .allowed = true,
                  .allowed_ever = true },
                { .desc = "static pod when there is a started non-static pod with the same full "
                          "name",
                  .statuses = { { "uid-0", "test_" }, { "uid-1", "test_" } },
                  .allowed = true,
                  .allowed_ever = true },
                { .desc = "static pod when there are no started static pods with the same full "
                          "name",
                  .is_static = true,
                  .statuses = { { "uid-0", "foo_" }, { "uid-1", "bar_" } },
                  .started_fullname = "bar_",
                  .started_uid = "uid-1",
                  .exp_started = { { "foo_", "uid-0" }, { "bar_", "uid-1" } },
                  .exp_started_n = 2,
                  .allowed = true,
                  .allowed_ever = true },
                { .desc = "static pod when there is a started static pod with the same full name",
                  .is_static = true,
                  .statuses = { { "uid-0", "foo_" }, { "uid-1", "foo_" } },
                  .started_fullname = "foo_",
                  .started_uid = "uid-1",
                  .exp_started = { { "foo_", "uid-1" } },
                  .exp_started_n = 1,
                  .allowed = false,
                  .allowed_ever = true },
                { .desc = "static pod if the static pod has already started",
                  .is_static = true,
                  .statuses = { { "uid-0", "foo_" } },
                  .started_fullname = "foo_",
                  .started_uid = "uid-0",
                  .exp_started = { { "foo_", "uid-0" } },
                  .exp_started_n = 1,
                  .allowed = true,
                  .allowed_ever = true },
                { .desc = "static pod if the static pod is the first pod waiting to start",
                  .is_static = true,
                  .statuses = { { "uid-0", "foo_" } },
                  .waiting_fullname = "foo_",
                  .waiting = { "uid-0" },
                  .exp_started = { { "foo_", "uid-0" } },
                  .exp_started_n = 1,
                  .allowed = true,
                  .allowed_ever = true },
                { .desc = "static pod if the static pod is not the first pod waiting to start",
                  .is_static = true,
                  .statuses = { { "uid-0", "foo_" }, { "uid-1", "foo_" } },
                  .waiting_fullname = "foo_",
                  .waiting = { "uid-1", "uid-0" },
                  .exp_waiting_fullname = "foo_",
                  .exp_waiting = "uid-1,uid-0",
                  .allowed = false,
                  .allowed_ever = true },
                { .desc = "static pod if the static pod is the first valid pod waiting to start / "
                          "clean up until picking the first valid pod",
                  .is_static = true,
                  .statuses = { { "uid-0", "foo_" }, { "uid-1", "foo_" } },
                  .waiting_fullname = "foo_",
                  .waiting = { "uid-2", "uid-2", "uid-3", "uid-0", "uid-1" },
                  .exp_started = { { "foo_", "uid-0" } },
                  .exp_started_n = 1,
                  .exp_waiting_fullname = "foo_",
                  .exp_waiting = "uid-1",
                  .allowed = true,
                  .allowed_ever = true },
                { .desc = "static pod if the static pod is the first pod that is not termination "
                          "requested and waiting to start",
                  .is_static = true,
                  .statuses = { { "uid-0", "foo_" },
                                { "uid-1", "foo_" },
                                { "uid-2", "foo_", true, false },
                                { "uid-3", "foo_", false, true } },
                  .waiting_fullname = "foo_",
                  .waiting = { "uid-2", "uid-3", "uid-0", "uid-1" },
                  .exp_started = { { "foo_", "uid-0" } },
                  .exp_started_n = 1,
                  .exp_waiting_fullname = "foo_",
                  .exp_waiting = "uid-1",
                  .allowed = true,
                  .allowed_ever = true },
                { .desc = "static pod if there is no sync status for the pod should be denied",
                  .is_static = true,
                  .statuses = { { "uid-1", "foo_" },
                                { "uid-2", "foo_", true, false },
                                { "uid-3", "foo_", false, true } },
                  .waiting_fullname = "foo_",
                  .waiting = { "uid-1" },
                  .exp_waiting_fullname = "foo_",
                  .exp_waiting = "uid-1",
                  .allowed = false,
                  .allowed_ever = false },
                { .desc = "static pod if the static pod is terminated should not be allowed",
                  .is_static = true,
                  .statuses = { { "uid-0", "foo_", true, false } },
                  .waiting_fullname = "foo_",
                  .waiting = { "uid-2", "uid-3", "uid-0", "uid-1" },
                  .exp_waiting_fullname = "foo_",
                  .exp_waiting = "uid-2,uid-3,uid-0,uid-1",
                  .allowed = false,
                  .allowed_ever = false },
        };

        (void)state;
        for (size_t i = 0; i < KC_ELEMENTSOF(cases); i++) {
                const struct allow_case *c = &cases[i];
                struct fixture *fx = fixture_new();
                struct kc_api_pod *pod = c->is_static ? new_pod("uid-0", "", "foo", true)
                                                      : new_pod("uid-0", "ns", "test", false);
                bool allowed = false, ever = false;
                char buf[256];
                size_t nw = 0;

                for (size_t k = 0; k < 4 && c->statuses[k].uid; k++)
                        assert_int_equal(
                                kc__pod_workers_inject_status(fx->pw, c->statuses[k].uid,
                                                              c->statuses[k].fullname,
                                                              c->statuses[k].terminating ? T0 : 0,
                                                              c->statuses[k].terminated ? T0 : 0),
                                0);
                if (c->started_fullname)
                        assert_int_equal(kc__pod_workers_set_started_static(
                                                 fx->pw, c->started_fullname, c->started_uid),
                                         0);
                while (nw < 6 && c->waiting[nw])
                        nw++;
                if (c->waiting_fullname)
                        assert_int_equal(kc__pod_workers_set_waiting_static(
                                                 fx->pw, c->waiting_fullname, c->waiting, nw),
                                         0);

                kc__allow_pod_start(fx->pw, pod, &allowed, &ever);
                if (allowed != c->allowed || ever != c->allowed_ever)
                        fail_msg("%s: allowed %d/%d, expected %d/%d", c->desc, allowed, ever,
                                 c->allowed, c->allowed_ever);
                if (kc__pod_workers_started_static_count(fx->pw) != c->exp_started_n)
                        fail_msg("%s: %zu started static pods, expected %zu", c->desc,
                                 kc__pod_workers_started_static_count(fx->pw), c->exp_started_n);
                for (size_t k = 0; k < c->exp_started_n; k++) {
                        assert_true(kc__pod_workers_get_started_static(fx->pw, c->exp_started[k][0],
                                                                       buf, sizeof(buf)));
                        assert_string_equal(buf, c->exp_started[k][1]);
                }
                if (!c->exp_waiting_fullname) {
                        if (kc__pod_workers_waiting_static_count(fx->pw) != 0)
                                fail_msg("%s: unexpected waiting static pods", c->desc);
                } else {
                        assert_int_equal(kc__pod_workers_waiting_static_count(fx->pw), 1);
                        assert_true(kc__pod_workers_get_waiting_static(
                                fx->pw, c->exp_waiting_fullname, buf, sizeof(buf)));
                        if (strcmp(buf, c->exp_waiting) != 0)
                                fail_msg("%s: waiting %s, expected %s", c->desc, buf,
                                         c->exp_waiting);
                }
                /* "not yet" re-enqueues at jitter(10 s, 0.5) (fixed random: 12.5 s) */
                fake_lock(&fx->fake);
                if (c->allowed_ever && !c->allowed) {
                        assert_int_equal(fx->fake.n_queue, 1);
                        assert_string_equal(fx->fake.queue[0].uid, "uid-0");
                        assert_int_equal(fx->fake.queue[0].delay, 12500 * KC_NSEC_PER_MSEC);
                } else {
                        assert_int_equal(fx->fake.n_queue, 0);
                }
                fake_unlock(&fx->fake);
                kc_api_pod_unref(pod);
                fixture_free(fx);
        }
}

static double seq_random(void *ud)
{
        double *v = ud;

        return *v;
}

/* F-PW-08: the local jitter is uniform in [d, 1.5 d) from the injected source. */
static void test_jitter_bounds(void **state)
{
        struct fixture *fx = fixture_new();
        struct kc_pod_workers *pw2 = NULL;
        double v = 0.0;
        struct kc_pod_workers_config cfg = {
                .clock = fx->clock,
                .cache = fx->cache,
                .syncer = &fake_ops,
                .syncer_userdata = &fx->fake,
                .enqueue = fake_enqueue,
                .enqueue_userdata = &fx->fake,
                .random = seq_random,
                .random_userdata = &v,
        };

        (void)state;
        assert_int_equal(kc_pod_workers_new(&cfg, &pw2), 0);
        assert_int_equal(kc__pod_workers_jitter(pw2, 10 * SEC, 0.5), 10 * SEC);
        v = 0.5;
        assert_int_equal(kc__pod_workers_jitter(pw2, 10 * SEC, 0.5), 12500 * KC_NSEC_PER_MSEC);
        v = 0.9999;
        assert_true(kc__pod_workers_jitter(pw2, 10 * SEC, 0.5) < 15 * SEC);
        v = 7.0; /* out of range sources are clamped below 1 */
        assert_true(kc__pod_workers_jitter(pw2, 10 * SEC, 0.5) < 15 * SEC);
        kc_pod_workers_free(pw2);
        fixture_free(fx);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_calculate_effective_grace_period),
                cmocka_unit_test(test_grace_period_only_decreases),
                cmocka_unit_test(test_allow_pod_start),
                cmocka_unit_test(test_jitter_bounds),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
