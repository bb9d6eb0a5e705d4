#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# containerd-setup.sh ENV_FILE [--restart]
#
# Starts a private containerd with its CRI plugin for the integration
# tests: Debian bookworm's 1.6 without CNI (host-network pods only), or,
# with KC_CONTAINERD_VERSION=1.7, Debian trixie's 1.7 (pinned and checked in
# containerd-lib.sh, extracted under KC_INTEG_CACHE, never installed) with
# CNI pod networking, and records where it is in ENV_FILE:
#
#   KC_CONTAINERD_DIR=<temporary directory holding all of its state>
#   KC_CONTAINERD_SOCK=<its gRPC socket>
#   KC_CONTAINERD_ENDPOINT=unix://<its gRPC socket>
#   KC_CONTAINERD_PID=<its pid>
#   KC_CONTAINERD_CONFIG=<its config file>
#   KC_CONTAINERD_IMAGE=localhost/cubelet/busybox:1
#   KC_CONTAINERD_SNAPSHOTTER=overlayfs|native
#   KC_CONTAINERD_VERSION=1.6|1.7
#   KC_CONTAINERD_BIN=<directory of 1.7's binaries, first in PATH; "" for 1.6>
#   KC_CONTAINERD_CNI=0|1
#   KC_CONTAINERD_BRIDGE, KC_CONTAINERD_CNI_NETWORK, KC_CONTAINERD_POD_CIDR (1.7)
#
# 1.7's CNI: bookworm's containernetworking-plugins (bridge, host-local,
# loopback); a bridge of this run's own (kcbr<suffix>) whose address the
# harness sets, isGateway false and no masquerade, so the plugin leaves
# ip_forward at 0 and no pod traffic can leave the machine; addresses from
# a free /26 of 198.51.100.0/24; host-local's state in our directory, the
# network namespaces under containerd's state (netns_mounts_under_state_dir).
#
# The last line on stdout is the socket path. Steps:
#   1. installs containerd, runc, busybox-static and curl from apt when
#      missing (one apt-get update first);
#   2. makes a temporary directory (mktemp under $TMPDIR or /tmp, short enough
#      for unix socket paths) for containerd's root, state, socket, runc state
#      and log;
#   3. builds the busybox OCI image (mkimage.sh) and writes the config:
#      overlayfs if an overlay mount works in that directory, else native;
#      runc; restrict_oom_score_adj (this machine drops CAP_SYS_RESOURCE even
#      for root, so runc cannot lower a sandbox's oom_score_adj); no CNI, so
#      pods are host-network only;
#   4. starts containerd in its own session (setsid) so that it outlives this
#      script and CTest's process group, records its pid, waits for its
#      socket, imports the image into namespace k8s.io;
#   5. waits until the CRI plugin answers Version and ImageStatus(image),
#      checked with raw gRPC calls through curl.
# Any failure exits 1 with the tail of containerd's log: the setup never
# skips. A leftover ENV_FILE from an earlier run is torn down first.
#
# --restart starts containerd again in the directory ENV_FILE names, keeping
# its state (the end-to-end test kills containerd and brings it back); it does
# nothing but re-check when that containerd is still alive.
#
# Environment: KC_CONTAINERD_SNAPSHOTTER=auto|overlayfs|native (auto);
# KC_CONTAINERD_VERSION=1.6|1.7 (1.6; --restart keeps the recorded one).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=containerd-lib.sh
. "$here/containerd-lib.sh"

env_file=${1:?usage: containerd-setup.sh ENV_FILE [--restart]}
mode=${2:-fresh}
case $mode in
fresh | --restart) ;;
*) die "unknown argument \"$mode\"" ;;
esac
[ "$(id -u)" = 0 ] || die "must run as root (containerd, mounts, cgroups)"
env_file=$(realpath -m "$env_file")
mkdir -p "$(dirname "$env_file")"
t_begin=$(now_ms)

# ---------------------------------------------------------------------------
# 1. Packages

