/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The embedded simulated runtime.
 *
 * State: pods (grouped by pod UID, kept in insertion order), each with its
 * sandboxes and containers (insertion order), plus id -> object maps. One
 * mutex guards everything. Time comes only from the injected clock; commands
 * with a deadline (`sleep N`) are advanced lazily, whenever a call looks at
 * the state, so a fake clock drives the sim deterministically.
 *
 * Images live in their own store (name -> image, id -> image), untouched by
 * kc_sim_set_pods: a pulled image stays pulled.
 *
 * Two faces over the same state:
 * - the CRI-shaped kc_runtime_service (results packed in a per-call arena);
 * - the kubecontainer face (GetPods / GetPodStatus), like upstream's
 *   containertest.FakeRuntime. Its kc_pod / kc_pod_status objects are
 *   immutable, so each sim pod caches the ones it built last and hands out
 *   references until the pod changes: a relist over an unchanged world costs
 *   one reference per pod.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "core/arena.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/map.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/images.h"
#include "runtime/runtime_service.h"
#include "runtime/sim.h"

#define SIM_VERSION "0.1.0"
#define SIM_RUNTIME_NAME "sim"
#define SIM_API_VERSION "v1"
#define SIM_EXIT_KILLED 137

/* ------------------------------------------------------------------------ */
/* Operations (names are upstream's)                                          */

enum sim_op {
        OP_GET_PODS,
        OP_GET_POD_STATUS,
        OP_VERSION,
        OP_STATUS,
        OP_RUN_POD_SANDBOX,
        OP_STOP_POD_SANDBOX,
        OP_REMOVE_POD_SANDBOX,
        OP_POD_SANDBOX_STATUS,
        OP_LIST_POD_SANDBOX,
        OP_CREATE_CONTAINER,
        OP_START_CONTAINER,
        OP_STOP_CONTAINER,
        OP_REMOVE_CONTAINER,
        OP_LIST_CONTAINERS,
        OP_CONTAINER_STATUS,
        OP_IMAGE_STATUS,
        OP_PULL_IMAGE,
        _OP_MAX,
};

static const char *const op_names[] = {
        [OP_GET_PODS] = "GetPods",
        [OP_GET_POD_STATUS] = "GetPodStatus",
        [OP_VERSION] = "Version",
        [OP_STATUS] = "Status",
        [OP_RUN_POD_SANDBOX] = "RunPodSandbox",
        [OP_STOP_POD_SANDBOX] = "StopPodSandbox",
        [OP_REMOVE_POD_SANDBOX] = "RemovePodSandbox",
        [OP_POD_SANDBOX_STATUS] = "PodSandboxStatus",
        [OP_LIST_POD_SANDBOX] = "ListPodSandbox",
        [OP_CREATE_CONTAINER] = "CreateContainer",
        [OP_START_CONTAINER] = "StartContainer",
        [OP_STOP_CONTAINER] = "StopContainer",
        [OP_REMOVE_CONTAINER] = "RemoveContainer",
        [OP_LIST_CONTAINERS] = "ListContainers",
        [OP_CONTAINER_STATUS] = "ContainerStatus",
        [OP_IMAGE_STATUS] = "ImageStatus",
        [OP_PULL_IMAGE] = "PullImage",
};
_Static_assert(KC_ELEMENTSOF(op_names) == _OP_MAX, "op_names must name every sim_op");

static int op_from_string(const char *s)
{
        size_t i;

        for (i = 0; i < _OP_MAX; i++)
                if (strcmp(op_names[i], s) == 0)
                        return (int)i;
        return -EINVAL;
}

/* ------------------------------------------------------------------------ */
/* State                                                                      */

struct sim_pod;
struct sim_sandbox;

struct sim_sandbox {
        /* CRI view; strings live in this allocation. state mirrors cstate. */
        struct kc_pod_sandbox v;
        /* What the kubecontainer face lists; READY iff RUNNING. */
        enum kc_container_state cstate;
        const char *blob; /* the region holding v's strings and arrays */
        size_t blob_size;
        struct sim_pod *pod;
        struct sim_sandbox *prev, *next;
};

/* What a busybox-like reading of the command says the process does. */
struct sim_program {
        bool exits;        /* false: runs until stopped */
        int64_t run_ns;    /* time from start to exit */
        int32_t exit_code; /* when it exits by itself */
};

struct sim_container {
        struct kc_cri_container v; /* strings live in this allocation */
        const char *blob;          /* the region holding v's strings and arrays */
        size_t blob_size;
        uint64_t hash;           /* parsed io.kubernetes.container.hash */
        const char *const *argv; /* command + args */
        size_t argc;
        struct sim_program prog;
        int64_t deadline; /* exit time while running with prog.exits */
        struct sim_pod *pod;
        struct sim_sandbox *sandbox; /* NULL for a kc_sim_set_pods pod without sandboxes */
        struct sim_container *prev, *next;
};

struct sim_pod {
        const char *uid;
        const char *name;
        const char *namespace;
        const char *const *ips; /* pod-level IPs (kc_sim_set_pods pods) */
        size_t n_ips;
        bool from_spec; /* loaded by kc_sim_set_pods: listed even when empty */
        struct sim_sandbox *sb_first, *sb_last;
        size_t n_sandboxes;
        struct sim_container *c_first, *c_last;
        size_t n_containers;
        struct sim_pod *prev, *next;

        /* The kubecontainer face's last results; dropped whenever the pod changes. */
        struct kc_pod *cache_all;
        struct kc_pod *cache_running;
        bool cache_running_valid; /* cache_running may be validly NULL: nothing running */
        struct kc_pod_status *cache_status;
};

struct sim_state {
        struct sim_pod *first, *last;
        size_t n_pods;
        size_t n_sandboxes, n_containers; /* in all pods: bound a listing's size */
        struct kc_map *pods;              /* uid -> sim_pod */
        struct kc_map *sandboxes;         /* id -> sim_sandbox */
        struct kc_map *containers;        /* id -> sim_container */
        int64_t next_deadline;            /* earliest running deadline, INT64_MAX if none */
};

struct sim_fault {
        enum sim_op op;
        const char *key; /* NULL: any */
        const char *message;
        unsigned remaining;
        int64_t delay_ns; /* > 0: a latency spike (no failure), see kc_sim_inject_latency */
};

/* A pulled image: one allocation with its strings. */
struct sim_image {
        const char *name;   /* the reference with the default tag applied: the store key */
        const char *id;     /* "sha256:" + 64 hex: the id map key */
        const char *digest; /* "<repository>@<id>" (RepoDigests) */
        bool tagged;        /* name carries a tag (RepoTags), not only a digest */
        uint64_t size;
};

struct status_count {
        uint64_t count;
        char uid[];
};

struct kc_sim {
        pthread_mutex_t lock;
        struct kc_clock *clock;
        struct sim_state st;
        uint64_t next_id;
        uint32_t next_ip;
        int64_t last_created_at; /* CRI-created objects: strictly increasing */

        struct sim_fault **faults; /* FIFO */
        size_t n_faults;
        struct sim_fault **delays; /* FIFO of latency spikes */
        size_t n_delays;
        unsigned n_delayed;    /* calls sleeping on the clock right now */
        uint64_t calls;        /* every call, all ops */
        uint64_t faults_taken; /* calls failed by an injected fault */
        uint64_t delays_taken; /* calls delayed by an injected latency */
        uint64_t crashes;      /* containers made to exit by kc_sim_crash_container */

        struct kc_map *images;    /* name -> sim_image (owned) */
        struct kc_map *image_ids; /* id -> sim_image (borrowed from images) */

        uint64_t op_counts[_OP_MAX];
        struct kc_map *status_counts; /* uid -> status_count (GetPodStatus) */

        struct kc_container *kscratch; /* kubecontainer-face build buffer */
        size_t kscratch_cap;

        /* The conditions Status reports; "" reason/message when unset. */
        bool network_ready;
        char network_reason[64];
        char network_message[256];
};

static void unlockp(pthread_mutex_t **l)
{
        if (*l)
                pthread_mutex_unlock(*l);
}
/* "unused": clang's -Wunused-variable does not count the cleanup as a use of the guard. */
#define _cleanup_unlock_ _cleanup_(unlockp) __attribute__((unused))

static pthread_mutex_t *sim_lock(struct kc_sim *s)
{
        pthread_mutex_lock(&s->lock);
        return &s->lock;
}

static void pod_touch(struct sim_pod *p)
{
        p->cache_all = kc_pod_unref(p->cache_all);
        p->cache_running = kc_pod_unref(p->cache_running);
        p->cache_running_valid = false;
        p->cache_status = kc_pod_status_unref(p->cache_status);
}

static void pod_free(struct sim_pod *p)
{
        struct sim_sandbox *sb, *sb_next;
        struct sim_container *c, *c_next;

        if (!p)
                return;
        for (sb = p->sb_first; sb; sb = sb_next) {
                sb_next = sb->next;
                free(sb);
        }
        for (c = p->c_first; c; c = c_next) {
                c_next = c->next;
                free(c);
        }
        pod_touch(p);
        free(p);
}

static void state_done(struct sim_state *st)
{
        struct sim_pod *p, *next;

        for (p = st->first; p; p = next) {
                next = p->next;
                pod_free(p);
        }
        st->pods = kc_map_free(st->pods);
        st->sandboxes = kc_map_free(st->sandboxes);
        st->containers = kc_map_free(st->containers);
        *st = (struct sim_state){ .next_deadline = INT64_MAX };
}

static int state_init(struct sim_state *st)
{
        *st = (struct sim_state){ .next_deadline = INT64_MAX };
        if (kc_map_new(&st->pods) < 0 || kc_map_new(&st->sandboxes) < 0 ||
            kc_map_new(&st->containers) < 0) {
                state_done(st);
                return -ENOMEM;
        }
        return 0;
}

/* A pod group: one allocation with its strings. Not linked yet. */
static struct sim_pod *pod_alloc(const char *uid, const char *name, const char *ns,
                                 const char *const *ips, size_t n_ips)
{
        struct kc__packer pk = { 0 };
        struct sim_pod *p;
        int pass;

        for (pass = 0; pass < 2; pass++) {
                const char *u, *n, *s;
                const char *const *v;

                p = kc__pack_reserve(&pk, sizeof(*p), alignof(struct sim_pod));
                u = kc__pack_str(&pk, uid);
                n = kc__pack_str(&pk, name);
                s = kc__pack_str(&pk, ns);
                v = kc__pack_strv(&pk, ips, n_ips);
                if (pass == 0) {
                        pk.base = calloc(1, pk.off);
                        if (!pk.base)
                                return NULL;
                        pk.off = 0;
                        continue;
                }
                p->uid = u;
                p->name = n;
                p->namespace = s;
                p->ips = v;
                p->n_ips = n_ips;
        }
        return p;
}

