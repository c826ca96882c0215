"""Run `nodeconf explain` in-process and check the contract every input must meet (issue 11).

The contract: exit 0 with JSON whose cgroup values the kernel accepts, or exit 2 with one short line on stderr;
never a traceback (an exception out of main), never a long run. The kernel ranges here are written from the
kernel's sources, not taken from nodeconf: cpu.max quota and period 1000..1000000 µs for the period and
1000..2^44-1 µs for the quota (kernel/sched/core.c tg_set_cfs_bandwidth, max_cfs_runtime), cpu.weight 1..10000
(cgroup-v2.rst), memory.* "max" or 0..2^63-1 (the kubelet writes int64), oom_score_adj -1000..1000.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from dataclasses import dataclass
from typing import Any

from nodeconf.cli.main import main

INT64_MAX = 2**63 - 1
MAX_ERROR_LINE = 300
MAX_SECONDS = 5.0
BYTE_FILES = ("memory.max", "memory.high", "memory.low", "memory.min", "memory.swap.max")


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str
    seconds: float


def explain(*argv: str) -> Outcome:
    """`nodeconf explain ARGV` in this process; an exception escaping main is a test failure (a traceback)."""
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(["explain", *argv])
        except SystemExit as exit_:  # argparse usage errors
            code = int(exit_.code or 0)
    return Outcome(code, out.getvalue(), err.getvalue(), time.monotonic() - started)


def _cgroup_file_problems(name: str, value: str) -> list[str]:
    words = value.split()
    if name == "cpu.max":
        quota, period = words
        ok = 1000 <= int(period) <= 1_000_000 and (quota == "max" or 1000 <= int(quota) <= 2**44 - 1)
        return [] if ok else [f"cpu.max {value!r}"]
    if name == "cpu.weight":
        return [] if 1 <= int(value) <= 10_000 else [f"cpu.weight {value!r}"]
    if name in BYTE_FILES:
        return [] if value == "max" or 0 <= int(value) <= INT64_MAX else [f"{name} {value!r}"]
    return []


def _cgroups(doc: dict[str, Any]) -> list[dict[str, str]]:
    files = list(doc["cgroups"].values())
    for p in doc["pods"]:
        if p["cgroup"] is not None:
            files.append(p["cgroup"]["files"])
        files += [c["cgroup"]["files"] for c in p["containers"]]
        if p["pause"] is not None:
            files.append(p["pause"]["cgroup"]["files"])
    return files


def contract_problems(outcome: Outcome) -> list[str]:
    """Why an outcome breaks the contract; empty when it keeps it."""
    problems = [] if outcome.seconds <= MAX_SECONDS else [f"took {outcome.seconds:.1f} s"]
    if outcome.code == 2:
        lines = outcome.stderr.splitlines()
        if len(lines) != 1 or len(lines[0]) > MAX_ERROR_LINE or not lines[0].startswith("nodeconf"):
            problems.append(f"exit 2 without one short line: {outcome.stderr[:200]!r}")
        if outcome.stdout:
            problems.append("exit 2 with output")
        return problems
    if outcome.code != 0:
        return [*problems, f"exit {outcome.code}: {outcome.stderr[:200]!r}"]
    doc = json.loads(outcome.stdout)
    for files in _cgroups(doc):
        for name, value in files.items():
            problems += _cgroup_file_problems(name, value)
    for p in doc["pods"]:
        problems += [f"oom_score_adj {c['oomScoreAdj']}" for c in p["containers"]
                     if not -1000 <= c["oomScoreAdj"] <= 1000]
    return problems
