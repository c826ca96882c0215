"""The code the driver runs as root on a node cannot be replaced (issue 26 items 4 and 6): the agent runs from `/`
with an isolated import path, only from a work directory whose every parent only root (the agent's uid) can change,
only when the tree there is the one pushed (its digest), and a directory is only taken over when its owner mark
holds the token nodeconf recorded. Canary directories under a temporary directory stand for the node's."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from nodeconf.enforcer.wire import Op
from nodeconf.nodes.base import NodeError
from nodeconf.nodes.enforced.bundle import MARKER_FILE
from nodeconf.nodes.enforced.node import EnforcedNode, EnforcerSettings
from nodeconf.nodes.transport.base import CommandResult
from nodeconf.nodes.transport.local import LocalTransport
from tests.unit.nodes.enforced.local import local_settings


def trap(path: Path, canary: Path) -> None:
    """A module that notes it was imported in the canary file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"open({str(canary)!r}, 'a').write({str(path)!r} + '\\n')\n")


def test_nothing_is_imported_from_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`python3 -m` and `-c` put the working directory first on sys.path: a `nodeconf` package or a `socket`
    module there would run as root instead of the pushed code."""
    canary = tmp_path / "imported"
    cwd = tmp_path / "cwd"
    for module in ("nodeconf/__init__.py", "socket.py", "fcntl.py", "json.py", "hashlib.py"):
        trap(cwd / module, canary)
    monkeypatch.chdir(cwd)
    node = EnforcedNode(LocalTransport(), local_settings(tmp_path)).start()
    try:
        pid = node.client.call(Op.PING)["pid"]
        assert os.readlink(f"/proc/{pid}/cwd") == "/"
    finally:
        node.close()
    assert not canary.exists(), canary.read_text()


@pytest.mark.parametrize(("mode", "owner"), [(0o777, 0), (0o775, 0), (0o757, 0), (0o755, 65534)])
@pytest.mark.parametrize("setting", ["remote_dir", "state_dir"])
def test_a_directory_others_can_change_above_the_work_dir_is_refused(tmp_path: Path, setting: str, mode: int,
                                                                      owner: int) -> None:
    if owner != os.geteuid() and os.geteuid() != 0:
        pytest.skip("giving a directory to another user needs root")
    settings = local_settings(tmp_path)
    parent = tmp_path / "shared"
    parent.mkdir()
    os.chown(parent, owner, -1)
    parent.chmod(mode)
    directory = parent / "nested" / "dir"
    settings = dataclasses.replace(settings, remote_dir=str(directory)) if setting == "remote_dir" else \
        dataclasses.replace(settings, state_dir=str(directory))
    with pytest.raises(NodeError) as refused:
        EnforcedNode(LocalTransport(), settings).start()
    assert str(refused.value) == (
        f"nodeconf agent: {parent} (owner uid {owner}, mode {mode:04o}) can be changed by others than uid "
        f"{os.geteuid()}, so {directory} could be swapped before it runs; choose a directory whose every parent "
        "only that uid can write")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cgroup", "shared"]
    assert list(parent.iterdir()) == []


def test_a_sticky_parent_like_tmp_is_accepted(tmp_path: Path) -> None:
    """In a sticky directory only an entry's owner may rename or remove it (unlink(2), rename(2): EPERM)."""
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    settings = dataclasses.replace(local_settings(tmp_path), remote_dir=str(sticky / "opt"))
    EnforcedNode(LocalTransport(), settings).start().close()
    assert list(sticky.iterdir()) == []


class SwappingTransport(LocalTransport):
    """Replaces a pushed module right after the push, as a user who could write there would."""

    def __init__(self, module: Path, canary: Path) -> None:
        self.module = module
        self.canary = canary

    def run(self, argv: Sequence[str], **kwargs: Any) -> CommandResult:
        result = super().run(argv, **kwargs)
        if len(argv) > 3 and argv[3] == "push" and result.rc == 0:
            trap(self.module, self.canary)
        return result


def test_a_tree_changed_after_the_push_is_not_run(tmp_path: Path) -> None:
    settings = local_settings(tmp_path)
    canary = tmp_path / "imported"
    swapped = Path(settings.remote_dir) / "nodeconf" / "enforcer" / "__main__.py"
    with pytest.raises(NodeError, match=re.escape(f"nodeconf agent: {settings.remote_dir} does not hold the "
                                                  "pushed tree (its digest is ")):
        EnforcedNode(SwappingTransport(swapped, canary), settings).start()
    assert not canary.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cgroup"]


def marked(settings: EnforcerSettings, work: str | None, state: str | None) -> None:
    for directory, token in ((settings.remote_dir, work), (settings.state_dir, state)):
        if token is not None:
            Path(directory).mkdir()
            (Path(directory) / "precious").write_text("keep me\n")
            (Path(directory) / MARKER_FILE).write_text(token)


TOKEN, OTHER = "0f" * 16, "e1" * 16  # fixed, so that every xdist worker collects the same ids


@pytest.mark.parametrize(("work", "state"), [
    pytest.param("whatever\n", None, id="any-text"), pytest.param("", None, id="empty"),
    pytest.param(f"{TOKEN}\n", None, id="no-state-dir"), pytest.param(f"{TOKEN}\n", f"{OTHER}\n", id="other-token"),
    pytest.param("whatever\n", "whatever\n", id="same-text-not-a-token"),
    pytest.param(f"{TOKEN}\nmore\n", f"{TOKEN}\nmore\n", id="token-and-more"),
])
def test_a_work_dir_whose_mark_is_not_the_recorded_token_is_never_removed(tmp_path: Path, work: str,
                                                                         state: str | None) -> None:
    settings = local_settings(tmp_path)
    marked(settings, work, state)
    with pytest.raises(NodeError, match=re.escape(f"{settings.remote_dir} exists and was not created by nodeconf")):
        EnforcedNode(LocalTransport(), settings).start()
    assert (Path(settings.remote_dir) / "precious").read_text() == "keep me\n"
    assert (Path(settings.remote_dir) / MARKER_FILE).read_text() == work


def test_a_killed_runs_work_dir_is_replaced(tmp_path: Path) -> None:
    """Both directories hold the token one push wrote in them: the work directory is that run's, replaced."""
    settings = local_settings(tmp_path)
    marked(settings, f"{TOKEN}\n", f"{TOKEN}\n")
    node = EnforcedNode(LocalTransport(), settings).start()
    try:
        assert not (Path(settings.remote_dir) / "precious").exists()
        assert (Path(settings.remote_dir) / MARKER_FILE).read_text() == f"{node.token}\n"
    finally:
        node.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cgroup"]
