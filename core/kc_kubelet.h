/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kc_kubelet.h
 * @brief The "kubelet object" layer of core/ (library kc_kubelet): the
 * pieces upstream keeps in pkg/kubelet itself, which sit on top of runtime/
 * and pleg/ (unlike kc_core.h, which depends on nothing). Today it holds the
 * pod container deletor and syncLoop; the pod manager and the kubelet's
 * sync handler come next.
 *
 * Conventions as in kc_core.h: 0 or -errno, out-parameters untouched on
 * failure, NULL-safe destructors returning NULL, thread contracts in names
 * or comments. Unlike core/'s base library this layer is daemon-level code
 * and logs warnings itself, as upstream does.
 */
#pragma once

#include <signal.h>

#include "kc_core.h"
#include "kc_health.h"
#include "kc_runtime.h"

/* ------------------------------------------------------------------------ */
/* Pod container deletor (pkg/kubelet/pod_container_deletor.go)               */

/** containerDeletorBufferLimit: queued deletion requests beyond this are dropped. */
#define KC_CONTAINER_DELETOR_BUFFER_LIMIT 50u

/**
 * Removes one container by ID (runtime.DeleteContainer). The runtime
 * manager provides it; its signature matches
 * kc_runtime_service_ops.remove_container so a runtime service can be
 * plugged in directly. Called only on the deletor's worker thread.
 * @return 0 or -errno, filling @p err (may be NULL) on failure.
 */
typedef int (*kc_delete_container_fn)(void *userdata, const char *container_id,
                                      struct kc_runtime_error *err);

/**
 * Issues container deletions asynchronously: a bounded queue (capacity
 * KC_CONTAINER_DELETOR_BUFFER_LIMIT) of container IDs consumed by one
 * worker thread that calls the delete function for each ID. Failed
 * deletions are logged and not retried (the container GC catches up).
 */
struct kc_pod_container_deletor;

/**
 * @brief Starts the deletor and its worker thread.
 *
 * @p containers_to_keep is the number of dead instances of a container kept
 * per pod. The kubelet passes max(MaxPerPodContainer, 1) (minDeadContainerInPod,
 * F-DEL-04); the clamp to >= 1 is also applied here, so 0 or a negative
 * value keeps one (remove-all mode is per call, see below).
 * @p delete_container and @p userdata are borrowed: they must stay valid
 * until kc_pod_container_deletor_free() returns.
 * @return 0, -EINVAL, -ENOMEM or the pthread_create error; *ret unchanged on
 * failure.
 */
int kc_pod_container_deletor_new(kc_delete_container_fn delete_container, void *userdata,
                                 int containers_to_keep, struct kc_pod_container_deletor **ret);

/**
 * @brief Stops the worker and frees the deletor. NULL-safe; returns NULL.
 *
 * Waits for a deletion in flight to return, then joins the worker. Requests
 * still queued are dropped, not executed: at shutdown the runtime may be
 * going away, and upstream's worker never finishes its queue either. The
 * worker is woken by a stop sentinel pushed into the queue; when the queue
 * is full the push fails, but then the worker is busy and checks the stop
 * flag before its next pop (its 1 s pop timeout is only a net).
 * Any thread except the worker (i.e. not from the delete function); no
 * concurrent kc_pod_container_deletor_delete_containers_in_pod().
 */
struct kc_pod_container_deletor *kc_pod_container_deletor_free(struct kc_pod_container_deletor *d);
KC_DEFINE_CLEANUP_FUNC(struct kc_pod_container_deletor, kc_pod_container_deletor_free)

/**
 * @brief deleteContainersInPod: queues the deletion of the dead containers
 * selected by kc__get_containers_to_delete_in_pod().
 *
 * With @p remove_all the deletor keeps no instance and ignores @p filter_id
 * (used when the pod's content should be removed); otherwise it keeps the
 * configured number of instances of the container named by @p filter_id
 * (NULL or "" = every exited container of the pod).
 * Never blocks: when the queue is full the request is dropped with the
 * warning "Failed to issue the request to remove container".
 * Any thread. @p status is only read during the call.
 * @return the number of requests queued (>= 0), or -EINVAL/-ENOMEM.
 */
int kc_pod_container_deletor_delete_containers_in_pod(struct kc_pod_container_deletor *d,
                                                      const char *filter_id,
                                                      const struct kc_pod_status *status,
                                                      bool remove_all);

