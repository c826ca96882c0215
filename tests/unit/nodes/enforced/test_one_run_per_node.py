"""One nodeconf run per node (issue 26 item 8): two specs of one run naming the same machine are refused before
anything starts, and a second session on a node is refused with one line naming the first, which keeps running.
The node is a stand-in tree under a temporary directory."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from nodeconf.enforcer.wire import ALREADY_RUNNING, Op
from nodeconf.errors import InputError
from nodeconf.nodes.base import NodeError
from nodeconf.nodes.enforced.bundle import MARKER_FILE
from nodeconf.nodes.enforced.node import EnforcedNode
from nodeconf.nodes.spec import parse_node_spec
from nodeconf.nodes.transport.base import CommandResult
from nodeconf.nodes.transport.local import LocalTransport
from nodeconf.run.matrix import run_nodes
from suites.toolkit.builders import typed_pod
from tests.unit.enforcer.enforcer_support import res_demo, run_enforcer
from tests.unit.nodes.enforced.local import local_settings


@pytest.fixture
def login(tmp_path: Path) -> str:
    (tmp_path / "key").write_text("k\n")
    (tmp_path / "known_hosts").write_text("h\n")
    return f"key={tmp_path / 'key'}&known_hosts={tmp_path / 'known_hosts'}"


@pytest.mark.parametrize(("first", "second", "machine"), [
    ("local", "local?name=b", "local"),
    ("local?dir=/opt/nc-a-{n}", "local?dir=/opt/nc-b-{n}&name=b", "local"),
    ("ssh://root@node1?{login}", "ssh://admin@NODE1:22?{login}&dir=/opt/x&name=b", "ssh node1:22"),
])
def test_two_specs_of_one_machine_are_refused(login: str, first: str, second: str, machine: str) -> None:
    specs = [parse_node_spec(text.format(login=login, n=id(login))) for text in (first, second)]
    with pytest.raises(InputError) as refused:
        run_nodes(specs, None)
    assert str(refused.value) == (f"--node: nodes {specs[0].name} and {specs[1].name} are the same machine "
                                  f"({machine}): one nodeconf run per node (its enforcer, state and cgroups are one "
                                  "per machine)")


@pytest.mark.parametrize("texts", [("vm", "vm?name=b"), ("ssh://root@localhost:2222?{login}",
                                                         "ssh://root@localhost:2223?{login}&name=b"),
                                   ("local", "ssh://root@node1?{login}")])
def test_distinct_machines_are_accepted(login: str, texts: tuple[str, str]) -> None:
    specs = [parse_node_spec(text.format(login=login)) for text in texts]
    assert [node.name for node in run_nodes(specs, None)] == [spec.name for spec in specs]


def test_a_second_run_with_its_own_directories_keeps_off_the_first_runs_cgroups(tmp_path: Path) -> None:
    """The cgroup mark names the agent that made it: another agent on the same root refuses, it never clears."""
    first_settings = local_settings(tmp_path)
    second_settings = dataclasses.replace(first_settings, remote_dir=str(tmp_path / "opt-b"),
                                          state_dir=str(tmp_path / "state-b"))
    first = EnforcedNode(LocalTransport(), first_settings).start()
    try:
        pod = first.run(typed_pod(res_demo()))
        with pytest.raises(NodeError) as refused:
            EnforcedNode(LocalTransport(), second_settings).start()
        owner = f"nodeconf agent {Path(first_settings.state_dir).resolve()}"
        assert str(refused.value) == (f"{tmp_path / 'cgroup' / 'kubepods.slice'} was created by another nodeconf "
                                      f"run ({owner}): one run per node; stop that run first")
        assert pod.status().container("hello").running
    finally:
        first.close()
    assert not (tmp_path / "cgroup" / "kubepods.slice").exists()


def test_a_second_agent_of_the_same_state_never_takes_over(tmp_path: Path) -> None:
    settings = local_settings(tmp_path)
    first = EnforcedNode(LocalTransport(), settings).start()
    try:
        pid = first.client.call(Op.PING)["pid"]
        second = run_enforcer("serve", "--stand-in", "--daemon", "--root", settings.cgroup_root, "--state-dir",
                              settings.state_dir, "--socket", str(tmp_path / "other.sock"))
        assert (second.returncode, second.stderr) == (
            ALREADY_RUNNING, f"nodeconf agent: another agent (pid {pid}) holds {settings.state_dir}/agent.lock: "
                             "one run per node; stop that run first\n")
        assert first.client.call(Op.PING)["pid"] == pid
        with pytest.raises(NodeError, match=re.escape(f"another agent (pid {pid}) holds")):
            EnforcedNode(LocalTransport(), settings).start()
        assert first.client.call(Op.PING)["pid"] == pid
    finally:
        first.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cgroup"]


class OverpushingTransport(LocalTransport):
    """Another session's push lands between this session's push and its agent's start: it marks the state
    directory with its own token."""

    def __init__(self, state_mark: Path) -> None:
        self.state_mark = state_mark

    def run(self, argv: Sequence[str], **kwargs: Any) -> CommandResult:
        result = super().run(argv, **kwargs)
        if len(argv) > 3 and argv[3] == "push" and result.rc == 0:
            self.state_mark.write_text(f"{OTHER_TOKEN}\n")
        return result


OTHER_TOKEN = "e1" * 16


def test_a_session_another_pushed_over_does_not_start(tmp_path: Path) -> None:
    settings = local_settings(tmp_path)
    state_mark = Path(settings.state_dir) / MARKER_FILE
    with pytest.raises(NodeError) as refused:
        EnforcedNode(OverpushingTransport(state_mark), settings).start()
    assert str(refused.value) == (f"nodeconf agent: {settings.state_dir} carries another session's token (another "
                                  "nodeconf run pushed after this one): one run per node; stop that run first")
    assert state_mark.read_text() == f"{OTHER_TOKEN}\n", "the other session's directories are left to it"
    assert not (Path(settings.state_dir) / "agent.pid").exists()
