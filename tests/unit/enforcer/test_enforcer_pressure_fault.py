"""The enforcer's `eviction=ignore-priority` fault: its memory-pressure check ranks every pod as priority 0, so of two
BestEffort hogs the larger goes first whatever its priority; without the fault the lower priority goes first."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from nodeconf.enforcer.cgroupfs import CgroupTree
from nodeconf.enforcer.lifecycle import Faults
from nodeconf.enforcer.pressure import NodePressure
from nodeconf.enforcer.records import REGULAR, ContainerRecord, PodRecord
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import Container, Pod
from nodeconf.node_facts import NodeFacts

MI = 2**20


def _hog(tree_root: Path, name: str, priority: int, used_mib: int) -> PodRecord:
    """A BestEffort pod whose one container's cgroup (a plain directory) holds `used_mib` MiB, none inactive."""
    cgroup = f"kubepods/besteffort/pod-{name}/app"
    directory = tree_root / cgroup
    directory.mkdir(parents=True)
    (directory / "memory.current").write_text(f"{used_mib * MI}\n")
    (directory / "memory.stat").write_text("inactive_file 0\n")
    pod = Pod(name=name, containers=(Container("app"),), priority_value=priority)
    return PodRecord(pod, "BestEffort", f"kubepods/besteffort/pod-{name}",
                     [ContainerRecord("app", REGULAR, cgroup, ("sleep",), 1000)])


@pytest.mark.parametrize(("ignore", "first"), [(False, "low"), (True, "high-and-larger")])
def test_ignore_priority_ranks_by_usage_alone(tmp_path: Path, ignore: bool, first: str) -> None:
    assert Faults.parse(["eviction=ignore-priority"]).eviction_ignores_priority
    live = [_hog(tmp_path, "low", 0, 48), _hog(tmp_path, "high-and-larger", 999_999_999, 64)]
    # Everything used: memory.available is 0, below any threshold, so the check names a victim.
    pressure = NodePressure(CgroupTree(tmp_path), lambda: 2048 * MI, logging.getLogger("test"))
    _, decision = pressure.check(0.0, live, NodeFacts(memory_capacity=2048 * MI), KubeletConfig(),
                                 ignore_priority=ignore)
    assert decision is not None and decision.victim is not None
    assert decision.victim.name == first
