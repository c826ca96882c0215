"""The enforced driver only uses and removes what it created: a node with a foreign kubepods cgroup or an existing
directory in its place is refused with one line and left as it was (issue 10, items 1 and 2). Canary directories
under a temporary directory stand for the node's."""

from __future__ import annotations

import dataclasses
import json
import re
import secrets
import sys
import time
from pathlib import Path

import pytest

from nodeconf.enforcer.oci_runtime import COMMAND_TIMEOUT
from nodeconf.enforcer.ownership import foreign_message
from nodeconf.enforcer.server import OPERATIONS
from nodeconf.enforcer.wire import Op
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.nodes.base import NodeError
from nodeconf.nodes.enforced.agent_client import (
    ANSWER_BOUNDS,
    EXEC_MARGIN,
    READ_BOUND,
    WRITE_BOUND,
    AgentClient,
    lock_hold,
)
from nodeconf.nodes.enforced.bundle import MARKER_FILE
from nodeconf.nodes.enforced.node import EnforcedNode, EnforcerSettings
from nodeconf.nodes.transport.local import LocalTransport
from tests.unit.nodes.enforced.local import local_settings


def canary(directory: Path) -> Path:
    directory.mkdir(parents=True)
    (directory / "precious").write_text("keep me\n")
    return directory


def test_a_node_with_a_foreign_kubepods_is_refused_with_one_line(tmp_path: Path) -> None:
    scope = canary(tmp_path / "cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podX.slice"
                   / "cri-containerd-foreign.scope")
    with pytest.raises(NodeError) as refused:
        EnforcedNode(LocalTransport(), local_settings(tmp_path)).start()
    assert str(refused.value) == foreign_message(tmp_path / "cgroup/kubepods.slice")
    assert (scope / "precious").read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cgroup"], "the pushed directories are removed again"


@pytest.mark.parametrize("setting", ["remote_dir", "state_dir"])
def test_an_existing_directory_is_never_used_nor_removed(tmp_path: Path, setting: str) -> None:
    settings = local_settings(tmp_path)
    existing = canary(Path(getattr(settings, setting)))
    node = EnforcedNode(LocalTransport(), settings)
    with pytest.raises(NodeError, match=f"^{re.escape(str(existing))} exists and was not created by nodeconf"):
        node.start()
    node.close()
    assert sorted(p.name for p in existing.iterdir()) == ["precious"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["cgroup", existing.name])


def test_a_symlink_to_a_marked_directory_is_refused(tmp_path: Path) -> None:
    target = canary(tmp_path / "elsewhere")
    (target / MARKER_FILE).write_text("forged\n")
    settings = local_settings(tmp_path)
    Path(settings.remote_dir).symlink_to(target)
    with pytest.raises(NodeError, match="exists and was not created by nodeconf"):
        EnforcedNode(LocalTransport(), settings).start()
    assert sorted(p.name for p in target.iterdir()) == [MARKER_FILE, "precious"]


def test_a_marked_leftover_is_replaced_and_only_this_sessions_directory_removed(tmp_path: Path) -> None:
    settings = local_settings(tmp_path)
    leftover = canary(Path(settings.remote_dir))
    earlier = secrets.token_hex(16)  # an earlier, killed run's push marked both directories with its token
    (leftover / MARKER_FILE).write_text(f"{earlier}\n")
    Path(settings.state_dir).mkdir()
    (Path(settings.state_dir) / MARKER_FILE).write_text(f"{earlier}\n")
    node = EnforcedNode(LocalTransport(), settings).start()
    try:
        assert not (leftover / "precious").exists()
        assert (leftover / MARKER_FILE).read_text() == f"{node.token}\n"
        (leftover / MARKER_FILE).write_text("someone else\n")
    finally:
        node.close()
    assert leftover.is_dir(), "a directory without this session's token is left in place"
    assert not Path(settings.state_dir).exists()


