"""Node allocatable enforcement: with enforceNodeAllocatable [pods, system-reserved, kube-reserved] the kubelet writes
each reserve into its cgroup and limits kubepods to capacity minus both reserves.

Source: upstream test/e2e_node/node_container_manager_test.go "Node Container Manager [Serial]" / "Validate Node
Allocatable [NodeFeature:NodeAllocatable]" / "sets up the node and runs the test": setDesiredConfiguration (system
reserved cpu 100m, memory 100Mi, pid 1000; kube reserved cpu 100m, memory 100Mi, pid 738; evictionHard
memory.available 100Mi; cgroups `system-reserved`, `kube-reserved`), then kubepods cpu.weight and memory.max from
capacity − 200m / 200Mi and each reserve cgroup's cpu.weight (shares 102 → 4), memory.max (100Mi) and pids.max.
Upstream creates the reserve cgroups before it restarts the kubelet (createTemporaryCgroupsForReservation: the kubelet
requires them to exist); the reference agent creates them itself and marks them as nodeconf's. Upstream skips the
systemd driver (kubernetes#102394); under it nodeconf names the reserves `reserved-system` / `reserved-kube`, which the
driver expands to slices of their own (reserved.slice/reserved-system.slice), since upstream's names would expand into
systemd's own system.slice. Upstream also expects kubepods pids.max = MaxPID − 1738 (getAllocatableLimits). Beyond
upstream: kubepods hugetlb.<size>.max is each size's huge page capacity (getCgroupConfig HugePageLimits, none
reserved), and a process in the system-reserved cgroup is held to its memory.max.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pytest

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import CPU, MEMORY
from nodeconf.node_facts import NodeFacts
from nodeconf.nodes.base import CgroupFiles, Node, NotApplicable
from nodeconf.quantity import Quantity
from nodeconf.semantics.cgroup_paths import CGROUPFS, kubepods, reserved_cgroup
from nodeconf.semantics.expectation import Expected, NodeExpectation
from nodeconf.semantics.hugepages import hugetlb_file
from nodeconf.workloads import PROGRAMS_DIR
from suites.toolkit.checks import check_node, seed_files
from suites.toolkit.compare import assert_matches, compare_value
from suites.toolkit.kubelet import Applied, Oracle
from suites.upstream.shared import module_kubelet

pytestmark = [pytest.mark.upstream_e2e(
    file="test/e2e_node/node_container_manager_test.go",
    case="Node Container Manager [Serial] / Validate Node Allocatable [NodeFeature:NodeAllocatable] / "
         "sets up the node and runs the test")]

pytestmark.append(pytest.mark.runs_alone(
    "reconfigures the kubelet (reserves, enforceNodeAllocatable) and judges kubepods and the reserve cgroups"))

PID = "pid"
SYSTEM, KUBE = "system-reserved", "kube-reserved"
RESERVES = {SYSTEM: {CPU: "100m", MEMORY: "100Mi", PID: "1000"}, KUBE: {CPU: "100m", MEMORY: "100Mi", PID: "738"}}
# upstream's literal expectations for each reserve cgroup (convertSharesToWeight(MilliCPUToShares(100)) = 4).
UPSTREAM = {SYSTEM: {"cpu.weight": "4", "memory.max": str(100 << 20), "pids.max": "1000"},
            KUBE: {"cpu.weight": "4", "memory.max": str(100 << 20), "pids.max": "738"}}
UPSTREAM_RULE = "upstream node_container_manager_test.go: the reserve cgroup carries its reservation"
# More than the 100Mi memory.max: the hog's charges must meet the limit (swapped out or OOM-killed, both allowed).
HOG_MIB = 128
AT_MAX = ("kernel cgroup-v2.rst memory.events `max`: counts each time the cgroup's usage was about to go over "
          "memory.max (mm/memcontrol.c try_charge → memcg_memory_event MEMCG_MAX); a process touching more than "
          "memory.max in the cgroup meets it at least once")
PIDS_RULE = ("upstream node_container_manager_test.go getAllocatableLimits: kubepods pids.max = MaxPID − 1738 "
             "(the pid reserves)")
HUGETLB_RULE = ("node_container_manager_linux.go getCgroupConfig HugePageLimits: kubepods hugetlb.<size>.max = that "
                "size's capacity when no huge page is reserved")
KUBEPODS_RULE = ("upstream node_container_manager_test.go: kubepods memory.max = capacity − 200Mi (reserves, not the "
                 "eviction threshold), cpu.weight from capacity − 200m")


def _names(driver: str) -> dict[str, str]:
    """upstream's reserve cgroup names under cgroupfs; under systemd names that expand outside systemd's slices."""
    return {SYSTEM: SYSTEM, KUBE: KUBE} if driver == CGROUPFS else {SYSTEM: "reserved-system", KUBE: "reserved-kube"}


def _linear_weight(milli_cpu: int) -> int:
    """upstream convertSharesToWeight(MilliCPUToShares(m)): shares = max(2, m·1024/1000), 1 + (shares−2)·9999/262142."""
    shares = max(2, milli_cpu * 1024 // 1000)
    return 1 + ((shares - 2) * 9999) // 262142


@pytest.fixture(scope="module")
def enforced(node: Node, oracle: Oracle, base_config: KubeletConfig, _applied: Applied) -> KubeletConfig:
    """The node on upstream's setDesiredConfiguration, the reserve cgroups named for its cgroup driver."""
    names = _names(base_config.cgroup_driver)
    config = replace(
        base_config, enforce_node_allocatable=("pods", SYSTEM, KUBE), eviction_hard={"memory.available": "100Mi"},
        system_reserved={k: Quantity.parse(v) for k, v in RESERVES[SYSTEM].items()},
        kube_reserved={k: Quantity.parse(v) for k, v in RESERVES[KUBE].items()},
        system_reserved_cgroup=names[SYSTEM], kube_reserved_cgroup=names[KUBE])
    return module_kubelet(node, oracle, base_config, _applied).use(config)


