/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file sim_internal.h
 * @brief The simulated runtime's private state, shared by the files of runtime/sim/.
 *
 * The sim is one object, struct kc_sim, guarded by one mutex. Its files:
 * - sim.c: the object's lifecycle, ids, IPs and creation times;
 * - state.c: pods, sandboxes and containers, their one-allocation layout
 *   and the copies the CRI face hands out;
 * - commands.c: what a container's command does (busybox-like) and the
 *   lazy clock that lets processes exit, plus crashes;
 * - faults.c: call accounting, injected faults and latency, statistics;
 * - set_pods.c: loading a snapshot (kc_sim_set_pods);
 * - kubecontainer.c: the kubecontainer face (GetPods, GetPodStatus);
 * - images.c: the image store, ImageStatus and PullImage;
 * - cri_face.c: the CRI face's other calls and its ops table;
 * - cri_list.c: ListPodSandbox and ListContainers over one walk;
 * - config.c: what exec keeps of the configs, and the optional full records;
 * - vfs.c: the small virtual filesystems exec sees;
 * - shell.c: the busybox-like builtins and ExecSync.
 *
 * Functions named *_locked run with the sim's lock held; the others take it
 * themselves or touch no shared state.
 */
#pragma once

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/list.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"
#include "runtime/sim.h"

struct kc_arena;
struct kc_clock;
struct kc_map;
struct kc__image_ref;

/* ------------------------------------------------------------------------ */
/* Operations (names are upstream's)                                          */

enum sim_op {
        SIM_OP_GET_PODS,
        SIM_OP_GET_POD_STATUS,
        SIM_OP_VERSION,
        SIM_OP_STATUS,
        SIM_OP_RUN_POD_SANDBOX,
        SIM_OP_STOP_POD_SANDBOX,
        SIM_OP_REMOVE_POD_SANDBOX,
        SIM_OP_POD_SANDBOX_STATUS,
        SIM_OP_LIST_POD_SANDBOX,
        SIM_OP_CREATE_CONTAINER,
        SIM_OP_START_CONTAINER,
        SIM_OP_STOP_CONTAINER,
        SIM_OP_REMOVE_CONTAINER,
        SIM_OP_LIST_CONTAINERS,
        SIM_OP_CONTAINER_STATUS,
        SIM_OP_IMAGE_STATUS,
        SIM_OP_PULL_IMAGE,
        SIM_OP_EXEC_SYNC,
        _SIM_OP_MAX,
        _SIM_OP_INVALID = -EINVAL,
};

/* The upstream name of @p op, NULL when out of range. */
const char *kc__sim_op_to_string(enum sim_op op);
/* The operation named @p s, or _SIM_OP_INVALID. */
enum sim_op kc__sim_op_from_string(const char *s);

/* ------------------------------------------------------------------------ */
/* State                                                                      */

struct sim_pod;

/*
 * What sandboxes and containers share, the first member of both (so a
 * prefetch of an object starts at its allocation): the place in their pod
 * and the region holding the CRI view's strings and arrays ("blob"). The
 * object and its blob are one block in the object's own arena; the blob
 * never changes while the object lives, so results point into it and hold
 * the arena instead of copying it (issue 18).
 */
struct sim_object {
        struct kc_list link; /* on the pod's list of this kind, in insertion order */
        struct sim_pod *pod;
        uint32_t idx;           /* its position on that list (kc__sim_object_touch()) */
        struct kc_arena *arena; /* holds the object itself; freed with it */
        bool from_spec;         /* loaded by kc_sim_set_pods */
        bool keep;              /* set_pods.c, while loading: the snapshot keeps it */
        bool unnamed;           /* its labels do not give its pod's UID (KC_LABEL_POD_UID) */
};

/* A pod's sandboxes or containers. */
struct sim_objects {
        struct kc_list list; /* of struct sim_object, in insertion order */
        size_t n;
        size_t n_unnamed; /* of them, those unnamed: a selector of the pod's UID skips them */
};

