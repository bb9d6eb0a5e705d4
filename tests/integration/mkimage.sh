#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# mkimage.sh OUT.tar NAME
#
# Writes an OCI image-layout tarball holding a one-layer busybox image made
# from Debian's busybox-static, for the integration tests' containerd (which
# has no registry to pull from). The same image is the CRI sandbox ("pause")
# image and the workload image: its default command sleeps for ~30 years.
#
# The output is byte-for-byte reproducible: every tar member has owner 0:0,
# mtime 0 and a sorted position, and the JSON documents are fixed strings, so
# the image id and digests only change when busybox itself does.
set -euo pipefail

out=${1:?usage: mkimage.sh OUT.tar NAME}
name=${2:?usage: mkimage.sh OUT.tar NAME}
busybox=/bin/busybox

die() { echo "mkimage.sh: $*" >&2; exit 1; }

[ -x "$busybox" ] || die "$busybox is missing (apt-get install busybox-static)"
# A dynamically linked busybox (Debian's "busybox" package) would not run in
# an image without a libc.
if ldd "$busybox" >/dev/null 2>&1; then
        die "$busybox is dynamically linked: install busybox-static"
fi

# OCI architecture names from Debian's (amd64 and arm64 are the same).
case $(dpkg --print-architecture 2>/dev/null || echo amd64) in
i386) arch=386 ;;
armhf | armel) arch=arm ;;
*) arch=$(dpkg --print-architecture 2>/dev/null || echo amd64) ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/cubelet-mkimage.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Reproducible tar: fixed owners and times, sorted names, no atime/ctime in
# the pax headers.
repro_tar() {
        local dir=$1 dest=$2
        shift 2
        tar -C "$dir" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
                --format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
                -cf "$dest" "$@"
}

# The root filesystem: busybox, one symlink per applet, a minimal passwd.
rootfs=$work/rootfs
mkdir -p "$rootfs"/{bin,dev,etc,proc,root,sys,tmp,var}
chmod 0755 "$rootfs"/{bin,dev,etc,proc,sys,var}
chmod 1777 "$rootfs/tmp"
chmod 0700 "$rootfs/root"
install -m 0755 "$busybox" "$rootfs/bin/busybox"
for applet in $("$busybox" --list); do
        [ "$applet" = busybox ] || ln -s busybox "$rootfs/bin/$applet"
done
cat >"$rootfs/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PASSWD
cat >"$rootfs/etc/group" <<'GROUP'
root:x:0:
nogroup:x:65534:
GROUP
chmod 0644 "$rootfs/etc/passwd" "$rootfs/etc/group"

layout=$work/layout
mkdir -p "$layout/blobs/sha256"

# add_blob FILE: moves FILE into the layout under its digest; prints
# "<hex digest> <size>".
add_blob() {
        local hex size
        hex=$(sha256sum "$1" | cut -d' ' -f1)
        size=$(stat -c %s "$1")
        mv "$1" "$layout/blobs/sha256/$hex"
        echo "$hex $size"
}

# One uncompressed layer: its digest is also its diff id.
repro_tar "$rootfs" "$work/layer.tar" .
read -r layer_hex layer_size < <(add_blob "$work/layer.tar")

printf '%s' "{\"architecture\":\"$arch\",\"os\":\"linux\",\
\"config\":{\"Env\":[\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\"],\
\"Cmd\":[\"/bin/sleep\",\"1000000000\"],\"WorkingDir\":\"/\"},\
\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:$layer_hex\"]},\
\"history\":[{\"created_by\":\"cubelet tests/integration/mkimage.sh\"}]}" >"$work/config.json"
read -r config_hex config_size < <(add_blob "$work/config.json")

printf '%s' "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\
\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\
\"digest\":\"sha256:$config_hex\",\"size\":$config_size},\
\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\",\
\"digest\":\"sha256:$layer_hex\",\"size\":$layer_size}]}" >"$work/manifest.json"
read -r manifest_hex manifest_size < <(add_blob "$work/manifest.json")

# The index names the image: containerd's importer reads the
# io.containerd.image.name annotation.
printf '%s' "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\
\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\
\"digest\":\"sha256:$manifest_hex\",\"size\":$manifest_size,\
\"platform\":{\"architecture\":\"$arch\",\"os\":\"linux\"},\
\"annotations\":{\"io.containerd.image.name\":\"$name\",\
\"org.opencontainers.image.ref.name\":\"${name##*:}\"}}]}" >"$layout/index.json"
printf '%s' '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"

mkdir -p "$(dirname "$out")"
repro_tar "$layout" "$out.partial" oci-layout index.json blobs
mv -f "$out.partial" "$out"
echo "mkimage.sh: $name: image id sha256:$config_hex, manifest sha256:$manifest_hex -> $out" >&2
