/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NewMainKubelet's parts over a runtime, in upstream's order. The daemon
 * (cmd/daemon.c) and the chaos test (tests/chaos) both assemble the
 * kubelet here, so the test runs exactly the wiring the daemon runs.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "core/backoff.h"
#include "core/chan.h"
#include "core/work_queue.h"
#include "health/runtime_state.h"
#include "kubelet/config/pod_update.h"
#include "kubelet/kubelet.h"
#include "kubelet/kubelet_parts.h"
#include "kubelet/pod_container_deletor.h"
#include "kubelet/pod_manager.h"
#include "kubelet/pod_syncer.h"
#include "kubelet/prober/prober.h"
#include "kubelet/prober/prober_manager.h"
#include "kubelet/status/reason_cache.h"
#include "kubelet/status/status_manager.h"
#include "kubelet/sync_loop.h"
#include "pleg/event.h"
#include "pleg/generic.h"
#include "podworkers/pod_workers.h"
#include "probe_target.h"
#include "runtime/cache.h"
#include "runtime/images.h"
#include "runtime/manager.h"
#include "volume_manager.h"
#include "runtime/sync_pod.h"

/* Upstream constants (UPSTREAM.md §1). */
#define CONFIG_CHANNEL_CAPACITY 50 /* the config mux's updates channel */
#define PLEG_CHANNEL_CAPACITY 1000 /* plegChannelCapacity */
/* Upstream's three results managers' updates channels hold 20 each; ours is one. */
#define PROBE_CHANNEL_CAPACITY 60

static bool pleg_healthy(void *ud, char **ret_err)
{
        return kc_generic_pleg_healthy(ud, ret_err);
}

/* probeManager: the prober over the runtime service, the manager reading the status manager. */
static int build_probers(const struct kc_kubelet_parts_config *cfg, struct kc_kubelet_parts *p)
{
        struct kc_prober_manager_config pmc;
        int r;

        if ((r = kc_chan_new(&p->probe_updates, PROBE_CHANNEL_CAPACITY, kc_probe_update_free)) <
                    0 ||
            (r = kc_prober_new(cfg->svc, cfg->clock, &p->prober)) < 0)
                return r;
        pmc = (struct kc_prober_manager_config){
                .clock = cfg->clock,
                .runner = &kc__probe_runner_ops,
                .runner_self = p->prober,
                .status = &kc__probe_status_ops,
                .status_self = p->status_manager,
                .updates = p->probe_updates,
                .metrics = cfg->registry,
        };
        return kc_prober_manager_new(&pmc, &p->prober_manager);
}

/* syncLoop over the config, PLEG and probe channels, with the kubelet as its SyncHandler. */
static int build_loop(const struct kc_kubelet_parts_config *cfg, struct kc_kubelet_parts *p)
{
        struct kc_sync_loop_config lc;

        lc = (struct kc_sync_loop_config){
                .clock = cfg->clock,
                .config = p->config,
                .pleg = p->events,
                .probes = p->probe_updates,
                .status_manager = p->status_manager,
                .runtime_state = p->runtime_state,
                .handler = &kc_kubelet_sync_handler,
                .handler_userdata = p->kubelet,
                .sources = cfg->sources,
                .n_sources = cfg->n_sources,
                .resync_interval_ns = cfg->sync_frequency_ns,
                .stop_signals = cfg->stop_signals,
        };
        return kc_sync_loop_new(&lc, &p->loop);
}