static int state_add_pod(struct sim_state *st, struct sim_pod *p)
{
        int r = kc_map_put(st->pods, p->uid, p);

        if (r < 0)
                return r;
        p->prev = st->last;
        if (st->last)
                st->last->next = p;
        else
                st->first = p;
        st->last = p;
        st->n_pods++;
        return 0;
}

static void state_remove_pod(struct sim_state *st, struct sim_pod *p)
{
        kc_map_remove(st->pods, p->uid);
        if (p->prev)
                p->prev->next = p->next;
        else
                st->first = p->next;
        if (p->next)
                p->next->prev = p->prev;
        else
                st->last = p->prev;
        st->n_pods--;
        st->n_sandboxes -= p->n_sandboxes;
        st->n_containers -= p->n_containers;
        pod_free(p);
}

/*
 * Sandboxes and containers: one allocation each. The CRI view's strings and
 * arrays sit in one region right after the struct ("blob"), so a list call
 * copies an object with one memcpy and a pointer relocation (blob_copy_*)
 * instead of a strlen and a copy per string. Well-known label keys are
 * static literals and are not copied at all.
 */
#define BLOB_ALIGN alignof(max_align_t)

static struct sim_sandbox *sandbox_alloc(const struct kc_pod_sandbox *tmpl)
{
        struct kc__packer pk = { .intern_keys = true };
        struct sim_sandbox *sb = NULL;
        size_t blob_off = 0;
        int pass;

        for (pass = 0; pass < 2; pass++) {
                sb = kc__pack_reserve(&pk, sizeof(*sb), alignof(struct sim_sandbox));
                (void)kc__pack_reserve(&pk, 0, BLOB_ALIGN);
                blob_off = pk.off;
                kc__pack_pod_sandbox(&pk, tmpl, sb ? &sb->v : NULL);
                if (pass == 0) {
                        pk.base = calloc(1, pk.off);
                        if (!pk.base)
                                return NULL;
                        pk.off = 0;
                }
        }
        sb->blob = pk.base + blob_off;
        sb->blob_size = pk.off - blob_off;
        return sb;
}

static struct sim_container *container_alloc(const struct kc_cri_container *tmpl,
                                             const char *const *cmd, size_t n_cmd,
                                             const char *const *args, size_t n_args)
{
        struct kc__packer pk = { .intern_keys = true };
        struct sim_container *c = NULL;
        size_t blob_off = 0, blob_end = 0;
        const char **argv;
        int pass;
        size_t i;

        for (pass = 0; pass < 2; pass++) {
                c = kc__pack_reserve(&pk, sizeof(*c), alignof(struct sim_container));
                (void)kc__pack_reserve(&pk, 0, BLOB_ALIGN);
                blob_off = pk.off;
                kc__pack_cri_container(&pk, tmpl, c ? &c->v : NULL);
                blob_end = pk.off;
                argv = kc__pack_array(&pk, const char *, n_cmd + n_args);
                for (i = 0; i < n_cmd + n_args; i++) {
                        const char *a = kc__pack_str(&pk, i < n_cmd ? cmd[i] : args[i - n_cmd]);

                        if (argv)
                                argv[i] = a ? a : "";
                }
                if (pass == 0) {
                        pk.base = calloc(1, pk.off);
                        if (!pk.base)
                                return NULL;
                        pk.off = 0;
                }
        }
        c->blob = pk.base + blob_off;
        c->blob_size = blob_end - blob_off;
        c->argv = argv;
        c->argc = n_cmd + n_args;
        c->hash = kc__parse_container_hash(
                kc__label_get(c->v.annotations, c->v.n_annotations, KC_ANNOTATION_CONTAINER_HASH));
        return c;
}

/* @p p moved from [ob, ob + n) to nb; pointers elsewhere (static literals) stay. */
static const void *reloc(const void *p, const char *ob, size_t n, char *nb)
{
        const char *q = p;

        if (q && q >= ob && q < ob + n)
                return nb + (q - ob);
        return p;
}

static struct kc_label *reloc_labels(const struct kc_label *l, size_t n_labels, const char *ob,
                                     size_t n, char *nb)
{
        struct kc_label *out = (struct kc_label *)reloc(l, ob, n, nb);
        size_t i;

        /* The array was copied with the region: fix its entries in place. */
        if (out && (const void *)out != (const void *)l)
                for (i = 0; i < n_labels; i++) {
                        out[i].key = reloc(out[i].key, ob, n, nb);
                        out[i].value = reloc(out[i].value, ob, n, nb);
                }
        return out;
}

static void *blob_dup(struct kc_arena *a, const char *blob, size_t n)
{
        void *nb;

        if (n == 0)
                return NULL;
        nb = kc_arena_alloc(a, n);
        if (nb)
                memcpy(nb, blob, n);
        return nb;
}

/* A ListPodSandbox item (no network status) in @p a. */
static int blob_copy_sandbox(struct kc_arena *a, const struct sim_sandbox *sb,
                             struct kc_pod_sandbox *out)
{
        const char *ob = sb->blob;
        size_t n = sb->blob_size;
        char *nb = blob_dup(a, ob, n);

        if (n > 0 && !nb)
                return -ENOMEM;
        *out = sb->v;
        out->id = reloc(out->id, ob, n, nb);
        out->metadata.name = reloc(out->metadata.name, ob, n, nb);
        out->metadata.uid = reloc(out->metadata.uid, ob, n, nb);
        out->metadata.namespace = reloc(out->metadata.namespace, ob, n, nb);
        out->ip = NULL;
        out->additional_ips = NULL;
        out->n_additional_ips = 0;
        out->labels = reloc_labels(out->labels, out->n_labels, ob, n, nb);
        out->annotations = reloc_labels(out->annotations, out->n_annotations, ob, n, nb);
        return 0;
}

/* A ListContainers item (no status-only fields) in @p a. */
static int blob_copy_container(struct kc_arena *a, const struct sim_container *c,
                               struct kc_cri_container *out)
{
        const char *ob = c->blob;
        size_t n = c->blob_size;
        char *nb = blob_dup(a, ob, n);

        if (n > 0 && !nb)
                return -ENOMEM;
        *out = c->v;
        out->id = reloc(out->id, ob, n, nb);
        out->pod_sandbox_id = reloc(out->pod_sandbox_id, ob, n, nb);
        out->metadata.name = reloc(out->metadata.name, ob, n, nb);
        out->image = reloc(out->image, ob, n, nb);
        out->image_ref = reloc(out->image_ref, ob, n, nb);
        out->started_at = 0;
        out->finished_at = 0;
        out->exit_code = 0;
        out->reason = NULL;
        out->message = NULL;
        out->labels = reloc_labels(out->labels, out->n_labels, ob, n, nb);
        out->annotations = reloc_labels(out->annotations, out->n_annotations, ob, n, nb);
        return 0;
}

static int state_add_sandbox(struct sim_state *st, struct sim_pod *p, struct sim_sandbox *sb)
{
        int r = kc_map_put(st->sandboxes, sb->v.id, sb);

        if (r < 0)
                return r;
        sb->pod = p;
        sb->prev = p->sb_last;
        if (p->sb_last)
                p->sb_last->next = sb;
        else
                p->sb_first = sb;
        p->sb_last = sb;
        p->n_sandboxes++;
        st->n_sandboxes++;
        pod_touch(p);
        return 0;
}

static int state_add_container(struct sim_state *st, struct sim_pod *p, struct sim_sandbox *sb,
                               struct sim_container *c)
{
        int r = kc_map_put(st->containers, c->v.id, c);

        if (r < 0)
                return r;
        c->pod = p;
        c->sandbox = sb;
        c->prev = p->c_last;
        if (p->c_last)
                p->c_last->next = c;
        else
                p->c_first = c;
        p->c_last = c;
        p->n_containers++;
        st->n_containers++;
        pod_touch(p);
        return 0;
}

static void state_remove_container(struct sim_state *st, struct sim_container *c)
{
        struct sim_pod *p = c->pod;

        if (kc_map_get(st->containers, c->v.id) == c)
                kc_map_remove(st->containers, c->v.id);
        if (c->prev)
                c->prev->next = c->next;
        else
                p->c_first = c->next;
        if (c->next)
                c->next->prev = c->prev;
        else
                p->c_last = c->prev;
        p->n_containers--;
        st->n_containers--;
        pod_touch(p);
        free(c);
}

static void state_remove_sandbox(struct sim_state *st, struct sim_sandbox *sb)
{
        struct sim_pod *p = sb->pod;
        struct sim_container *c, *next;

        /* Removing a sandbox removes its containers, as containerd does. */
        for (c = p->c_first; c; c = next) {
                next = c->next;
                if (c->sandbox == sb)
                        state_remove_container(st, c);
        }
        if (kc_map_get(st->sandboxes, sb->v.id) == sb)
                kc_map_remove(st->sandboxes, sb->v.id);
        if (sb->prev)
                sb->prev->next = sb->next;
        else
                p->sb_first = sb->next;
        if (sb->next)
                sb->next->prev = sb->prev;
        else
                p->sb_last = sb->prev;
        p->n_sandboxes--;
        st->n_sandboxes--;
        pod_touch(p);
        free(sb);
        /* A pod created through the CRI face exists while it has objects. */
        if (!p->from_spec && p->n_sandboxes == 0 && p->n_containers == 0)
                state_remove_pod(st, p);
}

/* ------------------------------------------------------------------------ */
/* Busybox-like commands and the lazy clock                                   */

/* "5", "0.5", "5s", "2m", "1h", "1d" -> ns; -EINVAL otherwise. */
static int parse_sleep(const char *s, int64_t *ret)
{
        double v, mult = 1;
        char *end;

        if (!s || !*s)
                return -EINVAL;
        if (strcmp(s, "infinity") == 0)
                return -ERANGE;
        v = strtod(s, &end);
        if (end == s || v < 0)
                return -EINVAL;
        if (*end) {
                if (end[1])
                        return -EINVAL;
                switch (*end) {
                case 's':
                        break;
                case 'm':
                        mult = 60;
                        break;
                case 'h':
                        mult = 3600;
                        break;
                case 'd':
                        mult = 86400;
                        break;
                default:
                        return -EINVAL;
                }
        }
        v *= mult * (double)KC_NSEC_PER_SEC;
        if (!(v < 9.2e18))
                return -ERANGE;
        *ret = (int64_t)v;
        return 0;
}

