/* SPDX-License-Identifier: Apache-2.0 */
/* The /pods document: the pod manager's pods with the status manager's statuses, as a v1 PodList. */
#include <errno.h>
#include <jansson.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/cleanup.h"
#include "kubelet/kubelet_pods.h"
#include "kubelet/pod_manager.h"
#include "kubelet/status/pod_status.h"
#include "kubelet/status/status_manager.h"
#include "runtime/api_pod.h"

struct pods {
        struct kc_api_pod **v;
        size_t n;
};

static void pods_done(struct pods *p)
{
        size_t i;

        for (i = 0; p->v && i < p->n; i++)
                kc_api_pod_unref(p->v[i]);
        free(p->v);
        p->v = NULL;
}

static int strcmp_null(const char *a, const char *b)
{
        return strcmp(a ? a : "", b ? b : "");
}

static int cmp_pod(const void *a, const void *b)
{
        const struct kc_api_pod *x = *(struct kc_api_pod *const *)a;
        const struct kc_api_pod *y = *(struct kc_api_pod *const *)b;
        int r;

        r = strcmp_null(x->namespace, y->namespace);
        if (r == 0)
                r = strcmp_null(x->name, y->name);
        if (r == 0)
                r = strcmp_null(x->uid, y->uid);
        return r;
}

/* The pods of the list and where their statuses and node name come from, for pod_item(). */
struct pod_items {
        struct kc_api_pod *const *pods;
        struct kc_status_manager *sm;
        const char *node_name;
};

/* A kc_json_item_fn: the v1 Pod of pod @p i, with its status (Pending when it has none yet). */
static int pod_item(const void *userdata, size_t i, json_t **ret)
{
        const struct pod_items *pi = userdata;
        _cleanup_json_ json_t *status = NULL;
        int r;

        r = kc_status_manager_get_pod_status(pi->sm, pi->pods[i]->uid, &status);
        if (r == -ENOENT)
                status = json_pack("{s:s}", "phase", "Pending");
        else if (r < 0)
                return r;
        if (!status)
                return -ENOMEM;
        return kc_api_pod_to_json(pi->pods[i], pi->node_name, status, ret);
}

int kc_render_pod_list(struct kc_pod_manager *pm, struct kc_status_manager *sm,
                       const char *node_name, char **ret_json)
{
        _cleanup_(pods_done) struct pods pods = { 0 };
        _cleanup_json_ json_t *list = NULL, *items = NULL;
        char *s;
        int r;

        if (!pm || !sm || !ret_json)
                return -EINVAL;
        pods.n = kc_pod_manager_get_pods(pm, &pods.v);
        if (!pods.v)
                return -ENOMEM;
        qsort(pods.v, pods.n, sizeof(*pods.v), cmp_pod);

        r = kc_json_array_build(pods.n, pod_item, &(struct pod_items){ pods.v, sm, node_name },
                                &items);
        if (r < 0)
                return r;

        list = json_pack("{s:s, s:s, s:{}, s:O}", "kind", "PodList", "apiVersion", "v1", "metadata",
                         "items", items);
        if (!list)
                return -ENOMEM;
        s = json_dumps(list, JSON_COMPACT);
        if (!s)
                return -ENOMEM;
        *ret_json = s;
        return 0;
}
