/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file internal.h
 * @brief runtime/ internals shared by types.c, manager.c and sim/.
 */
#pragma once

#include <stdalign.h>
#include <string.h>

#include "runtime/manager.h"
#include "runtime/runtime_helper.h"
#include "runtime/runtime_service.h"

struct kc_api_container;
struct kc_api_pod;
struct kc_arena;

/*
 * A two-pass packer for "one allocation" objects. The same layout code runs
 * twice: first with base == NULL, which only measures (every reserve returns
 * NULL and writes must be skipped), then with base pointing at a block of the
 * measured size, which copies. Keeping one layout routine for both passes
 * means the size and the copy can never disagree.
 */
struct kc__packer {
        char *base; /* NULL while measuring */
        size_t off;
        bool intern_keys; /* well-known label keys point at static literals, uncopied */
        /*
         * Optional: the measuring pass records string lengths here and the
         * copying pass reuses them (both passes see the strings in the same
         * order); strings past the capacity are measured again.
         */
        uint32_t *lens;
        size_t cap_lens, n_lens, i_lens;
};

static inline void *kc__pack_reserve(struct kc__packer *pk, size_t size, size_t align)
{
        void *p;

        pk->off = (pk->off + align - 1) & ~(align - 1);
        p = pk->base ? pk->base + pk->off : NULL;
        pk->off += size;
        return p;
}

#define kc__pack_array(pk, type, n)                                                                \
        ((type *)((n) > 0 ? kc__pack_reserve((pk), sizeof(type) * (n), alignof(type)) : NULL))

/* NULL stays NULL. While measuring returns NULL too: only store the result. */
static inline const char *kc__pack_str(struct kc__packer *pk, const char *s)
{
        size_t n;
        char *p;

        if (!s)
                return NULL;
        if (!pk->base) {
                n = strlen(s) + 1;
                if (pk->n_lens < pk->cap_lens && n <= UINT32_MAX)
                        pk->lens[pk->n_lens++] = (uint32_t)n;
        } else if (pk->i_lens < pk->n_lens) {
                n = pk->lens[pk->i_lens++];
        } else {
                n = strlen(s) + 1;
        }
        p = kc__pack_reserve(pk, n, 1);
        if (p)
                memcpy(p, s, n);
        return p;
}

/* The static literal equal to @p key when it is a label kubelet uses, else NULL. */
const char *kc__label_key_intern(const char *key);

/* Copies @p n labels (array and strings) into @p pk. */
static inline const struct kc_label *kc__pack_labels(struct kc__packer *pk,
                                                     const struct kc_label *l, size_t n)
{
        struct kc_label *out = kc__pack_array(pk, struct kc_label, n);
        size_t i;

        for (i = 0; i < n; i++) {
                const char *ik = pk->intern_keys ? kc__label_key_intern(l[i].key) : NULL;
                const char *k = ik ? ik : kc__pack_str(pk, l[i].key);
                const char *v = kc__pack_str(pk, l[i].value);

                if (out)
                        out[i] = (struct kc_label){ k, v };
        }
        return out;
}

static inline const char *const *kc__pack_strv(struct kc__packer *pk, const char *const *v,
                                               size_t n)
{
        const char **out = kc__pack_array(pk, const char *, n);
        size_t i;

        for (i = 0; i < n; i++) {
                const char *s = kc__pack_str(pk, v[i]);

                if (out)
                        out[i] = s;
        }
        return out;
}

/* NULL-aware string equality. */
static inline bool kc__streq(const char *a, const char *b)
{
        if (a == b)
                return true;
        if (!a || !b)
                return false;
        return strcmp(a, b) == 0;
}

/* The value of label @p key, or NULL. */
static inline const char *kc__label_get(const struct kc_label *l, size_t n, const char *key)
{
        size_t i;

        /* Interned keys (kc__label_key_intern) usually match by address. */
        for (i = 0; i < n; i++)
                if (l[i].key == key || (l[i].key && strcmp(l[i].key, key) == 0))
                        return l[i].value;
        return NULL;
}

