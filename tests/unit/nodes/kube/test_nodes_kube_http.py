"""ClientKubeApi through the real kubernetes client against a local HTTP server playing the API server:
the paths, queries, verbs, content types and bodies the driver sends (core/v1 REST paths)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nodeconf.nodes.kube.api import ClientKubeApi, KubeApiError, load_kube_context
from nodeconf.nodes.kube.node import DEFAULT_HELPER_IMAGE, DEFAULT_WORKLOAD_IMAGE
from nodeconf.nodes.kube.opener import ENV_HELPER_IMAGE, ENV_MIRROR, ENV_WORKLOAD_IMAGE, image
from tests.unit.nodes.kube.kube_api_server import ApiServer, write_kubeconfig


@pytest.fixture
def server() -> Iterator[ApiServer]:
    api_server = ApiServer()
    yield api_server
    api_server.close()


@pytest.fixture
def api(server: ApiServer, tmp_path: Path) -> Iterator[ClientKubeApi]:
    path = write_kubeconfig(tmp_path / "kubeconfig", server.url)
    client, _ = load_kube_context(None, str(path))
    kube_api = ClientKubeApi(client, timeout=10)
    yield kube_api
    kube_api.close()


def test_reads_decode_the_raw_json(server: ApiServer, api: ClientKubeApi) -> None:
    node = {"kind": "Node", "metadata": {"name": "n1"}, "status": {"nodeInfo": {"swap": {"capacity": 4096}}}}
    server.answers[("GET", "/api/v1/nodes/n1")] = (200, node)
    server.answers[("GET", "/api/v1/nodes")] = (200, {"kind": "NodeList", "items": [node]})
    assert api.read_node("n1") == node  # fields the client's models may not know survive
    assert api.list_nodes() == [node]


def test_node_proxy_returns_text(server: ApiServer, api: ClientKubeApi) -> None:
    server.answers[("GET", "/api/v1/nodes/n1/proxy/configz")] = (200, '{"kubeletconfig": {"maxPods": 110}}')
    server.answers[("GET", "/api/v1/nodes/n1/proxy/metrics")] = (200, "kubelet_node_swap_allocated_bytes 0\n")
    assert json.loads(api.node_proxy("n1", "configz")) == {"kubeletconfig": {"maxPods": 110}}
    assert api.node_proxy("n1", "metrics") == "kubelet_node_swap_allocated_bytes 0\n"


def test_pod_lifecycle_requests(server: ApiServer, api: ClientKubeApi) -> None:
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}}
    server.answers[("POST", "/api/v1/namespaces/ns/pods")] = (201, manifest)
    assert api.create_pod("ns", manifest) == manifest
    assert (server.last().method, server.last().body) == ("POST", manifest)

    api.delete_pod("ns", "p", 0)
    assert (server.last().method, server.last().path) == ("DELETE", "/api/v1/namespaces/ns/pods/p")
    assert server.last().query["gracePeriodSeconds"] == ["0"]

    api.list_events("ns", "involvedObject.name=p,involvedObject.kind=Pod")
    assert server.last().path == "/api/v1/namespaces/ns/events"
    assert server.last().query["fieldSelector"] == ["involvedObject.name=p,involvedObject.kind=Pod"]

    server.answers[("GET", "/api/v1/namespaces/ns/pods/p/log")] = (200, "hello\n")
    assert api.pod_log("ns", "p", "c", True) == "hello\n"
    assert server.last().query["container"] == ["c"] and server.last().query["previous"] == ["true"]


def test_resize_is_a_strategic_merge_patch_on_the_subresource(server: ApiServer, api: ClientKubeApi) -> None:
    patch = {"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1"}}}]}}
    api.patch_pod_resize("ns", "p", patch)
    seen = server.last()
    assert (seen.method, seen.path) == ("PATCH", "/api/v1/namespaces/ns/pods/p/resize")
    assert seen.content_type == "application/strategic-merge-patch+json"
    assert seen.body == patch


@pytest.mark.parametrize(("kind", "plural"), [("ConfigMap", "configmaps"), ("LimitRange", "limitranges"),
                                              ("ResourceQuota", "resourcequotas")])
def test_namespaced_objects(server: ApiServer, api: ClientKubeApi, kind: str, plural: str) -> None:
    manifest = {"apiVersion": "v1", "kind": kind, "metadata": {"name": "o", "namespace": "ns"}}
    api.create_object("ns", manifest)
    assert (server.last().method, server.last().path) == ("POST", f"/api/v1/namespaces/ns/{plural}")
    api.read_object(kind, "ns", "o")
    assert (server.last().method, server.last().path) == ("GET", f"/api/v1/namespaces/ns/{plural}/o")
    api.delete_object(kind, "ns", "o")
    assert (server.last().method, server.last().path) == ("DELETE", f"/api/v1/namespaces/ns/{plural}/o")


def test_other_kinds_are_refused_before_any_request(server: ApiServer, api: ClientKubeApi) -> None:
    with pytest.raises(KubeApiError, match="does not handle Secret objects"):
        api.create_object("ns", {"kind": "Secret", "metadata": {"name": "s"}})
    assert server.seen == []


def test_namespaces(server: ApiServer, api: ClientKubeApi) -> None:
    api.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "nodeconf-x"}})
    assert (server.last().method, server.last().path) == ("POST", "/api/v1/namespaces")
    api.delete_namespace("nodeconf-x")
    assert (server.last().method, server.last().path) == ("DELETE", "/api/v1/namespaces/nodeconf-x")


@pytest.mark.parametrize(("status", "body", "message"), [
    pytest.param(403, {"kind": "Status", "message": 'pods "big" is forbidden: exceeded quota: budget'},
                 'pods "big" is forbidden: exceeded quota: budget', id="status-message"),
    pytest.param(404, {"kind": "Status", "message": 'pods "p" not found'}, 'pods "p" not found', id="not-found"),
    pytest.param(500, "boom", "boom", id="plain-text"),
])
def test_error_answers_keep_status_and_message(server: ApiServer, api: ClientKubeApi, status: int, body: Any,
                                               message: str) -> None:
    server.answers[("POST", "/api/v1/namespaces/ns/pods")] = (status, body)
    with pytest.raises(KubeApiError) as err:
        api.create_pod("ns", {"kind": "Pod", "metadata": {"name": "p"}})
    assert (err.value.status, err.value.message) == (status, message)


def test_version(server: ApiServer, api: ClientKubeApi) -> None:
    server.answers[("GET", "/version/")] = (200, {"major": "1", "minor": "34", "gitVersion": "v1.34.2"})
    server.answers[("GET", "/version")] = (200, {"major": "1", "minor": "34", "gitVersion": "v1.34.2"})
    assert api.version()["gitVersion"] == "v1.34.2"


@pytest.mark.parametrize(("env", "helper", "workload"), [
    pytest.param({}, "docker.io/library/python:3.12-slim", "docker.io/library/busybox:1.37", id="docker-hub"),
    pytest.param({ENV_MIRROR: "mirror.gcr.io"}, "mirror.gcr.io/library/python:3.12-slim",
                 "mirror.gcr.io/library/busybox:1.37", id="mirror"),
    pytest.param({ENV_MIRROR: "registry.corp/hub/", ENV_HELPER_IMAGE: "registry.corp/tools/py:3.12"},
                 "registry.corp/tools/py:3.12", "registry.corp/hub/library/busybox:1.37", id="mirror-and-image"),
])
def test_images_are_fully_qualified_and_one_setting_mirrors_them(
        monkeypatch: pytest.MonkeyPatch, env: dict[str, str], helper: str, workload: str) -> None:
    for name in (ENV_MIRROR, ENV_HELPER_IMAGE, ENV_WORKLOAD_IMAGE):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert (image(ENV_HELPER_IMAGE, DEFAULT_HELPER_IMAGE), image(ENV_WORKLOAD_IMAGE, DEFAULT_WORKLOAD_IMAGE)) == (
        helper, workload)
