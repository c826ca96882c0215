"""The agent's cgroups on a node whose PID 1 is systemd, as the kubelet's systemd driver makes them: each `.slice`
is a transient unit started through systemd's D-Bus API (busctl), each container `.scope` a transient unit holding
its process; resources are set as unit properties and then written to cgroupfs as well; removal stops the unit.
Every unit's cgroup carries nodeconf's mark (and its Description names the agent); only marked ones are stopped.

Source: RUNTIME-FACTS §2c (kubelet Create = Apply(-1) + Set; Set = SetUnitProperties, then the fs2 file writes;
fs2.CreateCgroupPath enables the controllers in every ancestor), §3e (scopes: StartTransientUnit with PIDs, Destroy =
StopUnit), §4; systemd org.freedesktop.systemd1(5).
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from nodeconf import names
from nodeconf.enforcer import systemd_units
from nodeconf.enforcer.cgroupfs import OWNED, CgroupTree, is_cgroup2
from nodeconf.enforcer.ownership import holds_foreign, is_marked, walk

# How long systemd may take to create or remove a unit's cgroup after the call returned its job.
JOB_TIMEOUT = 10.0
BUSCTL_TIMEOUT = 30.0
UNIT_SUFFIXES = (".slice", ".scope")
# crun moves a container into this sub-cgroup of its systemd scope and writes the OCI resources there
# (annotation run.oci.systemd.subgroup, default "container"; RUNTIME-FACTS §3e); runc has none.
CRUN_SUBGROUP = "container"

Runner = Callable[[Sequence[str]], str]


class SystemdCallError(OSError):
    """A busctl call failed; the message names the method, the unit and systemd's own words."""


