"""The KubeletConfiguration (kubelet.config.k8s.io/v1beta1) fields that decide node resources: one table (FIELDS)
from which parsing, writing and the comparison with a live node's config derive.

Source: staging/src/k8s.io/kubelet/config/v1beta1/types.go and defaults.go; issue 12 (KubeletConfig fields in one
table)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from nodeconf.errors import InputError, shown
from nodeconf.go_duration import go_duration, parse_go_duration
from nodeconf.quantity import Quantity, QuantityError, beyond_int64

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
# kubelet validation (pkg/kubelet/apis/config/validation/validation.go): cpuCFSQuotaPeriod within 1ms..1s inclusive.
CFS_PERIOD_NS = (10**6, 10**9)
MAX_DURATION_TEXT = 100
# runtimeRequestTimeout: the bound of each CRI call the kubelet makes (pkg/kubelet/kubelet.go PreInitRuntimeService
# hands it to cri-client NewRemoteRuntimeService and NewRemoteImageService); v1beta1 defaults.go
# SetDefaults_KubeletConfiguration turns a zero one into 2m0s.
DEFAULT_RUNTIME_REQUEST_TIMEOUT_NS = 120 * 10**9
# cpuManagerPolicy (pkg/kubelet/cm/cpumanager cpu_manager.go NewManager: any other name is "unknown policy") and the
# static policy's options nodeconf models (policy_options.go: values are strconv.ParseBool strings); the others are
# accepted only when "false", since nodeconf models no NUMA, socket or SMT layout (semantics/cpu_manager.py).
CPU_MANAGER_POLICIES = ("none", "static")
CPU_MANAGER_STATIC = "static"
CPU_MANAGER_OPTIONS = ("full-pcpus-only", "distribute-cpus-across-numa", "align-by-socket",
                       "distribute-cpus-across-cores", "strict-cpu-reservation", "prefer-align-cpus-by-uncorecache")
MODELLED_CPU_MANAGER_OPTIONS = ("full-pcpus-only",)
_BOOL_TEXT = {"1": "true", "t": "true", "T": "true", "true": "true", "TRUE": "true", "True": "true",
              "0": "false", "f": "false", "F": "false", "false": "false", "FALSE": "false", "False": "false"}
MAX_CPU_ID = 4096


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
    # cpuManagerPolicy, its options (normalised "true"/"false") and reservedSystemCPUs (a cpuset list, "" = unset).
    cpu_manager_policy: str = "none"
    cpu_manager_policy_options: Mapping[str, str] = field(default_factory=dict)
    reserved_system_cpus: str = ""
    # runtimeRequestTimeout in nanoseconds: how long the kubelet waits for each CRI call (enforcer/cri, oci_runtime).
    runtime_request_timeout_ns: int = DEFAULT_RUNTIME_REQUEST_TIMEOUT_NS
    source: str = ""

    @property
    def runtime_request_timeout(self) -> float:
        """runtimeRequestTimeout in seconds."""
        return self.runtime_request_timeout_ns / 10**9

    def gate(self, name: str) -> bool | None:
        """The gate's value when the config sets it, else None (the profile decides)."""
        return self.feature_gates.get(name)


Fail = Callable[[str, str], InputError]
# A field's reader: (value in the document or None, the field's path, fail) → the attribute's value.
Read = Callable[[Any, str, Fail], Any]
# A field's writer: the attribute's value → the document's value, or OMIT to leave the field out.
Write = Callable[[Any], Any]
OMIT = object()


def _cfs_period_us(value: Any, path: str, fail: Fail) -> int:
    """cpuCFSQuotaPeriod in microseconds; refused as the kubelet refuses it (unparsable, or outside 1ms..1s)."""
    text = value if isinstance(value, str) else None
    if text is None or len(text) > MAX_DURATION_TEXT or (nanoseconds := parse_go_duration(text)) is None:
        raise fail(path, f"invalid duration {shown(value)}")
    low, high = CFS_PERIOD_NS
    if not low <= nanoseconds <= high:
        raise fail(path, f"invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {shown(text)} must be "
                         "between 1ms and 1sec, inclusive")
    return nanoseconds // 1000


