"""Resize decisions: the article's patches, LimitedSwap memory resizes, swap and memory limit decreases."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.loader import load_objects
from nodeconf.manifest import Container, Pod, Resources
from nodeconf.node_facts import NodeFacts
from nodeconf.quantity import Quantity
from nodeconf.semantics.profile import profile_for
from nodeconf.semantics.resize import ContainerUsage as Used
from nodeconf.semantics.resize import ResizeStatus, decide_resize, pod_allocated_resources

RL = Path(__file__).resolve().parents[3] / "workloads" / "requests-limits"
GI = 2**30
MI = 2**20
ARTICLE_NODE = NodeFacts(memory_capacity=3479660 * 1024, cpu_capacity_milli=2000)
SWAP_NODE = NodeFacts(memory_capacity=8 * GI, swap_capacity=4 * GI, cpu_capacity_milli=4000)
PROFILE = profile_for("1.38", KubeletConfig(feature_gates={"WorkloadControlledSwap": True}))  # KEP-5359 alpha gate on


def res_demo() -> Pod:
    (pod,) = load_objects([RL / "res-demo.yaml"])
    assert isinstance(pod, Pod)
    return pod


def with_resources(pod: Pod, requests: dict[str, str], limits: dict[str, str], **container: object) -> Pod:
    c = pod.containers[0]
    merged = Resources(
        requests={**c.resources.requests, **{k: Quantity.parse(v) for k, v in requests.items()}},
        limits={**c.resources.limits, **{k: Quantity.parse(v) for k, v in limits.items()}},
    )
    return replace(pod, containers=(replace(c, resources=merged, **container),))  # type: ignore[arg-type]


def test_article_cpu_limit_to_one_core_applied() -> None:
    current = res_demo()
    decision = decide_resize(current, with_resources(current, {}, {"cpu": "1"}), {}, ARTICLE_NODE,
                             KubeletConfig(), PROFILE)
    assert decision.status is ResizeStatus.APPLIED
    assert decision.files["hello"]["cpu.max"].value == "100000 100000"


@pytest.mark.parametrize(
    "version, status, message",
    [
        ("1.36", ResizeStatus.REJECTED,
         'pods "res-demo" is forbidden: node didn\'t have enough allocatable resources: cpu, requested: 3000, '
         "allocatable: 2000"),
        ("1.35", ResizeStatus.INFEASIBLE, "Node didn't have enough capacity: cpu, requested: 3000, capacity: 2000"),
    ],
    ids=["1.36-api-refuses", "1.35-kubelet-infeasible"],
)
def test_article_request_above_allocatable(version: str, status: ResizeStatus, message: str) -> None:
    current = res_demo()
    desired = with_resources(current, {"cpu": "3"}, {"cpu": "4"})
    decision = decide_resize(current, desired, {}, ARTICLE_NODE, KubeletConfig(), profile_for(version))
    assert (decision.status, decision.message) == (status, message)


def test_article_qos_change_refused() -> None:
    current = with_resources(res_demo(), {}, {"cpu": "1"})
    decision = decide_resize(current, with_resources(current, {"cpu": "1"}, {}), {}, ARTICLE_NODE,
                             KubeletConfig(), PROFILE)
    assert (decision.status, decision.message) == (
        ResizeStatus.REJECTED,
        'The Pod "res-demo" is invalid: spec: Invalid value: "Burstable": Pod QOS Class may not change as a '
        "result of resizing",
    )


def swap_pod(limits: dict[str, str], requests: dict[str, str] | None = None, **container: object) -> Pod:
    c = Container("app", resources=Resources(
        requests={k: Quantity.parse(v) for k, v in (requests or {"memory": "1Gi"}).items()},
        limits={k: Quantity.parse(v) for k, v in limits.items()}))
    return Pod("swapper", containers=(replace(c, **container),))  # type: ignore[arg-type]


RESTART = {"resize_policy": {"memory": "RestartContainer"}}


@pytest.mark.parametrize(
    "mode, current, desired, status",
    [
        pytest.param("LimitedSwap", swap_pod({"memory": "2Gi"}), swap_pod({"memory": "2Gi"}, {"memory": "512Mi"}),
                     ResizeStatus.INFEASIBLE, id="limitedswap-request-refused"),
        pytest.param("LimitedSwap", swap_pod({"memory": "2Gi"}, **RESTART),
                     swap_pod({"memory": "2Gi"}, {"memory": "512Mi"}, **RESTART), ResizeStatus.APPLIED,
                     id="limitedswap-restartcontainer-allowed"),
        pytest.param("LimitedSwap", swap_pod({"memory": "2Gi"}), swap_pod({"memory": "3Gi"}), ResizeStatus.APPLIED,
                     id="limitedswap-limit-only-allowed"),
        pytest.param("LimitedSwap", swap_pod({"memory": "2Gi", "swap": "1Gi"}),
                     swap_pod({"memory": "2Gi", "swap": "1Gi"}, {"memory": "512Mi"}), ResizeStatus.APPLIED,
                     id="limitedswap-explicit-swap-allowed"),
        pytest.param("LimitedSwap", swap_pod({"memory": "1Gi", "cpu": "1"}, {"memory": "1Gi", "cpu": "1"}),
                     swap_pod({"memory": "2Gi", "cpu": "1"}, {"memory": "2Gi", "cpu": "1"}), ResizeStatus.APPLIED,
                     id="limitedswap-guaranteed-no-swap-allowed"),
        pytest.param("WorkloadControlledSwap", swap_pod({"memory": "2Gi"}),
                     swap_pod({"memory": "2Gi"}, {"memory": "512Mi"}), ResizeStatus.APPLIED,
                     id="wcs-memory-resize-allowed"),
        pytest.param("NoSwap", swap_pod({"memory": "2Gi"}), swap_pod({"memory": "2Gi"}, {"memory": "512Mi"}),
                     ResizeStatus.APPLIED, id="noswap-memory-resize-allowed"),
    ],
)
def test_memory_request_resize_with_swap(mode: str, current: Pod, desired: Pod, status: ResizeStatus) -> None:
    decision = decide_resize(current, desired, {}, SWAP_NODE, KubeletConfig(swap_behavior=mode), PROFILE)
    assert decision.status is status
    if status is ResizeStatus.INFEASIBLE:
        assert decision.message == "In-place resize of containers with swap is not supported."


@pytest.mark.parametrize(
    "before, after, used, status, swap_max",
    [
        pytest.param("1Gi", "2Gi", Used(swap=GI), ResizeStatus.APPLIED, "2147483648", id="increase-at-once"),
        pytest.param("2Gi", "512Mi", Used(swap=600 * MI), ResizeStatus.IN_PROGRESS, None, id="decrease-waits"),
        pytest.param("2Gi", "512Mi", Used(swap=512 * MI), ResizeStatus.IN_PROGRESS, None, id="decrease-at-equal"),
        pytest.param("2Gi", "512Mi", Used(swap=100 * MI), ResizeStatus.APPLIED, "536870912", id="decrease-fits"),
        # KEP-5359 asks memory.swap.current < new limit, which a limit of 0 never satisfies: the seed's rule, kept.
        pytest.param("2Gi", "0", Used(swap=0), ResizeStatus.IN_PROGRESS, None, id="decrease-to-zero-waits"),
        pytest.param("2Gi", "0", Used(swap=4096), ResizeStatus.IN_PROGRESS, None, id="decrease-to-zero-used"),
    ],
)
def test_wcs_limits_swap_resize(before: str, after: str, used: Used, status: ResizeStatus,
                                swap_max: str | None) -> None:
    config = KubeletConfig(swap_behavior="WorkloadControlledSwap")
    current, desired = swap_pod({"memory": "4Gi", "swap": before}), swap_pod({"memory": "4Gi", "swap": after})
    decision = decide_resize(current, desired, {"app": used}, SWAP_NODE, config, PROFILE)
    assert decision.status is status
    if swap_max is not None:
        assert decision.files["app"]["memory.swap.max"].value == swap_max
    else:
        assert "memory.swap.max" in decision.message and decision.files == {}


@pytest.mark.parametrize(
    "used, status",
    [(Used(memory=1536 * MI), ResizeStatus.IN_PROGRESS), (Used(memory=GI), ResizeStatus.IN_PROGRESS),
     (Used(memory=900 * MI), ResizeStatus.APPLIED), (Used(), ResizeStatus.APPLIED)],
    ids=["usage-above-new-limit", "usage-at-new-limit", "usage-below", "usage-unreadable"],
)
def test_memory_limit_decrease_waits_for_usage(used: Used, status: ResizeStatus) -> None:
    current = swap_pod({"memory": "2Gi"}, {"memory": "512Mi"})
    desired = swap_pod({"memory": "1Gi"}, {"memory": "512Mi"})
    decision = decide_resize(current, desired, {"app": used}, SWAP_NODE, KubeletConfig(), PROFILE)
    assert decision.status is status


def test_deferred_while_other_pods_hold_the_room() -> None:
    others = [swap_pod({}, {"cpu": "1500m"})]
    current, desired = swap_pod({}, {"cpu": "1"}), swap_pod({}, {"cpu": "3"})
    decision = decide_resize(current, desired, {}, SWAP_NODE, KubeletConfig(), PROFILE, others)
    assert (decision.status, decision.message) == (
        ResizeStatus.DEFERRED, "Node didn't have enough resource: cpu, requested: 3000, used: 1500, capacity: 4000")


def test_pod_level_swap_decrease_waits_for_the_pod_total() -> None:
    # Each container uses 600Mi of swap, under the new 1Gi ceiling; together 1200Mi ≥ the pod's new 1Gi.
    def pod(swap_limit: str) -> Pod:
        shared = Resources(limits={"swap": Quantity.parse(swap_limit)})
        return Pod("shared", containers=(Container("a"), Container("b")), resources=shared)

    config = KubeletConfig(swap_behavior="WorkloadControlledSwap")
    used = {"a": Used(swap=600 * MI), "b": Used(swap=600 * MI)}
    decision = decide_resize(pod("2Gi"), pod("1Gi"), used, SWAP_NODE, config, PROFILE)
    assert decision.status is ResizeStatus.IN_PROGRESS
    assert decision.message.startswith("pod default/shared: memory.swap.max decrease to 1073741824")
    fits = {"a": Used(swap=300 * MI), "b": Used(swap=300 * MI)}
    assert decide_resize(pod("2Gi"), pod("1Gi"), fits, SWAP_NODE, config, PROFILE).status is ResizeStatus.APPLIED


def test_static_pod_resize_is_infeasible() -> None:
    """pkg/kubelet/allocation manager test "static pod, expect Infeasible" (config source file)."""
    current = replace(res_demo(), annotations={"kubernetes.io/config.source": "file"})
    decision = decide_resize(current, with_resources(current, {}, {"cpu": "1"}), {}, ARTICLE_NODE,
                             KubeletConfig(), PROFILE)
    assert (decision.status, decision.message) == (ResizeStatus.INFEASIBLE,
                                                   "In-place resize of static-pods is not supported")


def test_a_request_above_its_limit_is_refused_by_validation() -> None:
    """res-demo's memory limit is 128Mi: a 256Mi request is an invalid pod, refused before any resize rule."""
    current = res_demo()
    decision = decide_resize(current, with_resources(current, {"memory": "256Mi"}, {}), {}, ARTICLE_NODE,
                             KubeletConfig(), PROFILE)
    assert (decision.status, decision.message) == (
        ResizeStatus.REJECTED,
        'The Pod "res-demo" is invalid: spec.containers[0].resources.requests: Invalid value: "256Mi": must be less '
        "than or equal to memory limit of 128Mi")


def _two_containers(pod_level: Resources | None) -> Pod:
    def c(name: str, cpu: str, mem: str) -> Container:
        return Container(name, resources=Resources(requests={"cpu": Quantity.parse(cpu),
                                                             "memory": Quantity.parse(mem)}))
    return Pod("p", containers=(c("a", "20m", "35Mi"), c("b", "30m", "45Mi")), resources=pod_level)


@pytest.mark.parametrize(("pod_level", "allocated"), [
    (None, {"cpu": "50m", "memory": "80Mi"}),
    (Resources(requests={"cpu": Quantity.parse("85m"), "memory": Quantity.parse("95Mi")}),
     {"cpu": "85m", "memory": "95Mi"}),
], ids=["containers-summed", "pod-level-requests"])
def test_pod_allocated_resources_are_pod_requests(pod_level: Resources | None, allocated: dict[str, str]) -> None:
    """The kubelet's pod status.allocatedResources: PodRequests, pod-level where set, else the containers' sum."""
    assert pod_allocated_resources(_two_containers(pod_level), profile_for("1.35")) == allocated
