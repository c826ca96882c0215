"""Kubelet switching and the oracle of a check: `Oracle` binds expect() to the node's facts and the run's profile,
`Kubelet` configures the node a test asks for (each configuration sent once) and skips the test when the node cannot
run it.

Source: DESIGN.md "How checks are written"; issue 12 (no class is imported from a conftest).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import pytest

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.loader import load_kubelet_config
from nodeconf.manifest import NamespaceObject, Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.nodes.base import Node, NotApplicable
from nodeconf.semantics.expect import expect
from nodeconf.semantics.expectation import NodeExpectation
from nodeconf.semantics.profile import Profile, profile_for
from nodeconf.semantics.swap import WORKLOAD_SWAP_GATE
from suites.toolkit.pods import workload

# KEP-5359's gate is alpha in 1.38 and off on a default node (nodeconf/semantics/profile.py): the checks of
# limits.swap and of the WorkloadControlledSwap mode turn it on in the kubelet config they ask for.
WORKLOAD_SWAP_ON: Mapping[str, bool] = {WORKLOAD_SWAP_GATE: True}


def with_gates(config: KubeletConfig, gates: Mapping[str, bool]) -> KubeletConfig:
    """`config` with these feature gates set over its own."""
    return replace(config, feature_gates={**config.feature_gates, **gates})


def _no_other_pods() -> Sequence[Pod]:
    return ()


@dataclass(frozen=True)
class Oracle:
    """`expect()` bound to this node's facts and the run's profile version; the pods the node runs besides the
    test's (`others`, read at each call) come first: their requests count, their cgroups are not checked."""

    facts: NodeFacts
    version: str
    others: Callable[[], Sequence[Pod]] = _no_other_pods

    def profile(self, config: KubeletConfig) -> Profile:
        return profile_for(self.version, config)

    def expect(self, pods: Sequence[Pod], config: KubeletConfig,
               objects: Sequence[NamespaceObject] = ()) -> NodeExpectation:
        return expect([*self.others(), *pods], self.facts, config, self.profile(config), list(objects))


@dataclass
class Applied:
    """What this session last sent to the node, so a test only pays for a change."""

    config: KubeletConfig | None = None
    version: str = ""
    warnings: tuple[str, ...] = ()
    objects: tuple[NamespaceObject, ...] = ()


@dataclass
class Kubelet:
    """The kubelet configuration of the running test; every test starts from the session's base config."""

    node: Node
    version: str
    base: KubeletConfig
    applied: Applied = field(default_factory=Applied)

    def use(self, config: KubeletConfig, version: str | None = None) -> KubeletConfig:
        """Configure the node (a kubelet restart); `version` runs another profile's kubelet for this test only."""
        wanted = version or self.version
        if self.applied.config != config or self.applied.version != wanted:
            try:
                self.applied.warnings = tuple(self.node.configure(config, wanted))
            except NotApplicable as err:
                pytest.skip(str(err))
            self.applied.config, self.applied.version = config, wanted
        return config

    def file(self, relative: str) -> KubeletConfig:
        """A KubeletConfiguration from workloads/ (as the seed wrote it)."""
        return self.use(load_kubelet_config(workload(relative)))

    def swap(self, behavior: str, gates: Mapping[str, bool] | None = None) -> KubeletConfig:
        """The base configuration with another swap behavior (KEP-5359 node modes) and the feature gates a check
        needs on top of the base's (WORKLOAD_SWAP_ON for KEP-5359's)."""
        return self.use(with_gates(replace(self.base, swap_behavior=behavior), gates or {}))

    @property
    def config(self) -> KubeletConfig:
        return self.applied.config or self.base

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.applied.warnings

    def namespace_objects(self, objects: Sequence[NamespaceObject]) -> None:
        if tuple(objects) != self.applied.objects:
            self.node.set_namespace_objects(list(objects))
            self.applied.objects = tuple(objects)


def oracle_facts(node_facts: NodeFacts, required_formula: str) -> NodeFacts:
    """The node's facts with the run's container cpu.weight formula: what the node measured is reported (in the
    rule text), never expected (GUIDE "Expectations never come from the node"; issue 13 item 5)."""
    return replace(node_facts, cpu_weight_formula=required_formula)
