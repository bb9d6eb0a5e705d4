/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to the manifest parser (manifest*.c): the YAML tree, field
 * paths, typed access, warnings, and the parsers of the parts of a v1 Pod.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/arena.h"
#include "core/enum_table.h"
#include "kubelet/config/manifest.h"
#include "runtime/api_pod.h"
#include "runtime/runtime_service.h"

enum node_type {
        NODE_SCALAR,
        NODE_SEQ,
        NODE_MAP,
};

struct mf_node {
        enum node_type type;
        bool plain;            /* scalar: plain style without a !!str tag (may be a number...) */
        char *value;           /* scalar: NUL-terminated copy */
        size_t len;            /* scalar: length (the value may hold NUL bytes) */
        struct mf_node **kids; /* seq: items; map: key, value, key, value, ... */
        size_t n, cap;
        size_t line, column; /* 1-based start mark */
        size_t weight;       /* nodes in the expanded subtree */
        size_t bytes;        /* scalar bytes in the expanded subtree */
};

struct anchor {
        char *name;
        struct mf_node *node;
};

struct builder {
        struct mf_node **all; /* every node, for freeing */
        size_t n_all, cap_all;
        struct anchor anchors[KC_MANIFEST_MAX_ANCHORS];
        size_t n_anchors;
        struct mf_node *stack[KC_MANIFEST_MAX_DEPTH + 1];
        char *stack_anchor[KC_MANIFEST_MAX_DEPTH + 1];
        size_t depth;
        size_t expanded;       /* nodes of the document with aliases expanded */
        size_t expanded_bytes; /* scalar bytes of the document with aliases expanded */
        struct mf_node *root;
        unsigned __int128 hash;
};

struct mf_ctx {
        const char *file_name;
        const char *node_name;
        char *err; /* the first error, "<file>: <what>" */
        bool oom;
        struct builder b;
        struct kc_arena *arena; /* everything the parse allocates for the pod template */
        struct kc_manifest_warning *warnings; /* malloc'd, in the order found */
        size_t n_warnings, cap_warnings;
        bool record_warnings; /* the caller asked for them */
};

/* One step of a field path: ".field", "[index]" or "[key]". */
struct mf_path {
        const struct mf_path *up;
        const char *field;
        const char *key;
        size_t index;
};

struct mf_labels {
        struct kc_label *v;
        size_t n;
};

/* ------------------------------------------------------------------------ */
/* Errors, warnings and typed access (manifest.c)                             */

