"""`nodeconf explain`: what a node should do with these pods, as JSON (DESIGN.md contract), the same document as
YAML, or a table."""

from __future__ import annotations

import argparse
import gc
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import yaml

from nodeconf.cli.explain_diff import NodeDiff, diff_json, diff_table, workloads
from nodeconf.cli.manifest_inputs import manifest_paths
from nodeconf.cli.writable import check_kubelet_accepts, check_writable
from nodeconf.errors import InputError, shown
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.loader import KubeObject, UnknownFields, load_kubelet_config, load_objects
from nodeconf.manifest import LimitRange, Pod, ResourceQuota, replica_pods
from nodeconf.node_facts import CPU_WEIGHT_FORMULAS, NodeFacts
from nodeconf.quantity import Quantity, QuantityError, beyond_int64
from nodeconf.semantics.diff import expectation_changes
from nodeconf.semantics.expect import expect
from nodeconf.semantics.expectation import CgroupExpectation, ContainerExpectation, Expected, NodeExpectation
from nodeconf.semantics.profile import DEFAULT_VERSION, SUPPORTED_VERSIONS, Profile, profile_for

OUTPUTS = ("json", "yaml", "table")
# Largest base page size of a Linux architecture (256 KiB: hexagon, powerpc 44x); bigger pages are huge pages.
MAX_PAGE_SIZE = 256 * 1024
# The most pods one explain judges, workloads' replicas counted (a node runs at most maxPods, 110 by default).
MAX_PODS = 10_000


def add_parser(subparsers: Any) -> None:
    """Register `explain` and its options (DESIGN.md "nodeconf explain")."""
    parser = subparsers.add_parser(
        "explain",
        help="show what a node should do with these pods",
        description="Treats all given pods as running together on one node and prints the expected cgroup "
        "files, oom_score_adj, admission, events and metrics. A workload counts as the pods it runs when all of it "
        "lands on this node (replicas, one per node for a DaemonSet, a Job's parallelism; docs/diffs.md). With "
        "--diff, prints only what differs on a second node.",
    )
    parser.add_argument("manifests", nargs="+", metavar="MANIFEST",
                        help="YAML files (multi-document, List), directories of them, - for standard input")
    add_node_options(parser, defaults=True)
    parser.add_argument("-o", "--output", default="json", metavar="json|yaml|table",
                        help="json (default), yaml (the same document) or table")
    parser.add_argument("--strict", action="store_true",
                        help="refuse a field nodeconf does not read (default: a warning naming it, on stderr)")
    parser.add_argument(
        "--diff", nargs=argparse.REMAINDER, metavar="NODE-OPTION",
        help="judge the same pods on a second node: the node options after --diff override the first node's; "
        "print only what differs (exit 1 when something does, 0 when nothing does)",
    )


def add_node_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """The options that describe the node (kubelet config, profile, capacities, runtime, kernel); without
    defaults, an option not given is absent from the parsed namespace (the `--diff` side overrides only those)."""

    def default(value: Any) -> Any:
        return value if defaults else argparse.SUPPRESS

    parser.add_argument("--kubelet-config", default=default(None), metavar="FILE", help="KubeletConfiguration YAML")
    parser.add_argument("--memory", default=default("8Gi"), metavar="Q", help="node memory capacity (default 8Gi)")
    parser.add_argument("--swap", default=default("4Gi"), metavar="Q", help="node swap capacity (default 4Gi)")
    parser.add_argument("--cpu", default=default("2"), metavar="Q", help="node cpu capacity (default 2)")
    parser.add_argument(
        "--profile", "--kubernetes-version", dest="profile", default=default(DEFAULT_VERSION), metavar="X.Y",
        help=f"the Kubernetes version the oracle judges by, as in nodeconf run: one of {', '.join(SUPPORTED_VERSIONS)} "
        f"(default {DEFAULT_VERSION} with default feature gates: alpha gates only through the kubelet config's "
        "featureGates); --kubernetes-version is an alias",
    )
    parser.add_argument(
        "--cpu-weight-formula", default=default("nonlinear"), metavar="linear|nonlinear",
        help="the runtime's shares→weight formula: linear or nonlinear (default nonlinear)",
    )
    parser.add_argument("--page-size", default=default("4096"), metavar="N",
                        help="kernel page size in bytes (default 4096)")
    parser.add_argument(
        "--no-swap-controller", action="store_true", default=default(False),
        help="the node has no swap accounting (no memory.swap.max): the kubelet writes no swap setting",
    )
    parser.add_argument("--pids", default=default(None), metavar="N",
                        help="the node's pid capacity, min(pid_max, threads-max) (default unknown)")
    parser.add_argument("--hugepages", default=default(""), metavar="SIZE=TOTAL,...",
                        help="huge page sizes and their total, e.g. 2Mi=64Mi,1Gi=0 (default none)")


