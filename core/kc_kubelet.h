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
/**
 * True while the loop backs off because runtimeErrors() reported a problem,
 * and so reads none of its channels; false once an iteration runs. Any
 * thread. A health check that fails *because* the loop does not read (the
 * PLEG channel is full) must pass meanwhile, or the loop would never read
 * again: see kc_sync_loop_evented_pleg_healthy().
 */
bool kc_sync_loop_backing_off(struct kc_sync_loop *l);

struct kc_evented_pleg;
/**
 * @brief EventedPLEG's runtimeState health check as the kubelet registers
 * it: kc_evented_pleg_healthy(@p e), except that it passes (*ret_err NULL)
 * while @p l backs off (kc_sync_loop_backing_off()). EventedPLEG fails
 * while the PLEG channel is full; a failing check makes syncLoop back off
 * and read nothing; syncLoop is that channel's only reader: without the
 * exception the channel would stay full and the loop back off forever. The
 * error that started the back-off is reported by its own check. @p l may
 * be NULL (no loop yet): the plain check. Any thread.
 */
bool kc_sync_loop_evented_pleg_healthy(struct kc_sync_loop *l, struct kc_evented_pleg *e,
                                       char **ret_err);

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
        /** Statuses of pods no longer desired are dropped in housekeeping; may be NULL. */
        struct kc_status_manager *status_manager;
        /** So are their start-failure reasons (D18); may be NULL. */
        struct kc_reason_cache *reasons;
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
/* NewMainKubelet's parts over a runtime (core/kubelet_parts.c)               */

/**
 * What kc_kubelet_parts_build() needs. Everything is borrowed and must
 * outlive the parts. The daemon fills it from its flags; tests (the chaos
 * test) fill it directly, so both run the same assembly.
 */
struct kc_kubelet_parts_config {
        struct kc_clock *clock;
        /** The runtime service: the container deletor removes containers through it. */
        struct kc_runtime_service svc;
        struct kc_runtime_manager *manager; /* SyncPod, KillPod, GetPods (PLEG, housekeeping) */
        struct kc_kubelet_metrics *metrics; /* may be NULL */
        const char *node_ip;                /* hostIP */
        const char *runtime_name;           /* containerID scheme */
        int64_t crash_loop_initial_ns, crash_loop_max_ns; /* the restart back-off */
        int64_t sync_frequency_ns;                        /* pod worker resync, loop health */
        int64_t max_wait_for_container_runtime_ns;
        int maximum_dead_containers_per_container; /* < 1 counts as 1 */
        /** GenericPLEG's relist period and health threshold. */
        int64_t relist_period_ns, relist_threshold_ns;
        /** GenericPLEG's EventedPLEG hook (kc_generic_pleg_config); NULL: gate off. */
        bool (*evented_in_use)(void *userdata);
        void *evented_userdata;
        /** syncLoop's config sources (kc_sync_loop_config) and stop signals. */
        const char *const *sources;
        size_t n_sources;
        const sigset_t *stop_signals;
};

/**
 * The parts NewMainKubelet builds, wired as the daemon runs them: pod
 * status cache, pod manager, restart and image-pull back-offs, reason
 * cache, status manager, runtimeState (with the "PLEG" health check), the
 * config channel (50) and the PLEG channel (1000), GenericPLEG, the work
 * queue, the pod syncer, the pod workers, the container deletor, the
 * kubelet's SyncHandler and syncLoop. No thread runs yet except the
 * deletor's; the caller starts PLEG, the runtime-up poller and syncLoop.
 */
struct kc_kubelet_parts {
        struct kc_pod_cache *cache;
        struct kc_pod_manager *pod_manager;
        struct kc_backoff *backoff, *image_backoff;
        struct kc_reason_cache *reasons;
        struct kc_status_manager *status_manager;
        struct kc_runtime_state *runtime_state;
        struct kc_chan *config, *events;
        struct kc_generic_pleg *pleg;
        struct kc_work_queue *work_queue;
        struct kc_pod_syncer *syncer;
        struct kc_pod_workers *pod_workers;
        struct kc_pod_container_deletor *deletor;
        struct kc_kubelet *kubelet;
        struct kc_sync_loop *loop;
};

