"""`nodeconf run` stopped mid-run on the reference VM: SIGINT to its process group or SIGTERM to nodeconf alone
ends with exit 2, an INTERRUPTED report, no qemu and no pytest left (issue 10 items 3, 4 and 6)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from nodeconf.infra.vm.state import process_start

pytestmark = pytest.mark.vm

ROOT = Path(__file__).resolve().parents[2]
# A few checks, so the first result is written soon after the boot and several are still to come.
SELECTION = ("suites/resources/test_allocatable_and_admission.py", "suites/resources/test_res_demo.py")
FIRST_RESULT_TIMEOUT_S = 900.0
STOP_TIMEOUT_S = 300.0


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
            except OSError:
                continue
            tree.setdefault(int(fields[1]), []).append(int(entry.name))
    return tree


def descendants(pid: int) -> dict[int, tuple[int, str]]:
    """Every live descendant of `pid`: pid -> (start time, command line)."""
    tree, found, pending = _children(), {}, [pid]
    while pending:
        for child in tree.get(pending.pop(), []):
            try:
                cmdline = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            found[child] = (process_start(child), cmdline)
            pending.append(child)
    return found


def still_alive(processes: dict[int, tuple[int, str]]) -> list[str]:
    """The processes of `processes` that still run (same pid and start time, not a zombie)."""
    alive = []
    for pid, (start, cmdline) in processes.items():
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if state != "Z" and process_start(pid) == start:
            alive.append(f"{pid}: {cmdline[:120]}")
    return alive


def wait_for_first_result(process: subprocess.Popen[str], results: Path) -> None:
    deadline = time.monotonic() + FIRST_RESULT_TIMEOUT_S
    while not any(results.glob("*-result.json")):
        assert process.poll() is None, f"nodeconf run ended before any check finished: {process.communicate()}"
        assert time.monotonic() < deadline, "no check finished in time"
        time.sleep(0.2)


@pytest.mark.parametrize("how", ["sigint-to-group", "sigterm-to-nodeconf"])
def test_a_stopped_run_is_interrupted_and_leaves_nothing(tmp_path: Path, how: str) -> None:
    reports = tmp_path / "reports"
    results = reports / "allure-results"
    process = subprocess.Popen(
        [sys.executable, "-m", "nodeconf", "run", "--node", "vm", "--reports", str(reports), *SELECTION],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    try:
        wait_for_first_result(process, results)
        started = descendants(process.pid)
        assert any("qemu-system" in cmdline for _, cmdline in started.values()), started
        assert any("pytest" in cmdline for _, cmdline in started.values()), started
        signalled = time.monotonic()
        if how == "sigint-to-group":
            os.killpg(process.pid, signal.SIGINT)
        else:
            os.kill(process.pid, signal.SIGTERM)
        output, _ = process.communicate(timeout=STOP_TIMEOUT_S)
        stopped_after = time.monotonic() - signalled
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    print(f"{how}: nodeconf exited {stopped_after:.1f} s after the signal")

    assert process.returncode == 2, output[-4000:]
    assert not still_alive(started), f"left running: {still_alive(started)}"
    assert "INTERRUPTED" in output
    html = (reports / "html" / "nodeconf-report.html").read_text()
    assert 'class="verdict">INTERRUPTED<' in html
    state = json.loads((results / "nodeconf-run.json").read_text())
    assert state["complete"] is False and state["reason"], state
    assert "run_complete=false" in (results / "environment.properties").read_text()
    statuses = [json.loads(path.read_text()) for path in results.glob("*-result.json")]
    interrupted = [r for r in statuses if "INTERRUPTED" in (r.get("statusDetails") or {}).get("message", "")]
    assert interrupted and all(r["status"] == "broken" for r in interrupted), statuses
    suite = ET.parse(reports / "junit.xml").getroot().find("testsuite")
    assert suite is not None and int(suite.get("errors", "0")) >= 1
    assert any(p.get("name") == "run_complete" and p.get("value") == "false" for p in suite.iter("property"))

    report = subprocess.run([sys.executable, "-m", "nodeconf", "report", str(results), "-o", str(tmp_path / "again")],
                            cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert report.returncode == 2 and "INTERRUPTED" in report.stderr, report
