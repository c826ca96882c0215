"""Container lifecycle rules the agent follows as a kubelet does: restart policy, back-off, start order, phase.

Source: core/v1 restartPolicy and init/sidecar containers (KEP-753); kubelet backOff (10 s doubling to 300 s).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from nodeconf.enforcer.records import INIT, PAUSE, REGULAR, SIDECAR, ContainerRecord
from nodeconf.manifest import CPU, MEMORY, SWAP, Container, Pod, Resources
from nodeconf.node_facts import CPU_WEIGHT_FORMULAS
from nodeconf.quantity import Quantity


@dataclass(frozen=True)
class Backoff:
    """Container restart back-off: immediate first restart, then initial·2ⁿ up to a cap (kubelet backOff 10s/300s)."""

    initial: float = 10.0
    cap: float = 300.0

    def delay(self, restarts: int) -> float:
        return 0.0 if restarts == 0 else min(self.cap, self.initial * 2 ** (restarts - 1))


# Faults without a value: the spelling and the Faults field it sets. `pids-limit=ignore`: the agent computes as if
# podPidsLimit were unset (pod pids.max stays max; kubepods pids.max, from the allocatable pids, is unaffected);
# `single-process-oom-kill=ignore`: as if singleProcessOOMKill were false (container memory.oom.group 1 whatever the
# config says); `hugetlb=ignore`: no hugetlb.<size>.max written on kubepods, the reserve, pod or container cgroups
# (they keep max, so a pod's huge pages are unbounded); admission still counts the node's huge pages;
# `reserved-cgroups=ignore`: as if enforceNodeAllocatable named neither system-reserved nor kube-reserved;
# `psi-metrics=micro`: the PSI counters of /metrics/cadvisor carry the kernel's µs instead of seconds;
# `limited-swap=ignore-request-limit`: on LimitedSwap a container whose memory request equals its limit is computed as
# if its request were one byte lower, so it gets its request's share of swap (GetContainerSwapBehavior without its
# request == limit exclusion); only in pods that cannot be Guaranteed (no pod-level resources, the container's cpu
# request and limit not equal), whose QoS class the byte does not change; `resize-usage=ignore`: a resize is decided
# without the containers' usage, so a memory limit decreased below what a container holds is written at once;
# `sidecar-resize=ignore`: a resize patch's initContainers are dropped, so sidecars keep their resources (and the
# pod's sums their share) while the regular containers are resized; `oom-reason=ignore`: a container the OOM killer
# ended is reported with reason Error (no OOMKilled, no OOMKilling event), as by a runtime that misses the OOM event;
# `resize-retry=ignore`: a Deferred resize is never asked about again (only a new patch of its pod is decided), as by a
# kubelet that does not retry pending resizes when a pod is removed or resized.
_SWITCHES = {
    "limited-swap=ignore-explicit": "limited_swap_ignores_explicit",
    "limited-swap=ignore-request-limit": "limited_swap_ignores_request_limit",
    "limited-swap=ignore-critical": "limited_swap_ignores_critical",
    "pids-limit=ignore": "pids_limit_ignored",
    "single-process-oom-kill=ignore": "single_process_oom_kill_ignored",
    "hugetlb=ignore": "hugetlb_ignored",
    "reserved-cgroups=ignore": "reserved_cgroups_ignored",
    "psi-metrics=micro": "psi_metrics_micro",
    "resize-usage=ignore": "resize_usage_ignored",
    "sidecar-resize=ignore": "sidecar_resize_ignored",
    "oom-reason=ignore": "oom_reason_ignored",
    "resize-retry=ignore": "resize_retry_ignored",
    "eviction=ignore-priority": "eviction_ignores_priority",
    "pods-allocatable=ignore": "pods_allocatable_ignored",
    "memory-qos-restart=ignore": "memory_qos_restart_ignored",
}


@dataclass(frozen=True)
class Faults:
    """Deliberate deviations for the suite's self-tests: the agent computes with these, yet claims true facts."""

    cpu_weight_formula: str | None = None
    memory_throttling_factor: float | None = None
    limited_swap_ignores_explicit: bool = False
    limited_swap_ignores_request_limit: bool = False
    limited_swap_ignores_critical: bool = False
    pids_limit_ignored: bool = False
    single_process_oom_kill_ignored: bool = False
    hugetlb_ignored: bool = False
    reserved_cgroups_ignored: bool = False
    psi_metrics_micro: bool = False
    resize_usage_ignored: bool = False
    sidecar_resize_ignored: bool = False
    oom_reason_ignored: bool = False
    resize_retry_ignored: bool = False
    eviction_ignores_priority: bool = False
    pods_allocatable_ignored: bool = False
    memory_qos_restart_ignored: bool = False

    @classmethod
    def parse(cls, items: Iterable[str]) -> Faults:
        """`cpu-weight-formula=linear|nonlinear`, `memory-throttling-factor=X` (0 < X ≤ 1),
        `limited-swap=ignore-explicit`, `limited-swap=ignore-request-limit`, `limited-swap=ignore-critical`,
        `pids-limit=ignore`, `single-process-oom-kill=ignore`, `hugetlb=ignore`, `reserved-cgroups=ignore`,
        `psi-metrics=micro`, `resize-usage=ignore`, `sidecar-resize=ignore`, `oom-reason=ignore`,
        `resize-retry=ignore`, `eviction=ignore-priority`, `pods-allocatable=ignore`, `memory-qos-restart=ignore`;
        ValueError otherwise."""
        fields: dict[str, Any] = {}
        for item in items:
            key, sep, value = item.partition("=")
            if key == "cpu-weight-formula" and value in CPU_WEIGHT_FORMULAS:
                fields["cpu_weight_formula"] = value
            elif key == "memory-throttling-factor" and sep and _fraction(value) is not None:
                fields["memory_throttling_factor"] = _fraction(value)
            elif item in _SWITCHES:
                fields[_SWITCHES[item]] = True
            else:
                raise ValueError(f"bad fault {item!r} (cpu-weight-formula={'|'.join(CPU_WEIGHT_FORMULAS)}, "
                                 f"memory-throttling-factor=X with 0 < X <= 1, {', '.join(_SWITCHES)})")
        return cls(**fields)

    def pods_seen(self, pods: Sequence[Pod], swap_behavior: str) -> list[Pod]:
        """The pods as the faulty agent computes with them: on LimitedSwap, without their limits.swap, with a
        memory request equal to its limit one byte lower, or without their priority (so no pod counts as critical:
        its oom_score_adj follows its QoS class too)."""
        seen = list(pods)
        if swap_behavior != "LimitedSwap":
            return seen
        if self.limited_swap_ignores_explicit:
            seen = [_without_swap_limits(p) for p in seen]
        if self.limited_swap_ignores_request_limit:
            seen = [_request_below_limit(p) for p in seen]
        if self.limited_swap_ignores_critical:
            seen = [p.without_priority() for p in seen]
        return seen