/*
 * Marks @p o, of @p p now, unnamed (or not) by its labels, and counts it in
 * @p objs (whoever takes it out of @p objs takes it out of the count).
 */
void kc__sim_object_name(struct sim_objects *objs, const struct sim_pod *p, struct sim_object *o,
                         bool container);

/* A virtual filesystem (vfs.c): absolute, normalised paths. */
#define SIM_PATH_MAX 512
struct sim_file {
        char *path;
        char *data; /* malloc'd, NUL-terminated after size bytes; NULL for none */
        size_t size;
        bool dir;
};
struct sim_fs {
        struct sim_file *v;
        size_t n, cap;
};

struct sim_sandbox {
        struct sim_object o;
        /* CRI view; strings live in this allocation. state mirrors cstate. */
        struct kc_pod_sandbox v;
        /* What the kubecontainer face lists; READY iff RUNNING. */
        enum kc_container_state cstate;
        /* RunPodSandbox's config when the sim records configs (config.c), else NULL. */
        struct sim_config_record *rec;
};

/*
 * The parts of CreateContainer's configs a container's processes see (exec,
 * its own command's builtins): one exact-size allocation with its strings.
 */
struct sim_exec_config {
        const struct kc_label *envs;
        size_t n_envs;
        const char *working_dir; /* NULL or "": "/" */
        const char *hostname;    /* the sandbox config's; NULL: none was given */
        struct kc_cri_opt_i64 run_as_user, run_as_group;
        bool readonly_rootfs;
};

/*
 * The configs an object was created with, deep-copied, kept only while the
 * sim records them (kc_sim_record_configs): in its own arena, which holds
 * this record too.
 */
struct sim_config_record {
        struct kc_arena *arena;
        struct kc_pod_sandbox_config *sandbox; /* NULL: none was given */
        struct kc_container_config *container; /* NULL for a sandbox's record */
};

/* What a busybox-like reading of the command says the process does. */
struct sim_program {
        bool exits;        /* false: runs until stopped */
        int64_t run_ns;    /* time from start to exit */
        int32_t exit_code; /* when it exits by itself */
};

struct sim_container {
        struct sim_object o;
        struct kc_cri_container v; /* strings live in this allocation */
        uint64_t hash;             /* parsed io.kubernetes.container.hash */
        const char *const *argv;   /* command + args */
        size_t argc;
        struct sim_program prog;
        int64_t deadline;            /* exit time while running with prog.exits */
        struct sim_sandbox *sandbox; /* NULL for a kc_sim_set_pods pod without sandboxes */
        /*
         * What exec reads of CreateContainer's configs (config.c; NULL for
         * kc_sim_set_pods containers); its mounts are the CRI view's, v.mounts.
         */
        struct sim_exec_config *exec;
        struct sim_config_record *rec; /* the full configs when recorded, else NULL */
        /* The root filesystem exec sees, and how far the command has acted on it. */
        struct sim_fs fs;
        size_t main_pc;    /* the steps of the command done */
        int64_t main_ns;   /* the time they took, from the start */
        int32_t main_code; /* the status of the last step done */
};

static_assert(offsetof(struct sim_sandbox, o) == 0 && offsetof(struct sim_container, o) == 0,
              "an object's struct sim_object opens it");

struct sim_pod {
        struct kc_list link; /* on the state's list of pods, in insertion order */
        const char *uid;
        const char *name;
        const char *namespace;
        const char *const *ips; /* pod-level IPs (kc_sim_set_pods pods) */
        size_t n_ips;
        bool from_spec; /* loaded by kc_sim_set_pods: listed even when empty */
        bool keep;      /* set_pods.c, while loading: the snapshot keeps it */
        uint64_t *gen;  /* its state's generation, once added to one */
        /* In its state's touch log while this is the log's epoch (kc__sim_pod_touch()). */
        uint64_t touch_epoch;
        /*
         * Which of its sandboxes ([0]) and containers ([1]) were touched in
         * that epoch (bit i: the object at position i, bit 63: any from the
         * 63rd on; SIM_TOUCHED_ALL: all), and in the epoch before it when it
         * was the state's epoch before (prev_touched) (issue 18: a listing
         * is patched with those objects, not with all of the pod's).
         */
        uint64_t touched[2], prev_touched[2];
        /* Where its sandboxes and containers start in the last full listing of each (cri_list.c). */
        size_t listed_at[2];
        struct sim_objects sandboxes;
        struct sim_objects containers;