install_missing() {
        local p missing=()
        for p in containerd runc busybox-static curl "$@"; do
                [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == *"install ok installed"* ]] ||
                        missing+=("$p")
        done
        [ ${#missing[@]} -eq 0 ] && return 0
        log "installing ${missing[*]} (apt-get update first)"
        apt-get update -qq >&2 || die "apt-get update failed"
        # containerd's postinst only enables a systemd unit: with no systemd
        # nothing starts, and where systemd runs, that containerd uses the
        # default socket, not ours.
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                "${missing[@]}" >&2 || die "apt-get install ${missing[*]} failed"
}
if [ "$mode" = --restart ]; then
        version=$(env_get "$env_file" KC_CONTAINERD_VERSION)
else
        version=${KC_CONTAINERD_VERSION:-1.6}
fi
case $version in
1.6) install_missing ;;
1.7) install_missing containernetworking-plugins iproute2 ;;
*) die "KC_CONTAINERD_VERSION must be 1.6 or 1.7, not \"$version\"" ;;
esac
for b in containerd ctr runc curl; do
        command -v "$b" >/dev/null || die "$b is not on PATH after installing its package"
done
bin=
if [ "$version" = 1.7 ]; then
        bin=$(ctrd17_fetch)
        for b in bridge host-local loopback; do
                [ -x "/usr/lib/cni/$b" ] || die "CNI plugin /usr/lib/cni/$b missing (containernetworking-plugins)"
        done
        command -v ip >/dev/null || die "ip (iproute2) is needed for the CNI bridge"
        # containerd looks its shim up in PATH first: 1.7's own shim, not 1.6's.
        export PATH=$bin:$PATH
fi

# ---------------------------------------------------------------------------
# 2. The directory

if [ "$mode" = --restart ]; then
        [ -f "$env_file" ] || die "--restart: no $env_file (run the setup first)"
        dir=$(env_get "$env_file" KC_CONTAINERD_DIR)
        if [ -z "$dir" ] || [ ! -f "$dir/$KC_INTEG_MARKER" ]; then
                die "--restart: $env_file names no harness directory"
        fi
