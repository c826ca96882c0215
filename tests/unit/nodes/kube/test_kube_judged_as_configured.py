"""A cluster node is judged as its provider configured it (issue 29 items 1 and 2): its kubelet's version is the
profile, its running /configz the base config, the cgroup driver what its cgroups show."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nodeconf.fixtures.node_profile import NoProfile, node_base_config, node_profile
from nodeconf.loader import load_kubelet_config
from nodeconf.nodes.kube.node import KubeNode
from tests.unit.nodes.kube.kube_shapes import SHAPES
from tests.unit.nodes.kube.suite_on_shape import open_shape

EKS = next(s for s in SHAPES if s.name == "eks-al2023")
KUBEADM = next(s for s in SHAPES if s.name == "kubeadm-containerd2")


@pytest.fixture
def eks(tmp_path: Path) -> Iterator[KubeNode]:
    node = open_shape(EKS, tmp_path)
    yield node
    node.close()


def test_the_profile_is_the_nodes_kubelet_version(eks: KubeNode) -> None:
    assert node_profile(eks, "1.38") == "1.35", "--profile on a cluster node is an assertion, not the oracle's"


@pytest.mark.parametrize("version", ["v1.31.9", "v1.39.0"])
def test_a_kubelet_without_a_profile_is_refused_in_one_line(eks: KubeNode, version: str) -> None:
    eks.node_object()["status"]["nodeInfo"]["kubeletVersion"] = version
    minor = version[1:5]
    with pytest.raises(NoProfile) as err:
        node_profile(eks, "1.38")
    assert str(err.value) == f"{minor}: no profile; nodeconf knows 1.34–1.38"


def test_the_base_config_is_what_the_provider_set(eks: KubeNode) -> None:
    """nodeadm's maxPods, kubeReserved and reserved cgroups are the node's truth, whatever --kubelet-config says."""
    base = node_base_config(eks, load_kubelet_config("workloads/requests-limits/kubelet-config/reserved.yaml"))
    assert (base.max_pods, base.kube_reserved_cgroup, base.system_reserved_cgroup) == (29, "/runtime", "/system")
    assert {k: str(v) for k, v in base.kube_reserved.items()} == {
        "cpu": "70m", "ephemeral-storage": "1Gi", "memory": "574Mi"}
    assert eks.configure(base) == ()


def test_the_cgroup_driver_comes_from_the_nodes_cgroups(tmp_path: Path) -> None:
    """kubeadm's file says cgroupfs, containerd 2 runs systemd cgroups (the fake's kubepods is a .slice): the node
    is judged as systemd and the disagreement is reported."""
    node = open_shape(KUBEADM, tmp_path)
    try:
        assert node.running_config().cgroup_driver == "systemd"  # type: ignore[union-attr]
        assert "cgroup driver: /configz of node kind-control-plane says cgroupfs, its cgroups " \
               "(kubelet.slice/kubelet-kubepods.slice) are the systemd driver's: judged as systemd" in node.logs()
    finally:
        node.close()
