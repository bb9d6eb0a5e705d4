/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cubelet daemon: upstream's NewMainKubelet (build every part), Run
 * (start the background loops) and syncLoop (on the main thread), then a
 * graceful shutdown in reverse order when SIGTERM or SIGINT arrives.
 *
 * Startup follows kubelet's order:
 *  1. flags, logging, metrics registration (initializeModules);
 *  2. the runtime service and the runtime manager ("Container runtime
 *     initialized" after a Version call);
 *  3. NewMainKubelet: pod cache, pod manager, restart backoff, status
 *     manager, runtimeState, the PLEG with its "PLEG" health check, the work
 *     queue, the pod workers, the container deletor, syncLoop and the config
 *     sources (the file source starts watching here, as makePodSourceConfig
 *     does);
 *  4. Run: updateRuntimeUp (at once, then every 5 s), PLEG Start, then the
 *     read-only and healthz HTTP servers (startKubelet / server.go), then
 *     syncLoop until a stop signal.
 * Shutdown: HTTP servers, config source, PLEG, runtime poller, pod workers
 * (in-flight syncs are cancelled and joined), deletor, then every object is
 * freed. Containers are left running, as kubelet does.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/flags.h"
#include "commands.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/memory.h"
#include "health/runtime_state.h"
#include "kubelet/config/file_source.h"
#include "kubelet/config/manifest.h"
#include "kubelet/kubelet_parts.h"
#include "kubelet/kubelet_pods.h"
#include "kubelet/node_status.h"
#include "kubelet/runtime_up.h"
#include "kubelet/server/server.h"
#include "kubelet/sync_loop.h"
#include "metrics/kubelet_metrics.h"
#include "metrics/process.h"
#include "metrics/registry.h"
#include "pleg/evented.h"
#include "pleg/generic.h"
#include "runtime/cache.h"
#include "runtime/cri.h"
#include "runtime/error.h"
#include "runtime/manager.h"
#include "kubelet/runtime_helper.h"
#include "runtime/instrumented.h"
#include "runtime/runtime_service.h"
#include "runtime/sim.h"
#include "runtime/sync_pod.h"

/* Upstream constants (UPSTREAM.md §1). */
#define PLEG_RELIST_PERIOD (1 * KC_NSEC_PER_SEC)
#define PLEG_RELIST_THRESHOLD (3 * KC_NSEC_PER_MIN)

struct daemon {
        const struct kc_kubelet_flags *f;
        sigset_t stop_signals;
        struct kc_clock *clock;
        char *node_ip;
        struct kc_metrics_registry *registry;
        struct kc_kubelet_metrics metrics;
        struct kc_sim *sim;                           /* the runtime: the simulated one, */
        struct kc_cri *cri;                           /* or a CRI client */
        struct kc_instrumented_runtime *instrumented; /* around either */
        struct kc_runtime_service svc;
        char *runtime_name;
        char *runtime_version; /* "<name>://<version>" */
        struct kc_runtime_manager *manager;
        struct kc_kubelet_runtime_helper *helper; /* the kubelet's RuntimeHelper for the manager */
        struct kc_kubelet_parts k;       /* NewMainKubelet's parts (kubelet/kubelet_parts.c) */
        struct kc_evented_pleg *evented; /* --feature-gates=EventedPLEG=true */
        struct kc_file_source *file_source;
        struct kc_runtime_up_poller *runtime_up;
        struct kc_node_status *node;
        struct kc_http_server *http, *healthz;
};

/* The node's IP: --node-ip, else the first up, non-loopback IPv4 address. */
static int detect_node_ip(const char *flag, char **ret)
{
        struct ifaddrs *ifs = NULL, *i;
        char buf[INET_ADDRSTRLEN] = "127.0.0.1";

        if (flag) {
                *ret = strdup(flag);
                return *ret ? 0 : -ENOMEM;
        }
        if (getifaddrs(&ifs) == 0) {
                for (i = ifs; i; i = i->ifa_next) {
                        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
                            (i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_UP))
                                continue;
                        inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, buf,
                                  sizeof(buf));
                        break;
                }
                freeifaddrs(ifs);
        }
        *ret = strdup(buf);
        return *ret ? 0 : -ENOMEM;
}

