/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The decision half of SyncPod: computePodActions, doBackOff and the
 * container spec hash (upstream kuberuntime_manager.go and
 * kubecontainer/helpers.go). Pure functions over the API pod and the
 * runtime's PodStatus; the backoff table is the only state touched.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/backoff.h"
#include "core/cleanup.h"
#include "core/duration.h"
#include "core/format.h"
#include "internal.h"
#include "runtime/api_pod.h"
#include "runtime/container.h"
#include "runtime/pod_actions.h"

/* ------------------------------------------------------------------------ */
/* Spec hash                                                                  */

#define FNV64_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV64_PRIME UINT64_C(0x100000001b3)

static uint64_t fnv_bytes(uint64_t h, const void *p, size_t n)
{
        const unsigned char *b = p;
        size_t i;

        for (i = 0; i < n; i++) {
                h ^= b[i];
                h *= FNV64_PRIME;
        }
        return h;
}

/* Little-endian, so the hash does not depend on the host byte order. */
static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
        unsigned char b[8];
        int i;

        for (i = 0; i < 8; i++)
                b[i] = (unsigned char)(v >> (8 * i));
        return fnv_bytes(h, b, sizeof(b));
}

/* Length-prefixed; NULL hashes like "" (Go strings have no nil). */
static uint64_t fnv_str(uint64_t h, const char *s)
{
        size_t n = s ? strlen(s) : 0;

        h = fnv_u64(h, n);
        return fnv_bytes(h, s ? s : "", n);
}

static uint64_t fnv_strv(uint64_t h, const char *const *v, size_t n)
{
        size_t i;

        h = fnv_u64(h, n);
        for (i = 0; i < n; i++)
                h = fnv_str(h, v[i]);
        return h;
}

uint64_t kc_container_spec_hash(const struct kc_api_container *c)
{
        uint64_t h = FNV64_OFFSET;

        if (!c)
                return 0;
        h = fnv_str(h, c->name);
        h = fnv_str(h, c->image);
        h = fnv_strv(h, c->command, c->n_command);
        h = fnv_strv(h, c->args, c->n_args);
        h = fnv_u64(h, (uint64_t)(int64_t)c->image_pull_policy);
        return h;
}

/* ------------------------------------------------------------------------ */
/* Helpers over PodStatus (kubecontainer helpers.go)                          */

/* shouldRestartOnFailure */
static bool restart_on_failure(const struct kc_api_pod *pod)
{
        return pod->restart_policy != KC_RESTART_POLICY_NEVER;
}

/* containerSucceeded */
static bool container_succeeded(const struct kc_api_container *c, const struct kc_pod_status *s)
{
        const struct kc_container_status *cs = kc__find_container_status(s, c->name);

        if (!cs || cs->state == KC_CONTAINER_STATE_RUNNING)
                return false;
        return cs->exit_code == 0;
}

/* ShouldContainerBeRestarted (helpers.go), without per-container restart policies. */
static bool should_container_be_restarted(const struct kc_api_container *c,
                                          const struct kc_api_pod *pod,
                                          const struct kc_pod_status *s)
{
        const struct kc_container_status *cs;

        if (pod->deletion_ts != 0) /* marked deleted: never restarted */
                return false;
        cs = kc__find_container_status(s, c->name);
        if (!cs) /* never started (or every instance was GC'd) */
                return true;
        if (cs->state == KC_CONTAINER_STATE_RUNNING)
                return false;
        if (cs->state == KC_CONTAINER_STATE_UNKNOWN || cs->state == KC_CONTAINER_STATE_CREATED)
                return true;
        if (pod->restart_policy == KC_RESTART_POLICY_NEVER)
                return false;
        if (pod->restart_policy == KC_RESTART_POLICY_ON_FAILURE && cs->exit_code == 0)
                return false;
        return true;
}

/* isInitContainerFailed */
static bool init_container_failed(const struct kc_container_status *cs)
{
        if (kc__streq(cs->reason, "OOMKilled"))
                return true;
        if (cs->state == KC_CONTAINER_STATE_EXITED && cs->exit_code != 0)
                return true;
        return cs->state == KC_CONTAINER_STATE_UNKNOWN;
}

