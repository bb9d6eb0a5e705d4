/* SPDX-License-Identifier: Apache-2.0 */
/*
 * v1.PodStatus generation: the container start-failure reason cache
 * (upstream kuberuntime ReasonCache), the pod phase (getPhase), the
 * container statuses (convertToAPIContainerStatuses) and the kubelet-owned
 * conditions (status/generate.go), written as jansson values. The v1 Pod
 * wrapper the /pods endpoint serves is in pod_spec_json.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/cleanup.h"
#include "core/log.h"
#include "json_internal.h"
#include "kubelet/status/pod_status.h"
#include "kubelet/status/reason_cache.h"
#include "runtime/api_pod.h"
#include "runtime/container.h"
#include "runtime/pod_actions.h"
#include "runtime/qos.h"
#include "runtime/runtime_service.h"

static void *mfree(void *p)
{
        free(p);
        return NULL;
}

/* ------------------------------------------------------------------------ */
/* Reason cache                                                               */
/* ------------------------------------------------------------------------ */
/* JSON helpers                                                               */

int kc_format_rfc3339(int64_t ns, char buf[static KC_RFC3339_MAX])
{
        int64_t sec = ns / KC_NSEC_PER_SEC;
        char tmp[96]; /* room for any int the compiler can imagine */
        struct tm tm;
        time_t t;
        int n;

        if (ns % KC_NSEC_PER_SEC < 0)
                sec--; /* truncate toward the past, as Go's Time.Unix does */
        t = (time_t)sec;
        if (!gmtime_r(&t, &tm) || tm.tm_year < -1900 || tm.tm_year > 9999 - 1900)
                return -ERANGE;
        n = snprintf(tmp, sizeof(tmp), "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
        if (n < 0 || n >= KC_RFC3339_MAX)
                return -ERANGE;
        memcpy(buf, tmp, (size_t)n + 1);
        return 0;
}

/* The length of the valid UTF-8 sequence at @p s (1-4), or 0 when invalid. */
static size_t utf8_seq_len(const unsigned char *s)
{
        unsigned c = s[0];
        size_t n, i;
        unsigned cp;

        if (c < 0x80)
                return 1;
        if (c >= 0xc2 && c <= 0xdf)
                n = 2, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef)
                n = 3, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4)
                n = 4, cp = c & 0x07;
        else
                return 0;
        for (i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return n;
}

/*
 * A JSON string for @p s (NULL → ""). Runtime-provided text may not be
 * UTF-8: invalid bytes become U+FFFD, as Go's encoder writes them. NULL on
 * ENOMEM.
 */
static json_t *jstr(const char *s)
{
        _cleanup_free_ char *fixed = NULL;
        const unsigned char *p;
        size_t len, o = 0, n;
        json_t *v;

        if (!s)
                s = "";
        v = json_string(s);
        if (v)
                return v;
        len = strlen(s);
        fixed = malloc(len * 3 + 1);
        if (!fixed)
                return NULL;
        for (p = (const unsigned char *)s; *p; p += n) {
                n = utf8_seq_len(p);
                if (n == 0) {
                        memcpy(fixed + o, "\xef\xbf\xbd", 3);
                        o += 3;
                        n = 1;
                } else {
                        memcpy(fixed + o, p, n);
                        o += n;
                }
        }
        fixed[o] = '\0';
        return json_string(fixed);
}

/* A metav1.Time: RFC 3339 seconds, or null for the zero time (0 here). */
static json_t *jtime(int64_t ns)
{
        char buf[KC_RFC3339_MAX];

        if (ns == 0 || kc_format_rfc3339(ns, buf) < 0)
                return json_null();
        return json_string(buf);
}

json_t *kc__json_str(const char *s)
{
        return jstr(s);
}

json_t *kc__json_time(int64_t ns)
{
        return jtime(ns);
}

/* json_object_set_new() as 0/-ENOMEM; takes @p v (may be NULL: -ENOMEM). */
static int set_new(json_t *o, const char *key, json_t *v)
{
        return json_object_set_new(o, key, v) < 0 ? -ENOMEM : 0;
}

static int set_str(json_t *o, const char *key, const char *s)
{
        return set_new(o, key, jstr(s));
}

int kc__json_set_new(json_t *o, const char *key, json_t *v)
{
        return set_new(o, key, v);
}

int kc__json_set_str(json_t *o, const char *key, const char *s)
{
        return set_str(o, key, s);
}

/* Sets @p key only when @p s is non-empty (Go's omitempty). */
static int set_str_nonempty(json_t *o, const char *key, const char *s)
{
        return s && *s ? set_str(o, key, s) : 0;
}

