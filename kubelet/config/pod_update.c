/* SPDX-License-Identifier: Apache-2.0 */
/* kubetypes.PodUpdate: what config sources send on the config channel. */
#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/cleanup.h"
#include "core/enum_table.h"
#include "kubelet/config/pod_update.h"
#include "runtime/api_pod.h"

KC_DEFINE_STRING_TABLE(kc_pod_op, enum kc_pod_op,
                       _KC_POD_OP_MAX, [KC_POD_OP_SET] = "SET", [KC_POD_OP_ADD] = "ADD",
                       [KC_POD_OP_DELETE] = "DELETE", [KC_POD_OP_REMOVE] = "REMOVE",
                       [KC_POD_OP_UPDATE] = "UPDATE", [KC_POD_OP_RECONCILE] = "RECONCILE", )

struct kc_pod_update *kc_pod_update_new(enum kc_pod_op op, const char *source,
                                        struct kc_api_pod *const *pods, size_t n_pods)
{
        size_t src_len = source ? strlen(source) + 1 : 0, i;
        struct kc_pod_update *u;
        char *s;

        u = malloc(sizeof(*u) + n_pods * sizeof(u->pods[0]) + src_len);
        if (!u)
                return NULL;
        u->op = op;
        u->n_pods = n_pods;
        for (i = 0; i < n_pods; i++)
                u->pods[i] = kc_api_pod_ref(pods[i]);
        s = (char *)&u->pods[n_pods];
        if (source)
                memcpy(s, source, src_len);
        u->source = source ? s : NULL;
        return u;
}

void kc_pod_update_free(struct kc_pod_update *u)
{
        size_t i;

        if (!u)
                return;
        for (i = 0; i < u->n_pods; i++)
                kc_api_pod_unref(u->pods[i]);
        free(u);
}

void kc_pod_update_free_item(void *u)
{
        kc_pod_update_free(u);
}
