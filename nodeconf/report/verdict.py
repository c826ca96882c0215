"""The exit code of `nodeconf run`: 0 all checks passed, 1 a check failed, 2 usage or infrastructure error.

Source: DESIGN.md `nodeconf run` contract; pytest's exit codes (pytest.ExitCode).
"""

from dataclasses import dataclass

import pytest

from nodeconf.report.results import RunResults, Status

EXIT_PASSED = 0
EXIT_CHECK_FAILED = 1
EXIT_ERROR = 2


@dataclass(frozen=True)
class Verdict:
    """The run's exit code and the one-line reason for it."""

    code: int
    reason: str


def verdict(pytest_status: int, results: RunResults | None) -> Verdict:
    """Map pytest's exit status and the checks' statuses to the run's exit code.

    A failed assertion anywhere is a product defect (1) even if other checks broke; otherwise any broken check,
    an interrupted, unusable or empty run, or a run where every check was skipped is an error (2).
    """
    if pytest_status == pytest.ExitCode.NO_TESTS_COLLECTED:
        return Verdict(EXIT_ERROR, "no check was collected")
    if pytest_status == pytest.ExitCode.INTERRUPTED:
        return Verdict(EXIT_ERROR, "the run was interrupted (collection error or Ctrl-C)")
    if pytest_status == pytest.ExitCode.USAGE_ERROR:
        return Verdict(EXIT_ERROR, "pytest rejected the command line")
    if pytest_status not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        return Verdict(EXIT_ERROR, f"pytest stopped with an internal error (exit status {pytest_status})")
    if results is None or not results.checks:
        return Verdict(EXIT_ERROR, "no check left a result")
    failed, broken = results.count(Status.FAILED), results.count(Status.BROKEN)
    if failed:
        return Verdict(EXIT_CHECK_FAILED, f"{failed} check(s) failed")
    if broken:
        return Verdict(EXIT_ERROR, f"{broken} check(s) broken by an infrastructure error")
    if pytest_status == pytest.ExitCode.TESTS_FAILED:
        return Verdict(EXIT_ERROR, "pytest reported an error outside any check")
    if not results.count(Status.PASSED):
        return Verdict(EXIT_ERROR, f"no check ran: all {len(results.checks)} skipped")
    return Verdict(EXIT_PASSED, "all checks that apply passed")
