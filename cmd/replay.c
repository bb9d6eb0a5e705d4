/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `cubelet pleg-replay [FILE|-]`: drives a GenericPLEG against the simulated
 * runtime and a fake clock from a JSON Lines script, and prints what PLEG
 * emits, caches and reports. Nothing runs in the background: a relist
 * happens only when a line asks for it. In evented mode an EventedPLEG is
 * built around that GenericPLEG, threads not started: `cri_event` lines feed
 * it one CRI event at a time. The format is specified in README.md
 * ("pleg-replay") and docs/pleg-replay.md; other tools depend on it.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "core/chan.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "kubelet/status/pod_status.h"
#include "metrics/kubelet_metrics.h"
#include "metrics/registry.h"
#include "pleg/event.h"
#include "pleg/evented.h"
#include "pleg/generic.h"
#include "runtime/cache.h"
#include "runtime/container.h"
#include "runtime/cri.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"
#include "runtime/sim.h"

#define REPLAY_CLOCK_START (INT64_C(1700000000) * KC_NSEC_PER_SEC)

struct replay {
        struct kc_clock *clock;
        struct kc_sim *sim;
        struct kc_chan *events;
        struct kc_pod_cache *cache;
        struct kc_metrics_registry *registry;
        struct kc_kubelet_metrics metrics;
        struct kc_generic_pleg *pleg;
        struct kc_evented_pleg *evented; /* non-NULL in evented mode */
        unsigned channel_capacity;
        int64_t relist_threshold;
        bool relist_threshold_set; /* else the default of the mode */
        bool evented_mode;         /* config "evented": true */
        bool started;              /* an op other than config has been seen */
        unsigned long line;
        char error[512];
};

/* Records the first error of the current line; returns -EINVAL. */
static int fail(struct replay *rp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct replay *rp, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(rp->error, sizeof(rp->error), fmt, ap);
        va_end(ap);
        return -EINVAL;
}

/* ------------------------------------------------------------------------ */
/* Field access with the error messages users see                             */

/* Every key of @obj must be in the NULL-terminated @allowed list. */
static int check_keys(struct replay *rp, json_t *obj, const char *what, const char *const *allowed)
{
        const char *key;
        json_t *v;

        json_object_foreach (obj, key, v) {
                const char *const *a;

                for (a = allowed; *a; a++)
                        if (strcmp(*a, key) == 0)
                                break;
                if (!*a)
                        return fail(rp, "unknown field \"%s\" in %s", key, what);
        }
        return 0;
}

static int get_string(struct replay *rp, json_t *obj, const char *what, const char *key,
                      bool required, const char **ret)
{
        json_t *v = json_object_get(obj, key);

        if (!v) {
                if (required)
                        return fail(rp, "%s: missing field \"%s\"", what, key);
                return 0;
        }
        if (!json_is_string(v))
                return fail(rp, "%s: field \"%s\" must be a string", what, key);
        *ret = json_string_value(v);
        return 0;
}

/* ------------------------------------------------------------------------ */
/* Ops                                                                        */

static int op_config(struct replay *rp, json_t *o)
{
        static const char *const keys[] = { "op", "channel_capacity", "relist_threshold_s",
                                            "evented", NULL };
        json_t *v;

        if (rp->started)
                return fail(rp, "op \"config\" is only allowed as the first op");
        if (check_keys(rp, o, "op \"config\"", keys) < 0)
                return -EINVAL;
        v = json_object_get(o, "evented");
        if (v) {
                if (!json_is_boolean(v))
                        return fail(rp, "op \"config\": field \"evented\" must be true or false");
                rp->evented_mode = json_is_true(v);
        }
        v = json_object_get(o, "channel_capacity");
        if (v) {
                if (!json_is_integer(v) || json_integer_value(v) < 1 ||
                    json_integer_value(v) > 1000000)
                        return fail(rp, "op \"config\": field \"channel_capacity\" must be an "
                                        "integer from 1 to 1000000");
                rp->channel_capacity = (unsigned)json_integer_value(v);
        }
        v = json_object_get(o, "relist_threshold_s");
        if (v) {
                if (!json_is_number(v) || !(json_number_value(v) > 0) || json_number_value(v) > 1e9)
                        return fail(rp, "op \"config\": field \"relist_threshold_s\" must be a "
                                        "positive number of seconds");
                rp->relist_threshold = llround(json_number_value(v) * (double)KC_NSEC_PER_SEC);
                rp->relist_threshold_set = true;
        }
        return 0;
}

