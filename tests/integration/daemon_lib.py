# SPDX-License-Identifier: Apache-2.0
"""Helpers shared by the integration tests that run the cubelet daemon on the
fixture's containerd (test_daemon.py, test_daemon_probes.py, test_volumes.py,
test_faults_restart.py, test_faults_hang.py, ...), and the reader of a
fixture's env file (also used by test_faults_flood.py for the CRI test
server's). ContainerdTestCase and main() are the set-up those tests share:
the fixture's containerd checked at start, brought back before each test if
an earlier one left it down, and the pods a test made stopped after it.

Importing this module puts tests/e2e on sys.path, so that `import harness`
works right after it. Nothing here starts containerd: the CTest fixture
integration.setup does, and KC_CONTAINERD_ENV names the file it wrote.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))

import harness  # noqa: E402
from harness import E2ETestCase, container, container_status, pod_manifest, wait_until  # noqa: E402

UID_LABEL = "io.kubernetes.pod.uid"
NAME_LABEL = "io.kubernetes.pod.name"
NAMESPACE_LABEL = "io.kubernetes.pod.namespace"
CONTAINER_NAME_LABEL = "io.kubernetes.container.name"
KIND_LABEL = "io.cri-containerd.kind"
SANDBOX_ID_ANNOTATION = "io.kubernetes.cri.sandbox-id"
POD_LOGS_ROOT = "/var/log/pods"


CONTAINERD_ENV_KEYS = ("KC_CONTAINERD_SOCK", "KC_CONTAINERD_PID", "KC_CONTAINERD_CONFIG", "KC_CONTAINERD_IMAGE")


def read_env(prog, var="KC_CONTAINERD_ENV", keys=CONTAINERD_ENV_KEYS, fixture="integration.setup"):
    """A fixture's env file (named by the environment variable `var`,
    containerd's by default) as a dict; exits with a message naming `prog`
    and the fixture when it is missing or lacks one of `keys`."""
    path = os.environ.get(var)
    if not path:
        raise SystemExit(f"{prog}: {var} is not set (run through CTest: fixture {fixture})")
    env = {}
    try:
        with open(path) as f:
            for line in f:
                k, sep, v = line.rstrip("\n").partition("=")
                if sep:
                    env[k] = v
    except OSError as e:
        raise SystemExit(f"{prog}: cannot read {path} ({e}): did {fixture} fail?")
    for k in keys:
        if not env.get(k):
            raise SystemExit(f"{prog}: {path} has no {k}: did {fixture} fail?")
    env["_file"] = path
    return env


class Containerd:
    """The fixture's containerd, seen and driven with ctr and its pid."""

    def __init__(self, env):
        self.env = env
        self.sock = env["KC_CONTAINERD_SOCK"]
        self.config = env["KC_CONTAINERD_CONFIG"]
        self.image = env["KC_CONTAINERD_IMAGE"]
        self.endpoint = "unix://" + self.sock
        self._info = {}  # container id -> `ctr containers info` (immutable)

    @property
    def pid(self):
        with open(os.path.join(self.env["KC_CONTAINERD_DIR"], "containerd.pid")) as f:
            return int(f.read().strip())

    def alive(self):
        try:
            with open(f"/proc/{self.pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{self.pid}/status") as f:
                zombie = any(line.startswith("State:") and "Z" in line for line in f)
        except (OSError, ValueError):
            return False
        return not zombie and argv[1:3] == [b"--config", self.config.encode()]

    def _run_ctr(self, args, timeout):
        return subprocess.run(
            ["ctr", "--address", self.sock, "-n", "k8s.io", *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def ctr(self, *args, timeout=30):
        p = self._run_ctr(args, timeout)
        if p.returncode != 0:
            raise AssertionError(f"ctr {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
        return p.stdout

    def exec(self, cid, *argv, timeout=30):
        """Runs argv in container `cid` (`ctr tasks exec`): (exit code, stdout)."""
        p = self._run_ctr(("tasks", "exec", "--exec-id", f"exec-{time.monotonic_ns()}", cid, *argv), timeout)
        return p.returncode, p.stdout

    def tasks(self):
        """{task id: status} ("RUNNING", "STOPPED", ...)."""
        out = {}
        for line in self.ctr("tasks", "ls").splitlines()[1:]:
            f = line.split()
            if len(f) >= 3:
                out[f[0]] = f[2]
        return out

    def containers(self, uid, kind=None):
        """Ids of containerd containers of pod `uid` (kind "sandbox" or "container")."""
        filt = f'labels."{UID_LABEL}"=={uid}'
        if kind:
            filt += f',labels."{KIND_LABEL}"=={kind}'
        return set(self.ctr("containers", "ls", "-q", filt).split())

    def info(self, cid):
        """`ctr containers info` of `cid` as a dict (cached: labels, spec and
        creation time never change), or None when it is gone."""
        if cid not in self._info:
            try:
                self._info[cid] = json.loads(self.ctr("containers", "info", cid))
            except AssertionError as e:
                if "not found" in str(e):
                    return None
                raise
        return self._info[cid]

    def kill_task(self, cid):
        self.ctr("tasks", "kill", "-s", "SIGKILL", cid)

    def stop_pods(self, uids):
        """cubelet leaves pods running when it exits (as the kubelet does):
        kills the running tasks of the pods `uids`, then (even when that
        failed) removes their /var/log/pods directories."""
        try:
            tasks = self.tasks()
            for uid in uids:
                for cid in self.containers(uid):
                    if tasks.get(cid) == "RUNNING":
                        self.kill_task(cid)
        finally:
            remove_pod_logs(uids)

    def kill(self, sig=signal.SIGKILL):
        """Signals the fixture's containerd (the recorded pid, only when its
        argv still names our config) and waits until it is gone."""
        pid = self.pid
        if not self.alive():
            raise AssertionError(f"containerd pid {pid} is not our running containerd: not signalling it")
        os.kill(pid, sig)
        wait_until(lambda: not self.alive(), 10, f"containerd pid {pid} to exit")

    def restart(self):
        """Starts containerd again on its state, as the fixture did
        (containerd-setup.sh --restart: returns once CRI answers)."""
        p = subprocess.run(
            ["bash", os.path.join(HERE, "containerd-setup.sh"), self.env["_file"], "--restart"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        sys.stderr.write(p.stderr)
        if p.returncode != 0:
            raise AssertionError(f"containerd-setup.sh --restart failed (exit {p.returncode})")


def cid_of(pod, cname="app"):
    """The runtime id of container `cname` in a /pods pod, or None."""
    cs = container_status(pod, cname) or {}
    cid = cs.get("containerID") or ""
    return cid.partition("://")[2] or None


def host_pod(name, uid, image, command=("sleep", "1000000"), **fields):
    """A host-network static pod with one container "app" (no registry:
    imagePullPolicy IfNotPresent on the imported image); `fields` go into
    the container (probes, ...)."""
    return pod_manifest(
        name,
        [container("app", list(command), image=image, imagePullPolicy="IfNotPresent", **fields)],
        uid=uid,
        hostNetwork=True,
        terminationGracePeriodSeconds=1,
    )


def remove_pod_logs(uids):
    """Removes cubelet's /var/log/pods/<ns>_<pod>_<uid> directories of `uids`."""
    if not os.path.isdir(POD_LOGS_ROOT):
        return
    for d in os.listdir(POD_LOGS_ROOT):
        if any(d.endswith("_" + uid) for uid in uids):
            shutil.rmtree(os.path.join(POD_LOGS_ROOT, d), ignore_errors=True)


def remove_pod_logs_root_at_exit():
    """When /var/log/pods does not exist yet (cubelet creates it for its
    pods' logs), removes it again at exit if it is empty then."""
    import atexit

    if not os.path.isdir(POD_LOGS_ROOT):
        atexit.register(
            lambda: os.path.isdir(POD_LOGS_ROOT) and not os.listdir(POD_LOGS_ROOT) and os.rmdir(POD_LOGS_ROOT)
        )


def open_containerd(prog, fixture="integration.setup"):
    """The fixture's containerd for the test script `prog`: exits with a
    message naming the fixture when it is not running. Also arranges for an
    empty /var/log/pods this run created to go at exit."""
    ctrd = Containerd(read_env(prog, fixture=fixture))
    if not ctrd.alive():
        raise SystemExit(f"{prog}: containerd pid {ctrd.pid} is not running: did {fixture} fail?")
    remove_pod_logs_root_at_exit()
    return ctrd


class ContainerdTestCase(E2ETestCase):
    """A harness test whose daemons run on the fixture's containerd (`ctrd`,
    set by main()). Each test starts with containerd up (an earlier test
    may have left it down) and ends with the pods it named through
    new_uid() stopped and their log directories removed: cubelet leaves
    its pods running when it exits, as the kubelet does."""

    ctrd = None  # set by main()

    def setUp(self):
        if not self.ctrd.alive():
            self.ctrd.restart()
        self.uids = []
        # Registered before any daemon starts, so it runs after the harness
        # has stopped them (cleanups run last-in, first-out).
        self.addCleanup(self.cleanup_pods)

    def cleanup_pods(self):
        try:
            if not self.ctrd.alive():
                self.ctrd.restart()
            self.ctrd.stop_pods(self.uids)
        finally:
            # Even when containerd misbehaved: the log directories are ours.
            remove_pod_logs(self.uids)

    def new_uid(self, tag):
        """A pod UID unique to this run, stopped after the test."""
        uid = f"integ-{tag}-{os.getpid()}-{int(time.monotonic() * 1000) % 100000}"
        self.uids.append(uid)
        return uid

    def start(self, *extra, manifests=None):
        """A daemon on the fixture's containerd with the extra flags `extra`."""
        return self.start_daemon(manifests=manifests, args=[f"--container-runtime-endpoint={self.ctrd.endpoint}", *extra])

    def host_pod(self, name, uid, command=("sleep", "1000000"), **fields):
        return host_pod(name, uid, self.ctrd.image, command, **fields)


def main(prog, fixture="integration.setup"):
    """A test script's main: the fixture's containerd into
    ContainerdTestCase.ctrd, then the harness's main (which exits)."""
    ContainerdTestCase.ctrd = open_containerd(prog, fixture)
    harness.main()
