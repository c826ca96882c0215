"""Start a command inside a cgroup with its oom_score_adj, as a runtime does (runc: join cgroup, then exec)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

# A container without a command runs a sleeper; the pause process is one too (kubernetes/build/pause).
SLEEPER: tuple[str, ...] = ("sleep", "infinity")
# The child shell sets its oom_score_adj, then moves itself into the cgroup (so no process shows up there with
# the agent's score), then exec's the command, whose first page is charged to its own cgroup. Arguments pass as
# argv, never as shell text. A refused oom_score_adj is reported on stderr, not fatal: the evidence shows it.
_TRAMPOLINE = (
    'echo "$2" 2>/dev/null >/proc/self/oom_score_adj || echo "nodeconf: oom_score_adj $2 refused" >&2; '
    'echo $$ > "$1" || exit 126; '
    'shift 2; exec "$@"'
)
_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}


def container_argv(command: Sequence[str], args: Sequence[str]) -> tuple[str, ...]:
    """The process argv of a container: command + args (no image entrypoint here), else a sleeper."""
    argv = (*command, *args)
    return argv or SLEEPER


def spawn(argv: Sequence[str], cgroup_dir: Path, oom_score_adj: int, log: Path,
          env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start argv in its own session inside cgroup_dir with oom_score_adj; output appended to log."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        return subprocess.Popen(
            ["/bin/sh", "-c", _TRAMPOLINE, "nodeconf-start", str(cgroup_dir / "cgroup.procs"),
             str(oom_score_adj), *argv],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out, env={**_ENV, **(env or {})},
            start_new_session=True, close_fds=True,
        )


def run_in(argv: Sequence[str], cgroup_dir: Path, oom_score_adj: int,
           timeout: float) -> tuple[int, bytes, bytes]:
    """Run argv to completion inside cgroup_dir (an exec into a container); rc 124 on timeout."""
    proc = subprocess.Popen(
        ["/bin/sh", "-c", _TRAMPOLINE, "nodeconf-exec", str(cgroup_dir / "cgroup.procs"),
         str(oom_score_adj), *argv],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(_ENV),
        start_new_session=True, close_fds=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        terminate(proc)
        out, err = proc.communicate()
        return 124, out, err + b"\nnodeconf: exec timed out\n"
    return exit_code(proc.returncode), out, err


def exit_code(returncode: int) -> int:
    """A wait status as a container exit code: 128 + signal for a killed process (runc convention)."""
    return 128 - returncode if returncode < 0 else returncode


def terminate(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process's session and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    proc.wait()


def read_oom_score_adj(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/oom_score_adj").read_text())
    except (OSError, ValueError):
        return None
