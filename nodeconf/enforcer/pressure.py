"""Node-pressure eviction on memory.available: the MemoryPressure condition, its node events, and the pod the
oracle picks to evict, checked every EVICTION_INTERVAL.

Source: issue 27 item 3 (the agent by composition); kubelet eviction_manager.go (synchronize), semantics/eviction.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from nodeconf.enforcer.cgroupfs import CgroupTree
from nodeconf.enforcer.launcher import live_cgroup
from nodeconf.enforcer.readings import int_or_none
from nodeconf.enforcer.records import PAUSE, PodRecord
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics.eviction import MEMORY_PRESSURE, EvictionDecision, PodMemoryUsage, decide_memory_eviction

# How often memory.available is checked (kubelet evictionMonitoringPeriod is 10 s; faster here for tests).
EVICTION_INTERVAL = 1.0


class NodePressure:
    """The node's conditions and events, from the memory the node uses (None: never checked)."""

    def __init__(self, tree: CgroupTree, node_memory_used: Callable[[], int] | None,
                 log: logging.Logger) -> None:
        self.tree = tree
        self.node_memory_used = node_memory_used
        self.log = log
        self.next_check = 0.0
        self.conditions: dict[str, bool] = {MEMORY_PRESSURE: False}
        self.events: list[dict[str, str]] = []

    def check(self, now: float, live: Sequence[PodRecord], facts: NodeFacts, config: KubeletConfig, *,
              ignore_priority: bool = False) -> tuple[bool, EvictionDecision | None]:
        """Every EVICTION_INTERVAL: memory.available against evictionHard, the condition and its event updated;
        whether the condition changed, and the oracle's decision (None when not checked now). `ignore_priority`
        (the self-tests' fault) ranks every pod as if its priority were 0."""
        if self.node_memory_used is None or now < self.next_check:
            return False, None
        self.next_check = now + EVICTION_INTERVAL
        usages = [PodMemoryUsage(r.pod.without_priority() if ignore_priority else r.pod,
                                 {c.name: self._working_set(live_cgroup(c)) for c in r.containers
                                  if c.kind != PAUSE}) for r in live]
        outside = max(0, self.node_memory_used() - sum(self._working_set(r.cgroup) for r in live))
        decision = decide_memory_eviction(usages, facts, config, outside)
        changed = decision.memory_pressure != self.conditions[MEMORY_PRESSURE]
        if changed:
            self.conditions[MEMORY_PRESSURE] = decision.memory_pressure
            self.events.append({
                "type": "Warning" if decision.memory_pressure else "Normal",
                "reason": "NodeHasInsufficientMemory" if decision.memory_pressure else "NodeHasSufficientMemory",
                "message": f"memory.available {decision.available} against threshold {decision.threshold}",
            })
            self.log.info("MemoryPressure %s (available %d, threshold %d)", decision.memory_pressure,
                          decision.available, decision.threshold)
        return changed, decision

    def _working_set(self, path: str) -> int:
        """memory.current − inactive_file (the kubelet's working set), 0 when unreadable."""
        current = int_or_none(self.tree.read(path, "memory.current")) or 0
        return max(0, current - self.tree.keyed(path, "memory.stat").get("inactive_file", 0))
