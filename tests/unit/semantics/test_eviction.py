"""Memory-pressure eviction: the article's order (exceeding the request, priority, excess) and the decision."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import Container, Pod, Resources
from nodeconf.node_facts import NodeFacts
from nodeconf.quantity import Quantity
from nodeconf.semantics.allocatable import kubepods_memory_bytes
from nodeconf.semantics.eviction import (
    PidObservation,
    PodMemoryUsage,
    PodProcesses,
    PodsMemoryObservation,
    allocatable_memory_threshold,
    decide_memory_eviction,
    decide_pid_eviction,
    rank_for_memory_pressure,
    rank_for_pid_pressure,
)

MI = 2**20
NODE = NodeFacts(memory_capacity=2048 * MI)


def usage(name: str, request: str | None, used_mi: int, priority: int = 0,
          annotations: dict[str, str] | None = None) -> PodMemoryUsage:
    requests = {"memory": Quantity.parse(request)} if request else {}
    pod = Pod(name=name, containers=(Container("app", resources=Resources(requests=requests)),),
              priority_value=priority, annotations=annotations or {})
    return PodMemoryUsage(pod, {"app": used_mi * MI})


GUARANTEED = usage("guaranteed", "512Mi", 500)
BURSTABLE_OVER = usage("burstable-over", "256Mi", 400)
BURSTABLE_UNDER = usage("burstable-under", "1Gi", 300)
BEST_EFFORT = usage("besteffort", None, 100)
IMPORTANT_BEST_EFFORT = usage("important-besteffort", None, 900, priority=1000)


def test_rank_follows_the_article() -> None:
    # Exceeding pods first (by priority, then excess 144Mi > 100Mi), then those within their request
    # (usage − request −12Mi before −724Mi).
    ranked = rank_for_memory_pressure(
        [GUARANTEED, BURSTABLE_UNDER, BEST_EFFORT, IMPORTANT_BEST_EFFORT, BURSTABLE_OVER])
    assert [u.pod.name for u in ranked] == [
        "burstable-over", "besteffort", "important-besteffort", "guaranteed", "burstable-under"]


def test_pressure_evicts_the_first_ranked_pod_with_the_kubelet_message() -> None:
    # 2048Mi − (400 + 100 + 500 + 998)Mi = 50Mi available < the default 100Mi threshold.
    decision = decide_memory_eviction([GUARANTEED, BURSTABLE_OVER, BEST_EFFORT], NODE, KubeletConfig(),
                                      other_usage=998 * MI)
    assert decision.memory_pressure and decision.available == 50 * MI and decision.threshold == 100 * MI
    assert decision.victim is BURSTABLE_OVER.pod and decision.reason == "Evicted"
    assert decision.message == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. "
        "Container app was using 400Mi, request is 256Mi, has larger consumption of memory. "
    )


@pytest.mark.parametrize(
    "other_mi, config, pressure",
    [
        pytest.param(948, KubeletConfig(), False, id="available-equals-threshold"),
        pytest.param(949, KubeletConfig(), True, id="one-mi-below"),
        pytest.param(998, KubeletConfig(eviction_hard={"nodefs.available": "10%"}), False,
                     id="memory-threshold-zeroed-by-other-setting"),
        pytest.param(998, KubeletConfig(eviction_hard={"nodefs.available": "10%"},
                                        merge_default_eviction_settings=True), True, id="merged-defaults"),
        pytest.param(900, KubeletConfig(eviction_hard={"memory.available": "10%"}), True, id="percentage"),
    ],
)
def test_threshold(other_mi: int, config: KubeletConfig, pressure: bool) -> None:
    # Pods use 1000Mi; 2048Mi − 1000Mi − 948Mi = 100Mi available; 10% of 2048Mi = 204.8Mi > 148Mi (900Mi other).
    decision = decide_memory_eviction([GUARANTEED, BURSTABLE_OVER, BEST_EFFORT], NODE, config,
                                      other_usage=other_mi * MI)
    assert decision.memory_pressure is pressure
    assert (decision.victim is not None) is pressure


def test_critical_pods_are_skipped() -> None:
    static = usage("static-hog", None, 900, annotations={"kubernetes.io/config.source": "file"})
    decision = decide_memory_eviction([static, GUARANTEED], NODE, KubeletConfig(), other_usage=600 * MI)
    assert decision.memory_pressure and decision.victim is GUARANTEED.pod


# allocatableMemory.available, upstream eviction_test.go MemoryAllocatableEviction on the 2048Mi node: kubeReserved
# 2048Mi − 300Mi leaves kubepods a 300Mi memory.max, evictionHard memory.available 250Mi is copied to the allocatable
# signal; a BestEffort hog holding 128Mi and an innocent pod (request 50Mi) holding 4Mi; the kubepods working set
# adds 8Mi of pause processes and interpreter pages: 140Mi.
MEMORY_HOG = usage("memory-hog-pod", None, 128)
INNOCENT_POD = usage("innocent-pod", "50Mi", 4)
UPSTREAM_ALLOCATABLE = KubeletConfig(kube_reserved={"memory": Quantity.parse("1748Mi")},
                                     eviction_hard={"memory.available": "250Mi"})
KUBEPODS_LIMIT = 300 * MI


def test_allocatable_pressure_evicts_the_hog_with_the_allocatable_threshold() -> None:
    # allocatableMemory.available = 300Mi − 140Mi = 160Mi < 250Mi; memory.available = 2048Mi − (132 + 500)Mi =
    # 1416Mi is not below 250Mi: only the allocatable signal is met, and the message names its numbers.
    assert kubepods_memory_bytes(NODE, UPSTREAM_ALLOCATABLE) == KUBEPODS_LIMIT  # 2048Mi − 1748Mi
    decision = decide_memory_eviction([INNOCENT_POD, MEMORY_HOG], NODE, UPSTREAM_ALLOCATABLE, other_usage=500 * MI,
                                      pods=PodsMemoryObservation(KUBEPODS_LIMIT, 140 * MI))
    assert decision.memory_pressure and decision.signal == "allocatableMemory.available"
    assert (decision.available, decision.threshold) == (160 * MI, 250 * MI)
    assert decision.victim is MEMORY_HOG.pod and decision.reason == "Evicted"
    assert decision.message == (
        "The node was low on resource: memory. Threshold quantity: 250Mi, available: 160Mi. "
        "Container app was using 128Mi, request is 0, has larger consumption of memory. "
    )


@pytest.mark.parametrize(
    ("config", "pods", "pressure"),
    [
        # 300Mi − 50Mi = 250Mi available, not below 250Mi (the operator is LessThan).
        pytest.param(UPSTREAM_ALLOCATABLE, PodsMemoryObservation(KUBEPODS_LIMIT, 50 * MI), False, id="equal"),
        pytest.param(UPSTREAM_ALLOCATABLE, PodsMemoryObservation(KUBEPODS_LIMIT, 50 * MI + 1), True,
                     id="one-byte-below"),
        # Without `pods` enforced addAllocatableThresholds adds nothing, whatever kubepods holds.
        pytest.param(replace(UPSTREAM_ALLOCATABLE, enforce_node_allocatable=()),
                     PodsMemoryObservation(KUBEPODS_LIMIT, 290 * MI), False, id="pods-not-enforced"),
        # memory.available zeroed by another evictionHard entry: nothing to copy.
        pytest.param(replace(UPSTREAM_ALLOCATABLE, eviction_hard={"nodefs.available": "10%"}),
                     PodsMemoryObservation(KUBEPODS_LIMIT, 290 * MI), False, id="no-memory-threshold"),
        # "0%" sets no threshold (parseThresholdStatement), so none is copied.
        pytest.param(replace(UPSTREAM_ALLOCATABLE, eviction_hard={"memory.available": "0%"}),
                     PodsMemoryObservation(KUBEPODS_LIMIT, 299 * MI), False, id="zero-percent"),
        # kubepods memory.max `max`: no AvailableBytes, no observation.
        pytest.param(UPSTREAM_ALLOCATABLE, PodsMemoryObservation(None, 290 * MI), False, id="kubepods-unlimited"),
        # The defaults' 100Mi is copied too: 300Mi − 201Mi = 99Mi < 100Mi.
        pytest.param(replace(UPSTREAM_ALLOCATABLE, eviction_hard=None), PodsMemoryObservation(KUBEPODS_LIMIT, 201 * MI),
                     True, id="default-threshold-copied"),
    ],
)
def test_allocatable_threshold(config: KubeletConfig, pods: PodsMemoryObservation, pressure: bool) -> None:
    # The pods' own 132Mi leave memory.available far above any threshold here: only the allocatable signal decides.
    decision = decide_memory_eviction([INNOCENT_POD, MEMORY_HOG], NODE, config, pods=pods)
    assert decision.memory_pressure is pressure
    assert (decision.victim is MEMORY_HOG.pod) is pressure


@pytest.mark.parametrize(
    ("working_set_mi", "pressure"),
    [
        # 10% as float32 is 0.100000001490116; of kubepods' 300Mi (314572800 bytes) 31457280.47 → 31457280 = 30Mi,
        # where 10% of the node's 2048Mi would be 204.8Mi: 300Mi − 270Mi = 30Mi is not below 30Mi, 29Mi is.
        pytest.param(270, False, id="percentage-of-kubepods-equal"),
        pytest.param(271, True, id="percentage-of-kubepods-below"),
    ],
)
def test_allocatable_percentage_is_of_the_kubepods_limit(working_set_mi: int, pressure: bool) -> None:
    config = replace(UPSTREAM_ALLOCATABLE, eviction_hard={"memory.available": "10%"})
    assert allocatable_memory_threshold(config, KUBEPODS_LIMIT) == 30 * MI
    decision = decide_memory_eviction([INNOCENT_POD, MEMORY_HOG], NODE, config,
                                      pods=PodsMemoryObservation(KUBEPODS_LIMIT, working_set_mi * MI))
    assert decision.memory_pressure is pressure


def test_both_memory_signals_met_names_memory_available() -> None:
    # memory.available = 2048Mi − (132 + 1700)Mi = 216Mi < 250Mi and allocatable 160Mi < 250Mi: same victim, and the
    # oracle names memory.available (the kubelet may name either).
    decision = decide_memory_eviction([INNOCENT_POD, MEMORY_HOG], NODE, UPSTREAM_ALLOCATABLE, other_usage=1700 * MI,
                                      pods=PodsMemoryObservation(KUBEPODS_LIMIT, 140 * MI))
    assert decision.signal == "memory.available" and decision.available == 216 * MI
    assert decision.victim is MEMORY_HOG.pod


# PID pressure on a node whose task ceiling is 15511 (kernel.threads-max below kernel.pid_max 4194304).
def procs(name: str, processes: int, priority: int = 0, annotations: dict[str, str] | None = None) -> PodProcesses:
    return PodProcesses(Pod(name=name, containers=(Container("app"),), priority_value=priority,
                            annotations=annotations or {}), processes)


LOW_BOMB = procs("fork-bomb-low", 64)
HIGH_BOMB = procs("fork-bomb-high", 96, priority=999_999_999)
INNOCENT = procs("innocent", 1, priority=999_999_999)


def test_pid_rank_is_priority_then_process_count() -> None:
    # Priority 0 before 999999999 although it holds fewer processes; among equal priorities 96 before 1.
    ranked = rank_for_pid_pressure([INNOCENT, HIGH_BOMB, LOW_BOMB])
    assert [p.pod.name for p in ranked] == ["fork-bomb-low", "fork-bomb-high", "innocent"]


@pytest.mark.parametrize(
    "running, threshold, pressure",
    [
        # available = 15511 − 311 = 15200 < 15201: met.
        pytest.param(311, "15201", True, id="one-below"),
        # available = 15200, not below 15200: not met (the operator is LessThan).
        pytest.param(311, "15200", False, id="equal"),
        # 98% of 15511 as float32 0.98 (0.980000019…) × 15511 = 15200.78 → 15200: 15200 is not below it.
        pytest.param(311, "98%", False, id="percentage-equal"),
        # available = 15511 − 312 = 15199 < 15200.
        pytest.param(312, "98%", True, id="percentage-below"),
    ],
)
def test_pid_threshold(running: int, threshold: str, pressure: bool) -> None:
    config = KubeletConfig(eviction_hard={"pid.available": threshold})
    decision = decide_pid_eviction([LOW_BOMB], PidObservation(15_511, running), config)
    assert decision.pid_pressure is pressure
    assert decision.victim is (LOW_BOMB.pod if pressure else None)


def test_no_pid_threshold_by_default() -> None:
    # DefaultEvictionHard has no pid.available: even 0 tasks available is no pressure.
    decision = decide_pid_eviction([LOW_BOMB], PidObservation(100, 100), KubeletConfig())
    assert (decision.pid_pressure, decision.threshold, decision.available) == (False, None, 0)


def test_pid_pressure_evicts_the_lowest_priority_with_the_kubelet_message() -> None:
    # available = 15511 − 511 = 15000 < 15100; the message prints both as DecimalSI quantities: 15k and 15100.
    config = KubeletConfig(eviction_hard={"pid.available": "15100"})
    decision = decide_pid_eviction([HIGH_BOMB, INNOCENT, LOW_BOMB], PidObservation(15_511, 511), config)
    assert decision.pid_pressure and decision.victim is LOW_BOMB.pod and decision.reason == "Evicted"
    assert decision.message == "The node was low on resource: pids. Threshold quantity: 15100, available: 15k. "


def test_pid_pressure_skips_critical_pods() -> None:
    static = procs("static-bomb", 500, annotations={"kubernetes.io/config.source": "file"})
    # 100 available < 101: met ("100%" would set no threshold: parseThresholdStatement ignores it).
    config = KubeletConfig(eviction_hard={"pid.available": "101"})
    decision = decide_pid_eviction([static, HIGH_BOMB], PidObservation(1000, 900), config)
    assert decision.pid_pressure and decision.victim is HIGH_BOMB.pod
