"""The driver of a node run by the bundled enforcer: push it, start it, talk to it over one long-lived stream."""

from __future__ import annotations

import dataclasses
import secrets
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from nodeconf.enforcer.state_file import LOG_FILE
from nodeconf.enforcer.wire import (
    ALREADY_RUNNING,
    FOREIGN_TREE,
    EvidenceBatchDoc,
    NodeStatusDoc,
    Op,
    RunDoc,
    facts_from_dict,
)
from nodeconf.kubelet_config import KubeletConfig, kubelet_config_to_dict, runtime_request_timeout_flag
from nodeconf.manifest import NamespaceObject, Pod
from nodeconf.manifest_writer import namespace_object_to_dict, pod_to_dict
from nodeconf.node_facts import NodeFacts
from nodeconf.nodes.base import (
    CgroupFiles,
    ExecResult,
    Metrics,
    Node,
    NodeConditions,
    NodeError,
    NotApplicable,
    PodEvidence,
    PodHandle,
    parse_metrics,
)
from nodeconf.nodes.enforced.agent_client import READ_BOUND, AgentClient, Stream, lock_hold
from nodeconf.nodes.enforced.bundle import (
    AGENT_MODULE,
    BRIDGE_MODULE,
    CHECK,
    MARKER_FILE,
    PUSH_SCRIPT,
    PYTHON_TOO_OLD,
    REFUSED,
    REMOTE_DIR,
    REMOVE_SCRIPT,
    START_TIMEOUT,
    STATE_DIR,
    TREE_CHANGED,
    agent_bundle,
    agent_socket,
    launch_argv,
    tree_digest,
)
from nodeconf.nodes.enforced.pod import EnforcedPod, cgroup_from_doc, pod_evidence
from nodeconf.nodes.enforced.runtime_choice import PROBE_TIMEOUT, RuntimeChoice, choose_runtime
from nodeconf.semantics.eviction import PidObservation
from nodeconf.semantics.expectation import Event

# The end of the agent's log read over the transport once the agent no longer answers.
LOG_TAIL_BYTES = 200_000


class AgentTransport(Protocol):
    """What the driver needs of a transport (SshTransport, LocalTransport): commands and one long-lived stream."""

    def run(self, argv: Sequence[str], *, input: bytes | None = None, timeout: float = ...) -> Any: ...

    def open_stream(self, argv: Sequence[str], *, timeout: float | None = ...) -> Stream: ...

    def close(self) -> None: ...


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
    # On a node with a runtime of its own (local, ssh://, vm?image=): auto, cri or direct as the spec asked, chosen
    # at start from the node's probe (runtime_choice.py) in place of `runtime`; None: `runtime` as it is.
    node_runtime: str | None = None
    faults: tuple[str, ...] = ()
    backoff: float = 10.0
    # The kubelet flag --runtime-request-timeout (a Go duration, "" none) a slow node's operator passes: it bounds
    # each runtime command and CRI call over the configuration's runtimeRequestTimeout (agent option).
    runtime_request_timeout: str = ""
    # The cgroup root is a plain directory standing for a cgroup tree (unit tests); else it must be cgroup2.
    stand_in: bool = False


