/* SPDX-License-Identifier: Apache-2.0 */
/* The client side of the Node.js test CRI server (cri_server_client.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cri_server_client.h"

extern char **environ;

static int64_t now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* KEY=VALUE lines of the set-up's environment file. */
static bool env_get(FILE *f, const char *key, char *out, size_t size)
{
        char line[PATH_MAX + 64];
        size_t kl = strlen(key);

        rewind(f);
        while (fgets(line, sizeof(line), f)) {
                if (strncmp(line, key, kl) != 0 || line[kl] != '=')
                        continue;
                line[strcspn(line, "\n")] = '\0';
                return snprintf(out, size, "%s", line + kl + 1) < (int)size;
        }
        return false;
}

int kc_cri_server_env_load(const char *file, struct kc_cri_server_env *env)
{
        FILE *f = fopen(file, "re");
        bool ok;

        if (!f)
                return -ENOENT;
        ok = env_get(f, "KC_CRI_SERVER_NODE", env->node, sizeof(env->node)) &&
             env_get(f, "KC_CRI_SERVER_DIR", env->dir, sizeof(env->dir)) &&
             env_get(f, "KC_CRI_SERVER_PROTO", env->proto, sizeof(env->proto));
        fclose(f);
        return ok ? 0 : -ENOENT;
}

