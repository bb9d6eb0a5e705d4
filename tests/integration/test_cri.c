/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CRI client (runtime/cri) against a real containerd 1.6: every call of
 * the runtime service, on the busybox image the setup imported, and the
 * error paths a kubelet meets (NOT_FOUND, a reserved name, UNIMPLEMENTED
 * GetContainerEvents, DEADLINE_EXCEEDED, UNAVAILABLE).
 *
 * Needs the fixture of tests/integration/CMakeLists.txt (integration.setup
 * starts containerd and records it in $KC_CONTAINERD_ENV). Facts relied on
 * are containerd 1.6.20's, observed on this machine: see each test.
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
#include <cmocka.h>

#include "core/cleanup.h"
#include "grpc.h"
#include "integ.h"
#include "runtime/container.h"
#include "runtime/cri.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"

static struct integ_env env;
static struct kc_cri *cri;
static struct kc_runtime_service svc;
static char log_root[] = "/tmp/cubelet-integ-logs.XXXXXX";

/* ------------------------------------------------------------------------ */
/* Helpers                                                                    */

#define SVC(op, ...) svc.ops->op(svc.self, __VA_ARGS__)

static const char *label_get(const struct kc_label *l, size_t n, const char *key)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(l[i].key, key) == 0)
                        return l[i].value;
        return NULL;
}

struct pod {
        char name[64];
        char uid[64];
        struct kc_label labels[3];
        struct kc_pod_sandbox_config config;
        char *id;
};

static void pod_run(struct pod *p, const char *name)
{
        struct kc_runtime_error err = { 0 };
        int r;

        integ_unique(p->name, sizeof(p->name), name);
        integ_unique(p->uid, sizeof(p->uid), "uid");
        p->config = integ_sandbox_config(&env, p->name, p->uid, 0, p->labels);
        p->config.log_directory = log_root;
        p->id = NULL;
        r = SVC(run_pod_sandbox, &p->config, &p->id, &err);
        if (r < 0)
                fail_msg("RunPodSandbox(%s): %d %s", p->name, r, err.message);
        assert_non_null(p->id);
        assert_int_equal(strlen(p->id), 64);
}

static void pod_remove(struct pod *p)
{
        struct kc_runtime_error err = { 0 };
        int r;

        r = SVC(stop_pod_sandbox, p->id, &err);
        if (r < 0)
                fail_msg("StopPodSandbox: %d %s", r, err.message);
        r = SVC(remove_pod_sandbox, p->id, &err);
        if (r < 0)
                fail_msg("RemovePodSandbox: %d %s", r, err.message);
        free(p->id);
        p->id = NULL;
}

/* The image's id as ImageStatus reports it (what the kubelet passes as ImageSpec.image). */
static char *image_id(void)
{
        struct kc_image_status_result st = { 0 };
        struct kc_runtime_error err = { 0 };
        char *id;

        if (SVC(image_status, env.image, &st, &err) < 0)
                fail_msg("ImageStatus(%s): %s", env.image, err.message);
        assert_true(st.found);
        id = strdup(st.image.id);
        assert_non_null(id);
        kc_runtime_result_done(&st);
        return id;
}

/* CreateContainer with @p cmd (NULL-terminated); returns the id. */
static char *create(struct pod *p, const char *name, uint32_t attempt, const char *log_path,
                    const char *const *cmd, struct kc_runtime_error *ret_err, int *ret_r)
{
        _cleanup_free_ char *img = image_id();
        struct kc_label labels[] = {
                { INTEG_LABEL, env.run },
                { KC_LABEL_POD_UID, p->uid },
                { KC_LABEL_CONTAINER_NAME, name },
        };
        struct kc_label annotations[] = { { "cubelet.test/annotation", "yes" } };
        size_t n = 0;

        while (cmd[n])
                n++;
        struct kc_container_config cc = {
                .metadata = { .name = name, .attempt = attempt },
                .image = img,
                .user_specified_image = env.image,
                .command = cmd,
                .n_command = n,
                .log_path = log_path,
                .labels = labels,
                .n_labels = 3,
                .annotations = annotations,
                .n_annotations = 1,
        };
        struct kc_runtime_error err = { 0 };
        char *id = NULL;
        int r = SVC(create_container, p->id, &cc, &p->config, &id, ret_err ? ret_err : &err);

        if (ret_r) {
                *ret_r = r;
                return r < 0 ? NULL : id;
        }
        if (r < 0)
                fail_msg("CreateContainer(%s): %d %s", name, r, err.message);
        return id;
}

static char *create_and_start(struct pod *p, const char *name, const char *const *cmd)
{
        struct kc_runtime_error err = { 0 };
        char *id = create(p, name, 0, NULL, cmd, NULL, NULL);
        int r = SVC(start_container, id, &err);

        if (r < 0)
                fail_msg("StartContainer(%s): %d %s", name, r, err.message);
        return id;
}

static const char *const cmd_sleep[] = { "sleep", "1000000", NULL };

/* ------------------------------------------------------------------------ */
/* Tests                                                                      */

static void test_version(void **state)
{
        struct kc_version_result v = { 0 };
        struct kc_runtime_error err = { 0 };

        (void)state;
        if (SVC(version, &v, &err) < 0)
                fail_msg("Version: %s", err.message);
        assert_string_equal(v.runtime_name, "containerd");
        assert_string_equal(v.runtime_api_version, "v1");
        assert_non_null(v.version);
        assert_true(strlen(v.runtime_version) > 0);
        printf("runtime %s %s, CRI %s (version %s)\n", v.runtime_name, v.runtime_version,
               v.runtime_api_version, v.version);
        kc_runtime_result_done(&v);
}

