"""A vendor-like disk image (trixie, BIOS, built here the way cloud images are) booted through its firmware, GRUB,
kernel, initramfs, systemd and cloud-init, then judged by the enforcer like any node; a broken image ends in one
line with its console tail and leaves nothing running.

Source: issue 14 items 3–5; res-demo from the requests-limits-qos article ("Hands-on").
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodeconf.infra.vendor_image.build import ensure_vendor_image
from nodeconf.infra.vendor_image.recipe import VendorRecipe
from nodeconf.infra.vm.disk_image import boot_image, open_image_node
from nodeconf.infra.vm.machine import VmError
from nodeconf.infra.vm.state import vm_directory
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.loader import load_objects
from nodeconf.manifest import Pod
from nodeconf.nodes.enforced.node import EnforcedNode, EnforcerSettings
from nodeconf.semantics.expect import expect
from nodeconf.semantics.profile import profile_for
from suites.toolkit.compare import assert_matches, compare_pod

pytestmark = pytest.mark.vm

RES_DEMO = Path(__file__).resolve().parents[2] / "workloads" / "requests-limits" / "res-demo.yaml"
SUITE = "trixie"


@pytest.fixture(scope="module")
def vendor_disk() -> Path:
    """The trixie BIOS image, built once and cached by recipe and package versions."""
    return ensure_vendor_image(VendorRecipe(suite=SUITE)).disk


@pytest.fixture(scope="module")
def node(vendor_disk: Path) -> Iterator[EnforcedNode]:
    before = vendor_disk.stat()
    enforced = open_image_node(vendor_disk, memory_mib=2048, swap_mib=512, settings=EnforcerSettings(backoff=2.0))
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


def test_res_demo_reads_back_equal_to_the_oracle(node: EnforcedNode) -> None:
    (pod,) = load_objects([RES_DEMO])
    assert isinstance(pod, Pod)
    handle = node.run(pod)
    try:
        assert handle.admitted, handle.errors
        handle.wait_running()
        expected = expect([pod], node.facts(), KubeletConfig(), profile_for("1.38")).pod("res-demo")
        assert_matches("pod res-demo on the vendor image", compare_pod(expected, handle.evidence()))
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
