"""Memory QoS switched off, or its policy or throttling factor changed, on a node with a running pod: the kubelet
restarts, the pod keeps running, and only some values follow the new configuration (issue 30, upstream
memory_qos_test.go "feature rollback" and its neighbours).

What the kubelet rewrites at a restart and at a resize: nodeconf/semantics/memory_qos_restart.py, with its sources
(kubernetes#138903 startup reset of the QoS levels, #139377 memory.high reset on resize, #137674 pod and container
values kept). Expected values come from that oracle (the old configuration's expectation, the new one's, the rule
between them); the node's are read after the restart and after the resize. Deterministic: the restart and the resize
are requests the node answers once applied, and the kernel reads back the last value written to a cgroup file
(cgroup-v2.rst: memory.min/low/high are plain read-write files, nothing else writes them here).
Both upstream describes were skipped in 1.36 (kubernetes#138485) and assert the 1.37 kubelet, so from profile 1.37.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import pytest

from nodeconf.fixtures.node import Deploy
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import MEMORY, Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.nodes.base import PodEvidence
from nodeconf.semantics.expectation import Expected, NodeExpectation, QosClass
from nodeconf.semantics.memory_qos_restart import after_resize, after_restart
from suites.memory_qos.sources import EDGES, MEMORY_QOS_TEST, MI, POLICIES, POLICY, ROLLBACK, upstream_pod
from suites.toolkit.checks import check_node, check_pod, deploy_pods, seed_files, settled_evidence
from suites.toolkit.compare import ComparedValue, assert_matches, compare_node_cgroups, compare_pod, compare_value
from suites.toolkit.kubelet import Kubelet, Oracle, with_gates
from suites.toolkit.pods import with_container
from suites.toolkit.resize import decision, patch, status_rows
from suites.toolkit.tolerance import page_floor

pytestmark = [pytest.mark.memory_qos, pytest.mark.min_profile("1.37"), pytest.mark.runs_alone(
    "restarts the kubelet with Memory QoS off, another policy or another throttling factor while a pod runs")]

CPU = "cpu"
GATE_OFF = {"MemoryQoS": False}


def _tiered(kubelet: Kubelet) -> KubeletConfig:
    return replace(kubelet.file(POLICIES["tiered"]), memory_throttling_factor=0.9)


def _gate_off(kubelet: Kubelet) -> KubeletConfig:
    """upstream's rollback: featureGates.MemoryQoS false, memoryReservationPolicy None."""
    return with_gates(kubelet.file(POLICIES["none"]), GATE_OFF)


def _policy_none(kubelet: Kubelet) -> KubeletConfig:
    return replace(kubelet.file(POLICIES["none"]), memory_throttling_factor=0.9)


def _restarted(kubelet: Kubelet, oracle: Oracle, before: NodeExpectation, pods: Sequence[Pod],
               new: KubeletConfig) -> NodeExpectation:
    """The kubelet restarted with `new`: what the oracle says the node then holds for the same `pods`."""
    fresh = oracle.expect(pods, kubelet.use(new))
    return after_restart(before, fresh, oracle.profile(new))


# The QoS-level rollbacks: the new configuration, the upstream cases, the literal rows each states after the restart.
ROLLBACKS: dict[str, tuple[Callable[[Kubelet], KubeletConfig], tuple[str, ...]]] = {
    "gate-off": (_gate_off, (f"{ROLLBACK}should reset memory protection to 0 when MemoryQoS is disabled",
                             f"{ROLLBACK}should not clobber other cgroup values when clearing stale memory protection "
                             "at startup",
                             f"{EDGES}should persist container-level memory.low after rollback [known limitation]")),
    "policy-none": (_policy_none, (f"{POLICY}should clear memory protection at QoS level when switching from "
                                   "TieredReservation to None",)),
}


@pytest.mark.parametrize("rollback", [pytest.param(name, id=name, marks=[
    pytest.mark.upstream_e2e(file=MEMORY_QOS_TEST, case=case) for case in cases])
    for name, (_, cases) in ROLLBACKS.items()])
def test_rollback_clears_the_qos_level_and_keeps_the_pod(deploy: Deploy, oracle: Oracle, kubelet: Kubelet,
                                                         rollback: str) -> None:
    """A Burstable 128Mi/256Mi pod under TieredReservation, then the kubelet restarted without it: the burstable
    slice's memory.low (and kubepods' memory.min) back to 0 at start, its cpu.max and memory.max untouched, the
    pod's and the container's memory.low as they were ("[known limitation]": what the kubelet really does).

    Relies on: the kubelet's start-up writes (qos_container_manager_linux.go Start, setMemoryQoS,
    enforceNodeAllocatableCgroups) and on cgroup v2 keeping a file's value until it is written again."""
    make, _ = ROLLBACKS[rollback]
    kubelet.use(_tiered(kubelet))
    workload = upstream_pod(f"memqos-{rollback}", {MEMORY: "128Mi"}, {MEMORY: "256Mi"})
    deployed = deploy_pods(deploy, oracle, kubelet, [workload])
    handle = deployed.handle(workload.name)
    check_pod(handle, deployed.expected(workload.name), QosClass.BURSTABLE, seed=lambda evidence: seed_files(
        workload.name, "app", evidence.container("app").cgroup, {"memory.low": str(128 * MI)},
        "memory_qos_test.go: memory.low = the request while MemoryQoS is on"))
    check_node(kubelet.node, deployed.expectation, "node under TieredReservation")
    after = _restarted(kubelet, oracle, deployed.expectation, [workload], make(kubelet))
    evidence = settled_evidence(handle)
    nodes = kubelet.node.node_cgroups()
    burstable = next(path for path in after.cgroups if path.endswith(("burstable.slice", "burstable")))
    words = f"{MEMORY_QOS_TEST} {rollback}"
    literals = [compare_value("", "", burstable, "memory.low", Expected("0", f"{words}: QoS memory.low reset to 0"),
                              nodes[burstable].get("memory.low")),
                *(seed_files(workload.name, "app", evidence.container("app").cgroup, {"memory.low": str(128 * MI)},
                             f"{EDGES}should persist container-level memory.low after rollback [known limitation]")
                  if rollback == "gate-off" else [])]
    # "should not clobber other cgroup values": the burstable slice's cpu.max and memory.max are among the oracle's
    # node files, checked before the restart (check_node) and after it (compare_node_cgroups).
    assert_matches(f"pod {workload.ref} after a kubelet restart ({rollback})", [
        *compare_pod(after.pod(workload.name), evidence), *compare_node_cgroups(after.cgroups, nodes), *literals])


