/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sim's image store (name -> image, id -> image) and the CRI calls on
 * it, ImageStatus and PullImage. A pull succeeds at once unless the
 * repository's name says it does not exist; ids and sizes are stable hashes
 * of the reference, so runs are reproducible.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "core/arena.h"
#include "core/cleanup.h"
#include "core/lock.h"
#include "core/map.h"
#include "runtime/error.h"
#include "runtime/images.h"
#include "runtime/runtime_service.h"
#include "runtime/sim.h"
#include "sim_internal.h"

#define IMAGE_ID_LEN (7 + 64) /* "sha256:" + 64 hex digits */

/* FNV-1a 64 over @p s from a per-round basis, then a splitmix64 finish. Stable. */
static uint64_t image_hash(const char *s, uint64_t round)
{
        uint64_t h = UINT64_C(14695981039346656037) ^ (round * UINT64_C(0x9e3779b97f4a7c15));

        for (; *s; s++) {
                h ^= (unsigned char)*s;
                h *= UINT64_C(1099511628211);
        }
        h ^= h >> 30;
        h *= UINT64_C(0xbf58476d1ce4e5b9);
        h ^= h >> 27;
        h *= UINT64_C(0x94d049bb133111eb);
        h ^= h >> 31;
        return h;
}

/* True when [s, s + n) contains @p needle. */
static bool span_contains(const char *s, size_t n, const char *needle)
{
        size_t k = strlen(needle), i;

        for (i = 0; k <= n && i <= n - k; i++)
                if (memcmp(s + i, needle, k) == 0)
                        return true;
        return false;
}

/* A new, unlinked image record for @p name (a parsed reference with its default tag). */
static struct sim_image *image_alloc(const char *name, const struct kc__image_ref *ref)
{
        size_t name_n = strlen(name) + 1, repo_n, digest_n;
        struct sim_image *img;
        char *p;
        int i;

        /* The repository: the name without tag and digest. */
        repo_n = ref->tag_len      ? ref->tag_off - 1
                 : ref->digest_len ? ref->digest_off - 1
                                   : name_n - 1;
        digest_n = repo_n + 1 + IMAGE_ID_LEN + 1;
        img = calloc(1, sizeof(*img) + name_n + IMAGE_ID_LEN + 1 + digest_n);
        if (!img)
                return NULL;
        p = (char *)(img + 1);
        memcpy(p, name, name_n);
        img->name = p;
        p += name_n;
        memcpy(p, "sha256:", 7);
        for (i = 0; i < 4; i++)
                snprintf(p + 7 + 16 * i, 17, "%016" PRIx64, image_hash(name, (uint64_t)i));
        img->id = p;
        p += IMAGE_ID_LEN + 1;
        memcpy(p, name, repo_n);
        p[repo_n] = '@';
        memcpy(p + repo_n + 1, img->id, IMAGE_ID_LEN + 1);
        img->digest = p;
        img->tagged = ref->tag_len > 0;
        /* 1 MiB to 201 MiB, stable per name. */
        img->size = (UINT64_C(1) << 20) + image_hash(name, 4) % (UINT64_C(200) << 20);
        return img;
}

int kc__sim_image_lookup_locked(struct kc_sim *s, const char *image, struct sim_image **ret)
{
        _cleanup_free_ char *name = NULL;
        struct sim_image *img;
        int r;

        img = kc_map_get(s->image_ids, image);
        if (!img) {
                r = kc_image_apply_default_tag(image, &name);
                if (r < 0)
                        return r;
                img = kc_map_get(s->images, name);
        }
        *ret = img;
        return 0;
}

/* Stores the image @p name (default tag applied) unless present; *ret is the stored one. */
static int image_add_locked(struct kc_sim *s, const char *name, const struct kc__image_ref *ref,
                            struct sim_image **ret)
{
        struct sim_image *img = kc_map_get(s->images, name);
        int r;

        if (!img) {
                img = image_alloc(name, ref);
                if (!img)
                        return -ENOMEM;
                r = kc_map_put(s->images, img->name, img);
                if (r < 0) {
                        free(img);
                        return r;
                }
                r = kc_map_put(s->image_ids, img->id, img);
                if (r < 0) {
                        kc_map_remove(s->images, img->name);
                        free(img);
                        return r;
                }
        }
        *ret = img;
        return 0;
}

/* Parses @p image and applies the default tag: *ret_name (malloc'd) and its parse. */
static int image_normalize(const char *image, char **ret_name, struct kc__image_ref *ret_ref)
{
        _cleanup_free_ char *name = NULL;
        int r;

        r = kc_image_apply_default_tag(image, &name);
        if (r < 0)
                return r;
        r = kc__image_ref_parse(name, ret_ref, NULL);
        if (r < 0)
                return r;
        *ret_name = TAKE_PTR(name);
        return 0;
}

