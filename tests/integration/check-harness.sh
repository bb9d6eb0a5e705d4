#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# check-harness.sh [ENV_FILE]: the containerd that containerd-setup.sh recorded
# (ENV_FILE defaults to $KC_CONTAINERD_ENV, which CTest sets per fixture)
# is alive and usable, checked without cubelet: its pid runs containerd with
# our config, `ctr version` answers on the socket, namespace k8s.io holds the
# busybox image, and the CRI plugin answers Version, ImageStatus (found and
# not found) and GetContainerEvents (UNIMPLEMENTED in 1.6) with raw gRPC;
# 1.7: the CRI reports NetworkReady, and the run's CNI bridge holds the
# harness's address.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=containerd-lib.sh
. "$here/containerd-lib.sh"

env_file=${1:-${KC_CONTAINERD_ENV:?usage: check-harness.sh ENV_FILE}}
[ -f "$env_file" ] || die "no $env_file: integration.setup did not run or failed"
sock=$(env_get "$env_file" KC_CONTAINERD_SOCK)
pid=$(env_get "$env_file" KC_CONTAINERD_PID)
conf=$(env_get "$env_file" KC_CONTAINERD_CONFIG)
image=$(env_get "$env_file" KC_CONTAINERD_IMAGE)
[ -S "$sock" ] || die "$sock is not a socket"
is_our_containerd "$pid" "$conf" || die "pid $pid is not our containerd"
log "containerd pid $pid, socket $sock"

ctr --address "$sock" -n k8s.io version >&2 || die "ctr version failed"
# (Listed first, then searched: grep -q closing the pipe early would fail
# ctr with SIGPIPE under pipefail.)
images=$(ctr --address "$sock" -n k8s.io images ls -q) || die "ctr images ls failed"
grep -qxF "$image" <<<"$images" || die "$image is not in namespace k8s.io: $images"
log "ctr: $image present"

cri_version_ok "$sock" || die "CRI Version failed"
cri_image_ok "$sock" "$image" || die "CRI ImageStatus($image) did not find it"
cri_image_ok "$sock" localhost/cubelet/absent:1 && die "CRI ImageStatus found an absent image"
if [ "$(env_get "$env_file" KC_CONTAINERD_VERSION)" = 1.7 ]; then
        br=$(env_get "$env_file" KC_CONTAINERD_BRIDGE)
        cidr=$(env_get "$env_file" KC_CONTAINERD_POD_CIDR)
        ip -4 -o addr show dev "$br" | grep -q "inet ${cidr%.*}\." || die "bridge $br has no address in $cidr"
        # RuntimeService/Status: NetworkReady true (condition "NetworkReady", status 1).
        out=$(cri_call "$sock" runtime.v1.RuntimeService/Status "")
        [ "${out%% *}" = 0 ] || die "CRI Status failed: ${out%% *}"
        [[ "${out#* }" == *"$(hex_of NetworkReady)1001"* ]] || die "CRI Status: NetworkReady is not true"
        log "CRI: Version, ImageStatus (found, absent), NetworkReady; bridge $br in $cidr: ok"
        exit 0
fi
out=$(cri_call "$sock" runtime.v1.RuntimeService/GetContainerEvents "")
[ "${out%% *}" = 12 ] || die "GetContainerEvents: grpc-status ${out%% *}, want 12 (UNIMPLEMENTED)"
log "CRI: Version, ImageStatus (found, absent), GetContainerEvents UNIMPLEMENTED: ok"
