/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GenericPLEG against a real containerd (F-PLEG-03 to 06 end to end): the
 * runtime manager over the CRI client, a pod created by SyncPod, and
 * relists driven by hand (no relist thread), so each step's events can be
 * checked:
 *   1. both containers run        -> ContainerStarted for each;
 *   2. "exiter" exits 7 by itself -> ContainerDied, cached status exit 7;
 *   3. StopContainer("sleeper")   -> ContainerDied, cached status exit 137;
 *   4. RemoveContainer("exiter")  -> ContainerRemoved;
 *   5. the sandbox stopped and removed -> ContainerRemoved for "sleeper",
 *      and the pod leaves the cache.
 * containerd 1.6 has no GetContainerEvents, so relisting is the only way.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/chan.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "integ.h"
#include "pleg/event.h"
#include "pleg/generic.h"
#include "runtime/api_pod.h"
#include "runtime/cache.h"
#include "runtime/container.h"
#include "runtime/cri.h"
#include "runtime/error.h"
#include "runtime/manager.h"
#include "runtime/runtime_service.h"
#include "runtime/sync_pod.h"

static struct integ_env env;

struct fixture {
        struct kc_cri *cri;
        struct kc_runtime_service svc;
        struct kc_runtime_manager *manager;
        struct kc_chan *events;
        struct kc_pod_cache *cache;
        struct kc_generic_pleg *pleg;
        char logs[64];
};

/* An event seen on the channel. */
struct seen {
        enum kc_pleg_event_type type;
        char pod[128];
        char data[128];
};

/* One relist; returns the events it produced (up to @p max). */
static size_t relist(struct fixture *f, struct seen *out, size_t max)
{
        size_t n = 0;
        void *item;
        int r;

        r = kc_generic_pleg_relist(f->pleg);
        if (r < 0)
                fail_msg("relist: %s", strerror(-r));
        while (kc_chan_pop_sc(f->events, &item, 0) == 0) {
                struct kc_pleg_event *e = item;

                if (n < max) {
                        out[n].type = e->type;
                        snprintf(out[n].pod, sizeof(out[n].pod), "%s", e->pod_id);
                        snprintf(out[n].data, sizeof(out[n].data), "%s", e->data);
                        printf("  event %s pod=%s data=%.12s\n",
                               kc_pleg_event_type_to_string(e->type), e->pod_id, e->data);
                        n++;
                }
                kc_pleg_event_free(e);
        }
        return n;
}

static bool has_event(const struct seen *ev, size_t n, enum kc_pleg_event_type type,
                      const char *pod, const char *data)
{
        for (size_t i = 0; i < n; i++)
                if (ev[i].type == type && strcmp(ev[i].pod, pod) == 0 &&
                    strcmp(ev[i].data, data) == 0)
                        return true;
        return false;
}

/* The cached status of container @p id of pod @p uid (a copy of the fields we check). */
static bool cached_container(struct fixture *f, const char *uid, const char *id,
                             enum kc_container_state *state, int32_t *exit_code)
{
        struct kc_pod_status *st = NULL;
        char *err = NULL;
        bool found = false;

        if (kc_pod_cache_get(f->cache, uid, &st, &err) == 1 && st) {
                for (size_t i = 0; i < st->n_containers; i++)
                        if (st->containers[i].id && strcmp(st->containers[i].id, id) == 0) {
                                *state = st->containers[i].state;
                                *exit_code = st->containers[i].exit_code;
                                found = true;
                        }
        }
        if (err)
                fprintf(stderr, "cached error for %s: %s\n", uid, err);
        kc_pod_status_unref(st);
        free(err);
        return found;
}

