# SPDX-License-Identifier: Apache-2.0
"""e2e.probes: the prober manager on the simulated runtime (issue 15).

Exec probes run through the sim's ExecSync, which sees the files the
container's own shell creates:
- readiness: a container that creates /tmp/ready after 8 s is running but
  not ready (ready false, Ready and ContainersReady False "containers with
  unready status: [app]") until the file exists, then ready with both
  conditions True;
- startup gating: until /tmp/started exists the container is neither
  started nor ready although its readiness and liveness probes would
  succeed; then started, ready;
- liveness: a container whose /tmp/healthy disappears after 2 s fails its
  liveness probe (failureThreshold 1), is killed with "Container app failed
  liveness probe, will be restarted" and restarted (restartCount >= 1,
  lastState terminated);
- /metrics has prober_probe_total{probe_type,result,container,pod,namespace,
  pod_uid} and prober_probe_duration_seconds for the probed containers.
"""

import harness
from harness import container, pod_manifest


def exec_probe(command, **extra):
    p = {"exec": {"command": list(command)}, "periodSeconds": 1}
    p.update(extra)
    return p


def cs_of(pod):
    return harness.container_status(pod, "app") or {}


def running(pod):
    return pod["status"].get("phase") == "Running" and "running" in (cs_of(pod).get("state") or {})


def cond_status(pod, ctype):
    return (harness.condition(pod, ctype) or {}).get("status")


class Probes(harness.E2ETestCase):
    def test_readiness_and_startup(self):
        ready = container(
            "app",
            ["sh", "-c", "sleep 8; touch /tmp/ready; sleep 3600"],
            readinessProbe=exec_probe(["cat", "/tmp/ready"]),
        )
        gated = container(
            "app",
            ["sh", "-c", "sleep 8; touch /tmp/started; sleep 3600"],
            startupProbe=exec_probe(["test", "-f", "/tmp/started"], failureThreshold=30),
            readinessProbe=exec_probe(["true"]),
            livenessProbe=exec_probe(["true"]),
        )
        d = self.start_daemon(
            manifests={
                "ready.yaml": pod_manifest("ready", [ready]),
                "gated.yaml": pod_manifest("gated", [gated]),
            }
        )
        p = d.wait_pod("ready", running, harness.scaled(20), "Running")
        self.assertFalse(cs_of(p).get("ready"), p["status"])
        self.assertTrue(cs_of(p).get("started"), p["status"])
        for ctype in ("Ready", "ContainersReady"):
            c = harness.condition(p, ctype)
            self.assertEqual(c.get("status"), "False", p["status"])
            self.assertEqual(c.get("message"), "containers with unready status: [app]", p["status"])

        p = d.wait_pod("gated", running, harness.scaled(20), "Running")
        self.assertFalse(cs_of(p).get("started"), p["status"])
        self.assertFalse(cs_of(p).get("ready"), p["status"])

        p = d.wait_pod("ready", lambda p: cs_of(p).get("ready"), harness.scaled(20), "ready")
        self.assertEqual(cond_status(p, "Ready"), "True", p["status"])
        self.assertEqual(cond_status(p, "ContainersReady"), "True", p["status"])
        self.assertEqual(cs_of(p).get("restartCount"), 0, p["status"])

        p = d.wait_pod("gated", lambda p: cs_of(p).get("ready"), harness.scaled(20), "started and ready")
        self.assertTrue(cs_of(p).get("started"), p["status"])
        self.assertEqual(cond_status(p, "Ready"), "True", p["status"])

        samples = harness.metric_samples(d.get_text("/metrics"))
        uid = p["metadata"]["uid"]
        key = (
            "prober_probe_total",
            frozenset(
                {
                    "probe_type": "Startup",
                    "result": "successful",
                    "container": "app",
                    "pod": p["metadata"]["name"],
                    "namespace": p["metadata"]["namespace"],
                    "pod_uid": uid,
                }.items()
            ),
        )
        self.assertGreaterEqual(samples.get(key, 0), 1, sorted(k for k in samples if k[0].startswith("prober")))
        self.assertTrue(any(k[0] == "prober_probe_duration_seconds_count" for k in samples))

    def test_liveness_restart(self):
        live = container(
            "app",
            ["sh", "-c", "touch /tmp/healthy; sleep 2; rm /tmp/healthy; sleep 3600"],
            livenessProbe=exec_probe(["cat", "/tmp/healthy"], failureThreshold=1, terminationGracePeriodSeconds=1),
        )
        d = self.start_daemon(manifests={"live.yaml": pod_manifest("live", [live])})
        p = d.wait_pod(
            "live",
            lambda p: cs_of(p).get("restartCount", 0) >= 1 and "running" in (cs_of(p).get("state") or {}),
            harness.scaled(30),
            "restarted after a liveness failure",
        )
        last = (cs_of(p).get("lastState") or {}).get("terminated")
        self.assertTrue(last, p["status"])
        self.assertIn("Container app failed liveness probe, will be restarted", d.log())


if __name__ == "__main__":
    harness.main()