/**
 * Builds every part in upstream's order into @p ret (zeroed first). On
 * failure the parts built so far stay in @p ret: kc_kubelet_parts_done()
 * frees them. @return 0, -EINVAL or -ENOMEM (or a part's error).
 */
int kc_kubelet_parts_build(const struct kc_kubelet_parts_config *cfg, struct kc_kubelet_parts *ret);
/**
 * Stops the threads the parts own: the pod workers (in-flight syncs
 * cancelled and joined) and the deletor. The caller stops syncLoop, PLEG
 * and the runtime-up poller first. Idempotent.
 */
void kc_kubelet_parts_stop(struct kc_kubelet_parts *p);
/** kc_kubelet_parts_stop(), then frees every part. NULL fields are skipped. */
void kc_kubelet_parts_done(struct kc_kubelet_parts *p);

/* ------------------------------------------------------------------------ */
/* The daemon's flags (cmd/kubelet/app/options: kubelet's names)             */

/** What the command line sets; kc_kubelet_flags_done() frees the strings. */
struct kc_kubelet_flags {
        char *container_runtime_endpoint; /* "sim://" or "unix:///path" */
        char *pod_manifest_path;          /* NULL: no static pods */
        int64_t file_check_frequency_ns;
        int64_t sync_frequency_ns;
        int64_t runtime_request_timeout_ns;
        bool evented_pleg; /* --feature-gates=EventedPLEG=true */
        int64_t evented_pleg_cache_update_period_ns;
        int64_t evented_pleg_reprobe_period_ns;
        char *address; /* read-only server */
        uint16_t port; /* 0: disabled */
        char *healthz_bind_address;
        uint16_t healthz_port;   /* 0: disabled */
        char *hostname_override; /* always set: the host name by default */
        char *node_ip;           /* NULL: detect */
        char *root_dir;
        int maximum_dead_containers_per_container;
        int64_t max_wait_for_container_runtime_ns; /* runtimeState's threshold */
        int64_t crash_loop_initial_ns;
        int64_t crash_loop_max_ns;
        int verbosity;
        bool help;
        bool version;
};

/**
 * @brief Parses the flags in argv[1..] up to the first argument that is not
 * a flag (a subcommand) or "--"; *ret_optind is its index (argc if none).
 * `--name=value` and `--name value` both work; booleans take no value; -v and
 * -h are the only one-dash spellings. Every flag has its default (see
 * kc_kubelet_flags_usage()); the host name is looked up when
 * --hostname-override is not given.
 * @return 0; -EINVAL with *ret_err a one-line malloc'd reason naming the
 * flag (unknown flag, missing or bad value, inconsistent values); -ENOMEM.
 * Out-parameters untouched on failure (except *ret_err on -EINVAL).
 */
int kc_kubelet_flags_parse(int argc, char *const *argv, struct kc_kubelet_flags *ret,
                           int *ret_optind, char **ret_err);
void kc_kubelet_flags_done(struct kc_kubelet_flags *f);
/** --help: every flag with its default. */
void kc_kubelet_flags_usage(FILE *out);

/* ------------------------------------------------------------------------ */
/* Node status (pkg/kubelet/nodestatus: the v1 Node for /node)                */

struct kc_node_status_config {
        struct kc_clock *clock;                 /* borrowed */
        struct kc_runtime_state *runtime_state; /* borrowed */
        const char *node_name;                  /* copied */
        const char *node_ip;                    /* copied */
        const char *runtime_version;            /* "<runtime name>://<version>", copied */
        const char *kubelet_version;            /* copied */
};

