/* SPDX-License-Identifier: Apache-2.0 */
/*
 * instrumentedRuntimeService (pkg/kubelet/kuberuntime/instrumented_services.go):
 * each call is timed from its start, then recordOperation counts it and
 * observes its duration, and recordError counts it again when it failed.
 * Upstream records the operation even when it fails, and so do we.
 */
#include <assert.h>
#include <stdlib.h>

#include "core/clock.h"
#include "metrics/kubelet_metrics.h"
#include "metrics/registry.h"
#include "runtime/instrumented.h"

struct kc_instrumented_runtime {
        struct kc_runtime_service inner;
        struct kc_runtime_service_ops ops; /* the calls inner has, wrapped */
        struct kc_kubelet_metrics *m;
        struct kc_clock *clock;
};

/* recordOperation and recordError: @p r is the call's result (< 0: failed). */
static int record(struct kc_instrumented_runtime *ir, const char *operation, int64_t start, int r)
{
        const char *labels[] = { operation };
        double seconds = (double)(kc_clock_now(ir->clock) - start) / (double)KC_NSEC_PER_SEC;

        (void)kc_counter_vec_inc_mp(ir->m->runtime_operations, labels);
        (void)kc_histogram_vec_observe_mp(ir->m->runtime_operations_duration, operation, seconds);
        if (r < 0)
                (void)kc_counter_vec_inc_mp(ir->m->runtime_operations_errors, labels);
        return r;
}

/* One wrapper per call: time the inner call and record it under @p op. */
#define INSTRUMENTED(op, call)                                                                     \
        do {                                                                                       \
                struct kc_instrumented_runtime *ir = self;                                         \
                int64_t start = kc_clock_now(ir->clock);                                           \
                void *in = ir->inner.self;                                                         \
                                                                                                   \
                return record(ir, op, start, ir->inner.ops->call);                                 \
        } while (0)

static int i_version(void *self, struct kc_version_result *ret, struct kc_runtime_error *err)
{
        INSTRUMENTED("version", version(in, ret, err));
}

static int i_status(void *self, struct kc_runtime_status_result *ret, struct kc_runtime_error *err)
{
        INSTRUMENTED("status", status(in, ret, err));
}

static int i_run_pod_sandbox(void *self, const struct kc_pod_sandbox_config *config, char **ret_id,
                             struct kc_runtime_error *err)
{
        INSTRUMENTED("run_podsandbox", run_pod_sandbox(in, config, ret_id, err));
}

static int i_stop_pod_sandbox(void *self, const char *id, struct kc_runtime_error *err)
{
        INSTRUMENTED("stop_podsandbox", stop_pod_sandbox(in, id, err));
}

static int i_remove_pod_sandbox(void *self, const char *id, struct kc_runtime_error *err)
{
        INSTRUMENTED("remove_podsandbox", remove_pod_sandbox(in, id, err));
}

static int i_pod_sandbox_status(void *self, const char *id,
                                struct kc_pod_sandbox_status_result *ret,
                                struct kc_runtime_error *err)
{
        INSTRUMENTED("podsandbox_status", pod_sandbox_status(in, id, ret, err));
}

static int i_list_pod_sandbox(void *self, const struct kc_pod_sandbox_filter *filter,
                              struct kc_pod_sandbox_list *ret, struct kc_runtime_error *err)
{
        INSTRUMENTED("list_podsandbox", list_pod_sandbox(in, filter, ret, err));
}

static int i_create_container(void *self, const char *pod_sandbox_id,
                              const struct kc_container_config *config,
                              const struct kc_pod_sandbox_config *sandbox_config, char **ret_id,
                              struct kc_runtime_error *err)
{
        INSTRUMENTED("create_container",
                     create_container(in, pod_sandbox_id, config, sandbox_config, ret_id, err));
}

static int i_start_container(void *self, const char *id, struct kc_runtime_error *err)
{
        INSTRUMENTED("start_container", start_container(in, id, err));
}

static int i_stop_container(void *self, const char *id, int64_t timeout_s,
                            struct kc_runtime_error *err)
{
        INSTRUMENTED("stop_container", stop_container(in, id, timeout_s, err));
}

static int i_remove_container(void *self, const char *id, struct kc_runtime_error *err)
{
        INSTRUMENTED("remove_container", remove_container(in, id, err));
}

static int i_list_containers(void *self, const struct kc_container_filter *filter,
                             struct kc_container_list *ret, struct kc_runtime_error *err)
{
        INSTRUMENTED("list_containers", list_containers(in, filter, ret, err));
}