        /* The kubecontainer face's last results; dropped whenever the pod changes. */
        struct kc_pod *cache_all;
        struct kc_pod *cache_running;
        bool cache_running_valid; /* cache_running may be validly NULL: nothing running */
        struct kc_pod_status *cache_status;
};

struct sim_state {
        struct kc_list pod_list; /* of struct sim_pod */
        size_t n_pods;
        size_t n_sandboxes, n_containers; /* in all pods: bound a listing's size */
        struct kc_map *pods;              /* uid -> sim_pod */
        struct kc_map *sandboxes;         /* id -> sim_sandbox */
        struct kc_map *containers;        /* id -> sim_container */
        int64_t next_deadline;            /* earliest running deadline, INT64_MAX if none */
        bool dup_ids; /* the last snapshot gave one id to two objects of a kind */
        /* Bumped by every change a CRI listing could show (kc__sim_pod_touch()). */
        uint64_t gen;
        /*
         * Bumped by every change of which pods and objects there are or of
         * their order (kc__sim_shape_changed()): while it stays, an object
         * is where the last full listing had it (issue 18).
         */
        uint64_t shape;
        /*
         * The touch log: the pods touched since its epoch began, each once.
         * A full listing is patched with them instead of copied again
         * (cri_list.c). A new shape starts a new epoch, so every pod in it
         * is alive.
         */
        struct sim_pod **touched;
        size_t n_touched, cap_touched;
        uint64_t touch_epoch;
        /* The log of the epoch before (prev_touch_epoch; 0: none): pods alive while the
         * shape stays, which starts it over. */
        struct sim_pod **prev_touched;
        size_t n_prev_touched, cap_prev_touched;
        uint64_t prev_touch_epoch;
};

#define sim_for_each_pod(p, st) kc_list_for_each_entry (p, &(st)->pod_list, struct sim_pod, link)
#define sim_for_each_sandbox(sb, p)                                                                \
        kc_list_for_each_entry (sb, &(p)->sandboxes.list, struct sim_sandbox, o.link)
#define sim_for_each_container(c, p)                                                               \
        kc_list_for_each_entry (c, &(p)->containers.list, struct sim_container, o.link)

/* An injected fault or latency spike: one allocation with its strings. */
struct sim_fault {
        struct kc_list link; /* on the sim's faults or delays, oldest first */
        enum sim_op op;
        const char *key; /* NULL: any */
        const char *message;
        unsigned remaining;
        int64_t delay_ns; /* > 0: a latency spike (no failure), see kc_sim_inject_latency */
        enum kc_runtime_code code; /* a fault's status code */
};

/* A pulled image: one allocation with its strings. */
struct sim_image {
        const char *name;   /* the reference with the default tag applied: the store key */
        const char *id;     /* "sha256:" + 64 hex: the id map key */
        const char *digest; /* "<repository>@<id>" (RepoDigests) */
        bool tagged;        /* name carries a tag (RepoTags), not only a digest */
        uint64_t size;
};

/*
 * The last full listing of one kind and filter class (cri_list.c): handed
 * out again, as another reference, while the state's generation is the same.
 */
