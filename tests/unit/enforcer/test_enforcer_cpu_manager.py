"""The agent under the static CPU manager: each container's cpuset.cpus written, kept on a resize, freed on delete,
kept across an agent restart (the kubelet's cpu_manager_state), and no quota on a container with CPUs of its own.

Expected values worked by hand (4 CPUs, reservedSystemCPUs "0": exclusive CPUs come from {1, 2, 3}, lowest first;
pkg/kubelet/cm/cpumanager policy_static.go)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nodeconf.enforcer.agent import Agent
from nodeconf.node_facts import NodeFacts
from suites.toolkit.builders import container, pod_manifest
from tests.unit.enforcer.enforcer_support import make_agent

NODE4 = NodeFacts(memory_capacity=8 * 2**30, cpu_capacity_milli=4000)
STATIC = {"kind": "KubeletConfiguration", "cpuManagerPolicy": "static", "reservedSystemCPUs": "0",
          "featureGates": {"InPlacePodVerticalScalingExclusiveCPUs": True}}


def guaranteed(name: str, cpu: str) -> dict[str, Any]:
    both = {"cpu": cpu, "memory": "64Mi"}
    return pod_manifest(container("c", requests=both, limits=both), name=name)


def cgroup_of(agent: Agent, ref: str) -> str:
    (c,) = [c for c in agent.status(ref)["containers"] if c["name"] == "c"]
    return str(c["cgroup"])


def cpuset(agent: Agent, ref: str) -> str | None:
    return agent.tree.read(cgroup_of(agent, ref), "cpuset.cpus")


def test_cpusets_are_written_kept_on_resize_and_freed_on_delete(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, facts=NODE4)
    try:
        agent.configure(STATIC, "1.35")
        agent.run_pod(guaranteed("a", "1"))
        agent.run_pod(guaranteed("b", "1"))
        agent.run_pod(pod_manifest(container("c", requests={"memory": "64Mi"}), name="shared"))  # no cpu request
        assert (cpuset(agent, "default/a"), cpuset(agent, "default/b")) == ("1", "2")
        assert cpuset(agent, "default/shared") == "0,3"  # every CPU no container holds
        assert agent.tree.read(cgroup_of(agent, "default/a"), "cpu.max") == "max 100000"
        patch = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"},
                                                                    "limits": {"cpu": "2"}}}]}}
        assert agent.resize("default/a", patch)["status"] == "Applied"
        assert cpuset(agent, "default/a") == "1"  # keeps exactly what it holds (policy_static.go Allocate)
        assert cpuset(agent, "default/shared") == "0,3"
        agent.delete("default/b")
        assert cpuset(agent, "default/shared") == "0,2-3"
    finally:
        agent.shutdown()


def test_the_cpu_state_survives_an_agent_restart(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, facts=NODE4)
    agent.configure(STATIC, "1.35")
    agent.run_pod(guaranteed("a", "1"))
    agent.run_pod(guaranteed("b", "1"))
    agent.delete("default/a")
    agent.save()
    again = make_agent(tmp_path, facts=NODE4)
    try:
        assert again.oracle.cpu_assignments == agent.oracle.cpu_assignments
        again.run_pod(guaranteed("c", "1"))
        assert cpuset(again, "default/b") == "2"  # b keeps its CPU; c takes the one a gave back
        assert cpuset(again, "default/c") == "1"
    finally:
        again.shutdown()
        agent.shutdown()


def test_a_decrease_naming_must_keep_cpus_keeps_every_cpu_held(tmp_path: Path) -> None:
    """upstream's mustKeepCPUs patches: the env they name is dropped as the resize subresource drops it (strategy.go
    dropNonResizeUpdates), and a released kubelet keeps a container's CPUs through a resize (policy_static.go
    Allocate skips a container already in the state): 2 → 1 keeps {1, 2}, neither the lowest held nor the env's 2."""
    agent = make_agent(tmp_path, facts=NODE4)
    try:
        agent.configure(STATIC, "1.35")
        agent.run_pod(guaranteed("a", "2"))
        assert cpuset(agent, "default/a") == "1-2"
        one = {"cpu": "1", "memory": "64Mi"}
        patch = {"spec": {"containers": [{"name": "c", "env": [{"name": "mustKeepCPUs", "value": "2"}],
                                          "resources": {"requests": one, "limits": one}}]}}
        assert agent.resize("default/a", patch)["status"] == "Applied"
        assert cpuset(agent, "default/a") == "1-2"
        assert agent.oracle.cpu_assignments == {(agent.pods.record("default/a").pod.uid, "c"): frozenset({1, 2})}
    finally:
        agent.shutdown()