static int i_container_status(void *self, const char *id, struct kc_container_status_result *ret,
                              struct kc_runtime_error *err)
{
        INSTRUMENTED("container_status", container_status(in, id, ret, err));
}

static int i_exec_sync(void *self, const char *id, const char *const *argv, size_t argc,
                       int64_t timeout_s, struct kc_exec_sync_result *ret,
                       struct kc_runtime_error *err)
{
        INSTRUMENTED("exec_sync", exec_sync(in, id, argv, argc, timeout_s, ret, err));
}

static int i_image_status(void *self, const char *image, struct kc_image_status_result *ret,
                          struct kc_runtime_error *err)
{
        INSTRUMENTED("image_status", image_status(in, image, ret, err));
}

static int i_pull_image(void *self, const char *image,
                        const struct kc_pod_sandbox_config *sandbox_config, char **ret_image_ref,
                        struct kc_runtime_error *err)
{
        INSTRUMENTED("pull_image", pull_image(in, image, sandbox_config, ret_image_ref, err));
}

/* A hint, not a call: no metric. */
static void i_prefetch_container_statuses(void *self, const char *const *ids, size_t n, bool far)
{
        struct kc_instrumented_runtime *ir = self;

        ir->inner.ops->prefetch_container_statuses(ir->inner.self, ids, n, far);
}

static const struct kc_runtime_service_ops instrumented_ops = {
        .version = i_version,
        .status = i_status,
        .run_pod_sandbox = i_run_pod_sandbox,
        .stop_pod_sandbox = i_stop_pod_sandbox,
        .remove_pod_sandbox = i_remove_pod_sandbox,
        .pod_sandbox_status = i_pod_sandbox_status,
        .list_pod_sandbox = i_list_pod_sandbox,
        .create_container = i_create_container,
        .start_container = i_start_container,
        .stop_container = i_stop_container,
        .remove_container = i_remove_container,
        .list_containers = i_list_containers,
        .container_status = i_container_status,
        .prefetch_container_statuses = i_prefetch_container_statuses,
        .exec_sync = i_exec_sync,
        .image_status = i_image_status,
        .pull_image = i_pull_image,
};

/* Keeps a wrapper only where @p inner has the call, so that NULL still means "not supported". */
#define KEEP_IF_PRESENT(ops, inner, f) ((ops)->f = (inner)->f ? (ops)->f : NULL)

int kc_instrumented_runtime_new(struct kc_runtime_service inner, struct kc_kubelet_metrics *metrics,
                                struct kc_clock *clock, struct kc_instrumented_runtime **ret)
{
        struct kc_instrumented_runtime *ir;
        const struct kc_runtime_service_ops *in = inner.ops;

        assert(ret);
        if (!in || !metrics || !clock)
                return -EINVAL;
        ir = calloc(1, sizeof(*ir));
        if (!ir)
                return -ENOMEM;
        ir->inner = inner;
        ir->m = metrics;
        ir->clock = clock;
        ir->ops = instrumented_ops;
        KEEP_IF_PRESENT(&ir->ops, in, version);
        KEEP_IF_PRESENT(&ir->ops, in, status);
        KEEP_IF_PRESENT(&ir->ops, in, run_pod_sandbox);
        KEEP_IF_PRESENT(&ir->ops, in, stop_pod_sandbox);
        KEEP_IF_PRESENT(&ir->ops, in, remove_pod_sandbox);
        KEEP_IF_PRESENT(&ir->ops, in, pod_sandbox_status);
        KEEP_IF_PRESENT(&ir->ops, in, list_pod_sandbox);
        KEEP_IF_PRESENT(&ir->ops, in, create_container);
        KEEP_IF_PRESENT(&ir->ops, in, start_container);
        KEEP_IF_PRESENT(&ir->ops, in, stop_container);
        KEEP_IF_PRESENT(&ir->ops, in, remove_container);
        KEEP_IF_PRESENT(&ir->ops, in, list_containers);
        KEEP_IF_PRESENT(&ir->ops, in, container_status);
        KEEP_IF_PRESENT(&ir->ops, in, prefetch_container_statuses);
        KEEP_IF_PRESENT(&ir->ops, in, exec_sync);
        KEEP_IF_PRESENT(&ir->ops, in, image_status);
        KEEP_IF_PRESENT(&ir->ops, in, pull_image);
        *ret = ir;
        return 0;
}

struct kc_instrumented_runtime *kc_instrumented_runtime_free(struct kc_instrumented_runtime *ir)
{
        free(ir);
        return NULL;
}

struct kc_runtime_service kc_instrumented_runtime_service(struct kc_instrumented_runtime *ir)
{
        return (struct kc_runtime_service){ .ops = &ir->ops, .self = ir };
}
