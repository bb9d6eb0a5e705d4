/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file runtime/images.h
 * @brief Images: EnsureImageExists and the image pull back-off (pkg/kubelet/images).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cleanup.h"
#include "runtime/runtime_service.h"

struct kc_api_container;
struct kc_api_pod;
struct kc_backoff;

/** The kubelet's image pull backoff: 10 s initial (backOffPeriod), 300 s cap (MaxImageBackOff). */
#define KC_IMAGE_BACKOFF_INITIAL_NS (10 * KC_NSEC_PER_SEC)
#define KC_IMAGE_BACKOFF_MAX_NS (300 * KC_NSEC_PER_SEC)

/**
 * @brief applyDefaultImageTag: parses @p image as a container image
 * reference ([registry[:port]/]path[:tag][@digest]: lowercase path
 * components, a registry recognised by a '.' or ':' or as "localhost" or by
 * an uppercase letter, tags of word characters, digests "algo:hex") and
 * appends ":latest" when it has neither tag nor digest.
 * @return 0 and *ret (malloc'd); -EINVAL for NULL, empty or malformed
 * references (whitespace, an uppercase repository, a bare 64-hex id, ...);
 * -ENOMEM. *ret untouched on failure.
 */
int kc_image_apply_default_tag(const char *image, char **ret);

/**
 * @brief EnsureImageExists for container @p c of @p pod: InvalidImageName
 * (-EINVAL) unless the image parses (kc_image_apply_default_tag); then
 * ImageStatus (failure: ImageInspectError); with policy Never a missing
 * image is ErrImageNeverPull (-ENOENT), with IfNotPresent a present one is
 * used as is, with Always (and IfNotPresent when missing) the image is
 * pulled. Before a pull, key "<pod uid>_<c->image>" in @p image_backoff
 * (NULL: never back off) gives ImagePullBackOff (-EAGAIN) while the last
 * failed pull is less than one backoff window old; a failed pull is
 * ErrImagePull (the runtime's -errno and message) and counts Next() for the
 * key; a successful one runs the backoff's GC.
 *
 * Messages (upstream's): ErrImageNeverPull 'Container image "<img>" is not
 * present with pull policy of Never', ImagePullBackOff 'Back-off pulling
 * image "<img>"', ErrImagePull the runtime's message, ImageInspectError
 * 'Failed to inspect image "<img>": <runtime message>', InvalidImageName
 * 'Failed to apply default image tag "<img>": couldn't parse image reference
 * "<img>": invalid reference format'.
 *
 * Exception to the out-parameter rule: on failure *ret_reason (a static
 * KC_*_REASON string) and *ret_msg (malloc'd, may be NULL on ENOMEM) are
 * set, *ret_image_ref is untouched; on success *ret_image_ref (malloc'd)
 * is the image ref (id) and *ret_reason, *ret_msg are NULL. NULL arguments
 * are -EINVAL with no reason (*ret_reason NULL). @p ret_retry_after_ns
 * (may be NULL) is always set: on ImagePullBackOff the time left in the
 * window (last failed pull + backoff - now, >= 0), else -1.
 * Same thread contract as the runtime service; @p image_backoff is
 * thread-safe.
 * @return 0, -EAGAIN, -EINVAL, -ENOENT, -ENOMEM or a runtime call's -errno.
 */
int kc_ensure_image_exists(struct kc_runtime_service svc, struct kc_backoff *image_backoff,
                           const struct kc_api_pod *pod, const struct kc_api_container *c,
                           const struct kc_pod_sandbox_config *sandbox_config, char **ret_image_ref,
                           const char **ret_reason, char **ret_msg, int64_t *ret_retry_after_ns);
