/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Termination messages (kuberuntime_container.go: makeMounts,
 * getTerminationMessage, readLastStringFromContainerLogs; the log format
 * is kuberuntime/logs' CRI one). See termination.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/arena.h"
#include "core/cleanup.h"
#include "core/format.h"
#include "core/log.h"
#include "internal.h"
#include "runtime/api_spec.h"
#include "termination.h"

/* The reason a container that could not even start exits with: it has no log to fall back to. */
#define REASON_CONTAINER_CANNOT_RUN "ContainerCannotRun"
#define TERMINATION_FILE_MODE 0666
#define TAIL_CHUNK 4096

/* makeUID: 8 hex digits of a random 32-bit number. */
static void make_uid(char out[9])
{
        uint32_t v;

        if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
                struct timespec ts;

                clock_gettime(CLOCK_MONOTONIC, &ts);
                v = (uint32_t)ts.tv_nsec ^ (uint32_t)getpid() ^ (uint32_t)ts.tv_sec;
        }
        snprintf(out, 9, "%08" PRIx32, v);
}

int kc__termination_message_mount(const char *pod_container_dir, const char *container_path,
                                  struct kc_arena *a, struct kc_cri_mount *ret)
{
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -1;
        char uid[9];

        if (!pod_container_dir || !*pod_container_dir || !container_path || !*container_path)
                return 0;
        /* A new name each time: the same container's instances never share a file. */
        for (int tries = 0; fd < 0 && tries < 8; tries++) {
                make_uid(uid);
                free(path);
                path = kc_strdup_printf("%s/%s", pod_container_dir, uid);
                if (!path)
                        return -ENOMEM;
                fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                          TERMINATION_FILE_MODE);
                if (fd < 0 && errno != EEXIST)
                        break;
        }
        if (fd < 0) {
                kc_log_errno_s(-errno, "Error on creating termination-log file",
                               KC_KV_STR("path", path));
                return 0;
        }
        /* The mode as asked, whatever the umask. */
        if (fchmod(fd, TERMINATION_FILE_MODE) < 0)
                kc_log_errno_s(-errno, "Unable to set termination-log file permissions",
                               KC_KV_STR("path", path));
        *ret = (struct kc_cri_mount){ .container_path = kc_arena_strdup(a, container_path),
                                      .host_path = kc_arena_strdup(a, path) };
        return ret->container_path && ret->host_path ? 1 : -ENOMEM;
}

/* Go's text for an errno (lower case, as its syscall table has them). */
static void go_errno_text(int e, char *buf, size_t cap)
{
        snprintf(buf, cap, "%s", strerror(e));
        if (buf[0] >= 'A' && buf[0] <= 'Z')
                buf[0] = (char)(buf[0] - 'A' + 'a');
}

/* Reads what is left of @p fd into @p buf (at most @p cap bytes). -errno on failure. */
static ssize_t read_full(int fd, char *buf, size_t cap)
{
        size_t n = 0;

        while (n < cap) {
                ssize_t k = read(fd, buf + n, cap - n);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                n += (size_t)k;
        }
        return (ssize_t)n;
}

/*
 * tail.ReadAtMost(@p path, @p cap): the last @p cap bytes of the file, in
 * @p a. 0; -ENOENT when there is no file; -ENOMEM; another -errno with
 * *@p ret_err (malloc'd) saying why as upstream.
 */
