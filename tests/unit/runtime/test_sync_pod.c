/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SyncPod and KillPod (runtime/sync_pod.c) over the simulated runtime's
 * service face, through a thin recording wrapper that notes the
 * StopContainer timeouts (the sim ignores them). F-SYNC-02, F-SYNC-03,
 * F-BO-03, and the image pull path of startContainer. Issue 14: sidecars
 * (KEP-753) started, restarted and stopped last, postStart and preStop
 * hooks (exec, httpGet, sleep) and the preStop grace arithmetic.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "core/backoff.h"
#include "core/cancel.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "fixture.h"
#include "internal.h"
#include "runtime/api_pod.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/images.h"
#include "runtime/manager.h"
#include "runtime/pod_actions.h"
#include "runtime/runtime_service.h"
#include "runtime/sim.h"
#include "runtime/sync_pod.h"

struct fixture {
        struct kc_clock *clock;
        struct kc_sim *sim;
        struct kc_runtime_service sim_svc; /* the real one */
        struct kc_runtime_service_ops rec_ops;
        struct kc_runtime_service svc; /* recording wrapper */
        struct kc_runtime_manager *mgr;
        struct kc_backoff *backoff;
        struct kc_backoff *image_backoff;
        struct kc_sync_pod_options opts;
        pthread_mutex_t stop_lock; /* KillPod stops containers from several threads */
        int64_t stop_timeouts[16];
        char stop_ids[16][64]; /* in the order the stops came */
        size_t n_stops;
        /* ExecSync (the sim has none here): the calls, and what the next ones answer */
        struct exec_call {
                char id[64];
                char argv0[32];
                int64_t timeout_s;
                size_t n_stops_before; /* StopContainer calls made before this exec */
        } execs[8];
        size_t n_execs;
        int32_t exec_exit_code;
        const char *exec_out, *exec_err;
        struct rec_result {
                char name[32];
                bool init;
                int r;
                char reason[48];
                char message[256];
                bool has_reason, has_message;
                int64_t retry_after;
        } results[32];
        size_t n_results;
        struct kc_cancel *cancel_on_pull; /* triggered by PullImage, to cut a start short */
};

static void on_start_result(void *userdata, const struct kc_start_result *res)
{
        struct fixture *f = userdata;
        struct rec_result *o;

        assert_non_null(res->container_name);
        if (f->n_results == KC_ELEMENTSOF(f->results))
                fail_msg("too many start results");
        o = &f->results[f->n_results++];
        *o = (struct rec_result){
                .init = res->init_container,
                .r = res->r,
                .retry_after = res->retry_after_ns,
        };
        snprintf(o->name, sizeof(o->name), "%s", res->container_name);
        o->has_reason = res->reason != NULL;
        o->has_message = res->message != NULL;
        if (res->reason)
                snprintf(o->reason, sizeof(o->reason), "%s", res->reason);
        if (res->message)
                snprintf(o->message, sizeof(o->message), "%s", res->message);
}

/* The last start result recorded for @p name, or NULL. */
static const struct rec_result *result_for(struct fixture *f, const char *name)
{
        size_t i;

        for (i = f->n_results; i > 0; i--)
                if (strcmp(f->results[i - 1].name, name) == 0)
                        return &f->results[i - 1];
        return NULL;
}

static void assert_result(struct fixture *f, const char *name, int r, const char *reason)
{
        const struct rec_result *res = result_for(f, name);

        if (!res)
                fail_msg("no start result for %s", name);
        assert_int_equal(res->r, r);
        /* Only back-offs say when to retry. */
        if (kc__streq(reason, KC_CRASH_LOOP_BACK_OFF_REASON) ||
            kc__streq(reason, KC_IMAGE_PULL_BACK_OFF_REASON))
                assert_true(res->retry_after >= 0);
        else
                assert_int_equal(res->retry_after, -1);
        if (reason) {
                assert_true(res->has_reason);
                assert_string_equal(res->reason, reason);
                assert_true(res->has_message);
        } else {
                assert_false(res->has_reason);
                assert_false(res->has_message);
        }
}

static int rec_stop_container(void *self, const char *id, int64_t timeout_s,
                              struct kc_runtime_error *err)
{
        struct fixture *f = self;

        pthread_mutex_lock(&f->stop_lock);
        if (f->n_stops < 16) {
                f->stop_timeouts[f->n_stops] = timeout_s;
                snprintf(f->stop_ids[f->n_stops], sizeof(f->stop_ids[0]), "%s", id);
        }
        f->n_stops++;
        pthread_mutex_unlock(&f->stop_lock);
        return f->sim_svc.ops->stop_container(f->sim_svc.self, id, timeout_s, err);
}

static int rec_run_pod_sandbox(void *self, const struct kc_pod_sandbox_config *c, char **id,
                               struct kc_runtime_error *e)
{
        struct fixture *f = self;
        return f->sim_svc.ops->run_pod_sandbox(f->sim_svc.self, c, id, e);
}
static int rec_stop_pod_sandbox(void *self, const char *id, struct kc_runtime_error *e)
{
        struct fixture *f = self;
        return f->sim_svc.ops->stop_pod_sandbox(f->sim_svc.self, id, e);
}
static int rec_pod_sandbox_status(void *self, const char *id,
                                  struct kc_pod_sandbox_status_result *r,
                                  struct kc_runtime_error *e)
{
        struct fixture *f = self;
        return f->sim_svc.ops->pod_sandbox_status(f->sim_svc.self, id, r, e);
}
static int rec_list_pod_sandbox(void *self, const struct kc_pod_sandbox_filter *fl,
                                struct kc_pod_sandbox_list *r, struct kc_runtime_error *e)
{
        struct fixture *f = self;
        return f->sim_svc.ops->list_pod_sandbox(f->sim_svc.self, fl, r, e);
}
static int rec_create_container(void *self, const char *sb, const struct kc_container_config *c,
                                const struct kc_pod_sandbox_config *sc, char **id,
                                struct kc_runtime_error *e)
{
        struct fixture *f = self;
        return f->sim_svc.ops->create_container(f->sim_svc.self, sb, c, sc, id, e);
}
static int rec_start_container(void *self, const char *id, struct kc_runtime_error *e)
{
        struct fixture *f = self;
        return f->sim_svc.ops->start_container(f->sim_svc.self, id, e);
}
static int rec_list_containers(void *self, const struct kc_container_filter *fl,
                               struct kc_container_list *r, struct kc_runtime_error *e)
{
        struct fixture *f = self;
        return f->sim_svc.ops->list_containers(f->sim_svc.self, fl, r, e);
}
static int rec_container_status(void *self, const char *id, struct kc_container_status_result *r,
                                struct kc_runtime_error *e)
{
        struct fixture *f = self;
        return f->sim_svc.ops->container_status(f->sim_svc.self, id, r, e);
}
static int rec_image_status(void *self, const char *image, struct kc_image_status_result *r,
                            struct kc_runtime_error *e)
{
        struct fixture *f = self;
        return f->sim_svc.ops->image_status(f->sim_svc.self, image, r, e);
}
static int rec_pull_image(void *self, const char *image, const struct kc_pod_sandbox_config *sc,
                          char **ref, struct kc_runtime_error *e)
{
        struct fixture *f = self;
        int r = f->sim_svc.ops->pull_image(f->sim_svc.self, image, sc, ref, e);

        if (f->cancel_on_pull)
                kc_cancel_trigger_mp(f->cancel_on_pull);
        return r;
}

static int rec_exec_sync(void *self, const char *id, const char *const *argv, size_t argc,
                         int64_t timeout_s, struct kc_exec_sync_result *ret,
                         struct kc_runtime_error *e)
{
        struct fixture *f = self;
        struct exec_call *c;

        (void)e;
        pthread_mutex_lock(&f->stop_lock);
        assert_true(f->n_execs < KC_ELEMENTSOF(f->execs));
        c = &f->execs[f->n_execs++];
        snprintf(c->id, sizeof(c->id), "%s", id);
        snprintf(c->argv0, sizeof(c->argv0), "%s", argc > 0 ? argv[0] : "");
        c->timeout_s = timeout_s;
        c->n_stops_before = f->n_stops;
        pthread_mutex_unlock(&f->stop_lock);
        *ret = (struct kc_exec_sync_result){
                .out = strdup(f->exec_out ? f->exec_out : ""),
                .err = strdup(f->exec_err ? f->exec_err : ""),
                .exit_code = f->exec_exit_code,
        };
        return 0;
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        pthread_mutex_init(&f->stop_lock, NULL);
        sim_env_new(&f->clock, &f->sim, NULL);
        f->sim_svc = kc_sim_service(f->sim);
        f->rec_ops = (struct kc_runtime_service_ops){
                .run_pod_sandbox = rec_run_pod_sandbox,
                .stop_pod_sandbox = rec_stop_pod_sandbox,
                .pod_sandbox_status = rec_pod_sandbox_status,
                .list_pod_sandbox = rec_list_pod_sandbox,
                .create_container = rec_create_container,
                .start_container = rec_start_container,
                .stop_container = rec_stop_container,
                .list_containers = rec_list_containers,
                .container_status = rec_container_status,
                .image_status = rec_image_status,
                .pull_image = rec_pull_image,
                .exec_sync = rec_exec_sync,
        };
        f->svc = (struct kc_runtime_service){ .ops = &f->rec_ops, .self = f };
        assert_int_equal(kc_runtime_manager_new(f->svc, f->clock, &f->mgr), 0);
        assert_int_equal(kc_backoff_new(f->clock, 10 * SEC, 300 * SEC, &f->backoff), 0);
        assert_int_equal(kc_backoff_new(f->clock, KC_IMAGE_BACKOFF_INITIAL_NS,
                                        KC_IMAGE_BACKOFF_MAX_NS, &f->image_backoff),
                         0);
        f->opts = (struct kc_sync_pod_options){
                .backoff = f->backoff,
                .image_backoff = f->image_backoff,
                .on_start_result = on_start_result,
                .userdata = f,
        };
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        kc_backoff_free(f->image_backoff);
        kc_backoff_free(f->backoff);
        kc_runtime_manager_free(f->mgr);
        sim_env_free(f->clock, f->sim);
        pthread_mutex_destroy(&f->stop_lock);
        free(f);
        return 0;
}

