/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sim's small virtual filesystems: a container's root filesystem, and
 * the sim-wide store of host paths that mounts lead to (so two containers
 * mounting one emptyDir see each other's files). Never the real disk.
 *
 * A filesystem is a flat array of absolute, normalised paths, each a file
 * with its bytes or an explicit directory. A directory also exists
 * implicitly as the parent of anything stored, and "/" always does.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "sim_internal.h"

int kc__sim_path_normalize(const char *cwd, const char *path, char *out, size_t cap)
{
        char tmp[SIM_PATH_MAX];
        size_t n = 0;
        const char *p;

        if (!path || cap < 2)
                return -EINVAL;
        if (snprintf(tmp, sizeof(tmp), "%s/%s", path[0] == '/' || !cwd ? "" : cwd, path) >=
            (int)sizeof(tmp))
                return -ENAMETOOLONG;
        for (p = tmp; *p;) {
                const char *e;
                size_t len;

                while (*p == '/')
                        p++;
                e = strchrnul(p, '/');
                len = (size_t)(e - p);
                if (len == 0 || (len == 1 && p[0] == '.')) {
                        /* nothing */
                } else if (len == 2 && p[0] == '.' && p[1] == '.') {
                        while (n > 0 && out[n] != '/')
                                n--;
                } else {
                        if (n + 1 + len + 1 > cap)
                                return -ENAMETOOLONG;
                        out[n++] = '/';
                        memcpy(out + n, p, len);
                        n += len;
                }
                out[n] = '\0';
                p = e;
        }
        if (n == 0) {
                out[0] = '/';
                out[1] = '\0';
        }
        out[n > 0 ? n : 1] = '\0';
        return 0;
}

struct sim_file *kc__sim_fs_get(const struct sim_fs *fs, const char *key)
{
        for (size_t i = 0; i < fs->n; i++)
                if (strcmp(fs->v[i].path, key) == 0)
                        return &fs->v[i];
        return NULL;
}

/* Whether @p path lies strictly under directory @p dir. */
static bool is_under(const char *path, const char *dir)
{
        size_t n = strlen(dir);

        if (n == 1) /* "/" */
                return path[1] != '\0';
        return strncmp(path, dir, n) == 0 && path[n] == '/';
}

bool kc__sim_fs_is_dir(const struct sim_fs *fs, const char *key)
{
        const struct sim_file *f = kc__sim_fs_get(fs, key);

        if (f)
                return f->dir;
        if (strcmp(key, "/") == 0)
                return true;
        for (size_t i = 0; i < fs->n; i++)
                if (is_under(fs->v[i].path, key))
                        return true;
        return false;
}

bool kc__sim_fs_exists(const struct sim_fs *fs, const char *key)
{
        return kc__sim_fs_get(fs, key) || kc__sim_fs_is_dir(fs, key);
}

/* A new entry @p key (not yet present). NULL on ENOMEM. */
static struct sim_file *fs_add(struct sim_fs *fs, const char *key, bool dir)
{
        struct sim_file *f;
        char *path;

        if (KC_ARRAY_GROW(fs->v, fs->cap, fs->n + 1, 16) < 0 || !(path = strdup(key)))
                return NULL;
        f = &fs->v[fs->n++];
        *f = (struct sim_file){ .path = path, .dir = dir };
        return f;
}

int kc__sim_fs_mkdir(struct sim_fs *fs, const char *key)
{
        if (kc__sim_fs_get(fs, key))
                return kc__sim_fs_is_dir(fs, key) ? 0 : -ENOTDIR;
        return fs_add(fs, key, true) ? 0 : -ENOMEM;
}

int kc__sim_fs_mkdir_p(struct sim_fs *fs, const char *key)
{
        char buf[SIM_PATH_MAX];
        int r;

        if (snprintf(buf, sizeof(buf), "%s", key) >= (int)sizeof(buf))
                return -ENAMETOOLONG;
        for (char *p = buf + 1;; p++) {
                if (*p != '/' && *p != '\0')
                        continue;
                char c = *p;

                *p = '\0';
                r = kc__sim_fs_mkdir(fs, buf);
                if (r < 0)
                        return r;
                *p = c;
                if (!c)
                        return 0;
        }
}

int kc__sim_fs_write(struct sim_fs *fs, const char *key, const char *data, size_t n, bool append)
{
        struct sim_file *f = kc__sim_fs_get(fs, key);
        size_t keep;
        char *d;

        if (f && f->dir)
                return -EISDIR;
        if (!f && kc__sim_fs_is_dir(fs, key))
                return -EISDIR;
        if (!f && !(f = fs_add(fs, key, false)))
                return -ENOMEM;
        keep = append ? f->size : 0;
        d = realloc(f->data, keep + n + 1);
        if (!d)
                return -ENOMEM;
        if (n > 0)
                memcpy(d + keep, data, n);
        d[keep + n] = '\0';
        f->data = d;
        f->size = keep + n;
        return 0;
}

int kc__sim_fs_remove(struct sim_fs *fs, const char *key, bool recursive)
{
        size_t i, j, n_removed = 0;
        bool found = false;

        for (i = 0; i < fs->n; i++) {
                if (strcmp(fs->v[i].path, key) == 0)
                        found = true;
                else if (is_under(fs->v[i].path, key) && !recursive)
                        return -ENOTEMPTY;
        }
        if (!found && !kc__sim_fs_is_dir(fs, key))
                return -ENOENT;
        for (i = 0, j = 0; i < fs->n; i++) {
                if (strcmp(fs->v[i].path, key) == 0 || is_under(fs->v[i].path, key)) {
                        free(fs->v[i].path);
                        free(fs->v[i].data);
                        n_removed++;
                        continue;
                }
                fs->v[j++] = fs->v[i];
        }
        fs->n -= n_removed;
        return 0;
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int kc__sim_fs_children(const struct sim_fs *fs, const char *key, const char ***ret, size_t *ret_n)
{
        size_t n = 0, base = strcmp(key, "/") == 0 ? 1 : strlen(key) + 1;
        const char **v = NULL;

        if (fs->n > 0 && !(v = calloc(fs->n, sizeof(*v))))
                return -ENOMEM;
        for (size_t i = 0; i < fs->n; i++) {
                const char *p = fs->v[i].path;

                if (!is_under(p, key) || strchr(p + base, '/'))
                        continue;
                v[n++] = p + base; /* the direct children are stored: mkdir -p makes them */
        }
        qsort(v, n, sizeof(*v), cmp_str);
        *ret = v;
        *ret_n = n;
        return 0;
}

void kc__sim_fs_done(struct sim_fs *fs)
{
        for (size_t i = 0; i < fs->n; i++) {
                free(fs->v[i].path);
                free(fs->v[i].data);
        }
        free(fs->v);
        *fs = (struct sim_fs){ 0 };
}
