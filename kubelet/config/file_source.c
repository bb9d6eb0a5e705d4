/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The file config source (pkg/kubelet/config/file.go, file_linux.go, and the
 * "file" part of config.go's merge). See the "File config source" section
 * of kc_kubelet.h for the contract; the design in short:
 *
 * One thread owns all state. It waits in poll() on an inotify fd watching
 * the directory and on a stop eventfd, with a 100 ms real-time timeout (a
 * net, and the moment it checks the injected clock for the periodic
 * rescan, retries a pending push and re-adds a missing watch). A scan
 * lists the directory, parses changed files and rebuilds the desired set
 * of pods by UID; "reconcile" diffs it against the set the consumer was
 * last told about (`sent`) and pushes REMOVE, ADD, UPDATE. Because the diff
 * is level-based, a push refused by a full channel is simply retried on
 * the next round: nothing is lost and nothing is queued twice.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/array.h"
#include "core/chan.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/format.h"
#include "core/log.h"
#include "core/map.h"
#include "kubelet/config/file_source.h"
#include "kubelet/config/manifest.h"
#include "kubelet/config/pod_update.h"
#include "runtime/api_pod.h"
#include "runtime/runtime_service.h"

#define FS_POLL_MS 100
#define FS_WATCH_MASK                                                                              \
        (IN_CREATE | IN_DELETE | IN_MODIFY | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE |        \
         IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

/* One manifest file as last seen. */
struct fs_file {
        char *name; /* map key */
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtim, ctim;
        /* The pod the file defines; after a parse error, the one it defined before (or NULL). */
        struct kc_api_pod *pod;
        int read_errno; /* the last read error (negative), logged once; 0 */
        /* FNV-1a of the content whose warnings were last logged (0: none yet) */
        uint64_t warned_hash;
};

enum fs_dir_state {
        FS_DIR_UNKNOWN, /* never listed */
        FS_DIR_OK,
        FS_DIR_MISSING,
        FS_DIR_ERROR,
};

struct kc_file_source {
        char *dir;
        char *node_name;
        struct kc_clock *clock;
        int64_t period_ns;
        struct kc_chan *config;

        pthread_t thread;
        bool started;
        int stop_fd;
        int ino_fd;
        int wd; /* -1: not watching */

        /* Thread-owned state. */
        struct kc_map *files; /* name -> struct fs_file */
        char **names;         /* sorted names of `files` (desired order) */
        size_t n_names;
        struct kc_map *sent; /* uid -> struct kc_api_pod (one reference each) */
        bool first_sent;     /* the first (possibly empty) ADD went out */
        bool pending;        /* the last reconcile could not push everything */
        enum fs_dir_state dir_state;
        int dir_errno;

        _Atomic uint64_t scans;
        _Atomic uint64_t full_events;
};

static struct fs_file *fs_file_free(struct fs_file *f)
{
        if (!f)
                return NULL;
        kc_api_pod_unref(f->pod);
        free(f->name);
        free(f);
        return NULL;
}

/* ------------------------------------------------------------------------ */
/* Comparison                                                                 */

static bool str_eq(const char *a, const char *b)
{
        if (!a || !b)
                return a == b;
        return strcmp(a, b) == 0;
}

static bool strv_eq(const char *const *a, size_t na, const char *const *b, size_t nb)
{
        if (na != nb)
                return false;
        for (size_t i = 0; i < na; i++)
                if (!str_eq(a[i], b[i]))
                        return false;
        return true;
}

static bool container_eq(const struct kc_api_container *a, const struct kc_api_container *b)
{
        return str_eq(a->name, b->name) && str_eq(a->image, b->image) &&
               strv_eq(a->command, a->n_command, b->command, b->n_command) &&
               strv_eq(a->args, a->n_args, b->args, b->n_args) &&
               a->image_pull_policy == b->image_pull_policy;
}

static bool containers_eq(const struct kc_api_container *a, size_t na,
                          const struct kc_api_container *b, size_t nb)
{
        if (na != nb)
                return false;
        for (size_t i = 0; i < na; i++)
                if (!container_eq(&a[i], &b[i]))
                        return false;
        return true;
}

/* Ordered comparison of two key/value lists, skipping @p ignore_key in both. */
static bool labels_eq(const struct kc_label *a, size_t na, const struct kc_label *b, size_t nb,
                      const char *ignore_key)
{
        size_t i = 0, j = 0;

        for (;;) {
                while (i < na && ignore_key && str_eq(a[i].key, ignore_key))
                        i++;
                while (j < nb && ignore_key && str_eq(b[j].key, ignore_key))
                        j++;
                if (i == na || j == nb)
                        return i == na && j == nb;
                if (!str_eq(a[i].key, b[j].key) || !str_eq(a[i].value, b[j].value))
                        return false;
                i++;
                j++;
        }
}

/*
 * Every field of kc_api_pod except creation_ts and the config.seen
 * annotation, which the parser sets from the time of the scan.
 */
static bool pods_equal(const struct kc_api_pod *a, const struct kc_api_pod *b)
{
        return str_eq(a->uid, b->uid) && str_eq(a->name, b->name) &&
               str_eq(a->namespace, b->namespace) && str_eq(a->source, b->source) &&
               a->deletion_ts == b->deletion_ts && a->deletion_grace_s == b->deletion_grace_s &&
               a->termination_grace_s == b->termination_grace_s && a->phase == b->phase &&
               a->static_pod == b->static_pod && a->mirror_pod == b->mirror_pod &&
               a->host_network == b->host_network && a->restart_policy == b->restart_policy &&
               containers_eq(a->containers, a->n_containers, b->containers, b->n_containers) &&
               containers_eq(a->init_containers, a->n_init_containers, b->init_containers,
                             b->n_init_containers) &&
               labels_eq(a->labels, a->n_labels, b->labels, b->n_labels, NULL) &&
               labels_eq(a->annotations, a->n_annotations, b->annotations, b->n_annotations,
                         KC_ANNOTATION_CONFIG_SEEN);
}

bool kc__file_source_pods_equal(const struct kc_api_pod *a, const struct kc_api_pod *b)
{
        return pods_equal(a, b);
}

/* ------------------------------------------------------------------------ */
/* Scanning                                                                   */

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
}

/* Lists the non-dot entries of @p dirfd, sorted. */
static int list_names(int dirfd, char ***ret, size_t *ret_n)
{
        _cleanup_close_ int fd = -1;
        DIR *d;
        struct dirent *de;
        char **names = NULL;
        size_t n = 0, cap = 0;

        fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d)
                return -errno;
        TAKE_FD(fd);
        while ((errno = 0, de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                if (KC_ARRAY_GROW(names, cap, n + 1, 16) < 0)
                        goto oom;
                names[n] = strdup(de->d_name);
                if (!names[n])
                        goto oom;
                n++;
        }
        if (errno) {
                int r = -errno;
                closedir(d);
                free_names(names, n);
                return r;
        }
        closedir(d);
        if (n)
                qsort(names, n, sizeof(*names), cmp_str);
        *ret = names;
        *ret_n = n;
        return 0;
oom:
        closedir(d);
        free_names(names, n);
        return -ENOMEM;
}

static bool same_stat(const struct fs_file *f, const struct stat *st)
{
        return f->dev == st->st_dev && f->ino == st->st_ino && f->size == st->st_size &&
               f->mtim.tv_sec == st->st_mtim.tv_sec && f->mtim.tv_nsec == st->st_mtim.tv_nsec &&
               f->ctim.tv_sec == st->st_ctim.tv_sec && f->ctim.tv_nsec == st->st_ctim.tv_nsec;
}

static struct fs_file *fs_file_new(const char *name, const struct stat *st, struct kc_api_pod *pod,
                                   const struct fs_file *old)
{
        struct fs_file *f = calloc(1, sizeof(*f));

        if (!f)
                return NULL;
        f->name = strdup(name);
        if (!f->name) {
                free(f);
                return NULL;
        }
        if (st) {
                f->dev = st->st_dev;
                f->ino = st->st_ino;
                f->size = st->st_size;
                f->mtim = st->st_mtim;
                f->ctim = st->st_ctim;
        }
        f->pod = pod ? kc_api_pod_ref(pod) : NULL;
        f->warned_hash = old ? old->warned_hash : 0;
        return f;
}

/* Directories and other non-regular entries are skipped (upstream logs them each scan). */
static int skip_entry(const char *path, const struct stat *st, struct fs_file **ret)
{
        if (S_ISDIR(st->st_mode))
                kc_log_v_s(4, "Not recursing into manifest path", KC_KV_STR("path", path));
        else
                kc_log_v_s(4, "Manifest path is not a directory or file", KC_KV_STR("path", path),
                           KC_KV_UINT("mode", st->st_mode));
        *ret = NULL;
        return 0;
}

/*
 * After a read error @p r: a dangling symlink defines no pod; other errors
 * keep the one @p old defined before. Logged once per entry and error (a
 * symlink loop fails every scan, like a dangling link).
 */
static int read_failed(const char *name, const char *path, const struct fs_file *old, int r,
                       struct fs_file **ret)
{
        struct kc_api_pod *kept = r != -ENOENT && old ? old->pod : NULL;

        if (old && old->read_errno == r)
                kc_log_v_s(4, "Could not read manifest file", KC_KV_ERRNO(r),
                           KC_KV_STR("path", path));
        else
                kc_log_error_s(strerror(-r), "Could not read manifest file",
                               KC_KV_STR("path", path),
                               KC_KV_BOOL("keepingPreviousPod", kept != NULL));
        *ret = fs_file_new(name, NULL, kept, old);
        if (!*ret)
                return -ENOMEM;
        (*ret)->read_errno = r;
        return 0;
}

/*
 * After a manifest error @p err: keeps the pod @p old defined before, and
 * remembers the stat so the same broken content is not re-logged every scan.
 */
static int parse_failed(const char *name, const char *path, const struct stat *st,
                        const struct fs_file *old, const char *err, struct fs_file **ret)
{
        kc_log_error_s(err, "Could not process manifest file", KC_KV_STR("path", path),
                       KC_KV_BOOL("keepingPreviousPod", old && old->pod));
        *ret = fs_file_new(name, st, old ? old->pod : NULL, old);
        return *ret ? 0 : -ENOMEM;
}

/* Reads @p fd into @p buf, at most KC_MANIFEST_MAX_SIZE + 1 bytes. 0 or -errno. */
static int read_capped(int fd, char *buf, size_t *ret_len)
{
        size_t len = 0;

        while (len < (size_t)KC_MANIFEST_MAX_SIZE + 1) {
                ssize_t k = read(fd, buf + len, (size_t)KC_MANIFEST_MAX_SIZE + 1 - len);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                len += (size_t)k;
        }
        *ret_len = len;
        return 0;
}

/*
 * Logs the manifest's warnings (fields set but not honoured, fields not in
 * v1) once per content: a rescan after a touch, or a change back and forth
 * of another file, does not repeat them.
 */
static void log_warnings(const char *path, const char *buf, size_t len,
                         const struct kc_manifest_warnings *w, struct fs_file *f)
{
        uint64_t h = 0xcbf29ce484222325ULL;
        size_t i;

        for (i = 0; i < len; i++)
                h = (h ^ (unsigned char)buf[i]) * 0x100000001b3ULL;
        h |= 1; /* never 0, which means "nothing logged yet" */
        if (f->warned_hash == h)
                return;
        f->warned_hash = h;
        for (i = 0; i < w->n; i++)
                kc_log_warn_s("Manifest field is not honoured, ignoring it",
                              KC_KV_STR("path", path), KC_KV_STR("field", w->v[i].field),
                              KC_KV_STR("reason", w->v[i].why));
}

/* Reads and parses the regular file @p name, open at @p fd with the stat @p st. */
static int parse_file(struct kc_file_source *s, int fd, const char *name, const char *path,
                      const struct stat *st, const struct fs_file *old, struct fs_file **ret)
{
        _cleanup_free_ char *buf = NULL, *err = NULL;
        _cleanup_(kc_api_pod_unrefp) struct kc_api_pod *pod = NULL;
        _cleanup_(kc_manifest_warnings_done) struct kc_manifest_warnings warnings = { 0 };
        size_t len = 0;
        int r;

        /* Too large by its size: say how large, and read none of it. */
        if (st->st_size > KC_MANIFEST_MAX_SIZE) {
                err = kc_strdup_printf("%s: manifest too large (%jd bytes; the limit is %d)", path,
                                       (intmax_t)st->st_size, KC_MANIFEST_MAX_SIZE);
                if (!err)
                        return -ENOMEM;
                return parse_failed(name, path, st, old, err, ret);
        }
        /* Read at most KC_MANIFEST_MAX_SIZE + 1 bytes (it may grow): the parser reports "too large". */
        buf = malloc((size_t)KC_MANIFEST_MAX_SIZE + 1);
        if (!buf)
                return -ENOMEM;
        r = read_capped(fd, buf, &len);
        if (r < 0)
                return read_failed(name, path, old, r, ret);

        r = kc_manifest_parse_warn(len ? buf : NULL, len, path, s->node_name,
                                   kc_clock_now(s->clock), &pod, &err, &warnings);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return parse_failed(name, path, st, old, err ? err : strerror(-r), ret);
        *ret = fs_file_new(name, st, pod, old);
        if (!*ret)
                return -ENOMEM;
        log_warnings(path, buf, len, &warnings, *ret);
        return 0;
}

/*
 * Reads and parses one regular file. Returns the new entry in *ret (NULL
 * when the file vanished), carrying @p old's pod on a parse or read error.
 */
static int scan_file(struct kc_file_source *s, int dirfd, const char *name, struct fs_file *old,
                     struct fs_file **ret)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *path = NULL;
        struct stat st;
        int r;

        path = kc_strdup_printf("%s/%s", s->dir, name);
        if (!path)
                return -ENOMEM;

        /*
         * Stat first (following symlinks, as upstream's os.Stat) so no device
         * or FIFO is ever opened; fstat again after the open for the race.
         */
        if (fstatat(dirfd, name, &st, 0) < 0) {
                r = -errno;
                /* Gone since the listing: silent. A dangling symlink is an error. */
                if (r == -ENOENT &&
                    (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(st.st_mode))) {
                        *ret = NULL;
                        return 0;
                }
                return read_failed(name, path, old, r, ret);
        }
        if (!S_ISREG(st.st_mode))
                return skip_entry(path, &st, ret);
        if (old && same_stat(old, &st)) {
                *ret = fs_file_new(name, &st, old->pod, old);
                return *ret ? 0 : -ENOMEM;
        }
        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (fd < 0) {
                if (errno == ENOENT) {
                        *ret = NULL;
                        return 0;
                }
                return read_failed(name, path, old, -errno, ret);
        }
        if (fstat(fd, &st) < 0)
                return read_failed(name, path, old, -errno, ret);
        if (!S_ISREG(st.st_mode))
                return skip_entry(path, &st, ret);
        return parse_file(s, fd, name, path, &st, old, ret);
}

