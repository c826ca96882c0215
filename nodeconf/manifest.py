"""Typed views of Pods, LimitRanges and ResourceQuotas (core/v1 types); manifest_reader builds them from dicts."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Union

from nodeconf.quantity import Quantity

ResourceList = Mapping[str, Quantity]

CPU = "cpu"
MEMORY = "memory"
SWAP = "swap"

# Built-in PriorityClasses (pkg/apis/scheduling/types.go: SystemCriticalPriority and friends).
SYSTEM_CLUSTER_CRITICAL = "system-cluster-critical"
SYSTEM_NODE_CRITICAL = "system-node-critical"
BUILTIN_PRIORITY_CLASSES = {SYSTEM_CLUSTER_CRITICAL: 2_000_000_000, SYSTEM_NODE_CRITICAL: 2_000_001_000}
# Annotations that mark static and mirror pods (pkg/kubelet/types/pod_update.go).
CONFIG_SOURCE_ANNOTATION = "kubernetes.io/config.source"
CONFIG_MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
_UID_NAMESPACE = uuid.UUID("6f1c3a52-7d7e-4c1e-9a55-2f0d1f6a9e10")


@dataclass(frozen=True)
class Resources:
    """`requests` and `limits` of a container or of a pod (`spec.resources`)."""

    requests: ResourceList = field(default_factory=dict)
    limits: ResourceList = field(default_factory=dict)

    def request(self, name: str) -> Quantity | None:
        return self.requests.get(name)

    def limit(self, name: str) -> Quantity | None:
        return self.limits.get(name)

    def is_empty(self) -> bool:
        return not self.requests and not self.limits


@dataclass(frozen=True)
class Container:
    """A container or init container; `restart_policy == "Always"` on an init container makes a sidecar."""

    name: str
    image: str = ""
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    resources: Resources = field(default_factory=Resources)
    restart_policy: str | None = None
    resize_policy: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_sidecar(self) -> bool:
        return self.restart_policy == "Always"

    def resize_restart_policy(self, resource: str) -> str:
        """`NotRequired` unless the container's resizePolicy says otherwise (core/v1 defaults)."""
        return self.resize_policy.get(resource, "NotRequired")


@dataclass(frozen=True)
class Workload:
    """A workload object given for its pod template: its kind, its name and how many of its pods one node runs."""

    kind: str
    name: str
    pods: int
    counted: str  # how `pods` was counted, for the reader

    @property
    def ref(self) -> str:
        return f"{self.kind}/{self.name}"


@dataclass(frozen=True)
class Pod:
    """The fields of a Pod that decide its node resources."""

    name: str
    namespace: str = "default"
    uid: str = ""
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    resources: Resources | None = None
    overhead: ResourceList = field(default_factory=dict)
    priority_value: int | None = None
    priority_class_name: str = ""
    annotations: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    restart_policy: str = "Always"
    # spec.activeDeadlineSeconds: set (≥ 0) makes the pod Terminating for quota scopes (quota pods.go isTerminating).
    active_deadline_seconds: int | None = None
    source: str = ""
    # The workload whose pod template this is (None for a Pod): how many of it run on the node. Provenance only:
    # not compared, and not written back by manifest_writer.
    workload: Workload | None = field(default=None, compare=False)
    # Values derived from this immutable pod, memoised by the oracle (pod_resources.memoised); never copied.
    derived: dict[Any, Any] = field(default_factory=dict, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.uid:
            object.__setattr__(self, "uid", str(uuid.uuid5(_UID_NAMESPACE, f"{self.namespace}/{self.name}")))

    @property
    def priority(self) -> int:
        """`spec.priority`, else the built-in class's value, else 0 (priority admission plugin)."""
        if self.priority_value is not None:
            return self.priority_value
        return BUILTIN_PRIORITY_CLASSES.get(self.priority_class_name, 0)

    @property
    def is_static(self) -> bool:
        return self.annotations.get(CONFIG_SOURCE_ANNOTATION, "api") != "api"

    @property
    def is_mirror(self) -> bool:
        return CONFIG_MIRROR_ANNOTATION in self.annotations

    @property
    def sidecars(self) -> tuple[Container, ...]:
        return tuple(c for c in self.init_containers if c.is_sidecar)

    @property
    def all_containers(self) -> tuple[Container, ...]:
        return self.init_containers + self.containers

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    def without_priority(self) -> Pod:
        """The pod as if it named no priority: priority 0, never critical."""
        return replace(self, priority_value=None, priority_class_name="")

    def with_containers(self, containers: Sequence[Container], init: Sequence[Container]) -> Pod:
        return replace(self, containers=tuple(containers), init_containers=tuple(init))


def replica_pods(pod: Pod) -> tuple[Pod, ...]:
    """The pods a workload runs on one node, each named after it; a Pod is itself.

    One pod keeps the workload's name; several are `NAME-0`, `NAME-1`, … (a StatefulSet's own names, apps/v1
    "Pod Identity"; the other controllers' random suffixes would change every run), each with its own uid.
    """
    if pod.workload is None:
        return (pod,)
    if pod.workload.pods == 1 and pod.workload.kind != "StatefulSet":
        return (pod,)
    return tuple(replace(pod, name=f"{pod.name}-{i}", uid="") for i in range(pod.workload.pods))


@dataclass(frozen=True)
class LimitRangeItem:
    """One `spec.limits[]` entry of a LimitRange."""

    type: str
    default: ResourceList = field(default_factory=dict)
    default_request: ResourceList = field(default_factory=dict)
    min: ResourceList = field(default_factory=dict)
    max: ResourceList = field(default_factory=dict)
    max_limit_request_ratio: ResourceList = field(default_factory=dict)


@dataclass(frozen=True)
class LimitRange:
    name: str
    namespace: str = "default"
    limits: tuple[LimitRangeItem, ...] = ()


@dataclass(frozen=True)
class ResourceQuota:
    name: str
    namespace: str = "default"
    hard: ResourceList = field(default_factory=dict)
    scopes: tuple[str, ...] = ()


NamespaceObject = Union[LimitRange, ResourceQuota]  # evaluated at import: no `|` before Python 3.10
