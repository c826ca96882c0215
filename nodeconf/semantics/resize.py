"""In-place resize decisions: API refusals, Infeasible, Deferred, InProgress or Applied (seed requests-limits-qos
"Changing resources on the fly", KEP-5359 "In-Place Pod Resize")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import CPU, MEMORY, Container, Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.quantity import Quantity
from nodeconf.semantics import cpu, cpu_manager, memory, memory_qos, swap
from nodeconf.semantics.allocatable import allocatable_cpu_milli, allocatable_memory
from nodeconf.semantics.expectation import Expected
from nodeconf.semantics.pod_resources import milli, pod_requests, whole
from nodeconf.semantics.profile import Profile
from nodeconf.semantics.qos import pod_qos
from nodeconf.semantics.validation import pod_errors
from nodeconf.str_enum import StrEnum

QOS_CHANGE_MESSAGE = "Pod QOS Class may not change as a result of resizing"
SWAP_RESIZE_MESSAGE = "In-place resize of containers with swap is not supported."
STATIC_RESIZE_MESSAGE = "In-place resize of static-pods is not supported"


class ResizeStatus(StrEnum):
    """Outcome of a resize request (core/v1 PodResizePending reasons and PodResizeInProgress)."""

    REJECTED = "Rejected"  # the API server refuses the patch; the pod keeps its resources
    INFEASIBLE = "Infeasible"  # PodResizePending, reason Infeasible: never possible on this node
    DEFERRED = "Deferred"  # PodResizePending, reason Deferred: no room now, retried
    IN_PROGRESS = "InProgress"  # PodResizeInProgress: accepted, actuation waits for usage to drop
    APPLIED = "Applied"


@dataclass(frozen=True)
class ContainerUsage:
    """What a container uses now, in bytes (memory.current, memory.swap.current); None when unreadable."""

    memory: int | None = None
    swap: int | None = None


@dataclass(frozen=True)
class ResizeDecision:
    """What to do with a resize now; `files` are the desired containers' files to write once applied."""

    status: ResizeStatus
    message: str
    files: Mapping[str, Mapping[str, Expected]] = field(default_factory=dict)


def _limit_bytes(value: str) -> float:
    """A read-back memory file value as a number ("max" is unbounded)."""
    return float("inf") if value == memory.UNLIMITED else int(value)


def _memory_request(container: Container) -> int:
    return memory_qos.memory_request_and_limit(container)[0]


def _rejected(current: Pod, desired: Pod, node: NodeFacts, config: KubeletConfig, profile: Profile) -> str | None:
    """API server refusals: the resized pod must be valid (e.g. requests ≤ limits), the QoS class is immutable
    (validation), requests above allocatable (1.36 admission).

    Source: pkg/apis/core/validation ValidatePodResize (the new pod's spec is validated before the resize rules);
    seed requests-limits-qos hands-on for the QoS and allocatable messages verbatim; kubectl prints several field
    errors as a bracketed list.
    """
    invalid = pod_errors(desired, profile)
    if invalid:
        detail = invalid[0] if len(invalid) == 1 else f"[{', '.join(invalid)}]"
        return f'The Pod "{current.name}" is invalid: {detail}'
    before, after = pod_qos(current, profile), pod_qos(desired, profile)
    if before is not after:
        return f'The Pod "{current.name}" is invalid: spec: Invalid value: "{before.value}": {QOS_CHANGE_MESSAGE}'
    if not profile.at_least("1.36"):
        return None
    over = _over_allocatable(desired, node, config, profile)
    if over is None:
        return None
    name, requested, allocatable = over
    return (f'pods "{current.name}" is forbidden: node didn\'t have enough allocatable resources: {name}, '
            f"requested: {requested}, allocatable: {allocatable}")


def _over_allocatable(pod: Pod, node: NodeFacts, config: KubeletConfig,
                      profile: Profile) -> tuple[str, int, int] | None:
    """The first resource whose pod request exceeds node allocatable (cpu in millicores, memory in bytes)."""
    requests = pod_requests(pod, profile)
    for name, requested, allocatable in (
        (CPU, milli(requests.get(CPU, Fraction(0))), allocatable_cpu_milli(node, config)),
        (MEMORY, whole(requests.get(MEMORY, Fraction(0))), allocatable_memory(node, config)),
    ):
        if requested > allocatable:
            return name, requested, allocatable
    return None