static int parse_ctr(struct replay *rp, json_t *c, const char *what,
                     struct kc_sim_container_spec *ret)
{
        static const char *const keys[] = { "id", "name", "state", "exit_code", NULL };
        const char *state = NULL;
        json_t *v;
        int s;

        if (!json_is_object(c))
                return fail(rp, "%s must be an object", what);
        if (check_keys(rp, c, what, keys) < 0 ||
            get_string(rp, c, what, "id", true, &ret->id) < 0 ||
            get_string(rp, c, what, "name", false, &ret->name) < 0 ||
            get_string(rp, c, what, "state", true, &state) < 0)
                return -EINVAL;
        s = kc_container_state_from_string(state);
        if (s < 0)
                return fail(rp,
                            "%s: unknown state \"%s\" (want created, running, exited or "
                            "unknown)",
                            what, state);
        ret->state = s;
        v = json_object_get(c, "exit_code");
        if (v) {
                if (!json_is_integer(v) || json_integer_value(v) < INT32_MIN ||
                    json_integer_value(v) > INT32_MAX)
                        return fail(rp, "%s: field \"exit_code\" must be a 32-bit integer", what);
                ret->exit_code = (int32_t)json_integer_value(v);
        }
        return 0;
}

/* Parses <what>.<key> (an array of CTR, optional unless @required) into *ret / *ret_n. */
static int parse_ctrs(struct replay *rp, json_t *pod, const char *what, const char *key,
                      bool required, struct kc_sim_container_spec **ret, size_t *ret_n)
{
        json_t *arr = json_object_get(pod, key), *c;
        char what_ctr[128];
        size_t j;

        if (!arr) {
                if (required)
                        return fail(rp, "%s: missing field \"%s\"", what, key);
                return 0;
        }
        if (!json_is_array(arr))
                return fail(rp, "%s: field \"%s\" must be an array", what, key);
        *ret = calloc(json_array_size(arr) + 1, sizeof(**ret));
        if (!*ret)
                return -ENOMEM;
        json_array_foreach (arr, j, c) {
                snprintf(what_ctr, sizeof(what_ctr), "%s.%s[%zu]", what, key, j);
                if (parse_ctr(rp, c, what_ctr, &(*ret)[j]) < 0)
                        return -EINVAL;
        }
        *ret_n = json_array_size(arr);
        return 0;
}

/* Frees what parse_pod() allocated; the strings belong to the JSON document. */
static void pod_spec_done(struct kc_sim_pod_spec *s)
{
        free((void *)s->ips);
        free((void *)s->containers);
        free((void *)s->sandboxes);
        *s = (struct kc_sim_pod_spec){ 0 };
}

/*
 * Parses one POD (named @what in errors) into @s, whose strings point into
 * @pod. Call pod_spec_done() on @s afterwards, whatever this returns.
 */
static int parse_pod(struct replay *rp, json_t *pod, const char *what, struct kc_sim_pod_spec *s)
{
        static const char *const pod_keys[] = { "id",         "name",      "namespace", "ips",
                                                "containers", "sandboxes", NULL };
        struct kc_sim_container_spec *ctrs = NULL, *sbs = NULL;
        json_t *ips, *ip;
        size_t k;
        int r;

        if (!json_is_object(pod))
                return fail(rp, "%s must be an object", what);
        if (check_keys(rp, pod, what, pod_keys) < 0 ||
            get_string(rp, pod, what, "id", true, &s->id) < 0 ||
            get_string(rp, pod, what, "name", false, &s->name) < 0 ||
            get_string(rp, pod, what, "namespace", false, &s->namespace) < 0)
                return -EINVAL;
        ips = json_object_get(pod, "ips");
        if (ips) {
                const char **v;

                if (!json_is_array(ips))
                        return fail(rp, "%s: field \"ips\" must be an array of strings", what);
                v = calloc(json_array_size(ips) + 1, sizeof(*v));
                if (!v)
                        return -ENOMEM;
                s->ips = v;
                json_array_foreach (ips, k, ip) {
                        if (!json_is_string(ip))
                                return fail(rp, "%s.ips[%zu] must be a string", what, k);
                        v[k] = json_string_value(ip);
                }
                s->n_ips = json_array_size(ips);
        }
        r = parse_ctrs(rp, pod, what, "containers", true, &ctrs, &s->n_containers);
        s->containers = ctrs;
        if (r < 0)
                return r;
        r = parse_ctrs(rp, pod, what, "sandboxes", false, &sbs, &s->n_sandboxes);
        s->sandboxes = sbs;
        return r;
}

