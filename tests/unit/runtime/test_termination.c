/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Termination messages (runtime/termination.c, issue 14): the file made and
 * mounted at terminationMessagePath with its annotations (makeMounts,
 * newContainerAnnotations), the message read back with its 4 KiB cap
 * (getTerminationMessage), FallbackToLogsOnError's tail of a hand-made CRI
 * log (readLastStringFromContainerLogs: 80 lines, 2 KiB), the File policy
 * that never falls back; and the whole path over the sim, whose shell writes
 * through to the mounted host file. F-SYNC-02.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/arena.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "fixture.h"
#include "runtime/api_pod.h"
#include "runtime/container.h"
#include "runtime/manager.h"
#include "runtime/runtime_helper.h"
#include "runtime/runtime_service.h"
#include "runtime/sim.h"
#include "runtime/sync_pod.h"
#include "termination.h"

/*
 * One fixture for every case: a scratch directory with an empty file
 * ("empty") and a hand-made CRI log ("0.log") in it, an arena, the exited
 * container exited() fills, and the sim, manager and pod status sim_run()
 * makes; teardown frees whatever a case used.
 */
struct fixture {
        char dir[64];
        char empty[128]; /* <dir>/empty: a termination message file with nothing in it */
        char log[128];   /* <dir>/0.log: cri_log */
        struct kc_arena *arena;
        /* exited() */
        struct kc_label ann[2];
        struct kc_cri_mount mount;
        struct kc_cri_container st;
        /* sim_run() */
        char helper_dir[96];
        struct kc_runtime_helper helper;
        struct kc_clock *clock;
        struct kc_sim *sim;
        struct kc_runtime_manager *mgr;
        struct kc_pod_status *ps;
};

static const char cri_log[] = "2026-01-01T00:00:00.000000001Z stdout F first\n"
                              "2026-01-01T00:00:00.000000002Z stderr P part-\n"
                              "2026-01-01T00:00:00.000000003Z stderr F joined\n"
                              "not a cri line\n"
                              "2026-01-01T00:00:00.000000004Z stdout F last\n";