static const char *const forever_cmd[] = { "sleep", "3600" };
static const char *const exit1_cmd[] = { "exit", "1" };
static const struct kc_label pod_annotations[] = { { "example.com/note", "hello" } };

static struct kc_api_pod make_pod(const char *uid, const char *name,
                                  const struct kc_api_container *cs, size_t n,
                                  enum kc_restart_policy rp)
{
        return (struct kc_api_pod){
                .uid = uid,
                .name = name,
                .namespace = "default",
                .deletion_grace_s = -1,
                .termination_grace_s = -1,
                .restart_policy = rp,
                .containers = cs,
                .n_containers = n,
                .annotations = pod_annotations,
                .n_annotations = 1,
        };
}

/* GetPodStatus, then SyncPod. */
static int sync_once(struct fixture *f, const struct kc_api_pod *pod, char **err)
{
        struct kc_pod_status *st = NULL;
        int r;

        assert_int_equal(kc_runtime_manager_get_pod_status(f->mgr, pod->uid, pod->name,
                                                           pod->namespace, &st, NULL),
                         0);
        r = kc_runtime_manager_sync_pod(f->mgr, pod, st, &f->opts, err);
        kc_pod_status_unref(st);
        return r;
}

static void list_pod_containers(struct fixture *f, const char *uid, struct kc_container_list *cl)
{
        struct kc_label sel = { KC_LABEL_POD_UID, uid };

        assert_int_equal(f->sim_svc.ops->list_containers(
                                 f->sim_svc.self,
                                 &(struct kc_container_filter){ .state = -1,
                                                                .label_selector = &sel,
                                                                .n_label_selector = 1 },
                                 cl, NULL),
                         0);
}

static void list_pod_sandboxes(struct fixture *f, const char *uid, struct kc_pod_sandbox_list *l)
{
        struct kc_label sel = { KC_LABEL_POD_UID, uid };

        assert_int_equal(f->sim_svc.ops->list_pod_sandbox(
                                 f->sim_svc.self,
                                 &(struct kc_pod_sandbox_filter){ .state = -1,
                                                                  .label_selector = &sel,
                                                                  .n_label_selector = 1 },
                                 l, NULL),
                         0);
}

/* The container of @name with @attempt, or NULL. */
static const struct kc_cri_container *find_c(const struct kc_container_list *cl, const char *name,
                                             uint32_t attempt)
{
        size_t i;

        for (i = 0; i < cl->n; i++)
                if (strcmp(cl->items[i].metadata.name, name) == 0 &&
                    cl->items[i].metadata.attempt == attempt)
                        return &cl->items[i];
        return NULL;
}

static void test_new_pod(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "web", .image = "nginx:1", .command = forever_cmd, .n_command = 2 },
                { .name = "side", .image = "busybox:1" },
        };
        struct kc_api_pod pod = make_pod("uid-1", "web-pod", cs, 2, KC_RESTART_POLICY_ALWAYS);
        struct kc_pod_sandbox_list sbl = { 0 };
        struct kc_container_list cl = { 0 };
        struct kc_container_status_result csr = { 0 };
        char *err = NULL, hash[17];
        size_t i;

        assert_int_equal(kc_runtime_manager_sync_pod(f->mgr, &pod, NULL, &f->opts, &err), 0);
        assert_null(err);
        /* One success per container started, in spec order. */
        assert_int_equal(f->n_results, 2);
        assert_string_equal(f->results[0].name, "web");
        assert_string_equal(f->results[1].name, "side");
        for (i = 0; i < 2; i++) {
                assert_false(f->results[i].init);
                assert_int_equal(f->results[i].r, 0);
                assert_false(f->results[i].has_reason);
                assert_false(f->results[i].has_message);
        }
        /* Policy Always (the zero value): inspected and pulled once per start, and
         * inspected again for the image's user (getImageUser). */
        assert_int_equal(sim_op_count(f->sim, "ImageStatus"), 2 * 2);
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 2);

        list_pod_sandboxes(f, "uid-1", &sbl);
        assert_int_equal(sbl.n, 1);
        assert_int_equal(sbl.items[0].state, KC_SANDBOX_STATE_READY);
        assert_string_equal(sbl.items[0].metadata.name, "web-pod");
        assert_string_equal(sbl.items[0].metadata.namespace, "default");
        assert_string_equal(sbl.items[0].metadata.uid, "uid-1");
        assert_int_equal(sbl.items[0].metadata.attempt, 0);
        assert_string_equal(
                kc__label_get(sbl.items[0].labels, sbl.items[0].n_labels, KC_LABEL_POD_NAME),
                "web-pod");
        assert_string_equal(
                kc__label_get(sbl.items[0].labels, sbl.items[0].n_labels, KC_LABEL_POD_NAMESPACE),
                "default");
        assert_string_equal(
                kc__label_get(sbl.items[0].labels, sbl.items[0].n_labels, KC_LABEL_POD_UID),
                "uid-1");
        assert_string_equal(kc__label_get(sbl.items[0].annotations, sbl.items[0].n_annotations,
                                          "example.com/note"),
                            "hello");
        kc_runtime_result_done(&sbl);

        list_pod_containers(f, "uid-1", &cl);
        assert_int_equal(cl.n, 2);
        for (i = 0; i < 2; i++) {
                const struct kc_cri_container *c = find_c(&cl, cs[i].name, 0);

                assert_non_null(c);
                assert_int_equal(
                        f->sim_svc.ops->container_status(f->sim_svc.self, c->id, &csr, NULL), 0);
                assert_int_equal(csr.status.state, KC_CONTAINER_STATE_RUNNING);
                assert_string_equal(csr.status.image, cs[i].image);
                /* CreateContainer got the pulled image's id as the ref. */
                {
                        struct kc_image_status_result ist = { 0 };

                        assert_int_equal(f->sim_svc.ops->image_status(f->sim_svc.self, cs[i].image,
                                                                      &ist, NULL),
                                         0);
                        assert_true(ist.found);
                        assert_string_equal(csr.status.image_ref, ist.image.id);
                        kc_runtime_result_done(&ist);
                }
                assert_string_equal(kc__label_get(csr.status.labels, csr.status.n_labels,
                                                  KC_LABEL_CONTAINER_NAME),
                                    cs[i].name);
                assert_string_equal(
                        kc__label_get(csr.status.labels, csr.status.n_labels, KC_LABEL_POD_NAME),
                        "web-pod");
                assert_string_equal(kc__label_get(csr.status.labels, csr.status.n_labels,
                                                  KC_LABEL_POD_NAMESPACE),
                                    "default");
                assert_string_equal(
                        kc__label_get(csr.status.labels, csr.status.n_labels, KC_LABEL_POD_UID),
                        "uid-1");
                snprintf(hash, sizeof(hash), "%" PRIx64, kc_container_spec_hash(&cs[i]));
                assert_string_equal(kc__label_get(csr.status.annotations, csr.status.n_annotations,
                                                  KC_ANNOTATION_CONTAINER_HASH),
                                    hash);
                assert_string_equal(kc__label_get(csr.status.annotations, csr.status.n_annotations,
                                                  KC_ANNOTATION_CONTAINER_RESTART_COUNT),
                                    "0");
                kc_runtime_result_done(&csr);
        }
        kc_runtime_result_done(&cl);

        /* Second sync with a fresh status: nothing to do. */
        kc_fake_clock_advance(f->clock, SEC);
        f->n_results = 0;
        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_null(err);
        assert_int_equal(f->n_results, 0); /* nothing attempted */
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 2);
        list_pod_containers(f, "uid-1", &cl);
        assert_int_equal(cl.n, 2);
        kc_runtime_result_done(&cl);
        list_pod_sandboxes(f, "uid-1", &sbl);
        assert_int_equal(sbl.n, 1);
        kc_runtime_result_done(&sbl);
        assert_int_equal(f->n_stops, 0);
}

/* With a pod logs root the kubelet creates the pod's and the container's log
 * directories before the runtime needs them; without one it creates nothing. */
