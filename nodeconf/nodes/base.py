"""The node protocol (DESIGN.md "The node protocol"): what every node driver gives the suites, typed."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from nodeconf.errors import InfrastructureError
from nodeconf.errors import NotApplicable as NotApplicable  # re-exported: drivers raise it, suites catch it
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import NamespaceObject, Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics.eviction import PidObservation
from nodeconf.semantics.expectation import Event

UNLIMITED = "max"


class NodeError(InfrastructureError):
    """The node refused a request or could not be reached (an infrastructure fault, not a failed check)."""


@dataclass(frozen=True)
class CgroupFiles(Mapping[str, str]):
    """The files of one cgroup as read back (raw text without the final newline), with typed readers."""

    path: str
    raw: Mapping[str, str]

    def __getitem__(self, name: str) -> str:
        try:
            return self.raw[name]
        except KeyError:
            raise KeyError(f"cgroup {self.path} has no file {name!r} (or it was not read)") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)

    def limit(self, name: str) -> int | None:
        """A limit file such as memory.max: its integer, or None for `max` (unlimited)."""
        text = self[name]
        return None if text == UNLIMITED else int(text)

    def number(self, name: str) -> int:
        return int(self[name])

    def keyed(self, name: str) -> dict[str, int]:
        """A flat-keyed file (memory.events, cpu.stat, memory.stat) as a mapping."""
        out = {}
        for line in self[name].splitlines():
            key, _, value = line.partition(" ")
            out[key] = int(value)
        return out

    def cpu_max(self) -> tuple[int | None, int]:
        """cpu.max as (quota or None for `max`, period) in microseconds."""
        quota, period = self["cpu.max"].split()
        return (None if quota == UNLIMITED else int(quota)), int(period)

    def procs(self) -> list[int]:
        return [int(p) for p in self.raw.get("cgroup.procs", "").split()]


@dataclass(frozen=True)
class Terminated:
    exit_code: int
    reason: str


@dataclass(frozen=True)
class ContainerState:
    """A container's status: running / waiting / terminated, with exit code, reason and restart count."""

    name: str
    state: str
    reason: str = ""
    exit_code: int | None = None
    restart_count: int = 0
    last_terminated: Terminated | None = None
    pid: int | None = None
    # status.resources (requests and limits the container runs with) and status.allocatedResources, as the node
    # reports them; None when it reports none.
    resources: Mapping[str, Mapping[str, str]] | None = None
    allocated_resources: Mapping[str, str] | None = None

    @property
    def running(self) -> bool:
        return self.state == "running"


@dataclass(frozen=True)
class ResizeStatus:
    """Outcome of the last resize: '' (none), Applied, InProgress, Deferred or Infeasible, with the message."""

    status: str
    message: str = ""


@dataclass(frozen=True)
class PodStatus:
    phase: str
    qos_class: str
    containers: Mapping[str, ContainerState]
    events: tuple[Event, ...] = ()
    reason: str = ""
    message: str = ""
    resize: ResizeStatus = ResizeStatus("")
    # When the node disrupted the pod (evicted it), seconds since the epoch: the kubelet's DisruptionTarget
    # condition lastTransitionTime (KEP-3329); None while the pod was not disrupted.
    disrupted_at: float | None = None
    # The pod's status.allocatedResources (cpu and memory), None when the node reports none.
    allocated_resources: Mapping[str, str] | None = None

    def container(self, name: str) -> ContainerState:
        try:
            return self.containers[name]
        except KeyError:
            raise KeyError(f"no container {name!r} (have {', '.join(self.containers)})") from None


def last_seen(status: PodStatus) -> str:
    """A pod's phase, each container's state/reason and the newest warning event (why a container did not
    start: the runtime's error), for a wait that timed out."""
    warnings = [e for e in status.events if e.type == "Warning"]
    newest = f"; last warning {warnings[-1].reason}: {warnings[-1].message}" if warnings else ""
    containers = ", ".join(f"{c.name}={c.state}/{c.reason}" for c in status.containers.values())
    return f"last status {status.phase}, containers {containers}{newest}"


@dataclass(frozen=True)
class ContainerEvidence:
    """One container's cgroup files (where its processes run and the runtime wrote its values), its pids and each
    pid's oom_score_adj; `scope` is the runtime's cgroup above that one when the runtime runs the processes in a
    sub-cgroup of it (crun's `container` in its systemd scope): a kubelet's cadvisor reports the scope's counters."""

    name: str
    cgroup: CgroupFiles
    pids: tuple[int, ...]
    oom_score_adj: Mapping[int, int | None]
    scope: CgroupFiles | None = None


