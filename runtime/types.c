/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kubecontainer-level value types: errors, state names, and the immutable,
 * reference-counted kc_pod / kc_pod_status, each packed into one allocation
 * (GenericPLEG builds thousands of pods per relist, so one malloc per pod,
 * not one per string).
 */
#include <assert.h>
#include <errno.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/cleanup.h"
#include "core/enum_table.h"
#include "core/memory.h"
#include "internal.h"
#include "termination.h"
#include "runtime/api_pod.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"

int kc_runtime_error_set(struct kc_runtime_error *err, int r, enum kc_runtime_code code,
                         const char *fmt, ...)
{
        va_list ap;

        if (err) {
                err->code = code;
                va_start(ap, fmt);
                vsnprintf(err->message, sizeof(err->message), fmt, ap);
                va_end(ap);
        }
        return r;
}

/* ------------------------------------------------------------------------ */
/* States                                                                     */

KC_DEFINE_STRING_TABLE_LOOKUP(
        kc_container_state, enum kc_container_state, _KC_CONTAINER_STATE_MAX,
        [KC_CONTAINER_STATE_CREATED] = "created", [KC_CONTAINER_STATE_RUNNING] = "running",
        [KC_CONTAINER_STATE_EXITED] = "exited", [KC_CONTAINER_STATE_UNKNOWN] = "unknown", )

KC_DEFINE_STRING_TABLE(kc_sandbox_state, enum kc_sandbox_state,
                       _KC_SANDBOX_STATE_MAX, [KC_SANDBOX_STATE_READY] = "SANDBOX_READY",
                       [KC_SANDBOX_STATE_NOTREADY] = "SANDBOX_NOTREADY", )

uint64_t kc__parse_container_hash(const char *s)
{
        uint64_t v = 0;
        int d;

        if (!s || !*s)
                return 0;
        for (; *s; s++) {
                if (*s >= '0' && *s <= '9')
                        d = *s - '0';
                else if (*s >= 'a' && *s <= 'f')
                        d = *s - 'a' + 10;
                else if (*s >= 'A' && *s <= 'F')
                        d = *s - 'A' + 10;
                else
                        return 0;
                if (v > UINT64_MAX >> 4)
                        return 0; /* overflow: ParseUint fails, upstream logs and uses 0 */
                v = v << 4 | (uint64_t)d;
        }
        return v;
}

const char *kc__label_key_intern(const char *key)
{
        static const char *const known[] = {
                KC_LABEL_POD_UID,
                KC_LABEL_POD_NAME,
                KC_LABEL_POD_NAMESPACE,
                KC_LABEL_CONTAINER_NAME,
                KC_ANNOTATION_CONTAINER_HASH,
                KC_ANNOTATION_CONTAINER_RESTART_COUNT,
                KC_ANNOTATION_TERMINATION_MESSAGE_PATH,
                KC_ANNOTATION_TERMINATION_MESSAGE_POLICY,
        };
        /* Every pod's and sandbox's, from the config sources (kubelet/config/manifest.h). */
        static const char *const config[] = {
                "kubernetes.io/config.hash",
                "kubernetes.io/config.seen",
                "kubernetes.io/config.source",
        };
        size_t i;

        if (key && strncmp(key, "kubernetes.io/config.", 21) == 0) {
                for (i = 0; i < KC_ELEMENTSOF(config); i++)
                        if (strcmp(key, config[i]) == 0)
                                return config[i];
                return NULL;
        }
        if (!key || strncmp(key, "io.kubernetes.", 14) != 0)
                return NULL;
        for (i = 0; i < KC_ELEMENTSOF(known); i++)
                if (strcmp(key, known[i]) == 0)
                        return known[i];
        return NULL;
}

/* ------------------------------------------------------------------------ */
/* Reference counting shared by every immutable object                       */

/*
 * kc_pod, kc_pod_status and kc_api_pod each live in one allocation: this
 * header, the object right after it, then its arrays and strings (packed
 * by kc__packer). The header is padded to max_align_t, so the object sits
 * at the same offset whatever its type and one ref/unref pair serves all.
 */
struct ref_header {
        alignas(max_align_t) atomic_uint ref;
        uint8_t block_class; /* the allocation's, for kc_block_free() */
        /* A pod buried in a pin: the next one there (kc_pod_pin_bury()). Fits the padding. */
        struct ref_header *buried_next;
};
static_assert(sizeof(struct ref_header) == alignof(max_align_t),
              "the block class and the burial link fit the header's padding: objects did not grow");

static struct ref_header *ref_header_of(const void *obj)
{
        return (struct ref_header *)((char *)obj - sizeof(struct ref_header));
}

static void *obj_ref(void *obj)
{
        /* Taking a reference needs no ordering: the caller already holds one. */
        if (obj)
                atomic_fetch_add_explicit(&ref_header_of(obj)->ref, 1, memory_order_relaxed);
        return obj;
}

/* Drops a reference to @obj (NULL: none); true when it was the last: the caller frees it. */
static bool obj_drop(void *obj)
{
        /*
         * acq_rel: the release half orders this thread's reads of the object
         * before its drop; the acquire half pairs with the other threads'
         * release drops, so the thread that frees sees their accesses done.
         * (An acquire fence after a release decrement would be cheaper, but
         * ThreadSanitizer does not model fences.)
         */
        return obj &&
               atomic_fetch_sub_explicit(&ref_header_of(obj)->ref, 1, memory_order_acq_rel) == 1;
}

/* Frees the allocation of the object @h heads. */
static void obj_free(struct ref_header *h)
{
        kc_block_free(h, h->block_class);
}

static void obj_unref(void *obj)
{
        if (obj_drop(obj))
                obj_free(ref_header_of(obj));
}

/* The first reference of an object packed after a ref_header, in a block of class @cls. */
static void *obj_init(struct ref_header *h, uint8_t cls, void *obj)
{
        atomic_init(&h->ref, 1);
        h->block_class = cls;
        h->buried_next = NULL;
        return obj;
}

/*
 * Copies the struct @s of @size bytes to @d (when copying) and packs the
 * strings at the @n offsets @strs into @pk, pointing @d's fields at them.
 */
static void pack_struct_strs(struct kc__packer *pk, const void *s, void *d, size_t size,
                             const size_t *strs, size_t n)
{
        size_t i;

        if (d)
                memcpy(d, s, size);
        for (i = 0; i < n; i++) {
                const char *v = kc__pack_str(pk, *(const char *const *)((const char *)s + strs[i]));

                if (d)
                        *(const char **)((char *)d + strs[i]) = v;
        }
}