static int op_runtime(struct replay *rp, json_t *o)
{
        static const char *const keys[] = { "op", "pods", NULL };
        json_t *pods = json_object_get(o, "pods"), *pod;
        struct kc_sim_pod_spec *specs = NULL;
        size_t i, n = 0;
        int r;

        if (check_keys(rp, o, "op \"runtime\"", keys) < 0)
                return -EINVAL;
        if (!pods)
                return fail(rp, "op \"runtime\": missing field \"pods\"");
        if (!json_is_array(pods))
                return fail(rp, "op \"runtime\": field \"pods\" must be an array");
        specs = calloc(json_array_size(pods) + 1, sizeof(*specs));
        if (!specs)
                return -ENOMEM;
        r = 0;
        json_array_foreach (pods, i, pod) {
                char what[32];

                n = i + 1;
                snprintf(what, sizeof(what), "pods[%zu]", i);
                r = parse_pod(rp, pod, what, &specs[i]);
                if (r < 0)
                        break;
        }
        if (r == 0) {
                r = kc_sim_set_pods(rp->sim, specs, json_array_size(pods));
                if (r < 0)
                        fail(rp, "op \"runtime\": %s", strerror(-r));
        }
        for (i = 0; i < n; i++)
                pod_spec_done(&specs[i]);
        free(specs);
        return r;
}

/* The event source of the replay's EventedPLEG: never opened, the replay feeds events itself. */
static int noop_source_open(void *self,
                            void (*on_event)(void *ud, const struct kc_container_event *ev),
                            void (*on_close)(void *ud, int r, const struct kc_runtime_error *err),
                            void *ud, void **ret_handle, struct kc_runtime_error *err)
{
        (void)self, (void)on_event, (void)on_close, (void)ud, (void)ret_handle;
        return kc_runtime_error_set(err, -EOPNOTSUPP, KC_RUNTIME_UNIMPLEMENTED,
                                    "pleg-replay feeds CRI events from its script");
}

static void noop_source_close(void *self, void *handle)
{
        (void)self, (void)handle;
}

static const struct kc_container_event_source_ops noop_source_ops = {
        .open = noop_source_open,
        .close = noop_source_close,
};