def _reserve_path(config: KubeletConfig, reserve: str) -> str:
    return reserved_cgroup(_names(config.cgroup_driver)[reserve], config.cgroup_driver)


def _read(node: Node, expectation: NodeExpectation, path: str, extra: tuple[str, ...] = ()) -> CgroupFiles:
    files = (*expectation.node_limits.get(path, {}), *extra)
    return node.node_cgroups(files).get(path, CgroupFiles(path, {}))


def _at_max(files: CgroupFiles) -> int:
    """The `max` count of the cgroup's memory.events (0 when it was not read)."""
    for line in (files.get("memory.events") or "").splitlines():
        key, _, value = line.partition(" ")
        if key == "max":
            return int(value)
    return 0


@pytest.mark.parametrize("reserve", [SYSTEM, KUBE])
def test_reserve_cgroup_carries_its_reservation(node: Node, oracle: Oracle, enforced: KubeletConfig,
                                                reserve: str) -> None:
    """Every file the oracle expects on the reserve cgroup (cpu.weight, memory.max, pids.max, hugetlb 0 for each
    size: enforceExistingCgroup → Update), and upstream's literal values."""
    expectation = oracle.expect([], enforced)
    path = _reserve_path(enforced, reserve)
    want: Mapping[str, Expected] = expectation.node_limits.get(path, {})
    assert want, f"the oracle expects nothing on the reserve cgroup {path}"
    got = _read(node, expectation, path)
    assert_matches(f"{reserve} cgroup {path}", [
        *(compare_value("", "", path, name, e, got.get(name)) for name, e in want.items()),
        *seed_files("", "", got, UPSTREAM[reserve], UPSTREAM_RULE)])


def test_kubepods_is_capacity_minus_the_reserves(node: Node, oracle: Oracle, enforced: KubeletConfig) -> None:
    """kubepods and the QoS cgroups are the oracle's under both reserves (createNodeAllocatableCgroups: `pods`
    enforced), and kubepods memory.max / cpu.weight are upstream's capacity − 200Mi / 200m."""
    check_node(node, oracle.expect([], enforced), "node allocatable under the reserves")
    facts = oracle.facts
    got = node.node_cgroups()[kubepods(enforced.cgroup_driver)]
    memory = (facts.memory_capacity - (200 << 20)) // facts.page_size * facts.page_size
    assert_matches("kubepods under the reserves (upstream)", seed_files("", "", got, {
        "memory.max": str(memory), "cpu.weight": str(_linear_weight(facts.cpu_capacity_milli - 200))}, KUBEPODS_RULE))


