"""The short terminal summary of a run: totals, each failure with its first line, where the reports are."""

from collections.abc import Sequence
from pathlib import Path

from nodeconf.report.results import STATUS_ORDER, Check, RunResults, Status

MAX_LISTED = 20


def totals_line(results: RunResults) -> str:
    """`N checks: a failed, b broken, c skipped, d passed`."""
    counts = ", ".join(f"{results.count(status)} {status.value}" for status in STATUS_ORDER)
    return f"{len(results.checks)} checks: {counts}"


def check_id(check: Check) -> str:
    """`module#name` with the parameter id pytest put in the name (`[burstable]`), which Allure's fullName lacks."""
    module, hash_sign, _ = check.full_name.rpartition("#")
    return f"{module}#{check.name}" if hash_sign and check.name else check.full_name


def problem_lines(results: RunResults) -> list[str]:
    """One line per failed then broken check: status, test id, first line of its message."""
    problems = [
        check for status in (Status.FAILED, Status.BROKEN) for check in results.checks if check.status is status
    ]
    lines = [
        f"  {check.status.value.upper():<7} {check_id(check)}: {check.first_line or '(no message)'}"
        for check in problems[:MAX_LISTED]
    ]
    if len(problems) > MAX_LISTED:
        lines.append(f"  ... and {len(problems) - MAX_LISTED} more (see the report)")
    return lines


def summary_lines(results: RunResults, reports: Sequence[tuple[str, Path]]) -> list[str]:
    """Totals, problems, then one `label: path` line per written report."""
    lines = [f"nodeconf: {totals_line(results)}", *problem_lines(results)]
    lines.extend(f"{label}: {path}" for label, path in reports)
    return lines
