/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sim's busybox-like interpreter and ExecSync. One interpreter runs
 * both a container's own command (its effects on the container's
 * filesystem: `sh -c "touch /tmp/ready; sleep 3600"` makes /tmp/ready
 * exist once started) and what ExecSync runs in it; commands.c splits the
 * scripts and reads the command's course over time.
 *
 * What a container sees: its own small root filesystem (busybox's
 * directories, its mount points, its working directory), its mounts (the
 * sim-wide store of host paths, so two containers mounting one directory
 * share its files; a file the store does not hold is read from the host,
 * writes never reach the host but for the termination-message file: the
 * kubelet made it on the host to read it back, so what the container writes
 * there is written through), its envs and working directory as
 * CreateContainer gave them. A read-only root (readonly_rootfs) refuses
 * writes outside the writable mounts and /dev, with EROFS's message.
 *
 * Time: `sleep N` in an exec sleeps on the sim's clock with the lock
 * dropped, bounded by the exec timeout; a container's own command acts up
 * to the present lazily, whenever an exec looks at it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../internal.h"
#include "core/arena.h"
#include "core/array.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/lock.h"
#include "core/map.h"
#include "runtime/runtime_service.h"
#include "sim_internal.h"

/* busybox's image environment. */
#define SIM_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
/* What a file read from the host may hold at most. */
#define SIM_HOST_READ_MAX (1 << 20)

/* ------------------------------------------------------------------------ */
/* Output                                                                     */

struct membuf {
        char *p;
        size_t n, cap;
        bool oom;
};

static void mb_put(struct membuf *b, const char *s, size_t n)
{
        if (!b || b->oom)
                return;
        if (KC_ARRAY_GROW(b->p, b->cap, b->n + n + 1, 64) < 0) {
                b->oom = true;
                return;
        }
        memcpy(b->p + b->n, s, n);
        b->n += n;
        b->p[b->n] = '\0';
}

