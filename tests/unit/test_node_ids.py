"""The session node's name is part of every check id that uses it; `-k` selections keep working; a bad `--node` or
two nodes of one name stop pytest before collection (issues 12, 14)."""

from __future__ import annotations

import pytest

pytest_plugins = ("pytester",)

CONFTEST = """
from nodeconf.nodes.spec import declare_node_option

pytest_plugins = ["fixtures.node"]


def pytest_addoption(parser):
    declare_node_option(parser.getgroup("nodeconf").addoption)
    parser.addoption("--matrix", default=None)
    parser.addoption("--kubelet-config", default=None)
    parser.addoption("--profile", default=None)
"""
CHECKS = """
import pytest


def test_plain(node):
    pass


@pytest.mark.parametrize("qos", ["burstable", "guaranteed"])
def test_table(node, qos):
    pass


def test_without_node():
    pass
"""
OWN_NODE = """
import pytest


@pytest.fixture
def node():
    return "a test module's own node fixture"


def test_own(node):
    pass
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_checks=CHECKS, test_own=OWN_NODE)
    return pytester


@pytest.mark.parametrize(("args", "ids"), [
    pytest.param((), ["test_checks.py::test_plain[vm]", "test_checks.py::test_table[vm-burstable]",
                      "test_checks.py::test_table[vm-guaranteed]", "test_checks.py::test_without_node",
                      "test_own.py::test_own"], id="default-vm"),
    pytest.param(("--node", "kube:kind-a"), ["test_checks.py::test_plain[kube-kind-a]",
                                             "test_checks.py::test_table[kube-kind-a-burstable]",
                                             "test_checks.py::test_table[kube-kind-a-guaranteed]",
                                             "test_checks.py::test_without_node", "test_own.py::test_own"],
                 id="kube-context"),
    pytest.param(("--node", "local", "-k", "burstable or own"), ["test_checks.py::test_table[local-burstable]",
                                                                 "test_own.py::test_own"], id="k-selection"),
])
def test_check_ids_carry_the_node_name(project: pytest.Pytester, args: tuple[str, ...], ids: list[str]) -> None:
    result = project.runpytest("--collect-only", "-q", "-p", "no:randomly", *args)
    assert [line for line in result.outlines if "::" in line] == ids


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(("--node", "vm?memory=0"), "argument --node: node spec 'vm?memory=0': memory must be", id="bad"),
    pytest.param(("--node", "vm", "--node", "vm?memory=512"), "two nodes are named 'vm'", id="same-name"),
])
def test_a_bad_node_or_a_name_clash_stops_pytest(project: pytest.Pytester, args: tuple[str, ...], message: str) -> None:
    result = project.runpytest("--collect-only", "-q", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert any(message in line for line in result.errlines), result.errlines
