"""Memory QoS: upstream test/e2e_node/memory_qos_test.go entries that one pod answers, and the pod memory.low after a
resize under TieredReservation (issue 30).

Source: kubernetes test/e2e_node/memory_qos_test.go (the cases named in each marker); the memory-qos-v1.36 post's
QoS table; SEMANTICS.md Memory QoS.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from nodeconf.fixtures.markers import mirrors
from nodeconf.fixtures.node import Deploy
from nodeconf.manifest import MEMORY, Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.nodes.base import PodEvidence
from nodeconf.semantics.expectation import Expected, QosClass
from suites.memory_qos.sources import (
    EDGES,
    HIGH,
    MEMORY_QOS_TEST,
    MI,
    POLICIES,
    POST_TABLE,
    PROTECTION,
    THROTTLING,
    upstream_pod,
)
from suites.toolkit.checks import check_pod, deploy_pods, seed_files, settled_evidence
from suites.toolkit.compare import ComparedValue, assert_matches, compare_pod, compare_value
from suites.toolkit.kubelet import Kubelet, Oracle
from suites.toolkit.pods import with_container
from suites.toolkit.resize import decision, patch, status_rows
from suites.toolkit.tolerance import page_floor

pytestmark = [pytest.mark.memory_qos, pytest.mark.min_profile("1.36")]

pytestmark.append(pytest.mark.runs_alone(
    "reconfigures the kubelet (Memory QoS policy, memoryThrottlingFactor) and judges the pod and container memory "
    "protection it leads to"))


# upstream memory_qos_test.go entries that one pod answers: its policy and memoryThrottlingFactor (None: left out), the
# pod, its QoS class, the cases; the values the test states literally are in _literals, each with the upstream words
# it comes from. The sizes are upstream's (the pods only sleep).
CPU = "cpu"
EVENTS = "MemoryQoS / memory.events observability / should have memory.events file with expected counters"
# cgroup-v2.rst "memory.events": the kernel lists these counters in every memory cgroup, from its creation.
EVENT_COUNTERS = ("low", "high", "max", "oom", "oom_kill")


def _multi_container() -> Pod:
    """upstream's memqos-multi-container: requests 128Mi and 256Mi, both limited to 512Mi."""
    first = upstream_pod("memqos-multi-container", {MEMORY: "128Mi"}, {MEMORY: "512Mi"})
    second = replace(with_container(first, "app", requests={MEMORY: "256Mi"}).containers[0], name="second")
    return first.with_containers([first.containers[0], second], [])


def _equal_memory() -> Pod:
    """upstream's memqos-burstable-equal-mem: memory request == limit (128Mi), cpu 100m below its 200m limit."""
    return upstream_pod("memqos-burstable-equal-mem", {MEMORY: "128Mi", CPU: "100m"}, {MEMORY: "128Mi", CPU: "200m"})


def _literals(p: Pod, evidence: PodEvidence, page: int) -> list[ComparedValue]:
    """What upstream's entry for `p` asserts, from its words (never from the oracle)."""
    app = evidence.container("app").cgroup
    if p.name == "memqos-multi-container":
        return [*seed_files(p.name, "", evidence.pod_cgroup, {"memory.low": str(384 * MI)},
                            f"{PROTECTION}pod-level memory.low = sum(container requests) (128Mi + 256Mi)"),
                *[row for c, mib in (("app", 128), ("second", 256)) for row in seed_files(
                    p.name, c, evidence.container(c).cgroup, {"memory.low": str(mib * MI)}, POST_TABLE)]]
    if p.name == "memqos-high-pod-level":
        return seed_files(p.name, "", evidence.pod_cgroup, {"memory.high": "max"},
                          f"{THROTTLING}memory.high is set at container level only, never on the pod cgroup")
    if p.name == "memqos-factor-1":
        return seed_files(p.name, "app", app, {"memory.high": str(page_floor(512 * MI, page))},
                          f"{HIGH}; factor 1.0: floor((req + 1.0 × (limit − req))/page) × page = the limit")
    if p.name == "memqos-nil-factor":
        return seed_files(p.name, "app", app, {"memory.high": "max"},
                          f"{THROTTLING}memoryThrottlingFactor nil (the 1.37+ default): memory.high stays max")
    if p.name == "memqos-events":
        events = app.keyed("memory.events")
        rule = f"{EVENTS} (cgroup-v2.rst memory.events: every counter from creation; high 0 while idle)"
        return [compare_value(p.name, "app", app.path, "memory.events counters present",
                              Expected(" ".join(EVENT_COUNTERS), rule),
                              " ".join(c for c in EVENT_COUNTERS if c in events)),
                compare_value(p.name, "app", app.path, "memory.events high", Expected("0", rule),
                              str(events["high"]) if "high" in events else None)]
    return seed_files(p.name, "app", app, {"memory.low": str(128 * MI), "memory.min": "0"},
                      f"{EDGES}Burstable (cpu differs) with memory request == limit: memory.low, not memory.min")


