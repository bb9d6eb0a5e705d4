#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# containerd-teardown.sh ENV_FILE
#
# Stops the containerd that containerd-setup.sh recorded in ENV_FILE and
# removes every trace of it, whether it is still healthy, was killed, or
# never finished starting:
#   1. with containerd alive: SIGKILL and delete every task in namespace
#      k8s.io, then delete every container (through ctr);
#   2. stops containerd by its recorded pid: SIGTERM, SIGKILL after 5 s;
#   3. force-deletes what is left in our runc state directory, kills any
#      process still in one of our containers' cgroups, kills the shims whose
#      argv names our socket and removes their sockets in /run/containerd/s;
#   4. unmounts everything under our directory, deepest first (with 1.7's
#      netns_mounts_under_state_dir the pods' network namespaces too, which
#      frees their veths); then, for 1.7's CNI, deletes any veth left on our
#      bridge, the bridge, and libcni's cache files of our network
#      (/var/lib/cni/results/<network>-*);
#   5. removes our containers' cgroups (/sys/fs/cgroup/*/k8s.io/<id>), then
#      the k8s.io and /run/containerd directories when empty and created by
#      this run (the setup recorded what existed before);
#   6. keeps containerd's log next to ENV_FILE (containerd.log.last) and
#      deletes the directory and ENV_FILE.
# Never kills by name: only the recorded pid, shims serving our socket, and
# processes of containers this containerd created. Exits 1 when something
# could not be removed (it is listed). Without ENV_FILE it does nothing.
#
# Environment: KC_CONTAINERD_KEEP=1 keeps the directory (still unmounted).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=containerd-lib.sh
. "$here/containerd-lib.sh"

env_file=${1:?usage: containerd-teardown.sh ENV_FILE}
[ "$(id -u)" = 0 ] || die "must run as root"
if [ ! -f "$env_file" ]; then
        log "no $env_file: nothing to tear down"
        exit 0
fi
t_begin=$(now_ms)
dir=$(env_get "$env_file" KC_CONTAINERD_DIR)
case $dir in
/*/?*) ;;
*) die "$env_file: bad KC_CONTAINERD_DIR \"$dir\"" ;;
esac
if [ ! -f "$dir/$KC_INTEG_MARKER" ]; then
        log "$dir is gone or not ours: only removing $env_file"
        rm -f "$env_file"
        exit 0
fi
sock=$dir/containerd.sock
conf=$dir/config.toml
runc_root=$dir/runc/k8s.io
problems=0
problem() {
        log "LEFT: $*"
        problems=$((problems + 1))
}

# Every container and sandbox id this containerd knows of, from its own
# directories (they outlive a crash): task bundles, CRI records, runc state.
collect_ids() {
        local d
        for d in "$dir/state/io.containerd.runtime.v2.task/k8s.io" \
                "$dir/root/io.containerd.grpc.v1.cri/containers" \
                "$dir/root/io.containerd.grpc.v1.cri/sandboxes" \
                "$runc_root"; do
                [ -d "$d" ] && ls -1 "$d"
        done
        [ -d "$runc_root" ] && runc --root "$runc_root" list -q 2>/dev/null
        return 0
}

pid=$(cat "$dir/containerd.pid" 2>/dev/null || env_get "$env_file" KC_CONTAINERD_PID)
alive=
is_our_containerd "$pid" "$conf" && alive=1
ctr_() { timeout 20 ctr --address "$sock" -n k8s.io "$@"; }

ids=$(collect_ids)
if [ -n "$alive" ]; then
        ids="$ids $(ctr_ containers ls -q 2>/dev/null)"
fi
ids=$(echo "$ids" | tr ' ' '\n' | grep -E '^[0-9a-f]{16,}$' | sort -u | tr '\n' ' ')

# 1. Tasks and containers, through containerd.
if [ -n "$alive" ]; then
        tasks=$(ctr_ tasks ls -q 2>/dev/null)
        for t in $tasks; do ctr_ tasks kill -s SIGKILL "$t" >/dev/null 2>&1; done
        # The CRI plugin deletes a task itself once it has exited; delete
        # what is still listed, for at most 5 s.
        for _ in $(seq 1 50); do
                left=$(ctr_ tasks ls -q 2>/dev/null)
                [ -n "$left" ] || break
                for t in $left; do ctr_ tasks delete "$t" >/dev/null 2>&1; done
                sleep 0.1
        done
        for c in $(ctr_ containers ls -q 2>/dev/null); do
                ctr_ containers delete "$c" >/dev/null 2>&1
        done
        [ -n "$tasks" ] && log "killed and deleted $(echo "$tasks" | wc -w) task(s)"
fi

# 2. containerd itself.
if [ -n "$alive" ]; then
        kill -TERM "$pid" 2>/dev/null
        for _ in $(seq 1 100); do
                is_our_containerd "$pid" "$conf" || break
                sleep 0.05
        done
        if is_our_containerd "$pid" "$conf"; then
                log "containerd $pid still alive 5 s after SIGTERM: SIGKILL"
                kill -KILL "$pid" 2>/dev/null
                for _ in $(seq 1 100); do
                        is_our_containerd "$pid" "$conf" || break
                        sleep 0.05
                done
        fi
        is_our_containerd "$pid" "$conf" && problem "containerd pid $pid"
        log "containerd $pid stopped"
else
        log "containerd (pid ${pid:-unknown}) was not running"
fi

# 3. What containerd could not clean up (it crashed, was killed, or was
#    stopped with tasks still running: shims outlive it by design).
if [ -d "$runc_root" ]; then
        for id in $(runc --root "$runc_root" list -q 2>/dev/null); do
                runc --root "$runc_root" kill "$id" KILL >/dev/null 2>&1
                runc --root "$runc_root" delete --force "$id" >/dev/null 2>&1 &&
                        log "force-deleted runc container $id"
        done
fi
for id in $ids; do
        for procs in /sys/fs/cgroup/*/k8s.io/"$id"/cgroup.procs /sys/fs/cgroup/k8s.io/"$id"/cgroup.procs; do
                [ -f "$procs" ] || continue
                while read -r p; do
                        kill -KILL "$p" 2>/dev/null && log "killed pid $p left in container $id"
                done <"$procs"
        done
