"""Exit codes of `nodeconf run`: 0 all passed, 1 a check failed, 2 usage or infrastructure error."""

from pathlib import Path

import pytest

from nodeconf.report.results import Check, RunResults, Status
from nodeconf.report.verdict import verdict

OK, TESTS_FAILED, INTERRUPTED, INTERNAL, USAGE, NO_TESTS = 0, 1, 2, 3, 4, 5


def _results(*statuses: Status) -> RunResults:
    checks = tuple(
        Check(name=f"test_{index}", full_name=f"suites.s#test_{index}", status=status, message="", trace="",
              labels=(), parameters=(), steps=(), attachments=(), fixtures=(), duration_ms=0)
        for index, status in enumerate(statuses)
    )
    return RunResults(results_dir=Path("r"), checks=checks, shared_fixtures=(), environment=())


P, F, B, S = Status.PASSED, Status.FAILED, Status.BROKEN, Status.SKIPPED


@pytest.mark.parametrize(
    ("pytest_status", "statuses", "code"),
    [
        pytest.param(OK, (P, P), 0, id="all-passed"),
        pytest.param(OK, (P, S), 0, id="passed-and-not-applicable"),
        pytest.param(TESTS_FAILED, (P, F), 1, id="a-check-failed"),
        pytest.param(TESTS_FAILED, (F, B, S), 1, id="failed-wins-over-broken"),
        pytest.param(TESTS_FAILED, (P, B), 2, id="setup-error-is-infrastructure"),
        pytest.param(OK, (S, S), 2, id="all-skipped-nothing-checked"),
        pytest.param(TESTS_FAILED, (P, P), 2, id="pytest-failed-outside-checks"),
        pytest.param(NO_TESTS, (), 2, id="nothing-collected"),
        pytest.param(INTERRUPTED, (P, F), 2, id="interrupted"),
        pytest.param(USAGE, (), 2, id="usage-error"),
        pytest.param(INTERNAL, (P,), 2, id="internal-error"),
        pytest.param(OK, (), 2, id="no-result-left"),
    ],
)
def test_exit_code(pytest_status: int, statuses: tuple[Status, ...], code: int) -> None:
    assert verdict(pytest_status, _results(*statuses)).code == code


def test_missing_results_are_an_error() -> None:
    assert verdict(OK, None).code == 2


def test_reason_names_the_failed_count() -> None:
    assert verdict(TESTS_FAILED, _results(F, F, P)).reason == "2 check(s) failed"


def _interrupted(*statuses: Status) -> RunResults:
    from dataclasses import replace

    from nodeconf.report.results import RunState

    return replace(_results(*statuses), run_state=RunState(False, "stopped by SIGTERM"))


@pytest.mark.parametrize("pytest_status", [OK, TESTS_FAILED, INTERRUPTED, INTERNAL])
def test_a_run_that_did_not_finish_is_interrupted_never_pass(pytest_status: int) -> None:
    outcome = verdict(pytest_status, _interrupted(P, P, F))
    assert (outcome.label, outcome.code) == ("INTERRUPTED", 2)
    assert "SIGTERM" in outcome.reason


def test_pytest_interrupted_without_a_marker_is_interrupted() -> None:
    assert verdict(INTERRUPTED, _results(P, P)).label == "INTERRUPTED"


@pytest.mark.parametrize(
    ("statuses", "label"),
    [((P, S), "PASS"), ((P, F, B), "FAIL"), ((P, B), "ERROR"), ((S, S), "NOTHING RAN"), ((), "NOTHING RAN")],
)
def test_results_verdict_labels(statuses: tuple[Status, ...], label: str) -> None:
    from nodeconf.report.verdict import results_verdict

    assert results_verdict(_results(*statuses)).label == label
