"""The agent's local API: one JSON object per line over a Unix socket, answered in order on each connection."""

from __future__ import annotations

import json
import os
import socket
import socketserver
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nodeconf.enforcer.agent import Agent, AgentError
from nodeconf.enforcer.facts import facts_to_dict
from nodeconf.enforcer.ownership import ForeignCgroup
from nodeconf.names import UnsafeName

Handler = Callable[[Agent, dict[str, Any]], Any]
# Exit status of `serve` when another agent already answers on the socket (the driver must not clean up then).
ALREADY_RUNNING = 3


def _strings(request: dict[str, Any], key: str) -> list[str]:
    value = request.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise AgentError(f"{key!r} must be a list of strings")
    return value


def _text(request: dict[str, Any], key: str) -> str:
    value = request.get(key)
    if not isinstance(value, str):
        raise AgentError(f"{key!r} must be a string")
    return value


def _doc(request: dict[str, Any], key: str) -> dict[str, Any]:
    value = request.get(key)
    if not isinstance(value, dict):
        raise AgentError(f"{key!r} must be an object")
    return value


def _docs(request: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = request.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise AgentError(f"{key!r} must be a list of objects")
    return value


OPERATIONS: dict[str, Handler] = {
    "ping": lambda agent, r: {"pong": True, "pid": os.getpid()},
    "facts": lambda agent, r: facts_to_dict(agent.facts),
    "configure": lambda agent, r: agent.configure(_doc(r, "config"), r.get("version")),
    "objects": lambda agent, r: agent.set_objects(_docs(r, "objects")),
    "run": lambda agent, r: agent.run_pod(_doc(r, "pod")),
    "status": lambda agent, r: agent.status(_text(r, "pod")),
    "pods": lambda agent, r: agent.pods_status(),
    "node_status": lambda agent, r: agent.node_status(),
    "evidence": lambda agent, r: agent.evidence(_text(r, "pod"), _strings(r, "files")),
    "node_cgroups": lambda agent, r: agent.node_cgroups(_strings(r, "files")),
    "resize": lambda agent, r: agent.resize(_text(r, "pod"), _doc(r, "patch")),
    "exec": lambda agent, r: agent.exec_in(_text(r, "pod"), _text(r, "container"), _strings(r, "argv"),
                                           float(r.get("timeout", 30))),
    "delete": lambda agent, r: agent.delete(_text(r, "pod")),
    "metrics": lambda agent, r: {"text": agent.metrics()},
    "logs": lambda agent, r: {"text": agent.logs(r.get("pod"), r.get("container"))},
    "reset": lambda agent, r: agent.reset(),
}


def answer(agent: Agent, line: bytes, operations: dict[str, Handler] = OPERATIONS) -> dict[str, Any]:
    """The reply to one request line: {"id", "ok": true, "result", "agentMs"} or {"id", "ok": false, "error"}."""
    try:
        request = json.loads(line)
    except ValueError as err:
        return {"id": None, "ok": False, "error": f"request is not JSON: {err}"}
    if not isinstance(request, dict):
        return {"id": None, "ok": False, "error": "request must be a JSON object"}
    ident = request.get("id")
    handler = operations.get(str(request.get("op")))
    if handler is None:
        return {"id": ident, "ok": False, "error": f"unknown op {request.get('op')!r}"}
    started = time.perf_counter()
    try:
        result = handler(agent, request)
        return {"id": ident, "ok": True, "result": result, "agentMs": 1000 * (time.perf_counter() - started)}
    except (AgentError, UnsafeName, ForeignCgroup) as err:
        return {"id": ident, "ok": False, "error": str(err)}
    except Exception as err:
        agent.log.error("op %s failed:\n%s", request.get("op"), traceback.format_exc())
        return {"id": ident, "ok": False, "error": f"agent error in {request.get('op')}: {err!r}"}


class _Connection(socketserver.StreamRequestHandler):
    server: AgentServer

    def handle(self) -> None:
        for line in self.rfile:
            if not line.strip():
                continue
            reply = answer(self.server.agent, line, self.server.operations)
            self.wfile.write(json.dumps(reply).encode() + b"\n")
            self.wfile.flush()
            if self.server.stopping.is_set():
                return


class AgentServer(socketserver.ThreadingUnixStreamServer):
    """The socket server; a `shutdown` request stops the agent (it cleans up first)."""

    daemon_threads = True

    def __init__(self, path: Path, agent: Agent) -> None:
        self.agent = agent
        self.stopping = threading.Event()
        if path.exists():
            path.unlink()
        old_umask = os.umask(0o077)
        try:
            super().__init__(str(path), _Connection)
        finally:
            os.umask(old_umask)
        self.operations: dict[str, Handler] = {**OPERATIONS, "shutdown": self._shutdown_op}

    def _shutdown_op(self, agent: Agent, request: dict[str, Any]) -> Any:
        result = agent.shutdown()
        self.stopping.set()
        threading.Thread(target=self.shutdown, daemon=True).start()
        return result


def agent_answers(path: Path) -> bool:
    """True when an agent accepts connections on the socket (a stale socket file does not count)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True
