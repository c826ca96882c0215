"""Node allocatable: capacity − systemReserved − kubeReserved − evictionHard, memory also minus the huge page
capacity (seed requests-limits-qos; pkg/kubelet/nodestatus/setters.go MachineInfo)."""

from __future__ import annotations

import struct
from fractions import Fraction

from nodeconf.errors import InputError
from nodeconf.kubelet_config import DEFAULT_EVICTION_HARD, KubeletConfig, parse_cpuset
from nodeconf.manifest import CPU, MEMORY
from nodeconf.node_facts import NodeFacts
from nodeconf.quantity import Quantity, QuantityError
from nodeconf.semantics import hugepages

MEMORY_AVAILABLE = "memory.available"


# eviction/helpers.go parseThresholdStatement: these exact values make no threshold at all ("ignore 0% and 100%").
IGNORED_THRESHOLDS = ("0%", "100%")


def effective_eviction_hard(config: KubeletConfig) -> dict[str, str]:
    """evictionHard as the kubelet uses it: the defaults when unset; when set, only the listed thresholds
    (the others are zeroed) unless mergeDefaultEvictionSettings fills them in (seed "The system reserve";
    pkg/kubelet/apis/config/v1beta1/defaults.go, cmd/kubelet/app/server.go); a value of exactly `0%` or `100%`
    then sets no threshold (IGNORED_THRESHOLDS)."""
    if config.eviction_hard is None:
        given = dict(DEFAULT_EVICTION_HARD)
    elif config.merge_default_eviction_settings:
        given = {**DEFAULT_EVICTION_HARD, **config.eviction_hard}
    else:
        given = dict(config.eviction_hard)
    return {signal: text for signal, text in given.items() if text not in IGNORED_THRESHOLDS}


