"""Several-node benchmark (issue 14 item 2): the default checks on two reference VMs in parallel (one `nodeconf run`,
one xdist worker per node) against the same two runs one after the other, and the controller's CPU seconds per check
(every process of the run except qemu).

Run under the VM lock: flock /tmp/nodeconf-vm.lock .venv/bin/python benchmarks/matrix_bench.py [--json]
    [--reports DIR] [-- PYTEST_ARGS, e.g. suites/resources]
CPU: the run's whole process tree as the kernel accounts it to this process once the run is reaped
(getrusage(RUSAGE_CHILDREN)), minus qemu's CPU sampled from /proc/<pid>/stat every SAMPLE_S while it runs (qemu's
last < SAMPLE_S before it exits is missed, so the controller figure is, if anything, slightly high).
Measured (2026-11-30, 2 cores, TCG, a shared host): default checks (190 per node): 434 s one after the other (2
vCPUs each), 251 s in parallel (the run sizes each VM to 1 vCPU): ratio 0.58, 0.06 controller CPU-s per check.
Before that sizing, 2-vCPU VMs in parallel gave a ratio of 0.87 (qemu-bound). README "Several nodes" draws the
conclusions.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

NODES = ("vm", "vm?name=b")
TARGET_RATIO = 0.65
SAMPLE_S = 0.2
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class RunCost:
    """One `nodeconf run`: its wall time, exit code, checks, and CPU seconds of qemu and of everything else."""

    label: str
    wall_s: float
    exit_code: int
    checks: int
    qemu_cpu_s: float
    controller_cpu_s: float
    sampled_controller_cpu_s: float


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as handle:
                found.extend(int(child) for child in handle.read().split())
    except OSError:
        pass
    return found


def _descendants(pid: int) -> list[int]:
    pending, found = [pid], []
    while pending:
        children = _children(pending.pop())
        found.extend(children)
        pending.extend(children)
    return found


def _cpu_and_name(pid: int) -> tuple[float, str] | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            stat = handle.read()
    except OSError:
        return None
    name = stat[stat.index("(") + 1:stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS, name  # utime + stime


class QemuSampler(threading.Thread):
    """Samples the CPU time of every process below `root` until stopped: `seconds` sums the qemu-system ones,
    `others` the rest (a cross-check that misses each process's last < SAMPLE_S)."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.latest: dict[int, tuple[float, bool]] = {}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(SAMPLE_S):
            for pid in [self.root, *_descendants(self.root)]:
                sample = _cpu_and_name(pid)
                if sample is not None:
                    self.latest[pid] = (sample[0], sample[1].startswith("qemu-system"))

    @property
    def seconds(self) -> float:
        return sum(cpu for cpu, qemu in self.latest.values() if qemu)

    @property
    def others(self) -> float:
        return sum(cpu for cpu, qemu in self.latest.values() if not qemu)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_nodeconf(label: str, nodes: tuple[str, ...], reports: Path, pytest_args: list[str]) -> RunCost:
    """Run `nodeconf run` on `nodes` and measure it."""
    argv = [sys.executable, "-m", "nodeconf", "run", *(f"--node={node}" for node in nodes),
            f"--reports={reports}", "--", "-p", "no:randomly", *pytest_args]
    print(f"matrix bench: {label}: {' '.join(argv[2:])}", file=sys.stderr, flush=True)
    cpu_before = _children_cpu()
    started = time.monotonic()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    sampler = QemuSampler(process.pid)
    sampler.start()
    code = process.wait()
    wall = time.monotonic() - started
    sampler.done.set()
    sampler.join()
    total_cpu = _children_cpu() - cpu_before
    checks = _checks(reports / "summary.json")
    cost = RunCost(label, round(wall, 1), code, checks, round(sampler.seconds, 1),
                   round(total_cpu - sampler.seconds, 1), round(sampler.others, 1))
    print(f"matrix bench: {label}: {cost}", file=sys.stderr, flush=True)
    return cost


def _checks(summary: Path) -> int:
    try:
        return int(json.loads(summary.read_text(encoding="utf-8"))["counts"]["total"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def measure(reports: Path, pytest_args: list[str], cpus: int | None = None) -> dict[str, object]:
    """The two nodes one after the other, then both in one run; the ratio and CPU seconds per check."""
    nodes = tuple(f"{node}{'&' if '?' in node else '?'}cpus={cpus}" if cpus else node for node in NODES)
    one_by_one = [run_nodeconf(f"sequential {node}", (node,), reports / f"seq-{index}", pytest_args)
                  for index, node in enumerate(nodes)]
    parallel = run_nodeconf("parallel", nodes, reports / "parallel", pytest_args)
    sequential_wall = sum(cost.wall_s for cost in one_by_one)
    runs = [*one_by_one, parallel]
    checks = sum(cost.checks for cost in runs)
    controller = sum(cost.controller_cpu_s for cost in runs)
    return {
        "selection": " ".join(pytest_args) or "(default checks)",
        "nodes": list(nodes),
        "host_cpus": os.cpu_count(),
        "runs": [asdict(cost) for cost in runs],
        "sequential_wall_s": round(sequential_wall, 1),
        "parallel_wall_s": parallel.wall_s,
        "ratio": round(parallel.wall_s / sequential_wall, 2) if sequential_wall else None,
        "target_ratio": TARGET_RATIO,
        "controller_cpu_s_per_check": round(controller / checks, 3) if checks else None,
        "parallel_controller_cpu_s_per_check": round(parallel.controller_cpu_s / parallel.checks, 3)
        if parallel.checks else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--reports", type=Path, default=Path("/tmp/nodeconf-matrix-bench"))
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--cpus", type=int, help="vCPUs of each VM (default: the VM's default)")
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    pytest_args = args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args
    results = measure(args.reports, pytest_args, args.cpus)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for name, value in results.items():
            if name != "runs":
                print(f"{name:<38} {value}")
        for cost in results["runs"]:  # type: ignore[attr-defined]
            print(f"  {cost}")
    ratio = results["ratio"]
    return 0 if isinstance(ratio, float) and ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
