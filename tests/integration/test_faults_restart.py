# SPDX-License-Identifier: Apache-2.0
"""containerd SIGKILLed and restarted 10 times under a churning cubelet.

    python3 -B tests/integration/test_faults_restart.py <cubelet> [unittest args]

with KC_CONTAINERD_ENV naming the fixture's env file (CTest sets it).
KC_FAULTS_SEED=<int> replays a run (the seed is printed at the start and on
failure); KC_FAULTS_ITERATIONS overrides the 10 kills.

One cubelet runs 20 static host-network busybox pods (restartPolicy Always,
names "frst-*"): most run `sleep`, some crash every 2 s and are restarted
through the crash-loop back-off. Each iteration:

  1. churn: add a pod, delete a pod, edit one sleeper's command (same UID:
     its container must be replaced);
  2. after a random 0-1 s (syncs in flight), SIGKILL the fixture's containerd
     (its recorded pid, only while its argv names our config);
  3. while it is down: add a pod and delete another;
  4. after a random 0.3-2.5 s, restart it the way the fixture did
     (containerd-setup.sh --restart, which returns once CRI answers);
  5. wait (bounded) until it has converged, checked against containerd
     itself with `ctr -n k8s.io` (containers by their kubelet labels
     io.kubernetes.pod.uid/name/namespace, tasks for running state):
     - every desired pod has exactly one READY sandbox (running sandbox
       task) with the right name and namespace; a sleeper has exactly one
       running "app" container, a crasher at most one (and one was seen
       running since the restart: it is restarted, not abandoned; or
       containerd lost its exit and its CRI still says running, which
       cubelet's /pods must then show too: see lost_exit()); every
       running container sits in its pod's ready sandbox and runs the
       command of the current manifest (the edit reached the runtime);
     - no pod that is not desired has a ready sandbox or a running
       container (orphans), and no pod has two (duplicates);
     - cubelet's /pods lists exactly the desired pods, each once, with their
       UIDs, and a sleeper's running container is the one ctr sees;
     - /node does not report the runtime down, /healthz answers ok;
  6. checks again after a few relists that nothing changed (no late
     duplicate, no sandbox or container replaced), and that the sleepers
     nobody touched kept their sandbox and container across the crash
     (containers outlive containerd; recreating them would be a bug).

A timeout prints the ctr listing, the per-pod view and the daemon log tail.
The per-iteration reconvergence times are printed at the end.
"""

import atexit
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import cri_raw
import daemon_lib
from daemon_lib import (
    CONTAINER_NAME_LABEL,
    KIND_LABEL,
    NAME_LABEL,
    NAMESPACE_LABEL,
    SANDBOX_ID_ANNOTATION,
    UID_LABEL,
    Containerd,
    cid_of,
    read_env,
    remove_pod_logs,
    remove_pod_logs_root_at_exit,
)

import harness  # noqa: E402  (tests/e2e, put on sys.path by daemon_lib)
from harness import E2ETestCase, condition, container_status  # noqa: E402

PREFIX = "frst-"
N_PODS = 20
N_CRASHERS = 5
SLEEP_CMD = ["sleep", "1000000"]
CRASH_CMD = ["sh", "-c", "sleep 2; exit 3"]
NAMESPACE = "default"

# Fast but realistic: the pod-worker error back-off (10 s, as upstream's)
# and the 1 s relist are cubelet's own; these are the tunable ones.
FLAGS = [
    "--sync-frequency=3s",
    "--file-check-frequency=2s",
    "--crash-loop-back-off-initial-container-restart-period=1s",
    "--crash-loop-back-off-max-container-restart-period=2s",
    # above the 5 s runtime-status poll: long outages are reported
    "--max-wait-for-container-runtime=6s",
    "--runtime-request-timeout=15s",
]

