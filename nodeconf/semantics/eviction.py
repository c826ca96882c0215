"""Node-pressure eviction for memory: the signal, the pod ranking and the one pod evicted per pass.

Source: seed requests-limits-qos "Eviction under node resource pressure"; pkg/kubelet/eviction/helpers.go
(rankMemoryPressure, evictionMessage) and eviction_manager.go (synchronize).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import MEMORY, Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.quantity import format_amount
from nodeconf.semantics.allocatable import eviction_memory_bytes
from nodeconf.semantics.oom import is_critical
from nodeconf.semantics.pod_resources import aggregate_containers, whole

EVICTED = "Evicted"
MEMORY_PRESSURE = "MemoryPressure"


@dataclass(frozen=True)
class PodMemoryUsage:
    """A pod and the working set of each of its containers in bytes (memory.current − inactive file)."""

    pod: Pod
    containers: Mapping[str, int] = field(default_factory=dict)

    @property
    def usage(self) -> int:
        return sum(self.containers.values())

    @property
    def request(self) -> int:
        """Memory request: containers summed, or the largest init container (helpers.go podRequest)."""
        return whole(aggregate_containers(self.pod, limits=False).get(MEMORY, Fraction(0)))

    @property
    def exceeds_request(self) -> bool:
        return self.usage > self.request


@dataclass(frozen=True)
class EvictionDecision:
    """The node condition and the pod to evict now (None when no threshold is met or nothing may go)."""

    memory_pressure: bool
    available: int
    threshold: int
    victim: Pod | None = None
    reason: str = ""
    message: str = ""


def rank_for_memory_pressure(usages: Sequence[PodMemoryUsage]) -> list[PodMemoryUsage]:
    """Usage above request first, then lower priority, then larger usage − request (rankMemoryPressure)."""
    return sorted(usages, key=lambda u: (not u.exceeds_request, u.pod.priority, -(u.usage - u.request)))


def memory_available(node: NodeFacts, working_set: int) -> int:
    """The memory.available signal: capacity minus the working set (seed eviction signal table)."""
    return node.memory_capacity - working_set


def eviction_message(victim: PodMemoryUsage, threshold: int, available: int) -> str:
    """evictionMessage: node low, threshold met, and every container using more than its request."""
    message = (f"The node was low on resource: memory. Threshold quantity: {format_amount(Fraction(threshold))}, "
               f"available: {format_amount(Fraction(available))}. ")
    for c in victim.pod.all_containers:
        used = victim.containers.get(c.name, 0)
        request = c.resources.request(MEMORY)
        requested = request.value() if request is not None else 0
        if used > requested:
            message += (f"Container {c.name} was using {format_amount(Fraction(used))}, request is "
                        f"{format_amount(Fraction(requested))}, has larger consumption of memory. ")
    return message


def decide_memory_eviction(usages: Sequence[PodMemoryUsage], node: NodeFacts, config: KubeletConfig,
                           other_usage: int = 0) -> EvictionDecision:
    """MemoryPressure when memory.available < the hard threshold; then the first rankable non-critical pod.

    `other_usage` is the working set outside the pods (system daemons). Critical pods are never evicted
    (eviction_manager.go evictPod), so the next in rank goes instead.
    """
    threshold = eviction_memory_bytes(config, node.memory_capacity)
    available = memory_available(node, sum(u.usage for u in usages) + other_usage)
    if available >= threshold:
        return EvictionDecision(False, available, threshold)
    for candidate in rank_for_memory_pressure(usages):
        if not is_critical(candidate.pod):
            return EvictionDecision(True, available, threshold, candidate.pod, EVICTED,
                                    eviction_message(candidate, threshold, available))
    return EvictionDecision(True, available, threshold)