static int op_cri_event(struct replay *rp, json_t *o)
{
        static const char *const keys[] = {
                "op", "type", "container", "created_at_ns", "pod", NULL
        };
        _cleanup_free_ struct kc_cri_container *ctrs = NULL;
        struct kc_sim_pod_spec spec = { 0 };
        struct kc_container_event ev = { 0 };
        struct kc_pod_sandbox sandbox;
        const char *type = NULL;
        json_t *v, *pod;
        int t, r;
        size_t i;

        if (!rp->evented)
                return fail(rp, "op \"cri_event\" needs evented mode: {\"op\":\"config\","
                                "\"evented\":true} as the first op");
        if (check_keys(rp, o, "op \"cri_event\"", keys) < 0 ||
            get_string(rp, o, "op \"cri_event\"", "type", true, &type) < 0 ||
            get_string(rp, o, "op \"cri_event\"", "container", true, &ev.container_id) < 0)
                return -EINVAL;
        for (t = 0; t < _KC_CONTAINER_EVENT_TYPE_MAX; t++)
                if (strcmp(type, kc_container_event_type_to_string(t)) == 0)
                        break;
        if (t == _KC_CONTAINER_EVENT_TYPE_MAX)
                return fail(rp,
                            "op \"cri_event\": unknown type \"%s\" (want CONTAINER_CREATED_EVENT, "
                            "CONTAINER_STARTED_EVENT, CONTAINER_STOPPED_EVENT or "
                            "CONTAINER_DELETED_EVENT)",
                            type);
        ev.type = t;
        v = json_object_get(o, "created_at_ns");
        if (!v)
                return fail(rp, "op \"cri_event\": missing field \"created_at_ns\"");
        if (!json_is_integer(v) || json_integer_value(v) < -REPLAY_CLOCK_START ||
            json_integer_value(v) > INT64_C(1000000000) * KC_NSEC_PER_SEC)
                return fail(rp, "op \"cri_event\": field \"created_at_ns\" must be an integer "
                                "from -1.7e18 to 1e18 (ns from the clock start)");
        ev.created_at = REPLAY_CLOCK_START + json_integer_value(v);

        pod = json_object_get(o, "pod");
        if (pod) {
                r = parse_pod(rp, pod, "op \"cri_event\": pod", &spec);
                if (r == 0 && spec.n_sandboxes != 1)
                        r = fail(rp, "op \"cri_event\": pod: field \"sandboxes\" must hold exactly "
                                     "one sandbox (the event's sandbox status)");
                if (r == 0) {
                        ctrs = calloc(spec.n_containers + 1, sizeof(*ctrs));
                        if (!ctrs)
                                r = -ENOMEM;
                }
                if (r < 0) {
                        pod_spec_done(&spec);
                        return r;
                }
                sandbox = (struct kc_pod_sandbox){
                        .id = spec.sandboxes[0].id,
                        .metadata = { .name = spec.name,
                                      .uid = spec.id,
                                      .namespace = spec.namespace },
                        .state = spec.sandboxes[0].state == KC_CONTAINER_STATE_RUNNING
                                         ? KC_SANDBOX_STATE_READY
                                         : KC_SANDBOX_STATE_NOTREADY,
                        .ip = spec.n_ips > 0 ? spec.ips[0] : NULL,
                        .additional_ips = spec.n_ips > 1 ? spec.ips + 1 : NULL,
                        .n_additional_ips = spec.n_ips > 1 ? spec.n_ips - 1 : 0,
                };
                for (i = 0; i < spec.n_containers; i++)
                        ctrs[i] = (struct kc_cri_container){
                                .id = spec.containers[i].id,
                                .metadata = { .name = spec.containers[i].name },
                                .state = spec.containers[i].state,
                                .exit_code = spec.containers[i].exit_code,
                        };
                ev.pod_sandbox_id = sandbox.id;
                ev.pod_uid = spec.id;
                ev.pod_name = spec.name;
                ev.pod_namespace = spec.namespace;
                ev.sandbox = &sandbox;
                ev.containers = ctrs;
                ev.n_containers = spec.n_containers;
        }

        r = kc_evented_pleg_process_event(rp->evented, &ev);
        pod_spec_done(&spec);
        if (r == -EBADMSG) /* malformed: skipped with a log, as upstream */
                return 0;
        if (r < 0)
                return fail(rp, "op \"cri_event\": %s", strerror(-r));
        return 0;
}

static int op_fail(struct replay *rp, json_t *o)
{
        static const char *const keys[] = { "op", "call", "pod", "error", "times", NULL };
        const char *call = NULL, *pod = NULL, *error = NULL;
        json_int_t times = 1;
        json_t *v;
        int r;

        if (check_keys(rp, o, "op \"fail\"", keys) < 0 ||
            get_string(rp, o, "op \"fail\"", "call", true, &call) < 0 ||
            get_string(rp, o, "op \"fail\"", "error", true, &error) < 0 ||
            get_string(rp, o, "op \"fail\"", "pod", false, &pod) < 0)
                return -EINVAL;
        if (strcmp(call, "GetPods") != 0 && strcmp(call, "GetPodStatus") != 0)
                return fail(rp, "op \"fail\": unknown call \"%s\" (want GetPods or GetPodStatus)",
                            call);
        if (pod && strcmp(call, "GetPods") == 0)
                return fail(rp, "op \"fail\": field \"pod\" only applies to GetPodStatus");
        v = json_object_get(o, "times");
        if (v) {
                if (!json_is_integer(v) || json_integer_value(v) < 1 ||
                    json_integer_value(v) > 1000000)
                        return fail(rp, "op \"fail\": field \"times\" must be an integer from 1 "
                                        "to 1000000");
                times = json_integer_value(v);
        }
        r = kc_sim_inject_fault(rp->sim, call, pod, error, (unsigned)times);
        if (r < 0)
                return fail(rp, "op \"fail\": %s", strerror(-r));
        return 0;
}

