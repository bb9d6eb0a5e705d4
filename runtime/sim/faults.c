/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Call accounting and fault injection. Every call of either face enters
 * through kc__sim_enter_locked(): it is counted per operation (GetPodStatus
 * per pod UID too), may sleep an injected latency spike and may fail with an
 * injected fault. Faults and spikes wait in two FIFOs, each entry used up
 * after its count of matching calls.
 */
#include <errno.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cri/grpc.h"
#include "../internal.h"
#include "core/clock.h"
#include "core/enum_table.h"
#include "core/list.h"
#include "core/lock.h"
#include "core/map.h"
#include "runtime/error.h"
#include "runtime/sim.h"
#include "sim_internal.h"

KC_DEFINE_STRING_TABLE_LOOKUP(
        kc__sim_op, enum sim_op,
        _SIM_OP_MAX, [SIM_OP_GET_PODS] = "GetPods", [SIM_OP_GET_POD_STATUS] = "GetPodStatus",
        [SIM_OP_VERSION] = "Version", [SIM_OP_STATUS] = "Status",
        [SIM_OP_RUN_POD_SANDBOX] = "RunPodSandbox", [SIM_OP_STOP_POD_SANDBOX] = "StopPodSandbox",
        [SIM_OP_REMOVE_POD_SANDBOX] = "RemovePodSandbox",
        [SIM_OP_POD_SANDBOX_STATUS] = "PodSandboxStatus",
        [SIM_OP_LIST_POD_SANDBOX] = "ListPodSandbox", [SIM_OP_CREATE_CONTAINER] = "CreateContainer",
        [SIM_OP_START_CONTAINER] = "StartContainer", [SIM_OP_STOP_CONTAINER] = "StopContainer",
        [SIM_OP_REMOVE_CONTAINER] = "RemoveContainer", [SIM_OP_LIST_CONTAINERS] = "ListContainers",
        [SIM_OP_CONTAINER_STATUS] = "ContainerStatus", [SIM_OP_IMAGE_STATUS] = "ImageStatus",
        [SIM_OP_PULL_IMAGE] = "PullImage", [SIM_OP_EXEC_SYNC] = "ExecSync")

/* GetPodStatus calls of one pod UID. */
struct status_count {
        uint64_t count;
        char uid[];
};

static int count_call(struct kc_sim *s, enum sim_op op, const char *uid)
{
        struct status_count *e;
        size_t n;

        if (op != SIM_OP_GET_POD_STATUS) {
                s->op_counts[op]++;
                return 0;
        }
        uid = uid ? uid : "";
        e = kc_map_get(s->status_counts, uid);
        if (!e) {
                n = strlen(uid) + 1;
                e = malloc(sizeof(*e) + n);
                if (!e)
                        return -ENOMEM;
                e->count = 0;
                memcpy(e->uid, uid, n);
                if (kc_map_put(s->status_counts, e->uid, e) < 0) {
                        free(e);
                        return -ENOMEM;
                }
        }
        e->count++;
        return 0;
}

/*
 * Consumes one use of the oldest entry of @p fifo matching (op, key):
 * copies it to *ret and returns true (the entry is freed when used up).
 */
static bool take_entry(struct kc_list *fifo, size_t *n, enum sim_op op, const char *key,
                       struct sim_fault *ret, char *msg, size_t msg_size)
{
        struct sim_fault *f;

        kc_list_for_each_entry (f, fifo, struct sim_fault, link) {
                if (f->op != op || (f->key && !kc__streq(f->key, key)))
                        continue;
                *ret = *f;
                if (msg)
                        snprintf(msg, msg_size, "%s", f->message ? f->message : "");
                if (--f->remaining == 0) {
                        kc_list_del(&f->link);
                        free(f);
                        (*n)--;
                }
                return true;
        }
        return false;
}

/* Frees every entry of @p fifo. */
static void fifo_clear(struct kc_list *fifo, size_t *n)
{
        struct sim_fault *f, *next;

        kc_list_for_each_entry_safe (f, next, fifo, struct sim_fault, link)
                free(f);
        kc_list_init(fifo);
        *n = 0;
}

int kc__sim_enter_locked(struct kc_sim *s, enum sim_op op, const char *key,
                         struct kc_runtime_error *err)
{
        struct sim_fault f;
        char msg[256];
        int r;

        r = count_call(s, op, op == SIM_OP_GET_POD_STATUS ? key : NULL);
        if (r < 0)
                return kc_runtime_error_set(err, r, KC_RUNTIME_INTERNAL, "out of memory");
        s->calls++;
        if (take_entry(&s->delays, &s->n_delays, op, key, &f, NULL, 0)) {
                s->delays_taken++;
                s->n_delayed++;
                pthread_mutex_unlock(&s->lock);
                (void)kc_clock_sleep(s->clock, f.delay_ns, NULL);
                pthread_mutex_lock(&s->lock);
                s->n_delayed--;
        }
        if (take_entry(&s->faults, &s->n_faults, op, key, &f, msg, sizeof(msg))) {
                s->faults_taken++;
                return kc_runtime_error_set(err, kc_grpc_code_to_errno(f.code), f.code, "%s", msg);
        }
        kc__sim_advance_locked(s);
        return 0;
}

void kc__sim_faults_done(struct kc_sim *s)
{
        fifo_clear(&s->faults, &s->n_faults);
        fifo_clear(&s->delays, &s->n_delays);
        kc__sim_map_free_values(s->status_counts);
        s->status_counts = NULL;
}

