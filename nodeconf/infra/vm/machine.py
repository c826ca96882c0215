"""Boot the reference image in qemu, wait for the readiness line, log in, and always tear it down."""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import itertools
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType, TracebackType

from infra.vm.accel import AccelChoice, detect_accel
from infra.vm.cache_files import open_for_writing, remove_vm_directory, write_atomically
from infra.vm.image import VmImage
from infra.vm.paths import failed_boots_dir
from infra.vm.qemu import QemuSpec, qemu_argv
from infra.vm.state import VmState, process_start, prune_stale, terminate_pid, validate_name, vm_directory
from nodeconf.errors import InfrastructureError
from nodeconf.nodes.spec import MIN_VM_MEMORY_MIB
from nodeconf.nodes.ssh_login import SshTarget
from nodeconf.nodes.transport.base import TransportError
from nodeconf.nodes.transport.ssh import HostKeyError, SshTransport

DEFAULT_MEMORY_MIB = 2048
DEFAULT_SWAP_MIB = 1024
DEFAULT_CPUS = 2
BOOT_TIMEOUT = {"tcg": 180.0, "kvm": 30.0}
SSH_LOGIN_TIMEOUT = 30.0
PORT_ATTEMPTS = 3
# Console lines that name a kernel fault; the first ones are shown before the tail, which may only say "panic".
FAULT_MARKS = ("Oops", "BUG:", "general protection fault", "RIP:", "self-detected stall", "blocked for more than")
PR_SET_PDEATHSIG = 1

_names = itertools.count(1)
_live: set[VirtualMachine] = set()
_live_lock = threading.Lock()


class VmError(InfrastructureError):
    """The VM could not be started or reached; the message is one line, with the console tail when useful."""


