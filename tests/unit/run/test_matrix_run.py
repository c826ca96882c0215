"""Several nodes in one pytest run (issue 14): one xdist worker per node opens exactly that node, the node's name is
in every check id, JUnit has one testsuite per node, each node's facts get their own environment file, and a node
that cannot be opened breaks its own checks only. The nodes are fakes opened in-process by each worker."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from nodeconf.nodes.kube.fanout import expand_nodes
from nodeconf.nodes.spec import parse_node_spec
from tests.unit.nodes.kube.kube_node_list import node_list

pytest_plugins = ("pytester",)

CONFTEST = """
import json
import os
from pathlib import Path

import nodeconf.fixtures.node
from nodeconf.errors import InfrastructureError
from nodeconf.node_facts import NodeFacts

pytest_plugins = [
    "nodeconf.fixtures.node", "nodeconf.fixtures.evidence", "nodeconf.fixtures.session", "nodeconf.fixtures.matrix",
]
LEDGER = Path(os.environ["FAKE_NODE_LEDGER"])


class FakeNode:
    def __init__(self, spec):
        self.spec = spec
        self.image = f"image-{spec.name}.qcow2, sha256 0123"
        self.kubelet_flags = ""

    def facts(self):
        return NodeFacts(memory_capacity=1 << 30, kernel_version=f"6.1-{self.spec.name}")

    def logs(self):
        return ""

    def close(self):
        _note("close", self.spec)


def _note(event, spec):
    with LEDGER.open("a") as ledger:
        ledger.write(json.dumps([event, spec.name, os.getpid(), os.environ.get("PYTEST_XDIST_WORKER", "")]) + "\\n")


def fake_open(spec, **_options):
    if spec.name == "down":
        raise InfrastructureError(f"cannot reach {spec.name}")
    _note("open", spec)
    return FakeNode(spec)


nodeconf.fixtures.node.open_node = fake_open


def pytest_addoption(parser):
    from nodeconf.run.options import declare_run_options

    declare_run_options(parser.getgroup("nodeconf").addoption, pytest=True)
"""
CHECKS = """
import pytest


def test_plain(node):
    assert node.facts().kernel_version.startswith("6.1-")


@pytest.mark.parametrize("qos", ["burstable", "guaranteed"])
def test_table(node, qos):
    pass


def test_pure():
    pass
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_checks=CHECKS)
    monkeypatch.setenv("FAKE_NODE_LEDGER", str(pytester.path / "ledger.jsonl"))
    return pytester


def ledger(project: pytest.Pytester) -> list[list[str]]:
    path = project.path / "ledger.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-rA",
                                        "--junitxml=reports/junit.xml", "--alluredir=reports/allure", *args)


def test_collect_two_nodes_gives_each_check_once_per_node(project: pytest.Pytester) -> None:
    result = project.runpytest("--collect-only", "-q", "-p", "no:randomly", "--node", "local",
                               "--node", "vm?name=b")
    ids = [line for line in result.outlines if "::" in line]
    assert sorted(ids) == sorted([
        "test_checks.py::test_plain[local]", "test_checks.py::test_plain[b]",
        "test_checks.py::test_table[local-burstable]", "test_checks.py::test_table[local-guaranteed]",
        "test_checks.py::test_table[b-burstable]", "test_checks.py::test_table[b-guaranteed]",
        "test_checks.py::test_pure"])


def test_two_nodes_one_worker_each(project: pytest.Pytester) -> None:
    """One xdist run checks the worker per node, JUnit's testsuites, the environment files and the node labels."""
    result = run(project, "-n", "2", "--node", "local", "--node", "vm?name=b")
    assert result.ret == pytest.ExitCode.OK, result.outlines
    events = ledger(project)
    opened = {(name, worker) for event, name, _, worker in events if event == "open"}
    assert opened == {("local", "gw0"), ("b", "gw1")}  # node i on worker gw<i>, once
    assert sorted(event[:2] for event in events if event[0] == "close") == [["close", "b"], ["close", "local"]]
    passed = {line.split()[1] for line in result.outlines if line.startswith("PASSED")}
    assert {"test_checks.py::test_plain[local]", "test_checks.py::test_plain[b]"} <= passed
    assert_junit_per_node(project.path / "reports" / "junit.xml")
    assert_environment_per_node(project.path / "reports" / "allure")


