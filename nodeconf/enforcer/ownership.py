"""What the agent created and may therefore kill or remove: a mark on every cgroup it makes (a trusted.* extended
attribute on cgroup2, a marker file in a stand-in directory) and the processes its state file records.

Source: xattr(7) (trusted.* needs CAP_SYS_ADMIN; kernfs, hence cgroup2, stores trusted.* attributes in memory);
cgroup-v2.rst (cgroup.kill kills a whole subtree, so a subtree holding a cgroup of someone else is killed per cgroup).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# The mark on each cgroup the agent creates; only root can set or read it, it lives as long as the cgroup.
OWNER_XATTR = "trusted.nodeconf.owner"
# The mark in a stand-in directory (not a kernel cgroup2 tree) and in the driver's work directories.
MARKER_FILE = ".nodeconf-owner"
ADVICE = "a kubelet (or another tool) runs this node; stop it or use --node kube:CONTEXT"
# The kubelet's top-level cgroup names: kubepods (cgroupfs driver), kubepods.slice (systemd driver), and with a
# cgroupRoot the systemd driver's PREFIX-kubepods.slice (kubelet cm/cgroup_manager_linux.go ToSystemd; kind's
# cgroupRoot /kubelet gives kubelet.slice/kubelet-kubepods.slice).
KUBEPODS = ("kubepods", "kubepods.slice")


class ForeignCgroup(Exception):
    """A cgroup where the agent would write that nodeconf did not create: nothing is written, killed or removed."""


def agent_owner(state_dir: Path) -> str:
    """The mark an agent puts on its cgroups: whose they are (the agent of this state directory)."""
    return f"nodeconf agent {state_dir.resolve()}"


def is_kubepods(name: str) -> bool:
    """True for the name of a kubelet's top-level pods cgroup, with or without a cgroupRoot's prefix."""
    return name in KUBEPODS or name.endswith("-kubepods.slice")


def foreign_message(directory: Path, kernel: bool | None = None) -> str:
    """The one line that refuses a node because of a cgroup nodeconf did not create (or another run of it did:
    `kernel` given, its mark is read to name that run)."""
    other = None if kernel is None else owner_of(directory, kernel)
    if other is not None:
        return f"{directory} was created by another nodeconf run ({other}): one run per node; stop that run first"
    return f"{directory} was not created by nodeconf: {ADVICE}"


def owner_of(directory: Path, kernel: bool) -> str | None:
    """The owner a directory's mark names (None: no readable mark, or a symlink)."""
    if directory.is_symlink() or not directory.is_dir():
        return None
    try:
        if kernel:
            return os.getxattr(directory, OWNER_XATTR, follow_symlinks=False).decode(errors="replace")
        marker = directory / MARKER_FILE
        return None if marker.is_symlink() else marker.read_text().rstrip("\n")
    except OSError:
        return None


def mark(directory: Path, owner: str, kernel: bool) -> None:
    """Mark a directory the agent has just created as its own."""
    if kernel:
        os.setxattr(directory, OWNER_XATTR, owner.encode())
    else:
        (directory / MARKER_FILE).write_text(owner + "\n")


def is_marked(directory: Path, kernel: bool, owner: str | None = None) -> bool:
    """True when the directory (not a symlink) carries nodeconf's mark, naming `owner` exactly when given (another
    agent's cgroup is not this one's); an unreadable mark counts as none."""
    found = owner_of(directory, kernel)
    return found is not None and (owner is None or found == owner)


def walk(top: Path, kernel: bool, owner: str | None = None) -> tuple[list[Path], list[Path]]:
    """The directories of top's subtree marked as owner's, each before its descendants, and the others met there
    (their subtrees are not entered); top itself not owner's → ([], [top])."""
    if not is_marked(top, kernel, owner):
        return [], [top] if top.exists() or top.is_symlink() else []
    owned: list[Path] = []
    foreign: list[Path] = []
    stack = [top]
    while stack:
        directory = stack.pop()
        owned.append(directory)
        with contextlib.suppress(FileNotFoundError), os.scandir(directory) as entries:
            children = sorted(Path(e.path) for e in entries if e.is_dir(follow_symlinks=False))
        for child in children:
            (stack if is_marked(child, kernel, owner) else foreign).append(child)
    return owned, foreign


def holds_foreign(directory: Path, foreign: list[Path]) -> bool:
    """True when a foreign directory lies below this one."""
    return any(f.is_relative_to(directory) for f in foreign)


def process_start(pid: int) -> int | None:
    """The process's start time in clock ticks (/proc/PID/stat field 22), to tell a reused pid apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def kill_recorded(state: Mapping[str, Any] | None) -> None:
    """SIGKILL the process group of each container process the state file records, when the pid still names the
    process that was started (same start time): a reused pid is never killed."""
    if state is None:
        return
    for pod in state.get("pods", ()):
        for c in pod.get("containers", ()):
            pid, started = c.get("pid"), c.get("pidStart")
            if isinstance(pid, int) and pid > 1 and started and process_start(pid) == started:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, 9)
