"""Two trees' agents A/B in one VM boot: run / evidence / delete of a pod, measured inside the VM (issue 31).

Run: .venv/bin/python benchmarks/spawn_ab.py [--old REV] [--new HEAD] [--rounds 4] [--cycles 5] [--live 0] [--json]
Boots one reference VM (no agent started), unpacks the agent bundle of each git revision (`git archive`, so commit
first) and runs each agent in-process on the VM's real cgroup tree, `direct` runtime, old and new alternating (the
order swapped every round: a host whose load drifts favours neither). Each round and tree: one process, one warm-up
cycle per shape, then `--cycles` cycles of run, evidence and delete of the article's res-demo pod (pause + 1) and of
a pod of 3 containers, each timed by the agent's caller in the VM (no SSH, no bridge), with `--live` pods of 3
containers running beside them all along (as a module's shared deployment runs beside its checks' pods: the
agent's work per change grows with the pods it holds). After each run it checks
what both trees guarantee: every container process in its cgroup (/proc/PID/cgroup) with the oracle's
oom_score_adj; a violation stops the benchmark. Prints the medians per round and over all rounds (ms).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from nodeconf.infra.vm.image import ensure_image
from nodeconf.infra.vm.machine import VirtualMachine
from nodeconf.infra.vm.progress import StepPrinter
from nodeconf.loader import load_objects
from nodeconf.manifest import Pod
from nodeconf.manifest_writer import pod_to_dict
from nodeconf.nodes.enforced.bundle import agent_bundle, repo_root

RES_DEMO = repo_root() / "workloads" / "requests-limits" / "res-demo.yaml"
WORK = "/run/nodeconf-spawn-ab"  # on the VM's tmpfs: gone with the VM
OPERATIONS = ("run", "evidence", "delete")
# Runs in the VM: argv = bundle directory, state directory, cycles, live pods; stdin = {shape: pod manifest};
# stdout = JSON {shape: {operation: [ms, ...]}}.
IN_VM = r"""
import dataclasses, json, os, sys, time
from pathlib import Path
top, state, cycles, live = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
sys.path.insert(0, top)
from nodeconf.enforcer.agent import Agent
from nodeconf.enforcer.cgroupfs import OWNED
from nodeconf.enforcer.facts import detect, node_memory_used
from nodeconf.enforcer.oracle import decide_resize, expect
from nodeconf.enforcer.ownership import agent_owner
from nodeconf.enforcer.systemd_tree import tree_for
root = Path("/sys/fs/cgroup")
state.mkdir(parents=True, exist_ok=True, mode=0o700)
open("/proc/self/oom_score_adj", "w").write("-999")  # the agent's own, as `serve` sets it
tree = tree_for(root, OWNED, agent_owner(state))
facts = dataclasses.replace(detect(root, "nonlinear", "direct"), runtime="direct",
                            measured_cpu_weight_formula="nonlinear")
agent = Agent(tree, state, facts, expect, decide_resize, node_memory_used=node_memory_used)
agent.recover()
shapes = json.load(sys.stdin)
out = {}
try:
    for index in range(live):
        agent.run_pod(dict(shapes["three"], metadata={"name": "live-%d" % index}))
    for shape, doc in shapes.items():
        times = out.setdefault(shape, {"run": [], "evidence": [], "delete": []})
        for index in range(cycles + 1):
            doc["metadata"] = {"name": "ab-%s-%d" % (shape, index)}  # a fresh uid each cycle
            ref = "default/" + doc["metadata"]["name"]
            t0 = time.perf_counter()
            agent.run_pod(doc)
            t1 = time.perf_counter()
            agent.evidence(ref)
            t2 = time.perf_counter()
            for c in agent.pods[ref].containers:
                pid = c.proc.pid
                where = open("/proc/%d/cgroup" % pid).read().strip().split("::", 1)[1]
                score = int(open("/proc/%d/oom_score_adj" % pid).read())
                if c.state != "running" or where != "/" + c.cgroup or score != c.oom_score_adj:
                    sys.exit("%s %s: state %s, in %s, oom_score_adj %d; expected running in /%s with %d"
                             % (ref, c.name, c.state, where, score, c.cgroup, c.oom_score_adj))
            t3 = time.perf_counter()
            agent.delete(ref)
            t4 = time.perf_counter()
            if index:  # the first cycle warms up
                for name, seconds in (("run", t1 - t0), ("evidence", t2 - t1), ("delete", t4 - t3)):
                    times[name].append(round(1000 * seconds, 1))
