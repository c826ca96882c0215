"""A vendor-like disk image (trixie, BIOS, with Debian's containerd, built here the way cloud images are) booted
through its firmware, GRUB, kernel, initramfs, systemd and cloud-init, then judged by the enforcer through the
image's own containerd, found on the node with no option given; a broken image ends in one line with its console tail
and leaves nothing running. Expectations come from the archive the image is built from (trixie ships kernel 6.12,
containerd 1.7.24 and runc 1.1.15, whose shares→weight formula is the linear one), never from the node.

Cost (2026-12-03, 2 cores, no KVM, load average ≈ 12 from three other TCG VMs): module setup 643 s (boot to
cloud-init's final stage ≈ 7 min, then the agent's start through containerd: two image imports and a probe
sandbox), res-demo through containerd 81 s, the whole module 750 s; the image's first build 710 s. What containerd
adds, measured on one boot of this image at load ≈ 8 (runtime=direct, then no option): the agent's start 38 → 94 s,
res-demo 7 → 29 s, the close 4 → 8 s, ≈ 83 s in all.

Source: issue 14 items 3–5; issue 28 item 5; res-demo from the requests-limits-qos article ("Hands-on");
RUNTIME-FACTS §1 (containerd's cgroupsPath: `cri-containerd-<id>.scope` in a `.slice` parent).
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodeconf.enforcer.daemons import CONTAINERD_SOCKET
from nodeconf.infra.vendor_image.build import ensure_vendor_image
from nodeconf.infra.vendor_image.recipe import VendorRecipe, with_containerd
from nodeconf.infra.vm.disk_image import boot_image, open_image_node
from nodeconf.infra.vm.machine import VmError
from nodeconf.infra.vm.state import vm_directory
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.loader import load_objects
from nodeconf.manifest import Pod
from nodeconf.nodes.enforced.node import EnforcedNode
from nodeconf.nodes.enforced.opener import enforcer_settings
from nodeconf.nodes.spec import parse_node_spec
from nodeconf.semantics.expect import expect
from nodeconf.semantics.profile import profile_for
from suites.toolkit.compare import assert_matches, compare_pod

pytestmark = pytest.mark.vm

RES_DEMO = Path(__file__).resolve().parents[2] / "workloads" / "requests-limits" / "res-demo.yaml"
SUITE = "trixie"
SCOPE = re.compile(r"/cri-containerd-[0-9a-f]{64}\.scope$")


@pytest.fixture(scope="module")
def vendor_disk() -> Path:
    """The trixie BIOS image with containerd (`--containerd`), built once and cached by recipe and package
    versions."""
    return ensure_vendor_image(with_containerd(VendorRecipe(suite=SUITE))).disk


@pytest.fixture(scope="module")
def node(vendor_disk: Path) -> Iterator[EnforcedNode]:
    """`vm?image=DISK` with no runtime= option: the driver probes the node and chooses its runtime."""
    before = vendor_disk.stat()
    settings = dataclasses.replace(enforcer_settings(parse_node_spec(f"vm?image={vendor_disk}")), backoff=2.0)
    enforced = open_image_node(vendor_disk, memory_mib=2048, swap_mib=512, settings=settings)
    try:
        yield enforced
    finally:
        enforced.close()
    after = vendor_disk.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns), "the vendor image was written"


def test_the_node_is_the_image_own_kernel_with_cgroup2_and_swap(node: EnforcedNode) -> None:
    """The facts come from the image's distribution kernel (trixie ships 6.12), not the reference kernel."""
    facts = node.facts()
    assert facts.kernel_version.startswith("6.12."), facts.kernel_version
    assert facts.swap_capacity > 0, "the attached swap disk was not turned on by cloud-init's bootcmd"


def test_the_images_own_containerd_starts_the_containers(node: EnforcedNode) -> None:
    facts = node.facts()
    assert (facts.runtime, facts.runtime_not_used) == ("containerd", "")
    assert facts.runtime_version.startswith("1.7.24"), facts.runtime_version
    config = dict(facts.runtime_config)
    assert config["SystemdCgroup"] == "True", config  # the kubeadm line the image's config gained
    assert config["oci_runtime_version"].startswith("1.1.15"), config
    assert facts.measured_cpu_weight_formula == "linear"  # runc 1.1.15, measured on containerd's probe container
    # The process serving containerd's socket, and no kubelet: Debian's containerd.service sets OOMScoreAdjust=-999.
    assert (facts.runtime_daemon_oom_score_adj, facts.kubelet_oom_score_adj) == (((CONTAINERD_SOCKET, -999),), ())


def test_res_demo_reads_back_equal_to_the_oracle_in_containerds_scope(node: EnforcedNode) -> None:
    """The run accepts the linear shares→weight formula of trixie's runc 1.1.15 (as `--cpu-weight-formula linear`
    does): every other value is the oracle's."""
    (pod,) = load_objects([RES_DEMO])
    assert isinstance(pod, Pod)
    handle = node.run(pod)
    try:
        assert handle.admitted, handle.errors
        handle.wait_running()
        accepted = dataclasses.replace(node.facts(), cpu_weight_formula="linear")
        expected = expect([pod], accepted, KubeletConfig(), profile_for("1.38")).pod("res-demo")
        evidence = handle.evidence()
        assert SCOPE.search(evidence.containers["hello"].cgroup.path), evidence.containers["hello"].cgroup.path
        assert_matches("pod res-demo on the vendor image", compare_pod(expected, evidence))
    finally:
        handle.delete()


def qemu_processes_naming(directory: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(directory).encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_a_broken_image_ends_in_one_line_with_its_console_and_leaves_nothing(vendor_disk: Path,
                                                                             tmp_path: Path) -> None:
    """The vendor image with its first MiB (MBR, GPT, GRUB's core) zeroed in an overlay: nothing to boot."""
    broken = tmp_path / "broken.qcow2"
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-b", str(vendor_disk), "-F", "qcow2", str(broken)],
                   check=True)
    subprocess.run(["qemu-io", "-c", "write -z 0 1M", str(broken)], check=True, capture_output=True)
    name = f"vendor-broken-{os.getpid()}"
    started = time.monotonic()
    with pytest.raises(VmError) as err:
        boot_image(broken, memory_mib=512, swap_mib=0, uefi=False, name=name)
    message = str(err.value)
    assert "\n" not in message and "console: " in message, message
    assert "the firmware found nothing bootable on the image" in message, message
    assert time.monotonic() - started < 60
    assert not vm_directory(name).exists()
    assert qemu_processes_naming(vm_directory(name)) == []
