"""`nodeconf checks`: the checks a default run holds, each with its source, area and needs, collected by pytest
without opening a node; this module is also the pytest plugin (`-p nodeconf.cli.checks`) that records them.

Source: issue 32 item 5 ("nodeconf checks [-k …] lists checks with source, area and what they need"); the markers
are nodeconf/fixtures/markers.py's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodeconf.errors import InputError
from nodeconf.report.sources import SOURCE_MARKERS
from nodeconf.resources import locate_tree

if TYPE_CHECKING:
    import pytest

OUTPUTS = ("table", "json")
OUTPUT_ENV = "NODECONF_CHECKS_FILE"  # where the plugin writes the collected checks (JSON)
SOURCE_DETAILS = ("file", "case")  # what a source marker may name about the upstream test a check mirrors
FLAG_NEEDS = ("needs_swap", "needs_psi", "disruptive")
VERSION_NEEDS = ("needs_kernel", "min_profile")
# pytest's exit statuses: OK, NO_TESTS_COLLECTED (pytest.ExitCode).
COLLECTED, NONE_COLLECTED = 0, 5
COLLECT_SECONDS = 600


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `nodeconf checks` and its options."""
    parser = subparsers.add_parser(
        "checks",
        help="list the checks of a run with their source, area and needs",
        description="List the checks `nodeconf run` runs (collected by pytest; no node is opened), each with its "
        "source, its area (the suites/ package) and what it needs of the node. Exit 1 when no check matches.",
    )
    parser.add_argument("-k", dest="keyword", metavar="EXPR", help="only checks whose name matches, as pytest -k")
    parser.add_argument("-m", dest="markexpr", metavar="MARKEXPR", help="only checks whose markers match, as "
                        "pytest -m (e.g. 'needs_swap and not disruptive')")
    parser.add_argument("-o", "--output", default="table", metavar="table|json", help="table (default) or json")


def _record(item: pytest.Item, suites: Path) -> dict[str, Any]:
    """One check: its id, area, sources (with the upstream file and case a marker names) and needs."""
    sources = []
    for name in SOURCE_MARKERS:
        mark = item.get_closest_marker(name)
        if mark is not None:
            sources.append({"marker": name, **{k: str(mark.kwargs[k]) for k in SOURCE_DETAILS if k in mark.kwargs}})
    needs: dict[str, Any] = {name: item.get_closest_marker(name) is not None for name in FLAG_NEEDS}
    for name in VERSION_NEEDS:
        mark = item.get_closest_marker(name)
        needs[name] = str(mark.args[0]) if mark is not None and mark.args else None
    relative = item.path.relative_to(suites) if item.path.is_relative_to(suites) else item.path
    return {"id": item.nodeid, "area": relative.parts[0] if len(relative.parts) > 1 else "",
            "sources": sources, "needs": needs}


def pytest_collection_finish(session: pytest.Session) -> None:
    """Write the selected checks (after -k and -m) to the file OUTPUT_ENV names."""
    target = os.environ.get(OUTPUT_ENV)
    if target is None:
        return
    suites = Path(str(session.config.rootpath)) / "suites"
    Path(target).write_text(json.dumps([_record(item, suites) for item in session.items]), encoding="utf-8")


def collect(keyword: str | None, markexpr: str | None) -> list[dict[str, Any]]:
    """The default run's checks that -k and -m select, from `pytest --collect-only` in a subprocess (the suites'
    imports stay out of this process); InputError with pytest's own line when it cannot collect."""
    tree = locate_tree()
    argv = [sys.executable, *(["-P"] if tree.kind == "installed" else []), "-m", "pytest", str(tree.suites),
            "--collect-only", "-q", "-p", "no:cacheprovider", "-p", "nodeconf.cli.checks",
            *(["-k", keyword] if keyword is not None else []), *(["-m", markexpr] if markexpr is not None else [])]
    with tempfile.TemporaryDirectory(prefix="nodeconf-checks-") as scratch:
        target = Path(scratch) / "checks.json"
        done = subprocess.run(argv, cwd=tree.root, env={**os.environ, OUTPUT_ENV: str(target)},
                              capture_output=True, text=True, timeout=COLLECT_SECONDS, check=False)
        if done.returncode not in (COLLECTED, NONE_COLLECTED) or not target.is_file():
            raise InputError(f"pytest could not collect the checks: {_first_error(done)}")
        found: list[dict[str, Any]] = json.loads(target.read_text(encoding="utf-8"))
    return found


def _first_error(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line.strip() for line in (done.stderr + done.stdout).splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(("ERROR", "E "))]
    return (errors or lines or [f"exit status {done.returncode}"])[0]


def _needs_text(needs: dict[str, Any]) -> str:
    shown = [name for name in FLAG_NEEDS if needs[name]]
    shown += [f"{name}>={needs[name]}" for name in VERSION_NEEDS if needs[name] is not None]
    return ", ".join(shown) or "-"


def _source_text(sources: Sequence[dict[str, str]]) -> str:
    return ", ".join(" ".join([s["marker"], *(s[k] for k in SOURCE_DETAILS if k in s)]) for s in sources)


def table(checks: Sequence[dict[str, Any]]) -> str:
    """One line per check: id, area, sources, needs; then the count."""
    rows = [(c["id"], c["area"], _source_text(c["sources"]), _needs_text(c["needs"])) for c in checks]
    head = ("CHECK", "AREA", "SOURCE", "NEEDS")
    widths = [max(len(row[i]) for row in (head, *rows)) for i in range(3)]
    lines = ["  ".join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[3]]).rstrip()
             for row in (head, *rows)]
    return "\n".join([*lines, f"{len(rows)} checks"]) + "\n"


def run(args: argparse.Namespace) -> int:
    """Print the checks; 1 when none matches."""
    if args.output not in OUTPUTS:
        raise InputError(f"unknown value {args.output!r} (expected one of {', '.join(OUTPUTS)})", field="--output")
    checks = collect(args.keyword, args.markexpr)
    sys.stdout.write(table(checks) if args.output == "table" else json.dumps(checks, indent=2) + "\n")
    if not checks:
        print("nodeconf: no check matches", file=sys.stderr)
    return 0 if checks else 1
