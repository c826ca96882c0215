"""The enforcer on a node: agent start, pod admit-to-running latency and per-pod read-back (evidence) time.

Run: .venv/bin/python benchmarks/enforcer_bench.py [--node vm?memory=6144] [--pods 10] [--reads 10] [--json]
Boots the node named by --node (default: the reference VM under TCG or KVM), starts the enforcer, then for each
of `--pods` pods (the article's res-demo shape, and the KEP's four-container pod-level-swap-mixed shape) times
(1) `run()`: admission by the oracle, every cgroup written, pause and container processes started (one round
trip), (2) admit-to-running: from the `run()` call until a status read shows every container running, and
(3) `evidence()`: all files of the pod's containers, pause, pod, QoS and kubepods cgroups with pids and
oom_score_adj in one round trip, and of that the time spent inside the enforcer (the rest is SSH and the
bridge). Everything is deleted and the node released at the end.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nodeconf.loader import load_objects
from nodeconf.manifest import Pod
from nodeconf.manifest_reader import object_from_dict
from nodeconf.manifest_writer import pod_to_dict
from nodeconf.nodes.base import Node
from nodeconf.nodes.enforced.node import EnforcedNode
from nodeconf.nodes.registry import open_node

WORKLOADS = Path(__file__).resolve().parents[1] / "workloads"
SHAPES = {
    "res-demo (1 container)": WORKLOADS / "requests-limits" / "res-demo.yaml",
    "pod-level-swap-mixed (4 containers)": WORKLOADS / "kep-5359" / "use-case-4-pod-level-swap-mixed.yaml",
}


def renamed(path: Path, index: int) -> Pod:
    """The manifest's pod under a fresh name (and so a fresh uid)."""
    (pod,) = load_objects([path])
    assert isinstance(pod, Pod)
    doc: dict[str, Any] = pod_to_dict(pod)
    doc["metadata"] = {"name": f"{pod.name}-{index}"}
    obj = object_from_dict(doc)
    assert isinstance(obj, Pod)
    return obj


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"n": len(ordered), "median_ms": 1000 * statistics.median(ordered),
            "p90_ms": 1000 * ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
            "min_ms": 1000 * ordered[0], "max_ms": 1000 * ordered[-1]}


def agent_seconds(node: Node) -> float | None:
    """Time the enforcer itself spent on the node's last request (None for other drivers)."""
    return node.client.last_agent_ms / 1000 if isinstance(node, EnforcedNode) else None


def measure_shape(node: Node, path: Path, pods: int, reads: int) -> dict[str, dict[str, float]]:
    run_times: list[float] = []
    running_times: list[float] = []
    read_times: list[float] = []
    agent_read_times: list[float] = []
    for index in range(pods):
        pod = renamed(path, index)
        start = time.perf_counter()
        handle = node.run(pod)
        run_times.append(time.perf_counter() - start)
        if not handle.admitted:
            raise SystemExit(f"pod {pod.name} rejected: {'; '.join(handle.errors)}")
        handle.wait_running(timeout=60)
        running_times.append(time.perf_counter() - start)
        for _ in range(reads):
            read_times.append(timed(handle.evidence))
            agent_time = agent_seconds(node)
            if agent_time is not None:
                agent_read_times.append(agent_time)
        handle.delete()
    results = {"run": summary(run_times), "admit_to_running": summary(running_times),
               "evidence": summary(read_times)}
    if agent_read_times:
        results["evidence_in_agent"] = summary(agent_read_times)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--node", default="vm?memory=6144",
                        help="node spec (default: a reference VM with room for the KEP pod's 4Gi request)")
    parser.add_argument("--pods", type=int, default=10, help="pods per shape")
    parser.add_argument("--reads", type=int, default=10, help="evidence reads per pod")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    node = open_node(args.node)
    results: dict[str, Any] = {"node": args.node, "node_ready_s": time.perf_counter() - start, "shapes": {}}
    try:
        facts = node.facts()
        results["facts"] = {"kernel": facts.kernel_version, "memory": facts.memory_capacity,
                            "cpus": facts.cpu_capacity_milli // 1000}
        for name, path in SHAPES.items():
            results["shapes"][name] = measure_shape(node, path, args.pods, args.reads)
    finally:
        node.close()
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"node {args.node}: ready (boot + push + agent start) in {results['node_ready_s']:.1f} s; "
          f"kernel {results['facts']['kernel']}")
    print(f"{'shape':40} {'measure':18} {'n':>4} {'median':>9} {'p90':>9} {'min':>9} {'max':>9}")
    for name, measures in results["shapes"].items():
        for measure, s in measures.items():
            print(f"{name:40} {measure:18} {s['n']:>4} {s['median_ms']:>7.0f}ms {s['p90_ms']:>7.0f}ms "
                  f"{s['min_ms']:>7.0f}ms {s['max_ms']:>7.0f}ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