struct sim_list_memo {
        struct kc_arena *arena; /* a reference; NULL: none */
        void *items;
        size_t n;
        uint64_t gen;
        int state; /* the filter's state, -1: any */
        /*
         * Any state: the arena holding every listed object's (the listing
         * holds it; a reference) and the shape and touch epoch the listing
         * is good for patching in (NULL keeper: not patchable).
         */
        struct kc_arena *keeper;
        uint64_t shape;
        uint64_t touch_epoch;
        /* Room for n positions in arena (a delta's), or NULL. */
        uint32_t *changed_buf;
        /*
         * Any state: the listing before this one (spare, a reference; NULL:
         * none), with its items, shape, touch epoch and position room,
         * patched in place into the next listing once only the memo holds
         * it (issue 18).
         */
        struct kc_arena *spare;
        void *spare_items;
        uint64_t spare_shape, spare_touch_epoch;
        uint32_t *spare_changed_buf;
        unsigned idle_hits; /* the listing handed out again since it was made, in a row */
};

struct kc_sim {
        pthread_mutex_t lock;
        struct kc_clock *clock;
        struct sim_state st;
        uint64_t next_id;
        uint32_t next_ip;
        int64_t last_created_at; /* CRI-created objects: strictly increasing */

        struct kc_list faults; /* of struct sim_fault, FIFO */
        size_t n_faults;
        struct kc_list delays; /* of struct sim_fault (latency spikes), FIFO */
        size_t n_delays;
        unsigned n_delayed;    /* calls sleeping on the clock right now */
        uint64_t calls;        /* every call, all ops */
        uint64_t faults_taken; /* calls failed by an injected fault */
        uint64_t delays_taken; /* calls delayed by an injected latency */
        uint64_t crashes;      /* containers made to exit by kc_sim_crash_container */

        struct sim_fs host_fs; /* what mounts lead to, by host path (shell.c) */

        struct kc_map *images;    /* name -> sim_image (owned) */
        struct kc_map *image_ids; /* id -> sim_image (borrowed from images) */

        uint64_t op_counts[_SIM_OP_MAX];
        struct kc_map *status_counts; /* uid -> struct status_count (GetPodStatus), owned */

        /* [sandboxes, containers][any state, one state]: bounded to these four. */
        struct sim_list_memo list_memo[2][2];
        uint64_t listings_patched;  /* kc__sim_listings_patched() */
        uint64_t listings_recycled; /* kc__sim_listings_recycled() */
        /*
         * The pod the last list call narrowed to, while the generation
         * is listed_gen (issue 18): status calls look for the id among
         * its objects before the maps. Set and read through
         * kc__sim_remember_pod() and kc__sim_remembered_pod().
         */
        struct sim_pod *listed_pod;
        uint64_t listed_gen;

        bool record_configs; /* kc_sim_record_configs */

        struct kc_container *kscratch; /* kubecontainer-face build buffer */
        size_t kscratch_cap;

        /* The conditions Status reports; "" reason/message when unset. */
        bool network_ready;
        char network_reason[64];
        char network_message[256];
};

/* Remembers @p p (NULL: none) as the pod status calls look at first (listed_pod). */
static inline void kc__sim_remember_pod(struct kc_sim *s, struct sim_pod *p)
{
        s->listed_pod = p;
        s->listed_gen = s->st.gen;
}

/*
 * The pod kc__sim_remember_pod() remembered, while nothing changed since;
 * else NULL. Whatever frees a pod or an object bumps the generation first,
 * so the pod returned is alive.
 */
static inline struct sim_pod *kc__sim_remembered_pod(const struct kc_sim *s)
{
        return s->listed_gen == s->st.gen ? s->listed_pod : NULL;
}

/* ------------------------------------------------------------------------ */
/* sim.c: ids, IPs, creation times                                            */

/* A creation timestamp: the clock, but strictly after the previous one. */
int64_t kc__sim_creation_time_locked(struct kc_sim *s);
/* "sim-" + 16 hex digits from a counter; skips ids a snapshot already uses. */
void kc__sim_new_id_locked(struct kc_sim *s, char buf[static 24]);
/* 10.88.x.y, deterministic; skips .0 and .255 host bytes. */
void kc__sim_new_ip_locked(struct kc_sim *s, char buf[static 16]);
/* Frees every value of @p m (NULL: nothing), then the map. */
void kc__sim_map_free_values(struct kc_map *m);

/* ------------------------------------------------------------------------ */
/* state.c: the object store                                                  */

