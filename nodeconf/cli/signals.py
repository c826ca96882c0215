"""`nodeconf run`'s pytest child: its own process group, stopped cleanly on SIGINT/SIGTERM within a bound.

The first SIGINT or SIGTERM to nodeconf is forwarded once, as SIGINT, to pytest's process group (pytest and its
xdist workers unwind and every fixture tears its node down); a second one is only noted so that cleanup finishes;
a third, or a cleanup longer than TEARDOWN_GRACE_S, kills the group. pytest also gets SIGTERM when nodeconf dies.
Source: issue 10 item 4; signal(7) and credentials(7) (process groups), prctl(2) PR_SET_PDEATHSIG.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from types import FrameType, TracebackType
from typing import Any

TEARDOWN_GRACE_S = 120.0
POLL_S = 0.2
GROUP_EXIT_S = 10.0
SIGNALS = (signal.SIGINT, signal.SIGTERM)
PR_SET_PDEATHSIG = 1


def _term_with_parent() -> None:
    """In the pytest child: get SIGTERM when nodeconf dies, so it still cleans up after a SIGKILL of nodeconf."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _say(message: str) -> None:
    print(f"nodeconf: {message}", file=sys.stderr, flush=True)


class PytestGroup:
    """pytest in its own process group while nodeconf forwards signals to it; `wait()` returns its exit status."""

    def __init__(self, argv: Sequence[str], grace: float = TEARDOWN_GRACE_S) -> None:
        self.argv = list(argv)
        self.grace = grace
        self.received: list[str] = []
        self.deadline: float | None = None
        self.stopped_at: float | None = None
        self.killed = False
        self.process: subprocess.Popen[bytes] | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> PytestGroup:
        for signum in SIGNALS:
            self._previous[signum] = signal.signal(signum, self._on_signal)
        try:
            self.process = subprocess.Popen(self.argv, process_group=0, preexec_fn=_term_with_parent)
        except BaseException:
            self._restore()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            if self.process is not None and self.process.poll() is None:
                self._stop("nodeconf is stopping")
                self.wait()
        finally:
            self._restore()

    def _restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _send(self, signum: int) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signum)

    def _stop(self, why: str) -> None:
        self.stopped_at = time.monotonic()
        self.deadline = self.stopped_at + self.grace
        _say(f"{why}: stopping pytest; the node is being cleaned up (at most {self.grace:g} s)")
        self._send(signal.SIGINT)

    def _kill(self, why: str) -> None:
        self.killed = True
        _say(f"{why}: killing pytest; what it could not clean up is removed by: nodeconf clean")
        self._send(signal.SIGKILL)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        self.received.append(name)
        if len(self.received) == 1:
            self._stop(name)
        elif len(self.received) == 2:
            _say(f"{name}: still cleaning up the node; one more signal kills pytest at once")
        elif not self.killed:
            self._kill(name)

    def wait(self) -> int:
        """pytest's exit status; after a signal, kill the group once the cleanup outlasts the grace period."""
        assert self.process is not None
        while True:
            try:
                status = self.process.wait(timeout=POLL_S)
                break
            except subprocess.TimeoutExpired:
                if self.deadline is not None and time.monotonic() > self.deadline and not self.killed:
                    self._kill(f"the cleanup took longer than {self.grace:g} s")
        self._reap_group()
        if self.stopped_at is not None:
            _say(f"pytest stopped {time.monotonic() - self.stopped_at:.1f} s after the signal")
        return status

    def _reap_group(self) -> None:
        """Stop whatever is left in pytest's process group (e.g. an orphaned xdist worker)."""
        assert self.process is not None
        deadline = time.monotonic() + GROUP_EXIT_S
        for signum in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.process.pid, 0)
            except (ProcessLookupError, PermissionError):
                return
            self._send(signum)
            while time.monotonic() < deadline:
                try:
                    os.killpg(self.process.pid, 0)
                except (ProcessLookupError, PermissionError):
                    return
                time.sleep(0.05)