@dataclass(frozen=True)
class PodEvidence:
    """Everything about one pod read at one moment: status, containers (and the pause process), pod,
    QoS and kubepods cgroups. `pause_absent` says why the runtime runs no pause process for this pod (CRI-O
    without an infra container); '' when it should run one."""

    status: PodStatus
    pod_cgroup: CgroupFiles
    containers: Mapping[str, ContainerEvidence]
    pause: ContainerEvidence | None
    ancestors: Mapping[str, CgroupFiles] = field(default_factory=dict)
    pause_absent: str = ""

    def container(self, name: str) -> ContainerEvidence:
        try:
            return self.containers[name]
        except KeyError:
            raise KeyError(f"no container {name!r} (have {', '.join(self.containers)})") from None

    def cgroup(self, path: str) -> CgroupFiles:
        """Any cgroup of the evidence by its path relative to the cgroup root."""
        every = {self.pod_cgroup.path: self.pod_cgroup, **self.ancestors,
                 **{c.cgroup.path: c.cgroup for c in self.containers.values()}}
        if self.pause is not None:
            every[self.pause.cgroup.path] = self.pause.cgroup
        try:
            return every[path]
        except KeyError:
            raise KeyError(f"cgroup {path} is not part of this pod's evidence") from None


@dataclass(frozen=True)
class NodeConditions:
    """Node conditions by type (True when the condition holds) and the node's events."""

    conditions: Mapping[str, bool]
    events: tuple[Event, ...] = ()

    @property
    def memory_pressure(self) -> bool:
        return self.conditions.get("MemoryPressure", False)

    @property
    def pid_pressure(self) -> bool:
        return self.conditions.get("PIDPressure", False)


