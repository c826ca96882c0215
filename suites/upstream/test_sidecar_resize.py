"""In-place resize of sidecar (restartable init) containers beside regular ones: a Guaranteed pod whose sums include
its sidecars, each "resizing" entry applied to a regular container and its sidecar together, then rolled back.

Source: upstream test/e2e/common/node/pod_resize.go doGuaranteedPodResizeTests, the resizePolicy entries "no restart
+ resize initContainers" and "cpu & mem restart + resize initContainers" (makeGuaranteedContainers with an init
container that is a sidecar; resizeInitCtrs: the sidecar gets the same desired values and the same restart rule),
each "resizing" entry (cpu, mem, both the same way, opposite ways), then doPatchAndRollback. nodeconf runs both
policies in one pod of two regular containers and two sidecars (one pair per policy), as its table pods do. The
status, every cgroup value (the pod cgroup's cpu.weight, cpu.max and memory.max sum the sidecars with the regular
containers: component-helpers AggregateContainerRequests/Limits) and the restart counts (upstream's expectRestart)
are compared.

Guarantee relied on: the kubelet actuates a resized sidecar as it does a regular container (kuberuntime
computePodResizeAction covers restartable init containers; the pod cgroup is resized from the new sums first when
growing, last when shrinking), and a container whose resizePolicy says RestartContainer for a changed resource is
restarted once (core/v1 ResourceResizeRestartPolicy).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

import pytest

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import Pod
from nodeconf.manifest_reader import object_from_dict
from nodeconf.nodes.base import Node, PodHandle
from nodeconf.semantics.expectation import Expected, PodExpectation, QosClass
from suites.toolkit.checks import check_pod, settled_evidence, wait_until
from suites.toolkit.compare import ComparedValue, assert_matches, compare_pod, compare_value
from suites.toolkit.kubelet import Applied, Kubelet, Oracle
from suites.toolkit.resize import decision, status_rows
from suites.upstream.resize_table import (
    GUARANTEED,
    GUARANTEED_ORIGINAL,
    PLR_RESIZE_TEST,
    RESIZE_TEST,
    UPSTREAM_GUARANTEED,
    expect_restart,
)
from suites.upstream.shared import POLICIES, Res, container, module_kubelet, shared_deployment

pytestmark = [pytest.mark.independent, pytest.mark.min_profile("1.35")]

RULE = "upstream pod_resize.go doPatchAndRollback with resizeInitCtrs (oracle: decide_resize)"
RESTART = "upstream pod_resize.go expectRestart: RestartContainer and that resource's values changed"
NAME = "resize-sidecar"
# nodeconf's policy id → upstream's resizePolicy entry text with its sidecar resized too.
UPSTREAM = {"no-restart": "no restart + resize initContainers",
            "cpu-mem-restart": "cpu & mem restart + resize initContainers"}
RESTART_WAIT = 15.0
# The tables whose "+ resize initContainers" container-level entries this pod mirrors: pod_level_resources_resize.go's
# leave the pod-level resources out for them (desiredPodCPU ""), so they are pod_resize.go's.
TABLES = {RESIZE_TEST: "Pod InPlace Resize Container / guaranteed qos - 1 container with resize policy",
          PLR_RESIZE_TEST: "PLR Pod InPlace Resize / PLR guaranteed qos - 1 container with resize policy"}


def regular(policy: str) -> str:
    return f"c-{policy}"


def sidecar(policy: str) -> str:
    return f"s-{policy}"


def sidecar_pod(own: Mapping[str, Res]) -> Pod:
    """A regular container and a sidecar per policy, each with the resources `own` names for its policy."""
    containers = [container(regular(p), own[p], POLICIES[p]) for p in UPSTREAM]
    sidecars = [{**container(sidecar(p), own[p], POLICIES[p]), "restartPolicy": "Always"} for p in UPSTREAM]
    obj = object_from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": NAME},
                            "spec": {"initContainers": sidecars, "containers": containers}}, source="suites/upstream")
    assert isinstance(obj, Pod)
    return obj


ORIGINAL = sidecar_pod(dict.fromkeys(UPSTREAM, GUARANTEED_ORIGINAL))


class Running:
    """The module's pod, its kubelet, and the spec the node last applied."""

    def __init__(self, handle: PodHandle, kubelet: Kubelet, expected: PodExpectation) -> None:
        self.handle, self.kubelet, self.current, self.expected = handle, kubelet, ORIGINAL, expected


