"""The driver's side of the agent's API: JSON-lines requests over one stream, each answered within a bound the
driver states per operation (a hung agent fails the run within it, never hangs it)."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from nodeconf.enforcer.cri.runtime import CRI as CONTAINERD
from nodeconf.enforcer.oci_runtime import COMMAND_TIMEOUT, DIRECT
from nodeconf.enforcer.wire import READS, Op, decode_reply, encode_request
from nodeconf.nodes.base import NodeError

# Longest wait for one answer of the agent, per operation; a hung agent fails the run within it, never hangs it.
# Reads take milliseconds (agentMs) but wait for the agent's lock; operations that start or kill processes wait
# for them (a kill waits up to 5 s per cgroup); an exec gets its own timeout plus EXEC_MARGIN.
READ_BOUND = 30.0
WRITE_BOUND = 120.0
EXEC_MARGIN = 30.0
EXECS = (Op.EXEC, Op.EXEC_NODE)
ANSWER_BOUNDS: Mapping[str, float] = {
    op: READ_BOUND if op in READS else WRITE_BOUND for op in Op if op not in EXECS
}
# With a runtime (runc, crun, CRI) the agent holds its lock while the runtime starts a pod's containers, each
# start bounded by the configured runtimeRequestTimeout (COMMAND_TIMEOUT until configured; a CRI sandbox by twice
# it); every answer may wait that long. Measured under TCG: runc 1.1.15 took 26-35 s per container of a CPU-limited
# pod (runc init's CPU is charged to the pod's quota).
HELD_STARTS = 5  # containers one holding of the lock may start: a pause and four (the suites' largest pod)


def lock_hold(runtime: str, request_timeout: float = COMMAND_TIMEOUT) -> float:
    """Seconds the agent may hold its lock on top of its own work: HELD_STARTS runtime commands, each bounded by
    `request_timeout` (the runtimeRequestTimeout it runs with), the sandbox's twice; none when the agent starts the
    processes itself."""
    if runtime == DIRECT:
        return 0.0
    return (HELD_STARTS + (1 if runtime == CONTAINERD else 0)) * request_timeout


class Stream(Protocol):
    """A byte stream to a process on the node (the agent bridge)."""

    def write(self, data: bytes) -> None: ...

    def readline(self, timeout: float | None = None) -> bytes: ...

    def close(self) -> None: ...


class AgentClient:
    """JSON-lines requests to the agent over one stream; one request at a time, each answered within its bound
    (`last_agent_ms`: time the agent spent on the last answer, the rest of a call's time is transport;
    `describe_host` adds what the host shows, e.g. a VM's console tail, to a missed answer; `held` is added to
    every bound, see lock_hold)."""

    def __init__(self, stream: Stream, bounds: Mapping[str, float] = ANSWER_BOUNDS,
                 describe_host: Callable[[], str] | None = None, held: float = 0.0) -> None:
        self.stream = stream
        self.bounds = bounds
        self.held = held
        self.describe_host = describe_host
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        self.last_agent_ms = 0.0
        self.failed = ""
        self.interrupted = 0  # a request whose wait was interrupted (Ctrl-C, SIGTERM): its answer may still come

    def bound(self, op: Op, args: Mapping[str, Any]) -> float:
        """Seconds to wait for the answer to op: its bound (an exec's own timeout plus EXEC_MARGIN), plus `held`."""
        if op in EXECS:
            return float(args.get("timeout", READ_BOUND)) + EXEC_MARGIN + self.held
        return self.bounds.get(op, WRITE_BOUND) + self.held

    def call(self, op: Op, **args: Any) -> Any:
        with self.lock:
            if self.failed:
                raise NodeError(f"the enforcer no longer answers ({self.failed})")
            ident = next(self.ids)
            bound = self.bound(op, args)
            name = op.value
            try:
                self.stream.write(encode_request(ident, op, args))
                line = self._answer(bound)
            except (TimeoutError, OSError) as err:
                # A late answer would pair with the next request: the stream is given up.
                self.failed = (f"it did not answer {name!r} within {bound:g} s, the bound for {name!r}: "
                               f"{err or 'timeout'}")
                host = f"; {self.describe_host()}" if self.describe_host else ""
                raise NodeError(f"the enforcer did not answer {name!r} within {bound:g} s (the bound for {name!r}): "
                                f"{err or 'timeout'}{host}") from None
            except BaseException:
                self.interrupted = ident  # the cleanup that follows an interrupt must not read this one's answer
                raise
        if not line:
            raise NodeError(f"the enforcer closed the connection during {name!r} (see its log)")
        reply = decode_reply(line)
        if reply.ident != ident:
            raise NodeError(f"the enforcer answered request {reply.ident} to request {ident}")
        if not reply.ok:
            raise NodeError(f"enforcer: {reply.error}")
        self.last_agent_ms = reply.agent_ms
        return reply.result

    def _answer(self, bound: float) -> bytes:
        """The next answer line, passing by the late answers of requests whose wait was interrupted (the agent
        answers in order, so each has an id at most `interrupted`)."""
        line = self.stream.readline(bound)
        while line and self.interrupted and _ident(line) <= self.interrupted:
            line = self.stream.readline(bound)
        self.interrupted = 0
        return line

    def close(self) -> None:
        self.stream.close()


def _ident(line: bytes) -> int:
    """A reply line's id (0 when it has none)."""
    try:
        return int(json.loads(line).get("id") or 0)
    except (ValueError, AttributeError, TypeError):
        return 0
