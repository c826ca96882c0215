"""What changes for the same pods between two expected nodes: every value that differs, with both rules.

Source: issue 33 (`nodeconf explain --diff`); the values and rules are the oracle's own (expect.expect), compared
as the kernel reads them back, so an unchanged value is never reported.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from nodeconf.semantics.eviction import PodMemoryUsage, rank_for_memory_pressure
from nodeconf.semantics.expectation import ContainerExpectation, Expected, NodeExpectation, PodExpectation

# Levels of a change that is not a pod's own.
NODE = "node"
METRICS = "metrics"
# Pod-level owners: the pod cgroup and the sandbox.
POD = "pod"
PAUSE = "pause"
ADMISSION = "admission"
ABSENT = "(absent)"
QOS_RULE = "QoS class from the cpu and memory requests and limits (qos.go ComputePodQOS)"
EVICTION_RULE = ("rank under memory pressure if every pod used its pod memory.max, or allocatable memory without "
                 "one (eviction/helpers.go rankMemoryPressure)")
ADMITTED_RULE = "passes API validation, the namespace's LimitRange and ResourceQuota, and the node fit"
# A gate's value: the profile's default (alpha gates off), unless the kubelet config's featureGates sets it.
GATE_RULE = "the profile's default, or the kubelet config's featureGates"
NODE_RULES = {
    "memoryCapacity": "the node's memory (--memory)",
    "swapCapacity": "the node's swap (--swap)",
    "cpuCapacityMilli": "the node's cpu (--cpu)",
    "allocatableMemory": "capacity − systemReserved − kubeReserved − evictionHard (node_container_manager_linux.go)",
    "allocatableCpuMilli": "capacity − systemReserved − kubeReserved (node_container_manager_linux.go)",
    "swapBehavior": "memorySwap.swapBehavior of the kubelet config (KEP-2400, KEP-5359)",
    "kubernetesVersion": "the profile (--profile)",
    "cpuWeightFormula": "the runtime's shares→weight formula (--cpu-weight-formula)",
    "pageSize": "the kernel's page size (--page-size)",
    "swapController": "cgroup v2 swap accounting (--no-swap-controller)",
    "warnings": "the kubelet's startup warnings for this config (profile.gate_warnings, memory_qos.node_warnings)",
}
METRIC_RULES = {
    "kubelet_node_swap_allocated_bytes": "sum of the admitted pods' limits.swap (KEP-5359 Risks and Mitigations)",
    "kubelet_memory_qos_node_memory_min_bytes": "sum of Guaranteed memory.min (Memory QoS v1.36 post)",
    "kubelet_memory_qos_node_memory_low_bytes": "sum of Burstable memory.low (Memory QoS v1.36 post)",
}
# What a field is about, for the summary line; first matching prefix wins.
_TOPICS = (("memory.swap.", "swap"), ("memory.min", "memory QoS"), ("memory.low", "memory QoS"),
           ("memory.high", "memory QoS"), ("memory.", "memory"), ("cpu.", "cpu"), ("pids.", "pids"),
           ("hugetlb.", "huge pages"), ("oom_score_adj", "oom_score_adj"), ("qosClass", "QoS class"),
           ("eviction", "eviction order"), ("events", "events"), ("warnings", "warnings"), ("cgroup", "cgroup paths"))


@dataclass(frozen=True)
class Change:
    """One value that differs: where (pod and owner, or a node level), which field, both values and both rules."""

    pod: str  # namespace/name; "" for a node-level change
    owner: str  # a container's name, "pod", "pause", "admission"; at node level "node", "metrics" or a cgroup path
    field: str
    before: str
    after: str
    rule_before: str
    rule_after: str
    workload: str = ""  # Kind/name when the pod is one of a workload's

    @property
    def topic(self) -> str:
        if self.field == ADMISSION:
            return ADMISSION
        return next((topic for prefix, topic in _TOPICS if self.field.startswith(prefix)), self.field)


# (owner, field) -> the expected value with its rule; the node limits the oracle keeps by cgroup path.
Values = dict[tuple[str, str], Expected]
Limits = Mapping[str, Mapping[str, Expected]]


def _files(owner: str, path: str, files: Mapping[str, Expected], limits: Limits) -> Iterator[tuple[tuple[str, str],
                                                                                                   Expected]]:
    """A cgroup's files, with the node limits (pids, hugetlb, memory.oom.group) the oracle keeps for its path."""
    yield (owner, "cgroup path"), Expected(path, "cgroup_paths (systemd or cgroupfs driver)")
    for name, expected in {**files, **limits.get(path, {})}.items():
        yield (owner, name), expected


