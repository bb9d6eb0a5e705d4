#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# C against the Go port of upstream's relist over the same recorded CRI
# responses (issue 18). Builds bench/go-relist offline from Debian's
# packages (golang-go, golang-google-protobuf-dev, protobuf-compiler; see
# scripts/install-deps.sh) in GOPATH mode, records with bench_relist_pb
# --dump, runs both; then the same relist over in-memory runtimes: Go over
# messages decoded once per state, C over the simulated runtime. Figures only.
#   bash bench/go-relist/run.sh [build dir, default build] [bench_relist_pb args...]
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-build}" && pwd)
shift || true
work=$(mktemp -d /tmp/kc-go-relist-XXXXXX)
trap 'rm -rf "$work"' EXIT

export GOPATH=$work/gopath:/usr/share/gocode GO111MODULE=off GOCACHE=$work/gocache GOFLAGS=
mkdir -p "$work/gopath/src/cri/runtime" "$work/gopath/src/go-relist"
go build -o "$work/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
protoc --plugin=protoc-gen-go="$work/protoc-gen-go" --go_out="$work/gopath/src" \
        --go_opt=Mapi.proto=cri/runtime --proto_path="$src/runtime/cri" "$src/runtime/cri/api.proto"
cp "$src/bench/go-relist/main.go" "$work/gopath/src/go-relist/"
go build -o "$work/go-relist" go-relist

mkdir -p "$work/states"
"$build/bench/bench_relist_pb" --dump "$work/states" "$@"
"$work/go-relist" -dir "$work/states"
# The in-memory path: Go over decoded messages (upstream's FakeRuntimeService
# style), C over the simulated runtime (bench_relist, the daemon's path).
"$work/go-relist" -dir "$work/states" -mem
"$build/bench/bench_relist" "$@"
