"""The node-pressure check reads each container's working set and process count only when a signal may be met
(nodeconf/enforcer/pressure.py NodePressure._memory), and decides then exactly as with every reading."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from nodeconf.enforcer.cgroupfs import CgroupTree
from nodeconf.enforcer.pressure import NodePressure
from nodeconf.enforcer.records import PAUSE, REGULAR, ContainerRecord, PodRecord
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import Container, Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics.eviction import (
    EvictionDecision,
    PidObservation,
    PodMemoryUsage,
    PodsMemoryObservation,
    decide_memory_eviction,
)

MI = 2**20
CAPACITY = 2048 * MI


class CountingTree(CgroupTree):
    """A stand-in cgroup tree that records which cgroups' files were read."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.read_from: list[str] = []

    def read(self, path: str, file: str) -> str | None:
        self.read_from.append(path)
        return super().read(path, file)


def _files(directory: Path, current_mib: int, inactive_mib: int = 0, procs: int = 1) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "memory.current").write_text(f"{current_mib * MI}\n")
    (directory / "memory.stat").write_text(f"anon 0\ninactive_file {inactive_mib * MI}\n")
    (directory / "cgroup.procs").write_text("".join(f"{100 + i}\n" for i in range(procs)))


def _node(root: Path, apps_mib: list[int], page_cache_mib: int, kubepods_max: int | None = None) -> list[PodRecord]:
    """BestEffort pods whose app container holds its MiB (none inactive) and whose pod cgroup also holds
    `page_cache_mib` of active page cache; kubepods holds what its pods hold (a stand-in tree does not sum)."""
    live = []
    for i, mib in enumerate(apps_mib):
        cgroup = f"kubepods/besteffort/pod{i}"
        _files(root / cgroup / "app", mib)
        _files(root / cgroup / "pause", 0)
        _files(root / cgroup, mib + page_cache_mib)
        pod = Pod(name=f"p{i}", containers=(Container("app"),))
        live.append(PodRecord(pod, "BestEffort", cgroup,
                              [ContainerRecord("pause", PAUSE, f"{cgroup}/pause", ("sleep",), 999),
                               ContainerRecord("app", REGULAR, f"{cgroup}/app", ("sleep",), 1000)]))
    _files(root / "kubepods", sum(apps_mib) + page_cache_mib * len(apps_mib))
    if kubepods_max is not None:
        (root / "kubepods" / "memory.max").write_text(f"{kubepods_max}\n")
    return live


def _exact(live: list[PodRecord], used: int, config: KubeletConfig,
           kubepods: PodsMemoryObservation) -> tuple[bool, str | None, int | None]:
    """The decision from every reading (what the check did before it skipped any)."""
    usages = [PodMemoryUsage(r.pod, {"app": apps * MI}) for r, apps in zip(live, APPS, strict=True)]
    outside = max(0, used - sum(a + PAGE_CACHE for a in APPS) * MI)
    d = decide_memory_eviction(usages, NodeFacts(memory_capacity=CAPACITY), config, outside, kubepods)
    return d.memory_pressure, d.victim.name if d.victim else None, d.available if d.memory_pressure else None


APPS, PAGE_CACHE = [300, 500], 200  # kubepods' working set 1200 MiB


@pytest.mark.parametrize(("used_mib", "threshold", "kubepods_max_mib"), [
    (400, "100Mi", None),   # the pods' page cache takes kubepods' working set above the node's use; nothing met
    (400, "900Mi", None),   # the bound (2048 - 1200 < 900) may meet it, the containers' 800 MiB do not
    (400, "1300Mi", None),  # the containers' 800 MiB meet it although the node's use does not
    (1900, "100Mi", None),  # met by the node's use
    (400, "100Mi", 1250),   # allocatableMemory.available: 1250 - 1200 MiB against kubepods' threshold
])
def test_the_decision_is_the_one_from_every_reading(tmp_path: Path, used_mib: int, threshold: str,
                                                    kubepods_max_mib: int | None) -> None:
    live = _node(tmp_path, APPS, PAGE_CACHE, kubepods_max_mib * MI if kubepods_max_mib else None)
    config = KubeletConfig(cgroup_driver="cgroupfs", eviction_hard={"memory.available": threshold})
    pressure = NodePressure(CountingTree(tmp_path), lambda: used_mib * MI, logging.getLogger("test"))
    _, decision = pressure.check(0.0, live, NodeFacts(memory_capacity=CAPACITY), config)
    assert isinstance(decision, EvictionDecision)
    kubepods = PodsMemoryObservation(kubepods_max_mib * MI if kubepods_max_mib else None,
                                     (sum(APPS) + PAGE_CACHE * len(APPS)) * MI)
    found = (decision.memory_pressure, decision.victim.name if decision.victim else None,
             decision.available if decision.memory_pressure else None)
    assert found == _exact(live, used_mib * MI, config, kubepods)


def test_no_container_is_read_while_no_signal_can_be_met(tmp_path: Path) -> None:
    live = _node(tmp_path, [64, 32], 0)
    tree = CountingTree(tmp_path)
    pressure = NodePressure(tree, lambda: 512 * MI, logging.getLogger("test"), lambda: PidObservation(4096, 300))
    config = KubeletConfig(cgroup_driver="cgroupfs",
                           eviction_hard={"memory.available": "100Mi", "pid.available": "1000"})
    changed, decision = pressure.check(0.0, live, NodeFacts(memory_capacity=CAPACITY), config)
    assert (changed, decision is not None and decision.victim) == (False, None)
    assert set(tree.read_from) == {"kubepods"}


def test_pid_pressure_reads_the_containers_to_rank_them(tmp_path: Path) -> None:
    live = _node(tmp_path, [64, 32], 0)
    tree = CountingTree(tmp_path)
    pressure = NodePressure(tree, lambda: 512 * MI, logging.getLogger("test"), lambda: PidObservation(1000, 950))
    _, decision = pressure.check(0.0, live, NodeFacts(memory_capacity=CAPACITY),
                                 KubeletConfig(cgroup_driver="cgroupfs", eviction_hard={"pid.available": "100"}))
    assert decision is not None and decision.victim is not None
    assert {"kubepods/besteffort/pod0/app", "kubepods/besteffort/pod1/app"} <= set(tree.read_from)
