"""Wall time of the conformance suites on a node: total, checks per second, per suite, and the slowest checks.

Run: .venv/bin/python benchmarks/suites_bench.py [--node vm | --variant default --variant systemd-runc]
         [--slowest 10] [--json] [-- extra pytest args]
Runs `pytest suites` once in a subprocess against each node (default: the reference VM, booted by the session, as
`nodeconf run` does; `--variant` repeated: each variant in turn, one VM at a time), reads its JUnit file, and prints
the run's wall time (VM boot included), the checks, checks per second, the time share of the slowest checks (their
JUnit time, setup + call + teardown, over the wall time), the first check's time (its setup holds the node's
start: the VM boot), the time per suite, and the host's load average before and after (the host may be shared).
The scratch directory is removed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# Node variants one flag selects (docs/node-variants.md): the reference VM booted with systemd, containers by runc.
VARIANTS = {"default": "vm", "systemd-runc": "vm?init=systemd&runtime=runc"}


@dataclass(frozen=True)
class Check:
    suite: str
    name: str
    seconds: float
    outcome: str


def run(node: str, extra: list[str]) -> tuple[float, int, list[Check]]:
    """Wall seconds, pytest's exit code, and every check of the run."""
    with tempfile.TemporaryDirectory(prefix="nodeconf-suites-bench-") as scratch:
        junit = Path(scratch) / "junit.xml"
        argv = [sys.executable, "-m", "pytest", "suites", "-q", f"--node={node}", f"--junitxml={junit}", *extra]
        started = time.monotonic()
        code = subprocess.run(argv, cwd=ROOT, capture_output=True, check=False).returncode
        wall = time.monotonic() - started
        if not junit.exists():
            raise SystemExit(f"suites_bench: pytest wrote no JUnit file (exit {code})")
        return wall, code, junit_checks(junit)


def junit_checks(junit: Path) -> list[Check]:
    """The checks of a JUnit file: suite (the directory under suites/), test id, seconds, outcome."""
    checks = []
    for case in ET.parse(junit).iter("testcase"):
        outcome = next((k for k in ("failure", "error", "skipped") if case.find(k) is not None), "passed")
        parts = (case.get("classname") or "").split(".")
        checks.append(Check(parts[1] if len(parts) > 1 else parts[0], case.get("name", ""),
                            float(case.get("time", 0)), outcome))
    return checks


def summary(node: str, wall: float, code: int, checks: Sequence[Check], slowest: int,
            load: tuple[Sequence[float], Sequence[float]]) -> dict[str, Any]:
    """The run's figures: wall time, checks, checks per second, the slowest checks and their share of the wall."""
    per_suite: dict[str, list[float]] = defaultdict(list)
    outcomes: dict[str, int] = defaultdict(int)
    for check in checks:
        per_suite[check.suite].append(check.seconds)
        outcomes[check.outcome] += 1
    top = sorted(checks, key=lambda c: -c.seconds)[:slowest]
    return {
        "node": node, "exit_code": code, "wall_seconds": round(wall, 1), "checks": len(checks),
        "checks_per_second": round(len(checks) / wall, 2) if wall > 0 else 0.0,
        "outcomes": dict(outcomes),
        "slowest_share": round(sum(c.seconds for c in top) / wall, 3) if wall > 0 else 0.0,
        "first_check_seconds": round(checks[0].seconds, 1) if checks else 0.0,
        "load_average": {"before": [round(x, 2) for x in load[0]], "after": [round(x, 2) for x in load[1]]},
        "suites": {s: {"checks": len(t), "seconds": round(sum(t), 1)} for s, t in sorted(per_suite.items())},
        "slowest": [{"suite": c.suite, "test": c.name, "seconds": round(c.seconds, 2)} for c in top],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--node", default="vm")
    where.add_argument("--variant", choices=sorted(VARIANTS), action="append",
                       help="a node variant instead of --node; repeat for several, run one after the other")
    parser.add_argument("--slowest", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("extra", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args(argv)
    results = []
    for node in [VARIANTS[v] for v in args.variant] if args.variant else [args.node]:
        before = os.getloadavg()
        wall, code, checks = run(node, args.extra)
        results.append(summary(node, wall, code, checks, args.slowest, (before, os.getloadavg())))
        if not args.json:
            show(results[-1], args.slowest)
    if args.json:
        print(json.dumps(results if len(results) > 1 else results[0], indent=2))
    return 0


def show(result: dict[str, Any], slowest: int) -> None:
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(result["outcomes"].items()))
    print(f"{result['checks']} checks in {result['wall_seconds']} s on {result['node']} (exit {result['exit_code']}), "
          f"{result['checks_per_second']} checks/s: {outcomes}")
    print(f"load average (1, 5, 15 min) before {result['load_average']['before']}, "
          f"after {result['load_average']['after']}")
    print(f"first check (holds the node's start) {result['first_check_seconds']} s")
    for suite, info in result["suites"].items():
        print(f"  {suite:<12} {info['checks']:>4} checks  {info['seconds']:>7.1f} s")
    print(f"{slowest} slowest, {result['slowest_share']:.0%} of the wall time:")
    for item in result["slowest"]:
        print(f"  {item['seconds']:>7.2f} s  {item['suite']}/{item['test']}")


if __name__ == "__main__":
    sys.exit(main())
