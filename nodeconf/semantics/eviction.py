"""Node-pressure eviction for memory and for process IDs: the signals, the pod rankings and the one pod evicted
per pass.

Source: seed requests-limits-qos "Eviction under node resource pressure"; pkg/kubelet/eviction/helpers.go
(rankMemoryPressure, rankPIDPressure, process, makeSignalObservations, signalToNodeCondition, evictionMessage,
addAllocatableThresholds, getThresholdMetInfo), eviction_manager.go (synchronize), pkg/kubelet/stats/helper.go
(AvailableBytes), summary_sys_containers.go (the `pods` system container) and
pkg/kubelet/stats/pidlimit/pidlimit_linux.go (Stats).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import MEMORY, Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.quantity import format_amount
from nodeconf.semantics.allocatable import (
    MEMORY_AVAILABLE,
    effective_eviction_hard,
    eviction_memory_bytes,
    threshold_bytes,
)
from nodeconf.semantics.oom import is_critical
from nodeconf.semantics.pod_resources import aggregate_containers, whole

EVICTED = "Evicted"
MEMORY_PRESSURE = "MemoryPressure"
# helpers.go: signalToNodeCondition[allocatableMemory.available] = MemoryPressure, signalToResource = memory, and
# buildSignalToRankFunc ranks it with rankMemoryPressure, as memory.available.
ALLOCATABLE_MEMORY_AVAILABLE = "allocatableMemory.available"
# helpers.go: signalToNodeCondition[pid.available] = PIDPressure; signalToResource[pid.available] = "pids".
PID_AVAILABLE = "pid.available"
PID_PRESSURE = "PIDPressure"
PIDS = "pids"


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
    """The node condition, the signal named (the one met, else memory.available) with its observation and
    threshold, and the pod to evict now (None when no threshold is met or nothing may go)."""

    memory_pressure: bool
    available: int
    threshold: int
    victim: Pod | None = None
    reason: str = ""
    message: str = ""
    signal: str = MEMORY_AVAILABLE


@dataclass(frozen=True)
class PodsMemoryObservation:
    """The summary's `pods` system container, the kubepods cgroup (summary_sys_containers.go GetPodCgroupRoot):
    cadvisor's memory limit (its memory.max; None for `max`) and working set (memory.current − inactive_file).
    Its AvailableBytes is limit − working set (stats/helper.go), none without a limit, and then
    makeSignalObservations makes no allocatableMemory.available observation; the observation's capacity
    (available + working set) is the limit."""

    limit: int | None
    working_set: int


@dataclass(frozen=True)
class MemorySignal:
    """One memory signal's observation against its hard threshold (thresholdsMet: met when available < threshold)."""

    name: str
    available: int
    threshold: int

    @property
    def met(self) -> bool:
        return self.available < self.threshold


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


def allocatable_memory_threshold(config: KubeletConfig, capacity: int) -> int | None:
    """The hard allocatableMemory.available threshold in bytes, None when there is none: memory.available's hard
    threshold, copied when enforceNodeAllocatable has `pods` (helpers.go ParseThresholdConfig →
    addAllocatableThresholds); a percentage is of the observation's capacity, kubepods' limit, not of the node's
    (thresholdsMet: GetThresholdQuantity(value, observed.capacity))."""
    if "pods" not in config.enforce_node_allocatable:
        return None
    text = effective_eviction_hard(config).get(MEMORY_AVAILABLE)
    return None if text is None else threshold_bytes(text, capacity, config.source)


def memory_signals(usages: Sequence[PodMemoryUsage], node: NodeFacts, config: KubeletConfig, other_usage: int,
                   pods: PodsMemoryObservation | None) -> list[MemorySignal]:
    """memory.available (capacity − every working set; threshold 0 when none applies), then
    allocatableMemory.available when kubepods has a limit and the threshold exists (makeSignalObservations)."""
    signals = [MemorySignal(MEMORY_AVAILABLE, memory_available(node, sum(u.usage for u in usages) + other_usage),
                            eviction_memory_bytes(config, node.memory_capacity))]
    if pods is not None and pods.limit is not None:
        threshold = allocatable_memory_threshold(config, pods.limit)
        if threshold is not None:
            signals.append(MemorySignal(ALLOCATABLE_MEMORY_AVAILABLE, pods.limit - pods.working_set, threshold))
    return signals


