# SPDX-License-Identifier: Apache-2.0
"""e2e.http: the read-only HTTP endpoints.

- /healthz answers "ok", and with ?verbose kubelet's check lines; the
  healthz port serves /healthz too;
- /metrics is valid Prometheus text (prometheus_client's parser), has the
  kubelet metrics by upstream's names, and their values agree with the
  pods running (1 pod with 2 running containers here);
- /pods is a v1 PodList, streamed (chunked; HEAD gives its length), /node
  a v1 Node named after --hostname-override
  whose Ready condition is True with reason KubeletReady;
- unknown paths are 404, methods other than GET and HEAD are 405 with
  Allow: GET, HEAD; HEAD answers like GET without a body;
- 4 clients x 25 requests at once across the endpoints, while a pod
  crash-loops and another is added and removed, all get 200 and bodies
  that parse;
- the process listens on exactly the two loopback ports it was given,
  one when --port=0 or --healthz-port=0 (read from /proc/<pid>/fd and
  /proc/<pid>/net/tcp{,6}).
"""

import ipaddress
import json
import os
import re
import threading
import time

import harness
from harness import container, pod_manifest

METRICS = [
    "kubelet_pleg_relist_duration_seconds",
    "kubelet_pod_worker_duration_seconds",
    "kubelet_pod_worker_start_duration_seconds",
    "kubelet_containers_per_pod_count",
    "kubelet_running_pods",
    "kubelet_running_containers",
]
HISTOGRAMS = [
    "kubelet_pleg_relist_duration_seconds",
    "kubelet_pod_worker_duration_seconds",
    "kubelet_pod_worker_start_duration_seconds",
    "kubelet_containers_per_pod_count",
]