int kc__sim_state_init(struct sim_state *st);
/* Frees every pod and object; leaves @p st empty but unusable until kc__sim_state_init(). */
void kc__sim_state_done(struct sim_state *st);

#define SIM_TOUCHED_ALL UINT64_MAX

/* The bit of a touch mask that names the object at position @p i of its pod. */
static inline uint64_t kc__sim_touch_bit(size_t i)
{
        return UINT64_C(1) << (i < 63 ? i : 63);
}

/*
 * @p p changed: drops the kubecontainer face's cached results, bumps the
 * generation and puts the pod in its state's touch log, all its objects
 * touched.
 */
void kc__sim_pod_touch(struct sim_pod *p);
/* As kc__sim_pod_touch(), but only the objects the masks @p sandboxes and @p containers name. */
void kc__sim_pod_touch_objects(struct sim_pod *p, uint64_t sandboxes, uint64_t containers);
/* As kc__sim_pod_touch() of @p o's pod, but only @p o (a container when @p container). */
void kc__sim_object_touch(struct sim_object *o, bool container);
/* Pods or objects came, went or moved: a new shape, and a new touch log. */
void kc__sim_shape_changed(struct sim_state *st);
/* A pod group: one allocation with its strings. Not linked yet. */
struct sim_pod *kc__sim_pod_alloc(const char *uid, const char *name, const char *ns,
                                  const char *const *ips, size_t n_ips);
void kc__sim_pod_free(struct sim_pod *p);
int kc__sim_state_add_pod(struct sim_state *st, struct sim_pod *p);
void kc__sim_state_remove_pod(struct sim_state *st, struct sim_pod *p);

/* An unlinked sandbox holding a copy of @p tmpl; NULL on ENOMEM. */
struct sim_sandbox *kc__sim_sandbox_alloc(const struct kc_pod_sandbox *tmpl);
/* An unlinked container holding a copy of @p tmpl and of its command line; NULL on ENOMEM. */
struct sim_container *kc__sim_container_alloc(const struct kc_cri_container *tmpl,
                                              const char *const *cmd, size_t n_cmd,
                                              const char *const *args, size_t n_args);
/* Link an object into its pod and the id map; the caller frees it on failure. */
int kc__sim_state_add_sandbox(struct sim_state *st, struct sim_pod *p, struct sim_sandbox *sb);
int kc__sim_state_add_container(struct sim_state *st, struct sim_pod *p, struct sim_sandbox *sb,
                                struct sim_container *c);
void kc__sim_state_remove_container(struct sim_state *st, struct sim_container *c);
/* Frees an unlinked object with what it owns besides its allocation. */
void kc__sim_sandbox_free(struct sim_sandbox *sb);
void kc__sim_container_free(struct sim_container *c);
/* Removes @p sb with its containers, and its pod when that was created through the CRI. */
void kc__sim_state_remove_sandbox(struct sim_state *st, struct sim_sandbox *sb);

/* The sandbox's IPs as PodSandboxStatus reports them. */
void kc__sim_sandbox_ips(const struct sim_sandbox *sb, const char **ip, const char *const **more,
                         size_t *n_more);
/*
 * A ListPodSandbox item (no network status) in *@p out; @p a (NULL: none,
 * it holds the object already) holds the object's arena. @return 0 or -ENOMEM.
 */
int kc__sim_sandbox_copy_listed(struct kc_arena *a, const struct sim_sandbox *sb,
                                struct kc_pod_sandbox *out);
/* A PodSandboxStatus view (with its IPs) in @p a. @return 0 or -ENOMEM. */
int kc__sim_sandbox_view(struct kc_arena *a, const struct sim_sandbox *sb,
                         struct kc_pod_sandbox *out);
/* A ListContainers item (no status-only fields), as kc__sim_sandbox_copy_listed(). */
int kc__sim_container_copy_listed(struct kc_arena *a, const struct sim_container *c,
                                  struct kc_cri_container *out);

