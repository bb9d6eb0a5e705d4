/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The hand-written CRI decoders (runtime/cri/wire.c, issue 18) against
 * protobuf-c (the *_pbc twins, tests/harness/cri_pbc_oracle.c): the same
 * results and errors on messages as kubelet's runtimes send them, on
 * randomized messages (fields in any order, given twice, unknown fields of
 * every wire type, packed and unpacked, wrong wire types, nested messages
 * given twice), and on those messages cut short and corrupted. Plus the
 * cases that pin protobuf-c's own rules (a nested message given twice
 * resets its scalars, a bool read from any wire type, groups refused).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/arena.h"
#include "cri/internal.h"
#include "cri_wire_diff.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"

/* ------------------------------------------------------------------------ */
/* A small protobuf encoder                                                   */

struct buf {
        uint8_t b[16384];
        size_t n;
};

static void put_byte(struct buf *w, uint8_t c)
{
        if (w->n < sizeof(w->b))
                w->b[w->n++] = c;
}

static void put_varint(struct buf *w, uint64_t v)
{
        do {
                put_byte(w, (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
                v >>= 7;
        } while (v);
}

static void put_tag(struct buf *w, uint32_t num, unsigned wt)
{
        put_varint(w, (uint64_t)num << 3 | wt);
}

static void put_bytes(struct buf *w, uint32_t num, const void *p, size_t n)
{
        put_tag(w, num, 2);
        put_varint(w, n);
        for (size_t i = 0; i < n; i++)
                put_byte(w, ((const uint8_t *)p)[i]);
}

static void put_str(struct buf *w, uint32_t num, const char *s)
{
        put_bytes(w, num, s, strlen(s));
}

static void put_msg(struct buf *w, uint32_t num, const struct buf *m)
{
        put_bytes(w, num, m->b, m->n);
}

static void put_u64(struct buf *w, uint32_t num, uint64_t v)
{
        put_tag(w, num, 0);
        put_varint(w, v);
}

/* ------------------------------------------------------------------------ */
/* Random messages                                                            */

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint64_t rnd(void)
{
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return rng;
}

static unsigned pick(unsigned n)
{
        return (unsigned)(rnd() % n);
}

/* One in @n. */
static bool chance(unsigned n)
{
        return pick(n) == 0;
}

static void rnd_str(struct buf *w, uint32_t num)
{
        static const char alphabet[] = "abcxyz019-_/.:";
        char s[24];
        size_t n = pick(4) == 0 ? 0 : pick(20);

        for (size_t i = 0; i < n; i++)
                s[i] = chance(40) ? '\0' : alphabet[pick(sizeof(alphabet) - 1)];
        put_bytes(w, num, s, n);
}

static uint64_t rnd_scalar(void)
{
        switch (pick(4)) {
        case 0:
                return pick(5);
        case 1:
                return (uint64_t) - (int64_t)(1 + pick(1000)); /* negative: 10 bytes */
        case 2:
                return rnd();
        default:
                return 1700000000000000000ULL + pick(1000000);
        }
}

/* An unknown field (numbers 40-60, free in every CRI message here), any wire type. */
static void rnd_unknown(struct buf *w)
{
        uint32_t num = 40 + pick(20);

        switch (pick(4)) {
        case 0:
                put_u64(w, num, rnd_scalar());
                break;
        case 1:
                put_tag(w, num, 1);
                for (int i = 0; i < 8; i++)
                        put_byte(w, (uint8_t)rnd());
                break;
        case 2:
                put_tag(w, num, 5);
                for (int i = 0; i < 4; i++)
                        put_byte(w, (uint8_t)rnd());
                break;
        default:
                rnd_str(w, num);
        }
}

/* A scalar field, now and then with a wrong wire type (refused by both). */
static void rnd_varint_field(struct buf *w, uint32_t num)
{
        if (chance(60))
                rnd_str(w, num);
        else
                put_u64(w, num, rnd_scalar());
}

/* A string field, now and then with a wrong wire type. */
static void rnd_str_field(struct buf *w, uint32_t num)
{
        if (chance(60))
                put_u64(w, num, pick(3));
        else
                rnd_str(w, num);
}

/* How a field of a message is generated. */
enum kind {
        STR,    /* a string */
        VARINT, /* an integer or enum */
        BOOL,   /* a bool: now and then in another wire type, as protobuf-c reads any */
        MAP,    /* map<string, string> entries */
        SUB,    /* a nested message: once, or now and then twice (merged) */
        SUBS,   /* a repeated message */
};

struct field {
        uint32_t num;
        enum kind kind;
        const struct field *sub; /* SUB, SUBS: the nested message's fields, ended by num 0 */
};

static void gen_message(struct buf *w, const struct field *fields);

/* A nested message of @fields (now and then as a varint: refused). */
static void rnd_sub(struct buf *w, uint32_t num, const struct field *fields)
{
        struct buf *m = calloc(1, sizeof(*m));

        assert_non_null(m);
        gen_message(m, fields);
        if (chance(80))
                put_u64(w, num, 1);
        else
                put_msg(w, num, m);
        free(m);
}

static void gen_bool(struct buf *w, uint32_t num)
{
        if (!chance(5)) {
                rnd_varint_field(w, num);
        } else if (chance(2)) {
                put_tag(w, num, 5);
                for (int i = 0; i < 4; i++)
                        put_byte(w, (uint8_t)(chance(2) ? 0 : rnd()));
        } else {
                rnd_str(w, num);
        }
}

static const struct field entry_fields[] = { { 1, STR, NULL }, { 2, STR, NULL }, { 0, STR, NULL } };

/* One field as @f says. */
static void gen_field(struct buf *w, const struct field *f)
{
        unsigned n;

        switch (f->kind) {
        case STR:
                rnd_str_field(w, f->num);
                break;
        case VARINT:
                rnd_varint_field(w, f->num);
                break;
        case BOOL:
                gen_bool(w, f->num);
                break;
        case MAP:
                for (n = pick(5); n > 0; n--)
                        rnd_sub(w, f->num, entry_fields);
                break;
        case SUB:
                rnd_sub(w, f->num, f->sub);
                if (chance(8))
                        rnd_sub(w, f->num, f->sub);
                break;
        case SUBS:
                for (n = pick(4); n > 0; n--)
                        rnd_sub(w, f->num, f->sub);
                break;
        }
}

/*
 * A message of @fields: in random order, some left out, some given twice,
 * unknown fields among them.
 */
static void gen_message(struct buf *w, const struct field *fields)
{
        const struct field *order[32];
        size_t n = 0;

        while (fields[n].num)
                order[n] = &fields[n], n++;
        for (size_t i = n; i > 1; i--) {
                size_t j = pick((unsigned)i);
                const struct field *t = order[i - 1];

                order[i - 1] = order[j];
                order[j] = t;
        }
        for (size_t i = 0; i < n; i++) {
                if (chance(6))
                        continue;
                gen_field(w, order[i]);
                if (chance(10))
                        gen_field(w, order[i]);
                if (chance(8))
                        rnd_unknown(w);
        }
}

#define END                                                                                        \
        {                                                                                          \
                0, STR, NULL                                                                       \
        }

static const struct field sandbox_md[] = {
        { 1, STR, NULL }, { 2, STR, NULL }, { 3, STR, NULL }, { 4, VARINT, NULL }, END
};
static const struct field container_md[] = { { 1, STR, NULL }, { 2, VARINT, NULL }, END };
static const struct field image[] = { { 1, STR, NULL }, { 2, MAP, NULL }, { 18, STR, NULL }, END };
static const struct field pod_ip[] = { { 1, STR, NULL }, END };
static const struct field network[] = { { 1, STR, NULL }, { 2, SUBS, pod_ip }, END };
static const struct field mount[] = { { 1, STR, NULL },  { 2, STR, NULL },    { 3, BOOL, NULL },
                                      { 4, BOOL, NULL }, { 5, VARINT, NULL }, END };
static const struct field container_status[] = {
        { 1, STR, NULL },
        { 2, SUB, container_md },
        { 3, VARINT, NULL },
        { 4, VARINT, NULL },
        { 5, VARINT, NULL },
        { 6, VARINT, NULL },
        { 7, VARINT, NULL },
        { 8, SUB, image },
        { 9, STR, NULL },
        { 10, STR, NULL },
        { 11, STR, NULL },
        { 12, MAP, NULL },
        { 13, MAP, NULL },
        { 14, SUBS, mount },
        { 15, STR, NULL },
        { 17, STR, NULL },
        END,
};
static const struct field container_status_response[] = { { 1, SUB, container_status },
                                                          { 2, MAP, NULL },
                                                          END };
static const struct field sandbox_status[] = {
        { 1, STR, NULL },    { 2, SUB, sandbox_md }, { 3, VARINT, NULL },
        { 4, VARINT, NULL }, { 5, SUB, network },    { 7, MAP, NULL },
        { 8, MAP, NULL },    { 9, STR, NULL },       END,
};
static const struct field sandbox_status_response[] = {
        { 1, SUB, sandbox_status },
        { 2, MAP, NULL },
        { 3, SUBS, container_status },
        { 4, VARINT, NULL },
        END,
};
static const struct field sandbox[] = {
        { 1, STR, NULL }, { 2, SUB, sandbox_md }, { 3, VARINT, NULL }, { 4, VARINT, NULL },
        { 5, MAP, NULL }, { 6, MAP, NULL },       { 7, STR, NULL },    END,
};
static const struct field container[] = {
        { 1, STR, NULL },
        { 2, STR, NULL },
        { 3, SUB, container_md },
        { 4, SUB, image },
        { 5, STR, NULL },
        { 6, VARINT, NULL },
        { 7, VARINT, NULL },
        { 8, MAP, NULL },
        { 9, MAP, NULL },
        { 10, STR, NULL },
        END,
};
static const struct field sandbox_list[] = { { 1, SUBS, sandbox }, END };
static const struct field container_list[] = { { 1, SUBS, container }, END };

static const struct field *const schemas[KC_CRI_WIRE_SEL_MAX] = {
        [KC_CRI_WIRE_POD_SANDBOX_STATUS] = sandbox_status_response,
        [KC_CRI_WIRE_LIST_POD_SANDBOX] = sandbox_list,
        [KC_CRI_WIRE_LIST_CONTAINERS] = container_list,
        [KC_CRI_WIRE_CONTAINER_STATUS] = container_status_response,
};

/* A response: the status first most of the time, so that kubelet's checks pass now and then. */
static void gen_response(struct buf *w, enum kc_cri_wire_sel sel)
{
        if (!chance(10))
                gen_field(w, &schemas[sel][0]);
        gen_message(w, schemas[sel]);
}

/* ------------------------------------------------------------------------ */

static void expect_same(enum kc_cri_wire_sel sel, const uint8_t *b, size_t n)
{
        const char *d = kc_cri_wire_diff(sel, b, n);

        if (d) {
                fprintf(stderr, "selector %d, %zu bytes:", (int)sel, n);
                for (size_t i = 0; i < n; i++)
                        fprintf(stderr, " %02x", b[i]);
                fprintf(stderr, "\n%s\n", d);
        }
        assert_null(d);
}

/* Corrupts a copy of @src: a byte changed, removed, inserted, or the end cut off. */
static size_t mutate(const struct buf *src, uint8_t *dst)
{
        size_t n = src->n, at = n ? pick((unsigned)n) : 0;

        memcpy(dst, src->b, n);
        switch (pick(4)) {
        case 0:
                if (n)
                        dst[at] ^= (uint8_t)(1u << pick(8));
                return n;
        case 1:
                if (n)
                        memmove(dst + at, dst + at + 1, n - at - 1);
                return n ? n - 1 : 0;
        case 2:
                memmove(dst + at + 1, dst + at, n - at);
                dst[at] = (uint8_t)rnd();
                return n + 1;
        default:
                return at;
        }
}

static void test_random_messages(void **state)
{
        static uint8_t m[sizeof(((struct buf *)0)->b) + 1];
        size_t agreed_ok[KC_CRI_WIRE_SEL_MAX] = { 0 };
        (void)state;

        for (int round = 0; round < 6000; round++) {
                enum kc_cri_wire_sel sel = (enum kc_cri_wire_sel)(round % KC_CRI_WIRE_SEL_MAX);
                struct buf *w = calloc(1, sizeof(*w));
                struct kc_runtime_error err;

                assert_non_null(w);
                gen_response(w, sel);
                expect_same(sel, w->b, w->n);
                if (sel == KC_CRI_WIRE_CONTAINER_STATUS) {
                        struct kc_container_status_result r = { 0 };

                        if (kc__cri_unpack_container_status(w->b, w->n, &r, &err) == 0)
                                agreed_ok[sel]++;
                        kc_runtime_result_done(&r);
                }
                for (int k = 0; k < 8; k++) {
                        size_t n = mutate(w, m);

                        expect_same(sel, m, n);
                }
                free(w);
        }
        /* The generator reaches the success path too, not only errors. */
        assert_true(agreed_ok[KC_CRI_WIRE_CONTAINER_STATUS] > 100);
}

/* Every selector on random bytes. */
static void test_random_bytes(void **state)
{
        uint8_t b[64];
        (void)state;

        for (int round = 0; round < 20000; round++) {
                size_t n = pick(sizeof(b));

                for (size_t i = 0; i < n; i++)
                        b[i] = (uint8_t)rnd();
                expect_same((enum kc_cri_wire_sel)(round % KC_CRI_WIRE_SEL_MAX), b, n);
        }
}

/* A ContainerStatusResponse around @status. */
static void status_response(struct buf *out, const struct buf *status)
{
        out->n = 0;
        put_msg(out, 1, status);
}

/* A valid ContainerStatus with id, metadata {name "c", attempt 3} and an image. */
static void minimal_status(struct buf *s)
{
        struct buf md = { .n = 0 }, img = { .n = 0 };

        put_str(&md, 1, "c");
        put_u64(&md, 2, 3);
        put_str(&img, 1, "busybox");
        put_str(s, 1, "cid");
        put_msg(s, 2, &md);
        put_msg(s, 8, &img);
}

static void test_nested_message_twice(void **state)
{
        struct buf s = { .n = 0 }, md = { .n = 0 }, resp;
        struct kc_container_status_result r = { 0 };
        (void)state;

        minimal_status(&s);
        put_str(&md, 1, "d"); /* metadata again: name "d", no attempt */
        put_msg(&s, 2, &md);
        put_u64(&s, 3, 1); /* state RUNNING */
        status_response(&resp, &s);
        expect_same(KC_CRI_WIRE_CONTAINER_STATUS, resp.b, resp.n);
        assert_int_equal(kc__cri_unpack_container_status(resp.b, resp.n, &r, NULL), 0);
        assert_string_equal(r.status.metadata.name, "d");
        /* protobuf-c's merge of proto3 messages: the attempt is the last occurrence's. */
        assert_int_equal(r.status.metadata.attempt, 0);
        assert_int_equal(r.status.state, KC_CONTAINER_STATE_RUNNING);
        kc_runtime_result_done(&r);
}

static void test_bool_any_wire_type(void **state)
{
        struct buf s = { .n = 0 }, mnt = { .n = 0 }, resp;
        struct kc_container_status_result r = { 0 };
        (void)state;

        minimal_status(&s);
        put_str(&mnt, 1, "/dev/termination-log");
        put_bytes(&mnt, 3, "\x00\x01", 2); /* readonly as a length-delimited field */
        put_msg(&s, 14, &mnt);
        status_response(&resp, &s);
        expect_same(KC_CRI_WIRE_CONTAINER_STATUS, resp.b, resp.n);
        assert_int_equal(kc__cri_unpack_container_status(resp.b, resp.n, &r, NULL), 0);
        assert_int_equal(r.status.n_mounts, 1);
        assert_true(r.status.mounts[0].readonly);
        kc_runtime_result_done(&r);
}

static void test_malformed(void **state)
{
        /* Each is refused by both with "failed to decode ContainerStatus response". */
        static const struct {
                const char *what;
                uint8_t b[16];
                size_t n;
        } cases[] = {
                { "group start", { 0x0b }, 1 },
                { "group end", { 0x0c }, 1 },
                { "wire type 6", { 0x0e, 0x00 }, 2 },
                { "field 0", { 0x02, 0x00 }, 2 },
                { "length past the end", { 0x0a, 0x05, 0x00 }, 3 },
                /* 10 + 3 << 32: past the end, though its low 32 bits are not (fuzz finding) */
                { "length over 32 bits",
                  { 0x12, 0x8a, 0x80, 0x80, 0x80, 0x30, 0x0a, 0x08, 'a', 'a', 'a', 'a', 'a', 'a',
                    'a', 'a' },
                  16 },
                { "unterminated varint", { 0x18, 0x80, 0x80 }, 3 },
                { "11-byte varint",
                  { 0x18, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 },
                  12 },
                { "6-byte tag", { 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 }, 6 },
                { "64-bit cut short", { 0x41, 0x00, 0x00 }, 3 },
                { "status as a varint", { 0x08, 0x01 }, 2 },
                { "info entry as 32-bit", { 0x15, 0x00, 0x00, 0x00, 0x00 }, 5 },
        };
        (void)state;

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct kc_container_status_result r = { 0 };
                struct kc_runtime_error err = { 0 };

                expect_same(KC_CRI_WIRE_CONTAINER_STATUS, cases[i].b, cases[i].n);
                assert_int_equal(kc__cri_unpack_container_status(cases[i].b, cases[i].n, &r, &err),
                                 -EPROTO);
                if (strcmp(err.message, "failed to decode ContainerStatus response") != 0)
                        fail_msg("%s: %s", cases[i].what, err.message);
                assert_null(r.arena);
        }
}

/* A known field the result does not hold is checked all the same. */
static void test_unused_field_checked(void **state)
{
        struct buf s = { .n = 0 }, resp, sb = { .n = 0 }, item = { .n = 0 };
        struct kc_runtime_error err = { 0 };
        struct kc_container_status_result r = { 0 };
        struct kc_pod_sandbox_list l = { 0 };
        (void)state;

        minimal_status(&s);
        put_u64(&s, 17, 7); /* image_id, a string, as a varint */
        status_response(&resp, &s);
        expect_same(KC_CRI_WIRE_CONTAINER_STATUS, resp.b, resp.n);
        assert_int_equal(kc__cri_unpack_container_status(resp.b, resp.n, &r, &err), -EPROTO);

        put_str(&item, 1, "sb");
        put_u64(&item, 7, 1); /* runtime_handler as a varint */
        put_msg(&sb, 1, &item);
        expect_same(KC_CRI_WIRE_LIST_POD_SANDBOX, sb.b, sb.n);
        assert_int_equal(kc__cri_unpack_list_pod_sandbox(sb.b, sb.n, &l, &err), -EPROTO);
}

/*
 * Map entries in every shape around the one wire.c reads in one step (key
 * then value, one-byte tags and lengths, nothing else): each decoded as
 * protobuf-c does, the labels read back in order.
 */
/* Every key and value length a one-byte length allows, read back byte for byte. */
static void test_map_entry_lengths(void **state)
{
        static char key[128], value[128];
        struct buf s, e, resp;
        (void)state;

        for (size_t n = 0; n < 128; n++) {
                struct kc_container_status_result r = { 0 };

                for (size_t i = 0; i < n; i++)
                        key[i] = (char)('a' + i % 26);
                key[n] = '\0';
                for (size_t i = 0; i < 127 - n; i++)
                        value[i] = (char)('A' + (i * 7) % 26);
                value[127 - n] = '\0';
                s = (struct buf){ .n = 0 };
                e = (struct buf){ .n = 0 };
                minimal_status(&s);
                put_str(&e, 1, key);
                put_str(&e, 2, value);
                put_msg(&s, 13, &e);
                status_response(&resp, &s);
                expect_same(KC_CRI_WIRE_CONTAINER_STATUS, resp.b, resp.n);
                assert_int_equal(kc__cri_unpack_container_status(resp.b, resp.n, &r, NULL), 0);
                assert_int_equal(r.status.n_annotations, 1);
                assert_string_equal(r.status.annotations[0].key, key);
                assert_string_equal(r.status.annotations[0].value, value);
                kc_runtime_result_done(&r);
        }
}

static void test_map_entry_shapes(void **state)
{
        static char k127[128], v128[129];
        static const uint8_t dup_key[] = { 0x0a, 0x01, 'a', 0x12, 0x01, 'b', 0x0a, 0x01, 'c' };
        static const uint8_t empty_both[] = { 0x0a, 0x00, 0x12, 0x00 };
        static const uint8_t long_len[] = { 0x0a, 0x81, 0x00, 'k', 0x12, 0x01, 'v' };
        static const uint8_t extra[] = { 0x0a, 0x01, 'k', 0x12, 0x01, 'v', 0x18, 0x01 };
        static const uint8_t value_first[] = { 0x12, 0x01, 'v', 0x0a, 0x01, 'k' };
        static const uint8_t cut[] = { 0x0a, 0x01, 'k', 0x12, 0x02, 'v' };
        static const uint8_t nul[] = { 0x0a, 0x03, 'a', 0x00, 'b', 0x12, 0x01, 'v' };
        static const struct {
                const uint8_t *b;
                size_t n;
                const char *key, *value; /* NULL: refused */
        } cases[] = {
                { empty_both, sizeof(empty_both), "", "" },
                { dup_key, sizeof(dup_key), "c", "b" },
                { long_len, sizeof(long_len), "k", "v" },
                { extra, sizeof(extra), "k", "v" },
                { value_first, sizeof(value_first), "k", "v" },
                { cut, sizeof(cut), NULL, NULL },
                { nul, sizeof(nul), "a", "v" },
                { (const uint8_t *)"\x0a\x01k", 3, "k", "" },
                { (const uint8_t *)"\x12\x01v", 3, "", "v" },
                { (const uint8_t *)"", 0, "", "" },
        };
        struct buf s, e, resp;
        (void)state;

        memset(k127, 'k', 127);
        memset(v128, 'v', 128);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]) + 2; i++) {
                struct kc_container_status_result r = { 0 };
                const char *key, *value;
                int rc;

                s = (struct buf){ .n = 0 };
                e = (struct buf){ .n = 0 };
                minimal_status(&s);
                put_str(&e, 1, "first");
                put_str(&e, 2, "1");
                put_msg(&s, 12, &e); /* a plain entry before the one tried */
                e.n = 0;
                if (i < sizeof(cases) / sizeof(cases[0])) {
                        put_bytes(&s, 12, cases[i].b, cases[i].n);
                        key = cases[i].key;
                        value = cases[i].value;
                } else { /* the longest one-byte lengths, and one past */
                        key = i % 2 ? k127 : v128;
                        value = i % 2 ? v128 : k127;
                        put_str(&e, 1, key);
                        put_str(&e, 2, value);
                        put_msg(&s, 12, &e);
                }
                status_response(&resp, &s);
                expect_same(KC_CRI_WIRE_CONTAINER_STATUS, resp.b, resp.n);
                rc = kc__cri_unpack_container_status(resp.b, resp.n, &r, NULL);
                if (!key) {
                        assert_int_equal(rc, -EPROTO);
                        continue;
                }
                assert_int_equal(rc, 0);
                assert_int_equal(r.status.n_labels, 2);
                assert_string_equal(r.status.labels[0].key, "first");
                assert_string_equal(r.status.labels[0].value, "1");
                assert_string_equal(r.status.labels[1].key, key);
                assert_string_equal(r.status.labels[1].value, value);
                kc_runtime_result_done(&r);
        }
}

