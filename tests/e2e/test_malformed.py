# SPDX-License-Identifier: Apache-2.0
"""e2e.malformed: a broken manifest hurts nobody.

Two good pods (one YAML, one JSON) run. Then:
1. a new file whose spec.containers[1] has no image: the log names the
   file and the field path `spec.containers[1].image`, no pod comes from
   it, and the good pods keep their containers (same containerIDs,
   restartCount 0, still Running);
2. a file that is not even YAML: the log names the file;
3. a good manifest edited into a broken one (containers[0].image
   removed): its pod keeps running as it was (issue 4: "the pod that file
   used to define keeps running"), and the log names that file;
4. that file fixed again (same content as before): the pod is still the
   same pod with the same containers.
"""

import time

import harness
from harness import container, pod_manifest


class Malformed(harness.E2ETestCase):
    def snapshot(self, d, names):
        out = {}
        for n in names:
            p = d.wait_running(n, timeout=30)
            out[n] = (p["metadata"]["uid"], harness.container_ids(p))
            for c in p["status"]["containerStatuses"]:
                self.assertEqual(c["restartCount"], 0, f"{n}/{c['name']}")
        return out

    def assert_untouched(self, d, snap, why):
        now = self.snapshot(d, list(snap))
        self.assertEqual(now, snap, f"good pods changed after {why}")

    def wait_log(self, d, offset, *needles, timeout=15):
        def found():
            text = d.log_since(offset)
            for line in text.splitlines():
                if all(n in line for n in needles):
                    return line
            return None

        return harness.wait_until(found, timeout, f"a log line with {needles}", daemon=d)

    def test_malformed_manifests(self):
        good1 = pod_manifest(
            "good1", [container("one", ["sleep", "infinity"]), container("two", ["sleep", "infinity"])]
        )
        good2 = pod_manifest("good2", [container("web", ["sleep", "infinity"])])
        d = self.start_daemon(manifests={"good1.yaml": good1, "good2.json": good2})
        snap = self.snapshot(d, ["good1", "good2"])
        n_pods = len(d.pods())
        self.assertEqual(n_pods, 2)

        # 1. spec.containers[1].image missing.
        off = d.log_size()
        broken = pod_manifest(
            "broken",
            [container("ok", ["sleep", "infinity"]), {"name": "noimage", "command": ["sleep", "infinity"]}],
        )
        d.write_manifest("broken.yaml", broken)
        line = self.wait_log(d, off, "broken.yaml", "spec.containers[1].image")
        self.assertRegex(line, r"^E\d{4} ", "a malformed manifest is an error-level line")
        time.sleep(2.5)  # two relists, several sync ticks
        self.assertIsNone(d.pod("broken"), "a pod came out of a malformed manifest")
        self.assertEqual(len(d.pods()), 2)
        self.assert_untouched(d, snap, "broken.yaml")

        # 2. Not YAML at all.
        off = d.log_size()
        d.write_manifest("garbage.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: [unclosed\n")
        self.wait_log(d, off, "garbage.yaml")
        time.sleep(1.5)
        self.assertEqual(len(d.pods()), 2)
        self.assert_untouched(d, snap, "garbage.yaml")

        # 3. A good file broken: its pod stays as it was.
        off = d.log_size()
        good2_broken = pod_manifest("good2", [{"name": "web", "command": ["sleep", "infinity"]}])
        d.write_manifest("good2.json", good2_broken)
        self.wait_log(d, off, "good2.json", "spec.containers[0].image")
        time.sleep(2.5)
        self.assertEqual(len(d.pods()), 2)
        self.assert_untouched(d, snap, "good2.json was broken")

        # 4. Fixed again with its old content: still the same pod.
        d.write_manifest("good2.json", good2)
        time.sleep(2.5)
        self.assert_untouched(d, snap, "good2.json was fixed")


if __name__ == "__main__":
    harness.main()
