"""The kubelet's Summary API (/stats/summary, k8s.io/kubelet stats/v1alpha1) as the agent can serve it truthfully:
each value read from a live cgroup v2 file in one request, a field it cannot read left out (never a made-up zero).

Sources: kubernetes staging/src/k8s.io/kubelet/pkg/apis/stats/v1alpha1/types.go (Summary, NodeStats, PodStats,
ContainerStats, CPUStats, MemoryStats, SwapStats, IOStats, PSIStats/PSIData and their JSON names; the node's
system container "pods"); pkg/kubelet/stats/helper.go (cadvisorInfoToCPUandMemoryStats: usageCoreNanoSeconds,
usage, workingSet, rss, pgfault, pgmajfault, availableBytes = limit − workingSet unless the limit is above 2^62
(isMemoryUnlimited); cadvisorInfoToSwapStats: availableBytes = swap limit − swap usage, likewise; IO only its PSI);
google/cadvisor container/libcontainer/handler.go (setMemoryStats on cgroup v2: usage = memory.current, rss =
memory.stat anon, workingSet = usage − inactive_file, 0 below it; swap = memory.swap.current) and
container/common/helpers.go (limit = memory.max, swap limit = memory.swap.max, `max` = unlimited); runc
cgroups/fs2 (cpu total = cpu.stat usage_usec × 1000 ns; PSI `total` kept in the kernel's µs, kernel psi.rst).

The node's own stats come from the root cgroup as runc's fs2 reads it (cpu.stat; memory.stat anon + file for
usage, rootStatsFromMeminfo; swap from /proc/meminfo), read only on a real cgroup2 mount.

Left out: usageNanoCores (a rate between two housekeeping samples, not a file), network, filesystems, volumes and
rlimit (no cgroup file holds them), the node's availableBytes and PSI, its kubelet/runtime/misc system containers
(no cgroups nodeconf made), and a PSI line the kernel does not write (the cgroup's cpu.pressure `full` line before
Linux 5.13).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Mapping
from typing import Any

from nodeconf.enforcer.cgroupfs import CgroupTree
from nodeconf.enforcer.launcher import live_cgroup
from nodeconf.enforcer.records import PAUSE, PodRecord

# The files one cgroup's stats come from.
FILES = ("cpu.stat", "memory.current", "memory.stat", "memory.max", "memory.swap.current", "memory.swap.max",
         "cpu.pressure", "memory.pressure", "io.pressure", "cgroup.procs")
# isMemoryUnlimited: a limit above this is no limit (the kernel rounds `max` below MaxInt64).
UNLIMITED_ABOVE = 1 << 62
NANOSECONDS_PER_MICROSECOND = 1000
# The node's system container of the pods (stats/v1alpha1 SystemContainerPods): the kubepods cgroup.
PODS = "pods"
Files = Mapping[str, "str | None"]


def rfc3339(at: float) -> str:
    """metav1.Time's JSON form: RFC 3339 in UTC, whole seconds."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def keyed(text: str | None) -> dict[str, int]:
    """A flat-keyed file (cpu.stat, memory.stat) as numbers; a line without one is skipped."""
    out: dict[str, int] = {}
    for line in (text or "").splitlines():
        key, _, value = line.partition(" ")
        if value.strip().isdigit():
            out[key] = int(value)
    return out


def number(text: str | None) -> int | None:
    """A single-value file's number; None when missing or not a number (`max`)."""
    return int(text) if text is not None and text.strip().isdigit() else None


def limited(text: str | None) -> int | None:
    """A limit file (memory.max, memory.swap.max) as bytes; None when unlimited (`max`, above 2^62) or unread."""
    value = number(text)
    return value if value is not None and value <= UNLIMITED_ABOVE else None


def psi(text: str | None) -> dict[str, dict[str, float | int]] | None:
    """A pressure file as PSIStats (`some`/`full` → total µs, avg10/60/300 %); a line the file lacks is left out,
    None without a `some` line."""
    lines: dict[str, dict[str, float | int]] = {}
    for row in (text or "").splitlines():
        kind, *fields = row.split() or [""]
        pairs = dict(f.split("=", 1) for f in fields if "=" in f)
        if kind in ("some", "full") and {"avg10", "avg60", "avg300", "total"} <= pairs.keys():
            with contextlib.suppress(ValueError):
                lines[kind] = {"total": int(pairs["total"]),
                               **{k: float(pairs[k]) for k in ("avg10", "avg60", "avg300")}}
    return lines if "some" in lines else None


def cpu_stats(files: Files, at: str, with_psi: bool) -> dict[str, Any] | None:
    usage = keyed(files.get("cpu.stat")).get("usage_usec")
    if usage is None:
        return None
    doc: dict[str, Any] = {"time": at, "usageCoreNanoSeconds": usage * NANOSECONDS_PER_MICROSECOND}
    return _with_psi(doc, files.get("cpu.pressure"), with_psi)


def memory_stats(files: Files, at: str, with_psi: bool) -> dict[str, Any] | None:
    usage = number(files.get("memory.current"))
    if usage is None:
        return None
    stat = keyed(files.get("memory.stat"))
    working_set = max(0, usage - stat.get("inactive_file", 0))
    doc: dict[str, Any] = {"time": at, "usageBytes": usage, "workingSetBytes": working_set}
    for key, name in (("anon", "rssBytes"), ("pgfault", "pageFaults"), ("pgmajfault", "majorPageFaults")):
        if key in stat:
            doc[name] = stat[key]
    limit = limited(files.get("memory.max"))
    if limit is not None and limit >= working_set:  # above it, the kubelet's uint64 subtraction would wrap
        doc["availableBytes"] = limit - working_set
    return _with_psi(doc, files.get("memory.pressure"), with_psi)


