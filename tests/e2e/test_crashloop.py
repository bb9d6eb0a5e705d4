# SPDX-License-Identifier: Apache-2.0
"""e2e.crashloop: a crashing container restarts on the backoff curve.

A container running `sh -c "exit 1"` with restartPolicy Always, under
--crash-loop-back-off-initial-container-restart-period=1s and
--crash-loop-back-off-max-container-restart-period=4s. The test polls
/pods every 50 ms and records when the container's restartCount first
shows each value. Upstream's backoff (flowcontrol.Backoff via doBackOff):
the first death restarts at once and sets the backoff to the initial
period; each later death waits the current backoff, counted from the dead
container's finishedAt, then doubles it up to the maximum. So restarts
1, 2, 3, 4, 5 are spaced 1, 2, 4, 4 s apart.

Tolerance. /pods only learns of a restart through the next PLEG relist
(period 1 s), so an observed restart lags the real one by 0 to 1 s, and a
gap between two observations is the real gap plus the difference of two
lags: at most 1 s shorter and 1 s longer. The real gap itself may exceed
the backoff by the time it takes the daemon to notice the backoff expired
(a sync tick of 1 s at worst). Allowing 0.25 s for polling and scheduling
(2 vCPUs, ASan is 2-3x slower), each gap must lie in
[backoff - 1.25 s, backoff + 2.5 s]. That still tells the curve apart
from its likely bugs: without the cap the fourth gap would be 8 s (at
least 6.75 s observed, above 4 + 2.5), and a backoff that never grew
would keep gaps near 1 s (the third must be at least 2.75 s).

Under a wrapper (valgrind, harness.py) both tolerances widen by
harness.wrapper_slack(), the lag the slowdown adds to one observed event
(under 0.1 s by default); the module checks that the missing-cap bug
stays outside the widened range. Normal runs keep the tolerances above.

The waiting state between restarts must at some point read
CrashLoopBackOff with upstream's message "back-off <d> restarting failed
container=crasher pod=...", where <d> is the backoff then in force
(1s, 2s, 4s, 4s after restarts 1-4), and lastState terminated with exit
code 1. Before the first restart it must never read CrashLoopBackOff (the
first restart is not backed off). A healthy pod next to it is never
restarted.
"""

import re
import time

import harness
from harness import container, pod_manifest

INITIAL_S = 1.0
MAX_S = 4.0
RESTARTS = 5  # observe restartCount 1..5: gaps 1, 2, 4, 4 s
EARLY_S = 1.25 + harness.wrapper_slack()  # an observed gap may be this much shorter than the backoff
LATE_S = 2.5 + harness.wrapper_slack()  # ... or this much longer (see the module docstring)
# An uncapped backoff (8 s for the fourth gap) must stay outside the range.
assert 2 * MAX_S - EARLY_S > MAX_S + LATE_S, "wrapper slack too wide for the backoff check"
FIRST_RESTART_S = 3.0  # pod first listed -> restartCount 1: relist + sync + relist


def expected_backoff(restart_count):
    """The backoff in force after restart number `restart_count` (>= 1)."""
    return min(INITIAL_S * 2 ** (restart_count - 1), MAX_S)


def go_duration_seconds(s):
    """'1s', '500ms', '1m0s', '2m30.5s' -> seconds; None if unparsable."""
    units = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)", s)
    if not parts or "".join(a + b for a, b in parts) != s:
        return None
    return sum(float(a) * units[b] for a, b in parts)


