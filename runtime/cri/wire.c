/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hand-written decoders of the CRI responses a relist reads most
 * (internal.h: ListPodSandbox and ListContainers items, PodSandboxStatus,
 * ContainerStatus), walking the protobuf wire format straight into the
 * kc_* results (issue 18).
 *
 * protobuf-c decodes a message into its own structs first (one allocation
 * per string, per nested message, per map entry and per repeated array),
 * then convert.c builds the result from them: a changed relist at 10,000
 * pods spent most of its decoding time there. These decoders read only
 * the fields the result holds and copy each string once, into the result's
 * arena.
 *
 * They accept and reject what protobuf-c 1.4 does, field for field:
 * - a tag of at most 5 bytes (field 0 refused in a one-byte tag, skipped as
 *   an unknown field in a longer one), a varint of at most 10, a
 *   length prefix of at most 5 bytes that must fit in what is left; wire
 *   types 3 and 4 (groups) and 6, 7 refused;
 * - a known field with a wire type that does not fit its type is an error
 *   (a bool takes any, as protobuf-c reads one from whatever bytes it has;
 *   a repeated scalar may come packed, checked as protobuf-c checks it);
 *   the known fields the result does not hold are checked that way too,
 *   messages in them recursively, from protobuf-c's descriptors; unknown
 *   fields are skipped;
 * - a field given twice: the last scalar or string wins, repeated fields
 *   and map entries add up, a nested message given twice is merged; and as
 *   protobuf-c merges proto3 messages, each occurrence of a nested message
 *   resets its scalar fields (an attempt, a state, a timestamp given only
 *   in the first occurrence reads 0), strings and nested messages carry
 *   over.
 * The differential tests (tests/unit/runtime/test_cri_wire.c) and the
 * fuzz target (tests/fuzz/fuzz_cri_decode.c) compare every result with
 * protobuf-c's.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/arena.h"
#include "internal.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"

enum {
        WT_VARINT = 0,
        WT_64BIT = 1,
        WT_LEN = 2,
        WT_32BIT = 5,
};

/* ------------------------------------------------------------------------ */
/* The walk                                                                   */

/* A varint of at most 10 bytes in [*p, end): its value, *p past it. */
static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
        const uint8_t *q = *p;
        uint64_t v = 0;

        for (unsigned i = 0; i < 10 && q < end; i++) {
                uint8_t b = *q++;

                v |= (uint64_t)(b & 0x7f) << (7 * i);
                if (!(b & 0x80)) {
                        *p = q;
                        *ret = v;
                        return true;
                }
        }
        return false;
}

/* The tag as protobuf-c reads it: at most 5 bytes, the field number cut to 32 bits. */
static bool tag(const uint8_t **p, const uint8_t *end, uint32_t *ret_num, uint8_t *ret_wt)
{
        const uint8_t *q = *p;
        uint32_t num;
        unsigned shift = 4;

        /* protobuf-c refuses field 0 in a one-byte tag only (a longer one is an unknown field). */
        if (q >= end || (*q & 0xf8) == 0)
                return false;
        *ret_wt = *q & 7;
        num = (uint32_t)(*q & 0x7f) >> 3;
        if (*q++ & 0x80) {
                for (unsigned i = 1;; i++) {
                        if (i >= 5 || q >= end)
                                return false;
                        num |= (uint32_t)(*q & 0x7f) << shift;
                        shift += 7;
                        if (!(*q++ & 0x80))
                                break;
                }
        }
        *p = q;
        *ret_num = num;
        return true;
}

/* A length prefix as protobuf-c reads it: at most 5 bytes (35 bits of value). */
static bool length(const uint8_t **p, const uint8_t *end, size_t *ret)
{
        const uint8_t *q = *p;
        uint64_t v = 0;

        for (unsigned i = 0; i < 5 && q < end; i++) {
                uint8_t b = *q++;

                v |= (uint64_t)(b & 0x7f) << (7 * i);
                if (!(b & 0x80)) {
                        if (v > (size_t)(end - q))
                                return false;
                        *p = q;
                        *ret = v;
                        return true;
                }
        }
        return false;
}

