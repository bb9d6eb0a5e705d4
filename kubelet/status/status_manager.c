/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small status manager (upstream pkg/kubelet/status/status_manager.go,
 * without the API server sync): the latest v1.PodStatus per pod UID, with
 * upstream's guards against illegal transitions, and the v1 PodList the
 * /pods endpoint serves.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cleanup.h"
#include "core/lock.h"
#include "core/log.h"
#include "core/map.h"
#include "kubelet/status/pod_status.h"
#include "json_internal.h"
#include "kubelet/status/status_manager.h"
#include "runtime/api_pod.h"

/*
 * A status is kept as its compact JSON text, not as a jansson tree: the tree
 * of a one-container pod's status takes about 6 KiB in small blocks, its
 * text under 1 KiB (issue 18). Readers get a tree parsed from the text, which
 * is the deep copy they got before; the guards parse the old one only when
 * they need more than its phase, and a reader of the phase alone
 * (kc_status_manager_get_pod_phase) gets the one kept beside the text.
 */
#define SM_DUMP_FLAGS JSON_COMPACT
#define SM_LOAD_FLAGS JSON_ALLOW_NUL
#define SM_PHASE_MAX 16

struct sm_entry {
        char *status;             /* compact JSON; only touched under the lock, never handed out */
        char phase[SM_PHASE_MAX]; /* status.phase ("" if none), for the terminal guard */
        uint64_t version;
        char uid[]; /* the map's key */
};

struct kc_status_manager {
        pthread_mutex_t lock;
        struct kc_map *statuses; /* uid -> struct sm_entry */
};

int kc_status_manager_new(struct kc_status_manager **ret)
{
        struct kc_status_manager *sm;

        if (!ret)
                return -EINVAL;
        sm = calloc(1, sizeof(*sm));
        if (!sm)
                return -ENOMEM;
        if (kc_map_new(&sm->statuses) < 0) {
                free(sm);
                return -ENOMEM;
        }
        pthread_mutex_init(&sm->lock, NULL);
        *ret = sm;
        return 0;
}

static void entry_free(struct sm_entry *e)
{
        if (!e)
                return;
        free(e->status);
        free(e);
}

struct kc_status_manager *kc_status_manager_free(struct kc_status_manager *sm)
{
        size_t it = 0;
        void *v;

        if (!sm)
                return NULL;
        while (kc_map_next(sm->statuses, &it, NULL, &v))
                entry_free(v);
        kc_map_free(sm->statuses);
        pthread_mutex_destroy(&sm->lock);
        free(sm);
        return NULL;
}

static const char *phase_of(const json_t *status)
{
        const char *p = json_string_value(json_object_get(status, "phase"));

        return p ? p : "";
}

static bool phase_terminal(const char *p)
{
        return strcmp(p, "Succeeded") == 0 || strcmp(p, "Failed") == 0;
}

/* A container status' state.terminated object, or NULL. */
static json_t *terminated_of(const json_t *cs)
{
        return json_object_get(json_object_get(cs, "state"), "terminated");
}

/*
 * checkContainerStateTransition over one list key ("containerStatuses" or
 * "initContainerStatuses"): the name of a container that was terminated
 * and is not any more although the policy forbids a restart, or NULL.
 */
static const char *illegal_transition_in(const json_t *old, const json_t *new, const char *key,
                                         enum kc_restart_policy policy)
{
        json_t *olds = json_object_get(old, key), *news = json_object_get(new, key);
        json_t *o, *n, *term;
        const char *name, *nname;
        size_t i, j;

        json_array_foreach (olds, i, o) {
                term = terminated_of(o);
                if (!term)
                        continue;
                /* A failed container may restart under OnFailure. */
                if (policy == KC_RESTART_POLICY_ON_FAILURE &&
                    json_integer_value(json_object_get(term, "exitCode")) != 0)
                        continue;
                name = json_string_value(json_object_get(o, "name"));
                if (!name)
                        continue;
                json_array_foreach (news, j, n) {
                        nname = json_string_value(json_object_get(n, "name"));
                        if (nname && strcmp(nname, name) == 0 && !terminated_of(n))
                                return name;
                }
        }
        return NULL;
}

