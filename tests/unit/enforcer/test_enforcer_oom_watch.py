"""OomWatch keeps the highest oom_kill of a container's memory.events, also once the file is gone (a stand-in
file here: re-read every poll period; on cgroup2 the kernel's change notification wakes it at once)."""

from __future__ import annotations

import time
from pathlib import Path

from nodeconf.enforcer.oom_watch import POLL_MS, OomWatch


def test_the_highest_oom_kill_seen_outlives_the_cgroup(tmp_path: Path) -> None:
    events = tmp_path / "memory.events"
    events.write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n")
    watch = OomWatch(tmp_path)
    assert watch.oom_kill == 1
    events.write_text("low 0\nhigh 0\nmax 5\noom 2\noom_kill 2\noom_group_kill 1\n")
    time.sleep(3 * POLL_MS / 1000)
    events.unlink()  # the open file is still read; the counter never goes down
    assert watch.stop() == 2


def test_a_cgroup_without_memory_events_reports_none(tmp_path: Path) -> None:
    assert OomWatch(tmp_path / "gone").stop() == 0
