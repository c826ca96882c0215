"""A pytest session stopped mid-way (SIGTERM, SIGINT, pytest.exit) is recorded as incomplete: the interrupted
check is broken in Allure and an error in JUnit, the run-state marker, environment.properties and a broken
pseudo-result say so, and `nodeconf report` answers INTERRUPTED with exit 2; a clean session flips the marker."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from nodeconf.report.generate import read_results
from nodeconf.report.html import render_html
from nodeconf.report.results import Status
from nodeconf.report.run_state import RUN_STATE_FILE
from nodeconf.report.verdict import INTERRUPTED, PASS, results_verdict

ROOT = Path(__file__).resolve().parents[3]
CHECKS = '''
import os, signal, time, pytest

@pytest.fixture
def resource():
    yield
    open(os.environ["FINALIZED"], "a").write("finalized\\n")

def test_first(resource):
    pass

def test_second(resource):
    STOP
    time.sleep(5)

def test_third():
    pass
'''
STOPS = {
    "sigterm": "os.kill(os.getpid(), signal.SIGTERM)",
    "sigint": "os.kill(os.getpid(), signal.SIGINT)",
    "pytest-exit": "pytest.exit('stopped')",
    "none": "pass",
}


def run_session(tmp_path: Path, stop: str) -> tuple[int, Path, Path, Path]:
    (tmp_path / "test_checks.py").write_text(CHECKS.replace("STOP", STOPS[stop]))
    results, junit, finalized = tmp_path / "allure-results", tmp_path / "junit.xml", tmp_path / "finalized"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(tmp_path / "test_checks.py"), "-p", "nodeconf.fixtures.evidence",
         "-p", "nodeconf.fixtures.session", "-p", "no:randomly", "-p", "no:cacheprovider", f"--alluredir={results}",
         f"--junitxml={junit}", "--rootdir", str(tmp_path), "-q"],
        cwd=ROOT, env={"FINALIZED": str(finalized), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=120, check=False,
    )
    return done.returncode, results, junit, finalized


@pytest.mark.parametrize("stop", ["sigterm", "sigint", "pytest-exit"])
def test_a_stopped_session_is_interrupted_everywhere(tmp_path: Path, stop: str) -> None:
    code, results, junit, finalized = run_session(tmp_path, stop)
    assert code == pytest.ExitCode.INTERRUPTED
    assert finalized.read_text().count("finalized") == 2, "the fixture's finalizer must run for both checks"

    state = json.loads((results / RUN_STATE_FILE).read_text())
    assert state["complete"] is False and "test_second" in state["reason"]
    assert "run_complete=false" in (results / "environment.properties").read_text()
    loaded = read_results(results)
    statuses = {check.name: check.status for check in loaded.checks}
    assert statuses == {"test_first": Status.PASSED, "test_second": Status.BROKEN}
    assert results_verdict(loaded).label == INTERRUPTED
    assert '<span class="verdict">INTERRUPTED</span>' in render_html(loaded)
    pseudo = [json.loads(p.read_text()) for p in results.glob("*-result.json")]
    assert any(r["name"] == "the run finished" and r["status"] == "broken" for r in pseudo)

    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert {p.get("name"): p.get("value") for p in suite.iter("property")} == {"run_complete": "false"}
    errors = {case.get("name"): case.find("error") is not None for case in suite.iter("testcase")}
    assert errors == {"test_first": False, "test_second": True, "run_complete": True}


def test_a_clean_session_is_complete(tmp_path: Path) -> None:
    code, results, junit, _ = run_session(tmp_path, "none")
    assert code == pytest.ExitCode.OK
    assert json.loads((results / RUN_STATE_FILE).read_text()) == {"complete": True, "reason": ""}
    loaded = read_results(results)
    assert results_verdict(loaded).label == PASS and len(loaded.checks) == 3
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("errors") == "0"
    assert {p.get("name"): p.get("value") for p in suite.iter("property")} == {"run_complete": "true"}


def test_a_killed_session_stays_incomplete(tmp_path: Path) -> None:
    """SIGKILL leaves no chance to write anything: the marker written at the start still says incomplete."""
    code, results, _, _ = run_session(tmp_path, "none")
    assert code == 0
    (results / RUN_STATE_FILE).write_text(json.dumps({"complete": False, "reason": "killed"}))
    assert results_verdict(read_results(results)).label == INTERRUPTED


def test_nodeconf_report_on_interrupted_results_exits_2(tmp_path: Path) -> None:
    _, results, _, _ = run_session(tmp_path, "sigterm")
    done = subprocess.run([sys.executable, "-m", "nodeconf", "report", str(results), "-o", str(tmp_path / "html")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert "INTERRUPTED" in done.stderr
    assert 'class="verdict">INTERRUPTED<' in (tmp_path / "html" / "nodeconf-report.html").read_text()