/* True when every selector label is present in @p l with the same value. */
static inline bool kc__labels_match(const struct kc_label *l, size_t n, const struct kc_label *sel,
                                    size_t n_sel)
{
        size_t i;

        for (i = 0; i < n_sel; i++)
                if (!kc__streq(kc__label_get(l, n, sel[i].key), sel[i].value))
                        return false;
        return true;
}

/* FindContainerStatusByName: the newest status named @p name (newest come first), or NULL. */
static inline const struct kc_container_status *
kc__find_container_status(const struct kc_pod_status *s, const char *name)
{
        size_t i;

        for (i = 0; i < s->n_containers; i++)
                if (kc__streq(s->containers[i].name, name))
                        return &s->containers[i];
        return NULL;
}

/* io.kubernetes.container.hash is hex (upstream strconv.ParseUint(s, 16, 64)); 0 if absent/bad. */
uint64_t kc__parse_container_hash(const char *s);

/* Layout routines for CRI objects (strings, arrays; the struct itself is @p d). */
void kc__pack_pod_sandbox(struct kc__packer *pk, const struct kc_pod_sandbox *s,
                          struct kc_pod_sandbox *d);
void kc__pack_cri_container(struct kc__packer *pk, const struct kc_cri_container *s,
                            struct kc_cri_container *d);

/* Packs a CRI sandbox / container (all strings and arrays) into one arena block. */
int kc__pod_sandbox_copy(struct kc_arena *a, const struct kc_pod_sandbox *src,
                         struct kc_pod_sandbox *ret);
int kc__cri_container_copy(struct kc_arena *a, const struct kc_cri_container *src,
                           struct kc_cri_container *ret);

/*
 * kc_pod_new(@p tmpl), when every string of @p tmpl is @p like's own (the
 * same pointers, as many entries): then a pod of @p tmpl's entries and
 * numbers whose strings stay where @p like's are, in the block of
 * kc__pod_strings_block(@p like), which it holds a reference to (issue 18).
 * Otherwise as kc_pod_new().
 */
int kc__pod_new_like(const struct kc_pod *tmpl, const struct kc_pod *like, struct kc_pod **ret);
/* Entries up to this many are checked for a repeated id when a pod is packed (kc_pod_ids_distinct). */
#define KC__POD_IDS_CHECKED_MAX 16

/*
 * The ids of @pod's containers not listed as in @old (may be NULL) at the
 * same index, by id address, state and CreatedAt: those the next
 * get_listed_pod_status() most likely asks the runtime for. Up to @max
 * into @ret; returns how many.
 */
size_t kc__listed_changed_ids(const struct kc_pod *pod, const struct kc_pod *old, const char **ret,
                              size_t max);

/* The pod whose block has @p p's strings: @p p itself unless kc__pod_new_like() made it. */
struct kc_pod *kc__pod_strings_block(const struct kc_pod *p);
/* Asks for @p p's reference count, to be written, and its link to its strings' block. */
void kc__pod_prefetch_header(const struct kc_pod *p);
/*
 * Asks for the reference count of kc__pod_strings_block(@p p) (NULL is
 * fine), to be written, when that is another pod's: reads @p p's header.
 */
void kc__pod_prefetch_strings_block(const struct kc_pod *p);

/*
 * kc_pod_status_new(@p tmpl), except that container i's id, name, image
 * and image_ref, which must live in the arena @p holds[i] (NULL: none;
 * @p holds NULL: none at all), stay there when another holder keeps that
 * arena too (kc_arena_shared(): the simulated runtime's objects): the
 * status then holds a reference to it instead of a copy of them (issue 18).
 * A sandbox's or container's id that is, by address, the id of one of
 * @p pod's sandboxes or containers (@p pod NULL: none), and a UID, name or
 * namespace that is @p pod's own, stays where it is:
 * the status holds a reference to the block @p pod's strings live in
 * (kc__pod_strings_block()), and a later pod built on the same strings
 * names the same objects by the same addresses.
 */