CONVERGE_TIMEOUT_S = 60  # per iteration, scaled by KC_TEST_TIMEOUT_MULTIPLIER
INITIAL_TIMEOUT_S = 90
STABLE_AFTER_S = 2.5  # a few relists (1 s) and syncs
LOST_EXIT_AFTER_S = 5  # see lost_exit()
POLL_S = 0.3

CTRD = None  # set in main()


class NotConverged(Exception):
    pass


class Spec:
    """One desired pod: its manifest file, name, UID and command."""

    def __init__(self, fname, name, uid, crasher, command):
        self.fname, self.name, self.uid, self.crasher, self.command = fname, name, uid, crasher, list(command)

    @property
    def full_name(self):
        return harness.full_name(self.name)

    def manifest(self):
        return daemon_lib.host_pod(self.name, self.uid, CTRD.image, self.command)


def snapshot():
    """containerd's view of every frst- pod: {uid: {"name", "namespace",
    "sandboxes": {id: running}, "containers": {id: (name, sandbox id,
    running, args)}, "tasks": {id: task status or None}}}. Raises
    AssertionError when ctr fails."""
    ids = CTRD.ctr("containers", "ls", "-q").split()
    tasks = CTRD.tasks()
    pods = {}
    for cid in ids:
        info = CTRD.info(cid)
        if info is None:  # removed since the listing
            continue
        labels = info.get("Labels") or {}
        if not (labels.get(NAME_LABEL) or "").startswith(PREFIX):
            continue
        p = pods.setdefault(
            labels.get(UID_LABEL),
            {"name": set(), "namespace": set(), "sandboxes": {}, "containers": {}, "tasks": {}},
        )
        p["name"].add(labels.get(NAME_LABEL))
        p["namespace"].add(labels.get(NAMESPACE_LABEL))
        running = tasks.get(cid) == "RUNNING"
        p["tasks"][cid] = tasks.get(cid)
        spec = info.get("Spec") or {}
        if labels.get(KIND_LABEL) == "sandbox":
            p["sandboxes"][cid] = running
        else:
            p["containers"][cid] = (
                labels.get(CONTAINER_NAME_LABEL),
                (spec.get("annotations") or {}).get(SANDBOX_ID_ANNOTATION),
                running,
                (spec.get("process") or {}).get("args"),
            )
    return pods


def describe(pods):
    out = []
    for uid in sorted(pods, key=str):
        p = pods[uid]
        sb = " ".join(f"{s[:12]}{'*' if r else ''}" for s, r in p["sandboxes"].items())
        cs = " ".join(
            f"{c[:12]}{'*' if r else ''}(in {(sid or '?')[:12]} {' '.join(args or [])!r})"
            for c, (_, sid, r, args) in p["containers"].items()
        )
        out.append(f"  {uid} {sorted(map(str, p['name']))}: sandboxes [{sb}] containers [{cs}]")
    return "\n".join(out) + "\n  (* = task RUNNING)"


def fd_count(d):
    try:
        return len(os.listdir(f"/proc/{d.proc.pid}/fd"))
    except OSError:
        return None


def thread_count(d):
    try:
        return len(os.listdir(f"/proc/{d.proc.pid}/task"))
    except OSError:
        return None


