"""The driver of a node run by the bundled enforcer: push it, start it, talk to it over one long-lived stream."""

from __future__ import annotations

import io
import secrets
import shlex
import tarfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from nodeconf.enforcer.wire import (
    ALREADY_RUNNING,
    FOREIGN_TREE,
    ContainerStatusDoc,
    EvidenceDoc,
    NodeStatusDoc,
    Op,
    PodStatusDoc,
    ResizeDoc,
    RunDoc,
    facts_from_dict,
)
from nodeconf.kubelet_config import KubeletConfig, kubelet_config_to_dict
from nodeconf.manifest import NamespaceObject, Pod
from nodeconf.manifest_writer import namespace_object_to_dict, pod_to_dict
from nodeconf.node_facts import NodeFacts
from nodeconf.nodes.base import (
    CgroupFiles,
    ContainerEvidence,
    ContainerState,
    ExecResult,
    Metrics,
    Node,
    NodeConditions,
    NodeError,
    PodEvidence,
    PodHandle,
    PodStatus,
    ResizeStatus,
    Terminated,
    parse_metrics,
)
from nodeconf.nodes.enforced.agent_client import READ_BOUND, AgentClient, Stream
from nodeconf.resources import locate_tree
from nodeconf.semantics.expectation import Event
from nodeconf.workloads import PROGRAMS

REMOTE_DIR = "/opt/nodeconf"
STATE_DIR = "/run/nodeconf-enforcer"
# Modules the agent needs on the node: the model, the oracle and the enforcer (all standard library only).
BUNDLE_MODULES = ("__init__.py", "errors.py", "quantity.py", "manifest.py", "manifest_writer.py", "kubelet_config.py",
                  "node_facts.py", "names.py", "cgroup_files.py", "workloads.py", "str_enum.py")
BUNDLE_PACKAGES = ("semantics", "enforcer")
START_TIMEOUT = 60.0
# The mark in each directory the driver creates on the node; only a directory holding this session's token is
# ever removed.
MARKER_FILE = ".nodeconf-owner"
# Create the work directory fresh (a marked one left by an earlier run is replaced; any other existing path is
# refused, exit 4) and the state directory (an earlier run's marked one is kept: it holds a crashed agent's state),
# then unpack the bundle. Exit 3 (an agent already answers on the socket) and 5 (the node's Python is older than
# 3.9, bullseye's, the oldest the pushed modules run on: test_agent_python39.py): nothing was touched.
PUSH_SCRIPT = r"""
dir=$1 state=$2 token=$3 python=$4 socket=$5 mark=$6
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
  version=$("$python" -V 2>&1 | head -n 1 | cut -c1-40)
  echo "nodeconf agent: the node's $python is $version; the agent needs Python 3.9 or newer" \
    "(python= names another interpreter)" >&2
  exit 5
fi
if "$python" -c 'import socket, sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])' "$socket" 2>/dev/null; then
  echo "nodeconf agent: another agent is running at $socket; stop it first" >&2; exit 3
fi
ours() { [ -d "$1" ] && [ ! -L "$1" ] && [ -f "$1/$mark" ] && [ ! -L "$1/$mark" ]; }
for d in "$dir" "$state"; do
  if { [ -e "$d" ] || [ -L "$d" ]; } && ! ours "$d"; then
    echo "$d exists and was not created by nodeconf (no $mark in it): choose another dir= or remove it" >&2
    exit 4
  fi
done
if [ -e "$dir" ]; then rm -rf -- "$dir" || exit 1; fi
mkdir -p -- "$(dirname -- "$dir")" "$(dirname -- "$state")" && mkdir -m 755 -- "$dir" &&
  printf '%s\n' "$token" > "$dir/$mark" || exit 1
if [ ! -d "$state" ]; then mkdir -m 700 -- "$state" || exit 1; fi
printf '%s\n' "$token" > "$state/$mark" && tar -x -f - -C "$dir" --no-same-owner
"""
# Remove each directory that holds this session's token (nothing else, not a symlink).
REMOVE_SCRIPT = r"""
token=$1 mark=$2; shift 2
for d; do
  if [ -d "$d" ] && [ ! -L "$d" ] && [ ! -L "$d/$mark" ] && [ "$(cat -- "$d/$mark" 2>/dev/null)" = "$token" ]; then
    rm -rf -- "$d" || exit 1
  fi
done
"""
REFUSED = 4
PYTHON_TOO_OLD = 5


