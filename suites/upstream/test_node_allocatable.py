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
systemd's own system.slice. kubepods pids.max is not written by the reference agent yet and not checked here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pytest

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import CPU, MEMORY
from nodeconf.nodes.base import CgroupFiles, Node
from nodeconf.quantity import Quantity
from nodeconf.semantics.cgroup_paths import CGROUPFS, kubepods, reserved_cgroup
from nodeconf.semantics.expectation import Expected, NodeExpectation
from suites.toolkit.checks import check_node, seed_files
from suites.toolkit.compare import assert_matches, compare_value
from suites.toolkit.kubelet import Applied, Oracle
from suites.upstream.shared import module_kubelet

pytestmark = [pytest.mark.upstream_e2e]

PID = "pid"
SYSTEM, KUBE = "system-reserved", "kube-reserved"
RESERVES = {SYSTEM: {CPU: "100m", MEMORY: "100Mi", PID: "1000"}, KUBE: {CPU: "100m", MEMORY: "100Mi", PID: "738"}}
# upstream's literal expectations for each reserve cgroup (convertSharesToWeight(MilliCPUToShares(100)) = 4).
UPSTREAM = {SYSTEM: {"cpu.weight": "4", "memory.max": str(100 << 20), "pids.max": "1000"},
            KUBE: {"cpu.weight": "4", "memory.max": str(100 << 20), "pids.max": "738"}}
UPSTREAM_RULE = "upstream node_container_manager_test.go: the reserve cgroup carries its reservation"
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


def _read(node: Node, expectation: NodeExpectation, path: str) -> CgroupFiles:
    files = tuple(expectation.node_limits.get(path, {}))
    return node.node_cgroups(files).get(path, CgroupFiles(path, {}))


@pytest.mark.parametrize("reserve", [SYSTEM, KUBE])
def test_reserve_cgroup_carries_its_reservation(node: Node, oracle: Oracle, enforced: KubeletConfig,
                                                reserve: str) -> None:
    """Every file the oracle expects on the reserve cgroup (cpu.weight, memory.max, pids.max, hugetlb 0 for each
    size: enforceExistingCgroup → Update), and upstream's literal values."""
    expectation = oracle.expect([], enforced)
    path = reserved_cgroup(_names(enforced.cgroup_driver)[reserve], enforced.cgroup_driver)
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