def free_loopback_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now (qemu may still lose a race for it: we retry)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _die_with_parent() -> None:
    """In the qemu child: get SIGKILL when the Python process that started it dies (no orphaned qemu)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class VirtualMachine:
    """One qemu VM of the reference image; a context manager that stops it on exit, error or signal.

    Unless persistent, qemu also dies with the thread that started it (PR_SET_PDEATHSIG), so even a SIGKILL
    of this process leaves no qemu behind: start it from a thread that outlives the VM (normally the main one).
    """

    def __init__(self, image: VmImage, *, memory_mib: int = DEFAULT_MEMORY_MIB, cpus: int = DEFAULT_CPUS,
                 swap_mib: int = DEFAULT_SWAP_MIB, name: str | None = None, cache_dir: Path | None = None,
                 accel: AccelChoice | None = None, progress: Callable[[str], None] | None = None,
                 persistent: bool = False) -> None:
        if memory_mib < MIN_VM_MEMORY_MIB or cpus < 1 or swap_mib < 0:
            raise ValueError(f"VM needs memory_mib >= {MIN_VM_MEMORY_MIB}, cpus >= 1 and swap_mib >= 0")
        self.image = image
        self.memory_mib = memory_mib
        self.cpus = cpus
        self.swap_mib = swap_mib
        self.name = validate_name(name or f"vm-{os.getpid()}-{next(_names)}")
        self.directory = vm_directory(self.name, cache_dir)
        self._cache_dir = cache_dir
        self._accel_choice = accel
        self._say = progress or (lambda _message: None)
        self._persistent = persistent
        self._detached = False
        self._claimed = False
        self._proc: subprocess.Popen[bytes] | None = None
        self.ssh_port = 0
        self.boot_seconds = 0.0
        self._started = 0.0

    @property
    def accel(self) -> str:
        """'kvm' or 'tcg': the accelerator this VM runs (or will run) with."""
        if self._accel_choice is None:
            self._accel_choice = detect_accel()
        return self._accel_choice.name

    @property
    def console_log(self) -> Path:
        """The guest's serial console, as written by qemu."""
        return self.directory / "console.log"

    @property
    def pid(self) -> int | None:
        """The qemu process id while it runs."""
        return self._proc.pid if self._proc is not None else None

    @property
    def qemu_exited(self) -> bool:
        """True when qemu booted and has exited without stop() (a failed boot attempt does not count)."""
        return self._proc is not None and self.boot_seconds > 0 and self._proc.poll() is not None

    def start(self) -> VirtualMachine:
        """Boot qemu and return once the guest has printed its readiness line; VmError otherwise."""
        if self._proc is not None:
            raise VmError(f"VM {self.name} is already started")
        self._claim_directory()
        _register(self)
        try:
            self._prepare_disks()
            choice = self._accel_choice or detect_accel()
            self._say(f"VM {self.name}: accelerator {choice.name} ({choice.reason})")
            try:
                self._boot(choice.name)
            except VmError:
                if choice.name != "kvm":
                    raise
                self._say(f"VM {self.name}: KVM missed its boot deadline; falling back to TCG")
                choice = AccelChoice("tcg", "KVM probe missed its deadline")
                self._boot(choice.name)
            self._accel_choice = choice
            VmState(self.name, self.pid or 0, self.ssh_port, str(self.directory), choice.name,
                    str(self.image.client_key), self.image.host_public_key, self.memory_mib, self.cpus,
                    self.swap_mib, os.getpid(), process_start(os.getpid()), self._persistent).write()
        except BaseException:
            self.stop()
            raise
        return self

    def ssh(self, timeout: float = SSH_LOGIN_TIMEOUT) -> SshTransport:
        """A logged-in SSH transport to the guest, its host key pinned to the image's key."""
        if self._proc is None:
            raise VmError(f"VM {self.name} is not running")
        target = SshTarget("root", "127.0.0.1", self.ssh_port)
        deadline = time.monotonic() + timeout
        while True:
            try:
                return SshTransport.connect(target, self.image.client_key, host_key=self.image.host_public_key,
                                            timeout=min(10.0, max(1.0, deadline - time.monotonic())))
            except HostKeyError as err:
                raise VmError(f"VM {self.name}: {err}") from err
            except TransportError as err:
                if time.monotonic() >= deadline:
                    raise VmError(f"VM {self.name}: {err}; console: {self._console_tail()}") from err
                self._check_alive()
                time.sleep(0.2)

    def stop(self) -> None:
        """Stop qemu (SIGTERM, then SIGKILL) and remove the VM directory; safe to call more than once."""
        if self._detached:
            return
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._claimed:
            problem = remove_vm_directory(self.directory, self._cache_dir)
            if problem:
                self._say(f"VM {self.name}: directory not removed: {problem}")
            self._claimed = False
        _unregister(self)

    def detach(self) -> VmState:
        """Leave the VM running after this process exits (for `nodeconf node up`); return its record."""
        if self._proc is None:
            raise VmError(f"VM {self.name} is not running")
        state = VmState.read(self.directory)
        self._proc = None
        self._detached = True
        _unregister(self)
        return state

    def __enter__(self) -> VirtualMachine:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def _claim_directory(self) -> None:
        """Create the VM directory (0700: it holds keys), pruning stale records; refuse when a VM of this name is
        still running, or when its place in the cache is taken by a link or anything else nodeconf may not remove."""
        for name in prune_stale(self._cache_dir):
            self._say(f"removed the record of VM {name}: its qemu is gone")
        with contextlib.suppress(ValueError):
            previous = VmState.read(self.directory)
            if previous.is_running():
                raise VmError(f"VM {self.name} is already running (pid {previous.pid}); "
                              f"stop it with: nodeconf node down {self.name}")
        problem = remove_vm_directory(self.directory, self._cache_dir)
        if problem:
            raise VmError(f"VM {self.name}: {problem}; not removed")
        self.directory.parent.mkdir(parents=True, exist_ok=True)
        self.directory.mkdir(mode=0o700)
        self._claimed = True

    def _prepare_disks(self) -> None:
        """Make what this VM boots with besides the image: its swap disk (a disk-image VM adds its seed)."""
        self._make_swap_disk()

    def _make_swap_disk(self) -> None:
        """A sparse swap disk for this VM only (swapon refuses a sparse swap file inside the guest)."""
        if not self.swap_mib:
            return
        swap = self.directory / "swap.img"
        with os.fdopen(open_for_writing(swap), "wb") as handle:
            handle.truncate(self.swap_mib * 1024 * 1024)
        proc = subprocess.run(["mkswap", "-L", "nodeconf-swap", str(swap)], capture_output=True, check=False)
        if proc.returncode != 0:
            raise VmError(f"mkswap failed: {proc.stderr.decode(errors='replace').strip()}")

    def _boot(self, accel: str) -> None:
        """Start qemu on a free port and wait for the readiness line.

        Retried when the port was taken meanwhile, and once when qemu itself died during boot (seen once under
        TCG here); a guest that stays silent until the deadline is not retried. A boot that fails keeps its whole
        console outside the VM directory (named in the error).
        """
        crashes = 0
        for attempt in range(1, PORT_ATTEMPTS + 1):
            self.ssh_port = free_loopback_port()
            self._spawn(accel)
            try:
                self._wait_ready(BOOT_TIMEOUT[accel])
                return
            except VmError as err:
                forward_lost = "host forwarding" in self._qemu_stderr()
                crashed = not forward_lost and self._proc is not None and self._proc.poll() is not None
                crashes += crashed
                self._kill_qemu()
                if not (forward_lost or (crashed and crashes == 1)) or attempt == PORT_ATTEMPTS:
                    raise VmError(f"{err} (whole console: {self._keep_console()})") from err
                self._say(f"VM {self.name}: boot attempt {attempt} failed ({err}); trying again")

    def _qemu_argv(self, accel: str) -> list[str]:
        """The qemu command line: the image's kernel and root disk (a disk-image VM boots its firmware)."""
        return qemu_argv(QemuSpec(
            accel=accel, memory_mib=self.memory_mib, cpus=self.cpus, kernel=self.image.kernel,
            initrd=self.image.initrd, root_disk=self.image.root_disk,
            swap_disk=self.directory / "swap.img" if self.swap_mib else None,
            console_log=self.console_log, ssh_port=self.ssh_port, cmdline=self.image.cmdline,
        ))

    def _spawn(self, accel: str) -> None:
        argv = self._qemu_argv(accel)
        write_atomically(self.console_log, b"")
        self._say(f"VM {self.name}: booting ({self.memory_mib} MiB, {self.cpus} cpus, swap {self.swap_mib} MiB,"
                  f" ssh 127.0.0.1:{self.ssh_port})")
        with os.fdopen(open_for_writing(self.directory / "qemu.log"), "wb") as qemu_log:
            self._proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=qemu_log, stderr=qemu_log,
                start_new_session=True, preexec_fn=None if self._persistent else _die_with_parent,
            )
        self._started = time.monotonic()

    def _wait_ready(self, timeout: float) -> None:
        """Poll the console log for the readiness line; VmError if qemu exits or the deadline passes."""
        deadline = self._started + timeout
        marker = self.image.ready_marker.encode()
        while time.monotonic() < deadline:
            if marker in self.console_log.read_bytes():
                self.boot_seconds = time.monotonic() - self._started
                self._say(f"VM {self.name}: guest ready in {self.boot_seconds:.1f} s")
                return
            self._check_alive()
            time.sleep(0.05)
        raise VmError(f"VM {self.name}: no readiness line within {timeout:g} s; console: {self._console_tail()}")

    def _keep_console(self) -> str:
        """Copy the console log out of the VM directory, which stop() removes: its path, or why not."""
        kept = failed_boots_dir(self._cache_dir) / f"{self.name}-{time.strftime('%Y%m%dT%H%M%S')}.console.log"
        try:
            kept.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(kept, self.console_log.read_bytes())
        except OSError as err:
            return f"not kept: {err.strerror}"
        return str(kept)

    def _check_alive(self) -> None:
        if self._proc is not None and self._proc.poll() is not None:
            raise VmError(f"VM {self.name}: qemu exited with status {self._proc.returncode}: "
                          f"{self._qemu_stderr() or self._console_tail()}")

    def exit_summary(self) -> str:
        """How qemu ended: its exit status, and its stderr or the console's last lines."""
        status = self._proc.returncode if self._proc is not None else None
        return f"qemu exit status {status}; {self._qemu_stderr() or 'console: ' + self._console_tail()}"

    def _kill_qemu(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            terminate_pid(proc.pid, self.directory)
            proc.wait()

    def _qemu_stderr(self) -> str:
        try:
            return " ".join((self.directory / "qemu.log").read_text(errors="replace").split())[-300:]
        except OSError:
            return ""

    def console_report(self) -> str:
        """One line for a guest that stopped answering: the VM's name and its console's last lines."""
        return f"VM {self.name} console: {self._console_tail()}"

    def _console_tail(self) -> str:
        try:
            lines = self.console_log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no console log)"
        return console_summary(lines)


