"""The agent's pod throughput one pod at a time against two independent pods side by side, in one VM (issue 31
item 2: the ceiling of independent checks side by side on one node).

Run: .venv/bin/python benchmarks/side_by_side_bench.py [--rounds 4] [--pods 12] [--json]
Boots one reference VM (no agent started), unpacks this tree's agent bundle and runs the agent in-process on the
VM's real cgroup tree, `direct` runtime, as spawn_ab.py does. Each round is one process in the VM that, after a
warm-up cycle per shape and path, runs `--pods` cycles of run / evidence / delete of the article's res-demo pod
(pause + 1), then of a pod of 3 containers (spawn_ab.shapes), in each of three modes back to back, their order
rotated every round:

- `agent`: one thread through the agent's own operations (Agent.run_pod, evidence, delete; its one lock);
- `serial`: one thread through the per-pod path below;
- `pair`: two threads, `--pods`/2 cycles each, through the per-pod path, two independent pods at any moment.

The per-pod path is what a per-pod lock instead of the agent's global one (Agent.lock, held by every operation)
would run; the state of the node both threads share stays under one lock here (`node`):
- the pod table (admission's duplicate and uid checks, add, remove), the oracle's expectation computed from it and
  written by Enforcement.apply (the kubepods and QoS cgroups' sums, every active pod's values, the cgroup writer's
  and the launcher's caches of what was written and computed), forgetting a deleted pod in those caches, and the
  state file (written after each run and delete, every pod's record);
- outside it, each thread's own pod: starting its containers and waiting until each sits in its cgroup
  (Supervision.start_due: the trampolines' exec, 78 % of a run), reading its evidence, killing and reaping its
  processes (44 % of a delete) and removing its cgroup directories. A delete takes the pod out of the table (and
  recomputes the sums) only after its processes are dead and removes its directories after that, so another
  thread's apply never writes to, nor re-creates, a cgroup being removed. The state file may catch the other
  thread's pod while its containers start, which a restarted agent handles as it does today's crash in a start (it
  kills every recorded pid and removes every marked cgroup).

After each run it checks every container process in its cgroup with the oracle's oom_score_adj (spawn_ab.py); after
each mode and shape, that no pod and no pod cgroup is left and that the kubepods and QoS cgroups' files the oracle
sets read the same every time: a violation stops the benchmark. Timed in the VM (no SSH), with the guest's
/proc/stat before and after each mode and shape. Prints pods per second per round and the medians over rounds, the ratio
pair / serial, the guest's busy fraction, and the host's load average before and after (the host may be shared).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from typing import Any

from check_profile import busy_fraction, cpu_jiffies
from spawn_ab import shapes

from nodeconf.infra.vm.image import ensure_image
from nodeconf.infra.vm.machine import VirtualMachine
from nodeconf.infra.vm.progress import StepPrinter
from nodeconf.nodes.enforced.bundle import agent_bundle

WORK = "/run/nodeconf-side-by-side"  # on the VM's tmpfs: gone with the VM
MODES = ("agent", "serial", "pair")
# Runs in the VM: argv = bundle directory, state directory, pods per mode and shape, the modes in order; stdin =
# {shape: pod manifest}; stdout = JSON {mode: {shape: {"wall": s, "pods": n, "stat": [before, after],
# "ops": {operation: [ms, ...]}}}}.
IN_VM = r"""
import dataclasses, json, sys, threading, time
from pathlib import Path
top, state, count, modes = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(",")
sys.path.insert(0, top)
from nodeconf.enforcer import readings
from nodeconf.enforcer.agent import Agent
from nodeconf.enforcer.cgroupfs import OWNED
from nodeconf.enforcer.facts import detect, node_memory_used
from nodeconf.enforcer.oracle import decide_resize, expect
from nodeconf.enforcer.ownership import agent_owner
from nodeconf.enforcer.pod_table import admitted_record, check_names
from nodeconf.enforcer.systemd_tree import tree_for
from nodeconf.manifest_reader import object_from_dict
root = Path("/sys/fs/cgroup")
state.mkdir(parents=True, exist_ok=True, mode=0o700)
open("/proc/self/oom_score_adj", "w").write("-999")  # the agent's own, as `serve` sets it
tree = tree_for(root, OWNED, agent_owner(state))
facts = dataclasses.replace(detect(root, "nonlinear", "direct"), runtime="direct",
                            measured_cpu_weight_formula="nonlinear")
