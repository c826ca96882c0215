"""Failures grouped by cause (nodeconf.report.causes), as the HTML report and the terminal summary show them."""

from __future__ import annotations

from nodeconf.report.causes import Cause, Failure, causes, mismatch_lines

WEIGHT = ('  value of cgroup "cpu.weight" for container "app" of pod "{pod}" at kubepods.slice/{pod}.slice/c.scope '
          'was "10"; expected "35" (rule: nonlinear; the node\'s runtime runc 1.1.5 uses the linear formula)')
SWAP = ('  value of measurement "outcome under pressure" for container "app" of pod "p" was "OOMKilled (137)"; '
        'expected "Running" (rule: KEP-5359)')


def failure(check: str, *lines: str, status: str = "failed") -> Failure:
    return Failure(check, status, "\n".join([f"AssertionError: pod default/{check}: values differ", *lines]))


def test_checks_failing_for_one_reason_are_one_cause_with_the_path_left_out() -> None:
    found = causes([failure("a", WEIGHT.format(pod="a"), WEIGHT.format(pod="a")), failure("b", WEIGHT.format(pod="b")),
                    failure("c", SWAP)])
    assert found[0] == Cause("failed", 'value of cgroup "cpu.weight" for container', ("a", "b"),
                             'value of cgroup "cpu.weight" for container "app" of pod "a" was "10"; expected "35" '
                             "(rule: nonlinear; the node's runtime runc 1.1.5 uses the linear formula)")
    assert [(c.about, c.checks) for c in found[1:]] == [
        ('value of measurement "outcome under pressure" for container', ("c",))]


def test_a_check_counts_once_in_each_cause_its_mismatches_name() -> None:
    found = causes([failure("a", WEIGHT.format(pod="a"), SWAP)])
    assert sorted(c.about for c in found) == ['value of cgroup "cpu.weight" for container',
                                              'value of measurement "outcome under pressure" for container']


def test_a_pods_value_and_a_containers_are_two_causes() -> None:
    pod_line = '  value of cgroup "cpu.weight" for pod "a" at kubepods/pa was "2"; expected "4" (rule: r)'
    found = causes([failure("a", pod_line, WEIGHT.format(pod="a"))])
    assert sorted((c.about, c.example) for c in found) == [
        ('value of cgroup "cpu.weight" for container', WEIGHT.format(pod="a").strip().replace(
            ' at kubepods.slice/a.slice/c.scope was ', ' was ')),
        ('value of cgroup "cpu.weight" for pod', 'value of cgroup "cpu.weight" for pod "a" was "2"; expected "4" '
                                                 '(rule: r)')]


def test_a_message_without_mismatches_is_grouped_by_its_first_line_and_status() -> None:
    broken = [Failure(name, "broken", "\nKeyError: 'memory.swap.max'\n  trace") for name in ("x", "y")]
    found = causes([*broken, Failure("z", "failed", "KeyError: 'memory.swap.max'")])
    assert [(c.status, c.about, c.checks) for c in found] == [
        ("broken", "KeyError: 'memory.swap.max'", ("x", "y")), ("failed", "KeyError: 'memory.swap.max'", ("z",))]


def test_mismatch_lines_are_the_stripped_comparison_lines() -> None:
    assert mismatch_lines(f"AssertionError: x\n{SWAP}\nassert 1 == 2") == [SWAP.strip()]
