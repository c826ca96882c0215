"""`vm?memory=SIZE&swap=SIZE&cpus=N&debian=&init=&runtime=&image=PATH&uefi=0|1`: the reference VM (or a vendor
image) booted for the run and run by the enforcer; its record: options, preflight, opening, cleanup.

Source: issue 27 item 2 (a record per node kind); issue 13 (the node's layers); issue 14 (vendor images).
"""

from __future__ import annotations

import os
from pathlib import Path

from nodeconf.errors import InputError, NodeSpecError
from nodeconf.infra.vm.sizes import MIN_VM_MEMORY_MIB, size_expected, size_mib
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.node_variant import VARIANT_OPTIONS, Variant, parse_variant
from nodeconf.nodes.base import Node
from nodeconf.nodes.enforced.node_kinds import ENFORCER_OPTIONS, RUNTIME_OPTION, EnforcedKind
from nodeconf.nodes.spec import NodeSpec, VmSize, whole_number, zero_or_one
from nodeconf.nodes.ssh_login import readable_file

VM_OPTIONS = ("memory", "swap", "cpus", *VARIANT_OPTIONS, "image", "uefi")


class VmKind(EnforcedKind):
    """A VM of the run's own, from the VM cache."""

    scheme, usage = "vm", "vm"
    options = (*VM_OPTIONS, *ENFORCER_OPTIONS)

    def parse(self, target: str | None, options: tuple[tuple[str, str], ...], shown: str) -> NodeSpec:
        return NodeSpec(self.scheme, options, vm=vm_size(dict(options), shown),
                        enforcer=self.enforcer_options(options, shown))

    def _own_runtime(self, single: dict[str, str], shown: str) -> str | None:
        """A vendor image's runtime= (cri|direct); a reference VM's runtime= names its variant (vm_size)."""
        return super()._own_runtime(single, shown) if "image" in single else None

    def preflight(self, spec: NodeSpec, *, kubelet_config: KubeletConfig | None, profile: str | None) -> None:
        """A vendor image that is not qcow2 or raw, or is corrupt, is refused before anything boots (one line)."""
        if spec.vm.image is not None:
            from nodeconf.infra.vm.disk_probe import DiskImageError, inspect_image

            try:
                inspect_image(spec.vm.image, spec.vm.uefi)
            except DiskImageError as err:
                raise InputError(str(err), field="--node") from None

    def open(self, spec: NodeSpec, *, kubelet_config: KubeletConfig | None, profile: str | None) -> Node:
        from nodeconf.infra.vm.opener import open_vm_node

        return open_vm_node(spec)

    def clean(self, spec: NodeSpec, dry_run: bool) -> list[str]:
        """Nothing of its own: a run's VMs are the cache's, which `nodeconf clean` cleans first."""
        return [f"{spec.display}: its VMs are the cache's, cleaned above (a `nodeconf node up` VM: nodeconf node down)"]


VM = VmKind()


def vm_size(options: dict[str, str], shown: str) -> VmSize:
    """memory ≥ 256 MiB (the smallest the reference VM boots with), swap ≥ 0 MiB (both quantities, a bare number
    MiB), 1 ≤ cpus ≤ this host's cpus (more vCPUs than host cpus would skew the CPU throttling checks)."""
    host_cpus = os.cpu_count() or 1
    return VmSize(
        memory_mib=_mebibytes(options, "memory", MIN_VM_MEMORY_MIB, shown),
        swap_mib=_mebibytes(options, "swap", 0, shown),
        cpus=whole_number(options, "cpus", 1, host_cpus, f" (this host has {host_cpus})", shown),
        variant=_variant(options, shown),
        image=_image(options, shown),
        uefi=None if "uefi" not in options else zero_or_one(options, "uefi", shown),
    )


def _mebibytes(options: dict[str, str], name: str, low: int, shown: str) -> int | None:
    value = options.get(name)
    if value is None:
        return None
    size = size_mib(value, low)
    if size is None:
        raise NodeSpecError(f"node spec {shown!r}: {size_expected(name, low)}, got {value!r}")
    return size


def _image(options: dict[str, str], shown: str) -> Path | None:
    """image=PATH: a readable file here (its format is probed before the run); not with a variant's layers."""
    if "image" not in options:
        if "uefi" in options:
            raise NodeSpecError(f"node spec {shown!r}: uefi= goes with image=PATH")
        return None
    layers = sorted(set(options) & set(VARIANT_OPTIONS) - {RUNTIME_OPTION})
    if layers:
        raise NodeSpecError(f"node spec {shown!r}: image= brings its own layers; {layers[0]}= cannot go with it")
    return readable_file("image", options["image"], shown)


def _variant(options: dict[str, str], shown: str) -> Variant:
    """debian=, init=, runtime=: the reference node's layers (issue 13), checked before anything is built; a vendor
    image brings its own (its runtime= chooses whether its own runtime is used)."""
    if "image" in options:
        return Variant()
    try:
        return parse_variant(options)
    except ValueError as err:
        raise NodeSpecError(f"node spec {shown!r}: {err}") from None