ENTRIES = {
    "multi-container-pod-low": ("tiered", 0.9, _multi_container, QosClass.BURSTABLE, (
        f"{PROTECTION}should set pod-level memory.low = sum(container requests) for multi-container pod",)),
    "pod-level-high": ("none", 0.9, lambda: upstream_pod("memqos-high-pod-level", {MEMORY: "128Mi"},
                                                            {MEMORY: "256Mi"}), QosClass.BURSTABLE,
                       (f"{THROTTLING}should NOT set memory.high on pod-level cgroup",)),
    "factor-1": ("none", 1.0, lambda: upstream_pod("memqos-factor-1", {MEMORY: "256Mi"}, {MEMORY: "512Mi"}),
                 QosClass.BURSTABLE, (f"{THROTTLING}should set memory.high = limit when memoryThrottlingFactor=1.0",)),
    "factor-unset": ("none", None, lambda: upstream_pod("memqos-nil-factor", {MEMORY: "256Mi"}, {MEMORY: "512Mi"}),
                     QosClass.BURSTABLE,
                     (f"{THROTTLING}should NOT set memory.high when memoryThrottlingFactor is nil (default)",)),
    "events": ("none", 0.9, lambda: upstream_pod("memqos-events", {MEMORY: "128Mi"}, {MEMORY: "256Mi"}),
               QosClass.BURSTABLE, (EVENTS,)),
    "request-eq-limit-cpu-differs": ("tiered", 0.9, _equal_memory, QosClass.BURSTABLE, (
        f"{EDGES}should use memory.low for Burstable pod where memory req == limit but CPU differs",)),
}
# memoryThrottlingFactor nil means no memory.high from 1.37; before, the kubelet's defaulting made it 0.9.
ENTRY_MARKS = {"factor-unset": (pytest.mark.min_profile("1.37"),)}


@pytest.mark.parametrize("entry", [pytest.param(name, id=name, marks=(*ENTRY_MARKS.get(name, ()), *(
    pytest.mark.upstream_e2e(file=MEMORY_QOS_TEST, case=case) for case in spec[4]))) for name, spec in ENTRIES.items()])
def test_upstream_entry(deploy: Deploy, oracle: Oracle, kubelet: Kubelet, node_facts: NodeFacts, entry: str) -> None:
    """One upstream entry's pod under its kubelet config: the oracle's values and the ones upstream states."""
    policy, factor, make, qos, _ = ENTRIES[entry]
    kubelet.use(replace(kubelet.file(POLICIES[policy]), memory_throttling_factor=factor))
    workload = make()
    deployed = deploy_pods(deploy, oracle, kubelet, [workload])
    check_pod(deployed.handle(workload.name), deployed.expected(workload.name), qos,
              seed=lambda evidence: _literals(workload, evidence, node_facts.page_size))


RESIZED_LOW = ("MemoryQoS / IPPR resize with memory protection / "
               "should update pod-level memory.low after Burstable pod resize")


@mirrors(MEMORY_QOS_TEST, RESIZED_LOW)
def test_pod_memory_low_follows_a_resize(deploy: Deploy, oracle: Oracle, kubelet: Kubelet) -> None:
    """Under TieredReservation, upstream's resize of memory request 128Mi → 192Mi (limit 256Mi → 384Mi, no restart):
    the pod's and the container's memory.low follow the new request; every memory value as the oracle's resized pod."""
    kubelet.use(replace(kubelet.file(POLICIES["tiered"]), memory_throttling_factor=0.9))
    before = upstream_pod("memqos-resize-protection", {MEMORY: "128Mi", CPU: "50m"}, {MEMORY: "256Mi", CPU: "100m"})
    deployed = deploy_pods(deploy, oracle, kubelet, [before])
    handle = deployed.handle(before.name)

    def low(mib: int, step: str) -> Callable[[PodEvidence], list[ComparedValue]]:
        return lambda evidence: seed_files(before.name, "", evidence.pod_cgroup, {"memory.low": str(mib * MI)},
                                           f"{RESIZED_LOW} ({step}: the container's memory request)")

    check_pod(handle, deployed.expected(before.name), QosClass.BURSTABLE, seed=low(128, "before the resize"))
    after = with_container(before, "app", requests={MEMORY: "192Mi", CPU: "50m"}, limits={MEMORY: "384Mi", CPU: "100m"})
    status, message = decision(oracle, kubelet, before, after)
    got = handle.resize(patch("app", {"requests": {MEMORY: "192Mi"}, "limits": {MEMORY: "384Mi"}}))
    evidence = settled_evidence(handle)
    expected = oracle.expect([after], kubelet.config).pods[0]
    assert_matches(f"pod {before.ref} resized under TieredReservation", [
        *status_rows(before.name, got, status, message, f"{RESIZED_LOW} (the oracle's decision)"),
        *[row for row in compare_pod(expected, evidence) if row.file.startswith("memory.")],
        *low(192, "after the resize")(evidence),
    ])
