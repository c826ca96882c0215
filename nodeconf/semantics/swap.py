"""Swap: KEP-2400 NoSwap/LimitedSwap and KEP-5359 WorkloadControlledSwap with `limits.swap`, as memory.swap.max."""

from __future__ import annotations

from collections.abc import Sequence

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import SWAP, Container, Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.quantity import Quantity
from nodeconf.semantics.expectation import Event, Expected, QosClass
from nodeconf.semantics.memory import read_back
from nodeconf.semantics.memory_qos import memory_request_and_limit
from nodeconf.semantics.oom import is_critical
from nodeconf.semantics.profile import Profile

NO_SWAP = "NoSwap"
LIMITED_SWAP = "LimitedSwap"
WORKLOAD_CONTROLLED_SWAP = "WorkloadControlledSwap"
WORKLOAD_SWAP_GATE = "WorkloadControlledSwap"
REQUESTS_SWAP_MESSAGE = "swap may only be specified in limits, not requests"
SWAP_NOT_SUPPORTED = "SwapNotSupported"


def workload_swap_enabled(profile: Profile) -> bool:
    """KEP-5359 "Feature Enablement": the WorkloadControlledSwap gate makes the kubelet honour limits.swap."""
    return profile.gate(WORKLOAD_SWAP_GATE)


def node_swap_mode(config: KubeletConfig, profile: Profile) -> str:
    """The mode the kubelet runs: WorkloadControlledSwap needs its gate, else the default branch is NoSwap.

    Source: kuberuntime_container_linux.go configureContainerSwapResources (unknown behaviour → ConfigureNoSwap).
    """
    if config.swap_behavior == WORKLOAD_CONTROLLED_SWAP and not workload_swap_enabled(profile):
        return NO_SWAP
    return config.swap_behavior or NO_SWAP


def limited_swap_exclusion(pod: Pod, container: Container, qos: QosClass) -> str | None:
    """Why LimitedSwap gives this container no swap, or None when the calculation applies.

    Source: kuberuntime_container_linux.go GetContainerSwapBehavior (KEP-2400 "Burstable QoS Pods" only).
    """
    if is_critical(pod):
        return "critical pod (static, mirror or priority >= 2000000000) gets no swap (IsCriticalPod)"
    if qos is not QosClass.BURSTABLE:
        return f"only Burstable pods swap, this pod is {qos.value} (GetContainerSwapBehavior)"
    request, limit = memory_request_and_limit(container)
    if request == 0 and limit == 0:
        return "container has no memory request or limit (GetContainerSwapBehavior)"
    if request == limit:
        return "memory request equals limit (GetContainerSwapBehavior)"
    return None


def limited_swap_bytes(pod: Pod, container: Container, qos: QosClass, node: NodeFacts) -> tuple[int, str]:
    """The LimitedSwap share of a container in bytes, with the rule that decided it.

    Source: kuberuntime_container_linux.go GetContainerSwapBehavior + calcSwapForBurstablePods (KEP-2400).
    """
    excluded = limited_swap_exclusion(pod, container, qos)
    if excluded is not None:
        return 0, f"LimitedSwap: {excluded}"
    request, _ = memory_request_and_limit(container)
    if node.memory_capacity <= 0 or request > node.memory_capacity:
        return 0, "LimitedSwap: memory request above node capacity, swap disallowed (calcSwapForBurstablePods)"
    share = int(float(request) / float(node.memory_capacity) * float(node.swap_capacity))
    return share, (
        "LimitedSwap: int(request/memoryCapacity*swapCapacity), total swap not reduced by reserves "
        "(calcSwapForBurstablePods)"
    )


def pod_swap_limit(pod: Pod) -> Quantity | None:
    """`spec.resources.limits.swap` (KEP-5359 PodSwapLimit), or None."""
    return pod.resources.limit(SWAP) if pod.resources is not None else None


def container_swap_limit(container: Container) -> Quantity | None:
    """`resources.limits.swap` of one container, or None."""
    return container.resources.limit(SWAP)


