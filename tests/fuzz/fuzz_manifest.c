/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_manifest: kc_manifest_parse() (core/manifest.c), the static-pod
 * manifest parser, on YAML and JSON. Byte 0 picks the file name (and so the
 * name in messages and the UID): its low two bits choose the suffix .yaml,
 * .yml, .json or none; the rest of the input is the file's bytes. A parsed
 * pod is walked field by field and must satisfy what the parser promises
 * (a name, a namespace, a 32-hex-digit UID when the file sets none, at least
 * one container with a name and an image, known enums); an error must be
 * -EBADMSG with a message naming the file.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubelet/config/manifest.h"
#include "runtime/api_pod.h"
#include "runtime/runtime_service.h"

static volatile size_t sink;

static void touch(const char *s)
{
        if (!s)
                abort();
        sink += strlen(s);
}

static void walk_containers(const struct kc_api_container *c, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                touch(c[i].name);
                touch(c[i].image);
                if (!c[i].name[0] || !c[i].image[0])
                        abort();
                for (size_t j = 0; j < c[i].n_command; j++)
                        touch(c[i].command[j]);
                for (size_t j = 0; j < c[i].n_args; j++)
                        touch(c[i].args[j]);
                if (!kc_pull_policy_to_string(c[i].image_pull_policy))
                        abort();
        }
}

static void walk_labels(const struct kc_label *l, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                touch(l[i].key);
                touch(l[i].value);
                if (i > 0 && strcmp(l[i - 1].key, l[i].key) >= 0)
                        abort(); /* sorted by key, no duplicates */
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const char *const names[] = { "/etc/kubernetes/manifests/pod.yaml",
                                             "/etc/kubernetes/manifests/pod.yml",
                                             "/etc/kubernetes/manifests/pod.json",
                                             "/etc/kubernetes/manifests/pod" };
        struct kc_api_pod *pod = NULL;
        struct kc_manifest_warnings warnings = { 0 };
        char *err = NULL;
        const char *file;
        int r;

        if (size < 1)
                return 0;
        file = names[data[0] & 3];
        r = kc_manifest_parse_warn(size > 1 ? (const char *)data + 1 : NULL, size - 1, file,
                                   "Node-1", INT64_C(1700000000123456789), &pod, &err, &warnings);
        if (r == 0) {
                for (size_t i = 0; i < warnings.n; i++)
                        if (strncmp(warnings.v[i].message, file, strlen(file)) != 0 ||
                            !strstr(warnings.v[i].message, ", ignored"))
                                abort();
                kc_manifest_warnings_done(&warnings);
                touch(pod->uid);
                touch(pod->name);
                touch(pod->namespace);
                if (!pod->uid[0] || !pod->name[0] || !pod->namespace[0] || !pod->static_pod ||
                    pod->n_containers == 0 || !kc_restart_policy_to_string(pod->restart_policy))
                        abort();
                walk_containers(pod->containers, pod->n_containers);
                walk_containers(pod->init_containers, pod->n_init_containers);
                walk_labels(pod->labels, pod->n_labels);
                walk_labels(pod->annotations, pod->n_annotations);
                kc_api_pod_unref(pod);
        } else if (r == -EBADMSG) {
                touch(err);
                if (strncmp(err, file, strlen(file)) != 0 || err[strlen(file)] != ':') {
                        fprintf(stderr, "error without the file name: %s\n", err);
                        abort();
                }
        } else if (r != -ENOMEM) {
                fprintf(stderr, "unexpected return %d\n", r);
                abort();
        }
        free(err);
        return 0;
}
