/* SPDX-License-Identifier: Apache-2.0 */
/*
 * instrumentedRuntimeService (issue 17): every call through the wrapper
 * counts in kubelet_runtime_operations_total{operation_type}, observes its
 * duration and, when it fails, counts in ..._errors_total, under upstream's
 * operation names; calls the inner service lacks stay NULL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "core/cleanup.h"
#include "core/clock.h"
#include "metrics/kubelet_metrics.h"
#include "metrics/registry.h"
#include "runtime/error.h"
#include "runtime/instrumented.h"
#include "runtime/runtime_service.h"

struct fake {
        struct kc_clock *clock;
        int fail;            /* the next status call fails with it */
        unsigned prefetches; /* prefetch hints passed on */
};

/* Status takes 0.3 s on the fake clock, and fails when asked to. */
static int fake_status(void *self, struct kc_runtime_status_result *ret,
                       struct kc_runtime_error *err)
{
        struct fake *f = self;

        (void)ret;
        kc_fake_clock_advance(f->clock, 300 * 1000 * 1000);
        if (f->fail)
                return kc_runtime_error_set(err, f->fail, KC_RUNTIME_UNAVAILABLE, "down");
        return 0;
}

static int fake_list_pod_sandbox(void *self, const struct kc_pod_sandbox_filter *filter,
                                 struct kc_pod_sandbox_list *ret, struct kc_runtime_error *err)
{
        (void)self, (void)filter, (void)err;
        *ret = (struct kc_pod_sandbox_list){ 0 };
        return 0;
}

/* A command that ran and failed: a success with the exit code. */
static int fake_exec_sync(void *self, const char *id, const char *const *argv, size_t argc,
                          int64_t timeout_s, struct kc_exec_sync_result *ret,
                          struct kc_runtime_error *err)
{
        (void)self, (void)id, (void)argv, (void)argc, (void)timeout_s, (void)err;
        *ret = (struct kc_exec_sync_result){ .exit_code = 1 };
        return 0;
}

static void fake_prefetch(void *self, const char *const *ids, size_t n, bool far)
{
        struct fake *f = self;

        (void)ids, (void)n, (void)far;
        f->prefetches++;
}

static const struct kc_runtime_service_ops fake_ops = {
        .status = fake_status,
        .list_pod_sandbox = fake_list_pod_sandbox,
        .exec_sync = fake_exec_sync,
        .prefetch_container_statuses = fake_prefetch,
};

static double counter(struct kc_counter_vec *cv, const char *op)
{
        const char *labels[] = { op };
        double v = -1;

        return kc_counter_vec_value(cv, labels, &v) == 0 ? v : 0;
}

static void test_records_every_call(void **state)
{
        _cleanup_(kc_metrics_registry_freep) struct kc_metrics_registry *r = NULL;
        struct kc_kubelet_metrics m = {};
        struct kc_instrumented_runtime *ir = NULL;
        struct kc_runtime_service svc;
        struct kc_runtime_status_result st = { 0 };
        struct kc_pod_sandbox_list l = { 0 };
        struct kc_exec_sync_result x = { 0 };
        struct kc_runtime_error err = { 0 };
        struct fake f = { 0 };
        uint64_t n = 0;
        double sum = 0;

        (void)state;
        assert_int_equal(kc_fake_clock_new(&f.clock, 1000), 0);
        assert_int_equal(kc_metrics_registry_new(&r), 0);
        assert_int_equal(kc_kubelet_metrics_register(r, &m), 0);
        assert_int_equal(kc_instrumented_runtime_new((struct kc_runtime_service){ &fake_ops, &f },
                                                     &m, f.clock, &ir),
                         0);
        svc = kc_instrumented_runtime_service(ir);
        /* Missing calls stay missing. */
        assert_null(svc.ops->remove_pod_sandbox);
        assert_null(svc.ops->version);

        assert_int_equal(svc.ops->status(svc.self, &st, &err), 0);
        f.fail = -ECONNREFUSED;
        assert_int_equal(svc.ops->status(svc.self, &st, &err), -ECONNREFUSED);
        assert_string_equal(err.message, "down");
        assert_int_equal(svc.ops->list_pod_sandbox(svc.self, NULL, &l, &err), 0);
        assert_non_null(svc.ops->exec_sync);
        assert_int_equal(svc.ops->exec_sync(svc.self, "c-1", (const char *const[]){ "false" }, 1, 1,
                                            &x, &err),
                         0);
        assert_int_equal(x.exit_code, 1);
        /* A prefetch hint is passed on to the inner runtime. */
        svc.ops->prefetch_container_statuses(svc.self, (const char *const[]){ "c-1" }, 1, true);
        assert_int_equal(f.prefetches, 1);

        assert_true(counter(m.runtime_operations, "status") == 2);
        assert_true(counter(m.runtime_operations_errors, "status") == 1);
        assert_true(counter(m.runtime_operations, "list_podsandbox") == 1);
        assert_true(counter(m.runtime_operations_errors, "list_podsandbox") == 0);
        assert_true(counter(m.runtime_operations, "exec_sync") == 1);
        assert_true(counter(m.runtime_operations_errors, "exec_sync") == 0);
        assert_int_equal(kc_histogram_vec_count(m.runtime_operations_duration, "status", &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(kc_histogram_vec_sum(m.runtime_operations_duration, "status", &sum), 0);
        assert_true(sum > 0.59 && sum < 0.61);

        kc_instrumented_runtime_free(ir);
        kc_clock_free(f.clock);
}

static void test_bad_arguments(void **state)
{
        struct kc_kubelet_metrics m = {};
        struct kc_instrumented_runtime *ir = (void *)&m;

        (void)state;
        assert_int_equal(kc_instrumented_runtime_new((struct kc_runtime_service){ 0 }, &m,
                                                     kc_clock_real(), &ir),
                         -EINVAL);
        assert_ptr_equal(ir, (void *)&m); /* untouched */
        assert_int_equal(kc_instrumented_runtime_new((struct kc_runtime_service){ &fake_ops, NULL },
                                                     NULL, kc_clock_real(), &ir),
                         -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_records_every_call),
                cmocka_unit_test(test_bad_arguments),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
