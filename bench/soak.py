#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""soak: the cubelet daemon with N pods churning for a long time; RSS, fds
and threads must stay flat.

It starts `cubelet` on the simulated runtime (like bench_daemon.py, whose
helpers it imports) with N static pods (default 500) split into

- **steady**: `sleep infinity`, restartPolicy Always (60 %); every
  --edit-every seconds one of them is edited (a new label value, so a new
  static-pod UID: the old pod is killed and a new one starts);
- **crash Always**: `sh -c "exit 1"`, restartPolicy Always (10 %);
- **crash OnFailure**: `exit 1`, restartPolicy OnFailure (10 %): both crash
  loops run on the back-off curve, --crash-loop-back-off-*-period shortened
  (1 s to --backoff-max, default 30 s) so that they restart all the time;
- **churn** (20 %): a window of short-lived pods; --churn-rate times a
  second (default 2) the newest manifest is created and the oldest deleted,
  each with a new name, rotating through `sleep infinity` (Always),
  `exit 1` (Always, a crash loop cut short by the delete), `sleep 3`
  (OnFailure: Succeeded) and `false` (Never: Failed).

The pod count stays N all along. Every --interval seconds the sampler reads
/proc/<pid>/status (VmRSS, RssAnon, Threads), /proc/<pid>/fd and the names
of /proc/<pid>/task/*/comm, then scrapes /metrics (series count,
kubelet_running_pods) and, every third sample, /pods (pods listed), as a
user's monitoring would.

What "flat" means with churn:
- RSS: the daemon's footprint oscillates with the churn (a burst of syncs,
  a /pods rendering, malloc arenas), so one sample says little. Each sample
  is read at the same point of the cycle (just before that cycle's scrapes,
  --interval seconds after the last one), and the figure compared is the
  MEDIAN of the samples in the first --window seconds after the warm-up
  against the median of the last --window seconds: growth % =
  (end - start) / start. It must stay under --max-rss-growth (2 %);
- fds: each sample is the minimum of three reads 0.1 s apart, so a file the
  file source has open for a moment, or an HTTP connection being closed, is
  not counted; a leaked fd stays in all three. After the warm-up the count
  must never change;
- threads: the pod-worker pool (threads named kc-podworker) is elastic by
  design: it grows while syncs wait for the cache and shrinks after 30 s
  idle. Every other thread is fixed and must never change after the
  warm-up. The pool may leave the range it had during the warm-up only for
  a while: a thread the grower adds for one stall (a loaded machine
  pausing the workers) retires once no stall has called for one for the
  30 s idle timeout, so a stay above the warm-up range longer than 35 s
  (plus a sample's spacing) fails: a leaked or stuck pool thread stays
  for good. A stay still open at the end and shorter than that is printed,
  not judged. The total is printed too.

--quick (CI): 90 s with a 30 s warm-up, 3 s samples and 15 s windows. The
fd and thread checks are the same; the RSS limit is looser (10 % unless
--max-rss-growth is given), because a minute of churn is not enough for a
2 % figure to mean anything: it catches only a fast leak.

Exit status: 0 when every check passed, 1 when one failed, 2 when the
daemon could not be started or died.

    python3 bench/soak.py                                   # 500 pods, 30 min, 5 min warm-up
    python3 bench/soak.py --quick --cubelet build/cubelet   # CI: 90 s
    python3 bench/soak.py --duration 10m --warmup 3m --pods 500
"""

import argparse
import http.client
import os
import re
import shutil
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in bench/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_daemon as bd  # noqa: E402  (free_port, proc_status, cpu_seconds, http_get, manifest)

POOL_THREAD = "kc-podworker"
# A pool thread the grower adds for one stall (a loaded machine pausing the
# workers 10 ms) retires once no stall has called for one for the idle
# timeout (30 s, podworkers/pod_workers.c); the next burst's end and a
# sample's spacing come on top.
POOL_EXCURSION_MAX_S = 30 + 5
NODE = "soak-node"


def parse_duration(s):
    """'90', '90s', '5m', '1h30m' -> seconds (float)."""
    s = s.strip()
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return float(s)
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|m|s)", s)
    if not parts or "".join(a + b for a, b in parts) != s:
        raise argparse.ArgumentTypeError(f"not a duration: {s!r} (e.g. 90s, 5m, 1h)")
    return sum(float(a) * {"h": 3600, "m": 60, "s": 1}[u] for a, u in parts)


def pool_excursions(samples, top):
    """Runs of samples whose pool is above @top: (start t, end t, peak, closed)."""
    runs, cur = [], None
    for s in samples:
        if s["pool_threads"] > top:
            if cur is None:
                cur = [s["t"], s["t"], s["pool_threads"]]
            cur[1] = s["t"]
            cur[2] = max(cur[2], s["pool_threads"])
        elif cur is not None:
            runs.append((cur[0], s["t"], cur[2], True))
            cur = None
    if cur is not None:
        runs.append((cur[0], cur[1], cur[2], False))
    return runs


# ---------------------------------------------------------------------------
# Manifests


def pod_yaml(name, command, restart_policy, labels=None):
    cmd = ", ".join(f'"{w}"' for w in command)
    lab = ""
    if labels:
        lab = "  labels:\n" + "".join(f"    {k}: \"{v}\"\n" for k, v in labels.items())
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n{lab}"
        f"spec:\n  restartPolicy: {restart_policy}\n  containers:\n"
        f"  - name: app\n    image: busybox\n    command: [{cmd}]\n"
    )


CHURN_KINDS = (
    (["sleep", "infinity"], "Always"),
    (["sh", "-c", "exit 1"], "Always"),
    (["sleep", "3"], "OnFailure"),
    (["false"], "Never"),
)


class Manifests:
    """The manifest directory and the churn on it (one writer thread)."""

    def __init__(self, mdir, n, churn_fraction=0.2):
        self.mdir = mdir
        self.n = n
        n_churn = max(1, int(n * churn_fraction)) if n >= 5 else 0
        n_crash = max(1, n // 10) if n >= 5 else 0
        self.n_crash_always = n_crash
        self.n_crash_onfailure = n_crash
        self.n_churn = n_churn
        self.n_steady = n - n_churn - 2 * n_crash
        self.churn = []  # file names, oldest first
        self.seq = 0
        self.edits = 0
        self.created = self.deleted = 0

    def write(self, fname, text):
        tmp = os.path.join(self.mdir, f".{fname}.tmp")
        with open(tmp, "w") as f:
            f.write(text)
        os.rename(tmp, os.path.join(self.mdir, fname))

    def populate(self):
        for i in range(self.n_steady):
            self.write(f"bench-{i:05d}.yaml", bd.manifest(i))
        for i in range(self.n_crash_always):
            self.write(f"crash-a-{i:04d}.yaml", pod_yaml(f"crash-a-{i:04d}", ["sh", "-c", "exit 1"], "Always"))
        for i in range(self.n_crash_onfailure):
            self.write(f"crash-f-{i:04d}.yaml", pod_yaml(f"crash-f-{i:04d}", ["exit", "1"], "OnFailure"))
        for _ in range(self.n_churn):
            self.add_churn()

    def add_churn(self):
        cmd, policy = CHURN_KINDS[self.seq % len(CHURN_KINDS)]
        name = f"churn-{self.seq:07d}"
        self.seq += 1
        self.write(f"{name}.yaml", pod_yaml(name, cmd, policy))
        self.churn.append(f"{name}.yaml")
        self.created += 1

    def rotate(self):
        """One churn step: the newest pod in, the oldest out."""
        if not self.churn:
            return
        self.add_churn()
        os.unlink(os.path.join(self.mdir, self.churn.pop(0)))
        self.deleted += 1

    def edit(self):
        """A steady pod gets a new label value: a new UID, the old pod goes."""
        if self.n_steady == 0:
            return
        i = self.edits % self.n_steady
        self.edits += 1
        name = f"bench-{i:05d}"
        self.write(f"{name}.yaml", pod_yaml(name, ["sleep", "infinity"], "Always", {"soak-edit": str(self.edits)}))


def churn_loop(m, rate, edit_every, stop, errors):
    period = 1.0 / rate if rate > 0 else None
    next_rot = time.monotonic()
    next_edit = time.monotonic() + edit_every if edit_every > 0 else None
    try:
        while not stop.is_set():
            now = time.monotonic()
            if period and now >= next_rot:
                m.rotate()
                next_rot += period
                if next_rot < now:  # fell behind (a slow disk): do not burst
                    next_rot = now + period
            if next_edit and now >= next_edit:
                m.edit()
                next_edit += edit_every
            wake = min(x for x in (next_rot if period else None, next_edit, now + 1.0) if x is not None)
            stop.wait(max(0.0, wake - time.monotonic()))
    except OSError as e:
        errors.append(f"churn: {e}")


# ---------------------------------------------------------------------------
# Sampling


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def thread_names(pid):
    """{comm: count} over /proc/<pid>/task (threads that end meanwhile are skipped)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue
        out[name] = out.get(name, 0) + 1
    return out


def status_fields(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM", "RssAnon", "Threads"):
                out[k] = int(v.split()[0])
    return out


def sample_proc(pid):
    """One sample of the process: RSS (KiB), fds and threads, each count the
    minimum of three reads 0.1 s apart (a transient fd or thread is not a
    leak; a leaked one is in every read)."""
    st = status_fields(pid)
    fds, pools, fixed, totals = [], [], [], []
    for k in range(3):
        if k:
            time.sleep(0.1)
        fds.append(fd_count(pid))
        names = thread_names(pid)
        pool = names.get(POOL_THREAD, 0)
        total = sum(names.values())
        pools.append(pool)
        fixed.append(total - pool)
        totals.append(total)
    return {
        "rss": st["VmRSS"],
        "anon": st.get("RssAnon"),
        "hwm": st["VmHWM"],
        "fds": min(fds),
        "fixed_threads": min(fixed),
        "pool_threads": min(pools),
        "threads": min(totals),
        "cpu": bd.cpu_seconds(pid),
    }


def scrape_metrics(port):
    st, body = bd.http_get(port, "/metrics", timeout=30)
    if st != 200:
        raise RuntimeError(f"/metrics: status {st}")
    series = running = None
    n = 0
    for line in body.decode().splitlines():
        if not line or line.startswith("#"):
            continue
        n += 1
        if line.startswith("kubelet_running_pods "):
            running = float(line.split()[1])
    series = n
    return series, running


def scrape_pods(port):
    import json

    st, body = bd.http_get(port, "/pods", timeout=60)
    if st != 200:
        raise RuntimeError(f"/pods: status {st}")
    items = json.loads(body).get("items") or []
    return len(items), len(body)


# ---------------------------------------------------------------------------
# The run


class Died(Exception):
    pass


def median_window(samples, t_from, t_to, key):
    vals = [s[key] for s in samples if t_from <= s["t"] <= t_to]
    return (statistics.median(vals), len(vals)) if vals else (None, 0)


def run(args):
    work = tempfile.mkdtemp(prefix="cubelet-soak-")
    mdir = os.path.join(work, "manifests")
    os.makedirs(mdir)
    os.makedirs(os.path.join(work, "root"))
    m = Manifests(mdir, args.pods)
    m.populate()
    port, hport = bd.free_port(), bd.free_port()
    log_path = os.path.join(work, "cubelet.log")
    argv = shlex.split(args.wrapper) + [
        args.cubelet,
        f"--pod-manifest-path={mdir}",
        f"--root-dir={os.path.join(work, 'root')}",
        f"--hostname-override={NODE}",
        "--address=127.0.0.1",
        f"--port={port}",
        f"--healthz-port={hport}",
        "--crash-loop-back-off-initial-container-restart-period=1s",
        f"--crash-loop-back-off-max-container-restart-period={args.backoff_max}",
        f"-v={args.v}",
    ]
    print(f"soak: {args.cubelet}, {args.pods} pods ({m.n_steady} steady, {m.n_crash_always} crash Always, "
          f"{m.n_crash_onfailure} crash OnFailure, {m.n_churn} churn at {args.churn_rate:g}/s, "
          f"an edit every {args.edit_every:g} s), back-off 1s..{args.backoff_max}", flush=True)
    print(f"soak: duration {args.duration:g} s, warm-up {args.warmup:g} s, sample every {args.interval:g} s, "
          f"windows {args.window:g} s, RSS growth limit {args.max_rss_growth:g} %"
          f"{' (--quick: a looser limit, see --help)' if args.quick and not args.rss_limit_given else ''}",
          flush=True)
    print(f"soak: work directory {work}", flush=True)

    stop = threading.Event()
    errors = []
    samples = []
    ok_run = False
    with open(log_path, "wb") as log:
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    churn = threading.Thread(target=churn_loop, args=(m, args.churn_rate, args.edit_every, stop, errors), daemon=True)
    try:
        deadline = t0 + 60
        while True:
            if proc.poll() is not None:
                raise Died(f"cubelet exited with {proc.returncode} during start-up (log: {log_path})")
            try:
                st, body = bd.http_get(port, "/healthz", timeout=5)
                if st == 200 and body == b"ok":
                    break
            except (OSError, http.client.HTTPException):
                pass
            if time.monotonic() > deadline:
                raise Died("cubelet not healthy after 60 s")
            time.sleep(0.05)
        churn.start()

        hdr = (f"{'t s':>7} {'phase':>7} {'RSS MiB':>8} {'anon MiB':>8} {'fds':>4} {'fixed thr':>9} "
               f"{'pool thr':>8} {'threads':>7} {'CPU %':>6} {'series':>6} {'running':>7} {'/pods':>6}")
        print(hdr)
        print("-" * len(hdr), flush=True)
        k = 0
        next_t = time.monotonic()
        last_cpu = last_wall = None
        while True:
            now = time.monotonic()
            t = now - t0
            if t > args.duration:
                break
            if proc.poll() is not None:
                raise Died(f"cubelet exited with {proc.returncode} after {t:.0f} s (log: {log_path})")
            if errors:
                raise Died(errors[0])
            try:
                s = sample_proc(proc.pid)
            except OSError as e:  # /proc/<pid> gone: the daemon died
                proc.wait(timeout=10)
                raise Died(f"cubelet exited with {proc.returncode} after {t:.0f} s (log: {log_path}): {e}")
            s["t"] = t
            s["phase"] = "warm-up" if t < args.warmup else "measure"
            s["cpu_pct"] = (None if last_cpu is None
                            else 100.0 * (s["cpu"] - last_cpu) / (now - last_wall))
            last_cpu, last_wall = s["cpu"], now
            try:
                s["series"], s["running"] = scrape_metrics(port)
                s["pods"] = None
                if k % 3 == 0:
                    s["pods"], _ = scrape_pods(port)
            except (OSError, RuntimeError, ValueError, http.client.HTTPException) as e:
                if proc.poll() is not None:
                    raise Died(f"cubelet exited with {proc.returncode} after {t:.0f} s (log: {log_path})")
                raise Died(f"scrape failed at {t:.0f} s: {e}")
            samples.append(s)
            print(f"{t:7.0f} {s['phase']:>7} {s['rss'] / 1024:8.1f} "
                  f"{(s['anon'] or 0) / 1024:8.1f} {s['fds']:4d} {s['fixed_threads']:9d} "
                  f"{s['pool_threads']:8d} {s['threads']:7d} "
                  f"{'-' if s['cpu_pct'] is None else format(s['cpu_pct'], '.1f'):>6} {s['series']:6d} "
                  f"{'-' if s['running'] is None else format(s['running'], '.0f'):>7} "
                  f"{'-' if s['pods'] is None else s['pods']:>6}", flush=True)
            k += 1
            next_t += args.interval
            time.sleep(max(0.0, next_t - time.monotonic()))

        stop.set()
        churn.join(timeout=10)
        t = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            rc = "killed"
        stop_s = time.monotonic() - t
        ok_run = True
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if not ok_run or args.keep:
            print(f"soak: kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return summarize(args, m, samples, rc, stop_s)


def summarize(args, m, samples, rc, stop_s):
    after = [s for s in samples if s["t"] >= args.warmup]
    during = [s for s in samples if s["t"] < args.warmup]
    print()
    print(f"churn: {m.created} pods created, {m.deleted} deleted, {m.edits} edits; "
          f"stop: exit {rc} in {stop_s:.3f} s")
    if len(after) < 2:
        print("soak: FAIL: fewer than two samples after the warm-up (make --duration longer than --warmup)")
        return 1
    t_end = after[-1]["t"]
    w0_from, w0_to = args.warmup, args.warmup + args.window
    w1_from, w1_to = t_end - args.window, t_end
    rss0, n0 = median_window(samples, w0_from, w0_to, "rss")
    rss1, n1 = median_window(samples, w1_from, w1_to, "rss")
    anon0, _ = median_window(samples, w0_from, w0_to, "anon")
    anon1, _ = median_window(samples, w1_from, w1_to, "anon")
    growth = 100.0 * (rss1 - rss0) / rss0
    failures = []

    print(f"RSS: median of {n0} samples in [{w0_from:.0f}, {w0_to:.0f}] s = {rss0 / 1024:.2f} MiB; "
          f"median of {n1} samples in [{w1_from:.0f}, {w1_to:.0f}] s = {rss1 / 1024:.2f} MiB; "
          f"growth {growth:+.2f} % (limit {args.max_rss_growth:g} %)")
    if anon0 and anon1:
        print(f"     RssAnon {anon0 / 1024:.2f} -> {anon1 / 1024:.2f} MiB ({100.0 * (anon1 - anon0) / anon0:+.2f} %); "
              f"min/max VmRSS after warm-up {min(s['rss'] for s in after) / 1024:.2f}/"
              f"{max(s['rss'] for s in after) / 1024:.2f} MiB; VmHWM {after[-1]['hwm'] / 1024:.2f} MiB")
    if growth > args.max_rss_growth:
        failures.append(f"RSS grew {growth:.2f} % after the warm-up (limit {args.max_rss_growth:g} %)")

    def rng(key, lst):
        vals = [s[key] for s in lst]
        return (min(vals), max(vals)) if vals else (None, None)

    fmin, fmax = rng("fds", after)
    print(f"fds after warm-up: min {fmin}, max {fmax} (at the end of the warm-up: {during[-1]['fds'] if during else '-'})")
    if fmin != fmax:
        failures.append(f"the fd count changed after the warm-up: {fmin}..{fmax}")
    xmin, xmax = rng("fixed_threads", after)
    print(f"fixed threads (all but {POOL_THREAD}) after warm-up: min {xmin}, max {xmax}")
    if xmin != xmax:
        failures.append(f"the fixed thread count changed after the warm-up: {xmin}..{xmax}")
    pmin, pmax = rng("pool_threads", after)
    wmin, wmax = rng("pool_threads", during)
    tmin, tmax = rng("threads", after)
    print(f"pod-worker pool threads after warm-up: min {pmin}, max {pmax} "
          f"(during the warm-up: {wmin}..{wmax}); all threads after warm-up: {tmin}..{tmax}")
    if wmax is not None:
        for start, end, peak, closed in pool_excursions(after, wmax):
            span = end - start
            where = f"{start:.0f}..{end:.0f} s, up to {peak} threads (warm-up max {wmax})"
            if span > POOL_EXCURSION_MAX_S + args.interval:
                failures.append(f"the pod-worker pool stayed above its warm-up range for "
                                f"{span:.0f} s ({where}; limit {POOL_EXCURSION_MAX_S} s)")
            elif not closed:
                print(f"pod-worker pool above its warm-up range at the end ({where}): "
                      f"too recent to judge")
            else:
                print(f"pod-worker pool above its warm-up range for {span:.0f} s ({where}), then back")
    smin, smax = rng("series", after)
    print(f"/metrics series after warm-up: min {smin}, max {smax}")
    cpus = [s["cpu_pct"] for s in after if s["cpu_pct"] is not None]
    if cpus:
        print(f"CPU after warm-up: mean {statistics.mean(cpus):.1f} % of one core")
    listed = [s["pods"] for s in after if s["pods"] is not None]
    if listed:
        print(f"/pods listed after warm-up: {min(listed)}..{max(listed)} (desired {args.pods})")
    if rc != 0:
        failures.append(f"cubelet exited with {rc} after SIGTERM")

    print()
    print("How to read this: RSS is compared as the median of the first and of the last "
          f"{args.window:g} s after the warm-up, every sample taken at the same point of the "
          "sampling cycle; fds and threads are the minimum of three reads per sample; the "
          f"pod-worker pool ({POOL_THREAD}) is elastic by design and may leave its warm-up "
          f"range for {POOL_EXCURSION_MAX_S} s at most, every other thread and every fd "
          "must not change at all.")
    if failures:
        for f in failures:
            print(f"soak: FAIL: {f}")
        return 1
    print("soak: PASS: RSS, fds and threads flat after the warm-up")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--cubelet", default=os.path.join(bd.REPO, "build", "cubelet"), help="the cubelet binary")
    ap.add_argument("--pods", type=int, default=500, help="pods at any time (default 500)")
    ap.add_argument("--duration", type=parse_duration, default=None, help="whole run (default 30m; --quick 90s)")
    ap.add_argument("--warmup", type=parse_duration, default=None, help="not measured (default 5m; --quick 30s)")
    ap.add_argument("--interval", type=parse_duration, default=None, help="between samples (default 10s; --quick 3s)")
    ap.add_argument("--window", type=parse_duration, default=None,
                    help="RSS medians over the first and the last WINDOW after the warm-up (default 60s; --quick 15s)")
    ap.add_argument("--max-rss-growth", type=float, default=None,
                    help="RSS growth limit, %% (default 2; --quick 10)")
    ap.add_argument("--churn-rate", type=float, default=2.0, help="churn pods replaced per second (default 2)")
    ap.add_argument("--edit-every", type=float, default=5.0, help="seconds between steady-pod edits (default 5)")
    ap.add_argument("--backoff-max", default="30s", help="--crash-loop-back-off-max-container-restart-period (default 30s)")
    ap.add_argument("--v", type=int, default=0, help="the daemon's -v (default 0)")
    ap.add_argument("--quick", action="store_true", help="CI mode: 90 s, 30 s warm-up, looser RSS limit")
    ap.add_argument("--wrapper", default="",
                    help="a command put before cubelet, for investigation only (e.g. valgrind with --vgdb=yes, "
                    "then `vgdb --pid=<pid> leak_check full reachable increased`); the figures are then the wrapper's")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (manifests, log)")
    args = ap.parse_args()
    q = args.quick
    args.duration = args.duration if args.duration is not None else (90 if q else 1800)
    args.warmup = args.warmup if args.warmup is not None else (30 if q else 300)
    args.interval = args.interval if args.interval is not None else (3 if q else 10)
    args.window = args.window if args.window is not None else (15 if q else 60)
    args.rss_limit_given = args.max_rss_growth is not None
    if args.max_rss_growth is None:
        args.max_rss_growth = 10.0 if q else 2.0
    if args.duration <= args.warmup + args.window:
        sys.exit("soak: --duration must exceed --warmup plus --window")
    if args.pods < 1:
        sys.exit("soak: --pods must be at least 1")
    if not os.access(args.cubelet, os.X_OK):
        sys.exit(f"soak: no cubelet binary at {args.cubelet} (build it, or pass --cubelet)")
    def on_signal(signum, frame):
        raise Died(f"stopped by {signal.Signals(signum).name}")

    # Stopped early, the daemon is still killed (run()'s finally); SIGINT
    # is set too because a shell ignores it in background jobs.
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        sys.exit(run(args))
    except Died as e:
        print(f"soak: ERROR: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
