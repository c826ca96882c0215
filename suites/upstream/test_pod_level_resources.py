"""Pod-level resources (KEP-2837): QoS class from pod-level values, the pod cgroup, containers under the pod limit.

Source: upstream test/e2e/common/node/pod_level_resources.go "Pod Level Resources" (podLevelResourcesTests: its
seven table entries, each checked in its three steps "verifying pod QoS as expected", "verifying pod cgroup values"
and "verifying containers cgroup limits are same as pod container's cgroup limits"), plus two mixed cases
(containers with and without limits under a pod-level limit). Cgroup values come from the oracle; the QoS class and
"the pod runs" are what the upstream table states.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.nodes.base import Node, PodHandle
from nodeconf.report.comparison import PAUSE
from nodeconf.semantics.expectation import PodExpectation, QosClass
from suites.toolkit.checks import Deployed, SettledPods, check_admission, check_qos
from suites.toolkit.compare import assert_matches, compare_pod
from suites.toolkit.kubelet import Applied, Oracle
from suites.upstream.shared import Res, container, make_pod, module_kubelet, shared_deployment

# The upstream It texts of the seven entries mirrored here (two entries share the first text).
UPSTREAM_CASES = ("Guaranteed QoS pod with container resources", "Guaranteed QoS pod, no container resources",
                  "Guaranteed QoS pod, 1 container with resources", "Burstable QoS pod, no container resources",
                  "Burstable QoS pod with container resources", "Burstable QoS pod, 1 container with resources")
pytestmark = [*(pytest.mark.upstream_e2e(file="test/e2e/common/node/pod_level_resources.go",
                                         case=f"Pod Level Resources / {case}") for case in UPSTREAM_CASES),
              pytest.mark.min_profile("1.36")]

pytestmark.append(pytest.mark.independent)

UPSTREAM = "upstream test/e2e/common/node/pod_level_resources.go podLevelResourcesTests"


@dataclass(frozen=True)
class Case:
    """One table entry: pod-level resources, the containers' own, and the QoS class the table expects."""

    pod: Res | None
    c1: Res | None
    c2: Res | None
    qos: QosClass


G, B = QosClass.GUARANTEED, QosClass.BURSTABLE
GUARANTEED_100 = Res("100m", "100m", "100Mi", "100Mi")
BURSTABLE_50 = Res("50m", "100m", "50Mi", "100Mi")
CASES = {
    # The seven entries of upstream's table, in its order (ids: its names, made unique).
    "guaranteed-container-resources": Case(
        None, Res("50m", "50m", "70Mi", "70Mi"), Res("70m", "70m", "50Mi", "50Mi"), G),
    "guaranteed-no-container-resources": Case(GUARANTEED_100, None, None, G),
    "guaranteed-pod-and-container-resources": Case(GUARANTEED_100, BURSTABLE_50, BURSTABLE_50, G),
    "guaranteed-1-container-with-resources": Case(GUARANTEED_100, BURSTABLE_50, None, G),
    "burstable-no-container-resources": Case(BURSTABLE_50, None, None, B),
    "burstable-container-resources": Case(
        BURSTABLE_50, Res("20m", "100m", "20Mi", "100Mi"), Res("30m", "100m", "30Mi", "100Mi"), B),
    "burstable-1-container-with-resources": Case(BURSTABLE_50, Res("20m", "100m", "50Mi", "100Mi"), None, B),
    # Mixed: pod-level limits alone (requests default to them: Guaranteed); c1 has requests only, c2 nothing, and
    # both run under the pod's cpu.max and memory.max.
    "mixed-pod-limits-only": Case(Res(cpu_lim="100m", mem_lim="96Mi"), Res("20m", "", "20Mi", ""), None, G),
    # Mixed: a pod-level memory limit and no pod-level cpu limit; c1 has a memory limit of its own, c2 none (the pod
    # limit is its ceiling); no container has a cpu limit, so the pod has no cpu quota.
    "mixed-pod-memory-limit": Case(Res("50m", "", "64Mi", "128Mi"), Res("", "", "32Mi", "64Mi"), None, B),
}



@pytest.fixture(scope="module")
def deployed(node: Node, oracle: Oracle, base_config: KubeletConfig, _applied: Applied) -> Iterator[Deployed]:
    """The table's pods, all running together for the module (each pod's values are its own)."""
    kubelet = module_kubelet(node, oracle, base_config, _applied)
    pods = [make_pod(f"plr-{i}", [container("c1", case.c1), container("c2", case.c2)], case.pod)
            for i, case in enumerate(CASES.values())]
    with shared_deployment(node, oracle, kubelet, pods) as running:
        yield running


@pytest.fixture(scope="module")
def settled(node: Node, deployed: Deployed) -> SettledPods:
    return SettledPods(node, deployed.handles)


def _running(deployed: Deployed, case: str) -> tuple[PodHandle, PodExpectation]:
    """The case's pod, which upstream runs (CreateSync): both the node and the oracle must admit it."""
    name = f"plr-{list(CASES).index(case)}"
    handle, expected = deployed.handle(name), deployed.expected(name)
    assert handle.admitted and expected.admitted, (
        f"pod {expected.pod.ref} ({case}): upstream runs it; node admitted={handle.admitted} "
        f"errors={list(handle.errors)}; oracle admitted={expected.admitted} errors={list(expected.errors)}")
    check_admission(handle, expected)
    return handle, expected


@pytest.mark.parametrize("case", list(CASES))
def test_pod_runs_with_the_tables_qos(deployed: Deployed, case: str) -> None:
    """"verifying pod QoS as expected": the pod runs (upstream CreateSync) in the table's class, as the oracle says."""
    handle, expected = _running(deployed, case)
    check_qos(handle, expected, CASES[case].qos)


@pytest.mark.parametrize("case", list(CASES))
def test_pod_cgroup(deployed: Deployed, settled: SettledPods, case: str) -> None:
    """"verifying pod cgroup values": the pod cgroup's place, cpu.weight, cpu.max, memory.max (and the other files
    the oracle computes) against the oracle."""
    handle, expected = _running(deployed, case)
    rows = [r for r in compare_pod(expected, settled.of(handle)) if not r.container]
    assert_matches(f"pod {expected.pod.ref} ({case}) pod cgroup", rows)


@pytest.mark.parametrize("case", list(CASES))
def test_container_cgroups(deployed: Deployed, settled: SettledPods, case: str) -> None:
    """"verifying containers cgroup limits": each container's cpu.weight, cpu.max, memory.max (the pod-level limit
    where it has none), oom_score_adj, and the pause container, against the oracle."""
    handle, expected = _running(deployed, case)
    rows = [r for r in compare_pod(expected, settled.of(handle)) if r.container and r.container != PAUSE]
    assert_matches(f"pod {expected.pod.ref} ({case}) container cgroups", rows)
