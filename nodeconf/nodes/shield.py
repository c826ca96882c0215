"""Hold SIGINT and SIGTERM back while cleanup of objects on someone else's machine runs, then deliver them.

Source: issue 10 item 4 (a second signal must not skip the cleanup of cluster objects); signal(2) semantics of
Python's `signal` module (handlers run in the main thread only).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def signals_deferred(what: str) -> Iterator[None]:
    """Run the block with SIGINT/SIGTERM held back (noted on stderr), then deliver the first one that arrived."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        held.append(signum)
        sys.stderr.write(f"\nnodeconf: {signal.Signals(signum).name} held until {what} is done\n")

    previous = {signum: signal.signal(signum, hold) for signum in SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if held:
            signal.raise_signal(held[0])
