# SPDX-License-Identifier: Apache-2.0
"""e2e.manifest_edit: editing and deleting manifests.

- A pod with metadata.uid set: changing one container's command is an
  UPDATE (same pod UID) whose spec hash changes for that container only,
  so that container is restarted (new containerID, restartCount 1) and the
  other keeps its containerID and restartCount 0.
- A pod without metadata.uid: any edit changes the UID derived from the
  content (upstream: REMOVE + ADD), so every container is new.
- Deleting a manifest terminates its pod: it leaves /pods, the
  running-containers gauge drops by its containers while the other pods
  keep theirs, and the log tells the story (a SyncLoop REMOVE, and the pod
  named after the delete).
"""

import time

import harness
from harness import container, pod_manifest

UID = "5a1b2c3d-0000-4000-8000-00000000e2e1"


def running_containers(d):
    s = harness.metric_samples(d.get_text("/metrics"))
    return s.get(("kubelet_running_containers", frozenset({("container_state", "running")})), 0.0)


def running_pods(d):
    s = harness.metric_samples(d.get_text("/metrics"))
    return s.get(("kubelet_running_pods", frozenset()), None)


def two(name, b_command, uid=None):
    return pod_manifest(
        name,
        [container("a", ["sleep", "infinity"]), container("b", b_command)],
        "Always",
        uid=uid,
    )


class ManifestEdit(harness.E2ETestCase):
    def test_update_with_uid_restarts_only_the_changed_container(self):
        d = self.start_daemon(manifests={"app.yaml": two("app", ["sleep", "infinity"], uid=UID)})
        before = d.wait_running("app")
        self.assertEqual(before["metadata"]["uid"], UID)
        ids = harness.container_ids(before)

        d.write_manifest("app.yaml", two("app", ["httpd", "-f", "-p", "8080"], uid=UID))

        def b_restarted(p):
            cs = harness.container_status(p, "b")
            return (
                cs is not None
                and cs.get("containerID") != ids["b"]
                and "running" in (cs.get("state") or {})
            )

        after = d.wait_pod("app", b_restarted, 30, "container b running under a new containerID")
        self.assertEqual(after["metadata"]["uid"], UID, "an edit with metadata.uid keeps the UID")
        self.assertEqual(harness.container_status(after, "b")["restartCount"], 1)
        # b's new spec is what the pod now carries.
        spec_b = [c for c in after["spec"]["containers"] if c["name"] == "b"][0]
        self.assertEqual(spec_b["command"], ["httpd", "-f", "-p", "8080"])

        # a was left alone, then and for the next 3 s (3 relists).
        for _ in range(2):
            p = d.wait_running("app", timeout=10)
            a = harness.container_status(p, "a")
            self.assertEqual(a["containerID"], ids["a"], "the unchanged container was restarted")
            self.assertEqual(a["restartCount"], 0)
            self.assertEqual(harness.container_status(p, "b")["containerID"],
                             harness.container_status(after, "b")["containerID"])
            time.sleep(3)

    def test_edit_without_uid_replaces_the_pod(self):
        d = self.start_daemon(manifests={"plain.yaml": two("plain", ["sleep", "infinity"])})
        before = d.wait_running("plain")
        old_uid = before["metadata"]["uid"]
        old_ids = harness.container_ids(before)

        d.write_manifest("plain.yaml", two("plain", ["sleep", "86400"]))
        after = d.wait_pod(
            "plain",
            lambda p: p["metadata"]["uid"] != old_uid
            and p["status"].get("phase") == "Running"
            and all("running" in (c.get("state") or {}) for c in p["status"].get("containerStatuses") or [])
            and len(p["status"].get("containerStatuses") or []) == 2,
            30,
            "a new UID, Running",
        )
        new_ids = harness.container_ids(after)
        self.assertTrue(set(new_ids.values()).isdisjoint(old_ids.values()), (old_ids, new_ids))
        # Exactly one pod by that name: the old UID is gone.
        same_name = [p for p in d.pods() if p["metadata"]["name"] == harness.full_name("plain")]
        self.assertEqual([p["metadata"]["uid"] for p in same_name], [after["metadata"]["uid"]])

    def test_delete_terminates_the_pod(self):
        d = self.start_daemon(
            manifests={
                "doomed.yaml": two("doomed", ["sleep", "infinity"]),
                "keeper.yaml": pod_manifest("keeper", [container("k", ["sleep", "infinity"])]),
            }
        )
        doomed = d.wait_running("doomed")
        keeper = d.wait_running("keeper")
        harness.wait_until(lambda: running_containers(d) == 3, 15,
                           "kubelet_running_containers{container_state=\"running\"} == 3", daemon=d)
        harness.wait_until(lambda: running_pods(d) == 2, 15, "kubelet_running_pods == 2", daemon=d)

        offset = d.log_size()
        d.remove_manifest("doomed.yaml")
        harness.wait_until(lambda: d.pod("doomed") is None, 30, "the deleted pod to leave /pods", daemon=d)
        # Its two containers (and its sandbox) stopped; the keeper's did not.
        harness.wait_until(lambda: running_containers(d) == 1, 15,
                           "kubelet_running_containers{container_state=\"running\"} == 1", daemon=d)
        harness.wait_until(lambda: running_pods(d) == 1, 15, "kubelet_running_pods == 1", daemon=d)
        k = d.wait_running("keeper", timeout=5)
        self.assertEqual(harness.container_ids(k), harness.container_ids(keeper))

        log = d.log_since(offset)
        self.assertIn("SyncLoop REMOVE", log)
        uid = doomed["metadata"]["uid"]
        self.assertTrue(
            harness.full_name("doomed") in log or uid in log,
            "the log after the delete never names the pod (by name or UID)",
        )


if __name__ == "__main__":
    harness.main()