static void clear_files(struct kc_map *files)
{
        size_t it = 0;
        const char *k;
        void *v;

        while (kc_map_next(files, &it, &k, &v))
                fs_file_free(v);
        kc_map_clear(files);
}

/* The directory cannot be opened (error @p r): a missing one defines no pods, others keep theirs. */
static void dir_open_failed(struct kc_file_source *s, int r)
{
        if (r == -ENOENT) {
                if (s->dir_state != FS_DIR_MISSING)
                        kc_log_error_s(NULL, "Manifest path does not exist, retrying",
                                       KC_KV_STR("path", s->dir),
                                       KC_KV_BOOL("removingPods", s->dir_state == FS_DIR_OK));
                /*
                 * Upstream sends an empty SET for a missing path, so
                 * the pods it defined go (a never-readable path has none).
                 */
                clear_files(s->files);
                free_names(s->names, s->n_names);
                s->names = NULL;
                s->n_names = 0;
                s->dir_state = FS_DIR_MISSING;
        } else {
                if (s->dir_state != FS_DIR_ERROR || s->dir_errno != r)
                        kc_log_error_s(
                                strerror(-r),
                                "Unable to read manifest path, keeping its pods and retrying",
                                KC_KV_STR("path", s->dir));
                s->dir_state = FS_DIR_ERROR;
                s->dir_errno = r;
        }
}