static const char *base_name(const char *s)
{
        const char *slash = strrchr(s, '/');

        return slash ? slash + 1 : s;
}

/* Interprets the words of one simple command. */
static struct sim_program program_from_words(char **w, size_t n)
{
        struct sim_program forever = { .exits = false };
        const char *cmd;
        int64_t ns;

        if (n == 0)
                return forever;
        cmd = base_name(w[0]);
        if (strcmp(cmd, "true") == 0)
                return (struct sim_program){ .exits = true, .exit_code = 0 };
        if (strcmp(cmd, "false") == 0)
                return (struct sim_program){ .exits = true, .exit_code = 1 };
        if (strcmp(cmd, "exit") == 0) {
                long code = 0;
                char *end = NULL;

                if (n >= 2) {
                        code = strtol(w[1], &end, 10);
                        if (end == w[1] || *end)
                                code = 2; /* sh: exit: Illegal number */
                }
                return (struct sim_program){ .exits = true, .exit_code = (int32_t)(code & 0xff) };
        }
        if (strcmp(cmd, "sleep") == 0 && n == 2 && parse_sleep(w[1], &ns) == 0)
                return (struct sim_program){ .exits = true, .run_ns = ns, .exit_code = 0 };
        return forever;
}

/* Splits @p s on blanks into @p words (pointers into @p buf, a copy of s). */
static size_t split_words(const char *s, char *buf, size_t buf_size, char **words, size_t max)
{
        size_t n = 0;
        char *p, *save = NULL;

        snprintf(buf, buf_size, "%s", s);
        for (p = strtok_r(buf, " \t\n", &save); p && n < max; p = strtok_r(NULL, " \t\n", &save))
                words[n++] = p;
        return n;
}

/*
 * Reads command + args like busybox would run them: `sleep N`, `exit N`,
 * `true`, `false`, directly or through `sh -c "..."` (a one-element command
 * with blanks is split too). Anything else runs until stopped.
 */
static struct sim_program program_parse(const char *const *argv, size_t argc)
{
        char buf[256], *words[8];
        const char *script = NULL;
        size_t i, n;

        if (argc == 0)
                return (struct sim_program){ .exits = false };
        if (argc >= 3 && strcmp(argv[1], "-c") == 0 &&
            (strcmp(base_name(argv[0]), "sh") == 0 || strcmp(base_name(argv[0]), "ash") == 0 ||
             strcmp(base_name(argv[0]), "bash") == 0))
                script = argv[2];
        else if (argc == 1)
                script = argv[0];
        if (script) {
                if (strlen(script) >= sizeof(buf))
                        return (struct sim_program){ .exits = false };
                n = split_words(script, buf, sizeof(buf), words, KC_ELEMENTSOF(words));
                return program_from_words(words, n);
        }
        if (argc > KC_ELEMENTSOF(words))
                return (struct sim_program){ .exits = false };
        for (i = 0; i < argc; i++)
                words[i] = (char *)argv[i];
        return program_from_words(words, argc);
}

static void container_exit(struct sim_container *c, int32_t code, int64_t at, const char *reason)
{
        c->v.state = KC_CONTAINER_STATE_EXITED;
        c->v.exit_code = code;
        c->v.finished_at = at;
        c->v.reason = reason ? reason : code == 0 ? "Completed" : "Error";
        pod_touch(c->pod);
}

/* Lets every running container whose deadline has passed exit. */
static void advance_locked(struct kc_sim *s)
{
        struct sim_state *st = &s->st;
        struct sim_container *c;
        struct sim_pod *p;
        int64_t now, next = INT64_MAX;

        if (st->next_deadline == INT64_MAX)
                return;
        now = kc_clock_now(s->clock);
        if (now < st->next_deadline)
                return;
        for (p = st->first; p; p = p->next)
                for (c = p->c_first; c; c = c->next) {
                        if (c->v.state != KC_CONTAINER_STATE_RUNNING || !c->prog.exits)
                                continue;
                        if (c->deadline <= now)
                                container_exit(c, c->prog.exit_code, c->deadline, NULL);
                        else if (c->deadline < next)
                                next = c->deadline;
                }
        st->next_deadline = next;
}

/* ------------------------------------------------------------------------ */
/* Call accounting and fault injection                                        */

static int count_call(struct kc_sim *s, enum sim_op op, const char *uid)
{
        struct status_count *e;
        size_t n;

        if (op != OP_GET_POD_STATUS) {
                s->op_counts[op]++;
                return 0;
        }
        uid = uid ? uid : "";
        e = kc_map_get(s->status_counts, uid);
        if (!e) {
                n = strlen(uid) + 1;
                e = malloc(sizeof(*e) + n);
                if (!e)
                        return -ENOMEM;
                e->count = 0;
                memcpy(e->uid, uid, n);
                if (kc_map_put(s->status_counts, e->uid, e) < 0) {
                        free(e);
                        return -ENOMEM;
                }
        }
        e->count++;
        return 0;
}

/*
 * Consumes one use of the first entry of @p v matching (op, key): copies it
 * to *ret and returns true (the entry is freed when used up).
 */
static bool take_entry(struct sim_fault **v, size_t *n, enum sim_op op, const char *key,
                       struct sim_fault *ret, char *msg, size_t msg_size)
{
        struct sim_fault *f;
        size_t i;

        for (i = 0; i < *n; i++) {
                f = v[i];
                if (f->op != op || (f->key && !kc__streq(f->key, key)))
                        continue;
                *ret = *f;
                if (msg)
                        snprintf(msg, msg_size, "%s", f->message ? f->message : "");
                if (--f->remaining == 0) {
                        free(f);
                        memmove(&v[i], &v[i + 1], (*n - i - 1) * sizeof(*v));
                        (*n)--;
                }
                return true;
        }
        return false;
}

/*
 * Every call starts here, under the lock: count, sleep an injected latency
 * (the lock is dropped meanwhile), fail if injected, advance time.
 */
static int enter_locked(struct kc_sim *s, enum sim_op op, const char *key,
                        struct kc_runtime_error *err)
{
        struct sim_fault f;
        char msg[256];
        int r;

        r = count_call(s, op, op == OP_GET_POD_STATUS ? key : NULL);
        if (r < 0)
                return kc_runtime_error_set(err, r, KC_RUNTIME_INTERNAL, "out of memory");
        s->calls++;
        if (take_entry(s->delays, &s->n_delays, op, key, &f, NULL, 0)) {
                s->delays_taken++;
                s->n_delayed++;
                pthread_mutex_unlock(&s->lock);
                (void)kc_clock_sleep(s->clock, f.delay_ns, NULL);
                pthread_mutex_lock(&s->lock);
                s->n_delayed--;
        }
        if (take_entry(s->faults, &s->n_faults, op, key, &f, msg, sizeof(msg))) {
                s->faults_taken++;
                return kc_runtime_error_set(err, -EIO, KC_RUNTIME_UNKNOWN, "%s", msg);
        }
        advance_locked(s);
        return 0;
}

/* Appends an entry (one allocation with its strings) to the faults or the delays. */
static int add_entry(struct kc_sim *s, bool delay, const char *op, const char *key,
                     const char *message, int64_t delay_ns, unsigned times)
{
        _cleanup_unlock_ pthread_mutex_t *l = NULL;
        struct kc__packer pk = { 0 };
        struct sim_fault *f = NULL, **v;
        struct sim_fault ***list = delay ? &s->delays : &s->faults;
        size_t *n = delay ? &s->n_delays : &s->n_faults;
        int o, pass;

        o = op_from_string(op);
        if (o < 0)
                return o;
        for (pass = 0; pass < 2; pass++) {
                const char *k, *m;

                f = kc__pack_reserve(&pk, sizeof(*f), alignof(struct sim_fault));
                k = kc__pack_str(&pk, key);
                m = kc__pack_str(&pk, message);
                if (pass == 0) {
                        pk.base = malloc(pk.off);
                        if (!pk.base)
                                return -ENOMEM;
                        pk.off = 0;
                        continue;
                }
                *f = (struct sim_fault){
                        .op = o, .key = k, .message = m, .remaining = times, .delay_ns = delay_ns
                };
        }
        l = sim_lock(s);
        v = realloc(*list, (*n + 1) * sizeof(*v));
        if (!v) {
                free(f);
                return -ENOMEM;
        }
        *list = v;
        v[(*n)++] = f;
        return 0;
}

int kc_sim_inject_fault(struct kc_sim *s, const char *op, const char *key, const char *message,
                        unsigned times)
{
        if (!s || !op || times == 0)
                return -EINVAL;
        return add_entry(s, false, op, key, message ? message : "injected fault", 0, times);
}

int kc_sim_inject_latency(struct kc_sim *s, const char *op, const char *key, int64_t delay_ns,
                          unsigned times)
{
        if (!s || !op || times == 0 || delay_ns <= 0)
                return -EINVAL;
        return add_entry(s, true, op, key, NULL, delay_ns, times);
}

void kc_sim_clear_faults(struct kc_sim *s)
{
        _cleanup_unlock_ pthread_mutex_t *l = NULL;
        size_t i;

        if (!s)
                return;
        l = sim_lock(s);
        for (i = 0; i < s->n_faults; i++)
                free(s->faults[i]);
        for (i = 0; i < s->n_delays; i++)
                free(s->delays[i]);
        s->n_faults = s->n_delays = 0;
}

int kc_sim_get_stats(struct kc_sim *s, struct kc_sim_stats *ret)
{
        _cleanup_unlock_ pthread_mutex_t *l = NULL;

        if (!s || !ret)
                return -EINVAL;
        l = sim_lock(s);
        *ret = (struct kc_sim_stats){
                .calls = s->calls,
                .delayed_now = s->n_delayed,
                .faults_pending = s->n_faults,
                .delays_pending = s->n_delays,
                .faults_taken = s->faults_taken,
                .delays_taken = s->delays_taken,
                .crashes = s->crashes,
        };
        return 0;
}

static int call_count_cmp(const void *a, const void *b)
{
        const struct kc_sim_call_count *x = a, *y = b;
        int r = strcmp(x->op, y->op);

        return r ? r : strcmp(x->key, y->key);
}

