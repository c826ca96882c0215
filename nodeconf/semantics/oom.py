"""`oom_score_adj` of containers (pkg/kubelet/qos/policy.go GetContainerOOMScoreAdjust).

Decisions on the open points, from the current policy.go and qos/helpers.go: a sidecar is capped at the score of
the regular container with the smallest memory request (minRegularContainerMemory); with pod-level memory
requests the unassigned remainder is split evenly over all containers, init containers included, and added to
each request, the sidecar cap included (remainingPodMemReqPerContainer). Not modelled: the alpha
KubeletOOMScoreAdjTieBreak nudge (off by default, no profile enables it) and DRA memory claims.
"""

from __future__ import annotations

from nodeconf.manifest import MEMORY, SYSTEM_NODE_CRITICAL, Container, Pod
from nodeconf.semantics.documents import ARTICLE
from nodeconf.semantics.expectation import Expected, QosClass
from nodeconf.semantics.pod_resources import aggregate_containers, pod_level_requests_set, whole
from nodeconf.semantics.profile import Profile

# pkg/kubelet/qos/policy.go and the seed's oom_score_adj table.
GUARANTEED_OOM_SCORE_ADJ = -997
BEST_EFFORT_OOM_SCORE_ADJ = 1000
KUBELET_OOM_SCORE_ADJ = -999
PAUSE_OOM_SCORE_ADJ = -998
# pkg/apis/scheduling/types.go SystemCriticalPriority: priority at or above it makes a pod critical.
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000


# The node's own daemons (upstream test/e2e_node/container_manager_test.go "Validate OOM score adjustments").
KUBELET_DAEMON, RUNTIME_DAEMON = "kubelet", "runtime"
_DAEMON_RULES = {
    KUBELET_DAEMON: "pkg/kubelet/qos/policy.go KubeletOOMScoreAdj -999, the default of the kubelet's --oom-score-adj "
                    "(cmd/kubelet/app/options), which the kubelet applies to itself at start (app/server.go)",
    RUNTIME_DAEMON: "upstream container_manager_test.go: the container runtime's oom-score-adj should be -999 (the "
                    "runtime's own unit sets it: containerd's containerd.service OOMScoreAdjust=-999), so the OOM "
                    "killer takes containers before the daemon that runs them",
}


def daemon_oom_score_adj(daemon: str) -> Expected:
    """The oom_score_adj of the node's kubelet or CRI runtime daemon: -999 for both."""
    return Expected(str(KUBELET_OOM_SCORE_ADJ), _DAEMON_RULES[daemon])


def is_critical(pod: Pod) -> bool:
    """pkg/kubelet/types/pod_update.go IsCriticalPod: static, mirror, or priority ≥ 2000000000."""
    return pod.is_static or pod.is_mirror or pod.priority >= SYSTEM_CRITICAL_PRIORITY


def is_node_critical(pod: Pod) -> bool:
    """pkg/kubelet/types/pod_update.go IsNodeCriticalPod: critical and class system-node-critical."""
    return is_critical(pod) and pod.priority_class_name == SYSTEM_NODE_CRITICAL


def _request(container: Container) -> int:
    request = container.resources.request(MEMORY)
    return request.value() if request is not None else 0


def _linear(request: int, memory_capacity: int) -> int:
    """1000 − 1000·request/capacity with Go's truncating integer division (policy.go)."""
    product = 1000 * request
    quotient = product // memory_capacity if product >= 0 else -((-product) // memory_capacity)
    return 1000 - quotient


def remaining_pod_request_per_container(pod: Pod) -> int:
    """Pod-level memory request not assigned to containers, split over all containers, init included
    (pkg/kubelet/qos/helpers.go remainingPodMemReqPerContainer, KEP-2837 "OOM score adjustment")."""
    if pod.resources is None:
        return 0
    pod_request = pod.resources.request(MEMORY)
    if pod_request is None or pod_request.is_zero():
        return 0
    remaining = pod_request.value() - whole(aggregate_containers(pod, limits=False).get(MEMORY, 0))
    count = len(pod.containers) + len(pod.init_containers)
    # Go's int64 division truncates toward zero.
    return remaining // count if remaining >= 0 else -((-remaining) // count)


def oom_score_adj(
    pod: Pod, container: Container, qos: QosClass, memory_capacity: int, profile: Profile
) -> Expected:
    """The container's oom_score_adj (policy.go containerOOMScoreAdjust with KubeletOOMScoreAdjTieBreak off)."""
    if is_node_critical(pod):
        return Expected(str(GUARANTEED_OOM_SCORE_ADJ), "node-critical pod → -997 (policy.go IsNodeCriticalPod)")
    if qos is QosClass.GUARANTEED:
        return Expected(str(GUARANTEED_OOM_SCORE_ADJ), f"Guaranteed → -997 (policy.go, {ARTICLE}, oom_score_adj table)")
    if qos is QosClass.BEST_EFFORT:
        return Expected(str(BEST_EFFORT_OOM_SCORE_ADJ),
                        f"BestEffort → 1000 (policy.go, {ARTICLE}, oom_score_adj table)")
    remaining = remaining_pod_request_per_container(pod) if pod_level_requests_set(pod, profile) else 0
    adj = _linear(_request(container) + remaining, memory_capacity)
    rule = f"Burstable: 1000 − 1000·request/capacity (request {_request(container)}, capacity {memory_capacity})"
    if remaining:
        rule += f" + pod-level remainder {remaining} per container (KEP-2837)"
    if container.is_sidecar and any(c.name == container.name for c in pod.init_containers) and pod.containers:
        least_protected = _linear(min(_request(c) for c in pod.containers) + remaining, memory_capacity)
        if adj > least_protected:
            adj = least_protected
            rule += "; sidecar capped at the least-protected regular container (policy.go isSidecarContainer)"
    if adj < 1000 + GUARANTEED_OOM_SCORE_ADJ:
        return Expected(str(1000 + GUARANTEED_OOM_SCORE_ADJ), rule + "; clamped up to 3")
    if adj == BEST_EFFORT_OOM_SCORE_ADJ:
        return Expected(str(BEST_EFFORT_OOM_SCORE_ADJ - 1), rule + "; 1000 → 999")
    return Expected(str(adj), rule)


def pause_oom_score_adj() -> Expected:
    """The sandbox (pause) process: -998, set by the runtime (seed requests-limits-qos oom_score_adj table)."""
    return Expected(str(PAUSE_OOM_SCORE_ADJ), "pause container → -998 (set by the runtime)")


def oom_score_adj_after_resize(at_start: Expected, resized: Expected, restarted: bool) -> Expected:
    """A container's oom_score_adj after an in-place resize: the resized pod's value when its resize policy
    restarted it, else the value it started with. The kubelet sends the new value with UpdateContainerResources on
    a memory-request resize (kubernetes#130917, 1.33), but the runtime sets oom_score_adj only when it starts a
    container: runc's `update` changes cgroup resources only and the change to also update oom_score_adj was
    declined (runc#4669: "set on container start only"); containerd's update passes only resources."""
    if restarted:
        return Expected(resized.value, f"restarted by its resize policy, set anew at start: {resized.rule}")
    return Expected(at_start.value, "kept through an in-place resize: the runtime sets oom_score_adj only at "
                                    f"container start (runc#4669, kubernetes#130917); at start: {at_start.rule}")