/**
 * @brief getContainersToDeleteInPod (internal, exposed for tests).
 *
 * - @p filter_id non-empty and not among @p status's containers → none
 *   (logged as a warning);
 * - candidates: the EXITED container statuses whose name equals the filter
 *   container's name, or every exited one without a filter (running,
 *   created and unknown containers never are; sandboxes are not looked at);
 * - at most @p keep candidates → none; otherwise they are sorted by
 *   restart_count (attempt) descending, then created_at descending, and all
 *   but the first @p keep are returned. Full ties keep status order (upstream's
 *   sort.Sort leaves them unspecified).
 *
 * On success *ret is a malloc'd array of *ret_n pointers into @p status
 * (borrowed; free() the array only), or NULL with *ret_n = 0.
 * @return 0 or -EINVAL/-ENOMEM (out-parameters unchanged).
 */
int kc__get_containers_to_delete_in_pod(const char *filter_id, const struct kc_pod_status *status,
                                        int keep, const struct kc_container_status ***ret,
                                        size_t *ret_n);

/* ------------------------------------------------------------------------ */
/* syncLoop (pkg/kubelet/kubelet.go: syncLoop, syncLoopIteration)             */

/** kubetypes.PodOperation. */
enum kc_pod_op {
        KC_POD_OP_SET,
        KC_POD_OP_ADD,
        KC_POD_OP_DELETE,
        KC_POD_OP_REMOVE,
        KC_POD_OP_UPDATE,
        KC_POD_OP_RECONCILE,
        _KC_POD_OP_MAX,
        _KC_POD_OP_INVALID = -EINVAL,
};

/** "SET", "ADD", "DELETE", "REMOVE", "UPDATE", "RECONCILE". */
const char *kc_pod_op_to_string(enum kc_pod_op op);

/**
 * kubetypes.PodUpdate: what a config source sends on the config channel.
 * One allocation owning its pod references; free with kc_pod_update_free().
 */
struct kc_pod_update {
        enum kc_pod_op op;
        const char *source; /* "file", "api", ... */
        size_t n_pods;
        struct kc_api_pod *pods[]; /* one reference each */
};

/** Takes a new reference to each of @p pods. NULL on ENOMEM. */
struct kc_pod_update *kc_pod_update_new(enum kc_pod_op op, const char *source,
                                        struct kc_api_pod *const *pods, size_t n_pods);
void kc_pod_update_free(struct kc_pod_update *u);
/** The kc_chan item destructor for config channels. */
void kc_pod_update_free_item(void *u);

/**
 * The SyncHandler upstream's syncLoop drives, plus the lookups
 * syncLoopIteration makes (the kubelet implements it over its pod manager,
 * pod workers, work queue and container deletor; tests use fakes). Every
 * callback runs on the loop thread. Pod arrays are borrowed for the call.
 */
struct kc_sync_handler_ops {
        void (*handle_pod_additions)(void *ud, struct kc_api_pod *const *pods, size_t n);
        void (*handle_pod_updates)(void *ud, struct kc_api_pod *const *pods, size_t n);
        void (*handle_pod_removes)(void *ud, struct kc_api_pod *const *pods, size_t n);
        void (*handle_pod_reconcile)(void *ud, struct kc_api_pod *const *pods, size_t n);
        void (*handle_pod_syncs)(void *ud, struct kc_api_pod *const *pods, size_t n);
        /** HandlePodCleanups (housekeeping). */
        void (*handle_pod_cleanups)(void *ud);
        /** podManager.GetPodByUID: a new reference, or NULL when unknown. */
        struct kc_api_pod *(*get_pod_by_uid)(void *ud, const char *uid);
        /** cleanUpContainersInPod, on every ContainerDied (known pod or not). */
        void (*clean_up_containers_in_pod)(void *ud, const char *uid, const char *container_id);
        /**
         * getPodsToSync: the pods due in the work queue (and any other sync
         * handler's picks). *ret is a malloc'd array of new references.
         */
        size_t (*get_pods_to_sync)(void *ud, struct kc_api_pod ***ret);
};

/* Periods and limits (UPSTREAM §1). */
#define KC_SYNC_LOOP_SYNC_PERIOD (1 * KC_NSEC_PER_SEC)
#define KC_SYNC_LOOP_HOUSEKEEPING_PERIOD (2 * KC_NSEC_PER_SEC)
#define KC_SYNC_LOOP_HOUSEKEEPING_WARNING (1 * KC_NSEC_PER_SEC)
#define KC_SYNC_LOOP_BACKOFF_BASE (100 * KC_NSEC_PER_MSEC)
#define KC_SYNC_LOOP_BACKOFF_MAX (5 * KC_NSEC_PER_SEC)

