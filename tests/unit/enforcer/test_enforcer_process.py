"""nodeconf/enforcer/process.py: a pod's processes are killed together, then reaped."""

from __future__ import annotations

import os
import subprocess

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