/* kubelet's checks: the same messages in the same order. */
static void test_verification(void **state)
{
        struct buf s = { .n = 0 }, md = { .n = 0 }, resp;
        (void)state;

        put_str(&s, 1, "cid");
        status_response(&resp, &s);
        expect_same(KC_CRI_WIRE_CONTAINER_STATUS, resp.b, resp.n); /* no metadata */
        put_msg(&s, 2, &md);
        status_response(&resp, &s);
        expect_same(KC_CRI_WIRE_CONTAINER_STATUS, resp.b, resp.n); /* no image */
        expect_same(KC_CRI_WIRE_CONTAINER_STATUS, NULL, 0);        /* no status */
        /* Field 0 in a two-byte tag. */
        expect_same(KC_CRI_WIRE_CONTAINER_STATUS, (const uint8_t *)"\x82\x00\x00", 3);
        expect_same(KC_CRI_WIRE_POD_SANDBOX_STATUS, NULL, 0);
        expect_same(KC_CRI_WIRE_LIST_CONTAINERS, NULL, 0);
        expect_same(KC_CRI_WIRE_LIST_POD_SANDBOX, NULL, 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_random_messages),
                cmocka_unit_test(test_random_bytes),
                cmocka_unit_test(test_nested_message_twice),
                cmocka_unit_test(test_bool_any_wire_type),
                cmocka_unit_test(test_malformed),
                cmocka_unit_test(test_unused_field_checked),
                cmocka_unit_test(test_map_entry_shapes),
                cmocka_unit_test(test_map_entry_lengths),
                cmocka_unit_test(test_verification),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
