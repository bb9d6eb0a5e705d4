/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file runtime/container.h
 * @brief kubecontainer-level data (pkg/kubelet/container): states, pods, containers, statuses.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"

struct kc_runtime_error;

enum kc_container_state {
        KC_CONTAINER_STATE_CREATED,
        KC_CONTAINER_STATE_RUNNING,
        KC_CONTAINER_STATE_EXITED,
        KC_CONTAINER_STATE_UNKNOWN,
        _KC_CONTAINER_STATE_MAX,
        _KC_CONTAINER_STATE_INVALID = -EINVAL,
};

/** "created", "running", "exited", "unknown" (upstream kubecontainer.State). */
const char *kc_container_state_to_string(enum kc_container_state s);
enum kc_container_state kc_container_state_from_string(const char *s);

enum kc_sandbox_state {
        KC_SANDBOX_STATE_READY,
        KC_SANDBOX_STATE_NOTREADY,
        _KC_SANDBOX_STATE_MAX,
        _KC_SANDBOX_STATE_INVALID = -EINVAL,
};

/** "SANDBOX_READY", "SANDBOX_NOTREADY" (CRI names). */
const char *kc_sandbox_state_to_string(enum kc_sandbox_state s);

/* ------------------------------------------------------------------------ */
/* kubecontainer-level data (immutable, reference counted)                    */

/** kubecontainer.Container: a container or a sandbox in a runtime pod. */
struct kc_container {
        const char *id;
        const char *name;
        const char *image;
        uint64_t hash;
        enum kc_container_state state;
        int64_t created_at; /* ns since epoch */
};

/** kubecontainer.Pod. Immutable once built; share it with kc_pod_ref(). */
struct kc_pod {
        const char *id; /* pod UID */
        const char *name;
        const char *namespace;
        int64_t created_at;
        const struct kc_container *containers;
        size_t n_containers;
        const struct kc_container *sandboxes; /* represented as containers */
        size_t n_sandboxes;
};

/**
 * @brief Deep-copies @p tmpl (whose pointers are borrowed) into one new
 * reference-counted allocation. NULL strings stay NULL.
 */
int kc_pod_new(const struct kc_pod *tmpl, struct kc_pod **ret);
struct kc_pod *kc_pod_ref(struct kc_pod *p);
/** Drops a reference; frees on the last one. NULL-safe; returns NULL. */
struct kc_pod *kc_pod_unref(struct kc_pod *p);
KC_DEFINE_CLEANUP_FUNC(struct kc_pod, kc_pod_unref)
/**
 * Whether the ids of @p p's sandboxes and containers are all different
 * strings, as found when the pod was built; false too when a pod of more
 * than a few entries was not checked. Reads only the pod's own block (for
 * the generic PLEG's computeEvents, issue 18).
 */
bool kc_pod_ids_distinct(const struct kc_pod *p);

/**
 * Asks for the first lines of @p p's block (NULL: none): its header, the
 * pod, and the entries and strings that follow it in a small pod. Reads
 * nothing; for a caller about to compare pods it reaches one after another
 * (the generic PLEG's relist, issue 18).
 */
void kc_pod_prefetch(const struct kc_pod *p);

/**
 * A pin keeps pods alive for lists that hold no reference on each of them
 * (issue 18: a relist then leaves the unchanged pods' memory alone). The
 * pods' owner, the runtime manager's pod cache, hands its lists a reference
 * on the pin of its current generation. A pod the owner lets go is buried
 * in that pin (kc_pod_pin_bury()): it lives while the pin does. The next
 * generation's pin is chained after it (kc_pod_pin_chain()), so a pin keeps
 * its buried pods and every later pin alive: a list holding an old pin
 * keeps every pod it shows.
 *
 * Thread contract: kc_pod_pin_bury() and kc_pod_pin_chain() are the
 * owner's, made under its own lock on a pin it holds a reference on; refs
 * and unrefs are made by any thread (the last one releases the buried pods
 * and the chained pin).
 */
struct kc_pod_pin;
int kc_pod_pin_new(struct kc_pod_pin **ret);
struct kc_pod_pin *kc_pod_pin_ref(struct kc_pod_pin *pin);
/** Drops a reference; on the last, the buried pods go, then the chained pin. Returns NULL. */
struct kc_pod_pin *kc_pod_pin_unref(struct kc_pod_pin *pin);
KC_DEFINE_CLEANUP_FUNC(struct kc_pod_pin, kc_pod_pin_unref)
/** Moves the caller's reference on @p pod (NULL: nothing) to @p pin. A pod is buried once. */
void kc_pod_pin_bury(struct kc_pod_pin *pin, struct kc_pod *pod);
/** @p pin keeps @p next alive from now on (a new reference); once per pin. */
void kc_pod_pin_chain(struct kc_pod_pin *pin, struct kc_pod_pin *next);

