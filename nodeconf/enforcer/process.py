"""Start a command inside a cgroup with its oom_score_adj, as a runtime does (runc: join cgroup, then exec).

A container's process is placed between fork and exec by a `preexec_fn` (place_in): it sets its oom_score_adj,
then writes its own pid to the cgroup's cgroup.procs, then Popen execs the command, so the command's first page is
charged to its cgroup and no process shows up there with the agent's score; Popen returns once the exec happened
(its error pipe closes on exec), so a process is in place when its start returns. Chosen over the alternatives
(issue 31, measured in benchmarks/results/suites-time-breakdown.md):
- a `/bin/sh` trampoline doing the same before `exec "$@"` (what this replaced) costs one more exec and a shell's
  start per container, which under TCG was ~78 % of a pod's `run`;
- os.posix_spawn has setsid but no way to write a file in the child, and the parent writing the pid after the
  spawn leaves the command running outside its cgroup meanwhile;
- clone3 with CLONE_INTO_CGROUP (Linux >= 5.7) places the child with no write at all, but Python cannot run code in
  a raw clone's child to set oom_score_adj, and glibc wraps it for posix_spawn only from 2.39 (bullseye: 2.31).
preexec_fn's documented hazard is a deadlock on a lock another thread held at fork (the agent is threaded). CPython
forks holding the GIL, runs the at-fork hooks (logging's lock, the import lock) around the fork and re-initialises
its own state in the child (PyOS_BeforeFork / PyOS_AfterFork_Child); glibc's fork leaves malloc usable in the child.
place_in therefore only calls os.open/write/close/getpid on values prepared in the parent: no import, no logging,
no lock. It needs CPython's main interpreter (preexec_fn is refused in subinterpreters), which the agent is.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nodeconf.workloads import SLEEPER

# An exec into a container through a prefix (nsenter) cannot be placed from here: the prefix must stay outside the
# cgroup. There a shell child of the prefix sets its oom_score_adj, moves itself into the cgroup, says "ready" on
# its stdin (a pipe to the agent), swaps stdin for /dev/null and execs the command. Arguments pass as argv, never as
# shell text. A refused oom_score_adj is reported on stderr, not fatal: the evidence shows it.
_TRAMPOLINE = (
    'echo "$2" 2>/dev/null >/proc/self/oom_score_adj || echo "nodeconf: oom_score_adj $2 refused" >&2; '
    'echo $$ > "$1" || exit 126; '
    'echo ready >&0; exec 0</dev/null; shift 2; exec "$@"'
)
# For a systemd scope, which only systemd can create around a running process: the shell sets its oom_score_adj,
# says "ready" on its stdin (a socket to the agent) and waits there for "go": meanwhile the agent starts the scope
# with its pid and sets the scope's resources (runc: `runc init` waits while Apply(pid) and Set run). Popen returns
# only after the exec, so a process held before it needs a program of its own to wait in.
_HELD = (
    'echo "$1" 2>/dev/null >/proc/self/oom_score_adj || echo "nodeconf: oom_score_adj $1 refused" >&2; '
    'echo ready >&0; read -r go <&0 && [ "$go" = go ] || exit 126; exec 0</dev/null; shift; exec "$@"'
)
OOM_SCORE_ADJ = "/proc/self/oom_score_adj"
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC  # as the shell's `>`: a cgroup file exists, a test's file may not
_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
READY_TIMEOUT = 30.0


def container_argv(command: Sequence[str], args: Sequence[str]) -> tuple[str, ...]:
    """The process argv of a container: command + args (no image entrypoint here), else a sleeper."""
    argv = (*command, *args)
    return argv or SLEEPER


def place_in(cgroup_dir: Path, oom_score_adj: int) -> Callable[[], None]:
    """The preexec_fn that puts a forked child in place before it execs: its oom_score_adj set (a refusal reported
    on its stderr, not fatal: the evidence shows it), then its pid written to cgroup_dir's cgroup.procs (a failure
    raises, so Popen fails and the command never runs). Everything it writes is prepared here, in the parent."""
    procs = str(cgroup_dir / "cgroup.procs")
    score = str(oom_score_adj).encode()
    refused = f"nodeconf: oom_score_adj {oom_score_adj} refused\n".encode()
    failed = f"nodeconf: could not join {procs}\n".encode()
    oom_path = OOM_SCORE_ADJ

    def place() -> None:  # in the child between fork and exec: os calls on the values above only
        try:
            _write(oom_path, score)
        except OSError:
            os.write(2, refused)
        try:
            _write(procs, b"%d\n" % os.getpid())
        except OSError:
            os.write(2, failed)
            raise

    return place


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, _CREATE, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _start(argv: Sequence[str], cgroup_dir: Path, oom_score_adj: int, **popen: Any) -> subprocess.Popen[bytes]:
    """argv started in its own session (teardown kills whole sessions) inside cgroup_dir with oom_score_adj and
    stdin from /dev/null; returns once it has exec'd (OSError when it could not join the cgroup or exec)."""
    try:
        return subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, env=dict(_ENV), start_new_session=True,
                                preexec_fn=place_in(cgroup_dir, oom_score_adj), **popen)
    except subprocess.SubprocessError as err:  # place_in raised in the child; it wrote why to the child's stderr
        raise OSError(f"the process could not join {cgroup_dir}: {err}") from None


def spawn(argv: Sequence[str], cgroup_dir: Path, oom_score_adj: int, log: Path) -> subprocess.Popen[bytes]:
    """Start argv in its own session inside cgroup_dir with oom_score_adj, output appended to log; returns once it
    runs there (OSError when it cannot: the container's StartError, as runc's failed create or exec)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        return _start(argv, cgroup_dir, oom_score_adj, stdout=out, stderr=out)


def _launch_through(prefix: Sequence[str], argv: Sequence[str], cgroup_dir: Path, oom_score_adj: int,
                    **popen: Any) -> subprocess.Popen[bytes]:
    """Start argv through the trampoline run by `prefix`; returns once it sits in its cgroup (or died)."""
    ready_read, ready_write = os.pipe()
    try:
        try:
            proc = subprocess.Popen(
                [*prefix, "/bin/sh", "-c", _TRAMPOLINE, "nodeconf-exec", str(cgroup_dir / "cgroup.procs"),
                 str(oom_score_adj), *argv],
                stdin=ready_write, env=dict(_ENV), start_new_session=True, **popen,
            )
        finally:
            os.close(ready_write)
        select.select([ready_read], [], [], READY_TIMEOUT)
    finally:
        os.close(ready_read)
    return proc


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
    """Run argv to completion inside cgroup_dir (an exec into a container); rc 124 on timeout, 127 (126) when argv
    cannot be found (run), as a shell reports it.

    `prefix` (nsenter into a container's namespaces) runs the trampoline and waits for it outside the cgroup, as
    `runc exec` does: a group OOM kill of the container takes what runs inside only. Were the prefix inside, its
    child in the container's pid namespace would be orphaned to the agent and, never reaped, keep the container's
    init from exiting (a pid namespace's init waits for every other process of it: pid_namespaces(7)).
    """
    pipes: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    try:
        proc = _launch_through(prefix, argv, cgroup_dir, oom_score_adj, **pipes) if prefix else \
            _start(argv, cgroup_dir, oom_score_adj, **pipes)
    except (FileNotFoundError, PermissionError) as problem:
        return 127 if isinstance(problem, FileNotFoundError) else 126, b"", f"nodeconf: {problem}\n".encode()
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
