"""The kube driver's API layer: spec → kubeconfig context, error translation, exec exit status, resize fallback."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from nodeconf.nodes.base import NodeError
from nodeconf.nodes.kube import opener as kube
from nodeconf.nodes.kube.api import (
    ClientKubeApi,
    KubeApiError,
    exec_exit_status,
    load_kube_context,
    status_message,
    unreachable_reason,
)
from nodeconf.nodes.registry import open_node as open_any_node
from nodeconf.nodes.spec import parse_node_spec as parse_spec
from tests.unit.nodes.kube.fakes import UNREACHABLE, kubeconfig


@pytest.mark.parametrize(("context", "chosen"), [(None, "kind-a"), ("kind-b", "kind-b")])
def test_context_selection(tmp_path: Path, context: str | None, chosen: str) -> None:
    client, name = load_kube_context(context, kubeconfig(tmp_path))
    try:
        assert name == chosen
        assert client.configuration.host == UNREACHABLE
    finally:
        client.close()


@pytest.mark.parametrize(("context", "current", "message"), [
    pytest.param("kind-z", "kind-a", "kube context 'kind-z' not found in ", id="unknown"),
    pytest.param(None, None, "Expected key current-context", id="no-current"),
])
def test_context_errors(tmp_path: Path, context: str | None, current: str | None, message: str) -> None:
    with pytest.raises(KubeApiError) as err:
        load_kube_context(context, kubeconfig(tmp_path, current=current))
    assert message in str(err.value)
    assert "kubeconfig" in str(err.value)


def test_missing_kubeconfig(tmp_path: Path) -> None:
    with pytest.raises(KubeApiError, match="no usable kubeconfig"):
        load_kube_context(None, str(tmp_path / "absent"))


def test_named_context_without_a_current_one(tmp_path: Path) -> None:
    client, name = load_kube_context("kind-b", kubeconfig(tmp_path, current=None))
    client.close()
    assert name == "kind-b"


def test_unknown_context_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(KubeApiError, match=r"\(contexts: kind-a, kind-b\)"):
        load_kube_context("kind-z", kubeconfig(tmp_path))


def test_kubeconfig_env_is_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", kubeconfig(tmp_path, current="kind-b"))
    client, name = load_kube_context(None)
    client.close()
    assert name == "kind-b"


def test_unreachable_cluster_fails_fast_with_a_clear_message(tmp_path: Path) -> None:
    with pytest.raises(KubeApiError, match=r"Kubernetes API at https://127.0.0.1:1 not reachable"):
        kube.open_node("kind-a", config_file=kubeconfig(tmp_path))


@pytest.mark.parametrize(("spec", "context", "node"), [
    pytest.param("kube", None, None, id="current-context"),
    pytest.param("kube:kind-nodeconf-limitedswap", "kind-nodeconf-limitedswap", None, id="kind"),
    pytest.param("kube:arn:aws:eks:eu-west-1:123456789012:cluster/ci", "arn:aws:eks:eu-west-1:123456789012:cluster/ci",
                 None, id="context-with-colons"),
    pytest.param("kube:kind-a?node=kind-worker2&name=kind-worker2", "kind-a", "kind-worker2", id="one-node"),
])
def test_registry_hands_the_context_to_the_driver(monkeypatch: pytest.MonkeyPatch, spec: str,
                                                  context: str | None, node: str | None) -> None:
    seen: list[tuple[str | None, str | None]] = []

    def fake_open(wanted: str | None, *, node: str | None = None) -> Any:
        seen.append((wanted, node))
        return SimpleNamespace(spec=spec)

    monkeypatch.setattr(kube, "open_node", fake_open)
    assert parse_spec(spec).scheme == "kube"
    open_any_node(spec)
    assert seen == [(context, node)]


def test_a_whole_cluster_spec_is_never_opened_as_one_node(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kube, "open_node", lambda *_, **__: pytest.fail("opened"))
    with pytest.raises(NodeError, match=r"^kube:c\?nodes=all: nodes= is expanded by `nodeconf run` into one --node"):
        open_any_node("kube:c?nodes=all")


@pytest.mark.parametrize(("body", "message"), [
    pytest.param(json.dumps({"kind": "Status", "message": 'pods "x" not found'}), 'pods "x" not found', id="status"),
    pytest.param(b"plain text", "plain text", id="text"),
    pytest.param(None, "Not Found", id="empty"),
])
def test_status_message(body: str | bytes | None, message: str) -> None:
    assert status_message(body, "Not Found") == message


@pytest.mark.parametrize(("channel", "result"), [
    pytest.param("", (0, ""), id="closed-without-status"),
    pytest.param(json.dumps({"metadata": {}, "status": "Success"}), (0, ""), id="success"),
    pytest.param(json.dumps({"status": "Failure", "reason": "NonZeroExitCode", "message": "command terminated",
                             "details": {"causes": [{"reason": "ExitCode", "message": "137"}]}}), (137, ""),
                 id="exit-137"),
    pytest.param(json.dumps({"status": "Failure", "message": 'exec: "nope": executable file not found'}),
                 (-1, 'exec: "nope": executable file not found'), id="not-started"),
])
def test_exec_exit_status(channel: str, result: tuple[int, str]) -> None:
    assert exec_exit_status(channel) == result


def client_api(tmp_path: Path) -> ClientKubeApi:
    client, _ = load_kube_context(None, kubeconfig(tmp_path))
    return ClientKubeApi(client)


def test_api_errors_keep_status_and_message(tmp_path: Path) -> None:
    api = client_api(tmp_path)

    def refuse(*_: Any, **__: Any) -> Any:
        raise ApiException(status=422, reason="Unprocessable Entity",
                           body=json.dumps({"message": "Pod QOS Class may not change as a result of resizing"}))

    api.core = SimpleNamespace(patch_namespaced_pod_resize=refuse)
    with pytest.raises(KubeApiError) as err:
        api.patch_pod_resize("ns", "p", {"spec": {}})
    assert (err.value.status, err.value.message) == (422, "Pod QOS Class may not change as a result of resizing")
    api.close()


def test_resize_without_the_subresource_method_patches_the_path(tmp_path: Path) -> None:
    api = client_api(tmp_path)
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def call_api(*args: Any, **kwargs: Any) -> Any:
        calls.append((args, kwargs))
        return SimpleNamespace(data=json.dumps({"kind": "Pod"}).encode())

    api.core = SimpleNamespace()
    api.api_client = SimpleNamespace(call_api=call_api, close=lambda: None)
    assert api.patch_pod_resize("ns", "p", {"spec": {"containers": []}}) == {"kind": "Pod"}
    (args, kwargs), = calls
    assert args == ("/api/v1/namespaces/{namespace}/pods/{name}/resize", "PATCH")
    assert kwargs["path_params"] == {"namespace": "ns", "name": "p"}
    assert kwargs["header_params"]["Content-Type"] == "application/strategic-merge-patch+json"
    assert kwargs["body"] == {"spec": {"containers": []}} and kwargs["_preload_content"] is False


class FakeSocket:
    """The part of kubernetes.stream.ws_client.WSClient the driver uses."""

    def __init__(self, channels: dict[int, str], stays_open: bool = False) -> None:
        self.channels = channels
        self.stays_open = stays_open
        self.closed = False

    def run_forever(self, timeout: float | None = None) -> None:
        pass

    def is_open(self) -> bool:
        return self.stays_open

    def read_stdout(self, timeout: float | None = None) -> str:
        return self.channels.get(1, "")

    def read_stderr(self, timeout: float | None = None) -> str:
        return self.channels.get(2, "")

    def read_channel(self, channel: int, timeout: float = 0) -> str:
        return self.channels.get(channel, "")

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize(("socket", "outcome"), [
    pytest.param(FakeSocket({1: "out", 2: "err", 3: json.dumps({"status": "Success"})}), (0, "out", "err"), id="ok"),
    pytest.param(FakeSocket({3: json.dumps({"status": "Failure", "details": {"causes": [
        {"reason": "ExitCode", "message": "2"}]}})}), (2, "", ""), id="exit-2"),
    pytest.param(FakeSocket({3: json.dumps({"status": "Failure", "message": "container not found"})}),
                 "failed: container not found", id="no-container"),
    pytest.param(FakeSocket({}, stays_open=True), "did not finish in 5s", id="timeout"),
])
def test_exec_over_the_stream_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, socket: FakeSocket,
                                  outcome: tuple[int, str, str] | str) -> None:
    api = client_api(tmp_path)
    seen: dict[str, Any] = {}

    def fake_stream(method: Any, name: str, namespace: str, **kwargs: Any) -> FakeSocket:
        seen.update(kwargs, name=name, namespace=namespace)
        return socket

    monkeypatch.setattr("kubernetes.stream.stream", fake_stream)
    if isinstance(outcome, str):
        with pytest.raises(KubeApiError, match=outcome):
            api.exec("ns", "p", "c", ["sh", "-c", "exit 2"], 5)
    else:
        out = api.exec("ns", "p", "c", ["sh", "-c", "exit 2"], 5)
        assert (out.rc, out.stdout, out.stderr) == outcome
    assert seen["command"] == ["sh", "-c", "exit 2"] and seen["container"] == "c" and seen["tty"] is False
    assert socket.closed
    api.close()


def test_reachability_probe(tmp_path: Path) -> None:
    client, _ = load_kube_context(None, kubeconfig(tmp_path))
    try:
        reason = unreachable_reason(client, timeout=2)
        assert reason is not None and reason.startswith("Kubernetes API at https://127.0.0.1:1 not reachable")
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(1)
            client.configuration.host = f"https://127.0.0.1:{listener.getsockname()[1]}"
            assert unreachable_reason(client, timeout=2) is None
        client.configuration.host = "https://"
        assert unreachable_reason(client) == "bad API server address 'https://'"
    finally:
        client.close()