/**
 * A list of pods: a reference on each, or, with @p pin, none (the pin keeps
 * them alive). Either way a pod kept past kc_pod_list_done() needs its own
 * kc_pod_ref().
 */
struct kc_pod_list {
        struct kc_pod **pods;
        size_t n;
        struct kc_pod_pin *pin; /* NULL: a reference on each pod */
};
void kc_pod_list_done(struct kc_pod_list *l);

/** kubecontainer.Status */
struct kc_container_status {
        const char *id;
        const char *name;
        enum kc_container_state state;
        int32_t exit_code;
        int64_t created_at;
        int64_t started_at;
        int64_t finished_at;
        int32_t restart_count; /* CRI metadata attempt */
        uint64_t hash;
        const char *image;
        const char *image_ref;
        const char *reason;
        const char *message;
};

/** The parts of a CRI PodSandboxStatus the kubelet keeps in PodStatus. */
struct kc_sandbox_status {
        const char *id;
        const char *name;
        const char *namespace;
        const char *uid;
        uint32_t attempt;
        enum kc_sandbox_state state;
        int64_t created_at;
        const char *ip; /* primary IP, may be NULL */
};

/** kubecontainer.PodStatus. Immutable once built; share with kc_pod_status_ref(). */
struct kc_pod_status {
        const char *id;
        const char *name;
        const char *namespace;
        const char *const *ips;
        size_t n_ips;
        const struct kc_sandbox_status *sandboxes;
        size_t n_sandboxes;
        const struct kc_container_status *containers;
        size_t n_containers;
        int64_t timestamp; /* runtime-provided; 0 when unset */
};

/** Deep-copies @p tmpl (borrowed pointers) into one reference-counted allocation. */
int kc_pod_status_new(const struct kc_pod_status *tmpl, struct kc_pod_status **ret);
/** A status with only the pod UID set (what cache.Get returns on a miss). */
int kc_pod_status_new_default(const char *uid, struct kc_pod_status **ret);
struct kc_pod_status *kc_pod_status_ref(struct kc_pod_status *s);
struct kc_pod_status *kc_pod_status_unref(struct kc_pod_status *s);
KC_DEFINE_CLEANUP_FUNC(struct kc_pod_status, kc_pod_status_unref)
/** Deep equality (NULL == NULL). */
bool kc_pod_status_equal(const struct kc_pod_status *a, const struct kc_pod_status *b);

/* ------------------------------------------------------------------------ */
/* kubecontainer-level runtime interface (what PLEG uses)                     */

struct kc_pod_runtime_ops {
        /**
         * GetPods(all): pods built from sandboxes and containers. With
         * @p all false only running containers and ready sandboxes count.
         */
        int (*get_pods)(void *self, bool all, struct kc_pod_list *ret,
                        struct kc_runtime_error *err);
        /**
         * GetPodStatus. Exception to the out-parameter rule, as upstream: on
         * failure *ret may still be set to a partial status (to be unref'd by
         * the caller), which PLEG caches together with the error.
         */
        int (*get_pod_status)(void *self, const char *uid, const char *name, const char *namespace,
                              struct kc_pod_status **ret, struct kc_runtime_error *err);
        /**
         * GetPodStatus of @p pod, a pod of the last get_pods listing (a
         * kc_pod object, which the status may hold a reference to): its
         * sandboxes and containers are the listing's, their statuses are
         * read now (docs/deviations.md D54). @p prev: NULL, or an earlier
         * status of the pod; a sandbox or container it gives in the state
         * @p pod lists it in now (not unknown) may be taken from it
         * instead of read again (D55). As get_pod_status otherwise.
         * May be NULL. PLEG calls get_pod_status then, and while
         * EventedPLEG is in use.
         */
        int (*get_listed_pod_status)(void *self, const struct kc_pod *pod,
                                     const struct kc_pod_status *prev, struct kc_pod_status **ret,
                                     struct kc_runtime_error *err);
        /**
         * Not upstream: get_listed_pod_status(@p pod) comes @p ahead calls
         * from now (3, 2 or 1; issue 18). Each step asks for a further part
         * of what it reads, so a caller takes a pod through all three, one
         * call apart. @p old (may be NULL): the pod as listed before; a
         * container listed as it was is most likely taken from the earlier
         * status (D55) and not asked for. Only speed changes: nothing is
         * taken or written. May be NULL.
         */
        void (*prefetch_listed_pod_status)(void *self, const struct kc_pod *pod,
                                           const struct kc_pod *old, unsigned ahead);
        /**
         * RemovePodSandbox, for the kubelet's container garbage collection:
         * removes a sandbox and every container in it. A sandbox already gone
         * is not an error. May be NULL (nothing is ever removed then).
         */
        int (*remove_pod_sandbox)(void *self, const char *id, struct kc_runtime_error *err);
};

struct kc_pod_runtime {
        const struct kc_pod_runtime_ops *ops;
        void *self;
};
