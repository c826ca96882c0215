"""`reports/summary.json`: the run's verdict, counts and per-check outcome for CI systems that do not read JUnit.

Source: issue 17. Schema (version 1): {schema, written_by, verdict, exit_code, reason, counts{total, failed, broken,
skipped, passed}, run{environment.properties run keys, node; a run without results: this nodeconf's version and
commit}, checks[{id, name, status, node, suite, source, message, first_mismatch}], causes[{status, about, count,
example, checks}]}; `source` is the check's source marker (kep5359, kep2400, memory_qos, requests_limits) or "";
`causes` groups the failed and broken checks by what their mismatches are about (nodeconf.report.causes), largest
first (added within version 1: a reader that does not know the key loses nothing it had).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from nodeconf.build_info import commit, version
from nodeconf.errors import InputError
from nodeconf.report.results import STATUS_ORDER, Check, RunResults, Status
from nodeconf.report.run_info import COMMIT_KEY, VERSION_KEY, run_fields
from nodeconf.report.summary import check_id, run_causes
from nodeconf.report.verdict import Verdict
from nodeconf.resources import Tree, locate_tree

SCHEMA_VERSION = 1
SUMMARY_FILE = "summary.json"
# The suite markers that name a check's source (fixtures/markers.py SOURCE_MARKERS; a unit test keeps them equal).
SOURCE_MARKERS = ("kep5359", "kep2400", "memory_qos", "requests_limits", "upstream_e2e", "kubelet_code")
# The stable first line of a comparison failure (suites/toolkit/compare.py mismatch_message); the next line is a
# mismatch.
_COMPARISON_HEAD = re.compile(r"compared values differ from the oracle$")


def first_mismatch(check: Check) -> str:
    """The first mismatch a failed comparison lists, else the message's first line; "" for a passed check."""
    if check.status is Status.PASSED:
        return ""
    lines = [line.strip() for line in check.message.splitlines() if line.strip()]
    if len(lines) > 1 and _COMPARISON_HEAD.search(lines[0]):
        return lines[1]
    return lines[0] if lines else ""


def _source(check: Check) -> str:
    tags = {value for name, value in check.labels if name == "tag"}
    return next((marker for marker in SOURCE_MARKERS if marker in tags), "")


def _node(check: Check, run_node: str) -> str:
    return next((value.strip("'") for name, value in check.parameters if name == "node"), run_node)


def check_entry(check: Check, run_node: str) -> dict[str, str]:
    """One check as summary.json lists it."""
    return {
        "id": check_id(check),
        "name": check.name,
        "status": check.status.value,
        "node": _node(check, run_node),
        "suite": check.suite,
        "source": _source(check),
        "message": check.first_line if check.status is not Status.PASSED else "",
        "first_mismatch": first_mismatch(check),
    }


def _this_nodeconf() -> dict[str, str]:
    """Version and commit of the nodeconf writing the summary, for a run that left no environment.properties."""
    try:
        tree: Tree | None = locate_tree()
    except InputError:
        tree = None
    return {VERSION_KEY: version(), COMMIT_KEY: commit(tree) or "unknown"}


def summary_document(outcome: Verdict, results: RunResults | None, written_by: str) -> dict[str, Any]:
    """The summary as a JSON-ready mapping; a run without results has no checks and zero counts."""
    checks = results.checks if results is not None else ()
    environment = dict(results.environment) if results is not None else {}
    counts = {status.value: sum(1 for check in checks if check.status is status) for status in STATUS_ORDER}
    return {
        "schema": SCHEMA_VERSION,
        "written_by": written_by,
        "verdict": outcome.label,
        "exit_code": outcome.code,
        "reason": outcome.reason,
        "counts": {"total": len(checks), **counts},
        "run": {**run_fields(tuple(environment.items())), "node": environment.get("node", "")}
        if results is not None else _this_nodeconf(),
        "checks": [check_entry(check, environment.get("node", "")) for check in checks],
        "causes": [{"status": c.status, "about": c.about, "count": len(c.checks), "example": c.example,
                    "checks": list(c.checks)} for c in run_causes(results)] if results is not None else [],
    }


def write_summary(path: Path, outcome: Verdict, results: RunResults | None, written_by: str) -> Path:
    """Write summary.json (parents created) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    document = summary_document(outcome, results, written_by)
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return path
