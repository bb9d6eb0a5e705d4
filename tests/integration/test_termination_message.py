# SPDX-License-Identifier: Apache-2.0
"""Termination messages of static pods on a real containerd (issue 14, slice
i14t).

    python3 -B tests/integration/test_termination_message.py <cubelet> [unittest args]

with KC_CONTAINERD_ENV naming the fixture's env file (CTest sets it):

- a busybox container `sh -c "echo bye > /dev/termination-log; exit 1"`:
  /pods shows "bye\\n" as its state.terminated.message; the file it wrote
  lies under <root-dir>/pods/<uid>/containers/<name>/ (mode 0666);
- a FallbackToLogsOnError container that echoes two lines to stdout and
  exits 1 without writing the file: its message is the tail of the log
  containerd wrote (the CRI prefixes stripped);
- the same with policy File: no message.
"""

import os
import stat

from daemon_lib import Containerd, read_env, remove_pod_logs, remove_pod_logs_root_at_exit

import harness  # noqa: E402  (tests/e2e, put on sys.path by daemon_lib)
from harness import E2ETestCase, container, pod_manifest  # noqa: E402

CTRD = None  # set in main()


def terminated(p, cname):
    cs = harness.container_status(p, cname) or {}
    return (cs.get("state") or {}).get("terminated") or {}


class TerminationMessageOnContainerd(E2ETestCase):
    def setUp(self):
        if not CTRD.alive():
            CTRD.restart()
        self.uids = []
        self.addCleanup(remove_pod_logs, self.uids)

    def pod(self, name, command, **extra):
        uid = f"integ-tm-{name}-{os.getpid()}"
        self.uids.append(uid)
        c = container("c", command, image=CTRD.image, imagePullPolicy="IfNotPresent", **extra)
        return pod_manifest(name, [c], "Never", uid=uid, hostNetwork=True, terminationGracePeriodSeconds=1)

    def test_messages(self):
        manifests = {
            "file.yaml": self.pod("file", ["sh", "-c", "echo bye > /dev/termination-log; exit 1"]),
            "logs.yaml": self.pod(
                "logs",
                ["sh", "-c", "echo first; echo last words; exit 1"],
                terminationMessagePolicy="FallbackToLogsOnError",
            ),
            "nologs.yaml": self.pod("nologs", ["sh", "-c", "echo only in the log; exit 1"]),
        }
        d = self.start_daemon(manifests=manifests, args=[f"--container-runtime-endpoint={CTRD.endpoint}"])

        def failed(p):
            return p["status"].get("phase") == "Failed"

        p = d.wait_pod("file", failed, 90, "phase Failed")
        term = terminated(p, "c")
        self.assertEqual((term.get("exitCode"), term.get("message")), (1, "bye\n"), p["status"])
        cdir = os.path.join(d.root_dir, "pods", p["metadata"]["uid"], "containers", "c")
        files = os.listdir(cdir)
        self.assertEqual(len(files), 1, files)
        path = os.path.join(cdir, files[0])
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o666)
        with open(path) as f:
            self.assertEqual(f.read(), "bye\n")

        p = d.wait_pod("logs", failed, 90, "phase Failed")
        term = terminated(p, "c")
        self.assertEqual((term.get("exitCode"), term.get("message")), (1, "first\nlast words\n"), p["status"])

        p = d.wait_pod("nologs", failed, 90, "phase Failed")
        term = terminated(p, "c")
        self.assertEqual(term.get("exitCode"), 1, p["status"])
        self.assertNotIn("message", term, p["status"])


def main():
    global CTRD
    CTRD = Containerd(read_env("test_termination_message.py"))
    if not CTRD.alive():
        raise SystemExit(f"test_termination_message.py: containerd pid {CTRD.pid} is not running: did integration.setup fail?")
    remove_pod_logs_root_at_exit()
    harness.main()


if __name__ == "__main__":
    main()
