"""The KubeletConfiguration (kubelet.config.k8s.io/v1beta1) fields that decide node resources."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nodeconf.errors import InputError
from nodeconf.quantity import Quantity, QuantityError

SWAP_BEHAVIORS = ("NoSwap", "LimitedSwap", "WorkloadControlledSwap")
RESERVATION_POLICIES = ("None", "TieredReservation")
CGROUP_DRIVERS = ("systemd", "cgroupfs")
ENFORCE_NODE_ALLOCATABLE = ("pods", "system-reserved", "kube-reserved", "none")
# Defaults of evictionHard (pkg/kubelet/apis/config/v1beta1/defaults_linux.go DefaultEvictionHard).
DEFAULT_EVICTION_HARD = {
    "memory.available": "100Mi",
    "nodefs.available": "10%",
    "nodefs.inodesFree": "5%",
    "imagefs.available": "15%",
}
_DURATION = re.compile(r"(?P<n>\d+(?:\.\d+)?)(?P<unit>us|µs|ms|s|m|h)")
_MICROSECONDS = {"us": 1, "µs": 1, "ms": 1000, "s": 1_000_000, "m": 60_000_000, "h": 3_600_000_000}


@dataclass(frozen=True)
class KubeletConfig:
    """Defaults follow the v1beta1 API, except `cgroup_driver`: systemd, as kubeadm and kind write it."""

    swap_behavior: str = "NoSwap"
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    memory_throttling_factor: float | None = None
    memory_reservation_policy: str = "None"
    system_reserved: Mapping[str, Quantity] = field(default_factory=dict)
    kube_reserved: Mapping[str, Quantity] = field(default_factory=dict)
    eviction_hard: Mapping[str, str] | None = None
    merge_default_eviction_settings: bool = False
    enforce_node_allocatable: tuple[str, ...] = ("pods",)
    cgroup_driver: str = "systemd"
    single_process_oom_kill: bool = False
    cpu_cfs_quota: bool = True
    cpu_cfs_quota_period_us: int = 100_000
    max_pods: int = 110
    # podPidsLimit (-1 = unset: no pids.max on pod cgroups), system-/kubeReservedCgroup (enforced reserves).
    pod_pids_limit: int = -1
    system_reserved_cgroup: str = ""
    kube_reserved_cgroup: str = ""
    source: str = ""

    def gate(self, name: str) -> bool | None:
        """The gate's value when the config sets it, else None (the profile decides)."""
        return self.feature_gates.get(name)


def _duration_us(text: str, source: str) -> int:
    total = 0
    pos = 0
    for match in _DURATION.finditer(text):
        if match.start() != pos:
            break
        total += int(float(match["n"]) * _MICROSECONDS[match["unit"]])
        pos = match.end()
    if pos != len(text) or not text:
        raise InputError(f"invalid duration {text!r}", source=source, obj="KubeletConfiguration",
                         field="cpuCFSQuotaPeriod")
    return total


