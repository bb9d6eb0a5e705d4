/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The file config source (issue 4 part 2, upstream config/file.go and the
 * "file" part of config.go's merge) on a real directory, a real kc_chan and
 * a fake clock. It feeds syncLoop's config channel: F-LOOP-04 (ADD, UPDATE,
 * REMOVE ops from a source) and F-LOOP-05 (the source's first update marks
 * it ready, even an empty one). Issue 4: "Each change becomes ADD, UPDATE
 * or REMOVE on the config channel"; "A malformed file logs an error naming
 * the file and the field path ... the pod that file used to define, keep
 * running."
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <stdlib.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/chan.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/log.h"
#include "kc_test.h"
#include "kubelet/config/file_source.h"
#include "kubelet/config/manifest.h"
#include "kubelet/config/pod_update.h"
#include "runtime/api_pod.h"

#define T0 (INT64_C(1700000000) * KC_NSEC_PER_SEC)
#define PERIOD (20 * KC_NSEC_PER_SEC)
#define NODE "node1"
#define WAIT_MS 3000

struct env {
        char dir[64];
        char log_path[96];
        FILE *log;
        struct kc_clock *clock;
        struct kc_chan *ch;
        struct kc_file_source *fs;
};

static const char *manifest_fmt = "apiVersion: v1\n"
                                  "kind: Pod\n"
                                  "metadata:\n"
                                  "  name: %s\n"
                                  "  uid: uid-%s\n"
                                  "spec:\n"
                                  "  containers:\n"
                                  "  - name: c\n"
                                  "    image: %s\n";

static void env_init(struct env *e, unsigned cap, bool make_dir)
{
        memset(e, 0, sizeof(*e));
        strcpy(e->dir, "/tmp/kc-fs-XXXXXX");
        assert_non_null(mkdtemp(e->dir));
        if (!make_dir)
                assert_int_equal(rmdir(e->dir), 0);
        snprintf(e->log_path, sizeof(e->log_path), "%s.log", e->dir);
        e->log = fopen(e->log_path, "w+");
        assert_non_null(e->log);
        kc_log_set_output(e->log);
        assert_int_equal(kc_fake_clock_new(&e->clock, T0), 0);
        assert_int_equal(kc_chan_new(&e->ch, cap, kc_pod_update_free_item), 0);
}

static void env_start(struct env *e)
{
        assert_int_equal(kc_file_source_start(e->dir, NODE, e->clock, PERIOD, e->ch, &e->fs), 0);
}

static void env_done(struct env *e)
{
        char cmd[128];

        e->fs = kc_file_source_stop(e->fs);
        kc_log_set_output(NULL);
        fclose(e->log);
        unlink(e->log_path);
        kc_chan_free(e->ch);
        kc_clock_free(e->clock);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
        assert_int_equal(system(cmd), 0);
}

/* Atomically (write + rename) sets <dir>/<file> to a manifest or raw text. */
static void write_raw(struct env *e, const char *file, const char *text)
{
        char tmp[160], path[160];
        FILE *f;

        snprintf(tmp, sizeof(tmp), "%s/.tmp-%s", e->dir, file);
        snprintf(path, sizeof(path), "%s/%s", e->dir, file);
        f = fopen(tmp, "w");
        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(rename(tmp, path), 0);
}

static void write_pod(struct env *e, const char *file, const char *name, const char *image)
{
        char buf[512];

        snprintf(buf, sizeof(buf), manifest_fmt, name, name, image);
        write_raw(e, file, buf);
}

static void remove_file(struct env *e, const char *file)
{
        char path[160];

        snprintf(path, sizeof(path), "%s/%s", e->dir, file);
        assert_int_equal(unlink(path), 0);
}

static struct kc_pod_update *pop(struct env *e, int ms)
{
        void *item = NULL;

        if (kc_chan_pop_sc(e->ch, &item, (int)(ms * kc_test_timeout_multiplier())) < 0)
                return NULL;
        return item;
}

static struct kc_pod_update *pop_op(struct env *e, enum kc_pod_op op, size_t n)
{
        struct kc_pod_update *u = pop(e, WAIT_MS);

        assert_non_null(u);
        assert_string_equal(u->source, "file");
        assert_string_equal(kc_pod_op_to_string(u->op), kc_pod_op_to_string(op));
        assert_int_equal(u->n_pods, n);
        return u;
}

