"""Shared and managed nodes (issue 29 item 4): nodeconf's pods tolerate the chosen node's NoSchedule and NoExecute
taints; virtual nodes (EKS Fargate, virtual-kubelet such as AKS virtual nodes) are never chosen, with the reason."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from nodeconf.errors import InputError
from nodeconf.manifest import Resources
from nodeconf.nodes.base import NodeError, NotApplicable
from nodeconf.nodes.kube.fanout import expand_nodes
from nodeconf.nodes.kube.node import PROBE_NAME
from nodeconf.nodes.kube.opener import choose_node
from nodeconf.nodes.kube.pods import HELPER_NAME, node_tolerations
from nodeconf.nodes.spec import parse_node_spec
from nodeconf.quantity import Quantity
from tests.unit.nodes.kube.fakes import RES_DEMO
from tests.unit.nodes.kube.kube_shapes import SHAPES
from tests.unit.nodes.kube.suite_on_shape import open_shape, shape_node_doc

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


# --- permissions told plainly (issue 29 item 5) -----------------------------------------------------------------

READER_REFUSALS = [
    pytest.param('pods "nodeconf-reader" is forbidden: unable to validate against any security context constraint: '
                 '[provider "anyuid": Forbidden: not usable by user or serviceaccount]', "the privileged SCC",
                 id="openshift-scc"),
    pytest.param('pods "nodeconf-reader" is forbidden: violates PodSecurity "baseline:latest": host namespaces '
                 "(hostPID=true), privileged", "pod-security.kubernetes.io/enforce=privileged", id="psa"),
    pytest.param('admission webhook "validation.gatekeeper.sh" denied the request: [psp-privileged-container] '
                 "Privileged container is not allowed: reader", "app.kubernetes.io/managed-by=nodeconf",
                 id="policy-engine"),
    pytest.param('pods "nodeconf-reader" is forbidden: GKE Warden rejected the request because it violates one or '
                 "more constraints", "GKE Standard node pool", id="autopilot"),
    pytest.param('pods is forbidden: User "dev" cannot create resource "pods" in API group "" in the namespace '
                 '"nodeconf-abc123"', "`create` on pods", id="rbac"),
]


@pytest.mark.parametrize(("message", "need"), READER_REFUSALS)
def test_a_refused_reader_says_what_the_cluster_must_allow(tmp_path: Path, message: str, need: str) -> None:
    with pytest.raises(NodeError) as err:
        open_shape(EKS, tmp_path, refuse={HELPER_NAME: (403, message, "Forbidden")})
    text = str(err.value)
    assert text.startswith("the evidence reader cannot run on node kind-control-plane: ") and need in text
    assert message in text and "\n" not in text


def test_the_reader_outlives_the_service_account_race_and_has_a_deadline(tmp_path: Path) -> None:
    race = ('pods "nodeconf-reader" is forbidden: error looking up service account nodeconf-abc123/default: '
            'serviceaccount "default" not found')
    node = open_shape(EKS, tmp_path, refuse={HELPER_NAME: (403, race, "Forbidden", "once")})
    try:
        reader = node.api.read_pod(node.base_namespace, HELPER_NAME)
        assert reader["spec"]["activeDeadlineSeconds"] == 12 * 3600
    finally:
        node.close()


def test_a_pod_field_the_api_server_drops_makes_the_check_not_applicable(tmp_path: Path) -> None:
    """An API server with PodLevelResources off stores the pod without spec.resources (dropDisabledFields)."""
    node = open_shape(EKS, tmp_path)
    fake: Any = node.api
    create = fake.create_pod

    def gate_off(namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
        manifest = {**manifest, "spec": {k: v for k, v in manifest["spec"].items() if k != "resources"}}
        stored: dict[str, Any] = create(namespace, manifest)
        return stored

    fake.create_pod = gate_off
    pod = replace(RES_DEMO, resources=Resources(requests={"cpu": Quantity.parse("1")},
                                                limits={"cpu": Quantity.parse("1")}))
    try:
        with pytest.raises(NotApplicable, match=r"dropped spec\.resources .*PodLevelResources feature gate is off"):
            node.run(pod)
        assert not [key for key in fake.pods if key[1] == pod.name], "the pod is deleted"
    finally:
        node.close()