int kc__cri_wire_next(struct kc_cri_wire *w, struct kc_cri_wire_field *f)
{
        const uint8_t *p = w->p;
        size_t n = 0;

        if (p >= w->end)
                return 0;
        if (!tag(&p, w->end, &f->num, &f->wt))
                return -EPROTO;
        f->raw = p;
        f->data = NULL;
        f->len = 0;
        f->v = 0;
        switch (f->wt) {
        case WT_VARINT:
                if (!varint(&p, w->end, &f->v))
                        return -EPROTO;
                break;
        case WT_64BIT:
        case WT_32BIT:
                n = f->wt == WT_64BIT ? 8 : 4;
                if ((size_t)(w->end - p) < n)
                        return -EPROTO;
                p += n;
                break;
        case WT_LEN:
                if (!length(&p, w->end, &f->len))
                        return -EPROTO;
                f->data = p;
                p += f->len;
                break;
        default:
                return -EPROTO;
        }
        f->raw_len = (size_t)(p - f->raw);
        w->p = p;
        return 1;
}

/* ------------------------------------------------------------------------ */
/* Walking messages                                                           */

/*
 * A decode (struct kc_cri_wire_dec, internal.h): the result's arena, and
 * the free part of a block in it that strings and arrays are taken from
 * first (a result's arena is made with a block as large as most results
 * need: one allocation for all).
 */
#define dec kc_cri_wire_dec

/* Strings and arrays share blocks of this size once the first is used up. */
#define DEC_BLOCK 2048u

/*
 * The block a result of a @len-byte message starts with: its strings take
 * about @len bytes with their NULs (each string field has a tag and a
 * length on the wire), and the rest is room for the label arrays of a
 * typical item. What does not fit goes to further blocks.
 */
static size_t dec_block_size(size_t len)
{
        return len < SIZE_MAX / 2 ? len + 512 : len;
}

/* @n bytes, 8-byte aligned, not zeroed; NULL on ENOMEM. */
static void *dec_alloc(struct dec *d, size_t n)
{
        size_t need = (n + 7) & ~(size_t)7;
        char *p;

        if (need <= d->left) {
                p = d->p;
                d->p += need;
                d->left -= need;
                return p;
        }
        if (need > DEC_BLOCK / 4)
                return kc_arena_alloc(d->a, n);
        if (!(p = kc_arena_alloc(d->a, DEC_BLOCK)))
                return NULL;
        d->p = p + need;
        d->left = DEC_BLOCK - need;
        return p;
}

/* A new arena for a result of a @len-byte message, and @d over its first block. */
static int dec_new(struct dec *d, size_t len, struct kc_arena **ret)
{
        size_t size = dec_block_size(len);
        void *block;
        int r;

        r = kc_arena_new_block(size, ret, &block);
        if (r < 0)
                return r;
        *d = (struct dec){ .a = *ret, .p = block, .left = size };
        return 0;
}

/* Takes each field of a message; 0 or an error. */
typedef int (*field_fn)(struct dec *d, const struct kc_cri_wire_field *f, void *ctx);

/* Each field of the message in [p, p + len) handed to @fn, up to the first error. */
static int each_field(struct dec *d, const uint8_t *p, size_t len, field_fn fn, void *ctx)
{
        struct kc_cri_wire w = { p, p + len };
        struct kc_cri_wire_field f;
        int r;

        while ((r = kc__cri_wire_next(&w, &f)) > 0)
                if ((r = fn(d, &f, ctx)) < 0)
                        return r;
        return r;
}

/* The nested message in field @f, each of its fields handed to @fn. */
static int sub(struct dec *d, const struct kc_cri_wire_field *f, field_fn fn, void *ctx)
{
        return f->wt == WT_LEN ? each_field(d, f->data, f->len, fn, ctx) : -EPROTO;
}

/* ------------------------------------------------------------------------ */
/* Fields the result does not hold: checked as protobuf-c would decode them    */

static bool packable(ProtobufCType t)
{
        return t != PROTOBUF_C_TYPE_STRING && t != PROTOBUF_C_TYPE_BYTES &&
               t != PROTOBUF_C_TYPE_MESSAGE;
}

/* A packed repeated scalar of type @t. */
static int check_packed(ProtobufCType t, const uint8_t *p, size_t len)
{
        const uint8_t *end = p + len;
        uint64_t v;

        switch (t) {
        case PROTOBUF_C_TYPE_SFIXED32:
        case PROTOBUF_C_TYPE_FIXED32:
        case PROTOBUF_C_TYPE_FLOAT:
                return len % 4 == 0 ? 0 : -EPROTO;
        case PROTOBUF_C_TYPE_SFIXED64:
        case PROTOBUF_C_TYPE_FIXED64:
        case PROTOBUF_C_TYPE_DOUBLE:
                return len % 8 == 0 ? 0 : -EPROTO;
        case PROTOBUF_C_TYPE_BOOL:
                for (; p < end; p++)
                        if (*p > 1)
                                return -EPROTO;
                return 0;
        default:
                while (p < end)
                        if (!varint(&p, end, &v))
                                return -EPROTO;
                return 0;
        }
}