def _kubepods_limits_applicable(facts: NodeFacts, controller: str) -> None:
    """Skip, with the reason, where the kubelet has no such limit to write on kubepods."""
    if controller not in facts.cgroup_controllers:
        pytest.skip(f"the node's cgroup v2 root offers no {controller} controller: the kubelet writes no {controller} "
                    "limit on kubepods")
    if controller == "pids" and facts.pid_capacity is None:
        pytest.skip("the node's kernel.pid_max / threads-max could not be read: no `pid` capacity")
    if controller == "hugetlb" and not facts.hugepages:
        pytest.skip("the node's kernel offers no huge page size (/sys/kernel/mm/hugepages empty)")


@pytest.mark.parametrize("controller", ["pids", "hugetlb"])
def test_kubepods_pids_and_hugepages_are_the_allocatable(node: Node, oracle: Oracle, enforced: KubeletConfig,
                                                         controller: str) -> None:
    """kubepods pids.max / hugetlb.<size>.max are the oracle's under both reserves (createNodeAllocatableCgroups,
    enforceNodeAllocatableCgroups → getCgroupConfig), and upstream's MaxPID − 1738 / each size's whole capacity
    (0 for a size with no page); not applicable without the controller."""
    facts = oracle.facts
    _kubepods_limits_applicable(facts, controller)
    expectation = oracle.expect([], enforced)
    path = kubepods(enforced.cgroup_driver)
    want = {name: e for name, e in expectation.node_limits.get(path, {}).items() if name.startswith(controller)}
    got = _read(node, expectation, path)
    if controller == "pids":
        assert facts.pid_capacity is not None  # _kubepods_limits_applicable
        reserved = int(RESERVES[SYSTEM][PID]) + int(RESERVES[KUBE][PID])
        literal, rule = {"pids.max": str(facts.pid_capacity - reserved)}, PIDS_RULE
    else:
        literal, rule = {hugetlb_file(size): str(total) for size, total in facts.hugepages}, HUGETLB_RULE
    assert_matches(f"kubepods {controller} limits under the reserves", [
        *(compare_value("", "", path, name, e, got.get(name)) for name, e in want.items()),
        *seed_files("", "", got, literal, rule)])


def test_a_process_in_system_reserved_is_held_to_its_memory_max(node: Node, oracle: Oracle,
                                                                enforced: KubeletConfig) -> None:
    """A process in the system-reserved cgroup touches 128 MiB under its 100Mi memory.max: the cgroup's memory.events
    `max` grows (the kernel stopped its charges at the limit, whether it then swapped or OOM-killed)."""
    expectation = oracle.expect([], enforced)
    path = _reserve_path(enforced, SYSTEM)
    memory_max = expectation.node_limits[path]["memory.max"]
    before = _read(node, expectation, path, ("memory.events",))
    rows = [compare_value("", "", path, "memory.max", memory_max, before.get("memory.max"))]
    if before.get("memory.max") is not None:
        try:
            result = node.exec_in_node_cgroup(path, ["python3", f"{PROGRAMS_DIR}/memhog.py", str(HOG_MIB), "--exit"],
                                              timeout=120)
        except NotApplicable as err:
            pytest.skip(str(err))
        assert result.rc in (0, 137), f"memhog exited {result.rc}: {result.stderr[-500:]}"
        after = _read(node, expectation, path, ("memory.events",))
        rows.append(compare_value("", "memhog", path, "memory.events max grew", Expected("yes", AT_MAX),
                                  "yes" if _at_max(after) > _at_max(before) else "no"))
    assert_matches(f"system-reserved cgroup {path} under a {HOG_MIB} MiB process", rows)
