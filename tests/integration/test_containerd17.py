# SPDX-License-Identifier: Apache-2.0
"""cubelet on containerd 1.7 with CNI pod networking (issue 16).

    python3 -B tests/integration/test_containerd17.py <cubelet> [unittest args]

with KC_CONTAINERD_ENV naming the file containerd-setup.sh wrote with
KC_CONTAINERD_VERSION=1.7 (CTest: fixture integration17.setup). Fails, never
skips, when that containerd is not a 1.7 with CNI.

- test_a: a pod with its own network runs, status.podIP and podIPs are an
  address of the harness's 198.51.100.0/24 range, /node is Ready=True;
- test_b: with EventedPLEG the daemon stays on the stream (no fallback,
  kubelet_evented_pleg_connection_error_count 0); a killed container is
  restarted; kubelet_running_pods and kubelet_running_containers follow
  (no negative gauge); a removed pod's sandbox DELETED event (which 1.7
  sends without a sandbox status) logs no error and the container GC
  removes its /var/log/pods directory; SIGTERM logs no error (D30);
- test_c: cubelet restarted against the running containerd: the old
  server-side stream takes the next event, and the catch-up relists (D31)
  still see the next container death within seconds (before: 289 s);
- test_d: containerd 1.7's GetContainerEvents itself, through raw gRPC
  streams (curl): events nobody received are delivered late to the next
  subscriber; two subscribers split the events (none gets one twice); a
  stream whose client went away takes the next event with it.
"""

import ipaddress
import os
import re
import subprocess
import sys
import threading
import time

import cri_raw
from cri_raw import grpc_frame, pb_bytes, pb_fields
from daemon_lib import POD_LOGS_ROOT, Containerd, cid_of, read_env, remove_pod_logs_root_at_exit

import harness  # noqa: E402  (tests/e2e, put on sys.path by daemon_lib)
from harness import E2ETestCase, condition, container, container_status, pod_manifest, wait_until  # noqa: E402

CTRD = None  # set in main()
ENV = None


def net_pod(name, uid, command=("sleep", "1000000")):
    """A static pod with its own network (CNI) and one container "app"."""
    return pod_manifest(
        name,
        [container("app", list(command), image=CTRD.image, imagePullPolicy="IfNotPresent")],
        uid=uid,
        terminationGracePeriodSeconds=1,
    )


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def metrics(d):
    """{(sample name, frozenset(labels)): value} of /metrics."""
    out = {}
    for line in d.get_text("/metrics").splitlines():
        m = SAMPLE.match(line)
        if m:
            out[(m.group(1), frozenset(LABEL.findall(m.group(2) or "")))] = float(m.group(3))
    return out


def gauge(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())))


def connection_errors(d):
    return gauge(metrics(d), "kubelet_evented_pleg_connection_error_count")


def error_lines(text):
    """Error lines, less syncLoop's start-up "Skipping pod synchronization"
    (logged at error level as upstream does, until PLEG's first relist and
    the first runtime Status)."""
    return [line for line in text.splitlines() if line.startswith("E") and "Skipping pod synchronization" not in line]


# --- raw CRI over HTTP/2 (curl), protobuf by hand (cri_raw.py) -------------


def curl_argv(method, body_path):
    return cri_raw.curl_argv(CTRD.sock, method, body_path)


def cri_unary(tmp, method, msg):
    return cri_raw.cri_unary(CTRD.sock, tmp, method, msg)


EVENT_TYPES = {0: "CREATED", 1: "STARTED", 2: "STOPPED", 3: "DELETED"}


