/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The protobuf-c twins of the four CRI decoders a relist runs most
 * (PodSandboxStatus, ListPodSandbox, ListContainers, ContainerStatus), whose
 * production versions are the hand-written ones of runtime/cri/wire.c. Each
 * decodes the same bytes with protobuf-c and the converters of
 * runtime/cri/convert.c, with kubelet's checks, into the same result and
 * with the same errors as kc__cri_unpack_*(): the reference that
 * tests/unit/runtime/test_cri_wire.c and tests/fuzz/fuzz_cri_decode.c hold
 * the hand-written ones to (cri_wire_diff.h). Test code only: the daemon
 * never decodes twice. Link kc_runtime, kc_runtime_internal and kc_cri_proto.
 *
 * Each returns 0 or -errno with err filled as runtime/cri/internal.h says;
 * the result is untouched on failure.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct kc_container_list;
struct kc_container_status_result;
struct kc_pod_sandbox_list;
struct kc_pod_sandbox_status_result;
struct kc_runtime_error;

int kc_test_cri_unpack_pod_sandbox_status_pbc(const uint8_t *buf, size_t len,
                                              struct kc_pod_sandbox_status_result *ret,
                                              struct kc_runtime_error *err);
int kc_test_cri_unpack_list_pod_sandbox_pbc(const uint8_t *buf, size_t len,
                                            struct kc_pod_sandbox_list *ret,
                                            struct kc_runtime_error *err);
int kc_test_cri_unpack_list_containers_pbc(const uint8_t *buf, size_t len,
                                           struct kc_container_list *ret,
                                           struct kc_runtime_error *err);
int kc_test_cri_unpack_container_status_pbc(const uint8_t *buf, size_t len,
                                            struct kc_container_status_result *ret,
                                            struct kc_runtime_error *err);
