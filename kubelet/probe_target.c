/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The prober manager's two seams as the daemon fills them: the status its
 * workers read (the status manager's v1 status of the pod) and the probe
 * runner (kc_prober_probe()).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/cleanup.h"
#include "kubelet/prober/prober.h"
#include "kubelet/status/status_manager.h"
#include "probe_target.h"

/* A metav1.Time ("2026-11-21T10:00:00Z", fractions ignored) in ns; 0 when unreadable. */
static int64_t parse_time(const char *s)
{
        struct tm tm = { 0 };
        char z = 0;

        if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                         &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &z) < 6)
                return 0;
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        return (int64_t)timegm(&tm) * KC_NSEC_PER_SEC;
}

/* GetContainerStatus in @key's list, with a containerID. */
static const json_t *find_status(const json_t *status, const char *key, const char *name)
{
        const json_t *cs;
        size_t i;

        json_array_foreach (json_object_get(status, key), i, cs) {
                const char *n = json_string_value(json_object_get(cs, "name"));
                const char *id = json_string_value(json_object_get(cs, "containerID"));

                if (n && strcmp(n, name) == 0)
                        return id && *id ? cs : NULL;
        }
        return NULL;
}

int kc__probe_target_from_status(const json_t *status, const char *name,
                                 struct kc_probe_target *ret)
{
        const char *phase = json_string_value(json_object_get(status, "phase"));
        const char *ip = json_string_value(json_object_get(status, "podIP"));
        const json_t *cs, *state;
        const char *id, *sep;

        *ret = (struct kc_probe_target){ 0 };
        ret->pod_terminal =
                phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
        if (ip && *ip && !(ret->pod_ip = strdup(ip)))
                return -ENOMEM;
        cs = find_status(status, "containerStatuses", name);
        if (!cs)
                cs = find_status(status, "initContainerStatuses", name);
        if (!cs)
                return 0;
        id = json_string_value(json_object_get(cs, "containerID"));
        sep = strstr(id, "://");
        ret->container_id = strdup(sep ? sep + 3 : id);
        if (!ret->container_id) {
                kc_probe_target_done(ret);
                return -ENOMEM;
        }
        state = json_object_get(cs, "state");
        ret->running = json_is_object(json_object_get(state, "running"));
        ret->started_at_ns = parse_time(
                json_string_value(json_object_get(json_object_get(state, "running"), "startedAt")));
        ret->terminated = json_is_object(json_object_get(state, "terminated"));
        ret->started = json_is_true(json_object_get(cs, "started"));
        return 0;
}

static int status_get(void *self, const char *pod_uid, const char *name,
                      struct kc_probe_target *ret)
{
        _cleanup_json_ json_t *status = NULL;
        int r = kc_status_manager_get_pod_status(self, pod_uid, &status);

        if (r < 0)
                return r;
        return kc__probe_target_from_status(status, name, ret);
}

const struct kc_probe_status_ops kc__probe_status_ops = { .get = status_get };

static int run_probe(void *self, enum kc_probe_type t, const struct kc_api_pod *pod,
                     const char *pod_ip, const struct kc_api_container *c, const char *container_id,
                     enum kc_probe_result *ret, char **ret_output)
{
        return kc_prober_probe(self, t, pod, pod_ip, c, container_id, ret, ret_output);
}

const struct kc_probe_runner_ops kc__probe_runner_ops = { .probe = run_probe };