def _high(request_mib: int, limit_mib: int, page: int) -> str:
    """upstream's memqosExpectedMemoryHigh at factor 0.9: floor((req + 0.9 × (limit − req)) / page) × page."""
    request, limit = request_mib * MI, limit_mib * MI
    return str(page_floor(int(request + 0.9 * (limit - request)), page))


def _gate_off_then(kubelet: Kubelet) -> tuple[KubeletConfig, KubeletConfig]:
    return _tiered(kubelet), _gate_off(kubelet)


def _factor_set(kubelet: Kubelet) -> tuple[KubeletConfig, KubeletConfig]:
    nil = replace(kubelet.file(POLICIES["none"]), memory_throttling_factor=None)
    return nil, replace(nil, memory_throttling_factor=0.9)


# Resized after the restart: the two configurations and memory.high as upstream states it before the restart, after
# it and after the resize to 160Mi/320Mi (a function of the page size).
RESIZES: dict[str, tuple[Callable[[Kubelet], tuple[KubeletConfig, KubeletConfig]], Callable[[int], tuple[str, ...]],
                         str]] = {
    "gate-off": (_gate_off_then, lambda page: (_high(128, 256, page), _high(128, 256, page), "max"),
                 f"{ROLLBACK}should clear stale memory.high when MemoryQoS is disabled and container is resized"),
    "factor-set": (_factor_set, lambda page: ("max", "max", _high(160, 320, page)),
                   f"{ROLLBACK}should set memory.high after updating memoryThrottlingFactor from nil to 0.9 and "
                   "resizing"),
}


@pytest.mark.parametrize("change", [pytest.param(name, id=name, marks=[
    pytest.mark.upstream_e2e(file=MEMORY_QOS_TEST, case=case)]) for name, (_, _, case) in RESIZES.items()])
def test_memory_high_follows_the_new_configuration_at_the_next_resize(
        deploy: Deploy, oracle: Oracle, kubelet: Kubelet, node_facts: NodeFacts, change: str) -> None:
    """memory.high of a running container keeps what the old configuration gave it across the kubelet restart
    ("no reconciliation for config-only changes") and takes the new one's when a resize rewrites it.

    Relies on: the kubelet writing a container's memory.high only at creation and in UpdateContainerResources
    (generateLinuxContainerResources), and cgroup v2 keeping it until then."""
    configs, highs, case = RESIZES[change]
    old, new = configs(kubelet)
    kubelet.use(old)
    before = upstream_pod(f"memqos-{change}", {MEMORY: "128Mi", CPU: "50m"}, {MEMORY: "256Mi", CPU: "100m"})
    deployed = deploy_pods(deploy, oracle, kubelet, [before])
    handle = deployed.handle(before.name)
    want = highs(node_facts.page_size)

    def high(value: str, step: str) -> Callable[[PodEvidence], list[ComparedValue]]:
        return lambda evidence: seed_files(before.name, "app", evidence.container("app").cgroup,
                                           {"memory.high": value}, f"{case} ({step})")

    check_pod(handle, deployed.expected(before.name), QosClass.BURSTABLE, seed=high(want[0], "before the restart"))
    restarted = _restarted(kubelet, oracle, deployed.expectation, [before], new).pod(before.name)
    evidence = settled_evidence(handle)
    assert_matches(f"pod {before.ref} after a kubelet restart ({change})",
                   [*compare_pod(restarted, evidence), *high(want[1], "after the restart")(evidence)])
    after = with_container(before, "app", requests={MEMORY: "160Mi", CPU: "50m"}, limits={MEMORY: "320Mi", CPU: "100m"})
    status, message = decision(oracle, kubelet, before, after)
    got = handle.resize(patch("app", {"requests": {MEMORY: "160Mi"}, "limits": {MEMORY: "320Mi"}}))
    resized = after_resize(restarted, oracle.expect([after], kubelet.config).pod(before.name), oracle.profile(new))
    evidence = settled_evidence(handle)
    # The memory files only: a running process keeps the oom_score_adj it started with (runc#4669), as the Memory
    # QoS resize check of test_upstream_entries.py compares.
    assert_matches(f"pod {before.ref} resized after the restart ({change})", [
        *status_rows(before.name, got, status, message, f"{case} (the oracle's decision)"),
        *[row for row in compare_pod(resized, evidence) if row.file.startswith("memory.")],
        *high(want[2], "after the resize")(evidence)])