static void mb_puts(struct membuf *b, const char *s)
{
        mb_put(b, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void mb_printf(struct membuf *b, const char *fmt, ...)
{
        char buf[SIM_PATH_MAX * 2];
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        if (n > 0)
                mb_put(b, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* ------------------------------------------------------------------------ */
/* The shell and where paths lead                                             */

struct shell {
        struct kc_sim *s;
        struct sim_container *c; /* valid while the lock is held */
        struct sim_env env;
        char cwd[SIM_PATH_MAX];
        struct membuf *out, *err; /* NULL: discarded */
        int32_t code;             /* the last status */
        bool exited;              /* `exit` ran */
};

/* A path as the container sees it: the filesystem and key it is stored under. */
struct loc {
        struct sim_fs *fs;
        char path[SIM_PATH_MAX]; /* in the container */
        char key[SIM_PATH_MAX];  /* in fs */
        bool host;               /* in a mount: the host's file may back it */
        bool readonly;
        bool mount_root;
        bool write_through; /* the termination-message file: writes reach the host */
};

static bool path_under(const char *path, const char *dir)
{
        size_t n = strlen(dir);

        if (strcmp(dir, "/") == 0)
                return true;
        return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* The mount @p path is in (the deepest), NULL for the root filesystem. */
static const struct kc_cri_mount *mount_of(const struct sim_container *c, const char *path,
                                           char *norm, size_t cap)
{
        const struct kc_cri_mount *best = NULL;
        size_t best_len = 0;

        for (size_t i = 0; c->exec && i < c->v.n_mounts; i++) {
                const struct kc_cri_mount *m = &c->v.mounts[i];

                if (!m->container_path || !m->host_path ||
                    kc__sim_path_normalize(NULL, m->container_path, norm, cap) < 0)
                        continue;
                if (path_under(path, norm) && strlen(norm) >= best_len) {
                        best = m;
                        best_len = strlen(norm);
                }
        }
        if (best)
                kc__sim_path_normalize(NULL, best->container_path, norm, cap);
        return best;
}

/* The mount of the termination-message file (at the annotated path), or NULL. */
static const struct kc_cri_mount *termination_mount(const struct sim_container *c)
{
        const char *path = kc__label_get(c->v.annotations, c->v.n_annotations,
                                         "io.kubernetes.container.terminationMessagePath");

        for (size_t i = 0; path && *path && c->exec && i < c->v.n_mounts; i++)
                if (kc__streq(c->v.mounts[i].container_path, path))
                        return &c->v.mounts[i];
        return NULL;
}

static int locate(struct shell *sh, const char *path, struct loc *l)
{
        char mp[SIM_PATH_MAX], host[SIM_PATH_MAX * 2];
        const struct kc_cri_mount *m;
        const struct sim_exec_config *x = sh->c->exec;

        *l = (struct loc){ .fs = &sh->c->fs };
        if (kc__sim_path_normalize(sh->cwd, path, l->path, sizeof(l->path)) < 0)
                return -ENAMETOOLONG;
        m = mount_of(sh->c, l->path, mp, sizeof(mp));
        if (!m) {
                snprintf(l->key, sizeof(l->key), "%s", l->path);
                l->readonly = x && x->readonly_rootfs && !path_under(l->path, "/dev");
                return 0;
        }
        /* The host path, then what follows the mount point. */
        snprintf(host, sizeof(host), "%s/%s", m->host_path,
                 l->path + (strcmp(mp, "/") == 0 ? 0 : strlen(mp)));
        if (kc__sim_path_normalize(NULL, host, l->key, sizeof(l->key)) < 0)
                return -ENAMETOOLONG;
        l->fs = &sh->s->host_fs;
        l->host = true;
        l->readonly = m->readonly;
        l->mount_root = strcmp(l->path, mp) == 0;
        l->write_through = l->mount_root && m == termination_mount(sh->c);
        return 0;
}

/*
 * Writes the store's copy of @p l through to the existing host file (never
 * made here, never through a symlink). Best effort: the store keeps it.
 */
static void host_write_through(const struct loc *l)
{
        const struct sim_file *f = kc__sim_fs_get(l->fs, l->key);
        _cleanup_close_ int fd = -1;
        size_t off = 0;

        if (!l->write_through || !f || f->dir)
                return;
        fd = open(l->key, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        while (fd >= 0 && off < f->size) {
                ssize_t k = write(fd, f->data + off, f->size - off);

                if (k <= 0)
                        return;
                off += (size_t)k;
        }
}

/* A mount's file the store does not hold, read from the host; NULL when there is none. */
static char *host_read(const struct loc *l, size_t *ret_n)
{
        _cleanup_close_ int fd = -1;
        char *d;
        ssize_t n;

        if (!l->host || kc__sim_fs_exists(l->fs, l->key))
                return NULL;
        fd = open(l->key, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0)
                return NULL;
        d = malloc(SIM_HOST_READ_MAX + 1);
        if (!d)
                return NULL;
        n = read(fd, d, SIM_HOST_READ_MAX);
        if (n < 0) {
                free(d);
                return NULL;
        }
        d[n] = '\0';
        *ret_n = (size_t)n;
        return d;
}

static bool host_stat(const struct loc *l, bool *is_dir)
{
        struct stat st;

        if (!l->host || stat(l->key, &st) < 0)
                return false;
        *is_dir = S_ISDIR(st.st_mode);
        return true;
}

static bool loc_is_dir(const struct loc *l)
{
        const struct sim_file *f = kc__sim_fs_get(l->fs, l->key);
        bool dir = false;

        if (f)
                return f->dir;
        if (kc__sim_fs_is_dir(l->fs, l->key))
                return true;
        if (host_stat(l, &dir))
                return dir;
        return l->mount_root; /* a mount of nothing the sim knows: a directory */
}

static bool loc_exists(const struct loc *l)
{
        bool dir;

        return l->mount_root || kc__sim_fs_exists(l->fs, l->key) || host_stat(l, &dir);
}

/* Whether the directory a new entry @p l would go into exists. */
static bool parent_exists(struct shell *sh, const struct loc *l)
{
        char parent[SIM_PATH_MAX];
        char *slash;
        struct loc pl;

        memcpy(parent, l->path, sizeof(parent));
        slash = strrchr(parent, '/');
        if (slash)
                slash[slash == parent ? 1 : 0] = '\0';
        return locate(sh, parent, &pl) == 0 && loc_is_dir(&pl);
}

/* Why @p l cannot be written: 0, -EROFS, -ENOENT (no parent), -EISDIR. */
static int write_check(struct shell *sh, const struct loc *l)
{
        if (l->readonly)
                return -EROFS;
        if (!parent_exists(sh, l))
                return -ENOENT;
        return loc_is_dir(l) ? -EISDIR : 0;
}

/* ------------------------------------------------------------------------ */
/* Builtins                                                                   */

typedef int32_t (*builtin_fn)(struct shell *sh, char **w, size_t n);

static int32_t b_true(struct shell *sh, char **w, size_t n)
{
        (void)sh, (void)n;
        return strcmp(w[0], "false") == 0 ? 1 : 0;
}

static int32_t b_exit(struct shell *sh, char **w, size_t n)
{
        sh->exited = true;
        return kc__sim_exit_status(&(struct sim_step){ .words = w, .n = n });
}

static int32_t b_echo(struct shell *sh, char **w, size_t n)
{
        size_t i = 1;
        bool nl = true;

        if (n > 1 && strcmp(w[1], "-n") == 0)
                nl = false, i++;
        for (size_t first = i; i < n; i++) {
                if (i > first)
                        mb_puts(sh->out, " ");
                mb_puts(sh->out, w[i]);
        }
        if (nl)
                mb_puts(sh->out, "\n");
        return 0;
}

static int32_t b_printenv(struct shell *sh, char **w, size_t n)
{
        int32_t code = 0;

        if (n == 1 || strcmp(w[0], "env") == 0) {
                for (size_t i = 0; i < sh->env.n; i++) {
                        /* later entries of one name win, and are printed in its place */
                        const char *k = sh->env.v[i].key;

                        if (kc__sim_env_get(&sh->env, k, strlen(k)) == sh->env.v[i].value)
                                mb_printf(sh->out, "%s=%s\n", k, sh->env.v[i].value);
                }
                return 0;
        }
        for (size_t i = 1; i < n; i++) {
                const char *v = kc__sim_env_get(&sh->env, w[i], strlen(w[i]));

                if (v)
                        mb_printf(sh->out, "%s\n", v);
                else
                        code = 1;
        }
        return code;
}

static int32_t b_pwd(struct shell *sh, char **w, size_t n)
{
        (void)w, (void)n;
        mb_printf(sh->out, "%s\n", sh->cwd);
        return 0;
}

static int32_t b_cd(struct shell *sh, char **w, size_t n)
{
        struct loc l;

        if (locate(sh, n > 1 ? w[1] : "/root", &l) < 0 || !loc_is_dir(&l)) {
                mb_printf(sh->err, "sh: cd: can't cd to %s: No such file or directory\n",
                          n > 1 ? w[1] : "/root");
                return 2;
        }
        snprintf(sh->cwd, sizeof(sh->cwd), "%s", l.path);
        return 0;
}

static int32_t b_cat(struct shell *sh, char **w, size_t n)
{
        int32_t code = 0;

        for (size_t i = 1; i < n; i++) {
                const struct sim_file *f;
                _cleanup_free_ char *d = NULL;
                size_t len = 0;
                struct loc l;

                if (locate(sh, w[i], &l) < 0 || !loc_exists(&l)) {
                        mb_printf(sh->err, "cat: can't open '%s': No such file or directory\n",
                                  w[i]);
                        code = 1;
                } else if (loc_is_dir(&l)) {
                        mb_puts(sh->err, "cat: read error: Is a directory\n");
                        code = 1;
                } else if ((f = kc__sim_fs_get(l.fs, l.key))) {
                        mb_put(sh->out, f->data ? f->data : "", f->size);
                } else if ((d = host_read(&l, &len))) {
                        mb_put(sh->out, d, len);
                }
        }
        return code;
}

/* test / [: -e -f -d -s -n -z, = and !=, with a leading !. */
static int32_t b_test(struct shell *sh, char **w, size_t n)
{
        bool neg = false, v;
        struct loc l;

        if (strcmp(w[0], "[") == 0) {
                if (n < 2 || strcmp(w[n - 1], "]") != 0) {
                        mb_puts(sh->err, "sh: [: missing ]\n");
                        return 2;
                }
                n--;
        }
        w++, n--;
        if (n > 0 && strcmp(w[0], "!") == 0)
                neg = true, w++, n--;
        if (n == 0)
                v = false;
        else if (n == 1)
                v = w[0][0] != '\0';
        else if (n == 3 && (strcmp(w[1], "=") == 0 || strcmp(w[1], "!=") == 0))
                v = (strcmp(w[0], w[2]) == 0) == (w[1][0] == '=');
        else if (n == 2 && strcmp(w[0], "-n") == 0)
                v = w[1][0] != '\0';
        else if (n == 2 && strcmp(w[0], "-z") == 0)
                v = w[1][0] == '\0';
        else if (n == 2 && locate(sh, w[1], &l) == 0 && strchr("efds", w[0][1]) && w[0][0] == '-')
                v = w[0][1] == 'e'   ? loc_exists(&l)
                    : w[0][1] == 'd' ? loc_is_dir(&l)
                    : w[0][1] == 'f'
                            ? loc_exists(&l) && !loc_is_dir(&l)
                            : kc__sim_fs_get(l.fs, l.key) && kc__sim_fs_get(l.fs, l.key)->size > 0;
        else {
                mb_printf(sh->err, "sh: %s: unknown operand\n", w[0]);
                return 2;
        }
        return v != neg ? 0 : 1;
}

static int32_t b_ls(struct shell *sh, char **w, size_t n)
{
        static char dot[] = ".";
        char *here[] = { dot };
        int32_t code = 0;
        size_t i = 1;

        while (i < n && w[i][0] == '-' && w[i][1])
                i++; /* -1, -a: one name a line is what busybox prints to a pipe */
        if (i == n)
                w = here, n = 1, i = 0;
        for (; i < n; i++) {
                _cleanup_free_ const char **names = NULL;
                size_t k = 0;
                struct loc l;

                if (locate(sh, w[i], &l) < 0 || !loc_exists(&l)) {
                        mb_printf(sh->err, "ls: %s: No such file or directory\n", w[i]);
                        code = 1;
                } else if (!loc_is_dir(&l)) {
                        mb_printf(sh->out, "%s\n", w[i]);
                } else if (kc__sim_fs_children(l.fs, l.key, &names, &k) == 0) {
                        for (size_t j = 0; j < k; j++)
                                mb_printf(sh->out, "%s\n", names[j]);
                }
        }
        return code;
}

/* The busybox message for a failed write of @p l, with @p what ("touch: /x"). */
static int32_t write_failed(struct shell *sh, const char *what, int r)
{
        mb_printf(sh->err, "%s: %s\n", what, strerror(-r));
        return 1;
}

static int32_t b_touch(struct shell *sh, char **w, size_t n)
{
        int32_t code = 0;

        for (size_t i = 1; i < n; i++) {
                char what[SIM_PATH_MAX + 16];
                struct loc l;
                int r = locate(sh, w[i], &l);

                snprintf(what, sizeof(what), "touch: %s", w[i]);
                if (r == 0 && (loc_exists(&l) && !l.readonly))
                        continue; /* only the times would change */
                r = r < 0 ? r : write_check(sh, &l);
                if (r == 0)
                        r = kc__sim_fs_write(l.fs, l.key, "", 0, true);
                if (r < 0 && r != -EISDIR)
                        code = write_failed(sh, what, r);
        }
        return code;
}

static int32_t b_mkdir(struct shell *sh, char **w, size_t n)
{
        bool parents = n > 1 && strcmp(w[1], "-p") == 0;
        int32_t code = 0;

        for (size_t i = parents ? 2 : 1; i < n; i++) {
                char what[SIM_PATH_MAX + 48];
                struct loc l;
                int r = locate(sh, w[i], &l);

                snprintf(what, sizeof(what), "mkdir: can't create directory '%s'", w[i]);
                if (r == 0 && loc_exists(&l)) {
                        r = parents && loc_is_dir(&l) ? 0 : -EEXIST;
                } else if (r == 0 && l.readonly) {
                        r = -EROFS;
                } else if (r == 0) {
                        r = parents                 ? kc__sim_fs_mkdir_p(l.fs, l.key)
                            : parent_exists(sh, &l) ? kc__sim_fs_mkdir(l.fs, l.key)
                                                    : -ENOENT;
                }
                if (r < 0)
                        code = write_failed(sh, what, r);
        }
        return code;
}

static int32_t b_rm(struct shell *sh, char **w, size_t n)
{
        bool recursive = false, force = false;
        int32_t code = 0;
        size_t i = 1;

        for (; i < n && w[i][0] == '-'; i++) {
                recursive |= strpbrk(w[i], "rR") != NULL;
                force |= strchr(w[i], 'f') != NULL;
        }
        for (; i < n; i++) {
                char what[SIM_PATH_MAX + 32];
                struct loc l;
                int r = locate(sh, w[i], &l);

                snprintf(what, sizeof(what), "rm: can't remove '%s'", w[i]);
                if (r == 0 && l.readonly && loc_exists(&l))
                        r = -EROFS;
                else if (r == 0 && !recursive && loc_is_dir(&l))
                        r = -EISDIR;
                else if (r == 0)
                        r = kc__sim_fs_remove(l.fs, l.key, recursive);
                if (r < 0 && !(force && r == -ENOENT))
                        code = write_failed(sh, what, r);
        }
        return code;
}

static int32_t b_hostname(struct shell *sh, char **w, size_t n)
{
        const struct sim_exec_config *x = sh->c->exec;

        (void)w, (void)n;
        mb_printf(sh->out, "%s\n", x && x->hostname ? x->hostname : "sim");
        return 0;
}

/* id [-u|-g]: the user and group the container runs as (root unless set). */
static int32_t b_id(struct shell *sh, char **w, size_t n)
{
        const struct sim_exec_config *x = sh->c->exec;
        int64_t uid = 0, gid = 0;

        if (x && x->run_as_user.set)
                uid = x->run_as_user.v;
        if (x && x->run_as_group.set)
                gid = x->run_as_group.v;
        if (n > 1 && strcmp(w[1], "-u") == 0)
                mb_printf(sh->out, "%" PRId64 "\n", uid);
        else if (n > 1 && strcmp(w[1], "-g") == 0)
                mb_printf(sh->out, "%" PRId64 "\n", gid);
        else
                mb_printf(sh->out, "uid=%" PRId64 " gid=%" PRId64 "\n", uid, gid);
        return 0;
}

static builtin_fn builtin(const char *name)
{
        static const struct {
                const char *name;
                builtin_fn fn;
        } table[] = {
                { ":", b_true },       { "true", b_true },         { "false", b_true },
                { "exit", b_exit },    { "echo", b_echo },         { "printenv", b_printenv },
                { "env", b_printenv }, { "pwd", b_pwd },           { "cd", b_cd },
                { "cat", b_cat },      { "test", b_test },         { "[", b_test },
                { "ls", b_ls },        { "touch", b_touch },       { "mkdir", b_mkdir },
                { "rm", b_rm },        { "hostname", b_hostname }, { "id", b_id },
        };

        for (size_t i = 0; i < KC_ELEMENTSOF(table); i++)
                if (strcmp(table[i].name, name) == 0)
                        return table[i].fn;
        return NULL;
}

bool kc__sim_is_builtin(const char *cmd)
{
        return builtin(cmd) != NULL;
}

/* ------------------------------------------------------------------------ */
/* Simple commands and scripts                                                */

/* Where a step's output goes: > >> 2> 2>> 2>&1, taken out of its words. */
struct redirs {
        const char *out, *err; /* files; NULL: the shell's own */
        bool out_append, err_append, err_to_out;
};

static int take_redirs(char **w, size_t *n, struct redirs *rd)
{
        size_t i, j;

        for (i = 0, j = 0; i < *n; i++) {
                const char *op = w[i];
                bool is_err = op[0] == '2';

                if (strcmp(op, "2>&1") == 0) {
                        rd->err_to_out = true;
                        continue;
                }
                if (strcmp(op, ">") && strcmp(op, ">>") && strcmp(op, "2>") && strcmp(op, "2>>")) {
                        w[j++] = w[i];
                        continue;
                }
                if (i + 1 >= *n)
                        return -EINVAL; /* sh: syntax error: unexpected newline */
                *(is_err ? &rd->err : &rd->out) = w[++i];
                *(is_err ? &rd->err_append : &rd->out_append) =
                        op[strlen(op) - 1] == '>' && strlen(op) > (is_err ? 2u : 1u);
        }
        w[j] = NULL;
        *n = j;
        return 0;
}

/* Writes @p b to the file @p path of a redirection: false (and the message) when it cannot. */
static bool redirect_write(struct shell *sh, const char *path, const struct membuf *b, bool append)
{
        struct loc l;
        int r;

        if (strcmp(path, "/dev/null") == 0)
                return true;
        r = locate(sh, path, &l);
        if (r == 0)
                r = write_check(sh, &l);
        if (r == 0)
                r = kc__sim_fs_write(l.fs, l.key, b->p ? b->p : "", b->n, append);
        if (r == 0)
                host_write_through(&l);
        if (r < 0) {
                mb_printf(sh->err, "sh: can't create %s: %s\n", path,
                          r == -ENOENT ? "nonexistent directory" : strerror(-r));
                return false;
        }
        return true;
}

/* Runs one builtin with its redirections. */
static int32_t run_builtin(struct shell *sh, builtin_fn fn, char **w, size_t n)
{
        struct membuf out = { 0 }, err = { 0 };
        struct membuf *saved_out = sh->out, *saved_err = sh->err;
        struct redirs rd = { 0 };
        int32_t code;

        if (take_redirs(w, &n, &rd) < 0) {
                mb_puts(sh->err, "sh: syntax error: unexpected newline\n");
                return 2;
        }
        if (rd.out)
                sh->out = &out;
        if (rd.err)
                sh->err = &err;
        else if (rd.err_to_out)
                sh->err = sh->out;
        code = n > 0 ? fn(sh, w, n) : 0;
        sh->out = saved_out;
        sh->err = saved_err;
        if ((rd.out && !redirect_write(sh, rd.out, &out, rd.out_append)) ||
            (rd.err && !redirect_write(sh, rd.err, &err, rd.err_append)))
                code = 1;
        free(out.p);
        free(err.p);
        return code;
}

/* Puts the steps of `sh -c <text>` at @p pc + 1, in place of the step at @p pc. */
static int splice_shell(struct kc_arena *a, struct shell *sh, struct sim_script *sc, size_t pc)
{
        struct sim_step *st = &sc->steps[pc];
        struct sim_script inner = { 0 };
        int r;

        r = kc__sim_script_parse(a, st->words[2], &sh->env, &inner);
        if (r < 0 || inner.n == 0) {
                kc__sim_script_done(&inner);
                return r;
        }
        inner.steps[inner.n - 1].join = st->join;
        st->join = SIM_JOIN_SEQ;
        if (KC_ARRAY_GROW(sc->steps, sc->cap, sc->n + inner.n, 4) < 0) {
                kc__sim_script_done(&inner);
                return -ENOMEM;
        }
        memmove(&sc->steps[pc + 1 + inner.n], &sc->steps[pc + 1],
                (sc->n - pc - 1) * sizeof(*sc->steps));
        memcpy(&sc->steps[pc + 1], inner.steps, inner.n * sizeof(*inner.steps));
        sc->n += inner.n;
        free(inner.steps);
        return 0;
}

/* Why run_script() stopped. */
enum stop {
        STOP_DONE,    /* the script ended (or ran exit) */
        STOP_SLEEP,   /* at `sleep N`: *pc is that step */
        STOP_FOREVER, /* at a command that does not end (the container's own command) */
};

/*
 * Runs @p sc from step *@p pc until it ends or must wait. A command that is
 * no builtin fails with 127 in an exec (@p own false) and runs forever in a
 * container's own command.
 */
static enum stop run_script(struct kc_arena *a, struct shell *sh, struct sim_script *sc, size_t *pc,
                            bool own, int64_t *ret_sleep_ns)
{
        for (; *pc < sc->n && !sh->exited; (*pc)++) {
                struct sim_step *st = &sc->steps[*pc];
                const char *cmd;
                builtin_fn fn;
                int r;

                if (*pc > 0 && !kc__sim_next_runs(sc->steps[*pc - 1].join, sh->code))
                        continue;
                if (st->n == 0)
                        continue;
                cmd = strrchr(st->words[0], '/') ? strrchr(st->words[0], '/') + 1 : st->words[0];
                r = kc__sim_step_sleep(st, ret_sleep_ns);
                if (r == 1)
                        return STOP_SLEEP;
                if (r < 0) {
                        mb_printf(sh->err, "sleep: invalid number '%s'\n",
                                  st->n > 1 ? st->words[1] : "");
                        sh->code = 1;
                        continue;
                }
                /* A nested shell: its steps in its place (the container's own: forever). */
                if (!own && st->n >= 3 && strcmp(st->words[1], "-c") == 0 &&
                    (strcmp(cmd, "sh") == 0 || strcmp(cmd, "ash") == 0) &&
                    splice_shell(a, sh, sc, *pc) == 0) {
                        sh->code = 0;
                        continue;
                }
                fn = builtin(cmd);
                if (fn) {
                        sh->code = run_builtin(sh, fn, st->words, st->n);
                } else if (own) {
                        return STOP_FOREVER;
                } else {
                        mb_printf(sh->err, "sh: %s: not found\n", st->words[0]);
                        sh->code = 127;
                }
        }
        return STOP_DONE;
}

/* The environment of @p c's processes, in @p a: busybox's PATH, HOSTNAME, the envs, HOME. */
static int shell_init(struct kc_arena *a, struct kc_sim *s, struct sim_container *c,
                      struct shell *sh)
{
        const struct sim_exec_config *x = c->exec;
        size_t n_envs = x ? x->n_envs : 0, n = 0;
        struct kc_label *v = kc_arena_alloc(a, (n_envs + 3) * sizeof(*v));
        const char *host = x ? x->hostname : NULL;

        if (!v)
                return -ENOMEM;
        v[n++] = (struct kc_label){ "PATH", SIM_DEFAULT_PATH };
        if (host && !(v[n++].value = kc_arena_strdup(a, host)))
                return -ENOMEM;
        if (host)
                v[n - 1].key = "HOSTNAME";
        for (size_t i = 0; i < n_envs; i++) {
                v[n].key = kc_arena_strdup(a, x->envs[i].key ? x->envs[i].key : "");
                v[n].value = kc_arena_strdup(a, x->envs[i].value ? x->envs[i].value : "");
                if (!v[n].key || !v[n].value)
                        return -ENOMEM;
                n++;
        }
        if (!kc__sim_env_get(&(struct sim_env){ v, n }, "HOME", 4))
                v[n++] = (struct kc_label){ "HOME", "/root" };
        *sh = (struct shell){ .s = s, .c = c, .env = { v, n } };
        snprintf(sh->cwd, sizeof(sh->cwd), "%s",
                 x && x->working_dir && x->working_dir[0] ? x->working_dir : "/");
        return 0;
}

/* ------------------------------------------------------------------------ */
/* A container's filesystem and its own command                               */

int kc__sim_container_fs_init(struct sim_container *c)
{
        /* /usr/share too: real images' hooks write there (kubernetes.io's lifecycle demo). */
        static const char *const dirs[] = { "/bin",       "/dev", "/etc",    "/home", "/proc",
                                            "/root",      "/sys", "/tmp",    "/usr",  "/usr/bin",
                                            "/usr/share", "/var", "/var/run" };
        const struct sim_exec_config *x = c->exec;
        char path[SIM_PATH_MAX];
        int r = 0;

        for (size_t i = 0; r >= 0 && i < KC_ELEMENTSOF(dirs); i++)
                r = kc__sim_fs_mkdir(&c->fs, dirs[i]);
        if (r >= 0 && x && x->hostname) {
                char line[256];
                int n = snprintf(line, sizeof(line), "%s\n", x->hostname);

                r = kc__sim_fs_write(&c->fs, "/etc/hostname", line,
                                     (size_t)(n < (int)sizeof(line) ? n : 0), false);
        }
        /* The runtime makes every mount point and the working directory. */
        for (size_t i = 0; r >= 0 && x && i < c->v.n_mounts; i++)
                if (c->v.mounts[i].container_path &&
                    kc__sim_path_normalize(NULL, c->v.mounts[i].container_path, path,
                                           sizeof(path)) == 0)
                        r = kc__sim_fs_mkdir_p(&c->fs, path);
        if (r >= 0 && x && x->working_dir && x->working_dir[0] &&
            kc__sim_path_normalize(NULL, x->working_dir, path, sizeof(path)) == 0 &&
            !mount_of(c, path, (char[SIM_PATH_MAX]){ 0 }, SIM_PATH_MAX))
                r = kc__sim_fs_mkdir_p(&c->fs, path);
        return r == -ENOTDIR ? 0 : r;
}

/*
 * Appends @p b (what the command wrote on @p stream) to @p fd in the CRI log
 * format: "<time> <stream> F <line>" per line, "P" for an unfinished one.
 */
static void log_append(int fd, const char *stream, int64_t now, const struct membuf *b)
{
        char ts[64];
        struct tm tm;
        time_t sec = (time_t)(now / 1000000000);
        size_t off = 0;

        if (b->n == 0 || !gmtime_r(&sec, &tm))
                return;
        strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
        while (off < b->n) {
                const char *nl = memchr(b->p + off, '\n', b->n - off);
                size_t len = nl ? (size_t)(nl - (b->p + off)) : b->n - off;

                if (dprintf(fd, "%s.%09" PRId64 "Z %s %s %.*s\n", ts, now % 1000000000, stream,
                            nl ? "F" : "P", (int)len, b->p + off) < 0)
                        return;
                off += len + (nl ? 1 : 0);
        }
}

/*
 * What the container's own command wrote, to its log file (containerd's
 * CRI format) when the kubelet made its directory; stdout's lines, then
 * stderr's, of each stretch caught up.
 */
static void log_output(const struct kc_sim *s, const struct sim_container *c,
                       const struct membuf *out, const struct membuf *err)
{
        _cleanup_close_ int fd = -1;
        int64_t now;

        if (!c->v.log_path || (out->n == 0 && err->n == 0))
                return;
        fd = open(c->v.log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
        if (fd < 0)
                return;
        now = kc_clock_now(s->clock);
        log_append(fd, "stdout", now, out);
        log_append(fd, "stderr", now, err);
}

void kc__sim_container_catch_up_locked(struct kc_sim *s, struct sim_container *c)
{
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        struct membuf out = { 0 }, err = { 0 };
        struct sim_script sc = { 0 };
        struct shell sh;
        int64_t elapsed, ns = 0;
        size_t pc = c->main_pc;

        if (c->v.state == KC_CONTAINER_STATE_CREATED || c->main_pc == SIZE_MAX)
                return;
        elapsed = (c->v.state == KC_CONTAINER_STATE_RUNNING ? kc_clock_now(s->clock)
                                                            : c->v.finished_at) -
                  c->v.started_at;
        if (kc_arena_new(&a) < 0 || shell_init(a, s, c, &sh) < 0 ||
            kc__sim_script_from_argv(a, c->argv, c->argc, true, &sh.env, &sc) < 0)
                goto out;
        sh.code = c->main_code;
        sh.out = &out;
        sh.err = &err;
        for (;;) {
                enum stop st = run_script(a, &sh, &sc, &pc, true, &ns);

                if (st != STOP_SLEEP) {
                        pc = st == STOP_DONE ? SIZE_MAX : pc; /* SIZE_MAX: nothing left */
                        break;
                }
                if (ns == INT64_MAX || ns > elapsed - c->main_ns)
                        break;
                c->main_ns += ns;
                sh.code = 0;
                pc++;
        }
        c->main_pc = pc;
        c->main_code = sh.code;
        log_output(s, c, &out, &err);
out:
        free(out.p);
        free(err.p);
        kc__sim_script_done(&sc);
}

void kc__sim_container_exited_locked(struct kc_sim *s, struct sim_container *c)
{
        /* What it wrote before it ended reaches its termination-message file. */
        if (!termination_mount(c) || (c->fs.n == 0 && kc__sim_container_fs_init(c) < 0))
                return;
        kc__sim_container_catch_up_locked(s, c);
}

/* ------------------------------------------------------------------------ */
/* ExecSync                                                                   */

/* The CRI name of @p st (containerd's criContainerStateToString). */
static const char *cri_state_name(enum kc_container_state st)
{
        switch (st) {
        case KC_CONTAINER_STATE_CREATED:
                return "CONTAINER_CREATED";
        case KC_CONTAINER_STATE_RUNNING:
                return "CONTAINER_RUNNING";
        case KC_CONTAINER_STATE_EXITED:
                return "CONTAINER_EXITED";
        default:
                return "CONTAINER_UNKNOWN";
        }
}

/* The container @p id for an exec: running, its command caught up. A gRPC error otherwise. */
static int exec_target_locked(struct kc_sim *s, const char *id, struct sim_container **ret,
                              struct kc_runtime_error *err)
{
        struct sim_container *c = kc_map_get(s->st.containers, id);

        /* containerd 1.6's answers. */
        if (!c)
                return kc_runtime_error_set(
                        err, -ENOENT, KC_RUNTIME_NOT_FOUND,
                        "an error occurred when try to find container \"%s\": not found", id);
        if (c->v.state != KC_CONTAINER_STATE_RUNNING)
                return kc_runtime_error_set(err, -EIO, KC_RUNTIME_UNKNOWN,
                                            "failed to exec in container: container is in %s state",
                                            cri_state_name(c->v.state));
        /* The filesystem is made on first use: most containers are never exec'd into. */
        if (c->fs.n == 0 && kc__sim_container_fs_init(c) < 0)
                return kc__sim_oom(err);
        kc__sim_container_catch_up_locked(s, c);
        *ret = c;
        return 0;
}

/*
 * Sleeps @p ns on the clock with the lock dropped, bounded by @p deadline.
 * @return 0, or -ETIMEDOUT when the deadline came first (slept until it).
 */
static int exec_sleep_locked(struct kc_sim *s, int64_t ns, int64_t deadline)
{
        int64_t now = kc_clock_now(s->clock);
        bool timeout = deadline != INT64_MAX && ns >= deadline - now;

        s->n_delayed++;
        pthread_mutex_unlock(&s->lock);
        (void)kc_clock_sleep(s->clock, timeout ? deadline - now : ns, NULL);
        pthread_mutex_lock(&s->lock);
        s->n_delayed--;
        kc__sim_advance_locked(s);
        return timeout ? -ETIMEDOUT : 0;
}

/* Runs @p sc in the container @p id: its status in sh->code, its output in @p out, @p err. */
static int exec_run_locked(struct kc_sim *s, const char *id, struct kc_arena *a,
                           struct sim_script *sc, struct shell *sh, int64_t timeout_s,
                           struct kc_runtime_error *err)
{
        int64_t now = kc_clock_now(s->clock), ns = 0, deadline = INT64_MAX;
        size_t pc = 0;
        int r;

        if (timeout_s > 0 && timeout_s < (INT64_MAX - now) / KC_NSEC_PER_SEC)
                deadline = now + timeout_s * KC_NSEC_PER_SEC;
        while (run_script(a, sh, sc, &pc, false, &ns) == STOP_SLEEP) {
                if (exec_sleep_locked(s, ns, deadline) < 0)
                        return kc_runtime_error_set(err, -ETIMEDOUT, KC_RUNTIME_DEADLINE_EXCEEDED,
                                                    "failed to exec in container: timeout %" PRId64
                                                    "s exceeded: context deadline exceeded",
                                                    timeout_s);
                r = exec_target_locked(s, id, &sh->c, err);
                if (r < 0) {
                        /* The container stopped meanwhile: its processes were killed. */
                        sh->code = SIM_EXIT_KILLED;
                        return 0;
                }
                sh->code = 0;
                pc++;
        }
        return 0;
}

/*
 * An exec's program must exist: a shell, sleep or a builtin. Anything else
 * fails to start, as runc reports it through containerd (a shell that
 * cannot find a command exits 127 instead).
 */
static int exec_check_program_locked(struct kc_sim *s, const char *const *argv,
                                     struct kc_runtime_error *err)
{
        const char *slash = argv[0] ? strrchr(argv[0], '/') : NULL;
        const char *cmd = slash ? slash + 1 : argv[0];
        char exec_id[24];

        if (cmd && (builtin(cmd) || strcmp(cmd, "sleep") == 0 || strcmp(cmd, "sh") == 0 ||
                    strcmp(cmd, "ash") == 0))
                return 0;
        kc__sim_new_id_locked(s, exec_id);
        return kc_runtime_error_set(
                err, -EIO, KC_RUNTIME_UNKNOWN,
                "failed to exec in container: failed to start exec \"%s\": OCI runtime exec "
                "failed: exec failed: unable to start container process: exec: \"%s\": "
                "executable file not found in $PATH: unknown",
                exec_id, argv[0] ? argv[0] : "");
}

/* A result's stream: the bytes of @p b, or "" (malloc'd either way). */
static char *take_output(struct membuf *b, size_t *ret_n)
{
        char *p = b->p ? b->p : strdup("");

        *ret_n = b->p ? b->n : 0;
        b->p = NULL;
        return p;
}

int kc__sim_exec_sync(void *self, const char *id, const char *const *argv, size_t argc,
                      int64_t timeout_s, struct kc_exec_sync_result *ret,
                      struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        KC_LOCK_GUARD(&s->lock);
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        _cleanup_(kc_exec_sync_result_done) struct kc_exec_sync_result x = { 0 };
        struct membuf out = { 0 }, errb = { 0 };
        struct sim_script sc = { 0 };
        struct sim_container *c = NULL;
        struct shell sh;
        int r;

        r = kc__sim_enter_locked(s, SIM_OP_EXEC_SYNC, id, err);
        if (r < 0)
                return r;
        if (!id || !ret || !argv || argc == 0 || timeout_s < 0)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "container id and a command are required");
        r = exec_target_locked(s, id, &c, err);
        if (r < 0)
                return r;
        if (kc_arena_new(&a) < 0 || shell_init(a, s, c, &sh) < 0)
                return kc__sim_oom(err);
        sh.out = &out;
        sh.err = &errb;
        r = exec_check_program_locked(s, argv, err);
        if (r >= 0)
                r = kc__sim_script_from_argv(a, argv, argc, false, &sh.env, &sc);
        if (r == -EINVAL) {
                mb_puts(&errb, "sh: syntax error: unterminated quoted string\n");
                sh.code = 2;
                r = 0;
        } else if (r == -E2BIG) {
                r = kc_runtime_error_set(err, r, KC_RUNTIME_INVALID_ARGUMENT,
                                         "command word too long");
        } else if (r >= 0) {
                r = exec_run_locked(s, id, a, &sc, &sh, timeout_s, err);
        }
        kc__sim_script_done(&sc);
        if (r == -ENOMEM || (r >= 0 && (out.oom || errb.oom)))
                r = kc__sim_oom(err);
        if (r >= 0) {
                x.out = take_output(&out, &x.n_out);
                x.err = take_output(&errb, &x.n_err);
                x.exit_code = sh.code;
                if (!x.out || !x.err)
                        r = kc__sim_oom(err);
        }
        free(out.p);
        free(errb.p);
        if (r < 0)
                return r;
        *ret = x;
        x = (struct kc_exec_sync_result){ 0 };
        return 0;
}
