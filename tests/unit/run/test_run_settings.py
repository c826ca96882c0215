"""A run's settings have one owner (issue 27 item 1): each run option is declared once for argparse and pytest, the
kubelet config file is read once per process, and each node is configured once, with its own settings."""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from nodeconf.cli import run as run_cli
from nodeconf.errors import InputError
from nodeconf.run.options import RUN_OPTIONS
from nodeconf.run.settings import run_settings
from tests.unit.infra.kind.kind_fakes import install

pytest_plugins = ("pytester",)
ROOT = Path(__file__).resolve().parents[3]
KUBELET_CONFIG = "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\nmaxPods: {}\n"
NO_SWAP = ROOT / "workloads" / "kep-5359" / "kubelet-config" / "no-swap.yaml"  # infra/kind/noswap.yaml gives it


def recorded(declare: Callable[[Callable[..., object]], object]) -> dict[str, dict[str, object]]:
    """Each option a declaration makes, by its first flag, with its flags and keyword arguments."""
    calls: dict[str, dict[str, object]] = {}

    def add_option(*flags: str, **kwargs: object) -> None:
        assert flags[0] not in calls, f"{flags[0]} declared twice"
        calls[flags[0]] = {"flags": flags, **kwargs}

    declare(add_option)
    return calls


def root_conftest() -> ModuleType:
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pytest_declares_each_run_option_as_nodeconf_run_does() -> None:
    """The root conftest and `nodeconf run` take their options from one table: the same flags, dest, metavar and
    help, and no type or default of their own (run/settings.py checks and resolves every value)."""

    class Parser:
        def __init__(self, add: Callable[..., object]) -> None:
            self.addoption = add

        def getgroup(self, name: str) -> Parser:
            return self

    by_pytest = recorded(lambda add: root_conftest().pytest_addoption(Parser(add)))
    parser = argparse.ArgumentParser()
    subparsers = parser.add_subparsers()
    run_cli.add_parser(subparsers)
    by_cli = {action.option_strings[0]: action for action in subparsers.choices["run"]._actions
              if action.option_strings}
    assert [option.flags[0] for option in RUN_OPTIONS if option.pytest] == [f for f in by_pytest if f != "--node"]
    assert {option.flags[0] for option in RUN_OPTIONS} <= set(by_cli)
    for flag, declared in by_pytest.items():
        action = by_cli[flag]
        assert (tuple(action.option_strings), action.metavar, action.help) == (
            declared["flags"], declared["metavar"], declared["help"])
        assert action.dest == declared.get("dest", "node")
        assert flag == "--node" or ("type" not in declared and "default" not in declared)
    args = parser.parse_args(["run", "--kubernetes-version", "1.36", "--cpu-weight-formula", "linear"])
    assert (args.profile, args.cpu_weight_formula, args.kubelet_config) == ("1.36", "linear", None)



@pytest.mark.parametrize(("options", "message"), [
    pytest.param({"profile": "1.99"}, "--profile: '1.99' is not one of 1.34, 1.35", id="unknown-profile"),
    pytest.param({"profile": "latest"}, '--profile: must look like "1.36", got', id="bad-profile"),
    pytest.param({"cpu_weight_formula": "quadratic"}, "--cpu-weight-formula: unknown value 'quadratic'",
                 id="unknown-formula"),
    pytest.param({"kubelet_config": "missing.yaml"}, "missing.yaml: --kubelet-config: no such file",
                 id="missing-kubelet-config"),
    pytest.param({"matrix": "matrix.yaml"}, "matrix.yaml: node 1: profile '1.20' is not one of",
                 id="unknown-matrix-profile"),
])
def test_a_bad_value_is_one_line_naming_its_option(options: dict[str, str], message: str, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The same refusal for `nodeconf run` and for pytest (nodeconf.fixtures.session_nodes makes it a usage error)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "matrix.yaml").write_text("- {node: vm, profile: '1.20'}\n")
    with pytest.raises(InputError) as err:
        run_settings(options.get)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)