/* Replaces s->files and s->names; on ENOMEM leaves them as they were. */
static int scan(struct kc_file_source *s)
{
        _cleanup_close_ int dirfd = -1;
        _cleanup_(kc_map_freep) struct kc_map *nf = NULL;
        char **names = NULL, **kept_names = NULL;
        size_t n = 0, kept = 0;
        int r;

        dirfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) {
                dir_open_failed(s, -errno);
                return 0;
        }
        r = list_names(dirfd, &names, &n);
        if (r < 0) {
                if (s->dir_state != FS_DIR_ERROR || s->dir_errno != r)
                        kc_log_error_s(strerror(-r),
                                       "Unable to list manifest path, keeping its pods",
                                       KC_KV_STR("path", s->dir));
                s->dir_state = FS_DIR_ERROR;
                s->dir_errno = r;
                return r == -ENOMEM ? r : 0;
        }
        if (s->dir_state != FS_DIR_OK && s->dir_state != FS_DIR_UNKNOWN)
                kc_log_info_s("Manifest path is readable again", KC_KV_STR("path", s->dir));
        s->dir_state = FS_DIR_OK;

        r = kc_map_new(&nf);
        if (r < 0)
                goto fail;
        kept_names = calloc(n ? n : 1, sizeof(*kept_names));
        if (!kept_names) {
                r = -ENOMEM;
                goto fail;
        }
        for (size_t i = 0; i < n; i++) {
                struct fs_file *f = NULL;

                r = scan_file(s, dirfd, names[i], kc_map_get(s->files, names[i]), &f);
                if (r < 0)
                        goto fail;
                if (!f)
                        continue;
                r = kc_map_put(nf, f->name, f);
                if (r < 0) {
                        fs_file_free(f);
                        goto fail;
                }
                kept_names[kept++] = TAKE_PTR(names[i]);
        }
        free_names(names, n);

        clear_files(s->files);
        kc_map_free(s->files);
        s->files = TAKE_PTR(nf);
        free_names(s->names, s->n_names);
        s->names = kept_names;
        s->n_names = kept;
        return 0;
