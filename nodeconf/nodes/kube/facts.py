"""Node facts and the live kubelet configuration of a Kubernetes node (Node object, /configz, helper probe)."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

from nodeconf.errors import InputError
from nodeconf.kubelet_config import DEFAULT_EVICTION_HARD, FIELDS, Compared, KubeletConfig, kubelet_config_from_dict
from nodeconf.node_facts import NodeFacts, meminfo_bytes
from nodeconf.nodes.kube.api import dig
from nodeconf.nodes.kube.paths import CgroupFrame
from nodeconf.quantity import Quantity, QuantityError
from nodeconf.semantics.hugepages import is_hugepage_resource, page_size
from nodeconf.semantics.profile import profile_for

# Fields of KubeletConfig held equal to the node's live config, by their KubeletConfiguration names (the table in
# nodeconf/kubelet_config.py says which); the others are compared by a rule of their own below, or never.
COMPARED_FIELDS = {f.attr: f.path for f in FIELDS if f.compared in (Compared.EQUAL, Compared.UNLESS_UNSET)}
UNSET_MEANS_DEFAULT = frozenset(f.attr for f in FIELDS if f.compared is Compared.UNLESS_UNSET)
NOT_COMPARED_FIELDS = {f.attr for f in FIELDS if f.attr not in COMPARED_FIELDS} | {"source"}
EVICTION_MEMORY_SIGNAL = "memory.available"


def node_name(node: Mapping[str, Any]) -> str:
    name = dig(node, "metadata", "name")
    if not isinstance(name, str) or not name:
        raise InputError("node object without a name", obj="Node", field="metadata.name")
    return name


def _quantity(node: Mapping[str, Any], *path: str) -> Quantity:
    raw = dig(node, *path)
    try:
        return Quantity.parse(raw)
    except QuantityError as err:
        raise InputError(str(err), obj=f"Node/{node_name(node)}", field=".".join(path)) from None


def node_swap_capacity(node: Mapping[str, Any]) -> int | None:
    """`status.nodeInfo.swap.capacity` in bytes (NodeSwapStatus, Kubernetes ≥ 1.32), None when absent."""
    capacity = dig(node, "status", "nodeInfo", "swap", "capacity")
    if capacity is None:
        return None
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0:
        raise InputError(f"expected a byte count, got {capacity!r}", obj=f"Node/{node_name(node)}",
                         field="status.nodeInfo.swap.capacity")
    return capacity


def kubelet_minor_version(node: Mapping[str, Any]) -> str:
    """`status.nodeInfo.kubeletVersion` as `X.Y` (`v1.34.2` → `1.34`)."""
    raw = dig(node, "status", "nodeInfo", "kubeletVersion")
    parts = str(raw or "").lstrip("v").split(".")
    if len(parts) < 2 or not parts[0].isdigit() or not "".join(c for c in parts[1] if c.isdigit()):
        raise InputError(f"unreadable kubelet version {raw!r}", obj=f"Node/{node_name(node)}",
                         field="status.nodeInfo.kubeletVersion")
    return f"{int(parts[0])}.{int(''.join(c for c in parts[1] if c.isdigit()))}"


def is_kind_node(node: Mapping[str, Any]) -> bool:
    """kind sets `spec.providerID` to `kind://<runtime>/<cluster>/<node>`."""
    return str(dig(node, "spec", "providerID") or "").startswith("kind://")


def containerd_config(runtime: str, kubepods: str) -> tuple[tuple[str, str], ...]:
    """containerd's `SystemdCgroup` as the kubelet's cgroups show it (`kubepods.slice`: the systemd driver,
    pkg/kubelet/cm/cgroup_manager_linux.go); () for another runtime or no kubepods path.

    On a working node the runtime's cgroup driver is the kubelet's: kubernetes.io "Container Runtimes" (cgroup
    drivers: a mismatch fails the kubelet; containerd's systemd driver is the runc option `SystemdCgroup = true`),
    and since KubeletCgroupDriverFromCRI the kubelet takes its driver from the runtime's RuntimeConfig.
    """
    if runtime != "containerd" or not kubepods:
        return ()
    return (("SystemdCgroup", str(CgroupFrame(kubepods).systemd)),)


def node_facts(node: Mapping[str, Any], probe: Mapping[str, Any], measured_formula: str) -> NodeFacts:
    """NodeFacts from the Node object (capacity, kernel, swap, runtime and kubelet versions) and the helper's probe
    (page size, controllers).

    Swap comes from `status.nodeInfo.swap` when the kubelet reports it, else from the node's /proc/meminfo.
    """
    swap = node_swap_capacity(node)
    kernel = dig(node, "status", "nodeInfo", "kernelVersion") or probe.get("kernelRelease") or ""
    # `containerd://2.1.1` (the CRI Version call's runtime name and version, as the kubelet reports them).
    runtime, _, runtime_version = str(dig(node, "status", "nodeInfo", "containerRuntimeVersion") or "").partition("://")
    try:
        return NodeFacts(
            memory_capacity=_quantity(node, "status", "capacity", "memory").value(),
            swap_capacity=swap if swap is not None else meminfo_bytes(str(probe.get("meminfo") or "")).get(
                "SwapTotal", 0),
            cpu_capacity_milli=_quantity(node, "status", "capacity", "cpu").milli_value(),
            page_size=int(probe["pageSize"]),
            kernel_version=str(kernel),
            cgroup_controllers=tuple(str(c) for c in probe.get("controllers") or ()),
            measured_cpu_weight_formula=measured_formula,
            hugepages=_hugepage_pools(node),
            runtime=runtime,
            runtime_version=runtime_version,
            runtime_config=containerd_config(runtime, str(probe.get("kubepods") or "")),
            kubelet_version=str(dig(node, "status", "nodeInfo", "kubeletVersion") or ""),
        )
    except (KeyError, ValueError, TypeError) as err:
        raise InputError(f"unusable node facts: {err}", obj=f"Node/{node_name(node)}") from None


def _hugepage_pools(node: Mapping[str, Any]) -> tuple[tuple[int, int], ...]:
    """(page size, bytes) per `hugepages-<size>` in status.capacity, smallest first: the kubelet's report of the
    node's reserved pages (cadvisor CapacityFromMachineInfo); a name that is no page size is left out."""
    capacity = dig(node, "status", "capacity") or {}
    pools = [(size, Quantity.parse(str(total)).value()) for name, total in capacity.items()
             if is_hugepage_resource(name) and (size := page_size(name)) is not None]
    return tuple(sorted(pools))


def _configz_document(configz: str, source: str) -> dict[str, Any]:
    try:
        doc = json.loads(configz)
    except ValueError:
        raise InputError("not JSON", source=source) from None
    config = doc.get("kubeletconfig") if isinstance(doc, dict) else None
    if not isinstance(config, dict):
        raise InputError("no kubeletconfig object", source=source)
    return config


def live_kubelet_config(configz: str, node: str) -> KubeletConfig:
    """The kubelet's running configuration from `/api/v1/nodes/<node>/proxy/configz` (`{"kubeletconfig": …}`).

    InputError names the field whose value nodeconf does not model (e.g. an `enforceNodeAllocatable` entry
    of a distribution's own, such as OpenShift's `system-reserved-compressible`).
    """
    source = f"node {node} /configz"
    return kubelet_config_from_dict(_configz_document(configz, source), source=source)


def present_fields(configz: str) -> frozenset[str]:
    """The top-level KubeletConfiguration fields the node's /configz shows. The kubelet serializes its
    v1beta1 config with `omitempty` (staging/src/k8s.io/kubelet/config/v1beta1/types.go), so an absent field is
    one the node leaves at zero or does not know (an older kubelet): it is not compared as nodeconf's default."""
    return frozenset(_configz_document(configz, "/configz"))


def _shown(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(value.items())) + "}"
    if isinstance(value, tuple):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


def _memory_eviction(config: KubeletConfig) -> str | None:
    thresholds = config.eviction_hard if config.eviction_hard is not None else DEFAULT_EVICTION_HARD
    return thresholds.get(EVICTION_MEMORY_SIGNAL)


def _same_threshold(a: str | None, b: str | None) -> bool:
    """Equal thresholds: the same quantity (`100Mi` == `104857600`) or the same text (`5%`)."""
    if a is None or b is None or a.endswith("%") or b.endswith("%"):
        return a == b
    try:
        return Quantity.parse(a) == Quantity.parse(b)
    except QuantityError:
        return a == b


def kubelet_config_differences(requested: KubeletConfig, live: KubeletConfig, version: str | None = None,
                               present: Collection[str] | None = None) -> list[str]:
    """Each decision-relevant field where the node's live config differs from the requested one, one line each.

    With `present` (the fields the node's /configz shows, present_fields), a field the node does not show is
    not compared: the parsed live config would hold nodeconf's default for it, not the node's value.

    An unset `memoryThrottlingFactor` or `evictionHard` in the request means "the kubelet default", which the
    live config shows expanded. Feature gates the request names are compared as written; with a profile
    version, every gate the profile knows is also compared as the profile resolves it (its default unless set),
    so a gate the node sets that the request leaves to the default is caught too.
    """
    def shown(name: str) -> bool:
        return present is None or name.split(".")[0] in present

    out: list[str] = []
    for attr, name in COMPARED_FIELDS.items():
        want, have = getattr(requested, attr), getattr(live, attr)
        if (attr in UNSET_MEANS_DEFAULT and want is None) or not shown(name):
            continue
        if want != have:
            out.append(f"{name}: requested {_shown(want)}, node has {_shown(have)}")
    live_gates = profile_for(version, live).gates if version is not None else {}
    for gate, want in sorted(requested.feature_gates.items()):
        have = live.feature_gates.get(gate)
        if have is None and live_gates.get(gate) == want:
            continue  # the node leaves the gate at the profile's default, which is the one requested
        if have != want:
            default = f" (profile {version}: {live_gates[gate]})" if have is None and gate in live_gates else ""
            out.append(f"featureGates.{gate}: requested {want}, node has {'unset' if have is None else have}"
                       f"{default}")
    if version is not None:
        wanted_gates = profile_for(version, requested).gates
        for gate, want in sorted(wanted_gates.items()):
            if gate not in requested.feature_gates and live_gates.get(gate) != want:
                out.append(f"featureGates.{gate}: profile {version} has {want}, node has {live_gates.get(gate)}")
    want_eviction, have_eviction = _memory_eviction(requested), _memory_eviction(live)
    if shown("evictionHard") and not _same_threshold(want_eviction, have_eviction):
        out.append(f"evictionHard.{EVICTION_MEMORY_SIGNAL}: requested {want_eviction}, node has {have_eviction}")
    return out
