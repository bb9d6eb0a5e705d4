/* SPDX-License-Identifier: Apache-2.0 */
/* The JSON helpers pod_status.c shares with pod_spec_json.c (internal to kubelet/status). */
#pragma once

#include <jansson.h>
#include <stdint.h>

/* A JSON string for @p s (NULL: ""), invalid UTF-8 as U+FFFD; NULL on ENOMEM. */
json_t *kc__json_str(const char *s);
/* A metav1.Time: RFC 3339 seconds, or null for 0. */
json_t *kc__json_time(int64_t ns);
/* json_object_set_new() as 0/-ENOMEM; takes @p v (NULL: -ENOMEM). */
int kc__json_set_new(json_t *o, const char *key, json_t *v);
/* kc__json_set_new() of kc__json_str(@p s). */
int kc__json_set_str(json_t *o, const char *key, const char *s);
