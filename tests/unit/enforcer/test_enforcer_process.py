"""nodeconf/enforcer/process.py: a container's process is placed (cgroup, oom_score_adj, session) before it execs its
command, with no trampoline (issue 31); a pod's processes are killed together, then reaped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nodeconf.enforcer import process
from suites.toolkit.builders import container, pod_manifest
from tests.unit.enforcer.enforcer_support import running_agent


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
    """A stand-in for a cgroup directory: cgroup.procs a regular file the child writes its pid into."""
    cgroup = tmp_path / "cgroup"
    cgroup.mkdir()
    (cgroup / "cgroup.procs").write_text("")
    return cgroup


def raised_score() -> int:
    """An oom_score_adj above the test process's own: raising it needs no privilege (proc(5))."""
    own = int(Path("/proc/self/oom_score_adj").read_text())
    return min(own + 17, 1000)


def probed(proc: subprocess.Popen[bytes], log: Path) -> dict[str, Any]:
    assert proc.wait(timeout=30) == 0
    found = json.loads(log.read_text())
    assert isinstance(found, dict)
    return found


def test_a_container_process_is_in_its_cgroup_with_its_score_before_its_command_runs(tmp_path: Path) -> None:
    """spawn returns a process that was placed before exec: the command's first read finds its own pid in
    cgroup.procs and its oom_score_adj set, in a session of its own (teardown kills sessions), stdin at EOF."""
    cgroup, log, score = fake_cgroup(tmp_path), tmp_path / "logs" / "c.log", raised_score()
    proc = process.spawn([sys.executable, "-c", PROBE, str(cgroup / "cgroup.procs")], cgroup, score, log)
    seen = probed(proc, log)
    assert seen == {"pid": proc.pid, "sid": proc.pid, "procs": f"{proc.pid}\n", "oom": str(score), "stdin": ""}


def test_the_command_is_exec_d_by_the_spawned_child_itself(tmp_path: Path) -> None:
    """No trampoline: the pid written to cgroup.procs is the command's, not a shell's that exec's it later
    (Popen returns after the exec, so /proc/PID/exe is already the command)."""
    cgroup = fake_cgroup(tmp_path)
    proc = process.spawn(["sleep", "30"], cgroup, raised_score(), tmp_path / "c.log")
    try:
        assert Path(f"/proc/{proc.pid}/exe").resolve() == Path(shutil.which("sleep") or "sleep").resolve()
        assert (cgroup / "cgroup.procs").read_text() == f"{proc.pid}\n"
    finally:
        process.terminate(proc)


def test_a_refused_oom_score_adj_is_reported_and_the_command_still_runs(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The trampoline's rule, kept: a refused oom_score_adj is a line in the container's log, not a failed start
    (the evidence then shows the score the process has)."""
    monkeypatch.setattr(process, "OOM_SCORE_ADJ", str(tmp_path / "absent" / "oom_score_adj"))
    cgroup, log = fake_cgroup(tmp_path), tmp_path / "c.log"
    proc = process.spawn([sys.executable, "-c", PROBE, str(cgroup / "cgroup.procs")], cgroup, 7, log)
    assert proc.wait(timeout=30) == 0
    first, probe = log.read_text().splitlines()
    assert first == "nodeconf: oom_score_adj 7 refused"
    assert json.loads(probe)["procs"] == f"{proc.pid}\n"


def test_a_process_that_cannot_join_its_cgroup_never_runs_its_command(tmp_path: Path) -> None:
    """A cgroup that is gone: the start fails (OSError, the container's StartError) and the command never ran."""
    marker, log = tmp_path / "ran", tmp_path / "c.log"
    with pytest.raises(OSError, match="could not join"):
        process.spawn(["touch", str(marker)], tmp_path / "gone", 0, log)
    assert not marker.exists()
    assert f"nodeconf: could not join {tmp_path / 'gone' / 'cgroup.procs'}" in log.read_text()


def test_a_command_that_does_not_exist_fails_the_start(tmp_path: Path) -> None:
    """As runc's exec of a missing executable: the start fails (OSError), nothing runs in the cgroup."""
    cgroup = fake_cgroup(tmp_path)
    with pytest.raises(FileNotFoundError):
        process.spawn(["/nonexistent/command"], cgroup, 0, tmp_path / "c.log")


@pytest.mark.parametrize(("argv", "rc"), [(["/nonexistent/command"], 127), (["/dev/null"], 126)])
def test_an_exec_of_what_cannot_run_exits_as_a_shell_says(tmp_path: Path, argv: list[str], rc: int) -> None:
    """run_in (an exec): not found 127, not executable 126, the codes the trampoline's shell gave."""
    code, out, err = process.run_in(argv, fake_cgroup(tmp_path), 0, 10)
    assert (code, out) == (rc, b"") and argv[0].encode() in err


def test_an_exec_runs_placed_as_a_container_start(tmp_path: Path) -> None:
    """run_in without a prefix takes the same way: in the cgroup with the score before the command runs."""
    cgroup, score = fake_cgroup(tmp_path), raised_score()
    rc, out, _ = process.run_in([sys.executable, "-c", PROBE, str(cgroup / "cgroup.procs")], cgroup, score, 10)
    seen = json.loads(out)
    assert rc == 0 and seen["procs"] == f"{seen['pid']}\n" and seen["oom"] == str(score)



def test_a_container_whose_command_cannot_start_is_a_start_error(tmp_path: Path) -> None:
    """Through the agent: the failed exec is the container's StartError (exit 128) with a Failed event, as the
    kubelet reports runc's failed exec; the pod's other processes still run (pause)."""
    for agent in running_agent(tmp_path):
        status = agent.run_pod(pod_manifest(container("broken", command=["/nonexistent/command"]), name="broken"))
        broken = next(c for c in status["status"]["containers"] if c["name"] == "broken")
        assert (broken["state"], broken["reason"], broken["exitCode"], broken["pid"]) == (
            "terminated", "StartError", 128, None)
        assert any(e["reason"] == "Failed" and "/nonexistent/command" in e["message"]
                   for e in status["status"]["events"])
