"""benchmarks/suites_bench.py: the checks of a JUnit file and the run's figures (checks per second, the share of
the slowest checks in the wall time)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))

import check_profile  # noqa: E402
import suites_bench  # noqa: E402

JUNIT = """<?xml version="1.0"?><testsuites><testsuite name="nodeconf">
<testcase classname="suites.swap.test_pressure" name="test_a[vm]" time="30.0"/>
<testcase classname="suites.swap.test_pressure" name="test_b[vm]" time="10.0"><failure message="x"/></testcase>
<testcase classname="suites.upstream.test_psi" name="test_c[vm]" time="5.0"><skipped/></testcase>
<testcase classname="suites.upstream.test_psi" name="test_d[vm]" time="5.0"><error message="y"/></testcase>
</testsuite></testsuites>"""


def test_figures_of_a_run(tmp_path: Path) -> None:
    (tmp_path / "junit.xml").write_text(JUNIT)
    checks = suites_bench.junit_checks(tmp_path / "junit.xml")
    assert [(c.suite, c.name, c.outcome) for c in checks] == [
        ("swap", "test_a[vm]", "passed"), ("swap", "test_b[vm]", "failure"), ("upstream", "test_c[vm]", "skipped"),
        ("upstream", "test_d[vm]", "error")]
    result = suites_bench.summary("vm", 80.0, 1, checks, 2, ((3.0, 2.0, 1.0), (4.0, 2.5, 1.0)))
    assert (result["checks"], result["checks_per_second"], result["wall_seconds"]) == (4, 0.05, 80.0)
    assert result["slowest_share"] == 0.5  # (30 + 10) s of 80 s
    assert [s["test"] for s in result["slowest"]] == ["test_a[vm]", "test_b[vm]"]
    assert result["suites"] == {"swap": {"checks": 2, "seconds": 40.0}, "upstream": {"checks": 2, "seconds": 10.0}}
    assert result["outcomes"] == {"passed": 1, "failure": 1, "skipped": 1, "error": 1}
    assert result["load_average"] == {"before": [3.0, 2.0, 1.0], "after": [4.0, 2.5, 1.0]}
    assert result["first_check_seconds"] == 30.0  # the first check's setup holds the node's start


def test_variants_run_one_after_the_other(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """`--variant default --variant systemd-runc`: the default VM, then the systemd + runc one, each reported."""
    (tmp_path / "junit.xml").write_text(JUNIT)
    nodes: list[str] = []

    def run(node: str, extra: list[str], profile: bool = False, slowest: int = 10) -> suites_bench.Run:
        nodes.append(node)
        return suites_bench.Run(80.0, 0, suites_bench.junit_checks(tmp_path / "junit.xml"), None)

    monkeypatch.setattr(suites_bench, "run", run)
    assert suites_bench.main(["--variant", "default", "--variant", "systemd-runc"]) == 0
    assert nodes == ["vm", "vm?init=systemd&runtime=runc"]
    out = capsys.readouterr().out
    assert "4 checks in 80.0 s on vm (exit 0), 0.05 checks/s" in out
    assert "4 checks in 80.0 s on vm?init=systemd&runtime=runc (exit 0)" in out


PROFILED_CHECK = '''
import time

from nodeconf.enforcer.wire import Op, Reply, encode_reply
from nodeconf.nodes.enforced.agent_client import AgentClient


class Answering:
    """A stream whose agent answers every request after 250 ms of its own work."""

    def __init__(self):
        self.ident = 0

    def write(self, data):
        self.ident += 1

    def readline(self, timeout=None):
        return encode_reply(Reply(self.ident, True, {}, agent_ms=250.0))

    def close(self):
        pass


def test_polls():
    client = AgentClient(Answering())
    client.call(Op.STATUS, pod="default/a")
    client.call(Op.STATUS, pod="default/a")
    client.call(Op.CONFIGURE, config={}, version=None)
    time.sleep(0.01)


def test_idle():
    pass
'''


pytest_plugins = ("pytester",)


def test_profile_attributes_requests_and_sleeps_to_their_check(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """`--profile`: each check's agent requests (count, the agent's own seconds) and its sleeps, then per suite."""
    pytester.makepyfile(test_profiled=PROFILED_CHECK)
    target = tmp_path / "profile.json"
    result = pytester.runpytest_inprocess("-p", "check_profile", f"--check-profile={target}", "-q")
    result.assert_outcomes(passed=2)
    checks = json.loads(target.read_text())
    polls = checks["test_profiled.py::test_polls"]
    assert {op: (f["count"], f["agent"]) for op, f in polls["agent"].items()} == {
        "status": (2, 0.5), "configure": (1, 0.25)}
    assert polls["sleep"] == 0.01
    assert set(polls["phases"]) == {"setup", "call", "teardown"}
    assert checks["test_profiled.py::test_idle"]["agent"] == {}
    found = check_profile.breakdown(checks)
    assert (found["total"]["checks"], found["total"]["requests"], found["total"]["configures"]) == (2, 3, 1)
    assert found["total"]["agent"] == 0.75
    assert {op: f["count"] for op, f in found["ops"].items()} == {"status": 2, "configure": 1}


def test_the_nodes_open_and_close_keep_their_requests_and_sleeps() -> None:
    """Requests and sleeps inside the node's open (the VM boot, the agent's start) count as the open's, so a
    check's agent and sleep seconds never count them twice."""
    profile = check_profile.Profile()
    profile.current = "suites/swap/test_x.py::test_a[vm]"
    profile.in_node = 1
    profile.request("ping", 2.0, 5.0)
    profile.slept(1.0)
    profile.in_node = 0
    profile.node("open", 10.0)
    profile.request("run", 0.5, 400.0)
    entry = profile.checks[profile.current]
    entry["phases"] = {"setup": 10.6}
    assert (entry["agent"], entry["sleep"], entry["node"]) == (
        {"run": {"count": 1, "wall": 0.5, "agent": 0.4}}, 0.0, {"open": 10.0})
    row = check_profile.breakdown(profile.checks)["suites"]["swap"]
    assert (row["node_open_close"], row["agent"], row["transport"], row["rest"]) == (10.0, 0.4, 0.1, 0.1)