/* Defines kc_<name>_ref() and kc_<name>_unref() for an object built by obj_new(). */
#define DEFINE_OBJ_REF_UNREF(name, type)                                                           \
        type *kc_##name##_ref(type *p)                                                             \
        {                                                                                          \
                return obj_ref(p);                                                                 \
        }                                                                                          \
        type *kc_##name##_unref(type *p)                                                           \
        {                                                                                          \
                obj_unref(p);                                                                      \
                return NULL;                                                                       \
        }

/* ------------------------------------------------------------------------ */
/* kc_pod                                                                     */

struct pod_box {
        struct ref_header h;
        struct kc_pod pod;
        /* The pod whose block has this one's strings, a reference (NULL: this block). */
        struct kc_pod *strings_owner;
        bool ids_distinct; /* kc_pod_ids_distinct() */
};
static_assert(offsetof(struct pod_box, pod) == sizeof(struct ref_header), "pod after its header");

/* The id of entry @p i of @p t, its containers then its sandboxes. */
static const char *entry_id(const struct kc_pod *t, size_t i)
{
        return i < t->n_containers ? t->containers[i].id : t->sandboxes[i - t->n_containers].id;
}

/* Whether the ids of @p t's sandboxes and containers are all different strings. */
static bool ids_distinct(const struct kc_pod *t)
{
        size_t n = t->n_containers + t->n_sandboxes, i, k;

        if (n > KC__POD_IDS_CHECKED_MAX)
                return false;
        for (i = 0; i < n; i++) {
                if (!entry_id(t, i))
                        return false;
                for (k = 0; k < i; k++)
                        if (strcmp(entry_id(t, i), entry_id(t, k)) == 0)
                                return false;
        }
        return true;
}

static void pack_container(struct kc__packer *pk, const struct kc_container *src,
                           struct kc_container *dst)
{
        const char *id = kc__pack_str(pk, src->id);
        const char *name = kc__pack_str(pk, src->name);
        const char *image = kc__pack_str(pk, src->image);

        if (dst)
                *dst = (struct kc_container){
                        .id = id,
                        .name = name,
                        .image = image,
                        .hash = src->hash,
                        .state = src->state,
                        .created_at = src->created_at,
                };
}

static struct pod_box *pack_pod(struct kc__packer *pk, const struct kc_pod *t)
{
        struct pod_box *box = kc__pack_reserve(pk, sizeof(struct pod_box), alignof(struct pod_box));
        struct kc_container *c = kc__pack_array(pk, struct kc_container, t->n_containers);
        struct kc_container *sb = kc__pack_array(pk, struct kc_container, t->n_sandboxes);
        const char *id, *name, *ns;
        size_t i;

        for (i = 0; i < t->n_containers; i++)
                pack_container(pk, &t->containers[i], c ? &c[i] : NULL);
        for (i = 0; i < t->n_sandboxes; i++)
                pack_container(pk, &t->sandboxes[i], sb ? &sb[i] : NULL);
        id = kc__pack_str(pk, t->id);
        name = kc__pack_str(pk, t->name);
        ns = kc__pack_str(pk, t->namespace);
        if (box) {
                box->strings_owner = NULL;
                box->ids_distinct = ids_distinct(t);
                box->pod = (struct kc_pod){
                        .id = id,
                        .name = name,
                        .namespace = ns,
                        .created_at = t->created_at,
                        .containers = c,
                        .n_containers = t->n_containers,
                        .sandboxes = sb,
                        .n_sandboxes = t->n_sandboxes,
                };
        }
        return box;
}

/*
 * Builds one immutable object: @pack lays out the header, the object and
 * everything it points to; it runs once to measure and once to copy, and
 * returns the object (NULL while measuring).
 */
static int obj_new(void *(*pack)(struct kc__packer *pk, const void *tmpl), const void *tmpl,
                   void **ret)
{
        uint32_t lens[64];
        uint8_t cls;
        /* Well-known label keys are not copied into every object (issue 18). */
        struct kc__packer pk = { .lens = lens,
                                 .cap_lens = KC_ELEMENTSOF(lens),
                                 .intern_keys = true };
        void *obj;

        if (!tmpl || !ret)
                return -EINVAL;
        (void)pack(&pk, tmpl);
        pk.base = kc_block_alloc(pk.off, &cls);
        if (!pk.base)
                return -ENOMEM;
        pk.off = 0;
        obj = pack(&pk, tmpl);
        *ret = obj_init((struct ref_header *)pk.base, cls, obj);
        return 0;
}

static void *pack_pod_obj(struct kc__packer *pk, const void *tmpl)
{
        struct pod_box *box = pack_pod(pk, tmpl);

        return box ? &box->pod : NULL;
}

int kc_pod_new(const struct kc_pod *tmpl, struct kc_pod **ret)
{
        return obj_new(pack_pod_obj, tmpl, (void **)ret);
}

static struct pod_box *pod_box_of(const struct kc_pod *p)
{
        return (struct pod_box *)ref_header_of(p);
}

struct kc_pod *kc_pod_ref(struct kc_pod *p)
{
        return obj_ref(p);
}

struct kc_pod *kc_pod_unref(struct kc_pod *p)
{
        if (obj_drop(p)) {
                struct pod_box *box = pod_box_of(p);
                struct kc_pod *owner = box->strings_owner;

                obj_free(&box->h);
                /* An owner has its strings in its own block: one level, no deeper. */
                kc_pod_unref(owner);
        }
        return NULL;
}

/* @p entries as @p like's: as many, each string the very one @p like has. */
static bool same_strings(const struct kc_container *entries, const struct kc_container *like,
                         size_t n)
{
        for (size_t k = 0; k < n; k++)
                if (entries[k].id != like[k].id || entries[k].name != like[k].name ||
                    entries[k].image != like[k].image)
                        return false;
        return true;
}

bool kc_pod_ids_distinct(const struct kc_pod *p)
{
        return pod_box_of(p)->ids_distinct;
}

struct kc_pod *kc__pod_strings_block(const struct kc_pod *p)
{
        struct kc_pod *owner = pod_box_of(p)->strings_owner;

        return owner ? owner : (struct kc_pod *)p;
}

