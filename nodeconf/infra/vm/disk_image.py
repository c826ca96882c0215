"""Boot a vendor disk image as it ships (its firmware path, GRUB, kernel, initramfs, systemd, cloud-init) and log in.

The image file is opened snapshot=on (never written); a NoCloud seed ISO made per boot installs our client key
and a host key made here (pinned before boot); an extra virtio disk is the swap, turned on by cloud-init's
bootcmd. A broken image ends with one line and the tail of its console, never a hang.
Source: issue 14 item 3; cloud-init docs ("NoCloud", "Boot stages": each stage prints `Cloud-init v. X running`);
qemu(1) (-drive snapshot=on, pflash, -boot reboot-timeout with -no-reboot); SeaBIOS and OVMF (Debian packages
seabios, ovmf: OVMF_CODE_4M.fd read-only with a writable copy of OVMF_VARS_4M.fd).
"""

from __future__ import annotations

import hashlib
import re
import secrets
import shutil
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from nodeconf.infra.vm.accel import AccelChoice, slow_node_settings
from nodeconf.infra.vm.disk_probe import DiskFacts, inspect_image
from nodeconf.infra.vm.image import VmImage
from nodeconf.infra.vm.machine import (
    DEFAULT_CPUS,
    DEFAULT_MEMORY_MIB,
    DEFAULT_SWAP_MIB,
    VirtualMachine,
    VmError,
    console_summary,
)
from nodeconf.infra.vm.nocloud import make_keys, meta_data, user_data, write_seed_iso
from nodeconf.infra.vm.qemu import machine_argv, option_value, swap_and_network_argv
from nodeconf.nodes.ssh_login import SshTarget
from nodeconf.nodes.transport.base import TransportError
from nodeconf.nodes.transport.ssh import HostKeyError, SshTransport

if TYPE_CHECKING:
    from nodeconf.nodes.enforced.node import EnforcedNode, EnforcerSettings

OVMF_CODE = Path("/usr/share/OVMF/OVMF_CODE_4M.fd")
OVMF_VARS = Path("/usr/share/OVMF/OVMF_VARS_4M.fd")
CLOUD_INIT_MARKER = b"Cloud-init v. "
# Consoles that wait for a person forever: the image is broken (source: GRUB, initramfs-tools, OVMF, Linux).
DEAD_ENDS = (b"grub rescue>", b"grub> ", b"(initramfs) ", b"Kernel panic - not syncing", b"Shell> ",
             b"No bootable option or device was found")
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-Za-z]|[\x00-\x08\x0b-\x1f\x7f]")
SSH_ATTEMPT_SECONDS = 5.0


@dataclass(frozen=True)
class BootLimits:
    """Seconds from qemu start until cloud-init must have printed its first line, and until SSH must answer."""

    cloud_init: float
    ssh: float


# Measured under multi-threaded TCG on a shared 2-core host (trixie BIOS image, host load ≈6): kernel at 0 s,
# initramfs 11–35 s, cloud-init's first line at ≈100 s, SSH at 160 s. With both vCPUs in one host thread the boot
# to a started enforcer went from ≈112 s to 202 s (≈1.8×); the limits leave ≈2× beyond that. KVM is far faster.
BOOT_LIMITS = {"tcg": BootLimits(cloud_init=360.0, ssh=600.0), "kvm": BootLimits(cloud_init=60.0, ssh=120.0)}


