"""Memory pressure inside a pod: watch a memory hog until it holds its memory or is OOM-killed, sampling usage.

Source: MEASURED.md (no memory.swap.peak on the 6.1 kernel: sample memory.swap.current).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from nodeconf.nodes.base import CgroupFiles, ContainerState, NodeError, PodEvidence, PodHandle

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
    deadline = time.monotonic() + timeout
    peaks: dict[str, int] = {}
    previous: dict[str, int] = {}
    while True:
        evidence = handle.evidence()
        for files in [evidence.pod_cgroup, *(c.cgroup for c in evidence.containers.values())]:
            if "memory.swap.current" in files:
                peaks[files.path] = max(peaks.get(files.path, 0), files.number("memory.swap.current"))
        states = {name: evidence.status.container(name) for name in hogs}
        charged = {h: _charged(evidence.container(h).cgroup) for h in hogs}
        done = all(states[h].state == "terminated" or states[h].last_terminated is not None
                   or (charged[h] >= mib * MIB and abs(charged[h] - previous.get(h, 0)) < MIB) for h in hogs)
        previous = charged
        if done:
            return Watched(evidence, states, peaks)
        if time.monotonic() > deadline:
            raise NodeError(f"pod {handle.pod.ref}: hogs {', '.join(hogs)} neither held {mib} MiB nor ended "
                            f"within {timeout:g} s")
        time.sleep(0.2)
