"""The run's terminal summary: a failed check's line names it as pytest does, parameter id included."""

from pathlib import Path

import pytest

from nodeconf.report.causes import advice as cause_advice
from nodeconf.report.comparison import COMPARISON_MIME, comparison_csv
from nodeconf.report.results import Attachment, Check, RunResults, Status
from nodeconf.report.summary import cause_lines, check_id, problem_lines
from tests.unit.report.comparison_rows import Row


def _check(name: str, full_name: str) -> Check:
    return Check(name=name, full_name=full_name, status=Status.FAILED, message="AssertionError: 1 of 25 differ",
                 trace="", labels=(), parameters=(), steps=(), attachments=(), fixtures=(), duration_ms=0)


@pytest.mark.parametrize(
    ("name", "full_name", "expected"),
    [
        pytest.param("test_qos[guaranteed]", "suites.resources.test_res_demo#test_qos",
                     "suites.resources.test_res_demo#test_qos[guaranteed]", id="parametrized"),
        pytest.param("test_plain", "suites.swap.test_x#test_plain", "suites.swap.test_x#test_plain", id="plain"),
        pytest.param("test_only_name", "", "test_only_name", id="no-module"),
    ],
)
def test_check_id(name: str, full_name: str, expected: str) -> None:
    assert check_id(_check(name, full_name or name)) == expected


def test_two_cases_of_one_test_are_told_apart() -> None:
    results = RunResults(results_dir=Path("r"), shared_fixtures=(), environment=(), checks=(
        _check("test_qos[guaranteed]", "suites.s#test_qos"), _check("test_qos[burstable]", "suites.s#test_qos")))
    assert problem_lines(results) == [
        "  FAILED  suites.s#test_qos[guaranteed]: AssertionError: 1 of 25 differ",
        "  FAILED  suites.s#test_qos[burstable]: AssertionError: 1 of 25 differ",
    ]


def _failed(directory: Path, pod: str) -> Check:
    """A check whose comparison table has one differing value: its container's cpu.weight."""
    table = directory / f"{pod}-attachment.csv"
    table.write_text(comparison_csv([Row(pod, "c", "kubepods/p", "cpu.weight", "35", "10", "r", False)]))
    return Check(name=f"test_{pod}", full_name=f"suites.s#test_{pod}", status=Status.FAILED,
                 message="AssertionError: 1 of 9 differ", trace="", labels=(), parameters=(), steps=(),
                 attachments=(Attachment("expected vs actual", COMPARISON_MIME, table),), fixtures=(), duration_ms=0)


def test_a_cause_shared_by_several_failures_is_one_line(tmp_path: Path) -> None:
    checks = tuple(_failed(tmp_path, pod) for pod in "ab")
    results = RunResults(results_dir=Path("r"), shared_fixtures=(), environment=(), checks=checks)
    assert cause_lines(results) == [
        "causes:", '  2 failed on value of cgroup "cpu.weight" for container, e.g. "c" of pod "a" was "10"; '
                   'expected "35" (rule: r)',
        "    what to check: container cpu.weight is the runtime's shares→weight formula; a runtime writing the "
        "linear one fails here: upgrade to runc ≥ 1.3.2 / crun ≥ 1.23, or accept it with --cpu-weight-formula linear"]
    single = RunResults(results_dir=Path("r"), shared_fixtures=(), environment=(), checks=checks[:1])
    assert cause_lines(single) == []


@pytest.mark.parametrize(("status", "about", "advice"), [
    ("failed", 'value of cgroup "memory.swap.max" for container', "check memorySwap.swapBehavior"),
    ("failed", 'value of cgroup "memory.high" for container', "check the MemoryQoS gate"),
    ("failed", 'value of cgroup "cpu.weight" for pod', "pod, QoS and kubepods cpu.weight are the kubelet's"),
    ("failed", "path for container", "the cgroup layout differs"),
    ("broken", "ConnectionError: ssh: Connection refused", "no verdict was reached"),
    ("failed", "assert 1 == 2", ""),
], ids=["swap", "memory-qos", "pod-weight", "layout", "broken", "unknown"])
def test_each_cause_says_what_to_check(status: str, about: str, advice: str) -> None:
    assert cause_advice(status, about).startswith(advice) and bool(cause_advice(status, about)) == bool(advice)
