"""VirtualMachine without booting: argument checks, name clashes, the sparse swap disk, free ports."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from infra.vm.accel import AccelChoice
from infra.vm.image import VmImage
from infra.vm.machine import VirtualMachine, VmError, free_loopback_port
from infra.vm.state import VmState, qemu_pid_alive, vm_directory

IMAGE = VmImage(directory=Path("/nonexistent"), key="k", kernel=Path("/nonexistent/vmlinux"),
                initrd=Path("/nonexistent/initrd.img"), root_disk=Path("/nonexistent/root.img"),
                client_key=Path("/nonexistent/id_ed25519"), host_public_key="ssh-ed25519 AAAA",
                kernel_release="6.1.0-57-amd64")
TCG = AccelChoice("tcg", "test")


@pytest.fixture()
def impostor(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A process whose command line names the VM directory of `busy`, recorded as that VM's qemu."""
    directory = vm_directory("busy", tmp_path)
    directory.mkdir(parents=True)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", str(directory / "console.log")])
    VmState("busy", proc.pid, 40022, str(directory), "tcg", "/k", "ssh-ed25519 AAAA", 2048, 2, 1024).write()
    deadline = time.monotonic() + 10
    while not qemu_pid_alive(proc.pid, directory) and time.monotonic() < deadline:
        time.sleep(0.01)
    yield proc
    proc.kill()
    proc.wait()


@pytest.mark.parametrize(("memory_mib", "cpus", "swap_mib"), [(128, 2, 0), (2048, 0, 0), (2048, 2, -1)])
def test_impossible_sizes_are_rejected(memory_mib: int, cpus: int, swap_mib: int) -> None:
    with pytest.raises(ValueError, match="memory_mib >= 256"):
        VirtualMachine(IMAGE, memory_mib=memory_mib, cpus=cpus, swap_mib=swap_mib)


def test_a_bad_name_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="VM name"):
        VirtualMachine(IMAGE, name="../x", cache_dir=tmp_path)


def test_a_running_vm_of_the_same_name_is_left_alone(tmp_path: Path,
                                                      impostor: subprocess.Popen[bytes]) -> None:
    machine = VirtualMachine(IMAGE, name="busy", cache_dir=tmp_path, accel=TCG)
    with pytest.raises(VmError, match=f"already running \\(pid {impostor.pid}\\)"):
        machine.start()
    machine.stop()
    assert impostor.poll() is None
    assert (vm_directory("busy", tmp_path) / "state.json").exists()


def test_swap_disk_is_sparse_and_has_a_swap_signature(tmp_path: Path) -> None:
    machine = VirtualMachine(IMAGE, name="swap", cache_dir=tmp_path, swap_mib=64)
    machine.directory.mkdir(parents=True)
    machine._make_swap_disk()
    swap = machine.directory / "swap.img"
    assert swap.stat().st_size == 64 * 1024 * 1024
    assert swap.stat().st_blocks * 512 < 1024 * 1024
    with open(swap, "rb") as handle:
        handle.seek(4096 - 10)
        assert handle.read(10) == b"SWAPSPACE2"


def test_stop_before_start_is_harmless(tmp_path: Path) -> None:
    machine = VirtualMachine(IMAGE, name="idle", cache_dir=tmp_path)
    machine.stop()
    machine.stop()
    assert machine.pid is None


def test_free_loopback_port_can_be_bound() -> None:
    port = free_loopback_port()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))
