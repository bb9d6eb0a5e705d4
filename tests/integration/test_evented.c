/* SPDX-License-Identifier: Apache-2.0 */
/*
 * EventedPLEG end to end over a real gRPC stack (issue 6, item 4): the test
 * CRI server of cri-server/ (Node.js, @grpc/grpc-js, loading our own
 * runtime/cri/api.proto) on a unix socket, the CRI client kc_cri on it, the
 * runtime manager, GenericPLEG at 300 s / 10 min and EventedPLEG reading
 * GetContainerEvents, all on the real clock with short periods (re-probe
 * every second). Each test spawns its own server, `node server.js PROTO
 * SOCKET`, and drives it through the JSON-lines control channel on the
 * child's stdin and stdout (README.md in cri-server/):
 *
 *   1. CRI events become PLEG events and cache entries, in order;
 *   2. a stale event (older created_at) is refused: no PLEG event, the cache
 *      unchanged; an equal timestamp overwrites;
 *   3. DELETED of a container emits Died + Removed; DELETED of the sandbox
 *      also clears the pod's cache entry;
 *   4. malformed events (no sandbox status, no metadata) are skipped and the
 *      stream goes on;
 *   5. a dropped stream is retried, with a forced relist (ListContainers
 *      calls on the server) each time, and reconnects;
 *   6. refused streams: after 5 consecutive failures the fallback, with
 *      GenericPLEG relisting every second; once the server accepts streams
 *      again the re-probe switches back to evented mode (stats, metrics,
 *      logs);
 *   7. a runtime answering UNIMPLEMENTED (containerd 1.6) gets the fallback,
 *      and the switch back once it implements the stream.
 *
 * The fixture "criserver" (cri-server/setup.sh) installs the server's
 * packages with `npm ci` from the committed lockfile and writes
 * $KC_CRI_SERVER_ENV. Nothing here skips.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/chan.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/log.h"
#include "cri_server_client.h"
#include "integ.h"
#include "metrics/kubelet_metrics.h"
#include "metrics/registry.h"
#include "pleg/event.h"
#include "pleg/evented.h"
#include "pleg/generic.h"
#include "runtime/cache.h"
#include "runtime/container.h"
#include "runtime/cri.h"
#include "runtime/error.h"
#include "runtime/manager.h"
#include "runtime/runtime_service.h"
#include "runtime/sync_pod.h"

#define MS (1000 * 1000LL)
#define REPROBE_NS (1000 * MS)
/* Every wait below is a bound, scaled by KC_TEST_TIMEOUT_MULTIPLIER. */
#define WAIT_EVENT_MS 5000
#define WAIT_FALLBACK_MS 20000

static struct kc_cri_server_env env;

/* ------------------------------------------------------------------------ */
/* The server process and its control channel (tests/harness)                 */

/* A bound of the control channel, scaled by KC_TEST_TIMEOUT_MULTIPLIER. */
static int64_t scaled_ms(long ms)
{
        return (int64_t)(ms * kc_test_timeout_multiplier());
}

static void server_start(struct kc_cri_server *s)
{
        char why[2 * PATH_MAX + 128];
        char *line = NULL;

        /* node starts, loads the proto and binds: generous on a loaded machine. */
        if (kc_cri_server_start(s, &env, "/tmp/cubelet-evt.XXXXXX", false, scaled_ms(30000), &line,
                                why, sizeof(why)) < 0)
                fail_msg("%s", why);
        printf("server: %s\n", line);
        free(line);
}

static void server_stop(struct kc_cri_server *s)
{
        kc_cri_server_stop(s, false);
}

/*
 * Sends @p cmd (stolen) and returns the reply (to json_decref). Fails the
 * test unless the reply says ok, when @p must_ok.
 */
static json_t *server_call_x(struct kc_cri_server *s, json_t *cmd, bool must_ok)
{
        char why[1024];
        json_t *reply = NULL;

        if (kc_cri_server_request(s, cmd, scaled_ms(30000), &reply, why, sizeof(why)) < 0)
                fail_msg("%s", why);
        if (must_ok && !json_is_true(json_object_get(reply, "ok"))) {
                char *text = json_dumps(reply, JSON_COMPACT);

                fail_msg("server: a command failed: %s", text ? text : "?");
        }
        return reply;
}

static json_t *server_call(struct kc_cri_server *s, json_t *cmd)
{
        return server_call_x(s, cmd, true);
}

/* Sends @p cmd (stolen), checks ok and drops the reply. */
static void server_do(struct kc_cri_server *s, json_t *cmd)
{
        json_decref(server_call(s, cmd));
}

/* The server's count of @p method calls. */
static int64_t server_calls(struct kc_cri_server *s, const char *method)
{
        json_t *r = server_call(s, json_pack("{s:s}", "cmd", "stats"));
        int64_t n = json_integer_value(json_object_get(json_object_get(r, "calls"), method));

        json_decref(r);
        return n;
}

static int64_t server_stat(struct kc_cri_server *s, const char *key)
{
        json_t *r = server_call(s, json_pack("{s:s}", "cmd", "stats"));
        int64_t n = json_integer_value(json_object_get(r, key));

        json_decref(r);
        return n;
}

/* ------------------------------------------------------------------------ */
/* State and events in the server's JSON                                      */

static json_t *ns_json(int64_t ns)
{
        char b[32];

        snprintf(b, sizeof(b), "%" PRId64, ns);
        return json_string(b);
}

struct tc {
        const char *id;
        const char *name;
        const char *state; /* CONTAINER_CREATED, _RUNNING, _EXITED */
        int64_t created, started, finished;
        int exit_code;
};