def console_text(raw: bytes) -> str:
    """Console bytes as plain text: terminal escapes and control characters removed, line breaks kept."""
    return ANSI.sub(b"", raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")).decode(errors="replace")


def dead_end(console: bytes) -> str:
    """The prompt a broken boot stopped at ("" when none)."""
    found = [mark for mark in DEAD_ENDS if mark in console]
    return found[0].decode().strip() if found else ""


def disk_qemu_argv(facts: DiskFacts, *, accel: str, memory_mib: int, cpus: int, directory: Path,
                   console_log: Path, seed: Path, swap_disk: Path | None, ssh_port: int,
                   binary: str = "qemu-system-x86_64") -> list[str]:
    """qemu booting the image through its firmware: SeaBIOS (qemu's default) or OVMF with a VM-owned VARS copy.

    The image is the first boot device and opened snapshot=on; the seed is a read-only CD. When the firmware
    finds nothing to boot it reboots after 1 s, which -no-reboot turns into qemu exiting (no silent hang).
    Under TCG its vCPUs share one host thread: a vendor kernel flips static keys (cpuset, memcg sockets, CFS
    bandwidth) at boot and per container, patching its text through int3, and under multi-threaded TCG another vCPU
    can still run that int3 ("Fatal exception in interrupt" at boot, and a guest that stopped answering at its
    first CPU-limited pod, both in CI on the trixie image). Nothing of the image is changed to avoid it.
    """
    argv = machine_argv(binary, accel, memory_mib, cpus, console_log, tcg_thread="single")
    if facts.firmware == "uefi":
        argv += ["-drive", f"if=pflash,format=raw,unit=0,readonly=on,file={option_value(OVMF_CODE)}",
                 "-drive", f"if=pflash,format=raw,unit=1,file={option_value(directory / OVMF_VARS.name)}"]
    argv += [
        "-chardev", f"file,id=firmware,path={option_value(directory / 'firmware.log')}",
        "-device", "isa-debugcon,iobase=0x402,chardev=firmware",
        "-boot", "strict=on,reboot-timeout=1000",
        "-drive", f"file={option_value(facts.path)},format={facts.format},if=none,id=disk0,snapshot=on",
        "-device", "virtio-blk-pci,drive=disk0,bootindex=0",
        "-drive", f"file={option_value(seed)},format=raw,if=none,id=seed,media=cdrom,readonly=on",
        "-device", "ide-cd,drive=seed",
        *swap_and_network_argv(swap_disk, ssh_port),
    ]
    return argv


def ssh_banner(port: int) -> bool:
    """True when something on the loopback port greets with an SSH banner (slirp accepts before sshd runs)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=SSH_ATTEMPT_SECONDS) as probe:
            probe.settimeout(SSH_ATTEMPT_SECONDS)
            return probe.recv(4) == b"SSH-"
    except OSError:
        return False


class DiskMachine(VirtualMachine):
    """A VM booting a vendor disk image; start(), ssh() and stop() as for the reference VM (same records)."""

    def __init__(self, facts: DiskFacts, *, memory_mib: int = DEFAULT_MEMORY_MIB, cpus: int = DEFAULT_CPUS,
                 swap_mib: int = DEFAULT_SWAP_MIB, name: str | None = None, cache_dir: Path | None = None,
                 accel: AccelChoice | None = None, progress: Callable[[str], None] | None = None) -> None:
        self.facts = facts
        # The image brings its own kernel: the boot-file fields stay empty; keys are made per boot in start().
        placeholder = VmImage(directory=facts.path.parent, key=f"disk:{facts.path.name}", kernel=Path(),
                              initrd=Path(), root_disk=facts.path, client_key=Path(), host_public_key="",
                              kernel_release="", cmdline="", ready_marker=CLOUD_INIT_MARKER.decode())
        super().__init__(placeholder, memory_mib=memory_mib, cpus=cpus, swap_mib=swap_mib, name=name,
                         cache_dir=cache_dir, accel=accel, progress=progress)
        self.image = replace(placeholder, client_key=self.directory / "id_ed25519")
        self._boot_accel = "tcg"

    @property
    def seed(self) -> Path:
        return self.directory / "seed.iso"

    def _prepare_disks(self) -> None:
        """The swap disk, fresh client and host keys, the NoCloud seed and (UEFI) a writable VARS copy."""
        super()._prepare_disks()
        keys = make_keys(self.directory)
        self.image = replace(self.image, host_public_key=keys.host_public_key)
        write_seed_iso(self.seed, {
            "meta-data": meta_data(f"nodeconf-{secrets.token_hex(6)}", self.name),
            "user-data": user_data(keys, swap=self.swap_mib > 0),
        })
        if self.facts.firmware == "uefi":
            if not OVMF_CODE.is_file():
                raise VmError(f"UEFI image {self.facts.path} needs OVMF ({OVMF_CODE}); "
                              "run: bash nodeconf/infra/install-host.sh")
            shutil.copyfile(OVMF_VARS, self.directory / OVMF_VARS.name)

    def _qemu_argv(self, accel: str) -> list[str]:
        self._boot_accel = accel
        return disk_qemu_argv(self.facts, accel=accel, memory_mib=self.memory_mib, cpus=self.cpus,
                              directory=self.directory, console_log=self.console_log, seed=self.seed,
                              swap_disk=self.directory / "swap.img" if self.swap_mib else None,
                              ssh_port=self.ssh_port)

    def _wait_ready(self, timeout: float) -> None:
        """Wait for cloud-init's first console line, then for an SSH login with the pinned host key.

        One line and the console tail when qemu exits (the firmware found nothing to boot), the console stops at
        a prompt (GRUB, initramfs, UEFI shell, kernel panic), cloud-init never runs, or SSH never answers.
        """
        limits = BOOT_LIMITS[self._boot_accel]
        cloud_init_seen = False
        while True:
            console = self.console_log.read_bytes()
            elapsed = time.monotonic() - self._started
            if self._proc is not None and self._proc.poll() is not None:
                raise VmError(f"VM {self.name}: qemu exited (status {self._proc.returncode}) before the guest came "
                              f"up, {self._firmware_hint()}; console: {self._console_tail()}")
            stopped_at = dead_end(console)
            if stopped_at:
                raise VmError(f"VM {self.name}: image {self.facts.path.name} did not boot (stopped at "
                              f"{stopped_at!r}); console: {self._console_tail()}")
            if not cloud_init_seen:
                cloud_init_seen = CLOUD_INIT_MARKER in console
                if not cloud_init_seen and elapsed > limits.cloud_init:
                    raise VmError(f"VM {self.name}: cloud-init did not run within {limits.cloud_init:g} s (no "
                                  f"'Cloud-init v.' line on the console); console: {self._console_tail()}")
            elif self._try_login(elapsed, limits):
                self.boot_seconds = time.monotonic() - self._started
                self._say(f"VM {self.name}: SSH answered with the pinned host key after {self.boot_seconds:.1f} s")
                return
            time.sleep(0.5)

    def _try_login(self, elapsed: float, limits: BootLimits) -> bool:
        """One SSH login attempt; VmError on a wrong host key or once the SSH deadline has passed."""
        target = SshTarget("root", "127.0.0.1", self.ssh_port)
        try:
            if not ssh_banner(self.ssh_port):
                raise TransportError("no SSH banner yet")
            SshTransport.connect(target, self.image.client_key, host_key=self.image.host_public_key,
                                 timeout=SSH_ATTEMPT_SECONDS).close()
            return True
        except HostKeyError as err:
            raise VmError(f"VM {self.name}: {err}") from err
        except TransportError as err:
            if elapsed > limits.ssh:
                raise VmError(f"VM {self.name}: cloud-init ran but SSH did not answer within {limits.ssh:g} s "
                              f"({err}); console: {self._console_tail()}") from err
            return False

    def _firmware_hint(self) -> str:
        log = (self.directory / "firmware.log").read_bytes() if (self.directory / "firmware.log").exists() else b""
        if b"No bootable device" in log or b"not a bootable disk" in log:
            return "the firmware found nothing bootable on the image"
        return "the firmware or the image's boot loader stopped it"

    def _console_tail(self) -> str:
        try:
            text = console_text(self.console_log.read_bytes())
        except OSError:
            return "(no console log)"
        return console_summary([line.strip() for line in text.splitlines() if line.strip()])


def boot_image(path: Path, *, memory_mib: int = DEFAULT_MEMORY_MIB, cpus: int = DEFAULT_CPUS,
               swap_mib: int = DEFAULT_SWAP_MIB, uefi: bool | None = None, name: str | None = None,
               cache_dir: Path | None = None, progress: Callable[[str], None] | None = None) -> DiskMachine:
    """A started VM of a vendor disk image (qcow2 or raw; BIOS or UEFI detected unless `uefi` says); VmError or
    DiskImageError (one line) otherwise. The caller stops it (or uses it as a context manager)."""
    facts = inspect_image(Path(path), uefi)
    machine = DiskMachine(facts, memory_mib=memory_mib, cpus=cpus, swap_mib=swap_mib, name=name,
                          cache_dir=cache_dir, progress=progress)
    say = progress or (lambda _message: None)
    say(f"VM {machine.name}: {facts.format} image {facts.path} ({facts.firmware})")
    machine.start()
    return machine


def image_identity(path: Path) -> str:
    """A vendor image as the reports name it: its file name and the sha256 of its bytes (read once, in chunks;
    about a second per GiB), which identifies it wherever it is stored."""
    digest = hashlib.sha256()
    with path.open("rb") as image:
        while chunk := image.read(1 << 20):
            digest.update(chunk)
    return f"{path.name}, sha256 {digest.hexdigest()}"


def open_image_node(path: Path, *, memory_mib: int = DEFAULT_MEMORY_MIB, cpus: int = DEFAULT_CPUS,
                    swap_mib: int = DEFAULT_SWAP_MIB, uefi: bool | None = None,
                    settings: EnforcerSettings | None = None, spec: str = "",
                    progress: Callable[[str], None] | None = None) -> EnforcedNode:
    """`vm?image=PATH`: boot the image and return an enforced node over its SSH; close() also stops the VM."""
    from nodeconf.nodes.enforced.node import EnforcedNode, EnforcerSettings

    machine = boot_image(path, memory_mib=memory_mib, cpus=cpus, swap_mib=swap_mib, uefi=uefi, progress=progress)
    try:
        node = EnforcedNode(machine.ssh(), slow_node_settings(settings or EnforcerSettings(), machine.accel),
                            spec=spec or f"vm?image={path}",
                            after_close=(machine.stop,), describe_host=machine.console_report,
                            image=image_identity(path))
        return node.start()
    except BaseException:
        machine.stop()
        raise
