"""Shared and managed nodes (issue 29 item 4): nodeconf's pods tolerate the chosen node's NoSchedule and NoExecute
taints; virtual nodes (EKS Fargate, virtual-kubelet such as AKS virtual nodes) are never chosen, with the reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kube_shapes import SHAPES
from suite_on_shape import open_shape, shape_node_doc
from test_nodes_kube import RES_DEMO

from nodeconf.errors import InputError
from nodeconf.nodes.base import NodeError
from nodeconf.nodes.kube.fanout import expand_nodes
from nodeconf.nodes.kube.node import PROBE_NAME
from nodeconf.nodes.kube.opener import choose_node
from nodeconf.nodes.kube.pods import node_tolerations
from nodeconf.nodes.spec import parse_node_spec

EKS = next(s for s in SHAPES if s.name == "eks-al2023")
# Taints as a provider sets them: a dedicated node group (NoSchedule), a node being drained (NoExecute, the node
# lifecycle controller's unreachable taint), and one that refuses nothing (PreferNoSchedule).
TAINTS = [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"},
          {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
          {"key": "spot", "value": "true", "effect": "PreferNoSchedule"}]
TOLERATIONS = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"},
               {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}]


def named(name: str, **labels: str) -> dict[str, Any]:
    doc = shape_node_doc(EKS)
    doc["metadata"].update(name=name, labels={**doc["metadata"]["labels"], **labels})
    return doc


def test_tolerations_follow_the_nodes_refusing_taints() -> None:
    assert node_tolerations({"spec": {"taints": TAINTS}}) == TOLERATIONS
    assert node_tolerations({"spec": {}}) == []


def test_check_pods_and_the_probe_tolerate_the_taints(tmp_path: Path) -> None:
    node = open_shape(EKS, tmp_path)
    fake: Any = node.api
    sent: dict[str, dict[str, Any]] = {}
    create = fake.create_pod

    def recorded(namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
        sent[manifest["metadata"]["name"]] = manifest
        created: dict[str, Any] = create(namespace, manifest)
        return created

    fake.create_pod = recorded
    try:
        node.node_object()["spec"]["taints"] = TAINTS
        node.facts()  # the cpu-weight probe pod
        node.run(RES_DEMO)
        assert sent[PROBE_NAME]["spec"]["tolerations"] == TOLERATIONS
        assert sent[RES_DEMO.name]["spec"]["tolerations"] == TOLERATIONS
    finally:
        node.close()


@pytest.mark.parametrize(("labels", "what"), [
    pytest.param({"eks.amazonaws.com/compute-type": "fargate"}, "EKS Fargate", id="fargate"),
    pytest.param({"type": "virtual-kubelet"}, "virtual-kubelet", id="virtual-kubelet"),
])
def test_virtual_nodes_are_never_chosen(labels: dict[str, str], what: str) -> None:
    virtual, real = named("fargate-ip-10-0-1-1.eu-west-1.compute.internal", **labels), named("ip-10-0-2-2")
    assert choose_node([virtual, real], None) is real, "the virtual node sorts first, it is still not chosen"
    with pytest.raises(NodeError, match=f"is a virtual node \\({what}"):
        choose_node([virtual, real], "fargate-ip-10-0-1-1.eu-west-1.compute.internal")
    spec = parse_node_spec("kube?nodes=all")
    assert [s.option("node") for s in expand_nodes(spec, [virtual, real])] == ["ip-10-0-2-2"]
    with pytest.raises(InputError, match=f"virtual node \\({what}"):
        expand_nodes(spec, [virtual])
