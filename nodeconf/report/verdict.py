"""The verdict of a run: PASS 0, FAIL 1, ERROR 2, NOTHING RAN 2, INTERRUPTED 2 (label, exit code, reason).

Source: DESIGN.md `nodeconf run` contract; pytest's exit codes (pytest.ExitCode); issue 10 item 3 (a run that
did not finish is INTERRUPTED, never PASS).
"""

from dataclasses import dataclass

import pytest

from nodeconf.report.results import Check, RunResults, Status

EXIT_PASSED = 0
EXIT_CHECK_FAILED = 1
EXIT_ERROR = 2

PASS, FAIL, ERROR, NOTHING_RAN, INTERRUPTED = "PASS", "FAIL", "ERROR", "NOTHING RAN", "INTERRUPTED"


@dataclass(frozen=True)
class Verdict:
    """The run's banner word, its exit code and the one-line reason for it."""

    label: str
    code: int
    reason: str


def results_verdict(results: RunResults) -> Verdict:
    """The verdict the results alone give (what `nodeconf report` and the HTML banner say).

    A run that did not finish is INTERRUPTED whatever ran; otherwise a failed assertion is a product defect (1)
    even if other checks broke, a broken check an error (2), and a run where nothing passed NOTHING RAN (2).
    With several nodes each node gets its verdict and the run the worst of them (issue 14).
    """
    if results.run_state is not None and not results.run_state.complete:
        return Verdict(INTERRUPTED, EXIT_ERROR, f"the run did not finish: {results.run_state.reason}")
    names = results.node_names
    if len(names) > 1:
        return worst_verdict({name: node_verdict(results, name) for name in names})
    return _checks_verdict(results.checks)


def node_verdict(results: RunResults, name: str) -> Verdict:
    """The verdict of one node's checks (the checks without a node count for every node)."""
    return _checks_verdict(tuple(check for check in results.checks if check.node in (name, "")))


def worst_verdict(per_node: dict[str, Verdict]) -> Verdict:
    """The worst node's verdict (highest exit code, the first such node), with every node's label in the reason."""
    worst = max(per_node.values(), key=lambda outcome: outcome.code)
    parts = "; ".join(f"{name} {outcome.label}: {outcome.reason}" for name, outcome in per_node.items())
    return Verdict(worst.label, worst.code, f"worst of {len(per_node)} nodes: {parts}")


def _checks_verdict(checks: tuple[Check, ...]) -> Verdict:
    failed = sum(1 for check in checks if check.status is Status.FAILED)
    broken = sum(1 for check in checks if check.status is Status.BROKEN)
    passed = sum(1 for check in checks if check.status is Status.PASSED)
    if failed:
        return Verdict(FAIL, EXIT_CHECK_FAILED, f"{failed} check(s) failed")
    if broken:
        return Verdict(ERROR, EXIT_ERROR, f"{broken} check(s) broken by an infrastructure error")
    if not checks:
        return Verdict(NOTHING_RAN, EXIT_ERROR, "no check left a result")
    if not passed:
        return Verdict(NOTHING_RAN, EXIT_ERROR, f"no check ran: all {len(checks)} skipped")
    return Verdict(PASS, EXIT_PASSED, "all checks that apply passed")


def verdict(pytest_status: int, results: RunResults | None) -> Verdict:
    """Map pytest's exit status and the checks' statuses to the run's verdict."""
    if pytest_status == pytest.ExitCode.NO_TESTS_COLLECTED:
        return Verdict(NOTHING_RAN, EXIT_ERROR, "no check was collected")
    if pytest_status == pytest.ExitCode.USAGE_ERROR:
        return Verdict(ERROR, EXIT_ERROR, "pytest rejected the command line")
    if results is not None and results.interrupted:
        return results_verdict(results)
    if pytest_status == pytest.ExitCode.INTERRUPTED:
        return Verdict(INTERRUPTED, EXIT_ERROR, "the run was interrupted (collection error, Ctrl-C or a signal)")
    if pytest_status not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        return Verdict(INTERRUPTED, EXIT_ERROR, f"pytest stopped before the run finished (exit status {pytest_status})")
    if results is None:
        return Verdict(NOTHING_RAN, EXIT_ERROR, "no check left a result")
    outcome = results_verdict(results)
    if outcome.label == PASS and pytest_status == pytest.ExitCode.TESTS_FAILED:
        return Verdict(ERROR, EXIT_ERROR, "pytest reported an error outside any check")
    return outcome
