"""The qemu command line and guest kernel command line of the reference VM (source: MEASURED.md boot facts)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from nodeconf.infra.vm.recipe import GUEST_INIT_PATH

GUEST_SSH_PORT = 22
SYSTEMD_PATH = "/lib/systemd/systemd"
KERNEL_ARGS = (
    "console=ttyS0", "root=/dev/vda", "rw", "init={init}", "panic=-1", "quiet", "loglevel=4",
    "cgroup_no_v1=all", "psi=1", "random.trust_cpu=on", "tsc=reliable", "no_timer_check",
    # Boot-time savings under TCG (≈0.9 s measured with initcall_debug): no crypto self-tests, no IPv6.
    "cryptomgr.notests", "initcall_blacklist=crypto_kdf108_init", "ipv6.disable=1",
)
# The huge page pool of every VM nodeconf builds: 8 pages of 2 MiB (16 MiB of the VM's memory), reserved at boot
# while memory is still unfragmented (kernel Documentation/admin-guide/mm/hugetlbpage.rst, hugepagesz=/hugepages=).
# The kubelet reports them as capacity hugepages-2Mi and takes them out of allocatable memory; the hugepages suite
# runs pods on them. Nodes nodeconf did not build keep their own settings: nothing else writes nr_hugepages.
HUGEPAGE_ARGS = ("hugepagesz=2M", "hugepages=8")
# systemd as PID 1: the unified (cgroup v2 only) hierarchy, said explicitly (systemd < 256 also knows hybrid).
SYSTEMD_ARGS = ("systemd.unified_cgroup_hierarchy=1",)
# The guest CPU under TCG: every feature TCG emulates but the fast-string ones (ERMS, FSRM). Without them the guest
# kernel clears pages with `rep stosq` instead of `rep stosb`, which TCG runs far slower: touching 200 MiB took 1.1 s
# against 2.6-2.8 s and an exec 4-26 % less (benchmarks/guest_cpu_bench.py). Whole default runs, profiled in
# alternating pairs (2026-12-07): the behaviour checks' waits on their workloads 30.6 / 30.9 s against
# 39.3 / 39.9 s with the full `max` (the agent's own time within the runs' noise), wall 176 / 179 s against
# 185 / 202 s; earlier unprofiled pairs had not shown it through the host's noise
# (benchmarks/results/suites-time-breakdown.md).
TCG_CPU = "max,-erms,-fsrm"
CONFIG_LSM = re.compile(r'^CONFIG_LSM="([^"]*)"$', re.MULTILINE)


def kernel_cmdline(extra: tuple[str, ...] = (), init: str = "minimal") -> str:
    """The guest kernel command line: cgroup v2 only, PSI on, serial console, the huge page pool, PID 1 of the
    given init."""
    path, init_args = (SYSTEMD_PATH, SYSTEMD_ARGS) if init == "systemd" else (GUEST_INIT_PATH, ())
    return " ".join((*(arg.format(init=path) for arg in KERNEL_ARGS), *HUGEPAGE_ARGS, *init_args, *extra))


def with_hugepage_pool(cmdline: str) -> str:
    """A command line stored with an image built before the pool existed, with HUGEPAGE_ARGS added (none twice)."""
    words = cmdline.split()
    if any(word.startswith(("hugepages=", "hugepagesz=")) for word in words):
        return cmdline
    return " ".join((*words, *HUGEPAGE_ARGS))


def lsm_without_bpf(kernel_config: str) -> tuple[str, ...]:
    """`lsm=` with the kernel's own LSM order minus bpf, or nothing when bpf is not in it (init=systemd only).

    With the BPF LSM active, systemd loads its RestrictFileSystems= program at every start (≈0.8 s under TCG);
    nothing on the node uses it. Source: kernel-parameters.txt `lsm=`, security/Kconfig CONFIG_LSM, systemd
    src/core/bpf-restrict-fs.c (supported only when "bpf" is in /sys/kernel/security/lsm).
    """
    found = CONFIG_LSM.search(kernel_config)
    names = found.group(1).split(",") if found else []
    return (f"lsm={','.join(n for n in names if n != 'bpf')}",) if "bpf" in names else ()


@dataclass(frozen=True)
class QemuSpec:
    """Everything one qemu process needs: accelerator, size, boot files, disks, console log, SSH port."""

    accel: str
    memory_mib: int
    cpus: int
    kernel: Path
    initrd: Path
    root_disk: Path
    swap_disk: Path | None
    console_log: Path
    ssh_port: int
    cmdline: str
    binary: str = "qemu-system-x86_64"


def option_value(path: Path) -> str:
    """A path inside a qemu comma-separated option (commas doubled)."""
    return str(path).replace(",", ",,")


def machine_argv(binary: str, accel: str, memory_mib: int, cpus: int, console_log: Path, *,
                 tcg_thread: str = "multi") -> list[str]:
    """The qemu binary, accelerator, q35 machine and size, no default devices, serial console to a file.

    Under TCG each vCPU gets its own host thread (`thread=multi`) unless `tcg_thread="single"` runs them all in one,
    and the CPU is TCG_CPU.
    """
    if accel == "kvm":
        accel_args = ["-accel", "kvm", "-cpu", "host"]
    elif accel == "tcg":
        accel_args = ["-accel", f"tcg,thread={tcg_thread}", "-cpu", TCG_CPU]
    else:
        raise ValueError(f"accelerator must be 'kvm' or 'tcg', not {accel!r}")
    return [
        binary, *accel_args, "-M", "q35", "-m", str(memory_mib), "-smp", str(cpus),
        "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
        "-serial", f"file:{option_value(console_log)}",
    ]


def swap_and_network_argv(swap_disk: Path | None, ssh_port: int) -> list[str]:
    """The swap disk, user networking restricted to one loopback SSH forward, and an entropy source."""
    argv = []
    if swap_disk is not None:
        argv += ["-drive", f"file={option_value(swap_disk)},format=raw,if=virtio,cache=unsafe"]
    return [
        *argv,
        "-nic", f"user,model=virtio-net-pci,restrict=on,hostfwd=tcp:127.0.0.1:{ssh_port}-:{GUEST_SSH_PORT}",
        "-device", "virtio-rng-pci",
    ]


def qemu_argv(spec: QemuSpec) -> list[str]:
    """The qemu argv: root disk opened snapshot=on, user networking restricted to one loopback SSH forward."""
    return [
        *machine_argv(spec.binary, spec.accel, spec.memory_mib, spec.cpus, spec.console_log),
        "-kernel", str(spec.kernel), "-initrd", str(spec.initrd), "-append", spec.cmdline,
        "-drive", f"file={option_value(spec.root_disk)},format=raw,if=virtio,snapshot=on",
        *swap_and_network_argv(spec.swap_disk, spec.ssh_port),
    ]
