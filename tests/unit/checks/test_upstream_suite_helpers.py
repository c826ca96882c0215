"""The pure helpers of suites/upstream: upstream's restart rule, the PSI file shape and total, when the runtime
makes the container huge page limits not applicable, the pod-level hugepages entries' applicability and batches."""

from __future__ import annotations

import pytest

from nodeconf.node_facts import NodeFacts
from nodeconf.nodes.base import CgroupFiles
from nodeconf.semantics.cgroup_paths import reserved_cgroup
from suites.upstream.resize_table import (
    BURSTABLE,
    BURSTABLE_ORIGINAL,
    GUARANTEED,
    GUARANTEED_ORIGINAL,
    PLR_ORIGINAL,
    PLR_WITH_CONTAINERS,
    POD_LEVEL,
    expect_pod_level_restart,
    expect_restart,
)
from suites.upstream.test_hugepages import runtime_drops_container_limits
from suites.upstream.test_node_allocatable import (
    KUBE,
    SYSTEM,
    _at_max,
    _kubepods_limits_applicable,
    _linear_weight,
    _names,
)
from suites.upstream.test_pod_level_hugepages import ENTRIES, batches, not_applicable
from suites.upstream.test_psi import EXPECTED_SHAPE, shape, total

# cpu.pressure of a cgroup on a 6.1 kernel (both lines; cpu "full" is reported for cgroups since 5.13).
PRESSURE = "some avg10=0.00 avg60=1.25 avg300=0.31 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=42\n"


@pytest.mark.parametrize(("policy", "entry", "restarts"), [
    ("no-restart", "cpu", 0), ("cpu-restart", "cpu", 1), ("mem-restart", "cpu", 0), ("cpu-mem-restart", "mem", 1),
    ("mem-restart", "cpu-mem-opposite-directions", 1), ("cpu-restart", "mem", 0),
])
def test_guaranteed_restart_rule(policy: str, entry: str, restarts: int) -> None:
    assert expect_restart(policy, GUARANTEED_ORIGINAL, GUARANTEED[entry]) == restarts


@pytest.mark.parametrize(("policy", "entry", "restarts"), [
    ("cpu-restart", "cpu-limits", 1), ("mem-restart", "cpu-limits", 0), ("mem-restart", "mem-limits", 1),
    ("cpu-restart", "mem-requests", 0), ("no-restart", "all-resources-same-direction", 0),
])
def test_burstable_restart_rule(policy: str, entry: str, restarts: int) -> None:
    assert expect_restart(policy, BURSTABLE_ORIGINAL, BURSTABLE[entry]) == restarts


def test_pod_level_restarts_only_containers_without_values() -> None:
    own, desired = POD_LEVEL["pod-level-cpu"]
    assert own == PLR_WITH_CONTAINERS
    assert expect_pod_level_restart("cpu-restart", own, PLR_ORIGINAL, desired) == 0
    only, desired = POD_LEVEL["only-pod-level-mem"]
    assert [expect_pod_level_restart(p, only, PLR_ORIGINAL, desired)
            for p in ("no-restart", "cpu-restart", "mem-restart", "cpu-mem-restart")] == [0, 0, 1, 1]


def test_pressure_shape_and_total() -> None:
    assert shape(PRESSURE) == EXPECTED_SHAPE
    assert shape(None) is None
    assert shape("some avg10=0.00 total=1") != EXPECTED_SHAPE
    assert (total(PRESSURE), total(PRESSURE, "full")) == (123456, 42)
    with pytest.raises(AssertionError, match="no 'some' line"):
        total("")


def test_node_allocatable_reserve_names_stay_out_of_systemds_slices() -> None:
    """Under systemd the reserves expand below reserved.slice, never systemd's own system.slice; under cgroupfs they
    are upstream's names (node_container_manager_test.go)."""
    systemd = {reserved_cgroup(name, "systemd") for name in _names("systemd").values()}
    assert systemd == {"reserved.slice/reserved-system.slice", "reserved.slice/reserved-kube.slice"}
    assert _names("cgroupfs") == {SYSTEM: "system-reserved", KUBE: "kube-reserved"}
    assert _linear_weight(100) == 4  # upstream convertSharesToWeight(MilliCPUToShares(100m))
    events = CgroupFiles("x", {"memory.events": "low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\noom_group_kill 0"})
    assert (_at_max(events), _at_max(CgroupFiles("x", {}))) == (7, 0)