@pytest.fixture(scope="module")
def running(node: Node, oracle: Oracle, base_config: KubeletConfig, _applied: Applied) -> Iterator[Running]:
    kubelet = module_kubelet(node, oracle, base_config, _applied)
    with shared_deployment(node, oracle, kubelet, [ORIGINAL]) as deployed:
        settled_evidence(deployed.handle(NAME))
        yield Running(deployed.handle(NAME), kubelet, deployed.expected(NAME))


def _restart_counts(handle: PodHandle) -> dict[str, int]:
    status = handle.status()
    return {name: status.container(name).restart_count for p in UPSTREAM for name in (regular(p), sidecar(p))}


def _body(policy: str, res: Res) -> dict[str, object]:
    resources = res.doc()
    return {"spec": {"containers": [{"name": regular(policy), "resources": resources}],
                     "initContainers": [{"name": sidecar(policy), "resources": resources}]}}


def _resize(oracle: Oracle, pod: Running, policy: str, before: Res, after: Res, step: str) -> list[ComparedValue]:
    """Resize the policy's regular container and sidecar from `before` to `after`: the node's answer, the restart
    counts upstream expects (after waiting for them), every cgroup value of the pod against the oracle."""
    desired = sidecar_pod({**dict.fromkeys(UPSTREAM, GUARANTEED_ORIGINAL), policy: after})
    counts = _restart_counts(pod.handle)
    status, message = decision(oracle, pod.kubelet, pod.current, desired)
    got = pod.handle.resize(_body(policy, after))
    if got.status == "Applied":
        pod.current = desired
    restarts = expect_restart(policy, before, after) if status == "Applied" else 0
    wanted = {name: counts[name] + (restarts if name in (regular(policy), sidecar(policy)) else 0) for name in counts}
    if restarts:
        with contextlib.suppress(AssertionError):  # the counts below name a container that did not restart
            wait_until(f"pod {NAME} {step}: restarts",
                       lambda: all(n >= wanted[c] for c, n in _restart_counts(pod.handle).items()), RESTART_WAIT)
    evidence = settled_evidence(pod.handle)
    expected = oracle.expect([pod.current], pod.kubelet.config).pods[0]
    return [*status_rows(NAME, got, status, message, f"{RULE} ({step})"),
            *(compare_value(NAME, c, evidence.container(c).cgroup.path, f"restart count {step}",
                            Expected(str(wanted[c]), RESTART), str(evidence.status.container(c).restart_count))
              for c in wanted),
            *compare_pod(expected, evidence)]


@pytest.mark.kubelet_code
def test_sidecar_pod_starts_as_the_oracle_says(running: Running) -> None:
    """The module's pod before any resize: admitted, Guaranteed, every value the oracle's. Judged here, not in the
    fixture, so a mismatch (e.g. a runtime's cpu.weight formula) fails this check and leaves the resizes to be
    judged on their own instead of breaking them all."""
    check_pod(running.handle, running.expected, QosClass.GUARANTEED)


@pytest.mark.parametrize(("policy", "entry"), [
    pytest.param(p, e, id=f"{p}-{e}", marks=[
        pytest.mark.upstream_e2e(file=file, case=f"{table} / {UPSTREAM[p]} / resizing / {UPSTREAM_GUARANTEED[e]}")
        for file, table in TABLES.items()])
    for p in UPSTREAM for e in GUARANTEED])
def test_sidecar_resize(oracle: Oracle, running: Running, policy: str, entry: str) -> None:
    """The policy's regular container and its sidecar resized to the entry's values and back: Applied each time,
    restarted once each under RestartContainer, every container and pod cgroup value (the pod's sums include both
    sidecars) as the oracle says."""
    if running.current != ORIGINAL:  # an earlier check failed before its rollback: start from the original
        for p in UPSTREAM:
            running.handle.resize(_body(p, GUARANTEED_ORIGINAL))
        running.current = ORIGINAL
        wait_until(f"pod {NAME} restored", lambda: running.handle.status().resize.status in ("", "Applied"))
    desired = GUARANTEED[entry]
    rows = _resize(oracle, running, policy, GUARANTEED_ORIGINAL, desired, "after resize")
    rows += _resize(oracle, running, policy, desired, GUARANTEED_ORIGINAL, "after rollback")
    assert_matches(f"pod {NAME} {policy} sidecar and container resize {entry} and rollback", rows)
