"""What the oracle promises: expected file values with their rule, per cgroup, container, pod and node."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from nodeconf.manifest import Pod
from nodeconf.str_enum import StrEnum


class QosClass(StrEnum):
    """Pod QoS classes (pkg/apis/core/types.go PodQOSClass)."""

    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BEST_EFFORT = "BestEffort"


@dataclass(frozen=True)
class Expected:
    """A value as the kernel reads it back, the rule that gives it, and documented accepted deviations.

    `accepted` maps another acceptable read-back value to the upstream issue that explains it
    (SEMANTICS.md precedence rule 3); it is never used to loosen a check.
    """

    value: str
    rule: str
    accepted: Mapping[str, str] = field(default_factory=dict)

    def accepts(self, actual: str) -> bool:
        return actual == self.value or actual in self.accepted


@dataclass(frozen=True)
class CgroupExpectation:
    """Expected files of one cgroup, its path relative to the cgroup root."""

    path: str
    files: Mapping[str, Expected]


@dataclass(frozen=True)
class Event:
    """A Kubernetes event the node should emit for a pod."""

    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class ContainerExpectation:
    name: str
    cgroup: CgroupExpectation
    oom_score_adj: Expected
    init: bool = False
    sidecar: bool = False


@dataclass(frozen=True)
class PodExpectation:
    """Everything expected of one pod; a rejected pod has `admitted=False`, its `errors`, and no cgroups."""

    pod: Pod
    qos_class: QosClass
    admitted: bool
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    events: tuple[Event, ...] = ()
    cgroup: CgroupExpectation | None = None
    containers: tuple[ContainerExpectation, ...] = ()
    pause: ContainerExpectation | None = None

    def container(self, name: str) -> ContainerExpectation:
        for c in self.containers:
            if c.name == name:
                return c
        raise KeyError(f"pod {self.pod.ref} has no container {name!r}")


@dataclass(frozen=True)
class NodeSummary:
    """The node as the oracle saw it (the `node` object of `nodeconf explain`)."""

    memory_capacity: int
    swap_capacity: int
    cpu_capacity_milli: int
    allocatable_memory: int
    allocatable_cpu_milli: int
    swap_behavior: str
    kubernetes_version: str
    cpu_weight_formula: str
    page_size: int
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    swap_controller: bool = True
    # `hugepages-<size>` → (capacity, allocatable) in bytes, every size the node offers.
    hugepages: Mapping[str, tuple[int, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeExpectation:
    """The whole expected node: summary, node-level cgroups (kubepods, QoS slices), pods, metrics."""

    node: NodeSummary
    cgroups: Mapping[str, CgroupExpectation]
    pods: tuple[PodExpectation, ...]
    metrics: Mapping[str, int]
    warnings: tuple[str, ...] = ()
    # pids.max, hugetlb, memory.oom.group and reserve cgroups by cgroup path, kept apart from `cgroups`/`pods` so the
    # generic checks do not compare them; pod pids.max, pod/container and kubepods hugetlb, kubepods pids.max and the
    # reserve cgroups are enforced and checked by their own suites (semantics.node_limits).
    node_limits: Mapping[str, Mapping[str, Expected]] = field(default_factory=dict)
    # Under the static CPU manager: (pod uid, container name) → the container's exclusive CPUs (semantics.cpu_manager),
    # the state an agent keeps and hands back so a resize keeps the CPUs a container holds.
    cpu_assignments: Mapping[tuple[str, str], frozenset[int]] = field(default_factory=dict)

    def pod(self, name: str, namespace: str = "default") -> PodExpectation:
        for p in self.pods:
            if p.pod.name == name and p.pod.namespace == namespace:
                return p
        raise KeyError(f"no pod {namespace}/{name}")