static int read_at_most(const char *path, size_t cap, struct kc_arena *a, char **ret,
                        char **ret_err)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        const char *op = "open";
        char err[128], *buf;
        struct stat st;
        ssize_t n;
        int e;

        if (fd < 0) {
                e = errno;
                if (e == ENOENT)
                        return -ENOENT;
        } else if (fstat(fd, &st) < 0) {
                e = errno;
                op = "stat";
        } else if (!S_ISREG(st.st_mode)) {
                e = EINVAL; /* never wait on a FIFO nor read a device */
                op = "read";
        } else {
                buf = kc_arena_alloc(a, cap + 1);
                if (!buf)
                        return -ENOMEM;
                n = st.st_size > (off_t)cap && lseek(fd, st.st_size - (off_t)cap, SEEK_SET) < 0
                            ? -errno
                            : read_full(fd, buf, cap);
                if (n >= 0) {
                        buf[n] = '\0';
                        *ret = buf;
                        return 0;
                }
                e = (int)-n;
                op = "read";
        }
        go_errno_text(e, err, sizeof(err));
        *ret_err = kc_strdup_printf("Error on reading termination log %s: %s %s: %s", path, op,
                                    path, err);
        return *ret_err ? -EIO : -ENOMEM;
}

/*
 * FindTailLineStartIndex: where the last @p n lines of @p fd (of @p size
 * bytes) start; an incomplete last line does not count as one.
 */
static off_t tail_line_start(int fd, off_t size, size_t n)
{
        char buf[TAIL_CHUNK];
        size_t seen = 0;
        off_t end = size;

        while (end > 0) {
                off_t start = end > TAIL_CHUNK ? end - TAIL_CHUNK : 0;
                ssize_t k = pread(fd, buf, (size_t)(end - start), start);

                if (k <= 0)
                        return 0;
                for (ssize_t i = k - 1; i >= 0; i--)
                        if (buf[i] == '\n' && ++seen == n + 1)
                                return start + i + 1;
                end = start;
        }
        return 0;
}

/* circbuf: what was written, of which the last cap bytes are kept. */
struct ring {
        char *buf;
        size_t cap, total;
};

static void ring_write(struct ring *r, const char *s, size_t n)
{
        if (n > r->cap) {
                s += n - r->cap;
                r->total += n - r->cap;
                n = r->cap;
        }
        for (size_t i = 0; i < n; i++)
                r->buf[(r->total + i) % r->cap] = s[i];
        r->total += n;
}

/* The kept bytes in order, malloc'd. */
static char *ring_string(const struct ring *r)
{
        size_t n = r->total < r->cap ? r->total : r->cap, first = r->total - n;
        char *s = malloc(n + 1);

        if (!s)
                return NULL;
        for (size_t i = 0; i < n; i++)
                s[i] = r->buf[(first + i) % r->cap];
        s[n] = '\0';
        return s;
}

/*
 * parseCRILog: the content of one "<time> <stream> <tag> <content>" line
 * (@p n bytes with its newline if any) in *@p ret / *@p ret_n; false for a
 * line that is not one (skipped, as upstream does).
 */
static bool parse_cri_log(const char *line, size_t n, const char **ret, size_t *ret_n)
{
        const char *end = line + n, *p = line, *sp, *tag;
        bool partial;

        sp = memchr(p, ' ', n);
        if (!sp || sp == p) /* the time */
                return false;
        p = sp + 1;
        sp = memchr(p, ' ', (size_t)(end - p));
        if (!sp || !((sp - p == 6 && memcmp(p, "stdout", 6) == 0) ||
                     (sp - p == 6 && memcmp(p, "stderr", 6) == 0)))
                return false;
        tag = sp + 1;
        sp = memchr(tag, ' ', (size_t)(end - tag));
        if (!sp)
                return false;
        /* The tag's first ':'-separated part says whether the line is partial. */
        partial = tag[0] == 'P' && (tag + 1 == sp || tag[1] == ':');
        p = sp + 1;
        if (partial && end > p && end[-1] == '\n')
                end--;
        *ret = p;
        *ret_n = (size_t)(end - p);
        return true;
}

