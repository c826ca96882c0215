"""Opt-in (`-m resize_gates`): upstream's node e2e resize tests (test/e2e_node/pod_resize_test.go), each under the four
settings of the kubelet gates InPlacePodVerticalScalingAllocatedStatus and InPlacePodVerticalScalingExclusiveCPUs, one
pod per check: created, resized, rolled back; after each step every cgroup value as the oracle says, each container's
status resources and allocated resources, and its restart count as upstream expects.

Source: kubernetes test/e2e_node/pod_resize_test.go (doPodResizeTests, the CPU manager policy "none" entries:
patchAndVerify verifies the cgroups, the status resources and the restarts after the resize and after the rollback)
and suites/upstream/resize_gate_table.py. The gates reach the node through the kubelet config's featureGates. Neither
changes what this kubelet does (nodeconf/semantics/profile.py: ExclusiveCPUs is read only under the static CPU
manager policy, AllocatedStatus by no kubelet code path), so every expectation is the same under all four; the
checks run under the newest profile that has both gates (AllocatedStatus is gone from 1.36).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import pytest

from nodeconf.fixtures.node import Deploy
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.nodes.base import Node, PodStatus
from nodeconf.quantity import Quantity
from nodeconf.semantics.expectation import Expected
from nodeconf.semantics.profile import profile_for
from nodeconf.semantics.resize import STATUS_RESOURCES_RULE
from suites.toolkit.checks import check_pod, deploy_pods
from suites.toolkit.compare import ComparedValue, assert_matches, compare_value
from suites.toolkit.kubelet import Applied, Kubelet, Oracle, with_gates
from suites.toolkit.resize import decision
from suites.upstream.resize_gate_table import ALLOCATED_STATUS, CASES, FILE, GATE_SETTINGS, Ctr, GateCase, Gates
from suites.upstream.resize_steps import Resizable, resize_step
from suites.upstream.shared import Res

pytestmark = [
    pytest.mark.resize_gates,
    pytest.mark.runs_alone("switches the kubelet's feature gates (a kubelet restart) and resizes against the node's "
                           "allocatable"),
]

RESIZE = "upstream test/e2e_node/pod_resize_test.go patchAndVerify (oracle: decide_resize)"
RESTART = "upstream pod_resize_test.go expected RestartCount (rollback: the same containers restart again)"
STATUS = f"upstream VerifyPodStatusResources; {STATUS_RESOURCES_RULE}"
NEWEST_WITH_GATES = "1.35"  # AllocatedStatus: deprecated in 1.33, removed in 1.36 (semantics/profile.py)


def gates_profile(running: str) -> str:
    """The run's profile when its kubelet knows both gates, else the newest that does."""
    return running if ALLOCATED_STATUS in profile_for(running).gates else NEWEST_WITH_GATES


def _canonical(doc: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={Quantity.of(Quantity.parse(v).amount)}" for k, v in sorted(doc.items()))


def _resources_text(doc: Mapping[str, Mapping[str, str]]) -> str:
    return "; ".join(f"{k} {_canonical(doc[k])}" for k in ("requests", "limits") if doc.get(k))


def status_rows(pod: str, status: PodStatus, containers: Sequence[Ctr], step: str) -> list[ComparedValue]:
    """Each container's status.resources against the test's resources (VerifyPodStatusResources), and its
    status.allocatedResources against their requests where the node reports the field (an API server drops it
    with its own InPlacePodVerticalScalingAllocatedStatus off; the kubelet always sends it)."""
    rows = []
    for c in containers:
        got = status.container(c.name)
        want = c.res.doc()
        rows.append(compare_value(pod, c.name, "(status)", f"status.resources {step}",
                                  Expected(_resources_text(want), STATUS), _resources_text(got.resources or {})))
        if got.allocated_resources is not None:
            rows.append(compare_value(pod, c.name, "(status)", f"status.allocatedResources {step}",
                                      Expected(_canonical(want.get("requests", {})), STATUS_RESOURCES_RULE),
                                      _canonical(got.allocated_resources)))
    return rows


def _body(resources: Mapping[str, Res]) -> dict[str, object]:
    """A resize patch setting these requests and limits per container (the test's patch string; its rollback,
    ResizeContainerPatch, names every container's original values)."""
    return {"spec": {"containers": [{"name": name, "resources": res.doc()} for name, res in resources.items()]}}


def _cases() -> list[object]:
    return [pytest.param(case, gates, id=f"{case.id}-{gates.id}",
                         marks=pytest.mark.upstream_e2e(file=FILE, case=gates.case_text(case)))
            for gates in GATE_SETTINGS for case in CASES]


@pytest.mark.parametrize(("case", "gates"), _cases())
def test_resize_under_gates(node: Node, oracle: Oracle, base_config: KubeletConfig, _applied: Applied,
                            deploy: Deploy, case: GateCase, gates: Gates) -> None:
    """The test's pod as created, after the resize and after the rollback: the node's resize answer as the oracle
    decides, every cgroup value as the oracle says, status resources as the test's, restarts as upstream expects."""
    version = gates_profile(oracle.version)
    judge = replace(oracle, version=version)
    kubelet = Kubelet(node, version, base_config, _applied)
    kubelet.use(with_gates(base_config, gates.feature_gates))
    name = f"gates-{case.id}"
    pod, resized = case.pod(name), case.pod(name, case.resized())
    first = judge.expect([pod], kubelet.config).pods[0]
    if not first.admitted:
        pytest.skip(f"this node cannot admit the test's pod: {'; '.join(first.errors)}")
    answer, message = decision(judge, kubelet, pod, resized)
    if answer != "Applied":
        pytest.skip(f"the test's resize does not fit this node ({answer}: {message}); upstream expects it actuated")
    deployed = deploy_pods(deploy, judge, kubelet, [pod])
    handle = deployed.handle(name)
    check_pod(handle, deployed.expected(name))
    assert_matches(f"pod {pod.ref} as created", status_rows(name, handle.status(), case.containers, "as created"))
    running = Resizable.running(handle, deployed.expected(name), pod, kubelet)
    rows = resize_step(judge, running, resized, _body(case.patch), case.restarts, RESIZE, RESTART,
                       "after resize")
    rows += status_rows(name, handle.status(), case.resized(), "after resize")
    rollback = _body({c.name: c.res for c in case.containers})
    rows += resize_step(judge, running, pod, rollback, case.restarts, RESIZE, RESTART, "after rollback")
    rows += status_rows(name, handle.status(), case.containers, "after rollback")
    assert_matches(f"pod {pod.ref} resize {case.id} and rollback under {gates.id}", rows)
