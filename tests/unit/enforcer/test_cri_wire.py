"""The CRI client's protobuf codec and gRPC framing against independent implementations: protobuf's generated CRI
v1 messages (PyPI container-runtime-interface-api) decode our bytes and encode what we decode, and a grpcio server
on a unix socket answers our unary calls (status codes, messages, deadline)."""

from __future__ import annotations

import logging
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from nodeconf.enforcer.cri import messages as m
from nodeconf.enforcer.cri.client import CriClient
from nodeconf.enforcer.cri.grpc import DEADLINE_EXCEEDED, NOT_FOUND, UNAVAILABLE, GrpcError, call
from nodeconf.enforcer.cri.proto import DecodeError, Field, Schema, decode, encode, varint

api = pytest.importorskip("cri_api.v1.api_pb2")
grpc = pytest.importorskip("grpc")
from tests.unit.enforcer.cri_server import Handler, server  # noqa: E402  (needs grpc)

__all__ = ["server"]  # the grpcio runtime fixture (tests.unit.enforcer.cri_server)

RESOURCES = {"cpu_period": 100000, "cpu_quota": 50000, "cpu_shares": 512, "memory_limit_in_bytes": 1 << 30,
             "oom_score_adj": -997, "hugepage_limits": [{"page_size": "2MB", "limit": 4 << 20}],
             "unified": {"memory.min": "1048576", "memory.swap.max": "0"},
             "memory_swap_limit_in_bytes": (1 << 30) + 4096}
CONTAINER_CONFIG = {
    "metadata": {"name": "app", "attempt": 2}, "image": {"image": "nodeconf.local/workload:t1"},
    "command": ["python3", "-c", "pass"], "args": ["x"], "working_dir": "/",
    "envs": [{"key": "LANG", "value": "C.UTF-8"}], "log_path": "app/2.log",
    "mounts": [{"container_path": "/usr", "host_path": "/usr", "readonly": True}],
    "labels": {"io.nodeconf.owner": "tok"}, "annotations": {"a": "b"},
    "linux": {"resources": RESOURCES, "security_context": {"namespace_options": {"network": m.NAMESPACE_NODE}}},
}
SANDBOX_CONFIG = {
    "metadata": {"name": "p", "uid": "u-1", "namespace": "default", "attempt": 1}, "hostname": "h",
    "log_directory": "/var/log/pods/x", "labels": {"io.nodeconf.owner": "tok"},
    "linux": {"cgroup_parent": "kubepods-burstable-podu_1.slice",
              "security_context": {"namespace_options": {"network": m.NAMESPACE_NODE, "pid": m.NAMESPACE_CONTAINER}},
              "resources": {"cpu_shares": 2, "cpu_quota": -1}},
}


def _theirs(cls: Any, data: bytes) -> Any:
    message = cls()
    message.ParseFromString(data)
    return message


def test_varint_matches_the_encoding_doc_examples() -> None:
    # protobuf "Encoding": 150 → 96 01; -1 as int64 → ten bytes ending 01.
    assert varint(150) == b"\x96\x01"
    assert varint(-1) == b"\xff" * 9 + b"\x01"


@pytest.mark.parametrize(("schema", "cls", "value"), [
    (m.LINUX_CONTAINER_RESOURCES, "LinuxContainerResources", RESOURCES),
    (m.CONTAINER_CONFIG, "ContainerConfig", CONTAINER_CONFIG),
    (m.POD_SANDBOX_CONFIG, "PodSandboxConfig", SANDBOX_CONFIG),
])
def test_protobuf_reads_our_messages_and_we_read_theirs(schema: Schema, cls: str, value: dict[str, Any]) -> None:
    ours = encode(schema, value)
    theirs = _theirs(getattr(api, cls), ours)
    again = getattr(api, cls)()
    again.ParseFromString(theirs.SerializeToString())
    assert decode(schema, theirs.SerializeToString()) == value
    assert again == theirs


def test_protobuf_sees_each_value_where_the_proto_puts_it() -> None:
    theirs = _theirs(api.CreateContainerRequest, encode(m.CREATE_CONTAINER[0], {
        "pod_sandbox_id": "sb", "config": CONTAINER_CONFIG, "sandbox_config": SANDBOX_CONFIG}))
    resources = theirs.config.linux.resources
    assert (resources.cpu_quota, resources.oom_score_adj, resources.memory_swap_limit_in_bytes) == (
        50000, -997, (1 << 30) + 4096)
    assert dict(resources.unified) == {"memory.min": "1048576", "memory.swap.max": "0"}
    assert [(h.page_size, h.limit) for h in resources.hugepage_limits] == [("2MB", 4 << 20)]
    assert theirs.sandbox_config.linux.cgroup_parent == "kubepods-burstable-podu_1.slice"
    assert theirs.sandbox_config.linux.security_context.namespace_options.network == api.NODE
    assert list(theirs.config.command) == ["python3", "-c", "pass"]


