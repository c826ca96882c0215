"""The node's own CRI runtime, measured on the node: each default socket (is it a socket, does it answer the CRI
Version call, with which runtime name and version) and whether a kubelet runs there. `python3 -m nodeconf.enforcer
runtime-probe` prints it as JSON; the driver decides from it (nodeconf/nodes/enforced/runtime_choice.py).

Source: issue 28 item 5; CRI api.proto (RuntimeService.Version: runtime_name, runtime_version); containerd's and
CRI-O's default sockets (daemons).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nodeconf.enforcer.cri.client import CriClient
from nodeconf.enforcer.cri.grpc import GrpcError
from nodeconf.enforcer.daemons import SOCKETS, kubelet_pids

VERSION_TIMEOUT = 10.0  # a runtime that answers nothing in this long is unusable, not slow


def probe_socket(path: str, timeout: float = VERSION_TIMEOUT) -> dict[str, Any]:
    """{"socket", "present"} and, for a socket, the Version answer ("name", "version") or its failure ("code",
    "error": the gRPC status, UNIMPLEMENTED when the socket serves no CRI)."""
    try:
        present = stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        present = False
    found: dict[str, Any] = {"socket": path, "present": present}
    if not present:
        return found
    try:
        answer = CriClient(path, timeout).version()
    except GrpcError as err:
        return {**found, "code": err.code, "error": err.message}
    return {**found, "name": str(answer.get("runtime_name", "")), "version": str(answer.get("runtime_version", ""))}


def probe(sockets: Sequence[str] = SOCKETS, proc: Path = Path("/proc"),
          timeout: float = VERSION_TIMEOUT) -> dict[str, Any]:
    """What the node has: each socket's probe and the kubelets running."""
    return {"sockets": [probe_socket(path, timeout) for path in sockets], "kubeletPids": kubelet_pids(proc)}
