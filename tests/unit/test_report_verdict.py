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
