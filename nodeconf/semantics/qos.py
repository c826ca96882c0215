"""Pod QoS class (pkg/apis/core/v1/helper/qos/qos.go ComputePodQOS; seed requests-limits-qos "QoS classes")."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction

from nodeconf.manifest import CPU, MEMORY, Pod
from nodeconf.quantity import Quantity
from nodeconf.semantics.expectation import QosClass
from nodeconf.semantics.pod_resources import derived, pod_level_resources_set
from nodeconf.semantics.profile import Profile

# Only cpu and memory decide the class (qos.go supportedQoSComputeResources); swap never does (KEP-5359).
QOS_RESOURCES = (CPU, MEMORY)


def _positive(items: Mapping[str, Quantity]) -> dict[str, Fraction]:
    return {name: q.amount for name, q in items.items() if name in QOS_RESOURCES and q.amount > 0}


def _classify(pairs: Iterable[tuple[Mapping[str, Quantity], Mapping[str, Quantity]]]) -> QosClass:
    """Sum positive requests and limits over the given (requests, limits) pairs and compare (ComputePodQOS)."""
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    for reqs, lims in pairs:
        for name, amount in _positive(reqs).items():
            requests[name] = requests[name] + amount if name in requests else amount
        found = _positive(lims)
        for name, amount in found.items():
            limits[name] = limits[name] + amount if name in limits else amount
        if not all(name in found for name in QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return QosClass.BEST_EFFORT
    matched = all(limits.get(name) == amount for name, amount in requests.items())
    if guaranteed and matched and len(requests) == len(limits):
        return QosClass.GUARANTEED
    return QosClass.BURSTABLE


def pod_qos(pod: Pod, profile: Profile) -> QosClass:
    """The class of an API-defaulted pod; pod-level resources decide when set (KEP-2837).

    Before PodLevelResourcesFixKubeletQOSClass (on from 1.37, kubernetes#137150) a present but empty
    `spec.resources` also took the pod-level branch, so such a pod came out BestEffort (kubernetes#135082).
    """
    gates = (profile.gate("PodLevelResources"), profile.gate("PodLevelResourcesFixKubeletQOSClass"))
    return derived(pod, ("qos", gates), lambda: _pod_qos(pod, profile))


def _pod_qos(pod: Pod, profile: Profile) -> QosClass:
    if profile.gate("PodLevelResources") and pod.resources is not None:
        uses_pod_level = (
            pod_level_resources_set(pod, profile)
            if profile.gate("PodLevelResourcesFixKubeletQOSClass")
            else True
        )
        if uses_pod_level:
            return _classify([(pod.resources.requests, pod.resources.limits)])
    return _classify((c.resources.requests, c.resources.limits) for c in pod.all_containers)
