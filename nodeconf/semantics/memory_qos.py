"""Memory QoS: memory.high throttling and memory.min/memory.low reservation (seed memory-qos-v1.36, KEP-2570)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import MEMORY, Container, Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics.allocatable import allocatable_absolute_memory
from nodeconf.semantics.documents import ARTICLE, POST
from nodeconf.semantics.expectation import Expected, QosClass
from nodeconf.semantics.memory import read_back
from nodeconf.semantics.pod_resources import pod_level_limits_set, pod_limits, pod_requests, whole
from nodeconf.semantics.profile import KUBEPODS_MEMORY_LOW_MISSING, MEMORY_HIGH_WITHOUT_MEMORY, Profile

GATE = "MemoryQoS"
TIERED = "TieredReservation"
MIN = "memory.min"
LOW = "memory.low"
HIGH = "memory.high"
UNLIMITED = "max"
MIN_METRIC = "kubelet_memory_qos_node_memory_min_bytes"
LOW_METRIC = "kubelet_memory_qos_node_memory_low_bytes"
KUBEPODS = "kubepods"
BURSTABLE = "burstable"
BESTEFFORT = "besteffort"


def enabled(profile: Profile) -> bool:
    """The MemoryQoS gate (cgroup v2 only; every nodeconf node is cgroup v2). Source: post "featureGates: MemoryQoS"."""
    return profile.gate(GATE)


def _old_scheme(profile: Profile) -> bool:
    """Before 1.36 the gate put memory.min = request on every container (post "v1.27 동작과의 비교")."""
    return not profile.at_least("1.36")


def _tiered(config: KubeletConfig, profile: Profile) -> bool:
    """memoryReservationPolicy: TieredReservation (a 1.36 field; post "memoryReservationPolicy")."""
    return profile.at_least("1.36") and config.memory_reservation_policy == TIERED


def throttling_factor(config: KubeletConfig, profile: Profile) -> float | None:
    """memoryThrottlingFactor: the config's, else the version default (0.9 to 1.36, null from 1.37).

    Source: post "기본값은 0.9" (1.36); SEMANTICS.md "Memory QoS".
    """
    if config.memory_throttling_factor is not None:
        return config.memory_throttling_factor
    return profile.default_memory_throttling_factor


def _zero(rule: str) -> dict[str, Expected]:
    return {MIN: Expected("0", rule), LOW: Expected("0", rule)}


def _reservation(qos: QosClass, request: int, node: NodeFacts, config: KubeletConfig,
                 profile: Profile, level: str) -> dict[str, Expected]:
    """memory.min/memory.low of a container or pod cgroup for its request (post table, "Cgroup hierarchy")."""
    if not enabled(profile):
        return _zero(f"MemoryQoS gate off: the kubelet writes no memory.min/memory.low ({ARTICLE} hands-on: 0 0)")
    page = node.page_size
    if _old_scheme(profile):
        if qos is QosClass.BEST_EFFORT or request == 0:
            return _zero(f"MemoryQoS before 1.36: no memory request, no memory.min ({level})")
        return {
            MIN: Expected(read_back(request, page), f"MemoryQoS before 1.36: memory.min = {level} memory request "
                          f"for every request ({POST} \"Comparison with v1.27 behavior\"), page-floored"),
            LOW: Expected("0", "MemoryQoS before 1.36: memory.low not written"),
        }
    if not _tiered(config, profile):
        return _zero(f"memoryReservationPolicy None: no memory.min/memory.low ({POST}: None is the default)")
    if qos is QosClass.GUARANTEED:
        return {
            MIN: Expected(read_back(request, page), f"TieredReservation: Guaranteed {level} memory.min = "
                          f"requests.memory ({POST} table), page-floored"),
            LOW: Expected("0", f"TieredReservation: Guaranteed gets memory.min, not memory.low ({POST} table)"),
        }
    if qos is QosClass.BURSTABLE:
        return {
            MIN: Expected("0", f"TieredReservation: Burstable gets memory.low, not memory.min ({POST} table)"),
            LOW: Expected(read_back(request, page), f"TieredReservation: Burstable {level} memory.low = "
                          f"requests.memory ({POST} table), page-floored"),
        }
    return _zero(f"TieredReservation: BestEffort gets neither memory.min nor memory.low ({POST} table)")


def memory_request_and_limit(container: Container) -> tuple[int, int]:
    """Byte request and limit (0 when absent); a limit alone defaults the request (core/v1 SetDefaults_Pod)."""
    limit = container.resources.limit(MEMORY)
    request = container.resources.request(MEMORY) or limit
    return (request.value() if request else 0, limit.value() if limit else 0)


def throttle_bytes(request: int, ceiling: int, factor: float, page: int) -> int:
    """int64(floor(req + (ceiling − req)*factor) / page) * page in float64, as the kubelet computes it."""
    return int(math.floor(float(request) + (float(ceiling) - float(request)) * factor) / float(page)) * page


def memory_high(container: Container, node: NodeFacts, config: KubeletConfig, profile: Profile) -> Expected:
    """Container memory.high = floor((req + factor*(limit or allocatable − req))/page)*page when above req.

    Source: post "memory.high" row; kuberuntime_container_linux.go generateLinuxContainerResources (float64
    arithmetic, written only when > request); BestEffort from allocatable (post table) — kubelets up to 1.36
    skip request == limit == 0 (kubernetes#137685), an accepted value tied to that issue.
    """
    if not enabled(profile):
        return Expected(UNLIMITED, f"MemoryQoS gate off: memory.high not written ({ARTICLE} hands-on: max)")
    factor = throttling_factor(config, profile)
    if factor is None:
        return Expected(UNLIMITED, "memoryThrottlingFactor null (1.37+ default): no memory.high (v1.37 blog)")
    request, limit = memory_request_and_limit(container)
    if request == limit and request > 0:
        return Expected(UNLIMITED, f"memory request == limit: no throttling, memory.high stays max ({POST} table)")
    ceiling = limit or allocatable_absolute_memory(node, config)
    high = throttle_bytes(request, ceiling, factor, node.page_size)
    source = "limits.memory" if limit else "node allocatable"
    if high == 0 or high <= request:
        return Expected(UNLIMITED, f"memory.high from {source} would not exceed the request: not written")
    rule = f"floor((request + {factor}*({source} − request))/page)*page ({POST}, KEP-2570 formula)"
    if request == 0 and limit == 0 and profile.ships(MEMORY_HIGH_WITHOUT_MEMORY):
        issue = f"{MEMORY_HIGH_WITHOUT_MEMORY}: kubelet {profile.version} skips memory.high without any memory"
        return Expected(str(high), rule, {UNLIMITED: issue})
    return Expected(str(high), rule)


def container_files(
    pod: Pod, container: Container, qos: QosClass, node: NodeFacts, config: KubeletConfig, profile: Profile
) -> dict[str, Expected]:
    """memory.min, memory.low and memory.high of one container cgroup (post table)."""
    request, _ = memory_request_and_limit(container)
    return {**_reservation(qos, request, node, config, profile, "container"),
            HIGH: memory_high(container, node, config, profile)}


def pod_request_bytes(pod: Pod, profile: Profile) -> int:
    """The pod's memory request in bytes (component-helpers PodRequests, as the kubelet sums it)."""
    return whole(pod_requests(pod, profile).get(MEMORY, Fraction(0)))


def pod_files(
    pod: Pod, qos: QosClass, node: NodeFacts, config: KubeletConfig, profile: Profile
) -> dict[str, Expected]:
    """Pod cgroup memory.min/memory.low = the sum of requests per tier, and the pod's memory.high (post table)."""
    return {
        **_reservation(qos, pod_request_bytes(pod, profile), node, config, profile, "pod"),
        HIGH: pod_memory_high(pod, node, config, profile),
    }


def pod_memory_high(pod: Pod, node: NodeFacts, config: KubeletConfig, profile: Profile) -> Expected:
    """Pod cgroups keep memory.high max (post), except, from 1.37, pods with a pod-level memory limit.

    Source: kubelet 1.37 cm.ApplyPodLevelMemoryHigh and its unit tests (pod-level memory limit required,
    overhead included, cpu-only pod-level resources or undeclared container limits leave it unset).
    """
    factor = throttling_factor(config, profile)
    pod_limit = pod.resources.limit(MEMORY) if pod.resources is not None else None
    if (not enabled(profile) or factor is None or not profile.at_least("1.37") or pod_limit is None
            or not pod_level_limits_set(pod, profile)):
        return Expected(UNLIMITED, f"pod cgroups keep memory.high max ({POST}: throttling is per container)")
    request = pod_request_bytes(pod, profile)
    limit = whole(pod_limits(pod, profile).get(MEMORY, Fraction(0)))
    high = throttle_bytes(request, limit, factor, node.page_size)
    if high <= request:
        return Expected(UNLIMITED, "pod memory.high would not exceed the pod's request: not written")
    return Expected(str(high), f"1.37+ pod-level memory limit: floor((pod request + {factor}*(pod limit − "
                               "request))/page)*page, overhead included (ApplyPodLevelMemoryHigh)")


def _sums(pods_by_qos: Mapping[QosClass, Sequence[Pod]], profile: Profile) -> tuple[int, int]:
    """Summed memory requests of the Guaranteed and of the Burstable pods (qos_container_manager_linux.go)."""
    def total(qos: QosClass) -> int:
        return sum(pod_request_bytes(p, profile) for p in pods_by_qos.get(qos, ()))
    return total(QosClass.GUARANTEED), total(QosClass.BURSTABLE)


def node_level_files(
    pods_by_qos: Mapping[QosClass, Sequence[Pod]], node: NodeFacts, config: KubeletConfig, profile: Profile
) -> dict[str, dict[str, Expected]]:
    """kubepods memory.min = Guaranteed + Burstable requests; burstable memory.low = Burstable requests.

    Source: post "Cgroup 계층 구조"; before 1.36 the burstable slice took memory.min instead
    (qos_container_manager_linux.go setMemoryQoS); None resets the QoS levels to 0 (v1.37 blog).
    """
    page = node.page_size
    guaranteed, burstable = _sums(pods_by_qos, profile)
    unset = _zero("never written for this level: a fresh cgroup reads 0")
    if not enabled(profile) or not (_old_scheme(profile) or _tiered(config, profile)):
        rule = ("MemoryQoS gate off: no QoS-level protection" if not enabled(profile)
                else f"memoryReservationPolicy None: QoS-level memory.min/memory.low reset to 0 ({POST}, v1.37 blog)")
        return {KUBEPODS: _zero(rule), BURSTABLE: _zero(rule), BESTEFFORT: unset}
    kubepods = {
        MIN: Expected(read_back(guaranteed + burstable, page),
                      f"kubepods memory.min = sum of Guaranteed and Burstable pod requests ({POST} hierarchy)"),
        LOW: _kubepods_low(burstable, page, profile),
    }
    if _old_scheme(profile):
        burstable_files = {
            MIN: Expected(read_back(burstable, page),
                          "before 1.36: burstable memory.min = sum of Burstable pod requests (setMemoryQoS)"),
            LOW: Expected("0", "before 1.36: burstable memory.low not written"),
        }
    else:
        burstable_files = {
            MIN: Expected("0", f"TieredReservation: the burstable slice gets memory.low, not memory.min ({POST})"),
            LOW: Expected(read_back(burstable, page),
                          f"TieredReservation: burstable memory.low = sum of Burstable pod requests ({POST})"),
        }
    return {KUBEPODS: kubepods, BURSTABLE: burstable_files, BESTEFFORT: unset}


def _kubepods_low(burstable: int, page: int, profile: Profile) -> Expected:
    """kubepods memory.low under TieredReservation: Σ Burstable requests from 1.37, so the burstable slice's
    memory.low is not capped to 0 by its parent (qos_container_manager_linux.go setMemoryQoS; kubernetes#140267).
    Before 1.36 the old scheme never writes it."""
    if _old_scheme(profile):
        return Expected("0", "before 1.36: kubepods memory.low not written (setMemoryQoS)")
    if profile.ships(KUBEPODS_MEMORY_LOW_MISSING):
        return Expected("0", f"kubelet {profile.version} writes no kubepods memory.low ({KUBEPODS_MEMORY_LOW_MISSING}, "
                             f"fixed in 1.37; the hierarchy of the {POST} names only kubepods memory.min)")
    return Expected(read_back(burstable, page),
                    "TieredReservation: kubepods memory.low = sum of Burstable pod requests, the burstable slice's "
                    f"ancestor coverage (setMemoryQoS, {KUBEPODS_MEMORY_LOW_MISSING}, 1.37 pod-qos docs), page-floored")


def metrics(
    pods_by_qos: Mapping[QosClass, Sequence[Pod]], config: KubeletConfig, profile: Profile
) -> dict[str, int]:
    """kubelet_memory_qos_node_memory_{min,low}_bytes: Guaranteed memory.min and Burstable memory.low sums.

    Source: post "관찰 가능성 지표" (new in 1.36, so absent before; 0 unless TieredReservation is in effect).
    """
    if not profile.at_least("1.36"):
        return {}
    guaranteed, burstable = _sums(pods_by_qos, profile)
    active = enabled(profile) and _tiered(config, profile)
    return {MIN_METRIC: guaranteed if active else 0, LOW_METRIC: burstable if active else 0}


def node_warnings(node: NodeFacts, config: KubeletConfig, profile: Profile) -> tuple[str, ...]:
    """A startup warning, never a refusal, when MemoryQoS runs on a kernel older than 5.9 (post "커널 버전 체크")."""
    if not enabled(profile) or not profile.at_least("1.36") or node.kernel_at_least(5, 9):
        return ()
    return (
        f"MemoryQoS: kernel {node.kernel_version} is older than 5.9; memory.high throttling can livelock the "
        "kernel (fixed in 5.9). The feature keeps working.",
    )
