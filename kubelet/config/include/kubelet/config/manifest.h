/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kubelet/config/manifest.h
 * @brief Static pod manifests (pkg/kubelet/config/common.go, file.go).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kc_api_pod;

/** Limits on a manifest, so that hostile input fails fast and small. */
#define KC_MANIFEST_MAX_SIZE (1024 * 1024) /* bytes in the file */
#define KC_MANIFEST_MAX_DEPTH 64           /* nested collections */
#define KC_MANIFEST_MAX_STRING (64 * 1024) /* bytes in one scalar */
#define KC_MANIFEST_MAX_NODES 100000       /* nodes, counting every alias expanded */
#define KC_MANIFEST_MAX_ANCHORS 256        /* distinct YAML anchors (&name) */
/* Bytes of all scalars, counting every alias expanded (an alias-free file stays under it). */
#define KC_MANIFEST_MAX_EXPANDED (4 * KC_MANIFEST_MAX_SIZE)

/** kubelet/types: the config source of file pods and the annotations it sets. */
#define KC_MANIFEST_SOURCE "file"
#define KC_ANNOTATION_CONFIG_HASH "kubernetes.io/config.hash"
#define KC_ANNOTATION_CONFIG_SOURCE "kubernetes.io/config.source"
#define KC_ANNOTATION_CONFIG_SEEN "kubernetes.io/config.seen"

/**
 * @brief Parses one static-pod manifest, a v1 Pod in YAML or JSON, and
 * applies the file source's defaults. Any thread; no I/O, no clock.
 *
 * Every field of v1 Pod, PodSpec and Container is read (docs/pod-spec.md
 * lists them): the ones cubelet honours go into kc_api_pod, validated as
 * upstream's ValidatePodCreate; the ones it does not honour (scheduling,
 * API-server-only, probes...) and names v1 does not have give warnings
 * (kc_manifest_parse_warn()), and a few that would run the pod wrong are
 * refused (ephemeralContainers, os other than linux, HugePages emptyDir).
 * Quantities follow resource.Quantity. YAML
 * 1.1 typing applies as in sigs.k8s.io/yaml: `name: 123` or `name: yes` is
 * not a string. One document per file; merge keys (<<) are refused; aliases
 * are followed but never copied, and count toward KC_MANIFEST_MAX_NODES and
 * KC_MANIFEST_MAX_EXPANDED (so a big string aliased many times is refused:
 * the pod would hold every copy).
 *
 * Defaults (upstream applyDefaults, v1 defaulting): namespace "default"; the
 * name becomes "<name>-<lowercased node_name>"; without metadata.uid the UID
 * is 32 hex digits of FNV-1a-128 over the parsed document (its YAML event
 * stream: comments, layout and quoting style do not count, so a JSON file
 * and its YAML twin agree), then "host:" @p node_name and "file:"
 * @p file_name (upstream: md5 over the decoded pod, the node and the path);
 * annotations kubernetes.io/config.hash = the UID, config.source = "file",
 * config.seen = @p seen_ns in RFC 3339 (UTC, nanoseconds, Go's RFC3339Nano),
 * replacing any the file sets; labels and annotations sorted by key;
 * restartPolicy Always; terminationGracePeriodSeconds 30; imagePullPolicy
 * Always for an image tagged ":latest" or untagged without a digest, else
 * IfNotPresent; source "file", static_pod, phase Pending, creation_ts =
 * @p seen_ns, deletion_grace_s -1; spec.nodeName = @p node_name; v1
 * defaults (SetDefaults_*): dnsPolicy ClusterFirst, enableServiceLinks
 * true, serviceAccount copied to serviceAccountName, a volume without a
 * source is an emptyDir, requests default to limits, terminationMessagePath
 * "/dev/termination-log" and policy File, port protocol TCP (and hostPort =
 * containerPort on the host network), probe timeout 1 / period 10 /
 * success 1 / failure 3, httpGet path "/" and scheme HTTP.
 *
 * Errors name the file and, when the problem is a field, its path, and only
 * the first problem is reported (upstream lists them all):
 * - "<file>: <path>: <what>", e.g. "m.yaml: spec.containers[1].image:
 *   required value", "m.yaml: metadata.name: must be a string",
 *   "m.yaml: spec.restartPolicy: unsupported value "Sometimes"
 *   (supported: "Always", "OnFailure", "Never")";
 * - "<file>: line L, column C: <what>" for YAML syntax errors (libyaml's
 *   problem, and its context in parentheses), invalid UTF-8 and the limits;
 * - "<file>: <what>" for "empty manifest", "manifest too large (...)" and a
 *   document that is not an object.
 *
 * @param data the file's bytes (need not be NUL-terminated); NULL if @p len is 0
 * @param file_name the manifest's path, in messages and in the UID
 * @param node_name non-empty
 * @param seen_ns when the source saw the file (ns since the epoch)
 * @param ret on success a new pod reference; untouched on failure
 * @param ret_err may be NULL; on -EBADMSG a malloc'd message; untouched otherwise
 * @return 0; -EBADMSG for an invalid manifest; -EINVAL for bad arguments;
 *         -ENOMEM
 */
int kc_manifest_parse(const char *data, size_t len, const char *file_name, const char *node_name,
                      int64_t seen_ns, struct kc_api_pod **ret, char **ret_err);

/**
 * A field of the manifest that cubelet reads but does not honour, or that
 * the v1 API does not have: the pod runs without it.
 */
struct kc_manifest_warning {
        char *field;   /**< the field path, e.g. "spec.tolerations" */
        char *why;     /**< e.g. "scheduling only: a static pod is not scheduled" */
        char *message; /**< "<file>: <field>: <why>, ignored" */
};

struct kc_manifest_warnings {
        struct kc_manifest_warning *v;
        size_t n;
};

/** Frees the warnings and empties @p w. NULL is fine. */
void kc_manifest_warnings_done(struct kc_manifest_warnings *w);

/**
 * @brief kc_manifest_parse() that also returns the warnings: every field
 * that is set but ignored, and every field name v1 does not have, in
 * document order.
 *
 * @param ret_warnings may be NULL; on success filled (free with
 *        kc_manifest_warnings_done()); untouched on failure
 */
int kc_manifest_parse_warn(const char *data, size_t len, const char *file_name,
                           const char *node_name, int64_t seen_ns, struct kc_api_pod **ret,
                           char **ret_err, struct kc_manifest_warnings *ret_warnings);