/* Writes @p n bytes of @p data to <dir>/<name>; the path in @p path. */
static void write_file(const struct fixture *f, const char *name, const char *data, size_t n,
                       char *path, size_t cap)
{
        FILE *fp;

        snprintf(path, cap, "%s/%s", f->dir, name);
        fp = fopen(path, "we");
        assert_non_null(fp);
        assert_int_equal(fwrite(data, 1, n, fp), n);
        assert_int_equal(fclose(fp), 0);
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        snprintf(f->dir, sizeof(f->dir), "/tmp/kc-termination-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        assert_int_equal(kc_arena_new(&f->arena), 0);
        write_file(f, "empty", "", 0, f->empty, sizeof(f->empty));
        write_file(f, "0.log", cri_log, sizeof(cri_log) - 1, f->log, sizeof(f->log));
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        char cmd[128];

        if (f->ps)
                kc_pod_status_unref(f->ps);
        kc_runtime_manager_free(f->mgr);
        if (f->sim)
                sim_env_free(f->clock, f->sim);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
        assert_int_equal(system(cmd), 0);
        kc_arena_free(f->arena);
        free(f);
        return 0;
}

/*
 * The fixture's container, exited with @p code under @p policy: the two
 * annotations and a mount of @p host at /dev/termination-log; its CRI log at
 * @p log_path (may be NULL).
 */
static struct kc_cri_container *exited(struct fixture *f, const char *policy, int32_t code,
                                       const char *host, const char *log_path)
{
        f->ann[0] =
                (struct kc_label){ KC_ANNOTATION_TERMINATION_MESSAGE_PATH, "/dev/termination-log" };
        f->ann[1] = (struct kc_label){ KC_ANNOTATION_TERMINATION_MESSAGE_POLICY, policy };
        f->mount = (struct kc_cri_mount){ .container_path = "/dev/termination-log",
                                          .host_path = host };
        f->st = (struct kc_cri_container){ .id = "c1",
                                           .state = KC_CONTAINER_STATE_EXITED,
                                           .exit_code = code,
                                           .reason = code ? "Error" : "Completed",
                                           .annotations = f->ann,
                                           .n_annotations = 2,
                                           .mounts = &f->mount,
                                           .n_mounts = 1,
                                           .log_path = log_path };
        return &f->st;
}

/* The fixture's container's termination message (NULL: none; never left untouched). */
static const char *message(struct fixture *f)
{
        const char *msg = "untouched";

        assert_int_equal(kc__termination_message(&f->st, f->arena, &msg), 0);
        return msg;
}

/* The file's message, capped to its last 4 KiB; appended to the runtime's own message. */
static void test_file_message_and_cap(void **state)
{
        struct fixture *f = *state;
        char path[128], big[5000];
        struct kc_cri_container *st;
        const char *msg;

        write_file(f, "msg", "bye\n", 4, path, sizeof(path));
        st = exited(f, "File", 3, path, NULL);
        assert_string_equal(message(f), "bye\n");
        st->message = "OOMKilled by the kernel";
        assert_string_equal(message(f), "OOMKilled by the kernel: bye\n");

        /* 5000 bytes: the last 4096 are kept (tail.ReadAtMost). */
        for (size_t i = 0; i < sizeof(big); i++)
                big[i] = i < sizeof(big) - KC_MAX_CONTAINER_TERMINATION_MESSAGE_LENGTH ? 'a' : 'z';
        write_file(f, "big", big, sizeof(big), path, sizeof(path));
        st = exited(f, "File", 0, path, NULL);
        msg = message(f);
        assert_int_equal(strlen(msg), KC_MAX_CONTAINER_TERMINATION_MESSAGE_LENGTH);
        assert_null(strchr(msg, 'a'));

        /* A running container: nothing is read. */
        st->state = KC_CONTAINER_STATE_RUNNING;
        st->message = NULL;
        assert_null(message(f));
}

/* FallbackToLogsOnError: an empty file and a non-zero exit give the log's content, prefixes gone. */
static void test_fallback_to_logs(void **state)
{
        struct fixture *f = *state;
        char path[128];
        struct kc_cri_container *st;

        st = exited(f, "FallbackToLogsOnError", 1, f->empty, f->log);
        assert_string_equal(message(f), "first\npart-joined\nlast\n");

        /* A missing file falls back too. */
        f->mount.host_path = "/nonexistent/kc-termination";
        assert_string_equal(message(f), "first\npart-joined\nlast\n");

        /* Exit 0, or a container that could not run: no fallback. */
        f->mount.host_path = f->empty;
        st->exit_code = 0;
        assert_null(message(f));
        st->exit_code = 128;
        st->reason = "ContainerCannotRun";
        assert_null(message(f));

        /* A file with a message wins over the logs. */
        write_file(f, "msg", "from file", 9, path, sizeof(path));
        exited(f, "FallbackToLogsOnError", 1, path, f->log);
        assert_string_equal(message(f), "from file");

        /* No log file: upstream's error text is the message. */
        exited(f, "FallbackToLogsOnError", 1, f->empty, "/nonexistent/0.log");
        assert_string_equal(message(f), "Error on reading termination message from logs: failed to "
                                        "open log file \"/nonexistent/0.log\": open "
                                        "/nonexistent/0.log: no such file or directory");
}

/* The File policy never reads the logs, whatever the exit code. */
static void test_file_policy_no_fallback(void **state)
{
        struct fixture *f = *state;

        exited(f, "File", 1, f->empty, f->log);
        assert_null(message(f));
}

/* The last 80 lines, and of them the last 2048 bytes. */
static void test_log_tail_caps(void **state)
{
        struct fixture *f = *state;
        char path[128], line[128];
        _cleanup_free_ char *s = NULL;
        FILE *fp;

        snprintf(path, sizeof(path), "%s/long.log", f->dir);
        fp = fopen(path, "we");
        assert_non_null(fp);
        for (int i = 0; i < 200; i++)
                fprintf(fp, "2026-01-01T00:00:00Z stdout F line %03d\n", i);
        /* an incomplete last line is not counted but still read */
        fprintf(fp, "2026-01-01T00:00:00Z stdout P tail");
        assert_int_equal(fclose(fp), 0);

        s = kc__read_last_string_from_container_logs(path, 80, 100000);
        assert_non_null(s);
        assert_true(strncmp(s, "line 120\n", 9) == 0);
        assert_non_null(strstr(s, "line 199\ntail"));
        free(s);

        s = kc__read_last_string_from_container_logs(path, 80, 2048);
        assert_non_null(s);
        assert_int_equal(strlen(s), 80 * 9 + 4);
        free(s);
        s = kc__read_last_string_from_container_logs(path, 200, 20);
        assert_non_null(s);
        snprintf(line, sizeof(line), "%s", s);
        assert_string_equal(line, "ne 198\nline 199\ntail");
}

/* ---------------------------------------------------------------- over the sim */

/* The helper: every container's directory is the fixture's helper_dir. */
static int helper_options(void *self, const struct kc_api_pod *pod,
                          const struct kc_api_container *c, const char *const *pod_ips,
                          size_t n_pod_ips, struct kc_arena *a,
                          struct kc_run_container_options *ret, char **ret_msg)
{
        struct fixture *f = self;

        (void)pod, (void)c, (void)pod_ips, (void)n_pod_ips, (void)a, (void)ret_msg;
        *ret = (struct kc_run_container_options){ .pod_container_dir = f->helper_dir };
        return 0;
}

static const struct kc_runtime_helper_ops helper_ops = { .generate_run_container_options =
                                                                 helper_options };

/* A pod "web" in "default" with the one container @p c (image app:1). */
static struct kc_api_pod one_container_pod(const char *uid, const struct kc_api_container *c)
{
        return (struct kc_api_pod){ .uid = uid,
                                    .name = "web",
                                    .namespace = "default",
                                    .deletion_grace_s = -1,
                                    .termination_grace_s = -1,
                                    .containers = c,
                                    .n_containers = 1 };
}

/*
 * Runs @p pod once over a sim (a manager with the helper, and its pod logs
 * under <dir>/logs when @p logs_root) and returns its status after the sync,
 * of one container. The container's directory is <dir>/pods/<uid>/containers/app.
 */
static const struct kc_pod_status *sim_run(struct fixture *f, const struct kc_api_pod *pod,
                                           bool logs_root)
{
        struct kc_runtime_error e = { 0 };
        _cleanup_free_ char *err = NULL;
        char mk[192], logs[128];

        f->helper = (struct kc_runtime_helper){ &helper_ops, f };
        snprintf(f->helper_dir, sizeof(f->helper_dir), "%s/pods/%s/containers/app", f->dir,
                 pod->uid);
        snprintf(mk, sizeof(mk), "mkdir -p '%s'", f->helper_dir);
        assert_int_equal(system(mk), 0);
        sim_env_new(&f->clock, &f->sim, "app:1");
        assert_int_equal(kc_sim_record_configs(f->sim, true),
                         0); /* test_sim_end_to_end reads them */
        assert_int_equal(kc_runtime_manager_new(kc_sim_service(f->sim), f->clock, &f->mgr), 0);
        assert_int_equal(kc_runtime_manager_set_runtime_helper(f->mgr, &f->helper), 0);
        if (logs_root) {
                snprintf(logs, sizeof(logs), "%s/logs", f->dir);
                assert_int_equal(kc_runtime_manager_set_pod_logs_root(f->mgr, logs), 0);
        }
        assert_int_equal(kc_runtime_manager_sync_pod(f->mgr, pod, NULL,
                                                     &(struct kc_sync_pod_options){ 0 }, &err),
                         0);
        assert_int_equal(kc_runtime_manager_get_pod_status(f->mgr, pod->uid, pod->name,
                                                           pod->namespace, &f->ps, &e),
                         0);
        assert_int_equal(f->ps->n_containers, 1);
        return f->ps;
}

/*
 * makeMounts' file (mode 0666, 8 hex digits, in the pod container dir) mounted
 * read-write at the path, the annotations; the sim's `echo bye >` lands in
 * it and the pod status carries it as the exited container's message.
 */
static void test_sim_end_to_end(void **state)
{
        static const char *const cmd[] = { "sh", "-c", "echo bye > /dev/termination-log; exit 3" };
        struct fixture *f = *state;
        struct kc_api_container c = { .name = "app",
                                      .image = "app:1",
                                      .command = cmd,
                                      .n_command = 3,
                                      .termination_message_path = "/dev/termination-log" };
        struct kc_api_pod pod = one_container_pod("uid-1", &c);
        const struct kc_pod_status *ps = sim_run(f, &pod, false);
        struct kc_sim_container_config cc = { 0 };
        const struct kc_cri_mount *tm = NULL;
        const char *base;
        struct stat st;

        assert_int_equal(kc_sim_container_config(f->sim, ps->containers[0].id, &cc), 0);
        for (size_t i = 0; i < cc.config.n_mounts; i++)
                if (strcmp(cc.config.mounts[i].container_path, "/dev/termination-log") == 0)
                        tm = &cc.config.mounts[i];
        assert_non_null(tm);
        assert_false(tm->readonly);
        assert_true(strncmp(tm->host_path, f->helper_dir, strlen(f->helper_dir)) == 0);
        base = tm->host_path + strlen(f->helper_dir);
        assert_int_equal(base[0], '/');
        assert_int_equal(strlen(base + 1), 8);
        assert_int_equal(strspn(base + 1, "0123456789abcdef"), 8);
        assert_int_equal(stat(tm->host_path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0666);
        {
                const char *p = NULL, *pol = NULL;

                for (size_t i = 0; i < cc.config.n_annotations; i++) {
                        if (!strcmp(cc.config.annotations[i].key,
                                    KC_ANNOTATION_TERMINATION_MESSAGE_PATH))
                                p = cc.config.annotations[i].value;
                        if (!strcmp(cc.config.annotations[i].key,
                                    KC_ANNOTATION_TERMINATION_MESSAGE_POLICY))
                                pol = cc.config.annotations[i].value;
                }
                assert_string_equal(p, "/dev/termination-log");
                assert_string_equal(pol, "File");
        }
        /* The container wrote "bye" and exited 3: its message. */
        assert_int_equal(ps->containers[0].state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(ps->containers[0].exit_code, 3);
        assert_non_null(ps->containers[0].message);
        assert_string_equal(ps->containers[0].message, "bye\n");
        kc_arena_free(cc.arena);
}

/* FallbackToLogsOnError over the sim: it logs its command's echo in the CRI format; that is the message. */
static void test_sim_fallback_to_logs(void **state)
{
        static const char *const cmd[] = { "sh", "-c", "echo oops; exit 1" };
        struct fixture *f = *state;
        struct kc_api_container c = { .name = "app",
                                      .image = "app:1",
                                      .command = cmd,
                                      .n_command = 3,
                                      .termination_message_path = "/dev/termination-log",
                                      .termination_message_policy =
                                              KC_TERMINATION_MESSAGE_FALLBACK_TO_LOGS_ON_ERROR };
        struct kc_api_pod pod = one_container_pod("uid-2", &c);
        const struct kc_pod_status *ps = sim_run(f, &pod, true);

        assert_int_equal(ps->containers[0].exit_code, 1);
        assert_non_null(ps->containers[0].message);
        assert_string_equal(ps->containers[0].message, "oops\n");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_file_message_and_cap, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fallback_to_logs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_file_policy_no_fallback, setup, teardown),
                cmocka_unit_test_setup_teardown(test_log_tail_caps, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sim_end_to_end, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sim_fallback_to_logs, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
