# SPDX-License-Identifier: Apache-2.0
"""The cubelet daemon end to end against a real containerd.

    python3 -B tests/integration/test_daemon.py <cubelet> [unittest args]

with KC_CONTAINERD_ENV naming the file containerd-setup.sh wrote (CTest sets
it; the fixture integration.setup starts containerd). Reuses the black-box
harness of tests/e2e (daemons with their own ports, manifest directory and
log; SIGTERM must exit 0 within 2 s at the end of every test).

What cubelet says is checked against containerd itself, through `ctr -n
k8s.io` (tasks and containers, by the io.kubernetes.pod.uid label), never
only through cubelet's own /pods:

- a host-network static pod (busybox `sleep 1000000`, imagePullPolicy
  IfNotPresent: there is no registry) runs: its sandbox and container tasks
  are RUNNING;
- `ctr tasks kill -s SIGKILL` of the container leads to a restart
  (restartCount 1, a new container id); a second kill to restartCount 2,
  and the container deletor removes the oldest dead container (one dead
  instance is kept);
- deleting the manifest stops every task of the pod and removes its
  containers;
- killing containerd (by its pid) makes /node's Ready condition report
  "container runtime is down" once --max-wait-for-container-runtime has
  passed; restarting it clears that (the node stays NotReady for the
  missing CNI network, as a kubelet's would) with the same containers, no
  duplicate sandbox and the pod listed once; meanwhile syncLoop skips its
  iterations with the back-off doubling from 100 ms;
- a frozen containerd (SIGSTOP: the socket accepts, nothing answers) is
  bounded by --runtime-request-timeout: relists keep failing with
  DEADLINE_EXCEEDED instead of hanging, /healthz keeps answering, and after
  SIGCONT the pod runs on unchanged;
- with --feature-gates=EventedPLEG=true, containerd 1.6 answers
  GetContainerEvents with UNIMPLEMENTED: cubelet falls back to relisting
  within seconds and runs pods normally (a killed container restarts);
  containerd 1.7 streams: cubelet stays on the stream (no fallback, no
  connection error) and the killed container restarts just the same.
"""

import os
import re
import signal
import sys
import time

import daemon_lib
from daemon_lib import cid_of

import harness  # noqa: E402  (tests/e2e, put on sys.path by daemon_lib)
from harness import condition, container_status, wait_until  # noqa: E402

# The runtime-status poller runs every 5 s: the threshold must exceed it.
MAX_WAIT_FOR_RUNTIME = "6s"