static int check_cb(struct dec *d, const struct kc_cri_wire_field *f, void *desc);

/* One occurrence of field @fd. */
static int check_value(struct dec *d, const ProtobufCFieldDescriptor *fd,
                       const struct kc_cri_wire_field *f)
{
        if (fd->label == PROTOBUF_C_LABEL_REPEATED && f->wt == WT_LEN && packable(fd->type))
                return check_packed(fd->type, f->data, f->len);
        switch (fd->type) {
        case PROTOBUF_C_TYPE_BOOL:
                return 0;
        case PROTOBUF_C_TYPE_SFIXED32:
        case PROTOBUF_C_TYPE_FIXED32:
        case PROTOBUF_C_TYPE_FLOAT:
                return f->wt == WT_32BIT ? 0 : -EPROTO;
        case PROTOBUF_C_TYPE_SFIXED64:
        case PROTOBUF_C_TYPE_FIXED64:
        case PROTOBUF_C_TYPE_DOUBLE:
                return f->wt == WT_64BIT ? 0 : -EPROTO;
        case PROTOBUF_C_TYPE_STRING:
        case PROTOBUF_C_TYPE_BYTES:
                return f->wt == WT_LEN ? 0 : -EPROTO;
        case PROTOBUF_C_TYPE_MESSAGE:
                return sub(d, f, check_cb, (void *)fd->descriptor);
        default: /* the varint types */
                return f->wt == WT_VARINT ? 0 : -EPROTO;
        }
}

/* Field @f of a @desc message, whatever its number: unknown ones are skipped. */
static int check_field(struct dec *d, const ProtobufCMessageDescriptor *desc,
                       const struct kc_cri_wire_field *f)
{
        const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field(desc, f->num);

        return fd ? check_value(d, fd, f) : 0;
}

static int check_cb(struct dec *d, const struct kc_cri_wire_field *f, void *desc)
{
        return check_field(d, desc, f);
}

/* ------------------------------------------------------------------------ */
/* Values                                                                     */

/* A string field, NUL-terminated in @d's blocks (protobuf-c's copy, read up to a NUL as well). */
static int get_str(struct dec *d, const struct kc_cri_wire_field *f, const char **ret)
{
        char *s;

        if (f->wt != WT_LEN)
                return -EPROTO;
        if (!(s = dec_alloc(d, f->len + 1)))
                return -ENOMEM;
        if (f->len)
                memcpy(s, f->data, f->len);
        s[f->len] = '\0';
        *ret = s;
        return 0;
}

static int get_i64(const struct kc_cri_wire_field *f, int64_t *ret)
{
        if (f->wt != WT_VARINT)
                return -EPROTO;
        *ret = (int64_t)f->v;
        return 0;
}

/* int32, uint32 and enum fields: the low 32 bits of the varint. */
static int get_u32(const struct kc_cri_wire_field *f, uint32_t *ret)
{
        if (f->wt != WT_VARINT)
                return -EPROTO;
        *ret = (uint32_t)f->v;
        return 0;
}

/* A bool as protobuf-c reads it: true when any of its bytes (any wire type) has a value bit. */
static bool get_bool(const struct kc_cri_wire_field *f)
{
        for (size_t i = 0; i < f->raw_len; i++)
                if (f->raw[i] & 0x7f)
                        return true;
        return false;
}

/* An array growing in an arena: labels, mounts, addresses. */
struct vec {
        void *v;
        size_t n, cap;
};

/* Room for one more @size-byte element at the end of @vec; NULL on ENOMEM. */
static void *vec_push(struct dec *d, struct vec *vec, size_t size)
{
        if (vec->n == vec->cap) {
                size_t cap = vec->cap ? 2 * vec->cap : 8;
                void *v = cap <= SIZE_MAX / 2 / size ? dec_alloc(d, cap * size) : NULL;

                if (!v)
                        return NULL;
                if (vec->n)
                        memcpy(v, vec->v, vec->n * size);
                vec->v = v;
                vec->cap = cap;
        }
        return (char *)vec->v + vec->n++ * size;
}

/* A map<string, string> entry: key and value (its descriptor has no other field). */
static int entry_field(struct dec *d, const struct kc_cri_wire_field *f, void *ctx)
{
        struct kc_label *l = ctx;

        if (f->num == 1)
                return get_str(d, f, &l->key);
        if (f->num == 2)
                return get_str(d, f, &l->value);
        return 0;
}

