"""KVM only when it really works: PVM /dev/kvm boots no stock kernel, so TCG (MEASURED.md: the machine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeconf.infra.vm.accel import (
    HostKvmFacts,
    choose_accel,
    parse_cpu_flags,
    parse_modules,
    read_host_kvm_facts,
    slow_node_settings,
)
from nodeconf.nodes.enforced.node import EnforcedNode, EnforcerSettings
from nodeconf.nodes.transport.local import LocalTransport

INTEL = frozenset({"kvm", "kvm_intel"})
VMX = frozenset({"fpu", "vmx", "sse4_2"})


@pytest.mark.parametrize(
    ("facts", "forced", "accel", "reason_part"),
    [
        pytest.param(HostKvmFacts(True, INTEL, VMX), None, "kvm", "hardware", id="intel-vmx"),
        pytest.param(HostKvmFacts(True, frozenset({"kvm", "kvm_amd"}), frozenset({"svm"})), None, "kvm",
                     "hardware", id="amd-svm"),
        pytest.param(HostKvmFacts(True, frozenset({"kvm", "kvm_pvm"}), frozenset({"fpu"})), None, "tcg",
                     "kvm_pvm", id="pvm-this-machine"),
        pytest.param(HostKvmFacts(True, frozenset({"kvm"}), VMX), None, "tcg", "neither", id="no-vendor-module"),
        pytest.param(HostKvmFacts(True, INTEL, frozenset({"fpu"})), None, "tcg", "vmx/svm", id="no-cpu-flag"),
        pytest.param(HostKvmFacts(False, INTEL, VMX), None, "tcg", "no usable", id="no-device"),
        pytest.param(HostKvmFacts(False, frozenset(), frozenset()), "kvm", "kvm", "forced", id="forced-kvm"),
        pytest.param(HostKvmFacts(True, INTEL, VMX), "tcg", "tcg", "forced", id="forced-tcg"),
    ],
)
def test_choose_accel(facts: HostKvmFacts, forced: str | None, accel: str, reason_part: str) -> None:
    choice = choose_accel(facts, forced)
    assert choice.name == accel
    assert reason_part in choice.reason


def test_forcing_an_unknown_accelerator_is_an_error() -> None:
    with pytest.raises(ValueError, match="NODECONF_ACCEL"):
        choose_accel(HostKvmFacts(True, INTEL, VMX), "hax")


def test_parse_modules() -> None:
    text = "kvm_pvm 1200128 0 - Live 0x0\nkvm 1146880 1 kvm_pvm, Live 0x0\n\n"
    assert parse_modules(text) == {"kvm_pvm", "kvm"}


def test_parse_cpu_flags_of_the_first_processor() -> None:
    text = "processor\t: 0\nflags\t\t: fpu vme hypervisor\n\nprocessor\t: 1\nflags\t\t: fpu vmx\n"
    assert parse_cpu_flags(text) == {"fpu", "vme", "hypervisor"}


def test_read_host_kvm_facts_from_files(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "modules").write_text("kvm_intel 1 0 - Live 0x0\n")
    (proc / "cpuinfo").write_text("flags\t: vmx\n")
    sys_module = tmp_path / "module"
    (sys_module / "kvm").mkdir(parents=True)
    device = tmp_path / "kvm"
    device.write_text("")
    facts = read_host_kvm_facts(proc, device, sys_module)
    assert facts == HostKvmFacts(True, frozenset({"kvm_intel", "kvm"}), frozenset({"vmx"}))
    assert choose_accel(facts).name == "kvm"


def test_read_host_kvm_facts_without_device(tmp_path: Path) -> None:
    facts = read_host_kvm_facts(tmp_path, tmp_path / "absent", tmp_path / "absent-module")
    assert facts == HostKvmFacts(False, frozenset(), frozenset())


@pytest.mark.parametrize(("accel", "flag"), [("tcg", "--runtime-request-timeout=10m0s"), ("kvm", "")])
def test_a_tcg_vms_kubelet_runs_with_a_longer_runtime_request_timeout(accel: str, flag: str) -> None:
    """Under TCG the VM's kubelet flag raises runtimeRequestTimeout to 10m0s (a 10m-CPU container's StartContainer
    outlasted the 2m0s default there); under KVM the kubelet's default stays."""
    settings = slow_node_settings(EnforcerSettings(backoff=3.0), accel)
    assert settings.backoff == 3.0
    assert EnforcedNode(LocalTransport(), settings).kubelet_flags == flag