/* The id of the container named @p name in the pod's runtime status. */
static char *container_id(struct fixture *f, const char *uid, const char *name)
{
        struct kc_pod_status *st = NULL;
        struct kc_runtime_error err = { 0 };
        char *id = NULL;

        if (kc_runtime_manager_get_pod_status(f->manager, uid, NULL, "integ", &st, &err) < 0)
                fail_msg("GetPodStatus: %s", err.message);
        for (size_t i = 0; i < st->n_containers; i++)
                if (strcmp(st->containers[i].name, name) == 0 && !id)
                        id = strdup(st->containers[i].id);
        kc_pod_status_unref(st);
        assert_non_null(id);
        return id;
}

static void test_relist_against_containerd(void **state)
{
        struct fixture *f = *state;
        static const char *const sleeper_cmd[] = { "sleep", "1000000" };
        static const char *const exiter_cmd[] = { "sh", "-c", "sleep 3; exit 7" };
        char uid[64], name[64];
        struct kc_label pod_labels[] = { { INTEG_LABEL, env.run } };
        struct kc_api_container containers[] = {
                { .name = "sleeper",
                  .image = env.image,
                  .command = sleeper_cmd,
                  .n_command = 2,
                  .image_pull_policy = KC_PULL_IF_NOT_PRESENT },
                { .name = "exiter",
                  .image = env.image,
                  .command = exiter_cmd,
                  .n_command = 3,
                  .image_pull_policy = KC_PULL_IF_NOT_PRESENT },
        };
        _cleanup_(kc_api_pod_unrefp) struct kc_api_pod *pod = NULL;
        _cleanup_free_ char *sync_err = NULL, *sleeper = NULL, *exiter = NULL;
        struct kc_runtime_error err = { 0 };
        struct seen ev[32];
        enum kc_container_state cst;
        int32_t code;
        size_t n;
        int r;

        integ_unique(uid, sizeof(uid), "pleg-uid");
        integ_unique(name, sizeof(name), "pleg");
        struct kc_api_pod tmpl = {
                .uid = uid,
                .name = name,
                .namespace = "integ",
                .source = "file",
                .creation_ts = kc_clock_now(kc_clock_real()),
                .deletion_grace_s = -1,
                .termination_grace_s = 0,
                .phase = KC_POD_PHASE_PENDING,
                .static_pod = true,
                .host_network = true,
                .restart_policy = KC_RESTART_POLICY_NEVER,
                .containers = containers,
                .n_containers = 2,
                .labels = pod_labels,
                .n_labels = 1,
        };
        assert_int_equal(kc_api_pod_new(&tmpl, &pod), 0);

        /* Nothing of ours yet: a first relist sees no event for this pod. */
        n = relist(f, ev, 32);
        for (size_t i = 0; i < n; i++)
                assert_string_not_equal(ev[i].pod, uid);

        /* SyncPod: RunPodSandbox, then both containers. */
        r = kc_runtime_manager_sync_pod(f->manager, pod, NULL, NULL, &sync_err);
        if (r < 0)
                fail_msg("SyncPod: %d %s", r, sync_err);
        sleeper = container_id(f, uid, "sleeper");
        exiter = container_id(f, uid, "exiter");

        printf("relist 1 (both running)\n");
        n = relist(f, ev, 32);
        assert_true(has_event(ev, n, KC_PLEG_CONTAINER_STARTED, uid, sleeper));
        assert_true(has_event(ev, n, KC_PLEG_CONTAINER_STARTED, uid, exiter));
        assert_true(cached_container(f, uid, sleeper, &cst, &code));
        assert_int_equal(cst, KC_CONTAINER_STATE_RUNNING);

        /* A relist with no change: no event for the pod. */
        n = relist(f, ev, 32);
        for (size_t i = 0; i < n; i++)
                assert_string_not_equal(ev[i].pod, uid);

        printf("relist 2 (exiter exited 7)\n");
        assert_int_equal(
                integ_wait_container_state(f->svc, exiter, KC_CONTAINER_STATE_EXITED, 10000, NULL),
                KC_CONTAINER_STATE_EXITED);
        n = relist(f, ev, 32);
        assert_true(has_event(ev, n, KC_PLEG_CONTAINER_DIED, uid, exiter));
        assert_false(has_event(ev, n, KC_PLEG_CONTAINER_DIED, uid, sleeper));
        assert_true(cached_container(f, uid, exiter, &cst, &code));
        assert_int_equal(cst, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(code, 7);

        printf("relist 3 (sleeper stopped: 137)\n");
        r = f->svc.ops->stop_container(f->svc.self, sleeper, 0, &err);
        if (r < 0)
                fail_msg("StopContainer: %s", err.message);
        n = relist(f, ev, 32);
        assert_true(has_event(ev, n, KC_PLEG_CONTAINER_DIED, uid, sleeper));
        assert_true(cached_container(f, uid, sleeper, &cst, &code));
        assert_int_equal(cst, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(code, 137);

        printf("relist 4 (exiter removed)\n");
        assert_int_equal(f->svc.ops->remove_container(f->svc.self, exiter, &err), 0);
        n = relist(f, ev, 32);
        assert_true(has_event(ev, n, KC_PLEG_CONTAINER_REMOVED, uid, exiter));
        assert_false(cached_container(f, uid, exiter, &cst, &code));
        assert_true(cached_container(f, uid, sleeper, &cst, &code));

        printf("relist 5 (sandbox removed)\n");
        assert_int_equal(integ_remove_all(f->svc, &env), 1);
        n = relist(f, ev, 32);
        assert_true(has_event(ev, n, KC_PLEG_CONTAINER_REMOVED, uid, sleeper));
        {
                struct kc_pod_status *st = NULL;
                char *e = NULL;

                /* A pod with nothing left is dropped from the cache. */
                assert_int_equal(kc_pod_cache_get(f->cache, uid, &st, &e), 0);
                kc_pod_status_unref(st);
                free(e);
        }
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        int r;

        if (!f || integ_env_load(&env, "test_pleg") < 0)
                return -1;
        snprintf(f->logs, sizeof(f->logs), "/tmp/cubelet-integ-pods.XXXXXX");
        if (!mkdtemp(f->logs))
                return -1;
        r = kc_cri_new(env.endpoint, 30 * KC_NSEC_PER_SEC, &f->cri);
        if (r < 0) {
                fprintf(stderr, "kc_cri_new(%s): %s\n", env.endpoint, strerror(-r));
                return -1;
        }
        f->svc = kc_cri_service(f->cri);
        if (kc_runtime_manager_new(f->svc, kc_clock_real(), &f->manager) < 0 ||
            kc_runtime_manager_set_pod_logs_root(f->manager, f->logs) < 0 ||
            kc_chan_new(&f->events, KC_PLEG_CHANNEL_CAPACITY, kc_pleg_event_free_item) < 0 ||
            kc_pod_cache_new(&f->cache) < 0)
                return -1;
        struct kc_generic_pleg_config cfg = {
                .runtime = kc_runtime_manager_pod_runtime(f->manager),
                .events = f->events,
                .cache = f->cache,
                .clock = kc_clock_real(),
                .relist_period_ns = KC_GENERIC_PLEG_RELIST_PERIOD,
                .relist_threshold_ns = KC_GENERIC_PLEG_RELIST_THRESHOLD,
        };
        if (kc_generic_pleg_new(&cfg, &f->pleg) < 0)
                return -1;
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        if (!f)
                return 0;
        integ_teardown_leftovers(f->cri ? &f->svc : NULL, &env, f->logs);
        kc_generic_pleg_free(f->pleg);
        kc_pod_cache_free(f->cache);
        kc_chan_free(f->events);
        kc_runtime_manager_free(f->manager);
        kc_cri_free(f->cri);
        free(f);
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_relist_against_containerd, setup, teardown),
        };

        return cmocka_run_group_tests_name("integration.pleg", tests, NULL, NULL);
}
