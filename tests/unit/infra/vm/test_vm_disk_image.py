"""Booting a vendor disk image, without a VM: the qemu argv for BIOS and UEFI, and every way a boot ends in one
line with the console tail (qemu exits, a prompt nobody answers, no cloud-init, no SSH) instead of hanging.

Source: qemu(1) (-drive snapshot=on, pflash, -boot reboot-timeout, -no-reboot); cloud-init boot stages.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from nodeconf.infra.vm import disk_image
from nodeconf.infra.vm.accel import AccelChoice
from nodeconf.infra.vm.disk_image import BootLimits, DiskMachine, console_text, dead_end, disk_qemu_argv
from nodeconf.infra.vm.disk_probe import DiskFacts
from nodeconf.infra.vm.machine import VmError
from nodeconf.infra.vm.nocloud import make_keys

BIOS = DiskFacts(Path("/images/vendor,1.qcow2"), "qcow2", "bios")
UEFI = DiskFacts(Path("/images/vendor.raw"), "raw", "uefi")


def argv(facts: DiskFacts) -> list[str]:
    return disk_qemu_argv(facts, accel="tcg", memory_mib=2048, cpus=2, directory=Path("/c/vms/a"),
                          console_log=Path("/c/vms/a/console.log"), seed=Path("/c/vms/a/seed.iso"),
                          swap_disk=Path("/c/vms/a/swap.img"), ssh_port=40022)


def option(words: list[str], flag: str) -> list[str]:
    return [words[i + 1] for i, word in enumerate(words) if word == flag]


def test_bios_boots_the_image_snapshot_with_seed_and_swap() -> None:
    words = argv(BIOS)
    drives = option(words, "-drive")
    assert drives[0] == "file=/images/vendor,,1.qcow2,format=qcow2,if=none,id=disk0,snapshot=on"
    assert "virtio-blk-pci,drive=disk0,bootindex=0" in option(words, "-device")
    assert "file=/c/vms/a/seed.iso,format=raw,if=none,id=seed,media=cdrom,readonly=on" in drives
    assert "file=/c/vms/a/swap.img,format=raw,if=virtio,cache=unsafe" in drives
    assert not [d for d in drives if "pflash" in d] and "-kernel" not in words and "-bios" not in words
    assert option(words, "-boot") == ["strict=on,reboot-timeout=1000"] and "-no-reboot" in words
    assert option(words, "-nic")[0].endswith("hostfwd=tcp:127.0.0.1:40022-:22")


def test_under_tcg_the_vcpus_share_one_host_thread() -> None:
    """No multi-threaded TCG for a kernel nodeconf did not build (its static-key text patching races there)."""
    words = argv(BIOS)
    assert option(words, "-accel") == ["tcg,thread=single"] and option(words, "-smp") == ["2"]


def test_uefi_adds_ovmf_code_read_only_and_the_vm_own_vars() -> None:
    drives = option(argv(UEFI), "-drive")
    assert drives[0] == "if=pflash,format=raw,unit=0,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.fd"
    assert drives[1] == "if=pflash,format=raw,unit=1,file=/c/vms/a/OVMF_VARS_4M.fd"
    assert "file=/images/vendor.raw,format=raw,if=none,id=disk0,snapshot=on" in drives


def test_console_text_and_dead_ends() -> None:
    assert console_text(b"\x1b[H\x1b[Jerror: unknown filesystem.\r\ngrub rescue> ") == \
        "error: unknown filesystem.\ngrub rescue> "
    assert dead_end(b"ALERT!  UUID=x does not exist.  Dropping to a shell!\r\n(initramfs) ") == "(initramfs)"
    assert dead_end(b"[    1.0] Kernel panic - not syncing: VFS") == "Kernel panic - not syncing"
    assert dead_end(b"Cloud-init v. 25.1.4 running 'init-local'") == ""


@pytest.fixture()
def booting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[DiskMachine]:
    """A DiskMachine mid-boot: its directory, an empty console, a stand-in qemu process, short limits."""
    monkeypatch.setitem(disk_image.BOOT_LIMITS, "tcg", BootLimits(cloud_init=1.0, ssh=2.0))
    machine = DiskMachine(BIOS, name="vendor-unit", cache_dir=tmp_path, accel=AccelChoice("tcg", "test"))
    machine.directory.mkdir(parents=True)
    machine.console_log.write_bytes(b"")
    machine._proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    machine._started = time.monotonic()
    yield machine
    machine.stop()


def test_no_cloud_init_line_ends_the_boot(booting: DiskMachine) -> None:
    booting.console_log.write_bytes(b"Welcome to Debian GNU/Linux 13 (trixie)!\r\n\x1b[32m  OK  \x1b[0m] Reached"
                                    b" target multi-user.target\r\n")
    started = time.monotonic()
    with pytest.raises(VmError) as err:
        booting._wait_ready(0)
    assert time.monotonic() - started < 5
    assert str(err.value) == ("VM vendor-unit: cloud-init did not run within 1 s (no 'Cloud-init v.' line on the "
                              "console); console: Welcome to Debian GNU/Linux 13 (trixie)! | "
                              "OK  ] Reached target multi-user.target")


def test_a_prompt_nobody_answers_ends_the_boot_at_once(booting: DiskMachine) -> None:
    booting.console_log.write_bytes(b"error: no such device: 276a53a1.\r\ngrub rescue> ")
    with pytest.raises(VmError, match=r"did not boot \(stopped at 'grub rescue>'\); console: error: no such"):
        booting._wait_ready(0)


def test_qemu_exit_names_the_firmware_finding(booting: DiskMachine) -> None:
    assert booting._proc is not None
    booting._proc.kill()
    booting._proc.wait()
    (booting.directory / "firmware.log").write_bytes(b"Booting from Hard Disk...\nNo bootable device.\n")
    with pytest.raises(VmError, match=r"qemu exited \(status -9\) before the guest came up, the firmware found "
                                      r"nothing bootable on the image; console: \(empty\)"):
        booting._wait_ready(0)


def test_cloud_init_without_ssh_ends_at_the_ssh_limit(booting: DiskMachine) -> None:
    keys = make_keys(booting.directory)
    booting.image = replace(booting.image, host_public_key=keys.host_public_key)
    booting.ssh_port = 1  # nothing listens
    booting.console_log.write_bytes(b"[   9.1] cloud-init[301]: Cloud-init v. 25.1.4 running 'init-local'\r\n")
    with pytest.raises(VmError, match=r"cloud-init ran but SSH did not answer within 2 s"):
        booting._wait_ready(0)


def test_a_vendor_image_is_named_by_its_file_and_sha256(tmp_path: Path) -> None:
    image = tmp_path / "vendor.qcow2"
    image.write_bytes(b"QFI\xfb" + bytes(3 << 20))  # more than one read chunk
    assert disk_image.image_identity(image) == f"vendor.qcow2, sha256 {hashlib.sha256(image.read_bytes()).hexdigest()}"
