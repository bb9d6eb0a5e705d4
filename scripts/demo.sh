#!/usr/bin/env bash
# The README's first command: install what is needed, build cubelet, and run
# its main job on the embedded simulated runtime. Today that job is
# `cubelet pleg-replay` on a shipped script showing a container start, die
# and vanish.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target cubelet -j"$(nproc)" >/dev/null
exec ./build/cubelet pleg-replay examples/container-lifecycle.jsonl
