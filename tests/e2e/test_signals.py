# SPDX-License-Identifier: Apache-2.0
"""e2e.signals: SIGTERM and SIGINT shut cubelet down gracefully.

Each case asserts exit status 0 within 2 s (under ASan a leak at exit
makes the status non-zero, so this also checks that everything was freed)
and that nothing was left listening:
- SIGTERM with pods running (a web pod, a crash-looping pod in its
  backoff, a finished job, 30 more web pods);
- SIGINT with the same pods;
- SIGTERM during start-up, before the daemon is ready;
- SIGTERM while a deleted pod's containers are being killed;
- SIGTERM with an HTTP client holding an idle connection open.
"""

import signal
import socket
import time

import harness
from harness import container, pod_manifest


def busy_manifests(extra=30):
    m = {
        "web.yaml": pod_manifest("web", [container("web", ["sleep", "infinity"])]),
        "crasher.yaml": pod_manifest("crasher", [container("c", ["sh", "-c", "exit 1"])]),
        "job.yaml": pod_manifest("job", [container("j", ["true"])], "OnFailure"),
    }
    for i in range(extra):
        m[f"w{i:02d}.yaml"] = pod_manifest(f"w{i:02d}", [container("c", ["sleep", "infinity"])])
    return m


class Signals(harness.E2ETestCase):
    def assert_ports_closed(self, d):
        for port in (d.port, d.healthz_port):
            with socket.socket() as s:
                s.settimeout(2)
                self.assertNotEqual(s.connect_ex(("127.0.0.1", port)), 0, f"port {port} still accepts")

    def busy_daemon(self):
        d = self.start_daemon(
            manifests=busy_manifests(),
            args=[
                "--crash-loop-back-off-initial-container-restart-period=1s",
                "--crash-loop-back-off-max-container-restart-period=2s",
            ],
            stop_check=False,
        )
        harness.wait_until(
            lambda: sum(p["status"].get("phase") == "Running" for p in d.pods()) >= 32,
            60,
            "32 pods Running",
            daemon=d,
        )
        d.wait_pod("crasher", lambda p: harness.container_status(p, "c") and
                   harness.container_status(p, "c").get("restartCount", 0) >= 1, 30, "a restart")
        return d

    def test_sigterm_with_pods(self):
        d = self.busy_daemon()
        self.stop_daemon(d, signal.SIGTERM)
        self.assert_ports_closed(d)

    def test_sigint_with_pods(self):
        d = self.busy_daemon()
        self.stop_daemon(d, signal.SIGINT)
        self.assert_ports_closed(d)

    def test_sigterm_during_startup(self):
        """SIGTERM at points of the start-up, from its first log line (a
        signal before the process got that far kills it with the default
        action, as it would any program) until about when it is ready."""
        for delay in (0.0, 0.02, 0.05, 0.2):
            with self.subTest(delay=delay):
                d = self.start_daemon(manifests=busy_manifests(5), wait_healthy=False, stop_check=False)
                harness.wait_until(lambda: d.log_size() > 0, 10, "the first log line", interval=0.002, daemon=d)
                time.sleep(delay)
                self.stop_daemon(d, signal.SIGTERM)

    def test_sigterm_while_killing(self):
        d = self.start_daemon(manifests=busy_manifests(10), stop_check=False)
        d.wait_running("w00")
        for i in range(10):
            d.remove_manifest(f"w{i:02d}.yaml")
        time.sleep(0.3)
        self.stop_daemon(d, signal.SIGTERM)

    def test_sigterm_with_idle_client(self):
        d = self.start_daemon(stop_check=False)
        with socket.create_connection(("127.0.0.1", d.port)) as idle, \
                socket.create_connection(("127.0.0.1", d.port)) as half:
            half.sendall(b"GET /pods HTTP/1.1\r\nHost: x\r\n")  # headers never finished
            time.sleep(0.2)
            self.stop_daemon(d, signal.SIGTERM)
            idle.settimeout(2)
            try:
                got = idle.recv(1)
            except ConnectionResetError:
                got = b""
            self.assertEqual(got, b"", "the idle connection was not closed")


if __name__ == "__main__":
    harness.main()