/* Asks for @len bytes from @b, a 64-byte line at a time; @write: to be written. */
static inline void prefetch_bytes(const char *b, size_t len, bool write)
{
        for (size_t off = 0; off < len; off += 64)
                if (write)
                        __builtin_prefetch(b + off, 1);
                else
                        __builtin_prefetch(b + off, 0);
}

void kc__pod_prefetch_header(const struct kc_pod *p)
{
        const char *b;

        if (!p)
                return;
        b = (const char *)pod_box_of(p);
        prefetch_bytes(b, sizeof(struct pod_box), true);
        /* Not line-aligned, the box may reach one line further. */
        __builtin_prefetch(b + sizeof(struct pod_box) - 1, 1);
}

void kc__pod_prefetch_strings_block(const struct kc_pod *p)
{
        const struct kc_pod *owner = p ? pod_box_of(p)->strings_owner : NULL;

        if (owner)
                __builtin_prefetch(ref_header_of(owner), 1);
}

int kc__pod_new_like(const struct kc_pod *tmpl, const struct kc_pod *like, struct kc_pod **ret)
{
        size_t n_entries, k;
        struct kc_container *c;
        struct pod_box *box;
        struct kc_pod *owner;
        uint8_t cls;

        if (!tmpl || !like || !ret)
                return -EINVAL;
        if (tmpl->id != like->id || tmpl->name != like->name ||
            tmpl->namespace != like->namespace || tmpl->n_containers != like->n_containers ||
            tmpl->n_sandboxes != like->n_sandboxes ||
            !same_strings(tmpl->containers, like->containers, like->n_containers) ||
            !same_strings(tmpl->sandboxes, like->sandboxes, like->n_sandboxes))
                return kc_pod_new(tmpl, ret);
        /* The header, the pod and its entries; the strings stay in the block that has them. */
        n_entries = like->n_containers + like->n_sandboxes;
        box = kc_block_alloc(sizeof(*box) + n_entries * sizeof(*c), &cls);
        if (!box)
                return -ENOMEM;
        c = (struct kc_container *)(box + 1);
        for (k = 0; k < like->n_containers; k++)
                c[k] = tmpl->containers[k];
        for (k = 0; k < like->n_sandboxes; k++)
                c[like->n_containers + k] = tmpl->sandboxes[k];
        owner = kc__pod_strings_block(like);
        box->strings_owner = kc_pod_ref(owner);
        /* The same ids as @like's, the very strings. */
        box->ids_distinct = pod_box_of(like)->ids_distinct;
        box->pod = (struct kc_pod){
                .id = like->id,
                .name = like->name,
                .namespace = like->namespace,
                .created_at = tmpl->created_at,
                .containers = c,
                .n_containers = like->n_containers,
                .sandboxes = c + like->n_containers,
                .n_sandboxes = like->n_sandboxes,
        };
        *ret = obj_init(&box->h, cls, &box->pod);
        return 0;
}

struct kc_pod_pin {
        atomic_uint ref;
        struct kc_pod_pin *next;   /* the later pin it keeps alive, or NULL */
        struct ref_header *buried; /* the pods buried here, through buried_next */
};

int kc_pod_pin_new(struct kc_pod_pin **ret)
{
        struct kc_pod_pin *pin = calloc(1, sizeof(*pin));

        if (!pin)
                return -ENOMEM;
        atomic_init(&pin->ref, 1);
        *ret = pin;
        return 0;
}

struct kc_pod_pin *kc_pod_pin_ref(struct kc_pod_pin *pin)
{
        if (pin)
                atomic_fetch_add_explicit(&pin->ref, 1, memory_order_relaxed);
        return pin;
}

struct kc_pod_pin *kc_pod_pin_unref(struct kc_pod_pin *pin)
{
        /* A loop, not recursion: a long chain of pins goes one at a time. acq_rel as obj_unref(). */
        while (pin && atomic_fetch_sub_explicit(&pin->ref, 1, memory_order_acq_rel) == 1) {
                struct kc_pod_pin *next = pin->next;
                struct ref_header *h = pin->buried;

                while (h) {
                        struct ref_header *after = h->buried_next;

                        kc_pod_unref((struct kc_pod *)((char *)h + sizeof(*h)));
                        h = after;
                }
                free(pin);
                pin = next;
        }
        return NULL;
}

void kc_pod_pin_bury(struct kc_pod_pin *pin, struct kc_pod *pod)
{
        struct ref_header *h;

        if (!pod)
                return;
        h = ref_header_of(pod);
        h->buried_next = pin->buried;
        pin->buried = h;
}

void kc_pod_pin_chain(struct kc_pod_pin *pin, struct kc_pod_pin *next)
{
        pin->next = kc_pod_pin_ref(next);
}

void kc_pod_list_done(struct kc_pod_list *l)
{
        size_t i;

        if (!l)
                return;
        if (l->pin)
                l->pin = kc_pod_pin_unref(l->pin);
        else
                for (i = 0; i < l->n; i++)
                        kc_pod_unref(l->pods[i]);
        free(l->pods);
        l->pods = NULL;
        l->n = 0;
}

/* ------------------------------------------------------------------------ */
/* kc_pod_status                                                              */

struct status_box {
        struct ref_header h;
        struct kc_pod_status status;
        /*
         * The arena each container's id, name and images stay in, a
         * reference of its own (NULL: copied), one per container, or none
         * when no container's are held (issue 18).
         */
        struct kc_arena **held;
        size_t n_held;
        /* The pod whose block the ids it names by address live in, a reference (NULL: none). */
        struct kc_pod *ids_pod;
};

/* Containers up to this many may be held (a bit each in a status_plan), the rest copied. */
#define STATUS_HOLD_MAX 64

/*
 * What a status is built from: the template, which containers' arenas it
 * holds, and the pod whose entries' ids it may name by address.
 */
struct status_plan {
        const struct kc_pod_status *t;
        struct kc_arena *const *holds; /* NULL: none */
        uint64_t held;                 /* bit i: container i's strings stay in holds[i] */
        const struct kc_pod *pod;      /* NULL: none */
};
static_assert(offsetof(struct status_box, status) == sizeof(struct ref_header),
              "status after its header");

/* Whether @p id is, by address, the id of one of the @p n entries @p e. */
static bool id_of_entry(const char *id, const struct kc_container *e, size_t n)
{
        for (size_t k = 0; k < n; k++)
                if (e[k].id == id)
                        return true;
        return false;
}

/*
 * Packs container status @s into @d; @held: its id, name and images stay
 * where they are; @id_kept: its id stays where it is (the plan's pod).
 */
