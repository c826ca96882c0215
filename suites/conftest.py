"""Suite fixtures: the oracle for this node and profile, the kubelet configuration a test asks for, a clean node
(their classes are in suites/toolkit/kubelet.py; this file only registers fixtures).

Source: DESIGN.md "How checks are written" and "fixtures" (function-scoped cleanup that runs on failure too).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nodeconf.fixtures.node_profile import judging_profile, node_base_config
from nodeconf.fixtures.session_nodes import opened
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.node_facts import NodeFacts
from nodeconf.nodes.base import Node
from suites.toolkit.kubelet import Applied, Kubelet, Oracle, oracle_facts


@pytest.fixture(autouse=True)
def _on_run_node(node: Node) -> None:
    """Every check runs on the run's node: `node` is in each check's closure, so fixtures.node gives it the node's
    name in its id and the check shares the session's one open node, also a check that reaches the node only
    through `request.getfixturevalue` (an unparametrized request would open a second node, a second VM)."""


@pytest.fixture(scope="session")
def node_facts(node: Node) -> NodeFacts:
    return node.facts()


@pytest.fixture(scope="session")
def oracle(node: Node, node_facts: NodeFacts, pytestconfig: pytest.Config) -> Oracle:
    facts = oracle_facts(node_facts, opened(pytestconfig, node).settings.cpu_weight_formula)
    return Oracle(facts, judging_profile(node, pytestconfig), node.other_pods)


@pytest.fixture(scope="session")
def _applied(node: Node, pytestconfig: pytest.Config) -> Applied:
    """Per node (what one node runs says nothing about another's), from what the node fixture sent it."""
    start = opened(pytestconfig, node)
    return Applied(start.config, start.version, start.warnings)


@pytest.fixture(scope="session")
def base_config(node: Node, pytestconfig: pytest.Config) -> KubeletConfig:
    return node_base_config(node, opened(pytestconfig, node).settings.base_config)


@pytest.fixture
def kubelet(node: Node, oracle: Oracle, base_config: KubeletConfig, _applied: Applied) -> Iterator[Kubelet]:
    """The node configured with the base config (tests switch it); namespace objects cleared afterwards."""
    current = Kubelet(node, oracle.version, base_config, _applied)
    current.use(base_config)
    yield current
    current.namespace_objects(())