class EnforcedNode(Node):
    """A node whose kubelet is the bundled enforcer, started by `start()` and removed by `close()`."""

    def __init__(self, transport: AgentTransport, settings: EnforcerSettings = EnforcerSettings(), *,
                 spec: str = "", after_close: Sequence[Callable[[], None]] = (),
                 describe_host: Callable[[], str] | None = None, image: str = "") -> None:
        self.spec = spec
        self.image = image
        self.transport = transport
        self.settings = settings
        self.after_close = tuple(after_close)
        self.describe_host = describe_host
        self._client: AgentClient | None = None
        self._facts: NodeFacts | None = None
        self._closed = False
        self._pushed = False
        self._digest = ""
        self.token = secrets.token_hex(16)
        self.final_log = ""
        self._stranded_log = ""
        self.runtime_choice: RuntimeChoice | None = None
        self._runtime_name = settings.runtime  # the agent's --runtime once started
        flag = settings.runtime_request_timeout
        self.kubelet_flags = f"--runtime-request-timeout={flag}" if flag else ""

    @property
    def running(self) -> bool:
        return self._client is not None

    @property
    def socket(self) -> str:
        return agent_socket(self.settings.state_dir)

    @property
    def client(self) -> AgentClient:
        if self._client is None:
            raise NodeError("the enforcer is not running (call start())")
        return self._client

    def _agent_argv(self, *args: str, module: str = AGENT_MODULE) -> list[str]:
        return launch_argv(self.settings.python, self.settings.remote_dir, self._digest, *args, module=module)

    def _stand_in(self) -> list[str]:
        return ["--stand-in"] if self.settings.stand_in else []

    def start(self) -> EnforcedNode:
        """Push the agent and the workload programs into fresh marked directories, start the agent as a daemon,
        open the stream to it. A node nodeconf may not use (an agent already runs, a directory or a kubepods
        cgroup it did not create) is refused with one line and left as it was."""
        settings = self.settings
        push = ["sh", "-c", PUSH_SCRIPT, "push", settings.remote_dir, settings.state_dir, self.token,
                settings.python, self.socket, MARKER_FILE, CHECK]
        try:
            bundle = agent_bundle()
            self._digest = tree_digest(bundle)
            pushed = self.transport.run(push, input=bundle, timeout=START_TIMEOUT)
            self._refuse(pushed.rc, pushed.stderr)
            if pushed.rc != 0:
                raise NodeError(f"pushing the enforcer failed (exit {pushed.rc}): {_text(pushed.stderr)}")
            self._pushed = True
            runtime = self._runtime()
            serve = ["serve", "--daemon", "--root", settings.cgroup_root, "--state-dir", settings.state_dir,
                     "--socket", self.socket, "--cpu-weight-formula", settings.cpu_weight_formula,
                     "--runtime", runtime,
                     "--backoff", str(settings.backoff), "--token", self.token, *self._stand_in()]
            for fault in settings.faults:
                serve += ["--fault", fault]
            if settings.runtime_request_timeout:
                serve.append(f"--runtime-request-timeout={settings.runtime_request_timeout}")
            self._runtime_name = runtime
            # The start runs runtime commands too (a runtime's probe container; under CRI also the image imports).
            started = self.transport.run(self._agent_argv(*serve), timeout=START_TIMEOUT + self._lock_hold())
            self._refuse(started.rc, started.stderr)
            if started.rc != 0:
                raise NodeError(f"the enforcer did not start: {_text(started.stderr)}")
            bridge = self._agent_argv("--socket", self.socket, module=BRIDGE_MODULE)
            self._client = AgentClient(self.transport.open_stream(bridge, timeout=READ_BOUND),
                                       describe_host=self.describe_host, held=self._lock_hold())
            self.client.call(Op.PING)
        except BaseException:
            self.close()
            raise
        return self

    def _lock_hold(self, config: KubeletConfig | None = None) -> float:
        """How long the agent may hold its lock for runtime commands (lock_hold), each bounded by its
        --runtime-request-timeout, else by the configuration's runtimeRequestTimeout (the default's without one)."""
        flag = self.settings.runtime_request_timeout
        if flag:
            return lock_hold(self._runtime_name, runtime_request_timeout_flag(flag) / 10**9)
        return lock_hold(self._runtime_name, (config or KubeletConfig()).runtime_request_timeout)

    def _runtime(self) -> str:
        """The agent's `--runtime`: the settings' own, or the one chosen from the node's probe (node_runtime)."""
        asked = self.settings.node_runtime
        if asked is None:
            return self.settings.runtime
        self.runtime_choice = choose_runtime(
            asked, lambda: self._checked(self._agent_argv("runtime-probe"), timeout=PROBE_TIMEOUT))
        return self.runtime_choice.agent_runtime

    def _refuse(self, rc: int, stderr: bytes) -> None:
        """NodeError with the node's one line when it refused: an agent already runs there (then nothing of it
        may be cleaned up), a directory or cgroup in its place is not this run's, a directory above them others can
        change, the pushed tree changed before it ran, or its Python is too old."""
        if rc == ALREADY_RUNNING:
            self._closed = True
            self.transport.close()
            raise NodeError(_text(stderr))
        if rc in (REFUSED, FOREIGN_TREE, PYTHON_TOO_OLD, TREE_CHANGED):
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
            facts = facts_from_dict(self.client.call(Op.FACTS))
            not_used = self.runtime_choice.not_used if self.runtime_choice else ""
            self._facts = dataclasses.replace(facts, runtime_not_used=not_used) if not_used else facts
        return self._facts

    def configure(self, config: KubeletConfig, version: str | None = None) -> Sequence[str]:
        """Configure the agent; from now on each answer may also wait for runtime commands bounded by the config's
        runtimeRequestTimeout (lock_hold)."""
        self.client.held = self._lock_hold(config)
        result = self.client.call(Op.CONFIGURE, config=kubelet_config_to_dict(config), version=version)
        return tuple(result["warnings"])

    def set_namespace_objects(self, objects: Sequence[NamespaceObject]) -> None:
        self.client.call(Op.OBJECTS, objects=[namespace_object_to_dict(o) for o in objects])

    def run(self, pod: Pod) -> EnforcedPod:
        result: RunDoc = self.client.call(Op.RUN, pod=pod_to_dict(pod))
        return EnforcedPod(self, pod, result["admitted"], result["errors"])

    def evidence_of(self, handles: Sequence[PodHandle], extra_files: Sequence[str] = ()) -> list[PodEvidence]:
        """Every pod's evidence in one request (`evidence_batch`); a pod of another node or a rejected one as
        PodHandle.evidence answers it."""
        ours = [h for h in handles if isinstance(h, EnforcedPod) and h.node is self and h.admitted]
        if len(ours) < 2:
            return super().evidence_of(handles, extra_files)
        doc: EvidenceBatchDoc = self.client.call(Op.EVIDENCE_BATCH, pods=[h.pod.ref for h in ours],
                                                 files=list(extra_files))
        return [pod_evidence(doc["pods"][h.pod.ref]) if h in ours else h.evidence(extra_files) for h in handles]

    def node_cgroups(self, extra_files: Sequence[str] = ()) -> Mapping[str, CgroupFiles]:
        doc = self.client.call(Op.NODE_CGROUPS, files=list(extra_files))
        return {path: cgroup_from_doc(path, raw) for path, raw in doc.items()}

    def exec_in_node_cgroup(self, path: str, argv: Sequence[str], timeout: float = 30.0) -> ExecResult:
        return ExecResult(**self.client.call(Op.EXEC_NODE, cgroup=path, argv=list(argv), timeout=timeout))

    def conditions(self) -> NodeConditions:
        doc: NodeStatusDoc = self.client.call(Op.NODE_STATUS)
        return NodeConditions(doc["conditions"],
                              tuple(Event(e["type"], e["reason"], e["message"]) for e in doc["events"]))

    def pid_observation(self) -> PidObservation:
        doc: NodeStatusDoc = self.client.call(Op.NODE_STATUS)
        rlimit = doc.get("rlimit")
        if rlimit is None:
            raise NotApplicable(f"node {self.spec}: the agent reads no task ceiling (kernel.pid_max, threads-max)")
        return PidObservation(rlimit["maxpid"], rlimit["curproc"])

    def metrics(self) -> Metrics:
        return parse_metrics(self.client.call(Op.METRICS)["text"])

    def cadvisor_metrics(self) -> Metrics:
        return parse_metrics(self.client.call(Op.CADVISOR_METRICS)["text"])

    def stats_summary(self) -> Mapping[str, Any]:
        summary: Mapping[str, Any] = self.client.call(Op.STATS_SUMMARY)
        return summary

    def resource_metrics(self) -> Metrics:
        return parse_metrics(self.client.call(Op.RESOURCE_METRICS)["text"])

    def logs(self) -> str:
        """The agent's log: through the agent, or read from its file over the transport once the agent no longer
        answers (the log then says why it hangs); tried once, as a lost host answers nothing at all."""
        if self._client is None:
            return self.final_log
        if not self._client.failed:
            text: str = self.client.call(Op.LOGS)["text"]
            return text
        if not self._stranded_log:
            path = f"{self.settings.state_dir}/{LOG_FILE}"
            try:
                read = self.transport.run(["tail", "-c", str(LOG_TAIL_BYTES), path], timeout=READ_BOUND)
                self._stranded_log = (f"(read from {path}: the enforcer no longer answers)\n{_text(read.stdout)}"
                                      if read.rc == 0 else f"could not read {path}: {_text(read.stderr)}")
            except Exception as error:
                self._stranded_log = f"could not read {path}: {type(error).__name__}: {error}"
        return self._stranded_log

    def reset(self) -> None:
        """Delete every pod and namespace object; back to the default kubelet configuration (and its bound)."""
        self.client.call(Op.RESET)
        self.client.held = self._lock_hold()

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
        return self._agent_argv("cleanup", "--root", self.settings.cgroup_root, "--state-dir", self.settings.state_dir,
                                *self._stand_in())

    def _wait_stopped(self, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.transport.run(["test", "-e", self.socket], timeout=10).rc != 0:
                return
            time.sleep(0.1)
        raise NodeError(f"the enforcer did not stop within {timeout:g} s")


def _text(output: bytes) -> str:
    return output.decode(errors="replace").strip()