class _DiffOptionParser(argparse.ArgumentParser):
    """Parses the node options after `--diff`; anything else is one InputError line."""

    def error(self, message: str) -> NoReturn:
        raise InputError(f"{message} (only node options and -o may follow --diff)", field="--diff")


def diff_side(args: argparse.Namespace) -> argparse.Namespace:
    """The second node: the first node's options with those given after `--diff` in their place."""
    parser = _DiffOptionParser(prog="nodeconf explain --diff", add_help=False)
    add_node_options(parser, defaults=False)
    parser.add_argument("-o", "--output", default=argparse.SUPPRESS)
    given = parser.parse_args(args.diff)
    return argparse.Namespace(**{**vars(args), **vars(given), "diff": None})


def _quantity(text: str, flag: str, *, milli: bool = False) -> int:
    try:
        q = Quantity.parse(text)
    except QuantityError as err:
        raise InputError(str(err), field=flag) from None
    if q.amount < 0:
        raise InputError(f"must not be negative, got {shown(text)}", field=flag)
    if beyond_int64(q, milli=milli):
        raise InputError(f"{shown(text)} is beyond int64 (the kubelet reads capacities as int64)", field=flag)
    return q.milli_value() if milli else q.value()


def _choice(value: str, allowed: tuple[str, ...], flag: str) -> str:
    if value not in allowed:
        raise InputError(f"unknown value {shown(value)} (expected one of {', '.join(allowed)})", field=flag)
    return value


def node_facts(args: argparse.Namespace) -> NodeFacts:
    """The node from the command-line options; InputError names the bad option."""
    memory = _quantity(args.memory, "--memory")
    cpu_milli = _quantity(args.cpu, "--cpu", milli=True)
    for value, flag in ((memory, "--memory"), (cpu_milli, "--cpu")):
        if value == 0:
            raise InputError("must be positive", field=flag)
    text = args.page_size
    if not (text.isascii() and text.isdigit() and len(text) <= 12):
        raise InputError(f"expected a whole number of bytes, got {shown(text)}", field="--page-size")
    page_size = int(text)
    if not 0 < page_size <= MAX_PAGE_SIZE or page_size & (page_size - 1):
        raise InputError(f"must be a power of two up to {MAX_PAGE_SIZE}, got {page_size}", field="--page-size")
    return NodeFacts(
        memory_capacity=memory,
        swap_capacity=_quantity(args.swap, "--swap"),
        cpu_capacity_milli=cpu_milli,
        page_size=page_size,
        cpu_weight_formula=_choice(args.cpu_weight_formula, CPU_WEIGHT_FORMULAS, "--cpu-weight-formula"),
        swap_controller=not args.no_swap_controller,
        pid_capacity=_pids(args.pids),
        hugepages=_hugepages(args.hugepages),
    )


def _pids(text: str | None) -> int | None:
    if text is None:
        return None
    if not text.isdigit() or int(text) == 0:
        raise InputError(f"expected a positive integer, got {text!r}", field="--pids")
    return int(text)


def _hugepages(text: str) -> tuple[tuple[int, int], ...]:
    """`2Mi=64Mi,1Gi=0` as ((size, total bytes), ...); a size must be a power of two of at least 4Ki."""
    pairs = []
    for item in filter(None, text.split(",")):
        size_text, sep, total_text = item.partition("=")
        size = _quantity(size_text, "--hugepages")
        if not sep or size < 4096 or size & (size - 1):
            raise InputError(f"expected SIZE=TOTAL with a power-of-two SIZE, got {item!r}", field="--hugepages")
        pairs.append((size, _quantity(total_text, "--hugepages")))
    return tuple(pairs)


def _cgroup(cgroup: CgroupExpectation) -> dict[str, Any]:
    out: dict[str, Any] = {
        "path": cgroup.path,
        "files": {name: e.value for name, e in cgroup.files.items()},
        "rules": {name: e.rule for name, e in cgroup.files.items()},
    }
    accepted = {name: dict(e.accepted) for name, e in cgroup.files.items() if e.accepted}
    if accepted:
        out["accepted"] = accepted
    return out


def _container(c: ContainerExpectation) -> dict[str, Any]:
    return {
        "name": c.name,
        "init": c.init,
        "sidecar": c.sidecar,
        "cgroup": _cgroup(c.cgroup),
        "oomScoreAdj": int(c.oom_score_adj.value),
        "oomScoreAdjRule": c.oom_score_adj.rule,
    }


