"""The agent's pods: one record per admitted pod by its ref, how a record is made from the oracle's expectation,
and the records as the state file keeps them.

Source: issue 27 item 3 (the agent by composition); enforcer/records.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from nodeconf import names
from nodeconf.enforcer import process
from nodeconf.enforcer.agent_error import AgentError
from nodeconf.enforcer.cgroupfs import CgroupTree
from nodeconf.enforcer.ownership import foreign_message, is_marked, process_start
from nodeconf.enforcer.records import INIT, PAUSE, REGULAR, SIDECAR, ContainerRecord, PodRecord
from nodeconf.manifest import Pod
from nodeconf.semantics.expectation import ContainerExpectation, PodExpectation
from nodeconf.workloads import SLEEPER

TERMINAL = ("Succeeded", "Failed")


class PodTable(Mapping[str, PodRecord]):
    """The admitted pods by ref, in admission order."""

    def __init__(self) -> None:
        self._records: dict[str, PodRecord] = {}
        # Each running process's start time by its process object (kept alive here, so its id stays its own): read
        # once per process, not at every save (the state file is written after every change; one /proc/PID/stat
        # read costs ~0.6 ms under TCG: ~10 ms a save with four pods, issue 31). Once read it is also the start of
        # the process the agent started, never that of a process that reused its pid later.
        self._starts: dict[int, tuple[object, int | None]] = {}

    def __getitem__(self, ref: str) -> PodRecord:
        return self._records[ref]

    def __iter__(self) -> Iterator[str]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)

    def record(self, ref: str) -> PodRecord:
        """The pod's record; AgentError when there is none."""
        record = self._records.get(ref)
        if record is None:
            raise AgentError(f"no pod {ref}")
        return record

    def live(self) -> list[PodRecord]:
        """The records of the pods not yet Succeeded or Failed."""
        return [r for r in self._records.values() if r.phase not in TERMINAL]

    def active(self) -> list[Pod]:
        """The pods the oracle computes the node with: those not yet Succeeded or Failed."""
        return [r.pod for r in self.live()]

    def add(self, record: PodRecord) -> None:
        self._records[record.ref] = record

    def remove(self, ref: str) -> None:
        del self._records[ref]

    def clear(self) -> None:
        self._records.clear()

    def refusal(self, pod: Pod, cgroup: str, tree: CgroupTree) -> list[str]:
        """The refusal of a pod whose uid (hence cgroup) another pod holds, or whose cgroup exists without
        nodeconf's mark: deleting one would kill the other's processes."""
        for other in self._records.values():
            if other.pod.uid == pod.uid or other.cgroup == cgroup:
                return [f"pod {pod.ref}: uid {pod.uid} is already used by pod {other.ref} (cgroup {other.cgroup}); "
                        "two pods must not share one uid"]
        directory = tree.dir(cgroup)
        if directory.exists() and not is_marked(directory, tree.kernel, tree.owner):
            return [f"pod {pod.ref}: {foreign_message(directory)}"]
        return []

    def saved(self) -> list[dict[str, Any]]:
        """The records for the state file: with each process's start time, to tell a reused pid apart later."""
        out = []
        starts: dict[int, tuple[object, int | None]] = {}
        for record in self._records.values():
            doc = record.to_dict()
            for c, entry in zip(record.containers, doc["containers"]):
                entry["pidStart"] = self._pid_start(c, starts)
            out.append(doc)
        self._starts = starts
        return out

    def _pid_start(self, c: ContainerRecord, starts: dict[int, tuple[object, int | None]]) -> int | None:
        """The start time of the container's running process, from the last save when it is the same process."""
        pid = c.pid
        if pid is None:
            return None
        known = self._starts.get(id(c.proc))
        start = known[1] if known is not None and known[0] is c.proc else process_start(pid)
        starts[id(c.proc)] = (c.proc, start)
        return start

    def restore(self, docs: Sequence[dict[str, Any]]) -> None:
        """Take the records back from a state file; running containers start again."""
        for doc in docs:
            record = PodRecord.from_dict(doc)
            for c in record.containers:
                if c.state == "running":
                    c.state, c.reason, c.next_start = "waiting", "AgentRestarted", 0.0
            self.add(record)


def admitted_record(pe: PodExpectation) -> PodRecord:
    """The record of a pod the oracle admitted (its cgroup set): the pause process first, then its containers,
    with the oracle's events."""
    assert pe.cgroup is not None
    containers = [_container_record(c, pe.pod) for c in pe.containers]
    if pe.pause is not None:
        containers.insert(0, _container_record(pe.pause, None))
    record = PodRecord(pod=pe.pod, qos_class=pe.qos_class.value, cgroup=pe.cgroup.path, containers=containers)
    for event in pe.events:
        record.event(event.type, event.reason, event.message)
    return record


def check_names(pod: Pod) -> None:
    """AgentError for a pod whose name, namespace, uid or a container name nodeconf will not put in a path."""
    try:
        names.pod_name(pod.name)
        names.label(pod.namespace, "namespace")
        names.uid(pod.uid)
        for c in pod.all_containers:
            names.label(c.name, "container name")
    except names.UnsafeName as err:
        raise AgentError(f"pod {pod.ref}: {err}") from None


def _container_record(ce: ContainerExpectation, pod: Pod | None) -> ContainerRecord:
    """The record of an expected container (the pause process when pod is None) with its argv and kind."""
    kind, argv = PAUSE, SLEEPER
    if pod is not None:
        spec = next(c for c in pod.all_containers if c.name == ce.name)
        argv = process.container_argv(spec.command, spec.args)
        kind = REGULAR if spec in pod.containers else (SIDECAR if spec.is_sidecar else INIT)
    return ContainerRecord(name=ce.name, kind=kind, cgroup=ce.cgroup.path, argv=argv,
                           oom_score_adj=int(ce.oom_score_adj.value))
