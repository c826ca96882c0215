"""The session node's name is part of every check id that uses it, first; `-k` selections keep working; a bad `--node`
or two nodes of one name stop pytest before collection (issues 12, 14); every suite check runs on the run's node,
opened once (issue 31)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nodeconf.node_facts import NodeFacts
from nodeconf.run.check_ids import node_of_test

pytest_plugins = ("pytester",)

CONFTEST = """
from nodeconf.nodes.spec import declare_node_option

pytest_plugins = ["nodeconf.fixtures.node"]


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


ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("nodes", [["vm"], ["vm", "local"]], ids=["default", "two-nodes"])
def test_every_suite_check_runs_on_each_node_with_its_name_first(nodes: list[str]) -> None:
    """The real suites, collected only (nothing boots): every check id names its node first (node_of_test, which
    the several-node scheduler uses), and each check appears once per node (issue 31: test_table_pod_deployed had
    no node, test_oom_group's ids put it after the module's own parameter)."""
    argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
            "suites", *(f"--node={name}" for name in nodes)]
    out = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    ids = [line for line in out.splitlines() if "::" in line]
    per_node = {name: [i.replace(f"[{name}-", "[").replace(f"[{name}]", "") for i in ids
                       if node_of_test(i, nodes) == name] for name in nodes}
    assert len(ids) > 200
    assert [i for i in ids if node_of_test(i, nodes) is None] == []
    assert all(checks == per_node[nodes[0]] for checks in per_node.values())


RUN_NODE_CHECKS = """
import pytest


@pytest.fixture(scope="module")
def table(node):
    return node.facts().memory_capacity


def test_plain(node):
    assert node.facts().memory_capacity > 0


@pytest.mark.parametrize("name", ["table"])
def test_reaches_the_node_only_dynamically(request, name):
    assert request.getfixturevalue(name) > 0


def test_without_node_argument():
    pass
"""


class CountedNode:
    """The smallest node nodeconf.fixtures.node needs (facts, image, kubelet_flags, logs, close), recording its
    opening and closing in `log`."""

    image = ""
    kubelet_flags = ""

    def __init__(self, spec: str, log: list[str]) -> None:
        self.spec = spec
        self.log = log
        log.append(f"open {spec}")

    def facts(self) -> NodeFacts:
        return NodeFacts(memory_capacity=2 << 30)

    def logs(self) -> str:
        return ""

    def close(self) -> None:
        self.log.append(f"close {self.spec}")


def test_the_run_node_is_opened_once_per_node(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A check that reaches the node only through request.getfixturevalue, one that takes it, and one that names it
    nowhere all run on the one node the session opened (before issue 31 the first opened a second node, a second
    VM, after the others)."""
    pytester.makeconftest(CONFTEST.replace('"nodeconf.fixtures.node"]', '"nodeconf.fixtures.node", "suites.conftest"]'))
    pytester.mkdir("checks")
    pytester.path.joinpath("checks", "test_checks.py").write_text(RUN_NODE_CHECKS)
    log: list[str] = []
    monkeypatch.setattr("nodeconf.fixtures.node.open_node", lambda spec, **_: CountedNode(str(spec), log))
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-v", "--node", "vm")
    assert log == ["open vm", "close vm"]
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*test_plain?vm? PASSED*", "*test_reaches_the_node_only_dynamically?vm-table? PASSED*",
                                 "*test_without_node_argument?vm? PASSED*"])