static bool update_has(const struct kc_pod_update *u, const char *name)
{
        char full[64];

        snprintf(full, sizeof(full), "%s-" NODE, name);
        for (size_t i = 0; i < u->n_pods; i++)
                if (strcmp(u->pods[i]->name, full) == 0)
                        return true;
        return false;
}

/*
 * Forces a periodic rescan (advance the fake clock past the deadline) and
 * waits for it, then checks that nothing was sent.
 */
static void expect_quiet(struct env *e)
{
        uint64_t n = kc_file_source_scans(e->fs);

        assert_int_equal(kc_fake_clock_advance(e->clock, PERIOD + 1), 0);
        assert_true(KC_TEST_WAIT_UNTIL(kc_file_source_scans(e->fs) > n, WAIT_MS));
        kc_test_sleep_ms(150);
        assert_int_equal(kc_chan_len(e->ch), 0);
}

static bool log_contains(struct env *e, const char *needle)
{
        char buf[16384];
        size_t n;
        FILE *f = fopen(e->log_path, "r");

        if (!f)
                return false;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        return strstr(buf, needle) != NULL;
}

/* How many times @p needle occurs in the log. */
static size_t log_count(struct env *e, const char *needle)
{
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, count = 0;
        FILE *f = fopen(e->log_path, "r");

        if (!f)
                return 0;
        fflush(e->log);
        (void)getdelim(&buf, &len, '\0', f); /* the whole file: it holds no NUL */
        fclose(f);
        for (const char *p = buf; p && (p = strstr(p, needle)); p += strlen(needle))
                count++;
        return count;
}

/* How many times the read error @p err was logged for entry @p name. */
static size_t read_error_count(struct env *e, const char *name, const char *err)
{
        char needle[512];

        snprintf(needle, sizeof(needle),
                 "\"Could not read manifest file\" err=\"%s\" path=\"%s/%s\"", err, e->dir, name);
        return log_count(e, needle);
}

static void make_link(struct env *e, const char *target, const char *name)
{
        char path[160];

        snprintf(path, sizeof(path), "%s/%s", e->dir, name);
        assert_int_equal(symlink(target, path), 0);
}

/* Two manifests → one ADD carrying both pods (config.go batches per op), then nothing. */
static void test_initial_scan_adds_then_quiet(void **state)
{
        struct env e;
        struct kc_pod_update *u;

        (void)state;
        env_init(&e, 16, true);
        write_pod(&e, "a.yaml", "web", "nginx:1.25");
        write_pod(&e, "b.yaml", "db", "redis:7");
        env_start(&e);

        u = pop_op(&e, KC_POD_OP_ADD, 2);
        assert_true(update_has(u, "web"));
        assert_true(update_has(u, "db"));
        assert_true(u->pods[0]->static_pod);
        kc_pod_update_free(u);
        expect_quiet(&e);
        env_done(&e);
}

/* F-LOOP-05: an empty directory still sends one (empty) ADD: the source is ready. */
static void test_empty_dir_sends_empty_add(void **state)
{
        struct env e;

        (void)state;
        env_init(&e, 16, true);
        env_start(&e);
        kc_pod_update_free(pop_op(&e, KC_POD_OP_ADD, 0));
        expect_quiet(&e);
        env_done(&e);
}

/* F-LOOP-04: modify → UPDATE, delete → REMOVE, add → ADD, each via inotify. */
static void test_modify_delete_add(void **state)
{
        struct env e;
        struct kc_pod_update *u;

        (void)state;
        env_init(&e, 16, true);
        write_pod(&e, "a.yaml", "web", "nginx:1.25");
        write_pod(&e, "b.yaml", "db", "redis:7");
        env_start(&e);
        kc_pod_update_free(pop_op(&e, KC_POD_OP_ADD, 2));

        write_pod(&e, "a.yaml", "web", "nginx:1.26");
        u = pop_op(&e, KC_POD_OP_UPDATE, 1);
        assert_string_equal(u->pods[0]->uid, "uid-web");
        assert_string_equal(u->pods[0]->containers[0].image, "nginx:1.26");
        kc_pod_update_free(u);

        remove_file(&e, "b.yaml");
        u = pop_op(&e, KC_POD_OP_REMOVE, 1);
        assert_string_equal(u->pods[0]->uid, "uid-db");
        kc_pod_update_free(u);

        write_pod(&e, "c.json", "job", "busybox:1.36");
        u = pop_op(&e, KC_POD_OP_ADD, 1);
        assert_true(update_has(u, "job"));
        kc_pod_update_free(u);

        expect_quiet(&e);
        env_done(&e);
}

