"""The exact busctl command lines for the kubelet's systemd cgroup driver (enforcer/systemd_units.py).

Expected argv follow RUNTIME-FACTS §2c/§3e/§4: runc's systemd v2 Apply properties in their order, busctl's
`StartTransientUnit 'ssa(sv)a(sa(sv))' NAME replace N … 0` shape, addCPUQuota's rounding up to 10 ms per second.
"""

from __future__ import annotations

import pytest

from nodeconf.enforcer import systemd_units as su

CALL = ["busctl", "call", "--", "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
        "org.freedesktop.systemd1.Manager"]
ACCOUNTING = ["MemoryAccounting", "b", "true", "CPUAccounting", "b", "true", "IOAccounting", "b", "true",
              "TasksAccounting", "b", "true", "DefaultDependencies", "b", "false"]
MAX = "18446744073709551615"
POD = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_ab.slice"


@pytest.mark.parametrize(("path", "parent"), [
    ("kubepods.slice", "-.slice"),
    ("kubepods.slice/kubepods-besteffort.slice", "kubepods.slice"),
    ("kubepods.slice/kubepods-burstable.slice", "kubepods.slice"),
    (POD, "kubepods-burstable.slice"),
    ("kubepods.slice/kubepods-pod9_9.slice", "kubepods.slice"),
])
def test_a_slice_starts_wanting_its_parent_with_accounting_and_no_default_dependencies(path: str,
                                                                                       parent: str) -> None:
    name = path.rsplit("/", 1)[-1]
    assert su.start_unit(path, "nodeconf agent /s") == [
        *CALL, "StartTransientUnit", "ssa(sv)a(sa(sv))", name, "replace", "7",
        "Description", "s", "nodeconf agent /s", "Wants", "as", "1", parent, *ACCOUNTING, "0"]


def test_a_scope_sits_in_its_pod_slice_delegated_with_its_pid() -> None:
    assert su.start_unit(f"{POD}/cri-containerd-abc.scope", "nodeconf agent /s", pid=4242) == [
        *CALL, "StartTransientUnit", "ssa(sv)a(sa(sv))", "cri-containerd-abc.scope", "replace", "9",
        "Description", "s", "nodeconf agent /s", "Slice", "s", "kubepods-burstable-pod1234_ab.slice",
        "Delegate", "b", "true", "PIDs", "au", "1", "4242", *ACCOUNTING, "0"]


@pytest.mark.parametrize("pid", [None, 0, -1])
def test_a_scope_without_a_process_is_refused(pid: int | None) -> None:
    with pytest.raises(ValueError, match="needs the pid"):
        su.start_unit(f"{POD}/cri-containerd-abc.scope", "d", pid=pid)


@pytest.mark.parametrize("path", ["kubepods", "kubepods/burstable", "kubepods.slice/abc", ".slice", "", "a/.scope"])
def test_a_path_that_is_no_unit_is_refused(path: str) -> None:
    with pytest.raises(ValueError, match="not a systemd slice or scope"):
        su.start_unit(path, "d")


def test_stop_reset_failed_and_get_unit() -> None:
    assert su.stop_unit(POD) == [*CALL, "StopUnit", "ss", "kubepods-burstable-pod1234_ab.slice", "replace"]
    assert su.reset_failed("kubepods.slice/x.scope") == [*CALL, "ResetFailedUnit", "s", "x.scope"]
    assert su.get_unit("kubepods.slice") == [*CALL, "GetUnit", "s", "kubepods.slice"]


def test_set_properties_is_runtime_only_with_the_count_first() -> None:
    props = su.resource_properties({"cpu.weight": "39", "memory.max": "134217728"})
    assert su.set_properties(POD, props) == [
        *CALL, "SetUnitProperties", "sba(sv)", "kubepods-burstable-pod1234_ab.slice", "true", "2",
        "CPUWeight", "t", "39", "MemoryMax", "t", "134217728"]


def test_no_properties_is_an_empty_array() -> None:
    assert su.set_properties("kubepods.slice", []) == [
        *CALL, "SetUnitProperties", "sba(sv)", "kubepods.slice", "true", "0"]


