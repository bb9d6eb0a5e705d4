/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file termination.h
 * @brief A container's termination message (kuberuntime_container.go):
 * the file mounted at terminationMessagePath, and reading it back, or the
 * tail of the container's log (FallbackToLogsOnError), once it exited.
 */
#pragma once

#include <stddef.h>

#include "runtime/runtime_service.h"

struct kc_arena;

/* kubecontainer's caps. */
#define KC_MAX_CONTAINER_TERMINATION_MESSAGE_LENGTH (4 * 1024)
#define KC_MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LENGTH (2 * 1024)
#define KC_MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LINES 80

/* newContainerAnnotations' keys for the two fields (labels.go). */
#define KC_ANNOTATION_TERMINATION_MESSAGE_PATH "io.kubernetes.container.terminationMessagePath"
#define KC_ANNOTATION_TERMINATION_MESSAGE_POLICY "io.kubernetes.container.terminationMessagePolicy"

/**
 * makeMounts' termination-log part: an empty file <@p pod_container_dir>/
 * <8 random hex digits>, mode 0666, mounted read-write at @p container_path.
 * Nothing (0) without a directory or a path, or when the file cannot be
 * made (logged, as upstream: the container starts without it).
 * @return 1 with *@p ret set (its strings in @p a), 0, or -ENOMEM.
 */
int kc__termination_message_mount(const char *pod_container_dir, const char *container_path,
                                  struct kc_arena *a, struct kc_cri_mount *ret);

/**
 * toKubeContainerStatus' termination message of the exited container @p st
 * (getTerminationMessage, readLastStringFromContainerLogs): the last 4 KiB
 * of the file mounted at the annotated terminationMessagePath; under
 * FallbackToLogsOnError, when that is empty (or missing) and the container
 * exited non-zero, the last 2 KiB of the last 80 lines of its CRI log. Then
 * appended to the runtime's own message after ": ", as upstream.
 * *@p ret (in @p a) is the message to report: st->message when there is
 * nothing to add. @p a is used only for an exited container (may be NULL
 * otherwise). @return 0 or -ENOMEM (then *@p ret untouched).
 */
int kc__termination_message(const struct kc_cri_container *st, struct kc_arena *a,
                            const char **ret);

/**
 * readLastStringFromContainerLogs: the last @p max_bytes of the last
 * @p max_lines lines of the CRI-format log @p path, their
 * "<time> <stream> <tag> " prefixes stripped (a partial line's content is
 * joined to the next). malloc'd; on a failure to read, upstream's
 * "Error on reading termination message from logs: ..." text. NULL on ENOMEM.
 */
char *kc__read_last_string_from_container_logs(const char *path, size_t max_lines,
                                               size_t max_bytes);