/**
 * The node as the kubelet would report it. Its Ready condition is "True"
 * (reason KubeletReady, "kubelet is posting ready status") when
 * runtimeErrors, networkErrors and storageErrors are all clear, else
 * "False" (KubeletNotReady) with their aggregated message (ReadyCondition).
 * lastTransitionTime is when a render first saw the current Ready status.
 */
struct kc_node_status;

int kc_node_status_new(const struct kc_node_status_config *cfg, struct kc_node_status **ret);
struct kc_node_status *kc_node_status_free(struct kc_node_status *n);
KC_DEFINE_CLEANUP_FUNC(struct kc_node_status, kc_node_status_free)

/**
 * A kc_http_render_fn (userdata: the kc_node_status): the v1 Node as JSON.
 * Any thread, concurrently.
 */
int kc_node_status_render(void *userdata, char **ret_json);

/* ------------------------------------------------------------------------ */
/* The kubelet's pod syncer (kubelet.go SyncPod, SyncTerminatingPod, ...)     */

struct kc_reason_cache;
struct kc_status_manager;
struct kc_runtime_manager;

/** What the pod syncer works with; all borrowed and thread-safe, outliving it. */
struct kc_pod_syncer_config {
        struct kc_clock *clock;
        struct kc_runtime_manager *manager;
        /** networkErrors() gates pods that need pod networking (F-SYNC-01). */
        struct kc_runtime_state *runtime_state;
        struct kc_status_manager *status_manager;
        struct kc_reason_cache *reasons;
        struct kc_backoff *backoff;         /* container restarts; may be NULL */
        struct kc_backoff *image_backoff;   /* image pulls; may be NULL */
        struct kc_kubelet_metrics *metrics; /* may be NULL */
        const char *node_ip;                /* hostIP */
        const char *runtime_name;           /* containerID scheme: "sim", "containerd" */
};

/**
 * The podSyncer the pod workers drive (kc_pod_syncer_kubelet_ops, userdata
 * the kc_pod_syncer):
 * - sync_pod: generates the v1 status into the status manager (a terminal
 *   phase ends the sync with *ret_is_terminal); a pod without hostNetwork
 *   fails with "network is not ready: <networkErrors>" while the network
 *   is not ready (the pod workers retry it after ~1 s); otherwise the
 *   runtime manager's SyncPod runs, its start results feed the reason
 *   cache, and a sync refused only by back-offs is requeued when the first
 *   one ends (D10). Observes kubelet_pod_worker_duration_seconds, and on
 *   create kubelet_pod_worker_start_duration_seconds (since the pod's
 *   creation_ts, which file pods set to config.seen) and
 *   kubelet_containers_per_pod_count;
 * - sync_terminating_pod: KillPod with the given grace (else the pod's),
 *   then checks that nothing runs any more and stores the final status;
 * - sync_terminating_runtime_pod: KillPod of an orphan with 1 s (raised to
 *   2 s by KillPod);
 * - sync_terminated_pod: stores the terminal status.
 * Callbacks run on pod-worker threads, concurrently for different pods.
 */
struct kc_pod_syncer;

int kc_pod_syncer_new(const struct kc_pod_syncer_config *cfg, struct kc_pod_syncer **ret);
struct kc_pod_syncer *kc_pod_syncer_free(struct kc_pod_syncer *s);
KC_DEFINE_CLEANUP_FUNC(struct kc_pod_syncer, kc_pod_syncer_free)

struct kc_pod_syncer_ops;
extern const struct kc_pod_syncer_ops kc_pod_syncer_kubelet_ops;

/* ------------------------------------------------------------------------ */
/* Manifests (config/common.go and file.go: a static pod from a file)         */

