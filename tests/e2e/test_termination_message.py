# SPDX-License-Identifier: Apache-2.0
"""e2e.termination_message: terminationMessagePath and -Policy (issue 14).

- a container that writes its termination-message path and exits 3: /pods
  shows the text as state.terminated.message (restartPolicy Never), and as
  lastState.terminated.message once an Always pod restarted it; the file
  lies under <root-dir>/pods/<uid>/containers/<name>/ (8 hex digits, 0666),
  the path it was written at being the manifest's own (/tmp/msg);
- no warning is logged for either field any more;
- FallbackToLogsOnError with an empty file and exit 1: the message is the
  log's tail; the daemon on the simulated runtime makes no log directory
  (only a real runtime gets /var/log/pods), so it is upstream's text for a
  log that cannot be read (docs/deviations.md D50).
"""

import os
import stat

import harness
from harness import container, pod_manifest


def terminated(cs, key="state"):
    return ((cs or {}).get(key) or {}).get("terminated") or {}


class TerminationMessage(harness.E2ETestCase):
    def test_message_in_pods(self):
        d = self.start_daemon(
            manifests={
                "once.yaml": pod_manifest(
                    "once",
                    [
                        container(
                            "c",
                            ["sh", "-c", "echo bye > /tmp/msg; exit 3"],
                            terminationMessagePath="/tmp/msg",
                        )
                    ],
                    "Never",
                ),
                "again.yaml": pod_manifest(
                    "again", [container("c", ["sh", "-c", "echo again > /dev/termination-log; exit 2"])]
                ),
                "logs.yaml": pod_manifest(
                    "logs",
                    [
                        container(
                            "c",
                            ["sh", "-c", "echo from stdout; exit 1"],
                            terminationMessagePolicy="FallbackToLogsOnError",
                        )
                    ],
                    "Never",
                ),
            },
            args=[
                "--crash-loop-back-off-initial-container-restart-period=1s",
                "--crash-loop-back-off-max-container-restart-period=2s",
            ],
        )
        p = d.wait_pod("once", lambda p: p["status"].get("phase") == "Failed", 30, "phase Failed")
        term = terminated(harness.container_status(p, "c"))
        self.assertEqual((term.get("exitCode"), term.get("message")), (3, "bye\n"), p["status"])

        cdir = os.path.join(d.root_dir, "pods", p["metadata"]["uid"], "containers", "c")
        files = os.listdir(cdir)
        self.assertEqual(len(files), 1, files)
        self.assertRegex(files[0], "^[0-9a-f]{8}$")
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(cdir, files[0])).st_mode), 0o666)

        def restarted(p):
            return terminated(harness.container_status(p, "c"), "lastState").get("message") is not None

        p = d.wait_pod("again", restarted, 30, "lastState.terminated.message")
        last = terminated(harness.container_status(p, "c"), "lastState")
        self.assertEqual((last.get("exitCode"), last.get("message")), (2, "again\n"), p["status"])

        p = d.wait_pod("logs", lambda p: p["status"].get("phase") == "Failed", 30, "phase Failed")
        term = terminated(harness.container_status(p, "c"))
        self.assertEqual(term.get("exitCode"), 1, p["status"])
        self.assertTrue(
            term.get("message", "").startswith(
                "Error on reading termination message from logs: failed to open log file "
            ),
            term,
        )
        self.assertNotIn("termination messages", d.log())


if __name__ == "__main__":
    harness.main()
