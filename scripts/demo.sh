#!/usr/bin/env bash
# The README's first command: install what is needed, build cubelet, and run
# the daemon in the foreground on the embedded simulated runtime with the
# shipped static pods (examples/manifests: a web server, a job, a crasher),
# logging at -v=2. Stop it with Ctrl-C. Extra arguments go to cubelet, e.g.
#   bash scripts/demo.sh --crash-loop-back-off-initial-container-restart-period=2s
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target cubelet -j"$(nproc)" >/dev/null
echo "demo: cubelet serves http://127.0.0.1:10255/pods, /node, /metrics and /healthz; Ctrl-C stops it" >&2
exec ./build/cubelet -v=2 --pod-manifest-path=examples/manifests "$@"
