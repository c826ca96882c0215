"""The node's own daemons as the agent finds them: the process behind a unix socket, kubelets, oom_score_adj."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodeconf.enforcer.daemons import kubelets, oom_score_adj, peer_pid, runtime_daemons


@pytest.fixture
def listening(tmp_path: Path) -> Iterator[str]:
    """A unix socket this process listens on (as a runtime daemon listens on its CRI socket)."""
    path = str(tmp_path / "runtime.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(path)
        server.listen(1)
        yield path


def fake_process(proc: Path, pid: int, comm: str, adj: str) -> None:
    (proc / str(pid)).mkdir(parents=True)
    (proc / str(pid) / "comm").write_text(comm + "\n")
    (proc / str(pid) / "oom_score_adj").write_text(adj + "\n")


def test_the_peer_of_a_socket_is_the_process_that_listens_on_it(listening: str) -> None:
    assert peer_pid(listening) == os.getpid()


def test_no_peer_where_nothing_listens(tmp_path: Path) -> None:
    assert peer_pid(str(tmp_path / "absent.sock")) is None
    (tmp_path / "file.sock").write_text("")
    assert peer_pid(str(tmp_path / "file.sock")) is None


def test_runtime_daemons_read_the_listeners_oom_score_adj(listening: str, tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    fake_process(proc, os.getpid(), "containerd", "-999")
    assert runtime_daemons((listening, str(tmp_path / "absent.sock")), proc) == ((listening, -999),)


def test_kubelets_are_the_processes_named_kubelet(tmp_path: Path) -> None:
    fake_process(tmp_path, 40, "kubelet", "-999")
    fake_process(tmp_path, 7, "kubelet", "0")
    fake_process(tmp_path, 12, "kubelet-helper", "-999")
    fake_process(tmp_path, 13, "containerd", "-999")
    (tmp_path / "self").mkdir()
    assert kubelets(tmp_path) == ((7, 0), (40, -999))


def test_a_process_gone_has_no_oom_score_adj(tmp_path: Path) -> None:
    assert oom_score_adj(99, tmp_path) is None
