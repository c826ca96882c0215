"""A progress display for image builds and boots: timestamped step lines on stderr."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class StepPrinter:
    """Callable progress sink printing `[  12.3s] step` lines, time counted from its creation."""

    def __init__(self, prefix: str = "nodeconf", stream: TextIO | None = None) -> None:
        self._prefix = prefix
        self._stream = stream if stream is not None else sys.stderr
        self._start = time.monotonic()

    def __call__(self, message: str) -> None:
        elapsed = time.monotonic() - self._start
        print(f"[{self._prefix} {elapsed:6.1f}s] {message}", file=self._stream, flush=True)
