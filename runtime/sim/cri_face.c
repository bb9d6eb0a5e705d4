/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CRI face: kc_runtime_service over the sim's state. Results are packed
 * in a per-call arena the caller frees. Errors carry the gRPC code and the
 * message containerd would send. The list calls are in cri_list.c, the
 * image calls in images.c.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "core/arena.h"
#include "core/cleanup.h"
#include "core/format.h"
#include "core/lock.h"
#include "core/map.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"
#include "runtime/sim.h"
#include "sim_internal.h"

#define SIM_VERSION "0.1.0"
#define SIM_RUNTIME_NAME "sim"
#define SIM_API_VERSION "v1"

int kc__sim_not_found(struct kc_runtime_error *err, const char *what, const char *id)
{
        return kc_runtime_error_set(err, -ENOENT, KC_RUNTIME_NOT_FOUND, "%s %s not found", what,
                                    id ? id : "(null)");
}

int kc__sim_oom(struct kc_runtime_error *err)
{
        return kc_runtime_error_set(err, -ENOMEM, KC_RUNTIME_INTERNAL, "out of memory");
}

/* Objects of the remembered pod looked through at most; a larger pod goes by the map. */
#define LISTED_OBJECTS_MAX 16

/* Whether @id is the id string @own, by address first. */
static bool same_id(const char *own, const char *id)
{
        return own == id || strcmp(own, id) == 0;
}

/*
 * The object with id @id among those of the pod the last list call
 * narrowed to, while nothing changed since; else NULL. A status call right
 * after its pod's listing (GetPodStatus) skips the map: it reads the pod's
 * few objects, which the listing just read, instead of a slot and a key
 * elsewhere. The map would give the same object (ids being unique: not
 * after a snapshot that gave one id twice). A pod found by the map is not
 * remembered: the next status call is mostly another pod's (a pod as
 * GetPods listed it has its changed objects alone read, D55), and a walk
 * of that pod's cold objects would come before the map for nothing.
 */
static void *listed_object(struct kc_sim *s, const char *id, bool container)
{
        struct sim_pod *p = kc__sim_remembered_pod(s);
        struct sim_objects *objs;
        struct sim_object *o;

        if (!p || s->st.dup_ids)
                return NULL;
        objs = container ? &p->containers : &p->sandboxes;
        if (objs->n > LISTED_OBJECTS_MAX)
                return NULL;
        kc_list_for_each_entry (o, &objs->list, struct sim_object, link) {
                if (container && same_id(kc_container_of(o, struct sim_container, o)->v.id, id))
                        return kc_container_of(o, struct sim_container, o);
                if (!container && same_id(kc_container_of(o, struct sim_sandbox, o)->v.id, id))
                        return kc_container_of(o, struct sim_sandbox, o);
        }
        return NULL;
}

/*
 * Enters call @p op on the object @p id, a container or a sandbox: *ret is
 * the object, NULL when absent. A missing object is NOT_FOUND when
 * @p must_exist (a NULL @p id too); otherwise a NULL @p id is
 * INVALID_ARGUMENT and an absent object is not an error. The maps are read
 * only after entering, which may have dropped the lock.
 */
static int enter_object_locked(struct kc_sim *s, enum sim_op op, const char *id, bool container,
                               bool must_exist, void **ret, struct kc_runtime_error *err)
{
        const char *what = container ? "container" : "sandbox";
        void *obj;
        int r;

        r = kc__sim_enter_locked(s, op, id, err);
        if (r < 0)
                return r;
        if (!id && !must_exist)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "%s id is required", what);
        obj = id ? listed_object(s, id, container) : NULL;
        if (!obj && id) {
                obj = kc_map_get(container ? s->st.containers : s->st.sandboxes, id);
        }
        if (!obj && must_exist)
                return kc__sim_not_found(err, what, id);
        *ret = obj;
        return 0;
}

/* enter_object_locked() for a sandbox; *ret is NULL on failure. */
static int enter_sandbox_locked(struct kc_sim *s, enum sim_op op, const char *id, bool must_exist,
                                struct sim_sandbox **ret, struct kc_runtime_error *err)
{
        void *obj = NULL;
        int r = enter_object_locked(s, op, id, false, must_exist, &obj, err);

        *ret = obj;
        return r;
}

/* enter_object_locked() for a container; *ret is NULL on failure. */
static int enter_container_locked(struct kc_sim *s, enum sim_op op, const char *id, bool must_exist,
                                  struct sim_container **ret, struct kc_runtime_error *err)
{
        void *obj = NULL;
        int r = enter_object_locked(s, op, id, true, must_exist, &obj, err);