/* ------------------------------------------------------------------------ */
/* commands.c: processes and the lazy clock                                   */

#define SIM_EXIT_KILLED 137

/* The environment a process sees: name=value pairs, later ones win. */
struct sim_env {
        const struct kc_label *v;
        size_t n;
};
const char *kc__sim_env_get(const struct sim_env *env, const char *name, size_t len);

/* How a simple command joins the next: ;, && or ||. */
enum sim_join {
        SIM_JOIN_SEQ,
        SIM_JOIN_AND,
        SIM_JOIN_OR,
};
/* One simple command: its words (NULL-terminated; redirections are words too). */
struct sim_step {
        char **words; /* malloc'd array; the words live in the script's arena or argv */
        size_t n, cap;
        enum sim_join join;
};
struct sim_script {
        struct sim_step *steps;
        size_t n, cap;
};
/*
 * Splits @p text as busybox ash would into @p sc's steps: quotes, \,
 * $NAME and ${NAME} from @p env, the separators ; && || and newline, the
 * redirections > >> 2> 2>> 2>&1 (as words of their own). Words go into @p a.
 * @return 0, -EINVAL (an unterminated quote), -E2BIG, -ENOMEM.
 */
int kc__sim_script_parse(struct kc_arena *a, const char *text, const struct sim_env *env,
                         struct sim_script *sc);
/*
 * The script of a command line: `sh -c "<text>"` parsed, one word with
 * blanks too when @p split_single, else argv as one step (borrowed).
 */
int kc__sim_script_from_argv(struct kc_arena *a, const char *const *argv, size_t argc,
                             bool split_single, const struct sim_env *env, struct sim_script *sc);
void kc__sim_script_done(struct sim_script *sc);
/* Whether @p cmd is one of the interpreter's builtins (shell.c). */
bool kc__sim_is_builtin(const char *cmd);
/*
 * 1 and *ret_ns for `sleep N` (INT64_MAX: infinity, or beyond the clock),
 * -EINVAL for a sleep it cannot read, 0 for another command.
 */
int kc__sim_step_sleep(const struct sim_step *st, int64_t *ret_ns);
/* The status `exit [N]` ends with. */
int32_t kc__sim_exit_status(const struct sim_step *st);
/* Whether the step after one that ended with @p code, joined by @p join, runs. */
bool kc__sim_next_runs(enum sim_join join, int32_t code);

/* Reads command + args like busybox would run them (see commands.c). */
struct sim_program kc__sim_program_parse(const char *const *argv, size_t argc);
/* @p c exits with @p code at @p at; NULL @p reason: "Completed" for 0, else "Error". */
void kc__sim_container_exit(struct kc_sim *s, struct sim_container *c, int32_t code, int64_t at,
                            const char *reason);
/* A created container starts now: it runs its program's course from here. */
void kc__sim_container_start_locked(struct kc_sim *s, struct sim_container *c);
/* A running (or unknown) container is killed; others keep their state. */
void kc__sim_container_stop_locked(struct kc_sim *s, struct sim_container *c);
/* Lets every running container whose deadline has passed exit. */
void kc__sim_advance_locked(struct kc_sim *s);

/* ------------------------------------------------------------------------ */
/* config.c: the configs' exec view and records                              */

/*
 * What exec needs of @p config and @p sandbox_config (may be NULL): a new
 * block, free() it. NULL on ENOMEM.
 */
struct sim_exec_config *kc__sim_exec_config_new(const struct kc_container_config *config,
                                                const struct kc_pod_sandbox_config *sandbox_config);
/*
 * A record of deep copies of @p sandbox_config and @p config (either may be
 * NULL) in *@p ret. @return 0 or -ENOMEM.
 */
int kc__sim_config_record_new(const struct kc_pod_sandbox_config *sandbox_config,
                              const struct kc_container_config *config,
                              struct sim_config_record **ret);
/* Frees @p rec (NULL is fine). */
void kc__sim_config_record_free(struct sim_config_record *rec);

/* ------------------------------------------------------------------------ */
/* vfs.c                                                                      */

