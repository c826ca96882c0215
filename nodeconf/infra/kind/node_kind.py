"""`kind[:CONFIG][?keep=1]`: a kind cluster created for the run from a config of infra/kind/ and run by the kube
driver; its record: options, preflight, opening, cleanup of the clusters killed runs of this host left, and the
config that gives a kubelet configuration (asked by the kube driver for any kind node).

Source: issue 27 item 2 (a record per node kind; kind's configs and provisioning in one place); issue 26.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nodeconf.errors import InputError, NodeSpecError
from nodeconf.infra.kind.configs import CONFIG_NAME, kind_advice, resolve_config
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.nodes.base import Node
from nodeconf.nodes.kinds import NodeKind
from nodeconf.nodes.spec import NodeSpec, SpecOptions, zero_or_one

KIND_OPTIONS = ("keep",)


@dataclass(frozen=True)
class KindSpec(SpecOptions):
    """A kind spec parsed: the nodeconf/infra/kind/ config it names (None: the one giving the run's kubelet
    configuration) and whether its cluster outlives the run (keep=1)."""

    config: str | None = None
    keep: bool = False


class KindKind(NodeKind):
    """A cluster of the run's own: created, and deleted unless keep=1, by nodeconf/infra/kind/provision.py."""

    scheme, usage, target = "kind", "kind[:CONFIG]", ":"
    options = KIND_OPTIONS

    def parse(self, target: str | None, options: tuple[tuple[str, str], ...], shown: str) -> NodeSpec:
        """None for `kind` (the config matching --kubelet-config); the nodeconf/infra/kind/ file name after `kind:`;
        keep=0|1."""
        single = dict(options)
        keep = "keep" in single and zero_or_one(single, "keep", shown)
        if target is not None and not CONFIG_NAME.fullmatch(target):
            raise NodeSpecError(f"node spec {shown!r}: kind: needs a config name of nodeconf/infra/kind/ "
                                "after the colon "
                                "(lower case letters, digits, '.', '-'), or plain kind")
        return NodeSpec(self.scheme, options, own=KindSpec(target, keep))

    def written(self, spec: NodeSpec) -> str:
        config = KindSpec.of(spec).config
        return self.scheme if config is None else f"kind:{config}"

    def short_name(self, spec: NodeSpec) -> str:
        config = KindSpec.of(spec).config
        return self.scheme if config is None else f"kind-{config}"

    def preflight(self, spec: NodeSpec, *, kubelet_config: KubeletConfig | None, profile: str | None) -> None:
        """kind or an engine missing, an unknown config, gates the node image does not know, a --profile the image
        does not run (InputError, one line; nothing created)."""
        from nodeconf.infra.kind.provision import checked_config

        checked_config(KindSpec.of(spec).config, kubelet_config, profile)

    def preflight_together(self, nodes: Sequence[tuple[NodeSpec, KubeletConfig | None]]) -> None:
        """Two kind nodes of one run resolving to one config: a run tests a config once."""
        seen: dict[str, NodeSpec] = {}
        for spec, kubelet_config in nodes:
            config = resolve_config(KindSpec.of(spec).config, kubelet_config).name
            if config in seen:
                raise InputError(f"{seen[config].display} and {spec.display} both use the kind config {config}: a "
                                 "run creates one cluster per config; give each kind node its own config",
                                 field="--node")
            seen[config] = spec

    def open(self, spec: NodeSpec, *, kubelet_config: KubeletConfig | None, profile: str | None) -> Node:
        from nodeconf.infra.kind.provision import open_kind_node
        from nodeconf.infra.vm.progress import StepPrinter

        own = KindSpec.of(spec)
        return open_kind_node(own.config, kubelet_config=kubelet_config, keep=own.keep, profile=profile,
                              progress=StepPrinter("kind"))

    def clean(self, spec: NodeSpec, dry_run: bool) -> list[str]:
        """The clusters this host's runs recorded and left when killed (nodeconf/infra/kind/records.py)."""
        from nodeconf.infra.kind.provision import clean_leftover_clusters

        return clean_leftover_clusters(dry_run) or ["no kind cluster of a killed nodeconf run on this host"]

    def advice(self, requested: KubeletConfig) -> str:
        return kind_advice(requested)


KIND = KindKind()