/** Limits on a manifest, so that hostile input fails fast and small. */
#define KC_MANIFEST_MAX_SIZE (1024 * 1024) /* bytes in the file */
#define KC_MANIFEST_MAX_DEPTH 64           /* nested collections */
#define KC_MANIFEST_MAX_STRING (64 * 1024) /* bytes in one scalar */
#define KC_MANIFEST_MAX_NODES 100000       /* nodes, counting every alias expanded */
#define KC_MANIFEST_MAX_ANCHORS 256        /* distinct YAML anchors (&name) */
/* Bytes of all scalars, counting every alias expanded (an alias-free file stays under it). */
#define KC_MANIFEST_MAX_EXPANDED (4 * KC_MANIFEST_MAX_SIZE)

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
 * are followed but never copied, and count toward KC_MANIFEST_MAX_NODES and
 * KC_MANIFEST_MAX_EXPANDED (so a big string aliased many times is refused:
 * the pod would hold every copy).
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

/* ------------------------------------------------------------------------ */
/* Pod status: the reason cache, getPhase and v1.PodStatus generation         */
/* (kuberuntime ReasonCache; kubelet_pods.go generateAPIPodStatus, getPhase,  */
/* convertToAPIContainerStatuses; status/generate.go)                         */

/* JSON documents are jansson values (kc_kubelet links jansson publicly). */
#include <jansson.h>

/** maxReasonCacheEntries: the reason cache keeps at most this many containers. */
#define KC_REASON_CACHE_MAX_ENTRIES 1000u

/**
 * The last start failure of each container, keyed by (pod UID, container
 * name) → (reason, message): what a container that will be restarted shows
 * as its waiting state ("CrashLoopBackOff", "ErrImagePull",
 * "ImagePullBackOff", "ErrImageNeverPull", "CreateContainerError",
 * "RunContainerError"). SyncPod records each StartContainer outcome:
 * a failure updates the entry, a success removes it.
 *
 * At most KC_REASON_CACHE_MAX_ENTRIES entries: inserting a new key into a
 * full cache evicts the least recently updated entry (reads do not count as
 * use; upstream's LRU also refreshes on Get). Every call is safe from any
 * thread (one internal mutex).
 */
struct kc_reason_cache;

/** *ret unchanged on failure. @return 0 or -ENOMEM. */
int kc_reason_cache_new(struct kc_reason_cache **ret);
/** Frees every entry. NULL-safe; returns NULL. No concurrent users. */
struct kc_reason_cache *kc_reason_cache_free(struct kc_reason_cache *rc);
KC_DEFINE_CLEANUP_FUNC(struct kc_reason_cache, kc_reason_cache_free)

/**
 * @brief Update: records (@p reason, @p message) for the container,
 * replacing any previous entry, and makes it the most recently updated one.
 * The strings are copied; @p message may be NULL (stored as "").
 * @return 0, -EINVAL (NULL argument or empty @p reason) or -ENOMEM (cache
 * unchanged).
 */
int kc_reason_cache_update(struct kc_reason_cache *rc, const char *uid, const char *container_name,
                           const char *reason, const char *message);

/**
 * @brief Remove: forgets the container's entry (no-op when absent).
 * @return 0, -EINVAL or -ENOMEM (the lookup key could not be built).
 */
int kc_reason_cache_remove(struct kc_reason_cache *rc, const char *uid, const char *container_name);

/**
 * Forgets every entry of a pod not among @p keep_uids (@p n entries, NULL
 * ones ignored). Not upstream's, which keeps a deleted pod's entries until
 * they are the least recently updated of 1,000 (docs/deviations.md D18):
 * housekeeping calls it with the pods still desired or still known to the
 * pod workers.
 * @return the number of entries dropped, -EINVAL or -ENOMEM (nothing
 * dropped).
 */
int kc_reason_cache_remove_orphans(struct kc_reason_cache *rc, const char *const *keep_uids,
                                   size_t n);

/**
 * @brief Get: malloc'd copies of the container's reason and message ("" when
 * none was given). Either out-parameter may be NULL. Does not change the
 * eviction order.
 * @return 0, -ENOENT when absent, -EINVAL or -ENOMEM; out-parameters
 * unchanged on failure.
 */
