"""Swap oracle: the KEP-5359 semantics table, KEP-2400 LimitedSwap exclusions, validation, events, metric."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import Container, Pod, Resources
from nodeconf.node_facts import NodeFacts
from nodeconf.quantity import Quantity
from nodeconf.semantics import swap
from nodeconf.semantics.expectation import QosClass
from nodeconf.semantics.profile import Profile, profile_for

GI = 2**30
MI = 2**20
NODE = NodeFacts(memory_capacity=8 * GI, swap_capacity=4 * GI)
GATE_ON = profile_for("1.38", KubeletConfig(feature_gates={"WorkloadControlledSwap": True}))  # alpha: off by default
GATE_OFF = profile_for("1.38", KubeletConfig(feature_gates={"WorkloadControlledSwap": False}))
MODES = ("NoSwap", "LimitedSwap", "WorkloadControlledSwap")
G = QosClass.GUARANTEED
B = QosClass.BURSTABLE
BE = QosClass.BEST_EFFORT


def res(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> Resources:
    return Resources(
        requests={k: Quantity.parse(v) for k, v in (requests or {}).items()},
        limits={k: Quantity.parse(v) for k, v in (limits or {}).items()},
    )


def pod_of(*containers: Container, pod_resources: Resources | None = None, **fields: Any) -> Pod:
    return replace(Pod(name="p", containers=containers, resources=pod_resources), **fields)


def ctr(name: str = "c", **kw: dict[str, str]) -> Container:
    return Container(name=name, resources=res(kw.get("requests"), kw.get("limits")))


def config(mode: str) -> KubeletConfig:
    return KubeletConfig(swap_behavior=mode)


# Burstable container: 1Gi request, 2Gi limit → LimitedSwap share 1Gi/8Gi*4Gi = 512Mi (hand-computed).
BURSTABLE_1G = ctr(requests={"memory": "1Gi"}, limits={"memory": "2Gi"})
GUARANTEED_1G = ctr(requests={"cpu": "1", "memory": "1Gi"}, limits={"cpu": "1", "memory": "1Gi"})
BEST_EFFORT = ctr()


def swap_max(
    container: Container, qos: QosClass, mode: str, pod: Pod | None = None, profile: Profile = GATE_ON
) -> str:
    return swap.container_swap_max(pod or pod_of(container), container, qos, NODE, config(mode), profile).value


# The KEP-5359 "Swap limit semantics" table, one cell per case: (workload row, qos, NoSwap, LimitedSwap, WCS).
TABLE = [
    pytest.param(BURSTABLE_1G, B, ("0", str(512 * MI), "0"), id="omitted-burstable"),
    pytest.param(GUARANTEED_1G, G, ("0", "0", "0"), id="omitted-guaranteed"),
    pytest.param(BEST_EFFORT, BE, ("0", "0", "0"), id="omitted-besteffort"),
    pytest.param(replace(BURSTABLE_1G, resources=res({"memory": "1Gi"}, {"memory": "2Gi", "swap": "3Gi"})), B,
                 ("0", str(3 * GI), str(3 * GI)), id="set-container-burstable"),
    pytest.param(replace(GUARANTEED_1G, resources=res({"cpu": "1", "memory": "1Gi"},
                                                       {"cpu": "1", "memory": "1Gi", "swap": "256Mi"})), G,
                 ("0", str(256 * MI), str(256 * MI)), id="set-container-guaranteed"),
    pytest.param(ctr(limits={"swap": "100Mi"}), BE, ("0", str(100 * MI), str(100 * MI)),
                 id="set-container-besteffort"),
    pytest.param(replace(BURSTABLE_1G, resources=res({"memory": "1Gi"}, {"memory": "2Gi", "swap": "0"})), B,
                 ("0", "0", "0"), id="set-zero-opts-out-of-calculated"),
]


@pytest.mark.parametrize("container, qos, expected", TABLE)
@pytest.mark.parametrize("mode_index", range(3), ids=MODES)
def test_kep5359_table_container_level(container: Container, qos: QosClass, expected: tuple[str, ...],
                                       mode_index: int) -> None:
    assert swap_max(container, qos, MODES[mode_index]) == expected[mode_index]


@pytest.mark.parametrize(
    "mode, pod_value, container_value",
    [("NoSwap", "max", "0"), ("LimitedSwap", str(2 * GI), str(2 * GI)),
     ("WorkloadControlledSwap", str(2 * GI), str(2 * GI))],
    ids=MODES,
)
def test_kep5359_table_pod_level_shared(mode: str, pod_value: str, container_value: str) -> None:
    pod = pod_of(BURSTABLE_1G, pod_resources=res(limits={"swap": "2Gi"}))
    assert swap.pod_swap_max(pod, B, NODE, config(mode), GATE_ON).value == pod_value
    assert swap_max(BURSTABLE_1G, B, mode, pod) == container_value


@pytest.mark.parametrize(
    "container, qos, mode, expected",
    [
        pytest.param(BURSTABLE_1G, B, "LimitedSwap", str(512 * MI), id="limited-burstable-calculated"),
        pytest.param(replace(BURSTABLE_1G, resources=res({"memory": "1Gi"}, {"memory": "2Gi", "swap": "3Gi"})),
                     B, "LimitedSwap", str(512 * MI), id="limited-limit-ignored"),
        pytest.param(ctr(limits={"memory": "2Gi", "swap": "1Gi"}), B, "WorkloadControlledSwap", "0",
                     id="wcs-mode-without-gate-is-noswap"),
        pytest.param(ctr(limits={"memory": "2Gi", "swap": "1Gi"}), B, "NoSwap", "0", id="noswap"),
    ],
)
def test_gate_off_ignores_limits_swap(container: Container, qos: QosClass, mode: str, expected: str) -> None:
    assert swap_max(container, qos, mode, profile=GATE_OFF) == expected
    assert swap.swap_events(pod_of(container), config(mode), GATE_OFF) == ()
    assert swap.swap_errors(pod_of(container), GATE_OFF) == ()


def test_gate_off_profile_1_37_has_no_workload_swap() -> None:
    assert not swap.workload_swap_enabled(profile_for("1.37"))
    assert swap.node_swap_mode(config("WorkloadControlledSwap"), profile_for("1.37")) == "NoSwap"


# KEP-2400 LimitedSwap: who gets the calculated share (8Gi node, 4Gi swap unless stated).
CRITICAL_CASES = [
    pytest.param({"annotations": {"kubernetes.io/config.source": "file"}}, "0", id="static-pod"),
    pytest.param({"annotations": {"kubernetes.io/config.mirror": "abc"}}, "0", id="mirror-pod"),
    pytest.param({"priority_value": 2_000_000_000}, "0", id="priority-2000000000"),
    pytest.param({"priority_class_name": "system-cluster-critical"}, "0", id="system-cluster-critical"),
    pytest.param({"priority_class_name": "system-node-critical"}, "0", id="system-node-critical"),
    pytest.param({"priority_value": 1_999_999_999}, str(512 * MI), id="priority-below-critical"),
    pytest.param({"annotations": {"kubernetes.io/config.source": "api"}}, str(512 * MI), id="api-pod"),
]


@pytest.mark.parametrize("fields, expected", CRITICAL_CASES)
def test_limited_swap_critical_pods(fields: dict[str, Any], expected: str) -> None:
    pod = pod_of(BURSTABLE_1G, **fields)
    assert swap_max(BURSTABLE_1G, B, "LimitedSwap", pod) == expected


@pytest.mark.parametrize(
    "container, qos, expected",
    [
        pytest.param(GUARANTEED_1G, G, "0", id="guaranteed"),
        pytest.param(BEST_EFFORT, BE, "0", id="besteffort"),
        pytest.param(ctr(requests={"cpu": "100m"}), B, "0", id="burstable-no-memory"),
        pytest.param(ctr(requests={"memory": "1Gi", "cpu": "100m"}, limits={"memory": "1Gi"}), B, "0",
                     id="burstable-request-eq-limit"),
        pytest.param(ctr(limits={"memory": "1Gi"}), B, "0", id="burstable-limit-only-defaults-request"),
        pytest.param(ctr(requests={"memory": "9Gi"}), B, "0", id="request-above-capacity"),
        pytest.param(ctr(requests={"memory": "8Gi"}), B, str(4 * GI), id="request-equal-capacity"),
        pytest.param(ctr(requests={"memory": "1Gi"}), B, str(512 * MI), id="request-without-limit"),
        pytest.param(ctr(limits={"memory": "1Gi"}, requests={"memory": "0"}), B, "0", id="request-zero"),
    ],
)
def test_limited_swap_exclusions(container: Container, qos: QosClass, expected: str) -> None:
    assert swap_max(container, qos, "LimitedSwap") == expected


def test_limited_swap_uses_total_swap_and_truncates_then_page_floors() -> None:
    # Article node: 3479660Ki memory; 1Gi swap; request 128Mi.
    # 128Mi/3479660Ki*1Gi = 2^47/3479660 = 40445758.6 bytes (exact integer division) → int 40445758,
    # page-floored: 9874 pages of 4096 → 40443904.
    node = NodeFacts(memory_capacity=3479660 * 1024, swap_capacity=GI)
    container = ctr(requests={"memory": "128Mi"}, limits={"memory": "256Mi"})
    reserved = KubeletConfig(swap_behavior="LimitedSwap", system_reserved={"memory": Quantity.parse("1Gi")})
    value = swap.container_swap_max(pod_of(container), container, B, node, reserved, GATE_ON).value
    assert value == "40443904"
    assert swap.limited_swap_bytes(pod_of(container), container, B, node)[0] == 40445758


def test_no_swap_controller_writes_nothing() -> None:
    node = NodeFacts(memory_capacity=8 * GI, swap_capacity=4 * GI, cgroup_controllers=("cpu", "pids"))
    for mode in MODES:
        assert swap.container_swap_max(pod_of(BURSTABLE_1G), BURSTABLE_1G, B, node, config(mode),
                                       GATE_ON).value == "max"


def test_explicit_swap_is_page_floored() -> None:
    container = ctr(limits={"swap": "100000000"})
    assert swap_max(container, BE, "WorkloadControlledSwap") == "99999744"  # MEASURED.md read-back
    node = NodeFacts(memory_capacity=8 * GI, swap_capacity=4 * GI, page_size=65536)
    value = swap.container_swap_max(pod_of(container), container, BE, node, config("LimitedSwap"), GATE_ON)
    assert value.value == "99942400"  # 1525 pages of 64Ki


@pytest.mark.parametrize(
    "pod, messages",
    [
        pytest.param(pod_of(ctr(requests={"swap": "1Gi"}, limits={"swap": "1Gi"})),
                     ["spec.containers[0].resources.requests[swap]: Forbidden: swap may only be specified in "
                      "limits, not requests"], id="container-requests-swap"),
        pytest.param(pod_of(ctr(requests={"swap": "0"})),
                     ["spec.containers[0].resources.requests[swap]: Forbidden: swap may only be specified in "
                      "limits, not requests"], id="container-requests-swap-zero"),
        pytest.param(pod_of(ctr(), pod_resources=res(requests={"swap": "0"})),
                     ["spec.resources.requests[swap]: Forbidden: swap may only be specified in limits, "
                      "not requests"], id="pod-requests-swap-zero"),
        pytest.param(pod_of(ctr("a", limits={"swap": "1Gi"}), ctr("b", limits={"swap": "3Gi"}),
                            pod_resources=res(limits={"swap": "2Gi"})),
                     ['spec.containers[1].resources.limits[swap]: Invalid value: "3Gi": must be less than or '
                      "equal to pod limits (2Gi)"], id="container-above-pod"),
        pytest.param(pod_of(ctr("a", limits={"swap": "2Gi"}), pod_resources=res(limits={"swap": "2Gi"})), [],
                     id="container-equal-pod"),
        pytest.param(pod_of(ctr(limits={"swap": "0"})), [], id="zero-limit-valid"),
    ],
)
def test_swap_validation(pod: Pod, messages: list[str]) -> None:
    assert list(swap.swap_errors(pod, GATE_ON)) == messages


def test_init_container_requests_swap_refused() -> None:
    pod = replace(pod_of(ctr()), init_containers=(ctr("init", requests={"swap": "1Mi"}),))
    assert swap.swap_errors(pod, GATE_ON) == (
        "spec.initContainers[0].resources.requests[swap]: Forbidden: swap may only be specified in limits, "
        "not requests",
    )


@pytest.mark.parametrize(
    "pod, mode, reasons",
    [
        pytest.param(pod_of(ctr(limits={"swap": "1Gi"})), "NoSwap", ["SwapNotSupported"], id="container-noswap"),
        pytest.param(pod_of(ctr(), pod_resources=res(limits={"swap": "1Gi"})), "NoSwap", ["SwapNotSupported"],
                     id="pod-level-noswap"),
        pytest.param(pod_of(ctr(limits={"swap": "0"})), "NoSwap", [], id="zero-noswap"),
        pytest.param(pod_of(ctr()), "NoSwap", [], id="omitted-noswap"),
        pytest.param(pod_of(ctr(limits={"swap": "1Gi"})), "LimitedSwap", [], id="container-limitedswap"),
        pytest.param(pod_of(ctr(limits={"swap": "1Gi"})), "WorkloadControlledSwap", [], id="container-wcs"),
    ],
)
def test_swap_not_supported_event(pod: Pod, mode: str, reasons: list[str]) -> None:
    events = swap.swap_events(pod, config(mode), GATE_ON)
    assert [e.reason for e in events] == reasons
    assert all(e.type == "Warning" and pod.ref in e.message for e in events)


MIXED = pod_of(
    ctr("c1", limits={"swap": "0"}), ctr("c2", limits={"swap": "512Mi"}), ctr("c3"), ctr("c4"),
    pod_resources=res(limits={"swap": "2Gi"}),
)


@pytest.mark.parametrize(
    "pods, mode, profile, expected",
    [
        pytest.param([pod_of(ctr("a", limits={"swap": "1Gi"}), ctr("b", limits={"swap": "512Mi"}))],
                     "WorkloadControlledSwap", GATE_ON, GI + 512 * MI, id="containers-summed"),
        pytest.param([MIXED], "WorkloadControlledSwap", GATE_ON, 2 * GI, id="pod-level-counts-once"),
        pytest.param([MIXED, pod_of(ctr(limits={"swap": "1Gi"}))], "LimitedSwap", GATE_ON, 3 * GI,
                     id="pods-summed-limitedswap"),
        pytest.param([pod_of(BURSTABLE_1G)], "LimitedSwap", GATE_ON, 0, id="calculated-not-counted"),
        pytest.param([MIXED], "NoSwap", GATE_ON, 0, id="noswap-zero"),
        pytest.param([MIXED], "WorkloadControlledSwap", GATE_OFF, 0, id="gate-off-zero"),
    ],
)
def test_swap_allocated_bytes(pods: list[Pod], mode: str, profile: Profile, expected: int) -> None:
    assert swap.swap_allocated_bytes(pods, config(mode), profile) == expected


@pytest.mark.parametrize(
    "container, pod, mode, expected",
    [
        pytest.param(BURSTABLE_1G, None, "LimitedSwap", True, id="calculated"),
        pytest.param(ctr(limits={"memory": "2Gi", "swap": "1Gi"}, requests={"memory": "1Gi"}), None,
                     "LimitedSwap", False, id="explicit-container"),
        pytest.param(BURSTABLE_1G, pod_of(BURSTABLE_1G, pod_resources=res(limits={"swap": "1Gi"})),
                     "LimitedSwap", False, id="explicit-pod"),
        pytest.param(GUARANTEED_1G, None, "LimitedSwap", False, id="guaranteed"),
        pytest.param(BURSTABLE_1G, None, "WorkloadControlledSwap", False, id="wcs"),
    ],
)
def test_swaps_by_calculation(container: Container, pod: Pod | None, mode: str, expected: bool) -> None:
    qos = G if container is GUARANTEED_1G else B
    assert swap.swaps_by_calculation(pod or pod_of(container), container, qos, config(mode), GATE_ON) is expected


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.36", "1.37"])
def test_limits_swap_is_refused_before_its_gate_exists(version: str) -> None:
    """Before 1.38 (KEP-5359 alpha) `swap` is no container resource: the API server refuses it at both levels
    (validation.go validateContainerResourceName, validatePodResourceName)."""
    pod = pod_of(ctr(limits={"memory": "2Gi", "swap": "1Gi"}), ctr("d", requests={"swap": "0"}),
                 pod_resources=res(limits={"memory": "4Gi", "swap": "2Gi"}))
    assert swap.swap_errors(pod, profile_for(version)) == (
        'spec.resources.limits[swap]: Unsupported value: "swap": supported values: "cpu", "memory"',
        'spec.containers[0].resources.limits[swap]: Invalid value: "swap": must be a standard resource for '
        "containers",
        'spec.containers[1].resources.requests[swap]: Invalid value: "swap": must be a standard resource for '
        "containers",
    )


def test_limits_swap_is_accepted_once_its_gate_exists() -> None:
    pod = pod_of(ctr(limits={"memory": "2Gi", "swap": "1Gi"}))
    assert swap.swap_errors(pod, GATE_ON) == swap.swap_errors(pod, GATE_OFF) == ()