def _float32(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


def threshold_bytes(text: str, capacity: int, source: str = "", signal: str = MEMORY_AVAILABLE) -> int:
    """A threshold of `signal`: a quantity (`100Mi`) or a percentage of capacity (`5%`), in whole units (bytes,
    or tasks for pid.available); a percentage is a float32 and the product truncates (eviction/helpers.go
    parsePercentage, eviction/api types.go GetThresholdQuantity)."""
    raw = text.strip()
    try:
        if raw.endswith("%"):
            percent = float(raw[:-1])
            if not 0 <= percent <= 100:
                raise ValueError(raw)
            return int(float(capacity) * _float32(_float32(percent) / 100))
        return Quantity.parse(raw).value()
    except (ValueError, OverflowError, QuantityError):
        raise InputError(
            f"invalid threshold {text!r}", source=source, obj="KubeletConfiguration",
            field=f"evictionHard.{signal}",
        ) from None


def eviction_memory_bytes(config: KubeletConfig, capacity: int) -> int:
    """The hard `memory.available` threshold in bytes (0 when none applies); seed requests-limits-qos allocatable."""
    threshold = effective_eviction_hard(config).get(MEMORY_AVAILABLE)
    return threshold_bytes(threshold, capacity, config.source) if threshold is not None else 0


def reserved(config: KubeletConfig, resource: str) -> Fraction:
    """systemReserved + kubeReserved of one resource; for cpu, the number of reservedSystemCPUs where set, which
    replaces both (cmd/kubelet/app/server.go: "--reserved-cpus ... will overwrite the cpu setting in KubeReserved and
    SystemReserved": kubeReserved cpu dropped, systemReserved cpu = the set's size)."""
    if resource == CPU and config.reserved_system_cpus:
        return Fraction(len(parse_cpuset(config.reserved_system_cpus)))
    total = Fraction(0)
    for reserve in (config.system_reserved, config.kube_reserved):
        if resource in reserve:
            total += reserve[resource].amount
    return total


def reservation_error(node: NodeFacts, config: KubeletConfig) -> str | None:
    """Why the kubelet refuses to start with these reserves, or None: a reservation (systemReserved +
    kubeReserved, plus the hard memory.available threshold for memory) above capacity is an error at container
    manager start, never an allocatable of 0 (pkg/kubelet/cm/node_container_manager_linux.go
    validateNodeAllocatable, GetNodeAllocatableReservation; equal is allowed)."""
    memory = Quantity(reserved(config, MEMORY)).value() + eviction_memory_bytes(config, node.memory_capacity)
    cpu = Quantity(reserved(config, CPU)).milli_value()
    # Huge page reserves count against the huge page capacity of their size; the reservation is taken over the
    # capacity's names only, so a reserve of a size the kernel does not offer is ignored (same function).
    huge = [(name, Quantity(reserved(config, name)).value(), total, "")
            for name, total in sorted(hugepages.capacity(node).items())]
    problems = [
        f"{name} reservation {held}{unit} > capacity {capacity}{unit}"
        for name, held, capacity, unit in (
            (CPU, cpu, node.cpu_capacity_milli, "m"), (MEMORY, memory, node.memory_capacity, ""), *huge,
        )
        if held > capacity
    ]
    if not problems:
        return None
    # The kubelet's words, shortened to fit one line: "invalid Node Allocatable configuration. Resource X has a
    # reservation of R but capacity of C. Expected capacity >= reservation."
    return "the kubelet refuses to start (Node Allocatable: expected capacity >= reservation): " + "; ".join(problems)


def check_reservation(node: NodeFacts, config: KubeletConfig) -> None:
    """InputError (exit 2) naming the reserves when the kubelet would refuse to start (reservation_error)."""
    error = reservation_error(node, config)
    if error is not None:
        raise InputError(error, source=config.source, obj="KubeletConfiguration", field="systemReserved/kubeReserved")


def allocatable_memory(node: NodeFacts, config: KubeletConfig) -> int:
    """capacity − systemReserved − kubeReserved − evictionHard memory.available
    (pkg/kubelet/cm/node_container_manager_linux.go GetNodeAllocatableReservation), minus the capacity of every
    huge page size, floored at 0 (pkg/kubelet/nodestatus/setters.go MachineInfo: "for every huge page
    reservation, we need to remove it from allocatable memory"; MemTotal counts the huge page pool). Callers
    check_reservation first, so the part before the huge pages is never negative."""
    capacity = node.memory_capacity
    left = capacity - Quantity(reserved(config, MEMORY)).value() - eviction_memory_bytes(config, capacity)
    return max(0, left - sum(hugepages.capacity(node).values()))


def allocatable_hugepages(node: NodeFacts, config: KubeletConfig) -> dict[str, int]:
    """`hugepages-<size>` → capacity − systemReserved − kubeReserved of that size, floored at 0, every size the
    kernel offers; no eviction threshold applies to huge pages (GetNodeAllocatableReservation, setters.go
    MachineInfo)."""
    return {name: max(0, total - Quantity(reserved(config, name)).value())
            for name, total in hugepages.capacity(node).items()}


def allocatable_cpu_milli(node: NodeFacts, config: KubeletConfig) -> int:
    """cpu capacity − systemReserved − kubeReserved in millicores
    (pkg/kubelet/cm/node_container_manager_linux.go GetNodeAllocatableReservation)."""
    return node.cpu_capacity_milli - Quantity(reserved(config, CPU)).milli_value()


def allocatable_absolute_memory(node: NodeFacts, config: KubeletConfig) -> int:
    """capacity − systemReserved − kubeReserved, no eviction threshold: what the kubelet hands the runtime
    manager for memory.high (kubelet.go NewKubeGenericRuntimeManager(..., GetNodeAllocatableAbsolute)). Huge pages
    are not subtracted, in any release: node_container_manager_linux.go getNodeAllocatableAbsoluteImpl subtracts
    only the reserves (kubernetes#84426 still open; PRs #86758, #96255, #119173 proposing it were closed)."""
    return node.memory_capacity - Quantity(reserved(config, MEMORY)).value()


def kubepods_memory_bytes(node: NodeFacts, config: KubeletConfig) -> int:
    """kubepods memory limit: capacity minus reserves when `pods` is enforced, else capacity; never the
    eviction threshold, never the huge pages (node_container_manager_linux.go createNodeAllocatableCgroups →
    getNodeAllocatableInternalAbsolute, see allocatable_absolute_memory)."""
    if "pods" not in config.enforce_node_allocatable:
        return node.memory_capacity
    return allocatable_absolute_memory(node, config)


def kubepods_cpu_milli(node: NodeFacts, config: KubeletConfig) -> int:
    """kubepods cpu shares source: capacity minus reserves when `pods` is enforced, else capacity."""
    if "pods" not in config.enforce_node_allocatable:
        return node.cpu_capacity_milli
    return allocatable_cpu_milli(node, config)
