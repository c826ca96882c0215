"""A local HTTP server playing the Kubernetes API server: records every request (method, path, query, content type,
body) and answers from a table, so the real kubernetes client's requests can be asserted."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml


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
        self.answers: dict[tuple[str, str], tuple[int, Any]] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def handle_any(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                server.seen.append(Seen(self.command, parts.path, parse_qs(parts.query),
                                        self.headers.get("Content-Type", ""), json.loads(raw) if raw else None))
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


def write_kubeconfig(path: Path, url: str, context: str = "local") -> Path:
    """A kubeconfig whose one context (current) talks to `url` with a token."""
    config = {"apiVersion": "v1", "kind": "Config", "current-context": context,
              "clusters": [{"name": context, "cluster": {"server": url}}],
              "users": [{"name": "u", "user": {"token": "t"}}],
              "contexts": [{"name": context, "context": {"cluster": context, "user": "u"}}]}
    path.write_text(yaml.safe_dump(config))
    return path