bool kc_is_restartable_init_container(const struct kc_api_container *c)
{
        return c && c->restart_policy_always;
}

bool kc_pod_has_restartable_init_container(const struct kc_api_pod *pod)
{
        size_t i;

        for (i = 0; pod && i < pod->n_init_containers; i++)
                if (kc_is_restartable_init_container(&pod->init_containers[i]))
                        return true;
        return false;
}

/* hasAnyRegularContainerCreated: an app container created, running or exited. */
static bool any_regular_container_created(const struct kc_api_pod *pod,
                                          const struct kc_pod_status *s)
{
        size_t i;

        for (i = 0; i < pod->n_containers; i++) {
                const struct kc_container_status *cs =
                        kc__find_container_status(s, pod->containers[i].name);

                if (cs && cs->state != KC_CONTAINER_STATE_UNKNOWN)
                        return true;
        }
        return false;
}

/*
 * findNextInitContainerToRun: *ret_last is the status of the last failed init
 * container (or NULL), *ret_next the index of the next init container to run
 * (or -1). Returns "done".
 */
static bool next_init_container(const struct kc_api_pod *pod, const struct kc_pod_status *s,
                                const struct kc_container_status **ret_last, int *ret_next)
{
        size_t i;

        *ret_last = NULL;
        *ret_next = -1;
        if (pod->n_init_containers == 0)
                return true;
        /* A running app container means initialization happened at some point. */
        for (i = 0; i < pod->n_containers; i++) {
                const struct kc_container_status *cs =
                        kc__find_container_status(s, pod->containers[i].name);

                if (cs && cs->state == KC_CONTAINER_STATE_RUNNING)
                        return true;
        }
        /* The last failed one, if any. */
        for (i = pod->n_init_containers; i-- > 0;) {
                const struct kc_container_status *cs =
                        kc__find_container_status(s, pod->init_containers[i].name);

                if (cs && init_container_failed(cs)) {
                        *ret_last = cs;
                        *ret_next = (int)i;
                        return false;
                }
        }
        for (i = pod->n_init_containers; i-- > 0;) {
                const struct kc_container_status *cs =
                        kc__find_container_status(s, pod->init_containers[i].name);

                if (!cs)
                        continue;
                if (cs->state == KC_CONTAINER_STATE_RUNNING)
                        return false;
                if (cs->state == KC_CONTAINER_STATE_EXITED) {
                        if (i == pod->n_init_containers - 1)
                                return true;
                        *ret_next = (int)i + 1;
                        return false;
                }
        }
        *ret_next = 0;
        return false;
}

/* ------------------------------------------------------------------------ */
/* kc_pod_actions                                                             */

void kc_pod_actions_done(struct kc_pod_actions *a)
{
        size_t i;

        if (!a)
                return;
        for (i = 0; i < a->n_containers_to_kill; i++) {
                free(a->containers_to_kill[i].id);
                free(a->containers_to_kill[i].name);
                free(a->containers_to_kill[i].message);
        }
        free(a->containers_to_kill);
        free(a->containers_to_start);
        free(a->init_containers_to_start);
        free(a->sandbox_id);
        free(a->message);
        *a = (struct kc_pod_actions){ .next_init_container_to_start = -1 };
}

/* The actions being computed, with the capacities of their growing arrays. */
struct plan {
        struct kc_pod_actions a;
        size_t cap_start, cap_kill, cap_init_start;
        const struct kc_probe_results_view *probes; /* may be NULL */
};

static int add_start(struct plan *p, size_t idx)
{
        if (KC_ARRAY_GROW(p->a.containers_to_start, p->cap_start, p->a.n_containers_to_start + 1,
                          4) < 0)
                return -ENOMEM;
        p->a.containers_to_start[p->a.n_containers_to_start++] = idx;
        return 0;
}

static int add_init_start(struct plan *p, size_t idx)
{
        if (KC_ARRAY_GROW(p->a.init_containers_to_start, p->cap_init_start,
                          p->a.n_init_containers_to_start + 1, 4) < 0)
                return -ENOMEM;
        p->a.init_containers_to_start[p->a.n_init_containers_to_start++] = idx;
        return 0;
}

