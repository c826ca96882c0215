"""Follow a container cgroup's `memory.events` while it lives: systemd removes a scope's cgroup as soon as its last
process exits, before the agent's next tick could read the `oom_kill` counter there.

Source: RUNTIME-FACTS §5 (containerd's shim re-reads memory.events on every change notification, as here);
cgroup-v2.rst "memory.events" (a value change generates a file modified event: poll/inotify); kernfs poll
(EPOLLPRI|EPOLLERR once notified, re-armed by reading).
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
from pathlib import Path

# How long a poll waits before the thread checks whether it should stop.
POLL_MS = 200


class OomWatch:
    """The highest `oom_kill` seen in one cgroup's memory.events, kept after the cgroup is gone."""

    def __init__(self, cgroup_dir: Path) -> None:
        self.oom_kill = 0
        self._stopping = threading.Event()
        try:
            self._fd: int | None = os.open(cgroup_dir / "memory.events", os.O_RDONLY)
        except OSError:
            self._fd = None
            return
        self._read()
        self._thread = threading.Thread(target=self._follow, name=f"oom-watch {cgroup_dir.name}", daemon=True)
        self._thread.start()

    def _read(self) -> bool:
        """Re-read the counter; False once the cgroup is gone."""
        if self._fd is None:
            return False
        try:
            text = os.pread(self._fd, 4096, 0).decode()
        except OSError:
            return False
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.isdigit():
                self.oom_kill = max(self.oom_kill, int(value))
        return True

    def _follow(self) -> None:
        assert self._fd is not None
        poller = select.poll()
        poller.register(self._fd, select.POLLPRI | select.POLLERR)
        while not self._stopping.is_set():
            poller.poll(POLL_MS)
            if not self._read():
                return

    def stop(self) -> int:
        """End the watch (one last read) and return the highest oom_kill seen."""
        self._stopping.set()
        if self._fd is None:
            return self.oom_kill
        self._thread.join(timeout=1.0)
        self._read()
        with contextlib.suppress(OSError):
            os.close(self._fd)
        self._fd = None
        return self.oom_kill