/*
 * EventedPLEG's check fails while the PLEG channel is full, and a failing
 * check makes syncLoop back off, reading nothing: the channel, whose only
 * reader is syncLoop, would then stay full and syncLoop back off forever
 * (found by tests/integration/test_faults_flood.py: a flood while the
 * runtime was unhealthy, then the runtime recovered). So the check passes
 * while syncLoop backs off: kc_sync_loop_evented_pleg_healthy(), tested in
 * tests/unit/kubelet/test_sync_loop.c.
 */
static bool evented_healthy(void *ud, char **ret_err)
{
        struct daemon *d = ud;

        return kc_sync_loop_evented_pleg_healthy(d->k.loop, d->evented, ret_err);
}

/* GenericPLEG asks on every cache write; the EventedPLEG is built after it. */
static bool evented_in_use(void *ud)
{
        struct daemon *d = ud;

        return d->evented && kc_evented_pleg_in_use(d->evented);
}

/* GetContainerEvents of a runtime that has none (the simulated one): the
 * stream fails UNIMPLEMENTED, as containerd 1.6 answers, and EventedPLEG
 * falls back to relisting. */
static int no_events_open(void *self, void (*on_event)(void *, const struct kc_container_event *),
                          void (*on_close)(void *, int, const struct kc_runtime_error *), void *ud,
                          void **ret_handle, struct kc_runtime_error *err)
{
        (void)self, (void)on_event, (void)on_close, (void)ud, (void)ret_handle;
        return kc_runtime_error_set(err, -EOPNOTSUPP, KC_RUNTIME_UNIMPLEMENTED,
                                    "method GetContainerEvents not implemented");
}

static void no_events_close(void *self, void *handle)
{
        (void)self, (void)handle;
}

static const struct kc_container_event_source_ops no_events_ops = {
        .open = no_events_open,
        .close = no_events_close,
};

/* EventedPLEG around the generic PLEG (§4.1), with its health check. */
static int build_evented(struct daemon *d)
{
        const struct kc_evented_pleg_config ec = {
                .generic = d->k.pleg,
                .source = d->cri ? kc_cri_event_source(d->cri)
                                 : (struct kc_container_event_source){ &no_events_ops, NULL },
                .events = d->k.events,
                .cache = d->k.cache,
                .clock = d->clock,
                .metrics = &d->metrics,
                .cache_update_period_ns = d->f->evented_pleg_cache_update_period_ns,
                .reprobe_period_ns = d->f->evented_pleg_reprobe_period_ns,
                .fallback_relist_period_ns = PLEG_RELIST_PERIOD,
                .fallback_relist_threshold_ns = PLEG_RELIST_THRESHOLD,
        };
        int r;

        r = kc_evented_pleg_new(&ec, &d->evented);
        if (r < 0)
                return r;
        kc_pod_cache_set_newer_wins(d->k.cache, true);
        return kc_runtime_state_add_health_check(d->k.runtime_state, "EventedPLEG", evented_healthy,
                                                 d);
}

static bool sync_loop_healthy(void *ud, char **ret_err)
{
        return kc_sync_loop_healthy(ud, ret_err);
}

/* klog's healthz check: logging cannot get stuck here (writes are synchronous). */
static bool log_healthy(void *ud, char **ret_err)
{
        (void)ud;
        (void)ret_err;
        return true;
}

/*
 * NewMainKubelet: the kubelet is the runtime manager's RuntimeHelper (env,
 * mounts, DNS, hostname), and the manager reads the machine's memory for
 * the OOM score of Burstable containers.
 */
static int build_runtime_helper(struct daemon *d)
{
        const char *const node_ips[] = { d->node_ip };
        struct kc_kubelet_runtime_helper_config hc = {
                .node_name = d->f->hostname_override,
                .node_ips = node_ips,
                .n_node_ips = 1,
                .root_dir = d->f->root_dir,
                .resolv_conf = d->f->resolv_conf ? d->f->resolv_conf : "",
        };
        struct kc_runtime_helper rh;
        int r;

        r = kc_kubelet_runtime_helper_new(&hc, &d->helper);
        if (r < 0)
                return r;
        rh = kc_kubelet_runtime_helper_get(d->helper);
        r = kc_runtime_manager_set_runtime_helper(d->manager, &rh);
        if (r >= 0)
                r = kc_runtime_manager_set_machine(
                        d->manager, kc_kubelet_runtime_helper_memory_capacity(d->helper),
                        d->f->root_dir && d->f->root_dir[0] == '/' ? d->f->root_dir : NULL, NULL);
        return r;
}

