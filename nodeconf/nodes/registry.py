"""Which opener serves each node scheme: `module:function` paths imported only when their scheme is used, so a
driver's dependencies stay optional and `nodes` never imports `infra` (testinfra's BACKENDS, STYLE.md).

Source: issue 12 (openers beside their drivers; `nodes` ↛ `infra`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

from nodeconf.nodes.base import Node
from nodeconf.nodes.spec import NodeSpec, parse_node_spec

OPENERS: Mapping[str, str] = {
    "vm": "infra.vm.opener:open_vm_node",
    "local": "nodeconf.nodes.enforced.opener:open_local_node",
    "ssh": "nodeconf.nodes.enforced.opener:open_ssh_node",
    "kube": "nodeconf.nodes.kube.opener:open_kube_node",
}

def opener(scheme: str) -> Callable[[NodeSpec], Node]:
    """The function that opens nodes of a scheme, imported now."""
    module, _, function = OPENERS[scheme].partition(":")
    found: Callable[[NodeSpec], Node] = getattr(importlib.import_module(module), function)
    return found


def open_node(spec: str | NodeSpec) -> Node:
    """Connect to (or boot) the node a spec names and return it ready; close() releases everything."""
    parsed = parse_node_spec(spec) if isinstance(spec, str) else spec
    return opener(parsed.scheme)(parsed)