class CrashLoop(harness.E2ETestCase):
    def test_backoff_curve(self):
        d = self.start_daemon(
            manifests={
                "crasher.yaml": pod_manifest("crasher", [container("crasher", ["sh", "-c", "exit 1"])], "Always"),
                "web.yaml": pod_manifest("web", [container("web", ["sleep", "infinity"])], "Always"),
            },
            args=[
                "--crash-loop-back-off-initial-container-restart-period=1s",
                "--crash-loop-back-off-max-container-restart-period=4s",
            ],
        )
        t0 = time.monotonic()
        first_listed = None
        seen = {}  # restartCount -> first time (s since t0) it was observed
        samples = []  # (t, restartCount, phase, state, lastState)
        deadline = t0 + harness.scaled(60)
        while True:
            self.assertIsNone(d.proc.poll(), "cubelet exited during the test")
            p = d.pod("crasher")
            now = time.monotonic() - t0
            if p is not None:
                if first_listed is None:
                    first_listed = now
                cs = harness.container_status(p, "crasher")
                if cs is not None:
                    rc = cs.get("restartCount")
                    samples.append((now, rc, p["status"].get("phase"), cs.get("state") or {}, cs.get("lastState") or {}))
                    if rc not in seen:
                        seen[rc] = now
                    if rc >= RESTARTS:
                        break
            if time.monotonic() > deadline:
                self.fail(f"restartCount did not reach {RESTARTS} in time; first seen: {seen}")
            time.sleep(0.05)

        report = ", ".join(f"{k}@{v:.2f}s" for k, v in sorted(seen.items()))
        print(f"\nrestartCount first observed: {report} (pod listed at {first_listed:.2f}s)")

        # restartCount never goes down, and every value 0..RESTARTS was seen.
        counts = [s[1] for s in samples]
        self.assertEqual(counts, sorted(counts), "restartCount went down")
        self.assertEqual(sorted(set(seen) - {0}), list(range(1, RESTARTS + 1)), f"restartCount skipped values: {report}")

        # The first restart is immediate: no backoff before it. (If the
        # first listing already showed restartCount 1, it was.)
        self.assertLessEqual(
            seen[1] - first_listed, FIRST_RESTART_S, f"first restart took {seen[1] - first_listed:.2f} s"
        )
        for t, rc, phase, state, last in samples:
            if rc == 0:
                reason = (state.get("waiting") or {}).get("reason")
                self.assertNotEqual(reason, "CrashLoopBackOff", f"CrashLoopBackOff before the first restart at {t:.2f}s")

        # The gaps follow 1, 2, 4, 4 s.
        problems = []
        for k in range(1, RESTARTS):
            gap = seen[k + 1] - seen[k]
            want = expected_backoff(k)
            ok = want - EARLY_S <= gap <= want + LATE_S
            print(f"restart {k}->{k + 1}: gap {gap:.2f} s, backoff {want:g} s, allowed "
                  f"[{want - EARLY_S:.2f}, {want + LATE_S:.2f}] {'ok' if ok else 'OUT'}")
            if not ok:
                problems.append(f"gap {k}->{k + 1} = {gap:.2f} s, want {want:g} s (-{EARLY_S}/+{LATE_S})")
        self.assertEqual(problems, [], f"restart times off the backoff curve: {report}")

        # CrashLoopBackOff, upstream's message, the last termination.
        backoff_samples = []
        for t, rc, phase, state, last in samples:
            w = state.get("waiting") or {}
            if w.get("reason") != "CrashLoopBackOff":
                continue
            backoff_samples.append((t, rc))
            msg = w.get("message") or ""
            m = re.match(r"back-off (\S+) restarting failed container=crasher pod=", msg)
            self.assertIsNotNone(m, f"CrashLoopBackOff message at {t:.2f}s: {msg!r}")
            self.assertIn(harness.full_name("crasher"), msg)
            secs = go_duration_seconds(m.group(1))
            self.assertEqual(secs, expected_backoff(rc), f"message at restartCount {rc}: {msg!r}")
            term = last.get("terminated")
            self.assertIsNotNone(term, f"CrashLoopBackOff without lastState.terminated at {t:.2f}s: {last}")
            self.assertEqual(term.get("exitCode"), 1, term)
            self.assertEqual(term.get("reason"), "Error", term)
        self.assertTrue(backoff_samples, "never saw waiting reason CrashLoopBackOff")
        print(f"CrashLoopBackOff seen in {len(backoff_samples)} samples at restartCounts "
              f"{sorted(set(rc for _, rc in backoff_samples))}")

        # With restartPolicy Always a pod whose container keeps dying is Running.
        for t, rc, phase, state, last in samples:
            if rc >= 1:
                self.assertEqual(phase, "Running", f"phase at {t:.2f}s (restartCount {rc})")

        # The neighbour was never touched.
        web = d.wait_running("web", timeout=5)
        self.assertEqual(harness.container_status(web, "web")["restartCount"], 0)


if __name__ == "__main__":
    harness.main()