static int op_advance(struct replay *rp, json_t *o)
{
        static const char *const keys[] = { "op", "seconds", "ns", NULL };
        json_t *s = json_object_get(o, "seconds"), *ns = json_object_get(o, "ns");
        int64_t d;

        if (check_keys(rp, o, "op \"advance\"", keys) < 0)
                return -EINVAL;
        if (!!s == !!ns)
                return fail(rp,
                            "op \"advance\": exactly one of \"seconds\" and \"ns\" is required");
        if (s) {
                if (!json_is_number(s) || !(json_number_value(s) >= 0) ||
                    json_number_value(s) > 1e9)
                        return fail(rp, "op \"advance\": field \"seconds\" must be a number "
                                        "from 0 to 1e9");
                d = llround(json_number_value(s) * (double)KC_NSEC_PER_SEC);
        } else {
                if (!json_is_integer(ns) || json_integer_value(ns) < 0 ||
                    json_integer_value(ns) > INT64_C(1000000000) * KC_NSEC_PER_SEC)
                        return fail(rp, "op \"advance\": field \"ns\" must be an integer from 0 "
                                        "to 1e18");
                d = json_integer_value(ns);
        }
        return kc_fake_clock_advance(rp->clock, d);
}

/* A number as a JSON integer when it is one, else as a real. */
static json_t *json_number_of(double v)
{
        if (isfinite(v) && v == floor(v) && fabs(v) < 9e15)
                return json_integer((json_int_t)v);
        return json_real(v);
}

/* A kc_json_item_fn: the IP string @p i of a struct kc_pod_status. */
static int status_ip_item(const void *status, size_t i, json_t **ret)
{
        const struct kc_pod_status *s = status;

        *ret = json_string(s->ips[i]);
        return 0;
}

/* A kc_json_item_fn: container @p i of a struct kc_pod_status. */
static int status_container_item(const void *status, size_t i, json_t **ret)
{
        const struct kc_container_status *c =
                &((const struct kc_pod_status *)status)->containers[i];

        *ret = json_pack("{s:s, s:s, s:s, s:i}", "id", c->id ? c->id : "", "name",
                         c->name ? c->name : "", "state", kc_container_state_to_string(c->state),
                         "exit_code", (int)c->exit_code);
        return 0;
}

/* A kc_json_item_fn: sandbox @p i of a struct kc_pod_status. */
static int status_sandbox_item(const void *status, size_t i, json_t **ret)
{
        const struct kc_sandbox_status *sb = &((const struct kc_pod_status *)status)->sandboxes[i];

        *ret = json_pack("{s:s, s:s}", "id", sb->id ? sb->id : "", "state",
                         sb->state == KC_SANDBOX_STATE_READY ? "READY" : "NOTREADY");
        return 0;
}

static json_t *status_to_json(const struct kc_pod_status *s)
{
        json_t *o, *ips = NULL, *ctrs = NULL, *sbs = NULL;

        if (!s)
                return json_null();
        (void)kc_json_array_build(s->n_ips, status_ip_item, s, &ips);
        (void)kc_json_array_build(s->n_containers, status_container_item, s, &ctrs);
        (void)kc_json_array_build(s->n_sandboxes, status_sandbox_item, s, &sbs);
        o = json_object();
        json_object_set_new(o, "id", json_string(s->id ? s->id : ""));
        json_object_set_new(o, "ips", ips);
        json_object_set_new(o, "containers", ctrs);
        json_object_set_new(o, "sandboxes", sbs);
        return o;
}

static int op_events(struct replay *rp, json_t *out)
{
        json_t *arr = json_array();
        void *item;

        while (kc_chan_pop_sc(rp->events, &item, 0) == 0) {
                struct kc_pleg_event *e = item;

                json_array_append_new(arr, json_pack("{s:s, s:s, s:s}", "pod", e->pod_id, "type",
                                                     kc_pleg_event_type_to_string(e->type), "data",
                                                     e->data));
                kc_pleg_event_free(e);
        }
        return json_object_set_new(out, "events", arr) < 0 ? -ENOMEM : 0;
}

static int op_healthy(struct replay *rp, json_t *out)
{
        _cleanup_free_ char *err = NULL;
        bool ok = kc_generic_pleg_healthy(rp->pleg, &err);

        json_object_set_new(out, "healthy", json_boolean(ok));
        json_object_set_new(out, "error", err ? json_string(err) : json_null());
        if (rp->evented) {
                /* The daemon's second check, "EventedPLEG" (UPSTREAM.md §4.6). */
                _cleanup_free_ char *eerr = NULL;

                ok = kc_evented_pleg_healthy(rp->evented, &eerr);
                json_object_set_new(out, "evented",
                                    json_pack("{s:b, s:o}", "healthy", ok, "error",
                                              eerr ? json_string(eerr) : json_null()));
        }
        return 0;
}