int kc_json_array_build(size_t n, kc_json_item_fn item, const void *userdata, json_t **ret)
{
        _cleanup_json_ json_t *a = json_array();
        size_t i;
        int r;

        if (!item || !ret)
                return -EINVAL;
        if (!a)
                return -ENOMEM;
        for (i = 0; i < n; i++) {
                json_t *v = NULL;

                r = item(userdata, i, &v);
                if (r < 0)
                        return r;
                /* Takes v; a NULL v (the item ran out of memory) fails here. */
                if (json_array_append_new(a, v) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(a);
        return 0;
}

/* kc_json_array_build() for set_new(): the array, or NULL on any failure. */
static json_t *array_of(size_t n, kc_json_item_fn item, const void *userdata)
{
        json_t *a = NULL;

        return kc_json_array_build(n, item, userdata, &a) < 0 ? NULL : a;
}

/* ------------------------------------------------------------------------ */
/* Container views (convertToAPIContainerStatuses)                            */

enum view_kind {
        VIEW_WAITING,
        VIEW_RUNNING,
        VIEW_TERMINATED,
};

/*
 * A terminated state and where it comes from: a runtime instance that
 * exited (cs), the previous API status' terminated object, reused as it is
 * (old), or upstream's ContainerStatusUnknown stand-in for a container that
 * was running and vanished (unknown_message). All NULL: no terminated state.
 */
struct term {
        const struct kc_container_status *cs;
        const json_t *old;
        const char *unknown_message;
};

/* kubecontainer.ContainerReasonStatusUnknown and the two messages upstream gives it. */
#define REASON_STATUS_UNKNOWN "ContainerStatusUnknown"
#define MSG_UNKNOWN_TERMINATED "The container could not be located when the pod was terminated"
#define MSG_UNKNOWN_DELETED                                                                        \
        "The container could not be located when the pod was deleted.  The container used "        \
        "to be Running"
#define EXIT_CODE_UNKNOWN 137

/* How one spec container shows in the API status. */
struct cview {
        const struct kc_api_container *spec;
        bool is_init;
        const struct kc_container_status *newest; /* NULL: no runtime status */
        const json_t *reused;  /* the old status reused whole (terminated, no runtime status) */
        enum view_kind kind;   /* TERMINATED: see state */
        struct term state;     /* kind == VIEW_TERMINATED */
        struct term last;      /* lastState.terminated; none: {} */
        int64_t restart_count; /* restartCount */
        const char *reason;    /* waiting; NULL: none */
        const char *message;   /* waiting; NULL: none */
        char *owned_reason, *owned_message;
        bool probed;         /* started and ready come from the prober (UpdatePodStatus) */
        bool started, ready; /* when probed */
};

static void cview_done(struct cview *v)
{
        v->owned_reason = mfree(v->owned_reason);
        v->owned_message = mfree(v->owned_message);
}

static const struct kc_pod_status empty_status;

static bool term_set(const struct term *t)
{
        return t->cs || t->old || t->unknown_message;
}

static int64_t term_exit_code(const struct term *t)
{
        if (t->cs)
                return t->cs->exit_code;
        if (t->old)
                return json_integer_value(json_object_get(t->old, "exitCode"));
        return EXIT_CODE_UNKNOWN;
}

/* The newest and second newest statuses named @p name (statuses are newest first). */
static void find_statuses(const struct kc_pod_status *s, const char *name,
                          const struct kc_container_status **ret_newest,
                          const struct kc_container_status **ret_prev)
{
        size_t i;

        *ret_newest = *ret_prev = NULL;
        for (i = 0; i < s->n_containers; i++) {
                if (!s->containers[i].name || strcmp(s->containers[i].name, name) != 0)
                        continue;
                if (!*ret_newest) {
                        *ret_newest = &s->containers[i];
                } else {
                        *ret_prev = &s->containers[i];
                        return;
                }
        }
}

/* The v1 ContainerStatus named @p name in the JSON array @p list, or NULL. */
static const json_t *old_container_status(const json_t *list, const char *name)
{
        const char *n;
        json_t *o;
        size_t i;

        json_array_foreach (list, i, o) {
                n = json_string_value(json_object_get(o, "name"));
                if (n && strcmp(n, name) == 0)
                        return o;
        }
        return NULL;
}

/* @p cs's "<key>" state ("running", "terminated", ...) when it is an object, else NULL. */
static const json_t *old_state(const json_t *cs, const char *key, const char *sub)
{
        const json_t *v = json_object_get(json_object_get(cs, key), sub);

        return json_is_object(v) ? v : NULL;
}

static int64_t old_restart_count(const json_t *cs)
{
        return json_integer_value(json_object_get(cs, "restartCount"));
}

/*
 * convertContainerStatus over the runtime's instances: the newest makes the
 * state, the second newest lastState. A container that was running in the
 * old status @p old and is now reported in the unknown state terminated
 * without our seeing how: upstream's ContainerStatusUnknown, one restart more.
 */
static void view_from_runtime(struct cview *v, const struct kc_container_status *prev,
                              const json_t *old)
{
        bool was_running = old_state(old, "state", "running") != NULL;

        v->restart_count = v->newest->restart_count;
        switch (v->newest->state) {
        case KC_CONTAINER_STATE_RUNNING:
                v->kind = VIEW_RUNNING;
                break;
        case KC_CONTAINER_STATE_EXITED:
                v->kind = VIEW_TERMINATED;
                v->state.cs = v->newest;
                break;
        case KC_CONTAINER_STATE_UNKNOWN:
                if (was_running) {
                        v->kind = VIEW_TERMINATED;
                        v->state.unknown_message = MSG_UNKNOWN_TERMINATED;
                        v->restart_count = old_restart_count(old) + 1;
                }
                break;
        default: /* created: "waiting to be running", no reason */
                break;
        }
        if (prev && prev->state == KC_CONTAINER_STATE_EXITED)
                v->last.cs = prev;
        else if (prev && prev->state == KC_CONTAINER_STATE_UNKNOWN && was_running)
                v->last.unknown_message = MSG_UNKNOWN_TERMINATED;
}

/*
 * No runtime instance left: the old status @p old (may be NULL) carries on.
 * A terminated one is reused whole; otherwise the default waiting state keeps
 * its restartCount and lastState, and one that was running gets a
 * ContainerStatusUnknown lastState (a restart more unless the pod is being
 * deleted), so that it counts as stopped rather than as never started.
 */
static void view_from_old(struct cview *v, const struct kc_api_pod *pod, const json_t *old)
{
        v->reason = pod->n_init_containers > 0 ? "PodInitializing" : "ContainerCreating";
        if (!old)
                return;
        v->restart_count = old_restart_count(old);
        v->last.old = old_state(old, "lastState", "terminated");
        v->state.old = old_state(old, "state", "terminated");
        if (v->state.old) {
                v->kind = VIEW_TERMINATED;
                v->reason = NULL;
                v->reused = old;
                return;
        }
        if (!old_state(old, "state", "running") || v->last.old)
                return;
        v->last.unknown_message = MSG_UNKNOWN_DELETED;
        if (pod->deletion_ts == 0)
                v->restart_count++;
}

/*
 * ShouldContainerBeRestarted, from the container's newest status; a
 * sidecar (@p sidecar) restarts whatever the pod's restartPolicy.
 */
static bool should_restart(const struct kc_api_pod *pod, const struct kc_container_status *newest,
                           bool sidecar)
{
        if (pod->deletion_ts != 0)
                return false;
        if (sidecar)
                return !newest || newest->state != KC_CONTAINER_STATE_RUNNING;
        if (!newest)
                return true;
        switch (newest->state) {
        case KC_CONTAINER_STATE_RUNNING:
                return false;
        case KC_CONTAINER_STATE_CREATED:
        case KC_CONTAINER_STATE_UNKNOWN:
                return true;
        default:
                break;
        }
        if (pod->restart_policy == KC_RESTART_POLICY_NEVER)
                return false;
        if (pod->restart_policy == KC_RESTART_POLICY_ON_FAILURE && newest->exit_code == 0)
                return false;
        return true;
}

/*
 * Fills @p v for spec container @p c from the runtime status @p s and the
 * previous API status list @p old_list (the JSON array of the same kind,
 * init or app; may be NULL). With @p rc (may be NULL) a container due for
 * restart with a recorded start failure shows that failure as its waiting
 * state. Only a reason-cache lookup can fail (-ENOMEM); @p v is always
 * initialised (release with cview_done()).
 */
static int cview_init(struct cview *v, const struct kc_api_pod *pod, const struct kc_pod_status *s,
                      const struct kc_api_container *c, bool is_init, const json_t *old_list,
                      struct kc_reason_cache *rc)
{
        const char *name = c->name ? c->name : "";
        const json_t *old = old_container_status(old_list, name);
        const struct kc_container_status *prev;
        char *reason = NULL, *message = NULL;
        int r;

        *v = (struct cview){ .spec = c, .is_init = is_init, .kind = VIEW_WAITING };
        find_statuses(s, name, &v->newest, &prev);
        if (v->newest)
                view_from_runtime(v, prev, old);
        else
                view_from_old(v, pod, old);

        if (!rc || !pod->uid)
                return 0;
        /* An init container that exited 0 is done and never restarted (a sidecar is). */
        if (is_init && !kc_is_restartable_init_container(c) && v->newest &&
            v->newest->state == KC_CONTAINER_STATE_EXITED && v->newest->exit_code == 0)
                return 0;
        if (!should_restart(pod, v->newest, is_init && kc_is_restartable_init_container(c)))
                return 0;
        r = kc_reason_cache_get(rc, pod->uid, name, &reason, &message);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (v->kind == VIEW_TERMINATED) {
                v->last = v->state;
                v->state = (struct term){ 0 };
        }
        v->kind = VIEW_WAITING;
        v->owned_reason = reason;
        v->owned_message = message;
        v->reason = reason;
        v->message = message && *message ? message : NULL;
        return 0;
}

/* A view of a sidecar (restartable init container). */
static bool cview_sidecar(const struct cview *v)
{
        return v->is_init && kc_is_restartable_init_container(v->spec);
}

/*
 * Ready: the prober's verdict for a probed sidecar or app container
 * (UpdatePodStatus); else an init container once it exited 0, a sidecar or
 * an app container while it runs.
 */
static bool cview_ready(const struct cview *v)
{
        if (v->probed)
                return v->ready;
        if (v->is_init && !cview_sidecar(v))
                return v->kind == VIEW_TERMINATED && term_exit_code(&v->state) == 0;
        return v->kind == VIEW_RUNNING; /* without a prober a running container is ready */
}

static bool cview_started(const struct cview *v)
{
        return v->probed ? v->started : v->kind == VIEW_RUNNING;
}

/* UpdatePodStatus for an app container or a sidecar: the prober's started and ready. */
static void cview_probe(struct cview *v, const struct kc_api_pod *pod,
                        const struct kc_container_probe_view *probes)
{
        bool running = v->kind == VIEW_RUNNING;

        if (!probes || (v->is_init && !cview_sidecar(v)) || !pod->uid)
                return;
        v->started = v->ready = false;
        probes->get(probes->self, pod->uid, v->spec->name ? v->spec->name : "",
                    v->newest ? v->newest->id : NULL, running, &v->started, &v->ready);
        v->probed = true;
}

/* ------------------------------------------------------------------------ */
/* Phase (getPhase)                                                           */

struct phase_counts {
        size_t pending_init, failed_init;
        size_t running, waiting, stopped, succeeded;
        bool regular_started; /* HasAnyRegularContainerStarted */
};

/*
 * Upstream also counts "unknown" app containers (no API status at all);
 * here every spec container has one, so that count is always zero.
 */
static void count_view(struct phase_counts *pc, const struct cview *v)
{
        if (cview_sidecar(v)) {
                /*
                 * A running sidecar counts as running (it is started: no
                 * startup probe); one that never ran yet as waiting; one
                 * that terminated neither running nor stopped.
                 */
                if (v->kind == VIEW_RUNNING)
                        pc->running++;
                else if (v->kind == VIEW_WAITING && !term_set(&v->last))
                        pc->waiting++;
                return;
        }
        if (v->is_init) {
                switch (v->kind) {
                case VIEW_RUNNING:
                        pc->pending_init++;
                        break;
                case VIEW_TERMINATED:
                        if (term_exit_code(&v->state) != 0)
                                pc->failed_init++;
                        break;
                case VIEW_WAITING:
                        if (!term_set(&v->last))
                                pc->pending_init++;
                        else if (term_exit_code(&v->last) != 0)
                                pc->failed_init++;
                        break;
                }
                return;
        }
        switch (v->kind) {
        case VIEW_RUNNING:
                pc->running++;
                pc->regular_started = true;
                break;
        case VIEW_TERMINATED:
                pc->stopped++;
                if (term_exit_code(&v->state) == 0)
                        pc->succeeded++;
                pc->regular_started = true;
                break;
        case VIEW_WAITING:
                if (term_set(&v->last))
                        pc->stopped++;
                else
                        pc->waiting++;
                break;
        }
}

static enum kc_pod_phase phase_from_counts(const struct kc_api_pod *pod,
                                           const struct phase_counts *pc, bool pod_is_terminal)
{
        if (pc->failed_init > 0 && pod->restart_policy == KC_RESTART_POLICY_NEVER)
                return KC_POD_PHASE_FAILED;
        if ((pc->pending_init > 0 && !pc->regular_started) || pc->waiting > 0)
                return KC_POD_PHASE_PENDING;
        if (pc->running > 0)
                return KC_POD_PHASE_RUNNING;
        if (pc->stopped == 0)
                return KC_POD_PHASE_PENDING;
        /* Every app container stopped. A terminal pod restarts nothing,
         * whatever its policy (static pods excepted, as upstream). */
        if (pod_is_terminal && !pod->static_pod)
                return pc->stopped == pc->succeeded ? KC_POD_PHASE_SUCCEEDED : KC_POD_PHASE_FAILED;
        if (pod->restart_policy == KC_RESTART_POLICY_ALWAYS)
                return KC_POD_PHASE_RUNNING; /* all of them restarting */
        if (pc->stopped == pc->succeeded)
                return KC_POD_PHASE_SUCCEEDED;
        if (pod->restart_policy == KC_RESTART_POLICY_NEVER)
                return KC_POD_PHASE_FAILED;
        return KC_POD_PHASE_RUNNING; /* OnFailure: the failed ones restart */
}

enum kc_pod_phase kc_pod_get_phase(const struct kc_api_pod *pod, const struct kc_pod_status *status,
                                   bool pod_is_terminal)
{
        struct phase_counts pc = { 0 };
        struct cview v;
        size_t i;

        if (!pod)
                return _KC_POD_PHASE_INVALID;
        if (!status)
                status = &empty_status;
        /* Without a reason cache cview_init neither allocates nor fails. */
        for (i = 0; i < pod->n_init_containers; i++) {
                (void)cview_init(&v, pod, status, &pod->init_containers[i], true, NULL, NULL);
                count_view(&pc, &v);
        }
        for (i = 0; i < pod->n_containers; i++) {
                (void)cview_init(&v, pod, status, &pod->containers[i], false, NULL, NULL);
                count_view(&pc, &v);
        }
        return phase_from_counts(pod, &pc, pod_is_terminal);
}

/* ------------------------------------------------------------------------ */
/* Container statuses                                                         */

static json_t *terminated_json(const struct kc_container_status *cs, const char *container_id)
{
        _cleanup_json_ json_t *o = json_object();
        const char *reason = cs->reason && *cs->reason ? cs->reason
                             : cs->exit_code == 0      ? "Completed"
                                                       : "Error";

        if (!o || set_new(o, "exitCode", json_integer(cs->exit_code)) < 0 ||
            set_str(o, "reason", reason) < 0 || set_str_nonempty(o, "message", cs->message) < 0 ||
            set_new(o, "startedAt", jtime(cs->started_at)) < 0 ||
            set_new(o, "finishedAt", jtime(cs->finished_at)) < 0 ||
            set_str_nonempty(o, "containerID", container_id) < 0)
                return NULL;
        return TAKE_PTR(o);
}

/* "<runtime>://<id>", or NULL (no error) when the status has no ID. */
static int container_id_of(const struct kc_container_status *cs, const char *runtime_name,
                           char **ret)
{
        *ret = NULL;
        if (!cs || !cs->id || !*cs->id)
                return 0;
        return asprintf(ret, "%s://%s", runtime_name, cs->id) < 0 ? -ENOMEM : 0;
}

/* The v1 ContainerStateTerminated of @p t; NULL on ENOMEM. */
static json_t *term_json(const struct term *t, const char *runtime_name)
{
        _cleanup_free_ char *cid = NULL;

        if (t->old)
                return json_deep_copy(t->old);
        if (t->unknown_message)
                return json_pack("{s:i, s:s, s:s, s:n, s:n}", "exitCode", EXIT_CODE_UNKNOWN,
                                 "reason", REASON_STATUS_UNKNOWN, "message", t->unknown_message,
                                 "startedAt", "finishedAt");
        if (container_id_of(t->cs, runtime_name, &cid) < 0)
                return NULL;
        return terminated_json(t->cs, cid);
}

/* The string @p key of the reused old status, or NULL. */
static const char *reused_str(const struct cview *v, const char *key)
{
        return json_string_value(json_object_get(v->reused, key));
}

static json_t *container_status_json(const struct cview *v, const char *runtime_name)
{
        _cleanup_json_ json_t *o = json_object(), *state = json_object(), *last = json_object();
        _cleanup_free_ char *cid = NULL;
        const char *image_id = v->newest ? v->newest->image_ref : reused_str(v, "imageID");
        json_t *sub;

        if (!o || !state || !last || container_id_of(v->newest, runtime_name, &cid) < 0)
                return NULL;
        switch (v->kind) {
        case VIEW_RUNNING:
                sub = json_object();
                if (set_new(state, "running", sub) < 0 ||
                    set_new(sub, "startedAt", jtime(v->newest->started_at)) < 0)
                        return NULL;
                break;
        case VIEW_TERMINATED:
                if (set_new(state, "terminated", term_json(&v->state, runtime_name)) < 0)
                        return NULL;
                break;
        case VIEW_WAITING:
                sub = json_object();
                if (set_new(state, "waiting", sub) < 0 ||
                    set_str_nonempty(sub, "reason", v->reason) < 0 ||
                    set_str_nonempty(sub, "message", v->message) < 0)
                        return NULL;
                break;
        }
        if (term_set(&v->last) &&
            set_new(last, "terminated", term_json(&v->last, runtime_name)) < 0)
                return NULL;

        if (set_str(o, "name", v->spec->name) < 0 || set_new(o, "state", TAKE_PTR(state)) < 0 ||
            set_new(o, "lastState", TAKE_PTR(last)) < 0 ||
            set_new(o, "ready", json_boolean(cview_ready(v))) < 0 ||
            set_new(o, "restartCount", json_integer(v->restart_count)) < 0 ||
            set_str(o, "image", v->spec->image) < 0 || set_str(o, "imageID", image_id) < 0 ||
            set_str_nonempty(o, "containerID", v->newest ? cid : reused_str(v, "containerID")) <
                    0 ||
            set_new(o, "started", json_boolean(cview_started(v))) < 0)
                return NULL;
        return TAKE_PTR(o);
}

/* The container views of one list and the containerID scheme, for status_item(). */
struct status_items {
        const struct cview *views;
        const char *runtime_name;
};

/* A kc_json_item_fn: the v1 ContainerStatus of view @p i of a struct status_items. */
static int status_item(const void *userdata, size_t i, json_t **ret)
{
        const struct status_items *si = userdata;

        *ret = container_status_json(&si->views[i], si->runtime_name);
        return 0; /* NULL: kc_json_array_build() fails with -ENOMEM */
}

static int cmp_view_name(const void *a, const void *b)
{
        const struct cview *x = a, *y = b;

        return strcmp(x->spec->name ? x->spec->name : "", y->spec->name ? y->spec->name : "");
}

/* ------------------------------------------------------------------------ */
/* Conditions (status/generate.go)                                            */

struct condition {
        const char *type;
        bool status;
        const char *reason; /* NULL: none */
        char *message;      /* owned; NULL: none */
};

/* "<prefix>[a b]" over the views @p pick selects, or NULL in *ret when none. */
static int names_message(const char *prefix, const struct cview *v, size_t n,
                         bool (*pick)(const struct cview *), char **ret)
{
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, i, k = 0;
        FILE *f;

        *ret = NULL;
        for (i = 0; i < n; i++)
                k += pick(&v[i]);
        if (k == 0)
                return 0;
        f = open_memstream(&buf, &len);
        if (!f)
                return -ENOMEM;
        fprintf(f, "%s[", prefix);
        for (i = 0, k = 0; i < n; i++)
                if (pick(&v[i]))
                        fprintf(f, "%s%s", k++ ? " " : "", v[i].spec->name ? v[i].spec->name : "");
        fputc(']', f);
        if (fclose(f) != 0 || !buf)
                return -ENOMEM;
        *ret = TAKE_PTR(buf);
        return 0;
}

static bool view_not_ready(const struct cview *v)
{
        return !cview_ready(v);
}

/* GenerateContainersReadyCondition's set: the sidecars, then the app containers. */
static bool view_not_ready_running(const struct cview *v)
{
        return (!v->is_init || cview_sidecar(v)) && !cview_ready(v);
}

/* The same test as kc_compute_pod_actions' sandbox check: no new sandbox needed. */
static bool sandbox_ready(const struct kc_pod_status *s)
{
        size_t i, ready = 0;

        if (s->n_sandboxes == 0 || s->sandboxes[0].state != KC_SANDBOX_STATE_READY)
                return false;
        for (i = 0; i < s->n_sandboxes; i++)
                ready += s->sandboxes[i].state == KC_SANDBOX_STATE_READY;
        return ready == 1;
}

/*
 * GenerateContainersReadyCondition and GeneratePodReadyCondition over the
 * views @p v (the sidecars and app containers among them count; Ready =
 * ContainersReady: there are no readiness gates).
 */
static int ready_conditions(const struct cview *v, size_t n, enum kc_pod_phase phase,
                            struct condition *ready, struct condition *containers_ready)
{
        struct condition *c = containers_ready;
        int r;

        *c = (struct condition){ .type = "ContainersReady", .status = true };
        if (phase == KC_POD_PHASE_SUCCEEDED) {
                c->status = false;
                c->reason = "PodCompleted";
        } else if (phase == KC_POD_PHASE_FAILED) {
                c->status = false;
                c->reason = "PodFailed";
        } else {
                r = names_message("containers with unready status: ", v, n, view_not_ready_running,
                                  &c->message);
                if (r < 0)
                        return r;
                if (c->message) {
                        c->status = false;
                        c->reason = "ContainersNotReady";
                }
        }
        *ready = (struct condition){ .type = "Ready", .status = c->status, .reason = c->reason };
        if (c->message && !(ready->message = strdup(c->message)))
                return -ENOMEM;
        return 0;
}

/*
 * Fills @p c[0..4]: PodReadyToStartContainers, Initialized, Ready,
 * ContainersReady, PodScheduled. @p init holds the views: the @p n_init
 * init containers', then the @p n_app app containers'.
 */
static int make_conditions(const struct kc_pod_status *s, const struct cview *init, size_t n_init,
                           size_t n_app, enum kc_pod_phase phase, bool regular_started,
                           struct condition c[static 5])
{
        int r;

        c[0] = (struct condition){ .type = "PodReadyToStartContainers",
                                   .status = sandbox_ready(s) };

        c[1] = (struct condition){ .type = "Initialized", .status = true };
        if (phase == KC_POD_PHASE_SUCCEEDED) {
                c[1].reason = "PodCompleted";
        } else if (!regular_started) {
                r = names_message("containers with incomplete status: ", init, n_init,
                                  view_not_ready, &c[1].message);
                if (r < 0)
                        return r;
                if (c[1].message) {
                        c[1].status = false;
                        c[1].reason = "ContainersNotInitialized";
                }
        }

        /* The sidecars first, then the app containers, as upstream. */
        r = ready_conditions(init, n_init + n_app, phase, &c[2], &c[3]);
        if (r < 0)
                return r;

        c[4] = (struct condition){ .type = "PodScheduled", .status = true };
        return 0;
}

/* The old condition's lastTransitionTime when its status is unchanged, else NULL. */
static json_t *old_transition_time(const json_t *old, const char *type, const char *status)
{
        json_t *conds = json_object_get(old, "conditions"), *c, *t;
        const char *ot, *os;
        size_t i;

        json_array_foreach (conds, i, c) {
                ot = json_string_value(json_object_get(c, "type"));
                if (!ot || strcmp(ot, type) != 0)
                        continue;
                os = json_string_value(json_object_get(c, "status"));
                t = json_object_get(c, "lastTransitionTime");
                if (os && strcmp(os, status) == 0 && json_is_string(t))
                        return json_copy(t);
                return NULL;
        }
        return NULL;
}

static json_t *condition_json(const struct condition *c, const json_t *old, int64_t now_ns)
{
        _cleanup_json_ json_t *o = json_object();
        const char *status = c->status ? "True" : "False";
        json_t *t = old_transition_time(old, c->type, status);

        if (!t)
                t = jtime(now_ns);
        if (!o || set_str(o, "type", c->type) < 0 || set_str(o, "status", status) < 0 ||
            set_new(o, "lastProbeTime", json_null()) < 0 ||
            set_new(o, "lastTransitionTime", t) < 0 ||
            set_str_nonempty(o, "reason", c->reason) < 0 ||
            set_str_nonempty(o, "message", c->message) < 0)
                return NULL;
        return TAKE_PTR(o);
}

/* The conditions and what condition_json() reads besides, for condition_item(). */
struct condition_items {
        const struct condition *c;
        const json_t *old;
        int64_t now_ns;
};

/* A kc_json_item_fn: condition @p i of a struct condition_items. */
static int condition_item(const void *userdata, size_t i, json_t **ret)
{
        const struct condition_items *ci = userdata;

        *ret = condition_json(&ci->c[i], ci->old, ci->now_ns);
        return 0; /* NULL: kc_json_array_build() fails with -ENOMEM */
}

/* ------------------------------------------------------------------------ */
/* IPs                                                                        */

static int ip_family(const char *ip)
{
        unsigned char buf[sizeof(struct in6_addr)];

        if (!ip)
                return 0;
        if (inet_pton(AF_INET, ip, buf) == 1)
                return AF_INET;
        if (inet_pton(AF_INET6, ip, buf) == 1)
                return AF_INET6;
        return 0;
}

/* sortPodIPs: the first IP of the node's family, then the first of the other. */
static size_t sort_pod_ips(const struct kc_pod_status *s, const char *host_ip,
                           const char *ret[static 2])
{
        int primary = ip_family(host_ip) == AF_INET6 ? AF_INET6 : AF_INET;
        int secondary = primary == AF_INET ? AF_INET6 : AF_INET;
        size_t i, n = 0;

        for (i = 0; i < s->n_ips; i++)
                if (ip_family(s->ips[i]) == primary) {
                        ret[n++] = s->ips[i];
                        break;
                }
        for (i = 0; i < s->n_ips; i++)
                if (ip_family(s->ips[i]) == secondary) {
                        ret[n++] = s->ips[i];
                        break;
                }
        return n;
}

/*
 * The pod IPs a stopped pod keeps: those of @p old (its stored v1 status,
 * at most 2) when the runtime status @p s shows no ready sandbox, whose
 * network is gone with it (upstream: GenericPLEG.getPodIPs keeps the
 * cached IPs, preserveDataFromBeforeStopping those from before KillPod).
 * The strings point into @p old. @return how many, 0 when none.
 */
static size_t kept_pod_ips(const struct kc_pod_status *s, const json_t *old,
                           const char *ret[static 2])
{
        const json_t *v;
        size_t i, n = 0;

        for (i = 0; i < s->n_sandboxes; i++)
                if (s->sandboxes[i].state == KC_SANDBOX_STATE_READY)
                        return 0;
        json_array_foreach (json_object_get(old, "podIPs"), i, v) {
                const char *ip = json_string_value(json_object_get(v, "ip"));

                if (ip && *ip && n < 2)
                        ret[n++] = ip;
        }
        return n;
}

/* A kc_json_item_fn: {"ip": ips[i]} of the strings @p ips. */
static int ip_item(const void *ips, size_t i, json_t **ret)
{
        _cleanup_json_ json_t *o = json_object();

        if (!o || set_str(o, "ip", ((const char *const *)ips)[i]) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

/* A v1 PodIP list ([{"ip": ...}]); NULL on ENOMEM. */
static json_t *ip_list(const char *const *ips, size_t n)
{
        return array_of(n, ip_item, ips);
}

/* ------------------------------------------------------------------------ */
/* generateAPIPodStatus                                                       */

struct views {
        struct cview *v;
        size_t n;
};

static void views_done(struct views *vs)
{
        size_t i;

        for (i = 0; vs->v && i < vs->n; i++)
                cview_done(&vs->v[i]);
        vs->v = mfree(vs->v);
}

static bool phase_is_terminal(enum kc_pod_phase p)
{
        return p == KC_POD_PHASE_SUCCEEDED || p == KC_POD_PHASE_FAILED;
}

static enum kc_pod_phase old_phase(const json_t *old)
{
        return kc_pod_phase_from_string(json_string_value(json_object_get(old, "phase")));
}

static void conditions_done(struct condition *c, size_t n)
{
        size_t i;

        for (i = 0; i < n; i++)
                c[i].message = mfree(c[i].message);
}

int kc_generate_api_pod_status(const struct kc_api_pod *pod, const struct kc_pod_status *status,
                               struct kc_reason_cache *rc, const char *host_ip,
                               const char *runtime_name, bool pod_is_terminal,
                               const json_t *old_status, int64_t now_ns, json_t **ret)
{
        return kc_generate_api_pod_status_probed(pod, status, rc, host_ip, runtime_name,
                                                 pod_is_terminal, old_status, NULL, now_ns, ret);
}

int kc_generate_api_pod_status_probed(const struct kc_api_pod *pod,
                                      const struct kc_pod_status *status,
                                      struct kc_reason_cache *rc, const char *host_ip,
                                      const char *runtime_name, bool pod_is_terminal,
                                      const json_t *old_status,
                                      const struct kc_container_probe_view *probes, int64_t now_ns,
                                      json_t **ret)
{
        _cleanup_(views_done) struct views vs = { 0 };
        _cleanup_json_ json_t *o = NULL, *conds = NULL, *init_st = NULL, *app_st = NULL;
        struct condition c[5] = { { 0 } };
        struct phase_counts pc = { 0 };
        struct cview *init, *app;
        enum kc_pod_phase phase, oldp;
        const char *ips[2];
        json_t *start;
        size_t i, n_ips;
        int r;

        if (!pod || !runtime_name || !ret)
                return -EINVAL;
        if (!status)
                status = &empty_status;
        if (host_ip && !*host_ip)
                host_ip = NULL;

        vs.n = pod->n_init_containers + pod->n_containers;
        vs.v = calloc(vs.n + 1, sizeof(*vs.v));
        if (!vs.v)
                return -ENOMEM;
        init = vs.v;
        app = vs.v + pod->n_init_containers;
        for (i = 0; i < pod->n_init_containers; i++) {
                r = cview_init(&init[i], pod, status, &pod->init_containers[i], true,
                               json_object_get(old_status, "initContainerStatuses"), rc);
                if (r < 0)
                        return r;
                cview_probe(&init[i], pod, probes);
                count_view(&pc, &init[i]);
        }
        for (i = 0; i < pod->n_containers; i++) {
                r = cview_init(&app[i], pod, status, &pod->containers[i], false,
                               json_object_get(old_status, "containerStatuses"), rc);
                if (r < 0)
                        return r;
                cview_probe(&app[i], pod, probes);
                count_view(&pc, &app[i]);
        }

        phase = phase_from_counts(pod, &pc, pod_is_terminal);
        oldp = old_phase(old_status);
        if (!phase_is_terminal(phase) && phase_is_terminal(oldp))
                phase = oldp; /* the status manager's phase was terminal already */
        if (phase_is_terminal(pod->phase) && phase != pod->phase) {
                kc_log_warn_s("Pod attempted illegal phase transition",
                              KC_KV_POD(pod->namespace, pod->name),
                              KC_KV_STR("originalStatusPhase", kc_pod_phase_to_string(pod->phase)),
                              KC_KV_STR("apiStatusPhase", kc_pod_phase_to_string(phase)));
                phase = pod->phase;
        }

        r = make_conditions(status, init, pod->n_init_containers, pod->n_containers, phase,
                            pc.regular_started, c);
        if (r >= 0)
                r = kc_json_array_build(KC_ELEMENTSOF(c), condition_item,
                                        &(struct condition_items){ c, old_status, now_ns }, &conds);
        conditions_done(c, KC_ELEMENTSOF(c));
        if (r < 0)
                return r;

        if (pod->n_init_containers > 0) {
                r = kc_json_array_build(pod->n_init_containers, status_item,
                                        &(struct status_items){ init, runtime_name }, &init_st);
                if (r < 0)
                        return r;
        }
        /* Upstream sorts the app container statuses by name. */
        qsort(app, pod->n_containers, sizeof(*app), cmp_view_name);
        r = kc_json_array_build(pod->n_containers, status_item,
                                &(struct status_items){ app, runtime_name }, &app_st);
        if (r < 0)
                return r;

        n_ips = sort_pod_ips(status, host_ip, ips);
        if (n_ips == 0)
                n_ips = kept_pod_ips(status, old_status, ips);
        if (pod->host_network && n_ips == 0 && host_ip)
                ips[n_ips++] = host_ip;

        start = json_object_get(old_status, "startTime");
        start = json_is_string(start) ? json_copy(start) : jtime(now_ns);

        o = json_object();
        if (!o || set_str(o, "phase", kc_pod_phase_to_string(phase)) < 0 ||
            set_new(o, "conditions", TAKE_PTR(conds)) < 0 ||
            (host_ip && (set_str(o, "hostIP", host_ip) < 0 ||
                         set_new(o, "hostIPs", ip_list(&host_ip, 1)) < 0)) ||
            (n_ips > 0 &&
             (set_str(o, "podIP", ips[0]) < 0 || set_new(o, "podIPs", ip_list(ips, n_ips)) < 0))) {
                json_decref(start);
                return -ENOMEM;
        }
        if (set_new(o, "startTime", start) < 0 ||
            (init_st && set_new(o, "initContainerStatuses", TAKE_PTR(init_st)) < 0) ||
            set_new(o, "containerStatuses", TAKE_PTR(app_st)) < 0 ||
            set_str(o, "qosClass", kc_pod_qos_to_string(kc_pod_qos_get(pod))) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

/* ------------------------------------------------------------------------ */
/* SetContainerReadiness, SetContainerStartup                                 */

/* The ID part of "<runtime>://<id>" (a bare ID as it is). */
static const char *bare_id(const char *id)
{
        const char *sep = strstr(id, "://");

        return sep ? sep + 3 : id;
}

/* Whether the API containerID @p api_id and @p id name the same container. */
static bool container_id_matches(const char *api_id, const char *id)
{
        return api_id && strcmp(bare_id(api_id), bare_id(id)) == 0;
}

/* findContainerStatus: the status of container @p id among the app, then init statuses. */
static json_t *find_container_status(json_t *status, const char *id)
{
        static const char *const lists[] = { "containerStatuses", "initContainerStatuses" };
        json_t *cs;
        size_t i;

        for (size_t k = 0; k < KC_ELEMENTSOF(lists); k++)
                json_array_foreach (json_object_get(status, lists[k]), i, cs)
                        if (container_id_matches(
                                    json_string_value(json_object_get(cs, "containerID")), id))
                                return cs;
        return NULL;
}

/* Sets boolean @p key of container @p id in a copy of @p old: see the header. */
static int set_container_flag(const json_t *old, const char *id, const char *key, bool v,
                              json_t **ret_copy, json_t **ret_cs)
{
        _cleanup_json_ json_t *copy = NULL;
        json_t *cs;

        *ret_copy = NULL;
        if (!json_is_object(old) || !id)
                return -EINVAL;
        cs = find_container_status((json_t *)old, id);
        if (!cs)
                return -ENOENT;
        if (json_is_true(json_object_get(cs, key)) == v)
                return 0;
        copy = json_deep_copy(old);
        if (!copy)
                return -ENOMEM;
        cs = find_container_status(copy, id);
        if (json_object_set_new(cs, key, json_boolean(v)) < 0)
                return -ENOMEM;
        *ret_cs = cs;
        *ret_copy = TAKE_PTR(copy);
        return 0;
}

int kc_pod_status_set_container_started(const json_t *old, const char *container_id, bool started,
                                        json_t **ret)
{
        json_t *cs;

        if (!ret)
                return -EINVAL;
        return set_container_flag(old, container_id, "started", started, ret, &cs);
}

/* Replaces (or appends) the condition of @p c's type in @p status' conditions. */
static int put_condition(json_t *status, const struct condition *c, const json_t *old,
                         int64_t now_ns)
{
        json_t *conds = json_object_get(status, "conditions"), *e;
        json_t *n = condition_json(c, old, now_ns);
        size_t i;

        if (!n)
                return -ENOMEM;
        if (!json_is_array(conds)) {
                conds = json_array();
                if (json_object_set_new(status, "conditions", conds) < 0) {
                        json_decref(n);
                        return -ENOMEM;
                }
        }
        json_array_foreach (conds, i, e) {
                const char *t = json_string_value(json_object_get(e, "type"));

                if (t && strcmp(t, c->type) == 0)
                        return json_array_set_new(conds, i, n) < 0 ? -ENOMEM : 0;
        }
        return json_array_append_new(conds, n) < 0 ? -ENOMEM : 0;
}

int kc_pod_status_set_container_readiness(const struct kc_api_pod *pod, const json_t *old,
                                          const char *container_id, bool ready, int64_t now_ns,
                                          json_t **ret)
{
        _cleanup_json_ json_t *copy = NULL;
        _cleanup_free_ struct cview *views = NULL;
        struct condition c[2] = { { 0 } };
        json_t *cs;
        size_t n;
        int r;

        if (!pod || !ret)
                return -EINVAL;
        r = set_container_flag(old, container_id, "ready", ready, &copy, &cs);
        if (r < 0 || !copy) {
                *ret = NULL;
                return r;
        }
        /* The sidecars and app containers as the updated status shows them. */
        n = pod->n_init_containers + pod->n_containers;
        views = calloc(n + 1, sizeof(*views));
        if (!views)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                bool is_init = i < pod->n_init_containers;
                const struct kc_api_container *spec =
                        is_init ? &pod->init_containers[i]
                                : &pod->containers[i - pod->n_init_containers];
                const json_t *st =
                        old_container_status(json_object_get(copy, is_init ? "initContainerStatuses"
                                                                           : "containerStatuses"),
                                             spec->name ? spec->name : "");

                views[i] = (struct cview){ .spec = spec, .is_init = is_init };
                views[i].probed = !is_init || cview_sidecar(&views[i]);
                views[i].ready = json_is_true(json_object_get(st, "ready"));
        }
        r = ready_conditions(views, n, old_phase(copy), &c[0], &c[1]);
        if (r >= 0)
                r = put_condition(copy, &c[0], old, now_ns);
        if (r >= 0)
                r = put_condition(copy, &c[1], old, now_ns);
        conditions_done(c, KC_ELEMENTSOF(c));
        if (r < 0)
                return r;
        *ret = TAKE_PTR(copy);
        return 0;
}