def _request_timeout_ns(value: Any, path: str, fail: Fail) -> int:
    """runtimeRequestTimeout (a metav1.Duration: a time.ParseDuration string); zero or unset is the 2m0s default.
    A negative one is refused: NewRemoteRuntimeService checks the runtime with a Version call under it, which would
    fail at once, and the kubelet does not start."""
    if value is None:
        return DEFAULT_RUNTIME_REQUEST_TIMEOUT_NS
    text = value if isinstance(value, str) else None
    if text is None or len(text) > MAX_DURATION_TEXT or (nanoseconds := parse_go_duration(text)) is None:
        raise fail(path, f"invalid duration {shown(value)} (expected a duration such as \"2m0s\")")
    if nanoseconds < 0:
        raise fail(path, f"{shown(text)} is negative: every CRI call would fail at once")
    return nanoseconds or DEFAULT_RUNTIME_REQUEST_TIMEOUT_NS


def runtime_request_timeout_flag(text: str) -> int:
    """The kubelet's `--runtime-request-timeout` flag in nanoseconds (the field's rules); InputError naming it."""
    def fail(path: str, problem: str) -> InputError:
        return InputError(problem, field=path)
    return _request_timeout_ns(text, "--runtime-request-timeout", fail)


class Compared(Enum):
    """How the kube driver holds a live node's value against the requested one (nodes/kube/facts.py)."""

    EQUAL = "equal"
    UNLESS_UNSET = "equal unless the request leaves it unset (the kubelet default, shown expanded)"
    OWN_RULE = "by a rule of its own (feature gates per profile, evictionHard on memory.available)"
    NEVER = "never (does not decide node resources)"


@dataclass(frozen=True)
class ConfigField:
    """One KubeletConfig attribute: its KubeletConfiguration path, how it is read and written, and compared."""

    attr: str
    path: str
    read: Read
    write: Write
    compared: Compared = Compared.EQUAL
    absent: Any = None  # what the reader sees when the document leaves the field out


def _choice(allowed: tuple[str, ...], default: str) -> Read:
    def read(value: Any, path: str, fail: Fail) -> str:
        if value in (None, ""):
            return default
        if value not in allowed:
            raise fail(path, f"unknown value {shown(value)} (expected one of {', '.join(allowed)})")
        return str(value)
    return read


def _flag(default: bool) -> Read:
    def read(value: Any, path: str, fail: Fail) -> bool:
        if value is None:
            return default
        if not isinstance(value, bool):
            raise fail(path, f"expected true or false, got {shown(value)}")
        return value
    return read


def _resources(value: Any, path: str, fail: Fail) -> dict[str, Quantity]:
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


def _gates(value: Any, path: str, fail: Fail) -> dict[str, bool]:
    gates = value or {}
    if not isinstance(gates, Mapping) or not all(isinstance(v, bool) for v in gates.values()):
        raise fail(path, "expected a mapping of gate names to true or false")
    return {str(k): v for k, v in gates.items()}


def _factor(value: Any, path: str, fail: Fail) -> float | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1):
        raise fail(path, f"expected a number in (0, 1], got {shown(value)}")
    return float(value) if value is not None else None


def _eviction(value: Any, path: str, fail: Fail) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        raise fail(path, "expected a mapping of signal to threshold (strings)")
    return {str(k): str(v) for k, v in value.items()}


def _enforce(value: Any, path: str, fail: Fail) -> tuple[str, ...]:
    if value is None:
        return ("pods",)
    if not isinstance(value, list):
        raise fail(path, "expected a list")
    for item in value:
        _choice(ENFORCE_NODE_ALLOCATABLE, "")(item, path, fail)
    return tuple(value)


