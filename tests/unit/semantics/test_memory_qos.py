"""Memory QoS oracle against the v1.36 post's numbers and the per-version rules (v1.37 null factor, #137685)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import pytest

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.loader import load_kubelet_config, load_objects
from nodeconf.manifest import Container, Pod, Resources
from nodeconf.node_facts import NodeFacts
from nodeconf.quantity import Quantity
from nodeconf.semantics import memory_qos
from nodeconf.semantics.expectation import Expected, QosClass
from nodeconf.semantics.profile import Profile, profile_for

QOS_DIR = Path(__file__).resolve().parents[3] / "workloads" / "memory-qos"
GI = 2**30
MI = 2**20
NODE = NodeFacts(memory_capacity=8 * GI, swap_capacity=0, kernel_version="6.1.0-28-amd64")
TIERED = load_kubelet_config(QOS_DIR / "kubelet-tiered-reservation.yaml")
THROTTLING_ONLY = load_kubelet_config(QOS_DIR / "kubelet-throttling-only.yaml")
V136 = profile_for("1.36", TIERED)
G, B, BE = QosClass.GUARANTEED, QosClass.BURSTABLE, QosClass.BEST_EFFORT
# Node allocatable for memory.high is capacity − reserves, without the eviction threshold
# (GetNodeAllocatableAbsolute): 0.9 × 8Gi = 7730941132.8 → 1887436 pages.
BEST_EFFORT_HIGH = "7730937856"
# 512Mi + 0.9 × (1Gi − 512Mi) = 1020054732.8 → 249036 pages of 4096.
BURSTABLE_HIGH = "1020051456"


def pod(name: str) -> Pod:
    (found,) = load_objects([QOS_DIR / f"{name}.yaml"])
    assert isinstance(found, Pod)
    return found


def values(files: Mapping[str, Expected]) -> dict[str, str]:
    return {name: e.value for name, e in files.items()}


def container_values(p: Pod, qos: QosClass, config: KubeletConfig, profile: Profile,
                     node: NodeFacts = NODE) -> dict[str, str]:
    return values(memory_qos.container_files(p, p.containers[0], qos, node, config, profile))


def test_post_guaranteed_512mi_memory_min() -> None:
    p = pod("guaranteed-512mi")
    assert values(memory_qos.pod_files(p, G, NODE, TIERED, V136)) == {
        "memory.min": "536870912", "memory.low": "0", "memory.high": "max"}
    assert container_values(p, G, TIERED, V136) == {
        "memory.min": "536870912", "memory.low": "0", "memory.high": "max"}


def test_post_burstable_512mi_memory_low() -> None:
    p = pod("burstable-512mi")
    assert values(memory_qos.pod_files(p, B, NODE, TIERED, V136)) == {
        "memory.min": "0", "memory.low": "536870912", "memory.high": "max"}
    assert container_values(p, B, TIERED, V136) == {
        "memory.min": "0", "memory.low": "536870912", "memory.high": BURSTABLE_HIGH}


def test_post_besteffort_row_with_shipped_deviation() -> None:
    files = memory_qos.container_files(pod("besteffort"), pod("besteffort").containers[0], BE, NODE, TIERED, V136)
    assert values(files) == {"memory.min": "0", "memory.low": "0", "memory.high": BEST_EFFORT_HIGH}
    high = files["memory.high"]
    assert high.accepts(BEST_EFFORT_HIGH) and high.accepts("max")
    assert "kubernetes#137685" in high.accepted["max"]
    assert not high.accepts("7636570112")


def test_besteffort_fixed_from_1_37_when_throttling_configured() -> None:
    high = memory_qos.container_files(pod("besteffort"), pod("besteffort").containers[0], BE, NODE, TIERED,
                                      profile_for("1.37", TIERED))["memory.high"]
    assert (high.value, dict(high.accepted)) == (BEST_EFFORT_HIGH, {})


@pytest.mark.parametrize(
    "version, config, expected",
    [
        pytest.param("1.36", KubeletConfig(feature_gates={"MemoryQoS": True}), BURSTABLE_HIGH,
                     id="1.36-default-factor-0.9"),
        pytest.param("1.37", KubeletConfig(), "max", id="1.37-default-factor-null"),
        pytest.param("1.38", KubeletConfig(), "max", id="1.38-default-factor-null"),
        pytest.param("1.37", KubeletConfig(memory_throttling_factor=0.9), BURSTABLE_HIGH, id="1.37-factor-0.9"),
        pytest.param("1.36", KubeletConfig(), "max", id="1.36-gate-off-by-default"),
        pytest.param("1.37", KubeletConfig(feature_gates={"MemoryQoS": False}, memory_throttling_factor=0.9),
                     "max", id="1.37-gate-off"),
    ],
)
def test_memory_high_by_version(version: str, config: KubeletConfig, expected: str) -> None:
    profile = profile_for(version, config)
    assert container_values(pod("burstable-512mi"), B, config, profile)["memory.high"] == expected


def test_throttling_only_policy_none_writes_no_protection() -> None:
    profile = profile_for("1.36", THROTTLING_ONLY)
    p = pod("burstable-512mi")
    assert container_values(p, B, THROTTLING_ONLY, profile) == {
        "memory.min": "0", "memory.low": "0", "memory.high": BURSTABLE_HIGH}
    g = pod("guaranteed-512mi")
    assert values(memory_qos.pod_files(g, G, NODE, THROTTLING_ONLY, profile))["memory.min"] == "0"
    levels = memory_qos.node_level_files({G: [g], B: [p]}, NODE, THROTTLING_ONLY, profile)
    assert {level: values(f) for level, f in levels.items()} == {
        lvl: {"memory.min": "0", "memory.low": "0"} for lvl in ("kubepods", "burstable", "besteffort")}


def test_gate_off_reads_like_the_article() -> None:
    profile = profile_for("1.36")
    for name, qos in (("guaranteed-512mi", G), ("burstable-512mi", B), ("besteffort", BE)):
        assert container_values(pod(name), qos, TIERED, profile) == {
            "memory.min": "0", "memory.low": "0", "memory.high": "max"}
    levels = memory_qos.node_level_files({G: [pod("guaranteed-512mi")]}, NODE, TIERED, profile)
    assert {level: values(f) for level, f in levels.items()} == {
        lvl: {"memory.min": "0", "memory.low": "0"} for lvl in ("kubepods", "burstable", "besteffort")}


def ctr(requests: dict[str, str], limits: dict[str, str]) -> Container:
    return Container("c", resources=Resources(
        requests={k: Quantity.parse(v) for k, v in requests.items()},
        limits={k: Quantity.parse(v) for k, v in limits.items()}))


@pytest.mark.parametrize(
    "container, config, node, expected",
    [
        # 512Mi + 0.9 × (8Gi − 1Gi − 512Mi) = 6818260582.4 → 1664614 pages; the eviction threshold is not
        # subtracted (GetNodeAllocatableAbsolute).
        pytest.param(ctr({"memory": "512Mi"}, {}),
                     replace(TIERED, system_reserved={"memory": Quantity.parse("1Gi")},
                             eviction_hard={"memory.available": "200Mi"}), NODE, "6818258944",
                     id="no-limit-uses-allocatable-with-reserves"),
        # 1020054732.8 / 65536 = 15564.5 pages → 15564 × 65536.
        pytest.param(ctr({"memory": "512Mi"}, {"memory": "1Gi"}), TIERED, replace(NODE, page_size=65536),
                     "1020002304", id="page-size-64k"),
        # 512Mi + 0.5 × 4096 floors back to the request: not above it, so not written.
        pytest.param(ctr({"memory": "512Mi"}, {"memory": "536875008"}), replace(TIERED, memory_throttling_factor=0.5),
                     NODE, "max", id="not-above-request"),
        pytest.param(ctr({"memory": "512Mi", "cpu": "1"}, {"memory": "512Mi"}), TIERED, NODE, "max",
                     id="request-eq-limit-in-burstable-pod"),
        # factor 0.5: 256Mi + 0.5 × 256Mi = 384Mi exactly.
        pytest.param(ctr({"memory": "256Mi"}, {"memory": "512Mi"}), replace(TIERED, memory_throttling_factor=0.5),
                     NODE, str(384 * MI), id="factor-0.5"),
    ],
)
def test_memory_high_formula(container: Container, config: KubeletConfig, node: NodeFacts, expected: str) -> None:
    p = Pod("p", containers=(container,))
    assert container_values(p, B, config, V136, node)["memory.high"] == expected


def test_cpu_only_burstable_container_follows_besteffort_rule() -> None:
    c = ctr({"cpu": "100m"}, {})
    high = memory_qos.container_files(Pod("p", containers=(c,)), c, B, NODE, TIERED, V136)["memory.high"]
    assert high.value == BEST_EFFORT_HIGH and "max" in high.accepted


SEVEN = [o for o in load_objects([QOS_DIR / "seven-gib-burstable.yaml"]) if isinstance(o, Pod)]
SEVEN_GIB = str(7 * GI)


@pytest.mark.parametrize(
    "version, expected_levels, expected_container, expected_metrics",
    [
        pytest.param(
            "1.35",
            {"kubepods": {"memory.min": SEVEN_GIB, "memory.low": "0"},
             "burstable": {"memory.min": SEVEN_GIB, "memory.low": "0"}},
            {"memory.min": str(4 * GI), "memory.low": "0"}, {}, id="old-scheme-memory-min"),
        pytest.param(
            "1.36",
            {"kubepods": {"memory.min": SEVEN_GIB, "memory.low": "0"},
             "burstable": {"memory.min": "0", "memory.low": SEVEN_GIB}},
            {"memory.min": "0", "memory.low": str(4 * GI)},
            {"kubelet_memory_qos_node_memory_min_bytes": 0, "kubelet_memory_qos_node_memory_low_bytes": 7 * GI},
            id="tiered-memory-low"),
        # 1.37: kubepods also carries memory.low = Σ Burstable requests (kubernetes#140267; upstream
        # qos_container_manager_linux_test TestQOSCgroupsWithSystemPartition expects it on the node root).
        pytest.param(
            "1.37",
            {"kubepods": {"memory.min": SEVEN_GIB, "memory.low": SEVEN_GIB},
             "burstable": {"memory.min": "0", "memory.low": SEVEN_GIB}},
            {"memory.min": "0", "memory.low": str(4 * GI)},
            {"kubelet_memory_qos_node_memory_min_bytes": 0, "kubelet_memory_qos_node_memory_low_bytes": 7 * GI},
            id="kubepods-memory-low-from-1.37"),
    ],
)
def test_post_seven_gib_of_burstable_requests(version: str, expected_levels: dict[str, dict[str, str]],
                                              expected_container: dict[str, str],
                                              expected_metrics: dict[str, int]) -> None:
    profile = profile_for(version, TIERED)
    by_qos = {B: SEVEN}
    levels = memory_qos.node_level_files(by_qos, NODE, TIERED, profile)
    assert {k: values(levels[k]) for k in expected_levels} == expected_levels
    first = SEVEN[0]
    observed = container_values(first, B, TIERED, profile)
    assert {k: observed[k] for k in expected_container} == expected_container
    assert memory_qos.metrics(by_qos, TIERED, profile) == expected_metrics


def test_post_metrics_example() -> None:
    # The post's /metrics sample: min 5.36870912e+08 (one 512Mi Guaranteed pod), low 2.147483648e+09 (2Gi).
    burstables = [replace(pod("burstable-512mi"), name=f"b{i}", uid="") for i in range(4)]
    by_qos = {G: [pod("guaranteed-512mi")], B: burstables, BE: [pod("besteffort")]}
    assert memory_qos.metrics(by_qos, TIERED, V136) == {
        "kubelet_memory_qos_node_memory_min_bytes": 536870912,
        "kubelet_memory_qos_node_memory_low_bytes": 2147483648,
    }
    assert memory_qos.metrics(by_qos, THROTTLING_ONLY, profile_for("1.36", THROTTLING_ONLY)) == {
        "kubelet_memory_qos_node_memory_min_bytes": 0, "kubelet_memory_qos_node_memory_low_bytes": 0}
    levels = memory_qos.node_level_files(by_qos, NODE, TIERED, V136)
    assert levels["kubepods"]["memory.min"].value == str(536870912 + 2147483648)
    assert levels["burstable"]["memory.low"].value == "2147483648"
    assert {e.value for e in levels["besteffort"].values()} == {"0"}


@pytest.mark.parametrize(
    "kernel, profile, warned",
    [
        pytest.param("5.4.0-150-generic", V136, True, id="5.4-warns"),
        pytest.param("5.8.18", V136, True, id="5.8-warns"),
        pytest.param("5.9.0", V136, False, id="5.9-ok"),
        pytest.param("6.1.0-28-amd64", V136, False, id="6.1-ok"),
        pytest.param("5.4.0", profile_for("1.36"), False, id="gate-off-silent"),
        pytest.param("5.4.0", profile_for("1.35", TIERED), False, id="before-1.36-no-check"),
    ],
)
def test_kernel_warning(kernel: str, profile: Profile, warned: bool) -> None:
    warnings = memory_qos.node_warnings(replace(NODE, kernel_version=kernel), TIERED, profile)
    assert bool(warnings) is warned
    assert all("5.9" in w and kernel in w for w in warnings)


KEP_MIXED = Path(__file__).resolve().parents[3] / "workloads" / "kep-5359" / "use-case-4-pod-level-swap-mixed.yaml"


@pytest.mark.parametrize(
    "version, factor, expected",
    [
        # pod-level 4Gi request, 8Gi limit: 4Gi + 0.9 × 4Gi = 8160437862.4 → 1992294 pages of 4096.
        pytest.param("1.37", 0.9, "8160436224", id="1.37-pod-level-limit"),
        pytest.param("1.38", 0.9, "8160436224", id="1.38-pod-level-limit"),
        pytest.param("1.37", None, "max", id="1.37-factor-null"),
        pytest.param("1.36", 0.9, "max", id="1.36-pod-keeps-max"),
    ],
)
def test_pod_level_memory_high(version: str, factor: float | None, expected: str) -> None:
    (mixed,) = load_objects([KEP_MIXED])
    assert isinstance(mixed, Pod)
    config = KubeletConfig(feature_gates={"MemoryQoS": True}, memory_throttling_factor=factor)
    files = memory_qos.pod_files(mixed, B, NODE, config, profile_for(version, config))
    assert files["memory.high"].value == expected


def test_pod_level_cpu_only_keeps_max() -> None:
    c = ctr({"cpu": "100m", "memory": "100Mi"}, {"cpu": "200m"})
    p = Pod("p", containers=(c,), resources=Resources(limits={"cpu": Quantity.parse("2")}))
    config = KubeletConfig(memory_throttling_factor=0.9)
    assert memory_qos.pod_files(p, B, NODE, config, profile_for("1.37", config))["memory.high"].value == "max"
