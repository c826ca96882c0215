"""Kubelet admission of pods that do not fit the node's allocatable (pkg/kubelet/lifecycle/predicate.go,
the NodeResourcesFit check: requested + used > allocatable → rejected, OutOfcpu / OutOfmemory)."""

from __future__ import annotations

from collections.abc import Mapping

from nodeconf.manifest import CPU, MEMORY
from nodeconf.semantics.pod_resources import Amounts, milli, whole


def fit_errors(requested: Amounts, used: Mapping[str, int], allocatable: Mapping[str, int]) -> tuple[str, ...]:
    """One message per resource that does not fit; cpu in millicores, memory in bytes (InsufficientResourceError)."""
    errors = []
    for name, amount in ((CPU, milli(requested.get(CPU, 0))), (MEMORY, whole(requested.get(MEMORY, 0)))):
        if amount and amount + used.get(name, 0) > allocatable[name]:
            errors.append(
                f"Out{name}: Node didn't have enough resource: {name}, requested: {amount}, "
                f"used: {used.get(name, 0)}, capacity: {allocatable[name]}"
            )
    return tuple(errors)