/*
 * Copies @n < 128 bytes in fixed-size moves, the last one overlapping:
 * with the bound known, the compiler's own copy is a `rep movs`, which
 * costs more to start than a label's key or value takes to copy.
 */
static void copy_short(char *dst, const uint8_t *src, size_t n)
{
        size_t i;

        if (n >= 16) {
                for (i = 0; i + 16 < n; i += 16)
                        memcpy(dst + i, src + i, 16);
                memcpy(dst + n - 16, src + n - 16, 16);
        } else if (n >= 8) {
                memcpy(dst, src, 8);
                memcpy(dst + n - 8, src + n - 8, 8);
        } else if (n >= 4) {
                memcpy(dst, src, 4);
                memcpy(dst + n - 4, src + n - 4, 4);
        } else {
                for (i = 0; i < n; i++)
                        dst[i] = (char)src[i];
        }
}

/*
 * An entry as every encoder writes one: the key (field 1) then the value
 * (field 2), each with a one-byte tag and a one-byte length, nothing else.
 * Both strings into @l, copied and NUL-terminated as get_str() does;
 * false, @l untouched, for any other shape (walked field by field then).
 */
static bool plain_entry(struct dec *d, const uint8_t *p, size_t len, struct kc_label *l, int *ret)
{
        const uint8_t *end = p + len, *v;
        size_t kn, vn;
        char *s;

        if (len < 4 || p[0] != 0x0a || p[1] >= 0x80 || (kn = p[1]) > len - 4)
                return false;
        v = p + 2 + kn;
        if (v[0] != 0x12 || v[1] >= 0x80 || (vn = v[1]) != (size_t)(end - v - 2))
                return false;
        if (!(s = dec_alloc(d, kn + vn + 2))) {
                *ret = -ENOMEM;
                return true;
        }
        copy_short(s, p + 2, kn);
        s[kn] = '\0';
        copy_short(s + kn + 1, v + 2, vn);
        s[kn + 1 + vn] = '\0';
        *l = (struct kc_label){ s, s + kn + 1 };
        *ret = 0;
        return true;
}

/* One map entry appended to @vec (a missing key or value is ""). */
static int map_entry(struct dec *d, const struct kc_cri_wire_field *f, struct vec *vec)
{
        struct kc_label *l;
        int r;

        if (f->wt != WT_LEN)
                return -EPROTO;
        if (!(l = vec_push(d, vec, sizeof(*l))))
                return -ENOMEM;
        if (plain_entry(d, f->data, f->len, l, &r))
                return r;
        *l = (struct kc_label){ "", "" };
        return sub(d, f, entry_field, l);
}

static void labels_out(const struct vec *vec, const struct kc_label **ret, size_t *ret_n)
{
        *ret = vec->n ? vec->v : NULL;
        *ret_n = vec->n;
}

/* ------------------------------------------------------------------------ */
/* Nested messages                                                            */

static int sandbox_metadata_field(struct dec *d, const struct kc_cri_wire_field *f, void *ctx)
{
        struct kc_pod_sandbox_metadata *md = ctx;

        switch (f->num) {
        case 1:
                return get_str(d, f, &md->name);
        case 2:
                return get_str(d, f, &md->uid);
        case 3:
                return get_str(d, f, &md->namespace);
        case 4:
                return get_u32(f, &md->attempt);
        default:
                return check_field(d, &runtime__v1__pod_sandbox_metadata__descriptor, f);
        }
}

static int container_metadata_field(struct dec *d, const struct kc_cri_wire_field *f, void *ctx)
{
        struct kc_container_metadata *md = ctx;

        if (f->num == 1)
                return get_str(d, f, &md->name);
        if (f->num == 2)
                return get_u32(f, &md->attempt);
        return check_field(d, &runtime__v1__container_metadata__descriptor, f);
}

/* ImageSpec: image and user_specified_image, into ctx[0] and ctx[1]. */
static int image_field(struct dec *d, const struct kc_cri_wire_field *f, void *ctx)
{
        const char **img = ctx;

        if (f->num == 1)
                return get_str(d, f, &img[0]);
        if (f->num == 18)
                return get_str(d, f, &img[1]);
        return check_field(d, &runtime__v1__image_spec__descriptor, f);
}

/* convert.c's rule: the image as the pod spec named it when the runtime knows it. */
static const char *image_name(const char *const img[2], bool present)
{
        if (!present)
                return "";
        return *img[1] ? img[1] : img[0];
}