int kc_sim_call_counts(struct kc_sim *s, struct kc_sim_call_count **ret, size_t *ret_n)
{
        _cleanup_unlock_ pthread_mutex_t *l = NULL;
        struct kc__packer pk = { 0 };
        struct kc_sim_call_count *out = NULL;
        size_t n, i, iter;
        const char *key;
        void *value;
        int pass;

        if (!s || !ret || !ret_n)
                return -EINVAL;
        l = sim_lock(s);
        for (pass = 0; pass < 2; pass++) {
                n = 0;
                for (i = 0; i < _OP_MAX; i++)
                        if (i != OP_GET_POD_STATUS && s->op_counts[i] > 0)
                                n++;
                n += kc_map_size(s->status_counts);
                out = kc__pack_array(&pk, struct kc_sim_call_count, n);
                n = 0;
                for (i = 0; i < _OP_MAX; i++) {
                        const char *op, *k;

                        if (i == OP_GET_POD_STATUS || s->op_counts[i] == 0)
                                continue;
                        op = kc__pack_str(&pk, op_names[i]);
                        k = kc__pack_str(&pk, "");
                        if (out)
                                out[n] = (struct kc_sim_call_count){ op, k, s->op_counts[i] };
                        n++;
                }
                for (iter = 0; kc_map_next(s->status_counts, &iter, &key, &value);) {
                        const struct status_count *e = value;
                        const char *op = kc__pack_str(&pk, op_names[OP_GET_POD_STATUS]);
                        const char *k = kc__pack_str(&pk, e->uid);

                        if (out)
                                out[n] = (struct kc_sim_call_count){ op, k, e->count };
                        n++;
                }
                if (pass == 0) {
                        pk.base = malloc(pk.off ? pk.off : 1);
                        if (!pk.base)
                                return -ENOMEM;
                        pk.off = 0;
                }
        }
        if (n == 0) {
                free(pk.base);
                out = NULL;
        } else {
                qsort(out, n, sizeof(*out), call_count_cmp);
        }
        *ret = out;
        *ret_n = n;
        return 0;
}

/* ------------------------------------------------------------------------ */
/* Lifecycle                                                                  */

int kc_sim_new(struct kc_clock *clock, struct kc_sim **ret)
{
        struct kc_sim *s;
        int r;

        if (!clock || !ret)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->clock = clock;
        s->next_ip = 2;
        s->network_ready = true;
        r = state_init(&s->st);
        if (r < 0) {
                free(s);
                return r;
        }
        r = kc_map_new(&s->status_counts);
        if (r < 0) {
                state_done(&s->st);
                free(s);
                return r;
        }
        if (kc_map_new(&s->images) < 0 || kc_map_new(&s->image_ids) < 0) {
                kc_map_free(s->images);
                kc_map_free(s->status_counts);
                state_done(&s->st);
                free(s);
                return -ENOMEM;
        }
        r = -pthread_mutex_init(&s->lock, NULL);
        if (r < 0) {
                kc_map_free(s->image_ids);
                kc_map_free(s->images);
                kc_map_free(s->status_counts);
                state_done(&s->st);
                free(s);
                return r;
        }
        *ret = s;
        return 0;
}

struct kc_sim *kc_sim_free(struct kc_sim *s)
{
        size_t i, iter = 0;
        const char *key;
        void *value;

        if (!s)
                return NULL;
        state_done(&s->st);
        for (i = 0; i < s->n_faults; i++)
                free(s->faults[i]);
        free(s->faults);
        for (i = 0; i < s->n_delays; i++)
                free(s->delays[i]);
        free(s->delays);
        while (kc_map_next(s->status_counts, &iter, &key, &value))
                free(value);
        kc_map_free(s->status_counts);
        iter = 0;
        while (kc_map_next(s->images, &iter, &key, &value))
                free(value);
        kc_map_free(s->images);
        kc_map_free(s->image_ids);
        free(s->kscratch);
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
}

/*
 * A creation timestamp: the clock, but strictly after the previous one, as
 * a real runtime's nanosecond timestamps are. On a fake clock many objects
 * are created at the same instant, and "newest first" would then depend on
 * the tie order: the kubelet would read an older instance of a container as
 * the newest and reuse its successor's attempt number.
 */
static int64_t creation_time_locked(struct kc_sim *s)
{
        int64_t now = kc_clock_now(s->clock);

        if (now <= s->last_created_at)
                now = s->last_created_at + 1;
        s->last_created_at = now;
        return now;
}

/* "sim-" + 16 hex digits from a counter; skips ids a snapshot already uses. */
static void new_id_locked(struct kc_sim *s, char buf[static 24])
{
        do
                snprintf(buf, 24, "sim-%016" PRIx64, ++s->next_id);
        while (kc_map_get(s->st.sandboxes, buf) || kc_map_get(s->st.containers, buf));
}

/* 10.88.x.y, deterministic; skips .0 and .255 host bytes. */
static void new_ip_locked(struct kc_sim *s, char buf[static 16])
{
        uint32_t n;

        do {
                n = s->next_ip++;
                if (s->next_ip > 0xfffe)
                        s->next_ip = 2;
        } while ((n & 0xff) == 0 || (n & 0xff) == 0xff);
        snprintf(buf, 16, "10.88.%u.%u", (n >> 8) & 0xff, n & 0xff);
}

/* ------------------------------------------------------------------------ */
/* kc_sim_set_pods                                                            */

static bool spec_state_valid(enum kc_container_state st)
{
        return (int)st >= 0 && st < _KC_CONTAINER_STATE_MAX;
}