static const char *illegal_container_transition(const json_t *old, const json_t *new,
                                                enum kc_restart_policy policy)
{
        const char *name;

        name = illegal_transition_in(old, new, "containerStatuses", policy);
        return name ? name : illegal_transition_in(old, new, "initContainerStatuses", policy);
}

/* The status in @p e as a tree (a new reference), or NULL when out of memory. */
static json_t *entry_status_locked(const struct sm_entry *e)
{
        return json_loads(e->status, SM_LOAD_FLAGS, NULL);
}

/*
 * upstream's guards against an update of @p e to @p status: a terminal phase
 * stays, and so does a terminated container the policy does not restart.
 * Writes the reason into @p err (empty when allowed); -ENOMEM.
 */
static int check_transition_locked(const struct sm_entry *e, const json_t *status,
                                   enum kc_restart_policy policy, char *err, size_t size)
{
        _cleanup_json_ json_t *old = NULL;
        const char *name;

        if (phase_terminal(e->phase) && !phase_terminal(phase_of(status))) {
                snprintf(err, size, "terminal phase %s may not become %s", e->phase,
                         phase_of(status));
                return 0;
        }
        /* Under Always every container may leave the terminated state. */
        if (policy == KC_RESTART_POLICY_ALWAYS)
                return 0;
        old = entry_status_locked(e);
        if (!old)
                return -ENOMEM;
        name = illegal_container_transition(old, status, policy);
        if (name)
                snprintf(err, size,
                         "terminated container %s attempted illegal transition to "
                         "non-terminated state",
                         name);
        return 0;
}

static void entry_set_phase(struct sm_entry *e, const json_t *status)
{
        snprintf(e->phase, sizeof(e->phase), "%s", phase_of(status));
}

/* kubecontainer.MaxPodTerminationMessageLogLength: what a pod's statuses carry at most. */
#define MAX_POD_TERMINATION_MESSAGE_LOG_LENGTH (12 * 1024)

static const char *const status_lists[] = { "initContainerStatuses", "containerStatuses",
                                            "ephemeralContainerStatuses" };
static const char *const state_keys[] = { "state", "lastState" };

/* The terminated message of @p cs's @p key, when it is longer than @p cap bytes. */
static json_t *long_message(const json_t *cs, const char *key, size_t cap)
{
        json_t *m =
                json_object_get(json_object_get(json_object_get(cs, key), "terminated"), "message");

        return json_string_length(m) > cap ? m : NULL;
}

/* Whether any terminated message of @p status is longer than @p cap bytes. */
static bool has_long_message(const json_t *status, size_t cap)
{
        for (size_t l = 0; l < KC_ELEMENTSOF(status_lists); l++) {
                const json_t *a = json_object_get(status, status_lists[l]);

                for (size_t i = 0; i < json_array_size(a); i++)
                        for (size_t k = 0; k < KC_ELEMENTSOF(state_keys); k++)
                                if (long_message(json_array_get(a, i), state_keys[k], cap))
                                        return true;
        }
        return false;
}

/* Cuts the terminated message of @p cs's @p key to @p cap bytes, if longer. 0 or -ENOMEM. */
static int cut_message(json_t *cs, const char *key, size_t cap)
{
        json_t *m = long_message(cs, key, cap);
        _cleanup_free_ char *cut = NULL;

        if (!m)
                return 0;
        cut = strndup(json_string_value(m), cap);
        if (!cut)
                return -ENOMEM;
        /* A character cut in two is invalid UTF-8: U+FFFD, as Go's JSON encoder writes it. */
        return kc__json_set_str(json_object_get(json_object_get(cs, key), "terminated"), "message",
                                cut);
}

/*
 * normalizeStatus' message cap: every terminated message (state and
 * lastState) cut to 12 KiB / (containers + init containers) bytes.
 * *@p ret: NULL when nothing is cut, else the cut copy. 0 or -ENOMEM.
 */