static int op_cache(struct replay *rp, json_t *o, json_t *out)
{
        static const char *const keys[] = { "op", "pod", NULL };
        _cleanup_(kc_pod_status_unrefp) struct kc_pod_status *status = NULL;
        _cleanup_free_ char *err = NULL;
        const char *pod = NULL;
        int64_t modified = 0;
        int r;

        if (check_keys(rp, o, "op \"cache\"", keys) < 0 ||
            get_string(rp, o, "op \"cache\"", "pod", true, &pod) < 0)
                return -EINVAL;
        r = kc_pod_cache_get(rp->cache, pod, &status, &err);
        if (r < 0)
                return fail(rp, "op \"cache\": %s", strerror(-r));
        json_object_set_new(out, "found", json_boolean(r > 0));
        json_object_set_new(out, "error", err ? json_string(err) : json_null());
        json_object_set_new(out, "status", status_to_json(status));
        /* Single-threaded: nothing writes the cache between the two reads. */
        json_object_set_new(out, "modified_ns",
                            kc_pod_cache_get_modified(rp->cache, pod, &modified) > 0
                                    ? json_integer((json_int_t)(modified - REPLAY_CLOCK_START))
                                    : json_null());
        return 0;
}

static int op_ready(struct replay *rp, json_t *o, json_t *out)
{
        static const char *const keys[] = { "op", "pod", "min_s", NULL };
        _cleanup_(kc_pod_status_unrefp) struct kc_pod_status *status = NULL;
        _cleanup_free_ char *err = NULL;
        const char *pod = NULL;
        json_t *v;
        int r;

        if (check_keys(rp, o, "op \"ready\"", keys) < 0 ||
            get_string(rp, o, "op \"ready\"", "pod", true, &pod) < 0)
                return -EINVAL;
        v = json_object_get(o, "min_s");
        if (!v)
                return fail(rp, "op \"ready\": missing field \"min_s\"");
        if (!json_is_number(v) || !(fabs(json_number_value(v)) <= 1e9))
                return fail(rp, "op \"ready\": field \"min_s\" must be a number from -1e9 to 1e9");
        r = kc_pod_cache_try_get_newer_than(
                rp->cache, pod,
                REPLAY_CLOCK_START + llround(json_number_value(v) * (double)KC_NSEC_PER_SEC),
                &status, &err);
        if (r < 0 && r != -EAGAIN)
                return fail(rp, "op \"ready\": %s", strerror(-r));
        json_object_set_new(out, "ready", json_boolean(r == 0));
        return 0;
}

static void add_state_count(const char *label, double v, void *userdata)
{
        json_object_set_new(userdata, label, json_number_of(v));
}

static int op_metrics(struct replay *rp, json_t *out)
{
        const struct kc_kubelet_metrics *m = &rp->metrics;
        json_t *states = json_object();

        json_object_set_new(out, "kubelet_pleg_discard_events",
                            json_number_of(kc_counter_value(m->pleg_discard_events)));
        json_object_set_new(out, "kubelet_pleg_relist_duration_seconds_count",
                            json_integer((json_int_t)kc_histogram_count(m->pleg_relist_duration)));
        json_object_set_new(out, "kubelet_pleg_relist_interval_seconds_count",
                            json_integer((json_int_t)kc_histogram_count(m->pleg_relist_interval)));
        json_object_set_new(out, "kubelet_pleg_last_seen_seconds",
                            json_number_of(kc_gauge_value(m->pleg_last_seen)));
        json_object_set_new(out, "kubelet_running_pods",
                            json_number_of(kc_gauge_value(m->running_pods)));
        kc_gauge_vec_foreach(m->running_containers, add_state_count, states);
        json_object_set_new(out, "kubelet_running_containers", states);
        if (rp->evented)
                json_object_set_new(out, "kubelet_evented_pleg_connection_latency_seconds_count",
                                    json_integer((json_int_t)kc_histogram_count(
                                            m->evented_pleg_connection_latency)));
        return 0;
}

static int op_calls(struct replay *rp, json_t *out)
{
        _cleanup_free_ struct kc_sim_call_count *counts = NULL;
        json_t *per_pod = json_object();
        uint64_t get_pods = 0;
        size_t n = 0, i;
        int r;

        r = kc_sim_call_counts(rp->sim, &counts, &n);
        if (r < 0) {
                json_decref(per_pod);
                return fail(rp, "op \"calls\": %s", strerror(-r));
        }
        for (i = 0; i < n; i++) {
                if (strcmp(counts[i].op, "GetPods") == 0)
                        get_pods += counts[i].count;
                else if (strcmp(counts[i].op, "GetPodStatus") == 0)
                        json_object_set_new(per_pod, counts[i].key,
                                            json_integer((json_int_t)counts[i].count));
        }
        json_object_set_new(out, "GetPods", json_integer((json_int_t)get_pods));
        json_object_set_new(out, "GetPodStatus", per_pod);
        return 0;
}