fail:
        if (nf)
                clear_files(nf);
        free_names(names, n);
        free_names(kept_names, kept);
        return r;
}

/* ------------------------------------------------------------------------ */
/* Reconcile: desired (from files) vs sent                                    */

struct pod_vec {
        struct kc_api_pod **v;
        size_t n, cap;
};

static int vec_push(struct pod_vec *pv, struct kc_api_pod *p)
{
        if (KC_ARRAY_GROW(pv->v, pv->cap, pv->n + 1, 8) < 0)
                return -ENOMEM;
        pv->v[pv->n++] = p;
        return 0;
}

static int push(struct kc_file_source *s, enum kc_pod_op op, const struct pod_vec *pv)
{
        struct kc_pod_update *u = kc_pod_update_new(op, KC_MANIFEST_SOURCE, pv->v, pv->n);
        int r;

        if (!u)
                return -ENOMEM;
        r = kc_chan_push_mp(s->config, u);
        if (r < 0) {
                kc_pod_update_free(u);
                return r;
        }
        kc_log_v_s(2, "File source sent", KC_KV_STR("op", kc_pod_op_to_string(op)),
                   KC_KV_UINT("pods", pv->n));
        return 0;
}

/* What the consumer must be told: pods to remove, add and update. */
struct pod_diff {
        struct pod_vec rm, add, upd;
};

