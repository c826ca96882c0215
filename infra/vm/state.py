"""The record of a running VM under the cache's vms/<name>/, so other commands can find and stop it."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from infra.vm import paths

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

    def write(self) -> None:
        """Record this state in its VM directory."""
        path = Path(self.directory) / STATE_FILE
        scratch = path.with_suffix(".tmp")
        scratch.write_text(json.dumps(asdict(self), indent=2) + "\n")
        scratch.replace(path)

    @classmethod
    def read(cls, directory: Path) -> VmState:
        """The state recorded in a VM directory; ValueError when missing or unreadable."""
        try:
            return cls(**json.loads((directory / STATE_FILE).read_text()))
        except (OSError, ValueError, TypeError) as err:
            raise ValueError(f"no readable VM state in {directory}: {err}") from err

    def is_running(self) -> bool:
        """True while the recorded pid is still this VM's qemu (guards against a reused pid)."""
        return qemu_pid_alive(self.pid, Path(self.directory))


def qemu_pid_alive(pid: int, directory: Path) -> bool:
    """True when pid is a live (not zombie) process whose command line names this VM directory."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    state = status.rsplit(")", 1)[-1].split()[0]
    return state != "Z" and str(directory).encode() in cmdline


def terminate_pid(pid: int, directory: Path, grace: float = 5.0) -> None:
    """SIGTERM this VM's qemu, then SIGKILL after the grace period; no-op when it is already gone."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, grace)):
        if not qemu_pid_alive(pid, directory):
            return
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and qemu_pid_alive(pid, directory):
            time.sleep(0.05)


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
        if not state.is_running():
            shutil.rmtree(state.directory, ignore_errors=True)
            pruned.append(state.name)
    return pruned