static int add_kill(struct plan *p, const struct kc_container_status *cs, bool init_container,
                    size_t idx, char *message /* takes */)
{
        struct kc_container_to_kill *k;

        if (!message)
                return -ENOMEM;
        if (KC_ARRAY_GROW(p->a.containers_to_kill, p->cap_kill, p->a.n_containers_to_kill + 1, 4) <
            0) {
                free(message);
                return -ENOMEM;
        }
        k = &p->a.containers_to_kill[p->a.n_containers_to_kill++];
        *k = (struct kc_container_to_kill){
                .id = strdup(cs->id ? cs->id : ""),
                .name = strdup(cs->name ? cs->name : ""),
                .message = message,
                .init_container = init_container,
                .container_index = idx,
        };
        if (!k->id || !k->name)
                return -ENOMEM;
        return 0;
}

/* Kills a container in an unknown state (it may still run) before its restart. */
static int add_kill_unknown(struct plan *p, const struct kc_container_status *cs,
                            bool init_container, size_t idx)
{
        return add_kill(p, cs, init_container, idx,
                        kc_strdup_printf("%s is in \"%s\" state, try killing it before restart",
                                         init_container ? "Init container" : "Container",
                                         kc_container_state_to_string(cs->state)));
}

/* Sets the decision's message to @s, which it takes; -ENOMEM when @s is NULL. */
static int set_message(struct plan *p, char *s /* takes */)
{
        if (!s)
                return -ENOMEM;
        free(p->a.message);
        p->a.message = s;
        return 0;
}

/*
 * PodSandboxChanged, minus the network-namespace and missing-IP checks.
 * Returns the reason (static string) when a new sandbox is needed, else NULL.
 */
static const char *sandbox_changed(const struct kc_pod_status *s, uint32_t *ret_attempt,
                                   const char **ret_id)
{
        const struct kc_sandbox_status *newest;
        size_t i, ready = 0;

        *ret_attempt = 0;
        *ret_id = NULL;
        if (s->n_sandboxes == 0)
                return "no sandbox";
        for (i = 0; i < s->n_sandboxes; i++)
                if (s->sandboxes[i].state == KC_SANDBOX_STATE_READY)
                        ready++;
        newest = &s->sandboxes[0];
        *ret_id = newest->id;
        *ret_attempt = newest->attempt + 1;
        if (ready > 1)
                return "several ready sandboxes";
        if (newest->state != KC_SANDBOX_STATE_READY)
                return "newest sandbox is not ready";
        *ret_attempt = newest->attempt;
        return NULL;
}

/*
 * The sandbox must be (re-)created for reason @why: kill the pod, then start
 * what the restart policy allows in the new sandbox, from the first init
 * container when there are any.
 */
static int plan_new_sandbox(struct plan *p, const struct kc_api_pod *pod,
                            const struct kc_pod_status *s, const char *why)
{
        const bool sidecars = kc_pod_has_restartable_init_container(pod);
        const struct kc_container_status *init_last;
        size_t i;
        int r, next;

        p->a.kill_pod = p->a.create_sandbox = true;
        if (!restart_on_failure(pod) && p->a.attempt != 0 && s->n_containers != 0) {
                /* The pod already ran and must not restart: just kill it. */
                p->a.create_sandbox = false;
                return set_message(p, kc_strdup_printf("%s; restartPolicy Never and the pod "
                                                       "already ran: kill only",
                                                       why));
        }
        for (i = 0; i < pod->n_containers; i++) {
                const struct kc_api_container *c = &pod->containers[i];

                if (pod->restart_policy == KC_RESTART_POLICY_ON_FAILURE &&
                    container_succeeded(c, s))
                        continue;
                if (pod->restart_policy == KC_RESTART_POLICY_NEVER) {
                        /* Deviation: upstream would run an exited container again here. */
                        const struct kc_container_status *cs =
                                kc__find_container_status(s, c->name);

                        if (cs && cs->state == KC_CONTAINER_STATE_EXITED)
                                continue;
                }
                r = add_start(p, i);
                if (r < 0)
                        return r;
        }
        /* Initialized before: a sidecar pod has had an app container, else the init walk is done. */
        if (p->a.n_containers_to_start == 0 &&
            (sidecars ? any_regular_container_created(pod, s)
                      : next_init_container(pod, s, &init_last, &next))) {
                p->a.create_sandbox = false;
                return set_message(p, kc_strdup_printf("%s; nothing to start: kill only", why));
        }
        if (pod->n_init_containers > 0) {
                /* Restart from the initial state: first init container. */
                free(p->a.containers_to_start);
                p->a.containers_to_start = NULL;
                p->a.n_containers_to_start = p->cap_start = 0;
                if (!sidecars)
                        p->a.next_init_container_to_start = 0;
                else if ((r = add_init_start(p, 0)) < 0)
                        return r;
        }
        return set_message(p, kc_strdup_printf("%s; re-create the sandbox (attempt %" PRIu32 ")",
                                               why, p->a.attempt));
}

