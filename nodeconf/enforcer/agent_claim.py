"""Which agent holds a node: the lock it keeps on its state directory for its lifetime (one run per node), its pid
file with its start time (a reused pid is never taken for it), and the stop of an agent whose run is gone.

Source: issue 26 items 3, 8 and 9; flock(2) (a lock belongs to the open file description, shared by forked
children, released when the last descriptor closes: the daemon keeps it); proc(5) /proc/PID/stat field 22.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import time
from pathlib import Path

from nodeconf.enforcer.ownership import MARKER_FILE, process_start
from nodeconf.enforcer.server import agent_answers
from nodeconf.enforcer.state_file import LOCK_FILE, PID_FILE
from nodeconf.enforcer.wire import Op, decode_reply, encode_request

# How long cleanup waits for an agent it asked to stop.
STOP_TIMEOUT = 30.0


def write_pid_file(state_dir: Path) -> None:
    """Record this process as the state directory's agent: its pid and start time."""
    (state_dir / PID_FILE).write_text(f"{os.getpid()} {process_start(os.getpid())}\n")


def recorded_agent(pid_file: Path) -> int | None:
    """The pid the pid file names when that process is still the agent that wrote it: its start time is the
    recorded one (a reused pid is another process) and it runs `nodeconf.enforcer`."""
    try:
        pid_text, start_text = pid_file.read_text().split()
        pid, start = int(pid_text), int(start_text)
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    return pid if process_start(pid) == start and b"nodeconf.enforcer" in command else None


def kill_agent(pid_file: Path) -> None:
    """SIGKILL the agent its pid file names, when that pid is still that agent (recorded_agent)."""
    pid = recorded_agent(pid_file)
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def stop_abandoned(path: Path) -> str:
    """Ask the agent at the socket to stop when no driver talks to it (its run was killed) and wait until it did,
    saying so on stdout; the refusal line when a run still talks to it ('' when none answers there)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(STOP_TIMEOUT)
            conn.connect(str(path))
            with conn.makefile("rwb") as stream:
                stream.write(encode_request(1, Op.PING, {}))
                stream.flush()
                pong = decode_reply(stream.readline()).result
                if pong.get("clients", 1) > 1:
                    return (f"nodeconf agent: the agent at {path} (pid {pong['pid']}) serves a live run (a driver "
                            "is connected): not cleaned; stop that run first")
                stream.write(encode_request(2, Op.SHUTDOWN, {}))
                stream.flush()
                stream.readline()
    except (OSError, ValueError, KeyError, AttributeError):
        return ""  # nothing answers there (or not as an agent does): the pid file names what to kill
    deadline = time.monotonic() + STOP_TIMEOUT
    while agent_answers(path) and time.monotonic() < deadline:
        time.sleep(0.05)
    print(f"nodeconf agent: stopped the agent (pid {pong['pid']}) nobody was connected to")
    return ""


def hold_lock(state_dir: Path, token: str | None = None) -> str:
    """Take the state directory's lock for this process and the daemon it forks ('' when taken), or the line that
    names the agent holding it; with the token of the driver's session, the state directory's mark must still hold
    it (another session's push between this one's push and this start marked it with its own)."""
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    lock = state_dir / LOCK_FILE
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        holder = recorded_agent(state_dir / PID_FILE)
        return (f"nodeconf agent: another agent (pid {holder if holder is not None else 'unknown'}) holds {lock}: "
                "one run per node; stop that run first")
    if token is not None and _mark_of(state_dir) != f"{token}\n":
        return (f"nodeconf agent: {state_dir} carries another session's token (another nodeconf run pushed after "
                "this one): one run per node; stop that run first")
    return ""  # fd is never closed: the lock is held while this process and the daemon it forks live


def _mark_of(state_dir: Path) -> str | None:
    try:
        return (state_dir / MARKER_FILE).read_text()
    except OSError:
        return None
