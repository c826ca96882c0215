"""The few Kubernetes API calls the kube driver makes, on plain JSON dicts (kubernetes client, raw responses)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any, Protocol
from urllib.parse import urlsplit

from nodeconf.nodes.base import NodeError
from nodeconf.nodes.kube.redaction import redacted

REQUEST_TIMEOUT = 30.0
PROBE_TIMEOUT = 2.0
STRATEGIC_MERGE = "application/strategic-merge-patch+json"
# In a pod the kubelet sets this variable; with no kubeconfig the pod's service account is used.
IN_CLUSTER_ENV = "KUBERNETES_SERVICE_HOST"
IN_CLUSTER = "in-cluster"

JsonObject = dict[str, Any]
# Namespaced kinds besides Pod the driver creates, by the CoreV1Api method suffix.
NAMESPACED_KINDS = {"ConfigMap": "config_map", "LimitRange": "limit_range", "ResourceQuota": "resource_quota"}


class KubeApiError(NodeError):
    """The API server answered with an error status (or could not be reached: status 0); `reason` and `causes`
    come from the metav1.Status body (`Invalid`, `Forbidden`; each cause's `field`).

    Every failure of the kube client becomes one of these: the one place credentials (a kubeconfig proxy-url's
    password, a token) are redacted from the message, so they reach no log or report."""

    def __init__(self, status: int, message: str, reason: str = "",
                 causes: Sequence[Mapping[str, str]] = ()) -> None:
        self.status = status
        self.message = redacted(message)
        self.reason = reason
        self.causes = tuple({key: redacted(value) for key, value in cause.items()} for cause in causes)
        super().__init__(f"Kubernetes API error {status}: {self.message}" if status else self.message)


@dataclass(frozen=True)
class ExecOutput:
    """What one exec gave back: exit status and the two output streams as text."""

    rc: int
    stdout: str
    stderr: str


class KubeApi(Protocol):
    """The API surface the driver uses; the real one talks to a cluster, tests give a fake."""

    def version(self) -> JsonObject: ...

    def list_nodes(self, label_selector: str = "") -> list[JsonObject]: ...

    def read_node(self, name: str) -> JsonObject: ...

    def list_pods(self, field_selector: str) -> list[JsonObject]: ...

    def node_proxy(self, node: str, path: str) -> str: ...

    def now(self) -> datetime: ...

    def list_namespaces(self, label_selector: str) -> list[JsonObject]: ...

    def create_namespace(self, manifest: JsonObject) -> JsonObject: ...

    def patch_namespace(self, name: str, patch: Mapping[str, Any]) -> JsonObject: ...

    def delete_namespace(self, name: str) -> None: ...

    def create_object(self, namespace: str, manifest: JsonObject) -> JsonObject: ...

    def read_object(self, kind: str, namespace: str, name: str) -> JsonObject: ...

    def delete_object(self, kind: str, namespace: str, name: str) -> None: ...

    def create_pod(self, namespace: str, manifest: JsonObject) -> JsonObject: ...

    def read_pod(self, namespace: str, name: str) -> JsonObject: ...

    def delete_pod(self, namespace: str, name: str, grace_seconds: int) -> None: ...

    def list_events(self, namespace: str, field_selector: str) -> list[JsonObject]: ...

    def patch_pod_resize(self, namespace: str, name: str, patch: Mapping[str, Any]) -> JsonObject: ...

    def pod_log(self, namespace: str, name: str, container: str, previous: bool) -> str: ...

    def exec(self, namespace: str, name: str, container: str, argv: Sequence[str], timeout: float) -> ExecOutput: ...

    def close(self) -> None: ...


def dig(doc: Mapping[str, Any], *path: str) -> Any:
    """The value at a key path of a JSON object; None where a level is missing or not an object."""
    value: Any = doc
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def status_message(body: str | bytes | None, fallback: str) -> str:
    """The `message` of a Kubernetes Status body, else the fallback text."""
    if body:
        try:
            doc = json.loads(body)
        except ValueError:
            return str(body if isinstance(body, str) else body.decode(errors="replace")).strip() or fallback
        if isinstance(doc, dict) and isinstance(doc.get("message"), str):
            return str(doc["message"])
    return fallback


def status_error(status: int, body: str | bytes | None, fallback: str) -> KubeApiError:
    """A KubeApiError from an error response: the Status body's message, reason and causes."""
    try:
        doc = json.loads(body) if body else None
    except ValueError:
        doc = None
    reason, causes = "", []
    if isinstance(doc, dict):
        reason = str(doc.get("reason") or "")
        for cause in dig(doc, "details", "causes") or ():
            if isinstance(cause, Mapping):
                causes.append({k: str(cause.get(k) or "") for k in ("reason", "message", "field")})
    return KubeApiError(status, status_message(body, fallback), reason, causes)


def exec_exit_status(error_channel: str) -> tuple[int, str]:
    """Exit status and failure text from the exec error channel (a metav1.Status; remotecommand v4 protocol)."""
    if not error_channel.strip():
        return 0, ""
    status = json.loads(error_channel)
    if status.get("status") == "Success":
        return 0, ""
    for cause in (status.get("details") or {}).get("causes") or ():
        if cause.get("reason") == "ExitCode":
            return int(cause["message"]), ""
    return -1, str(status.get("message", error_channel))


def load_kube_context(context: str | None, config_file: str | None = None) -> tuple[Any, str]:
    """An ApiClient for the context (or the current one) and the context's name; KubeApiError when unusable.

    The kubeconfig is `config_file`, else $KUBECONFIG (several files joined with ':' are merged), else
    ~/.kube/config, read when called (the client reads $KUBECONFIG once, at import). Inside a pod with none of
    these and no context named, the pod's service account (the client's in-cluster config: the token and CA under
    /var/run/secrets/kubernetes.io/serviceaccount, $KUBERNETES_SERVICE_HOST and _PORT), context `in-cluster`.
    """
    from kubernetes import config
    from kubernetes.config.config_exception import ConfigException

    kube_config: Any = config
    path = config_file or os.environ.get("KUBECONFIG") or None
    shown = path or "~/.kube/config"
    if (context is None and path is None and os.environ.get(IN_CLUSTER_ENV)
            and not os.path.exists(os.path.expanduser("~/.kube/config"))):
        return in_cluster_client(), IN_CLUSTER
    try:
        contexts, current = kube_config.list_kube_config_contexts(config_file=path)
        known: list[str] | None = [c["name"] for c in contexts]
    except (ConfigException, OSError) as err:
        if context is None:
            raise KubeApiError(0, f"no usable kubeconfig {shown}: {str(err).strip()}") from None
        known, current = None, None
    chosen = context or (current or {}).get("name")
    if not chosen:
        raise KubeApiError(0, f"kubeconfig {shown} has no current context; name one with kube:CONTEXT")
    if known is not None and chosen not in known:
        raise KubeApiError(0, f"kube context {chosen!r} not found in {shown} (contexts: {', '.join(known) or 'none'})")
    try:
        return kube_config.new_client_from_config(config_file=path, context=chosen, persist_config=False), chosen
    except (ConfigException, OSError) as err:
        raise KubeApiError(0, f"no usable kubeconfig {shown}: {str(err).strip()}") from None


def in_cluster_client() -> Any:
    """An ApiClient with the pod's service account (kubernetes.config.load_incluster_config); KubeApiError when the
    pod has no usable one."""
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    configuration = client.Configuration()
    try:
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    except ConfigException as err:
        raise KubeApiError(0, f"no kubeconfig and no usable in-cluster service account: {err}") from None
    return client.ApiClient(configuration)


def unreachable_reason(api_client: Any, timeout: float = PROBE_TIMEOUT) -> str | None:
    """Why the client's API server cannot be reached (one TCP connect within `timeout`), None when it can.

    With a kubeconfig `proxy-url` (the client's `configuration.proxy`) the client talks to the proxy, so the
    proxy is what is probed.
    """
    host = str(api_client.configuration.host)
    proxy = str(getattr(api_client.configuration, "proxy", None) or "")
    target, kind = (proxy, "proxy") if proxy else (host, "API server")
    parts = urlsplit(target)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 1080 if parts.scheme.startswith("socks")
                              else 80)
    except ValueError:
        return f"bad {kind} address {target!r}"
    if not parts.hostname:
        return f"bad {kind} address {target!r}"
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout).close()
    except OSError as err:
        via = f" through proxy {proxy}" if proxy else ""
        return f"Kubernetes API at {host}{via} not reachable: {err.strerror or type(err).__name__}"
    return None


