# SPDX-License-Identifier: Apache-2.0
"""Black-box harness for cubelet's end-to-end tests.

The tests talk to the real `cubelet` daemon only as a user would: its
flags, its manifest directory, its stderr log and its HTTP endpoints.
Nothing here links or imports cubelet code.

Each test file is a unittest module run by CTest as

    python3 -B tests/e2e/test_<name>.py <path to the cubelet binary>

and ends with `main()` below. A test starts daemons with
`self.start_daemon(...)`; each gets its own temporary manifest directory,
root directory and free ports (port 0 bound once, so tests can run in
parallel), and its stderr goes to a file. Teardown sends SIGTERM and
asserts exit status 0 within SHUTDOWN_LIMIT_S: under AddressSanitizer
(-DKC_ASAN=ON) LeakSanitizer turns a leak at exit into a non-zero status,
so that check also covers "no leaks". When a test fails, the log of every
daemon it started is printed (CTest shows it with --output-on-failure).

Environment:
    KC_TEST_TIMEOUT_MULTIPLIER  scales every wait (not the 2 s shutdown
                                limit nor the timing tolerances), default 1
    KC_E2E_KEEP=1               keep the temporary directories
    KC_E2E_WRAPPER              a command put in front of every cubelet
                                process the tests start, split like a shell
                                would (shlex): e.g. "valgrind --tool=memcheck
                                --leak-check=full --error-exitcode=97". For
                                valgrind the harness adds --log-file=<the
                                test's work directory>/valgrind.%p.log, so
                                the daemon's stderr stays its own log.
    KC_E2E_WRAPPER_SLOWDOWN     how much slower the daemon runs under the
                                wrapper (default 1 without a wrapper, 20 with
                                one); see "Under a wrapper" below

Under a wrapper (tests/e2e/CMakeLists.txt registers the suite a second time
as valgrind.e2e.<name>, label valgrind):
- every wait (scaled()) is stretched by the slowdown as well;
- the shutdown check splits in two. cubelet's own shutdown, from the
  signal to its "Shutdown complete" log line, must take less than
  SHUTDOWN_LIMIT_S x slowdown: the shutdown is CPU work (joining threads,
  freeing every object), which is what the wrapper slows. What the wrapper
  does after main() returns (valgrind's leak scan) is bounded separately by
  WRAPPER_EXIT_LIMIT_S, scaled by KC_TEST_TIMEOUT_MULTIPLIER only;
- the exit status must still be 0: the wrapper's error exit status
  (valgrind's --error-exitcode) fails the test, and the failure message
  quotes the wrapper's log;
- timing tolerances (test_crashloop's) widen by wrapper_slack(), the lag
  the slowdown adds to one observed event.
Without a wrapper nothing of this applies and every limit is as written.
"""

import http.client
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

NODE_NAME = "e2e-node"
SHUTDOWN_LIMIT_S = 2.0
#: Under a wrapper: from "Shutdown complete" to the process's exit (the
#: wrapper's own work at exit, such as valgrind's leak scan).
WRAPPER_EXIT_LIMIT_S = 60.0
#: Under a wrapper: the lag that the wrapper's slowdown adds to one event
#: observed through the daemon (a relist and a sync finishing, /pods
#: answering), per unit of slowdown above 1: the native CPU cost of that
#: work with a few pods, which is under 5 ms. Measured under valgrind with
#: 2 pods: /pods answers in 2.5 ms (median, 49 ms at most over 50 requests)
#: and the daemon uses 3 ms of CPU per second; with the default slowdown of
#: 20 this allows 95 ms per event.
WRAPPER_LAG_PER_SLOWDOWN_S = 0.005
POLL_S = 0.1

#: klog's text header: "I1121 10:00:00.123456    1234 file.c:12] message".
KLOG_LINE = re.compile(r"^[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d{6} +\d+ [^ \]]+:\d+\] ")
#: A whole line as klog.InfoS / ErrorS print it (F-PLEG-20, issue 17): the
#: header, the message quoted as strconv.Quote does, then key=value pairs whose
#: values are quoted strings, bare numbers and bools, ["ns/name" ...] lists or
#: {...} composites. Quoting escapes every newline, so one call is one line.
_KLOG_QUOTED = r'"(?:[^"\\\x00-\x1f]|\\.)*"'
KLOG_S_LINE = re.compile(
    KLOG_LINE.pattern
    + _KLOG_QUOTED
    + r"(?: [A-Za-z][A-Za-z0-9_.]*=(?:"
    + _KLOG_QUOTED
    + r"|-?\d+|true|false|\[(?:"
    + _KLOG_QUOTED
    + r"(?: "
    + _KLOG_QUOTED
    + r")*)?\]|\{[^\x00-\x1f]*?\}))*$"
)