def _infeasible(current: Pod, desired: Pod, node: NodeFacts, config: KubeletConfig, profile: Profile) -> str | None:
    """Kubelet Infeasible: beyond capacity before 1.36 (the API catches it later), or a LimitedSwap container's
    memory request resized without RestartContainer (kubelet canResizePod / disallowResizeForSwappableContainers).
    A static pod (config source other than the API) is refused first, whatever it asks for (pkg/kubelet/allocation
    manager test "static pod, expect Infeasible"; kuberuntime IsInPlacePodVerticalScalingAllowed); then a Guaranteed
    pod's cpu under the static CPU manager without InPlacePodVerticalScalingExclusiveCPUs (cpu_manager).
    """
    if current.is_static:
        return STATIC_RESIZE_MESSAGE
    static_policy = cpu_manager.resize_infeasible(current, desired, config, profile)
    if static_policy is not None:
        return static_policy
    over = _over_allocatable(desired, node, config, profile)
    if over is not None:
        name, requested, allocatable = over
        return f"Node didn't have enough capacity: {name}, requested: {requested}, capacity: {allocatable}"
    qos = pod_qos(desired, profile)
    old = {c.name: c for c in current.all_containers}
    for c in desired.all_containers:
        before = old.get(c.name)
        if before is None or _memory_request(before) == _memory_request(c):
            continue
        if c.resize_restart_policy(MEMORY) == "RestartContainer":
            continue
        if swap.swaps_by_calculation(desired, c, qos, config, profile):
            return SWAP_RESIZE_MESSAGE
    return None


def _deferred(desired: Pod, others: Sequence[Pod], node: NodeFacts, config: KubeletConfig,
              profile: Profile) -> str | None:
    """Deferred while the other pods' requests leave no room (kubelet handlePodResourcesResize → canAdmitPod)."""
    requests = pod_requests(desired, profile)
    for name, allocatable, amount in (
        (CPU, allocatable_cpu_milli(node, config), milli),
        (MEMORY, allocatable_memory(node, config), whole),
    ):
        requested = amount(requests.get(name, Fraction(0)))
        used = sum(amount(pod_requests(p, profile).get(name, Fraction(0))) for p in others)
        if requested + used > allocatable:
            return (f"Node didn't have enough resource: {name}, requested: {requested}, used: {used}, "
                    f"capacity: {allocatable}")
    return None


def _files(pod: Pod, node: NodeFacts, config: KubeletConfig, profile: Profile) -> dict[str, dict[str, Expected]]:
    """The resized containers' cpu, memory, swap and Memory QoS files (as nodeconf.semantics.expect builds them)."""
    qos = pod_qos(pod, profile)
    return {
        c.name: {
            **cpu.container_files(pod, c, node, config, profile),
            **memory.container_files(pod, c, node, config, profile),
            "memory.swap.max": swap.container_swap_max(pod, c, qos, node, config, profile),
            **memory_qos.container_files(pod, c, qos, node, config, profile),
        }
        for c in pod.all_containers
    }


def _pod_limits(pod: Pod, node: NodeFacts, config: KubeletConfig, profile: Profile) -> dict[str, str]:
    """The pod cgroup's memory.max and memory.swap.max as read back."""
    qos = pod_qos(pod, profile)
    return {"memory.max": memory.pod_files(pod, qos, node, profile)["memory.max"].value,
            "memory.swap.max": swap.pod_swap_max(pod, qos, node, config, profile).value}


def _decrease_waits(file: str, before: str, after: str, used: int | None, where: str) -> str | None:
    """A lower limit waits while usage (unreadable counts as 0) is at or above it."""
    new = _limit_bytes(after)
    if new < _limit_bytes(before) and (used or 0) >= new:
        return f"{where}: {file} decrease to {after} waits until usage ({used}) drops below it"
    return None