static void pack_container_status(struct kc__packer *pk, const struct kc_container_status *s,
                                  struct kc_container_status *d, bool held, bool id_kept)
{
        /* The first STATUS_STRS_COPIED are copied even when the rest stay where they are. */
        enum { STATUS_STRS_COPIED = 2 };
        static const size_t strs[] = {
                offsetof(struct kc_container_status, reason),
                offsetof(struct kc_container_status, message),
                offsetof(struct kc_container_status, name),
                offsetof(struct kc_container_status, image),
                offsetof(struct kc_container_status, image_ref),
                offsetof(struct kc_container_status, id), /* last: may stay where it is */
        };

        pack_struct_strs(pk, s, d, sizeof(*s), strs,
                         held ? STATUS_STRS_COPIED : KC_ELEMENTSOF(strs) - id_kept);
}

/* Packs sandbox status @s into @d; @id_kept: its id stays where it is (the plan's pod). */
static void pack_sandbox_status(struct kc__packer *pk, const struct kc_sandbox_status *s,
                                struct kc_sandbox_status *d, bool id_kept)
{
        static const size_t strs[] = {
                offsetof(struct kc_sandbox_status, name),
                offsetof(struct kc_sandbox_status, namespace),
                offsetof(struct kc_sandbox_status, uid),
                offsetof(struct kc_sandbox_status, ip),
                offsetof(struct kc_sandbox_status, id), /* last: may stay where it is */
        };

        pack_struct_strs(pk, s, d, sizeof(*s), strs, KC_ELEMENTSOF(strs) - id_kept);
}

static struct status_box *pack_status(struct kc__packer *pk, const struct status_plan *plan)
{
        const struct kc_pod_status *t = plan->t;
        const struct kc_pod *pod = plan->pod;
        struct status_box *box =
                kc__pack_reserve(pk, sizeof(struct status_box), alignof(struct status_box));
        struct kc_sandbox_status *sb = kc__pack_array(pk, struct kc_sandbox_status, t->n_sandboxes);
        struct kc_container_status *c =
                kc__pack_array(pk, struct kc_container_status, t->n_containers);
        size_t n_held = plan->held ? t->n_containers : 0;
        struct kc_arena **held = kc__pack_array(pk, struct kc_arena *, n_held);
        const char *const *ips;
        const char *id, *name, *ns;
        size_t i;

        for (i = 0; i < t->n_sandboxes; i++)
                pack_sandbox_status(
                        pk, &t->sandboxes[i], sb ? &sb[i] : NULL,
                        pod && id_of_entry(t->sandboxes[i].id, pod->sandboxes, pod->n_sandboxes));
        for (i = 0; i < t->n_containers; i++) {
                bool keep = i < STATUS_HOLD_MAX && (plan->held >> i & 1);

                pack_container_status(pk, &t->containers[i], c ? &c[i] : NULL, keep,
                                      pod && id_of_entry(t->containers[i].id, pod->containers,
                                                         pod->n_containers));
                if (held)
                        held[i] = keep ? kc_arena_ref(plan->holds[i]) : NULL;
        }
        ips = kc__pack_strv(pk, t->ips, t->n_ips);
        /* The pod's own strings stay where they are, as its ids do. */
        id = pod && t->id == pod->id ? t->id : kc__pack_str(pk, t->id);
        name = pod && t->name == pod->name ? t->name : kc__pack_str(pk, t->name);
        ns = pod && t->namespace == pod->namespace ? t->namespace : kc__pack_str(pk, t->namespace);
        if (box)
                box->status = (struct kc_pod_status){
                        .id = id,
                        .name = name,
                        .namespace = ns,
                        .ips = ips,
                        .n_ips = t->n_ips,
                        .sandboxes = sb,
                        .n_sandboxes = t->n_sandboxes,
                        .containers = c,
                        .n_containers = t->n_containers,
                        .timestamp = t->timestamp,
                };
        if (box) {
                box->held = held;
                box->n_held = n_held;
                box->ids_pod = pod ? kc_pod_ref(kc__pod_strings_block(pod)) : NULL;
        }
        return box;
}

static void *pack_status_obj(struct kc__packer *pk, const void *plan)
{
        struct status_box *box = pack_status(pk, plan);

        return box ? &box->status : NULL;
}

int kc_pod_status_new(const struct kc_pod_status *tmpl, struct kc_pod_status **ret)
{
        return kc__pod_status_new_holding(tmpl, NULL, NULL, ret);
}

int kc__pod_status_new_holding(const struct kc_pod_status *tmpl, struct kc_arena *const *holds,
                               const struct kc_pod *pod, struct kc_pod_status **ret)
{
        struct status_plan plan = { .t = tmpl, .holds = holds, .pod = pod };
        size_t i;

        if (!tmpl)
                return -EINVAL;
        /* Decided once, before both passes: another holder may drop its reference meanwhile. */
        if (holds && tmpl->n_containers <= STATUS_HOLD_MAX)
                for (i = 0; i < tmpl->n_containers; i++)
                        if (holds[i] && kc_arena_shared(holds[i]))
                                plan.held |= UINT64_C(1) << i;
        return obj_new(pack_status_obj, &plan, (void **)ret);
}

int kc_pod_status_new_default(const char *uid, struct kc_pod_status **ret)
{
        return kc_pod_status_new(&(struct kc_pod_status){ .id = uid }, ret);
}

struct kc_pod_status *kc_pod_status_ref(struct kc_pod_status *p)
{
        return obj_ref(p);
}

struct kc_pod_status *kc_pod_status_unref(struct kc_pod_status *p)
{
        struct status_box *box = p ? (struct status_box *)ref_header_of(p) : NULL;

        if (obj_drop(p)) {
                for (size_t i = 0; i < box->n_held; i++)
                        kc_arena_free(box->held[i]);
                kc_pod_unref(box->ids_pod);
                obj_free(&box->h);
        }
        return NULL;
}

/* What kc_pod_prefetch() asks for: a pod of four entries, and short strings when in its block. */
#define POD_PREFETCH_BYTES 384

void kc_pod_prefetch(const struct kc_pod *p)
{
        if (p)
                prefetch_bytes((const char *)ref_header_of(p), POD_PREFETCH_BYTES, false);
}

void kc__pod_status_prefetch_held(const struct kc_pod_status *p)
{
        const struct status_box *box = (const struct status_box *)ref_header_of(p);

        for (size_t i = 0; i < box->n_held; i++)
                kc_arena_prefetch(box->held[i]);
}