agent = Agent(tree, state, facts, expect, decide_resize, node_memory_used=node_memory_used)
agent.recover()
node = threading.Lock()  # the node-level state (the benchmark's docstring)

def run_per_pod(doc):
    pod = object_from_dict(doc, source="run")
    check_names(pod)
    with node:
        assert pod.ref not in agent.pods, pod.ref
        expectation = agent.enforcement.expect([pod])
        pe = expectation.pod(pod.name, pod.namespace)
        assert pe.admitted and pe.cgroup is not None, pe.errors
        assert not agent.pods.refusal(pod, pe.cgroup.path, agent.tree)
        record = admitted_record(pe)
        agent.pods.add(record)
        agent.enforcement.apply(expectation)
    agent.supervision.start_due(record, time.monotonic())
    with node:
        agent.save()

def evidence_per_pod(ref):
    readings.pod_evidence(agent.tree, agent.pods.record(ref))

def delete_per_pod(ref):
    record = agent.pods.record(ref)
    agent.launcher.stop_all_for_good(record.containers)  # kill, then reap each
    for c in record.containers:
        if c.state == "running":
            c.state, c.reason, c.exit_code = "terminated", "Killed", 137
    with node:
        agent.pods.remove(ref)
        agent.cgroups.forget(record.cgroup)
        agent.launcher.forget(record.cgroup)
        agent.enforcement.kept.forget(record.cgroup)
        agent.enforcement.enforce()
        agent.save()
    agent.tree.kill(record.cgroup)
    agent.tree.remove(record.cgroup)

OPS = {"agent": (agent.run_pod, agent.evidence, agent.delete),
       "serial": (run_per_pod, evidence_per_pod, delete_per_pod)}
OPS["pair"] = OPS["serial"]
gone = []

def cycles(mode, shape, doc, names, times):
    run, evidence, delete = OPS[mode]
    for name in names:
        doc = dict(doc, metadata={"name": name})  # a fresh uid each cycle
        ref = "default/" + name
        t0 = time.perf_counter()
        run(doc)
        t1 = time.perf_counter()
        evidence(ref)
        t2 = time.perf_counter()
        record = agent.pods[ref]
        for c in record.containers:
            pid = c.proc.pid
            where = open("/proc/%d/cgroup" % pid).read().strip().split("::", 1)[1]
            score = int(open("/proc/%d/oom_score_adj" % pid).read())
            if c.state != "running" or where != "/" + c.cgroup or score != c.oom_score_adj:
                raise SystemExit("%s %s: state %s, in %s, oom_score_adj %d; expected running in /%s with %d"
                                 % (ref, c.name, c.state, where, score, c.cgroup, c.oom_score_adj))
        t3 = time.perf_counter()
        delete(ref)
        t4 = time.perf_counter()
        gone.append(record.cgroup)
        for op, seconds in (("run", t1 - t0), ("evidence", t2 - t1), ("delete", t4 - t3)):
            times.setdefault(op, []).append(round(1000 * seconds, 1))

def node_values():
    return {cg.path + "/" + f: tree.read(cg.path, f) for cg in agent.enforcement.expect().cgroups.values()
            for f in cg.files}

def stat():
    return open("/proc/stat").read()

shapes = json.load(sys.stdin)
out, failed, reference = {}, [], None
try:
    for shape, doc in shapes.items():  # warm-up: one cycle per shape and path
        cycles("agent", shape, doc, ["warm-agent-" + shape], {})
        cycles("serial", shape, doc, ["warm-pod-" + shape], {})
    for shape, doc in shapes.items():  # the modes of one shape back to back: a drifting host load hits each alike
        for mode in modes:
            names = ["%s-%s-%d" % (mode, shape, i) for i in range(count)]
            lanes = [names[0::2], names[1::2]] if mode == "pair" else [names]
            times = {}
            def lane(names, times=times, mode=mode, shape=shape, doc=doc):
                try:
                    cycles(mode, shape, doc, names, times)
                except BaseException as err:
                    failed.append("%s %s: %r" % (mode, shape, err))
            threads = [threading.Thread(target=lane, args=(part,)) for part in lanes]
            before, t0 = stat(), time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            wall, after = time.perf_counter() - t0, stat()
            if failed:
                raise SystemExit("; ".join(failed))
            out.setdefault(mode, {})[shape] = {"wall": wall, "pods": count, "stat": [before, after], "ops": times}
            left = [p for p in gone if tree.exists(p)]
            values = node_values()
            if len(agent.pods) or left or (reference is not None and values != reference):
                raise SystemExit("after %s %s: pods %s, cgroups left %s, node values %s, expected %s"
                                 % (mode, shape, list(agent.pods), left, values, reference))
            reference = values
