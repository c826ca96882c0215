"""The agent's subtree on a stand-in directory: names checked before any path, top-down creation, removal."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from nodeconf import names
from nodeconf.enforcer.cgroupfs import CgroupTree, is_cgroup2
from nodeconf.enforcer.ownership import ForeignCgroup

POD = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod61fc9751_ad7b_4318_9db3_078bbf2e5eb5.slice"


@pytest.fixture
def tree(tmp_path: Path) -> CgroupTree:
    return CgroupTree(tmp_path)


@pytest.mark.parametrize("path", [
    "../etc", "kubepods.slice/../../etc", "/kubepods.slice", "system.slice/x", "kubepods.slice//x",
    "kubepods.slice/a b", "kubepods.slice/$(reboot)", "",
], ids=["parent", "dotdot-inside", "absolute", "not-owned", "empty-part", "space", "shell", "empty"])
def test_paths_outside_the_subtree_refused(tree: CgroupTree, path: str) -> None:
    with pytest.raises(names.UnsafeName):
        tree.ensure(path)


@pytest.mark.parametrize("file", ["../cgroup.procs", "memory.max/x", "MEMORY.MAX", "cgroup"],
                         ids=["dotdot", "slash", "upper", "no-dot"])
def test_bad_file_names_refused(tree: CgroupTree, file: str) -> None:
    tree.ensure("kubepods.slice")
    with pytest.raises(names.UnsafeName):
        tree.write("kubepods.slice", file, "1")


@pytest.mark.parametrize("check, text", [
    (names.pod_name, "res-demo"), (names.pod_name, "a.b-c"), (names.uid, "61fc9751-ad7b-4318-9db3-078bbf2e5eb5"),
])
def test_good_names(check: Callable[[str], str], text: str) -> None:
    assert check(text) == text


@pytest.mark.parametrize("text", ["Res-Demo", "-x", "x_y", "a" * 254, "a/b", ""])
def test_bad_pod_names(text: str) -> None:
    with pytest.raises(names.UnsafeName):
        names.pod_name(text)


def test_ensure_write_read_remove(tree: CgroupTree, tmp_path: Path) -> None:
    tree.ensure(POD)
    tree.write(POD, "memory.max", "134217728")
    assert tree.read(POD, "memory.max") == "134217728"
    assert tree.read(POD, "memory.high") is None
    (tmp_path / POD / "memory.events").write_text("oom 1\noom_kill 2\n")
    assert tree.keyed(POD, "memory.events") == {"oom": 1, "oom_kill": 2}
    assert tree.owned_roots() == ["kubepods.slice"]
    tree.remove("kubepods.slice")
    assert tree.owned_roots() == []
    assert [p.name for p in tmp_path.iterdir()] == ["cgroup.subtree_control"]


def test_a_second_ensure_checks_only_the_marks_of_what_it_made(tree: CgroupTree, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A cgroup made earlier that still carries the mark is passed by: no controller files read, no mkdir (issue
    31); a new cgroup below it enables the controllers in its own parent only."""
    tree.ensure(POD)
    enabled: list[str] = []
    enable = tree._enable_controllers

    def spy(parent: Path) -> None:
        enabled.append(parent.relative_to(tmp_path).as_posix())
        enable(parent)

    monkeypatch.setattr(tree, "_enable_controllers", spy)
    tree.ensure(POD)
    assert enabled == []
    tree.ensure(f"{POD}/app")
    assert enabled == [POD]


def test_a_cgroup_made_earlier_is_still_proven_ours(tree: CgroupTree, tmp_path: Path) -> None:
    """What ensure() made once is not trusted blindly: replaced by a directory without the mark it is refused,
    removed it is made (and marked) again."""
    tree.ensure(POD)
    qos = tmp_path / "kubepods.slice" / "kubepods-burstable.slice"
    tree.remove("kubepods.slice/kubepods-burstable.slice")
    assert not qos.exists()
    tree.ensure(POD)
    assert tree.owned_roots() == ["kubepods.slice"] and (tmp_path / POD).is_dir()
    tree.remove("kubepods.slice/kubepods-burstable.slice")
    qos.mkdir()  # someone else's cgroup in the same place
    with pytest.raises(ForeignCgroup):
        tree.ensure(POD)
    assert not (tmp_path / POD).exists()


def test_a_plain_directory_is_not_cgroup2(tmp_path: Path) -> None:
    assert not is_cgroup2(tmp_path)
