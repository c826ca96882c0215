"""The agent's state directory: the names of its files, and the state file written after every change and read
back by a restarted agent (which kills what the crashed one left and restarts its pods).

Source: issue 12 (the state file); issue 26 items 3 and 8 (pid file with start time, lock file).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

STATE_FILE = "state.json"
LOG_FILE = "agent.log"
# The serving agent's pid and start time (/proc/PID/stat field 22), and the file it holds locked (flock) for its
# lifetime: one agent per state directory.
PID_FILE = "agent.pid"
LOCK_FILE = "agent.lock"


class StateFile:
    """state.json in the agent's state directory: config, version, namespace objects, pods and node events."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / STATE_FILE

    def save(self, doc: Mapping[str, Any]) -> None:
        """Write the document atomically (it lets the agent's pods survive its own restart)."""
        tmp = self.path.with_name(STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(doc))
        tmp.replace(self.path)

    def load(self) -> dict[str, Any] | None:
        """What a previous agent of this state directory saved; None when it saved nothing."""
        return json.loads(self.path.read_text()) if self.path.exists() else None

    def remove(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
