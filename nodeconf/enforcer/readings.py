"""What the agent reads back from the node for its callers: a pod's evidence (files, pids, oom_score_adj), the
node-level cgroups, and the rows of its metrics endpoints.

Source: issue 27 item 3 (the agent by composition); kubelet /metrics/resource, /metrics/cadvisor
(containerPrometheusLabelsFunc: container, id, image, name, namespace, pod).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from nodeconf.cgroup_files import evidence_files
from nodeconf.enforcer import process, reserved
from nodeconf.enforcer.cgroupfs import CgroupTree
from nodeconf.enforcer.launcher import live_cgroup
from nodeconf.enforcer.records import PAUSE, ContainerRecord, PodRecord


def pod_evidence(tree: CgroupTree, record: PodRecord, extra_files: Sequence[str] = ()) -> dict[str, Any]:
    """One pod's evidence at once: every file of its containers, pause, pod, QoS and kubepods cgroups, container
    pids and their oom_score_adj, and its status."""
    files = tuple(evidence_files(extra_files))
    where = {c.name: tree.process_cgroup(live_cgroup(c)) for c in record.containers}
    paths = [*_ancestors(record.cgroup), record.cgroup, *(c.cgroup for c in record.containers), *where.values()]
    read = {path: tree.read_many(path, files) for path in dict.fromkeys(paths)}
    cgroups = {path: found for path, found in read.items() if found is not None}
    processes = {}
    for c in record.containers:  # where the runtime put the process (crun: a sub-cgroup of its scope)
        procs = (cgroups.get(where[c.name]) or {}).get("cgroup.procs") or ""
        pids = [int(p) for p in procs.split()] if tree.kernel else ([c.pid] if c.pid else [])
        processes[c.name if c.kind != PAUSE else "POD"] = {
            "pids": pids, "oomScoreAdj": {str(p): process.read_oom_score_adj(p) for p in pids},
            "cgroup": where[c.name],
        }
    return {"status": record.to_dict(), "cgroups": cgroups, "processes": processes}


def node_cgroups(tree: CgroupTree, paths: Iterable[str], reserves: Iterable[str],
                 extra_files: Sequence[str] = ()) -> dict[str, Any]:
    """The node-level cgroups the oracle describes (kubepods and QoS slices) and the enforced reserve cgroups the
    agent made, as read back now."""
    files = tuple(evidence_files(extra_files))
    read = {p: tree.read_many(p, files) for p in sorted(paths)}
    for path in reserved.made(tree, sorted(reserves)):
        read[path] = reserved.reserve_tree(tree, path).read_many(path, files)
    return {p: found for p, found in read.items() if found is not None}


def live_containers(live: Iterable[PodRecord]) -> Iterator[tuple[PodRecord, ContainerRecord, str]]:
    """Each container of the live pods but pause, with the cgroup its process is in (a CRI runtime's own scope,
    launcher.live_cgroup), where its per-container series are read."""
    for record in live:
        for c in record.containers:
            if c.kind != PAUSE:
                yield record, c, live_cgroup(c)


def swap_rows(tree: CgroupTree, live: Iterable[PodRecord]) -> list[tuple[str, str, str, int]]:
    """memory.swap.current of each container of the live pods: namespace, pod, container, bytes."""
    rows = []
    for record, c, cgroup in live_containers(live):
        value = tree.read(cgroup, "memory.swap.current")
        if value is not None and value.isdigit():
            rows.append((record.pod.namespace, record.pod.name, c.name, int(value)))
    return rows


def pressure_rows(tree: CgroupTree, live: Iterable[PodRecord],
                  files: Sequence[str]) -> list[tuple[dict[str, str], dict[str, str | None]]]:
    """The labels and pressure files of each container of the live pods."""
    rows = []
    for record, c, cgroup in live_containers(live):
        image = next((s.image for s in record.pod.all_containers if s.name == c.name), "")
        labels = {"container": c.name, "id": "/" + cgroup, "image": image, "name": "",
                  "namespace": record.pod.namespace, "pod": record.pod.name}
        rows.append((labels, {f: tree.read(cgroup, f) for f in files}))
    return rows


def int_or_none(text: str | None) -> int | None:
    """A cgroup file's number; None when unreadable or not a number (`max`)."""
    return int(text) if text is not None and text.isdigit() else None


def _ancestors(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]
