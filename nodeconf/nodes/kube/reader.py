"""Evidence reader run inside the privileged helper pod: cgroups found from /proc/<pid>/cgroup, one JSON answer.

Standard library only (Python >= 3.9), started as `python3 -c <this source> <request json>` (no shell); cgroup v2 per
Documentation/admin-guide/cgroup-v2.rst ("/proc/<pid>/cgroup": the `0::<path>` line).
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import stat
import sys
from typing import Any

CLONE_NEWCGROUP = 0x02000000  # include/uapi/linux/sched.h
_CONTAINER_ID = re.compile(r"^[0-9a-f]{12,64}$")
_POD_UID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_QOS_NAMES = ("burstable", "besteffort")
# crun with the systemd driver moves the container's processes into this sub-cgroup of the scope and writes the
# OCI resources there (crun `run.oci.systemd.subgroup`, NEWS crun-0.14/1.18, src/libcrun/cgroup-systemd.c).
CRUN_SUBGROUP = "container"


class ReaderError(Exception):
    """The node does not look as expected (no cgroup v2, pod not found, bad request)."""


def unified_path(proc_cgroup_text: str) -> str | None:
    """The cgroup v2 path of a process from its /proc/<pid>/cgroup text, without the leading slash."""
    for line in proc_cgroup_text.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            return path.strip("/")
    return None


def is_conmon(name: str) -> bool:
    """CRI-O's monitor cgroup (`crio-conmon-<id>.scope`, cgroupfs `crio-conmon-<id>`): neither a container nor
    the sandbox (cri-o internal/config/cgmgr: conmon_cgroup "pod" puts it next to the containers)."""
    return "conmon" in name


def is_container_leaf(name: str, container_id: str) -> bool:
    """True when a cgroup directory name is the container's: `<id>` (containerd, cgroupfs), `crio-<id>` (CRI-O,
    cgroupfs), `cri-containerd-<id>.scope` / `crio-<id>.scope` (systemd)."""
    base = name.removesuffix(".scope")
    return (base == container_id or base.endswith(f"-{container_id}")) and not is_conmon(name)


def is_pod_dir(name: str, pod_uid: str) -> bool:
    """True for a pod cgroup name: `pod<uid>` (cgroupfs) or `...-pod<uid with _>.slice` (systemd)."""
    return f"pod{pod_uid}" in name or f"pod{pod_uid.replace('-', '_')}" in name


def kubepods_of(path: str) -> str:
    """The kubepods cgroup above a pod or container path (`kubepods`, `kubepods.slice`, `kubelet-kubepods.slice`)."""
    parts = path.split("/")
    for i in range(len(parts) - 1, -1, -1):
        name = parts[i].removesuffix(".slice")
        if name == "kubepods" or name.endswith("-kubepods"):
            return "/".join(parts[: i + 1])
    raise ReaderError(f"no kubepods cgroup above {path!r}")


def qos_leaf_name(name: str) -> str | None:
    """`burstable`/`besteffort` for a QoS cgroup directory name, else None."""
    base = name.removesuffix(".slice")
    for qos in _QOS_NAMES:
        if base == qos or base.endswith(f"-{qos}"):
            return qos
    return None


class Host:
    """The node as the helper pod sees it: the host's /proc (hostPID) and its cgroup2 mount."""

    def __init__(self, proc: str, cgroup_root: str) -> None:
        self.proc = proc
        self.cgroup_root = cgroup_root
        self.outside = 0

    def enter_host_cgroup_namespace(self) -> None:
        """Join PID 1's cgroup namespace so /proc/<pid>/cgroup paths are relative to the mounted root."""
        try:
            mine = os.readlink(f"{self.proc}/self/ns/cgroup")
            init = os.readlink(f"{self.proc}/1/ns/cgroup")
        except OSError:
            return
        if mine == init:
            return
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(f"{self.proc}/1/ns/cgroup", os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWCGROUP) != 0:
                raise ReaderError(f"setns(cgroup) failed: {os.strerror(ctypes.get_errno())}")
        finally:
            os.close(fd)

    def read(self, path: str) -> str:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()

    def process_cgroups(self) -> dict[str, list[int]]:
        """Every process's cgroup v2 path → its pids, from /proc/<pid>/cgroup; paths outside our cgroup
        namespace (shown as `/../..`) cannot be read below the mount and are counted in `outside`."""
        found: dict[str, list[int]] = {}
        for entry in os.listdir(self.proc):
            if not entry.isdigit():
                continue
            try:
                path = unified_path(self.read(f"{self.proc}/{entry}/cgroup"))
            except OSError:
                continue
            if path is not None:
                found.setdefault(path, []).append(int(entry))
        if not found:
            raise ReaderError(f"no process in {self.proc} has a cgroup v2 path (is the node on cgroup v2?)")
        outside = [path for path in found if path == ".." or path.startswith("../")]
        self.outside = sum(len(found.pop(path)) for path in outside)
        return found

    def own_cgroup(self) -> str:
        path = unified_path(self.read(f"{self.proc}/self/cgroup"))
        if path is None:
            raise ReaderError("this process has no cgroup v2 path (is the node on cgroup v2?)")
        return path

    def cgroup_dir(self, path: str) -> str:
        return f"{self.cgroup_root}/{path}" if path else self.cgroup_root

    def children(self, path: str) -> list[str]:
        try:
            entries = sorted(os.listdir(self.cgroup_dir(path)))
        except OSError:
            return []
        return [e for e in entries if os.path.isdir(os.path.join(self.cgroup_dir(path), e))]

    def files(self, path: str, names: list[str] | None) -> dict[str, str]:
        """The readable interface files of one cgroup, each as the kernel reads it back (trailing newline cut)."""
        directory = self.cgroup_dir(path)
        wanted = names if names is not None else sorted(os.listdir(directory))
        out: dict[str, str] = {}
        for name in wanted:
            full = os.path.join(directory, name)
            try:
                info = os.stat(full)
                if not stat.S_ISREG(info.st_mode) or not info.st_mode & stat.S_IRUSR:
                    continue
                out[name] = self.read(full).rstrip("\n")
            except OSError:
                continue
        return out

    def procs(self, path: str) -> list[int]:
        try:
            return [int(line) for line in self.read(f"{self.cgroup_dir(path)}/cgroup.procs").split()]
        except OSError:
            return []

    def oom_score_adj(self, pids: list[int]) -> dict[str, int]:
        out: dict[str, int] = {}
        for pid in pids:
            try:
                out[str(pid)] = int(self.read(f"{self.proc}/{pid}/oom_score_adj").strip())
            except (OSError, ValueError):
                continue
        return out

    def cgroup(self, path: str, names: list[str] | None) -> dict[str, Any]:
        return {"path": path, "files": self.files(path, names)}

    def processes(self, path: str, names: list[str] | None) -> dict[str, Any]:
        pids = self.procs(path)
        return {**self.cgroup(path, names), "pids": pids, "oomScoreAdj": self.oom_score_adj(pids)}

    def process_cgroup(self, path: str) -> str:
        """Where a container's processes and resources live: crun's `container` sub-cgroup when the scope has
        one, else the scope (runc) or directory (cgroupfs) itself."""
        return f"{path}/{CRUN_SUBGROUP}" if CRUN_SUBGROUP in self.children(path) else path


