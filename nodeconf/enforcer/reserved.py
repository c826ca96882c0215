"""The system-/kube-reserved cgroups of enforceNodeAllocatable: the kubelet requires them to exist and writes its
reserves there; the agent creates them itself below its cgroup root, marks them as nodeconf's, refuses one that
exists without the mark, and removes only marked ones. Where systemd manages the tree each `.slice` is a transient
unit (SystemdTree, as for kubepods): the kubelet's systemd driver needs the slice to exist and updates it through
SetUnitProperties, then the files.

Source: k8s pkg/kubelet/cm/node_container_manager_linux.go enforceNodeAllocatableCgroups, enforceExistingCgroup
(Validate: the cgroup must exist; then Update); RUNTIME-FACTS §2c (Update = Set); enforcer/ownership.py (marks).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from nodeconf import names
from nodeconf.enforcer.cgroupfs import OWNED, CgroupTree
from nodeconf.enforcer.ownership import foreign_message, is_marked
from nodeconf.errors import InputError
from nodeconf.kubelet_config import kubelet_config_from_dict
from nodeconf.semantics.node_limits import reserved_cgroup_paths

# The enforceNodeAllocatable keys whose cgroups the agent makes (kubetypes SystemReservedEnforcementKey, ...).
ENFORCED_KEYS = ("system-reserved", "kube-reserved")


def top(path: str) -> str:
    """The top-level cgroup a reserve cgroup lies in (`kube.slice` of `kube.slice/kube-reserved.slice`)."""
    return path.split("/", 1)[0]


def reserve_tree(tree: CgroupTree, path: str) -> CgroupTree:
    """The agent's tree (same root, owner mark and systemd connection) owning the reserve cgroup's top-level cgroup
    only; ValueError for a path that is unsafe or lies in the agent's kubepods."""
    if top(path) in OWNED:
        raise ValueError(f"reserve cgroup {path} lies in {top(path)}, the pods' cgroup")
    reserve = copy.copy(tree)
    reserve.owned = (top(path),)
    names.cgroup_path(path, reserve.owned)
    return reserve


def made(tree: CgroupTree, paths: Iterable[str]) -> list[str]:
    """The reserve cgroups that exist now and carry nodeconf's mark (the only ones read or given a process)."""
    return [p for p in paths if is_marked(reserve_tree(tree, p).dir(p), tree.kernel, tree.owner)]


def refusal(tree: CgroupTree, paths: Iterable[str]) -> str | None:
    """The one line that refuses a reserve cgroup (or a cgroup on its way) existing without nodeconf's mark."""
    for path in paths:
        parts = path.split("/")
        for depth in range(1, len(parts) + 1):
            directory = tree.root / "/".join(parts[:depth])
            if (directory.exists() or directory.is_symlink()) and not is_marked(directory, tree.kernel, tree.owner):
                return foreign_message(directory)
    return None


def remove(tree: CgroupTree, path: str) -> list[Path]:
    """Kill the processes of the cgroup's marked subtree and remove it, deepest first; an unmarked cgroup (and what
    lies below it) stays. Returns the cgroups left in place."""
    reserve = reserve_tree(tree, path)
    reserve.kill(path)
    return reserve.remove(path)


def in_state(tree: CgroupTree, state: Mapping[str, Any] | None) -> list[str]:
    """The reserve cgroups the config of an agent's state file enforces (what a previous agent may have made)."""
    if state is None:
        return []
    try:
        paths = reserved_cgroup_paths(kubelet_config_from_dict(state["config"], source="agent state")).values()
        return [p for p in paths if reserve_tree(tree, p)]
    except (InputError, ValueError, KeyError, TypeError):
        return []