finally:
    agent.shutdown()
print(json.dumps(out))
"""


def shapes() -> dict[str, dict[str, Any]]:
    (pod,) = load_objects([RES_DEMO])
    assert isinstance(pod, Pod)
    trio = [{"name": name, "image": "busybox:1.37",
             "resources": {"requests": {"cpu": "100m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}}}
            for name in ("a", "b", "c")]
    return {"res-demo": pod_to_dict(pod),
            "three": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "three"}, "spec": {"containers": trio}}}


def tree_of(revision: str, into: Path) -> Path:
    """The source tree of a git revision, unpacked."""
    archive = subprocess.run(["git", "-C", str(repo_root()), "archive", revision, "nodeconf"], check=True,
                             capture_output=True).stdout
    into.mkdir()
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def median_row(samples: dict[str, list[float]]) -> str:
    return " / ".join(f"{statistics.median(samples[op]):.0f}" for op in OPERATIONS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--old", help="git revision of the A tree (default: where HEAD branched from main)")
    parser.add_argument("--new", default="HEAD", help="git revision of the B tree (default: HEAD)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--cycles", type=int, default=5, help="measured cycles per shape, round and tree")
    parser.add_argument("--live", type=int, default=0, help="pods of 3 containers running beside the measured ones")
    parser.add_argument("--json", action="store_true", help="print every sample as JSON")
    args = parser.parse_args()
    if args.rounds < 1 or args.cycles < 1 or args.live < 0:
        parser.error("--rounds and --cycles must be at least 1, --live at least 0")
    old = args.old or subprocess.run(["git", "-C", str(repo_root()), "merge-base", "main", args.new], check=True,
                                     capture_output=True, text=True).stdout.strip()
    trees = {"old": old, "new": args.new}
    with tempfile.TemporaryDirectory(prefix="nodeconf-ab-") as scratch:
        bundles = {}
        for label, revision in trees.items():
            source = tree_of(revision, Path(scratch, label))
            bundles[label] = agent_bundle(source)
        image = ensure_image(progress=StepPrinter("image"))
        samples: dict[str, dict[str, dict[str, list[float]]]] = {}  # tree -> shape -> operation -> ms
        rounds: list[dict[str, dict[str, dict[str, list[float]]]]] = []
        with VirtualMachine(image, name="spawn-ab") as machine, machine.ssh() as node:
            for label, bundle in bundles.items():
                node.run(["sh", "-c", f"mkdir -p {WORK}/{label} && tar -x -z -C {WORK}/{label}"], input=bundle).check()
            for index in range(args.rounds):
                order = list(trees) if index % 2 == 0 else list(reversed(trees))
                this_round: dict[str, dict[str, dict[str, list[float]]]] = {}
                for label in order:
                    argv = ["python3", "-I", "-B", "-c", IN_VM, f"{WORK}/{label}", f"{WORK}/state-{label}",
                            str(args.cycles), str(args.live)]
                    result = node.run(argv, input=json.dumps(shapes()).encode(), timeout=600).check()
                    this_round[label] = json.loads(result.text)
                    for shape, ops in this_round[label].items():
                        for op, values in ops.items():
                            samples.setdefault(label, {}).setdefault(shape, {}).setdefault(op, []).extend(values)
                rounds.append(this_round)
                medians = [f"{label} {shape} {median_row(ops)}" for label in trees
                           for shape, ops in this_round[label].items()]
                print(f"round {index}: " + "; ".join(medians), file=sys.stderr)
    if args.json:
        print(json.dumps({"trees": trees, "rounds": rounds}, indent=2))
        return 0
    print(f"median ms, run / evidence / delete ({args.rounds} rounds x {args.cycles} cycles, {args.live} pods beside; "
          f"old {old}, new {args.new})")
    for shape in samples["old"]:
        for index, this_round in enumerate(rounds):
            print(f"{shape:10} round {index}: old {median_row(this_round['old'][shape])}   "
                  f"new {median_row(this_round['new'][shape])}")
        print(f"{shape:10} all:     old {median_row(samples['old'][shape])}   new {median_row(samples['new'][shape])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
