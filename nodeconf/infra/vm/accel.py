"""Choose KVM or TCG: KVM only when it really works (source: MEASURED.md, PVM /dev/kvm boots no stock kernel)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nodeconf.nodes.enforced.node import EnforcerSettings

ACCEL_ENV = "NODECONF_ACCEL"
# The kubelet flag --runtime-request-timeout a VM's operator passes per accelerator (kubelet flags override its
# config file; default 2m0s). Under TCG (~20x slower than hardware) runc init, charged to a 10m-CPU container's
# quota, needs seconds of CPU: a containerd StartContainer outlasted 2m0s (docs/node-variants.md, trixie). minikube's
# VMs pass 15m (kubernetes/minikube pkg/minikube/cruntime containerd.go KubeletOptions). None needed under KVM.
RUNTIME_REQUEST_TIMEOUT: Mapping[str, str] = {"tcg": "10m0s"}


@dataclass(frozen=True)
class AccelChoice:
    """The accelerator qemu gets, and the one-line reason shown to the user."""

    name: str
    reason: str


@dataclass(frozen=True)
class HostKvmFacts:
    """What the host says about KVM: device access, loaded modules, CPU virtualisation flags."""

    kvm_device_usable: bool
    modules: frozenset[str]
    cpu_flags: frozenset[str]


def choose_accel(facts: HostKvmFacts, forced: str | None = None) -> AccelChoice:
    """KVM when /dev/kvm is usable, kvm_intel/kvm_amd is loaded and the CPU has vmx/svm; TCG otherwise."""
    if forced:
        if forced not in ("kvm", "tcg"):
            raise ValueError(f"{ACCEL_ENV} must be 'kvm' or 'tcg', not {forced!r}")
        return AccelChoice(forced, f"forced by {ACCEL_ENV}={forced}")
    if not facts.kvm_device_usable:
        return AccelChoice("tcg", "no usable /dev/kvm")
    if "kvm_pvm" in facts.modules:
        return AccelChoice("tcg", "/dev/kvm is paravirtual nested KVM (kvm_pvm): stock kernels do not boot")
    if not facts.modules & {"kvm_intel", "kvm_amd"}:
        return AccelChoice("tcg", "/dev/kvm present but neither kvm_intel nor kvm_amd is loaded")
    if not facts.cpu_flags & {"vmx", "svm"}:
        return AccelChoice("tcg", "/dev/kvm present but the CPU shows no vmx/svm flag")
    return AccelChoice("kvm", "hardware KVM (kvm_intel/kvm_amd with vmx/svm)")


def parse_modules(proc_modules: str) -> frozenset[str]:
    """Loaded module names from the text of /proc/modules."""
    return frozenset(line.split()[0] for line in proc_modules.splitlines() if line.strip())


def parse_cpu_flags(proc_cpuinfo: str) -> frozenset[str]:
    """The CPU flags of the first processor in the text of /proc/cpuinfo."""
    for line in proc_cpuinfo.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def read_host_kvm_facts(proc: Path = Path("/proc"), kvm_device: Path = Path("/dev/kvm"),
                        sys_module: Path = Path("/sys/module")) -> HostKvmFacts:
    """Read the KVM facts of this host (built-in modules show in /sys/module only)."""
    def text(name: str) -> str:
        try:
            return (proc / name).read_text()
        except OSError:
            return ""

    usable = kvm_device.exists() and os.access(kvm_device, os.R_OK | os.W_OK)
    try:
        builtin = frozenset(entry.name for entry in sys_module.iterdir())
    except OSError:
        builtin = frozenset()
    return HostKvmFacts(usable, parse_modules(text("modules")) | builtin, parse_cpu_flags(text("cpuinfo")))


def detect_accel(environ: Mapping[str, str] | None = None) -> AccelChoice:
    """The accelerator for this host, honouring NODECONF_ACCEL=kvm|tcg."""
    env = os.environ if environ is None else environ
    return choose_accel(read_host_kvm_facts(), env.get(ACCEL_ENV) or None)


def slow_node_settings(settings: EnforcerSettings, accel: str) -> EnforcerSettings:
    """The settings with the kubelet flag the VM's operator passes under its accelerator (RUNTIME_REQUEST_TIMEOUT)."""
    return replace(settings, runtime_request_timeout=RUNTIME_REQUEST_TIMEOUT.get(accel, ""))
