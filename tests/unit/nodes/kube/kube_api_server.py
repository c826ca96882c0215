"""A local HTTP server playing the Kubernetes API server: records every request (method, path, query, content type,
body) and answers from a table, so the real kubernetes client's requests can be asserted. Every object and patch
the client sends is checked against the API's schemas (kube_schema); close() fails naming each invalid one."""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from tests.unit.nodes.kube import kube_schema

# (method, path pattern) → (kind, a patch?) for bodies that name no kind of their own
BODY_KINDS = [("PATCH", r"/api/v1/namespaces/[^/]+", "Namespace", True),
              ("PATCH", r"/api/v1/namespaces/[^/]+/pods/[^/]+(/resize)?", "Pod", True),
              ("POST", r"/api/v1/namespaces", "Namespace", False),
              ("POST", r"/api/v1/namespaces/[^/]+/pods", "Pod", False)]


def schema_error(method: str, path: str, body: Any) -> str | None:
    """Why `body`, sent as METHOD path, is not a valid object or patch for the API (None: it is)."""
    if not isinstance(body, dict):
        return f"{method} {path}: a {type(body).__name__} body"
    try:
        if "apiVersion" in body and "kind" in body:
            kube_schema.check(body)
            return None
        for verb, pattern, kind, patch in BODY_KINDS:
            if verb == method and re.fullmatch(pattern, path):
                kube_schema.check(body, "v1", kind, patch=patch)
                return None
    except AssertionError as invalid:
        return f"{method} {path}: {invalid}"
    return f"{method} {path}: no schema known for this body (add it to BODY_KINDS)"


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    content_type: str
    body: Any


class ApiServer:
    """Records each request and answers from a table of (method, path) → (status, body)."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self.invalid: list[str] = []  # bodies the API's schemas refuse
        self.answers: dict[tuple[str, str], tuple[int, Any]] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def handle_any(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                server.seen.append(Seen(self.command, parts.path, parse_qs(parts.query),
                                        self.headers.get("Content-Type", ""), body))
                if body is not None and self.command in ("POST", "PATCH", "PUT"):
                    error = schema_error(self.command, parts.path, body)
                    if error:
                        server.invalid.append(error)
                status, body = server.answers.get((self.command, parts.path), (200, {"kind": "Status"}))
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain" if isinstance(body, str) else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_DELETE = handle_any

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                       daemon=True)
        self.thread.start()

    def last(self) -> Seen:
        return self.seen[-1]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        assert not self.invalid, "invalid for the Kubernetes API:\n" + "\n".join(self.invalid)


def write_kubeconfig(path: Path, url: str, context: str = "local") -> Path:
    """A kubeconfig whose one context (current) talks to `url` with a token."""
    config = {"apiVersion": "v1", "kind": "Config", "current-context": context,
              "clusters": [{"name": context, "cluster": {"server": url}}],
              "users": [{"name": "u", "user": {"token": "t"}}],
              "contexts": [{"name": context, "context": {"cluster": context, "user": "u"}}]}
    path.write_text(yaml.safe_dump(config))
    return path