def test_an_unanswered_request_fails_within_its_bound_and_later_ones_at_once() -> None:
    stream = LocalTransport().open_stream(["sh", "-c", "cat >/dev/null"], timeout=60)
    client = AgentClient(stream, bounds={Op.PING: 0.2})
    try:
        started = time.monotonic()
        with pytest.raises(NodeError, match=re.escape("did not answer 'ping' within 0.2 s (the bound for 'ping')")):
            client.call(Op.PING)
        with pytest.raises(NodeError, match="no longer answers"):
            client.call(Op.PING)
        assert time.monotonic() - started < 5
    finally:
        stream.close()


def test_an_unanswered_request_names_what_the_host_shows() -> None:
    stream = LocalTransport().open_stream(["sh", "-c", "cat >/dev/null"], timeout=60)
    client = AgentClient(stream, bounds={Op.PING: 0.2}, describe_host=lambda: "VM n1 console: rcu stall")
    try:
        with pytest.raises(NodeError, match=r"within 0\.2 s .*; VM n1 console: rcu stall$"):
            client.call(Op.PING)
    finally:
        stream.close()


def test_each_operation_has_a_bound() -> None:
    client = AgentClient(LocalTransport().open_stream(["true"]))
    try:
        assert client.bound(Op.EVIDENCE, {}) == client.bound(Op.STATUS, {}) == READ_BOUND == 30
        assert client.bound(Op.EXEC, {"timeout": 100}) == 100 + EXEC_MARGIN
        assert client.bound(Op.RUN, {}) > READ_BOUND
    finally:
        client.close()


def test_with_a_runtime_every_bound_waits_for_five_runtime_commands_more() -> None:
    """The agent holds its lock while runc or crun starts a pod's containers (a pause and up to four here), each
    bounded by runtimeRequestTimeout (2m0s unless configured); under CRI the sandbox's RunPodSandbox by twice it."""
    assert lock_hold("direct") == lock_hold("direct", 600) == 0
    assert lock_hold("runc", 600) == 5 * 600
    assert lock_hold("containerd") == 6 * COMMAND_TIMEOUT == 720
    client = AgentClient(LocalTransport().open_stream(["true"]), held=lock_hold("runc"))
    try:
        assert lock_hold("runc") == lock_hold("crun") == 5 * COMMAND_TIMEOUT == 600
        assert client.bound(Op.STATUS, {}) == READ_BOUND + 600
        assert client.bound(Op.EXEC, {"timeout": 100}) == 100 + EXEC_MARGIN + 600
    finally:
        client.close()


def test_the_driver_states_a_bound_for_every_agent_operation() -> None:
    assert set(OPERATIONS) | {Op.SHUTDOWN} == set(ANSWER_BOUNDS) | {Op.EXEC, Op.EXEC_NODE} == set(Op)


def test_a_node_whose_python_is_too_old_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    """The agent runs on 3.9 (bullseye's) and newer: a node whose python3 is 3.8 is one line, nothing pushed. The
    stand-in runs the push script's own check with this Python, only claiming to be 3.8.10."""
    old_python = tmp_path / "python3.8"
    old_python.write_text(f"#!{sys.executable}\nimport sys\nsys.version_info = (3, 8, 10, 'final', 0)\n"
                          "if sys.argv[1] == '-V':\n    print('Python 3.8.10')\nelse:\n"
                          "    code, sys.argv = sys.argv[2], ['-c', *sys.argv[3:]]\n    exec(code)\n")
    old_python.chmod(0o755)
    settings = dataclasses.replace(local_settings(tmp_path), python=str(old_python))
    with pytest.raises(NodeError) as refused:
        EnforcedNode(LocalTransport(), settings).start()
    assert str(refused.value) == (f"nodeconf agent: the node's {old_python} is Python 3.8.10; the agent needs Python "
                                  "3.9 or newer (python= names another interpreter)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cgroup", "python3.8"]


