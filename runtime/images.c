/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Images: image reference parsing (the default tag) and EnsureImageExists,
 * the pull-policy half of startContainer (upstream pkg/kubelet/images),
 * over any runtime service that implements the CRI ImageService calls.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backoff.h"
#include "core/cleanup.h"
#include "core/clock.h"
#include "core/format.h"
#include "internal.h"
#include "runtime/api_pod.h"
#include "runtime/error.h"
#include "runtime/images.h"
#include "runtime/pod_actions.h"
#include "runtime/runtime_service.h"

#define DEFAULT_TAG "latest"
#define NAME_MAX_LEN 255 /* a repository name, registry included */
#define TAG_MAX_LEN 128

#define WHY_FORMAT "invalid reference format"
#define WHY_LOWERCASE "invalid reference format: repository name must be lowercase"

/* ------------------------------------------------------------------------ */
/* Reference grammar                                                          */

static bool is_lower_alnum(char ch)
{
        return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

static bool is_alpha(char ch)
{
        return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

static bool is_digit(char ch)
{
        return ch >= '0' && ch <= '9';
}

static bool is_alnum(char ch)
{
        return is_alpha(ch) || is_digit(ch);
}

static bool is_word(char ch)
{
        return is_alnum(ch) || ch == '_';
}

static bool is_hex(char ch)
{
        return is_digit(ch) || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

static bool is_upper(char ch)
{
        return ch >= 'A' && ch <= 'Z';
}

/*
 * One path component: runs of [a-z0-9] joined by one separator, which is
 * '.', '_', "__" or any number of '-'. With @p fold, uppercase letters count
 * as lowercase (to tell "must be lowercase" from a malformed component).
 */
static bool path_component_valid(const char *s, size_t n, bool fold)
{
        size_t i = 0, run;

        for (;;) {
                run = 0;
                while (i < n && (is_lower_alnum(s[i]) || (fold && is_upper(s[i])))) {
                        i++;
                        run++;
                }
                if (run == 0)
                        return false;
                if (i == n)
                        return true;
                if (s[i] == '.') {
                        i++;
                } else if (s[i] == '_') {
                        i++;
                        if (i < n && s[i] == '_')
                                i++;
                } else if (s[i] == '-') {
                        while (i < n && s[i] == '-')
                                i++;
                } else {
                        return false;
                }
        }
}

/* host[:port]: host is dot-separated labels of [A-Za-z0-9-], not starting or ending with '-'. */
static bool domain_valid(const char *s, size_t n)
{
        const char *colon = memchr(s, ':', n);
        size_t host_n = colon ? (size_t)(colon - s) : n, i, start = 0;

        if (colon) {
                if ((size_t)(colon - s) + 1 == n)
                        return false;
                for (i = (size_t)(colon - s) + 1; i < n; i++)
                        if (!is_digit(s[i]))
                                return false;
        }
        if (host_n == 0)
                return false;
        for (i = 0; i <= host_n; i++) {
                if (i < host_n && s[i] != '.') {
                        if (!is_alnum(s[i]) && s[i] != '-')
                                return false;
                        continue;
                }
                /* label [start, i) */
                if (i == start || s[start] == '-' || s[i - 1] == '-')
                        return false;
                start = i + 1;
        }
        return true;
}

/* algorithm ":" hex{32,}; algorithm = [A-Za-z][A-Za-z0-9]* joined by one of "-_+.". */
static bool digest_valid(const char *s, size_t n)
{
        const char *colon = memchr(s, ':', n);
        size_t an, i;

        if (!colon)
                return false;
        an = (size_t)(colon - s);
        for (i = 0; i < an;) {
                if (!is_alpha(s[i]))
                        return false;
                while (i < an && is_alnum(s[i]))
                        i++;
                if (i < an) {
                        if (!strchr("-_+.", s[i]))
                                return false;
                        i++;
                        if (i == an)
                                return false;
                }
        }
        if (an == 0 || n - an - 1 < 32)
                return false;
        for (i = an + 1; i < n; i++)
                if (!is_hex(s[i]))
                        return false;
        return true;
}

static bool tag_valid(const char *s, size_t n)
{
        size_t i;

        if (n == 0 || n > TAG_MAX_LEN || !is_word(s[0]))
                return false;
        for (i = 1; i < n; i++)
                if (!is_word(s[i]) && s[i] != '.' && s[i] != '-')
                        return false;
        return true;
}

/* The first path component names a registry (splitDockerDomain's test). */
static bool looks_like_domain(const char *s, size_t n)
{
        size_t i;

        if (memchr(s, '.', n) || memchr(s, ':', n) || (n == 9 && memcmp(s, "localhost", 9) == 0))
                return true;
        for (i = 0; i < n; i++)
                if (is_upper(s[i]))
                        return true;
        return false;
}

int kc__image_ref_parse(const char *s, struct kc__image_ref *ret, const char **ret_why)
{
        struct kc__image_ref ref = { 0 };
        const char *at, *slash, *colon, *p;
        size_t n, name_end, name_len, i, start;
        bool upper = false;

        if (ret_why)
                *ret_why = WHY_FORMAT;
        if (!s || !ret)
                return -EINVAL;
        n = strlen(s);
        if (n == 0)
                return -EINVAL;
        /* A bare image id is not a repository name. */
        if (n == 64) {
                for (i = 0; i < n && is_hex(s[i]) && !is_upper(s[i]); i++)
                        ;
                if (i == n)
                        return -EINVAL;
        }

        at = strchr(s, '@');
        name_end = at ? (size_t)(at - s) : n;
        if (at) {
                ref.digest_off = name_end + 1;
                ref.digest_len = n - name_end - 1;
                if (!digest_valid(s + ref.digest_off, ref.digest_len))
                        return -EINVAL;
        }

        /* A tag is a ':' after the last '/' of the name. */
        name_len = name_end;
        slash = NULL;
        for (p = s; p < s + name_end; p++)
                if (*p == '/')
                        slash = p;
        colon = memchr(slash ? slash + 1 : s, ':',
                       (size_t)(s + name_end - (slash ? slash + 1 : s)));
        if (colon) {
                ref.tag_off = (size_t)(colon - s) + 1;
                ref.tag_len = name_end - ref.tag_off;
                if (!tag_valid(s + ref.tag_off, ref.tag_len))
                        return -EINVAL;
                name_len = (size_t)(colon - s);
        }
        if (name_len == 0 || name_len > NAME_MAX_LEN)
                return -EINVAL;

        slash = memchr(s, '/', name_len);
        if (slash && looks_like_domain(s, (size_t)(slash - s))) {
                ref.domain_len = (size_t)(slash - s);
                if (!domain_valid(s, ref.domain_len))
                        return -EINVAL;
                ref.path_off = ref.domain_len + 1;
        }
        ref.path_len = name_len - ref.path_off;
        if (ref.path_len == 0)
                return -EINVAL;

        for (i = ref.path_off, start = i; i <= name_len; i++) {
                if (i < name_len && s[i] != '/')
                        continue;
                if (!path_component_valid(s + start, i - start, true))
                        return -EINVAL;
                if (!path_component_valid(s + start, i - start, false))
                        upper = true;
                start = i + 1;
        }
        if (upper) {
                if (ret_why)
                        *ret_why = WHY_LOWERCASE;
                return -EINVAL;
        }
        if (ret_why)
                *ret_why = NULL;
        *ret = ref;
        return 0;
}

int kc_image_apply_default_tag(const char *image, char **ret)
{
        struct kc__image_ref ref;
        char *out;
        int r;

        if (!ret)
                return -EINVAL;
        r = kc__image_ref_parse(image, &ref, NULL);
        if (r < 0)
                return r;
        if (ref.tag_len == 0 && ref.digest_len == 0)
                out = kc_strdup_printf("%s:%s", image, DEFAULT_TAG);
        else
                out = strdup(image);
        if (!out)
                return -ENOMEM;
        *ret = out;
        return 0;
}

/* ------------------------------------------------------------------------ */
/* EnsureImageExists                                                          */

static int image_fail(int r, const char *reason, const char **ret_reason, char **ret_msg,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int image_fail(int r, const char *reason, const char **ret_reason, char **ret_msg,
                      const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        *ret_msg = kc_strdup_vprintf(fmt, ap);
        va_end(ap);
        *ret_reason = reason;
        return r;
}

/* shouldPullImage: Never never pulls; Always always; IfNotPresent when missing. */
static bool should_pull(enum kc_pull_policy policy, bool present)
{
        return policy == KC_PULL_ALWAYS || (policy == KC_PULL_IF_NOT_PRESENT && !present);
}

int kc_ensure_image_exists(struct kc_runtime_service svc, struct kc_backoff *image_backoff,
                           const struct kc_api_pod *pod, const struct kc_api_container *c,
                           const struct kc_pod_sandbox_config *sandbox_config, char **ret_image_ref,
                           const char **ret_reason, char **ret_msg, int64_t *ret_retry_after_ns)
{
        _cleanup_free_ char *image = NULL, *ref = NULL, *key = NULL;
        struct kc_image_status_result st = { 0 };
        struct kc_runtime_error e = { 0 };
        const char *name, *why = NULL;
        struct kc__image_ref parsed;
        bool present;
        int64_t now, d, last;
        int r;

        if (ret_retry_after_ns)
                *ret_retry_after_ns = -1;
        if (!ret_image_ref || !ret_reason || !ret_msg)
                return -EINVAL;
        *ret_reason = NULL;
        *ret_msg = NULL;
        if (!pod || !c)
                return -EINVAL;
        name = c->image ? c->image : "";

        /* applyDefaultImageTag */
        r = kc__image_ref_parse(c->image, &parsed, &why);
        if (r < 0)
                return image_fail(-EINVAL, KC_INVALID_IMAGE_NAME_REASON, ret_reason, ret_msg,
                                  "Failed to apply default image tag \"%s\": couldn't parse image "
                                  "reference \"%s\": %s",
                                  name, name, why ? why : "invalid reference format");
        image = parsed.tag_len > 0 || parsed.digest_len > 0
                        ? strdup(c->image)
                        : kc_strdup_printf("%s:%s", c->image, DEFAULT_TAG);
        if (!image)
                return image_fail(-ENOMEM, KC_ERR_IMAGE_INSPECT_REASON, ret_reason, ret_msg,
                                  "Failed to inspect image \"%s\": %s", name, strerror(ENOMEM));
        if (!svc.ops || !svc.ops->image_status || !svc.ops->pull_image)
                return image_fail(-EOPNOTSUPP, KC_ERR_IMAGE_INSPECT_REASON, ret_reason, ret_msg,
                                  "Failed to inspect image \"%s\": the runtime has no image "
                                  "service",
                                  name);

        /* GetImageRef: ImageStatus; a missing image has no ref. */
        r = svc.ops->image_status(svc.self, image, &st, &e);
        if (r < 0)
                return image_fail(r, KC_ERR_IMAGE_INSPECT_REASON, ret_reason, ret_msg,
                                  "Failed to inspect image \"%s\": %s", name, e.message);
        present = st.found && st.image.id && st.image.id[0];
        if (present)
                ref = strdup(st.image.id);
        kc_runtime_result_done(&st);
        if (present && !ref)
                return image_fail(-ENOMEM, KC_ERR_IMAGE_INSPECT_REASON, ret_reason, ret_msg,
                                  "Failed to inspect image \"%s\": %s", name, strerror(ENOMEM));

        if (!should_pull(c->image_pull_policy, present)) {
                if (present) {
                        *ret_image_ref = TAKE_PTR(ref);
                        return 0;
                }
                return image_fail(-ENOENT, KC_ERR_IMAGE_NEVER_PULL_REASON, ret_reason, ret_msg,
                                  "Container image \"%s\" is not present with pull policy of "
                                  "Never",
                                  name);
        }
        free(ref);
        ref = NULL;

        /* The pull backoff, keyed by pod UID and the image as the spec names it. */
        if (image_backoff) {
                key = kc_strdup_printf("%s_%s", pod->uid ? pod->uid : "", name);
                if (!key)
                        return image_fail(-ENOMEM, KC_ERR_IMAGE_PULL_REASON, ret_reason, ret_msg,
                                          "%s", strerror(ENOMEM));
                now = kc_clock_now(kc_backoff_clock(image_backoff));
                if (kc_backoff_is_in_backoff_since_update(image_backoff, key, now)) {
                        /* The window runs from the last failed pull. */
                        if (ret_retry_after_ns && kc_backoff_get(image_backoff, key, &d) == 0 &&
                            kc_backoff_last_update(image_backoff, key, &last) == 0)
                                *ret_retry_after_ns = last + d > now ? last + d - now : 0;
                        return image_fail(-EAGAIN, KC_IMAGE_PULL_BACK_OFF_REASON, ret_reason,
                                          ret_msg, "Back-off pulling image \"%s\"", name);
                }
        }

        e = (struct kc_runtime_error){ 0 };
        r = svc.ops->pull_image(svc.self, image, sandbox_config, &ref, &e);
        if (r < 0) {
                if (image_backoff)
                        /* ENOMEM here only loses one backoff step: the next pull comes sooner. */
                        (void)kc_backoff_next(image_backoff, key,
                                              kc_clock_now(kc_backoff_clock(image_backoff)));
                return image_fail(r, KC_ERR_IMAGE_PULL_REASON, ret_reason, ret_msg, "%s",
                                  e.message);
        }
        if (!ref)
                return image_fail(-EIO, KC_ERR_IMAGE_PULL_REASON, ret_reason, ret_msg,
                                  "the runtime returned no image reference for \"%s\"", image);
        if (image_backoff)
                (void)kc_backoff_gc(image_backoff);
        *ret_image_ref = TAKE_PTR(ref);
        return 0;
}