def _waiting(current: Pod, desired: Pod, usage: Mapping[str, ContainerUsage], node: NodeFacts, config: KubeletConfig,
             profile: Profile) -> str | None:
    """A memory.max or memory.swap.max decrease, container or pod level, waits while usage is at or above it.

    Source: seed requests-limits-qos ("defers it if current usage is above the new limit"); KEP-5359 "In-Place
    Pod Resize" (memory.swap.current < new limit before a decrease).
    """
    before, after = _files(current, node, config, profile), _files(desired, node, config, profile)
    for name, files in after.items():
        if name not in before or name not in usage:
            continue
        for file, used in (("memory.max", usage[name].memory), ("memory.swap.max", usage[name].swap)):
            waits = _decrease_waits(file, before[name][file].value, files[file].value, used, f"container {name!r}")
            if waits is not None:
                return waits
    pod_before, pod_after = _pod_limits(current, node, config, profile), _pod_limits(desired, node, config, profile)
    totals = {"memory.max": sum(u.memory or 0 for u in usage.values()),
              "memory.swap.max": sum(u.swap or 0 for u in usage.values())}
    for file, used_total in totals.items():
        waits = _decrease_waits(file, pod_before[file], pod_after[file], used_total, f"pod {desired.ref}")
        if waits is not None:
            return waits
    return None


def decide_resize(current: Pod, desired: Pod, usage: Mapping[str, ContainerUsage], node: NodeFacts,
                  config: KubeletConfig, profile: Profile, others: Sequence[Pod] = ()) -> ResizeDecision:
    """The decision for resizing `current` (as running) to `desired`, given usage and the node's other pods."""
    rejected = _rejected(current, desired, node, config, profile)
    if rejected is not None:
        return ResizeDecision(ResizeStatus.REJECTED, rejected)
    infeasible = _infeasible(current, desired, node, config, profile)
    if infeasible is not None:
        return ResizeDecision(ResizeStatus.INFEASIBLE, infeasible)
    deferred = _deferred(desired, others, node, config, profile)
    if deferred is not None:
        return ResizeDecision(ResizeStatus.DEFERRED, deferred)
    waiting = _waiting(current, desired, usage, node, config, profile)
    if waiting is not None:
        return ResizeDecision(ResizeStatus.IN_PROGRESS, waiting)
    return ResizeDecision(ResizeStatus.APPLIED, "", _files(desired, node, config, profile))


# kubelet pkg/kubelet/kubelet_pods.go convertToAPIContainerStatuses (read at kubernetes@001a80e975): with
# InPlacePodVerticalScaling (beta and on in 1.34, GA and locked on from 1.35) a container's status.allocatedResources
# is its allocated spec's requests, and its status.resources start from the allocated requests and limits, the cpu
# and memory values replaced by those the runtime reports it runs with, equal to them once the allocation is
# actuated. Neither reads InPlacePodVerticalScalingAllocatedStatus: the kubelet reports the field whatever that gate
# says (the gate's documentation: "Enables the allocatedResources field in the container status").
STATUS_RESOURCES_RULE = "kubelet kubelet_pods.go convertToAPIContainerStatuses (status.resources, allocatedResources)"


def status_resources(container: Container) -> dict[str, dict[str, str]]:
    """A container's status.resources once its allocation is actuated: its requests and limits, as allocated."""
    own = container.resources
    return {k: {name: str(q) for name, q in v.items()}
            for k, v in (("requests", own.requests), ("limits", own.limits)) if v}


def allocated_resources(container: Container) -> dict[str, str]:
    """A container's status.allocatedResources: the requests of its allocated spec."""
    return {name: str(q) for name, q in container.resources.requests.items()}


# kubelet_pods.go convertStatusToAPIStatus (same commit): with InPlacePodLevelResourcesVerticalScaling the pod's
# status.allocatedResources is resourcehelper.PodRequests of the allocated pod: the pod-level requests where set,
# else the containers' aggregate (pod_resources.pod_requests).
POD_ALLOCATED_RULE = "kubelet kubelet_pods.go convertStatusToAPIStatus (pod status.allocatedResources = PodRequests)"


def pod_allocated_resources(pod: Pod, profile: Profile) -> dict[str, str]:
    """The pod's status.allocatedResources (cpu and memory) for its allocated spec."""
    requests = pod_requests(pod, profile)
    return {name: str(Quantity.of(requests[name])) for name in (CPU, MEMORY) if name in requests}