class InterruptedStream:
    """An agent stream whose first wait for an answer is interrupted (Ctrl-C, SIGTERM) before the answer comes."""

    def __init__(self) -> None:
        self.sent: list[dict[str, object]] = []
        self.waits = 0

    def write(self, data: bytes) -> None:
        self.sent.append(json.loads(data))

    def readline(self, timeout: float | None = None) -> bytes:
        self.waits += 1
        if self.waits == 1:
            raise KeyboardInterrupt
        ident = self.sent[0]["id"] if self.waits == 2 else self.sent[-1]["id"]  # the late answer first
        return json.dumps({"id": ident, "ok": True, "result": f"answer {ident}", "agentMs": 1.0}).encode() + b"\n"

    def close(self) -> None:
        pass


def test_the_cleanup_after_an_interrupted_request_reads_its_own_answers() -> None:
    """An interrupt during a wait leaves that request's answer on the stream; the cleanup's requests that follow
    (deleting the pods on the node) pass by it instead of failing on "answered request 1 to request 2"."""
    client = AgentClient(InterruptedStream())
    with pytest.raises(KeyboardInterrupt):
        client.call(Op.PING)
    assert client.call(Op.PING) == "answer 2"
    assert client.call(Op.PING) == "answer 3"


class AnsweringStream:
    """An agent stream that answers every request at once and records how long the driver would wait for it."""

    def __init__(self) -> None:
        self.sent: list[dict[str, object]] = []
        self.waits: list[float | None] = []

    def write(self, data: bytes) -> None:
        self.sent.append(json.loads(data))

    def readline(self, timeout: float | None = None) -> bytes:
        self.waits.append(timeout)
        result: dict[str, object] = {"warnings": []} if self.sent[-1]["op"] == Op.CONFIGURE.value else {}
        return json.dumps({"id": self.sent[-1]["id"], "ok": True, "result": result, "agentMs": 1.0}).encode() + b"\n"

    def close(self) -> None:
        pass


def test_the_driver_waits_for_runtime_commands_as_long_as_the_configured_runtime_request_timeout() -> None:
    """A node configured with runtimeRequestTimeout 10m0s lets each runc command of the agent take up to 600 s, so
    every answer may wait five of them; a reset goes back to the 2m0s default (after the reset's own wait)."""
    node = EnforcedNode(LocalTransport(), EnforcerSettings(runtime="runc"))
    stream = AnsweringStream()
    node._client = AgentClient(stream, held=lock_hold("runc"))
    node.configure(KubeletConfig(runtime_request_timeout_ns=600 * 10**9))
    node.client.call(Op.PING)
    node.reset()
    node.client.call(Op.PING)
    assert [m["op"] for m in stream.sent] == ["configure", "ping", "reset", "ping"]
    assert stream.waits == [WRITE_BOUND + 3000, READ_BOUND + 3000, WRITE_BOUND + 3000, READ_BOUND + 600]


def test_a_slow_nodes_kubelet_flag_reaches_the_agent_and_outweighs_the_configuration(tmp_path: Path) -> None:
    """EnforcerSettings.runtime_request_timeout is the kubelet's --runtime-request-timeout (a slow VM's operator
    passes it): the agent starts with it, the report names it, and the driver waits for it whatever the
    configuration's runtimeRequestTimeout (kubelet flags override its config file)."""
    settings = dataclasses.replace(local_settings(tmp_path), runtime_request_timeout="10m0s")
    with EnforcedNode(LocalTransport(), settings).start() as node:
        assert "--runtime-request-timeout 10m0s" in node.logs()
        assert node.kubelet_flags == "--runtime-request-timeout=10m0s"
    runc = EnforcedNode(LocalTransport(), dataclasses.replace(settings, runtime="runc"))
    stream = AnsweringStream()
    runc._client = AgentClient(stream, held=0)
    runc.configure(KubeletConfig(runtime_request_timeout_ns=60 * 10**9))
    runc.reset()
    runc.client.call(Op.PING)
    assert stream.waits == [WRITE_BOUND + 3000, WRITE_BOUND + 3000, READ_BOUND + 3000]
