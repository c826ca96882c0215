"""Unary gRPC calls over HTTP/2 on a unix socket, as a kubelet makes its CRI calls, with the pure-Python h2.

Source: grpc/grpc doc/PROTOCOL-HTTP2.md (request headers :method POST, :scheme, :path /<service>/<method>,
content-type application/grpc, te trailers, grpc-timeout; each message prefixed by a 1-byte compressed flag and a
4-byte big-endian length; the status in the grpc-status / grpc-message trailers, percent-encoded, or in the
headers of a trailers-only response). The bound of each call is the kubelet's (client.py: runtimeRequestTimeout).
"""

from __future__ import annotations

import socket
import struct
import time
import urllib.parse
from collections.abc import Mapping

import h2.config
import h2.connection
import h2.events

from nodeconf.kubelet_config import DEFAULT_RUNTIME_REQUEST_TIMEOUT_NS

CALL_TIMEOUT = DEFAULT_RUNTIME_REQUEST_TIMEOUT_NS / 10**9  # until the agent is configured (CriClient.timeout)
OK, DEADLINE_EXCEEDED, NOT_FOUND, UNAVAILABLE = 0, 4, 5, 14
_READ = 65536


class GrpcError(Exception):
    """A call that did not end with grpc-status 0; `code` is the gRPC status code (UNAVAILABLE: no answer)."""

    def __init__(self, method: str, code: int, message: str) -> None:
        super().__init__(f"{method}: grpc-status {code}: {message}")
        self.method = method
        self.code = code
        self.message = message


def frame(message: bytes) -> bytes:
    """A gRPC length-prefixed message, uncompressed."""
    return struct.pack(">BI", 0, len(message)) + message


def unframe(method: str, body: bytes) -> bytes:
    """The one message of a unary response body."""
    if len(body) < 5:
        raise GrpcError(method, UNAVAILABLE, f"response of {len(body)} bytes has no message")
    compressed, size = struct.unpack(">BI", body[:5])
    if compressed:
        raise GrpcError(method, UNAVAILABLE, "compressed response (none was asked for)")
    if len(body) != 5 + size:
        raise GrpcError(method, UNAVAILABLE, f"response body of {len(body)} bytes for a {size}-byte message")
    return body[5:]


def _headers(method: str, timeout: float) -> list[tuple[str, str]]:
    return [(":method", "POST"), (":scheme", "http"), (":path", method), (":authority", "localhost"),
            ("content-type", "application/grpc"), ("te", "trailers"), ("grpc-timeout", f"{max(1, int(timeout))}S")]


def _text(value: str | bytes) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def call(path: str, method: str, request: bytes, timeout: float = CALL_TIMEOUT) -> bytes:
    """One unary call on the unix socket at `path`: the response message, or GrpcError (DEADLINE_EXCEEDED when
    no answer came within `timeout`, UNAVAILABLE when the socket or the HTTP/2 stream failed)."""
    deadline = time.monotonic() + timeout
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError as err:
        raise GrpcError(method, UNAVAILABLE, str(err)) from None
    with sock:
        try:
            sock.settimeout(timeout)
            sock.connect(path)
            return _exchange(sock, method, request, timeout, deadline)
        except socket.timeout:
            raise GrpcError(method, DEADLINE_EXCEEDED, f"no answer within {timeout:g} s") from None
        except OSError as err:
            raise GrpcError(method, UNAVAILABLE, f"{path}: {err.strerror or err}") from None


def _exchange(sock: socket.socket, method: str, request: bytes, timeout: float, deadline: float) -> bytes:
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    stream = conn.get_next_available_stream_id()
    conn.send_headers(stream, _headers(method, timeout))
    conn.send_data(stream, frame(request), end_stream=True)
    sock.sendall(conn.data_to_send())
    body = bytearray()
    headers: dict[str, str] = {}
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout
        sock.settimeout(left)
        data = sock.recv(_READ)
        if not data:
            raise GrpcError(method, UNAVAILABLE, "the runtime closed the connection before the answer")
        ended = False
        for event in conn.receive_data(data):
            if isinstance(event, (h2.events.ResponseReceived, h2.events.TrailersReceived)):
                headers.update((_text(k), _text(v)) for k, v in event.headers or ())
            elif isinstance(event, h2.events.DataReceived) and event.data is not None:
                body += event.data
                conn.acknowledge_received_data(event.flow_controlled_length or 0, stream)
            elif isinstance(event, h2.events.StreamEnded) and event.stream_id == stream:
                ended = True
            elif isinstance(event, h2.events.StreamReset) and event.stream_id == stream:
                raise GrpcError(method, UNAVAILABLE, f"stream reset by the runtime (error {event.error_code})")
            elif isinstance(event, h2.events.ConnectionTerminated):
                raise GrpcError(method, UNAVAILABLE, f"connection closed by the runtime (error {event.error_code})")
        pending = conn.data_to_send()
        if pending:
            sock.sendall(pending)
        if ended:
            return _result(method, headers, bytes(body))


def _result(method: str, headers: Mapping[str, str], body: bytes) -> bytes:
    status = headers.get("grpc-status")
    if status is None:
        raise GrpcError(method, UNAVAILABLE, f"no grpc-status (HTTP status {headers.get(':status', '?')})")
    if status != str(OK):
        code = int(status) if status.isdigit() else UNAVAILABLE
        raise GrpcError(method, code, urllib.parse.unquote(headers.get("grpc-message", "")))
    return unframe(method, body)