/* Appends an entry (one allocation with its strings) to the faults or the delays. */
static int add_entry(struct kc_sim *s, bool delay, const char *op, const char *key,
                     enum kc_runtime_code code, const char *message, int64_t delay_ns,
                     unsigned times)
{
        struct kc__packer pk = { 0 };
        struct sim_fault *f = NULL;
        enum sim_op o;
        int pass;

        o = kc__sim_op_from_string(op);
        if (o < 0)
                return o;
        for (pass = 0; pass < 2; pass++) {
                const char *k, *m;

                f = kc__pack_reserve(&pk, sizeof(*f), alignof(struct sim_fault));
                k = kc__pack_str(&pk, key);
                m = kc__pack_str(&pk, message);
                if (pass == 0) {
                        pk.base = malloc(pk.off);
                        if (!pk.base)
                                return -ENOMEM;
                        pk.off = 0;
                        continue;
                }
                *f = (struct sim_fault){
                        .op = o,
                        .key = k,
                        .message = m,
                        .remaining = times,
                        .delay_ns = delay_ns,
                        .code = code,
                };
        }
        KC_LOCK_GUARD(&s->lock);
        if (delay) {
                kc_list_add_tail(&s->delays, &f->link);
                s->n_delays++;
        } else {
                kc_list_add_tail(&s->faults, &f->link);
                s->n_faults++;
        }
        return 0;
}

int kc_sim_inject_fault(struct kc_sim *s, const char *op, const char *key, const char *message,
                        unsigned times)
{
        return kc_sim_inject_fault_code(s, op, key, KC_RUNTIME_UNKNOWN, message, times);
}

int kc_sim_inject_fault_code(struct kc_sim *s, const char *op, const char *key,
                             enum kc_runtime_code code, const char *message, unsigned times)
{
        if (!s || !op || times == 0 || code <= KC_RUNTIME_OK || code > KC_RUNTIME_UNAUTHENTICATED)
                return -EINVAL;
        return add_entry(s, false, op, key, code, message ? message : "injected fault", 0, times);
}

int kc_sim_inject_latency(struct kc_sim *s, const char *op, const char *key, int64_t delay_ns,
                          unsigned times)
{
        if (!s || !op || times == 0 || delay_ns <= 0)
                return -EINVAL;
        return add_entry(s, true, op, key, KC_RUNTIME_OK, NULL, delay_ns, times);
}

void kc_sim_clear_faults(struct kc_sim *s)
{
        if (!s)
                return;
        KC_LOCK_GUARD(&s->lock);
        fifo_clear(&s->faults, &s->n_faults);
        fifo_clear(&s->delays, &s->n_delays);
}

int kc_sim_get_stats(struct kc_sim *s, struct kc_sim_stats *ret)
{
        if (!s || !ret)
                return -EINVAL;
        KC_LOCK_GUARD(&s->lock);
        *ret = (struct kc_sim_stats){
                .calls = s->calls,
                .delayed_now = s->n_delayed,
                .faults_pending = s->n_faults,
                .delays_pending = s->n_delays,
                .faults_taken = s->faults_taken,
                .delays_taken = s->delays_taken,
                .crashes = s->crashes,
        };
        return 0;
}

static int call_count_cmp(const void *a, const void *b)
{
        const struct kc_sim_call_count *x = a, *y = b;
        int r = strcmp(x->op, y->op);

        return r ? r : strcmp(x->key, y->key);
}

/* Lays out the call counts in @p pk (see kc__packer); @return how many. */
static size_t pack_call_counts(struct kc_sim *s, struct kc__packer *pk,
                               struct kc_sim_call_count **ret)
{
        struct kc_sim_call_count *out;
        size_t n = 0, i, iter;
        const char *key;
        void *value;

        for (i = 0; i < _SIM_OP_MAX; i++)
                if (i != SIM_OP_GET_POD_STATUS && s->op_counts[i] > 0)
                        n++;
        n += kc_map_size(s->status_counts);
        out = kc__pack_array(pk, struct kc_sim_call_count, n);
        n = 0;
        for (i = 0; i < _SIM_OP_MAX; i++) {
                const char *op, *k;

                if (i == SIM_OP_GET_POD_STATUS || s->op_counts[i] == 0)
                        continue;
                op = kc__pack_str(pk, kc__sim_op_to_string(i));
                k = kc__pack_str(pk, "");
                if (out)
                        out[n] = (struct kc_sim_call_count){ op, k, s->op_counts[i] };
                n++;
        }
        for (iter = 0; kc_map_next(s->status_counts, &iter, &key, &value);) {
                const struct status_count *e = value;
                const char *op = kc__pack_str(pk, kc__sim_op_to_string(SIM_OP_GET_POD_STATUS));
                const char *k = kc__pack_str(pk, e->uid);

                if (out)
                        out[n] = (struct kc_sim_call_count){ op, k, e->count };
                n++;
        }
        *ret = out;
        return n;
}

int kc_sim_call_counts(struct kc_sim *s, struct kc_sim_call_count **ret, size_t *ret_n)
{
        struct kc__packer pk = { 0 };
        struct kc_sim_call_count *out = NULL;
        size_t n;

        if (!s || !ret || !ret_n)
                return -EINVAL;
        KC_LOCK_GUARD(&s->lock);
        (void)pack_call_counts(s, &pk, &out);
        pk.base = malloc(pk.off ? pk.off : 1);
        if (!pk.base)
                return -ENOMEM;
        pk.off = 0;
        n = pack_call_counts(s, &pk, &out);
        if (n == 0) {
                free(pk.base);
                out = NULL;
        } else {
                qsort(out, n, sizeof(*out), call_count_cmp);
        }
        *ret = out;
        *ret_n = n;
        return 0;
}
