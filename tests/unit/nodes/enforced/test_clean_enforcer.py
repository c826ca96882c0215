"""`nodeconf clean --node local|ssh://` on a node whose agent still runs (issue 26 item 3): a run still talks to
it (a driver is connected) → refused with one line naming it, nothing killed; nobody talks to it (its run was
killed) → it is asked to stop, and the state it kept is removed, so no later agent restarts the killed run's pods.
The node is a stand-in tree under a temporary directory, reached by LocalTransport."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodeconf.enforcer.wire import Op
from nodeconf.nodes.base import NodeError
from nodeconf.nodes.enforced.node import EnforcedNode
from nodeconf.nodes.leftovers import clean_enforcer
from nodeconf.nodes.transport.local import LocalTransport
from suites.toolkit.builders import typed_pod
from tests.unit.enforcer.enforcer_support import res_demo
from tests.unit.nodes.enforced.local import local_settings


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (/proc/PID/stat field 3)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def test_clean_refuses_an_agent_a_run_is_connected_to(tmp_path: Path) -> None:
    settings = local_settings(tmp_path)
    node = EnforcedNode(LocalTransport(), settings).start()
    try:
        pod = node.run(typed_pod(res_demo()))
        pid = node.client.call(Op.PING)["pid"]
        with pytest.raises(NodeError) as refused:
            clean_enforcer(LocalTransport(), settings)
        assert str(refused.value) == (f"nodeconf agent: the agent at {settings.state_dir}/agent.sock (pid {pid}) "
                                      "serves a live run (a driver is connected): not cleaned; stop that run first")
        assert node.client.call(Op.PING)["pid"] == pid
        assert pod.status().container("hello").running
    finally:
        node.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cgroup"]


def test_clean_stops_an_abandoned_agent_and_removes_its_state(tmp_path: Path) -> None:
    """The driver of the run is gone (its stream closed, as when the run is killed): clean stops the agent, which
    kills its pods, and removes the state file that would make the next agent restart them."""
    settings = local_settings(tmp_path)
    node = EnforcedNode(LocalTransport(), settings).start()
    pod = node.run(typed_pod(res_demo()))
    pid = node.client.call(Op.PING)["pid"]
    container_pid = pod.status().container("hello").pid
    assert container_pid is not None
    state = Path(settings.state_dir)
    assert len(json.loads((state / "state.json").read_text())["pods"]) == 1
    node.client.close()  # the run is killed: nobody talks to the agent any more
    output = clean_enforcer(LocalTransport(), settings)
    assert output.strip() == f"nodeconf agent: stopped the agent (pid {pid}) nobody was connected to"
    assert not alive(pid) and not alive(container_pid)
    assert not (state / "state.json").exists()
    assert not (tmp_path / "cgroup" / "kubepods.slice").exists()