def console_summary(lines: list[str]) -> str:
    """One line: the console's first two kernel-fault lines (FAULT_MARKS), if any, then its last three lines."""
    if not lines:
        return "(empty)"
    tail = lines[-3:]
    faults = [line for line in lines[:-3] if any(mark in line for mark in FAULT_MARKS)][:2]
    return " | ".join([*faults, "…", *tail] if faults else tail)


def _stop_all() -> None:
    """Stop every VM this process still owns (atexit and SIGTERM)."""
    with _live_lock:
        machines = list(_live)
    for machine in machines:
        machine.stop()


def lost_machines() -> dict[str, str]:
    """The VMs this process started and has not stopped whose qemu has exited (crashed or killed), by name, each with
    its exit status and the console's last lines (a guest panic reboots, and -no-reboot makes qemu exit)."""
    with _live_lock:
        machines = list(_live)
    return {machine.name: machine.exit_summary() for machine in sorted(machines, key=lambda m: m.name)
            if machine.qemu_exited}


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    """Treat SIGTERM like Ctrl-C, so pytest and the CLI unwind (fixtures, context managers) and stop the VMs."""
    raise KeyboardInterrupt(f"signal {signum}")


def _register(machine: VirtualMachine) -> None:
    with _live_lock:
        first = not _live
        _live.add(machine)
    if first and threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)


def _unregister(machine: VirtualMachine) -> None:
    with _live_lock:
        _live.discard(machine)


atexit.register(_stop_all)
