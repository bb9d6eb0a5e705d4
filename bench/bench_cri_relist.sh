#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs bench_cri_relist against a private containerd: starts one with the
# integration harness (tests/integration/containerd-setup.sh), measures, and
# always tears it down. Usage (as root, after building):
#   bash bench/bench_cri_relist.sh [build dir, default build] [bench_cri_relist args...]
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
shift || true
env_dir=$(mktemp -d /tmp/kc-bench-XXXXXX)
env_file=$env_dir/containerd.env
teardown() {
        bash tests/integration/containerd-teardown.sh "$env_file" >/dev/null || true
        rm -rf "$env_dir"
}
trap teardown EXIT

bash tests/integration/containerd-setup.sh "$env_file" >/dev/null
# shellcheck disable=SC1090
. "$env_file"
"$build/bench/bench_cri_relist" --socket "$KC_CONTAINERD_SOCK" --image "$KC_CONTAINERD_IMAGE" "$@"