/* Without metadata.uid the UID hashes the content: an edit is REMOVE old + ADD new. */
static void test_edit_without_uid_replaces(void **state)
{
        struct env e;
        struct kc_pod_update *u;
        char old_uid[64];

        (void)state;
        env_init(&e, 16, true);
        write_raw(&e, "p.yaml",
                  "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, "
                  "image: a:1}]}\n");
        env_start(&e);
        u = pop_op(&e, KC_POD_OP_ADD, 1);
        snprintf(old_uid, sizeof(old_uid), "%s", u->pods[0]->uid);
        kc_pod_update_free(u);

        write_raw(&e, "p.yaml",
                  "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, "
                  "image: a:2}]}\n");
        u = pop_op(&e, KC_POD_OP_REMOVE, 1);
        assert_string_equal(u->pods[0]->uid, old_uid);
        kc_pod_update_free(u);
        u = pop_op(&e, KC_POD_OP_ADD, 1);
        assert_string_not_equal(u->pods[0]->uid, old_uid);
        kc_pod_update_free(u);
        expect_quiet(&e);
        env_done(&e);
}

/*
 * Issue 4: a malformed file logs the file and the field path; the pod it
 * defined is kept (no REMOVE, no UPDATE); other files are unaffected. Fixing
 * it sends the UPDATE.
 */
static void test_malformed_keeps_pod(void **state)
{
        struct env e;
        struct kc_pod_update *u;
        char needle[128];

        (void)state;
        env_init(&e, 16, true);
        write_pod(&e, "a.yaml", "web", "nginx:1.25");
        write_pod(&e, "b.yaml", "db", "redis:7");
        env_start(&e);
        kc_pod_update_free(pop_op(&e, KC_POD_OP_ADD, 2));

        write_pod(&e, "a.yaml", "web", "\" nginx\"");
        snprintf(needle, sizeof(needle), "%s/a.yaml: spec.containers[0].image: invalid value",
                 e.dir);
        assert_true(KC_TEST_WAIT_UNTIL(log_contains(&e, needle), WAIT_MS));
        expect_quiet(&e);

        /* Other files still work. */
        write_pod(&e, "b.yaml", "db", "redis:8");
        u = pop_op(&e, KC_POD_OP_UPDATE, 1);
        assert_string_equal(u->pods[0]->uid, "uid-db");
        kc_pod_update_free(u);

        /* Fixed: the kept pod is compared with the new one. */
        write_pod(&e, "a.yaml", "web", "nginx:1.27");
        u = pop_op(&e, KC_POD_OP_UPDATE, 1);
        assert_string_equal(u->pods[0]->containers[0].image, "nginx:1.27");
        kc_pod_update_free(u);

        /* A new malformed file defines nothing: no update at all. */
        write_raw(&e, "z.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: [1]}\n");
        assert_true(KC_TEST_WAIT_UNTIL(log_contains(&e, "z.yaml: metadata.name"), WAIT_MS));
        expect_quiet(&e);
        env_done(&e);
}

/* Rewriting identical content (and a touch) sends nothing: config.seen is ignored. */
static void test_identical_rewrite_is_quiet(void **state)
{
        struct env e;
        char path[160];
        uint64_t n;

        (void)state;
        env_init(&e, 16, true);
        write_pod(&e, "a.yaml", "web", "nginx:1.25");
        env_start(&e);
        kc_pod_update_free(pop_op(&e, KC_POD_OP_ADD, 1));

        n = kc_file_source_scans(e.fs);
        kc_fake_clock_advance(e.clock, KC_NSEC_PER_SEC); /* a later config.seen */
        write_pod(&e, "a.yaml", "web", "nginx:1.25");
        assert_true(KC_TEST_WAIT_UNTIL(kc_file_source_scans(e.fs) > n, WAIT_MS));
        snprintf(path, sizeof(path), "%s/a.yaml", e.dir);
        assert_int_equal(utimensat(AT_FDCWD, path, NULL, 0), 0);
        expect_quiet(&e);
        env_done(&e);
}