/* A pod with one sandbox ("SANDBOX_READY" or "SANDBOX_NOTREADY") and @p n containers. */
static json_t *pod_json(const char *uid, const char *sandbox, const char *sb_state, int64_t created,
                        const char *ip, const struct tc *c, size_t n)
{
        json_t *cs = json_array();

        for (size_t i = 0; i < n; i++)
                json_array_append_new(cs, json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:i}", "id",
                                                    c[i].id, "name", c[i].name, "state", c[i].state,
                                                    "created_at", ns_json(c[i].created),
                                                    "started_at", ns_json(c[i].started),
                                                    "finished_at", ns_json(c[i].finished),
                                                    "exit_code", c[i].exit_code));
        return json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:o, s:s}, s:o}", "uid", uid, "name", uid,
                         "namespace", "evt", "sandbox", "id", sandbox, "state", sb_state,
                         "created_at", ns_json(created), "ip", ip ? ip : "", "containers", cs);
}

static void put_pod(struct kc_cri_server *s, json_t *pod)
{
        server_do(s, json_pack("{s:s, s:o}", "cmd", "put_pod", "pod", pod));
}

/*
 * Sends one event on every open stream: @p pod is the uid of a pod of the
 * state (a string) or an inline pod; @p malformed NULL, "no_sandbox" or
 * "no_metadata". Checks that exactly one stream got it.
 */
static void send_event(struct kc_cri_server *s, const char *type, const char *container, int64_t ts,
                       json_t *pod, const char *malformed)
{
        json_t *cmd = json_pack("{s:s, s:s, s:s, s:o, s:o}", "cmd", "event", "type", type,
                                "container", container, "created_at", ns_json(ts), "pod", pod);
        json_t *r;

        if (malformed)
                json_object_set_new(cmd, "malformed", json_string(malformed));
        r = server_call(s, cmd);
        assert_int_equal(json_integer_value(json_object_get(r, "streams")), 1);
        json_decref(r);
}

/* ------------------------------------------------------------------------ */
/* The node side                                                              */

struct fixture {
        struct kc_cri_server srv;
        struct kc_metrics_registry *registry;
        struct kc_kubelet_metrics metrics;
        struct kc_chan *events;
        struct kc_pod_cache *cache;
        struct kc_cri *cri;
        struct kc_runtime_manager *manager;
        struct kc_generic_pleg *generic;
        struct kc_evented_pleg *evented;
        char log_path[96];
        FILE *log;
        int64_t base; /* wall ns when the PLEGs were started */
};

/*
 * GenericPLEG's evented_in_use callback: GenericPLEG is built first, so it
 * gets the fixture and asks the EventedPLEG once there is one, through
 * kc_evented_pleg_in_use_cb (as core/daemon.c does).
 */
static bool fixture_evented_in_use(void *userdata)
{
        struct fixture *f = userdata;

        return f->evented && kc_evented_pleg_in_use_cb(f->evented);
}

static int fixture_setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        struct kc_version_result v = { 0 };
        struct kc_runtime_error err = { 0 };
        char endpoint[160];
        int fd;

        assert_non_null(f);
        /* EventedPLEG's and GenericPLEG's logs go to a file the tests read. */
        snprintf(f->log_path, sizeof(f->log_path), "/tmp/cubelet-evt-log.XXXXXX");
        fd = mkstemp(f->log_path);
        assert_true(fd >= 0);
        f->log = fdopen(fd, "w");
        assert_non_null(f->log);
        kc_log_set_output(f->log);

        server_start(&f->srv);

        assert_int_equal(kc_metrics_registry_new(&f->registry), 0);
        assert_int_equal(kc_kubelet_metrics_register(f->registry, &f->metrics), 0);
        assert_int_equal(kc_chan_new(&f->events, KC_PLEG_CHANNEL_CAPACITY, kc_pleg_event_free_item),
                         0);
        assert_int_equal(kc_pod_cache_new(&f->cache), 0);
        /* The EventedPLEG gate makes the cache newer-wins (UPSTREAM §4.7). */
        kc_pod_cache_set_newer_wins(f->cache, true);

        snprintf(endpoint, sizeof(endpoint), "unix://%s", f->srv.sock);
        assert_int_equal(kc_cri_new(endpoint, 10 * KC_NSEC_PER_SEC, &f->cri), 0);
        /* The server answers over kc_cri, on the real gRPC stack. */
        if (kc_cri_service(f->cri).ops->version(f->cri, &v, &err) < 0)
                fail_msg("Version: %s", err.message);
        assert_string_equal(v.runtime_name, "cubelet-test-cri");
        printf("Version: %s %s (CRI %s)\n", v.runtime_name, v.runtime_version,
               v.runtime_api_version);
        kc_runtime_result_done(&v);

        assert_int_equal(
                kc_runtime_manager_new(kc_cri_service(f->cri), kc_clock_real(), &f->manager), 0);
        assert_int_equal(kc_generic_pleg_new(
                                 &(struct kc_generic_pleg_config){
                                         .runtime = kc_runtime_manager_pod_runtime(f->manager),
                                         .events = f->events,
                                         .cache = f->cache,
                                         .clock = kc_clock_real(),
                                         .metrics = &f->metrics,
                                         .relist_period_ns = KC_EVENTED_GENERIC_RELIST_PERIOD,
                                         .relist_threshold_ns = KC_EVENTED_GENERIC_RELIST_THRESHOLD,
                                         .evented_in_use = fixture_evented_in_use,
                                         .evented_userdata = f,
                                 },
                                 &f->generic),
                         0);
        assert_int_equal(
                kc_evented_pleg_new(
                        &(struct kc_evented_pleg_config){
                                .generic = f->generic,
                                .source = kc_cri_event_source(f->cri),
                                .events = f->events,
                                .cache = f->cache,
                                .clock = kc_clock_real(),
                                .metrics = &f->metrics,
                                .cache_update_period_ns = KC_EVENTED_CACHE_UPDATE_PERIOD,
                                .reprobe_period_ns = REPROBE_NS,
                                .fallback_relist_period_ns = KC_GENERIC_PLEG_RELIST_PERIOD,
                                .fallback_relist_threshold_ns = KC_GENERIC_PLEG_RELIST_THRESHOLD,
                        },
                        &f->evented),
                0);
        *state = f;
        return 0;
}