def _period(value: Any, path: str, fail: Fail) -> int:
    return _cfs_period_us(value, path, fail) if value is not None else 100_000


def _count(low: int, high: int, expected: str) -> Read:
    def read(value: Any, path: str, fail: Fail) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value < high:
            raise fail(path, f"expected {expected}, got {shown(value)}")
        return value
    return read


def _cgroup_name(value: Any, path: str, fail: Fail) -> str:
    value = value or ""
    if not isinstance(value, str):
        raise fail(path, f"expected a cgroup name, got {shown(value)}")
    return value


def parse_cpuset(text: str) -> frozenset[int]:
    """The CPU ids of a cpuset list ("0-3,8"; k8s.io/utils/cpuset Parse); ValueError names a bad one."""
    cpus: set[int] = set()
    for part in text.split(",") if text.strip() else ():
        low, _, high = part.strip().partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise ValueError(f"invalid cpuset {text!r}")
        first, last = int(low), int(high or low)
        if first > last or last > MAX_CPU_ID:
            raise ValueError(f"invalid cpuset {text!r}")
        cpus.update(range(first, last + 1))
    return frozenset(cpus)


def _cpuset(value: Any, path: str, fail: Fail) -> str:
    if value in (None, ""):
        return ""
    if not isinstance(value, str):
        raise fail(path, f"expected a cpuset list such as \"0-1\", got {shown(value)}")
    try:
        parse_cpuset(value)
    except ValueError as err:
        raise fail(path, str(err)) from None
    return value


def _cpu_options(value: Any, path: str, fail: Fail) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        raise fail(path, "expected a mapping of option names to \"true\" or \"false\"")
    out = {}
    for name, text in value.items():
        if name not in CPU_MANAGER_OPTIONS:
            raise fail(f"{path}.{name}", f"unknown CPU Manager policy option {shown(name)}")
        if text not in _BOOL_TEXT:
            raise fail(f"{path}.{name}", f"expected \"true\" or \"false\", got {shown(text)}")
        if _BOOL_TEXT[text] == "true" and name not in MODELLED_CPU_MANAGER_OPTIONS:
            raise fail(f"{path}.{name}", "changes which CPUs the static policy hands out, which nodeconf does not "
                                         "model (it models full-pcpus-only only)")
        out[str(name)] = _BOOL_TEXT[text]
    return out


def _same(value: Any) -> Any:
    return value


def _quantities(value: Mapping[str, Quantity]) -> dict[str, str]:
    return {k: str(v) for k, v in value.items()}


def _unless(empty: Any, write: Write = _same) -> Write:
    return lambda value: OMIT if value == empty else write(value)