int kc_kubelet_parts_build(const struct kc_kubelet_parts_config *cfg, struct kc_kubelet_parts *p)
{
        struct kc_generic_pleg_config pc;
        struct kc_pod_syncer_config sc;
        struct kc_pod_workers_config wc;
        struct kc_kubelet_deps kd;
        int keep, r;

        if (!cfg || !p || !cfg->clock || !cfg->manager || !cfg->svc.ops)
                return -EINVAL;
        *p = (struct kc_kubelet_parts){ 0 };
        if ((r = kc_pod_cache_new(&p->cache)) < 0 ||
            (r = kc_pod_manager_new(&p->pod_manager)) < 0 ||
            (r = kc_backoff_new(cfg->clock, cfg->crash_loop_initial_ns, cfg->crash_loop_max_ns,
                                &p->backoff)) < 0 ||
            (r = kc_backoff_new(cfg->clock, KC_IMAGE_BACKOFF_INITIAL_NS, KC_IMAGE_BACKOFF_MAX_NS,
                                &p->image_backoff)) < 0 ||
            (r = kc_reason_cache_new(&p->reasons)) < 0 ||
            (r = kc_status_manager_new(&p->status_manager)) < 0 ||
            (r = kc_runtime_state_new(cfg->clock, cfg->max_wait_for_container_runtime_ns,
                                      &p->runtime_state)) < 0 ||
            (r = kc_chan_new(&p->config, CONFIG_CHANNEL_CAPACITY, kc_pod_update_free_item)) < 0 ||
            (r = kc_chan_new(&p->events, PLEG_CHANNEL_CAPACITY, kc_pleg_event_free_item)) < 0 ||
            (r = build_probers(cfg, p)) < 0)
                return r;

        pc = (struct kc_generic_pleg_config){
                .runtime = kc_runtime_manager_pod_runtime(cfg->manager),
                .events = p->events,
                .cache = p->cache,
                .clock = cfg->clock,
                .metrics = cfg->metrics,
                .relist_period_ns = cfg->relist_period_ns,
                .relist_threshold_ns = cfg->relist_threshold_ns,
                .evented_in_use = cfg->evented_in_use,
                .evented_userdata = cfg->evented_userdata,
        };
        if ((r = kc_generic_pleg_new(&pc, &p->pleg)) < 0 ||
            (r = kc_runtime_state_add_health_check(p->runtime_state, "PLEG", pleg_healthy,
                                                   p->pleg)) < 0 ||
            (r = kc_work_queue_new(cfg->clock, &p->work_queue)) < 0)
                return r;

        sc = (struct kc_pod_syncer_config){
                .clock = cfg->clock,
                .manager = cfg->manager,
                .runtime_state = p->runtime_state,
                .status_manager = p->status_manager,
                .reasons = p->reasons,
                .backoff = p->backoff,
                .image_backoff = p->image_backoff,
                .metrics = cfg->metrics,
                .node_ip = cfg->node_ip,
                .runtime_name = cfg->runtime_name,
                .prober_manager = p->prober_manager,
        };
        if (cfg->root_dir) {
                const struct kc_volume_manager_config vc = { .root_dir = cfg->root_dir };

                if ((r = kc__volume_manager_new(&vc, &p->volume_manager)) < 0)
                        return r;
                sc.volume_manager = p->volume_manager;
        }
        if ((r = kc_pod_syncer_new(&sc, &p->syncer)) < 0)
                return r;
        wc = (struct kc_pod_workers_config){
                .clock = cfg->clock,
                .cache = p->cache,
                .syncer = &kc_pod_syncer_kubelet_ops,
                .syncer_userdata = p->syncer,
                .enqueue = kc_kubelet_enqueue,
                .enqueue_userdata = p->work_queue,
                .resync_interval_ns = cfg->sync_frequency_ns,
                .metrics = cfg->metrics,
        };
        if ((r = kc_pod_workers_new(&wc, &p->pod_workers)) < 0)
                return r;
        /* minDeadContainerInPod: at least one dead instance is kept. */
        keep = cfg->maximum_dead_containers_per_container;
        if ((r = kc_pod_container_deletor_new(cfg->svc.ops->remove_container, cfg->svc.self,
                                              keep < 1 ? 1 : keep, &p->deletor)) < 0)
                return r;

        kd = (struct kc_kubelet_deps){
                .clock = cfg->clock,
                .pod_manager = p->pod_manager,
                .pod_workers = p->pod_workers,
                .work_queue = p->work_queue,
                .deletor = p->deletor,
                .cache = p->cache,
                .runtime = kc_runtime_manager_pod_runtime(cfg->manager),
                .backoff = p->backoff,
                .status_manager = p->status_manager,
                .reasons = p->reasons,
                .metrics = cfg->metrics,
                .prober_manager = p->prober_manager,
                .volume_manager = p->volume_manager,
                .pod_logs_root = kc_runtime_manager_pod_logs_root(cfg->manager),
        };
        if ((r = kc_kubelet_new(&kd, &p->kubelet)) < 0)
                return r;
        if ((r = build_loop(cfg, p)) < 0)
                return r;
        kc_kubelet_set_sync_loop(p->kubelet, p->loop);
        return 0;
}

void kc_kubelet_parts_stop(struct kc_kubelet_parts *p)
{
        if (!p)
                return;
        kc_kubelet_stop(p->kubelet); /* its container GC reads the pod workers */
        p->pod_workers = kc_pod_workers_free(p->pod_workers);
        /* After the pod workers (they add pods), before what the probe workers read. */
        p->prober_manager = kc_prober_manager_free(p->prober_manager);
        p->deletor = kc_pod_container_deletor_free(p->deletor);
}

void kc_kubelet_parts_done(struct kc_kubelet_parts *p)
{
        if (!p)
                return;
        kc_kubelet_parts_stop(p);
        p->loop = kc_sync_loop_free(p->loop);
        p->kubelet = kc_kubelet_free(p->kubelet);
        p->syncer = kc_pod_syncer_free(p->syncer);
        p->volume_manager = kc__volume_manager_free(p->volume_manager);
        p->work_queue = kc_work_queue_free(p->work_queue);
        p->pleg = kc_generic_pleg_free(p->pleg);
        p->prober = kc_prober_free(p->prober);
        p->probe_updates = kc_chan_free(p->probe_updates);
        p->events = kc_chan_free(p->events);
        p->config = kc_chan_free(p->config);
        p->runtime_state = kc_runtime_state_free(p->runtime_state);
        p->status_manager = kc_status_manager_free(p->status_manager);
        p->reasons = kc_reason_cache_free(p->reasons);
        p->image_backoff = kc_backoff_free(p->image_backoff);
        p->backoff = kc_backoff_free(p->backoff);
        p->pod_manager = kc_pod_manager_free(p->pod_manager);
        p->cache = kc_pod_cache_free(p->cache);
}
