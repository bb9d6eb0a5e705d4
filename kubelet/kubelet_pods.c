/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The /pods document: the pod manager's pods with the status manager's
 * statuses, as a v1 PodList, written one pod at a time.
 *
 * The list's frame is constant; only the items vary. So the stream prints
 * the frame's head, then each pod's object in turn (a jansson tree of that
 * one pod, dumped and freed before the next), then the frame's tail. The
 * bytes are those json_dumps(JSON_COMPACT) gives for the whole PodList
 * tree: a compact dump has no separator between values other than ',' and
 * ':', and an object's keys come in insertion order, so an array's dump is
 * its items' dumps joined with ','. The peak memory is then one pod's tree
 * and the text of one pod, not the tree of the whole list.
 */
#include <errno.h>
#include <jansson.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/cleanup.h"
#include "kubelet/kubelet_pods.h"
#include "kubelet/pod_manager.h"
#include "kubelet/status/pod_status.h"
#include "kubelet/status/status_manager.h"
#include "runtime/api_pod.h"

/* What json_dumps(JSON_COMPACT) prints around the items of a PodList. */
#define POD_LIST_HEAD "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{},\"items\":["
#define POD_LIST_TAIL "]}"
#define POD_LIST_DUMP_FLAGS JSON_COMPACT

/* A growable NUL-terminated text. */
struct text {
        char *s;
        size_t len, cap;
};

static int text_append(struct text *t, const char *s, size_t n)
{
        if (KC_ARRAY_GROW(t->s, t->cap, t->len + n + 1, 4096) < 0)
                return -ENOMEM;
        memcpy(t->s + t->len, s, n);
        t->len += n;
        t->s[t->len] = '\0';
        return 0;
}

struct kc_pod_list_stream {
        struct kc_api_pod **pods; /* references, sorted */
        size_t n_pods;
        size_t next;   /* the next pod to print */
        bool head_out; /* POD_LIST_HEAD printed */
        bool done;     /* POD_LIST_TAIL printed */
        struct kc_status_manager *sm;
        char *node_name;
        struct text out; /* what the last kc_pod_list_stream_next() handed out */
};

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

struct kc_pod_list_stream *kc_pod_list_stream_close(struct kc_pod_list_stream *st)
{
        if (!st)
                return NULL;
        for (size_t i = 0; st->pods && i < st->n_pods; i++)
                kc_api_pod_unref(st->pods[i]);
        free(st->pods);
        free(st->node_name);
        free(st->out.s);
        free(st);
        return NULL;
}

int kc_pod_list_stream_open(struct kc_pod_manager *pm, struct kc_status_manager *sm,
                            const char *node_name, struct kc_pod_list_stream **ret)
{
        _cleanup_(kc_pod_list_stream_closep) struct kc_pod_list_stream *st = NULL;

        if (!pm || !sm || !ret)
                return -EINVAL;
        st = calloc(1, sizeof(*st));
        if (!st)
                return -ENOMEM;
        st->sm = sm;
        if (node_name && !(st->node_name = strdup(node_name)))
                return -ENOMEM;
        st->n_pods = kc_pod_manager_get_pods(pm, &st->pods);
        if (!st->pods)
                return -ENOMEM;
        qsort(st->pods, st->n_pods, sizeof(*st->pods), cmp_pod);
        *ret = TAKE_PTR(st);
        return 0;
}

/* A json_dump_callback_t appending to a struct text. */
static int text_dump(const char *s, size_t n, void *data)
{
        return text_append(data, s, n) < 0 ? -1 : 0;
}

/* Appends pod @p i's v1 Pod, with its status (Pending when it has none yet). */
static int append_pod(struct kc_pod_list_stream *st, size_t i)
{
        _cleanup_json_ json_t *status = NULL, *item = NULL;
        int r;

        r = kc_status_manager_get_pod_status(st->sm, st->pods[i]->uid, &status);
        if (r == -ENOENT)
                status = json_pack("{s:s}", "phase", "Pending");
        else if (r < 0)
                return r;
        if (!status)
                return -ENOMEM;
        r = kc_api_pod_to_json(st->pods[i], st->node_name, status, &item);
        if (r < 0)
                return r;
        if (i > 0 && text_append(&st->out, ",", 1) < 0)
                return -ENOMEM;
        return json_dump_callback(item, text_dump, &st->out, POD_LIST_DUMP_FLAGS) < 0 ? -ENOMEM : 0;
}

int kc_pod_list_stream_next(struct kc_pod_list_stream *st, const char **ret_data, size_t *ret_len)
{
        int r;

        if (!st || !ret_data || !ret_len)
                return -EINVAL;
        st->out.len = 0;
        if (!st->head_out) {
                if (text_append(&st->out, POD_LIST_HEAD, strlen(POD_LIST_HEAD)) < 0)
                        return -ENOMEM;
                st->head_out = true;
        }
        if (st->next < st->n_pods) {
                r = append_pod(st, st->next);
                if (r < 0)
                        return r;
                /* Done with the pod: its reference goes now, not at the end. */
                kc_api_pod_unref(st->pods[st->next]);
                st->pods[st->next++] = NULL;
        } else if (!st->done) {
                if (text_append(&st->out, POD_LIST_TAIL, strlen(POD_LIST_TAIL)) < 0)
                        return -ENOMEM;
                st->done = true;
        }
        *ret_data = st->out.s ? st->out.s : "";
        *ret_len = st->out.len;
        return 0;
}

int kc_render_pod_list(struct kc_pod_manager *pm, struct kc_status_manager *sm,
                       const char *node_name, char **ret_json)
{
        _cleanup_(kc_pod_list_stream_closep) struct kc_pod_list_stream *st = NULL;
        struct text all = { 0 };
        const char *data;
        size_t n;
        int r;

        if (!ret_json)
                return -EINVAL;
        r = kc_pod_list_stream_open(pm, sm, node_name, &st);
        while (r >= 0) {
                r = kc_pod_list_stream_next(st, &data, &n);
                if (r < 0 || n == 0)
                        break;
                r = text_append(&all, data, n);
        }
        if (r < 0) {
                free(all.s);
                return r;
        }
        *ret_json = all.s;
        return 0;
}