@dataclass(frozen=True)
class ExecResult:
    rc: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class Metrics:
    """A /metrics page: the text and its samples keyed by name and sorted label pairs."""

    text: str
    samples: Mapping[tuple[str, tuple[tuple[str, str], ...]], float]

    def value(self, name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        try:
            return self.samples[key]
        except KeyError:
            raise KeyError(f"metric {name}{labels or ''} not exposed") from None


class PodHandle(ABC):
    """A pod sent to a node: admitted (and running) or rejected with the node's messages."""

    def __init__(self, pod: Pod, admitted: bool, errors: Sequence[str]) -> None:
        self.pod = pod
        self.admitted = admitted
        self.errors = tuple(errors)

    @abstractmethod
    def status(self) -> PodStatus: ...

    @abstractmethod
    def evidence(self, extra_files: Sequence[str] = ()) -> PodEvidence:
        """All files of the pod's containers, pause, pod, QoS and kubepods cgroups, pids, oom_score_adj:
        one round trip."""

    @abstractmethod
    def resize(self, patch: Mapping[str, Any]) -> ResizeStatus:
        """Apply a resize patch (`{"spec": {"containers": [{"name", "resources"}]}}`); its status."""

    @abstractmethod
    def exec(self, container: str, argv: Sequence[str], timeout: float = 30.0) -> ExecResult: ...

    @abstractmethod
    def delete(self) -> None: ...

    def events(self) -> tuple[Event, ...]:
        return self.status().events

    def wait_for(self, predicate: Callable[[PodStatus], bool], timeout: float = 60.0,
                 interval: float = 0.1, what: str = "condition") -> PodStatus:
        """Poll the status until predicate holds (every 0.1 s: a status read is ~40 ms on a TCG VM); NodeError
        naming `what` and the last status on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.status()
            if predicate(status):
                return status
            if time.monotonic() > deadline:
                raise NodeError(f"pod {self.pod.ref}: {what} not reached within {timeout:g} s; {last_seen(status)}")
            time.sleep(interval)

    def wait_running(self, timeout: float = 60.0) -> PodStatus:
        return self.wait_for(lambda s: all(c.running for c in s.containers.values()), timeout,
                             what="all containers running")


class Node(ABC):
    """One node under test; a context manager that releases it."""

    spec: str = ""
    image: str = ""  # what the node booted from, where nodeconf booted it (the reports show it); "" when unknown
    # The kubelet's command-line flags beyond its configuration where nodeconf plays the kubelet (the reports show
    # them), e.g. a slow VM's --runtime-request-timeout; "" for none.
    kubelet_flags: str = ""

    @abstractmethod
    def facts(self) -> NodeFacts: ...

    @abstractmethod
    def configure(self, config: KubeletConfig, version: str | None = None) -> Sequence[str]:
        """Switch the kubelet configuration (and the profile's version); the kubelet's startup warnings."""

    @abstractmethod
    def set_namespace_objects(self, objects: Sequence[NamespaceObject]) -> None:
        """Replace the LimitRange and ResourceQuota objects that admission consults."""

    @abstractmethod
    def run(self, pod: Pod) -> PodHandle: ...

    @abstractmethod
    def node_cgroups(self, extra_files: Sequence[str] = ()) -> Mapping[str, CgroupFiles]:
        """kubepods and the QoS cgroups as read back now (the reference agent adds the reserve cgroups it made)."""

    def evidence_of(self, handles: Sequence[PodHandle], extra_files: Sequence[str] = ()) -> list[PodEvidence]:
        """Each admitted pod's evidence, in order (a driver that can read them all in one round trip overrides
        this)."""
        return [handle.evidence(extra_files) for handle in handles]

    def kubelet_version(self) -> str | None:
        """The `X.Y` version of a kubelet nodeconf cannot change (a cluster node's: its profile), None where nodeconf
        runs the kubelet it checks (the run's profile)."""
        return None

    def running_config(self) -> KubeletConfig | None:
        """The configuration of a kubelet nodeconf cannot change (a cluster node's, as its provider set it: the
        checks' base), None where nodeconf configures the kubelet (the run's `--kubelet-config`)."""
        return None

    def other_pods(self) -> Sequence[Pod]:
        """Pods the node runs that no check sent (a cluster's system pods, the reader pod): the kubelet counts
        their requests in the node-level cgroups and admission, so the oracle gets them too; none by default."""
        return ()

    def exec_in_node_cgroup(self, path: str, argv: Sequence[str], timeout: float = 30.0) -> ExecResult:
        """Run argv to completion in a node-level cgroup the driver made (the reference agent's enforced reserve
        cgroups); NotApplicable where the driver cannot place a process there."""
        raise NotApplicable(f"node {self.spec or type(self).__name__} cannot run a process in cgroup {path}")

    def conditions(self) -> NodeConditions:
        """Node conditions (MemoryPressure) and node-level events; drivers that can read them override this."""
        raise NodeError(f"node {self.spec or type(self).__name__} does not report node conditions")

    def pid_observation(self) -> PidObservation:
        """The kubelet's pid.available observation now (its summary's node.rlimit: task ceiling and running
        tasks); drivers that can read it override this."""
        raise NotApplicable(f"node {self.spec or type(self).__name__} does not report its rlimit stats")

    @abstractmethod
    def metrics(self) -> Metrics: ...

    def cadvisor_metrics(self) -> Metrics:
        """The kubelet's /metrics/cadvisor (per-container counters such as PSI); drivers that can read it override
        this."""
        raise NotApplicable(f"node {self.spec or type(self).__name__} does not serve /metrics/cadvisor")

    def stats_summary(self) -> Mapping[str, Any]:
        """The kubelet's /stats/summary (stats/v1alpha1 Summary as JSON); drivers that can read it override this."""
        raise NotApplicable(f"node {self.spec or type(self).__name__} does not serve /stats/summary")

    def resource_metrics(self) -> Metrics:
        """The kubelet's /metrics/resource; drivers that can read it override this."""
        raise NotApplicable(f"node {self.spec or type(self).__name__} does not serve /metrics/resource")

    @abstractmethod
    def logs(self) -> str: ...

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Node:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def parse_metrics(text: str) -> Metrics:
    """Parse the Prometheus text format (samples only; HELP/TYPE skipped; a sample's optional timestamp, which
    cadvisor's collector writes, ignored)."""
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        brace = line.find("{")
        if brace < 0:
            name, rest = line.split(None, 1)
            labels: list[tuple[str, str]] = []
        else:
            name, (labels, rest) = line[:brace], _labels(line, brace + 1)
        samples[(name, tuple(sorted(labels)))] = float(rest.split()[0])
    return Metrics(text, samples)


def _labels(line: str, i: int) -> tuple[list[tuple[str, str]], str]:
    """The label pairs from position i (just after `{`) and the text after the closing `}`."""
    labels: list[tuple[str, str]] = []
    while line[i] != "}":
        key_end = line.index('="', i)
        key, i = line[i:key_end], key_end + 2
        chars = []
        while line[i] != '"':
            if line[i] == "\\":
                i += 1
                chars.append({"n": "\n"}.get(line[i], line[i]))
            else:
                chars.append(line[i])
            i += 1
        labels.append((key, "".join(chars)))
        i += 1
        while line[i] in ", ":
            i += 1
    return labels, line[i + 1:]
