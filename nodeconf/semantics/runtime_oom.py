"""Why a CRI runtime may report `Error` for a container the kernel OOM-killed: the note a termination-reason rule
gets, from the node's runtime facts and what was measured; the expected reason stays `OOMKilled`.

The kubelet takes a container's reason from the runtime's ContainerStatus (kuberuntime_container.go
toKubeContainerStatus). containerd says `OOMKilled` only when its shim's TaskOOM event reached the CRI plugin
before the status is read; any other non-zero exit reads `Error` (containerd internal/cri/server
container_status.go toCRIContainerStatus, events.go criEventHandler.HandleEvent TaskOOM case; pkg/cri/server and
pkg/cri/sbserver in 1.6 and 1.7, the same). The shim sends TaskOOM when, on an inotify notice of the container
cgroup's memory.events, it re-reads the file and finds `oom_kill` grown; when the read fails because the cgroup is
gone it stops without an event (containerd/cgroups v3 cgroup2 Manager.waitForEvents, pkg/oom/v2 watcher.Run).
With `SystemdCgroup = true` the container's cgroup is a scope that systemd removes as soon as its last process
exits, so the kill and the removal race that read. containerd 2.3.0 also asks the task's metrics at exit
(commit aa3c507, handleContainerExit), which the removed scope defeats too: containerd skips critest's OOMKilled case
under the systemd driver (commit bdff34ef, script/critest.sh).
"""

from __future__ import annotations

import re

from nodeconf.node_facts import NodeFacts

OOM_KILLED = "OOMKilled"
OOM_EXIT_CODE = 137  # 128 + SIGKILL
CONTAINERD = "containerd"
# The first release that also reads the task's metrics at exit (containerd commit aa3c507).
METRICS_AT_EXIT = (2, 3)


def _release(version: str) -> tuple[int, int]:
    """(major, minor) of a version such as 2.1.9, 1.6.20~ds1, 2.1.9+unknown; (0, 0) when it has none."""
    found = re.match(r"v?(\d+)\.(\d+)", version)
    return (int(found[1]), int(found[2])) if found else (0, 0)


def reason_note(node: NodeFacts, reason: str | None, exit_code: int | None, oom_kills: int) -> str:
    """What a termination-reason rule adds ("" when it adds nothing): the node's runtime is containerd, it
    reported `reason` (not OOMKilled) for an exit 137, and the kernel counted `oom_kills` OOM kills in the pod
    cgroup's memory.events (hierarchical: the count outlives the container's scope). A measured fact that names the
    cause of a mismatch; never the expected value."""
    if node.runtime != CONTAINERD or reason == OOM_KILLED or exit_code != OOM_EXIT_CODE or oom_kills < 1:
        return ""
    runtime = f"{node.runtime} {node.runtime_version}".strip()
    scope = ("its systemd scope, which systemd removes when the last process exits"
             if dict(node.runtime_config).get("SystemdCgroup") == "True" else "its cgroup")
    how = ("from its shim's TaskOOM event or the task's metrics at exit" if _release(node.runtime_version)
           >= METRICS_AT_EXIT else "only from its shim's TaskOOM event")
    return (f"; the node's runtime {runtime} reported reason {reason or '(none)'} for a container the kernel "
            f"OOM-killed (memory.events oom_kill {oom_kills}): containerd sets OOMKilled {how}, read from the "
            f"container's memory.events in {scope}, so the kill can go unseen (containerd "
            "internal/cri/server/events.go, cgroups cgroup2 Manager.waitForEvents)")