/* Dot-files, subdirectories and FIFOs are ignored; symlinks to regular files are followed (os.Stat). */
static void test_dotfiles_dirs_symlinks(void **state)
{
        struct env e;
        struct kc_pod_update *u;
        char path[160], target[160];

        (void)state;
        env_init(&e, 16, true);
        write_pod(&e, ".hidden.yaml", "hidden", "nginx:1");
        snprintf(path, sizeof(path), "%s/sub", e.dir);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/fifo.yaml", e.dir); /* never opened, never blocks */
        assert_int_equal(mkfifo(path, 0644), 0);
        write_pod(&e, "real.yaml", "real", "nginx:1");
        snprintf(target, sizeof(target), "%s/.hidden.yaml", e.dir);
        snprintf(path, sizeof(path), "%s/link.yaml", e.dir);
        assert_int_equal(symlink(target, path), 0);
        env_start(&e);
        u = pop_op(&e, KC_POD_OP_ADD, 2);
        assert_true(update_has(u, "real"));
        assert_true(update_has(u, "hidden")); /* through link.yaml */
        kc_pod_update_free(u);
        expect_quiet(&e);
        env_done(&e);
}

/* Missing at start: an empty ADD (source ready), then pods once it appears; gone → REMOVE. */
static void test_missing_dir_then_created_then_removed(void **state)
{
        struct env e;
        struct kc_pod_update *u;
        char path[160];

        (void)state;
        env_init(&e, 16, false);
        env_start(&e);
        kc_pod_update_free(pop_op(&e, KC_POD_OP_ADD, 0));
        assert_true(KC_TEST_WAIT_UNTIL(log_contains(&e, "does not exist"), WAIT_MS));

        assert_int_equal(mkdir(e.dir, 0755), 0);
        write_pod(&e, "a.yaml", "web", "nginx:1.25");
        u = pop_op(&e, KC_POD_OP_ADD, 1);
        assert_true(update_has(u, "web"));
        kc_pod_update_free(u);

        snprintf(path, sizeof(path), "%s/a.yaml", e.dir);
        assert_int_equal(unlink(path), 0);
        kc_pod_update_free(pop_op(&e, KC_POD_OP_REMOVE, 1));
        write_pod(&e, "a.yaml", "web", "nginx:1.25");
        kc_pod_update_free(pop_op(&e, KC_POD_OP_ADD, 1));

        /* The directory goes away: its pods are removed, and it is retried. */
        unlink(path);
        assert_int_equal(rmdir(e.dir), 0);
        kc_pod_update_free(pop_op(&e, KC_POD_OP_REMOVE, 1));
        assert_int_equal(mkdir(e.dir, 0755), 0);
        write_pod(&e, "b.yaml", "db", "redis:7");
        kc_pod_update_free(pop_op(&e, KC_POD_OP_ADD, 1));
        env_done(&e);
}

/* A full channel: the changes stay pending and arrive later, in order, none lost. */
static void test_channel_full_delivers_later(void **state)
{
        struct env e;
        struct kc_pod_update *u;

        (void)state;
        env_init(&e, 1, true);
        write_pod(&e, "a.yaml", "web", "nginx:1.25");
        write_pod(&e, "b.yaml", "db", "redis:7");
        env_start(&e);
        assert_true(KC_TEST_WAIT_UNTIL(kc_chan_len(e.ch) == 1, WAIT_MS));

        /* The channel holds the initial ADD; these cannot go out yet. */
        remove_file(&e, "b.yaml");
        write_pod(&e, "c.yaml", "job", "busybox:1");
        write_pod(&e, "a.yaml", "web", "nginx:1.26");
        assert_true(KC_TEST_WAIT_UNTIL(kc_file_source_full_events(e.fs) > 0, WAIT_MS));
        assert_true(KC_TEST_WAIT_UNTIL(log_contains(&e, "Config channel full"), WAIT_MS));

        u = pop_op(&e, KC_POD_OP_ADD, 2);
        kc_pod_update_free(u);
        u = pop_op(&e, KC_POD_OP_REMOVE, 1);
        assert_string_equal(u->pods[0]->uid, "uid-db");
        kc_pod_update_free(u);
        u = pop_op(&e, KC_POD_OP_ADD, 1);
        assert_true(update_has(u, "job"));
        kc_pod_update_free(u);
        u = pop_op(&e, KC_POD_OP_UPDATE, 1);
        assert_string_equal(u->pods[0]->containers[0].image, "nginx:1.26");
        kc_pod_update_free(u);
        expect_quiet(&e);
        env_done(&e);
}