def pod_path_of(path: str, pod_uid: str) -> str | None:
    """The pod cgroup above a process's cgroup (`pod/<container>` or crun's `pod/<scope>/container`)."""
    parts = path.split("/")
    for i in range(len(parts) - 2, -1, -1):
        if is_pod_dir(parts[i], pod_uid):
            return "/".join(parts[: i + 1])
    return None


def find_pod_cgroup(host: Host, kubepods: str, pod_uid: str) -> str | None:
    """The pod's cgroup directory below kubepods (Guaranteed pods directly, the others under their QoS
    cgroup), found by name: also after its last process has gone."""
    for child in host.children(kubepods):
        if is_pod_dir(child, pod_uid):
            return f"{kubepods}/{child}"
        if qos_leaf_name(child) is not None:
            for grandchild in host.children(f"{kubepods}/{child}"):
                if is_pod_dir(grandchild, pod_uid):
                    return f"{kubepods}/{child}/{grandchild}"
    return None


def pod_evidence(host: Host, pod_uid: str, container_ids: dict[str, str], names: list[str] | None) -> dict[str, Any]:
    """Pod, container and ancestor cgroups (kubepods down to the QoS level) of one pod, its container and
    sandbox pids and their oom_score_adj."""
    if not _POD_UID.match(pod_uid):
        raise ReaderError(f"bad pod uid {pod_uid!r}")
    for name, cid in container_ids.items():
        if not _CONTAINER_ID.match(cid):
            raise ReaderError(f"bad container id {cid!r} for container {name!r}")
    by_path = host.process_cgroups()
    pod_path = next((found for found in (pod_path_of(p, pod_uid) for p in by_path) if found), "")
    if not pod_path:
        hint = f" ({host.outside} processes lie outside our cgroup namespace)" if host.outside else ""
        raise ReaderError(f"no process of pod {pod_uid} found in {host.proc}/*/cgroup{hint}")
    leaves = host.children(pod_path)
    containers: dict[str, Any] = {}
    matched: set[str] = set()
    for name, cid in container_ids.items():
        leaf = next((entry for entry in leaves if is_container_leaf(entry, cid)), None)
        if leaf is not None:
            matched.add(leaf)
            scope = f"{pod_path}/{leaf}"
            where = host.process_cgroup(scope)
            containers[name] = {**host.processes(where, names),
                                "scope": host.cgroup(scope, names) if where != scope else None}
    # The sandbox (pause) is the other cgroup with processes; CRI-O often runs none (drop_infra_ctr).
    others = [host.process_cgroup(f"{pod_path}/{leaf}") for leaf in leaves
              if leaf not in matched and not is_conmon(leaf)]
    sandboxes = [path for path in others if host.procs(path)]
    kubepods = kubepods_of(pod_path)
    above = pod_path[len(kubepods):].strip("/").split("/")[:-1]
    ancestors = [kubepods] + ["/".join([kubepods, *above[: i + 1]]) for i in range(len(above))]
    return {
        "pod": host.cgroup(pod_path, names),
        "ancestors": [host.cgroup(path, names) for path in ancestors],
        "containers": containers,
        "sandboxes": [host.processes(path, names) for path in sandboxes],
    }