class AgentTransport(Protocol):
    """What the driver needs of a transport (SshTransport, LocalTransport): commands and one long-lived stream."""

    def run(self, argv: Sequence[str], *, input: bytes | None = None, timeout: float = ...) -> Any: ...

    def open_stream(self, argv: Sequence[str], *, timeout: float | None = ...) -> Stream: ...

    def close(self) -> None: ...


def repo_root() -> Path:
    return Path(__file__).resolve().parents[3]


def agent_bundle() -> bytes:
    """A tar of what runs on the node: the stdlib-only packages and the workload programs."""
    root = repo_root()
    files = [root / "nodeconf" / name for name in BUNDLE_MODULES]
    for package in BUNDLE_PACKAGES:
        files += sorted((root / "nodeconf" / package).glob("*.py"))
    members = [(path, str(path.relative_to(root))) for path in files]
    members += [(path, f"{PROGRAMS}/{path.name}") for path in sorted(locate_tree().programs.glob("*.py"))]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path, arcname in members:
            info = archive.gettarinfo(str(path), arcname=arcname)
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mode = 0o644
            with open(path, "rb") as handle:
                archive.addfile(info, handle)
    return buffer.getvalue()


def _container_state(doc: ContainerStatusDoc) -> ContainerState:
    last = (doc.get("lastState") or {}).get("terminated")
    return ContainerState(
        name=doc["name"], state=doc["state"], reason=doc["reason"], exit_code=doc["exitCode"],
        restart_count=doc["restartCount"],
        last_terminated=Terminated(last["exitCode"], last["reason"]) if last else None, pid=doc["pid"],
    )


def pod_status(doc: PodStatusDoc) -> PodStatus:
    """A PodStatus from the agent's status document."""
    return PodStatus(
        phase=doc["phase"], qos_class=doc["qosClass"],
        containers={c["name"]: _container_state(c) for c in doc["containers"] if c["kind"] != "pause"},
        events=tuple(Event(e["type"], e["reason"], e["message"]) for e in doc["events"]),
        reason=doc["reason"], message=doc["message"],
        resize=ResizeStatus(doc["resize"]["status"], doc["resize"]["message"]), disrupted_at=doc.get("disruptedAt"),
    )


def _files(path: str, raw: Mapping[str, str | None]) -> CgroupFiles:
    return CgroupFiles(path, {k: v for k, v in raw.items() if v is not None})


class EnforcedPod(PodHandle):
    def __init__(self, node: EnforcedNode, pod: Pod, admitted: bool, errors: Sequence[str]) -> None:
        super().__init__(pod, admitted, errors)
        self.node = node

    def _require_admitted(self) -> None:
        if not self.admitted:
            raise NodeError(f"pod {self.pod.ref} was rejected: {'; '.join(self.errors)}")

    def status(self) -> PodStatus:
        self._require_admitted()
        return pod_status(self.node.client.call(Op.STATUS, pod=self.pod.ref))

    def evidence(self, extra_files: Sequence[str] = ()) -> PodEvidence:
        self._require_admitted()
        doc: EvidenceDoc = self.node.client.call(Op.EVIDENCE, pod=self.pod.ref, files=list(extra_files))
        status = doc["status"]
        cgroups = {path: _files(path, raw) for path, raw in doc["cgroups"].items()}
        pod_path = status["cgroup"]
        containers: dict[str, ContainerEvidence] = {}
        pause = None
        for c in status["containers"]:
            key = "POD" if c["kind"] == "pause" else c["name"]
            procs = doc["processes"][key]
            evidence = ContainerEvidence(
                name=c["name"], cgroup=cgroups.get(c["cgroup"], CgroupFiles(c["cgroup"], {})),
                pids=tuple(procs["pids"]),
                oom_score_adj={int(pid): adj for pid, adj in procs["oomScoreAdj"].items()},
            )
            if c["kind"] == "pause":
                pause = evidence
            else:
                containers[c["name"]] = evidence
        ancestors = {p: f for p, f in cgroups.items() if pod_path.startswith(p + "/")}
        return PodEvidence(status=pod_status(status), pod_cgroup=cgroups.get(pod_path, CgroupFiles(pod_path, {})),
                           containers=containers, pause=pause, ancestors=ancestors)

    def resize(self, patch: Mapping[str, Any]) -> ResizeStatus:
        self._require_admitted()
        doc: ResizeDoc = self.node.client.call(Op.RESIZE, pod=self.pod.ref, patch=dict(patch))
        return ResizeStatus(doc["status"], doc["message"])

    def exec(self, container: str, argv: Sequence[str], timeout: float = 30.0) -> ExecResult:
        self._require_admitted()
        return ExecResult(**self.node.client.call(Op.EXEC, pod=self.pod.ref, container=container, argv=list(argv),
                                                  timeout=timeout))

    def logs(self, container: str | None = None) -> str:
        self._require_admitted()
        text: str = self.node.client.call(Op.LOGS, pod=self.pod.ref, container=container)["text"]
        return text

    def delete(self) -> None:
        """Delete the pod; nothing to do once the node has stopped (the stop removed everything)."""
        if self.admitted and self.node.running:
            self.node.client.call(Op.DELETE, pod=self.pod.ref)
        self.admitted = False


