"""VirtualMachine without booting: argument checks, name clashes, the sparse swap disk, free ports."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodeconf.infra.vm.accel import AccelChoice
from nodeconf.infra.vm.image import VmImage
from nodeconf.infra.vm.machine import BOOT_TIMEOUT, VirtualMachine, VmError, console_summary, free_loopback_port
from nodeconf.infra.vm.qemu import QemuSpec
from nodeconf.infra.vm.state import VmState, qemu_pid_alive, vm_directory

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


def _qemu_standins(monkeypatch: pytest.MonkeyPatch, crashes: int) -> list[Path]:
    """Replace qemu: the first `crashes` starts exit at once, later ones print the readiness line and wait."""
    consoles: list[Path] = []

    def argv(spec: QemuSpec) -> list[str]:
        consoles.append(spec.console_log)
        if len(consoles) <= crashes:
            return [sys.executable, "-c", "raise SystemExit(3)", str(spec.console_log)]
        ready = f"import pathlib, time; pathlib.Path({str(spec.console_log)!r}).write_text({IMAGE.ready_marker!r});" \
                " time.sleep(30)"
        return [sys.executable, "-c", ready, str(spec.console_log)]

    monkeypatch.setattr("nodeconf.infra.vm.machine.qemu_argv", argv)
    return consoles


def test_a_qemu_that_dies_during_boot_is_started_once_more(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    starts = _qemu_standins(monkeypatch, crashes=1)
    machine = VirtualMachine(IMAGE, name="flaky", cache_dir=tmp_path, accel=TCG, swap_mib=0)
    try:
        machine.start()
        assert len(starts) == 2
        assert machine.pid is not None and qemu_pid_alive(machine.pid, machine.directory)
    finally:
        machine.stop()


def test_a_qemu_that_dies_twice_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    starts = _qemu_standins(monkeypatch, crashes=2)
    machine = VirtualMachine(IMAGE, name="broken", cache_dir=tmp_path, accel=TCG, swap_mib=0)
    with pytest.raises(VmError, match="qemu exited with status 3"):
        machine.start()
    assert len(starts) == 2
    assert machine.pid is None


def test_a_vm_whose_qemu_exits_mid_run_is_reported_lost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The session plugin stops the run as INTERRUPTED when a booted VM's qemu is gone (issue 10 item 3)."""
    from nodeconf.infra.vm.machine import lost_machines

    _qemu_standins(monkeypatch, crashes=1)
    machine = VirtualMachine(IMAGE, name="lost", cache_dir=tmp_path, accel=TCG, swap_mib=0)
    try:
        machine.start()
        assert "lost" not in lost_machines(), "a failed boot attempt is not a lost VM"
        state = VmState.read(machine.directory)
        assert state.owner_pid > 0 and not state.persistent and not state.leftover_reason()
        assert machine.pid is not None
        subprocess.run(["kill", "-9", str(machine.pid)], check=True)
        deadline = time.monotonic() + 10
        while "lost" not in lost_machines() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lost_machines()["lost"].startswith("qemu exit status -9; console: ")
    finally:
        machine.stop()
    assert "lost" not in lost_machines()


def test_console_summary_shows_the_first_fault_lines_before_the_tail() -> None:
    lines = ["[ 1.0] booting", "[90.1] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI", "[90.1] RIP: 0010:__alloc_pages+0x1",
             "[90.2] RIP: 0010:again", "[93.1] Shutting down cpus with NMI", "[93.1] Kernel Offset: 0x3640",
             "[93.2] ---[ end Kernel panic - not syncing: Fatal exception in interrupt ]---"]
    assert console_summary(lines) == " | ".join([*lines[1:3], "…", *lines[-3:]])
    assert console_summary(["a", "b", "c", "d"]) == "b | c | d"
    assert console_summary([]) == "(empty)"


def test_a_boot_without_readiness_line_keeps_the_whole_console(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    console = "".join(f"[    {n}.0] line {n}\n" for n in range(8))
    monkeypatch.setattr("nodeconf.infra.vm.machine.qemu_argv", lambda spec: [
        sys.executable, "-c", f"import pathlib, time; pathlib.Path({str(spec.console_log)!r}).write_text({console!r});"
        " time.sleep(30)", str(spec.console_log)])
    monkeypatch.setitem(BOOT_TIMEOUT, "tcg", 1.0)
    machine = VirtualMachine(IMAGE, name="silent", cache_dir=tmp_path, accel=TCG, swap_mib=0)
    with pytest.raises(VmError) as err:
        machine.start()
    kept = list((tmp_path / "failed-boots").iterdir())
    assert [p.read_text() for p in kept] == [console]
    assert str(err.value) == (f"VM silent: no readiness line within 1 s; console: [    5.0] line 5 | [    6.0] line 6"
                              f" | [    7.0] line 7 (whole console: {kept[0]})")
    assert kept[0].name.startswith("silent-") and not machine.directory.exists() and machine.pid is None
