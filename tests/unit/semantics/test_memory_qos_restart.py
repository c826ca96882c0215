"""Memory QoS after a kubelet restart with a new configuration and after a later resize (semantics.memory_qos_restart),
with the values upstream's memory_qos_test.go "feature rollback" cases state."""

from __future__ import annotations

from typing import Any

import pytest

from nodeconf.kubelet_config import KubeletConfig, kubelet_config_from_dict
from nodeconf.manifest import Pod
from nodeconf.manifest_reader import object_from_dict
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics.expect import expect
from nodeconf.semantics.expectation import NodeExpectation
from nodeconf.semantics.memory_qos_restart import after_resize, after_restart
from nodeconf.semantics.profile import profile_for
from suites.toolkit.builders import container, pod_manifest

MI = 2**20
NODE = NodeFacts(memory_capacity=4096 * MI, swap_capacity=0, cpu_capacity_milli=2000)
BURSTABLE = "kubepods.slice/kubepods-burstable.slice"
KUBEPODS = "kubepods.slice"
TIERED = {"featureGates": {"MemoryQoS": True}, "memoryReservationPolicy": "TieredReservation",
          "memoryThrottlingFactor": 0.9}
GATE_OFF = {"featureGates": {"MemoryQoS": False}, "memoryReservationPolicy": "None"}
POLICY_NONE = {"featureGates": {"MemoryQoS": True}, "memoryReservationPolicy": "None", "memoryThrottlingFactor": 0.9}
# floor((128Mi + 0.9 × (256Mi − 128Mi)) / 4096) × 4096: upstream's memqosExpectedMemoryHigh for 128Mi/256Mi.
HIGH_128_256 = str(255012864)


def config(doc: dict[str, Any]) -> KubeletConfig:
    return kubelet_config_from_dict({"kind": "KubeletConfiguration", **doc})


def burstable(request: str = "128Mi", limit: str = "256Mi") -> Pod:
    doc = pod_manifest(container("app", requests={"memory": request, "cpu": "50m"},
                                 limits={"memory": limit, "cpu": "100m"}), name="memqos-rollback")
    made = object_from_dict(doc, source="test")
    assert isinstance(made, Pod)
    return made


def node(pod: Pod, doc: dict[str, Any], version: str) -> NodeExpectation:
    return expect([pod], NODE, config(doc), profile_for(version, config(doc)))


def restarted(old: dict[str, Any], new: dict[str, Any], version: str) -> NodeExpectation:
    pod = burstable()
    return after_restart(node(pod, old, version), node(pod, new, version), profile_for(version, config(new)))


@pytest.mark.parametrize(("version", "qos_low"), [("1.38", "0"), ("1.37", "0"), ("1.36", str(128 * MI))])
def test_gate_off_resets_the_qos_level_from_137_and_keeps_the_pods(version: str, qos_low: str) -> None:
    """"should reset memory protection to 0 when MemoryQoS is disabled": burstable memory.low 0 (from 1.37,
    kubernetes#138903; 1.36 keeps it); "[known limitation]": the container's memory.low persists, so does the pod's."""
    after = restarted(TIERED, GATE_OFF, version)
    assert after.cgroups[BURSTABLE].files["memory.low"].value == qos_low
    assert after.cgroups[KUBEPODS].files["memory.min"].value == ("0" if version != "1.36" else str(128 * MI))
    pe = after.pods[0]
    assert pe.cgroup is not None
    assert pe.cgroup.files["memory.low"].value == str(128 * MI)
    app = pe.container("app").cgroup.files
    assert (app["memory.low"].value, app["memory.high"].value) == (str(128 * MI), HIGH_128_256)


def test_policy_none_clears_the_qos_level_and_keeps_the_container() -> None:
    """"should clear memory protection at QoS level when switching from TieredReservation to None"."""
    after = restarted(TIERED, POLICY_NONE, "1.38")
    assert after.cgroups[BURSTABLE].files["memory.low"].value == "0"
    assert after.pods[0].container("app").cgroup.files["memory.low"].value == str(128 * MI)


@pytest.mark.parametrize(("version", "high"), [("1.38", "max"), ("1.37", "max"), ("1.36", HIGH_128_256)])
def test_resize_with_the_gate_off_resets_memory_high_from_137(version: str, high: str) -> None:
    """"should clear stale memory.high when MemoryQoS is disabled and container is resized" (kubernetes#139377);
    the container's memory.low stays (no MemoryQoS value is written with the gate off)."""
    before = restarted(TIERED, GATE_OFF, version).pods[0]
    resized = node(burstable("160Mi", "320Mi"), GATE_OFF, version).pods[0]
    after = after_resize(before, resized, profile_for(version, config(GATE_OFF))).container("app").cgroup.files
    assert (after["memory.high"].value, after["memory.low"].value) == (high, str(128 * MI))
    assert after["memory.max"].value == str(320 * MI)


def test_factor_set_on_a_running_node_applies_at_the_next_resize() -> None:
    """"should set memory.high after updating memoryThrottlingFactor from nil to 0.9 and resizing": max before and
    after the restart, floor((160Mi + 0.9 × 160Mi)/4096) × 4096 after the resize to 160Mi/320Mi."""
    nil, factor = {"featureGates": {"MemoryQoS": True}}, {"featureGates": {"MemoryQoS": True},
                                                          "memoryThrottlingFactor": 0.9}
    kept = restarted(nil, factor, "1.38").pods[0]
    assert kept.container("app").cgroup.files["memory.high"].value == "max"
    resized = node(burstable("160Mi", "320Mi"), factor, "1.38").pods[0]
    after = after_resize(kept, resized, profile_for("1.38", config(factor)))
    assert after.container("app").cgroup.files["memory.high"].value == str(318767104)