/* PodIP: its ip (its descriptor has no other field). */
static int pod_ip_field(struct dec *d, const struct kc_cri_wire_field *f, void *ctx)
{
        return f->num == 1 ? get_str(d, f, ctx) : 0;
}

/* What a sandbox decoder gathers besides the result. */
struct sandbox_acc {
        struct kc_pod_sandbox *out;
        struct vec labels, annotations, ips;
        const char *ip;
        bool status, has_metadata;
};

/* PodSandboxNetworkStatus: ip and the non-empty additional ips, merged. */
static int network_field(struct dec *d, const struct kc_cri_wire_field *f, void *ctx)
{
        struct sandbox_acc *acc = ctx;
        const char *ip = "", **slot;
        int r;

        if (f->num == 1)
                return get_str(d, f, &acc->ip);
        if (f->num != 2)
                return check_field(d, &runtime__v1__pod_sandbox_network_status__descriptor, f);
        r = sub(d, f, pod_ip_field, &ip);
        if (r < 0 || !*ip)
                return r;
        if (!(slot = vec_push(d, &acc->ips, sizeof(*slot))))
                return -ENOMEM;
        *slot = ip;
        return 0;
}

static int mount_field(struct dec *d, const struct kc_cri_wire_field *f, void *ctx)
{
        struct kc_cri_mount *m = ctx;

        if (f->num == 1)
                return get_str(d, f, &m->container_path);
        if (f->num == 2)
                return get_str(d, f, &m->host_path);
        if (f->num == 3) {
                m->readonly = get_bool(f);
                return 0;
        }
        return check_field(d, &runtime__v1__mount__descriptor, f);
}

/* One Mount appended to @vec. */
static int mount(struct dec *d, const struct kc_cri_wire_field *f, struct vec *vec)
{
        struct kc_cri_mount *m;

        if (f->wt != WT_LEN)
                return -EPROTO;
        if (!(m = vec_push(d, vec, sizeof(*m))))
                return -ENOMEM;
        *m = (struct kc_cri_mount){ .container_path = "", .host_path = "" };
        return sub(d, f, mount_field, m);
}

/* ------------------------------------------------------------------------ */
/* Sandboxes                                                                  */

/* Strings convert.c leaves NULL when empty. */
static const char *opt(const char *s)
{
        return s && *s ? s : NULL;
}

/* A field of PodSandbox (acc->status false) or PodSandboxStatus. */
static int sandbox_field(struct dec *d, const struct kc_cri_wire_field *f, void *ctx)
{
        struct sandbox_acc *acc = ctx;
        struct kc_pod_sandbox *out = acc->out;
        const uint32_t labels = acc->status ? 7 : 5;
        uint32_t state;
        int r;

        switch (f->num) {
        case 1:
                return get_str(d, f, &out->id);
        case 2:
                acc->has_metadata = true;
                /* protobuf-c's merge of a message given twice: the scalars are the last one's. */
                out->metadata.attempt = 0;
                return sub(d, f, sandbox_metadata_field, &out->metadata);
        case 3:
                if ((r = get_u32(f, &state)) == 0)
                        out->state = kc__cri_sandbox_state((int32_t)state);
                return r;
        case 4:
                return get_i64(f, &out->created_at);
        }
        if (f->num == labels)
                return map_entry(d, f, &acc->labels);
        if (f->num == labels + 1)
                return map_entry(d, f, &acc->annotations);
        if (acc->status && f->num == 5)
                return sub(d, f, network_field, acc);
        return check_field(d,
                           acc->status ? &runtime__v1__pod_sandbox_status__descriptor
                                       : &runtime__v1__pod_sandbox__descriptor,
                           f);
}

/* One PodSandbox or PodSandboxStatus message (or occurrence of one) into acc->out. */
static int sandbox(struct dec *d, const uint8_t *p, size_t len, struct sandbox_acc *acc)
{
        acc->out->state = kc__cri_sandbox_state(0);
        acc->out->created_at = 0;
        return each_field(d, p, len, sandbox_field, acc);
}

static void sandbox_init(struct kc_pod_sandbox *out, struct sandbox_acc *acc, bool status)
{
        *out = (struct kc_pod_sandbox){
                .id = "",
                .metadata = { .name = "", .uid = "", .namespace = "" },
        };
        *acc = (struct sandbox_acc){ .out = out, .status = status };
}