struct kc_arena *kc__pod_status_held_arena(const struct kc_pod_status *p, size_t i)
{
        const struct status_box *box = (const struct status_box *)ref_header_of(p);

        return i < box->n_held ? box->held[i] : NULL;
}

/* What kc__pod_status_prefetch() asks for: a status of one sandbox and three containers. */
#define STATUS_PREFETCH_BYTES 512

void kc__pod_status_prefetch(const struct kc_pod_status *p)
{
        prefetch_bytes((const char *)ref_header_of(p), STATUS_PREFETCH_BYTES, false);
}

static bool container_status_equal(const struct kc_container_status *a,
                                   const struct kc_container_status *b)
{
        return kc__streq(a->id, b->id) && kc__streq(a->name, b->name) && a->state == b->state &&
               a->exit_code == b->exit_code && a->created_at == b->created_at &&
               a->started_at == b->started_at && a->finished_at == b->finished_at &&
               a->restart_count == b->restart_count && a->hash == b->hash &&
               kc__streq(a->image, b->image) && kc__streq(a->image_ref, b->image_ref) &&
               kc__streq(a->reason, b->reason) && kc__streq(a->message, b->message);
}

static bool sandbox_status_equal(const struct kc_sandbox_status *a,
                                 const struct kc_sandbox_status *b)
{
        return kc__streq(a->id, b->id) && kc__streq(a->name, b->name) &&
               kc__streq(a->namespace, b->namespace) && kc__streq(a->uid, b->uid) &&
               a->attempt == b->attempt && a->state == b->state && a->created_at == b->created_at &&
               kc__streq(a->ip, b->ip);
}

bool kc_pod_status_equal(const struct kc_pod_status *a, const struct kc_pod_status *b)
{
        size_t i;

        if (a == b)
                return true;
        if (!a || !b)
                return false;
        if (!kc__streq(a->id, b->id) || !kc__streq(a->name, b->name) ||
            !kc__streq(a->namespace, b->namespace) || a->timestamp != b->timestamp ||
            a->n_ips != b->n_ips || a->n_sandboxes != b->n_sandboxes ||
            a->n_containers != b->n_containers)
                return false;
        for (i = 0; i < a->n_ips; i++)
                if (!kc__streq(a->ips[i], b->ips[i]))
                        return false;
        for (i = 0; i < a->n_sandboxes; i++)
                if (!sandbox_status_equal(&a->sandboxes[i], &b->sandboxes[i]))
                        return false;
        for (i = 0; i < a->n_containers; i++)
                if (!container_status_equal(&a->containers[i], &b->containers[i]))
                        return false;
        return true;
}

/* ------------------------------------------------------------------------ */
/* CRI results: one arena block per item                                      */

void kc__pack_pod_sandbox(struct kc__packer *pk, const struct kc_pod_sandbox *s,
                          struct kc_pod_sandbox *d)
{
        static const size_t strs[] = {
                offsetof(struct kc_pod_sandbox, id),
                offsetof(struct kc_pod_sandbox, metadata.name),
                offsetof(struct kc_pod_sandbox, metadata.uid),
                offsetof(struct kc_pod_sandbox, metadata.namespace),
                offsetof(struct kc_pod_sandbox, ip),
        };
        const char *const *aips;
        const struct kc_label *labels, *ann;

        pack_struct_strs(pk, s, d, sizeof(*s), strs, KC_ELEMENTSOF(strs));
        aips = kc__pack_strv(pk, s->additional_ips, s->n_additional_ips);
        labels = kc__pack_labels(pk, s->labels, s->n_labels);
        ann = kc__pack_labels(pk, s->annotations, s->n_annotations);
        if (d) {
                d->additional_ips = aips;
                d->labels = labels;
                d->annotations = ann;
        }
}

static void pack_pod_sandbox(struct kc__packer *pk, const void *s, void *d)
{
        kc__pack_pod_sandbox(pk, s, d);
}

void kc__pack_cri_container(struct kc__packer *pk, const struct kc_cri_container *s,
                            struct kc_cri_container *d)
{
        static const size_t strs[] = {
                offsetof(struct kc_cri_container, id),
                offsetof(struct kc_cri_container, pod_sandbox_id),
                offsetof(struct kc_cri_container, metadata.name),
                offsetof(struct kc_cri_container, image),
                offsetof(struct kc_cri_container, image_ref),
                offsetof(struct kc_cri_container, reason),
                offsetof(struct kc_cri_container, message),
                offsetof(struct kc_cri_container, log_path),
        };
        static const size_t mount_strs[] = {
                offsetof(struct kc_cri_mount, container_path),
                offsetof(struct kc_cri_mount, host_path),
        };
        const struct kc_label *labels, *ann;
        struct kc_cri_mount *m = NULL;

        pack_struct_strs(pk, s, d, sizeof(*s), strs, KC_ELEMENTSOF(strs));
        labels = kc__pack_labels(pk, s->labels, s->n_labels);
        ann = kc__pack_labels(pk, s->annotations, s->n_annotations);
        if (s->n_mounts > 0 && s->mounts)
                m = kc__pack_reserve(pk, s->n_mounts * sizeof(*m), alignof(struct kc_cri_mount));
        for (size_t i = 0; s->mounts && i < s->n_mounts; i++)
                pack_struct_strs(pk, &s->mounts[i], m ? &m[i] : NULL, sizeof(*m), mount_strs,
                                 KC_ELEMENTSOF(mount_strs));
        if (d) {
                d->labels = labels;
                d->annotations = ann;
                d->mounts = m;
        }
}

static void pack_cri_container(struct kc__packer *pk, const void *s, void *d)
{
        kc__pack_cri_container(pk, s, d);
}

/*
 * Packs @src (strings and arrays) into one block of arena @a with @layout,
 * which runs once to measure and once to copy into *@ret.
 */
static int arena_pack(struct kc_arena *a, void (*layout)(struct kc__packer *, const void *, void *),
                      const void *src, void *ret)
{
        struct kc__packer pk = { 0 };

        layout(&pk, src, NULL);
        if (pk.off > 0) {
                pk.base = kc_arena_alloc(a, pk.off);
                if (!pk.base)
                        return -ENOMEM;
        } else {
                pk.base = (char *)ret; /* nothing to copy; any non-NULL base */
        }
        pk.off = 0;
        layout(&pk, src, ret);
        return 0;
}

