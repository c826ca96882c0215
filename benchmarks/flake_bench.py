"""Repeatability of the main job under load: per-check failure counts over N back-to-back runs with K CPU burners.

Run (under the shared VM lock): flock /tmp/nodeconf-vm.lock .venv/bin/python benchmarks/flake_bench.py --runs 20
--burners 2 [-- PYTEST_ARGS, e.g. suites/swap]. Each run is `.venv/bin/nodeconf run --reports DIR/run-NN ...`; its
JUnit file is parsed into pass/fail/error/skip per check. The burners are busy-looping child processes, started
before the first run and stopped (by their pids) after the last, also on Ctrl-C. Target: 0 failures in 20 runs
with 2 burners on a 2-core host (issue 11).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NODECONF = ROOT / ".venv" / "bin" / "nodeconf"
BURN = "while True: pass"


@dataclass
class Run:
    """One `nodeconf run`: exit code, wall seconds, and each check's outcome."""

    code: int
    seconds: float
    outcomes: dict[str, str] = field(default_factory=dict)


def outcomes(junit: Path) -> dict[str, str]:
    """passed, failed, error or skipped per check (classname::name) of a JUnit file; {} when there is none."""
    if not junit.is_file():
        return {}
    found = {}
    for case in ET.parse(junit).iter("testcase"):
        kind = next((k for k in ("failure", "error", "skipped") if case.find(k) is not None), "passed")
        found[f"{case.get('classname', '')}::{case.get('name', '')}"] = {"failure": "failed"}.get(kind, kind)
    return found


def run_once(reports: Path, pytest_args: list[str]) -> Run:
    """One run; on Ctrl-C wait while it tears the node down (it got the same SIGINT), then stop."""
    started = time.monotonic()
    process = subprocess.Popen([str(NODECONF), "run", f"--reports={reports}", *pytest_args], cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        code = process.wait()
    except KeyboardInterrupt:
        process.wait()
        raise
    return Run(code, time.monotonic() - started, outcomes(reports / "junit.xml"))


def start_burners(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(count)]


def stop_burners(burners: list[subprocess.Popen[bytes]]) -> None:
    for burner in burners:
        burner.kill()
    for burner in burners:
        burner.wait()


def table(runs: list[Run]) -> list[str]:
    """Checks that did not pass every run, with their failure, error and skip counts; then the run summary."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for run in runs:
        for check, outcome in run.outcomes.items():
            counts[check][outcome] += 1
    unstable = {c: n for c, n in counts.items() if n["failed"] or n["error"]}
    width = max((len(c) for c in unstable), default=5)
    lines = [f"{'check':<{width}}  failed  error  passed  skipped"]
    for check, n in sorted(unstable.items(), key=lambda item: (-item[1]["failed"] - item[1]["error"], item[0])):
        lines.append(f"{check:<{width}}  {n['failed']:>6}  {n['error']:>5}  {n['passed']:>6}  {n['skipped']:>7}")
    if not unstable:
        lines.append("(no check failed or errored)")
    failures = sum(n["failed"] + n["error"] for n in counts.values())
    lines.append(f"runs {len(runs)}, checks per run {max((len(r.outcomes) for r in runs), default=0)}, "
                 f"check failures+errors {failures}, exit codes {[r.code for r in runs]}, "
                 f"wall {min(r.seconds for r in runs):.0f}-{max(r.seconds for r in runs):.0f} s")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="back-to-back runs (default 20)")
    parser.add_argument("--burners", type=int, default=2, help="CPU-burning processes during the runs (default 2)")
    parser.add_argument("--reports", type=Path, help="keep each run's reports under DIR/run-NN (default: a "
                        "temporary directory, removed)")
    parser.add_argument("--json", action="store_true", help="print the runs as JSON instead of the table")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to nodeconf run (e.g. suites/swap)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="nodeconf-flake-bench-") as scratch:
        base = args.reports or Path(scratch)
        runs: list[Run] = []
        burners = start_burners(args.burners)
        try:
            for index in range(args.runs):
                runs.append(run_once(base / f"run-{index + 1:02d}", args.pytest_args))
                print(f"flake_bench: run {index + 1}/{args.runs}: exit {runs[-1].code}, "
                      f"{runs[-1].seconds:.0f} s", file=sys.stderr, flush=True)
        finally:
            stop_burners(burners)
    if args.json:
        print(json.dumps([{"exit": r.code, "seconds": round(r.seconds, 1), "outcomes": r.outcomes} for r in runs],
                         indent=2))
    else:
        print(f"flake_bench: {args.runs} runs, {args.burners} burners, pytest args {args.pytest_args or ['(all)']}")
        print("\n".join(table(runs)))
    return 0 if all(r.code == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