@dataclass(frozen=True)
class EnforcerSettings:
    """Where and how the agent runs on the node; `faults` make a deliberately wrong node for self-tests."""

    cgroup_root: str = "/sys/fs/cgroup"
    remote_dir: str = REMOTE_DIR
    state_dir: str = STATE_DIR
    python: str = "python3"
    cpu_weight_formula: str = "nonlinear"
    # Who starts containers: direct (the agent) or the node's runc/crun (agent option --runtime).
    runtime: str = "direct"
    faults: tuple[str, ...] = ()
    backoff: float = 10.0


class EnforcedNode(Node):
    """A node whose kubelet is the bundled enforcer, started by `start()` and removed by `close()`."""

    def __init__(self, transport: AgentTransport, settings: EnforcerSettings = EnforcerSettings(), *,
                 spec: str = "", after_close: Sequence[Callable[[], None]] = ()) -> None:
        self.spec = spec
        self.transport = transport
        self.settings = settings
        self.after_close = tuple(after_close)
        self._client: AgentClient | None = None
        self._facts: NodeFacts | None = None
        self._closed = False
        self._pushed = False
        self.token = secrets.token_hex(16)
        self.final_log = ""

    @property
    def running(self) -> bool:
        return self._client is not None

    @property
    def socket(self) -> str:
        return f"{self.settings.state_dir}/agent.sock"

    @property
    def client(self) -> AgentClient:
        if self._client is None:
            raise NodeError("the enforcer is not running (call start())")
        return self._client

    def _agent_argv(self, *args: str) -> list[str]:
        return ["env", f"PYTHONPATH={self.settings.remote_dir}", self.settings.python, "-m", "nodeconf.enforcer",
                *args]

    def start(self) -> EnforcedNode:
        """Push the agent and the workload programs into fresh marked directories, start the agent as a daemon,
        open the stream to it. A node nodeconf may not use (an agent already runs, a directory or a kubepods
        cgroup it did not create) is refused with one line and left as it was."""
        settings = self.settings
        serve = ["serve", "--daemon", "--root", settings.cgroup_root, "--state-dir", settings.state_dir,
                 "--socket", self.socket, "--cpu-weight-formula", settings.cpu_weight_formula,
                 "--runtime", settings.runtime,
                 "--backoff", str(settings.backoff)]
        for fault in settings.faults:
            serve += ["--fault", fault]
        push = ["sh", "-c", PUSH_SCRIPT, "push", settings.remote_dir, settings.state_dir, self.token,
                settings.python, self.socket, MARKER_FILE]
        try:
            pushed = self.transport.run(push, input=agent_bundle(), timeout=START_TIMEOUT)
            self._refuse(pushed.rc, pushed.stderr, "")
            if pushed.rc != 0:
                raise NodeError(f"pushing the enforcer failed (exit {pushed.rc}): {_text(pushed.stderr)}")
            self._pushed = True
            started = self.transport.run(self._agent_argv(*serve), timeout=START_TIMEOUT)
            self._refuse(started.rc, started.stderr, "; stop it first")
            if started.rc != 0:
                raise NodeError(f"the enforcer did not start: {_text(started.stderr)}")
            bridge = self._agent_argv("bridge", "--socket", self.socket)
            self._client = AgentClient(self.transport.open_stream(bridge, timeout=READ_BOUND))
            self.client.call(Op.PING)
        except BaseException:
            self.close()
            raise
        return self

    def _refuse(self, rc: int, stderr: bytes, advice: str) -> None:
        """NodeError with the node's one line when it refused: an agent already runs there (then nothing of it
        may be cleaned up), a directory or cgroup in its place is not nodeconf's, or its Python is too old."""
        if rc == ALREADY_RUNNING:
            self._closed = True
            self.transport.close()
            raise NodeError(f"{_text(stderr)}{advice}")
        if rc in (REFUSED, FOREIGN_TREE, PYTHON_TOO_OLD):
            raise NodeError(_text(stderr))

    def _checked(self, argv: Sequence[str], *, input: bytes | None = None, timeout: float = 60.0) -> str:
        result = self.transport.run(argv, input=input, timeout=timeout)
        if result.rc != 0:
            detail = (result.stderr or result.stdout).decode(errors="replace").strip()
            raise NodeError(f"`{shlex.join(argv)}` failed on the node (exit {result.rc}): {detail}")
        text: str = result.stdout.decode(errors="replace")
        return text

    def facts(self) -> NodeFacts:
        if self._facts is None:
            self._facts = facts_from_dict(self.client.call(Op.FACTS))
        return self._facts

    def configure(self, config: KubeletConfig, version: str | None = None) -> Sequence[str]:
        result = self.client.call(Op.CONFIGURE, config=kubelet_config_to_dict(config), version=version)
        return tuple(result["warnings"])

    def set_namespace_objects(self, objects: Sequence[NamespaceObject]) -> None:
        self.client.call(Op.OBJECTS, objects=[namespace_object_to_dict(o) for o in objects])

    def run(self, pod: Pod) -> EnforcedPod:
        result: RunDoc = self.client.call(Op.RUN, pod=pod_to_dict(pod))
        return EnforcedPod(self, pod, result["admitted"], result["errors"])

    def node_cgroups(self, extra_files: Sequence[str] = ()) -> Mapping[str, CgroupFiles]:
        doc = self.client.call(Op.NODE_CGROUPS, files=list(extra_files))
        return {path: _files(path, raw) for path, raw in doc.items()}

    def exec_in_node_cgroup(self, path: str, argv: Sequence[str], timeout: float = 30.0) -> ExecResult:
        return ExecResult(**self.client.call(Op.EXEC_NODE, cgroup=path, argv=list(argv), timeout=timeout))

    def conditions(self) -> NodeConditions:
        doc: NodeStatusDoc = self.client.call(Op.NODE_STATUS)
        return NodeConditions(doc["conditions"],
                              tuple(Event(e["type"], e["reason"], e["message"]) for e in doc["events"]))

    def metrics(self) -> Metrics:
        return parse_metrics(self.client.call(Op.METRICS)["text"])

    def cadvisor_metrics(self) -> Metrics:
        return parse_metrics(self.client.call(Op.CADVISOR_METRICS)["text"])

    def logs(self) -> str:
        if self._client is None:
            return self.final_log
        text: str = self.client.call(Op.LOGS)["text"]
        return text

    def reset(self) -> None:
        """Delete every pod and namespace object; back to the default kubelet configuration."""
        self.client.call(Op.RESET)

    def close(self) -> None:
        """Stop the agent (it kills its processes and removes its marked cgroups), then remove the directories
        that hold this session's token (never any other); idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._client is not None:
                try:
                    self.final_log = self.logs()
                    self._client.call(Op.SHUTDOWN)
                    stopped_itself = True
                except NodeError:
                    self._checked(self._cleanup_argv())
                    stopped_itself = False
                self._client.close()
                self._client = None
                if stopped_itself:
                    self._wait_stopped()
            elif self._pushed:
                self.transport.run(self._cleanup_argv(), timeout=60)
            self._checked(["sh", "-c", REMOVE_SCRIPT, "remove", self.token, MARKER_FILE,
                               self.settings.remote_dir, self.settings.state_dir])
        finally:
            self.transport.close()
            for action in self.after_close:
                action()

    def _cleanup_argv(self) -> list[str]:
        return self._agent_argv("cleanup", "--root", self.settings.cgroup_root, "--state-dir", self.settings.state_dir)

    def _wait_stopped(self, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.transport.run(["test", "-e", self.socket], timeout=10).rc != 0:
                return
            time.sleep(0.1)
        raise NodeError(f"the enforcer did not stop within {timeout:g} s")


def _text(output: bytes) -> str:
    return output.decode(errors="replace").strip()
