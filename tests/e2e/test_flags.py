# SPDX-License-Identifier: Apache-2.0
"""e2e.flags: the command line, as a user meets it.

- `--help` exits 0 and lists every flag with its default;
- `--version` exits 0;
- a bad flag or a bad value exits 2 with exactly one line on stderr that
  names the flag, without starting anything;
- `--flag value` (two words) works like `--flag=value`: a daemon started
  that way serves on the ports it was given.
"""

import os
import re

import harness

# flag -> the default --help must show (None: no fixed default to check).
FLAGS = {
    "--container-runtime-endpoint": "sim://",
    "--pod-manifest-path": None,
    "--file-check-frequency": "20s",
    "--sync-frequency": "1m0s",
    "--runtime-request-timeout": "2m0s",
    "--address": "127.0.0.1",
    "--port": "10255",
    "--healthz-bind-address": "127.0.0.1",
    "--healthz-port": "10248",
    "--hostname-override": None,
    "--node-ip": None,
    "--root-dir": "/var/lib/kubelet",
    "--resolv-conf": "/etc/resolv.conf",
    "--maximum-dead-containers-per-container": "1",
    "--crash-loop-back-off-initial-container-restart-period": "10s",
    "--crash-loop-back-off-max-container-restart-period": "5m0s",
    "--v": "0",
    "--help": None,
    "--version": None,
}

# (arguments, a regex for the flag the one-line reason must name)
BAD = [
    (["--no-such-flag"], "--no-such-flag"),
    (["--no-such-flag=1"], "--no-such-flag"),
    (["--port=notaport"], "--port"),
    (["--port=70000"], "--port"),
    (["--port=-1"], "--port"),
    (["--healthz-port=x"], "--healthz-port"),
    (["--sync-frequency=fast"], "--sync-frequency"),
    (["--file-check-frequency=10"], "--file-check-frequency"),  # a Go duration needs a unit
    (["--runtime-request-timeout=1x"], "--runtime-request-timeout"),
    (["--crash-loop-back-off-initial-container-restart-period=soon"],
     "--crash-loop-back-off-initial-container-restart-period"),
    (["--crash-loop-back-off-max-container-restart-period=1"], "--crash-loop-back-off-max-container-restart-period"),
    (["--maximum-dead-containers-per-container=many"], "--maximum-dead-containers-per-container"),
    (["--address=not-an-ip"], "--address"),
    (["--healthz-bind-address=1.2.3.4.5"], "--healthz-bind-address"),
    (["--v=loud"], r"-v\b|verbosity"),
    (["-v", "x"], r"-v\b|verbosity"),
    (["--port"], "--port"),  # no value at all
    (["--maximum-dead-containers-per-container=-5"], "--maximum-dead-containers-per-container"),
    (["--container-runtime-endpoint=ftp://x"], "--container-runtime-endpoint"),
    (["--crash-loop-back-off-initial-container-restart-period=10s",
      "--crash-loop-back-off-max-container-restart-period=1s"], "--crash-loop-back-off-"),
    (["stray-argument"], "stray-argument"),
]


def run(args, timeout=20):
    return harness.run_binary(args, timeout=timeout)