static void sandbox_finish(struct kc_pod_sandbox *out, const struct sandbox_acc *acc)
{
        labels_out(&acc->labels, &out->labels, &out->n_labels);
        labels_out(&acc->annotations, &out->annotations, &out->n_annotations);
        out->ip = opt(acc->ip);
        out->additional_ips = acc->ips.n ? acc->ips.v : NULL;
        out->n_additional_ips = acc->ips.n;
}

int kc__cri_wire_pod_sandbox(struct kc_cri_wire_dec *d, const uint8_t *p, size_t len,
                             struct kc_pod_sandbox *out)
{
        struct sandbox_acc acc;
        struct kc_pod_sandbox s;
        int r;

        sandbox_init(&s, &acc, false);
        r = sandbox(d, p, len, &acc);
        if (r < 0)
                return r;
        sandbox_finish(&s, &acc);
        *out = s;
        return 0;
}

/* ------------------------------------------------------------------------ */
/* Containers                                                                 */

/* What a container decoder gathers besides the result. */
struct container_acc {
        struct kc_cri_container *out;
        struct vec labels, annotations, mounts;
        const char *image[2];
        bool has_metadata, has_image;
};

/* Fields 1-4 of ContainerStatus, also Container's 1, 3, 6 and 7 (@num is ContainerStatus's). */
static int container_common(struct dec *d, const struct kc_cri_wire_field *f, uint32_t num,
                            struct container_acc *acc)
{
        struct kc_cri_container *out = acc->out;
        uint32_t state;
        int r;

        switch (num) {
        case 1:
                return get_str(d, f, &out->id);
        case 2:
                acc->has_metadata = true;
                out->metadata.attempt = 0; /* as in sandbox_field() */
                return sub(d, f, container_metadata_field, &out->metadata);
        case 3:
                if ((r = get_u32(f, &state)) == 0)
                        out->state = kc__cri_container_state((int32_t)state);
                return r;
        default:
                return get_i64(f, &out->created_at);
        }
}

static int container_image(struct dec *d, const struct kc_cri_wire_field *f,
                           struct container_acc *acc)
{
        acc->has_image = true;
        return sub(d, f, image_field, acc->image);
}

/* A field of Container (a listed item). */
static int container_field(struct dec *d, const struct kc_cri_wire_field *f, void *ctx)
{
        static const uint8_t common[] = { [1] = 1, [3] = 2, [6] = 3, [7] = 4 };
        struct container_acc *acc = ctx;

        if (f->num < sizeof(common) && common[f->num])
                return container_common(d, f, common[f->num], acc);
        switch (f->num) {
        case 2:
                return get_str(d, f, &acc->out->pod_sandbox_id);
        case 4:
                return container_image(d, f, acc);
        case 5:
                return get_str(d, f, &acc->out->image_ref);
        case 8:
                return map_entry(d, f, &acc->labels);
        case 9:
                return map_entry(d, f, &acc->annotations);
        default:
                return check_field(d, &runtime__v1__container__descriptor, f);
        }
}

/* A field of ContainerStatus. */
static int container_status_field(struct dec *d, const struct kc_cri_wire_field *f, void *ctx)
{
        struct container_acc *acc = ctx;
        struct kc_cri_container *out = acc->out;

        switch (f->num) {
        case 1:
        case 2:
        case 3:
        case 4:
                return container_common(d, f, f->num, acc);
        case 5:
                return get_i64(f, &out->started_at);
        case 6:
                return get_i64(f, &out->finished_at);
        case 7:
                return get_u32(f, (uint32_t *)&out->exit_code);
        case 8:
                return container_image(d, f, acc);
        case 9:
                return get_str(d, f, &out->image_ref);
        case 10:
                return get_str(d, f, &out->reason);
        case 11:
                return get_str(d, f, &out->message);
        case 12:
                return map_entry(d, f, &acc->labels);
        case 13:
                return map_entry(d, f, &acc->annotations);
        case 14:
                return mount(d, f, &acc->mounts);
        case 15:
                return get_str(d, f, &out->log_path);
        default:
                return check_field(d, &runtime__v1__container_status__descriptor, f);
        }
}

static void container_init(struct kc_cri_container *out, struct container_acc *acc)
{
        *out = (struct kc_cri_container){
                .id = "",
                .metadata = { .name = "" },
                .image_ref = "",
        };
        *acc = (struct container_acc){ .out = out, .image = { "", "" } };
}

