"""The node's own daemons as the agent finds them (standard library only): the default CRI runtime sockets, the
process serving each (SO_PEERCRED), the kubelet processes, and each one's oom_score_adj.

Source: containerd's and CRI-O's default sockets; socket(7) SO_PEERCRED (the credentials of the process that
listened on the socket); proc(5) /proc/PID/comm and /proc/PID/oom_score_adj.
"""

from __future__ import annotations

import socket
import struct
from pathlib import Path

CONTAINERD_SOCKET = "/run/containerd/containerd.sock"
CRIO_SOCKET = "/var/run/crio/crio.sock"
SOCKETS = (CONTAINERD_SOCKET, CRIO_SOCKET)
KUBELET = "kubelet"
CONNECT_TIMEOUT = 5.0
_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


def kubelet_pids(proc: Path = Path("/proc")) -> list[int]:
    """The pids of processes named `kubelet` (their /proc/PID/comm)."""
    pids = []
    for entry in proc.iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == KUBELET:
                    pids.append(int(entry.name))
            except OSError:
                continue
    return sorted(pids)


def peer_pid(path: str, timeout: float = CONNECT_TIMEOUT) -> int | None:
    """The pid of the process listening on the unix socket at `path` (a connection's SO_PEERCRED; nothing is sent),
    None when nothing accepts there."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(path)
            pid, _uid, _gid = _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))
    except OSError:
        return None
    return pid or None


def oom_score_adj(pid: int, proc: Path = Path("/proc")) -> int | None:
    """/proc/PID/oom_score_adj, None when the process is gone."""
    try:
        return int((proc / str(pid) / "oom_score_adj").read_text())
    except (OSError, ValueError):
        return None


def runtime_daemons(sockets: tuple[str, ...] = SOCKETS, proc: Path = Path("/proc")) -> tuple[tuple[str, int], ...]:
    """(socket, oom_score_adj) of the process serving each default CRI socket that has one."""
    found = []
    for path in sockets:
        pid = peer_pid(path)
        adj = oom_score_adj(pid, proc) if pid else None
        if adj is not None:
            found.append((path, adj))
    return tuple(found)


def kubelets(proc: Path = Path("/proc")) -> tuple[tuple[int, int], ...]:
    """(pid, oom_score_adj) of each kubelet process."""
    found = ((pid, oom_score_adj(pid, proc)) for pid in kubelet_pids(proc))
    return tuple((pid, adj) for pid, adj in found if adj is not None)