int kc__pod_status_new_holding(const struct kc_pod_status *tmpl, struct kc_arena *const *holds,
                               const struct kc_pod *pod, struct kc_pod_status **ret);

/*
 * The arena container @p i's id, name, image and image_ref live in when
 * @p p (not NULL) holds it instead of a copy (kc__pod_status_new_holding()),
 * else NULL. The reference is @p p's: it lasts as long as @p p does.
 */
struct kc_arena *kc__pod_status_held_arena(const struct kc_pod_status *p, size_t i);

/*
 * Asks for the lines a relist reads of @p p (not NULL), its earlier status:
 * the first 512 bytes of its block, which hold a status of one sandbox and
 * three containers (header, entries, held arenas' list). Reads nothing
 * (issue 18).
 */
void kc__pod_status_prefetch(const struct kc_pod_status *p);
/*
 * Asks for the reference count of each arena @p p (not NULL) holds, to be
 * written: a status built from @p p checks and takes them. Reads @p p's list.
 */
void kc__pod_status_prefetch_held(const struct kc_pod_status *p);

/* Tests: how many pods the runtime manager's GetPods(@all) reuse cache holds. */
struct kc_runtime_manager;
size_t kc__runtime_manager_cached_pods(struct kc_runtime_manager *m, bool all);
/* How many pods GetPods(@p all) found unchanged by its identity records alone (issue 18). */
uint64_t kc__runtime_manager_identity_hits(struct kc_runtime_manager *m, bool all);
/* How many GetPods(@p all) calls handed back the last pods, the listing being the last one. */
uint64_t kc__runtime_manager_listing_hits(struct kc_runtime_manager *m, bool all);
/* How many GetPods(@p all) calls built pods from a listing's delta alone (issue 18). */
uint64_t kc__runtime_manager_delta_hits(struct kc_runtime_manager *m, bool all);
/* Tests: the bytes of scratch GetPods keeps between calls (0 after each: issue 18). */
size_t kc__runtime_manager_scratch_bytes(struct kc_runtime_manager *m);
/* Tests: how many full listings the simulated runtime patched from its last one (issue 18). */
struct kc_sim;
uint64_t kc__sim_listings_patched(struct kc_sim *s);
/* Tests: how many of those were the listing before patched in place (its spare). */
uint64_t kc__sim_listings_recycled(struct kc_sim *s);

/* pod_actions.c: the backoff key of doBackOff (getStableKey), malloc'd; NULL on ENOMEM. */
char *kc__backoff_key(const struct kc_api_pod *pod, const struct kc_api_container *c);

/*
 * images.c: a parsed image reference, as spans of the parsed string. Lengths
 * are 0 for absent parts; offsets point past the '/', ':' or '@'.
 */
struct kc__image_ref {
        size_t domain_len; /* registry[:port], at offset 0 */
        size_t path_off, path_len;
        size_t tag_off, tag_len;
        size_t digest_off, digest_len;
};

/*
 * Parses an image reference (grammar in kc_image_apply_default_tag). 0 and
 * *ret, or -EINVAL; *ret_why (may be NULL) then names the problem (a static
 * string, "invalid reference format..."), NULL on success.
 */
int kc__image_ref_parse(const char *s, struct kc__image_ref *ret, const char **ret_why);

/* What generateContainerConfig and generatePodSandboxConfig read from the manager. */
struct kc__sync_env {
        struct kc_runtime_helper helper;   /* ops NULL: none */
        int64_t memory_capacity;           /* node memory in bytes; 0: unknown */
        const char *seccomp_root;          /* <root-dir>/seccomp; NULL: /var/lib/kubelet/seccomp */
        const char *const *hugepage_sizes; /* the host's huge page sizes ("2MB"...) */
        size_t n_hugepage_sizes;
};
const struct kc__sync_env *kc__runtime_manager_sync_env(const struct kc_runtime_manager *m);

/* The clock the manager was built with (NULL: the real one). */
struct kc_clock *kc__runtime_manager_clock(const struct kc_runtime_manager *m);