/*
 * Initialization is not done (non-sidecar path): start init container @next
 * (-1: one is still running), after killing the failed one (@last) when its
 * state is unknown.
 */
static int plan_init_containers(struct plan *p, const struct kc_api_pod *pod,
                                const struct kc_container_status *last, int next)
{
        const struct kc_api_container *ic;
        int r;

        if (next < 0)
                return set_message(p, strdup("initialization in progress"));
        ic = &pod->init_containers[next];
        if (last && !restart_on_failure(pod)) {
                p->a.kill_pod = true;
                return set_message(p, kc_strdup_printf("init container %s failed and "
                                                       "restartPolicy is Never",
                                                       ic->name));
        }
        if (last && last->state == KC_CONTAINER_STATE_UNKNOWN) {
                r = add_kill_unknown(p, last, true, (size_t)next);
                if (r < 0)
                        return r;
        }
        p->a.next_init_container_to_start = next;
        return set_message(p, kc_strdup_printf("start init container %s", ic->name));
}

/* livenessManager/startupManager.Get(cs->id): NONE without a view or an ID. */
static enum kc_probe_verdict verdict(const struct plan *p, const struct kc_container_status *cs,
                                     bool startup)
{
        if (!p->probes || !cs->id)
                return KC_PROBE_VERDICT_NONE;
        return p->probes->get(p->probes->self, cs->id, startup);
}

/* Kills init container @i (a sidecar) for a probe failure and starts it again. */
static int sidecar_probe_kill(struct plan *p, const struct kc_api_container *c,
                              const struct kc_container_status *cs, size_t i,
                              enum kc_kill_reason why)
{
        int r = add_kill(
                p, cs, true, i,
                kc_strdup_printf("Init container %s failed %s probe", c->name,
                                 why == KC_KILL_REASON_LIVENESS_PROBE ? "liveness" : "startup"));

        if (r < 0)
                return r;
        p->a.containers_to_kill[p->a.n_containers_to_kill - 1].reason = why;
        return add_init_start(p, i);
}

/*
 * A running app container with an unchanged spec: kill it when its
 * liveness (else startup) result is Failure, restarting it unless the
 * restart policy is Never; keep it otherwise.
 */
static int plan_probe_kill(struct plan *p, const struct kc_api_pod *pod,
                           const struct kc_container_status *cs, size_t i, size_t *keep)
{
        const struct kc_api_container *c = &pod->containers[i];
        bool restart = pod->restart_policy != KC_RESTART_POLICY_NEVER;
        enum kc_kill_reason why = KC_KILL_REASON_NONE;
        int r;

        if (verdict(p, cs, false) == KC_PROBE_VERDICT_FAILURE)
                why = KC_KILL_REASON_LIVENESS_PROBE;
        else if (verdict(p, cs, true) == KC_PROBE_VERDICT_FAILURE)
                why = KC_KILL_REASON_STARTUP_PROBE;
        if (why == KC_KILL_REASON_NONE) {
                (*keep)++;
                return 0;
        }
        if (restart) {
                r = add_start(p, i);
                if (r < 0)
                        return r;
        }
        r = add_kill(p, cs, false, i,
                     kc_strdup_printf("Container %s failed %s probe%s", c->name,
                                      why == KC_KILL_REASON_LIVENESS_PROBE ? "liveness" : "startup",
                                      restart ? ", will be restarted" : ""));
        if (r == 0)
                p->a.containers_to_kill[p->a.n_containers_to_kill - 1].reason = why;
        return r;
}

