"""Node-pressure eviction on memory.available, allocatableMemory.available and pid.available: the MemoryPressure
and PIDPressure conditions, their node events, and the pod the oracle picks to evict, checked every
EVICTION_INTERVAL.

Source: issue 27 item 3 (the agent by composition), issue 30 (pid.available, allocatableMemory.available); kubelet
eviction_manager.go (synchronize: one pod per pass, memory thresholds first, helpers.go byEvictionPriority),
summary_sys_containers.go (the `pods` system container: kubepods), nodestatus/setters.go (the
NodeHasInsufficientMemory/PID events), semantics/eviction.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Union

from nodeconf.enforcer.cgroupfs import CgroupTree
from nodeconf.enforcer.launcher import live_cgroup
from nodeconf.enforcer.readings import int_or_none
from nodeconf.enforcer.records import PAUSE, PodRecord
from nodeconf.enforcer.wire import EventDoc, RlimitDoc
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics.cgroup_paths import kubepods
from nodeconf.semantics.eviction import (
    MEMORY_PRESSURE,
    PID_AVAILABLE,
    PID_PRESSURE,
    EvictionDecision,
    PidEvictionDecision,
    PidObservation,
    PodMemoryUsage,
    PodProcesses,
    PodsMemoryObservation,
    decide_memory_eviction,
    decide_pid_eviction,
    memory_signals,
)

# How often the signals are checked (kubelet evictionMonitoringPeriod is 10 s; faster here for tests): the node
# evicts one pod per pass, so a check of three evictions waits three intervals (issue 31: 1 s made it 3 s). A check
# reads node-level files only (meminfo, loadavg, kubepods' memory.current and memory.stat) unless a signal may be met:
# each container's working set (a memory.stat, ~5 ms under TCG) and process count are read for the ranking only.
EVICTION_INTERVAL = 0.25
Decision = Union[EvictionDecision, PidEvictionDecision]
# The node events of each condition when it turns True / False (nodestatus/setters.go).
EVENTS = {MEMORY_PRESSURE: ("NodeHasInsufficientMemory", "NodeHasSufficientMemory"),
          PID_PRESSURE: ("NodeHasInsufficientPID", "NodeHasSufficientPID")}


class NodePressure:
    """The node's conditions and events, from the memory the node uses and the tasks it runs (None: that signal
    is never checked)."""

    def __init__(self, tree: CgroupTree, node_memory_used: Callable[[], int] | None, log: logging.Logger,
                 node_pids: Callable[[], PidObservation] | None = None) -> None:
        self.tree = tree
        self.node_memory_used = node_memory_used
        self.node_pids = node_pids
        self.log = log
        self.next_check = 0.0
        self.conditions: dict[str, bool] = {MEMORY_PRESSURE: False, PID_PRESSURE: False}
        self.events: list[EventDoc] = []

    def check(self, now: float, live: Sequence[PodRecord], facts: NodeFacts, config: KubeletConfig, *,
              ignore_priority: bool = False) -> tuple[bool, Decision | None]:
        """Every EVICTION_INTERVAL: each signal against evictionHard, its condition and event updated; whether a
        condition changed, and the decision whose victim goes now (memory before pids), else the first decision
        (None when not checked now). `ignore_priority` (the self-tests' fault) ranks every pod as priority 0."""
        if (self.node_memory_used is None and self.node_pids is None) or now < self.next_check:
            return False, None
        self.next_check = now + EVICTION_INTERVAL
        pods = [r.pod.without_priority() if ignore_priority else r.pod for r in live]
        decisions: list[Decision] = []
        changed = False
        if self.node_memory_used is not None:
            memory = self._memory(live, pods, facts, config, self.node_memory_used())
            changed |= self._set(MEMORY_PRESSURE, memory.memory_pressure, memory.signal, memory.available,
                                 memory.threshold)
            decisions.append(memory)
        if self.node_pids is not None:
            observed = self.node_pids()
            # pid.available is the node's alone; the pods' process counts only rank them once it is met
            ranked = decide_pid_eviction([], observed, config).pid_pressure
            pids = decide_pid_eviction([PodProcesses(p, self._processes(r)) for p, r in zip(pods, live)] if ranked
                                       else [], observed, config)
            changed |= self._set(PID_PRESSURE, pids.pid_pressure, PID_AVAILABLE, pids.available, pids.threshold)
            decisions.append(pids)
        return changed, next((d for d in decisions if d.victim is not None), decisions[0])

    def rlimit(self) -> RlimitDoc | None:
        """The pid.available observation now, as the kubelet summary's node.rlimit (None: not observed)."""
        if self.node_pids is None:
            return None
        observed = self.node_pids()
        return {"maxpid": observed.max_pid, "curproc": observed.running}

    def _memory(self, live: Sequence[PodRecord], pods: Sequence[Pod], facts: NodeFacts, config: KubeletConfig,
                used: int) -> EvictionDecision:
        """The oracle's decision from each container's working set and the rest of the node's use, as the kubelet
        observes them. The pods' working sets are read only when a signal may be met or MemoryPressure holds (its
        clearing event names the exact observation): the working set the signal counts, the containers' plus the
        node's use outside the pods, is at most max(used, kubepods' working set), as a pod's working set is at
        most the containers' below it and kubepods' at least its pods' (memory.current and inactive_file count
        every cgroup below), so a signal that bound does not meet is not met."""
        observed = self._pods_memory(config)
        bound = max(used, observed.working_set)
        if not self.conditions[MEMORY_PRESSURE] and not any(s.met for s in memory_signals([], facts, config, bound,
                                                                                          observed)):
            return decide_memory_eviction([], facts, config, used, observed)
        usages = [PodMemoryUsage(p, {c.name: self._working_set(live_cgroup(c)) for c in r.containers
                                     if c.kind != PAUSE}) for p, r in zip(pods, live)]
        outside = max(0, used - sum(self._working_set(r.cgroup) for r in live))
        return decide_memory_eviction(usages, facts, config, outside, observed)

    def _pods_memory(self, config: KubeletConfig) -> PodsMemoryObservation:
        """The kubepods cgroup as cadvisor reports the summary's `pods` container: its memory.max (None for `max`
        or when it does not exist) and its working set."""
        path = kubepods(config.cgroup_driver)
        return PodsMemoryObservation(int_or_none(self.tree.read(path, "memory.max")), self._working_set(path))

    def _set(self, condition: str, holds: bool, signal: str, available: int, threshold: int | None) -> bool:
        """Record the condition; on a change, its node event naming the signal; whether it changed."""
        if holds == self.conditions[condition]:
            return False
        self.conditions[condition] = holds
        insufficient, sufficient = EVENTS[condition]
        self.events.append({"type": "Warning" if holds else "Normal", "reason": insufficient if holds else sufficient,
                            "message": f"{signal} {available} against threshold {threshold}"})
        self.log.info("%s %s (%s %d, threshold %s)", condition, holds, signal, available, threshold)
        return True

    def _working_set(self, path: str) -> int:
        """memory.current − inactive_file (the kubelet's working set), 0 when unreadable."""
        current = int_or_none(self.tree.read(path, "memory.current")) or 0
        return max(0, current - self.tree.keyed(path, "memory.stat").get("inactive_file", 0))

    def _processes(self, record: PodRecord) -> int:
        """The processes in the pod's containers (cadvisor's ProcessCount: the pids of each container cgroup's
        cgroup.procs, summed over the containers as the kubelet's pod ProcessStats; the sandbox not counted)."""
        return sum(len((self.tree.read(live_cgroup(c), "cgroup.procs") or "").split())
                   for c in record.containers if c.kind != PAUSE)
