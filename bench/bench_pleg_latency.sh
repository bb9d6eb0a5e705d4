#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs bench_pleg_latency against the Node.js test CRI server: installs the
# server as the CTest fixture does (tests/integration/cri-server/setup.sh:
# `npm ci` from the committed lockfile, skipped when the build dir's copy is
# up to date) into <build>/bench/cri-server, then runs the benchmark.
# Needs node >= 18 and npm (scripts/install-deps.sh); no root, no containerd.
# Usage (after building):
#   bash bench/bench_pleg_latency.sh [build dir, default build] [bench_pleg_latency args...]
# e.g. bash bench/bench_pleg_latency.sh build --quick
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
shift || true
build=$(realpath -e "$build")
[ -x "$build/bench/bench_pleg_latency" ] ||
        { echo "no $build/bench/bench_pleg_latency: build first" >&2; exit 1; }

dest=$build/bench/cri-server
env_file=$dest/cri-server.env
bash tests/integration/cri-server/setup.sh tests/integration/cri-server "$dest" \
        runtime/cri/api.proto "$env_file"
"$build/bench/bench_pleg_latency" --env "$env_file" "$@"
