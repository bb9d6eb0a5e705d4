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

int kc_render_pod_list(struct kc_pod_manager *pm, struct kc_status_manager *sm,
                       const char *node_name, char **ret_json)
{
        _cleanup_(pods_done) struct pods pods = { 0 };
        _cleanup_json_ json_t *list = NULL, *items = NULL;
        json_t *status, *item;
        size_t i;
        char *s;
        int r;

        if (!pm || !sm || !ret_json)
                return -EINVAL;
        pods.n = kc_pod_manager_get_pods(pm, &pods.v);
        if (!pods.v)
                return -ENOMEM;
        qsort(pods.v, pods.n, sizeof(*pods.v), cmp_pod);

        items = json_array();
        if (!items)
                return -ENOMEM;
        for (i = 0; i < pods.n; i++) {
                status = NULL;
                r = kc_status_manager_get_pod_status(sm, pods.v[i]->uid, &status);
                if (r == -ENOENT)
                        status = json_pack("{s:s}", "phase", "Pending");
                else if (r < 0)
                        return r;
                if (!status)
                        return -ENOMEM;
                item = NULL;
                r = kc_api_pod_to_json(pods.v[i], node_name, status, &item);
                json_decref(status);
                if (r < 0)
                        return r;
                if (json_array_append_new(items, item) < 0)
                        return -ENOMEM;
        }

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