/*
 * The generic PLEG's evented_in_use callback. EventedPLEG's own flag is set
 * by kc_evented_pleg_start(), which starts threads the replay does without:
 * in evented mode EventedPLEG counts as in use from the start.
 */
static bool replay_evented_in_use(void *userdata)
{
        const struct replay *rp = userdata;

        return rp->evented_mode;
}

/* Creates the PLEG and its surroundings once the config (if any) is known. */
static int replay_setup(struct replay *rp)
{
        struct kc_evented_pleg_config ecfg;
        struct kc_generic_pleg_config cfg;
        int r;

        r = kc_chan_new(&rp->events, rp->channel_capacity, kc_pleg_event_free_item);
        if (r < 0)
                return r;
        r = kc_pod_cache_new(&rp->cache);
        if (r < 0)
                return r;
        r = kc_metrics_registry_new(&rp->registry);
        if (r < 0)
                return r;
        r = kc_kubelet_metrics_register(rp->registry, &rp->metrics);
        if (r < 0)
                return r;
        cfg = (struct kc_generic_pleg_config){
                .runtime = kc_sim_pod_runtime(rp->sim),
                .events = rp->events,
                .cache = rp->cache,
                .clock = rp->clock,
                .metrics = &rp->metrics,
                .relist_period_ns = KC_GENERIC_PLEG_RELIST_PERIOD,
                .relist_threshold_ns = rp->relist_threshold_set ? rp->relist_threshold
                                                                : KC_GENERIC_PLEG_RELIST_THRESHOLD,
        };
        if (!rp->evented_mode)
                return kc_generic_pleg_new(&cfg, &rp->pleg);

        /* The EventedPLEG gate on, EventedPLEG in use (UPSTREAM.md §4.1, §4.7). */
        kc_pod_cache_set_newer_wins(rp->cache, true);
        cfg.relist_period_ns = KC_EVENTED_GENERIC_RELIST_PERIOD;
        if (!rp->relist_threshold_set)
                cfg.relist_threshold_ns = KC_EVENTED_GENERIC_RELIST_THRESHOLD;
        cfg.evented_in_use = replay_evented_in_use;
        cfg.evented_userdata = rp;
        r = kc_generic_pleg_new(&cfg, &rp->pleg);
        if (r < 0)
                return r;
        ecfg = (struct kc_evented_pleg_config){
                .generic = rp->pleg,
                .source = { .ops = &noop_source_ops },
                .events = rp->events,
                .cache = rp->cache,
                .clock = rp->clock,
                .metrics = &rp->metrics,
        };
        return kc_evented_pleg_new(&ecfg, &rp->evented);
}

static void replay_done(struct replay *rp)
{
        rp->evented = kc_evented_pleg_free(rp->evented);
        rp->pleg = kc_generic_pleg_free(rp->pleg);
        rp->registry = kc_metrics_registry_free(rp->registry);
        rp->cache = kc_pod_cache_free(rp->cache);
        rp->events = kc_chan_free(rp->events);
        rp->sim = kc_sim_free(rp->sim);
        rp->clock = kc_clock_free(rp->clock);
}