/* @p path made absolute against @p cwd (NULL: "/") and normalised into @p out. */
int kc__sim_path_normalize(const char *cwd, const char *path, char *out, size_t cap);
struct sim_file *kc__sim_fs_get(const struct sim_fs *fs, const char *key);
bool kc__sim_fs_is_dir(const struct sim_fs *fs, const char *key);
bool kc__sim_fs_exists(const struct sim_fs *fs, const char *key);
int kc__sim_fs_mkdir(struct sim_fs *fs, const char *key);
int kc__sim_fs_mkdir_p(struct sim_fs *fs, const char *key);
/* Creates or replaces (appends to, with @p append) the file @p key: -EISDIR, -ENOMEM. */
int kc__sim_fs_write(struct sim_fs *fs, const char *key, const char *data, size_t n, bool append);
/* -ENOENT, -ENOTEMPTY (a directory with entries, not @p recursive). */
int kc__sim_fs_remove(struct sim_fs *fs, const char *key, bool recursive);
/* The names directly under @p key, sorted: *ret malloc'd, names borrowed from @p fs. */
int kc__sim_fs_children(const struct sim_fs *fs, const char *key, const char ***ret, size_t *ret_n);
void kc__sim_fs_done(struct sim_fs *fs);

/* ------------------------------------------------------------------------ */
/* shell.c                                                                    */

/* A new container's root filesystem: busybox's directories, its mount points, its working dir. */
int kc__sim_container_fs_init(struct sim_container *c);
/* Lets @p c's command act on its filesystem up to now (or its exit). */
void kc__sim_container_catch_up_locked(struct kc_sim *s, struct sim_container *c);
/* After @p c exited: its command caught up to the exit when it has a termination-message file. */
void kc__sim_container_exited_locked(struct kc_sim *s, struct sim_container *c);
int kc__sim_exec_sync(void *self, const char *id, const char *const *argv, size_t argc,
                      int64_t timeout_s, struct kc_exec_sync_result *ret,
                      struct kc_runtime_error *err);

/* ------------------------------------------------------------------------ */
/* faults.c: call accounting and fault injection                              */

/*
 * Every call starts here, under the lock: count, sleep an injected latency
 * (the lock is dropped meanwhile), fail if injected, advance time.
 */
int kc__sim_enter_locked(struct kc_sim *s, enum sim_op op, const char *key,
                         struct kc_runtime_error *err);
/* Frees the injected entries and the call counts. */
void kc__sim_faults_done(struct kc_sim *s);

/* ------------------------------------------------------------------------ */
/* images.c                                                                   */

/*
 * The stored image for @p image (an id, or a reference: the default tag is
 * applied), NULL when absent. -EINVAL for a malformed reference, -ENOMEM.
 */
int kc__sim_image_lookup_locked(struct kc_sim *s, const char *image, struct sim_image **ret);
int kc__sim_image_status(void *self, const char *image, struct kc_image_status_result *ret,
                         struct kc_runtime_error *err);
int kc__sim_pull_image(void *self, const char *image,
                       const struct kc_pod_sandbox_config *sandbox_config, char **ret_image_ref,
                       struct kc_runtime_error *err);

/* ------------------------------------------------------------------------ */
/* The CRI face (cri_face.c, cri_list.c)                                      */

int kc__sim_not_found(struct kc_runtime_error *err, const char *what, const char *id);
int kc__sim_oom(struct kc_runtime_error *err);
int kc__sim_remove_pod_sandbox(void *self, const char *id, struct kc_runtime_error *err);
int kc__sim_list_pod_sandbox(void *self, const struct kc_pod_sandbox_filter *filter,
                             struct kc_pod_sandbox_list *ret, struct kc_runtime_error *err);
int kc__sim_list_containers(void *self, const struct kc_container_filter *filter,
                            struct kc_container_list *ret, struct kc_runtime_error *err);
/* Drops the remembered listings. */
void kc__sim_list_memo_done(struct kc_sim *s);
