"""The record of a running VM under the cache's vms/<name>/, so other commands can find and stop it."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from infra.vm import paths
from infra.vm.cache_files import remove_vm_directory, write_atomically

STATE_FILE = "state.json"
NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")


def validate_name(name: str) -> str:
    """The VM name if it is safe as a directory name (lower-case letters, digits, '-'); ValueError otherwise."""
    if not NAME_PATTERN.fullmatch(name):
        raise ValueError(f"VM name {name!r} must match {NAME_PATTERN.pattern}")
    return name


@dataclass(frozen=True)
class VmState:
    """Where a running VM is: qemu pid, SSH port, directory, accelerator and the keys to log in."""

    name: str
    pid: int
    ssh_port: int
    directory: str
    accel: str
    client_key: str
    host_public_key: str
    memory_mib: int
    cpus: int
    swap_mib: int
    owner_pid: int = 0
    owner_start: int = 0
    persistent: bool = False

    def write(self) -> None:
        """Record this state in its VM directory (a new file renamed into place: a link there is not followed)."""
        write_atomically(Path(self.directory) / STATE_FILE, (json.dumps(asdict(self), indent=2) + "\n").encode())

    @classmethod
    def read(cls, directory: Path) -> VmState:
        """The state recorded in a VM directory; ValueError when missing or unreadable, when the directory or the
        record is a symbolic link, or when the record names another VM or directory than the one it lies in (a stale
        or planted record must not steer what is stopped or removed)."""
        try:
            if not stat.S_ISDIR(os.lstat(directory).st_mode):
                raise ValueError("a symbolic link or not a directory")
            handle = os.open(directory / STATE_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            with os.fdopen(handle, "rb") as record:
                state = cls(**json.loads(record.read()))
            if (state.name, os.path.abspath(state.directory)) != (directory.name, os.path.abspath(directory)):
                raise ValueError(f"it names another VM ({state.name!r} in {state.directory})")
        except (OSError, ValueError, TypeError) as err:
            raise ValueError(f"no readable VM state in {directory}: {err}") from err
        return state

    def is_running(self) -> bool:
        """True while the recorded pid is still this VM's qemu (guards against a reused pid)."""
        return qemu_pid_alive(self.pid, Path(self.directory))

    def leftover_reason(self) -> str:
        """Why this VM is a leftover nobody will stop ("" when it is not): its qemu is gone, or the run that
        started it is gone (a VM from `nodeconf node up` outlives its command on purpose and is kept)."""
        if not self.is_running():
            return "its qemu is gone (stale record)"
        if not self.persistent and self.owner_pid and not process_alive(self.owner_pid, self.owner_start):
            return f"the process that started it (pid {self.owner_pid}) is gone"
        return ""


def _stat_fields(pid: int) -> list[str]:
    """proc(5) stat fields from field 3 (state) on, after the command name; empty when the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
    except OSError:
        return []


def process_start(pid: int) -> int:
    """The start time of a process in clock ticks since boot (proc(5) stat field 22); 0 when it is gone."""
    fields = _stat_fields(pid)
    return int(fields[19]) if len(fields) > 19 and fields[19].isdigit() else 0


def process_alive(pid: int, start: int) -> bool:
    """True when `pid` runs and is the process that started at `start` (not a reused pid)."""
    now = process_start(pid)
    return now != 0 and (start == 0 or now == start)


def qemu_pid_alive(pid: int, directory: Path) -> bool:
    """True when pid is a live (not zombie) process whose command line names this VM directory."""
    return not has_exited(pid) and str(directory).encode() in b"\0".join(_cmdline(pid))


def has_exited(pid: int) -> bool:
    """True once pid is gone or a zombie. Its command line empties while it is still exiting (its memory is freed
    first), so a test of the command line alone can answer "gone" before the process has exited."""
    fields = _stat_fields(pid)
    return not fields or fields[0] in ("Z", "X")


def _signal_until_exited(pid: int, is_ours: Callable[[], bool], grace: float) -> None:
    """SIGTERM, then SIGKILL after the grace period, each sent only while is_ours() still holds; then wait (up to the
    grace period) until the process has really exited."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not is_ours():  # also false once it is gone or a zombie
            return
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and not has_exited(pid):
            time.sleep(0.05)


def terminate_pid(pid: int, directory: Path, grace: float = 5.0) -> None:
    """Stop this VM's qemu (SIGTERM, then SIGKILL after the grace period); no-op when it is already gone."""
    _signal_until_exited(pid, lambda: qemu_pid_alive(pid, directory), grace)


def vm_directory(name: str, cache_dir: Path | None = None) -> Path:
    """The directory of the VM called name."""
    return paths.vms_dir(cache_dir) / validate_name(name)


def list_states(cache_dir: Path | None = None) -> list[VmState]:
    """Every VM recorded in the cache, running or stale, by name."""
    root = paths.vms_dir(cache_dir)
    if not root.is_dir():
        return []
    states = []
    for directory in sorted(root.iterdir()):
        try:
            states.append(VmState.read(directory))
        except ValueError:
            continue
    return states


def prune_stale(cache_dir: Path | None = None) -> list[str]:
    """Remove the directories of recorded VMs whose qemu is gone (e.g. after a SIGKILL); return their names."""
    pruned = []
    for state in list_states(cache_dir):
        if not state.is_running() and not remove_vm_directory(Path(state.directory), cache_dir):
            pruned.append(state.name)
    return pruned


def parent_pid(pid: int) -> int:
    """The parent pid of a process (proc(5) stat field 4); 0 when it is gone."""
    fields = _stat_fields(pid)
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else 0


def _cmdline(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def is_our_qemu(pid: int, cache_dir: Path | None = None) -> bool:
    """True when `pid` is a qemu-system process whose command line names a VM directory of this cache."""
    argv = _cmdline(pid)
    marker = str(paths.vms_dir(cache_dir)).encode() + b"/"
    return bool(argv) and Path(os.fsdecode(argv[0])).name.startswith("qemu-system") and \
        any(marker in arg for arg in argv)


def untracked_qemus(cache_dir: Path | None = None) -> list[int]:
    """Orphaned qemu processes of this cache that no VM record names (their run was killed with its state lost):
    a qemu-system whose command line names this cache's vms/ directory and whose parent is gone (re-parented to
    init); a qemu still owned by a live process, or recorded in a state file, is never listed."""
    recorded = {state.pid for state in list_states(cache_dir)}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if pid not in recorded and is_our_qemu(pid, cache_dir) and parent_pid(pid) == 1:
            found.append(pid)
    return sorted(found)


def terminate_qemu(pid: int, cache_dir: Path | None = None, grace: float = 5.0) -> None:
    """Stop an untracked qemu of this cache (SIGTERM, then SIGKILL), re-checking its command line before each signal."""
    _signal_until_exited(pid, lambda: is_our_qemu(pid, cache_dir), grace)