/* The runtime service behind --container-runtime-endpoint. */
static int open_runtime(struct daemon *d)
{
        struct kc_runtime_error err = { 0 };
        struct kc_version_result v = { 0 };
        int r;

        if (strncmp(d->f->container_runtime_endpoint, "unix://", 7) == 0) {
                r = kc_cri_new(d->f->container_runtime_endpoint, d->f->runtime_request_timeout_ns,
                               &d->cri);
                if (r < 0)
                        return r;
                d->svc = kc_cri_service(d->cri);
        } else {
                r = kc_sim_new(d->clock, &d->sim);
                if (r < 0)
                        return r;
                d->svc = kc_sim_service(d->sim);
        }
        /* newInstrumentedRuntimeService: every runtime call counts in the metrics. */
        r = kc_instrumented_runtime_new(d->svc, &d->metrics, d->clock, &d->instrumented);
        if (r < 0)
                return r;
        d->svc = kc_instrumented_runtime_service(d->instrumented);
        /* As upstream, a runtime that cannot say its version stops the start. */
        r = d->svc.ops->version(d->svc.self, &v, &err);
        if (r < 0) {
                kc_log_error_s(err.message, "Failed to get the container runtime version",
                               KC_KV_STR("endpoint", d->f->container_runtime_endpoint));
                return r;
        }
        d->runtime_name = strdup(v.runtime_name);
        if (!d->runtime_name ||
            asprintf(&d->runtime_version, "%s://%s", v.runtime_name, v.runtime_version) < 0) {
                d->runtime_version = NULL;
                kc_runtime_result_done(&v);
                return -ENOMEM;
        }
        kc_log_info_s("Container runtime initialized",
                      KC_KV_STR("containerRuntime", v.runtime_name),
                      KC_KV_STR("version", v.runtime_version),
                      KC_KV_STR("apiVersion", v.runtime_api_version));
        kc_runtime_result_done(&v);
        r = kc_runtime_manager_new(d->svc, d->clock, &d->manager);
        /* A real runtime writes container logs under /var/log/pods; the simulated one none. */
        if (r >= 0 && d->cri)
                r = kc_runtime_manager_set_pod_logs_root(d->manager, KC_POD_LOGS_ROOT);
        return r < 0 ? r : build_runtime_helper(d);
}

/* /pods, streamed (kc_http_stream_ops): the pod manager's pods with their statuses. */
static int pods_stream_open(void *ud, void **ret_stream)
{
        struct daemon *d = ud;

        return kc_pod_list_stream_open(d->k.pod_manager, d->k.status_manager,
                                       d->f->hostname_override,
                                       (struct kc_pod_list_stream **)ret_stream);
}

static int pods_stream_next(void *stream, const char **ret_data, size_t *ret_len)
{
        return kc_pod_list_stream_next(stream, ret_data, ret_len);
}

static void pods_stream_close(void *stream)
{
        kc_pod_list_stream_close(stream);
}

static const struct kc_http_stream_ops pods_stream = {
        .open = pods_stream_open,
        .next = pods_stream_next,
        .close = pods_stream_close,
};

