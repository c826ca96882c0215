"""Credentials never reach a kube error's message (and so never a log, JUnit, Allure or HTML report): a kubeconfig
`proxy-url` or server with a password, bearer tokens and Authorization headers, secret-named arguments."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from nodeconf.nodes.kube.api import KubeApiError
from nodeconf.nodes.kube.opener import open_node
from tests.unit.nodes.kube.fakes import kubeconfig


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_api_behind_a_proxy_with_a_password_names_the_proxy_without_it(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path)
    doc = yaml.safe_load(Path(path).read_text())
    port = closed_port()
    doc["clusters"][0]["cluster"]["proxy-url"] = f"http://alice:s3cret-pw@127.0.0.1:{port}"
    Path(path).write_text(yaml.safe_dump(doc))
    with pytest.raises(KubeApiError) as caught:
        open_node(None, config_file=path)
    text = str(caught.value)
    assert "s3cret-pw" not in text and "s3cret-pw" not in caught.value.message
    assert f"through proxy http://alice:***@127.0.0.1:{port} not reachable" in text


@pytest.mark.parametrize(("message", "shown"), [
    pytest.param("Kubernetes API at https://bob:hunter2@192.0.2.1:6443 not reachable",
                 "Kubernetes API at https://bob:***@192.0.2.1:6443 not reachable", id="url-user-password"),
    pytest.param("GET https://ghp_abc123@git.example/x failed", "GET https://***@git.example/x failed",
                 id="url-user-only"),
    pytest.param("socks5h://u:p%40ss@proxy:1080 refused", "socks5h://u:***@proxy:1080 refused", id="socks-proxy"),
    pytest.param("header Authorization: Bearer eyJhbGciOi.x-y_z refused",
                 "header Authorization: *** refused", id="authorization-header"),
    pytest.param("{'Proxy-Authorization': 'Basic YWxpY2U6czNjcmV0'}", "{'Proxy-Authorization': '***'}",
                 id="proxy-authorization-dict"),
    pytest.param("sent bearer abc.def-ghi to the server", "sent bearer *** to the server", id="bearer-token"),
    pytest.param("`kubectl --token=abc123 get pods` failed", "`kubectl --token=*** get pods` failed",
                 id="argv-flag"),
    pytest.param("`kubectl --password hunter2 get` failed", "`kubectl --password *** get` failed",
                 id="argv-flag-separate"),
    pytest.param('{"token": "abc123", "kind": "Status"}', '{"token": "***", "kind": "Status"}', id="json-field"),
    pytest.param('secrets "x" is forbidden: User "dev" cannot get resource "secrets"',
                 'secrets "x" is forbidden: User "dev" cannot get resource "secrets"', id="no-credential"),
])
def test_credentials_are_redacted_where_api_errors_become_nodeconf_errors(message: str, shown: str) -> None:
    err = KubeApiError(403, message, "Forbidden")
    assert (err.message, str(err)) == (shown, f"Kubernetes API error 403: {shown}")