static void test_status(void **state)
{
        struct kc_runtime_status_result st = { 0 };
        struct kc_runtime_error err = { 0 };
        int runtime_ready = -1, network_ready = -1;

        (void)state;
        if (SVC(status, &st, &err) < 0)
                fail_msg("Status: %s", err.message);
        for (size_t i = 0; i < st.n_conditions; i++) {
                const struct kc_runtime_condition *c = &st.conditions[i];

                if (strcmp(c->type, "RuntimeReady") == 0)
                        runtime_ready = c->status;
                else if (strcmp(c->type, "NetworkReady") == 0) {
                        network_ready = c->status;
                        /* 1.6 without CNI config: "NetworkPluginNotReady". */
                        if (!env.cni) {
                                assert_non_null(c->reason);
                                assert_true(strlen(c->reason) > 0);
                        }
                }
        }
        assert_int_equal(runtime_ready, 1);
        assert_int_equal(network_ready, env.cni ? 1 : 0);
        kc_runtime_result_done(&st);
}

static void test_image_status(void **state)
{
        struct kc_image_status_result st = { 0 };
        struct kc_runtime_error err = { 0 };
        bool tagged = false;

        (void)state;
        if (SVC(image_status, env.image, &st, &err) < 0)
                fail_msg("ImageStatus(%s): %s", env.image, err.message);
        assert_true(st.found);
        assert_non_null(st.image.id);
        assert_int_equal(strncmp(st.image.id, "sha256:", 7), 0);
        assert_int_equal(strlen(st.image.id), 7 + 64);
        for (size_t i = 0; i < st.image.n_repo_tags; i++)
                tagged |= strcmp(st.image.repo_tags[i], env.image) == 0;
        assert_true(tagged);
        assert_true(st.image.size > 100 * 1024); /* busybox-static is ~2 MB */

        /* By id too. */
        _cleanup_free_ char *id = strdup(st.image.id);
        kc_runtime_result_done(&st);
        if (SVC(image_status, id, &st, &err) < 0)
                fail_msg("ImageStatus(%s): %s", id, err.message);
        assert_true(st.found);
        assert_string_equal(st.image.id, id);
        kc_runtime_result_done(&st);
}

static void test_image_status_not_found(void **state)
{
        struct kc_image_status_result st = { 0 };
        struct kc_runtime_error err = { 0 };

        (void)state;
        /* Absent is a success with no image (CRI's nil Image). */
        assert_int_equal(SVC(image_status, "localhost/cubelet/absent:1", &st, &err), 0);
        assert_false(st.found);
        kc_runtime_result_done(&st);
}

static void test_pull_image_failure(void **state)
{
        struct kc_runtime_error err = { 0 };
        char *ref = NULL;
        int64_t t0 = kc_test_mono_ms();
        int r;

        (void)state;
        /* No registry answers on localhost:443: the pull fails, quickly. */
        r = SVC(pull_image, "localhost/cubelet/doesnotexist:1", NULL, &ref, &err);
        assert_true(r < 0);
        assert_null(ref);
        assert_int_not_equal(err.code, KC_RUNTIME_OK);
        assert_true(strlen(err.message) > 0);
        printf("PullImage failed in %" PRId64 " ms: code %d, %s\n", kc_test_mono_ms() - t0,
               err.code, err.message);
        assert_true(kc_test_mono_ms() - t0 < 30000);
}

static void test_sandbox_lifecycle(void **state)
{
        struct kc_pod_sandbox_status_result st = { 0 };
        struct kc_pod_sandbox_list l = { 0 };
        struct kc_runtime_error err = { 0 };
        struct pod p, other;
        struct kc_label sel[] = { { INTEG_LABEL, env.run }, { KC_LABEL_POD_UID, NULL } };
        struct kc_pod_sandbox_filter f;

        (void)state;
        pod_run(&p, "lifecycle");
        pod_run(&other, "other");
        sel[1].value = p.uid;

        if (SVC(pod_sandbox_status, p.id, &st, &err) < 0)
                fail_msg("PodSandboxStatus: %s", err.message);
        assert_string_equal(st.status.id, p.id);
        assert_int_equal(st.status.state, KC_SANDBOX_STATE_READY);
        assert_string_equal(st.status.metadata.name, p.name);
        assert_string_equal(st.status.metadata.uid, p.uid);
        assert_string_equal(st.status.metadata.namespace, "integ");
        assert_int_equal(st.status.metadata.attempt, 0);
        assert_true(st.status.created_at > 0);
        assert_string_equal(label_get(st.status.labels, st.status.n_labels, KC_LABEL_POD_UID),
                            p.uid);
        kc_runtime_result_done(&st);

        /* Filters: by id, by labels, by state. */
        f = (struct kc_pod_sandbox_filter){ .id = p.id, .state = -1 };
        assert_int_equal(SVC(list_pod_sandbox, &f, &l, &err), 0);
        assert_int_equal(l.n, 1);
        assert_string_equal(l.items[0].id, p.id);
        assert_string_equal(l.items[0].metadata.uid, p.uid);
        kc_runtime_result_done(&l);

        f = (struct kc_pod_sandbox_filter){ .state = -1,
                                            .label_selector = sel,
                                            .n_label_selector = 1 };
        assert_int_equal(SVC(list_pod_sandbox, &f, &l, &err), 0);
        assert_int_equal(l.n, 2);
        kc_runtime_result_done(&l);

        f.n_label_selector = 2;
        assert_int_equal(SVC(list_pod_sandbox, &f, &l, &err), 0);
        assert_int_equal(l.n, 1);
        assert_string_equal(l.items[0].id, p.id);
        kc_runtime_result_done(&l);

        f.state = KC_SANDBOX_STATE_READY;
        assert_int_equal(SVC(list_pod_sandbox, &f, &l, &err), 0);
        assert_int_equal(l.n, 1);
        kc_runtime_result_done(&l);
        f.state = KC_SANDBOX_STATE_NOTREADY;
        assert_int_equal(SVC(list_pod_sandbox, &f, &l, &err), 0);
        assert_int_equal(l.n, 0);
        kc_runtime_result_done(&l);

        /* Stop: NOTREADY; a second stop is OK (idempotent). */
        if (SVC(stop_pod_sandbox, p.id, &err) < 0)
                fail_msg("StopPodSandbox: %s", err.message);
        assert_int_equal(SVC(stop_pod_sandbox, p.id, &err), 0);
        assert_int_equal(SVC(pod_sandbox_status, p.id, &st, &err), 0);
        assert_int_equal(st.status.state, KC_SANDBOX_STATE_NOTREADY);
        kc_runtime_result_done(&st);
        assert_int_equal(SVC(list_pod_sandbox, &f, &l, &err), 0);
        assert_int_equal(l.n, 1);
        kc_runtime_result_done(&l);

        /* Remove: gone (NOT_FOUND); a second remove is OK. */
        if (SVC(remove_pod_sandbox, p.id, &err) < 0)
                fail_msg("RemovePodSandbox: %s", err.message);
        assert_int_equal(SVC(pod_sandbox_status, p.id, &st, &err), -ENOENT);
        assert_int_equal(err.code, KC_RUNTIME_NOT_FOUND);
        assert_int_equal(SVC(remove_pod_sandbox, p.id, &err), 0);
        f = (struct kc_pod_sandbox_filter){ .id = p.id, .state = -1 };
        assert_int_equal(SVC(list_pod_sandbox, &f, &l, &err), 0);
        assert_int_equal(l.n, 0);
        kc_runtime_result_done(&l);
        free(p.id);

        pod_remove(&other);
}

