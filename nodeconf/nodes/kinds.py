"""One record per node kind (scheme): how its spec is written and named, its options and their parsing,
expansion, preflight, opening, cleanup and the advice for a kubelet config it cannot take. Records are found by
scheme in spec.KINDS, imported only when their scheme is used, so a driver's dependencies stay optional and
`nodes` never imports `infra`. A new node kind is its driver, its record (a NodeKind) and one line in spec.KINDS.

Source: issue 27 item 2; STYLE.md "For node kinds and lifecycles" (kind's providers, testinfra's BACKENDS).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.nodes.base import Node
from nodeconf.nodes.spec import KINDS, NodeSpec, spec_reader


class NodeKind(ABC):
    """What nodeconf knows about one kind of node, asked by the spec parser, `nodeconf run`, the `node` fixture
    and `nodeconf clean`."""

    scheme: str
    usage: str  # how the spec is written, for messages (`kube[:CONTEXT]`)
    target: str = ""  # what follows the scheme: "" nothing, ":" an optional target, "://" a required one
    options: tuple[str, ...] = ()  # the query options it takes (name= is every kind's)
    repeatable: frozenset[str] = frozenset()  # options that may be given more than once

    @abstractmethod
    def parse(self, target: str | None, options: tuple[tuple[str, str], ...], shown: str) -> NodeSpec:
        """The spec of this kind: its target (None when bare) and its options, each checked (NodeSpecError)."""

    def written(self, spec: NodeSpec) -> str:
        """The spec's canonical text before its options, holding no secret (the scheme, unless it has a target)."""
        return spec.scheme

    def short_name(self, spec: NodeSpec) -> str:
        """The spec's name when name= does not give one (the scheme, unless it has a target)."""
        return spec.scheme

    def machine(self, spec: NodeSpec) -> str | None:
        """The machine the node is, when two specs could name one (one enforcer per machine); None: a node of its
        own (a VM) or a cluster's."""
        return None

    def expand(self, spec: NodeSpec) -> list[NodeSpec]:
        """The concrete specs a spec stands for, asked once before pytest starts (itself, unless it names many)."""
        return [spec]

    def preflight(self, spec: NodeSpec, *, kubelet_config: KubeletConfig | None, profile: str | None) -> None:
        """Refuse (UsageError, one line) what the kind can tell before anything starts (nothing, unless it says).
        `kubelet_config` is the node's, loaded once for the run (run/settings.py); its `source` names the file."""
        return None

    def preflight_together(self, nodes: Sequence[tuple[NodeSpec, KubeletConfig | None]]) -> None:
        """Refuse (UsageError, one line) what only a run's nodes of this kind together can tell, each spec with its
        loaded kubelet config (nothing, unless it says)."""
        return None

    @abstractmethod
    def open(self, spec: NodeSpec, *, kubelet_config: KubeletConfig | None, profile: str | None) -> Node:
        """Connect to (or create) the node and return it ready; close() releases everything."""

    @abstractmethod
    def clean(self, spec: NodeSpec, dry_run: bool) -> list[str]:
        """Remove (or with dry_run name) what killed runs left on such a node; one line each for the user."""

    @abstractmethod
    def advice(self, requested: KubeletConfig) -> str:
        """How to get a node of this kind that runs the requested kubelet configuration."""


def node_kind(scheme: str) -> NodeKind:
    """The record of a scheme of spec.KINDS, imported now."""
    found = spec_reader(scheme)
    if not isinstance(found, NodeKind):
        raise TypeError(f"{KINDS[scheme]} is not a NodeKind")
    return found