class DaemonOnContainerd(daemon_lib.ContainerdTestCase):
    def running_tasks(self, uid):
        tasks = self.ctrd.tasks()
        return {c for c in self.ctrd.containers(uid) if tasks.get(c) == "RUNNING"}

    def wait_restart_count(self, d, name, count, old_cid, timeout=60):
        def ok(p):
            cs = container_status(p, "app") or {}
            return (
                cs.get("restartCount") == count
                and "running" in (cs.get("state") or {})
                and cid_of(p) not in (None, old_cid)
            )

        return d.wait_pod(name, ok, timeout, f"app running again with restartCount {count}")

    # -- tests -------------------------------------------------------------

    def test_a_run_kill_restart_deletor(self):
        uid = self.new_uid("web")
        d = self.start("--crash-loop-back-off-initial-container-restart-period=1s", manifests={"web.yaml": self.host_pod("web", uid)})
        t0 = time.monotonic()
        p = d.wait_running("web", timeout=60)
        sys.stderr.write(f"integration: pod Running {time.monotonic() - t0:.2f} s after cubelet answered\n")
        cid1 = cid_of(p)
        self.assertIsNotNone(cid1, p)
        self.assertTrue(p["status"].get("hostIP"), p["status"])

        # containerd's own view: one sandbox and one container, both running.
        sandboxes = self.ctrd.containers(uid, "sandbox")
        self.assertEqual(len(sandboxes), 1, f"sandboxes of {uid}: {sandboxes}")
        self.assertEqual(self.ctrd.containers(uid, "container"), {cid1})
        self.assertEqual(self.running_tasks(uid), sandboxes | {cid1})

        # SIGKILL behind cubelet's back: restarted at once (first crash).
        self.ctrd.kill_task(cid1)
        p = self.wait_restart_count(d, "web", 1, cid1)
        cid2 = cid_of(p)
        cs = container_status(p, "app")
        self.assertEqual(cs["lastState"]["terminated"]["exitCode"], 137, cs)
        self.assertEqual(self.ctrd.tasks().get(cid2), "RUNNING")
        # One dead instance is kept (--maximum-dead-containers-per-container=1).
        self.assertEqual(self.ctrd.containers(uid, "container"), {cid1, cid2})
        self.assertEqual(self.ctrd.containers(uid, "sandbox"), sandboxes, "the sandbox was not recreated")

        # A second kill: restarted after the 1 s back-off; the deletor removes
        # the older dead container and keeps the newer one.
        self.ctrd.kill_task(cid2)
        p = self.wait_restart_count(d, "web", 2, cid2)
        cid3 = cid_of(p)
        wait_until(
            lambda: self.ctrd.containers(uid, "container") == {cid2, cid3},
            30,
            f"the deletor to remove {cid1[:12]} (keeping {cid2[:12]} and {cid3[:12]})",
            interval=0.2,
            daemon=d,
        )
        self.assertEqual(self.running_tasks(uid), sandboxes | {cid3})
        self.assertIn("Removed dead container", d.log())

    def test_b_manifest_delete_stops_and_removes(self):
        uid = self.new_uid("gone")
        d = self.start(manifests={"gone.yaml": self.host_pod("gone", uid)})
        p = d.wait_running("gone", timeout=60)
        cid = cid_of(p)
        sandboxes = self.ctrd.containers(uid, "sandbox")
        self.assertEqual(self.running_tasks(uid), sandboxes | {cid})

        d.remove_manifest("gone.yaml")
        wait_until(lambda: d.pod("gone") is None, 30, "the pod to leave /pods", daemon=d)
        wait_until(lambda: not self.running_tasks(uid), 30, "every task of the pod to stop", interval=0.2, daemon=d)
        wait_until(
            lambda: not self.ctrd.containers(uid, "container"),
            30,
            "the pod's containers to be removed from containerd",
            interval=0.2,
            daemon=d,
        )

    def test_c_runtime_down_and_back(self):
        uid = self.new_uid("survivor")
        d = self.start(
            f"--max-wait-for-container-runtime={MAX_WAIT_FOR_RUNTIME}",
            manifests={"survivor.yaml": self.host_pod("survivor", uid)},
        )
        p = d.wait_running("survivor", timeout=60)
        cid = cid_of(p)
        sandboxes = self.ctrd.containers(uid, "sandbox")
        self.assertEqual(len(sandboxes), 1)

        # Without CNI the node is NotReady anyway ("container runtime network
        # not ready"), as a kubelet's would be: only the runtime part of the
        # Ready condition's message is checked.
        def runtime_up():
            c = condition(d.get_json("/node"), "Ready") or {}
            return c and "container runtime is down" not in (c.get("message") or "") and c

        c = wait_until(runtime_up, 20, "/node without runtime errors", daemon=d)
        sys.stderr.write(f"integration: /node Ready before: {c}\n")

        offset = d.log_size()
        self.ctrd.kill(signal.SIGKILL)
        t_kill = time.monotonic()

        def runtime_down():
            c = condition(d.get_json("/node"), "Ready") or {}
            return c.get("status") == "False" and "container runtime is down" in (c.get("message") or "") and c

        c = wait_until(runtime_down, 30, '/node: Ready False, "container runtime is down"', interval=0.2, daemon=d)
        down_after = time.monotonic() - t_kill
        sys.stderr.write(f"integration: runtime down reported {down_after:.1f} s after containerd was killed: {c}\n")
        # Not before the threshold (6 s) minus one poll period (5 s).
        self.assertGreaterEqual(down_after, 0.5)
        # The containers run on without containerd (their shims survive).
        self.assertIsNotNone(d.pod("survivor"))

        # syncLoop backs off while runtimeErrors() is set: 100 ms doubling to 5 s.
        time.sleep(harness.scaled(4))
        skips = skip_times(d.log_since(offset))
        gaps = [b - a for a, b in zip(skips, skips[1:])]
        sys.stderr.write(f"integration: syncLoop skips {len(skips)}, gaps {['%.2f' % g for g in gaps]}\n")
        self.assertGreaterEqual(len(gaps), 4, "syncLoop did not back off repeatedly")
        for a, b in zip(gaps, gaps[1:]):
            self.assertGreater(b, a * 1.5, f"back-off did not double: {gaps}")
        self.assertLess(max(gaps), 5.5, f"back-off above its 5 s cap: {gaps}")

        self.ctrd.restart()
        t_back = time.monotonic()
        c = wait_until(runtime_up, 30, "/node without runtime errors again", interval=0.2, daemon=d)
        sys.stderr.write(
            f"integration: runtime up again {time.monotonic() - t_back:.1f} s after containerd restarted: {c}\n"
        )

        # Same sandbox and container, nothing duplicated, pod listed once.
        d.wait_running("survivor", timeout=30)
        time.sleep(harness.scaled(3))  # a few relists and syncs
        p = d.wait_running("survivor", timeout=30)
        self.assertEqual(cid_of(p), cid)
        self.assertEqual(container_status(p, "app").get("restartCount"), 0)
        self.assertEqual(self.ctrd.containers(uid, "sandbox"), sandboxes)
        self.assertEqual(self.ctrd.containers(uid, "container"), {cid})
        self.assertEqual(self.running_tasks(uid), sandboxes | {cid})
        names = [x["metadata"]["name"] for x in d.pods()]
        self.assertEqual(names.count(harness.full_name("survivor")), 1, names)


    def test_d_frozen_runtime_is_bounded(self):
        uid = self.new_uid("frozen")
        d = self.start(
            "--runtime-request-timeout=2s",
            manifests={"frozen.yaml": self.host_pod("frozen", uid)},
        )
        p = d.wait_running("frozen", timeout=60)
        cid = cid_of(p)
        offset = d.log_size()
        os.kill(self.ctrd.pid, signal.SIGSTOP)
        self.addCleanup(lambda: os.kill(self.ctrd.pid, signal.SIGCONT))
        t_stop = time.monotonic()

        # Each relist waits for its 2 s deadline, fails, and the next one comes:
        # nothing hangs with the runtime.
        def relists_failed():
            return len(re.findall(r"Unable to retrieve pods\" err=\"[^\"]*deadline exceeded",
                                  d.log_since(offset))) >= 3

        wait_until(relists_failed, 30, "3 relists failing on their deadline", daemon=d)
        sys.stderr.write(f"integration: 3 relists bounded by the deadline after {time.monotonic() - t_stop:.1f} s\n")
        status, _, body = d.request("GET", "/healthz")
        self.assertEqual((status, body), (200, b"ok"))

        os.kill(self.ctrd.pid, signal.SIGCONT)
        p = d.wait_running("frozen", timeout=30)
        time.sleep(harness.scaled(2))
        p = d.wait_running("frozen", timeout=30)
        self.assertEqual(cid_of(p), cid)
        self.assertEqual(container_status(p, "app").get("restartCount"), 0)
        self.assertEqual(self.running_tasks(uid), self.ctrd.containers(uid, "sandbox") | {cid})


    def test_e_evented_pleg_falls_back(self):
        uid = self.new_uid("evented")
        t0 = time.monotonic()
        d = self.start(
            "--feature-gates=EventedPLEG=true",
            manifests={"evented.yaml": self.host_pod("evented", uid)},
        )

        def fell_back():
            return "Fall back to Generic PLEG relisting" in d.log()

        streams = self.ctrd.env.get("KC_CONTAINERD_VERSION", "1.6") != "1.6"
        if streams:
            wait_until(lambda: "connected to the container events stream" in d.log(), 30, "the stream", daemon=d)
        else:
            wait_until(fell_back, 30, "the fallback to relisting", daemon=d)
            sys.stderr.write(f"integration: fell back to relisting {time.monotonic() - t0:.1f} s after start\n")
            self.assertIn("not implemented", d.log())
        p = d.wait_running("evented", timeout=60)
        cid = cid_of(p)
        # Relisting every second now: a container killed behind cubelet's back restarts.
        self.ctrd.kill_task(cid)
        self.wait_restart_count(d, "evented", 1, cid)
        metrics = d.request("GET", "/metrics")[2].decode()
        if streams:
            self.assertFalse(fell_back())
            self.assertRegex(metrics, r"kubelet_evented_pleg_connection_error_count 0\b")
        else:
            self.assertRegex(metrics, r"kubelet_evented_pleg_connection_error_count [5-9]")


KLOG_TIME = re.compile(r"^[IWEF]\d{4} (\d\d):(\d\d):(\d\d\.\d+) ", re.M)


def skip_times(log):
    """Seconds-of-day of syncLoop's "Skipping pod synchronization" lines."""
    out = []
    for line in log.splitlines():
        if "Skipping pod synchronization" in line:
            m = KLOG_TIME.match(line)
            if m:
                out.append(int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3)))
    return out


if __name__ == "__main__":
    daemon_lib.main("test_daemon.py")