int kc_sim_add_image(struct kc_sim *s, const char *image)
{
        _cleanup_free_ char *name = NULL;
        struct kc__image_ref ref;
        struct sim_image *img;
        int r;

        if (!s || !image)
                return -EINVAL;
        r = image_normalize(image, &name, &ref);
        if (r < 0)
                return r;
        KC_LOCK_GUARD(&s->lock);
        return image_add_locked(s, name, &ref, &img);
}

/* @p image did not parse (@p r < 0): out of memory, or what containerd says of a bad reference. */
static int image_parse_error(struct kc_runtime_error *err, int r, const char *image)
{
        if (r == -ENOMEM)
                return kc__sim_oom(err);
        return kc_runtime_error_set(err, r, KC_RUNTIME_INVALID_ARGUMENT,
                                    "failed to parse image reference \"%s\": invalid "
                                    "reference format",
                                    image);
}

/* ImageStatus's answer for the stored @p img, in a new arena. */
static int image_status_result(const struct sim_image *img, struct kc_image_status_result *ret)
{
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL;
        const char **tags = NULL, **digests;
        const char *id;

        if (kc_arena_new(&a) < 0)
                return -ENOMEM;
        id = kc_arena_strdup(a, img->id);
        digests = kc_arena_alloc(a, sizeof(*digests));
        if (img->tagged)
                tags = kc_arena_alloc(a, sizeof(*tags));
        if (!id || !digests || (img->tagged && !tags))
                return -ENOMEM;
        digests[0] = kc_arena_strdup(a, img->digest);
        if (tags)
                tags[0] = kc_arena_strdup(a, img->name);
        if (!digests[0] || (tags && !tags[0]))
                return -ENOMEM;
        *ret = (struct kc_image_status_result){
                .found = true,
                .image = {
                        .id = id,
                        .repo_tags = tags,
                        .n_repo_tags = tags ? 1 : 0,
                        .repo_digests = digests,
                        .n_repo_digests = 1,
                        .size = img->size,
                },
                .arena = TAKE_PTR(a),
        };
        return 0;
}

int kc__sim_image_status(void *self, const char *image, struct kc_image_status_result *ret,
                         struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        KC_LOCK_GUARD(&s->lock);
        struct sim_image *img = NULL;
        int r;

        r = kc__sim_enter_locked(s, SIM_OP_IMAGE_STATUS, image, err);
        if (r < 0)
                return r;
        if (!image || !ret)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "image is required");
        r = kc__sim_image_lookup_locked(s, image, &img);
        if (r < 0)
                return image_parse_error(err, r, image);
        if (!img) {
                /* CRI: a nil image, not an error. */
                *ret = (struct kc_image_status_result){ .found = false };
                return 0;
        }
        if (image_status_result(img, ret) < 0)
                return kc__sim_oom(err);
        return 0;
}

int kc__sim_pull_image(void *self, const char *image,
                       const struct kc_pod_sandbox_config *sandbox_config, char **ret_image_ref,
                       struct kc_runtime_error *err)
{
        struct kc_sim *s = self;
        KC_LOCK_GUARD(&s->lock);
        _cleanup_free_ char *name = NULL, *ref_copy = NULL;
        struct kc__image_ref ref;
        struct sim_image *img;
        int r;

        (void)sandbox_config;
        r = kc__sim_enter_locked(s, SIM_OP_PULL_IMAGE, image, err);
        if (r < 0)
                return r;
        if (!image || !ret_image_ref)
                return kc_runtime_error_set(err, -EINVAL, KC_RUNTIME_INVALID_ARGUMENT,
                                            "image is required");
        r = image_normalize(image, &name, &ref);
        if (r < 0)
                return image_parse_error(err, r, image);
        /* The registry has no such repository: what containerd reports. */
        if (span_contains(name + ref.path_off, ref.path_len, "doesnotexist") ||
            span_contains(name + ref.path_off, ref.path_len, "invalid"))
                return kc_runtime_error_set(err, -ENOENT, KC_RUNTIME_NOT_FOUND,
                                            "failed to pull and unpack image \"%s\": failed to "
                                            "resolve reference \"%s\": %s: not found",
                                            name, name, name);
        r = image_add_locked(s, name, &ref, &img);
        if (r < 0)
                return kc__sim_oom(err);
        ref_copy = strdup(img->id);
        if (!ref_copy)
                return kc__sim_oom(err);
        *ret_image_ref = TAKE_PTR(ref_copy);
        return 0;
}
