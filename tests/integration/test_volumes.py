# SPDX-License-Identifier: Apache-2.0
"""Volumes and mounts of static pods on a real containerd (issue 14, slice
i14v).

    python3 -B tests/integration/test_volumes.py <cubelet> [unittest args]

with KC_CONTAINERD_ENV naming the fixture's env file (CTest sets it). Every
check is made inside the container (`ctr tasks exec`) or on the host, never
only through cubelet's /pods:

- a file a container writes through a hostPath mount (type
  DirectoryOrCreate, a directory that did not exist) appears on the host;
- two containers share an emptyDir: one writes, the other reads the file;
  it lies under <root-dir>/pods/<uid>/volumes/kubernetes.io~empty-dir/;
- a readOnly hostPath mount refuses a write (and the host file is unchanged);
- a subPath mount shows only its subdirectory;
- the pod's /etc/hosts is the managed one (host network: the node's file
  under the kubelet's header, then the hostAliases);
- once the manifest is gone the pod's directory is removed.
"""

import os
import subprocess
import time

from daemon_lib import Containerd, cid_of, read_env, remove_pod_logs, remove_pod_logs_root_at_exit

import harness  # noqa: E402  (tests/e2e, put on sys.path by daemon_lib)
from harness import E2ETestCase, container, pod_manifest, wait_until  # noqa: E402

CTRD = None  # set in main()
SLEEP = ["sleep", "1000000"]


def app(name, command, mounts):
    return container(name, command, image=CTRD.image, imagePullPolicy="IfNotPresent", volumeMounts=mounts)


class VolumesOnContainerd(E2ETestCase):
    def setUp(self):
        if not CTRD.alive():
            CTRD.restart()
        self.uids = []
        self.addCleanup(self.cleanup_pods)

    def cleanup_pods(self):
        try:
            tasks = CTRD.tasks()
            for uid in self.uids:
                for cid in CTRD.containers(uid):
                    if tasks.get(cid) == "RUNNING":
                        CTRD.kill_task(cid)
        finally:
            remove_pod_logs(self.uids)

    def exec(self, cid, *argv):
        """Runs argv in container `cid`; returns (exit code, stdout)."""
        p = subprocess.run(
            ["ctr", "--address", CTRD.sock, "-n", "k8s.io", "tasks", "exec", "--exec-id", f"t{time.monotonic_ns()}", cid, *argv],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,
        )
        return p.returncode, p.stdout

    def test_host_path_empty_dir_read_only(self):
        uid = f"integ-vol-{os.getpid()}"
        self.uids.append(uid)
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
        writer = app(
            "app",
            ["sh", "-c", "echo hello > /host/out && echo shared > /cache/f && exec sleep 1000000"],
            [
                {"name": "host", "mountPath": "/host"},
                {"name": "cache", "mountPath": "/cache"},
                {"name": "ro", "mountPath": "/ro", "readOnly": True},
            ],
        )
        reader = app(
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
        )
        d = self.start_daemon(manifests={"vols.yaml": manifest}, args=[f"--container-runtime-endpoint={CTRD.endpoint}"])
        p = d.wait_running("vols", timeout=90)
        app_cid, reader_cid = cid_of(p, "app"), cid_of(p, "reader")

        # hostPath: the container's write shows on the host.
        wait_until(lambda: os.path.exists(os.path.join(host_dir, "out")), 30, "/host/out on the host", daemon=d)
        with open(os.path.join(host_dir, "out")) as f:
            self.assertEqual(f.read(), "hello\n")
        self.assertEqual(os.stat(host_dir).st_mode & 0o777, 0o755)

        # emptyDir: the other container reads what the first wrote.
        code, out = self.exec(reader_cid, "cat", "/data/f")
        self.assertEqual((code, out), (0, "shared\n"))
        on_disk = os.path.join(d.root_dir, "pods", uid, "volumes", "kubernetes.io~empty-dir", "cache", "f")
        self.assertTrue(os.path.exists(on_disk), on_disk)

        # readOnly: a write fails and the host file is unchanged.
        code, _ = self.exec(app_cid, "sh", "-c", "echo changed > /ro/keep")
        self.assertNotEqual(code, 0)
        with open(os.path.join(ro_dir, "keep")) as f:
            self.assertEqual(f.read(), "original\n")

        # subPath: only the subdirectory.
        self.assertEqual(self.exec(reader_cid, "cat", "/sub/inner"), (0, "inner\n"))
        self.assertNotEqual(self.exec(reader_cid, "cat", "/sub/keep")[0], 0)

        # /etc/hosts: the managed file (host network) with the alias.
        code, hosts = self.exec(app_cid, "cat", "/etc/hosts")
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


def main():
    global CTRD
    CTRD = Containerd(read_env("test_volumes.py"))
    if not CTRD.alive():
        raise SystemExit(f"test_volumes.py: containerd pid {CTRD.pid} is not running: did integration.setup fail?")
    remove_pod_logs_root_at_exit()
    harness.main()


if __name__ == "__main__":
    main()
