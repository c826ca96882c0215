"""`kube[:CONTEXT][?node=NAME|nodes=all|SELECTOR&max=N]`: a node of a running cluster through a kubeconfig context;
its record: options, expansion of a whole-cluster spec, opening, cleanup of finished runs' namespaces.

Source: issue 27 item 2 (a record per node kind); issue 12 (the kube driver).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nodeconf.errors import NodeSpecError
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.nodes.base import Node, NodeError
from nodeconf.nodes.kinds import NodeKind
from nodeconf.nodes.spec import (
    MAX_OPTION,
    NODE_OPTION,
    NODES_OPTION,
    NodeSpec,
    SpecOptions,
    unexpanded,
    whole_number,
)

KUBE_OPTIONS = (NODE_OPTION, NODES_OPTION, MAX_OPTION)
MAX_FANOUT_CEILING = 200
MAX_SELECTOR = 1024
# A Kubernetes Node's name: a DNS-1123 subdomain (apimachinery validation.IsDNS1123Subdomain), at most 253.
KUBE_NODE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


@dataclass(frozen=True)
class KubeSpec(SpecOptions):
    """A kube spec parsed: the kubeconfig context it names (None: the current one)."""

    context: str | None = None


class KubeKind(NodeKind):
    """A node of a cluster nodeconf did not create: only the namespaces of its own finished runs are removed."""

    scheme, usage, target = "kube", "kube[:CONTEXT]", ":"
    options = KUBE_OPTIONS

    def parse(self, target: str | None, options: tuple[tuple[str, str], ...], shown: str) -> NodeSpec:
        _selection(dict(options), shown)
        return NodeSpec(self.scheme, options, own=KubeSpec(_context(target, shown)))

    def written(self, spec: NodeSpec) -> str:
        context = KubeSpec.of(spec).context
        return self.scheme if context is None else f"kube:{context}"

    def short_name(self, spec: NodeSpec) -> str:
        context = KubeSpec.of(spec).context
        return self.scheme if context is None else f"kube-{context}"

    def expand(self, spec: NodeSpec) -> list[NodeSpec]:
        """For nodes=, one spec per selected node (nodeconf/nodes/kube/fanout.py)."""
        from nodeconf.nodes.kube.fanout import expand_kube_spec

        return expand_kube_spec(spec, KubeSpec.of(spec).context)

    def open(self, spec: NodeSpec, *, kubelet_config: KubeletConfig | None, profile: str | None) -> Node:
        """Through the kubeconfig's context (`kube`, `kube:CONTEXT`), the node named by `node=` if given; a
        whole-cluster spec (`nodes=`) is expanded by `nodeconf run` before any node opens."""
        from nodeconf.nodes.kube.opener import open_node

        refusal = unexpanded(spec)
        if refusal:
            raise NodeError(refusal)
        return open_node(KubeSpec.of(spec).context, node=spec.option(NODE_OPTION))

    def clean(self, spec: NodeSpec, dry_run: bool) -> list[str]:
        """The namespaces of nodeconf runs that are over (their lease lapsed; nodeconf/nodes/kube/stale.py)."""
        from nodeconf.nodes.kube.stale import clean_cluster

        context, verdicts = clean_cluster(KubeSpec.of(spec).context, dry_run)
        done = "; would be deleted" if dry_run else "; deleted"
        return [f"kube {context}: namespace {verdict.namespace}: {verdict.why}{done if verdict.delete else ''}"
                for verdict in verdicts]

    def advice(self, requested: KubeletConfig) -> str:
        return "point nodeconf at a node whose kubelet runs the needed configuration"


KUBE = KubeKind()


def _selection(options: dict[str, str], shown: str) -> None:
    """node= a Node name, or nodes= a label selector (or `all`) with max= 1..MAX_FANOUT_CEILING, not both."""
    node, nodes = options.get(NODE_OPTION), options.get(NODES_OPTION)
    if node is not None and nodes is not None:
        raise NodeSpecError(f"node spec {shown!r}: node= (one node) and nodes= (several) do not go together")
    if node is not None and (len(node) > 253 or not KUBE_NODE_NAME.fullmatch(node)):
        raise NodeSpecError(f"node spec {shown!r}: node= must be a Kubernetes node name (lower case letters, "
                            f"digits, '-', '.'), got {node!r}")
    if nodes is not None and (len(nodes) > MAX_SELECTOR or not nodes.isprintable()):
        raise NodeSpecError(f"node spec {shown!r}: nodes= must be all or a label selector (key, key=value, "
                            f"key!=value, ... joined by ',') of at most {MAX_SELECTOR} printable characters")
    if MAX_OPTION in options and nodes is None:
        raise NodeSpecError(f"node spec {shown!r}: max= goes with nodes=")
    whole_number(options, MAX_OPTION, 1, MAX_FANOUT_CEILING, " (nodes at most)", shown)


def _context(target: str | None, shown: str) -> str | None:
    """None for `kube` (the kubeconfig's current context); the context after `kube:`, which must not be empty."""
    if target is None:
        return None
    if not target or not target.isprintable() or any(c.isspace() for c in target):
        raise NodeSpecError(f"node spec {shown!r}: kube: needs a context name after the colon "
                            "(or plain kube for the current context)")
    return target