LEDGER_AND_AUDIT = '''
import json
import os
import sys
from pathlib import Path

LEDGER = Path(os.environ["FAKE_NODE_LEDGER"])


def _note(*event):
    with LEDGER.open("a") as ledger:
        ledger.write(json.dumps([*event, os.getpid()]) + "\\n")


def _audit(event, args):  # every open of a kubelet config file, by this process (the OS-level read)
    if event == "open" and str(args[0]).endswith(".kubelet.yaml"):
        _note("read", Path(str(args[0])).name)


sys.addaudithook(_audit)
'''

FAKE_NODE = '''
import nodeconf.fixtures.node
from nodeconf.node_facts import NodeFacts

pytest_plugins = [
    "nodeconf.fixtures.node", "nodeconf.fixtures.evidence", "nodeconf.fixtures.session", "nodeconf.fixtures.matrix",
]


class FakeNode:
    image = ""
    kubelet_flags = ""

    def __init__(self, spec):
        self.spec = spec

    def facts(self):
        return NodeFacts(memory_capacity=1 << 30)

    def logs(self):
        return ""

    def kubelet_version(self):
        return None  # nodeconf runs this kubelet: it is configured, not asserted

    def running_config(self):
        return None

    def other_pods(self):
        return ()

    def configure(self, config, version=None):
        _note("configure", self.spec.name, Path(config.source).name, version, config.max_pods)
        return ()

    def close(self):
        pass


def pytest_addoption(parser):
    from nodeconf.run.options import declare_run_options

    declare_run_options(parser.getgroup("nodeconf").addoption, pytest=True)
'''

CONFTEST_TAIL = LEDGER_AND_AUDIT + FAKE_NODE + '''
nodeconf.fixtures.node.open_node = lambda spec, **_options: FakeNode(spec)
'''

# A kind node opened by its record (nodeconf/infra/kind/node_kind.py) with the fake kind of kind_fakes.py on PATH;
# only the kube driver on the cluster is a fake, whose kubelet runs as kind started it (asserted, never configured).
KIND_CONFTEST_TAIL = LEDGER_AND_AUDIT + FAKE_NODE + '''
import nodeconf.infra.kind.provision
import nodeconf.nodes.kube.opener


class FakeKubeNode(FakeNode):
    def __init__(self, context, after_close):
        super().__init__(context)
        self.after_close = after_close

    def kubelet_version(self):
        return "v1.35.0"

    def close(self):
        for action in self.after_close:
            action()


nodeconf.infra.kind.provision.wait_ready = lambda context, kubeconfig, timeout: None
nodeconf.nodes.kube.opener.open_node = lambda context, *, config_file, after_close: FakeKubeNode(context, after_close)
'''

# `nodeconf run`'s own process: the run's settings and each node's preflight (nodeconf/cli/run.py check_usage).
PREFLIGHT = LEDGER_AND_AUDIT + '''
import argparse

from nodeconf.cli import run as run_cli

parser = argparse.ArgumentParser()
run_cli.add_parser(parser.add_subparsers())
run_cli.check_usage(parser.parse_args(["run", *sys.argv[1:]]))
'''

CHECKS = '''
def test_base(kubelet):
    assert kubelet.config is kubelet.base


def test_base_again(kubelet):
    kubelet.use(kubelet.base)


def test_oracle(oracle, base_config):
    assert oracle.version and base_config.max_pods > 0
'''


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """The suites' own fixtures (suites/conftest.py) over fake nodes that log each configure, and every open of a
    `*.kubelet.yaml` file, to a ledger."""
    pytester.makeconftest((ROOT / "suites" / "conftest.py").read_text(encoding="utf-8") + CONFTEST_TAIL)
    pytester.makepyfile(test_checks=CHECKS)
    monkeypatch.setenv("FAKE_NODE_LEDGER", str(pytester.path / "ledger.jsonl"))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the subprocess imports suites.toolkit from this checkout
    return pytester


def ledger(project: pytest.Pytester) -> list[list[object]]:
    path = project.path / "ledger.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def run(project: pytest.Pytester, *args: str) -> list[list[object]]:
    result = project.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.OK, result.outlines + result.errlines
    return ledger(project)