int kc_cri_server_read_line(struct kc_cri_server *s, int64_t ms, char **ret)
{
        int64_t deadline = now_ms() + ms;

        for (;;) {
                char *nl = memchr(s->buf, '\n', s->len);
                struct pollfd p = { .fd = s->out_fd, .events = POLLIN };
                int64_t left;
                ssize_t n;

                if (nl) {
                        size_t l = (size_t)(nl - s->buf);
                        char *line = strndup(s->buf, l);

                        if (!line)
                                return -ENOMEM;
                        memmove(s->buf, nl + 1, s->len - l - 1);
                        s->len -= l + 1;
                        *ret = line;
                        return 0;
                }
                if (s->len == sizeof(s->buf))
                        return -E2BIG;
                left = deadline - now_ms();
                if (left <= 0)
                        return -ETIMEDOUT;
                if (poll(&p, 1, (int)left) <= 0)
                        continue;
                n = read(s->out_fd, s->buf + s->len, sizeof(s->buf) - s->len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return -ETIMEDOUT;
                s->len += (size_t)n;
        }
}

static int spawn(struct kc_cri_server *s, const struct kc_cri_server_env *env, const char *script)
{
        posix_spawn_file_actions_t fa;
        char *argv[] = { (char *)env->node, (char *)script, (char *)env->proto, s->sock, NULL };
        int in[2], out[2], r;

        if (pipe2(in, O_CLOEXEC) < 0)
                return -errno;
        if (pipe2(out, O_CLOEXEC) < 0) {
                r = -errno;
                close(in[0]);
                close(in[1]);
                return r;
        }
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
        posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
        /* One log line per command and event: into a file when asked, not our output. */
        if (s->log[0])
                posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, s->log,
                                                 O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        r = posix_spawn(&s->pid, env->node, &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        close(in[0]);
        close(out[1]);
        if (r != 0) {
                close(in[1]);
                close(out[0]);
                s->pid = 0;
                return -r;
        }
        s->in_fd = in[1];
        s->out_fd = out[0];
        return 0;
}

int kc_cri_server_start(struct kc_cri_server *s, const struct kc_cri_server_env *env,
                        const char *tmp_template, bool log_to_file, int64_t ready_ms,
                        char **ret_ready_line, char *why, size_t why_len)
{
        char script[PATH_MAX + 16];
        json_t *ready;
        char *line = NULL;
        int r;

        memset(s, 0, sizeof(*s));
        snprintf(s->tmp, sizeof(s->tmp), "%s", tmp_template);
        if (!mkdtemp(s->tmp)) {
                r = -errno;
                snprintf(why, why_len, "mkdtemp %s: %s", tmp_template, strerror(-r));
                return r;
        }
        snprintf(s->sock, sizeof(s->sock), "%s/cri.sock", s->tmp);
        if (log_to_file)
                snprintf(s->log, sizeof(s->log), "%s/server.log", s->tmp);
        snprintf(script, sizeof(script), "%s/server.js", env->dir);
        r = spawn(s, env, script);
        if (r < 0) {
                snprintf(why, why_len, "spawning %s %s: %s", env->node, script, strerror(-r));
                return r;
        }
        r = kc_cri_server_read_line(s, ready_ms, &line);
        if (r < 0) {
                snprintf(why, why_len, "the CRI server (%s %s) printed no ready line%s%s",
                         env->node, script, s->log[0] ? "; its log: " : "", s->log);
                return r;
        }
        ready = json_loads(line, 0, NULL);
        if (!ready || !json_is_true(json_object_get(ready, "ready"))) {
                snprintf(why, why_len, "the CRI server's first line is not its ready line: %s",
                         line);
                json_decref(ready);
                free(line);
                return -EPROTO;
        }
        json_decref(ready);
        if (ret_ready_line)
                *ret_ready_line = line;
        else
                free(line);
        return 0;
}

void kc_cri_server_stop(struct kc_cri_server *s, bool keep_log)
{
        int64_t deadline;
        int status;

        if (s->pid <= 0)
                return;
        /* EOF on its stdin shuts it down; SIGKILL if it does not go. */
        close(s->in_fd);
        deadline = now_ms() + 10000;
        while (waitpid(s->pid, &status, WNOHANG) == 0) {
                struct timespec ts = { .tv_nsec = 10 * 1000 * 1000 };

                if (now_ms() > deadline) {
                        fprintf(stderr, "server %d does not exit: SIGKILL\n", (int)s->pid);
                        kill(s->pid, SIGKILL);
                        waitpid(s->pid, &status, 0);
                        break;
                }
                nanosleep(&ts, NULL);
        }
        close(s->out_fd);
        s->pid = 0;
        unlink(s->sock);
        if (keep_log && s->log[0]) {
                fprintf(stderr, "server log kept: %s\n", s->log);
                return;
        }
        if (s->log[0])
                unlink(s->log);
        rmdir(s->tmp);
}

int kc_cri_server_write(struct kc_cri_server *s, const char *text, size_t len)
{
        size_t off = 0;

        while (off < len) {
                ssize_t n = write(s->in_fd, text + off, len - off);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -EPIPE;
                off += (size_t)n;
        }
        return 0;
}

char *kc_cri_server_command_line(json_t *cmd)
{
        char *text = json_dumps(cmd, JSON_COMPACT);
        char *line;
        size_t len;

        json_decref(cmd);
        if (!text)
                return NULL;
        len = strlen(text);
        line = realloc(text, len + 2);
        if (!line) {
                free(text);
                return NULL;
        }
        line[len] = '\n';
        line[len + 1] = '\0';
        return line;
}

int kc_cri_server_reply(struct kc_cri_server *s, const char *what, int64_t ms, json_t **ret,
                        char *why, size_t why_len)
{
        json_t *reply;
        char *line;
        int r;

        r = kc_cri_server_read_line(s, ms, &line);
        if (r < 0) {
                snprintf(why, why_len, "server: no reply to %s", what);
                return r;
        }
        reply = json_loads(line, 0, NULL);
        if (!reply) {
                snprintf(why, why_len, "server: the reply to %s is not JSON: %s", what, line);
                free(line);
                return -EPROTO;
        }
        free(line);
        *ret = reply;
        return 0;
}

int kc_cri_server_request(struct kc_cri_server *s, json_t *cmd, int64_t ms, json_t **ret, char *why,
                          size_t why_len)
{
        char *text = kc_cri_server_command_line(cmd);
        int r;

        if (!text) {
                snprintf(why, why_len, "server: out of memory for a command");
                return -ENOMEM;
        }
        r = kc_cri_server_write(s, text, strlen(text));
        text[strcspn(text, "\n")] = '\0';
        if (r < 0)
                snprintf(why, why_len, "server: writing %s: %s", text, strerror(-r));
        else
                r = kc_cri_server_reply(s, text, ms, ret, why, why_len);
        free(text);
        return r;
}
