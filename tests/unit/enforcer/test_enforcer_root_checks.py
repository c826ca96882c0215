"""What the agent may take as its node (issue 26 item 9): the agent to kill is named by its pid and start time, a
root that is not cgroup v2 is an error unless the caller asks for a stand-in, a root inside a kubelet's tree and a
kubelet's pods under a custom cgroupRoot are refused. Every tree is a canary under a temporary directory; the
processes are started here."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodeconf.enforcer.ownership import foreign_message, process_start
from nodeconf.enforcer.wire import FOREIGN_TREE
from tests.unit.enforcer.enforcer_support import foreign_tree, run_enforcer, snapshot

PID_FILE = "agent.pid"


@pytest.fixture
def lookalike() -> Iterator[subprocess.Popen[bytes]]:
    """A process whose command line holds `nodeconf.enforcer`, as the agent's does, but which is not it."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "nodeconf.enforcer"],
                            start_new_session=True)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("recorded", ["{pid}\n", "{pid} {wrong}\n", "{pid} not-a-start\n"])
def test_cleanup_kills_no_process_whose_start_time_is_not_the_recorded_one(
        tmp_path: Path, lookalike: subprocess.Popen[bytes], recorded: str) -> None:
    started = process_start(lookalike.pid)
    assert started is not None
    state = tmp_path / "state"
    state.mkdir()
    (state / PID_FILE).write_text(recorded.format(pid=lookalike.pid, wrong=started + 1))
    (tmp_path / "cgroup").mkdir()
    done = run_enforcer("cleanup", "--stand-in", "--root", str(tmp_path / "cgroup"), "--state-dir", str(state))
    assert done.returncode == 0, done.stderr
    assert lookalike.poll() is None, "a reused pid whose command line looks like the agent's was killed"


def test_cleanup_kills_the_agent_its_pid_file_names_with_its_start_time(
        tmp_path: Path, lookalike: subprocess.Popen[bytes]) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / PID_FILE).write_text(f"{lookalike.pid} {process_start(lookalike.pid)}\n")
    (tmp_path / "cgroup").mkdir()
    done = run_enforcer("cleanup", "--stand-in", "--root", str(tmp_path / "cgroup"), "--state-dir", str(state))
    assert done.returncode == 0, done.stderr
    assert lookalike.wait(timeout=5) == -signal.SIGKILL


@pytest.mark.parametrize("command", ["serve", "cleanup"])
def test_a_root_that_is_not_cgroup2_is_an_error_without_stand_in(tmp_path: Path, command: str) -> None:
    """A node whose /sys/fs/cgroup is cgroup v1's tmpfs is not run on a stand-in tree that limits nothing."""
    root = tmp_path / "cgroup"
    root.mkdir()
    before = snapshot(tmp_path)
    args = ["--state-dir", str(tmp_path / "state")]
    if command == "serve":
        args += ["--daemon", "--socket", str(tmp_path / "agent.sock")]
    done = run_enforcer(command, "--root", str(root), *args)
    assert (done.returncode, done.stderr) == (2, f"nodeconf agent: {root} is not a cgroup v2 file system; the "
                                                 "enforcer needs cgroup v2 (a unified hierarchy)\n")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(("inside", "kubepods"), [("kubepods.slice/nodeconf", "kubepods.slice"),
                                                 ("kubelet.slice/kubelet-kubepods.slice",
                                                  "kubelet.slice/kubelet-kubepods.slice"),
                                                 ("kubepods/burstable", "kubepods")])
def test_a_root_inside_a_kubelets_tree_is_refused(tmp_path: Path, inside: str, kubepods: str) -> None:
    root = tmp_path / "cgroup" / inside
    root.mkdir(parents=True)
    before = snapshot(tmp_path)
    done = run_enforcer("serve", "--stand-in", "--daemon", "--root", str(root), "--state-dir",
                        str(tmp_path / "state"), "--socket", str(tmp_path / "agent.sock"))
    assert (done.returncode, done.stderr) == (FOREIGN_TREE, f"{foreign_message(tmp_path / 'cgroup' / kubepods)}\n")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("custom", ["kubelet.slice/kubelet-kubepods.slice", "custom/kubepods",
                                    "a.slice/a-b.slice/a-b-kubepods.slice"])
def test_pods_under_a_custom_cgroup_root_are_refused(tmp_path: Path, custom: str) -> None:
    """A kubelet with cgroupRoot=/kubelet (kind's) keeps its pods in kubelet.slice/kubelet-kubepods.slice, not in
    the kubepods.slice the agent would make (kubelet cm/cgroup_manager_linux.go ToSystemd)."""
    root = tmp_path / "cgroup"
    foreign_tree(root, f"{custom}/kubepods-burstable.slice/pod1/cri-containerd-x.scope")
    before = snapshot(tmp_path)
    done = run_enforcer("serve", "--stand-in", "--daemon", "--root", str(root), "--state-dir",
                        str(tmp_path / "state"), "--socket", str(tmp_path / "agent.sock"))
    assert (done.returncode, done.stderr) == (FOREIGN_TREE, f"{foreign_message(root / custom)}\n")
    assert snapshot(tmp_path) == before
    assert not os.path.exists(tmp_path / "state")
