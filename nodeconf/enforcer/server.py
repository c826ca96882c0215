"""The agent's local API: one JSON object per line over a Unix socket, answered in order on each connection."""

from __future__ import annotations

import os
import socket
import socketserver
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nodeconf.enforcer.agent import Agent
from nodeconf.enforcer.agent_error import AgentError
from nodeconf.enforcer.ownership import ForeignCgroup
from nodeconf.enforcer.wire import Op, Reply, WireError, decode_request, encode_reply, facts_to_dict, reply_document
from nodeconf.names import UnsafeName

Handler = Callable[[Agent, dict[str, Any]], Any]


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
    Op.PING: lambda agent, r: {"pong": True, "pid": os.getpid()},
    Op.FACTS: lambda agent, r: facts_to_dict(agent.facts),
    Op.CONFIGURE: lambda agent, r: agent.configure(_doc(r, "config"), r.get("version")),
    Op.OBJECTS: lambda agent, r: agent.set_objects(_docs(r, "objects")),
    Op.RUN: lambda agent, r: agent.run_pod(_doc(r, "pod")),
    Op.STATUS: lambda agent, r: agent.status(_text(r, "pod")),
    Op.PODS: lambda agent, r: agent.pods_status(),
    Op.NODE_STATUS: lambda agent, r: agent.node_status(),
    Op.EVIDENCE: lambda agent, r: agent.evidence(_text(r, "pod"), _strings(r, "files")),
    Op.EVIDENCE_BATCH: lambda agent, r: {"pods": {ref: agent.evidence(ref, _strings(r, "files"))
                                                  for ref in _strings(r, "pods")}},
    Op.NODE_CGROUPS: lambda agent, r: agent.node_cgroups(_strings(r, "files")),
    Op.RESIZE: lambda agent, r: agent.resize(_text(r, "pod"), _doc(r, "patch")),
    Op.EXEC: lambda agent, r: agent.exec_in(_text(r, "pod"), _text(r, "container"), _strings(r, "argv"),
                                           float(r.get("timeout", 30))),
    Op.EXEC_NODE: lambda agent, r: agent.exec_in_reserve(_text(r, "cgroup"), _strings(r, "argv"),
                                                        float(r.get("timeout", 30))),
    Op.DELETE: lambda agent, r: agent.delete(_text(r, "pod")),
    Op.METRICS: lambda agent, r: {"text": agent.readouts.metrics()},
    Op.CADVISOR_METRICS: lambda agent, r: {"text": agent.readouts.cadvisor_metrics()},
    Op.STATS_SUMMARY: lambda agent, r: agent.readouts.stats_summary(),
    Op.RESOURCE_METRICS: lambda agent, r: {"text": agent.readouts.resource_metrics()},
    Op.LOGS: lambda agent, r: {"text": agent.logs(r.get("pod"), r.get("container"))},
    Op.RESET: lambda agent, r: agent.reset(),
}


def answer(agent: Agent, line: bytes, operations: dict[str, Handler] = OPERATIONS) -> dict[str, Any]:
    """The reply to one request line (wire.reply_document)."""
    return reply_document(_reply(agent, line, operations))


def _reply(agent: Agent, line: bytes, operations: dict[str, Handler]) -> Reply:
    try:
        request = decode_request(line)
    except WireError as err:
        return Reply(None, False, error=str(err))
    handler = operations.get(request.op)
    if handler is None:
        return Reply(request.ident, False, error=f"unknown op {request.args.get('op')!r}")
    started = time.perf_counter()
    try:
        result = handler(agent, request.args)
        return Reply(request.ident, True, result, agent_ms=1000 * (time.perf_counter() - started))
    except (AgentError, UnsafeName, ForeignCgroup) as err:
        return Reply(request.ident, False, error=str(err))
    except Exception as err:
        agent.log.error("op %s failed:\n%s", request.op, traceback.format_exc())
        return Reply(request.ident, False, error=f"agent error in {request.args.get('op')}: {err!r}")


class _Connection(socketserver.StreamRequestHandler):
    server: AgentServer

    def setup(self) -> None:
        super().setup()
        with self.server.count_lock:
            self.server.clients += 1

    def finish(self) -> None:
        with self.server.count_lock:
            self.server.clients -= 1
        super().finish()

    def handle(self) -> None:
        for line in self.rfile:
            if not line.strip():
                continue
            self.wfile.write(encode_reply(_reply(self.server.agent, line, self.server.operations)))
            self.wfile.flush()
            if self.server.stopping.is_set():
                return


class AgentServer(socketserver.ThreadingUnixStreamServer):
    """The socket server; a `shutdown` request stops the agent (it cleans up first); `ping` also says how many
    connections are open (`clients`, the asking one included: a driver's bridge is one)."""

    daemon_threads = True

    def __init__(self, path: Path, agent: Agent) -> None:
        self.agent = agent
        self.stopping = threading.Event()
        self.clients = 0
        self.count_lock = threading.Lock()
        if path.exists():
            path.unlink()
        old_umask = os.umask(0o077)
        try:
            super().__init__(str(path), _Connection)
        finally:
            os.umask(old_umask)
        self.operations: dict[str, Handler] = {**OPERATIONS, Op.SHUTDOWN: self._shutdown_op,
                                               Op.PING: lambda agent, r: {**OPERATIONS[Op.PING](agent, r),
                                                                          "clients": self.clients}}

    def _shutdown_op(self, agent: Agent, request: dict[str, Any]) -> Any:
        result = agent.stop()
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