def _container(owner: str, c: ContainerExpectation, limits: Limits) -> Iterator[tuple[tuple[str, str], Expected]]:
    yield from _files(owner, c.cgroup.path, c.cgroup.files, limits)
    yield (owner, "oom_score_adj"), c.oom_score_adj


def _pod_paths(p: PodExpectation) -> set[str]:
    cgroups = [p.cgroup, *(c.cgroup for c in p.containers), *((p.pause.cgroup,) if p.pause is not None else ())]
    return {cgroup.path for cgroup in cgroups if cgroup is not None}


def _listed(items: tuple[str, ...]) -> str:
    return "; ".join(items) if items else "(none)"


def _pod_values(p: PodExpectation, rank: int | None, limits: Limits) -> Values:
    """A pod's comparable values keyed by (owner, field); a rejected pod has only its admission and class."""
    errors = "; ".join(p.errors)
    values: Values = {
        (POD, ADMISSION): Expected("admitted" if p.admitted else "rejected", ADMITTED_RULE if p.admitted else errors),
        (POD, "qosClass"): Expected(p.qos_class.value, QOS_RULE),
        (POD, "warnings"): Expected(_listed(p.warnings), "API server warnings (validation.pod_warnings)"),
    }
    if not p.admitted:
        return values
    values[POD, "events"] = Expected(_listed(tuple(f"{e.type} {e.reason}" for e in p.events)),
                                     _listed(tuple(e.message for e in p.events)))
    if rank is not None:
        values[POD, "eviction rank"] = Expected(str(rank), EVICTION_RULE)
    if p.cgroup is not None:
        values.update(_files(POD, p.cgroup.path, p.cgroup.files, limits))
    for c in p.containers:
        kind = "sidecar" if c.sidecar else "init container" if c.init else "container"
        values.update(_container(f"{kind} {c.name}", c, limits))
    if p.pause is not None:
        values.update(_container(PAUSE, p.pause, limits))
    return values


def eviction_ranks(result: NodeExpectation) -> dict[str, int]:
    """1-based rank of each admitted pod under memory pressure (EVICTION_RULE), by namespace/name."""
    usages = []
    for p in result.pods:
        if not p.admitted:
            continue
        limit = p.cgroup.files.get("memory.max") if p.cgroup is not None else None
        usage = int(limit.value) if limit is not None and limit.value.isdigit() else result.node.allocatable_memory
        usages.append(PodMemoryUsage(p.pod, {"": usage}))
    return {u.pod.ref: i for i, u in enumerate(rank_for_memory_pressure(usages), start=1)}