static int validate_specs(const struct kc_sim_pod_spec *pods, size_t n)
{
        _cleanup_(kc_map_freep) struct kc_map *seen = NULL;
        size_t i, j;
        int r;

        r = kc_map_new(&seen);
        if (r < 0)
                return r;
        for (i = 0; i < n; i++) {
                const struct kc_sim_pod_spec *p = &pods[i];

                if (!p->id || (p->n_ips && !p->ips) || (p->n_containers && !p->containers) ||
                    (p->n_sandboxes && !p->sandboxes))
                        return -EINVAL;
                for (j = 0; j < p->n_ips; j++)
                        if (!p->ips[j])
                                return -EINVAL;
                for (j = 0; j < p->n_containers; j++)
                        if (!p->containers[j].id || !spec_state_valid(p->containers[j].state))
                                return -EINVAL;
                for (j = 0; j < p->n_sandboxes; j++)
                        if (!p->sandboxes[j].id || !spec_state_valid(p->sandboxes[j].state))
                                return -EINVAL;
                if (kc_map_get(seen, p->id))
                        return -EEXIST;
                r = kc_map_put(seen, p->id, (void *)p);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Labels kubelet would have put on the objects, so the runtime manager sees the same pods. */
static size_t spec_labels(const struct kc_sim_pod_spec *p, const char *container_name,
                          struct kc_label l[static 4])
{
        size_t n = 0;

        l[n++] = (struct kc_label){ KC_LABEL_POD_UID, p->id };
        if (p->name)
                l[n++] = (struct kc_label){ KC_LABEL_POD_NAME, p->name };
        if (p->namespace)
                l[n++] = (struct kc_label){ KC_LABEL_POD_NAMESPACE, p->namespace };
        if (container_name)
                l[n++] = (struct kc_label){ KC_LABEL_CONTAINER_NAME, container_name };
        return n;
}

static int load_pod(struct kc_sim *s, struct sim_state *st, const struct sim_state *old,
                    const struct kc_sim_pod_spec *spec, int64_t now, int64_t base)
{
        const struct kc_sim_container_spec *home = NULL;
        struct sim_sandbox *home_sb = NULL;
        struct kc_label labels[4];
        struct sim_pod *p;
        size_t j;
        int r;

        (void)s;
        p = pod_alloc(spec->id, spec->name, spec->namespace, spec->ips, spec->n_ips);
        if (!p)
                return -ENOMEM;
        p->from_spec = true;
        r = state_add_pod(st, p);
        if (r < 0) {
                pod_free(p);
                return r;
        }

        for (j = 0; j < spec->n_sandboxes; j++) {
                const struct kc_sim_container_spec *cs = &spec->sandboxes[j];
                const struct sim_sandbox *prev = kc_map_get(old->sandboxes, cs->id);
                struct sim_sandbox *sb;

                sb = sandbox_alloc(&(struct kc_pod_sandbox){
                        .id = cs->id,
                        .metadata = { .name = cs->name,
                                      .uid = spec->id,
                                      .namespace = spec->namespace },
                        .labels = labels,
                        .n_labels = spec_labels(spec, NULL, labels),
                });
                if (!sb)
                        return -ENOMEM;
                /* Spec states are kept verbatim for the kubecontainer face. */
                sb->cstate = cs->state;
                sb->v.state = cs->state == KC_CONTAINER_STATE_RUNNING ? KC_SANDBOX_STATE_READY
                                                                      : KC_SANDBOX_STATE_NOTREADY;
                sb->v.created_at = prev ? prev->v.created_at : base - (int64_t)j;
                r = state_add_sandbox(st, p, sb);
                if (r < 0) {
                        free(sb);
                        return r;
                }
                if (!home || (home->state != KC_CONTAINER_STATE_RUNNING &&
                              cs->state == KC_CONTAINER_STATE_RUNNING)) {
                        home = cs;
                        home_sb = sb;
                }
        }

        for (j = 0; j < spec->n_containers; j++) {
                const struct kc_sim_container_spec *cs = &spec->containers[j];
                const struct sim_container *prev = kc_map_get(old->containers, cs->id);
                bool started = cs->state == KC_CONTAINER_STATE_RUNNING ||
                               cs->state == KC_CONTAINER_STATE_EXITED;
                struct sim_container *c;

                c = container_alloc(
                        &(struct kc_cri_container){
                                .id = cs->id,
                                .pod_sandbox_id = home_sb ? home_sb->v.id : NULL,
                                .metadata = { .name = cs->name },
                                .labels = labels,
                                .n_labels = spec_labels(spec, cs->name, labels),
                        },
                        NULL, 0, NULL, 0);
                if (!c)
                        return -ENOMEM;
                c->v.state = cs->state;
                c->v.exit_code = cs->exit_code;
                c->v.created_at = prev ? prev->v.created_at : base - (int64_t)j;
                if (started)
                        c->v.started_at = prev && prev->v.started_at ? prev->v.started_at
                                          : prev                     ? now
                                                                     : c->v.created_at;
                if (cs->state == KC_CONTAINER_STATE_EXITED) {
                        c->v.finished_at = prev && prev->v.state == KC_CONTAINER_STATE_EXITED
                                                   ? prev->v.finished_at
                                           : prev ? now
                                                  : c->v.created_at;
                        c->v.reason = cs->exit_code == 0 ? "Completed" : "Error";
                }
                r = state_add_container(st, p, home_sb, c);
                if (r < 0) {
                        free(c);
                        return r;
                }
        }
        return 0;
}

int kc_sim_set_pods(struct kc_sim *s, const struct kc_sim_pod_spec *pods, size_t n)
{
        _cleanup_unlock_ pthread_mutex_t *l = NULL;
        struct sim_state st;
        int64_t now;
        size_t i;
        int r;

        if (!s || (n > 0 && !pods))
                return -EINVAL;
        r = validate_specs(pods, n);
        if (r < 0)
                return r;
        r = state_init(&st);
        if (r < 0)
                return r;
        l = sim_lock(s);
        now = kc_clock_now(s->clock);
        for (i = 0; i < n; i++) {
                /* Listed order is creation order, newest first: pod i is 1 ms older than i-1. */
                r = load_pod(s, &st, &s->st, &pods[i], now, now - (int64_t)i * KC_NSEC_PER_MSEC);
                if (r < 0) {
                        state_done(&st);
                        return r;
                }
        }
        state_done(&s->st);
        s->st = st;
        return 0;
}

/* ------------------------------------------------------------------------ */
/* Kubecontainer face (upstream FakeRuntime)                                  */

static int kscratch_reserve(struct kc_sim *s, size_t n)
{
        struct kc_container *v;
        size_t cap;

        /* Allocated even for n == 0: build_kpod() does arithmetic on the pointer. */
        if (n <= s->kscratch_cap && s->kscratch)
                return 0;
        cap = s->kscratch_cap ? s->kscratch_cap : 16;
        while (cap < n)
                cap *= 2;
        v = realloc(s->kscratch, cap * sizeof(*v));
        if (!v)
                return -ENOMEM;
        s->kscratch = v;
        s->kscratch_cap = cap;
        return 0;
}

/* Builds the kc_pod for @p p; *ret = NULL when nothing qualifies (all == false). */
static int build_kpod(struct kc_sim *s, struct sim_pod *p, bool all, struct kc_pod **ret)
{
        struct kc_container *ctrs, *sbs;
        struct sim_container *c;
        struct sim_sandbox *sb;
        size_t nc = 0, ns = 0;
        int64_t created = 0;
        int r;

        r = kscratch_reserve(s, p->n_containers + p->n_sandboxes);
        if (r < 0)
                return r;
        ctrs = s->kscratch;
        for (c = p->c_first; c; c = c->next) {
                if (!all && c->v.state != KC_CONTAINER_STATE_RUNNING)
                        continue;
                ctrs[nc++] = (struct kc_container){
                        .id = c->v.id,
                        .name = c->v.metadata.name,
                        .image = c->v.image,
                        .hash = c->hash,
                        .state = c->v.state,
                        .created_at = c->v.created_at,
                };
        }
        sbs = ctrs + nc;
        for (sb = p->sb_first; sb; sb = sb->next) {
                if (!all && sb->cstate != KC_CONTAINER_STATE_RUNNING)
                        continue;
                sbs[ns++] = (struct kc_container){
                        .id = sb->v.id,
                        .name = sb->v.metadata.name,
                        .state = sb->cstate,
                        .created_at = sb->v.created_at,
                };
                if (ns == 1 || sb->v.created_at > created)
                        created = sb->v.created_at;
        }
        if (nc == 0 && ns == 0 && (!all || !p->from_spec)) {
                *ret = NULL;
                return 0;
        }
        return kc_pod_new(
                &(struct kc_pod){
                        .id = p->uid,
                        .name = p->name,
                        .namespace = p->namespace,
                        .created_at = created,
                        .containers = ctrs,
                        .n_containers = nc,
                        .sandboxes = sbs,
                        .n_sandboxes = ns,
                },
                ret);
}

static int sim_get_pods(void *self, bool all, struct kc_pod_list *ret, struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        _cleanup_unlock_ pthread_mutex_t *l = sim_lock(s);
        struct kc_pod_list out = { 0 };
        struct sim_pod *p;
        struct kc_pod *kp;
        int r;

        r = enter_locked(s, OP_GET_PODS, NULL, err);
        if (r < 0)
                return r;
        if (s->st.n_pods > 0) {
                out.pods = malloc(s->st.n_pods * sizeof(*out.pods));
                if (!out.pods)
                        return kc_runtime_error_set(err, -ENOMEM, KC_RUNTIME_INTERNAL,
                                                    "out of memory");
        }
        for (p = s->st.first; p; p = p->next) {
                if (all) {
                        if (!p->cache_all) {
                                r = build_kpod(s, p, true, &p->cache_all);
                                if (r < 0)
                                        goto fail;
                        }
                        kp = p->cache_all;
                } else {
                        if (!p->cache_running_valid) {
                                r = build_kpod(s, p, false, &p->cache_running);
                                if (r < 0)
                                        goto fail;
                                p->cache_running_valid = true;
                        }
                        kp = p->cache_running;
                }
                if (kp)
                        out.pods[out.n++] = kc_pod_ref(kp);
        }
        *ret = out;
        return 0;
fail:
        kc_pod_list_done(&out);
        return kc_runtime_error_set(err, r, KC_RUNTIME_INTERNAL, "building pods: %s", strerror(-r));
}

struct sort_item {
        const void *obj;
        int64_t created_at;
        size_t idx;
};

/* Newest first; ties keep insertion order (the runtime manager does the same). */
static int sort_item_cmp(const void *a, const void *b)
{
        const struct sort_item *x = a, *y = b;

        if (x->created_at != y->created_at)
                return x->created_at > y->created_at ? -1 : 1;
        return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The sandbox's IPs as PodSandboxStatus reports them. */
static void sandbox_ips(const struct sim_sandbox *sb, const char **ip, const char *const **more,
                        size_t *n_more)
{
        const struct sim_pod *p = sb->pod;

        if (p->from_spec) {
                /* The pod's network namespace: every sandbox of the pod reports it. */
                *ip = p->n_ips > 0 ? p->ips[0] : NULL;
                *more = p->n_ips > 1 ? p->ips + 1 : NULL;
                *n_more = p->n_ips > 1 ? p->n_ips - 1 : 0;
        } else {
                *ip = sb->v.ip;
                *more = sb->v.additional_ips;
                *n_more = sb->v.n_additional_ips;
        }
}

static int build_status(struct sim_pod *p, struct kc_pod_status **ret)
{
        _cleanup_free_ struct sort_item *items = NULL;
        _cleanup_free_ struct kc_sandbox_status *sbs = NULL;
        _cleanup_free_ struct kc_container_status *cs = NULL;
        _cleanup_free_ const char **ips = NULL;
        const struct sim_container *c;
        const struct sim_sandbox *sb;
        const char *const *more;
        const char *ip;
        size_t i, n, n_ips = 0, n_more;

        n = p->n_sandboxes > p->n_containers ? p->n_sandboxes : p->n_containers;
        items = calloc(n + 1, sizeof(*items));
        sbs = calloc(p->n_sandboxes + 1, sizeof(*sbs));
        cs = calloc(p->n_containers + 1, sizeof(*cs));
        if (!items || !sbs || !cs)
                return -ENOMEM;

        for (sb = p->sb_first, i = 0; sb; sb = sb->next, i++)
                items[i] = (struct sort_item){ sb, sb->v.created_at, i };
        qsort(items, p->n_sandboxes, sizeof(*items), sort_item_cmp);
        for (i = 0; i < p->n_sandboxes; i++) {
                sb = items[i].obj;
                sandbox_ips(sb, &ip, &more, &n_more);
                sbs[i] = (struct kc_sandbox_status){
                        .id = sb->v.id,
                        .name = sb->v.metadata.name,
                        .namespace = sb->v.metadata.namespace,
                        .uid = sb->v.metadata.uid,
                        .attempt = sb->v.metadata.attempt,
                        .state = sb->v.state,
                        .created_at = sb->v.created_at,
                        .ip = ip,
                };
        }

        if (p->from_spec) {
                ips = calloc(p->n_ips + 1, sizeof(*ips));
                if (!ips)
                        return -ENOMEM;
                for (i = 0; i < p->n_ips; i++)
                        ips[n_ips++] = p->ips[i];
        } else if (p->n_sandboxes > 0) {
                /* As the runtime manager: the newest sandbox's IPs, only when it is ready. */
                sb = items[0].obj;
                sandbox_ips(sb, &ip, &more, &n_more);
                ips = calloc(n_more + 2, sizeof(*ips));
                if (!ips)
                        return -ENOMEM;
                if (sb->v.state == KC_SANDBOX_STATE_READY) {
                        if (ip)
                                ips[n_ips++] = ip;
                        for (i = 0; i < n_more; i++)
                                ips[n_ips++] = more[i];
                }
        }

        for (c = p->c_first, i = 0; c; c = c->next, i++)
                items[i] = (struct sort_item){ c, c->v.created_at, i };
        qsort(items, p->n_containers, sizeof(*items), sort_item_cmp);
        for (i = 0; i < p->n_containers; i++) {
                c = items[i].obj;
                cs[i] = (struct kc_container_status){
                        .id = c->v.id,
                        .name = c->v.metadata.name,
                        .state = c->v.state,
                        .exit_code = c->v.exit_code,
                        .created_at = c->v.created_at,
                        .started_at = c->v.started_at,
                        .finished_at = c->v.finished_at,
                        .restart_count = (int32_t)c->v.metadata.attempt,
                        .hash = c->hash,
                        .image = c->v.image,
                        .image_ref = c->v.image_ref,
                        .reason = c->v.reason,
                        .message = c->v.message,
                };
        }

        return kc_pod_status_new(
                &(struct kc_pod_status){
                        .id = p->uid,
                        .name = p->name,
                        .namespace = p->namespace,
                        .ips = ips,
                        .n_ips = n_ips,
                        .sandboxes = sbs,
                        .n_sandboxes = p->n_sandboxes,
                        .containers = cs,
                        .n_containers = p->n_containers,
                },
                ret);
}

static int sim_get_pod_status(void *self, const char *uid, const char *name, const char *namespace,
                              struct kc_pod_status **ret, struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        _cleanup_unlock_ pthread_mutex_t *l = sim_lock(s);
        struct sim_pod *p;
        int r, q;

        (void)name;
        (void)namespace;
        if (!uid || !ret)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "pod UID is required");
        r = enter_locked(s, OP_GET_POD_STATUS, uid, err);
        if (r < 0) {
                /* As upstream: a failing GetPodStatus still returns a status with the ID. */
                q = kc_pod_status_new_default(uid, ret);
                if (q < 0)
                        *ret = NULL;
                return r;
        }
        p = kc_map_get(s->st.pods, uid);
        if (!p) {
                r = kc_pod_status_new_default(uid, ret);
                if (r < 0)
                        return kc_runtime_error_set(err, r, KC_RUNTIME_INTERNAL, "out of memory");
                return 0;
        }
        if (!p->cache_status) {
                r = build_status(p, &p->cache_status);
                if (r < 0)
                        return kc_runtime_error_set(err, r, KC_RUNTIME_INTERNAL,
                                                    "building pod status: %s", strerror(-r));
        }
        *ret = kc_pod_status_ref(p->cache_status);
        return 0;
}

static int sim_remove_pod_sandbox(void *self, const char *id, struct kc_runtime_error *err);

static const struct kc_pod_runtime_ops sim_pod_runtime_ops = {
        .get_pods = sim_get_pods,
        .get_pod_status = sim_get_pod_status,
        .remove_pod_sandbox = sim_remove_pod_sandbox,
};

struct kc_pod_runtime kc_sim_pod_runtime(struct kc_sim *s)
{
        return (struct kc_pod_runtime){ .ops = &sim_pod_runtime_ops, .self = s };
}

/* ------------------------------------------------------------------------ */
/* Images                                                                     */

#define IMAGE_ID_LEN (7 + 64) /* "sha256:" + 64 hex digits */

/* FNV-1a 64 over @p s from a per-round basis, then a splitmix64 finish. Stable. */
static uint64_t image_hash(const char *s, uint64_t round)
{
        uint64_t h = UINT64_C(14695981039346656037) ^ (round * UINT64_C(0x9e3779b97f4a7c15));

        for (; *s; s++) {
                h ^= (unsigned char)*s;
                h *= UINT64_C(1099511628211);
        }
        h ^= h >> 30;
        h *= UINT64_C(0xbf58476d1ce4e5b9);
        h ^= h >> 27;
        h *= UINT64_C(0x94d049bb133111eb);
        h ^= h >> 31;
        return h;
}

/* True when [s, s + n) contains @p needle. */
static bool span_contains(const char *s, size_t n, const char *needle)
{
        size_t k = strlen(needle), i;

        for (i = 0; k <= n && i <= n - k; i++)
                if (memcmp(s + i, needle, k) == 0)
                        return true;
        return false;
}

/* A new, unlinked image record for @p name (a parsed reference with its default tag). */
static struct sim_image *image_alloc(const char *name, const struct kc__image_ref *ref)
{
        size_t name_n = strlen(name) + 1, repo_n, digest_n;
        struct sim_image *img;
        char *p;
        int i;

        /* The repository: the name without tag and digest. */
        repo_n = ref->tag_len      ? ref->tag_off - 1
                 : ref->digest_len ? ref->digest_off - 1
                                   : name_n - 1;
        digest_n = repo_n + 1 + IMAGE_ID_LEN + 1;
        img = calloc(1, sizeof(*img) + name_n + IMAGE_ID_LEN + 1 + digest_n);
        if (!img)
                return NULL;
        p = (char *)(img + 1);
        memcpy(p, name, name_n);
        img->name = p;
        p += name_n;
        memcpy(p, "sha256:", 7);
        for (i = 0; i < 4; i++)
                snprintf(p + 7 + 16 * i, 17, "%016" PRIx64, image_hash(name, (uint64_t)i));
        img->id = p;
        p += IMAGE_ID_LEN + 1;
        memcpy(p, name, repo_n);
        p[repo_n] = '@';
        memcpy(p + repo_n + 1, img->id, IMAGE_ID_LEN + 1);
        img->digest = p;
        img->tagged = ref->tag_len > 0;
        /* 1 MiB to 201 MiB, stable per name. */
        img->size = (UINT64_C(1) << 20) + image_hash(name, 4) % (UINT64_C(200) << 20);
        return img;
}

/*
 * The stored image for @p image (an id, or a reference: the default tag is
 * applied), NULL when absent. -EINVAL for a malformed reference, -ENOMEM.
 */
static int image_lookup_locked(struct kc_sim *s, const char *image, struct sim_image **ret)
{
        _cleanup_free_ char *name = NULL;
        struct sim_image *img;
        int r;

        img = kc_map_get(s->image_ids, image);
        if (!img) {
                r = kc_image_apply_default_tag(image, &name);
                if (r < 0)
                        return r;
                img = kc_map_get(s->images, name);
        }
        *ret = img;
        return 0;
}

/* Stores the image @p name (default tag applied) unless present; *ret is the stored one. */
static int image_add_locked(struct kc_sim *s, const char *name, const struct kc__image_ref *ref,
                            struct sim_image **ret)
{
        struct sim_image *img = kc_map_get(s->images, name);
        int r;

        if (!img) {
                img = image_alloc(name, ref);
                if (!img)
                        return -ENOMEM;
                r = kc_map_put(s->images, img->name, img);
                if (r < 0) {
                        free(img);
                        return r;
                }
                r = kc_map_put(s->image_ids, img->id, img);
                if (r < 0) {
                        kc_map_remove(s->images, img->name);
                        free(img);
                        return r;
                }
        }
        *ret = img;
        return 0;
}

/* Parses @p image and applies the default tag: *ret_name (malloc'd) and its parse. */
static int image_normalize(const char *image, char **ret_name, struct kc__image_ref *ret_ref)
{
        _cleanup_free_ char *name = NULL;
        int r;

        r = kc_image_apply_default_tag(image, &name);
        if (r < 0)
                return r;
        r = kc__image_ref_parse(name, ret_ref, NULL);
        if (r < 0)
                return r;
        *ret_name = TAKE_PTR(name);
        return 0;
}

int kc_sim_add_image(struct kc_sim *s, const char *image)
{
        _cleanup_unlock_ pthread_mutex_t *l = NULL;
        _cleanup_free_ char *name = NULL;
        struct kc__image_ref ref;
        struct sim_image *img;
        int r;

        if (!s || !image)
                return -EINVAL;
        r = image_normalize(image, &name, &ref);
        if (r < 0)
                return r;
        l = sim_lock(s);
        return image_add_locked(s, name, &ref, &img);
}

/* ------------------------------------------------------------------------ */
/* CRI face                                                                   */

static int not_found(struct kc_runtime_error *err, const char *what, const char *id)
{
        return kc_runtime_error_set(err, -ENOENT, KC_RUNTIME_NOT_FOUND, "%s %s not found", what,
                                    id ? id : "(null)");
}

static int oom(struct kc_runtime_error *err)
{
        return kc_runtime_error_set(err, -ENOMEM, KC_RUNTIME_INTERNAL, "out of memory");
}

/* @p image did not parse (@p r < 0): out of memory, or what containerd says of a bad reference. */
static int image_parse_error(struct kc_runtime_error *err, int r, const char *image)
{
        if (r == -ENOMEM)
                return oom(err);
        return kc_runtime_error_set(err, r, KC_RUNTIME_INVALID_ARGUMENT,
                                    "failed to parse image reference \"%s\": invalid "
                                    "reference format",
                                    image);
}

static int sim_version(void *self, struct kc_version_result *ret, struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        _cleanup_unlock_ pthread_mutex_t *l = sim_lock(s);
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        int r;

        r = enter_locked(s, OP_VERSION, NULL, err);
        if (r < 0)
                return r;
        if (kc_arena_new(&a) < 0)
                return oom(err);
        *ret = (struct kc_version_result){
                .version = "0.1.0",
                .runtime_name = SIM_RUNTIME_NAME,
                .runtime_version = SIM_VERSION,
                .runtime_api_version = SIM_API_VERSION,
                .arena = TAKE_PTR(a),
        };
        return 0;
}

static int sim_status(void *self, struct kc_runtime_status_result *ret,
                      struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        _cleanup_unlock_ pthread_mutex_t *l = sim_lock(s);
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        struct kc_runtime_condition *c;
        int r;

        r = enter_locked(s, OP_STATUS, NULL, err);
        if (r < 0)
                return r;
        if (kc_arena_new(&a) < 0)
                return oom(err);
        c = kc_arena_alloc(a, 2 * sizeof(*c));
        if (!c)
                return oom(err);
        c[0] = (struct kc_runtime_condition){ .type = "RuntimeReady", .status = true };
        c[1] = (struct kc_runtime_condition){ .type = "NetworkReady", .status = s->network_ready };
        if (!s->network_ready) {
                c[1].reason = kc_arena_strdup(a, s->network_reason);
                c[1].message = kc_arena_strdup(a, s->network_message);
                if (!c[1].reason || !c[1].message)
                        return oom(err);
        }
        *ret = (struct kc_runtime_status_result){
                .conditions = c,
                .n_conditions = 2,
                .arena = TAKE_PTR(a),
        };
        return 0;
}

static int sim_run_pod_sandbox(void *self, const struct kc_pod_sandbox_config *config,
                               char **ret_id, struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        _cleanup_unlock_ pthread_mutex_t *l = sim_lock(s);
        _cleanup_free_ char *id_copy = NULL;
        const struct kc_pod_sandbox_metadata *md;
        const char *uid, *name, *ns;
        char id[24], ip[16];
        struct sim_sandbox *sb;
        struct sim_pod *p;
        bool new_pod = false;
        int r;

        r = enter_locked(s, OP_RUN_POD_SANDBOX, config ? config->metadata.uid : NULL, err);
        if (r < 0)
                return r;
        if (!config || !ret_id || !config->metadata.uid || !config->metadata.name)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "sandbox config metadata (name, uid) is required");
        md = &config->metadata;
        uid = kc__label_get(config->labels, config->n_labels, KC_LABEL_POD_UID);
        uid = uid ? uid : md->uid;
        p = kc_map_get(s->st.pods, uid);
        if (p)
                for (sb = p->sb_first; sb; sb = sb->next)
                        if (kc__streq(sb->v.metadata.name, md->name) &&
                            kc__streq(sb->v.metadata.namespace, md->namespace) &&
                            kc__streq(sb->v.metadata.uid, md->uid) &&
                            sb->v.metadata.attempt == md->attempt)
                                return kc_runtime_error_set(
                                        err, -EEXIST, KC_RUNTIME_ALREADY_EXISTS,
                                        "sandbox name \"%s_%s_%s_%u\" is reserved for %s", md->name,
                                        md->namespace ? md->namespace : "", md->uid, md->attempt,
                                        sb->v.id);
        if (!p) {
                name = kc__label_get(config->labels, config->n_labels, KC_LABEL_POD_NAME);
                ns = kc__label_get(config->labels, config->n_labels, KC_LABEL_POD_NAMESPACE);
                p = pod_alloc(uid, name ? name : md->name, ns ? ns : md->namespace, NULL, 0);
                if (!p)
                        return oom(err);
                r = state_add_pod(&s->st, p);
                if (r < 0) {
                        pod_free(p);
                        return oom(err);
                }
                new_pod = true;
        }

        new_id_locked(s, id);
        if (!config->host_network)
                new_ip_locked(s, ip);
        id_copy = strdup(id);
        sb = id_copy ? sandbox_alloc(&(struct kc_pod_sandbox){
                               .id = id,
                               .metadata = *md,
                               .state = KC_SANDBOX_STATE_READY,
                               .created_at = creation_time_locked(s),
                               .ip = config->host_network ? NULL : ip,
                               .labels = config->labels,
                               .n_labels = config->n_labels,
                               .annotations = config->annotations,
                               .n_annotations = config->n_annotations,
                       })
                     : NULL;
        if (sb) {
                sb->cstate = KC_CONTAINER_STATE_RUNNING;
                r = state_add_sandbox(&s->st, p, sb);
                if (r < 0) {
                        free(sb);
                        sb = NULL;
                }
        }
        if (!sb) {
                if (new_pod)
                        state_remove_pod(&s->st, p);
                return oom(err);
        }
        *ret_id = TAKE_PTR(id_copy);
        return 0;
}

static void stop_container_locked(struct kc_sim *s, struct sim_container *c)
{
        if (c->v.state == KC_CONTAINER_STATE_RUNNING || c->v.state == KC_CONTAINER_STATE_UNKNOWN)
                container_exit(c, SIM_EXIT_KILLED, kc_clock_now(s->clock), "Error");
}

int kc_sim_crash_container(struct kc_sim *s, const char *pod_uid, const char *name,
                           int32_t exit_code)
{
        _cleanup_unlock_ pthread_mutex_t *l = NULL;
        struct sim_container *c;
        struct sim_pod *p;
        int n = 0;

        if (!s || !pod_uid)
                return -EINVAL;
        l = sim_lock(s);
        /* Exits due by now happen first: a crash cannot overtake them. */
        advance_locked(s);
        p = kc_map_get(s->st.pods, pod_uid);
        if (!p)
                return -ENOENT;
        for (c = p->c_first; c; c = c->next) {
                if (c->v.state != KC_CONTAINER_STATE_RUNNING ||
                    (name && !kc__streq(c->v.metadata.name, name)))
                        continue;
                container_exit(c, exit_code, kc_clock_now(s->clock), exit_code ? "Error" : NULL);
                n++;
        }
        s->crashes += (uint64_t)n;
        return n;
}

static int sim_stop_pod_sandbox(void *self, const char *id, struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        _cleanup_unlock_ pthread_mutex_t *l = sim_lock(s);
        struct sim_container *c;
        struct sim_sandbox *sb;
        int r;

        r = enter_locked(s, OP_STOP_POD_SANDBOX, id, err);
        if (r < 0)
                return r;
        if (!id)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "sandbox id is required");
        sb = kc_map_get(s->st.sandboxes, id);
        if (!sb)
                return 0; /* idempotent, as the CRI asks */
        for (c = sb->pod->c_first; c; c = c->next)
                if (c->sandbox == sb)
                        stop_container_locked(s, c);
        sb->v.state = KC_SANDBOX_STATE_NOTREADY;
        sb->cstate = KC_CONTAINER_STATE_EXITED;
        /* The network namespace is gone: no IP any more (pod-level IPs of set_pods pods stay). */
        sb->v.ip = NULL;
        sb->v.additional_ips = NULL;
        sb->v.n_additional_ips = 0;
        pod_touch(sb->pod);
        return 0;
}

