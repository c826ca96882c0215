"""Failures grouped by cause (nodeconf.report.causes), as the HTML report and the terminal summary show them: from
the structured rows of each check's comparison tables, never from its message."""

from __future__ import annotations

from pathlib import Path

from nodeconf.report.causes import Cause, Failure, causes
from nodeconf.report.comparison import Mismatch
from nodeconf.report.results import load_results
from nodeconf.report.summary import run_causes
from tests.unit.report.comparison_rows import Row, record_failure

RULE = "nonlinear; the node's runtime runc 1.1.5 uses the linear formula"


def weight(pod: str) -> Mismatch:
    return Mismatch(pod, "app", f"kubepods.slice/{pod}.slice/c.scope", "cpu.weight", "35", "10", RULE)


SWAP = Mismatch("p", "app", "kubepods.slice/p.slice/c.scope", "outcome under pressure", "Running", "OOMKilled (137)",
                "KEP-5359")


def failure(check: str, *rows: Mismatch, status: str = "failed") -> Failure:
    return Failure(check, status, f"AssertionError: pod default/{check}: values differ", rows)


def test_checks_failing_for_one_reason_are_one_cause_with_the_path_left_out() -> None:
    found = causes([failure("a", weight("a"), weight("a")), failure("b", weight("b")), failure("c", SWAP)])
    assert found[0] == Cause("failed", 'value of cgroup "cpu.weight" for container', ("a", "b"),
                             'value of cgroup "cpu.weight" for container "app" of pod "a" was "10"; expected "35" '
                             "(rule: nonlinear; the node's runtime runc 1.1.5 uses the linear formula)")
    assert [(c.about, c.checks) for c in found[1:]] == [
        ('value of measurement "outcome under pressure" for container', ("c",))]


def test_a_check_counts_once_in_each_cause_its_mismatches_name() -> None:
    found = causes([failure("a", weight("a"), SWAP)])
    assert sorted(c.about for c in found) == ['value of cgroup "cpu.weight" for container',
                                              'value of measurement "outcome under pressure" for container']


def test_a_pods_value_the_pause_containers_and_the_nodes_are_causes_of_their_own() -> None:
    pod = Mismatch("a", "", "kubepods/pa", "cpu.weight", "4", "2", "r")
    pause = Mismatch("a", "(pause)", "kubepods/pa/x", "memory.max", "max", "(absent)", "r")
    node = Mismatch("", "", "kubepods.slice", "cpu.weight", "8", "9", "r")
    found = causes([failure("a", pod, weight("a"), pause, node)])
    assert sorted((c.about, c.example) for c in found) == [
        ('value of cgroup "cpu.weight" for container', 'value of cgroup "cpu.weight" for container "app" of pod "a" '
         f'was "10"; expected "35" (rule: {RULE})'),
        ('value of cgroup "cpu.weight" for pod', 'value of cgroup "cpu.weight" for pod "a" was "2"; expected "4" '
                                                 '(rule: r)'),
        ('value of cgroup "cpu.weight" for the node', 'value of cgroup "cpu.weight" for the node was "9"; '
                                                      'expected "8" (rule: r)'),
        ('value of cgroup "memory.max" for the pause container', 'value of cgroup "memory.max" for the pause '
         'container of pod "a" was (absent); expected "max" (rule: r)')]


def test_a_check_without_mismatches_is_grouped_by_its_first_line_and_status() -> None:
    broken = [Failure(name, "broken", "\nKeyError: 'memory.swap.max'\n  trace") for name in ("x", "y")]
    found = causes([*broken, Failure("z", "failed", "KeyError: 'memory.swap.max'")])
    assert [(c.status, c.about, c.checks) for c in found] == [
        ("broken", "KeyError: 'memory.swap.max'", ("x", "y")), ("failed", "KeyError: 'memory.swap.max'", ("z",))]


MESSAGE = ('AssertionError: pod default/{pod}: 1 of 2 compared values differ from the oracle\n'
           '  value of cgroup "cpu.weight" for container "app" of pod "{pod}" at kubepods.slice/x was "10"; '
           'expected "35" (rule: r)')
ROWS = (Row("{pod}", "app", "kubepods.slice/x", "memory.max", "268435456", "268435456", "limits.memory", True),
        Row("{pod}", "app", "kubepods.slice/x", "cpu.weight", "35", "10", "r", False))


def _recorded(results: Path, message: str) -> list[Cause]:
    """Two failed checks recorded with their comparison tables and `message`, read back, grouped by cause."""
    results.mkdir()
    for pod in ("a", "b"):
        rows = [Row(pod, *(getattr(row, f) for f in ("container", "cgroup_path", "file", "expected", "actual",
                                                      "rule", "ok"))) for row in ROWS]
        record_failure(results, pod, message.format(pod=pod), rows)
    return run_causes(load_results(results))


def test_a_recorded_result_is_grouped_by_the_rows_of_its_table(tmp_path: Path) -> None:
    assert _recorded(tmp_path / "r", MESSAGE) == [
        Cause("failed", 'value of cgroup "cpu.weight" for container',
              ("suites.s.test_m#test_a", "suites.s.test_m#test_b"),
              'value of cgroup "cpu.weight" for container "app" of pod "a" was "10"; expected "35" (rule: r)')]


def test_rewording_the_message_does_not_change_the_causes(tmp_path: Path) -> None:
    reworded = ("AssertionError: {pod}: the node disagrees with the oracle\n"
                '  memory.max of pod "{pod}": expected 1, found 2\n'
                '  value of cgroup "memory.max" for pod "{pod}" was "1"; expected "2" (rule: not a row)')
    assert _recorded(tmp_path / "reworded", reworded) == _recorded(tmp_path / "original", MESSAGE)


def test_a_mismatch_told_only_in_the_message_is_no_cause_of_its_own() -> None:
    found = causes([Failure("a", "failed", MESSAGE.format(pod="a"))])
    assert [c.about for c in found] == ["AssertionError: pod default/a: 1 of 2 compared values differ from the oracle"]