        *ret = obj;
        return r;
}

/* ------------------------------------------------------------------------ */
/* Version and Status                                                         */

static int sim_version(void *self, struct kc_version_result *ret, struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        KC_LOCK_GUARD(&s->lock);
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        int r;

        r = kc__sim_enter_locked(s, SIM_OP_VERSION, NULL, err);
        if (r < 0)
                return r;
        if (kc_arena_new(&a) < 0)
                return kc__sim_oom(err);
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
        KC_LOCK_GUARD(&s->lock);
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        struct kc_runtime_condition *c;
        int r;

        r = kc__sim_enter_locked(s, SIM_OP_STATUS, NULL, err);
        if (r < 0)
                return r;
        if (kc_arena_new(&a) < 0)
                return kc__sim_oom(err);
        c = kc_arena_alloc(a, 2 * sizeof(*c));
        if (!c)
                return kc__sim_oom(err);
        c[0] = (struct kc_runtime_condition){ .type = "RuntimeReady", .status = true };
        c[1] = (struct kc_runtime_condition){ .type = "NetworkReady", .status = s->network_ready };
        if (!s->network_ready) {
                c[1].reason = kc_arena_strdup(a, s->network_reason);
                c[1].message = kc_arena_strdup(a, s->network_message);
                if (!c[1].reason || !c[1].message)
                        return kc__sim_oom(err);
        }
        *ret = (struct kc_runtime_status_result){
                .conditions = c,
                .n_conditions = 2,
                .arena = TAKE_PTR(a),
        };
        return 0;
}

int kc_sim_set_network_ready(struct kc_sim *s, bool ready, const char *reason, const char *message)
{
        if (!s)
                return -EINVAL;
        KC_LOCK_GUARD(&s->lock);
        s->network_ready = ready;
        snprintf(s->network_reason, sizeof(s->network_reason), "%s", reason ? reason : "");
        snprintf(s->network_message, sizeof(s->network_message), "%s", message ? message : "");
        return 0;
}

/* ------------------------------------------------------------------------ */
/* Sandboxes                                                                  */

/* ALREADY_EXISTS when a sandbox of @p p has the metadata @p md, else 0. */
static int sandbox_name_check(const struct sim_pod *p, const struct kc_pod_sandbox_metadata *md,
                              struct kc_runtime_error *err)
{
        const struct sim_sandbox *sb;

        sim_for_each_sandbox(sb, p)
        {
                if (kc__streq(sb->v.metadata.name, md->name) &&
                    kc__streq(sb->v.metadata.namespace, md->namespace) &&
                    kc__streq(sb->v.metadata.uid, md->uid) && sb->v.metadata.attempt == md->attempt)
                        return kc_runtime_error_set(
                                err, -EEXIST, KC_RUNTIME_ALREADY_EXISTS,
                                "sandbox name \"%s_%s_%s_%u\" is reserved for %s", md->name,
                                md->namespace ? md->namespace : "", md->uid, md->attempt, sb->v.id);
        }
        return 0;
}

