"""Which opener serves each node scheme: `module:function` paths imported only when their scheme is used, so a
driver's dependencies stay optional and `nodes` never imports `infra` (testinfra's BACKENDS, STYLE.md).

Source: issue 12 (openers beside their drivers; `nodes` ↛ `infra`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nodeconf.nodes.base import Node
from nodeconf.nodes.spec import NodeSpec, parse_node_spec

OPENERS: Mapping[str, str] = {
    "vm": "nodeconf.infra.vm.opener:open_vm_node",
    "local": "nodeconf.nodes.enforced.opener:open_local_node",
    "ssh": "nodeconf.nodes.enforced.opener:open_ssh_node",
    "kube": "nodeconf.nodes.kube.opener:open_kube_node",
    "kind": "nodeconf.infra.kind.provision:open_kind_spec",
}
# Schemes whose opener also takes the run's kubelet config and profile (kind picks its cluster config from them),
# and whose preflight refuses a run before pytest starts (kind or an engine missing, an unknown config).
RUN_AWARE: Mapping[str, str] = {"kind": "nodeconf.infra.kind.provision:preflight_kind_spec"}
# Schemes whose nodes of one run are checked together before pytest starts, each spec with its kubelet config file
# (two kind nodes of one config).
TOGETHER: Mapping[str, str] = {"kind": "nodeconf.infra.kind.provision:preflight_kind_specs"}
# Schemes that can refuse a spec before pytest starts without the run's options (a vendor image's format).
PREFLIGHTS: Mapping[str, str] = {"vm": "nodeconf.infra.vm.opener:preflight_vm_spec"}
# Schemes whose one spec may stand for several nodes, expanded once before pytest starts (kube?nodes=...).
EXPANDERS: Mapping[str, str] = {"kube": "nodeconf.nodes.kube.fanout:expand_kube_spec"}

def _imported(path: str) -> Callable[..., Any]:
    module, _, function = path.partition(":")
    found: Callable[..., Any] = getattr(importlib.import_module(module), function)
    return found


def opener(scheme: str) -> Callable[..., Node]:
    """The function that opens nodes of a scheme, imported now."""
    return _imported(OPENERS[scheme])


def preflight(spec: NodeSpec, *, kubelet_config: Path | None = None, profile: str | None = None) -> None:
    """Refuse (UsageError, one line) what a scheme can tell before anything starts; most schemes have nothing."""
    if spec.scheme in RUN_AWARE:
        _imported(RUN_AWARE[spec.scheme])(spec, kubelet_config=kubelet_config, profile=profile)
    elif spec.scheme in PREFLIGHTS:
        _imported(PREFLIGHTS[spec.scheme])(spec)


def preflight_together(nodes: Sequence[tuple[NodeSpec, Path | None]]) -> None:
    """Refuse (UsageError, one line) what only the run's nodes of one scheme together can tell."""
    for scheme, path in TOGETHER.items():
        same = [(spec, kubelet_config) for spec, kubelet_config in nodes if spec.scheme == scheme]
        if same:
            _imported(path)(same)


def expand(specs: Sequence[NodeSpec]) -> list[NodeSpec]:
    """Each spec, or the concrete specs it stands for (a whole-cluster kube spec: one per selected node)."""
    out: list[NodeSpec] = []
    for spec in specs:
        out += _imported(EXPANDERS[spec.scheme])(spec) if spec.scheme in EXPANDERS else [spec]
    return out


def open_node(spec: str | NodeSpec, *, kubelet_config: Path | None = None, profile: str | None = None) -> Node:
    """Connect to (or boot) the node a spec names and return it ready; close() releases everything."""
    parsed = parse_node_spec(spec) if isinstance(spec, str) else spec
    if parsed.scheme in RUN_AWARE:
        return opener(parsed.scheme)(parsed, kubelet_config=kubelet_config, profile=profile)
    return opener(parsed.scheme)(parsed)
