# SPDX-License-Identifier: Apache-2.0
"""e2e.file_source: the manifest directory as upstream's file source reads it.

- inotify: with the default --file-check-frequency (20 s), a manifest
  added to the watched directory is listed in /pods within 3 s, and one
  removed leaves it within 5 s;
- the periodic rescan: a --pod-manifest-path that does not exist at start
  and appears later (inotify cannot watch it) is picked up on the next
  --file-check-frequency=1s rescan;
- dotfiles and subdirectories are ignored (upstream does not recurse);
- two files defining the same pod name: upstream's filterInvalidPods keeps
  the first (files are read in name order) and ignores the duplicate, so
  exactly one pod of that name is listed, running the first file's spec.
"""

import os
import time

import harness
from harness import container, pod_manifest


def names(d):
    return sorted(p["metadata"]["name"] for p in d.pods())


class FileSource(harness.E2ETestCase):
    def test_inotify_add_and_remove(self):
        d = self.start_daemon(manifests={"a.yaml": pod_manifest("a", [container("c", ["sleep", "infinity"])])})
        d.wait_running("a")
        t0 = time.monotonic()
        d.write_manifest("b.yaml", pod_manifest("b", [container("c", ["sleep", "infinity"])]))
        d.wait_pod("b", lambda p: True, 3, "listed within 3 s of its manifest appearing (inotify)")
        print(f"\nnew manifest listed after {time.monotonic() - t0:.2f} s")
        t0 = time.monotonic()
        d.remove_manifest("b.yaml")
        harness.wait_until(lambda: d.pod("b") is None, 5, "pod b gone within 5 s of its manifest", daemon=d)
        print(f"removed manifest's pod gone after {time.monotonic() - t0:.2f} s")

    def test_missing_directory_then_created(self):
        d = harness.Daemon(harness.BINARY, self.workdir(), args=["--file-check-frequency=1s"])
        self._daemons.append(d)
        os.rmdir(d.manifest_dir)
        self.addCleanup(self.stop_daemon, d)
        d.start()
        time.sleep(1.5)
        self.assertEqual(d.pods(), [])
        os.makedirs(d.manifest_dir)
        d.write_manifest("late.yaml", pod_manifest("late", [container("c", ["sleep", "infinity"])]))
        d.wait_running("late", timeout=10)

    def test_ignored_entries_and_duplicates(self):
        d = self.start_daemon(
            manifests={
                "a-first.yaml": pod_manifest("dup", [container("c", ["sleep", "infinity"])]),
                "b-second.yaml": pod_manifest("dup", [container("c", ["sleep", "86400"])]),
                "plain.yaml": pod_manifest("plain", [container("c", ["sleep", "infinity"])]),
            }
        )
        sub = os.path.join(d.manifest_dir, "sub")
        os.makedirs(sub)
        with open(os.path.join(sub, "nested.yaml"), "w") as f:
            f.write(harness.to_yaml(pod_manifest("nested", [container("c", ["sleep", "infinity"])])) + "\n")
        with open(os.path.join(d.manifest_dir, ".hidden.yaml"), "w") as f:
            f.write(harness.to_yaml(pod_manifest("hidden", [container("c", ["sleep", "infinity"])])) + "\n")
        d.wait_running("plain")
        harness.wait_until(
            lambda: any(p["metadata"]["name"] == harness.full_name("dup") and p["status"].get("phase") == "Running"
                        for p in d.pods()),
            30, "a pod named dup Running", daemon=d)
        time.sleep(3)  # three relists: anything that was going to appear has
        listed = [(p["metadata"]["name"], p["status"].get("phase"), p["spec"]["containers"][0]["command"])
                  for p in d.pods()]
        self.assertEqual(sorted(n for n, _, _ in listed), [harness.full_name("dup"), harness.full_name("plain")],
                         f"want exactly one pod per name, none from dotfiles or subdirectories: {listed}")
        dup = d.wait_running("dup")
        self.assertEqual(dup["spec"]["containers"][0]["command"], ["sleep", "infinity"],
                         "the first file (in name order) defines the pod")


if __name__ == "__main__":
    harness.main()
