"""Wall time of the conformance suites on a node: total, checks per second, per suite, and the slowest checks.

Run: .venv/bin/python benchmarks/suites_bench.py [--node vm | --variant default --variant systemd-runc]
         [--slowest 10] [--profile] [--json] [-- extra pytest args]
Runs `pytest suites` once in a subprocess against each node (default: the reference VM, booted by the session, as
`nodeconf run` does; `--variant` repeated: each variant in turn, one VM at a time), reads its JUnit file, and prints
the run's wall time (VM boot included), the checks, checks per second, the time share of the slowest checks (their
JUnit time, setup + call + teardown, over the wall time), the first check's time (its setup holds the node's
start: the VM boot), the time per suite, and the host's load average before and after (the host may be shared).
`--profile` loads benchmarks/check_profile.py into the run and adds where the time goes, per suite and in
total: the agent's own time in requests, the transport's, sleeps in polling loops, the node's open (VM boot and
agent start) and close, kubelet configure calls, and the rest (pytest and the driver's Python); requests per
operation; the checks and seconds per concurrency rule; and the node's CPUs' busy fraction over the run and per
suite (its /proc/stat). The scratch directory is removed.
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

from check_profile import breakdown

ROOT = Path(__file__).resolve().parents[1]
# Node variants one flag selects (docs/node-variants.md): the reference VM booted with systemd, containers by runc.
VARIANTS = {"default": "vm", "systemd-runc": "vm?init=systemd&runtime=runc"}


@dataclass(frozen=True)
class Check:
    suite: str
    name: str
    seconds: float
    outcome: str


@dataclass(frozen=True)
class Run:
    wall: float
    code: int
    checks: list[Check]
    profile: dict[str, Any] | None


def run(node: str, extra: list[str], profile: bool = False, slowest: int = 10) -> Run:
    """Wall seconds, pytest's exit code, every check of the run, and with `profile` the time breakdown."""
    with tempfile.TemporaryDirectory(prefix="nodeconf-suites-bench-") as scratch:
        junit = Path(scratch) / "junit.xml"
        profiled = Path(scratch) / "profile.json"
        argv = [sys.executable, "-m", "pytest", "suites", "-q", f"--node={node}", f"--junitxml={junit}", *extra]
        if profile:
            argv += ["-p", "benchmarks.check_profile", f"--check-profile={profiled}"]
        started = time.monotonic()
        code = subprocess.run(argv, cwd=ROOT, capture_output=True, check=False).returncode
        wall = time.monotonic() - started
        if not junit.exists():
            raise SystemExit(f"suites_bench: pytest wrote no JUnit file (exit {code})")
        found = json.loads(profiled.read_text()) if profile and profiled.exists() else None
        return Run(wall, code, junit_checks(junit),
                   breakdown(found["checks"], slowest, found["cpu"]) if found is not None else None)


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
    parser.add_argument("--profile", action="store_true",
                        help="add where the time goes (benchmarks/check_profile.py), per suite and in total")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("extra", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args(argv)
    results = []
    for node in [VARIANTS[v] for v in args.variant] if args.variant else [args.node]:
        before = os.getloadavg()
        done = run(node, args.extra, args.profile, args.slowest)
        results.append(summary(node, done.wall, done.code, done.checks, args.slowest, (before, os.getloadavg())))
        if done.profile is not None:
            results[-1]["breakdown"] = done.profile
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
    if "breakdown" in result:
        show_breakdown(result["breakdown"])


BREAKDOWN = ("checks", "seconds", "agent", "transport", "sleep", "node_open_close", "configures",
             "configure_seconds", "rest", "requests")


def show_breakdown(found: dict[str, Any]) -> None:
    print("where the time goes (s; configures and requests are counts):")
    print("  " + " ".join(f"{k:>10.10}" for k in ("suite", *BREAKDOWN)))
    for name, row in [*found["suites"].items(), ("total", found["total"])]:
        print("  " + f"{name:>10.10} " + " ".join(f"{row.get(k, 0):>10g}" for k in BREAKDOWN))
    print("slowest checks (s: total, agent, transport, sleep):")
    for item in found["slowest"]:
        print(f"  {item['seconds']:>7.2f} {item['agent']:>7.2f} {item['transport']:>7.2f} {item['sleep']:>7.2f}  "
              f"{item['check']}")
    print("requests per operation (count, wall s, agent s):")
    for op, figures in found["ops"].items():
        print(f"  {op:<18} {figures['count']:>6g} {figures['wall']:>8.2f} {figures['agent']:>8.2f}")
    for rule, row in found.get("rules", {}).items():
        print(f"  {rule:<12} {row['checks']:>4g} checks {row['seconds']:>8.1f} s (agent {row['agent']:.1f} s, "
              f"node open and close {row['node_open_close']:.1f} s)")
    cpu = found.get("guest_cpu")
    if cpu:
        print(f"the node's CPUs busy (/proc/stat, {cpu['readings']} readings taking {cpu['read_seconds']} s) over "
              f"{cpu['seconds']} s: " + ", ".join(f"{name} {share:.0%}" for name, share in cpu["busy"].items()))
        for suite, span in cpu["suites"].items():
            print(f"  {suite:<12} {span['seconds']:>7.1f} s  "
                  + ", ".join(f"{name} {share:.0%}" for name, share in span["busy"].items()))
        host = cpu.get("host")
        if host:
            print("the host's CPUs busy over that time: " + ", ".join(f"{name} {share:.0%}" for name, share
                                                                       in host["busy"].items())
                  + f"; of its {host['cpu_seconds']} CPU seconds ({host['cpus']} CPUs) the VM's qemu used "
                    f"{host['qemu']} s, this driver {host['driver']} s")


if __name__ == "__main__":
    sys.exit(main())