struct kc_sync_loop_config {
        struct kc_clock *clock;                 /* borrowed */
        struct kc_chan *config;                 /* borrowed; items: struct kc_pod_update */
        struct kc_chan *pleg;                   /* borrowed; items: struct kc_pleg_event */
        struct kc_chan *probes;                 /* borrowed, may be NULL; items: UID strings */
        struct kc_runtime_state *runtime_state; /* borrowed */
        const struct kc_sync_handler_ops *handler;
        void *handler_userdata;
        /** Config sources that must have sent something before housekeeping runs. */
        const char *const *sources;
        size_t n_sources;
        int64_t resync_interval_ns; /* for the health check; default 1 min */
        /**
         * Signals that stop the loop (SIGTERM, SIGINT in the daemon), read
         * through a signalfd the loop owns; NULL for none. The caller blocks
         * them in every thread (pthread_sigmask before starting threads).
         * During a runtime-error backoff a signal is seen before the next
         * sleep, so within one backoff step (at most 5 s).
         */
        const sigset_t *stop_signals;
};

/**
 * The sync loop. kc_sync_loop_run() runs it on the calling thread, which
 * becomes its owner, until kc_sync_loop_stop_mp() is called from any thread
 * or one of the stop signals arrives.
 */
struct kc_sync_loop;

int kc_sync_loop_new(const struct kc_sync_loop_config *cfg, struct kc_sync_loop **ret);
/** Not while running. NULL-safe; returns NULL. */
struct kc_sync_loop *kc_sync_loop_free(struct kc_sync_loop *l);
KC_DEFINE_CLEANUP_FUNC(struct kc_sync_loop, kc_sync_loop_free)

/**
 * Runs syncLoop until stopped: while runtimeErrors() reports a problem it
 * reads nothing and sleeps (on the clock) 100 ms, doubling up to 5 s, and
 * resets on success; otherwise each iteration waits in epoll on the
 * channels and the sync and housekeeping timers and serves ready sources
 * fairly. Returns 0 when stopped, -EBUSY if already running.
 */
int kc_sync_loop_run(struct kc_sync_loop *l);
/** Any thread; idempotent. Wakes the loop, which then returns. */
void kc_sync_loop_stop_mp(struct kc_sync_loop *l);
/** SyncLoopHealthCheck, any thread: false and "sync Loop took longer than expected" when stale. */
bool kc_sync_loop_healthy(struct kc_sync_loop *l, char **ret_err);

/* ------------------------------------------------------------------------ */
/* Pod manager (pkg/kubelet/pod/pod_manager.go)                               */

/**
 * The desired pods, by UID and by full name ("name_namespace"), keeping
 * static pods and the API server's mirror pods of them apart and mapping one
 * to the other. Thread-safe (a read-write lock); every getter returns new
 * references (kc_api_pod_unref them).
 */
struct kc_pod_manager;

int kc_pod_manager_new(struct kc_pod_manager **ret);
struct kc_pod_manager *kc_pod_manager_free(struct kc_pod_manager *m);
KC_DEFINE_CLEANUP_FUNC(struct kc_pod_manager, kc_pod_manager_free)

/** AddPod/UpdatePod: stores @p pod (a reference is taken), mirror or not. */
int kc_pod_manager_update_pod(struct kc_pod_manager *m, struct kc_api_pod *pod);
/** RemovePod. */
void kc_pod_manager_remove_pod(struct kc_pod_manager *m, const struct kc_api_pod *pod);
/** SetPods: replaces everything. */
int kc_pod_manager_set_pods(struct kc_pod_manager *m, struct kc_api_pod *const *pods, size_t n);

/** GetPodByUID: the non-mirror pod, or NULL. */
struct kc_api_pod *kc_pod_manager_get_pod_by_uid(struct kc_pod_manager *m, const char *uid);
/** GetPodByFullName / GetPodByName: the non-mirror pod, or NULL. */
struct kc_api_pod *kc_pod_manager_get_pod_by_full_name(struct kc_pod_manager *m,
                                                       const char *full_name);
struct kc_api_pod *kc_pod_manager_get_pod_by_name(struct kc_pod_manager *m, const char *namespace,
                                                  const char *name);
/** GetPodByMirrorPod: the static pod a mirror pod stands for, or NULL. */
struct kc_api_pod *kc_pod_manager_get_pod_by_mirror_pod(struct kc_pod_manager *m,
                                                        const struct kc_api_pod *mirror);