static void dump_log(struct fixture *f)
{
        char line[2048];
        FILE *in = fopen(f->log_path, "re");

        if (!in)
                return;
        fprintf(stderr, "---- cubelet log ----\n");
        while (fgets(line, sizeof(line), in))
                fputs(line, stderr);
        fprintf(stderr, "---- end of cubelet log ----\n");
        fclose(in);
}

static int fixture_teardown(void **state)
{
        struct fixture *f = *state;

        kc_evented_pleg_free(f->evented);
        kc_generic_pleg_free(f->generic);
        kc_runtime_manager_free(f->manager);
        kc_cri_free(f->cri);
        server_stop(&f->srv);
        kc_chan_free(f->events);
        kc_pod_cache_free(f->cache);
        kc_metrics_registry_free(f->registry);
        kc_log_set_output(NULL);
        fclose(f->log);
        dump_log(f);
        unlink(f->log_path);
        free(f);
        return 0;
}

/* Whether the log holds a line containing @p needle. */
static bool log_has(struct fixture *f, const char *needle)
{
        char line[2048];
        bool found = false;
        FILE *in = fopen(f->log_path, "re");

        if (!in)
                return false;
        while (!found && fgets(line, sizeof(line), in))
                found = strstr(line, needle) != NULL;
        fclose(in);
        return found;
}

/* Event times: @p ms milliseconds after the start. */
static int64_t ts(struct fixture *f, int64_t ms)
{
        return f->base + ms * MS;
}

static struct kc_evented_pleg_stats stats(struct fixture *f)
{
        struct kc_evented_pleg_stats st;

        kc_evented_pleg_stats(f->evented, &st);
        return st;
}

/* Starts GenericPLEG then EventedPLEG (kubelet Run) and waits for the stream. */
/*
 * Ends EventedPLEG's catch-up after a connection (D31: relists every second
 * until the stream delivered an event and one relist followed it) with an
 * event of a pod of its own, "warm", stamped now; the tests' own events are
 * stamped after it, so none is older than the catch-up's last relist.
 */
static void finish_catch_up(struct fixture *f)
{
        uint64_t n = stats(f).caught_up;
        int64_t now = kc_clock_now(kc_clock_real());

        put_pod(&f->srv,
                pod_json("warm", "sw", "SANDBOX_READY", now, NULL,
                         (struct tc[]){ { "cw", "app", "CONTAINER_RUNNING", now, now, 0, 0 } }, 1));
        send_event(&f->srv, "CONTAINER_STARTED_EVENT", "cw", now, json_string("warm"), NULL);
        assert_true(KC_TEST_WAIT_UNTIL(stats(f).caught_up > n, WAIT_EVENT_MS));
}

static void start_plegs(struct fixture *f)
{
        assert_int_equal(kc_generic_pleg_start(f->generic), 0);
        assert_int_equal(kc_evented_pleg_start(f->evented), 0);
        server_do(&f->srv, json_pack("{s:s, s:i, s:i}", "cmd", "wait_streams", "count", 1,
                                     "timeout_ms", (int)(10000 * kc_test_timeout_multiplier())));
        assert_true(kc_evented_pleg_in_use(f->evented));
        /* Connected once the stream stayed open for KC_EVENTED_STREAM_SETTLE. */
        assert_true(KC_TEST_WAIT_UNTIL(stats(f).streaming, WAIT_EVENT_MS));
        finish_catch_up(f);
        f->base = kc_clock_now(kc_clock_real());
}

static void print_stats(struct fixture *f, const char *when)
{
        struct kc_evented_pleg_stats st = stats(f);

        printf("%s: in_use=%d streaming=%d connections=%" PRIu64 " failures=%" PRIu64
               " consecutive=%u fallbacks=%" PRIu64 " recoveries=%" PRIu64 "\n",
               when, kc_evented_pleg_in_use(f->evented), st.streaming, st.connections, st.failures,
               st.consecutive_failures, st.fallbacks, st.recoveries);
}

/*
 * The value of the sample @p name (no labels) in the rendered metrics, or
 * -1 when it is not there.
 */