def node_evidence(host: Host, names: list[str] | None) -> dict[str, Any]:
    """The kubepods cgroup (found above this helper's own cgroup) and its QoS children."""
    kubepods = kubepods_of(host.own_cgroup())
    qos = {}
    for child in host.children(kubepods):
        kind = qos_leaf_name(child)
        if kind is not None:
            qos[kind] = host.cgroup(f"{kubepods}/{child}", names)
    return {"kubepods": host.cgroup(kubepods, names), "qos": qos}


def pod_cgroup(host: Host, pod_uid: str, names: list[str] | None) -> dict[str, Any]:
    """The pod's cgroup and its files (`memory.events` for OOM kills), or `{"path": null}` once it is gone."""
    if not _POD_UID.match(pod_uid):
        raise ReaderError(f"bad pod uid {pod_uid!r}")
    path = find_pod_cgroup(host, kubepods_of(host.own_cgroup()), pod_uid)
    return host.cgroup(path, names) if path is not None else {"path": None}


def check(host: Host) -> dict[str, Any]:
    """Whether the node runs cgroup v2: the unified mount has `cgroup.controllers` at its root (cgroup-v2.rst
    "Mounting"); a cgroup v1 or hybrid node has per-controller hierarchies there instead."""
    return {"cgroupV2": os.path.isfile(os.path.join(host.cgroup_root, "cgroup.controllers"))}


def facts(host: Host) -> dict[str, Any]:
    """Page size, /proc/meminfo as it reads, kernel release and the controllers pods can use."""
    kubepods = kubepods_of(host.own_cgroup())
    controllers = host.files(kubepods, ["cgroup.controllers"]).get("cgroup.controllers", "")
    return {
        "pageSize": os.sysconf("SC_PAGE_SIZE"),
        "meminfo": host.read(f"{host.proc}/meminfo"),  # parsed by the controller (nodeconf.node_facts)
        "kernelRelease": os.uname().release,
        "kubepods": kubepods,
        "controllers": controllers.split(),
    }


def answer(host: Host, request: dict[str, Any]) -> dict[str, Any]:
    """Dispatch one request: `check`, `facts`, `node`, `pod` or `podCgroup`."""
    names = request.get("files")
    if names is not None and not all(isinstance(n, str) and "/" not in n and n not in (".", "..") for n in names):
        raise ReaderError("bad file name list")
    op = request.get("op")
    if op == "check":
        return check(host)
    host.enter_host_cgroup_namespace()
    if op == "facts":
        return facts(host)
    if op == "node":
        return node_evidence(host, names)
    if op == "pod":
        return pod_evidence(host, str(request.get("podUid", "")), dict(request.get("containers") or {}), names)
    if op == "podCgroup":
        return pod_cgroup(host, str(request.get("podUid", "")), names)
    raise ReaderError(f"unknown op {op!r}")


def main(argv: list[str]) -> int:
    """Read the request from argv[0], print one JSON object; errors as {"error": ...} with exit status 1."""
    try:
        request = json.loads(argv[0])
        host = Host(request.get("proc", "/proc"), request.get("cgroupRoot", "/sys/fs/cgroup"))
        print(json.dumps(answer(host, request)))
    except (ReaderError, OSError, ValueError, IndexError, KeyError) as err:
        print(json.dumps({"error": f"{type(err).__name__}: {err}"}))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
