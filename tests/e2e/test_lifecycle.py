# SPDX-License-Identifier: Apache-2.0
"""e2e.lifecycle: static pods from the manifest directory reach their phases.

- a web pod that runs forever (restartPolicy Always) is Running, its
  container running, started and ready, with upstream's conditions, IPs,
  start time, static-pod metadata and a sim:// container ID;
- a job that exits 0 (restartPolicy OnFailure), in YAML through
  `sh -c "exit 0"` and in JSON through `sleep 1`, reaches Succeeded with
  its container terminated, exitCode 0, reason Completed, and is not
  restarted;
- a pod whose image cannot be pulled stays Pending with its container
  waiting (ErrImagePull or ImagePullBackOff) and does not disturb the rest;
- every line cubelet writes to stderr has klog's header.
"""

import ipaddress
import time

import harness
from harness import container, pod_manifest


def parse_ip(s):
    try:
        return ipaddress.ip_address(s)
    except (TypeError, ValueError):
        return None


class Lifecycle(harness.E2ETestCase):
    def test_web_job_and_failed_pull(self):
        d = self.start_daemon(
            manifests={
                "web.yaml": pod_manifest("web", [container("web", ["sleep", "infinity"])], "Always"),
                "job.yaml": pod_manifest("job", [container("job", ["sh", "-c", "exit 0"])], "OnFailure"),
                "sleeper.json": pod_manifest("sleeper", [container("nap", ["sleep", "1"])], "OnFailure"),
                "nopull.yaml": pod_manifest(
                    "nopull", [container("c", ["sleep", "infinity"], image="example.com/doesnotexist:1")], "Always"
                ),
            }
        )

        # --- the web pod -------------------------------------------------
        web = d.wait_running("web", timeout=30)
        meta, spec, st = web["metadata"], web["spec"], web["status"]
        self.assertEqual(meta["name"], harness.full_name("web"))
        self.assertEqual(meta.get("namespace"), "default")
        self.assertTrue(meta.get("uid"), "a static pod gets a UID derived from its manifest")
        ann = meta.get("annotations") or {}
        self.assertEqual(ann.get("kubernetes.io/config.source"), "file", ann)
        self.assertTrue(ann.get("kubernetes.io/config.hash"), ann)
        self.assertTrue(ann.get("kubernetes.io/config.seen"), ann)
        self.assertEqual(spec.get("restartPolicy"), "Always")
        self.assertEqual([c["name"] for c in spec["containers"]], ["web"])

        (cs,) = st["containerStatuses"]
        self.assertEqual(cs["name"], "web")
        self.assertIn("running", cs["state"], cs)
        self.assertTrue(cs["state"]["running"].get("startedAt"), cs)
        self.assertIs(cs["ready"], True)
        self.assertIs(cs["started"], True)
        self.assertEqual(cs["restartCount"], 0)
        self.assertTrue(cs["containerID"].startswith("sim://"), cs["containerID"])
        self.assertIn("busybox", cs.get("image") or "", cs)
        for ctype in ("PodScheduled", "Initialized", "ContainersReady", "Ready"):
            cond = harness.condition(web, ctype)
            self.assertIsNotNone(cond, f"condition {ctype} missing: {st.get('conditions')}")
            self.assertEqual(cond["status"], "True", cond)
        self.assertIsNotNone(parse_ip(st.get("podIP")), f"podIP: {st.get('podIP')!r}")
        self.assertIsNotNone(parse_ip(st.get("hostIP")), f"hostIP: {st.get('hostIP')!r}")
        self.assertTrue(st.get("startTime"), "startTime")

        # --- the jobs ------------------------------------------------------
        def succeeded(p):
            return p["status"].get("phase") == "Succeeded"

        for name, cname in (("job", "job"), ("sleeper", "nap")):
            job = d.wait_pod(name, succeeded, 30, "phase Succeeded")
            self.assertEqual(job["spec"].get("restartPolicy"), "OnFailure")
            cs = harness.container_status(job, cname)
            self.assertIsNotNone(cs, job["status"])
            term = cs["state"].get("terminated")
            self.assertIsNotNone(term, f"{name}: container state {cs['state']}")
            self.assertEqual(term.get("exitCode"), 0, term)
            self.assertEqual(term.get("reason"), "Completed", term)
            self.assertTrue(term.get("containerID", cs["containerID"]).startswith("sim://"), cs)
            self.assertIs(cs["ready"], False)
            self.assertEqual(cs["restartCount"], 0)
            ready = harness.condition(job, "Ready")
            self.assertIsNotNone(ready)
            self.assertEqual(ready["status"], "False", ready)

        # A succeeded OnFailure pod is never restarted: watch it for 3 s
        # (3 relists and several sync ticks).
        first = d.pod("job")
        time.sleep(3)
        later = d.pod("job")
        self.assertEqual(later["status"]["phase"], "Succeeded")
        self.assertEqual(harness.container_ids(later), harness.container_ids(first))
        self.assertEqual(harness.container_status(later, "job")["restartCount"], 0)

        # --- the pod whose image cannot be pulled -----------------------------
        def pull_failed(p):
            cs = harness.container_status(p, "c")
            w = (cs or {}).get("state", {}).get("waiting") or {}
            return w.get("reason") in ("ErrImagePull", "ImagePullBackOff")

        nopull = d.wait_pod("nopull", pull_failed, 30, "container waiting with ErrImagePull or ImagePullBackOff")
        self.assertEqual(nopull["status"].get("phase"), "Pending", nopull["status"])
        self.assertIs(harness.container_status(nopull, "c")["ready"], False)
        # The web pod did not notice.
        web2 = d.wait_running("web", timeout=5)
        self.assertEqual(harness.container_ids(web2), harness.container_ids(web))

        # --- the log ---------------------------------------------------------
        bad = [
            ln
            for ln in d.log().splitlines()
            if ln.strip() and not ln.startswith("==== e2e harness") and not harness.KLOG_LINE.match(ln)
        ]
        self.assertEqual(bad[:5], [], "stderr lines without klog's header")
        # Every line in klog.InfoS form: "message" then key=value pairs, values quoted and escaped.
        unstructured = [
            ln
            for ln in d.log().splitlines()
            if harness.KLOG_LINE.match(ln) and not harness.KLOG_S_LINE.match(ln)
        ]
        self.assertEqual(unstructured[:5], [], "log lines not in klog.InfoS form")


if __name__ == "__main__":
    harness.main()
