"""Wall time of the conformance suites on a node: total, per suite, and the slowest checks.

Run: .venv/bin/python benchmarks/suites_bench.py [--node vm] [--slowest 10] [--json] [-- extra pytest args]
Runs `pytest suites` once in a subprocess against the node (default: the reference VM, booted by the session),
reads its JUnit file, and prints the run's wall time (VM boot included), the checks and their time per suite,
and the slowest checks (call time; setup shows the VM boot on the first check). The scratch directory is removed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def run(node: str, extra: list[str]) -> tuple[float, int, list[tuple[str, str, float, str]]]:
    """Wall seconds, pytest's exit code, and (suite, test, seconds, outcome) per check."""
    with tempfile.TemporaryDirectory(prefix="nodeconf-suites-bench-") as scratch:
        junit = Path(scratch) / "junit.xml"
        argv = [sys.executable, "-m", "pytest", "suites", "-q", f"--node={node}", f"--junitxml={junit}", *extra]
        started = time.monotonic()
        code = subprocess.run(argv, cwd=ROOT, capture_output=True, check=False).returncode
        wall = time.monotonic() - started
        if not junit.exists():
            raise SystemExit(f"suites_bench: pytest wrote no JUnit file (exit {code})")
        rows = []
        for case in ET.parse(junit).iter("testcase"):
            outcome = next((k for k in ("failure", "error", "skipped") if case.find(k) is not None), "passed")
            suite = (case.get("classname") or "").split(".")[1]
            rows.append((suite, case.get("name", ""), float(case.get("time", 0)), outcome))
    return wall, code, rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--node", default="vm")
    parser.add_argument("--slowest", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("extra", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args(argv)
    wall, code, rows = run(args.node, args.extra)
    per_suite: dict[str, list[float]] = defaultdict(list)
    for suite, _, seconds, _ in rows:
        per_suite[suite].append(seconds)
    outcomes: dict[str, int] = defaultdict(int)
    for *_, outcome in rows:
        outcomes[outcome] += 1
    result: dict[str, Any] = {
        "node": args.node, "exit_code": code, "wall_seconds": round(wall, 1), "checks": len(rows),
        "outcomes": dict(outcomes),
        "suites": {s: {"checks": len(t), "seconds": round(sum(t), 1)} for s, t in sorted(per_suite.items())},
        "slowest": [{"suite": s, "test": n, "seconds": round(t, 2)}
                    for s, n, t, _ in sorted(rows, key=lambda r: -r[2])[:args.slowest]],
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{result['checks']} checks in {result['wall_seconds']} s on {args.node} (exit {code}): "
          + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    for suite, info in result["suites"].items():
        print(f"  {suite:<12} {info['checks']:>4} checks  {info['seconds']:>7.1f} s")
    print("slowest:")
    for item in result["slowest"]:
        print(f"  {item['seconds']:>7.2f} s  {item['suite']}/{item['test']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
