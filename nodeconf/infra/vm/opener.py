"""Boot the reference VM — the one way `vm` nodes, `nodeconf node up` and the VM test fixtures get one — and open
a `vm` node on it, run by the enforcer.

Source: issue 12 (one VM opener beside the VM, used by the session fixture, `nodeconf node up` and the `vm`
record, node_kind.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from nodeconf.infra.vm.accel import slow_node_settings
from nodeconf.infra.vm.image import ensure_image
from nodeconf.infra.vm.machine import DEFAULT_CPUS, DEFAULT_MEMORY_MIB, DEFAULT_SWAP_MIB, VirtualMachine
from nodeconf.infra.vm.progress import StepPrinter
from nodeconf.nodes.base import Node
from nodeconf.nodes.enforced.node import EnforcedNode
from nodeconf.nodes.enforced.opener import enforcer_settings
from nodeconf.nodes.spec import NodeSpec, VmSize


def boot_vm(size: VmSize | None = None, *, name: str | None = None, cache_dir: Path | None = None,
            persistent: bool = False, progress: Callable[[str], None] | None = None) -> VirtualMachine:
    """Build the image if needed and boot one VM of the given size (defaults for what it leaves out); the caller
    stops it. ImageBuildError or VmError when that fails."""
    say = progress or StepPrinter("vm")
    size = size or VmSize()
    machine = VirtualMachine(
        ensure_image(cache_dir, progress=say, variant=size.variant),
        memory_mib=size.memory_mib or DEFAULT_MEMORY_MIB,
        swap_mib=DEFAULT_SWAP_MIB if size.swap_mib is None else size.swap_mib,
        cpus=size.cpus or DEFAULT_CPUS,
        name=name, cache_dir=cache_dir, progress=say, persistent=persistent,
    )
    return machine.start()


def open_vm_node(spec: NodeSpec) -> Node:
    """A fresh reference VM (or, with image=, the vendor image) run by the enforcer; closing the node stops it."""
    if spec.vm.image is not None:
        from nodeconf.infra.vm.disk_image import open_image_node

        size = spec.vm
        return open_image_node(
            spec.vm.image, memory_mib=size.memory_mib or DEFAULT_MEMORY_MIB, cpus=size.cpus or DEFAULT_CPUS,
            swap_mib=DEFAULT_SWAP_MIB if size.swap_mib is None else size.swap_mib, uefi=size.uefi,
            settings=enforcer_settings(spec), spec=spec.display)
    machine = boot_vm(spec.vm)
    try:
        settings = slow_node_settings(enforcer_settings(spec), machine.accel)
        node = EnforcedNode(machine.ssh(), settings, spec=spec.display, after_close=(machine.stop,),
                            describe_host=machine.console_report,
                            image=f"nodeconf's reference image {machine.image.key} (its recipe and package versions)")
        return node.start()
    except BaseException:
        machine.stop()
        raise
