"""benchmarks/suites_bench.py: the checks of a JUnit file and the run's figures (checks per second, the share of
the slowest checks in the wall time)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from nodeconf.nodes.enforced.node import EnforcedNode
from nodeconf.nodes.transport.base import CommandResult, TransportError

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

import pytest

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


@pytest.mark.independent
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
    checks = json.loads(target.read_text())["checks"]
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
    assert {rule: (row["checks"], row["agent"]) for rule, row in found["rules"].items()} == {
        "(none)": (1, 0.75), "independent": (1, 0.0)}


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


# proc_stat(5): user nice system idle iowait irq softirq steal guest guest_nice; guest time is inside user already.
STAT_BEFORE = """cpu  100 5 50 800 20 3 2 0 40 0
cpu0 60 5 30 390 10 2 1 0 40 0
cpu1 40 0 20 410 10 1 1 0 0 0
intr 12345 1 2 3
ctxt 999
"""
STAT_AFTER = """cpu  300 5 150 860 40 3 2 0 90 0
cpu0 160 5 80 390 10 2 1 0 90 0
cpu1 140 0 70 470 30 1 1 0 0 0
intr 23456 1 2 3
ctxt 1999
"""


def test_proc_stat_busy_and_idle_jiffies() -> None:
    """busy = user + nice + system + irq + softirq + steal (guest is counted in user), idle = idle + iowait."""
    assert check_profile.cpu_jiffies(STAT_BEFORE) == {"cpu": (160, 820), "cpu0": (98, 400), "cpu1": (62, 420)}
    assert check_profile.cpu_jiffies("cpu0 1 2 3 4\n\n") == {"cpu0": (6, 4)}  # fewer columns, an empty line


def test_busy_fraction_between_two_readings() -> None:
    before, after = check_profile.cpu_jiffies(STAT_BEFORE), check_profile.cpu_jiffies(STAT_AFTER)
    # cpu: busy 460 - 160 = 300, idle 900 - 820 = 80; cpu0: 248 - 98 = 150 busy, none idle; cpu1: 150, 80
    assert check_profile.busy_fraction(before, after) == {"cpu": 300 / 380, "cpu0": 1.0, "cpu1": 150 / 230}
    assert check_profile.busy_fraction(before, before) == {}  # no jiffies between them: no share


def test_guest_cpu_over_the_run_and_per_suite() -> None:
    """Each span from one reading to the next counts for the suite of the module it starts at."""
    def reading(mark: str, at: float, busy: int, idle: int) -> dict[str, object]:
        return {"mark": mark, "at": at, "read": 0.1, "jiffies": {"cpu": [busy, idle]}}

    readings = [reading("suites/swap/test_a.py", 10.0, 0, 0), reading("suites/swap/test_b.py", 20.0, 150, 50),
                reading("suites/upstream/test_c.py", 30.0, 200, 200), reading(check_profile.CLOSE, 50.0, 300, 300)]
    found = check_profile.guest_cpu(readings)
    assert (found["seconds"], found["readings"], found["read_seconds"], found["busy"]) == (40.0, 4, 0.4, {"cpu": 0.5})
    assert found["suites"] == {"swap": {"seconds": 20.0, "busy": {"cpu": 0.5}},  # (150 + 50) / (200 + 200)
                               "upstream": {"seconds": 20.0, "busy": {"cpu": 0.5}}}
    assert check_profile.guest_cpu(readings[:1]) == {}


class StatTransport:
    """A node's transport that answers `cat /proc/stat` with a recorded text, then fails."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.asked: list[list[str]] = []

    def run(self, argv: list[str], *, input: bytes | None = None, timeout: float = 60.0) -> CommandResult:
        self.asked.append(list(argv))
        if not self.texts:
            raise TransportError("connection lost")
        return CommandResult(tuple(argv), 0, self.texts.pop(0).encode(), b"")


def test_the_recorder_reads_the_open_nodes_proc_stat(tmp_path: Path) -> None:
    transport = StatTransport([STAT_BEFORE])
    recorder = check_profile.Recorder(tmp_path / "profile.json")
    recorder.read_cpu("suites/swap/test_a.py")  # no node open: nothing read
    recorder.node = EnforcedNode(transport)  # type: ignore[arg-type]
    recorder.read_cpu("suites/swap/test_a.py")
    recorder.read_cpu(check_profile.CLOSE)  # the transport fails: no reading, the run goes on
    assert transport.asked == [["cat", "/proc/stat"]] * 2
    assert [(r["mark"], r["jiffies"]["cpu"]) for r in recorder.profile.cpu] == [("suites/swap/test_a.py", (160, 820))]


def _proc_stat(pid: int, comm: str, ppid: int, utime: int, stime: int) -> str:
    """A /proc/PID/stat line: fields 14 and 15 are utime and stime, in clock ticks."""
    return f"{pid} ({comm}) S {ppid} " + " ".join(["0"] * 9) + f" {utime} {stime} 0 0 20 0 1 0 100\n"


def test_host_reading_counts_the_qemu_this_driver_started_and_itself(tmp_path: Path) -> None:
    tick = os.sysconf("SC_CLK_TCK")
    me = os.getpid()
    for pid, comm, ppid, utime in ((11, "qemu-system-x86", me, 3), (12, "qemu-system-x86", 1, 50),
                                   (13, "odd) (name", me, 70)):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(_proc_stat(pid, comm, ppid, utime * tick, tick))
    (tmp_path / "self").mkdir()
    (tmp_path / "self" / "stat").write_text(_proc_stat(me, "python3", 1, 2 * tick, 0))
    (tmp_path / "stat").write_text(STAT_BEFORE)
    (tmp_path / "14").mkdir()  # a process gone between the listing and the read
    found = check_profile.host_reading(tmp_path)
    # only pid 11: 12 is someone else's qemu, 13 is not a qemu though its name holds a parenthesis
    assert (found["qemu"], found["driver"], found["jiffies"]["cpu"]) == (4.0, 2.0, (160, 820))


def test_host_cpu_between_two_readings() -> None:
    before = {"jiffies": check_profile.cpu_jiffies(STAT_BEFORE), "qemu": 10.0, "driver": 1.0}
    after = {"jiffies": check_profile.cpu_jiffies(STAT_AFTER), "qemu": 12.5, "driver": 1.5}
    found = check_profile.host_cpu(before, after)
    tick = os.sysconf("SC_CLK_TCK")
    assert found == {"busy": {"cpu": round(300 / 380, 3), "cpu0": 1.0, "cpu1": round(150 / 230, 3)},
                     "cpu_seconds": round(380 / tick, 1), "cpus": 2, "qemu": 2.5, "driver": 0.5}
    assert check_profile.host_cpu(None, after) == {}
