"""Which runtime starts the containers on a node that is not a reference VM (`local`, `ssh://`, `vm?image=`): the
node's own CRI runtime when its socket answers the CRI Version call and no kubelet runs there; nodeconf's direct
launcher when the spec asks for it (`runtime=direct`) or the node has no CRI runtime, and then the reason is a node
fact the report shows. The choice follows what the agent's `runtime-probe` measured on the node; it never sets an
expected value.

Source: issue 28 item 5; CRI api.proto (Version); gRPC status codes (UNIMPLEMENTED 12: the socket serves no CRI,
as the containerd Docker runs with its CRI plugin disabled).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from nodeconf.enforcer.cri.probe import VERSION_TIMEOUT
from nodeconf.enforcer.cri.runtime import CRI as CONTAINERD
from nodeconf.enforcer.daemons import CONTAINERD_SOCKET, SOCKETS
from nodeconf.enforcer.oci_runtime import DIRECT
from nodeconf.nodes.base import NodeError

AUTO, CRI = "auto", "cri"
CHOICES = (CRI, DIRECT)  # runtime= of local, ssh:// and vm?image= (absent: AUTO)
UNIMPLEMENTED = 12  # gRPC status: no such service on this socket
PROBE_TIMEOUT = VERSION_TIMEOUT * len(SOCKETS) + 30.0
DIRECT_HINT = "give runtime=direct in the node spec to judge the node without it"


@dataclass(frozen=True)
class RuntimeChoice:
    """The agent's `--runtime` and, when the node's own runtime was not used, why (the `runtime_not_used` fact)."""

    agent_runtime: str
    not_used: str = ""


def choose_runtime(asked: str, probe: Callable[[], str]) -> RuntimeChoice:
    """The runtime for `asked` (auto, cri, direct) from the node's probe (its JSON, read only when needed); NodeError
    when the node's CRI runtime is there but unusable, or runtime=cri was asked of a node without one."""
    if asked == DIRECT:
        return RuntimeChoice(DIRECT, "runtime=direct was given in the node spec")
    found = _parsed(probe())
    reason = _no_runtime(found)
    if reason:
        if asked == CRI:
            raise NodeError(f"runtime=cri: {reason}")
        return RuntimeChoice(DIRECT, reason)
    return RuntimeChoice(CONTAINERD)


def _parsed(text: str) -> dict[str, Any]:
    try:
        found = json.loads(text)
        sockets, pids = found["sockets"], found["kubeletPids"]
        if not (isinstance(sockets, list) and all(isinstance(s, dict) and "socket" in s for s in sockets)
                and isinstance(pids, list)):
            raise ValueError("not a runtime probe")
    except (ValueError, KeyError, TypeError) as err:
        raise NodeError(f"the node's runtime probe answered {text[:200]!r}: {err}") from None
    return dict(found)


def _no_runtime(found: dict[str, Any]) -> str:
    """Why the node's own runtime is not used ("" when it is); NodeError when it is there but cannot be used."""
    pids: Sequence[int] = found["kubeletPids"]
    if pids:
        return (f"a kubelet runs on the node (pid {', '.join(map(str, pids))}): its runtime's sandboxes are the "
                "kubelet's (judge the node through kube:)")
    present = [s for s in found["sockets"] if s.get("present")]
    for sock in present:
        if "error" in sock and sock.get("code") != UNIMPLEMENTED:
            raise NodeError(f"the node's CRI runtime socket {sock['socket']} does not answer the CRI Version call "
                            f"(grpc-status {sock.get('code')}: {sock['error']}); fix the runtime, or {DIRECT_HINT}")
    answering = [s for s in present if "error" not in s]
    if answering:
        sock = answering[0]
        if sock.get("name") != CONTAINERD or sock["socket"] != CONTAINERD_SOCKET:
            raise NodeError(f"the node's CRI runtime is {sock.get('name') or 'unnamed'} {sock.get('version', '')} "
                            f"at {sock['socket']}; nodeconf's enforcer drives containerd at {CONTAINERD_SOCKET} "
                            f"only: {DIRECT_HINT}")
        return ""
    if present:
        return f"{present[0]['socket']} serves no CRI (a containerd with its CRI plugin disabled, as Docker's)"
    return f"no CRI runtime socket on the node ({', '.join(s['socket'] for s in found['sockets'])})"