int kc_reason_cache_get(struct kc_reason_cache *rc, const char *uid, const char *container_name,
                        char **ret_reason, char **ret_message);

/** Number of entries (a snapshot). Any thread. */
size_t kc_reason_cache_len(struct kc_reason_cache *rc);

/** Room for kc_format_rfc3339(): "2026-11-21T10:00:00Z" and its NUL. */
#define KC_RFC3339_MAX 32

/**
 * @brief Formats @p ns (since the Unix epoch) as RFC 3339 UTC with second
 * precision, the way metav1.Time serialises ("2026-11-21T10:00:00Z";
 * sub-second parts are truncated toward the past).
 * @return 0, or -ERANGE when the year is outside 0000..9999 (Go refuses to
 * marshal those; int64 nanoseconds only span 1677..2262, so this is a
 * safety net); @p buf unchanged on failure.
 */
int kc_format_rfc3339(int64_t ns, char buf[static KC_RFC3339_MAX]);

/**
 * @brief getPhase (non-sidecar init containers): the pod phase implied by
 * the runtime @p status (NULL: no status) for @p pod's spec.
 *
 * Each spec container is judged by its NEWEST status (statuses in
 * kc_pod_status are newest first) as convertToAPIContainerStatuses shows
 * it: running → running; exited → terminated; created/unknown → waiting,
 * "stopped" when the second newest instance exited (lastState terminated);
 * no status at all → waiting. Init containers: running, waiting without a
 * previous exit, or no status → pending; exited non-zero (or waiting after
 * a non-zero exit) → failed. Then, in order: failed init and restartPolicy
 * Never → Failed; pending init with no app container started, or any app
 * container waiting → Pending; any running → Running; all app containers
 * stopped: with @p pod_is_terminal and not a static pod → Succeeded when all
 * exited 0, else Failed; otherwise Always → Running, all exited 0 →
 * Succeeded, Never → Failed, OnFailure → Running. No app container at all →
 * Pending.
 *
 * This is the phase without reason-cache entries: kc_generate_api_pod_status()
 * also turns an exited container due for restart into "waiting" when the
 * reason cache names a failure, which only matters for @p pod_is_terminal
 * pods (an exited-0 container then counts as stopped, not succeeded).
 * Any thread; no allocation.
 * @return the phase, or _KC_POD_PHASE_INVALID when @p pod is NULL.
 */
enum kc_pod_phase kc_pod_get_phase(const struct kc_api_pod *pod, const struct kc_pod_status *status,
                                   bool pod_is_terminal);