int kc__pod_sandbox_copy(struct kc_arena *a, const struct kc_pod_sandbox *src,
                         struct kc_pod_sandbox *ret)
{
        return arena_pack(a, pack_pod_sandbox, src, ret);
}

int kc__cri_container_copy(struct kc_arena *a, const struct kc_cri_container *src,
                           struct kc_cri_container *ret)
{
        return arena_pack(a, pack_cri_container, src, ret);
}

/* ------------------------------------------------------------------------ */
/* kc_api_pod                                                                 */

KC_DEFINE_STRING_TABLE_LOOKUP(
        kc_pod_phase, enum kc_pod_phase, _KC_POD_PHASE_MAX, [KC_POD_PHASE_PENDING] = "Pending",
        [KC_POD_PHASE_RUNNING] = "Running", [KC_POD_PHASE_SUCCEEDED] = "Succeeded",
        [KC_POD_PHASE_FAILED] = "Failed", [KC_POD_PHASE_UNKNOWN] = "Unknown", )

char *kc_pod_full_name(const char *name, const char *namespace)
{
        char *s;

        if (asprintf(&s, "%s_%s", name ? name : "", namespace ? namespace : "") < 0)
                return NULL;
        return s;
}

struct api_pod_box {
        struct ref_header h;
        struct kc_api_pod pod;
};
static_assert(offsetof(struct api_pod_box, pod) == sizeof(struct ref_header),
              "API pod after its header");

KC_DEFINE_STRING_TABLE_LOOKUP(
        kc_restart_policy, enum kc_restart_policy,
        _KC_RESTART_POLICY_MAX, [KC_RESTART_POLICY_ALWAYS] = "Always",
        [KC_RESTART_POLICY_ON_FAILURE] = "OnFailure", [KC_RESTART_POLICY_NEVER] = "Never", )

KC_DEFINE_STRING_TABLE_LOOKUP(
        kc_pull_policy, enum kc_pull_policy, _KC_PULL_POLICY_MAX, [KC_PULL_ALWAYS] = "Always",
        [KC_PULL_IF_NOT_PRESENT] = "IfNotPresent", [KC_PULL_NEVER] = "Never", )

KC_DEFINE_STRING_TABLE_LOOKUP(kc_mount_propagation, enum kc_mount_propagation,
                              _KC_MOUNT_PROPAGATION_MAX, [KC_MOUNT_PROPAGATION_UNSET] = NULL,
                              [KC_MOUNT_PROPAGATION_NONE] = "None",
                              [KC_MOUNT_PROPAGATION_HOST_TO_CONTAINER] = "HostToContainer",
                              [KC_MOUNT_PROPAGATION_BIDIRECTIONAL] = "Bidirectional", )

KC_DEFINE_STRING_TABLE_LOOKUP(
        kc_host_path_type, enum kc_host_path_type, _KC_HOST_PATH_TYPE_MAX,
        [KC_HOST_PATH_UNSET] = NULL, [KC_HOST_PATH_DIRECTORY_OR_CREATE] = "DirectoryOrCreate",
        [KC_HOST_PATH_DIRECTORY] = "Directory", [KC_HOST_PATH_FILE_OR_CREATE] = "FileOrCreate",
        [KC_HOST_PATH_FILE] = "File", [KC_HOST_PATH_SOCKET] = "Socket",
        [KC_HOST_PATH_CHAR_DEVICE] = "CharDevice", [KC_HOST_PATH_BLOCK_DEVICE] = "BlockDevice", )

KC_DEFINE_STRING_TABLE_LOOKUP(
        kc_termination_message_policy, enum kc_termination_message_policy,
        _KC_TERMINATION_MESSAGE_POLICY_MAX, [KC_TERMINATION_MESSAGE_FILE] = "File",
        [KC_TERMINATION_MESSAGE_FALLBACK_TO_LOGS_ON_ERROR] = "FallbackToLogsOnError", )

KC_DEFINE_STRING_TABLE_LOOKUP(kc_dns_policy, enum kc_dns_policy,
                              _KC_DNS_POLICY_MAX, [KC_DNS_CLUSTER_FIRST] = "ClusterFirst",
                              [KC_DNS_CLUSTER_FIRST_WITH_HOST_NET] = "ClusterFirstWithHostNet",
                              [KC_DNS_DEFAULT] = "Default", [KC_DNS_NONE] = "None", )

/*
 * The v1 spec below the pod: each packer copies the struct @s to @d (when
 * copying) and then points every pointer field of @d at its packed copy.
 * Every pointer a struct holds must be re-pointed here, or the copy would
 * borrow the template's storage.
 */
typedef void pack_item_fn(struct kc__packer *pk, const void *s, void *d);

/* Packs an array of @n items of @size bytes, each by @item; NULL when empty. */
static void *pack_items(struct kc__packer *pk, const void *src, size_t n, size_t size, size_t align,
                        pack_item_fn *item)
{
        char *out = n > 0 && src ? kc__pack_reserve(pk, size * n, align) : NULL;
        size_t i;

        if (!src)
                return NULL;
        for (i = 0; i < n; i++)
                item(pk, (const char *)src + i * size, out ? out + i * size : NULL);
        return out;
}

#define PACK_ITEMS(pk, src, n, type, fn)                                                           \
        ((const type *)pack_items((pk), (src), (n), sizeof(type), alignof(type), (fn)))

/* Re-points the string field @f of @d at its packed copy. */
#define PACK_FIELD_STR(pk, s, d, f)                                                                \
        do {                                                                                       \
                const char *v_ = kc__pack_str((pk), (s)->f);                                       \
                if (d)                                                                             \
                        (d)->f = v_;                                                               \
        } while (0)

/* Re-points the pointer field @f of @d at @v, the packed copy. */
#define SET_FIELD(d, f, v)                                                                         \
        do {                                                                                       \
                __typeof__((d)->f) v_ = (v);                                                       \
                if (d)                                                                             \
                        (d)->f = v_;                                                               \
        } while (0)

static void pack_copy(const void *s, void *d, size_t size)
{
        if (d)
                memcpy(d, s, size);
}

static void pack_resource(struct kc__packer *pk, const void *sv, void *dv)
{
        const struct kc_api_resource *s = sv;
        struct kc_api_resource *d = dv;

        pack_copy(s, d, sizeof(*s));
        PACK_FIELD_STR(pk, s, d, name);
        PACK_FIELD_STR(pk, s, d, q.text);
}