static void test_log_directories(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "web", .image = "nginx:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-9", "logs", cs, 1, KC_RESTART_POLICY_ALWAYS);
        char root[] = "/tmp/kc-logs-XXXXXX", path[256];
        struct stat st;
        char *err = NULL;

        assert_non_null(mkdtemp(root));
        assert_int_equal(kc_runtime_manager_set_pod_logs_root(f->mgr, "relative"), -EINVAL);
        assert_int_equal(kc_runtime_manager_set_pod_logs_root(f->mgr, root), 0);
        assert_int_equal(kc_runtime_manager_sync_pod(f->mgr, &pod, NULL, &f->opts, &err), 0);
        snprintf(path, sizeof(path), "%s/default_logs_uid-9/web", root);
        assert_int_equal(stat(path, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_int_equal(st.st_mode & 0777, 0755);
        assert_int_equal(rmdir(path), 0);
        snprintf(path, sizeof(path), "%s/default_logs_uid-9", root);
        assert_int_equal(rmdir(path), 0);
        assert_int_equal(rmdir(root), 0);
        assert_int_equal(kc_runtime_manager_set_pod_logs_root(f->mgr, NULL), 0);
}

/* Creates @p dir/@p name as an empty file, or a directory when @p name ends in '/'. */
static void touch(const char *dir, const char *name, char (*made)[256], size_t *n)
{
        size_t len = strlen(name);

        assert_true(snprintf(made[*n], sizeof(made[*n]), "%s/%.*s", dir,
                             (int)(len - (name[len - 1] == '/')), name) < (int)sizeof(made[*n]));
        if (name[len - 1] == '/') {
                assert_int_equal(mkdir(made[*n], 0755), 0);
        } else {
                FILE *fp = fopen(made[*n], "w");

                assert_non_null(fp);
                fclose(fp);
        }
        (*n)++;
}

/*
 * Issue 17 (status continuity): when the runtime has no instance of a
 * container, its next attempt carries on from the log directory
 * (calcRestartCountByLogDir: the highest <n> of <n>.log or a rotated
 * <n>.log.<suffix>, plus one), so restartCount does not start over at 0.
 * Names the kubelet never writes are skipped.
 */
static void test_restart_count_from_log_dir(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "web", .image = "nginx:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-10", "relog", cs, 1, KC_RESTART_POLICY_ALWAYS);
        static const char *const names[] = { "0.log", "3.log",   "5.log.20261125-101500",
                                             "x.log", "12.logx", "99.log/",
                                             "8.txt", ".log",    "4294967296.log" };
        char root[] = "/tmp/kc-relog-XXXXXX", pod_dir[128], dir[192], made[16][256];
        struct kc_container_list cl = { 0 };
        size_t n = 0;
        char *err = NULL;

        assert_non_null(mkdtemp(root));
        assert_true(snprintf(pod_dir, sizeof(pod_dir), "%s/default_relog_uid-10", root) <
                    (int)sizeof(pod_dir));
        assert_true(snprintf(dir, sizeof(dir), "%s/web", pod_dir) < (int)sizeof(dir));
        assert_int_equal(mkdir(pod_dir, 0755), 0);
        assert_int_equal(mkdir(dir, 0755), 0);
        for (size_t i = 0; i < KC_ELEMENTSOF(names); i++)
                touch(dir, names[i], made, &n);
        assert_int_equal(kc_runtime_manager_set_pod_logs_root(f->mgr, root), 0);
        assert_int_equal(kc_runtime_manager_sync_pod(f->mgr, &pod, NULL, &f->opts, &err), 0);
        list_pod_containers(f, "uid-10", &cl);
        assert_int_equal(cl.n, 1);
        assert_non_null(find_c(&cl, "web", 6)); /* 5.log.<rotated> + 1 */
        kc_runtime_result_done(&cl);

        while (n > 0)
                assert_int_equal(remove(made[--n]), 0);
        assert_int_equal(rmdir(dir), 0);
        assert_int_equal(rmdir(pod_dir), 0);
        assert_int_equal(rmdir(root), 0);
        assert_int_equal(kc_runtime_manager_set_pod_logs_root(f->mgr, NULL), 0);
}

static void test_crash_loop(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "crasher", .image = "busybox:1", .command = exit1_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-2", "crash", cs, 1, KC_RESTART_POLICY_ALWAYS);
        struct kc_container_list cl = { 0 };
        char *err = NULL;

        assert_int_equal(sync_once(f, &pod, &err), 0);
        list_pod_containers(f, "uid-2", &cl);
        assert_int_equal(cl.n, 1);
        assert_non_null(find_c(&cl, "crasher", 0));
        assert_int_equal(cl.items[0].state, KC_CONTAINER_STATE_EXITED);
        kc_runtime_result_done(&cl);

        /* The first crash restarts at once (no backoff entry yet): attempt 1. */
        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_null(err);
        list_pod_containers(f, "uid-2", &cl);
        assert_int_equal(cl.n, 2);
        assert_non_null(find_c(&cl, "crasher", 1));
        assert_string_equal(kc__label_get(find_c(&cl, "crasher", 1)->annotations,
                                          find_c(&cl, "crasher", 1)->n_annotations,
                                          KC_ANNOTATION_CONTAINER_RESTART_COUNT),
                            "1");
        kc_runtime_result_done(&cl);

        /* Within 10 s: CrashLoopBackOff, upstream's message shape. */
        kc_fake_clock_advance(f->clock, 5 * SEC);
        assert_int_equal(sync_once(f, &pod, &err), -EAGAIN);
        assert_non_null(err);
        /* Issue 17: upstream's SyncResult text, the message %q-quoted. */
        assert_string_equal(err, "failed to \"StartContainer\" for \"crasher\" with "
                                 "CrashLoopBackOff: \"back-off 10s restarting failed "
                                 "container=crasher pod=crash_default(uid-2)\"");
        assert_result(f, "crasher", -EAGAIN, KC_CRASH_LOOP_BACK_OFF_REASON);
        /* Exited at T0 + 1 s, 10 s window, now T0 + 6 s. */
        assert_int_equal(result_for(f, "crasher")->retry_after, 5 * SEC);
        assert_string_equal(result_for(f, "crasher")->message,
                            "back-off 10s restarting failed container=crasher "
                            "pod=crash_default(uid-2)");
        free(err);
        err = NULL;
        list_pod_containers(f, "uid-2", &cl);
        assert_int_equal(cl.n, 2);
        kc_runtime_result_done(&cl);

        /* 10 s more: restarted, attempt 2. */
        kc_fake_clock_advance(f->clock, 10 * SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_null(err);
        list_pod_containers(f, "uid-2", &cl);
        assert_int_equal(cl.n, 3);
        assert_non_null(find_c(&cl, "crasher", 2));
        kc_runtime_result_done(&cl);

        /* And now the backoff is 20 s. */
        kc_fake_clock_advance(f->clock, 11 * SEC);
        assert_int_equal(sync_once(f, &pod, &err), -EAGAIN);
        assert_non_null(strstr(err, "back-off 20s"));
        free(err);
}

/* A back-off of one container does not stop the others. */
static void test_backoff_continues(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "a", .image = "busybox:1", .command = exit1_cmd, .n_command = 2 },
                { .name = "b", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-6", "mixed", cs, 2, KC_RESTART_POLICY_ALWAYS);
        struct kc_container_list cl = { 0 };
        struct kc_pod_status *st = NULL;
        const struct kc_cri_container *b;
        char *err = NULL;

        assert_int_equal(sync_once(f, &pod, &err), 0);
        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0); /* a restarted: attempt 1 */
        kc_fake_clock_advance(f->clock, SEC);
        /* Kill b behind the kubelet's back. */
        list_pod_containers(f, "uid-6", &cl);
        b = find_c(&cl, "b", 0);
        assert_non_null(b);
        assert_int_equal(f->sim_svc.ops->stop_container(f->sim_svc.self, b->id, 2, NULL), 0);
        kc_runtime_result_done(&cl);
        kc_fake_clock_advance(f->clock, SEC);

        assert_int_equal(kc_runtime_manager_get_pod_status(f->mgr, pod.uid, pod.name, pod.namespace,
                                                           &st, NULL),
                         0);
        assert_int_equal(kc_runtime_manager_sync_pod(f->mgr, &pod, st, &f->opts, &err), -EAGAIN);
        kc_pod_status_unref(st);
        assert_non_null(strstr(err, "container=a "));
        free(err);
        list_pod_containers(f, "uid-6", &cl);
        assert_non_null(find_c(&cl, "b", 1)); /* b restarted despite a's back-off */
        assert_null(find_c(&cl, "a", 2));
        kc_runtime_result_done(&cl);
}

