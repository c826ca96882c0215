"""`nodeconf explain` speed: N pods on one node (target: 1,000 pods in under 1 second).

Run: .venv/bin/python benchmarks/explain_bench.py [--pods 1000] [--repeats 5] [--json]
Writes one multi-document manifest with a mix of Guaranteed, Burstable (with sidecars, pod-level resources,
limits.swap) and BestEffort pods in two namespaces with a LimitRange and a ResourceQuota, then times
(1) the oracle alone (`expect()` on parsed pods), (2) parse + oracle + JSON in-process, and (3) the whole
command as a subprocess (interpreter start-up included). The scratch directory is removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from nodeconf.cli.explain import to_json
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.loader import load_objects
from nodeconf.manifest import LimitRange, Pod, ResourceQuota
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics.expect import expect
from nodeconf.semantics.profile import profile_for

NODE_ARGS = ("--memory", "1Ti", "--cpu", "512", "--swap", "64Gi")
NODE = NodeFacts(memory_capacity=2**40, cpu_capacity_milli=512_000, swap_capacity=64 * 2**30)


def _container(name: str, index: int) -> dict[str, Any]:
    kind = index % 4
    resources: dict[str, Any] = {}
    if kind == 0:
        resources = {"requests": {"cpu": "250m", "memory": "128Mi"}, "limits": {"cpu": "250m", "memory": "128Mi"}}
    elif kind == 1:
        resources = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "256Mi", "swap": "128Mi"}}
    elif kind == 2:
        resources = {"requests": {"memory": "32Mi"}}
    return {"name": name, "image": "busybox", **({"resources": resources} if resources else {})}


def manifest_docs(pods: int) -> list[dict[str, Any]]:
    """A LimitRange and a ResourceQuota in `team`, then `pods` pods alternating between `default` and `team`."""
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "defaults", "namespace": "team"},
         "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "10m", "memory": "64Mi"},
                              "default": {"memory": "512Mi"}, "max": {"memory": "8Gi"}}]}},
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "budget", "namespace": "team"},
         "spec": {"hard": {"pods": str(pods), "requests.cpu": "1000"}}},
    ]
    for i in range(pods):
        spec: dict[str, Any] = {"containers": [_container("app", i), _container("helper", i + 1)]}
        if i % 5 == 0:
            spec["initContainers"] = [{**_container("log", i + 2), "restartPolicy": "Always"}]
        if i % 7 == 0:
            spec["resources"] = {"limits": {"cpu": "2", "memory": "4Gi"}}
        docs.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": f"pod-{i}", "namespace": "team" if i % 2 else "default"}, "spec": spec})
    return docs


def timed(fn: Callable[[], object], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def timed_oracle(path: Path, config: KubeletConfig, repeats: int) -> list[float]:
    """expect() alone, on freshly parsed pods each time (pods memoise derived values)."""
    times = []
    for _ in range(repeats):
        objects = load_objects([path])
        pods = [o for o in objects if isinstance(o, Pod)]
        namespace_objects = [o for o in objects if isinstance(o, LimitRange | ResourceQuota)]
        start = time.perf_counter()
        expect(pods, NODE, config, profile_for(), namespace_objects)
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nodeconf-bench-") as scratch:
        path = Path(scratch) / "pods.yaml"
        path.write_text(yaml.safe_dump_all(manifest_docs(args.pods)))
        objects = load_objects([path])
        pods = [o for o in objects if isinstance(o, Pod)]
        namespace_objects = [o for o in objects if isinstance(o, LimitRange | ResourceQuota)]
        config = KubeletConfig(swap_behavior="WorkloadControlledSwap", max_pods=args.pods)
        profile = profile_for()
        admitted = sum(p.admitted for p in expect(pods, NODE, config, profile, namespace_objects).pods)

        def in_process() -> None:
            found = load_objects([path])
            result = expect([o for o in found if isinstance(o, Pod)], NODE, config, profile,
                            [o for o in found if isinstance(o, LimitRange | ResourceQuota)])
            json.dumps(to_json(result))  # compact, as the command writes it to a pipe

        def command() -> None:
            subprocess.run([sys.executable, "-m", "nodeconf", "explain", str(path), *NODE_ARGS,
                            "--kubelet-config", str(kubelet)], check=True, stdout=subprocess.DEVNULL)

        kubelet = Path(scratch) / "kubelet.yaml"
        kubelet.write_text("kind: KubeletConfiguration\nmemorySwap: {swapBehavior: WorkloadControlledSwap}\n"
                           f"maxPods: {args.pods}\n")
        runs = {
            "oracle": timed_oracle(path, config, args.repeats),
            "parse+oracle+json": timed(in_process, args.repeats),
            "command": timed(command, args.repeats),
        }
    numbers = {name: {"best_s": round(min(t), 4), "median_s": round(statistics.median(t), 4)}
               for name, t in runs.items()}
    if args.json:
        print(json.dumps({"pods": args.pods, "admitted": admitted, "results": numbers}, indent=2))
    else:
        print(f"{args.pods} pods ({admitted} admitted), {args.repeats} runs each")
        for name, n in numbers.items():
            print(f"  {name:<18} best {n['best_s']:.3f} s  median {n['median_s']:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
