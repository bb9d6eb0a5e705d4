# SPDX-License-Identifier: Apache-2.0
"""e2e.volumes: the pod directories under --root-dir (issue 14).

- a static pod gets <root-dir>/pods/<uid> with volumes/ and plugins/
  (makePodDataDirs, mode 0750) before its containers start;
- once its manifest is gone and it has terminated, housekeeping removes
  the directory (cleanupOrphanedPodDirs); a pod that stays keeps its own;
- a directory under pods/ that belongs to no pod is removed too, without
  following a symlink out of it.
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


if __name__ == "__main__":
    harness.main()