@pytest.mark.parametrize(("file", "value", "expected"), [
    ("cpu.weight", "1", [("CPUWeight", "t", "1")]),
    ("cpu.weight", "10000\n", [("CPUWeight", "t", "10000")]),
    ("memory.max", "max", [("MemoryMax", "t", MAX)]),
    ("memory.max", "134217728", [("MemoryMax", "t", "134217728")]),
    ("memory.min", "67108864", [("MemoryMin", "t", "67108864")]),
    ("memory.low", "0", [("MemoryLow", "t", "0")]),
    ("memory.high", "max", [("MemoryHigh", "t", MAX)]),
    ("memory.swap.max", "0", [("MemorySwapMax", "t", "0")]),
    ("pids.max", "max", [("TasksMax", "t", MAX)]),
    ("pids.max", "1024", [("TasksMax", "t", "1024")]),
    # addCPUQuota: quota·1e6/period, rounded up to a multiple of 10 000 µs per second.
    ("cpu.max", "50000 100000", [("CPUQuotaPeriodUSec", "t", "100000"), ("CPUQuotaPerSecUSec", "t", "500000")]),
    ("cpu.max", "123400 100000", [("CPUQuotaPeriodUSec", "t", "100000"), ("CPUQuotaPerSecUSec", "t", "1240000")]),
    ("cpu.max", "1000 100000", [("CPUQuotaPeriodUSec", "t", "100000"), ("CPUQuotaPerSecUSec", "t", "10000")]),
    ("cpu.max", "1001 100000", [("CPUQuotaPeriodUSec", "t", "100000"), ("CPUQuotaPerSecUSec", "t", "20000")]),
    ("cpu.max", "25000 50000", [("CPUQuotaPeriodUSec", "t", "50000"), ("CPUQuotaPerSecUSec", "t", "500000")]),
    ("cpu.max", "max 100000", [("CPUQuotaPeriodUSec", "t", "100000"), ("CPUQuotaPerSecUSec", "t", MAX)]),
    ("cpu.max", "max", [("CPUQuotaPeriodUSec", "t", "100000"), ("CPUQuotaPerSecUSec", "t", MAX)]),
    ("cpu.max", "30000", [("CPUQuotaPeriodUSec", "t", "100000"), ("CPUQuotaPerSecUSec", "t", "300000")]),
    # No unit property: cgroupfs only (unifiedResToSystemdProps ignores them; Set writes them as files).
    ("memory.oom.group", "1", []),
    ("hugetlb.2MB.max", "0", []),
    ("cpu.idle", "0", []),
])
def test_each_file_maps_to_its_property(file: str, value: str, expected: list[tuple[str, str, str]]) -> None:
    props = su.resource_properties({file: value})
    assert [(p.name, p.signature, *p.words) for p in props] == expected


def test_properties_keep_the_order_of_the_files() -> None:
    props = su.resource_properties({"pids.max": "max", "memory.oom.group": "1", "cpu.weight": "4",
                                    "cpu.max": "max 100000", "memory.swap.max": "0"})
    assert [p.name for p in props] == ["TasksMax", "CPUWeight", "CPUQuotaPeriodUSec", "CPUQuotaPerSecUSec",
                                       "MemorySwapMax"]


@pytest.mark.parametrize(("file", "value"), [
    ("cpu.weight", "abc"), ("cpu.weight", "-1"), ("memory.max", "1e9"), ("cpu.max", ""),
    ("cpu.max", "1 2 3"), ("cpu.max", "50000 0"), ("pids.max", "18446744073709551616"),
])
def test_a_value_that_is_no_property_is_refused(file: str, value: str) -> None:
    with pytest.raises(ValueError, match="cannot be a systemd unit property"):
        su.resource_properties({file: value})


def test_typed_values_render_as_busctl_words() -> None:
    assert su.strings("Wants", ["a.slice", "b.slice"]).argv() == ["Wants", "as", "2", "a.slice", "b.slice"]
    assert su.pids([1, 2]).argv() == ["PIDs", "au", "2", "1", "2"]
    assert su.boolean("Delegate", False).argv() == ["Delegate", "b", "false"]
    assert su.uint("TasksMax", su.INFINITY).argv() == ["TasksMax", "t", MAX]