def container_swap_max(
    pod: Pod, container: Container, qos: QosClass, node: NodeFacts, config: KubeletConfig, profile: Profile
) -> Expected:
    """The container cgroup's memory.swap.max as read back (KEP-5359 "Swap limit semantics" table)."""
    page = node.page_size
    if not node.has_swap_controller:
        return Expected("max", "no swap controller: the kubelet writes no swap setting (swapControllerAvailable)")
    mode = node_swap_mode(config, profile)
    explicit = workload_swap_enabled(profile)
    own = container_swap_limit(container) if explicit else None
    shared = pod_swap_limit(pod) if explicit else None
    if mode == NO_SWAP:
        suffix = " (limits.swap has no effect, KEP-5359 table)" if own is not None or shared is not None else ""
        return Expected("0", f"NoSwap: the kubelet writes memory.swap.max 0 on cgroup v2 (ConfigureNoSwap){suffix}")
    if own is not None:
        return Expected(
            read_back(own.value(), page),
            f"{mode}: the container's limits.swap wins (KEP-5359 \"workload swap wins\"), page-floored",
        )
    if shared is not None:
        return Expected(
            read_back(shared.value(), page),
            f"{mode}: no container limits.swap, inherits the pod's limits.swap as its ceiling "
            "(KEP-5359 PodSwapLimit), page-floored",
        )
    if mode == LIMITED_SWAP:
        share, rule = limited_swap_bytes(pod, container, qos, node)
        return Expected(read_back(share, page), f"{rule}, page-floored")
    return Expected("0", "WorkloadControlledSwap: no limits.swap means no swap (KEP-5359 table, default 0)")


def pod_swap_max(pod: Pod, qos: QosClass, node: NodeFacts, config: KubeletConfig, profile: Profile) -> Expected:
    """The pod cgroup's memory.swap.max: the pod's limits.swap where honoured, else never written ("max").

    Source: KEP-5359 "Explicit Pod-Level Swap Configuration"; KEP-2400 configures container cgroups only.
    """
    shared = pod_swap_limit(pod) if workload_swap_enabled(profile) else None
    if not node.has_swap_controller:
        return Expected("max", "no swap controller: the kubelet writes no swap setting (swapControllerAvailable)")
    if shared is not None and node_swap_mode(config, profile) != NO_SWAP:
        return Expected(
            read_back(shared.value(), node.page_size),
            "pod limits.swap sets the pod cgroup's memory.swap.max (KEP-5359 PodSwapLimit), page-floored",
        )
    return Expected("max", "the kubelet writes no pod-level swap limit without pod limits.swap (KEP-2400/5359)")


def _resource_sections(pod: Pod) -> list[tuple[str, Container | None]]:
    """Field paths of every resources block: pod level, init containers, containers (core/v1 field names)."""
    sections: list[tuple[str, Container | None]] = [("spec.resources", None)]
    sections += [(f"spec.initContainers[{i}].resources", c) for i, c in enumerate(pod.init_containers)]
    sections += [(f"spec.containers[{i}].resources", c) for i, c in enumerate(pod.containers)]
    return sections


def swap_errors(pod: Pod, profile: Profile) -> tuple[str, ...]:
    """API validation of swap fields: any swap before the gate exists; under the gate requests.swap at any level
    and a container limit above the pod's.

    Source: KEP-5359 "Proposed Design: Limits-Only Model" (messages follow apimachinery field.Error shapes);
    negative values are refused for every resource by validation.pod_errors.
    """
    if WORKLOAD_SWAP_GATE not in profile.gates:
        return _swap_before_its_gate(pod)
    if not workload_swap_enabled(profile):
        return ()
    errors: list[str] = []
    shared = pod_swap_limit(pod)
    for path, container in _resource_sections(pod):
        resources = pod.resources if container is None else container.resources
        if resources is None:
            continue
        if SWAP in resources.requests:
            errors.append(f"{path}.requests[swap]: Forbidden: {REQUESTS_SWAP_MESSAGE}")
        limit = resources.limit(SWAP)
        if limit is not None and container is not None and shared is not None and limit > shared:
            errors.append(
                f'{path}.limits[swap]: Invalid value: "{limit}": must be less than or equal to pod limits '
                f"({shared})"
            )
    return tuple(errors)