def test_one_process_reads_the_kubelet_config_once_and_configures_each_node_once(project: pytest.Pytester) -> None:
    """Two nodes in one process share the run's --kubelet-config: one read of the file, one configure per node
    with it and the run's profile, whatever the checks ask of the `kubelet` fixture afterwards."""
    (project.path / "run.kubelet.yaml").write_text(KUBELET_CONFIG.format(50))
    events = run(project, "--node", "vm", "--node", "vm?name=b", "--kubelet-config", "run.kubelet.yaml",
                 "--profile", "1.36")
    assert [event[:2] for event in events if event[0] == "read"] == [["read", "run.kubelet.yaml"]]
    configured = sorted(event[1:5] for event in events if event[0] == "configure")
    assert configured == [["b", "run.kubelet.yaml", "1.36", 50], ["vm", "run.kubelet.yaml", "1.36", 50]]


def test_each_matrix_node_is_configured_once_with_its_own_settings(project: pytest.Pytester) -> None:
    """One xdist worker per matrix node: each process reads each kubelet config once and configures its node once,
    with the node's own config and profile (no worker rewrites the run's options)."""
    (project.path / "a.kubelet.yaml").write_text(KUBELET_CONFIG.format(40))
    (project.path / "b.kubelet.yaml").write_text(KUBELET_CONFIG.format(60))
    (project.path / "matrix.yaml").write_text(
        "- {node: vm, kubeletConfig: a.kubelet.yaml, profile: '1.35'}\n"
        "- {node: 'vm?name=b', kubeletConfig: b.kubelet.yaml}\n")
    events = run(project, "-n", "2", "--matrix", "matrix.yaml", "--profile", "1.37")
    reads = [(event[1], event[2]) for event in events if event[0] == "read"]
    assert len(reads) == len(set(reads)), f"a process read a file twice: {reads}"
    configured = sorted(event[1:5] for event in events if event[0] == "configure")
    assert configured == [["b", "b.kubelet.yaml", "1.37", 60], ["vm", "a.kubelet.yaml", "1.35", 40]]


def test_a_kind_node_reads_the_kubelet_config_once_per_process(pytester: pytest.Pytester,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """`nodeconf run --node kind --kubelet-config FILE`: its own process (settings, preflight of every kind node
    together and each alone) and pytest's (settings, the kind record opening the node) each read the file once;
    the kind record picks the cluster config from the loaded kubelet config (NoSwap: infra/kind/noswap.yaml)."""
    tools = install(pytester.path / "kind")
    for key, value in tools.env(XDG_CACHE_HOME=str(pytester.path / "xdg"),
                                FAKE_NODE_LEDGER=str(pytester.path / "ledger.jsonl"), PYTHONPATH=str(ROOT)).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("KIND_EXPERIMENTAL_PROVIDER", raising=False)
    pytester.makeconftest((ROOT / "suites" / "conftest.py").read_text(encoding="utf-8") + KIND_CONFTEST_TAIL)
    pytester.makepyfile(test_checks="def test_opened(node):\n    assert node.kubelet_version()\n")
    (pytester.path / "run.kubelet.yaml").write_text(NO_SWAP.read_text(encoding="utf-8"))
    options = ("--node", "kind", "--kubelet-config", "run.kubelet.yaml")
    preflight = subprocess.run([sys.executable, "-c", PREFLIGHT, *options], cwd=pytester.path, capture_output=True,
                               text=True, timeout=120, check=False)
    assert preflight.returncode == 0, preflight.stderr
    events = run(pytester, *options)
    reads: dict[object, list[object]] = {}
    for event in events:
        if event[0] == "read":
            reads.setdefault(event[-1], []).append(event[1])
    assert list(reads.values()) == [["run.kubelet.yaml"], ["run.kubelet.yaml"]], reads
    [create] = [call for call in tools.calls() if call[1:3] == ["create", "cluster"]]
    assert Path(create[create.index("--config") + 1]).name == "noswap.yaml"
    assert tools.clusters() == [], "closing the node deleted the cluster"
