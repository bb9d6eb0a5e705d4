# SPDX-License-Identifier: Apache-2.0
"""Volumes and mounts of static pods on a real containerd (issue 14:
kubelet/volume_manager.c and kubelet/pod_mounts.c).

    python3 -B tests/integration/test_volumes.py <cubelet> [unittest args]

with KC_CONTAINERD_ENV naming the fixture's env file (CTest sets it). Every
check is made inside the container (`ctr tasks exec`) or on the host, never
only through cubelet's /pods:

- a file a container writes through a hostPath mount (type
  DirectoryOrCreate, a directory that did not exist) appears on the host;
- two containers share an emptyDir: one writes, the other reads the file;
  it lies under <root-dir>/pods/<uid>/volumes/kubernetes.io~empty-dir/;
- the pod's fsGroup owns the emptyDir (setgid, so the file written in it
  is the group's too), not the hostPath;
- a readOnly hostPath mount refuses a write (and the host file is unchanged);
- a subPath mount shows only its subdirectory;
- the pod's /etc/hosts is the managed one (host network: the node's file
  under the kubelet's header, then the hostAliases);
- once the manifest is gone the pod's directory is removed.
"""

import os

import daemon_lib
from daemon_lib import cid_of

from harness import container, pod_manifest, wait_until  # noqa: E402  (tests/e2e, put on sys.path by daemon_lib)

SLEEP = ["sleep", "1000000"]
FS_GROUP = 2345


class VolumesOnContainerd(daemon_lib.ContainerdTestCase):
    def app(self, name, command, mounts):
        return container(name, command, image=self.ctrd.image, imagePullPolicy="IfNotPresent", volumeMounts=mounts)

    def test_host_path_empty_dir_read_only(self):
        uid = self.new_uid("vol")
        work = self.workdir()
        host_dir = os.path.join(work, "host", "made")  # DirectoryOrCreate makes it
        ro_dir = os.path.join(work, "ro")
        os.makedirs(ro_dir)
        with open(os.path.join(ro_dir, "keep"), "w") as f:
            f.write("original\n")
        os.makedirs(os.path.join(ro_dir, "sub"))
        with open(os.path.join(ro_dir, "sub", "inner"), "w") as f:
            f.write("inner\n")
        volumes = [
            {"name": "host", "hostPath": {"path": host_dir, "type": "DirectoryOrCreate"}},
            {"name": "ro", "hostPath": {"path": ro_dir, "type": "Directory"}},
            {"name": "cache", "emptyDir": {}},
        ]
        writer = self.app(
            "app",
            ["sh", "-c", "echo hello > /host/out && echo shared > /cache/f && exec sleep 1000000"],
            [
                {"name": "host", "mountPath": "/host"},
                {"name": "cache", "mountPath": "/cache"},
                {"name": "ro", "mountPath": "/ro", "readOnly": True},
            ],
        )
        reader = self.app(
            "reader",
            SLEEP,
            [{"name": "cache", "mountPath": "/data"}, {"name": "ro", "mountPath": "/sub", "subPath": "sub"}],
        )
        manifest = pod_manifest(
            "vols",
            [writer, reader],
            uid=uid,
            hostNetwork=True,
            terminationGracePeriodSeconds=1,
            volumes=volumes,
            hostAliases=[{"ip": "10.9.9.9", "hostnames": ["alias.example"]}],
            securityContext={"fsGroup": FS_GROUP},
        )
        d = self.start(manifests={"vols.yaml": manifest})
        p = d.wait_running("vols", timeout=90)
        app_cid, reader_cid = cid_of(p, "app"), cid_of(p, "reader")

        # hostPath: the container's write shows on the host.
        wait_until(lambda: os.path.exists(os.path.join(host_dir, "out")), 30, "/host/out on the host", daemon=d)
        with open(os.path.join(host_dir, "out")) as f:
            self.assertEqual(f.read(), "hello\n")
        self.assertEqual(os.stat(host_dir).st_mode & 0o777, 0o755)

        # emptyDir: the other container reads what the first wrote.
        code, out = self.ctrd.exec(reader_cid, "cat", "/data/f")
        self.assertEqual((code, out), (0, "shared\n"))
        on_disk = os.path.join(d.root_dir, "pods", uid, "volumes", "kubernetes.io~empty-dir", "cache", "f")
        self.assertTrue(os.path.exists(on_disk), on_disk)
        # fsGroup: the emptyDir is the group's (setgid), so is what a container wrote in it;
        # the hostPath is left alone.
        cache_dir = os.path.dirname(on_disk)
        self.assertEqual((os.stat(cache_dir).st_gid, os.stat(cache_dir).st_mode & 0o7777), (FS_GROUP, 0o2777))
        self.assertEqual(os.stat(on_disk).st_gid, FS_GROUP)
        self.assertNotEqual(os.stat(host_dir).st_gid, FS_GROUP)

        # readOnly: a write fails and the host file is unchanged.
        code, _ = self.ctrd.exec(app_cid, "sh", "-c", "echo changed > /ro/keep")
        self.assertNotEqual(code, 0)
        with open(os.path.join(ro_dir, "keep")) as f:
            self.assertEqual(f.read(), "original\n")

        # subPath: only the subdirectory.
        self.assertEqual(self.ctrd.exec(reader_cid, "cat", "/sub/inner"), (0, "inner\n"))
        self.assertNotEqual(self.ctrd.exec(reader_cid, "cat", "/sub/keep")[0], 0)

        # /etc/hosts: the managed file (host network) with the alias.
        code, hosts = self.ctrd.exec(app_cid, "cat", "/etc/hosts")
        self.assertEqual(code, 0)
        self.assertTrue(hosts.startswith("# Kubernetes-managed hosts file (host network).\n"), hosts)
        self.assertTrue(hosts.endswith("\n# Entries added by HostAliases.\n10.9.9.9\talias.example\n"), hosts)

        # The manifest goes: the pod's directory follows once it terminated.
        d.remove_manifest("vols.yaml")
        wait_until(
            lambda: not os.path.exists(os.path.join(d.root_dir, "pods", uid)),
            60,
            "the pod directory to be removed",
            daemon=d,
        )
        self.assertTrue(os.path.exists(os.path.join(host_dir, "out")), "a hostPath is never removed")


if __name__ == "__main__":
    daemon_lib.main("test_volumes.py")