/* NewMainKubelet: every part is built; only the file source runs yet. */
static int build(struct daemon *d)
{
        static const char *const file_sources[] = { KC_MANIFEST_SOURCE };
        struct kc_kubelet_parts_config kc = {
                .clock = d->clock,
                .svc = d->svc,
                .manager = d->manager,
                .metrics = &d->metrics,
                .registry = d->registry,
                .node_ip = d->node_ip,
                .runtime_name = d->runtime_name,
                .root_dir = d->f->root_dir,
                .crash_loop_initial_ns = d->f->crash_loop_initial_ns,
                .crash_loop_max_ns = d->f->crash_loop_max_ns,
                .sync_frequency_ns = d->f->sync_frequency_ns,
                .max_wait_for_container_runtime_ns = d->f->max_wait_for_container_runtime_ns,
                .maximum_dead_containers_per_container =
                        d->f->maximum_dead_containers_per_container,
                .relist_period_ns = PLEG_RELIST_PERIOD,
                .relist_threshold_ns = PLEG_RELIST_THRESHOLD,
                .sources = d->f->pod_manifest_path ? file_sources : NULL,
                .n_sources = d->f->pod_manifest_path ? 1 : 0,
                .stop_signals = &d->stop_signals,
        };
        struct kc_node_status_config nc;
        int r;

        if (d->f->evented_pleg) {
                /* While EventedPLEG is in use the generic one only backs it up. */
                kc.relist_period_ns = KC_EVENTED_GENERIC_RELIST_PERIOD;
                kc.relist_threshold_ns = KC_EVENTED_GENERIC_RELIST_THRESHOLD;
                kc.evented_in_use = evented_in_use;
                kc.evented_userdata = d;
        }
        r = kc_kubelet_parts_build(&kc, &d->k);
        if (r < 0)
                return r;
        if (d->f->evented_pleg && (r = build_evented(d)) < 0)
                return r;

        nc = (struct kc_node_status_config){
                .clock = d->clock,
                .runtime_state = d->k.runtime_state,
                .node_name = d->f->hostname_override,
                .node_ip = d->node_ip,
                .runtime_version = d->runtime_version,
                .kubelet_version = "v" KC_VERSION,
                .root_dir = d->f->root_dir,
        };
        if ((r = kc_node_status_new(&nc, &d->node)) < 0)
                return r;

        /* makePodSourceConfig: the file source starts watching now. */
        if (d->f->pod_manifest_path) {
                r = kc_file_source_start(d->f->pod_manifest_path, d->f->hostname_override, d->clock,
                                         d->f->file_check_frequency_ns, d->k.config,
                                         &d->file_source);
                if (r < 0) {
                        kc_log_error_s(strerror(-r), "Failed to start the file config source",
                                       KC_KV_STR("path", d->f->pod_manifest_path));
                        return r;
                }
                kc_log_info_s("Adding static pod path", KC_KV_STR("path", d->f->pod_manifest_path));
        }
        return 0;
}

static int start_http(struct daemon *d)
{
        const struct kc_http_check checks[] = {
                { .name = "log", .fn = log_healthy },
                { .name = "syncloop", .fn = sync_loop_healthy, .userdata = d->k.loop },
        };
        struct kc_http_config hc = {
                .address = d->f->address,
                .port = d->f->port,
                .checks = checks,
                .n_checks = KC_ELEMENTSOF(checks),
                .metrics = d->registry,
                .stream_pods = &pods_stream,
                .pods_userdata = d,
                .render_node = kc_node_status_render,
                .node_userdata = d->node,
        };
        int r;

        if (d->f->port) {
                r = kc_http_server_start(&hc, &d->http);
                if (r < 0) {
                        kc_log_error_s(strerror(-r), "Failed to start the read-only server",
                                       KC_KV_STR("address", d->f->address),
                                       KC_KV_UINT("port", d->f->port));
                        return r;
                }
                kc_log_info_s("Starting to listen read-only", KC_KV_STR("address", d->f->address),
                              KC_KV_UINT("port", kc_http_server_port(d->http)));
        }
        if (d->f->healthz_port) {
                /* The healthz server serves /healthz alone (server.go). */
                hc = (struct kc_http_config){
                        .address = d->f->healthz_bind_address,
                        .port = d->f->healthz_port,
                        .checks = checks,
                        .n_checks = KC_ELEMENTSOF(checks),
                };
                r = kc_http_server_start(&hc, &d->healthz);
                if (r < 0) {
                        kc_log_error_s(strerror(-r), "Failed to start the healthz server",
                                       KC_KV_STR("address", d->f->healthz_bind_address),
                                       KC_KV_UINT("port", d->f->healthz_port));
                        return r;
                }
                kc_log_info_s("Starting healthz server",
                              KC_KV_STR("address", d->f->healthz_bind_address),
                              KC_KV_UINT("port", kc_http_server_port(d->healthz)));
        }
        return 0;
}

/* Run: the background loops, then syncLoop on this thread until a stop signal. */
static int run(struct daemon *d)
{
        int r;

        r = kc_runtime_up_poller_start(d->k.runtime_state, d->svc, d->clock, KC_RUNTIME_UP_PERIOD,
                                       &d->runtime_up);
        if (r < 0)
                return r;
        r = kc_generic_pleg_start(d->k.pleg);
        if (r >= 0 && d->evented)
                r = kc_evented_pleg_start(d->evented);
        if (r < 0)
                return r;
        /* syncNodeStatus's loop: Ready's transitions. */
        r = kc_node_status_start(d->node, KC_NODE_STATUS_UPDATE_FREQUENCY);
        if (r < 0)
                return r;
        r = start_http(d);
        if (r < 0)
                return r;
        /* kc_sync_loop_run() says "Starting kubelet main sync loop", as syncLoop does. */
        return kc_sync_loop_run(d->k.loop);
}

