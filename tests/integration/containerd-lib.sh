# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
#
# Helpers shared by containerd-setup.sh and containerd-teardown.sh (sourced,
# not run). See containerd-setup.sh for what the harness does and why.

# shellcheck disable=SC2034 # both are used by the scripts that source this
# The image every integration test uses: built by mkimage.sh and imported
# by the setup; also the CRI sandbox image (nothing is ever pulled).
KC_INTEG_IMAGE=localhost/cubelet/busybox:1
# The file inside the temporary directory that marks it as ours: teardown
# refuses to remove a directory without it.
KC_INTEG_MARKER=.cubelet-integration-containerd

log() { echo "${0##*/}: $*" >&2; }
die() {
        log "FATAL: $*"
        exit 1
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# env_get FILE KEY: the value of KEY=VALUE in FILE ("" when absent).
env_get() {
        local k v
        while IFS='=' read -r k v; do
                [ "$k" = "$2" ] && {
                        printf '%s\n' "$v"
                        return 0
                }
        done <"$1"
        return 0
}

# env_set FILE KEY VALUE: replaces or appends KEY=VALUE, atomically.
env_set() {
        local f=$1 k=$2 v=$3 tmp
        tmp=$(mktemp "$f.XXXXXX")
        if [ -f "$f" ]; then
                grep -v "^$k=" "$f" >"$tmp" || true # status 1: no other line
        fi
        printf '%s=%s\n' "$k" "$v" >>"$tmp"
        mv -f "$tmp" "$f"
}

# cmdline_args PID: the process' argv, one argument per line.
cmdline_args() { tr '\0' '\n' 2>/dev/null <"/proc/$1/cmdline"; }

# pid_alive PID: PID exists and is not a zombie.
pid_alive() {
        local state
        [ -n "$1" ] && [ -d "/proc/$1" ] || return 1
        state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null)
        [ -n "$state" ] && [ "$state" != Z ]
}

# is_our_containerd PID CONFIG: PID is alive (not a zombie) and runs
# "containerd --config CONFIG".
is_our_containerd() {
        local pid=$1 conf=$2
        pid_alive "$pid" || return 1
        [ "$(cmdline_args "$pid" | sed -n '1{s#.*/##;p};2p;3p' | tr '\n' ' ')" = "containerd --config $conf " ]
}

