# SPDX-License-Identifier: Apache-2.0
"""e2e.node: /node is a v1 Node the official Kubernetes Python client reads.

- the body deserializes into kubernetes.client.V1Node (Debian's
  python3-kubernetes), whose models refuse a missing required field
  (nodeInfo's machineID, bootID, systemUUID, ...);
- status.nodeInfo describes this machine (machine-id, boot_id, uname -r,
  os-release's PRETTY_NAME, GOARCH) and the runtime ("sim://<version>");
- capacity has cpu, memory in Ki, pods "110", ephemeral-storage and the
  huge page sizes; allocatable is capacity less the default hard eviction
  thresholds (memory 100Mi, nodefs 10 %);
- addresses are --node-ip and the host name; MemoryPressure, DiskPressure,
  PIDPressure and Ready carry every field;
- Ready's lastTransitionTime is when the daemon became ready (kept across
  reads), not when /node was first read.
"""

import datetime
import os
import platform
import time

import harness

try:
    import kubernetes.client
except ImportError:  # pragma: no cover - install-deps.sh installs it
    kubernetes = None

GOARCH = {"x86_64": "amd64", "aarch64": "arm64", "i686": "386"}


class Response:
    """What ApiClient.deserialize reads: the body as `data`."""

    def __init__(self, data):
        self.data = data


def read_first_line(path):
    try:
        with open(path) as f:
            return f.readline().strip()
    except OSError:
        return ""


def os_image():
    with open("/etc/os-release") as f:
        for line in f:
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    return "Linux"


def quantity_bytes(q):
    for suffix, mult in (("Ki", 1 << 10), ("Mi", 1 << 20), ("Gi", 1 << 30), ("Ti", 1 << 40)):
        if q.endswith(suffix):
            return int(q[: -len(suffix)]) * mult
    return int(q)


class NodeTest(harness.E2ETestCase):
    def node(self, d):
        st, _, body = d.get("/node")
        self.assertEqual(st, 200)
        client = kubernetes.client.ApiClient()
        return client.deserialize(Response(body.decode()), "V1Node")

    def test_v1_node(self):
        self.assertIsNotNone(kubernetes, "python3-kubernetes is missing (scripts/install-deps.sh)")
        d = self.start_daemon(args=["--node-ip=192.0.2.10"])
        node = self.node(d)
        self.assertIsInstance(node, kubernetes.client.V1Node)
        self.assertEqual((node.kind, node.api_version), ("Node", "v1"))
        self.assertEqual(node.metadata.name, harness.NODE_NAME)

        info = node.status.node_info
        self.assertEqual(info.machine_id, read_first_line("/etc/machine-id"))
        self.assertEqual(info.system_uuid, read_first_line("/sys/class/dmi/id/product_uuid"))
        self.assertEqual(info.boot_id, read_first_line("/proc/sys/kernel/random/boot_id"))
        self.assertEqual(info.kernel_version, os.uname().release)
        self.assertEqual(info.os_image, os_image())
        self.assertRegex(info.container_runtime_version, r"^sim://\d+\.\d+\.\d+")
        self.assertRegex(info.kubelet_version, r"^v\d+\.\d+\.\d+")
        self.assertEqual(info.kube_proxy_version, info.kubelet_version)
        self.assertEqual(info.operating_system, "linux")
        self.assertEqual(info.architecture, GOARCH.get(platform.machine(), platform.machine()))

        cap, alloc = node.status.capacity, node.status.allocatable
        with open("/proc/cpuinfo") as f:
            cpus = sum(1 for l in f if l.startswith("processor") and ":" in l)
        self.assertEqual(cap["cpu"], str(cpus))
        with open("/proc/meminfo") as f:
            mem_kib = next(int(l.split()[1]) for l in f if l.startswith("MemTotal:"))
        self.assertEqual(quantity_bytes(cap["memory"]), mem_kib * 1024)
        self.assertEqual(cap["pods"], "110")
        st = os.statvfs(d.root_dir)
        fs = st.f_blocks * st.f_frsize
        self.assertEqual(quantity_bytes(cap["ephemeral-storage"]), fs)
        huge = [k for k in cap if k.startswith("hugepages-")]
        hp = "/sys/kernel/mm/hugepages"
        sizes = os.listdir(hp) if os.path.isdir(hp) else []
        self.assertEqual(len(huge), len(sizes), (huge, sizes))
        huge_bytes = sum(quantity_bytes(cap[k]) for k in huge)
        self.assertEqual(alloc["cpu"], cap["cpu"])
        self.assertEqual(alloc["pods"], "110")
        self.assertEqual(quantity_bytes(alloc["memory"]), mem_kib * 1024 - (100 << 20) - huge_bytes)
        self.assertAlmostEqual(quantity_bytes(alloc["ephemeral-storage"]), fs * 0.9, delta=fs * 1e-6)

        addrs = {a.type: a.address for a in node.status.addresses}
        self.assertEqual(addrs, {"InternalIP": "192.0.2.10", "Hostname": harness.NODE_NAME})
        conds = {c.type: c for c in node.status.conditions}
        self.assertEqual(set(conds), {"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"})
        for c in conds.values():
            for field in ("status", "reason", "message", "last_heartbeat_time", "last_transition_time"):
                self.assertIsNotNone(getattr(c, field), (c.type, field))
        self.assertEqual(conds["Ready"].status, "True", conds["Ready"])
        self.assertEqual(conds["MemoryPressure"].status, "False")

    def test_ready_transition_is_kept(self):
        self.assertIsNotNone(kubernetes, "python3-kubernetes is missing (scripts/install-deps.sh)")
        started = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
        d = self.start_daemon()
        # The daemon was ready well before /node is first read.
        time.sleep(2.5 + harness.wrapper_slack())
        ready = {c.type: c for c in self.node(d).status.conditions}["Ready"]
        self.assertEqual(ready.status, "True", ready)
        trans = ready.last_transition_time
        self.assertGreaterEqual(trans, started - datetime.timedelta(seconds=1))
        self.assertGreaterEqual(
            (ready.last_heartbeat_time - trans).total_seconds(), 2, (trans, ready.last_heartbeat_time)
        )
        time.sleep(1.1)
        again = {c.type: c for c in self.node(d).status.conditions}["Ready"]
        self.assertEqual(again.last_transition_time, trans)
        self.assertGreater(again.last_heartbeat_time, ready.last_heartbeat_time)


if __name__ == "__main__":
    harness.main()
