"""Kubelet admission of pods that do not fit the node's allocatable (pkg/kubelet/lifecycle/predicate.go,
the NodeResourcesFit check: requested + used > allocatable → rejected, OutOfpods / OutOfcpu / OutOfmemory /
OutOfhugepages-<size>)."""

from __future__ import annotations

from collections.abc import Mapping

from nodeconf.manifest import CPU, MEMORY
from nodeconf.semantics.hugepages import is_hugepage_resource
from nodeconf.semantics.pod_resources import Amounts, milli, whole

PODS = "pods"


def fit_amounts(requested: Amounts) -> dict[str, int]:
    """What the fit check counts for one pod: one pod, cpu in millicores, memory and each huge page size in
    bytes (scheduler framework NewResource: MilliCPU, Memory, ScalarResources by Value())."""
    amounts = {PODS: 1, CPU: milli(requested.get(CPU, 0)), MEMORY: whole(requested.get(MEMORY, 0))}
    amounts.update({name: whole(q) for name, q in sorted(requested.items()) if is_hugepage_resource(name)})
    return amounts


def fit_errors(requested: Amounts, used: Mapping[str, int], allocatable: Mapping[str, int]) -> tuple[str, ...]:
    """One message per resource that does not fit: pods (maxPods), cpu, memory, then each huge page size, whose
    allocatable is 0 when the node does not offer it (noderesources fit.go fitsRequest; the kubelet's admit
    handler reports it as OutOf<resource>)."""
    errors = []
    for name, amount in fit_amounts(requested).items():
        have = allocatable.get(name, 0)
        if amount and amount + used.get(name, 0) > have:
            errors.append(
                f"OutOf{name}: Node didn't have enough resource: {name}, requested: {amount}, "
                f"used: {used.get(name, 0)}, capacity: {have}"
            )
    return tuple(errors)