def kubelet_config_from_dict(doc: Any, source: str = "") -> KubeletConfig:
    """Parse a KubeletConfiguration document; InputError names the field of any bad value."""
    obj = "KubeletConfiguration"

    def fail(path: str, problem: str) -> InputError:
        return InputError(problem, source=source, obj=obj, field=path)

    if not isinstance(doc, Mapping):
        raise InputError("not a KubeletConfiguration document", source=source)
    if doc.get("kind", obj) != obj:
        raise fail("kind", f"expected {obj}, got {doc.get('kind')!r}")

    def choice(path: str, value: Any, allowed: tuple[str, ...], default: str) -> str:
        if value in (None, ""):
            return default
        if value not in allowed:
            raise fail(path, f"unknown value {value!r} (expected one of {', '.join(allowed)})")
        return str(value)

    def flag(path: str, value: Any, default: bool) -> bool:
        if value is None:
            return default
        if not isinstance(value, bool):
            raise fail(path, f"expected true or false, got {value!r}")
        return value

    def resources(path: str, value: Any) -> dict[str, Quantity]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise fail(path, "expected a mapping")
        try:
            return {str(k): Quantity.parse(v) for k, v in value.items()}
        except QuantityError as err:
            raise fail(path, str(err)) from None

    swap = doc.get("memorySwap") or {}
    if not isinstance(swap, Mapping):
        raise fail("memorySwap", "expected a mapping")
    gates = doc.get("featureGates") or {}
    if not isinstance(gates, Mapping) or not all(isinstance(v, bool) for v in gates.values()):
        raise fail("featureGates", "expected a mapping of gate names to true or false")
    factor = doc.get("memoryThrottlingFactor")
    if factor is not None and (isinstance(factor, bool) or not isinstance(factor, int | float)
                               or not 0 < factor <= 1):
        raise fail("memoryThrottlingFactor", f"expected a number in (0, 1], got {factor!r}")
    eviction = doc.get("evictionHard")
    if eviction is not None and not isinstance(eviction, Mapping):
        raise fail("evictionHard", "expected a mapping of signal to threshold")
    enforce = doc.get("enforceNodeAllocatable")
    if enforce is not None:
        if not isinstance(enforce, list):
            raise fail("enforceNodeAllocatable", "expected a list")
        for item in enforce:
            choice("enforceNodeAllocatable", item, ENFORCE_NODE_ALLOCATABLE, "")
    period = doc.get("cpuCFSQuotaPeriod")
    max_pods = doc.get("maxPods", 110)
    if isinstance(max_pods, bool) or not isinstance(max_pods, int) or max_pods < 0:
        raise fail("maxPods", f"expected a non-negative integer, got {max_pods!r}")
    pids = doc.get("podPidsLimit", -1)
    if isinstance(pids, bool) or not isinstance(pids, int):
        raise fail("podPidsLimit", f"expected an integer, got {pids!r}")
    reserved_cgroups = {key: doc.get(key) or "" for key in ("systemReservedCgroup", "kubeReservedCgroup")}
    for key, value in reserved_cgroups.items():
        if not isinstance(value, str):
            raise fail(key, f"expected a cgroup name, got {value!r}")
    for key, enforced in (("systemReservedCgroup", "system-reserved"), ("kubeReservedCgroup", "kube-reserved")):
        # pkg/kubelet/apis/config/validation ValidateKubeletConfiguration: an enforced reserve needs its cgroup.
        if enforced in (enforce or ()) and not reserved_cgroups[key]:
            raise fail(key, f"must be specified when {enforced!r} is in enforceNodeAllocatable")
    return KubeletConfig(
        swap_behavior=choice("memorySwap.swapBehavior", swap.get("swapBehavior"), SWAP_BEHAVIORS, "NoSwap"),
        feature_gates={str(k): v for k, v in gates.items()},
        memory_throttling_factor=float(factor) if factor is not None else None,
        memory_reservation_policy=choice(
            "memoryReservationPolicy", doc.get("memoryReservationPolicy"), RESERVATION_POLICIES, "None"
        ),
        system_reserved=resources("systemReserved", doc.get("systemReserved")),
        kube_reserved=resources("kubeReserved", doc.get("kubeReserved")),
        eviction_hard={str(k): str(v) for k, v in eviction.items()} if eviction is not None else None,
        merge_default_eviction_settings=flag(
            "mergeDefaultEvictionSettings", doc.get("mergeDefaultEvictionSettings"), False
        ),
        enforce_node_allocatable=tuple(enforce) if enforce is not None else ("pods",),
        cgroup_driver=choice("cgroupDriver", doc.get("cgroupDriver"), CGROUP_DRIVERS, "systemd"),
        single_process_oom_kill=flag("singleProcessOOMKill", doc.get("singleProcessOOMKill"), False),
        cpu_cfs_quota=flag("cpuCFSQuota", doc.get("cpuCFSQuota"), True),
        cpu_cfs_quota_period_us=_duration_us(str(period), source) if period is not None else 100_000,
        max_pods=max_pods,
        pod_pids_limit=pids,
        system_reserved_cgroup=reserved_cgroups["systemReservedCgroup"],
        kube_reserved_cgroup=reserved_cgroups["kubeReservedCgroup"],
        source=source,
    )


def kubelet_config_to_dict(config: KubeletConfig) -> dict[str, Any]:
    """The config as a KubeletConfiguration document (what crosses the wire to a node agent)."""
    doc: dict[str, Any] = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "memorySwap": {"swapBehavior": config.swap_behavior},
        "featureGates": dict(config.feature_gates),
        "memoryReservationPolicy": config.memory_reservation_policy,
        "systemReserved": {k: str(v) for k, v in config.system_reserved.items()},
        "kubeReserved": {k: str(v) for k, v in config.kube_reserved.items()},
        "mergeDefaultEvictionSettings": config.merge_default_eviction_settings,
        "enforceNodeAllocatable": list(config.enforce_node_allocatable),
        "cgroupDriver": config.cgroup_driver,
        "singleProcessOOMKill": config.single_process_oom_kill,
        "cpuCFSQuota": config.cpu_cfs_quota,
        "cpuCFSQuotaPeriod": f"{config.cpu_cfs_quota_period_us}us",
        "maxPods": config.max_pods,
        "podPidsLimit": config.pod_pids_limit,
    }
    for key, value in (("systemReservedCgroup", config.system_reserved_cgroup),
                       ("kubeReservedCgroup", config.kube_reserved_cgroup)):
        if value:
            doc[key] = value
    if config.memory_throttling_factor is not None:
        doc["memoryThrottlingFactor"] = config.memory_throttling_factor
    if config.eviction_hard is not None:
        doc["evictionHard"] = dict(config.eviction_hard)
    return doc