static void test_container_exit_code(void **state)
{
        static const char *const cmd[] = { "sh", "-c", "echo hello from busybox; exit 3", NULL };
        struct kc_container_status_result st = { 0 };
        struct kc_container_list l = { 0 };
        struct kc_runtime_error err = { 0 };
        struct kc_container_filter f;
        char path[512], line[256];
        struct pod p;
        char *id;
        int r;

        (void)state;
        pod_run(&p, "exit3");
        snprintf(path, sizeof(path), "%s/exit3", log_root);
        assert_int_equal(mkdir(path, 0755), 0);
        id = create(&p, "exit3", 0, "exit3/0.log", cmd, NULL, NULL);

        assert_int_equal(SVC(container_status, id, &st, &err), 0);
        assert_int_equal(st.status.state, KC_CONTAINER_STATE_CREATED);
        assert_string_equal(st.status.metadata.name, "exit3");
        assert_int_equal(st.status.metadata.attempt, 0);
        assert_true(st.status.created_at > 0);
        assert_int_equal(st.status.started_at, 0);
        kc_runtime_result_done(&st);

        r = SVC(start_container, id, &err);
        if (r < 0)
                fail_msg("StartContainer: %d %s", r, err.message);
        r = integ_wait_container_state(svc, id, KC_CONTAINER_STATE_EXITED, 10000, &st);
        assert_int_equal(r, KC_CONTAINER_STATE_EXITED);
        assert_string_equal(st.status.id, id);
        assert_int_equal(st.status.exit_code, 3);
        assert_string_equal(st.status.reason, "Error");
        assert_true(st.status.started_at > 0);
        assert_true(st.status.finished_at > 0);
        assert_non_null(st.status.image_ref);
        assert_true(strlen(st.status.image_ref) > 0);
        assert_string_equal(label_get(st.status.labels, st.status.n_labels, INTEG_LABEL), env.run);
        assert_string_equal(label_get(st.status.annotations, st.status.n_annotations,
                                      "cubelet.test/annotation"),
                            "yes");
        kc_runtime_result_done(&st);

        /* The CRI log: "<RFC 3339 time> stdout F hello from busybox". */
        snprintf(path, sizeof(path), "%s/exit3/0.log", log_root);
        FILE *logf = fopen(path, "re");
        assert_non_null(logf);
        assert_non_null(fgets(line, sizeof(line), logf));
        fclose(logf);
        assert_non_null(strstr(line, " stdout F hello from busybox"));

        /* ListContainers: by sandbox, by id, by state, by label. */
        f = (struct kc_container_filter){ .pod_sandbox_id = p.id, .state = -1 };
        assert_int_equal(SVC(list_containers, &f, &l, &err), 0);
        assert_int_equal(l.n, 1);
        assert_string_equal(l.items[0].id, id);
        assert_string_equal(l.items[0].pod_sandbox_id, p.id);
        assert_int_equal(l.items[0].state, KC_CONTAINER_STATE_EXITED);
        assert_string_equal(l.items[0].metadata.name, "exit3");
        kc_runtime_result_done(&l);
        f = (struct kc_container_filter){ .id = id, .state = KC_CONTAINER_STATE_EXITED };
        assert_int_equal(SVC(list_containers, &f, &l, &err), 0);
        assert_int_equal(l.n, 1);
        kc_runtime_result_done(&l);
        f.state = KC_CONTAINER_STATE_RUNNING;
        assert_int_equal(SVC(list_containers, &f, &l, &err), 0);
        assert_int_equal(l.n, 0);
        kc_runtime_result_done(&l);
        struct kc_label sel = { KC_LABEL_POD_UID, p.uid };
        f = (struct kc_container_filter){ .state = -1,
                                          .label_selector = &sel,
                                          .n_label_selector = 1 };
        assert_int_equal(SVC(list_containers, &f, &l, &err), 0);
        assert_int_equal(l.n, 1);
        kc_runtime_result_done(&l);

        /* Remove: gone, NOT_FOUND after; a second remove is OK. */
        if (SVC(remove_container, id, &err) < 0)
                fail_msg("RemoveContainer: %s", err.message);
        assert_int_equal(SVC(container_status, id, &st, &err), -ENOENT);
        assert_int_equal(err.code, KC_RUNTIME_NOT_FOUND);
        assert_int_equal(SVC(remove_container, id, &err), 0);
        free(id);
        pod_remove(&p);
}