static void pack_resources(struct kc__packer *pk, const struct kc_api_resources *s,
                           struct kc_api_resources *d)
{
        SET_FIELD(d, limits,
                  PACK_ITEMS(pk, s->limits, s->n_limits, struct kc_api_resource, pack_resource));
        SET_FIELD(
                d, requests,
                PACK_ITEMS(pk, s->requests, s->n_requests, struct kc_api_resource, pack_resource));
}

static void pack_env_var(struct kc__packer *pk, const void *sv, void *dv)
{
        static const size_t strs[] = {
                offsetof(struct kc_api_env_var, name),
                offsetof(struct kc_api_env_var, value),
                offsetof(struct kc_api_env_var, field_path),
                offsetof(struct kc_api_env_var, resource_container),
                offsetof(struct kc_api_env_var, resource),
                offsetof(struct kc_api_env_var, divisor.text),
                offsetof(struct kc_api_env_var, ref_name),
                offsetof(struct kc_api_env_var, ref_key),
        };

        pack_struct_strs(pk, sv, dv, sizeof(struct kc_api_env_var), strs, KC_ELEMENTSOF(strs));
}

static void pack_env_from(struct kc__packer *pk, const void *sv, void *dv)
{
        static const size_t strs[] = {
                offsetof(struct kc_api_env_from, prefix),
                offsetof(struct kc_api_env_from, ref_name),
        };

        pack_struct_strs(pk, sv, dv, sizeof(struct kc_api_env_from), strs, KC_ELEMENTSOF(strs));
}

static void pack_volume_mount(struct kc__packer *pk, const void *sv, void *dv)
{
        static const size_t strs[] = {
                offsetof(struct kc_api_volume_mount, name),
                offsetof(struct kc_api_volume_mount, mount_path),
                offsetof(struct kc_api_volume_mount, sub_path),
                offsetof(struct kc_api_volume_mount, sub_path_expr),
        };

        pack_struct_strs(pk, sv, dv, sizeof(struct kc_api_volume_mount), strs, KC_ELEMENTSOF(strs));
}

static void pack_volume(struct kc__packer *pk, const void *sv, void *dv)
{
        static const size_t strs[] = {
                offsetof(struct kc_api_volume, name),
                offsetof(struct kc_api_volume, kind_name),
                offsetof(struct kc_api_volume, host_path),
                offsetof(struct kc_api_volume, size_limit.text),
        };

        pack_struct_strs(pk, sv, dv, sizeof(struct kc_api_volume), strs, KC_ELEMENTSOF(strs));
}

static void pack_container_port(struct kc__packer *pk, const void *sv, void *dv)
{
        static const size_t strs[] = {
                offsetof(struct kc_api_container_port, name),
                offsetof(struct kc_api_container_port, host_ip),
                offsetof(struct kc_api_container_port, protocol),
        };

        pack_struct_strs(pk, sv, dv, sizeof(struct kc_api_container_port), strs,
                         KC_ELEMENTSOF(strs));
}

