"""nodeconf/fixtures/sonobuoy_progress.py posts total/completed/failures to a loopback HTTP server standing in for
Sonobuoy's worker (POST /progress, JSON ProgressUpdate fields; Sonobuoy's plugin_helper ProgressReporter), and an absent
endpoint leaves the run's outcome alone."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CHECKS = """
import pytest
def test_a(): pass
def test_b(): assert False
@pytest.mark.skip(reason="not applicable")
def test_c(): pass
"""


def run_pytest(tmp_path: Path, port: int, *options: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_checks.py").write_text(CHECKS)
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTEST_PLUGINS": "nodeconf.fixtures.sonobuoy_progress",
           "SONOBUOY_PROGRESS_PORT": str(port)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           *options, str(tmp_path / "test_checks.py")], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one-node", "xdist-workers"])
def test_each_finished_check_posts_its_progress(tmp_path: Path, workers: tuple[str, ...]) -> None:
    """A run on several nodes (one xdist worker each) posts from the controller only, which sees every report."""
    posted: list[tuple[str, Any]] = []

    class Worker(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            posted.append((self.path, json.loads(self.rfile.read(int(self.headers["Content-Length"])))))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Worker)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        done = run_pytest(tmp_path, server.server_address[1], *workers)
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 1, done.stdout  # test_b fails: the run's outcome is unchanged
    assert {path for path, _ in posted} == {"/progress"}
    updates = [body for _, body in posted]
    assert updates[0] == {"msg": "3 checks collected", "total": 3, "completed": 0, "failures": []}
    counts = [(u["completed"], len(u["failures"])) for u in updates[1:]]
    assert len(counts) == 3 and counts[-1] == (2, 1) and counts == sorted(counts), counts
    assert updates[-1]["failures"] == ["test_checks.py::test_b"] and updates[-1]["total"] == 3
    assert {u["msg"] for u in updates[1:]} == {"test_checks.py::test_a: passed", "test_checks.py::test_b: failed",
                                               "test_checks.py::test_c: skipped"}


def test_an_absent_endpoint_never_fails_the_run(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done = run_pytest(tmp_path, port)
    assert done.returncode == 1 and "1 failed, 1 passed, 1 skipped" in done.stdout, done.stdout + done.stderr


def test_the_sonobuoy_plugin_loads_the_progress_hook() -> None:
    spec = yaml.safe_load((REPO / "nodeconf" / "infra" / "sonobuoy" / "nodeconf-plugin.yaml").read_text())["spec"]
    assert {"name": "PYTEST_PLUGINS", "value": "nodeconf.fixtures.sonobuoy_progress"} in spec["env"]