/**
 * @brief generateAPIPodStatus: builds the v1.PodStatus JSON of @p pod from its
 * runtime @p status (NULL: no runtime status yet).
 *
 * Output object, keys in v1 order (empty optional fields omitted):
 * - "phase": getPhase over the container statuses below (see
 *   kc_pod_get_phase()). A terminal phase in @p old_status, or in
 *   @p pod->phase, is never left (upstream's three-way merge and its
 *   "illegal phase transition" guard).
 * - "conditions": PodReadyToStartContainers (True when the newest sandbox
 *   is READY and no other one is, the same test as kc_compute_pod_actions),
 *   Initialized (True when every init container exited 0, or an app
 *   container has started; False "ContainersNotInitialized" "containers
 *   with incomplete status: [a b]"; True "PodCompleted" when Succeeded),
 *   Ready and ContainersReady (True when every app container is ready;
 *   False "ContainersNotReady" "containers with unready status: [a b]";
 *   False "PodCompleted" when Succeeded, False "PodFailed" when Failed;
 *   Ready copies ContainersReady since there are no readiness gates),
 *   PodScheduled True. Each is {type, status "True"/"False", lastProbeTime
 *   null, lastTransitionTime, reason?, message?}. lastTransitionTime is
 *   taken from @p old_status's condition of the same type when its status
 *   is unchanged, else @p now_ns (the status manager does this upstream).
 * - "hostIP", "hostIPs" [{ip}] from @p host_ip (omitted when NULL or "").
 * - "podIP", "podIPs" [{ip}] from @p status->ips as sortPodIPs orders them:
 *   the first IP of @p host_ip's family (IPv4 when unknown), then the first
 *   of the other family; other entries and invalid addresses are dropped.
 *   A host-network pod without pod IPs gets @p host_ip.
 * - "startTime": @p old_status's when set, else @p now_ns.
 * - "initContainerStatuses" (only when the spec has init containers, spec
 *   order) and "containerStatuses" (sorted by name, as upstream's
 *   SortedContainerStatuses; not spec order), one per spec container:
 *   {name, state, lastState, ready, restartCount, image, imageID,
 *   containerID?, started}.
 *   state: running {startedAt}; terminated {exitCode, reason (the
 *   runtime's, else "Completed" for 0 and "Error" otherwise), message?,
 *   startedAt, finishedAt, containerID}; waiting {reason?, message?}. No
 *   runtime status: waiting "ContainerCreating" ("PodInitializing" when the
 *   pod has init containers). Created/unknown newest status: waiting {}.
 *   A container that ShouldContainerBeRestarted (not being deleted; no
 *   status, created/unknown, or exited and the restart policy allows it;
 *   never an init container that exited 0) and that has a reason-cache
 *   entry shows waiting {reason, message} from the cache, e.g.
 *   CrashLoopBackOff with the back-off message, and an exited newest
 *   instance moves to lastState.
 *   lastState: {terminated} of the second newest instance when it exited,
 *   else {} (unless moved there as above).
 *   restartCount: the newest status' restart_count (0 without one).
 *   ready: app containers: running (there are no probes yet, so a running
 *   container is ready); init containers: exited 0. started: running.
 *   image: the spec image. imageID: the newest status' image_ref ("" when
 *   unknown). containerID: "<runtime_name>://<id>" of the newest instance.
 * - "qosClass": "BestEffort" (specs carry no resources).
 * Times are RFC 3339 seconds (kc_format_rfc3339); a zero time is null.
 *
 * Not done: pod-level reason/message, ephemeral containers, resources,
 * keeping a container's old status when its runtime statuses are all gone
 * (upstream reuses @p old_status's terminated state then).
 *
 * @param rc the reason cache; may be NULL (no entries).
 * @param host_ip the node's IP; NULL or "" when unknown.
 * @param runtime_name the containerID scheme: "sim", "containerd", ...
 * @param old_status the status this function produced last time for the
 *        same pod (e.g. from the status manager), or NULL; only read.
 * @param ret on success a new JSON object; untouched on failure.
 * @return 0, -EINVAL (NULL @p pod or @p runtime_name), -ENOMEM.
 *
 * Any thread; @p pod, @p status and @p old_status are only read.
 */
int kc_generate_api_pod_status(const struct kc_api_pod *pod, const struct kc_pod_status *status,
                               struct kc_reason_cache *rc, const char *host_ip,
                               const char *runtime_name, bool pod_is_terminal,
                               const json_t *old_status, int64_t now_ns, json_t **ret);

/**
 * @brief A v1 Pod object for @p pod: {kind "Pod", apiVersion "v1", metadata
 * {name, namespace, uid, creationTimestamp, deletionTimestamp?,
 * deletionGracePeriodSeconds?, labels?, annotations?}, spec
 * {initContainers?, containers [{name, image, command?, args?,
 * imagePullPolicy}], restartPolicy, terminationGracePeriodSeconds?,
 * nodeName?, hostNetwork (only when true)}, status}.
 *
 * "status" shares @p status (a new reference is taken, it is not copied:
 * nobody may modify it afterwards); {} when @p status is NULL.
 * @p node_name may be NULL (no nodeName).
 * Any thread. @return 0, -EINVAL (NULL @p pod, @p status not an object) or
 * -ENOMEM; *ret (a new object) untouched on failure.
 */