/*
 * Builds the desired set from the files in name order (one pod per UID and
 * one per name and namespace: the first file wins) and diffs it against
 * `sent`.
 */
static int diff_desired(struct kc_file_source *s, struct pod_diff *d)
{
        _cleanup_(kc_map_freep) struct kc_map *desired = NULL, *full_names = NULL;
        char **full = NULL; /* full_names' keys, one per file (NULL: none) */
        size_t it = 0;
        const char *k;
        void *v;
        int r;

        r = kc_map_new(&desired);
        if (r >= 0)
                r = kc_map_new(&full_names);
        if (r < 0)
                return r;
        full = calloc(s->n_names + 1, sizeof(*full));
        if (!full)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_names; i++) {
                struct fs_file *f = kc_map_get(s->files, s->names[i]);
                struct kc_api_pod *dup, *old;

                if (!f || !f->pod)
                        continue;
                dup = kc_map_get(desired, f->pod->uid);
                if (dup) {
                        if (dup != f->pod)
                                kc_log_v_s(2, "Duplicate pod UID in manifest path, ignoring",
                                           KC_KV_STR("file", f->name),
                                           KC_KV_STR("podUID", f->pod->uid));
                        continue;
                }
                /* filterInvalidPods: one pod per name and namespace; the first file wins. */
                full[i] = kc_pod_full_name(f->pod->name, f->pod->namespace);
                if (!full[i]) {
                        r = -ENOMEM;
                        break;
                }
                if (kc_map_get(full_names, full[i])) {
                        kc_log_error_s("duplicate pod name in its namespace",
                                       "Pod failed validation, ignoring",
                                       KC_KV_STR("file", f->name),
                                       KC_KV_POD(f->pod->namespace, f->pod->name));
                        continue;
                }
                r = kc_map_put(full_names, full[i], f->pod);
                if (r >= 0)
                        r = kc_map_put(desired, f->pod->uid, f->pod);
                if (r < 0)
                        break;
                old = kc_map_get(s->sent, f->pod->uid);
                if (!old)
                        r = vec_push(&d->add, f->pod);
                else if (old != f->pod && !pods_equal(old, f->pod))
                        r = vec_push(&d->upd, f->pod);
                if (r < 0)
                        break;
        }
        while (r >= 0 && kc_map_next(s->sent, &it, &k, &v))
                if (!kc_map_get(desired, k))
                        r = vec_push(&d->rm, v);
        for (size_t i = 0; i < s->n_names; i++)
                free(full[i]);
        free(full);
        return r < 0 ? r : 0;
}

