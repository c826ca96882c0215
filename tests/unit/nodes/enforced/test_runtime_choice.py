"""Which runtime starts the containers on local, ssh:// and vendor-image nodes (issue 28 item 5): the node's probe
measured on canary sockets in temporary directories (a grpcio server standing for the runtime, with the CRI v1
messages of PyPI's container-runtime-interface-api), the choice made from it, the driver starting the agent with
that choice over a transport whose probe answers as a node without a runtime does, and the report's scope line."""

from __future__ import annotations

import dataclasses
import json
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from nodeconf.enforcer.cri import messages as m
from nodeconf.enforcer.cri.grpc import UNAVAILABLE
from nodeconf.enforcer.cri.probe import probe, probe_socket
from nodeconf.enforcer.daemons import CONTAINERD_SOCKET, CRIO_SOCKET, kubelet_pids
from nodeconf.nodes.base import NodeError
from nodeconf.nodes.enforced.node import EnforcedNode
from nodeconf.nodes.enforced.runtime_choice import AUTO, CRI, UNIMPLEMENTED, RuntimeChoice, choose_runtime
from nodeconf.nodes.transport.base import CommandResult
from nodeconf.nodes.transport.local import LocalTransport
from nodeconf.report.node_display import fact_rows, scope
from tests.unit.nodes.enforced.local import local_settings

api = pytest.importorskip("cri_api.v1.api_pb2")
grpc = pytest.importorskip("grpc")
from tests.unit.enforcer.cri_server import Handler, cri_server  # noqa: E402  (needs grpc)

NO_SOCKETS = [{"socket": CONTAINERD_SOCKET, "present": False}, {"socket": CRIO_SOCKET, "present": False}]
NONE_HERE = f"no CRI runtime socket on the node ({CONTAINERD_SOCKET}, {CRIO_SOCKET})"


def answering(name: str, version: str) -> Handler:
    """A Version handler answering as a runtime of that name and version does."""

    def version_call(request: bytes, _context: Any) -> bytes:
        asked = api.VersionRequest()
        asked.ParseFromString(request)
        assert asked.version == "v1"
        return bytes(api.VersionResponse(version="0.1.0", runtime_name=name, runtime_version=version,
                                         runtime_api_version="v1").SerializeToString())

    return version_call


# The node-side probe, on canary sockets.

def test_a_socket_answering_the_version_call_is_named_by_its_answer(tmp_path: Path) -> None:
    with cri_server(tmp_path / "containerd.sock") as (path, handlers):
        handlers[m.RUNTIME_SERVICE + "Version"] = answering("containerd", "1.7.24~ds1")
        assert probe_socket(path) == {"socket": path, "present": True, "name": "containerd",
                                      "version": "1.7.24~ds1"}


def test_a_socket_serving_no_cri_answers_unimplemented(tmp_path: Path) -> None:
    """As the containerd Docker runs (its CRI plugin disabled): a gRPC server without the RuntimeService."""
    with cri_server(tmp_path / "containerd.sock") as (path, _handlers):
        found = probe_socket(path)
    assert (found["present"], found["code"]) == (True, UNIMPLEMENTED)
    assert grpc.StatusCode.UNIMPLEMENTED.value[0] == UNIMPLEMENTED