static int sim_remove_pod_sandbox(void *self, const char *id, struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        _cleanup_unlock_ pthread_mutex_t *l = sim_lock(s);
        struct sim_sandbox *sb;
        int r;

        r = enter_locked(s, OP_REMOVE_POD_SANDBOX, id, err);
        if (r < 0)
                return r;
        if (!id)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "sandbox id is required");
        sb = kc_map_get(s->st.sandboxes, id);
        if (sb)
                state_remove_sandbox(&s->st, sb);
        /* A missing sandbox is not an error (containerd: NotFound is ignored). */
        return 0;
}

static int sim_pod_sandbox_status(void *self, const char *id,
                                  struct kc_pod_sandbox_status_result *ret,
                                  struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        _cleanup_unlock_ pthread_mutex_t *l = sim_lock(s);
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        struct kc_pod_sandbox v;
        struct sim_sandbox *sb;
        int r;

        r = enter_locked(s, OP_POD_SANDBOX_STATUS, id, err);
        if (r < 0)
                return r;
        sb = id ? kc_map_get(s->st.sandboxes, id) : NULL;
        if (!sb)
                return not_found(err, "sandbox", id);
        if (kc_arena_new(&a) < 0)
                return oom(err);
        v = sb->v;
        sandbox_ips(sb, &v.ip, &v.additional_ips, &v.n_additional_ips);
        if (kc__pod_sandbox_copy(a, &v, &ret->status) < 0)
                return oom(err);
        ret->arena = TAKE_PTR(a);
        return 0;
}