/* A new pod (linked) for a sandbox of @p config whose pod UID is @p uid. */
static int pod_for_sandbox_locked(struct kc_sim *s, const struct kc_pod_sandbox_config *config,
                                  const char *uid, struct sim_pod **ret)
{
        const struct kc_pod_sandbox_metadata *md = &config->metadata;
        const char *name, *ns;
        struct sim_pod *p;

        name = kc__label_get(config->labels, config->n_labels, KC_LABEL_POD_NAME);
        ns = kc__label_get(config->labels, config->n_labels, KC_LABEL_POD_NAMESPACE);
        p = kc__sim_pod_alloc(uid, name ? name : md->name, ns ? ns : md->namespace, NULL, 0);
        if (!p)
                return -ENOMEM;
        if (kc__sim_state_add_pod(&s->st, p) < 0) {
                kc__sim_pod_free(p);
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}

/* A new ready sandbox @p id of @p config in @p p, with an IP unless on the host network. */
static struct sim_sandbox *sandbox_create_locked(struct kc_sim *s, struct sim_pod *p,
                                                 const struct kc_pod_sandbox_config *config,
                                                 const char *id)
{
        struct sim_sandbox *sb;
        char ip[16];

        if (!config->host_network)
                kc__sim_new_ip_locked(s, ip);
        sb = kc__sim_sandbox_alloc(&(struct kc_pod_sandbox){
                .id = id,
                .metadata = config->metadata,
                .state = KC_SANDBOX_STATE_READY,
                .created_at = kc__sim_creation_time_locked(s),
                .ip = config->host_network ? NULL : ip,
                .labels = config->labels,
                .n_labels = config->n_labels,
                .annotations = config->annotations,
                .n_annotations = config->n_annotations,
        });
        if (!sb)
                return NULL;
        sb->cstate = KC_CONTAINER_STATE_RUNNING;
        if ((s->record_configs && kc__sim_config_record_new(config, NULL, &sb->rec) < 0) ||
            kc__sim_state_add_sandbox(&s->st, p, sb) < 0) {
                kc__sim_sandbox_free(sb);
                return NULL;
        }
        return sb;
}

static int sim_run_pod_sandbox(void *self, const struct kc_pod_sandbox_config *config,
                               char **ret_id, struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        KC_LOCK_GUARD(&s->lock);
        _cleanup_free_ char *id_copy = NULL;
        struct sim_pod *p;
        bool new_pod = false;
        const char *uid;
        char id[24];
        int r;

        r = kc__sim_enter_locked(s, SIM_OP_RUN_POD_SANDBOX, config ? config->metadata.uid : NULL,
                                 err);
        if (r < 0)
                return r;
        if (!config || !ret_id || !config->metadata.uid || !config->metadata.name)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "sandbox config metadata (name, uid) is required");
        uid = kc__label_get(config->labels, config->n_labels, KC_LABEL_POD_UID);
        uid = uid ? uid : config->metadata.uid;
        p = kc_map_get(s->st.pods, uid);
        if (p) {
                r = sandbox_name_check(p, &config->metadata, err);
                if (r < 0)
                        return r;
        } else {
                if (pod_for_sandbox_locked(s, config, uid, &p) < 0)
                        return kc__sim_oom(err);
                new_pod = true;
        }
        kc__sim_new_id_locked(s, id);
        id_copy = strdup(id);
        if (!id_copy || !sandbox_create_locked(s, p, config, id)) {
                if (new_pod)
                        kc__sim_state_remove_pod(&s->st, p);
                return kc__sim_oom(err);
        }
        *ret_id = TAKE_PTR(id_copy);
        return 0;
}

static int sim_stop_pod_sandbox(void *self, const char *id, struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        KC_LOCK_GUARD(&s->lock);
        struct sim_container *c;
        struct sim_sandbox *sb;
        int r;

        r = enter_sandbox_locked(s, SIM_OP_STOP_POD_SANDBOX, id, false, &sb, err);
        if (r < 0)
                return r;
        if (!sb)
                return 0; /* idempotent, as the CRI asks */
        sim_for_each_container(c, sb->o.pod)
        {
                if (c->sandbox == sb)
                        kc__sim_container_stop_locked(s, c);
        }
        sb->v.state = KC_SANDBOX_STATE_NOTREADY;
        sb->cstate = KC_CONTAINER_STATE_EXITED;
        /* The network namespace is gone: no IP any more (pod-level IPs of set_pods pods stay). */
        sb->v.ip = NULL;
        sb->v.additional_ips = NULL;
        sb->v.n_additional_ips = 0;
        kc__sim_object_touch(&sb->o, false);
        return 0;
}

int kc__sim_remove_pod_sandbox(void *self, const char *id, struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        KC_LOCK_GUARD(&s->lock);
        struct sim_sandbox *sb;
        int r;

        r = enter_sandbox_locked(s, SIM_OP_REMOVE_POD_SANDBOX, id, false, &sb, err);
        if (r < 0)
                return r;
        if (sb)
                kc__sim_state_remove_sandbox(&s->st, sb);
        /* A missing sandbox is not an error (containerd: NotFound is ignored). */
        return 0;
}

static int sim_pod_sandbox_status(void *self, const char *id,
                                  struct kc_pod_sandbox_status_result *ret,
                                  struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        KC_LOCK_GUARD(&s->lock);
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        struct kc_pod_sandbox v;
        struct sim_sandbox *sb;
        int r;

        r = enter_sandbox_locked(s, SIM_OP_POD_SANDBOX_STATUS, id, true, &sb, err);
        if (r < 0)
                return r;
        if (kc_arena_new(&a) < 0 || kc__sim_sandbox_view(a, sb, &v) < 0)
                return kc__sim_oom(err);
        ret->status = v;
        ret->arena = TAKE_PTR(a);
        return 0;
}