else
        if [ -f "$env_file" ]; then
                log "a previous run left $env_file: tearing it down first"
                bash "$here/containerd-teardown.sh" "$env_file" || die "could not tear down the previous run"
        fi
        dir=$(mktemp -d "${TMPDIR:-/tmp}/cubelet-ctrd.XXXXXX")
        touch "$dir/$KC_INTEG_MARKER"
        mkdir -p "$dir"/{root,state,runc,opt,cni/bin,cni/net.d}
        # What already existed outside our directory, so that the teardown
        # removes only what this containerd created.
        for p in /run/containerd /run/containerd/s /sys/fs/cgroup/*/k8s.io /sys/fs/cgroup/k8s.io \
                /var/lib/cni /var/lib/cni/results; do
                [ -e "$p" ] && echo "$p"
        done >"$dir/preexisting"
        # Recorded at once, so that the teardown finds the directory even
        # when a later step fails.
        rm -f "$env_file"
        env_set "$env_file" KC_CONTAINERD_DIR "$dir"
        env_set "$env_file" KC_CONTAINERD_VERSION "$version"
        env_set "$env_file" KC_CONTAINERD_BIN "$bin"
fi

sock=$dir/containerd.sock
conf=$dir/config.toml
pid_file=$dir/containerd.pid
image_tar=$dir/busybox-oci.tar
containerd_log=$dir/containerd.log

fail() {
        log "FATAL: $*"
        if [ -f "$containerd_log" ]; then
                log "last lines of $containerd_log:"
                tail -n 30 "$containerd_log" >&2
        fi
        exit 1
}

# ---------------------------------------------------------------------------
# 3. Image and config

pick_snapshotter() {
        local want=${KC_CONTAINERD_SNAPSHOTTER:-auto} probe
        if [ "$want" != auto ]; then
                echo "$want"
                return
        fi
        # A real overlay mount where containerd's root will be (overlay does
        # not work on every filesystem, e.g. on overlayfs itself).
        probe=$dir/root/.overlay-probe
        mkdir -p "$probe"/{lower,upper,work,merged}
        if mount -t overlay overlay \
                -o "lowerdir=$probe/lower,upperdir=$probe/upper,workdir=$probe/work" \
                "$probe/merged" 2>/dev/null; then
                umount "$probe/merged"
                echo overlayfs
        else
                echo native
        fi
        rm -rf "$probe"
}

write_config() {
        cat >"$conf" <<EOF
# containerd $version config for cubelet's integration tests (written by
# tests/integration/containerd-setup.sh). Everything lives in $dir except
# what containerd hard-codes: shim sockets in /run/containerd/s and the
# cgroups /sys/fs/cgroup/<controller>/k8s.io/<id> (and, with CNI, the
# bridge, the pods' veths and libcni's cache in /var/lib/cni/results).
version = 2
root = "$dir/root"
state = "$dir/state"
oom_score = 0
# Snapshotters that cannot work here; disabling them keeps the start quick
# and the log quiet. (io.containerd.runtime.v1.linux must stay: without it
# 1.6 loads neither the tasks service nor the CRI plugin.)
disabled_plugins = [
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
]

[grpc]
  address = "$sock"
  uid = 0
  gid = 0
  max_recv_message_size = 16777216
  max_send_message_size = 16777216

[ttrpc]
  address = ""

[debug]
  address = ""
  level = "info"

[metrics]
  address = ""

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = "$dir/opt"
  [plugins."io.containerd.gc.v1.scheduler"]
    startup_delay = "100ms"
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "$KC_INTEG_IMAGE"
    disable_tcp_service = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    enable_selinux = false
    disable_apparmor = true
    # Required on this machine: root lacks CAP_SYS_RESOURCE, so runc fails
    # to write a sandbox's oom_score_adj of -998 ("can't get final child's
    # PID from pipe: EOF"). This clamps it to containerd's own score.
    restrict_oom_score_adj = true
    disable_cgroup = false
    disable_hugetlb_controller = true
    tolerate_missing_hugetlb_controller = true
    systemd_cgroup = false
$netns_line
$cni_comment
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "$cni_bin"
      conf_dir = "$dir/cni/net.d"
      max_conf_num = 1
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "$snapshotter"
      default_runtime_name = "runc"
      disable_snapshot_annotations = true
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          BinaryName = "runc"
          # runc's state, which the teardown needs when containerd is gone
          Root = "$dir/runc"
          SystemdCgroup = false
    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = ""
EOF
}

# 1.7: the bridge (address set here, so the plugin needs no gateway) and
# the network config.
setup_cni() {
        local o suffix
        suffix=${dir##*.}
        br=kcbr$suffix
        net=cubelet-$suffix
        o=$(cni_pick_range) || fail "no free /26 in $KC_CNI_NET.0/24 (other runs' bridges hold them all)"
        cidr=$KC_CNI_NET.$o/26
        # Recorded before creating, so that a failed setup's teardown removes it.
        env_set "$env_file" KC_CONTAINERD_BRIDGE "$br"
        env_set "$env_file" KC_CONTAINERD_CNI_NETWORK "$net"
        env_set "$env_file" KC_CONTAINERD_POD_CIDR "$cidr"
        ip link add "$br" type bridge || fail "ip link add $br type bridge failed"
        ip addr add "$KC_CNI_NET.$((o + 1))/26" dev "$br" || fail "cannot address $br"
        ip link set "$br" up || fail "cannot bring $br up"
        mkdir -p "$dir/cni/ipam"
        cat >"$dir/cni/net.d/10-cubelet.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$net",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$br",
      "isGateway": false,
      "isDefaultGateway": false,
      "ipMasq": false,
      "hairpinMode": false,
      "ipam": {
        "type": "host-local",
        "dataDir": "$dir/cni/ipam",
        "ranges": [[{ "subnet": "$cidr", "rangeStart": "$KC_CNI_NET.$((o + 2))",
                      "rangeEnd": "$KC_CNI_NET.$((o + 62))" }]]
      }
    }
  ]
}
EOF
}

if [ "$mode" = fresh ]; then
        bash "$here/mkimage.sh" "$image_tar" "$KC_INTEG_IMAGE" || fail "could not build the image"
        snapshotter=$(pick_snapshotter)
        if [ "$version" = 1.7 ]; then
                setup_cni
                cni_bin=/usr/lib/cni
                cni_comment="    # CNI: bookworm's plugins, the bridge network in $dir/cni/net.d."
                netns_line="    netns_mounts_under_state_dir = true"
        else
                cni_bin=$dir/cni/bin
                cni_comment="    # No CNI plugin: Status reports NetworkReady=false; host-network pods work."
                netns_line=
        fi
        write_config
else
        snapshotter=$(env_get "$env_file" KC_CONTAINERD_SNAPSHOTTER)
fi

# ---------------------------------------------------------------------------
# 4. Start

pid=$(cat "$pid_file" 2>/dev/null || true)
if is_our_containerd "$pid" "$conf"; then
        log "containerd already running (pid $pid)"
else
        rm -f "$pid_file" "$sock" "$sock.ttrpc"
        t_start=$(now_ms)
        # setsid: a session of its own, so that neither CTest's process-group
        # kill nor this script's exit touches it. Not a process-group leader
        # here (no job control), so setsid execs in place and $! is
        # containerd's pid.
        setsid "${bin:+$bin/}containerd" --config "$conf" >>"$containerd_log" 2>&1 </dev/null &
        pid=$!
        echo "$pid" >"$pid_file"
        env_set "$env_file" KC_CONTAINERD_PID "$pid"
        up=
        for _ in $(seq 1 600); do # 30 s
                # (ctr would wait up to 10 s for a socket that is not there yet.)
                if [ -S "$sock" ] && ctr --address "$sock" --connect-timeout 2s version >/dev/null 2>&1; then
                        up=1
                        break
                fi
                # Alive is enough here: right after the fork, setsid may not
                # have exec'd containerd yet (its argv is still setsid's).
                pid_alive "$pid" || fail "containerd (pid $pid) exited during its start"
                sleep 0.05
        done
        [ -n "$up" ] || fail "containerd (pid $pid) did not answer on $sock within 30 s"
        log "containerd pid $pid answers on $sock after $(($(now_ms) - t_start)) ms"
fi

if [ "$mode" = fresh ]; then
        ctr --address "$sock" -n k8s.io images import --snapshotter "$snapshotter" "$image_tar" >&2 ||
                fail "ctr images import $image_tar failed"
fi

# ---------------------------------------------------------------------------
# 5. Wait for the CRI plugin

t_cri=$(now_ms)
ok=
for _ in $(seq 1 300); do # 30 s
        if cri_version_ok "$sock" && cri_image_ok "$sock" "$KC_INTEG_IMAGE"; then
                ok=1
                break
        fi
        is_our_containerd "$pid" "$conf" || fail "containerd (pid $pid) exited before its CRI plugin answered"
        sleep 0.1
done
[ -n "$ok" ] || fail "the CRI plugin did not answer Version and ImageStatus($KC_INTEG_IMAGE) within 30 s"

env_set "$env_file" KC_CONTAINERD_SOCK "$sock"
env_set "$env_file" KC_CONTAINERD_ENDPOINT "unix://$sock"
env_set "$env_file" KC_CONTAINERD_PID "$pid"
env_set "$env_file" KC_CONTAINERD_CONFIG "$conf"
env_set "$env_file" KC_CONTAINERD_IMAGE "$KC_INTEG_IMAGE"
env_set "$env_file" KC_CONTAINERD_SNAPSHOTTER "$snapshotter"
env_set "$env_file" KC_CONTAINERD_CNI "$([ "$version" = 1.7 ] && echo 1 || echo 0)"
log "containerd $version: CRI ready after $(($(now_ms) - t_cri)) ms; snapshotter $snapshotter; total $(($(now_ms) - t_begin)) ms; recorded in $env_file"
echo "$sock"