def _swap_before_its_gate(pod: Pod) -> tuple[str, ...]:
    """Before the gate exists (KEP-5359 milestones: alpha in v1.38), `swap` is no resource a pod may name: the API
    server refuses it in requests and limits, as a container resource (validation.go
    validateContainerResourceName, IsStandardContainerResourceName) and at pod level (validatePodResourceName)."""
    errors: list[str] = []
    for path, container in _resource_sections(pod):
        resources = pod.resources if container is None else container.resources
        if resources is None:
            continue
        for kind in (name for name, items in (("limits", resources.limits), ("requests", resources.requests))
                     if SWAP in items):
            where = f"{path}.{kind}[swap]"
            errors.append(f'{where}: Unsupported value: "swap": supported values: "cpu", "memory"' if container is None
                          else f'{where}: Invalid value: "swap": must be a standard resource for containers')
    return tuple(errors)


def _declares_positive_swap(pod: Pod) -> bool:
    limits = [pod_swap_limit(pod), *(container_swap_limit(c) for c in pod.all_containers)]
    return any(q is not None and q.amount > 0 for q in limits)


def swap_events(pod: Pod, config: KubeletConfig, profile: Profile) -> tuple[Event, ...]:
    """SwapNotSupported Warning for a pod with a positive limits.swap on a NoSwap node; the pod still runs.

    Source: KEP-5359 "Troubleshooting"/"Monitoring" (Event Reason SwapNotSupported); a limit of 0 already holds.
    """
    if not workload_swap_enabled(profile) or node_swap_mode(config, profile) != NO_SWAP:
        return ()
    if not _declares_positive_swap(pod):
        return ()
    return (
        Event(
            "Warning",
            SWAP_NOT_SUPPORTED,
            f"Pod {pod.ref} sets resources.limits.swap but swap is not enabled on this node "
            "(swapBehavior NoSwap); the swap limit has no effect",
        ),
    )


def pod_allocated_swap(pod: Pod) -> int:
    """A pod's share of kubelet_node_swap_allocated_bytes: its pod-level limit once, else its containers' limits.

    Decision (KEP-5359 "sum of all resources.limits.swap"): a pod-level limit caps the whole pod and every
    container limit nests inside it, so the pod counts with its own limit and its containers are not added.
    """
    shared = pod_swap_limit(pod)
    if shared is not None:
        return max(shared.value(), 0)
    return sum(max(q.value(), 0) for c in pod.all_containers if (q := container_swap_limit(c)) is not None)


def swap_allocated_bytes(pods: Sequence[Pod], config: KubeletConfig, profile: Profile) -> int:
    """kubelet_node_swap_allocated_bytes over the admitted pods; 0 where limits.swap has no effect.

    Source: KEP-5359 "Risks and Mitigations" (the metric); ignored without the gate or on NoSwap nodes.
    """
    if not workload_swap_enabled(profile) or node_swap_mode(config, profile) == NO_SWAP:
        return 0
    return sum(pod_allocated_swap(p) for p in pods)


def swaps_by_calculation(
    pod: Pod, container: Container, qos: QosClass, config: KubeletConfig, profile: Profile
) -> bool:
    """True when the container's swap comes from the LimitedSwap calculation, not from limits.swap.

    Source: GetContainerSwapBehavior returns LimitedSwap for it (kubelet resize refuses such memory resizes).
    """
    if node_swap_mode(config, profile) != LIMITED_SWAP:
        return False
    if workload_swap_enabled(profile) and (
        container_swap_limit(container) is not None or pod_swap_limit(pod) is not None
    ):
        return False
    return limited_swap_exclusion(pod, container, qos) is None