FIELDS: tuple[ConfigField, ...] = (
    ConfigField("swap_behavior", "memorySwap.swapBehavior", _choice(SWAP_BEHAVIORS, "NoSwap"), _same),
    ConfigField("feature_gates", "featureGates", _gates, dict, Compared.OWN_RULE),
    ConfigField("memory_reservation_policy", "memoryReservationPolicy", _choice(RESERVATION_POLICIES, "None"),
                _same),
    ConfigField("system_reserved", "systemReserved", _resources, _quantities),
    ConfigField("kube_reserved", "kubeReserved", _resources, _quantities),
    ConfigField("merge_default_eviction_settings", "mergeDefaultEvictionSettings", _flag(False), _same,
                Compared.NEVER),
    ConfigField("enforce_node_allocatable", "enforceNodeAllocatable", _enforce, list),
    ConfigField("cgroup_driver", "cgroupDriver", _choice(CGROUP_DRIVERS, "systemd"), _same),
    ConfigField("single_process_oom_kill", "singleProcessOOMKill", _flag(False), _same),
    ConfigField("cpu_cfs_quota", "cpuCFSQuota", _flag(True), _same),
    ConfigField("cpu_cfs_quota_period_us", "cpuCFSQuotaPeriod", _period, lambda us: f"{us}us"),
    # MaxPods is an int32 (kubelet config types.go), podPidsLimit an int64; validation refuses a negative maxPods.
    ConfigField("max_pods", "maxPods", _count(0, 2**31, "a non-negative 32-bit integer"), _same, absent=110),
    ConfigField("pod_pids_limit", "podPidsLimit", _count(-(2**63), 2**63, "an integer"), _same, absent=-1),
    ConfigField("system_reserved_cgroup", "systemReservedCgroup", _cgroup_name, _unless("")),
    ConfigField("kube_reserved_cgroup", "kubeReservedCgroup", _cgroup_name, _unless("")),
    ConfigField("memory_throttling_factor", "memoryThrottlingFactor", _factor, _unless(None), Compared.UNLESS_UNSET),
    ConfigField("eviction_hard", "evictionHard", _eviction, _unless(None, dict), Compared.OWN_RULE),
    ConfigField("cpu_manager_policy", "cpuManagerPolicy", _choice(CPU_MANAGER_POLICIES, "none"), _unless("none")),
    ConfigField("cpu_manager_policy_options", "cpuManagerPolicyOptions", _cpu_options, _unless({}, dict)),
    ConfigField("reserved_system_cpus", "reservedSystemCPUs", _cpuset, _unless("")),
    ConfigField("runtime_request_timeout_ns", "runtimeRequestTimeout", _request_timeout_ns,
                _unless(DEFAULT_RUNTIME_REQUEST_TIMEOUT_NS, go_duration), Compared.NEVER),
)
# Reserves that, when enforced, need their cgroup named (pkg/kubelet/apis/config/validation
# ValidateKubeletConfiguration).
_ENFORCED_RESERVES = (("system_reserved_cgroup", "system-reserved"), ("kube_reserved_cgroup", "kube-reserved"))


def _lookup(doc: Mapping[str, Any], path: str, absent: Any, fail: Fail) -> Any:
    """The value at a dotted path (`absent` when the document leaves it out); an enclosing field that is not a
    mapping fails."""
    *parents, leaf = path.split(".")
    for depth, key in enumerate(parents):
        doc = doc.get(key) or {}
        if not isinstance(doc, Mapping):
            raise fail(".".join(parents[: depth + 1]), "expected a mapping")
    return doc.get(leaf, absent)


def kubelet_config_from_dict(doc: Any, source: str = "") -> KubeletConfig:
    """Parse a KubeletConfiguration document; InputError names the field of any bad value."""
    obj = "KubeletConfiguration"

    def fail(path: str, problem: str) -> InputError:
        return InputError(problem, source=source, obj=obj, field=path)

    if not isinstance(doc, Mapping):
        raise InputError("not a KubeletConfiguration document", source=source)
    if doc.get("kind", obj) != obj:
        raise fail("kind", f"expected {obj}, got {shown(doc.get('kind'))}")
    values = {f.attr: f.read(_lookup(doc, f.path, f.absent, fail), f.path, fail) for f in FIELDS}
    paths = {f.attr: f.path for f in FIELDS}
    for attr, enforced in _ENFORCED_RESERVES:
        if enforced in values["enforce_node_allocatable"] and not values[attr]:
            raise fail(paths[attr], f"must be specified when {enforced!r} is in enforceNodeAllocatable")
    return KubeletConfig(**values, source=source)


def kubelet_config_to_dict(config: KubeletConfig) -> dict[str, Any]:
    """The config as a KubeletConfiguration document (what crosses the wire to a node agent)."""
    doc: dict[str, Any] = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration"}
    for f in FIELDS:
        value = f.write(getattr(config, f.attr))
        if value is OMIT:
            continue
        *parents, leaf = f.path.split(".")
        target = doc
        for key in parents:
            target = target.setdefault(key, {})
        target[leaf] = value
    return doc