char *kc__read_last_string_from_container_logs(const char *path, size_t max_lines, size_t max_bytes)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *line = NULL, *keep = NULL;
        struct ring ring = { 0 };
        size_t cap_line = 0;
        char err[128];
        struct stat st;
        ssize_t n;
        FILE *f;

        fd = path ? open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) : -1;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                go_errno_text(fd < 0 ? (path ? errno : ENOENT) : EINVAL, err, sizeof(err));
                return kc_strdup_printf("Error on reading termination message from logs: "
                                        "failed to open log file \"%s\": open %s: %s",
                                        path ? path : "", path ? path : "", err);
        }
        if (max_bytes == 0)
                return strdup("");
        keep = malloc(max_bytes);
        if (!keep || lseek(fd, tail_line_start(fd, st.st_size, max_lines), SEEK_SET) < 0)
                return NULL;
        ring = (struct ring){ .buf = keep, .cap = max_bytes };
        f = fdopen(fd, "re");
        if (!f)
                return NULL;
        fd = -1; /* f owns it */
        while ((n = getline(&line, &cap_line, f)) > 0) {
                const char *content;
                size_t len;

                if (parse_cri_log(line, (size_t)n, &content, &len))
                        ring_write(&ring, content, len);
        }
        fclose(f);
        return ring_string(&ring);
}

/* getTerminationMessage: 0 with *@p ret (may be ""), or -ENOMEM; *@p ret_check_logs. */
static int get_termination_message(const struct kc_cri_container *st, const char *path,
                                   bool fallback, struct kc_arena *a, const char **ret,
                                   bool *ret_check_logs)
{
        _cleanup_free_ char *err = NULL;
        char *data;
        int r;

        *ret = "";
        *ret_check_logs = fallback;
        if (!path || !*path)
                return 0;
        for (size_t i = 0; i < st->n_mounts; i++) {
                const struct kc_cri_mount *m = &st->mounts[i];

                if (!kc__streq(m->container_path, path) || !m->host_path)
                        continue;
                r = read_at_most(m->host_path, KC_MAX_CONTAINER_TERMINATION_MESSAGE_LENGTH, a,
                                 &data, &err);
                if (r == -ENOENT || r == -ENOMEM)
                        return r == -ENOMEM ? r : 0;
                if (r < 0) {
                        *ret = kc_arena_strdup(a, err);
                        *ret_check_logs = false;
                        return *ret ? 0 : -ENOMEM;
                }
                *ret = data;
                *ret_check_logs = fallback && !*data;
                return 0;
        }
        return 0;
}

int kc__termination_message(const struct kc_cri_container *st, struct kc_arena *a, const char **ret)
{
        const char *path, *policy, *msg;
        _cleanup_free_ char *logs = NULL;
        bool fallback, check_logs;
        char *out;
        int r;

        if (st->state != KC_CONTAINER_STATE_EXITED) {
                *ret = st->message;
                return 0;
        }
        path = kc__label_get(st->annotations, st->n_annotations,
                             KC_ANNOTATION_TERMINATION_MESSAGE_PATH);
        policy = kc__label_get(st->annotations, st->n_annotations,
                               KC_ANNOTATION_TERMINATION_MESSAGE_POLICY);
        /* A container that could not even start has no log to fall back to. */
        fallback = kc__streq(policy, "FallbackToLogsOnError") && st->exit_code != 0 &&
                   !kc__streq(st->reason, REASON_CONTAINER_CANNOT_RUN);
        r = get_termination_message(st, path, fallback, a, &msg, &check_logs);
        if (r < 0)
                return r;
        if (check_logs) {
                logs = kc__read_last_string_from_container_logs(
                        st->log_path, KC_MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LINES,
                        KC_MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LENGTH);
                if (!logs)
                        return -ENOMEM;
                msg = logs;
        }
        if (!*msg) {
                *ret = st->message;
                return 0;
        }
        out = st->message && *st->message ? kc_strdup_printf("%s: %s", st->message, msg)
                                          : strdup(msg);
        if (!out)
                return -ENOMEM;
        *ret = kc_arena_strdup(a, out);
        free(out);
        return *ret ? 0 : -ENOMEM;
}
