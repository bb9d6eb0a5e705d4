# SPDX-License-Identifier: Apache-2.0
"""e2e.volumes: the pod directories under --root-dir (issue 14).

- a static pod gets <root-dir>/pods/<uid> with volumes/ and plugins/
  (makePodDataDirs, mode 0750) before its containers start;
- once its manifest is gone and it has terminated, housekeeping removes
  the directory (cleanupOrphanedPodDirs); a pod that stays keeps its own;
- a directory under pods/ that belongs to no pod is removed too, without
  following a symlink out of it;
- a pod with a hostPath (DirectoryOrCreate) and an emptyDir runs: the host
  directory is made (0755), the emptyDir lies under
  pods/<uid>/volumes/kubernetes.io~empty-dir/<name> (0777), and goes with
  the pod while the hostPath stays;
- a pod mounting a configMap volume waits (D42): Pending, its container
  Waiting with reason ContainerCreating in /pods, and the log names the pod
  and the volume with upstream's "unmounted volumes=[...]" message; a pod
  beside it runs.
"""

import os
import stat

import harness
from harness import container, pod_manifest


class Volumes(harness.E2ETestCase):
    def test_pod_dirs_follow_the_pods(self):
        d = self.start_daemon(
            manifests={
                "web.yaml": pod_manifest("web", [container("web", ["sleep", "infinity"])]),
                "stay.yaml": pod_manifest("stay", [container("s", ["sleep", "infinity"])]),
            }
        )
        pods = os.path.join(d.root_dir, "pods")
        uids = {}
        for name in ("web", "stay"):
            p = d.wait_running(name, timeout=30)
            uids[name] = p["metadata"]["uid"]
            pod_dir = os.path.join(pods, uids[name])
            self.assertEqual(stat.S_IMODE(os.stat(pod_dir).st_mode), 0o750)
            for sub in ("volumes", "plugins"):
                self.assertTrue(os.path.isdir(os.path.join(pod_dir, sub)), sub)

        # A leftover directory of an unknown pod, with a symlink out of it.
        outside = os.path.join(d.workdir, "outside")
        os.makedirs(outside)
        with open(os.path.join(outside, "keep"), "w") as f:
            f.write("x")
        stale = os.path.join(pods, "stale-uid")
        os.makedirs(os.path.join(stale, "volumes"))
        os.symlink(outside, os.path.join(stale, "volumes", "link"))

        d.remove_manifest("web.yaml")
        harness.wait_until(
            lambda: not os.path.exists(os.path.join(pods, uids["web"])),
            harness.scaled(30),
            "the removed pod's directory to go",
            daemon=d,
        )
        harness.wait_until(lambda: not os.path.exists(stale), harness.scaled(30), "the stale directory to go", daemon=d)
        self.assertTrue(os.path.exists(os.path.join(outside, "keep")))
        self.assertTrue(os.path.isdir(os.path.join(pods, uids["stay"])))
        self.assertIsNone(d.pod("web"))

    def test_host_path_and_empty_dir(self):
        d = self.start_daemon()
        host = os.path.join(d.workdir, "host", "made")
        vols = [
            {"name": "host", "hostPath": {"path": host, "type": "DirectoryOrCreate"}},
            {"name": "cache", "emptyDir": {}},
        ]
        mounts = [{"name": "host", "mountPath": "/host"}, {"name": "cache", "mountPath": "/cache"}]
        d.write_manifest(
            "vol.yaml",
            pod_manifest("vol", [container("app", ["sleep", "infinity"], volumeMounts=mounts)], volumes=vols),
        )
        p = d.wait_running("vol", timeout=30)
        uid = p["metadata"]["uid"]
        self.assertTrue(os.path.isdir(host))
        self.assertEqual(stat.S_IMODE(os.stat(host).st_mode), 0o755)
        cache = os.path.join(d.root_dir, "pods", uid, "volumes", "kubernetes.io~empty-dir", "cache")
        self.assertEqual(stat.S_IMODE(os.stat(cache).st_mode), 0o777)
        self.assertEqual([v["name"] for v in p["spec"]["volumes"]], ["host", "cache"])

        d.remove_manifest("vol.yaml")
        harness.wait_until(
            lambda: not os.path.exists(os.path.join(d.root_dir, "pods", uid)),
            harness.scaled(30),
            "the pod directory to go",
            daemon=d,
        )
        self.assertTrue(os.path.isdir(host), "a hostPath stays")

    def test_api_volume_waits(self):
        mounts = [{"name": "cfg", "mountPath": "/etc/cfg"}]
        d = self.start_daemon(
            manifests={
                "cm.yaml": pod_manifest(
                    "cm",
                    [container("app", ["sleep", "infinity"], volumeMounts=mounts)],
                    volumes=[{"name": "cfg", "configMap": {"name": "settings"}}],
                ),
                "ok.yaml": pod_manifest("ok", [container("app", ["sleep", "infinity"])]),
            }
        )
        d.wait_running("ok", timeout=30)
        want = (
            "unmounted volumes=[cfg], unattached volumes=[], failed to process volumes=[]: "
            'MountVolume.SetUp failed for volume \\"cfg\\" : configMap volumes need the API server'
        )
        harness.wait_until(lambda: want in d.log(), harness.scaled(30), "the mount failure in the log", daemon=d)
        self.assertRegex(d.log(), r'"MountVolume.SetUp failed for volume" .*pod="default/cm-[^"]*".*volumeName="cfg"')
        p = d.pod("cm")
        self.assertEqual(p["status"]["phase"], "Pending")
        (cs,) = p["status"]["containerStatuses"]
        self.assertEqual(cs["state"], {"waiting": {"reason": "ContainerCreating"}}, cs)


if __name__ == "__main__":
    harness.main()