class Flags(harness.E2ETestCase):
    def test_help_lists_every_flag_with_its_default(self):
        r = run(["--help"])
        self.assertEqual(r.returncode, 0, r.stderr)
        text = r.stdout + r.stderr
        lines = text.splitlines()
        for flag, default in FLAGS.items():
            pat = re.compile(r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])")
            idx = [i for i, ln in enumerate(lines) if pat.search(ln)]
            self.assertTrue(idx, f"--help does not list {flag}:\n{text}")
            if default is None:
                continue
            # The flag's entry: its line and the continuation lines up to the next flag.
            i = idx[0]
            entry = [lines[i]]
            for ln in lines[i + 1:]:
                if ln.lstrip().startswith("-"):
                    break
                entry.append(ln)
            entry = "\n".join(entry)
            self.assertRegex(entry, r"(?<![\w/.:])" + re.escape(default) + r"(?![\w/.:])",
                             f"--help shows no default {default!r} for {flag}:\n{entry}")
        self.assertRegex(text, r"(?<![\w-])-v(?![\w-])", "--help does not list -v")
        self.assertRegex(text, r"(?<![\w-])-h(?![\w-])", "--help does not list -h")

    def test_help_says_what_root_dir_holds(self):
        # --root-dir holds the pods' directories and the seccomp profiles (issue 14).
        r = run(["--help"])
        entry = re.search(r"--root-dir.*?(?=\n\s*-)", r.stdout + r.stderr, re.S)
        self.assertIsNotNone(entry)
        self.assertIn("pods/<uid>/", entry.group(0))
        self.assertIn("seccomp/", entry.group(0))
        self.assertNotIn("reserved", entry.group(0))

    def test_short_help_and_version(self):
        r = run(["-h"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--pod-manifest-path", r.stdout + r.stderr)
        r = run(["--version"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("cubelet", r.stdout + r.stderr)

    def test_bad_flags_exit_2_with_one_line(self):
        for args, names in BAD:
            with self.subTest(args=args):
                r = run(args)
                err = r.stderr.strip("\n")
                self.assertEqual(r.returncode, 2, f"{args}: exit {r.returncode}; stderr: {r.stderr!r}")
                self.assertEqual(len(err.splitlines()), 1, f"{args}: want one line on stderr, got {r.stderr!r}")
                self.assertRegex(err, names, f"{args}: the reason does not name the flag: {err!r}")
                self.assertEqual(r.stdout, "", f"{args}: stdout: {r.stdout!r}")

    def test_two_word_flags(self):
        """`--port N` and friends as separate words: the daemon serves there
        and uses them (node name, a pod from the manifest directory)."""
        d = self.start_daemon(
            manifests={"web.yaml": harness.pod_manifest("web", [harness.container("web", ["sleep", "infinity"])])},
            args=["--crash-loop-back-off-initial-container-restart-period", "2s", "--sync-frequency", "30s"],
            node_name="two-words",
            split_flags=True,
        )
        self.assertIn(str(d.port), d.argv())
        node = d.get_json("/node")
        self.assertEqual(node["metadata"]["name"], "two-words")
        st, _, body = d.get("/healthz", port=d.healthz_port)
        self.assertEqual((st, body), (200, b"ok"))
        p = d.wait_running("web")
        self.assertEqual(p["metadata"]["name"], "web-two-words")
        self.assertEqual(p["spec"].get("nodeName"), "two-words")

    def _daemon_tunables(self):
        """GLIBC_TUNABLES as the daemon just started reads it (its log; ld.so
        may leave /proc/<pid>/environ showing the first execution's), or None."""
        d = self.start_daemon(manifests={})
        self.stop_daemon(d)
        m = re.search(r'"Malloc\'s per-thread cache count set" GLIBC_TUNABLES="([^"]*)"', d.log())
        return m.group(1) if m else None

    def _sanitized_or_wrapped(self):
        with open(harness.BINARY, "rb") as f:
            data = f.read()
        return harness.wrapper() or b"__asan_init" in data or b"__tsan_init" in data

    def test_daemon_runs_without_malloc_tcaches(self):
        """Issue 18: the daemon executes itself again with glibc's per-thread
        caches off (core/memory.h, kc_memory_tune_exec), the user's other
        tunables kept; a cache count the user chose is theirs."""
        if self._sanitized_or_wrapped():
            self.skipTest("malloc is not glibc's here: nothing is executed again")
        old = os.environ.get("GLIBC_TUNABLES")
        try:
            os.environ.pop("GLIBC_TUNABLES", None)
            self.assertEqual(self._daemon_tunables(), "glibc.malloc.tcache_count=0")
            os.environ["GLIBC_TUNABLES"] = "glibc.malloc.trim_threshold=1048576"
            self.assertEqual(self._daemon_tunables(),
                             "glibc.malloc.trim_threshold=1048576:glibc.malloc.tcache_count=0")
            os.environ["GLIBC_TUNABLES"] = "glibc.malloc.tcache_count=3"
            self.assertEqual(self._daemon_tunables(), "glibc.malloc.tcache_count=3")
        finally:
            if old is None:
                os.environ.pop("GLIBC_TUNABLES", None)
            else:
                os.environ["GLIBC_TUNABLES"] = old


if __name__ == "__main__":
    harness.main()