static void test_never_not_restarted(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "once", .image = "busybox:1", .command = exit1_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-3", "once", cs, 1, KC_RESTART_POLICY_NEVER);
        struct kc_container_list cl = { 0 };
        char *err = NULL;

        assert_int_equal(sync_once(f, &pod, &err), 0);
        kc_fake_clock_advance(f->clock, 30 * SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_null(err);
        kc_fake_clock_advance(f->clock, 30 * SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        list_pod_containers(f, "uid-3", &cl);
        assert_int_equal(cl.n, 1);
        assert_int_equal(cl.items[0].state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(cl.items[0].metadata.attempt, 0);
        kc_runtime_result_done(&cl);
}

static void test_spec_change(void **state)
{
        struct fixture *f = *state;
        struct kc_api_container cs[] = {
                { .name = "app", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-4", "app", cs, 1, KC_RESTART_POLICY_ALWAYS);
        struct kc_container_list cl = { 0 };
        const struct kc_cri_container *c0, *c1;
        char *err = NULL;

        assert_int_equal(sync_once(f, &pod, &err), 0);
        kc_fake_clock_advance(f->clock, SEC);
        cs[0].image = "busybox:2";
        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_null(err);
        assert_int_equal(f->n_stops, 1);
        assert_int_equal(f->stop_timeouts[0], 30); /* the v1 default grace */
        list_pod_containers(f, "uid-4", &cl);
        assert_int_equal(cl.n, 2);
        c0 = find_c(&cl, "app", 0);
        c1 = find_c(&cl, "app", 1);
        assert_non_null(c0);
        assert_non_null(c1);
        assert_int_equal(c0->state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(c1->state, KC_CONTAINER_STATE_RUNNING);
        assert_string_equal(c1->image, "busybox:2");
        kc_runtime_result_done(&cl);

        /* Stable afterwards. */
        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        list_pod_containers(f, "uid-4", &cl);
        assert_int_equal(cl.n, 2);
        kc_runtime_result_done(&cl);
}

/* Issue 15: the liveness result computePodActions reads. */
static enum kc_probe_verdict liveness_failed(void *self, const char *id, bool startup)
{
        return !startup && strcmp(self, id) == 0 ? KC_PROBE_VERDICT_FAILURE : KC_PROBE_VERDICT_NONE;
}

/*
 * A liveness failure kills the container with the probe's
 * terminationGracePeriodSeconds and restarts it (restartPolicy Always).
 */
static void test_liveness_kill_probe_grace(void **state)
{
        struct fixture *f = *state;
        struct kc_api_container cs[] = {
                { .name = "app", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-4p", "live", cs, 1, KC_RESTART_POLICY_ALWAYS);
        struct kc_container_list cl = { 0 };
        char id[128];
        struct kc_probe_results_view probes = { .get = liveness_failed, .self = id };
        char *err = NULL;

        cs[0].liveness_probe = &(struct kc_api_probe){
                .present = true,
                .period_seconds = 10,
                .termination_grace_period_seconds = { .set = true, .v = 7 },
        };
        pod.termination_grace_s = 30;
        assert_int_equal(sync_once(f, &pod, &err), 0);
        list_pod_containers(f, "uid-4p", &cl);
        assert_int_equal(cl.n, 1);
        snprintf(id, sizeof(id), "%s", cl.items[0].id);
        kc_runtime_result_done(&cl);

        kc_fake_clock_advance(f->clock, SEC);
        f->opts.probes = &probes;
        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_null(err);
        assert_int_equal(f->n_stops, 1);
        assert_int_equal(f->stop_timeouts[0], 7); /* the probe's grace, not the pod's 30 */
        list_pod_containers(f, "uid-4p", &cl);
        assert_int_equal(cl.n, 2);
        assert_non_null(find_c(&cl, "app", 1));
        assert_int_equal(find_c(&cl, "app", 1)->state, KC_CONTAINER_STATE_RUNNING);
        kc_runtime_result_done(&cl);

        /* A pod being deleted: its deletion grace wins. */
        list_pod_containers(f, "uid-4p", &cl);
        snprintf(id, sizeof(id), "%s", find_c(&cl, "app", 1)->id);
        kc_runtime_result_done(&cl);
        pod.deletion_ts = T0;
        pod.deletion_grace_s = 4;
        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_int_equal(f->n_stops, 2);
        assert_int_equal(f->stop_timeouts[1], 4);
        f->opts.probes = NULL;
}

static void test_kill_pod(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "a", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
                { .name = "b", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-5", "kill", cs, 2, KC_RESTART_POLICY_ALWAYS);
        struct kc_container_list cl = { 0 };
        struct kc_pod_sandbox_list sbl = { 0 };
        char *err = NULL;
        size_t i;

        assert_int_equal(sync_once(f, &pod, &err), 0);
        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(kc_runtime_manager_kill_pod(f->mgr, &pod, NULL, 0, NULL, &err), 0);
        assert_null(err);
        assert_int_equal(f->n_stops, 2);
        assert_int_equal(f->stop_timeouts[0], 2); /* grace 0 raised to 2 */
        assert_int_equal(f->stop_timeouts[1], 2);
        list_pod_containers(f, "uid-5", &cl);
        assert_int_equal(cl.n, 2);
        for (i = 0; i < cl.n; i++)
                assert_int_equal(cl.items[i].state, KC_CONTAINER_STATE_EXITED);
        kc_runtime_result_done(&cl);
        list_pod_sandboxes(f, "uid-5", &sbl);
        assert_int_equal(sbl.n, 1);
        assert_int_equal(sbl.items[0].state, KC_SANDBOX_STATE_NOTREADY);
        kc_runtime_result_done(&sbl);
}

static void test_kill_running_pod(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "a", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-7", "krp", cs, 1, KC_RESTART_POLICY_ALWAYS);
        struct kc_pod_list pl = { 0 };
        struct kc_pod_sandbox_list sbl = { 0 };
        char *err = NULL;
        size_t i;

        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_int_equal(kc_runtime_manager_get_pods(f->mgr, false, &pl, NULL), 0);
        assert_int_equal(pl.n, 1);
        /* An orphan: no API pod, grace 5 kept as is. */
        assert_int_equal(kc_runtime_manager_kill_pod(f->mgr, NULL, pl.pods[0], 5, NULL, &err), 0);
        kc_pod_list_done(&pl);
        assert_int_equal(f->n_stops, 1);
        assert_int_equal(f->stop_timeouts[0], 5);
        list_pod_sandboxes(f, "uid-7", &sbl);
        for (i = 0; i < sbl.n; i++)
                assert_int_equal(sbl.items[i].state, KC_SANDBOX_STATE_NOTREADY);
        kc_runtime_result_done(&sbl);

        /* Sync of a dead pod (sandbox NOTREADY): a new sandbox, attempt 1. */
        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        list_pod_sandboxes(f, "uid-7", &sbl);
        assert_int_equal(sbl.n, 2);
        for (i = 0; i < sbl.n; i++)
                if (sbl.items[i].metadata.attempt == 1)
                        assert_int_equal(sbl.items[i].state, KC_SANDBOX_STATE_READY);
        kc_runtime_result_done(&sbl);
}

/* A KillPod on its own thread, for the driver to move the fake clock meanwhile. */
struct kill_call {
        struct fixture *f;
        const struct kc_api_pod *pod;
        int64_t grace_s;
        int r;
        char *err;
        atomic_bool done;
};

static void *kill_call_run(void *arg)
{
        struct kill_call *k = arg;

        k->r = kc_runtime_manager_kill_pod(k->f->mgr, k->pod, NULL, k->grace_s, NULL, &k->err);
        atomic_store(&k->done, true);
        return NULL;
}

static unsigned sim_asleep(struct fixture *f)
{
        struct kc_sim_stats st;

        assert_int_equal(kc_sim_get_stats(f->sim, &st), 0);
        return st.delayed_now;
}

/*
 * Waits until at least @p n threads sleep on the fake clock (registered
 * there, their deadlines taken: an advance from now on ends their sleeps);
 * returns whether they do. Real time bounds the wait only as a net that a
 * loaded machine does not reach (30 s): a test asserts on the condition,
 * never on how long it took.
 */
static bool sleepers_reach(struct fixture *f, size_t n)
{
        for (int i = 0; i < 30000 && kc_fake_clock_sleepers(f->clock) < n; i++)
                nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
        return kc_fake_clock_sleepers(f->clock) >= n;
}

/*
 * Issue 17 (F-SYNC-03): KillPod stops the containers in parallel, as
 * upstream's killContainersWithSyncResult. Three containers that ignore
 * SIGTERM (the sim holds each StopContainer for the 30 s grace): the kill
 * takes 30 s of clock time, not 90 s. The driver waits until the three
 * stops sleep on the clock at once (a sequential kill never gets there), then
 * advances the clock by the grace once. It waits on the clock's sleepers, not
 * on the sim's count of held calls: a call is counted before it sleeps, and
 * an advance between the two would be missed by that sleep.
 */
static void test_kill_pod_parallel(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "a", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
                { .name = "b", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
                { .name = "c", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-30", "stubborn", cs, 3, KC_RESTART_POLICY_ALWAYS);
        struct kill_call k = { .f = f, .pod = &pod, .grace_s = 30 };
        struct kc_container_list cl = { 0 };
        char *err = NULL;
        int64_t start;
        size_t base, i;
        pthread_t th;

        pod.termination_grace_s = 30;
        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_int_equal(kc_sim_inject_latency(f->sim, "StopContainer", NULL, 30 * SEC, 3), 0);
        start = kc_clock_now(f->clock);
        base = kc_fake_clock_sleepers(f->clock);
        assert_int_equal(pthread_create(&th, NULL, kill_call_run, &k), 0);
        if (!sleepers_reach(f, base + 3)) {
                /* One stop at a time: let the kill finish, then say so. */
                while (!atomic_load(&k.done)) {
                        if (kc_fake_clock_sleepers(f->clock) > base)
                                kc_fake_clock_advance(f->clock, 30 * SEC);
                        nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
                }
                pthread_join(th, NULL);
                fail_msg("KillPod did not hold its 3 StopContainer calls at once");
        }
        assert_int_equal(sim_asleep(f), 3);
        kc_fake_clock_advance(f->clock, 30 * SEC);
        pthread_join(th, NULL);
        assert_int_equal(k.r, 0);
        assert_null(k.err);
        assert_int_equal(kc_clock_now(f->clock) - start, 30 * SEC);
        assert_int_equal(f->n_stops, 3);
        for (i = 0; i < 3; i++)
                assert_int_equal(f->stop_timeouts[i], 30); /* each call: the grace */
        list_pod_containers(f, "uid-30", &cl);
        assert_int_equal(cl.n, 3);
        for (i = 0; i < cl.n; i++)
                assert_int_equal(cl.items[i].state, KC_CONTAINER_STATE_EXITED);
        kc_runtime_result_done(&cl);
}

/*
 * Issue 17: a sandbox (or a container) the runtime no longer knows is
 * stopped: NOT_FOUND does not fail the kill, as upstream's
 * crierror.IsNotFound checks. Other failures are upstream's SyncResults.
 */
static void test_kill_pod_not_found(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "a", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
                { .name = "b", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-31", "gone", cs, 2, KC_RESTART_POLICY_ALWAYS);
        char *err = NULL;

        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_int_equal(kc_sim_inject_fault_code(f->sim, "StopPodSandbox", NULL,
                                                  KC_RUNTIME_NOT_FOUND, "sandbox not found", 1),
                         0);
        assert_int_equal(kc_sim_inject_fault_code(f->sim, "StopContainer", NULL,
                                                  KC_RUNTIME_NOT_FOUND, "container not found", 1),
                         0);
        assert_int_equal(kc_runtime_manager_kill_pod(f->mgr, &pod, NULL, 0, NULL, &err), 0);
        assert_null(err);

        /* Any other failure fails the kill, every one in the error. */
        pod.uid = "uid-32";
        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_int_equal(kc_sim_inject_fault(f->sim, "StopPodSandbox", NULL, "stuck", 1), 0);
        assert_int_equal(kc_runtime_manager_kill_pod(f->mgr, &pod, NULL, 0, NULL, &err), -EIO);
        assert_string_equal(err, "failed to \"KillPodSandbox\" for \"uid-32\" with "
                                 "KillPodSandboxError: \"stuck\"");
        free(err);
        pod.uid = "uid-35";
        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_int_equal(kc_sim_inject_fault(f->sim, "StopContainer", NULL, "busy", 2), 0);
        assert_int_equal(kc_runtime_manager_kill_pod(f->mgr, &pod, NULL, 0, NULL, &err), -EIO);
        /* In container order, whichever stop finished first. */
        assert_string_equal(err, "[failed to \"KillContainer\" for \"a\" with "
                                 "KillContainerError: \"busy\", failed to \"KillContainer\" "
                                 "for \"b\" with KillContainerError: \"busy\"]");
        free(err);
}

/*
 * Issue 17: SyncPod's error is upstream's PodSyncResult.Error(): one
 * failed SyncResult as it is, several as "[a, b]", the
 * message quoted as Go's %q.
 */
static void test_sync_errors_aggregate(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "a", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
                { .name = "b", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
                { .name = "c", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-33", "agg", cs, 3, KC_RESTART_POLICY_ALWAYS);
        char *err = NULL;

        assert_int_equal(kc_sim_inject_fault(f->sim, "CreateContainer", NULL, "boom", 1), 0);
        assert_int_equal(kc_sim_inject_fault(f->sim, "StartContainer", NULL, "line1\n\"x\"\\y", 1),
                         0);
        assert_int_equal(sync_once(f, &pod, &err), -EIO); /* the first failure's code */
        assert_string_equal(err, "[failed to \"StartContainer\" for \"a\" with "
                                 "CreateContainerError: \"boom\", failed to \"StartContainer\" "
                                 "for \"b\" with RunContainerError: "
                                 "\"line1\\n\\\"x\\\"\\\\y\"]");
        free(err);

        /* A sandbox failure: its target is format.Pod, its message says what failed. */
        pod.uid = "uid-34";
        assert_int_equal(kc_sim_inject_fault(f->sim, "RunPodSandbox", NULL, "no net", 1), 0);
        assert_int_equal(sync_once(f, &pod, &err), -EIO);
        assert_string_equal(err, "failed to \"CreatePodSandbox\" for \"agg_default(uid-34)\" "
                                 "with CreatePodSandboxError: \"Failed to create pod sandbox: "
                                 "no net\"");
        free(err);
}

static const char *const true_cmd[] = { "true" };

/* One init container per sync, and the app containers only once init is done. */
static void test_init_containers(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container init[] = {
                { .name = "i1", .image = "busybox:1", .command = true_cmd, .n_command = 1 },
                { .name = "i2", .image = "busybox:1", .command = true_cmd, .n_command = 1 },
        };
        const struct kc_api_container cs[] = {
                { .name = "app", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-9", "init", cs, 1, KC_RESTART_POLICY_ALWAYS);
        struct kc_container_list cl = { 0 };
        char *err = NULL;

        pod.init_containers = init;
        pod.n_init_containers = 2;
        assert_int_equal(sync_once(f, &pod, &err), 0);
        list_pod_containers(f, "uid-9", &cl);
        assert_int_equal(cl.n, 1);
        assert_non_null(find_c(&cl, "i1", 0));
        kc_runtime_result_done(&cl);

        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        list_pod_containers(f, "uid-9", &cl);
        assert_int_equal(cl.n, 2);
        assert_non_null(find_c(&cl, "i2", 0));
        kc_runtime_result_done(&cl);

        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        list_pod_containers(f, "uid-9", &cl);
        assert_int_equal(cl.n, 3);
        assert_non_null(find_c(&cl, "app", 0));
        assert_int_equal(find_c(&cl, "app", 0)->state, KC_CONTAINER_STATE_RUNNING);
        kc_runtime_result_done(&cl);
}

/* A runtime failure is returned with a message; the other containers still start. */
static void test_create_fails(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "a", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
                { .name = "b", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-10", "fail", cs, 2, KC_RESTART_POLICY_ALWAYS);
        struct kc_container_list cl = { 0 };
        char *err = NULL;
        int r;

        assert_int_equal(kc_sim_inject_fault(f->sim, "CreateContainer", NULL, "boom", 1), 0);
        r = sync_once(f, &pod, &err);
        assert_true(r < 0);
        assert_non_null(err);
        assert_non_null(strstr(err, "CreateContainerError"));
        assert_non_null(strstr(err, "boom"));
        assert_non_null(strstr(err, "\"a\""));
        assert_string_equal(err, "failed to \"StartContainer\" for \"a\" with "
                                 "CreateContainerError: \"boom\"");
        free(err);
        assert_int_equal(f->n_results, 2);
        assert_result(f, "a", -EIO, KC_CREATE_CONTAINER_ERROR_REASON);
        assert_string_equal(result_for(f, "a")->message, "boom");
        assert_result(f, "b", 0, NULL);
        list_pod_containers(f, "uid-10", &cl);
        assert_int_equal(cl.n, 1);
        assert_non_null(find_c(&cl, "b", 0));
        kc_runtime_result_done(&cl);

        /* The next sync starts a. */
        assert_int_equal(sync_once(f, &pod, &err), 0);
        list_pod_containers(f, "uid-10", &cl);
        assert_int_equal(cl.n, 2);
        kc_runtime_result_done(&cl);

        /* A sandbox failure stops the sync. */
        assert_int_equal(kc_sim_inject_fault(f->sim, "RunPodSandbox", NULL, "no sandbox", 1), 0);
        pod.uid = "uid-11";
        r = sync_once(f, &pod, &err);
        assert_true(r < 0);
        assert_non_null(strstr(err, "CreatePodSandboxError"));
        free(err);
        list_pod_containers(f, "uid-11", &cl);
        assert_int_equal(cl.n, 0);
        kc_runtime_result_done(&cl);
}

/* StartContainer failing: RunContainerError; the created container stays created. */
static void test_run_fails(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "a", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-12", "runfail", cs, 1, KC_RESTART_POLICY_ALWAYS);
        struct kc_container_list cl = { 0 };
        char *err = NULL;

        assert_int_equal(kc_sim_inject_fault(f->sim, "StartContainer", NULL, "kaput", 1), 0);
        assert_int_equal(sync_once(f, &pod, &err), -EIO);
        assert_string_equal(err, "failed to \"StartContainer\" for \"a\" with RunContainerError: "
                                 "\"kaput\"");
        free(err);
        assert_int_equal(f->n_results, 1);
        assert_result(f, "a", -EIO, KC_RUN_CONTAINER_ERROR_REASON);
        assert_string_equal(result_for(f, "a")->message, "kaput");
        list_pod_containers(f, "uid-12", &cl);
        assert_int_equal(cl.n, 1);
        assert_int_equal(cl.items[0].state, KC_CONTAINER_STATE_CREATED);
        kc_runtime_result_done(&cl);
}

/*
 * A bad image: ErrImagePull, then ImagePullBackOff until 10 s have passed,
 * while the pod's other container starts normally.
 */
static void test_image_pull_backoff(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "good", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
                { .name = "bad", .image = "example.com/doesnotexist:1" },
        };
        struct kc_api_pod pod = make_pod("uid-13", "pull", cs, 2, KC_RESTART_POLICY_ALWAYS);
        struct kc_container_list cl = { 0 };
        char *err = NULL;

        assert_int_equal(sync_once(f, &pod, &err), -ENOENT);
        assert_string_equal(err, "failed to \"StartContainer\" for \"bad\" with ErrImagePull: "
                                 "\"failed to pull and unpack image "
                                 "\\\"example.com/doesnotexist:1\\\": failed to resolve "
                                 "reference \\\"example.com/doesnotexist:1\\\": "
                                 "example.com/doesnotexist:1: not found\"");
        free(err);
        assert_int_equal(f->n_results, 2);
        assert_result(f, "good", 0, NULL);
        assert_result(f, "bad", -ENOENT, KC_ERR_IMAGE_PULL_REASON);
        assert_non_null(strstr(result_for(f, "bad")->message, ": not found"));
        assert_int_equal(sim_op_count(f->sim, "CreateContainer"), 1); /* not for bad */
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 2);

        /* 3 s later: back-off, no pull. */
        kc_fake_clock_advance(f->clock, 3 * SEC);
        f->n_results = 0;
        assert_int_equal(sync_once(f, &pod, &err), -EAGAIN);
        assert_string_equal(err, "failed to \"StartContainer\" for \"bad\" with ImagePullBackOff: "
                                 "\"Back-off pulling image \\\"example.com/doesnotexist:1\\\"\"");
        free(err);
        assert_int_equal(f->n_results, 1);
        assert_result(f, "bad", -EAGAIN, KC_IMAGE_PULL_BACK_OFF_REASON);
        assert_string_equal(result_for(f, "bad")->message,
                            "Back-off pulling image \"example.com/doesnotexist:1\"");
        assert_int_equal(result_for(f, "bad")->retry_after, 7 * SEC);
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 2);

        /* 10 s after the failure: pulled again (and failing again). */
        kc_fake_clock_advance(f->clock, 7 * SEC);
        assert_int_equal(sync_once(f, &pod, &err), -ENOENT);
        free(err);
        assert_result(f, "bad", -ENOENT, KC_ERR_IMAGE_PULL_REASON);
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 3);

        list_pod_containers(f, "uid-13", &cl);
        assert_int_equal(cl.n, 1);
        assert_non_null(find_c(&cl, "good", 0));
        kc_runtime_result_done(&cl);
}

/* A registry outage: ErrImagePull, back-off, then the container starts once the pull works. */
static void test_image_pull_recovers(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "app",
                  .image = "registry.example.com/app:2",
                  .command = forever_cmd,
                  .n_command = 2,
                  .image_pull_policy = KC_PULL_IF_NOT_PRESENT },
        };
        struct kc_api_pod pod = make_pod("uid-14", "recover", cs, 1, KC_RESTART_POLICY_ALWAYS);
        struct kc_container_list cl = { 0 };
        char *err = NULL;

        assert_int_equal(kc_sim_inject_fault(f->sim, "PullImage", NULL, "connection refused", 1),
                         0);
        assert_int_equal(sync_once(f, &pod, &err), -EIO);
        assert_string_equal(err, "failed to \"StartContainer\" for \"app\" with ErrImagePull: "
                                 "\"connection refused\"");
        free(err);
        assert_result(f, "app", -EIO, KC_ERR_IMAGE_PULL_REASON);

        kc_fake_clock_advance(f->clock, 9 * SEC);
        assert_int_equal(sync_once(f, &pod, &err), -EAGAIN);
        free(err);
        assert_result(f, "app", -EAGAIN, KC_IMAGE_PULL_BACK_OFF_REASON);

        kc_fake_clock_advance(f->clock, 1 * SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_null(err);
        assert_result(f, "app", 0, NULL);
        list_pod_containers(f, "uid-14", &cl);
        assert_int_equal(cl.n, 1);
        assert_int_equal(cl.items[0].state, KC_CONTAINER_STATE_RUNNING);
        kc_runtime_result_done(&cl);
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 2);
}

/* Pull policies over restarts: IfNotPresent pulls once, Always on every start, Never never. */
static void test_pull_policy_restarts(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "ifnp",
                  .image = "app:1",
                  .command = exit1_cmd,
                  .n_command = 2,
                  .image_pull_policy = KC_PULL_IF_NOT_PRESENT },
                { .name = "always",
                  .image = "app:2",
                  .command = exit1_cmd,
                  .n_command = 2,
                  .image_pull_policy = KC_PULL_ALWAYS },
                { .name = "never",
                  .image = "app:3",
                  .command = exit1_cmd,
                  .n_command = 2,
                  .image_pull_policy = KC_PULL_NEVER },
        };
        struct kc_api_pod pod = make_pod("uid-15", "policy", cs, 3, KC_RESTART_POLICY_ALWAYS);
        struct kc_container_list cl = { 0 };
        char *err = NULL;

        assert_int_equal(kc_sim_add_image(f->sim, "app:3"), 0);
        /* Three starts each (the first crash restarts at once, the second after 10 s). */
        assert_int_equal(sync_once(f, &pod, &err), 0);
        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        kc_fake_clock_advance(f->clock, 11 * SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_null(err);
        assert_int_equal(f->n_results, 9);
        list_pod_containers(f, "uid-15", &cl);
        assert_int_equal(cl.n, 9);
        kc_runtime_result_done(&cl);

        /* Every start inspects, and again for the image's user (getImageUser). */
        assert_int_equal(sim_op_count(f->sim, "ImageStatus"), 9 + 9);
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 1 + 3 + 0);
}

/* Never and a missing image: ErrImageNeverPull until the image appears. */
static void test_never_pull(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "local",
                  .image = "local/tool:dev",
                  .command = forever_cmd,
                  .n_command = 2,
                  .image_pull_policy = KC_PULL_NEVER },
        };
        struct kc_api_pod pod = make_pod("uid-16", "never", cs, 1, KC_RESTART_POLICY_ALWAYS);
        char *err = NULL;

        assert_int_equal(sync_once(f, &pod, &err), -ENOENT);
        assert_string_equal(err, "failed to \"StartContainer\" for \"local\" with "
                                 "ErrImageNeverPull: \"Container image \\\"local/tool:dev\\\" "
                                 "is not present with pull policy of Never\"");
        free(err);
        assert_result(f, "local", -ENOENT, KC_ERR_IMAGE_NEVER_PULL_REASON);
        assert_string_equal(result_for(f, "local")->message,
                            "Container image \"local/tool:dev\" is not present with pull policy "
                            "of Never");
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 0);

        assert_int_equal(kc_sim_add_image(f->sim, "local/tool:dev"), 0);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_result(f, "local", 0, NULL);
        assert_int_equal(sim_op_count(f->sim, "PullImage"), 0);
}

static void test_invalid_image_name(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "x", .image = "Not/Valid Image" },
        };
        struct kc_api_pod pod = make_pod("uid-17", "badname", cs, 1, KC_RESTART_POLICY_ALWAYS);
        char *err = NULL;

        assert_int_equal(sync_once(f, &pod, &err), -EINVAL);
        assert_non_null(strstr(err, "with InvalidImageName: \"Failed to apply default image "
                                    "tag \\\"Not/Valid Image\\\""));
        free(err);
        assert_result(f, "x", -EINVAL, KC_INVALID_IMAGE_NAME_REASON);
        assert_int_equal(sim_op_count(f->sim, "ImageStatus"), 0);
        assert_int_equal(sim_op_count(f->sim, "CreateContainer"), 0);
}

/* Init containers report with init_container set; app containers wait for them. */
static void test_init_start_results(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container init[] = {
                { .name = "setup",
                  .image = "doesnotexist/setup:1",
                  .command = true_cmd,
                  .n_command = 1 },
        };
        const struct kc_api_container cs[] = {
                { .name = "app", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-18", "initimg", cs, 1, KC_RESTART_POLICY_ALWAYS);
        char *err = NULL;

        pod.init_containers = init;
        pod.n_init_containers = 1;
        assert_int_equal(sync_once(f, &pod, &err), -ENOENT);
        free(err);
        assert_int_equal(f->n_results, 1);
        assert_true(f->results[0].init);
        assert_result(f, "setup", -ENOENT, KC_ERR_IMAGE_PULL_REASON);

        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), -EAGAIN);
        free(err);
        assert_int_equal(f->n_results, 2);
        assert_true(f->results[1].init);
        assert_result(f, "setup", -EAGAIN, KC_IMAGE_PULL_BACK_OFF_REASON);
        assert_null(result_for(f, "app"));
}

/* Cancelled in the middle of a start: reported at the step that did not run. */
static void test_cancelled_mid_start(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "a", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
                { .name = "b", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-19", "midcancel", cs, 2, KC_RESTART_POLICY_ALWAYS);
        struct kc_cancel *ctx = NULL;
        char *err = NULL;

        assert_int_equal(kc_cancel_new(&ctx), 0);
        f->opts.ctx = ctx;
        f->cancel_on_pull = ctx;
        assert_int_equal(kc_runtime_manager_sync_pod(f->mgr, &pod, NULL, &f->opts, &err),
                         -ECANCELED);
        assert_string_equal(err, "context canceled");
        free(err);
        /* a was cut short before CreateContainer; b was never attempted. */
        assert_int_equal(f->n_results, 1);
        assert_result(f, "a", -ECANCELED, KC_CREATE_CONTAINER_ERROR_REASON);
        assert_string_equal(result_for(f, "a")->message, "context canceled");
        assert_int_equal(sim_op_count(f->sim, "CreateContainer"), 0);
        kc_cancel_free(ctx);
}

/* No options at all: no backoffs, no callback; still pulls and starts. */
static void test_no_options(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "a", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-20", "noopts", cs, 1, KC_RESTART_POLICY_ALWAYS);
        struct kc_container_list cl = { 0 };
        char *err = NULL;

        assert_int_equal(kc_runtime_manager_sync_pod(f->mgr, &pod, NULL, NULL, &err), 0);
        assert_null(err);
        assert_int_equal(f->n_results, 0);
        list_pod_containers(f, "uid-20", &cl);
        assert_int_equal(cl.n, 1);
        kc_runtime_result_done(&cl);
}

static uint64_t total_calls(struct fixture *f)
{
        struct kc_sim_call_count *cc = NULL;
        size_t n = 0, i;
        uint64_t t = 0;

        assert_int_equal(kc_sim_call_counts(f->sim, &cc, &n), 0);
        for (i = 0; i < n; i++)
                t += cc[i].count;
        free(cc);
        return t;
}

static void test_cancelled(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container cs[] = {
                { .name = "a", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-8", "cancel", cs, 1, KC_RESTART_POLICY_ALWAYS);
        struct kc_cancel *ctx = NULL;
        char *err = NULL;
        uint64_t before;

        assert_int_equal(kc_cancel_new(&ctx), 0);
        kc_cancel_trigger_mp(ctx);
        before = total_calls(f);
        f->opts.ctx = ctx;
        assert_int_equal(kc_runtime_manager_sync_pod(f->mgr, &pod, NULL, &f->opts, &err),
                         -ECANCELED);
        assert_int_equal(f->n_results, 0); /* nothing attempted */
        assert_string_equal(err, "context canceled");
        free(err);
        err = NULL;
        assert_int_equal(kc_runtime_manager_kill_pod(f->mgr, &pod, NULL, 0, ctx, &err), -ECANCELED);
        free(err);
        assert_int_equal(total_calls(f), before);
        kc_cancel_free(ctx);
}

static void test_invalid(void **state)
{
        struct fixture *f = *state;
        char *err = (char *)"x";

        assert_int_equal(kc_runtime_manager_sync_pod(NULL, NULL, NULL, NULL, &err), -EINVAL);
        assert_null(err);
        assert_int_equal(kc_runtime_manager_kill_pod(f->mgr, NULL, NULL, 0, NULL, NULL), -EINVAL);
}

/* ------------------------------------------------------------------------ */
/* Sidecars (KEP-753), lifecycle hooks, termination ordering                  */

/* The name of the container with runtime ID @p id in @p cl, or "". */
static const char *name_of(const struct kc_container_list *cl, const char *id)
{
        size_t i;

        for (i = 0; i < cl->n; i++)
                if (strcmp(cl->items[i].id, id) == 0)
                        return cl->items[i].metadata.name;
        return "";
}

/* A sidecar: an init container with restartPolicy Always, running @p cmd. */
static struct kc_api_container sidecar_spec(const char *name, const char *const *cmd, size_t n)
{
        return (struct kc_api_container){ .name = name,
                                          .image = "busybox:1",
                                          .command = cmd,
                                          .n_command = n,
                                          .restart_policy_always = true };
}

/* A sidecar starts first, stays running, and the app starts once it runs. */
static void test_sidecar_runs_beside_app(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container init[] = {
                sidecar_spec("side", forever_cmd, 2),
        };
        const struct kc_api_container cs[] = {
                { .name = "app", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-sc1", "sc1", cs, 1, KC_RESTART_POLICY_NEVER);
        struct kc_container_list cl = { 0 };
        char *err = NULL;

        pod.init_containers = init;
        pod.n_init_containers = 1;
        assert_int_equal(sync_once(f, &pod, &err), 0);
        list_pod_containers(f, "uid-sc1", &cl);
        assert_int_equal(cl.n, 1);
        assert_int_equal(find_c(&cl, "side", 0)->state, KC_CONTAINER_STATE_RUNNING);
        kc_runtime_result_done(&cl);
        assert_result(f, "side", 0, NULL);
        assert_true(result_for(f, "side")->init);

        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        list_pod_containers(f, "uid-sc1", &cl);
        assert_int_equal(cl.n, 2);
        assert_int_equal(find_c(&cl, "side", 0)->state, KC_CONTAINER_STATE_RUNNING);
        assert_int_equal(find_c(&cl, "app", 0)->state, KC_CONTAINER_STATE_RUNNING);
        kc_runtime_result_done(&cl);

        /* Steady: nothing more to start. */
        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        list_pod_containers(f, "uid-sc1", &cl);
        assert_int_equal(cl.n, 2);
        kc_runtime_result_done(&cl);
}

/* A sidecar that exits is restarted even in a Never pod, through its back-off. */
static void test_sidecar_restarted_never_pod(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container init[] = {
                sidecar_spec("side", exit1_cmd, 2),
        };
        const struct kc_api_container cs[] = {
                { .name = "app", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-sc2", "sc2", cs, 1, KC_RESTART_POLICY_NEVER);
        struct kc_container_list cl = { 0 };
        char *err = NULL;

        pod.init_containers = init;
        pod.n_init_containers = 1;
        assert_int_equal(sync_once(f, &pod, &err), 0);
        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0); /* first crash: at once */
        list_pod_containers(f, "uid-sc2", &cl);
        assert_non_null(find_c(&cl, "side", 1));
        assert_null(find_c(&cl, "app", 0)); /* never initialized: the sidecar never ran */
        kc_runtime_result_done(&cl);
        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), -EAGAIN);
        free(err);
        assert_result(f, "side", -EAGAIN, KC_CRASH_LOOP_BACK_OFF_REASON);
}

/* KillPod: the app containers first, then the sidecars from the last to the first. */
static void test_sidecar_kill_order(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container init[] = {
                sidecar_spec("s1", forever_cmd, 2),
                sidecar_spec("s2", forever_cmd, 2),
        };
        const struct kc_api_container cs[] = {
                { .name = "app", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-sc3", "sc3", cs, 1, KC_RESTART_POLICY_ALWAYS);
        struct kc_container_list cl = { 0 };
        char *err = NULL;
        int i;

        pod.init_containers = init;
        pod.n_init_containers = 2;
        for (i = 0; i < 3; i++) {
                assert_int_equal(sync_once(f, &pod, &err), 0);
                kc_fake_clock_advance(f->clock, SEC);
        }
        list_pod_containers(f, "uid-sc3", &cl);
        assert_int_equal(cl.n, 3);
        assert_int_equal(kc_runtime_manager_kill_pod(f->mgr, &pod, NULL, 30, NULL, &err), 0);
        assert_int_equal(f->n_stops, 3);
        assert_string_equal(name_of(&cl, f->stop_ids[0]), "app");
        assert_string_equal(name_of(&cl, f->stop_ids[1]), "s2");
        assert_string_equal(name_of(&cl, f->stop_ids[2]), "s1");
        for (i = 0; i < 3; i++)
                assert_int_equal(f->stop_timeouts[i], 30);
        kc_runtime_result_done(&cl);
}

/* A Never pod whose app is done: the pod is killed, its sidecar stopped and not restarted. */
static void test_sidecar_never_pod_completes(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_container init[] = {
                sidecar_spec("side", forever_cmd, 2),
        };
        const struct kc_api_container cs[] = {
                { .name = "app", .image = "busybox:1", .command = true_cmd, .n_command = 1 },
        };
        struct kc_api_pod pod = make_pod("uid-sc4", "sc4", cs, 1, KC_RESTART_POLICY_NEVER);
        struct kc_container_list cl = { 0 };
        struct kc_pod_sandbox_list sbl = { 0 };
        char *err = NULL;
        int i;

        pod.init_containers = init;
        pod.n_init_containers = 1;
        for (i = 0; i < 3; i++) {
                assert_int_equal(sync_once(f, &pod, &err), 0);
                kc_fake_clock_advance(f->clock, SEC);
        }
        list_pod_containers(f, "uid-sc4", &cl);
        assert_int_equal(cl.n, 2);
        assert_int_equal(f->n_stops, 1);
        assert_string_equal(name_of(&cl, f->stop_ids[0]), "side");
        assert_int_equal(find_c(&cl, "side", 0)->state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(find_c(&cl, "app", 0)->exit_code, 0);
        kc_runtime_result_done(&cl);
        list_pod_sandboxes(f, "uid-sc4", &sbl);
        assert_int_equal(sbl.items[0].state, KC_SANDBOX_STATE_NOTREADY);
        kc_runtime_result_done(&sbl);
        /* And it stays done. */
        assert_int_equal(sync_once(f, &pod, &err), 0);
        list_pod_containers(f, "uid-sc4", &cl);
        assert_int_equal(cl.n, 2);
        kc_runtime_result_done(&cl);
}

static const char *const cleanup_cmd[] = { "/bin/cleanup", "--now" };

/* preStop exec runs before StopContainer, bounded by the grace, on KillPod and on a restart. */
static void test_pre_stop_exec(void **state)
{
        struct fixture *f = *state;
        struct kc_api_lifecycle lc = { 0 };
        struct kc_api_container cs[] = {
                { .name = "app", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-ps1", "ps1", cs, 1, KC_RESTART_POLICY_ALWAYS);
        char *err = NULL;

        cs[0].lifecycle = &lc;
        lc.pre_stop = (struct kc_api_handler){ .kind = KC_HANDLER_EXEC,
                                               .command = cleanup_cmd,
                                               .n_command = 2 };
        pod.termination_grace_s = 45;
        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_int_equal(f->n_execs, 0); /* no postStart */

        /* A spec change: containers_to_kill, with the pod's grace. */
        kc_fake_clock_advance(f->clock, SEC);
        cs[0].image = "busybox:2";
        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_int_equal(f->n_execs, 1);
        assert_string_equal(f->execs[0].argv0, "/bin/cleanup");
        assert_int_equal(f->execs[0].timeout_s, 45);
        assert_int_equal(f->execs[0].n_stops_before, 0);
        assert_int_equal(f->n_stops, 1);
        assert_string_equal(f->stop_ids[0], f->execs[0].id);
        assert_int_equal(f->stop_timeouts[0], 45);

        /* KillPod with its grace override. */
        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(kc_runtime_manager_kill_pod(f->mgr, &pod, NULL, 7, NULL, &err), 0);
        assert_int_equal(f->n_execs, 2);
        assert_int_equal(f->execs[1].timeout_s, 7);
        assert_int_equal(f->execs[1].n_stops_before, 1);
        assert_int_equal(f->stop_timeouts[1], 7);

        /* A failing hook does not stop the kill. */
        f->exec_exit_code = 2;
        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0); /* new sandbox, new container */
        assert_int_equal(kc_runtime_manager_kill_pod(f->mgr, &pod, NULL, 7, NULL, &err), 0);
        assert_null(err);
        assert_int_equal(f->n_execs, 3);
        assert_int_equal(f->n_stops, 3);
}

struct kill_thread {
        struct fixture *f;
        const struct kc_api_pod *pod;
        int64_t grace;
        int r;
};

static void *kill_thread_main(void *arg)
{
        struct kill_thread *k = arg;

        k->r = kc_runtime_manager_kill_pod(k->f->mgr, k->pod, NULL, k->grace, NULL, NULL);
        return NULL;
}

/* preStop sleep: its whole seconds come off the grace; never below the 2 s minimum. */
static void test_pre_stop_sleep_grace(void **state)
{
        struct fixture *f = *state;
        struct kc_api_lifecycle lc = { 0 };
        struct kc_api_container cs[] = {
                { .name = "app", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-ps2", "ps2", cs, 1, KC_RESTART_POLICY_ALWAYS);
        struct kill_thread k = { .f = f, .pod = &pod, .grace = 30 };
        char *err = NULL;
        size_t base;
        pthread_t th;

        cs[0].lifecycle = &lc;
        lc.pre_stop = (struct kc_api_handler){ .kind = KC_HANDLER_SLEEP, .sleep_seconds = 5 };
        assert_int_equal(sync_once(f, &pod, &err), 0);
        base = kc_fake_clock_sleepers(f->clock);
        assert_int_equal(pthread_create(&th, NULL, kill_thread_main, &k), 0);
        assert_true(sleepers_reach(f, base + 1));
        assert_int_equal(f->n_stops, 0); /* the hook first */
        kc_fake_clock_advance(f->clock, 5 * SEC + SEC / 2);
        pthread_join(th, NULL);
        assert_int_equal(k.r, 0);
        assert_int_equal(f->n_stops, 1);
        assert_int_equal(f->stop_timeouts[0], 25); /* 30 - 5 (5.5 s truncated) */

        /* A hook longer than the grace is cut at the grace: 2 s are still given. */
        lc.pre_stop.sleep_seconds = 40;
        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        k.grace = 3;
        assert_int_equal(pthread_create(&th, NULL, kill_thread_main, &k), 0);
        assert_true(sleepers_reach(f, base + 1));
        kc_fake_clock_advance(f->clock, 3 * SEC);
        pthread_join(th, NULL);
        assert_int_equal(f->n_stops, 2);
        assert_int_equal(f->stop_timeouts[1], KC_MINIMUM_GRACE_PERIOD_S);
}

static const char *const touch_cmd[] = { "touch", "/x" };

/* postStart exec: success keeps the container; a failure kills it with upstream's message. */
static void test_post_start_exec(void **state)
{
        struct fixture *f = *state;
        struct kc_api_lifecycle lc = { 0 };
        struct kc_api_container cs[] = {
                { .name = "app", .image = "busybox:1", .command = forever_cmd, .n_command = 2 },
        };
        struct kc_api_pod pod = make_pod("uid-po1", "po1", cs, 1, KC_RESTART_POLICY_ALWAYS);
        struct kc_container_list cl = { 0 };
        char *err = NULL;

        cs[0].lifecycle = &lc;
        lc.post_start = (struct kc_api_handler){ .kind = KC_HANDLER_EXEC,
                                                 .command = touch_cmd,
                                                 .n_command = 2 };
        assert_int_equal(sync_once(f, &pod, &err), 0);
        assert_int_equal(f->n_execs, 1);
        assert_string_equal(f->execs[0].argv0, "touch");
        assert_int_equal(f->execs[0].timeout_s, 0); /* postStart: no bound, as upstream */
        assert_result(f, "app", 0, NULL);
        assert_int_equal(f->n_stops, 0);

        /* The hook fails: the container is killed (pod grace 30) and the start fails. */
        f->exec_exit_code = 1;
        f->exec_out = "out";
        f->exec_err = "boom";
        cs[0].image = "busybox:2";
        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), -EIO);
        assert_result(f, "app", -EIO, KC_POST_START_HOOK_ERROR_REASON);
        assert_string_equal(result_for(f, "app")->message,
                            "Exec lifecycle hook ([touch /x]) for Container \"app\" in Pod "
                            "\"po1_default(uid-po1)\" failed - error: command 'touch /x' exited "
                            "with 1: boom, message: \"outboom\"");
        assert_non_null(strstr(err, "failed to \"StartContainer\" for \"app\" with "
                                    "PostStartHookError: "));
        free(err);
        assert_int_equal(f->n_stops, 2); /* the old one (spec change), then the new one */
        assert_int_equal(f->stop_timeouts[1], 30);
        list_pod_containers(f, "uid-po1", &cl);
        assert_string_equal(name_of(&cl, f->stop_ids[1]), "app");
        assert_int_equal(find_c(&cl, "app", 1)->state, KC_CONTAINER_STATE_EXITED);
        kc_runtime_result_done(&cl);
}

/* A one-shot HTTP server on 127.0.0.1: answers 500 and keeps the request. */
struct http_server {
        int fd;
        int port;
        char req[2048];
        pthread_t th;
};

static void *http_server_main(void *arg)
{
        static const char answer[] = "HTTP/1.1 500 Internal Server Error\r\n"
                                     "Content-Length: 0\r\n\r\n";
        struct http_server *s = arg;
        struct pollfd p = { .fd = s->fd, .events = POLLIN };
        size_t got = 0;
        ssize_t n;
        int c;

        /* Nobody came within 10 s: the hook was not run; the test's asserts say so. */
        if (poll(&p, 1, 10000) != 1)
                return NULL;
        c = accept(s->fd, NULL, NULL);
        if (c < 0)
                return NULL;
        while (got < sizeof(s->req) - 1 && !strstr(s->req, "\r\n\r\n")) {
                n = read(c, s->req + got, sizeof(s->req) - 1 - got);
                if (n <= 0)
                        break;
                got += (size_t)n;
                if (s->req[0] == 0x16)
                        break; /* a TLS ClientHello: answer in plain HTTP, as such a server does */
        }
        (void)!write(c, answer, sizeof(answer) - 1);
        close(c);
        return NULL;
}

static void http_server_start(struct http_server *s)
{
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(a);

        memset(s->req, 0, sizeof(s->req));
        s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(s->fd >= 0);
        assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof(a)), 0);
        assert_int_equal(listen(s->fd, 1), 0);
        assert_int_equal(getsockname(s->fd, (struct sockaddr *)&a, &len), 0);
        s->port = ntohs(a.sin_port);
        assert_int_equal(pthread_create(&s->th, NULL, http_server_main, s), 0);
}

static void http_server_stop(struct http_server *s)
{
        pthread_join(s->th, NULL);
        close(s->fd);
}

/*
 * postStart httpGet: one GET with the handler's path and headers; any HTTP
 * answer will do (upstream looks at no status code); a port by name; a
 * refused connection fails (Go's words); HTTPS is TLS.
 */
static void test_post_start_http(void **state)
{
        struct fixture *f = *state;
        const struct kc_api_http_header hdr[] = { { "X-Test", "yes" } };
        struct kc_api_container_port ports[] = { { .name = "web" } };
        struct kc_api_lifecycle lc = { 0 };
        struct kc_api_container cs[] = {
                { .name = "app",
                  .image = "busybox:1",
                  .command = forever_cmd,
                  .n_command = 2,
                  .ports = ports,
                  .n_ports = 1 },
        };
        struct kc_api_pod pod = make_pod("uid-po2", "po2", cs, 1, KC_RESTART_POLICY_ALWAYS);
        struct http_server srv;
        char *err = NULL, want[512];

        http_server_start(&srv);
        cs[0].lifecycle = &lc;
        lc.post_start = (struct kc_api_handler){
                .kind = KC_HANDLER_HTTP_GET,
                .host = "127.0.0.1",
                .port = { .number = srv.port },
                .path = "hook",
                .headers = hdr,
                .n_headers = 1,
        };
        assert_int_equal(sync_once(f, &pod, &err), 0);
        http_server_stop(&srv);
        assert_result(f, "app", 0, NULL);
        assert_memory_equal(srv.req, "GET /hook HTTP/1.1\r\n", 20);
        assert_non_null(strstr(srv.req, "\r\nX-Test: yes\r\n"));
        assert_non_null(strstr(srv.req, "\r\nUser-Agent: kube-lifecycle/"));
        assert_non_null(strstr(srv.req, "\r\nHost: 127.0.0.1:"));

        /* By name, through the container's ports. */
        http_server_start(&srv);
        ports[0].container_port = srv.port;
        lc.post_start.port = (struct kc_api_port_ref){ .name = "web" };
        cs[0].image = "busybox:2";
        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), 0);
        http_server_stop(&srv);
        assert_result(f, "app", 0, NULL);
        assert_non_null(strstr(srv.req, "GET /hook HTTP/1.1\r\n"));

        /* Nobody listens any more: the hook fails, the container is killed. */
        cs[0].image = "busybox:3";
        kc_fake_clock_advance(f->clock, SEC);
        assert_int_equal(sync_once(f, &pod, &err), -ECONNREFUSED);
        free(err);
        snprintf(want, sizeof(want),
                 "HTTP lifecycle hook (hook) for Container \"app\" in Pod \"po2_default(uid-po2)\" "
                 "failed - error: Get \"http://127.0.0.1:%d/hook\": dial tcp 127.0.0.1:%d: "
                 "connect: connection refused",
                 srv.port, srv.port);
        assert_result(f, "app", -ECONNREFUSED, KC_POST_START_HOOK_ERROR_REASON);
        assert_string_equal(result_for(f, "app")->message, want);

        /* HTTPS (issue 15): TLS through the shared client; a plain server fails the handshake. */
        http_server_start(&srv);
        lc.post_start.port = (struct kc_api_port_ref){ .number = srv.port };
        lc.post_start.https = true;
        cs[0].image = "busybox:4";
        kc_fake_clock_advance(f->clock, SEC);
        assert_true(sync_once(f, &pod, &err) < 0);
        http_server_stop(&srv);
        free(err);
        snprintf(want, sizeof(want),
                 "failed - error: Get \"https://127.0.0.1:%d/hook\": ", srv.port);
        assert_non_null(strstr(result_for(f, "app")->message, want));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_new_pod, setup, teardown),
                cmocka_unit_test_setup_teardown(test_log_directories, setup, teardown),
                cmocka_unit_test_setup_teardown(test_restart_count_from_log_dir, setup, teardown),
                cmocka_unit_test_setup_teardown(test_crash_loop, setup, teardown),
                cmocka_unit_test_setup_teardown(test_backoff_continues, setup, teardown),
                cmocka_unit_test_setup_teardown(test_never_not_restarted, setup, teardown),
                cmocka_unit_test_setup_teardown(test_spec_change, setup, teardown),
                cmocka_unit_test_setup_teardown(test_liveness_kill_probe_grace, setup, teardown),
                cmocka_unit_test_setup_teardown(test_kill_pod, setup, teardown),
                cmocka_unit_test_setup_teardown(test_kill_running_pod, setup, teardown),
                cmocka_unit_test_setup_teardown(test_kill_pod_parallel, setup, teardown),
                cmocka_unit_test_setup_teardown(test_kill_pod_not_found, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sync_errors_aggregate, setup, teardown),
                cmocka_unit_test_setup_teardown(test_init_containers, setup, teardown),
                cmocka_unit_test_setup_teardown(test_create_fails, setup, teardown),
                cmocka_unit_test_setup_teardown(test_run_fails, setup, teardown),
                cmocka_unit_test_setup_teardown(test_image_pull_backoff, setup, teardown),
                cmocka_unit_test_setup_teardown(test_image_pull_recovers, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pull_policy_restarts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_never_pull, setup, teardown),
                cmocka_unit_test_setup_teardown(test_invalid_image_name, setup, teardown),
                cmocka_unit_test_setup_teardown(test_init_start_results, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cancelled_mid_start, setup, teardown),
                cmocka_unit_test_setup_teardown(test_no_options, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cancelled, setup, teardown),
                cmocka_unit_test_setup_teardown(test_invalid, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sidecar_runs_beside_app, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sidecar_restarted_never_pod, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sidecar_kill_order, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sidecar_never_pod_completes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pre_stop_exec, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pre_stop_sleep_grace, setup, teardown),
                cmocka_unit_test_setup_teardown(test_post_start_exec, setup, teardown),
                cmocka_unit_test_setup_teardown(test_post_start_http, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
