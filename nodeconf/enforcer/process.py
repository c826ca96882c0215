"""Start a command inside a cgroup with its oom_score_adj, as a runtime does (runc: join cgroup, then exec).

Through a /bin/sh trampoline, which Popen starts by vfork. Measured against placing the child from a preexec_fn
(benchmarks/spawn_ab.py, issue 31): preexec_fn makes CPython fork the whole agent (75-110 ms per process under TCG,
vfork 16-22 ms) and return only after each exec, so a pod started slower than with the trampolines side by side.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nodeconf.workloads import SLEEPER

# The child shell sets its oom_score_adj, then moves itself into the cgroup (so no process shows up there with
# the agent's score), then exec's the command, whose first page is charged to its own cgroup. Arguments pass as
# argv, never as shell text. A refused oom_score_adj is reported on stderr, not fatal: the evidence shows it.
# Before exec it says "ready" on its stdin, a pipe to the agent, and swaps stdin for /dev/null: the agent returns
# only once the process is in place (dash takes single-digit fds only, hence stdin).
_TRAMPOLINE = (
    'echo "$2" 2>/dev/null >/proc/self/oom_score_adj || echo "nodeconf: oom_score_adj $2 refused" >&2; '
    'echo $$ > "$1" || exit 126; '
    'echo ready >&0; exec 0</dev/null; shift 2; exec "$@"'
)
# For a systemd scope, which only systemd can create around a running process: the shell sets its oom_score_adj,
# says "ready" on its stdin (a socket to the agent) and waits there for "go": meanwhile the agent starts the scope
# with its pid and sets the scope's resources (runc: `runc init` waits while Apply(pid) and Set run).
_HELD = (
    'echo "$1" 2>/dev/null >/proc/self/oom_score_adj || echo "nodeconf: oom_score_adj $1 refused" >&2; '
    'echo ready >&0; read -r go <&0 && [ "$go" = go ] || exit 126; exec 0</dev/null; shift; exec "$@"'
)
_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
READY_TIMEOUT = 30.0


def container_argv(command: Sequence[str], args: Sequence[str]) -> tuple[str, ...]:
    """The process argv of a container: command + args (no image entrypoint here), else a sleeper."""
    argv = (*command, *args)
    return argv or SLEEPER


def _launch(argv: Sequence[str], cgroup_dir: Path, oom_score_adj: int, name: str, prefix: Sequence[str] = (),
            **popen: Any) -> tuple[subprocess.Popen[bytes], int]:
    """Start argv through the trampoline (run by `prefix` when given); the returned fd becomes readable once it
    sits in its cgroup."""
    ready_read, ready_write = os.pipe()
    try:
        proc = subprocess.Popen(
            [*prefix, "/bin/sh", "-c", _TRAMPOLINE, name, str(cgroup_dir / "cgroup.procs"), str(oom_score_adj),
             *argv],
            stdin=ready_write, env=dict(_ENV), start_new_session=True, **popen,
        )
    except BaseException:
        os.close(ready_read)
        raise
    finally:
        os.close(ready_write)
    return proc, ready_read


def await_ready(fds: Sequence[int], timeout: float = READY_TIMEOUT) -> None:
    """Wait until every started process said ready (or died), then close the fds: containers start together."""
    pending = list(fds)
    deadline = time.monotonic() + timeout
    try:
        while pending and (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select(pending, [], [], left)
            pending = [fd for fd in pending if fd not in readable]
    finally:
        for fd in fds:
            os.close(fd)


def spawn(argv: Sequence[str], cgroup_dir: Path, oom_score_adj: int,
          log: Path) -> tuple[subprocess.Popen[bytes], int]:
    """Start argv in its own session inside cgroup_dir with oom_score_adj, output appended to log; pass the
    returned fd to await_ready."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        return _launch(argv, cgroup_dir, oom_score_adj, "nodeconf-start", stdout=out, stderr=out)


def spawn_held(argv: Sequence[str], oom_score_adj: int, log: Path) -> tuple[subprocess.Popen[bytes], socket.socket]:
    """Start argv in its own session with oom_score_adj, output appended to log, held before exec until
    release(channel); returns once it waits there (OSError when it does not say so)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    channel, theirs = socket.socketpair()
    try:
        with open(log, "ab") as out:
            proc = subprocess.Popen(["/bin/sh", "-c", _HELD, "nodeconf-start", str(oom_score_adj), *argv],
                                    stdin=theirs.fileno(), stdout=out, stderr=out, env=dict(_ENV),
                                    start_new_session=True)
    except BaseException:
        channel.close()
        raise
    finally:
        theirs.close()
    try:
        channel.settimeout(READY_TIMEOUT)
        said = channel.recv(16)
    except OSError:
        said = b""
    if said != b"ready\n":
        channel.close()
        terminate(proc)
        raise OSError(f"the container process did not wait for its scope (said {said!r})")
    return proc, channel


def release(channel: socket.socket) -> None:
    """Let a held process exec its command."""
    with channel:
        channel.sendall(b"go\n")


def run_in(argv: Sequence[str], cgroup_dir: Path, oom_score_adj: int, timeout: float,
           prefix: Sequence[str] = ()) -> tuple[int, bytes, bytes]:
    """Run argv to completion inside cgroup_dir (an exec into a container); rc 124 on timeout.

    `prefix` (nsenter into a container's namespaces) runs the trampoline and waits for it outside the cgroup, as
    `runc exec` does: a group OOM kill of the container takes what runs inside only. Were the prefix inside, its
    child in the container's pid namespace would be orphaned to the agent and, never reaped, keep the container's
    init from exiting (a pid namespace's init waits for every other process of it: pid_namespaces(7)).
    """
    proc, ready = _launch(argv, cgroup_dir, oom_score_adj, "nodeconf-exec", prefix, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    await_ready([ready])
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
    _kill_session(proc)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    proc.wait()


def terminate_all(procs: Sequence[subprocess.Popen[bytes]]) -> None:
    """SIGKILL every process's session first, then reap each (terminate): they die together, not one after the
    other (a pod's teardown; under TCG each wait took ~65 ms, issue 31)."""
    for proc in procs:
        if proc.returncode is None:  # not reaped yet: its pid (and session) cannot belong to another process
            _kill_session(proc)
    for proc in procs:
        terminate(proc)


def _kill_session(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def read_oom_score_adj(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/oom_score_adj").read_text())
    except (OSError, ValueError):
        return None
