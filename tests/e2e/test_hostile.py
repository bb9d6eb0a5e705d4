# SPDX-License-Identifier: Apache-2.0
"""e2e.hostile: hostile local input gets a clear error, bounded resources and
no crash (issue 7, deliverable 5).

Manifests, while a good pod runs:
- an alias "string bomb" (a 60 KB string aliased 20,000 times: 140 KB of
  YAML that once grew the daemon to 2.3 GB), 100,000-deep nesting, invalid
  UTF-8, a 60 KB name, a NUL byte, a 2 MiB file: each gets one error line
  naming the file and the problem, the daemon's RSS stays bounded, and the
  good pod keeps its containers;
- a symlink to itself, a directory symlink cycle, links to /dev/zero and to
  a FIFO, a dangling link: no scan hangs, the two failing entries are
  logged once each (not on every rescan), and no pod comes from them;
- the manifest directory disappears (its pods go) and comes back (they
  return).

HTTP, on the read-only port:
- path tricks, odd methods, versions and framing: each gets a fixed status
  (404, 405, 400, 414, 431, 505, ...) or a close, never a crash;
- oversized headers and URLs: 431 or 414 with the daemon's RSS bounded;
- a slowloris of 200 connections from 127.0.0.1 trickling header bytes:
  /healthz from 127.0.0.1 still answers (latency printed), the open fds
  stay bounded, and the daemon recovers when the attack stops.
"""

import os
import socket
import statistics
import time

import harness
from harness import container, pod_manifest


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def n_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def fd_targets(pid):
    """{fd: what it points to} of process `pid`."""
    out = {}
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            out[int(name)] = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            pass  # closed meanwhile
    return out


TCP_STATES = {
    "01": "ESTABLISHED", "02": "SYN-SENT", "03": "SYN-RECV", "04": "FIN-WAIT-1",
    "05": "FIN-WAIT-2", "06": "TIME-WAIT", "07": "CLOSE", "08": "CLOSE-WAIT",
    "09": "LAST-ACK", "0A": "LISTEN", "0B": "CLOSING",
}


def port_connections(pid, port):
    """The TCP connections on local port `port` that `pid` holds an fd of
    (its listener excluded): [(fd, state, peer port)]. A socket already in
    the CLOSE state is no longer listed by the kernel: only the fd count
    sees that one."""
    inodes = {}
    for fd, target in fd_targets(pid).items():
        if target.startswith("socket:["):
            inodes[target[len("socket:["):-1]] = fd
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for row in rows:
            col = row.split()
            local, remote, state, inode = col[1], col[2], col[3], col[9]
            if inode in inodes and int(local.rsplit(":", 1)[1], 16) == port and state != "0A":
                out.append((inodes[inode], TCP_STATES.get(state, state), int(remote.rsplit(":", 1)[1], 16)))
    return sorted(out)


