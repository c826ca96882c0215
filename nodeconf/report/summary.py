"""The short terminal summary of a run: totals, the causes shared by several failures, each failure with its first
line, where the reports are."""

from collections.abc import Sequence
from pathlib import Path

from nodeconf.report.causes import Cause, Failure, causes
from nodeconf.report.comparison import mismatches
from nodeconf.report.results import STATUS_ORDER, Check, RunResults, Status

MAX_LISTED = 20
MAX_CAUSES = 5


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


def run_causes(results: RunResults) -> list[Cause]:
    """The failed and broken checks of the run grouped by cause (nodeconf.report.causes), from the rows of their
    comparison tables."""
    return causes(Failure(check_id(c), c.status.value, c.message, mismatches(c)) for c in results.checks
                  if c.status in (Status.FAILED, Status.BROKEN))


def cause_lines(results: RunResults) -> list[str]:
    """When several checks fail for one cause: the largest causes, one line each with its count and an example,
    and below it what to check where nodeconf knows (causes.ADVICE)."""
    found = run_causes(results)
    if not any(len(cause.checks) > 1 for cause in found):
        return []
    lines = []
    for c in found[:MAX_CAUSES]:
        example = c.example.removeprefix(c.about).strip()
        lines.append(f"  {len(c.checks)} {c.status} on {c.about}" + (f", e.g. {example}" if example else ""))
        lines += [f"    what to check: {c.advice}"] if c.advice else []
    if len(found) > MAX_CAUSES:
        lines.append(f"  ... and {len(found) - MAX_CAUSES} more causes (see the report)")
    return ["causes:", *lines]


def node_lines(results: RunResults) -> list[str]:
    """With several nodes, one `node NAME: counts` line each."""
    names = results.node_names
    if len(names) < 2:
        return []
    lines = []
    for name in names:
        checks = [check for check in results.checks if check.node == name]
        counts = ", ".join(f"{sum(1 for c in checks if c.status is status)} {status.value}" for status in STATUS_ORDER)
        lines.append(f"  node {name}: {len(checks)} checks: {counts}")
    return lines


def summary_lines(results: RunResults, reports: Sequence[tuple[str, Path]]) -> list[str]:
    """Totals (per node too when there are several), shared causes, problems, then one `label: path` line per
    written report."""
    lines = [f"nodeconf: {totals_line(results)}", *node_lines(results), *cause_lines(results),
             *problem_lines(results)]
    lines.extend(f"{label}: {path}" for label, path in reports)
    return lines