done
for s in $(our_shims "$sock"); do
        id=$(shim_arg "$s" id)
        ns=$(shim_arg "$s" namespace)
        kill -KILL "$s" 2>/dev/null && log "killed shim $s (task $id)"
        [ -n "$id" ] && rm -f "$(shim_socket "$sock" "${ns:-k8s.io}" "$id")"
done
for id in $ids; do
        rm -f "$(shim_socket "$sock" k8s.io "$id")"
done

# 4. Mounts (rootfs overlays, sandbox /dev/shm), deepest first; a busy one
#    is detached lazily.
n_mounts=0
for _ in 1 2 3; do
        mnts=$(mounts_under "$dir")
        [ -n "$mnts" ] || break
        while IFS= read -r m; do
                if umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; then
                        n_mounts=$((n_mounts + 1))
                fi
        done <<<"$mnts"
done
[ "$n_mounts" -gt 0 ] && log "unmounted $n_mounts mount(s)"
for m in $(mounts_under "$dir"); do problem "mount $m"; done

preexisting() { grep -qxF "$1" "$dir/preexisting" 2>/dev/null; }

# 4b. The CNI bridge, its veths, libcni's cache (containerd 1.7 only).
br=$(env_get "$env_file" KC_CONTAINERD_BRIDGE)
net=$(env_get "$env_file" KC_CONTAINERD_CNI_NETWORK)
if [ -n "$br" ] && ip link show "$br" >/dev/null 2>&1; then
        for v in $(ip -o link show master "$br" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
                ip link del "$v" 2>/dev/null && log "deleted veth $v left on $br"
        done
        ip link del "$br" 2>/dev/null && log "deleted bridge $br"
        ip link show "$br" >/dev/null 2>&1 && problem "bridge $br"
fi
if [ -n "$net" ]; then
        rm -f /var/lib/cni/results/"$net"-* 2>/dev/null
        for f in /var/lib/cni/results/"$net"-*; do [ -e "$f" ] && problem "CNI cache $f"; done
        for d in /var/lib/cni/results /var/lib/cni; do
                [ -d "$d" ] && ! preexisting "$d" && rmdir "$d" 2>/dev/null
        done
fi

# 5. Cgroups and directories outside ours.
for id in $ids; do
        for cg in /sys/fs/cgroup/*/k8s.io/"$id" /sys/fs/cgroup/k8s.io/"$id"; do
                if [ ! -d "$cg" ] || [ -L "$cg" ]; then continue; fi
                for _ in $(seq 1 20); do
                        find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null
                        [ -d "$cg" ] || break
                        sleep 0.05 # a process just killed may not have left yet
                done
                [ -d "$cg" ] && problem "cgroup $cg"
        done
done
for cg in /sys/fs/cgroup/*/k8s.io /sys/fs/cgroup/k8s.io; do
        [ -d "$cg" ] && [ ! -L "$cg" ] && ! preexisting "$cg" && rmdir "$cg" 2>/dev/null
done
for d in /run/containerd/s /run/containerd; do
        [ -d "$d" ] && ! preexisting "$d" && rmdir "$d" 2>/dev/null
done

# 6. Files.
for id in $ids; do
        [ -e "$(shim_socket "$sock" k8s.io "$id")" ] && problem "shim socket of $id"
done
for s in $(our_shims "$sock"); do problem "shim pid $s"; done
for p in /proc/[0-9]*; do
        [[ "$(cmdline_args "${p#/proc/}")" == *"$dir/"* ]] &&
                problem "process ${p#/proc/}: $(cmdline_args "${p#/proc/}" | tr '\n' ' ')"
done
cp -f "$dir/containerd.log" "$(dirname "$env_file")/$(basename "$env_file" .env).log.last" 2>/dev/null
if [ "${KC_CONTAINERD_KEEP:-}" = 1 ]; then
        log "kept $dir (KC_CONTAINERD_KEEP=1)"
else
        rm -rf "$dir" || problem "directory $dir"
fi
rm -f "$env_file"
log "done in $(($(now_ms) - t_begin)) ms; $problems thing(s) left"
[ "$problems" -eq 0 ]