def test_a_socket_nobody_listens_on_is_present_and_unavailable(tmp_path: Path) -> None:
    """A runtime that died and left its socket file: connect(2) is refused (ECONNREFUSED)."""
    path = str(tmp_path / "crio.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as left:
        left.bind(path)
    found = probe_socket(path, timeout=2)
    assert (found["present"], found["code"]) == (True, UNAVAILABLE)


@pytest.mark.parametrize("kind", ["absent", "file", "directory"])
def test_what_is_not_a_socket_is_not_present(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "containerd.sock"
    if kind == "file":
        path.write_text("")
    elif kind == "directory":
        path.mkdir()
    assert probe_socket(str(path)) == {"socket": str(path), "present": False}


def test_kubelets_are_found_by_their_process_name(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    for pid, comm in (("1", "systemd"), ("812", "kubelet"), ("900", "kubelet-plugin"), ("self", "kubelet")):
        (proc / pid).mkdir(parents=True)
        (proc / pid / "comm").write_text(comm + "\n")
    (proc / "77").mkdir()  # gone before its comm was read
    assert kubelet_pids(proc) == [812]


# The choice.

def probe_text(sockets: Sequence[dict[str, Any]] = NO_SOCKETS, kubelets: Sequence[int] = ()) -> str:
    return json.dumps({"sockets": list(sockets), "kubeletPids": list(kubelets)})


CONTAINERD_UP = {"socket": CONTAINERD_SOCKET, "present": True, "name": "containerd", "version": "1.7.24~ds1"}


@pytest.mark.parametrize(("asked", "found", "chosen"), [
    (AUTO, probe_text([CONTAINERD_UP, NO_SOCKETS[1]]), RuntimeChoice("containerd")),
    (CRI, probe_text([CONTAINERD_UP, NO_SOCKETS[1]]), RuntimeChoice("containerd")),
    (AUTO, probe_text(), RuntimeChoice("direct", NONE_HERE)),
    (AUTO, probe_text([{"socket": CONTAINERD_SOCKET, "present": True, "code": 12, "error": "unknown service "
                        "runtime.v1.RuntimeService"}, NO_SOCKETS[1]]),
     RuntimeChoice("direct", f"{CONTAINERD_SOCKET} serves no CRI (a containerd with its CRI plugin disabled, as "
                   "Docker's)")),
    (AUTO, probe_text([CONTAINERD_UP], kubelets=[812]),
     RuntimeChoice("direct", "a kubelet runs on the node (pid 812): its runtime's sandboxes are the kubelet's "
                   "(judge the node through kube:)")),
], ids=["containerd", "cri-asked", "no-runtime", "dockers-containerd", "a-kubelet-runs"])
def test_the_runtime_follows_what_the_node_has(asked: str, found: str, chosen: RuntimeChoice) -> None:
    assert choose_runtime(asked, lambda: found) == chosen


def test_direct_asked_is_direct_without_probing() -> None:
    def never() -> str:
        raise AssertionError("probed")

    assert choose_runtime("direct", never) == RuntimeChoice("direct", "runtime=direct was given in the node spec")


@pytest.mark.parametrize(("asked", "found", "message"), [
    (AUTO, probe_text([{"socket": CONTAINERD_SOCKET, "present": True, "code": 4, "error": "no answer within 10 s"},
                       NO_SOCKETS[1]]),
     f"the node's CRI runtime socket {CONTAINERD_SOCKET} does not answer the CRI Version call (grpc-status 4: no "
     "answer within 10 s); fix the runtime, or give runtime=direct in the node spec to judge the node without it"),
    (AUTO, probe_text([NO_SOCKETS[0], {"socket": CRIO_SOCKET, "present": True, "name": "cri-o",
                                       "version": "1.34.1"}]),
     f"the node's CRI runtime is cri-o 1.34.1 at {CRIO_SOCKET}; nodeconf's enforcer drives containerd at "
     f"{CONTAINERD_SOCKET} only: give runtime=direct"),
    (CRI, probe_text(), f"runtime=cri: {NONE_HERE}"),
    (CRI, probe_text([CONTAINERD_UP], kubelets=[812]), "runtime=cri: a kubelet runs on the node (pid 812)"),
    (AUTO, "Traceback (most recent call last):", "the node's runtime probe answered 'Traceback"),
    (AUTO, json.dumps({"sockets": "x", "kubeletPids": []}), "the node's runtime probe answered"),
], ids=["no-version-answer", "cri-o", "cri-asked-of-none", "cri-asked-beside-a-kubelet", "not-json", "not-a-probe"])
def test_a_runtime_there_but_unusable_is_an_infrastructure_error(asked: str, found: str, message: str) -> None:
    with pytest.raises(NodeError) as failed:
        choose_runtime(asked, lambda: found)
    assert message in str(failed.value) and "\n" not in str(failed.value)


def test_the_probe_document_is_what_the_choice_reads(tmp_path: Path) -> None:
    """The node's probe, as printed, goes straight into the choice: a socket serving no CRI beside an absent one."""
    with cri_server(tmp_path / "containerd.sock") as (path, _handlers):
        found = json.dumps(probe([path, str(tmp_path / "crio.sock")], proc=tmp_path))
    assert choose_runtime(AUTO, lambda: found) == RuntimeChoice("direct", f"{path} serves no CRI (a containerd with "
                                                                          "its CRI plugin disabled, as Docker's)")


# The driver: the agent starts with the chosen runtime; the reason is a node fact the report shows.

class ProbedLocally(LocalTransport):
    """This machine, except that the runtime probe answers `answer` (a node without a CRI runtime here, whatever
    this machine has); every command run is recorded."""

    def __init__(self, answer: str) -> None:
        super().__init__()
        self.answer = answer
        self.commands: list[tuple[str, ...]] = []

    def run(self, argv: Sequence[str], *, input: bytes | None = None, timeout: float = 60.0) -> CommandResult:
        self.commands.append(tuple(argv))
        if argv[-1] == "runtime-probe":
            return CommandResult(tuple(argv), 0, self.answer.encode(), b"")
        return super().run(argv, input=input, timeout=timeout)


def test_a_node_without_a_runtime_runs_direct_and_says_why(tmp_path: Path) -> None:
    transport = ProbedLocally(probe_text())
    settings = local_settings(tmp_path)
    node = EnforcedNode(transport, dataclasses.replace(settings, node_runtime=AUTO), spec="local")
    node.start()
    try:
        facts = node.facts()
    finally:
        node.close()
    (serve,) = [c for c in transport.commands if "serve" in c]
    assert serve[serve.index("--runtime") + 1] == "direct"
    assert (facts.runtime, facts.runtime_not_used) == ("direct", NONE_HERE)


def test_a_node_asked_for_cri_without_one_is_refused_and_left_clean(tmp_path: Path) -> None:
    transport = ProbedLocally(probe_text())
    settings = local_settings(tmp_path)
    with pytest.raises(NodeError) as refused:
        EnforcedNode(transport, dataclasses.replace(settings, node_runtime=CRI)).start()
    assert str(refused.value) == f"runtime=cri: {NONE_HERE}"
    assert not [c for c in transport.commands if "serve" in c]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cgroup"]


@pytest.mark.parametrize(("facts", "shown"), [
    ({"node": "ssh://root@n1", "runtime": "direct", "runtime_version": "direct", "runtime_not_used": NONE_HERE},
     f"nodeconf's enforcer (the node's container runtime was not used: {NONE_HERE})"),
    ({"node": "vm?image=/srv/v.qcow2", "runtime": "containerd", "runtime_version": "1.7.24~ds1"},
     "the node's containerd 1.7.24~ds1 (CRI, called by nodeconf's enforcer)"),
    ({"node": "vm", "runtime": "direct", "runtime_version": "direct"},
     "nodeconf's enforcer (direct: it writes the cgroups itself; no container runtime exercised)"),
], ids=["not-used", "the-nodes-containerd", "reference-vm"])
def test_the_scope_says_whose_runtime_started_the_containers(facts: dict[str, str], shown: str) -> None:
    assert dict(scope(facts))["containers started by"] == shown
    assert "runtime_not_used" not in dict(fact_rows(list(facts.items()))), "shown once, in the scope"
