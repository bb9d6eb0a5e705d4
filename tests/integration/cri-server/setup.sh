#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# setup.sh SRC_DIR DEST_DIR PROTO ENV_FILE
#
# The set-up of the CTest fixture "criserver" (tests/integration): makes the
# test CRI server runnable from DEST_DIR, a directory of the build tree, and
# never writes into SRC_DIR (the source tree):
#   1. checks that node (>= 18) and npm are on PATH (scripts/install-deps.sh
#      installs Debian's nodejs and npm);
#   2. copies package.json, package-lock.json and server.js to DEST_DIR;
#   3. runs `npm ci` there, from the committed lockfile, unless DEST_DIR's
#      node_modules was installed from the same package.json, lockfile, node
#      and npm (a stamp file records their checksums and versions); a failed
#      `npm ci` fails the set-up, loudly;
#   4. starts the server once on a temporary socket and waits for its ready
#      line (it loads PROTO, cubelet's runtime/cri/api.proto);
#   5. writes ENV_FILE for the tests:
#        KC_CRI_SERVER_NODE=<node>
#        KC_CRI_SERVER_DIR=<DEST_DIR: server.js and node_modules>
#        KC_CRI_SERVER_PROTO=<PROTO>
# Any failure exits 1 with the reason: nothing here skips.
set -euo pipefail

die() {
        echo "cri-server setup: FAILED: $*" >&2
        exit 1
}
log() {
        echo "cri-server setup: $*" >&2
}

[ $# -eq 4 ] || die "usage: setup.sh SRC_DIR DEST_DIR PROTO ENV_FILE"
src=$(realpath -e "$1") || die "no source directory $1"
dest=$(realpath -m "$2")
proto=$(realpath -e "$3") || die "no proto file $3"
env_file=$(realpath -m "$4")
rm -f "$env_file"

case "$dest/" in
"$src"/*) die "DEST_DIR $dest is inside the source directory $src" ;;
esac

# 1. node and npm
node=$(command -v node) || die "node is not on PATH: run scripts/install-deps.sh (Debian's nodejs and npm)"
command -v npm >/dev/null || die "npm is not on PATH: run scripts/install-deps.sh (Debian's nodejs and npm)"
node_version=$("$node" --version) || die "$node --version failed"
npm_version=$(npm --version 2>/dev/null) || die "npm --version failed"
node_major=${node_version#v}
node_major=${node_major%%.*}
[ "$node_major" -ge 18 ] 2>/dev/null || die "node $node_version is too old: @grpc/grpc-js needs node >= 18 here"

# 2. a copy in the build tree
mkdir -p "$dest"
for f in package.json package-lock.json server.js; do
        [ -f "$src/$f" ] || die "$src/$f is missing"
        cp -f "$src/$f" "$dest/$f.tmp"
        mv -f "$dest/$f.tmp" "$dest/$f"
done

# 3. npm ci, when node_modules is missing or stale
stamp="$dest/node_modules/.cubelet-stamp"
want=$(
        cd "$dest"
        sha256sum package.json package-lock.json
        echo "node $node_version npm $npm_version"
)
if [ -d "$dest/node_modules" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
        log "node_modules is up to date ($dest)"
else
        log "npm ci in $dest (node $node_version, npm $npm_version)"
        t0=$(date +%s)
        # --ignore-scripts: no package here needs an install script (protobufjs'
        # postinstall only checks its optional command-line tools).
        if ! (cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund >&2); then
                rm -rf "$dest/node_modules"
                die "npm ci failed in $dest: see npm's output above (package.json and package-lock.json out of sync, or the npm registry unreachable)"
        fi
        printf '%s\n' "$want" >"$stamp"
        log "npm ci done in $(($(date +%s) - t0)) s"
fi
(cd "$dest" && "$node" -e "require('@grpc/grpc-js'); require('@grpc/proto-loader')") ||
        die "the installed packages do not load in $dest"

# 4. a smoke start: stdin at EOF makes the server stop right after its ready line.
tmp=$(mktemp -d /tmp/cubelet-crisrv.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
ready=$(cd "$dest" && timeout 60 "$node" server.js "$proto" "$tmp/cri.sock" </dev/null 2>"$tmp/log" | head -n 1) || true
if [[ "$ready" != *'"ready":true'* ]]; then
        cat "$tmp/log" >&2 || true
        die "the server did not start (no ready line; its log is above)"
fi
log "server starts: $ready"

# 5. the environment file
{
        echo "KC_CRI_SERVER_NODE=$node"
        echo "KC_CRI_SERVER_DIR=$dest"
        echo "KC_CRI_SERVER_PROTO=$proto"
} >"$env_file.tmp"
mv -f "$env_file.tmp" "$env_file"
log "ready: $env_file"
