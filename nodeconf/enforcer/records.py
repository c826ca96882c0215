"""What the agent remembers of each pod and container; JSON round trip for its state file and its API."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from typing import Any

from nodeconf.enforcer.oci_runtime import RuntimeProcess
from nodeconf.manifest import Pod
from nodeconf.manifest_reader import object_from_dict
from nodeconf.manifest_writer import pod_to_dict
from nodeconf.semantics.resize import allocated_resources, status_resources

# Container kinds in start order: the sandbox, init containers one by one, sidecars, then regular ones.
PAUSE, INIT, SIDECAR, REGULAR = "pause", "init", "sidecar", "regular"


@dataclass
class ContainerRecord:
    """One container (or the pause process): its cgroup, command, and Kubernetes-style state."""

    name: str
    kind: str
    cgroup: str
    argv: tuple[str, ...]
    oom_score_adj: int
    state: str = "waiting"
    reason: str = "ContainerCreating"
    exit_code: int | None = None
    restarts: int = 0
    last_state: dict[str, Any] | None = None
    started_at: float | None = None
    finished_at: float | None = None
    next_start: float = 0.0
    oom_kills_at_start: int = 0
    proc: subprocess.Popen[bytes] | RuntimeProcess | None = field(default=None, repr=False)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.returncode is None else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "kind": self.kind, "cgroup": self.cgroup, "argv": list(self.argv),
            "oomScoreAdj": self.oom_score_adj, "state": self.state, "reason": self.reason,
            "exitCode": self.exit_code, "restartCount": self.restarts, "lastState": self.last_state,
            "startedAt": self.started_at, "finishedAt": self.finished_at, "pid": self.pid,
        }

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> ContainerRecord:
        return cls(
            name=doc["name"], kind=doc["kind"], cgroup=doc["cgroup"], argv=tuple(doc["argv"]),
            oom_score_adj=int(doc["oomScoreAdj"]), state=doc["state"], reason=doc["reason"],
            exit_code=doc["exitCode"], restarts=int(doc["restartCount"]), last_state=doc["lastState"],
            started_at=doc["startedAt"], finished_at=doc["finishedAt"],
        )


@dataclass
class PodRecord:
    """An admitted pod: its (possibly resized) spec, cgroup, containers, phase, events and resize status."""

    pod: Pod
    qos_class: str
    cgroup: str
    containers: list[ContainerRecord]
    phase: str = "Pending"
    reason: str = ""
    message: str = ""
    events: list[dict[str, str]] = field(default_factory=list)
    resize_status: str = ""
    resize_message: str = ""
    desired: Pod | None = None
    disrupted_at: float | None = None  # when the agent evicted the pod (time.time())

    @property
    def ref(self) -> str:
        return self.pod.ref

    def container(self, name: str) -> ContainerRecord:
        for c in self.containers:
            if c.name == name and c.kind != PAUSE:
                return c
        raise KeyError(f"pod {self.ref} has no container {name!r}")

    def event(self, type_: str, reason: str, message: str) -> None:
        self.events.append({"type": type_, "reason": reason, "message": message})

    def to_dict(self) -> dict[str, Any]:
        return {
            "pod": pod_to_dict(self.pod), "qosClass": self.qos_class, "cgroup": self.cgroup,
            "containers": [self._status_of(c) for c in self.containers], "phase": self.phase,
            "reason": self.reason, "message": self.message, "events": list(self.events),
            "resize": {"status": self.resize_status, "message": self.resize_message,
                       "desired": pod_to_dict(self.desired) if self.desired is not None else None},
            "disruptedAt": self.disrupted_at,
        }

    def _status_of(self, c: ContainerRecord) -> dict[str, Any]:
        """A container's document with, for a container of the spec, the resources it runs with and the ones
        allocated to it, as the kubelet reports them (semantics.resize.STATUS_RESOURCES_RULE); the enforcer
        actuates an allocation as it accepts it, so both come from the pod's current spec."""
        doc = c.to_dict()
        spec = next((s for s in self.pod.all_containers if s.name == c.name), None) if c.kind != PAUSE else None
        if spec is not None:
            doc["resources"] = status_resources(spec)
            doc["allocatedResources"] = allocated_resources(spec)
        return doc

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> PodRecord:
        desired = doc["resize"]["desired"]
        return cls(
            pod=_pod(doc["pod"]), qos_class=doc["qosClass"], cgroup=doc["cgroup"],
            containers=[ContainerRecord.from_dict(c) for c in doc["containers"]], phase=doc["phase"],
            reason=doc["reason"], message=doc["message"], events=list(doc["events"]),
            resize_status=doc["resize"]["status"], resize_message=doc["resize"]["message"],
            desired=_pod(desired) if desired is not None else None, disrupted_at=doc.get("disruptedAt"),
        )


def _pod(doc: Any) -> Pod:
    obj = object_from_dict(doc, source="agent state")
    if not isinstance(obj, Pod):
        raise ValueError("agent state holds a non-pod object where a pod belongs")
    return obj
