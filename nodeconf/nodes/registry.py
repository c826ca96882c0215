"""One node spec string everywhere: `vm`, `local`, `ssh://user@host[:port]?key=...`, `kube[:context]`.

Drivers are imported only when their scheme is used (testinfra's backend registry, STYLE.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from nodeconf.nodes.base import Node

if TYPE_CHECKING:
    from nodeconf.nodes.enforced import EnforcerSettings

SCHEMES = ("vm", "local", "ssh", "kube")
# Options an enforced node (vm, local, ssh) takes in the query string.
ENFORCER_OPTIONS = ("fault", "backoff", "cpu-weight-formula", "root", "dir", "python")
SSH_OPTIONS = ("key", "known_hosts", "host_key")
VM_OPTIONS = ("memory", "swap", "cpus")


class NodeSpecError(ValueError):
    """A node spec that cannot be understood; the message is one line naming the spec."""


@dataclass(frozen=True)
class NodeSpec:
    """A parsed node spec: scheme, target (`user@host:port` or a kube context) and query options."""

    text: str
    scheme: str
    target: str = ""
    options: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def option(self, name: str, default: str | None = None) -> str | None:
        values = self.options.get(name)
        return values[-1] if values else default


def parse_spec(text: str) -> NodeSpec:
    """Parse a node spec; NodeSpecError for anything else."""
    base, _, query = text.partition("?")
    allowed: tuple[str, ...]
    try:
        options = {k: tuple(v) for k, v in parse_qs(query, keep_blank_values=True, strict_parsing=bool(query)).items()}
    except ValueError:
        raise NodeSpecError(f"node spec {text!r}: unreadable options {query!r}") from None
    if base.startswith("ssh://"):
        scheme, target = "ssh", base[len("ssh://"):]
        if not target or "/" in target.rstrip("/"):
            raise NodeSpecError(f"node spec {text!r} is not ssh://user@host[:port]")
        allowed = (*SSH_OPTIONS, *ENFORCER_OPTIONS)
    elif base == "kube" or base.startswith("kube:"):
        scheme, target, allowed = "kube", base[len("kube:"):], ()
    elif base in ("vm", "local"):
        scheme, target = base, ""
        allowed = (*ENFORCER_OPTIONS, *(VM_OPTIONS if base == "vm" else ()))
    else:
        raise NodeSpecError(f"unknown node spec {text!r} (expected vm, local, ssh://user@host[:port], kube[:context])")
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise NodeSpecError(f"node spec {text!r}: unknown option {unknown[0]!r}"
                            f" (allowed: {', '.join(allowed) or 'none'})")
    spec = NodeSpec(text, scheme, target, options)
    if scheme == "vm":
        _vm_sizes(spec)
    if scheme != "kube":
        _check_faults(spec)
    return spec


def _check_faults(spec: NodeSpec) -> None:
    """NodeSpecError for a `fault=` the enforcer would refuse only after the node is up."""
    from nodeconf.enforcer.lifecycle import Faults

    try:
        Faults.parse(spec.options.get("fault", ()))
    except ValueError as err:
        raise NodeSpecError(f"node spec {spec.text!r}: {err}") from None


def enforcer_settings(spec: NodeSpec) -> EnforcerSettings:
    """The enforcer settings a spec's options give (the rest default)."""
    from nodeconf.nodes.enforced import EnforcerSettings

    backoff = spec.option("backoff", "10")
    try:
        seconds = float(backoff or "")
    except ValueError:
        raise NodeSpecError(f"node spec {spec.text!r}: backoff must be seconds, got {backoff!r}") from None
    defaults = EnforcerSettings()
    return EnforcerSettings(
        cgroup_root=spec.option("root") or defaults.cgroup_root,
        remote_dir=spec.option("dir") or defaults.remote_dir,
        python=spec.option("python") or defaults.python,
        cpu_weight_formula=spec.option("cpu-weight-formula") or defaults.cpu_weight_formula,
        faults=spec.options.get("fault", ()),
        backoff=seconds,
    )


def _int_option(spec: NodeSpec, name: str) -> dict[str, int]:
    value = spec.option(name)
    if value is None:
        return {}
    if not value.isdigit():
        raise NodeSpecError(f"node spec {spec.text!r}: {name} must be a whole number, got {value!r}")
    return {name: int(value)}


def _vm_sizes(spec: NodeSpec) -> dict[str, int]:
    """The VM sizes a vm spec gives (memory and swap in MiB, cpus); NodeSpecError for one that is not a number."""
    return {**_int_option(spec, "memory"), **_int_option(spec, "swap"), **_int_option(spec, "cpus")}


def _open_vm(spec: NodeSpec) -> Node:
    from infra.vm.image import ensure_image
    from infra.vm.machine import DEFAULT_CPUS, DEFAULT_MEMORY_MIB, DEFAULT_SWAP_MIB, VirtualMachine
    from infra.vm.progress import StepPrinter
    from nodeconf.nodes.enforced import EnforcedNode

    sizes = _vm_sizes(spec)
    progress = StepPrinter("vm")
    machine = VirtualMachine(ensure_image(progress=progress), memory_mib=sizes.get("memory", DEFAULT_MEMORY_MIB),
                             swap_mib=sizes.get("swap", DEFAULT_SWAP_MIB), cpus=sizes.get("cpus", DEFAULT_CPUS),
                             progress=progress)
    machine.start()
    try:
        node = EnforcedNode(machine.ssh(), enforcer_settings(spec), spec=spec.text, after_close=(machine.stop,))
        return node.start()
    except BaseException:
        machine.stop()
        raise


def _open_local(spec: NodeSpec) -> Node:
    from nodeconf.nodes.enforced import EnforcedNode
    from nodeconf.nodes.local import LocalTransport

    return EnforcedNode(LocalTransport(), enforcer_settings(spec), spec=spec.text).start()


def _open_ssh(spec: NodeSpec) -> Node:
    from nodeconf.nodes.enforced import EnforcedNode
    from nodeconf.nodes.ssh import SshTransport

    key = spec.option("key")
    if key is None:
        raise NodeSpecError(f"node spec {spec.text!r} needs ?key=PATH (a private key file)")
    known_hosts = spec.option("known_hosts")
    transport = SshTransport.from_spec(
        f"ssh://{spec.target}", Path(key), host_key=spec.option("host_key"),
        known_hosts=Path(known_hosts) if known_hosts else None,
    )
    return EnforcedNode(transport, enforcer_settings(spec), spec=spec.text).start()


def _open_kube(spec: NodeSpec) -> Node:
    kube = importlib.import_module("nodeconf.nodes.kube")
    node: Node = kube.open_node(spec.target or None)
    return node


OPENERS: Mapping[str, Callable[[NodeSpec], Node]] = {
    "vm": _open_vm, "local": _open_local, "ssh": _open_ssh, "kube": _open_kube,
}


def open_node(spec: str | NodeSpec) -> Node:
    """Connect to (or boot) the node a spec names and return it ready; close() releases everything."""
    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    return OPENERS[parsed.scheme](parsed)