def to_json(result: NodeExpectation) -> dict[str, Any]:
    """The DESIGN.md JSON shape, plus `rules` beside `files` and the pause container."""
    n = result.node
    return {
        "node": {
            "memoryCapacity": n.memory_capacity,
            "swapCapacity": n.swap_capacity,
            "cpuCapacityMilli": n.cpu_capacity_milli,
            "allocatableMemory": n.allocatable_memory,
            "allocatableCpuMilli": n.allocatable_cpu_milli,
            "swapBehavior": n.swap_behavior,
            "kubernetesVersion": n.kubernetes_version,
            "cpuWeightFormula": n.cpu_weight_formula,
            "pageSize": n.page_size,
            "featureGates": dict(n.feature_gates),
            "swapController": n.swap_controller,
            "hugepages": {name: {"capacity": total, "allocatable": free}
                          for name, (total, free) in n.hugepages.items()},
        },
        "warnings": list(result.warnings),
        "cgroups": {path: {k: e.value for k, e in cg.files.items()} for path, cg in result.cgroups.items()},
        "cgroupRules": {path: {k: e.rule for k, e in cg.files.items()} for path, cg in result.cgroups.items()},
        "pods": [
            {
                "name": p.pod.name,
                "namespace": p.pod.namespace,
                "uid": p.pod.uid,
                "qosClass": p.qos_class.value,
                "admitted": p.admitted,
                "errors": list(p.errors),
                "warnings": list(p.warnings),
                "events": [{"type": e.type, "reason": e.reason, "message": e.message} for e in p.events],
                "cgroup": _cgroup(p.cgroup) if p.cgroup is not None else None,
                "containers": [_container(c) for c in p.containers],
                "pause": _container(p.pause) if p.pause is not None else None,
            }
            for p in result.pods
        ],
        "metrics": dict(result.metrics),
        "nodeLimits": {path: {k: e.value for k, e in files.items()} for path, files in result.node_limits.items()},
        "nodeLimitRules": {path: {k: e.rule for k, e in files.items()} for path, files in result.node_limits.items()},
    }


def _file_lines(files: Mapping[str, Expected], indent: str) -> list[str]:
    width = max((len(name) for name in files), default=0)
    value_width = max((len(e.value) for e in files.values()), default=0)
    return [f"{indent}{name:<{width}}  {e.value:<{value_width}}  {e.rule}" for name, e in files.items()]


def to_table(result: NodeExpectation) -> str:
    """A readable listing: node, node-level cgroups, then each pod with its containers, values and rules."""
    n = result.node
    lines = [
        f"node: memory {n.memory_capacity} (allocatable {n.allocatable_memory}), swap {n.swap_capacity}, "
        f"cpu {n.cpu_capacity_milli}m (allocatable {n.allocatable_cpu_milli}m), {n.swap_behavior}, "
        f"Kubernetes {n.kubernetes_version}, {n.cpu_weight_formula} cpu.weight, page {n.page_size}",
        "gates: " + ", ".join(f"{name}={'on' if on else 'off'}" for name, on in sorted(n.feature_gates.items())),
    ]
    lines += [f"{name}: {total} (allocatable {free})" for name, (total, free) in n.hugepages.items()]
    lines += [f"warning: {w}" for w in result.warnings]
    for path, cg in result.cgroups.items():
        lines += ["", path, *_file_lines(cg.files, "  ")]
    for p in result.pods:
        state = "admitted" if p.admitted else "REJECTED"
        lines += ["", f"pod {p.pod.ref}  {p.qos_class.value}  {state}"]
        lines += [f"  error: {e}" for e in p.errors]
        lines += [f"  warning: {w}" for w in p.warnings]
        lines += [f"  event: {e.type} {e.reason}: {e.message}" for e in p.events]
        if p.cgroup is not None:
            lines += [f"  {p.cgroup.path}", *_file_lines(p.cgroup.files, "    ")]
        for c in (*p.containers, *((p.pause,) if p.pause is not None else ())):
            kind = "sidecar" if c.sidecar else "init container" if c.init else "container"
            if c is p.pause:
                kind = "pause"
            lines += [
                f"  {kind} {c.name}: oom_score_adj {c.oom_score_adj.value}  ({c.oom_score_adj.rule})",
                f"    {c.cgroup.path}",
                *_file_lines(c.cgroup.files, "      "),
            ]
    lines += ["", "metrics:", *(f"  {name} {value}" for name, value in result.metrics.items())]
    lines += ["", "node limits (pids, hugetlb, memory.oom.group, reserve cgroups; kubepods and the reserve "
              "cgroups are not enforced yet):"]
    for path, files in result.node_limits.items():
        lines += [f"  {path}", *_file_lines(files, "    ")]
    return "\n".join(lines) + "\n"