def swap_stats(files: Files, at: str) -> dict[str, Any] | None:
    usage = number(files.get("memory.swap.current"))
    if usage is None:
        return None
    doc: dict[str, Any] = {"time": at, "swapUsageBytes": usage}
    limit = limited(files.get("memory.swap.max"))
    if limit is not None and limit >= usage:
        doc["swapAvailableBytes"] = limit - usage
    return doc


def io_stats(files: Files, at: str, with_psi: bool) -> dict[str, Any] | None:
    """IOStats holds only PSI: none without the KubeletPSI gate or a readable io.pressure."""
    pressure = psi(files.get("io.pressure")) if with_psi else None
    return {"time": at, "psi": pressure} if pressure is not None else None


def _with_psi(doc: dict[str, Any], text: str | None, with_psi: bool) -> dict[str, Any]:
    pressure = psi(text) if with_psi else None
    return {**doc, "psi": pressure} if pressure is not None else doc


def cgroup_stats(files: Files, at: str, with_psi: bool) -> dict[str, Any]:
    """The cpu, memory, swap and io stats of one cgroup, each only when its files read."""
    parts = {"cpu": cpu_stats(files, at, with_psi), "memory": memory_stats(files, at, with_psi),
             "swap": swap_stats(files, at), "io": io_stats(files, at, with_psi)}
    return {key: value for key, value in parts.items() if value is not None}


def _read(tree: CgroupTree, path: str) -> Files | None:
    return tree.read_many(path, FILES)


def _started(at: float | None) -> dict[str, str]:
    return {"startTime": rfc3339(at)} if at is not None else {}


def pod_stats(tree: CgroupTree, record: PodRecord, at: float, with_psi: bool) -> dict[str, Any]:
    """One pod's PodStats: its containers (read where each one's process is, launcher.live_cgroup), its pod
    cgroup's stats, and the processes of its containers (cadvisor ProcessCount summed, the sandbox left out)."""
    stamp = rfc3339(at)
    containers, processes = [], 0
    for c in record.containers:
        files = _read(tree, live_cgroup(c)) if c.kind != PAUSE else None
        if files is not None:
            containers.append({"name": c.name, **_started(c.started_at), **cgroup_stats(files, stamp, with_psi)})
            processes += len((files.get("cgroup.procs") or "").split())
    starts = [c.started_at for c in record.containers if c.started_at is not None]  # the sandbox's included
    pod = record.pod
    doc: dict[str, Any] = {"podRef": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
                           **_started(min(starts) if starts else None), "containers": containers}
    own = _read(tree, record.cgroup)
    if own is not None:
        doc.update(cgroup_stats(own, stamp, with_psi))
    if containers:
        doc["process_stats"] = {"process_count": processes}
    return doc


def node_stats(root: Files, meminfo: str | None, at: str) -> dict[str, Any]:
    """The node's own cpu, memory and swap as runc reads the root cgroup, which has no memory.current (fs2
    rootStatsFromMeminfo): usage = memory.stat anon + file, swap = (SwapTotal − SwapFree) of /proc/meminfo."""
    doc: dict[str, Any] = {}
    cpu = cpu_stats(root, at, with_psi=False)
    if cpu is not None:
        doc["cpu"] = cpu
    stat = keyed(root.get("memory.stat"))
    if "anon" in stat and "file" in stat:
        usage = stat["anon"] + stat["file"]
        doc["memory"] = memory_stats({"memory.current": str(usage), "memory.stat": root.get("memory.stat")}, at,
                                     with_psi=False)
    rows = [line.split() for line in (meminfo or "").splitlines()]
    kib = {row[0].rstrip(":"): int(row[1]) for row in rows if len(row) >= 2 and row[1].isdigit()}
    if "SwapTotal" in kib and "SwapFree" in kib:
        doc["swap"] = {"time": at, "swapUsageBytes": (kib["SwapTotal"] - kib["SwapFree"]) * 1024}
    return doc


def root_files(tree: CgroupTree) -> Files:
    """The root cgroup's cpu.stat and memory.stat (read, never written: the root is no cgroup of nodeconf's)."""
    files: dict[str, str | None] = {}
    for name in ("cpu.stat", "memory.stat"):
        try:
            files[name] = (tree.root / name).read_text()
        except OSError:
            files[name] = None
    return files


def summary(tree: CgroupTree, live: Iterable[PodRecord], kubepods: str, node_name: str, with_psi: bool,
            meminfo: str | None = None, at: float | None = None) -> dict[str, Any]:
    """The Summary: the node (its name, its own usage, and the `pods` system container: the kubepods cgroup) and
    each live pod."""
    now = time.time() if at is None else at
    node: dict[str, Any] = {"nodeName": node_name, **node_stats(root_files(tree), meminfo, rfc3339(now))}
    files = _read(tree, kubepods)
    if files is not None:
        node["systemContainers"] = [{"name": PODS, **cgroup_stats(files, rfc3339(now), with_psi)}]
    return {"node": node, "pods": [pod_stats(tree, record, now, with_psi) for record in live]}