BINARY = None  # set by main() from argv[1]


def timeout_multiplier():
    try:
        return max(1.0, float(os.environ.get("KC_TEST_TIMEOUT_MULTIPLIER", "1")))
    except ValueError:
        return 1.0


def wrapper():
    """KC_E2E_WRAPPER as an argv prefix ([] when unset)."""
    return shlex.split(os.environ.get("KC_E2E_WRAPPER", ""))


def wrapper_is_valgrind():
    w = wrapper()
    return bool(w) and os.path.basename(w[0]) == "valgrind"


def wrapper_error_exitcode():
    """The exit status the wrapper uses for its own errors (valgrind's
    --error-exitcode), or None."""
    for a in wrapper():
        if a.startswith("--error-exitcode="):
            try:
                return int(a.split("=", 1)[1])
            except ValueError:
                return None
    return None


def wrapper_slowdown():
    """KC_E2E_WRAPPER_SLOWDOWN; 1 without a wrapper, 20 with one by default."""
    if not wrapper():
        return 1.0
    try:
        return max(1.0, float(os.environ.get("KC_E2E_WRAPPER_SLOWDOWN", "20")))
    except ValueError:
        return 20.0


def wrapper_slack():
    """Extra tolerance for one event observed through the daemon: 0 without a
    wrapper (normal runs keep their tolerances exactly)."""
    return (wrapper_slowdown() - 1.0) * WRAPPER_LAG_PER_SLOWDOWN_S


def scaled(seconds):
    """A wait bound, stretched by KC_TEST_TIMEOUT_MULTIPLIER (and by the
    wrapper's slowdown under KC_E2E_WRAPPER)."""
    return seconds * timeout_multiplier() * wrapper_slowdown()


def wrapped_argv(argv, logdir):
    """argv behind KC_E2E_WRAPPER; valgrind writes its report into `logdir`
    (one file per process) rather than into the daemon's stderr."""
    w = wrapper()
    if not w:
        return list(argv)
    if wrapper_is_valgrind() and not any(a.startswith("--log-file=") for a in w):
        w.append("--log-file=" + os.path.join(logdir, "valgrind.%p.log"))
    return w + list(argv)


def wrapper_logs(logdir):
    """The wrapper's report files in `logdir`: [(path, text)]."""
    out = []
    try:
        names = sorted(n for n in os.listdir(logdir) if n.startswith("valgrind.") and n.endswith(".log"))
    except FileNotFoundError:
        return out
    for n in names:
        path = os.path.join(logdir, n)
        with open(path, "r", errors="replace") as f:
            out.append((path, f.read()))
    return out


def wrapper_report(logdir, max_lines=200):
    """The wrapper's logs as one string, for failure messages."""
    parts = []
    for path, text in wrapper_logs(logdir):
        lines = text.splitlines()
        if len(lines) > max_lines:
            lines = lines[:max_lines] + [f"[... {len(lines) - max_lines} more lines in {path} ...]"]
        parts.append(f"---- {path} ----\n" + "\n".join(lines))
    return "\n".join(parts)


def run_binary(args, timeout=20):
    """Runs `cubelet args...` to completion (behind KC_E2E_WRAPPER, if set)
    and returns the CompletedProcess with text stdout and stderr. Fails when
    the wrapper reported an error (its error exit status), quoting its log."""
    logdir = tempfile.mkdtemp(prefix="cubelet-e2e-run-")
    try:
        r = subprocess.run(
            wrapped_argv([BINARY] + list(args), logdir),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=scaled(timeout),
        )
        code = wrapper_error_exitcode()
        if code is not None and r.returncode == code:
            raise AssertionError(
                f"cubelet {' '.join(args)}: the wrapper reported errors (exit {code}):\n{wrapper_report(logdir)}"
            )
        return r
    finally:
        shutil.rmtree(logdir, ignore_errors=True)


