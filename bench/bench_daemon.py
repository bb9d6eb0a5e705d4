#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench_daemon: the cubelet daemon with N static pods on the simulated runtime.

For each N it writes N pod manifests (one container each, `sleep infinity`
under restartPolicy Always: runs forever on the simulated runtime) into a
fresh manifest directory, starts `cubelet` on it (-v=0, free loopback
ports) and measures

- **all Running**: seconds from launching the process until /pods lists N
  pods in phase Running (the time to the first healthy /healthz is shown
  too). It first polls the cheap /metrics until kubelet_running_pods
  reaches N, then /pods every 0.5 s;
- **peak RSS**: VmHWM from /proc/<pid>/status at the end of the run (the
  whole run's high-water mark: start-up burst and the /pods renderings of
  the polling included), VmRSS when kubelet_running_pods reached N before
  any /pods request ("RSS before /pods"), and VmRSS at the end of the
  steady window;
- **steady CPU**: after all pods are Running and a settle period, the
  daemon's utime+stime (/proc/<pid>/stat) over a window (default 60 s) with
  nothing changing and no HTTP requests, as % of one core;
- **/pods peak**: after the window, VmHWM is reset (/proc/<pid>/clear_refs
  "5") and /pods is fetched --pods-gets times in a row, then as many times at
  once; the new VmHWM is the peak RSS of serving /pods alone (start-up burst
  excluded), shown with the body size;
- **per pod**: with N = 0 in the run (it is by default), (RSS(N) - RSS(0)) /
  N from the VmRSS at the end of each steady window, in KiB;
- **stop**: seconds from SIGTERM to exit (and the exit status).

Figures, never pass/fail: the exit status is non-zero only when the daemon
cannot be started or dies. Targets (issue 4): steady CPU < 2 % of one core
and peak RSS < 64 MB at 1,000 pods.

    python3 bench/bench_daemon.py [--cubelet build/cubelet]   # N = 0, 1,000 and 5,000
    python3 bench/bench_daemon.py --quick                      # N = 0 and 100, 10 s window
    python3 bench/bench_daemon.py --pods 1000 --pods 10000 --steady 120
"""

import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_CPU_PCT = 2.0
TARGET_RSS_MB = 64.0
TARGET_PODS = 1000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_status(pid):
    """VmHWM, VmRSS (KiB) and Threads from /proc/<pid>/status."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmHWM", "VmRSS", "Threads"):
                out[k] = int(v.split()[0])
    return out