class FaultsRestart(E2ETestCase):
    def setUp(self):
        if not CTRD.alive():
            CTRD.restart()
        seed = os.environ.get("KC_FAULTS_SEED")
        self.seed = int(seed) if seed else random.SystemRandom().randrange(1 << 31)
        self.rng = random.Random(self.seed)
        self.iterations = int(os.environ.get("KC_FAULTS_ITERATIONS", "10"))
        sys.stderr.write(f"faults_restart: seed {self.seed} (KC_FAULTS_SEED), {self.iterations} iterations\n")
        self.token = f"{os.getpid() % 100000}"
        self.serial = 0
        self.desired = {}  # fname -> Spec
        self.all_uids = []
        self.lost_exits = {}  # uid -> container id, by the last check(): see lost_exit()
        self.lost_since = {}  # container id -> when first found so (monotonic)
        self.lost_reported = set()
        self.tmp = tempfile.mkdtemp(prefix="cri-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.addCleanup(self.cleanup_pods)

    def cleanup_pods(self):
        """cubelet leaves its pods running when it stops: kill what is left."""
        try:
            if not CTRD.alive():
                CTRD.restart()
            tasks = CTRD.tasks()
            for p in snapshot().values():
                for cid in list(p["sandboxes"]) + list(p["containers"]):
                    if tasks.get(cid) == "RUNNING":
                        try:
                            CTRD.kill_task(cid)
                        except AssertionError:
                            # A crasher may exit meanwhile: ctr then says "not
                            # found", or "ttrpc: closed" when its shim went away
                            # during the call.
                            if CTRD.tasks().get(cid) == "RUNNING":
                                raise
        finally:
            remove_pod_logs(self.all_uids)

    def fail_with_seed(self, msg):
        self.fail(f"{msg}\n(seed {self.seed}: rerun with KC_FAULTS_SEED={self.seed})")

    # -- desired state -------------------------------------------------------

    def new_spec(self, crasher):
        self.serial += 1
        n = self.serial
        kind = "crash" if crasher else "sleep"
        name = f"{PREFIX}{kind}-{n}"
        uid = f"{PREFIX}{self.token}-{n}"
        self.all_uids.append(uid)
        return Spec(f"{name}.yaml", name, uid, crasher, CRASH_CMD if crasher else SLEEP_CMD)

    def add_pod(self, d, crasher=None):
        if crasher is None:
            crasher = self.rng.random() < N_CRASHERS / N_PODS
        s = self.new_spec(crasher)
        self.desired[s.fname] = s
        d.write_manifest(s.fname, s.manifest())
        return s

    def delete_pod(self, d):
        s = self.desired.pop(self.rng.choice(sorted(self.desired)))
        d.remove_manifest(s.fname)
        return s

    def edit_pod(self, d, it):
        sleepers = sorted(f for f, s in self.desired.items() if not s.crasher)
        s = self.desired[self.rng.choice(sleepers)]
        s.command = ["sleep", str(2000000 + it)]
        d.write_manifest(s.fname, s.manifest())
        return s

    # -- the check -------------------------------------------------------------

    def check(self, d, seen_running):
        """Raises NotConverged(why) unless containerd and cubelet hold exactly
        the desired pods; returns {uid: (sandbox id, running app id or None)}."""
        try:
            pods = snapshot()
        except AssertionError as e:  # containerd not answering (yet)
            raise NotConverged(f"ctr: {e}")
        want = {s.uid: s for s in self.desired.values()}
        self.lost_exits = {}
        problems = []
        placed = {}
        for uid, p in pods.items():
            ready = [sid for sid, r in p["sandboxes"].items() if r]
            running = {cid: c for cid, c in p["containers"].items() if c[2]}
            s = want.get(uid)
            if s is None:
                if ready or running:
                    problems.append(
                        f"orphan {uid} {sorted(map(str, p['name']))}: ready sandboxes {ready}, running {list(running)}"
                    )
                continue
            if len(ready) != 1:
                problems.append(f"{s.name}: {len(ready)} ready sandboxes {ready} (want 1)")
                continue
            if p["name"] != {s.full_name} or p["namespace"] != {NAMESPACE}:
                problems.append(f"{s.name}: labels name {p['name']} namespace {p['namespace']}")
            apps = [cid for cid, c in running.items() if c[0] == "app"]
            if set(running) != set(apps):
                problems.append(f"{s.name}: unexpected running containers {running}")
            for cid in apps:
                if running[cid][1] != ready[0]:
                    problems.append(f"{s.name}: app {cid[:12]} runs in sandbox {running[cid][1]}, not {ready[0]}")
                if running[cid][3] != s.command:
                    problems.append(f"{s.name}: app {cid[:12]} runs {running[cid][3]}, manifest says {s.command}")
            if len(apps) > 1 or (not s.crasher and len(apps) != 1):
                problems.append(f"{s.name}: {len(apps)} running app containers {apps}")
            if apps:
                seen_running.add(uid)
            elif s.crasher and uid not in seen_running:
                if not self.lost_exit(s, p, ready[0]):
                    problems.append(f"{s.name}: crasher not seen running since the restart")
            placed[uid] = (ready[0], apps[0] if len(apps) == 1 else None)
        for uid, s in want.items():
            if uid not in pods:
                problems.append(f"{s.name}: nothing in containerd")
        if problems:
            raise NotConverged("; ".join(problems))

        # cubelet's own view must agree.
        try:
            listed = [p for p in d.pods() if p["metadata"]["name"].startswith(PREFIX)]
            node = d.get_json("/node")
            health = d.request("GET", "/healthz")
        except (OSError, AssertionError) as e:
            raise NotConverged(f"cubelet HTTP: {e}")
        names = sorted(p["metadata"]["name"] for p in listed)
        wanted = sorted(s.full_name for s in want.values())
        if names != wanted:
            raise NotConverged(
                f"/pods lists {len(names)} pods, {len(wanted)} desired: "
                f"extra {sorted(set(names) - set(wanted)) or [x for x in names if names.count(x) > 1]}, "
                f"missing {sorted(set(wanted) - set(names))}"
            )
        by_name = {s.full_name: s for s in want.values()}
        for p in listed:
            s = by_name[p["metadata"]["name"]]
            if p["metadata"].get("uid") != s.uid:
                raise NotConverged(f"/pods: {s.name} has uid {p['metadata'].get('uid')}, want {s.uid}")
            lost = self.lost_exits.get(s.uid)
            if lost:
                # cubelet must agree with its runtime, as the kubelet would.
                cs = container_status(p, "app") or {}
                if "running" not in (cs.get("state") or {}) or cid_of(p) != lost:
                    raise NotConverged(
                        f"/pods: {s.name} app {cs.get('state')} {cid_of(p)}, containerd's CRI runs {lost[:12]}"
                    )
            elif not s.crasher:
                cs = container_status(p, "app") or {}
                if "running" not in (cs.get("state") or {}) or cid_of(p) != placed[s.uid][1]:
                    raise NotConverged(
                        f"/pods: {s.name} app {cs.get('state')} {cid_of(p)}, ctr runs {placed[s.uid][1]}"
                    )
        c = condition(node, "Ready") or {}
        if "container runtime is down" in (c.get("message") or ""):
            raise NotConverged(f"/node: {c.get('message')}")
        if (health[0], health[2]) != (200, b"ok"):
            raise NotConverged(f"/healthz: {health[0]} {health[2][:100]!r}")
        return placed

    def lost_exit(self, s, p, sandbox):
        """containerd 1.6 can lose a container's exit when the container
        exits while containerd restarts (CRI's recovery has just loaded it
        as running): the task is STOPPED, but the CRI plugin never handled
        the exit (it did not delete the task) and says CONTAINER_RUNNING
        until containerd is restarted again (containerd#10390, fixed by
        containerd#11579, in 1.6 by #12049; not in bookworm's 1.6.20). No
        kubelet can restart such a container: it trusts ContainerStatus.
        True when crasher `s` is in that state: an app container in its
        ready sandbox with a STOPPED task that CRI reports running, for
        LOST_EXIT_AFTER_S at least (CRI handles an exit within milliseconds,
        deleting the task first, so a poll can catch that moment); recorded
        in self.lost_exits, and check() then wants cubelet's /pods to show
        that container running (what its runtime says)."""
        for cid, (name, sid, running, _) in p["containers"].items():
            if name != "app" or sid != sandbox or running or p["tasks"].get(cid) != "STOPPED":
                continue
            try:
                state = cri_raw.container_state(CTRD.sock, self.tmp, cid)
            except (AssertionError, OSError, subprocess.SubprocessError):
                continue
            if state != "CONTAINER_RUNNING":
                continue
            since = self.lost_since.setdefault(cid, time.monotonic())
            if time.monotonic() - since < LOST_EXIT_AFTER_S:
                continue
            if cid not in self.lost_reported:
                self.lost_reported.add(cid)
                sys.stderr.write(
                    f"faults_restart: containerd lost the exit of {s.name}'s container {cid[:12]}: "
                    f"its task STOPPED, CRI says {state} (containerd#10390); accepted\n"
                )
            self.lost_exits[s.uid] = cid
            return True
        return False

    def converge(self, d, what, timeout):
        """Polls check() until it passes; on timeout fails with the last
        reason, the ctr listing and the daemon's log tail."""
        seen_running = set()
        deadline = time.monotonic() + harness.scaled(timeout)
        why = None
        while True:
            if d.proc.poll() is not None:
                self.fail_with_seed(f"cubelet exited with status {d.proc.returncode} while waiting for {what}")
            if not os.path.isdir(d.manifest_dir):
                self.fail_with_seed(f"{d.manifest_dir} vanished (removed by someone else?) while waiting for {what}")
            try:
                return self.check(d, seen_running)
            except NotConverged as e:
                why = str(e)
            if time.monotonic() >= deadline:
                break
            time.sleep(POLL_S)
        try:
            listing = describe(snapshot())
            listing += "\n" + CTRD.ctr("tasks", "ls")
        except AssertionError as e:
            listing = f"(ctr failed: {e})"
        try:
            names = sorted(p["metadata"]["name"] for p in d.pods())
            listing += f"\n---- /pods: {len(names)} pods ----\n  {' '.join(names)}"
        except (OSError, AssertionError) as e:
            listing += f"\n(/pods failed: {e})"
        listing += f"\n---- manifests ----\n  {' '.join(sorted(os.listdir(d.manifest_dir)))}"
        tail = "\n".join(d.log().splitlines()[-60:])
        self.fail_with_seed(
            f"timed out after {harness.scaled(timeout):.0f} s waiting for {what}: {why}\n"
            f"---- ctr -n k8s.io (frst- pods) ----\n{listing}\n---- cubelet log tail ----\n{tail}"
        )

    # -- the test --------------------------------------------------------------

    def test_kill_restart_under_churn(self):
        t0 = time.monotonic()
        d = self.start_daemon(args=[f"--container-runtime-endpoint={CTRD.endpoint}", *FLAGS])
        crashers = set(self.rng.sample(range(N_PODS), N_CRASHERS))
        for i in range(N_PODS):
            self.add_pod(d, crasher=i in crashers)
        placed = self.converge(d, f"the first {N_PODS} pods", INITIAL_TIMEOUT_S)
        sys.stderr.write(f"faults_restart: {N_PODS} pods converged {time.monotonic() - t0:.1f} s after start\n")

        rows = []
        for it in range(1, self.iterations + 1):
            # 1. churn, then kill while cubelet is acting on it
            added = [self.add_pod(d)]
            deleted = [self.delete_pod(d)]
            edited = self.edit_pod(d, it)
            time.sleep(self.rng.uniform(0, 1.0))
            CTRD.kill()
            t_kill = time.monotonic()
            # 2. more churn while containerd is down
            time.sleep(self.rng.uniform(0.1, 0.5))
            added.append(self.add_pod(d))
            deleted.append(self.delete_pod(d))
            time.sleep(max(0.0, self.rng.uniform(0.3, 2.5) - (time.monotonic() - t_kill)))
            down = time.monotonic() - t_kill
            # 3. back, the way the fixture started it
            CTRD.restart()
            t_up = time.monotonic()
            placed_after = self.converge(d, f"iteration {it}: convergence after the restart", CONVERGE_TIMEOUT_S)
            t_conv = time.monotonic()
            # 4. stable: a few relists later nothing moved
            time.sleep(STABLE_AFTER_S)
            again = self.converge(d, f"iteration {it}: still converged", CONVERGE_TIMEOUT_S)
            if again != placed_after:
                moved = {u: (placed_after.get(u), again.get(u)) for u in again if placed_after.get(u) != again.get(u)}
                # A crasher's app id changes as it restarts; its sandbox must not.
                moved = {
                    u: v
                    for u, v in moved.items()
                    if not (self.spec_of(u).crasher and v[0] and v[1] and v[0][0] == v[1][0])
                }
                if moved:
                    self.fail_with_seed(f"iteration {it}: sandboxes or containers replaced after convergence: {moved}")
            # 5. untouched sleepers kept their sandbox and container
            touched = {s.uid for s in added + deleted + [edited]}
            for s in self.desired.values():
                if s.crasher or s.uid in touched or s.uid not in placed:
                    continue
                if placed_after[s.uid] != placed[s.uid]:
                    self.fail_with_seed(
                        f"iteration {it}: {s.name} was recreated across the containerd restart: "
                        f"(sandbox, app) {placed[s.uid]} -> {placed_after[s.uid]}"
                    )
            placed = again
            rows.append((it, down, t_conv - t_up, t_conv - t_kill))
            sys.stderr.write(
                f"faults_restart: iteration {it}: containerd down {down:.2f} s, converged "
                f"{t_conv - t_up:.2f} s after the restart ({t_conv - t_kill:.2f} s after the kill); "
                f"+{[s.name for s in added]} -{[s.name for s in deleted]} ~{edited.name}; "
                f"cubelet fds {fd_count(d)}, threads {thread_count(d)}\n"
            )

        conv = sorted(r[2] for r in rows)
        sys.stderr.write(
            "faults_restart: reconvergence after restart (s): "
            + " ".join(f"{r[2]:.1f}" for r in rows)
            + f"; median {conv[len(conv) // 2]:.1f}, max {conv[-1]:.1f}; total {time.monotonic() - t0:.0f} s; "
            f"exits lost by containerd: {len(self.lost_reported)}\n"
        )
        # For the record: what stays behind in containerd. cubelet removes
        # dead containers (the deletor) but, like a kubelet without its
        # container GC, not the stopped sandboxes of deleted pods.
        pods = snapshot()
        want = {s.uid for s in self.desired.values()}
        gone = [p for u, p in pods.items() if u not in want and u in self.all_uids]
        extra = [u for u, p in pods.items() if u in want and len(p["sandboxes"]) > 1]
        sys.stderr.write(
            f"faults_restart: left in containerd: {len(gone)} deleted pods with "
            f"{sum(len(p['sandboxes']) for p in gone)} stopped sandboxes and "
            f"{sum(len(p['containers']) for p in gone)} containers; "
            f"{len(extra)} desired pods with more than one (stopped) sandbox\n"
        )
        log = d.log()
        self.assertNotIn("AddressSanitizer", log)
        self.assertNotIn("runtime error:", log)  # UBSan

    def spec_of(self, uid):
        for s in self.desired.values():
            if s.uid == uid:
                return s
        raise KeyError(uid)


def main():
    global CTRD
    CTRD = Containerd(read_env("test_faults_restart.py"))
    if not CTRD.alive():
        raise SystemExit(
            f"test_faults_restart.py: containerd pid {CTRD.pid} is not running: did integration.setup fail?"
        )
    remove_pod_logs_root_at_exit()
    # The daemon's work directories (manifests, log) go under a parent of
    # our own, out of reach of anything cleaning /tmp/cubelet-e2e-*: a
    # vanished manifest directory removes every pod, as upstream's does.
    parent = tempfile.tempdir = tempfile.mkdtemp(prefix="cubelet-frst-")
    atexit.register(lambda: os.path.isdir(parent) and not os.listdir(parent) and os.rmdir(parent))
    harness.main()


if __name__ == "__main__":
    main()