/* Sends @p d in config.go's order: removes, adds, updates; stops at the first refusal. */
static int send_diff(struct kc_file_source *s, const struct pod_diff *d)
{
        int r;

        if (d->rm.n) {
                r = push(s, KC_POD_OP_REMOVE, &d->rm);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < d->rm.n; i++)
                        kc_api_pod_unref(kc_map_remove(s->sent, d->rm.v[i]->uid));
        }
        if (d->add.n || !s->first_sent) {
                r = kc_map_reserve(s->sent, kc_map_size(s->sent) + d->add.n);
                if (r < 0)
                        return r;
                r = push(s, KC_POD_OP_ADD, &d->add);
                if (r < 0)
                        return r;
                s->first_sent = true;
                for (size_t i = 0; i < d->add.n; i++)
                        (void)kc_map_put(s->sent, d->add.v[i]->uid, kc_api_pod_ref(d->add.v[i]));
        }
        if (d->upd.n) {
                r = push(s, KC_POD_OP_UPDATE, &d->upd);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < d->upd.n; i++) {
                        struct kc_api_pod *p = kc_api_pod_ref(d->upd.v[i]);
                        struct kc_api_pod *old = kc_map_remove(s->sent, p->uid);
                        /* The key lives in the pod: re-put after removing the old one. */
                        (void)kc_map_put(s->sent, p->uid, p);
                        kc_api_pod_unref(old);
                }
        }
        return 0;
}

/* Returns 0 when everything went out, -EAGAIN when the channel was full, -ENOMEM. */
static int reconcile(struct kc_file_source *s)
{
        struct pod_diff d = { 0 };
        int r;

        r = diff_desired(s, &d);
        if (r >= 0)
                r = send_diff(s, &d);
        free(d.rm.v);
        free(d.add.v);
        free(d.upd.v);
        return r;
}

/* ------------------------------------------------------------------------ */
/* Thread                                                                     */

static void try_watch(struct kc_file_source *s, bool *need_scan)
{
        if (s->wd >= 0)
                return;
        s->wd = inotify_add_watch(s->ino_fd, s->dir, FS_WATCH_MASK);
        if (s->wd >= 0)
                *need_scan = true;
}

static void drain_inotify(struct kc_file_source *s, bool *need_scan)
{
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

        for (;;) {
                ssize_t k = read(s->ino_fd, buf, sizeof(buf));
                if (k <= 0)
                        break;
                for (char *p = buf; p < buf + k;) {
                        const struct inotify_event *ev = (const struct inotify_event *)p;

                        *need_scan = true;
                        if (ev->wd == s->wd && (ev->mask & (IN_IGNORED | IN_DELETE_SELF |
                                                            IN_MOVE_SELF | IN_UNMOUNT))) {
                                if (!(ev->mask & IN_IGNORED))
                                        (void)inotify_rm_watch(s->ino_fd, s->wd);
                                s->wd = -1;
                        }
                        p += sizeof(*ev) + ev->len;
                }
        }
}

