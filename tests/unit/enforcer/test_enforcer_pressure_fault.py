"""The enforcer's node pressure: memory.available and pid.available checks, their conditions and events, and the
`eviction=ignore-priority` fault. Under the fault every pod ranks as priority 0, so of two BestEffort hogs (or fork
bombs) the larger goes first whatever its priority; without it the lower priority goes first."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from nodeconf.enforcer.cgroupfs import CgroupTree
from nodeconf.enforcer.lifecycle import Faults
from nodeconf.enforcer.pressure import EVICTION_INTERVAL, NodePressure
from nodeconf.enforcer.records import PAUSE, REGULAR, ContainerRecord, PodRecord
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import Container, Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics.eviction import PidObservation

MI = 2**20
HIGH = 999_999_999


def _pod(tree_root: Path, name: str, priority: int, used_mib: int = 0, processes: int = 1) -> PodRecord:
    """A BestEffort pod whose one container's cgroup (a plain directory) holds `used_mib` MiB, none inactive, and
    `processes` pids; its pause cgroup holds one more, which the kubelet does not count."""
    pod_cgroup = f"kubepods/besteffort/pod-{name}"
    for sub, pids, mib in (("app", processes, used_mib), ("pause", 1, 0)):
        directory = tree_root / pod_cgroup / sub
        directory.mkdir(parents=True)
        (directory / "memory.current").write_text(f"{mib * MI}\n")
        (directory / "memory.stat").write_text("inactive_file 0\n")
        (directory / "cgroup.procs").write_text("".join(f"{1000 + i}\n" for i in range(pids)))
    pod = Pod(name=name, containers=(Container("app"),), priority_value=priority)
    return PodRecord(pod, "BestEffort", pod_cgroup,
                     [ContainerRecord("pause", PAUSE, f"{pod_cgroup}/pause", ("sleep",), 999),
                      ContainerRecord("app", REGULAR, f"{pod_cgroup}/app", ("sleep",), 1000)])


@pytest.mark.parametrize(("ignore", "first"), [(False, "low"), (True, "high-and-larger")])
def test_ignore_priority_ranks_by_usage_alone(tmp_path: Path, ignore: bool, first: str) -> None:
    assert Faults.parse(["eviction=ignore-priority"]).eviction_ignores_priority
    live = [_pod(tmp_path, "low", 0, used_mib=48), _pod(tmp_path, "high-and-larger", HIGH, used_mib=64)]
    # Everything used: memory.available is 0, below any threshold, so the check names a victim.
    pressure = NodePressure(CgroupTree(tmp_path), lambda: 2048 * MI, logging.getLogger("test"))
    _, decision = pressure.check(0.0, live, NodeFacts(memory_capacity=2048 * MI), KubeletConfig(),
                                 ignore_priority=ignore)
    assert decision is not None and decision.victim is not None
    assert decision.victim.name == first


# pid.available = 1000 − 900 = 100 < 101: PIDPressure.
PID_PRESSURE_CONFIG = KubeletConfig(eviction_hard={"pid.available": "101"})


@pytest.mark.parametrize(("ignore", "first"), [(False, "low"), (True, "high-and-larger")])
def test_pid_pressure_ranks_by_priority_then_processes(tmp_path: Path, ignore: bool, first: str) -> None:
    """The low-priority bomb (64 processes) before the high-priority one (96); under the fault the larger goes
    first, as a node ranking by process count alone would do."""
    live = [_pod(tmp_path, "innocent", HIGH), _pod(tmp_path, "high-and-larger", HIGH, processes=96),
            _pod(tmp_path, "low", 0, processes=64)]
    pressure = NodePressure(CgroupTree(tmp_path), None, logging.getLogger("test"),
                            lambda: PidObservation(1000, 900))
    changed, decision = pressure.check(0.0, live, NodeFacts(memory_capacity=2048 * MI), PID_PRESSURE_CONFIG,
                                       ignore_priority=ignore)
    assert changed and pressure.conditions == {"MemoryPressure": False, "PIDPressure": True}
    assert decision is not None and decision.victim is not None and decision.victim.name == first
    assert decision.message == "The node was low on resource: pids. Threshold quantity: 101, available: 100. "
    assert [e["reason"] for e in pressure.events] == ["NodeHasInsufficientPID"]


def test_pid_pressure_ends_with_an_event_and_memory_goes_first(tmp_path: Path) -> None:
    """With both signals met the memory victim goes this pass (byEvictionPriority); once tasks fall back to 899
    (101 available, not below 101) PIDPressure turns False with NodeHasSufficientPID."""
    live = [_pod(tmp_path, "hog", HIGH, used_mib=64), _pod(tmp_path, "bomb", 0, processes=64)]
    running = {"tasks": 900}
    pressure = NodePressure(CgroupTree(tmp_path), lambda: 2048 * MI, logging.getLogger("test"),
                            lambda: PidObservation(1000, running["tasks"]))
    config = KubeletConfig(eviction_hard={"pid.available": "101", "memory.available": "100Mi"})
    facts = NodeFacts(memory_capacity=2048 * MI)
    _, decision = pressure.check(0.0, live, facts, config)
    assert decision is not None and decision.victim is not None and decision.victim.name == "hog"
    assert pressure.conditions == {"MemoryPressure": True, "PIDPressure": True}
    running["tasks"] = 899
    _, unchecked = pressure.check(EVICTION_INTERVAL / 2, live, facts, config)
    assert unchecked is None, "checked again before EVICTION_INTERVAL"
    pressure.check(EVICTION_INTERVAL, live, facts, config)
    assert not pressure.conditions["PIDPressure"]
    assert [e["reason"] for e in pressure.events][-1] == "NodeHasSufficientPID"


def test_rlimit_is_the_observation_as_the_kubelet_summary_names_it(tmp_path: Path) -> None:
    """node.rlimit {maxpid, curproc} from the pid observation; None when the agent observes no pids."""
    log = logging.getLogger("test")
    assert NodePressure(CgroupTree(tmp_path), None, log).rlimit() is None
    observed = NodePressure(CgroupTree(tmp_path), None, log, lambda: PidObservation(15703, 241)).rlimit()
    assert observed == {"maxpid": 15703, "curproc": 241}
