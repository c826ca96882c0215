"""A run's nodes: the matrix file, name= on a spec, the refusals (issue 14 items 1 and 5), and `nodeconf run`
refusing a bad matrix with one line and exit 2 before pytest starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeconf.cli.main import main
from nodeconf.errors import InputError, NodeSpecError
from nodeconf.nodes.spec import parse_node_spec
from nodeconf.run.check_ids import node_of_test
from nodeconf.run.matrix import RunNode, parse_matrix, run_nodes, share_host_cpus


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "matrix.yaml"
    path.write_text(text)
    return path


def test_a_matrix_lists_nodes_with_their_own_settings(tmp_path: Path) -> None:
    (tmp_path / "kubelet.yaml").write_text("kind: KubeletConfiguration\n")
    nodes = parse_matrix(write(tmp_path, "- node: vm\n- {node: 'vm?memory=512', name: small, profile: '1.35', "
                                         "kubeletConfig: kubelet.yaml}\n"))
    assert [node.name for node in nodes] == ["vm", "small"]
    assert nodes[1].spec.display == "vm?memory=512&name=small"
    assert nodes[1].profile == "1.35"
    assert nodes[1].kubelet_config == tmp_path / "kubelet.yaml"  # relative to the matrix file
    assert nodes[0] == RunNode(parse_node_spec("vm"))


@pytest.mark.parametrize(("text", "message"), [
    pytest.param("- {node: vm, image: x}\n", "node 1: unknown key 'image' (allowed: node, kubeletConfig", id="key"),
    pytest.param("- node: vm\n- node: vm\n", "two nodes are named 'vm'", id="duplicate"),
    pytest.param("- {node: vm, name: a}\n- {node: local, name: a}\n", "two nodes are named 'a'", id="dup-named"),
    pytest.param("- {node: vm}\n- {node: vm, name: vm-b}\n", "node names 'vm' and 'vm-b': one is the other's prefix",
                 id="prefix"),
    pytest.param("- node: 'vm?memory=1'\n", "node 1: node spec 'vm?memory=1': memory must be", id="bad-spec"),
    pytest.param("- node: warp\n", "node 1: unknown node spec 'warp'", id="unknown-scheme"),
    pytest.param("- {node: vm, name: 'a b'}\n", "node 1: name must be 1-63 letters", id="bad-name"),
    pytest.param("- {node: vm, profile: latest}\n", 'profile must look like "1.36"', id="bad-profile"),
    pytest.param("- {node: vm, kubeletConfig: none.yaml}\n", "kubeletConfig none.yaml is not a file", id="config"),
    pytest.param("- {name: a}\n", "node 1: needs node: SPEC", id="no-spec"),
    pytest.param("- vm\n", "node 1: must be a mapping", id="not-mapping"),
    pytest.param("node: vm\n", "a non-empty YAML list of nodes", id="not-list"),
    pytest.param("[]\n", "a non-empty YAML list of nodes", id="empty"),
    pytest.param("- {node: vm\n", "not YAML", id="yaml"),
])
def test_a_bad_matrix_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_matrix(write(tmp_path, text))
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_name_option_names_the_node() -> None:
    assert parse_node_spec("vm?name=b").name == "b"
    assert parse_node_spec("kube:kind-a?name=a").name == "a"
    assert parse_node_spec("vm").name == "vm"
    with pytest.raises(NodeSpecError, match="name= must be 1-63 letters"):
        parse_node_spec("vm?name=-x")


def test_run_nodes_from_node_options_or_a_matrix(tmp_path: Path) -> None:
    assert [node.name for node in run_nodes(None, None)] == ["vm"]
    specs = [parse_node_spec("vm"), parse_node_spec("vm?name=b")]
    assert [node.name for node in run_nodes(specs, None)] == ["vm", "b"]
    with pytest.raises(InputError, match="two nodes are named 'vm'"):
        run_nodes([parse_node_spec("vm"), parse_node_spec("vm?cpus=1")], None)
    with pytest.raises(InputError, match="not both"):
        run_nodes(specs, write(tmp_path, "- node: vm\n"))


@pytest.mark.parametrize(("specs", "host_cpus", "expected"), [
    pytest.param(["vm"], 2, ["vm"], id="one-vm-keeps-its-default"),
    pytest.param(["vm", "vm?name=b"], 2, ["vm?cpus=1", "vm?name=b&cpus=1"], id="two-share-two-cores"),
    pytest.param(["vm", "vm?name=b"], 8, ["vm?cpus=4", "vm?name=b&cpus=4"], id="two-share-eight-cores"),
    pytest.param(["vm", "vm?name=b", "vm?name=c"], 2, ["vm?cpus=1", "vm?name=b&cpus=1", "vm?name=c&cpus=1"],
                 id="at-least-one"),
    pytest.param(["vm?cpus=2", "vm?name=b"], 2, ["vm?cpus=2", "vm?name=b&cpus=1"], id="given-cpus-kept"),
    pytest.param(["vm", "local"], 2, ["vm", "local"], id="one-local-vm"),
])
def test_local_vms_of_one_run_share_the_host_cores(specs: list[str], host_cpus: int, expected: list[str]) -> None:
    nodes = share_host_cpus([RunNode(parse_node_spec(text)) for text in specs], host_cpus)
    assert [node.spec.display for node in nodes] == expected
    assert [node.spec.vm.cpus for node in nodes] == [
        int(text.rpartition("cpus=")[2]) if "cpus=" in text else None for text in expected]


@pytest.mark.parametrize(("test_id", "node"), [
    ("suites/a.py::test_x[vm]", "vm"), ("test_x[b-burstable]", "b"),
    ("test_x[ssh-10.0.0.1-22-case]", "ssh-10.0.0.1-22"),
    ("test_x", None), ("test_x[burstable]", None), ("test_x[vmx]", None),
])
def test_node_of_test(test_id: str, node: str | None) -> None:
    assert node_of_test(test_id, ["vm", "b", "ssh-10.0.0.1-22"]) == node


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(["--matrix", "{dir}/matrix.yaml"], "unknown key 'colour'", id="unknown-key"),
    pytest.param(["--node", "vm", "--node", "vm"], "two nodes are named 'vm'", id="same-name"),
    pytest.param(["--matrix", "{dir}/missing.yaml"], "cannot read the matrix file", id="missing"),
])
def test_nodeconf_run_refuses_before_starting_anything(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch, args: list[str],
                                                       message: str) -> None:
    write(tmp_path, "- {node: vm, colour: red}\n")
    started: list[object] = []
    monkeypatch.setattr("nodeconf.cli.run._run_pytest", started.append)
    code = main(["run", *(arg.format(dir=tmp_path) for arg in args), "--reports", str(tmp_path / "reports")])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not started
