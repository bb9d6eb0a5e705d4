# SPDX-License-Identifier: Apache-2.0
"""integration.hooks: sidecars and lifecycle hooks, the cubelet daemon on the
fixture's containerd (issue 14, slice i14s).

- a sidecar (an init container with restartPolicy Always) runs beside the
  app: both tasks RUNNING in `ctr`, the pod Running with the sidecar's
  initContainerStatus running, started and ready;
- the app's postStart exec hook ran inside the container (through the CRI
  ExecSync): the file it wrote is there (`ctr tasks exec`);
- when the manifest is removed, the app's preStop httpGet hook reaches a
  server on the host while the app's task still runs, with the sidecar
  still running too (it is stopped after the app); then every task ends.
"""

import http.server
import os
import threading
import time

from daemon_lib import Containerd, cid_of, read_env, remove_pod_logs, remove_pod_logs_root_at_exit

import harness  # noqa: E402  (tests/e2e, put on sys.path by daemon_lib)
from harness import E2ETestCase, container, pod_manifest, wait_until  # noqa: E402

CTRD = None  # set in main()


class PreStopServer(http.server.ThreadingHTTPServer):
    """Records each request's path and the app's and sidecar's task states at that moment."""

    def __init__(self):
        super().__init__(("127.0.0.1", 0), PreStopHandler)
        self.seen = []
        self.cids = {}


class PreStopHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        tasks = CTRD.tasks()
        self.server.seen.append((self.path, {n: tasks.get(c) for n, c in self.server.cids.items()}))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def kill_left(uid):
    """cubelet leaves pods running when it exits: stop what a failed test left."""
    tasks = CTRD.tasks()
    for cid in CTRD.containers(uid):
        if tasks.get(cid) == "RUNNING":
            CTRD.kill_task(cid)


class Hooks(E2ETestCase):
    def test_sidecar_post_start_pre_stop(self):
        uid = f"integ-hooks-{os.getpid()}-{int(time.monotonic() * 1000) % 100000}"
        self.addCleanup(remove_pod_logs, [uid])
        self.addCleanup(kill_left, uid)  # runs after the daemon is stopped
        srv = PreStopServer()
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.shutdown)
        app = container(
            "app",
            ["sleep", "1000000"],
            image=CTRD.image,
            imagePullPolicy="IfNotPresent",
            lifecycle={
                "postStart": {"exec": {"command": ["sh", "-c", "echo started > /poststart"]}},
                "preStop": {"httpGet": {"host": "127.0.0.1", "port": srv.server_address[1], "path": "/prestop"}},
            },
        )
        side = container(
            "side", ["sleep", "1000000"], image=CTRD.image, imagePullPolicy="IfNotPresent", restartPolicy="Always"
        )
        pod = pod_manifest(
            "hooks", [app], uid=uid, hostNetwork=True, terminationGracePeriodSeconds=10, initContainers=[side]
        )
        d = self.start_daemon(manifests={"hooks.yaml": pod}, args=[f"--container-runtime-endpoint={CTRD.endpoint}"])

        # --- the sidecar beside the app ------------------------------------------
        p = d.wait_running("hooks", timeout=90)
        (ics,) = p["status"]["initContainerStatuses"]
        self.assertIn("running", ics["state"], ics)
        self.assertIs(ics["started"], True)
        self.assertIs(ics["ready"], True)
        app_cid = cid_of(p, "app")
        side_cid = ics["containerID"].split("://", 1)[1]
        tasks = CTRD.tasks()
        self.assertEqual(tasks.get(app_cid), "RUNNING", tasks)
        self.assertEqual(tasks.get(side_cid), "RUNNING", tasks)
        self.assertEqual(CTRD.containers(uid, "container"), {app_cid, side_cid})

        # --- postStart ran inside the container --------------------------------------
        out = CTRD.ctr("tasks", "exec", "--exec-id", f"check-{os.getpid()}", app_cid, "cat", "/poststart")
        self.assertEqual(out.strip(), "started")

        # --- preStop before the stop, the sidecar last ----------------------------
        srv.cids = {"app": app_cid, "side": side_cid}
        d.remove_manifest("hooks.yaml")
        wait_until(lambda: srv.seen, 30, "the preStop hook's request", daemon=d)
        path, states = srv.seen[0]
        self.assertEqual(path, "/prestop")
        self.assertEqual(states, {"app": "RUNNING", "side": "RUNNING"}, "tasks when preStop ran")

        def all_stopped():
            t = CTRD.tasks()
            return t.get(app_cid) != "RUNNING" and t.get(side_cid) != "RUNNING"

        wait_until(all_stopped, 60, "the app and the sidecar to stop", daemon=d)
        self.assertEqual(len(srv.seen), 1, srv.seen)


def main():
    global CTRD
    CTRD = Containerd(read_env("test_hooks.py"))
    if not CTRD.alive():
        raise SystemExit(f"test_hooks.py: containerd pid {CTRD.pid} is not running: did integration.setup fail?")
    remove_pod_logs_root_at_exit()
    harness.main()


if __name__ == "__main__":
    main()
