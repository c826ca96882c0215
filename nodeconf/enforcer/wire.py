"""The agent's protocol, shared by the agent (server) and the driver (client): one JSON object per line, the
operations and their arguments, the request and reply envelopes, the documents the driver reads back, and the
exit statuses of `serve`. Standard library only: it runs on the node.

Source: issue 12 (one wire module for the agent protocol that both sides import).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypedDict

from nodeconf.node_facts import NodeFacts
from nodeconf.str_enum import StrEnum

if TYPE_CHECKING:  # typing.NotRequired is 3.11+; the agent also runs on 3.9 (annotations stay strings)
    from typing import NotRequired

# Exit statuses of `serve`: another agent already answers on the socket (the driver must not clean up then);
# the kubepods cgroups hold a tree nodeconf did not create.
ALREADY_RUNNING = 3
FOREIGN_TREE = 4


class Op(StrEnum):
    """The operations the agent answers."""

    PING = "ping"
    FACTS = "facts"
    CONFIGURE = "configure"
    OBJECTS = "objects"
    RUN = "run"
    STATUS = "status"
    PODS = "pods"
    NODE_STATUS = "node_status"
    EVIDENCE = "evidence"
    EVIDENCE_BATCH = "evidence_batch"
    NODE_CGROUPS = "node_cgroups"
    RESIZE = "resize"
    EXEC = "exec"
    EXEC_NODE = "exec_node"
    DELETE = "delete"
    METRICS = "metrics"
    CADVISOR_METRICS = "cadvisor_metrics"
    STATS_SUMMARY = "stats_summary"
    RESOURCE_METRICS = "resource_metrics"
    LOGS = "logs"
    RESET = "reset"
    SHUTDOWN = "shutdown"


# The arguments each operation takes besides `id` and `op` (the server reads these, the client sends only these).
ARGUMENTS: Mapping[Op, frozenset[str]] = {
    Op.PING: frozenset(), Op.FACTS: frozenset(), Op.CONFIGURE: frozenset({"config", "version"}),
    Op.OBJECTS: frozenset({"objects"}), Op.RUN: frozenset({"pod"}), Op.STATUS: frozenset({"pod"}),
    Op.PODS: frozenset(), Op.NODE_STATUS: frozenset(), Op.EVIDENCE: frozenset({"pod", "files"}),
    Op.EVIDENCE_BATCH: frozenset({"pods", "files"}),
    Op.NODE_CGROUPS: frozenset({"files"}), Op.RESIZE: frozenset({"pod", "patch"}),
    Op.EXEC: frozenset({"pod", "container", "argv", "timeout"}), Op.DELETE: frozenset({"pod"}),
    Op.EXEC_NODE: frozenset({"cgroup", "argv", "timeout"}),
    Op.METRICS: frozenset(), Op.CADVISOR_METRICS: frozenset(), Op.STATS_SUMMARY: frozenset(),
    Op.RESOURCE_METRICS: frozenset(), Op.LOGS: frozenset({"pod", "container"}),
    Op.RESET: frozenset(),
    Op.SHUTDOWN: frozenset(),
}
# Operations that only read (answered after the agent's lock, in milliseconds); the others start or kill processes.
READS = frozenset({Op.PING, Op.FACTS, Op.STATUS, Op.PODS, Op.NODE_STATUS, Op.EVIDENCE, Op.EVIDENCE_BATCH,
                   Op.NODE_CGROUPS, Op.METRICS, Op.CADVISOR_METRICS, Op.STATS_SUMMARY, Op.RESOURCE_METRICS, Op.LOGS,
                   Op.OBJECTS})


class WireError(ValueError):
    """A line that is not a request or reply of this protocol."""


@dataclass(frozen=True)
class Request:
    ident: Any
    op: str
    args: dict[str, Any]


@dataclass(frozen=True)
class Reply:
    ident: Any
    ok: bool
    result: Any = None
    error: str = ""
    agent_ms: float = 0.0


def encode_request(ident: int, op: Op, args: Mapping[str, Any]) -> bytes:
    """One request line; ValueError for an argument the operation does not take (a driver bug)."""
    unknown = set(args) - ARGUMENTS[op]
    if unknown:
        raise ValueError(f"op {op.value!r} takes no {sorted(unknown)}")
    return json.dumps({"id": ident, "op": op.value, **args}).encode() + b"\n"


def decode_request(line: bytes) -> Request:
    """The request on one line; WireError when it is not a JSON object."""
    try:
        doc = json.loads(line)
    except ValueError as err:
        raise WireError(f"request is not JSON: {err}") from None
    if not isinstance(doc, dict):
        raise WireError("request must be a JSON object")
    return Request(doc.get("id"), str(doc.get("op")), doc)


def encode_reply(reply: Reply) -> bytes:
    """One reply line: {"id", "ok": true, "result", "agentMs"} or {"id", "ok": false, "error"}."""
    return json.dumps(reply_document(reply)).encode() + b"\n"


def reply_document(reply: Reply) -> dict[str, Any]:
    if reply.ok:
        return {"id": reply.ident, "ok": True, "result": reply.result, "agentMs": reply.agent_ms}
    return {"id": reply.ident, "ok": False, "error": reply.error}


def decode_reply(line: bytes) -> Reply:
    """The reply on one line (KeyError/ValueError when it is not one)."""
    doc = json.loads(line)
    if doc["ok"]:
        return Reply(doc.get("id"), True, doc["result"], agent_ms=float(doc["agentMs"]))
    return Reply(doc.get("id"), False, error=str(doc["error"]))


class EventDoc(TypedDict):
    type: str
    reason: str
    message: str


class TerminatedDoc(TypedDict):
    exitCode: int
    reason: str


class LastStateDoc(TypedDict, total=False):
    terminated: TerminatedDoc


class ContainerStatusDoc(TypedDict):
    """One container of a status document (`kind`: init, sidecar, regular or pause)."""

    name: str
    kind: str
    cgroup: str
    state: str
    reason: str
    exitCode: int | None
    restartCount: int
    lastState: LastStateDoc
    pid: int | None
    resources: NotRequired[dict[str, dict[str, str]]]  # a spec container's status.resources (not the pause one's)
    allocatedResources: NotRequired[dict[str, str]]  # and its status.allocatedResources


class ResizeDoc(TypedDict):
    status: str
    message: str


class PodStatusDoc(TypedDict):
    """What `status` answers and `evidence` holds under "status" (records.PodRecord.to_dict writes it, with the
    fields of the state file besides)."""

    phase: str
    qosClass: str
    cgroup: str
    containers: list[ContainerStatusDoc]
    reason: str
    message: str
    events: list[EventDoc]
    resize: ResizeDoc
    disruptedAt: NotRequired[float | None]  # absent in a state file written before it existed
    allocatedResources: NotRequired[dict[str, str]]  # the pod's status.allocatedResources (`status` answers only)


class ProcessesDoc(TypedDict):
    """A container's pids, their oom_score_adj, and the cgroup they run in (crun: a sub-cgroup of its scope)."""

    pids: list[int]
    oomScoreAdj: dict[str, int]
    cgroup: str


