# SPDX-License-Identifier: Apache-2.0
"""integration.daemon_probes: the cubelet daemon's probes against real
containers in containerd (issue 15).

    python3 -B tests/integration/test_daemon_probes.py <cubelet> [unittest args]

with KC_CONTAINERD_ENV naming the file containerd-setup.sh wrote (CTest sets
it). Host-network static pods on the imported busybox image (their pod IP
is the node's, which the probes dial when no host is set):

- readiness httpGet on busybox httpd: the container runs but is not ready
  (404) until an exec (`ctr tasks exec`) writes the file httpd serves; then
  containerStatuses[].ready and the Ready condition turn true;
- liveness exec: once an exec removes /tmp/alive, `test -f /tmp/alive`
  fails (failureThreshold 1), the container is killed with upstream's
  message and restarted by the restart policy: restartCount 1, a new
  container id in containerd, running again;
- tcpSocket on busybox `nc -ll` as liveness and readiness: ready, never
  restarted.
"""

import socket
import time

import daemon_lib
from daemon_lib import cid_of

import harness  # noqa: E402  (tests/e2e, put on sys.path by daemon_lib)
from harness import condition, container_status  # noqa: E402


def free_port():
    """A TCP port nothing listens on now, on any address (the kernel's pick, released)."""
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def cs_of(pod):
    return container_status(pod, "app") or {}


def running(pod):
    return "running" in (cs_of(pod).get("state") or {})


class ProbesOnContainerd(daemon_lib.ContainerdTestCase):
    def exec_in(self, cid, script):
        code, out = self.ctrd.exec(cid, "sh", "-c", script)
        self.assertEqual(code, 0, f"exec {script!r} in {cid}: {out}")

    def test_probes_drive_ready_and_restarts(self):
        http_port, tcp_port = free_port(), free_port()
        web = self.new_uid("web")
        live = self.new_uid("live")
        tcp = self.new_uid("tcp")
        manifests = {
            "web.yaml": self.host_pod(
                "web",
                web,
                ["sh", "-c", f"mkdir -p /www && exec httpd -f -p {http_port} -h /www"],
                readinessProbe={"httpGet": {"path": "/ready", "port": http_port}, "periodSeconds": 1},
            ),
            "live.yaml": self.host_pod(
                "live",
                live,
                ["sh", "-c", "touch /tmp/alive; exec sleep 1000000"],
                livenessProbe={
                    "exec": {"command": ["test", "-f", "/tmp/alive"]},
                    "periodSeconds": 1,
                    "failureThreshold": 1,
                },
            ),
            "tcp.yaml": self.host_pod(
                "tcp",
                tcp,
                ["nc", "-ll", "-p", str(tcp_port), "-e", "/bin/true"],
                livenessProbe={"tcpSocket": {"port": tcp_port}, "periodSeconds": 1, "failureThreshold": 1},
                readinessProbe={"tcpSocket": {"port": tcp_port}, "periodSeconds": 1},
            ),
        }
        d = self.start(manifests=manifests)

        # readiness: running, probed (404), not ready, for a few periods.
        p = d.wait_pod("web", running, harness.scaled(30), "web running")
        time.sleep(3)
        p = d.pod("web")
        self.assertFalse(cs_of(p).get("ready"), p["status"])
        self.assertEqual((condition(p, "Ready") or {}).get("status"), "False", p["status"])
        self.exec_in(cid_of(p), "echo ok > /www/ready")
        p = d.wait_pod("web", lambda p: cs_of(p).get("ready"), harness.scaled(20), "web ready")
        self.assertEqual((condition(p, "Ready") or {}).get("status"), "True", p["status"])
        self.assertEqual(cs_of(p).get("restartCount"), 0, p["status"])

        # liveness: the file goes, the container is killed and restarted.
        p = d.wait_pod("live", running, harness.scaled(30), "live running")
        old = cid_of(p)
        time.sleep(2)
        self.assertEqual(cs_of(d.pod("live")).get("restartCount"), 0)
        self.exec_in(old, "rm /tmp/alive")
        p = d.wait_pod(
            "live",
            lambda p: cs_of(p).get("restartCount") == 1 and running(p) and cid_of(p) not in (None, old),
            harness.scaled(30),
            "live restarted once",
        )
        self.assertIn(cid_of(p), self.ctrd.containers(live))
        self.assertEqual(self.ctrd.tasks().get(cid_of(p)), "RUNNING")
        self.assertIn("Container app failed liveness probe, will be restarted", d.log())

        # tcpSocket on nc: ready and never restarted.
        p = d.wait_pod("tcp", lambda p: cs_of(p).get("ready"), harness.scaled(30), "tcp ready")
        time.sleep(3)
        p = d.pod("tcp")
        self.assertTrue(cs_of(p).get("ready"), p["status"])
        self.assertEqual(cs_of(p).get("restartCount"), 0, p["status"])
        # The restarted live container stays up (its new /tmp/alive).
        self.assertEqual(cs_of(d.pod("live")).get("restartCount"), 1)


if __name__ == "__main__":
    daemon_lib.main("test_daemon_probes.py")