/** GetMirrorPodByPod: the mirror of a static pod, or NULL. */
struct kc_api_pod *kc_pod_manager_get_mirror_pod_by_pod(struct kc_pod_manager *m,
                                                        const struct kc_api_pod *pod);
/**
 * GetPodAndMirrorPod: for a mirror pod, its static pod (*ret_pod, may be
 * NULL) and itself; for any other pod, itself and its mirror (may be NULL).
 * Returns true when the static pod is known (upstream's wasMirror flag is
 * @p pod->mirror_pod).
 */
bool kc_pod_manager_get_pod_and_mirror_pod(struct kc_pod_manager *m, struct kc_api_pod *pod,
                                           struct kc_api_pod **ret_pod,
                                           struct kc_api_pod **ret_mirror);
/** GetPods: every non-mirror pod, a malloc'd array of references. */
size_t kc_pod_manager_get_pods(struct kc_pod_manager *m, struct kc_api_pod ***ret);
/** GetOrphanedMirrorPodNames: full names of mirror pods without a static pod (malloc'd). */
size_t kc_pod_manager_get_orphaned_mirror_pod_names(struct kc_pod_manager *m, char ***ret);
/** TranslatePodUID: a mirror pod's UID becomes its static pod's; others map to themselves. */
char *kc_pod_manager_translate_pod_uid(struct kc_pod_manager *m, const char *uid);

/* ------------------------------------------------------------------------ */
/* Runtime status polling (kubelet.go: updateRuntimeUp)                       */

/** The updateRuntimeUp period. */
#define KC_RUNTIME_UP_PERIOD (5 * KC_NSEC_PER_SEC)

/**
 * updateRuntimeUp, once: asks the runtime for its Status and records it in
 * @p state. A failed call changes nothing. A missing or false NetworkReady
 * sets the network error "container runtime network not ready: <cond>"; a
 * missing or false RuntimeReady sets the runtime error "container runtime
 * not ready: <cond>" and stops there, so the runtime-sync time is not
 * refreshed; otherwise the runtime error is cleared and the sync time set
 * to now. <cond> is "NetworkReady=false reason:R message:M" or "<nil>".
 * Any thread. Returns the Status call's error, or 0.
 */
int kc_update_runtime_up(struct kc_runtime_state *state, struct kc_runtime_service svc,
                         struct kc_clock *clock);

/** A thread calling kc_update_runtime_up() at once and then every @p period_ns. */
struct kc_runtime_up_poller;

int kc_runtime_up_poller_start(struct kc_runtime_state *state, struct kc_runtime_service svc,
                               struct kc_clock *clock, int64_t period_ns,
                               struct kc_runtime_up_poller **ret);
/** Stops and joins the thread. NULL-safe; returns NULL. */
struct kc_runtime_up_poller *kc_runtime_up_poller_stop(struct kc_runtime_up_poller *p);

/* ------------------------------------------------------------------------ */
/* The kubelet's SyncHandler (kubelet.go HandlePod*, kubelet_pods.go)         */

struct kc_pod_workers;
struct kc_work_queue;
struct kc_backoff;

/** What the kubelet's handlers work with; all borrowed, outliving the kubelet. */
struct kc_kubelet_deps {
        struct kc_clock *clock;
        struct kc_pod_manager *pod_manager;
        struct kc_pod_workers *pod_workers;
        struct kc_work_queue *work_queue;
        struct kc_pod_container_deletor *deletor;
        struct kc_pod_cache *cache;
        /** GetPods for housekeeping's orphan kill (the runtime cache upstream). */
        struct kc_pod_runtime runtime;
        /** Restart backoff, GC'd at the end of housekeeping; may be NULL. */
        struct kc_backoff *backoff;
};

struct kc_kubelet;

int kc_kubelet_new(const struct kc_kubelet_deps *deps, struct kc_kubelet **ret);
struct kc_kubelet *kc_kubelet_free(struct kc_kubelet *k);
KC_DEFINE_CLEANUP_FUNC(struct kc_kubelet, kc_kubelet_free)

/** The loop whose config sources gate deletions (HandlePodRemoves); set before it runs. */
void kc_kubelet_set_sync_loop(struct kc_kubelet *k, struct kc_sync_loop *loop);

/** The SyncHandler to give kc_sync_loop (userdata: the kc_kubelet). */
extern const struct kc_sync_handler_ops kc_kubelet_sync_handler;

/** The pod workers' enqueue callback (userdata: the kc_work_queue). Any thread. */
void kc_kubelet_enqueue(void *work_queue, const char *uid, int64_t delay_ns);

