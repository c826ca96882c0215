"""The agent's own cgroup v2 subtree: create top-down with controllers (each marked as nodeconf's), write, read,
kill and remove only what carries the mark."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from nodeconf import names
from nodeconf.enforcer.ownership import (
    ForeignCgroup,
    foreign_message,
    holds_foreign,
    is_kubepods,
    is_marked,
    mark,
    walk,
)

# The agent's own top-level cgroups: kubepods of the systemd and the cgroupfs drivers (kubelet cm/cgroup_manager).
OWNED = ("kubepods.slice", "kubepods")
# Controllers the agent enables top-down (cgroup-v2.rst "Top-down Constraint").
# cpuset: the static CPU manager's cpuset.cpus (runc enables every available controller the same way).
CONTROLLERS = ("cpuset", "cpu", "memory", "pids", "hugetlb")


def cgroup2_mount(path: Path) -> Path | None:
    """The mount point of the cgroup2 file system path is on, None when path is on another (/proc/self/mountinfo:
    the longest mount point containing path)."""
    resolved = str(path.resolve())
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as handle:
            mounts = [line.split(" - ") for line in handle]
    except OSError:
        return None
    best = ""
    fstype = ""
    for head, tail in (m for m in mounts if len(m) == 2):
        point = head.split()[4]
        if (resolved == point or resolved.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
            best, fstype = point, tail.split()[0]
    return Path(best) if fstype == "cgroup2" else None


def is_cgroup2(path: Path) -> bool:
    """True when path is on a mounted cgroup2 file system."""
    return cgroup2_mount(path) is not None


class CgroupTree:
    """Cgroups below `root` whose first component is one of `owned`; a plain directory works as a stand-in.
    Every directory it creates carries `owner` as nodeconf's mark; only marked ones are killed or removed."""

    def __init__(self, root: Path, owned: tuple[str, ...] = OWNED, owner: str = "nodeconf") -> None:
        self.root = root
        self.owned = owned
        self.owner = owner
        self.kernel = is_cgroup2(root)
        # Cgroups this tree made or found marked, with the controllers enabled in their parent: a later ensure()
        # checks only their mark on the way down (issue 31: under TCG each ancestor's controller files and mkdir
        # attempt took a good part of a pod's start).
        self.made: set[Path] = set()
        self._dirs: dict[str, Path] = {}  # dir()'s answers: its path join and name checks, once per cgroup

    def dir(self, path: str) -> Path:
        found = self._dirs.get(path)
        if found is None:
            found = self._dirs[path] = self.root / names.cgroup_path(path, self.owned)
        return found

    def ensure(self, path: str) -> None:
        """Create the cgroup and its missing parents, enabling controllers in each parent on the way down and
        marking each new one; ForeignCgroup (nothing written) when one on the way exists without the mark. A cgroup
        made earlier (`made`) that still carries the mark is passed by (its parent's controllers were enabled
        then); every other one, also one removed or replaced meanwhile, takes the whole way again."""
        parts = names.cgroup_path(path, self.owned).split("/")
        parent = self.root
        for part in parts:
            child = parent / part
            if child not in self.made or not is_marked(child, self.kernel, self.owner):
                self._refuse_foreign(child)
                self._enable_controllers(parent)
                self._make_dir(child)
                self.made.add(child)
            parent = child

    def _make_dir(self, child: Path) -> None:
        """Create and mark one cgroup; one that appeared meanwhile must carry the mark."""
        try:
            child.mkdir()
        except FileExistsError:
            self._refuse_foreign(child)
        else:
            self._mark_new(child)

    def needs_process(self, path: str) -> bool:
        """True for a cgroup that can only be created with its first process (a systemd scope); none here."""
        return False

    def process_cgroup(self, path: str) -> str:
        """The cgroup below path that holds the container's processes and values: path itself here."""
        return path

    def adopt(self, path: str) -> None:
        """Mark a scope a runtime started for nodeconf's container; none here (needs_process is always False)."""

    def await_gone(self, path: str) -> None:
        """Wait until the cgroup's manager has removed a stopped scope; nothing to wait for here."""

    def set_properties(self, path: str, files: Mapping[str, str]) -> None:
        """Tell the cgroup's manager the values before they are written (systemd units); nothing here."""

    def _refuse_foreign(self, directory: Path) -> None:
        if (directory.exists() or directory.is_symlink()) and not is_marked(directory, self.kernel, self.owner):
            raise ForeignCgroup(foreign_message(directory))

    def _mark_new(self, directory: Path) -> None:
        """Mark a cgroup just created; one that cannot be marked is removed again (it could not be told apart)."""
        try:
            mark(directory, self.owner, self.kernel)
        except OSError as err:
            with contextlib.suppress(OSError):
                directory.rmdir()
            raise OSError(err.errno, f"cannot mark {directory} as nodeconf's ({err.strerror}); nodeconf does not "
                                     "create cgroups it could not recognise later") from None

    def _enable_controllers(self, parent: Path) -> None:
        control = parent / "cgroup.subtree_control"
        if not self.kernel:
            if not control.exists():
                control.write_text(" ".join(CONTROLLERS) + "\n")
            return
        enabled = set(control.read_text().split())
        available = set((parent / "cgroup.controllers").read_text().split())
        missing = [c for c in CONTROLLERS if c in available and c not in enabled]
        if missing:
            control.write_text(" ".join(f"+{c}" for c in missing))

    def write(self, path: str, file: str, value: str) -> None:
        """The value in one write(2), as the kernel parses each write of a cgroup file on its own. Through the fd,
        not a file object: under TCG pathlib's write_text took three times as long (issue 31)."""
        data = value.encode()
        handle = os.open(os.path.join(self.dir(path), names.cgroup_file(file)),
                         os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)  # creates in a stand-in only
        try:
            if os.write(handle, data) != len(data):
                raise OSError(errno.EIO, f"short write of {file} in cgroup {path}")
        finally:
            os.close(handle)

    def read(self, path: str, file: str) -> str | None:
        """The file's text without the final newline, or None when it does not exist (or cannot be read)."""
        return _read_at(None, os.path.join(self.dir(path), names.cgroup_file(file)))

    def read_many(self, path: str, files: Sequence[str]) -> dict[str, str | None] | None:
        """Several files of one cgroup through one directory handle (names checked by the caller with
        names.cgroup_file); None when the cgroup does not exist, None for a file that does not."""
        try:
            directory = os.open(self.dir(path), os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return None
        try:
            return {name: _read_at(directory, name) for name in files}
        finally:
            os.close(directory)

    def exists(self, path: str) -> bool:
        return self.dir(path).is_dir()

    def keyed(self, path: str, file: str) -> dict[str, int]:
        """A flat-keyed file such as memory.events as a mapping (missing file → empty)."""
        text = self.read(path, file) or ""
        out: dict[str, int] = {}
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            with contextlib.suppress(ValueError):
                out[key] = int(value)
        return out

    def pids(self, path: str) -> list[int]:
        """Pids in the cgroup and its marked descendants (not in a cgroup of someone else below it)."""
        found: list[int] = []
        for directory in walk(self.dir(path), self.kernel, self.owner)[0]:
            with contextlib.suppress(OSError):
                found += [int(p) for p in (directory / "cgroup.procs").read_text().split() if p.isdigit()]
        return found

    def kill(self, path: str, timeout: float = 5.0) -> None:
        """SIGKILL every process of the cgroup's marked subtree and wait until it is empty; a cgroup of someone
        else below it keeps its processes (cgroup.kill only where the whole subtree is ours)."""
        if not self.exists(path):
            return
        deadline = time.monotonic() + timeout
        while True:
            pids = self.pids(path)
            if not self.kernel or not pids:
                return
            owned, foreign = walk(self.dir(path), self.kernel, self.owner)
            whole = [d for d in owned if not holds_foreign(d, foreign)]
            for directory in (d for d in whole if d.parent not in whole):
                kill_file = directory / "cgroup.kill"
                if kill_file.exists():
                    kill_file.write_text("1")
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                raise OSError(errno.EBUSY, f"processes {pids} of cgroup {path} do not die")
            time.sleep(0.02)

    def remove(self, path: str) -> list[Path]:
        """Remove the cgroup and its marked descendants, deepest first (kill its processes first); a cgroup of
        someone else below it stays, with its marked ancestors. Returns those foreign cgroups."""
        owned, foreign = walk(self.dir(path), self.kernel, self.owner)
        for directory in reversed(owned):
            if not holds_foreign(directory, foreign):
                self._remove_dir(directory)
        return foreign

    def _remove_dir(self, directory: Path) -> None:
        """rmdir one marked cgroup (a stand-in directory loses its files first)."""
        if not self.kernel:
            for entry in os.scandir(directory):
                if not entry.is_dir(follow_symlinks=False):
                    os.unlink(entry.path)
        self._rmdir(directory)

    def clear(self) -> list[Path]:
        """Kill and remove every marked top-level cgroup; the foreign cgroups left in place (see remove)."""
        left: list[Path] = []
        for top in self.owned_roots():
            self.kill(top)
            left += self.remove(top)
        return left

    def _rmdir(self, directory: Path, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                directory.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError as err:
                # A killed process leaves its cgroup a moment after it is reaped (EBUSY).
                if err.errno != errno.EBUSY or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def owned_roots(self) -> list[str]:
        """The top-level cgroups that exist now and carry nodeconf's mark."""
        return [name for name in self.owned if is_marked(self.root / name, self.kernel, self.owner)]

    def foreign_roots(self) -> list[Path]:
        """Where a kubelet (or another nodeconf run) keeps pods on this node, by the kubelet's names: a kubepods
        cgroup the root lies in, a top-level cgroup in the agent's place without this agent's mark, and a kubepods
        cgroup anywhere else on the file system (a kubelet's custom cgroupRoot)."""
        mount = cgroup2_mount(self.root) if self.kernel else None
        base = mount or self.root  # a stand-in is searched below its root, its whole path for the root's place
        parts = self.root.resolve().relative_to(mount or "/").parts
        inside = [(mount or Path("/")).joinpath(*parts[:depth + 1])
                  for depth, part in enumerate(parts) if is_kubepods(part)]
        tops = [self.root / name for name in self.owned]
        taken = [top for top in tops if (top.exists() or top.is_symlink())
                 and not is_marked(top, self.kernel, self.owner)]
        found = [*inside[:1], *taken]
        return found + [p for p in _kubepods_below(base, set(tops)) if p not in found]

    def refuse_foreign(self) -> None:
        """ForeignCgroup naming the first place a kubelet or another run keeps pods (checked before any write)."""
        for top in self.foreign_roots():
            raise ForeignCgroup(foreign_message(top, self.kernel))


def _kubepods_below(base: Path, skip: set[Path]) -> list[Path]:
    """The kubepods-named cgroups below base (not entered, nor the `skip` ones), breadth first, no symlinks."""
    found: list[Path] = []
    level = [base]
    while level:
        below: list[Path] = []
        for directory in level:
            with contextlib.suppress(OSError), os.scandir(directory) as entries:
                children = sorted(Path(e.path) for e in entries if e.is_dir(follow_symlinks=False))
            for child in children:
                if child in skip:
                    continue
                (found if is_kubepods(child.name) else below).append(child)
        level = below
    return found


def _read_at(directory: int | None, name: str) -> str | None:
    """A file below an open directory (or at a path) as text without the final newline; None when it cannot be
    read."""
    try:
        handle = os.open(name, os.O_RDONLY | os.O_CLOEXEC, dir_fd=directory)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(handle, 65536):
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(handle)
    return b"".join(chunks).decode(errors="replace").rstrip("\n")
