"""Memory QoS values a kubelet restart or a later resize leaves in place: which memory.min/memory.low/memory.high of
running pods, their containers and the QoS levels the kubelet rewrites for its new configuration, and which keep
what the previous configuration wrote (turning MemoryQoS off, changing memoryReservationPolicy or
memoryThrottlingFactor on a running node).

A restart keeps running containers (kubelet: the runtime's containers outlive it). What it writes again at start:
- kubepods and the burstable slice: from 1.37 always (MemoryQoS on: setMemoryQoS at QOSContainerManager.Start and
  every minute, None resetting both to 0; off: 0 at start, node_container_manager_linux.go
  enforceNodeAllocatableCgroups and qos_container_manager_linux.go Start, kubernetes#138903, v1.37 Memory QoS blog
  "At startup the kubelet sets memory.min=0 on the root kubepods cgroup and memory.low=0 on the Burstable QoS
  cgroup"); through 1.36 only with the gate on (kubernetes#138430 gates setMemoryQoS on MemoryQoS; kubernetes#138485:
  rollback "stays the same as v1.35"), so turning it off keeps the stale values.
- pod cgroups: nothing (pod_container_manager_linux.go EnsureExists creates a missing cgroup only; kubernetes#137674
  open, its fix #137726 closed unmerged; memory_qos_test.go "Pod and container memory.low values persist").
- containers: nothing (kuberuntime_container_linux.go generateLinuxContainerResources runs when a container is
  created or resized, never at a kubelet restart; memory_qos_test.go "no reconciliation for config-only changes").
A resize (UpdateContainerResources with generateLinuxContainerResources' values) rewrites a container's three files
when MemoryQoS is on; with it off, only memory.high, to max, from 1.37 (kubernetes#139377, v1.37 blog "stale
memory.high values are reset to max on reconciliation paths such as restart or resize"), none before.
Where the seed (the v1.36 post, which describes a kubelet started once) and the kubelet differ, the kubelet wins:
the post says nothing of a restart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from nodeconf.semantics.expectation import CgroupExpectation, Expected, NodeExpectation, PodExpectation
from nodeconf.semantics.memory_qos import HIGH, LOW, MIN, enabled
from nodeconf.semantics.profile import Profile

FILES = (MIN, LOW, HIGH)
NODE, POD, CONTAINER = "node", "pod", "container"  # kubepods and the QoS slices; pod cgroups; container cgroups
STARTUP_RESET = "kubernetes#138903"
RESIZE_HIGH_RESET = "kubernetes#139377"


def kept_at_restart(level: str, profile: Profile) -> frozenset[str]:
    """The Memory QoS files of a `level` cgroup a kubelet of `profile` (its new configuration) leaves as they were.

    Source: module docstring (QOSContainerManager.Start/setMemoryQoS, enforceNodeAllocatableCgroups, EnsureExists,
    generateLinuxContainerResources; kubernetes#138903, #138430, #137674)."""
    if level == NODE:
        return frozenset() if enabled(profile) or profile.at_least("1.37") else frozenset((MIN, LOW))
    return frozenset(FILES)


def rewritten_on_resize(level: str, profile: Profile) -> frozenset[str]:
    """The Memory QoS files a resize applied by a kubelet of `profile` writes again on a `level` cgroup.

    Source: kuberuntime_container_linux.go generateLinuxContainerResources (MemoryQoS on: memory.min, memory.low
    and memory.high; off: memory.high = max from 1.37, kubernetes#139377); the pod cgroup's protection goes with the
    resize only with the gate on (kuberuntime_manager.go doPodResizeAction, kubernetes#140262), none when off."""
    if enabled(profile):
        return frozenset(FILES)
    return frozenset((HIGH,)) if level == CONTAINER and profile.at_least("1.37") else frozenset()


def kept_rule(level: str, profile: Profile) -> str:
    """Why a restart left a `level` file as it was (the report's rule)."""
    if level == NODE:
        return (f"kubelet {profile.version} restarted with MemoryQoS off: setMemoryQoS does not run and no start-up "
                f"reset before 1.37 ({STARTUP_RESET}), the QoS level keeps the previous value")
    return (f"kubelet restart keeps the running {level}'s value (generateLinuxContainerResources and EnsureExists "
            "write at creation or resize only; kubernetes#137674)")


def keep(cgroup: CgroupExpectation, previous: Mapping[str, Expected], files: frozenset[str],
         rule: str) -> CgroupExpectation:
    """`cgroup` with each of `files` that `previous` holds replaced by its previous value, under `rule`."""
    kept = {f: Expected(previous[f].value, rule, previous[f].accepted) for f in files if f in previous}
    return replace(cgroup, files={**cgroup.files, **kept}) if kept else cgroup


def after_restart(before: NodeExpectation, fresh: NodeExpectation, profile: Profile) -> NodeExpectation:
    """The node after a kubelet restart with a new configuration: `fresh` (the new configuration's expectation for the
    same pods, `profile` its profile) with the files kept_at_restart taken from `before` (the old one's)."""
    cgroups = {path: keep(c, before.cgroups[path].files, kept_at_restart(NODE, profile), kept_rule(NODE, profile))
               if path in before.cgroups else c for path, c in fresh.cgroups.items()}
    pods = tuple(_pod_after_restart(p, before, profile) for p in fresh.pods)
    return replace(fresh, cgroups=cgroups, pods=pods)


def _pod_after_restart(fresh: PodExpectation, before: NodeExpectation, profile: Profile) -> PodExpectation:
    old = next((p for p in before.pods if p.pod.ref == fresh.pod.ref), None)
    if old is None or fresh.cgroup is None or old.cgroup is None:
        return fresh
    return _overlay(fresh, old, {POD: kept_at_restart(POD, profile), CONTAINER: kept_at_restart(CONTAINER, profile)},
                    {POD: kept_rule(POD, profile), CONTAINER: kept_rule(CONTAINER, profile)})


def after_resize(current: PodExpectation, fresh: PodExpectation, profile: Profile) -> PodExpectation:
    """A pod after a resize applied by a kubelet of `profile`: `fresh` (the resized pod's expectation) with the Memory
    QoS files the resize does not rewrite taken from `current` (what the pod's cgroups held before it)."""
    kept = {level: frozenset(FILES) - rewritten_on_resize(level, profile) for level in (POD, CONTAINER)}
    rule = (f"a resize by kubelet {profile.version} with MemoryQoS off does not rewrite it "
            f"(generateLinuxContainerResources; {RESIZE_HIGH_RESET} resets memory.high from 1.37)")
    return _overlay(fresh, current, kept, {POD: rule, CONTAINER: rule})


def _overlay(fresh: PodExpectation, old: PodExpectation, kept: Mapping[str, frozenset[str]],
             rules: Mapping[str, str]) -> PodExpectation:
    """`fresh` with the files `kept` per level taken from `old` (pod cgroup, containers by name, the pause)."""
    assert fresh.cgroup is not None and old.cgroup is not None
    olds = {c.name: c for c in old.containers}
    containers = tuple(
        replace(c, cgroup=keep(c.cgroup, olds[c.name].cgroup.files, kept[CONTAINER], rules[CONTAINER]))
        if c.name in olds else c for c in fresh.containers)
    pause = fresh.pause
    if pause is not None and old.pause is not None:  # the sandbox is a container the runtime keeps as well
        pause = replace(pause, cgroup=keep(pause.cgroup, old.pause.cgroup.files, kept[CONTAINER], rules[CONTAINER]))
    return replace(fresh, cgroup=keep(fresh.cgroup, old.cgroup.files, kept[POD], rules[POD]), containers=containers,
                   pause=pause)
