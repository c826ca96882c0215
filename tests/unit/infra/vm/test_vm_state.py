"""Records of running VMs: safe names, state round trip, pid checks that survive pid reuse."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from nodeconf.infra.vm.state import (
    VmState,
    has_exited,
    list_states,
    prune_stale,
    qemu_pid_alive,
    terminate_pid,
    validate_name,
    vm_directory,
)


@pytest.mark.parametrize("name", ["default", "pytest-123-gw0", "a"])
def test_valid_names(name: str) -> None:
    assert validate_name(name) == name


@pytest.mark.parametrize("name", ["", "../etc", "Default", "-x", "a b", "a/b", "x" * 41, "vm;rm"])
def test_invalid_names(name: str) -> None:
    with pytest.raises(ValueError, match="VM name"):
        validate_name(name)


def state_in(directory: Path, name: str = "default", pid: int = 4242) -> VmState:
    return VmState(name, pid, 40022, str(directory), "tcg", "/c/id_ed25519", "ssh-ed25519 AAAA", 2048, 2, 1024)


def test_state_round_trip_and_listing(tmp_path: Path) -> None:
    directory = vm_directory("default", tmp_path)
    directory.mkdir(parents=True)
    state = state_in(directory)
    state.write()
    assert VmState.read(directory) == state
    (tmp_path / "vms" / "junk").mkdir()
    assert list_states(tmp_path) == [state]


def test_missing_state_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no readable VM state"):
        VmState.read(tmp_path)


def test_a_pid_not_naming_the_vm_directory_is_not_our_qemu(tmp_path: Path) -> None:
    assert not qemu_pid_alive(os.getpid(), tmp_path / "vms" / "default")
    assert not state_in(tmp_path, pid=os.getpid()).is_running()


def test_terminating_a_foreign_pid_does_nothing(tmp_path: Path) -> None:
    terminate_pid(os.getpid(), tmp_path / "vms" / "default", grace=0.1)
    assert Path(f"/proc/{os.getpid()}").exists()


def test_prune_stale_removes_only_dead_records(tmp_path: Path) -> None:
    dead = vm_directory("dead", tmp_path)
    booting = vm_directory("booting", tmp_path)
    dead.mkdir(parents=True)
    booting.mkdir(parents=True)
    state_in(dead, "dead", pid=os.getpid()).write()
    assert prune_stale(tmp_path) == ["dead"]
    assert not dead.exists() and booting.exists()


def test_a_process_has_exited_only_once_it_is_gone_or_a_zombie() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    assert not has_exited(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # exited, not yet reaped: a zombie
    assert has_exited(proc.pid)
    proc.wait()
    assert has_exited(proc.pid)
