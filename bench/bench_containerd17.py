#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Kill-to-SyncPod latency against a real containerd 1.7 (issue 16).

    python3 bench/bench_containerd17.py --cubelet build/cubelet [--pods N] [--rounds R] [--quick]

Starts its own containerd 1.7 with CNI through the integration harness
(tests/integration/containerd-setup.sh with KC_CONTAINERD_VERSION=1.7;
root; the first run downloads the pinned package) and tears it down at the
end. For each PLEG (EventedPLEG on the stream, then GenericPLEG relisting
every second) one cubelet runs N pods with their own network; every
container is killed (`ctr tasks kill -s SIGKILL`) R times, one at a time,
and the latency is from just before the kill to the klog time of
syncLoop's "SyncLoop (PLEG): event for pod" line with ContainerDied for
that container, which hands the pod to its worker's SyncPod. Figures only,
never pass/fail: prints p50, p99 and max per PLEG.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
INTEG = os.path.join(HERE, "..", "tests", "integration")
sys.path.insert(0, INTEG)

from daemon_lib import Containerd, cid_of, read_env  # noqa: E402

import harness  # noqa: E402
from harness import Daemon, container, klog_time, pod_manifest, wait_until  # noqa: E402


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def died_time(d, cid, after):
    for line in d.log().splitlines():
        if "SyncLoop (PLEG): event for pod" in line and "ContainerDied" in line and cid in line:
            t = klog_time(line, after)
            if t is not None and t >= after - 1:
                return t
    return None


def run(ctrd, binary, pleg, pods, rounds):
    work = tempfile.mkdtemp(prefix="cubelet-bench17-")
    uids = [f"b17-{pleg}-{i}-{os.getpid()}" for i in range(pods)]
    manifests = {
        f"p{i}.yaml": pod_manifest(
            f"p{i}",
            [container("app", ["sleep", "1000000"], image=ctrd.image, imagePullPolicy="IfNotPresent")],
            uid=uids[i],
            terminationGracePeriodSeconds=1,
        )
        for i in range(pods)
    }
    args = [f"--container-runtime-endpoint={ctrd.endpoint}"]
    if pleg == "evented":
        args.append("--feature-gates=EventedPLEG=true")
    d = Daemon(binary, work, args=args, manifests=manifests)
    d.start()
    lat = []
    try:
        for r in range(rounds):
            for i in range(pods):
                p = d.wait_running(f"p{i}", timeout=120)
                cid = cid_of(p)
                t0 = time.time()
                ctrd.kill_task(cid)
                t = wait_until(lambda: died_time(d, cid, t0), 30, f"ContainerDied of {cid}", daemon=d)
                lat.append(t - t0)
    finally:
        d.stop()
        ctrd.stop_pods(uids)
        shutil.rmtree(work, ignore_errors=True)
    return lat


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cubelet", required=True)
    ap.add_argument("--pods", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="3 pods, 1 round")
    a = ap.parse_args()
    if a.quick:
        a.pods, a.rounds = 3, 1
    env_file = os.path.join(tempfile.mkdtemp(prefix="cubelet-bench17-env-"), "containerd.env")
    subprocess.run(
        ["bash", os.path.join(INTEG, "containerd-setup.sh"), env_file],
        env={**os.environ, "KC_CONTAINERD_VERSION": "1.7"},
        check=True,
        stdout=subprocess.DEVNULL,
    )
    try:
        os.environ["KC_CONTAINERD_ENV"] = env_file
        ctrd = Containerd(read_env("bench_containerd17.py"))
        for pleg in ("evented", "generic"):
            lat = run(ctrd, os.path.abspath(a.cubelet), pleg, a.pods, a.rounds)
            ms = [x * 1000 for x in lat]
            print(
                f"bench_containerd17: {pleg:8s} kill -> ContainerDied dispatch: n={len(ms)} "
                f"p50={pct(ms, 50):.1f} ms p99={pct(ms, 99):.1f} ms max={max(ms):.1f} ms"
            )
    finally:
        subprocess.run(["bash", os.path.join(INTEG, "containerd-teardown.sh"), env_file], stdout=subprocess.DEVNULL)
        shutil.rmtree(os.path.dirname(env_file), ignore_errors=True)


if __name__ == "__main__":
    main()