static void container_finish(struct kc_cri_container *out, const struct container_acc *acc)
{
        out->image = image_name(acc->image, acc->has_image);
        labels_out(&acc->labels, &out->labels, &out->n_labels);
        labels_out(&acc->annotations, &out->annotations, &out->n_annotations);
        if (acc->mounts.n) {
                out->mounts = acc->mounts.v;
                out->n_mounts = acc->mounts.n;
        }
}

int kc__cri_wire_container(struct kc_cri_wire_dec *d, const uint8_t *p, size_t len,
                           struct kc_cri_container *out)
{
        struct container_acc acc;
        struct kc_cri_container c;
        int r;

        container_init(&c, &acc);
        c.pod_sandbox_id = "";
        r = each_field(d, p, len, container_field, &acc);
        if (r < 0)
                return r;
        container_finish(&c, &acc);
        *out = c;
        return 0;
}

/* ------------------------------------------------------------------------ */
/* The responses                                                              */

/* No pointer arithmetic on a NULL buffer (an empty response). */
static const uint8_t *nonnull(const uint8_t *buf)
{
        static const uint8_t empty[1];

        return buf ? buf : empty;
}

static int decode_error(struct kc_runtime_error *err, const char *method, int r)
{
        if (r == -ENOMEM)
                return kc_runtime_error_set(err, -ENOMEM, KC_RUNTIME_INTERNAL, "out of memory");
        return kc_runtime_error_set(err, -EPROTO, KC_RUNTIME_INTERNAL,
                                    "failed to decode %s response", method);
}

static int missing(struct kc_runtime_error *err, const char *what)
{
        return kc_runtime_error_set(err, -EPROTO, KC_RUNTIME_INTERNAL, "%s", what);
}

/* A status response: its status (field 1) to @one, each occurrence; the others checked. */
struct status_response {
        const ProtobufCMessageDescriptor *desc;
        int (*one)(struct dec *d, const struct kc_cri_wire_field *f, void *acc);
        void *acc;
        bool found;
};

static int status_response_field(struct dec *d, const struct kc_cri_wire_field *f, void *ctx)
{
        struct status_response *sr = ctx;

        if (f->num != 1 || f->wt != WT_LEN)
                return check_field(d, sr->desc, f);
        sr->found = true;
        return sr->one(d, f, sr->acc);
}

/*
 * Decodes a status response @sr into a new arena (*ret_arena): kubelet's
 * first check (a status at all) included, @method naming the call.
 */
static int unpack_status(const char *method, struct status_response *sr, const uint8_t *buf,
                         size_t len, struct kc_arena **ret_arena, struct kc_runtime_error *err)
{
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        struct dec d;
        int r;

        if (dec_new(&d, len, &a) < 0)
                return decode_error(err, method, -ENOMEM);
        r = each_field(&d, nonnull(buf), len, status_response_field, sr);
        if (r < 0)
                return decode_error(err, method, r);
        if (!sr->found)
                return kc_runtime_error_set(err, -EPROTO, KC_RUNTIME_INTERNAL,
                                            "%s response has no status", method);
        *ret_arena = TAKE_PTR(a);
        return 0;
}

static int sandbox_status_one(struct dec *d, const struct kc_cri_wire_field *f, void *acc)
{
        return sandbox(d, f->data, f->len, acc);
}

int kc__cri_unpack_pod_sandbox_status(const uint8_t *buf, size_t len,
                                      struct kc_pod_sandbox_status_result *ret,
                                      struct kc_runtime_error *err)
{
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        struct kc_pod_sandbox s;
        struct sandbox_acc acc;
        struct status_response sr = { &runtime__v1__pod_sandbox_status_response__descriptor,
                                      sandbox_status_one, &acc, false };
        int r;

        sandbox_init(&s, &acc, true);
        r = unpack_status("PodSandboxStatus", &sr, buf, len, &a, err);
        if (r < 0)
                return r;
        if (!*s.id)
                return missing(err, "status.Id is not set");
        if (!acc.has_metadata)
                return missing(err, "status.Metadata is not set");
        sandbox_finish(&s, &acc);
        ret->status = s;
        ret->arena = TAKE_PTR(a);
        return 0;
}

/* One occurrence of ContainerStatusResponse.status: its scalars are reset (protobuf-c's merge). */
static int container_status_one(struct dec *d, const struct kc_cri_wire_field *f, void *ctx)
{
        struct container_acc *acc = ctx;
        struct kc_cri_container *out = acc->out;

        out->state = kc__cri_container_state(0);
        out->created_at = out->started_at = out->finished_at = 0;
        out->exit_code = 0;
        return each_field(d, f->data, f->len, container_status_field, acc);
}