/*
 * A running sidecar (computeInitContainerActions' running case): started
 * once its startup probe succeeded (none: at once), then the next init
 * container may start; restarted when its spec changed or its liveness
 * probe failed.
 */
static int plan_running_sidecar(struct plan *p, const struct kc_api_container *c, size_t i,
                                const struct kc_container_status *cs, bool prev, bool last,
                                bool *initialized)
{
        enum kc_probe_verdict v;
        int r;

        if (kc_api_probe_or_none(c->startup_probe)->present) {
                v = verdict(p, cs, true);
                if (v == KC_PROBE_VERDICT_FAILURE)
                        return sidecar_probe_kill(p, c, cs, i, KC_KILL_REASON_STARTUP_PROBE);
                if (v != KC_PROBE_VERDICT_SUCCESS)
                        return 0; /* not started yet: wait for the probe */
        }
        if (last)
                *initialized = true;
        else if (!prev && (r = add_init_start(p, i + 1)) < 0)
                return r;
        if (cs->hash != kc_container_spec_hash(c)) {
                r = add_kill(p, cs, true, i,
                             kc_strdup_printf("Init container %s definition changed", c->name));
                return r < 0 ? r : add_init_start(p, i);
        }
        /* Its liveness does not hold the next init container back. */
        if (kc_api_probe_or_none(c->liveness_probe)->present &&
            verdict(p, cs, false) == KC_PROBE_VERDICT_FAILURE)
                return sidecar_probe_kill(p, c, cs, i, KC_KILL_REASON_LIVENESS_PROBE);
        return 0;
}

/*
 * One init container with status @cs on the sidecar path (the state switch
 * of computeInitContainerActions); @prev: an init container after it has
 * started already. Returns 1 when the pod must be killed (a failed init
 * container and restartPolicy Never), 0, or -ENOMEM.
 */
static int plan_init_one(struct plan *p, const struct kc_api_pod *pod, size_t i,
                         const struct kc_container_status *cs, bool prev, bool *initialized)
{
        const struct kc_api_container *c = &pod->init_containers[i];
        const bool restartable = kc_is_restartable_init_container(c);
        const bool last = i + 1 == pod->n_init_containers;
        int r;

        switch (cs->state) {
        case KC_CONTAINER_STATE_CREATED: /* created but never started: start it again */
                return add_init_start(p, i);
        case KC_CONTAINER_STATE_RUNNING:
                if (!restartable)
                        return 0; /* wait for it to finish */
                return plan_running_sidecar(p, c, i, cs, prev, last, initialized);
        case KC_CONTAINER_STATE_EXITED:
                if (restartable)
                        return add_init_start(p, i); /* whatever the pod's restartPolicy */
                if (init_container_failed(cs))
                        return restart_on_failure(pod) ? add_init_start(p, i) : 1;
                if (last)
                        *initialized = true;
                return last ? 0 : add_init_start(p, i + 1);
        default:
                if (!restartable && !restart_on_failure(pod))
                        return 1;
                r = add_kill_unknown(p, cs, true, i);
                return r < 0 ? r : add_init_start(p, i);
        }
}

/*
 * computeInitContainerActions (the SidecarContainers path): walks the init
 * containers backwards from the last one that has a status; the ones
 * before it only matter when they are sidecars, to be kept running.
 * *ret_initialized: the pod may start its app containers.
 */