/*
 * Listing walks objects that are cold by now; fetch the next one (struct and
 * blob, a few hundred bytes in one allocation) while copying this one.
 */
#define PREFETCH_OBJ_BYTES 512

static inline void prefetch_next(const void *next)
{
        size_t k;

        for (k = 0; next && k < PREFETCH_OBJ_BYTES; k += 64)
                __builtin_prefetch((const char *)next + k);
}

static bool sandbox_matches(const struct sim_sandbox *sb, const struct kc_pod_sandbox_filter *f)
{
        if (!f)
                return true;
        if (f->id && strcmp(f->id, sb->v.id) != 0)
                return false;
        if (f->state >= 0 && (int)sb->v.state != f->state)
                return false;
        return kc__labels_match(sb->v.labels, sb->v.n_labels, f->label_selector,
                                f->n_label_selector);
}

/* Pods whose objects may match a selector: one pod when it names the pod UID. */
static struct sim_pod *selector_pod(struct kc_sim *s, const struct kc_label *sel, size_t n,
                                    bool *narrowed)
{
        const char *uid = kc__label_get(sel, n, KC_LABEL_POD_UID);

        *narrowed = uid != NULL;
        return uid ? kc_map_get(s->st.pods, uid) : NULL;
}

static int sim_list_pod_sandbox(void *self, const struct kc_pod_sandbox_filter *filter,
                                struct kc_pod_sandbox_list *ret, struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        _cleanup_unlock_ pthread_mutex_t *l = sim_lock(s);
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        struct kc_pod_sandbox *items = NULL;
        struct sim_pod *first, *only = NULL;
        struct sim_sandbox *sb;
        bool narrowed = false;
        size_t n = 0, cap;
        int r;

        r = enter_locked(s, OP_LIST_POD_SANDBOX, filter ? filter->id : NULL, err);
        if (r < 0)
                return r;
        if (kc_arena_new(&a) < 0)
                return oom(err);

        if (filter && filter->id) {
                sb = kc_map_get(s->st.sandboxes, filter->id);
                only = sb ? sb->pod : NULL;
                narrowed = true;
        } else if (filter) {
                only = selector_pod(s, filter->label_selector, filter->n_label_selector, &narrowed);
        }
        first = narrowed ? only : s->st.first;
        /* One pass: room for every candidate, then copy the matches. */
        cap = narrowed ? (only ? only->n_sandboxes : 0) : s->st.n_sandboxes;
        if (cap > 0) {
                struct sim_pod *p;

                items = kc_arena_alloc(a, cap * sizeof(*items));
                if (!items)
                        return oom(err);
                for (p = first; p; p = narrowed ? NULL : p->next)
                        for (sb = p->sb_first; sb; sb = sb->next) {
                                prefetch_next(sb->next  ? sb->next
                                              : p->next ? p->next->sb_first
                                                        : NULL);
                                if (!sandbox_matches(sb, filter))
                                        continue;
                                if (n == cap) /* the counts are maintained with the lists */
                                        return kc_runtime_error_set(
                                                err, -EIO, KC_RUNTIME_INTERNAL,
                                                "sim: object count out of sync");
                                if (blob_copy_sandbox(a, sb, &items[n]) < 0)
                                        return oom(err);
                                n++;
                        }
                if (n == 0)
                        items = NULL;
        }
        *ret = (struct kc_pod_sandbox_list){ .items = items, .n = n, .arena = TAKE_PTR(a) };
        return 0;
}

static int sim_create_container(void *self, const char *pod_sandbox_id,
                                const struct kc_container_config *config,
                                const struct kc_pod_sandbox_config *sandbox_config, char **ret_id,
                                struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        _cleanup_unlock_ pthread_mutex_t *l = sim_lock(s);
        _cleanup_free_ char *id_copy = NULL;
        struct sim_container *c;
        struct sim_sandbox *sb;
        struct sim_image *img = NULL;
        char id[24];
        int r;

        (void)sandbox_config;
        r = enter_locked(s, OP_CREATE_CONTAINER, pod_sandbox_id, err);
        if (r < 0)
                return r;
        if (!config || !ret_id || !config->metadata.name)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "container config metadata (name) is required");
        sb = pod_sandbox_id ? kc_map_get(s->st.sandboxes, pod_sandbox_id) : NULL;
        if (!sb)
                return not_found(err, "sandbox", pod_sandbox_id);
        if (sb->v.state != KC_SANDBOX_STATE_READY)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_FAILED_PRECONDITION,
                                            "sandbox %s is not ready", pod_sandbox_id);
        for (c = sb->pod->c_first; c; c = c->next)
                if (c->sandbox == sb && kc__streq(c->v.metadata.name, config->metadata.name) &&
                    c->v.metadata.attempt == config->metadata.attempt)
                        return kc_runtime_error_set(
                                err, -EEXIST, KC_RUNTIME_ALREADY_EXISTS,
                                "container name \"%s\" attempt %u is reserved for %s",
                                config->metadata.name, config->metadata.attempt, c->v.id);
        /* As a real runtime: the image must have been pulled. */
        if (!config->image)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "container config image is required");
        r = image_lookup_locked(s, config->image, &img);
        if (r == -ENOMEM)
                return oom(err);
        if (!img)
                return kc_runtime_error_set(err, -ENOENT, KC_RUNTIME_NOT_FOUND,
                                            "failed to get image \"%s\": not found", config->image);

        new_id_locked(s, id);
        id_copy = strdup(id);
        if (!id_copy)
                return oom(err);
        c = container_alloc(
                &(struct kc_cri_container){
                        .id = id,
                        .pod_sandbox_id = sb->v.id,
                        .metadata = config->metadata,
                        .image = config->user_specified_image ? config->user_specified_image
                                                              : config->image,
                        .image_ref = img->id,
                        .state = KC_CONTAINER_STATE_CREATED,
                        .created_at = creation_time_locked(s),
                        .labels = config->labels,
                        .n_labels = config->n_labels,
                        .annotations = config->annotations,
                        .n_annotations = config->n_annotations,
                },
                config->command, config->n_command, config->args, config->n_args);
        if (!c)
                return oom(err);
        c->prog = program_parse(c->argv, c->argc);
        r = state_add_container(&s->st, sb->pod, sb, c);
        if (r < 0) {
                free(c);
                return oom(err);
        }
        *ret_id = TAKE_PTR(id_copy);
        return 0;
}

