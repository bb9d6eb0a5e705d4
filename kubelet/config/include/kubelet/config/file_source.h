/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kubelet/config/file_source.h
 * @brief The file config source (pkg/kubelet/config/file.go, file_linux.go).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"

struct kc_api_pod;
struct kc_chan;
struct kc_clock;

/** --file-check-frequency's default. */
#define KC_FILE_CHECK_FREQUENCY_DEFAULT (20 * KC_NSEC_PER_SEC)

/**
 * The file config source: one thread that turns a manifest directory into
 * kc_pod_update items (source "file") on a config channel.
 *
 * Scanning. The directory's entries not starting with '.' are taken in
 * name order; each is opened following symlinks (upstream's os.Stat), and
 * only regular files are read (directories and other types are skipped,
 * at -v=4), at most KC_MANIFEST_MAX_SIZE + 1 bytes, so a larger file fails
 * with the parser's "manifest too large". Each file is parsed with
 * kc_manifest_parse(path = "<dir>/<name>", seen = clock now). A file whose
 * (dev, inode, size, mtime, ctime) did not change since the last scan is
 * not re-read.
 *
 * Changes. The pods of all files, keyed by UID (the first file in name
 * order wins a duplicate UID, and a duplicate name in the same namespace is
 * refused with "Pod failed validation", as upstream's filterInvalidPods),
 * are diffed against what the consumer was
 * last told: new UIDs → one ADD carrying all of them, UIDs whose pod
 * differs → one UPDATE, vanished UIDs → one REMOVE, pushed in config.go's
 * order REMOVE, ADD, UPDATE. Pods are compared on every field except
 * creation_ts and the kubernetes.io/config.seen annotation, which the
 * parser sets from the scan time, so a touch or an identical rewrite sends
 * nothing. The UID hashes the content unless metadata.uid is set (as
 * upstream), so editing a file without metadata.uid is REMOVE old + ADD
 * new; with metadata.uid it is an UPDATE. The first scan always sends an
 * ADD, empty if there are no pods (also when the directory is missing, as
 * upstream's empty SET), so syncLoop marks "file" ready.
 *
 * Errors. A malformed file is logged at error level once per content,
 * with the parser's message (which names the file and the field path);
 * the pod that file defined before is kept (no UPDATE, no REMOVE) and
 * other files are unaffected. A missing directory is logged once and
 * retried; if it disappears, the pods it defined are REMOVEd (upstream
 * sends an empty SET for a missing path). Any other error on the
 * directory (EACCES, ...) keeps its pods. When kc_chan_push_mp() reports
 * the channel full, the changes stay pending (logged once) and the diff is
 * retried every 100 ms: nothing is lost, and later changes merge in.
 *
 * Waking. The thread polls an inotify fd (IN_CREATE, IN_DELETE, IN_MODIFY,
 * IN_MOVED_FROM/TO, IN_CLOSE_WRITE, IN_DELETE_SELF, IN_MOVE_SELF on the
 * directory) and a stop eventfd, with a 100 ms real-time timeout. Any
 * event triggers a full rescan. After each wake-up it compares the
 * injected clock with the next periodic deadline (last scan start +
 * @p check_frequency_ns), so with a fake clock a test's advance past the
 * deadline causes a rescan within ~100 ms. While the directory is not
 * watched (missing, or deleted/moved) the watch is re-added every wake-up.
 */
struct kc_file_source;

/**
 * @brief Starts the source's thread. Borrowed: @p clock and @p config
 * (items: struct kc_pod_update, freed with kc_pod_update_free_item) must
 * outlive kc_file_source_stop(). @p dir and @p node_name are copied.
 * @return 0, -EINVAL (NULL/empty strings, check_frequency_ns <= 0), -ENOMEM,
 * inotify/eventfd/pthread_create errors; *ret unchanged on failure.
 */
int kc_file_source_start(const char *dir, const char *node_name, struct kc_clock *clock,
                         int64_t check_frequency_ns, struct kc_chan *config,
                         struct kc_file_source **ret);

/**
 * @brief Stops and joins the thread (within one poll round, normally at
 * once: the stop eventfd wakes it), then frees everything. Changes still
 * pending are dropped. Call once, from any thread but the source's.
 * NULL-safe; returns NULL.
 */
struct kc_file_source *kc_file_source_stop(struct kc_file_source *s);
KC_DEFINE_CLEANUP_FUNC(struct kc_file_source, kc_file_source_stop)

/** Tests and metrics, any thread: completed scans (each followed by a push attempt). */
uint64_t kc_file_source_scans(const struct kc_file_source *s);
/** Tests and metrics, any thread: push rounds refused by a full channel. */
uint64_t kc_file_source_full_events(const struct kc_file_source *s);

/** The UPDATE comparison (internal, exposed for tests). */
bool kc__file_source_pods_equal(const struct kc_api_pod *a, const struct kc_api_pod *b);