class EventStream:
    """One GetContainerEvents subscriber: a curl process whose output (gRPC
    frames of ContainerEventResponse) a thread decodes into
    (container_id, type, created_at) tuples."""

    def __init__(self, tmp, tag):
        path = os.path.join(tmp, f"events-{tag}")
        with open(path, "wb") as f:
            f.write(grpc_frame(b""))
        self.opened_ns = time.time_ns()
        self.proc = subprocess.Popen(curl_argv("GetContainerEvents", path), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.events = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        f = self.proc.stdout
        while True:
            hdr = f.read(5)
            if len(hdr) < 5:
                return
            msg = f.read(int.from_bytes(hdr[1:5], "big"))
            ev = {1: "", 2: 0, 3: 0}
            for field, _, v in pb_fields(msg):
                if field in ev:
                    ev[field] = v.decode() if field == 1 else v
            with self.lock:
                self.events.append((ev[1], EVENT_TYPES.get(ev[2], ev[2]), ev[3]))

    def got(self):
        with self.lock:
            return list(self.events)

    def kill(self):
        """The client goes away without a word (as a SIGKILLed cubelet)."""
        self.proc.kill()
        self.proc.wait()


def wait_quiet(streams, quiet=1.5, limit=20):
    """Waits until no stream received anything for `quiet` seconds."""
    last, n, t0 = time.monotonic(), -1, time.monotonic()
    while time.monotonic() - t0 < limit:
        m = sum(len(s.got()) for s in streams)
        if m != n:
            n, last = m, time.monotonic()
        elif time.monotonic() - last >= quiet:
            return
        time.sleep(0.1)


class Sandbox:
    """A pod sandbox made and removed with raw CRI calls."""

    def __init__(self, tmp, name):
        self.tmp = tmp
        uid = f"c17-{name}-{os.getpid()}"
        meta = pb_bytes(1, name) + pb_bytes(2, uid) + pb_bytes(3, "default") + bytes([0x20, 0])
        config = pb_bytes(1, meta) + pb_bytes(8, b"")
        resp = cri_unary(tmp, "RunPodSandbox", pb_bytes(1, config))
        self.id = next(v.decode() for f, _, v in pb_fields(resp) if f == 1)

    def remove(self):
        cri_unary(self.tmp, "StopPodSandbox", pb_bytes(1, self.id))
        cri_unary(self.tmp, "RemovePodSandbox", pb_bytes(1, self.id))


class OnContainerd17(E2ETestCase):
    def setUp(self):
        self.uids = []
        self.addCleanup(self.cleanup_pods)

    def cleanup_pods(self):
        CTRD.stop_pods(self.uids)

    def new_uid(self, tag):
        uid = f"c17-{tag}-{os.getpid()}-{int(time.monotonic() * 1000) % 100000}"
        self.uids.append(uid)
        return uid

    def start(self, *extra, manifests=None):
        return self.start_daemon(manifests=manifests, args=[f"--container-runtime-endpoint={CTRD.endpoint}", *extra])

    def assert_pod_ip(self, p):
        st = p.get("status", {})
        cidr = ipaddress.ip_network(ENV["KC_CONTAINERD_POD_CIDR"])
        self.assertIn(ipaddress.ip_address(st.get("podIP")), cidr, st)
        self.assertEqual([x.get("ip") for x in st.get("podIPs") or []], [st.get("podIP")], st)

    def wait_restarted(self, d, name, old_cid, count, timeout):
        def ok(p):
            cs = container_status(p, "app") or {}
            return cs.get("restartCount") == count and "running" in (cs.get("state") or {}) and cid_of(p) not in (None, old_cid)

        return d.wait_pod(name, ok, timeout, f"{name}: app running again with restartCount {count}")

    # -- tests -------------------------------------------------------------

    def test_a_pod_network_and_node_ready(self):
        uid = self.new_uid("net")
        d = self.start(manifests={"net.yaml": net_pod("net", uid)})
        p = d.wait_running("net", timeout=60)
        self.assert_pod_ip(p)
        self.assertEqual(len(CTRD.containers(uid, "sandbox")), 1)
        ready = wait_until(
            lambda: (lambda c: c if c.get("status") == "True" else None)(condition(d.get_json("/node"), "Ready") or {}),
            20, "/node Ready=True", daemon=d,
        )
        sys.stderr.write(f"integration17: podIP {p['status']['podIP']}, /node Ready: {ready.get('message')}\n")

    def test_b_evented_pleg_on_the_stream(self):
        u1, u2 = self.new_uid("ev1"), self.new_uid("ev2")
        d = self.start(
            "--feature-gates=EventedPLEG=true",
            manifests={"ev1.yaml": net_pod("ev1", u1), "ev2.yaml": net_pod("ev2", u2)},
        )
        p1 = d.wait_running("ev1", timeout=60)
        self.assert_pod_ip(d.wait_running("ev2", timeout=60))

        def counts(pods, running):
            m = metrics(d)
            ok = gauge(m, "kubelet_running_pods") == pods and gauge(m, "kubelet_running_containers", container_state="running") == running
            return m if ok else None

        wait_until(lambda: counts(2, 2), 20, "kubelet_running_pods 2, running containers 2", daemon=d)

        cid = cid_of(p1)
        t0 = time.monotonic()
        CTRD.kill_task(cid)
        self.wait_restarted(d, "ev1", cid, 1, 30)
        sys.stderr.write(f"integration17: killed container running again after {time.monotonic() - t0:.2f} s\n")
        wait_until(lambda: counts(2, 2), 20, "running pods and containers 2 after the restart", daemon=d)

        log_dir = [x for x in os.listdir(POD_LOGS_ROOT) if x.endswith("_" + u2)]
        self.assertEqual(len(log_dir), 1, os.listdir(POD_LOGS_ROOT))
        d.remove_manifest("ev2.yaml")
        wait_until(lambda: d.pod("ev2") is None, 30, "ev2 gone from /pods", daemon=d)
        wait_until(lambda: not CTRD.containers(u2), 90, "ev2's sandbox removed by the container GC", daemon=d)
        m = wait_until(lambda: counts(1, 1), 20, "running pods and containers 1 after the removal", daemon=d)
        for (name, labels), v in m.items():
            if name == "kubelet_running_containers":
                self.assertGreaterEqual(v, 0, f"{name}{dict(labels)}")
        wait_until(lambda: not os.path.exists(os.path.join(POD_LOGS_ROOT, log_dir[0])), 90, f"{log_dir[0]} removed", daemon=d)
        self.assertEqual(connection_errors(d), 0)
        self.assertNotIn("Fall back to Generic PLEG", d.log())
        self.assertNotIn("without a pod sandbox status", d.log())
        self.assertEqual(error_lines(d.log()), [])

        at = d.log_size()
        self.stop_daemon(d)
        self.assertEqual(error_lines(d.log_since(at)), [], "SIGTERM logged errors")

    def test_c_restarted_cubelet_sees_the_next_death(self):
        uid = self.new_uid("rst")
        manifests = {"rst.yaml": net_pod("rst", uid)}
        d1 = self.start("--feature-gates=EventedPLEG=true", manifests=manifests)
        cid = cid_of(d1.wait_running("rst", timeout=60))
        self.stop_daemon(d1)
        d2 = self.start("--feature-gates=EventedPLEG=true", "-v=4", manifests=manifests)
        self.assertEqual(cid_of(d2.wait_running("rst", timeout=30)), cid)
        wait_until(lambda: "connected to the container events stream" in d2.log(), 20, "the stream connected", daemon=d2)
        time.sleep(1)
        t0 = time.monotonic()
        CTRD.kill_task(cid)
        self.wait_restarted(d2, "rst", cid, 1, 20)
        took = time.monotonic() - t0
        sys.stderr.write(f"integration17: after a cubelet restart the killed container runs again after {took:.2f} s\n")
        self.assertEqual(connection_errors(d2), 0)
        self.assertEqual(error_lines(d2.log()), [])

    def test_d_event_queue_semantics(self):
        tmp = self.workdir()
        # Earlier streams whose clients went away each take one event: feed them.
        for i in range(3):
            Sandbox(tmp, f"flush{i}").remove()
        time.sleep(1)

        # Events nobody received are kept and delivered late.
        a = EventStream(tmp, "a")
        wait_quiet([a])
        late = [e for e in a.got() if e[2] < a.opened_ns]
        sys.stderr.write(f"integration17: a new subscriber got {len(late)} events from before it subscribed\n")
        self.assertGreater(len(late), 0, a.got())

        # Two subscribers split the events: none is delivered twice.
        b = EventStream(tmp, "b")
        time.sleep(1)
        for i in range(4):
            Sandbox(tmp, f"split{i}").remove()
        wait_quiet([a, b])
        ea = [e for e in a.got() if e[2] >= b.opened_ns]
        eb = b.got()
        sys.stderr.write(f"integration17: two subscribers got {len(ea)} and {len(eb)} events\n")
        self.assertEqual(set(ea) & set(eb), set())
        self.assertGreater(len(ea), 0)
        self.assertGreater(len(eb), 0)
        self.assertGreaterEqual(len(ea) + len(eb), 16)

        # Both clients go away; a new subscriber misses the next two events.
        a.kill()
        b.kill()
        time.sleep(1)
        c = EventStream(tmp, "c")
        time.sleep(1)
        s = Sandbox(tmp, "after")
        s.remove()
        wait_quiet([c])
        mine = [e[1] for e in c.got() if e[0] == s.id]
        sys.stderr.write(f"integration17: after two clients went away the new subscriber got {mine} of the sandbox\n")
        self.assertEqual(mine, ["STOPPED", "DELETED"])
        c.kill()
        # The dead stream c leaves takes one more: feed it.
        Sandbox(tmp, "last").remove()


def main():
    global CTRD, ENV
    ENV = read_env("test_containerd17.py")
    if ENV.get("KC_CONTAINERD_VERSION") != "1.7" or ENV.get("KC_CONTAINERD_CNI") != "1":
        raise SystemExit(f"test_containerd17.py: {ENV['_file']} is not containerd 1.7 with CNI (integration17.setup)")
    CTRD = Containerd(ENV)
    if not CTRD.alive():
        raise SystemExit(f"test_containerd17.py: containerd pid {CTRD.pid} is not running: did integration17.setup fail?")
    remove_pod_logs_root_at_exit()
    harness.main()


if __name__ == "__main__":
    main()