static int plan_sidecar_init(struct plan *p, const struct kc_api_pod *pod,
                             const struct kc_pod_status *s, bool *ret_initialized)
{
        bool initialized = false, prev;
        size_t i, n;
        int r;

        /* An app container created or running: initialization happened before. */
        for (i = 0; i < pod->n_containers && !initialized; i++) {
                const struct kc_container_status *cs =
                        kc__find_container_status(s, pod->containers[i].name);

                initialized = cs && (cs->state == KC_CONTAINER_STATE_CREATED ||
                                     cs->state == KC_CONTAINER_STATE_RUNNING);
        }
        prev = initialized;
        for (i = pod->n_init_containers; i-- > 0;) {
                const struct kc_api_container *c = &pod->init_containers[i];
                const struct kc_container_status *cs = kc__find_container_status(s, c->name);

                if (!cs || (prev && !kc_is_restartable_init_container(c))) {
                        /* A sidecar whose every instance is gone is started again. */
                        if (!cs && prev && kc_is_restartable_init_container(c) &&
                            (r = add_init_start(p, i)) < 0)
                                return r;
                        continue;
                }
                r = plan_init_one(p, pod, i, cs, prev, &initialized);
                if (r < 0)
                        return r;
                if (r > 0) {
                        p->a.kill_pod = true;
                        p->a.n_init_containers_to_start = 0;
                        *ret_initialized = false;
                        return set_message(p, kc_strdup_printf("init container %s failed and "
                                                               "restartPolicy is Never",
                                                               c->name));
                }
                prev = true;
        }
        if (!prev && (r = add_init_start(p, 0)) < 0)
                return r;
        /* Collected backwards: start them in spec order. */
        n = p->a.n_init_containers_to_start;
        for (i = 0; i < n / 2; i++) {
                size_t t = p->a.init_containers_to_start[i];

                p->a.init_containers_to_start[i] = p->a.init_containers_to_start[n - 1 - i];
                p->a.init_containers_to_start[n - 1 - i] = t;
        }
        *ret_initialized = initialized;
        return 0;
}

/*
 * App container @i of a running pod: keep it (*keep counts it), start it when
 * it is not running and should be restarted, or restart it when its spec
 * changed.
 */
static int plan_container(struct plan *p, const struct kc_api_pod *pod,
                          const struct kc_pod_status *s, size_t i, size_t *keep)
{
        const struct kc_api_container *c = &pod->containers[i];
        const struct kc_container_status *cs = kc__find_container_status(s, c->name);
        int r;

        if (!cs || cs->state != KC_CONTAINER_STATE_RUNNING) {
                if (!should_container_be_restarted(c, pod, s))
                        return 0;
                r = add_start(p, i);
                if (r < 0)
                        return r;
                /* Unknown may still be running: kill before restarting. */
                if (cs && cs->state == KC_CONTAINER_STATE_UNKNOWN)
                        return add_kill_unknown(p, cs, false, i);
                return 0;
        }
        if (cs->hash != kc_container_spec_hash(c)) {
                /* Spec changed: restart regardless of the restart policy. */
                r = add_start(p, i);
                if (r < 0)
                        return r;
                return add_kill(
                        p, cs, false, i,
                        kc_strdup_printf("Container %s definition changed, will be restarted",
                                         c->name));
        }
        return plan_probe_kill(p, pod, cs, i, keep);
}

/* computePodActions: the sandbox, then initialization, then each app container. */
static int compute(struct plan *p, const struct kc_api_pod *pod, const struct kc_pod_status *s)
{
        const struct kc_container_status *init_last;
        const char *why, *sandbox_id;
        bool initialized = false;
        size_t i, keep = 0;
        int r, next;

        why = sandbox_changed(s, &p->a.attempt, &sandbox_id);
        if (sandbox_id) {
                p->a.sandbox_id = strdup(sandbox_id);
                if (!p->a.sandbox_id)
                        return -ENOMEM;
        }
        if (why)
                return plan_new_sandbox(p, pod, s, why);
        if (kc_pod_has_restartable_init_container(pod)) {
                r = plan_sidecar_init(p, pod, s, &initialized);
                if (r < 0 || p->a.kill_pod)
                        return r;
                if (!initialized)
                        return set_message(p, kc_strdup_printf("initialization in progress: "
                                                               "start %zu init container(s)",
                                                               p->a.n_init_containers_to_start));
        } else if (!next_init_container(pod, s, &init_last, &next)) {
                return plan_init_containers(p, pod, init_last, next);
        }
        for (i = 0; i < pod->n_containers; i++) {
                r = plan_container(p, pod, s, i, &keep);
                if (r < 0)
                        return r;
        }
        if (keep == 0 && p->a.n_containers_to_start == 0) {
                /* No sidecar is restarted to keep a finished pod alive. */
                p->a.kill_pod = true;
                p->a.n_init_containers_to_start = 0;
                return set_message(p, strdup("no container to keep or start: kill the pod"));
        }
        return set_message(p,
                           kc_strdup_printf("keep %zu, start %zu, kill %zu container(s)", keep,
                                            p->a.n_containers_to_start, p->a.n_containers_to_kill));
}

