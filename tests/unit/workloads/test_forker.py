"""workloads/programs/forker.py: forks N children; with --hold keeps them and itself alive until killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.unit.workloads.workload_programs import PROGRAMS

FORKER = str(PROGRAMS / "forker.py")


def _children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_forker_waits_for_its_children_and_reports() -> None:
    done = subprocess.run([sys.executable, FORKER, "3"], capture_output=True, text=True, timeout=30, check=True)
    assert json.loads(done.stdout) == {"forked": 3, "error": ""}


def test_hold_keeps_every_child_until_killed() -> None:
    """After its line the forker and its 5 children stay; killing its process group ends them all."""
    proc = subprocess.Popen([sys.executable, FORKER, "5", "--hold"], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert proc.stdout is not None
        assert json.loads(proc.stdout.readline()) == {"forked": 5, "error": ""}
        assert proc.poll() is None, "the forker exited after forking"
        assert len(_children(proc.pid)) == 5
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def test_bad_arguments_exit_2() -> None:
    for argv in (["x"], ["3", "--keep"], []):
        assert subprocess.run([sys.executable, FORKER, *argv], capture_output=True, timeout=30).returncode == 2