/* ------------------------------------------------------------------------ */
/* Containers                                                                 */

/*
 * Whether a container of @p config may be created in @p sb: the sandbox is
 * ready, the name and attempt are free and the image has been pulled (its
 * id in *ret_image_ref). A gRPC error otherwise.
 */
static int container_create_check_locked(struct kc_sim *s, const struct sim_sandbox *sb,
                                         const struct kc_container_config *config,
                                         const char **ret_image_ref, struct kc_runtime_error *err)
{
        const struct sim_container *c;
        struct sim_image *img = NULL;
        int r;

        if (sb->v.state != KC_SANDBOX_STATE_READY)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_FAILED_PRECONDITION,
                                            "sandbox %s is not ready", sb->v.id);
        sim_for_each_container(c, sb->o.pod)
        {
                if (c->sandbox == sb && kc__streq(c->v.metadata.name, config->metadata.name) &&
                    c->v.metadata.attempt == config->metadata.attempt)
                        return kc_runtime_error_set(
                                err, -EEXIST, KC_RUNTIME_ALREADY_EXISTS,
                                "container name \"%s\" attempt %u is reserved for %s",
                                config->metadata.name, config->metadata.attempt, c->v.id);
        }
        /* As a real runtime: the image must have been pulled. */
        if (!config->image)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "container config image is required");
        r = kc__sim_image_lookup_locked(s, config->image, &img);
        if (r == -ENOMEM)
                return kc__sim_oom(err);
        if (!img)
                return kc_runtime_error_set(err, -ENOENT, KC_RUNTIME_NOT_FOUND,
                                            "failed to get image \"%s\": not found", config->image);
        *ret_image_ref = img->id;
        return 0;
}

/*
 * Keeps what exec needs of @p config and @p sandbox_config (may be NULL) in
 * @p c, and deep copies of both when the sim records configs.
 */
static int record_container_config(struct kc_sim *s, struct sim_container *c,
                                   const struct kc_container_config *config,
                                   const struct kc_pod_sandbox_config *sandbox_config)
{
        c->exec = kc__sim_exec_config_new(config, sandbox_config);
        if (!c->exec)
                return -ENOMEM;
        if (s->record_configs)
                return kc__sim_config_record_new(sandbox_config, config, &c->rec);
        return 0;
}

static int sim_create_container(void *self, const char *pod_sandbox_id,
                                const struct kc_container_config *config,
                                const struct kc_pod_sandbox_config *sandbox_config, char **ret_id,
                                struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        KC_LOCK_GUARD(&s->lock);
        _cleanup_free_ char *id_copy = NULL, *log_path = NULL;
        struct sim_container *c;
        struct sim_sandbox *sb;
        const char *image_ref = NULL;
        char id[24];
        int r;

        r = kc__sim_enter_locked(s, SIM_OP_CREATE_CONTAINER, pod_sandbox_id, err);
        if (r < 0)
                return r;
        if (!config || !ret_id || !config->metadata.name)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "container config metadata (name) is required");
        sb = pod_sandbox_id ? kc_map_get(s->st.sandboxes, pod_sandbox_id) : NULL;
        if (!sb)
                return kc__sim_not_found(err, "sandbox", pod_sandbox_id);
        r = container_create_check_locked(s, sb, config, &image_ref, err);
        if (r < 0)
                return r;

        kc__sim_new_id_locked(s, id);
        id_copy = strdup(id);
        /* containerd's status.LogPath: the sandbox's log directory joined with the config's. */
        if (config->log_path && sandbox_config && sandbox_config->log_directory)
                log_path =
                        kc_strdup_printf("%s/%s", sandbox_config->log_directory, config->log_path);
        if (!id_copy ||
            (config->log_path && sandbox_config && sandbox_config->log_directory && !log_path))
                return kc__sim_oom(err);
        c = kc__sim_container_alloc(
                &(struct kc_cri_container){
                        .id = id,
                        .pod_sandbox_id = sb->v.id,
                        .metadata = config->metadata,
                        .image = config->user_specified_image ? config->user_specified_image
                                                              : config->image,
                        .image_ref = image_ref,
                        .state = KC_CONTAINER_STATE_CREATED,
                        .created_at = kc__sim_creation_time_locked(s),
                        .labels = config->labels,
                        .n_labels = config->n_labels,
                        .annotations = config->annotations,
                        .n_annotations = config->n_annotations,
                        .mounts = config->mounts,
                        .n_mounts = config->n_mounts,
                        .log_path = log_path,
                },
                config->command, config->n_command, config->args, config->n_args);
        if (!c)
                return kc__sim_oom(err);
        c->prog = kc__sim_program_parse(c->argv, c->argc);
        r = record_container_config(s, c, config, sandbox_config);
        if (r >= 0)
                r = kc__sim_state_add_container(&s->st, sb->o.pod, sb, c);
        if (r < 0) {
                kc__sim_container_free(c);
                return kc__sim_oom(err);
        }
        *ret_id = TAKE_PTR(id_copy);
        return 0;
}