GIB = 1 << 30
BOTH = NodeFacts(memory_capacity=GIB, pid_capacity=100, hugepages=((2 << 20, 0),))


@pytest.mark.parametrize(("controller", "facts", "reason"), [
    ("pids", NodeFacts(memory_capacity=GIB, pid_capacity=100, cgroup_controllers=("memory",)), "no pids controller"),
    ("hugetlb", NodeFacts(memory_capacity=GIB, hugepages=((2 << 20, 0),), cgroup_controllers=("memory",)),
     "no hugetlb controller"),
    ("pids", NodeFacts(memory_capacity=GIB), "no `pid` capacity"),
    ("hugetlb", NodeFacts(memory_capacity=GIB), "no huge page size"),
])
def test_kubepods_limits_not_applicable_without_their_controller(controller: str, facts: NodeFacts,
                                                                 reason: str) -> None:
    with pytest.raises(pytest.skip.Exception, match=reason):
        _kubepods_limits_applicable(facts, controller)


@pytest.mark.parametrize("controller", ["pids", "hugetlb"])
def test_kubepods_limits_applicable_with_controller_and_capacity(controller: str) -> None:
    _kubepods_limits_applicable(BOTH, controller)


@pytest.mark.parametrize(("runtime", "version", "config", "applicable"), [
    ("containerd", "1.7.24~ds1", (("SystemdCgroup", "True"), ("disable_hugetlb_controller", "True")), False),
    ("containerd", "2.1.9", (("disable_hugetlb_controller", "False"),), True),
    ("runc", "1.1.15", (), True),
    ("direct", "", (), True),
])
def test_container_huge_page_limits_are_not_applicable_where_the_runtime_drops_them(
        runtime: str, version: str, config: tuple[tuple[str, str], ...], applicable: bool) -> None:
    reason = runtime_drops_container_limits(NodeFacts(memory_capacity=2**31, runtime=runtime, runtime_version=version,
                                                      runtime_config=config))
    assert (reason == "") == applicable
    if not applicable:
        assert f"{runtime} {version} runs with disable_hugetlb_controller=true" in reason
MI2, GI1 = 2 << 20, 1 << 30
HUGETLB = ("cpu", "memory", "hugetlb")


def test_hugepages_entries_run_where_upstream_pre_allocates_their_pages() -> None:
    """The reference VM's pool (eight 2 MiB pages, no 1 GiB page) runs the 2 MiB-only entries and no 1Gi entry;
    a node without the hugetlb controller none."""
    pools = {MI2: 16 << 20, GI1: 0}
    runnable = [i for i, e in ENTRIES.items() if not not_applicable(pools, HUGETLB, e)]
    assert runnable == [i for i in ENTRIES if "1Gi" not in i] and len(runnable) == 7
    assert "2 MiB pages only" in not_applicable(pools, HUGETLB, ENTRIES["plr-guaranteed-2Mi-1Gi"])
    assert "no hugetlb controller" in not_applicable(pools, ("cpu", "memory"), ENTRIES["hp-pod-2Mi"])


def test_hugepages_batches_fill_the_pool_in_table_order() -> None:
    """Eight 2 MiB pages: 10Mi + 6Mi, 10Mi + 6Mi, 4Mi × 3; a pool of 10Mi: 10, 6, 10, 6 + 4, 4 + 4."""
    two_mi = [i for i in ENTRIES if "1Gi" not in i]
    assert list(batches({MI2: 16 << 20}, two_mi).values()) == [0, 0, 1, 1, 2, 2, 2]
    assert list(batches({MI2: 10 << 20}, two_mi).values()) == [0, 1, 2, 3, 3, 4, 4]