static int normalize_status(const struct kc_api_pod *pod, const json_t *status, json_t **ret)
{
        size_t n = pod->n_containers + pod->n_init_containers;
        size_t cap = MAX_POD_TERMINATION_MESSAGE_LOG_LENGTH / (n > 0 ? n : 1);
        _cleanup_json_ json_t *copy = NULL;

        *ret = NULL;
        if (!has_long_message(status, cap))
                return 0;
        copy = json_deep_copy(status);
        if (!copy)
                return -ENOMEM;
        for (size_t l = 0; l < KC_ELEMENTSOF(status_lists); l++) {
                json_t *a = json_object_get(copy, status_lists[l]);

                for (size_t i = 0; i < json_array_size(a); i++)
                        for (size_t k = 0; k < KC_ELEMENTSOF(state_keys); k++)
                                if (cut_message(json_array_get(a, i), state_keys[k], cap) < 0)
                                        return -ENOMEM;
        }
        *ret = TAKE_PTR(copy);
        return 0;
}

int kc_status_manager_set_pod_status(struct kc_status_manager *sm, const struct kc_api_pod *pod,
                                     const json_t *status)
{
        _cleanup_free_ char *text = NULL, *replaced = NULL;
        _cleanup_json_ json_t *normalized = NULL;
        char err[384] = "";
        struct sm_entry *e;
        size_t len;
        int r;

        if (!sm || !pod || !pod->uid || !*pod->uid || !json_is_object(status))
                return -EINVAL;
        /* Written before locking: the caller's value stays the caller's. */
        if (normalize_status(pod, status, &normalized) < 0)
                return -ENOMEM;
        if (normalized)
                status = normalized;
        text = json_dumps(status, SM_DUMP_FLAGS);
        if (!text)
                return -ENOMEM;

        pthread_mutex_lock(&sm->lock);
        e = kc_map_get(sm->statuses, pod->uid);
        if (e) {
                r = check_transition_locked(e, status, pod->restart_policy, err, sizeof(err));
                if (r < 0 || err[0]) {
                        pthread_mutex_unlock(&sm->lock);
                        if (r < 0)
                                return r;
                        kc_log_error_s(err, "Status update on pod aborted",
                                       KC_KV_POD(pod->namespace, pod->name),
                                       KC_KV_STR("podUID", pod->uid));
                        return -EPERM;
                }
                /* The same tree writes the same text (keys keep their order). */
                if (strcmp(e->status, text) != 0) {
                        replaced = e->status; /* freed after unlocking */
                        e->status = TAKE_PTR(text);
                        entry_set_phase(e, status);
                        e->version++;
                }
                pthread_mutex_unlock(&sm->lock);
                return 0;
        }

        len = strlen(pod->uid) + 1;
        e = malloc(sizeof(*e) + len);
        if (!e || kc_map_reserve(sm->statuses, kc_map_size(sm->statuses) + 1) < 0) {
                pthread_mutex_unlock(&sm->lock);
                free(e);
                return -ENOMEM;
        }
        memcpy(e->uid, pod->uid, len);
        e->status = TAKE_PTR(text);
        entry_set_phase(e, status);
        e->version = 1;
        (void)kc_map_put(sm->statuses, e->uid, e); /* reserved above */
        pthread_mutex_unlock(&sm->lock);
        return 0;
}

/*
 * The container flag updates: @p change makes the new status from the
 * stored one under the lock (so no SetPodStatus lands in between), as
 * upstream holds podStatusesLock across SetContainerReadiness.
 */
struct flag_change {
        const struct kc_api_pod *pod;
        const char *container_id;
        bool v;
        int64_t now_ns;
        bool readiness; /* else startup */
};

static int update_flag(struct kc_status_manager *sm, const struct flag_change *fc)
{
        _cleanup_json_ json_t *old = NULL, *updated = NULL;
        _cleanup_free_ char *text = NULL, *replaced = NULL;
        struct sm_entry *e;
        int r;

        if (!sm || !fc->pod || !fc->pod->uid || !fc->container_id)
                return -EINVAL;
        KC_LOCK_GUARD(&sm->lock);
        e = kc_map_get(sm->statuses, fc->pod->uid);
        if (!e)
                return -ENOENT;
        old = entry_status_locked(e);
        if (!old)
                return -ENOMEM;
        r = fc->readiness
                    ? kc_pod_status_set_container_readiness(fc->pod, old, fc->container_id, fc->v,
                                                            fc->now_ns, &updated)
                    : kc_pod_status_set_container_started(old, fc->container_id, fc->v, &updated);
        if (r < 0 || !updated)
                return r;
        text = json_dumps(updated, SM_DUMP_FLAGS);
        if (!text)
                return -ENOMEM;
        replaced = e->status; /* the phase is unchanged */
        e->status = TAKE_PTR(text);
        e->version++;
        return 0;
}