def _node_values(result: NodeExpectation) -> Values:
    n = result.node
    summary = {
        "memoryCapacity": n.memory_capacity, "swapCapacity": n.swap_capacity, "cpuCapacityMilli": n.cpu_capacity_milli,
        "allocatableMemory": n.allocatable_memory, "allocatableCpuMilli": n.allocatable_cpu_milli,
        "swapBehavior": n.swap_behavior, "kubernetesVersion": n.kubernetes_version,
        "cpuWeightFormula": n.cpu_weight_formula, "pageSize": n.page_size, "swapController": n.swap_controller,
        "warnings": _listed(result.warnings),
    }
    values = {(NODE, name): Expected(str(value), NODE_RULES[name]) for name, value in summary.items()}
    values.update({(NODE, f"featureGate {gate}"): Expected("on" if on else "off", GATE_RULE)
                   for gate, on in n.feature_gates.items()})
    values.update({(NODE, name): Expected(f"{total} (allocatable {free})", "huge page pools (--hugepages)")
                   for name, (total, free) in n.hugepages.items()})
    for path, cg in result.cgroups.items():
        values.update({(path, name): e for name, e in cg.files.items()})
    owned = {path for p in result.pods for path in _pod_paths(p)}
    for path, files in result.node_limits.items():
        if path not in owned:  # a pod's or container's limits are listed with that pod
            values.update({(path, name): e for name, e in files.items()})
    values.update({(METRICS, name): Expected(str(value), METRIC_RULES.get(name, "the kubelet's /metrics"))
                   for name, value in result.metrics.items()})
    return values


def _compare(pod: str, before: Mapping[tuple[str, str], Expected], after: Mapping[tuple[str, str], Expected],
             workload: str = "") -> list[Change]:
    changes = []
    for key in [*before, *(k for k in after if k not in before)]:
        old, new = before.get(key), after.get(key)
        old_value, new_value = (old.value if old else ABSENT), (new.value if new else ABSENT)
        if old_value != new_value:
            owner, name = key
            changes.append(Change(pod, owner, name, old_value, new_value, old.rule if old else "",
                                  new.rule if new else "", workload))
    return changes


def expectation_changes(before: NodeExpectation, after: NodeExpectation) -> list[Change]:
    """Every value that differs between two expectations of the same pods: node level first, then pod by pod in
    the order given; a pod admitted on one side only shows its admission and class, not the files it lacks."""
    changes = _compare("", _node_values(before), _node_values(after))
    ranks_before, ranks_after = eviction_ranks(before), eviction_ranks(after)
    after_pods = {p.pod.ref: p for p in after.pods}
    for old in before.pods:
        new = after_pods[old.pod.ref]
        old_values = _pod_values(old, ranks_before.get(old.pod.ref), before.node_limits)
        new_values = _pod_values(new, ranks_after.get(old.pod.ref), after.node_limits)
        if old.admitted != new.admitted:
            old_values = {k: v for k, v in old_values.items() if k[1] in (ADMISSION, "qosClass")}
            new_values = {k: v for k, v in new_values.items() if k[1] in (ADMISSION, "qosClass")}
        workload = old.pod.workload.ref if old.pod.workload is not None else ""
        changes += _compare(old.pod.ref, old_values, new_values, workload)
    return changes


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def summary_line(pods: int, changes: list[Change]) -> str:
    """`3 pods: 2 change swap, 1 is no longer admitted; node level: 4 values`, or `no difference`."""
    if not changes:
        return "no difference"
    topics: dict[str, set[str]] = {}
    admission: Counter[str] = Counter()
    for change in changes:
        if not change.pod:
            continue
        if change.field == ADMISSION:
            admission["no longer admitted" if change.after == "rejected" else "newly admitted"] += 1
        else:
            topics.setdefault(change.topic, set()).add(change.pod)
    changed_pods = {change.pod for change in changes if change.pod}
    parts = [f"{len(members)} change{'s' if len(members) == 1 else ''} {topic}"
             for topic, members in sorted(topics.items(), key=lambda item: (-len(item[1]), item[0]))]
    parts += [f"{count} {'is' if count == 1 else 'are'} {what}" for what, count in sorted(admission.items())]
    if len(changed_pods) < pods:
        parts.append(f"{pods - len(changed_pods)} unchanged")
    line = f"{_plural(pods, 'pod', 'pods')}: {', '.join(parts)}"
    node_level = sum(1 for change in changes if not change.pod)
    return line + (f"; node level: {_plural(node_level, 'value', 'values')}" if node_level else "")
