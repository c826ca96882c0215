"""`reports/summary.json`: the run's verdict, counts and per-check outcome for CI systems that do not read JUnit.

Source: issues 17 and 32. Schema (version 2; every key snake_case): {schema, written_by, verdict, exit_code,
reason, counts{total, failed, broken, skipped, passed}, run{environment.properties run entries: nodeconf_version,
nodeconf_commit, profile, kubelet_config, kubelet_config_sha256, command, started, finished, controller, node; a run
without results: this nodeconf's version and commit}, nodes[{name, spec, facts{the node facts as recorded}}],
checks[{id, name, status, node, suite, source, message, first_mismatch}], causes[{status, about, count, example,
checks}]}. `source` is the check's source marker (kep5359, kep2400, memory_qos, requests_limits, upstream_e2e) or
""; `message` the first line of a failure, break or skip; `first_mismatch` the first compared value that differs,
{owner, pod, container, path, file, expected, actual, rule} from the check's comparison table, else null; `causes`
groups the failed and broken checks by what their mismatches are about (nodeconf.report.causes), largest first.
Version 1 had run keys with spaces, no nodes, and first_mismatch as a sentence.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nodeconf.build_info import commit, version
from nodeconf.errors import InputError
from nodeconf.node_facts import NodeFacts
from nodeconf.report.comparison import mismatches
from nodeconf.report.results import STATUS_ORDER, Check, RunResults, Status
from nodeconf.report.run_info import COMMIT_KEY, VERSION_KEY, run_fields
from nodeconf.report.sources import SOURCE_MARKERS
from nodeconf.report.summary import check_id, run_causes
from nodeconf.report.verdict import Verdict
from nodeconf.resources import Tree, locate_tree

SCHEMA_VERSION = 2
SUMMARY_FILE = "summary.json"
# The node facts a node records (nodeconf.node_facts.reported_facts: NodeFacts' fields, the measured formula as
# cpu_weight_formula), told apart from the run's own entries in environment.properties by these names.
FACT_KEYS = frozenset(f.name for f in dataclasses.fields(NodeFacts)) - {"measured_cpu_weight_formula"}
_NOT_SNAKE = re.compile(r"[^a-z0-9]+")


def snake(key: str) -> str:
    """A report key as summary.json spells it: `kubelet config sha256` → `kubelet_config_sha256`."""
    return _NOT_SNAKE.sub("_", key.lower()).strip("_")


def first_mismatch(check: Check) -> dict[str, str] | None:
    """The first compared value of a failed check that differs from the oracle, as fields; None when the check
    passed or compared no value (its `message` says why it failed, broke or was skipped)."""
    if check.status is Status.PASSED:
        return None
    found = next(iter(mismatches(check)), None)
    if found is None:
        return None
    return {"owner": f"{found.pod}/{found.container}".rstrip("/") or "node", "pod": found.pod,
            "container": found.container, "path": found.cgroup_path, "file": found.file,
            "expected": found.expected, "actual": found.actual, "rule": found.rule}


def _source(check: Check) -> str:
    tags = {value for name, value in check.labels if name == "tag"}
    return next((marker for marker in SOURCE_MARKERS if marker in tags), "")


def _node(check: Check, run_node: str) -> str:
    return next((value.strip("'") for name, value in check.parameters if name == "node"), run_node)


def check_entry(check: Check, run_node: str) -> dict[str, Any]:
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
    return {snake(VERSION_KEY): version(), snake(COMMIT_KEY): commit(tree) or "unknown"}


def _facts(entries: Sequence[tuple[str, str]]) -> dict[str, str]:
    return {snake(key): value for key, value in entries if key.split(".")[0] in FACT_KEYS}


def node_entries(results: RunResults) -> list[dict[str, Any]]:
    """Each node's name, spec and recorded facts: the run's own file for one node, each node's for several."""
    if results.nodes:
        return [{"name": node.name, "spec": node.get("node"), "facts": _facts(node.entries)}
                for node in results.nodes]
    environment: Mapping[str, str] = dict(results.environment)
    facts = _facts(results.environment)
    if not facts and "node" not in environment:
        return []
    spec = environment.get("node", "")
    return [{"name": spec, "spec": spec, "facts": facts}]


def summary_document(outcome: Verdict, results: RunResults | None, written_by: str) -> dict[str, Any]:
    """The summary as a JSON-ready mapping; a run without results has no checks and zero counts."""
    checks = results.checks if results is not None else ()
    environment = dict(results.environment) if results is not None else {}
    counts = {status.value: sum(1 for check in checks if check.status is status) for status in STATUS_ORDER}
    run = ({**{snake(key): value for key, value in run_fields(tuple(environment.items())).items()},
            "node": environment.get("node", "")} if results is not None else _this_nodeconf())
    return {
        "schema": SCHEMA_VERSION,
        "written_by": written_by,
        "verdict": outcome.label,
        "exit_code": outcome.code,
        "reason": outcome.reason,
        "counts": {"total": len(checks), **counts},
        "run": run,
        "nodes": node_entries(results) if results is not None else [],
        "checks": [check_entry(check, environment.get("node", "")) for check in checks],
        "causes": [{"status": c.status, "about": c.about, "count": len(c.checks), "example": c.example,
                    "checks": list(c.checks)} for c in run_causes(results)] if results is not None else [],
    }


def write_summary(path: Path, outcome: Verdict, results: RunResults | None, written_by: str,
                  diff: Mapping[str, Any] | None = None) -> Path:
    """Write summary.json (parents created) and return its path; `diff` (`nodeconf report --diff`) goes under
    the key `diff`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    document = summary_document(outcome, results, written_by)
    if diff is not None:
        document["diff"] = dict(diff)
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return path
