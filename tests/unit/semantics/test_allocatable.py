"""Node allocatable and kubepods limits (seed requests-limits-qos "How the scheduler uses requests")."""

from __future__ import annotations

import pytest

from nodeconf.errors import InputError
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.node_facts import NodeFacts
from nodeconf.quantity import Quantity
from nodeconf.semantics.allocatable import (
    allocatable_cpu_milli,
    allocatable_memory,
    check_reservation,
    effective_eviction_hard,
    kubepods_cpu_milli,
    kubepods_memory_bytes,
    reservation_error,
)
from suites.toolkit.builders import GI, KI, MI
from tests.unit.enforcer.enforcer_support import ARTICLE_NODE_MEMORY

ARTICLE_NODE = NodeFacts(memory_capacity=ARTICLE_NODE_MEMORY, cpu_capacity_milli=2000)


def reserves(cpu: str, memory: str) -> dict[str, Quantity]:
    return {"cpu": Quantity.parse(cpu), "memory": Quantity.parse(memory)}


def test_article_default_threshold_only() -> None:
    """`kubectl describe node`: capacity 3479660Ki, allocatable 3377260Ki, cpu 2 both."""
    assert allocatable_memory(ARTICLE_NODE, KubeletConfig()) == 3377260 * KI
    assert allocatable_cpu_milli(ARTICLE_NODE, KubeletConfig()) == 2000


def test_article_recommended_reserve() -> None:
    """Article: "with the reserve ... it would become cpu: 1600m"; memory: 3479660Ki − 512Mi − 512Mi − 200Mi."""
    config = KubeletConfig(system_reserved=reserves("200m", "512Mi"), kube_reserved=reserves("200m", "512Mi"),
                           eviction_hard={"memory.available": "200Mi"})
    assert allocatable_cpu_milli(ARTICLE_NODE, config) == 1600
    assert allocatable_memory(ARTICLE_NODE, config) == 3479660 * KI - 1224 * MI
    # "memory would shrink by about another 1.1 GiB": 3377260Ki − allocatable = 1124Mi ≈ 1.1 GiB.
    assert 3377260 * KI - allocatable_memory(ARTICLE_NODE, config) == 1124 * MI
    # kubepods holds capacity minus the reserves, never the eviction threshold.
    assert kubepods_memory_bytes(ARTICLE_NODE, config) == 3479660 * KI - 1024 * MI
    assert kubepods_cpu_milli(ARTICLE_NODE, config) == 1600


def test_without_pods_enforcement_kubepods_holds_capacity() -> None:
    config = KubeletConfig(system_reserved=reserves("200m", "512Mi"), enforce_node_allocatable=("none",))
    assert kubepods_memory_bytes(ARTICLE_NODE, config) == ARTICLE_NODE_MEMORY
    assert kubepods_cpu_milli(ARTICLE_NODE, config) == 2000


@pytest.mark.parametrize(
    ("eviction", "merge", "expected"),
    [
        pytest.param(None, False, {"memory.available": "100Mi", "nodefs.available": "10%",
                                   "nodefs.inodesFree": "5%", "imagefs.available": "15%"}, id="defaults"),
        pytest.param({"nodefs.available": "5%"}, False, {"nodefs.available": "5%"}, id="one-set-zeroes-others"),
        pytest.param({"nodefs.available": "5%"}, True, {"memory.available": "100Mi", "nodefs.available": "5%",
                                                        "nodefs.inodesFree": "5%", "imagefs.available": "15%"},
                     id="merged"),
    ],
)
def test_eviction_hard_merge_rule(eviction: dict[str, str] | None, merge: bool, expected: dict[str, str]) -> None:
    config = KubeletConfig(eviction_hard=eviction, merge_default_eviction_settings=merge)
    assert effective_eviction_hard(config) == expected


@pytest.mark.parametrize(
    ("eviction", "merge", "allocatable"),
    [
        pytest.param({"nodefs.available": "5%"}, False, 8 * GI, id="memory-threshold-zeroed"),
        pytest.param({"nodefs.available": "5%"}, True, 8 * GI - 100 * MI, id="memory-threshold-merged"),
        # float32(5)/100 = 13421773·2^-28, times 8Gi = 32·13421773 = 429496736 (not 429496729.6).
        pytest.param({"memory.available": "5%"}, False, 8 * GI - 429496736, id="percentage-is-float32"),
        # parseThresholdStatement drops "0%" and "100%" (no threshold at all), "100%" included: no reservation.
        pytest.param({"memory.available": "100%"}, False, 8 * GI, id="hundred-percent-ignored"),
        pytest.param({"memory.available": "0%"}, True, 8 * GI, id="zero-percent-ignored-not-merged-over"),
    ],
)
def test_memory_threshold(eviction: dict[str, str], merge: bool, allocatable: int) -> None:
    node = NodeFacts(memory_capacity=8 * GI)
    config = KubeletConfig(eviction_hard=eviction, merge_default_eviction_settings=merge)
    assert allocatable_memory(node, config) == allocatable


@pytest.mark.parametrize(
    ("cpu", "memory", "refused"),
    [
        pytest.param("4", "1Gi", ["cpu reservation 4000m > capacity 2000m"], id="cpu"),
        pytest.param("1", "8Gi", [f"memory reservation {8 * GI + 100 * MI} > capacity {8 * GI}"],
                     id="memory-with-eviction-threshold"),
        pytest.param("4", "16Gi", ["cpu reservation", "memory reservation"], id="both"),
        pytest.param("2", "1Gi", [], id="cpu-equal-capacity-is-allowed"),
    ],
)
def test_reserves_above_capacity_stop_the_kubelet(cpu: str, memory: str, refused: list[str]) -> None:
    """validateNodeAllocatable: reservation > capacity is a start-up error, not an allocatable of 0."""
    node = NodeFacts(memory_capacity=8 * GI, cpu_capacity_milli=2000)
    config = KubeletConfig(system_reserved=reserves(cpu, memory), source="k.yaml")
    error = reservation_error(node, config)
    if not refused:
        assert error is None
        check_reservation(node, config)
        return
    assert error is not None and error.startswith("the kubelet refuses to start (Node Allocatable: expected")
    assert all(part in error for part in refused), error
    with pytest.raises(InputError, match=r"^k.yaml: KubeletConfiguration: systemReserved/kubeReserved: the kubelet"):
        check_reservation(node, config)


def test_bad_threshold_names_the_field() -> None:
    config = KubeletConfig(eviction_hard={"memory.available": "lots"}, source="k.yaml")
    with pytest.raises(InputError, match=r"k.yaml: KubeletConfiguration: evictionHard.memory.available"):
        allocatable_memory(ARTICLE_NODE, config)
