"""The enforced driver on this host: an agent on a temporary cgroup tree and state (stand-in mode), and the ops
the node sends it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodeconf.enforcer.wire import Op
from nodeconf.nodes.enforced.node import EnforcedNode, EnforcerSettings
from nodeconf.nodes.transport.local import LocalTransport


def local_settings(tmp_path: Path, faults: tuple[str, ...] = ()) -> EnforcerSettings:
    (tmp_path / "cgroup").mkdir(exist_ok=True)
    return EnforcerSettings(cgroup_root=str(tmp_path / "cgroup"), remote_dir=str(tmp_path / "opt"),
                            state_dir=str(tmp_path / "state"), python=sys.executable, backoff=0.1, faults=faults,
                            stand_in=True)


def count_requests(node: EnforcedNode, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ops the driver sends from now on, in order."""
    sent: list[str] = []
    call = node.client.call

    def counted(op: Op, **args: object) -> object:
        sent.append(op.value)
        return call(op, **args)

    monkeypatch.setattr(node.client, "call", counted)
    return sent


@pytest.fixture
def local_node(tmp_path: Path) -> Iterator[EnforcedNode]:
    node = EnforcedNode(LocalTransport(), local_settings(tmp_path), spec="local").start()
    try:
        yield node
    finally:
        node.close()