def listening(pid):
    """{(address, port)} of the TCP sockets process `pid` listens on."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            m = re.fullmatch(r"socket:\[(\d+)\]", os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue
        if m:
            inodes.add(m.group(1))
    out = set()
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}") as f:
                rows = f.read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for row in rows:
            f = row.split()
            local, state, inode = f[1], f[3], f[9]
            if state != "0A" or inode not in inodes:  # 0A: TCP_LISTEN
                continue
            addr_hex, port_hex = local.split(":")
            raw = bytes.fromhex(addr_hex)
            # The kernel prints the address as host-order (little-endian) 32-bit words.
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
            out.add((str(ipaddress.ip_address(raw)), int(port_hex, 16)))
    return out


class Http(harness.E2ETestCase):
    @classmethod
    def manifests(cls):
        return {
            "web.yaml": pod_manifest(
                "web", [container("web", ["sleep", "infinity"]), container("side", ["sleep", "infinity"])]
            )
        }

    def test_healthz(self):
        d = self.start_daemon()
        st, hdrs, body = d.get("/healthz")
        self.assertEqual((st, body), (200, b"ok"))
        self.assertTrue(hdrs.get("content-type", "").startswith("text/plain"), hdrs)
        st, _, body = d.get("/healthz?verbose")
        text = body.decode()
        self.assertEqual(st, 200, text)
        for line in ("[+]ping ok", "[+]log ok", "[+]syncloop ok", "healthz check passed"):
            self.assertIn(line, text.splitlines(), text)
        # The healthz port.
        st, _, body = d.get("/healthz", port=d.healthz_port)
        self.assertEqual((st, body), (200, b"ok"))

    def test_metrics(self):
        d = self.start_daemon(manifests=self.manifests())
        d.wait_running("web")

        def settled():
            s = harness.metric_samples(d.get_text("/metrics"))
            return (
                s.get(("kubelet_running_pods", frozenset())) == 1
                and s.get(("kubelet_running_containers", frozenset({("container_state", "running")}))) == 2
                and s
            )

        samples = harness.wait_until(settled, 15, "kubelet_running_pods 1 and 2 running containers", daemon=d)

        st, hdrs, body = d.get("/metrics")
        self.assertEqual(st, 200)
        self.assertTrue(hdrs.get("content-type", "").startswith("text/plain"), hdrs)
        from prometheus_client.parser import text_string_to_metric_families

        fams = {f.name: f for f in text_string_to_metric_families(body.decode())}
        for name in METRICS:
            self.assertIn(name, fams, f"/metrics lacks {name}")
        for name in HISTOGRAMS:
            f = fams[name]
            self.assertEqual(f.type, "histogram", name)
            buckets = [(s.labels, s.value) for s in f.samples if s.name == name + "_bucket"]
            count = [s.value for s in f.samples if s.name == name + "_count"]
            self.assertTrue(buckets and count, f"{name}: no buckets or count")
            # Per label set, cumulative buckets end at +Inf == _count.
            by_labels = {}
            for labels, v in buckets:
                key = tuple(sorted((k, x) for k, x in labels.items() if k != "le"))
                by_labels.setdefault(key, []).append((float(labels["le"]), v))
            for key, bs in by_labels.items():
                bs.sort()
                vals = [v for _, v in bs]
                self.assertEqual(vals, sorted(vals), f"{name}{key}: buckets not cumulative")
                self.assertEqual(bs[-1][0], float("inf"), f"{name}{key}: no +Inf bucket")
        for name in ("kubelet_pleg_relist_duration_seconds", "kubelet_pod_worker_duration_seconds",
                     "kubelet_pod_worker_start_duration_seconds", "kubelet_containers_per_pod_count"):
            total = sum(s.value for s in fams[name].samples if s.name == name + "_count")
            self.assertGreater(total, 0, f"{name}_count is 0 with a pod running")
        self.assertEqual(fams["kubelet_running_pods"].type, "gauge")
        self.assertEqual(fams["kubelet_running_containers"].type, "gauge")
        # One pod with 2 containers was observed.
        cpp = fams["kubelet_containers_per_pod_count"]
        s = {x.name: x.value for x in cpp.samples if not x.labels or set(x.labels) <= {"le"}}
        self.assertGreaterEqual(s.get("kubelet_containers_per_pod_count_sum", 0), 2)
        self.assertEqual(samples[("kubelet_running_pods", frozenset())], 1)

    def test_metrics_dashboards(self):
        """The metrics the kubernetes-mixin rules and dashboards read (issue 17, F-PW-20,
        F-PLEG-22): node name, pod counts, starts, runtime operations, process_*."""
        started = time.time()
        d = self.start_daemon(manifests=self.manifests())
        d.wait_running("web")

        def settled():
            s = harness.metric_samples(d.get_text("/metrics"))
            ran = s.get(("kubelet_pod_start_duration_seconds_count", frozenset()), 0) >= 1
            working = s.get(("kubelet_working_pods", frozenset(
                {("lifecycle", "sync"), ("config", "desired"), ("static", "true")})))
            return ran and working == 1 and s

        s = harness.wait_until(settled, 20, "pod start observed and housekeeping counted", daemon=d)
        self.assertEqual(s[("kubelet_node_name", frozenset({("node", d.node_name)}))], 1)
        self.assertEqual(s[("kubelet_desired_pods", frozenset({("static", "true")}))], 1)
        self.assertEqual(s[("kubelet_desired_pods", frozenset({("static", "")}))], 0)
        self.assertEqual(s[("kubelet_active_pods", frozenset({("static", "true")}))], 1)
        self.assertEqual(s[("kubelet_mirror_pods", frozenset())], 0)
        self.assertEqual(s[("kubelet_orphaned_runtime_pods_total", frozenset())], 0)
        # 15 working_pods series: 5 config kinds x 3 lifecycles, zeros included.
        working = [k for k in s if k[0] == "kubelet_working_pods"]
        self.assertEqual(len(working), 15, working)
        self.assertEqual(s[("kubelet_started_pods_total", frozenset())], 1)
        self.assertEqual(s[("kubelet_started_pods_errors_total", frozenset())], 0)
        self.assertEqual(
            s[("kubelet_started_containers_total", frozenset({("container_type", "container")}))], 2)
        # The instrumented runtime service: upstream's operation names.
        for op in ("version", "status", "run_podsandbox", "create_container", "start_container",
                   "list_podsandbox", "list_containers"):
            key = frozenset({("operation_type", op)})
            self.assertGreaterEqual(s.get(("kubelet_runtime_operations_total", key), 0), 1, op)
            self.assertGreaterEqual(
                s.get(("kubelet_runtime_operations_duration_seconds_count", key), 0), 1, op)
        self.assertEqual(s[("kubelet_runtime_operations_total",
                            frozenset({("operation_type", "run_podsandbox")}))], 1)
        # pod_worker_duration is labelled by update type, as upstream.
        ops = {dict(k[1]).get("operation_type") for k in s
               if k[0] == "kubelet_pod_worker_duration_seconds_count"}
        self.assertIn("create", ops)
        self.assertTrue(ops <= {"create", "update", "sync", "kill", "terminated"}, ops)
        # process_* as the Go client's process collector gives them.
        self.assertGreater(s[("process_resident_memory_bytes", frozenset())], 1 << 20)
        self.assertGreater(s[("process_virtual_memory_bytes", frozenset())],
                           s[("process_resident_memory_bytes", frozenset())])
        self.assertGreaterEqual(s[("process_open_fds", frozenset())], 3)
        self.assertGreater(s[("process_max_fds", frozenset())], 0)
        self.assertGreaterEqual(s[("process_cpu_seconds_total", frozenset())], 0)
        # Between our clock before and after the start, not "within N s of now"
        # (a loaded machine under valgrind can take minutes to get here); 1 s
        # under: /proc/stat's btime is whole seconds.
        self.assertGreaterEqual(s[("process_start_time_seconds", frozenset())], started - 1.5)
        self.assertLessEqual(s[("process_start_time_seconds", frozenset())], time.time())
        from prometheus_client.parser import text_string_to_metric_families

        fams = {f.name: f for f in text_string_to_metric_families(d.get_text("/metrics"))}
        for name, typ in (("kubelet_node_name", "gauge"), ("kubelet_working_pods", "gauge"),
                          ("kubelet_restarted_pods", "counter"),
                          ("kubelet_runtime_operations", "counter"),
                          ("kubelet_runtime_operations_duration_seconds", "histogram"),
                          ("kubelet_pod_start_duration_seconds", "histogram"),
                          ("process_cpu_seconds", "counter"), ("process_open_fds", "gauge")):
            self.assertEqual(fams[name].type, typ, name)

    def test_pods_and_node(self):
        d = self.start_daemon(manifests=self.manifests())
        d.wait_running("web")
        st, hdrs, body = d.get("/pods")
        self.assertEqual(st, 200)
        self.assertTrue(hdrs.get("content-type", "").startswith("application/json"), hdrs)
        doc = json.loads(body)
        self.assertEqual(doc.get("kind"), "PodList")
        self.assertEqual(doc.get("apiVersion"), "v1")
        self.assertEqual([p["metadata"]["name"] for p in doc["items"]], [harness.full_name("web")])
        pod = doc["items"][0]
        self.assertEqual(pod["spec"].get("nodeName"), harness.NODE_NAME)
        # Streamed (issue 18): sent as it is written, so chunked, of no
        # declared length; HEAD declares the length GET's body has.
        self.assertEqual(hdrs.get("transfer-encoding"), "chunked", hdrs)
        self.assertNotIn("content-length", hdrs)
        for _ in range(3):
            st, head_hdrs, head_body = d.request("HEAD", "/pods")
            st2, _, body = d.get("/pods")
            if int(head_hdrs.get("content-length", -1)) == len(body):
                break
        self.assertEqual((st, st2, head_body), (200, 200, b""))
        self.assertEqual(int(head_hdrs.get("content-length", -1)), len(body), head_hdrs)

        node = d.get_json("/node")
        self.assertEqual(node.get("kind"), "Node")
        self.assertEqual(node.get("apiVersion"), "v1")
        self.assertEqual(node["metadata"]["name"], harness.NODE_NAME)
        ready = harness.condition(node, "Ready")
        self.assertIsNotNone(ready, node.get("status"))
        self.assertEqual(ready["status"], "True", ready)
        self.assertEqual(ready["reason"], "KubeletReady", ready)
        addrs = {a.get("type"): a.get("address") for a in node["status"].get("addresses") or []}
        if "InternalIP" in addrs:
            self.assertEqual(pod["status"].get("hostIP"), addrs["InternalIP"], (addrs, pod["status"]))

    def test_404_405_and_head(self):
        d = self.start_daemon()
        for path in ("/", "/nope", "/pods/extra", "/healthzz", "/metrics/", "/%2e%2e/pods"):
            with self.subTest(path=path):
                st, _, _ = d.get(path)
                self.assertEqual(st, 404, path)
        for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
            for path in ("/pods", "/healthz", "/metrics", "/node"):
                with self.subTest(method=method, path=path):
                    st, hdrs, _ = d.request(method, path, body=b"{}" if method in ("POST", "PUT", "PATCH") else None)
                    self.assertEqual(st, 405, f"{method} {path}")
                    allow = {m.strip() for m in hdrs.get("allow", "").split(",")}
                    self.assertEqual(allow, {"GET", "HEAD"}, f"{method} {path}: Allow: {hdrs.get('allow')!r}")
        for path in ("/pods", "/healthz", "/metrics", "/node"):
            with self.subTest(head=path):
                st, hdrs, body = d.request("HEAD", path)
                self.assertEqual(st, 200, path)
                self.assertEqual(body, b"", path)
        # Still healthy after all that.
        self.assertEqual(d.get("/healthz")[2], b"ok")

    def test_concurrent_requests(self):
        m = self.manifests()
        m["crasher.yaml"] = pod_manifest("crasher", [container("c", ["false"])])
        for i in range(10):
            m[f"w{i}.yaml"] = pod_manifest(f"w{i}", [container("c", ["sleep", "infinity"])])
        d = self.start_daemon(
            manifests=m,
            args=[
                "--crash-loop-back-off-initial-container-restart-period=1s",
                "--crash-loop-back-off-max-container-restart-period=1s",
            ],
        )
        d.wait_running("web")
        errors = []

        def client(k):
            paths = ["/pods", "/metrics", "/node", "/healthz"]
            for i in range(25):
                path = paths[(i + k) % len(paths)]
                try:
                    st, _, body = d.get(path)
                    if st != 200:
                        errors.append(f"{path}: {st}")
                    elif path in ("/pods", "/node"):
                        json.loads(body)
                    elif path == "/metrics":
                        harness.metric_samples(body.decode())
                except Exception as e:  # noqa: BLE001 - collected and reported below
                    errors.append(f"{path}: {e!r}")

        threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for i in range(3):
            d.write_manifest("churn.yaml", pod_manifest("churn", [container("c", ["sleep", "infinity"])]))
            time.sleep(0.3)
            d.remove_manifest("churn.yaml")
            time.sleep(0.3)
        for t in threads:
            t.join()
        self.assertEqual(errors, [])

    def test_listening_sockets(self):
        d = self.start_daemon()
        self.assertEqual(listening(d.proc.pid), {("127.0.0.1", d.port), ("127.0.0.1", d.healthz_port)})
        d = self.start_daemon(read_only_port=False)
        self.assertEqual(d.port, 0)
        self.assertEqual(listening(d.proc.pid), {("127.0.0.1", d.healthz_port)})
        d = self.start_daemon(healthz_port=False)
        self.assertEqual(listening(d.proc.pid), {("127.0.0.1", d.port)})


if __name__ == "__main__":
    harness.main()
