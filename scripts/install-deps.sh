#!/usr/bin/env bash
# Installs every Debian package cubelet's build and tests need.
# Idempotent: runs `apt-get update` (once) only when something is missing.
set -euo pipefail

packages=(
        # toolchain
        gcc make cmake pkg-config diffutils clang-format
        # sanitizer runtimes (ASan, UBSan, TSan) for gcc 12
        libasan8 libubsan1 libtsan2
        # libraries (docs/architecture.md says why each is here)
        libck-dev        # Concurrency Kit: ck_ring behind kc_chan, ck_pr atomics
        libjansson-dev   # JSON: pleg-replay scripts and output
        libcmocka-dev    # unit tests
        libyaml-dev      # static-pod manifests (YAML and JSON)
        libmicrohttpd-dev # read-only HTTP: /healthz, /metrics, /pods, /node
        libnghttp2-dev   # the CRI client's HTTP/2 (gRPC over h2c on a unix socket)
        libprotobuf-c-dev protobuf-c-compiler # CRI messages: runtime/cri/api.proto -> C at build time
        # end-to-end tests (tests/e2e) and bench/bench_daemon.py: Debian's
        # python3, and prometheus_client's parser to validate /metrics
        python3 python3-prometheus-client
)

missing=()
for p in "${packages[@]}"; do
        if ! dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed; then
                missing+=("$p")
        fi
done

if [ ${#missing[@]} -eq 0 ]; then
        exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
        echo "install-deps: missing packages: ${missing[*]} (run as root to install them)" >&2
        exit 1
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