int kc_status_manager_set_container_readiness(struct kc_status_manager *sm,
                                              const struct kc_api_pod *pod,
                                              const char *container_id, bool ready, int64_t now_ns)
{
        return update_flag(sm, &(struct flag_change){ pod, container_id, ready, now_ns, true });
}

int kc_status_manager_set_container_startup(struct kc_status_manager *sm,
                                            const struct kc_api_pod *pod, const char *container_id,
                                            bool started)
{
        return update_flag(sm, &(struct flag_change){ pod, container_id, started, 0, false });
}

int kc_status_manager_get_pod_status(struct kc_status_manager *sm, const char *uid, json_t **ret)
{
        _cleanup_free_ char *text = NULL;
        struct sm_entry *e;
        json_t *s;

        if (!sm || !uid || !ret)
                return -EINVAL;
        pthread_mutex_lock(&sm->lock);
        e = kc_map_get(sm->statuses, uid);
        if (e)
                text = strdup(e->status);
        pthread_mutex_unlock(&sm->lock);
        if (!e)
                return -ENOENT;
        if (!text)
                return -ENOMEM;
        /* Parsed outside the lock: the text is the copy. */
        s = json_loads(text, SM_LOAD_FLAGS, NULL);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int kc_status_manager_get_pod_phase(struct kc_status_manager *sm, const char *uid,
                                    enum kc_pod_phase *ret)
{
        enum kc_pod_phase p = KC_POD_PHASE_UNKNOWN;
        struct sm_entry *e;

        if (!sm || !uid || !ret)
                return -EINVAL;
        pthread_mutex_lock(&sm->lock);
        e = kc_map_get(sm->statuses, uid);
        if (e)
                p = kc_pod_phase_from_string(e->phase);
        pthread_mutex_unlock(&sm->lock);
        if (!e)
                return -ENOENT;
        *ret = p < 0 ? KC_POD_PHASE_UNKNOWN : p;
        return 0;
}

int kc_status_manager_get_version(struct kc_status_manager *sm, const char *uid, uint64_t *ret)
{
        struct sm_entry *e;
        uint64_t v = 0;

        if (!sm || !uid || !ret)
                return -EINVAL;
        pthread_mutex_lock(&sm->lock);
        e = kc_map_get(sm->statuses, uid);
        if (e)
                v = e->version;
        pthread_mutex_unlock(&sm->lock);
        if (!e)
                return -ENOENT;
        *ret = v;
        return 0;
}

int kc_status_manager_remove_orphaned_statuses(struct kc_status_manager *sm,
                                               const char *const *keep_uids, size_t n)
{
        _cleanup_(kc_map_freep) struct kc_map *keep = NULL;
        _cleanup_free_ struct sm_entry **victims = NULL;
        size_t i, it = 0, n_victims = 0;
        const char *uid;
        void *v;

        if (!sm || (n > 0 && !keep_uids))
                return -EINVAL;
        if (kc_map_new_set(keep_uids, n, &keep) < 0)
                return -ENOMEM;

        pthread_mutex_lock(&sm->lock);
        victims = malloc((kc_map_size(sm->statuses) + 1) * sizeof(*victims));
        if (!victims) {
                pthread_mutex_unlock(&sm->lock);
                return -ENOMEM;
        }
        while (kc_map_next(sm->statuses, &it, &uid, &v))
                if (!kc_map_get(keep, uid))
                        victims[n_victims++] = v;
        for (i = 0; i < n_victims; i++)
                kc_map_remove(sm->statuses, victims[i]->uid);
        pthread_mutex_unlock(&sm->lock);

        for (i = 0; i < n_victims; i++) {
                kc_log_v_s(5, "Removing pod from status map.",
                           KC_KV_STR("podUID", victims[i]->uid));
                entry_free(victims[i]);
        }
        return (int)n_victims;
}
