#!/usr/bin/env bash
# Installs every Debian package cubelet's build and tests need.
# Idempotent: runs `apt-get update` (once) only when something is missing.
set -euo pipefail

packages=(
        # toolchain
        gcc make cmake pkg-config diffutils clang-format
        # sanitizer runtimes (ASan, UBSan, TSan) for gcc 12
        libasan8 libubsan1 libtsan2
        # the fuzz build (tests/fuzz, scripts/fuzz.sh): clang 14 and its libFuzzer runtime
        clang libclang-rt-14-dev
        # memcheck over the end-to-end suite (label valgrind)
        valgrind
        # libraries (docs/architecture.md says why each is here)
        libck-dev        # Concurrency Kit: ck_ring behind kc_chan, ck_pr atomics
        libjansson-dev   # JSON: pleg-replay scripts and output
        libcmocka-dev    # unit tests
        libyaml-dev      # static-pod manifests (YAML and JSON)
        libmicrohttpd-dev # read-only HTTP: /healthz, /metrics, /pods, /node
        libnghttp2-dev   # the CRI client's HTTP/2 (gRPC over h2c on a unix socket)
        libprotobuf-c-dev protobuf-c-compiler # CRI messages: runtime/cri/api.proto -> C at build time
        libssl-dev       # HTTPS for httpGet probes (no certificate verification, as upstream)
        # bench/go-relist: the Go port of upstream's relist that bench_relist_pb
        # is compared with (issue 18), built offline in GOPATH mode
        golang-go golang-google-protobuf-dev protobuf-compiler
        # end-to-end tests (tests/e2e) and bench/bench_daemon.py: Debian's
        # python3, and prometheus_client's parser to validate /metrics
        python3 python3-prometheus-client
        python3-kubernetes # tests/e2e/test_node.py: /node must deserialize as a V1Node
        python3-hpack    # tests/integration/h2proxy.py: HPACK of the call-holding gRPC proxy
        # the test CRI server of the EventedPLEG integration tests
        # (tests/integration/cri-server: @grpc/grpc-js from npm, `npm ci` from
        # its lockfile at test set-up); bookworm has nodejs 18 and npm 9
        nodejs npm
)

installed() {
        dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null | grep -qx installed
}

# A package counts as present when it is installed or when an installed
# package provides it: NodeSource's nodejs bundles npm (Provides: npm and
# Conflicts: npm), so Debian's npm must not be asked for next to it.
present() {
        installed "$1" && return 0
        [ "$1" = npm ] && installed nodejs &&
                dpkg-query -W -f='${Provides}' nodejs 2>/dev/null | grep -qE '(^|[ ,])npm([ ,(]|$)'
}

missing=()
for p in "${packages[@]}"; do
        if ! present "$p"; then
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
