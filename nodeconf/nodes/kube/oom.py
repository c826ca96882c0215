"""OOM kills the API may report as a plain `Error`: evidence from the kernel's count in the pod cgroup.

containerd before v2.3.0 sets a container's reason OOMKilled only from the shim's TaskOOM event, which can
arrive after the exit has been reported, or never when the scope is removed first (containerd
internal/cri/server/events.go; v2.3.0 added the exit-137 + memory_events fallback, commit aa3c507), so the API
shows `Error` with exit code 137 (128 + SIGKILL, pkg/sys/reaper). The kernel counts every OOM kill in
`memory.events` `oom_kill` of the cgroup and of each ancestor (Documentation/admin-guide/cgroup-v2.rst,
memory.events: hierarchical unless mounted with memory_localevents), so the pod cgroup's counter survives its
containers. An exit 137 reported as `Error` counts as OOMKilled when that counter grew since the last exit 137
seen in the pod.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from nodeconf.nodes.base import ContainerState, Terminated
from nodeconf.nodes.kube.api import dig

OOM_EXIT_CODE = 137
OOM_KILLED = "OOMKilled"
# A termination: container name, where it is in the status (`state` or `lastState`), its identity.
Kill = tuple[str, str, tuple[str, str, str]]


def oom_kill_count(memory_events: str | None) -> int | None:
    """The `oom_kill` counter of a memory.events text; None when the file was not read."""
    for line in (memory_events or "").splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill" and value.strip().isdigit():
            return int(value)
    return None


def kills(pod_obj: Mapping[str, Any]) -> Iterator[tuple[Kill, str]]:
    """Every termination with exit code 137 in the pod's status, with the reason the runtime gave."""
    status = pod_obj.get("status") or {}
    for container in [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]:
        for where in ("state", "lastState"):
            terminated = dig(container, where, "terminated")
            if isinstance(terminated, Mapping) and terminated.get("exitCode") == OOM_EXIT_CODE:
                identity = (str(container.get("name")), str(terminated.get("containerID") or ""),
                            str(terminated.get("finishedAt") or ""))
                yield (identity[0], where, identity), str(terminated.get("reason") or "")


class OomLedger:
    """Per pod: the pod cgroup's oom_kill count at the last exit 137 judged, and each such exit's verdict."""

    def __init__(self) -> None:
        self.count = 0
        self.verdicts: dict[tuple[str, str, str], bool] = {}

    def unjudged(self, pod_obj: Mapping[str, Any]) -> bool:
        return any(kill[2] not in self.verdicts for kill, _ in kills(pod_obj))

    def judge(self, pod_obj: Mapping[str, Any], count: int | None) -> None:
        """Judge the new exits 137 with the counter read now (None: the pod cgroup is gone, no evidence)."""
        grown = count is not None and count > self.count
        for (_, _, identity), reason in kills(pod_obj):
            if identity not in self.verdicts:
                self.verdicts[identity] = reason != OOM_KILLED and grown
        if count is not None:
            self.count = max(self.count, count)

    def oom_killed(self, pod_obj: Mapping[str, Any]) -> set[tuple[str, str]]:
        """(container, `state` or `lastState`) of each termination the kernel's evidence shows as an OOM kill."""
        return {(name, where) for (name, where, identity), _ in kills(pod_obj) if self.verdicts.get(identity)}


def with_oom_reasons(states: Mapping[str, ContainerState], killed: set[tuple[str, str]]) -> dict[str, ContainerState]:
    """The container states with each termination in `killed` (OomLedger.oom_killed) reported as OOMKilled."""
    out = dict(states)
    for name, where in killed:
        state = out.get(name)
        if state is None:
            continue
        if where == "state" and state.state == "terminated":
            out[name] = replace(state, reason=OOM_KILLED)
        elif where == "lastState" and state.last_terminated is not None:
            out[name] = replace(state, last_terminated=Terminated(state.last_terminated.exit_code, OOM_KILLED))
    return out
