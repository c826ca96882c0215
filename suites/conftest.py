"""Suite fixtures: the oracle for this node and profile, the kubelet configuration a test asks for, a clean node.

Source: DESIGN.md "How checks are written" and "fixtures" (function-scoped cleanup that runs on failure too).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

import pytest

from fixtures.markers import profile_version
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.loader import load_kubelet_config
from nodeconf.manifest import NamespaceObject, Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.nodes.base import Node, NotApplicable
from nodeconf.semantics.expect import expect
from nodeconf.semantics.expectation import NodeExpectation
from nodeconf.semantics.profile import Profile, profile_for
from suites.pods import workload


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
class _Applied:
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
    applied: _Applied = field(default_factory=_Applied)

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

    def swap(self, behavior: str) -> KubeletConfig:
        """The base configuration with another swap behavior (KEP-5359 node modes)."""
        return self.use(replace(self.base, swap_behavior=behavior))

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


@pytest.fixture(scope="session")
def node_facts(node: Node) -> NodeFacts:
    return node.facts()


def oracle_facts(node_facts: NodeFacts, required_formula: str) -> NodeFacts:
    """The node's facts with the run's container cpu.weight formula: what the node measured is reported (in the
    rule text), never expected (GUIDE "Expectations never come from the node"; issue 13 item 5)."""
    return replace(node_facts, cpu_weight_formula=required_formula)


@pytest.fixture(scope="session")
def oracle(node: Node, node_facts: NodeFacts, pytestconfig: pytest.Config) -> Oracle:
    facts = oracle_facts(node_facts, str(pytestconfig.getoption("--cpu-weight-formula")))
    return Oracle(facts, profile_version(pytestconfig.getoption("--profile")), node.other_pods)


@pytest.fixture(scope="session")
def _applied() -> _Applied:
    return _Applied()


@pytest.fixture(scope="session")
def base_config(pytestconfig: pytest.Config) -> KubeletConfig:
    path = pytestconfig.getoption("--kubelet-config")
    return load_kubelet_config(path) if path else KubeletConfig()


@pytest.fixture
def kubelet(node: Node, oracle: Oracle, base_config: KubeletConfig, _applied: _Applied) -> Iterator[Kubelet]:
    """The node configured with the base config (tests switch it); namespace objects cleared afterwards."""
    current = Kubelet(node, oracle.version, base_config, _applied)
    current.use(base_config)
    yield current
    current.namespace_objects(())