def cpu_seconds(pid):
    """utime + stime of the whole process (all threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # After "pid (comm)": state is field 3, utime field 14, stime field 15.
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def manifest(i):
    name = f"bench-{i:05d}"
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n"
        f"spec:\n  restartPolicy: Always\n  containers:\n"
        f"  - name: app\n    image: busybox\n    command: [\"sleep\", \"infinity\"]\n"
    )


def http_get(port, path, timeout=30):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def running_pods_gauge(port):
    """kubelet_running_pods from /metrics (cheap to render), or None."""
    st, body = http_get(port, "/metrics")
    if st != 200:
        return None
    for line in body.decode().splitlines():
        if line.startswith("kubelet_running_pods "):
            return float(line.split()[1])
    return None


def count_running(port):
    st, body = http_get(port, "/pods")
    if st != 200:
        return 0, 0
    items = json.loads(body).get("items") or []
    return len(items), sum(1 for p in items if (p.get("status") or {}).get("phase") == "Running")


class Failed(Exception):
    pass


def reset_hwm(pid):
    """Resets VmHWM to the current RSS (Linux >= 4.0); False if refused."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def pods_peak(pid, port, gets):
    """VmHWM (KiB) over `gets` /pods requests in a row then `gets` at once, and the body size."""
    if not reset_hwm(pid):
        return None, None
    size = None
    for _ in range(gets):
        st, body = http_get(port, "/pods", timeout=120)
        if st == 200:
            size = len(body)
    threads = [threading.Thread(target=http_get, args=(port, "/pods", 120)) for _ in range(gets)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return proc_status(pid)["VmHWM"], size


def run_one(cubelet, n, steady_s, settle_s, start_timeout_s, keep, gets):
    work = tempfile.mkdtemp(prefix=f"cubelet-bench-{n}-")
    mdir = os.path.join(work, "manifests")
    os.makedirs(mdir)
    os.makedirs(os.path.join(work, "root"))
    for i in range(n):
        with open(os.path.join(mdir, f"bench-{i:05d}.yaml"), "w") as f:
            f.write(manifest(i))
    port, hport = free_port(), free_port()
    log_path = os.path.join(work, "cubelet.log")
    argv = [
        cubelet,
        f"--pod-manifest-path={mdir}",
        f"--root-dir={os.path.join(work, 'root')}",
        "--hostname-override=bench-node",
        "--address=127.0.0.1",
        f"--port={port}",
        f"--healthz-port={hport}",
        "-v=0",
    ]
    res = {"pods": n}
    ok = False
    with open(log_path, "wb") as log:
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    try:
        # Healthy; then every sandbox running per /metrics (cheap, so the
        # RSS there is the daemon's own, before any /pods rendering); then
        # all N Running per /pods.
        deadline = t0 + start_timeout_s
        healthy = None
        gauge_done = False
        listed = running = 0
        while True:
            if proc.poll() is not None:
                raise Failed(f"cubelet exited with {proc.returncode} during start-up (log: {log_path})")
            now = time.monotonic()
            if now > deadline:
                res["timeout"] = f"{running}/{n} Running after {start_timeout_s:.0f} s"
                break
            try:
                if healthy is None:
                    st, body = http_get(port, "/healthz", timeout=5)
                    if st == 200 and body == b"ok":
                        healthy = time.monotonic() - t0
                elif not gauge_done:
                    g = running_pods_gauge(port)
                    if g is None or g >= n:
                        gauge_done = True
                        if g is not None:
                            res["sandboxes_s"] = time.monotonic() - t0
                            res["pre_pods_rss_kib"] = proc_status(proc.pid)["VmRSS"]
                        continue
                else:
                    listed, running = count_running(port)
                    if running == n:
                        res["all_running_s"] = time.monotonic() - t0
                        break
            except (OSError, ValueError, http.client.HTTPException):
                pass
            time.sleep(0.05 if healthy is None else 0.25 if not gauge_done else 0.5)
        res["healthy_s"] = healthy
        res["listed"], res["running"] = listed, running

        # Settle, then a quiet window: no requests, nothing changing.
        time.sleep(settle_s)
        if proc.poll() is not None:
            raise Failed(f"cubelet exited with {proc.returncode} (log: {log_path})")
        c0, w0 = cpu_seconds(proc.pid), time.monotonic()
        time.sleep(steady_s)
        if proc.poll() is not None:
            raise Failed(f"cubelet exited with {proc.returncode} during the steady window (log: {log_path})")
        c1, w1 = cpu_seconds(proc.pid), time.monotonic()
        res["steady_cpu_pct"] = 100.0 * (c1 - c0) / (w1 - w0)
        res["steady_window_s"] = w1 - w0
        res["cpu_total_s"] = c1
        st = proc_status(proc.pid)
        res["hwm_kib"], res["rss_kib"], res["threads"] = st["VmHWM"], st["VmRSS"], st["Threads"]

        # Still serving all of them after the window.
        listed, running = count_running(port)
        res["running_after"] = running
        res["pods_peak_kib"], res["pods_body"] = pods_peak(proc.pid, port, gets)

        t = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            res["exit"] = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            res["exit"] = "killed"
        res["stop_s"] = time.monotonic() - t
        ok = True
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if keep or not ok:
            res["workdir"] = work
        else:
            shutil.rmtree(work, ignore_errors=True)
    return res


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def print_table(results, steady_s):
    hdr = ("pods", "healthy s", "all Running s", "RSS before /pods MiB", "peak RSS MiB", "RSS MiB",
           "steady CPU %", "per pod KiB", "/pods peak MiB", "/pods MB", "threads", "CPU total s",
           "stop s", "exit")
    rows = []
    zero = next((r for r in results if r["pods"] == 0 and "rss_kib" in r), None)
    for r in results:
        per_pod = None
        if zero and r["pods"] and "rss_kib" in r:
            per_pod = (r["rss_kib"] - zero["rss_kib"]) / r["pods"]
            r["per_pod_kib"] = per_pod
        rows.append((
            f"{r['pods']:,}",
            fmt(r.get("healthy_s"), ".2f"),
            fmt(r.get("all_running_s"), ".2f") if "timeout" not in r else r["timeout"],
            fmt(r["pre_pods_rss_kib"] / 1024 if "pre_pods_rss_kib" in r else None, ".1f"),
            fmt(r.get("hwm_kib", 0) / 1024, ".1f"),
            fmt(r.get("rss_kib", 0) / 1024, ".1f"),
            fmt(r.get("steady_cpu_pct"), ".2f"),
            fmt(per_pod, ".1f"),
            fmt(r["pods_peak_kib"] / 1024 if r.get("pods_peak_kib") else None, ".1f"),
            fmt(r["pods_body"] / 1e6 if r.get("pods_body") else None, ".2f"),
            str(r.get("threads", "-")),
            fmt(r.get("cpu_total_s"), ".2f"),
            fmt(r.get("stop_s"), ".3f"),
            str(r.get("exit", "-")),
        ))
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(hdr)]
    print("| " + " | ".join(h.rjust(w) for h, w in zip(hdr, widths)) + " |")
    print("|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(c.rjust(w) for c, w in zip(row, widths)) + " |")
    print(f"\nsteady window {steady_s:g} s; targets at {TARGET_PODS:,} pods: steady CPU < {TARGET_CPU_PCT:g} % "
          f"of one core, peak RSS < {TARGET_RSS_MB:g} MB")
    for r in results:
        if r["pods"] == TARGET_PODS and "steady_cpu_pct" in r:
            cpu_ok = r["steady_cpu_pct"] < TARGET_CPU_PCT
            rss_mb = r["hwm_kib"] * 1024 / 1e6
            rss_ok = rss_mb < TARGET_RSS_MB
            print(f"  {TARGET_PODS:,} pods: steady CPU {r['steady_cpu_pct']:.2f} % ({'met' if cpu_ok else 'NOT met'}), "
                  f"peak RSS {rss_mb:.1f} MB ({'met' if rss_ok else 'NOT met'})")
        if r.get("running_after") is not None and r["running_after"] != r["pods"]:
            print(f"  note: at {r['pods']:,} pods only {r['running_after']} were Running after the window")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cubelet", default=os.path.join(REPO, "build", "cubelet"), help="the cubelet binary")
    ap.add_argument("--pods", type=int, action="append", help="pod count (repeatable; default 1000 and 5000)")
    ap.add_argument("--steady", type=float, default=None, help="steady-state window, s (default 60)")
    ap.add_argument("--settle", type=float, default=None, help="wait after all Running, s (default 5)")
    ap.add_argument("--start-timeout", type=float, default=600, help="give up waiting for Running after, s")
    ap.add_argument("--quick", action="store_true", help="smoke test: 100 pods, 10 s window, 2 s settle")
    ap.add_argument("--keep", action="store_true", help="keep the work directories (manifests, log)")
    ap.add_argument("--pods-gets", type=int, default=3,
                    help="/pods requests in a row, then at once, for the /pods peak (default 3)")
    args = ap.parse_args()

    if args.quick:
        pods = args.pods or [0, 100]
        steady = args.steady if args.steady is not None else 10
        settle = args.settle if args.settle is not None else 2
    else:
        pods = args.pods or [0, 1000, 5000]
        steady = args.steady if args.steady is not None else 60
        settle = args.settle if args.settle is not None else 5
    if not os.access(args.cubelet, os.X_OK):
        sys.exit(f"bench_daemon: no cubelet binary at {args.cubelet} (build it, or pass --cubelet)")

    print(f"bench_daemon: {args.cubelet}, {os.cpu_count()} CPUs, pods {pods}, steady {steady:g} s", flush=True)
    results = []
    failed = False
    for n in pods:
        print(f"  {n:,} pods ...", flush=True)
        try:
            results.append(run_one(args.cubelet, n, steady, settle, args.start_timeout, args.keep,
                                   args.pods_gets))
        except Failed as e:
            print(f"  {n:,} pods: {e}", file=sys.stderr)
            failed = True
    print()
    if results:
        print_table(results, steady)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