/* A file over KC_MANIFEST_MAX_SIZE is refused with the parser's message. */
static void test_too_large(void **state)
{
        struct env e;
        char *big;

        (void)state;
        env_init(&e, 16, true);
        big = malloc(KC_MANIFEST_MAX_SIZE + 2);
        assert_non_null(big);
        memset(big, '#', KC_MANIFEST_MAX_SIZE + 1);
        big[KC_MANIFEST_MAX_SIZE + 1] = '\0';
        write_raw(&e, "big.yaml", big);
        free(big);
        env_start(&e);
        kc_pod_update_free(pop_op(&e, KC_POD_OP_ADD, 0));
        assert_true(KC_TEST_WAIT_UNTIL(log_contains(&e, "big.yaml: manifest too large"), WAIT_MS));
        env_done(&e);
}

/* Stop is prompt (the stop eventfd, not the 100 ms poll net, nor the 20 s period). */
static void test_stop_is_prompt(void **state)
{
        struct env e;
        int64_t t;

        (void)state;
        env_init(&e, 16, true);
        env_start(&e);
        kc_pod_update_free(pop_op(&e, KC_POD_OP_ADD, 0));
        kc_test_sleep_ms(20);
        t = kc_test_mono_ms();
        e.fs = kc_file_source_stop(e.fs);
        assert_true(kc_test_mono_ms() - t < (int64_t)(50 * kc_test_timeout_multiplier()));
        env_done(&e);
}

static void test_pods_equal_ignores_seen_only(void **state)
{
        static const char doc[] = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {a: b}}\n"
                                  "spec: {containers: [{name: c, image: a:1, args: [x]}]}\n";
        static const char doc2[] =
                "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {a: c}}\n"
                "spec: {containers: [{name: c, image: a:1, args: [x]}]}\n";
        static const char doc3[] =
                "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {a: b}}\n"
                "spec: {containers: [{name: c, image: a:1, args: [z]}]}\n";
        struct kc_api_pod *a = NULL, *b = NULL, *c = NULL, *d = NULL;

        (void)state;
        assert_int_equal(kc_manifest_parse(doc, strlen(doc), "f", NODE, T0, &a, NULL), 0);
        assert_int_equal(kc_manifest_parse(doc, strlen(doc), "f", NODE, T0 + 5, &b, NULL), 0);
        assert_int_equal(kc_manifest_parse(doc2, strlen(doc2), "f", NODE, T0, &c, NULL), 0);
        assert_int_equal(kc_manifest_parse(doc3, strlen(doc3), "f", NODE, T0, &d, NULL), 0);
        assert_true(kc__file_source_pods_equal(a, b));
        assert_false(kc__file_source_pods_equal(a, c));
        assert_false(kc__file_source_pods_equal(a, d));
        kc_api_pod_unref(a);
        kc_api_pod_unref(b);
        kc_api_pod_unref(c);
        kc_api_pod_unref(d);
}

/*
 * Hostile entries: a symlink to itself, directory symlink cycles, links to
 * /dev/zero and to a FIFO, a dangling link. None hangs a scan or defines a
 * pod; the two that fail are logged once each, not on every rescan.
 */
