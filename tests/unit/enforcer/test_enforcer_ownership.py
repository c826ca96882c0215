"""Ownership on the node: the agent marks every cgroup it creates and only ever kills or removes marked ones; a
node with a kubepods cgroup nodeconf did not create is refused before anything is written (issue 10, item 1).
Every tree here is a canary under a temporary directory."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodeconf.enforcer.cgroupfs import CgroupTree
from nodeconf.enforcer.ownership import (
    MARKER_FILE,
    OWNER_XATTR,
    ForeignCgroup,
    foreign_message,
    is_marked,
    kill_recorded,
    mark,
    process_start,
)
from nodeconf.enforcer.wire import FOREIGN_TREE
from tests.unit.enforcer.enforcer_support import (
    foreign_tree,
    make_agent,
    res_demo,
    run_enforcer,
    snapshot,
)

POD = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podx.slice"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "cgroup"
    path.mkdir()
    return path


def test_every_cgroup_created_is_marked(root: Path) -> None:
    tree = CgroupTree(root, owner="nodeconf agent test")
    tree.ensure(POD)
    made = [root / "/".join(POD.split("/")[:i]) for i in range(1, 4)]
    assert all((d / MARKER_FILE).read_text() == "nodeconf agent test\n" for d in made)
    assert tree.owned_roots() == ["kubepods.slice"] and tree.foreign_roots() == []


@pytest.mark.parametrize("top", ["kubepods.slice", "kubepods"])
def test_a_foreign_top_is_refused_and_untouched(root: Path, top: str) -> None:
    foreign_tree(root, f"{top}/burstable/podX/foreign")
    before = snapshot(root)
    tree = CgroupTree(root)
    assert tree.foreign_roots() == [root / top] and tree.owned_roots() == []
    message = (f"{root / top} was not created by nodeconf: a kubelet (or another tool) runs this node; stop it or "
               "use --node kube:CONTEXT")
    assert foreign_message(root / top) == message
    with pytest.raises(ForeignCgroup, match=f"^{re.escape(message)}$"):
        tree.refuse_foreign()
    with pytest.raises(ForeignCgroup):
        tree.ensure(f"{top}/burstable")
    assert tree.clear() == []
    assert snapshot(root) == before


def test_a_symlink_in_our_place_is_foreign(root: Path, tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    canary.mkdir()
    (canary / MARKER_FILE).write_text("forged\n")
    (root / "kubepods.slice").symlink_to(canary)
    tree = CgroupTree(root)
    assert tree.foreign_roots() == [root / "kubepods.slice"]
    with pytest.raises(ForeignCgroup):
        tree.ensure(POD)
    tree.clear()
    assert sorted(p.name for p in canary.iterdir()) == [MARKER_FILE]


def test_a_foreign_cgroup_inside_ours_survives_kill_and_remove(root: Path) -> None:
    """Our tree is removed except the foreign cgroup and the marked ancestors that hold it."""
    tree = CgroupTree(root)
    tree.ensure(POD)
    tree.ensure("kubepods.slice/kubepods-besteffort.slice")
    scope = foreign_tree(root, f"{POD}/cri-containerd-foreign.scope")
    with pytest.raises(ForeignCgroup):
        tree.ensure(f"{POD}/cri-containerd-foreign.scope")
    assert tree.clear() == [scope]
    assert (scope / "cgroup.procs").read_text() == "4242\n"
    assert not (root / "kubepods.slice/kubepods-besteffort.slice").exists()
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_dir()) == [
        "kubepods.slice", "kubepods.slice/kubepods-burstable.slice", POD, f"{POD}/cri-containerd-foreign.scope"]


def test_the_agent_refuses_a_foreign_node_before_writing(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    foreign_tree(root)
    before = snapshot(tmp_path)
    with pytest.raises(ForeignCgroup, match=r"kubepods\.slice was not created by nodeconf"):
        make_agent(tmp_path)
    after = snapshot(tmp_path)
    assert {k: v for k, v in after.items() if k != "state"} == before


def test_a_foreign_cgroup_appearing_under_a_pod_is_not_written(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    try:
        status = agent.run_pod(res_demo())["status"]
        scope = agent.tree.dir(status["cgroup"]) / "cri-containerd-foreign.scope"
        scope.mkdir()
        (scope / "cgroup.procs").write_text("4242\n")
        agent.delete("default/res-demo")
        assert (scope / "cgroup.procs").read_text() == "4242\n"
    finally:
        agent.shutdown()
    assert (scope / "cgroup.procs").read_text() == "4242\n"


def test_serve_on_a_foreign_node_exits_with_one_line_and_writes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    foreign_tree(root)
    before = snapshot(tmp_path)
    done = run_enforcer("serve", "--stand-in", "--daemon", "--root", str(root), "--state-dir", str(tmp_path / "state"),
                        "--socket", str(tmp_path / "agent.sock"))
    assert done.returncode == FOREIGN_TREE
    assert done.stderr == f"{foreign_message(root / 'kubepods.slice')}\n"
    assert snapshot(tmp_path) == before


def test_cleanup_removes_only_marked_cgroups(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    root.mkdir()
    CgroupTree(root).ensure(POD)
    scope = foreign_tree(root, "kubepods/burstable/podX/foreign")
    done = run_enforcer("cleanup", "--stand-in", "--root", str(root))
    assert done.returncode == 0
    assert done.stderr == f"nodeconf agent: left {root / 'kubepods'} in place: not created by nodeconf\n"
    assert not (root / "kubepods.slice").exists()
    assert (scope / "cgroup.procs").read_text() == "4242\n"


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_a_recorded_process_is_killed_only_when_its_start_time_matches(sleeper: subprocess.Popen[bytes]) -> None:
    started = process_start(sleeper.pid)
    assert started is not None
    kill_recorded({"pods": [{"containers": [{"pid": sleeper.pid, "pidStart": started + 1}]}]})
    assert sleeper.poll() is None, "a pid whose start time differs (reused) must not be killed"
    kill_recorded({"pods": [{"containers": [{"pid": sleeper.pid, "pidStart": started}]}]})
    assert sleeper.wait(timeout=5) == -signal.SIGKILL


def test_cleanup_kills_the_recorded_processes(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    state = tmp_path / "state"
    state.mkdir()
    record = {"pid": sleeper.pid, "pidStart": process_start(sleeper.pid)}
    (state / "state.json").write_text(json.dumps({"pods": [{"containers": [record]}]}))
    (tmp_path / "cgroup").mkdir()
    done = run_enforcer("cleanup", "--stand-in", "--root", str(tmp_path / "cgroup"), "--state-dir", str(state))
    assert done.returncode == 0
    assert sleeper.wait(timeout=5) == -signal.SIGKILL


def test_a_pod_whose_cgroup_exists_unmarked_is_refused(tmp_path: Path) -> None:
    """A kubelet's pod cgroup at the path of the pod's uid: refused at admission, nothing written into it."""
    agent = make_agent(tmp_path)
    try:
        doc = res_demo()
        doc["metadata"]["uid"] = "61fc9751-ad7b-4318-9db3-078bbf2e5eb5"
        pod_cgroup = agent.tree.dir(POD.replace("podx", "pod61fc9751_ad7b_4318_9db3_078bbf2e5eb5"))
        scope = foreign_tree(pod_cgroup.parent, f"{pod_cgroup.name}/cri-containerd-foreign.scope")
        before = snapshot(pod_cgroup)
        result = agent.run_pod(doc)
        assert not result["admitted"]
        assert result["errors"] == [f"pod default/res-demo: {foreign_message(pod_cgroup)}"]
        assert snapshot(pod_cgroup) == before and not agent.pods
    finally:
        agent.shutdown()
    assert (scope / "cgroup.procs").read_text() == "4242\n"


def test_the_kernel_mark_is_a_trusted_xattr(tmp_path: Path) -> None:
    """The cgroup2 mark on a canary directory (file systems that store trusted.* attributes for root)."""
    directory = tmp_path / "kubepods.slice"
    directory.mkdir()
    assert not is_marked(directory, kernel=True)
    try:
        mark(directory, "nodeconf agent /run/x", kernel=True)
    except OSError as err:
        pytest.skip(f"{tmp_path} does not store trusted.* attributes here: {err}")
    assert os.getxattr(directory, OWNER_XATTR) == b"nodeconf agent /run/x"
    assert is_marked(directory, kernel=True) and not is_marked(directory, kernel=False)
    link = tmp_path / "kubepods"
    link.symlink_to(directory)
    assert not is_marked(link, kernel=True)