static int sim_start_container(void *self, const char *id, struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        _cleanup_unlock_ pthread_mutex_t *l = sim_lock(s);
        struct sim_container *c;
        int64_t now;
        int r;

        r = enter_locked(s, OP_START_CONTAINER, id, err);
        if (r < 0)
                return r;
        c = id ? kc_map_get(s->st.containers, id) : NULL;
        if (!c)
                return not_found(err, "container", id);
        if (c->v.state != KC_CONTAINER_STATE_CREATED)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_FAILED_PRECONDITION,
                                            "container %s is in %s state, not created", id,
                                            kc_container_state_to_string(c->v.state));
        now = kc_clock_now(s->clock);
        c->v.state = KC_CONTAINER_STATE_RUNNING;
        c->v.started_at = now;
        pod_touch(c->pod);
        if (c->prog.exits) {
                c->deadline =
                        c->prog.run_ns > INT64_MAX - now ? INT64_MAX - 1 : now + c->prog.run_ns;
                if (c->deadline <= now)
                        container_exit(c, c->prog.exit_code, c->deadline, NULL);
                else if (c->deadline < s->st.next_deadline)
                        s->st.next_deadline = c->deadline;
        }
        return 0;
}

static int sim_stop_container(void *self, const char *id, int64_t timeout_s,
                              struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        _cleanup_unlock_ pthread_mutex_t *l = sim_lock(s);
        struct sim_container *c;
        int r;

        (void)timeout_s; /* busybox commands ignore SIGTERM as PID 1: the sim kills */
        r = enter_locked(s, OP_STOP_CONTAINER, id, err);
        if (r < 0)
                return r;
        c = id ? kc_map_get(s->st.containers, id) : NULL;
        if (!c)
                return not_found(err, "container", id);
        /* An exited container keeps its own exit code; a created one stays created. */
        stop_container_locked(s, c);
        return 0;
}

static int sim_remove_container(void *self, const char *id, struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        _cleanup_unlock_ pthread_mutex_t *l = sim_lock(s);
        struct sim_container *c;
        int r;

        r = enter_locked(s, OP_REMOVE_CONTAINER, id, err);
        if (r < 0)
                return r;
        if (!id)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "container id is required");
        c = kc_map_get(s->st.containers, id);
        if (c)
                state_remove_container(&s->st, c);
        return 0; /* idempotent, as the CRI asks */
}

static bool container_matches(const struct sim_container *c, const struct kc_container_filter *f)
{
        if (!f)
                return true;
        if (f->id && strcmp(f->id, c->v.id) != 0)
                return false;
        if (f->pod_sandbox_id && !kc__streq(f->pod_sandbox_id, c->v.pod_sandbox_id))
                return false;
        if (f->state >= 0 && (int)c->v.state != f->state)
                return false;
        return kc__labels_match(c->v.labels, c->v.n_labels, f->label_selector, f->n_label_selector);
}

static int sim_list_containers(void *self, const struct kc_container_filter *filter,
                               struct kc_container_list *ret, struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        _cleanup_unlock_ pthread_mutex_t *l = sim_lock(s);
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        struct kc_cri_container *items = NULL;
        struct sim_pod *first, *only = NULL;
        struct sim_container *c;
        struct sim_sandbox *sb;
        bool narrowed = false;
        size_t n = 0, cap;
        int r;

        r = enter_locked(s, OP_LIST_CONTAINERS, filter ? filter->id : NULL, err);
        if (r < 0)
                return r;
        if (kc_arena_new(&a) < 0)
                return oom(err);

        if (filter && filter->id) {
                c = kc_map_get(s->st.containers, filter->id);
                only = c ? c->pod : NULL;
                narrowed = true;
        } else if (filter && filter->pod_sandbox_id) {
                sb = kc_map_get(s->st.sandboxes, filter->pod_sandbox_id);
                only = sb ? sb->pod : NULL;
                narrowed = true;
        } else if (filter) {
                only = selector_pod(s, filter->label_selector, filter->n_label_selector, &narrowed);
        }
        first = narrowed ? only : s->st.first;
        /* One pass: room for every candidate, then copy the matches. */
        cap = narrowed ? (only ? only->n_containers : 0) : s->st.n_containers;
        if (cap > 0) {
                struct sim_pod *p;

                items = kc_arena_alloc(a, cap * sizeof(*items));
                if (!items)
                        return oom(err);
                for (p = first; p; p = narrowed ? NULL : p->next)
                        for (c = p->c_first; c; c = c->next) {
                                prefetch_next(c->next   ? c->next
                                              : p->next ? p->next->c_first
                                                        : NULL);
                                if (!container_matches(c, filter))
                                        continue;
                                if (n == cap) /* the counts are maintained with the lists */
                                        return kc_runtime_error_set(
                                                err, -EIO, KC_RUNTIME_INTERNAL,
                                                "sim: object count out of sync");
                                if (blob_copy_container(a, c, &items[n]) < 0)
                                        return oom(err);
                                n++;
                        }
                if (n == 0)
                        items = NULL;
        }
        *ret = (struct kc_container_list){ .items = items, .n = n, .arena = TAKE_PTR(a) };
        return 0;
}

static int sim_container_status(void *self, const char *id, struct kc_container_status_result *ret,
                                struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        _cleanup_unlock_ pthread_mutex_t *l = sim_lock(s);
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        struct sim_container *c;
        int r;

        r = enter_locked(s, OP_CONTAINER_STATUS, id, err);
        if (r < 0)
                return r;
        c = id ? kc_map_get(s->st.containers, id) : NULL;
        if (!c)
                return not_found(err, "container", id);
        if (kc_arena_new(&a) < 0)
                return oom(err);
        if (kc__cri_container_copy(a, &c->v, &ret->status) < 0)
                return oom(err);
        ret->arena = TAKE_PTR(a);
        return 0;
}

static int sim_image_status(void *self, const char *image, struct kc_image_status_result *ret,
                            struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        _cleanup_unlock_ pthread_mutex_t *l = sim_lock(s);
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        struct sim_image *img = NULL;
        const char **tags = NULL, **digests;
        const char *id;
        int r;

        r = enter_locked(s, OP_IMAGE_STATUS, image, err);
        if (r < 0)
                return r;
        if (!image || !ret)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "image is required");
        r = image_lookup_locked(s, image, &img);
        if (r < 0)
                return image_parse_error(err, r, image);
        if (!img) {
                /* CRI: a nil image, not an error. */
                *ret = (struct kc_image_status_result){ .found = false };
                return 0;
        }
        if (kc_arena_new(&a) < 0)
                return oom(err);
        id = kc_arena_strdup(a, img->id);
        digests = kc_arena_alloc(a, sizeof(*digests));
        if (img->tagged)
                tags = kc_arena_alloc(a, sizeof(*tags));
        if (!id || !digests || (img->tagged && !tags))
                return oom(err);
        digests[0] = kc_arena_strdup(a, img->digest);
        if (tags)
                tags[0] = kc_arena_strdup(a, img->name);
        if (!digests[0] || (tags && !tags[0]))
                return oom(err);
        *ret = (struct kc_image_status_result){
                .found = true,
                .image = {
                        .id = id,
                        .repo_tags = tags,
                        .n_repo_tags = tags ? 1 : 0,
                        .repo_digests = digests,
                        .n_repo_digests = 1,
                        .size = img->size,
                },
                .arena = TAKE_PTR(a),
        };
        return 0;
}

static int sim_pull_image(void *self, const char *image,
                          const struct kc_pod_sandbox_config *sandbox_config, char **ret_image_ref,
                          struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        _cleanup_unlock_ pthread_mutex_t *l = sim_lock(s);
        _cleanup_free_ char *name = NULL, *ref_copy = NULL;
        struct kc__image_ref ref;
        struct sim_image *img;
        int r;

        (void)sandbox_config;
        r = enter_locked(s, OP_PULL_IMAGE, image, err);
        if (r < 0)
                return r;
        if (!image || !ret_image_ref)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "image is required");
        r = image_normalize(image, &name, &ref);
        if (r < 0)
                return image_parse_error(err, r, image);
        /* The registry has no such repository: what containerd reports. */
        if (span_contains(name + ref.path_off, ref.path_len, "doesnotexist") ||
            span_contains(name + ref.path_off, ref.path_len, "invalid"))
                return kc_runtime_error_set(err, -ENOENT, KC_RUNTIME_NOT_FOUND,
                                            "failed to pull and unpack image \"%s\": failed to "
                                            "resolve reference \"%s\": %s: not found",
                                            name, name, name);
        r = image_add_locked(s, name, &ref, &img);
        if (r < 0)
                return oom(err);
        ref_copy = strdup(img->id);
        if (!ref_copy)
                return oom(err);
        *ret_image_ref = TAKE_PTR(ref_copy);
        return 0;
}

static const struct kc_runtime_service_ops sim_service_ops = {
        .version = sim_version,
        .status = sim_status,
        .run_pod_sandbox = sim_run_pod_sandbox,
        .stop_pod_sandbox = sim_stop_pod_sandbox,
        .remove_pod_sandbox = sim_remove_pod_sandbox,
        .pod_sandbox_status = sim_pod_sandbox_status,
        .list_pod_sandbox = sim_list_pod_sandbox,
        .create_container = sim_create_container,
        .start_container = sim_start_container,
        .stop_container = sim_stop_container,
        .remove_container = sim_remove_container,
        .list_containers = sim_list_containers,
        .container_status = sim_container_status,
        .image_status = sim_image_status,
        .pull_image = sim_pull_image,
};

int kc_sim_set_network_ready(struct kc_sim *s, bool ready, const char *reason, const char *message)
{
        _cleanup_unlock_ pthread_mutex_t *l = NULL;

        if (!s)
                return -EINVAL;
        l = sim_lock(s);
        s->network_ready = ready;
        snprintf(s->network_reason, sizeof(s->network_reason), "%s", reason ? reason : "");
        snprintf(s->network_message, sizeof(s->network_message), "%s", message ? message : "");
        return 0;
}

struct kc_runtime_service kc_sim_service(struct kc_sim *s)
{
        return (struct kc_runtime_service){ .ops = &sim_service_ops, .self = s };
}
