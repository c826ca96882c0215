"""Effective pod requests and limits: API defaulting and aggregation (k8s.io/component-helpers/resource)."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import replace
from fractions import Fraction
from typing import TypeVar

from nodeconf.manifest import CPU, MEMORY, SWAP, Container, Pod, Resources
from nodeconf.quantity import Quantity
from nodeconf.semantics.hugepages import is_hugepage_resource
from nodeconf.semantics.profile import Profile

# The resources whose pod-level requests and limits decide QoS, cpu and memory (component-helpers resource
# supportedPodLevelResources); pod-level `spec.resources` may also set huge pages (is_pod_level_resource).
POD_LEVEL_RESOURCES = (CPU, MEMORY)
Amounts = dict[str, Fraction]
T = TypeVar("T")


def derived(pod: Pod, key: Hashable, compute: Callable[[], T]) -> T:
    """A value derived from the (immutable) pod, computed once per pod and key."""
    if key not in pod.derived:
        pod.derived[key] = compute()
    value: T = pod.derived[key]
    return value


def memoised(pod: Pod, key: Hashable, compute: Callable[[], Amounts]) -> Amounts:
    """A copy of derived amounts, so callers may change what they get."""
    return dict(derived(pod, key, compute))


def is_pod_level_resource(name: str) -> bool:
    """component-helpers resource IsSupportedPodLevelResource (read at kubernetes 0085214e): cpu, memory and every
    `hugepages-<size>` (kubernetes#130577 "Pod Level Hugepage Resources", in every profile nodeconf models)."""
    return name in POD_LEVEL_RESOURCES or is_hugepage_resource(name)


def _defaulted(resources: Resources, names: Callable[[str], bool] | None = None) -> Resources:
    """Requests default to limits where absent; swap never (KEP-5359: requests.swap is refused)."""
    requests = dict(resources.requests)
    for name, limit in resources.limits.items():
        if name != SWAP and name not in requests and (names is None or names(name)):
            requests[name] = limit
    return Resources(requests=requests, limits=resources.limits)


def with_api_defaults(pod: Pod) -> Pod:
    """The pod as the API server stores it: a limit alone sets the request (pkg/apis/core/v1/defaults.go
    SetDefaults_Pod; pod-level cpu, memory and huge pages too, PodLevelResources: upstream's
    pod_level_resources.go table reads back a pod-level hugepages request equal to the limit it sent alone)."""

    def missing(resources: Resources, names: Callable[[str], bool] | None = None) -> bool:
        return any(
            name != SWAP and name not in resources.requests and (names is None or names(name))
            for name in resources.limits
        )

    def container(c: Container) -> Container:
        return replace(c, resources=_defaulted(c.resources)) if missing(c.resources) else c

    pod_level = pod.resources
    pod_level_missing = pod_level is not None and missing(pod_level, is_pod_level_resource)
    if not pod_level_missing and not any(missing(c.resources) for c in pod.all_containers):
        return pod
    if pod_level is not None and pod_level_missing:
        pod_level = _defaulted(pod_level, is_pod_level_resource)
    return replace(
        pod,
        containers=tuple(container(c) for c in pod.containers),
        init_containers=tuple(container(c) for c in pod.init_containers),
        resources=pod_level,
    )


def pod_level_requests_set(pod: Pod, profile: Profile) -> bool:
    """component-helpers resource IsPodLevelRequestsSet (cpu/memory only), behind PodLevelResources."""
    return (
        profile.gate("PodLevelResources")
        and pod.resources is not None
        and any(name in POD_LEVEL_RESOURCES for name in pod.resources.requests)
    )


def pod_level_limits_set(pod: Pod, profile: Profile) -> bool:
    """component-helpers resource IsPodLevelLimitsSet (cpu/memory only), behind PodLevelResources."""
    return (
        profile.gate("PodLevelResources")
        and pod.resources is not None
        and any(name in POD_LEVEL_RESOURCES for name in pod.resources.limits)
    )


def pod_level_resources_set(pod: Pod, profile: Profile) -> bool:
    """component-helpers resource IsPodLevelResourcesSet."""
    return pod_level_requests_set(pod, profile) or pod_level_limits_set(pod, profile)


def _add(total: Amounts, items: Mapping[str, Quantity]) -> None:
    for name, q in items.items():
        total[name] = total[name] + q.amount if name in total else q.amount


def _max(total: Amounts, items: Mapping[str, Fraction]) -> None:
    for name, amount in items.items():
        if amount > total.get(name, 0):
            total[name] = amount


def aggregate_containers(pod: Pod, limits: bool) -> Amounts:
    """Sum of regular containers and sidecars, or the largest init container if bigger
    (component-helpers resource AggregateContainerRequests / AggregateContainerLimits)."""
    return memoised(pod, ("aggregate", limits), lambda: _aggregate(pod, limits))


def _aggregate(pod: Pod, limits: bool) -> Amounts:
    total: Amounts = {}
    for c in pod.containers:
        _add(total, c.resources.limits if limits else c.resources.requests)
    sidecars: Amounts = {}
    init_peak: Amounts = {}
    for c in pod.init_containers:
        own = c.resources.limits if limits else c.resources.requests
        if c.is_sidecar:
            _add(total, own)
            _add(sidecars, own)
            _max(init_peak, sidecars)
        else:
            running = dict(sidecars)
            _add(running, own)
            _max(init_peak, running)
    _max(total, init_peak)
    return total


def _pod_level_override(total: Amounts, declared: Mapping[str, Quantity]) -> None:
    """Pod-level amounts replace the containers' sum for the supported resources they name, huge pages included
    (PodRequests / PodLimits applyPodLevelResources)."""
    for name, q in declared.items():
        if is_pod_level_resource(name):
            total[name] = q.amount


def pod_requests(pod: Pod, profile: Profile) -> Amounts:
    """Pod requests: pod-level where set, else aggregated containers, plus overhead
    (component-helpers resource PodRequests)."""
    return memoised(pod, ("requests", profile.gate("PodLevelResources")), lambda: _requests(pod, profile))


def _requests(pod: Pod, profile: Profile) -> Amounts:
    total = aggregate_containers(pod, limits=False)
    if profile.gate("PodLevelResources") and pod.resources is not None:
        _pod_level_override(total, pod.resources.requests)
    _add(total, pod.overhead)
    return total


def pod_limits(pod: Pod, profile: Profile) -> Amounts:
    """Pod limits: pod-level where set, else aggregated containers; overhead only onto a limit that exists
    (component-helpers resource PodLimits)."""
    return memoised(pod, ("limits", profile.gate("PodLevelResources")), lambda: _limits(pod, profile))


def _limits(pod: Pod, profile: Profile) -> Amounts:
    total = aggregate_containers(pod, limits=True)
    if profile.gate("PodLevelResources") and pod.resources is not None:
        _pod_level_override(total, pod.resources.limits)
    for name, q in pod.overhead.items():
        if name in total:
            total[name] += q.amount
    return total


def every_container_limits(pod: Pod, name: str) -> bool:
    """True when every container, init containers included, has a non-zero limit on `name`
    (pkg/kubelet/cm/helpers_linux.go ResourceConfigForPod, the ContainerFn of PodLimits)."""
    return all(
        (limit := c.resources.limit(name)) is not None and not limit.is_zero() for c in pod.all_containers
    )


def milli(amount: Fraction | int) -> int:
    """Quantity.MilliValue(): thousandths rounded up."""
    return math.ceil(amount * 1000)


def whole(amount: Fraction | int) -> int:
    """Quantity.Value(): base units rounded up."""
    return math.ceil(amount)