def klog_time(line, near):
    """The wall-clock time (seconds since the epoch) of a klog line, taking
    the year from `near` (a time.time() value); None if not a klog line."""
    m = re.match(r"^[IWEF](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{6}) ", line)
    if not m:
        return None
    mo, dd, hh, mi, ss, us = (int(x) for x in m.groups())
    year = time.localtime(near).tm_year
    t = time.mktime((year, mo, dd, hh, mi, ss, 0, 0, -1)) + us / 1e6
    return t


def binary_has_asan(path):
    """True when the binary links AddressSanitizer (for information only)."""
    try:
        with open(path, "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def full_name(name, node_name=NODE_NAME):
    """The name a static pod gets: '<manifest name>-<node name>'."""
    return f"{name}-{node_name}"


# ---------------------------------------------------------------------------
# Manifests


def container(name, command, image="busybox", **extra):
    c = {"name": name, "image": image, "command": list(command)}
    c.update(extra)
    return c


def pod_manifest(name, containers, restart_policy="Always", uid=None, namespace=None, **spec_extra):
    """A v1 Pod as a dict (dump it as YAML with to_yaml() or as JSON)."""
    meta = {"name": name}
    if uid:
        meta["uid"] = uid
    if namespace:
        meta["namespace"] = namespace
    spec = {"restartPolicy": restart_policy, "containers": list(containers)}
    spec.update(spec_extra)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def to_yaml(obj, indent=0):
    """Block-style YAML for dicts and lists; scalars in JSON form (valid YAML)."""
    pad = "  " * indent
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(v, (dict, list)) and v:
                if isinstance(v, list) and all(not isinstance(x, (dict, list)) for x in v):
                    out.append(f"{pad}{k}: {json.dumps(v)}")
                else:
                    out.append(f"{pad}{k}:")
                    out.append(to_yaml(v, indent + 1))
            else:
                out.append(f"{pad}{k}: {json.dumps(v)}")
    elif isinstance(obj, list):
        for v in obj:
            if isinstance(v, dict):
                body = to_yaml(v, indent + 1).split("\n")
                out.append(f"{pad}- {body[0].lstrip()}")
                out.extend(body[1:])
            else:
                out.append(f"{pad}- {json.dumps(v)}")
    else:
        out.append(f"{pad}{json.dumps(obj)}")
    return "\n".join(out)


# ---------------------------------------------------------------------------
# Waiting


class Timeout(AssertionError):
    pass


def wait_until(pred, timeout, what, interval=POLL_S, daemon=None):
    """Polls pred() every `interval` s until it returns a truthy value, which
    is returned. Fails after `timeout` s (scaled) with `what` and the last
    value seen, or at once when `daemon` exited meanwhile."""
    deadline = time.monotonic() + scaled(timeout)
    last = None
    while True:
        if daemon is not None and daemon.proc.poll() is not None:
            raise AssertionError(
                f"cubelet exited with status {daemon.proc.returncode} while waiting for {what}"
            )
        last = pred()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise Timeout(f"timed out after {scaled(timeout):.1f} s waiting for {what}; last: {last!r}")
        time.sleep(interval)


# ---------------------------------------------------------------------------
# The daemon


class Daemon:
    """One cubelet process with its own manifest directory, root directory,
    ports and log file, all under `workdir`."""

    def __init__(
        self,
        binary,
        workdir,
        args=(),
        manifests=None,
        read_only_port=True,
        healthz_port=True,
        node_name=NODE_NAME,
        split_flags=False,
    ):
        self.binary = binary
        self.node_name = node_name
        self.split_flags = split_flags  # "--flag value" instead of "--flag=value"
        self.workdir = workdir
        self.manifest_dir = os.path.join(workdir, "manifests")
        self.root_dir = os.path.join(workdir, "root")
        self.log_path = os.path.join(workdir, "cubelet.log")
        self.extra_args = list(args)
        self.want_port = read_only_port
        self.want_healthz_port = healthz_port
        self.port = None
        self.healthz_port = None
        self.proc = None
        self.stop_seconds = None
        self.stop_wall = None  # time.time() when stop() sent its signal
        os.makedirs(self.manifest_dir, exist_ok=True)
        os.makedirs(self.root_dir, exist_ok=True)
        for fname, content in (manifests or {}).items():
            self.write_manifest(fname, content)

    # -- process -----------------------------------------------------------

    def argv(self):
        flags = [
            ("--pod-manifest-path", self.manifest_dir),
            ("--root-dir", self.root_dir),
            ("--hostname-override", self.node_name),
            ("--address", "127.0.0.1"),
            ("--port", str(self.port)),
            ("--healthz-bind-address", "127.0.0.1"),
            ("--healthz-port", str(self.healthz_port)),
            ("-v", "2"),
        ]
        a = [self.binary]
        for k, v in flags:
            a += [k, v] if self.split_flags else [f"{k}={v}"]
        return a + self.extra_args

    def start(self, wait_healthy=True, attempts=3):
        """Starts cubelet and waits for /healthz to answer "ok" on each of its
        ports. A port taken between our probe and cubelet's bind is retried
        with new ports."""
        for attempt in range(attempts):
            self.port = free_port() if self.want_port else 0
            self.healthz_port = free_port() if self.want_healthz_port else 0
            with open(self.log_path, "ab") as log:
                if attempt:
                    log.write(b"==== e2e harness: restarting on new ports ====\n")
                    log.flush()
                self.proc = subprocess.Popen(
                    wrapped_argv(self.argv(), self.workdir),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    cwd=self.workdir,
                )
            self.started_at = time.monotonic()
            if not wait_healthy:
                return self
            try:
                self.wait_healthy()
                return self
            except AssertionError:
                if self.proc.poll() is not None and "in use" in self.log().lower():
                    continue
                raise
        raise AssertionError("cubelet could not bind its ports after %d attempts" % attempts)

    def wait_healthy(self, timeout=30):
        """Waits until /healthz answers "ok" on the read-only port and on the
        healthz port (those cubelet was given): cubelet starts the two
        servers one after the other, so one answering says nothing yet of
        the other (a slow start, under valgrind, shows the gap)."""
        ports = [p for p in (self.port, self.healthz_port) if p]

        def ok():
            for port in ports:
                try:
                    st, _, body = self.request("GET", "/healthz", port=port)
                except OSError:
                    return False
                if (st, body) != (200, b"ok"):
                    return False
            return True

        wait_until(ok, timeout, f"/healthz to answer 200 ok on ports {ports}", daemon=self)

    def shutdown_seconds(self):
        """Seconds from stop()'s signal to the daemon's "Shutdown complete"
        log line (its own shutdown, without what a wrapper does after main()
        returns), or None when there is no such line."""
        if self.stop_wall is None:
            return None
        for line in reversed(self.log().splitlines()):
            if line.endswith('] "Shutdown complete"'):
                t = klog_time(line, self.stop_wall)
                return None if t is None else t - self.stop_wall
        return None

    def wrapper_report(self):
        return wrapper_report(self.workdir)

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, limit=SHUTDOWN_LIMIT_S):
        """Sends `sig`; returns (exit status, seconds until the process was
        reaped). Kills the process if it is still there after 10 s (under a
        wrapper: after the scaled shutdown limit plus WRAPPER_EXIT_LIMIT_S)."""
        if self.proc is None:
            return None, 0.0
        if self.proc.poll() is not None:
            return self.proc.returncode, 0.0
        wait_s = max(10.0, limit)
        if wrapper():
            wait_s = max(wait_s, limit * wrapper_slowdown() + WRAPPER_EXIT_LIMIT_S * timeout_multiplier())
        t0 = time.monotonic()
        self.stop_wall = time.time()
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = None
        self.stop_seconds = time.monotonic() - t0
        return rc, self.stop_seconds

    # -- manifests ---------------------------------------------------------

    def manifest_path(self, fname):
        return os.path.join(self.manifest_dir, fname)

    def write_manifest(self, fname, content):
        """Writes a manifest atomically (a dotfile renamed into place: cubelet
        ignores dotfiles, as upstream does). `content` is a str, or a dict
        dumped as JSON for *.json and YAML otherwise."""
        if not isinstance(content, str):
            content = json.dumps(content, indent=2) if fname.endswith(".json") else to_yaml(content)
        tmp = os.path.join(self.manifest_dir, f".{fname}.tmp")
        with open(tmp, "w") as f:
            f.write(content if content.endswith("\n") else content + "\n")
        os.rename(tmp, self.manifest_path(fname))

    def remove_manifest(self, fname):
        os.unlink(self.manifest_path(fname))

    # -- log ---------------------------------------------------------------

    def log(self):
        try:
            with open(self.log_path, "r", errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def log_size(self):
        try:
            return os.path.getsize(self.log_path)
        except FileNotFoundError:
            return 0

    def log_since(self, offset):
        with open(self.log_path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")

    # -- HTTP --------------------------------------------------------------

    def request(self, method, path, port=None, body=None, headers=None, timeout=10):
        """One HTTP/1.1 request on a fresh connection: (status, headers, body)."""
        conn = http.client.HTTPConnection("127.0.0.1", port or self.port, timeout=scaled(timeout))
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
        finally:
            conn.close()

    def get(self, path, port=None):
        return self.request("GET", path, port=port)

    def get_json(self, path):
        st, hdrs, body = self.get(path)
        if st != 200:
            raise AssertionError(f"GET {path}: status {st}: {body[:300]!r}")
        try:
            return json.loads(body)
        except ValueError as e:
            raise AssertionError(f"GET {path}: not JSON ({e}): {body[:300]!r}")

    def get_text(self, path):
        st, _, body = self.get(path)
        if st != 200:
            raise AssertionError(f"GET {path}: status {st}: {body[:300]!r}")
        return body.decode()

    def pods(self):
        doc = self.get_json("/pods")
        return doc.get("items") or []

    def pod(self, name):
        """The pod whose manifest said metadata.name `name`, or None."""
        want = full_name(name, self.node_name)
        for p in self.pods():
            if p.get("metadata", {}).get("name") == want:
                return p
        return None

    def wait_pod(self, name, pred, timeout, what):
        """Waits until pod `name` exists and pred(pod) holds; returns the pod."""

        def check():
            p = self.pod(name)
            return p if p is not None and pred(p) else None

        return wait_until(check, timeout, f"pod {full_name(name, self.node_name)}: {what}", daemon=self)

    def wait_running(self, name, timeout=30):
        """Waits until the pod is Running with every container running and ready."""

        def all_running(p):
            st = p.get("status", {})
            cs = st.get("containerStatuses") or []
            n = len(p.get("spec", {}).get("containers") or [])
            return (
                st.get("phase") == "Running"
                and len(cs) == n
                and all("running" in (c.get("state") or {}) and c.get("ready") is True for c in cs)
            )

        return self.wait_pod(name, all_running, timeout, "Running with every container running and ready")


# ---------------------------------------------------------------------------
# Status helpers


def container_status(pod, cname):
    for c in pod.get("status", {}).get("containerStatuses") or []:
        if c.get("name") == cname:
            return c
    return None


def container_ids(pod):
    return {c["name"]: c.get("containerID") for c in pod.get("status", {}).get("containerStatuses") or []}


def condition(obj, ctype):
    for c in obj.get("status", {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def metric_samples(text):
    """{(sample name, frozenset(labels)): value} from Prometheus text, parsed
    with prometheus_client's own parser (which raises on invalid text)."""
    from prometheus_client.parser import text_string_to_metric_families

    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


# ---------------------------------------------------------------------------
# unittest glue


class E2ETestCase(unittest.TestCase):
    """Starts daemons for a test, stops them at the end (exit 0 within 2 s
    asserted) and prints their logs when the test failed."""

    maxDiff = None

    def run(self, result=None):
        if result is None:
            result = self.defaultTestResult()
        self._daemons = []
        self._workdirs = []
        self._reported = set()  # work directories whose wrapper report a failure quoted
        before = len(result.failures) + len(result.errors)
        try:
            return super().run(result)
        finally:
            failed = len(result.failures) + len(result.errors) > before
            for d in self._daemons:
                if d.proc is not None and d.proc.poll() is None:  # a failure left it running
                    d.proc.kill()
                    d.proc.wait()
            if failed:
                for d in self._daemons:
                    dump_log(d, self.id())
                    if wrapper() and d.workdir not in self._reported:
                        report = d.wrapper_report()
                        if report:
                            sys.stderr.write(report + "\n")
            if os.environ.get("KC_E2E_KEEP") != "1" and not failed:
                for w in self._workdirs:
                    shutil.rmtree(w, ignore_errors=True)
            elif self._workdirs:
                sys.stderr.write(f"e2e: kept {' '.join(self._workdirs)}\n")

    def workdir(self):
        w = tempfile.mkdtemp(prefix="cubelet-e2e-")
        self._workdirs.append(w)
        if wrapper_is_valgrind():
            # Registered before the daemon's stop: cleanups run last-in
            # first-out, so this reads the reports after every stop.
            self.addCleanup(self.check_wrapper_logs, w)
        return w

    def check_wrapper_logs(self, workdir):
        """Fails when a valgrind report in `workdir` counts any error (a
        safety net for daemons whose exit status no test checked)."""
        if workdir in self._reported:
            return
        bad = []
        for path, text in wrapper_logs(workdir):
            for m in re.finditer(r"ERROR SUMMARY: ([\d,]+) errors", text):
                if int(m.group(1).replace(",", "")) > 0:
                    bad.append(path)
                    break
        if bad:
            self._reported.add(workdir)
            self.fail("valgrind reported errors in cubelet:\n" + wrapper_report(workdir))

    def start_daemon(self, manifests=None, args=(), wait_healthy=True, stop_check=True, **kw):
        d = Daemon(BINARY, self.workdir(), args=args, manifests=manifests, **kw)
        self._daemons.append(d)
        if stop_check:
            self.addCleanup(self.stop_daemon, d)
        d.start(wait_healthy=wait_healthy)
        return d

    def stop_daemon(self, d, sig=signal.SIGTERM):
        """Stops `d` with `sig` and asserts a clean exit within 2 s. Returns
        the time it took. A daemon already stopped by the test is left."""
        if d.proc is None or d.stop_seconds is not None:
            return d.stop_seconds
        if d.proc.poll() is not None:
            self.fail(f"cubelet exited on its own with status {d.proc.returncode} before the test stopped it")
        rc, secs = d.stop(sig)
        name = signal.Signals(sig).name
        if not wrapper():
            sys.stderr.write(f"e2e: {self.id()}: {name} -> exit {rc} in {secs:.3f} s\n")
            self.assertEqual(rc, 0, f"cubelet exited with {rc} after {name} (non-zero under ASan: a leak or an error)")
            self.assertLess(secs, SHUTDOWN_LIMIT_S, f"cubelet took {secs:.3f} s to exit after {name}")
            return secs
        # Under a wrapper: cubelet's own shutdown against the scaled limit,
        # the wrapper's work at exit against its own bound (module docstring).
        own = d.shutdown_seconds()
        limit = SHUTDOWN_LIMIT_S * wrapper_slowdown()
        sys.stderr.write(
            f"e2e: {self.id()}: {name} -> exit {rc} in {secs:.3f} s under the wrapper "
            f"(cubelet's own shutdown {'-' if own is None else f'{own:.3f}'} s, limit {limit:g} s)\n"
        )
        if rc == wrapper_error_exitcode():
            self._reported.add(d.workdir)
            self.fail(f"the wrapper reported errors in cubelet (exit {rc}) after {name}:\n{d.wrapper_report()}")
        self.assertEqual(rc, 0, f"cubelet exited with {rc} after {name}\n{d.wrapper_report()}")
        if own is None:
            own = secs  # no "Shutdown complete" line: count the whole exit
        self.assertLess(own, limit, f"cubelet took {own:.3f} s to shut down after {name} under the wrapper")
        self.assertLess(secs - own, WRAPPER_EXIT_LIMIT_S * timeout_multiplier(),
                        f"the wrapper took {secs - own:.3f} s to exit after cubelet's shutdown")
        return secs


def dump_log(d, test_id, max_lines=400):
    lines = d.log().splitlines()
    head = f"---- cubelet log ({test_id}; {d.log_path}; {len(lines)} lines) ----"
    sys.stderr.write(head + "\n")
    if len(lines) > max_lines:
        sys.stderr.write(f"[... {len(lines) - max_lines} earlier lines ...]\n")
        lines = lines[-max_lines:]
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.write("-" * len(head) + "\n")


def main():
    """Entry point of a test file: `python3 test_x.py <cubelet> [unittest args]`."""
    global BINARY
    if len(sys.argv) < 2 or not os.access(sys.argv[1], os.X_OK):
        sys.stderr.write(f"usage: {sys.argv[0]} <path to cubelet> [unittest args]\n")
        sys.exit(2)
    BINARY = os.path.abspath(sys.argv[1])
    sys.stderr.write(
        f"e2e: cubelet {BINARY}{' (AddressSanitizer)' if binary_has_asan(BINARY) else ''}, "
        f"timeout multiplier {timeout_multiplier():g}\n"
    )
    if wrapper():
        sys.stderr.write(
            f"e2e: wrapper {shlex.join(wrapper())}, slowdown {wrapper_slowdown():g}, "
            f"error exit status {wrapper_error_exitcode()}\n"
        )
    unittest.main(argv=[sys.argv[0]] + sys.argv[2:], verbosity=2)
