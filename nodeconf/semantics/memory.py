"""Memory limits (`memory.max`) at container, pod and kubepods level, and `memory.oom.group`."""

from __future__ import annotations

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import MEMORY, Container, Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics.documents import ARTICLE
from nodeconf.semantics.expectation import Expected, QosClass
from nodeconf.semantics.pod_resources import (
    every_container_limits,
    pod_level_limits_set,
    pod_limits,
    whole,
)
from nodeconf.semantics.profile import Profile

UNLIMITED = "max"


def floor_to_page(value: int, page_size: int) -> int:
    """Memory files keep whole pages: a written byte value reads back rounded down (MEASURED.md)."""
    return value - value % page_size if value > 0 else 0


def read_back(value: int | None, page_size: int) -> str:
    """A memory limit as the kernel shows it: page-floored bytes, or `max` when unlimited."""
    return UNLIMITED if value is None else str(floor_to_page(value, page_size))


def container_limit_bytes(pod: Pod, container: Container, profile: Profile) -> int | None:
    """limits.memory, else the pod-level limit (kuberuntime getMemoryLimit, KEP-2837), else unlimited."""
    limit = container.resources.limit(MEMORY)
    if (limit is None or limit.is_zero()) and pod_level_limits_set(pod, profile) and pod.resources:
        limit = pod.resources.limit(MEMORY)
    if limit is None or limit.is_zero():
        return None
    return limit.value()


def pod_limit_bytes(pod: Pod, qos: QosClass, profile: Profile) -> int | None:
    """Sum of limits when every container has one or a pod-level limit is set, else unlimited
    (pkg/kubelet/cm/helpers_linux.go ResourceConfigForPod memoryLimitsDeclared)."""
    if qos is QosClass.BEST_EFFORT:
        return None
    declared = every_container_limits(pod, MEMORY) or (
        pod_level_limits_set(pod, profile) and pod.resources is not None and MEMORY in pod.resources.limits
    )
    if qos is QosClass.GUARANTEED or declared:
        return whole(pod_limits(pod, profile).get(MEMORY, 0)) or None
    return None


def container_files(
    pod: Pod, container: Container, node: NodeFacts, config: KubeletConfig, profile: Profile
) -> dict[str, Expected]:
    """Container memory.max (seed requests-limits-qos table) and memory.oom.group (seed "memory.oom.group")."""
    limit = container_limit_bytes(pod, container, profile)
    return {
        "memory.max": Expected(
            read_back(limit, node.page_size),
            "limits.memory (or the pod-level limit), page-floored; none → max (kuberuntime generateLinuxContainer)",
        ),
        "memory.oom.group": oom_group(config),
    }


def oom_group(config: KubeletConfig) -> Expected:
    """1 in every container cgroup on cgroup v2 unless singleProcessOOMKill (seed requests-limits-qos): the kubelet
    sets unified memory.oom.group=1 only when singleProcessOOMKill is false, its cgroup v2 default
    (kuberuntime_container_linux.go generateLinuxContainerResources; kubelet.go NewMainKubelet)."""
    if config.single_process_oom_kill:
        return Expected("0", "singleProcessOOMKill: true → memory.oom.group not set (kubelet 1.32+)")
    return Expected("1", "container cgroups get memory.oom.group=1 on cgroup v2 (kubelet 1.28+)")


def pod_files(pod: Pod, qos: QosClass, node: NodeFacts, profile: Profile) -> dict[str, Expected]:
    """Pod memory.max (ResourceConfigForPod) and memory.oom.group 0 (seed requests-limits-qos hands-on)."""
    return {
        "memory.max": Expected(
            read_back(pod_limit_bytes(pod, qos, profile), node.page_size),
            "ResourceConfigForPod: sum of memory limits when all containers have one (or pod-level limit)",
        ),
        "memory.oom.group": Expected("0", f"pod cgroups keep memory.oom.group=0 ({ARTICLE})"),
    }


def kubepods_files(limit_bytes: int, node: NodeFacts) -> dict[str, Expected]:
    """kubepods memory.max = capacity − systemReserved − kubeReserved when `pods` is enforced, else capacity;
    the eviction threshold is not subtracted (node_container_manager_linux.go, seed requests-limits-qos)."""
    return {
        "memory.max": Expected(
            read_back(limit_bytes, node.page_size), "kubepods: capacity − system/kube reserved (no eviction)"
        )
    }


def qos_level_files() -> dict[str, Expected]:
    """QoS cgroups carry no memory limit without the QOSReserved gate (qos_container_manager_linux.go)."""
    return {"memory.max": Expected(UNLIMITED, "QoS cgroups: no memory limit (QOSReserved off)")}


def pause_files() -> dict[str, Expected]:
    """The sandbox (pause) container: memory.max max (seed requests-limits-qos hands-on)."""
    return {"memory.max": Expected(UNLIMITED, f"pause container: no memory limit ({ARTICLE})")}