static double metric(struct fixture *f, const char *name)
{
        _cleanup_free_ char *text = NULL;
        size_t n = strlen(name);
        double v = -1;

        assert_int_equal(kc_metrics_render(f->registry, &text), 0);
        for (char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
                if (strncmp(p, name, n) == 0 && p[n] == ' ') {
                        v = strtod(p + n + 1, NULL);
                        break;
                }
        return v;
}

#define SUCCESS_COUNT "kubelet_evented_pleg_connection_success_count"
#define ERROR_COUNT "kubelet_evented_pleg_connection_error_count"

/* One PLEG event from the shared channel. */
struct seen {
        enum kc_pleg_event_type type;
        char pod[64];
        char data[64];
};

static bool next_event(struct fixture *f, struct seen *out, long ms)
{
        void *item;
        struct kc_pleg_event *e;

        if (kc_chan_pop_sc(f->events, &item, (int)(ms * kc_test_timeout_multiplier())) < 0)
                return false;
        e = item;
        out->type = e->type;
        snprintf(out->pod, sizeof(out->pod), "%s", e->pod_id);
        snprintf(out->data, sizeof(out->data), "%s", e->data);
        printf("  PLEG event %s pod=%s data=%s\n", kc_pleg_event_type_to_string(e->type), e->pod_id,
               e->data);
        kc_pleg_event_free(e);
        return true;
}

/* The next PLEG event must be @p type for @p pod and @p data. */
static void expect_event(struct fixture *f, enum kc_pleg_event_type type, const char *pod,
                         const char *data)
{
        struct seen ev;

        if (!next_event(f, &ev, WAIT_EVENT_MS))
                fail_msg("no PLEG event; expected %s pod=%s data=%s",
                         kc_pleg_event_type_to_string(type), pod, data);
        if (ev.type != type || strcmp(ev.pod, pod) != 0 || strcmp(ev.data, data) != 0)
                fail_msg("PLEG event %s pod=%s data=%s; expected %s pod=%s data=%s",
                         kc_pleg_event_type_to_string(ev.type), ev.pod, ev.data,
                         kc_pleg_event_type_to_string(type), pod, data);
}

/*
 * Skips PLEG events until @p type for @p pod and @p data: a relist reports
 * the sandbox too, in an order of its own.
 */
static void wait_event(struct fixture *f, enum kc_pleg_event_type type, const char *pod,
                       const char *data)
{
        int64_t deadline =
                kc_test_mono_ms() + (int64_t)(WAIT_EVENT_MS * kc_test_timeout_multiplier());
        struct seen ev;

        while (next_event(f, &ev, (long)(deadline - kc_test_mono_ms())))
                if (ev.type == type && strcmp(ev.pod, pod) == 0 && strcmp(ev.data, data) == 0)
                        return;
        fail_msg("no PLEG event %s pod=%s data=%s", kc_pleg_event_type_to_string(type), pod, data);
}

static void expect_no_event(struct fixture *f, long ms)
{
        struct seen ev;

        if (next_event(f, &ev, ms))
                fail_msg("unexpected PLEG event %s pod=%s data=%s",
                         kc_pleg_event_type_to_string(ev.type), ev.pod, ev.data);
}

static void drain_events(struct fixture *f)
{
        struct seen ev;

        while (next_event(f, &ev, 0))
                ;
}

/* The cached status of @p uid: 1 found (*ret set), 0 a miss. */
static int cached(struct fixture *f, const char *uid, struct kc_pod_status **ret)
{
        _cleanup_free_ char *err = NULL;
        int r;

        *ret = NULL;
        r = kc_pod_cache_get(f->cache, uid, ret, &err);
        assert_true(r >= 0);
        if (err)
                fail_msg("cached error for %s: %s", uid, err);
        if (r == 0)
                *ret = kc_pod_status_unref(*ret);
        return r;
}

static const struct kc_container_status *find_container(const struct kc_pod_status *st,
                                                        const char *id)
{
        for (size_t i = 0; st && i < st->n_containers; i++)
                if (st->containers[i].id && strcmp(st->containers[i].id, id) == 0)
                        return &st->containers[i];
        return NULL;
}

/* Whether the cache holds container @p id of @p uid in @p state (exit code @p code). */
static bool cache_has(struct fixture *f, const char *uid, const char *id,
                      enum kc_container_state state, int32_t code)
{
        struct kc_pod_status *st = NULL;
        const struct kc_container_status *c;
        bool ok;

        if (cached(f, uid, &st) != 1)
                return false;
        c = find_container(st, id);
        ok = c && c->state == state && c->exit_code == code;
        kc_pod_status_unref(st);
        return ok;
}

/* ------------------------------------------------------------------------ */
/* 1. Events become PLEG events and cache entries, in order                   */

static void test_events_in_order(void **state)
{
        struct fixture *f = *state;
        struct kc_pod_status *st = NULL;
        int64_t t0;
        char uid[16], cid[16];

        start_plegs(f);
        drain_events(f);

        /* CREATED: the cache only. */
        put_pod(&f->srv,
                pod_json("u1", "s1", "SANDBOX_READY", ts(f, 0), "10.1.0.1",
                         (struct tc[]){ { "c1", "app", "CONTAINER_CREATED", ts(f, 1), 0, 0, 0 } },
                         1));
        send_event(&f->srv, "CONTAINER_CREATED_EVENT", "c1", ts(f, 2), json_string("u1"), NULL);
        assert_true(KC_TEST_WAIT_UNTIL(cache_has(f, "u1", "c1", KC_CONTAINER_STATE_CREATED, 0),
                                       WAIT_EVENT_MS));
        expect_no_event(f, 200);

        /* STARTED: ContainerStarted, and the pod status built from the event. */
        put_pod(&f->srv, pod_json("u1", "s1", "SANDBOX_READY", ts(f, 0), "10.1.0.1",
                                  (struct tc[]){ { "c1", "app", "CONTAINER_RUNNING", ts(f, 1),
                                                   ts(f, 3), 0, 0 } },
                                  1));
        send_event(&f->srv, "CONTAINER_STARTED_EVENT", "c1", ts(f, 3), json_string("u1"), NULL);
        expect_event(f, KC_PLEG_CONTAINER_STARTED, "u1", "c1");
        assert_int_equal(cached(f, "u1", &st), 1);
        assert_string_equal(st->id, "u1");
        assert_string_equal(st->name, "u1");
        assert_string_equal(st->namespace, "evt");
        assert_int_equal(st->n_sandboxes, 1);
        assert_string_equal(st->sandboxes[0].id, "s1");
        assert_int_equal(st->n_ips, 1);
        assert_string_equal(st->ips[0], "10.1.0.1");
        assert_int_equal(st->n_containers, 1);
        assert_string_equal(st->containers[0].name, "app");
        assert_int_equal(st->containers[0].state, KC_CONTAINER_STATE_RUNNING);
        st = kc_pod_status_unref(st);

        /* A second container, then c1 exits 3: newest container first in the status. */
        put_pod(&f->srv,
                pod_json("u1", "s1", "SANDBOX_READY", ts(f, 0), "10.1.0.1",
                         (struct tc[]){
                                 { "c1", "app", "CONTAINER_EXITED", ts(f, 1), ts(f, 3), ts(f, 5),
                                   3 },
                                 { "c2", "side", "CONTAINER_RUNNING", ts(f, 4), ts(f, 4), 0, 0 },
                         },
                         2));
        send_event(&f->srv, "CONTAINER_STARTED_EVENT", "c2", ts(f, 4), json_string("u1"), NULL);
        send_event(&f->srv, "CONTAINER_STOPPED_EVENT", "c1", ts(f, 5), json_string("u1"), NULL);
        expect_event(f, KC_PLEG_CONTAINER_STARTED, "u1", "c2");
        expect_event(f, KC_PLEG_CONTAINER_DIED, "u1", "c1");
        assert_int_equal(cached(f, "u1", &st), 1);
        assert_int_equal(st->n_containers, 2);
        assert_string_equal(st->containers[0].id, "c2");
        assert_string_equal(st->containers[1].id, "c1");
        assert_int_equal(st->containers[1].state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(st->containers[1].exit_code, 3);
        st = kc_pod_status_unref(st);

        /* A burst over 20 pods: the PLEG events come out in the stream's order. */
        t0 = ts(f, 100);
        for (int i = 0; i < 20; i++) {
                snprintf(uid, sizeof(uid), "b%02d", i);
                snprintf(cid, sizeof(cid), "b%02d-c", i);
                put_pod(&f->srv, pod_json(uid, uid, "SANDBOX_READY", t0, NULL,
                                          (struct tc[]){ { cid, "app", "CONTAINER_RUNNING", t0,
                                                           t0 + i, 0, 0 } },
                                          1));
        }
        for (int i = 0; i < 20; i++) {
                snprintf(uid, sizeof(uid), "b%02d", i);
                snprintf(cid, sizeof(cid), "b%02d-c", i);
                send_event(&f->srv, "CONTAINER_STARTED_EVENT", cid, t0 + i, json_string(uid), NULL);
        }
        for (int i = 0; i < 20; i++) {
                snprintf(uid, sizeof(uid), "b%02d", i);
                snprintf(cid, sizeof(cid), "b%02d-c", i);
                expect_event(f, KC_PLEG_CONTAINER_STARTED, uid, cid);
                assert_true(cache_has(f, uid, cid, KC_CONTAINER_STATE_RUNNING, 0));
        }
        expect_no_event(f, 200);

        /* No stream trouble on the way. */
        assert_int_equal(stats(f).failures, 0);
        assert_true(stats(f).streaming);
        assert_int_equal(metric(f, ERROR_COUNT), 0);
        assert_int_equal(metric(f, SUCCESS_COUNT), 1);
}

/* ------------------------------------------------------------------------ */
/* 2. A stale event is refused                                                */

static void test_stale_event_refused(void **state)
{
        struct fixture *f = *state;
        struct kc_pod_status *st = NULL;

        start_plegs(f);
        drain_events(f);

        put_pod(&f->srv, pod_json("u1", "s1", "SANDBOX_READY", ts(f, 0), NULL,
                                  (struct tc[]){ { "c1", "app", "CONTAINER_RUNNING", ts(f, 1),
                                                   ts(f, 10), 0, 0 } },
                                  1));
        send_event(&f->srv, "CONTAINER_STARTED_EVENT", "c1", ts(f, 10), json_string("u1"), NULL);
        expect_event(f, KC_PLEG_CONTAINER_STARTED, "u1", "c1");

        /* The runtime now says c1 exited, but in an event older than the cache entry. */
        put_pod(&f->srv, pod_json("u1", "s1", "SANDBOX_READY", ts(f, 0), NULL,
                                  (struct tc[]){ { "c1", "app", "CONTAINER_EXITED", ts(f, 1),
                                                   ts(f, 10), ts(f, 5), 9 } },
                                  1));
        send_event(&f->srv, "CONTAINER_STOPPED_EVENT", "c1", ts(f, 5), json_string("u1"), NULL);
        /* A sentinel on another pod: once its event is out, the stale one was handled. */
        put_pod(&f->srv, pod_json("u2", "s2", "SANDBOX_READY", ts(f, 0), NULL,
                                  (struct tc[]){ { "c9", "app", "CONTAINER_RUNNING", ts(f, 1),
                                                   ts(f, 11), 0, 0 } },
                                  1));
        send_event(&f->srv, "CONTAINER_STARTED_EVENT", "c9", ts(f, 11), json_string("u2"), NULL);
        expect_event(f, KC_PLEG_CONTAINER_STARTED, "u2", "c9");
        expect_no_event(f, 200);
        assert_true(cache_has(f, "u1", "c1", KC_CONTAINER_STATE_RUNNING, 0));

        /* The same event at the cached time overwrites (equal timestamps win). */
        send_event(&f->srv, "CONTAINER_STOPPED_EVENT", "c1", ts(f, 10), json_string("u1"), NULL);
        expect_event(f, KC_PLEG_CONTAINER_DIED, "u1", "c1");
        assert_int_equal(cached(f, "u1", &st), 1);
        assert_int_equal(find_container(st, "c1")->state, KC_CONTAINER_STATE_EXITED);
        assert_int_equal(find_container(st, "c1")->exit_code, 9);
        kc_pod_status_unref(st);
        assert_int_equal(stats(f).failures, 0);
}

/* ------------------------------------------------------------------------ */
/* 3. DELETED                                                                 */

static void test_deleted_sandbox_clears_cache(void **state)
{
        struct fixture *f = *state;
        struct kc_pod_status *st = NULL;

        start_plegs(f);
        drain_events(f);

        put_pod(&f->srv, pod_json("u1", "s1", "SANDBOX_READY", ts(f, 0), NULL,
                                  (struct tc[]){ { "c1", "app", "CONTAINER_RUNNING", ts(f, 1),
                                                   ts(f, 1), 0, 0 } },
                                  1));
        send_event(&f->srv, "CONTAINER_STARTED_EVENT", "c1", ts(f, 1), json_string("u1"), NULL);
        expect_event(f, KC_PLEG_CONTAINER_STARTED, "u1", "c1");
        assert_int_equal(cached(f, "u1", &st), 1);
        st = kc_pod_status_unref(st);

        /* The container goes: Died + Removed; the pod stays cached. */
        put_pod(&f->srv, pod_json("u1", "s1", "SANDBOX_NOTREADY", ts(f, 0), NULL, NULL, 0));
        send_event(&f->srv, "CONTAINER_DELETED_EVENT", "c1", ts(f, 2), json_string("u1"), NULL);
        expect_event(f, KC_PLEG_CONTAINER_DIED, "u1", "c1");
        expect_event(f, KC_PLEG_CONTAINER_REMOVED, "u1", "c1");
        assert_int_equal(cached(f, "u1", &st), 1);
        st = kc_pod_status_unref(st);

        /* Then the sandbox: Died + Removed, and the cache entry is gone. */
        server_do(&f->srv, json_pack("{s:s, s:s}", "cmd", "remove_pod", "uid", "u1"));
        send_event(&f->srv, "CONTAINER_DELETED_EVENT", "s1", ts(f, 3),
                   pod_json("u1", "s1", "SANDBOX_NOTREADY", ts(f, 0), NULL, NULL, 0), NULL);
        expect_event(f, KC_PLEG_CONTAINER_DIED, "u1", "s1");
        expect_event(f, KC_PLEG_CONTAINER_REMOVED, "u1", "s1");
        assert_int_equal(cached(f, "u1", &st), 0);
        expect_no_event(f, 200);
}

/* ------------------------------------------------------------------------ */
/* 4. Malformed events are skipped                                            */

static void test_malformed_event_skipped(void **state)
{
        struct fixture *f = *state;
        struct kc_pod_status *st = NULL;

        start_plegs(f);
        drain_events(f);

        put_pod(&f->srv, pod_json("u1", "s1", "SANDBOX_READY", ts(f, 0), NULL,
                                  (struct tc[]){ { "c1", "app", "CONTAINER_RUNNING", ts(f, 1),
                                                   ts(f, 1), 0, 0 } },
                                  1));
        send_event(&f->srv, "CONTAINER_STARTED_EVENT", "c1", ts(f, 1), json_string("u1"),
                   "no_sandbox");
        send_event(&f->srv, "CONTAINER_STARTED_EVENT", "c1", ts(f, 2), json_string("u1"),
                   "no_metadata");
        put_pod(&f->srv, pod_json("u2", "s2", "SANDBOX_READY", ts(f, 0), NULL,
                                  (struct tc[]){ { "c2", "app", "CONTAINER_RUNNING", ts(f, 1),
                                                   ts(f, 3), 0, 0 } },
                                  1));
        send_event(&f->srv, "CONTAINER_STARTED_EVENT", "c2", ts(f, 3), json_string("u2"), NULL);
        /* Only the well-formed event counts, and the stream goes on. */
        expect_event(f, KC_PLEG_CONTAINER_STARTED, "u2", "c2");
        expect_no_event(f, 200);
        assert_int_equal(cached(f, "u1", &st), 0);
        assert_true(cache_has(f, "u2", "c2", KC_CONTAINER_STATE_RUNNING, 0));
        assert_int_equal(stats(f).failures, 0);
        assert_true(stats(f).streaming);
        assert_int_equal(server_stat(&f->srv, "open_streams"), 1);

        /* The same event, well-formed this time, is taken. */
        send_event(&f->srv, "CONTAINER_STARTED_EVENT", "c1", ts(f, 4), json_string("u1"), NULL);
        expect_event(f, KC_PLEG_CONTAINER_STARTED, "u1", "c1");
        assert_true(cache_has(f, "u1", "c1", KC_CONTAINER_STATE_RUNNING, 0));
}

/* ------------------------------------------------------------------------ */
/* 5. A dropped stream: retry, a forced relist each time                      */

static void test_dropped_stream_retries_with_relist(void **state)
{
        struct fixture *f = *state;
        int64_t now;

        /* One running pod, so that each relist lists it. */
        now = kc_clock_now(kc_clock_real());
        put_pod(&f->srv,
                pod_json("u1", "s1", "SANDBOX_READY", now, NULL,
                         (struct tc[]){ { "c1", "app", "CONTAINER_RUNNING", now, now, 0, 0 } }, 1));
        start_plegs(f);
        /* The initial relist saw c1 start. */
        wait_event(f, KC_PLEG_CONTAINER_STARTED, "u1", "c1");

        for (unsigned i = 1; i <= 3; i++) {
                int64_t lists = server_calls(&f->srv, "ListContainers");
                int64_t t_drop = kc_test_mono_ms();

                server_do(&f->srv, json_pack("{s:s, s:s}", "cmd", "drop", "code", "UNAVAILABLE"));
                /* Counted, a relist forced, and the stream back after the back-off. */
                assert_true(KC_TEST_WAIT_UNTIL(stats(f).failures == i, WAIT_EVENT_MS));
                assert_true(KC_TEST_WAIT_UNTIL(server_calls(&f->srv, "ListContainers") > lists,
                                               WAIT_EVENT_MS));
                server_do(&f->srv,
                          json_pack("{s:s, s:i, s:i}", "cmd", "wait_streams", "count", 1,
                                    "timeout_ms", (int)(10000 * kc_test_timeout_multiplier())));
                assert_true(KC_TEST_WAIT_UNTIL(stats(f).streaming, WAIT_EVENT_MS));
                printf("drop %u: back after %" PRId64 " ms, ListContainers %" PRId64 " -> %" PRId64
                       "\n",
                       i, kc_test_mono_ms() - t_drop, lists,
                       server_calls(&f->srv, "ListContainers"));
                print_stats(f, "after the drop");
                assert_int_equal(stats(f).connections, i + 1);
                assert_true(kc_evented_pleg_in_use(f->evented));
        }
        /* A successful connection resets the count: no fallback. */
        assert_int_equal(stats(f).consecutive_failures, 0);
        assert_int_equal(stats(f).fallbacks, 0);
        assert_int_equal(metric(f, ERROR_COUNT), 3);
        assert_int_equal(metric(f, SUCCESS_COUNT), 4);

        /* The new stream delivers. */
        drain_events(f);
        now = kc_clock_now(kc_clock_real());
        put_pod(&f->srv,
                pod_json("u1", "s1", "SANDBOX_READY", now, NULL,
                         (struct tc[]){ { "c1", "app", "CONTAINER_EXITED", now, now, now, 1 } },
                         1));
        send_event(&f->srv, "CONTAINER_STOPPED_EVENT", "c1", now, json_string("u1"), NULL);
        expect_event(f, KC_PLEG_CONTAINER_DIED, "u1", "c1");
        assert_true(cache_has(f, "u1", "c1", KC_CONTAINER_STATE_EXITED, 1));
}

/* ------------------------------------------------------------------------ */
/* 6, 7. Fallback after 5 failures, and the switch back                       */

/*
 * Falls back relisting every second? Over a 3.5 s window, relists
 * (ListContainers with a static state: one per relist) beyond the stream
 * attempts (each failed probe may force one) must be at least 2: GenericPLEG
 * at 300 s would make none.
 */
static void check_relisting_every_second(struct fixture *f)
{
        int64_t l0 = server_calls(&f->srv, "ListContainers");
        int64_t o0 = server_stat(&f->srv, "stream_opens");
        int64_t l1, o1;

        kc_test_sleep_ms(3500);
        l1 = server_calls(&f->srv, "ListContainers");
        o1 = server_stat(&f->srv, "stream_opens");
        printf("fallen back, 3.5 s: %" PRId64 " relists, %" PRId64 " stream attempts\n", l1 - l0,
               o1 - o0);
        assert_true(l1 - l0 - (o1 - o0) >= 2);
        assert_false(kc_evented_pleg_in_use(f->evented));
}

/* Back in evented mode: GenericPLEG at 300 s again, so no relist for 2.5 s. */
static void check_not_relisting(struct fixture *f)
{
        int64_t l0, l1;

        finish_catch_up(f);
        kc_test_sleep_ms(500); /* let a relist of the switch itself finish */
        l0 = server_calls(&f->srv, "ListContainers");
        kc_test_sleep_ms(2500);
        l1 = server_calls(&f->srv, "ListContainers");
        printf("evented again, 2.5 s: %" PRId64 " relists\n", l1 - l0);
        assert_int_equal(l1 - l0, 0);
}

static void wait_fallback(struct fixture *f, int64_t t0)
{
        if (!KC_TEST_WAIT_UNTIL(stats(f).fallbacks == 1 && !kc_evented_pleg_in_use(f->evented),
                                WAIT_FALLBACK_MS)) {
                print_stats(f, "no fallback");
                fail_msg("no fallback to relisting after 5 stream failures");
        }
        printf("fell back %" PRId64 " ms after the first failure\n", kc_test_mono_ms() - t0);
        print_stats(f, "fallen back");
        assert_true(stats(f).failures >= KC_EVENTED_MAX_STREAM_RETRIES);
        assert_true(stats(f).consecutive_failures >= KC_EVENTED_MAX_STREAM_RETRIES);
        assert_true(metric(f, ERROR_COUNT) >= KC_EVENTED_MAX_STREAM_RETRIES);
}

static void wait_recovery(struct fixture *f, int64_t t0)
{
        if (!KC_TEST_WAIT_UNTIL(stats(f).recoveries == 1 && kc_evented_pleg_in_use(f->evented) &&
                                        stats(f).streaming,
                                (long)(REPROBE_NS / MS) * 3 + WAIT_EVENT_MS)) {
                print_stats(f, "no recovery");
                fail_msg("the re-probe did not switch back to evented mode");
        }
        printf("switched back %" PRId64 " ms after the stream was allowed again\n",
               kc_test_mono_ms() - t0);
        print_stats(f, "recovered");
        assert_int_equal(stats(f).consecutive_failures, 0);
        assert_int_equal(server_stat(&f->srv, "open_streams"), 1);
}

/* The stream works again: an event turns into a PLEG event. */
static void check_stream_delivers(struct fixture *f, const char *uid, const char *cid)
{
        int64_t now = kc_clock_now(kc_clock_real());

        drain_events(f);
        put_pod(&f->srv,
                pod_json(uid, "s1", "SANDBOX_READY", now, NULL,
                         (struct tc[]){ { cid, "app", "CONTAINER_EXITED", now, now, now, 2 } }, 1));
        send_event(&f->srv, "CONTAINER_STOPPED_EVENT", cid, now, json_string(uid), NULL);
        expect_event(f, KC_PLEG_CONTAINER_DIED, uid, cid);
        assert_true(cache_has(f, uid, cid, KC_CONTAINER_STATE_EXITED, 2));
}

static void test_fallback_and_recovery(void **state)
{
        struct fixture *f = *state;
        int64_t now = kc_clock_now(kc_clock_real()), t0;
        double success, errors;

        put_pod(&f->srv,
                pod_json("u1", "s1", "SANDBOX_READY", now, NULL,
                         (struct tc[]){ { "c1", "app", "CONTAINER_RUNNING", now, now, 0, 0 } }, 1));
        start_plegs(f);
        wait_event(f, KC_PLEG_CONTAINER_STARTED, "u1", "c1");
        assert_int_equal(metric(f, SUCCESS_COUNT), 1);

        /* Drop the stream and refuse every new one: 1 + 4 failures. */
        t0 = kc_test_mono_ms();
        server_do(&f->srv, json_pack("{s:s, s:i, s:s}", "cmd", "refuse", "count", -1, "code",
                                     "UNAVAILABLE"));
        server_do(&f->srv, json_pack("{s:s, s:s}", "cmd", "drop", "code", "UNAVAILABLE"));
        wait_fallback(f, t0);
        /* The log line follows the switch: wait for it. */
        assert_true(KC_TEST_WAIT_UNTIL(log_has(f, "Fall back to Generic PLEG relisting"),
                                       WAIT_EVENT_MS));
        check_relisting_every_second(f);
        /* The re-probes keep failing while the stream is refused. */
        assert_true(server_stat(&f->srv, "streams_refused") > KC_EVENTED_MAX_STREAM_RETRIES - 1);
        assert_int_equal(stats(f).recoveries, 0);

        /* The runtime takes streams again: the next re-probe switches back. */
        success = metric(f, SUCCESS_COUNT);
        errors = metric(f, ERROR_COUNT);
        t0 = kc_test_mono_ms();
        server_do(&f->srv, json_pack("{s:s, s:i}", "cmd", "refuse", "count", 0));
        wait_recovery(f, t0);
        assert_true(KC_TEST_WAIT_UNTIL(log_has(f, "Evented PLEG is working again"), WAIT_EVENT_MS));
        assert_true(metric(f, SUCCESS_COUNT) == success + 1);
        assert_true(metric(f, ERROR_COUNT) >= errors);
        printf("metrics: %s %g, %s %g\n", SUCCESS_COUNT, metric(f, SUCCESS_COUNT), ERROR_COUNT,
               metric(f, ERROR_COUNT));
        check_not_relisting(f);
        check_stream_delivers(f, "u1", "c1");
}

static void test_unimplemented_falls_back_then_recovers(void **state)
{
        struct fixture *f = *state;
        int64_t now = kc_clock_now(kc_clock_real()), t0;

        put_pod(&f->srv,
                pod_json("u1", "s1", "SANDBOX_READY", now, NULL,
                         (struct tc[]){ { "c1", "app", "CONTAINER_RUNNING", now, now, 0, 0 } }, 1));
        /* As containerd 1.6: GetContainerEvents is UNIMPLEMENTED from the start. */
        server_do(&f->srv, json_pack("{s:s, s:b}", "cmd", "unimplemented", "on", 1));
        t0 = kc_test_mono_ms();
        assert_int_equal(kc_generic_pleg_start(f->generic), 0);
        assert_int_equal(kc_evented_pleg_start(f->evented), 0);
        wait_event(f, KC_PLEG_CONTAINER_STARTED, "u1", "c1");
        wait_fallback(f, t0);
        assert_int_equal(stats(f).connections, 0);
        assert_int_equal(metric(f, SUCCESS_COUNT), 0);
        check_relisting_every_second(f);

        /* The runtime learns GetContainerEvents. */
        t0 = kc_test_mono_ms();
        server_do(&f->srv, json_pack("{s:s, s:b}", "cmd", "unimplemented", "on", 0));
        wait_recovery(f, t0);
        assert_int_equal(metric(f, SUCCESS_COUNT), 1);
        check_not_relisting(f);
        check_stream_delivers(f, "u1", "c1");
}

int main(void)
{
        const char *file = getenv("KC_CRI_SERVER_ENV");
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_events_in_order, fixture_setup,
                                                fixture_teardown),
                cmocka_unit_test_setup_teardown(test_stale_event_refused, fixture_setup,
                                                fixture_teardown),
                cmocka_unit_test_setup_teardown(test_deleted_sandbox_clears_cache, fixture_setup,
                                                fixture_teardown),
                cmocka_unit_test_setup_teardown(test_malformed_event_skipped, fixture_setup,
                                                fixture_teardown),
                cmocka_unit_test_setup_teardown(test_dropped_stream_retries_with_relist,
                                                fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_fallback_and_recovery, fixture_setup,
                                                fixture_teardown),
                cmocka_unit_test_setup_teardown(test_unimplemented_falls_back_then_recovers,
                                                fixture_setup, fixture_teardown),
        };

        if (!file || !*file) {
                fprintf(stderr, "KC_CRI_SERVER_ENV is not set: run through CTest (fixture "
                                "criserver) or point it at the file cri-server/setup.sh wrote\n");
                return 1;
        }
        if (kc_cri_server_env_load(file, &env) < 0) {
                fprintf(stderr,
                        "%s does not describe an installed CRI server (did "
                        "integration.criserver.setup fail?)\n",
                        file);
                return 1;
        }
        /* A server that died must fail the test, not kill it. */
        signal(SIGPIPE, SIG_IGN);
        setvbuf(stdout, NULL, _IOLBF, 0);
        return cmocka_run_group_tests_name("integration.evented", tests, NULL, NULL);
}