int kc__mf_fail(struct mf_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "<file>: <path>: <what>"; always -EBADMSG (or -ENOMEM). */
int kc__mf_fail_path(struct mf_ctx *c, const struct mf_path *p, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* Records "<file>: <path>: <why>, ignored" (when warnings are asked for). 0 or -ENOMEM. */
int kc__mf_warn(struct mf_ctx *c, const struct mf_path *p, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
void kc__mf_path_render(const struct mf_path *p, FILE *f);
const char *kc__mf_quote(char buf[static 300], const char *s, size_t len);
/* "unsupported value" for the field @p key of @p p, listing the @p supported values. */
int kc__mf_fail_unsupported(struct mf_ctx *c, const struct mf_path *p, const char *key,
                            const char *value, const char *supported);

/* Zeroed arena memory for @p n items of @p size; NULL (and c->oom) on ENOMEM. */
void *kc__mf_alloc(struct mf_ctx *c, size_t n, size_t size);

bool kc__mf_is_null(const struct mf_node *n);
int kc__mf_plain_bool(const struct mf_node *n);
bool kc__mf_plain_number(const struct mf_node *n);
int kc__mf_get_string(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                      const char **ret);
int kc__mf_get_bool(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n, bool *ret);
int kc__mf_get_count(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                     int64_t *ret);
int kc__mf_want_map(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n);
int kc__mf_map_get(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                   const char *key, const struct mf_node **ret);
bool kc__mf_has_merge_key(const struct mf_node *m);
int kc__mf_no_merge_keys(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m);
int kc__mf_field(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                 const char *key, struct mf_path *ret_path, const struct mf_node **ret);
int kc__mf_field_string(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                        const char *key, const char **ret);
int kc__mf_field_bool(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                      const char *key, bool *ret);
int kc__mf_field_count(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                       const char *key, int64_t *ret);
/* A list of strings; null is empty; *ret in the arena (NULL when empty). */
int kc__mf_get_strv(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                    const char ***ret, size_t *ret_n);
int kc__mf_field_strv(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                      const char *key, const char *const **ret, size_t *ret_n);
int kc__mf_label_cmp(const void *a, const void *b);
int kc__mf_get_string_map(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                          size_t extra, struct mf_labels *out);
int kc__mf_field_string_map(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                            const char *key, size_t extra, struct mf_labels *out);

bool kc__mf_is_dns_label(const char *s);
bool kc__mf_is_dns_subdomain(const char *s);
bool kc__mf_has_outer_space(const char *s);

/* ------------------------------------------------------------------------ */
/* Known fields (manifest_fields.c)                                           */

/*
 * One field of a v1 object. @ignored NULL: the parser reads it; else the
 * reason cubelet does not honour it, and a non-null value gets the warning
 * "<file>: <path>: <ignored>, ignored".
 */
struct mf_field {
        const char *name;
        const char *ignored;
};

/* The fields of each v1 object the parser visits. */
enum mf_object {
        MF_POD,
        MF_OBJECT_META,
        MF_POD_SPEC,
        MF_CONTAINER,
        MF_INIT_CONTAINER,
        MF_VOLUME,
        MF_HOST_PATH,
        MF_EMPTY_DIR,
        MF_VOLUME_MOUNT,
        MF_ENV_VAR,
        MF_ENV_VAR_SOURCE,
        MF_OBJECT_FIELD_SELECTOR,
        MF_RESOURCE_FIELD_SELECTOR,
        MF_KEY_SELECTOR,
        MF_ENV_FROM,
        MF_OBJECT_REF,
        MF_RESOURCES,
        MF_CONTAINER_PORT,
        MF_SECURITY_CONTEXT,
        MF_POD_SECURITY_CONTEXT,
        MF_CAPABILITIES,
        MF_SECCOMP,
        MF_SYSCTL,
        MF_LIFECYCLE,
        MF_HANDLER,
        MF_PROBE,
        MF_EXEC,
        MF_HTTP_GET,
        MF_HTTP_HEADER,
        MF_TCP_SOCKET,
        MF_GRPC,
        MF_SLEEP,
        MF_HOST_ALIAS,
        MF_DNS_CONFIG,
        MF_DNS_OPTION,
        MF_POD_OS,
        _MF_OBJECT_MAX,
};

/*
 * Checks the keys of the object @p m (of kind @p kind) at @p p: a key the
 * v1 API does not have, or one cubelet ignores with a non-null value, gets
 * a warning. Refuses merge keys. 0, -EBADMSG or -ENOMEM.
 */
int kc__mf_check_fields(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                        enum mf_object kind);

/*
 * The object field @p key of @p m, of kind @p kind: *ret NULL when null or
 * absent, else the object with its keys checked (kc__mf_check_fields), and
 * its path in *ret_path.
 */
int kc__mf_object_field(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                        const char *key, enum mf_object kind, struct mf_path *ret_path,
                        const struct mf_node **ret);

/* ------------------------------------------------------------------------ */
/* Values (manifest_values.c)                                                 */

/*
 * A resource.Quantity: sign, digits, an optional fraction, then a binary
 * suffix (Ki..Ei), a decimal one (n, u, m, "", k, M, G, T, P, E) or a
 * decimal exponent (e3, E-2). milli rounds up and saturates at INT64_MAX.
 * 0 or -EINVAL.
 */
int kc__mf_parse_quantity(const char *s, int64_t *ret_milli);
/* A quantity field: a string or a plain number. *ret untouched when null. */
int kc__mf_get_quantity(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                        struct kc_api_quantity *ret);
int kc__mf_parse_resources(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                           struct kc_api_resources *out);
int kc__mf_parse_env(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *cn,
                     struct kc_api_container *out);
int kc__mf_parse_ports(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *cn,
                       bool host_network, struct kc_api_container *out);
/* A lifecycle handler (@p probe false) or a probe's handler. */
int kc__mf_parse_handler(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                         bool probe, struct kc_api_handler *out);
int kc__mf_parse_probe(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *cn,
                       const char *key, struct kc_api_probe *out);
/* An integer field in [@p lo, @p hi]; *ret untouched when null. */
int kc__mf_field_range(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                       const char *key, int64_t lo, int64_t hi, int64_t *ret);
/* An optional boolean field (*bool). */
int kc__mf_field_opt_bool(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                          const char *key, enum kc_opt_bool *ret);
/* The list field @p key of @p m: its node (NULL when null or absent) and its path. */
int kc__mf_list_field(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                      const char *key, struct mf_path *lp, const struct mf_node **ret);
/* Parses one item of a list into @p out (an item of the list's array). */
typedef int mf_item_fn(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                       void *out, void *userdata);
/*
 * The list field @p key of @p m: an arena array of items of @p size bytes,
 * each parsed by @p item. Null or empty leaves *ret and *ret_n alone.
 */
int kc__mf_parse_list(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                      const char *key, size_t size, mf_item_fn *item, void *userdata, void *ret,
                      size_t *ret_n);
/*
 * Refuses two items of @p v (@p n items of @p size bytes) whose string at
 * @p offset is equal (and set): "<list>[i].<field>: duplicate value".
 */
int kc__mf_check_unique(struct mf_ctx *c, const struct mf_path *list, const void *v, size_t n,
                        size_t size, size_t offset, const char *field);
/*
 * A {name, value} item into @p out, a struct of two strings; @p userdata
 * points at its enum mf_object: MF_SYSCTL (both required), MF_HTTP_HEADER
 * (the value defaults to "") or MF_DNS_OPTION (the value may be unset).
 */
int kc__mf_parse_name_value(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                            void *out, void *userdata);
/* An IPv4 or IPv6 address. */
bool kc__mf_is_ip(const char *s);
/* An IANA service name (a named port): [a-z0-9-], a letter, no "--", 1..15. */
bool kc__mf_is_port_name(const char *s);

/* ------------------------------------------------------------------------ */
/* Containers and the pod spec (manifest_container.c, manifest_spec.c)        */

struct mf_containers {
        struct kc_api_container *v;
        size_t n;
};

int kc__mf_parse_containers(struct mf_ctx *c, const struct mf_path *spec,
                            const struct mf_node *specn, bool init, bool host_network,
                            struct mf_containers *out);
int kc__mf_parse_security_context(struct mf_ctx *c, const struct mf_path *p,
                                  const struct mf_node *cn, struct kc_api_security_context *out);
int kc__mf_parse_seccomp(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                         struct kc_api_seccomp *out);
/*
 * The pod-level fields of spec (everything but the containers) into @p t;
 * @p spec may be NULL (no spec). The containers are parsed after it.
 */
int kc__mf_parse_pod_fields(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *spec,
                            struct kc_api_pod *t);
/* Checks what refers across the spec: mounts to volumes, named ports, env containers. */
int kc__mf_check_references(struct mf_ctx *c, const struct kc_api_pod *t);