# our_shims SOCK: pids of containerd-shim-runc-v2 processes started by the
# containerd listening on SOCK (their argv has "-address SOCK").
our_shims() {
        local p pid
        for p in /proc/[0-9]*; do
                pid=${p#/proc/}
                cmdline_args "$pid" | awk -v sock="$1" '
                        NR == 1 && $0 !~ /containerd-shim-runc-v2$/ { exit 1 }
                        prev == "-address" && $0 == sock { found = 1 }
                        { prev = $0 }
                        END { exit found ? 0 : 1 }' && echo "$pid"
        done
        return 0
}

# shim_arg PID NAME: the value after "-NAME" in a shim's argv.
shim_arg() { cmdline_args "$1" | sed -n "/^-$2\$/{n;p;q}"; }

# shim_socket SOCK NAMESPACE ID: where containerd 1.6 puts the shim socket of
# task ID (hard-coded under /run/containerd/s, named by a hash that includes
# our containerd's address, so it cannot be another containerd's).
shim_socket() {
        printf '/run/containerd/s/%s' "$(printf '%s' "$1/$2/$3" | sha256sum | cut -d' ' -f1)"
}

# mounts_under DIR: mount points at or below DIR, deepest first.
mounts_under() {
        awk -v d="$1" '$5 == d || index($5, d "/") == 1 { print length($5), $5 }' /proc/self/mountinfo |
                sort -rn | cut -d' ' -f2-
}

# --- raw CRI calls over HTTP/2 with curl (no gRPC library) ---------------

# hex_of STRING: lowercase hex of the bytes of STRING.
hex_of() { printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n'; }

# pb_bytes FIELD HEX: a protobuf length-delimited field (payloads < 128 bytes).
pb_bytes() { printf '%02x%02x%s' $((($1 << 3) | 2)) $((${#2} / 2)) "$2"; }

# cri_call SOCK METHOD REQ_HEX: one unary call. Prints "<grpc-status>
# <response message hex>" (status "none" when the call failed outright).
cri_call() {
        local sock=$1 method=$2 req=$3 dir n status body
        dir=$(mktemp -d "${TMPDIR:-/tmp}/cubelet-cri.XXXXXX")
        n=$((${#req} / 2))
        # gRPC framing: flag 0, u32 big-endian length, message.
        printf '%b' "$(printf '00%08x%s' "$n" "$req" | sed 's/../\\x&/g')" >"$dir/req"
        if curl -sS --max-time 5 --http2-prior-knowledge --unix-socket "$sock" \
                -H 'content-type: application/grpc' -H 'te: trailers' \
                -D "$dir/headers" -o "$dir/body" --data-binary @"$dir/req" \
                "http://localhost/$method" 2>/dev/null; then
                status=$(tr -d '\r' <"$dir/headers" | sed -n 's/^grpc-status: *//Ip' | tail -1)
                body=$(od -An -v -tx1 "$dir/body" | tr -d ' \n')
                echo "${status:-none} ${body:10}"
        else
                echo "none "
        fi
        rm -rf "$dir"
}

# cri_version_ok SOCK: RuntimeService/Version answers OK from containerd.
cri_version_ok() {
        local out
        out=$(cri_call "$1" runtime.v1.RuntimeService/Version "")
        [ "${out%% *}" = 0 ] && [[ "${out#* }" == *"$(hex_of containerd)"* ]]
}

# cri_image_ok SOCK IMAGE: ImageService/ImageStatus finds IMAGE (the
# response's field 1, the image, is present).
cri_image_ok() {
        local out
        out=$(cri_call "$1" runtime.v1.ImageService/ImageStatus \
                "$(pb_bytes 1 "$(pb_bytes 1 "$(hex_of "$2")")")")
        [ "${out%% *}" = 0 ] && [[ "${out#* }" == 0a* ]]
}

# --- containerd 1.7 (Debian trixie's package, never installed) -----------

# The pinned package and the sha256 of its .deb (amd64). A new pin needs
# both: apt-cache policy containerd in the private config below, then
# sha256sum of the downloaded .deb.
KC_CTRD17_VERSION=1.7.24~ds1-6+deb13u1
KC_CTRD17_SHA256=ed708deb96fe476a3bce4efa5c0538dfbcf717ab9a7c7944ba7260342c25899c
# Where the download and the extracted tree are kept between runs (reruns
# are offline once both are there).
KC_INTEG_CACHE=${KC_INTEG_CACHE:-/var/cache/cubelet-integration}
# Pod addresses on 1.7 (CNI): a /26 of 198.51.100.0/24 (TEST-NET-2; the
# VM's own address is in 192.0.2.0/24) on a bridge of the run's own.
KC_CNI_NET=198.51.100

# ctrd17_fetch: prints the directory holding containerd 1.7's containerd,
# containerd-shim-runc-v2 and ctr, downloading (private apt config for
# trixie under KC_INTEG_CACHE: the system's sources are not touched) and
# extracting the pinned .deb on the first run, checked against its sha256.
ctrd17_fetch() {
        local c=$KC_INTEG_CACHE apt tree deb sum opts
        tree=$c/containerd-$KC_CTRD17_VERSION
        if [ -x "$tree/usr/bin/containerd" ] && [ -f "$tree/.sha256-ok" ]; then
                echo "$tree/usr/bin"
                return 0
        fi
        [ "$(dpkg --print-architecture)" = amd64 ] ||
                die "containerd 1.7: the pinned checksum is for amd64, not $(dpkg --print-architecture)"
        apt=$c/apt
        mkdir -p "$apt"/{state/lists/partial,cache/archives/partial} "$c/debs" || die "cannot create $c"
        deb=$c/debs/containerd_${KC_CTRD17_VERSION}_amd64.deb
        if [ ! -f "$deb" ]; then
                echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
                        >"$apt/sources.list"
                opts=(-o "Dir::Etc::sourcelist=$apt/sources.list" -o Dir::Etc::sourceparts=/nonexistent
                        -o "Dir::State=$apt/state" -o "Dir::Cache=$apt/cache"
                        -o Dir::State::status=/var/lib/dpkg/status -o APT::Sandbox::User=root)
                log "containerd 1.7: apt-get update (private trixie config in $apt)"
                apt-get "${opts[@]}" update -qq >&2 || die "containerd 1.7: apt-get update (trixie) failed"
                (cd "$c/debs" && apt-get "${opts[@]}" download -qq "containerd=$KC_CTRD17_VERSION") >&2 ||
                        die "containerd 1.7: apt-get download containerd=$KC_CTRD17_VERSION failed (apt-cache policy containerd in that config lists what trixie has)"
        fi
        sum=$(sha256sum "$deb" | cut -d' ' -f1)
        if [ "$sum" != "$KC_CTRD17_SHA256" ]; then
                rm -f "$deb"
                die "containerd 1.7: $deb has sha256 $sum, expected $KC_CTRD17_SHA256 (removed)"
        fi
        rm -rf "$tree.tmp"
        dpkg-deb -x "$deb" "$tree.tmp" || die "containerd 1.7: dpkg-deb -x $deb failed"
        touch "$tree.tmp/.sha256-ok"
        rm -rf "$tree"
        mv "$tree.tmp" "$tree"
        log "containerd 1.7: $KC_CTRD17_VERSION extracted in $tree (sha256 checked)"
        echo "$tree/usr/bin"
}

# cni_pick_range: the first /26 of $KC_CNI_NET.0/24 no interface of this
# machine has an address in (another run's bridge); prints its first octet.
cni_pick_range() {
        local o used
        used=$(ip -4 -o addr show | awk '{print $4}')
        for o in 0 64 128 192; do
                if ! grep -q "^$KC_CNI_NET\.$((o + 1))/" <<<"$used"; then
                        echo "$o"
                        return 0
                fi
        done
        return 1
}