def busctl(argv: Sequence[str]) -> str:
    """Run one busctl command line; SystemdCallError with its stderr when it fails."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=BUSCTL_TIMEOUT, check=False,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise SystemdCallError(f"{' '.join(argv[6:9])}: {err}") from None
    if done.returncode != 0:
        raise SystemdCallError(f"systemd {' '.join(argv[6:9])}: {done.stderr.strip() or done.returncode}")
    return done.stdout


def is_unit(component: str) -> bool:
    return component.endswith(UNIT_SUFFIXES)


class SystemdTree(CgroupTree):
    """CgroupTree whose `.slice` and `.scope` components are systemd units; other components (the cgroupfs
    driver's `kubepods/burstable/pod<uid>`) stay plain directories, as the kubelet's cgroupfs driver makes them.
    A `.scope` is started with its process: start_scope, or a --systemd-cgroup runtime (then adopt)."""

    def __init__(self, root: Path, owned: tuple[str, ...] = OWNED, owner: str = "nodeconf", *,
                 run: Runner = busctl) -> None:
        super().__init__(root, owned, owner)
        self.run = run

    def needs_process(self, path: str) -> bool:
        return names.cgroup_path(path, self.owned).endswith(".scope")

    def ensure(self, path: str) -> None:
        """Start each missing slice of the path as a unit (a directory for a non-unit component), top down,
        refusing one that exists without nodeconf's mark; a scope needs start_scope."""
        parts = names.cgroup_path(path, self.owned).split("/")
        if self.needs_process(path) and not self.dir(path).is_dir():
            raise ValueError(f"the scope {path} starts with its process")
        for depth in range(1, len(parts) + 1):
            self._ensure_one("/".join(parts[:depth]))

    def _ensure_one(self, path: str, pid: int | None = None) -> None:
        directory = self.root / path
        parent = directory.parent
        self._refuse_foreign(directory)
        if directory.is_dir():
            return
        self._enable_controllers(parent)
        if not is_unit(directory.name):
            self._make_dir(directory)
            return
        if pid is not None:
            # A scope of an earlier process of this container that systemd keeps as failed blocks the name.
            with contextlib.suppress(SystemdCallError):
                self.run(systemd_units.reset_failed(path))
        self.run(systemd_units.start_unit(path, self.owner, pid))
        self._await(directory, exists=True)
        self._mark_new_unit(path)

    def start_scope(self, path: str, pid: int) -> None:
        """Start the container's scope with its (waiting) process in it, its slices first; marked as ours."""
        if not self.needs_process(path):
            raise ValueError(f"{path} is not a container scope")
        parts = path.split("/")
        for depth in range(1, len(parts)):
            self._ensure_one("/".join(parts[:depth]))
        self._ensure_one(path, pid)

    def adopt(self, path: str) -> None:
        """Mark the scope a --systemd-cgroup runtime has just started for nodeconf's container, and crun's
        sub-cgroup in it (both go when the runtime deletes the container)."""
        directory = self.dir(path)
        if not self.needs_process(path) or not directory.is_dir():
            raise ValueError(f"{path} is not a running container scope")
        for made in (directory, directory / CRUN_SUBGROUP):
            if made.is_dir() and not is_marked(made, self.kernel, self.owner):
                self._mark_new(made)

    def await_gone(self, path: str, timeout: float = JOB_TIMEOUT) -> None:
        """Wait until systemd has removed a stopped scope's cgroup (SystemdCallError after `timeout`). A runtime's
        `delete` may return before: runc before 1.0.0 waits 1 s for StopUnit and goes on (runc commit 33c9f8b,
        "a race between removing the cgroup and creating another one with the same name")."""
        self._await(self.dir(path), exists=False, timeout=timeout)

    def process_cgroup(self, path: str) -> str:
        """crun's sub-cgroup of a scope when it made one (there are the process and the values crun wrote),
        else the scope."""
        sub = f"{path}/{CRUN_SUBGROUP}"
        return sub if self.needs_process(path) and is_marked(self.dir(sub), self.kernel, self.owner) else path

    def _mark_new_unit(self, path: str) -> None:
        """Mark a unit's new cgroup; one that cannot be marked is stopped again (it could not be told apart)."""
        try:
            self._mark_new(self.root / path)
        except OSError:
            self._stop(path)
            raise

    def set_properties(self, path: str, files: Mapping[str, str]) -> None:
        """SetUnitProperties for the files that are unit properties (none for a plain directory)."""
        if not is_unit(path.rsplit("/", 1)[-1]) or not self.exists(path):
            return
        properties = systemd_units.resource_properties(files)
        if properties:
            self.run(systemd_units.set_properties(path, properties))

    def remove(self, path: str) -> list[Path]:
        """Stop the units (remove the directories) of the cgroup's marked subtree, deepest first; a cgroup of
        someone else below keeps its marked ancestors. Returns those foreign cgroups."""
        owned, foreign = walk(self.dir(path), self.kernel, self.owner)
        for directory in reversed(owned):
            if holds_foreign(directory, foreign):
                continue
            relative = directory.relative_to(self.root).as_posix()
            if is_unit(directory.name):
                self._stop(relative)
            else:
                self._remove_dir(directory)
        return foreign

    def _stop(self, path: str) -> None:
        """StopUnit, wait until systemd removed the cgroup, then forget a failed state (reset-failed)."""
        self.run(systemd_units.stop_unit(path))
        self._await(self.root / path, exists=False)
        with contextlib.suppress(SystemdCallError):  # not loaded any more: nothing to forget
            self.run(systemd_units.reset_failed(path))

    @staticmethod
    def _await(directory: Path, *, exists: bool, timeout: float = JOB_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while directory.is_dir() != exists:
            if time.monotonic() > deadline:
                state = "appear" if exists else "go away"
                raise SystemdCallError(f"systemd did not make {directory} {state} within {timeout:g} s")
            time.sleep(0.01)


def systemd_manages(root: Path, proc: Path = Path("/proc")) -> bool:
    """True when PID 1 is systemd and root is the cgroup2 root it manages (the root cgroup has no cgroup.type)."""
    try:
        comm = (proc / "1" / "comm").read_text().strip()
    except OSError:
        return False
    return comm == "systemd" and (root / "cgroup.controllers").is_file() and not (root / "cgroup.type").exists()


def tree_for(root: Path, owned: tuple[str, ...] = OWNED, owner: str = "nodeconf") -> CgroupTree:
    """The kubelet's systemd driver (SystemdTree) where systemd manages root, else its cgroupfs driver."""
    if systemd_manages(root) and is_cgroup2(root):
        return SystemdTree(root, owned, owner)
    return CgroupTree(root, owned, owner)