static int sim_start_container(void *self, const char *id, struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        KC_LOCK_GUARD(&s->lock);
        struct sim_container *c;
        int r;

        r = enter_container_locked(s, SIM_OP_START_CONTAINER, id, true, &c, err);
        if (r < 0)
                return r;
        if (c->v.state != KC_CONTAINER_STATE_CREATED)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_FAILED_PRECONDITION,
                                            "container %s is in %s state, not created", id,
                                            kc_container_state_to_string(c->v.state));
        kc__sim_container_start_locked(s, c);
        return 0;
}

static int sim_stop_container(void *self, const char *id, int64_t timeout_s,
                              struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        KC_LOCK_GUARD(&s->lock);
        struct sim_container *c;
        int r;

        (void)timeout_s; /* busybox commands ignore SIGTERM as PID 1: the sim kills */
        r = enter_container_locked(s, SIM_OP_STOP_CONTAINER, id, true, &c, err);
        if (r < 0)
                return r;
        /* An exited container keeps its own exit code; a created one stays created. */
        kc__sim_container_stop_locked(s, c);
        return 0;
}

static int sim_remove_container(void *self, const char *id, struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        KC_LOCK_GUARD(&s->lock);
        struct sim_container *c;
        int r;

        r = enter_container_locked(s, SIM_OP_REMOVE_CONTAINER, id, false, &c, err);
        if (r < 0)
                return r;
        if (c)
                kc__sim_state_remove_container(&s->st, c);
        return 0; /* idempotent, as the CRI asks */
}

static int sim_container_status(void *self, const char *id, struct kc_container_status_result *ret,
                                struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        KC_LOCK_GUARD(&s->lock);
        struct sim_container *c;
        int r;

        r = enter_container_locked(s, SIM_OP_CONTAINER_STATUS, id, true, &c, err);
        if (r < 0)
                return r;
        /* The view is the container's own (state.c): its arena, shared (issue 18). */
        ret->status = c->v;
        ret->arena = kc_arena_ref(c->o.arena);
        return 0;
}

/* Two calls ahead, the home slot of each id; one call ahead, the container it names. */
static void sim_prefetch_container_statuses(void *self, const char *const *ids, size_t n, bool far)
{
        struct kc_sim *s = self;
        KC_LOCK_GUARD(&s->lock);
        struct sim_container *c;

        for (size_t i = 0; i < n; i++) {
                if (far) {
                        kc_map_prefetch_slot(s->st.containers, ids[i]);
                        continue;
                }
                /* A guess, kept alive by the lock: only prefetched through. */
                c = kc_map_prefetch_entry(s->st.containers, ids[i]);
                if (c)
                        __builtin_prefetch(&c->v);
        }
}

static const struct kc_runtime_service_ops sim_service_ops = {
        .version = sim_version,
        .status = sim_status,
        .run_pod_sandbox = sim_run_pod_sandbox,
        .stop_pod_sandbox = sim_stop_pod_sandbox,
        .remove_pod_sandbox = kc__sim_remove_pod_sandbox,
        .pod_sandbox_status = sim_pod_sandbox_status,
        .list_pod_sandbox = kc__sim_list_pod_sandbox,
        .create_container = sim_create_container,
        .start_container = sim_start_container,
        .stop_container = sim_stop_container,
        .remove_container = sim_remove_container,
        .list_containers = kc__sim_list_containers,
        .container_status = sim_container_status,
        .prefetch_container_statuses = sim_prefetch_container_statuses,
        .exec_sync = kc__sim_exec_sync,
        .image_status = kc__sim_image_status,
        .pull_image = kc__sim_pull_image,
};

struct kc_runtime_service kc_sim_service(struct kc_sim *s)
{
        return (struct kc_runtime_service){ .ops = &sim_service_ops, .self = s };
}
