/* SPDX-License-Identifier: Apache-2.0 */
/* PodLifecycleEvent (upstream pkg/kubelet/pleg/pleg.go). */
#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/cleanup.h"
#include "core/enum_table.h"
#include "core/memory.h"
#include "pleg/event.h"

KC_DEFINE_STRING_TABLE(
        kc_pleg_event_type, enum kc_pleg_event_type,
        _KC_PLEG_EVENT_TYPE_MAX, [KC_PLEG_CONTAINER_STARTED] = "ContainerStarted",
        [KC_PLEG_CONTAINER_DIED] = "ContainerDied",
        [KC_PLEG_CONTAINER_REMOVED] = "ContainerRemoved", [KC_PLEG_POD_SYNC] = "PodSync",
        [KC_PLEG_CONTAINER_CHANGED] = "ContainerChanged", )

struct kc_pleg_event *kc_pleg_event_new(const char *pod_id, enum kc_pleg_event_type type,
                                        const char *data)
{
        struct kc_pleg_event *e;
        size_t id_len, data_len;
        uint8_t cls;

        assert(pod_id);
        if (!data)
                data = "";
        id_len = strlen(pod_id) + 1;
        data_len = strlen(data) + 1;
        /* One block: the header, the pod ID, then the data string. */
        e = kc_block_alloc(sizeof(*e) + id_len + data_len, &cls);
        if (!e)
                return NULL;
        e->type = type;
        e->block_class = cls;
        memcpy(e->pod_id, pod_id, id_len);
        memcpy(e->pod_id + id_len, data, data_len);
        e->data = e->pod_id + id_len;
        return e;
}

void kc_pleg_event_free(struct kc_pleg_event *e)
{
        if (e)
                kc_block_free(e, e->block_class);
}

void kc_pleg_event_free_item(void *e)
{
        kc_pleg_event_free(e);
}
