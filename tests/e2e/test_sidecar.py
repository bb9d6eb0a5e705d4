# SPDX-License-Identifier: Apache-2.0
"""e2e.sidecar: sidecar init containers (restartPolicy Always, KEP-753) on the simulated runtime.

- a pod with a sidecar and an app that both run forever is Running; its
  initContainerStatuses show the sidecar running, started and ready, and
  the app runs beside it;
- a restartPolicy Never pod whose app exits 0 while its sidecar would run
  forever completes: phase Succeeded, the sidecar killed (terminated), the
  app terminated with exit code 0, and nothing is started again.
"""

import time

import harness
from harness import container, pod_manifest


class Sidecar(harness.E2ETestCase):
    def test_sidecar_beside_app_and_never_pod_completes(self):
        side = container("side", ["sleep", "infinity"], restartPolicy="Always")
        d = self.start_daemon(
            manifests={
                "web.yaml": pod_manifest(
                    "web", [container("app", ["sleep", "infinity"])], "Always", initContainers=[side]
                ),
                "job.yaml": pod_manifest(
                    "job", [container("job", ["sh", "-c", "exit 0"])], "Never", initContainers=[side]
                ),
            }
        )

        # --- a sidecar beside its app -----------------------------------------
        def both_running(p):
            ics = (p["status"].get("initContainerStatuses") or [{}])[0]
            cs = harness.container_status(p, "app") or {}
            return "running" in ics.get("state", {}) and "running" in cs.get("state", {})

        web = d.wait_pod("web", both_running, 30, "sidecar and app running")
        st = web["status"]
        self.assertEqual(st.get("phase"), "Running", st)
        (ics,) = st["initContainerStatuses"]
        self.assertEqual(ics["name"], "side")
        self.assertIs(ics["started"], True)
        self.assertIs(ics["ready"], True)
        self.assertEqual(ics["restartCount"], 0)
        self.assertEqual(web["spec"]["initContainers"][0].get("restartPolicy"), "Always")
        for ctype in ("Initialized", "ContainersReady", "Ready"):
            self.assertEqual(harness.condition(web, ctype)["status"], "True", st.get("conditions"))

        # --- a Never pod completes while its sidecar is killed ------------------
        def succeeded(p):
            return p["status"].get("phase") == "Succeeded"

        job = d.wait_pod("job", succeeded, 30, "phase Succeeded")
        (ics,) = job["status"]["initContainerStatuses"]
        self.assertIn("terminated", ics["state"], ics)
        self.assertIs(ics["ready"], False)
        term = harness.container_status(job, "job")["state"].get("terminated")
        self.assertIsNotNone(term, job["status"])
        self.assertEqual(term.get("exitCode"), 0, term)
        first = harness.container_ids(job)
        time.sleep(3)  # 3 relists: nothing restarts, the sidecar included
        later = d.pod("job")
        self.assertEqual(later["status"]["phase"], "Succeeded")
        self.assertEqual(harness.container_ids(later), first)
        self.assertEqual(later["status"]["initContainerStatuses"][0]["restartCount"], 0)


if __name__ == "__main__":
    harness.main()
