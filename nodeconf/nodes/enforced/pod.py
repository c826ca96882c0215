"""A pod on a node run by the bundled enforcer, and the driver's types built from the agent's status and evidence
documents."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from nodeconf.enforcer.wire import ContainerStatusDoc, EvidenceDoc, Op, PodStatusDoc, ResizeDoc
from nodeconf.manifest import Pod
from nodeconf.nodes.base import (
    CgroupFiles,
    ContainerEvidence,
    ContainerState,
    ExecResult,
    NodeError,
    PodEvidence,
    PodHandle,
    PodStatus,
    ResizeStatus,
    Terminated,
)
from nodeconf.nodes.enforced.agent_client import AgentClient
from nodeconf.semantics.expectation import Event


class AgentNode(Protocol):
    """What a pod handle needs of its node (an EnforcedNode): the agent's client and whether the agent runs."""

    @property
    def client(self) -> AgentClient: ...

    @property
    def running(self) -> bool: ...


def _container_state(doc: ContainerStatusDoc) -> ContainerState:
    last = (doc.get("lastState") or {}).get("terminated")
    return ContainerState(
        name=doc["name"], state=doc["state"], reason=doc["reason"], exit_code=doc["exitCode"],
        restart_count=doc["restartCount"],
        last_terminated=Terminated(last["exitCode"], last["reason"]) if last else None, pid=doc["pid"],
        resources=doc.get("resources"), allocated_resources=doc.get("allocatedResources"),
    )


def pod_status(doc: PodStatusDoc) -> PodStatus:
    """A PodStatus from the agent's status document."""
    return PodStatus(
        phase=doc["phase"], qos_class=doc["qosClass"],
        containers={c["name"]: _container_state(c) for c in doc["containers"] if c["kind"] != "pause"},
        events=tuple(Event(e["type"], e["reason"], e["message"]) for e in doc["events"]),
        reason=doc["reason"], message=doc["message"],
        resize=ResizeStatus(doc["resize"]["status"], doc["resize"]["message"]), disrupted_at=doc.get("disruptedAt"),
        allocated_resources=doc.get("allocatedResources"),
    )


def cgroup_from_doc(path: str, raw: Mapping[str, str | None]) -> CgroupFiles:
    """The files of one cgroup from an agent document; a file the node does not have (None) is left out."""
    return CgroupFiles(path, {k: v for k, v in raw.items() if v is not None})


def pod_evidence(doc: EvidenceDoc) -> PodEvidence:
    """A PodEvidence from the agent's evidence document."""
    status = doc["status"]
    cgroups = {path: cgroup_from_doc(path, raw) for path, raw in doc["cgroups"].items()}
    pod_path = status["cgroup"]
    containers: dict[str, ContainerEvidence] = {}
    pause = None
    for c in status["containers"]:
        key = "POD" if c["kind"] == "pause" else c["name"]
        procs = doc["processes"][key]
        where = procs["cgroup"]
        evidence = ContainerEvidence(
            name=c["name"], cgroup=cgroups.get(where, CgroupFiles(where, {})),
            pids=tuple(procs["pids"]),
            oom_score_adj={int(pid): adj for pid, adj in procs["oomScoreAdj"].items()},
            scope=cgroups.get(c["cgroup"]) if where != c["cgroup"] else None,
        )
        if c["kind"] == "pause":
            pause = evidence
        else:
            containers[c["name"]] = evidence
    ancestors = {p: f for p, f in cgroups.items() if pod_path.startswith(p + "/")}
    return PodEvidence(status=pod_status(status), pod_cgroup=cgroups.get(pod_path, CgroupFiles(pod_path, {})),
                       containers=containers, pause=pause, ancestors=ancestors)


class EnforcedPod(PodHandle):
    def __init__(self, node: AgentNode, pod: Pod, admitted: bool, errors: Sequence[str]) -> None:
        super().__init__(pod, admitted, errors)
        self.node = node

    def _require_admitted(self) -> None:
        if not self.admitted:
            raise NodeError(f"pod {self.pod.ref} was rejected: {'; '.join(self.errors)}")

    def status(self) -> PodStatus:
        self._require_admitted()
        return pod_status(self.node.client.call(Op.STATUS, pod=self.pod.ref))

    def evidence(self, extra_files: Sequence[str] = ()) -> PodEvidence:
        self._require_admitted()
        return pod_evidence(self.node.client.call(Op.EVIDENCE, pod=self.pod.ref, files=list(extra_files)))

    def resize(self, patch: Mapping[str, Any]) -> ResizeStatus:
        self._require_admitted()
        doc: ResizeDoc = self.node.client.call(Op.RESIZE, pod=self.pod.ref, patch=dict(patch))
        return ResizeStatus(doc["status"], doc["message"])

    def exec(self, container: str, argv: Sequence[str], timeout: float = 30.0) -> ExecResult:
        self._require_admitted()
        return ExecResult(**self.node.client.call(Op.EXEC, pod=self.pod.ref, container=container, argv=list(argv),
                                                  timeout=timeout))

    def logs(self, container: str | None = None) -> str:
        self._require_admitted()
        text: str = self.node.client.call(Op.LOGS, pod=self.pod.ref, container=container)["text"]
        return text

    def delete(self) -> None:
        """Delete the pod; nothing to do once the node has stopped (the stop removed everything)."""
        if self.admitted and self.node.running:
            self.node.client.call(Op.DELETE, pod=self.pod.ref)
        self.admitted = False
