"""Memory pressure inside a pod: watch a memory hog until it holds its memory or is OOM-killed, sampling usage;
the order in which the node evicted pods under node pressure.

Source: MEASURED.md (no memory.swap.peak on the 6.1 kernel: sample memory.swap.current).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from nodeconf.nodes.base import CgroupFiles, ContainerState, Node, NodeError, PodEvidence, PodHandle
from suites.toolkit.checks import POLL_S

MIB = 1024**2


@dataclass
class Watched:
    """The last evidence, each hog's final state, and the highest memory.swap.current sampled per cgroup."""

    evidence: PodEvidence
    states: dict[str, ContainerState]
    peak_swap: dict[str, int] = field(default_factory=dict)



def _charged(files: CgroupFiles) -> int:
    """Memory plus swap charged to a cgroup (0 when it is gone)."""
    if "memory.current" not in files:
        return 0
    return files.number("memory.current") + files.number("memory.swap.current")


def watch_hogs(handle: PodHandle, hogs: Sequence[str], mib: int, timeout: float = 120.0) -> Watched:
    """Poll until every hog has terminated (or restarted after terminating) or holds `mib` MiB (charged memory
    + swap, unchanged by more than a MiB since the previous sample: allocation over); sample swap meanwhile."""
    return _watch(lambda: [handle.evidence()], [handle], hogs, mib, timeout)[0]


def watch_pods_hogs(node: Node, handles: Sequence[PodHandle], hogs: Sequence[str], mib: int,
                    timeout: float = 120.0) -> list[Watched]:
    """watch_hogs for several pods at once, each judged on its own as watch_hogs judges it (its result kept from
    the poll that found it done), all of them read in one request per poll (Node.evidence_of; issue 31)."""
    return _watch(lambda: node.evidence_of(handles), handles, hogs, mib, timeout)


def _watch(read: Callable[[], list[PodEvidence]], handles: Sequence[PodHandle], hogs: Sequence[str], mib: int,
           timeout: float) -> list[Watched]:
    deadline = time.monotonic() + timeout
    peaks: list[dict[str, int]] = [{} for _ in handles]
    previous: list[dict[str, int]] = [{} for _ in handles]
    done: dict[int, Watched] = {}
    while True:
        for i, evidence in enumerate(read()):
            if i in done:
                continue
            for files in [evidence.pod_cgroup, *(c.cgroup for c in evidence.containers.values())]:
                if "memory.swap.current" in files:
                    peaks[i][files.path] = max(peaks[i].get(files.path, 0), files.number("memory.swap.current"))
            states = {name: evidence.status.container(name) for name in hogs}
            charged = {h: _charged(evidence.container(h).cgroup) for h in hogs}
            if all(states[h].state == "terminated" or states[h].last_terminated is not None
                   or (charged[h] >= mib * MIB and abs(charged[h] - previous[i].get(h, 0)) < MIB) for h in hogs):
                done[i] = Watched(evidence, states, peaks[i])
            previous[i] = charged
        if len(done) == len(handles):
            return [done[i] for i in range(len(handles))]
        if time.monotonic() > deadline:
            waiting = ", ".join(handles[i].pod.ref for i in range(len(handles)) if i not in done)
            raise NodeError(f"pod {waiting}: hogs {', '.join(hogs)} neither held {mib} MiB nor ended "
                            f"within {timeout:g} s")
        time.sleep(POLL_S)


def eviction_order(handles: Sequence[PodHandle], timeout: float) -> list[str]:
    """Pod names in the order the node evicted them, by each pod's disruption time (the kubelet's DisruptionTarget
    condition; the agent's eviction clock), never by when a poll happened to see them: two evictions between two
    polls stay in order."""
    statuses = {h.pod.name: h.wait_for(lambda s: s.reason == "Evicted", timeout=timeout, what="evicted")
                for h in handles}
    missing = [name for name, status in statuses.items() if status.disrupted_at is None]
    assert not missing, f"the node evicted {', '.join(missing)} without recording when (DisruptionTarget)"
    return sorted(statuses, key=lambda name: statuses[name].disrupted_at or 0.0)
