"""The busctl command lines of the kubelet's systemd cgroup driver: the kubepods, QoS and pod slices and the
container scopes as transient units, their resources as unit properties, stop and reset-failed. Pure (no I/O).

Source: RUNTIME-FACTS §2c, §3e, §4: k8s pkg/kubelet/cm/cgroup_manager_linux.go (Create = Apply(-1) then Set,
Update = Set; libctCgroupConfig: Name = last component of ToSystemd, Parent = the one above or `-.slice`);
opencontainers/cgroups systemd/v2.go (*UnifiedManager).Apply (Description, Wants= parent for a slice, Slice= and
Delegate= for a scope, PIDs, Memory/CPU/IO/TasksAccounting, DefaultDependencies=false; startUnit "replace"),
unifiedResToSystemdProps, common.go addCPUQuota; systemd org.freedesktop.systemd1(5) Manager methods; busctl(1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nodeconf.semantics.cpu import systemd_quota_per_second

# busctl(1) `call` of the systemd manager; `--` ends busctl's options (a unit name may start with `-`: `-.slice`).
MANAGER = ("busctl", "call", "--", "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
           "org.freedesktop.systemd1.Manager")
# USEC_INFINITY / CGROUP_LIMIT_MAX: `max` as a property value (uint64 all ones).
INFINITY = 2**64 - 1
DEFAULT_PERIOD_USEC = 100_000
ROOT_SLICE = "-.slice"
# The job mode runc's startUnit uses: replace a queued conflicting job.
MODE = "replace"
# Every unit the driver starts accounts all four controllers and has no default dependencies (runc Apply).
ACCOUNTING = ("MemoryAccounting", "CPUAccounting", "IOAccounting", "TasksAccounting")
# cgroup v2 files that are unit properties (unifiedResToSystemdProps); any other file is written to cgroupfs only.
MEMORY_PROPERTIES = {"memory.min": "MemoryMin", "memory.low": "MemoryLow", "memory.high": "MemoryHigh",
                     "memory.max": "MemoryMax", "memory.swap.max": "MemorySwapMax"}


@dataclass(frozen=True)
class Property:
    """One unit property as busctl takes it: name, D-Bus signature, the words of its value."""

    name: str
    signature: str
    words: tuple[str, ...]

    def argv(self) -> list[str]:
        return [self.name, self.signature, *self.words]


def uint(name: str, value: int) -> Property:
    if not 0 <= value <= INFINITY:
        raise ValueError(f"{name} {value} is not an unsigned 64-bit value")
    return Property(name, "t", (str(value),))


def boolean(name: str, value: bool) -> Property:
    return Property(name, "b", ("true" if value else "false",))


def string(name: str, value: str) -> Property:
    return Property(name, "s", (value,))


def strings(name: str, values: Sequence[str]) -> Property:
    return Property(name, "as", (str(len(values)), *values))


def pids(values: Sequence[int]) -> Property:
    return Property("PIDs", "au", (str(len(values)), *(str(p) for p in values)))


def unit_name(path: str) -> str:
    """The unit of a cgroup path: its last component, a `.slice` or a `.scope`."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if not name.endswith((".slice", ".scope")) or len(name) <= len(".slice"):
        raise ValueError(f"cgroup {path!r} is not a systemd slice or scope")
    return name


def parent_slice(path: str) -> str:
    """The slice a unit sits in: the component above it, `-.slice` for a top-level one (libctCgroupConfig)."""
    parts = path.strip("/").split("/")
    return unit_name("/".join(parts[:-1])) if len(parts) > 1 else ROOT_SLICE


def _call(method: str, signature: str, *words: str) -> list[str]:
    return [*MANAGER, method, signature, *words]


def _with_properties(method: str, signature: str, head: Sequence[str], properties: Sequence[Property],
                     tail: Sequence[str] = ()) -> list[str]:
    words = [w for p in properties for w in p.argv()]
    return _call(method, signature, *head, str(len(properties)), *words, *tail)


def unit_properties(path: str, description: str, pid: int | None = None) -> list[Property]:
    """What Apply starts a unit with: a slice wants its parent slice; a scope sits in it, delegated, with pid."""
    parent = parent_slice(path)
    if unit_name(path).endswith(".slice"):
        placement = [strings("Wants", [parent])]
    else:
        if pid is None or pid <= 0:
            raise ValueError(f"the scope {unit_name(path)} needs the pid of its process")
        placement = [string("Slice", parent), boolean("Delegate", True), pids([pid])]
    return [string("Description", description), *placement, *(boolean(a, True) for a in ACCOUNTING),
            boolean("DefaultDependencies", False)]


def start_unit(path: str, description: str, pid: int | None = None) -> list[str]:
    """StartTransientUnit(name, "replace", properties, no auxiliary units)."""
    return _with_properties("StartTransientUnit", "ssa(sv)a(sa(sv))", [unit_name(path), MODE],
                            unit_properties(path, description, pid), ["0"])


def set_properties(path: str, properties: Sequence[Property]) -> list[str]:
    """SetUnitProperties(name, runtime=true, properties): a change that lasts until the next boot."""
    return _with_properties("SetUnitProperties", "sba(sv)", [unit_name(path), "true"], properties)


def stop_unit(path: str) -> list[str]:
    return _call("StopUnit", "ss", unit_name(path), MODE)


def reset_failed(path: str) -> list[str]:
    return _call("ResetFailedUnit", "s", unit_name(path))


def get_unit(path: str) -> list[str]:
    """GetUnit(name): the unit's object path, an error when systemd has no such unit loaded."""
    return _call("GetUnit", "s", unit_name(path))


def cpu_quota_properties(quota: int, period: int) -> list[Property]:
    """CPUQuotaPeriodUSec and CPUQuotaPerSecUSec = quota·1s/period rounded up to 10 ms (quota ≤ 0: infinity)."""
    if period <= 0:
        raise ValueError(f"cpu period {period} must be positive")
    per_second = systemd_quota_per_second(quota, period) if quota > 0 else INFINITY
    return [uint("CPUQuotaPeriodUSec", period), uint("CPUQuotaPerSecUSec", per_second)]


def _limit(text: str) -> int:
    return INFINITY if text == "max" else int(text)


def resource_properties(files: Mapping[str, str]) -> list[Property]:
    """The unit properties for cgroup file values, as runc maps a unified map (cpu.weight, cpu.max, memory.*,
    pids.max); files with no property (memory.oom.group, hugetlb.*) are left out: they go to cgroupfs only."""
    out: list[Property] = []
    for file, value in files.items():
        text = value.strip()
        try:
            if file == "cpu.weight":
                out.append(uint("CPUWeight", int(text)))
            elif file == "cpu.max":
                fields = text.split()
                if not 1 <= len(fields) <= 2:
                    raise ValueError(text)
                quota = 0 if fields[0] == "max" else int(fields[0])
                out += cpu_quota_properties(quota, int(fields[1]) if len(fields) == 2 else DEFAULT_PERIOD_USEC)
            elif file in MEMORY_PROPERTIES:
                out.append(uint(MEMORY_PROPERTIES[file], _limit(text)))
            elif file == "pids.max":
                out.append(uint("TasksMax", _limit(text)))
        except ValueError:
            raise ValueError(f"{file} value {value!r} cannot be a systemd unit property") from None
    return out