static void test_container_stop(void **state)
{
        struct kc_container_status_result st = { 0 };
        struct kc_container_list l = { 0 };
        struct kc_runtime_error err = { 0 };
        struct kc_container_filter f;
        struct pod p;
        int64_t t0, took;
        char *id;
        int r;

        (void)state;
        pod_run(&p, "sleeper");
        id = create_and_start(&p, "sleep", cmd_sleep);
        r = integ_wait_container_state(svc, id, KC_CONTAINER_STATE_RUNNING, 5000, &st);
        assert_int_equal(r, KC_CONTAINER_STATE_RUNNING);
        assert_true(st.status.started_at > 0);
        assert_int_equal(st.status.finished_at, 0);
        kc_runtime_result_done(&st);

        f = (struct kc_container_filter){ .pod_sandbox_id = p.id,
                                          .state = KC_CONTAINER_STATE_RUNNING };
        assert_int_equal(SVC(list_containers, &f, &l, &err), 0);
        assert_int_equal(l.n, 1);
        assert_string_equal(l.items[0].id, id);
        kc_runtime_result_done(&l);

        /* A second start of a running container fails (UNKNOWN, "...RUNNING state"). */
        assert_true(SVC(start_container, id, &err) < 0);

        /* sleep is PID 1 and ignores SIGTERM: SIGKILL after the 1 s grace, 137. */
        t0 = kc_test_mono_ms();
        r = SVC(stop_container, id, 1, &err);
        took = kc_test_mono_ms() - t0;
        if (r < 0)
                fail_msg("StopContainer: %d %s", r, err.message);
        printf("StopContainer(timeout 1 s) of sleep took %" PRId64 " ms\n", took);
        assert_true(took >= 900);
        assert_int_equal(SVC(container_status, id, &st, &err), 0);
        assert_int_equal(st.status.state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(st.status.exit_code, 137);
        assert_string_equal(st.status.reason, "Error");
        kc_runtime_result_done(&st);
        /* Idempotent. */
        assert_int_equal(SVC(stop_container, id, 1, &err), 0);

        assert_int_equal(SVC(remove_container, id, &err), 0);
        free(id);
        pod_remove(&p);
}

/* StopPodSandbox kills its running containers; RemovePodSandbox removes them. */
static void test_stop_sandbox_kills_containers(void **state)
{
        struct kc_container_status_result st = { 0 };
        struct kc_container_list l = { 0 };
        struct kc_runtime_error err = { 0 };
        struct kc_container_filter f;
        struct pod p;
        char *id;

        (void)state;
        pod_run(&p, "stopsb");
        id = create_and_start(&p, "sleep", cmd_sleep);
        assert_int_equal(
                integ_wait_container_state(svc, id, KC_CONTAINER_STATE_RUNNING, 5000, NULL),
                KC_CONTAINER_STATE_RUNNING);
        assert_int_equal(SVC(stop_pod_sandbox, p.id, &err), 0);
        assert_int_equal(SVC(container_status, id, &st, &err), 0);
        assert_int_equal(st.status.state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(st.status.exit_code, 137);
        kc_runtime_result_done(&st);
        assert_int_equal(SVC(remove_pod_sandbox, p.id, &err), 0);
        f = (struct kc_container_filter){ .pod_sandbox_id = p.id, .state = -1 };
        assert_int_equal(SVC(list_containers, &f, &l, &err), 0);
        assert_int_equal(l.n, 0);
        kc_runtime_result_done(&l);
        assert_int_equal(SVC(container_status, id, &st, &err), -ENOENT);
        free(id);
        free(p.id);
}

static void test_not_found(void **state)
{
        static const char unknown[] =
                "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        struct kc_container_status_result cst = { 0 };
        struct kc_pod_sandbox_status_result sst = { 0 };
        struct kc_runtime_error err = { 0 };

        (void)state;
        assert_int_equal(SVC(container_status, unknown, &cst, &err), -ENOENT);
        assert_int_equal(err.code, KC_RUNTIME_NOT_FOUND);
        assert_true(strlen(err.message) > 0);
        memset(&err, 0, sizeof(err));
        assert_int_equal(SVC(pod_sandbox_status, unknown, &sst, &err), -ENOENT);
        assert_int_equal(err.code, KC_RUNTIME_NOT_FOUND);
        memset(&err, 0, sizeof(err));
        assert_int_equal(SVC(start_container, unknown, &err), -ENOENT);
        assert_int_equal(err.code, KC_RUNTIME_NOT_FOUND);
}

static void test_name_reserved(void **state)
{
        struct kc_runtime_error err = { 0 };
        struct pod p;
        char *id1, *id2;
        char *sb2 = NULL;
        int r;

        (void)state;
        pod_run(&p, "reserved");
        id1 = create(&p, "dup", 0, NULL, cmd_sleep, NULL, NULL);
        /* Same (name, attempt) in the same sandbox: UNKNOWN "failed to reserve
         * container name ...: name ... is reserved for <id1>". */
        id2 = create(&p, "dup", 0, NULL, cmd_sleep, &err, &r);
        assert_null(id2);
        assert_true(r < 0);
        assert_int_equal(err.code, KC_RUNTIME_UNKNOWN);
        assert_non_null(strstr(err.message, "reserve"));
        assert_non_null(strstr(err.message, id1));
        /* A new attempt is fine. */
        id2 = create(&p, "dup", 1, NULL, cmd_sleep, NULL, NULL);
        assert_string_not_equal(id1, id2);

        /* RunPodSandbox with the same metadata: reserved as well. */
        memset(&err, 0, sizeof(err));
        r = SVC(run_pod_sandbox, &p.config, &sb2, &err);
        assert_true(r < 0);
        assert_null(sb2);
        assert_non_null(strstr(err.message, "reserve"));

        free(id1);
        free(id2);
        pod_remove(&p);
}

struct events_probe {
        atomic_int closed;
        atomic_int events;
        int r;
        struct kc_runtime_error err;
};

static void probe_on_event(void *ud, const struct kc_container_event *ev)
{
        struct events_probe *p = ud;

        (void)ev;
        atomic_fetch_add(&p->events, 1);
}

static void probe_on_close(void *ud, int r, const struct kc_runtime_error *err)
{
        struct events_probe *p = ud;

        p->r = r;
        if (err)
                p->err = *err;
        atomic_store(&p->closed, 1);
}

/*
 * containerd 1.7 streams the events of a sandbox it starts, and the stream
 * stays open.
 */
static void container_events_stream(void)
{
        struct events_probe probe = { 0 };
        struct kc_runtime_error err = { 0 };
        struct kc_cri_events *ev = NULL;
        struct pod p;
        int r;

        r = kc_cri_get_container_events(cri, probe_on_event, probe_on_close, &probe, &ev, &err);
        if (r < 0)
                fail_msg("GetContainerEvents did not open: %d %s", r, err.message);
        kc_test_sleep_ms(500);
        pod_run(&p, "events");
        assert_true(KC_TEST_WAIT_UNTIL(atomic_load(&probe.events) >= 2, 5000));
        assert_false(atomic_load(&probe.closed));
        pod_remove(&p);
        kc_cri_events_close(ev);
}

/* containerd 1.6 does not implement GetContainerEvents: the stream ends at once; 1.7 streams. */
static void test_get_container_events(void **state)
{
        struct events_probe probe = { 0 };
        struct kc_runtime_error err = { 0 };
        struct kc_cri_events *ev = NULL;
        int r;

        (void)state;
        if (strcmp(env.version, "1.6") != 0) {
                container_events_stream();
                return;
        }
        r = kc_cri_get_container_events(cri, probe_on_event, probe_on_close, &probe, &ev, &err);
        if (r < 0)
                fail_msg("GetContainerEvents did not open: %d %s", r, err.message);
        assert_true(KC_TEST_WAIT_UNTIL(atomic_load(&probe.closed), 5000));
        assert_int_equal(probe.r, -EOPNOTSUPP);
        assert_int_equal(probe.err.code, KC_RUNTIME_UNIMPLEMENTED);
        assert_int_equal(atomic_load(&probe.events), 0);
        kc_cri_events_close(ev);

        /* The connection is still good for unary calls. */
        struct kc_version_result v = { 0 };
        assert_int_equal(SVC(version, &v, &err), 0);
        kc_runtime_result_done(&v);
}

/* StopContainerRequest{container_id = 1, timeout = 2}, encoded by hand. */
static size_t encode_stop_request(uint8_t *buf, const char *id, int64_t timeout_s)
{
        size_t n = 0, len = strlen(id);

        buf[n++] = (1 << 3) | 2;
        buf[n++] = (uint8_t)len; /* ids are 64 bytes: a one-byte varint */
        memcpy(buf + n, id, len);
        n += len;
        buf[n++] = (2 << 3) | 0;
        for (uint64_t v = (uint64_t)timeout_s;; v >>= 7) {
                buf[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
                if (v <= 0x7f)
                        break;
        }
        return n;
}

/*
 * A deadline shorter than the call. StopContainer with a 30 s grace on a
 * sleep (PID 1 ignores SIGTERM) blocks in containerd for 30 s; with a 300 ms
 * deadline the call must fail after about 300 ms. The CRI client always
 * gives StopContainer grace + request timeout (as the kubelet), so the short
 * deadline is set on the gRPC transport below it; the client's own deadline
 * is checked with a 1 ms request timeout on StopContainer(0), which no round
 * trip to containerd can meet.
 *
 * The deadline travels as grpc-timeout too, so containerd's handler sees it
 * expire at the same moment as the client: either side may end the call.
 * The client's timer gives DEADLINE_EXCEEDED; containerd answers
 * DEADLINE_EXCEEDED, or UNKNOWN "... context deadline exceeded" when the
 * context error came back through its shim (seen about once in 15 runs with
 * the 1 ms deadline). All three are the deadline at work.
 */
static void assert_deadline(int r, const struct kc_runtime_error *err, int64_t took_ms,
                            const char *what)
{
        printf("%s: %d after %" PRId64 " ms (code %d: %s)\n", what, r, took_ms, err->code,
               err->message);
        if (r == -ETIMEDOUT && err->code == KC_RUNTIME_DEADLINE_EXCEEDED)
                return;
        if (r == -EIO && err->code == KC_RUNTIME_UNKNOWN &&
            strstr(err->message, "context deadline exceeded"))
                return;
        fail_msg("%s: want DEADLINE_EXCEEDED, got %d code %d: %s", what, r, err->code,
                 err->message);
}

static void test_deadline_exceeded(void **state)
{
        _cleanup_(kc_cri_freep) struct kc_cri *quick = NULL;
        struct kc_grpc_client *g = NULL;
        struct kc_runtime_error err = { 0 };
        struct kc_runtime_service qs;
        uint8_t req[128], *resp = NULL;
        size_t req_len, resp_len = 0;
        struct pod p;
        int64_t t0, took;
        char *id;
        int r;

        (void)state;
        pod_run(&p, "deadline");
        id = create_and_start(&p, "sleep", cmd_sleep);
        assert_int_equal(
                integ_wait_container_state(svc, id, KC_CONTAINER_STATE_RUNNING, 5000, NULL),
                KC_CONTAINER_STATE_RUNNING);

        /* The transport: 300 ms deadline on a call containerd holds for 30 s. */
        assert_int_equal(kc_grpc_client_new(env.sock, &g), 0);
        req_len = encode_stop_request(req, id, 30);
        t0 = kc_test_mono_ms();
        r = kc_grpc_unary(g, "/runtime.v1.RuntimeService/StopContainer", req, req_len,
                          300 * KC_NSEC_PER_MSEC, NULL, &resp, &resp_len, &err);
        took = kc_test_mono_ms() - t0;
        assert_deadline(r, &err, took, "transport: StopContainer(grace 30 s), deadline 300 ms");
        assert_null(resp);
        assert_true(took >= 250);
        assert_true(took < 300 + 1500 * kc_test_timeout_multiplier());
        kc_grpc_client_free(g);

        /* The CRI client: request timeout 1 ms. */
        assert_int_equal(kc_cri_new(env.endpoint, KC_NSEC_PER_MSEC, &quick), 0);
        qs = kc_cri_service(quick);
        memset(&err, 0, sizeof(err));
        t0 = kc_test_mono_ms();
        r = qs.ops->stop_container(qs.self, id, 0, &err);
        took = kc_test_mono_ms() - t0;
        assert_deadline(r, &err, took, "client: StopContainer(0), request timeout 1 ms");
        assert_true(took < 1000 * kc_test_timeout_multiplier());

        /* The main client still works and stops it. */
        assert_int_equal(SVC(stop_container, id, 0, &err), 0);
        assert_int_equal(integ_wait_container_state(svc, id, KC_CONTAINER_STATE_EXITED, 5000, NULL),
                         KC_CONTAINER_STATE_EXITED);
        free(id);
        pod_remove(&p);
}

/* A socket nobody listens on: UNAVAILABLE at once, and again on a retry. */
static void test_unavailable(void **state)
{
        _cleanup_(kc_cri_freep) struct kc_cri *c = NULL;
        struct kc_version_result v = { 0 };
        struct kc_runtime_error err = { 0 };
        struct kc_runtime_service s;
        char ep[512];
        int64_t t0;

        (void)state;
        snprintf(ep, sizeof(ep), "unix://%s/nobody.sock", log_root);
        assert_int_equal(kc_cri_new(ep, 10 * KC_NSEC_PER_SEC, &c), 0);
        s = kc_cri_service(c);
        for (int i = 0; i < 2; i++) {
                t0 = kc_test_mono_ms();
                assert_int_equal(s.ops->version(s.self, &v, &err), -ECONNREFUSED);
                assert_int_equal(err.code, KC_RUNTIME_UNAVAILABLE);
                assert_true(kc_test_mono_ms() - t0 < 2000);
        }
}

/* Calls from several threads share the one connection. */
struct worker {
        pthread_t t;
        int failures;
};

static void *worker_main(void *arg)
{
        struct worker *w = arg;

        for (int i = 0; i < 25; i++) {
                struct kc_version_result v = { 0 };
                struct kc_pod_sandbox_list l = { 0 };
                struct kc_runtime_error err = { 0 };
                struct kc_pod_sandbox_filter f = { .state = -1 };

                if (svc.ops->version(svc.self, &v, &err) < 0 ||
                    strcmp(v.runtime_name, "containerd") != 0)
                        w->failures++;
                kc_runtime_result_done(&v);
                if (svc.ops->list_pod_sandbox(svc.self, &f, &l, &err) < 0)
                        w->failures++;
                kc_runtime_result_done(&l);
        }
        return NULL;
}

static void test_concurrent_calls(void **state)
{
        struct worker w[8] = { 0 };

        (void)state;
        for (size_t i = 0; i < 8; i++)
                assert_int_equal(pthread_create(&w[i].t, NULL, worker_main, &w[i]), 0);
        for (size_t i = 0; i < 8; i++) {
                pthread_join(w[i].t, NULL);
                assert_int_equal(w[i].failures, 0);
        }
}

/* ------------------------------------------------------------------------ */

/* ExecSync of @p argv (NULL-terminated) in @p id: its return value; @p x filled on success. */
static int exec_v(const char *id, int64_t timeout_s, const char *const *argv,
                  struct kc_exec_sync_result *x, struct kc_runtime_error *err)
{
        size_t argc = 0;

        while (argv[argc])
                argc++;
        return SVC(exec_sync, id, argv, argc, timeout_s, x, err);
}

/* ExecSync that must succeed with @p code: its stdout (malloc'd). */
static char *exec_ok(const char *id, int32_t code, const char *const *argv)
{
        struct kc_exec_sync_result x = { 0 };
        struct kc_runtime_error err = { 0 };
        char *out;
        int r = exec_v(id, 10, argv, &x, &err);

        if (r < 0)
                fail_msg("ExecSync(%s): %d %s", argv[0], r, err.message);
        if (x.exit_code != code)
                fail_msg("ExecSync(%s %s): exit %d, stderr %s", argv[0], argv[1] ? argv[1] : "",
                         x.exit_code, x.err);
        out = x.out;
        x.out = NULL;
        kc_exec_sync_result_done(&x);
        return out;
}

#define EXEC_OK(id, code, ...) exec_ok((id), (code), (const char *const[]){ __VA_ARGS__, NULL })

/* ExecSync: exit code, stdout, stderr, the timeout, a container that is not running. */
static void test_exec_sync(void **state)
{
        static const char *const sh_err[] = { "sh", "-c", "echo out; echo err >&2; exit 7", NULL };
        static const char *const sleep10[] = { "sleep", "10", NULL };
        struct kc_exec_sync_result x = { 0 };
        struct kc_runtime_error err = { 0 };
        char *out;
        int64_t t0, took;
        struct pod p;
        char *id;
        int r;

        (void)state;
        pod_run(&p, "exec");
        id = create_and_start(&p, "exec", cmd_sleep);
        r = exec_v(id, 10, sh_err, &x, &err);
        if (r < 0)
                fail_msg("ExecSync: %d %s", r, err.message);
        assert_int_equal(x.exit_code, 7);
        assert_string_equal(x.out, "out\n");
        assert_int_equal(x.n_out, 4);
        assert_string_equal(x.err, "err\n");
        kc_exec_sync_result_done(&x);
        /* busybox's own messages for a missing command and a missing file. */
        out = EXEC_OK(id, 127, "sh", "-c", "nope-cmd");
        free(out);
        /* Run directly, a missing program does not start: an error, not an exit code. */
        r = exec_v(id, 1, (const char *const[]){ "nope-cmd", NULL }, &x, &err);
        assert_int_equal(r, -EIO);
        assert_int_equal(err.code, KC_RUNTIME_UNKNOWN);
        assert_non_null(strstr(err.message, "exec: \"nope-cmd\": executable file not found in "
                                            "$PATH: unknown"));
        out = EXEC_OK(id, 1, "cat", "/nope");
        free(out);

        /* The runtime kills it at the timeout; kubelet's message. */
        t0 = kc_test_mono_ms();
        r = exec_v(id, 1, sleep10, &x, &err);
        took = kc_test_mono_ms() - t0;
        assert_int_equal(r, -ETIMEDOUT);
        assert_int_equal(err.code, KC_RUNTIME_DEADLINE_EXCEEDED);
        assert_string_equal(err.message, "command \"sleep 10\" timed out");
        assert_true(took >= 900 && took < 9000);
        assert_null(x.out);

        /* Not running: what containerd 1.6 answers (the sim answers the same). */
        if (SVC(stop_container, id, 0, &err) < 0)
                fail_msg("StopContainer: %s", err.message);
        r = exec_v(id, 1, (const char *const[]){ "true", NULL }, &x, &err);
        assert_int_equal(r, -EIO);
        assert_int_equal(err.code, KC_RUNTIME_UNKNOWN);
        assert_string_equal(err.message,
                            "failed to exec in container: container is in CONTAINER_EXITED state");
        r = exec_v("0123456789abcdef", 1, (const char *const[]){ "true", NULL }, &x, &err);
        assert_int_equal(err.code, KC_RUNTIME_NOT_FOUND);
        free(id);
        pod_remove(&p);
}

/* `ctr -n k8s.io containers info @p id`: the container's OCI spec and more, as JSON (malloc'd). */
static char *ctr_info(const char *id)
{
        char cmd[600], *buf = malloc(1 << 20);
        size_t n = 0, got;
        FILE *f;

        assert_non_null(buf);
        snprintf(cmd, sizeof(cmd), "ctr --address '%s' -n k8s.io containers info '%s'", env.sock,
                 id);
        f = popen(cmd, "r");
        assert_non_null(f);
        while ((got = fread(buf + n, 1, (1 << 20) - 1 - n, f)) > 0)
                n += got;
        buf[n] = '\0';
        assert_int_equal(pclose(f), 0);
        return buf;
}

/* The field @p needle (a JSON fragment without blanks) is in @p json with any spacing. */
static bool json_has(const char *json, const char *needle)
{
        for (const char *p = json; *p; p++) {
                const char *a = p, *b = needle;

                while (*b && *a) {
                        if (*a == ' ' || *a == '\n') {
                                a++;
                                continue;
                        }
                        if (*a != *b)
                                break;
                        a++, b++;
                }
                if (!*b)
                        return true;
        }
        return false;
}

/*
 * Every new ContainerConfig field reaches containerd: seen inside the
 * container through ExecSync and in the OCI spec (ctr containers info).
 */
static void test_config_fields_reach_runtime(void **state)
{
        static const struct kc_label envs[] = { { "GREETING", "hello world" }, { "EMPTY", "" } };
        static const char *const add[] = { "SYS_TIME" };
        static const char *const drop[] = { "NET_RAW" };
        char host_dir[] = "/tmp/cubelet-integ-mnt.XXXXXX", path[600];
        _cleanup_free_ char *img = image_id(), *info = NULL;
        char *out;
        struct kc_label labels[] = { { INTEG_LABEL, env.run },
                                     { KC_LABEL_POD_UID, NULL },
                                     { KC_LABEL_CONTAINER_NAME, "fields" } };
        struct kc_runtime_error err = { 0 };
        struct pod p;
        char *id = NULL;
        FILE *f;

        (void)state;
        assert_non_null(mkdtemp(host_dir));
        snprintf(path, sizeof(path), "%s/hello.txt", host_dir);
        f = fopen(path, "we");
        assert_non_null(f);
        fputs("from the host\n", f);
        fclose(f);
        pod_run(&p, "fields");
        labels[1].value = p.uid;
        struct kc_cri_mount mounts[] = {
                { "/mnt/host", host_dir, false, false, KC_CRI_PROPAGATION_PRIVATE },
        };
        struct kc_container_config cc = {
                .metadata = { .name = "fields" },
                .image = img,
                .user_specified_image = env.image,
                .command = cmd_sleep,
                .n_command = 2,
                .working_dir = "/work/dir",
                .envs = envs,
                .n_envs = 2,
                .mounts = mounts,
                .n_mounts = 1,
                .labels = labels,
                .n_labels = 3,
                .has_resources = true,
                .resources = { .memory_limit_in_bytes = 64 << 20,
                               .cpu_shares = 256,
                               .cpu_period = 100000,
                               .cpu_quota = 50000 },
                .has_security = true,
                .security = { .has_capabilities = true,
                              .capabilities = { add, 1, drop, 1 },
                              .namespace_options = { .network = KC_CRI_NAMESPACE_NODE,
                                                     .pid = KC_CRI_NAMESPACE_CONTAINER },
                              .readonly_rootfs = true,
                              .no_new_privs = true },
        };
        if (SVC(create_container, p.id, &cc, &p.config, &id, &err) < 0)
                fail_msg("CreateContainer: %s", err.message);
        if (SVC(start_container, id, &err) < 0)
                fail_msg("StartContainer: %s", err.message);

        /* (Debian's busybox has no printenv applet: env and the shell.) */
        out = EXEC_OK(id, 0, "sh", "-c", "echo \"[$GREETING][$EMPTY]\"");
        assert_string_equal(out, "[hello world][]\n");
        free(out);
        out = EXEC_OK(id, 0, "env");
        assert_non_null(strstr(out, "\nGREETING=hello world\n"));
        free(out);
        out = EXEC_OK(id, 0, "pwd");
        assert_string_equal(out, "/work/dir\n");
        free(out);
        out = EXEC_OK(id, 0, "cat", "/mnt/host/hello.txt");
        assert_string_equal(out, "from the host\n");
        free(out);
        /* The memory limit in the container's cgroup (v1 here; v2's file otherwise). */
        out = EXEC_OK(id, 0, "sh", "-c",
                      "cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || "
                      "cat /sys/fs/cgroup/memory.max");
        assert_string_equal(out, "67108864\n");
        free(out);
        /* A read-only root refuses a write; the mount takes one, seen on the host. */
        out = EXEC_OK(id, 1, "touch", "/newfile");
        free(out);
        out = EXEC_OK(id, 0, "sh", "-c", "echo from the container > /mnt/host/out.txt");
        free(out);
        snprintf(path, sizeof(path), "%s/out.txt", host_dir);
        f = fopen(path, "re");
        assert_non_null(f);
        assert_non_null(fgets(path, sizeof(path), f));
        fclose(f);
        assert_string_equal(path, "from the container\n");

        /* The OCI spec containerd made of it. */
        info = ctr_info(id);
        assert_true(json_has(info, "\"GREETING=helloworld\"")); /* blanks dropped by json_has */
        assert_true(json_has(info, "\"EMPTY=\""));
        assert_true(json_has(info, "\"cwd\":\"/work/dir\""));
        assert_true(json_has(info, "\"destination\":\"/mnt/host\""));
        assert_true(json_has(info, "\"limit\":67108864"));
        assert_true(json_has(info, "\"shares\":256"));
        assert_true(json_has(info, "\"quota\":50000"));
        assert_true(json_has(info, "\"readonly\":true"));
        assert_true(json_has(info, "\"noNewPrivileges\":true"));
        assert_true(json_has(info, "\"CAP_SYS_TIME\""));
        assert_false(json_has(info, "\"CAP_NET_RAW\""));

        if (SVC(stop_container, id, 0, &err) < 0 || SVC(remove_container, id, &err) < 0)
                fail_msg("Stop/RemoveContainer: %s", err.message);
        free(id);
        pod_remove(&p);
        snprintf(path, sizeof(path), "rm -rf '%s'", host_dir);
        assert_int_equal(system(path), 0);
}

static int group_setup(void **state)
{
        int r;

        (void)state;
        if (integ_env_load(&env, "test_cri") < 0)
                return -1;
        if (!mkdtemp(log_root)) {
                perror("mkdtemp");
                return -1;
        }
        r = kc_cri_new(env.endpoint, 30 * KC_NSEC_PER_SEC, &cri);
        if (r < 0) {
                fprintf(stderr, "kc_cri_new(%s): %s\n", env.endpoint, strerror(-r));
                return -1;
        }
        svc = kc_cri_service(cri);
        return 0;
}

static int group_teardown(void **state)
{
        char cmd[600];
        int n;

        (void)state;
        if (cri) {
                n = integ_remove_all(svc, &env);
                if (n > 0)
                        fprintf(stderr, "removed %d sandbox(es) left by failed tests\n", n);
        }
        cri = kc_cri_free(cri);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", log_root);
        if (system(cmd) != 0)
                fprintf(stderr, "could not remove %s\n", log_root);
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_version),
                cmocka_unit_test(test_status),
                cmocka_unit_test(test_image_status),
                cmocka_unit_test(test_image_status_not_found),
                cmocka_unit_test(test_pull_image_failure),
                cmocka_unit_test(test_sandbox_lifecycle),
                cmocka_unit_test(test_container_exit_code),
                cmocka_unit_test(test_container_stop),
                cmocka_unit_test(test_stop_sandbox_kills_containers),
                cmocka_unit_test(test_not_found),
                cmocka_unit_test(test_name_reserved),
                cmocka_unit_test(test_exec_sync),
                cmocka_unit_test(test_config_fields_reach_runtime),
                cmocka_unit_test(test_get_container_events),
                cmocka_unit_test(test_deadline_exceeded),
                cmocka_unit_test(test_unavailable),
                cmocka_unit_test(test_concurrent_calls),
        };

        return cmocka_run_group_tests_name("integration.cri", tests, group_setup, group_teardown);
}