def decide_memory_eviction(usages: Sequence[PodMemoryUsage], node: NodeFacts, config: KubeletConfig,
                           other_usage: int = 0, pods: PodsMemoryObservation | None = None) -> EvictionDecision:
    """MemoryPressure when memory.available or allocatableMemory.available is below its hard threshold; then the
    first rankable non-critical pod (rankMemoryPressure for both signals).

    `other_usage` is the working set outside the pods (system daemons); `pods` the kubepods observation. Critical
    pods are never evicted (eviction_manager.go evictPod), so the next in rank goes instead. The message names the
    met signal's threshold and observation (getThresholdMetInfo); with both met the kubelet may name either (the met
    thresholds come out of a map, thresholdsMetGracePeriod, and byEvictionPriority ranks both memory signals first),
    and the oracle names memory.available.
    """
    signals = memory_signals(usages, node, config, other_usage, pods)
    named = next((s for s in signals if s.met), signals[0])
    if not named.met:
        return EvictionDecision(False, named.available, named.threshold, signal=named.name)
    for candidate in rank_for_memory_pressure(usages):
        if not is_critical(candidate.pod):
            return EvictionDecision(True, named.available, named.threshold, candidate.pod, EVICTED,
                                    eviction_message(candidate, named.threshold, named.available), named.name)
    return EvictionDecision(True, named.available, named.threshold, signal=named.name)


@dataclass(frozen=True)
class PidObservation:
    """The node's rlimit stats (stats/pidlimit Stats): the task ceiling min(kernel.pid_max, kernel.threads-max)
    and the tasks that exist now (the 4th field of /proc/loadavg after its slash, every thread counted)."""

    max_pid: int
    running: int

    @property
    def available(self) -> int:
        """pid.available = MaxPID − NumOfRunningProcesses (helpers.go makeSignalObservations)."""
        return self.max_pid - self.running


@dataclass(frozen=True)
class PodProcesses:
    """A pod and how many processes its containers hold (the kubelet's pod ProcessStats.ProcessCount)."""

    pod: Pod
    processes: int


@dataclass(frozen=True)
class PidEvictionDecision:
    """PIDPressure, the signal against its threshold (None: no pid.available threshold), and the pod to evict."""

    pid_pressure: bool
    available: int
    threshold: int | None
    victim: Pod | None = None
    reason: str = ""
    message: str = ""


def rank_for_pid_pressure(pods: Sequence[PodProcesses]) -> list[PodProcesses]:
    """Lower priority first, then more processes first (rankPIDPressure: orderedBy(priority, process(stats)))."""
    return sorted(pods, key=lambda p: (p.pod.priority, -p.processes))


def pid_threshold(config: KubeletConfig, max_pid: int) -> int | None:
    """The hard pid.available threshold in tasks: a quantity, or a percentage of MaxPID (GetThresholdQuantity);
    None when evictionHard sets none; the kubelet's defaults have none (defaults_linux.go DefaultEvictionHard)."""
    text = effective_eviction_hard(config).get(PID_AVAILABLE)
    return None if text is None else threshold_bytes(text, max_pid, config.source, PID_AVAILABLE)


def decimal_si(amount: int) -> str:
    """A count as a DecimalSI quantity prints it (resource.NewQuantity(n, DecimalSI).String(): the largest suffix
    k, M, G, T, P, E whose power of 1000 divides it); a threshold written with a binary suffix prints as one."""
    for suffix, power in (("E", 18), ("P", 15), ("T", 12), ("G", 9), ("M", 6), ("k", 3)):
        if amount and amount % 10**power == 0:
            return f"{amount // 10**power}{suffix}"
    return str(amount)


def decide_pid_eviction(pods: Sequence[PodProcesses], observation: PidObservation,
                        config: KubeletConfig) -> PidEvictionDecision:
    """PIDPressure when pid.available < the hard threshold (thresholdsMet: the threshold's quantity exceeds the
    observation); then the first non-critical pod in rankPIDPressure's order. evictionMessage names the resource
    `pids` and the threshold met; no container line, as it reports usage only for memory and ephemeral storage."""
    threshold = pid_threshold(config, observation.max_pid)
    available = observation.available
    if threshold is None or available >= threshold:
        return PidEvictionDecision(False, available, threshold)
    message = (f"The node was low on resource: {PIDS}. Threshold quantity: {decimal_si(threshold)}, "
               f"available: {decimal_si(available)}. ")
    for candidate in rank_for_pid_pressure(pods):
        if not is_critical(candidate.pod):
            return PidEvictionDecision(True, available, threshold, candidate.pod, EVICTED, message)
    return PidEvictionDecision(True, available, threshold)
