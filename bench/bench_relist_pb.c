/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Relist over CRI protobuf bytes, C against a Go port (issue 18).
 *
 * The node of bench_relist (n pods x 3 containers + 1 sandbox on the
 * simulated runtime) is recorded once per state, outside the timed region,
 * as the CRI responses a runtime would send: ListPodSandbox and
 * ListContainers of everything, and per pod the calls GetPodStatus makes
 * (ListPodSandbox and ListContainers by pod UID, PodSandboxStatus,
 * ContainerStatus). The timed relists run GenericPLEG over the runtime
 * manager over a replaying runtime service that decodes those bytes with
 * the CRI client's own decoders on every call, as over containerd minus
 * the transport. --dump DIR writes the same bytes, state by state, for
 * bench/go-relist (a straightforward Go port of upstream's relist), which
 * replays them the same way; bench/go-relist/run.sh runs both.
 *
 * Each round: a no-change relist, then 10 % of the containers flip and a
 * changed relist. CPU time per relist is the process's
 * (CLOCK_PROCESS_CPUTIME_ID), median over the rounds.
 *
 * Usage: bench_relist_pb [--quick] [--pods N] [--rounds N] [--no-memo] [--dump DIR]
 * (--no-memo: the whole listings decoded in full, without the CRI client's list memos)
 * Figures only, never pass/fail.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "core/arena.h"
#include "core/chan.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/map.h"
#include "cri/internal.h"
#include "metrics/kubelet_metrics.h"
#include "metrics/registry.h"
#include "pleg/event.h"
#include "pleg/generic.h"
#include "runtime/cache.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/manager.h"
#include "runtime/runtime_service.h"
#include "runtime/sim.h"

#include "relist_world.h"

/* ------------------------------------------------------------------------ */
/* Packing the sim's answers into CRI responses (recording only, untimed)    */

/* Every map<string,string> entry message has this layout. */
struct pb_entry {
        ProtobufCMessage base;
        char *key;
        char *value;
};

static void *pb_new(struct kc_arena *a, const ProtobufCMessageDescriptor *d)
{
        void *m = kc_arena_alloc(a, d->sizeof_message);

        if (m)
                protobuf_c_message_init(d, m);
        return m;
}

static void **pb_entries(struct kc_arena *a, const ProtobufCMessageDescriptor *d,
                         const struct kc_label *l, size_t n)
{
        void **v = kc_arena_alloc(a, (n + 1) * sizeof(*v));
        size_t i;

        for (i = 0; v && i < n; i++) {
                struct pb_entry *e = pb_new(a, d);

                if (!e)
                        return NULL;
                e->key = (char *)l[i].key;
                e->value = (char *)l[i].value;
                v[i] = e;
        }
        return v;
}

static char *s_(const char *s)
{
        return (char *)(s ? s : "");
}

static Runtime__V1__PodSandboxMetadata *pb_sandbox_meta(struct kc_arena *a,
                                                        const struct kc_pod_sandbox_metadata *m)
{
        Runtime__V1__PodSandboxMetadata *p =
                pb_new(a, &runtime__v1__pod_sandbox_metadata__descriptor);

        if (p) {
                p->name = s_(m->name);
                p->uid = s_(m->uid);
                p->namespace_ = s_(m->namespace);
                p->attempt = m->attempt;
        }
        return p;
}

static Runtime__V1__ImageSpec *pb_image(struct kc_arena *a, const char *image)
{
        Runtime__V1__ImageSpec *p = pb_new(a, &runtime__v1__image_spec__descriptor);

        if (p)
                p->image = s_(image);
        return p;
}

static Runtime__V1__PodSandbox *pb_sandbox(struct kc_arena *a, const struct kc_pod_sandbox *s)
{
        Runtime__V1__PodSandbox *p = pb_new(a, &runtime__v1__pod_sandbox__descriptor);

        if (!p)
                return NULL;
        p->id = s_(s->id);
        p->metadata = pb_sandbox_meta(a, &s->metadata);
        p->state = (Runtime__V1__PodSandboxState)s->state;
        p->created_at = s->created_at;
        p->n_labels = s->n_labels;
        p->labels = (void *)pb_entries(a, &runtime__v1__pod_sandbox__labels_entry__descriptor,
                                       s->labels, s->n_labels);
        p->n_annotations = s->n_annotations;
        p->annotations =
                (void *)pb_entries(a, &runtime__v1__pod_sandbox__annotations_entry__descriptor,
                                   s->annotations, s->n_annotations);
        return p->metadata && p->labels && p->annotations ? p : NULL;
}

static Runtime__V1__ContainerMetadata *pb_ctr_meta(struct kc_arena *a,
                                                   const struct kc_container_metadata *m)
{
        Runtime__V1__ContainerMetadata *p = pb_new(a, &runtime__v1__container_metadata__descriptor);

        if (p) {
                p->name = s_(m->name);
                p->attempt = m->attempt;
        }
        return p;
}

static Runtime__V1__Container *pb_container(struct kc_arena *a, const struct kc_cri_container *c)
{
        Runtime__V1__Container *p = pb_new(a, &runtime__v1__container__descriptor);

        if (!p)
                return NULL;
        p->id = s_(c->id);
        p->pod_sandbox_id = s_(c->pod_sandbox_id);
        p->metadata = pb_ctr_meta(a, &c->metadata);
        p->image = pb_image(a, c->image);
        p->image_ref = s_(c->image_ref);
        p->state = (Runtime__V1__ContainerState)c->state;
        p->created_at = c->created_at;
        p->n_labels = c->n_labels;
        p->labels = (void *)pb_entries(a, &runtime__v1__container__labels_entry__descriptor,
                                       c->labels, c->n_labels);
        p->n_annotations = c->n_annotations;
        p->annotations =
                (void *)pb_entries(a, &runtime__v1__container__annotations_entry__descriptor,
                                   c->annotations, c->n_annotations);
        return p->metadata && p->image && p->labels && p->annotations ? p : NULL;
}

static void *pb_sandbox_status(struct kc_arena *a, const struct kc_pod_sandbox *s)
{
        Runtime__V1__PodSandboxStatusResponse *r =
                pb_new(a, &runtime__v1__pod_sandbox_status_response__descriptor);
        Runtime__V1__PodSandboxStatus *p = pb_new(a, &runtime__v1__pod_sandbox_status__descriptor);
        Runtime__V1__PodSandboxNetworkStatus *net =
                pb_new(a, &runtime__v1__pod_sandbox_network_status__descriptor);

        if (!r || !p || !net)
                return NULL;
        net->ip = s_(s->ip);
        p->id = s_(s->id);
        p->metadata = pb_sandbox_meta(a, &s->metadata);
        p->state = (Runtime__V1__PodSandboxState)s->state;
        p->created_at = s->created_at;
        p->network = net;
        p->n_labels = s->n_labels;
        p->labels =
                (void *)pb_entries(a, &runtime__v1__pod_sandbox_status__labels_entry__descriptor,
                                   s->labels, s->n_labels);
        p->n_annotations = s->n_annotations;
        p->annotations = (void *)pb_entries(
                a, &runtime__v1__pod_sandbox_status__annotations_entry__descriptor, s->annotations,
                s->n_annotations);
        r->status = p;
        return p->metadata && p->labels && p->annotations ? r : NULL;
}

static void *pb_container_status(struct kc_arena *a, const struct kc_cri_container *c)
{
        Runtime__V1__ContainerStatusResponse *r =
                pb_new(a, &runtime__v1__container_status_response__descriptor);
        Runtime__V1__ContainerStatus *p = pb_new(a, &runtime__v1__container_status__descriptor);

        if (!r || !p)
                return NULL;
        p->id = s_(c->id);
        p->metadata = pb_ctr_meta(a, &c->metadata);
        p->state = (Runtime__V1__ContainerState)c->state;
        p->created_at = c->created_at;
        p->started_at = c->started_at;
        p->finished_at = c->finished_at;
        p->exit_code = c->exit_code;
        p->image = pb_image(a, c->image);
        p->image_ref = s_(c->image_ref);
        p->reason = s_(c->reason);
        p->message = s_(c->message);
        p->n_labels = c->n_labels;
        p->labels = (void *)pb_entries(a, &runtime__v1__container_status__labels_entry__descriptor,
                                       c->labels, c->n_labels);
        p->n_annotations = c->n_annotations;
        p->annotations =
                (void *)pb_entries(a, &runtime__v1__container_status__annotations_entry__descriptor,
                                   c->annotations, c->n_annotations);
        r->status = p;
        return p->metadata && p->image && p->labels && p->annotations ? r : NULL;
}

static void *pb_sandbox_list(struct kc_arena *a, const struct kc_pod_sandbox_list *l)
{
        Runtime__V1__ListPodSandboxResponse *r =
                pb_new(a, &runtime__v1__list_pod_sandbox_response__descriptor);
        size_t i;

        if (!r || !(r->items = kc_arena_alloc(a, (l->n + 1) * sizeof(*r->items))))
                return NULL;
        for (r->n_items = 0; r->n_items < l->n; r->n_items++)
                if (!(r->items[r->n_items] = pb_sandbox(a, &l->items[r->n_items])))
                        return NULL;
        (void)i;
        return r;
}

static void *pb_container_list(struct kc_arena *a, const struct kc_container_list *l)
{
        Runtime__V1__ListContainersResponse *r =
                pb_new(a, &runtime__v1__list_containers_response__descriptor);

        if (!r || !(r->containers = kc_arena_alloc(a, (l->n + 1) * sizeof(*r->containers))))
                return NULL;
        for (r->n_containers = 0; r->n_containers < l->n; r->n_containers++)
                if (!(r->containers[r->n_containers] = pb_container(a, &l->items[r->n_containers])))
                        return NULL;
        return r;
}

/* ------------------------------------------------------------------------ */
/* The recorded responses: (method, key) -> bytes                              */

/*
 * The bytes of each state lie as bench/go-relist holds them: that state's
 * changed responses one after the other, in recording order (Go slices them
 * out of the state file it reads whole), each right after its key. They
 * are stored in chunks, a chunk freed once none of its responses is
 * current. An index built while recording (open addressing, each slot
 * keeping its key's hash) finds a response by method and key, as Go's map
 * does.
 */
enum method { M_LIST_POD_SANDBOX, M_LIST_CONTAINERS, M_POD_SANDBOX_STATUS, M_CONTAINER_STATUS };

static const char *const method_name[] = {
        [M_LIST_POD_SANDBOX] = "ListPodSandbox",
        [M_LIST_CONTAINERS] = "ListContainers",
        [M_POD_SANDBOX_STATUS] = "PodSandboxStatus",
        [M_CONTAINER_STATUS] = "ContainerStatus",
};

struct chunk {
        size_t used, cap;
        size_t live; /* the current responses in it */
        uint8_t mem[];
};

struct blob {
        struct chunk *chunk;
        const uint8_t *data; /* right after the key */
        uint32_t len, key_len;
        uint8_t method;
        char key[]; /* key_len bytes and a NUL, then the data */
};

struct slot {
        uint64_t hash;
        struct blob *b;
};

#define CHUNK_SIZE (4u << 20)

struct recorder {
        struct kc_runtime_service sim;
        struct slot *slots;
        size_t mask, n;    /* mask + 1 slots, n of them used */
        struct chunk *cur; /* the chunk being filled */
        uint8_t *scratch;  /* the response being packed */
        size_t cap_scratch;
        FILE *dump; /* the current state's file, or NULL */
        size_t changed;
        /* The CRI client's list memos, for the whole listings (NULL with --no-memo). */
        struct kc_cri_list_memo *sb_memo, *c_memo;
};

/* The key's hash: kc_map's, with the method mixed in. */
static uint64_t key_hash(enum method m, const char *key, size_t n)
{
        return kc_hash_bytes(key, n) ^ ((uint64_t)m * UINT64_C(0x9e3779b97f4a7c15));
}

/* The slot of (@m, @key): the one holding it, or the empty one where it would go. */
static struct slot *find(const struct recorder *rec, enum method m, const char *key, size_t n,
                         uint64_t h)
{
        for (size_t i = h & rec->mask;; i = (i + 1) & rec->mask) {
                struct slot *s = &rec->slots[i];

                if (!s->b || (s->hash == h && s->b->method == m && s->b->key_len == n &&
                              memcmp(s->b->key, key, n) == 0))
                        return s;
        }
}

/* Twice the slots (1024 at first); -ENOMEM. */
static int index_grow(struct recorder *rec)
{
        size_t size = rec->slots ? 2 * (rec->mask + 1) : 1024, i, j;
        struct slot *old = rec->slots, *t = calloc(size, sizeof(*t));

        if (!t)
                return -ENOMEM;
        for (i = 0; old && i < size / 2; i++) {
                if (!old[i].b)
                        continue;
                for (j = old[i].hash & (size - 1); t[j].b; j = (j + 1) & (size - 1))
                        ;
                t[j] = old[i];
        }
        free(old);
        rec->slots = t;
        rec->mask = size - 1;
        return 0;
}

/* @b is no longer current: its chunk goes with the last of its responses. */
static void blob_release(struct recorder *rec, struct blob *b)
{
        if (--b->chunk->live == 0 && b->chunk != rec->cur)
                free(b->chunk);
}

/* @n bytes (8-aligned) at the end of the current chunk, or of a new one; NULL on ENOMEM. */
static void *chunk_alloc(struct recorder *rec, size_t n)
{
        struct chunk *c = rec->cur;
        size_t cap;

        n = (n + 7) & ~(size_t)7;
        if (!c || c->cap - c->used < n) {
                cap = n > CHUNK_SIZE ? n : CHUNK_SIZE;
                if (!(c = malloc(sizeof(*c) + cap)))
                        return NULL;
                *c = (struct chunk){ .cap = cap };
                if (rec->cur && rec->cur->live == 0)
                        free(rec->cur);
                rec->cur = c;
        }
        c->used += n;
        return c->mem + c->used - n;
}

/* Stores the @len bytes in rec->scratch under (@m, @key) in slot @s (find()'s), hash @h. */
static int blob_add(struct recorder *rec, struct slot *s, uint64_t h, enum method m,
                    const char *key, size_t key_len, size_t len)
{
        struct blob *b = chunk_alloc(rec, sizeof(*b) + key_len + 1 + len);

        if (!b)
                return -ENOMEM;
        *b = (struct blob){ .chunk = rec->cur,
                            .len = (uint32_t)len,
                            .key_len = (uint32_t)key_len,
                            .method = (uint8_t)m };
        memcpy(b->key, key, key_len + 1);
        b->data = (const uint8_t *)b->key + key_len + 1;
        memcpy((uint8_t *)b->data, rec->scratch, len);
        rec->cur->live++;
        if (s->b)
                blob_release(rec, s->b);
        else
                rec->n++;
        *s = (struct slot){ h, b };
        return 0;
}

/* Packs @msg into rec->scratch: its length, or -errno. */
static ssize_t pack(struct recorder *rec, const void *msg)
{
        size_t len = protobuf_c_message_get_packed_size(msg);
        uint8_t *p;

        if (len >= UINT32_MAX)
                return -E2BIG;
        if (len + 1 > rec->cap_scratch) {
                if (!(p = realloc(rec->scratch, 2 * (len + 1))))
                        return -ENOMEM;
                rec->scratch = p;
                rec->cap_scratch = 2 * (len + 1);
        }
        return (ssize_t)protobuf_c_message_pack(msg, rec->scratch);
}

/* Packs @msg (built in an arena) and stores it under (@m, @key) when its bytes changed. */
static int record(struct recorder *rec, enum method m, const char *key, void *msg)
{
        size_t key_len = strlen(key);
        uint64_t h = key_hash(m, key, key_len);
        uint32_t hdr[3];
        struct slot *s;
        ssize_t len;

        if (!msg || key_len >= UINT32_MAX)
                return -ENOMEM;
        if (2 * (rec->n + 1) > (rec->slots ? rec->mask + 1 : 0) && index_grow(rec) < 0)
                return -ENOMEM;
        if ((len = pack(rec, msg)) < 0)
                return (int)len;
        s = find(rec, m, key, key_len, h);
        if (s->b && s->b->len == (size_t)len && memcmp(s->b->data, rec->scratch, (size_t)len) == 0)
                return 0;
        if (blob_add(rec, s, h, m, key, key_len, (size_t)len) < 0)
                return -ENOMEM;
        rec->changed++;
        if (rec->dump) {
                hdr[0] = (uint32_t)strlen(method_name[m]);
                hdr[1] = (uint32_t)key_len;
                hdr[2] = (uint32_t)len;
                fwrite(hdr, sizeof(hdr), 1, rec->dump);
                fwrite(method_name[m], 1, hdr[0], rec->dump);
                fwrite(key, 1, hdr[1], rec->dump);
                fwrite(rec->scratch, 1, hdr[2], rec->dump);
        }
        return 0;
}

/* The response recorded under (@m, @key), or NULL. */
static const struct blob *lookup(const struct recorder *rec, enum method m, const char *key)
{
        size_t n = strlen(key);

        return rec->slots ? find(rec, m, key, n, key_hash(m, key, n))->b : NULL;
}

static void recorder_done(struct recorder *rec)
{
        for (size_t i = 0; rec->slots && i <= rec->mask; i++)
                if (rec->slots[i].b)
                        blob_release(rec, rec->slots[i].b);
        if (rec->cur && rec->cur->live == 0)
                free(rec->cur);
        free(rec->slots);
        free(rec->scratch);
        kc__cri_list_memo_free(rec->sb_memo);
        kc__cri_list_memo_free(rec->c_memo);
}

/* Records the calls GetPodStatus makes for pod @uid. */
static int record_pod(struct recorder *rec, const char *uid)
{
        struct kc_label sel = { KC_LABEL_POD_UID, uid };
        struct kc_pod_sandbox_filter sf = { .state = -1,
                                            .label_selector = &sel,
                                            .n_label_selector = 1 };
        struct kc_container_filter cf = { .state = -1,
                                          .label_selector = &sel,
                                          .n_label_selector = 1 };
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        struct kc_pod_sandbox_list sbl = { 0 };
        struct kc_container_list cl = { 0 };
        size_t i;
        int r;

        if ((r = kc_arena_new(&a)) < 0 ||
            (r = rec->sim.ops->list_pod_sandbox(rec->sim.self, &sf, &sbl, NULL)) < 0)
                return r;
        r = record(rec, M_LIST_POD_SANDBOX, uid, pb_sandbox_list(a, &sbl));
        for (i = 0; r >= 0 && i < sbl.n; i++) {
                struct kc_pod_sandbox_status_result st = { 0 };

                r = rec->sim.ops->pod_sandbox_status(rec->sim.self, sbl.items[i].id, &st, NULL);
                if (r >= 0)
                        r = record(rec, M_POD_SANDBOX_STATUS, sbl.items[i].id,
                                   pb_sandbox_status(a, &st.status));
                kc_runtime_result_done(&st);
        }
        kc_runtime_result_done(&sbl);
        if (r < 0 || (r = rec->sim.ops->list_containers(rec->sim.self, &cf, &cl, NULL)) < 0)
                return r;
        r = record(rec, M_LIST_CONTAINERS, uid, pb_container_list(a, &cl));
        for (i = 0; r >= 0 && i < cl.n; i++) {
                struct kc_container_status_result st = { 0 };

                r = rec->sim.ops->container_status(rec->sim.self, cl.items[i].id, &st, NULL);
                if (r >= 0)
                        r = record(rec, M_CONTAINER_STATUS, cl.items[i].id,
                                   pb_container_status(a, &st.status));
                kc_runtime_result_done(&st);
        }
        kc_runtime_result_done(&cl);
        return r;
}

/* Records the sim's current state; writes what changed to DIR/state-NNNN.bin with --dump. */
static int record_state(struct recorder *rec, const struct world *w, const char *dir,
                        unsigned state)
{
        struct kc_pod_sandbox_filter sf = { .state = -1 };
        struct kc_container_filter cf = { .state = -1 };
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        struct kc_pod_sandbox_list sbl = { 0 };
        struct kc_container_list cl = { 0 };
        char path[4096];
        size_t i;
        int r;

        if (dir) {
                snprintf(path, sizeof(path), "%s/state-%04u.bin", dir, state);
                if (!(rec->dump = fopen(path, "wbe")))
                        return -errno;
        }
        if ((r = kc_arena_new(&a)) < 0 ||
            (r = rec->sim.ops->list_pod_sandbox(rec->sim.self, &sf, &sbl, NULL)) < 0)
                goto out;
        r = record(rec, M_LIST_POD_SANDBOX, "", pb_sandbox_list(a, &sbl));
        kc_runtime_result_done(&sbl);
        if (r < 0 || (r = rec->sim.ops->list_containers(rec->sim.self, &cf, &cl, NULL)) < 0)
                goto out;
        r = record(rec, M_LIST_CONTAINERS, "", pb_container_list(a, &cl));
        kc_runtime_result_done(&cl);
        for (i = 0; r >= 0 && i < w->n_pods; i++)
                r = record_pod(rec, w->pods[i].id);
out:
        if (rec->dump && fclose(rec->dump) != 0 && r >= 0)
                r = -EIO;
        rec->dump = NULL;
        return r;
}

/* ------------------------------------------------------------------------ */
/* The replaying runtime service: every call decodes its recorded bytes       */

static const struct blob *replay_get(struct recorder *rec, enum method m, const char *key,
                                     struct kc_runtime_error *err)
{
        const struct blob *b = lookup(rec, m, key ? key : "");

        if (!b)
                kc_runtime_error_set(err, -ENOENT, KC_RUNTIME_NOT_FOUND, "%s/%s not recorded",
                                     method_name[m], key ? key : "");
        return b;
}

/* The pod UID a filter selects by, "" for none (the whole listing). */
static const char *selector_uid(const struct kc_label *sel, size_t n)
{
        return n == 1 && strcmp(sel[0].key, KC_LABEL_POD_UID) == 0 ? sel[0].value : "";
}

static int replay_list_pod_sandbox(void *self, const struct kc_pod_sandbox_filter *f,
                                   struct kc_pod_sandbox_list *ret, struct kc_runtime_error *err)
{
        struct recorder *rec = self;
        const char *uid = f ? selector_uid(f->label_selector, f->n_label_selector) : "";
        const struct blob *b = replay_get(rec, M_LIST_POD_SANDBOX, uid, err);

        if (!b)
                return -ENOENT;
        if (rec->sb_memo && !*uid && (!f || f->state < 0))
                return kc__cri_unpack_list_pod_sandbox_memo(rec->sb_memo, b->data, b->len, ret,
                                                            err);
        return kc__cri_unpack_list_pod_sandbox(b->data, b->len, ret, err);
}

static int replay_list_containers(void *self, const struct kc_container_filter *f,
                                  struct kc_container_list *ret, struct kc_runtime_error *err)
{
        struct recorder *rec = self;
        const char *uid = selector_uid(f->label_selector, f->n_label_selector);
        const struct blob *b = replay_get(rec, M_LIST_CONTAINERS, uid, err);

        if (!b)
                return -ENOENT;
        if (rec->c_memo && !*uid && f->state < 0 && !f->id && !f->pod_sandbox_id)
                return kc__cri_unpack_list_containers_memo(rec->c_memo, b->data, b->len, ret, err);
        return kc__cri_unpack_list_containers(b->data, b->len, ret, err);
}

static int replay_pod_sandbox_status(void *self, const char *id,
                                     struct kc_pod_sandbox_status_result *ret,
                                     struct kc_runtime_error *err)
{
        const struct blob *b = replay_get(self, M_POD_SANDBOX_STATUS, id, err);

        return b ? kc__cri_unpack_pod_sandbox_status(b->data, b->len, ret, err) : -ENOENT;
}

static int replay_container_status(void *self, const char *id,
                                   struct kc_container_status_result *ret,
                                   struct kc_runtime_error *err)
{
        const struct blob *b = replay_get(self, M_CONTAINER_STATUS, id, err);

        return b ? kc__cri_unpack_container_status(b->data, b->len, ret, err) : -ENOENT;
}

static const struct kc_runtime_service_ops replay_ops = {
        .list_pod_sandbox = replay_list_pod_sandbox,
        .list_containers = replay_list_containers,
        .pod_sandbox_status = replay_pod_sandbox_status,
        .container_status = replay_container_status,
};

/* ------------------------------------------------------------------------ */

static double cpu_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
        qsort(v, n, sizeof(*v), cmp_double);
        return v[n / 2];
}

struct bench {
        struct kc_clock *clock;
        struct kc_sim *sim;
        struct kc_runtime_manager *mgr;
        struct kc_chan *events;
        struct kc_pod_cache *cache;
        struct kc_metrics_registry *reg;
        struct kc_kubelet_metrics metrics;
        struct kc_generic_pleg *pleg;
        struct recorder rec;
        struct world w;
};

static void bench_done(struct bench *b)
{
        kc_generic_pleg_free(b->pleg);
        kc_metrics_registry_free(b->reg);
        kc_pod_cache_free(b->cache);
        kc_chan_free(b->events);
        kc_runtime_manager_free(b->mgr);
        kc_sim_free(b->sim);
        kc_clock_free(b->clock);
        recorder_done(&b->rec);
        world_done(&b->w);
}

static bool no_memo;

static int bench_init(struct bench *b, size_t n_pods)
{
        struct kc_generic_pleg_config cfg;
        int r;

        if ((r = world_init(&b->w, n_pods)) < 0 ||
            (r = kc_fake_clock_new(&b->clock, INT64_C(1700000000) * KC_NSEC_PER_SEC)) < 0 ||
            (r = kc_sim_new(b->clock, &b->sim)) < 0 ||
            (r = kc_chan_new(&b->events, 1u << 16, kc_pleg_event_free_item)) < 0 ||
            (r = kc_pod_cache_new(&b->cache)) < 0 || (r = kc_metrics_registry_new(&b->reg)) < 0 ||
            (r = kc_kubelet_metrics_register(b->reg, &b->metrics)) < 0)
                return r;
        if (!no_memo &&
            ((r = kc__cri_list_memo_new(KC_CRI_LIST_POD_SANDBOX, &b->rec.sb_memo)) < 0 ||
             (r = kc__cri_list_memo_new(KC_CRI_LIST_CONTAINERS, &b->rec.c_memo)) < 0))
                return r;
        b->rec.sim = kc_sim_service(b->sim);
        r = kc_runtime_manager_new((struct kc_runtime_service){ &replay_ops, &b->rec }, b->clock,
                                   &b->mgr);
        if (r < 0)
                return r;
        cfg = (struct kc_generic_pleg_config){
                .runtime = kc_runtime_manager_pod_runtime(b->mgr),
                .events = b->events,
                .cache = b->cache,
                .clock = b->clock,
                .metrics = &b->metrics,
                .relist_period_ns = KC_GENERIC_PLEG_RELIST_PERIOD,
                .relist_threshold_ns = KC_GENERIC_PLEG_RELIST_THRESHOLD,
        };
        if ((r = kc_generic_pleg_new(&cfg, &b->pleg)) < 0)
                return r;
        return kc_sim_set_pods(b->sim, b->w.pods, b->w.n_pods);
}

/* One timed relist; *ret_events is the number of events it sent. */
static double timed_relist(struct bench *b, size_t *ret_events)
{
        double t;

        kc_fake_clock_advance(b->clock, KC_NSEC_PER_SEC);
        t = cpu_ms();
        kc_generic_pleg_relist(b->pleg);
        t = cpu_ms() - t;
        *ret_events = drain(b->events);
        return t;
}

/*
 * Where a changed relist goes: GetPodStatus of about as many pods as one
 * inspects (1 in 3), alone. @v is scratch room for @rounds figures.
 */
static void breakdown(struct bench *b, size_t n_pods, unsigned rounds, double *v)
{
        size_t i, k, n = 0;

        for (k = 0; k < rounds; k++) {
                double t = cpu_ms();

                for (i = k % 3, n = 0; i < n_pods; i += 3, n++) {
                        struct kc_pod_status *st = NULL;

                        if (kc_runtime_manager_get_pod_status(b->mgr, b->w.pods[i].id,
                                                              b->w.pods[i].name, "default", &st,
                                                              NULL) == 0)
                                kc_pod_status_unref(st);
                }
                v[k] = cpu_ms() - t;
        }
        printf("# GetPodStatus of %zu pods alone: %.3f ms\n", n, median(v, rounds));
        printf("# the whole listings' responses: %zu + %zu KiB\n",
               (size_t)lookup(&b->rec, M_LIST_POD_SANDBOX, "")->len / 1024,
               (size_t)lookup(&b->rec, M_LIST_CONTAINERS, "")->len / 1024);
}

static int run(size_t n_pods, unsigned rounds, const char *dir)
{
        struct bench b = { 0 };
        _cleanup_free_ double *nochange = calloc(rounds, sizeof(double));
        _cleanup_free_ double *changed = calloc(rounds, sizeof(double));
        size_t ev = 0, ev_changed = 0;
        unsigned i;
        int r;

        if (!nochange || !changed)
                return -ENOMEM;
        if ((r = bench_init(&b, n_pods)) < 0 || (r = record_state(&b.rec, &b.w, dir, 0)) < 0)
                goto out;
        /* Warm-up: the first relist sees every container start. */
        timed_relist(&b, &ev);
        timed_relist(&b, &ev);
        for (i = 0; i < rounds; i++) {
                nochange[i] = timed_relist(&b, &ev);
                if (ev != 0) {
                        fprintf(stderr, "bench: a no-change relist produced events\n");
                        r = -EINVAL;
                        goto out;
                }
                world_churn(&b.w, i);
                if ((r = kc_sim_set_pods(b.sim, b.w.pods, b.w.n_pods)) < 0 ||
                    (r = record_state(&b.rec, &b.w, dir, i + 1)) < 0)
                        goto out;
                changed[i] = timed_relist(&b, &ev);
                ev_changed += ev;
        }
        printf("%-8zu %-8s %14.3f %16.3f %14zu\n", n_pods, no_memo ? "C-nomemo" : "C",
               median(nochange, rounds), median(changed, rounds), ev_changed / rounds);
        breakdown(&b, n_pods, rounds, nochange);
        fflush(stdout);
out:
        bench_done(&b);
        return r;
}

int main(int argc, char **argv)
{
        size_t pods = 10000;
        unsigned rounds = 20;
        const char *dir = NULL;
        int a, r;

        for (a = 1; a < argc; a++) {
                if (strcmp(argv[a], "--quick") == 0) {
                        pods = 200;
                        rounds = 3;
                } else if (strcmp(argv[a], "--pods") == 0 && a + 1 < argc) {
                        pods = strtoul(argv[++a], NULL, 10);
                } else if (strcmp(argv[a], "--rounds") == 0 && a + 1 < argc) {
                        rounds = (unsigned)strtoul(argv[++a], NULL, 10);
                        if (rounds == 0)
                                rounds = 1;
                } else if (strcmp(argv[a], "--no-memo") == 0) {
                        no_memo = true;
                } else if (strcmp(argv[a], "--dump") == 0 && a + 1 < argc) {
                        dir = argv[++a];
                } else {
                        fprintf(stderr, "usage: bench_relist_pb [--quick] [--pods N] [--rounds N] "
                                        "[--no-memo] [--dump DIR]\n");
                        return 2;
                }
        }
        printf("# GenericPLEG relist over recorded CRI protobuf responses, %d containers + 1 "
               "sandbox per pod,\n# process CPU time per relist (median of %u)\n",
               CONTAINERS_PER_POD, rounds);
        printf("%-8s %-8s %14s %16s %14s\n", "pods", "impl", "no-change ms", "10%-changed ms",
               "events/relist");
        r = run(pods, rounds, dir);
        if (r < 0) {
                fprintf(stderr, "bench: %s\n", strerror(-r));
                return 1;
        }
        return 0;
}