static void test_hostile_entries(void **state)
{
        struct env e;
        struct kc_pod_update *u;
        char path[160];

        (void)state;
        env_init(&e, 16, true);
        write_pod(&e, "good.yaml", "good", "nginx:1");
        write_pod(&e, ".target", "linked", "nginx:1");
        make_link(&e, ".target", "link.yaml");
        make_link(&e, "loop.yaml", "loop.yaml");
        make_link(&e, ".", "cycle.yaml");
        snprintf(path, sizeof(path), "%s/sub", e.dir);
        assert_int_equal(mkdir(path, 0755), 0);
        make_link(&e, "..", "sub/up");
        make_link(&e, "/dev/zero", "zero.yaml");
        snprintf(path, sizeof(path), "%s/.fifo", e.dir);
        assert_int_equal(mkfifo(path, 0644), 0);
        make_link(&e, ".fifo", "fifo.yaml");
        make_link(&e, "/nonexistent/kc-test", "dangling.yaml");
        env_start(&e);

        u = pop_op(&e, KC_POD_OP_ADD, 2);
        assert_true(update_has(u, "good"));
        assert_true(update_has(u, "linked"));
        kc_pod_update_free(u);
        expect_quiet(&e);
        expect_quiet(&e);
        assert_int_equal(read_error_count(&e, "loop.yaml", "Too many levels of symbolic links"), 1);
        assert_int_equal(read_error_count(&e, "dangling.yaml", "No such file or directory"), 1);
        assert_int_equal(log_count(&e, "Could not read manifest file"), 2);

        /* The link's target goes: the link dangles, and its pod goes with it (logged once). */
        remove_file(&e, ".target");
        write_pod(&e, "other.yaml", "other", "nginx:1"); /* an event, so a rescan */
        u = pop_op(&e, KC_POD_OP_REMOVE, 1);
        assert_string_equal(u->pods[0]->uid, "uid-linked");
        kc_pod_update_free(u);
        kc_pod_update_free(pop_op(&e, KC_POD_OP_ADD, 1));
        expect_quiet(&e);
        assert_int_equal(read_error_count(&e, "link.yaml", "No such file or directory"), 1);
        assert_int_equal(read_error_count(&e, "loop.yaml", "Too many levels of symbolic links"), 1);
        env_done(&e);
}

/* The manifest path itself is a symlink loop, then a file, then a directory again. */
static void test_dir_symlink_loop_and_replaced_by_file(void **state)
{
        struct env e;
        struct kc_pod_update *u;
        FILE *f;

        (void)state;
        env_init(&e, 16, false);
        assert_int_equal(symlink(e.dir, e.dir), 0);
        env_start(&e);
        kc_pod_update_free(pop_op(&e, KC_POD_OP_ADD, 0)); /* ready, with no pods */
        assert_true(
                KC_TEST_WAIT_UNTIL(log_contains(&e, "Too many levels of symbolic links"), WAIT_MS));
        expect_quiet(&e);
        assert_int_equal(log_count(&e, "Unable to read manifest path"), 1);

        /* A real directory replaces the loop: the watch comes back by itself. */
        assert_int_equal(unlink(e.dir), 0);
        assert_int_equal(mkdir(e.dir, 0755), 0);
        write_pod(&e, "a.yaml", "web", "nginx:1");
        u = pop_op(&e, KC_POD_OP_ADD, 1);
        assert_true(update_has(u, "web"));
        kc_pod_update_free(u);

        /* Removed, then a regular file in its place: the pods go, the file is an error. */
        remove_file(&e, "a.yaml");
        kc_pod_update_free(pop_op(&e, KC_POD_OP_REMOVE, 1));
        assert_int_equal(rmdir(e.dir), 0);
        f = fopen(e.dir, "w");
        assert_non_null(f);
        fputs("apiVersion: v1\n", f);
        fclose(f);
        /* No watch on a file: the periodic rescan finds it. */
        assert_int_equal(kc_fake_clock_advance(e.clock, PERIOD + 1), 0);
        assert_true(KC_TEST_WAIT_UNTIL(log_contains(&e, "Not a directory"), WAIT_MS));
        expect_quiet(&e);
        assert_int_equal(log_count(&e, "Not a directory"), 1);

        /* And a directory again. */
        assert_int_equal(unlink(e.dir), 0);
        assert_int_equal(mkdir(e.dir, 0755), 0);
        write_pod(&e, "b.yaml", "db", "redis:7");
        kc_pod_update_free(pop_op(&e, KC_POD_OP_ADD, 1));
        assert_true(
                KC_TEST_WAIT_UNTIL(log_contains(&e, "Manifest path is readable again"), WAIT_MS));
        env_done(&e);
}

