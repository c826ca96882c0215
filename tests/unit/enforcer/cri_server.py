"""A grpcio server on a unix socket in a temporary directory, standing for a node's CRI runtime: its methods (full
names) answer with the handlers a test sets; grpcio answers UNIMPLEMENTED for the others, as a server does."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest

Handler = Callable[[bytes, Any], bytes]


@contextmanager
def cri_server(path: Path) -> Iterator[tuple[str, dict[str, Handler]]]:
    """Serve on the socket at `path` until the block ends; yields the socket path and the handlers to set."""
    handlers: dict[str, Handler] = {}

    class Generic(grpc.GenericRpcHandler):  # type: ignore[misc]
        def service(self, details: Any) -> Any:
            handler = handlers.get(details.method)
            if handler is None:
                return None
            return grpc.unary_unary_rpc_method_handler(handler)

    srv = grpc.server(futures.ThreadPoolExecutor(max_workers=2), handlers=[Generic()])
    srv.add_insecure_port(f"unix:{path}")
    srv.start()
    try:
        yield str(path), handlers
    finally:
        srv.stop(grace=None)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, dict[str, Handler]]]:
    """A grpcio server on a unix socket whose methods (full names) answer with the handlers the test sets."""
    with cri_server(tmp_path / "cri.sock") as served:
        yield served