int kc_compute_pod_actions(const struct kc_api_pod *pod, const struct kc_pod_status *status,
                           struct kc_pod_actions *ret)
{
        return kc_compute_pod_actions_probed(pod, status, NULL, ret);
}

int kc_compute_pod_actions_probed(const struct kc_api_pod *pod, const struct kc_pod_status *status,
                                  const struct kc_probe_results_view *probes,
                                  struct kc_pod_actions *ret)
{
        struct plan p = { .a = { .next_init_container_to_start = -1 }, .probes = probes };
        int r;

        if (!ret)
                return -EINVAL;
        *ret = (struct kc_pod_actions){ .next_init_container_to_start = -1 };
        if (!pod || !status)
                return -EINVAL;
        r = compute(&p, pod, status);
        if (r < 0) {
                kc_pod_actions_done(&p.a);
                return r;
        }
        *ret = p.a;
        return 0;
}

/* ------------------------------------------------------------------------ */
/* doBackOff                                                                  */

char *kc__backoff_key(const struct kc_api_pod *pod, const struct kc_api_container *c)
{
        /* getStableKey: name_namespace_uid_containerName_hash (FormatUint(hash, 16)). */
        return kc_strdup_printf("%s_%s_%s_%s_%" PRIx64, pod->name ? pod->name : "",
                                pod->namespace ? pod->namespace : "", pod->uid ? pod->uid : "",
                                c->name ? c->name : "", kc_container_spec_hash(c));
}

int kc_do_back_off(struct kc_backoff *b, const struct kc_api_pod *pod,
                   const struct kc_api_container *c, const struct kc_pod_status *status,
                   int64_t now_ns, char **ret_msg)
{
        const struct kc_container_status *cs = NULL;
        char buf[KC_DURATION_MAX];
        _cleanup_free_ char *key = NULL;
        int64_t d = 0;
        size_t i;

        (void)now_ns; /* the backoff's own clock decides, as upstream's backOff.Clock */
        if (ret_msg)
                *ret_msg = NULL;
        if (!b || !pod || !c || !status)
                return -EINVAL;

        /* The first (newest) exited instance of this container. */
        for (i = 0; i < status->n_containers; i++)
                if (kc__streq(status->containers[i].name, c->name) &&
                    status->containers[i].state == KC_CONTAINER_STATE_EXITED) {
                        cs = &status->containers[i];
                        break;
                }
        if (!cs)
                return 0;

        key = kc__backoff_key(pod, c);
        if (!key)
                return -ENOMEM;
        if (kc_backoff_is_in_backoff_since(b, key, cs->finished_at)) {
                /*
                 * Upstream: fmt.Errorf("back-off %s restarting failed container=%s pod=%s",
                 * backOff.Get(key), container.Name, format.Pod(pod)), format.Pod being
                 * "name_namespace(uid)"; the duration in Go's Duration.String().
                 */
                (void)kc_backoff_get(b, key, &d);
                if (ret_msg) {
                        *ret_msg = kc_strdup_printf(
                                "back-off %s restarting failed container=%s pod=%s_%s(%s)",
                                kc_format_duration(d, buf), c->name ? c->name : "",
                                pod->name ? pod->name : "", pod->namespace ? pod->namespace : "",
                                pod->uid ? pod->uid : "");
                        if (!*ret_msg)
                                return -ENOMEM;
                }
                return -EAGAIN;
        }
        return kc_backoff_next(b, key, cs->finished_at);
}