/* Runs one script line. Returns 0, or -EINVAL with rp->error set. */
static int replay_line(struct replay *rp, const char *text)
{
        _cleanup_json_ json_t *o = NULL, *out = NULL;
        json_error_t jerr;
        const char *op;
        json_t *v;
        int r;

        o = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
        if (!o)
                return fail(rp, "invalid JSON: %s (column %d)", jerr.text, jerr.column);
        if (!json_is_object(o))
                return fail(rp, "expected a JSON object");
        v = json_object_get(o, "op");
        if (!v)
                return fail(rp, "missing field \"op\"");
        if (!json_is_string(v))
                return fail(rp, "field \"op\" must be a string");
        op = json_string_value(v);

        if (strcmp(op, "config") == 0)
                return op_config(rp, o);
        if (!rp->started) {
                rp->started = true;
                r = replay_setup(rp);
                if (r < 0)
                        return fail(rp, "setting up PLEG: %s", strerror(-r));
        }

        if (strcmp(op, "runtime") == 0)
                return op_runtime(rp, o);
        if (strcmp(op, "fail") == 0)
                return op_fail(rp, o);
        if (strcmp(op, "advance") == 0)
                return op_advance(rp, o);
        if (strcmp(op, "cri_event") == 0)
                return op_cri_event(rp, o);
        if (strcmp(op, "relist") == 0) {
                static const char *const keys[] = { "op", NULL };

                if (check_keys(rp, o, "op \"relist\"", keys) < 0)
                        return -EINVAL;
                (void)kc_generic_pleg_relist(rp->pleg); /* failures are PLEG's to report */
                return 0;
        }

        out = json_pack("{s:I, s:s}", "line", (json_int_t)rp->line, "op", op);
        if (!out)
                return -ENOMEM;
        if (strcmp(op, "events") == 0 || strcmp(op, "healthy") == 0 || strcmp(op, "metrics") == 0 ||
            strcmp(op, "calls") == 0) {
                static const char *const keys[] = { "op", NULL };
                char what[32];

                snprintf(what, sizeof(what), "op \"%s\"", op);
                if (check_keys(rp, o, what, keys) < 0)
                        return -EINVAL;
                r = strcmp(op, "events") == 0    ? op_events(rp, out)
                    : strcmp(op, "healthy") == 0 ? op_healthy(rp, out)
                    : strcmp(op, "metrics") == 0 ? op_metrics(rp, out)
                                                 : op_calls(rp, out);
        } else if (strcmp(op, "cache") == 0) {
                r = op_cache(rp, o, out);
        } else if (strcmp(op, "ready") == 0) {
                r = op_ready(rp, o, out);
        } else {
                return fail(rp, "unknown op \"%s\"", op);
        }
        if (r < 0)
                return r;

        {
                _cleanup_free_ char *s = json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER);

                if (!s)
                        return -ENOMEM;
                puts(s);
        }
        return 0;
}

static void usage(FILE *f)
{
        fputs("usage: cubelet pleg-replay [FILE|-]\n"
              "\n"
              "Reads a JSON Lines script (default: standard input) and drives a GenericPLEG\n"
              "against the simulated runtime and a fake clock; in evented mode an EventedPLEG\n"
              "too, fed CRI events by the script. See docs/pleg-replay.md.\n",
              f);
}

int kc_cmd_pleg_replay(int argc, char **argv)
{
        struct replay rp = {
                .channel_capacity = KC_PLEG_CHANNEL_CAPACITY,
        };
        _cleanup_free_ char *buf = NULL;
        const char *path = "-";
        size_t cap = 0;
        ssize_t len;
        FILE *in;
        int r, status = 0;

        if (argc > 2) {
                usage(stderr);
                return 2;
        }
        if (argc == 2) {
                if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
                        usage(stdout);
                        return 0;
                }
                path = argv[1];
        }
        if (strcmp(path, "-") == 0) {
                in = stdin;
        } else {
                in = fopen(path, "re");
                if (!in) {
                        fprintf(stderr, "pleg-replay: %s: %s\n", path, strerror(errno));
                        return 2;
                }
        }

        r = kc_fake_clock_new(&rp.clock, REPLAY_CLOCK_START);
        if (r >= 0)
                r = kc_sim_new(rp.clock, &rp.sim);
        if (r < 0) {
                fprintf(stderr, "pleg-replay: %s\n", strerror(-r));
                status = 1;
                goto out;
        }

        while ((len = getline(&buf, &cap, in)) >= 0) {
                const char *p = buf;

                rp.line++;
                if (len > 0 && buf[len - 1] == '\n')
                        buf[--len] = '\0';
                while (*p == ' ' || *p == '\t' || *p == '\r')
                        p++;
                if (*p == '\0' || *p == '#')
                        continue;
                if ((size_t)len != strlen(buf)) {
                        fail(&rp, "line contains a NUL byte");
                        r = -EINVAL;
                } else {
                        rp.error[0] = '\0';
                        r = replay_line(&rp, p);
                }
                if (r < 0) {
                        fflush(stdout);
                        fprintf(stderr, "pleg-replay: line %lu: %s\n", rp.line,
                                rp.error[0] ? rp.error : strerror(-r));
                        status = 2;
                        goto out;
                }
        }
        if (ferror(in)) {
                fprintf(stderr, "pleg-replay: %s: read error\n", path);
                status = 2;
        }
out:
        fflush(stdout);
        if (in != stdin)
                fclose(in);
        replay_done(&rp);
        return status;
}