/** sourcesReady.AllReady(): loop thread only (the handlers run there). */
bool kc_sync_loop_sources_ready(const struct kc_sync_loop *l);

/* ------------------------------------------------------------------------ */
/* Manifests (config/common.go and file.go: a static pod from a file)         */

/** Limits on a manifest, so that hostile input fails fast and small. */
#define KC_MANIFEST_MAX_SIZE (1024 * 1024) /* bytes in the file */
#define KC_MANIFEST_MAX_DEPTH 64           /* nested collections */
#define KC_MANIFEST_MAX_STRING (64 * 1024) /* bytes in one scalar */
#define KC_MANIFEST_MAX_NODES 100000       /* nodes, counting every alias expanded */
#define KC_MANIFEST_MAX_ANCHORS 256        /* distinct YAML anchors (&name) */

/** kubelet/types: the config source of file pods and the annotations it sets. */
#define KC_MANIFEST_SOURCE "file"
#define KC_ANNOTATION_CONFIG_HASH "kubernetes.io/config.hash"
#define KC_ANNOTATION_CONFIG_SOURCE "kubernetes.io/config.source"
#define KC_ANNOTATION_CONFIG_SEEN "kubernetes.io/config.seen"

/**
 * @brief Parses one static-pod manifest, a v1 Pod in YAML or JSON, and
 * applies the file source's defaults. Any thread; no I/O, no clock.
 *
 * Only the fields kc_api_pod carries are read (metadata.name, namespace,
 * uid, labels, annotations; spec.restartPolicy, hostNetwork,
 * terminationGracePeriodSeconds, initContainers and containers with name,
 * image, command, args, imagePullPolicy); unknown fields are ignored. YAML
 * 1.1 typing applies as in sigs.k8s.io/yaml: `name: 123` or `name: yes` is
 * not a string. One document per file; merge keys (<<) are refused; aliases
 * are followed but never copied, and count toward KC_MANIFEST_MAX_NODES.
 *
 * Defaults (upstream applyDefaults, v1 defaulting): namespace "default"; the
 * name becomes "<name>-<lowercased node_name>"; without metadata.uid the UID
 * is 32 hex digits of FNV-1a-128 over the parsed document (its YAML event
 * stream: comments, layout and quoting style do not count, so a JSON file
 * and its YAML twin agree), then "host:" @p node_name and "file:"
 * @p file_name (upstream: md5 over the decoded pod, the node and the path);
 * annotations kubernetes.io/config.hash = the UID, config.source = "file",
 * config.seen = @p seen_ns in RFC 3339 (UTC, nanoseconds, Go's RFC3339Nano),
 * replacing any the file sets; labels and annotations sorted by key;
 * restartPolicy Always; terminationGracePeriodSeconds 30; imagePullPolicy
 * Always for an image tagged ":latest" or untagged without a digest, else
 * IfNotPresent; source "file", static_pod, phase Pending, creation_ts =
 * @p seen_ns, deletion_grace_s -1.
 *
 * Errors name the file and, when the problem is a field, its path, and only
 * the first problem is reported (upstream lists them all):
 * - "<file>: <path>: <what>", e.g. "m.yaml: spec.containers[1].image:
 *   required value", "m.yaml: metadata.name: must be a string",
 *   "m.yaml: spec.restartPolicy: unsupported value "Sometimes"
 *   (supported: "Always", "OnFailure", "Never")";
 * - "<file>: line L, column C: <what>" for YAML syntax errors (libyaml's
 *   problem, and its context in parentheses), invalid UTF-8 and the limits;
 * - "<file>: <what>" for "empty manifest", "manifest too large (...)" and a
 *   document that is not an object.
 *
 * @param data the file's bytes (need not be NUL-terminated); NULL if @p len is 0
 * @param file_name the manifest's path, in messages and in the UID
 * @param node_name non-empty
 * @param seen_ns when the source saw the file (ns since the epoch)
 * @param ret on success a new pod reference; untouched on failure
 * @param ret_err may be NULL; on -EBADMSG a malloc'd message; untouched otherwise
 * @return 0; -EBADMSG for an invalid manifest; -EINVAL for bad arguments;
 *         -ENOMEM
 */
int kc_manifest_parse(const char *data, size_t len, const char *file_name, const char *node_name,
                      int64_t seen_ns, struct kc_api_pod **ret, char **ret_err);

/* ------------------------------------------------------------------------ */
/* File config source (config/file.go, file_linux.go; config.go's merge)     */

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
 * order wins a duplicate UID), are diffed against what the consumer was
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