/* Stops every thread first (reverse start order), then frees every object. */
static void teardown(struct daemon *d)
{
        d->http = kc_http_server_stop(d->http);
        d->healthz = kc_http_server_stop(d->healthz);
        d->file_source = kc_file_source_stop(d->file_source);
        /*
         * Calls blocked on a hung runtime end now, not at their deadlines.
         * The PLEGs learn first that the stream's end and failed relists
         * are the shutdown's, not errors to log (or relist after).
         */
        kc_evented_pleg_begin_stop(d->evented);
        if (d->k.pleg)
                kc_generic_pleg_begin_stop(d->k.pleg);
        kc_cri_shutdown(d->cri);
        if (d->evented)
                kc_evented_pleg_stop(d->evented);
        if (d->k.pleg)
                kc_generic_pleg_stop(d->k.pleg);
        d->runtime_up = kc_runtime_up_poller_stop(d->runtime_up);
        kc_node_status_stop(d->node);
        kc_kubelet_parts_stop(&d->k);

        d->node = kc_node_status_free(d->node);
        d->evented = kc_evented_pleg_free(d->evented);
        kc_kubelet_parts_done(&d->k);
        d->manager = kc_runtime_manager_free(d->manager);
        d->helper = kc_kubelet_runtime_helper_free(d->helper);
        d->sim = kc_sim_free(d->sim); /* the simulated containers end with the process */
        d->instrumented = kc_instrumented_runtime_free(d->instrumented);
        d->cri = kc_cri_free(d->cri);
        d->registry = kc_metrics_registry_free(d->registry);
        free(d->runtime_version);
        free(d->runtime_name);
        free(d->node_ip);
}

int kc_cmd_daemon(const struct kc_kubelet_flags *f)
{
        struct daemon d = { .f = f, .clock = kc_clock_real() };
        unsigned arenas;
        int r;

        /* Stop signals are read by syncLoop's signalfd: block them before any thread starts. */
        sigemptyset(&d.stop_signals);
        sigaddset(&d.stop_signals, SIGTERM);
        sigaddset(&d.stop_signals, SIGINT);
        pthread_sigmask(SIG_BLOCK, &d.stop_signals, NULL);
        signal(SIGPIPE, SIG_IGN);

        kc_log_info_s("Starting cubelet", KC_KV_STR("version", "v" KC_VERSION),
                      KC_KV_STR("nodeName", f->hostname_override));
        /* Before any thread starts, so that none gets an arena beyond the cap. */
        r = kc_memory_tune_process(&arenas);
        if (r < 0)
                kc_log_v_s(1, "Malloc arenas left as they are", KC_KV_ERRNO(r));
        else if (arenas > 0)
                kc_log_v_s(1, "Malloc uses its main arena alone", KC_KV_UINT("arenas", arenas));
        else
                kc_log_v_s(1, "Malloc arenas left to MALLOC_ARENA_MAX or GLIBC_TUNABLES");
        r = detect_node_ip(f->node_ip, &d.node_ip);
        if (r >= 0)
                r = kc_metrics_registry_new(&d.registry);
        if (r >= 0)
                r = kc_kubelet_metrics_register(d.registry, &d.metrics);
        if (r >= 0)
                r = kc_process_metrics_register(d.registry, NULL);
        /* metrics.NodeName: always 1, for the node's name. */
        if (r >= 0 && f->hostname_override)
                r = kc_gauge_vec_set_mp(d.metrics.node_name, f->hostname_override, 1);
        if (r >= 0)
                r = open_runtime(&d);
        if (r >= 0)
                r = build(&d);
        if (r >= 0)
                r = run(&d);
        if (r < 0)
                kc_log_error_s(strerror(-r), "cubelet failed");
        else
                kc_log_info_s("Shutting down: stop signal received");
        teardown(&d);
        if (r >= 0)
                kc_log_info_s("Shutdown complete");
        return r < 0 ? 1 : 0;
}