/* A struct of two strings: name/value pairs (sysctls, headers, DNS options). */
struct str_pair {
        const char *a, *b;
};
#define ASSERT_STR_PAIR(type, fa, fb)                                                              \
        static_assert(sizeof(type) == sizeof(struct str_pair) &&                                   \
                              offsetof(type, fa) == offsetof(struct str_pair, a) &&                \
                              offsetof(type, fb) == offsetof(struct str_pair, b),                  \
                      #type " is a pair of strings")
ASSERT_STR_PAIR(struct kc_api_sysctl, name, value);
ASSERT_STR_PAIR(struct kc_api_http_header, name, value);
ASSERT_STR_PAIR(struct kc_api_dns_option, name, value);

static void pack_str_pair(struct kc__packer *pk, const void *sv, void *dv)
{
        static const size_t strs[] = { offsetof(struct str_pair, a), offsetof(struct str_pair, b) };

        pack_struct_strs(pk, sv, dv, sizeof(struct str_pair), strs, KC_ELEMENTSOF(strs));
}

static void pack_seccomp(struct kc__packer *pk, const struct kc_api_seccomp *s,
                         struct kc_api_seccomp *d)
{
        PACK_FIELD_STR(pk, s, d, type);
        PACK_FIELD_STR(pk, s, d, localhost_profile);
}

static void pack_security_context(struct kc__packer *pk, const void *sv, void *dv)
{
        const struct kc_api_security_context *s = sv;
        struct kc_api_security_context *d = dv;

        pack_copy(s, d, sizeof(*s));
        SET_FIELD(d, capabilities.add,
                  kc__pack_strv(pk, s->capabilities.add, s->capabilities.n_add));
        SET_FIELD(d, capabilities.drop,
                  kc__pack_strv(pk, s->capabilities.drop, s->capabilities.n_drop));
        PACK_FIELD_STR(pk, s, d, proc_mount);
        pack_seccomp(pk, &s->seccomp, d ? &d->seccomp : NULL);
}

static void pack_handler(struct kc__packer *pk, const struct kc_api_handler *s,
                         struct kc_api_handler *d)
{
        SET_FIELD(d, command, kc__pack_strv(pk, s->command, s->n_command));
        PACK_FIELD_STR(pk, s, d, host);
        PACK_FIELD_STR(pk, s, d, port.name);
        PACK_FIELD_STR(pk, s, d, path);
        SET_FIELD(
                d, headers,
                PACK_ITEMS(pk, s->headers, s->n_headers, struct kc_api_http_header, pack_str_pair));
        PACK_FIELD_STR(pk, s, d, grpc_service);
}

static void pack_probe(struct kc__packer *pk, const void *sv, void *dv)
{
        const struct kc_api_probe *s = sv;
        struct kc_api_probe *d = dv;

        pack_copy(s, d, sizeof(*s));
        pack_handler(pk, &s->handler, d ? &d->handler : NULL);
}

static void pack_lifecycle(struct kc__packer *pk, const void *sv, void *dv)
{
        const struct kc_api_lifecycle *s = sv;
        struct kc_api_lifecycle *d = dv;

        pack_copy(s, d, sizeof(*s));
        pack_handler(pk, &s->post_start, d ? &d->post_start : NULL);
        pack_handler(pk, &s->pre_stop, d ? &d->pre_stop : NULL);
}

/* The optional part at @p src (NULL: absent, stays NULL), packed as one item. */
#define PACK_OPTIONAL(pk, src, type, fn) PACK_ITEMS(pk, src, (src) ? 1 : 0, type, fn)

const struct kc_api_lifecycle kc_api_lifecycle_none;
const struct kc_api_probe kc_api_probe_none;
const struct kc_api_security_context kc_api_security_context_none;

static void pack_api_container(struct kc__packer *pk, const void *sv, void *dv)
{
        const struct kc_api_container *s = sv;
        struct kc_api_container *d = dv;

        pack_copy(s, d, sizeof(*s));
        PACK_FIELD_STR(pk, s, d, name);
        PACK_FIELD_STR(pk, s, d, image);
        SET_FIELD(d, command, kc__pack_strv(pk, s->command, s->n_command));
        SET_FIELD(d, args, kc__pack_strv(pk, s->args, s->n_args));
        PACK_FIELD_STR(pk, s, d, working_dir);
        SET_FIELD(d, ports,
                  PACK_ITEMS(pk, s->ports, s->n_ports, struct kc_api_container_port,
                             pack_container_port));
        SET_FIELD(
                d, env_from,
                PACK_ITEMS(pk, s->env_from, s->n_env_from, struct kc_api_env_from, pack_env_from));
        SET_FIELD(d, env, PACK_ITEMS(pk, s->env, s->n_env, struct kc_api_env_var, pack_env_var));
        pack_resources(pk, &s->resources, d ? &d->resources : NULL);
        SET_FIELD(d, volume_mounts,
                  PACK_ITEMS(pk, s->volume_mounts, s->n_volume_mounts, struct kc_api_volume_mount,
                             pack_volume_mount));
        SET_FIELD(d, lifecycle,
                  PACK_OPTIONAL(pk, s->lifecycle, struct kc_api_lifecycle, pack_lifecycle));
        SET_FIELD(d, liveness_probe,
                  PACK_OPTIONAL(pk, s->liveness_probe, struct kc_api_probe, pack_probe));
        SET_FIELD(d, readiness_probe,
                  PACK_OPTIONAL(pk, s->readiness_probe, struct kc_api_probe, pack_probe));
        SET_FIELD(d, startup_probe,
                  PACK_OPTIONAL(pk, s->startup_probe, struct kc_api_probe, pack_probe));
        PACK_FIELD_STR(pk, s, d, termination_message_path);
        SET_FIELD(d, security_context,
                  PACK_OPTIONAL(pk, s->security_context, struct kc_api_security_context,
                                pack_security_context));
}

static void pack_host_alias(struct kc__packer *pk, const void *sv, void *dv)
{
        const struct kc_api_host_alias *s = sv;
        struct kc_api_host_alias *d = dv;

        pack_copy(s, d, sizeof(*s));
        PACK_FIELD_STR(pk, s, d, ip);
        SET_FIELD(d, hostnames, kc__pack_strv(pk, s->hostnames, s->n_hostnames));
}

static void pack_dns_config(struct kc__packer *pk, const struct kc_api_dns_config *s,
                            struct kc_api_dns_config *d)
{
        SET_FIELD(d, nameservers, kc__pack_strv(pk, s->nameservers, s->n_nameservers));
        SET_FIELD(d, searches, kc__pack_strv(pk, s->searches, s->n_searches));
        SET_FIELD(
                d, options,
                PACK_ITEMS(pk, s->options, s->n_options, struct kc_api_dns_option, pack_str_pair));
}

static void pack_pod_security_context(struct kc__packer *pk,
                                      const struct kc_api_pod_security_context *s,
                                      struct kc_api_pod_security_context *d)
{
        int64_t *groups =
                kc__pack_array(pk, int64_t, s->supplemental_groups ? s->n_supplemental_groups : 0);

        if (groups)
                memcpy(groups, s->supplemental_groups, sizeof(*groups) * s->n_supplemental_groups);
        SET_FIELD(d, supplemental_groups, (const int64_t *)groups);
        SET_FIELD(d, sysctls,
                  PACK_ITEMS(pk, s->sysctls, s->n_sysctls, struct kc_api_sysctl, pack_str_pair));
        pack_seccomp(pk, &s->seccomp, d ? &d->seccomp : NULL);
}

static void *pack_api_pod_obj(struct kc__packer *pk, const void *tmpl)
{
        const struct kc_api_pod *t = tmpl;
        struct api_pod_box *box =
                kc__pack_reserve(pk, sizeof(struct api_pod_box), alignof(struct api_pod_box));
        struct kc_api_pod *d = box ? &box->pod : NULL;

        pack_copy(t, d, sizeof(*t));
        PACK_FIELD_STR(pk, t, d, uid);
        PACK_FIELD_STR(pk, t, d, name);
        PACK_FIELD_STR(pk, t, d, namespace);
        PACK_FIELD_STR(pk, t, d, source);
        SET_FIELD(d, containers,
                  PACK_ITEMS(pk, t->containers, t->n_containers, struct kc_api_container,
                             pack_api_container));
        SET_FIELD(d, init_containers,
                  PACK_ITEMS(pk, t->init_containers, t->n_init_containers, struct kc_api_container,
                             pack_api_container));
        SET_FIELD(d, labels, kc__pack_labels(pk, t->labels, t->n_labels));
        SET_FIELD(d, annotations, kc__pack_labels(pk, t->annotations, t->n_annotations));
        SET_FIELD(d, volumes,
                  PACK_ITEMS(pk, t->volumes, t->n_volumes, struct kc_api_volume, pack_volume));
        PACK_FIELD_STR(pk, t, d, node_name);
        PACK_FIELD_STR(pk, t, d, service_account_name);
        PACK_FIELD_STR(pk, t, d, hostname);
        PACK_FIELD_STR(pk, t, d, subdomain);
        SET_FIELD(d, host_aliases,
                  PACK_ITEMS(pk, t->host_aliases, t->n_host_aliases, struct kc_api_host_alias,
                             pack_host_alias));
        pack_dns_config(pk, &t->dns_config, d ? &d->dns_config : NULL);
        pack_pod_security_context(pk, &t->security_context, d ? &d->security_context : NULL);
        PACK_FIELD_STR(pk, t, d, priority_class_name);
        return d;
}

int kc_api_pod_new(const struct kc_api_pod *tmpl, struct kc_api_pod **ret)
{
        return obj_new(pack_api_pod_obj, tmpl, (void **)ret);
}

DEFINE_OBJ_REF_UNREF(api_pod, struct kc_api_pod)

void kc_exec_sync_result_done(struct kc_exec_sync_result *r)
{
        free(r->out);
        free(r->err);
        *r = (struct kc_exec_sync_result){ 0 };
}