def raw_request(port, data, timeout=5.0):
    """Sends `data` on a fresh connection and reads until the server closes:
    (status or None, whole response)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=harness.scaled(timeout))
    try:
        try:
            s.sendall(data)
        except OSError:
            pass  # the server may answer and close before reading it all
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            out += chunk
    finally:
        s.close()
    status = None
    if out.startswith(b"HTTP/1."):
        status = int(out.split(b" ", 2)[1])
    return status, out


CLOSE = b"Host: a\r\nConnection: close\r\n\r\n"


class HostileManifests(harness.E2ETestCase):
    def wait_log(self, d, offset, *needles, timeout=15):
        def found():
            for line in d.log_since(offset).splitlines():
                if all(n in line for n in needles):
                    return line
            return None

        return harness.wait_until(found, timeout, f"a log line with {needles}", daemon=d)

    def good_snapshot(self, d):
        p = d.wait_running("good", timeout=30)
        return p["metadata"]["uid"], harness.container_ids(p)

    def test_hostile_manifests(self):
        d = self.start_daemon(manifests={"good.yaml": pod_manifest("good", [container("c", ["sleep", "infinity"])])})
        snap = self.good_snapshot(d)
        pid = d.proc.pid
        rss0 = rss_kib(pid)

        big = "x" * 60000
        bomb = (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: bomb}\nspec:\n  containers:\n"
            f"  - name: c\n    image: busybox\n    command: [&s \"{big}\"" + ", *s" * 20000 + "]\n"
        )
        pre = "apiVersion: v1\nkind: Pod\nmetadata: {name: "
        spec = "}\nspec: {containers: [{name: c, image: busybox}]}\n"
        cases = [
            ("bomb.yaml", bomb.encode(), "too much text (more than 4194304 bytes of strings with aliases expanded)"),
            ("deep.json", b"[" * 100000 + b"]" * 100000, "line 1, column 65: nesting deeper than 64 levels"),
            ("utf8.yaml", (pre + "p\xff" + spec).encode("latin-1"), "line 3, column 19: invalid leading UTF-8 octet (#xFF)"),
            ("name.yaml", (pre + "a" * 60000 + spec).encode(), "metadata.name: invalid value \\\"aaaa"),
            ("nul.yaml", (pre + "p\0" + spec).encode(), "line 3, column 19: control characters are not allowed"),
            ("huge.yaml", b"# " + b"x" * (2 << 20) + b"\n", "manifest too large (2097155 bytes; the limit is 1048576)"),
        ]
        for fname, data, want in cases:
            off = d.log_size()
            t0 = time.monotonic()
            tmp = d.manifest_path("." + fname)
            with open(tmp, "wb") as f:
                f.write(data)
            os.rename(tmp, d.manifest_path(fname))
            line = self.wait_log(d, off, f"{fname}: ", want)
            self.assertRegex(line, r"^E\d{4} ", f"{fname}: an error-level line")
            sys_ms = (time.monotonic() - t0) * 1000
            harness.sys.stderr.write(f"e2e: {fname}: refused in {sys_ms:.0f} ms: {line[line.index(fname):][:160]}\n")
        time.sleep(2.5)  # rescans, relists, syncs
        for fname, _, _ in cases:
            path = f'path="{d.manifest_path(fname)}"'
            errors = [ln for ln in d.log().splitlines() if ln.startswith("E") and path in ln]
            self.assertEqual(len(errors), 1, f"{fname}: logged once, not per rescan")
        self.assertEqual(len(d.pods()), 1, "a pod came out of a hostile manifest")
        self.assertEqual(self.good_snapshot(d), snap, "the good pod changed")
        grown = rss_kib(pid) - rss0
        harness.sys.stderr.write(f"e2e: RSS grew by {grown} KiB over the hostile manifests\n")
        self.assertLess(grown, 256 * 1024, "RSS is not bounded")

        # Entries that must not hang a scan; the failing ones are logged once.
        off = d.log_size()
        fifo = os.path.join(d.workdir, "fifo")
        os.mkfifo(fifo)
        os.symlink("loop.yaml", d.manifest_path("loop.yaml"))
        os.symlink(".", d.manifest_path("cycle.yaml"))
        os.mkdir(d.manifest_path("sub"))
        os.symlink("..", d.manifest_path("sub/up"))
        os.symlink("/dev/zero", d.manifest_path("zero.yaml"))
        os.symlink(fifo, d.manifest_path("fifo.yaml"))
        os.symlink("/nonexistent/cubelet-e2e", d.manifest_path("dangling.yaml"))
        self.wait_log(d, off, "loop.yaml", "Too many levels of symbolic links")
        self.wait_log(d, off, "dangling.yaml", "No such file or directory")
        for i in range(3):  # each write is an inotify event, so a rescan
            d.write_manifest(f"trigger{i}.txt", "# nothing\n")
            self.wait_log(d, off, f"trigger{i}.txt", "empty manifest")
        text = d.log_since(off)
        for fname, err in (("loop.yaml", "Too many levels of symbolic links"), ("dangling.yaml", "No such file or directory")):
            want = f'err="{err}" path="{d.manifest_path(fname)}"'
            self.assertEqual(text.count(want), 1, text[-3000:])
        self.assertEqual(d.get("/healthz")[0], 200)
        self.assertEqual(len(d.pods()), 1)
        self.assertEqual(self.good_snapshot(d), snap, "the good pod changed")

    def test_directory_vanishes_and_returns(self):
        good = pod_manifest("good", [container("c", ["sleep", "infinity"])])
        d = self.start_daemon(manifests={"good.yaml": good})
        d.wait_running("good", timeout=30)
        off = d.log_size()
        os.unlink(d.manifest_path("good.yaml"))
        os.rmdir(d.manifest_dir)
        self.wait_log(d, off, "Manifest path does not exist")
        harness.wait_until(lambda: not d.pods(), 30, "the vanished directory's pod to go", daemon=d)
        self.assertEqual(d.get("/healthz")[0], 200)

        # A regular file where the directory was: an error, retried.
        off = d.log_size()
        with open(d.manifest_dir, "w") as f:
            f.write("apiVersion: v1\n")
        self.wait_log(d, off, "Unable to read manifest path", "Not a directory", timeout=45)
        os.unlink(d.manifest_dir)

        os.mkdir(d.manifest_dir)
        d.write_manifest("good.yaml", good)
        d.wait_running("good", timeout=30)


class HostileHttp(harness.E2ETestCase):
    def test_path_tricks_methods_and_framing(self):
        d = self.start_daemon()
        port = d.port
        pid = d.proc.pid
        cases = [
            # (what, request, expected status; None: closed without an answer)
            ("dot-dot", b"GET /healthz/../metrics HTTP/1.1\r\n" + CLOSE, 404),
            ("double slash", b"GET //healthz HTTP/1.1\r\n" + CLOSE, 404),
            ("encoded dot-dot", b"GET /%2e%2e/ HTTP/1.1\r\n" + CLOSE, 404),
            ("encoded NUL", b"GET /pods%00 HTTP/1.1\r\n" + CLOSE, 404),
            ("raw NUL", b"GET /healthz\0x HTTP/1.1\r\n" + CLOSE, 404),
            ("absolute-form", b"GET http://x/healthz HTTP/1.1\r\n" + CLOSE, 404),
            ("asterisk", b"GET * HTTP/1.1\r\n" + CLOSE, 404),
            ("non-ASCII", b"GET /h\xc3\xa9althz\xff HTTP/1.1\r\n" + CLOSE, 404),
            ("query", b"GET /healthz?x HTTP/1.1\r\n" + CLOSE, 200),
            ("query NUL", b"GET /healthz?%00 HTTP/1.1\r\n" + CLOSE, 200),
            ("long query", b"GET /healthz?" + b"a" * 8000 + b" HTTP/1.1\r\n" + CLOSE, 200),
            ("long URL", b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n" + CLOSE, 414),
            ("space in target", b"GET /health z HTTP/1.1\r\n" + CLOSE, None),
            ("CONNECT", b"CONNECT 127.0.0.1:80 HTTP/1.1\r\n" + CLOSE, 405),
            ("TRACE", b"TRACE /healthz HTTP/1.1\r\n" + CLOSE, 405),
            ("OPTIONS", b"OPTIONS /healthz HTTP/1.1\r\n" + CLOSE, 405),
            ("lower-case get", b"get /healthz HTTP/1.1\r\n" + CLOSE, 405),
            ("HTTP/1.0 without Host", b"GET /healthz HTTP/1.0\r\n\r\n", 200),
            ("HTTP/1.1 without Host", b"GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n", 400),
            ("HTTP/0.9", b"GET /healthz\r\n\r\n", 400),
            ("HTTP/2.0", b"GET /healthz HTTP/2.0\r\n" + CLOSE, 505),
            ("h2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
            ("header without colon", b"GET /healthz HTTP/1.1\r\nBogus\r\n" + CLOSE, 400),
            ("chunked body on GET", b"GET /healthz HTTP/1.1\r\nTransfer-Encoding: chunked\r\n" + CLOSE + b"5\r\nhello\r\n0\r\n\r\n", 200),
            ("Content-Length lie (longer)", b"GET /healthz HTTP/1.1\r\nContent-Length: 1000\r\n" + CLOSE + b"abc", 200),
            ("negative Content-Length", b"GET /healthz HTTP/1.1\r\nContent-Length: -1\r\n" + CLOSE, 400),
            ("huge Content-Length", b"GET /healthz HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n" + CLOSE, 413),
            ("POST with a 1 MB body", b"POST /healthz HTTP/1.1\r\nContent-Length: 1048576\r\n" + CLOSE + b"x" * 1048576, 405),
        ]
        for what, req, want in cases:
            st, out = raw_request(port, req)
            self.assertEqual(st, want, f"{what}: {out[:200]!r}")
            self.assertTrue(d.running(), f"cubelet died on {what}")

        # Pipelining: the first request is answered, then the connection closes
        # (each connection serves one request).
        st, out = raw_request(
            port,
            b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\nGET /pods HTTP/1.1\r\nHost: a\r\n\r\n"
            b"GET /nope HTTP/1.1\r\n" + CLOSE,
        )
        self.assertEqual(st, 200)
        self.assertEqual(out.count(b"HTTP/1.1 "), 1, out[:400])
        self.assertIn(b"Connection: close", out)

        # Oversized requests: an error status, and memory stays bounded.
        rss0 = rss_kib(pid)
        for _ in range(20):
            st, _ = raw_request(port, b"GET /healthz HTTP/1.1\r\nX-Big: " + b"b" * (1 << 20) + b"\r\n" + CLOSE)
            self.assertEqual(st, 431)
            st, _ = raw_request(
                port, b"GET /healthz HTTP/1.1\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(5000)) + CLOSE
            )
            self.assertEqual(st, 431)
        grown = rss_kib(pid) - rss0
        harness.sys.stderr.write(f"e2e: RSS grew by {grown} KiB over 40 oversized requests (20 MB sent)\n")
        self.assertLess(grown, 16 * 1024)
        self.assertEqual(d.get("/healthz")[0], 200)

    def test_slowloris(self):
        d = self.start_daemon()
        port, pid = d.port, d.proc.pid
        # /healthz answers as soon as the read-only server is up, before the
        # healthz server (5 more fds) has started: take the baseline once
        # startup is over, or fds opened meanwhile look like a leak.
        harness.wait_until(
            lambda: '] "Starting kubelet main sync loop"' in d.log(),
            10,
            "startup to finish",
            daemon=d,
        )
        before = fd_targets(pid)
        for _ in range(4):  # the quietest of a few looks (a rescan holds an fd briefly)
            time.sleep(0.05)
            now = fd_targets(pid)
            if len(now) < len(before):
                before = now
        fds0 = len(before)
        slow = []
        for _ in range(200):
            s = socket.create_connection(("127.0.0.1", port), timeout=harness.scaled(5))
            s.sendall(b"GET /healthz HTTP/1.1\r\nX-Slow: ")
            slow.append(s)
        peak_fds = 0
        lat = []
        deadline = time.monotonic() + 12  # past the 10 s idle timeout
        while time.monotonic() < deadline:
            for s in slow:  # one more header byte each: the idle timeout never fires
                try:
                    s.send(b"x")
                except OSError:
                    pass
            peak_fds = max(peak_fds, n_fds(pid))
            t0 = time.monotonic()
            st, _, body = d.request("GET", "/healthz", timeout=5)
            lat.append((time.monotonic() - t0) * 1000)
            self.assertEqual((st, body), (200, b"ok"))
            time.sleep(0.5)
        harness.sys.stderr.write(
            f"e2e: /healthz under a 200-connection slowloris: {len(lat)} probes, "
            f"median {statistics.median(lat):.1f} ms, max {max(lat):.1f} ms; "
            f"fds {fds0} before, {peak_fds} at most\n"
        )
        self.assertLess(max(lat), harness.scaled(1000))
        # 64 connections, plus those shut down and not yet reaped, plus ours.
        self.assertLessEqual(peak_fds, fds0 + 128 + 4)
        self.assertRegex(
            d.log(), r'"HTTP server is at its connection limit, closing the oldest connections" port=\d+ limit=64 '
        )
        for s in slow:
            s.close()
        # Every connection closes (EOF from the client, else the 10 s idle
        # timeout) and the fds are back to the baseline, give or take a
        # transient one (a manifest rescan, our own probe).
        t0 = time.monotonic()
        try:
            harness.wait_until(
                lambda: not port_connections(pid, port) and n_fds(pid) <= fds0 + 2,
                10 + 5,
                "the connections to close and the fds to come back",
                daemon=d,
            )
        except AssertionError as e:
            extra = {fd: t for fd, t in fd_targets(pid).items() if before.get(fd) != t}
            raise AssertionError(
                f"{e}; fds {fds0} before, {n_fds(pid)} now; connections still open on port "
                f"{port} (fd, state, peer port): {port_connections(pid, port)}; fds not in the "
                f"baseline: {extra}"
            ) from None
        harness.sys.stderr.write(
            f"e2e: connections closed and fds back {time.monotonic() - t0:.2f} s after the attack\n"
        )


if __name__ == "__main__":
    harness.main()