def warning_lines(result: NodeExpectation) -> list[str]:
    """The node's and pods' warnings for stderr, as kubectl shows the API server's, since JSON readers miss them."""
    return [f"nodeconf: warning: {w}" for w in result.warnings] + [
        f"nodeconf: warning: Pod {p.pod.ref}: {w}" for p in result.pods for w in p.warnings
    ]


def node_pods(objects: Sequence[KubeObject]) -> list[Pod]:
    """The pods on the node: each Pod, and each workload's pods counted as manifest.replica_pods says."""
    given = [o for o in objects if isinstance(o, Pod)]
    count = sum(p.workload.pods if p.workload is not None else 1 for p in given)
    if count > MAX_PODS:
        raise InputError(f"{count} pods once workloads count their replicas; explain judges at most {MAX_PODS} "
                         "on one node")
    return [replica for p in given for replica in replica_pods(p)]


@dataclass(frozen=True)
class NodeSetup:
    """A node as the options describe it: its facts, its kubelet configuration and the profile."""

    facts: NodeFacts
    config: KubeletConfig
    profile: Profile


def node_setup(args: argparse.Namespace, unknown: UnknownFields) -> NodeSetup:
    """The node of the options; InputError names the bad option or file; fields nodeconf does not read go to
    `unknown`."""
    node = node_facts(args)
    config = load_kubelet_config(args.kubelet_config, unknown) if args.kubelet_config else KubeletConfig()
    profile = profile_for(args.profile, config)
    check_kubelet_accepts(config, profile)
    return NodeSetup(node, config, profile)


def judge(setup: NodeSetup, objects: Sequence[KubeObject]) -> NodeExpectation:
    """Run the oracle on the node with these objects' pods."""
    namespace_objects = [o for o in objects if isinstance(o, LimitRange | ResourceQuota)]
    result = expect(node_pods(objects), setup.facts, setup.config, setup.profile, namespace_objects)
    check_writable(result)
    return result


def explain(args: argparse.Namespace) -> NodeExpectation:
    """Load the inputs named by the options and run the oracle; unknown fields are named once all input loaded."""
    unknown = UnknownFields(strict=args.strict)
    setup = node_setup(args, unknown)
    result = judge(setup, load_objects(manifest_paths(args.manifests), unknown))
    unknown.warn()
    return result


def run_diff(args: argparse.Namespace) -> int:
    """Judge the pods on both nodes and print what differs; 1 when something does, 0 when nothing does."""
    second = diff_side(args)
    output = _choice(second.output, OUTPUTS, "--output")
    unknown = UnknownFields(strict=args.strict)
    before, after = node_setup(args, unknown), node_setup(second, unknown)
    objects = load_objects(manifest_paths(args.manifests), unknown)
    old, new = judge(before, objects), judge(after, objects)
    unknown.warn()
    report = NodeDiff(old, new, expectation_changes(old, new), tuple(workloads(objects)))
    sys.stdout.write(diff_table(report) if output == "table" else document(diff_json(report), output, indent=True))
    return 1 if report.changes else 0


def run(args: argparse.Namespace) -> int:
    """Print the expectation, or with `--diff` what differs (exit 1 when something does); InputError propagates
    to the dispatcher (exit 2, one line)."""
    _choice(args.output, OUTPUTS, "--output")
    if args.diff is not None:
        return run_diff(args)
    # The run builds ~10^6 objects and leaves no cycles behind: the cyclic collector would only re-scan them
    # (~6% of the command on 1,000 pods), so it pauses until the output is written.
    collecting = gc.isenabled()
    gc.disable()
    try:
        _write(explain(args), args.output)
    finally:
        if collecting:
            gc.enable()
    return 0


def _write(result: NodeExpectation, output: str) -> None:
    if output == "table":
        sys.stdout.write(to_table(result))
        return
    for line in warning_lines(result):
        print(line, file=sys.stderr)
    sys.stdout.write(document(to_json(result), output, indent=sys.stdout.isatty()))


def document(doc: dict[str, Any], output: str, *, indent: bool) -> str:
    """`doc` as JSON (indented when `indent`) or as YAML, keys in the JSON's order; ends with a newline.

    json.dumps, not json.dump: only the one-shot, unindented encoding uses the C encoder (~4x faster on 1,000
    pods); json.dump always runs the pure-Python one. YAML uses libyaml's emitter when PyYAML has it."""
    if output == "yaml":
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        return str(yaml.dump(doc, Dumper=dumper, sort_keys=False, allow_unicode=True))
    return json.dumps(doc, indent=2 if indent else None) + "\n"