def assert_junit_per_node(path: Path) -> None:
    suites = {suite.get("name"): suite for suite in ET.parse(path).getroot().iter("testsuite")}
    assert list(suites) == ["local", "b", "nodeconf"]
    names = {name: sorted(case.get("name", "") for case in suite.iter("testcase")) for name, suite in suites.items()}
    assert names == {"local": ["test_plain[local]", "test_table[local-burstable]", "test_table[local-guaranteed]"],
                     "b": ["test_plain[b]", "test_table[b-burstable]", "test_table[b-guaranteed]"],
                     "nodeconf": ["test_pure"]}  # a check of no node
    assert suites["b"].get("tests") == "3" and suites["b"].get("failures") == "0"
    properties = {p.get("name"): p.get("value") for p in suites["b"].iter("property")}
    assert properties["node"] == "b"
    assert properties["run_complete"] == "true"


def assert_environment_per_node(allure: Path) -> None:
    environment_b = (allure / "environment-b.properties").read_text()
    assert "name=b\n" in environment_b and "kernel_version=6.1-b\n" in environment_b
    assert "image=image-b.qcow2, sha256 0123\n" in environment_b  # what the node booted from, for its scope
    assert "kernel_version" not in (allure / "environment.properties").read_text()
    raw = [json.loads(path.read_text()) for path in allure.glob("*-result.json")]
    assert len({result["historyId"] for result in raw}) == 7  # the same check on two nodes: two histories
    labels = [dict((label["name"], label["value"]) for label in result["labels"]) for result in raw]
    assert sorted(label.get("node", "") for label in labels) == ["", "b", "b", "b", "local", "local", "local"]


def test_a_node_that_cannot_be_opened_breaks_only_its_checks(project: pytest.Pytester) -> None:
    result = run(project, "-n", "2", "--node", "local", "--node", "vm?name=down")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    errors = {line.split()[1] for line in result.outlines if line.startswith("ERROR")}
    assert errors == {"test_checks.py::test_plain[down]", "test_checks.py::test_table[down-burstable]",
                      "test_checks.py::test_table[down-guaranteed]"}
    passed = {line.split()[1] for line in result.outlines if line.startswith("PASSED")}
    assert "test_checks.py::test_plain[local]" in passed
    assert [event[1] for event in ledger(project) if event[0] == "open"] == ["local"]


@pytest.mark.parametrize(("matrix", "message"), [
    pytest.param("- {node: local, colour: red}\n", "unknown key 'colour'", id="unknown-key"),
    pytest.param("- {node: local}\n- {node: local}\n", "two nodes are named 'local'", id="duplicate"),
    pytest.param("- {node: 'vm?memory=1'}\n", "memory must be", id="bad-spec"),
])
def test_a_bad_matrix_stops_pytest(project: pytest.Pytester, matrix: str, message: str) -> None:
    (project.path / "matrix.yaml").write_text(matrix)
    result = project.runpytest("--collect-only", "-q", "--matrix", str(project.path / "matrix.yaml"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert any(message in line for line in result.errlines), result.errlines
    assert not ledger(project)


def test_own_profiles_need_one_worker_per_node(project: pytest.Pytester) -> None:
    matrix = project.path / "matrix.yaml"
    matrix.write_text("- {node: local, profile: '1.35'}\n- {node: 'vm?name=b'}\n")
    result = project.runpytest("--collect-only", "-q", "--matrix", str(matrix))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert any("run one xdist worker per node (-n 2" in line for line in result.errlines), result.errlines


def test_a_whole_cluster_spec_needs_nodeconf_run(project: pytest.Pytester) -> None:
    result = project.runpytest("--collect-only", "-q", "--node", "kube:c?nodes=all")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert any("kube:c?nodes=all: nodes= is expanded by `nodeconf run` into one --node per cluster node" in line
               for line in result.errlines), result.errlines
    assert not ledger(project)


def test_a_whole_cluster_run_is_a_run_of_its_nodes(project: pytest.Pytester) -> None:
    """The specs `kube:c?nodes=all` expands into (recorded nodes) run one worker per node, named in the ids."""
    specs = expand_nodes(parse_node_spec("kube:c?nodes=all"), node_list()["items"])
    result = run(project, "-n", str(len(specs)), *(f"--node={spec.display}" for spec in specs))
    assert result.ret == pytest.ExitCode.OK, result.outlines
    names = ["kind-control-plane", "kind-worker", "kind-worker2", "legacy-1"]
    opened = {(name, worker) for event, name, _, worker in ledger(project) if event == "open"}
    assert opened == {(name, f"gw{index}") for index, name in enumerate(names)}
    passed = {line.split()[1] for line in result.outlines if line.startswith("PASSED")}
    assert {f"test_checks.py::test_table[{name}-burstable]" for name in names} <= passed
    suites = [suite.get("name") for suite in ET.parse(project.path / "reports" / "junit.xml").getroot()
              .iter("testsuite")]
    assert suites == [*names, "nodeconf"]