class EvidenceDoc(TypedDict):
    """What `evidence` answers: status, files per cgroup path (None: unreadable), processes per container."""

    status: PodStatusDoc
    cgroups: dict[str, dict[str, str | None]]
    processes: dict[str, ProcessesDoc]


class EvidenceBatchDoc(TypedDict):
    """What `evidence_batch` answers: each pod's `evidence` document, by pod reference, in one round trip (issue 31:
    the checks of a module's shared pods read them all at once)."""

    pods: dict[str, EvidenceDoc]


class RunDoc(TypedDict):
    admitted: bool
    errors: list[str]
    status: dict[str, Any] | None


class ExecDoc(TypedDict):
    rc: int
    stdout: str
    stderr: str


class RlimitDoc(TypedDict):
    """The kubelet summary's node.rlimit: the task ceiling and the tasks running now."""

    maxpid: int
    curproc: int


class NodeStatusDoc(TypedDict):
    conditions: dict[str, bool]
    events: list[EventDoc]
    rlimit: RlimitDoc | None


# NodeFacts fields sent by name besides the base ones; tuples travel as lists, kernel_config as [option, value] pairs.
LAYER_FIELDS = ("debian_release", "init", "init_version", "runtime", "runtime_version", "cgroup2_mount_options",
                "cgroup_subtree_control", "swap_devices", "psi", "kernel_config", "measured_cpu_weight_formula",
                "pid_capacity", "hugepages", "runtime_config", "runtime_daemon_oom_score_adj",
                "kubelet_oom_score_adj")


def facts_to_dict(facts: NodeFacts) -> dict[str, Any]:
    """What `facts` answers."""
    return {
        "memoryCapacity": facts.memory_capacity, "swapCapacity": facts.swap_capacity,
        "cpuCapacityMilli": facts.cpu_capacity_milli, "pageSize": facts.page_size,
        "kernelVersion": facts.kernel_version, "cgroupControllers": list(facts.cgroup_controllers),
        "cpuWeightFormula": facts.cpu_weight_formula,
        **{name: getattr(facts, name) for name in LAYER_FIELDS},
    }


def facts_from_dict(doc: Mapping[str, Any]) -> NodeFacts:
    controllers = doc["cgroupControllers"]
    assert isinstance(controllers, list)
    base = NodeFacts(
        memory_capacity=int(str(doc["memoryCapacity"])), swap_capacity=int(str(doc["swapCapacity"])),
        cpu_capacity_milli=int(str(doc["cpuCapacityMilli"])), page_size=int(str(doc["pageSize"])),
        kernel_version=str(doc["kernelVersion"]), cgroup_controllers=tuple(str(c) for c in controllers),
        cpu_weight_formula=str(doc["cpuWeightFormula"]),
    )
    return replace(base, **{name: _layer_value(doc[name]) for name in LAYER_FIELDS if name in doc})


def _layer_value(value: object) -> Any:
    """A layer fact back from JSON: lists become tuples (pairs too), the rest as is."""
    if isinstance(value, list):
        return tuple(tuple(item) if isinstance(item, list) else item for item in value)
    return value
