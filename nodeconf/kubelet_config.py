"""The KubeletConfiguration (kubelet.config.k8s.io/v1beta1) fields that decide node resources."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from nodeconf.errors import InputError, shown
from nodeconf.quantity import INT64_MAX, Quantity, QuantityError, beyond_int64

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
# time.ParseDuration: [sign] (decimal number, unit)+ with units ns, us, µs (U+00B5), μs (U+03BC), ms, s, m, h.
_DURATION = re.compile(r"(?P<n>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?P<unit>ns|us|\u00b5s|\u03bcs|ms|s|m|h)", re.ASCII)
_NANOSECONDS = {"ns": 1, "us": 10**3, "\u00b5s": 10**3, "\u03bcs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9,
                "h": 3600 * 10**9}
# kubelet validation (pkg/kubelet/apis/config/validation/validation.go): cpuCFSQuotaPeriod within 1ms..1s inclusive.
CFS_PERIOD_NS = (10**6, 10**9)
MAX_DURATION_TEXT = 100


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


def _duration_ns(text: str) -> int | None:
    """Nanoseconds of a Go duration (time.ParseDuration), None when it is not one or overflows int64."""
    sign, body = (-1, text[1:]) if text[:1] == "-" else (1, text[1:] if text[:1] == "+" else text)
    if body == "0":
        return 0
    total, pos = Fraction(0), 0
    for match in _DURATION.finditer(body):
        if match.start() != pos:
            return None
        total += Fraction(match["n"].rstrip(".") or "0") * _NANOSECONDS[match["unit"]]
        pos = match.end()
    if not body or pos != len(body) or total > INT64_MAX:
        return None
    return sign * int(total)


def _cfs_period_us(value: Any, source: str) -> int:
    """cpuCFSQuotaPeriod in microseconds; refused as the kubelet refuses it (unparsable, or outside 1ms..1s)."""
    def fail(problem: str) -> InputError:
        return InputError(problem, source=source, obj="KubeletConfiguration", field="cpuCFSQuotaPeriod")

    text = value if isinstance(value, str) else None
    if text is None or len(text) > MAX_DURATION_TEXT or (nanoseconds := _duration_ns(text)) is None:
        raise fail(f"invalid duration {shown(value)}")
    low, high = CFS_PERIOD_NS
    if not low <= nanoseconds <= high:
        raise fail(f"invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {shown(text)} must be "
                   "between 1ms and 1sec, inclusive")
    return nanoseconds // 1000


def kubelet_config_from_dict(doc: Any, source: str = "") -> KubeletConfig:
    """Parse a KubeletConfiguration document; InputError names the field of any bad value."""
    obj = "KubeletConfiguration"

    def fail(path: str, problem: str) -> InputError:
        return InputError(problem, source=source, obj=obj, field=path)

    if not isinstance(doc, Mapping):
        raise InputError("not a KubeletConfiguration document", source=source)
    if doc.get("kind", obj) != obj:
        raise fail("kind", f"expected {obj}, got {shown(doc.get('kind'))}")

    def choice(path: str, value: Any, allowed: tuple[str, ...], default: str) -> str:
        if value in (None, ""):
            return default
        if value not in allowed:
            raise fail(path, f"unknown value {shown(value)} (expected one of {', '.join(allowed)})")
        return str(value)

    def flag(path: str, value: Any, default: bool) -> bool:
        if value is None:
            return default
        if not isinstance(value, bool):
            raise fail(path, f"expected true or false, got {shown(value)}")
        return value

    def resources(path: str, value: Any) -> dict[str, Quantity]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise fail(path, "expected a mapping")
        out: dict[str, Quantity] = {}
        for k, v in value.items():
            try:
                q = Quantity.parse(v)
            except QuantityError as err:
                raise fail(f"{path}.{k}", str(err)) from None
            # cmd/kubelet/app/server.go parseResourceList: a negative reservation stops the kubelet.
            if q.amount < 0:
                raise fail(f"{path}.{k}", f"resource quantity for {shown(str(k))} cannot be negative: {shown(v)}")
            if beyond_int64(q, milli=str(k) == "cpu"):
                raise fail(f"{path}.{k}", f"{shown(v)} is beyond int64 (the kubelet reads it as an int64)")
            out[str(k)] = q
        return out

    swap = doc.get("memorySwap") or {}
    if not isinstance(swap, Mapping):
        raise fail("memorySwap", "expected a mapping")
    gates = doc.get("featureGates") or {}
    if not isinstance(gates, Mapping) or not all(isinstance(v, bool) for v in gates.values()):
        raise fail("featureGates", "expected a mapping of gate names to true or false")
    factor = doc.get("memoryThrottlingFactor")
    if factor is not None and (isinstance(factor, bool) or not isinstance(factor, int | float)
                               or not 0 < factor <= 1):
        raise fail("memoryThrottlingFactor", f"expected a number in (0, 1], got {shown(factor)}")
    eviction = doc.get("evictionHard")
    if eviction is not None and (not isinstance(eviction, Mapping)
                                 or not all(isinstance(v, str) for v in eviction.values())):
        raise fail("evictionHard", "expected a mapping of signal to threshold (strings)")
    enforce = doc.get("enforceNodeAllocatable")
    if enforce is not None:
        if not isinstance(enforce, list):
            raise fail("enforceNodeAllocatable", "expected a list")
        for item in enforce:
            choice("enforceNodeAllocatable", item, ENFORCE_NODE_ALLOCATABLE, "")
    period = doc.get("cpuCFSQuotaPeriod")
    max_pods = doc.get("maxPods", 110)
    # MaxPods is an int32 (kubelet config types.go); validation refuses a negative one.
    if isinstance(max_pods, bool) or not isinstance(max_pods, int) or not 0 <= max_pods < 2**31:
        raise fail("maxPods", f"expected a non-negative 32-bit integer, got {shown(max_pods)}")
    pids = doc.get("podPidsLimit", -1)
    if isinstance(pids, bool) or not isinstance(pids, int) or not -(2**63) <= pids < 2**63:  # int64
        raise fail("podPidsLimit", f"expected an integer, got {shown(pids)}")
    reserved_cgroups = {key: doc.get(key) or "" for key in ("systemReservedCgroup", "kubeReservedCgroup")}
    for key, value in reserved_cgroups.items():
        if not isinstance(value, str):
            raise fail(key, f"expected a cgroup name, got {shown(value)}")
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
        cpu_cfs_quota_period_us=_cfs_period_us(period, source) if period is not None else 100_000,
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