/* 2,000 manifests: one ADD with every pod, quickly; an unchanged rescan is quiet. */
static void test_many_files(void **state)
{
        enum { N = 2000 };
        struct env e;
        struct kc_pod_update *u;
        char file[32], name[32];
        int64_t t0, ms;

        (void)state;
        env_init(&e, 16, true);
        for (int i = 0; i < N; i++) {
                snprintf(file, sizeof(file), "p%04d.yaml", i);
                snprintf(name, sizeof(name), "p%04d", i);
                write_pod(&e, file, name, "nginx:1");
        }
        t0 = kc_test_mono_ms();
        env_start(&e);
        u = pop(&e, 10000);
        ms = kc_test_mono_ms() - t0;
        assert_non_null(u);
        assert_int_equal(u->op, KC_POD_OP_ADD);
        assert_int_equal(u->n_pods, N);
        kc_pod_update_free(u);
        print_message("first scan of %d manifests: %" PRId64 " ms\n", N, ms);
        assert_true(ms < 5000 * kc_test_timeout_multiplier());
        expect_quiet(&e);
        env_done(&e);
}

/*
 * A field cubelet does not honour is logged with the file and the field,
 * once per content of the file: not again on a rescan of the same bytes
 * (a touch, an identical rewrite), again once the content changes (issue 14).
 */
static void test_warnings_logged_once_per_content(void **state)
{
        static const char fmt[] = "apiVersion: v1\nkind: Pod\nmetadata: {name: w, uid: w}\n"
                                  "spec:\n  tolerations: [{operator: Exists}]\n"
                                  "  containers: [{name: c, image: %s}]\n";
        char buf[256], needle[256], path[160];
        struct env e;
        uint64_t n;

        (void)state;
        env_init(&e, 16, true);
        snprintf(buf, sizeof(buf), fmt, "nginx:1.25");
        write_raw(&e, "w.yaml", buf);
        env_start(&e);
        kc_pod_update_free(pop_op(&e, KC_POD_OP_ADD, 1));
        snprintf(needle, sizeof(needle),
                 "\"Manifest field is not honoured, ignoring it\" path=\"%s/w.yaml\" "
                 "field=\"spec.tolerations\" reason=\"scheduling only: a static pod is bound "
                 "to this node without a scheduler\"",
                 e.dir);
        assert_int_equal(log_count(&e, needle), 1);

        /* the same bytes again, then a touch: rescanned, not re-logged */
        n = kc_file_source_scans(e.fs);
        write_raw(&e, "w.yaml", buf);
        assert_true(KC_TEST_WAIT_UNTIL(kc_file_source_scans(e.fs) > n, WAIT_MS));
        snprintf(path, sizeof(path), "%s/w.yaml", e.dir);
        assert_int_equal(utimensat(AT_FDCWD, path, NULL, 0), 0);
        expect_quiet(&e); /* a periodic rescan sees the new mtime and parses again */
        assert_int_equal(log_count(&e, needle), 1);

        /* new content: logged again */
        snprintf(buf, sizeof(buf), fmt, "nginx:1.26");
        write_raw(&e, "w.yaml", buf);
        kc_pod_update_free(pop_op(&e, KC_POD_OP_UPDATE, 1));
        assert_true(KC_TEST_WAIT_UNTIL(log_count(&e, needle) == 2, WAIT_MS));
        env_done(&e);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_initial_scan_adds_then_quiet),
                cmocka_unit_test(test_empty_dir_sends_empty_add),
                cmocka_unit_test(test_modify_delete_add),
                cmocka_unit_test(test_edit_without_uid_replaces),
                cmocka_unit_test(test_malformed_keeps_pod),
                cmocka_unit_test(test_identical_rewrite_is_quiet),
                cmocka_unit_test(test_warnings_logged_once_per_content),
                cmocka_unit_test(test_dotfiles_dirs_symlinks),
                cmocka_unit_test(test_missing_dir_then_created_then_removed),
                cmocka_unit_test(test_channel_full_delivers_later),
                cmocka_unit_test(test_too_large),
                cmocka_unit_test(test_stop_is_prompt),
                cmocka_unit_test(test_pods_equal_ignores_seen_only),
                cmocka_unit_test(test_hostile_entries),
                cmocka_unit_test(test_dir_symlink_loop_and_replaced_by_file),
                cmocka_unit_test(test_many_files),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
