"""Writing the oracle's values into the cgroup tree: each cgroup created (and marked) and told its manager's unit
properties, each changed file written once; the enforced reserve cgroups made and removed; nothing of someone
else's touched.

Source: issue 27 item 3 (the agent by composition); k8s pkg/kubelet/cm node_container_manager_linux.go,
pod_container_manager_linux.go, cgroup_manager_linux.go (which files the kubelet writes where).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from collections.abc import Set as AbstractSet

from nodeconf.enforcer import reserved
from nodeconf.enforcer.cgroupfs import CgroupTree
from nodeconf.enforcer.ownership import ForeignCgroup, foreign_message
from nodeconf.semantics.expectation import CgroupExpectation, Expected, NodeExpectation

# Node-limit files (semantics.node_limits) the agent writes: pids.max on kubepods (node_container_manager_linux.go
# getCgroupConfig) and each pod cgroup (pod_container_manager_linux.go EnsureExists), hugetlb.<size>.max on kubepods,
# pod and container cgroups (cgroup_manager_linux.go maybeSetHugetlb; kuberuntime GetHugepageLimitsFromResources
# for containers).
POD_LIMIT_FILES = ("pids.max",)
HUGETLB_PREFIX = "hugetlb."


class CgroupWriter:
    """The agent's cgroup tree with what was written where, the values last computed for each cgroup and the
    reserve cgroups it made."""

    def __init__(self, tree: CgroupTree, log: logging.Logger) -> None:
        self.tree = tree
        self.log = log
        self.written: dict[tuple[str, str], str] = {}
        # The values last computed for each cgroup (a systemd scope's are written when its process starts it).
        self.expected: dict[str, CgroupExpectation] = {}
        # The enforced reserve cgroups the agent made (system-/kube-reserved), removed when no longer enforced.
        self.reserves: set[str] = set()

    def write(self, cgroup: CgroupExpectation, tree: CgroupTree | None = None) -> list[str]:
        """Create the cgroup, tell its manager the changed values (systemd unit properties), write the files; a
        systemd scope is written once its process has started it (scope_started)."""
        tree = tree or self.tree
        self.expected[cgroup.path] = cgroup
        if tree.needs_process(cgroup.path) and not tree.exists(cgroup.path):
            return []
        changed = {f: e.value for f, e in cgroup.files.items() if self.written.get((cgroup.path, f)) != e.value}
        if not changed and tree.exists(cgroup.path):
            return []  # nothing to write: no walk of its ancestors' marks (every pod's cgroups, on every run)
        try:
            tree.ensure(cgroup.path)
        except ForeignCgroup as err:
            return [str(err)]
        problems = []
        try:
            tree.set_properties(cgroup.path, changed)
        except (OSError, ValueError) as err:
            problems.append(f"setting the unit properties of {cgroup.path}: {err}")
        for file, value in changed.items():
            try:
                tree.write(cgroup.path, file, value)
                self.written[(cgroup.path, file)] = value
            except OSError as err:
                problems.append(f"writing {value!r} to {cgroup.path}/{file}: {err.strerror or err}")
        return problems

    def scope_started(self, path: str) -> list[str]:
        """Write a container's values into the scope systemd has just created around its process."""
        for key in [k for k in self.written if k[0] == path]:
            del self.written[key]
        cgroup = self.expected.get(path)
        return self.write(cgroup) if cgroup is not None else [f"no values computed for {path}"]

    def write_reserves(self, expectation: NodeExpectation, wanted: list[str], hugetlb: bool) -> None:
        """Create and write each enforced reserve cgroup with the oracle's values (the kubelet's Update of an
        existing cgroup); remove the ones made earlier that are no longer enforced."""
        self.remove_reserves(self.reserves - set(wanted), keep={reserved.top(p) for p in wanted})
        for path in wanted:
            self.reserves.add(path)
            files = expectation.node_limits.get(path, {})
            cgroup = CgroupExpectation(path, {name: e for name, e in files.items()
                                              if hugetlb or not name.startswith(HUGETLB_PREFIX)})
            for problem in self.write(cgroup, reserved.reserve_tree(self.tree, path)):
                self.log.error("%s", problem)

    def remove_reserves(self, paths: AbstractSet[str], keep: AbstractSet[str] = frozenset()) -> None:
        """Remove reserve cgroups the agent made: the whole top-level cgroup unless `keep` holds it (then the path
        alone); a cgroup of someone else stays (logged)."""
        for path in sorted(paths, reverse=True):
            gone = path if reserved.top(path) in keep else reserved.top(path)
            for left in reserved.remove(self.tree, gone):
                self.log.warning("left %s in place: %s", left, foreign_message(left))
            self.forget(gone)
            self.reserves.discard(path)

    def remove(self, path: str) -> None:
        """Kill what runs in the cgroup and remove it with everything below."""
        self.tree.kill(path)
        self.tree.remove(path)
        self.forget(path)

    def forget(self, path: str) -> None:
        """Forget what was written to and computed for the cgroup and everything below it."""
        for key in [k for k in self.written if k[0] == path or k[0].startswith(path + "/")]:
            del self.written[key]
        for cgroup in [p for p in self.expected if p == path or p.startswith(path + "/")]:
            del self.expected[cgroup]

    def clear(self) -> None:
        """Kill and remove every marked cgroup and every reserve made, and forget what was written; a cgroup of
        someone else inside ours stays (logged)."""
        for left in self.tree.clear():
            self.log.warning("left %s in place: %s", left, foreign_message(left))
        self.remove_reserves(set(self.reserves))
        self.written.clear()


def with_node_limits(cgroup: CgroupExpectation, limits: Mapping[str, Expected], pids: bool = True,
                     hugetlb: bool = True) -> CgroupExpectation:
    """A kubepods, pod or container cgroup with the node limits the kubelet writes on it: pids.max unless `pids` is
    off (containers): kubepods' from the allocatable pids, the pod's from podPidsLimit (EnsureExists sets PidsLimit
    when > 0; the oracle's `max` otherwise is a new cgroup's own value, so writing it changes nothing); and, unless
    `hugetlb` is off (the `hugetlb=ignore` fault), hugetlb.<size>.max and .rsvd.max of every size (0 for a size not
    requested; .rsvd.max where the oracle expects it).
    Under systemd pids.max also goes as TasksMax; hugetlb has no unit property (systemd_units.resource_properties)."""
    extra = {name: e for name, e in limits.items()
             if (pids and name in POD_LIMIT_FILES)
             or (hugetlb and name.startswith(HUGETLB_PREFIX) and name.endswith(".max"))}
    return CgroupExpectation(cgroup.path, {**cgroup.files, **extra}) if extra else cgroup