int kc_api_pod_to_json(const struct kc_api_pod *pod, const char *node_name, const json_t *status,
                       json_t **ret);

/* ------------------------------------------------------------------------ */
/* Status manager (pkg/kubelet/status/status_manager.go, without API server) */

/**
 * The latest v1.PodStatus of each pod, by UID, with a per-pod version that
 * grows with every accepted change. Every call is safe from any thread (one
 * internal mutex).
 *
 * The manager keeps private deep copies: no jansson value is ever shared
 * between threads through it. (jansson's reference counts are atomic, but
 * json_incref() reads the count with a plain load first, a data race
 * ThreadSanitizer reports; copying a status costs microseconds.)
 */
struct kc_status_manager;

/** *ret unchanged on failure. @return 0 or -ENOMEM. */
int kc_status_manager_new(struct kc_status_manager **ret);
/** Drops every stored status. NULL-safe; returns NULL. No concurrent users. */
struct kc_status_manager *kc_status_manager_free(struct kc_status_manager *sm);
KC_DEFINE_CLEANUP_FUNC(struct kc_status_manager, kc_status_manager_free)

/**
 * @brief SetPodStatus: stores a deep copy of @p status (a v1.PodStatus
 * object; the caller keeps its value) for @p pod->uid.
 *
 * Refused, with a warning logged and the stored status kept, as upstream's
 * updateStatusInternal checks do:
 * - a terminal stored phase (Succeeded, Failed) followed by a non-terminal
 *   one;
 * - checkContainerStateTransition: a container (or init container) whose
 *   stored state is terminated and whose new state is not, unless the
 *   restart policy lets it restart (Always; OnFailure after a non-zero
 *   exit).
 * A status equal to the stored one (json_equal) changes nothing, not even
 * the version ("Ignoring same status").
 * @return 0 (stored or unchanged), -EPERM (refused), -EINVAL (NULL
 * argument, empty UID, @p status not an object) or -ENOMEM.
 */
int kc_status_manager_set_pod_status(struct kc_status_manager *sm, const struct kc_api_pod *pod,
                                     const json_t *status);

/**
 * @brief GetPodStatus: a deep copy of the stored status, owned by the
 * caller (json_decref it; modifying it changes nothing stored).
 * @return 0, -ENOENT, -EINVAL or -ENOMEM; *ret untouched on failure.
 */
int kc_status_manager_get_pod_status(struct kc_status_manager *sm, const char *uid, json_t **ret);

/**
 * The stored status' version: 1 for the first status of a UID, +1 for each
 * accepted change. @return 0, -ENOENT or -EINVAL; *ret untouched on failure.
 */
int kc_status_manager_get_version(struct kc_status_manager *sm, const char *uid, uint64_t *ret);

/**
 * @brief RemoveOrphanedStatuses: drops the status of every UID not among
 * @p keep_uids (@p n entries; NULL entries are ignored).
 * @return the number of statuses dropped, -EINVAL or -ENOMEM (nothing
 * dropped).
 */
int kc_status_manager_remove_orphaned_statuses(struct kc_status_manager *sm,
                                               const char *const *keep_uids, size_t n);

/**
 * @brief The /pods document: a v1 PodList {kind "PodList", apiVersion "v1",
 * metadata {}, items} of the pod manager's (non-mirror) pods, sorted by
 * namespace, then name (then UID), each built by kc_api_pod_to_json() with
 * its stored status, or {"phase": "Pending"} when the status manager has
 * none. Compact JSON, UTF-8.
 *
 * Safe from any thread (HTTP threads call it): it works on snapshots of
 * both managers (pod references, status copies), taken pod by pod.
 * @param node_name spec.nodeName of every item; may be NULL.
 * @param ret_json on success a malloc'd NUL-terminated string; untouched on
 *        failure.
 * @return 0, -EINVAL or -ENOMEM.
 */
int kc_render_pod_list(struct kc_pod_manager *pm, struct kc_status_manager *sm,
                       const char *node_name, char **ret_json);