class ClientKubeApi:
    """KubeApi on the official client; every call asks for the raw response and decodes JSON itself."""

    def __init__(self, api_client: Any, timeout: float = REQUEST_TIMEOUT) -> None:
        from kubernetes import client

        self.api_client = api_client
        self.core: Any = client.CoreV1Api(api_client)
        self.version_api = client.VersionApi(api_client)
        self.timeout = timeout
        self._server_date: tuple[datetime, float] | None = None  # the last Date header, local monotonic then

    def _observe(self, headers: Any) -> None:
        date = headers.get("Date") if headers is not None else None
        if date:
            with contextlib.suppress(TypeError, ValueError):
                self._server_date = (parsedate_to_datetime(str(date)), time.monotonic())

    def now(self) -> datetime:
        """The API server's time: its last response's `Date`, advanced by the local monotonic clock since (asks
        for /version when nothing was answered yet); the local UTC time from a server that sends no Date."""
        if self._server_date is None:
            self.version()
        if self._server_date is None:
            return datetime.now(UTC)
        seen, at = self._server_date
        return seen + timedelta(seconds=time.monotonic() - at)

    def _raw(self, method: Any, *args: Any, timeout: float | None = None, **kwargs: Any) -> bytes:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            response = method(*args, _preload_content=False, _request_timeout=timeout or self.timeout, **kwargs)
            self._observe(getattr(response, "headers", None))
            return bytes(response.data)
        except ApiException as err:
            self._observe(err.headers)
            raise status_error(int(err.status or 0), err.body, str(err.reason)) from None
        except HTTPError as err:
            host = self.api_client.configuration.host
            raise KubeApiError(0, f"Kubernetes API at {host} not reachable: {type(err).__name__}") from None

    def _json(self, method: Any, *args: Any, **kwargs: Any) -> JsonObject:
        doc = json.loads(self._raw(method, *args, **kwargs) or b"{}")
        if not isinstance(doc, dict):
            raise KubeApiError(0, f"unexpected answer from {getattr(method, '__name__', method)}")
        return doc

    def version(self) -> JsonObject:
        return self._json(self.version_api.get_code, timeout=PROBE_TIMEOUT)

    def list_nodes(self, label_selector: str = "") -> list[JsonObject]:
        """The cluster's nodes, those matching the label selector when one is given (`?labelSelector=`)."""
        return list(self._json(self.core.list_node, label_selector=label_selector or None).get("items") or [])

    def read_node(self, name: str) -> JsonObject:
        return self._json(self.core.read_node, name)

    def list_pods(self, field_selector: str) -> list[JsonObject]:
        """Pods of every namespace matching the field selector (`spec.nodeName=<node>`)."""
        return list(self._json(self.core.list_pod_for_all_namespaces, field_selector=field_selector)
                    .get("items") or [])

    def node_proxy(self, node: str, path: str) -> str:
        return self._raw(self.core.connect_get_node_proxy_with_path, node, path).decode(errors="replace")

    def list_namespaces(self, label_selector: str) -> list[JsonObject]:
        return list(self._json(self.core.list_namespace, label_selector=label_selector).get("items") or [])

    def create_namespace(self, manifest: JsonObject) -> JsonObject:
        return self._json(self.core.create_namespace, manifest)

    def patch_namespace(self, name: str, patch: Mapping[str, Any]) -> JsonObject:
        return self._json(self.core.patch_namespace, name, dict(patch), _content_type=STRATEGIC_MERGE)

    def delete_namespace(self, name: str) -> None:
        self._raw(self.core.delete_namespace, name)

    def _object_method(self, verb: str, kind: str) -> Any:
        if kind not in NAMESPACED_KINDS:
            raise KubeApiError(0, f"the kube driver does not handle {kind} objects")
        return getattr(self.core, f"{verb}_namespaced_{NAMESPACED_KINDS[kind]}")

    def create_object(self, namespace: str, manifest: JsonObject) -> JsonObject:
        return self._json(self._object_method("create", str(manifest.get("kind"))), namespace, manifest)

    def read_object(self, kind: str, namespace: str, name: str) -> JsonObject:
        return self._json(self._object_method("read", kind), name, namespace)

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        self._raw(self._object_method("delete", kind), name, namespace)

    def create_pod(self, namespace: str, manifest: JsonObject) -> JsonObject:
        return self._json(self.core.create_namespaced_pod, namespace, manifest)

    def read_pod(self, namespace: str, name: str) -> JsonObject:
        return self._json(self.core.read_namespaced_pod, name, namespace)

    def delete_pod(self, namespace: str, name: str, grace_seconds: int) -> None:
        self._raw(self.core.delete_namespaced_pod, name, namespace, grace_period_seconds=grace_seconds)

    def list_events(self, namespace: str, field_selector: str) -> list[JsonObject]:
        return list(self._json(self.core.list_namespaced_event, namespace, field_selector=field_selector)
                    .get("items") or [])

    def patch_pod_resize(self, namespace: str, name: str, patch: Mapping[str, Any]) -> JsonObject:
        method = getattr(self.core, "patch_namespaced_pod_resize", None)
        if method is not None:
            return self._json(method, name, namespace, dict(patch), _content_type=STRATEGIC_MERGE)
        return self._json(self._legacy_resize_patch, name, namespace, dict(patch))

    def _legacy_resize_patch(self, name: str, namespace: str, body: JsonObject, **kwargs: Any) -> Any:
        """PATCH pods/<name>/resize on clients older than the subresource (legacy call_api signature)."""
        return self.api_client.call_api(
            "/api/v1/namespaces/{namespace}/pods/{name}/resize", "PATCH",
            path_params={"namespace": namespace, "name": name},
            header_params={"Accept": "application/json", "Content-Type": STRATEGIC_MERGE},
            body=body, auth_settings=["BearerToken"], response_type=None, **kwargs,
        )

    def pod_log(self, namespace: str, name: str, container: str, previous: bool) -> str:
        return self._raw(self.core.read_namespaced_pod_log, name, namespace, container=container,
                         previous=previous).decode(errors="replace")

    def exec(self, namespace: str, name: str, container: str, argv: Sequence[str], timeout: float) -> ExecOutput:
        from kubernetes.client.exceptions import ApiException
        from kubernetes.stream import stream
        from kubernetes.stream.ws_client import ERROR_CHANNEL

        try:
            ws = stream(self.core.connect_get_namespaced_pod_exec, name, namespace, command=list(argv),
                        container=container, stderr=True, stdin=False, stdout=True, tty=False,
                        _preload_content=False)
        except ApiException as err:
            raise status_error(int(err.status or 0), err.body, str(err.reason)) from None
        try:
            ws.run_forever(timeout=timeout)
            if ws.is_open():
                raise KubeApiError(0, f"exec in {namespace}/{name}/{container} did not finish in {timeout:.0f}s")
            stdout, stderr = ws.read_stdout(timeout=0), ws.read_stderr(timeout=0)
            rc, failure = exec_exit_status(ws.read_channel(ERROR_CHANNEL, timeout=0))
        finally:
            ws.close()
        if rc < 0:
            raise KubeApiError(0, f"exec in {namespace}/{name}/{container} failed: {failure}")
        return ExecOutput(rc=rc, stdout=stdout, stderr=stderr)

    def close(self) -> None:
        self.api_client.close()
