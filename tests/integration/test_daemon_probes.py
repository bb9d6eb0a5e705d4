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

import os
import socket
import time

import daemon_lib
from daemon_lib import Containerd, cid_of, read_env, remove_pod_logs, remove_pod_logs_root_at_exit

import harness  # noqa: E402  (tests/e2e, put on sys.path by daemon_lib)
from harness import E2ETestCase, condition, container, container_status, pod_manifest  # noqa: E402

CTRD = None  # set in main()


def free_port():
    """A TCP port nothing listens on now (the kernel's pick, released)."""
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def host_pod(name, uid, command, **probes):
    return pod_manifest(
        name,
        [container("app", list(command), image=CTRD.image, imagePullPolicy="IfNotPresent", **probes)],
        uid=uid,
        hostNetwork=True,
        terminationGracePeriodSeconds=1,
    )


def cs_of(pod):
    return container_status(pod, "app") or {}


def running(pod):
    return "running" in (cs_of(pod).get("state") or {})


class ProbesOnContainerd(E2ETestCase):
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

    def new_uid(self, tag):
        uid = f"integ-{tag}-{os.getpid()}-{int(time.monotonic() * 1000) % 100000}"
        self.uids.append(uid)
        return uid

    def exec_in(self, cid, script):
        CTRD.ctr("tasks", "exec", "--exec-id", f"probe-{int(time.monotonic() * 1000)}", cid, "sh", "-c", script)

    def test_probes_drive_ready_and_restarts(self):
        http_port, tcp_port = free_port(), free_port()
        web = self.new_uid("web")
        live = self.new_uid("live")
        tcp = self.new_uid("tcp")
        manifests = {
            "web.yaml": host_pod(
                "web",
                web,
                ["sh", "-c", f"mkdir -p /www && exec httpd -f -p {http_port} -h /www"],
                readinessProbe={"httpGet": {"path": "/ready", "port": http_port}, "periodSeconds": 1},
            ),
            "live.yaml": host_pod(
                "live",
                live,
                ["sh", "-c", "touch /tmp/alive; exec sleep 1000000"],
                livenessProbe={
                    "exec": {"command": ["test", "-f", "/tmp/alive"]},
                    "periodSeconds": 1,
                    "failureThreshold": 1,
                },
            ),
            "tcp.yaml": host_pod(
                "tcp",
                tcp,
                ["nc", "-ll", "-p", str(tcp_port), "-e", "/bin/true"],
                livenessProbe={"tcpSocket": {"port": tcp_port}, "periodSeconds": 1, "failureThreshold": 1},
                readinessProbe={"tcpSocket": {"port": tcp_port}, "periodSeconds": 1},
            ),
        }
        d = self.start_daemon(manifests=manifests, args=[f"--container-runtime-endpoint={CTRD.endpoint}"])

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
        self.assertIn(cid_of(p), CTRD.containers(live))
        self.assertEqual(CTRD.tasks().get(cid_of(p)), "RUNNING")
        self.assertIn("Container app failed liveness probe, will be restarted", d.log())

        # tcpSocket on nc: ready and never restarted.
        p = d.wait_pod("tcp", lambda p: cs_of(p).get("ready"), harness.scaled(30), "tcp ready")
        time.sleep(3)
        p = d.pod("tcp")
        self.assertTrue(cs_of(p).get("ready"), p["status"])
        self.assertEqual(cs_of(p).get("restartCount"), 0, p["status"])
        # The restarted live container stays up (its new /tmp/alive).
        self.assertEqual(cs_of(d.pod("live")).get("restartCount"), 1)


def main():
    global CTRD
    CTRD = Containerd(read_env("test_daemon_probes.py"))
    if not CTRD.alive():
        raise SystemExit(f"test_daemon_probes.py: containerd pid {CTRD.pid} is not running: did integration.setup fail?")
    remove_pod_logs_root_at_exit()
    harness.main()


if __name__ == "__main__":
    main()