static void do_reconcile(struct kc_file_source *s)
{
        int r = reconcile(s);

        if (r == -EAGAIN) {
                if (!s->pending)
                        kc_log_warn_s("Config channel full, file source changes stay pending and "
                                      "are retried",
                                      KC_KV_STR("source", "file"));
                s->pending = true;
                atomic_fetch_add_explicit(&s->full_events, 1, memory_order_relaxed);
        } else if (r < 0) {
                kc_log_errno_s(r, "File source could not reconcile, retrying");
                s->pending = true;
        } else {
                if (s->pending)
                        kc_log_v_s(2, "File source delivered its pending changes");
                s->pending = false;
        }
}

static void *fs_thread(void *arg)
{
        struct kc_file_source *s = arg;
        bool need_scan = true;
        int64_t deadline = 0;

        for (;;) {
                struct pollfd pfd[2] = {
                        { .fd = s->stop_fd, .events = POLLIN },
                        { .fd = s->ino_fd, .events = POLLIN },
                };

                try_watch(s, &need_scan);
                if (kc_clock_now(s->clock) >= deadline)
                        need_scan = true;
                if (need_scan) {
                        need_scan = false;
                        /* Re-arm first: a change during the scan wakes the next round. */
                        deadline = kc_clock_now(s->clock) + s->period_ns;
                        if (scan(s) < 0) {
                                kc_log_error_s(strerror(ENOMEM),
                                               "File source scan failed, retrying");
                                need_scan = true;
                        }
                        do_reconcile(s);
                        atomic_fetch_add_explicit(&s->scans, 1, memory_order_release);
                } else if (s->pending) {
                        do_reconcile(s);
                }

                if (poll(pfd, 2, FS_POLL_MS) < 0 && errno != EINTR) {
                        kc_log_errno_s(-errno, "File source poll failed");
                        break;
                }
                if (pfd[0].revents)
                        break;
                if (pfd[1].revents)
                        drain_inotify(s, &need_scan);
        }
        return NULL;
}

int kc_file_source_start(const char *dir, const char *node_name, struct kc_clock *clock,
                         int64_t check_frequency_ns, struct kc_chan *config,
                         struct kc_file_source **ret)
{
        struct kc_file_source *s;
        int r;

        if (!dir || !*dir || !node_name || !*node_name || !clock || !config || !ret ||
            check_frequency_ns <= 0)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->stop_fd = s->ino_fd = s->wd = -1;
        s->clock = clock;
        s->config = config;
        s->period_ns = check_frequency_ns;
        s->dir = strdup(dir);
        s->node_name = strdup(node_name);
        if (!s->dir || !s->node_name) {
                r = -ENOMEM;
                goto fail;
        }
        r = kc_map_new(&s->files);
        if (r < 0)
                goto fail;
        r = kc_map_new(&s->sent);
        if (r < 0)
                goto fail;
        s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (s->stop_fd < 0) {
                r = -errno;
                goto fail;
        }
        s->ino_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (s->ino_fd < 0) {
                r = -errno;
                goto fail;
        }
        r = -pthread_create(&s->thread, NULL, fs_thread, s);
        if (r < 0)
                goto fail;
        s->started = true;
        *ret = s;
        return 0;
fail:
        kc_file_source_stop(s);
        return r;
}

static struct kc_file_source *fs_free(struct kc_file_source *s)
{
        size_t it = 0;
        const char *k;
        void *v;

        if (s->files)
                clear_files(s->files);
        kc_map_free(s->files);
        if (s->sent)
                while (kc_map_next(s->sent, &it, &k, &v))
                        kc_api_pod_unref(v);
        kc_map_free(s->sent);
        free_names(s->names, s->n_names);
        if (s->stop_fd >= 0)
                close(s->stop_fd);
        if (s->ino_fd >= 0)
                close(s->ino_fd);
        free(s->dir);
        free(s->node_name);
        free(s);
        return NULL;
}

struct kc_file_source *kc_file_source_stop(struct kc_file_source *s)
{
        if (!s)
                return NULL;
        if (s->started) {
                uint64_t one = 1;
                if (write(s->stop_fd, &one, sizeof(one)) < 0)
                        kc_log_errno_s(-errno, "File source stop write failed");
                pthread_join(s->thread, NULL);
        }
        return fs_free(s);
}

uint64_t kc_file_source_scans(const struct kc_file_source *s)
{
        return atomic_load_explicit(&s->scans, memory_order_acquire);
}

uint64_t kc_file_source_full_events(const struct kc_file_source *s)
{
        return atomic_load_explicit(&s->full_events, memory_order_relaxed);
}
