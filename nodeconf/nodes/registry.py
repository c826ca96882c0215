"""What a run asks of its nodes' kinds before pytest starts and when a node opens: expansion, preflight and
opening, each by the spec's record (nodeconf/nodes/kinds.py).

Source: issue 12 (one spec, opened through one registry); issue 27 item 2 (a record per node kind).
"""

from __future__ import annotations

from collections.abc import Sequence

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.nodes.base import Node
from nodeconf.nodes.kinds import node_kind
from nodeconf.nodes.spec import KINDS, NodeSpec, parse_node_spec


def preflight(spec: NodeSpec, *, kubelet_config: KubeletConfig | None = None, profile: str | None = None) -> None:
    """Refuse (UsageError, one line) what a scheme can tell before anything starts; most schemes have nothing."""
    node_kind(spec.scheme).preflight(spec, kubelet_config=kubelet_config, profile=profile)


def preflight_together(nodes: Sequence[tuple[NodeSpec, KubeletConfig | None]]) -> None:
    """Refuse (UsageError, one line) what only the run's nodes of one scheme together can tell."""
    for scheme in KINDS:
        same = [(spec, kubelet_config) for spec, kubelet_config in nodes if spec.scheme == scheme]
        if same:
            node_kind(scheme).preflight_together(same)


def expand(specs: Sequence[NodeSpec]) -> list[NodeSpec]:
    """Each spec, or the concrete specs it stands for (a whole-cluster kube spec: one per selected node)."""
    return [concrete for spec in specs for concrete in node_kind(spec.scheme).expand(spec)]


def open_node(spec: str | NodeSpec, *, kubelet_config: KubeletConfig | None = None, profile: str | None = None) -> Node:
    """Connect to (or boot) the node a spec names and return it ready; close() releases everything."""
    parsed = parse_node_spec(spec) if isinstance(spec, str) else spec
    return node_kind(parsed.scheme).open(parsed, kubelet_config=kubelet_config, profile=profile)