def test_we_read_a_container_status_protobuf_wrote_and_skip_fields_we_do_not_name() -> None:
    status = api.ContainerStatusResponse(status=api.ContainerStatus(
        id="c1", state=api.CONTAINER_EXITED, exit_code=137, reason="OOMKilled", finished_at=-5,
        metadata=api.ContainerMetadata(name="app", attempt=3), image_ref="sha256:x", log_path="l",
        resources=api.ContainerResources(linux=api.LinuxContainerResources(cpu_shares=2))),
        info={"info": '{"pid": 42}'})
    got = decode(m.CONTAINER_STATUS[1], status.SerializeToString())
    assert got == {"status": {"id": "c1", "state": m.CONTAINER_EXITED, "exit_code": 137, "reason": "OOMKilled",
                              "finished_at": -5, "metadata": {"name": "app", "attempt": 3},
                              "resources": {"linux": {"cpu_shares": 2}}},
                   "info": {"info": '{"pid": 42}'}}


def test_packed_repeated_scalars_are_read() -> None:
    schema: Schema = {"groups": Field(5, "int64", repeated=True)}
    data = api.LinuxSandboxSecurityContext(supplemental_groups=[1, 2, 300]).SerializeToString()
    assert decode(schema, data) == {"groups": [1, 2, 300]}


@pytest.mark.parametrize("data", [b"\x0a\x05ab", b"\x08", b"\x0b", b"\x08\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80"])
def test_broken_bytes_are_a_decode_error(data: bytes) -> None:
    with pytest.raises(DecodeError):
        decode(m.CONTAINER_ID, data)


def test_a_unary_call_carries_our_request_and_their_response(server: tuple[str, dict[str, Handler]]) -> None:
    path, handlers = server
    seen: list[Any] = []

    def update(request: bytes, _context: Any) -> bytes:
        seen.append(_theirs(api.UpdateContainerResourcesRequest, request))
        return bytes(api.UpdateContainerResourcesResponse().SerializeToString())

    def version(request: bytes, _context: Any) -> bytes:
        assert _theirs(api.VersionRequest, request).version == "v1"
        return bytes(api.VersionResponse(version="0.1.0", runtime_name="containerd", runtime_version="v1.7.24",
                                         runtime_api_version="v1").SerializeToString())

    handlers[m.RUNTIME_SERVICE + "UpdateContainerResources"] = update
    handlers[m.RUNTIME_SERVICE + "Version"] = version
    client = CriClient(path, timeout=10)
    client.update_container_resources("c1", RESOURCES)
    assert seen[0].container_id == "c1" and seen[0].linux.memory_limit_in_bytes == 1 << 30
    assert client.version() == {"version": "0.1.0", "runtime_name": "containerd", "runtime_version": "v1.7.24",
                                "runtime_api_version": "v1"}


def test_a_failed_call_raises_its_grpc_status_and_message(server: tuple[str, dict[str, Handler]]) -> None:
    path, handlers = server

    def missing(_request: bytes, context: Any) -> bytes:
        context.abort(grpc.StatusCode.NOT_FOUND, 'container "c9" not found: 100% gone')
        raise AssertionError("abort returned")

    handlers[m.RUNTIME_SERVICE + "ContainerStatus"] = missing
    with pytest.raises(GrpcError) as caught:
        CriClient(path, timeout=10).container_status("c9")
    assert (caught.value.code, caught.value.message) == (NOT_FOUND, 'container "c9" not found: 100% gone')


def test_an_unknown_method_is_unimplemented(server: tuple[str, dict[str, Handler]]) -> None:
    path, _ = server
    with pytest.raises(GrpcError) as caught:
        call(path, m.RUNTIME_SERVICE + "NoSuchCall", b"", timeout=10)
    assert caught.value.code == grpc.StatusCode.UNIMPLEMENTED.value[0]


def test_a_call_without_an_answer_ends_at_its_deadline(server: tuple[str, dict[str, Handler]]) -> None:
    path, handlers = server
    release = threading.Event()

    def slow(_request: bytes, _context: Any) -> bytes:
        release.wait(10)
        return b""

    handlers[m.RUNTIME_SERVICE + "Status"] = slow
    started = time.monotonic()
    try:
        with pytest.raises(GrpcError) as caught:
            CriClient(path, timeout=1).status()
    finally:
        release.set()
    assert caught.value.code == DEADLINE_EXCEEDED
    assert time.monotonic() - started < 5


def test_no_socket_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(GrpcError) as caught:
        CriClient(str(tmp_path / "absent.sock"), timeout=1).version()
    assert caught.value.code == UNAVAILABLE


def test_a_slow_call_is_logged_with_its_time(server: tuple[str, dict[str, Handler]], monkeypatch: pytest.MonkeyPatch,
                                             caplog: pytest.LogCaptureFixture) -> None:
    """The agent holds its lock during a CRI call: one slower than SLOW_CALL leaves a line in its log (how long a
    slow node's StartContainer takes is measured there)."""
    path, handlers = server
    handlers[m.RUNTIME_SERVICE + "StartContainer"] = lambda _request, _context: b""
    monkeypatch.setattr("nodeconf.enforcer.cri.client.SLOW_CALL", 0.0)
    with caplog.at_level(logging.WARNING, logger="nodeconf.enforcer"):
        CriClient(path, timeout=10).start_container("c1")
    assert re.fullmatch(r"CRI StartContainer took \d+\.\d s", caplog.messages[-1])