int kc__cri_unpack_container_status(const uint8_t *buf, size_t len,
                                    struct kc_container_status_result *ret,
                                    struct kc_runtime_error *err)
{
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        struct kc_cri_container c;
        struct container_acc acc;
        struct status_response sr = { &runtime__v1__container_status_response__descriptor,
                                      container_status_one, &acc, false };
        int r;

        container_init(&c, &acc);
        r = unpack_status("ContainerStatus", &sr, buf, len, &a, err);
        if (r < 0)
                return r;
        if (!*c.id)
                return missing(err, "status.Id is not set");
        if (!acc.has_metadata)
                return missing(err, "status.Metadata is not set");
        if (!acc.has_image)
                return missing(err, "status.Image is not set");
        container_finish(&c, &acc);
        c.reason = opt(c.reason);
        c.message = opt(c.message);
        c.log_path = opt(c.log_path);
        ret->status = c;
        ret->arena = TAKE_PTR(a);
        return 0;
}

/* Decodes one listed item into @item. */
typedef int (*item_fn)(struct dec *d, const uint8_t *p, size_t len, void *item);

/*
 * A list response (items in field 1 of a @desc message): the items counted,
 * then each decoded by @one into @item_size bytes of the array, all in d->a.
 */
static int list_walk(const ProtobufCMessageDescriptor *desc, struct dec *d, const uint8_t *buf,
                     size_t len, size_t item_size, item_fn one, void **ret_items, size_t *ret_n)
{
        struct kc_cri_wire w = { buf, buf + len };
        struct kc_cri_wire_field f;
        char *items = NULL;
        size_t n = 0, i = 0;
        int r;

        while ((r = kc__cri_wire_next(&w, &f)) > 0) {
                if (f.num == 1 && f.wt == WT_LEN)
                        n++;
                else if ((r = check_field(d, desc, &f)) < 0)
                        return r;
        }
        if (r < 0)
                return r;
        if (n && !(items = kc_arena_alloc(d->a, n * item_size)))
                return -ENOMEM;
        w = (struct kc_cri_wire){ buf, buf + len };
        while (kc__cri_wire_next(&w, &f) > 0)
                if (f.num == 1 && (r = one(d, f.data, f.len, items + i++ * item_size)) < 0)
                        return r;
        *ret_items = items;
        *ret_n = n;
        return 0;
}

static int sandbox_item(struct dec *d, const uint8_t *p, size_t len, void *item)
{
        return kc__cri_wire_pod_sandbox(d, p, len, item);
}

static int container_item(struct dec *d, const uint8_t *p, size_t len, void *item)
{
        return kc__cri_wire_container(d, p, len, item);
}

/* A list result: its items by @one in a new arena. */
static int unpack_list(const ProtobufCMessageDescriptor *desc, const char *method,
                       const uint8_t *buf, size_t len, size_t item_size, item_fn one,
                       void **ret_items, size_t *ret_n, struct kc_arena **ret_arena,
                       struct kc_runtime_error *err)
{
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        struct dec d;
        int r;

        if (dec_new(&d, len, &a) < 0)
                return decode_error(err, method, -ENOMEM);
        r = list_walk(desc, &d, nonnull(buf), len, item_size, one, ret_items, ret_n);
        if (r < 0)
                return decode_error(err, method, r);
        *ret_arena = TAKE_PTR(a);
        return 0;
}

int kc__cri_unpack_list_pod_sandbox(const uint8_t *buf, size_t len, struct kc_pod_sandbox_list *ret,
                                    struct kc_runtime_error *err)
{
        struct kc_pod_sandbox_list l = { 0 };
        void *items = NULL;
        int r;

        r = unpack_list(&runtime__v1__list_pod_sandbox_response__descriptor, "ListPodSandbox", buf,
                        len, sizeof(struct kc_pod_sandbox), sandbox_item, &items, &l.n, &l.arena,
                        err);
        if (r < 0)
                return r;
        l.items = items;
        *ret = l;
        return 0;
}

int kc__cri_unpack_list_containers(const uint8_t *buf, size_t len, struct kc_container_list *ret,
                                   struct kc_runtime_error *err)
{
        struct kc_container_list l = { 0 };
        void *items = NULL;
        int r;

        r = unpack_list(&runtime__v1__list_containers_response__descriptor, "ListContainers", buf,
                        len, sizeof(struct kc_cri_container), container_item, &items, &l.n,
                        &l.arena, err);
        if (r < 0)
                return r;
        l.items = items;
        *ret = l;
        return 0;
}
