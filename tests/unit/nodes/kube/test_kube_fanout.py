"""Whole-cluster runs (`kube:CONTEXT?nodes=all|SELECTOR`): the one request that lists the nodes (through the real
kubernetes client, against a local server playing the API server), which recorded nodes are kept and why the others
are dropped, the refusals, the names in check ids, and `nodeconf run` handing pytest one --node per node."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nodeconf.cli import run as run_cli
from nodeconf.cli.main import main
from nodeconf.errors import InputError
from nodeconf.nodes.kube.fanout import expand_nodes, run_names
from nodeconf.nodes.kube.node_kind import KUBE, KubeSpec
from nodeconf.nodes.spec import parse_node_spec
from nodeconf.run.matrix import parse_matrix
from tests.unit.nodes.kube.kube_api_server import ApiServer, write_kubeconfig
from tests.unit.nodes.kube.kube_node_list import NODES, node_list

ALL_KEPT = ["kind-control-plane", "kind-worker", "kind-worker2", "legacy-1"]


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiServer]:
    """The API server, the current context `local` of $KUBECONFIG pointing at it."""
    api_server = ApiServer()
    monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(tmp_path / "kubeconfig", api_server.url)))
    yield api_server
    api_server.close()


def requests(server: ApiServer) -> list[tuple[str, str, dict[str, list[str]]]]:
    return [(seen.method, seen.path, seen.query) for seen in server.seen]


def test_all_lists_the_nodes_once_and_keeps_the_ready_linux_ones(server: ApiServer) -> None:
    server.answers[("GET", "/api/v1/nodes")] = (200, node_list())
    specs = KUBE.expand(parse_node_spec("kube:local?nodes=all"))
    assert requests(server) == [("GET", "/api/v1/nodes", {})]  # no labelSelector: every node
    assert [spec.display for spec in specs] == [f"kube:local?node={name}&name={name}" for name in ALL_KEPT]
    first = specs[0]
    assert (KubeSpec.of(first).context, first.option("node"), first.name) == ("local", "kind-control-plane",
                                                                          "kind-control-plane")


@pytest.mark.parametrize(("selector", "sent"), [
    pytest.param("node-role.kubernetes.io/worker", "node-role.kubernetes.io/worker", id="label-exists"),
    pytest.param("pool=gpu,kubernetes.io/arch!=arm64", "pool=gpu,kubernetes.io/arch!=arm64", id="equality"),
    pytest.param("pool%20in%20(gpu,tpu)", "pool in (gpu,tpu)", id="set-based-quoted"),
    pytest.param("!node-role.kubernetes.io/control-plane", "!node-role.kubernetes.io/control-plane",
                 id="no-control-planes"),
])
def test_a_selector_is_sent_as_the_label_selector(server: ApiServer, selector: str, sent: str) -> None:
    server.answers[("GET", "/api/v1/nodes")] = (200, node_list("kind-worker"))  # what the server matched
    specs = KUBE.expand(parse_node_spec(f"kube?nodes={selector}"))
    assert requests(server) == [("GET", "/api/v1/nodes", {"labelSelector": [sent]})]
    assert [spec.display for spec in specs] == ["kube?node=kind-worker&name=kind-worker"]  # the current context


def test_a_spec_without_nodes_is_not_expanded(server: ApiServer) -> None:
    spec = parse_node_spec("kube:local?node=kind-worker")
    assert KUBE.expand(spec) == [spec] and not server.seen


@pytest.mark.parametrize(("names", "spec", "problem"), [
    pytest.param(("kind-worker3", "akswin000000"), "kube:local?nodes=all",
                 "kube:local?nodes=all: no Ready Linux node matches nodes=all (2 seen: kind-worker3 not Ready; "
                 "akswin000000 not Linux (kubernetes.io/os=windows))", id="none-ready-linux"),
    pytest.param(("nothing-matches",), "kube:local?nodes=pool=tpu",
                 "kube:local?nodes=pool=tpu: no Ready Linux node matches nodes=pool=tpu (0 seen)", id="none-listed"),
    pytest.param((), "kube:local?nodes=all&max=3",
                 "kube:local?nodes=all&max=3: 4 Ready Linux nodes match, more than max=3 (one pytest worker per "
                 "node): narrow nodes= with a label selector (e.g. nodes=node-role.kubernetes.io/worker) or raise "
                 "max=", id="over-max"),
])
def test_refusals_are_one_line(server: ApiServer, names: tuple[str, ...], spec: str, problem: str) -> None:
    server.answers[("GET", "/api/v1/nodes")] = (200, node_list(*names))
    with pytest.raises(InputError) as err:
        KUBE.expand(parse_node_spec(spec))
    assert (err.value.problem, err.value.field) == (problem, "--node")


def windows(index: int) -> dict[str, Any]:
    node = {**NODES[4], "metadata": {**NODES[4]["metadata"], "name": f"akswin{index:06d}"}}
    return node


def test_a_refusal_names_at_most_four_dropped_nodes() -> None:
    with pytest.raises(InputError) as err:
        expand_nodes(parse_node_spec("kube:c?nodes=all"), [windows(i) for i in range(10)])
    assert err.value.problem == (
        "kube:c?nodes=all: no Ready Linux node matches nodes=all (10 seen: "
        + "; ".join(f"akswin{i:06d} not Linux (kubernetes.io/os=windows)" for i in range(4)) + "; 6 more)")
    assert len(str(err.value)) <= 300


def test_the_default_cap_is_twenty_nodes() -> None:
    many = [{**NODES[1], "metadata": {**NODES[1]["metadata"], "name": f"w{i:02d}"}} for i in range(21)]
    assert len(expand_nodes(parse_node_spec("kube:c?nodes=all&max=21"), many)) == 21
    with pytest.raises(InputError, match=r"21 Ready Linux nodes match, more than max=20 "):
        expand_nodes(parse_node_spec("kube:c?nodes=all"), many)


@pytest.mark.parametrize(("message", "answer"), [
    pytest.param("Kubernetes API error 400: unable to parse requirement: found 'a', expected: ',' or 'end of "
                 "string'", (400, {"kind": "Status", "status": "Failure", "reason": "BadRequest", "code": 400,
                                   "message": "unable to parse requirement: found 'a', expected: ',' or 'end of "
                                              "string'"}), id="bad-selector"),
    pytest.param('Kubernetes API error 403: nodes is forbidden: User "dev" cannot list resource "nodes"',
                 (403, {"kind": "Status", "status": "Failure", "reason": "Forbidden", "code": 403,
                        "message": 'nodes is forbidden: User "dev" cannot list resource "nodes"'}), id="forbidden"),
])
def test_api_errors_are_one_line(server: ApiServer, message: str, answer: tuple[int, Any]) -> None:
    server.answers[("GET", "/api/v1/nodes")] = answer
    with pytest.raises(InputError) as err:
        KUBE.expand(parse_node_spec("kube:local?nodes=x%20a"))
    assert err.value.problem == f"kube:local?nodes=x%20a: cannot list the cluster's nodes: {message}"


def test_an_unreachable_cluster_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:1")))
    with pytest.raises(InputError) as err:
        KUBE.expand(parse_node_spec("kube:local?nodes=all"))
    assert err.value.problem.startswith("kube:local?nodes=all: cannot list the cluster's nodes: context local: "
                                        "Kubernetes API at http://127.0.0.1:1 not reachable")


@pytest.mark.parametrize(("nodes", "prefix", "names"), [
    pytest.param(["kind-worker", "kind-worker2"], None, ["kind-worker", "kind-worker2"], id="kind"),
    pytest.param(["w", "w-2"], None, ["w_", "w-2"], id="prefix-before-dash"),
    pytest.param(["kind-worker"], "east", ["east-kind-worker"], id="name-prefix"),
    pytest.param(["ip-10-0-1-23.eu-west-1.compute.internal"], None, ["ip-10-0-1-23.eu-west-1.compute.internal"],
                 id="eks"),
])
def test_names_in_check_ids(nodes: list[str], prefix: str | None, names: list[str]) -> None:
    assert run_names(nodes, prefix) == names


def test_a_name_too_long_for_an_id_is_cut_and_told_apart() -> None:
    long_a, long_b = "n" * 70 + "-a", "n" * 70 + "-b"  # node names may be 253 characters, ids 63
    names = run_names([long_a, long_b], None)
    assert all(len(name) <= 63 and name.startswith("n" * 50) for name in names)
    assert names[0] != names[1]
    for name in names:  # every name is a valid name= (check ids, file names)
        assert parse_node_spec(f"kube:c?node=x&name={name}").name == name


def test_two_clusters_with_the_same_node_names_are_told_apart_by_name() -> None:
    nodes = [NODES[0]]
    east = expand_nodes(parse_node_spec("kube:east?nodes=all&name=east"), nodes)
    west = expand_nodes(parse_node_spec("kube:west?nodes=all&name=west"), nodes)
    assert [spec.display for spec in east + west] == [
        "kube:east?node=kind-control-plane&name=east-kind-control-plane",
        "kube:west?node=kind-control-plane&name=west-kind-control-plane"]


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    run_cli.add_parser(parser.add_subparsers())
    return parser.parse_args(["run", *argv])


def test_nodeconf_run_gives_pytest_one_node_and_one_worker_per_cluster_node(server: ApiServer) -> None:
    server.answers[("GET", "/api/v1/nodes")] = (200, node_list())
    args = _args("--node", "kube:local?nodes=all", "--node", "vm?name=ref", "--", "-k", "swap")
    argv = run_cli.pytest_argv(args, run_cli.check_usage(args))
    assert requests(server) == [("GET", "/api/v1/nodes", {})]  # listed once, by the controller
    start = argv.index("--node=vm?name=ref") - len(ALL_KEPT)
    assert argv[start:start + len(ALL_KEPT) + 5] == [
        *(f"--node=kube:local?node={name}&name={name}" for name in ALL_KEPT), "--node=vm?name=ref",
        "-n", "5", "--dist", "load"]
    assert argv[-2:] == ["-k", "swap"]


def test_nodeconf_run_refuses_before_anything_starts(server: ApiServer, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    server.answers[("GET", "/api/v1/nodes")] = (200, node_list("akswin000000"))
    assert main(["run", "--reports", str(tmp_path / "reports"), "--node", "kube:local?nodes=all"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "nodeconf: --node: kube:local?nodes=all: no Ready Linux node matches nodes=all (1 seen: akswin000000 not "
        "Linux (kubernetes.io/os=windows))"]
    assert not (tmp_path / "reports").exists()


def test_a_matrix_file_cannot_hold_a_whole_cluster_spec(tmp_path: Path) -> None:
    (tmp_path / "nodes.yaml").write_text("- node: 'kube:c?nodes=all'\n")
    with pytest.raises(InputError) as err:
        parse_matrix(tmp_path / "nodes.yaml")
    assert err.value.problem.endswith("node 1: nodes= (a whole-cluster run) goes with --node, not in a matrix "
                                      "file; list the cluster's nodes as kube:CONTEXT?node=NAME")