def _without_swap_limits(pod: Pod) -> Pod:
    def strip(r: Resources) -> Resources:
        return Resources(requests=r.requests, limits={k: v for k, v in r.limits.items() if k != SWAP})

    return dataclasses.replace(
        pod.with_containers([dataclasses.replace(c, resources=strip(c.resources)) for c in pod.containers],
                            [dataclasses.replace(c, resources=strip(c.resources)) for c in pod.init_containers]),
        resources=strip(pod.resources) if pod.resources is not None else None)


def _request_below_limit(pod: Pod) -> Pod:
    if pod.resources is not None:
        return pod

    def lower(c: Container) -> Container:
        request, limit = c.resources.request(MEMORY), c.resources.limit(MEMORY)
        cpu_equal = c.resources.limit(CPU) is not None and c.resources.request(CPU) == c.resources.limit(CPU)
        if limit is None or cpu_equal or (request is not None and request != limit):
            return c
        requests = {**c.resources.requests, MEMORY: Quantity.of(limit.value() - 1)}
        return dataclasses.replace(c, resources=Resources(requests=requests, limits=c.resources.limits))

    return pod.with_containers([lower(c) for c in pod.containers], list(pod.init_containers))


def _fraction(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0 < value <= 1 else None


def restarts(policy: str, kind: str, code: int) -> bool:
    """Whether an exited container is restarted (core/v1 restartPolicy; sidecars and pause always)."""
    if kind in (PAUSE, SIDECAR):
        return True
    if kind == INIT:
        return code != 0 and policy != "Never"
    return policy == "Always" or (policy == "OnFailure" and code != 0)


def restarts_for_resize(before: Pod, after: Pod) -> list[str]:
    """Containers an applied resize restarts: a resource whose policy is RestartContainer changed for them, in
    their own requests or limits, or at pod level when they have none of their own (they run under it).

    Source: core/v1 ResourceResizeRestartPolicy; upstream e2e test/e2e/common/node/pod_resize.go and
    pod_level_resources_resize.go (expectRestart: RestartContainer and that resource's values changed).
    """
    old = {c.name: c for c in before.all_containers}
    return [c.name for c in after.all_containers if c.name in old and any(
        c.resize_restart_policy(name) == "RestartContainer" and _changed(before, after, old[c.name], c, name)
        for name in (CPU, MEMORY))]


def _changed(before: Pod, after: Pod, was: Container, now: Container, name: str) -> bool:
    def own(c: Container) -> tuple[object, object]:
        return c.resources.requests.get(name), c.resources.limits.get(name)

    def pod_level(p: Pod) -> tuple[object, object]:
        r = p.resources
        return (r.requests.get(name), r.limits.get(name)) if r is not None else (None, None)

    if own(was) != own(now):
        return True
    return own(now) == (None, None) and pod_level(before) != pod_level(after)


def ready_to_start(containers: Sequence[ContainerRecord], c: ContainerRecord) -> bool:
    """Start order: pause; init containers one by one (sidecars once started); then the regular ones."""
    for before in containers:
        if before is c:
            return True
        if before.kind == PAUSE and before.state != "running":
            return False
        if before.kind == INIT and not (before.state == "terminated" and before.exit_code == 0):
            return False
        if before.kind == SIDECAR and before.started_at is None:
            return False
        if c.kind in (INIT, SIDECAR) and before.kind == REGULAR:
            return True
    return True


def pod_phase(containers: Sequence[ContainerRecord], current: str) -> str:
    """Succeeded / Failed once every regular container has terminated for good, Running once one runs."""
    regular = [c for c in containers if c.kind == REGULAR]
    if all(c.state == "terminated" for c in regular):
        return "Succeeded" if all(c.exit_code == 0 for c in regular) else "Failed"
    if any(c.state == "running" for c in regular):
        return "Running"
    return current


NO_FAULTS = Faults()
KUBELET_BACKOFF = Backoff()
