"""nodeconf/enforcer/process.py: a container's process is placed (cgroup, oom_score_adj, session) before its command
runs; a pod's processes are killed together, then reaped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nodeconf.enforcer import process


def test_a_pods_processes_are_all_signalled_before_any_is_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """terminate_all sends SIGKILL to every session before it reaps the first, so the processes die together
    (one wait per pod instead of one per container, issue 31); each ends killed by SIGKILL."""
    procs = [subprocess.Popen(["sleep", "60"], start_new_session=True) for _ in range(3)]
    steps: list[str] = []
    killpg, wait = os.killpg, subprocess.Popen.wait

    def recorded_killpg(pgid: int, sig: int) -> None:
        steps.append(f"kill {pgid}")
        killpg(pgid, sig)

    def recorded_wait(proc: subprocess.Popen[bytes], timeout: float | None = None) -> int:
        steps.append(f"wait {proc.pid}")
        return wait(proc, timeout)

    monkeypatch.setattr(os, "killpg", recorded_killpg)
    monkeypatch.setattr(subprocess.Popen, "wait", recorded_wait)
    try:
        process.terminate_all(procs)
    finally:
        monkeypatch.undo()
        for proc in procs:
            process.terminate(proc)
    first_wait = next(i for i, step in enumerate(steps) if step.startswith("wait"))
    assert steps[:len(procs)] == [f"kill {p.pid}" for p in procs] and first_wait >= len(procs)
    assert [p.returncode for p in procs] == [-9, -9, -9]


# What the command itself sees at its first instruction: its pid, session, the fake cgroup.procs' content, its
# oom_score_adj and its stdin (JSON on stdout, i.e. the log).
PROBE = """
import json, os, sys
print(json.dumps({"pid": os.getpid(), "sid": os.getsid(0), "procs": open(sys.argv[1]).read(),
                  "oom": open("/proc/self/oom_score_adj").read().strip(), "stdin": sys.stdin.read()}))
"""


def fake_cgroup(tmp_path: Path) -> Path:
    """A stand-in for a cgroup directory: cgroup.procs a regular file the trampoline writes its pid into."""
    cgroup = tmp_path / "cgroup"
    cgroup.mkdir()
    (cgroup / "cgroup.procs").write_text("")
    return cgroup


def raised_score() -> int:
    """An oom_score_adj above the test process's own: raising it needs no privilege (proc(5))."""
    return min(int(Path("/proc/self/oom_score_adj").read_text()) + 17, 1000)


def started(argv: list[str], cgroup: Path, score: int, log: Path) -> subprocess.Popen[bytes]:
    proc, ready = process.spawn(argv, cgroup, score, log)
    process.await_ready([ready])
    return proc


def test_a_container_process_is_in_its_cgroup_with_its_score_before_its_command_runs(tmp_path: Path) -> None:
    """The command's first read finds its own pid in cgroup.procs and its oom_score_adj set (so its first page is
    charged there and the OOM killer sees its score), in a session of its own (teardown kills sessions), stdin at
    EOF (not the agent's ready pipe)."""
    cgroup, log, score = fake_cgroup(tmp_path), tmp_path / "logs" / "c.log", raised_score()
    proc = started([sys.executable, "-c", PROBE, str(cgroup / "cgroup.procs")], cgroup, score, log)
    assert proc.wait(timeout=30) == 0
    seen = json.loads(log.read_text())
    assert seen == {"pid": proc.pid, "sid": proc.pid, "procs": f"{proc.pid}\n", "oom": str(score), "stdin": ""}


def test_a_process_that_cannot_join_its_cgroup_never_runs_its_command(tmp_path: Path) -> None:
    """A cgroup that is gone: the trampoline exits 126 and the command never ran."""
    marker = tmp_path / "ran"
    proc = started(["touch", str(marker)], tmp_path / "gone", 0, tmp_path / "c.log")
    assert proc.wait(timeout=30) == 126
    assert not marker.exists()


def test_an_exec_runs_placed_as_a_container_start(tmp_path: Path) -> None:
    """run_in (an exec into a container) takes the same way: in the cgroup with the score before the command."""
    cgroup, score = fake_cgroup(tmp_path), raised_score()
    rc, out, _ = process.run_in([sys.executable, "-c", PROBE, str(cgroup / "cgroup.procs")], cgroup, score, 10)
    seen = json.loads(out)
    assert rc == 0 and seen["procs"] == f"{seen['pid']}\n" and seen["oom"] == str(score)
