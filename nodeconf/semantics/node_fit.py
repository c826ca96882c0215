"""Kubelet admission of pods that do not fit the node's allocatable (pkg/kubelet/lifecycle/predicate.go,
the NodeResourcesFit check: requested + used > allocatable → rejected, OutOfpods / OutOfcpu / OutOfmemory)."""

from __future__ import annotations

from collections.abc import Mapping

from nodeconf.manifest import CPU, MEMORY
from nodeconf.semantics.pod_resources import Amounts, milli, whole

PODS = "pods"


def fit_errors(requested: Amounts, used: Mapping[str, int], allocatable: Mapping[str, int]) -> tuple[str, ...]:
    """One message per resource that does not fit: pods (maxPods), cpu in millicores, memory in bytes
    (scheduler framework InsufficientResource, as the kubelet's admit handler reports it)."""
    errors = []
    wanted = ((PODS, 1), (CPU, milli(requested.get(CPU, 0))), (MEMORY, whole(requested.get(MEMORY, 0))))
    for name, amount in wanted:
        if amount and amount + used.get(name, 0) > allocatable[name]:
            errors.append(
                f"OutOf{name}: Node didn't have enough resource: {name}, requested: {amount}, "
                f"used: {used.get(name, 0)}, capacity: {allocatable[name]}"
            )
    return tuple(errors)