finally:
    agent.shutdown()
print(json.dumps(out))
"""


def rotated(index: int) -> list[str]:
    """The modes in round `index`'s order: each mode goes first in turn."""
    return [MODES[(index + i) % len(MODES)] for i in range(len(MODES))]


def figures(found: dict[str, Any]) -> dict[str, float]:
    """One mode and shape of a round: pods per second, the guest's busy fraction over all its CPUs (/proc/stat)
    and the median ms of each operation."""
    before, after = (cpu_jiffies(text) for text in found["stat"])
    return {"pods_per_s": found["pods"] / found["wall"], "busy": busy_fraction(before, after).get("cpu", 0.0),
            **{f"{op}_ms": statistics.median(values) for op, values in found["ops"].items()}}


def medians(rounds: list[dict[str, dict[str, dict[str, float]]]]) -> dict[str, dict[str, dict[str, float]]]:
    """Per mode and shape, the median of each figure over the rounds."""
    return {mode: {shape: {key: statistics.median(r[mode][shape][key] for r in rounds)
                           for key in rounds[0][mode][shape]}
                   for shape in rounds[0][mode]}
            for mode in rounds[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--pods", type=int, default=12, help="pods per mode, shape and round (even: two lanes)")
    parser.add_argument("--json", action="store_true", help="print every round's figures as JSON")
    args = parser.parse_args()
    if args.rounds < 1 or args.pods < 2 or args.pods % 2:
        parser.error("--rounds must be at least 1 and --pods an even number of at least 2")
    load_before = os.getloadavg()
    bundle = agent_bundle()
    image = ensure_image(progress=StepPrinter("image"))
    rounds: list[dict[str, dict[str, dict[str, float]]]] = []
    with VirtualMachine(image, name="side-by-side") as machine, machine.ssh() as node:
        node.run(["sh", "-c", f"mkdir -p {WORK}/agent && tar -x -z -C {WORK}/agent"], input=bundle).check()
        for index in range(args.rounds):
            order = rotated(index)
            result = node.run(["python3", "-I", "-B", "-c", IN_VM, f"{WORK}/agent", f"{WORK}/state-{index}",
                               str(args.pods), ",".join(order)], input=json.dumps(shapes()).encode(),
                              timeout=1200).check()
            found = json.loads(result.text)
            rounds.append({mode: {shape: figures(f) for shape, f in found[mode].items()} for mode in MODES})
            print(f"round {index} ({', '.join(order)}): " + "; ".join(
                f"{mode} {shape} {f['pods_per_s']:.2f}/s" for mode in MODES for shape, f in rounds[-1][mode].items()),
                file=sys.stderr)
    load = {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]}
    found_medians = medians(rounds)
    if args.json:
        print(json.dumps({"load_average": load, "rounds": rounds, "medians": found_medians}, indent=2))
        return 0
    print(f"{args.rounds} rounds x {args.pods} pods per mode and shape; host load average (1, 5, 15 min) before "
          f"{load['before']}, after {load['after']}")
    print("median over rounds: pods/s, guest busy, run / evidence / delete ms")
    for shape in found_medians["agent"]:
        for mode in MODES:
            f = found_medians[mode][shape]
            print(f"  {shape:10} {mode:7} {f['pods_per_s']:6.2f}/s  busy {f['busy']:4.0%}  "
                  f"{f['run_ms']:.0f} / {f['evidence_ms']:.0f} / {f['delete_ms']:.0f}")
        ratios = [r["pair"][shape]["pods_per_s"] / r["serial"][shape]["pods_per_s"] for r in rounds]
        print(f"  {shape:10} pair / serial per round: " + ", ".join(f"{x:.2f}" for x in ratios)
              + f" (median {statistics.median(ratios):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
