"""The agent's `configure` as a kubelet restart: running pods keep the Memory QoS values the previous configuration
wrote, the QoS level is reset from 1.37, a resize rewrites what the kubelet rewrites (upstream memory_qos_test.go
"feature rollback"); the kept values survive an agent restart."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nodeconf.enforcer.agent import Agent
from nodeconf.enforcer.lifecycle import Faults
from suites.toolkit.builders import container, pod_manifest
from tests.unit.enforcer.enforcer_support import make_agent, running_agent

MI = 2**20
BURSTABLE = "kubepods.slice/kubepods-burstable.slice"
TIERED = {"kind": "KubeletConfiguration", "featureGates": {"MemoryQoS": True},
          "memoryReservationPolicy": "TieredReservation", "memoryThrottlingFactor": 0.9}
GATE_OFF = {"kind": "KubeletConfiguration", "featureGates": {"MemoryQoS": False}, "memoryReservationPolicy": "None"}
# floor((128Mi + 0.9 × 128Mi) / 4096) × 4096 (upstream's memqosExpectedMemoryHigh for 128Mi/256Mi).
HIGH = str(255012864)
RESIZE = {"spec": {"containers": [{"name": "app", "resources": {"requests": {"memory": "160Mi"},
                                                                "limits": {"memory": "320Mi"}}}]}}


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Agent]:
    yield from running_agent(tmp_path)


def rolled_back(agent: Agent, version: str) -> tuple[str, str]:
    """A burstable 128Mi/256Mi pod under TieredReservation, then the gate turned off: the pod and container cgroup."""
    agent.configure(TIERED, version)
    doc = pod_manifest(container("app", requests={"memory": "128Mi", "cpu": "50m"},
                                 limits={"memory": "256Mi", "cpu": "100m"}), name="rollback")
    status: dict[str, Any] = agent.run_pod(doc)["status"]
    app = next(c["cgroup"] for c in status["containers"] if c["name"] == "app")
    assert agent.tree.read(BURSTABLE, "memory.low") == str(128 * MI)
    agent.configure(GATE_OFF, version)
    return status["cgroup"], app


@pytest.mark.parametrize(("version", "qos_low", "resized_high"),
                         [("1.38", "0", "max"), ("1.36", str(128 * MI), HIGH)])
def test_gate_off_keeps_running_values_until_a_resize(agent: Agent, version: str, qos_low: str,
                                                      resized_high: str) -> None:
    pod, app = rolled_back(agent, version)
    assert agent.tree.read(BURSTABLE, "memory.low") == qos_low
    assert agent.tree.read(pod, "memory.low") == str(128 * MI)
    assert (agent.tree.read(app, "memory.low"), agent.tree.read(app, "memory.high")) == (str(128 * MI), HIGH)
    assert agent.resize("default/rollback", RESIZE)["status"] == "Applied"
    assert agent.tree.read(app, "memory.max") == str(320 * MI)
    assert (agent.tree.read(app, "memory.low"), agent.tree.read(app, "memory.high")) == (str(128 * MI),
                                                                                        resized_high)


def test_kept_values_survive_an_agent_restart(tmp_path: Path) -> None:
    """The state file carries them: a restarted agent does not rewrite what a kubelet restart kept."""
    first = make_agent(tmp_path)
    _, app = rolled_back(first, "1.38")
    first.save()
    second = make_agent(tmp_path)
    try:
        assert second.tree.read(app, "memory.high") == HIGH
    finally:
        second.shutdown()


def test_a_deleted_pod_keeps_nothing(agent: Agent) -> None:
    """A pod of the same name started after the rollback gets the new configuration's values."""
    rolled_back(agent, "1.38")
    agent.delete("default/rollback")
    assert agent.enforcement.kept.kept == {}


def test_the_restart_fault_rewrites_the_running_pod(tmp_path: Path) -> None:
    """`memory-qos-restart=ignore`: configure rewrites the running pod's Memory QoS values as if it had just started
    (the self-test fault of suites/memory_qos/test_rollback.py)."""
    faulty = make_agent(tmp_path, Faults.parse(["memory-qos-restart=ignore"]))
    try:
        pod, app = rolled_back(faulty, "1.38")
        assert (faulty.tree.read(pod, "memory.low"), faulty.tree.read(app, "memory.low")) == ("0", "0")
        assert faulty.tree.read(app, "memory.high") == "max"
    finally:
        faulty.shutdown()
