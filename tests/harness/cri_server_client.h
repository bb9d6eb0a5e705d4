/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The client side of the Node.js test CRI server (tests/integration/
 * cri-server/): its environment file, spawning it, and its JSON-lines
 * control channel on the child's stdin and stdout. Shared by
 * integration.evented and bench_pleg_latency; link jansson.
 *
 * Nothing here fails a test or exits: every function returns 0 or a
 * negative errno and, where it says so, a message in @p why for the caller
 * to report its own way.
 */
#pragma once

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/** What cri-server/setup.sh recorded: node, the installed server, the proto. */
struct kc_cri_server_env {
        char node[PATH_MAX];
        char dir[PATH_MAX];
        char proto[PATH_MAX];
};

/** Reads KC_CRI_SERVER_NODE, _DIR and _PROTO from @p file: 0, or -ENOENT when one is missing. */
int kc_cri_server_env_load(const char *file, struct kc_cri_server_env *env);

struct kc_cri_server {
        pid_t pid;
        int in_fd;  /* its stdin: commands */
        int out_fd; /* its stdout: replies */
        char buf[1 << 16];
        size_t len;
        char tmp[64];
        char sock[128];
        char log[128]; /* its stderr, or "" when it inherits ours */
};

/**
 * @brief Spawns `node server.js PROTO SOCKET` with its socket in a new
 * directory made from @p tmp_template ("/tmp/name.XXXXXX") and waits up to
 * @p ready_ms for its ready line.
 * @param log_to_file its stderr goes to server.log in that directory
 * @param ret_ready_line may be NULL; else the ready line, malloc'd
 * @return 0, or a negative errno with @p why filled (the server, if it
 *         started, is left to kc_cri_server_stop()).
 */
int kc_cri_server_start(struct kc_cri_server *s, const struct kc_cri_server_env *env,
                        const char *tmp_template, bool log_to_file, int64_t ready_ms,
                        char **ret_ready_line, char *why, size_t why_len);

/**
 * @brief Closes its stdin (which shuts it down), SIGKILLs it when it is
 * still there after 10 s, and removes its socket and directory (the log
 * and the directory stay when @p keep_log). A no-op when it never started.
 */
void kc_cri_server_stop(struct kc_cri_server *s, bool keep_log);

/** One line of its stdout within @p ms: 0 and *ret (malloc'd), -ETIMEDOUT (or EOF), -E2BIG. */
int kc_cri_server_read_line(struct kc_cri_server *s, int64_t ms, char **ret);

/** Writes @p len bytes of commands to its stdin: 0 or a negative errno. */
int kc_cri_server_write(struct kc_cri_server *s, const char *text, size_t len);

/** @p cmd (stolen) as one compact line, newline included; malloc'd, NULL when out of memory. */
char *kc_cri_server_command_line(json_t *cmd);

/**
 * @brief Reads the reply to the command @p what within @p ms, as JSON (not
 * checked for "ok"): 0 and *ret (json_decref), or a negative errno with
 * @p why filled.
 */
int kc_cri_server_reply(struct kc_cri_server *s, const char *what, int64_t ms, json_t **ret,
                        char *why, size_t why_len);

/** Sends @p cmd (stolen) and reads its reply, as kc_cri_server_reply(). */
int kc_cri_server_request(struct kc_cri_server *s, json_t *cmd, int64_t ms, json_t **ret, char *why,
                          size_t why_len);
