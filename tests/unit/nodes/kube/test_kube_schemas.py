"""The objects the kube driver sends are valid for the API of the oldest Kubernetes nodeconf supports and of the
newest kubernetes-validate ships (tests/unit/nodes/kube/kube_schema.py; FakeKube checks every pod, namespace, object and
patch it is sent, so every driver and shape test validates what it sends; ApiServer checks what the real client
puts on the wire); a broken object fails."""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from nodeconf.nodes.kube.api import ClientKubeApi, load_kube_context
from tests.unit.nodes.kube import kube_schema
from tests.unit.nodes.kube.fakes import FakeKube, FakeNode
from tests.unit.nodes.kube.kube_api_server import ApiServer, write_kubeconfig
from tests.unit.nodes.kube.kube_shapes import SHAPES
from tests.unit.nodes.kube.suite_on_shape import open_shape

POD: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"},
                       "spec": {"restartPolicy": "Never",
                                "containers": [{"name": "c", "image": "docker.io/library/busybox:1.37",
                                                "resources": {"limits": {"memory": "64Mi", "cpu": "250m"}}}]}}


def test_the_versions_are_the_oldest_profile_and_the_newest_shipped() -> None:
    oldest, newest = kube_schema.versions()
    assert oldest == "1.34"
    assert tuple(map(int, newest.split("."))) >= (1, 37)


def test_a_valid_pod_and_resize_patch_pass() -> None:
    kube_schema.check(copy.deepcopy(POD))
    kube_schema.check({"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "500m"}}}]}},
                      "v1", "Pod", patch=True)


def broken(path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    pod = copy.deepcopy(POD)
    target: Any = pod
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return pod


@pytest.mark.parametrize(("obj", "patch", "message"), [
    (broken(("spec", "containers", 0, "memoryLimit"), "64Mi"), False,
     "at spec/containers/0: Additional properties are not allowed ('memoryLimit' was unexpected)"),
    (broken(("spec", "activeDeadlineSeconds"), "600"), False,
     "at spec/activeDeadlineSeconds: '600' is not of type 'integer'"),
    (broken(("spec", "tolerations"), {"operator": "Exists"}), False, "at spec/tolerations: {'operator': 'Exists'} "
     "is not of type 'array'"),
    ({"spec": {"containers": [{"name": "c", "resource": {}}]}}, True,
     "Pod patch invalid for Kubernetes 1.34 at spec/containers/0: Additional properties are not allowed"),
    ({"metadata": {"annotations": {"nodeconf.io/lease": 5}}}, True,
     "at metadata/annotations/nodeconf.io/lease: 5 is not of type 'string'"),
], ids=["unknown-field", "wrong-type", "object-for-list", "patch-unknown-field", "patch-wrong-type"])
def test_a_broken_object_fails(obj: dict[str, Any], patch: bool, message: str) -> None:
    kind = "Namespace" if "metadata" in obj and "kind" not in obj else "Pod"
    with pytest.raises(AssertionError, match="invalid for Kubernetes") as failed:
        kube_schema.check(obj, "v1", kind, patch=patch)
    assert message in str(failed.value)


def test_the_fake_api_server_refuses_a_broken_pod(tmp_path: Path) -> None:
    fake = FakeKube(FakeNode(tmp_path))
    fake.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}})
    with pytest.raises(AssertionError, match="'memoryLimit' was unexpected"):
        fake.create_pod("n", broken(("spec", "containers", 0, "memoryLimit"), "64Mi"))


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_starting_the_driver_on_a_shape_sends_only_valid_objects(shape: Any, tmp_path: Path) -> None:
    """The run's namespace, its lease patch, the programs ConfigMap and the probe pod are each checked under both
    versions (check pods, the reader and resize patches are checked by the driver and suite tests)."""
    before = Counter(kube_schema.validated)
    node = open_shape(shape, tmp_path)
    node.close()
    sent = kube_schema.validated - before
    for version in kube_schema.versions():
        for kind in ("Namespace", "Namespace patch", "ConfigMap", "Pod"):
            assert sent[(kind, version)] >= 1, (kind, sent)


@pytest.mark.parametrize(("send", "message"), [
    (lambda api: api.patch_pod_resize("n", "p", {"spec": {"containers": [{"name": "c", "resources": "1"}]}}),
     "Pod patch invalid for Kubernetes 1.34 at spec/containers/0/resources: '1' is not of type 'object'"),
    (lambda api: api.patch_namespace("n", {"metadata": {"labels": {"a": 1}}}),
     "PATCH /api/v1/namespaces/n: Namespace patch invalid"),
], ids=["resize-patch", "namespace-patch"])
def test_the_http_api_server_fails_on_a_broken_body_the_real_client_sends(tmp_path: Path, send: Any,
                                                                          message: str) -> None:
    """What the kubernetes client puts on the wire is checked too: ApiServer.close() names each invalid body. (A
    patch is a plain dict to the client, which checks nothing in it; a typed create it checks itself.)"""
    server = ApiServer()
    client, _ = load_kube_context(None, str(write_kubeconfig(tmp_path / "kubeconfig", server.url)))
    api = ClientKubeApi(client, timeout=10)
    try:
        send(api)
    finally:
        api.close()
    with pytest.raises(AssertionError, match="invalid for the Kubernetes API") as failed:
        server.close()
    assert message in str(failed.value)
